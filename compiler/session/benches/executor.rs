//! `cargo bench --bench executor`: the CPU executor against plain sequential Rust loops written
//! as baselines, on the targets of `docs/performance.md`:
//! - the dot product of two 10M-element `f32` vectors;
//! - Black-Scholes pricing of 1M options;
//! - both fused, as `weft run` runs them, with the fused kernels run as chunked passes
//!   (`cpu::fused`) and op by op, against the same single pass written by hand with rayon (for
//!   the dot product also with its sum grouped as the executor groups it);
//! - sparse matrix times vector (CSR, the sample's `spmv_flat`), 1M rows of 0 to 15 non-zeros,
//!   flat (the default) and with `--sequential-inner` (each row's sum a loop in its element).
//!
//! Each is timed with rayon pools of 1 and 2 threads (and the machine's default), and the
//! table gives the median of several runs, the ratio to the baseline and the 1 -> 2 thread
//! speed-up. Inputs are made before timing, with the prelude's own random generator.

use std::sync::Arc;
use std::time::Duration;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use weft_exec::cpu::{self, Buffer, FlatValue, ScalarValue};
use weft_exec::interp::data::{random_f32, random_i32};
use weft_exec::interp::ops::erf_f32;
use weft_flat::flatten::{InnerSchedule, Options};
use weft_flat::ir;

mod common;
use common::{NoHost, entry, entry_with, fused_entry, median};

const DOT: &str = "\
def dot(xs: [f32], ys: [f32]) -> f32:
    return sum([x * y for x, y in zip(xs, ys)])

print(dot([1.0], [2.0]))
";

const BLACK_SCHOLES: &str = "\
def cnd(d: f32) -> f32:
    return 0.5 * (1.0 + erf(d / sqrt(2.0)))

def price(s: f32, k: f32, t: f32) -> (f32, f32):
    r = 0.02
    v = 0.30
    sqrt_t = sqrt(t)
    d1 = (log(s / k) + (r + 0.5 * v * v) * t) / (v * sqrt_t)
    d2 = d1 - v * sqrt_t
    discounted_k = k * exp(-r * t)
    call = s * cnd(d1) - discounted_k * cnd(d2)
    put = discounted_k * cnd(-d2) - s * cnd(-d1)
    return (call, put)

def price_all(spots: [f32], strikes: [f32], times: [f32]) -> [(f32, f32)]:
    return [price(s, k, t) for s, k, t in zip(spots, strikes, times)]

print(price_all([100.0], [100.0], [1.0]))
";

const SPMV: &str = "\
def spmv_flat(values: [f32], columns: [i32], row_ptr: [i32], x: [f32]) -> [f32]:
    return [sum([values[k] * x[columns[k]] for k in range(row_ptr[r], row_ptr[r + 1])])
            for r in range(len(row_ptr) - 1)]

print(spmv_flat([1.0], [0], [0, 1], [2.0]))
";

/// A host sequence of `f32`, laid out as the IR passes it: offset, length, data.
fn seq(data: Vec<f32>) -> Vec<FlatValue> {
    seq_of(Buffer::F32(data))
}

fn seq_of(data: Buffer) -> Vec<FlatValue> {
    let n = data.len() as i32;
    vec![
        FlatValue::Scalar(ScalarValue::I32(0)),
        FlatValue::Scalar(ScalarValue::I32(n)),
        FlatValue::Vector(Arc::new(data)),
    ]
}

fn spmv_baseline(values: &[f32], columns: &[i32], row_ptr: &[i32], x: &[f32]) -> Vec<f32> {
    row_ptr
        .windows(2)
        .map(|w| (w[0]..w[1]).map(|k| values[k as usize] * x[columns[k as usize] as usize]).sum())
        .collect()
}

fn weft_time(program: &ir::Program, args: &[FlatValue], threads: Option<usize>, runs: usize) -> Duration {
    weft_time_with(program, args, threads, runs, cpu::Config::default())
}

fn weft_time_with(
    program: &ir::Program,
    args: &[FlatValue],
    threads: Option<usize>,
    runs: usize,
    config: cpu::Config,
) -> Duration {
    let mut builder = rayon::ThreadPoolBuilder::new();
    if let Some(t) = threads {
        builder = builder.num_threads(t);
    }
    let pool = builder.build().expect("a rayon pool");
    pool.install(|| {
        median(
            || {
                let mut counters = cpu::Counters::default();
                let out =
                    cpu::call_with(program, program.main, args.to_vec(), &mut NoHost, &mut counters, config)
                        .expect("the benchmark runs");
                std::hint::black_box(out);
            },
            runs,
        )
    })
}

fn dot_baseline(xs: &[f32], ys: &[f32]) -> f32 {
    let mut total = 0.0f32;
    for i in 0..xs.len() {
        total += xs[i] * ys[i];
    }
    total
}

/// The machine's ceiling for the flattened dot product: the same two passes the executor makes
/// (an element-wise multiply into a new vector, then a sum), written by hand with rayon. If this
/// does not speed up from 1 to 2 threads either, memory bandwidth is the limit, not Weft.
fn dot_two_pass_rayon(xs: &[f32], ys: &[f32]) -> f32 {
    use rayon::prelude::*;
    let products: Vec<f32> = xs.par_iter().zip(ys).map(|(x, y)| x * y).collect();
    products.par_iter().sum()
}

/// The machine's ceiling for the fused dot product: one pass that multiplies and sums, written by
/// hand with rayon.
fn dot_one_pass_rayon(xs: &[f32], ys: &[f32]) -> f32 {
    use rayon::prelude::*;
    xs.par_iter().zip(ys).map(|(x, y)| x * y).sum()
}

/// The same single pass with the sum grouped as the executor groups a long one: per chunk of
/// 4,096 products, eight interleaved partial sums. The plain one pass above is one chain of
/// dependent additions per rayon task, bound by the latency of a float addition, not by memory.
fn dot_one_pass_rayon_in_lanes(xs: &[f32], ys: &[f32]) -> f32 {
    use rayon::prelude::*;
    let partials: Vec<f32> = xs
        .par_chunks(4096)
        .zip(ys.par_chunks(4096))
        .map(|(xs, ys)| {
            let mut lanes = [0.0f32; 8];
            let (xg, xr) = xs.as_chunks::<8>();
            let (yg, yr) = ys.as_chunks::<8>();
            for (x, y) in xg.iter().zip(yg) {
                for k in 0..8 {
                    lanes[k] += x[k] * y[k];
                }
            }
            let rest: f32 = xr.iter().zip(yr).map(|(x, y)| x * y).sum();
            lanes.iter().sum::<f32>() + rest
        })
        .collect();
    partials.iter().sum()
}

fn in_pool(threads: usize, runs: usize, f: impl FnMut() + Send) -> Duration {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a rayon pool");
    pool.install(|| median(f, runs))
}

fn cnd(d: f32) -> f32 {
    0.5 * (1.0 + erf_f32(d / 2.0f32.sqrt()))
}

fn black_scholes_baseline(spots: &[f32], strikes: &[f32], times: &[f32]) -> Vec<(f32, f32)> {
    let (r, v) = (0.02f32, 0.30f32);
    let mut out = Vec::with_capacity(spots.len());
    for i in 0..spots.len() {
        let (s, k, t) = (spots[i], strikes[i], times[i]);
        let sqrt_t = t.sqrt();
        let d1 = ((s / k).ln() + (r + 0.5 * v * v) * t) / (v * sqrt_t);
        let d2 = d1 - v * sqrt_t;
        let discounted_k = k * (-r * t).exp();
        out.push((s * cnd(d1) - discounted_k * cnd(d2), discounted_k * cnd(-d2) - s * cnd(-d1)));
    }
    out
}

/// Black-Scholes as one pass written by hand with rayon: what the fused kernel should reach.
fn black_scholes_one_pass_rayon(spots: &[f32], strikes: &[f32], times: &[f32]) -> (Vec<f32>, Vec<f32>) {
    use rayon::prelude::*;
    let (r, v) = (0.02f32, 0.30f32);
    (0..spots.len())
        .into_par_iter()
        .map(|i| {
            let (s, k, t) = (spots[i], strikes[i], times[i]);
            let sqrt_t = t.sqrt();
            let d1 = ((s / k).ln() + (r + 0.5 * v * v) * t) / (v * sqrt_t);
            let d2 = d1 - v * sqrt_t;
            let discounted_k = k * (-r * t).exp();
            (s * cnd(d1) - discounted_k * cnd(d2), discounted_k * cnd(-d2) - s * cnd(-d1))
        })
        .unzip()
}

/// The fused program (`fused`) with its kernels run as chunked passes and op by op, against
/// `ceiling`, the same single pass written by hand with rayon, timed on `threads` threads.
fn report_fused(
    name: &str,
    fused: &ir::Program,
    args: &[FlatValue],
    runs: usize,
    ceiling: impl Fn(usize) -> Duration,
) {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    for threads in [1, 2] {
        let hand = ceiling(threads);
        let chunked = weft_time_with(fused, args, Some(threads), runs, cpu::Config::default());
        let op_by_op = cpu::Config { kernels: cpu::Kernels::OpByOp, ..cpu::Config::default() };
        let op_by_op = weft_time_with(fused, args, Some(threads), runs, op_by_op);
        println!(
            "{name:<24} {threads} thread(s): rayon one pass {:>8.1} ms | weft fused, chunked {:>8.1} ms ({:.2}x) | weft fused, op by op {:>8.1} ms ({:.2}x)",
            ms(hand),
            ms(chunked),
            ms(chunked) / ms(hand),
            ms(op_by_op),
            ms(op_by_op) / ms(hand),
        );
    }
}

fn report(name: &str, baseline: Duration, program: &ir::Program, args: &[FlatValue], runs: usize) {
    let one = weft_time(program, args, Some(1), runs);
    let two = weft_time(program, args, Some(2), runs);
    let default = weft_time(program, args, None, runs);
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{name:<24} baseline {:>8.1} ms | weft 1 thread {:>8.1} ms ({:.2}x) | 2 threads {:>8.1} ms ({:.2}x) | default pool {:>8.1} ms ({:.2}x) | 1->2 threads speed-up {:.2}x",
        ms(baseline),
        ms(one),
        ms(one) / ms(baseline),
        ms(two),
        ms(two) / ms(baseline),
        ms(default),
        ms(default) / ms(baseline),
        ms(one) / ms(two),
    );
}

fn main() {
    let runs = if std::env::args().any(|a| a == "--quick") { 3 } else { 7 };
    println!("rayon default threads: {}", rayon::current_num_threads());

    let n = 10_000_000;
    let (xs, ys) = (random_f32(n, 1), random_f32(n, 2));
    let baseline = median(
        || {
            std::hint::black_box(dot_baseline(&xs, &ys));
        },
        runs,
    );
    let program = entry(DOT, "dot");
    let mut args = seq(xs.clone());
    args.extend(seq(ys.clone()));
    report("dot product, 10M f32", baseline, &program, &args, runs);
    let ceiling = |threads| {
        in_pool(threads, runs, || {
            std::hint::black_box(dot_two_pass_rayon(&xs, &ys));
        })
    };
    let (one, two) = (ceiling(1), ceiling(2));
    println!(
        "{:<24} hand-written rayon, multiply then sum: 1 thread {:>8.1} ms | 2 threads {:>8.1} ms | 1->2 threads speed-up {:.2}x",
        "dot product ceiling",
        one.as_secs_f64() * 1e3,
        two.as_secs_f64() * 1e3,
        one.as_secs_f64() / two.as_secs_f64(),
    );

    report_fused("dot product, 10M f32", &fused_entry(DOT, "dot"), &args, runs, |threads| {
        in_pool(threads, runs, || {
            std::hint::black_box(dot_one_pass_rayon(&xs, &ys));
        })
    });
    report_fused("dot product, in lanes", &fused_entry(DOT, "dot"), &args, runs, |threads| {
        in_pool(threads, runs, || {
            std::hint::black_box(dot_one_pass_rayon_in_lanes(&xs, &ys));
        })
    });

    let n = 1_000_000;
    let spots: Vec<f32> = random_f32(n, 1).iter().map(|u| 5.0 + 25.0 * u).collect();
    let strikes: Vec<f32> = random_f32(n, 2).iter().map(|u| 1.0 + 99.0 * u).collect();
    let times: Vec<f32> = random_f32(n, 3).iter().map(|u| 0.25 + 9.75 * u).collect();
    let baseline =
        median(|| drop(std::hint::black_box(black_scholes_baseline(&spots, &strikes, &times))), runs);
    let program = entry(BLACK_SCHOLES, "price_all");
    let mut args = seq(spots.clone());
    args.extend(seq(strikes.clone()));
    args.extend(seq(times.clone()));
    report("Black-Scholes, 1M options", baseline, &program, &args, runs);
    report_fused(
        "Black-Scholes, 1M options",
        &fused_entry(BLACK_SCHOLES, "price_all"),
        &args,
        runs,
        |threads| {
            in_pool(threads, runs, || {
                drop(std::hint::black_box(black_scholes_one_pass_rayon(&spots, &strikes, &times)));
            })
        },
    );

    let rows = 1_000_000;
    let lengths = random_i32(rows, 0, 16, 4);
    let row_ptr: Vec<i32> = std::iter::once(0)
        .chain(lengths.iter().scan(0, |total, &l| {
            *total += l;
            Some(*total)
        }))
        .collect();
    let nnz = *row_ptr.last().unwrap_or(&0) as usize;
    let values = random_f32(nnz, 5);
    let columns = random_i32(nnz, 0, rows as i32, 6);
    let x = random_f32(rows, 7);
    let baseline =
        median(|| drop(std::hint::black_box(spmv_baseline(&values, &columns, &row_ptr, &x))), runs);
    let mut args = seq(values);
    args.extend(seq_of(Buffer::I32(columns)));
    args.extend(seq_of(Buffer::I32(row_ptr)));
    args.extend(seq(x));
    println!("SpMV: {rows} rows, {nnz} non-zeros");
    report("SpMV CSR, flat", baseline, &entry(SPMV, "spmv_flat"), &args, runs);
    let sequential =
        entry_with(SPMV, "spmv_flat", Options { inner: InnerSchedule::Sequential, ..Options::default() });
    report("SpMV CSR, seq. inner", baseline, &sequential, &args, runs);
}
