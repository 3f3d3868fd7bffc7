import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';

import { replArgs, replInput, runArgs, shellLine, shellQuote } from '../../src/commandLine';

describe('command lines', () => {
  it('passes the backend only when one is chosen', () => {
    assert.deepEqual(runArgs('auto', '/w/a.weft'), ['run', '/w/a.weft']);
    assert.deepEqual(runArgs('gpu', '/w/a.weft'), ['run', '--backend', 'gpu', '/w/a.weft']);
    assert.deepEqual(replArgs('interp'), ['repl', '--backend', 'interp']);
    assert.deepEqual(replArgs('auto'), ['repl']);
  });

  it('quotes what a shell would split or expand', () => {
    assert.equal(shellQuote('/usr/bin/weft'), '/usr/bin/weft');
    assert.equal(shellQuote('my file.weft'), `'my file.weft'`);
    assert.equal(shellQuote(`it's`), `'it'\\''s'`);
    assert.equal(shellQuote('$HOME'), `'$HOME'`);
    assert.equal(shellLine('/opt/weft', runArgs('cpu', '/a b/x.weft')), `/opt/weft run --backend cpu '/a b/x.weft'`);
  });
});

describe('replInput', () => {
  const paste = (text: string) => `\x1b[200~${text}\x1b[201~`;

  it('sends a line as one paste, then the Enter that submits it', () => {
    assert.equal(replInput('xs = [1, 2, 3]'), paste('xs = [1, 2, 3]') + '\r');
  });

  it('ends a cell with a block with an empty line, so that it runs', () => {
    assert.equal(replInput('def f(x):\n    return x + 1\n'), paste('def f(x):\n    return x + 1') + '\r\r');
  });

  it('removes the indentation a selection inside a body has, and keeps blank lines inside', () => {
    assert.equal(replInput('\n    for i in range(3):\n\n        print(i)\n'), paste('for i in range(3):\n\n    print(i)') + '\r\r');
    assert.equal(replInput('  a = 1\r\n  b = a + 1'), paste('a = 1\nb = a + 1') + '\r');
  });

  it('does not take a colon in a comment or a slice for a block', () => {
    assert.equal(replInput('# note: this\nys = xs[1:3]'), paste('# note: this\nys = xs[1:3]') + '\r');
  });

  it('sends nothing for an empty selection', () => {
    assert.equal(replInput('  \n\n'), undefined);
  });
});
