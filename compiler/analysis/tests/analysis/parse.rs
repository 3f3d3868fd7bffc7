//! Parse-tree snapshots: each `.weft` under `tests/data/parse/{ok,err}` against the `.rast` beside
//! it. `UPDATE_EXPECT=1 cargo test --test parse` rewrites the snapshots after a deliberate change.

use crate::common;

use expect_test::expect_file;
use weft_syntax::{debug_tree, parse};

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
    for path in common::weft_programs(&["compiler/tests/data/parse/ok"]) {
        let text = std::fs::read_to_string(&path).expect("test programs are UTF-8");
        let errors = parse(&text).errors;
        assert!(errors.is_empty(), "{}: unexpected syntax errors {errors:?}", path.display());
        expect_file![path.with_extension("rast")].assert_eq(&snapshot(&text));
    }
}

#[test]
fn broken_programs_report_errors_and_keep_a_tree() {
    for path in common::weft_programs(&["compiler/tests/data/parse/err"]) {
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

#[test]
fn nesting_limit_matches_cpython_without_overflowing_the_stack() {
    let nested = |n: usize| format!("x = {}1{}\n", "(".repeat(n), ")".repeat(n));
    assert!(parse(&nested(200)).errors.is_empty(), "CPython accepts 200 nested brackets");
    let errors = parse(&nested(201)).errors;
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].message, "this is nested too deeply");
    let in_function = format!("def f():\n    return {}1{}\n", "(".repeat(200), ")".repeat(200));
    assert!(parse(&in_function).errors.is_empty(), "the limit counts brackets, not blocks");
    let blocks = |n: usize| {
        let mut text: String = (0..n).map(|i| format!("{}if x:\n", " ".repeat(i))).collect();
        text.push_str(&format!("{}y = 1\nz = 2\n", " ".repeat(n)));
        text
    };
    assert!(parse(&blocks(99)).errors.is_empty(), "CPython accepts 99 nested blocks");
    let errors = parse(&blocks(100)).errors;
    assert_eq!(
        errors.iter().map(|e| e.message.as_str()).collect::<Vec<_>>(),
        ["too many levels of indentation"]
    );
    let asyncs = format!("{}def f():\n    return 1\n", "async ".repeat(100_000));
    assert!(!parse(&asyncs).errors.is_empty());
    for shape in ["[", "f(", "a[", "-", "not ", "lambda: ", "lambda a=", "1 if 2 else "] {
        let text = format!("x = {}0\n", shape.repeat(100_000));
        let res = parse(&text);
        assert_eq!(res.syntax().to_string(), text, "{shape}");
        assert!(!res.errors.is_empty(), "{shape} nested 100,000 times must be an error");
    }
}

#[test]
fn long_chains_parse_check_edit_and_drop_on_a_small_stack() {
    use salsa::Setter;
    // A left-nested chain is as deep as it is long; everything that walks, compares or frees it
    // must be iterative, and building it must take linear time. Test threads have a 2 MiB stack.
    let chains = [
        vec!["x"; 100_000].join(" + "),
        // Every literal is a fresh type variable: unification must not build long chains.
        vec!["1"; 100_000].join(" + "),
        format!("x{}", "()".repeat(100_000)),
        format!("x{}", "[0]".repeat(100_000)),
    ];
    for chain in chains {
        let started = std::time::Instant::now();
        let text = format!("def f(x):\n    return {chain}\n\ndef g(y):\n    return y\n");
        let mut db = weft_analysis::Database::default();
        let file = weft_analysis::SourceFile::new(&db, "chain.weft".to_string(), text.clone());
        // The chains are valid syntax; the call and index chains give `x` a type 100,000 levels
        // deep, which the type checker reports (E0307) rather than overflowing on.
        let syntax_and_names = |db: &weft_analysis::Database| -> Vec<weft_syntax::Diagnostic> {
            let all = weft_analysis::file_diagnostics(db, file);
            all.iter().filter(|d| d.code.as_str() < "E0204").cloned().collect()
        };
        assert!(syntax_and_names(&db).is_empty());
        // A second revision makes salsa compare the old and new trees of both functions.
        file.set_text(&mut db).to(text.replace("return y", "return y + 1"));
        assert!(syntax_and_names(&db).is_empty());
        let res = parse(&text);
        assert_eq!(res.syntax().to_string(), text);
        drop(res);
        drop(db);
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "{:?}", started.elapsed());
    }
    let attributes = format!("x = y{}\n", ".a".repeat(100_000));
    let db = weft_analysis::Database::default();
    let file = weft_analysis::SourceFile::new(&db, "attributes.weft".to_string(), attributes);
    assert_eq!(weft_analysis::file_diagnostics(&db, file).len(), 2, "one unknown `y`, one attribute chain");
}
