//! Flattening, checked on the IR itself: the shape of the code for comprehensions and
//! conditionals, and the IR checker on every sample.

use expect_test::expect;

use weft_analysis::pipeline::{self, Options};
use weft_analysis::{Database, SourceFile};
use weft_flat::ir::{self, Op, StmtKind};

fn flat(source: &str) -> ir::Program {
    let db = Database::default();
    let file = SourceFile::new(&db, "test.weft".to_string(), source.to_string());
    pipeline::flat_program(&db, file, Default::default())
        .unwrap_or_else(|d| panic!("does not flatten: {d:#?}"))
        .clone()
}

fn op_names(program: &ir::Program) -> Vec<String> {
    program.functions.iter().flat_map(ops).map(|op| op.name()).collect()
}

/// A function's ops, nested blocks and kernels included, in order.
fn ops(function: &ir::Function) -> Vec<Op> {
    fn walk(block: &ir::Block, out: &mut Vec<Op>) {
        for stmt in &block.stmts {
            match &stmt.kind {
                StmtKind::Op { op, .. } => out.push(op.clone()),
                StmtKind::Kernel(kernel) => {
                    walk(&ir::Block { stmts: kernel.body.clone(), results: vec![] }, out)
                }
                StmtKind::If { then, otherwise, .. } => {
                    walk(then, out);
                    walk(otherwise, out);
                }
                StmtKind::While { cond, body, .. } | StmtKind::ElementLoop { cond, body, .. } => {
                    walk(cond, out);
                    walk(body, out);
                }
                StmtKind::Call { .. } | StmtKind::Print { .. } => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(&function.body, &mut out);
    out
}

/// For each segment layout (`seg_ids`) of the function named `name`, how many collections it
/// names as lying in (`within`).
fn layouts_within(program: &ir::Program, name: &str) -> Vec<usize> {
    let function = program.functions.iter().find(|f| f.name == name).expect("the function");
    ops(function)
        .iter()
        .filter_map(|op| match op {
            Op::SegIds { within, .. } => Some(within.len()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_recursion_names_the_collections_its_layouts_lie_in() {
    // Quicksort's segments never overlap: its arguments are filters' results laid side by
    // side, its results a concatenation's and the base case's own. Each of its three layouts a
    // level (the filters' context, the two concatenations) is bounded by the sizes of the
    // collections its segments lie in, which a GPU allocates by instead of reading a total.
    let program = flat(
        &std::fs::read_to_string(
            crate::common::differential::workspace_root().join("samples/quicksort.weft"),
        )
        .expect("the sample"),
    );
    assert_eq!(layouts_within(&program, "quicksort[f32]^"), vec![1, 2, 2]);
}

#[test]
fn a_recursion_whose_arguments_overlap_bounds_no_layout_by_them() {
    // Both halves are one slice of `xs`, bound once: the recursive call's arguments share their
    // elements, so `f`'s segments may overlap. Flattening first takes them to be disjoint,
    // finds the call that breaks it, and flattens again without: no layout in `f^` names a
    // bound, and the CPU executor, which checks every bound it is given, runs it as the
    // interpreter does. (Two slices written apart would be copied side by side by the list.)
    let source = "def f(xs):\n    if len(xs) < 2:\n        return xs\n    a = xs[0:len(xs) // 2]\n    parts = [f(p) for p in [a, a]]\n    return concat(parts[0], parts[1])\nprint(f([1, 2, 3, 4, 5, 6, 7]))\n";
    assert_eq!(unbounded_and_as_interpreted(source, "f[i32]^"), "[1, 1, 1, 1]\n");
}

/// Asserts that no layout in `function` of `source` names a bound, and that the CPU executor,
/// which checks every bound it is given, prints what the interpreter prints; gives that.
fn unbounded_and_as_interpreted(source: &str, function: &str) -> String {
    let within = layouts_within(&flat(source), function);
    assert!(!within.is_empty() && within.iter().all(|&n| n == 0), "{within:?}");
    let (expected, _) = crate::common::differential::run_source(source, weft_session::Backend::Interp);
    let (actual, _) = crate::common::differential::run_source(source, weft_session::Backend::Cpu);
    assert_eq!(actual, expected);
    expected
}

#[test]
fn a_recursion_that_shares_its_argument_between_calls_bounds_its_layouts_by_the_repeats() {
    // Quickhull passes the points left of a segment to both halves of it: each segment of
    // `hull_side`'s `points` is repeated twice, so its layout lies within twice the points'
    // collection (`SeqRep::repeats`), which a GPU allocates by instead of reading a total.
    // The filter's layout is bounded once, and the concatenation of the two halves' results
    // (assumed repeated as the arguments are) four times.
    let quickhull =
        std::fs::read_to_string(crate::common::differential::workspace_root().join("samples/quickhull.weft"))
            .expect("the sample");
    assert_eq!(layouts_within(&flat(&quickhull), "hull_side^"), vec![2, 1, 4]);
    // A recursion that passes its argument on unchanged to two calls repeats it twice as
    // often at every level: no number of repeats holds, so flattening ends with none assumed
    // and no layout bounded by it, and the CPU executor, which checks every bound it is
    // given, prints what the interpreter prints.
    let source = "def g(xs, d):\n    if d == 0:\n        return [len(xs)]\n    parts = [g(xs, d - 1) for k in [0, 1]]\n    return concat(concat(parts[0], [sum(xs)]), parts[1])\nprint(g([1, 2, 3], 5))\n";
    let expected = unbounded_and_as_interpreted(source, "g[i32]^");
    assert!(expected.starts_with("[3, 6, 3, 6, 3, 6"), "{expected}");
}

/// How many host loops, element loops and calls a program holds, nested blocks included.
fn control(program: &ir::Program) -> (usize, usize, usize) {
    fn walk(block: &ir::Block, out: &mut (usize, usize, usize)) {
        for stmt in &block.stmts {
            match &stmt.kind {
                StmtKind::If { then, otherwise, .. } => {
                    walk(then, out);
                    walk(otherwise, out);
                }
                StmtKind::While { cond, body, .. } => {
                    out.0 += 1;
                    walk(cond, out);
                    walk(body, out);
                }
                StmtKind::ElementLoop { .. } => out.1 += 1,
                StmtKind::Call { .. } => out.2 += 1,
                StmtKind::Op { .. } | StmtKind::Print { .. } | StmtKind::Kernel(_) => {}
            }
        }
    }
    let mut out = (0, 0, 0);
    for f in &program.functions {
        walk(&f.body, &mut out);
    }
    out
}

#[test]
fn a_scalar_loop_inside_parallel_code_is_one_element_loop() {
    let program = flat(
        "def steps(n: i32) -> i32:\n    k = 0\n    while n != 1:\n        n = n // 2 if n % 2 == 0 else 3 * n + 1\n        k += 1\n    return k\nprint([steps(x) for x in [1, 6, 27]])\n",
    );
    assert_eq!(control(&program), (0, 1, 0), "{program}");
    let schedules: Vec<ir::Schedule> = program.schedules.iter().map(|(_, s)| *s).collect();
    assert_eq!(schedules, [ir::Schedule::SequentialInEachElement]);
}

#[test]
fn a_loop_with_parallel_work_inside_parallel_code_is_a_host_loop_over_the_running_elements() {
    let program = flat(
        "def shrink(xs: [i32]) -> [i32]:\n    while len(xs) > 2:\n        xs = [x + 1 for x in xs[1:]]\n    return xs\nprint([shrink(xs) for xs in [[1, 2, 3], [4]]])\n",
    );
    assert_eq!(control(&program), (1, 0, 0), "{program}");
    assert!(op_names(&program).iter().any(|op| op == "pack"), "the running elements are packed");
    let schedules: Vec<ir::Schedule> = program.schedules.iter().map(|(_, s)| *s).collect();
    assert_eq!(schedules, [ir::Schedule::RoundsOverRunningElements]);
}

#[test]
fn an_inner_reduction_is_flat_on_the_cpu_and_guarded_on_a_gpu() {
    let source =
        "rows = [range(i % 5) for i in range(100)]\nprint([sum([x * x for x in row]) for row in rows])\n";
    let schedules = |p: &ir::Program| p.schedules.iter().map(|(_, s)| *s).collect::<Vec<_>>();
    let cpu = flat(source);
    assert_eq!(schedules(&cpu), [ir::Schedule::SegmentedReduction]);
    assert_eq!(control(&cpu), (0, 0, 0), "{cpu}");
    let db = Database::default();
    let file = SourceFile::new(&db, "test.weft".to_string(), source.to_string());
    let options = Options::portable_gpu();
    let gpu = &pipeline::fused_program(&db, file, options).expect("flattens").program;
    assert_eq!(schedules(gpu), [ir::Schedule::GuardedReduction]);
    // One host `If` on the estimate: the element loop in one arm, the flat code in the other.
    assert_eq!(control(gpu), (0, 1, 0), "{gpu}");
    let text = gpu.to_string();
    assert!(text.contains("seg_reduce"), "the flat arm: {text}");
}

#[test]
fn a_recursive_function_is_one_lifted_function() {
    let program = flat(
        "def depth(xs: [i32]) -> i32:\n    if len(xs) < 2:\n        return 0\n    h = len(xs) // 2\n    return max(depth(xs[:h]), depth(xs[h:])) + 1\nprint(depth([1, 2, 3, 4, 5]))\n",
    );
    let names: Vec<&str> = program.functions.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["main", "depth^"]);
    // One call from the top level, two recursive ones, each behind its emptiness test.
    assert_eq!(control(&program), (0, 0, 3), "{program}");
    let schedules: Vec<ir::Schedule> = program.schedules.iter().map(|(_, s)| *s).collect();
    assert_eq!(schedules, [ir::Schedule::OneCallPerLevel, ir::Schedule::OneCallPerLevel]);
    assert!(
        program.to_string().contains("recursion, flat, one call per level"),
        "`weft ir` shows the record"
    );
}

#[test]
fn a_comprehension_is_one_element_wise_op_per_scalar_operation() {
    let program = flat("xs = [1, 2, 3]\nprint([x * 2 + 1 for x in xs])\n");
    expect![[r#"
        fn#0 main() =
          c%0: i32 = const(1) @6..7
          c%1: i32 = const(2) @9..10
          c%2: i32 = const(3) @12..13
          c%4: i32 = const(0) @5..14
          concat%5: [i32] = concat(c%0, c%1, c%2) @5..14
          t%8: [i32] = binary*(concat%5, c%1) @22..27
          t%10: [i32] = binary+(t%8, c%0) @22..31
          print c%4, c%2, t%10: [i32] @15..45
          => ()
    "#]]
    .assert_eq(&program.to_string());
}

#[test]
fn a_conditional_that_can_fail_runs_each_arm_on_its_own_elements() {
    let split = op_names(&flat("xs = [0, 1, 2]\nprint([10 // x if x != 0 else 0 for x in xs])\n"));
    assert!(split.iter().filter(|n| *n == "pack").count() == 2, "{split:?}");
    // The arms' indexes are packs of one `iota`: the merge's scatters know them distinct.
    assert!(split.iter().filter(|n| *n == "scatter.distinct").count() == 2, "{split:?}");
    let select = op_names(&flat("xs = [0, 1, 2]\nprint([x * 2 if x != 0 else 0 for x in xs])\n"));
    assert!(select.iter().any(|n| n == "select") && !select.iter().any(|n| n == "pack"), "{select:?}");
}

#[test]
fn a_free_sequence_is_read_in_place() {
    // `xs` is uniform in the comprehension: its elements are gathered at the read indexes,
    // never replicated per element.
    let names = op_names(&flat("xs = [5, 6, 7]\nidx = [2, 0]\nprint([xs[i] for i in idx])\n"));
    assert!(!names.iter().any(|n| n == "replicate"), "{names:?}");
    assert!(names.iter().any(|n| n == "gather"), "{names:?}");
    assert!(names.iter().any(|n| n == "check.index_in_range"), "{names:?}");
}

#[test]
fn every_flattened_sample_passes_the_ir_checker() {
    let root = crate::common::workspace_root();
    let mut checked = 0;
    for entry in std::fs::read_dir(root.join("samples")).expect("samples") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "weft") {
            continue;
        }
        let db = Database::default();
        let file =
            SourceFile::new(&db, path.display().to_string(), std::fs::read_to_string(&path).expect("text"));
        if let Ok(program) = pipeline::flat_program(&db, file, Default::default()) {
            ir::check(program, "test").unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(program.op_count() > 0);
            checked += 1;
        }
    }
    assert!(checked >= 14, "only {checked} samples flatten");
}

#[test]
fn the_checker_names_the_pass_that_broke_the_program() {
    let mut program = flat("xs = [1, 2]\nprint(sum(xs))\n");
    // Make an op read a variable that is defined later.
    let main = &mut program.functions[0];
    if let StmtKind::Op { op, .. } = &mut main.body.stmts[0].kind {
        *op = Op::Length(main.vars.len() as u32 - 1);
    }
    let error = ir::check(&program, "fuse").expect_err("the broken program is rejected");
    assert!(error.contains("after `fuse`"), "{error}");
}

#[test]
fn filters_of_one_sequence_enter_it_once() {
    // Two comprehensions over each `xs`: after common-subexpression elimination, the items of
    // every `xs` are reached (segment ids, positions, gather) once, not once per filter; and
    // since only their lengths are read, the filtered items are never built.
    let names = op_names(&flat(
        "xss = [[1, 2, 3], [4]]\nprint([len([x for x in xs if x < 2]) + len([x for x in xs if x > 2]) for xs in xss])\n",
    ));
    let count = |name: &str| names.iter().filter(|n| *n == name).count();
    assert_eq!(count("seg_iota"), 1, "{names:?}");
    assert_eq!(count("pack"), 0, "{names:?}");
    // Each filter's counts come from its flags' running count.
    assert_eq!(count("scan.add"), 2, "{names:?}");
    assert_eq!(count("seg_reduce.add"), 0, "{names:?}");
}

#[test]
fn pieces_of_one_uniform_sequence_keep_no_bound_per_element() {
    // Each element partitions the same `data`: the pieces of all elements lie in one range of
    // it, so they overlap, and their layout must not be bounded by `data`'s size (the CPU
    // executor checks every bound it is given).
    let source = "data = [1, 2, 3, 4, 5, 6]\nns = [1, 2, 4]\nprint([[y * 10 for y in partition(data, [n, len(data) - n])[1]] for n in ns])\n";
    let (expected, _) = crate::common::differential::run_source(source, weft_session::Backend::Interp);
    let (actual, _) = crate::common::differential::run_source(source, weft_session::Backend::Cpu);
    assert_eq!(actual, expected);
    assert_eq!(expected, "[[20, 30, 40, 50, 60], [30, 40, 50, 60], [50, 60]]\n");
}
