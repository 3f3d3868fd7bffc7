//! End-to-end tests of `weft lsp`: the real binary over stdio, driven by a real LSP client
//! (`lsp_client`) over the same pipes an editor uses.

use crate::lsp_client;

use lsp_client::{Client, position, wait};
use serde_json::{Value, json};

const URI: &str = "file:///work/test.weft";

const PROGRAM: &str = "\
def norm(xs):
    squares = [x * x for x in xs]
    return sqrt(sum(squares))

v = [f32(i) for i in range(64)]
n = norm(v)
print(\"é𝄞 vector\", n)
";

fn at(text: &str, needle: &str, within: usize) -> Value {
    json!({ "textDocument": { "uri": URI }, "position": position(text, needle, within) })
}

#[test]
fn initialize_open_edit_and_diagnostics() {
    let mut client = Client::start();
    let init = client.initialize();
    let caps = &init["capabilities"];
    for capability in [
        "hoverProvider",
        "inlayHintProvider",
        "definitionProvider",
        "referencesProvider",
        "renameProvider",
        "completionProvider",
        "documentFormattingProvider",
        "codeLensProvider",
        "semanticTokensProvider",
    ] {
        assert!(!caps[capability].is_null(), "{capability} missing: {caps}");
    }
    client.open(URI, "x = 1\nprint(y)\n");
    let diagnostics = client.diagnostics(URI, 1);
    assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
    assert_eq!(diagnostics[0]["code"], "E0200");
    assert_eq!(diagnostics[0]["range"]["start"], json!({ "line": 1, "character": 6 }));
    // No link to the build machine's copy of the docs.
    assert!(diagnostics[0]["codeDescription"].is_null(), "{diagnostics:?}");
    client.change(URI, 2, "x = 1\nprint(x)\n");
    assert!(client.diagnostics(URI, 2).is_empty());
    // Warnings, with related information for secondary labels.
    client.change(URI, 3, "def f(x):\n    ys = [x for x in range(3)]\n    return len(ys) + x\nprint(f(1))\n");
    let warnings = client.diagnostics(URI, 3);
    let shadow = warnings.iter().find(|d| d["code"] == "W0203").expect("a shadowed-name warning");
    assert_eq!(shadow["severity"], 2);
    assert_eq!(
        shadow["relatedInformation"][0]["location"]["range"]["start"],
        json!({ "line": 0, "character": 6 })
    );
    assert!(client.shutdown().success());
}

#[test]
fn quick_edits_out_of_order_keep_the_latest_text() {
    let mut client = Client::start();
    client.initialize();
    client.open(URI, "x = 1\n");
    client.diagnostics(URI, 1);
    // Twenty edits without waiting, each naming an unknown variable, with hovers in between.
    let mut pending = Vec::new();
    for version in 2..=21 {
        client.change(URI, version, &format!("x = 1\nprint(unknown{version})\n"));
        pending.push(client.request_async("textDocument/hover", at("x = 1\n", "x", 0)));
    }
    // A stale version arriving late is ignored.
    client.change(URI, 5, "print(stale)\n");
    for id in pending {
        let response = client.response(id);
        // A hover either answers or reports that newer content superseded it.
        let modified = response["error"]["code"] == -32801;
        assert!(response.get("error").is_none() || modified, "{response}");
    }
    let last = client.diagnostics(URI, 21);
    assert!(last[0]["message"].as_str().is_some_and(|m| m.contains("unknown21")), "{last:?}");
    let symbols = client.request("textDocument/documentSymbol", json!({ "textDocument": { "uri": URI } }));
    assert_eq!(symbols[0]["name"], "x", "the stale text did not replace the latest: {symbols}");
    assert!(client.shutdown().success());
}

#[test]
fn hover_inlay_hints_definition_completion_rename_and_formatting() {
    let mut client = Client::start();
    client.initialize();
    client.open(URI, PROGRAM);
    assert!(client.diagnostics(URI, 1).is_empty());
    // The fusion plan is built after the diagnostics; the server then asks for fresh hints.
    client.notification("workspace/inlayHint/refresh", |_| true);

    // Hover past non-ASCII text: positions are UTF-16.
    let n = client.request("textDocument/hover", at(PROGRAM, "\", n)", 3));
    assert_eq!(n["range"]["start"], position(PROGRAM, "\", n)", 3), "{n}");
    assert!(n["contents"]["value"].as_str().is_some_and(|v| v.contains("n: f32")), "{n}");
    let sum = client.request("textDocument/hover", at(PROGRAM, "sum(", 1));
    let sum = sum["contents"]["value"].as_str().unwrap_or_default().to_string();
    assert!(sum.contains("sum(xs: [a]) -> a") && sum.contains("kernel `k"), "{sum}");

    let hints = client.request(
        "textDocument/inlayHint",
        json!({ "textDocument": { "uri": URI }, "range": { "start": { "line": 0, "character": 0 }, "end": { "line": 99, "character": 0 } } }),
    );
    let labels: Vec<&str> =
        hints.as_array().expect("hints").iter().filter_map(|h| h["label"].as_str()).collect();
    assert!(labels.contains(&": [f32; 64]"), "{labels:?}");
    assert!(labels.iter().any(|l| l.starts_with("⟨k")), "{labels:?}");

    let definition = client.request("textDocument/definition", at(PROGRAM, "squares))", 0));
    assert_eq!(definition["range"]["start"], position(PROGRAM, "squares =", 0));

    let completion = client.request("textDocument/completion", at(PROGRAM, "sum(squares", 2));
    let items = completion.as_array().expect("items");
    assert!(items.iter().any(|i| i["label"] == "sum" && i["detail"].as_str().is_some()), "{completion}");

    let rename = client.request(
        "textDocument/rename",
        json!({ "textDocument": { "uri": URI }, "position": position(PROGRAM, "squares", 0), "newName": "sq" }),
    );
    assert_eq!(rename["changes"][URI].as_array().map(Vec::len), Some(2), "{rename}");
    let refused = client.request_async(
        "textDocument/rename",
        json!({ "textDocument": { "uri": URI }, "position": position(PROGRAM, "sqrt", 0), "newName": "root" }),
    );
    assert!(client.response(refused)["error"]["message"].as_str().is_some_and(|m| m.contains("prelude")));

    let lenses = client.request("textDocument/codeLens", json!({ "textDocument": { "uri": URI } }));
    let title = lenses[0]["command"]["title"].as_str().unwrap_or_default();
    assert!(title.ends_with("· view fusion") && title.contains("kernel"), "{lenses}");

    let plan = client.request("weft/fusionPlan", json!({ "textDocument": { "uri": URI } }));
    assert_eq!(plan["schema"], 1);
    assert!(plan["kernels"].as_array().is_some_and(|k| !k.is_empty()), "{plan}");
    let wgsl = client.request("weft/wgsl", json!({ "textDocument": { "uri": URI }, "function": "norm" }));
    assert!(wgsl[0]["wgsl"].as_str().is_some_and(|w| w.contains("@compute")), "{wgsl}");

    let tokens =
        client.request("textDocument/semanticTokens/full", json!({ "textDocument": { "uri": URI } }));
    assert!(tokens["data"].as_array().is_some_and(|d| d.len() > 20 && d.len() % 5 == 0));

    client.change(URI, 2, "def f( x ):\n  return x+1\nprint (f(1))\n");
    client.diagnostics(URI, 2);
    let edits = client.request(
        "textDocument/formatting",
        json!({ "textDocument": { "uri": URI }, "options": { "tabSize": 4, "insertSpaces": true } }),
    );
    assert_eq!(edits[0]["newText"], "def f(x):\n    return x + 1\nprint(f(1))\n");
    assert!(client.shutdown().success());
}

#[test]
fn symbols_highlights_signatures_folding_selection_and_settings() {
    let mut client = Client::start();
    client.initialize();
    client.open(URI, PROGRAM);
    client.diagnostics(URI, 1);

    let symbols = client.request("workspace/symbol", json!({ "query": "nor" }));
    let names: Vec<&str> =
        symbols.as_array().expect("symbols").iter().filter_map(|s| s["name"].as_str()).collect();
    assert_eq!(names, ["norm"], "{symbols}");
    assert_eq!(symbols[0]["location"]["uri"], URI);

    // `squares` is bound once (a write) and read once.
    let highlights = client.request("textDocument/documentHighlight", at(PROGRAM, "squares))", 0));
    let kinds: Vec<i64> =
        highlights.as_array().expect("highlights").iter().filter_map(|h| h["kind"].as_i64()).collect();
    assert_eq!(kinds, [3, 2], "write, then read: {highlights}");

    let help = client.request("textDocument/signatureHelp", at(PROGRAM, "range(64", 6));
    assert_eq!(help["signatures"][0]["label"], "range(n: i32) -> [i32]", "{help}");
    assert_eq!(help["activeParameter"], 0, "{help}");

    let folds = client.request("textDocument/foldingRange", json!({ "textDocument": { "uri": URI } }));
    let first = &folds.as_array().expect("folding ranges")[0];
    assert_eq!((first["startLine"].as_i64(), first["endLine"].as_i64()), (Some(0), Some(2)), "{folds}");

    let selection = client.request(
        "textDocument/selectionRange",
        json!({ "textDocument": { "uri": URI }, "positions": [position(PROGRAM, "x * x", 0)] }),
    );
    let innermost = &selection[0];
    assert_eq!(innermost["range"]["start"], position(PROGRAM, "x * x", 0), "{selection}");
    assert!(innermost["parent"]["range"].is_object(), "a wider range encloses it: {selection}");

    // Types and shapes off through the settings: the server asks for fresh hints (after the
    // one it sent when the plan was ready), and only kernel hints remain.
    client.notification("workspace/inlayHint/refresh", |_| true);
    client.notify(
        "workspace/didChangeConfiguration",
        json!({ "settings": { "weft": { "inlayHints": { "types": false, "shapes": false } } } }),
    );
    client.notification("workspace/inlayHint/refresh", |_| true);
    let hints = client.request(
        "textDocument/inlayHint",
        json!({ "textDocument": { "uri": URI }, "range": { "start": { "line": 0, "character": 0 }, "end": { "line": 99, "character": 0 } } }),
    );
    let labels: Vec<&str> =
        hints.as_array().expect("hints").iter().filter_map(|h| h["label"].as_str()).collect();
    assert!(labels.iter().all(|l| !l.starts_with(':')), "no type or shape hints are left: {labels:?}");
    assert!(labels.iter().any(|l| l.starts_with("⟨k")), "kernel hints stay: {labels:?}");
    assert!(client.shutdown().success());
}

/// A request that panics is answered with an error, and the server goes on serving the same
/// documents. The panic is injected by the server's test hook.
#[test]
fn a_panicking_request_is_reported_and_the_server_lives_on() {
    let mut client = Client::start_with_env(&[("WEFT_LSP_TEST_PANIC_ON_HOVER", "1")]);
    client.initialize();
    client.open(URI, PROGRAM);
    client.diagnostics(URI, 1);
    let id = client.request_async("textDocument/hover", at(PROGRAM, "squares))", 0));
    let failed = client.response(id);
    assert_eq!(failed["error"]["code"], -32603, "an internal error: {failed}");
    assert!(failed["error"]["message"].as_str().is_some_and(|m| m.contains("on purpose")), "{failed}");
    let logged = client.notification("window/logMessage", |p| p["type"] == 1);
    assert!(logged["message"].as_str().is_some_and(|m| m.contains("a request failed")), "{logged}");
    // The same document still answers, and edits are still checked.
    let definition = client.request("textDocument/definition", at(PROGRAM, "squares))", 0));
    assert_eq!(definition["range"]["start"], position(PROGRAM, "squares =", 0));
    client.change(URI, 2, "x = undefined_name\n");
    let diagnostics = client.diagnostics(URI, 2);
    assert!(diagnostics.iter().any(|d| d["severity"] == 1), "{diagnostics:?}");
    assert!(client.shutdown().success());
}

#[test]
fn the_server_exits_when_its_client_goes_away() {
    let mut client = Client::start();
    client.initialize();
    drop(client.stdin.take());
    let status = wait(&mut client.child);
    assert!(status.code().is_some(), "exited by itself, not killed: {status:?}");
}

/// The server keeps transparent huge pages off (`lean_memory` in `src/main.rs`), which lowered
/// its peak memory by 40–80 MB; Linux reports it in the process's status.
#[cfg(target_os = "linux")]
#[test]
fn the_server_runs_without_transparent_huge_pages() {
    let mut client = Client::start();
    client.initialize();
    let status = std::fs::read_to_string(format!("/proc/{}/status", client.child.id())).expect("its status");
    let line = status.lines().find(|l| l.starts_with("THP_enabled:"));
    match line {
        Some(line) => assert_eq!(line.split_whitespace().nth(1), Some("0"), "{line}"),
        // Kernels before 6.0 do not report it: nothing to check there.
        None => eprintln!("skipped: this kernel's /proc/PID/status has no THP_enabled line"),
    }
    assert!(client.shutdown().success());
}

/// Random edits of sample text, with requests at random positions: the server answers every
/// request (possibly with an error) and publishes diagnostics for the last version.
#[test]
fn random_edit_sequences_never_crash_the_server() {
    let samples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    let corpus: String = ["quicksort.weft", "spmv_csr.weft", "black_scholes.weft"]
        .iter()
        .map(|name| std::fs::read_to_string(samples.join(name)).expect("sample"))
        .collect();
    let fragments =
        ["(", ")", "[", "]", ":", "\n    ", "def ", "lambda x:", " for ", "é", "𝄞", "\"", "#", "="];
    let mut rng = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = |n: usize| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % n.max(1) as u64) as usize
    };
    let mut client = Client::start();
    client.initialize();
    let mut text = corpus[..2000.min(corpus.len())].to_string();
    client.open(URI, &text);
    let methods = [
        "textDocument/hover",
        "textDocument/completion",
        "textDocument/definition",
        "textDocument/signatureHelp",
    ];
    let mut ids = Vec::new();
    for version in 2..=120 {
        let mut at = next(text.len() + 1);
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        if next(3) == 0 && at < text.len() {
            let mut end = (at + next(40)).min(text.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.replace_range(at..end, "");
        } else {
            let fragment = if next(2) == 0 {
                fragments[next(fragments.len())].to_string()
            } else {
                let start = next(corpus.len() - 50);
                corpus.get(start..start + 30).unwrap_or("x").to_string()
            };
            text.insert_str(at, &fragment);
        }
        client.change(URI, version, &text);
        let line = next(text.lines().count() + 2);
        let params =
            json!({ "textDocument": { "uri": URI }, "position": { "line": line, "character": next(60) } });
        ids.push(client.request_async(methods[next(methods.len())], params));
    }
    for id in ids {
        let response = client.response(id);
        let code = response["error"]["code"].as_i64();
        assert!(code.is_none() || code == Some(-32801), "a request failed: {response}");
    }
    client.diagnostics(URI, 120);
    let hints = client.request(
        "textDocument/inlayHint",
        json!({ "textDocument": { "uri": URI }, "range": { "start": { "line": 0, "character": 0 }, "end": { "line": 999, "character": 0 } } }),
    );
    assert!(hints.is_array());
    assert!(client.shutdown().success());
}

/// A `weft/fusionPlan` answer without what the server adds for editors: each kernel's `source`,
/// and each op's protocol `range` and source `excerpt`.
fn without_editor_fields(plan: &Value) -> Value {
    let mut plan = plan.clone();
    let strip_range = |op: &mut Value| {
        if let Some(op) = op.as_object_mut() {
            op.remove("range");
            op.remove("excerpt");
        }
    };
    for kernel in plan["kernels"].as_array_mut().into_iter().flatten() {
        kernel.as_object_mut().map(|k| k.remove("source"));
        kernel["ops"].as_array_mut().into_iter().flatten().for_each(strip_range);
    }
    for pair in plan["unfused"].as_array_mut().into_iter().flatten() {
        strip_range(&mut pair["from"]);
        strip_range(&mut pair["to"]);
    }
    plan
}

/// `weft/fusionPlan` with a `function` gives that `def`'s kernels only, wherever the flattener
/// put them (quicksort's run in its specialised instances), and the pairs kept apart among them.
#[test]
fn the_fusion_plan_of_one_function_holds_its_kernels_only() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/quicksort.weft");
    let text = std::fs::read_to_string(&path).expect("the quicksort sample");
    let mut client = Client::start();
    client.initialize();
    client.open(URI, &text);
    client.diagnostics(URI, 1);
    let document = json!({ "uri": URI });
    let whole = client.request("weft/fusionPlan", json!({ "textDocument": document }));
    let quicksort =
        client.request("weft/fusionPlan", json!({ "textDocument": document, "function": "quicksort" }));
    let kernels = |plan: &Value| plan["kernels"].as_array().cloned().unwrap_or_default();
    let of_quicksort: Vec<Value> =
        kernels(&whole).into_iter().filter(|k| k["source"] == "quicksort").collect();
    assert!(!of_quicksort.is_empty(), "{whole}");
    assert!(of_quicksort.len() < kernels(&whole).len(), "the top level has kernels too");
    assert_eq!(kernels(&quicksort), of_quicksort);
    // Its instances: `quicksort[f32]^`, and the lifted body of its comprehension.
    assert!(of_quicksort.iter().all(|k| k["function"].as_str().is_some_and(|f| f.starts_with("quicksort"))));
    let names: Vec<&Value> = of_quicksort.iter().map(|k| &k["name"]).collect();
    for pair in quicksort["unfused"].as_array().into_iter().flatten() {
        assert!(names.contains(&&pair["from_kernel"]) && names.contains(&&pair["to_kernel"]), "{pair}");
    }
    // `main` is the top level, not the instance `main` with the inlined `def`s in it.
    let top = client.request("weft/fusionPlan", json!({ "textDocument": document, "function": "main" }));
    let of_top: Vec<Value> = kernels(&whole).into_iter().filter(|k| k["source"] == "main").collect();
    assert!(!of_top.is_empty(), "{top}");
    assert_eq!(kernels(&top), of_top);
    let unknown =
        client.request("weft/fusionPlan", json!({ "textDocument": document, "function": "nothing" }));
    assert_eq!(kernels(&unknown), Vec::<Value>::new());
    assert!(client.shutdown().success());
}

/// `weft fusion --format json FILE` and the server's `weft/fusionPlan` ask the same pipeline
/// query, so they give the same plan for every sample, byte for byte once parsed.
#[test]
fn the_command_line_and_the_server_show_the_same_fusion_plan_for_every_sample() {
    let samples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    let mut paths: Vec<_> = std::fs::read_dir(&samples)
        .expect("the samples directory")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "weft"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 10, "too few samples: {paths:?}");
    let mut client = Client::start();
    client.initialize();
    let mut compared = 0;
    for (i, path) in paths.iter().enumerate() {
        let text = std::fs::read_to_string(path).expect("a readable sample");
        let uri = format!("file:///samples/{i}.weft");
        client.open(&uri, &text);
        client.diagnostics(&uri, 1);
        let from_server = client.request("weft/fusionPlan", json!({ "textDocument": { "uri": uri } }));
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_weft"))
            .args(["fusion", "--format", "json"])
            .arg(path)
            .output()
            .expect("weft fusion runs");
        if !output.status.success() {
            // A sample the flattener does not handle yet has no plan anywhere.
            assert_eq!(from_server, Value::Null, "{}", path.display());
            continue;
        }
        let from_cli: Value = serde_json::from_slice(&output.stdout).expect("weft fusion prints JSON");
        assert_eq!(from_cli, without_editor_fields(&from_server), "the plans of {} differ", path.display());
        for kernel in from_server["kernels"].as_array().into_iter().flatten() {
            assert!(kernel["source"].is_string(), "{kernel}");
            for op in kernel["ops"].as_array().into_iter().flatten().filter(|op| op["end"] != op["start"]) {
                // Lines are 1-based in the plan, 0-based in the protocol.
                assert_eq!(op["range"]["start"]["line"].as_u64(), op["line"].as_u64().map(|l| l - 1), "{op}");
                assert!(op["excerpt"].as_str().is_some_and(|e| !e.is_empty()), "{op}");
            }
        }
        compared += 1;
    }
    assert!(compared >= 10, "only {compared} samples have a plan");
    assert!(client.shutdown().success());
}

/// Every request kind the server offers, with its parameters at `position`.
fn every_request(position: Value) -> Vec<(&'static str, Value)> {
    let document = json!({ "uri": URI });
    let whole =
        json!({ "start": { "line": 0, "character": 0 }, "end": { "line": 1_000_000, "character": 0 } });
    let at = json!({ "textDocument": document, "position": position });
    vec![
        ("textDocument/hover", at.clone()),
        ("textDocument/definition", at.clone()),
        (
            "textDocument/references",
            json!({ "textDocument": document, "position": position, "context": { "includeDeclaration": true } }),
        ),
        ("textDocument/documentHighlight", at.clone()),
        ("textDocument/prepareRename", at.clone()),
        (
            "textDocument/rename",
            json!({ "textDocument": document, "position": position, "newName": "renamed" }),
        ),
        ("textDocument/completion", at.clone()),
        ("textDocument/signatureHelp", at.clone()),
        ("textDocument/selectionRange", json!({ "textDocument": document, "positions": [position] })),
        ("textDocument/documentSymbol", json!({ "textDocument": document })),
        ("workspace/symbol", json!({ "query": "x" })),
        ("textDocument/inlayHint", json!({ "textDocument": document, "range": whole })),
        ("textDocument/codeLens", json!({ "textDocument": document })),
        ("textDocument/foldingRange", json!({ "textDocument": document })),
        (
            "textDocument/formatting",
            json!({ "textDocument": document, "options": { "tabSize": 4, "insertSpaces": true } }),
        ),
        ("textDocument/semanticTokens/full", json!({ "textDocument": document })),
        ("weft/fusionPlan", json!({ "textDocument": document })),
        ("weft/wgsl", json!({ "textDocument": document })),
    ]
}

/// The deepest inputs the parser accepts, and chains of 100,000 terms (as deep a tree as the
/// parser ever builds): every request kind at positions inside them is answered, the
/// background fusion plan is built, and the server lives on. A stack overflow would kill it.
#[test]
fn every_request_on_the_deepest_inputs_is_answered_without_a_stack_overflow() {
    const TERMS: usize = 100_000;
    let nested_ifs: String = (0..98).map(|d| format!("{}if x > 0:\n", "    ".repeat(d))).collect();
    let inputs = [
        ("a chain on one line", format!("x = 1{}\nprint(x)\n", " + 1".repeat(TERMS)), (0, 6)),
        ("a chain, a term per line", format!("x = (1\n{})\nprint(x)\n", "+ 1\n".repeat(TERMS)), (1, 0)),
        (
            "1,200 elif branches",
            format!(
                "x = 3\ny = 0\nif x == 0:\n    y = 0\n{}else:\n    y = -1\nprint(y)\n",
                (1..1200).map(|i| format!("elif x == {i}:\n    y = {i}\n")).collect::<String>()
            ),
            (1000, 4),
        ),
        (
            "199 nested brackets",
            format!("x = {}1{}\nprint(len(x))\n", "[".repeat(199), "]".repeat(199)),
            (0, 100),
        ),
        (
            "98 nested blocks",
            format!("x = 1\n{nested_ifs}{}x = x + 1\nprint(x)\n", "    ".repeat(98)),
            (60, 40),
        ),
    ];
    for (what, text, (line, character)) in inputs {
        let mut client = Client::start();
        client.initialize();
        client.open(URI, &text);
        let errors: Vec<Value> =
            client.diagnostics(URI, 1).into_iter().filter(|d| d["severity"] == 1).collect();
        assert!(errors.is_empty(), "{what}: {errors:?}");
        // The plan is built in the background; the server asks for fresh hints when it is.
        client.notification("workspace/inlayHint/refresh", |_| true);
        let positions = [
            json!({ "line": 0, "character": 0 }),
            json!({ "line": line, "character": character }),
            json!({ "line": text.lines().count() - 1, "character": 2 }),
        ];
        for position in positions {
            for (method, params) in every_request(position.clone()) {
                let id = client.request_async(method, params);
                let response = client.response(id);
                let error = &response["error"];
                // Rename may refuse a position that names nothing; nothing else may fail.
                let refused = method.contains("ename") && error["code"] == -32602;
                assert!(error.is_null() || refused, "{what}: {method} at {position}: {response}");
            }
        }
        assert!(client.shutdown().success(), "{what}: the server did not exit cleanly");
    }
}

/// Kernels are shown where the user wrote them: lenses count a function's kernels over all its
/// instances (and the top level has one), `weft/wgsl` takes a `def`'s name, kernel hints sit one
/// per expression at its end (never at the start of a line, and of no LSP kind), and hovers
/// name ops by their source text, not IR variables.
#[test]
fn kernel_views_name_the_functions_and_expressions_of_the_source() {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/quicksort.weft"),
    )
    .expect("the sample");
    let mut client = Client::start();
    client.initialize();
    client.open(URI, &text);
    client.diagnostics(URI, 1);
    client.notification("workspace/inlayHint/refresh", |_| true);

    let lenses = client.request("textDocument/codeLens", json!({ "textDocument": { "uri": URI } }));
    let lens = |name: &str| -> String {
        let lens = lenses.as_array().expect("lenses").iter().find(|l| l["command"]["arguments"][1] == name);
        lens.and_then(|l| l["command"]["title"].as_str())
            .unwrap_or_else(|| panic!("no lens for {name}: {lenses}"))
            .into()
    };
    let count = |title: &str| -> usize {
        title
            .trim_start_matches("top level: ")
            .split(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .expect("a count")
    };
    let quicksort = lens("quicksort");
    assert!(count(&quicksort) > 0, "{quicksort}");
    // `quicksort` runs at three element types, so three instances share its kernels.
    assert!(quicksort.contains("quicksort[f32]") && quicksort.contains("quicksort[i32]"), "{quicksort}");
    assert!(count(&lens("is_sorted")) > 0);
    let top = lens("main");
    assert!(top.starts_with("top level: ") && count(&top) > 0, "{top}");

    let wgsl =
        client.request("weft/wgsl", json!({ "textDocument": { "uri": URI }, "function": "quicksort" }));
    let kernels = wgsl.as_array().expect("kernels");
    assert!(!kernels.is_empty(), "{wgsl}");
    assert!(kernels.iter().all(|k| k["function"] == "quicksort" && k["wgsl"].as_str().is_some()), "{wgsl}");

    let hints = client.request(
        "textDocument/inlayHint",
        json!({ "textDocument": { "uri": URI }, "range": { "start": { "line": 0, "character": 0 }, "end": { "line": 999, "character": 0 } } }),
    );
    let kernel_hints: Vec<&Value> = hints
        .as_array()
        .expect("hints")
        .iter()
        .filter(|h| h["label"].as_str().is_some_and(|l| l.starts_with('⟨')))
        .collect();
    assert!(kernel_hints.len() > 5, "{hints}");
    let mut positions = Vec::new();
    for hint in &kernel_hints {
        assert!(hint["kind"].is_null(), "a kernel hint with a kind: {hint}");
        assert_ne!(hint["position"]["character"], 0, "a kernel hint at the start of a line: {hint}");
        assert!(!hint["tooltip"].as_str().unwrap_or_default().contains('%'), "IR names in {hint}");
        positions.push(hint["position"].to_string());
    }
    let distinct: std::collections::HashSet<_> = positions.iter().collect();
    assert_eq!(distinct.len(), positions.len(), "two kernel hints at one position: {positions:?}");

    let hover = client.request("textDocument/hover", at(&text, "// 2]", 0));
    let markdown = hover["contents"]["value"].as_str().unwrap_or_default();
    assert!(markdown.contains("kernel `k") && !markdown.contains('%'), "{markdown}");
    assert!(client.shutdown().success());
}

/// `exit` without `shutdown` exits with 1, as the protocol says; after `shutdown`, with 0.
#[test]
fn exit_without_shutdown_exits_with_1() {
    let mut client = Client::start();
    client.initialize();
    client.notify("exit", Value::Null);
    let status = wait(&mut client.child);
    assert_eq!(status.code(), Some(1), "{status:?}");
    let mut client = Client::start();
    client.initialize();
    assert_eq!(client.shutdown().code(), Some(0));
}
