//! Incrementality: an edit inside one function re-runs that function's queries (syntax, names, HIR,
//! types and shapes) and no other's, as long as its type scheme is unchanged.
//! The test counts query executions through the database's execution log.

use salsa::Setter;
use salsa::plumbing::AsId;
use weft_analysis::db::{Database, SourceFile};
use weft_analysis::file_diagnostics;
use weft_analysis::items::file_functions;

const FUNCTIONS: usize = 50;

fn generated_file(extra_line_in_first: bool) -> String {
    let mut res = String::new();
    for i in 0..FUNCTIONS {
        res.push_str(&format!("def f{i}(xs: [i32]) -> i32:\n"));
        if i == 0 && extra_line_in_first {
            res.push_str("    xs = [x + 1 for x in xs]\n");
        }
        res.push_str(&format!("    ys = [x * {i} for x in xs if x > 0]\n    return sum(ys)\n\n"));
    }
    res.push_str("print(f0([1, 2, 3]))\n");
    res
}

/// How many executions in `log` ran a query whose name starts with `query`.
fn count(log: &[String], query: &str) -> usize {
    log.iter().filter(|entry| entry.starts_with(&format!("{query}("))).count()
}

const PER_FUNCTION_QUERIES: &[&str] = &[
    "function_signature",
    "function_body",
    "function_names",
    "function_hir",
    "function_types",
    "function_shapes",
];

#[test]
fn editing_one_function_reruns_only_its_queries() {
    let (mut db, log) = Database::with_execution_log();
    let file = SourceFile::new(&db, "generated.weft".to_string(), generated_file(false));
    let before = file_diagnostics(&db, file).clone();
    let first_run = log.take();
    for query in PER_FUNCTION_QUERIES {
        assert_eq!(count(&first_run, query), FUNCTIONS, "{query} runs once per function at first");
    }

    file.set_text(&mut db).to(generated_file(true));
    let after = file_diagnostics(&db, file).clone();
    let second_run = log.take();
    let first_function = file_functions(&db, file)[0].as_id();
    for query in PER_FUNCTION_QUERIES {
        let reruns: Vec<&String> =
            second_run.iter().filter(|e| e.starts_with(&format!("{query}("))).collect();
        assert_eq!(reruns.len(), 1, "{query} re-ran for other functions: {reruns:?}");
    }
    // The one re-run is the edited function's.
    let expected = format!("function_names({first_function:?})");
    assert!(second_run.contains(&expected), "expected {expected} among {second_run:?}");
    // The file-level queries re-run, as they must: they read the whole text.
    assert_eq!(count(&second_run, "parsed_file"), 1);
    assert!(before.is_empty() && after.is_empty(), "{before:?} {after:?}");
}

#[test]
fn editing_top_level_statements_reruns_no_function_query() {
    let (mut db, log) = Database::with_execution_log();
    let file = SourceFile::new(&db, "generated.weft".to_string(), generated_file(false));
    file_diagnostics(&db, file);
    log.take();

    let edited = generated_file(false).replace("print(f0([1, 2, 3]))", "print(f1([4, 5]), f2([6]))");
    file.set_text(&mut db).to(edited);
    file_diagnostics(&db, file);
    let run = log.take();
    for query in PER_FUNCTION_QUERIES {
        assert_eq!(count(&run, query), 0, "{query} re-ran after a top-level edit: {run:?}");
    }
    assert_eq!(count(&run, "top_level_statement_names"), 1);
}

#[test]
fn a_new_top_level_name_no_function_mentions_reresolves_no_function() {
    let (mut db, log) = Database::with_execution_log();
    let file = SourceFile::new(&db, "generated.weft".to_string(), generated_file(false));
    file_diagnostics(&db, file);
    log.take();

    let edited = generated_file(false).replace("print(f0(", "pad = 1\nprint(pad, f0(");
    file.set_text(&mut db).to(edited);
    let diagnostics = file_diagnostics(&db, file).clone();
    let run = log.take();
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    assert_eq!(count(&run, "top_level_names"), 1, "the set of top-level names changed");
    for query in ["function_names", "function_hir", "function_types"] {
        assert_eq!(count(&run, query), 0, "{query} re-ran for a name no function mentions: {run:?}");
    }
}

#[test]
fn a_top_level_name_bound_later_is_seen_by_the_function_that_reads_it() {
    let (mut db, _log) = Database::with_execution_log();
    let text = "def f(x):\n    return x * scale\n\nprint(f(2))\n";
    let file = SourceFile::new(&db, "scale.weft".to_string(), text.to_string());
    let codes: Vec<&str> = file_diagnostics(&db, file).iter().map(|d| d.code.as_str()).collect();
    assert_eq!(codes, ["E0200"], "`scale` is unknown");
    file.set_text(&mut db).to(format!("scale = 3\n{text}"));
    assert!(file_diagnostics(&db, file).is_empty(), "{:?}", file_diagnostics(&db, file));
}

#[test]
fn renaming_a_function_is_seen_by_its_callers() {
    let (mut db, _log) = Database::with_execution_log();
    let text = "def g(x):\n    return x\n\ndef f(y):\n    return g(y)\n";
    let file = SourceFile::new(&db, "rename.weft".to_string(), text.to_string());
    assert!(file_diagnostics(&db, file).is_empty());
    file.set_text(&mut db).to(text.replace("def g(", "def h("));
    let codes: Vec<&str> = file_diagnostics(&db, file).iter().map(|d| d.code.as_str()).collect();
    assert_eq!(codes, ["E0200"], "the call to `g` is now unknown");
}

#[test]
fn diagnostics_of_untouched_functions_move_with_the_edit() {
    let (mut db, log) = Database::with_execution_log();
    let text = "def first(x):\n    return x\n\ndef last(y):\n    unused = 1\n    return y\n";
    let file = SourceFile::new(&db, "moving.weft".to_string(), text.to_string());
    let before = file_diagnostics(&db, file).clone();
    assert_eq!(before.len(), 1, "{before:?}");
    assert_eq!(&text[before[0].range], "unused");

    let inserted = "    x = x + 1\n";
    let edited = text.replacen("    return x\n", &format!("{inserted}    return x\n"), 1);
    file.set_text(&mut db).to(edited.clone());
    log.take();
    let after = file_diagnostics(&db, file).clone();
    assert_eq!(count(&log.take(), "function_names"), 1, "only `first` is resolved again");
    assert_eq!(after.len(), 1, "{after:?}");
    assert_eq!(after[0].range, before[0].range + rowan::TextSize::of(inserted));
    assert_eq!(&edited[after[0].range], "unused");
}

#[test]
fn changing_a_functions_type_reinfers_its_callers_and_nothing_else() {
    let (mut db, log) = Database::with_execution_log();
    let text = "def g(x: i32) -> i32:\n    return x\n\ndef f(y: i32) -> i32:\n    return g(y)\n\n\
                def h(z: i32) -> i32:\n    return z\n";
    let file = SourceFile::new(&db, "types.weft".to_string(), text.to_string());
    assert!(file_diagnostics(&db, file).is_empty());
    log.take();

    file.set_text(&mut db).to(text.replace("def g(x: i32) -> i32", "def g(x: f32) -> f32"));
    let diagnostics = file_diagnostics(&db, file).clone();
    let run = log.take();
    // g's new scheme reaches its caller f, which is now wrong; h does not call g.
    assert!(
        !diagnostics.is_empty() && diagnostics.iter().all(|d| d.code.as_str() == "E0300"),
        "{diagnostics:?}"
    );
    assert_eq!(count(&run, "function_types"), 2, "g and f only: {run:?}");
}

/// The fusion plan a fresh database makes of `text`, compared with `plan`: an edited
/// database's kept solves must give exactly what solving afresh gives.
fn assert_plan_is_fresh(plan: &weft_flat::fuse::plan::FusionPlan, name: &str, text: String) {
    use weft_analysis::pipeline::{Options, fused_program};
    let fresh = Database::default();
    let file = SourceFile::new(&fresh, name.to_string(), text);
    let expected = &fused_program(&fresh, file, Options::default()).expect("the program compiles").plan;
    assert_eq!(plan.kernels, expected.kernels, "{name}");
    assert_eq!(plan.unfused, expected.unfused, "{name}");
}

/// Functions whose loops differ in how many maps their bodies chain (so each loop body is a
/// region of its own kind), all called from the top level.
fn looping_file(extra_map_in_first: bool) -> String {
    let mut res = String::new();
    for i in 0..12 {
        res.push_str(&format!("def g{i}(xs: [f32]) -> f32:\n    total = 0.0\n    k = 0\n    while k < 3:\n"));
        res.push_str("        ys = [x + total for x in xs]\n");
        // The edit gives the first loop more maps than any other has: a body no loop had.
        let maps = if i == 0 && extra_map_in_first { 14 } else { i };
        for _ in 0..maps {
            res.push_str("        ys = [y * 2.0 for y in ys]\n");
        }
        res.push_str("        total = total + sum(ys)\n        k = k + 1\n    return total\n\n");
    }
    for i in 0..12 {
        res.push_str(&format!("print(g{i}([1.0, 2.0, 3.0]))\n"));
    }
    res
}

/// Fusion reuses solved components by content: after an edit inside one function's loop, only
/// the component whose statements changed (in the loop body) is solved again, and the plan is
/// the one a fresh database makes.
#[test]
fn an_edit_resolves_only_the_fusion_regions_it_changed() {
    use weft_analysis::db::Db;
    use weft_analysis::pipeline::{Options, fused_program};
    let mut db = Database::default();
    let file = SourceFile::new(&db, "loops.weft".to_string(), looping_file(false));
    let first = fused_program(&db, file, Options::default()).expect("the program compiles").plan.clone();
    let solved = db.solve_cache().len();
    assert!(first.regions.len() >= 12, "a region per loop body at least: {}", first.regions.len());

    file.set_text(&mut db).to(looping_file(true));
    let edited = fused_program(&db, file, Options::default()).expect("the program compiles").plan.clone();
    let new_solves = db.solve_cache().len() - solved;
    assert_eq!(new_solves, 1, "components solved again after a one-loop edit");
    assert_plan_is_fresh(&edited, "loops.weft", looping_file(true));
}

/// A top level of independent chains of maps ending in a sum, each over its own input; chain
/// `i` has `2 + i % 5` maps, or 9 for the chain `longer`.
fn chains_file(longer: Option<usize>) -> String {
    let mut res = String::new();
    for i in 0..40 {
        res.push_str(&format!("xs{i} = [1.0, 2.0, {i}.0]\n"));
        let maps = if longer == Some(i) { 9 } else { 2 + i % 5 };
        res.push_str(&format!("ys{i} = [x * 2.0 for x in xs{i}]\n"));
        for _ in 1..maps {
            res.push_str(&format!("ys{i} = [y + 1.0 for y in ys{i}]\n"));
        }
        res.push_str(&format!("print(sum(ys{i}))\n"));
    }
    res
}

/// The top level is one region however long the file, and non-recursive functions are inlined
/// into it, so an edit there must not solve it whole again: only the components of candidate
/// pairs it changed are solved, and the plan is the one a fresh database makes.
#[test]
fn a_top_level_edit_resolves_only_the_components_it_changed() {
    use weft_analysis::db::Db;
    use weft_analysis::pipeline::{Options, fused_program};
    let mut db = Database::default();
    let file = SourceFile::new(&db, "chains.weft".to_string(), chains_file(None));
    let first = fused_program(&db, file, Options::default()).expect("the program compiles").plan.clone();
    // One component per shape of chain: the chains of equal length share a solve.
    assert_eq!(db.solve_cache().len(), 5, "{:?}", first.regions);

    file.set_text(&mut db).to(chains_file(Some(17)));
    let edited = fused_program(&db, file, Options::default()).expect("the program compiles").plan.clone();
    assert_eq!(db.solve_cache().len(), 6, "only the edited chain's component is solved again");
    assert_plan_is_fresh(&edited, "chains.weft", chains_file(Some(17)));
    let chains = edited.kernels.iter().filter(|k| k.pattern == "map_reduce").count();
    assert_eq!(chains, 40, "each chain's maps and sum are one kernel");
}

/// A kept component gives exactly the kernels a fresh solve gives, whatever was solved before
/// it: planning the samples and the run and specialisation corpora one after another in one
/// database (so each program meets the components kept from every earlier one), in program
/// order and reversed, gives each program the plan a fresh database gives it.
#[test]
fn kept_components_give_the_plans_a_fresh_database_gives() {
    use weft_analysis::pipeline::{Options, fused_program};
    let programs = crate::common::weft_programs(&[
        "samples",
        "compiler/tests/data/run",
        "compiler/tests/data/specialise",
    ]);
    let plan = |db: &Database, path: &std::path::Path| {
        let text = std::fs::read_to_string(path).expect("a test program");
        let file = SourceFile::new(db, path.display().to_string(), text);
        fused_program(db, file, Options::portable_gpu()).ok().map(|fused| fused.plan.clone())
    };
    let fresh: Vec<_> = programs.iter().map(|path| plan(&Database::default(), path)).collect();
    let compiled = fresh.iter().filter(|p| p.is_some()).count();
    assert!(compiled >= 30, "only {compiled} of {} programs compile", programs.len());
    for order in [false, true] {
        let shared = Database::default();
        let mut indices: Vec<usize> = (0..programs.len()).collect();
        if order {
            indices.reverse();
        }
        for i in indices {
            let (Some(kept), Some(expected)) = (plan(&shared, &programs[i]), &fresh[i]) else { continue };
            let name = programs[i].display();
            assert_eq!(kept.kernels, expected.kernels, "{name}, reversed: {order}");
            assert_eq!(kept.unfused, expected.unfused, "{name}, reversed: {order}");
        }
    }
}

/// The reduction `r` feeds `u`, which fuses with `s` (siblings over `src`), and `s` feeds `p`:
/// so a path leads from `r` back to `p` through that kernel, and `p`, `r` and `w` (siblings
/// over `q`) cannot all share one. With `u` made independent of `r`, they can.
fn backward_path_file(u_reads_r: bool) -> String {
    let u = if u_reads_r { "[v * r for v in src]" } else { "[v * 2.0 for v in src]" };
    format!(
        "src = [1.0, 2.0, 3.0]\nq = [4.0, 5.0, 6.0]\ns = sum(src)\np = [v + s for v in q]\nr = sum(q)\n\
         w = [v - 1.0 for v in q]\nu = {u}\nprint(p)\nprint(r)\nprint(w)\nprint(u)\n"
    )
}

/// A component's key holds the paths that lead from a later statement back to an earlier one
/// through an earlier component's kernel: after the edit removes such a path, the kept
/// kernels of the first version are not reused, and the plan is the one a fresh database makes.
#[test]
fn a_path_back_through_an_earlier_kernel_is_part_of_the_key() {
    use weft_analysis::pipeline::{Options, fused_program};
    let mut db = Database::default();
    let file = SourceFile::new(&db, "back.weft".to_string(), backward_path_file(true));
    let before = fused_program(&db, file, Options::default()).expect("the program compiles").plan.clone();
    file.set_text(&mut db).to(backward_path_file(false));
    let edited = fused_program(&db, file, Options::default()).expect("the program compiles").plan.clone();
    assert_plan_is_fresh(&edited, "back.weft", backward_path_file(false));
    assert_ne!(before.kernels.len(), edited.kernels.len(), "the path back keeps one kernel apart");
}

/// Two recursive functions (each flattened into IR functions of its own) and a top level that
/// calls them; `edit` changes one place.
fn recursive_file(edit: RecursiveEdit) -> String {
    let sort = |name: &str, ty: &str, one: &str| {
        let lesser = match (edit, name) {
            (RecursiveEdit::InsideQs, "qs") => "[x * 1 for x in xs if x < pivot]",
            _ => "[x for x in xs if x < pivot]",
        };
        format!(
            "def {name}(xs: [{ty}]) -> [{ty}]:\n    if len(xs) < 2:\n        return xs\n    \
             pivot = xs[len(xs) // 2]\n    lesser = {lesser}\n    equal = [x for x in xs if x == pivot]\n    \
             greater = [x for x in xs if x > pivot]\n    parts = [{name}(part) for part in [lesser, greater]]\n    \
             return concat(concat(parts[0], equal), parts[1])\n\nprint({name}([{one}]))\n\n"
        )
    };
    let mut res = String::new();
    if edit == RecursiveEdit::LineAtTheTop {
        res.push_str("# a line that moves everything below it\n");
    }
    res.push_str(&sort("qs", "i32", "5, 3, 8, 1"));
    res.push_str(&sort("qs2", "f32", "2.5, -1.0, 0.0"));
    let last = if edit == RecursiveEdit::TopLevel { "[x + 1 for x in [1, 2, 3]]" } else { "[1, 2, 3]" };
    res.push_str(&format!("print(sum({last}))\n"));
    res
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RecursiveEdit {
    None,
    InsideQs,
    TopLevel,
    LineAtTheTop,
}

/// Each function instance's fusion is a query of its own, reading its IR with positions made
/// relative (ranks): an edit re-plans exactly the functions whose IR it changed (an edit inside `qs`
/// re-plans `qs`'s IR functions, one at the top level the top level's, and a line that only
/// moves text none), and the assembled program and plan are the ones fusing the whole program
/// gives, and a fresh database makes.
#[test]
fn an_edit_replans_only_the_functions_it_changed() {
    use weft_analysis::pipeline::{Options, flat_program, fused_program, fusion_plan};
    for (edit, replanned) in [
        (RecursiveEdit::InsideQs, vec!["qs"]),
        (RecursiveEdit::TopLevel, vec!["main"]),
        (RecursiveEdit::LineAtTheTop, vec![]),
    ] {
        let (mut db, log) = Database::with_execution_log();
        let file = SourceFile::new(&db, "recursive.weft".to_string(), recursive_file(RecursiveEdit::None));
        let before = fused_program(&db, file, Options::default()).expect("the program compiles");
        let functions = before.program.functions.len();
        assert_eq!(count(&log.take(), "fused_function"), functions, "each function is planned once at first");

        file.set_text(&mut db).to(recursive_file(edit));
        let fused = fused_program(&db, file, Options::default()).expect("the program compiles").clone();
        let edited = fused.plan.clone();
        let flat = flat_program(&db, file, Options::default().flatten).expect("the program compiles");
        // Assembled from the parts, kept and new, with their spans mapped back: what fusing the
        // whole program at once gives, statement spans and kernel names included (the plan as
        // `weft fusion` prints it: the solvers' times are not part of it).
        let whole = weft_flat::fuse::fuse(flat, Options::default().fusion);
        assert!(
            fused.program == whole.0 && fused.plan.to_json() == whole.1.to_json(),
            "{edit:?}: the parts differ from the whole"
        );
        let source_name = |name: &str| name.split(['^', '.', '[']).next().unwrap_or_default().to_string();
        let expected =
            flat.functions.iter().filter(|f| replanned.contains(&source_name(&f.name).as_str())).count();
        assert!(expected >= replanned.len(), "each of {replanned:?} has IR functions: {expected}");
        assert_eq!(count(&log.take(), "fused_function"), expected, "{edit:?} re-plans {replanned:?} only");
        assert_plan_is_fresh(&edited, "recursive.weft", recursive_file(edit));
        // What `weft fusion` and the editor get, assembled from the same parts without the
        // fused program: that plan, located in the text.
        let mut located = edited.clone();
        located.locate(&recursive_file(edit));
        let plan = fusion_plan(&db, file, Options::default()).expect("the program compiles");
        assert_eq!(plan.to_json(), located.to_json(), "{edit:?}: the editor's plan is the program's");
    }
}

/// The editor asks for the plan after every edit: it is assembled from the functions' parts
/// alone, and builds no fused program, which only an executor needs.
#[test]
fn the_plan_alone_builds_no_fused_program() {
    use weft_analysis::pipeline::{Options, fused_program, fusion_plan};
    let (db, log) = Database::with_execution_log();
    let file = SourceFile::new(&db, "recursive.weft".to_string(), recursive_file(RecursiveEdit::None));
    let plan = fusion_plan(&db, file, Options::default()).expect("the program compiles");
    assert!(!plan.kernels.is_empty(), "the plan has kernels");
    let taken = log.take();
    assert!(count(&taken, "fused_function") > 0, "the plan is made of the functions' parts");
    assert_eq!(count(&taken, "fused_query"), 0, "no fused program was built: {taken:?}");
    // The count above would see one: an executor's request builds it.
    fused_program(&db, file, Options::default()).expect("the program compiles");
    assert_eq!(count(&log.take(), "fused_query"), 1, "the fused program is built when asked for");
}
