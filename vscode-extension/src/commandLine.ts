/** The command lines the extension runs in a terminal, and the text it sends to the REPL. */

export type Backend = 'auto' | 'gpu' | 'cpu' | 'interp';

function backendArgs(backend: Backend): string[] {
  return backend === 'auto' ? [] : ['--backend', backend];
}

/** `weft run [--backend B] FILE`. */
export function runArgs(backend: Backend, file: string): string[] {
  return ['run', ...backendArgs(backend), file];
}

/** `weft repl [--backend B]`. */
export function replArgs(backend: Backend): string[] {
  return ['repl', ...backendArgs(backend)];
}

/** A word as a POSIX shell reads it: quoted unless it is plainly safe. */
export function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** A command line for a POSIX shell. */
export function shellLine(program: string, args: string[]): string {
  return [program, ...args].map(shellQuote).join(' ');
}

const PASTE_START = '\x1b[200~';
const PASTE_END = '\x1b[201~';

/**
 * What to type into `weft repl` for a selection: its lines as one bracketed paste (so that the
 * REPL takes them as one cell, however many lines, as it takes a paste from the clipboard),
 * with the selection's common indentation removed (a selection inside a function's body is
 * still a valid cell), then Enter; and a second Enter, the empty line that ends a cell with a
 * block, as at Python's prompt. `undefined` when there is nothing to send.
 */
export function replInput(selection: string): string | undefined {
  const lines = selection.replace(/\r\n?/g, '\n').split('\n');
  const code = lines.filter((l) => l.trim() !== '');
  if (code.length === 0) {
    return undefined;
  }
  const indent = Math.min(...code.map((l) => l.length - l.trimStart().length));
  const dedented = lines.map((l) => l.slice(Math.min(indent, l.length - l.trimStart().length)).trimEnd());
  while (dedented[0] === '') dedented.shift();
  while (dedented[dedented.length - 1] === '') dedented.pop();
  const opensBlock = dedented.some((l) => /:\s*(#.*)?$/.test(l) && !l.startsWith('#'));
  return PASTE_START + dedented.join('\n') + PASTE_END + (opensBlock ? '\r\r' : '\r');
}
