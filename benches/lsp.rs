//! The language server's latency and memory on a 2,000-line file generated from the samples,
//! measured through the real `weft lsp` over stdio, as an editor sees it:
//! - start (spawn, initialize, open) to the first published diagnostics;
//! - one inserted line to its published diagnostics;
//! - hover and inlay hints on a screenful of lines, right after an edit and at rest;
//! - the server's peak resident memory;
//! - typing as a person does: a key every 250 ms into a string literal, a new statement and a
//!   new function, never waiting for a fusion plan, in the 2,000-line file and in one made of
//!   two whole copies of the samples: each key's edit-to-diagnostics latency, a hover sent
//!   right after each key, and how long after the last key its plan's kernel hints arrive.
//!
//! `cargo bench --bench lsp`. Prints tables; `docs/performance.md` records them.

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
    samples_copied(Some(LINES), usize::MAX)
}

/// Copies of the samples, renamed apart: until the text has `lines` lines, or `passes` whole
/// passes over them.
fn samples_copied(lines: Option<usize>, passes: usize) -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    let mut names: Vec<_> = std::fs::read_dir(&root)
        .expect("samples")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "weft"))
        .collect();
    names.sort();
    let mut out = String::new();
    let mut copies = 0;
    for _ in 0..passes {
        for path in &names {
            let text = std::fs::read_to_string(path).expect("sample");
            if text.contains("load_") {
                continue;
            }
            copies += 1;
            out.push_str(&renamed(&text, copies));
            out.push('\n');
            if let Some(lines) = lines.filter(|&l| out.lines().count() >= l) {
                return out.lines().take(lines).map(|l| format!("{l}\n")).collect();
            }
        }
    }
    out
}

/// How long a person takes between two keys.
const KEY_INTERVAL: Duration = Duration::from_millis(250);

/// What typing measured.
#[derive(Default)]
struct Typed {
    /// Each key's change to the diagnostics of its version.
    edit: Vec<Duration>,
    /// A hover sent right after each key's diagnostics (or the key's deadline).
    hover: Vec<Duration>,
    /// Keys whose diagnostics did not come before the next key.
    late: usize,
    /// After the last key of each run, until the client was asked to refresh its hints: the
    /// plan of the final text.
    plan_after_last_key: Vec<Duration>,
}

/// Types `keys` into `text` at byte `at`, one every `KEY_INTERVAL`, never waiting for a plan.
fn type_keys(
    client: &mut Client,
    text: &mut String,
    mut at: usize,
    keys: &str,
    version: &mut i32,
    typed: &mut Typed,
) {
    let count = keys.chars().count();
    for (k, key) in keys.chars().enumerate() {
        text.insert(at, key);
        at += key.len_utf8();
        *version += 1;
        let last = k + 1 == count;
        if last {
            client.forget_seen();
        }
        let sent = Instant::now();
        client.change(URI, *version, text);
        let deadline = sent + KEY_INTERVAL;
        match client.diagnostics_by(URI, *version, deadline) {
            Some(_) => typed.edit.push(sent.elapsed()),
            None => typed.late += 1,
        }
        if last {
            client.notification("workspace/inlayHint/refresh", |_| true);
            typed.plan_after_last_key.push(sent.elapsed());
            return;
        }
        let line = text[..at].matches('\n').count();
        let t = Instant::now();
        let id = client.request_async(
            "textDocument/hover",
            json!({ "textDocument": { "uri": URI }, "position": { "line": line, "character": 0 } }),
        );
        client.response(id);
        typed.hover.push(t.elapsed());
        std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
    }
}

/// Types into a string literal, a new statement and a new function, each in the middle of
/// `text`, which the server has open at `version`.
fn typing(client: &mut Client, text: &mut String, version: &mut i32) -> Typed {
    let mut typed = Typed::default();
    let middle = text.len() / 2;
    let literal = middle + text[middle..].find("print(\"").expect("a print of a string") + "print(\"".len();
    type_keys(client, text, literal, "typed into a string", version, &mut typed);
    let blank = |text: &str| middle + text[middle..].find("\n\n").expect("a blank line") + 1;
    let at = blank(text);
    type_keys(client, text, at, "typed_value = 40 + 2", version, &mut typed);
    let at = blank(text);
    type_keys(client, text, at, "def typed_function(a, b):\n    return a * b + 1", version, &mut typed);
    typed
}

fn report_typing(file: &str, typed: &mut Typed) {
    let row = |name: &str, samples: &mut Vec<Duration>, target: &str| {
        if samples.is_empty() {
            println!("| {file}: {name} | none | | | {target} |");
            return;
        }
        let (p50, p95) = (percentile(samples, 0.5), percentile(samples, 0.95));
        let max = samples.iter().max().copied().unwrap_or_default();
        println!(
            "| {file}: {name} ({} keys) | {} | {} | {} | {target} |",
            samples.len(),
            ms(p50),
            ms(p95),
            ms(max)
        );
    };
    row("key to its diagnostics", &mut typed.edit, "p95 < 50 ms");
    row("hover right after a key", &mut typed.hover, "p95 < 20 ms");
    row("last key to the final plan", &mut typed.plan_after_last_key, "");
    println!("| {file}: keys whose diagnostics came after the next key | {} | | | |", typed.late);
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
    // Typing, on the same server: 40 edits above, 80 keys here.
    let mut text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let mut version = 41;
    let mut typed_2000 = typing(&mut client, &mut text, &mut version);
    let memory = memory_kib(client.child.id(), "VmHWM:");
    let resident_at_end = memory_kib(client.child.id(), "VmRSS:");
    let edits = version - 1;
    let _ = client.shutdown();

    // Typing in two whole copies of the samples, on a fresh server.
    let mut two = samples_copied(None, 2);
    let two_lines = two.lines().count();
    let mut client = Client::start();
    client.initialize();
    client.open(URI, &two);
    client.diagnostics(URI, 1);
    client.notification("workspace/inlayHint/refresh", |_| true);
    let mut version = 1;
    let mut typed_two = typing(&mut client, &mut two, &mut version);
    let memory_two = memory_kib(client.child.id(), "VmHWM:");
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
    println!("| peak resident memory, after {edits} edits | {} | | < 150 MB |", mb(memory));
    println!("| resident memory at the end | {} | | |", mb(resident_at_end));
    println!();
    println!("Typing, a key every {} ms, never waiting for a plan", KEY_INTERVAL.as_millis());
    println!("| measure | p50 | p95 | max | target |");
    println!("|---|---|---|---|---|");
    report_typing(&format!("{LINES} lines"), &mut typed_2000);
    report_typing(&format!("two copies of the samples, {two_lines} lines"), &mut typed_two);
    println!("| two copies: peak resident memory | {} | | | |", mb(memory_two));
}
