//! The CPU executor on hand-built IR programs: each op and check against the interpreter's
//! semantics and messages, control flow, printing, liveness and the counters.
use std::collections::HashMap;

use rowan::{TextRange, TextSize};

use super::*;
use crate::host_flow::Liveness;
use crate::interp;
use crate::interp::print::format_value;
use weft_core::types::Scalar;
use weft_core::{BinaryOp, Literal, Sink};
use weft_flat::ir::{Block, Check, Function, IrType, MathFn, PrintItem, ReduceOp, Segs, VarInfo};

struct TestHost {
    out: String,
    files: HashMap<String, Vec<u8>>,
}

impl TestHost {
    fn new() -> TestHost {
        TestHost { out: String::new(), files: HashMap::new() }
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
        self.files.get(path).cloned().ok_or_else(|| std::io::Error::other("no such file"))
    }
}

fn span(i: u32) -> TextRange {
    TextRange::new(TextSize::from(i), TextSize::from(i + 1))
}

fn vi32() -> IrType {
    IrType::vector(Scalar::I32)
}
fn si32() -> IrType {
    IrType::scalar(Scalar::I32)
}

/// Builds one function: statements get spans 1, 2, 3, ... in order.
#[derive(Default)]
struct B {
    vars: Vec<VarInfo>,
    stmts: Vec<Stmt>,
    params: Vec<VarId>,
}

impl B {
    fn var(&mut self, ty: IrType) -> VarId {
        self.vars.push(VarInfo { name: format!("v{}", self.vars.len()), ty });
        (self.vars.len() - 1) as VarId
    }
    fn param(&mut self, ty: IrType) -> VarId {
        let v = self.var(ty);
        self.params.push(v);
        v
    }
    fn push(&mut self, kind: StmtKind) {
        let s = span(self.stmts.len() as u32 + 1);
        self.stmts.push(Stmt { kind, span: s });
    }
    fn op(&mut self, ty: IrType, op: Op) -> VarId {
        let d = self.var(ty);
        self.push(StmtKind::Op { dest: Some(d), op });
        d
    }
    fn int(&mut self, i: i64) -> VarId {
        self.op(si32(), Op::Const(Literal::Int(i, Scalar::I32)))
    }
    fn ints(&mut self, xs: &[i64]) -> VarId {
        let parts: Vec<VarId> = xs.iter().map(|&x| self.int(x)).collect();
        self.op(vi32(), Op::Concat(parts))
    }
    fn take_block(&mut self, results: Vec<VarId>) -> Block {
        Block { stmts: std::mem::take(&mut self.stmts), results }
    }
    fn finish(mut self, name: &str, results: Vec<VarId>) -> Function {
        let body = self.take_block(results);
        Function { name: name.into(), params: self.params, vars: self.vars, body }
    }
}

fn program(functions: Vec<Function>) -> Program {
    let p = Program { main: 0, functions, schedules: vec![] };
    weft_flat::ir::check(&p, "test").expect("a well-formed test program");
    p
}

/// Calls function 0 of a one-function program.
fn run1(f: Function, args: Vec<FlatValue>) -> Result<Vec<FlatValue>, Diagnostic> {
    let p = program(vec![f]);
    call(&p, 0, args, &mut TestHost::new(), &mut Counters::default())
}

fn ok1(f: Function, args: Vec<FlatValue>) -> Vec<FlatValue> {
    run1(f, args).expect("no failure")
}

fn i32s(v: &[i32]) -> FlatValue {
    FlatValue::i32s(v.to_vec())
}

fn segs(b: &mut B) -> Segs {
    Segs { offsets: b.param(vi32()), lengths: b.param(vi32()) }
}

#[test]
fn elementwise_ops_broadcast_scalars() {
    let mut b = B::default();
    let x = b.param(vi32());
    let ten = b.int(10);
    let sum = b.op(vi32(), Op::Binary(BinaryOp::Add, x, ten));
    let lt = b.op(IrType::vector(Scalar::Bool), Op::Binary(BinaryOp::Lt, ten, sum));
    let f = b.op(IrType::vector(Scalar::F32), Op::Cast(Scalar::F32, x));
    let half = b.op(IrType::scalar(Scalar::F32), Op::Const(Literal::Float(0.5, Scalar::F32)));
    let q = b.op(IrType::vector(Scalar::F32), Op::Binary(BinaryOp::Div, x, ten));
    let sel = b.op(IrType::vector(Scalar::F32), Op::Select(lt, f, half));
    let m = b.op(IrType::vector(Scalar::I32), Op::Math(MathFn::Max, vec![x, ten]));
    let fd = b.op(vi32(), Op::Binary(BinaryOp::FloorDiv, x, ten));
    let md = b.op(vi32(), Op::Binary(BinaryOp::Mod, x, ten));
    let s = b.op(si32(), Op::Binary(BinaryOp::Mul, ten, ten));
    let f = b.finish("f", vec![sum, lt, sel, q, m, fd, md, s]);
    let out = ok1(f, vec![i32s(&[1, -22, 33])]);
    assert_eq!(out[0], i32s(&[11, -12, 43]));
    assert_eq!(out[1], FlatValue::bools(vec![true, false, true]));
    assert_eq!(out[2], FlatValue::f32s(vec![1.0, 0.5, 33.0]));
    assert_eq!(out[3], FlatValue::f32s(vec![0.1, -2.2, 3.3]));
    assert_eq!(out[4], i32s(&[10, 10, 33]));
    assert_eq!(out[5], i32s(&[0, -3, 3]));
    assert_eq!(out[6], i32s(&[1, 8, 3]));
    assert_eq!(out[7], FlatValue::Scalar(ScalarValue::I32(100)));
}

#[test]
fn float_min_max_and_math_follow_the_interpreter() {
    let mut b = B::default();
    let x = b.param(IrType::vector(Scalar::F32));
    let y = b.param(IrType::vector(Scalar::F32));
    let mn = b.op(IrType::vector(Scalar::F32), Op::Math(MathFn::Min, vec![x, y]));
    let mx = b.op(IrType::vector(Scalar::F32), Op::Math(MathFn::Max, vec![x, y]));
    let e = b.op(IrType::vector(Scalar::F32), Op::Math(MathFn::Erf, vec![x]));
    let f = b.finish("f", vec![mn, mx, e]);
    let nan = f32::NAN;
    let out = ok1(f, vec![FlatValue::f32s(vec![0.0, nan, 1.0]), FlatValue::f32s(vec![-0.0, 2.0, nan])]);
    let show = |v: &FlatValue| {
        format_value(&vars_to_value(
            &Type::seq(Type::F32),
            &[FlatValue::Scalar(ScalarValue::I32(0)), FlatValue::Scalar(ScalarValue::I32(3)), v.clone()],
        ))
    };
    assert_eq!(show(&out[0]), "[0.0, 2.0, 1.0]");
    assert_eq!(show(&out[1]), "[0.0, nan, nan]");
    assert_eq!(show(&out[2]), "[0.0, nan, 0.8427008]");
}

#[test]
fn integer_division_by_zero_reports_the_first_failing_element() {
    for n in [5usize, 100_000] {
        let mut b = B::default();
        let x = b.param(vi32());
        let y = b.param(vi32());
        let q = b.op(vi32(), Op::Binary(BinaryOp::FloorDiv, x, y));
        let f = b.finish("f", vec![q]);
        let xs: Vec<i32> = (0..n as i32).collect();
        let mut ys = vec![1; n];
        ys[3] = 0;
        ys[n - 1] = 0;
        let err = run1(f, vec![i32s(&xs), i32s(&ys)]).expect_err("a failure");
        assert_eq!(err.code, Code::DivisionByZero);
        assert_eq!(err.message, "division by zero: 3 // 0");
        assert_eq!(err.range, span(1));
    }
    let mut b = B::default();
    let x = b.param(vi32());
    let zero = b.int(0);
    let m = b.op(vi32(), Op::Binary(BinaryOp::Mod, x, zero));
    let err = run1(b.finish("f", vec![m]), vec![i32s(&[7, 8])]).expect_err("a failure");
    assert_eq!((err.code, err.message.as_str()), (Code::DivisionByZero, "modulo by zero: 7 % 0"));
    let mut b = B::default();
    let x = b.param(vi32());
    let neg = b.int(-1);
    let m = b.op(vi32(), Op::Binary(BinaryOp::Shl, x, neg));
    let err = run1(b.finish("f", vec![m]), vec![i32s(&[7])]).expect_err("a failure");
    assert_eq!((err.code, err.message.as_str()), (Code::InvalidArgument, "negative shift count -1"));
}

#[test]
fn mismatched_vector_lengths_are_internal_errors() {
    let mut b = B::default();
    let x = b.param(vi32());
    let y = b.param(vi32());
    let s = b.op(vi32(), Op::Binary(BinaryOp::Add, x, y));
    let err = run1(b.finish("f", vec![s]), vec![i32s(&[1, 2]), i32s(&[1])]).expect_err("a failure");
    assert_eq!(err.code, Code::InternalError);
}

#[test]
fn element_wise_ops_on_windows_read_their_chunk_in_place() {
    use kernels::Window;
    let xs: Vec<f32> = (0..10_000).map(|i| i as f32 * 0.5).collect();
    let ys: Vec<f32> = (0..10_000).map(|i| 3.0 - i as f32).collect();
    let (x, y) = (FlatValue::f32s(xs.clone()), FlatValue::f32s(ys.clone()));
    let range = 4_096..8_192;
    let chunk = |v: &[f32]| FlatValue::f32s(v[range.clone()].to_vec());
    let window = |value| Window { value, range: Some(range.clone()) };
    let two = FlatValue::Scalar(ScalarValue::F32(2.0));
    let whole = |value| Window { value, range: None };
    // Each op on the windows gives what it gives on copies of the chunk.
    let ops = [
        Op::Binary(BinaryOp::Mul, 0, 1),
        Op::Binary(BinaryOp::Lt, 0, 1),
        Op::Math(MathFn::Max, vec![0, 1]),
        Op::Unary(weft_core::UnaryOp::Neg, 0),
        Op::Cast(Scalar::I32, 0),
    ];
    for op in &ops {
        let arity = op.operands().len();
        let in_place = kernels::element_wise(op, &[window(&x), window(&y)][..arity]).expect("element-wise");
        let copied = kernels::run_op(op, &[chunk(&xs), chunk(&ys)][..arity]).unwrap().expect("a value");
        assert_eq!(in_place.unwrap(), copied, "{}", op.name());
    }
    // A window and a whole scalar mix, as a chunk's input and a kernel's constant do.
    let scaled = kernels::element_wise(&Op::Binary(BinaryOp::Mul, 0, 1), &[window(&x), whole(&two)]).unwrap();
    assert_eq!(scaled.unwrap(), FlatValue::f32s(xs[range.clone()].iter().map(|v| v * 2.0).collect()));
    // A select whose branch is a scalar indexes its operands by the window's length.
    let flags = FlatValue::vector(Buffer::Bool((0..10_000).map(|i| i % 3 == 0).collect()));
    let picked =
        kernels::element_wise(&Op::Select(0, 1, 2), &[window(&flags), window(&x), whole(&two)]).unwrap();
    let expected = range.clone().map(|i| if i % 3 == 0 { xs[i] } else { 2.0 }).collect();
    assert_eq!(picked.unwrap(), FlatValue::f32s(expected));
    // A float function, and one of an integer operand (cast first), read the window too.
    let roots = kernels::element_wise(&Op::Math(MathFn::Sqrt, vec![0]), &[window(&x)]).unwrap();
    assert_eq!(roots.unwrap(), FlatValue::f32s(xs[range.clone()].iter().map(|v| v.sqrt()).collect()));
    let ints = FlatValue::i32s((0..10_000).collect());
    let roots = kernels::element_wise(&Op::Math(MathFn::Sqrt, vec![0]), &[window(&ints)]).unwrap();
    assert_eq!(roots.unwrap(), FlatValue::f32s(range.clone().map(|i| (i as f32).sqrt()).collect()));
    // A checked integer op on windows reports the window's first failing element.
    let divisors = FlatValue::i32s((0..10_000).map(|i| if i % 1_000 == 0 { 0 } else { 1 }).collect());
    let op = Op::Binary(BinaryOp::FloorDiv, 0, 1);
    let err = kernels::element_wise(&op, &[window(&ints), window(&divisors)]).unwrap().unwrap_err();
    assert_eq!((err.code, err.message.as_str()), (Code::DivisionByZero, "division by zero: 5000 // 0"));
    // Other ops are not run on windows, and a window past the end is an internal error.
    assert!(kernels::element_wise(&Op::Reduce { op: ReduceOp::Add, src: 0 }, &[window(&x)]).is_none());
    let past = Window { value: &x, range: Some(9_000..12_000) };
    let err = kernels::element_wise(&Op::Unary(weft_core::UnaryOp::Neg, 0), &[past]).unwrap().unwrap_err();
    assert_eq!(err.code, Code::InternalError);
}

#[test]
fn gathers_selects_and_packs_match_their_definitions_short_and_long() {
    for n in [1_000usize, 100_003] {
        let xs: Vec<i32> = (0..n as i32).map(|i| i.wrapping_mul(7_919) % 1_000).collect();
        let ix: Vec<i32> = (0..n as i32).map(|i| (i * 31 + 5) % n as i32).collect();
        let flags: Vec<bool> = xs.iter().map(|x| x % 3 == 0).collect();
        let (src, index) = (i32s(&xs), i32s(&ix));
        let flag_values = FlatValue::vector(Buffer::Bool(flags.clone()));

        let gathered = kernels::gather(&src, &index).unwrap();
        assert_eq!(gathered, FlatValue::i32s(ix.iter().map(|&i| xs[i as usize]).collect()));

        let negated: Vec<i32> = xs.iter().map(|x| -x).collect();
        let either = kernels::gather_either(&src, &i32s(&negated), &flag_values, &index).unwrap();
        let expected = (0..n).map(|k| if flags[k] { xs[ix[k] as usize] } else { negated[ix[k] as usize] });
        assert_eq!(either, FlatValue::i32s(expected.collect()));

        let selected = kernels::select(&flag_values, &src, &i32s(&negated)).unwrap();
        let expected = (0..n).map(|k| if flags[k] { xs[k] } else { negated[k] });
        assert_eq!(selected, FlatValue::i32s(expected.collect()));

        let packed = kernels::pack(&src, &flag_values).unwrap();
        let expected = xs.iter().zip(&flags).filter(|(_, f)| **f).map(|(x, _)| *x);
        assert_eq!(packed, FlatValue::i32s(expected.collect()));

        // An index out of range names the first one, whether it is read in parallel or not.
        let mut bad = ix.clone();
        bad[n / 2] = -1;
        bad[n - 1] = n as i32;
        let error = kernels::gather(&src, &i32s(&bad)).unwrap_err();
        assert!(
            error.message.contains(&format!("gather index -1 out of range for {n} elements")),
            "{}",
            error.message
        );
    }
}

#[test]
fn long_reductions_fold_in_lanes_and_keep_short_ones_in_order() {
    let scalar = |v: FlatValue| v.as_scalar().expect("a scalar");
    // Integer folds give the sequential fold's result whatever the grouping, long or short.
    for n in [1_000usize, 100_003] {
        let xs: Vec<i32> = (0..n as i32).map(|i| i.wrapping_mul(2_654_435) ^ 77).collect();
        let sum = xs.iter().fold(0i32, |a, &x| a.wrapping_add(x));
        let xor = xs.iter().fold(0i32, |a, &x| a ^ x);
        let max = xs.iter().copied().max();
        let v = FlatValue::i32s(xs);
        assert_eq!(scalar(kernels::reduce(ReduceOp::Add, &v).unwrap()), ScalarValue::I32(sum));
        assert_eq!(scalar(kernels::reduce(ReduceOp::Xor, &v).unwrap()), ScalarValue::I32(xor));
        assert_eq!(scalar(kernels::reduce(ReduceOp::Max, &v).unwrap()).as_int(), max.map(i64::from));
        assert_eq!(scalar(kernels::reduce_chunk(ReduceOp::Add, &v).unwrap()), ScalarValue::I32(sum));
    }
    // Below 16,384 elements a float sum is the interpreter's left-to-right one, bit for bit.
    let values = |n: usize| (0..n).map(|i| 0.1f32 + (i % 7) as f32 * 0.013).collect::<Vec<f32>>();
    let in_order = |xs: &[f32]| xs.iter().fold(0.0f32, |a, &x| a + x);
    let sum = |op: fn(ReduceOp, &FlatValue) -> kernels::KResult<FlatValue>, xs: &[f32]| {
        scalar(op(ReduceOp::Add, &FlatValue::f32s(xs.to_vec())).unwrap())
    };
    let short = values(kernels::PAR_THRESHOLD - 1);
    assert_eq!(sum(kernels::reduce, &short), ScalarValue::F32(in_order(&short)));
    // A chunk of a longer one folds into eight lanes: element `i` of each whole group of eight
    // into lane `i % 8`, the lanes then added in order, and the last elements after them.
    let laned = |xs: &[f32]| {
        let whole = xs.len() / 8 * 8;
        let mut lanes = [0.0f32; 8];
        for (i, &x) in xs[..whole].iter().enumerate() {
            lanes[i % 8] += x;
        }
        in_order(&lanes) + in_order(&xs[whole..])
    };
    let chunk = values(4_099);
    assert_ne!(laned(&chunk), in_order(&chunk), "the grouping shows in the bits");
    assert_eq!(sum(kernels::reduce_chunk, &chunk), ScalarValue::F32(laned(&chunk)));
    // From 16,384 elements on, `reduce` folds each of its chunks of 8,192 so and adds them.
    let long = values(kernels::PAR_THRESHOLD);
    let (first, second) = long.split_at(8_192);
    assert_eq!(sum(kernels::reduce, &long), ScalarValue::F32(laned(first) + laned(second)));
}

#[test]
fn seg_reduce_over_non_contiguous_and_empty_segments() {
    let mut b = B::default();
    let src = b.param(vi32());
    let sg = segs(&mut b);
    let ops = [ReduceOp::Add, ReduceOp::Mul, ReduceOp::Max, ReduceOp::Min, ReduceOp::Xor];
    let outs: Vec<VarId> = ops.iter().map(|&op| b.op(vi32(), Op::SegReduce { op, src, segs: sg })).collect();
    let am = b.op(vi32(), Op::SegArgExtreme { max: true, src, segs: sg });
    let f = b.finish("f", outs.into_iter().chain([am]).collect());
    let out = ok1(f, vec![i32s(&[1, 2, 3, 4, 6, 6]), i32s(&[4, 0, 2]), i32s(&[2, 0, 3])]);
    assert_eq!(out[0], i32s(&[12, 0, 13]));
    assert_eq!(out[1], i32s(&[36, 1, 72]));
    assert_eq!(out[2], i32s(&[6, 0, 6]));
    assert_eq!(out[3], i32s(&[6, 0, 3]));
    assert_eq!(out[4], i32s(&[0, 0, 3 ^ 4 ^ 6]));
    assert_eq!(out[5], i32s(&[0, 0, 2]));
}

#[test]
fn seg_scan_inclusive_and_exclusive_with_empty_segments() {
    let mut b = B::default();
    let src = b.param(vi32());
    let sg = segs(&mut b);
    let zero = b.int(100);
    let inc = b.op(vi32(), Op::SegScan { op: ReduceOp::Add, src, init: None, segs: sg });
    let exc = b.op(vi32(), Op::SegScan { op: ReduceOp::Add, src, init: Some(zero), segs: sg });
    let whole = b.op(vi32(), Op::Scan { op: ReduceOp::Max, src, init: None });
    let f = b.finish("f", vec![inc, exc, whole]);
    let out = ok1(f, vec![i32s(&[1, 2, 3, 4, 5]), i32s(&[3, 0, 0]), i32s(&[2, 0, 3])]);
    assert_eq!(out[0], i32s(&[4, 9, 1, 3, 6]));
    assert_eq!(out[1], i32s(&[100, 104, 100, 101, 103]));
    assert_eq!(out[2], i32s(&[1, 2, 3, 4, 5]));
}

#[test]
fn seg_sort_perm_is_stable_and_lexicographic() {
    let mut b = B::default();
    let k1 = b.param(vi32());
    let k2 = b.param(IrType::vector(Scalar::F32));
    let sg = segs(&mut b);
    let one = b.op(vi32(), Op::SegSortPerm { keys: vec![k1], segs: sg });
    let two = b.op(vi32(), Op::SegSortPerm { keys: vec![k1, k2], segs: sg });
    let f = b.finish("f", vec![one, two]);
    let keys = i32s(&[9, 3, 1, 3, 1, 2]);
    let floats = FlatValue::f32s(vec![0.0, f32::NAN, 5.0, 1.0, -0.0, 0.0]);
    let out = ok1(f, vec![keys, floats, i32s(&[1, 0]), i32s(&[5, 0])]);
    assert_eq!(out[0], i32s(&[2, 4, 5, 1, 3]));
    assert_eq!(out[1], i32s(&[4, 2, 5, 3, 1]));
}

#[test]
fn moving_data() {
    let mut b = B::default();
    let src = b.param(vi32());
    let flags = b.param(IrType::vector(Scalar::Bool));
    let idx = b.param(vi32());
    let packed = b.op(vi32(), Op::Pack { src, flags, counts: None });
    let gathered = b.op(vi32(), Op::Gather { src, index: idx });
    let two = b.int(2);
    let one = b.op(si32(), Op::Gather { src, index: two });
    let seven = b.int(7);
    let scattered = b.op(vi32(), Op::Scatter { dst: src, index: idx, src: seven, distinct: false });
    let len = b.op(si32(), Op::Length(src));
    let f = b.finish("f", vec![packed, gathered, one, scattered, len]);
    let out = ok1(
        f,
        vec![i32s(&[10, 20, 30, 40]), FlatValue::bools(vec![true, false, false, true]), i32s(&[3, 0, 3])],
    );
    assert_eq!(out[0], i32s(&[10, 40]));
    assert_eq!(out[1], i32s(&[40, 10, 40]));
    assert_eq!(out[2], FlatValue::Scalar(ScalarValue::I32(30)));
    assert_eq!(out[3], i32s(&[7, 20, 30, 7]));
    assert_eq!(out[4], FlatValue::Scalar(ScalarValue::I32(4)));

    let mut b = B::default();
    let src = b.param(vi32());
    let idx = b.param(vi32());
    let g = b.op(vi32(), Op::Gather { src, index: idx });
    let err = run1(b.finish("f", vec![g]), vec![i32s(&[1]), i32s(&[1])]).expect_err("a failure");
    assert_eq!(err.code, Code::InternalError);
}

#[test]
fn building_vectors() {
    let mut b = B::default();
    let lens = b.param(vi32());
    let ids = b.op(vi32(), Op::SegIds { lengths: lens, within: vec![] });
    let iota = b.op(vi32(), Op::SegIota { lengths: lens, within: vec![] });
    let three = b.int(3);
    let five = b.int(5);
    let rep = b.op(vi32(), Op::Replicate { value: five, len: three });
    let io = b.op(vi32(), Op::Iota { len: three });
    let cat = b.op(vi32(), Op::Concat(vec![five, io, three]));
    let f = b.finish("f", vec![ids, iota, rep, io, cat]);
    let out = ok1(f, vec![i32s(&[2, 0, 3])]);
    assert_eq!(out[0], i32s(&[0, 0, 2, 2, 2]));
    assert_eq!(out[1], i32s(&[0, 1, 0, 1, 2]));
    assert_eq!(out[2], i32s(&[5, 5, 5]));
    assert_eq!(out[3], i32s(&[0, 1, 2]));
    assert_eq!(out[4], i32s(&[5, 0, 1, 2, 3]));

    let mut b = B::default();
    let a = b.param(vi32());
    let three = b.int(3);
    let five = b.int(5);
    let inter = b.op(vi32(), Op::Interleave { parts: vec![a, five], len: three });
    let out = ok1(b.finish("f", vec![inter]), vec![i32s(&[1, 2, 3])]);
    assert_eq!(out[0], i32s(&[1, 5, 2, 5, 3, 5]));

    let mut b = B::default();
    let lens = b.param(vi32());
    let ids = b.op(vi32(), Op::SegIds { lengths: lens, within: vec![] });
    let err = run1(b.finish("f", vec![ids]), vec![i32s(&[1, -1])]).expect_err("a failure");
    assert_eq!(err.code, Code::InternalError);
}

#[test]
fn random_matches_the_interpreter() {
    let mut b = B::default();
    let n = b.int(20_000);
    let seed = b.int(7);
    let lo = b.int(-5);
    let hi = b.int(9);
    let index = b.op(vi32(), Op::Iota { len: n });
    let r = b.op(IrType::vector(Scalar::F32), Op::RandomF32 { seed, index });
    let ri = b.op(vi32(), Op::RandomI32 { lo, hi, seed, index });
    let out = ok1(b.finish("f", vec![r, ri]), vec![]);
    assert_eq!(out[0], FlatValue::f32s(interp::data::random_f32(20_000, 7)));
    assert_eq!(out[1], FlatValue::i32s(interp::data::random_i32(20_000, -5, 9, 7)));
}

/// fn#1 sum_to(n) = loop (i, acc) = (0, 0) while i < n do (i + 1, acc + i);
/// main: if 1 < 2 then call sum_to(10) else 0, printed.
#[test]
fn if_while_call_and_print() {
    let mut b = B::default();
    let n = b.param(si32());
    let i = b.var(si32());
    let acc = b.var(si32());
    let c = b.op(IrType::scalar(Scalar::Bool), Op::Binary(BinaryOp::Lt, i, n));
    let cond = b.take_block(vec![c]);
    let one = b.int(1);
    let i2 = b.op(si32(), Op::Binary(BinaryOp::Add, i, one));
    let acc2 = b.op(si32(), Op::Binary(BinaryOp::Add, acc, i));
    let body = b.take_block(vec![i2, acc2]);
    let zero = b.int(0);
    let d_i = b.var(si32());
    let total = b.var(si32());
    b.push(StmtKind::While {
        state: vec![i, acc],
        init: vec![zero, zero],
        cond,
        body,
        dests: vec![d_i, total],
    });
    let sum_to = b.finish("sum_to", vec![total]);

    let mut m = B::default();
    let one = m.int(1);
    let two = m.int(2);
    let c = m.op(IrType::scalar(Scalar::Bool), Op::Binary(BinaryOp::Lt, one, two));
    let saved = std::mem::take(&mut m.stmts);
    let ten = m.int(10);
    let r = m.var(si32());
    m.push(StmtKind::Call { func: 1, args: vec![ten], dests: vec![r] });
    let then = m.take_block(vec![r]);
    let z = m.int(0);
    let otherwise = m.take_block(vec![z]);
    m.stmts = saved;
    let res = m.var(si32());
    m.push(StmtKind::If { cond: c, then, otherwise, dests: vec![res] });
    m.push(StmtKind::Print {
        sink: Sink::Text,
        items: vec![PrintItem::Text("total:".into()), PrintItem::Value { ty: Type::I32, vars: vec![res] }],
    });
    let main = m.finish("main", vec![]);
    let p = program(vec![main, sum_to]);
    let mut host = TestHost::new();
    let mut counters = Counters::default();
    run(&p, &mut host, &mut counters).expect("no failure");
    assert_eq!(host.out, "total: 45\n");
    assert_eq!(counters.host_loop_iterations, 10);
    assert_eq!(counters.calls, 1);
    assert_eq!(counters.vector_ops, 0);
}

#[test]
fn print_nested_sequences_and_tuples_like_the_interpreter() {
    // [[1, 2], []] with its segments out of order in the element collection, and a tuple
    // (3, [[True]], 2.5).
    let mut m = B::default();
    let off = m.int(0);
    let len = m.int(2);
    let offsets = m.ints(&[1, 0]);
    let lengths = m.ints(&[2, 0]);
    let elems = m.ints(&[9, 1, 2]);
    let three = m.int(3);
    let one = m.int(1);
    let t = m.op(IrType::scalar(Scalar::Bool), Op::Const(Literal::Bool(true)));
    let bools = m.op(IrType::vector(Scalar::Bool), Op::Concat(vec![t]));
    let zeros = m.ints(&[0]);
    let ones = m.ints(&[1]);
    let f = m.op(IrType::scalar(Scalar::F64), Op::Const(Literal::Float(2.5, Scalar::F64)));
    let nested = Type::seq(Type::seq(Type::I32));
    let tuple = Type::Tuple(vec![Type::I32, Type::seq(Type::seq(Type::BOOL)), Type::Scalar(Scalar::F64)]);
    m.push(StmtKind::Print {
        sink: Sink::Text,
        items: vec![
            PrintItem::Value { ty: nested, vars: vec![off, len, offsets, lengths, elems] },
            PrintItem::Text("and".into()),
            PrintItem::Value { ty: tuple, vars: vec![three, off, one, zeros, ones, bools, f] },
        ],
    });
    let p = program(vec![m.finish("main", vec![])]);
    let mut host = TestHost::new();
    run(&p, &mut host, &mut Counters::default()).expect("no failure");
    assert_eq!(host.out, "[[1, 2], []] and (3, [[True]], 2.5)\n");
}

#[test]
fn conversion_round_trips() {
    let s = |v: Vec<i32>| interp::NestedValue::Seq(interp::Seq::i32s(v));
    let nested =
        interp::NestedValue::Seq(interp::Seq::from_values(vec![s(vec![1, 2]), s(vec![]), s(vec![3])]));
    let ty = Type::Tuple(vec![Type::I32, Type::seq(Type::seq(Type::I32))]);
    let value = interp::NestedValue::tuple(vec![interp::NestedValue::I32(4), nested]);
    let vars = value_to_vars(&ty, &value);
    let layout = weft_flat::ir::layout(&ty, false);
    assert_eq!(vars.len(), layout.len());
    assert_eq!(vars[3], i32s(&[0, 2, 2]));
    assert_eq!(vars[4], i32s(&[2, 0, 1]));
    assert_eq!(format_value(&vars_to_value(&ty, &vars)), "(4, [[1, 2], [], [3]])");
    let pairs = Type::seq(Type::Tuple(vec![Type::I32, Type::F32]));
    let v = interp::NestedValue::Seq(interp::Seq::from_values(vec![
        interp::NestedValue::tuple(vec![interp::NestedValue::I32(1), interp::NestedValue::F32(0.5)]),
        interp::NestedValue::tuple(vec![interp::NestedValue::I32(2), interp::NestedValue::F32(1.5)]),
    ]));
    assert_eq!(format_value(&vars_to_value(&pairs, &value_to_vars(&pairs, &v))), "[(1, 0.5), (2, 1.5)]");
}

#[test]
fn checks_give_the_interpreter_messages() {
    let cases: Vec<(Check, Vec<FlatValue>, Code, &str)> = vec![
        (
            Check::IndexInRange { index: 0, len: 1, written: 2, what: String::new() },
            vec![i32s(&[0, 5, 7]), FlatValue::Scalar(ScalarValue::I32(3)), i32s(&[0, -1, 9])],
            Code::IndexOutOfRange,
            "index -1 is out of range for a sequence of length 3",
        ),
        (
            Check::NonEmpty { len: 0, what: "argmax".into() },
            vec![i32s(&[1, 0])],
            Code::EmptySequence,
            "argmax of an empty sequence",
        ),
        (
            Check::NonNegative { n: 0, what: "replicate".into() },
            vec![i32s(&[1, -4, -5])],
            Code::InvalidArgument,
            "replicate count -4 is negative",
        ),
        (
            Check::Permutation { index: 0, segs: Segs { offsets: 1, lengths: 2 } },
            vec![i32s(&[1, 0, 0, 1, 1]), i32s(&[0, 2]), i32s(&[2, 3])],
            Code::NotAPermutation,
            "permute index 1 appears more than once, so the indexes are not a permutation",
        ),
        (
            Check::PartitionLengths { lengths: 0, sums: 1, totals: 2 },
            vec![
                i32s(&[1, 2]),
                FlatValue::Scalar(ScalarValue::I32(3)),
                FlatValue::Scalar(ScalarValue::I32(4)),
            ],
            Code::LengthMismatch,
            "partition lengths sum to 3, but the sequence has 4 elements",
        ),
        (
            Check::Assert { cond: 0, message: Some("x".into()) },
            vec![FlatValue::bools(vec![true, false])],
            Code::AssertionFailed,
            "assertion failed: x",
        ),
    ];
    for (check, args, code, message) in cases {
        let err = kernels::check(&check, &args).expect_err("a failure");
        assert_eq!((err.code, err.message.as_str()), (code, message));
    }
    let ok = kernels::check(
        &Check::Permutation { index: 0, segs: Segs { offsets: 1, lengths: 2 } },
        &[i32s(&[1, 0, 2, 0, 1]), i32s(&[0, 2]), i32s(&[2, 3])],
    );
    assert!(ok.is_ok());
}

#[test]
fn variables_are_freed_after_their_last_use_only() {
    // y = x * 2; z = y + 1; w = y + z; r = reduce(w): y is read twice and must survive its
    // first read; the result is right and the liveness frees y after `w`, z after `w`.
    let mut b = B::default();
    let x = b.param(vi32());
    let two = b.int(2);
    let y = b.op(vi32(), Op::Binary(BinaryOp::Mul, x, two));
    let one = b.int(1);
    let z = b.op(vi32(), Op::Binary(BinaryOp::Add, y, one));
    let w = b.op(vi32(), Op::Binary(BinaryOp::Add, y, z));
    let r = b.op(si32(), Op::Reduce { op: ReduceOp::Add, src: w });
    let f = b.finish("f", vec![r]);
    let live = Liveness::of(&f.body, &[]);
    assert_eq!(live.free_after[4], vec![y, z]);
    assert_eq!(live.free_after[5], vec![w]);
    assert!(live.free_after.iter().all(|d| !d.contains(&x) && !d.contains(&r)));
    // As a function body, whose parameters die with it: x goes with `two`, after `y`.
    let body = Liveness::of(&f.body, &f.params);
    assert_eq!(body.free_after[1], vec![two, x]);
    assert_eq!(body.free_after[4], vec![y, z]);
    let out = ok1(f, vec![i32s(&[1, 2, 3])]);
    assert_eq!(out[0], FlatValue::Scalar(ScalarValue::I32((2 + 3) + (4 + 5) + (6 + 7))));
}

#[test]
fn large_reductions_and_scans_run_in_parallel_and_match_sequential_results() {
    let n = 100_000;
    let xs: Vec<i32> = (0..n).map(|i| (i * 7919) % 100_003 - 50_000).collect();
    let mut b = B::default();
    let x = b.param(vi32());
    let s = b.op(si32(), Op::Reduce { op: ReduceOp::Add, src: x });
    let mx = b.op(si32(), Op::Reduce { op: ReduceOp::Max, src: x });
    let sc = b.op(vi32(), Op::Scan { op: ReduceOp::Add, src: x, init: None });
    let zero = b.int(0);
    let ex = b.op(vi32(), Op::Scan { op: ReduceOp::Add, src: x, init: Some(zero) });
    let sg = segs(&mut b);
    let ss = b.op(vi32(), Op::SegReduce { op: ReduceOp::Add, src: x, segs: sg });
    let sscan = b.op(vi32(), Op::SegScan { op: ReduceOp::Add, src: x, init: None, segs: sg });
    let am = b.op(vi32(), Op::SegArgExtreme { max: false, src: x, segs: sg });
    let f = b.finish("f", vec![s, mx, sc, ex, ss, sscan, am]);
    let p = program(vec![f]);
    let mut counters = Counters::default();
    let args = vec![i32s(&xs), i32s(&[0]), i32s(&[n])];
    let pool = rayon::ThreadPoolBuilder::new().num_threads(4).build().expect("a pool");
    let out = pool.install(|| call(&p, 0, args, &mut TestHost::new(), &mut counters)).expect("no failure");
    let sum = xs.iter().fold(0i32, |a, &x| a.wrapping_add(x));
    assert_eq!(out[0], FlatValue::Scalar(ScalarValue::I32(sum)));
    assert_eq!(out[1], FlatValue::Scalar(ScalarValue::I32(*xs.iter().max().unwrap())));
    let mut acc = 0i32;
    let inclusive: Vec<i32> = xs
        .iter()
        .map(|&x| {
            acc = acc.wrapping_add(x);
            acc
        })
        .collect();
    let exclusive: Vec<i32> =
        std::iter::once(0).chain(inclusive[..inclusive.len() - 1].iter().copied()).collect();
    assert_eq!(out[2], FlatValue::i32s(inclusive.clone()));
    assert_eq!(out[3], FlatValue::i32s(exclusive));
    assert_eq!(out[4], i32s(&[sum]));
    assert_eq!(out[5], FlatValue::i32s(inclusive));
    let first_min = xs.iter().position(|x| x == xs.iter().min().unwrap()).unwrap();
    assert_eq!(out[6], i32s(&[first_min as i32]));
    // Seven ops, each one flat operation over the whole vector, no host loop.
    assert_eq!(counters.ops_run, 8);
    assert_eq!(counters.vector_ops, 7);
    assert_eq!(counters.elements, 7 * n as u64);
    assert_eq!(counters.host_loop_iterations, 0);
    assert_eq!(counters.per_op.get("reduce.add"), Some(&(1, n as u64)));
    assert_eq!(counters.per_op.get("seg_scan.add"), Some(&(1, n as u64)));
    assert_eq!(counters.per_op.get("const"), Some(&(1, 0)));
}

#[test]
fn load_reads_a_file_once_and_reports_read_errors() {
    let mut b = B::default();
    let ty = Type::seq(Type::seq(Type::I32));
    let n = b.op(si32(), Op::Load { path: "a.csv".into(), csv: true, ty: ty.clone(), field: 1 });
    let xs = b.op(vi32(), Op::Load { path: "a.csv".into(), csv: true, ty: ty.clone(), field: 4 });
    let p = program(vec![b.finish("f", vec![n, xs])]);
    let mut host = TestHost::new();
    host.files.insert("a.csv".into(), b"1\n2\n3\n".to_vec());
    let out = call(&p, 0, vec![], &mut host, &mut Counters::default()).expect("no failure");
    assert_eq!(out, vec![FlatValue::Scalar(ScalarValue::I32(3)), i32s(&[1, 2, 3])]);
    let err = call(&p, 0, vec![], &mut TestHost::new(), &mut Counters::default()).expect_err("a failure");
    assert_eq!(err.code, Code::DataLoadError);
    assert_eq!(err.message, "cannot read `a.csv`: no such file");
}
