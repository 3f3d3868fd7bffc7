import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';

import { KernelSource } from '../../src/plan';
import { wgslDocument } from '../../src/wgslText';

const range = (line: number) => ({ start: { line, character: 4 }, end: { line, character: 9 } });

describe('wgslDocument', () => {
  it('puts each kernel under a header naming where it comes from', () => {
    const kernels: KernelSource[] = [
      { function: 'main', instance: 'main', name: 'k0', range: range(3), wgsl: '@compute @workgroup_size(256)\nfn k0() {}\n\n' },
      { function: 'quicksort', instance: 'quicksort[f32]^', name: 'k1', range: range(11), wgsl: 'fn k1() {}' },
    ];
    assert.equal(
      wgslDocument('qs.weft', kernels),
      '// qs.weft: 2 kernels, as `weft wgsl` prints them.\n\n' +
        '// k0: the top level, line 4\n@compute @workgroup_size(256)\nfn k0() {}\n\n' +
        '// k1: def quicksort, line 12, run by instance quicksort[f32]^\nfn k1() {}\n',
    );
  });

  it('says why there is nothing to show', () => {
    assert.match(wgslDocument('a.weft', null), /no kernels while the file has errors/);
    assert.match(wgslDocument('a.weft', []), /no kernels \(nothing here runs in parallel\)/);
  });
});
