/** `Weft: Show WGSL`: the kernels of the file (from `weft/wgsl`) in a read-only document. */

import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';

import { KernelSource } from './plan';
import { wgslDocument } from './wgslText';

export class WgslDocuments implements vscode.TextDocumentContentProvider, vscode.Disposable {
  static readonly scheme = 'weft-wgsl';
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly watcher: vscode.Disposable;
  /** Per source file, its pending refresh: an edit elsewhere (another file, an output channel) never delays it. */
  private readonly timers = new Map<string, NodeJS.Timeout>();

  constructor(private readonly client: () => LanguageClient | undefined) {
    // An open WGSL document follows its source: it is asked again once typing in it pauses.
    this.watcher = vscode.workspace.onDidChangeTextDocument((e) => {
      if (e.document.languageId !== 'weft') {
        return;
      }
      const source = e.document.uri.toString();
      clearTimeout(this.timers.get(source));
      this.timers.set(
        source,
        setTimeout(() => {
          this.timers.delete(source);
          for (const doc of vscode.workspace.textDocuments) {
            if (doc.uri.scheme === WgslDocuments.scheme && doc.uri.query === source) {
              this.changed.fire(doc.uri);
            }
          }
        }, 400),
      );
    });
  }

  /** Opens the WGSL of the active Weft file beside it. */
  async show(): Promise<void> {
    const source = vscode.window.activeTextEditor?.document;
    if (!source || source.languageId !== 'weft') {
      void vscode.window.showInformationMessage('Weft: open a .weft file to see its WGSL.');
      return;
    }
    const name = source.uri.path.split('/').pop() ?? 'file';
    const uri = vscode.Uri.from({ scheme: WgslDocuments.scheme, path: `/${name}.wgsl`, query: source.uri.toString() });
    const document = await vscode.workspace.openTextDocument(uri);
    await vscode.languages.setTextDocumentLanguage(document, 'wgsl');
    await vscode.window.showTextDocument(document, { viewColumn: vscode.ViewColumn.Beside, preview: false });
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const source = vscode.Uri.parse(uri.query);
    const title = source.path.split('/').pop() ?? source.toString();
    const client = this.client();
    if (!client) {
      return `// ${title}: the Weft language server is not running (Weft: Restart Server starts it).\n`;
    }
    try {
      const kernels = await client.sendRequest<KernelSource[] | null>('weft/wgsl', {
        textDocument: { uri: source.toString() },
      });
      return wgslDocument(title, kernels);
    } catch (error) {
      // An edit cancelled the request (ContentModified); the document is asked again after it.
      return `// ${title}: the kernels could not be made (${String(error)}); they follow the next edit.\n`;
    }
  }

  dispose(): void {
    this.timers.forEach((timer) => clearTimeout(timer));
    this.watcher.dispose();
    this.changed.dispose();
  }
}
