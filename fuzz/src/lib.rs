//! The differential program generator: random, valid, well-typed Weft programs, each run on
//! the reference interpreter, the CPU executor and the GPU executor under every fusion
//! strategy (and, where it can run them, CPython), and compared. A disagreement is shrunk to
//! a small program and saved as a regression test (`fuzz/regressions/`, which
//! `tests/differential.rs` runs on every executor).
//!
//! `weft dev fuzz --seed S --seconds T` runs a campaign from the command line; CI runs one
//! with a fixed seed. Program `i` of seed `S` is always the same program, so any finding can
//! be reproduced from its seed and index alone.
//!
//! Layers: `program` (the programs as data, printed as text), `generate` (drawing them),
//! `execute` (running text on an executor, comparing outcomes), `shrink`.

pub mod execute;
pub mod generate;
pub mod program;
pub mod shrink;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use execute::{Agreement, Executor, Outcome, STRATEGIES, Skipped};
use program::{Profile, Program};

/// What a campaign runs.
#[derive(Clone, Debug)]
pub struct Config {
    pub seed: u64,
    /// Stop starting programs after this long.
    pub budget: Duration,
    /// Stop after this many programs, if sooner.
    pub max_programs: Option<u64>,
    /// Run the GPU executor (when there is an adapter).
    pub gpu: bool,
    /// `tests/python/prelude.py`, to compare with CPython where it can run a program.
    pub python: Option<PathBuf>,
    /// Where to save shrunk findings, one `.weft` file each.
    pub save_to: Option<PathBuf>,
    /// How long to shrink each finding.
    pub shrink_budget: Duration,
}

/// A disagreement, before and after shrinking.
#[derive(Clone, Debug)]
pub struct Finding {
    /// The program's index in the campaign (its seed is `program_seed(seed, index)`).
    pub index: u64,
    pub executor: Executor,
    pub detail: String,
    pub original: String,
    pub shrunk: String,
    pub saved: Option<PathBuf>,
}

/// What a campaign did.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub programs: u64,
    /// Programs the checker rejected: generator bugs, counted so they show.
    pub invalid: u64,
    /// Programs the flattener does not handle (E0408): run on the interpreter only.
    pub unflattened: u64,
    /// Programs that stopped with a run-time error on the interpreter (and were compared).
    pub failing: u64,
    /// Runs compared with the interpreter's, per executor kind.
    pub cpu_runs: u64,
    pub gpu_runs: u64,
    pub python_runs: u64,
    pub findings: Vec<Finding>,
    /// The first few rejected programs with their diagnostics.
    pub invalid_examples: Vec<String>,
    pub elapsed: Duration,
}

/// The seed of program `index` of a campaign.
pub fn program_seed(seed: u64, index: u64) -> u64 {
    seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(index)
}

/// The executors a program is compared on, and how closely.
fn executors(profile: Profile, gpu: bool, python: bool) -> Vec<(Executor, Agreement)> {
    let mut out: Vec<(Executor, Agreement)> =
        STRATEGIES.iter().map(|&s| (Executor::Cpu(s), Agreement::Exact)).collect();
    if gpu {
        let agreement = if profile == Profile::Full { Agreement::Tolerant } else { Agreement::Exact };
        out.extend(STRATEGIES.iter().map(|&s| (Executor::Gpu(s), agreement)));
    }
    if python && profile == Profile::Python {
        out.push((Executor::CPython, Agreement::Tolerant));
    }
    out
}

/// Whether `text` still shows a disagreement of `executor` with the interpreter.
fn disagrees(text: &str, executor: Executor, agreement: Agreement, python: Option<&Path>) -> Option<String> {
    if execute::compile_errors(text).is_some() {
        return None;
    }
    let expected = execute::run(text, Executor::Interp, python).ok()?;
    let actual = execute::run(text, executor, python).ok()?;
    if executor == Executor::CPython && expected.error.is_some() {
        return None;
    }
    execute::compare(&expected, &actual, agreement).err()
}

/// Runs program `index` of the campaign and records what it found.
pub fn check_program(config: &Config, index: u64, report: &mut Report) {
    let program = generate::program(program_seed(config.seed, index));
    let text = program.text();
    report.programs += 1;
    if let Some(errors) = execute::compile_errors(&text) {
        report.invalid += 1;
        if report.invalid_examples.len() < 5 {
            report.invalid_examples.push(format!("{text}\n{errors}"));
        }
        return;
    }
    let python = config.python.as_deref();
    let expected = match execute::run(&text, Executor::Interp, python) {
        Ok(outcome) => outcome,
        Err(_) => return,
    };
    if expected.error.is_some() {
        report.failing += 1;
    }
    let gpu = config.gpu && weft_gpu::shared_gpu().is_ok();
    for (executor, agreement) in executors(program.profile, gpu, python.is_some()) {
        let actual = match execute::run(&text, executor, python) {
            Ok(outcome) => outcome,
            Err(Skipped::Unflattened) => {
                report.unflattened += 1;
                return;
            }
            Err(_) => continue,
        };
        if executor == Executor::CPython && expected.error.is_some() {
            continue;
        }
        match executor {
            Executor::Cpu(_) => report.cpu_runs += 1,
            Executor::Gpu(_) => report.gpu_runs += 1,
            Executor::CPython => report.python_runs += 1,
            Executor::Interp => {}
        }
        if let Err(detail) = execute::compare(&expected, &actual, agreement) {
            let finding = shrink_finding(config, index, &program, executor, agreement, detail);
            report.findings.push(finding);
            // One finding per program: the others are usually the same bug.
            return;
        }
    }
}

fn shrink_finding(
    config: &Config,
    index: u64,
    program: &Program,
    executor: Executor,
    agreement: Agreement,
    detail: String,
) -> Finding {
    let python = config.python.as_deref();
    let shrunk = shrink::shrink(program, config.shrink_budget, &mut |candidate| {
        disagrees(&candidate.text(), executor, agreement, python).is_some()
    });
    let shrunk_text = shrunk.text();
    let shrunk_detail = disagrees(&shrunk_text, executor, agreement, python).unwrap_or(detail.clone());
    let saved = config.save_to.as_ref().and_then(|dir| {
        let path = dir.join(format!("seed{}_{index}.weft", config.seed));
        let mut header = format!(
            "# Found by `weft dev fuzz --seed {} --start {index} --programs 1`: {executor} disagreed with the interpreter.\n# {}\n",
            config.seed,
            shrunk_detail.lines().next().unwrap_or_default()
        );
        if agreement == Agreement::Tolerant {
            header.push_str(TOLERANT_MARK);
            header.push('\n');
        }
        std::fs::create_dir_all(dir).ok()?;
        std::fs::write(&path, header + &shrunk_text).ok()?;
        Some(path)
    });
    Finding { index, executor, detail: shrunk_detail, original: program.text(), shrunk: shrunk_text, saved }
}

/// Runs programs `start..` until the budget or the count runs out; `progress` sees the report
/// after each program.
pub fn campaign(config: &Config, start: u64, progress: &mut dyn FnMut(&Report)) -> Report {
    let began = Instant::now();
    let mut report = Report::default();
    let mut index = start;
    while began.elapsed() < config.budget && config.max_programs.is_none_or(|m| report.programs < m) {
        check_program(config, index, &mut report);
        index += 1;
        report.elapsed = began.elapsed();
        progress(&report);
    }
    report.elapsed = began.elapsed();
    report
}

/// The line that marks a saved program whose GPU floats are compared within the tolerance
/// (it uses functions whose device accuracy is bounded, not exact).
pub const TOLERANT_MARK: &str = "# compare: floats within 1e-3 on the gpu";

/// Runs a saved program on every executor: the interpreter's outcome, or each disagreement.
pub fn check_saved(text: &str, gpu: bool) -> Result<Outcome, Vec<String>> {
    let expected = execute::run(text, Executor::Interp, None).map_err(|e| vec![format!("interp: {e:?}")])?;
    let profile = if text.contains(TOLERANT_MARK) { Profile::Full } else { Profile::Exact };
    let mut problems = Vec::new();
    for (executor, agreement) in executors(profile, gpu, false) {
        match execute::run(text, executor, None) {
            Ok(actual) => {
                if let Err(d) = execute::compare(&expected, &actual, agreement) {
                    problems.push(format!("{executor}: {d}"));
                }
            }
            Err(Skipped::NoDevice) => {}
            Err(e) => problems.push(format!("{executor}: {e:?}")),
        }
    }
    if problems.is_empty() { Ok(expected) } else { Err(problems) }
}

/// The report as text: the counts, then each finding with its shrunk program.
pub fn summary(config: &Config, report: &Report) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "seed {}: {} programs in {:.1} s ({} rejected by the checker, {} not flattened, {} stopped with a run-time error)",
        config.seed,
        report.programs,
        report.elapsed.as_secs_f64(),
        report.invalid,
        report.unflattened,
        report.failing
    );
    let _ = writeln!(
        out,
        "compared with the interpreter: {} cpu runs, {} gpu runs, {} cpython runs; {} findings",
        report.cpu_runs,
        report.gpu_runs,
        report.python_runs,
        report.findings.len()
    );
    for f in &report.findings {
        let _ = writeln!(out, "\nprogram {} on {}: {}", f.index, f.executor, f.detail);
        if let Some(path) = &f.saved {
            let _ = writeln!(out, "saved as {}", path.display());
        }
        let _ = writeln!(out, "{}", f.shrunk);
    }
    for example in &report.invalid_examples {
        let _ = writeln!(out, "\nrejected by the checker:\n{example}");
    }
    out
}
