//! Every sample, and every program of the feature corpus (`tests/data/run/`), run on the
//! reference interpreter, prints what CPython prints (within the float tolerance of
//! `common::differential`), and the committed CPython outputs are current.

use crate::common;

use common::differential::{self, Executor, compare, tokens_match};

use std::path::{Path, PathBuf};

/// Samples keep their CPython outputs in `tests/data/samples/`; corpus programs beside them.
fn expected_path(program: &Path) -> PathBuf {
    let name = program.file_stem().expect("a file name");
    if program.parent().is_some_and(|dir| dir.ends_with("samples")) {
        differential::workspace_root().join("tests/data/samples").join(name).with_extension("expected")
    } else {
        program.with_extension("expected")
    }
}

const PROGRAM_DIRS: &[&str] = &["samples", "compiler/tests/data/run"];

#[test]
fn interpreter_matches_cpython_on_every_sample() {
    let mut failures = Vec::new();
    for sample in common::weft_programs(PROGRAM_DIRS) {
        let expected = std::fs::read_to_string(expected_path(&sample))
            .unwrap_or_else(|e| panic!("no CPython output for {}: {e}", sample.display()));
        let outcome = differential::run(Executor::Interp, &sample);
        if let Some(error) = &outcome.error {
            failures.push(format!("{}: stopped with {} {}", sample.display(), error.code, error.message));
            continue;
        }
        if let Err(difference) = compare(&expected, &outcome.stdout) {
            failures.push(format!("{}: {difference}", sample.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The expected files are CPython's output today, not a stale copy.
#[test]
fn committed_outputs_are_cpythons() {
    for sample in common::weft_programs(PROGRAM_DIRS) {
        let committed = std::fs::read_to_string(expected_path(&sample)).expect("an expected file");
        let fresh = differential::run(Executor::CPython, &sample);
        assert_eq!(committed, fresh.stdout, "tests/data/samples is stale for {}", sample.display());
    }
}

#[test]
fn tolerance_accepts_f32_rounding_and_rejects_real_differences() {
    assert!(tokens_match("0.30000000000000004", "0.3"));
    assert!(tokens_match("12.82158139269142", "12.821583"));
    assert!(!tokens_match("12.8", "12.9"));
    assert!(!tokens_match("1", "1.0"), "an integer never matches a float");
    assert!(!tokens_match("3", "4"));
    assert!(!tokens_match("True", "False"));
    assert!(compare("a [1, 2]\n", "a [1, 2]\n").is_ok());
    assert!(compare("a [1, 2]\n", "a [1, 2, 3]\n").is_err());
    assert!(compare("x\ny\n", "x\n").is_err());
}
