//! `cargo bench --bench recursion`: vectorised recursion on the CPU executor, on the targets of
//! `docs/performance.md`:
//! - quicksort of 1M `i32` (the sample's), flattened and fused, against `slice::sort_unstable`;
//! - quickhull of 1M points in a disc (the sample's), flattened and fused, against the same
//!   recursion written as a sequential Rust function;
//!
//! both with the fused kernels run as chunked passes (`cpu::fused`, what `weft run` does) and
//! op by op (the baseline);
//! - one Barnes–Hut step (tree build and force walk, the sample's) on 75K bodies.
//!
//! Each line gives the median time, the ratio to the baseline, the recursion levels (the
//! deepest nesting of lifted calls, or host loop rounds), the passes over memory (vector ops
//! and fused kernels) run, and the peak of
//! memory allocated during the run as a multiple of the input's size (a counting allocator
//! wraps mimalloc).

use std::alloc::{GlobalAlloc, Layout};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use weft_analysis::Database;
use weft_analysis::SourceFile;
use weft_exec::cpu::{self, Buffer, Counters, FlatValue, ScalarValue};
use weft_exec::interp::data::{random_f32, random_i32};
use weft_flat::flatten;
use weft_flat::ir;
use weft_session::Backend;

#[allow(dead_code)]
mod common;
use common::{NoHost, fused_entry, median};

/// mimalloc, counting the bytes live now and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { mimalloc::MiMalloc.alloc(layout) };
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(live, Ordering::Relaxed);
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { mimalloc::MiMalloc.dealloc(p, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs `f` and gives the most memory it had allocated at once beyond what was live before.
fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let out = f();
    (out, PEAK.load(Ordering::Relaxed) - before)
}

fn sample(name: &str) -> String {
    let path = format!("{}/../../samples/{name}.weft", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).expect("the sample exists")
}

/// The sample's text from its first `def` up to `upto`, plus `extra`.
fn functions(name: &str, upto: &str, extra: &str) -> String {
    let text = sample(name);
    let start = text.find("def ").expect("the sample defines functions");
    let end = text.find(upto).expect("the sample has the marker");
    format!("{}\n{extra}", &text[start..end])
}

fn call(program: &ir::Program, args: &[FlatValue], config: cpu::Config) -> (Vec<FlatValue>, Counters) {
    let mut counters = Counters::default();
    let out = cpu::call_with(program, program.main, args.to_vec(), &mut NoHost, &mut counters, config)
        .expect("the benchmark runs");
    (out, counters)
}

/// How the fused kernels run: as chunked passes (what `weft run` does), and op by op (the
/// baseline, as before issue 30).
const KERNELS: [(&str, cpu::Kernels); 2] =
    [("chunked", cpu::Kernels::Chunked), ("op by op", cpu::Kernels::OpByOp)];

fn report(
    name: &str,
    weft: Duration,
    baseline: Option<(&str, Duration)>,
    counters: &Counters,
    peak: usize,
    input: usize,
) {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let against = match baseline {
        Some((what, b)) => format!("{what} {:>8.1} ms | ratio {:>5.2}x", ms(b), ms(weft) / ms(b)),
        None => "no baseline".to_string(),
    };
    println!(
        "{name:<40} weft {:>8.1} ms | {against} | levels {} | host loop rounds {} | calls {} | passes {} ({} fused kernels) | peak memory {:.1}x the input ({:.1} MB)",
        ms(weft),
        counters.max_call_depth,
        counters.host_loop_iterations,
        counters.calls,
        counters.vector_ops,
        counters.fused_kernels,
        peak as f64 / input as f64,
        peak as f64 / 1e6,
    );
    println!("{:<40} {}", "", top_ops(counters));
}

/// The ops that processed the most elements: where the time goes.
fn top_ops(counters: &Counters) -> String {
    let mut ops: Vec<(&String, &(u64, u64))> = counters.per_op.iter().collect();
    ops.sort_by_key(|op| std::cmp::Reverse(op.1.1));
    let total: u64 = counters.per_op.values().map(|(_, elements)| elements).sum();
    let top: Vec<String> = ops
        .iter()
        .take(8)
        .map(|(name, (runs, elements))| {
            format!("{name} {runs}x {:.0}%", 100.0 * *elements as f64 / total as f64)
        })
        .collect();
    format!("{:.0}M elements: {}", total as f64 / 1e6, top.join(", "))
}

fn seq_header(n: usize) -> [FlatValue; 2] {
    [FlatValue::Scalar(ScalarValue::I32(0)), FlatValue::Scalar(ScalarValue::I32(n as i32))]
}

fn quicksort(runs: usize) {
    let n = 1_000_000;
    let xs = random_i32(n, i32::MIN / 2, i32::MAX / 2, 5);
    let program = fused_entry(
        &functions(
            "quicksort",
            "def is_sorted",
            "def sort_ints(xs: [i32]) -> [i32]:\n    return quicksort(xs)\n\nprint(sort_ints([3, 1, 2]))\n",
        ),
        "sort_ints",
    );
    let mut args = seq_header(n).to_vec();
    args.push(FlatValue::Vector(Arc::new(Buffer::I32(xs.clone()))));
    let mut expected = xs.clone();
    expected.sort_unstable();
    let baseline = median(
        || {
            let mut v = xs.clone();
            v.sort_unstable();
            std::hint::black_box(v);
        },
        runs,
    );
    for (how, kernels) in KERNELS {
        let config = cpu::Config { kernels, ..cpu::Config::default() };
        let ((out, counters), peak) = peak_of(|| call(&program, &args, config));
        match (&out[0], &out[1], &out[2]) {
            (
                FlatValue::Scalar(ScalarValue::I32(offset)),
                FlatValue::Scalar(ScalarValue::I32(len)),
                FlatValue::Vector(b),
            ) => {
                let Buffer::I32(v) = &**b else { panic!("quicksort gives i32") };
                let (start, len) = (*offset as usize, *len as usize);
                assert!(v[start..start + len] == expected[..], "quicksort sorts");
            }
            _ => panic!("quicksort gives a sequence"),
        }
        let weft = median(|| drop(std::hint::black_box(call(&program, &args, config))), runs);
        let name = format!("quicksort, 1M i32, kernels {how}");
        report(&name, weft, Some(("sort_unstable", baseline)), &counters, peak, n * 4);
    }
}

type Point = (f32, f32);

fn cross(o: Point, a: Point, b: Point) -> f32 {
    (a.0 - o.0) * (b.1 - o.1) - (a.1 - o.1) * (b.0 - o.0)
}

/// The sample's `hull_side`, sequential.
fn hull_side(points: &[Point], a: Point, b: Point, out: &mut Vec<Point>) {
    let left: Vec<Point> = points.iter().copied().filter(|&p| cross(a, b, p) > 0.0).collect();
    if left.is_empty() {
        out.push(a);
        return;
    }
    let mut far = left[0];
    for &p in &left[1..] {
        if cross(a, b, p) > cross(a, b, far) {
            far = p;
        }
    }
    hull_side(&left, a, far, out);
    hull_side(&left, far, b, out);
}

fn quickhull_baseline(points: &[Point]) -> Vec<Point> {
    let mut leftmost = points[0];
    let mut rightmost = points[0];
    for &p in points {
        if p.0 < leftmost.0 {
            leftmost = p;
        }
        if p.0 > rightmost.0 {
            rightmost = p;
        }
    }
    let mut out = Vec::new();
    hull_side(points, leftmost, rightmost, &mut out);
    hull_side(points, rightmost, leftmost, &mut out);
    out
}

fn quickhull(runs: usize) {
    let n = 1_000_000;
    let (radii, angles) = (random_f32(n, 11), random_f32(n, 12));
    let (px, py): (Vec<f32>, Vec<f32>) = radii
        .iter()
        .zip(&angles)
        .map(|(r, t)| (r.sqrt() * (6.283_185_5 * t).cos(), r.sqrt() * (6.283_185_5 * t).sin()))
        .unzip();
    let points: Vec<Point> = px.iter().copied().zip(py.iter().copied()).collect();
    let program = fused_entry(
        &functions("quickhull", "def area", "print(quickhull([(0.0, 0.0), (1.0, 0.0), (0.0, 1.0)]))\n"),
        "quickhull",
    );
    let mut args = seq_header(n).to_vec();
    args.push(FlatValue::Vector(Arc::new(Buffer::F32(px))));
    args.push(FlatValue::Vector(Arc::new(Buffer::F32(py))));
    let expected = quickhull_baseline(&points);
    let baseline = median(|| drop(std::hint::black_box(quickhull_baseline(&points))), runs);
    for (how, kernels) in KERNELS {
        let config = cpu::Config { kernels, ..cpu::Config::default() };
        let ((out, counters), peak) = peak_of(|| call(&program, &args, config));
        match out.get(1) {
            Some(FlatValue::Scalar(ScalarValue::I32(len))) => {
                assert_eq!(*len as usize, expected.len(), "hull sizes agree")
            }
            _ => panic!("quickhull gives a sequence"),
        }
        let weft = median(|| drop(std::hint::black_box(call(&program, &args, config))), runs);
        let name = format!("quickhull, 1M points, kernels {how}");
        report(&name, weft, Some(("sequential Rust", baseline)), &counters, peak, n * 8);
    }
}

fn barnes_hut(runs: usize) {
    let n = 75_000;
    let text = sample("barnes_hut");
    let body = text.split("exact = ").next().expect("the sample compares with the direct sum");
    // Two of 75K random bodies may share a cell at the deepest level, so every body need not
    // have a leaf of its own.
    let source = body
        .replacen("n = 200 ", &format!("n = {n} "), 1)
        .replace("assert len(leaves) == n, \"every body has a leaf of its own\"", "");
    let db = Database::default();
    let file = SourceFile::new(&db, "barnes_hut_75k.weft".to_string(), source);
    // The force walk piecewise (the default piece and smaller ones), then all bodies at once.
    for piece in [16_384, flatten::DEFAULT_PIECE_SIZE, 1024, 0] {
        let options = flatten::Options { piece_size: piece, ..flatten::Options::default() };
        let run = || {
            let report = weft_session::run_file(&db, file, Backend::Cpu, options.into(), &mut NoHost);
            report.expect("the Barnes-Hut step runs").counters().cloned().expect("a CPU run")
        };
        // Compiled first, so that the peak is the run's alone.
        drop(run());
        let (counters, peak) = peak_of(run);
        let weft = median(|| drop(std::hint::black_box(run())), runs);
        let name = match piece {
            0 => "Barnes-Hut, 75K, all at once".to_string(),
            _ => format!("Barnes-Hut, 75K, pieces {piece}"),
        };
        report(&name, weft, None, &counters, peak, n * 12);
    }
}

fn main() {
    let runs = if std::env::args().any(|a| a == "--quick") { 3 } else { 5 };
    println!("rayon threads: {}", rayon::current_num_threads());
    quicksort(runs);
    quickhull(runs);
    barnes_hut(runs);
}
