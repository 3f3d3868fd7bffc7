// The manifest and the code agree: every command the manifest declares is registered, the
// server's lens command is too, and every setting the code reads is declared.
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';

const root = path.resolve(__dirname, '../../..');
const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const sources = fs
  .readdirSync(path.join(root, 'src'))
  .map((f) => fs.readFileSync(path.join(root, 'src', f), 'utf8'))
  .join('\n');

describe('the manifest', () => {
  const registered = [...sources.matchAll(/registerCommand\('([\w.]+)'/g)].map((m) => m[1]);

  it('declares only commands the extension registers, and registers the server lens command', () => {
    for (const { command } of manifest.contributes.commands) {
      assert.ok(registered.includes(command), `${command} is declared but never registered`);
    }
    assert.ok(registered.includes('weft.showFusion'), 'the code lens command of `weft lsp`');
  });

  it('declares every setting the code reads', () => {
    const declared = Object.keys(manifest.contributes.configuration.properties);
    const read = [...sources.matchAll(/get<[\w]+>\('([\w.]+)'/g)].map((m) => `weft.${m[1]}`);
    assert.ok(read.length >= 5);
    for (const setting of read) {
      assert.ok(declared.includes(setting), `${setting} is read but not declared`);
    }
  });

  it('points at files the package holds', () => {
    const files = [
      manifest.icon,
      ...manifest.contributes.grammars.map((g: { path: string }) => g.path),
      ...manifest.contributes.snippets.map((s: { path: string }) => s.path),
      ...manifest.contributes.languages.map((l: { configuration: string }) => l.configuration),
      'media/fusionView.js',
      'media/fusionView.css',
    ];
    for (const file of files) {
      assert.ok(fs.existsSync(path.join(root, file)), `${file} is missing`);
    }
  });
});
