//! Tests of the editor features on small programs: each answer checked against the source.

use rowan::{TextRange, TextSize};

use super::*;

const PROGRAM: &str = "\
def dot(xs, ys):
    prods = [x * y for x, y in zip(xs, ys)]
    return sum(prods)

a = [f32(i) for i in range(100)]
total = dot(a, a)
total = total + 1.0
print(total)
";

fn file(db: &Database, text: &str) -> SourceFile {
    SourceFile::new(db, "test.weft".into(), text.into())
}

/// The offset of the `nth` occurrence of `needle`, plus `within`.
fn at(needle: &str, nth: usize, within: u32) -> TextSize {
    let start = PROGRAM.match_indices(needle).nth(nth).expect("the needle occurs").0;
    TextSize::from(start as u32 + within)
}

fn range(needle: &str, nth: usize) -> TextRange {
    TextRange::at(at(needle, nth, 0), TextSize::of(needle))
}

#[test]
fn hover_gives_types_shapes_docs_and_the_kernel() {
    let db = Database::default();
    let f = file(&db, PROGRAM);
    let prods = hover(&db, f, at("prods", 0, 2), fusion_plan(&db, f)).expect("hover on a local");
    assert!(prods.markdown.contains("prods: [") && prods.markdown.contains("; len(xs)]"), "{prods:?}");
    assert_eq!(prods.range, range("prods", 0));
    let sum = hover(&db, f, at("sum", 0, 1), fusion_plan(&db, f)).expect("hover on a prelude function");
    assert!(sum.markdown.contains("sum(xs: [a]) -> a"), "{sum:?}");
    assert!(sum.markdown.contains("kernel `k"), "a reduction names its kernel: {sum:?}");
    let dot = hover(&db, f, at("dot", 0, 1), fusion_plan(&db, f)).expect("hover on a function");
    assert!(dot.markdown.contains("def dot:"), "{dot:?}");
    let a = hover(&db, f, at("a = ", 0, 0), fusion_plan(&db, f)).expect("hover on a top-level binding");
    assert!(a.markdown.contains("a: [f32; 100]"), "{a:?}");
    let read = hover(&db, f, at("dot(a", 0, 4), None).expect("hover on a top-level read");
    assert!(read.markdown.contains("a: [f32; 100]"), "{read:?}");
}

#[test]
fn hover_on_a_name_shows_its_own_scope_binding() {
    let db = Database::default();
    let text = "ns = [len(s) for s in [[1, 2], [3]]]\nzs = [s * 2.0 for s in [1.0, 2.0]]\nprint(ns, zs)\n";
    let f = file(&db, text);
    let read = TextSize::from(text.find("s * 2.0").expect("the read") as u32);
    let hover = hover(&db, f, read, None).expect("hover on a comprehension variable");
    assert!(hover.markdown.contains("s: f32"), "the second comprehension's `s`: {hover:?}");
}

#[test]
fn definition_references_and_rename_follow_bindings() {
    let db = Database::default();
    let f = file(&db, PROGRAM);
    assert_eq!(definition(&db, f, at("prods", 1, 0)), Some(range("prods", 0)));
    assert_eq!(definition(&db, f, at("dot(a", 0, 0)), Some(range("dot", 0)));
    assert_eq!(definition(&db, f, at("sum", 0, 0)), None);
    let totals = references(&db, f, at("total", 3, 0));
    assert_eq!(totals, (0..4).map(|k| range("total", k)).collect::<Vec<_>>());
    let edits = rename(&db, f, at("xs", 1, 0), "left").expect("a local renames");
    assert_eq!(edits.len(), 2);
    assert!(edits.iter().all(|e| e.new_text == "left"));
    assert!(rename(&db, f, at("xs", 0, 0), "ys").is_err(), "renaming onto another parameter clashes");
    assert!(rename(&db, f, at("sum", 0, 0), "total_sum").is_err(), "the prelude cannot be renamed");
    assert!(rename(&db, f, at("prods", 0, 0), "for").is_err(), "a keyword is not a name");
    assert_eq!(prepare_rename(&db, f, at("sum", 0, 0)), None);
    let unknown = file(&db, "def f(x):\n    return x + y\n");
    assert!(
        rename(&db, unknown, TextSize::from(6), "y").is_err(),
        "renaming onto an unknown name captures it"
    );
    let marks = highlights(&db, f, at("total", 0, 0));
    assert_eq!(marks.iter().filter(|(_, write)| *write).count(), 2, "{marks:?}");
}

#[test]
fn inlay_hints_give_types_shapes_and_kernels_and_each_switches_off() {
    let db = Database::default();
    let f = file(&db, PROGRAM);
    let all = TextRange::up_to(TextSize::of(PROGRAM));
    let hints = inlay_hints(&db, f, all, InlayOptions::default(), fusion_plan(&db, f));
    assert!(hints.iter().any(|h| h.kind == InlayKind::Shape && h.label == ": [f32; 100]"), "{hints:?}");
    assert!(hints.iter().any(|h| h.kind == InlayKind::Kernel && h.label.starts_with("⟨k")), "{hints:?}");
    assert!(
        hints.iter().any(|h| h.kind == InlayKind::Type && h.label == ": i32" && h.tooltip == "i"),
        "{hints:?}"
    );
    let types_only = inlay_hints(
        &db,
        f,
        all,
        InlayOptions { types: true, shapes: false, kernels: false },
        fusion_plan(&db, f),
    );
    assert!(types_only.iter().all(|h| h.kind == InlayKind::Type), "{types_only:?}");
    assert!(types_only.iter().any(|h| h.label == ": [f32]"), "{types_only:?}");
}

#[test]
fn completion_and_signature_help() {
    let db = Database::default();
    let text = "def f(values):\n    vs = values\n    return su\n\nprint(f([1, 2]))\nx = range(3, \n";
    let f = file(&db, text);
    let offset = TextSize::from(text.find("su\n").unwrap() as u32 + 2);
    let items = completions(&db, f, offset);
    assert!(items.iter().any(|c| c.label == "sum" && c.kind == CompletionKind::Prelude), "{items:?}");
    assert!(items.iter().all(|c| c.label.starts_with("su")), "{items:?}");
    let locals = completions(&db, f, TextSize::from(text.find("return").unwrap() as u32 + 7));
    assert!(locals.iter().any(|c| c.label == "vs" && c.kind == CompletionKind::Local), "{locals:?}");
    assert!(locals.iter().any(|c| c.label == "f" && c.kind == CompletionKind::Function), "{locals:?}");
    let scoped = "def g(xs):\n    ys = [item * 2 for item in xs]\n    return sum(ys)\n";
    let g = file(&db, scoped);
    let inside = completions(&db, g, TextSize::from(scoped.find("item *").unwrap() as u32 + 1));
    assert!(inside.iter().any(|c| c.label == "item"), "inside its comprehension: {inside:?}");
    let after = completions(&db, g, TextSize::from(scoped.find("sum").unwrap() as u32));
    assert!(after.iter().all(|c| c.label != "item"), "not after its comprehension: {after:?}");
    assert!(after.iter().any(|c| c.label == "ys"), "{after:?}");
    let help = signature_help(&db, f, TextSize::from(text.find("3, ").unwrap() as u32 + 3)).expect("help");
    assert_eq!(help.active_param, 1);
    assert_eq!(help.label, "range(n: i32) -> [i32]");
}

#[test]
fn symbols_folding_selection_and_tokens() {
    let db = Database::default();
    let f = file(&db, PROGRAM);
    let symbols = document_symbols(&db, f);
    let names: Vec<&str> = symbols.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["dot", "a", "total"]);
    assert_eq!(symbols[0].kind, SymbolKind::Function);
    assert!(folding_ranges(&db, f).iter().any(|r| r.start() == 0.into()));
    let selection = selection_ranges(&db, f, at("prods", 1, 1));
    assert_eq!(selection[0], range("prods", 1));
    assert!(selection.windows(2).all(|w| w[1].contains_range(w[0])));
    let tokens = semantic_tokens(&db, f);
    let kind_of = |r: TextRange| tokens.iter().find(|t| t.range == r).map(|t| t.kind);
    assert_eq!(kind_of(range("sum", 0)), Some(TokenKind::Builtin));
    assert_eq!(kind_of(range("xs", 0)), Some(TokenKind::Parameter));
    assert_eq!(kind_of(range("def", 0)), Some(TokenKind::Keyword));
    assert_eq!(kind_of(range("dot", 1)), Some(TokenKind::Function));
}

/// A function's symbol and folding range end at its last line of code: the comment above the
/// next `def`, which the parser leaves inside the block, is not part of it.
#[test]
fn a_function_ends_at_its_last_line_of_code() {
    let db = Database::default();
    let text = "def f(x):\n    y = x + 1\n    return y\n\n# g doubles\ndef g(x):\n    return 2 * x\n";
    let f = file(&db, text);
    let end = TextSize::from(text.find("return y").unwrap() as u32 + 8);
    let symbols = document_symbols(&db, f);
    assert_eq!(symbols[0].range.end(), end, "{symbols:?}");
    assert!(folding_ranges(&db, f).iter().any(|r| *r == TextRange::new(0.into(), end)));
    // Past `MAX_SELECTION_RANGES` enclosing nodes, the innermost are kept, then the file.
    let chain = format!("x = 1{}\n", " + 1".repeat(300));
    let long = file(&db, &chain);
    let ranges = selection_ranges(&db, long, TextSize::from(4));
    assert_eq!(ranges.len(), outline::MAX_SELECTION_RANGES);
    assert!(ranges.windows(2).all(|w| w[1].contains_range(w[0]) && w[1] != w[0]));
    assert_eq!(ranges.last().map(|r| r.start()), Some(0.into()));
}

#[test]
fn every_feature_survives_every_offset_of_broken_text() {
    let db = Database::default();
    let text = "def f(x:\n    return [y for y in x if\nz = f(1, \"é\"\n  q = lambda: \n";
    let f = file(&db, text);
    for offset in 0..=text.len() as u32 + 2 {
        let offset = TextSize::from(offset);
        let _ = hover(&db, f, offset, fusion_plan(&db, f));
        let _ = definition(&db, f, offset);
        let _ = references(&db, f, offset);
        let _ = rename(&db, f, offset, "renamed");
        let _ = completions(&db, f, offset);
        let _ = signature_help(&db, f, offset);
        let _ = selection_ranges(&db, f, offset);
    }
    let _ = inlay_hints(
        &db,
        f,
        TextRange::up_to(TextSize::of(text)),
        InlayOptions::default(),
        fusion_plan(&db, f),
    );
    let _ = document_symbols(&db, f);
    let _ = folding_ranges(&db, f);
    let _ = semantic_tokens(&db, f);
}

/// What the `weft/wgsl` request does twice on unchanged text: the second answer comes from the
/// pipeline's cache, with no flattening, fusion or code generation (the GPU path's options are
/// part of the query key, so they are cached like the defaults).
#[test]
fn a_second_kernel_request_on_unchanged_text_runs_no_pass() {
    let (db, log) = Database::with_execution_log();
    let file = file(&db, PROGRAM);
    let first = kernel_sources(&db, file, None).expect("the program compiles");
    let ran = log.take();
    for query in ["flat_query", "fused_query", "kernels_query"] {
        assert!(ran.iter().any(|q| q.starts_with(query)), "the first request ran no {query}: {ran:?}");
    }
    let second = kernel_sources(&db, file, None).expect("the program compiles");
    assert_eq!(first, second);
    let ran = log.take();
    assert!(ran.is_empty(), "the second request ran queries: {ran:?}");
    // The plan the editor shows comes from the same cached fusion: only locating it runs.
    assert!(fusion_plan(&db, file).is_some_and(|plan| !plan.kernels.is_empty()));
    let ran = log.take();
    assert!(ran.iter().all(|q| q.starts_with("located_plan_query")), "{ran:?}");
}

/// A `replicate` of zeros (the blank a split conditional's arms are merged into) runs as the
/// device's fill command, so the kernel listing shows no `fill` kernel for it.
#[test]
fn the_kernel_listing_shows_no_kernel_for_a_fill_with_zeros() {
    let db = Database::default();
    let source = "def qs(xs):\n    if len(xs) < 2:\n        return xs\n    p = xs[0]\n    parts = [qs(part) for part in [[x for x in xs if x < p], [x for x in xs if x > p]]]\n    return concat(parts[0], parts[1])\n\nprint(qs([3.0, 1.0, 2.0]))\n";
    let kernels = kernel_sources(&db, file(&db, source), Some("qs")).expect("the program compiles");
    let names: Vec<&str> = kernels.iter().map(|k| k.name.as_str()).collect();
    assert!(names.iter().any(|n| n.starts_with("scatter_distinct")), "the merges are listed: {names:?}");
    assert!(!names.iter().any(|n| n.starts_with("fill")), "{names:?}");
}
