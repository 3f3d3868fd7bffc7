//! `cargo bench -p weft-analysis --bench cancel [FILE]`: how long a new edit waits for the
//! background fusion plan it cancels, the issue-27 target being under 10 ms.
//!
//! As the language server does, each version's diagnostics are computed first, then its plan
//! starts on a snapshot of the database (another thread); after a delay spread over the plan's
//! whole length, the next version's text is set. Setting a text waits until every snapshot is
//! dropped, that is until the plan reaches a cancellation point and unwinds, so the time the
//! setter blocks is the time the edit waits. Only plans that were still running count.
//!
//! FILE defaults to `target/lsp-bench.weft`, the 2,000-line file `cargo bench --bench lsp`
//! writes. Each version inserts one line, alternately a top-level statement and a function's
//! first statement, as `scripts/replan.py` does.

use std::time::{Duration, Instant};

use salsa::Setter;
use weft_analysis::pipeline::{Options, fusion_plan};
use weft_analysis::{Database, SourceFile, file_diagnostics};

/// The allocator the `weft` binary uses, so that the figures are the server's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const EDITS: usize = 60;

fn main() {
    let path = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/lsp-bench.weft").to_string());
    let Ok(text) = std::fs::read_to_string(&path) else {
        eprintln!("no {path}: run `cargo bench --bench lsp` first, which writes it, or name a file");
        return;
    };
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut db = Database::default();
    let file = SourceFile::new(&db, path.clone(), text);
    assert!(!file_diagnostics(&db, file).iter().any(|d| d.is_error()), "{path} has errors");

    // How long one version's plan takes, uncancelled, to spread the delays over.
    let mut full = Vec::new();
    for k in 0..3 {
        edit(&mut lines, k);
        file.set_text(&mut db).to(lines.join("\n"));
        file_diagnostics(&db, file);
        let start = Instant::now();
        assert!(fusion_plan(&db, file, Options::portable_gpu()).is_ok(), "the plan builds");
        full.push(start.elapsed());
    }
    full.sort();
    let plan = full[1];
    println!("{path}: one version's plan takes {} (median of 3)", ms(plan));

    // The baseline: an edit with no plan running still starts a revision (and frees what the
    // last one replaced that is not freed later).
    let mut alone = Vec::new();
    for k in 0..20 {
        file_diagnostics(&db, file);
        edit(&mut lines, EDITS + 3 + k);
        let text = lines.join("\n");
        let start = Instant::now();
        file.set_text(&mut db).to(text);
        alone.push(start.elapsed());
    }
    alone.sort();
    println!(
        "an edit with no plan running: p50 {}, max {}",
        ms(alone[alone.len() / 2]),
        ms(alone[alone.len() - 1])
    );

    let mut waits = Vec::new();
    for k in 0..EDITS {
        let errors = file_diagnostics(&db, file).iter().filter(|d| d.is_error()).count();
        assert_eq!(errors, 0, "edit {k} broke the file: the figures would time plans that stop at once");
        let snapshot = db.clone();
        let planner = std::thread::spawn(move || {
            salsa::Cancelled::catch(|| fusion_plan(&snapshot, file, Options::portable_gpu()).is_ok()).is_err()
        });
        std::thread::sleep(plan.mul_f64((k % 20) as f64 / 20.0 + 0.01));
        edit(&mut lines, k + 3);
        let text = lines.join("\n");
        let start = Instant::now();
        file.set_text(&mut db).to(text);
        let waited = start.elapsed();
        let cancelled = planner.join().unwrap_or(false);
        if cancelled {
            waits.push(waited);
        }
    }
    waits.sort();
    let at = |p: f64| waits[((waits.len() - 1) as f64 * p).round() as usize];
    if waits.is_empty() {
        println!("no plan was still running when its edit came");
        return;
    }
    println!(
        "edit waits for the plan it cancels ({} of {EDITS} plans cancelled): p50 {}, p95 {}, max {}",
        waits.len(),
        ms(at(0.5)),
        ms(at(0.95)),
        ms(at(1.0))
    );
}

/// Inserts line `k`'s edit: a top-level statement for even `k`, a function's first statement for odd.
fn edit(lines: &mut Vec<String>, k: usize) {
    let top = |l: &String| {
        !l.is_empty()
            && !l.starts_with([' ', '#', ')', ']'])
            && !["def", "else", "elif"].iter().any(|w| l.starts_with(w))
    };
    let top_level = k.is_multiple_of(2);
    let candidates: Vec<usize> = if top_level {
        (0..lines.len()).filter(|&i| top(&lines[i])).collect()
    } else {
        (0..lines.len()).filter(|&i| lines[i].starts_with("def ")).map(|i| i + 1).collect()
    };
    assert!(!candidates.is_empty(), "the file needs top-level statements and functions to edit");
    let at = candidates[(k * 37) % candidates.len()];
    let indent = if top_level { "" } else { "    " };
    lines.insert(at, format!("{indent}edit_{k} = {k} + 1"));
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}
