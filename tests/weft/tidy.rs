//! House rules checked by a test rather than by review: every Rust source file of every crate
//! opens with a `//!` comment that says what it is for, each compiler crate's `lib.rs` names
//! its one job, and the layers link only what they may (`cargo tree`).

use std::path::{Path, PathBuf};
use std::process::Command;

fn rust_files(dir: &Path, res: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            rust_files(&path, res);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            res.push(path);
        }
    }
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The workspace's crates, as directories: the root and each member.
fn crates() -> Vec<PathBuf> {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).expect("the workspace manifest");
    let members = manifest.split("members = [").nth(1).and_then(|m| m.split(']').next()).expect("members");
    let mut dirs = vec![root().to_path_buf()];
    dirs.extend(
        members
            .split(',')
            .map(|m| m.trim().trim_matches('"'))
            .filter(|m| !m.is_empty())
            .map(|m| root().join(m)),
    );
    dirs
}

#[test]
fn every_source_file_of_every_crate_starts_with_a_doc_comment() {
    let crates = crates();
    assert!(crates.len() >= 11, "found only {} crates", crates.len());
    let mut files = Vec::new();
    for dir in &crates {
        for part in ["src", "tests", "benches", "examples"] {
            rust_files(&dir.join(part), &mut files);
        }
    }
    assert!(files.len() > 100, "found only {} Rust files", files.len());
    let missing: Vec<String> = files
        .iter()
        .filter(|path| !std::fs::read_to_string(path).unwrap_or_default().starts_with("//!"))
        .map(|path| path.display().to_string())
        .collect();
    assert!(missing.is_empty(), "files without a `//!` header: {missing:?}");
}

#[test]
fn each_compiler_crate_states_its_one_job_in_lib_rs() {
    let compiler = root().join("compiler");
    let mut checked = 0;
    for entry in std::fs::read_dir(&compiler).expect("compiler/") {
        let dir = entry.expect("an entry").path();
        let Ok(manifest) = std::fs::read_to_string(dir.join("Cargo.toml")) else { continue };
        let name = manifest
            .lines()
            .find_map(|l| l.strip_prefix("name = \""))
            .and_then(|n| n.strip_suffix('"'))
            .expect("a package name");
        let lib = std::fs::read_to_string(dir.join("src/lib.rs")).expect("a lib.rs");
        assert!(
            lib.starts_with(&format!("//! `{name}`: ")),
            "{name}'s lib.rs does not open with `//! `{name}`: its job`"
        );
        assert!(manifest.contains("description = \""), "{name} has no description");
        checked += 1;
    }
    assert_eq!(checked, 8, "the compiler has eight crates");
}

/// The normal (not dev) dependency tree of a package, one crate name per line.
fn dependencies(package: &str) -> Vec<String> {
    let output = Command::new(env!("CARGO"))
        .args(["tree", "--offline", "-e", "normal", "--prefix", "none", "-p", package])
        .current_dir(root())
        .output()
        .expect("cargo tree runs");
    assert!(output.status.success(), "cargo tree -p {package}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

#[test]
fn the_layers_link_only_what_they_may() {
    let forbidden: &[(&str, &[&str])] = &[
        // The language server plans and prints kernels without a device, through `weft-ide`.
        ("weft-lsp", &["wgpu", "weft-gpu", "weft-exec", "weft-session"]),
        ("weft-ide", &["wgpu", "weft-gpu", "weft-exec"]),
        // The compiler proper runs nothing.
        ("weft-analysis", &["wgpu", "weft-gpu", "weft-exec"]),
        // The back half's passes are pure functions over plain data.
        ("weft-flat", &["salsa", "wgpu", "weft-analysis"]),
        ("weft-exec", &["salsa", "wgpu", "weft-analysis"]),
        ("weft-gpu", &["salsa", "weft-analysis"]),
        ("weft-core", &["salsa", "weft-syntax"]),
        ("weft-syntax", &["salsa"]),
    ];
    for (package, never) in forbidden {
        let tree = dependencies(package);
        assert!(tree.len() > 1, "cargo tree -p {package} printed nothing useful");
        for crate_name in *never {
            assert!(!tree.iter().any(|d| d == crate_name), "{package} depends on {crate_name}");
        }
    }
}

#[test]
fn the_language_server_depends_on_the_ide_crate_alone() {
    let output = Command::new(env!("CARGO"))
        .args(["tree", "--offline", "-e", "normal", "--depth", "1", "--prefix", "none", "-p", "weft-lsp"])
        .current_dir(root())
        .output()
        .expect("cargo tree runs");
    let direct: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|d| d.starts_with("weft-") && d != "weft-lsp")
        .collect();
    assert_eq!(direct, ["weft-ide"], "weft-lsp's compiler dependencies");
}
