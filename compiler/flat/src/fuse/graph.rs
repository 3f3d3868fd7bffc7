//! One control region (a block's straight-line statements) as the fusion problem sees it:
//! which statements could join a kernel, which index space each works over, the dataflow
//! between them, and the candidate pairs with what fusing them would save.
//!
//! Index spaces are length classes: element-wise ops have operands of one length (an IR
//! invariant), so a union-find over their operands and results groups the vectors that are
//! known to have the same length, without knowing the length.

use std::collections::HashMap;

use super::solve::Clusters;
use crate::ir::{Block, Check, Function, Op, Stmt, StmtKind, VarId};
use weft_core::types::Scalar;
use weft_core::{BinaryOp, Literal};

/// What a statement can be in a fused kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// Element-wise over one index space: a MAP in Nessie's terms (checks, `iota` and
    /// `replicate` included).
    Map,
    /// A reduction of a vector to one scalar: REDUCE.
    Reduce,
    /// A scan (SCAN) or a segmented reduction or scan: its first pass can compute its input
    /// from the maps that produce it, but it is the kernel's only consumer.
    Scan,
    /// A vector op that runs as its own kernel or primitive passes (`scan`, `pack`, ...).
    Alone(String),
    /// Host work: scalar ops, prints, control flow, calls.
    Host,
}

#[derive(Debug, Clone)]
pub struct Node {
    pub role: Role,
    /// The index space (length class) a `Map` or `Reduce` works over.
    pub class: Option<usize>,
    /// It is seen from outside (a print) or may stop the program (a check, integer division,
    /// a call): its order among effects matters.
    pub effect: bool,
    /// Later ops may be valid only because it ran without stopping (a check, a call): nothing
    /// that followed it moves before it. A print guards nothing.
    pub guard: bool,
    /// It is defined whatever a failed check would have said (one vector operand, no index):
    /// it may run before a guard that preceded it.
    pub total: bool,
    pub defs: Vec<VarId>,
    pub reads: Vec<VarId>,
    /// A gather's sources, which it reads at any index, not element by element.
    pub gathers: Vec<VarId>,
    /// A scan's (or segmented op's) input, the only operand a producer may compute for it.
    pub consumes: Option<VarId>,
    /// A segmented op: its first pass reads only the elements inside segments.
    pub segmented: bool,
}

impl Node {
    pub fn fusable(&self) -> bool {
        matches!(self.role, Role::Map | Role::Reduce | Role::Scan)
    }
}

/// Two statements that could share a kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pair {
    pub a: usize,
    pub b: usize,
    /// `b` reads what `a` computes (vertical fusion); otherwise they are siblings that read a
    /// common input (horizontal fusion).
    pub vertical: bool,
    /// Nessie's `sr`: arrays passed between them, or read by both, in 32-bit words per
    /// element (an `f64` array weighs two).
    pub shared: u32,
}

/// Why two adjacent statements cannot share a kernel, whatever the strategy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Blocker {
    /// They work over index spaces not known to be equal.
    IndexSpaces,
    /// The producer's kind cannot flow into the consumer's in one kernel (a cell of the
    /// compatibility table: producer, consumer).
    Incompatible(&'static str, &'static str),
    /// One of them has no fused form.
    NoFusedForm(String),
    /// The consumer gathers from the producer's result: it reads elements other threads
    /// compute.
    RandomAccess,
}

impl Blocker {
    pub fn describe(&self) -> String {
        match self {
            Blocker::IndexSpaces => "different index spaces: their lengths are not known to be equal".into(),
            Blocker::Incompatible(from, to) => {
                format!("{from} -> {to} is not fusable: the consumer needs the whole result first")
            }
            Blocker::NoFusedForm(op) => {
                format!("`{op}` runs as its own primitive passes, with no fused form")
            }
            Blocker::RandomAccess => {
                "the consumer gathers from the producer's result at any index, which other threads compute"
                    .into()
            }
        }
    }
}

pub struct Region<'a> {
    pub f: &'a Function,
    pub block: &'a Block,
    pub nodes: Vec<Node>,
    /// `preds[j]`: the statements `j` depends on directly (dataflow, or the order of effects).
    pub preds: Vec<Vec<usize>>,
    /// Each statement's ancestors among the maps and reductions (`reachability`), which is
    /// all that sibling pairs ask of it; `reaches` reads it.
    ancestors: Ancestors,
    pub pairs: Vec<Pair>,
    /// `(a, b)` of every candidate pair, for lookups.
    pub paired: std::collections::HashSet<(usize, usize)>,
    /// Dataflow edges between vector statements that can never share a kernel.
    pub blocked: Vec<(usize, usize, Blocker)>,
    /// What is known of the function's scalars.
    pub facts: &'a VarFacts,
    /// Each vector's length class, and per class the variable that names its length.
    class_of: HashMap<VarId, usize>,
    namer: HashMap<usize, VarId>,
    /// Each variable's readers and definers, in program order.
    readers: HashMap<VarId, Vec<usize>>,
    definers: HashMap<VarId, Vec<usize>>,
}

impl<'a> Region<'a> {
    /// `block`'s statements as fusion sees them: their roles, dependencies, reachability and
    /// candidate pairs. `interrupt` is called between its steps and every 256 statements while pairs are found:
    /// the top level of a large file has thousands of statements.
    pub fn new(f: &'a Function, block: &'a Block, facts: &'a VarFacts, interrupt: &dyn Fn()) -> Region<'a> {
        let mut classes = Classes { measured: facts.measured.clone(), ..Classes::default() };
        let nodes: Vec<Node> = block.stmts.iter().map(|s| node(f, facts, s, &mut classes)).collect();
        interrupt();
        let nodes: Vec<Node> = nodes
            .into_iter()
            .map(|mut n| {
                n.class = n.class.map(|c| classes.find(c));
                n
            })
            .collect();
        let preds = dependencies(&nodes);
        interrupt();
        let ancestors = reachability(&preds, &nodes.iter().map(sibling_kind).collect::<Vec<_>>());
        interrupt();
        let mut class_of = HashMap::new();
        let mut namer: HashMap<usize, VarId> = HashMap::new();
        let mut vars: Vec<VarId> = classes.of_var.keys().copied().collect();
        vars.sort_unstable();
        for v in vars {
            let c = classes.var(v);
            class_of.insert(v, c);
            namer.entry(c).or_insert(v);
        }
        let mut readers: HashMap<VarId, Vec<usize>> = HashMap::new();
        let mut definers: HashMap<VarId, Vec<usize>> = HashMap::new();
        for (k, node) in nodes.iter().enumerate() {
            for &d in &node.defs {
                definers.entry(d).or_default().push(k);
            }
            for &v in &node.reads {
                let list = readers.entry(v).or_default();
                if list.last() != Some(&k) {
                    list.push(k);
                }
            }
        }
        let mut region = Region {
            class_of,
            readers,
            definers,
            namer,
            f,
            block,
            nodes,
            preds,
            ancestors,
            pairs: Vec::new(),
            paired: Default::default(),
            blocked: Vec::new(),
            facts,
        };
        region.find_pairs(interrupt);
        region.paired = region.pairs.iter().map(|p| (p.a, p.b)).collect();
        region
    }

    /// Candidate pairs (same index space, compatible kinds) and blocked dataflow edges.
    ///
    /// Only the statements that can pair with `b` at all are visited: those that define what
    /// it reads, those it depends on, and those that read a vector it reads. A long chain of
    /// scalar statements thus costs its length, not its square.
    fn find_pairs(&mut self, interrupt: &dyn Fn()) {
        let n = self.nodes.len();
        let mut definers: HashMap<VarId, Vec<usize>> = HashMap::new();
        let mut vector_readers: HashMap<VarId, Vec<usize>> = HashMap::new();
        let mut candidates: Vec<usize> = Vec::new();
        for b in 0..n {
            if b % 256 == 255 {
                interrupt();
            }
            candidates.clear();
            candidates.extend(self.preds[b].iter().copied());
            for v in &self.nodes[b].reads {
                candidates.extend(definers.get(v).into_iter().flatten().copied());
                if self.f.ty(*v).is_vector() {
                    candidates.extend(vector_readers.get(v).into_iter().flatten().copied());
                }
            }
            candidates.sort_unstable();
            candidates.dedup();
            for &a in &candidates {
                self.consider_pair(a, b);
            }
            let node = &self.nodes[b];
            for &d in &node.defs {
                definers.entry(d).or_default().push(b);
            }
            for &v in node.reads.iter().filter(|v| self.f.ty(**v).is_vector()) {
                let readers = vector_readers.entry(v).or_default();
                if readers.last() != Some(&b) {
                    readers.push(b);
                }
            }
        }
    }

    /// Statements `a` and `b` (`a` first): a candidate pair, a blocked dataflow edge, or
    /// nothing.
    fn consider_pair(&mut self, a: usize, b: usize) {
        let (na, nb) = (&self.nodes[a], &self.nodes[b]);
        let passed: u32 = na.defs.iter().filter(|d| nb.reads.contains(d)).map(|&d| self.words(d)).sum();
        let vector_flow = passed > 0 && na.defs.iter().any(|&d| self.f.ty(d).is_vector());
        if passed > 0 {
            let gathered = nb.gathers.iter().any(|g| na.defs.contains(g));
            let blocker =
                if gathered && na.fusable() { Some(Blocker::RandomAccess) } else { blocker(na, nb) };
            if let Some(blocker) = blocker {
                if na.role != Role::Host && nb.role != Role::Host && (vector_flow || na.fusable()) {
                    self.blocked.push((a, b, blocker));
                }
                return;
            }
            self.pairs.push(Pair { a, b, vertical: true, shared: passed });
            return;
        }
        let both = sibling_kind(na) && sibling_kind(nb) && na.class == nb.class;
        // An effect (a check) and what follows it: one kernel keeps their order, since its ops
        // run in program order per element and a failure is explained by running them in order.
        let ordered = na.fusable() && nb.fusable() && na.class == nb.class;
        if ordered && na.effect && self.preds[b].contains(&a) {
            self.pairs.push(Pair { a, b, vertical: true, shared: 0 });
            return;
        }
        if !both || self.reaches(a, b) {
            return;
        }
        let common: u32 = na
            .reads
            .iter()
            .filter(|v| self.f.ty(**v).is_vector() && nb.reads.contains(v))
            .map(|&v| self.words(v))
            .sum();
        if common > 0 {
            self.pairs.push(Pair { a, b, vertical: false, shared: common });
        }
    }

    /// Everything the solvers read of one connected component of candidate pairs (`SolveKey`):
    /// its statements (`nodes`, in program order), its `pairs`, and how they are connected
    /// around it (`relations`, with the kernels of earlier components in place). The rest of the
    /// region reaches a solve only through these, so an edit elsewhere leaves the key alone.
    pub fn component_key(
        &self,
        nodes: &[usize],
        pairs: &[Pair],
        relations: &Relations,
        max_bindings: u32,
    ) -> SolveKey {
        let at = |i: usize| nodes.binary_search(&i).ok();
        let mut key = SolveKey::default();
        let mut vars: HashMap<VarId, u32> = HashMap::new();
        let mut classes: HashMap<usize, u32> = HashMap::new();
        let mut var = |key: &mut SolveKey, v: VarId, region: &Region| {
            let next = vars.len() as u32;
            let id = *vars.entry(v).or_insert(next);
            key.words.push(id);
            if id == next {
                // A variable's first appearance carries what the solvers ask of it, and whether
                // a statement outside the component reads it (then a kernel must write it out).
                let ty = region.f.ty(v);
                // More readers than the component has statements: some reader is outside it.
                let outside = |readers: &Vec<usize>| {
                    readers.len() > nodes.len() || readers.iter().any(|&k| at(k).is_none())
                };
                let escapes =
                    region.block.results.contains(&v) || region.readers.get(&v).is_some_and(outside);
                key.words.extend([
                    u32::from(ty.is_vector()),
                    u32::from(region.is_param(v)),
                    region.words(v),
                    u32::from(escapes),
                ]);
            }
        };
        key.words.extend([max_bindings, nodes.len() as u32]);
        for &i in nodes {
            let node = &self.nodes[i];
            let (role, name) = match &node.role {
                Role::Map => (0, ""),
                Role::Reduce => (1, ""),
                Role::Scan => (2, ""),
                Role::Alone(op) => (3, op.as_str()),
                Role::Host => (4, ""),
            };
            key.words.extend([role, name.chars().count() as u32]);
            key.words.extend(name.chars().map(u32::from));
            let class = node.class.map_or(u32::MAX, |c| {
                let next = classes.len() as u32;
                *classes.entry(c).or_insert(next)
            });
            let flags = [node.effect, node.guard, node.total, node.segmented];
            key.words.push(class);
            key.words.push(flags.iter().enumerate().map(|(i, &f)| u32::from(f) << i).sum());
            for list in [&node.defs, &node.reads] {
                key.words.push(list.len() as u32);
                for &v in list {
                    var(&mut key, v, self);
                }
            }
            key.words.push(node.gathers.len() as u32);
            for &v in &node.gathers {
                var(&mut key, v, self);
            }
            match node.consumes {
                Some(v) => var(&mut key, v, self),
                None => key.words.push(u32::MAX),
            }
            let direct: Vec<u32> = self.preds[i].iter().filter_map(|&p| at(p)).map(|x| x as u32).collect();
            key.words.push(direct.len() as u32);
            key.words.extend(direct);
        }
        key.words.push(pairs.len() as u32);
        for p in pairs {
            let (a, b) = (at(p.a).unwrap_or(usize::MAX) as u32, at(p.b).unwrap_or(usize::MAX) as u32);
            key.words.extend([a, b, u32::from(p.vertical), p.shared]);
        }
        for bits in [&relations.reaches, &relations.outside] {
            key.words.extend(
                bits.chunks(32).map(|c| c.iter().enumerate().map(|(k, &b)| u32::from(b) << k).sum::<u32>()),
            );
        }
        key
    }

    /// Whether a path of dependencies leads from statement `i`, a map or a reduction, to `j`.
    fn reaches(&self, i: usize, j: usize) -> bool {
        let k = self.ancestors.index[i];
        k != usize::MAX && self.ancestors.sets[j][k / 64] & (1 << (k % 64)) != 0
    }

    /// 32-bit words per element of `v`: what a traversal of it moves.
    fn words(&self, v: VarId) -> u32 {
        crate::wgsl::scalar::storage_size(self.f.ty(v).elem) as u32 / 4
    }

    /// The length of vector `v`, named by the first vector known to have the same length.
    pub fn length_name(&self, v: VarId) -> String {
        let named = self.class_of.get(&v).and_then(|c| self.namer.get(c)).copied().unwrap_or(v);
        format!("len({})", super::var_label(self.f, named))
    }

    /// How the statements of one component (`nodes`, in program order) are connected when each
    /// cluster runs as one kernel (a statement reaches the others of its own kernel only
    /// through outside work), or `None` when the kernels there depend on each other in a cycle.
    /// Only the window of statements that paths between `nodes` can pass through is searched
    /// (`window`), once, in reverse topological order, carrying per kernel bit sets over the
    /// component's statements: the cost is the window's size times the component's in words,
    /// not the region's.
    pub fn relations(&self, clusters: &Clusters, nodes: &[usize]) -> Option<Relations> {
        let (&first, &last) = (nodes.first()?, nodes.last()?);
        let (unit, lo, succs) = self.window_graph(clusters, None, first, last);
        let order = topological(&succs)?;
        let k = nodes.len();
        let words = k.div_ceil(64);
        // Each window position's place among the component's statements, if it is one.
        let n = succs.len();
        let mut place = vec![usize::MAX; n];
        for (x, &i) in nodes.iter().enumerate() {
            // Components split the pairs, so the kernels of earlier ones never hold these.
            debug_assert_eq!(
                place[unit[i - lo] - lo],
                usize::MAX,
                "two of a component's statements share a kernel"
            );
            place[unit[i - lo] - lo] = x;
        }
        let has = |set: &[u64], x: usize| set[x / 64] & (1 << (x % 64)) != 0;
        // Per kernel `u`, from its successors, last first: `later[u]`, the component's
        // statements a path from `u` leads to; `via[u]`, those a path from `u` leads to through
        // a kernel that is not one of the component's statements (`u` itself included).
        let mut later = vec![0u64; n * words];
        let mut via = vec![0u64; n * words];
        for &u in order.iter().rev() {
            for &s in succs.of(u) {
                for w in 0..words {
                    later[u * words + w] |= later[s * words + w];
                    via[u * words + w] |= via[s * words + w];
                }
                if place[s] != usize::MAX {
                    later[u * words + place[s] / 64] |= 1 << (place[s] % 64);
                }
            }
            if place[u] == usize::MAX {
                let row = u * words..(u + 1) * words;
                via[row.clone()].copy_from_slice(&later[row]);
            }
        }
        let mut relations = Relations { k, reaches: vec![false; k * k], outside: vec![false; k * k] };
        // Every ordered two, not only those in program order: a kernel of an earlier component
        // that has statements before and after the component can lead from a later statement
        // back to an earlier one.
        let mut outside = vec![0u64; words];
        for (x, &i) in nodes.iter().enumerate() {
            let at = unit[i - lo] - lo;
            outside.fill(0);
            for &s in succs.of(at) {
                outside.iter_mut().zip(&via[s * words..(s + 1) * words]).for_each(|(o, &v)| *o |= v);
            }
            let reached = &later[at * words..(at + 1) * words];
            for y in (0..k).filter(|&y| y != x && has(reached, y)) {
                relations.reaches[x * k + y] = true;
                relations.outside[x * k + y] = has(&outside, y);
            }
        }
        Some(relations)
    }

    /// Whether the kernels around statements `a` and `b` (their clusters as `clusters` has
    /// them, with the clusters `joined` names, two roots, as one) still form a schedule: no
    /// cycle between kernels in the window that paths between them can pass through.
    pub fn acyclic_around(
        &self,
        clusters: &Clusters,
        joined: Option<(usize, usize)>,
        a: usize,
        b: usize,
    ) -> bool {
        topological(&self.window_graph(clusters, joined, a.min(b), a.max(b)).2).is_some()
    }

    /// The kernels of the window around `lo..=hi` (`window`) as a graph: each of its
    /// statements' kernel (`unit`), the window's first statement, and each kernel's
    /// successors, indexed by its root's position in the window (the other positions have no
    /// edges).
    fn window_graph(
        &self,
        clusters: &Clusters,
        joined: Option<(usize, usize)>,
        lo: usize,
        hi: usize,
    ) -> (Vec<usize>, usize, Successors) {
        let (lo, hi) = self.window(clusters, joined, lo, hi);
        let unit: Vec<usize> = (lo..=hi).map(|i| self.unit(clusters, joined, i)).collect();
        let at = |i: usize| unit[i - lo] - lo;
        let edges = (lo..=hi).flat_map(|j| {
            let unit = &unit;
            (self.preds[j].iter().filter(move |&&i| i >= lo && unit[i - lo] != unit[j - lo]))
                .map(move |&i| (at(i), at(j)))
        });
        let succs = Successors::new(hi - lo + 1, edges);
        (unit, lo, succs)
    }

    /// The window `lo..=hi` widened until no kernel that overlaps it has a statement outside
    /// it. Dependencies point only forward in program order, so a path that leaves the window
    /// could come back only through a kernel whose statements lie on both sides of an end: one
    /// with a statement inside the window, or one that spans it with none inside. Once no
    /// kernel overlaps an end, every path between statements in the window stays in it. Only
    /// the statements the window gains are looked at, so this costs the window, not the region.
    fn window(
        &self,
        clusters: &Clusters,
        joined: Option<(usize, usize)>,
        lo: usize,
        hi: usize,
    ) -> (usize, usize) {
        let (mut seen_lo, mut seen_hi) = (lo, lo);
        let (mut l, mut h) = (lo, hi);
        loop {
            let new = (l..seen_lo).chain(seen_hi.max(l)..=h);
            (seen_lo, seen_hi) = (l, h + 1);
            let (mut wider_l, mut wider_h) = (l, h);
            for i in new {
                let (first, last) = self.kernel_span(clusters, joined, i);
                (wider_l, wider_h) = (wider_l.min(first), wider_h.max(last));
            }
            if let Some((first, last)) = clusters.spanning(l, h) {
                (wider_l, wider_h) = (wider_l.min(first), wider_h.max(last));
            }
            if (wider_l, wider_h) == (l, h) {
                return (l, h);
            }
            (l, h) = (wider_l, wider_h);
        }
    }

    /// Whether the kernels `clusters` makes (each cluster one kernel, every other statement its
    /// own) can be scheduled: none depends on another in a cycle.
    pub fn schedulable(&self, clusters: &Clusters) -> bool {
        // The whole region is a window no kernel straddles.
        self.nodes.is_empty()
            || topological(&self.window_graph(clusters, None, 0, self.nodes.len() - 1).2).is_some()
    }

    /// Each statement's kernel: its cluster's root, or itself if it cannot join one.
    pub(super) fn units(&self, clusters: &Clusters) -> Vec<usize> {
        (0..self.nodes.len()).map(|i| self.unit(clusters, None, i)).collect()
    }

    /// Statement `i`'s kernel, named by its first statement, with the clusters `joined` names
    /// (two roots) as one.
    fn unit(&self, clusters: &Clusters, joined: Option<(usize, usize)>, i: usize) -> usize {
        if !self.nodes[i].fusable() {
            return i;
        }
        let root = clusters.find(i);
        match joined {
            Some((a, b)) if root == a || root == b => a.min(b),
            _ => root,
        }
    }

    /// The first and last statement of statement `i`'s kernel, as `unit` joins them.
    fn kernel_span(&self, clusters: &Clusters, joined: Option<(usize, usize)>, i: usize) -> (usize, usize) {
        if !self.nodes[i].fusable() {
            return (i, i);
        }
        let (first, last) = clusters.span(i);
        match joined {
            Some((a, b)) if first == a || first == b => {
                let (other_first, other_last) = clusters.span(if first == a { b } else { a });
                (first.min(other_first), last.max(other_last))
            }
            _ => (first, last),
        }
    }

    /// The storage buffers a kernel of `members` binds (in program order, as every `members`
    /// here): the parameters, every vector (or possibly device-resident scalar) it reads from
    /// outside, every value it writes out, the partial results of each reduction, and the error
    /// record if something in it can fail.
    pub fn bindings(&self, members: &[usize]) -> u32 {
        let mut inputs: Vec<VarId> = Vec::new();
        let mut outputs = 0;
        let mut reduces = 0;
        let mut fails = false;
        for (i, node) in members.iter().map(|&i| (i, &self.nodes[i])) {
            fails |= node.effect;
            // A reduction's partials; a scan's block sums; a segmented op's ids, starts, values
            // and flags.
            reduces += match node.role {
                Role::Reduce | Role::Scan if !node.segmented => 1,
                Role::Scan => 4,
                _ => 0,
            };
            for &v in &node.reads {
                let inside = self.defined_by(members, v, i);
                if !inside && !self.is_param(v) && !inputs.contains(&v) {
                    inputs.push(v);
                }
            }
            outputs += node.defs.iter().filter(|&&d| self.read_outside(members, d)).count() as u32;
        }
        1 + inputs.len() as u32 + outputs + reduces + u32::from(fails)
    }

    /// Whether `v`, as read by statement `at`, is defined by a member before it.
    fn defined_by(&self, members: &[usize], v: VarId, at: usize) -> bool {
        let definers = self.definers.get(&v).map_or(&[][..], Vec::as_slice);
        let before = definers.partition_point(|&k| k < at);
        before > 0 && is_member(members, definers[before - 1])
    }

    /// A scalar that travels in the parameter slots: on the host, and 32 bits wide.
    fn is_param(&self, v: VarId) -> bool {
        let ty = self.f.ty(v);
        !ty.is_vector()
            && !matches!(ty.elem, Scalar::I64 | Scalar::F64)
            && self.facts.host.get(v as usize).copied().unwrap_or(false)
    }

    /// Whether a value that members define is read after them by someone else: it must be
    /// written out.
    pub fn read_outside(&self, members: &[usize], v: VarId) -> bool {
        let Some(&def) = self.definers.get(&v).and_then(|d| d.first()) else {
            return false;
        };
        if !is_member(members, def) {
            return false;
        }
        let read_later = (self.readers.get(&v))
            .is_some_and(|readers| readers.iter().any(|&k| k > def && !is_member(members, k)));
        read_later || self.block.results.contains(&v)
    }
}

/// Whether statement `i` is one of `members` (in program order).
fn is_member(members: &[usize], i: usize) -> bool {
    members.binary_search(&i).is_ok()
}

fn blocker(a: &Node, b: &Node) -> Option<Blocker> {
    let name = |n: &Node| match &n.role {
        Role::Map => "map",
        Role::Reduce => "reduce",
        Role::Scan => "scan",
        Role::Alone(_) | Role::Host => "op",
    };
    match (&a.role, &b.role) {
        (Role::Alone(op), _) | (_, Role::Alone(op)) => Some(Blocker::NoFusedForm(op.clone())),
        (Role::Host, _) | (_, Role::Host) => Some(Blocker::NoFusedForm("host".into())),
        (Role::Reduce | Role::Scan, _) => Some(Blocker::Incompatible(name(a), name(b))),
        _ if a.class != b.class => Some(Blocker::IndexSpaces),
        _ => None,
    }
}

/// The direct dependencies of each statement: read after write, write after read, write
/// after write; an effect on the last effect before it, and anything else on the last guard.
fn dependencies(nodes: &[Node]) -> Vec<Vec<usize>> {
    let mut preds = vec![Vec::new(); nodes.len()];
    let mut last_def: HashMap<VarId, usize> = HashMap::new();
    let mut readers: HashMap<VarId, Vec<usize>> = HashMap::new();
    let mut last_effect = None;
    let mut last_guard = None;
    for (j, node) in nodes.iter().enumerate() {
        let mut add = |i: usize| {
            if i != j && !preds[j].contains(&i) {
                preds[j].push(i);
            }
        };
        for v in &node.reads {
            if let Some(&i) = last_def.get(v) {
                add(i);
            }
        }
        for d in &node.defs {
            if let Some(&i) = last_def.get(d) {
                add(i);
            }
            for &r in readers.get(d).map(Vec::as_slice).unwrap_or(&[]) {
                add(r);
            }
        }
        // Nothing moves before a check it followed: an op may only be valid because an earlier
        // check passed (a zip's lengths, an index). A total op (a map of one vector, a
        // reduction: `max` of nothing is its identity until the check stops the run) may.
        // Effects keep their order, so a failure comes after the output printed before it.
        let before = if node.effect { last_effect } else { last_guard.filter(|_| !node.total) };
        if let Some(i) = before {
            add(i);
        }
        if node.effect {
            last_effect = Some(j);
        }
        if node.guard {
            last_guard = Some(j);
        }
        for v in &node.reads {
            readers.entry(*v).or_default().push(j);
        }
        for d in &node.defs {
            last_def.insert(*d, j);
            readers.remove(d);
        }
    }
    preds
}

/// Everything the ILP reads of one component of a region, its variables and length classes
/// numbered in the order they appear: each statement's role, index space, flags, operands and
/// dependencies inside the component, its candidate pairs, how its statements are connected
/// around it, and of each variable whether it is a vector, travels as a parameter, how wide it
/// is and whether something outside the component reads it. Components with equal keys get
/// the same kernels, so a solve is reused across edits that leave its component alone,
/// wherever it moved (`SolveCache`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct SolveKey {
    words: Vec<u32>,
}

/// How the statements of one component (`nodes`, in program order) are connected, with the
/// kernels of earlier components in place: for each ordered two, `x` and `y` positions in
/// `nodes`, whether a path of dependencies leads from the first to the second, and whether one
/// passes through a statement outside the component. A path can lead from a later statement
/// back to an earlier one through an earlier component's kernel that spans both. All that the
/// component's solve (its ILP, its legality and schedule checks) asks of the region beyond
/// the component's own statements.
pub struct Relations {
    k: usize,
    reaches: Vec<bool>,
    outside: Vec<bool>,
}

impl Relations {
    /// Whether a path leads from the `x`th statement to the `y`th.
    pub fn reaches(&self, x: usize, y: usize) -> bool {
        self.reaches[x * self.k + y]
    }

    /// Whether a path from the `x`th statement to the `y`th passes outside the component.
    pub fn outside(&self, x: usize, y: usize) -> bool {
        self.outside[x * self.k + y]
    }
}

/// A graph's edges grouped by their source (compressed rows): one allocation however many
/// nodes, where a window of the top level has thousands. An edge may repeat.
struct Successors {
    /// Node `u`'s successors are `targets[starts[u]..starts[u + 1]]`.
    starts: Vec<usize>,
    targets: Vec<usize>,
}

impl Successors {
    fn new(n: usize, edges: impl Iterator<Item = (usize, usize)> + Clone) -> Successors {
        let mut starts = vec![0; n + 1];
        for (from, _) in edges.clone() {
            starts[from + 1] += 1;
        }
        for u in 0..n {
            starts[u + 1] += starts[u];
        }
        let mut filled = starts.clone();
        let mut targets = vec![0; starts[n]];
        for (from, to) in edges {
            targets[filled[from]] = to;
            filled[from] += 1;
        }
        Successors { starts, targets }
    }

    fn len(&self) -> usize {
        self.starts.len() - 1
    }

    fn of(&self, u: usize) -> &[usize] {
        &self.targets[self.starts[u]..self.starts[u + 1]]
    }
}

/// A topological order of a graph, or `None` when it has a cycle.
fn topological(succs: &Successors) -> Option<Vec<usize>> {
    let mut waiting = vec![0usize; succs.len()];
    for &s in &succs.targets {
        waiting[s] += 1;
    }
    let mut ready: Vec<usize> = (0..succs.len()).filter(|&u| waiting[u] == 0).collect();
    let mut order = Vec::with_capacity(succs.len());
    while let Some(u) = ready.pop() {
        order.push(u);
        for &s in succs.of(u) {
            waiting[s] -= 1;
            if waiting[s] == 0 {
                ready.push(s);
            }
        }
    }
    (order.len() == succs.len()).then_some(order)
}

/// Ancestors among the statements that can be siblings: `sets[j]` has bit `index[i]` when a
/// path of dependencies leads from `i` to `j`; `index[i]` is `usize::MAX` for the others.
struct Ancestors {
    index: Vec<usize>,
    sets: Vec<Vec<u64>>,
}

/// Each statement's ancestors among those `tracked`. Statements only depend on earlier ones, so
/// one pass in order closes the relation, a word of 64 tracked statements at a time; tracking
/// only maps and reductions keeps a long chain of scalar statements from costing its square.
fn reachability(preds: &[Vec<usize>], tracked: &[bool]) -> Ancestors {
    let mut index = vec![usize::MAX; preds.len()];
    let mut count = 0;
    for (i, _) in tracked.iter().enumerate().filter(|(_, t)| **t) {
        index[i] = count;
        count += 1;
    }
    let words = count.div_ceil(64);
    let mut sets: Vec<Vec<u64>> = Vec::with_capacity(preds.len());
    for p in preds {
        let mut mine = vec![0u64; words];
        for &i in p {
            for (word, theirs) in mine.iter_mut().zip(&sets[i]) {
                *word |= theirs;
            }
            if index[i] != usize::MAX {
                mine[index[i] / 64] |= 1 << (index[i] % 64);
            }
        }
        sets.push(mine);
    }
    Ancestors { index, sets }
}

/// Maps and reductions: the statements that can fuse as siblings, reading a common input.
fn sibling_kind(node: &Node) -> bool {
    matches!(node.role, Role::Map | Role::Reduce)
}

/// Length classes, by union-find over vector variables (and `iota`/`replicate` lengths).
#[derive(Default)]
struct Classes {
    parent: Vec<usize>,
    of_var: HashMap<VarId, usize>,
    of_len: HashMap<VarId, usize>,
    /// The vector each `length` op measures, by its result: an `iota` of a vector's length
    /// is in that vector's class (a segmented concatenation's element positions, beside its
    /// segment ids).
    measured: HashMap<VarId, VarId>,
}

/// Each `length` op's result and the vector it measures, in `block` and its nested blocks.
fn measured_vectors(block: &Block) -> HashMap<VarId, VarId> {
    let mut out = HashMap::new();
    let mut blocks = vec![block];
    while let Some(block) = blocks.pop() {
        for stmt in &block.stmts {
            match &stmt.kind {
                StmtKind::Op { dest: Some(d), op: Op::Length(v) } => {
                    out.insert(*d, *v);
                }
                StmtKind::If { then: a, otherwise: b, .. }
                | StmtKind::While { cond: a, body: b, .. }
                | StmtKind::ElementLoop { cond: a, body: b, .. } => blocks.extend([a, b]),
                _ => {}
            }
        }
    }
    out
}

impl Classes {
    fn fresh(&mut self) -> usize {
        self.parent.push(self.parent.len());
        self.parent.len() - 1
    }

    fn find(&mut self, mut c: usize) -> usize {
        while self.parent[c] != c {
            self.parent[c] = self.parent[self.parent[c]];
            c = self.parent[c];
        }
        c
    }

    fn var(&mut self, v: VarId) -> usize {
        if let Some(&c) = self.of_var.get(&v) {
            return self.find(c);
        }
        let c = self.fresh();
        self.of_var.insert(v, c);
        c
    }

    fn len(&mut self, len: VarId) -> usize {
        if let Some(&v) = self.measured.get(&len) {
            return self.var(v);
        }
        if let Some(&c) = self.of_len.get(&len) {
            return self.find(c);
        }
        let c = self.fresh();
        self.of_len.insert(len, c);
        c
    }

    fn union(&mut self, a: usize, b: usize) -> usize {
        let (a, b) = (self.find(a), self.find(b));
        self.parent[b] = a;
        a
    }
}

fn node(f: &Function, facts: &VarFacts, stmt: &Stmt, classes: &mut Classes) -> Node {
    let mut reads = Vec::new();
    stmt.reads(&mut reads);
    reads.dedup();
    let (defs, role, class, effect) = match &stmt.kind {
        StmtKind::Op { dest, op } => {
            let (role, class) = op_role(f, *dest, op, classes);
            (dest.iter().copied().collect(), role, class, op_may_fail(&f.vars, facts, op))
        }
        StmtKind::If { dests, .. }
        | StmtKind::While { dests, .. }
        | StmtKind::Call { dests, .. }
        | StmtKind::ElementLoop { dests, .. } => (dests.clone(), Role::Host, None, true),
        StmtKind::Kernel(kernel) => (kernel.outputs.clone(), Role::Host, None, true),
        StmtKind::Print { .. } => (Vec::new(), Role::Host, None, true),
    };
    let gathers = match &stmt.kind {
        StmtKind::Op { op, .. } => op
            .operands()
            .into_iter()
            .enumerate()
            .filter(|&(k, _)| op.reads_whole(k))
            .map(|(_, v)| v)
            .collect(),
        _ => Vec::new(),
    };
    let (consumes, segmented) = match &stmt.kind {
        StmtKind::Op { op: Op::Scan { src, .. }, .. } if role == Role::Scan => (Some(*src), false),
        StmtKind::Op { op: Op::SegReduce { src, .. } | Op::SegScan { src, .. }, .. }
            if role == Role::Scan =>
        {
            (Some(*src), true)
        }
        _ => (None, false),
    };
    let guard = effect && !matches!(stmt.kind, StmtKind::Print { .. });
    let total = match &stmt.kind {
        StmtKind::Op { op, .. } => {
            let vectors = op.operands().iter().filter(|&&v| f.ty(v).is_vector()).count();
            !effect && vectors <= 1 && (op.is_element_wise() || matches!(op, Op::Reduce { .. }))
        }
        _ => false,
    };
    Node { role, class, effect, guard, total, defs, reads, gathers, consumes, segmented }
}

fn op_role(f: &Function, dest: Option<VarId>, op: &Op, classes: &mut Classes) -> (Role, Option<usize>) {
    let vector = |v: VarId| f.ty(v).is_vector();
    let operands = op.operands();
    let any_vector = operands.iter().any(|&v| vector(v)) || dest.is_some_and(vector);
    // A vector's length is known to the host: no kernel.
    if !any_vector || matches!(op, Op::Length(_)) {
        return (Role::Host, None);
    }
    match op {
        _ if op.is_element_wise() => {
            let mut class = dest.map(|d| classes.var(d));
            for &v in operands.iter().filter(|&&v| vector(v)) {
                let c = classes.var(v);
                class = Some(class.map_or(c, |k| classes.union(k, c)));
            }
            (Role::Map, class)
        }
        // One thread per index: the sources are read anywhere.
        Op::Gather { index, .. } | Op::GatherEither { index, .. } if vector(*index) => {
            let mut class = classes.var(*index);
            let per_index = operands.iter().enumerate().filter(|&(k, &v)| !op.reads_whole(k) && vector(v));
            for v in per_index.map(|(_, &v)| v).chain(dest) {
                let c = classes.var(v);
                class = classes.union(class, c);
            }
            (Role::Map, Some(class))
        }
        Op::Check(check) if !matches!(check, Check::Permutation { .. } | Check::PartitionLengths { .. }) => {
            let mut class = None;
            for &v in operands.iter().filter(|&&v| vector(v)) {
                let c = classes.var(v);
                class = Some(class.map_or(c, |k| classes.union(k, c)));
            }
            (Role::Map, class)
        }
        Op::Iota { len } | Op::Replicate { len, .. } if operands.iter().all(|&v| !vector(v)) => {
            let c = classes.len(*len);
            let class = dest.map_or(c, |d| {
                let k = classes.var(d);
                classes.union(c, k)
            });
            (Role::Map, Some(class))
        }
        Op::Reduce { src, .. } => (Role::Reduce, Some(classes.var(*src))),
        Op::Scan { src, .. } if vector(*src) => {
            let class = classes.var(*src);
            let class = dest.map_or(class, |d| {
                let c = classes.var(d);
                classes.union(class, c)
            });
            (Role::Scan, Some(class))
        }
        Op::SegReduce { op, src, .. } | Op::SegScan { op, src, .. }
            if vector(*src) && !matches!(op, crate::ir::ReduceOp::Min | crate::ir::ReduceOp::Max) =>
        {
            (Role::Scan, Some(classes.var(*src)))
        }
        other => (Role::Alone(other.name()), None),
    }
}

/// Whether the op can stop the program: checks, and the integer ops that fail on some
/// operands.
pub fn op_may_fail(vars: &[crate::ir::VarInfo], facts: &VarFacts, op: &Op) -> bool {
    match op {
        Op::Check(_) | Op::Load { .. } => true,
        Op::Binary(b, x, divisor) => {
            let int = matches!(vars[*x as usize].ty.elem, Scalar::I32 | Scalar::I64);
            let by_nonzero = facts.nonzero.get(*divisor as usize).copied().unwrap_or(false);
            int && match b {
                BinaryOp::FloorDiv | BinaryOp::Mod => !by_nonzero,
                BinaryOp::Pow | BinaryOp::Shl | BinaryOp::Shr => true,
                _ => false,
            }
        }
        _ => false,
    }
}

/// What fusion knows of a function's scalar variables, by variable.
pub struct VarFacts {
    /// Known to live on the host (a constant, a length, or element-wise host arithmetic on
    /// such), which a kernel takes as a parameter.
    pub host: Vec<bool>,
    /// An integer constant other than zero: a divisor that cannot fail.
    pub nonzero: Vec<bool>,
    /// The vector each `length` op measures, by its result (`measured_vectors`).
    measured: HashMap<VarId, VarId>,
}

impl VarFacts {
    pub fn of(f: &Function) -> VarFacts {
        let mut facts = VarFacts {
            host: vec![false; f.vars.len()],
            nonzero: vec![false; f.vars.len()],
            measured: measured_vectors(&f.body),
        };
        facts.walk(&f.body, f);
        facts
    }

    fn walk(&mut self, block: &Block, f: &Function) {
        for stmt in &block.stmts {
            match &stmt.kind {
                StmtKind::Op { dest: Some(d), op } if !f.ty(*d).is_vector() => {
                    self.nonzero[*d as usize] = matches!(op, Op::Const(Literal::Int(k, _)) if *k != 0);
                    self.host[*d as usize] = match op {
                        Op::Const(_) | Op::Length(_) => true,
                        Op::Unary(..) | Op::Binary(..) | Op::Select(..) | Op::Cast(..) | Op::Math(..) => {
                            op.operands().iter().all(|&v| self.host[v as usize])
                        }
                        _ => false,
                    };
                }
                StmtKind::If { then: a, otherwise: b, .. } | StmtKind::While { cond: a, body: b, .. } => {
                    self.walk(a, f);
                    self.walk(b, f);
                }
                _ => {}
            }
        }
    }
}
