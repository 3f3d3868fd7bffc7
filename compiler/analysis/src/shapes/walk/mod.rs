//! The walk over one body: an abstract interpretation of the HIR in which every value is its
//! `Shape`. Statements are walked in order with an environment of shapes (flow-sensitive, so a
//! rebinding changes what later reads see); loops are walked until the shapes they rebind are
//! stable, widening what changes to unknowns; comprehensions forget what depends on their
//! variables, which is what makes a nested result irregular. Calls (of the prelude and of
//! top-level functions, through their summaries) are in `calls`.

mod calls;

use rowan::TextRange;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::symbolic::{Atom, AtomId, Definition, Linear, fits_i32, provably_in_bounds, provably_nonneg};
use super::{BindingShape, BodyShapes, Len, Shape};
use crate::db::{Db, SourceFile};
use crate::hir::{self, Body, Clause, ExprId, LambdaBody, LambdaId, Literal, LocalId, Pattern, Stmt};
use crate::infer::BodyTypes;
use weft_core::types::{Scalar, Type};

pub(super) struct Walker<'a> {
    db: &'a dyn Db,
    file: SourceFile,
    body: &'a Body,
    types: &'a BodyTypes,
    /// The body's source text (the `def`, or the file), for naming atoms after expressions.
    source: &'a str,
    /// The top-level functions this body must not ask the shapes of: those in its call cycle.
    callers: HashSet<u32>,
    atoms: Vec<Atom>,
    /// Atoms that are functions of others (`max(e, 0)`, `a * b`), shared between equal ones.
    interned: HashMap<Definition, AtomId>,
    /// Atoms for what nothing is known of but which one expression determines (the length of
    /// `flatten(xss)`), shared between the reads of that expression while its locals keep their
    /// values (`Term`).
    opaque: HashMap<Term, AtomId>,
    /// Each local's current value, as a number a binding changes (`rebind`); a local with none
    /// keeps the value it had on entry.
    versions: HashMap<LocalId, u32>,
    next_version: u32,
    /// Atoms minted for a value not yet bound: the first binding names them.
    unnamed: HashSet<AtomId>,
    env: HashMap<LocalId, Shape>,
    globals: HashMap<String, Shape>,
    /// Locals bound more than once: a lambda reading one may see any of its values.
    rebound: HashSet<LocalId>,
    returns: Vec<Shape>,
    out: BodyShapes,
}

/// A value one expression determines: the expression, with each local it reads at the value it
/// has (its `versions` entry). Two reads with one `Term` compute one value, so an atom standing
/// for that value (or for its length) can be shared between them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Term {
    Local(LocalId, Option<u32>),
    Int(i64),
    /// A call of a prelude function whose result depends only on its arguments.
    Call(String, Vec<Term>),
    /// The length of the term's value: the key of a length atom, where the term's own key is
    /// that of an integer atom (`count(mask)`).
    Len(Box<Term>),
}

/// The prelude functions whose result is determined by their arguments alone, and whose
/// arguments are values (no function, whose result may depend on what it captures).
const DETERMINED_BY_ARGUMENTS: &[&str] = &[
    "len",
    "range",
    "indices",
    "zip",
    "unzip",
    "concat",
    "flatten",
    "reverse",
    "replicate",
    "gather",
    "scatter",
    "permute",
    "sort",
    "count",
    "lengths",
    "i32",
];

/// How far the walk had got, to undo a loop pass that turned out not to be stable.
struct Marks {
    bindings: usize,
    diagnostics: usize,
    proven: usize,
    index_sites: u32,
    equal_lengths: usize,
}

impl<'a> Walker<'a> {
    pub(super) fn new(
        db: &'a dyn Db,
        file: SourceFile,
        body: &'a Body,
        types: &'a BodyTypes,
        source: &'a str,
        callers: HashSet<u32>,
    ) -> Walker<'a> {
        Walker {
            db,
            file,
            body,
            types,
            source,
            callers,
            atoms: Vec::new(),
            interned: HashMap::default(),
            opaque: HashMap::default(),
            versions: HashMap::default(),
            next_version: 0,
            unnamed: HashSet::default(),
            env: HashMap::default(),
            globals: HashMap::default(),
            rebound: rebound_locals(body),
            returns: Vec::new(),
            out: BodyShapes::default(),
        }
    }

    /// Walks a function: its parameters are unknowns named after them.
    pub(super) fn function(mut self) -> BodyShapes {
        for param in &self.body.params {
            let local = self.body.local(param.local);
            let shape = self.param_shape(self.types.local(param.local).clone(), &local.name);
            self.record(param.local, local.range, shape.clone());
            self.out.params.push(shape.clone());
            self.env.insert(param.local, shape);
        }
        let root = self.body.root.clone();
        self.block(&root);
        let returns = std::mem::take(&mut self.returns);
        self.out.ret = returns.into_iter().reduce(|a, b| self.join(&a, &b));
        self.finish()
    }

    pub(super) fn top_level(mut self) -> BodyShapes {
        let root = self.body.root.clone();
        self.block(&root);
        self.finish()
    }

    fn finish(mut self) -> BodyShapes {
        self.out.atoms = self.atoms;
        self.out
    }

    // --- atoms --------------------------------------------------------------------------------

    fn atom(&mut self, name: impl Into<String>, nonneg: bool) -> AtomId {
        self.atoms.push(Atom { name: name.into(), nonneg, lower: None, upper: None, definition: None });
        (self.atoms.len() - 1) as AtomId
    }

    /// `local` gets a new value: reads from here on are other `Term`s than those before.
    fn rebind(&mut self, local: LocalId) {
        self.versions.insert(local, self.next_version);
        self.next_version += 1;
    }

    /// The `Term` an expression computes, when it is one.
    pub(super) fn term(&self, expr: ExprId) -> Option<Term> {
        match self.body.expr(expr) {
            hir::Expr::Local(local) => Some(Term::Local(*local, self.versions.get(local).copied())),
            hir::Expr::Literal(Literal::Int(i)) => Some(Term::Int(*i)),
            hir::Expr::Call { callee, args } => match self.body.expr(*callee) {
                hir::Expr::Prelude(name) if DETERMINED_BY_ARGUMENTS.contains(&name.as_str()) => {
                    let args = args.iter().map(|&a| self.term(a)).collect::<Option<Vec<Term>>>()?;
                    Some(Term::Call(name.clone(), args))
                }
                _ => None,
            },
            _ => None,
        }
    }

    /// The atom for `term`, minted (named `name` until a binding names it) on its first use.
    pub(super) fn opaque_atom(&mut self, term: Term, name: String, nonneg: bool) -> AtomId {
        if let Some(&atom) = self.opaque.get(&term) {
            return atom;
        }
        let atom = self.atom(name, nonneg);
        self.unnamed.insert(atom);
        self.opaque.insert(term, atom);
        atom
    }

    /// A length nothing is known of, named after `hint` until a binding names it.
    fn unknown_len(&mut self, hint: &str) -> Linear {
        let atom = self.atom(format!("len({hint})"), true);
        self.unnamed.insert(atom);
        Linear::atom(atom)
    }

    /// The atom for a function of other atoms, shared by equal ones.
    fn defined_atom(&mut self, definition: Definition) -> AtomId {
        let name = match &definition {
            Definition::Max0(value) => format!("max({}, 0)", value.display(&self.atoms)),
            Definition::Product(a, b) => {
                format!("({}) * ({})", a.display(&self.atoms), b.display(&self.atoms))
            }
        };
        if let Some(&atom) = self.interned.get(&definition) {
            return atom;
        }
        let atom = self.atom(name, true);
        self.atoms[atom as usize].definition = Some(definition.clone());
        self.interned.insert(definition, atom);
        atom
    }

    /// Whether `atom` is minted inside a scope that started at `watermark`, or is a function of
    /// one that is.
    fn minted_since(&self, atom: AtomId, watermark: usize) -> bool {
        match self.atoms.get(atom as usize).and_then(|a| a.definition.as_ref()) {
            Some(definition) => {
                definition.operands().iter().any(|l| l.mentions(|a| self.minted_since(a, watermark)))
            }
            None => atom as usize >= watermark,
        }
    }

    /// `max(value, 0)`: `value` itself when it is provably non-negative.
    fn clamped(&mut self, value: &Linear) -> Linear {
        if provably_nonneg(value, &self.atoms) {
            return value.clone();
        }
        if let Some(c) = value.as_constant() {
            return Linear::constant(c.max(0));
        }
        Linear::atom(self.defined_atom(Definition::Max0(value.clone())))
    }

    fn text(&self, expr: ExprId) -> String {
        let range = self.body.expr_range(expr);
        let text = self.source.get(usize::from(range.start())..usize::from(range.end())).unwrap_or("…");
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if text.chars().count() > 32 {
            format!("{}…", text.chars().take(31).collect::<String>())
        } else {
            text
        }
    }

    // --- shapes from types --------------------------------------------------------------------

    /// A parameter's shape: its length and integer value are atoms named after it.
    fn param_shape(&mut self, ty: Type, name: &str) -> Shape {
        match ty {
            Type::Seq(elem) => {
                let len = Linear::atom(self.atom(format!("len({name})"), true));
                Shape::Seq { len: Len::Known(len), elem: Box::new(element_of_type(&elem)) }
            }
            Type::Scalar(Scalar::I32) => Shape::Int(Linear::atom(self.atom(name, false))),
            Type::Tuple(items) => Shape::Tuple(
                items
                    .into_iter()
                    .enumerate()
                    .map(|(i, t)| self.param_shape(t, &format!("{name}[{i}]")))
                    .collect(),
            ),
            _ => Shape::Scalar,
        }
    }

    /// A value of type `ty` nothing is known of.
    fn unknown(&mut self, ty: &Type, hint: &str) -> Shape {
        match ty {
            Type::Seq(elem) => {
                Shape::Seq { len: Len::Known(self.unknown_len(hint)), elem: Box::new(element_of_type(elem)) }
            }
            Type::Tuple(items) => Shape::Tuple(items.iter().map(|t| self.unknown(t, hint)).collect()),
            Type::Scalar(Scalar::I32) => {
                let atom = self.atom(hint, false);
                self.unnamed.insert(atom);
                Shape::Int(Linear::atom(atom))
            }
            _ => Shape::Scalar,
        }
    }

    /// A local's value nothing is known of, its atoms named after it.
    fn unknown_local(&mut self, local: LocalId) -> Shape {
        let ty = self.types.local(local).clone();
        let name = self.body.local(local).name.clone();
        self.unknown(&ty, &name)
    }

    fn unknown_expr(&mut self, expr: ExprId) -> Shape {
        let ty = self.types.expr_types.get(expr as usize).cloned().unwrap_or(Type::Tuple(vec![]));
        let hint = self.text(expr);
        self.unknown(&ty, &hint)
    }

    /// One element of a sequence, as a value: a length that varies between elements becomes an
    /// atom of its own, and an index from a `range` an atom with the range's bounds.
    fn instantiate(&mut self, shape: &Shape, hint: &str) -> Shape {
        match shape {
            Shape::Seq { len: Len::Varies, elem } => {
                Shape::Seq { len: Len::Known(self.unknown_len(hint)), elem: elem.clone() }
            }
            Shape::Index { lower, upper } => {
                let atom = self.atom(hint, false);
                self.atoms[atom as usize].lower = Some(lower.clone());
                self.atoms[atom as usize].upper = Some(upper.clone());
                self.unnamed.insert(atom);
                Shape::Int(Linear::atom(atom))
            }
            Shape::Tuple(items) => Shape::Tuple(
                items.iter().enumerate().map(|(i, s)| self.instantiate(s, &format!("{hint}[{i}]"))).collect(),
            ),
            other => other.clone(),
        }
    }

    /// What is left of `shape` outside a scope whose atoms are those from `watermark` on.
    fn forget_since(&self, shape: &Shape, watermark: usize) -> Shape {
        let inner = |l: &Linear| l.mentions(|a| self.minted_since(a, watermark));
        match shape {
            Shape::Seq { len, elem } => {
                let len = match len {
                    Len::Known(l) if !inner(l) => Len::Known(l.clone()),
                    _ => Len::Varies,
                };
                Shape::Seq { len, elem: Box::new(self.forget_since(elem, watermark)) }
            }
            Shape::Int(l) if inner(l) => Shape::Scalar,
            Shape::Index { lower, upper } if inner(lower) || inner(upper) => Shape::Scalar,
            Shape::Tuple(items) => {
                Shape::Tuple(items.iter().map(|s| self.forget_since(s, watermark)).collect())
            }
            other => other.clone(),
        }
    }

    /// A shape that covers both (an `if`'s two branches): what differs becomes unknown.
    fn join(&mut self, a: &Shape, b: &Shape) -> Shape {
        match (a, b) {
            _ if a == b => a.clone(),
            (Shape::Seq { len: la, elem: ea }, Shape::Seq { len: lb, elem: eb }) => {
                let len = match (la, lb) {
                    (Len::Known(x), Len::Known(y)) if x == y => Len::Known(x.clone()),
                    (Len::Known(_), Len::Known(_)) => Len::Known(self.unknown_len("…")),
                    _ => Len::Varies,
                };
                let elem = self.join_elements(ea, eb);
                Shape::Seq { len, elem: Box::new(elem) }
            }
            (Shape::Tuple(x), Shape::Tuple(y)) if x.len() == y.len() => {
                Shape::Tuple(x.iter().zip(y).map(|(a, b)| self.join(a, b)).collect())
            }
            _ => Shape::Scalar,
        }
    }

    /// As `join`, for elements: lengths that differ vary.
    fn join_elements(&mut self, a: &Shape, b: &Shape) -> Shape {
        match (a, b) {
            _ if a == b => a.clone(),
            (Shape::Seq { elem: ea, .. }, Shape::Seq { elem: eb, .. }) => {
                Shape::Seq { len: Len::Varies, elem: Box::new(self.join_elements(ea, eb)) }
            }
            (Shape::Tuple(x), Shape::Tuple(y)) if x.len() == y.len() => {
                Shape::Tuple(x.iter().zip(y).map(|(a, b)| self.join_elements(a, b)).collect())
            }
            _ => Shape::Scalar,
        }
    }

    // --- statements ---------------------------------------------------------------------------

    fn block(&mut self, block: &[hir::StmtId]) {
        for &stmt in block {
            weft_core::ensure_stack(|| self.stmt(stmt));
        }
    }

    fn stmt(&mut self, id: hir::StmtId) {
        match self.body.stmt(id).clone() {
            Stmt::Assign { targets, value } => {
                let shape = self.expr(value);
                for target in &targets {
                    self.bind(target, &shape);
                }
            }
            Stmt::If { cond, then, otherwise } => {
                self.expr(cond);
                let before = self.env.clone();
                let refined = self.refinements(cond);
                self.env.extend(refined.iter().cloned());
                self.block(&then);
                let mut after_then = std::mem::replace(&mut self.env, before.clone());
                unrefine(&mut after_then, &refined, &before);
                self.block(&otherwise);
                self.merge_env(after_then);
            }
            Stmt::For { pattern, iterable, body } => {
                let seq = self.expr(iterable);
                let elem = element(&seq);
                let mut bound = Vec::new();
                pattern.locals(&mut bound);
                let hint = pattern_name(self.body, &pattern);
                self.walk_loop(&body, &bound, |me| {
                    let value = me.instantiate(&elem, &hint);
                    me.bind(&pattern, &value);
                    None
                });
            }
            Stmt::While { cond, body } => {
                self.walk_loop(&body, &[], |me| {
                    me.expr(cond);
                    Some(me.refinements(cond))
                });
            }
            Stmt::Return(value) => {
                let shape = value.map_or(Shape::Scalar, |v| self.expr(v));
                self.returns.push(shape);
            }
            Stmt::Assert { cond, .. } => {
                self.expr(cond);
            }
            Stmt::Expr(e) => {
                self.expr(e);
            }
            Stmt::Print { args: items, .. } => {
                for e in items {
                    self.expr(e);
                }
            }
            Stmt::Def { local, lambda } => {
                self.lambda(lambda, None);
                self.rebind(local);
                self.env.insert(local, Shape::Scalar);
            }
        }
    }

    /// After an `if`: a local whose branches disagree gets a shape covering both.
    fn merge_env(&mut self, other: HashMap<LocalId, Shape>) {
        let locals: Vec<LocalId> = self.env.keys().chain(other.keys()).copied().collect();
        for local in locals {
            let merged = match (self.env.get(&local).cloned(), other.get(&local)) {
                (Some(a), Some(b)) => self.join(&a, b),
                (Some(a), None) => a,
                (None, Some(b)) => b.clone(),
                (None, None) => continue,
            };
            self.env.insert(local, merged);
        }
    }

    /// A loop: walked with the shapes it starts with. Where a shape it rebinds then differs,
    /// that local is widened and the body walked again, until every shape it rebinds is stable:
    /// first to what its shapes before and after the pass share (`join`: a length that stays
    /// the same stays), then, if it still changes, to an unknown. Only the last walk's bindings,
    /// diagnostics and proofs are kept. `enter` binds the loop variable (or evaluates the
    /// condition) at the top of each walk.
    fn walk_loop(
        &mut self,
        body: &[hir::StmtId],
        loop_vars: &[LocalId],
        mut enter: impl FnMut(&mut Self) -> Option<Vec<(LocalId, Shape)>>,
    ) {
        let mut rebound = Vec::new();
        assigned_in(self.body, body, &mut rebound);
        rebound.retain(|l| !loop_vars.contains(l));
        rebound.sort_unstable();
        rebound.dedup();
        // Locals widened to what two passes share, and those widened to unknowns.
        let mut joined: HashMap<LocalId, Shape> = HashMap::default();
        let mut unknown: HashSet<LocalId> = HashSet::default();
        let start_env = self.env.clone();
        for _ in 0..=2 * rebound.len() {
            let entry: Vec<(LocalId, Option<Shape>)> =
                rebound.iter().map(|l| (*l, self.env.get(l).cloned())).collect();
            // A local the body rebinds has, on entry to an iteration, the value the previous one
            // left: not the value of any read before the loop or in an earlier pass.
            for &local in &rebound {
                self.rebind(local);
            }
            let marks = self.marks();
            let saved_returns = self.returns.len();
            let refined = enter(self).unwrap_or_default();
            let outer = self.env.clone();
            self.env.extend(refined.iter().cloned());
            self.block(body);
            unrefine(&mut self.env, &refined, &outer);
            let changed: Vec<(LocalId, Shape, Option<Shape>)> = entry
                .iter()
                .filter(|(l, s)| !unknown.contains(l) && s.is_some() && self.env.get(l) != s.as_ref())
                .map(|(l, s)| (*l, s.clone().unwrap_or(Shape::Scalar), self.env.get(l).cloned()))
                .collect();
            if changed.is_empty() {
                // A shape both passes share holds after the loop too, whether it ran or not; an
                // unknown is unknown again, and loop variables keep their (unknown) last value.
                for (&local, shape) in &joined {
                    self.env.insert(local, shape.clone());
                }
                for &local in unknown.iter().chain(loop_vars) {
                    let shape = self.unknown_local(local);
                    self.env.insert(local, shape);
                }
                for (local, shape) in &entry {
                    if !joined.contains_key(local) && !unknown.contains(local) && shape.is_none() {
                        self.env.remove(local);
                    }
                }
                // After the loop, they hold the last iteration's values, or those before it.
                for &local in rebound.iter().chain(loop_vars) {
                    self.rebind(local);
                }
                return;
            }
            self.reset(marks);
            self.returns.truncate(saved_returns);
            self.env = start_env.clone();
            for (local, before, after) in changed {
                match after {
                    Some(after) if !joined.contains_key(&local) => {
                        let shape = self.join(&before, &after);
                        let body = self.body;
                        self.name_atoms(&shape, &body.local(local).name);
                        joined.insert(local, shape);
                    }
                    _ => {
                        joined.remove(&local);
                        unknown.insert(local);
                    }
                }
            }
            for (&local, shape) in &joined {
                self.env.insert(local, shape.clone());
            }
            for &local in &unknown {
                let shape = self.unknown_local(local);
                let body = self.body;
                self.name_atoms(&shape, &body.local(local).name);
                self.env.insert(local, shape);
            }
        }
    }

    fn marks(&self) -> Marks {
        Marks {
            bindings: self.out.bindings.len(),
            diagnostics: self.out.diagnostics.len(),
            proven: self.out.proven_indexes.len(),
            index_sites: self.out.index_sites,
            equal_lengths: self.out.equal_lengths.len(),
        }
    }

    fn reset(&mut self, marks: Marks) {
        self.out.bindings.truncate(marks.bindings);
        self.out.diagnostics.truncate(marks.diagnostics);
        self.out.proven_indexes.truncate(marks.proven);
        self.out.index_sites = marks.index_sites;
        self.out.equal_lengths.truncate(marks.equal_lengths);
    }

    fn bind(&mut self, pattern: &Pattern, shape: &Shape) {
        match pattern {
            Pattern::Bind(local, range) => {
                self.rebind(*local);
                let name = self.body.local(*local).name.clone();
                self.name_atoms(shape, &name);
                self.record(*local, *range, shape.clone());
                self.env.insert(*local, shape.clone());
            }
            Pattern::Tuple(items, _) => {
                for (i, item) in items.iter().enumerate() {
                    let part = match shape {
                        Shape::Tuple(parts) => parts.get(i).cloned(),
                        _ => None,
                    };
                    // A nested tuple pattern gets its parts' unknowns the same way, one level down.
                    let part = part.unwrap_or_else(|| match item {
                        Pattern::Bind(local, _) => self.unknown_local(*local),
                        _ => Shape::Scalar,
                    });
                    self.bind(item, &part);
                }
            }
            Pattern::Invalid(_) => {}
        }
    }

    /// Names the still-unnamed atoms of a value after the local it is bound to.
    fn name_atoms(&mut self, shape: &Shape, name: &str) {
        match shape {
            Shape::Seq { len: Len::Known(len), .. } => {
                if let Some(atom) = len.as_atom().filter(|a| self.unnamed.remove(a)) {
                    self.atoms[atom as usize].name = format!("len({name})");
                }
            }
            Shape::Int(value) => {
                if let Some(atom) = value.as_atom().filter(|a| self.unnamed.remove(a)) {
                    self.atoms[atom as usize].name = name.to_string();
                }
            }
            Shape::Tuple(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.name_atoms(item, &format!("{name}[{i}]"));
                }
            }
            _ => {}
        }
    }

    fn record(&mut self, local: LocalId, range: TextRange, shape: Shape) {
        let ty = self.types.local_types.get(local as usize).cloned().unwrap_or(Type::Tuple(vec![]));
        let name = self.body.local(local).name.clone();
        self.out.bindings.push(BindingShape { name, range, ty, shape });
    }

    // --- expressions --------------------------------------------------------------------------

    fn expr(&mut self, id: ExprId) -> Shape {
        let shape = weft_core::ensure_stack(|| self.expr_inner(id));
        // Symbolic integers are `i32` values only: the proofs reason about `i32` indexes, and
        // other widths would need their own wrap-around bounds.
        match shape {
            Shape::Int(_) if self.types.expr_types.get(id as usize) != Some(&Type::I32) => Shape::Scalar,
            shape => shape,
        }
    }

    /// An integer result of arithmetic, if it provably fits in an `i32`: the program's
    /// arithmetic wraps, and a symbolic value must be the value the program computes.
    fn exact(&self, value: Option<Linear>) -> Shape {
        match value {
            Some(v) if fits_i32(&v, &self.atoms) => Shape::Int(v),
            _ => Shape::Scalar,
        }
    }

    fn expr_inner(&mut self, id: ExprId) -> Shape {
        match self.body.expr(id).clone() {
            hir::Expr::Missing => Shape::Scalar,
            hir::Expr::Literal(Literal::Int(i)) => Shape::Int(Linear::constant(i)),
            hir::Expr::Literal(_) => Shape::Scalar,
            hir::Expr::Local(local) => match self.env.get(&local) {
                Some(shape) => shape.clone(),
                None => {
                    let ty = self.types.local(local).clone();
                    let name = self.body.local(local).name.clone();
                    let shape = self.param_shape(ty, &name);
                    self.env.insert(local, shape.clone());
                    shape
                }
            },
            hir::Expr::Global(name) => match self.globals.get(&name) {
                Some(shape) => shape.clone(),
                None => {
                    let ty = self.types.expr(id).clone();
                    let shape = self.param_shape(ty, &name);
                    self.globals.insert(name, shape.clone());
                    shape
                }
            },
            hir::Expr::Prelude(_) => Shape::Scalar,
            hir::Expr::Lambda(lambda) => {
                self.lambda(lambda, None);
                Shape::Scalar
            }
            hir::Expr::Tuple(items) => Shape::Tuple(items.iter().map(|&e| self.expr(e)).collect()),
            hir::Expr::List(items) => {
                let shapes: Vec<Shape> = items.iter().map(|&e| self.expr(e)).collect();
                let elem = shapes.iter().cloned().reduce(|a, b| self.join_elements(&a, &b));
                let elem = match elem {
                    Some(e) => e,
                    None => element(&self.unknown_expr(id)),
                };
                Shape::Seq { len: Len::Known(Linear::constant(shapes.len() as i64)), elem: Box::new(elem) }
            }
            hir::Expr::Index { base, index } => self.index(id, base, index),
            hir::Expr::Slice { base, start, stop, step } => {
                let seq = self.expr(base);
                let parts: Vec<Option<Shape>> =
                    [start, stop, step].iter().map(|p| p.map(|p| self.expr(p))).collect();
                let elem = element(&seq);
                let len = match (len_of(&seq), &parts[..]) {
                    (Some(len), [None, None, None]) => Some(len),
                    (Some(len), [Some(Shape::Int(k)), None, None])
                        if k.as_constant().is_some_and(|k| k >= 0) =>
                    {
                        len.sub(k).map(|rest| self.clamped(&rest))
                    }
                    _ => None,
                };
                let len = len.unwrap_or_else(|| self.unknown_len(&self.text(id)));
                Shape::Seq { len: Len::Known(len), elem: Box::new(elem) }
            }
            hir::Expr::Unary { op, operand } => {
                let value = self.expr(operand);
                match (op, value) {
                    (hir::UnaryOp::Neg, Shape::Int(v)) => self.exact(v.scale(-1)),
                    (hir::UnaryOp::Pos, v @ Shape::Int(_)) => v,
                    _ => Shape::Scalar,
                }
            }
            hir::Expr::Binary { op, lhs, rhs } => {
                let (a, b) = (self.expr(lhs), self.expr(rhs));
                let int = |s: &Shape| match s {
                    Shape::Int(v) => Some(v.clone()),
                    _ => None,
                };
                let value = match (op, int(&a), int(&b)) {
                    (hir::BinaryOp::Add, Some(x), Some(y)) => x.add(&y),
                    (hir::BinaryOp::Sub, Some(x), Some(y)) => x.sub(&y),
                    (hir::BinaryOp::Mul, Some(x), Some(y)) => match (x.as_constant(), y.as_constant()) {
                        (Some(k), _) => y.scale(k),
                        (_, Some(k)) => x.scale(k),
                        _ => None,
                    },
                    _ => None,
                };
                self.exact(value)
            }
            hir::Expr::And(a, b) | hir::Expr::Or(a, b) => {
                self.expr(a);
                self.expr(b);
                Shape::Scalar
            }
            hir::Expr::Compare { operands, .. } => {
                for e in operands {
                    self.expr(e);
                }
                Shape::Scalar
            }
            hir::Expr::If { cond, then, otherwise } => {
                self.expr(cond);
                let before = self.env.clone();
                let refined = self.refinements(cond);
                self.env.extend(refined);
                let a = self.expr(then);
                self.env = before;
                let b = self.expr(otherwise);
                self.join(&a, &b)
            }
            hir::Expr::Call { callee, args } => self.call(id, callee, &args),
            hir::Expr::Comprehension { element, clauses } => self.comprehension(id, element, &clauses),
        }
    }

    fn index(&mut self, id: ExprId, base: ExprId, index: ExprId) -> Shape {
        let seq = self.expr(base);
        if let Shape::Tuple(items) = &seq {
            let i = crate::infer::literal_index(self.body, index).unwrap_or(0);
            let i = if i < 0 { items.len() as i64 + i } else { i };
            return items.get(i.max(0) as usize).cloned().unwrap_or(Shape::Scalar);
        }
        let position = self.expr(index);
        if let Shape::Seq { len: Len::Known(len), elem } = &seq {
            self.out.index_sites += 1;
            if let Shape::Int(position) = &position
                && provably_in_bounds(position, len, &self.atoms)
            {
                self.out.proven_indexes.push(id);
            }
            let elem = (**elem).clone();
            return self.instantiate(&elem, &self.text(id));
        }
        self.unknown_expr(id)
    }

    /// Facts an `if` condition gives its `then` side: `i < n` bounds the index `i` by `n`.
    /// The refined index is a new atom (bounded as the old one is, and by the condition).
    fn refinements(&mut self, cond: ExprId) -> Vec<(LocalId, Shape)> {
        let mut out = Vec::new();
        self.refine(cond, &mut out);
        out
    }

    fn refine(&mut self, cond: ExprId, out: &mut Vec<(LocalId, Shape)>) {
        match self.body.expr(cond).clone() {
            hir::Expr::And(a, b) => {
                self.refine(a, out);
                self.refine(b, out);
            }
            hir::Expr::Compare { operands, ops } => {
                for (pair, op) in operands.windows(2).zip(ops) {
                    // As `small < big + slack`.
                    let (small, big, slack) = match op {
                        hir::BinaryOp::Lt => (pair[0], pair[1], 0),
                        hir::BinaryOp::Le => (pair[0], pair[1], 1),
                        hir::BinaryOp::Gt => (pair[1], pair[0], 0),
                        hir::BinaryOp::Ge => (pair[1], pair[0], 1),
                        _ => continue,
                    };
                    self.bound_local(small, big, slack, true, out);
                    self.bound_local(big, small, 1 - slack, false, out);
                }
            }
            _ => {}
        }
    }

    /// Bounds the local read by `target` with the value of `by`: above (`target < by + extra`)
    /// or below (`target >= by + extra`).
    fn bound_local(
        &mut self,
        target: ExprId,
        by: ExprId,
        extra: i64,
        above: bool,
        out: &mut Vec<(LocalId, Shape)>,
    ) {
        let hir::Expr::Local(local) = *self.body.expr(target) else { return };
        let Some(Shape::Int(value)) = out
            .iter()
            .rev()
            .find(|(l, _)| *l == local)
            .map(|(_, s)| s.clone())
            .or_else(|| self.env.get(&local).cloned())
        else {
            return;
        };
        let Some(Shape::Int(bound)) = self.peek_int(by) else { return };
        let Some(bound) = bound.plus(extra) else { return };
        let Some(old) = value.as_atom() else { return };
        let mut atom = self.atoms[old as usize].clone();
        // A new atom, minted here: not the function of others the old one may have been.
        atom.definition = None;
        if above {
            atom.upper = Some(bound);
        } else {
            atom.lower = Some(bound);
        }
        self.atoms.push(atom);
        out.push((local, Shape::Int(Linear::atom((self.atoms.len() - 1) as AtomId))));
    }

    /// The integer value of a side-effect-free expression, without recording anything.
    fn peek_int(&mut self, id: ExprId) -> Option<Shape> {
        let marks = self.marks();
        let shape = self.expr(id);
        self.reset(marks);
        matches!(shape, Shape::Int(_)).then_some(shape)
    }

    fn comprehension(&mut self, id: ExprId, element_expr: ExprId, clauses: &[Clause]) -> Shape {
        let saved = self.env.clone();
        let mut watermark = None;
        let mut total: Option<Linear> = Some(Linear::constant(1));
        let mut filtered = None;
        for clause in clauses {
            match clause {
                Clause::For { pattern, iterable, .. } => {
                    let seq = self.expr(*iterable);
                    let mark = *watermark.get_or_insert(self.atoms.len());
                    let len = len_of(&seq).filter(|l| !l.mentions(|a| self.minted_since(a, mark)));
                    total = match (total, len) {
                        (Some(t), Some(l)) => self.product(&t, &l),
                        _ => None,
                    };
                    let hint = pattern_name(self.body, pattern);
                    let value = self.instantiate(&element(&seq), &hint);
                    self.bind(pattern, &value);
                }
                Clause::If(cond) => {
                    self.expr(*cond);
                    filtered.get_or_insert(*cond);
                    let refined = self.refinements(*cond);
                    self.env.extend(refined);
                }
            }
        }
        let shape = self.expr(element_expr);
        let elem = self.forget_since(&shape, watermark.unwrap_or(self.atoms.len()));
        self.env = saved;
        let len = match (filtered, total) {
            (Some(cond), _) => {
                let name = format!("count({})", self.text(cond));
                Linear::atom(self.atom(name, true))
            }
            (None, Some(total)) => total,
            (None, None) => self.unknown_len(&self.text(id)),
        };
        Shape::Seq { len: Len::Known(len), elem: Box::new(elem) }
    }

    fn product(&mut self, a: &Linear, b: &Linear) -> Option<Linear> {
        match (a.as_constant(), b.as_constant()) {
            (Some(k), _) => b.scale(k),
            (_, Some(k)) => a.scale(k),
            _ => Some(Linear::atom(self.defined_atom(Definition::Product(a.clone(), b.clone())))),
        }
    }

    /// A lambda or nested `def`: its body is walked with `params` (the elements a `map` passes)
    /// or, when it may be called from anywhere, with unknown parameters. Returns its result.
    fn lambda(&mut self, lambda: LambdaId, params: Option<Vec<Shape>>) -> Shape {
        let lambda = self.body.lambdas[lambda as usize].clone();
        let saved_env = self.env.clone();
        let saved_versions = self.versions.clone();
        let saved_returns = std::mem::take(&mut self.returns);
        // A closure may run after a local it reads is rebound: forget those.
        let rebound: Vec<LocalId> = self.rebound.iter().copied().collect();
        for local in rebound {
            self.env.remove(&local);
            self.rebind(local);
        }
        for (i, param) in lambda.params.iter().enumerate() {
            self.rebind(param.local);
            let name = self.body.local(param.local).name.clone();
            let shape = match params.as_ref().and_then(|p| p.get(i)) {
                Some(shape) => shape.clone(),
                None => self.param_shape(self.types.local(param.local).clone(), &name),
            };
            self.env.insert(param.local, shape);
        }
        let result = match &lambda.body {
            LambdaBody::Expr(e) => self.expr(*e),
            LambdaBody::Block(block) => {
                self.block(block);
                let returns = std::mem::take(&mut self.returns);
                returns.into_iter().reduce(|a, b| self.join(&a, &b)).unwrap_or(Shape::Scalar)
            }
        };
        self.env = saved_env;
        self.versions = saved_versions;
        self.returns = saved_returns;
        result
    }
}

/// The shape of an element of a value of type `ty` nothing is known of.
fn element_of_type(ty: &Type) -> Shape {
    match ty {
        Type::Seq(elem) => Shape::Seq { len: Len::Varies, elem: Box::new(element_of_type(elem)) },
        Type::Tuple(items) => Shape::Tuple(items.iter().map(element_of_type).collect()),
        _ => Shape::Scalar,
    }
}

fn element(seq: &Shape) -> Shape {
    match seq {
        Shape::Seq { elem, .. } => (**elem).clone(),
        _ => Shape::Scalar,
    }
}

fn len_of(seq: &Shape) -> Option<Linear> {
    match seq {
        Shape::Seq { len: Len::Known(l), .. } => Some(l.clone()),
        _ => None,
    }
}

/// Locals bound in a block (by assignment or as a loop variable), nested blocks included.
fn assigned_in(body: &Body, block: &[hir::StmtId], out: &mut Vec<LocalId>) {
    for &stmt in block {
        match body.stmt(stmt) {
            Stmt::Assign { targets, .. } => targets.iter().for_each(|t| t.locals(out)),
            Stmt::If { then, otherwise, .. } => {
                assigned_in(body, then, out);
                assigned_in(body, otherwise, out);
            }
            Stmt::For { pattern, body: inner, .. } => {
                pattern.locals(out);
                assigned_in(body, inner, out);
            }
            Stmt::While { body: inner, .. } => assigned_in(body, inner, out),
            Stmt::Def { local, .. } => out.push(*local),
            _ => {}
        }
    }
}

/// Locals with more than one binding site, or bound in a loop.
fn rebound_locals(body: &Body) -> HashSet<LocalId> {
    let mut counts: HashMap<LocalId, u32> = HashMap::default();
    // A parameter is bound on entry: one assignment more rebinds it.
    for param in body.params.iter().chain(body.lambdas.iter().flat_map(|l| &l.params)) {
        *counts.entry(param.local).or_default() += 1;
    }
    for stmt in &body.stmts {
        let mut bound = Vec::new();
        match stmt {
            Stmt::Assign { targets, .. } => targets.iter().for_each(|t| t.locals(&mut bound)),
            Stmt::Def { local, .. } => bound.push(*local),
            Stmt::For { pattern, .. } => {
                // Bound once per iteration: as good as twice.
                pattern.locals(&mut bound);
                pattern.locals(&mut bound);
            }
            _ => {}
        }
        if let Stmt::For { body: inner, .. } | Stmt::While { body: inner, .. } = stmt {
            let mut inside = Vec::new();
            assigned_in(body, inner, &mut inside);
            bound.extend(inside);
        }
        for local in bound {
            *counts.entry(local).or_default() += 1;
        }
    }
    counts.into_iter().filter(|(_, n)| *n > 1).map(|(l, _)| l).collect()
}

/// A name for a loop or comprehension variable's values: the name it binds, or `item`.
fn pattern_name(body: &Body, pattern: &Pattern) -> String {
    match pattern {
        Pattern::Bind(local, _) => body.local(*local).name.clone(),
        _ => "item".to_string(),
    }
}

/// Undoes an `if` condition's refinements where the branch left them in place: past the branch,
/// the condition no longer holds.
fn unrefine(
    env: &mut HashMap<LocalId, Shape>,
    refined: &[(LocalId, Shape)],
    before: &HashMap<LocalId, Shape>,
) {
    for (local, shape) in refined {
        if env.get(local) == Some(shape) {
            match before.get(local) {
                Some(old) => env.insert(*local, old.clone()),
                None => env.remove(local),
            };
        }
    }
}
