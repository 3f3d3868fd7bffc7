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
    /// Puts an output in a canonical order before it is compared, where implementations may
    /// order it differently (a hull's vertices).
    pub normalise: fn(Vec<f64>) -> Vec<f64>,
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
            normalise: as_given,
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
            normalise: as_given,
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
            normalise: as_given,
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
            normalise: as_given,
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
            normalise: as_given,
            sequential: sequential::segmented_sums,
        },
        Workload {
            name: "quickhull",
            origin: "NESL on the GPU, Table 1",
            unit: "points (uniform in a disc)",
            sizes: &[1_000, 10_000, 100_000, 1_000_000],
            scaled: Some("the paper's 5M points: 1M keeps the suite within its time on 2 cores"),
            quick: &[1_000],
            check: 1_000,
            interpreter_limit: 100_000,
            cpu_adapter_limit: 100_000,
            tolerance: 0.0,
            weft: include_str!("../workloads/quickhull.weft"),
            setup: "points = zip(as_f32(load_npy(\"xs.npy\")), as_f32(load_npy(\"ys.npy\")))\n",
            call: "quickhull(points)",
            inputs: |n, rng| {
                let (mut xs, mut ys) = (Vec::with_capacity(n), Vec::with_capacity(n));
                for _ in 0..n {
                    let (r, t) = (rng.f32().sqrt(), std::f32::consts::TAU * rng.f32());
                    xs.push(r * t.cos());
                    ys.push(r * t.sin());
                }
                vec![("xs", Array::F32(xs)), ("ys", Array::F32(ys))]
            },
            normalise: sorted_pairs,
            sequential: sequential::quickhull,
        },
        Workload {
            name: "barnes_hut",
            origin: "NESL on the GPU, Table 1 (one step)",
            unit: "bodies",
            sizes: &[1_000, 10_000, 75_000],
            scaled: None,
            quick: &[1_000],
            check: 300,
            interpreter_limit: 10_000,
            cpu_adapter_limit: 10_000,
            tolerance: 1e-3,
            weft: include_str!("../workloads/barnes_hut.weft"),
            setup: "xs = as_f32(load_npy(\"xs.npy\"))\nys = as_f32(load_npy(\"ys.npy\"))\nms = as_f32(load_npy(\"ms.npy\"))\n",
            call: "accelerations(xs, ys, ms)",
            inputs: |n, rng| {
                let (xs, ys) = (uniform(n, rng), uniform(n, rng));
                let ms = uniform(n, rng).map_f32(|w| (0.5 + w) / n as f32);
                vec![("xs", xs), ("ys", ys), ("ms", ms)]
            },
            normalise: as_given,
            sequential: sequential::barnes_hut,
        },
        Workload {
            name: "kmeans",
            origin: "Parakeet (k-means, 5 steps of Lloyd's algorithm)",
            unit: "points of 8 features, 4 clusters",
            sizes: &[1_000, 10_000, 100_000, 1_000_000],
            scaled: None,
            quick: &[1_000],
            check: 500,
            interpreter_limit: 100_000,
            cpu_adapter_limit: 1_000_000,
            tolerance: 1e-3,
            weft: include_str!("../workloads/kmeans.weft"),
            setup: "flat = as_f32(load_npy(\"X.npy\"))\nX = partition(flat, replicate(8, len(flat) // 8))\n",
            call: "kmeans(X, 4, 5)",
            inputs: |n, rng| {
                // Four blobs, the first k points one from each (the initial centroids).
                let points = (0..n).flat_map(|p| (0..8).map(move |d| (p, d)));
                let flat =
                    points.map(|(p, d)| 10.0 * ((p % 4 + d) % 4) as f32 + 2.0 * rng.f32() - 1.0).collect();
                vec![("X", Array::F32(flat))]
            },
            normalise: as_given,
            sequential: sequential::kmeans,
        },
        Workload {
            name: "spmv_ell",
            origin: "Copperhead (ELL form)",
            unit: "rows (10 to 15 non-zeros each)",
            sizes: &[1_000, 10_000, 100_000, 1_000_000],
            scaled: None,
            quick: &[1_000],
            check: 300,
            interpreter_limit: 100_000,
            cpu_adapter_limit: 1_000_000,
            tolerance: 1e-4,
            weft: include_str!("../workloads/spmv_ell.weft"),
            setup: "x = as_f32(load_npy(\"x.npy\"))\nflat_data = as_f32(load_npy(\"data.npy\"))\n\
                    data = partition(flat_data, replicate(len(x), len(flat_data) // len(x)))\n\
                    idx = partition(as_i32(load_npy(\"idx.npy\")), replicate(len(x), len(flat_data) // len(x)))\n",
            call: "spmv_ell(data, idx, x)",
            inputs: |n, rng| {
                let lens: Vec<usize> = (0..n).map(|_| rng.usize(10..16)).collect();
                let k = lens.iter().copied().max().unwrap_or(0);
                let (mut data, mut idx) = (vec![0.0f32; k * n], vec![0i32; k * n]);
                for (i, &len) in lens.iter().enumerate() {
                    for j in 0..len {
                        data[j * n + i] = rng.f32();
                        idx[j * n + i] = rng.i32(0..n as i32);
                    }
                }
                vec![("data", Array::F32(data)), ("idx", Array::I32(idx)), ("x", uniform(n, rng))]
            },
            normalise: as_given,
            sequential: sequential::spmv_ell,
        },
        Workload {
            name: "cg",
            origin: "Copperhead (conjugate gradient, 10 iterations)",
            unit: "unknowns (5 non-zeros per row)",
            sizes: &[1_000, 10_000, 100_000, 1_000_000],
            scaled: None,
            quick: &[1_000],
            check: 500,
            interpreter_limit: 100_000,
            cpu_adapter_limit: 1_000_000,
            tolerance: 1e-3,
            weft: include_str!("../workloads/cg.weft"),
            setup: "vals = as_f32(load_npy(\"vals.npy\"))\ncols = as_i32(load_npy(\"cols.npy\"))\n\
                    row_ptr = as_i32(load_npy(\"row_ptr.npy\"))\nb = as_f32(load_npy(\"b.npy\"))\n",
            call: "cg(vals, cols, row_ptr, b, 10)",
            inputs: |n, rng| {
                // A symmetric, diagonally dominant matrix: the 2-D Laplacian's pattern on a
                // sqrt(n)-wide grid, with a random diagonal above 4.
                let s = ((n as f64).sqrt() as usize).max(2);
                let (mut vals, mut cols, mut row_ptr) = (Vec::new(), Vec::new(), vec![0i32]);
                for r in 0..n {
                    for c in [r.wrapping_sub(s), r.wrapping_sub(1), r, r + 1, r + s] {
                        if c < n {
                            vals.push(if c == r { 4.5 + rng.f32() } else { -1.0 });
                            cols.push(c as i32);
                        }
                    }
                    row_ptr.push(vals.len() as i32);
                }
                let (vals, cols, row_ptr) = (Array::F32(vals), Array::I32(cols), Array::I32(row_ptr));
                vec![("vals", vals), ("cols", cols), ("row_ptr", row_ptr), ("b", uniform(n, rng))]
            },
            normalise: as_given,
            sequential: sequential::cg,
        },
        Workload {
            name: "bfs",
            origin: "irregular: breadth-first levels of a random graph",
            unit: "vertices (0 to 7 out-edges each)",
            sizes: &[1_000, 10_000, 100_000, 1_000_000],
            scaled: None,
            quick: &[1_000],
            check: 1_000,
            interpreter_limit: 100_000,
            cpu_adapter_limit: 100_000,
            tolerance: 0.0,
            weft: include_str!("../workloads/bfs.weft"),
            setup: "offsets = as_i32(load_npy(\"offsets.npy\"))\ntargets = as_i32(load_npy(\"targets.npy\"))\n",
            call: "bfs(offsets, targets, 0)",
            inputs: |n, rng| {
                let mut offsets = vec![0i32];
                let mut targets = Vec::new();
                for _ in 0..n {
                    for _ in 0..rng.usize(0..8) {
                        targets.push(rng.i32(0..n as i32));
                    }
                    offsets.push(targets.len() as i32);
                }
                vec![("offsets", Array::I32(offsets)), ("targets", Array::I32(targets))]
            },
            normalise: as_given,
            sequential: sequential::bfs,
        },
    ]
}

fn as_given(output: Vec<f64>) -> Vec<f64> {
    output
}

/// Pairs `(x, y)` sorted: a hull's vertices, whichever vertex an implementation starts from.
fn sorted_pairs(output: Vec<f64>) -> Vec<f64> {
    let mut pairs: Vec<(f64, f64)> =
        output.chunks(2).map(|p| (p[0], p.get(1).copied().unwrap_or(0.0))).collect();
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    pairs.into_iter().flat_map(|(x, y)| [x, y]).collect()
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
