//! Tests of the interpreter on core programs built by hand (the front end that lowers source
//! to the core is tested separately): printing, operator semantics, closures passed to the
//! prelude, loops, run-time errors with their codes and spans, deep recursion and data loading.

use std::path::PathBuf;

use rowan::{TextRange, TextSize};

use super::*;
use weft_core::types::{Scalar, Type};
use weft_core::{BinaryOp, Expr, Function, Literal, Pattern, Prim, PrintArg, Program, Var, VarId};

/// Builds one core function; every expression gets its own span, `base + 10 * id`.
struct Builder {
    f: Function,
    base: u32,
}

fn unit_ty() -> Type {
    Type::Tuple(Vec::new())
}

impl Builder {
    fn new(name: &str, base: u32) -> Builder {
        Builder {
            f: Function {
                name: name.to_string(),
                params: Vec::new(),
                ret: unit_ty(),
                body: 0,
                vars: Vec::new(),
                exprs: Vec::new(),
                types: Vec::new(),
                spans: Vec::new(),
                equal_lengths: Vec::new(),
            },
            base,
        }
    }

    fn var(&mut self, name: &str, ty: Type) -> VarId {
        self.f.vars.push(Var { name: name.to_string(), ty });
        (self.f.vars.len() - 1) as VarId
    }

    fn param(&mut self, name: &str, ty: Type) -> VarId {
        let v = self.var(name, ty);
        self.f.params.push(v);
        v
    }

    fn e(&mut self, expr: Expr, ty: Type) -> ExprId {
        let id = self.f.exprs.len() as u32;
        self.f.exprs.push(expr);
        self.f.types.push(ty);
        self.f.spans.push(TextRange::at(TextSize::from(self.base + 10 * id), TextSize::from(5)));
        id
    }

    fn span(&self, id: ExprId) -> TextRange {
        self.f.span(id)
    }

    fn i32(&mut self, i: i64) -> ExprId {
        self.e(Expr::Literal(Literal::Int(i, Scalar::I32)), Type::I32)
    }

    fn f32(&mut self, x: f64) -> ExprId {
        self.e(Expr::Literal(Literal::Float(x, Scalar::F32)), Type::F32)
    }

    fn f64(&mut self, x: f64) -> ExprId {
        self.e(Expr::Literal(Literal::Float(x, Scalar::F64)), Type::Scalar(Scalar::F64))
    }

    fn boolean(&mut self, b: bool) -> ExprId {
        self.e(Expr::Literal(Literal::Bool(b)), Type::BOOL)
    }

    fn read(&mut self, v: VarId) -> ExprId {
        let ty = self.f.vars[v as usize].ty.clone();
        self.e(Expr::Var(v), ty)
    }

    fn bin(&mut self, op: BinaryOp, lhs: ExprId, rhs: ExprId) -> ExprId {
        let ty = if op.is_comparison() { Type::BOOL } else { self.f.ty(lhs).clone() };
        let ty = match (op, ty.as_scalar()) {
            (BinaryOp::Div, Some(s)) => Type::Scalar(s.float_of().unwrap_or(s)),
            _ => ty,
        };
        self.e(Expr::Binary { op, lhs, rhs }, ty)
    }

    fn list(&mut self, items: Vec<ExprId>, elem: Type) -> ExprId {
        self.e(Expr::List(items), Type::seq(elem))
    }

    fn prim(&mut self, prim: Prim, args: Vec<ExprId>, ty: Type) -> ExprId {
        self.e(Expr::Prim { prim, args, funcs: Vec::new() }, ty)
    }

    fn print(&mut self, args: Vec<PrintArg>) -> ExprId {
        self.e(Expr::Print { sink: weft_core::Sink::Text, args }, unit_ty())
    }

    fn print_values(&mut self, values: Vec<ExprId>) -> ExprId {
        self.print(values.into_iter().map(PrintArg::Value).collect())
    }

    fn let_(&mut self, v: VarId, value: ExprId, body: ExprId) -> ExprId {
        let ty = self.f.ty(body).clone();
        self.e(Expr::Let { pattern: Pattern::Var(v), value, body }, ty)
    }

    /// Statements in order, as nested `let _ = s in ...`, ending in `()`.
    fn block(&mut self, stmts: Vec<ExprId>) -> ExprId {
        let mut body = self.e(Expr::Tuple(Vec::new()), unit_ty());
        for s in stmts.into_iter().rev() {
            body = self.e(Expr::Let { pattern: Pattern::Wildcard, value: s, body }, unit_ty());
        }
        body
    }

    fn finish(mut self, body: ExprId) -> Function {
        self.f.body = body;
        self.f.ret = self.f.ty(body).clone();
        self.f
    }
}

/// Output in a string; files from a directory.
struct TestHost {
    out: String,
    dir: PathBuf,
}

impl TestHost {
    fn new() -> TestHost {
        TestHost { out: String::new(), dir: std::env::temp_dir() }
    }
}

impl Host for TestHost {
    fn print(&mut self, line: &str) {
        self.out.push_str(line);
    }

    /// A chart as its data, so that executors are compared on what they would draw.
    fn draw(&mut self, chart: crate::chart::Chart) {
        self.out.push_str(&format!("{chart:?}\n"));
    }

    fn read_file(&mut self, path: &str) -> std::io::Result<Vec<u8>> {
        std::fs::read(self.dir.join(path))
    }
}

fn program(functions: Vec<Function>, main: Function) -> Program {
    Program { functions, main }
}

/// Runs `main` alone and gives what it printed, or the error.
fn run_main(main: Function) -> Result<String, Diagnostic> {
    run_program(&program(Vec::new(), main))
}

fn run_program(p: &Program) -> Result<String, Diagnostic> {
    let mut host = TestHost::new();
    run(p, &mut host).map(|()| host.out)
}

#[test]
fn print_shows_values_as_python_repr() {
    let mut b = Builder::new("main", 0);
    let one = b.i32(1);
    let (x, y) = (b.f32(0.1), b.f32(0.2));
    let sum32 = b.bin(BinaryOp::Add, x, y);
    let (x, y) = (b.f64(0.1), b.f64(0.2));
    let sum64 = b.bin(BinaryOp::Add, x, y);
    let tiny = b.f64(1e-7);
    let t = b.boolean(true);
    let half = b.f32(2.5);
    let pair = b.e(Expr::Tuple(vec![t, half]), Type::Tuple(vec![Type::BOOL, Type::F32]));
    let (i1, i2) = (b.i32(1), b.i32(2));
    let row = b.list(vec![i1, i2], Type::I32);
    let empty = b.list(vec![], Type::I32);
    let rows = b.list(vec![row, empty], Type::seq(Type::I32));
    let big = b.f32(1e16);
    let line = b.print(vec![
        PrintArg::Value(one),
        PrintArg::Text("text".to_string()),
        PrintArg::Value(sum32),
        PrintArg::Value(sum64),
        PrintArg::Value(tiny),
        PrintArg::Value(pair),
        PrintArg::Value(rows),
        PrintArg::Value(big),
    ]);
    let empty_line = b.print(vec![]);
    let body = b.block(vec![line, empty_line]);
    assert_eq!(
        run_main(b.finish(body)).expect("runs"),
        "1 text 0.3 0.30000000000000004 1e-07 (True, 2.5) [[1, 2], []] 1e+16\n\n"
    );
}

#[test]
fn integer_operators_floor_wrap_and_shift() {
    let mut b = Builder::new("main", 0);
    let mut values = Vec::new();
    for (op, x, y) in [
        (BinaryOp::FloorDiv, -7, 2),
        (BinaryOp::Mod, -7, 2),
        (BinaryOp::Mod, 7, -2),
        (BinaryOp::Add, 2147483647, 1),
        (BinaryOp::Shl, 1, 40),
        (BinaryOp::Shr, -9, 1),
        (BinaryOp::Pow, 2, 31),
        (BinaryOp::Div, 7, 2),
    ] {
        let (x, y) = (b.i32(x), b.i32(y));
        values.push(b.bin(op, x, y));
    }
    let (x, y) = (b.f32(-7.5), b.f32(2.0));
    values.push(b.bin(BinaryOp::FloorDiv, x, y));
    let (x, y) = (b.f32(-7.5), b.f32(2.0));
    values.push(b.bin(BinaryOp::Mod, x, y));
    let line = b.print_values(values);
    let body = b.block(vec![line]);
    assert_eq!(
        run_main(b.finish(body)).expect("runs"),
        "-4 1 -1 -2147483648 0 -5 -2147483648 3.5 -4.0 0.5\n"
    );
}

#[test]
fn division_by_zero_points_at_the_operator() {
    let mut b = Builder::new("main", 0);
    let printed = b.i32(5);
    let first = b.print_values(vec![printed]);
    let (x, y) = (b.i32(1), b.i32(0));
    let div = b.bin(BinaryOp::Mod, x, y);
    let second = b.print_values(vec![div]);
    let body = b.block(vec![first, second]);
    let span = b.span(div);
    let p = program(Vec::new(), b.finish(body));
    let mut host = TestHost::new();
    let err = run(&p, &mut host).unwrap_err();
    assert_eq!(
        (err.code, err.range, err.message.as_str()),
        (Code::DivisionByZero, span, "modulo by zero: 1 % 0")
    );
    assert_eq!(host.out, "5\n", "output before the error stays printed");
}

#[test]
fn index_out_of_range_is_e0400_at_the_index() {
    let mut b = Builder::new("main", 0);
    let xs = b.var("xs", Type::seq(Type::I32));
    let items = [10, 20, 30, 40, 50].map(|i| b.i32(i)).to_vec();
    let list = b.list(items, Type::I32);
    let (r, minus_one) = (b.read(xs), b.i32(-1));
    let last = b.e(Expr::Index { seq: r, index: minus_one, in_bounds: false }, Type::I32);
    let ok = b.print_values(vec![last]);
    let (r, seven) = (b.read(xs), b.i32(7));
    let bad = b.e(Expr::Index { seq: r, index: seven, in_bounds: false }, Type::I32);
    let fails = b.print_values(vec![bad]);
    let stmts = b.block(vec![ok, fails]);
    let body = b.let_(xs, list, stmts);
    let span = b.span(bad);
    let p = program(Vec::new(), b.finish(body));
    let mut host = TestHost::new();
    let err = run(&p, &mut host).unwrap_err();
    assert_eq!(host.out, "50\n");
    assert_eq!(err.code, Code::IndexOutOfRange);
    assert_eq!(err.range, span);
    assert_eq!(err.message, "index 7 is out of range for a sequence of length 5");
}

#[test]
fn slices_clamp_like_python() {
    let mut b = Builder::new("main", 0);
    let xs = b.var("xs", Type::seq(Type::I32));
    let ten = b.i32(10);
    let range = b.prim(Prim::Range, vec![ten], Type::seq(Type::I32));
    let mut slices = Vec::new();
    for (start, stop, step) in [
        (Some(2), Some(8), Some(3)),
        (None, None, Some(-1)),
        (Some(-3), Some(100), None),
        (Some(8), Some(2), None),
    ] {
        let seq = b.read(xs);
        let [start, stop, step] = [start, stop, step].map(|p| p.map(|i| b.i32(i)));
        slices.push(b.e(Expr::Slice { seq, start, stop, step }, Type::seq(Type::I32)));
    }
    let line = b.print_values(slices);
    let (seq, zero) = (b.read(xs), b.i32(0));
    let bad = b.e(Expr::Slice { seq, start: None, stop: None, step: Some(zero) }, Type::seq(Type::I32));
    let bad_line = b.print_values(vec![bad]);
    let stmts = b.block(vec![line, bad_line]);
    let body = b.let_(xs, range, stmts);
    let span = b.span(bad);
    let p = program(Vec::new(), b.finish(body));
    let mut host = TestHost::new();
    let err = run(&p, &mut host).unwrap_err();
    assert_eq!(host.out, "[2, 5] [9, 8, 7, 6, 5, 4, 3, 2, 1, 0] [7, 8, 9] []\n");
    assert_eq!((err.code, err.range), (Code::InvalidArgument, span));
}

/// `fn#0(k, x) = k * x`, and `main` printing `map(fn#0{k}, range(5))` with `k = 3`.
#[test]
fn map_applies_a_closure_with_captures() {
    let mut f = Builder::new("scale", 1000);
    let k = f.param("k", Type::I32);
    let x = f.param("x", Type::I32);
    let (rk, rx) = (f.read(k), f.read(x));
    let body = f.bin(BinaryOp::Mul, rk, rx);
    let scale = f.finish(body);

    let mut b = Builder::new("main", 0);
    let k = b.var("k", Type::I32);
    let three = b.i32(3);
    let five = b.i32(5);
    let xs = b.prim(Prim::Range, vec![five], Type::seq(Type::I32));
    let captured = b.read(k);
    let mapped = b.e(
        Expr::Prim {
            prim: Prim::Map,
            args: vec![xs],
            funcs: vec![Callee { func: 0, captures: vec![captured] }],
        },
        Type::seq(Type::I32),
    );
    let line = b.print_values(vec![mapped]);
    let stmts = b.block(vec![line]);
    let body = b.let_(k, three, stmts);
    assert_eq!(run_program(&program(vec![scale], b.finish(body))).expect("runs"), "[0, 3, 6, 9, 12]\n");
}

#[test]
fn map_of_unequal_lengths_is_e0403() {
    let mut f = Builder::new("add", 1000);
    let x = f.param("x", Type::I32);
    let y = f.param("y", Type::I32);
    let (rx, ry) = (f.read(x), f.read(y));
    let body = f.bin(BinaryOp::Add, rx, ry);
    let add = f.finish(body);

    let mut b = Builder::new("main", 0);
    let (three, four) = (b.i32(3), b.i32(4));
    let xs = b.prim(Prim::Range, vec![three], Type::seq(Type::I32));
    let ys = b.prim(Prim::Range, vec![four], Type::seq(Type::I32));
    let mapped = b.e(
        Expr::Prim { prim: Prim::Map, args: vec![xs, ys], funcs: vec![Callee { func: 0, captures: vec![] }] },
        Type::seq(Type::I32),
    );
    let line = b.print_values(vec![mapped]);
    let body = b.block(vec![line]);
    let span = b.span(mapped);
    let err = run_program(&program(vec![add], b.finish(body))).unwrap_err();
    assert_eq!((err.code, err.range), (Code::LengthMismatch, span));
    assert_eq!(err.message, "map needs sequences of equal length, got lengths 3 and 4");
}

/// `s = 0; for x in range(10): s = s + x; print(s)`, then a `while` loop doubling `n` below 100.
#[test]
fn loops_carry_state() {
    let mut b = Builder::new("main", 0);
    let s = b.var("s", Type::I32);
    let x = b.var("x", Type::I32);
    let zero = b.i32(0);
    let ten = b.i32(10);
    let seq = b.prim(Prim::Range, vec![ten], Type::seq(Type::I32));
    let (rs, rx) = (b.read(s), b.read(x));
    let step = b.bin(BinaryOp::Add, rs, rx);
    let for_loop = b.e(
        Expr::ForLoop { state: Pattern::Var(s), init: zero, elem: Pattern::Var(x), seq, body: step },
        Type::I32,
    );
    let n = b.var("n", Type::I32);
    let one = b.i32(1);
    let (rn, hundred) = (b.read(n), b.i32(100));
    let cond = b.bin(BinaryOp::Lt, rn, hundred);
    let (rn, two) = (b.read(n), b.i32(2));
    let double = b.bin(BinaryOp::Mul, rn, two);
    let while_loop =
        b.e(Expr::WhileLoop { state: Pattern::Var(n), init: one, cond, body: double }, Type::I32);
    let line = b.print_values(vec![for_loop, while_loop]);
    let body = b.block(vec![line]);
    assert_eq!(run_main(b.finish(body)).expect("runs"), "45 128\n");
}

#[test]
fn failed_assert_is_e0402_with_its_message() {
    let mut b = Builder::new("main", 0);
    let (one, two) = (b.i32(1), b.i32(2));
    let cond = b.bin(BinaryOp::Eq, one, two);
    let assert = b.e(Expr::Assert { cond, message: Some("one is two".to_string()) }, unit_ty());
    let body = b.block(vec![assert]);
    let span = b.span(assert);
    let err = run_main(b.finish(body)).unwrap_err();
    assert_eq!(
        (err.code, err.range, err.message.as_str()),
        (Code::AssertionFailed, span, "assertion failed: one is two")
    );
}

#[test]
fn random_data_follows_the_documented_hash() {
    let mut b = Builder::new("main", 0);
    let (n, seed) = (b.i32(3), b.i32(-7));
    let floats = b.prim(Prim::RandomF32, vec![n, seed], Type::seq(Type::F32));
    let [n, lo, hi, seed] = [6, -5, 10, 7].map(|i| b.i32(i));
    let ints = b.prim(Prim::RandomI32, vec![n, lo, hi, seed], Type::seq(Type::I32));
    let line = b.print_values(vec![floats, ints]);
    let [n, lo, hi, seed] = [1, 5, 5, 0].map(|i| b.i32(i));
    let bad = b.prim(Prim::RandomI32, vec![n, lo, hi, seed], Type::seq(Type::I32));
    let bad_line = b.print_values(vec![bad]);
    let body = b.block(vec![line, bad_line]);
    let p = program(Vec::new(), b.finish(body));
    let mut host = TestHost::new();
    let err = run(&p, &mut host).unwrap_err();
    // The examples of docs/language.md, "Random numbers".
    assert_eq!(host.out, "[0.74757415, 0.73781997, 0.87345386] [-2, -1, -3, 7, 4, 9]\n");
    assert_eq!(err.code, Code::InvalidArgument);
}

#[test]
fn load_npy_reads_through_the_host() {
    let dir = std::env::temp_dir().join(format!("weft-interp-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let mut header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }".to_string();
    while !(10 + header.len() + 1).is_multiple_of(64) {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((header.len() as u16).to_le_bytes());
    bytes.extend(header.as_bytes());
    for x in [1.5f32, -2.0, 0.1, 1e20] {
        bytes.extend(x.to_le_bytes());
    }
    std::fs::write(dir.join("m.npy"), &bytes).expect("writable");

    let matrix = Type::seq(Type::seq(Type::F32));
    let mut b = Builder::new("main", 0);
    let load = b.prim(Prim::LoadNpy("m.npy".to_string()), vec![], matrix.clone());
    let line = b.print_values(vec![load]);
    let wrong = b.prim(Prim::LoadNpy("m.npy".to_string()), vec![], Type::seq(Type::I32));
    let wrong_line = b.print_values(vec![wrong]);
    let body = b.block(vec![line, wrong_line]);
    let span = b.span(wrong);
    let mut host = TestHost { out: String::new(), dir: dir.clone() };
    let err = run(&program(Vec::new(), b.finish(body)), &mut host).unwrap_err();
    assert_eq!(host.out, "[[1.5, -2.0], [0.1, 1e+20]]\n");
    assert_eq!((err.code, err.range), (Code::DataLoadError, span));
    assert!(err.message.contains("[[f32]]") && err.message.contains("[i32]"), "{}", err.message);

    let mut b = Builder::new("main", 0);
    let missing = b.prim(Prim::LoadNpy("missing.npy".to_string()), vec![], matrix);
    let line = b.print_values(vec![missing]);
    let body = b.block(vec![line]);
    let mut host = TestHost { out: String::new(), dir: dir.clone() };
    let err = run(&program(Vec::new(), b.finish(body)), &mut host).unwrap_err();
    assert_eq!(err.code, Code::DataLoadError);
    assert!(err.message.starts_with("cannot read `missing.npy`"), "{}", err.message);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `fn#0(n) = 0 if n == 0 else 1 + fn#0(n - 1)`, called with `n` from `main`.
fn countdown(n: i64) -> Program {
    let mut f = Builder::new("countdown", 1000);
    let v = f.param("n", Type::I32);
    let (rn, zero) = (f.read(v), f.i32(0));
    let cond = f.bin(BinaryOp::Eq, rn, zero);
    let base_case = f.i32(0);
    let (rn, one) = (f.read(v), f.i32(1));
    let smaller = f.bin(BinaryOp::Sub, rn, one);
    let call = f.e(Expr::Call { func: 0, args: vec![smaller] }, Type::I32);
    let one = f.i32(1);
    let step = f.bin(BinaryOp::Add, one, call);
    let body = f.e(Expr::If { cond, then: base_case, otherwise: step }, Type::I32);
    let countdown = f.finish(body);

    let mut b = Builder::new("main", 0);
    let arg = b.i32(n);
    let call = b.e(Expr::Call { func: 0, args: vec![arg] }, Type::I32);
    let line = b.print_values(vec![call]);
    let body = b.block(vec![line]);
    program(vec![countdown], b.finish(body))
}

#[test]
fn deep_recursion_is_e0409_not_a_crash() {
    let mut host = TestHost::new();
    run_with_big_stack(&countdown(9_000), &mut host).expect("9,000 nested calls fit");
    assert_eq!(host.out, "9000\n");
    let err = run_with_big_stack(&countdown(1_000_000), &mut TestHost::new()).unwrap_err();
    assert_eq!(err.code, Code::ResourceExhausted);
    assert_eq!(err.message, "recursion too deep: more than 10000 nested calls");
    // On this 2 MiB test thread, `run` stops early, but cleanly.
    let err = run(&countdown(1_000_000), &mut TestHost::new()).unwrap_err();
    assert_eq!(err.code, Code::ResourceExhausted);
    assert_eq!(run_program(&countdown(100)).expect("shallow"), "100\n");
}

#[test]
fn deeply_nested_expressions_are_e0409_not_a_crash() {
    // 1 + (1 + (1 + ...)) nested 200,000 deep, as a long operator chain can be.
    let mut b = Builder::new("main", 0);
    let mut e = b.i32(1);
    for _ in 0..200_000 {
        let one = b.i32(1);
        e = b.bin(BinaryOp::Add, one, e);
    }
    let line = b.print_values(vec![e]);
    let body = b.block(vec![line]);
    let p = program(Vec::new(), b.finish(body));
    // About 400 bytes of native stack per level in a debug build: too deep for `run`'s default
    // megabyte, within `run_with_big_stack`'s budget.
    assert_eq!(run(&p, &mut TestHost::new()).unwrap_err().code, Code::ResourceExhausted);
    let mut host = TestHost::new();
    run_with_big_stack(&p, &mut host).expect("fits the big stack");
    assert_eq!(host.out, "200001\n");
}

/// `sum(map(lambda x: x * x % 7, range(100_000)))`: the interpreter should take milliseconds.
#[test]
fn a_hundred_thousand_calls_are_fast() {
    let mut f = Builder::new("square_mod", 1000);
    let x = f.param("x", Type::I32);
    let (a, c) = (f.read(x), f.read(x));
    let square = f.bin(BinaryOp::Mul, a, c);
    let seven = f.i32(7);
    let body = f.bin(BinaryOp::Mod, square, seven);
    let square_mod = f.finish(body);

    let mut b = Builder::new("main", 0);
    let n = b.i32(100_000);
    let xs = b.prim(Prim::Range, vec![n], Type::seq(Type::I32));
    let mapped = b.e(
        Expr::Prim { prim: Prim::Map, args: vec![xs], funcs: vec![Callee { func: 0, captures: vec![] }] },
        Type::seq(Type::I32),
    );
    let total = b.prim(Prim::Sum, vec![mapped], Type::I32);
    let line = b.print_values(vec![total]);
    let body = b.block(vec![line]);
    let p = program(vec![square_mod], b.finish(body));
    let start = std::time::Instant::now();
    let out = run_program(&p).expect("runs");
    let elapsed = start.elapsed();
    let expected: i64 =
        (0..100_000i64).map(|x| (x * x) as i32 as i64 % 7).map(|r| if r < 0 { r + 7 } else { r }).sum();
    assert_eq!(out, format!("{expected}\n"));
    eprintln!("100,000 calls took {elapsed:?}");
    assert!(elapsed.as_millis() < 2_000, "took {elapsed:?}");
}

#[test]
fn long_statement_chains_take_no_stack() {
    // 100,000 top-level statements nest as `let`s; they must not need a big stack.
    let mut b = Builder::new("main", 0);
    let x = b.var("x", Type::I32);
    let mut stmts = Vec::new();
    for i in 0..100_000 {
        let (rx, one) = (b.read(x), b.i32(i % 3));
        stmts.push(b.bin(BinaryOp::Add, rx, one));
    }
    let (rx, shown) = (b.read(x), b.i32(7));
    let sum = b.bin(BinaryOp::Add, rx, shown);
    stmts.push(b.print_values(vec![sum]));
    let block = b.block(stmts);
    let zero = b.i32(0);
    let body = b.let_(x, zero, block);
    assert_eq!(run_main(b.finish(body)).expect("runs on a small stack"), "7\n");
}
