/**
 * The shape of the server's `weft/fusionPlan` answer: the plan `weft fusion --format json`
 * prints, with each kernel's source function (`source`) and each op's protocol range (`range`).
 * docs/language.md (`weft lsp`) describes it; compiler/flat/src/fuse/plan.rs defines it.
 */

export interface Position {
  line: number;
  character: number;
}

export interface Range {
  start: Position;
  end: Position;
}

export interface PlanOp {
  /** The op as the IR writes it, with the source text it came from: `t%3 = binary* (x * x)`. */
  op: string;
  start: number;
  end: number;
  /** 1-based, as `weft fusion` prints. */
  line: number;
  col: number;
  /** Added by the server: where the op is in the document. */
  range?: Range;
  /** Added by the server: the op's source text and what it computes, as hovers name it. */
  excerpt?: string;
}

export interface Buffer {
  var: number;
  name: string;
  elem: string;
  bytes: string;
}

export interface PlanKernel {
  name: string;
  /** The instance the flattener put it in (`quicksort[f32]^`, `main`). */
  function: string;
  /** The `def` whose text holds its ops, or `main` for the top level. */
  source: string;
  pattern: string;
  schedule: string;
  ops: PlanOp[];
  inputs: Buffer[];
  outputs: Buffer[];
  launch: string;
  bindings: number;
}

export interface Unfused {
  from_kernel: string;
  to_kernel: string;
  from: PlanOp;
  to: PlanOp;
  relation: string;
  constraint: string;
  reason: string;
}

export interface FusionPlan {
  schema: number;
  strategy: string;
  max_bindings: number;
  kernels: PlanKernel[];
  unfused: Unfused[];
}

/** One kernel as `weft/wgsl` answers it. */
export interface KernelSource {
  function: string;
  instance: string;
  name: string;
  range: Range;
  wgsl: string;
}

/** The name the server gives the top-level statements. */
export const TOP_LEVEL = 'main';
