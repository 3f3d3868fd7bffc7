//! Choosing the kernels of one region: no fusion, greedy top-down, or Nessie's integer linear
//! program, solved by microlp.
//!
//! The result is a partition of the region's statements into clusters; a cluster of two or
//! more becomes one fused kernel. Every strategy returns only legal clusters: one index space,
//! convex (no path leaves the cluster and comes back, so one launch can run it), and within
//! the storage-buffer bindings a kernel may have.

use microlp::{
    ComparisonOp, OptimizationDirection, Problem, SolveOptions, SolveOutcome, TerminationReason, Variable,
};

use super::graph::{Pair, Region, Relations, Role, SolveKey};

/// Branch-and-bound nodes the solves of one component may use, over all its rounds of cuts.
/// The bound is on work, not on time, so the same program always gets the same plan.
pub const NODE_LIMIT: u64 = 500;
/// Rounds of binding-limit cuts before the greedy plan decides.
pub const CUT_ROUNDS: u32 = 8;

/// How the solver did on one region, for the plan.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct SolverReport {
    /// `none`, `greedy`, `ilp`, or `greedy (ilp past its bound)` (every component that needed
    /// a solver went past it); for a region where only some did, `ilp, greedy in N of M
    /// components (ilp past its bound)`, M counting all the region's components.
    pub method: String,
    /// Whether the ILP proved its solution optimal (absent when it did not run).
    pub proved_optimal: Option<bool>,
    pub variables: u32,
    pub constraints: u32,
    pub branch_nodes: u64,
    pub simplex_iterations: u64,
    /// Binding-limit cuts added, each after a solve whose kernel had too many bindings.
    pub cuts: u32,
    /// Time to build and solve, in microseconds (not part of the plan's identity).
    #[serde(skip)]
    pub micros: u64,
}

impl SolverReport {
    /// Adds a component's report to its region's (`ilp`): the counts add up, and the region is
    /// proved optimal when each component is. A kept component adds the time of its first
    /// solve.
    pub fn add(&mut self, component: &SolverReport) {
        self.proved_optimal = match (self.proved_optimal, component.proved_optimal) {
            (Some(a), Some(b)) => Some(a && b),
            (a, b) => a.or(b),
        };
        self.variables += component.variables;
        self.constraints += component.constraints;
        self.branch_nodes += component.branch_nodes;
        self.simplex_iterations += component.simplex_iterations;
        self.cuts += component.cuts;
        self.micros += component.micros;
    }
}

/// Clusters over a region's statements: which kernel each statement joins. Each cluster keeps
/// its members in program order, so asking about one kernel costs its size, not the region's:
/// the top level of a large file has thousands of statements and thousands of clusters to try.
/// Only statements that can share a kernel (maps, reductions, scans) are ever joined: the
/// windows of `Region::window` count on it.
#[derive(Debug, Clone)]
pub struct Clusters {
    /// Each statement's cluster, an index into `members`. A statement never joined is its own
    /// cluster, at its own index.
    of: Vec<usize>,
    /// Each cluster of two or more: its statements in program order. Empty for a statement
    /// never joined (so a clone allocates only for the clusters), and for a cluster merged into
    /// another.
    members: Vec<Vec<usize>>,
    /// At the first statement of each cluster of two or more, its last: what `spanning` asks.
    /// A cluster merged into one that starts earlier leaves its entry behind, which is harmless:
    /// that span lies inside the merged cluster's, whose own entry is at least as wide.
    last_by_first: MaxTree,
}

impl Clusters {
    pub fn singletons(n: usize) -> Clusters {
        Clusters { of: (0..n).collect(), members: vec![Vec::new(); n], last_by_first: MaxTree::new(n) }
    }

    /// The cluster's root: its first statement.
    pub fn find(&self, i: usize) -> usize {
        self.members(i)[0]
    }

    pub fn union(&mut self, a: usize, b: usize) {
        let (ca, cb) = (self.of[a], self.of[b]);
        if ca == cb {
            return;
        }
        // The smaller cluster moves, so a statement moves at most log n times.
        let (keep, gone) = if self.members[ca].len() >= self.members[cb].len() { (ca, cb) } else { (cb, ca) };
        let moved = self.take(gone);
        for &i in &moved {
            self.of[i] = keep;
        }
        let kept = self.take(keep);
        self.members[keep] = merged(&kept, &moved);
        let (first, last) = self.span(a);
        self.last_by_first.raise(first, last);
    }

    /// Cluster `c`'s statements, leaving it empty.
    fn take(&mut self, c: usize) -> Vec<usize> {
        match std::mem::take(&mut self.members[c]) {
            never_joined if never_joined.is_empty() => vec![c],
            members => members,
        }
    }

    /// `i`'s cluster: its statements in program order.
    pub fn members(&self, i: usize) -> &[usize] {
        match self.members[self.of[i]].as_slice() {
            // Never joined: `of[i]` is `i` itself.
            [] => std::slice::from_ref(&self.of[i]),
            members => members,
        }
    }

    /// The first and last statement of `i`'s cluster.
    pub fn span(&self, i: usize) -> (usize, usize) {
        let members = self.members(i);
        (members[0], members[members.len() - 1])
    }

    /// Of the clusters with statements both before `lo` and after `hi`, the earliest first
    /// statement and the latest last one, if there are any.
    pub fn spanning(&self, lo: usize, hi: usize) -> Option<(usize, usize)> {
        let last = self.last_by_first.max_before(lo);
        (last > hi).then(|| (self.last_by_first.first_over_before(hi, lo), last))
    }
}

/// Two sorted lists of statements as one.
fn merged(a: &[usize], b: &[usize]) -> Vec<usize> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut x, mut y) = (0, 0);
    while x < a.len() && y < b.len() {
        if a[x] < b[y] {
            out.push(a[x]);
            x += 1;
        } else {
            out.push(b[y]);
            y += 1;
        }
    }
    out.extend_from_slice(&a[x..]);
    out.extend_from_slice(&b[y..]);
    out
}

/// A segment tree of maxima over positions, every value starting at 0: prefix maxima in
/// O(log n), and the first position before a bound whose value exceeds another in O(log² n).
#[derive(Debug, Clone)]
struct MaxTree {
    /// Leaves at `size..2 * size`; each inner node the maximum of its two children.
    tree: Vec<usize>,
    size: usize,
}

impl MaxTree {
    fn new(n: usize) -> MaxTree {
        let size = n.next_power_of_two();
        MaxTree { tree: vec![0; 2 * size], size }
    }

    /// Sets position `at` to `value` where that is larger.
    fn raise(&mut self, at: usize, value: usize) {
        let mut node = at + self.size;
        while node > 0 && self.tree[node] < value {
            self.tree[node] = value;
            node /= 2;
        }
    }

    /// The largest value at a position before `end` (0 if none).
    fn max_before(&self, end: usize) -> usize {
        let (mut lo, mut hi, mut best) = (self.size, end.min(self.size) + self.size, 0);
        while lo < hi {
            if lo % 2 == 1 {
                best = best.max(self.tree[lo]);
                lo += 1;
            }
            if hi % 2 == 1 {
                hi -= 1;
                best = best.max(self.tree[hi]);
            }
            lo /= 2;
            hi /= 2;
        }
        best
    }

    /// The first position before `end` whose value exceeds `bound`; `max_before(end) > bound`
    /// says there is one.
    fn first_over_before(&self, bound: usize, end: usize) -> usize {
        let (mut node, mut from, mut width) = (1, 0, self.size);
        while width > 1 {
            width /= 2;
            // The left child first; the right one only if the left has none before `end`.
            let left = 2 * node;
            (node, from) = if self.max_in(left, from, width, end) > bound {
                (left, from)
            } else {
                (left + 1, from + width)
            };
        }
        from
    }

    /// The largest value under `node` (covering `from..from + width`) at a position before `end`.
    fn max_in(&self, node: usize, from: usize, width: usize, end: usize) -> usize {
        if from + width <= end {
            return self.tree[node];
        }
        if from >= end {
            return 0;
        }
        let half = width / 2;
        self.max_in(2 * node, from, half, end).max(self.max_in(2 * node + 1, from + half, half, end))
    }
}

/// Why a set of statements (`members`, in program order) cannot be one kernel on its own terms,
/// if it cannot: a dependency between two of them that no rule fuses, or too many bindings.
/// Whether the kernels still form a schedule is `acyclic_around`'s question.
pub fn illegal(region: &Region, members: &[usize], max_bindings: u32) -> Option<String> {
    for (x, &i) in members.iter().enumerate() {
        for &j in &members[x + 1..] {
            if !region.paired.contains(&(i, j)) && region.preds[j].contains(&i) {
                return Some(format!(
                    "their kernel would also hold `{}` and `{}`, which cannot share one",
                    super::stmt_label(region.f, &region.block.stmts[i]),
                    super::stmt_label(region.f, &region.block.stmts[j])
                ));
            }
        }
    }
    if let Some(why) = scan_shape(region, members) {
        return Some(why);
    }
    let bindings = region.bindings(members);
    (bindings > max_bindings).then(|| {
        format!("one kernel would bind {bindings} storage buffers, over the limit of {max_bindings}")
    })
}

/// A kernel with a scan (or segmented op) is that consumer and the maps that produce its
/// input, nothing more: one consumer, no reduction, nothing else written out, and, for a
/// segmented op, which computes only the elements inside segments, no check.
fn scan_shape(region: &Region, members: &[usize]) -> Option<String> {
    let scans: Vec<usize> = members.iter().copied().filter(|&i| region.nodes[i].role == Role::Scan).collect();
    let [scan] = scans.as_slice() else {
        return (scans.len() > 1).then(|| "a kernel takes one scan".to_string());
    };
    let segmented = region.nodes[*scan].segmented;
    for &i in members.iter().filter(|&&i| i != *scan) {
        let node = &region.nodes[i];
        if node.role != Role::Map {
            return Some("a scan's kernel holds only the maps that produce its input".into());
        }
        if node.defs.iter().any(|&d| region.read_outside(members, d)) {
            return Some("a scan's kernel writes nothing but the scan".into());
        }
        if segmented && node.effect {
            return Some(
                "a segmented op computes only the elements inside segments, so checks stay apart".into(),
            );
        }
    }
    None
}

/// Why merging the clusters of `a` and `b` is not allowed, if it is not: the constraint's
/// name in the plan (`dependency`, `bindings` or `convexity`), and the reason.
pub fn merge_blocked(
    region: &Region,
    clusters: &Clusters,
    a: usize,
    b: usize,
    max_bindings: u32,
) -> Option<(&'static str, String)> {
    let (root_a, root_b) = (clusters.find(a), clusters.find(b));
    let members = match root_a == root_b {
        true => clusters.members(a).to_vec(),
        false => merged(clusters.members(a), clusters.members(b)),
    };
    if let Some(why) = illegal(region, &members, max_bindings) {
        let code = if why.contains("storage buffers") { "bindings" } else { "dependency" };
        return Some((code, why));
    }
    (!region.acyclic_around(clusters, Some((root_a, root_b)), a, b)).then(|| {
        let why =
            "fused, the kernel would need work outside it both before and after it (a cycle between kernels)";
        ("convexity", why.to_string())
    })
}

/// Greedy top-down fusion ([BR12]): candidate pairs in program order, each merged when the
/// merged cluster is legal. `interrupt` is called before each pair is tried, so that a caller
/// that must give up (the language server, on a newer edit) can unwind from it.
pub fn greedy(region: &Region, max_bindings: u32, interrupt: &dyn Fn()) -> Clusters {
    greedy_from(region, Clusters::singletons(region.nodes.len()), &region.pairs, max_bindings, interrupt)
}

/// `greedy` over `pairs`, starting from `clusters`.
fn greedy_from(
    region: &Region,
    mut clusters: Clusters,
    pairs: &[Pair],
    max_bindings: u32,
    interrupt: &dyn Fn(),
) -> Clusters {
    let mut pairs = pairs.to_vec();
    pairs.sort_by_key(|p| (p.b, p.a));
    for p in pairs {
        interrupt();
        if clusters.find(p.a) == clusters.find(p.b) {
            continue;
        }
        if merge_blocked(region, &clusters, p.a, p.b, max_bindings).is_none() {
            clusters.union(p.a, p.b);
        }
    }
    clusters
}

/// Nessie's formulation (`docs/fusion.md` gives it in full), one connected component of
/// candidate pairs at a time, in program order, each with the kernels of the earlier ones in
/// place. A component past the node bound, still over its bindings after `CUT_ROUNDS` rounds of
/// cuts, or whose solve fails, gets the greedy plan. Each component's kernels are kept in
/// `cache` by its `SolveKey`, so an edit solves again only the components it changed.
/// `interrupt` is called before each component and each round of cuts.
pub fn ilp(
    region: &Region,
    max_bindings: u32,
    interrupt: &dyn Fn(),
    cache: &SolveCache,
) -> (Clusters, SolverReport) {
    let mut report = SolverReport { method: "ilp".into(), proved_optimal: Some(true), ..Default::default() };
    let mut clusters = Clusters::singletons(region.nodes.len());
    let (mut solved, mut past_bound) = (0, 0);
    let components = components(region);
    let total = components.len();
    for pairs in components {
        interrupt();
        // One pair: fusing it is optimal exactly when it is legal, no solver needed.
        if let [p] = pairs.as_slice() {
            if merge_blocked(region, &clusters, p.a, p.b, max_bindings).is_none() {
                clusters.union(p.a, p.b);
            }
            continue;
        }
        let mut nodes: Vec<usize> = pairs.iter().flat_map(|p| [p.a, p.b]).collect();
        nodes.sort_unstable();
        nodes.dedup();
        // Reachability with the kernels of earlier components in place, so that this one's
        // kernels cannot close a cycle through them. The earlier kernels form a schedule, so
        // there is always one.
        let Some(relations) = region.relations(&clusters, &nodes) else {
            debug_assert!(false, "the kernels of earlier components form a cycle");
            continue;
        };
        let key = region.component_key(&nodes, &pairs, &relations, max_bindings);
        let component = cache.get(&key).unwrap_or_else(|| {
            let component = Component { nodes: &nodes, pairs: &pairs, relations: &relations };
            let solved = solve_or_greedy(region, &clusters, &component, max_bindings, interrupt);
            cache.put(key, solved.clone());
            solved
        });
        for &(x, root) in &component.unions {
            clusters.union(nodes[x as usize], nodes[root as usize]);
        }
        solved += 1;
        past_bound += usize::from(component.report.method == PAST_BOUND);
        report.add(&component.report);
    }
    if !region.schedulable(&clusters) {
        // Kept kernels that form a cycle here would be a bug in the key; the greedy plan is
        // legal by construction, so it decides rather than a wrong schedule.
        debug_assert!(false, "the ILP's kernels form a cycle");
        let report = SolverReport { method: "greedy".into(), proved_optimal: Some(false), ..report };
        return (greedy(region, max_bindings, interrupt), report);
    }
    report.method = match past_bound {
        0 => report.method,
        n if n == solved => PAST_BOUND.into(),
        n => format!("ilp, greedy in {n} of {total} components (ilp past its bound)"),
    };
    (clusters, report)
}

/// The method of a component, or of a region, whose ILP went past its bound.
const PAST_BOUND: &str = "greedy (ilp past its bound)";

/// One component's kernels: each of its statements that is not its cluster's root, with its
/// root, both as positions in the component's statements; and how the solver did.
#[derive(Debug, Clone)]
struct ComponentSolution {
    unions: Vec<(u32, u32)>,
    report: SolverReport,
}

/// One connected component of candidate pairs: its statements in program order, its pairs,
/// and how its statements connect around it.
struct Component<'a> {
    nodes: &'a [usize],
    pairs: &'a [Pair],
    relations: &'a Relations,
}

/// The kernels of one component of the ILP, or of the greedy plan past the ILP's bounds, with
/// the kernels of earlier components (`fixed`) in place.
fn solve_or_greedy(
    region: &Region,
    fixed: &Clusters,
    component: &Component,
    max_bindings: u32,
    interrupt: &dyn Fn(),
) -> ComponentSolution {
    let Component { nodes, pairs, .. } = *component;
    let start = std::time::Instant::now();
    let mut report = SolverReport { method: "ilp".into(), proved_optimal: Some(true), ..Default::default() };
    let clusters = match solve_component(region, fixed, component, max_bindings, &mut report, interrupt) {
        Some(fused) => {
            let mut clusters = fixed.clone();
            for p in fused {
                clusters.union(p.a, p.b);
            }
            clusters
        }
        None => {
            report.method = PAST_BOUND.into();
            report.proved_optimal = Some(false);
            greedy_from(region, fixed.clone(), pairs, max_bindings, interrupt)
        }
    };
    report.micros = start.elapsed().as_micros() as u64;
    let position =
        |i: usize| nodes.binary_search(&i).expect("a cluster of the component's statements") as u32;
    let unions = nodes
        .iter()
        .enumerate()
        .filter_map(|(x, &i)| {
            let root = clusters.find(i);
            (root != i).then(|| (x as u32, position(root)))
        })
        .collect();
    ComponentSolution { unions, report }
}

/// Solved components by their `SolveKey`: a component an edit left alone is not solved again,
/// even when the edit renumbered its variables or moved it in the file. The key holds
/// everything the ILP reads, so a hit is exactly the kernels a new solve would give. Plain
/// data, for whoever keeps it across programs (the database does).
#[derive(Default)]
pub struct SolveCache {
    solved: std::sync::Mutex<std::collections::HashMap<SolveKey, ComponentSolution>>,
}

/// Solved components a `SolveCache` keeps before it starts again empty: those of a few
/// versions of a 10,000-line file.
const SOLVE_CACHE_ENTRIES: usize = 50_000;

impl SolveCache {
    fn get(&self, key: &SolveKey) -> Option<ComponentSolution> {
        self.solved.lock().unwrap_or_else(|e| e.into_inner()).get(key).cloned()
    }

    fn put(&self, key: SolveKey, solved: ComponentSolution) {
        let mut map = self.solved.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= SOLVE_CACHE_ENTRIES {
            map.clear();
        }
        map.insert(key, solved);
    }

    /// Components solved and kept.
    pub fn len(&self) -> usize {
        self.solved.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The candidate pairs, grouped by the connected components they form, in program order.
fn components(region: &Region) -> Vec<Vec<Pair>> {
    let mut c = Clusters::singletons(region.nodes.len());
    for p in &region.pairs {
        c.union(p.a, p.b);
    }
    let mut roots: Vec<usize> = region.pairs.iter().map(|p| c.find(p.a)).collect();
    roots.sort_unstable();
    roots.dedup();
    let mut by_root: std::collections::HashMap<usize, Vec<Pair>> = std::collections::HashMap::new();
    for p in &region.pairs {
        by_root.entry(c.find(p.a)).or_default().push(*p);
    }
    roots.iter().map(|r| by_root.remove(r).unwrap_or_default()).collect()
}

/// The fused pairs of an optimal solution, or `None` past the bounds.
fn solve_component(
    region: &Region,
    fixed: &Clusters,
    component: &Component,
    max_bindings: u32,
    report: &mut SolverReport,
    interrupt: &dyn Fn(),
) -> Option<Vec<Pair>> {
    let Component { nodes, pairs, .. } = *component;
    let mut cuts: Vec<(Vec<usize>, Vec<usize>)> = Vec::new();
    // The node bound holds for the component as a whole, across the rounds of cuts.
    let mut nodes_left = NODE_LIMIT;
    for _ in 0..=CUT_ROUNDS {
        interrupt();
        let Formulation { problem, f, variables, constraints } = formulate(region, component, &cuts);
        report.variables += variables;
        report.constraints += constraints;
        let outcome = solve_interruptibly(problem, nodes_left, interrupt)?;
        let stats = outcome.stats();
        report.branch_nodes += stats.nodes_solved;
        nodes_left = nodes_left.saturating_sub(stats.nodes_solved.max(1));
        report.simplex_iterations += stats.lp_iterations;
        if outcome.termination_reason() != TerminationReason::ProvenOptimal {
            return None;
        }
        let solution = outcome.into_solution().ok()?;
        let fused: Vec<Pair> =
            pairs.iter().zip(&f).filter(|(_, v)| solution.var_value(**v) < 0.5).map(|(p, _)| *p).collect();
        let mut clusters = fixed.clone();
        for p in &fused {
            clusters.union(p.a, p.b);
        }
        // The earlier kernels form a schedule, so a cycle would pass through one of this
        // component's, all inside the window around its statements.
        if !region.acyclic_around(&clusters, None, nodes[0], nodes[nodes.len() - 1]) {
            return None;
        }
        let mut roots: Vec<usize> = nodes.iter().map(|&i| clusters.find(i)).collect();
        roots.sort_unstable();
        roots.dedup();
        let over: Vec<&[usize]> = roots
            .iter()
            .map(|&r| clusters.members(r))
            .filter(|m| m.len() > 1 && illegal(region, m, max_bindings).is_some())
            .collect();
        if over.is_empty() {
            return Some(fused);
        }
        // Forbid exactly each such cluster: some pair inside it stays apart, or some pair
        // across its boundary joins.
        for members in over {
            let member = |k: usize| members.binary_search(&k).is_ok();
            let inside = (0..pairs.len()).filter(|&k| member(pairs[k].a) && member(pairs[k].b)).collect();
            let boundary = (0..pairs.len()).filter(|&k| member(pairs[k].a) != member(pairs[k].b)).collect();
            cuts.push((inside, boundary));
            report.cuts += 1;
        }
        if nodes_left == 0 {
            return None;
        }
    }
    None
}

/// `problem` solved within `node_limit` branch-and-bound nodes, on a thread of its own, while
/// this one calls `interrupt` every millisecond. One solve can take a second on a large
/// region and microlp cannot be stopped inside it (pausing and resuming it changes its search),
/// so a caller that must give up unwinds from `interrupt` at once and the abandoned solve
/// finishes on its own, its outcome dropped. `None` when the solve fails.
fn solve_interruptibly(problem: Problem, node_limit: u64, interrupt: &dyn Fn()) -> Option<SolveOutcome> {
    use std::sync::mpsc::{RecvTimeoutError, channel};
    let mut options = SolveOptions::default();
    options.node_limit = Some(node_limit);
    let (sender, receiver) = channel();
    let solver = move || {
        let _ = sender.send(problem.solve_with(options));
    };
    if std::thread::Builder::new().name("weft-ilp".into()).spawn(solver).is_err() {
        // No thread to be had (the process is at its limit): the greedy plan decides.
        return None;
    }
    loop {
        match receiver.recv_timeout(std::time::Duration::from_millis(1)) {
            Ok(outcome) => return outcome.ok(),
            Err(RecvTimeoutError::Timeout) => interrupt(),
            // The solver panicked (a bug in it): the greedy plan decides.
            Err(RecvTimeoutError::Disconnected) => return None,
        }
    }
}

/// The ILP over a component's statements and candidate pairs; gives the problem and each
/// pair's `f` variable (1: apart).
///
/// Variables: `o_i` (the kernel's position in the schedule) per statement, `f_p` per pair,
/// `b_p` per sibling pair (which of the two goes first when apart), `c_a` per array passed
/// between statements. With `M` the number of statements:
/// - a producer-consumer pair: `f ≤ o_b - o_a ≤ M·f` (fused: one kernel; apart: consumer
///   later);
/// - a sibling pair: `|o_b - o_a| ≤ M·f`, and apart means different positions, by `b_p`;
/// - statements with a dependency path through something outside the component (or a
///   dependency that is not a candidate pair): `o_b ≥ o_a + 1`, which keeps kernels convex;
/// - a path back from the later statement to the earlier (through an earlier component's kernel
///   that has statements before and after both): `o_a ≥ o_b + 1`;
/// - `c_a ≥ f_p` for each array the pair passes;
/// - each cut: `Σ f(inside) + Σ (1 - f(boundary)) ≥ 1`.
///
/// Objective, lexicographic by weights as Nessie's: `N²·Σ f` (launches) `+ N·Σ sr·f` (array
/// traversals) `+ Σ c` (allocations), with `N` above any of the sums.
fn formulate(region: &Region, component: &Component, cuts: &[(Vec<usize>, Vec<usize>)]) -> Formulation {
    let Component { nodes, pairs, relations } = *component;
    let m = nodes.len() as f64;
    let shared: u32 = pairs.iter().map(|p| p.shared).sum();
    let arrays: Vec<(usize, crate::ir::VarId)> = passed_arrays(region, pairs);
    let n = f64::from(shared) + arrays.len() as f64 + 1.0;
    let mut problem =
        Counted { inner: Problem::new(OptimizationDirection::Minimize), variables: 0, constraints: 0 };
    let o: Vec<Variable> =
        nodes.iter().map(|_| problem.add_integer_var(0.0, (0, nodes.len() as i32))).collect();
    let at = |i: usize| o[nodes.binary_search(&i).expect("a node of the component")];
    let f: Vec<Variable> =
        pairs.iter().map(|p| problem.add_binary_var(n * n + n * f64::from(p.shared))).collect();
    for (p, &fp) in pairs.iter().zip(&f) {
        let (oa, ob) = (at(p.a), at(p.b));
        if p.vertical {
            problem.add_constraint([(ob, 1.0), (oa, -1.0), (fp, -1.0)], ComparisonOp::Ge, 0.0);
            problem.add_constraint([(ob, 1.0), (oa, -1.0), (fp, -m)], ComparisonOp::Le, 0.0);
        } else {
            let bp = problem.add_binary_var(0.0);
            problem.add_constraint([(ob, 1.0), (oa, -1.0), (fp, -m)], ComparisonOp::Le, 0.0);
            problem.add_constraint([(oa, 1.0), (ob, -1.0), (fp, -m)], ComparisonOp::Le, 0.0);
            let big = m + 1.0;
            problem.add_constraint(
                [(ob, 1.0), (oa, -1.0), (fp, -big), (bp, big)],
                ComparisonOp::Ge,
                1.0 - big,
            );
            problem.add_constraint(
                [(oa, 1.0), (ob, -1.0), (fp, -big), (bp, -big)],
                ComparisonOp::Ge,
                1.0 - 2.0 * big,
            );
        }
    }
    for (x, &i) in nodes.iter().enumerate() {
        for (y, &j) in nodes.iter().enumerate().skip(x + 1) {
            if relations.reaches(x, y) {
                let paired = region.paired.contains(&(i, j));
                let direct = region.preds[j].contains(&i);
                if (direct && !paired) || relations.outside(x, y) {
                    problem.add_constraint([(at(j), 1.0), (at(i), -1.0)], ComparisonOp::Ge, 1.0);
                }
            } else if relations.reaches(y, x) {
                // A path back from the later statement, through an earlier component's kernel
                // that spans both: the earlier statement's kernel runs after the later one's.
                problem.add_constraint([(at(i), 1.0), (at(j), -1.0)], ComparisonOp::Ge, 1.0);
            }
        }
    }
    for &(pair, _) in &arrays {
        let c = problem.add_var(1.0, (0.0, 1.0));
        problem.add_constraint([(c, 1.0), (f[pair], -1.0)], ComparisonOp::Ge, 0.0);
    }
    for (inside, boundary) in cuts {
        let terms: Vec<(Variable, f64)> =
            inside.iter().map(|&k| (f[k], 1.0)).chain(boundary.iter().map(|&k| (f[k], -1.0))).collect();
        problem.add_constraint(terms, ComparisonOp::Ge, 1.0 - boundary.len() as f64);
    }
    let (variables, constraints) = problem.size();
    Formulation { problem: problem.inner, f, variables, constraints }
}

struct Formulation {
    problem: Problem,
    f: Vec<Variable>,
    variables: u32,
    constraints: u32,
}

/// A microlp problem that counts what goes into it, for the report.
struct Counted {
    inner: Problem,
    variables: u32,
    constraints: u32,
}

impl Counted {
    fn add_integer_var(&mut self, cost: f64, range: (i32, i32)) -> Variable {
        self.variables += 1;
        self.inner.add_integer_var(cost, range)
    }

    fn add_binary_var(&mut self, cost: f64) -> Variable {
        self.variables += 1;
        self.inner.add_binary_var(cost)
    }

    fn add_var(&mut self, cost: f64, range: (f64, f64)) -> Variable {
        self.variables += 1;
        self.inner.add_var(cost, range)
    }

    fn add_constraint(
        &mut self,
        terms: impl IntoIterator<Item = (Variable, f64)>,
        op: ComparisonOp,
        rhs: f64,
    ) {
        self.constraints += 1;
        let expr: microlp::LinearExpr = terms.into_iter().collect();
        self.inner.add_constraint(expr, op, rhs);
    }

    fn size(&self) -> (u32, u32) {
        (self.variables, self.constraints)
    }
}

/// Each (vertical pair, array it passes).
fn passed_arrays(region: &Region, pairs: &[Pair]) -> Vec<(usize, crate::ir::VarId)> {
    let mut out = Vec::new();
    for (k, p) in pairs.iter().enumerate().filter(|(_, p)| p.vertical) {
        for &d in &region.nodes[p.a].defs {
            if region.f.ty(d).is_vector() && region.nodes[p.b].reads.contains(&d) {
                out.push((k, d));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::Clusters;

    /// Clusters after random unions answer as a plain scan over every statement would.
    #[test]
    fn clusters_answer_as_a_scan_of_the_region_would() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for n in [1, 2, 3, 7, 64, 100] {
            let mut clusters = Clusters::singletons(n);
            let mut naive: Vec<usize> = (0..n).collect();
            for _ in 0..n {
                let (a, b) = (next(n), next(n));
                // Near pairs mostly, as fusion makes, and some far ones.
                let b = if next(4) == 0 { b } else { (a + b % 5).min(n - 1) };
                clusters.union(a, b);
                let (from, to) = (naive[a], naive[b]);
                naive.iter_mut().filter(|c| **c == from).for_each(|c| *c = to);
                for i in 0..n {
                    let members: Vec<usize> = (0..n).filter(|&k| naive[k] == naive[i]).collect();
                    assert_eq!(clusters.members(i), members);
                    assert_eq!(clusters.find(i), members[0]);
                    assert_eq!(clusters.span(i), (members[0], members[members.len() - 1]));
                }
                for lo in 0..n {
                    for hi in lo..n {
                        let spans =
                            (0..n).map(|i| clusters.span(i)).filter(|&(first, last)| first < lo && last > hi);
                        let expected = spans.fold(None, |acc: Option<(usize, usize)>, (first, last)| {
                            Some(acc.map_or((first, last), |(f, l)| (f.min(first), l.max(last))))
                        });
                        assert_eq!(clusters.spanning(lo, hi), expected, "n {n}, window {lo}..={hi}");
                    }
                }
            }
        }
    }
}
