//! The segmented IR: flat, typed, first-order vector code with host control flow.
//!
//! This is what flattening (`flatten`) produces and what the CPU executor (`exec`) and, later,
//! the GPU code generator consume. Every variable holds either one host scalar or one flat
//! vector of scalars; there are no tuples, no nested sequences and no function values here:
//! - a tuple is one variable per field (structure of arrays);
//! - a sequence is a segment descriptor (per-segment `offsets` and `lengths`, two `i32`
//!   vectors) plus its elements, laid out as a flat collection;
//! - a value computed once per element of a parallel context is a vector with one entry per
//!   element ("lifted"), and a value that is the same for every element stays a host scalar.
//!
//! Segments need not be contiguous or in order: `offsets[s]` says where segment `s` starts
//! in the element collection. That is what lets a comprehension share a free sequence between
//! its elements instead of copying it per element (Lippmeier et al., "Work efficient
//! higher-order vectorisation"): replicating a sequence copies its descriptor, never its data.
//!
//! Element-wise ops accept any mix of scalar and vector operands; scalars are broadcast, and
//! the result is a vector if any operand is one (all vector operands have the same length).
//! Every statement carries the source span that run-time errors and fusion views point at.
//! `check` verifies a program's typing after each pass that builds or rewrites it.

use std::fmt::{self, Write as _};

use rowan::TextRange;

use weft_core::types::{Scalar, Type};
use weft_core::{BinaryOp, Literal, Sink, UnaryOp};

pub type VarId = u32;
pub type FuncId = u32;

/// Whether a variable holds one host scalar or a flat vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Scalar,
    Vector,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IrType {
    pub kind: Kind,
    pub elem: Scalar,
}

impl IrType {
    pub fn scalar(elem: Scalar) -> IrType {
        IrType { kind: Kind::Scalar, elem }
    }

    pub fn vector(elem: Scalar) -> IrType {
        IrType { kind: Kind::Vector, elem }
    }

    pub fn is_vector(self) -> bool {
        self.kind == Kind::Vector
    }
}

impl fmt::Display for IrType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            Kind::Scalar => write!(f, "{}", self.elem.name()),
            Kind::Vector => write!(f, "[{}]", self.elem.name()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Program {
    pub functions: Vec<Function>,
    /// The function that runs the top-level statements (no parameters, no results).
    pub main: FuncId,
    /// How each loop and recursive call inside parallel code runs, by source span: the record
    /// the fusion views show.
    pub schedules: Vec<(TextRange, Schedule)>,
}

/// How a nested construct runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Schedule {
    /// A loop with scalar state: sequentially inside each element (`ElementLoop`), Copperhead's
    /// sequential schedule.
    SequentialInEachElement,
    /// A loop with parallel work: host rounds, each over the elements still running, flat.
    RoundsOverRunningElements,
    /// A recursive call: one call of the lifted function per recursion level, for all of the
    /// level's elements, flat.
    OneCallPerLevel,
    /// A recursive call from parallel code: one call per level, flat, for a piece of the
    /// elements at a time (`flatten::Options::piece_size`).
    OneCallPerLevelPiecewise,
    /// A reduction of a scalar comprehension: a loop inside each element that reads the items
    /// where they are (`flatten::Options::inner`, Copperhead's schedule).
    SequentialReduction,
    /// A reduction inside parallel code, flat: segmented over every element's items.
    SegmentedReduction,
    /// Both of the above, and a host `If` on a cost estimate from the lengths, made at run
    /// time, that picks one (`flatten::loops::sequential_pays`).
    GuardedReduction,
}

impl Schedule {
    pub fn describe(self) -> &'static str {
        match self {
            Schedule::SequentialInEachElement => "loop, sequential inside each element",
            Schedule::RoundsOverRunningElements => "loop, flat rounds over the elements still running",
            Schedule::OneCallPerLevel => "recursion, flat, one call per level",
            Schedule::OneCallPerLevelPiecewise => "recursion, flat, one call per level, piece by piece",
            Schedule::SequentialReduction => "reduction, sequential inside each element",
            Schedule::SegmentedReduction => "reduction, flat, segmented over the elements",
            Schedule::GuardedReduction => {
                "reduction, sequential inside each element or flat, as a run-time cost estimate picks"
            }
        }
    }
}

impl Program {
    pub fn function(&self, id: FuncId) -> &Function {
        &self.functions[id as usize]
    }

    /// How many statements of each kind the program holds, nested blocks included.
    pub fn op_count(&self) -> usize {
        self.functions.iter().map(|f| f.body.op_count()).sum()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Function {
    /// The core function's name, with `^` appended for a lifted version.
    pub name: String,
    pub params: Vec<VarId>,
    pub vars: Vec<VarInfo>,
    /// Its `results` are the function's results.
    pub body: Block,
}

impl Function {
    pub fn ty(&self, var: VarId) -> IrType {
        self.vars[var as usize].ty
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct VarInfo {
    /// The source name it came from, or a name for what it holds (`lengths`, `flags`).
    pub name: String,
    pub ty: IrType,
}

/// Straight-line statements; `results` are the block's value (an `If` arm's results, a loop
/// body's next state, a function's results).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Block {
    pub stmts: Vec<Stmt>,
    pub results: Vec<VarId>,
}

impl Stmt {
    /// Every variable the statement reads, its nested blocks (an element loop's included) and
    /// their results too.
    pub fn reads(&self, out: &mut Vec<VarId>) {
        match &self.kind {
            StmtKind::Op { op, .. } => out.extend(op.operands()),
            StmtKind::If { cond, then, otherwise, .. } => {
                out.push(*cond);
                then.reads(out);
                otherwise.reads(out);
            }
            StmtKind::While { init, cond, body, .. } => {
                out.extend(init);
                cond.reads(out);
                body.reads(out);
            }
            StmtKind::ElementLoop { len, inputs, shared, init, cond, body, .. } => {
                out.push(*len);
                out.extend(inputs.iter().chain(shared).chain(init));
                cond.reads(out);
                body.reads(out);
            }
            StmtKind::Call { args, .. } => out.extend(args),
            StmtKind::Print { items, .. } => {
                for item in items {
                    if let PrintItem::Value { vars, .. } = item {
                        out.extend(vars);
                    }
                }
            }
            StmtKind::Kernel(kernel) => out.extend(kernel.inputs()),
        }
    }
}

impl Stmt {
    /// Calls `visit` on this statement, then on every statement nested in it: its blocks'
    /// and a kernel's body.
    pub fn for_each_mut(&mut self, visit: &mut dyn FnMut(&mut Stmt)) {
        visit(self);
        match &mut self.kind {
            StmtKind::If { then, otherwise, .. } => {
                then.for_each_stmt_mut(visit);
                otherwise.for_each_stmt_mut(visit);
            }
            StmtKind::While { cond, body, .. } | StmtKind::ElementLoop { cond, body, .. } => {
                cond.for_each_stmt_mut(visit);
                body.for_each_stmt_mut(visit);
            }
            StmtKind::Kernel(kernel) => kernel.body.iter_mut().for_each(|stmt| stmt.for_each_mut(visit)),
            StmtKind::Op { .. } | StmtKind::Call { .. } | StmtKind::Print { .. } => {}
        }
    }
}

impl Stmt {
    fn spans(&self, out: &mut Vec<TextRange>) {
        out.push(self.span);
        match &self.kind {
            StmtKind::If { then, otherwise, .. } => {
                then.spans(out);
                otherwise.spans(out);
            }
            StmtKind::While { cond, body, .. } | StmtKind::ElementLoop { cond, body, .. } => {
                cond.spans(out);
                body.spans(out);
            }
            StmtKind::Kernel(kernel) => kernel.body.iter().for_each(|stmt| stmt.spans(out)),
            StmtKind::Op { .. } | StmtKind::Call { .. } | StmtKind::Print { .. } => {}
        }
    }
}

impl Block {
    /// Calls `visit` on every statement of the block, nested ones included (`Stmt::for_each_mut`).
    pub fn for_each_stmt_mut(&mut self, visit: &mut dyn FnMut(&mut Stmt)) {
        self.stmts.iter_mut().for_each(|stmt| stmt.for_each_mut(visit));
    }

    /// Every statement's span, nested statements' included (`Stmt::for_each_mut`'s), in no
    /// particular order.
    pub fn spans(&self, out: &mut Vec<TextRange>) {
        self.stmts.iter().for_each(|stmt| stmt.spans(out));
    }

    /// Every variable the block's statements and results read.
    pub fn reads(&self, out: &mut Vec<VarId>) {
        for stmt in &self.stmts {
            stmt.reads(out);
        }
        out.extend(&self.results);
    }

    fn op_count(&self) -> usize {
        self.stmts
            .iter()
            .map(|s| match &s.kind {
                StmtKind::Op { .. } => 1,
                StmtKind::If { then, otherwise, .. } => 1 + then.op_count() + otherwise.op_count(),
                StmtKind::While { cond, body, .. } | StmtKind::ElementLoop { cond, body, .. } => {
                    1 + cond.op_count() + body.op_count()
                }
                StmtKind::Call { .. } | StmtKind::Print { .. } => 1,
                StmtKind::Kernel(kernel) => kernel.body.len(),
            })
            .sum()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: TextRange,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum StmtKind {
    /// `dest = op(...)`; a check has no destination.
    Op {
        dest: Option<VarId>,
        op: Op,
    },
    /// A host conditional on a scalar `bool`; `dests` take the results of the arm that ran.
    If {
        cond: VarId,
        then: Block,
        otherwise: Block,
        dests: Vec<VarId>,
    },
    /// A host loop: `state = init`, then while `cond` (a block whose one result is a scalar
    /// `bool`, reading `state`) holds, `state = body` (reading `state`). `dests` take the
    /// final state.
    While {
        state: Vec<VarId>,
        init: Vec<VarId>,
        cond: Block,
        body: Block,
        dests: Vec<VarId>,
    },
    /// A loop that each of `len` elements runs on its own, sequentially, inside one
    /// element-wise operation (Copperhead's sequential schedule; one GPU thread's loop). For
    /// element `i`, `params` take its entries of `inputs` (a scalar input is the same for
    /// every element) and `state` its entries of `init`; then while `cond` (one `bool` result)
    /// holds, `state = body`. `dests` (vectors of `len`) take every element's final state.
    /// `cond` and `body` are scalar code that reads only `params`, `state`, its own
    /// variables and, through `gather` with a scalar index, the whole vectors in `shared`
    /// (the elements of the sequences the loop walks).
    ElementLoop {
        len: VarId,
        inputs: Vec<VarId>,
        shared: Vec<VarId>,
        params: Vec<VarId>,
        init: Vec<VarId>,
        state: Vec<VarId>,
        cond: Block,
        body: Block,
        dests: Vec<VarId>,
    },
    Call {
        func: FuncId,
        args: Vec<VarId>,
        dests: Vec<VarId>,
    },
    /// One line of output (the values, separated by spaces, as the interpreter prints them),
    /// or a chart of the values, as the host draws it.
    Print {
        sink: Sink,
        items: Vec<PrintItem>,
    },
    /// Ops the fusion pass (`fuse`) chose to run as one kernel.
    Kernel(Box<FusedKernel>),
}

/// A fused kernel: `body` holds its ops in program order, all over one index space
/// (element-wise ops, checks, `iota`, `replicate`, and reductions of what they compute).
/// `outputs` are the variables the body defines that are read after it; the others live only
/// inside the kernel. An executor may also run the body one op at a time.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FusedKernel {
    /// The plan's stable name for it (`k3_map_reduce`).
    pub name: String,
    pub body: Vec<Stmt>,
    pub outputs: Vec<VarId>,
}

impl FusedKernel {
    /// The variables the body defines.
    pub fn defined(&self) -> Vec<VarId> {
        self.body
            .iter()
            .filter_map(|s| match &s.kind {
                StmtKind::Op { dest, .. } => *dest,
                _ => None,
            })
            .collect()
    }

    /// The variables the body reads that it does not define, in order of first use.
    pub fn inputs(&self) -> Vec<VarId> {
        let defined = self.defined();
        let mut inputs = Vec::new();
        for stmt in &self.body {
            stmt.reads(&mut inputs);
        }
        let mut seen = std::collections::HashSet::new();
        inputs.retain(|v| !defined.contains(v) && seen.insert(*v));
        inputs
    }

    /// The position of the kernel's scan (or segmented reduction or scan), if it has one.
    pub fn scan_position(&self) -> Option<usize> {
        self.body.iter().position(|s| {
            matches!(
                &s.kind,
                StmtKind::Op { op: Op::Scan { .. } | Op::SegReduce { .. } | Op::SegScan { .. }, .. }
            )
        })
    }

    /// A kernel whose scan (or segmented reduction or scan) takes its input from the other
    /// members: the scan's position, and the producer (those other members, writing only the
    /// scan's source). Executors run the producer inside the scan's first pass.
    pub fn split_scan(&self) -> Option<(usize, FusedKernel)> {
        let at = self.scan_position()?;
        let StmtKind::Op {
            op: Op::Scan { src, .. } | Op::SegReduce { src, .. } | Op::SegScan { src, .. },
            ..
        } = &self.body[at].kind
        else {
            return None;
        };
        let body = self.body.iter().enumerate().filter(|(k, _)| *k != at).map(|(_, s)| s.clone()).collect();
        Some((at, FusedKernel { name: self.name.clone(), body, outputs: vec![*src] }))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PrintItem {
    Text(String),
    /// A host value of core type `ty`, laid out as `layout` describes for a single value.
    Value {
        ty: Type,
        vars: Vec<VarId>,
    },
}

/// Reductions and scans with a built-in associative operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Add,
    Mul,
    Min,
    Max,
    /// Logical on `bool`, bitwise on integers.
    And,
    Or,
    Xor,
}

impl ReduceOp {
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Add => "add",
            ReduceOp::Mul => "mul",
            ReduceOp::Min => "min",
            ReduceOp::Max => "max",
            ReduceOp::And => "and",
            ReduceOp::Or => "or",
            ReduceOp::Xor => "xor",
        }
    }
}

/// Scalar functions of the prelude, applied element-wise with the interpreter's semantics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MathFn {
    Abs,
    Sqrt,
    Exp,
    Log,
    Sin,
    Cos,
    Tan,
    Erf,
    Floor,
    Ceil,
    Atan2,
    Pow,
    /// `min(a, b)` / `max(a, b)`: the interpreter's `total_cmp` order.
    Min,
    Max,
}

impl MathFn {
    pub fn name(self) -> &'static str {
        use MathFn::*;
        match self {
            Abs => "abs",
            Sqrt => "sqrt",
            Exp => "exp",
            Log => "log",
            Sin => "sin",
            Cos => "cos",
            Tan => "tan",
            Erf => "erf",
            Floor => "floor",
            Ceil => "ceil",
            Atan2 => "atan2",
            Pow => "pow",
            Min => "min",
            Max => "max",
        }
    }

    pub fn arity(self) -> usize {
        match self {
            MathFn::Atan2 | MathFn::Pow | MathFn::Min | MathFn::Max => 2,
            _ => 1,
        }
    }
}

/// A segment descriptor: segment `s` is `elems[offsets[s] .. offsets[s] + lengths[s]]`.
/// Both are `i32` vectors of one length, the number of segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Segs {
    pub offsets: VarId,
    pub lengths: VarId,
}

/// What a run-time check verifies, element-wise over its operands. A failure stops the
/// program with the code and message the interpreter gives, at the statement's span.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Check {
    /// `0 <= index < len` (E0400), where `index` has negative values already counted from the
    /// end and `written` is the index as the program gave it, which the message shows:
    /// "{what}index {written} is out of range for a sequence of length {len}" (`what` is
    /// `""` for `xs[i]`, `"gather "` or `"scatter "`).
    IndexInRange { index: VarId, len: VarId, written: VarId, what: String },
    /// `a == b` for two lengths (E0403), with the interpreter's message for the operation.
    LengthsEqual { a: VarId, b: VarId, what: LengthCheck },
    /// `len > 0` (E0404): `what` is the function (`min`, `argmax`, ...).
    NonEmpty { len: VarId, what: String },
    /// `cond` holds (E0402).
    Assert { cond: VarId, message: Option<String> },
    /// `n >= 0` (E0406), for a count such as `replicate`'s: "{what} count {n} is negative".
    NonNegative { n: VarId, what: String },
    /// `step != 0` (E0406): "{what} step cannot be zero".
    NonZeroStep { step: VarId, what: String },
    /// Each segment of `index` is a permutation of `0..lengths[s]` (E0405).
    Permutation { index: VarId, segs: Segs },
    /// `lo < hi` (E0406): "random_i32 needs lo < hi, got lo = {lo} and hi = {hi}".
    RandomRange { lo: VarId, hi: VarId },
    /// `partition` (E0403): no length is negative ("partition length {n} is negative"), then
    /// each segment's `sums == totals` ("partition lengths sum to {sum}, but the sequence has
    /// {total} elements").
    PartitionLengths { lengths: VarId, sums: VarId, totals: VarId },
}

/// Which operation a length check belongs to, for its message.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum LengthCheck {
    /// "{name} needs sequences of equal length, got lengths {a} and {b}" (`map`, `zip`).
    Equal(String),
    /// "scatter has {a} values but {b} indexes".
    ScatterValues,
    /// "permute of {a} elements got {b} indexes".
    PermuteIndexes,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Op {
    /// A host scalar constant.
    Const(Literal),
    // --- element-wise -----------------------------------------------------------------
    /// Integer `//` and `%` by zero fail with E0401, as in the interpreter.
    Unary(UnaryOp, VarId),
    Binary(BinaryOp, VarId, VarId),
    /// `cond ? a : b`.
    Select(VarId, VarId, VarId),
    Cast(Scalar, VarId),
    Math(MathFn, Vec<VarId>),
    // --- building vectors -------------------------------------------------------------
    /// `len` copies of a scalar (NESL `dist`).
    Replicate {
        value: VarId,
        len: VarId,
    },
    /// `[0, 1, ..., len - 1]` as `i32`.
    Iota {
        len: VarId,
    },
    /// For each element of the compact layout of `lengths`, its index within its segment.
    /// `within` as for `SegIds`.
    SegIota {
        lengths: VarId,
        within: Vec<VarId>,
    },
    /// For each element of the compact layout of `lengths`, the number of its segment.
    ///
    /// `within`, where not empty, holds the sizes (`i32` scalars) of the collections the
    /// segments lie in, each once for every time the segments may overlap there (a size
    /// twice where each element lies in two segments): the lengths add up to at most their
    /// sum, so an executor may allocate the layout by that bound and keep its exact size where
    /// it computed it (the GPU's device counts). Sizes, not the collections, so that the layout waits for
    /// no kernel that computes their elements. The CPU executor checks the bound.
    SegIds {
        lengths: VarId,
        within: Vec<VarId>,
    },
    /// The vectors (or scalars, as one element each) one after another.
    Concat(Vec<VarId>),
    /// `parts[0][0], parts[1][0], ..., parts[0][1], parts[1][1], ...`: each part is a vector
    /// of one length or a scalar broadcast to it.
    Interleave {
        parts: Vec<VarId>,
        len: VarId,
    },
    /// Element `index` of `random_f32(_, seed)`, element-wise (`interp::data`'s generator is
    /// a pure function of `(seed, index)`).
    RandomF32 {
        seed: VarId,
        index: VarId,
    },
    /// Element `index` of `random_i32(_, lo, hi, seed)`, element-wise; `lo < hi` is checked
    /// before.
    RandomI32 {
        lo: VarId,
        hi: VarId,
        seed: VarId,
        index: VarId,
    },
    /// One field of a loaded file, flattened: `field` picks a leaf of the layout of `ty`
    /// (the whole file's type) in the order `layout` lists them.
    Load {
        path: String,
        csv: bool,
        ty: Type,
        field: usize,
    },
    // --- moving data --------------------------------------------------------------------
    /// The number of elements of a vector, as `i32`.
    Length(VarId),
    /// `src[index]` for each index (a scalar index gives a scalar). Indexes are in range:
    /// user-facing bounds checks are separate `Check`s.
    Gather {
        src: VarId,
        index: VarId,
    },
    /// `first[index[i]]` where `from_first[i]`, else `second[index[i]]`: a gather from two
    /// sources, reading only the one picked. A segmented concatenation reads its operands'
    /// elements with it, instead of a gather from their concatenation written out first.
    GatherEither {
        first: VarId,
        second: VarId,
        from_first: VarId,
        index: VarId,
    },
    /// A copy of `dst` with `dst[index[i]] = src[i]`; for duplicates one write wins.
    /// `distinct`: the flattener built `index` with no value twice (a `pack` of an `iota`, as
    /// where a split conditional merges its arms), so no write needs to win over another.
    Scatter {
        dst: VarId,
        index: VarId,
        src: VarId,
        distinct: bool,
    },
    /// A copy of `dst` with `src` written over `dst[at..at + len(src)]`, which lies in `dst`. A
    /// piecewise recursion writes each piece's results into the whole result with it: an
    /// executor writes in place where nobody else holds `dst`, so each element is written once.
    WriteAt {
        dst: VarId,
        at: VarId,
        src: VarId,
    },
    /// The elements whose flag is true, in order. `counts`, where the flattener has it, is the
    /// inclusive sum of the flags as `i32` (a filter's, which also gives its segments' counts):
    /// an executor may take each kept element's place from it instead of summing the flags
    /// again.
    Pack {
        src: VarId,
        flags: VarId,
        counts: Option<VarId>,
    },
    // --- reductions and scans ------------------------------------------------------------
    /// The whole vector to one scalar; the identity on empty input.
    Reduce {
        op: ReduceOp,
        src: VarId,
    },
    /// One result per segment.
    SegReduce {
        op: ReduceOp,
        src: VarId,
        segs: Segs,
    },
    /// The position within each segment of its first smallest (`max == false`) or largest
    /// element, in `total_cmp` order. Segments are non-empty (checked before).
    SegArgExtreme {
        max: bool,
        src: VarId,
        segs: Segs,
    },
    /// Inclusive or exclusive (starting from `init`, a scalar) scan of the whole vector.
    Scan {
        op: ReduceOp,
        src: VarId,
        init: Option<VarId>,
    },
    /// A scan per segment; the result is in the compact layout of `segs.lengths`.
    SegScan {
        op: ReduceOp,
        src: VarId,
        init: Option<VarId>,
        segs: Segs,
    },
    /// For each segment, the positions (into the key vectors) of its elements in stable
    /// lexicographic order of the keys (floats in `total_cmp` order), in the compact layout.
    SegSortPerm {
        keys: Vec<VarId>,
        segs: Segs,
    },
    /// Fails as the check says, or does nothing; has no destination.
    Check(Check),
}

impl Op {
    /// Whether the op computes each element from the same elements of its operands alone:
    /// arithmetic, selects, casts, math and the random generators.
    pub fn is_element_wise(&self) -> bool {
        matches!(
            self,
            Op::Unary(..)
                | Op::Binary(..)
                | Op::Select(..)
                | Op::Cast(..)
                | Op::Math(..)
                | Op::RandomF32 { .. }
                | Op::RandomI32 { .. }
        )
    }

    /// Whether operand `k` is read at computed positions (a gather's source), not element by
    /// element: an executor binds it whole rather than one element per thread or chunk.
    pub fn reads_whole(&self, k: usize) -> bool {
        match self {
            Op::Gather { .. } => k == 0,
            Op::GatherEither { .. } => k < 2,
            _ => false,
        }
    }

    /// The variables the op reads, to rename.
    pub fn operands_mut(&mut self) -> Vec<&mut VarId> {
        use Op::*;
        match self {
            Const(_) | Load { .. } => vec![],
            Unary(_, a) | Cast(_, a) | Length(a) | Iota { len: a } => vec![a],
            SegIota { lengths, within } | SegIds { lengths, within } => {
                std::iter::once(lengths).chain(within.iter_mut()).collect()
            }
            Binary(_, a, b) => vec![a, b],
            Select(c, a, b) => vec![c, a, b],
            Math(_, args) | Concat(args) => args.iter_mut().collect(),
            Replicate { value, len } => vec![value, len],
            Interleave { parts, len } => parts.iter_mut().chain([len]).collect(),
            RandomF32 { seed, index } => vec![seed, index],
            RandomI32 { lo, hi, seed, index } => vec![lo, hi, seed, index],
            Gather { src, index } => vec![src, index],
            GatherEither { first, second, from_first, index } => vec![first, second, from_first, index],
            Scatter { dst, index, src, .. } => vec![dst, index, src],
            WriteAt { dst, at, src } => vec![dst, at, src],
            Pack { src, flags, counts } => [src, flags].into_iter().chain(counts.as_mut()).collect(),
            Reduce { src, .. } => vec![src],
            SegReduce { src, segs, .. } | SegArgExtreme { src, segs, .. } => {
                vec![src, &mut segs.offsets, &mut segs.lengths]
            }
            Scan { src, init, .. } => [src].into_iter().chain(init.as_mut()).collect(),
            SegScan { src, init, segs, .. } => {
                [src, &mut segs.offsets, &mut segs.lengths].into_iter().chain(init.as_mut()).collect()
            }
            SegSortPerm { keys, segs } => {
                keys.iter_mut().chain([&mut segs.offsets, &mut segs.lengths]).collect()
            }
            Check(check) => match check {
                self::Check::IndexInRange { index, len, written, .. } => vec![index, len, written],
                self::Check::LengthsEqual { a, b, .. } => vec![a, b],
                self::Check::NonEmpty { len, .. } => vec![len],
                self::Check::Assert { cond, .. } => vec![cond],
                self::Check::NonNegative { n, .. } => vec![n],
                self::Check::NonZeroStep { step, .. } => vec![step],
                self::Check::Permutation { index, segs } => vec![index, &mut segs.offsets, &mut segs.lengths],
                self::Check::PartitionLengths { lengths, sums, totals } => vec![lengths, sums, totals],
                self::Check::RandomRange { lo, hi } => vec![lo, hi],
            },
        }
    }

    /// The variables the op reads.
    pub fn operands(&self) -> Vec<VarId> {
        use Op::*;
        match self {
            Const(_) | Load { .. } => vec![],
            Unary(_, a) | Cast(_, a) | Length(a) | Iota { len: a } => vec![*a],
            SegIota { lengths, within } | SegIds { lengths, within } => {
                std::iter::once(*lengths).chain(within.iter().copied()).collect()
            }
            Binary(_, a, b) => vec![*a, *b],
            Select(c, a, b) => vec![*c, *a, *b],
            Math(_, args) | Concat(args) => args.clone(),
            Replicate { value, len } => vec![*value, *len],
            Interleave { parts, len } => parts.iter().copied().chain([*len]).collect(),
            RandomF32 { seed, index } => vec![*seed, *index],
            RandomI32 { lo, hi, seed, index } => vec![*lo, *hi, *seed, *index],
            Gather { src, index } => vec![*src, *index],
            GatherEither { first, second, from_first, index } => vec![*first, *second, *from_first, *index],
            Scatter { dst, index, src, .. } => vec![*dst, *index, *src],
            WriteAt { dst, at, src } => vec![*dst, *at, *src],
            Pack { src, flags, counts } => [*src, *flags].into_iter().chain(*counts).collect(),
            Reduce { src, .. } => vec![*src],
            SegReduce { src, segs, .. } | SegArgExtreme { src, segs, .. } => {
                vec![*src, segs.offsets, segs.lengths]
            }
            Scan { src, init, .. } => [*src].into_iter().chain(*init).collect(),
            SegScan { src, init, segs, .. } => {
                [*src, segs.offsets, segs.lengths].into_iter().chain(*init).collect()
            }
            SegSortPerm { keys, segs } => keys.iter().copied().chain([segs.offsets, segs.lengths]).collect(),
            Check(check) => check.operands(),
        }
    }

    pub fn name(&self) -> String {
        use Op::*;
        match self {
            Const(_) => "const".into(),
            Unary(op, _) => format!("unary{op:?}").to_lowercase(),
            Binary(op, _, _) => format!("binary{}", op.symbol()),
            Select(..) => "select".into(),
            Cast(s, _) => format!("cast.{}", s.name()),
            Math(f, _) => f.name().into(),
            Replicate { .. } => "replicate".into(),
            Iota { .. } => "iota".into(),
            SegIota { .. } => "seg_iota".into(),
            SegIds { .. } => "seg_ids".into(),
            Concat(_) => "concat".into(),
            Interleave { .. } => "interleave".into(),
            RandomF32 { .. } => "random_f32".into(),
            RandomI32 { .. } => "random_i32".into(),
            Load { csv, field, .. } => format!("load_{}.{field}", if *csv { "csv" } else { "npy" }),
            Length(_) => "length".into(),
            Gather { .. } => "gather".into(),
            GatherEither { .. } => "gather.either".into(),
            Scatter { distinct, .. } => (if *distinct { "scatter.distinct" } else { "scatter" }).into(),
            WriteAt { .. } => "write_at".into(),
            Pack { .. } => "pack".into(),
            Reduce { op, .. } => format!("reduce.{}", op.name()),
            SegReduce { op, .. } => format!("seg_reduce.{}", op.name()),
            SegArgExtreme { max, .. } => (if *max { "seg_argmax" } else { "seg_argmin" }).into(),
            Scan { op, init, .. } => format!("{}scan.{}", if init.is_some() { "ex" } else { "" }, op.name()),
            SegScan { op, init, .. } => {
                format!("seg_{}scan.{}", if init.is_some() { "ex" } else { "" }, op.name())
            }
            SegSortPerm { .. } => "seg_sort_perm".into(),
            Check(check) => format!("check.{}", check.name()),
        }
    }
}

impl Check {
    pub fn operands(&self) -> Vec<VarId> {
        match self {
            Check::IndexInRange { index, len, written, .. } => vec![*index, *len, *written],
            Check::LengthsEqual { a, b, .. } => vec![*a, *b],
            Check::NonEmpty { len, .. } => vec![*len],
            Check::Assert { cond, .. } => vec![*cond],
            Check::NonNegative { n, .. } => vec![*n],
            Check::NonZeroStep { step, .. } => vec![*step],
            Check::Permutation { index, segs } => vec![*index, segs.offsets, segs.lengths],
            Check::PartitionLengths { lengths, sums, totals } => vec![*lengths, *sums, *totals],
            Check::RandomRange { lo, hi } => vec![*lo, *hi],
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Check::IndexInRange { .. } => "index_in_range",
            Check::LengthsEqual { .. } => "lengths_equal",
            Check::NonEmpty { .. } => "non_empty",
            Check::Assert { .. } => "assert",
            Check::NonNegative { .. } => "non_negative",
            Check::NonZeroStep { .. } => "non_zero_step",
            Check::Permutation { .. } => "permutation",
            Check::PartitionLengths { .. } => "partition_lengths",
            Check::RandomRange { .. } => "random_range",
        }
    }
}

/// How a value of a core type is spread over IR variables, in order.
///
/// A *single* value (`many == false`, a host value): a scalar is one scalar variable; a tuple
/// is its fields' layouts in order; a sequence is `offset` (scalar `i32`), `length` (scalar
/// `i32`), then its elements as a collection. A *collection* of values (`many == true`): a
/// scalar is one vector; a tuple is its fields' collections; a sequence is `offsets` and
/// `lengths` (`i32` vectors, one entry per value), then its elements as a collection.
pub fn layout(ty: &Type, many: bool) -> Vec<IrType> {
    let mut out = Vec::new();
    push_layout(ty, many, &mut out);
    out
}

fn push_layout(ty: &Type, many: bool, out: &mut Vec<IrType>) {
    let kind = if many { Kind::Vector } else { Kind::Scalar };
    match ty {
        Type::Scalar(s) => out.push(IrType { kind, elem: *s }),
        Type::Tuple(items) => items.iter().for_each(|t| push_layout(t, many, out)),
        Type::Seq(elem) => {
            out.push(IrType { kind, elem: Scalar::I32 });
            out.push(IrType { kind, elem: Scalar::I32 });
            push_layout(elem, true, out);
        }
        // Functions and type variables never reach the IR (the core is first-order and
        // monomorphic); they take no variables.
        Type::Var(_) | Type::Func(..) => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Printing (`weft ir FILE`)

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (id, function) in self.functions.iter().enumerate() {
            if id > 0 {
                writeln!(f)?;
            }
            let params: Vec<String> = function
                .params
                .iter()
                .map(|&p| format!("{}: {}", var(function, p), function.ty(p)))
                .collect();
            writeln!(f, "fn#{id} {}({}) =", function.name, params.join(", "))?;
            let mut out = String::new();
            write_block(&mut out, function, &function.body, 1);
            f.write_str(&out)?;
        }
        if !self.schedules.is_empty() {
            writeln!(f, "\nschedules:")?;
            for (span, schedule) in &self.schedules {
                writeln!(
                    f,
                    "  @{}..{} {}",
                    u32::from(span.start()),
                    u32::from(span.end()),
                    schedule.describe()
                )?;
            }
        }
        Ok(())
    }
}

fn var(function: &Function, id: VarId) -> String {
    format!("{}%{id}", function.vars[id as usize].name)
}

fn vars(function: &Function, ids: &[VarId]) -> String {
    ids.iter().map(|&v| var(function, v)).collect::<Vec<_>>().join(", ")
}

fn write_block(out: &mut String, function: &Function, block: &Block, depth: usize) {
    let pad = "  ".repeat(depth);
    for stmt in &block.stmts {
        let at = format!("@{}..{}", u32::from(stmt.span.start()), u32::from(stmt.span.end()));
        match &stmt.kind {
            StmtKind::Op { dest, op } => {
                let lhs = match dest {
                    Some(d) => format!("{}: {} = ", var(function, *d), function.ty(*d)),
                    None => String::new(),
                };
                let _ = writeln!(out, "{pad}{lhs}{} {at}", op_text(function, op));
            }
            StmtKind::If { cond, then, otherwise, dests } => {
                let _ = writeln!(out, "{pad}({}) = if {} {at}", vars(function, dests), var(function, *cond));
                write_block(out, function, then, depth + 1);
                let _ = writeln!(out, "{pad}else");
                write_block(out, function, otherwise, depth + 1);
            }
            StmtKind::While { state, init, cond, body, dests } => {
                let head = format!(
                    "({}) = loop ({}) = ({})",
                    vars(function, dests),
                    vars(function, state),
                    vars(function, init)
                );
                write_loop(out, function, &head, &at, cond, body, depth);
            }
            StmtKind::ElementLoop { len, inputs, shared, params, init, state, cond, body, dests } => {
                let reading = if shared.is_empty() {
                    String::new()
                } else {
                    format!(" reading ({}),", vars(function, shared))
                };
                let head = format!(
                    "({}) = for each of {} sequentially:{reading} ({}) = ({}), loop ({}) = ({})",
                    vars(function, dests),
                    vars(function, &[*len]),
                    vars(function, params),
                    vars(function, inputs),
                    vars(function, state),
                    vars(function, init)
                );
                write_loop(out, function, &head, &at, cond, body, depth);
            }
            StmtKind::Call { func, args, dests } => {
                let _ = writeln!(
                    out,
                    "{pad}({}) = call fn#{func}({}) {at}",
                    vars(function, dests),
                    vars(function, args)
                );
            }
            StmtKind::Print { sink, items } => {
                let items: Vec<String> = items
                    .iter()
                    .map(|item| match item {
                        PrintItem::Text(t) => format!("{t:?}"),
                        PrintItem::Value { ty, vars: vs } => format!("{}: {ty}", vars(function, vs)),
                    })
                    .collect();
                let _ = writeln!(out, "{pad}{} {} {at}", sink.name(), items.join(", "));
            }
            StmtKind::Kernel(kernel) => {
                let _ =
                    writeln!(out, "{pad}({}) = kernel {} {at}", vars(function, &kernel.outputs), kernel.name);
                let body = Block { stmts: kernel.body.clone(), results: kernel.outputs.clone() };
                write_block(out, function, &body, depth + 1);
            }
        }
    }
    let _ = writeln!(out, "{pad}=> ({})", vars(function, &block.results));
}

fn write_loop(
    out: &mut String,
    function: &Function,
    head: &str,
    at: &str,
    cond: &Block,
    body: &Block,
    depth: usize,
) {
    let pad = "  ".repeat(depth);
    let _ = writeln!(out, "{pad}{head} {at}");
    let _ = writeln!(out, "{pad}while");
    write_block(out, function, cond, depth + 1);
    let _ = writeln!(out, "{pad}do");
    write_block(out, function, body, depth + 1);
}

fn op_text(function: &Function, op: &Op) -> String {
    let args = match op {
        Op::Const(Literal::Bool(b)) => (if *b { "True" } else { "False" }).to_string(),
        Op::Const(Literal::Int(i, _)) => i.to_string(),
        Op::Const(Literal::Float(x, _)) => format!("{x:?}"),
        Op::Load { path, ty, .. } => format!("{path:?}: {ty}"),
        Op::Check(Check::Assert { message: Some(m), cond }) => format!("{}, {m:?}", var(function, *cond)),
        _ => vars(function, &op.operands()),
    };
    format!("{}({args})", op.name())
}

// ---------------------------------------------------------------------------------------------
// The checker

/// Verifies that every variable is defined before it is read (in a straight-line sense per
/// block) and that every op's operands have the kinds and element types it needs. `pass` names
/// the pass whose output is checked, so that a failure says who broke the program.
pub fn check(program: &Program, pass: &str) -> Result<(), String> {
    for function in &program.functions {
        let mut checker = Checker { program, function, defined: vec![false; function.vars.len()] };
        for &p in &function.params {
            checker.define(p);
        }
        checker
            .block(&function.body)
            .map_err(|e| format!("IR check failed after `{pass}` in `{}`: {e}", function.name))?;
    }
    if program.main as usize >= program.functions.len() {
        return Err(format!("IR check failed after `{pass}`: no main function"));
    }
    Ok(())
}

struct Checker<'p> {
    program: &'p Program,
    function: &'p Function,
    defined: Vec<bool>,
}

impl Checker<'_> {
    fn define(&mut self, var: VarId) {
        if let Some(d) = self.defined.get_mut(var as usize) {
            *d = true;
        }
    }

    fn read(&self, var: VarId) -> Result<IrType, String> {
        match self.defined.get(var as usize) {
            Some(true) => Ok(self.function.ty(var)),
            Some(false) => Err(format!("{} is read before it is defined", var_name(self.function, var))),
            None => Err(format!("variable %{var} does not exist")),
        }
    }

    fn block(&mut self, block: &Block) -> Result<(), String> {
        for stmt in &block.stmts {
            self.stmt(stmt).map_err(|e| format!("{e} (at {:?})", stmt.span))?;
        }
        for &r in &block.results {
            self.read(r)?;
        }
        Ok(())
    }

    fn same_types(&self, what: &str, got: &[VarId], want: &[VarId]) -> Result<(), String> {
        if got.len() != want.len() {
            return Err(format!("{what}: {} values where {} are expected", got.len(), want.len()));
        }
        for (&g, &w) in got.iter().zip(want) {
            let (gt, wt) = (self.function.ty(g), self.function.ty(w));
            if gt != wt {
                return Err(format!(
                    "{what}: {} is {gt} but {} is {wt}",
                    var_name(self.function, g),
                    var_name(self.function, w)
                ));
            }
        }
        Ok(())
    }

    /// A loop's condition (one scalar `bool`) and body (the next `state`).
    fn loop_blocks(&mut self, cond: &Block, body: &Block, state: &[VarId]) -> Result<(), String> {
        self.block(cond)?;
        match cond.results.as_slice() {
            [c] if self.function.ty(*c) == IrType::scalar(Scalar::Bool) => {}
            _ => return Err("a loop condition must give one scalar bool".into()),
        }
        self.block(body)?;
        self.same_types("loop body", &body.results, state)
    }

    /// `outer` (a scalar or a vector) holds values of the scalar `inner`'s type.
    fn same_elem(&self, what: &str, outer: VarId, inner: VarId) -> Result<(), String> {
        let (o, i) = (self.read(outer)?, self.function.ty(inner));
        if o.elem != i.elem || i.is_vector() {
            return Err(format!(
                "{what}: {} is {o} but {} is {i}",
                var_name(self.function, outer),
                var_name(self.function, inner)
            ));
        }
        Ok(())
    }

    fn stmt(&mut self, stmt: &Stmt) -> Result<(), String> {
        match &stmt.kind {
            StmtKind::Op { dest, op } => {
                let operands: Vec<IrType> =
                    op.operands().iter().map(|&v| self.read(v)).collect::<Result<_, _>>()?;
                let result = op_result(op, &operands).map_err(|e| format!("{}: {e}", op.name()))?;
                match (dest, result) {
                    (Some(d), Some(ty)) if self.function.ty(*d) == ty => self.define(*d),
                    (Some(d), Some(ty)) => {
                        return Err(format!(
                            "{} gives {ty} but {} is {}",
                            op.name(),
                            var_name(self.function, *d),
                            self.function.ty(*d)
                        ));
                    }
                    (None, None) => {}
                    (Some(_), None) => return Err(format!("{} has no result to assign", op.name())),
                    (None, Some(_)) => return Err(format!("the result of {} is dropped", op.name())),
                }
            }
            StmtKind::If { cond, then, otherwise, dests } => {
                if self.read(*cond)? != IrType::scalar(Scalar::Bool) {
                    return Err("an `if` condition must be a scalar bool".into());
                }
                self.block(then)?;
                self.block(otherwise)?;
                self.same_types("then arm", &then.results, dests)?;
                self.same_types("else arm", &otherwise.results, dests)?;
                dests.iter().for_each(|&d| self.define(d));
            }
            StmtKind::While { state, init, cond, body, dests } => {
                for &v in init {
                    self.read(v)?;
                }
                self.same_types("loop init", init, state)?;
                state.iter().for_each(|&s| self.define(s));
                self.loop_blocks(cond, body, state)?;
                self.same_types("loop result", dests, state)?;
                dests.iter().for_each(|&d| self.define(d));
            }
            StmtKind::ElementLoop { len, inputs, shared, params, init, state, cond, body, dests } => {
                if self.read(*len)? != IrType::scalar(Scalar::I32) {
                    return Err("an element loop's length must be a scalar i32".into());
                }
                for (&input, &param) in inputs.iter().zip(params) {
                    self.same_elem("element loop input", input, param)?;
                }
                for (&start, &s) in init.iter().zip(state) {
                    self.same_elem("element loop init", start, s)?;
                }
                if inputs.len() != params.len() || init.len() != state.len() || dests.len() != state.len() {
                    return Err("an element loop's inputs, state and results do not match".into());
                }
                for &v in shared {
                    if !self.read(v)?.is_vector() {
                        return Err(format!(
                            "{} is shared by an element loop but not a vector",
                            var_name(self.function, v)
                        ));
                    }
                }
                // The loop's blocks see only its parameters and state, all scalars, and the
                // shared vectors, which they only index.
                let mut inner = Checker {
                    program: self.program,
                    function: self.function,
                    defined: vec![false; self.function.vars.len()],
                };
                params.iter().chain(state).chain(shared).for_each(|&v| inner.define(v));
                if !scalar_code(cond, shared) || !scalar_code(body, shared) {
                    return Err("an element loop holds a loop, call or print, or uses a shared vector other than as a gather's source".into());
                }
                inner.loop_blocks(cond, body, state)?;
                let vector = (0..self.function.vars.len() as VarId).find(|&v| {
                    inner.defined[v as usize] && self.function.ty(v).is_vector() && !shared.contains(&v)
                });
                if let Some(v) = vector {
                    return Err(format!("{} is a vector inside an element loop", var_name(self.function, v)));
                }
                for (&d, &s) in dests.iter().zip(state) {
                    if self.function.ty(d) != IrType::vector(self.function.ty(s).elem) {
                        return Err("an element loop's results must be vectors of its state".into());
                    }
                    self.define(d);
                }
            }
            StmtKind::Call { func, args, dests } => {
                let callee =
                    self.program.functions.get(*func as usize).ok_or("call of a missing function")?;
                let arg_types: Vec<IrType> = args.iter().map(|&a| self.read(a)).collect::<Result<_, _>>()?;
                let param_types: Vec<IrType> = callee.params.iter().map(|&p| callee.ty(p)).collect();
                let result_types: Vec<IrType> = callee.body.results.iter().map(|&r| callee.ty(r)).collect();
                let dest_types: Vec<IrType> = dests.iter().map(|&d| self.function.ty(d)).collect();
                if arg_types != param_types || result_types != dest_types {
                    return Err(format!("call of `{}` with mismatched types", callee.name));
                }
                dests.iter().for_each(|&d| self.define(d));
            }
            StmtKind::Print { items, .. } => {
                for item in items {
                    if let PrintItem::Value { ty, vars } = item {
                        let want = layout(ty, false);
                        let got: Vec<IrType> =
                            vars.iter().map(|&v| self.read(v)).collect::<Result<_, _>>()?;
                        if want != got {
                            return Err(format!("printed value does not have the layout of {ty}"));
                        }
                    }
                }
            }
            StmtKind::Kernel(kernel) => {
                for member in &kernel.body {
                    if !matches!(member.kind, StmtKind::Op { .. }) {
                        return Err(format!("kernel {} holds a statement that is not an op", kernel.name));
                    }
                    self.stmt(member)?;
                }
                // What the kernel does not write out does not exist after it.
                for v in kernel.defined() {
                    if !kernel.outputs.contains(&v) {
                        self.defined[v as usize] = false;
                    }
                }
                if let Some(&v) = kernel.outputs.iter().find(|&&v| !self.defined[v as usize]) {
                    return Err(format!(
                        "kernel {} writes out {}, which it does not define",
                        kernel.name,
                        var_name(self.function, v)
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Whether a block holds only ops and conditionals: what an element loop can run.
/// Whether `block` holds only ops and conditionals, and reads the `shared` vectors only as
/// the source of a `gather`.
fn scalar_code(block: &Block, shared: &[VarId]) -> bool {
    block.stmts.iter().all(|stmt| match &stmt.kind {
        StmtKind::Op { op: Op::Gather { index, .. }, .. } => !shared.contains(index),
        StmtKind::Op { op, .. } => op.operands().iter().all(|v| !shared.contains(v)),
        StmtKind::If { cond, then, otherwise, .. } => {
            !shared.contains(cond) && scalar_code(then, shared) && scalar_code(otherwise, shared)
        }
        _ => false,
    })
}

fn var_name(function: &Function, id: VarId) -> String {
    function.vars.get(id as usize).map_or_else(|| format!("%{id}"), |v| format!("{}%{id}", v.name))
}

/// The type an op gives for operands of these types (`None` for a check), or why the operands
/// are wrong.
pub(crate) fn op_result(op: &Op, operands: &[IrType]) -> Result<Option<IrType>, String> {
    use Op::*;
    let i32s = Scalar::I32;
    let any_vector = operands.iter().any(|t| t.is_vector());
    let elementwise =
        |elem: Scalar| Some(if any_vector { IrType::vector(elem) } else { IrType::scalar(elem) });
    let vector = |t: IrType, what: &str| {
        if t.is_vector() { Ok(()) } else { Err(format!("{what} must be a vector, not {t}")) }
    };
    let scalar_of = |t: IrType, elem: Scalar, what: &str| {
        if t == IrType::scalar(elem) {
            Ok(())
        } else {
            Err(format!("{what} must be a scalar {}, not {t}", elem.name()))
        }
    };
    let int_like = |t: IrType, what: &str| {
        if t.elem == i32s { Ok(()) } else { Err(format!("{what} must hold i32, not {t}")) }
    };
    let segs_ok = |offsets: IrType, lengths: IrType| -> Result<(), String> {
        if offsets != IrType::vector(i32s) || lengths != IrType::vector(i32s) {
            return Err("segment offsets and lengths must be i32 vectors".into());
        }
        Ok(())
    };
    let same_elem = |ts: &[IrType]| -> Result<Scalar, String> {
        let first = ts.first().ok_or("no operands")?.elem;
        match ts.iter().find(|t| t.elem != first) {
            Some(t) => Err(format!("operands mix {} and {}", first.name(), t.elem.name())),
            None => Ok(first),
        }
    };
    Ok(match op {
        Const(Literal::Bool(_)) => Some(IrType::scalar(Scalar::Bool)),
        Const(Literal::Int(_, s)) | Const(Literal::Float(_, s)) => Some(IrType::scalar(*s)),
        Unary(_, _) => elementwise(operands[0].elem),
        Binary(op, _, _) => {
            let elem = same_elem(operands)?;
            if op.is_comparison() {
                elementwise(Scalar::Bool)
            } else if *op == BinaryOp::Div {
                elementwise(elem.float_of().ok_or("`/` of bools")?)
            } else {
                elementwise(elem)
            }
        }
        Select(..) => {
            if operands[0].elem != Scalar::Bool {
                return Err("the condition must be bool".into());
            }
            elementwise(same_elem(&operands[1..])?)
        }
        Cast(to, _) => elementwise(*to),
        Math(f, _) => {
            if operands.len() != f.arity() {
                return Err(format!("{} takes {} operands", f.name(), f.arity()));
            }
            let elem = same_elem(operands)?;
            match f {
                MathFn::Abs | MathFn::Min | MathFn::Max | MathFn::Pow => elementwise(elem),
                _ => elementwise(elem.float_of().ok_or("a float function of bools")?),
            }
        }
        Replicate { .. } => {
            scalar_of(operands[1], i32s, "the length")?;
            if operands[0].is_vector() {
                return Err("the value must be a scalar".into());
            }
            Some(IrType::vector(operands[0].elem))
        }
        Iota { .. } => {
            scalar_of(operands[0], i32s, "the length")?;
            Some(IrType::vector(i32s))
        }
        SegIota { .. } | SegIds { .. } => {
            vector(operands[0], "lengths")?;
            int_like(operands[0], "lengths")?;
            for &size in &operands[1..] {
                scalar_of(size, i32s, "the size of a collection the segments lie in")?;
            }
            Some(IrType::vector(i32s))
        }
        Concat(_) => Some(IrType::vector(same_elem(operands)?)),
        Interleave { .. } => {
            let (len, parts) = operands.split_last().ok_or("no operands")?;
            scalar_of(*len, i32s, "the length")?;
            Some(IrType::vector(same_elem(parts)?))
        }
        RandomF32 { .. } => elementwise(Scalar::F32),
        RandomI32 { .. } => elementwise(i32s),
        Load { ty, field, .. } => {
            let leaves = layout(ty, false);
            let leaf = leaves.get(*field).ok_or("no such field in the loaded type")?;
            Some(*leaf)
        }
        Length(_) => {
            vector(operands[0], "the operand")?;
            Some(IrType::scalar(i32s))
        }
        Gather { .. } => {
            vector(operands[0], "the source")?;
            int_like(operands[1], "the index")?;
            Some(IrType { kind: operands[1].kind, elem: operands[0].elem })
        }
        GatherEither { .. } => {
            vector(operands[0], "the first source")?;
            vector(operands[1], "the second source")?;
            same_elem(&operands[..2])?;
            if operands[2] != IrType::vector(Scalar::Bool) {
                return Err("the picks must be a bool vector".into());
            }
            vector(operands[3], "the index")?;
            int_like(operands[3], "the index")?;
            Some(IrType::vector(operands[0].elem))
        }
        Scatter { .. } => {
            vector(operands[0], "the destination")?;
            vector(operands[1], "the index")?;
            int_like(operands[1], "the index")?;
            same_elem(&[operands[0], operands[2]])?;
            Some(operands[0])
        }
        WriteAt { .. } => {
            vector(operands[0], "the destination")?;
            scalar_of(operands[1], i32s, "the place")?;
            vector(operands[2], "the values")?;
            same_elem(&[operands[0], operands[2]])?;
            Some(operands[0])
        }
        Pack { .. } => {
            vector(operands[0], "the source")?;
            if operands[1] != IrType::vector(Scalar::Bool) {
                return Err("flags must be a bool vector".into());
            }
            if operands.get(2).is_some_and(|&counts| counts != IrType::vector(Scalar::I32)) {
                return Err("the counts must be an i32 vector".into());
            }
            Some(operands[0])
        }
        Reduce { .. } => {
            vector(operands[0], "the source")?;
            Some(IrType::scalar(operands[0].elem))
        }
        SegReduce { .. } => {
            vector(operands[0], "the source")?;
            segs_ok(operands[1], operands[2])?;
            Some(IrType::vector(operands[0].elem))
        }
        SegArgExtreme { .. } => {
            vector(operands[0], "the source")?;
            segs_ok(operands[1], operands[2])?;
            Some(IrType::vector(i32s))
        }
        Scan { init, .. } => {
            vector(operands[0], "the source")?;
            if init.is_some() && operands[1] != IrType::scalar(operands[0].elem) {
                return Err("the initial value must be a scalar of the element type".into());
            }
            Some(operands[0])
        }
        SegScan { init, .. } => {
            vector(operands[0], "the source")?;
            segs_ok(operands[1], operands[2])?;
            if init.is_some() && operands[3] != IrType::scalar(operands[0].elem) {
                return Err("the initial value must be a scalar of the element type".into());
            }
            Some(operands[0])
        }
        SegSortPerm { keys, .. } => {
            let (key_types, seg_types) = operands.split_at(keys.len());
            for t in key_types {
                vector(*t, "a key")?;
            }
            segs_ok(seg_types[0], seg_types[1])?;
            Some(IrType::vector(i32s))
        }
        Check(check) => {
            if let self::Check::Assert { .. } = check
                && operands[0].elem != Scalar::Bool
            {
                return Err("an assert condition must be bool".into());
            }
            None
        }
    })
}
