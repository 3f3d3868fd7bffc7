//! `weft bench` end to end on small sizes, without the Python peers (the CI script runs
//! `weft bench --quick` with them): every workload's Weft executors and sequential baseline
//! agree with the interpreter and are timed, and the report renders.

use weft_bench::{Config, HAND_WGSL, Progress, SEQUENTIAL, run};
use weft_session::Options;

struct Steps(Vec<String>);

impl Progress for Steps {
    fn start(&mut self, _steps: u64) {}
    fn step(&mut self, what: &str) {
        self.0.push(what.to_string());
    }
    fn say(&mut self, _line: &str) {}
}

#[test]
fn every_workload_runs_checked_on_weft_and_sequential_rust() {
    let work_dir = std::env::temp_dir().join(format!("weft-bench-test-{}", std::process::id()));
    let config = Config {
        workloads: Vec::new(),
        sizes: Some(vec![500]),
        repeat: 1,
        quick: true,
        no_python: true,
        ablation: false,
        options: Options::default(),
        work_dir: work_dir.clone(),
    };
    let mut steps = Steps(Vec::new());
    let results = run(&config, &mut steps).expect("the suite runs");
    let _ = std::fs::remove_dir_all(&work_dir);
    let gpu_required = std::env::var_os("WEFT_REQUIRE_GPU").is_some_and(|v| v == "1");
    let names: Vec<&str> = results.workloads.iter().map(|w| w.name.as_str()).collect();
    let expected = [
        "dot",
        "black_scholes",
        "sort",
        "spmv_csr",
        "segmented_sums",
        "quickhull",
        "barnes_hut",
        "kmeans",
        "spmv_ell",
        "cg",
        "bfs",
    ];
    assert_eq!(names, expected);
    for w in &results.workloads {
        for e in &w.entries {
            let needs_gpu = e.peer == "weft gpu" || e.peer == HAND_WGSL;
            if needs_gpu && results.adapter.is_none() && !gpu_required {
                eprintln!("skipped: {} on the GPU executor: no adapter here ({:?})", w.name, e.excluded);
                continue;
            }
            assert_eq!(e.excluded, None, "{}: {} was not timed", w.name, e.peer);
            assert_eq!(e.times.len(), 1, "{}: {} has {:?}", w.name, e.peer, e.times);
            let (size, times, _) = &e.times[0];
            assert_eq!((*size, times.len()), (500, 1));
            assert!(times[0] > 0.0, "{}: {} took no time", w.name, e.peer);
        }
        let peers: Vec<&str> = w.entries.iter().map(|e| e.peer.as_str()).collect();
        let mut expected = vec!["weft interpreter", "weft cpu", "weft gpu", SEQUENTIAL];
        if weft_bench::wgsl::WRITTEN.contains(&w.name.as_str()) {
            expected.push(HAND_WGSL);
        }
        assert_eq!(peers, expected, "{}", w.name);
        // The GPU executor reports its launches; Black-Scholes is one fused kernel.
        let gpu = &w.entries[2];
        if w.name == "black_scholes" && !gpu.times.is_empty() {
            let counts = gpu.times[0].2.expect("a GPU run counts its launches");
            assert_eq!((counts.launches, counts.read_backs), (1, 0), "Black-Scholes fuses into one kernel");
        }
        let table = weft_bench::report::table(w);
        assert!(table.contains("| weft cpu |") && table.contains("| 500 |"), "{table}");
    }
    assert!(steps.0.iter().any(|s| s == "sort: weft cpu at 500"), "{:?}", steps.0);
}

#[test]
fn an_unknown_workload_is_refused_with_the_known_ones() {
    let config = Config {
        workloads: vec!["dotp".into()],
        sizes: None,
        repeat: 1,
        quick: true,
        no_python: true,
        ablation: false,
        options: Options::default(),
        work_dir: std::env::temp_dir().join("weft-bench-unknown"),
    };
    let why = run(&config, &mut Steps(Vec::new())).expect_err("refused");
    assert!(why.contains("no workload `dotp`") && why.contains("dot, black_scholes"), "{why}");
}

#[test]
fn the_ablation_counts_what_fusion_saves() {
    let work_dir = std::env::temp_dir().join(format!("weft-bench-ablation-{}", std::process::id()));
    let config = Config {
        workloads: vec!["black_scholes".into()],
        sizes: Some(vec![1_000]),
        repeat: 1,
        quick: true,
        no_python: true,
        ablation: true,
        options: Options::default(),
        work_dir: work_dir.clone(),
    };
    let results = run(&config, &mut Steps(Vec::new())).expect("the suite runs");
    let _ = std::fs::remove_dir_all(&work_dir);
    if results.adapter.is_none() && std::env::var_os("WEFT_REQUIRE_GPU").is_none_or(|v| v != "1") {
        eprintln!("skipped: the ablation runs on the GPU executor, and there is no adapter here");
        return;
    }
    let [ablation] = results.ablation.as_slice() else { panic!("one workload: {:?}", results.ablation) };
    assert_eq!(ablation.rows.len(), weft_bench::VARIANTS.len());
    let launches: Vec<u64> = ablation
        .rows
        .iter()
        .map(|(name, row)| row.as_ref().unwrap_or_else(|e| panic!("{name}: {e}")).counts.launches)
        .collect();
    // One kernel per op in the base; every fusing variant prices all the options in one kernel.
    assert!(launches[0] > 10, "the base launches each op: {launches:?}");
    assert!(launches[1..].iter().all(|&l| l == 1), "fused into one kernel: {launches:?}");
    let bound: Vec<u64> =
        ablation.rows.iter().map(|(_, row)| row.as_ref().map_or(0, |r| r.counts.bytes_bound)).collect();
    assert!(bound[0] > 5 * bound[2], "fusion keeps the intermediates off memory: {bound:?}");
    let table = weft_bench::report::ablation_table(ablation);
    assert!(table.contains("| ILP fusion | ") && table.contains("| 1.00 |"), "{table}");
}
