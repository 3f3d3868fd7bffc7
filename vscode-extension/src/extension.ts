/**
 * Weft in VS Code: starts `weft lsp` as the language server and wires the commands (the
 * fusion view, the WGSL document, Run File and the REPL). Every answer about types, shapes
 * and kernels comes from the server; the extension only shows it.
 */

import * as vscode from 'vscode';
import { LanguageClient, LanguageClientOptions, ServerOptions, State } from 'vscode-languageclient/node';

import { FusionView } from './fusionView';
import { Terminals } from './terminals';
import { WgslDocuments } from './wgslDocuments';
import { INSTALL_COMMAND, missingServerMessage, resolveServer } from './serverPath';

let client: LanguageClient | undefined;

/** The `weft` binary to run, or `undefined` after telling the user how to install it. */
export function weftBinary(): string | undefined {
  const setting = vscode.workspace.getConfiguration('weft').get<string>('server.path', '');
  const base = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const found = resolveServer(setting, process.env.PATH, base);
  if (!found) {
    void vscode.window
      .showErrorMessage(missingServerMessage(setting), 'Copy Install Command', 'Open Settings')
      .then((choice) => {
        if (choice === 'Copy Install Command') {
          void vscode.env.clipboard.writeText(INSTALL_COMMAND);
        } else if (choice === 'Open Settings') {
          void vscode.commands.executeCommand('workbench.action.openSettings', 'weft.server.path');
        }
      });
  }
  return found;
}

/** The settings the server reads, as `initializationOptions` and `didChangeConfiguration` carry them. */
function serverSettings(): object {
  const config = vscode.workspace.getConfiguration('weft');
  return {
    weft: {
      inlayHints: {
        types: config.get<boolean>('inlayHints.types', true),
        shapes: config.get<boolean>('inlayHints.shapes', true),
        kernels: config.get<boolean>('inlayHints.kernels', true),
      },
    },
  };
}

async function startClient(output: vscode.LogOutputChannel): Promise<LanguageClient | undefined> {
  const weft = weftBinary();
  if (!weft) {
    return undefined;
  }
  const serverOptions: ServerOptions = { command: weft, args: ['lsp'] };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ language: 'weft' }],
    outputChannel: output,
    initializationOptions: serverSettings(),
    // `didChangeConfiguration` then carries `{ weft: ... }`, which the server reads as it
    // reads `initializationOptions`.
    synchronize: { configurationSection: 'weft' },
  };
  const started = new LanguageClient('weft', 'Weft Language Server', serverOptions, clientOptions);
  await started.start();
  return started;
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel('Weft Language Server', { log: true });
  context.subscriptions.push(output);
  const clientOf = () => (client?.state === State.Running ? client : undefined);
  const fusionView = new FusionView(context, clientOf);
  const wgsl = new WgslDocuments(clientOf);
  const terminals = new Terminals(weftBinary);
  context.subscriptions.push(fusionView, wgsl, terminals);
  context.subscriptions.push(
    vscode.workspace.registerTextDocumentContentProvider(WgslDocuments.scheme, wgsl),
    vscode.commands.registerCommand('weft.restartServer', () => restart(output)),
    // From the palette (no arguments) or an editor's title button (its `Uri`, and an object).
    vscode.commands.registerCommand('weft.showFusionView', (uri?: vscode.Uri, fn?: unknown) => fusionView.show(uri, fn)),
    // The server's code lens `N kernels · view fusion` names this command: the file's URI and
    // the function's name, as strings.
    vscode.commands.registerCommand('weft.showFusion', (uri?: string, fn?: string) => fusionView.show(uri, fn)),
    vscode.commands.registerCommand('weft.showWgsl', () => wgsl.show()),
    vscode.commands.registerCommand('weft.runFile', () => terminals.runFile()),
    vscode.commands.registerCommand('weft.startRepl', () => terminals.startRepl()),
    vscode.commands.registerCommand('weft.sendSelectionToRepl', () => terminals.sendSelection()),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('weft.server.path')) {
        void vscode.commands.executeCommand('weft.restartServer');
      }
    }),
  );
  await restart(output, false);
}

/** The restart in progress: restarts run one after another, so that two never start two servers. */
let restarting: Promise<void> = Promise.resolve();

/** Stops the server (if one runs) and starts it again with the current settings. */
function restart(output: vscode.LogOutputChannel, announce = true): Promise<void> {
  restarting = restarting.then(async () => {
    if (client) {
      const stopping = client;
      client = undefined;
      await stopping.stop().catch(() => undefined);
    }
    try {
      client = await startClient(output);
      if (client && announce) {
        void vscode.window.setStatusBarMessage('Weft: the language server restarted', 3000);
      }
    } catch (error) {
      output.error(`The language server did not start: ${String(error)}`);
      void vscode.window.showErrorMessage(`Weft: the language server did not start: ${String(error)}`);
    }
  });
  return restarting;
}

export async function deactivate(): Promise<void> {
  await client?.stop();
}
