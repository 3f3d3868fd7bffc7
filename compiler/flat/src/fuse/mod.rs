//! Fusion: which ops of the segmented IR run together as one GPU kernel.
//!
//! Each block's straight-line statements are one control region (Nessie fuses nothing across
//! control flow). In a region, `graph` finds the statements that can join a kernel, the index
//! space each works over and the candidate pairs; `solve` picks the kernels (none, greedy or
//! the integer linear program); this module rewrites the region so that each chosen group of
//! two or more ops is one `StmtKind::Kernel`, placed in a dependency order, and records the
//! whole choice as a `FusionPlan` (`plan`), which `weft fusion` and the editor show.
//!
//! Rules (producer -> consumer over one index space), after Nessie's compatibility table:
//! map -> map, map -> gather (a gather is a map that reads its source whole), map -> reduce,
//! map -> scan and map -> segmented reduction or scan (the scan's first pass computes its
//! input), check -> check, and horizontally any maps and reductions that read a common input.
//! A filter feeding a reduction (`sum` of a comprehension with `if`) is rewritten to a select
//! feeding the reduction (`rewrite`), which is map -> reduce. Everything else (packs, sorts,
//! segment descriptors) runs as its own primitive passes; the plan says so for each pair it
//! kept apart. `docs/fusion.md` has the rules and the formulation.

pub mod graph;
pub mod plan;
mod rewrite;
pub mod solve;

use std::collections::{BTreeMap, HashMap};

use rowan::TextRange;

use crate::ir::{Block, Function, FusedKernel, Program, Stmt, StmtKind, VarId};

use self::graph::{Region, Role};
use self::plan::{Buffer, FusionPlan, PlanKernel, PlanOp, RegionPlan, Unfused};
pub use self::solve::SolveCache;
use self::solve::{Clusters, SolverReport};

/// How kernels are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Strategy {
    /// One kernel per IR op.
    None,
    /// Greedy top-down: candidate pairs in program order, each fused when it can be.
    Greedy,
    /// Nessie's integer linear program, bounded by branch-and-bound nodes, with the greedy
    /// plan past the bound.
    #[default]
    Ilp,
}

impl Strategy {
    pub fn name(self) -> &'static str {
        match self {
            Strategy::None => "none",
            Strategy::Greedy => "greedy",
            Strategy::Ilp => "ilp",
        }
    }
}

/// What the plan is made for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Options {
    pub strategy: Strategy,
    /// Storage buffers one kernel may bind: the adapter's `max_storage_buffers_per_shader_stage`.
    pub max_bindings: u32,
}

/// WebGPU's guaranteed storage buffers per shader stage: a plan within it runs on every
/// adapter, so it is the default when no adapter is at hand.
pub const PORTABLE_BINDINGS: u32 = 8;

impl Default for Options {
    fn default() -> Options {
        Options { strategy: Strategy::Ilp, max_bindings: PORTABLE_BINDINGS }
    }
}

/// The program with its chosen kernels as `Kernel` statements, and the plan that explains
/// them.
pub fn fuse(program: &Program, options: Options) -> (Program, FusionPlan) {
    fuse_interruptibly(program, options, &|| {}, &SolveCache::default())
}

/// `fuse`, calling `interrupt` before each region is planned: a caller that must give up (the
/// language server, when a newer edit arrives) unwinds from it. The solvers call it too, before
/// each component, round of cuts and greedy merge, so a large region's plan holds up an edit
/// for no longer than one small solve.
pub fn fuse_interruptibly(
    program: &Program,
    options: Options,
    interrupt: &dyn Fn(),
    cache: &SolveCache,
) -> (Program, FusionPlan) {
    let parts = program.functions.iter().map(|f| fuse_function(f, options, interrupt, cache)).collect();
    assemble(program, options, parts)
}

/// One function's fusion: its body with the chosen kernels, and its part of the plan (no
/// schedules: they are the program's), its kernels named as if it were the program's only
/// function (`k0_..` first). `assemble` numbers them on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionFusion {
    pub function: Function,
    pub plan: FusionPlan,
}

/// The kernels of one function, chosen on their own: a function's plan reads nothing outside
/// it, so the pipeline caches each function's fusion as a query of its own.
pub fn fuse_function(
    f: &Function,
    options: Options,
    interrupt: &dyn Fn(),
    cache: &SolveCache,
) -> FunctionFusion {
    let mut plan = FusionPlan::new(options);
    let rewritten;
    let f = if options.strategy == Strategy::None {
        f
    } else {
        let (g, at) = rewrite::filters(f, interrupt);
        plan.rewrites.extend(at.into_iter().map(|(rule, span)| PlanOp::new(rule.into(), span)));
        rewritten = g;
        &rewritten
    };
    let facts = graph::VarFacts::of(f);
    let mut fuser = Fuser { f, options, facts: &facts, plan: &mut plan, interrupt, cache };
    let body = fuser.block(&f.body);
    FunctionFusion { function: Function { body, ..f.clone() }, plan }
}

/// The fused program and its plan from each function's fusion, in the program's order: the
/// kernels are numbered through the whole plan, and the program's schedules recorded.
pub fn assemble(program: &Program, options: Options, parts: Vec<FunctionFusion>) -> (Program, FusionPlan) {
    let mut functions = Vec::with_capacity(parts.len());
    let mut plans = Vec::with_capacity(parts.len());
    let mut earlier = 0;
    for FunctionFusion { mut function, plan } in parts {
        if earlier > 0 {
            function.body.for_each_stmt_mut(&mut |stmt| {
                if let StmtKind::Kernel(kernel) = &mut stmt.kind {
                    kernel.name = numbered_from(&kernel.name, earlier);
                }
            });
        }
        earlier += plan.kernels.len();
        functions.push(function);
        plans.push(plan);
    }
    let plan = assemble_plan(program, options, plans);
    let fused = Program { functions, main: program.main, schedules: program.schedules.clone() };
    (fused, plan)
}

/// `assemble`'s plan alone, from each function's part of it: what an editor shows, without
/// the fused program that only an executor needs.
pub fn assemble_plan(
    program: &Program,
    options: Options,
    parts: impl IntoIterator<Item = FusionPlan>,
) -> FusionPlan {
    let mut plan = FusionPlan::new(options);
    for part in parts {
        let earlier = plan.kernels.len();
        let (mut kernels, mut unfused) = (part.kernels, part.unfused);
        if earlier > 0 {
            let renamed = |name: &mut String| *name = numbered_from(name, earlier);
            kernels.iter_mut().for_each(|k| renamed(&mut k.name));
            unfused.iter_mut().for_each(|u| {
                renamed(&mut u.from_kernel);
                renamed(&mut u.to_kernel);
            });
        }
        plan.kernels.extend(kernels);
        plan.unfused.extend(unfused);
        plan.regions.extend(part.regions);
        plan.rewrites.extend(part.rewrites);
    }
    for &(span, schedule) in &program.schedules {
        plan.schedules.push(plan::ScheduleChoice::new(span, schedule));
    }
    plan
}

/// A kernel's name (`k{n}_{pattern}`, numbered in its function) numbered after `earlier`
/// kernels of the plan.
fn numbered_from(name: &str, earlier: usize) -> String {
    let numbered = name.strip_prefix('k').and_then(|rest| rest.split_once('_'));
    match numbered.and_then(|(n, pattern)| Some((n.parse::<usize>().ok()?, pattern))) {
        Some((n, pattern)) => kernel_name(n + earlier, pattern),
        None => name.to_string(),
    }
}

fn kernel_name(n: usize, pattern: &str) -> String {
    format!("k{n}_{pattern}")
}

struct Fuser<'a> {
    f: &'a Function,
    options: Options,
    facts: &'a graph::VarFacts,
    plan: &'a mut FusionPlan,
    interrupt: &'a dyn Fn(),
    cache: &'a SolveCache,
}

impl Fuser<'_> {
    fn block(&mut self, block: &Block) -> Block {
        (self.interrupt)();
        let region = Region::new(self.f, block, self.facts, self.interrupt);
        let (clusters, report) = self.solve(&region);
        let units = schedule(&region, &clusters);
        let mut names: BTreeMap<usize, String> = BTreeMap::new();
        let mut stmts = Vec::with_capacity(units.len());
        for unit in &units {
            let first = &block.stmts[unit[0]];
            if unit.len() == 1 {
                let stmt = self.nested(first);
                if let Some(kernel) = self.single_kernel(&region, unit[0]) {
                    names.insert(unit[0], kernel.name.clone());
                    self.plan.kernels.push(kernel);
                }
                stmts.push(stmt);
                continue;
            }
            let kernel = self.fused_kernel(&region, unit);
            for &i in unit {
                names.insert(i, kernel.name.clone());
            }
            let outputs: Vec<VarId> = unit
                .iter()
                .flat_map(|&i| region.nodes[i].defs.clone())
                .filter(|&d| region.read_outside(unit, d))
                .collect();
            let body: Vec<Stmt> = unit.iter().map(|&i| block.stmts[i].clone()).collect();
            let span = cover(&body);
            let fused = FusedKernel { name: kernel.name.clone(), body, outputs };
            self.plan.kernels.push(kernel);
            stmts.push(Stmt { kind: StmtKind::Kernel(Box::new(fused)), span });
        }
        self.record_unfused(&region, &clusters, &names);
        if !region.pairs.is_empty() || self.options.strategy == Strategy::None {
            let span = cover(&block.stmts);
            self.plan.regions.push(RegionPlan {
                function: self.f.name.clone(),
                start: span.start().into(),
                end: span.end().into(),
                statements: block.stmts.len() as u32,
                candidate_pairs: region.pairs.len() as u32,
                solver: report,
            });
        }
        Block { stmts, results: block.results.clone() }
    }

    /// The region's kernels, as the strategy chooses them.
    fn solve(&self, region: &Region) -> (Clusters, SolverReport) {
        let (clusters, report) = match self.options.strategy {
            Strategy::None => (
                Clusters::singletons(region.nodes.len()),
                SolverReport { method: "none".into(), ..Default::default() },
            ),
            Strategy::Greedy => (
                solve::greedy(region, self.options.max_bindings, self.interrupt),
                SolverReport { method: "greedy".into(), ..Default::default() },
            ),
            Strategy::Ilp => solve::ilp(region, self.options.max_bindings, self.interrupt, self.cache),
        };
        debug_assert!(region.schedulable(&clusters), "the kernels form a cycle");
        (clusters, report)
    }

    /// A statement with its nested blocks fused.
    fn nested(&mut self, stmt: &Stmt) -> Stmt {
        let kind = match &stmt.kind {
            StmtKind::If { cond, then, otherwise, dests } => StmtKind::If {
                cond: *cond,
                then: self.block(then),
                otherwise: self.block(otherwise),
                dests: dests.clone(),
            },
            StmtKind::While { state, init, cond, body, dests } => StmtKind::While {
                state: state.clone(),
                init: init.clone(),
                cond: self.block(cond),
                body: self.block(body),
                dests: dests.clone(),
            },
            other => other.clone(),
        };
        Stmt { kind, span: stmt.span }
    }

    fn next_name(&self, pattern: &str) -> String {
        kernel_name(self.plan.kernels.len(), pattern)
    }

    /// The plan's entry for a statement that runs as its own kernel (or kernels), if it runs
    /// on the device at all.
    fn single_kernel(&self, region: &Region, i: usize) -> Option<PlanKernel> {
        let node = &region.nodes[i];
        let stmt = &region.block.stmts[i];
        let (pattern, schedule) = match (&node.role, &stmt.kind) {
            (Role::Map, StmtKind::Op { .. }) => ("map".to_string(), "flattened"),
            (Role::Reduce, _) => ("reduce".to_string(), "flattened"),
            (Role::Scan, StmtKind::Op { op, .. }) => (op.name().replace('.', "_"), "flattened"),
            (Role::Alone(op), _) => (op.replace('.', "_"), "flattened"),
            (_, StmtKind::ElementLoop { .. }) => ("element_loop".to_string(), "sequential per element"),
            _ => return None,
        };
        let mut kernel = self.describe(region, &[i], &pattern);
        kernel.schedule = schedule.into();
        Some(kernel)
    }

    /// `unit`: the kernel's statements, in program order.
    fn fused_kernel(&self, region: &Region, unit: &[usize]) -> PlanKernel {
        let reduces = unit.iter().filter(|&&i| region.nodes[i].role == Role::Reduce).count();
        let scan = unit.iter().find(|&&i| region.nodes[i].role == Role::Scan);
        let pattern = match (scan, reduces, unit.len() - reduces) {
            (Some(&i), ..) if region.nodes[i].segmented => "map_segmented",
            (Some(_), ..) => "map_scan",
            (None, 0, _) => "map",
            (None, _, 0) => "reduce",
            _ => "map_reduce",
        };
        self.describe(region, unit, pattern)
    }

    fn describe(&self, region: &Region, unit: &[usize], pattern: &str) -> PlanKernel {
        let f = self.f;
        let ops = unit
            .iter()
            .map(|&i| PlanOp::new(stmt_label(f, &region.block.stmts[i]), region.block.stmts[i].span))
            .collect();
        let mut inputs: Vec<Buffer> = Vec::new();
        let mut outputs: Vec<Buffer> = Vec::new();
        let defined: Vec<VarId> = unit.iter().flat_map(|&i| region.nodes[i].defs.clone()).collect();
        for &i in unit {
            for &v in &region.nodes[i].reads {
                let ty = f.ty(v);
                if defined.contains(&v) || inputs.iter().any(|b| b.var == v) || !ty.is_vector() {
                    continue;
                }
                inputs.push(self.buffer(region, v));
            }
            for &d in &region.nodes[i].defs {
                if region.read_outside(unit, d) || unit.len() == 1 {
                    outputs.push(self.buffer(region, d));
                }
            }
        }
        let space = unit
            .iter()
            .find_map(|&i| {
                let node = &region.nodes[i];
                node.reads.iter().chain(&node.defs).find(|&&v| f.ty(v).is_vector()).copied()
            })
            .map(|v| region.length_name(v))
            .unwrap_or_else(|| "1".into());
        let launch = match pattern {
            "map" => format!("{space} threads"),
            "map_scan" | "map_segmented" => {
                format!("the scan's passes over {space}, the first computing its input")
            }
            "reduce" | "map_reduce" => {
                format!(
                    "ceil({space} / {}) workgroups of 256, then the partial sums",
                    crate::wgsl::prims::BLOCK
                )
            }
            "element_loop" => format!("{space} threads, each looping"),
            _ => format!("primitive passes over {space}"),
        };
        PlanKernel {
            name: self.next_name(pattern),
            function: f.name.clone(),
            pattern: pattern.into(),
            schedule: "flattened".into(),
            ops,
            inputs,
            outputs,
            launch,
            bindings: region.bindings(unit),
        }
    }

    fn buffer(&self, region: &Region, v: VarId) -> Buffer {
        let ty = self.f.ty(v);
        let size = crate::wgsl::scalar::storage_size(ty.elem);
        let bytes =
            if ty.is_vector() { format!("{size}*{}", region.length_name(v)) } else { size.to_string() };
        Buffer { var: v, name: var_label(self.f, v), elem: ty.elem.name().into(), bytes }
    }

    /// For each dataflow edge between device statements in different kernels, and each
    /// candidate sibling pair left apart, the reason.
    fn record_unfused(&mut self, region: &Region, clusters: &Clusters, names: &BTreeMap<usize, String>) {
        let mut seen = std::collections::HashSet::new();
        let mut add = |a: usize, b: usize, constraint: &str, reason: String, plan: &mut FusionPlan| {
            let flows = region.nodes[a].defs.iter().any(|d| region.nodes[b].reads.contains(d));
            let (Some(from), Some(to)) = (names.get(&a), names.get(&b)) else {
                return;
            };
            if !seen.insert((a, b)) {
                return;
            }
            let label = |i: usize| {
                PlanOp::new(stmt_label(region.f, &region.block.stmts[i]), region.block.stmts[i].span)
            };
            plan.unfused.push(Unfused {
                from_kernel: from.clone(),
                to_kernel: to.clone(),
                from: label(a),
                to: label(b),
                relation: if flows { "dataflow" } else { "siblings" }.into(),
                constraint: constraint.into(),
                reason,
            });
        };
        for (a, b, blocker) in &region.blocked {
            let code = match blocker {
                graph::Blocker::IndexSpaces => "index-space",
                graph::Blocker::Incompatible(..) => "compatibility",
                graph::Blocker::NoFusedForm(_) => "no-fused-form",
                graph::Blocker::RandomAccess => "random-access",
            };
            add(*a, *b, code, blocker.describe(), self.plan);
        }
        // Whether two kernels may merge depends on the kernels alone (their members, and the
        // window around both), not on which pair of their statements asks; many pairs join the
        // same two kernels (siblings reading a common vector), so each kernel pair is checked once.
        let mut verdicts: HashMap<(usize, usize), Option<(&'static str, String)>> = HashMap::new();
        for p in &region.pairs {
            (self.interrupt)();
            let (root_a, root_b) = (clusters.find(p.a), clusters.find(p.b));
            if root_a == root_b {
                continue;
            }
            let (code, reason) = match self.options.strategy {
                Strategy::None => ("strategy", "fusion is off (`--fusion none`)".to_string()),
                _ => match verdicts
                    .entry((root_a.min(root_b), root_a.max(root_b)))
                    .or_insert_with(|| {
                        solve::merge_blocked(region, clusters, p.a, p.b, self.options.max_bindings)
                    })
                    .clone()
                {
                    Some(blocked) => blocked,
                    None if self.options.strategy == Strategy::Greedy => {
                        ("greedy-order", "an earlier fusion in program order took one of them".to_string())
                    }
                    None => (
                        "objective",
                        "the solver found fusing them would cost a more valuable fusion".to_string(),
                    ),
                },
            };
            add(p.a, p.b, code, reason, self.plan);
        }
    }
}

/// The units of a region in a dependency order: each cluster of two or more, and every other
/// statement, ordered by Kahn's algorithm, earliest original position first.
fn schedule(region: &Region, clusters: &Clusters) -> Vec<Vec<usize>> {
    let n = region.nodes.len();
    let unit_of = region.units(clusters);
    let mut units: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (i, &root) in unit_of.iter().enumerate() {
        units.entry(root).or_default().push(i);
    }
    let mut waiting: BTreeMap<usize, usize> = units.keys().map(|&r| (r, 0)).collect();
    let mut succs: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for j in 0..n {
        for &i in &region.preds[j] {
            let (ui, uj) = (unit_of[i], unit_of[j]);
            if ui != uj {
                *waiting.get_mut(&uj).expect("a unit") += 1;
                succs.entry(ui).or_default().push(uj);
            }
        }
    }
    let mut ready: std::collections::BTreeSet<usize> =
        waiting.iter().filter(|(_, w)| **w == 0).map(|(&r, _)| r).collect();
    let mut order = Vec::with_capacity(units.len());
    while let Some(r) = ready.pop_first() {
        order.push(units[&r].clone());
        for s in succs.get(&r).cloned().unwrap_or_default() {
            let w = waiting.get_mut(&s).expect("a unit");
            *w -= 1;
            if *w == 0 {
                ready.insert(s);
            }
        }
    }
    debug_assert_eq!(order.len(), units.len(), "fused kernels form a cycle");
    order
}

fn cover(stmts: &[Stmt]) -> TextRange {
    let mut spans = stmts.iter().map(|s| s.span).filter(|s| !s.is_empty());
    let Some(first) = spans.next() else {
        return stmts.first().map_or_else(TextRange::default, |s| s.span);
    };
    spans.fold(first, |a, b| a.cover(b))
}

/// A variable as the IR prints it.
pub(crate) fn var_label(f: &Function, v: VarId) -> String {
    format!("{}%{v}", f.vars[v as usize].name)
}

/// What a statement is, in a few words.
pub(crate) fn stmt_label(f: &Function, stmt: &Stmt) -> String {
    match &stmt.kind {
        StmtKind::Op { dest: Some(d), op } => format!("{} = {}", var_label(f, *d), op.name()),
        StmtKind::Op { op, .. } => op.name(),
        StmtKind::If { .. } => "if".into(),
        StmtKind::While { .. } => "loop".into(),
        StmtKind::ElementLoop { .. } => "element loop".into(),
        StmtKind::Call { .. } => "call".into(),
        StmtKind::Print { sink, .. } => sink.name().into(),
        StmtKind::Kernel(k) => k.name.clone(),
    }
}
