//! The language server's latency and memory on a 2,000-line file generated from the samples,
//! measured through the real `weft lsp` over stdio, as an editor sees it:
//! - start (spawn, initialize, open) to the first published diagnostics;
//! - one inserted line to its published diagnostics;
//! - hover and inlay hints on a screenful of lines, right after an edit and at rest;
//! - the server's peak resident memory.
//!
//! `cargo bench --bench lsp`. Prints a table; `docs/performance.md` records it.

#[path = "../tests/weft/lsp_client/mod.rs"]
mod lsp_client;

use std::time::{Duration, Instant};

use lsp_client::Client;
use serde_json::{Value, json};
use weft_analysis::Database;
use weft_analysis::SourceFile;

const URI: &str = "file:///bench/generated.weft";
const LINES: usize = 2000;

/// Copies of the samples (those that read no files), each copy's functions renamed apart by the
/// compiler's own rename, until the text has `LINES` lines.
fn generated_file() -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    let mut names: Vec<_> = std::fs::read_dir(&root)
        .expect("samples")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "weft"))
        .collect();
    names.sort();
    let mut out = String::new();
    let mut copies = 0;
    loop {
        for path in &names {
            let text = std::fs::read_to_string(path).expect("sample");
            if text.contains("load_") {
                continue;
            }
            copies += 1;
            out.push_str(&renamed(&text, copies));
            out.push('\n');
            if out.lines().count() >= LINES {
                return out.lines().take(LINES).map(|l| format!("{l}\n")).collect();
            }
        }
    }
}

/// `text` with every top-level function and variable renamed to `{name}_{copy}`.
fn renamed(text: &str, copy: usize) -> String {
    use weft_ide::document_symbols;
    let mut db = Database::default();
    let file = SourceFile::new(&db, "copy.weft".into(), text.to_string());
    let count = document_symbols(&db, file).len();
    for k in 0..count {
        let symbol = &document_symbols(&db, file)[k];
        let (name, at) = (symbol.name.clone(), symbol.selection.start());
        let Ok(mut edits) = weft_ide::rename(&db, file, at, &format!("{name}_{copy}")) else {
            continue;
        };
        edits.sort_by_key(|e| std::cmp::Reverse(e.range.start()));
        let mut text = file.text(&db).clone();
        for edit in edits {
            text.replace_range(std::ops::Range::<usize>::from(edit.range), &edit.new_text);
        }
        use salsa::Setter as _;
        file.set_text(&mut db).to(text);
    }
    file.text(&db).clone()
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    samples[((samples.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

/// The server's peak (`VmHWM`) or current (`VmRSS`) resident memory.
fn memory_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn mb(kib: Option<u64>) -> String {
    kib.map_or("not readable here".into(), |kib| format!("{:.1} MB", kib as f64 / 1024.0))
}

fn window(first_line: usize) -> Value {
    json!({ "textDocument": { "uri": URI },
            "range": { "start": { "line": first_line, "character": 0 }, "end": { "line": first_line + 50, "character": 0 } } })
}

/// Positions of identifiers to hover over, spread through the file.
fn hover_positions(text: &str, count: usize) -> Vec<Value> {
    let lines: Vec<&str> = text.lines().collect();
    (0..count)
        .filter_map(|k| {
            let line = (k * 7919) % lines.len();
            let character = lines[line].find(|c: char| c.is_ascii_alphabetic())?;
            Some(json!({ "textDocument": { "uri": URI }, "position": { "line": line, "character": character } }))
        })
        .collect()
}

fn main() {
    let text = generated_file();
    // Kept for inspection: `weft check target/lsp-bench.weft`.
    let _ =
        std::fs::write(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/lsp-bench.weft"), &text);
    // Insert before top-level statements, so every edit keeps the file valid.
    let top_level_lines = |lines: &[String]| -> Vec<usize> {
        lines
            .iter()
            .enumerate()
            .filter(|(_, l)| !l.is_empty() && !l.starts_with([' ', '#', ')', ']']) && !l.starts_with("def"))
            .map(|(i, _)| i)
            .collect()
    };

    let started = Instant::now();
    let mut client = Client::start();
    client.initialize();
    client.open(URI, &text);
    let diagnostics = client.diagnostics(URI, 1);
    let first = started.elapsed();
    client.notification("workspace/inlayHint/refresh", |_| true);
    let first_plan = started.elapsed();
    let peak_after_first_plan = memory_kib(client.child.id(), "VmHWM:");
    let errors = diagnostics.iter().filter(|d| d["severity"] == 1).count();

    // Hover and hints at rest (after the first plan), then edits.
    let hovers = hover_positions(&text, 200);
    let _ = client.request("textDocument/inlayHint", window(0));
    let mut hover_rest = Vec::new();
    for params in &hovers {
        let t = Instant::now();
        client.request("textDocument/hover", params.clone());
        hover_rest.push(t.elapsed());
    }
    let mut inlay_rest = Vec::new();
    for k in 0..40 {
        let t = Instant::now();
        client.request("textDocument/inlayHint", window((k * 97) % (LINES - 50)));
        inlay_rest.push(t.elapsed());
    }

    // `weft/wgsl` on unchanged text, as an editor's kernel view asks again and again.
    let mut wgsl_requests = Vec::new();
    for _ in 0..6 {
        let t = Instant::now();
        let kernels = client.request("weft/wgsl", json!({ "textDocument": { "uri": URI } }));
        wgsl_requests.push(t.elapsed());
        assert!(kernels.as_array().is_some_and(|k| !k.is_empty()), "no kernels: {kernels}");
    }
    let wgsl_first = wgsl_requests.remove(0);

    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let (mut edit, mut hover_after, mut inlay_after, mut plan_after) = (vec![], vec![], vec![], vec![]);
    for version in 2..=41 {
        let statements = top_level_lines(&lines);
        let at = statements[(version as usize * 37) % statements.len()];
        lines.insert(at, format!("pad_{version} = {version}"));
        let new_text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let edited = Instant::now();
        client.change(URI, version, &new_text);
        let broken = client.diagnostics(URI, version).iter().any(|d| d["severity"] == 1);
        edit.push(edited.elapsed());
        let t = Instant::now();
        client.request("textDocument/hover", hovers[version as usize % hovers.len()].clone());
        hover_after.push(t.elapsed());
        // Types and shapes at once; kernels when the plan is rebuilt.
        let t = Instant::now();
        client.request("textDocument/inlayHint", window(at.saturating_sub(25)));
        inlay_after.push(t.elapsed());
        // A file with errors has no plan to wait for.
        if !broken {
            client.notification("workspace/inlayHint/refresh", |_| true);
            plan_after.push(edited.elapsed());
        }
    }
    let memory = memory_kib(client.child.id(), "VmHWM:");
    let resident_at_end = memory_kib(client.child.id(), "VmRSS:");
    let _ = client.shutdown();

    println!("weft lsp on a {LINES}-line file from the samples ({} bytes, {errors} errors)", text.len());
    println!("| measure | p50 | p95 | target |");
    println!("|---|---|---|---|");
    println!("| start to first diagnostics | {} | | < 300 ms |", ms(first));
    println!("| start to the first fusion plan (kernel hints) | {} | | |", ms(first_plan));
    let row = |name: &str, samples: &mut Vec<Duration>, target: &str| {
        let (p50, p95) = (percentile(samples, 0.5), percentile(samples, 0.95));
        println!("| {name} ({} runs) | {} | {} | {target} |", samples.len(), ms(p50), ms(p95));
    };
    println!("| `weft/wgsl`, first request after the plan | {} | | |", ms(wgsl_first));
    row("`weft/wgsl` again on unchanged text", &mut wgsl_requests, "");
    row("inserted line to published diagnostics", &mut edit, "p95 < 50 ms");
    row("hover, at rest", &mut hover_rest, "p95 < 10 ms");
    row("hover, right after an edit", &mut hover_after, "p95 < 10 ms");
    row("inlay hints (50 lines), at rest", &mut inlay_rest, "p95 < 10 ms");
    row("inlay hints (50 lines), right after an edit", &mut inlay_after, "p95 < 10 ms");
    row("inserted line to its fusion plan (kernel hints)", &mut plan_after, "");
    println!("| peak resident memory, after the first plan | {} | | |", mb(peak_after_first_plan));
    println!("| peak resident memory | {} | | < 150 MB |", mb(memory));
    println!("| resident memory at the end | {} | | |", mb(resident_at_end));
}
