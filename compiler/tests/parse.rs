//! Parse-tree snapshots: each `.weft` under `tests/data/parse/{ok,err}` against the `.rast` beside
//! it. `UPDATE_EXPECT=1 cargo test --test parse` rewrites the snapshots after a deliberate change.

use std::path::{Path, PathBuf};

use expect_test::expect_file;
use weft_compiler::syntax::{debug_tree, parse};

fn weft_files(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(dir);
    let mut res: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "weft"))
        .collect();
    res.sort();
    assert!(!res.is_empty(), "no test programs in {}", dir.display());
    res
}

fn snapshot(text: &str) -> String {
    let parse = parse(text);
    assert_eq!(parse.syntax().to_string(), text, "the tree must reproduce its text exactly");
    let mut res = debug_tree(&parse.syntax());
    for error in &parse.errors {
        res.push_str(&format!("error {:?}: {}\n", error.range, error.message));
    }
    res
}

#[test]
fn valid_programs_parse_without_errors() {
    for path in weft_files("parse/ok") {
        let text = std::fs::read_to_string(&path).expect("test programs are UTF-8");
        let errors = parse(&text).errors;
        assert!(errors.is_empty(), "{}: unexpected syntax errors {errors:?}", path.display());
        expect_file![path.with_extension("rast")].assert_eq(&snapshot(&text));
    }
}

#[test]
fn broken_programs_report_errors_and_keep_a_tree() {
    for path in weft_files("parse/err") {
        let text = std::fs::read_to_string(&path).expect("test programs are UTF-8");
        let errors = parse(&text).errors;
        assert!(!errors.is_empty(), "{}: expected syntax errors, found none", path.display());
        expect_file![path.with_extension("rast")].assert_eq(&snapshot(&text));
    }
}

#[test]
fn unclosed_bracket_does_not_swallow_the_next_function() {
    let text = "def f(x):\n    y = g(x\n    return y\n\ndef h():\n    return 1\n";
    let parse = parse(text);
    let functions = parse.source_file().functions().count();
    assert_eq!(functions, 2);
    assert_eq!(parse.errors.len(), 1, "{:?}", parse.errors);
}
