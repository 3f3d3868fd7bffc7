//! Rendered-diagnostic snapshots: each `.weft` under `tests/data/diagnostics/` is checked and its
//! ariadne output compared with the `.txt` beside it. A file named after a code (`E0200_...`)
//! must report that code. `UPDATE_EXPECT=1` rewrites the snapshots.

use crate::common;

use std::path::{Path, PathBuf};

use expect_test::expect_file;
use weft_analysis::Database;
use weft_analysis::check::{CheckConfig, OutputFormat, check_sources};
use weft_syntax::Code;

fn diagnostic_programs() -> Vec<PathBuf> {
    common::weft_programs(&["compiler/tests/data/diagnostics"])
}

fn file_name(path: &Path) -> String {
    path.file_name().expect("a file").to_string_lossy().into_owned()
}

fn render(path: &Path, format: OutputFormat) -> (String, bool) {
    let bytes = std::fs::read(path).expect("test programs are readable");
    let sources = vec![(file_name(path), bytes)];
    let report =
        check_sources(&Database::default(), &sources, CheckConfig { format, color: false, shapes: false });
    (report.output, report.has_errors)
}

#[test]
fn rendered_diagnostics_match_snapshots() {
    for path in diagnostic_programs() {
        let (output, has_errors) = render(&path, OutputFormat::Text);
        let name = file_name(&path);
        let code = name.split('_').next().unwrap_or_default();
        if Code::ALL.iter().any(|c| c.as_str() == code) {
            assert!(output.contains(&format!("[{code}/")), "{name} does not report {code}:\n{output}");
        }
        if code.starts_with('E') {
            assert!(has_errors, "{name} should fail the check");
        }
        expect_file![path.with_extension("txt")].assert_eq(&output);
    }
}

#[test]
fn every_code_has_a_snapshot() {
    let names: Vec<String> = diagnostic_programs().iter().map(|p| file_name(p)).collect();
    // Run-time codes come from executing a program, not from `weft check`; the interpreter's
    // tests cover them.
    for code in Code::ALL.iter().filter(|c| !c.is_run_time()) {
        assert!(
            names.iter().any(|name| name.starts_with(code.as_str())),
            "no test program under tests/data/diagnostics/ for {code} ({})",
            code.name()
        );
    }
}

#[test]
fn clean_program_has_no_diagnostics() {
    let path = crate::common::workspace_root().join("compiler/tests/data/diagnostics/clean_program.weft");
    let (output, has_errors) = render(&path, OutputFormat::Text);
    assert_eq!((output.as_str(), has_errors), ("", false));
}

#[test]
fn json_output_follows_the_versioned_schema() {
    let path = crate::common::workspace_root().join("compiler/tests/data/diagnostics/must_show.weft");
    let (output, _) = render(&path, OutputFormat::Json);
    let json: serde_json::Value = serde_json::from_str(&output).expect("the output is JSON");
    assert_eq!(json["version"], 1);
    let diagnostics = json["files"][0]["diagnostics"].as_array().expect("a diagnostics array");
    let codes: Vec<&str> = diagnostics.iter().map(|d| d["code"].as_str().unwrap_or_default()).collect();
    assert_eq!(codes, ["E0100", "E0200", "E0101"]);
    let unknown = &diagnostics[1];
    assert_eq!(unknown["name"], "unknown-name");
    assert_eq!(unknown["severity"], "error");
    assert_eq!(unknown["help"], "did you mean `xs`?");
    // `xz` on line 6, `    return sum(xz)`: columns 16 to 18, 1-based.
    let span = &unknown["span"];
    assert_eq!(
        (&span["start_line"], &span["start_column"], &span["end_line"], &span["end_column"]),
        (&serde_json::json!(6), &serde_json::json!(16), &serde_json::json!(6), &serde_json::json!(18))
    );
    let text = std::fs::read_to_string(&path).expect("readable");
    let start = span["start"].as_u64().expect("a byte offset") as usize;
    let end = span["end"].as_u64().expect("a byte offset") as usize;
    assert_eq!(&text[start..end], "xz");
}

#[test]
fn text_and_json_agree_on_lines_around_form_feeds_and_separators() {
    let text = "# a\x0cb\u{2028}c\nprint(zz)\n";
    let sources = vec![("breaks.weft".to_string(), text.as_bytes().to_vec())];
    let render = |format| {
        check_sources(&Database::default(), &sources, CheckConfig { format, color: false, shapes: false })
            .output
    };
    let json: serde_json::Value = serde_json::from_str(&render(OutputFormat::Json)).expect("JSON");
    assert_eq!(json["files"][0]["diagnostics"][0]["span"]["start_line"], 2);
    assert!(render(OutputFormat::Text).contains("breaks.weft:2:7"), "{}", render(OutputFormat::Text));
}
