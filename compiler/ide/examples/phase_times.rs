//! Times each query of a check of one file, phase by phase: `cargo run --release -p
//! weft-ide --example phase_times -- FILE [--edit]`. Used to find where `weft check` spends
//! its time. With `--edit`, the file is checked once, then a line is inserted before a top-level
//! statement in its middle (as the language server's benchmark does) and each phase's
//! incremental cost is timed.

use std::time::Instant;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use salsa::Setter as _;
use weft_analysis::Database;
use weft_analysis::SourceFile;
use weft_analysis::file_diagnostics;
use weft_analysis::items::{file_functions, function_body, function_signature};
use weft_analysis::names::{function_names, top_level_names, top_level_statement_names};
use weft_analysis::parsed::{parsed_file, syntax_diagnostics};

const PHASES: [&str; 12] = [
    "parse",
    "validate",
    "item tree",
    "signatures + bodies",
    "top-level names",
    "function names",
    "top-level statements",
    "HIR",
    "binding groups",
    "types",
    "shapes",
    "collect diagnostics",
];

fn main() {
    let path = std::env::args().nth(1).expect("usage: phase_times FILE [--edit]");
    let edit = std::env::args().any(|a| a == "--edit");
    let text = std::fs::read_to_string(&path).expect("a readable UTF-8 file");
    let edited = edit.then(|| with_inserted_line(&text));
    let rounds = if std::env::args().any(|a| a == "--plan") { 3 } else { 20 };
    let mut set_text_ms = 0.0;
    let mut totals = [0.0f64; PHASES.len()];
    if std::env::args().any(|a| a == "--log") {
        let (mut db, log) = Database::with_execution_log();
        let file = SourceFile::new(&db, path.clone(), text.clone());
        run_phases(&db, file, &mut [0.0; PHASES.len()]);
        file.set_text(&mut db).to(with_inserted_line(&text));
        log.take();
        run_phases(&db, file, &mut [0.0; PHASES.len()]);
        let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
        for entry in log.take() {
            *counts.entry(entry.split('(').next().unwrap_or_default().to_string()).or_default() += 1;
        }
        for (query, count) in counts {
            println!("{query:>40}: {count}");
        }
        return;
    }
    if std::env::args().any(|a| a == "--toggle") {
        // Edits only, for a profiler: one database, the line inserted and removed in turn.
        let mut db = Database::default();
        let file = SourceFile::new(&db, path.clone(), text.clone());
        run_phases(&db, file, &mut totals);
        let edited = with_inserted_line(&text);
        for round in 0..200 {
            file.set_text(&mut db).to(if round % 2 == 0 { edited.clone() } else { text.clone() });
            run_phases(&db, file, &mut totals);
        }
        return;
    }
    for _ in 0..rounds {
        let mut db = Database::default();
        let file = SourceFile::new(&db, path.clone(), text.clone());
        if let Some(edited) = &edited {
            run_phases(&db, file, &mut [0.0; PHASES.len()]);
            if std::env::args().any(|a| a == "--plan") {
                weft_ide::fusion_plan(&db, file);
            }
            let started = Instant::now();
            file.set_text(&mut db).to(edited.clone());
            set_text_ms += started.elapsed().as_secs_f64() * 1e3;
        }
        run_phases(&db, file, &mut totals);
        if std::env::args().any(|a| a == "--plan") {
            // The plan of this revision replaces the last one's; salsa frees the old memos when
            // the next revision starts.
            weft_ide::fusion_plan(&db, file);
            let started = Instant::now();
            file.set_text(&mut db).to(text.clone());
            println!("set text after a re-planned revision: {:.2} ms", started.elapsed().as_secs_f64() * 1e3);
        }
    }
    println!("{:>22}: {:.2} ms", "set the new text", set_text_ms / rounds as f64);
    for (name, total) in PHASES.iter().zip(totals) {
        println!("{name:>22}: {:.2} ms", total / rounds as f64);
    }
}

/// `text` with `pad = 1` inserted before the top-level statement nearest its middle line.
fn with_inserted_line(text: &str) -> String {
    let mut lines: Vec<&str> = text.lines().collect();
    let statement = |l: &&str| !l.is_empty() && !l.starts_with([' ', '#', ')', ']']) && !l.starts_with("def");
    let at = (lines.len() / 2..lines.len()).find(|&i| statement(&lines[i])).unwrap_or(lines.len());
    lines.insert(at, "pad = 1");
    lines.iter().map(|l| format!("{l}\n")).collect()
}

fn run_phases(db: &Database, file: SourceFile, totals: &mut [f64; PHASES.len()]) {
    let mut last = Instant::now();
    let mut lap = |slot: usize| {
        totals[slot] += last.elapsed().as_secs_f64() * 1e3;
        last = Instant::now();
    };
    parsed_file(db, file);
    lap(0);
    syntax_diagnostics(db, file);
    lap(1);
    let functions = file_functions(db, file).clone();
    lap(2);
    for function in &functions {
        function_signature(db, *function);
        function_body(db, *function);
    }
    lap(3);
    top_level_names(db, file);
    lap(4);
    for function in &functions {
        function_names(db, *function);
    }
    lap(5);
    top_level_statement_names(db, file);
    lap(6);
    for function in &functions {
        weft_analysis::hir::function_hir(db, *function);
    }
    weft_analysis::hir::top_level_hir(db, file);
    lap(7);
    weft_analysis::infer::binding_groups(db, file);
    lap(8);
    for function in &functions {
        weft_analysis::infer::function_types(db, *function);
    }
    weft_analysis::infer::top_level_types(db, file);
    lap(9);
    weft_analysis::shapes::file_shape_diagnostics(db, file);
    lap(10);
    file_diagnostics(db, file);
    lap(11);
}
