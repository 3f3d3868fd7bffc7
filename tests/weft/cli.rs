//! The `weft` binary end to end: exit statuses, text and JSON output, as the language brief
//! defines them.

use std::path::Path;
use std::process::{Command, Output};

fn weft(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_weft")).args(args).output().expect("the weft binary runs")
}

fn data(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("compiler/tests/data/diagnostics")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn check_reports_each_broken_function_and_exits_1() {
    let out = weft(&["check", &data("must_show.weft")]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1));
    for expected in [
        "[E0100/syntax-error] Error: expected `]`",
        "Help: add `]` to close it",
        "[E0200/unknown-name] Error: unknown name `xz`",
        "Help: did you mean `xs`?",
        "[E0101/unsupported-construct] Error: mutation (`a[i] = x`) is not part of Weft",
        "Help: build a new sequence",
        "must_show.weft:2:28",
        "must_show.weft:6:16",
        "must_show.weft:9:5",
    ] {
        assert!(stdout.contains(expected), "missing {expected:?} in:\n{stdout}");
    }
}

#[test]
fn check_json_is_versioned_and_exits_1() {
    let out = weft(&["check", "--format", "json", &data("must_show.weft")]);
    assert_eq!(out.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(json["version"], 1);
    assert_eq!(json["files"][0]["diagnostics"].as_array().map(Vec::len), Some(3));
}

#[test]
fn clean_files_exit_0_with_no_output() {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    let mut args = vec!["check".to_string()];
    for entry in std::fs::read_dir(samples).expect("samples exist") {
        let path = entry.expect("an entry").path();
        if path.extension().is_some_and(|e| e == "weft") {
            args.push(path.display().to_string());
        }
    }
    args.push(data("clean_program.weft"));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = weft(&args);
    assert_eq!(out.status.code(), Some(0));
    // The samples' only diagnostics are the warnings for lengths checked at run time (zipping
    // two parameters, say); the clean program has none.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let codes: Vec<&str> = stdout.lines().filter(|l| l.starts_with('[')).collect();
    assert!(!codes.is_empty() && codes.iter().all(|l| l.starts_with("[W0351/")), "{stdout}");
    assert!(!stdout.contains("clean_program.weft"), "{stdout}");
    let clean = weft(&["check", &data("clean_program.weft")]);
    assert_eq!((clean.status.code(), String::from_utf8_lossy(&clean.stdout).as_ref()), (Some(0), ""));
}

#[test]
fn warnings_alone_exit_0() {
    let out = weft(&["check", &data("W0202_unused_name.weft")]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("[W0202/unused-name] Warning"));
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(weft(&["check"]).status.code(), Some(2), "no file");
    assert_eq!(weft(&["check", "--format", "xml", &data("clean_program.weft")]).status.code(), Some(2));
    let missing = weft(&["check", "no/such/file.weft"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot read no/such/file.weft"));
    assert_eq!(weft(&["frobnicate"]).status.code(), Some(2), "unknown subcommand");
}

fn sample(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("samples").join(name).display().to_string()
}

#[test]
fn run_prints_and_exits_0() {
    let out = weft(&["run", "--backend", "interp", &sample("prefix_sum.weft")]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("inclusive scan:"), "{stdout}");
    assert!(out.stderr.is_empty(), "an explicit backend needs no notice");
}

#[test]
fn run_reports_a_nested_run_time_error_at_the_inner_span_and_exits_1() {
    let out = weft(&["run", "--backend", "interp", &sample("errors/index_out_of_range.weft")]);
    assert_eq!(out.status.code(), Some(1));
    // What ran before the error stays printed.
    assert_eq!(String::from_utf8_lossy(&out.stdout), "xs: [1, 2, 3, 4, 5]\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr
            .contains("[E0400/index-out-of-range] Error: index 5 is out of range for a sequence of length 5"),
        "{stderr}"
    );
    // The span is `xs[i + k]`, inside the inner comprehension, inside the function.
    assert!(stderr.contains("index_out_of_range.weft:8:18"), "{stderr}");
}

#[test]
fn run_compile_errors_exit_1_and_usage_errors_exit_2() {
    let out = weft(&["run", "--backend", "interp", &data("E0300_type_mismatch.weft")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("[E0300/type-mismatch]"));
    assert_eq!(weft(&["run", "no/such/file.weft"]).status.code(), Some(2));
    assert_eq!(weft(&["run", "--backend", "tpu", &sample("prefix_sum.weft")]).status.code(), Some(2));
}

#[test]
fn dev_after_core_shows_specialised_functions() {
    let out = weft(&["dev", "--after", "core", &sample("quicksort.weft")]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    // quicksort is polymorphic and is used at several types: one instance per type.
    assert!(stdout.contains("quicksort[f32]"), "{stdout}");
    assert!(stdout.contains("quicksort[i32]"), "{stdout}");
    let types = weft(&["dev", "--after", "types", &sample("quicksort.weft")]);
    assert!(String::from_utf8_lossy(&types.stdout).contains("def quicksort: Ord a => [a] -> [a]"));
}

#[test]
fn wgsl_prints_validated_kernels_without_a_gpu() {
    let out = weft(&["wgsl", "--fusion", "none", &sample("dot_product.weft")]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("// kernel `map_mul_f32_f32_f32`, for `"), "{stdout}");
    assert!(stdout.contains("@compute @workgroup_size(256)"), "{stdout}");
    assert!(stdout.contains("reduce_blocks_add_f32"), "{stdout}");
    // Fused (the default), the product and the sum are one kernel.
    let fused = weft(&["wgsl", &sample("dot_product.weft")]);
    let fused = String::from_utf8_lossy(&fused.stdout);
    assert!(fused.contains("_map_reduce`, for `"), "{fused}");
    assert!(!fused.contains("map_mul_f32_f32_f32"), "{fused}");
    // A fused segmented reduction's first pass computes its input from the fused map.
    let scan = weft(&["wgsl", &sample("spmv_ell.weft")]);
    let scan = String::from_utf8_lossy(&scan.stdout);
    assert!(scan.contains("fn element(i: u32)") && scan.contains("produced0"), "{scan}");
}

#[test]
fn fusion_prints_the_plan_in_every_format_without_a_gpu() {
    let file = sample("black_scholes.weft");
    let text = weft(&["fusion", &file]);
    assert_eq!(text.status.code(), Some(0), "{}", String::from_utf8_lossy(&text.stderr));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("strategy ilp, at most 8 storage buffers per kernel"), "{text}");
    assert!(text.contains("k0_map_reduce [map_reduce] in main"), "{text}");
    assert!(text.contains("kept apart:"), "{text}");
    assert!(text.contains("proved optimal"), "{text}");
    let json = weft(&["fusion", "--format", "json", &file]);
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(json["schema"], 1);
    assert!(json["kernels"].as_array().is_some_and(|k| k.len() >= 2), "{json}");
    let none = weft(&["fusion", "--format", "json", "--fusion", "none", &file]);
    let none: serde_json::Value = serde_json::from_slice(&none.stdout).expect("json");
    let count = |v: &serde_json::Value| v["kernels"].as_array().map_or(0, Vec::len);
    assert!(count(&none) > 5 * count(&json), "none: {}, ilp: {}", count(&none), count(&json));
    let dot = weft(&["fusion", "--format", "dot", &file]);
    assert!(String::from_utf8_lossy(&dot.stdout).starts_with("digraph fusion {"));
    let svg = weft(&["fusion", "--format", "svg", &file]);
    let svg = String::from_utf8_lossy(&svg.stdout);
    assert!(svg.starts_with("<svg ") && svg.contains("xmlns=\"http://www.w3.org/2000/svg\""), "{svg}");
    assert!(svg.contains("k0_map_reduce"), "the graph names the kernels: {svg}");
    let bad = weft(&["fusion", "--format", "pdf", &file]);
    assert_eq!(bad.status.code(), Some(2), "an unknown format is a usage error");
}

/// Whether a GPU test can run here; without an adapter it says it is skipped, unless
/// `WEFT_REQUIRE_GPU=1` (CI), where a missing adapter fails it.
fn has_gpu() -> bool {
    let out = weft(&["devices"]);
    if out.status.success() {
        return true;
    }
    assert!(
        std::env::var("WEFT_REQUIRE_GPU").map_or(true, |v| v != "1"),
        "WEFT_REQUIRE_GPU=1 but `weft devices` finds no adapter: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("skipped: no GPU adapter; set WEFT_REQUIRE_GPU=1 to make this a failure");
    false
}

#[test]
fn devices_and_the_gpu_backend_with_its_profile() {
    if !has_gpu() {
        return;
    }
    let devices = String::from_utf8_lossy(&weft(&["devices"]).stdout).into_owned();
    assert!(devices.contains("max_storage_buffer_binding_size"), "{devices}");
    assert!(devices.lines().any(|l| l.starts_with("* ")), "the chosen adapter is marked: {devices}");
    let out = weft(&["run", "--backend", "gpu", "--profile", &sample("prefix_sum.weft")]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let expected = weft(&["run", "--backend", "interp", &sample("prefix_sum.weft")]);
    assert_eq!(out.stdout, expected.stdout, "the gpu prints what the interpreter prints");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("profile: adapter") && stderr.contains("launches"), "{stderr}");
    // Kernel time by source range, by kernel and by call depth.
    assert!(stderr.contains("kernel time") && stderr.contains("by kernel:"), "{stderr}");
    let by_source = stderr.split("by source").nth(1).expect("a table by source");
    let first_row = by_source.lines().nth(2).expect("a row");
    let where_ = first_row.split_whitespace().nth(4).expect("a line:column");
    let (line, column) = where_.split_once(':').expect("line:column");
    assert!(line.parse::<u32>().is_ok() && column.parse::<u32>().is_ok(), "{first_row}");
    let ms: f64 = first_row.split_whitespace().next().and_then(|t| t.parse().ok()).expect("a time");
    assert!(ms > 0.0, "the costliest source range took time: {first_row}");
    // On the device, quicksort's recursion shows its levels; below the crossover (on a CPU
    // adapter, by default) it runs on the CPU executor, which the profile names.
    let quicksort = sample("quicksort.weft");
    let out = weft(&["run", "--backend", "gpu", "--cpu-crossover", "0", "--profile", &quicksort]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let depths = stderr.split("by call depth").nth(1).expect("quicksort recurses: a table by depth");
    assert!(depths.lines().count() > 10, "{depths}");
    let out = weft(&["run", "--backend", "gpu", "--cpu-crossover", "100000", "--profile", &quicksort]);
    assert_eq!(out.stdout, weft(&["run", "--backend", "interp", &quicksort]).stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("calls run on the cpu executor, below the crossover"), "{stderr}");
    let out = weft(&["run", "--backend", "gpu", &sample("errors/index_out_of_range.weft")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("index_out_of_range.weft:8:18"));
}

#[test]
fn fmt_rewrites_in_place_check_reports_and_syntax_errors_refuse() {
    let dir = std::env::temp_dir().join(format!("weft-fmt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let messy = dir.join("messy.weft");
    let messy = messy.to_str().expect("a UTF-8 path");
    std::fs::write(messy, "def f( x ):\n  return x+1  # one more\nprint (f(1))\n").expect("written");

    let check = weft(&["fmt", "--check", messy]);
    assert_eq!(check.status.code(), Some(1), "--check fails on an unformatted file");
    assert!(String::from_utf8_lossy(&check.stdout).contains("would be reformatted"));
    assert!(std::fs::read_to_string(messy).expect("read").contains("f( x )"), "--check writes nothing");

    let fmt = weft(&["fmt", messy]);
    assert_eq!(fmt.status.code(), Some(0), "{}", String::from_utf8_lossy(&fmt.stderr));
    let formatted = std::fs::read_to_string(messy).expect("read");
    assert_eq!(formatted, "def f(x):\n    return x + 1  # one more\nprint(f(1))\n");
    assert_eq!(weft(&["fmt", "--check", messy]).status.code(), Some(0), "formatting twice changes nothing");

    let broken = dir.join("broken.weft");
    let broken = broken.to_str().expect("a UTF-8 path");
    std::fs::write(broken, "def f(x:\n    return x\n").expect("written");
    let refused = weft(&["fmt", broken]);
    assert_eq!(refused.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("E0100"), "the syntax error is reported on stderr: {stderr}");
    assert_eq!(std::fs::read_to_string(broken).expect("read"), "def f(x:\n    return x\n", "left as it was");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn run_writes_charts_to_numbered_files_and_says_where() {
    let figures = std::env::temp_dir().join(format!("weft-cli-figures-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&figures);
    let program = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("compiler/tests/data/run/charts.weft")
        .display()
        .to_string();
    let out = weft(&["run", "--backend", "cpu", "--figures", &figures.display().to_string(), &program]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let files = ["plot-1.svg", "plot-2.svg", "hist-3.svg", "image-4.svg", "image-5.png"];
    let summaries = [
        "plot of 9 points",
        "plot of 3 points",
        "histogram of 50 values in 7 bins",
        "image of 5 × 3 pixels",
        "image of 100 × 100 pixels",
    ];
    let expected: String = summaries
        .iter()
        .zip(files)
        .map(|(summary, file)| format!("{summary}: {}\n", figures.join(file).display()))
        .chain(["drawn\n".to_string()])
        .collect();
    assert_eq!(stdout, expected);
    for file in files {
        let bytes = std::fs::read(figures.join(file)).expect("the chart was written");
        let magic: &[u8] = if file.ends_with(".png") { b"\x89PNG" } else { b"<svg " };
        assert!(bytes.starts_with(magic), "{file}");
    }
    let _ = std::fs::remove_dir_all(figures);
}
