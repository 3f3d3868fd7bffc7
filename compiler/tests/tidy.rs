//! House rules checked by a test rather than by review: every Rust source file opens with a `//!`
//! comment that says what it is for.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, res: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source directory") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            rust_files(&path, res);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            res.push(path);
        }
    }
}

#[test]
fn every_source_file_starts_with_a_doc_comment() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root");
    let mut files = Vec::new();
    for dir in ["src", "tests", "compiler/src", "compiler/tests", "compiler/benches", "compiler/examples"] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 15, "found only {} Rust files", files.len());
    let missing: Vec<String> = files
        .iter()
        .filter(|path| !std::fs::read_to_string(path).unwrap_or_default().starts_with("//!"))
        .map(|path| path.display().to_string())
        .collect();
    assert!(missing.is_empty(), "files without a `//!` header: {missing:?}");
}
