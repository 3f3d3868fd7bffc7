//! The CPU executor: runs the segmented IR with rayon, in parallel over elements and segments.
//!
//! Host control flow (`If`, `While`, `Call`, `Print`) runs in `host_flow`, shared with the GPU
//! executor. Every `Op` is one flat operation over all its elements (`kernels`), parallel above
//! a threshold, so the host never loops over elements; `Counters` record what ran, which lets
//! tests prove it. Results and errors are exactly the reference interpreter's
//! (`crate::interp`): same values, same printed text, same codes and messages, at the failing
//! statement's span.

pub mod convert;
mod element_loop;
mod fused;
pub mod kernels;
pub mod progression;
pub mod value;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use rowan::TextRange;

use crate::Interrupt;
use crate::host_flow::{Frame, Machine, RunResult, Walker, get, handed_over, internal_at, set, take};
use crate::interp::Host;
use crate::interp::ops::Fail;
use weft_core::types::{Scalar, Type};
use weft_flat::ir::{FuncId, Function, Op, Program, Stmt, StmtKind, VarId};
use weft_syntax::diagnostics::{Code, Diagnostic};

pub use self::convert::{try_vars_to_value, value_to_vars, vars_to_value};
pub use self::value::{Buffer, FlatValue, ScalarValue};

pub use crate::host_flow::MAX_CALL_DEPTH;

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Every `Op` statement executed (checks and constants included).
    pub ops_run: u64,
    /// The ops among them that read or produced a vector: passes over memory (`length`, which
    /// reads no element, is not one, nor is a gather of one element by a scalar index).
    pub vector_ops: u64,
    /// Elements processed by vector ops: per op, the length of its longest vector operand or
    /// result, a gather's sources aside (it reads one element of them per index). Divided by
    /// the data's size, it counts full passes over the data.
    pub elements: u64,
    /// Iterations of `While` bodies.
    pub host_loop_iterations: u64,
    /// `Call` statements executed.
    pub calls: u64,
    /// Iterations of element loops, added up over their elements.
    pub element_loop_iterations: u64,
    /// The deepest nesting of calls (the entry function is depth 1): for a flattened recursive
    /// function, its number of recursion levels (times the calls per level).
    pub max_call_depth: u64,
    /// Per `Op::name()`: how many ran, and their elements (as `elements` counts them).
    pub per_op: BTreeMap<String, (u64, u64)>,
    /// Ops run on strided (progression) operands or producing them, without writing a
    /// descriptor out (`cpu::progression`).
    pub strided_ops: u64,
    /// Fused kernels run as one chunked pass (`cpu::fused`). Each counts once in `vector_ops`
    /// and `elements` (twice with a scan), its ops in `ops_run`, and under `"kernel"` in
    /// `per_op`.
    pub fused_kernels: u64,
}

/// How the executor stores the segment descriptors of regular sequences.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Layout {
    /// As progressions (a start and a stride), never written out: `cpu::progression`.
    #[default]
    Strided,
    /// As vectors of offsets and lengths, like irregular ones: the baseline the benchmarks
    /// compare against.
    Segmented,
}

/// How fused kernels run: the values are the same either way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Kernels {
    /// As one pass over chunks that stay in cache (`cpu::fused`).
    #[default]
    Chunked,
    /// One full pass per op: the baseline the benchmarks compare against.
    OpByOp,
}

/// How the executor runs a program.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Config {
    pub layout: Layout,
    pub kernels: Kernels,
    /// Calls already open when this one starts (one another executor hands over), counted
    /// against `MAX_CALL_DEPTH`.
    pub call_depth: usize,
}

/// Runs `program.main`.
pub fn run(program: &Program, host: &mut dyn Host, counters: &mut Counters) -> Result<(), Diagnostic> {
    call(program, program.main, Vec::new(), host, counters).map(|_| ())
}

/// Calls function `func` of `program` with `args` (laid out as its parameters are) and gives
/// its results.
pub fn call(
    program: &Program,
    func: FuncId,
    args: Vec<FlatValue>,
    host: &mut dyn Host,
    counters: &mut Counters,
) -> Result<Vec<FlatValue>, Diagnostic> {
    call_with(program, func, args, host, counters, Config::default())
}

/// `call`, configured as `config` says.
pub fn call_with(
    program: &Program,
    func: FuncId,
    args: Vec<FlatValue>,
    host: &mut dyn Host,
    counters: &mut Counters,
    config: Config,
) -> Result<Vec<FlatValue>, Diagnostic> {
    let strided = config.layout == Layout::Strided;
    let chunked = config.kernels == Kernels::Chunked;
    let interrupt = host.interrupt();
    let machine = CpuMachine { counters, loads: LoadedFiles::default(), strided, chunked, interrupt };
    let mut walker = Walker::new(program, host, machine).at_depth(config.call_depth);
    let results = walker.call_function(func, args, TextRange::default())?;
    // Callers see vectors: the strided layout stays inside the executor.
    Ok(results.into_iter().map(FlatValue::materialized).collect())
}

fn at(fail: Fail, span: TextRange) -> Diagnostic {
    Diagnostic::new(fail.code, span, fail.message)
}

/// Runs ops with the kernels of `kernels`, on rayon.
struct CpuMachine<'h> {
    counters: &'h mut Counters,
    /// Files loaded in this run, as the variables of their whole type.
    loads: LoadedFiles,
    strided: bool,
    /// Fused kernels run as chunked passes.
    chunked: bool,
    interrupt: Interrupt,
}

impl Machine for CpuMachine<'_> {
    type Value = FlatValue;

    fn op(
        &mut self,
        host: &mut dyn Host,
        op: &Op,
        _dest: Option<Scalar>,
        frame: &mut Frame<FlatValue>,
        dying: &[VarId],
        span: TextRange,
    ) -> RunResult<Option<FlatValue>> {
        let operands = op.operands();
        // An operand read here for the last time, and once, is moved out of the frame: where
        // nobody else holds its vector, `concat` and `scatter` then write into it in place.
        let owned = |v: &VarId| handed_over(&operands, dying, *v);
        let mut args = operands
            .iter()
            .map(|v| if owned(v) { take(frame, *v, span) } else { get(frame, *v, span) })
            .collect::<RunResult<Vec<_>>>()?;
        let strided = if self.strided { progression::run_op(op, &args) } else { None };
        if strided.is_some() {
            self.counters.strided_ops += 1;
        }
        let operand_lens: Vec<usize> =
            Counters::passed_operands(op, args.iter().map(FlatValue::vector_len)).collect();
        // What an op that wrote into an operand in place wrote: all it passed over.
        let mut written_in_place = None;
        let result = match (op, strided) {
            (_, Some(result)) => result,
            (Op::Load { path, csv, ty, field }, None) => {
                self.loads.field(host, path, *csv, ty, *field).map(Some)
            }
            (_, None) => {
                // Written out once, in place, so that later reads share the vector.
                for (&var, arg) in operands.iter().zip(args.iter_mut()) {
                    if let FlatValue::Progression(p) = arg {
                        *arg = p.materialize();
                        if !owned(&var) {
                            set(frame, var, arg.clone(), span)?;
                        }
                    }
                }
                match write_in_place(op, &mut args) {
                    Some((result, written)) => {
                        written_in_place = Some(written);
                        result
                    }
                    None => kernels::run_op(op, &args),
                }
            }
        };
        let passed: Vec<usize> = match written_in_place {
            Some(written) => vec![written],
            None => {
                let result_len =
                    result.as_ref().ok().and_then(Option::as_ref).and_then(FlatValue::vector_len);
                operand_lens.into_iter().chain(result_len).collect()
            }
        };
        self.counters.record_op(op, passed.into_iter());
        result.map_err(|e| at(e, span))
    }

    fn element_loop(
        &mut self,
        f: &Function,
        stmt: &Stmt,
        frame: &mut Frame<FlatValue>,
    ) -> RunResult<Vec<FlatValue>> {
        let (results, iterations) = element_loop_stmt(stmt, f.vars.len(), frame, &self.interrupt)?;
        self.counters.element_loop_iterations += iterations;
        Ok(results)
    }

    fn truth(&mut self, value: &FlatValue, span: TextRange) -> RunResult<bool> {
        match value {
            FlatValue::Scalar(ScalarValue::Bool(b)) => Ok(*b),
            _ => Err(internal_at("a condition that is not a scalar bool", span)),
        }
    }

    fn to_host(&mut self, values: Vec<FlatValue>, _span: TextRange) -> RunResult<Vec<FlatValue>> {
        Ok(values.into_iter().map(FlatValue::materialized).collect())
    }

    fn counters(&mut self) -> &mut Counters {
        self.counters
    }

    fn kernel(&mut self, f: &Function, stmt: &Stmt, frame: &mut Frame<FlatValue>) -> RunResult<bool> {
        let StmtKind::Kernel(kernel) = &stmt.kind else { return Ok(false) };
        if !self.chunked {
            return Ok(false);
        }
        let Some(pass) = fused::run(f, kernel, frame, self.strided, stmt.span)? else {
            return Ok(false);
        };
        let counters = &mut *self.counters;
        let elements = pass.elements as u64 * pass.passes;
        counters.fused_kernels += 1;
        counters.ops_run += kernel.body.len() as u64;
        counters.vector_ops += pass.passes;
        counters.elements += elements;
        let entry = counters.per_op.entry("kernel".to_string()).or_insert((0, 0));
        entry.0 += pass.passes;
        entry.1 += elements;
        Ok(true)
    }
}

/// Runs an `ElementLoop` statement of a function with `vars` variables, its operands in
/// `frame`: its results and the iterations it ran.
pub fn element_loop_stmt(
    stmt: &Stmt,
    vars: usize,
    frame: &Frame<FlatValue>,
    interrupt: &Interrupt,
) -> RunResult<(Vec<FlatValue>, u64)> {
    let span = stmt.span;
    let StmtKind::ElementLoop { len, inputs, shared, params, init, state, cond, body, .. } = &stmt.kind
    else {
        return Err(internal_at("an element loop that is not one", span));
    };
    let value = |v: VarId| get(frame, v, span).map(FlatValue::materialized);
    let n = match value(*len)? {
        FlatValue::Scalar(ScalarValue::I32(n)) => usize::try_from(n).unwrap_or(0),
        _ => return Err(internal_at("an element loop's length is not a scalar i32", span)),
    };
    let inputs = inputs.iter().map(|&v| value(v)).collect::<RunResult<Vec<_>>>()?;
    let init = init.iter().map(|&v| value(v)).collect::<RunResult<Vec<_>>>()?;
    let shared = shared.iter().map(|&v| Ok((v, value(v)?))).collect::<RunResult<Vec<_>>>()?;
    let looped = element_loop::Loop { params, state, shared: &shared, cond, body, vars, interrupt };
    looped.run(n, &inputs, &init)
}

/// Runs one op or element loop statement of a function with `vars` variables, its operands
/// in `frame`, for its error alone: how another executor that saw the statement fail finds
/// the interpreter's exact message. `Ok` if it does not fail here.
pub fn statement_error(stmt: &Stmt, vars: usize, frame: &Frame<FlatValue>) -> RunResult<()> {
    match &stmt.kind {
        StmtKind::Op { op, .. } => {
            let operands = op.operands();
            let args = operands.iter().map(|&v| get(frame, v, stmt.span).map(FlatValue::materialized));
            let args = args.collect::<RunResult<Vec<_>>>()?;
            kernels::run_op(op, &args).map(|_| ()).map_err(|e| at(e, stmt.span))
        }
        StmtKind::ElementLoop { .. } => {
            element_loop_stmt(stmt, vars, frame, &Interrupt::default()).map(|_| ())
        }
        // A fused kernel's ops, in order: the first to fail is the error.
        StmtKind::Kernel(kernel) => {
            let mut local = frame.clone();
            for member in &kernel.body {
                if let StmtKind::Op { dest, op } = &member.kind {
                    let operands = op.operands();
                    let args =
                        operands.iter().map(|&v| get(&local, v, member.span).map(FlatValue::materialized));
                    let args = args.collect::<RunResult<Vec<_>>>()?;
                    let result = kernels::run_op(op, &args).map_err(|e| at(e, member.span))?;
                    if let (Some(d), Some(value)) = (dest, result) {
                        set(&mut local, *d, value, member.span)?;
                    }
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Files loaded in a run, each read and parsed once, as the variables of their whole type.
#[derive(Default)]
pub struct LoadedFiles(HashMap<(String, bool, Type), Vec<FlatValue>>);

impl LoadedFiles {
    /// Field `field` of the layout of a file of type `ty`.
    pub fn field(
        &mut self,
        host: &mut dyn Host,
        path: &str,
        csv: bool,
        ty: &Type,
        field: usize,
    ) -> Result<FlatValue, Fail> {
        let key = (path.to_string(), csv, ty.clone());
        if !self.0.contains_key(&key) {
            let vars = load_file(host, path, csv, ty)?;
            self.0.insert(key.clone(), vars);
        }
        match self.0.get(&key).and_then(|vars| vars.get(field)) {
            Some(v) => Ok(v.clone()),
            None => kernels::internal(format!("field {field} of a loaded {ty}")),
        }
    }
}

/// The variables (`layout`'s order) of a whole file loaded by `load_npy` or `load_csv`.
fn load_file(host: &mut dyn Host, path: &str, csv: bool, ty: &Type) -> Result<Vec<FlatValue>, Fail> {
    let bytes = host
        .read_file(path)
        .map_err(|e| Fail { code: Code::DataLoadError, message: format!("cannot read `{path}`: {e}") })?;
    let value = if csv {
        crate::interp::data::parse_csv(path, &bytes, ty)?
    } else {
        crate::interp::data::parse_npy(path, &bytes, ty)?
    };
    Ok(value_to_vars(ty, &value))
}

/// Runs `concat`, `scatter` or `write_at` by writing into its first operand's own vector,
/// where nobody else holds it (a loop's state handed over at its last read), and gives the
/// result with the number of elements written. A loop that adds a piece each round then writes each element
/// once (amortised) rather than copying all it has so far. `None` leaves the op to the kernels:
/// another op, a shared or non-vector first operand, or parts of another type.
fn write_in_place(op: &Op, args: &mut [FlatValue]) -> Option<(kernels::KResult<Option<FlatValue>>, usize)> {
    let (first, rest) = args.split_first_mut()?;
    let FlatValue::Vector(buffer) = first else { return None };
    let target = Arc::get_mut(buffer)?;
    match (op, rest) {
        (Op::Concat(_), rest) => {
            let ty = target.ty();
            if rest.iter().any(|part| part.ty() != ty) {
                return None;
            }
            let had = target.len();
            for part in rest.iter() {
                let appended = match part {
                    FlatValue::Vector(b) => target.extend_from(b),
                    FlatValue::Scalar(s) => target.extend_from(&Buffer::from_scalars(ty, &[*s])),
                    FlatValue::Progression(p) => target.extend_from(p.materialize().as_buffer()?),
                };
                debug_assert!(appended, "parts of one type append");
            }
            let written = target.len() - had;
            Some((Ok(Some(first.clone())), written))
        }
        (Op::Scatter { .. }, [index, src]) => {
            let written = index.vector_len().unwrap_or(0);
            let dst = std::mem::replace(first, FlatValue::Scalar(ScalarValue::I32(0)));
            Some((kernels::scatter_into(dst, index, src).map(Some), written))
        }
        (Op::WriteAt { .. }, [at, src]) => {
            let written = src.vector_len().unwrap_or(0);
            let dst = std::mem::replace(first, FlatValue::Scalar(ScalarValue::I32(0)));
            Some((kernels::write_at_into(dst, at, src).map(Some), written))
        }
        _ => None,
    }
}

impl Counters {
    /// The lengths of the vector operands an op passes over, from each operand's length (`None`
    /// for a scalar), in order. A gather reads one element of its sources per index, wherever
    /// they lie, so its pass is over its indexes and result, as a fused kernel's is over its
    /// index space.
    pub fn passed_operands(
        op: &Op,
        operand_lens: impl Iterator<Item = Option<usize>>,
    ) -> impl Iterator<Item = usize> {
        operand_lens.enumerate().filter(|&(k, _)| !op.reads_whole(k)).filter_map(|(_, len)| len)
    }

    /// One op run, given the lengths of its vector operands and result (none for an op on
    /// scalars alone).
    pub fn record_op(&mut self, op: &Op, vector_lens: impl Iterator<Item = usize>) {
        self.ops_run += 1;
        let (count, longest) = vector_lens.fold((0, 0), |(n, m), len| (n + 1, m.max(len)));
        // A length reads no element: it is no pass over its vector.
        let passes = count > 0 && !matches!(op, Op::Length(_));
        let elements = if passes { longest as u64 } else { 0 };
        if passes {
            self.vector_ops += 1;
            self.elements += elements;
        }
        let entry = self.per_op.entry(op.name()).or_insert((0, 0));
        entry.0 += 1;
        entry.1 += elements;
    }
}
