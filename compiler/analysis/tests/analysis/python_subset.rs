//! Weft's syntax stays a strict subset of Python 3. CPython's own `ast` module parses every sample
//! and every test program, except the programs that exist to show a syntax error; and for each
//! program, Weft reports a syntax error (`E0100`, `E0104`, or `E0001` for bytes that are not
//! UTF-8) exactly when CPython rejects it.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use weft_analysis::Database;
use weft_analysis::SourceFile;
use weft_analysis::decode_source;
use weft_analysis::parsed::syntax_diagnostics;
use weft_syntax::Code;

/// For each program, whether CPython's `ast.parse` accepts it.
fn cpython_accepts(programs: &[PathBuf]) -> Vec<bool> {
    let script = "import ast, sys\n\
                  for path in sys.argv[1:]:\n\
                  \x20   try:\n\
                  \x20       ast.parse(open(path, encoding='utf-8').read(), path)\n\
                  \x20       print('ok')\n\
                  \x20   except (SyntaxError, UnicodeDecodeError, ValueError):\n\
                  \x20       print('rejected')\n";
    let output = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(programs)
        .output()
        .expect("python3 must be installed to run this test (scripts/test installs it)");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let verdicts: Vec<bool> = String::from_utf8_lossy(&output.stdout).lines().map(|l| l == "ok").collect();
    assert_eq!(verdicts.len(), programs.len());
    verdicts
}

fn weft_reports_syntax_error(path: &Path) -> bool {
    let (text, utf8_error) = decode_source(&std::fs::read(path).expect("readable"));
    let db = Database::default();
    let file = SourceFile::new(&db, path.display().to_string(), text);
    let syntax_error = syntax_diagnostics(&db, file)
        .iter()
        .any(|d| matches!(d.code, Code::SyntaxError | Code::InvalidTarget));
    utf8_error.is_some() || syntax_error
}

#[test]
fn cpython_parses_every_sample() {
    let samples = common::weft_programs(&["samples"]);
    assert!(samples.len() >= 8, "found only {} samples", samples.len());
    let verdicts = cpython_accepts(&samples);
    let rejected: Vec<_> = samples.iter().zip(&verdicts).filter(|(_, ok)| !**ok).map(|(p, _)| p).collect();
    assert!(rejected.is_empty(), "CPython rejects {rejected:?}");
}

#[test]
fn weft_and_cpython_agree_on_what_is_a_syntax_error() {
    let all = common::weft_programs(common::ALL_PROGRAM_DIRS);
    assert!(all.len() > 50, "found only {} programs", all.len());
    let verdicts = cpython_accepts(&all);
    let disagreements: Vec<String> = all
        .iter()
        .zip(verdicts)
        .filter(|(path, cpython_ok)| weft_reports_syntax_error(path) == *cpython_ok)
        .map(|(path, cpython_ok)| format!("{} (CPython accepts: {cpython_ok})", path.display()))
        .collect();
    assert!(disagreements.is_empty(), "Weft and CPython disagree on {disagreements:#?}");
}
