//! The flattened program on the GPU executor behaves as the reference interpreter: every sample
//! and feature program prints the same output (within the float tolerance), and every run-time
//! error has the same code, message and span. Every sample runs wholly on the device, sort
//! included. A program too large for the device gets a diagnostic, and the next one runs.
//!
//! Without a GPU adapter these tests say they are skipped; with `WEFT_REQUIRE_GPU=1` (CI) a
//! missing adapter fails them.

use crate::common;

use common::differential::{self, Executor, compare};
use weft_analysis::Database;
use weft_analysis::SourceFile;
use weft_analysis::pipeline::Options;
use weft_session::{Backend, RunError};
use weft_syntax::line_index::LineIndex;

#[test]
fn gpu_executor_matches_the_interpreter_on_samples_and_feature_programs() {
    if !differential::gpu_available() {
        return;
    }
    let mut failures = Vec::new();
    let mut ran = 0;
    for program in common::weft_programs(&["samples", "compiler/tests/data/run"]) {
        if let Some(why) = differential::unflattened(&program) {
            failures.push(format!("{}: not flattened: {why}", program.display()));
            continue;
        }
        let expected = differential::run(Executor::Interp, &program);
        ran += 1;
        for strategy in differential::STRATEGIES {
            let actual = differential::run(Executor::Gpu(strategy), &program);
            if let (None, Some(error)) = (&expected.error, &actual.error) {
                failures.push(format!(
                    "{} ({strategy:?}): the gpu stopped with {} {}",
                    program.display(),
                    error.code,
                    error.message
                ));
            } else if let Err(difference) = compare(&expected.stdout, &actual.stdout) {
                failures.push(format!("{} ({strategy:?}): {difference}", program.display()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(ran >= 25, "only {ran} programs ran on the gpu executor");
}

#[test]
fn gpu_run_time_errors_have_the_interpreters_code_and_span() {
    if !differential::gpu_available() {
        return;
    }
    let mut failures = Vec::new();
    for path in common::weft_programs(&["compiler/tests/data/errors", "samples/errors"]) {
        let text = std::fs::read_to_string(&path).expect("readable");
        let expected = differential::run(Executor::Interp, &path).error.expect("the program fails");
        let index = LineIndex::new(&text);
        let at = |e: &weft_syntax::Diagnostic| {
            let p = index.line_col(e.range.start());
            format!("{} at {}:{}: {}", e.code, p.line + 1, p.col + 1, e.message)
        };
        // Fused or not, a failure is the interpreter's.
        for strategy in differential::STRATEGIES {
            let Some(actual) = differential::run(Executor::Gpu(strategy), &path).error else {
                failures.push(format!("{} ({strategy:?}): ran without error on the gpu", path.display()));
                continue;
            };
            if (expected.code, expected.range, &expected.message)
                != (actual.code, actual.range, &actual.message)
            {
                failures.push(format!(
                    "{} ({strategy:?}):\n  interp: {}\n  gpu:    {}",
                    path.display(),
                    at(&expected),
                    at(&actual)
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_sample_runs_wholly_on_the_device() {
    if !differential::gpu_available() {
        return;
    }
    let root = common::differential::workspace_root();
    let mut samples: Vec<_> = std::fs::read_dir(root.join("samples"))
        .expect("the samples directory")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "weft"))
        .collect();
    samples.sort();
    assert!(samples.len() >= 10, "only {} samples found", samples.len());
    for path in samples {
        let db = Database::default();
        let file = SourceFile::new(
            &db,
            path.display().to_string(),
            std::fs::read_to_string(&path).expect("readable"),
        );
        let mut host = differential::CapturingHost { stdout: String::new() };
        let report =
            weft_session::run_file(&db, file, Backend::Gpu, Options::default(), &mut host).expect("runs");
        let report = report.gpu().expect("a GPU run");
        assert!(report.stats.launches > 0, "{} launched no kernel", path.display());
        assert!(report.on_cpu.is_empty(), "{}: {:?} ran on the cpu executor", path.display(), report.on_cpu);
    }
}

fn run_source(name: &str, source: String) -> Result<String, weft_syntax::diagnostics::Diagnostic> {
    let db = Database::default();
    let file = SourceFile::new(&db, name.into(), source);
    let mut host = differential::CapturingHost { stdout: String::new() };
    match weft_session::run_file(&db, file, Backend::Gpu, Options::default(), &mut host) {
        Ok(_) => Ok(host.stdout),
        Err(RunError::Runtime(d)) => Err(d),
        Err(other) => panic!("{name} did not run: {other:?}"),
    }
}

#[test]
fn an_array_larger_than_the_device_allows_is_reported_and_the_next_program_runs() {
    if !differential::gpu_available() {
        return;
    }
    let limit = weft_gpu::shared_gpu().expect("a device").max_binding();
    let n = limit / 4 + 1;
    // `xs[0]` needs the array itself: fused into its sum alone, it would never be stored.
    let source = format!("xs = [1.0 for i in range({n})]\nprint(xs[0] + sum(xs))\n");
    let error = run_source("too_big.weft", source.clone()).expect_err("the array does not fit");
    assert_eq!(error.code, weft_syntax::diagnostics::Code::ResourceExhausted);
    assert!(
        error.message.contains(&format!("an array of {n} f32 elements"))
            && error.message.contains("storage binding limit"),
        "the message names the array and the limit: {}",
        error.message
    );
    let start = source.find('[').expect("the comprehension") as u32;
    assert!(
        error.range.start() >= start.into(),
        "the error points into the comprehension: {:?}",
        error.range
    );
    // The same process, and the same device, run the next program.
    let out = run_source("small.weft", "xs = [1.0 for i in range(1000)]\nprint(sum(xs))\n".into());
    assert_eq!(out.expect("the next program runs").trim(), "1000.0");
}

/// Below the crossover (`Gpu::set_cpu_crossover`) a call of a flattened recursion runs on the
/// CPU executor: what it prints is the same, `--profile`'s report names the call, and the
/// device makes a few launches and read-backs instead of a few per recursion level. At 0 the
/// recursion runs on the device.
#[test]
fn a_small_recursion_runs_on_the_cpu_below_the_crossover() {
    if !differential::gpu_available() {
        return;
    }
    let source = "def qs(xs):\n    if len(xs) < 2:\n        return xs\n    p = xs[len(xs) // 2]\n    parts = [qs(part) for part in [[x for x in xs if x < p], [x for x in xs if x > p]]]\n    return concat(concat(parts[0], [x for x in xs if x == p]), parts[1])\nys = qs(random_i32(2000, 0, 1000, 3))\nprint(ys[0], ys[1999], all([ys[i] <= ys[i + 1] for i in range(1999)]))\n";
    let (expected, _) = differential::run_source(source, Backend::Interp);
    // A device of its own: the crossover is a setting of the device, which other tests share.
    let gpu = weft_gpu::runtime::Gpu::new(None).expect("a device");
    let run = |crossover: u64| {
        gpu.set_cpu_crossover(crossover);
        run_on(&gpu, source)
    };
    let (on_device_out, on_device) = run(0);
    let (crossed_out, crossed) = run(10_000);
    assert_eq!(on_device_out, expected);
    assert_eq!(crossed_out, expected);
    assert!(on_device.cpu_calls.is_empty(), "{:?}", on_device.cpu_calls);
    assert_eq!(crossed.cpu_calls.get("qs[i32]^").map(|c| c.0), Some(1), "{:?}", crossed.cpu_calls);
    assert!(
        crossed.stats.launches * 10 < on_device.stats.launches,
        "{} launches below the crossover, {} on the device",
        crossed.stats.launches,
        on_device.stats.launches
    );
    assert!(crossed.stats.read_backs <= 8, "{} read-backs below the crossover", crossed.stats.read_backs);
}

/// `source` run by a session on `gpu`: what it printed, and the GPU's report.
fn run_on(gpu: &weft_gpu::runtime::Gpu, source: &str) -> (String, weft_gpu::Report) {
    run_on_with(gpu, source, Options::default())
}

fn run_on_with(gpu: &weft_gpu::runtime::Gpu, source: &str, options: Options) -> (String, weft_gpu::Report) {
    let (stdout, outcome) = run_outcome(gpu, source, options);
    (stdout, outcome.expect("runs").gpu().expect("a GPU run").clone())
}

/// What `source` printed on `gpu`, and how its run ended.
fn run_outcome(
    gpu: &weft_gpu::runtime::Gpu,
    source: &str,
    options: Options,
) -> (String, Result<weft_session::RunReport, RunError>) {
    let db = differential::database();
    let file = SourceFile::new(&db, "program.weft".to_string(), source.to_string());
    let mut host = differential::CapturingHost { stdout: String::new() };
    let outcome = weft_session::run_program(&db, file, Backend::Gpu, options, Some(gpu), false, &mut host);
    (host.stdout, outcome)
}

/// A device of its own with no CPU crossover: every call runs on the device, whatever the
/// sizes (the crossover is a setting of the device, which other tests share).
fn device_without_crossover() -> weft_gpu::runtime::Gpu {
    let gpu = weft_gpu::runtime::Gpu::new(None).expect("a device");
    gpu.set_cpu_crossover(0);
    gpu
}

/// A recursion entered from parallel code runs piece by piece, and each round writes its
/// piece's results into the result allocated before the loop, in place (issue 30, item 3): the
/// pieces add no copy. Appending each piece to everything so far, as before, copied
/// `P * R(R + 1) / 2` elements for `R` pieces of `P`; a write into a copy of the result each
/// round would copy `R` times the result. The other copies (each level's `if` merges its
/// branches by scatters into copies) are the same whatever the pieces.
#[test]
fn a_piecewise_recursion_writes_each_result_once_on_the_device() {
    if !differential::gpu_available() {
        return;
    }
    let n = 1_000;
    let source = format!(
        "def halvings(k: i32) -> i32:\n    if k < 2:\n        return 0\n    return 1 + halvings(k // 2)\n\n\
         xs = [halvings(i) for i in range(1, {n} + 1)]\nprint(len(xs), sum(xs), xs[-1])\n"
    );
    let (expected, _) = differential::run_source(&source, Backend::Interp);
    let gpu = device_without_crossover();
    let copied = |pieces: usize| {
        let mut options = Options::default();
        options.flatten.piece_size = (n / pieces) as u32;
        let (out, report) = run_on_with(&gpu, &source, options);
        assert_eq!(out, expected, "in {pieces} pieces");
        let writes = report.counters.per_op.get("write_at").map(|&(count, _)| count);
        assert_eq!(writes, Some(pieces as u64), "one write per piece");
        report.stats.bytes_copied
    };
    let (whole, pieces) = (copied(1), copied(10));
    let result_bytes = (n * 4) as u64;
    // Measured: the same bytes (75,896) in 1, 10 and 100 pieces.
    assert!(
        pieces < whole + result_bytes,
        "{pieces} bytes copied in 10 pieces, {whole} in one, for a result of {result_bytes} bytes"
    );
}

/// Sizes stay on the device (issue 30, item 1): a filter's kept count, a concatenation's
/// length and `len` of either are device counts, which kernels read on the device and the
/// host learns only with a read-back it makes anyway. A level of a flattened recursion (a
/// pair of call depths: the vectorised function, then its body) then reads back at most 5
/// times per call, whatever the input size: whether any element recurses, and the totals of
/// the segment layouts it builds. It was 12 before, with 74 to 80 launches where now at most
/// 50: exclusive scans in one pass, segment ids and positions by one binary search, the
/// offsets of a layout's segments taken from the layout, scatters of distinct indexes in one
/// pass, and segmented reductions that read their elements where they lie.
#[test]
fn a_recursion_level_reads_back_a_bounded_number_of_times() {
    if !differential::gpu_available() {
        return;
    }
    let quicksort = "def qs(xs):\n    if len(xs) < 2:\n        return xs\n    p = xs[len(xs) // 2]\n    parts = [qs(part) for part in [[x for x in xs if x < p], [x for x in xs if x > p]]]\n    return concat(concat(parts[0], [x for x in xs if x == p]), parts[1])\nys = qs(random_i32(3000, 0, 100000, 3))\nprint(ys[0], ys[2999], all([ys[i] <= ys[i + 1] for i in range(2999)]))\n";
    let quickhull = std::fs::read_to_string(differential::workspace_root().join("samples/quickhull.weft"))
        .expect("the sample");
    let gpu = device_without_crossover();
    // The device's own grid rows, then rows of 2 workgroups: the grids written on the device
    // take the 2-D path too.
    let programs = [("quicksort", quicksort), ("quickhull", quickhull.as_str())];
    for (width, (name, source)) in [u32::MAX, 2].into_iter().flat_map(|w| programs.map(|p| (w, p))) {
        gpu.limit_grid_width(width);
        let (expected, _) = differential::run_source(source, Backend::Interp);
        let (out, report) = run_on(&gpu, source);
        if let Err(why) = compare(&expected, &out) {
            panic!("{name}, grid rows of at most {width}: {why}");
        }
        let levels = &report.levels;
        let mut pairs = 0;
        for depth in (2..levels.len()).step_by(2) {
            let calls = levels[depth].calls.max(1);
            let below = levels.get(depth + 1).copied().unwrap_or_default();
            let read_backs = (levels[depth].read_backs + below.read_backs) as f64 / calls as f64;
            let launches = (levels[depth].launches + below.launches) as f64 / calls as f64;
            // Each reads back whether any element recurses, and no more: the layouts are
            // allocated by the collections they lie in (quickhull's `points`, which both
            // halves share, by twice its size), or after the recursive call by a guess from
            // the call's arguments, checked when the outermost call returns (at depth 1).
            let most = 1.0;
            assert!(
                read_backs <= most,
                "{name}: {read_backs} read-backs per call at depth {depth}: {levels:?}"
            );
            assert!(launches <= 40.0, "{name}: {launches} launches per call at depth {depth}: {levels:?}");
            pairs += 1;
        }
        assert!(pairs >= 5, "{name}: only {pairs} recursion levels: {levels:?}");
        assert!(report.guesses.made >= pairs, "{name}: {:?} over {pairs} levels", report.guesses);
        assert_eq!(report.guesses.failed, 0, "{name}: {:?}", report.guesses);
        // Launches over a filter's kept elements take their grid from the device.
        assert!(report.stats.indirect_launches > 0, "{name}: no indirect launch: {:?}", report.stats);
    }
}

/// A recursion that grows its input twice over at each level, to a limit its own assertion
/// checks: its guesses fail.
const GROW: &str = "def grow(xs, k):\n    if k == 0:\n        return xs\n    parts = [grow(p, k - 1) for p in [[x for x in xs if x > 0], [x + 1 for x in xs]]]\n    ys = concat(concat(parts[0], xs), parts[1])\n    assert len(ys) < LIMIT, \"grown too much\"\n    return ys\n";

/// Runs `source` on `gpu`, and checks that it prints what the interpreter prints, and fails
/// with the same code at the same span if the interpreter does: the run's guesses where it ran
/// to the end.
fn run_as_the_interpreter(
    gpu: &weft_gpu::runtime::Gpu,
    name: &str,
    source: &str,
) -> Option<weft_gpu::GuessCounts> {
    let (expected, expected_error) = differential::run_source(source, Backend::Interp);
    let (stdout, outcome) = run_outcome(gpu, source, Options::default());
    assert_eq!(stdout, expected, "{name}");
    match (outcome, expected_error) {
        (Ok(report), None) => Some(report.gpu().expect("a GPU run").guesses),
        (Err(RunError::Runtime(e)), Some((code, start, end))) => {
            assert_eq!(
                (e.code.as_str(), e.range.start().into(), e.range.end().into()),
                (code.as_str(), start, end),
                "{name}: {}",
                e.message
            );
            None
        }
        (outcome, expected) => panic!("{name}: {:?} against {expected:?}", outcome.err()),
    }
}

/// Inside a call, a layout whose segments lie in collections of sizes known only as bounds (the
/// concatenation after a recursive call) is allocated by a guess from the call's arguments (the
/// largest, one per segment, and one more). A recursion whose results outgrow its arguments
/// breaks the guess: the read-back that brings the cut total stops the call, which runs again
/// without guesses, and prints and fails as the interpreter does. Output printed before the
/// call is not printed twice (a function cannot print: E0102).
#[test]
fn a_guess_too_small_runs_the_call_again() {
    if !differential::gpu_available() {
        return;
    }
    let gpu = device_without_crossover();
    let grow = format!(
        "{GROW}print(\"before\")\nys = grow(range(1, 50), 6)\nprint(len(ys), sum(ys), ys[0:5], ys[-5:])\n"
    );
    // Holds at every level: the guesses fail, once, and the call runs again.
    let guesses = run_as_the_interpreter(&gpu, "limit 100000", &grow.replace("LIMIT", "100000"));
    assert!(guesses.is_some_and(|g| g.made > 0 && g.failed == 1), "{guesses:?}");
    // Fails at the top level only, after the guesses failed below: the error is the program's,
    // not the failed guess's (a run that fails has no report to count the guesses in).
    run_as_the_interpreter(&gpu, "limit 6000", &grow.replace("LIMIT", "6000"));
}

/// A failure recorded on the device before a call that guesses is the program's, whatever the
/// call's guesses did after it: the read-back that finds it reports it, and the call does not
/// run again past it. Here the first level's read-back finds it, before any guess; a read-back
/// that found it after a cut guess would report it too (`Guesses::give_up`), a case no program
/// we know of reaches.
#[test]
fn a_failure_before_a_guessing_call_is_reported() {
    if !differential::gpu_available() {
        return;
    }
    let gpu = device_without_crossover();
    let before = format!(
        "{GROW}xs = range(1, 50)\nbad = [xs[i * 2] for i in range(40)]\nys = grow(xs, 6)\nprint(len(bad), len(ys))\n"
    );
    let outcome = run_as_the_interpreter(&gpu, "failure before", &before.replace("LIMIT", "100000"));
    assert!(outcome.is_none(), "the program fails");
}

/// A lifted function whose parameters are all scalars has no collection to guess from: its
/// arguments hold an element per segment. It guesses nothing (a guess of an element per
/// segment would fail at every level that builds a sequence).
#[test]
fn a_call_of_scalars_guesses_nothing() {
    if !differential::gpu_available() {
        return;
    }
    let gpu = device_without_crossover();
    let build = "def build(n, k):\n    if k == 0:\n        return range(n)\n    parts = [build(m, k - 1) for m in [n, n + 1]]\n    return concat(parts[0], parts[1])\nys = build(3, 8)\nprint(len(ys), sum(ys))\n";
    let guesses = run_as_the_interpreter(&gpu, "build", build);
    assert_eq!(guesses, Some(weft_gpu::GuessCounts::default()));
}
