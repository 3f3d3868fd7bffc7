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
    vscode.commands.registerCommand('weft.restartServer', async () => {
      if (client) {
        await client.stop().catch(() => undefined);
        client = undefined;
      }
      client = await startClient(output);
      if (client) {
        void vscode.window.setStatusBarMessage('Weft: the language server restarted', 3000);
      }
    }),
    vscode.commands.registerCommand('weft.showFusionView', (uri?: string, fn?: string) => fusionView.show(uri, fn)),
    // The server's code lens `N kernels · view fusion` names this command.
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
  try {
    client = await startClient(output);
  } catch (error) {
    output.appendLine(`The language server did not start: ${String(error)}`);
    void vscode.window.showErrorMessage(`Weft: the language server did not start: ${String(error)}`);
  }
}

export async function deactivate(): Promise<void> {
  await client?.stop();
}
