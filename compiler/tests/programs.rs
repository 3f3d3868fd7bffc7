//! Where the Weft test programs live: shared by the compiler crates' integration-test
//! binaries, which include this file (`#[path]`) as their `common` module.

// Each test crate compiles this module and uses only part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// Every directory of Weft programs, relative to the workspace root.
pub const ALL_PROGRAM_DIRS: &[&str] = &[
    "samples",
    "compiler/tests/data/parse/ok",
    "compiler/tests/data/parse/err",
    "compiler/tests/data/diagnostics",
    "compiler/tests/data/run",
    "compiler/tests/data/errors",
    "compiler/tests/data/specialise",
];

/// The `.weft` files in the given directories (relative to the workspace root), sorted.
pub fn weft_programs(dirs: &[&str]) -> Vec<PathBuf> {
    let root = workspace_root();
    let mut res = Vec::new();
    for dir in dirs {
        let dir = root.join(dir);
        let entries =
            std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
        res.extend(
            entries
                .map(|entry| entry.expect("a directory entry").path())
                .filter(|path| path.extension().is_some_and(|ext| ext == "weft")),
        );
    }
    res.sort();
    assert!(!res.is_empty(), "no Weft programs in {dirs:?}");
    res
}

/// The workspace root (the crate is `compiler/<crate>/`).
pub fn workspace_root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}
