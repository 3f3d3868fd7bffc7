//! Shape analysis: snapshots of every sample's shapes (what `weft check --shapes` prints), the
//! two kinds of length mismatch (proven: rejected at compile time; unproven: reported at run time
//! by every executor), and index proofs (a proven index loses its bounds check, an unproven one
//! keeps it). `UPDATE_EXPECT=1` rewrites the snapshots.

use crate::common;

use common::differential::{self, Executor};
use expect_test::expect_file;
use weft_analysis::Database;
use weft_analysis::SourceFile;
use weft_analysis::pipeline;
use weft_analysis::shapes;
use weft_flat::fuse::Strategy;
use weft_flat::ir::{Block, Check, Op, StmtKind};
use weft_session::{Backend, RunError};
use weft_syntax::Code;

fn shapes_of(source: &str) -> (Database, SourceFile) {
    let db = Database::default();
    let file = SourceFile::new(&db, "shapes.weft".to_string(), source.to_string());
    (db, file)
}

#[test]
fn every_sample_has_its_shapes_snapshot() {
    let samples = common::weft_programs(&["samples"]);
    assert!(samples.len() >= 15, "the samples are found");
    for path in samples {
        let text = std::fs::read_to_string(&path).expect("readable");
        let (db, file) = shapes_of(&text);
        let name = path.file_stem().expect("a name").to_string_lossy().into_owned();
        let snapshot = crate::common::workspace_root().join(format!("compiler/tests/data/shapes/{name}.txt"));
        expect_file![snapshot].assert_eq(&shapes::report(&db, file));
    }
}

#[test]
fn lengths_are_symbolic_and_nesting_regular_or_not() {
    let (db, file) = shapes_of(
        "def f(xs: [f32], n: i32) -> [f32]:\n\
         \x20   ys = [x * 2.0 for x in xs]\n\
         \x20   both = concat(xs, ys)\n\
         \x20   grid = [[0.0 for j in range(n)] for i in indices(xs)]\n\
         \x20   rows = [range(i) for i in range(n)]\n\
         \x20   pos = [x for x in xs if x > 0.0]\n\
         \x20   return ys\n",
    );
    let report = shapes::report(&db, file);
    for line in [
        "ys : [f32; len(xs)]",
        "both : [f32; 2 * len(xs)]",
        "grid : [[f32; max(n, 0)]; len(xs)]",
        "rows : [[i32]; max(n, 0)] (irregular)",
        "pos : [f32; count(x > 0.0)]",
        "def f -> [f32; len(xs)]",
    ] {
        assert!(report.contains(line), "missing `{line}` in:\n{report}");
    }
}

#[test]
fn callers_see_the_shapes_their_callees_return() {
    let (db, file) = shapes_of(
        "def pairs(xs: [f32]) -> [(f32, f32)]:\n\
         \x20   return zip(xs, [x + 1.0 for x in xs])\n\
         ys = pairs([1.0, 2.0, 3.0])\n",
    );
    let report = shapes::report(&db, file);
    assert!(report.contains("ys : [(f32, f32); 3]"), "{report}");
    // `zip` of `xs` and a comprehension over it needs no run-time check.
    assert!(weft_analysis::file_diagnostics(&db, file).is_empty());
}

const PROVEN_MISMATCH: &str = "xs = [1.0, 2.0, 3.0]\nprint(zip(xs, xs[1:]))\n";
const UNPROVEN_MISMATCH: &str = "def dot(xs: [f32], ys: [f32]) -> f32:\n\
                                 \x20   return sum([x * y for x, y in zip(xs, ys)])\n\
                                 print(dot([1.0, 2.0, 3.0], [3.0, 4.0]))\n";

#[test]
fn a_proven_mismatch_is_rejected_at_compile_time_on_every_backend() {
    let (db, file) = shapes_of(PROVEN_MISMATCH);
    let diagnostics = weft_analysis::file_diagnostics(&db, file);
    assert_eq!(diagnostics.len(), 1, "{diagnostics:#?}");
    let error = &diagnostics[0];
    assert_eq!(error.code, Code::ProvenLengthMismatch);
    assert!(error.message.contains("3 and 2"), "{}", error.message);
    let labels: Vec<&str> = error.labels.iter().map(|l| l.message.as_str()).collect();
    assert_eq!(labels, ["this has length 3", "this has length 2"]);
    for backend in [Backend::Interp, Backend::Cpu] {
        let mut host = differential::CapturingHost { stdout: String::new() };
        match weft_session::run_file(&db, file, backend, Default::default(), &mut host) {
            Err(RunError::Compile(d)) => assert_eq!(d[0].code, Code::ProvenLengthMismatch),
            other => panic!("{backend:?} ran a proven mismatch: {:?}", other.err()),
        }
    }
}

#[test]
fn an_unproven_equality_is_a_warning_and_a_run_time_check_on_every_executor() {
    let (db, file) = shapes_of(UNPROVEN_MISMATCH);
    let diagnostics = weft_analysis::file_diagnostics(&db, file);
    assert_eq!(diagnostics.iter().map(|d| d.code).collect::<Vec<_>>(), [Code::UnprovenLength]);
    assert!(diagnostics[0].message.contains("checked at run time"));
    let dir = std::env::temp_dir().join(format!("weft-shapes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let path = dir.join("unproven.weft");
    std::fs::write(&path, UNPROVEN_MISMATCH).expect("writable");
    let zip_at = UNPROVEN_MISMATCH.find("zip(xs, ys)").expect("the zip") as u32;
    for executor in [Executor::Interp, Executor::Cpu(Strategy::Ilp), Executor::CpuSequentialInner] {
        let error = differential::run(executor, &path).error.unwrap_or_else(|| panic!("{executor:?} ran"));
        assert_eq!(error.code, Code::LengthMismatch, "{executor:?}");
        assert_eq!(u32::from(error.range.start()), zip_at, "{executor:?}");
    }
}

/// How many check statements of the IR program for `source` are `wanted`.
fn flat_checks(source: &str, wanted: fn(&Check) -> bool) -> usize {
    fn count(block: &Block, wanted: fn(&Check) -> bool) -> usize {
        block
            .stmts
            .iter()
            .map(|stmt| match &stmt.kind {
                StmtKind::Op { op: Op::Check(check), .. } => usize::from(wanted(check)),
                StmtKind::If { then, otherwise, .. } => count(then, wanted) + count(otherwise, wanted),
                StmtKind::While { cond, body, .. } | StmtKind::ElementLoop { cond, body, .. } => {
                    count(cond, wanted) + count(body, wanted)
                }
                _ => 0,
            })
            .sum()
    }
    let (db, file) = shapes_of(source);
    let program = pipeline::flat_program(&db, file, Default::default()).unwrap_or_else(|d| panic!("{d:#?}"));
    program.functions.iter().map(|f| count(&f.body, wanted)).sum()
}

fn flat_index_checks(source: &str) -> usize {
    flat_checks(source, |c| matches!(c, Check::IndexInRange { .. }))
}

#[test]
fn a_proven_index_skips_its_check_and_an_unproven_one_keeps_it() {
    let proven = "def diffs(a: [f32]) -> [f32]:\n\
                  \x20   return [a[i + 1] - a[i] for i in range(len(a) - 1)]\n\
                  print(diffs([1.0, 4.0, 9.0]))\n";
    let unproven = "def diffs(a: [f32]) -> [f32]:\n\
                    \x20   return [a[i + 1] - a[i] for i in range(len(a))]\n\
                    print(diffs([1.0, 4.0, 9.0]))\n";
    assert_eq!(flat_index_checks(proven), 0);
    // `a[i]` is still proven; `a[i + 1]` may reach `len(a)`, and does.
    assert_eq!(flat_index_checks(unproven), 1);
    let (out, error) = differential::run_source(proven, Backend::Cpu);
    assert_eq!((out.as_str(), error), ("[3.0, 5.0]\n", None));
    let (_, error) = differential::run_source(unproven, Backend::Cpu);
    assert_eq!(error.map(|e| e.0), Some("E0400".to_string()));
}

#[test]
fn a_condition_bounds_the_index_it_guards() {
    let guarded = "def pad(rows: [[f32]], k: i32) -> [[f32]]:\n\
                   \x20   return [[r[j] if j < len(r) else 0.0 for r in rows] for j in range(k)]\n\
                   print(pad([[1.0], [2.0, 3.0], []], 3))\n";
    assert_eq!(flat_index_checks(guarded), 0);
    let unguarded = guarded.replace("j < len(r)", "j < 5");
    assert_eq!(flat_index_checks(&unguarded), 1);
    let (out, error) = differential::run_source(guarded, Backend::Cpu);
    let (expected, _) = differential::run_source(guarded, Backend::Interp);
    assert_eq!((out, error), (expected, None));
}

#[test]
fn loops_keep_shapes_only_when_they_are_invariant() {
    let (db, file) = shapes_of(
        "xs = [1.0, 2.0]\n\
         ys = [0.0, 0.0]\n\
         for _ in range(3):\n\
         \x20   xs = [x * 2.0 for x in xs]\n\
         \x20   ys = concat(ys, [1.0])\n\
         print(zip(xs, [0.0, 0.0]), ys)\n",
    );
    let report = shapes::report(&db, file);
    // `xs` keeps its length through the loop; `ys` grows, so it is unknown after it.
    assert!(report.contains("xs : [f32; 2]"), "{report}");
    assert!(report.contains("ys : [f32; len(ys) + 1]"), "{report}");
    assert!(weft_analysis::file_diagnostics(&db, file).is_empty());
}

#[test]
fn an_index_is_proven_only_from_what_holds_for_every_element() {
    // `scatter` writes `src`'s values into `range(4)`: its elements need not be indexes of `xs`.
    let scattered = "def f(xs: [f32], idx: [i32]) -> [f32]:\n\
                     \x20   ids = scatter(idx, [0], range(len(xs)))\n\
                     \x20   return [xs[i] for i in ids]\n\
                     print(f([1.0, 2.0], [5]))\n";
    // `xs[i]`'s check, and the one `scatter` makes of its indexes.
    assert_eq!(flat_index_checks(scattered), 2);
    // A filter keeps some of `range`'s elements: still indexes.
    let filtered = "def f(xs: [f32]) -> [f32]:\n\
                    \x20   return [xs[i] for i in filter(lambda i: i % 2 == 0, indices(xs))]\n\
                    print(f([1.0, 2.0, 3.0]))\n";
    assert_eq!(flat_index_checks(filtered), 0);
    // Past the `if`, its condition no longer holds.
    let branch = "def f(xs: [f32], n: i32) -> f32:\n\
                  \x20   total = 0.0\n\
                  \x20   for i in range(n):\n\
                  \x20       if i < len(xs):\n\
                  \x20           total = total + xs[i]\n\
                  \x20       total = total + xs[i]\n\
                  \x20   return total\n\
                  print(f([1.0, 2.0], 3))\n";
    assert_eq!(flat_index_checks(branch), 1);
    let (_, error) = differential::run_source(branch, Backend::Cpu);
    assert_eq!(error.map(|e| e.0), Some("E0400".to_string()));
}

/// Programs a review found to be wrongly proven: each index must keep its check, and each run
/// must stop with E0400 as the interpreter does.
#[test]
fn what_a_review_found_stays_checked() {
    let cases = [
        // Two slices that print alike are different lengths.
        "def f(a: [i32], b: [i32]) -> [i32]:\n\
         \x20   p = a\n\
         \x20   u = p[::2][1:]\n\
         \x20   p = b\n\
         \x20   v = p[::2][1:]\n\
         \x20   return [v[i] for i in range(len(u))]\n\
         print(f([1, 2, 3, 4, 5, 6, 7], [1, 2, 3]))\n",
        // `n + n` wraps.
        "def f(xs: [i32], n: i32) -> [i32]:\n\
         \x20   if n < 0:\n\
         \x20       return [xs[i] for i in range(n + n)]\n\
         \x20   return xs\n\
         print(f([1], -2147483643))\n",
        // A closure reads the parameter as it is when called.
        "def f(xs: [i32], ys: [i32]) -> [i32]:\n\
         \x20   n = len(xs)\n\
         \x20   def g() -> [i32]:\n\
         \x20       return [xs[i] for i in range(n)]\n\
         \x20   xs = ys\n\
         \x20   return g()\n\
         print(f([1, 2, 3], [1]))\n",
    ];
    for source in cases {
        assert_eq!(flat_index_checks(source), 1, "{source}");
        let (_, interp) = differential::run_source(source, Backend::Interp);
        let (_, cpu) = differential::run_source(source, Backend::Cpu);
        assert_eq!(interp.as_ref().map(|e| e.0.as_str()), Some("E0400"), "{source}");
        assert_eq!(cpu, interp, "{source}");
    }
}

fn flat_length_checks(source: &str) -> usize {
    flat_checks(source, |c| matches!(c, Check::LengthsEqual { .. }))
}

#[test]
fn proven_equal_lengths_are_not_checked_at_run_time() {
    let proven = "def f(xs: [f32]) -> [f32]:\n\
                  \x20   ys = [x + 1.0 for x in xs]\n\
                  \x20   return concat([a * b for a, b in zip(xs, ys)], map(lambda a, b: a - b, xs, ys))\n\
                  print(f([1.0, 2.0]))\n";
    let unproven = "def f(xs: [f32], ys: [f32]) -> [f32]:\n\
                    \x20   return [a * b for a, b in zip(xs, ys)]\n\
                    print(f([1.0, 2.0], [3.0, 4.0]))\n";
    assert_eq!(flat_length_checks(proven), 0);
    assert_eq!(flat_length_checks(unproven), 1);
    for (source, expected) in [(proven, "[2.0, 6.0, -1.0, -1.0]\n"), (unproven, "[3.0, 8.0]\n")] {
        let (out, error) = differential::run_source(source, Backend::Cpu);
        assert_eq!((out.as_str(), error), (expected, None));
    }
}

#[test]
fn one_flatten_has_one_length_while_its_source_keeps_its_value() {
    let same = "def f(xss: [[i32]]) -> [(i32, i32)]:\n\
                \x20   return zip(flatten(xss), flatten(xss))\n\
                print(f([[1], [2, 3]]))\n";
    assert_eq!(flat_length_checks(same), 0);
    let (out, error) = differential::run_source(same, Backend::Cpu);
    assert_eq!((out.as_str(), error), ("[(1, 1), (2, 2), (3, 3)]\n", None));
    // `xss` keeps its shape through the loop, and so does `b`, but not its value: the second
    // iteration's `flatten(xss)` is shorter than `a`.
    let rebound = "def f(xss: [[i32]]) -> i32:\n\
                   \x20   a = flatten(xss)\n\
                   \x20   b = zip(a, a)\n\
                   \x20   for _i in range(2):\n\
                   \x20       b = zip(a, flatten(xss))\n\
                   \x20       xss = [ys[1:] for ys in xss]\n\
                   \x20   return len(b)\n\
                   print(f([[1, 2], [3]]))\n";
    assert_eq!(flat_length_checks(rebound), 1);
    let (_, interp) = differential::run_source(rebound, Backend::Interp);
    let (_, cpu) = differential::run_source(rebound, Backend::Cpu);
    assert_eq!(interp.as_ref().map(|e| e.0.as_str()), Some("E0403"));
    assert_eq!(cpu, interp);
}
