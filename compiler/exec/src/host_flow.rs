//! Host control flow of the flat executors: calls, `If`, `While` and `Print`, one statement
//! at a time, on frames of variables (one slot per `VarId` per call). What an op or an
//! element loop does is the executor's (`Machine`): the CPU executor runs it with rayon, the
//! GPU executor launches kernels.
//!
//! Memory is freed early: a variable defined in a block is dropped right after the statement
//! that reads it last (a read inside a nested block counts as a read by the statement that
//! holds the block; the block's `results` are read at its end), and every variable a block
//! defined is dropped when the block finishes. A block also drops, after its own last read of
//! them, the variables from outside it that die with it (`Liveness::of`'s `dying`):
//! - a function's parameters, so a recursion level does not hold its inputs while the levels
//!   below it run;
//! - what an `If` reads last, inside the branch taken;
//! - a `While`'s state, in the loop body, so each round's state has one owner.
//!
//! A value is handed over at its last read rather than copied where that lets its owner reuse
//! it: a call's arguments move into the callee, and an op's dying operands move into the
//! machine (`Machine::op`'s `dying`), which may then write into them in place.

use std::collections::HashMap;
use std::rc::Rc;

use rowan::TextRange;

use crate::chart::Chart;
use crate::cpu::{self, Counters};
use crate::interp::Host;
use weft_core::Sink;
use weft_core::types::Scalar;
use weft_flat::ir::{Block, FuncId, Function, Op, PrintItem, Program, Stmt, StmtKind, VarId};
use weft_syntax::diagnostics::{Code, Diagnostic};

/// How deep IR calls may nest before the run stops with E0409, as in the interpreter.
pub const MAX_CALL_DEPTH: usize = 10_000;

pub type RunResult<T> = Result<T, Diagnostic>;
pub type Frame<V> = Vec<Option<V>>;

/// What an executor does with the statements that are not host control flow.
pub trait Machine {
    type Value: Clone;

    /// Runs `op` (its operands are in `frame`, which the machine may update in place, say to
    /// keep a value it converted) and gives its result.
    /// `dest` is the type of the op's result, if it has one. `dying` holds the operands no
    /// later statement reads: the machine may take them out of `frame` and reuse their memory.
    fn op(
        &mut self,
        host: &mut dyn Host,
        op: &Op,
        dest: Option<Scalar>,
        frame: &mut Frame<Self::Value>,
        dying: &[VarId],
        span: TextRange,
    ) -> RunResult<Option<Self::Value>>;

    /// Runs an `ElementLoop` statement and gives its `dests`' values.
    fn element_loop(
        &mut self,
        f: &Function,
        stmt: &Stmt,
        frame: &mut Frame<Self::Value>,
    ) -> RunResult<Vec<Self::Value>>;

    /// A scalar `bool` the host branches on.
    fn truth(&mut self, value: &Self::Value, span: TextRange) -> RunResult<bool>;

    /// Values as the CPU executor holds them, for printing.
    fn to_host(&mut self, values: Vec<Self::Value>, span: TextRange) -> RunResult<Vec<cpu::FlatValue>>;

    /// Raises any failure of the work issued so far: called before output, which must not
    /// appear when an earlier statement failed (a machine that checks lazily, the GPU
    /// executor, would otherwise print first).
    fn settle(&mut self, _span: TextRange) -> RunResult<()> {
        Ok(())
    }

    fn counters(&mut self) -> &mut Counters;

    /// The walker entered or left a call: `depth` calls are now open.
    fn call_depth(&mut self, _depth: usize) {}

    /// Runs the call of `func` with `args`, made with `depth` calls open, some other way (the
    /// GPU executor runs a small call on the CPU executor) and gives its results; `None` leaves
    /// the call to the walker.
    fn call_elsewhere(
        &mut self,
        _host: &mut dyn Host,
        _program: &Program,
        _func: FuncId,
        _args: &[Self::Value],
        _depth: usize,
        _span: TextRange,
    ) -> RunResult<Option<Vec<Self::Value>>> {
        Ok(None)
    }

    /// A call with `args` is about to run with `depth` calls open. A machine that may guess
    /// sizes inside a call (the GPU executor) says whether this call opens a region of
    /// guesses: the walker then keeps the arguments, and asks `guesses_held` when it returns.
    fn open_guesses(&mut self, _args: &[Self::Value], _depth: usize) -> bool {
        false
    }

    /// Whether the guesses made since `open_guesses` opened a region held, the call having
    /// `returned` its results or stopped with an error. If not, the walker runs the call again
    /// from its arguments; the machine guesses no more in this run.
    fn guesses_held(&mut self, _returned: bool, _span: TextRange) -> RunResult<bool> {
        Ok(true)
    }

    /// Runs a fused kernel as one unit, setting its outputs in `frame`, and says whether it
    /// did; if not, the walker runs the kernel's ops one at a time.
    fn kernel(&mut self, _f: &Function, _stmt: &Stmt, _frame: &mut Frame<Self::Value>) -> RunResult<bool> {
        Ok(false)
    }
}

/// Runs a program's functions on a machine.
pub struct Walker<'p, 'h, M: Machine> {
    pub program: &'p Program,
    pub host: &'h mut dyn Host,
    pub machine: M,
    /// Per block (by address; the program outlives the run), its liveness.
    liveness: HashMap<*const Block, Rc<Liveness>>,
    depth: usize,
    interrupt: crate::Interrupt,
}

/// Which variables to drop as a block starts, after each of its statements, and when it ends.
#[derive(Debug, Default)]
pub struct Liveness {
    /// The outer variables that die with the block, as given to `of`.
    pub dying: Vec<VarId>,
    /// Variables from outside the block that die with it but that it never reads.
    pub free_at_entry: Vec<VarId>,
    pub free_after: Vec<Vec<VarId>>,
    /// Every variable the block owns: those it defines and the outer ones that die with it.
    pub defined: Vec<VarId>,
}

impl Liveness {
    /// The liveness of `block`. `dying` are variables from outside the block that are dead
    /// once it finishes (a function's parameters, what an `If` reads last): the block drops
    /// them after its own last read, as it drops what it defines.
    pub fn of(block: &Block, dying: &[VarId]) -> Liveness {
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
        for &d in dying {
            if !last_def.contains_key(&d) && !defined.contains(&d) {
                defined.push(d);
            }
        }
        let mut free_at_entry = Vec::new();
        let mut free_after = vec![Vec::new(); n];
        for &d in &defined {
            let def = last_def.get(&d).copied();
            let at = match (last_read.get(&d), def) {
                (Some(&usize::MAX), _) => continue,
                (Some(&r), def) => r.max(def.unwrap_or(0)),
                (None, Some(def)) => def,
                (None, None) => {
                    free_at_entry.push(d);
                    continue;
                }
            };
            if let Some(slot) = free_after.get_mut(at) {
                slot.push(d);
            }
        }
        Liveness { dying: dying.to_vec(), free_at_entry, free_after, defined }
    }
}

fn stmt_dests(stmt: &Stmt) -> Vec<VarId> {
    match &stmt.kind {
        StmtKind::Op { dest, .. } => dest.iter().copied().collect(),
        StmtKind::If { dests, .. }
        | StmtKind::While { dests, .. }
        | StmtKind::ElementLoop { dests, .. }
        | StmtKind::Call { dests, .. } => dests.clone(),
        StmtKind::Kernel(kernel) => kernel.outputs.clone(),
        StmtKind::Print { .. } => Vec::new(),
    }
}

pub fn internal_at(what: impl std::fmt::Display, span: TextRange) -> Diagnostic {
    Diagnostic::new(Code::InternalError, span, format!("internal error: malformed IR at run time ({what})"))
}

impl<'p, 'h, M: Machine> Walker<'p, 'h, M> {
    pub fn new(program: &'p Program, host: &'h mut dyn Host, machine: M) -> Self {
        let interrupt = host.interrupt();
        Walker { program, host, machine, liveness: HashMap::new(), depth: 0, interrupt }
    }

    /// The walker, with `depth` calls already open: a call another walker hands over counts
    /// against `MAX_CALL_DEPTH` from where that walker was.
    pub fn at_depth(mut self, depth: usize) -> Self {
        self.depth = depth;
        self
    }

    pub fn call_function(
        &mut self,
        func: FuncId,
        args: Vec<M::Value>,
        span: TextRange,
    ) -> RunResult<Vec<M::Value>> {
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
        let mut frame: Frame<M::Value> = vec![None; f.vars.len()];
        for (&p, a) in f.params.iter().zip(args) {
            set(&mut frame, p, a, span)?;
        }
        self.depth += 1;
        let depth = self.depth as u64;
        let counters = self.machine.counters();
        counters.max_call_depth = counters.max_call_depth.max(depth);
        self.machine.call_depth(self.depth);
        let result = weft_core::ensure_stack(|| self.run_block(f, &mut frame, &f.body, &f.params));
        self.depth -= 1;
        self.machine.call_depth(self.depth);
        result
    }

    /// A block's liveness. A block is only ever run from one place, so its `dying` set is
    /// always the same and the liveness can be kept by the block's address.
    fn liveness(&mut self, block: &Block, dying: &[VarId]) -> Rc<Liveness> {
        let live = self
            .liveness
            .entry(block as *const Block)
            .or_insert_with(|| Rc::new(Liveness::of(block, dying)))
            .clone();
        debug_assert_eq!(live.dying, dying, "a block run with two sets of dying variables");
        live
    }

    /// Runs a block and gives its results; every variable it defined, and every one of `dying`
    /// (see `Liveness::of`), is dropped by the end.
    fn run_block(
        &mut self,
        f: &'p Function,
        frame: &mut Frame<M::Value>,
        block: &'p Block,
        dying: &[VarId],
    ) -> RunResult<Vec<M::Value>> {
        let live = self.liveness(block, dying);
        for &v in &live.free_at_entry {
            set_none(frame, v);
        }
        for (i, stmt) in block.stmts.iter().enumerate() {
            let dead = live.free_after.get(i).map_or(&[][..], Vec::as_slice);
            self.stmt(f, frame, stmt, dead)?;
            for &v in dead {
                set_none(frame, v);
            }
        }
        let span = block.stmts.last().map_or_else(TextRange::default, |s| s.span);
        let results = block.results.iter().map(|&r| get(frame, r, span)).collect::<RunResult<Vec<_>>>()?;
        for &v in &live.defined {
            if let Some(slot) = frame.get_mut(v as usize) {
                *slot = None;
            }
        }
        Ok(results)
    }

    /// Runs a statement; `dead` are the variables no later statement reads, which it may drop
    /// or hand over once it has read them.
    fn stmt(
        &mut self,
        f: &'p Function,
        frame: &mut Frame<M::Value>,
        stmt: &'p Stmt,
        dead: &[VarId],
    ) -> RunResult<()> {
        let span = stmt.span;
        // Every call, loop step and op passes here, so an interrupt stops the run within one
        // statement (and a GPU run before its next launch is recorded).
        self.interrupt.check(span)?;
        match &stmt.kind {
            StmtKind::Op { dest, op } => {
                let elem = dest.map(|d| f.ty(d).elem);
                match (dest, self.machine.op(self.host, op, elem, frame, dead, span)?) {
                    (Some(d), Some(v)) => set(frame, *d, v, span)?,
                    (None, None) => {}
                    _ => return Err(internal_at(format!("{} with a wrong destination", op.name()), span)),
                }
            }
            StmtKind::If { cond, then, otherwise, dests } => {
                let c = get(frame, *cond, span)?;
                let taken = self.machine.truth(&c, span)?;
                let results = self.run_block(f, frame, if taken { then } else { otherwise }, dead)?;
                assign(frame, dests, results, span)?;
            }
            StmtKind::While { state, init, cond, body, dests } => {
                let current = init.iter().map(|&v| get(frame, v, span)).collect::<RunResult<Vec<_>>>()?;
                // The state has one owner, its slot: the body drops each round's state after
                // its last read, so an op may append to it or write into it in place.
                let mut in_loop = Vec::new();
                cond.reads(&mut in_loop);
                body.reads(&mut in_loop);
                for v in dead.iter().filter(|v| !in_loop.contains(v)) {
                    set_none(frame, *v);
                }
                assign(frame, state, current, span)?;
                loop {
                    let c = self.run_block(f, frame, cond, &[])?;
                    let [c] = c.as_slice() else {
                        return Err(internal_at("a loop condition that is not one value", span));
                    };
                    if !self.machine.truth(c, span)? {
                        break;
                    }
                    self.machine.counters().host_loop_iterations += 1;
                    let next = self.run_block(f, frame, body, state)?;
                    assign(frame, state, next, span)?;
                }
                let last = state.iter().map(|&v| take(frame, v, span)).collect::<RunResult<Vec<_>>>()?;
                assign(frame, dests, last, span)?;
            }
            StmtKind::ElementLoop { dests, .. } => {
                let results = self.machine.element_loop(f, stmt, frame)?;
                self.machine.counters().ops_run += 1;
                assign(frame, dests, results, span)?;
            }
            StmtKind::Kernel(kernel) => {
                if !self.machine.kernel(f, stmt, frame)? {
                    for member in &kernel.body {
                        self.stmt(f, frame, member, &[])?;
                    }
                    for v in kernel.defined() {
                        if !kernel.outputs.contains(&v) {
                            set_none(frame, v);
                        }
                    }
                }
            }
            StmtKind::Call { func, args, dests } => {
                let values = args.iter().map(|&v| get(frame, v, span)).collect::<RunResult<Vec<_>>>()?;
                // Arguments read here for the last time move into the callee, which drops each
                // after its own last read of it.
                for &v in dead {
                    set_none(frame, v);
                }
                self.machine.counters().calls += 1;
                let elsewhere =
                    self.machine.call_elsewhere(self.host, self.program, *func, &values, self.depth, span)?;
                let results = match elsewhere {
                    Some(results) => results,
                    // Values are immutable, so running the call again from the same arguments
                    // gives what a first run without guesses would have. The kept arguments
                    // live until the call returns, where the callee could drop each earlier: the
                    // memory of one call's arguments, the outermost that guesses.
                    None if self.machine.open_guesses(&values, self.depth) => {
                        let first = self.call_function(*func, values.clone(), span);
                        if self.machine.guesses_held(first.is_ok(), span)? {
                            first?
                        } else {
                            self.call_function(*func, values, span)?
                        }
                    }
                    None => self.call_function(*func, values, span)?,
                };
                assign(frame, dests, results, span)?;
            }
            StmtKind::Print { sink, items } => {
                self.machine.settle(span)?;
                let mut line = String::new();
                let mut values = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        line.push(' ');
                    }
                    match item {
                        PrintItem::Text(text) => line.push_str(text),
                        PrintItem::Value { ty, vars } => {
                            let vars =
                                vars.iter().map(|&v| get(frame, v, span)).collect::<RunResult<Vec<_>>>()?;
                            let vars = self.machine.to_host(vars, span)?;
                            let value = cpu::try_vars_to_value(ty, &vars)
                                .map_err(|e| internal_at(format!("a printed value: {e}"), span))?;
                            if *sink == Sink::Text {
                                crate::interp::print::write_value(&mut line, &value);
                            } else {
                                values.push(value);
                            }
                        }
                    }
                }
                if *sink == Sink::Text {
                    line.push('\n');
                    self.host.print(&line);
                } else {
                    let chart = Chart::from_values(*sink, &values)
                        .map_err(|(code, why)| Diagnostic::new(code, span, why))?;
                    self.host.draw(chart);
                }
            }
        }
        Ok(())
    }
}

pub fn get<V: Clone>(frame: &Frame<V>, var: VarId, span: TextRange) -> RunResult<V> {
    match frame.get(var as usize) {
        Some(Some(v)) => Ok(v.clone()),
        Some(None) => {
            Err(internal_at(format!("%{var} is read before it is defined or after it is freed"), span))
        }
        None => Err(internal_at(format!("variable %{var} does not exist"), span)),
    }
}

/// Whether an op whose operands are `operands` reads `var` for the last time, and only once
/// (`dying` is what the walker hands the op): the value may then be moved out of the frame
/// (`take`), and where nobody else holds its vector an executor may write into it in place.
pub fn handed_over(operands: &[VarId], dying: &[VarId], var: VarId) -> bool {
    dying.contains(&var) && operands.iter().filter(|&&w| w == var).count() == 1
}

/// A variable's value, moved out of the frame: its last read.
pub fn take<V>(frame: &mut Frame<V>, var: VarId, span: TextRange) -> RunResult<V> {
    match frame.get_mut(var as usize) {
        Some(slot) => slot.take().ok_or_else(|| {
            internal_at(format!("%{var} is read before it is defined or after it is freed"), span)
        }),
        None => Err(internal_at(format!("variable %{var} does not exist"), span)),
    }
}

pub fn set<V>(frame: &mut Frame<V>, var: VarId, value: V, span: TextRange) -> RunResult<()> {
    match frame.get_mut(var as usize) {
        Some(slot) => {
            *slot = Some(value);
            Ok(())
        }
        None => Err(internal_at(format!("variable %{var} does not exist"), span)),
    }
}

fn set_none<V>(frame: &mut Frame<V>, var: VarId) {
    if let Some(slot) = frame.get_mut(var as usize) {
        *slot = None;
    }
}

fn assign<V>(frame: &mut Frame<V>, vars: &[VarId], values: Vec<V>, span: TextRange) -> RunResult<()> {
    if vars.len() != values.len() {
        return Err(internal_at(format!("{} values for {} variables", values.len(), vars.len()), span));
    }
    for (&v, x) in vars.iter().zip(values) {
        set(frame, v, x, span)?;
    }
    Ok(())
}
