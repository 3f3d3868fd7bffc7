//! The CPU executor: runs the segmented IR with rayon, in parallel over elements and segments.
//!
//! Host control flow (`If`, `While`, `Call`, `Print`) runs here, one statement at a time, on
//! frames of variables (one `Vec<Option<Value>>` slot per `VarId` per call). Every `Op` is one
//! flat operation over all its elements (`kernels`), parallel above a threshold, so the host
//! never loops over elements; `Counters` record what ran, which lets tests prove it.
//!
//! Memory is freed early: a variable defined in a block is dropped right after the statement
//! that reads it last (a read inside a nested block counts as a read by the statement that
//! holds the block; the block's `results` are read at its end), and every variable a block
//! defined is dropped when the block finishes. Results and errors are exactly the reference
//! interpreter's (`crate::interp`): same values, same printed text, same codes and messages, at
//! the failing statement's span.

pub mod convert;
mod element_loop;
pub mod kernels;
pub mod progression;
pub mod value;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use rowan::TextRange;

use crate::diagnostics::{Code, Diagnostic};
use crate::interp::Host;
use crate::interp::ops::Fail;
use crate::ir::{Block, FuncId, Function, Op, PrintItem, Program, Stmt, StmtKind, VarId};
use crate::types::Type;

pub use self::convert::{try_vars_to_value, value_to_vars, vars_to_value};
pub use self::value::{Buffer, ScalarValue, Value};

/// How deep IR calls may nest before the run stops with E0409, as in the interpreter.
pub const MAX_CALL_DEPTH: usize = 10_000;

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Every `Op` statement executed (checks and constants included).
    pub ops_run: u64,
    /// The ops among them that read or produced a vector.
    pub vector_ops: u64,
    /// Elements processed by vector ops: per op, the length of its longest vector operand or
    /// result.
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

/// Runs `program.main`.
pub fn run(program: &Program, host: &mut dyn Host, counters: &mut Counters) -> Result<(), Diagnostic> {
    call(program, program.main, Vec::new(), host, counters).map(|_| ())
}

/// Calls function `func` of `program` with `args` (laid out as its parameters are) and gives
/// its results.
pub fn call(
    program: &Program,
    func: FuncId,
    args: Vec<Value>,
    host: &mut dyn Host,
    counters: &mut Counters,
) -> Result<Vec<Value>, Diagnostic> {
    call_with(program, func, args, host, counters, Layout::default())
}

/// `call`, storing regular sequences' descriptors as `layout` says.
pub fn call_with(
    program: &Program,
    func: FuncId,
    args: Vec<Value>,
    host: &mut dyn Host,
    counters: &mut Counters,
    layout: Layout,
) -> Result<Vec<Value>, Diagnostic> {
    let strided = layout == Layout::Strided;
    let mut exec =
        Exec { program, host, counters, liveness: HashMap::new(), loads: HashMap::new(), depth: 0, strided };
    exec.call_function(func, args, TextRange::default())
}

/// Which variables to drop after each statement of a block, and which it defines.
#[derive(Debug, Default)]
struct Liveness {
    free_after: Vec<Vec<VarId>>,
    defined: Vec<VarId>,
}

impl Liveness {
    fn of(block: &Block) -> Liveness {
        let n = block.stmts.len();
        let mut last_def: HashMap<VarId, usize> = HashMap::new();
        let mut last_read: HashMap<VarId, usize> = HashMap::new();
        let mut defined = Vec::new();
        for (i, stmt) in block.stmts.iter().enumerate() {
            let mut reads = Vec::new();
            stmt.reads(&mut reads);
            for r in reads {
                last_read.insert(r, i);
            }
            for d in stmt_dests(stmt) {
                if last_def.insert(d, i).is_none() {
                    defined.push(d);
                }
            }
        }
        for &r in &block.results {
            last_read.insert(r, usize::MAX);
        }
        let mut free_after = vec![Vec::new(); n];
        for &d in &defined {
            let def = last_def.get(&d).copied().unwrap_or(0);
            let at = match last_read.get(&d) {
                Some(&usize::MAX) => continue,
                Some(&r) => r.max(def),
                None => def,
            };
            if let Some(slot) = free_after.get_mut(at) {
                slot.push(d);
            }
        }
        Liveness { free_after, defined }
    }
}

fn stmt_dests(stmt: &Stmt) -> Vec<VarId> {
    match &stmt.kind {
        StmtKind::Op { dest, .. } => dest.iter().copied().collect(),
        StmtKind::If { dests, .. }
        | StmtKind::While { dests, .. }
        | StmtKind::ElementLoop { dests, .. }
        | StmtKind::Call { dests, .. } => dests.clone(),
        StmtKind::Print { .. } => Vec::new(),
    }
}

type Frame = Vec<Option<Value>>;
type R<T> = Result<T, Diagnostic>;

fn at(fail: Fail, span: TextRange) -> Diagnostic {
    Diagnostic::new(fail.code, span, fail.message)
}

fn internal_at(what: impl std::fmt::Display, span: TextRange) -> Diagnostic {
    at(kernels::internal::<()>(what).unwrap_err(), span)
}

struct Exec<'p, 'h> {
    program: &'p Program,
    host: &'h mut dyn Host,
    counters: &'h mut Counters,
    /// Per block (by address; the program outlives the run), its liveness.
    liveness: HashMap<*const Block, Rc<Liveness>>,
    /// Files loaded in this run, as the variables of their whole type.
    loads: HashMap<(String, bool, Type), Vec<Value>>,
    depth: usize,
    strided: bool,
}

impl<'p> Exec<'p, '_> {
    fn call_function(&mut self, func: FuncId, args: Vec<Value>, span: TextRange) -> R<Vec<Value>> {
        let program = self.program;
        let Some(f) = program.functions.get(func as usize) else {
            return Err(internal_at(format!("a call of missing function {func}"), span));
        };
        if args.len() != f.params.len() {
            return Err(internal_at(
                format!(
                    "`{}` called with {} arguments for {} parameters",
                    f.name,
                    args.len(),
                    f.params.len()
                ),
                span,
            ));
        }
        if self.depth >= MAX_CALL_DEPTH {
            return Err(Diagnostic::new(
                Code::ResourceExhausted,
                span,
                format!("recursion too deep: more than {MAX_CALL_DEPTH} nested calls"),
            ));
        }
        let mut frame: Frame = vec![None; f.vars.len()];
        for (&p, a) in f.params.iter().zip(args) {
            match frame.get_mut(p as usize) {
                Some(slot) => *slot = Some(a),
                None => return Err(internal_at(format!("parameter %{p} does not exist"), span)),
            }
        }
        self.depth += 1;
        self.counters.max_call_depth = self.counters.max_call_depth.max(self.depth as u64);
        let result = crate::ensure_stack(|| self.run_block(f, &mut frame, &f.body));
        self.depth -= 1;
        result
    }

    fn liveness(&mut self, block: &Block) -> Rc<Liveness> {
        self.liveness.entry(block as *const Block).or_insert_with(|| Rc::new(Liveness::of(block))).clone()
    }

    /// Runs a block and gives its results; every variable it defined is dropped by the end.
    fn run_block(&mut self, f: &'p Function, frame: &mut Frame, block: &'p Block) -> R<Vec<Value>> {
        let live = self.liveness(block);
        for (i, stmt) in block.stmts.iter().enumerate() {
            self.stmt(f, frame, stmt)?;
            if let Some(dead) = live.free_after.get(i) {
                for &v in dead {
                    if let Some(slot) = frame.get_mut(v as usize) {
                        *slot = None;
                    }
                }
            }
        }
        let span = block.stmts.last().map_or_else(TextRange::default, |s| s.span);
        let results = block.results.iter().map(|&r| get(frame, r, span)).collect::<R<Vec<_>>>()?;
        for &v in &live.defined {
            if let Some(slot) = frame.get_mut(v as usize) {
                *slot = None;
            }
        }
        Ok(results)
    }

    fn stmt(&mut self, f: &'p Function, frame: &mut Frame, stmt: &'p Stmt) -> R<()> {
        let span = stmt.span;
        match &stmt.kind {
            StmtKind::Op { dest, op } => {
                let mut args =
                    op.operands().iter().map(|&v| get_raw(frame, v, span)).collect::<R<Vec<_>>>()?;
                let strided = if self.strided { progression::run_op(op, &args) } else { None };
                if strided.is_some() {
                    self.counters.strided_ops += 1;
                }
                let result = match (op, strided) {
                    (_, Some(result)) => result,
                    (Op::Load { path, csv, ty, field }, None) => self.load(path, *csv, ty, *field).map(Some),
                    (_, None) => {
                        // Written out once, in place, so that later reads share the vector.
                        for (&var, arg) in op.operands().iter().zip(args.iter_mut()) {
                            if let Value::Progression(p) = arg {
                                *arg = p.materialize();
                                set(frame, var, arg.clone(), span)?;
                            }
                        }
                        kernels::run_op(op, &args)
                    }
                };
                self.count(op, &args, result.as_ref().ok().and_then(Option::as_ref));
                match (dest, result.map_err(|e| at(e, span))?) {
                    (Some(d), Some(v)) => set(frame, *d, v, span)?,
                    (None, None) => {}
                    _ => return Err(internal_at(format!("{} with a wrong destination", op.name()), span)),
                }
            }
            StmtKind::If { cond, then, otherwise, dests } => {
                let c = match get(frame, *cond, span)? {
                    Value::Scalar(ScalarValue::Bool(b)) => b,
                    _ => return Err(internal_at("an `if` condition that is not a scalar bool", span)),
                };
                let results = self.run_block(f, frame, if c { then } else { otherwise })?;
                assign(frame, dests, results, span)?;
            }
            StmtKind::While { state, init, cond, body, dests } => {
                let mut current = init.iter().map(|&v| get(frame, v, span)).collect::<R<Vec<_>>>()?;
                loop {
                    assign(frame, state, current.clone(), span)?;
                    let c = self.run_block(f, frame, cond)?;
                    match c.as_slice() {
                        [Value::Scalar(ScalarValue::Bool(true))] => {}
                        [Value::Scalar(ScalarValue::Bool(false))] => break,
                        _ => return Err(internal_at("a loop condition that is not a scalar bool", span)),
                    }
                    self.counters.host_loop_iterations += 1;
                    current = self.run_block(f, frame, body)?;
                }
                assign(frame, dests, current, span)?;
            }
            StmtKind::ElementLoop { len, inputs, shared, params, init, state, cond, body, dests } => {
                let n = match get(frame, *len, span)? {
                    Value::Scalar(ScalarValue::I32(n)) => usize::try_from(n).unwrap_or(0),
                    _ => return Err(internal_at("an element loop's length is not a scalar i32", span)),
                };
                let inputs = inputs.iter().map(|&v| get(frame, v, span)).collect::<R<Vec<_>>>()?;
                let init = init.iter().map(|&v| get(frame, v, span)).collect::<R<Vec<_>>>()?;
                let shared = shared.iter().map(|&v| Ok((v, get(frame, v, span)?))).collect::<R<Vec<_>>>()?;
                let looped =
                    element_loop::Loop { params, state, shared: &shared, cond, body, vars: f.vars.len() };
                let (results, iterations) = looped.run(n, &inputs, &init)?;
                self.counters.element_loop_iterations += iterations;
                self.counters.ops_run += 1;
                assign(frame, dests, results, span)?;
            }
            StmtKind::Call { func, args, dests } => {
                let values = args.iter().map(|&v| get(frame, v, span)).collect::<R<Vec<_>>>()?;
                self.counters.calls += 1;
                let results = self.call_function(*func, values, span)?;
                assign(frame, dests, results, span)?;
            }
            StmtKind::Print { items } => {
                let mut line = String::new();
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        line.push(' ');
                    }
                    match item {
                        PrintItem::Text(text) => line.push_str(text),
                        PrintItem::Value { ty, vars } => {
                            let values = vars.iter().map(|&v| get(frame, v, span)).collect::<R<Vec<_>>>()?;
                            let value = try_vars_to_value(ty, &values)
                                .map_err(|e| internal_at(format!("a printed value: {e}"), span))?;
                            crate::interp::print::write_value(&mut line, &value);
                        }
                    }
                }
                line.push('\n');
                self.host.print(&line);
            }
        }
        Ok(())
    }

    fn count(&mut self, op: &Op, args: &[Value], result: Option<&Value>) {
        let c = &mut *self.counters;
        c.ops_run += 1;
        let lens = args.iter().chain(result).filter_map(Value::vector_len);
        let elements = lens.clone().max().unwrap_or(0) as u64;
        let vector = lens.count() > 0;
        if vector {
            c.vector_ops += 1;
            c.elements += elements;
        }
        let entry = c.per_op.entry(op.name()).or_insert((0, 0));
        entry.0 += 1;
        entry.1 += elements;
    }

    /// Field `field` of the layout of a loaded file, read and parsed once per run.
    fn load(&mut self, path: &str, csv: bool, ty: &Type, field: usize) -> Result<Value, Fail> {
        let key = (path.to_string(), csv, ty.clone());
        if !self.loads.contains_key(&key) {
            let bytes = self.host.read_file(path).map_err(|e| Fail {
                code: Code::DataLoadError,
                message: format!("cannot read `{path}`: {e}"),
            })?;
            let value = if csv {
                crate::interp::data::parse_csv(path, &bytes, ty)?
            } else {
                crate::interp::data::parse_npy(path, &bytes, ty)?
            };
            self.loads.insert(key.clone(), value_to_vars(ty, &value));
        }
        match self.loads.get(&key).and_then(|vars| vars.get(field)) {
            Some(v) => Ok(v.clone()),
            None => kernels::internal(format!("field {field} of a loaded {ty}")),
        }
    }
}

/// A variable's value, a progression written out (`get_raw` keeps it).
fn get(frame: &Frame, var: VarId, span: TextRange) -> R<Value> {
    get_raw(frame, var, span).map(Value::materialized)
}

fn get_raw(frame: &Frame, var: VarId, span: TextRange) -> R<Value> {
    match frame.get(var as usize) {
        Some(Some(v)) => Ok(v.clone()),
        Some(None) => {
            Err(internal_at(format!("%{var} is read before it is defined or after it is freed"), span))
        }
        None => Err(internal_at(format!("variable %{var} does not exist"), span)),
    }
}

fn set(frame: &mut Frame, var: VarId, value: Value, span: TextRange) -> R<()> {
    match frame.get_mut(var as usize) {
        Some(slot) => {
            *slot = Some(value);
            Ok(())
        }
        None => Err(internal_at(format!("variable %{var} does not exist"), span)),
    }
}

fn assign(frame: &mut Frame, vars: &[VarId], values: Vec<Value>, span: TextRange) -> R<()> {
    if vars.len() != values.len() {
        return Err(internal_at(format!("{} values for {} variables", values.len(), vars.len()), span));
    }
    for (&v, x) in vars.iter().zip(values) {
        set(frame, v, x, span)?;
    }
    Ok(())
}
