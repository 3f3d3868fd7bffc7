import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';

import { MAX_OPS_SHOWN, buildGraph, functionsWithKernels, kernelAt, kernelRanges, withoutIrNumbers } from '../../src/fusionGraph';
import { FusionPlan, PlanKernel, PlanOp } from '../../src/plan';

function op(text: string, line: number, from: number, to: number): PlanOp {
  return {
    op: `t%${line}${from} = ${text}`,
    start: line * 100 + from,
    end: line * 100 + to,
    line: line + 1,
    col: from + 1,
    range: { start: { line, character: from }, end: { line, character: to } },
    excerpt: `\`${text}\``,
  };
}

function buffer(v: number, name: string) {
  return { var: v, name: `${name}%${v}`, elem: 'f32', bytes: '4·len(xs)' };
}

function kernel(name: string, source: string, instance: string, ops: PlanOp[], inputs: number[], outputs: number[]): PlanKernel {
  return {
    name,
    function: instance,
    source,
    pattern: 'map',
    schedule: 'flat',
    ops,
    inputs: inputs.map((v) => buffer(v, `v${v}`)),
    outputs: outputs.map((v) => buffer(v, `v${v}`)),
    launch: 'len(xs%1) threads',
    bindings: inputs.length + outputs.length,
  };
}

// main: k0 -> k1 -> k3, k2 independent; qs (two instances sharing buffer numbers): k4, k5.
const plan: FusionPlan = {
  schema: 1,
  strategy: 'ilp',
  max_bindings: 8,
  kernels: [
    kernel('k0', 'main', 'main', [op('x * x', 1, 5, 10)], [1], [2]),
    kernel('k1', 'main', 'main', [op('sum(ys)', 2, 4, 11), op('ys[i] + 1', 2, 12, 21)], [2], [3]),
    kernel('k2', 'main', 'main', [op('len(zs)', 3, 0, 7)], [7], [8]),
    kernel('k3', 'main', 'main', [op('t + 1', 4, 0, 5)], [3, 2], [4]),
    kernel('k4', 'qs', 'qs[f32]^', [op('xs < p', 8, 4, 10)], [1], [2]),
    kernel('k5', 'qs', 'qs[i32]^', [op('xs < p', 8, 4, 10)], [2], [3]),
  ],
  unfused: [
    {
      from_kernel: 'k1',
      to_kernel: 'k3',
      from: op('sum(ys)', 2, 4, 11),
      to: op('t + 1', 4, 0, 5),
      relation: 'producer-consumer',
      constraint: 'reduce before map',
      reason: 'a reduction must finish before its result is read',
    },
    {
      from_kernel: 'k0',
      to_kernel: 'k2',
      from: op('x * x', 1, 5, 10),
      to: op('len(zs)', 3, 0, 7),
      relation: 'siblings',
      constraint: 'index spaces differ',
      reason: 'they run over different lengths',
    },
  ],
};

describe('buildGraph', () => {
  it('draws the kernels of one source function, in the plan order', () => {
    const graph = buildGraph(plan, 'main');
    assert.deepEqual(graph.nodes.map((n) => n.id), ['k0', 'k1', 'k2', 'k3']);
    assert.equal(graph.function, 'main');
    assert.equal(graph.strategy, 'ilp');
    assert.deepEqual(buildGraph(plan, 'qs').nodes.map((n) => n.id), ['k4', 'k5']);
    assert.equal(buildGraph(plan).nodes.length, 6);
    assert.equal(buildGraph(plan, 'nothing').nodes.length, 0);
  });

  it('joins a kernel to the last earlier kernel that wrote what it reads', () => {
    const graph = buildGraph(plan, 'main');
    const buffers = graph.edges.filter((e) => e.buffers.length > 0).map((e) => `${e.from}>${e.to} ${e.buffers.join(',')}`);
    assert.deepEqual(buffers.sort(), ['k0>k1 v2: f32', 'k0>k3 v2: f32', 'k1>k3 v3: f32']);
    assert.deepEqual(graph.nodes.find((n) => n.id === 'k0')?.externalInputs, ['v1: f32']);
    assert.deepEqual(graph.nodes.find((n) => n.id === 'k2')?.externalInputs, ['v7: f32']);
  });

  it('never joins two instances, whose buffer numbers are their own', () => {
    const graph = buildGraph(plan, 'qs');
    assert.deepEqual(graph.edges, []);
    assert.equal(graph.nodes[0].instance, 'qs[f32]^');
    assert.deepEqual(graph.nodes[1].externalInputs, ['v2: f32']);
  });

  it('says why ops stayed apart, on the edge between their kernels', () => {
    const graph = buildGraph(plan, 'main');
    const k1k3 = graph.edges.find((e) => e.from === 'k1' && e.to === 'k3');
    assert.deepEqual(k1k3?.reasons, ['`sum(ys)` → `t + 1`: a reduction must finish before its result is read']);
    const k0k2 = graph.edges.find((e) => e.from === 'k0' && e.to === 'k2');
    assert.deepEqual(k0k2?.buffers, []);
    assert.deepEqual(k0k2?.reasons, ['`x * x` → `len(zs)`: they run over different lengths']);
  });

  it('lays kernels out in layers, each below what it depends on, with arrows pointing down', () => {
    const graph = buildGraph(plan, 'main');
    const node = (id: string) => graph.nodes.find((n) => n.id === id)!;
    assert.deepEqual(['k0', 'k1', 'k2', 'k3'].map((id) => node(id).layer), [0, 1, 1, 2]);
    assert.equal(node('k1').y, node('k2').y);
    assert.notEqual(node('k1').x, node('k2').x);
    for (const e of graph.edges) {
      const [[, y1], [, y2]] = e.points;
      assert.ok(y1 < y2, `${e.from}>${e.to} points down`);
    }
    for (const n of graph.nodes) {
      assert.ok(n.x >= 0 && n.y >= 0 && n.x + n.width <= graph.width && n.y + n.height <= graph.height);
    }
  });

  it('names buffers and launches as the source does, without IR numbers', () => {
    assert.equal(withoutIrNumbers('len(xs%2) threads, 100% busy'), 'len(xs) threads, 100% busy');
    const [node] = buildGraph(plan, 'main').nodes;
    assert.equal(node.subtitle, 'map · flat · len(xs) threads');
  });

  it('lists the ops by their source text, and counts those past the limit', () => {
    const many = Array.from({ length: MAX_OPS_SHOWN + 3 }, (_, i) => op(`x + ${i}`, 10 + i, 0, 5));
    const big: FusionPlan = { ...plan, kernels: [kernel('k9', 'main', 'main', many, [], [1])], unfused: [] };
    const [node] = buildGraph(big, 'main').nodes;
    assert.equal(node.ops.length, MAX_OPS_SHOWN);
    assert.equal(node.moreOps, 3);
    assert.equal(node.ops[0].text, '`x + 0`');
    assert.equal(node.title, `k9 · ${MAX_OPS_SHOWN + 3} ops`);
  });
});

describe('the editor side', () => {
  it('finds the kernel of the innermost op around the cursor', () => {
    assert.equal(kernelAt(plan, { line: 2, character: 6 }), 'k1');
    assert.equal(kernelAt(plan, { line: 2, character: 15 }), 'k1');
    assert.equal(kernelAt(plan, { line: 1, character: 7 }), 'k0');
    assert.equal(kernelAt(plan, { line: 6, character: 0 }), undefined);
    const nested: FusionPlan = {
      ...plan,
      kernels: [kernel('outer', 'main', 'main', [op('[f(x) for x in xs]', 1, 0, 30)], [], []), kernel('inner', 'main', 'main', [op('f(x)', 1, 1, 5)], [], [])],
    };
    assert.equal(kernelAt(nested, { line: 1, character: 2 }), 'inner');
    assert.equal(kernelAt(nested, { line: 1, character: 20 }), 'outer');
  });

  it('gives the ranges to highlight for a kernel', () => {
    assert.deepEqual(kernelRanges(plan, 'k1'), [
      { start: { line: 2, character: 4 }, end: { line: 2, character: 11 } },
      { start: { line: 2, character: 12 }, end: { line: 2, character: 21 } },
    ]);
    assert.deepEqual(kernelRanges(plan, 'missing'), []);
  });

  it('lists the functions that have kernels, for the picker', () => {
    assert.deepEqual(functionsWithKernels(plan), [
      { name: 'main', kernels: 4 },
      { name: 'qs', kernels: 2 },
    ]);
  });
});
