//! Every run-time error the brief lists stops the program with its code at the offending span.
//! Each program in `tests/data/errors/` names its expected error on its first line
//! (`# error: E0400 at LINE:COL`, 1-based); CPython, running the same program through the
//! prelude shim, must fail too, so the error is a real one and not an interpreter quirk.
//! Later executors run the same programs through the differential harness. Programs in
//! `tests/data/specialise/` pass `weft check` but cannot be specialised to the core: `weft run`
//! reports them, with the same header convention.

use crate::common;

use std::process::Command;

use common::differential::{self, Executor};
use weft_syntax::line_index::LineIndex;

fn expected_error(text: &str) -> (String, u32, u32) {
    let header = text.lines().next().and_then(|l| l.strip_prefix("# error: ")).expect("an `# error:` header");
    let (code, at) = header.split_once(" at ").expect("`CODE at LINE:COL`");
    let (line, col) = at.split_once(':').expect("LINE:COL");
    (code.to_string(), line.parse().expect("a line"), col.parse().expect("a column"))
}

#[test]
fn run_time_errors_have_their_code_and_span() {
    let programs = common::weft_programs(&["compiler/tests/data/errors"]);
    let mut codes = Vec::new();
    for path in programs {
        let text = std::fs::read_to_string(&path).expect("readable");
        let (code, line, col) = expected_error(&text);
        let outcome = differential::run(Executor::Interp, &path);
        let error = outcome.error.unwrap_or_else(|| panic!("{} ran without error", path.display()));
        let position = LineIndex::new(&text).line_col(error.range.start());
        assert_eq!(
            (error.code.as_str(), position.line + 1, position.col + 1),
            (code.as_str(), line, col),
            "{}: {}",
            path.display(),
            error.message
        );
        let cpython = Command::new("python3")
            .arg("tests/python/prelude.py")
            .arg(&path)
            .current_dir(differential::workspace_root())
            .output()
            .expect("python3 runs");
        assert!(!cpython.status.success(), "CPython runs {} without error", path.display());
        codes.push(code);
    }
    for code in weft_syntax::Code::ALL.iter().filter(|c| c.is_run_time()) {
        // E0408 is a GPU executor's (the interpreter runs every type); E0410 comes from a front
        // end's interrupt (`boundary.rs`); E0499 is a compiler bug.
        if !matches!(code.as_str(), "E0408" | "E0410" | "E0499") {
            assert!(codes.iter().any(|c| c == code.as_str()), "no program in tests/data/errors for {code}");
        }
    }
}

#[test]
fn specialisation_errors_have_their_code_and_span() {
    for path in common::weft_programs(&["compiler/tests/data/specialise"]) {
        let text = std::fs::read_to_string(&path).expect("readable");
        let (code, line, col) = expected_error(&text);
        let db = weft_analysis::Database::default();
        let file = weft_analysis::SourceFile::new(&db, path.display().to_string(), text.clone());
        assert!(
            weft_analysis::file_diagnostics(&db, file).is_empty(),
            "{} should check clean",
            path.display()
        );
        let diagnostics = weft_analysis::pipeline::core_program(&db, file).expect_err("specialisation fails");
        let first = &diagnostics[0];
        let position = LineIndex::new(&text).line_col(first.range.start());
        assert_eq!(
            (first.code.as_str(), position.line + 1, position.col + 1),
            (code.as_str(), line, col),
            "{}: {}",
            path.display(),
            first.message
        );
    }
}
