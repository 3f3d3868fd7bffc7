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

/**
 * The lines to type into `weft repl` for a selection: its common indentation removed (a
 * selection inside a function's body is still a valid cell), blank lines inside a block
 * dropped (the REPL, like Python's prompt, ends a block at an empty line), and one empty
 * line after a block, so that the cell runs at once. `undefined` when there is nothing to send.
 */
export function replInput(selection: string): string | undefined {
  const lines = selection.replace(/\r\n?/g, '\n').split('\n');
  const code = lines.filter((l) => l.trim() !== '');
  if (code.length === 0) {
    return undefined;
  }
  const indent = Math.min(...code.map((l) => l.length - l.trimStart().length));
  const dedented = code.map((l) => l.slice(indent).trimEnd());
  const opensBlock = dedented.some((l) => /:\s*(#.*)?$/.test(l) && !l.startsWith('#'));
  return dedented.join('\n') + (opensBlock ? '\n\n' : '\n');
}
