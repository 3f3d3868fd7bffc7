//! The kernels of a whole program, as `weft wgsl` prints them: for each op, what the GPU
//! executor launches for it when its vector operands are on the device and its scalar
//! operands on the host (a scalar the device computed makes the same kernel read a
//! one-element array instead).

use std::collections::HashSet;

use rowan::TextRange;

use crate::ir::{Block, Function, FusedKernel, Op, Program, ReduceOp, StmtKind, VarId};
use weft_core::Literal;
use weft_core::types::Scalar;

use super::{Kernel, LoopKernel, Operand, map_kernel, prims};

/// One kernel, and where it first comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramKernel {
    pub function: String,
    pub span: TextRange,
    pub kernel: Kernel,
}

/// Every distinct kernel of the program, in program order.
pub fn program_kernels(program: &Program) -> Vec<ProgramKernel> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for f in &program.functions {
        let mut push = |span: TextRange, kernel: Kernel| {
            if seen.insert(kernel.source.clone()) {
                out.push(ProgramKernel { function: f.name.clone(), span, kernel });
            }
        };
        let mut zeros = HashSet::new();
        zero_constants(&f.body, &mut zeros);
        block_kernels(f, &f.body, &zeros, &mut push);
    }
    out
}

/// The variables holding a constant whose bits are all zero: a `replicate` of one is the
/// device's fill command, with no kernel.
fn zero_constants(block: &Block, out: &mut HashSet<VarId>) {
    for stmt in &block.stmts {
        match &stmt.kind {
            StmtKind::Op { dest: Some(d), op: Op::Const(literal) } => {
                let zero = match literal {
                    Literal::Bool(b) => !b,
                    Literal::Int(k, _) => *k == 0,
                    Literal::Float(x, _) => x.to_bits() == 0,
                };
                if zero {
                    out.insert(*d);
                }
            }
            StmtKind::If { then: a, otherwise: b, .. }
            | StmtKind::While { cond: a, body: b, .. }
            | StmtKind::ElementLoop { cond: a, body: b, .. } => {
                zero_constants(a, out);
                zero_constants(b, out);
            }
            _ => {}
        }
    }
}

fn block_kernels(
    f: &Function,
    block: &Block,
    zeros: &HashSet<VarId>,
    push: &mut dyn FnMut(TextRange, Kernel),
) {
    for stmt in &block.stmts {
        match &stmt.kind {
            StmtKind::Op { op: Op::Replicate { value, .. }, .. } if zeros.contains(value) => {}
            StmtKind::Op { dest, op } => {
                for kernel in op_kernels(f, op, dest.map(|d| f.ty(d).elem)) {
                    push(stmt.span, kernel);
                }
            }
            StmtKind::If { then, otherwise, .. } => {
                block_kernels(f, then, zeros, push);
                block_kernels(f, otherwise, zeros, push);
            }
            StmtKind::While { cond, body, .. } => {
                block_kernels(f, cond, zeros, push);
                block_kernels(f, body, zeros, push);
            }
            StmtKind::ElementLoop { inputs, shared, params, init, state, cond, body, .. } => {
                let operands = |vars: &[VarId], first: usize| -> Vec<Operand> {
                    vars.iter().enumerate().map(|(k, &v)| operand(f, v, first + k, false)).collect()
                };
                let (inputs, init) = (operands(inputs, 0), operands(init, inputs.len()));
                let looped = LoopKernel {
                    function: f,
                    params,
                    inputs: &inputs,
                    state,
                    init: &init,
                    shared,
                    cond,
                    body,
                };
                if let Ok(kernel) = looped.kernel() {
                    push(stmt.span, kernel);
                }
            }
            StmtKind::Kernel(kernel) => {
                for code in fused_kernels(f, kernel) {
                    push(stmt.span, code);
                }
            }
            StmtKind::Call { .. } | StmtKind::Print { .. } => {}
        }
    }
}

/// A fused kernel's launches: its one kernel, or for a kernel that ends in a scan, the scan's
/// first pass computing its input from the other members, then the primitive's other passes.
fn fused_kernels(f: &Function, kernel: &FusedKernel) -> Vec<Kernel> {
    let operands = |kernel: &FusedKernel| -> Vec<(VarId, Operand)> {
        kernel.inputs().into_iter().enumerate().map(|(k, v)| (v, operand(f, v, k, true))).collect()
    };
    let Some((at, producer)) = kernel.split_scan() else {
        return super::fused::fused_kernel(f, kernel, &operands(kernel))
            .map(|code| vec![code.kernel])
            .unwrap_or_default();
    };
    let StmtKind::Op { dest, op } = &kernel.body[at].kind else {
        return Vec::new();
    };
    let inputs = operands(&producer);
    let src = producer.outputs[0];
    let elem = f.ty(src).elem;
    let produced =
        super::fused::Produced { f, name: &producer.name, members: &producer.body, src, inputs: &inputs };
    let (first, replaced) = match op {
        Op::Scan { op: rop, .. } => (prims::scan_blocks_produced(*rop, elem, false, &produced), None),
        Op::SegReduce { op: rop, .. } => (
            prims::seg_scan_blocks_gathered_produced(*rop, elem, &produced),
            Some(prims::seg_scan_blocks_gathered(*rop, elem).name),
        ),
        _ => (prims::segment_gather_produced(elem, &produced), Some(prims::segment_gather(elem).name)),
    };
    // The primitive's pass that the produced one replaces; a scan's own first pass still
    // scans the block sums.
    let replaced = replaced.unwrap_or_default();
    let rest = op_kernels(f, op, dest.map(|d| f.ty(d).elem)).into_iter().filter(|k| k.name != replaced);
    first.into_iter().chain(rest).collect()
}

/// How the executor passes variable `v` as operand `k`.
fn operand(f: &Function, v: VarId, k: usize, whole: bool) -> Operand {
    let ty = f.ty(v);
    match (ty.is_vector(), ty.elem) {
        (true, t) if whole => Operand::Whole(t),
        (true, t) => Operand::Elements(t),
        (false, t @ (Scalar::I64 | Scalar::F64)) => Operand::DeviceScalar(t),
        (false, t) => Operand::Param(t, k),
    }
}

fn elem(f: &Function, v: Option<&VarId>) -> Scalar {
    v.map_or(Scalar::I32, |&v| f.ty(v).elem)
}

fn scan_kernels(op: ReduceOp, elem: Scalar, segmented: bool) -> Vec<Kernel> {
    vec![prims::scan_blocks(op, elem, segmented), prims::scan_add_carry(op, elem, segmented)]
}

/// What the compact layout of a segment descriptor takes: the starts (and the total, when
/// the number of segments or the total stays on the device: with the starts in one launch
/// for lengths in one block), then the ids and positions.
fn compact_kernels() -> Vec<Kernel> {
    let init = Operand::Param(Scalar::I32, 0);
    let mut kernels = exclusive_scan_kernels(ReduceOp::Add, Scalar::I32, init);
    kernels.extend([prims::layout_starts(init), prims::last_end(), prims::segment_search()]);
    kernels
}

/// An exclusive scan's kernels: its blocks' pass, and past one block the inclusive scan of the
/// blocks' totals and the carry.
fn exclusive_scan_kernels(op: ReduceOp, elem: Scalar, init: Operand) -> Vec<Kernel> {
    let mut kernels = vec![prims::scan_blocks_exclusive(op, elem, init)];
    kernels.extend(scan_kernels(op, elem, false));
    kernels
}

fn op_kernels(f: &Function, op: &Op, dest: Option<Scalar>) -> Vec<Kernel> {
    let operands = op.operands();
    let any_vector = operands.iter().any(|&v| f.ty(v).is_vector());
    let e = |k: usize| elem(f, operands.get(k));
    match op {
        Op::Replicate { value, .. } => vec![prims::fill(operand(f, *value, 0, false))],
        Op::Iota { .. } => vec![prims::iota()],
        _ if !any_vector => Vec::new(),
        Op::SegIds { .. } | Op::SegIota { .. } => compact_kernels(),
        // Parts whose lengths are on the device are joined by one kernel; the others copied.
        Op::Concat(parts)
            if parts.len() <= prims::CONCAT_PARTS && parts.iter().all(|&p| f.ty(p).is_vector()) =>
        {
            vec![prims::concat_parts(e(0), parts.len())]
        }
        Op::Interleave { parts, .. } => {
            let parts: Vec<Operand> =
                parts.iter().enumerate().map(|(k, &v)| operand(f, v, k, false)).collect();
            vec![prims::interleave(&parts)]
        }
        Op::Scatter { index, src, distinct: true, .. } => {
            vec![prims::scatter_write(f.ty(*index).elem, operand(f, *src, 0, false), true)]
        }
        Op::Scatter { index, src, distinct: false, .. } => vec![
            prims::fill(Operand::Param(Scalar::I32, 0)),
            prims::scatter_winners(f.ty(*index).elem),
            prims::scatter_write(f.ty(*index).elem, operand(f, *src, 0, false), false),
        ],
        // A filter's pack takes its places from the filter's running count, with no scan.
        Op::Pack { src, counts: Some(_), .. } => vec![prims::pack_scatter(f.ty(*src).elem)],
        Op::Pack { src, counts: None, .. } => {
            let mut kernels = scan_kernels(ReduceOp::Add, Scalar::I32, false);
            kernels.push(prims::pack_scatter(f.ty(*src).elem));
            kernels
        }
        Op::Reduce { op, .. } => vec![prims::reduce_blocks(*op, e(0))],
        Op::Scan { op, init: None, .. } => scan_kernels(*op, e(0), false),
        Op::Scan { op, init: Some(init), .. } => {
            exclusive_scan_kernels(*op, e(0), operand(f, *init, 0, false))
        }
        Op::SegReduce { op: rop, .. } => {
            let mut kernels = compact_kernels();
            kernels.push(prims::seg_scan_blocks_gathered(*rop, e(0)));
            kernels.extend(scan_kernels(*rop, e(0), true));
            kernels.push(prims::segment_last(e(0), &prims::empty_value(*rop, e(0))));
            kernels
        }
        Op::SegScan { op: rop, init, .. } => {
            let mut kernels = compact_kernels();
            kernels.push(prims::segment_gather(e(0)));
            kernels.extend(scan_kernels(*rop, e(0), true));
            if let Some(init) = init {
                kernels.push(prims::scan_shift(*rop, e(0), true, operand(f, *init, 0, false)));
            }
            kernels
        }
        Op::SegArgExtreme { max, .. } => vec![prims::segment_arg_extreme(e(0), *max)],
        // Copy commands into the destination's buffer: no kernel.
        Op::WriteAt { .. } => Vec::new(),
        _ => {
            let kinds: Vec<Operand> =
                operands.iter().enumerate().map(|(k, &v)| operand(f, v, k, op.reads_whole(k))).collect();
            map_kernel(op, &kinds, dest).into_iter().collect()
        }
    }
}
