/**
 * `Weft: Show Fusion View`: a webview that draws one function's fusion plan (from the server's
 * `weft/fusionPlan`) as a graph. Selecting a kernel highlights its ops in the editor; moving
 * the cursor highlights the kernel it is in; the view follows edits.
 */

import * as crypto from 'crypto';
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
  /** The document version the plan was computed for. */
  private planVersion = -1;
  /**
   * The kernel shown highlighted: the cursor's, or the one last clicked. Every plan message
   * carries it, because VS Code may load the page anew (when it moves the panel to another
   * group), and the new page asks only for the plan.
   */
  private highlighted: string | null = null;
  private refreshTimer: NodeJS.Timeout | undefined;
  /** Counts show() calls, so that a slower earlier one does not overwrite a later one. */
  private generation = 0;
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
        if (this.panel && this.document && sameDocument(e.document, this.document)) {
          this.scheduleRefresh();
        }
      }),
      // The view shows the file being edited: another Weft file brought forward takes its place.
      vscode.window.onDidChangeActiveTextEditor((editor) => {
        if (this.panel && editor?.document.languageId === 'weft' && !(this.document && sameDocument(editor.document, this.document))) {
          void this.show();
        }
      }),
      vscode.window.onDidChangeTextEditorSelection((e) => {
        if (this.panel && this.document && sameDocument(e.textEditor.document, this.document)) {
          this.followCursor(e.selections[0].active, true);
        }
      }),
    );
  }

  /**
   * Opens (or reveals) the view on `uri`'s function `fn`: by default the active editor's file, at
   * its cursor. The server's lens passes both as strings; an editor title button passes the
   * file's `Uri` and an object, which is not a function's name.
   */
  async show(uri?: string | vscode.Uri, fn?: unknown): Promise<void> {
    const generation = ++this.generation;
    const target = typeof uri === 'string' ? vscode.Uri.parse(uri) : uri instanceof vscode.Uri ? uri : undefined;
    const document = target
      ? await vscode.workspace.openTextDocument(target)
      : (vscode.window.activeTextEditor?.document ?? this.document);
    if (!document || document.languageId !== 'weft') {
      void vscode.window.showInformationMessage('Weft: open a .weft file to see its fusion plan.');
      return;
    }
    const editor = vscode.window.visibleTextEditors.find((e) => sameDocument(e.document, document));
    const name = typeof fn === 'string' ? fn : editor ? await this.functionAt(document, editor.selection.active) : TOP_LEVEL;
    if (generation !== this.generation) {
      return; // A later show() has taken over.
    }
    if (!this.document || !sameDocument(this.document, document)) {
      this.plan = null; // Never draw one file's plan over another's.
      this.highlighted = null;
    }
    this.document = document;
    this.function = name;
    if (!this.panel) {
      this.panel = this.createPanel();
    } else {
      this.panel.reveal(vscode.ViewColumn.Beside, true);
    }
    await this.refresh();
    if (editor && generation === this.generation) {
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
    const nonce = crypto.randomBytes(16).toString('hex');
    webview.html = `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${webview.cspSource}; script-src 'nonce-${nonce}';">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link href="${style}" rel="stylesheet"><title>Weft Fusion</title></head>
<body><header id="bar"><label>Function <select id="function"></select></label><span id="summary"></span>
<span id="legend"><span class="buffer">━ buffer</span> <span class="apart">╍ kept apart</span></span></header>
<p id="message"></p><div id="graph"></div>
<script nonce="${nonce}" src="${script}"></script></body></html>`;
    const listener = webview.onDidReceiveMessage((message: FromWebview) => this.onMessage(message));
    panel.onDidDispose(() => {
      listener.dispose();
      this.panel = undefined;
      this.plan = null;
      this.highlighted = null;
      this.clearHighlight();
    });
    return panel;
  }

  private onMessage(message: FromWebview): void {
    if (message.type === 'ready') {
      this.post();
    } else if (message.type === 'selectFunction') {
      this.function = message.function;
      this.post();
    } else if (message.type === 'selectKernel' && this.plan && this.document) {
      this.highlighted = message.kernel;
      const ranges = kernelRanges(this.plan, message.kernel).map(
        (r) => new vscode.Range(r.start.line, r.start.character, r.end.line, r.end.character),
      );
      const document = this.document;
      // The editor already showing the file, or a new one beside the view.
      const column = vscode.window.visibleTextEditors.find((e) => sameDocument(e.document, document))?.viewColumn ?? vscode.ViewColumn.One;
      void vscode.window.showTextDocument(document, { viewColumn: column, preserveFocus: true }).then((editor) => {
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
    if (!this.plan || !this.panel || this.document?.version !== this.planVersion) {
      return; // No plan, or one for older text, whose ranges no longer hold: its refresh follows.
    }
    const kernel = kernelAt(this.plan, { line: position.line, character: position.character });
    const source = this.plan.kernels.find((k) => k.name === kernel)?.source;
    this.highlighted = kernel ?? null;
    if (switchFunction && source !== undefined && source !== this.function) {
      this.function = source;
      this.post();
    }
    void this.panel.webview.postMessage({ type: 'highlight', kernel: this.highlighted });
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
    const current = () => this.document === document && document.version === version;
    try {
      const plan = await client.sendRequest<FusionPlan | null>('weft/fusionPlan', {
        textDocument: { uri: document.uri.toString() },
      });
      if (!current()) {
        return; // A newer edit, or another file, has its own refresh coming.
      }
      this.plan = plan;
      this.planVersion = version;
      this.post(plan === null ? 'The file has errors, so there is no plan: the Problems panel says why.' : undefined);
    } catch (error) {
      // A newer edit cancelled the request (ContentModified): its refresh follows.
      if (current()) {
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
      highlighted: this.highlighted,
      message: message ?? null,
    });
  }

  dispose(): void {
    clearTimeout(this.refreshTimer);
    this.panel?.dispose();
    this.disposables.forEach((d) => d.dispose());
  }
}

function sameDocument(a: vscode.TextDocument, b: vscode.TextDocument): boolean {
  return a.uri.toString() === b.uri.toString();
}
