//! The reference interpreter: a tree-walker over the typed core (`weft_core`).
//!
//! It is the oracle for every executor. The CPU and GPU executors must print what it prints
//! and stop with the code and span it stops with, so it implements docs/language.md literally
//! and simply: sequential left-to-right evaluation, wrapping integers, Python's `repr` for
//! output (`print`), and a `Diagnostic` at the offending expression for every run-time error
//! (E0400–E0409). It never panics on a program's values and does no IO itself: printing and
//! file reads go through the front end's `Host`.
//!
//! Environments are one value stack: a call pushes a frame of `Function::vars.len()` slots,
//! indexed by `VarId`. Values are cheap to clone (`value`), so reading a variable never copies
//! a sequence.

pub mod data;
pub mod ops;
mod prelude;
pub mod print;
pub mod value;

#[cfg(test)]
mod tests;

use rowan::TextRange;

use weft_core::{Callee, Expr, ExprId, FuncId, Function, Literal, Pattern, PrintArg, Program, Sink};

use crate::chart::Chart;
use weft_syntax::diagnostics::{Code, Diagnostic};

use self::ops::Fail;
pub use self::value::{NestedValue, Seq};

/// What the interpreter needs from the outside world. The front end implements it: `weft run`
/// writes to stdout and reads files, the tests collect output in a string.
pub trait Host {
    /// One line printed by `print`: its values separated by spaces, ending in `"\n"`.
    fn print(&mut self, line: &str);
    /// A chart drawn by `plot`, `hist` or `image`.
    fn draw(&mut self, chart: crate::chart::Chart);
    /// The bytes of a file, for `load_npy` and `load_csv`; `path` is as written in the program.
    fn read_file(&mut self, path: &str) -> std::io::Result<Vec<u8>>;
    /// The flag that stops the run (E0410); by default one nobody can set.
    fn interrupt(&self) -> crate::Interrupt {
        crate::Interrupt::default()
    }
}

/// How deep a program may recurse before it stops with E0409 (`resource-exhausted`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Nested calls of Weft functions (prelude calls of a function argument included).
    pub max_call_depth: usize,
    /// Bytes of the native stack the evaluator may use below where `run` was called. The
    /// evaluator recurses on nested expressions as well as calls, so this bounds both.
    pub stack_bytes: usize,
}

impl Limits {
    /// The limits for the thread `run_with_big_stack` starts.
    pub const BIG_STACK: Limits =
        Limits { max_call_depth: 10_000, stack_bytes: BIG_STACK_BYTES - (16 << 20) };
}

/// Fits any thread with Rust's default 2 MiB stack (test threads, spawned threads).
impl Default for Limits {
    fn default() -> Limits {
        Limits { max_call_depth: 10_000, stack_bytes: 1 << 20 }
    }
}

/// The stack size of the thread `run_with_big_stack` starts: room for 10,000 nested calls in
/// a debug build. The memory is reserved, not committed, until used.
pub const BIG_STACK_BYTES: usize = 256 << 20;

/// Runs `program.main` on the current thread with `Limits::default()`. Deep recursion stops
/// with E0409 after about a megabyte of native stack; front ends should prefer
/// `run_with_big_stack`.
pub fn run(program: &Program, host: &mut dyn Host) -> Result<(), Diagnostic> {
    run_with_limits(program, host, Limits::default())
}

/// Runs `program.main` on the current thread, which must have `limits.stack_bytes` of stack
/// left (plus a margin of a few hundred kilobytes).
pub fn run_with_limits(program: &Program, host: &mut dyn Host, limits: Limits) -> Result<(), Diagnostic> {
    evaluate(program, Entry::Main(Vec::new()), host, limits).map(|_| ())
}

/// Runs `program.main` on a new thread with a `BIG_STACK_BYTES` stack, so that recursion stops
/// at `Limits::BIG_STACK.max_call_depth` nested calls with E0409 rather than overflowing.
pub fn run_with_big_stack(program: &Program, host: &mut (dyn Host + Send)) -> Result<(), Diagnostic> {
    on_big_stack(program, Entry::Main(Vec::new()), host).map(|_| ())
}

/// Runs `program.main` with `args` for its parameters (a session's statement takes earlier
/// cells' values so), on a big stack, and gives what it returns.
pub fn run_main(
    program: &Program,
    args: Vec<NestedValue>,
    host: &mut (dyn Host + Send),
) -> Result<NestedValue, Diagnostic> {
    on_big_stack(program, Entry::Main(args), host)
}

/// Where a run starts: main (with its parameters' values), or a function called with arguments.
enum Entry {
    Main(Vec<NestedValue>),
    Function(FuncId, Vec<NestedValue>),
}

/// Calls function `func` of `program` with `args`, on a thread with a `BIG_STACK_BYTES`
/// stack, and gives its result: how a session runs an entry function.
pub fn call(
    program: &Program,
    func: FuncId,
    args: Vec<NestedValue>,
    host: &mut (dyn Host + Send),
) -> Result<NestedValue, Diagnostic> {
    on_big_stack(program, Entry::Function(func, args), host)
}

fn on_big_stack(
    program: &Program,
    call: Entry,
    host: &mut (dyn Host + Send),
) -> Result<NestedValue, Diagnostic> {
    std::thread::scope(|scope| {
        let thread = std::thread::Builder::new()
            .name("weft-interp".to_string())
            .stack_size(BIG_STACK_BYTES)
            .spawn_scoped(scope, move || evaluate(program, call, host, Limits::BIG_STACK));
        match thread {
            Ok(handle) => handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Err(err) => Err(Diagnostic::new(
                Code::ResourceExhausted,
                program.main.spans.get(program.main.body as usize).copied().unwrap_or_default(),
                format!("cannot start the interpreter thread: {err}"),
            )),
        }
    })
}

/// Evaluates `program.main`, or calls a function with arguments, on the current thread.
fn evaluate(
    program: &Program,
    call: Entry,
    host: &mut dyn Host,
    limits: Limits,
) -> Result<NestedValue, Diagnostic> {
    let marker = 0u8;
    let interrupt = host.interrupt();
    let mut interp = Interp {
        program,
        host,
        stack: Vec::with_capacity(256),
        depth: 0,
        limits,
        stack_base: std::ptr::addr_of!(marker) as usize,
        unit: NestedValue::unit(),
        interrupt,
    };
    let main = &program.main;
    let result = match call {
        Entry::Main(args) => {
            interp.stack.resize(main.vars.len(), NestedValue::Bool(false));
            for (&param, arg) in main.params.iter().zip(args) {
                interp.stack[param as usize] = arg;
            }
            interp.eval(Frame { func: main, base: 0 }, main.body)
        }
        Entry::Function(func, args) => {
            let span = program.functions.get(func as usize).map(|f| f.span(f.body)).unwrap_or_default();
            interp.stack.extend(args);
            interp.invoke(func, 0, span)
        }
    };
    result.map_err(|d| *d)
}

type EvalResult<T> = Result<T, Box<Diagnostic>>;

/// The function being evaluated and where its variables start on the value stack.
#[derive(Clone, Copy)]
struct Frame<'p> {
    func: &'p Function,
    base: usize,
}

struct Interp<'p, 'h> {
    program: &'p Program,
    host: &'h mut dyn Host,
    /// Every live frame's variables, innermost last.
    stack: Vec<NestedValue>,
    /// Nested calls now running.
    depth: usize,
    limits: Limits,
    /// The native stack address where the run started.
    stack_base: usize,
    unit: NestedValue,
    /// Polled at every call and loop step.
    interrupt: crate::Interrupt,
}

fn at(fail: Fail, span: TextRange) -> Box<Diagnostic> {
    Box::new(Diagnostic::new(fail.code, span, fail.message))
}

#[cold]
#[inline(never)]
fn too_deep(f: Frame<'_>, id: ExprId) -> Box<Diagnostic> {
    Box::new(Diagnostic::new(
        Code::ResourceExhausted,
        f.func.span(id),
        "the program is nested too deeply for the interpreter's stack (recursion too deep)",
    ))
}

/// A call that cannot be made: recursion too deep (`what == "too deep"`), or ill-typed core.
#[cold]
#[inline(never)]
fn call_error(interp: &mut Interp<'_, '_>, args_base: usize, span: TextRange, what: &str) -> Box<Diagnostic> {
    interp.stack.truncate(args_base);
    if what == "too deep" {
        let message = format!("recursion too deep: more than {} nested calls", interp.limits.max_call_depth);
        return Box::new(Diagnostic::new(Code::ResourceExhausted, span, message));
    }
    at(ops::ill_typed::<()>(what).unwrap_err(), span)
}

/// An error in the core program itself (a compiler bug), reported rather than panicking.
fn ill_typed(frame: Frame<'_>, id: ExprId, what: &str) -> Box<Diagnostic> {
    at(ops::ill_typed::<()>(what).unwrap_err(), frame.func.span(id))
}

impl<'p> Interp<'p, '_> {
    /// Evaluates expression `id` of the frame's function. The common, cheap forms are handled
    /// here and the rest in `eval_other`, which keeps this function's native stack frame, and so
    /// the cost of each level of nesting, small.
    fn eval(&mut self, f: Frame<'p>, mut id: ExprId) -> EvalResult<NestedValue> {
        let marker = 0u8;
        if self.stack_base.abs_diff(std::ptr::addr_of!(marker) as usize) > self.limits.stack_bytes {
            return Err(too_deep(f, id));
        }
        // Tail positions (a `let` body, an `if` branch, the right of `and`/`or`) loop instead of
        // recursing, so a long chain of statements takes no native stack.
        loop {
            match f.func.expr(id) {
                Expr::Literal(lit) => return Ok(literal(*lit)),
                Expr::Var(v) => return Ok(self.stack[f.base + *v as usize].clone()),
                Expr::Unary { op, operand } => {
                    let v = self.eval(f, *operand)?;
                    return ops::unary(*op, &v).map_err(|e| at(e, f.func.span(id)));
                }
                Expr::Binary { op, lhs, rhs } => {
                    let a = self.eval(f, *lhs)?;
                    let b = self.eval(f, *rhs)?;
                    return ops::binary(*op, &a, &b).map_err(|e| at(e, f.func.span(id)));
                }
                Expr::And(a, b) => {
                    if !self.eval_bool(f, *a)? {
                        return Ok(NestedValue::Bool(false));
                    }
                    id = *b;
                }
                Expr::Or(a, b) => {
                    if self.eval_bool(f, *a)? {
                        return Ok(NestedValue::Bool(true));
                    }
                    id = *b;
                }
                Expr::If { cond, then, otherwise } => {
                    id = if self.eval_bool(f, *cond)? { *then } else { *otherwise };
                }
                Expr::Let { pattern, value, body } => {
                    let v = self.eval(f, *value)?;
                    self.bind(f, id, pattern, v)?;
                    id = *body;
                }
                Expr::Call { func, args } => {
                    let args_base = self.stack.len();
                    for &arg in args {
                        let v = self.eval(f, arg)?;
                        self.stack.push(v);
                    }
                    return self.invoke(*func, args_base, f.func.span(id));
                }
                _ => return self.eval_other(f, id),
            }
        }
    }

    #[inline(never)]
    fn eval_other(&mut self, f: Frame<'p>, id: ExprId) -> EvalResult<NestedValue> {
        let span = || f.func.span(id);
        match f.func.expr(id) {
            Expr::Tuple(items) => {
                let mut values = Vec::with_capacity(items.len());
                for &item in items {
                    values.push(self.eval(f, item)?);
                }
                Ok(NestedValue::tuple(values))
            }
            Expr::List(items) => {
                let mut builder = value::SeqBuilder::with_capacity(items.len());
                for &item in items {
                    builder.push(self.eval(f, item)?);
                }
                Ok(NestedValue::Seq(builder.finish()))
            }
            Expr::TupleGet(tuple, i) => match self.eval(f, *tuple)? {
                NestedValue::Tuple(items) => items
                    .get(*i as usize)
                    .cloned()
                    .ok_or_else(|| ill_typed(f, id, "tuple index out of range")),
                _ => Err(ill_typed(f, id, "a tuple index of a non-tuple")),
            },
            Expr::Index { seq, index, .. } => {
                let seq = self.eval(f, *seq)?;
                let index = self.eval(f, *index)?;
                let (NestedValue::Seq(seq), Some(i)) = (&seq, index.as_int()) else {
                    return Err(ill_typed(f, id, "an index of a non-sequence"));
                };
                match resolve_index(i, seq.len()) {
                    Some(i) => Ok(seq.get(i)),
                    None => Err(index_error(i, seq.len(), span())),
                }
            }
            Expr::Slice { seq, start, stop, step } => {
                let seq = self.eval(f, *seq)?;
                let mut part = |p: &Option<ExprId>| -> EvalResult<Option<i64>> {
                    match p {
                        None => Ok(None),
                        Some(p) => match self.eval(f, *p)?.as_int() {
                            Some(i) => Ok(Some(i)),
                            None => Err(ill_typed(f, id, "a non-integer slice bound")),
                        },
                    }
                };
                let (start, stop, step) = (part(start)?, part(stop)?, part(step)?);
                let NestedValue::Seq(seq) = seq else {
                    return Err(ill_typed(f, id, "a slice of a non-sequence"));
                };
                prelude::slice(&seq, start, stop, step).map(NestedValue::Seq).map_err(|e| at(e, span()))
            }
            Expr::Prim { prim, args, funcs } => {
                let mut callees = Vec::with_capacity(funcs.len());
                for Callee { func, captures } in funcs {
                    let mut values = Vec::with_capacity(captures.len());
                    for &c in captures {
                        values.push(self.eval(f, c)?);
                    }
                    callees.push((*func, values));
                }
                let mut values = Vec::with_capacity(args.len());
                for &arg in args {
                    values.push(self.eval(f, arg)?);
                }
                self.prim(f, id, prim, values, &callees)
            }
            Expr::ForLoop { state, init, elem, seq, body } => {
                let mut current = self.eval(f, *init)?;
                let NestedValue::Seq(seq) = self.eval(f, *seq)? else {
                    return Err(ill_typed(f, id, "a loop over a non-sequence"));
                };
                for i in 0..seq.len() {
                    self.interrupt.check(f.func.span(id))?;
                    self.bind(f, id, state, current)?;
                    self.bind(f, id, elem, seq.get(i))?;
                    current = self.eval(f, *body)?;
                }
                Ok(current)
            }
            Expr::WhileLoop { state, init, cond, body } => {
                let mut current = self.eval(f, *init)?;
                loop {
                    self.interrupt.check(f.func.span(id))?;
                    self.bind(f, id, state, current.clone())?;
                    if !self.eval_bool(f, *cond)? {
                        return Ok(current);
                    }
                    current = self.eval(f, *body)?;
                }
            }
            Expr::Assert { cond, message } => {
                if self.eval_bool(f, *cond)? {
                    Ok(self.unit.clone())
                } else {
                    let message = match message {
                        Some(m) => format!("assertion failed: {m}"),
                        None => "assertion failed".to_string(),
                    };
                    Err(Box::new(Diagnostic::new(Code::AssertionFailed, span(), message)))
                }
            }
            Expr::Literal(_)
            | Expr::Var(_)
            | Expr::Unary { .. }
            | Expr::Binary { .. }
            | Expr::And(..)
            | Expr::Or(..)
            | Expr::If { .. }
            | Expr::Let { .. }
            | Expr::Call { .. } => self.eval(f, id),
            Expr::Print { sink, args } if *sink != Sink::Text => {
                let values = args
                    .iter()
                    .map(|arg| match arg {
                        PrintArg::Value(v) => self.eval(f, *v),
                        PrintArg::Text(_) => Err(ill_typed(f, id, "a chart of a string")),
                    })
                    .collect::<EvalResult<Vec<_>>>()?;
                let chart = Chart::from_values(*sink, &values)
                    .map_err(|(code, why)| Box::new(Diagnostic::new(code, span(), why)))?;
                self.host.draw(chart);
                Ok(self.unit.clone())
            }
            Expr::Print { args, .. } => {
                let mut line = String::new();
                for (i, arg) in args.iter().enumerate() {
                    if i > 0 {
                        line.push(' ');
                    }
                    match arg {
                        PrintArg::Text(text) => line.push_str(text),
                        PrintArg::Value(v) => {
                            let v = self.eval(f, *v)?;
                            print::write_value(&mut line, &v);
                        }
                    }
                }
                line.push('\n');
                self.host.print(&line);
                Ok(self.unit.clone())
            }
        }
    }

    fn eval_bool(&mut self, f: Frame<'p>, id: ExprId) -> EvalResult<bool> {
        match self.eval(f, id)? {
            NestedValue::Bool(b) => Ok(b),
            _ => Err(ill_typed(f, id, "a condition that is not a bool")),
        }
    }

    /// Binds `pattern` to `value` in the frame; `id` is the binding expression, for errors.
    fn bind(&mut self, f: Frame<'p>, id: ExprId, pattern: &Pattern, value: NestedValue) -> EvalResult<()> {
        match pattern {
            Pattern::Var(v) => {
                self.stack[f.base + *v as usize] = value;
                Ok(())
            }
            Pattern::Wildcard => Ok(()),
            Pattern::Tuple(items) => match value {
                NestedValue::Tuple(values) if values.len() == items.len() => {
                    for (item, v) in items.iter().zip(values.iter()) {
                        self.bind(f, id, item, v.clone())?;
                    }
                    Ok(())
                }
                _ => Err(ill_typed(f, id, "a tuple pattern that does not match its value")),
            },
        }
    }

    /// Calls `func` with the arguments on the value stack from `args_base` on, and pops them.
    fn invoke(&mut self, func: FuncId, args_base: usize, span: TextRange) -> EvalResult<NestedValue> {
        let program = self.program;
        let callee = match program.functions.get(func as usize) {
            Some(callee) if self.stack.len() - args_base == callee.params.len() => callee,
            _ => {
                return Err(call_error(
                    self,
                    args_base,
                    span,
                    "a call of an unknown function or with the wrong arity",
                ));
            }
        };
        if self.depth >= self.limits.max_call_depth {
            return Err(call_error(self, args_base, span, "too deep"));
        }
        if self.interrupt.is_requested() {
            self.stack.truncate(args_base);
            return Err(Box::new(crate::interrupted(span)));
        }
        let base = self.stack.len();
        self.stack.resize(base + callee.vars.len(), NestedValue::Bool(false));
        for (i, &param) in callee.params.iter().enumerate() {
            let arg = std::mem::replace(&mut self.stack[args_base + i], NestedValue::Bool(false));
            self.stack[base + param as usize] = arg;
        }
        self.depth += 1;
        let result = self.eval(Frame { func: callee, base }, callee.body);
        self.depth -= 1;
        self.stack.truncate(args_base);
        result
    }

    /// Applies a function argument of a prelude operation: `func(captures ++ args)`.
    fn apply(
        &mut self,
        (func, captures): &(FuncId, Vec<NestedValue>),
        args: impl IntoIterator<Item = NestedValue>,
        span: TextRange,
    ) -> EvalResult<NestedValue> {
        let args_base = self.stack.len();
        self.stack.extend(captures.iter().cloned());
        self.stack.extend(args);
        self.invoke(*func, args_base, span)
    }
}

/// A literal's value in its own type (an `i32` literal wraps, an `f32` one rounds).
fn literal(lit: Literal) -> NestedValue {
    let (value, scalar) = match lit {
        Literal::Bool(b) => return NestedValue::Bool(b),
        Literal::Int(i, s) => (NestedValue::I64(i), s),
        Literal::Float(x, s) => (NestedValue::F64(x), s),
    };
    ops::cast(&value, scalar).unwrap_or(value)
}

#[cold]
#[inline(never)]
fn index_error(i: i64, len: usize, span: TextRange) -> Box<Diagnostic> {
    let message = format!("index {i} is out of range for a sequence of length {len}");
    Box::new(Diagnostic::new(Code::IndexOutOfRange, span, message))
}

/// `i` counted from the end when negative, if it is in range.
fn resolve_index(i: i64, len: usize) -> Option<usize> {
    let len = len as i64;
    let i = if i < 0 { i + len } else { i };
    (0..len).contains(&i).then_some(i as usize)
}
