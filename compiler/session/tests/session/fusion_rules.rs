//! Structure tests of fusion plans, in the manner of Futhark's: for each rule, the kernels a
//! small program gets, and that the fused program still prints what the interpreter prints
//! (on the CPU executor, and on the GPU executor where there is an adapter; with
//! `WEFT_REQUIRE_GPU=1` a missing adapter is a failure).

use weft_analysis::pipeline::{self, Options};
use weft_analysis::{Database, SourceFile};
use weft_core::types::Scalar;
use weft_flat::fuse::plan::{FusionPlan, PlanKernel};
use weft_flat::fuse::{PORTABLE_BINDINGS, Strategy, fuse};
use weft_flat::ir::{self, IrType, Op, VarInfo};
use weft_session::Backend;

fn options(strategy: Strategy, max_bindings: u32) -> Options {
    let mut options = Options::default();
    options.fusion.strategy = strategy;
    options.fusion.max_bindings = max_bindings;
    options
}

fn plan_of(source: &str, strategy: Strategy) -> FusionPlan {
    plan_within(source, strategy, PORTABLE_BINDINGS)
}

fn plan_within(source: &str, strategy: Strategy, max_bindings: u32) -> FusionPlan {
    let db = Database::default();
    let file = SourceFile::new(&db, "rule.weft".into(), source.into());
    pipeline::fusion_plan(&db, file, options(strategy, max_bindings)).expect("compiles").clone()
}

/// The op names of a kernel (`binary*`, `reduce.add`, ...).
fn ops(kernel: &PlanKernel) -> Vec<String> {
    kernel.ops.iter().map(|op| op.op.rsplit(" = ").next().unwrap_or(&op.op).to_string()).collect()
}

/// The one kernel that runs `op`.
fn kernel_with<'p>(plan: &'p FusionPlan, op: &str) -> &'p PlanKernel {
    let found: Vec<&PlanKernel> = plan.kernels.iter().filter(|k| ops(k).iter().any(|o| o == op)).collect();
    assert_eq!(found.len(), 1, "one kernel runs {op}:\n{}", plan.to_text());
    found[0]
}

struct Host(String);

impl weft_exec::interp::Host for Host {
    fn print(&mut self, line: &str) {
        self.0.push_str(line);
    }

    /// A chart as its data, so that executors are compared on what they would draw.
    fn draw(&mut self, chart: weft_exec::chart::Chart) {
        self.0.push_str(&format!("{chart:?}\n"));
    }

    fn read_file(&mut self, _: &str) -> std::io::Result<Vec<u8>> {
        Err(std::io::Error::other("no files here"))
    }
}

fn gpu_available() -> bool {
    match weft_gpu::shared_gpu() {
        Ok(_) => true,
        Err(e) if std::env::var("WEFT_REQUIRE_GPU").is_ok_and(|v| v == "1") => {
            panic!("WEFT_REQUIRE_GPU=1 but there is no GPU: {}", e.0)
        }
        Err(e) => {
            eprintln!(
                "skipped on the gpu: no adapter ({}); set WEFT_REQUIRE_GPU=1 to make this a failure",
                e.0
            );
            false
        }
    }
}

/// Numbers equal within a relative 1e-4, the rest of the text exactly.
fn same_output(a: &str, b: &str) -> bool {
    let split = |s: &str| -> Vec<String> {
        s.split(|c: char| c.is_whitespace() || "[](),:".contains(c))
            .filter(|t| !t.is_empty())
            .map(String::from)
            .collect()
    };
    let (x, y) = (split(a), split(b));
    x.len() == y.len()
        && x.iter().zip(&y).all(|(p, q)| {
            p == q
                || matches!((p.parse::<f64>(), q.parse::<f64>()), (Ok(u), Ok(v)) if (u - v).abs() <= 1e-4 * u.abs().max(v.abs()).max(1.0))
        })
}

/// The fused program prints what the interpreter prints, on both executors.
fn runs_like_the_interpreter(source: &str) {
    let run = |backend: Backend, strategy: Strategy| {
        let db = Database::default();
        let file = SourceFile::new(&db, "rule.weft".into(), source.into());
        let mut host = Host(String::new());
        match weft_session::run_file(&db, file, backend, options(strategy, PORTABLE_BINDINGS), &mut host) {
            Ok(_) => host.0,
            Err(_) => panic!("{source}\nfails on {backend:?}"),
        }
    };
    let expected = run(Backend::Interp, Strategy::Ilp);
    let mut backends = vec![Backend::Cpu];
    if gpu_available() {
        backends.push(Backend::Gpu);
    }
    for backend in backends {
        for strategy in [Strategy::None, Strategy::Greedy, Strategy::Ilp] {
            let actual = run(backend, strategy);
            assert!(same_output(&expected, &actual), "{backend:?} {strategy:?}:\n{expected}\nvs\n{actual}");
        }
    }
}

#[test]
fn map_into_map_is_one_kernel() {
    let source = "ys = [x * 2.0 + 1.0 for x in random_f32(5000, 1)]\nprint(ys[0], ys[4999])\n";
    let plan = plan_of(source, Strategy::Ilp);
    let kernel = kernel_with(&plan, "binary+");
    assert_eq!(kernel.pattern, "map");
    assert_eq!(ops(kernel), ["iota", "random_f32", "binary*", "binary+"]);
    assert!(kernel.inputs.is_empty(), "{:?}", kernel.inputs);
    assert_eq!(kernel.outputs.len(), 1, "only ys is written: {:?}", kernel.outputs);
    runs_like_the_interpreter(source);
}

#[test]
fn map_into_reduce_is_one_kernel_that_writes_nothing_but_the_sum() {
    let source = "print(sum([x * x for x in random_f32(10000, 2)]))\n";
    let plan = plan_of(source, Strategy::Ilp);
    assert_eq!(plan.kernels.len(), 1, "{}", plan.to_text());
    let kernel = &plan.kernels[0];
    assert_eq!(kernel.pattern, "map_reduce");
    assert_eq!(ops(kernel), ["iota", "random_f32", "binary*", "reduce.add"]);
    assert_eq!(kernel.outputs.iter().map(|b| b.bytes.as_str()).collect::<Vec<_>>(), ["4"]);
    runs_like_the_interpreter(source);
}

#[test]
fn map_into_gather_fuses_the_index_computation_but_not_the_gathered_source() {
    let source = "xs = [f32(i) for i in range(500)]\n\
                  idx = [(i * 7) % 500 for i in range(3000)]\n\
                  print(sum(gather(xs, idx)))\n";
    let plan = plan_of(source, Strategy::Ilp);
    let kernel = kernel_with(&plan, "gather");
    for op in ["binary*", "binary%", "gather", "reduce.add"] {
        assert!(ops(kernel).iter().any(|o| o == op), "{op} in {:?}", ops(kernel));
    }
    let producer = kernel_with(&plan, "cast.f32");
    assert_ne!(producer.name, kernel.name, "xs is gathered at any index, so it is stored");
    let apart = plan.unfused.iter().find(|u| u.from_kernel == producer.name && u.to_kernel == kernel.name);
    assert_eq!(apart.map(|u| u.constraint.as_str()), Some("random-access"), "{}", plan.to_text());
    runs_like_the_interpreter(source);
}

#[test]
fn independent_reductions_of_one_vector_share_a_kernel() {
    let source = "xs = random_f32(8000, 3)\nprint(sum(xs), product([1.0 + x / 8000.0 for x in xs]))\n";
    let plan = plan_of(source, Strategy::Ilp);
    let kernel = kernel_with(&plan, "reduce.add");
    assert!(ops(kernel).iter().any(|o| o == "reduce.mul"), "{}", plan.to_text());
    assert_eq!(plan.kernels.len(), 1, "{}", plan.to_text());
    runs_like_the_interpreter(source);
}

#[test]
fn a_filter_into_a_reduction_becomes_a_select_in_the_reductions_kernel() {
    let source = "print(sum([x for x in random_f32(6000, 4) if x > 0.5]))\n";
    let plan = plan_of(source, Strategy::Ilp);
    assert_eq!(plan.rewrites.len(), 1, "{}", plan.to_text());
    assert_eq!(plan.kernels.len(), 1, "{}", plan.to_text());
    assert!(ops(&plan.kernels[0]).iter().any(|o| o == "select"));
    let unfused = plan_of(source, Strategy::None);
    assert!(unfused.kernels.iter().any(|k| k.pattern == "pack"), "without fusion the filter packs");
    runs_like_the_interpreter(source);
}

#[test]
fn a_filter_of_a_filter_packs_once() {
    let source = "xs = [(i * 7) % 100 for i in range(5000)]\n\
                  ys = [x for x in xs if x > 10]\n\
                  zs = [y * 2 for y in ys if y % 3 == 0]\n\
                  print(len(zs), zs[0:5], sum(zs))\n";
    let packs = |plan: &FusionPlan| plan.kernels.iter().filter(|k| k.pattern == "pack").count();
    let plan = plan_of(source, Strategy::Ilp);
    assert!(plan.rewrites.iter().any(|r| r.op == "filter -> filter"), "{}", plan.to_text());
    assert_eq!(packs(&plan), 1, "{}", plan.to_text());
    // Both filters' conditions are one map, which the pack reads.
    let conditions = kernel_with(&plan, "binary>");
    assert!(ops(conditions).iter().any(|o| o == "binary=="), "{}", plan.to_text());
    assert_eq!(packs(&plan_of(source, Strategy::None)), 2, "without fusion each filter packs");
    runs_like_the_interpreter(source);
}

#[test]
fn a_filter_of_tuples_whose_condition_reads_one_field_keeps_the_fields_in_step() {
    // One pack per field: merging the filters for one field's pack would leave the other
    // field's pack with the first filter's shorter result under the merged, longer flags.
    let source = "pairs = [(i % 3 - 1, i % 5 - 2) for i in range(40)]\n\
                  ps = [p for p in pairs if p[1] > -2]\n\
                  print([q for q in ps if q[0] > 0])\n";
    runs_like_the_interpreter(source);
}

#[test]
fn a_filter_whose_condition_may_fail_on_dropped_elements_still_packs_twice() {
    // `100 // x` is defined only where the first filter keeps `x`.
    let source = "xs = [i % 5 for i in range(1000)]\n\
                  ys = [x for x in xs if x != 0]\n\
                  print([y for y in ys if 100 // y > 30][0:4])\n";
    let plan = plan_of(source, Strategy::Ilp);
    assert!(plan.rewrites.iter().all(|r| r.op != "filter -> filter"), "{}", plan.to_text());
    assert_eq!(plan.kernels.iter().filter(|k| k.pattern == "pack").count(), 2, "{}", plan.to_text());
    runs_like_the_interpreter(source);
}

#[test]
fn checks_fuse_with_the_ops_they_guard() {
    let source = "xs = random_f32(4000, 5)\n\
                  idx = [(i * 13) % 4000 for i in range(4000)]\n\
                  print(sum([xs[j] for j in idx]))\n";
    let plan = plan_of(source, Strategy::Ilp);
    // The check runs in the kernel that computes the indexes it checks.
    let kernel = kernel_with(&plan, "check.index_in_range");
    assert!(ops(kernel).iter().any(|o| o == "binary%"), "{}", plan.to_text());
    runs_like_the_interpreter(source);
}

#[test]
fn map_into_scan_computes_the_scans_input_in_its_first_pass() {
    let source = "xs = [x * 3.0 for x in random_f32(20000, 6)]\nys = scan(lambda a, b: a + b, xs)\nprint(ys[0], ys[19999])\n";
    let plan = plan_of(source, Strategy::Ilp);
    let scan = kernel_with(&plan, "seg_scan.add");
    assert!(scan.pattern.starts_with("map_"), "{}", plan.to_text());
    for op in ["random_f32", "binary*"] {
        assert!(ops(scan).iter().any(|o| o == op), "{op} in {:?}", ops(scan));
    }
    runs_like_the_interpreter(source);
}

#[test]
fn segmented_reductions_take_their_producers_into_their_first_pass() {
    let source = "rows = [[f32(i * j) for j in range(i % 7)] for i in range(3000)]\n\
                  sums = [sum([x * 0.5 + 1.0 for x in row]) for row in rows]\n\
                  print(sums[0], sums[6], sums[2999])\n";
    // The segmented passes bind the descriptor's arrays too: more than WebGPU's minimum of 8.
    let plan = plan_within(source, Strategy::Ilp, 16);
    let kernel = kernel_with(&plan, "seg_reduce.add");
    assert_eq!(kernel.pattern, "map_segmented", "{}", plan.to_text());
    assert!(ops(kernel).iter().any(|o| o == "binary*"), "{}", plan.to_text());
    runs_like_the_interpreter(source);
}

#[test]
fn an_op_with_no_fused_form_is_kept_apart_with_the_reason() {
    let source = "xs = [x * 3.0 for x in random_f32(50, 6)]\nprint([x for x in xs if x > 1.5])\n";
    let plan = plan_of(source, Strategy::Ilp);
    let pack = kernel_with(&plan, "pack");
    let apart =
        plan.unfused.iter().find(|u| u.to_kernel == pack.name).expect("the map is kept apart from the pack");
    assert_eq!(apart.constraint, "no-fused-form");
    assert!(apart.reason.contains("pack"), "{}", apart.reason);
    runs_like_the_interpreter(source);
}

#[test]
fn no_fusion_is_one_kernel_per_device_op() {
    let source = "print(sum([x * x + 1.0 for x in random_f32(1000, 7)]))\n";
    let plan = plan_of(source, Strategy::None);
    assert!(plan.kernels.iter().all(|k| k.ops.len() == 1), "{}", plan.to_text());
    assert_eq!(plan.kernels.len(), 5, "iota, random, *, +, sum:\n{}", plan.to_text());
    assert!(plan.unfused.iter().all(|u| u.constraint == "strategy" || u.constraint == "no-fused-form"));
}

#[test]
fn the_plan_serialises_with_its_schema_version_and_renders_every_view() {
    let source = "print(sum([x * x for x in random_f32(1000, 8)]))\n";
    let plan = plan_of(source, Strategy::Ilp);
    let json: serde_json::Value = serde_json::from_str(&plan.to_json()).expect("valid json");
    assert_eq!(json["schema"], 1);
    assert_eq!(json["kernels"][0]["name"], "k0_map_reduce");
    assert_eq!(json["kernels"][0]["ops"][0]["line"], 1);
    assert_eq!(json["regions"][0]["solver"]["proved_optimal"], true);
    assert!(plan.to_dot().starts_with("digraph fusion {"));
    assert!(weft_session::figure::fusion_graph(&plan).contains("k0_map_reduce"));
    assert!(plan.to_text().contains("proved optimal"));
}

/// A region built by hand: `a = select(s, x, y)` (reading three inputs), `b = i64(a)`,
/// `c = b + d` with `c` the result. Within 5 bindings, `{a, b, c}` is too many (6); `{a, b}`
/// and `{b, c}` both fit. Greedy fuses the first pair it meets, `{a, b}`, and stores the
/// 8-byte `b`; the ILP sees that fusing `{b, c}` stores the 4-byte `a` instead.
#[test]
fn the_ilp_beats_greedy_on_bytes_moved() {
    let var = |name: &str, kind: IrType| VarInfo { name: name.into(), ty: kind };
    let vars = vec![
        var("s", IrType::vector(Scalar::Bool)),
        var("x", IrType::vector(Scalar::I32)),
        var("y", IrType::vector(Scalar::I32)),
        var("d", IrType::vector(Scalar::I64)),
        var("a", IrType::vector(Scalar::I32)),
        var("b", IrType::vector(Scalar::I64)),
        var("c", IrType::vector(Scalar::I64)),
    ];
    let op = |dest: u32, op: Op| ir::Stmt {
        kind: ir::StmtKind::Op { dest: Some(dest), op },
        span: Default::default(),
    };
    let body = ir::Block {
        stmts: vec![
            op(4, Op::Select(0, 1, 2)),
            op(5, Op::Cast(Scalar::I64, 4)),
            op(6, Op::Binary(weft_core::BinaryOp::Add, 5, 3)),
        ],
        results: vec![6],
    };
    let f = ir::Function { name: "g".into(), params: vec![0, 1, 2, 3], vars, body };
    let program = ir::Program { functions: vec![f], main: 0, schedules: vec![] };
    let bytes = |strategy: Strategy| {
        let (fused, plan) = fuse(&program, weft_flat::fuse::Options { strategy, max_bindings: 5 });
        ir::check(&fused, "fuse").expect("the fused program checks");
        let per_element: u64 = plan
            .kernels
            .iter()
            .flat_map(|k| k.inputs.iter().chain(&k.outputs))
            .map(|b| {
                b.bytes.split('*').next().and_then(|n| n.parse::<u64>().ok()).expect("bytes per element")
            })
            .sum();
        (plan.kernels.len(), per_element)
    };
    let (greedy_kernels, greedy_bytes) = bytes(Strategy::Greedy);
    let (ilp_kernels, ilp_bytes) = bytes(Strategy::Ilp);
    assert_eq!((greedy_kernels, ilp_kernels), (2, 2));
    assert!(ilp_bytes < greedy_bytes, "ilp moves {ilp_bytes} bytes per element, greedy {greedy_bytes}");
    assert_eq!((greedy_bytes, ilp_bytes), (44, 36));
}
