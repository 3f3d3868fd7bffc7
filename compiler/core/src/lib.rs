//! `weft-core`: the core language, the contract between the front half of the compiler and the
//! back half. `types` is the type language; the crate root is the typed, desugared core
//! program: what `weft-analysis` produces, the interpreter runs and flattening consumes.
//!
//! A `Program` is a set of first-order, monomorphic functions. Comprehensions have become
//! `map`/`filter` primitives, loops carry their state explicitly (`ForLoop`, `WhileLoop`, like
//! Futhark's `loop`), statements have become nested `Let`s, and every closure is explicit: a
//! `Callee` names a lifted function and the captured values it takes as leading arguments.
//! Produced by `mono` from the inferred program; read by `interp` (and later executors).
//!
//! **Invariant:** every expression has a concrete type (no type variables, no function types
//! except where a `Callee` is passed), and every span is absolute in the file.

pub mod types;

use std::fmt::{self, Write as _};

use rowan::TextRange;

use crate::types::{Scalar, Type};

pub type FuncId = u32;
pub type ExprId = u32;
pub type VarId = u32;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Program {
    pub functions: Vec<Function>,
    /// The top-level statements, as a function without parameters that returns `()`.
    pub main: Function,
}

impl Program {
    pub fn function(&self, id: FuncId) -> &Function {
        &self.functions[id as usize]
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Function {
    /// The source name, with the specialisation: `double[f32]`, `main.<lambda@12>`.
    pub name: String,
    pub params: Vec<VarId>,
    pub ret: Type,
    pub body: ExprId,
    pub vars: Vec<Var>,
    pub exprs: Vec<Expr>,
    /// The type of each expression, by `ExprId`.
    pub types: Vec<Type>,
    /// The source span of each expression, by `ExprId`: where run-time errors point.
    pub spans: Vec<TextRange>,
    /// The `zip` and `map` calls whose sequences shape analysis proved to have equal lengths:
    /// the executors that run the IR do not check them (the interpreter does regardless).
    pub equal_lengths: Vec<ExprId>,
}

impl Function {
    pub fn expr(&self, id: ExprId) -> &Expr {
        &self.exprs[id as usize]
    }

    pub fn ty(&self, id: ExprId) -> &Type {
        &self.types[id as usize]
    }

    pub fn span(&self, id: ExprId) -> TextRange {
        self.spans[id as usize]
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Var {
    pub name: String,
    pub ty: Type,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Literal {
    Bool(bool),
    /// An integer literal of an integer type.
    Int(i64, Scalar),
    /// A literal of a float type (an integer literal used as a float included).
    Float(f64, Scalar),
}

impl Eq for Literal {}

impl std::hash::Hash for Literal {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        match self {
            Literal::Bool(b) => b.hash(state),
            Literal::Int(i, s) => (i, s).hash(state),
            Literal::Float(x, s) => (x.to_bits(), s).hash(state),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Expr {
    Literal(Literal),
    Var(VarId),
    Tuple(Vec<ExprId>),
    /// A list literal `[a, b, c]`.
    List(Vec<ExprId>),
    /// `t[i]` on a tuple, with a non-negative literal index.
    TupleGet(ExprId, u32),
    /// `xs[i]`: a negative index counts from the end; out of range is E0400. `in_bounds`: shape
    /// analysis proved `0 <= i < len(xs)`, so the executors that run the IR skip the check (the
    /// interpreter, the oracle, checks regardless).
    Index {
        seq: ExprId,
        index: ExprId,
        in_bounds: bool,
    },
    /// `xs[start:stop:step]`, clamped as Python's slices are.
    Slice {
        seq: ExprId,
        start: Option<ExprId>,
        stop: Option<ExprId>,
        step: Option<ExprId>,
    },
    Unary {
        op: UnaryOp,
        operand: ExprId,
    },
    /// Both operands have the same type (`types[lhs]`).
    Binary {
        op: BinaryOp,
        lhs: ExprId,
        rhs: ExprId,
    },
    /// Short-circuiting `and` / `or`.
    And(ExprId, ExprId),
    Or(ExprId, ExprId),
    If {
        cond: ExprId,
        then: ExprId,
        otherwise: ExprId,
    },
    Let {
        pattern: Pattern,
        value: ExprId,
        body: ExprId,
    },
    Call {
        func: FuncId,
        args: Vec<ExprId>,
    },
    /// A prelude operation. `funcs` holds the functions a higher-order one applies (`map`'s `f`,
    /// `reduce`'s `op`, ...), in the order the prelude signature lists them.
    Prim {
        prim: Prim,
        args: Vec<ExprId>,
        funcs: Vec<Callee>,
    },
    /// `for elem in seq:` with loop-carried `state` (initially `init`); `body` gives the next
    /// state and the loop gives the last.
    ForLoop {
        state: Pattern,
        init: ExprId,
        elem: Pattern,
        seq: ExprId,
        body: ExprId,
    },
    /// `while cond:` over loop-carried `state`; `cond` and `body` see the current state.
    WhileLoop {
        state: Pattern,
        init: ExprId,
        cond: ExprId,
        body: ExprId,
    },
    /// Gives `()`, or stops with E0402.
    Assert {
        cond: ExprId,
        message: Option<String>,
    },
    /// Gives `()` after sending the values to `sink`: printing them, or drawing them (top
    /// level only).
    Print {
        sink: Sink,
        args: Vec<PrintArg>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Pattern {
    Var(VarId),
    Tuple(Vec<Pattern>),
    Wildcard,
}

/// A function passed to a higher-order primitive: `func` takes `captures` (evaluated where the
/// closure was created) followed by the primitive's arguments.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Callee {
    pub func: FuncId,
    pub captures: Vec<ExprId>,
}

/// Where an output statement sends its values: `print`'s line of text, or a chart the front
/// end draws (`plot`, `hist`, `image`). Charts only draw: the executors hand their values to
/// the host and compute nothing for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Sink {
    Text,
    Plot,
    Hist,
    Image,
}

impl Sink {
    /// Every sink, `print` first.
    pub const ALL: [Sink; 4] = [Sink::Text, Sink::Plot, Sink::Hist, Sink::Image];

    /// The prelude function that writes to it.
    pub fn name(self) -> &'static str {
        match self {
            Sink::Text => "print",
            Sink::Plot => "plot",
            Sink::Hist => "hist",
            Sink::Image => "image",
        }
    }

    /// The sink the prelude function `name` writes to.
    pub fn from_name(name: &str) -> Option<Sink> {
        Sink::ALL.into_iter().find(|sink| sink.name() == name)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PrintArg {
    Text(String),
    Value(ExprId),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    Neg,
    Not,
    /// `~x` on integers.
    Invert,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    /// True division: the result is the float type of the operands.
    Div,
    FloorDiv,
    Mod,
    Pow,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl BinaryOp {
    pub fn symbol(self) -> &'static str {
        use BinaryOp::*;
        match self {
            Add => "+",
            Sub => "-",
            Mul => "*",
            Div => "/",
            FloorDiv => "//",
            Mod => "%",
            Pow => "**",
            BitAnd => "&",
            BitOr => "|",
            BitXor => "^",
            Shl => "<<",
            Shr => ">>",
            Eq => "==",
            Ne => "!=",
            Lt => "<",
            Le => "<=",
            Gt => ">",
            Ge => ">=",
        }
    }

    pub fn is_comparison(self) -> bool {
        use BinaryOp::*;
        matches!(self, Eq | Ne | Lt | Le | Gt | Ge)
    }
}

macro_rules! prims {
    ($($(#[$doc:meta])* $variant:ident = $name:literal,)*) => {
        /// The prelude's operations, as the core calls them. Overloads by arity (`min(xs)` and
        /// `min(a, b)`) are separate primitives.
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum Prim {
            $($(#[$doc])* $variant,)*
            /// `i32(x)`, `f32(x)`, `bool(x)`, ...: a conversion to the scalar type.
            Cast(Scalar),
            /// `load_npy("path")`: the element type is the expression's type.
            LoadNpy(String),
            /// `load_csv("path")`: `[[f32]]`.
            LoadCsv(String),
        }

        impl Prim {
            pub fn name(&self) -> &str {
                match self {
                    $(Prim::$variant => $name,)*
                    Prim::Cast(s) => s.name(),
                    Prim::LoadNpy(_) => "load_npy",
                    Prim::LoadCsv(_) => "load_csv",
                }
            }
        }
    };
}

prims! {
    Len = "len",
    /// `range(stop)`, `range(start, stop)` or `range(start, stop, step)`: 1 to 3 arguments.
    Range = "range",
    Indices = "indices",
    /// n-ary: one function, n sequences of equal length (E0403).
    Map = "map",
    /// n-ary: sequences of equal length (E0403) to a sequence of n-tuples.
    Zip = "zip",
    /// A sequence of n-tuples to an n-tuple of sequences.
    Unzip = "unzip",
    Concat = "concat",
    Flatten = "flatten",
    Reverse = "reverse",
    Replicate = "replicate",
    Gather = "gather",
    Scatter = "scatter",
    Permute = "permute",
    Filter = "filter",
    Sort = "sort",
    Count = "count",
    Lengths = "lengths",
    Partition = "partition",
    Reduce = "reduce",
    Sum = "sum",
    Product = "product",
    /// `min(xs)`: E0404 on empty input.
    Min = "min",
    Max = "max",
    /// `min(a, b)`.
    Min2 = "min",
    Max2 = "max",
    Any = "any",
    All = "all",
    ArgMin = "argmin",
    ArgMax = "argmax",
    Scan = "scan",
    ExclusiveScan = "exclusive_scan",
    Abs = "abs",
    Sqrt = "sqrt",
    Exp = "exp",
    Log = "log",
    Sin = "sin",
    Cos = "cos",
    Tan = "tan",
    Atan2 = "atan2",
    Erf = "erf",
    Pow = "pow",
    Floor = "floor",
    Ceil = "ceil",
    RandomF32 = "random_f32",
    RandomI32 = "random_i32",
}

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (id, function) in self.functions.iter().enumerate() {
            write!(f, "fn#{id} ")?;
            function.fmt(f)?;
        }
        self.main.fmt(f)
    }
}

impl fmt::Display for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let params: Vec<String> = self
            .params
            .iter()
            .map(|&p| format!("{}: {}", self.var_name(p), self.vars[p as usize].ty))
            .collect();
        writeln!(f, "{}({}) -> {} =", self.name, params.join(", "), self.ret)?;
        let mut out = String::new();
        self.write_expr(&mut out, self.body, 1);
        f.write_str(&out)?;
        f.write_str("\n")
    }
}

impl Function {
    fn var_name(&self, var: VarId) -> String {
        format!("{}%{var}", self.vars[var as usize].name)
    }

    fn pattern_text(&self, pattern: &Pattern) -> String {
        match pattern {
            Pattern::Var(v) => self.var_name(*v),
            Pattern::Wildcard => "_".to_string(),
            Pattern::Tuple(items) => {
                let items: Vec<String> = items.iter().map(|p| self.pattern_text(p)).collect();
                format!("({})", items.join(", "))
            }
        }
    }

    fn inline(&self, id: ExprId) -> String {
        let mut out = String::new();
        self.write_expr(&mut out, id, 0);
        out.trim().replace('\n', " ")
    }

    fn list(&self, ids: &[ExprId]) -> String {
        ids.iter().map(|&id| self.inline(id)).collect::<Vec<_>>().join(", ")
    }

    /// Statement-like forms (`let`, loops, `if`) go on their own lines; the rest inline.
    fn write_expr(&self, out: &mut String, id: ExprId, depth: usize) {
        crate::ensure_stack(|| self.write_expr_inner(out, id, depth))
    }

    fn write_expr_inner(&self, out: &mut String, id: ExprId, depth: usize) {
        let pad = "  ".repeat(depth);
        let _ = match self.expr(id) {
            Expr::Let { pattern, value, body } => {
                let _ = writeln!(out, "{pad}let {} = {}", self.pattern_text(pattern), self.inline(*value));
                self.write_expr(out, *body, depth);
                Ok(())
            }
            Expr::If { cond, then, otherwise } => {
                let _ = writeln!(out, "{pad}if {}", self.inline(*cond));
                self.write_expr(out, *then, depth + 1);
                let _ = writeln!(out, "{pad}else");
                self.write_expr(out, *otherwise, depth + 1);
                Ok(())
            }
            Expr::ForLoop { state, init, elem, seq, body } => {
                let _ = writeln!(
                    out,
                    "{pad}loop {} = {} for {} in {}",
                    self.pattern_text(state),
                    self.inline(*init),
                    self.pattern_text(elem),
                    self.inline(*seq)
                );
                self.write_expr(out, *body, depth + 1);
                Ok(())
            }
            Expr::WhileLoop { state, init, cond, body } => {
                let _ = writeln!(
                    out,
                    "{pad}loop {} = {} while {}",
                    self.pattern_text(state),
                    self.inline(*init),
                    self.inline(*cond)
                );
                self.write_expr(out, *body, depth + 1);
                Ok(())
            }
            _ => writeln!(out, "{pad}{}", self.atom(id)),
        };
    }

    fn atom(&self, id: ExprId) -> String {
        match self.expr(id) {
            Expr::Literal(Literal::Bool(b)) => (if *b { "True" } else { "False" }).to_string(),
            Expr::Literal(Literal::Int(i, s)) => format!("{i}{}", s.name()),
            Expr::Literal(Literal::Float(x, s)) => format!("{x:?}{}", s.name()),
            Expr::Var(v) => self.var_name(*v),
            Expr::Tuple(items) => format!("({})", self.list(items)),
            Expr::List(items) => format!("[{}]", self.list(items)),
            Expr::TupleGet(t, i) => format!("{}.{i}", self.inline(*t)),
            Expr::Index { seq, index, in_bounds } => {
                let mark = if *in_bounds { " (in bounds)" } else { "" };
                format!("{}[{}]{mark}", self.inline(*seq), self.inline(*index))
            }
            Expr::Slice { seq, start, stop, step } => {
                let part = |p: &Option<ExprId>| p.map(|p| self.inline(p)).unwrap_or_default();
                format!("{}[{}:{}:{}]", self.inline(*seq), part(start), part(stop), part(step))
            }
            Expr::Unary { op, operand } => {
                let symbol = match op {
                    UnaryOp::Neg => "-",
                    UnaryOp::Not => "not ",
                    UnaryOp::Invert => "~",
                };
                format!("{symbol}({})", self.inline(*operand))
            }
            Expr::Binary { op, lhs, rhs } => {
                format!("({} {} {})", self.inline(*lhs), op.symbol(), self.inline(*rhs))
            }
            Expr::And(a, b) => format!("({} and {})", self.inline(*a), self.inline(*b)),
            Expr::Or(a, b) => format!("({} or {})", self.inline(*a), self.inline(*b)),
            Expr::Call { func, args } => format!("fn#{func}({})", self.list(args)),
            Expr::Prim { prim, args, funcs } => {
                let mut parts: Vec<String> = funcs
                    .iter()
                    .map(|c| {
                        if c.captures.is_empty() {
                            format!("fn#{}", c.func)
                        } else {
                            format!("fn#{}{{{}}}", c.func, self.list(&c.captures))
                        }
                    })
                    .collect();
                parts.extend(args.iter().map(|&a| self.inline(a)));
                format!("{}({})", prim.name(), parts.join(", "))
            }
            Expr::Assert { cond, message } => format!("assert {} {message:?}", self.inline(*cond)),
            Expr::Print { sink, args } => {
                let args: Vec<String> = args
                    .iter()
                    .map(|a| match a {
                        PrintArg::Text(t) => format!("{t:?}"),
                        PrintArg::Value(v) => self.inline(*v),
                    })
                    .collect();
                format!("{}({})", sink.name(), args.join(", "))
            }
            Expr::Let { .. } | Expr::If { .. } | Expr::ForLoop { .. } | Expr::WhileLoop { .. } => {
                format!("{{ {} }}", self.inline(id))
            }
        }
    }
}

/// Runs a step of a recursive walk over a program, growing the stack first if it runs low, so
/// that a program nested as deep as it is long (`x + x + ... + x`) cannot overflow it.
pub fn ensure_stack<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(128 * 1024, 2 * 1024 * 1024, f)
}
