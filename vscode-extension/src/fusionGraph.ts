/**
 * A fusion plan as the graph the fusion view draws: kernels as boxes with their ops, the
 * buffers one kernel writes and a later one reads as arrows, and the pairs of ops the plan kept
 * apart as dashed arrows carrying the reason. The layout is computed here, where it can be
 * tested; the webview (media/fusionView.js) only draws it.
 */

import { FusionPlan, PlanKernel, Position, Range } from './plan';

export const NODE_WIDTH = 280;
const HEADER_HEIGHT = 40;
const OP_HEIGHT = 18;
const FOOTER_HEIGHT = 10;
const COLUMN_GAP = 40;
const LAYER_GAP = 56;
const MARGIN = 16;
/** Ops listed in a box; the rest are counted. */
export const MAX_OPS_SHOWN = 8;

export interface GraphOp {
  text: string;
  range?: Range;
}

export interface GraphNode {
  /** The kernel's name, unique in the plan (`k12`). */
  id: string;
  title: string;
  /** Pattern, schedule and launch, in the plan's words. */
  subtitle: string;
  /** The instance that runs it, when it is not the source function itself. */
  instance?: string;
  ops: GraphOp[];
  /** Ops not listed in the box. */
  moreOps: number;
  /** Buffers read that no kernel of the graph wrote (parameters, host values). */
  externalInputs: string[];
  layer: number;
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface GraphEdge {
  from: string;
  to: string;
  /** Buffers passed along the edge, as `name: elem`. */
  buffers: string[];
  /** Why ops of the two kernels stayed apart, when the plan says: the two ops, then the reason. */
  reasons: string[];
  points: [number, number][];
}

export interface FusionGraph {
  /** The source function drawn (`main` for the top level). */
  function: string;
  strategy: string;
  nodes: GraphNode[];
  edges: GraphEdge[];
  width: number;
  height: number;
}

/**
 * A plan's IR text (`xs%2`, `len(xs%2) threads`) as the source names it: the IR's variable
 * numbers dropped, as the server's hovers and hints drop them.
 */
export function withoutIrNumbers(text: string): string {
  return text.replace(/%\d+/g, '');
}

function subtitle(kernel: PlanKernel): string {
  return [kernel.pattern, kernel.schedule, withoutIrNumbers(kernel.launch)].filter((s) => s !== '').join(' · ');
}

/**
 * The graph of `plan`'s kernels whose source function is `fn` (all of them when `fn` is
 * undefined), in the plan's order. Edges join the kernels of one instance only: buffer
 * numbers are per instance.
 */
export function buildGraph(plan: FusionPlan, fn?: string): FusionGraph {
  const kernels = plan.kernels.filter((k) => fn === undefined || k.source === fn);
  const index = new Map(kernels.map((k, i) => [k.name, i]));
  const edges = new Map<string, GraphEdge>();
  const edge = (from: number, to: number): GraphEdge => {
    const key = `${from}>${to}`;
    let e = edges.get(key);
    if (!e) {
      e = { from: kernels[from].name, to: kernels[to].name, buffers: [], reasons: [], points: [] };
      edges.set(key, e);
    }
    return e;
  };
  const external: string[][] = kernels.map(() => []);
  kernels.forEach((kernel, to) => {
    for (const input of kernel.inputs) {
      // The latest earlier kernel of the same instance that wrote this buffer.
      let from = -1;
      for (let i = to - 1; i >= 0; i--) {
        if (kernels[i].function === kernel.function && kernels[i].outputs.some((o) => o.var === input.var)) {
          from = i;
          break;
        }
      }
      const label = `${withoutIrNumbers(input.name)}: ${input.elem}`;
      if (from < 0) {
        external[to].push(label);
      } else if (!edge(from, to).buffers.includes(label)) {
        edge(from, to).buffers.push(label);
      }
    }
  });
  for (const pair of plan.unfused) {
    const from = index.get(pair.from_kernel);
    const to = index.get(pair.to_kernel);
    if (from === undefined || to === undefined || from === to) {
      continue;
    }
    const [a, b] = from < to ? [from, to] : [to, from];
    const reason = `${pair.from.excerpt ?? pair.from.op} → ${pair.to.excerpt ?? pair.to.op}: ${pair.reason}`;
    const e = edge(a, b);
    if (!e.reasons.includes(reason)) {
      e.reasons.push(reason);
    }
  }
  // Layers: each kernel one below the lowest kernel it depends on, so arrows point down.
  const layer = kernels.map(() => 0);
  const ordered = [...edges.values()].sort((x, y) => index.get(x.to)! - index.get(y.to)!);
  for (const e of ordered) {
    const [a, b] = [index.get(e.from)!, index.get(e.to)!];
    layer[b] = Math.max(layer[b], layer[a] + 1);
  }
  const nodes: GraphNode[] = kernels.map((k, i) => {
    const ops = k.ops.slice(0, MAX_OPS_SHOWN).map((op) => ({ text: op.excerpt ?? op.op, range: op.range }));
    return {
      id: k.name,
      title: `${k.name} · ${k.ops.length} op${k.ops.length === 1 ? '' : 's'}`,
      subtitle: subtitle(k),
      instance: k.function === k.source ? undefined : k.function,
      ops,
      moreOps: k.ops.length - ops.length,
      externalInputs: external[i],
      layer: layer[i],
      x: 0,
      y: 0,
      width: NODE_WIDTH,
      height: HEADER_HEIGHT + OP_HEIGHT * (ops.length + (k.ops.length > ops.length ? 1 : 0)) + FOOTER_HEIGHT,
    };
  });
  const layers = Math.max(0, ...layer) + 1;
  let y = MARGIN;
  let width = 0;
  for (let l = 0; l < layers; l++) {
    const row = nodes.filter((n) => n.layer === l);
    row.forEach((n, column) => {
      n.x = MARGIN + column * (NODE_WIDTH + COLUMN_GAP);
      n.y = y;
    });
    width = Math.max(width, MARGIN + row.length * (NODE_WIDTH + COLUMN_GAP) - COLUMN_GAP + MARGIN);
    y += Math.max(0, ...row.map((n) => n.height)) + LAYER_GAP;
  }
  const byId = new Map(nodes.map((n) => [n.id, n]));
  for (const e of edges.values()) {
    const a = byId.get(e.from)!;
    const b = byId.get(e.to)!;
    e.points = [
      [a.x + a.width / 2, a.y + a.height],
      [b.x + b.width / 2, b.y],
    ];
  }
  return {
    function: fn ?? '',
    strategy: plan.strategy,
    nodes,
    edges: [...edges.values()],
    width: Math.max(width, NODE_WIDTH + 2 * MARGIN),
    height: nodes.length === 0 ? 2 * MARGIN : y - LAYER_GAP + MARGIN,
  };
}

function before(a: Position, b: Position): boolean {
  return a.line < b.line || (a.line === b.line && a.character <= b.character);
}

function contains(range: Range, at: Position): boolean {
  return before(range.start, at) && before(at, range.end);
}

function size(range: Range): number {
  return (range.end.line - range.start.line) * 100000 + (range.end.character - range.start.character);
}

/** The kernel of `plan` with the smallest op around `at`: the one the cursor is in. */
export function kernelAt(plan: FusionPlan, at: Position): string | undefined {
  let best: { name: string; size: number } | undefined;
  for (const kernel of plan.kernels) {
    for (const op of kernel.ops) {
      if (op.range && op.end > op.start && contains(op.range, at)) {
        const s = size(op.range);
        if (!best || s < best.size) {
          best = { name: kernel.name, size: s };
        }
      }
    }
  }
  return best?.name;
}

/** The ranges of a kernel's ops, to highlight in the editor. */
export function kernelRanges(plan: FusionPlan, name: string): Range[] {
  const kernel = plan.kernels.find((k) => k.name === name);
  return (kernel?.ops ?? []).filter((op) => op.range && op.end > op.start).map((op) => op.range!);
}

/** The source functions that have kernels, with how many, in the plan's order. */
export function functionsWithKernels(plan: FusionPlan): { name: string; kernels: number }[] {
  const counts = new Map<string, number>();
  for (const k of plan.kernels) {
    counts.set(k.source, (counts.get(k.source) ?? 0) + 1);
  }
  return [...counts].map(([name, kernels]) => ({ name, kernels }));
}
