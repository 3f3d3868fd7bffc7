import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';

import { INSTALL_COMMAND, missingServerMessage, resolveServer } from '../../src/serverPath';

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'weft-ext-'));
}

function executable(dir: string, name: string, mode = 0o755): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, '#!/bin/sh\n');
  fs.chmodSync(file, mode);
  return file;
}

describe('resolveServer', () => {
  it('looks `weft` up on the PATH, in order, skipping files that cannot run', () => {
    const [a, b, c] = [tempDir(), tempDir(), tempDir()];
    executable(a, 'weft', 0o644);
    const inB = executable(b, 'weft');
    executable(c, 'weft');
    assert.equal(resolveServer('', [a, b, c].join(':'), undefined, 'linux'), inB);
    assert.equal(resolveServer('weft', `:${c}`, undefined, 'linux'), path.join(c, 'weft'));
  });

  it('takes a path from the setting, relative to the workspace', () => {
    const dir = tempDir();
    const file = executable(dir, 'weft-dev');
    assert.equal(resolveServer(file, '', undefined, 'linux'), file);
    assert.equal(resolveServer('./weft-dev', '', dir, 'linux'), file);
    assert.equal(resolveServer(path.join(dir, 'missing'), '', undefined, 'linux'), undefined);
    assert.equal(resolveServer(dir, '', undefined, 'linux'), undefined, 'a directory is not a binary');
  });

  it('says nothing is found when nothing is', () => {
    assert.equal(resolveServer('', tempDir(), undefined, 'linux'), undefined);
    assert.equal(resolveServer('', undefined, undefined, 'linux'), undefined);
  });

  it('tells the user the command that installs weft', () => {
    assert.match(missingServerMessage(''), /`weft` was not found on the PATH/);
    assert.ok(missingServerMessage('').includes(INSTALL_COMMAND));
    assert.match(missingServerMessage('/opt/weft'), /`\/opt\/weft` is not an executable file/);
  });
});
