//! `cargo bench --bench layout`: the strided layout of regular nested sequences against the
//! segmented one (descriptor vectors, as for irregular sequences), on the CPU executor:
//! - the matmul sample at n = 256 (three nested levels of one size);
//! - the n-body sample at 1,024 bodies (a map whose body reduces over every body);
//! - the spmv_ell sample (ELL columns: a regular outer level, gathers inside).
//!
//! Each sample's whole program runs, both layouts interleaved, and the table gives the median of
//! `RUNS` runs of each, the ratio, and how many ops ran on strided descriptors.
//!
//! A second table counts, for every sample as committed, the index checks the executor runs
//! with the indexes shape analysis proved in bounds left unchecked, and with every index
//! checked (`flatten::Options::keep_index_checks`).

use std::time::{Duration, Instant};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use weft_analysis::Database;
use weft_analysis::SourceFile;
use weft_analysis::pipeline;
use weft_exec::cpu::{self, Counters, Layout};
use weft_flat::flatten::Options;
use weft_flat::ir;

// Only the silent host is used here; the timing is interleaved by hand.
#[allow(dead_code)]
mod common;
use common::NoHost;

const RUNS: usize = 9;

fn sample(name: &str, sizes: &[(&str, &str)]) -> String {
    let path = format!("{}/../../samples/{name}.weft", env!("CARGO_MANIFEST_DIR"));
    let mut source = std::fs::read_to_string(&path).expect("the sample exists");
    for (from, to) in sizes {
        assert!(source.contains(from), "{name} has `{from}`");
        source = source.replacen(from, to, 1);
    }
    source
}

fn flat(source: &str) -> ir::Program {
    flat_with(source, Options::default())
}

fn flat_with(source: &str, options: Options) -> ir::Program {
    let db = Database::default();
    let file = SourceFile::new(&db, "bench.weft".to_string(), source.to_string());
    pipeline::fused_program(&db, file, options.into()).expect("the sample flattens").program.clone()
}

/// Index checks run (statements, and elements checked) by the whole program, or why it did not
/// run (a sample that reads data files).
fn index_checks(program: &ir::Program) -> Result<(u64, u64), String> {
    let (_, counters) = try_run(program, Layout::Strided)?;
    Ok(counters.per_op.get("check.index_in_range").copied().unwrap_or((0, 0)))
}

fn try_run(program: &ir::Program, layout: Layout) -> Result<(Duration, Counters), String> {
    let mut counters = Counters::default();
    let start = Instant::now();
    cpu::call_with(
        program,
        program.main,
        Vec::new(),
        &mut NoHost,
        &mut counters,
        cpu::Config { layout, ..Default::default() },
    )
    .map_err(|e| e.message)?;
    Ok((start.elapsed(), counters))
}

fn run(program: &ir::Program, layout: Layout) -> (Duration, Counters) {
    try_run(program, layout).expect("the sample runs")
}

fn main() {
    let cases = [
        ("matmul n=256", sample("matmul", &[("n = 48", "n = 256")])),
        ("nbody 1024 bodies", sample("nbody", &[("n = 64 ", "n = 1024 ")])),
        ("spmv_ell n=20000", sample("spmv_ell", &[("n = 300 ", "n = 20000 ")])),
    ];
    println!("| program | segmented | strided | strided / segmented | strided ops |");
    println!("|---|---|---|---|---|");
    for (name, source) in &cases {
        let program = flat(source);
        // One warm-up run of each, then both layouts interleaved.
        run(&program, Layout::Segmented);
        let (_, counters) = run(&program, Layout::Strided);
        let (mut segmented, mut strided) = (Vec::new(), Vec::new());
        for _ in 0..RUNS {
            segmented.push(run(&program, Layout::Segmented).0);
            strided.push(run(&program, Layout::Strided).0);
        }
        segmented.sort();
        strided.sort();
        let (a, b) = (segmented[RUNS / 2], strided[RUNS / 2]);
        println!(
            "| {name} | {:.1} ms | {:.1} ms | {:.2} | {} |",
            a.as_secs_f64() * 1e3,
            b.as_secs_f64() * 1e3,
            b.as_secs_f64() / a.as_secs_f64(),
            counters.strided_ops
        );
    }
    println!();
    println!("| sample | index checks run, all checked (elements) | with proofs (elements) | dropped |");
    println!("|---|---|---|---|");
    let dir = format!("{}/../../samples", env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("the samples")
        .filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".weft").map(str::to_string))
        .collect();
    names.sort();
    for name in names {
        let source = sample(&name, &[]);
        let all = Options { keep_index_checks: true, ..Options::default() };
        let (checked, proven) = match (index_checks(&flat_with(&source, all)), index_checks(&flat(&source))) {
            (Ok(checked), Ok(proven)) => (checked, proven),
            (Err(e), _) | (_, Err(e)) => {
                println!("| {name} | not run here: {e} | | |");
                continue;
            }
        };
        let dropped =
            if checked.1 == 0 { 0.0 } else { 100.0 * (checked.1 - proven.1) as f64 / checked.1 as f64 };
        println!(
            "| {name} | {} ({}) | {} ({}) | {dropped:.0}% of elements |",
            checked.0, checked.1, proven.0, proven.1
        );
    }
}
