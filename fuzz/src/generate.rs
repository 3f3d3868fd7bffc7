//! Random, valid, well-typed Weft programs, built type first: each expression is drawn for a
//! type the context asks for, from the productions that give that type, over the variables in
//! scope. Every size a program computes (ranges, replication, loop trips, recursion depth) is
//! clamped by frozen arithmetic, so that no program, and no shrunk version of it, runs long.
//!
//! The float values of `Profile::Exact` and `Profile::Python` programs are small dyadic
//! rationals (and, for `Exact`, ±0, ±inf and NaN) combined only by operations that are exact on
//! them, so that the order in which an executor sums them cannot change a bit.

use crate::program::{Clause, Expr, Function, Kind, Profile, Program, Stmt, StmtKind, Ty};

/// A function the program may call, as its callers see it.
#[derive(Clone)]
struct Signature {
    name: String,
    params: Vec<Ty>,
    result: Ty,
}

/// The variables in scope, innermost last.
#[derive(Clone, Default)]
struct Scope {
    vars: Vec<(String, Ty)>,
}

impl Scope {
    fn with(&self, name: &str, ty: &Ty) -> Scope {
        let mut s = self.clone();
        s.vars.push((name.to_string(), ty.clone()));
        s
    }

    fn of_type(&self, ty: &Ty) -> Vec<&str> {
        self.vars.iter().filter(|(_, t)| t == ty).map(|(n, _)| n.as_str()).collect()
    }
}

pub struct Generator {
    rng: fastrand::Rng,
    profile: Profile,
    next_name: usize,
    functions: Vec<Signature>,
}

/// The program for `seed`: the same seed gives the same program.
pub fn program(seed: u64) -> Program {
    let mut rng = fastrand::Rng::with_seed(seed);
    let profile = match rng.u32(0..10) {
        0..=3 => Profile::Exact,
        4..=6 => Profile::Python,
        _ => Profile::Full,
    };
    let mut g = Generator { rng, profile, next_name: 0, functions: Vec::new() };
    g.generate()
}

fn i32_lit(n: i64) -> Expr {
    let text = if n == i64::from(i32::MIN) {
        "(-2147483647 - 1)".to_string()
    } else if n < 0 {
        format!("({n})")
    } else {
        n.to_string()
    };
    Expr::lit(Ty::I32, text)
}

fn f32_lit(x: f64) -> Expr {
    let text = if x == 0.0 && x.is_sign_negative() {
        "(-0.0)".to_string()
    } else if x < 0.0 {
        format!("({x:?})")
    } else {
        format!("{x:?}")
    };
    Expr::lit(Ty::F32, text)
}

/// Freezes a node and everything under it.
fn frozen_all(mut e: Expr) -> Expr {
    e.frozen = true;
    for child in e.children_mut() {
        let c = std::mem::replace(child, Expr::lit(Ty::I32, "0"));
        *child = frozen_all(c);
    }
    e
}

/// `e % m` for a literal `m > 0`: a value in `0..m` whatever `e` is. The `%` and `m` are
/// frozen; `e` may shrink.
fn clamp(e: Expr, m: i64) -> Expr {
    Expr::binary(Ty::I32, "%", e, i32_lit(m).frozen()).frozen()
}

/// The types a value may have.
const SCALARS: [Ty; 3] = [Ty::I32, Ty::F32, Ty::Bool];

impl Generator {
    fn name(&mut self, prefix: &str) -> String {
        self.next_name += 1;
        format!("{prefix}{}", self.next_name)
    }

    fn chance(&mut self, percent: u32) -> bool {
        self.rng.u32(0..100) < percent
    }

    fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.rng.usize(0..items.len())].clone()
    }

    fn exact(&self) -> bool {
        self.profile != Profile::Full
    }

    /// A type for a value: scalars most often, sequences nested up to two deep, tuples.
    fn value_type(&mut self, depth: usize) -> Ty {
        match self.rng.u32(0..10) {
            0..=3 => self.pick(&SCALARS),
            4..=6 if depth > 0 => Ty::seq(self.value_type(depth - 1)),
            7 => Ty::Tuple(vec![Ty::I32, Ty::F32]),
            8 if depth > 0 => Ty::seq(Ty::Tuple(vec![Ty::I32, Ty::F32])),
            _ => Ty::seq(self.pick(&[Ty::I32, Ty::F32])),
        }
    }

    fn generate(&mut self) -> Program {
        let mut functions = Vec::new();
        for _ in 0..self.rng.usize(0..4) {
            let f = if self.chance(40) { self.recursive_function() } else { self.function() };
            self.functions.push(Signature {
                name: f.name.clone(),
                params: f.params.iter().map(|(_, t)| t.clone()).collect(),
                result: f.result.clone(),
            });
            functions.push(f);
        }
        let mut main = Vec::new();
        let mut scope = Scope::default();
        for _ in 0..self.rng.usize(1..4) {
            let ty = self.value_type(2);
            let name = self.name("v");
            let value = self.literal(&ty, 2);
            main.push(Stmt::new(StmtKind::Assign(name.clone(), value)));
            scope = scope.with(&name, &ty);
        }
        let statements = self.rng.usize(2..7);
        for k in 0..statements {
            if k + 1 < statements && self.chance(35) {
                let ty = self.value_type(2);
                let name = self.name("v");
                let value = self.expr(&ty, &scope, 3);
                main.push(Stmt::new(StmtKind::Assign(name.clone(), value)));
                scope = scope.with(&name, &ty);
            } else if self.chance(4) {
                let cond = self.expr(&Ty::Bool, &scope, 2);
                main.push(Stmt::new(StmtKind::Assert(cond)));
            } else {
                let count = self.rng.usize(1..3);
                let values = (0..count)
                    .map(|_| {
                        let ty = self.value_type(2);
                        self.expr(&ty, &scope, 3)
                    })
                    .collect();
                main.push(Stmt::new(StmtKind::Print(values)));
            }
        }
        Program { profile: self.profile, functions, main }
    }

    /// A non-recursive helper: parameters, a few bindings (perhaps a loop or a branch), a
    /// result.
    fn function(&mut self) -> Function {
        let name = self.name("f");
        let mut scope = Scope::default();
        let params: Vec<(String, Ty)> = (0..self.rng.usize(1..4))
            .map(|_| {
                let ty = self.value_type(2);
                (self.name("p"), ty)
            })
            .collect();
        for (n, t) in &params {
            scope = scope.with(n, t);
        }
        let result = self.value_type(2);
        let mut body = Vec::new();
        for _ in 0..self.rng.usize(0..3) {
            match self.rng.u32(0..6) {
                0 => body.extend(self.loop_stmt(&mut scope)),
                1 => {
                    // Both branches bind the name, so it is bound after the `if`.
                    let ty = self.value_type(1);
                    let v = self.name("b");
                    let cond = self.expr(&Ty::Bool, &scope, 2);
                    let then = self.expr(&ty, &scope, 2);
                    let otherwise = self.expr(&ty, &scope, 2);
                    body.push(Stmt::new(StmtKind::If(
                        cond,
                        vec![Stmt::new(StmtKind::Assign(v.clone(), then)).pinned()],
                        vec![Stmt::new(StmtKind::Assign(v.clone(), otherwise)).pinned()],
                    )));
                    scope = scope.with(&v, &ty);
                }
                2 => {
                    let cond = self.expr(&Ty::Bool, &scope, 2);
                    let early = self.expr(&result, &scope, 2);
                    body.push(Stmt::new(StmtKind::If(
                        cond,
                        vec![Stmt::new(StmtKind::Return(early)).pinned()],
                        vec![],
                    )));
                }
                _ => {
                    let ty = self.value_type(2);
                    let v = self.name("b");
                    let value = self.expr(&ty, &scope, 3);
                    body.push(Stmt::new(StmtKind::Assign(v.clone(), value)));
                    scope = scope.with(&v, &ty);
                }
            }
        }
        let value = self.expr(&result, &scope, 3);
        body.push(Stmt::new(StmtKind::Return(value)).pinned());
        Function { name, params, result, body }
    }

    /// `acc = init`, then a loop of at most four trips that updates it: `while` inside
    /// whatever parallel code calls the function.
    fn loop_stmt(&mut self, scope: &mut Scope) -> Vec<Stmt> {
        let ty = self.pick(&[Ty::I32, Ty::F32, Ty::seq(Ty::I32), Ty::seq(Ty::F32)]);
        let acc = self.name("acc");
        let counter = self.name("k");
        let init = self.expr(&ty, scope, 2);
        let inner = scope.with(&acc, &ty).with(&counter, &Ty::I32);
        let step = self.expr(&ty, &inner, 2);
        let bound = self.expr(&Ty::I32, scope, 2);
        let bound = Expr::call(Ty::I32, "min", vec![bound, i32_lit(4).frozen()]).frozen();
        *scope = scope.with(&acc, &ty);
        vec![
            Stmt::new(StmtKind::Assign(acc.clone(), init)).pinned(),
            Stmt::new(StmtKind::Loop {
                counter,
                bound,
                body: vec![Stmt::new(StmtKind::Assign(acc, step)).pinned()],
            }),
        ]
    }

    /// A recursive function whose depth depends on its data: counting down a clamped integer,
    /// walking a sequence one element at a time, or splitting it around a pivot (quicksort).
    fn recursive_function(&mut self) -> Function {
        let name = self.name("r");
        match self.rng.u32(0..3) {
            0 => {
                let n = self.name("n");
                let x = self.name("x");
                let xt = self.value_type(1);
                let result = self.value_type(1);
                let scope = Scope::default().with(&n, &Ty::I32).with(&x, &xt);
                let guard = frozen_all(Expr::binary(
                    Ty::Bool,
                    "or",
                    Expr::binary(Ty::Bool, "<=", Expr::var(Ty::I32, &n), i32_lit(0)),
                    Expr::binary(Ty::Bool, ">", Expr::var(Ty::I32, &n), i32_lit(6)),
                ));
                let base = self.expr(&result, &scope, 2);
                let step = self.expr(&xt, &scope, 2);
                let down = frozen_all(Expr::binary(Ty::I32, "-", Expr::var(Ty::I32, &n), i32_lit(1)));
                let r = self.name("rest");
                let call = Expr::call(result.clone(), &name, vec![down, step]).frozen();
                let after = scope.with(&r, &result);
                let combine = self.expr(&result, &after, 2);
                Function {
                    name,
                    params: vec![(n, Ty::I32), (x, xt)],
                    result,
                    body: vec![
                        Stmt::new(StmtKind::If(
                            guard,
                            vec![Stmt::new(StmtKind::Return(base)).pinned()],
                            vec![],
                        ))
                        .pinned(),
                        Stmt::new(StmtKind::Assign(r, call)).pinned(),
                        Stmt::new(StmtKind::Return(combine)).pinned(),
                    ],
                }
            }
            1 => {
                let xs = self.name("xs");
                let elem = self.pick(&[Ty::I32, Ty::F32, Ty::seq(Ty::I32)]);
                let out = self.pick(&[Ty::I32, Ty::F32]);
                let seq = Ty::seq(elem.clone());
                let result = Ty::seq(out.clone());
                let scope = Scope::default().with(&xs, &seq);
                let empty = frozen_all(Expr::binary(
                    Ty::Bool,
                    "==",
                    Expr::call(Ty::I32, "len", vec![Expr::var(seq.clone(), &xs)]),
                    i32_lit(0),
                ));
                let base = self.literal(&result, 1);
                let tail = frozen_all(Expr::new(
                    seq.clone(),
                    Kind::Slice(Box::new(Expr::var(seq.clone(), &xs)), Some(Box::new(i32_lit(1))), None),
                ));
                let call = Expr::call(result.clone(), &name, vec![tail]).frozen();
                let head = self.name("h");
                let with_head = scope.with(&head, &elem);
                let item = self.expr(&out, &with_head, 2);
                let h0 = frozen_all(Expr::new(
                    elem.clone(),
                    Kind::Index(Box::new(Expr::var(seq.clone(), &xs)), Box::new(i32_lit(0))),
                ));
                let front = Expr::new(result.clone(), Kind::List(vec![item]));
                let body_value = Expr::call(result.clone(), "concat", vec![call, front]);
                Function {
                    name,
                    params: vec![(xs, seq)],
                    result,
                    body: vec![
                        Stmt::new(StmtKind::If(
                            empty,
                            vec![Stmt::new(StmtKind::Return(base)).pinned()],
                            vec![],
                        ))
                        .pinned(),
                        Stmt::new(StmtKind::Assign(head, h0)).pinned(),
                        Stmt::new(StmtKind::Return(body_value)).pinned(),
                    ],
                }
            }
            _ => {
                let elem = self.pick(&[Ty::I32, Ty::F32]);
                let seq = Ty::seq(elem.clone());
                let xs = self.name("xs");
                let p = self.name("pivot");
                let (a, b) = (self.name("y"), self.name("y"));
                let var = |n: &str| Expr::var(seq.clone(), n);
                let small = frozen_all(Expr::binary(
                    Ty::Bool,
                    "<=",
                    Expr::call(Ty::I32, "len", vec![var(&xs)]),
                    i32_lit(1),
                ));
                let pivot = frozen_all(Expr::new(
                    elem.clone(),
                    Kind::Index(Box::new(var(&xs)), Box::new(i32_lit(0))),
                ));
                let part = |y: &str, op: &'static str, source: Expr| {
                    frozen_all(Expr::new(
                        seq.clone(),
                        Kind::Comprehension(
                            Box::new(Expr::var(elem.clone(), y)),
                            vec![
                                Clause::For(vec![y.to_string()], source),
                                Clause::If(Expr::binary(
                                    Ty::Bool,
                                    op,
                                    Expr::var(elem.clone(), y),
                                    Expr::var(elem.clone(), &p),
                                )),
                            ],
                        ),
                    ))
                };
                let rest =
                    Expr::new(seq.clone(), Kind::Slice(Box::new(var(&xs)), Some(Box::new(i32_lit(1))), None));
                let lower = Expr::call(seq.clone(), &name, vec![part(&a, "<", var(&xs))]).frozen();
                let upper = Expr::call(seq.clone(), &name, vec![part(&b, ">=", rest)]).frozen();
                let middle = Expr::new(seq.clone(), Kind::List(vec![Expr::var(elem.clone(), &p)]));
                let joined = Expr::call(
                    seq.clone(),
                    "concat",
                    vec![lower, Expr::call(seq.clone(), "concat", vec![middle, upper])],
                );
                Function {
                    name,
                    params: vec![(xs.clone(), seq.clone())],
                    result: seq.clone(),
                    body: vec![
                        Stmt::new(StmtKind::If(
                            small,
                            vec![Stmt::new(StmtKind::Return(var(&xs))).pinned()],
                            vec![],
                        ))
                        .pinned(),
                        Stmt::new(StmtKind::Assign(p, pivot)).pinned(),
                        Stmt::new(StmtKind::Return(joined)).pinned(),
                    ],
                }
            }
        }
    }

    /// A literal value of `ty`, sequences with up to four elements (nested ones ragged, rows
    /// empty sometimes).
    fn literal(&mut self, ty: &Ty, depth: usize) -> Expr {
        match ty {
            Ty::I32 => self.int_literal(),
            Ty::F32 => self.float_literal(),
            Ty::Bool => Expr::lit(Ty::Bool, if self.chance(50) { "True" } else { "False" }),
            Ty::Tuple(parts) => {
                let items = parts.iter().map(|p| self.literal(p, depth)).collect();
                Expr::new(ty.clone(), Kind::Tuple(items))
            }
            Ty::Seq(elem) => {
                if depth == 0 || self.chance(8) {
                    return self.empty(ty);
                }
                let n = self.rng.usize(1..5);
                let items = (0..n).map(|_| self.literal(elem, depth - 1)).collect();
                Expr::new(ty.clone(), Kind::List(items))
            }
            Ty::Fn => Expr::lit(Ty::Fn, "(lambda: 0)"),
        }
    }

    /// An empty sequence of `ty`: a filter that keeps nothing, so that its type is known
    /// without context.
    fn empty(&mut self, ty: &Ty) -> Expr {
        let elem = ty.elem().cloned().unwrap_or(Ty::I32);
        let v = self.name("e");
        let one = self.literal(&elem, 1);
        Expr::new(
            ty.clone(),
            Kind::Comprehension(
                Box::new(Expr::var(elem.clone(), &v)),
                vec![
                    Clause::For(vec![v], Expr::new(ty.clone(), Kind::List(vec![one]))),
                    Clause::If(Expr::lit(Ty::Bool, "False")),
                ],
            ),
        )
    }

    fn int_literal(&mut self) -> Expr {
        if self.profile == Profile::Python || self.chance(70) {
            return i32_lit(self.rng.i64(-4..10));
        }
        let edges = [0, 1, -1, 2, 31, 32, 100, 65536, 2147483647, -2147483648, 2147483646, -2147483647];
        i32_lit(self.pick(&edges))
    }

    fn float_literal(&mut self) -> Expr {
        if self.chance(70) {
            // A small dyadic rational: exact in any sum.
            return f32_lit(self.rng.i64(-16..17) as f64 / 4.0);
        }
        let mut edges = vec!["-0.0", "0.0", "1.0", "0.5"];
        if self.profile != Profile::Python {
            edges.extend(["(1.0 / 0.0)", "(-(1.0 / 0.0))", "(0.0 / 0.0)"]);
        }
        if self.profile == Profile::Full {
            edges.extend(["0.1", "3.0e38", "1e-30", "16777217.0", "-2.5e9", "1e-45"]);
        }
        let text = self.pick(&edges);
        if text == "-0.0" { f32_lit(-0.0) } else { Expr::lit(Ty::F32, text) }
    }

    /// An expression of `ty` over `scope`, at most `depth` levels of productions deep.
    fn expr(&mut self, ty: &Ty, scope: &Scope, depth: usize) -> Expr {
        let vars = scope.of_type(ty);
        if depth == 0 || self.chance(15) {
            if !vars.is_empty() && self.chance(75) {
                let v = self.pick(&vars).to_string();
                return Expr::var(ty.clone(), &v);
            }
            return self.literal(ty, 2);
        }
        if !vars.is_empty() && self.chance(25) {
            let v = self.pick(&vars).to_string();
            return Expr::var(ty.clone(), &v);
        }
        let d = depth - 1;
        // Calls of the program's functions.
        let callable: Vec<Signature> = self.functions.iter().filter(|f| &f.result == ty).cloned().collect();
        if !callable.is_empty() && self.chance(20) {
            let f = self.pick(&callable);
            let args = f.params.iter().map(|p| self.expr(p, scope, d)).collect();
            return Expr::call(ty.clone(), &f.name, args);
        }
        // Sometimes a sequence element, a conditional, or a comprehension's own element.
        match self.rng.u32(0..14) {
            0 => return self.element(ty, scope, d),
            1 => {
                let c = self.expr(&Ty::Bool, scope, d);
                let a = self.expr(ty, scope, d);
                let b = self.expr(ty, scope, d);
                return Expr::new(ty.clone(), Kind::Cond(Box::new(a), Box::new(c), Box::new(b)));
            }
            2 if ty.depth() <= 1 => return self.reduce_to(ty, scope, d),
            _ => {}
        }
        match ty {
            Ty::I32 => self.int_expr(scope, d),
            Ty::F32 => self.float_expr(scope, d),
            Ty::Bool => self.bool_expr(scope, d),
            Ty::Tuple(parts) => {
                let items = parts.iter().map(|p| self.expr(p, scope, d)).collect();
                Expr::new(ty.clone(), Kind::Tuple(items))
            }
            Ty::Seq(elem) => self.seq_expr(ty, elem, scope, d),
            Ty::Fn => Expr::lit(Ty::Fn, "(lambda: 0)"),
        }
    }

    /// `xs[i]`: guarded to an index in range most of the time, raw (and so perhaps E0400)
    /// otherwise.
    fn element(&mut self, ty: &Ty, scope: &Scope, d: usize) -> Expr {
        let seq_ty = Ty::seq(ty.clone());
        let xs = self.expr(&seq_ty, scope, d);
        let i = self.expr(&Ty::I32, scope, d);
        if self.chance(10) {
            return Expr::new(ty.clone(), Kind::Index(Box::new(xs), Box::new(i)));
        }
        // `(xs[i % len(xs)] if len(xs) > 0 else default)`, with `xs` bound once by a
        // comprehension variable would need a statement; repeating the expression is valid.
        let len = Expr::call(Ty::I32, "len", vec![xs.clone()]);
        let index = Expr::binary(Ty::I32, "%", i, len.clone());
        let pick = Expr::new(ty.clone(), Kind::Index(Box::new(xs), Box::new(index)));
        let nonempty = Expr::binary(Ty::Bool, ">", len, i32_lit(0));
        let default = self.literal(ty, 1);
        Expr::new(ty.clone(), Kind::Cond(Box::new(pick), Box::new(nonempty), Box::new(default)))
    }

    /// Indexes into `xs`: in range (`i % len(xs)`, when `xs` is not empty) most of the time,
    /// anything otherwise.
    fn indexes(&mut self, xs: &Expr, scope: &Scope, d: usize) -> Expr {
        let idx = self.expr(&Ty::seq(Ty::I32), scope, d);
        if self.chance(20) {
            return idx;
        }
        let c = self.name("c");
        let len = Expr::call(Ty::I32, "len", vec![xs.clone()]);
        let wrapped = Expr::binary(
            Ty::I32,
            "%",
            Expr::var(Ty::I32, &c),
            Expr::call(Ty::I32, "max", vec![len, i32_lit(1)]),
        );
        Expr::new(Ty::seq(Ty::I32), Kind::Comprehension(Box::new(wrapped), vec![Clause::For(vec![c], idx)]))
    }

    /// A reduction of a sequence to `ty` by an associative operator: `reduce`, or the
    /// element of a `scan`.
    fn reduce_to(&mut self, ty: &Ty, scope: &Scope, d: usize) -> Expr {
        let (a, b) = (self.name("a"), self.name("a"));
        let ops: Vec<&str> = match ty {
            Ty::I32 => vec!["+", "*", "min", "max", "&", "|", "^"],
            Ty::F32 if self.exact() => vec!["+", "min", "max"],
            Ty::F32 => vec!["+", "*", "min", "max"],
            Ty::Bool => vec!["and", "or"],
            _ => return self.literal(ty, 1),
        };
        let op = self.pick(&ops);
        let (va, vb) = (Expr::var(ty.clone(), &a), Expr::var(ty.clone(), &b));
        let body = match op {
            "min" | "max" => Expr::call(ty.clone(), op, vec![va, vb]),
            "+" => Expr::binary(ty.clone(), "+", va, vb),
            "*" => Expr::binary(ty.clone(), "*", va, vb),
            "&" => Expr::binary(ty.clone(), "&", va, vb),
            "|" => Expr::binary(ty.clone(), "|", va, vb),
            "^" => Expr::binary(ty.clone(), "^", va, vb),
            "and" => Expr::binary(ty.clone(), "and", va, vb),
            _ => Expr::binary(ty.clone(), "or", va, vb),
        };
        let lambda = Expr::new(Ty::Fn, Kind::Lambda(vec![a, b], Box::new(body)));
        let xs = self.expr(&Ty::seq(ty.clone()), scope, d);
        if self.chance(60) {
            let init = self.expr(ty, scope, d.min(1));
            Expr::call(ty.clone(), "reduce", vec![lambda, xs, init])
        } else {
            // The last element of an inclusive scan, on a non-empty sequence.
            let extended = Expr::call(
                Ty::seq(ty.clone()),
                "concat",
                vec![Expr::new(Ty::seq(ty.clone()), Kind::List(vec![self.literal(ty, 0)])), xs],
            );
            let scanned = Expr::call(Ty::seq(ty.clone()), "scan", vec![lambda, extended]);
            Expr::new(ty.clone(), Kind::Index(Box::new(scanned), Box::new(i32_lit(-1))))
        }
    }

    fn any_seq(&mut self, scope: &Scope, d: usize) -> Expr {
        let ty = Ty::seq(self.value_type(1));
        self.expr(&ty, scope, d)
    }

    fn int_expr(&mut self, scope: &Scope, d: usize) -> Expr {
        let i = Ty::I32;
        match self.rng.u32(0..24) {
            0..=2 => {
                let op = self.pick(&["+", "-", "*"]);
                let (a, b) = (self.expr(&i, scope, d), self.expr(&i, scope, d));
                Expr::binary(i, op, a, b)
            }
            3 => {
                let op = self.pick(&["//", "%"]);
                let a = self.expr(&i, scope, d);
                let b = if self.chance(75) {
                    i32_lit(self.pick(&[1, 2, 3, -3, 7, -1]))
                } else {
                    self.expr(&i, scope, d)
                };
                Expr::binary(i, op, a, b)
            }
            4 => {
                let op = self.pick(&["&", "|", "^"]);
                let (a, b) = (self.expr(&i, scope, d), self.expr(&i, scope, d));
                Expr::binary(i, op, a, b)
            }
            5 => {
                let op = self.pick(&["<<", ">>"]);
                let a = self.expr(&i, scope, d);
                Expr::binary(i, op, a, i32_lit(self.rng.i64(0..40)))
            }
            6 => {
                let a = self.expr(&i, scope, d);
                Expr::binary(i, "**", a, i32_lit(self.rng.i64(0..5)))
            }
            7 => {
                let op = self.pick(&["-", "~"]);
                Expr::new(i.clone(), Kind::Unary(op, Box::new(self.expr(&i, scope, d))))
            }
            8 => Expr::call(i.clone(), "abs", vec![self.expr(&i, scope, d)]),
            9 => Expr::call(i, "len", vec![self.any_seq(scope, d)]),
            10 => {
                let f = self.pick(&["sum", "product", "min", "max"]);
                Expr::call(i.clone(), f, vec![self.expr(&Ty::seq(Ty::I32), scope, d)])
            }
            11 => {
                let f = self.pick(&["min", "max"]);
                let (a, b) = (self.expr(&i, scope, d), self.expr(&i, scope, d));
                Expr::call(i, f, vec![a, b])
            }
            12 => {
                let f = self.pick(&["argmin", "argmax"]);
                let elem = self.pick(&[Ty::I32, Ty::F32]);
                Expr::call(i, f, vec![self.expr(&Ty::seq(elem), scope, d)])
            }
            13 => Expr::call(i, "count", vec![self.expr(&Ty::seq(Ty::Bool), scope, d)]),
            14 => Expr::call(i, "i32", vec![self.expr(&Ty::F32, scope, d)]),
            15 => Expr::call(i, "i32", vec![self.expr(&Ty::Bool, scope, d)]),
            16 => {
                let t = Ty::Tuple(vec![Ty::I32, Ty::F32]);
                Expr::new(i, Kind::Field(Box::new(self.expr(&t, scope, d)), 0))
            }
            17 => {
                // 64-bit arithmetic, narrowed back: `i32(i64(a) * i64(b))`.
                let op = self.pick(&["+", "-", "*", "//", "%"]);
                let (a, b) = (self.expr(&i, scope, d), self.expr(&i, scope, d));
                let wide = |e: Expr| Expr::call(Ty::I32, "i64", vec![e]);
                let b = if matches!(op, "//" | "%") { i32_lit(self.pick(&[3, -7, 1000])) } else { b };
                Expr::call(i.clone(), "i32", vec![Expr::binary(Ty::I32, op, wide(a), wide(b))])
            }
            18 => {
                // n-ary `map` over equal lengths: a comprehension and its reverse.
                let xs = self.expr(&Ty::seq(Ty::I32), scope, d);
                let (a, b) = (self.name("l"), self.name("l"));
                let body = Expr::binary(Ty::I32, "-", Expr::var(Ty::I32, &a), Expr::var(Ty::I32, &b));
                let f = Expr::new(Ty::Fn, Kind::Lambda(vec![a, b], Box::new(body)));
                let mapped = Expr::call(
                    Ty::seq(Ty::I32),
                    "map",
                    vec![f, xs.clone(), Expr::call(Ty::seq(Ty::I32), "reverse", vec![xs])],
                );
                Expr::call(i, "sum", vec![mapped])
            }
            _ => self.int_literal(),
        }
    }

    /// A small non-negative integer: a length, or a literal.
    fn small_int(&mut self, scope: &Scope, d: usize) -> Expr {
        if self.chance(50) {
            Expr::call(Ty::I32, "len", vec![self.any_seq(scope, d)])
        } else {
            i32_lit(self.rng.i64(0..6))
        }
    }

    fn float_expr(&mut self, scope: &Scope, d: usize) -> Expr {
        let f = Ty::F32;
        let exact = self.exact();
        match self.rng.u32(0..20) {
            0..=2 => {
                let op = self.pick(&["+", "-", "*"]);
                // Products of products grow the mantissa: keep exact programs' products shallow.
                let d = if exact && op == "*" { d.min(1) } else { d };
                let (a, b) = (self.expr(&f, scope, d), self.expr(&f, scope, d));
                Expr::binary(f, op, a, b)
            }
            3 => {
                let op = if exact { self.pick(&["//", "%"]) } else { self.pick(&["/", "//", "%", "**"]) };
                let a = self.expr(&f, scope, d);
                let b = if self.chance(60) {
                    f32_lit(self.pick(&[2.0, -0.5, 4.0, 0.25, 5.0]))
                } else {
                    self.expr(&f, scope, d)
                };
                Expr::binary(f, op, a, b)
            }
            4 if !exact => {
                let a = self.expr(&f, scope, d);
                let e = f32_lit(self.pick(&[0.5, 2.0, 3.0, -1.0, 1.5, -2.0, 0.0]));
                Expr::binary(f, "**", a, e)
            }
            5 => Expr::new(f.clone(), Kind::Unary("-", Box::new(self.expr(&f, scope, d)))),
            6 => {
                let name = self.pick(&["abs", "floor", "ceil"]);
                Expr::call(f.clone(), name, vec![self.expr(&f, scope, d)])
            }
            7 if !exact => {
                let name = self.pick(&["sqrt", "exp", "log", "sin", "cos", "tan", "erf"]);
                Expr::call(f.clone(), name, vec![self.expr(&f, scope, d)])
            }
            8 if !exact => {
                let name = self.pick(&["atan2", "pow"]);
                let (a, b) = (self.expr(&f, scope, d), self.expr(&f, scope, d));
                Expr::call(f, name, vec![a, b])
            }
            9 => {
                let name = self.pick(&["min", "max"]);
                let (a, b) = (self.expr(&f, scope, d), self.expr(&f, scope, d));
                Expr::call(f, name, vec![a, b])
            }
            10 => {
                let name = if exact {
                    self.pick(&["sum", "min", "max"])
                } else {
                    self.pick(&["sum", "product", "min", "max"])
                };
                Expr::call(f.clone(), name, vec![self.expr(&Ty::seq(Ty::F32), scope, d)])
            }
            11 => {
                let n = if exact { self.small_int(scope, d) } else { self.expr(&Ty::I32, scope, d) };
                Expr::call(f, "f32", vec![n])
            }
            12 => {
                let t = Ty::Tuple(vec![Ty::I32, Ty::F32]);
                Expr::new(f, Kind::Field(Box::new(self.expr(&t, scope, d)), 1))
            }
            13 => {
                // 64-bit arithmetic, narrowed back: `f32(f64(a) + f64(b))`.
                let op = if exact { self.pick(&["+", "-", "*"]) } else { self.pick(&["+", "-", "*", "/"]) };
                let (a, b) = (self.expr(&f, scope, d.min(1)), self.expr(&f, scope, d.min(1)));
                let wide = |e: Expr| Expr::call(Ty::F32, "f64", vec![e]);
                Expr::call(f.clone(), "f32", vec![Expr::binary(Ty::F32, op, wide(a), wide(b))])
            }
            _ => self.float_literal(),
        }
    }

    fn bool_expr(&mut self, scope: &Scope, d: usize) -> Expr {
        let b = Ty::Bool;
        match self.rng.u32(0..10) {
            0..=2 => {
                let t = self.pick(&[Ty::I32, Ty::F32]);
                let op = self.pick(&["==", "!=", "<", "<=", ">", ">="]);
                let (x, y) = (self.expr(&t, scope, d), self.expr(&t, scope, d));
                Expr::binary(b, op, x, y)
            }
            3 => {
                let op = self.pick(&["and", "or"]);
                let (x, y) = (self.expr(&b, scope, d), self.expr(&b, scope, d));
                Expr::binary(b, op, x, y)
            }
            4 => Expr::new(b.clone(), Kind::Unary("not ", Box::new(self.expr(&b, scope, d)))),
            5 => {
                let f = self.pick(&["any", "all"]);
                Expr::call(b, f, vec![self.expr(&Ty::seq(Ty::Bool), scope, d)])
            }
            6 => {
                let t = self.pick(&[Ty::I32, Ty::F32]);
                Expr::call(b, "bool", vec![self.expr(&t, scope, d)])
            }
            7 => {
                // Structural equality of sequences and tuples.
                let t = self.value_type(1);
                let op = self.pick(&["==", "!="]);
                let (x, y) = (self.expr(&t, scope, d), self.expr(&t, scope, d));
                Expr::binary(b, op, x, y)
            }
            _ => self.literal(&b, 0),
        }
    }

    /// A comprehension producing `ty`: `[e for v in xs if p]`, sometimes over two clauses
    /// or over pairs.
    fn comprehension(&mut self, ty: &Ty, elem: &Ty, scope: &Scope, d: usize) -> Expr {
        let source_elem = self.value_type(1);
        let source = self.expr(&Ty::seq(source_elem.clone()), scope, d);
        let mut clauses = Vec::new();
        let mut inner = scope.clone();
        match (&source_elem, self.chance(50)) {
            (Ty::Tuple(parts), true) => {
                let names: Vec<String> = parts.iter().map(|_| self.name("c")).collect();
                for (n, t) in names.iter().zip(parts) {
                    inner = inner.with(n, t);
                }
                clauses.push(Clause::For(names, source));
            }
            (Ty::Seq(row), true) => {
                // `for row in xss for x in row`: the second clause depends on the first.
                let (r, x) = (self.name("c"), self.name("c"));
                clauses.push(Clause::For(vec![r.clone()], source));
                clauses.push(Clause::For(vec![x.clone()], Expr::var(source_elem.clone(), &r)));
                inner = inner.with(&r, &source_elem).with(&x, row);
            }
            _ => {
                let v = self.name("c");
                inner = inner.with(&v, &source_elem);
                clauses.push(Clause::For(vec![v], source));
            }
        }
        if self.chance(40) {
            let cond = self.expr(&Ty::Bool, &inner, d.min(2));
            clauses.push(Clause::If(cond));
        }
        let body = self.expr(elem, &inner, d);
        Expr::new(ty.clone(), Kind::Comprehension(Box::new(body), clauses))
    }

    fn lambda(&mut self, param: &Ty, result: &Ty, scope: &Scope, d: usize) -> Expr {
        let p = self.name("l");
        let body = self.expr(result, &scope.with(&p, param), d);
        Expr::new(Ty::Fn, Kind::Lambda(vec![p], Box::new(body)))
    }

    fn seq_expr(&mut self, ty: &Ty, elem: &Ty, scope: &Scope, d: usize) -> Expr {
        let orderable = matches!(elem, Ty::I32 | Ty::F32) || *elem == Ty::Tuple(vec![Ty::I32, Ty::F32]);
        let arithmetic = matches!(elem, Ty::I32 | Ty::F32);
        loop {
            return match self.rng.u32(0..24) {
                0..=4 => self.comprehension(ty, elem, scope, d),
                5 => {
                    let from = self.value_type(1);
                    let xs = self.expr(&Ty::seq(from.clone()), scope, d);
                    let f = self.lambda(&from, elem, scope, d);
                    Expr::call(ty.clone(), "map", vec![f, xs])
                }
                6 => {
                    let xs = self.expr(ty, scope, d);
                    let p = self.lambda(elem, &Ty::Bool, scope, d.min(2));
                    Expr::call(ty.clone(), "filter", vec![p, xs])
                }
                7 => {
                    let (a, b) = (self.expr(ty, scope, d), self.expr(ty, scope, d));
                    Expr::call(ty.clone(), "concat", vec![a, b])
                }
                8 => Expr::call(ty.clone(), "reverse", vec![self.expr(ty, scope, d)]),
                9 => {
                    let xs = self.expr(ty, scope, d);
                    let lo = self.chance(60).then(|| Box::new(i32_lit(self.rng.i64(-3..4))));
                    let hi = self.chance(60).then(|| Box::new(i32_lit(self.rng.i64(-3..6))));
                    Expr::new(ty.clone(), Kind::Slice(Box::new(xs), lo, hi))
                }
                10 if orderable => Expr::call(ty.clone(), "sort", vec![self.expr(ty, scope, d)]),
                11 if arithmetic => {
                    let (a, b) = (self.name("a"), self.name("a"));
                    let ops: &[&str] = if self.exact() && *elem == Ty::F32 {
                        &["+", "min", "max"]
                    } else {
                        &["+", "min", "max", "*"]
                    };
                    let op = self.pick(ops);
                    let (va, vb) = (Expr::var(elem.clone(), &a), Expr::var(elem.clone(), &b));
                    let body = if op == "min" || op == "max" {
                        Expr::call(elem.clone(), op, vec![va, vb])
                    } else {
                        Expr::binary(elem.clone(), op, va, vb)
                    };
                    let lambda = Expr::new(Ty::Fn, Kind::Lambda(vec![a, b], Box::new(body)));
                    let xs = self.expr(ty, scope, d);
                    if self.chance(50) {
                        Expr::call(ty.clone(), "scan", vec![lambda, xs])
                    } else {
                        let init = self.expr(elem, scope, d.min(1));
                        Expr::call(ty.clone(), "exclusive_scan", vec![lambda, init, xs])
                    }
                }
                12 => {
                    let xs = self.expr(ty, scope, d);
                    let idx = self.indexes(&xs, scope, d);
                    Expr::call(ty.clone(), "gather", vec![xs, idx])
                }
                13 => {
                    let src = self.expr(ty, scope, d);
                    let dst = self.expr(ty, scope, d);
                    let idx = self.indexes(&dst, scope, d);
                    Expr::call(ty.clone(), "scatter", vec![src, idx, dst])
                }
                14 => {
                    let xs = self.expr(ty, scope, d);
                    let idx = Expr::call(
                        Ty::seq(Ty::I32),
                        "reverse",
                        vec![Expr::call(Ty::seq(Ty::I32), "indices", vec![xs.clone()])],
                    );
                    Expr::call(ty.clone(), "permute", vec![xs, idx])
                }
                15 => {
                    let x = self.expr(elem, scope, d);
                    let n = clamp(self.expr(&Ty::I32, scope, d), 4);
                    Expr::call(ty.clone(), "replicate", vec![x, n])
                }
                16 if *elem == Ty::I32 => match self.rng.u32(0..4) {
                    0 => Expr::call(ty.clone(), "range", vec![clamp(self.expr(&Ty::I32, scope, d), 6)]),
                    1 => Expr::call(ty.clone(), "indices", vec![self.any_seq(scope, d)]),
                    2 => {
                        let row = self.value_type(0);
                        Expr::call(ty.clone(), "lengths", vec![self.expr(&Ty::seq(Ty::seq(row)), scope, d)])
                    }
                    _ if self.profile != Profile::Python => {
                        let n = clamp(self.expr(&Ty::I32, scope, d), 7);
                        let lo = self.expr(&Ty::I32, scope, d);
                        let seed = self.expr(&Ty::I32, scope, d);
                        let hi = Expr::binary(Ty::I32, "+", lo.clone(), i32_lit(self.rng.i64(1..20)));
                        Expr::call(ty.clone(), "random_i32", vec![n, lo, hi, seed])
                    }
                    _ => Expr::call(ty.clone(), "range", vec![clamp(self.expr(&Ty::I32, scope, d), 6)]),
                },
                17 if *elem == Ty::F32 && self.profile == Profile::Full => {
                    let n = clamp(self.expr(&Ty::I32, scope, d), 7);
                    let seed = self.expr(&Ty::I32, scope, d);
                    Expr::call(ty.clone(), "random_f32", vec![n, seed])
                }
                18 => Expr::call(ty.clone(), "flatten", vec![self.expr(&Ty::seq(ty.clone()), scope, d)]),
                19 if matches!(elem, Ty::Seq(_)) => {
                    // `partition(flatten(xss), lengths(xss))`: valid lengths by construction.
                    let xss = self.expr(ty, scope, d);
                    let flat = Expr::call(elem.clone(), "flatten", vec![xss.clone()]);
                    let lens = Expr::call(Ty::seq(Ty::I32), "lengths", vec![xss]);
                    Expr::call(ty.clone(), "partition", vec![flat, lens])
                }
                20 if matches!(elem, Ty::Tuple(_)) => {
                    let Ty::Tuple(parts) = elem else { unreachable!() };
                    let args = parts.iter().map(|p| self.expr(&Ty::seq(p.clone()), scope, d)).collect();
                    Expr::call(ty.clone(), "zip", args)
                }
                21 => {
                    // A component of `unzip`.
                    let other = self.pick(&SCALARS);
                    let pair = Ty::Tuple(vec![elem.clone(), other.clone()]);
                    let ps = self.expr(&Ty::seq(pair), scope, d);
                    let both = Ty::Tuple(vec![ty.clone(), Ty::seq(other)]);
                    Expr::new(ty.clone(), Kind::Field(Box::new(Expr::call(both, "unzip", vec![ps])), 0))
                }
                22 => self.literal(ty, 2),
                23 => self.empty(ty),
                _ => continue,
            };
        }
    }
}
