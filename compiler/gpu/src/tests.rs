//! Each primitive against the CPU executor's kernel on random data: empty input, sizes that are
//! not a multiple of the workgroup or block size, and launches wider than one grid row.
//!
//! Without an adapter these tests say they are skipped, unless `WEFT_REQUIRE_GPU=1` (as CI sets
//! it), which makes a missing adapter a failure.

use super::*;
use weft_core::BinaryOp;
use weft_exec::cpu::{Buffer, FlatValue};
use weft_flat::ir::{LengthCheck, ReduceOp, Segs};

/// A device of its own per test: some tests narrow its grid.
fn device() -> Option<Gpu> {
    match Gpu::new(std::env::var("WEFT_ADAPTER").ok().as_deref()) {
        Ok(gpu) => Some(gpu),
        Err(e) if std::env::var("WEFT_REQUIRE_GPU").is_ok_and(|v| v == "1") => {
            panic!("WEFT_REQUIRE_GPU=1 but there is no GPU: {e}")
        }
        Err(e) => {
            eprintln!("skipped: no GPU adapter ({e}); set WEFT_REQUIRE_GPU=1 to make this a failure");
            None
        }
    }
}

/// `op` (whose operands are variables `0..args.len()`) on the GPU executor.
fn on_gpu(
    gpu: &Gpu,
    op: &Op,
    args: &[FlatValue],
    dest: Option<Scalar>,
) -> Result<Option<FlatValue>, Diagnostic> {
    let args = args.iter().map(|a| upload(gpu, a.clone())).collect::<Result<Vec<_>, _>>()?;
    let result = apply(gpu, op, dest, args)?;
    result.map(|r| download(gpu, &r)).transpose()
}

fn on_cpu(op: &Op, args: &[FlatValue]) -> Option<FlatValue> {
    weft_exec::cpu::kernels::run_op(op, args).expect("the cpu kernel runs")
}

/// Equal, floats within a relative `1e-4` (sums in another order round differently).
fn same(a: &FlatValue, b: &FlatValue) -> bool {
    let close = |x: f64, y: f64| {
        x == y || (x - y).abs() <= 1e-4 * x.abs().max(y.abs()).max(1.0) || (x.is_nan() && y.is_nan())
    };
    match (a, b) {
        (FlatValue::Vector(x), FlatValue::Vector(y)) => match (x.as_ref(), y.as_ref()) {
            (Buffer::F32(x), Buffer::F32(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(a, b)| close(f64::from(*a), f64::from(*b)))
            }
            (x, y) => x == y,
        },
        (FlatValue::Scalar(ScalarValue::F32(x)), FlatValue::Scalar(ScalarValue::F32(y))) => {
            close(f64::from(*x), f64::from(*y))
        }
        (x, y) => x == y,
    }
}

fn check(gpu: &Gpu, op: &Op, args: &[FlatValue], dest: Option<Scalar>, what: &str) {
    let expected = on_cpu(op, args);
    let actual = on_gpu(gpu, op, args, dest).unwrap_or_else(|e| panic!("{what}: {}", e.message));
    match (&expected, &actual) {
        (Some(e), Some(a)) if same(e, a) => {}
        (None, None) => {}
        (Some(FlatValue::Vector(e)), Some(FlatValue::Vector(a))) => {
            let first = (0..e.len().max(a.len())).find(|&i| e.get(i) != a.get(i));
            let at = first.unwrap_or(0);
            panic!(
                "{what}: {} elements on the gpu, {} on the cpu; first difference at {at}: {:?} against {:?}",
                a.len(),
                e.len(),
                a.get(at),
                e.get(at)
            );
        }
        _ => panic!("{what}: the gpu gives {actual:?}, the cpu {expected:?}"),
    }
}

/// The sizes every primitive runs on: empty, tiny, around a workgroup and a block, and more
/// than one block of blocks.
const SIZES: [usize; 9] = [0, 1, 7, 255, 256, 1000, 1025, 4097, 1_100_000];

fn random_i32s(n: usize, lo: i32, hi: i32) -> Vec<i32> {
    (0..n).map(|_| fastrand::i32(lo..hi)).collect()
}

/// Small whole numbers: their sums are exact in any order, so results compare exactly.
fn random_f32s(n: usize) -> Vec<f32> {
    (0..n).map(|_| fastrand::i32(-8..=8) as f32).collect()
}

fn values(n: usize, elem: Scalar) -> FlatValue {
    FlatValue::vector(match elem {
        Scalar::Bool => Buffer::Bool((0..n).map(|_| fastrand::bool()).collect()),
        Scalar::F32 => Buffer::F32(random_f32s(n)),
        Scalar::F64 => Buffer::F64(random_f32s(n).into_iter().map(|x| f64::from(x) / 3.0).collect()),
        Scalar::I64 => {
            Buffer::I64(random_i32s(n, -1000, 1000).into_iter().map(|x| i64::from(x) << 33).collect())
        }
        Scalar::I32 => Buffer::I32(random_i32s(n, -1000, 1000)),
    })
}

fn ops_for(elem: Scalar) -> Vec<ReduceOp> {
    match elem {
        Scalar::Bool => vec![ReduceOp::And, ReduceOp::Or, ReduceOp::Xor, ReduceOp::Min, ReduceOp::Max],
        Scalar::F32 => vec![ReduceOp::Add, ReduceOp::Min, ReduceOp::Max],
        _ => vec![
            ReduceOp::Add,
            ReduceOp::Mul,
            ReduceOp::Min,
            ReduceOp::Max,
            ReduceOp::And,
            ReduceOp::Or,
            ReduceOp::Xor,
        ],
    }
}

#[test]
fn reductions_and_scans_match_the_cpu() {
    let Some(gpu) = device() else { return };
    fastrand::seed(7);
    for elem in [Scalar::I32, Scalar::F32, Scalar::Bool] {
        for op in ops_for(elem) {
            for n in SIZES {
                let src = values(n, elem);
                let what = format!("{} of {n} {}", op.name(), elem.name());
                check(
                    &gpu,
                    &Op::Reduce { op, src: 0 },
                    std::slice::from_ref(&src),
                    Some(elem),
                    &format!("reduce {what}"),
                );
                check(
                    &gpu,
                    &Op::Scan { op, src: 0, init: None },
                    std::slice::from_ref(&src),
                    Some(elem),
                    &format!("scan {what}"),
                );
                let init = values(1, elem).materialized();
                let init = match init {
                    FlatValue::Vector(b) => FlatValue::Scalar(b.get(0).expect("one")),
                    v => v,
                };
                let scan = Op::Scan { op, src: 0, init: Some(1) };
                check(&gpu, &scan, &[src, init], Some(elem), &format!("exclusive scan {what}"));
            }
        }
    }
}

/// A descriptor of `count` segments anywhere in a vector of `n` elements, some empty and some
/// overlapping, as replication makes them.
fn segments(count: usize, n: usize) -> (FlatValue, FlatValue) {
    let mut offsets = Vec::with_capacity(count);
    let mut lengths = Vec::with_capacity(count);
    for _ in 0..count {
        let len = if n == 0 || fastrand::u8(..) < 40 { 0 } else { fastrand::usize(0..=n.min(300)) };
        let start = fastrand::usize(0..=n - len);
        offsets.push(start as i32);
        lengths.push(len as i32);
    }
    (FlatValue::i32s(offsets), FlatValue::i32s(lengths))
}

#[test]
fn segmented_reductions_and_scans_match_the_cpu() {
    let Some(gpu) = device() else { return };
    fastrand::seed(11);
    let segs = Segs { offsets: 1, lengths: 2 };
    for elem in [Scalar::I32, Scalar::F32] {
        for op in ops_for(elem) {
            for (count, n) in [(0, 0), (1, 0), (3, 10), (300, 1000), (5000, 70_000)] {
                let src = values(n, elem);
                let (offsets, lengths) = segments(count, n);
                let args = [src.clone(), offsets.clone(), lengths.clone()];
                let what = format!("{} of {count} segments of {n} {}", op.name(), elem.name());
                check(
                    &gpu,
                    &Op::SegReduce { op, src: 0, segs },
                    &args,
                    Some(elem),
                    &format!("seg reduce {what}"),
                );
                check(
                    &gpu,
                    &Op::SegScan { op, src: 0, init: None, segs },
                    &args,
                    Some(elem),
                    &format!("seg scan {what}"),
                );
                let init = FlatValue::Scalar(if elem == Scalar::F32 {
                    ScalarValue::F32(0.5)
                } else {
                    ScalarValue::I32(3)
                });
                let exclusive = Op::SegScan { op, src: 0, init: Some(3), segs };
                let args = [src.clone(), offsets.clone(), lengths.clone(), init];
                check(&gpu, &exclusive, &args, Some(elem), &format!("exclusive seg scan {what}"));
                if count > 0 && n > 0 {
                    let nonempty = FlatValue::i32s(vec![1.max(n as i32 / 3); count]);
                    let offsets = FlatValue::i32s(vec![0; count]);
                    for max in [false, true] {
                        let op = Op::SegArgExtreme { max, src: 0, segs };
                        let args = [src.clone(), offsets.clone(), nonempty.clone()];
                        check(&gpu, &op, &args, Some(Scalar::I32), &format!("arg extreme of {what}"));
                    }
                }
            }
        }
    }
}

/// WebGPU's default of 8 storage buffers per stage leaves no room for a segmented reduction
/// that reads its elements in place (9 with the parameters): it gathers them first instead.
#[test]
fn segmented_reductions_fit_an_adapter_of_8_storage_buffers() {
    let Some(mut gpu) = device() else { return };
    fastrand::seed(13);
    gpu.limits.max_storage_buffers_per_shader_stage = 8;
    let segs = Segs { offsets: 1, lengths: 2 };
    let (offsets, lengths) = segments(300, 10_000);
    let args = [values(10_000, Scalar::I32), offsets, lengths];
    let op = Op::SegReduce { op: ReduceOp::Add, src: 0, segs };
    check(&gpu, &op, &args, Some(Scalar::I32), "seg reduce under 8 storage buffers");
    let kernels = gpu.stats().per_kernel;
    assert!(kernels.keys().any(|k| k.starts_with("segment_gather")), "{kernels:?}");
    assert!(!kernels.keys().any(|k| k.contains("gathered")), "{kernels:?}");
}

#[test]
fn data_movement_matches_the_cpu() {
    let Some(gpu) = device() else { return };
    fastrand::seed(13);
    for n in SIZES {
        let src = values(n, Scalar::F32);
        let flags = values(n, Scalar::Bool);
        check(
            &gpu,
            &Op::Pack { src: 0, flags: 1, counts: None },
            &[src.clone(), flags],
            Some(Scalar::F32),
            &format!("pack of {n}"),
        );
        let m = if n == 0 { 0 } else { n / 2 + 1 };
        let index = FlatValue::i32s(random_i32s(m, 0, n.max(1) as i32));
        if n > 0 {
            check(
                &gpu,
                &Op::Gather { src: 0, index: 1 },
                &[src.clone(), index.clone()],
                Some(Scalar::F32),
                &format!("gather of {m} from {n}"),
            );
            // From two sources of different lengths, each index in range of the one picked
            // only: the other read must do no harm.
            let second = values(n / 3 + 1, Scalar::F32);
            let picks: Vec<bool> = (0..m).map(|_| fastrand::bool()).collect();
            let positions: Vec<i32> = picks
                .iter()
                .map(|&first| fastrand::i32(0..if first { n as i32 } else { (n / 3 + 1) as i32 }))
                .collect();
            check(
                &gpu,
                &Op::GatherEither { first: 0, second: 1, from_first: 2, index: 3 },
                &[src.clone(), second, FlatValue::vector(Buffer::Bool(picks)), FlatValue::i32s(positions)],
                Some(Scalar::F32),
                &format!("gather of {m} from {n} or {}", n / 3 + 1),
            );
            // Duplicate indexes: the last write wins.
            let values_m = values(m, Scalar::F32);
            let scatter = Op::Scatter { dst: 0, index: 1, src: 2, distinct: false };
            check(
                &gpu,
                &scatter,
                &[src.clone(), index, values_m],
                Some(Scalar::F32),
                &format!("scatter of {m} into {n}"),
            );
            let mut permutation: Vec<i32> = (0..n as i32).collect();
            fastrand::shuffle(&mut permutation);
            let permute = [src.clone(), FlatValue::i32s(permutation), values(n, Scalar::F32)];
            check(&gpu, &scatter, &permute, Some(Scalar::F32), &format!("permute of {n}"));
            let distinct = Op::Scatter { dst: 0, index: 1, src: 2, distinct: true };
            check(&gpu, &distinct, &permute, Some(Scalar::F32), &format!("distinct permute of {n}"));
        }
        let len = FlatValue::Scalar(ScalarValue::I32(n as i32));
        check(
            &gpu,
            &Op::Iota { len: 0 },
            std::slice::from_ref(&len),
            Some(Scalar::I32),
            &format!("iota {n}"),
        );
        let replicate = Op::Replicate { value: 0, len: 1 };
        check(
            &gpu,
            &replicate,
            &[FlatValue::Scalar(ScalarValue::F32(2.5)), len.clone()],
            Some(Scalar::F32),
            &format!("distribute {n}"),
        );
        let concat = Op::Concat(vec![0, 1, 2]);
        let parts = [src.clone(), FlatValue::Scalar(ScalarValue::F32(9.0)), values(n / 3, Scalar::F32)];
        check(&gpu, &concat, &parts, Some(Scalar::F32), &format!("concat around {n}"));
        let interleave = Op::Interleave { parts: vec![0, 1], len: 2 };
        let parts = [src.clone(), FlatValue::Scalar(ScalarValue::F32(-1.0)), len];
        check(&gpu, &interleave, &parts, Some(Scalar::F32), &format!("interleave {n}"));
        let lengths = FlatValue::i32s(random_i32s(n.min(5000), 0, 40));
        check(
            &gpu,
            &Op::SegIds { lengths: 0, within: vec![] },
            std::slice::from_ref(&lengths),
            Some(Scalar::I32),
            &format!("segment ids of {n}"),
        );
        check(
            &gpu,
            &Op::SegIota { lengths: 0, within: vec![] },
            std::slice::from_ref(&lengths),
            Some(Scalar::I32),
            &format!("segment positions of {n}"),
        );
        // Within collections of known sizes: allocated by them, the total on the device (one
        // launch for the starts and the total up to a block of lengths, two past it).
        let total = match &lengths {
            FlatValue::Vector(b) => (0..b.len()).filter_map(|i| b.get(i)?.as_int()).sum::<i64>() as i32,
            _ => 0,
        };
        let size = |n: i32| FlatValue::Scalar(ScalarValue::I32(n));
        let within = [lengths.clone(), size(total / 2), size(total - total / 2 + 9)];
        for (op, what) in [
            (Op::SegIds { lengths: 0, within: vec![1, 2] }, "ids"),
            (Op::SegIota { lengths: 0, within: vec![1, 2] }, "positions"),
        ] {
            check(&gpu, &op, &within, Some(Scalar::I32), &format!("segment {what} of {n} within a bound"));
        }
    }
}

#[test]
fn element_wise_ops_keep_the_interpreters_semantics() {
    let Some(gpu) = device() else { return };
    let ints = FlatValue::i32s(vec![7, -7, 7, -7, 0, i32::MIN, i32::MAX, 5, -1]);
    let divisors = FlatValue::i32s(vec![2, 2, -2, -2, 3, -1, 1, 5, 1]);
    for op in [BinaryOp::FloorDiv, BinaryOp::Mod, BinaryOp::Add, BinaryOp::Mul] {
        let dest = Some(Scalar::I32);
        check(
            &gpu,
            &Op::Binary(op, 0, 1),
            &[ints.clone(), divisors.clone()],
            dest,
            &format!("{op:?} on i32"),
        );
    }
    let counts = FlatValue::i32s(vec![0, 1, 31, 32, 40, 3, 2, 30, 0]);
    for op in [BinaryOp::Shl, BinaryOp::Shr, BinaryOp::Pow] {
        check(
            &gpu,
            &Op::Binary(op, 0, 1),
            &[ints.clone(), counts.clone()],
            Some(Scalar::I32),
            &format!("{op:?} on i32"),
        );
    }
    // NaN too: drivers may assume there is none (Mesa folds `x != x` to false), so the
    // kernels test for it on the bits.
    let nan = f32::NAN;
    let floats =
        FlatValue::vector(Buffer::F32(vec![7.5, -7.5, 0.0, -0.0, 1e30, 1e-3, 3e9, -3.0, 2.0, nan, 1.0, nan]));
    let others =
        FlatValue::vector(Buffer::F32(vec![2.0, 2.0, -3.0, 5.0, 1e-30, 1.0, 2.0, 2.0, -0.5, 1.0, nan, nan]));
    for op in [BinaryOp::FloorDiv, BinaryOp::Mod, BinaryOp::Div, BinaryOp::Pow, BinaryOp::Lt] {
        let dest = Some(if op == BinaryOp::Lt { Scalar::Bool } else { Scalar::F32 });
        check(
            &gpu,
            &Op::Binary(op, 0, 1),
            &[floats.clone(), others.clone()],
            dest,
            &format!("{op:?} on f32"),
        );
    }
    // An infinite divisor leaves the dividend as the remainder, as CPython's `fmod` does.
    let finite = FlatValue::vector(Buffer::F32(vec![5.0, -5.0, 7.0, -7.0]));
    let infinite = FlatValue::vector(Buffer::F32(vec![
        f32::NEG_INFINITY,
        f32::INFINITY,
        f32::INFINITY,
        f32::NEG_INFINITY,
    ]));
    for op in [BinaryOp::FloorDiv, BinaryOp::Mod] {
        let args = [finite.clone(), infinite.clone()];
        check(&gpu, &Op::Binary(op, 0, 1), &args, Some(Scalar::F32), &format!("{op:?} by an infinity"));
    }
    let (p, q) = (
        FlatValue::vector(Buffer::Bool(vec![false, false, true, true])),
        FlatValue::vector(Buffer::Bool(vec![false, true, false, true])),
    );
    for op in [BinaryOp::Lt, BinaryOp::Le, BinaryOp::Gt, BinaryOp::Ge, BinaryOp::Eq, BinaryOp::BitXor] {
        check(
            &gpu,
            &Op::Binary(op, 0, 1),
            &[p.clone(), q.clone()],
            Some(Scalar::Bool),
            &format!("{op:?} on bool"),
        );
    }
    for f in [weft_flat::ir::MathFn::Min, weft_flat::ir::MathFn::Max] {
        check(&gpu, &Op::Math(f, vec![0, 1]), &[floats.clone(), others.clone()], Some(Scalar::F32), f.name());
    }
    check(
        &gpu,
        &Op::Cast(Scalar::I32, 0),
        std::slice::from_ref(&floats),
        Some(Scalar::I32),
        "f32 to i32 saturates",
    );
    let erf_args = FlatValue::vector(Buffer::F32((-40..=40).map(|k| k as f32 * 0.1).collect()));
    check(&gpu, &Op::Math(weft_flat::ir::MathFn::Erf, vec![0]), &[erf_args], Some(Scalar::F32), "erf");
    let index = FlatValue::i32s((0..5000).collect());
    let seed = FlatValue::Scalar(ScalarValue::I32(42));
    check(
        &gpu,
        &Op::RandomF32 { seed: 0, index: 1 },
        &[seed.clone(), index.clone()],
        Some(Scalar::F32),
        "random_f32",
    );
    let (lo, hi) = (FlatValue::Scalar(ScalarValue::I32(-5)), FlatValue::Scalar(ScalarValue::I32(i32::MAX)));
    let random = Op::RandomI32 { lo: 0, hi: 1, seed: 2, index: 3 };
    check(&gpu, &random, &[lo, hi, seed, index], Some(Scalar::I32), "random_i32");
}

#[test]
fn a_failing_op_reports_the_interpreters_error() {
    let Some(gpu) = device() else { return };
    let ints = FlatValue::i32s(vec![1, 2, 3]);
    let zeros = FlatValue::i32s(vec![1, 0, 1]);
    let error =
        on_gpu(&gpu, &Op::Binary(BinaryOp::FloorDiv, 0, 1), &[ints.clone(), zeros], Some(Scalar::I32))
            .expect_err("division by zero fails");
    assert_eq!((error.code, error.message.as_str()), (Code::DivisionByZero, "division by zero: 2 // 0"));
    let check = Op::Check(Check::IndexInRange { index: 0, len: 1, written: 0, what: String::new() });
    let error =
        on_gpu(&gpu, &check, &[FlatValue::i32s(vec![0, 5, 9]), FlatValue::Scalar(ScalarValue::I32(5))], None)
            .expect_err("an index out of range fails");
    assert_eq!(error.code, Code::IndexOutOfRange);
    assert_eq!(error.message, "index 5 is out of range for a sequence of length 5");
    let lengths = Op::Check(Check::LengthsEqual { a: 0, b: 1, what: LengthCheck::Equal("zip".into()) });
    let ok = on_gpu(&gpu, &lengths, &[FlatValue::i32s(vec![2, 3]), FlatValue::i32s(vec![2, 3])], None);
    assert!(ok.is_ok(), "equal lengths pass");
    // The device forgets the failure once reported: the next op runs.
    let sum =
        on_gpu(&gpu, &Op::Reduce { op: ReduceOp::Add, src: 0 }, &[ints], Some(Scalar::I32)).expect("runs");
    assert_eq!(sum, Some(FlatValue::Scalar(ScalarValue::I32(6))));
}

#[test]
fn launches_wider_than_one_grid_row_cover_every_element() {
    let Some(gpu) = device() else { return };
    fastrand::seed(17);
    // A grid of at most 3 workgroups per row makes every kernel take the 2-D path.
    gpu.limit_grid_width(3);
    for n in [2_000, 5_000] {
        let src = values(n, Scalar::I32);
        check(
            &gpu,
            &Op::Scan { op: ReduceOp::Add, src: 0, init: None },
            std::slice::from_ref(&src),
            Some(Scalar::I32),
            "narrow scan",
        );
        check(
            &gpu,
            &Op::Reduce { op: ReduceOp::Max, src: 0 },
            std::slice::from_ref(&src),
            Some(Scalar::I32),
            "narrow reduce",
        );
        let (offsets, lengths) = segments(40, n);
        let seg = Op::SegReduce { op: ReduceOp::Add, src: 0, segs: Segs { offsets: 1, lengths: 2 } };
        check(&gpu, &seg, &[src.clone(), offsets, lengths], Some(Scalar::I32), "narrow segmented reduce");
        let flags = values(n, Scalar::Bool);
        check(
            &gpu,
            &Op::Pack { src: 0, flags: 1, counts: None },
            &[src, flags],
            Some(Scalar::I32),
            "narrow pack",
        );
    }
}

#[test]
fn more_than_65535_workgroups() {
    let Some(gpu) = device() else { return };
    // 65,536 workgroups of 256 and one more element: past one row of the real grid.
    let n = 65_536 * 256 + 1;
    let src = FlatValue::vector(Buffer::F32((0..n).map(|i| (i % 1000) as f32).collect()));
    let scalar = FlatValue::Scalar(ScalarValue::F32(2.0));
    check(
        &gpu,
        &Op::Binary(BinaryOp::Mul, 0, 1),
        &[src.clone(), scalar],
        Some(Scalar::F32),
        "a 2-D element-wise launch",
    );
    let ones = FlatValue::i32s(vec![1; n]);
    check(
        &gpu,
        &Op::Scan { op: ReduceOp::Add, src: 0, init: None },
        &[ones],
        Some(Scalar::I32),
        "a scan whose last pass is 2-D",
    );
}

#[test]
fn the_adapter_runs_loops_to_the_end() {
    let Some(gpu) = device() else { return };
    let counted = gpu.count_loop(100_000).expect("the loop counter runs");
    assert_eq!(
        counted, 100_000,
        "this adapter stops loops early (llvmpipe before Mesa 25 stops at 65,535 iterations): install Mesa 25 from bookworm-backports"
    );
}

/// Keys in the orders a sort must handle: random, sorted, reverse-sorted and all equal.
fn key_orders(n: usize, elem: Scalar) -> Vec<(&'static str, FlatValue)> {
    let random = values(n, elem);
    let FlatValue::Vector(b) = &random else { unreachable!("values gives vectors") };
    let (sorted, reversed, equal) = match b.as_ref() {
        Buffer::I32(x) => {
            let mut s = x.clone();
            s.sort_unstable();
            let r = s.iter().rev().copied().collect();
            (Buffer::I32(s), Buffer::I32(r), Buffer::I32(vec![7; n]))
        }
        Buffer::F32(x) => {
            let mut s = x.clone();
            s.sort_unstable_by(f32::total_cmp);
            let r = s.iter().rev().copied().collect();
            (Buffer::F32(s), Buffer::F32(r), Buffer::F32(vec![-0.5; n]))
        }
        Buffer::Bool(x) => {
            let mut s = x.clone();
            s.sort_unstable();
            let r = s.iter().rev().copied().collect();
            (Buffer::Bool(s), Buffer::Bool(r), Buffer::Bool(vec![true; n]))
        }
        other => panic!("no key orders for {other:?}"),
    };
    vec![
        ("random", random.clone()),
        ("sorted", FlatValue::vector(sorted)),
        ("reversed", FlatValue::vector(reversed)),
        ("equal", FlatValue::vector(equal)),
    ]
}

#[test]
fn radix_sort_matches_the_cpus_stable_sort() {
    let Some(gpu) = device() else { return };
    fastrand::seed(23);
    let whole = |n: usize| (FlatValue::i32s(vec![0]), FlatValue::i32s(vec![n as i32]));
    for elem in [Scalar::I32, Scalar::F32, Scalar::Bool] {
        for n in SIZES {
            for (order, keys) in key_orders(n, elem) {
                let (offsets, lengths) = whole(n);
                let sort = Op::SegSortPerm { keys: vec![0], segs: Segs { offsets: 1, lengths: 2 } };
                let what = format!("sort of {n} {order} {}", elem.name());
                check(&gpu, &sort, &[keys.clone(), offsets, lengths], Some(Scalar::I32), &what);
                let (offsets, lengths) = segments(60, n);
                check(
                    &gpu,
                    &sort,
                    &[keys, offsets, lengths],
                    Some(Scalar::I32),
                    &format!("segmented {what}"),
                );
            }
        }
    }
    // Tuples: the first key decides, ties go to the next.
    for n in [0, 300, 5_000, 70_000] {
        let sort = Op::SegSortPerm { keys: vec![0, 1, 2], segs: Segs { offsets: 3, lengths: 4 } };
        let keys = [
            FlatValue::i32s(random_i32s(n, -3, 3)),
            FlatValue::vector(Buffer::F32(random_f32s(n))),
            values(n, Scalar::Bool),
        ];
        let (offsets, lengths) = whole(n);
        let mut args = keys.to_vec();
        args.extend([offsets, lengths]);
        check(&gpu, &sort, &args, Some(Scalar::I32), &format!("tuple sort of {n}"));
        let (offsets, lengths) = segments(200, n);
        args.truncate(3);
        args.extend([offsets, lengths]);
        check(&gpu, &sort, &args, Some(Scalar::I32), &format!("segmented tuple sort of {n}"));
    }
}

#[test]
fn radix_sort_orders_floats_as_total_cmp_does() {
    let Some(gpu) = device() else { return };
    let special =
        [0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, -f32::NAN, 1.5, -1.5, f32::MIN_POSITIVE];
    let keys: Vec<f32> = (0..5_000).map(|i| special[i % special.len()]).collect();
    let sort = Op::SegSortPerm { keys: vec![0], segs: Segs { offsets: 1, lengths: 2 } };
    let args = [FlatValue::vector(Buffer::F32(keys)), FlatValue::i32s(vec![0]), FlatValue::i32s(vec![5_000])];
    check(&gpu, &sort, &args, Some(Scalar::I32), "sort of special floats");
}

#[test]
fn radix_sort_on_a_grid_narrower_than_its_blocks() {
    let Some(gpu) = device() else { return };
    fastrand::seed(29);
    gpu.limit_grid_width(3);
    let n = 40_000;
    let sort = Op::SegSortPerm { keys: vec![0], segs: Segs { offsets: 1, lengths: 2 } };
    let (offsets, lengths) = segments(300, n);
    check(
        &gpu,
        &sort,
        &[values(n, Scalar::I32), offsets, lengths],
        Some(Scalar::I32),
        "narrow segmented sort",
    );
}

#[test]
fn radix_sort_of_more_than_65535_workgroups() {
    let Some(gpu) = device() else { return };
    fastrand::seed(31);
    // Past one grid row for the element-wise passes (65,536 workgroups of 256, and more).
    let n = 65_536 * 256 + 1_000;
    let keys: Vec<i32> = (0..n).map(|_| fastrand::i32(-50_000..50_000)).collect();
    let sort = Op::SegSortPerm { keys: vec![0], segs: Segs { offsets: 1, lengths: 2 } };
    let args = [FlatValue::i32s(keys.clone()), FlatValue::i32s(vec![0]), FlatValue::i32s(vec![n as i32])];
    let Some(FlatValue::Vector(order)) =
        on_gpu(&gpu, &sort, &args, Some(Scalar::I32)).expect("the sort runs")
    else {
        panic!("the sort gives a vector")
    };
    let Buffer::I32(order) = order.as_ref() else { panic!("the sort gives positions") };
    assert_eq!(order.len(), n);
    // A stable sort, checked directly: every position once, keys in order, ties by position.
    let mut seen = vec![false; n];
    for &p in order {
        assert!(!std::mem::replace(&mut seen[p as usize], true), "position {p} appears twice");
    }
    for pair in order.windows(2) {
        let (a, b) = (pair[0] as usize, pair[1] as usize);
        assert!((keys[a], a) < (keys[b], b), "positions {a} and {b} are out of order");
    }
}

#[test]
fn permutation_check_on_the_device() {
    let Some(gpu) = device() else { return };
    let check_op = Op::Check(Check::Permutation { index: 0, segs: Segs { offsets: 1, lengths: 2 } });
    let run = |index: Vec<i32>, offsets: Vec<i32>, lengths: Vec<i32>| {
        on_gpu(
            &gpu,
            &check_op,
            &[FlatValue::i32s(index), FlatValue::i32s(offsets), FlatValue::i32s(lengths)],
            None,
        )
    };
    let ok = run(vec![2, 0, 1, 1, 0], vec![0, 3], vec![3, 2]);
    assert!(ok.is_ok(), "two permutations pass: {ok:?}");
    let big: Vec<i32> = (0..100_000).rev().collect();
    assert!(run(big, vec![0], vec![100_000]).is_ok(), "a long permutation passes");
    let error = run(vec![2, 0, 2, 1, 0], vec![0, 3], vec![3, 2]).expect_err("a repeat fails");
    assert_eq!(error.code, Code::NotAPermutation);
    assert_eq!(error.message, "permute index 2 appears more than once, so the indexes are not a permutation");
    let error = run(vec![0, 1, 2, 1, 5], vec![0, 3], vec![3, 2]).expect_err("a target out of range fails");
    assert_eq!(
        error.message,
        "permute index 5 is out of range for 2 elements, so the indexes are not a permutation"
    );
    let error = run(vec![-1, 0], vec![0], vec![2]).expect_err("a negative target fails");
    assert_eq!(error.code, Code::NotAPermutation);
}

#[test]
fn running_out_of_device_memory_is_an_error_and_the_device_goes_on() {
    let Some(gpu) = device() else { return };
    gpu.limit_memory(32 << 20);
    let fill = Op::Replicate { value: 0, len: 1 };
    let args = [FlatValue::Scalar(ScalarValue::F32(1.0)), FlatValue::Scalar(ScalarValue::I32(20_000_000))];
    let error = on_gpu(&gpu, &fill, &args, Some(Scalar::F32)).expect_err("80 MB does not fit in 32 MiB");
    assert_eq!(error.code, Code::ResourceExhausted);
    assert!(
        error.message.contains("an array of 20000000 f32 elements (76.3 MiB)")
            && error.message.contains("out of device memory"),
        "the message names the array and the limit: {}",
        error.message
    );
    assert!(gpu.memory_in_use() <= 32 << 20, "{} bytes in use", gpu.memory_in_use());
    let src = values(1_000_000, Scalar::I32);
    check(
        &gpu,
        &Op::Scan { op: ReduceOp::Add, src: 0, init: None },
        &[src],
        Some(Scalar::I32),
        "after running out",
    );
}

#[test]
fn profiles_time_every_launch_by_either_clock() {
    let Some(gpu) = device() else { return };
    let src = values(300_000, Scalar::I32);
    let scan = Op::Scan { op: ReduceOp::Add, src: 0, init: None };
    let clocks = [crate::runtime::ProfileClock::Timestamps, crate::runtime::ProfileClock::WallClock];
    for clock in clocks {
        if clock == crate::runtime::ProfileClock::Timestamps
            && !gpu.features.contains(wgpu::Features::TIMESTAMP_QUERY)
        {
            eprintln!("skipped timestamps: this adapter has no timestamp queries");
            continue;
        }
        let before = gpu.stats().launches;
        gpu.start_profile(Some(clock)).expect("profiling starts");
        check(&gpu, &scan, std::slice::from_ref(&src), Some(Scalar::I32), "a profiled scan");
        let profile = gpu.finish_profile().expect("the work finishes").expect("a profile");
        let launches = gpu.stats().launches - before;
        assert_eq!(profile.clock, clock);
        assert_eq!(profile.timings.len() as u64, launches, "{clock:?}: every launch is timed");
        // `apply` runs the op at an empty span: the launches are attributed to it.
        assert!(profile.timings.iter().all(|t| t.source == (0, 0)), "{clock:?}: {:?}", profile.timings);
        assert!(
            profile.timings.iter().any(|t| t.time > std::time::Duration::ZERO),
            "{clock:?}: some time passed"
        );
        let traffic = profile.sources.get(&(0, 0)).expect("traffic for the range");
        assert_eq!(traffic.launches, launches);
        assert_eq!(traffic.read_backs, 1, "the result, read back once");
        assert!(gpu.finish_profile().expect("nothing to wait for").is_none(), "recording stopped");
    }
}

#[test]
fn radix_sort_skips_the_digits_no_key_varies_in() {
    let Some(gpu) = device() else { return };
    fastrand::seed(37);
    let n = 50_000;
    let sort = Op::SegSortPerm { keys: vec![0], segs: Segs { offsets: 1, lengths: 2 } };
    let whole = [FlatValue::i32s(vec![0]), FlatValue::i32s(vec![n as i32])];
    let passes = |keys: FlatValue, what: &str| {
        let before = gpu.stats().per_kernel;
        let mut args = vec![keys];
        args.extend(whole.iter().cloned());
        check(&gpu, &sort, &args, Some(Scalar::I32), what);
        let after = gpu.stats().per_kernel;
        let scatters = |m: &std::collections::BTreeMap<String, u64>| {
            m.iter().filter(|(k, _)| k.starts_with("radix_scatter")).map(|(_, n)| n).sum::<u64>()
        };
        scatters(&after) - scatters(&before)
    };
    // 0..1000 varies in the low 10 bits: 3 digits of 4.
    assert_eq!(passes(FlatValue::i32s(random_i32s(n, 0, 1000)), "sort of 0..1000"), 3);
    // Floats in [0.5, 1) share their sign and exponent: the 23 mantissa bits are 6 digits.
    let halves: Vec<f32> = (0..n).map(|_| 0.5 + fastrand::f32() * 0.5).collect();
    assert_eq!(passes(FlatValue::vector(Buffer::F32(halves)), "sort of [0.5, 1)"), 6);
    assert_eq!(passes(FlatValue::i32s(vec![42; n]), "sort of equal keys"), 0);
    assert_eq!(passes(FlatValue::i32s(random_i32s(n, -5, 5)), "sort across zero"), 8);
}

#[test]
fn radix_sort_of_64_bit_keys() {
    let Some(gpu) = device() else { return };
    let wide = wgpu::Features::SHADER_INT64 | wgpu::Features::SHADER_F64;
    if !gpu.features.contains(wide) {
        eprintln!("skipped: this adapter has no SHADER_INT64 and SHADER_F64 for 64-bit keys");
        return;
    }
    fastrand::seed(41);
    let sort = Op::SegSortPerm { keys: vec![0], segs: Segs { offsets: 1, lengths: 2 } };
    for n in [0, 1, 1000, 70_000] {
        let ints: Vec<i64> = (0..n).map(|_| fastrand::i64(..) >> fastrand::u32(0..63)).collect();
        let special = [0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, -f64::NAN, 1e300, -1e-300];
        let floats: Vec<f64> = (0..n)
            .map(|i| if i % 7 == 0 { special[i % special.len()] } else { fastrand::f64() * 2.0 - 1.0 })
            .collect();
        for keys in [FlatValue::vector(Buffer::I64(ints)), FlatValue::vector(Buffer::F64(floats))] {
            let (offsets, lengths) = segments(40, n);
            let what = format!("sort of {n} 64-bit keys");
            check(
                &gpu,
                &sort,
                &[keys.clone(), FlatValue::i32s(vec![0]), FlatValue::i32s(vec![n as i32])],
                Some(Scalar::I32),
                &what,
            );
            check(&gpu, &sort, &[keys, offsets, lengths], Some(Scalar::I32), &format!("segmented {what}"));
        }
    }
    // A tuple of a 64-bit and a 32-bit key, the first with few distinct values.
    let n = 5_000;
    let tuple = Op::SegSortPerm { keys: vec![0, 1], segs: Segs { offsets: 2, lengths: 3 } };
    let args = [
        FlatValue::vector(Buffer::I64((0..n).map(|_| fastrand::i64(-2..2) << 40).collect())),
        FlatValue::i32s(random_i32s(n, -1000, 1000)),
        FlatValue::i32s(vec![0]),
        FlatValue::i32s(vec![n as i32]),
    ];
    check(&gpu, &tuple, &args, Some(Scalar::I32), "tuple sort with a 64-bit key");
}

/// A launch the device would reject is an internal error (E0499 at the op), never a panic,
/// and the device goes on working: the runtime checks each launch's bindings against its
/// kernel, and any validation error that still reaches the device is caught.
#[test]
fn device_validation_errors_are_internal_errors_not_panics() {
    use crate::runtime::Binding;
    let Some(gpu) = device() else { return };
    let kernel = weft_flat::wgsl::prims::copy();
    let buffer = gpu.alloc(64).expect("a buffer");
    let bind =
        |buffer: &std::sync::Arc<crate::runtime::DeviceBuffer>| Binding { buffer: buffer.clone(), bytes: 64 };
    // One binding where the kernel has two: refused when recorded.
    let refused = gpu.dispatch(&kernel, 16, &[0], &[bind(&buffer)]).expect_err("refused");
    assert!(refused.is_internal() && refused.0.contains("has 2 buffer bindings"), "{refused}");
    // One buffer as both the read-only source and the writable destination: the binding
    // check passes, the device rejects the batch when it is submitted.
    gpu.dispatch(&kernel, 16, &[0], &[bind(&buffer), bind(&buffer)]).expect("recorded");
    let rejected = gpu.read(&buffer, 0, 4, &buffer).expect_err("the device rejects the batch");
    assert!(rejected.is_internal() && rejected.0.contains("`copy`"), "{rejected}");
    assert_eq!(gpu.count_loop(10).expect("the device still works"), 10);
}

/// How many `f32` values lie between `a` and `b`: 0 when equal (`-0.0` and `0.0` too, and
/// two NaNs), `u32::MAX` when only one is NaN.
fn ulps(a: f32, b: f32) -> u32 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() { 0 } else { u32::MAX };
    }
    let ordered = |x: f32| {
        let bits = x.to_bits() as i32;
        i64::from(if bits < 0 { i32::MIN - bits } else { bits })
    };
    (ordered(a) - ordered(b)).unsigned_abs().min(u64::from(u32::MAX)) as u32
}

/// `n` values from `lo` to `hi`, evenly spaced, or spaced by ratio when `geometric`.
fn sweep(lo: f64, hi: f64, n: usize, geometric: bool) -> Vec<f32> {
    (0..n)
        .map(|k| {
            let t = k as f64 / (n - 1) as f64;
            (if geometric { lo * (hi / lo).powf(t) } else { lo + (hi - lo) * t }) as f32
        })
        .collect()
}

/// The GPU's `f32` functions against the CPU executor's (Rust's libm), over sweeps of their
/// domains: the largest distance in ulps must stay within the bound docs/language.md states
/// ("Float accuracy on a GPU"). `WEFT_PRINT_ULPS=1` prints the measured figures.
#[test]
fn device_float_functions_stay_within_their_documented_ulp_bounds() {
    use weft_flat::ir::MathFn::*;
    let Some(gpu) = device() else { return };
    let n = 20_001;
    let positive = sweep(1e-30, 1e30, n, true);
    // (function, arguments, the documented bound in ulps)
    let unary: Vec<(weft_flat::ir::MathFn, Vec<f32>, u32)> = vec![
        (Sqrt, positive.clone(), 0),
        (Exp, sweep(-87.0, 88.0, n, false), 80),
        (Log, positive.clone(), 160),
        (Sin, sweep(-std::f64::consts::PI, std::f64::consts::PI, n, false), 2),
        (Cos, sweep(-1.5, 1.5, n, false), 2),
        (Tan, sweep(-1.5, 1.5, n, false), 4),
        (Erf, sweep(-4.0, 4.0, n, false), 16),
    ];
    let mut report = String::new();
    let mut failures = Vec::new();
    for (f, xs, bound) in unary {
        let args = [FlatValue::vector(Buffer::F32(xs.clone()))];
        let op = Op::Math(f, vec![0]);
        let expected = on_cpu(&op, &args).expect("a result");
        let actual = on_gpu(&gpu, &op, &args, Some(Scalar::F32)).expect("runs").expect("a result");
        let (FlatValue::Vector(e), FlatValue::Vector(a)) = (&expected, &actual) else { panic!("vectors") };
        let (Buffer::F32(e), Buffer::F32(a)) = (e.as_ref(), a.as_ref()) else { panic!("f32") };
        let (worst, at) =
            e.iter().zip(a).map(|(x, y)| ulps(*x, *y)).zip(&xs).max_by_key(|(u, _)| *u).expect("values");
        report.push_str(&format!("{}: {worst} ulps (at {at:e}), bound {bound}\n", f.name()));
        if worst > bound {
            failures.push(format!("{} is {worst} ulps off at {at:e} (bound {bound})", f.name()));
        }
    }
    // `pow` (a positive base; a negative one is `pow(-a, b)` with a sign) and `atan2`, on grids.
    let bases = sweep(1e-3, 1e3, 141, true);
    let exponents = sweep(-8.0, 8.0, 141, false);
    let (xs, ys): (Vec<f32>, Vec<f32>) =
        bases.iter().flat_map(|&x| exponents.iter().map(move |&y| (x, y))).unzip();
    let angles_y = sweep(-10.0, 10.0, 141, false);
    let (us, vs): (Vec<f32>, Vec<f32>) =
        angles_y.iter().flat_map(|&y| angles_y.iter().map(move |&x| (y, x))).unzip();
    for (f, a, b, bound) in [(Pow, xs, ys, 64), (Atan2, us, vs, 400)] {
        let args = [FlatValue::vector(Buffer::F32(a.clone())), FlatValue::vector(Buffer::F32(b.clone()))];
        let op = Op::Math(f, vec![0, 1]);
        let expected = on_cpu(&op, &args).expect("a result");
        let actual = on_gpu(&gpu, &op, &args, Some(Scalar::F32)).expect("runs").expect("a result");
        let (FlatValue::Vector(e), FlatValue::Vector(r)) = (&expected, &actual) else { panic!("vectors") };
        let (Buffer::F32(e), Buffer::F32(r)) = (e.as_ref(), r.as_ref()) else { panic!("f32") };
        let (worst, k) = e
            .iter()
            .zip(r)
            .map(|(x, y)| ulps(*x, *y))
            .enumerate()
            .map(|(k, u)| (u, k))
            .max()
            .expect("values");
        report.push_str(&format!("{}: {worst} ulps (at {:e}, {:e}), bound {bound}\n", f.name(), a[k], b[k]));
        if worst > bound {
            failures.push(format!(
                "{} is {worst} ulps off at ({:e}, {:e}) (bound {bound})",
                f.name(),
                a[k],
                b[k]
            ));
        }
    }
    if std::env::var("WEFT_PRINT_ULPS").is_ok_and(|v| v == "1") {
        eprintln!("{}\n{report}", gpu.describe());
    }
    assert!(failures.is_empty(), "{}\nall:\n{report}", failures.join("\n"));
}

/// `write_at` matches the CPU kernel. A destination handed over at its last read, and held by
/// nobody else, is written in place: the copy commands move the values alone. Otherwise they
/// copy the destination first.
#[test]
fn write_at_writes_in_place_a_destination_at_its_last_read() {
    let Some(gpu) = device() else { return };
    let write = Op::WriteAt { dst: 0, at: 1, src: 2 };
    for n in [0, 1, 3, 1000, 70_000] {
        for elem in [Scalar::I32, Scalar::F32, Scalar::Bool, Scalar::F64, Scalar::I64] {
            let args = [
                values(n, elem),
                FlatValue::Scalar(ScalarValue::I32((n - n / 3) as i32)),
                values(n / 3, elem),
            ];
            check(
                &gpu,
                &write,
                &args,
                Some(elem),
                &format!("write_at of {} into {n} {}", n / 3, elem.name()),
            );
        }
    }
    let (n, part) = (10_000, 4_000);
    let dst = values(n, Scalar::I32);
    let src = values(part, Scalar::I32);
    let at = FlatValue::Scalar(ScalarValue::I32(5_000));
    let expected = on_cpu(&write, &[dst.clone(), at.clone(), src.clone()]).expect("a value");
    let span = TextRange::default();
    let mut report = Report::default();
    let mut machine = GpuMachine::new(&gpu, &mut report).expect("a machine");
    // Held elsewhere, dying, and dying but shared with another variable (slot 3).
    for (dying, shared, copied) in
        [(&[][..], false, (n + part) * 4), (&[0][..], false, part * 4), (&[0][..], true, (n + part) * 4)]
    {
        let mut frame: Frame<DeviceValue> = [&dst, &at, &src]
            .into_iter()
            .map(|v| Some(machine.upload(v.clone(), span).expect("uploads")))
            .collect();
        if shared {
            frame.push(frame[0].clone());
        }
        let before = gpu.stats().bytes_copied;
        let result =
            machine.op(&mut NoFiles, &write, Some(Scalar::I32), &mut frame, dying, span).expect("runs");
        assert_eq!(gpu.stats().bytes_copied - before, copied as u64, "dying: {dying:?}, shared: {shared}");
        assert_eq!(
            frame[0].is_none(),
            !dying.is_empty(),
            "the destination leaves the frame at its last read"
        );
        let result = machine.host_value(&result.expect("a value"), span).expect("reads back");
        assert!(same(&result, &expected), "dying: {dying:?}");
    }
}
