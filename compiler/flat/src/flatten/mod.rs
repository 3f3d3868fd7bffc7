//! Flattening (NESL's vectorisation): the typed core to the segmented IR.
//!
//! Every core expression is flattened *in a context*: the root context runs once on the host,
//! and a lifted context runs once per element of a parallel operation, all elements at once.
//! A value in a context is a `Rep`: a tree of IR variables following `ir::layout`. A leaf that
//! is a host scalar is *uniform* (the same for every element of the context, computed once);
//! a leaf that is a vector has one entry per element.
//!
//! - `map(f, xs)` (every comprehension) opens a child context whose elements are the elements
//!   of `xs`, concatenated over the parent's elements; `f`'s body is flattened there.
//! - A free variable keeps the context it was bound in. Read in a deeper context, its vector
//!   leaves are gathered through the child-to-parent index, and a sequence copies only its
//!   descriptor, never its elements (Lippmeier et al.), so `[xs[i] for i in idx]` costs
//!   O(len(idx)). Uniform values are never copied.
//! - A conditional on a lifted condition splits the context with `pack` into the elements
//!   that take each arm, runs each arm only on its elements, and merges the results with
//!   `scatter`; arms that are cheap and cannot fail become a `select` instead.
//! - Calls of non-recursive functions are inlined, so every function used inside a parallel
//!   context is lifted at its call site, with uniform arguments kept uniform.
//!
//! - A recursive function gets one lifted IR function, called once per recursion level for all
//!   the elements of that level (`recursion`); loops inside parallel code run per element
//!   (`loops`).
//!
//! What is not flattened (loading a file inside parallel code) stops with E0408 and a label at
//! the construct; the interpreter runs those programs.

mod builder;
mod compare;
mod loops;
mod prims;
mod recursion;
mod seqs;
mod tree;

use rowan::TextRange;
use rustc_hash::FxHashMap;

use crate::ir::{self, Block, Check, Op, PrintItem, StmtKind, VarId};
use weft_core::types::{Scalar, Type};
use weft_core::{self as core, BinaryOp, Expr, ExprId, Literal, Pattern, UnaryOp};
use weft_syntax::diagnostics::{Code, Diagnostic};

use self::builder::Builder;

/// How flattening schedules nested work. The default flattens everything that can be
/// flattened: every level of nesting becomes flat vector operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Options {
    /// Copperhead's schedule for small, regular inner computations: inside parallel code,
    /// `sum`, `product` or `reduce` (with an operator that cannot fail) of a comprehension
    /// whose body is scalar code may run as a loop inside each element (an `ElementLoop`)
    /// instead of as flat segmented operations. It reads each element's items where they
    /// are and builds no inner sequence; it suits short inner sequences under many outer
    /// elements, and loses parallelism when a few inner sequences are long.
    pub inner: InnerSchedule,
    /// The executor the program is for, which `InnerSchedule::Auto` decides by.
    pub target: Target,
    /// Piecewise execution: a recursive function called from parallel code, whose results are
    /// numbers and tuples, runs this many elements at a time (0: all at once), which bounds the
    /// memory of its breadth-first frontier (Barnes–Hut's force walk).
    pub piece_size: u32,
    /// Check every index, those shape analysis proved in bounds too: the baseline for
    /// measuring what the proofs save.
    pub keep_index_checks: bool,
    /// Leave out the run-time checks the compiler inserts (indexes, lengths, counts; not the
    /// program's `assert`s): a program that should fail gives some result instead, or, on the
    /// CPU executor, may panic or allocate without bound (a negative count). Only for measuring
    /// what the checks of correct programs cost; no command offers it.
    pub without_checks: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            inner: InnerSchedule::Auto,
            target: Target::Cpu,
            piece_size: DEFAULT_PIECE_SIZE,
            keep_index_checks: false,
            without_checks: false,
        }
    }
}

/// When an inner reduction runs as a loop inside each element (`Options::inner`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum InnerSchedule {
    /// By the target. On a GPU, a run-time cost estimate from the inner and outer lengths
    /// picks, per run, between the loop and the flat code (both are compiled). On the CPU,
    /// always flat: there the loop's ops run through the element loop's evaluator, which
    /// measured 3.9× slower than the flat code's compiled passes (`docs/performance.md`).
    #[default]
    Auto,
    /// Always flat, segmented operations.
    Flat,
    /// Always the loop inside each element, where it applies.
    Sequential,
}

/// The executor a program is flattened for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Target {
    #[default]
    Cpu,
    Gpu,
}

impl Options {
    /// The options for a GPU run.
    pub fn for_gpu(self) -> Options {
        Options { target: Target::Gpu, ..self }
    }

    /// `inner`, with `Auto` resolved for the target: `Auto` left means the run-time guard.
    pub(crate) fn inner_schedule(&self) -> InnerSchedule {
        match (self.inner, self.target) {
            (InnerSchedule::Auto, Target::Cpu) => InnerSchedule::Flat,
            (inner, _) => inner,
        }
    }
}

/// The elements of a piece. A piece's level still gives each op many elements when every
/// element opens several subproblems (Barnes–Hut's walk: hundreds of thousands), so the fixed
/// cost of an op stays small; `docs/performance.md` has the measurements behind the choice.
pub const DEFAULT_PIECE_SIZE: u32 = 4096;

/// Flattens a program's top-level statements (and everything they call).
pub fn flatten(program: &core::Program) -> Result<ir::Program, Diagnostic> {
    flatten_with(program, Options::default())
}

/// `flatten` with the schedule `options` ask for.
pub fn flatten_with(program: &core::Program, options: Options) -> Result<ir::Program, Diagnostic> {
    flatten_interruptibly(program, options, &|| {})
}

/// `flatten_with`, calling `interrupt` before each expression: an editor passes salsa's
/// cancellation check, so that a newer edit never waits for a large program's flattening.
pub fn flatten_interruptibly(
    program: &core::Program,
    options: Options,
    interrupt: &dyn Fn(),
) -> Result<ir::Program, Diagnostic> {
    let main = &program.main;
    flatten_soundly(program, options, interrupt, |flattener| {
        if !main.params.is_empty() || main.ret != Type::Tuple(vec![]) {
            // A session's statement: main takes earlier cells' values and returns its bindings.
            return flattener.entry_function(main, "main".to_string());
        }
        flattener.frames.push(Frame::new(main, 0));
        flattener.b.span = main.span(main.body);
        flattener.expr(main.body, ROOT)?;
        let body = Block { stmts: flattener.b.take_stmts(), results: vec![] };
        flattener.finish("main".to_string(), vec![], body)
    })
}

/// Flattens with `entry`, which gives the entry function, until every recursive function's
/// assumed overlap of its arguments and results holds (`Flattener::assumed`): a function
/// whose calls or returns broke it is flattened again with the overlap they showed, as are
/// its callers. An assumption only weakens, through at most `MOST_REPEATS` steps to none, so
/// the attempts are bounded, and nearly always one.
fn flatten_soundly<'c>(
    program: &'c core::Program,
    options: Options,
    interrupt: &'c dyn Fn(),
    entry: impl Fn(&mut Flattener<'c>) -> FlattenResult<ir::Function>,
) -> Result<ir::Program, Diagnostic> {
    let mut assumed: FxHashMap<core::FuncId, Overlap> = FxHashMap::default();
    loop {
        let mut flattener = Flattener::new(program, options);
        flattener.interrupt = interrupt;
        flattener.assumed = assumed.clone();
        let function = entry(&mut flattener)?;
        let mut broken = false;
        for (&callee, &found) in &flattener.found {
            let held = assumed.get(&callee).copied().unwrap_or(Overlap::Repeats(1));
            if found.worse_than(held) {
                assumed.insert(callee, found);
                broken = true;
            }
        }
        if !broken {
            return flattener.program(function);
        }
    }
}

/// How far the segments of a recursive function's sequence arguments and results may
/// overlap: each element in at most so many segments (`SeqRep::repeats`), or anyhow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Overlap {
    Repeats(u32),
    Any,
}

/// The most repeats an assumption names; beyond, it is `Overlap::Any`. A recursion that
/// passes its argument to a fixed number of calls each level (quickhull's two halves) needs
/// that number; one that repeats it more at every level never settles.
const MOST_REPEATS: u32 = 8;

impl Overlap {
    fn worse_than(self, other: Overlap) -> bool {
        match (self, other) {
            (Overlap::Any, Overlap::Repeats(_)) => true,
            (Overlap::Repeats(a), Overlap::Repeats(b)) => a > b,
            (_, Overlap::Any) => false,
        }
    }

    fn worst(self, other: Overlap) -> Overlap {
        if other.worse_than(self) { other } else { self }
    }
}

/// Flattens one function as a host entry point: its parameters and results follow
/// `ir::layout(ty, false)`, and sequence arguments must be compact (offset 0, segments in
/// order, as `cpu::value_to_vars` makes them). Benchmarks and tests call it with prepared inputs.
pub fn flatten_entry(
    program: &core::Program,
    func: core::FuncId,
    options: Options,
) -> Result<ir::Program, Diagnostic> {
    let function = program.function(func);
    flatten_soundly(program, options, &|| {}, |flattener| {
        flattener.entry_function(function, function.name.clone())
    })
}

impl<'c> Flattener<'c> {
    /// `function` flattened as a host entry point (see `flatten_entry`).
    fn entry_function(
        &mut self,
        function: &'c core::Function,
        name: String,
    ) -> Result<ir::Function, Diagnostic> {
        let flattener = self;
        let mut frame = Frame::new(function, 0);
        let mut params = Vec::new();
        for &p in &function.params {
            let ty = &function.vars[p as usize].ty;
            let vars: Vec<VarId> = ir::layout(ty, false)
                .into_iter()
                .map(|t| flattener.b.var(&function.vars[p as usize].name, t))
                .collect();
            params.extend(&vars);
            // An entry point's caller passes whole, compact sequences (as `cpu::value_to_vars`
            // lays them out), so the body can use their elements in place.
            let rep = prims::mark_compact(seqs::from_layout(ty, &mut vars.into_iter()));
            frame.vars[p as usize] = Some((rep, ROOT));
        }
        flattener.frames.push(frame);
        flattener.b.span = function.span(function.body);
        let result = flattener.expr(function.body, ROOT)?;
        let results = flattener.canonical(&result, &function.ret, ROOT);
        let body = Block { stmts: flattener.b.take_stmts(), results };
        flattener.finish(name, params, body)
    }
}

/// `picked`, values gathered from `from` with each index at most `times` times, with
/// `from`'s sequences' `disjoint`: their segments overlap as `from`'s do, each repeated at
/// most `times` times (`times` is 1 for distinct indexes).
fn keep_disjoint(picked: Rep, from: &Rep, times: u32) -> Rep {
    match (picked, from) {
        (Rep::Tuple(items), Rep::Tuple(froms)) => {
            Rep::Tuple(items.into_iter().zip(froms).map(|(p, f)| keep_disjoint(p, f, times)).collect())
        }
        (Rep::Seq(mut seq), Rep::Seq(from)) => {
            seq.disjoint = from.disjoint;
            seq.repeats = from.repeats.saturating_mul(times);
            Rep::Seq(seq)
        }
        (picked, _) => picked,
    }
}

/// Runs the IR checker after flattening in debug builds and tests (Futhark's habit).
fn debug_check(program: &ir::Program, pass: &str) -> Result<(), Diagnostic> {
    if cfg!(debug_assertions) {
        ir::check(program, pass).map_err(|e| {
            Diagnostic::new(Code::InternalError, TextRange::default(), format!("internal error: {e}"))
        })?;
    }
    Ok(())
}

pub(crate) type CtxId = usize;

/// The host context: everything in it runs once.
pub(crate) const ROOT: CtxId = 0;

/// A parallel context: a set of elements that run the same code at once.
struct Ctx {
    parent: CtxId,
    /// How many elements (a scalar `i32`); `None` for the root.
    size: Option<VarId>,
    /// For each element, the index of the parent element it belongs to; `None` when the
    /// parent is the root (every element belongs to the one root element).
    parent_index: Option<VarId>,
    /// Each parent element has at most this many elements here: 1 in a split arm, a list
    /// display's length in a map over it, unknown (`None`) otherwise. A value lifted into
    /// this context repeats its segments at most so many times (`SeqRep::repeats`).
    fan_out: Option<u32>,
}

impl Ctx {
    fn root() -> Ctx {
        Ctx { parent: ROOT, size: None, parent_index: None, fan_out: Some(1) }
    }
}

/// A value in a context, as IR variables.
#[derive(Debug, Clone)]
pub(crate) enum Rep {
    Leaf(VarId),
    Tuple(Vec<Rep>),
    Seq(Box<SeqRep>),
}

/// A sequence (or, in a lifted context, one sequence per element): segment `s` is
/// `elems[offsets[s] .. offsets[s] + lengths[s]]`.
#[derive(Debug, Clone)]
pub(crate) struct SeqRep {
    pub offsets: VarId,
    pub lengths: VarId,
    /// A collection: every leaf is a vector.
    pub elems: Rep,
    /// The segments are `elems` exactly, one after another: the offsets are the exclusive
    /// sum of the lengths and the lengths add up to the size of `elems`.
    pub compact: bool,
    /// The segments overlap at most `repeats` times (`compact` implies once): each element
    /// of `elems` lies in at most that many segments, so the lengths add up to at most
    /// `repeats` times the size of `elems`, a bound on a layout's size that a GPU allocates
    /// by. It holds of the descriptor as it is: a uniform one made one per element repeats
    /// its segment once per element.
    pub disjoint: bool,
    /// With `disjoint`, how many segments an element lies in at most: 1 where the segments
    /// do not overlap; a value lifted into a context whose parent elements have `k` elements
    /// each (a map over a list display of `k` items) repeats each segment `k` times.
    pub repeats: u32,
}

impl Rep {
    /// Segments `offsets` and `lengths` of `elems`, of which nothing more is known: they may
    /// leave gaps, or overlap (`SeqRep::compact` and `disjoint` are false).
    fn segments(offsets: VarId, lengths: VarId, elems: Rep) -> Rep {
        Rep::Seq(Box::new(SeqRep { offsets, lengths, elems, compact: false, disjoint: false, repeats: 1 }))
    }

    fn seq(self) -> Option<SeqRep> {
        match self {
            Rep::Seq(s) => Some(*s),
            _ => None,
        }
    }

    fn leaf(&self) -> Option<VarId> {
        match self {
            Rep::Leaf(v) => Some(*v),
            _ => None,
        }
    }
}

/// One activation of a core function being flattened (calls are inlined, so the same
/// function can be active several times): its variables' values and the context of each.
struct Frame<'c> {
    func: &'c core::Function,
    vars: Vec<Option<(Rep, CtxId)>>,
    id: usize,
}

impl<'c> Frame<'c> {
    fn new(func: &'c core::Function, id: usize) -> Frame<'c> {
        Frame { func, vars: vec![None; func.vars.len()], id }
    }
}

/// Work already done that later reads can reuse, valid within the current block.
#[derive(Clone, Default)]
struct Memo {
    /// Composed child-to-ancestor indexes, by (ancestor, descendant).
    paths: FxHashMap<(CtxId, CtxId), VarId>,
    /// Free variables already brought into a context, by (frame, variable, context).
    lifted: FxHashMap<(usize, core::VarId, CtxId), Rep>,
}

struct Flattener<'c> {
    core: &'c core::Program,
    b: Builder,
    ctxs: Vec<Ctx>,
    frames: Vec<Frame<'c>>,
    next_frame: usize,
    memo: Memo,
    /// Which core functions call themselves, directly or through others.
    recursive: Vec<bool>,
    /// The IR functions by id; the entry function's slot (0) and those of lifted functions
    /// still being flattened are empty.
    functions: Vec<Option<ir::Function>>,
    /// The lifted IR function of each recursive core function met so far.
    lifted_ids: FxHashMap<core::FuncId, ir::FuncId>,
    /// How each nested loop and recursive call got to run.
    schedules: Vec<(TextRange, ir::Schedule)>,
    options: Options,
    /// How many lifted functions are being flattened, one inside another's flattening.
    lifted_depth: usize,
    /// Called before each expression; it may unwind to abandon the work.
    interrupt: &'c dyn Fn(),
    /// How far recursive functions' sequence arguments and results may overlap, as an
    /// earlier attempt found (`SeqRep::disjoint` and `repeats`); a function not here is
    /// taken to have disjoint ones. Every call and return checks it and notes in `found` the
    /// worst it saw, for `flatten_soundly` to try again with.
    assumed: FxHashMap<core::FuncId, Overlap>,
    found: FxHashMap<core::FuncId, Overlap>,
}

type FlattenResult<T> = Result<T, Diagnostic>;

impl<'c> Flattener<'c> {
    fn new(core: &'c core::Program, options: Options) -> Flattener<'c> {
        Flattener {
            core,
            b: Builder::default(),
            ctxs: vec![Ctx::root()],
            frames: vec![],
            next_frame: 1,
            memo: Memo::default(),
            recursive: recursive_functions(core),
            functions: vec![None],
            lifted_ids: FxHashMap::default(),
            schedules: Vec::new(),
            options,
            lifted_depth: 0,
            interrupt: &|| {},
            assumed: FxHashMap::default(),
            found: FxHashMap::default(),
        }
    }

    /// The program of `entry` (function 0) and the lifted functions it calls, checked.
    fn program(self, entry: ir::Function) -> Result<ir::Program, Diagnostic> {
        let mut functions = vec![entry];
        functions.extend(self.functions.into_iter().skip(1).flatten());
        let mut schedules = self.schedules;
        schedules.sort_by_key(|(span, schedule)| (span.start(), span.end(), *schedule));
        schedules.dedup();
        let mut program = ir::Program { functions, main: 0, schedules };
        debug_check(&program, "flatten")?;
        if self.options.without_checks {
            crate::simplify::remove_checks(&mut program);
        }
        crate::simplify::simplify(&mut program, self.interrupt);
        debug_check(&program, "simplify")?;
        Ok(program)
    }

    fn finish(&mut self, name: String, params: Vec<VarId>, body: Block) -> FlattenResult<ir::Function> {
        if let Some(bug) = self.b.bug.take() {
            return Err(Diagnostic::new(
                Code::InternalError,
                self.b.span,
                format!("internal error: flattening produced an ill-typed op: {bug}"),
            ));
        }
        Ok(ir::Function { name, params, vars: std::mem::take(&mut self.b.vars), body })
    }

    fn frame(&self) -> &Frame<'c> {
        self.frames.last().expect("a frame is active while flattening")
    }

    fn func(&self) -> &'c core::Function {
        self.frame().func
    }

    // --- contexts ----------------------------------------------------------------------------

    fn lifted(&self, ctx: CtxId) -> bool {
        ctx != ROOT
    }

    fn size(&mut self, ctx: CtxId) -> VarId {
        match self.ctxs[ctx].size {
            Some(size) => size,
            None => self.b.i32(1),
        }
    }

    fn new_ctx(&mut self, parent: CtxId, size: VarId, parent_index: Option<VarId>) -> CtxId {
        self.ctxs.push(Ctx { parent, size: Some(size), parent_index, fan_out: None });
        self.ctxs.len() - 1
    }

    /// A context of some of the elements of `parent`, those at `index` (a pack of an `iota`).
    fn subset_ctx(&mut self, parent: CtxId, size: VarId, index: VarId) -> CtxId {
        let ctx = self.new_ctx(parent, size, Some(index));
        self.ctxs[ctx].fan_out = Some(1);
        ctx
    }

    /// A context of `lengths[i]` elements for each element `i` of `parent` (one `lengths`
    /// in the root), of `size` in all: where the lengths are one constant (a list display's),
    /// that is its fan-out.
    fn ctx_over(&mut self, parent: CtxId, size: VarId, parent_index: Option<VarId>, lengths: VarId) -> CtxId {
        let ctx = self.new_ctx(parent, size, parent_index);
        let each = self.b.replicated(lengths).map_or(lengths, |(value, _)| value);
        // No element (an empty display) repeats nothing: at most once is still a bound.
        self.ctxs[ctx].fan_out = self.b.constant(each).and_then(|k| u32::try_from(k.max(1)).ok());
        ctx
    }

    /// How many elements of `to` each element of `from`, an ancestor of it, has at most.
    fn fan_out(&self, from: CtxId, to: CtxId) -> Option<u32> {
        let mut at = to;
        let mut most = 1u32;
        while at != from && at != ROOT {
            most = most.checked_mul(self.ctxs[at].fan_out?)?;
            at = self.ctxs[at].parent;
        }
        Some(most)
    }

    /// For each element of `to`, the index of the element of its ancestor `from` it belongs to.
    fn path(&mut self, from: CtxId, to: CtxId) -> Option<VarId> {
        if from == to || from == ROOT {
            return None;
        }
        if let Some(&index) = self.memo.paths.get(&(from, to)) {
            return Some(index);
        }
        let ctx = &self.ctxs[to];
        let (parent, own) = (ctx.parent, ctx.parent_index);
        let index = match (self.path(from, parent), own) {
            (Some(up), Some(own)) => self.b.gather(up, own),
            (None, Some(own)) => own,
            (_, None) => return None,
        };
        self.memo.paths.insert((from, to), index);
        Some(index)
    }

    /// `rep`, a value of context `from`, as a value of its descendant `to`.
    fn lift(&mut self, rep: &Rep, from: CtxId, to: CtxId) -> Rep {
        match self.path(from, to) {
            Some(index) => {
                let picked = self.gather_top(rep, index);
                match self.fan_out(from, to) {
                    Some(times) => keep_disjoint(picked, rep, times),
                    None => picked,
                }
            }
            None => rep.clone(),
        }
    }

    /// Picks the `index`-th values of a context value: vector leaves are gathered, uniform
    /// leaves stay, and a sequence copies its descriptor, not its elements.
    fn gather_top(&mut self, rep: &Rep, index: VarId) -> Rep {
        match rep {
            Rep::Leaf(v) if self.b.is_vector(*v) => Rep::Leaf(self.b.gather(*v, index)),
            Rep::Leaf(v) => Rep::Leaf(*v),
            Rep::Tuple(items) => Rep::Tuple(items.iter().map(|r| self.gather_top(r, index)).collect()),
            Rep::Seq(seq) => {
                let pick =
                    |me: &mut Self, v: VarId| if me.b.is_vector(v) { me.b.gather(v, index) } else { v };
                let offsets = pick(self, seq.offsets);
                let lengths = pick(self, seq.lengths);
                Rep::segments(offsets, lengths, seq.elems.clone())
            }
        }
    }

    /// A scalar leaf made one entry per element of `ctx` (no change in the root, or for a
    /// vector).
    fn force(&mut self, v: VarId, ctx: CtxId) -> VarId {
        if !self.lifted(ctx) || self.b.is_vector(v) {
            return v;
        }
        let size = self.size(ctx);
        self.b.replicate(v, size)
    }

    fn force_rep(&mut self, rep: &Rep, ctx: CtxId) -> Rep {
        match rep {
            Rep::Leaf(v) => Rep::Leaf(self.force(*v, ctx)),
            Rep::Tuple(items) => Rep::Tuple(items.iter().map(|r| self.force_rep(r, ctx)).collect()),
            Rep::Seq(seq) => {
                let forced =
                    self.lifted(ctx) && !(self.b.is_vector(seq.offsets) && self.b.is_vector(seq.lengths));
                // A uniform descriptor made one per element repeats its segment once per
                // element: a bound only where the context's size is a constant.
                let times = if forced {
                    let size = self.size(ctx);
                    self.b.constant(size).and_then(|k| u32::try_from(k.max(1)).ok())
                } else {
                    Some(1)
                };
                Rep::Seq(Box::new(SeqRep {
                    offsets: self.force(seq.offsets, ctx),
                    lengths: self.force(seq.lengths, ctx),
                    elems: seq.elems.clone(),
                    compact: seq.compact && !forced,
                    disjoint: seq.disjoint && times.is_some(),
                    repeats: seq.repeats.saturating_mul(times.unwrap_or(1)),
                }))
            }
        }
    }

    /// Whether every top-level leaf is uniform (a host scalar).
    fn uniform(&self, rep: &Rep) -> bool {
        match rep {
            Rep::Leaf(v) => !self.b.is_vector(*v),
            Rep::Tuple(items) => items.iter().all(|r| self.uniform(r)),
            Rep::Seq(seq) => !self.b.is_vector(seq.offsets) && !self.b.is_vector(seq.lengths),
        }
    }

    /// The operands of a check that may fail, made per element when all are uniform in a
    /// lifted context: an empty context must not fail, and the interpreter would never have
    /// evaluated the expression.
    fn guard(&mut self, operands: &mut [VarId], ctx: CtxId) {
        if self.lifted(ctx)
            && operands.iter().all(|&v| !self.b.is_vector(v))
            && let Some(first) = operands.first_mut()
        {
            *first = self.force(*first, ctx);
        }
    }

    /// The variables of `rep` laid out as `ir::layout(ty, lifted(ctx))`, for values that must
    /// have one fixed layout: host-conditional arms, loop state, printed values, results.
    fn canonical(&mut self, rep: &Rep, ty: &Type, ctx: CtxId) -> Vec<VarId> {
        let forced = self.force_rep(rep, ctx);
        let mut out = Vec::new();
        seqs::push_vars(&forced, &mut out);
        let want = ir::layout(ty, self.lifted(ctx));
        if want.len() != out.len() {
            self.b.record_bug(format!(
                "a value of type {ty} has {} variables, not {}",
                out.len(),
                want.len()
            ));
        }
        out
    }

    fn fresh_like(&mut self, vars: &[VarId]) -> Vec<VarId> {
        vars.iter()
            .map(|&v| {
                let info = self.b.vars[v as usize].clone();
                self.b.var(&info.name, info.ty)
            })
            .collect()
    }

    /// Runs `f` in a nested block; work memoised inside does not outlive it.
    fn nested_block(
        &mut self,
        f: impl FnOnce(&mut Self) -> FlattenResult<Vec<VarId>>,
    ) -> FlattenResult<Block> {
        let memo = self.memo.clone();
        let mut result = Ok(());
        let block = {
            let this = &mut *self;
            let outer = this.b.take_stmts();
            let results = match f(this) {
                Ok(results) => results,
                Err(e) => {
                    result = Err(e);
                    vec![]
                }
            };
            let stmts = this.b.take_stmts();
            this.b.set_stmts(outer);
            Block { stmts, results }
        };
        self.memo = memo;
        result.map(|()| block)
    }

    fn schedule(&mut self, schedule: ir::Schedule) {
        self.schedules.push((self.b.span, schedule));
    }

    fn unsupported(&self, span: TextRange, what: &str) -> Diagnostic {
        Diagnostic::new(Code::UnsupportedOnDevice, span, format!("the cpu executor cannot run {what} yet"))
            .with_help("run it with `--backend interp`")
    }

    // --- expressions -------------------------------------------------------------------------

    fn expr(&mut self, id: ExprId, ctx: CtxId) -> FlattenResult<Rep> {
        (self.interrupt)();
        weft_core::ensure_stack(|| self.expr_inner(id, ctx))
    }

    fn expr_inner(&mut self, id: ExprId, ctx: CtxId) -> FlattenResult<Rep> {
        let func = self.func();
        let outer_span = self.b.span;
        self.b.span = func.span(id);
        let result = self.expr_kind(func, id, ctx);
        self.b.span = outer_span;
        result
    }

    fn expr_kind(&mut self, func: &'c core::Function, id: ExprId, ctx: CtxId) -> FlattenResult<Rep> {
        Ok(match func.expr(id) {
            Expr::Literal(literal) => Rep::Leaf(self.b.literal(*literal)),
            Expr::Var(v) => self.read_var(*v, ctx),
            Expr::Tuple(items) => {
                Rep::Tuple(items.iter().map(|&e| self.expr(e, ctx)).collect::<FlattenResult<_>>()?)
            }
            Expr::List(items) => {
                let elem_ty = match func.ty(id) {
                    Type::Seq(elem) => (**elem).clone(),
                    _ => Type::Tuple(vec![]),
                };
                let items = items.iter().map(|&e| self.expr(e, ctx)).collect::<FlattenResult<Vec<_>>>()?;
                self.list(items, &elem_ty, ctx)?
            }
            Expr::TupleGet(tuple, index) => match self.expr(*tuple, ctx)? {
                Rep::Tuple(mut items) if (*index as usize) < items.len() => {
                    items.swap_remove(*index as usize)
                }
                _ => return Err(self.bug("a tuple index of a non-tuple")),
            },
            Expr::Index { seq, index, in_bounds } => {
                let seq =
                    self.expr(*seq, ctx)?.seq().ok_or_else(|| self.bug("an index of a non-sequence"))?;
                let index = self.expr(*index, ctx)?.leaf().ok_or_else(|| self.bug("a non-scalar index"))?;
                if *in_bounds && !self.options.keep_index_checks {
                    self.index_in_bounds(&seq, index, ctx)
                } else {
                    self.index(&seq, index, ctx, "")?
                }
            }
            Expr::Slice { seq, start, stop, step } => {
                let seq = self.expr(*seq, ctx)?.seq().ok_or_else(|| self.bug("a slice of a non-sequence"))?;
                let part = |me: &mut Self, e: &Option<ExprId>| -> FlattenResult<Option<VarId>> {
                    e.map(|e| me.expr(e, ctx).map(|r| r.leaf())).transpose().map(Option::flatten)
                };
                let start = part(self, start)?;
                let stop = part(self, stop)?;
                let step = part(self, step)?;
                self.slice(&seq, start, stop, step, ctx)?
            }
            Expr::Unary { op, operand } => {
                let operand =
                    self.expr(*operand, ctx)?.leaf().ok_or_else(|| self.bug("a unary op on a non-scalar"))?;
                Rep::Leaf(self.b.emit("t", Op::Unary(*op, operand)))
            }
            Expr::Binary { op, lhs, rhs } => {
                let ty = func.ty(*lhs).clone();
                let a = self.expr(*lhs, ctx)?;
                let b = self.expr(*rhs, ctx)?;
                Rep::Leaf(self.binary(*op, &ty, &a, &b, ctx)?)
            }
            Expr::And(a, b) => self.short_circuit(func, *a, *b, true, ctx)?,
            Expr::Or(a, b) => self.short_circuit(func, *a, *b, false, ctx)?,
            Expr::If { cond, then, otherwise } => {
                self.conditional(func, id, *cond, *then, *otherwise, ctx)?
            }
            Expr::Let { pattern, value, body } => {
                let value = self.expr(*value, ctx)?;
                self.bind(pattern, value, ctx)?;
                self.expr(*body, ctx)?
            }
            Expr::Call { func: callee, args } => {
                let args =
                    args.iter().map(|&a| Ok((self.expr(a, ctx)?, ctx))).collect::<FlattenResult<Vec<_>>>()?;
                if self.recursive[*callee as usize] {
                    self.call_lifted(*callee, args, ctx)?
                } else {
                    self.inline(*callee, args, ctx)?
                }
            }
            Expr::Prim { prim, args, funcs } => match self.sequential_reduction(func, id, ctx)? {
                Some(reduced) => reduced,
                None => self.prim(func, id, prim, args, funcs, ctx)?,
            },
            Expr::ForLoop { state, init, elem, seq, body } if self.lifted(ctx) => {
                self.lifted_for_loop(func, id, state, *init, elem, *seq, *body, ctx)?
            }
            Expr::ForLoop { state, init, elem, seq, body } => {
                self.for_loop(func, id, state, *init, elem, *seq, *body)?
            }
            Expr::WhileLoop { state, init, cond, body } if self.lifted(ctx) => {
                self.lifted_while_loop(func, id, state, *init, *cond, *body, ctx)?
            }
            Expr::WhileLoop { state, init, cond, body } => {
                self.while_loop(func, id, state, *init, *cond, *body)?
            }
            Expr::Assert { cond, message } => {
                let cond = self.expr(*cond, ctx)?.leaf().ok_or_else(|| self.bug("a non-scalar assert"))?;
                let mut operands = [cond];
                self.guard(&mut operands, ctx);
                self.b.check(Check::Assert { cond: operands[0], message: message.clone() });
                Rep::Tuple(vec![])
            }
            Expr::Print { sink, args } => {
                let mut items = Vec::new();
                for arg in args {
                    items.push(match arg {
                        core::PrintArg::Text(text) => PrintItem::Text(text.clone()),
                        core::PrintArg::Value(e) => {
                            let rep = self.expr(*e, ctx)?;
                            let ty = func.ty(*e).clone();
                            PrintItem::Value { vars: self.canonical(&rep, &ty, ctx), ty }
                        }
                    });
                }
                self.b.push(StmtKind::Print { sink: *sink, items });
                Rep::Tuple(vec![])
            }
        })
    }

    fn bug(&self, what: &str) -> Diagnostic {
        Diagnostic::new(Code::InternalError, self.b.span, format!("internal error: flattening met {what}"))
    }

    fn read_var(&mut self, var: core::VarId, ctx: CtxId) -> Rep {
        let frame = self.frame();
        let key = (frame.id, var, ctx);
        let Some((rep, from)) = frame.vars[var as usize].clone() else {
            self.b.record_bug(format!("variable {var} read before it is bound"));
            return Rep::Tuple(vec![]);
        };
        if from == ctx {
            return rep;
        }
        if let Some(rep) = self.memo.lifted.get(&key) {
            return rep.clone();
        }
        let lifted = self.lift(&rep, from, ctx);
        self.memo.lifted.insert(key, lifted.clone());
        lifted
    }

    fn bind(&mut self, pattern: &Pattern, value: Rep, ctx: CtxId) -> FlattenResult<()> {
        match (pattern, value) {
            (Pattern::Wildcard, _) => {}
            (Pattern::Var(v), value) => {
                let frame = self.frames.last_mut().expect("a frame is active");
                frame.vars[*v as usize] = Some((value, ctx));
            }
            (Pattern::Tuple(patterns), Rep::Tuple(values)) if patterns.len() == values.len() => {
                for (p, v) in patterns.iter().zip(values) {
                    self.bind(p, v, ctx)?;
                }
            }
            _ => return Err(self.bug("a tuple pattern bound to a non-tuple")),
        }
        Ok(())
    }

    /// Flattens `callee`'s body in `ctx` with its parameters bound to `args` (each a value of
    /// the given context, an ancestor of `ctx` or `ctx` itself).
    fn inline(&mut self, callee: core::FuncId, args: Vec<(Rep, CtxId)>, ctx: CtxId) -> FlattenResult<Rep> {
        let function = self.core.function(callee);
        let mut frame = Frame::new(function, self.next_frame);
        self.next_frame += 1;
        for (&param, arg) in function.params.iter().zip(args) {
            frame.vars[param as usize] = Some(arg);
        }
        self.frames.push(frame);
        let result = self.expr(function.body, ctx);
        self.frames.pop();
        result
    }

    /// `a and b` / `a or b`: a `select` when `b` cannot fail, else a conditional, so that `b`
    /// runs only where Python would run it.
    fn short_circuit(
        &mut self,
        func: &'c core::Function,
        a: ExprId,
        b: ExprId,
        and: bool,
        ctx: CtxId,
    ) -> FlattenResult<Rep> {
        let x = self.expr(a, ctx)?.leaf().ok_or_else(|| self.bug("a non-scalar `and`"))?;
        if !self.b.is_vector(x) {
            let then_value = if and { None } else { Some(true) };
            let else_value = if and { Some(false) } else { None };
            return self.host_if_values(x, then_value, else_value, b, ctx);
        }
        if is_safe(func, b) {
            let y = self.expr(b, ctx)?.leaf().ok_or_else(|| self.bug("a non-scalar `and`"))?;
            return Ok(Rep::Leaf(if and {
                let f = self.b.bool(false);
                self.b.select(x, y, f)
            } else {
                let t = self.b.bool(true);
                self.b.select(x, t, y)
            }));
        }
        let constant = self.b.bool(!and);
        let arms = if and {
            (Arm::Expr(b), Arm::Value(Rep::Leaf(constant)))
        } else {
            (Arm::Value(Rep::Leaf(constant)), Arm::Expr(b))
        };
        self.split(x, arms.0, arms.1, &Type::Scalar(Scalar::Bool), ctx)
    }

    /// A host `if` on a uniform condition for `and`/`or`: the arm given as `None` evaluates `b`.
    fn host_if_values(
        &mut self,
        cond: VarId,
        then_value: Option<bool>,
        else_value: Option<bool>,
        b: ExprId,
        ctx: CtxId,
    ) -> FlattenResult<Rep> {
        let ty = Type::Scalar(Scalar::Bool);
        let arm = |me: &mut Self, value: Option<bool>| -> FlattenResult<Block> {
            me.nested_block(|me| {
                let rep = match value {
                    Some(v) => Rep::Leaf(me.b.bool(v)),
                    None => me.expr(b, ctx)?,
                };
                Ok(me.canonical(&rep, &ty, ctx))
            })
        };
        let then = arm(self, then_value)?;
        let otherwise = arm(self, else_value)?;
        let dests = self.fresh_like(&then.results);
        self.b.push(StmtKind::If { cond, then, otherwise, dests: dests.clone() });
        Ok(Rep::Leaf(dests[0]))
    }

    fn conditional(
        &mut self,
        func: &'c core::Function,
        id: ExprId,
        cond: ExprId,
        then: ExprId,
        otherwise: ExprId,
        ctx: CtxId,
    ) -> FlattenResult<Rep> {
        let ty = func.ty(id).clone();
        let c = self.expr(cond, ctx)?.leaf().ok_or_else(|| self.bug("a non-scalar condition"))?;
        if !self.b.is_vector(c) {
            let then = self.nested_block(|me| {
                let rep = me.expr(then, ctx)?;
                Ok(me.canonical(&rep, &ty, ctx))
            })?;
            let otherwise = self.nested_block(|me| {
                let rep = me.expr(otherwise, ctx)?;
                Ok(me.canonical(&rep, &ty, ctx))
            })?;
            let dests = self.fresh_like(&then.results);
            self.b.push(StmtKind::If { cond: c, then, otherwise, dests: dests.clone() });
            return Ok(seqs::from_layout(&ty, &mut dests.into_iter()));
        }
        if is_scalar_data(&ty) && is_safe(func, then) && is_safe(func, otherwise) {
            let a = self.expr(then, ctx)?;
            let b = self.expr(otherwise, ctx)?;
            return Ok(self.select_rep(c, &a, &b));
        }
        self.split(c, Arm::Expr(then), Arm::Expr(otherwise), &ty, ctx)
    }

    fn select_rep(&mut self, cond: VarId, a: &Rep, b: &Rep) -> Rep {
        match (a, b) {
            (Rep::Leaf(x), Rep::Leaf(y)) => Rep::Leaf(self.b.select(cond, *x, *y)),
            (Rep::Tuple(xs), Rep::Tuple(ys)) => {
                Rep::Tuple(xs.iter().zip(ys).map(|(x, y)| self.select_rep(cond, x, y)).collect())
            }
            _ => {
                self.b.record_bug("select of sequences".to_string());
                a.clone()
            }
        }
    }

    /// A conditional on a per-element condition: each arm runs in its own context holding
    /// only the elements that take it, and the results are merged back in element order.
    fn split(&mut self, cond: VarId, then: Arm, otherwise: Arm, ty: &Type, ctx: CtxId) -> FlattenResult<Rep> {
        let size = self.size(ctx);
        let iota = self.b.emit("iota", Op::Iota { len: size });
        let not_cond = self.b.emit("not", Op::Unary(UnaryOp::Not, cond));
        let mut results = Vec::new();
        let mut indexes = Vec::new();
        for (flags, arm) in [(cond, then), (not_cond, otherwise)] {
            let index = self.b.emit("taken", Op::Pack { src: iota, flags, counts: None });
            let arm_size = self.b.length(index);
            let arm_ctx = self.subset_ctx(ctx, arm_size, index);
            let rep = match arm {
                Arm::Expr(e) => self.expr(e, arm_ctx)?,
                Arm::Value(rep) => self.lift(&rep, ctx, arm_ctx),
            };
            let rep = self.force_rep(&rep, arm_ctx);
            results.push(rep);
            indexes.push(index);
        }
        let otherwise = results.pop().expect("two arms");
        let then = results.pop().expect("two arms");
        Ok(self.merge(ty, &then, &otherwise, indexes[0], indexes[1], size))
    }
}

/// An arm of a split conditional: an expression to flatten, or a value already computed.
enum Arm {
    Expr(ExprId),
    Value(Rep),
}

/// Whether a type is a scalar or a tuple of them (what `select` can merge).
fn is_scalar_data(ty: &Type) -> bool {
    match ty {
        Type::Scalar(_) => true,
        Type::Tuple(items) => items.iter().all(is_scalar_data),
        _ => false,
    }
}

/// Whether evaluating `id` can neither fail nor do much work: literals, variables, tuples
/// and arithmetic that cannot fail. Such an arm may run for elements that do not take it.
fn is_safe(func: &core::Function, id: ExprId) -> bool {
    let safe = |e: ExprId| is_safe(func, e);
    match func.expr(id) {
        Expr::Literal(_) | Expr::Var(_) => true,
        Expr::Tuple(items) => items.iter().all(|&e| safe(e)),
        Expr::TupleGet(t, _) => safe(*t),
        Expr::Unary { operand, .. } => safe(*operand),
        Expr::Binary { op, lhs, rhs } => {
            let may_fail = matches!(func.ty(*lhs), Type::Scalar(s) if may_fail(*op, *s));
            let scalar = matches!(func.ty(*lhs), Type::Scalar(_));
            !may_fail && scalar && safe(*lhs) && safe(*rhs)
        }
        Expr::And(a, b) | Expr::Or(a, b) => safe(*a) && safe(*b),
        Expr::If { cond, then, otherwise } => safe(*cond) && safe(*then) && safe(*otherwise),
        Expr::Let { value, body, .. } => safe(*value) && safe(*body),
        Expr::Prim { prim, args, funcs } => {
            funcs.is_empty()
                && (is_scalar_math(prim) || matches!(prim, core::Prim::Len))
                && args.iter().all(|&a| safe(a))
                && args
                    .iter()
                    .all(|&a| !matches!(func.ty(a), Type::Seq(_)) || matches!(prim, core::Prim::Len))
        }
        _ => false,
    }
}

/// The prelude's functions from numbers to numbers that cannot fail.
fn is_scalar_math(prim: &core::Prim) -> bool {
    use core::Prim::*;
    matches!(
        prim,
        Abs | Sqrt | Exp | Log | Sin | Cos | Tan | Atan2 | Erf | Floor | Ceil | Min2 | Max2 | Cast(_)
    )
}

/// Whether `op` on operands of type `s` can stop the program: integer division and modulo by
/// zero, negative integer exponents and shift counts.
fn may_fail(op: BinaryOp, s: Scalar) -> bool {
    use BinaryOp::*;
    s.is_int() && matches!(op, FloorDiv | Mod | Div | Pow | Shl | Shr)
}

/// The functions that can call themselves (through any chain of calls and function arguments).
fn recursive_functions(program: &core::Program) -> Vec<bool> {
    let n = program.functions.len();
    let callees: Vec<Vec<core::FuncId>> = program
        .functions
        .iter()
        .map(|f| {
            let mut out = Vec::new();
            for e in &f.exprs {
                match e {
                    Expr::Call { func, .. } => out.push(*func),
                    Expr::Prim { funcs, .. } => out.extend(funcs.iter().map(|c| c.func)),
                    _ => {}
                }
            }
            out
        })
        .collect();
    (0..n)
        .map(|start| {
            let mut seen = vec![false; n];
            let mut stack: Vec<core::FuncId> = callees[start].clone();
            while let Some(f) = stack.pop() {
                if f as usize == start {
                    return true;
                }
                if !std::mem::replace(&mut seen[f as usize], true) {
                    stack.extend(&callees[f as usize]);
                }
            }
            false
        })
        .collect()
}

/// Literal helpers used by several rules.
fn literal_of(elem: Scalar, value: i64) -> Literal {
    match elem {
        Scalar::Bool => Literal::Bool(value != 0),
        Scalar::I32 | Scalar::I64 => Literal::Int(value, elem),
        Scalar::F32 | Scalar::F64 => Literal::Float(value as f64, elem),
    }
}
