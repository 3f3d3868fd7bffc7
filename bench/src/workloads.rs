//! The workloads: for each, where it comes from, its sizes, how its inputs are drawn, its Weft
//! program (`bench/workloads/*.weft`) and its sequential Rust baseline. The Python peers'
//! versions are in `bench/peers/peers.py`, under the same names.

use crate::inputs::{Array, Inputs};
use crate::sequential;

/// One workload of the suite.
pub struct Workload {
    pub name: &'static str,
    /// The paper (and table) it comes from.
    pub origin: &'static str,
    /// What the size counts.
    pub unit: &'static str,
    /// The sizes of a full run, smallest first; the last is the paper's, or the largest this
    /// machine runs in the suite's time (`scaled` says why).
    pub sizes: &'static [usize],
    /// Why the largest size is below the paper's, when it is.
    pub scaled: Option<&'static str>,
    /// The sizes of `--quick`.
    pub quick: &'static [usize],
    /// The size every implementation's output is checked at against the interpreter's.
    pub check: usize,
    /// The largest size the interpreter is timed at (it is the oracle, not a contender).
    pub interpreter_limit: usize,
    /// The largest size the GPU executor is timed at on a CPU adapter (lavapipe).
    pub cpu_adapter_limit: usize,
    /// How far an output element may be from the interpreter's: `|a - b| <= tolerance * (1 + |a|)`.
    pub tolerance: f64,
    /// Definitions, in Weft.
    pub weft: &'static str,
    /// The cell that binds the inputs, from `.npy` files named as `inputs` names them.
    pub setup: &'static str,
    /// The expression timed.
    pub call: &'static str,
    pub inputs: fn(usize, &mut fastrand::Rng) -> Inputs,
    /// The sequential Rust baseline: `sequential::{name}`.
    pub sequential: fn(&Inputs) -> Array,
}

/// Helpers every workload's setup cell may use: a top-level binding cannot be annotated, so
/// these fix the element types of loaded data.
pub const PRELUDE: &str = "\
def as_f32(xs: [f32]) -> [f32]:
    return xs

def as_i32(xs: [i32]) -> [i32]:
    return xs
";

pub fn all() -> Vec<Workload> {
    vec![
        Workload {
            name: "dot",
            origin: "NESL on the GPU, Table 1",
            unit: "elements",
            sizes: &[10_000, 100_000, 1_000_000, 10_000_000],
            scaled: None,
            quick: &[10_000],
            check: 1_000,
            interpreter_limit: 1_000_000,
            cpu_adapter_limit: 10_000_000,
            tolerance: 1e-4,
            weft: include_str!("../workloads/dot.weft"),
            setup: "xs = as_f32(load_npy(\"xs.npy\"))\nys = as_f32(load_npy(\"ys.npy\"))\n",
            call: "dotp(xs, ys)",
            inputs: |n, rng| vec![("xs", uniform(n, rng)), ("ys", uniform(n, rng))],
            sequential: sequential::dot,
        },
        Workload {
            name: "black_scholes",
            origin: "NESL on the GPU, Table 1; Parakeet",
            unit: "options",
            sizes: &[10_000, 100_000, 1_000_000, 10_000_000],
            scaled: None,
            quick: &[10_000],
            check: 1_000,
            interpreter_limit: 100_000,
            cpu_adapter_limit: 10_000_000,
            tolerance: 1e-3,
            weft: include_str!("../workloads/black_scholes.weft"),
            setup: "spots = as_f32(load_npy(\"spots.npy\"))\nstrikes = as_f32(load_npy(\"strikes.npy\"))\n\
                    times = as_f32(load_npy(\"times.npy\"))\n",
            call: "price_all(spots, strikes, times)",
            inputs: |n, rng| {
                let spots = uniform(n, rng).map_f32(|u| 5.0 + 25.0 * u);
                let strikes = uniform(n, rng).map_f32(|u| 1.0 + 99.0 * u);
                let times = uniform(n, rng).map_f32(|u| 0.25 + 9.75 * u);
                vec![("spots", spots), ("strikes", strikes), ("times", times)]
            },
            sequential: sequential::black_scholes,
        },
        Workload {
            name: "sort",
            origin: "NESL on the GPU, Table 1 (quicksort)",
            unit: "elements",
            sizes: &[1_000, 10_000, 100_000, 1_000_000],
            scaled: None,
            quick: &[1_000],
            check: 1_000,
            interpreter_limit: 100_000,
            cpu_adapter_limit: 10_000,
            tolerance: 0.0,
            weft: include_str!("../workloads/sort.weft"),
            setup: "xs = as_i32(load_npy(\"xs.npy\"))\n",
            call: "quicksort(xs)",
            inputs: |n, rng| vec![("xs", Array::I32((0..n).map(|_| rng.i32(..)).collect()))],
            sequential: sequential::sort,
        },
        Workload {
            name: "spmv_csr",
            origin: "Copperhead, Figure 1",
            unit: "rows (about 16 non-zeros each)",
            sizes: &[1_000, 10_000, 100_000, 1_000_000],
            scaled: None,
            quick: &[1_000],
            check: 300,
            interpreter_limit: 100_000,
            cpu_adapter_limit: 1_000_000,
            tolerance: 1e-4,
            weft: include_str!("../workloads/spmv_csr.weft"),
            setup: "lens = as_i32(load_npy(\"lens.npy\"))\n\
                    vals = partition(as_f32(load_npy(\"vals.npy\")), lens)\n\
                    cols = partition(as_i32(load_npy(\"cols.npy\")), lens)\n\
                    x = as_f32(load_npy(\"x.npy\"))\n",
            call: "spmv_csr(vals, cols, x)",
            inputs: |n, rng| {
                let lens: Vec<i32> = (0..n).map(|_| rng.i32(0..32)).collect();
                let nnz = lens.iter().map(|&l| l as usize).sum();
                let cols = Array::I32((0..nnz).map(|_| rng.i32(0..n as i32)).collect());
                vec![
                    ("vals", uniform(nnz, rng)),
                    ("cols", cols),
                    ("lens", Array::I32(lens)),
                    ("x", uniform(n, rng)),
                ]
            },
            sequential: sequential::spmv_csr,
        },
        Workload {
            name: "segmented_sums",
            origin: "irregular: ragged rows, skewed lengths",
            unit: "elements (rows of 1 to 1% of them, most short)",
            sizes: &[10_000, 100_000, 1_000_000, 10_000_000],
            scaled: None,
            quick: &[10_000],
            check: 2_000,
            interpreter_limit: 1_000_000,
            cpu_adapter_limit: 10_000_000,
            tolerance: 1e-4,
            weft: include_str!("../workloads/segmented_sums.weft"),
            setup: "lens = as_i32(load_npy(\"lens.npy\"))\nrows = partition(as_f32(load_npy(\"values.npy\")), lens)\n",
            call: "row_sums(rows)",
            inputs: |n, rng| {
                let lens = skewed_lengths(n, rng);
                vec![("values", uniform(n, rng)), ("lens", Array::I32(lens))]
            },
            sequential: sequential::segmented_sums,
        },
    ]
}

fn uniform(n: usize, rng: &mut fastrand::Rng) -> Array {
    Array::F32((0..n).map(|_| rng.f32()).collect())
}

/// Row lengths summing to `n`, drawn from a Pareto-like law: most rows hold a few elements, a
/// few hold up to 1% of all of them, so a schedule of one thread per row is badly balanced.
fn skewed_lengths(n: usize, rng: &mut fastrand::Rng) -> Vec<i32> {
    let longest = (n / 100).max(1);
    let mut lens = Vec::new();
    let mut left = n;
    while left > 0 {
        let u = rng.f64().max(1e-9);
        let len = ((1.0 / u.powf(1.5)) as usize).clamp(1, longest).min(left);
        lens.push(len as i32);
        left -= len;
    }
    lens
}
