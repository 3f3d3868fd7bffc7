//! The differential harness: run a Weft program on an executor and compare two outputs token by
//! token. Every executor plugs in here; the reference is CPython running the program through
//! the prelude shim (`tests/python/prelude.py`), which nobody here wrote the semantics of.
//!
//! **Tolerance.** CPython computes floats in f64 and Weft's default float type is f32, so two
//! float tokens match when `|a - b| <= 1e-3 * max(|a|, |b|) + 1e-6`: f32 keeps about 7 digits,
//! and the samples' longest reductions (sums of ~2,000 terms) lose up to about 4 of them in
//! the worst case. Integers, booleans, words and punctuation must match exactly, and an
//! integer never matches a float (`1` is not `1.0`): that would hide a wrong type.

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, LazyLock};

use weft_analysis::pipeline::{self, InnerSchedule, Options, Strategy};
use weft_analysis::{Database, SourceFile};
use weft_exec::interp;
use weft_flat::fuse::SolveCache;
use weft_session::{Backend, RunError};
use weft_syntax::Diagnostic;

/// A fresh database for one run. Its fusion ILP components come from one cache shared by every
/// run of the suite: the property tests compile thousands of programs that differ only in
/// their literals, and solving the same components again for each took most of the suite's
/// time. Every run still parses, checks, flattens and plans its program afresh; a component
/// whose key the cache holds gets the kernels a new solve would give.
pub fn database() -> Database {
    static SOLVES: LazyLock<Arc<SolveCache>> = LazyLock::new(Arc::default);
    Database::sharing_solves(SOLVES.clone())
}

pub const RELATIVE_TOLERANCE: f64 = 1e-3;
pub const ABSOLUTE_TOLERANCE: f64 = 1e-6;

/// What a program did: its printed output, and the run-time error it stopped with, if any.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub stdout: String,
    pub error: Option<Diagnostic>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Executor {
    /// CPython with the prelude shim: the independent reference.
    CPython,
    /// The reference interpreter.
    Interp,
    /// The flattened program on the parallel CPU executor, fused as the strategy says.
    Cpu(Strategy),
    /// The same with Copperhead's schedule for inner reductions (`--sequential-inner`).
    CpuSequentialInner,
    /// The flattened program on the GPU executor (`gpu_available` says whether there is
    /// one), fused as the strategy says.
    Gpu(Strategy),
}

/// Whether the GPU tests can run. Without an adapter they say they are skipped, unless
/// `WEFT_REQUIRE_GPU=1` (as CI sets it), where a missing adapter fails the test.
pub fn gpu_available() -> bool {
    match weft_gpu::shared_gpu() {
        Ok(_) => true,
        Err(e) if std::env::var("WEFT_REQUIRE_GPU").is_ok_and(|v| v == "1") => {
            panic!("WEFT_REQUIRE_GPU=1 but there is no GPU: {e}")
        }
        Err(e) => {
            eprintln!("skipped: no GPU adapter ({e}); set WEFT_REQUIRE_GPU=1 to make this a failure");
            false
        }
    }
}

/// Collects printed lines; reads data files relative to the workspace root.
pub struct CapturingHost {
    pub stdout: String,
}

impl interp::Host for CapturingHost {
    fn print(&mut self, line: &str) {
        self.stdout.push_str(line);
    }

    /// A chart as a line of its data, as CPython's prelude shim prints it, so that executors
    /// are compared on what they would draw.
    fn draw(&mut self, chart: weft_exec::chart::Chart) {
        self.stdout.push_str(&chart_line(&chart));
    }

    fn read_file(&mut self, path: &str) -> std::io::Result<Vec<u8>> {
        std::fs::read(workspace_root().join(path))
    }
}

/// A chart's data as `tests/python/prelude.py` prints it: `plot [xs] [ys]`, `hist [xs] bins`,
/// `image width height [pixels]`.
pub fn chart_line(chart: &weft_exec::chart::Chart) -> String {
    use weft_exec::chart::Chart;
    match chart {
        Chart::Plot { xs, ys } => format!("plot {xs:?} {ys:?}\n"),
        Chart::Hist { xs, bins } => format!("hist {xs:?} {bins}\n"),
        Chart::Image { width, height, pixels } => format!("image {width} {height} {pixels:?}\n"),
    }
}

pub fn workspace_root() -> &'static Path {
    crate::common::workspace_root()
}

/// Runs a program; compile errors are a test failure with the rendered diagnostics.
pub fn run(executor: Executor, path: &Path) -> Outcome {
    match executor {
        Executor::CPython => {
            let output = Command::new("python3")
                .arg("tests/python/prelude.py")
                .arg(path)
                .current_dir(workspace_root())
                .output()
                .expect("python3 runs (scripts/test installs it)");
            assert!(
                output.status.success(),
                "CPython failed on {}:\n{}",
                path.display(),
                String::from_utf8_lossy(&output.stderr)
            );
            Outcome { stdout: String::from_utf8_lossy(&output.stdout).into_owned(), error: None }
        }
        Executor::Interp => run_backend(Backend::Interp, Options::default(), path),
        Executor::Cpu(strategy) => run_backend(Backend::Cpu, fused(strategy), path),
        Executor::CpuSequentialInner => {
            let mut options = Options::default();
            options.flatten.inner = InnerSchedule::Sequential;
            run_backend(Backend::Cpu, options, path)
        }
        Executor::Gpu(strategy) => run_backend(Backend::Gpu, fused(strategy), path),
    }
}

/// The default options with fusion by `strategy`.
pub fn fused(strategy: Strategy) -> Options {
    let mut options = Options::default();
    options.fusion.strategy = strategy;
    options
}

/// Every fusion strategy, for tests that run each.
pub const STRATEGIES: [Strategy; 3] = [Strategy::None, Strategy::Greedy, Strategy::Ilp];

/// Whether the flattener rejects a program as not handled yet (E0408), with its message.
pub fn unflattened(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let db = database();
    let file = SourceFile::new(&db, path.display().to_string(), text);
    match pipeline::flat_program(&db, file, Default::default()) {
        Err(diagnostics) => diagnostics
            .iter()
            .find(|d| d.code == weft_syntax::Code::UnsupportedOnDevice)
            .map(|d| d.message.clone()),
        Ok(_) => None,
    }
}

fn run_backend(backend: Backend, options: Options, path: &Path) -> Outcome {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let db = database();
    let file = SourceFile::new(&db, path.display().to_string(), text.clone());
    let mut host = CapturingHost { stdout: String::new() };
    match weft_session::run_file(&db, file, backend, options, &mut host) {
        Ok(_) => Outcome { stdout: host.stdout, error: None },
        Err(RunError::Runtime(error)) => Outcome { stdout: host.stdout, error: Some(error) },
        Err(RunError::NoDevice(why)) => panic!("{}: no GPU: {why}", path.display()),
        Err(RunError::Compile(diagnostics)) => panic!(
            "{} does not compile:\n{}",
            path.display(),
            weft_syntax::diagnostics::render_text(&diagnostics, &path.display().to_string(), &text, false)
        ),
    }
}

/// Runs program text on a backend: its output, and the code and span of the run-time error it
/// stopped with. A compile error is a test failure.
pub fn run_source(source: &str, backend: Backend) -> (String, Option<(String, u32, u32)>) {
    run_source_with(source, backend, Options::default())
}

/// `run_source`, flattening with the schedule `options` ask for.
pub fn run_source_with(
    source: &str,
    backend: Backend,
    options: impl Into<Options>,
) -> (String, Option<(String, u32, u32)>) {
    let db = database();
    let file = SourceFile::new(&db, "property.weft".to_string(), source.to_string());
    let mut host = CapturingHost { stdout: String::new() };
    match weft_session::run_file(&db, file, backend, options.into(), &mut host) {
        Ok(_) => (host.stdout, None),
        Err(RunError::Runtime(e)) => {
            (host.stdout, Some((e.code.as_str().to_string(), e.range.start().into(), e.range.end().into())))
        }
        Err(RunError::Compile(d)) => panic!("{source}\ndoes not compile on {backend:?}: {d:#?}"),
        Err(RunError::NoDevice(why)) => panic!("no GPU: {why}"),
    }
}

/// Splits output into words, numbers and punctuation.
pub fn tokens(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        let is_punct = matches!(c, '[' | ']' | '(' | ')' | ',' | ':');
        if c.is_whitespace() || is_punct {
            if let Some(s) = start.take() {
                out.push(&text[s..i]);
            }
            if is_punct {
                out.push(&text[i..i + c.len_utf8()]);
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(s) = start {
        out.push(&text[s..]);
    }
    out
}

fn is_float_text(token: &str) -> bool {
    token.contains(['.', 'e', 'E']) || token.ends_with("inf") || token == "nan"
}

/// Whether two tokens match under the tolerance above.
pub fn tokens_match(expected: &str, actual: &str) -> bool {
    if expected == actual {
        return true;
    }
    let (Ok(a), Ok(b)) = (expected.parse::<f64>(), actual.parse::<f64>()) else { return false };
    if !is_float_text(expected) || !is_float_text(actual) {
        return false;
    }
    if a.is_nan() || b.is_nan() || a.is_infinite() || b.is_infinite() {
        return a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
    }
    (a - b).abs() <= RELATIVE_TOLERANCE * a.abs().max(b.abs()) + ABSOLUTE_TOLERANCE
}

/// `Ok` when the outputs match; otherwise a message naming the first differing line.
pub fn compare(expected: &str, actual: &str) -> Result<(), String> {
    let expected_lines: Vec<&str> = expected.lines().collect();
    let actual_lines: Vec<&str> = actual.lines().collect();
    for (i, (e, a)) in expected_lines.iter().zip(&actual_lines).enumerate() {
        let (et, at) = (tokens(e), tokens(a));
        let same = et.len() == at.len() && et.iter().zip(&at).all(|(x, y)| tokens_match(x, y));
        if !same {
            return Err(format!("line {} differs:\n  expected: {e}\n  actual:   {a}", i + 1));
        }
    }
    if expected_lines.len() != actual_lines.len() {
        return Err(format!("{} lines expected, {} printed", expected_lines.len(), actual_lines.len()));
    }
    Ok(())
}
