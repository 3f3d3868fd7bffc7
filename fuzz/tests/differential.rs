//! The differential generator in CI: every saved finding (`fuzz/regressions/`) agrees on
//! every executor, and a campaign with a fixed seed finds no disagreement.
//!
//! The campaign runs `WEFT_FUZZ_PROGRAMS` programs (default 120) from seed `WEFT_FUZZ_SEED`
//! (default 23), so that CI checks the same programs every time, stopping early only past
//! `WEFT_FUZZ_SECONDS` (default 300) on a slow machine; `weft dev fuzz --seed S --seconds T`
//! runs a longer one. Without a GPU adapter the GPU
//! executor is left out and says so, unless `WEFT_REQUIRE_GPU=1` (as CI sets it), where a
//! missing adapter fails the test.

use std::path::{Path, PathBuf};
use std::time::Duration;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root")
}

fn gpu() -> bool {
    match weft_gpu::shared_gpu() {
        Ok(_) => true,
        Err(e) if std::env::var("WEFT_REQUIRE_GPU").is_ok_and(|v| v == "1") => {
            panic!("WEFT_REQUIRE_GPU=1 but there is no GPU: {e}")
        }
        Err(e) => {
            eprintln!(
                "the GPU executor is skipped: no adapter ({e}); set WEFT_REQUIRE_GPU=1 to make this a failure"
            );
            false
        }
    }
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[test]
fn saved_findings_agree_on_every_executor() {
    let gpu = gpu();
    let dir = root().join("fuzz/regressions");
    let mut programs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fuzz/regressions")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "weft"))
        .collect();
    programs.sort();
    assert!(programs.len() >= 5, "only {} saved findings", programs.len());
    let mut failures = Vec::new();
    for path in &programs {
        let text = std::fs::read_to_string(path).expect("readable");
        if let Err(problems) = weft_fuzz::check_saved(&text, gpu) {
            failures.push(format!("{}:\n  {}", path.display(), problems.join("\n  ")));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_fixed_seed_campaign_finds_no_disagreement() {
    let python = root().join("tests/python/prelude.py");
    let config = weft_fuzz::Config {
        seed: env_number("WEFT_FUZZ_SEED", 23),
        budget: Duration::from_secs(env_number("WEFT_FUZZ_SECONDS", 300)),
        max_programs: Some(env_number("WEFT_FUZZ_PROGRAMS", 120)),
        gpu: gpu(),
        python: Some(python),
        save_to: Some(root().join("target/fuzz-findings")),
        shrink_budget: Duration::from_secs(30),
    };
    let report = weft_fuzz::campaign(&config, 0, &mut |_| {});
    let summary = weft_fuzz::summary(&config, &report);
    eprintln!("{summary}");
    assert!(report.findings.is_empty(), "{summary}");
    assert!(report.programs >= 20, "only {} programs ran:\n{summary}", report.programs);
    // The generator aims at valid programs: the checker may reject a few (a length mismatch
    // it proves at compile time), never most.
    assert!(report.invalid * 10 <= report.programs, "{summary}");
    assert!(report.cpu_runs > 0, "{summary}");
}
