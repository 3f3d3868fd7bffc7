//! Times each query of a fresh check of one file, phase by phase: `cargo run --release -p
//! weft-compiler --example phase_times -- FILE`. Used to find where `weft check` spends its time.

use std::time::Instant;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use weft_compiler::items::{file_functions, function_body, function_signature};
use weft_compiler::names::{function_names, top_level_names, top_level_statement_names};
use weft_compiler::parsed::{parsed_file, syntax_diagnostics};
use weft_compiler::{Database, SourceFile, file_diagnostics};

fn main() {
    let path = std::env::args().nth(1).expect("usage: phase_times FILE");
    let text = std::fs::read_to_string(&path).expect("a readable UTF-8 file");
    let rounds = 20;
    let mut totals = [0.0f64; 11];
    for _ in 0..rounds {
        let db = Database::default();
        let file = SourceFile::new(&db, path.clone(), text.clone());
        let mut last = Instant::now();
        let mut lap = |slot: usize| {
            totals[slot] += last.elapsed().as_secs_f64() * 1e3;
            last = Instant::now();
        };
        parsed_file(&db, file);
        lap(0);
        syntax_diagnostics(&db, file);
        lap(1);
        let functions = file_functions(&db, file).clone();
        lap(2);
        for function in &functions {
            function_signature(&db, *function);
            function_body(&db, *function);
        }
        lap(3);
        top_level_names(&db, file);
        lap(4);
        for function in &functions {
            function_names(&db, *function);
        }
        lap(5);
        top_level_statement_names(&db, file);
        lap(6);
        for function in &functions {
            weft_compiler::hir::function_hir(&db, *function);
        }
        weft_compiler::hir::top_level_hir(&db, file);
        lap(7);
        weft_compiler::infer::binding_groups(&db, file);
        lap(8);
        for function in &functions {
            weft_compiler::infer::function_types(&db, *function);
        }
        weft_compiler::infer::top_level_types(&db, file);
        lap(9);
        file_diagnostics(&db, file);
        lap(10);
    }
    let names = [
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
        "collect diagnostics",
    ];
    for (name, total) in names.iter().zip(totals) {
        println!("{name:>22}: {:.2} ms", total / rounds as f64);
    }
}
