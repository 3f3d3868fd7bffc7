//! The `weft` binary end to end: exit statuses, text and JSON output, as the language brief
//! defines them.

use std::path::Path;
use std::process::{Command, Output};

fn weft(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_weft")).args(args).output().expect("the weft binary runs")
}

fn data(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("compiler/tests/data/diagnostics")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn check_reports_each_broken_function_and_exits_1() {
    let out = weft(&["check", &data("must_show.weft")]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1));
    for expected in [
        "[E0100/syntax-error] Error: expected `]`",
        "Help: add `]` to close it",
        "[E0200/unknown-name] Error: unknown name `xz`",
        "Help: did you mean `xs`?",
        "[E0101/unsupported-construct] Error: mutation (`a[i] = x`) is not part of Weft",
        "Help: build a new sequence",
        "must_show.weft:2:28",
        "must_show.weft:6:16",
        "must_show.weft:9:5",
    ] {
        assert!(stdout.contains(expected), "missing {expected:?} in:\n{stdout}");
    }
}

#[test]
fn check_json_is_versioned_and_exits_1() {
    let out = weft(&["check", "--format", "json", &data("must_show.weft")]);
    assert_eq!(out.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(json["version"], 1);
    assert_eq!(json["files"][0]["diagnostics"].as_array().map(Vec::len), Some(3));
}

#[test]
fn clean_files_exit_0_with_no_output() {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    let mut args = vec!["check".to_string()];
    for entry in std::fs::read_dir(samples).expect("samples exist") {
        args.push(entry.expect("an entry").path().display().to_string());
    }
    args.push(data("clean_program.weft"));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = weft(&args);
    assert_eq!((out.status.code(), String::from_utf8_lossy(&out.stdout).as_ref()), (Some(0), ""));
}

#[test]
fn warnings_alone_exit_0() {
    let out = weft(&["check", &data("W0202_unused_name.weft")]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("[W0202/unused-name] Warning"));
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(weft(&["check"]).status.code(), Some(2), "no file");
    assert_eq!(weft(&["check", "--format", "xml", &data("clean_program.weft")]).status.code(), Some(2));
    let missing = weft(&["check", "no/such/file.weft"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot read no/such/file.weft"));
    assert_eq!(weft(&["frobnicate"]).status.code(), Some(2), "unknown subcommand");
}
