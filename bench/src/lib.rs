//! `weft bench`: the papers' workloads on Weft's three executors and on the implementations a
//! user would pick instead (sequential Rust, numpy, JAX, Numba, Taichi on CPU and Vulkan),
//! measured in one run on the same inputs, after every implementation's output is checked
//! against Weft's interpreter; and the report (`docs/benchmarks.md`) with its plots.
//!
//! Data flows one way: `workloads` says what to run, `inputs` writes the data, `weft` and
//! `python` run the contenders, this module checks and times them into `Results`, and `report`
//! renders those. Nothing here compiles Weft: the session engine does.

pub mod inputs;
pub mod python;
pub mod report;
pub mod sequential;
pub mod weft;
pub mod wgsl;
pub mod workloads;

use std::path::{Path, PathBuf};
use std::time::Instant;

use weft_flat::flatten::InnerSchedule;
use weft_flat::fuse::Strategy;
use weft_session::{Backend, Options};

use crate::weft::{Counts, WeftRunner};
use crate::workloads::Workload;

/// What to measure.
#[derive(Debug, Clone)]
pub struct Config {
    /// Workload names; all when empty.
    pub workloads: Vec<String>,
    /// Sizes for every selected workload, in place of each one's own.
    pub sizes: Option<Vec<usize>>,
    pub repeat: usize,
    /// Small sizes, to check that every workload and peer works.
    pub quick: bool,
    /// Leave out the Python peers (no virtual environment is made).
    pub no_python: bool,
    /// Weft's compiler options (fusion strategy, inner schedule) for its executors.
    pub options: Options,
    /// Also run NESL-GPU's Table 2: Weft's executors under each fusion strategy and inner
    /// schedule, normalised to the unoptimised base.
    pub ablation: bool,
    /// Where inputs and the peers' scripts are written.
    pub work_dir: PathBuf,
}

/// Who ran a measurement.
pub const WEFT_PEERS: &[(&str, Backend)] =
    &[("weft interpreter", Backend::Interp), ("weft cpu", Backend::Cpu), ("weft gpu", Backend::Gpu)];
pub const SEQUENTIAL: &str = "rust sequential";
pub const HAND_WGSL: &str = "hand-written wgsl";

/// One contender on one workload: its checked outcome and its measurements.
#[derive(Debug, Clone)]
pub struct Entry {
    pub peer: String,
    pub version: String,
    pub loc: Option<usize>,
    /// How the implementation differs from the workload as the paper states it.
    pub note: Option<String>,
    /// Why it was not timed (it failed, or disagreed with the interpreter), if it was not.
    pub excluded: Option<String>,
    /// Why the peer has no implementation of the workload, where it has none.
    pub missing: Option<String>,
    /// Per size: the repeats' times in milliseconds, and the GPU's counts of the first repeat.
    pub times: Vec<(usize, Vec<f64>, Option<Counts>)>,
    /// Sizes it was not timed at, and why.
    pub skipped: Vec<(usize, String)>,
}

#[derive(Debug, Clone)]
pub struct WorkloadResults {
    pub name: String,
    pub origin: String,
    pub unit: String,
    pub sizes: Vec<usize>,
    pub scaled: Option<String>,
    pub entries: Vec<Entry>,
    /// Per size, the bytes of the inputs: what a flat kernel must read at least once.
    pub input_bytes: Vec<(usize, u64)>,
}

#[derive(Debug, Clone)]
pub struct Results {
    pub machine: String,
    pub adapter: Option<String>,
    pub repeat: usize,
    pub quick: bool,
    pub options: String,
    pub workloads: Vec<WorkloadResults>,
    pub seconds: f64,
    /// Copy bandwidth in GB/s (read plus written): one core's `copy_from_slice`, and the GPU
    /// adapter's copy kernel, each over 4M words.
    pub cpu_copy_gbs: f64,
    pub gpu_copy_gbs: Option<f64>,
    pub ablation: Vec<Ablation>,
}

/// One workload under each of `VARIANTS`, at one size.
#[derive(Debug, Clone)]
pub struct Ablation {
    pub workload: String,
    pub size: usize,
    /// Per variant, its measurements or why it did not run.
    pub rows: Vec<(&'static str, Result<Variant, String>)>,
}

/// One variant of the ablation: the GPU executor's median time and counts, and the CPU
/// executor's median time.
#[derive(Debug, Clone, Copy)]
pub struct Variant {
    pub gpu_ms: f64,
    pub counts: Counts,
    pub cpu_ms: f64,
}

/// The largest size the ablation runs a workload at.
pub const ABLATION_LIMIT: usize = 100_000;

/// The ablation's variants, after NESL on the GPU's Table 2: the base (one kernel per op, every
/// inner computation flat), then each optimisation added.
pub const VARIANTS: &[(&str, Strategy, InnerSchedule)] = &[
    ("base: no fusion, inner flat", Strategy::None, InnerSchedule::Flat),
    ("greedy fusion", Strategy::Greedy, InnerSchedule::Flat),
    ("ILP fusion", Strategy::Ilp, InnerSchedule::Flat),
    ("ILP fusion, inner sequential", Strategy::Ilp, InnerSchedule::Sequential),
    ("ILP fusion, inner auto (the default)", Strategy::Ilp, InnerSchedule::Auto),
];

/// Where progress goes: a bar on a terminal, a line per step otherwise.
pub trait Progress {
    fn start(&mut self, steps: u64);
    fn step(&mut self, what: &str);
    fn say(&mut self, line: &str);
}

/// Runs the benchmark.
pub fn run(config: &Config, progress: &mut dyn Progress) -> Result<Results, String> {
    let started = Instant::now();
    let all = workloads::all();
    for name in &config.workloads {
        if !all.iter().any(|w| w.name == name) {
            let known: Vec<&str> = all.iter().map(|w| w.name).collect();
            return Err(format!("no workload `{name}`; the workloads are {}", known.join(", ")));
        }
    }
    let selected: Vec<&Workload> = all
        .iter()
        .filter(|w| config.workloads.is_empty() || config.workloads.iter().any(|n| n == w.name))
        .collect();
    let sizes_of = |w: &Workload| -> Vec<usize> {
        match (&config.sizes, config.quick) {
            (Some(sizes), _) => sizes.clone(),
            (None, true) => w.quick.to_vec(),
            (None, false) => w.sizes.to_vec(),
        }
    };
    let python_peers = if config.no_python { 0 } else { python::PEERS.len() };
    let steps: usize = selected
        .iter()
        .map(|w| {
            let hand = usize::from(wgsl::WRITTEN.contains(&w.name));
            (sizes_of(w).len() + 1) * WEFT_PEERS.len() + 1 + hand
        })
        .sum::<usize>()
        + python_peers
        + if config.ablation { selected.len() * VARIANTS.len() } else { 0 };
    progress.start(steps as u64);

    // Inputs, one directory per workload and size, the check size first.
    let mut dirs = Vec::new();
    for w in &selected {
        let mut per_size = Vec::new();
        let sizes = std::iter::once((w.check, "check")).chain(sizes_of(w).into_iter().map(|s| (s, "timed")));
        for (size, purpose) in sizes {
            // The check's inputs have a directory of their own even when a timed size is the
            // same: a peer's results are told apart by directory.
            let dir = config.work_dir.join(w.name).join(format!("{purpose}-{size}"));
            let mut rng = fastrand::Rng::with_seed(seed(w.name, size));
            let inputs = (w.inputs)(size, &mut rng);
            inputs::write_all(&inputs, &dir)
                .map_err(|e| format!("cannot write inputs to {}: {e}", dir.display()))?;
            per_size.push((size, dir, inputs));
        }
        dirs.push(per_size);
    }

    // The oracle: the interpreter's output at each workload's check size.
    let mut oracles = Vec::new();
    for (w, per_size) in selected.iter().zip(&dirs) {
        oracles.push(oracle(w, &per_size[0].1, config.options)?);
    }

    // The Python peers, one process each over every workload: all checked first, then timed
    // where they agreed.
    let peer_results = if config.no_python {
        Vec::new()
    } else {
        run_python_peers(config, &selected, &dirs, &oracles, progress)
    };

    let mut adapter = None;
    let hand = wgsl::HandGpu::new();
    let mut out = Vec::new();
    for ((w, per_size), expected) in selected.iter().zip(&dirs).zip(&oracles) {
        let check_inputs = &per_size[0].2;
        let mut entries = weft_entries(config, w, per_size, expected, &mut adapter, progress);

        // Sequential Rust.
        let mut entry = Entry::new(SEQUENTIAL, &rustc_version());
        entry.loc = Some(sequential::lines_of_code(w.name));
        entry.excluded = disagreement(w, expected, &(w.sequential)(check_inputs).to_f64());
        progress.step(&format!("{}: {SEQUENTIAL}", w.name));
        for (size, _, inputs) in &per_size[1..] {
            if entry.excluded.is_none() {
                entry.times.push((*size, time_sequential(w, inputs, config.repeat), None));
            }
        }
        entries.push(entry);

        if wgsl::WRITTEN.contains(&w.name) {
            entries.push(hand_written(w, &hand, per_size, expected, config.repeat));
            progress.step(&format!("{}: {HAND_WGSL}", w.name));
        }

        // The Python peers' answers for this workload.
        for (peer, results) in &peer_results {
            entries.push(python_entry(w, peer, results, per_size, expected));
        }
        out.push(WorkloadResults {
            name: w.name.into(),
            origin: w.origin.into(),
            unit: w.unit.into(),
            sizes: sizes_of(w),
            scaled: w.scaled.map(String::from),
            entries,
            input_bytes: per_size[1..]
                .iter()
                .map(|(size, _, inputs)| (*size, inputs.iter().map(|(_, a)| a.bytes() as u64).sum()))
                .collect(),
        });
    }
    let mut ablation = Vec::new();
    if config.ablation {
        for (w, per_size) in selected.iter().zip(&dirs) {
            // The largest size up to `ABLATION_LIMIT` that the adapter runs: the base launches
            // every op apart, many times the default's work.
            let fits =
                |size: &&(usize, PathBuf, inputs::Inputs)| size.0 <= w.cpu_adapter_limit.min(ABLATION_LIMIT);
            let Some((size, dir, _)) = per_size[1..].iter().rev().find(fits) else { continue };
            let rows = VARIANTS
                .iter()
                .map(|&(name, strategy, inner)| {
                    progress.step(&format!("{}: ablation, {name}", w.name));
                    let mut options = config.options;
                    options.fusion.strategy = strategy;
                    options.flatten.inner = inner;
                    (name, ablate(w, dir, options, config.repeat))
                })
                .collect();
            ablation.push(Ablation { workload: w.name.into(), size: *size, rows });
        }
    }
    let gpu_copy_gbs = hand.as_ref().ok().and_then(|hand| hand.copy_bandwidth(1 << 22, 9).ok());
    Ok(Results {
        cpu_copy_gbs: cpu_copy_bandwidth(1 << 22, 9),
        ablation,
        gpu_copy_gbs,
        machine: machine(),
        adapter,
        repeat: config.repeat,
        quick: config.quick,
        options: format!(
            "fusion {}, inner {:?}",
            config.options.fusion.strategy.name(),
            config.options.flatten.inner
        ),
        workloads: out,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// The inputs of one workload: per size (the check size first), its directory of `.npy` files
/// and the arrays themselves.
type Sizes = Vec<(usize, PathBuf, inputs::Inputs)>;

/// Every Python peer's results over every workload: a process per peer checks its output of
/// each workload at the check size against the interpreter's (`oracles`), and a second times
/// only the workloads it agreed on.
fn run_python_peers(
    config: &Config,
    selected: &[&Workload],
    dirs: &[Sizes],
    oracles: &[Vec<f64>],
    progress: &mut dyn Progress,
) -> Vec<(String, Vec<python::PeerResult>)> {
    let python = python::ensure_venv(&python::venv_dir(), &mut |line| progress.say(line));
    let run = |peer: &str, runs: &[python::PeerRun]| match &python {
        Ok(python) => python::run_peer(python, &config.work_dir, peer, runs),
        Err(why) => python::unavailable(runs, why),
    };
    let peer_run = |w: &Workload, dir: &Path, check: bool| python::PeerRun {
        workload: w.name.to_string(),
        dir: dir.display().to_string(),
        repeat: if check { 1 } else { config.repeat },
        check,
    };
    let mut all = Vec::new();
    for peer in python::PEERS {
        let checks: Vec<python::PeerRun> =
            selected.iter().zip(dirs).map(|(w, per_size)| peer_run(w, &per_size[0].1, true)).collect();
        let mut results = run(peer, &checks);
        let agreed = |w: &Workload, expected: &[f64]| {
            let result = results.iter().find(|r| r.workload == w.name);
            result.is_some_and(|r| {
                r.error.is_none()
                    && r.missing.is_none()
                    && disagreement(w, expected, r.output.as_deref().unwrap_or_default()).is_none()
            })
        };
        let timed: Vec<python::PeerRun> = (selected.iter().zip(dirs).zip(oracles))
            .filter(|((w, _), expected)| agreed(w, expected))
            .flat_map(|((w, per_size), _)| per_size[1..].iter().map(|(_, dir, _)| peer_run(w, dir, false)))
            .collect();
        if !timed.is_empty() {
            results.extend(run(peer, &timed));
        }
        progress.step(&format!("{peer}: {} checks, {} timed runs", checks.len(), timed.len()));
        all.push((peer.to_string(), results));
    }
    all
}

/// The interpreter's output of `w` on the inputs in `dir`: what every other implementation
/// must give.
fn oracle(w: &Workload, dir: &Path, options: Options) -> Result<Vec<f64>, String> {
    let mut interpreter = WeftRunner::new(w, Backend::Interp, options)?;
    let output =
        interpreter.load(w, dir).and_then(|()| interpreter.time_once(w)).and_then(|_| interpreter.result());
    output.map_err(|why| format!("{}: the interpreter could not run the check: {why}", w.name))
}

/// Weft's three executors on `w`: each checked against `expected` at the check size, then
/// timed at each size it runs at here.
fn weft_entries(
    config: &Config,
    w: &Workload,
    per_size: &Sizes,
    expected: &[f64],
    adapter: &mut Option<String>,
    progress: &mut dyn Progress,
) -> Vec<Entry> {
    let check_dir = &per_size[0].1;
    let mut entries = Vec::new();
    for &(peer, backend) in WEFT_PEERS {
        let mut entry = Entry::new(peer, env!("CARGO_PKG_VERSION"));
        entry.loc = Some(weft_lines(w.weft));
        let mut runner = match WeftRunner::new(w, backend, config.options) {
            Ok(runner) => runner,
            Err(why) => {
                entry.excluded = Some(why);
                entries.push(entry);
                continue;
            }
        };
        let checked =
            runner.load(w, check_dir).and_then(|()| runner.time_once(w)).and_then(|_| runner.result());
        progress.step(&format!("{}: {peer}, checked at {}", w.name, w.check));
        entry.excluded = match checked {
            Ok(output) => disagreement(w, expected, &output),
            Err(why) => Some(why),
        };
        let found = if backend == Backend::Gpu { runner.adapter() } else { None };
        if let Some((name, is_cpu)) = &found {
            adapter.get_or_insert_with(|| name.clone());
            if *is_cpu {
                entry.note = Some(format!("on a CPU adapter ({name})"));
            }
        }
        let on_cpu_adapter = found.is_some_and(|(_, cpu)| cpu);
        for (size, dir, _) in &per_size[1..] {
            progress.step(&format!("{}: {peer} at {size}", w.name));
            if entry.excluded.is_some() {
                continue;
            }
            let limit = match backend {
                Backend::Interp => Some((w.interpreter_limit, "the interpreter is the oracle, timed up to")),
                Backend::Gpu if on_cpu_adapter => {
                    Some((w.cpu_adapter_limit, "on a CPU adapter, timed up to"))
                }
                _ => None,
            };
            if let Some((limit, why)) = limit.filter(|(limit, _)| size > limit) {
                entry.skipped.push((*size, format!("{why} {limit}")));
                continue;
            }
            match time_weft(&mut runner, w, dir, config.repeat) {
                Ok((times, counts)) => entry.times.push((*size, times, counts)),
                Err(why) => entry.skipped.push((*size, why)),
            }
        }
        entries.push(entry);
    }
    entries
}

/// A Python peer's entry for `w`, from what it reported: its check against `expected`, then
/// its times.
fn python_entry(
    w: &Workload,
    peer: &str,
    results: &[python::PeerResult],
    per_size: &Sizes,
    expected: &[f64],
) -> Entry {
    let mine: Vec<&python::PeerResult> = results.iter().filter(|r| r.workload == w.name).collect();
    let version = mine.iter().find_map(|r| r.version.clone()).unwrap_or_else(|| "not installed".into());
    let mut entry = Entry::new(peer, &version);
    entry.loc = mine.iter().find_map(|r| r.loc);
    entry.note = mine.iter().find_map(|r| r.note.clone());
    entry.missing = mine.iter().find_map(|r| r.missing.clone());
    for (i, (size, dir, _)) in per_size.iter().enumerate() {
        let Some(result) = mine.iter().find(|r| r.dir == dir.display().to_string()) else { continue };
        if result.missing.is_some() {
            continue;
        }
        if let Some(why) = &result.error {
            if i == 0 {
                entry.excluded = Some(why.clone());
            } else {
                entry.skipped.push((*size, why.clone()));
            }
        } else if i == 0 {
            entry.excluded = disagreement(w, expected, result.output.as_deref().unwrap_or_default());
        } else if entry.excluded.is_none() {
            entry.times.push((*size, result.times_ms.clone(), None));
        }
    }
    entry
}

impl Entry {
    fn new(peer: &str, version: &str) -> Entry {
        Entry {
            peer: peer.into(),
            version: version.into(),
            loc: None,
            note: None,
            excluded: None,
            missing: None,
            times: Vec::new(),
            skipped: Vec::new(),
        }
    }
}

fn time_weft(
    runner: &mut WeftRunner,
    w: &Workload,
    dir: &Path,
    repeat: usize,
) -> Result<(Vec<f64>, Option<Counts>), String> {
    runner.load(w, dir)?;
    // A first run compiles the call's cell and warms the caches, as the peers' warm-up does.
    let (_, counts) = runner.time_once(w)?;
    let times = repeats(repeat, || runner.time_once(w).map(|(ms, _)| ms))?;
    Ok((times, (counts.launches > 0).then_some(counts)))
}

/// A measurement of one size stops repeating after `MIN_REPEATS` once it has taken this long:
/// the slowest contenders (the interpreter, irregular programs on a CPU adapter) would
/// otherwise spend most of the suite's time on repeats that tell little more.
pub const REPEAT_BUDGET_MS: f64 = 3_000.0;
pub const MIN_REPEATS: usize = 3;

/// Up to `repeat` times from `once` (milliseconds each), fewer past `REPEAT_BUDGET_MS`.
fn repeats(repeat: usize, mut once: impl FnMut() -> Result<f64, String>) -> Result<Vec<f64>, String> {
    let mut times = Vec::with_capacity(repeat);
    while times.len() < repeat {
        times.push(once()?);
        if times.len() >= MIN_REPEATS && times.iter().sum::<f64>() > REPEAT_BUDGET_MS {
            break;
        }
    }
    Ok(times)
}

/// One variant of the ablation, measured.
fn ablate(w: &Workload, dir: &Path, options: Options, repeat: usize) -> Result<Variant, String> {
    let median = |times: &[f64]| summary(times).map_or(f64::NAN, |(median, ..)| median);
    let mut gpu = WeftRunner::new(w, Backend::Gpu, options)?;
    let (times, counts) = time_weft(&mut gpu, w, dir, repeat)?;
    let mut cpu = WeftRunner::new(w, Backend::Cpu, options)?;
    let (cpu_times, _) = time_weft(&mut cpu, w, dir, repeat)?;
    Ok(Variant { gpu_ms: median(&times), counts: counts.unwrap_or_default(), cpu_ms: median(&cpu_times) })
}

/// The hand-written WGSL version of `w`, checked and timed on its own device.
fn hand_written(
    w: &Workload,
    hand: &Result<wgsl::HandGpu, String>,
    per_size: &Sizes,
    expected: &[f64],
    repeat: usize,
) -> Entry {
    let mut entry = Entry::new(HAND_WGSL, "WGSL");
    entry.loc = wgsl::lines_of_code(w.name);
    entry.note = wgsl::note(w.name).map(String::from);
    let hand = match hand {
        Ok(hand) => hand,
        Err(why) => {
            entry.excluded = Some(format!("no GPU adapter: {why}"));
            return entry;
        }
    };
    let checked = hand.prepare(w.name, &per_size[0].2).and_then(|p| {
        hand.time_once(&p)?;
        hand.output(&p)
    });
    entry.excluded = match checked {
        Ok(output) => disagreement(w, expected, &output),
        Err(why) => Some(why),
    };
    let on_cpu = hand.is_cpu();
    for (size, _, inputs) in &per_size[1..] {
        if entry.excluded.is_some() {
            break;
        }
        if on_cpu && *size > w.cpu_adapter_limit {
            entry.skipped.push((*size, format!("on a CPU adapter, timed up to {}", w.cpu_adapter_limit)));
            continue;
        }
        let timed = hand.prepare(w.name, inputs).and_then(|p| {
            hand.time_once(&p)?;
            repeats(repeat, || hand.time_once(&p))
        });
        match timed {
            Ok(times) => entry.times.push((*size, times, None)),
            Err(why) => entry.skipped.push((*size, why)),
        }
    }
    entry
}

/// One core's copy bandwidth in GB/s (bytes read plus written), the median of `repeat` copies
/// of `n` words.
fn cpu_copy_bandwidth(n: usize, repeat: usize) -> f64 {
    let src = vec![1u32; n];
    let mut dst = vec![0u32; n];
    let times: Vec<f64> = (0..repeat)
        .map(|_| {
            let start = Instant::now();
            dst.copy_from_slice(std::hint::black_box(&src));
            std::hint::black_box(&dst);
            start.elapsed().as_secs_f64()
        })
        .collect();
    summary(&times).map_or(0.0, |(median, ..)| 8.0 * n as f64 / median / 1e9)
}

fn time_sequential(w: &Workload, inputs: &inputs::Inputs, repeat: usize) -> Vec<f64> {
    std::hint::black_box((w.sequential)(inputs));
    let once = || {
        let start = Instant::now();
        std::hint::black_box((w.sequential)(std::hint::black_box(inputs)));
        Ok(start.elapsed().as_secs_f64() * 1000.0)
    };
    repeats(repeat, once).unwrap_or_default()
}

/// Why `output` is not the interpreter's `expected`, if it is not.
fn disagreement(w: &Workload, expected: &[f64], output: &[f64]) -> Option<String> {
    let (expected, output) = ((w.normalise)(expected.to_vec()), (w.normalise)(output.to_vec()));
    if expected.len() != output.len() {
        return Some(format!("gave {} values where the interpreter gave {}", output.len(), expected.len()));
    }
    let bad = expected.iter().zip(&output).position(|(a, b)| (a - b).abs() > w.tolerance * (1.0 + a.abs()));
    bad.map(|i| format!("value {i} is {} where the interpreter gave {}", output[i], expected[i]))
}

/// A seed per workload and size, the same in every run.
fn seed(name: &str, size: usize) -> u64 {
    name.bytes().fold(size as u64, |h, b| h.wrapping_mul(0x100_0000_01b3).wrapping_add(u64::from(b)))
}

/// Lines of Weft, without blank lines and comments.
fn weft_lines(source: &str) -> usize {
    source.lines().filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#')).count()
}

/// The compiler that built this binary is not known at run time; the one on the path is the
/// one `cargo` uses in a checkout.
fn rustc_version() -> String {
    let output = std::process::Command::new("rustc").arg("--version").output();
    let version = output.ok().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    version.filter(|v| !v.is_empty()).unwrap_or_else(|| "rustc".into())
}

/// The CPU's model and how many cores this process may use.
fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name").and_then(|rest| rest.split(':').nth(1)))
        .map_or("unknown CPU".to_string(), |m| m.trim().to_string());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!("{model}, {cores} cores")
}

/// The median of `times`, and their minimum and maximum.
pub fn summary(times: &[f64]) -> Option<(f64, f64, f64)> {
    if times.is_empty() {
        return None;
    }
    let mut sorted = times.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = if sorted.len() % 2 == 1 {
        sorted[sorted.len() / 2]
    } else {
        (sorted[sorted.len() / 2 - 1] + sorted[sorted.len() / 2]) / 2.0
    };
    Some((median, sorted[0], sorted[sorted.len() - 1]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(name: &str) -> Workload {
        workloads::all().into_iter().find(|w| w.name == name).expect("a workload")
    }

    #[test]
    fn an_output_off_the_interpreters_is_refused() {
        let dot = workload("dot");
        assert_eq!(disagreement(&dot, &[250.0], &[250.01]), None, "within 1e-4 relative");
        let why = disagreement(&dot, &[250.0], &[251.0]).expect("refused");
        assert!(why.contains("value 0 is 251"), "{why}");
        let sort = workload("sort");
        assert!(disagreement(&sort, &[1.0, 2.0], &[1.0, 2.0]).is_none());
        assert!(disagreement(&sort, &[1.0, 2.0], &[2.0, 1.0]).is_some(), "a sort is exact");
        let why = disagreement(&sort, &[1.0, 2.0], &[1.0]).expect("refused");
        assert!(why.contains("gave 1 values where the interpreter gave 2"), "{why}");
    }

    #[test]
    fn inputs_are_the_same_in_every_run_and_rows_cover_the_values() {
        let w = workload("segmented_sums");
        let draw = |size| (w.inputs)(size, &mut fastrand::Rng::with_seed(seed(w.name, size)));
        let (a, b) = (draw(100_000), draw(100_000));
        assert_eq!(a[0].1.to_f64(), b[0].1.to_f64());
        let lens = inputs::get_i32(&a, "lens");
        assert_eq!(lens.iter().map(|&l| l as usize).sum::<usize>(), 100_000);
        assert!(lens.iter().all(|&l| (1..=1_000).contains(&l)), "rows of 1 to 1% of the values");
        let longest = *lens.iter().max().unwrap();
        let median = {
            let mut s = lens.to_vec();
            s.sort_unstable();
            s[s.len() / 2]
        };
        assert!(longest >= 50 * median, "skewed: longest {longest}, median {median}");
    }

    #[test]
    fn lines_of_code_count_each_baseline_alone() {
        assert_eq!(sequential::lines_of_code("dot"), 8);
        assert_eq!(weft_lines(workload("dot").weft), 2);
        assert_eq!(summary(&[3.0, 1.0, 2.0, 10.0]), Some((2.5, 1.0, 10.0)));
    }
}
