/** `Weft: Run File`, `Weft: Start REPL` and `Weft: Send Selection to REPL`, in terminals. */

import * as vscode from 'vscode';

import { Backend, replArgs, replInput, runArgs, shellLine } from './commandLine';

export class Terminals implements vscode.Disposable {
  private run: vscode.Terminal | undefined;
  private repl: vscode.Terminal | undefined;
  private readonly closed: vscode.Disposable;

  constructor(private readonly weft: () => string | undefined) {
    this.closed = vscode.window.onDidCloseTerminal((t) => {
      if (t === this.run) this.run = undefined;
      if (t === this.repl) this.repl = undefined;
    });
  }

  private backend(): Backend {
    return vscode.workspace.getConfiguration('weft').get<Backend>('backend', 'auto');
  }

  /** Saves the active Weft file and runs `weft run` on it in the "Weft" terminal. */
  async runFile(): Promise<void> {
    const document = vscode.window.activeTextEditor?.document;
    if (!document || document.languageId !== 'weft') {
      void vscode.window.showInformationMessage('Weft: open a .weft file to run it.');
      return;
    }
    if (document.isUntitled || !(await document.save())) {
      void vscode.window.showInformationMessage('Weft: save the file first; `weft run` runs what is on disk.');
      return;
    }
    const weft = this.weft();
    if (!weft) return;
    this.run ??= vscode.window.createTerminal({ name: 'Weft' });
    this.run.show(true);
    this.run.sendText(shellLine(weft, runArgs(this.backend(), document.uri.fsPath)));
  }

  /** The REPL's terminal, started if needed. */
  startRepl(): vscode.Terminal | undefined {
    const weft = this.weft();
    if (!weft) return undefined;
    this.repl ??= vscode.window.createTerminal({ name: 'Weft REPL', shellPath: weft, shellArgs: replArgs(this.backend()) });
    this.repl.show(true);
    return this.repl;
  }

  /** Sends the selected lines (or the cursor's line) to the REPL as one cell. */
  sendSelection(): void {
    const editor = vscode.window.activeTextEditor;
    if (!editor) return;
    const selection = editor.selection;
    // Whole lines; a selection that ends at the start of a line leaves that line out.
    const last = !selection.isEmpty && selection.end.character === 0 ? selection.end.line - 1 : selection.end.line;
    const text = selection.isEmpty
      ? editor.document.lineAt(selection.active.line).text
      : editor.document.getText(new vscode.Range(selection.start.line, 0, last, Number.MAX_SAFE_INTEGER));
    const input = replInput(text);
    if (input === undefined) return;
    const repl = this.startRepl();
    // The input ends with the Enter that submits it; sendText adds none.
    repl?.sendText(input, false);
  }

  dispose(): void {
    this.closed.dispose();
    this.run?.dispose();
    this.repl?.dispose();
  }
}
