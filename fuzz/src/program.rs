//! The generated program as plain data: types, expressions and statements that print as Weft
//! text. The generator builds it, the shrinker rewrites it, and only its text reaches the
//! compiler, so a program the generator gets wrong is rejected by the checker like any other.

use std::fmt::Write;

/// The types the generator writes. Every one of them can be annotated.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    I32,
    F32,
    Bool,
    Seq(Box<Ty>),
    Tuple(Vec<Ty>),
    /// A lambda's type: never annotated, never replaced by the shrinker.
    Fn,
}

impl Ty {
    pub fn seq(elem: Ty) -> Ty {
        Ty::Seq(Box::new(elem))
    }

    pub fn elem(&self) -> Option<&Ty> {
        match self {
            Ty::Seq(e) => Some(e),
            _ => None,
        }
    }

    /// How nested the type is: scalars 0, `[f32]` 1, `[[f32]]` 2, a tuple its deepest part.
    pub fn depth(&self) -> usize {
        match self {
            Ty::Seq(e) => 1 + e.depth(),
            Ty::Tuple(parts) => parts.iter().map(Ty::depth).max().unwrap_or(0),
            _ => 0,
        }
    }

    /// The annotation that names this type.
    pub fn annotation(&self) -> String {
        match self {
            Ty::I32 => "i32".into(),
            Ty::F32 => "f32".into(),
            Ty::Bool => "bool".into(),
            Ty::Seq(e) => format!("[{}]", e.annotation()),
            Ty::Tuple(parts) => {
                format!("({})", parts.iter().map(Ty::annotation).collect::<Vec<_>>().join(", "))
            }
            Ty::Fn => "function".into(),
        }
    }
}

/// An expression with its type. A `frozen` expression is never touched by the shrinker: the
/// counters and guards that make loops and recursion terminate are frozen.
#[derive(Clone, Debug)]
pub struct Expr {
    pub ty: Ty,
    pub kind: Kind,
    pub frozen: bool,
}

#[derive(Clone, Debug)]
pub enum Kind {
    /// Literal text, printed as it is (`3`, `-0.0`, `(1.0 / 0.0)`).
    Lit(String),
    Var(String),
    Unary(&'static str, Box<Expr>),
    Binary(&'static str, Box<Expr>, Box<Expr>),
    Call(String, Vec<Expr>),
    Index(Box<Expr>, Box<Expr>),
    /// `xs[lo:hi]`, either bound left out.
    Slice(Box<Expr>, Option<Box<Expr>>, Option<Box<Expr>>),
    List(Vec<Expr>),
    Tuple(Vec<Expr>),
    /// A tuple's component, by a literal index.
    Field(Box<Expr>, usize),
    /// `then if cond else otherwise`.
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    Lambda(Vec<String>, Box<Expr>),
    Comprehension(Box<Expr>, Vec<Clause>),
}

#[derive(Clone, Debug)]
pub enum Clause {
    /// `for a in xs`, or `for a, b in ps` with several names.
    For(Vec<String>, Expr),
    If(Expr),
}

impl Expr {
    pub fn new(ty: Ty, kind: Kind) -> Expr {
        Expr { ty, kind, frozen: false }
    }

    pub fn lit(ty: Ty, text: impl Into<String>) -> Expr {
        Expr::new(ty, Kind::Lit(text.into()))
    }

    pub fn var(ty: Ty, name: &str) -> Expr {
        Expr::new(ty, Kind::Var(name.into()))
    }

    pub fn call(ty: Ty, name: &str, args: Vec<Expr>) -> Expr {
        Expr::new(ty, Kind::Call(name.into(), args))
    }

    pub fn binary(ty: Ty, op: &'static str, a: Expr, b: Expr) -> Expr {
        Expr::new(ty, Kind::Binary(op, Box::new(a), Box::new(b)))
    }

    pub fn frozen(mut self) -> Expr {
        self.frozen = true;
        self
    }

    /// The direct subexpressions, in order.
    pub fn children_mut(&mut self) -> Vec<&mut Expr> {
        match &mut self.kind {
            Kind::Lit(_) | Kind::Var(_) => Vec::new(),
            Kind::Unary(_, a) | Kind::Field(a, _) | Kind::Lambda(_, a) => vec![a],
            Kind::Binary(_, a, b) | Kind::Index(a, b) => vec![a, b],
            Kind::Call(_, args) | Kind::List(args) | Kind::Tuple(args) => args.iter_mut().collect(),
            Kind::Slice(a, lo, hi) => {
                let mut v = vec![&mut **a];
                v.extend(lo.iter_mut().map(|e| &mut **e));
                v.extend(hi.iter_mut().map(|e| &mut **e));
                v
            }
            Kind::Cond(a, c, b) => vec![a, c, b],
            Kind::Comprehension(elem, clauses) => {
                let mut v = vec![&mut **elem];
                for clause in clauses {
                    match clause {
                        Clause::For(_, e) | Clause::If(e) => v.push(e),
                    }
                }
                v
            }
        }
    }

    /// The number of nodes, a program's size for the shrinker.
    pub fn size(&self) -> usize {
        let mut copy = self.clone();
        1 + copy.children_mut().iter().map(|c| c.size()).sum::<usize>()
    }

    fn write(&self, out: &mut String) {
        match &self.kind {
            Kind::Lit(text) | Kind::Var(text) => out.push_str(text),
            Kind::Unary(op, a) => {
                out.push('(');
                out.push_str(op);
                a.write(out);
                out.push(')');
            }
            Kind::Binary(op, a, b) => {
                out.push('(');
                a.write(out);
                let _ = write!(out, " {op} ");
                b.write(out);
                out.push(')');
            }
            Kind::Call(name, args) => {
                out.push_str(name);
                write_list(out, "(", args, ")");
            }
            Kind::Index(a, i) => {
                a.write(out);
                out.push('[');
                i.write(out);
                out.push(']');
            }
            Kind::Slice(a, lo, hi) => {
                a.write(out);
                out.push('[');
                if let Some(lo) = lo {
                    lo.write(out);
                }
                out.push(':');
                if let Some(hi) = hi {
                    hi.write(out);
                }
                out.push(']');
            }
            Kind::List(items) => write_list(out, "[", items, "]"),
            Kind::Tuple(items) => write_list(out, "(", items, ")"),
            Kind::Field(a, k) => {
                a.write(out);
                let _ = write!(out, "[{k}]");
            }
            Kind::Cond(then, cond, otherwise) => {
                out.push('(');
                then.write(out);
                out.push_str(" if ");
                cond.write(out);
                out.push_str(" else ");
                otherwise.write(out);
                out.push(')');
            }
            Kind::Lambda(params, body) => {
                let _ = write!(out, "(lambda {}: ", params.join(", "));
                body.write(out);
                out.push(')');
            }
            Kind::Comprehension(elem, clauses) => {
                out.push('[');
                elem.write(out);
                for clause in clauses {
                    match clause {
                        Clause::For(names, seq) => {
                            let _ = write!(out, " for {} in ", names.join(", "));
                            seq.write(out);
                        }
                        Clause::If(cond) => {
                            out.push_str(" if ");
                            cond.write(out);
                        }
                    }
                }
                out.push(']');
            }
        }
    }
}

fn write_list(out: &mut String, open: &str, items: &[Expr], close: &str) {
    out.push_str(open);
    for (k, item) in items.iter().enumerate() {
        if k > 0 {
            out.push_str(", ");
        }
        item.write(out);
    }
    out.push_str(close);
}

/// A statement. A `pinned` one is never removed by the shrinker (a recursion's base case).
#[derive(Clone, Debug)]
pub struct Stmt {
    pub kind: StmtKind,
    pub pinned: bool,
}

#[derive(Clone, Debug)]
pub enum StmtKind {
    Assign(String, Expr),
    Print(Vec<Expr>),
    If(Expr, Vec<Stmt>, Vec<Stmt>),
    /// `counter = 0`, then `while counter < bound:` the body and `counter += 1`: a loop that
    /// always ends, whatever the shrinker does to `bound` and the body.
    Loop {
        counter: String,
        bound: Expr,
        body: Vec<Stmt>,
    },
    Return(Expr),
    Assert(Expr),
}

impl Stmt {
    pub fn new(kind: StmtKind) -> Stmt {
        Stmt { kind, pinned: false }
    }

    pub fn pinned(mut self) -> Stmt {
        self.pinned = true;
        self
    }

    fn write(&self, out: &mut String, indent: usize) {
        let pad = "    ".repeat(indent);
        match &self.kind {
            StmtKind::Assign(name, value) => {
                let _ = write!(out, "{pad}{name} = ");
                value.write(out);
                out.push('\n');
            }
            StmtKind::Print(values) => {
                out.push_str(&pad);
                out.push_str("print");
                write_list(out, "(", values, ")");
                out.push('\n');
            }
            StmtKind::If(cond, then, otherwise) => {
                let _ = write!(out, "{pad}if ");
                cond.write(out);
                out.push_str(":\n");
                write_block(out, then, indent + 1);
                if !otherwise.is_empty() {
                    let _ = writeln!(out, "{pad}else:");
                    write_block(out, otherwise, indent + 1);
                }
            }
            StmtKind::Loop { counter, bound, body } => {
                let _ = writeln!(out, "{pad}{counter} = 0");
                let _ = write!(out, "{pad}while {counter} < ");
                bound.write(out);
                out.push_str(":\n");
                write_block(out, body, indent + 1);
                let _ = writeln!(out, "{pad}    {counter} += 1");
            }
            StmtKind::Return(value) => {
                let _ = write!(out, "{pad}return ");
                value.write(out);
                out.push('\n');
            }
            StmtKind::Assert(cond) => {
                let _ = write!(out, "{pad}assert ");
                cond.write(out);
                out.push('\n');
            }
        }
    }
}

fn write_block(out: &mut String, body: &[Stmt], indent: usize) {
    for stmt in body {
        stmt.write(out, indent);
    }
}

#[derive(Clone, Debug)]
pub struct Function {
    pub name: String,
    pub params: Vec<(String, Ty)>,
    pub result: Ty,
    pub body: Vec<Stmt>,
}

/// What the generator promised about a program's floats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// Every float value is a small dyadic rational (or ±0, ±inf, NaN) and only exact
    /// operations touch them, so no regrouping of a sum or scan can change a bit: every
    /// executor must print the interpreter's bytes.
    Exact,
    /// `Exact`, with small integers and no NaN or infinity, so that CPython can run it too.
    Python,
    /// The whole language: division, `**` and the transcendental functions, whose results
    /// on a GPU may differ in the last bits (the bounds are in docs/language.md), and
    /// regrouped float sums of inexact values.
    Full,
}

#[derive(Clone, Debug)]
pub struct Program {
    pub profile: Profile,
    pub functions: Vec<Function>,
    pub main: Vec<Stmt>,
}

impl Program {
    pub fn text(&self) -> String {
        let mut out = String::new();
        for f in &self.functions {
            let params = f.params.iter().map(|(n, t)| format!("{n}: {}", t.annotation())).collect::<Vec<_>>();
            let _ = writeln!(out, "def {}({}) -> {}:", f.name, params.join(", "), f.result.annotation());
            write_block(&mut out, &f.body, 1);
        }
        write_block(&mut out, &self.main, 0);
        out
    }

    /// The number of expression nodes and statements.
    pub fn size(&self) -> usize {
        fn block(body: &[Stmt]) -> usize {
            body.iter()
                .map(|s| {
                    1 + match &s.kind {
                        StmtKind::Assign(_, e) | StmtKind::Return(e) | StmtKind::Assert(e) => e.size(),
                        StmtKind::Print(es) => es.iter().map(Expr::size).sum(),
                        StmtKind::If(c, a, b) => c.size() + block(a) + block(b),
                        StmtKind::Loop { bound, body, .. } => bound.size() + block(body),
                    }
                })
                .sum()
        }
        self.functions.iter().map(|f| block(&f.body)).sum::<usize>() + block(&self.main)
    }
}
