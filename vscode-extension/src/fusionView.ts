/**
 * `Weft: Show Fusion View`: a webview that draws one function's fusion plan (from the server's
 * `weft/fusionPlan`) as a graph. Selecting a kernel highlights its ops in the editor; moving
 * the cursor highlights the kernel it is in; the view follows edits.
 */

import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';

import { buildGraph, functionsWithKernels, kernelAt, kernelRanges } from './fusionGraph';
import { FusionPlan, TOP_LEVEL } from './plan';

/** How long the view waits after an edit before it asks for the new plan. */
const REFRESH_DELAY_MS = 400;

type FromWebview = { type: 'selectKernel'; kernel: string } | { type: 'selectFunction'; function: string } | { type: 'ready' };

export class FusionView implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private document: vscode.TextDocument | undefined;
  private function = TOP_LEVEL;
  private plan: FusionPlan | null = null;
  private refreshTimer: NodeJS.Timeout | undefined;
  private readonly highlight = vscode.window.createTextEditorDecorationType({
    backgroundColor: new vscode.ThemeColor('editor.findMatchHighlightBackground'),
    border: '1px solid',
    borderColor: new vscode.ThemeColor('focusBorder'),
  });
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly client: () => LanguageClient | undefined,
  ) {
    this.disposables.push(
      this.highlight,
      vscode.workspace.onDidChangeTextDocument((e) => {
        if (this.panel && e.document === this.document) {
          this.scheduleRefresh();
        }
      }),
      vscode.window.onDidChangeTextEditorSelection((e) => {
        if (this.panel && e.textEditor.document === this.document) {
          this.followCursor(e.selections[0].active, true);
        }
      }),
    );
  }

  /** Opens (or reveals) the view on `uri`'s function `fn`: by default the active editor's, at its cursor. */
  async show(uri?: string, fn?: string): Promise<void> {
    const document = uri
      ? await vscode.workspace.openTextDocument(vscode.Uri.parse(uri))
      : vscode.window.activeTextEditor?.document;
    if (!document || document.languageId !== 'weft') {
      void vscode.window.showInformationMessage('Weft: open a .weft file to see its fusion plan.');
      return;
    }
    this.document = document;
    const editor = vscode.window.visibleTextEditors.find((e) => e.document === document);
    this.function = fn ?? (editor ? await this.functionAt(document, editor.selection.active) : TOP_LEVEL);
    if (!this.panel) {
      this.panel = this.createPanel();
    } else {
      this.panel.reveal(vscode.ViewColumn.Beside, true);
    }
    await this.refresh();
    if (editor) {
      // Highlight the cursor's kernel, but keep the function asked for (a lens names one).
      this.followCursor(editor.selection.active, false);
    }
  }

  private createPanel(): vscode.WebviewPanel {
    const media = vscode.Uri.joinPath(this.context.extensionUri, 'media');
    const panel = vscode.window.createWebviewPanel(
      'weft.fusion',
      'Weft Fusion',
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
      { enableScripts: true, localResourceRoots: [media], retainContextWhenHidden: true },
    );
    const webview = panel.webview;
    const script = webview.asWebviewUri(vscode.Uri.joinPath(media, 'fusionView.js'));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(media, 'fusionView.css'));
    const nonce = [...Array(32)].map(() => Math.floor(Math.random() * 36).toString(36)).join('');
    webview.html = `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${webview.cspSource}; script-src 'nonce-${nonce}';">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link href="${style}" rel="stylesheet"><title>Weft Fusion</title></head>
<body><header id="bar"><label>Function <select id="function"></select></label><span id="summary"></span></header>
<p id="message"></p><div id="graph"></div>
<script nonce="${nonce}" src="${script}"></script></body></html>`;
    webview.onDidReceiveMessage((message: FromWebview) => this.onMessage(message), null, this.disposables);
    panel.onDidDispose(() => {
      this.panel = undefined;
      this.clearHighlight();
    }, null, this.disposables);
    return panel;
  }

  private onMessage(message: FromWebview): void {
    if (message.type === 'ready') {
      this.post();
    } else if (message.type === 'selectFunction') {
      this.function = message.function;
      this.post();
    } else if (message.type === 'selectKernel' && this.plan && this.document) {
      const ranges = kernelRanges(this.plan, message.kernel).map(
        (r) => new vscode.Range(r.start.line, r.start.character, r.end.line, r.end.character),
      );
      const document = this.document;
      void vscode.window.showTextDocument(document, { viewColumn: vscode.ViewColumn.One, preserveFocus: true }).then((editor) => {
        editor.setDecorations(this.highlight, ranges);
        if (ranges.length > 0) {
          editor.revealRange(ranges[0], vscode.TextEditorRevealType.InCenterIfOutsideViewport);
        }
      });
    }
  }

  private clearHighlight(): void {
    for (const editor of vscode.window.visibleTextEditors) {
      editor.setDecorations(this.highlight, []);
    }
  }

  /** The `def` around `position` (by the server's document symbols), or the top level. */
  private async functionAt(document: vscode.TextDocument, position: vscode.Position): Promise<string> {
    const symbols = await vscode.commands.executeCommand<vscode.DocumentSymbol[] | undefined>(
      'vscode.executeDocumentSymbolProvider',
      document.uri,
    );
    const around = (symbols ?? []).find((s) => s.kind === vscode.SymbolKind.Function && s.range.contains(position));
    return around?.name ?? TOP_LEVEL;
  }

  /** Highlights the kernel at the cursor; with `switchFunction`, shows its function if another. */
  private followCursor(position: vscode.Position, switchFunction: boolean): void {
    if (!this.plan || !this.panel) {
      return;
    }
    const kernel = kernelAt(this.plan, { line: position.line, character: position.character });
    const source = this.plan.kernels.find((k) => k.name === kernel)?.source;
    if (switchFunction && source !== undefined && source !== this.function) {
      this.function = source;
      this.post();
    }
    void this.panel.webview.postMessage({ type: 'highlight', kernel: kernel ?? null });
  }

  private scheduleRefresh(): void {
    clearTimeout(this.refreshTimer);
    this.refreshTimer = setTimeout(() => void this.refresh(), REFRESH_DELAY_MS);
  }

  /** Asks the server for the document's plan, and draws it. */
  async refresh(): Promise<void> {
    const client = this.client();
    const document = this.document;
    if (!this.panel || !document) {
      return;
    }
    if (!client) {
      this.post('The Weft language server is not running (Weft: Restart Server starts it).');
      return;
    }
    const version = document.version;
    try {
      const plan = await client.sendRequest<FusionPlan | null>('weft/fusionPlan', {
        textDocument: { uri: document.uri.toString() },
      });
      if (document.version !== version) {
        return; // A newer edit has its own refresh coming.
      }
      this.plan = plan;
      this.post(plan === null ? 'The file has errors, so there is no plan: the Problems panel says why.' : undefined);
    } catch (error) {
      // A newer edit cancelled the request (ContentModified): its refresh follows.
      if (document.version === version) {
        this.post(`The plan could not be computed: ${String(error)}`);
      }
    }
  }

  private post(message?: string): void {
    if (!this.panel || !this.document) {
      return;
    }
    const name = this.document.uri.path.split('/').pop() ?? '';
    this.panel.title = `Fusion: ${this.function === TOP_LEVEL ? 'top level' : this.function} (${name})`;
    const plan = this.plan;
    void this.panel.webview.postMessage({
      type: 'plan',
      function: this.function,
      functions: plan ? functionsWithKernels(plan) : [],
      graph: plan ? buildGraph(plan, this.function) : null,
      message: message ?? null,
    });
  }

  dispose(): void {
    clearTimeout(this.refreshTimer);
    this.panel?.dispose();
    this.disposables.forEach((d) => d.dispose());
  }
}
