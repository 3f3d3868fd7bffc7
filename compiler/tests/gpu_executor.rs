//! The flattened program on the GPU executor behaves as the reference interpreter: every sample
//! and feature program prints the same output (within the float tolerance), and every run-time
//! error has the same code, message and span. `sort` (and `permute`'s check) run on the CPU
//! executor until the GPU radix sort lands, and the run's report says so.
//!
//! Without a GPU adapter these tests say they are skipped; with `WEFT_REQUIRE_GPU=1` (CI) a
//! missing adapter fails them.

mod common;

use common::differential::{self, Executor, compare};
use weft_compiler::line_index::LineIndex;
use weft_compiler::{Database, SourceFile, driver, flatten};

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
        let actual = differential::run(Executor::Gpu, &program);
        ran += 1;
        if let (None, Some(error)) = (&expected.error, &actual.error) {
            failures.push(format!(
                "{}: the gpu stopped with {} {}",
                program.display(),
                error.code,
                error.message
            ));
        } else if let Err(difference) = compare(&expected.stdout, &actual.stdout) {
            failures.push(format!("{}: {difference}", program.display()));
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
        let Some(actual) = differential::run(Executor::Gpu, &path).error else {
            failures.push(format!("{}: ran without error on the gpu", path.display()));
            continue;
        };
        let index = LineIndex::new(&text);
        let at = |e: &weft_compiler::Diagnostic| {
            let p = index.line_col(e.range.start());
            format!("{} at {}:{}: {}", e.code, p.line + 1, p.col + 1, e.message)
        };
        if (expected.code, expected.range, &expected.message) != (actual.code, actual.range, &actual.message)
        {
            failures.push(format!(
                "{}:\n  interp: {}\n  gpu:    {}",
                path.display(),
                at(&expected),
                at(&actual)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn only_sort_and_the_permutation_check_run_on_the_cpu() {
    if !differential::gpu_available() {
        return;
    }
    let root = common::differential::workspace_root();
    for sample in ["quicksort", "dot_product", "spmv_csr", "nbody"] {
        let path = root.join(format!("samples/{sample}.weft"));
        let db = Database::default();
        let file = SourceFile::new(
            &db,
            path.display().to_string(),
            std::fs::read_to_string(&path).expect("readable"),
        );
        let mut host = differential::CapturingHost { stdout: String::new() };
        let report = driver::run_gpu_with(&db, file, flatten::Options::default(), &mut host).expect("runs");
        assert!(report.stats.launches > 0, "{sample} launched no kernel");
        let others: Vec<&String> =
            report.on_cpu.keys().filter(|op| !op.contains("sort") && !op.contains("permutation")).collect();
        assert!(others.is_empty(), "{sample}: {others:?} ran on the cpu executor");
    }
}
