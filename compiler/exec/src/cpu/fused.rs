//! Fused kernels (`ir::StmtKind::Kernel`) on the CPU executor: one pass over the kernel's index
//! space, in chunks of `CHUNK` elements that stay in cache, in parallel over chunks with rayon.
//! A chunk flows through every op of the kernel before the next chunk starts: its inputs are
//! read once (element-wise ops read their chunk of an input in place, `kernels::Window`; other
//! ops read a copy of it), its intermediates live only as long as the chunk, and only the
//! kernel's outputs are written out in full, straight into their final vectors. A reduction keeps one partial
//! per chunk and combines them in order. So what the fusion plan shows is what runs here, as
//! on the GPU.
//!
//! The values are those of running the ops one at a time (`kernels`), op for op on a slice;
//! only a float sum or product of 16,384 elements or more may be grouped otherwise (one
//! partial per chunk, each folded in interleaved lanes, combined in order), as the ops' own
//! parallel reductions group theirs (in larger chunks, combined in a tree).
//! When a chunk fails (a check, an integer division by zero), or the kernel has a form this
//! module does not run, `run` says so and the walker runs the ops one at a time instead: that
//! finds the interpreter's error, whichever op and element report it first.

use std::collections::HashMap;

use rayon::prelude::*;
use rowan::TextRange;

use super::kernels::{self, KResult};
use super::progression;
use super::value::{Buffer, Elem, FlatValue, ScalarValue, each_scalar_type};
use crate::host_flow::{Frame, RunResult, get, internal_at, set};
use weft_core::types::Scalar;
use weft_flat::ir::{Check, Function, FusedKernel, Op, ReduceOp, Stmt, StmtKind, VarId};
use weft_syntax::diagnostics::Diagnostic;

/// The elements of one chunk: 4,096 elements of up to 8 bytes each keep a kernel's inputs and
/// intermediates within a core's L2 cache.
pub const CHUNK: usize = 4096;

/// What a kernel run as one pass did, for the executor's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pass {
    /// The length of the kernel's index space.
    pub elements: usize,
    /// Passes over memory: one, and one more for a scan that consumes the kernel's result.
    pub passes: u64,
}

/// Runs `kernel`, a statement of `f`, as one chunked pass and sets its outputs in `frame`:
/// `None` when it cannot (see the module comment), and nothing in `frame` has changed.
/// `strided` says whether the executor keeps progressions: a kernel whose ops would all give
/// progressions then runs op by op, which keeps them.
pub(super) fn run(
    f: &Function,
    kernel: &FusedKernel,
    frame: &mut Frame<FlatValue>,
    strided: bool,
    span: TextRange,
) -> RunResult<Option<Pass>> {
    // A scan (or segmented reduction or scan) consumes what the other members compute: they
    // run as one pass that writes its input out, and it runs on the whole of it.
    let (members, scan): (Vec<&Stmt>, Option<&Stmt>) = match kernel.scan_position() {
        Some(at) => (
            kernel.body.iter().enumerate().filter(|(k, _)| *k != at).map(|(_, s)| s).collect(),
            kernel.body.get(at),
        ),
        None => (kernel.body.iter().collect(), None),
    };
    let defined: Vec<VarId> = members.iter().filter_map(|s| dest(s)).collect();
    let mut wanted: Vec<VarId> = kernel.outputs.iter().copied().filter(|v| defined.contains(v)).collect();
    let scan_op = scan.and_then(|s| match &s.kind {
        StmtKind::Op { dest, op } => Some((*dest, op, s.span)),
        _ => None,
    });
    if let Some((_, Op::Scan { src, .. } | Op::SegReduce { src, .. } | Op::SegScan { src, .. }, _)) = scan_op
        && defined.contains(src)
        && !wanted.contains(src)
    {
        wanted.push(*src);
    }
    let Some(pass) = Chunked::plan(f, &members, frame, strided, span)? else {
        return Ok(None);
    };
    let Some(values) = pass.run(f, &wanted) else {
        return Ok(None);
    };
    let mut local = HashMap::new();
    for (&v, value) in wanted.iter().zip(values) {
        if kernel.outputs.contains(&v) {
            set(frame, v, value.clone(), span)?;
        }
        local.insert(v, value);
    }
    let mut passes = 1;
    if let Some((Some(d), op, at)) = scan_op {
        let operand = |v: VarId| match local.get(&v) {
            Some(value) => Ok(value.clone()),
            None => get(frame, v, at),
        };
        let args = op.operands().iter().map(|&v| operand(v)).collect::<RunResult<Vec<_>>>()?;
        // Segments of a regular sequence stay progressions, as when the op runs alone.
        let strided_result = if strided { progression::run_op(op, &args) } else { None };
        let result = strided_result.unwrap_or_else(|| {
            let args: Vec<FlatValue> = args.into_iter().map(FlatValue::materialized).collect();
            kernels::run_op(op, &args)
        });
        match result {
            Ok(Some(value)) => set(frame, d, value, at)?,
            Ok(None) => return Err(internal_at("a scan with no result", at)),
            Err(e) => return Err(Diagnostic::new(e.code, at, e.message)),
        }
        passes += 1;
    }
    Ok(Some(Pass { elements: pass.n, passes }))
}

fn dest(stmt: &Stmt) -> Option<VarId> {
    match &stmt.kind {
        StmtKind::Op { dest, .. } => *dest,
        _ => None,
    }
}

/// A kernel's members checked for the chunked form, with their inputs.
struct Chunked<'k> {
    members: Vec<(&'k Op, Option<VarId>)>,
    /// The length of the index space.
    n: usize,
    /// The elements of a chunk: `CHUNK`, or all of them below `kernels::PAR_THRESHOLD`, where
    /// the ops one at a time run sequentially too, so that a reduction adds in the same order.
    chunk: usize,
    /// Each input read element by element, whole: a chunk reads its slice.
    sliced: HashMap<VarId, FlatValue>,
    /// Each input read whole: scalars, and the sources of gathers.
    whole: HashMap<VarId, FlatValue>,
}

impl<'k> Chunked<'k> {
    fn plan(
        f: &Function,
        members: &[&'k Stmt],
        frame: &Frame<FlatValue>,
        strided: bool,
        span: TextRange,
    ) -> RunResult<Option<Chunked<'k>>> {
        let mut ops = Vec::with_capacity(members.len());
        for stmt in members {
            let StmtKind::Op { dest, op } = &stmt.kind else { return Ok(None) };
            ops.push((op, *dest));
        }
        let defined: Vec<VarId> = ops.iter().filter_map(|(_, d)| *d).collect();
        let reduced: Vec<VarId> =
            ops.iter().filter(|(op, _)| matches!(op, Op::Reduce { .. })).filter_map(|(_, d)| *d).collect();
        let mut sliced = HashMap::new();
        let mut whole = HashMap::new();
        let mut lens = Vec::new();
        for &(op, _) in &ops {
            if !chunkable(f, op) {
                return Ok(None);
            }
            if let Op::Iota { len } | Op::Replicate { len, .. } = op {
                lens.push(*len);
            }
            for (k, &v) in op.operands().iter().enumerate() {
                // A reduction's result is known only when every chunk is done.
                if reduced.contains(&v) {
                    return Ok(None);
                }
                let gathered = op.reads_whole(k);
                if defined.contains(&v) {
                    if gathered {
                        return Ok(None);
                    }
                    continue;
                }
                let value = get(frame, v, span)?;
                // A gather from either of two sources has no progression form: a progression
                // source is written out once here, not in every chunk.
                let value = if gathered && matches!(op, Op::GatherEither { .. }) {
                    value.materialized()
                } else {
                    value
                };
                if gathered || value.vector_len().is_none() {
                    whole.entry(v).or_insert(value);
                } else {
                    sliced.entry(v).or_insert(value);
                }
            }
        }
        let n = match sliced.values().next() {
            Some(value) => value.vector_len().unwrap_or(0),
            None => match lens.first().and_then(|len| whole.get(len)).and_then(FlatValue::as_scalar) {
                Some(len) => len.as_int().and_then(|n| usize::try_from(n).ok()).unwrap_or(0),
                None => return Ok(None),
            },
        };
        let lengths_agree = sliced.values().all(|v| v.vector_len() == Some(n))
            && lens.iter().all(|len| {
                whole.get(len).and_then(FlatValue::as_scalar).and_then(ScalarValue::as_int) == Some(n as i64)
            });
        // Ill-sized kernels and kernels of progressions alone are the op-by-op path's, and so
        // are kernels of less than a chunk: their ops' results stay in cache anyway, and
        // planning the pass would cost more than it saves.
        if n < CHUNK || !lengths_agree || (strided && all_strided(&ops, frame)) {
            return Ok(None);
        }
        let chunk = if n < kernels::PAR_THRESHOLD { n } else { CHUNK };
        Ok(Some(Chunked { members: ops, n, chunk, sliced, whole }))
    }

    /// The values of `wanted` (members' results), or `None` if a chunk failed.
    fn run(&self, f: &Function, wanted: &[VarId]) -> Option<Vec<FlatValue>> {
        let chunks = self.n.div_ceil(self.chunk);
        let reductions: HashMap<VarId, ReduceOp> = self
            .members
            .iter()
            .filter_map(|(op, d)| match (op, d) {
                (Op::Reduce { op, .. }, Some(d)) => Some((*d, *op)),
                _ => None,
            })
            .collect();
        // The vector outputs, allocated once, handed out a chunk's slice at a time.
        let mut outputs: Vec<Option<Buffer>> = wanted
            .iter()
            .map(|v| (!reductions.contains_key(v)).then(|| zeroed(f.ty(*v).elem, self.n)))
            .collect();
        let mut slots: Vec<Vec<Slot<'_>>> = (0..chunks).map(|_| Vec::with_capacity(wanted.len())).collect();
        for output in &mut outputs {
            match output {
                Some(buffer) => {
                    for (chunk, slot) in slots.iter_mut().zip(slices(buffer, self.chunk)) {
                        chunk.push(slot);
                    }
                }
                None => slots.iter_mut().for_each(|chunk| chunk.push(Slot::Partial(None))),
            }
        }
        // One chunk runs on this thread: handing it to rayon's pool costs more than a small
        // kernel's work.
        let ran: KResult<Vec<Vec<Slot<'_>>>> = if chunks == 1 {
            slots.into_iter().enumerate().map(|(c, chunk)| self.numbered_chunk(c, chunk, wanted)).collect()
        } else {
            slots
                .into_par_iter()
                .enumerate()
                .map(|(c, chunk)| self.numbered_chunk(c, chunk, wanted))
                .collect()
        };
        let ran = ran.ok()?;
        let partials: Vec<Vec<ScalarValue>> = (0..wanted.len())
            .map(|k| {
                ran.iter()
                    .filter_map(|chunk| match chunk.get(k) {
                        Some(Slot::Partial(p)) => *p,
                        _ => None,
                    })
                    .collect()
            })
            .collect();
        drop(ran);
        let mut values = Vec::with_capacity(wanted.len());
        for ((v, output), partials) in wanted.iter().zip(outputs).zip(partials) {
            match output {
                Some(buffer) => values.push(FlatValue::vector(buffer)),
                None => {
                    let op = reductions.get(v)?;
                    let ty = partials.first().map_or(f.ty(*v).elem, |p| p.ty());
                    if partials.iter().any(|p| p.ty() != ty) {
                        return None;
                    }
                    let partials = FlatValue::vector(Buffer::from_scalars(ty, &partials));
                    values.push(kernels::reduce(*op, &partials).ok()?);
                }
            }
        }
        Some(values)
    }

    /// Runs chunk number `c`, whose slots are `slots`, and gives them back filled.
    fn numbered_chunk<'s>(
        &self,
        c: usize,
        mut slots: Vec<Slot<'s>>,
        wanted: &[VarId],
    ) -> KResult<Vec<Slot<'s>>> {
        let range = c * self.chunk..((c + 1) * self.chunk).min(self.n);
        self.chunk(range, wanted, &mut slots)?;
        Ok(slots)
    }

    /// The operands of an element-wise op, each input's chunk a window of it read in place
    /// (`kernels::Window`): `None` for other ops, and where an operand is a progression, which
    /// the op-at-a-time path computes.
    fn windows<'a>(
        &'a self,
        op: &Op,
        local: &'a HashMap<VarId, FlatValue>,
        range: &std::ops::Range<usize>,
    ) -> Option<Vec<kernels::Window<'a>>> {
        if !kernels::takes_windows(op) {
            return None;
        }
        op.operands()
            .iter()
            .map(|v| {
                let window = match (local.get(v), self.sliced.get(v)) {
                    (Some(value), _) => kernels::Window { value, range: None },
                    (None, Some(value)) => kernels::Window { value, range: Some(range.clone()) },
                    (None, None) => kernels::Window { value: self.whole.get(v)?, range: None },
                };
                (!matches!(window.value, FlatValue::Progression(_))).then_some(window)
            })
            .collect()
    }

    /// Runs the members on `range` of the index space and writes the chunk's part of each of
    /// `wanted` into its slot.
    fn chunk(&self, range: std::ops::Range<usize>, wanted: &[VarId], slots: &mut [Slot<'_>]) -> KResult<()> {
        let mut local: HashMap<VarId, FlatValue> = HashMap::with_capacity(self.members.len() * 2);
        let len = range.len();
        for &(op, dest) in &self.members {
            let value = match op {
                Op::Iota { .. } => Some(FlatValue::i32s(range.clone().map(|i| i as i32).collect())),
                _ if let Some(result) = self
                    .windows(op, &local, &range)
                    .and_then(|windows| kernels::element_wise(op, &windows)) =>
                {
                    Some(result?)
                }
                _ => {
                    let mut args = Vec::with_capacity(4);
                    for (k, &v) in op.operands().iter().enumerate() {
                        let gathered = op.reads_whole(k);
                        let value = match (local.get(&v), self.sliced.get(&v)) {
                            (Some(value), _) if !gathered => value.clone(),
                            (None, Some(vector)) if !gathered => {
                                let value = slice(vector, range.clone())?;
                                local.insert(v, value.clone());
                                value
                            }
                            _ => match (op, self.whole.get(&v)) {
                                // The chunk's share of a replicate's length.
                                (Op::Replicate { .. }, _) if k == 1 => {
                                    FlatValue::Scalar(ScalarValue::I32(len as i32))
                                }
                                (_, Some(value)) => value.clone(),
                                (_, None) => {
                                    return kernels::internal(format!("operand %{v} of a fused kernel"));
                                }
                            },
                        };
                        args.push(value);
                    }
                    // A gather from a progression (a regular sequence's offsets) computes it.
                    match progression::run_op(op, &args) {
                        Some(result) => result?.map(FlatValue::materialized),
                        None => {
                            let args: Vec<FlatValue> =
                                args.into_iter().map(FlatValue::materialized).collect();
                            match op {
                                // A chunk of a long reduction, folded in lanes as the op's
                                // own parallel reduction folds each of its (larger) chunks.
                                Op::Reduce { op: reduce_op, .. } if self.chunk < self.n => {
                                    Some(kernels::reduce_chunk(*reduce_op, &args[0])?)
                                }
                                _ => kernels::run_op(op, &args)?,
                            }
                        }
                    }
                }
            };
            if let (Some(d), Some(value)) = (dest, value) {
                local.insert(d, value);
            }
        }
        for (&v, slot) in wanted.iter().zip(slots.iter_mut()) {
            match local.get(&v) {
                Some(value) => slot.fill(value)?,
                None => return kernels::internal(format!("output %{v} of a fused kernel")),
            }
        }
        Ok(())
    }
}

/// Whether each of `ops`, run one at a time, would give a progression or a scalar in constant
/// time (`progression::run_op`): a kernel that only builds segment descriptors of regular
/// sequences, which the strided layout never writes out.
fn all_strided(ops: &[(&Op, Option<VarId>)], frame: &Frame<FlatValue>) -> bool {
    let mut local: HashMap<VarId, FlatValue> = HashMap::new();
    for &(op, dest) in ops {
        let operand = |v: &VarId| local.get(v).cloned().or_else(|| frame.get(*v as usize).cloned().flatten());
        let Some(args) = op.operands().iter().map(operand).collect::<Option<Vec<_>>>() else {
            return false;
        };
        match (progression::run_op(op, &args), dest) {
            (Some(Ok(Some(value @ (FlatValue::Progression(_) | FlatValue::Scalar(_))))), Some(d)) => {
                local.insert(d, value);
            }
            (Some(Ok(None)), None) => {}
            _ => return false,
        }
    }
    true
}

/// Whether `op` (a member of a fused kernel) computes a chunk of its result from the same chunk
/// of its operands: element-wise ops and checks, `iota`, `replicate`, gathers through a vector
/// of indexes, and reductions (whose partials combine).
fn chunkable(f: &Function, op: &Op) -> bool {
    let vector = |v: &VarId| f.ty(*v).is_vector();
    match op {
        _ if op.is_element_wise() => true,
        Op::Iota { .. } | Op::Replicate { .. } => !op.operands().iter().any(vector),
        Op::Gather { index, .. } | Op::GatherEither { index, .. } => vector(index),
        Op::Check(check) => !matches!(check, Check::Permutation { .. } | Check::PartitionLengths { .. }),
        Op::Reduce { src, .. } => vector(src),
        _ => false,
    }
}

/// A vector of `n` zeros of type `ty`.
fn zeroed(ty: Scalar, n: usize) -> Buffer {
    each_scalar_type!(ty, T, T::wrap(vec![<T as Elem>::zero(); n]))
}

/// Elements `range` of a vector (a progression's, computed).
fn slice(vector: &FlatValue, range: std::ops::Range<usize>) -> KResult<FlatValue> {
    Ok(match vector {
        FlatValue::Vector(buffer) => FlatValue::vector(match &**buffer {
            Buffer::Bool(xs) => Buffer::Bool(xs[range].to_vec()),
            Buffer::I32(xs) => Buffer::I32(xs[range].to_vec()),
            Buffer::I64(xs) => Buffer::I64(xs[range].to_vec()),
            Buffer::F32(xs) => Buffer::F32(xs[range].to_vec()),
            Buffer::F64(xs) => Buffer::F64(xs[range].to_vec()),
        }),
        FlatValue::Progression(p) => FlatValue::i32s(range.map(|i| p.get(i)).collect()),
        FlatValue::Scalar(_) => return kernels::internal("a scalar sliced as a vector"),
    })
}

/// Where a chunk writes its part of one output.
enum Slot<'a> {
    Bool(&'a mut [bool]),
    I32(&'a mut [i32]),
    I64(&'a mut [i64]),
    F32(&'a mut [f32]),
    F64(&'a mut [f64]),
    /// A reduction's partial result.
    Partial(Option<ScalarValue>),
}

/// `buffer` cut into one slot per chunk of `chunk` elements.
fn slices(buffer: &mut Buffer, chunk: usize) -> Vec<Slot<'_>> {
    match buffer {
        Buffer::Bool(xs) => xs.chunks_mut(chunk).map(Slot::Bool).collect(),
        Buffer::I32(xs) => xs.chunks_mut(chunk).map(Slot::I32).collect(),
        Buffer::I64(xs) => xs.chunks_mut(chunk).map(Slot::I64).collect(),
        Buffer::F32(xs) => xs.chunks_mut(chunk).map(Slot::F32).collect(),
        Buffer::F64(xs) => xs.chunks_mut(chunk).map(Slot::F64).collect(),
    }
}

impl Slot<'_> {
    fn fill(&mut self, value: &FlatValue) -> KResult<()> {
        match (self, value) {
            (Slot::Partial(p), FlatValue::Scalar(s)) => *p = Some(*s),
            (slot, FlatValue::Vector(buffer)) => match (slot, &**buffer) {
                (Slot::Bool(out), Buffer::Bool(xs)) if out.len() == xs.len() => out.copy_from_slice(xs),
                (Slot::I32(out), Buffer::I32(xs)) if out.len() == xs.len() => out.copy_from_slice(xs),
                (Slot::I64(out), Buffer::I64(xs)) if out.len() == xs.len() => out.copy_from_slice(xs),
                (Slot::F32(out), Buffer::F32(xs)) if out.len() == xs.len() => out.copy_from_slice(xs),
                (Slot::F64(out), Buffer::F64(xs)) if out.len() == xs.len() => out.copy_from_slice(xs),
                _ => return kernels::internal("a fused kernel's output of another type or length"),
            },
            _ => return kernels::internal("a fused kernel's output of another kind"),
        }
        Ok(())
    }
}
