//! Type inference: Hindley–Milner with let-polymorphism and numeric classes, over the HIR.
//!
//! A file's top-level functions and its top-level statements ("main") form a dependency graph;
//! its strongly connected components are *binding groups*, inferred in dependency order. A
//! function is monomorphic inside its own group and generalised after it. A function that reads
//! a top-level binding depends on main, so when main also calls it, it is inferred with main and
//! stays monomorphic.
//!
//! Queries: `function_types(f)` (per function: re-run only when the function, or the signature
//! of something it calls, changes) and `top_level_types(file)`. Results are fully resolved
//! ("zonked"): the only type variables left are the quantified ones of a scheme.
//!
//! Classes are sets of types (`types::Class`); an integer literal is `Num a => a`, a float literal
//! `Float a => a`, and what stays undecided defaults (to `i32` / `f32`) when its group is
//! generalised, and at the end of each top-level statement.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use rowan::TextRange;

use crate::db::{Db, SourceFile};
use crate::flow;
use crate::hir::{
    self, Body, Clause, ExprId, LambdaBody, LambdaId, Literal, LocalId, Pattern, Stmt, TypeRef,
};
use crate::items::{Function, file_functions};
use weft_core::Sink;
use weft_core::types::{Class, Scalar, Scheme, TyVar, Type};
use weft_syntax::diagnostics::{Code, Diagnostic};

/// The inferred types of one body (a function or the top-level statements).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct BodyTypes {
    pub expr_types: Vec<Type>,
    pub local_types: Vec<Type>,
    /// Locals bound to a nested `def` or a `lambda` are generalised.
    pub local_schemes: Vec<(LocalId, Scheme)>,
    /// For each read of a generalised function: the types its scheme's variables take there.
    pub instantiations: Vec<(ExprId, Vec<Type>)>,
    /// The type of each lambda and nested `def`.
    pub lambda_types: Vec<Type>,
}

impl BodyTypes {
    pub fn expr(&self, id: ExprId) -> &Type {
        &self.expr_types[id as usize]
    }

    pub fn local(&self, id: LocalId) -> &Type {
        &self.local_types[id as usize]
    }

    pub fn scheme_of(&self, local: LocalId) -> Option<&Scheme> {
        self.local_schemes.iter().find(|(l, _)| *l == local).map(|(_, s)| s)
    }

    pub fn instantiation(&self, expr: ExprId) -> Option<&[Type]> {
        self.instantiations.iter().find(|(e, _)| *e == expr).map(|(_, t)| t.as_slice())
    }
}

/// A top-level function's scheme and body types. Diagnostics are relative to its `def`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FunctionTypes {
    pub scheme: Scheme,
    pub body: BodyTypes,
    pub diagnostics: Vec<Diagnostic>,
}

/// The top-level statements' types, and those of the functions inferred with them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct TopLevelTypes {
    pub main: BodyTypes,
    pub functions: Vec<(String, FunctionTypes)>,
    /// Spans absolute in the file.
    pub diagnostics: Vec<Diagnostic>,
}

/// A node of the dependency graph: a function (by index in `file_functions`) or main.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Binding {
    Function(u32),
    Main,
}

/// A file's top-level functions by name, sorted; a name defined twice maps to its last `def`
/// (the one Python's rebinding leaves in place).
#[salsa::tracked(returns(ref))]
pub fn functions_by_name(db: &dyn Db, file: SourceFile) -> Vec<(String, u32)> {
    let mut names: Vec<(String, u32)> =
        file_functions(db, file).iter().enumerate().map(|(i, f)| (f.name(db).clone(), i as u32)).collect();
    names.sort();
    names.reverse();
    names.dedup_by(|later, earlier| later.0 == earlier.0);
    names.reverse();
    names
}

/// The index (in `file_functions`) of the top-level function a name denotes.
pub fn function_index(db: &dyn Db, file: SourceFile, name: &str) -> Option<u32> {
    let names = functions_by_name(db, file);
    names.binary_search_by(|(n, _)| n.as_str().cmp(name)).ok().map(|i| names[i].1)
}

/// The binding groups of a file, dependencies first, and which group each binding is in.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct BindingGroups {
    pub groups: Vec<Vec<Binding>>,
    /// By function index, then main last.
    pub group_of: Vec<u32>,
}

#[salsa::tracked(returns(ref))]
pub fn binding_groups(db: &dyn Db, file: SourceFile) -> BindingGroups {
    let functions = file_functions(db, file);
    let edges_of = |body: &Body| -> Vec<Binding> {
        let mut edges: Vec<Binding> = body
            .exprs
            .iter()
            .filter_map(|e| match e {
                hir::Expr::Global(name) => {
                    Some(function_index(db, file, name).map_or(Binding::Main, Binding::Function))
                }
                _ => None,
            })
            .collect();
        edges.sort();
        edges.dedup();
        edges
    };
    let mut nodes: Vec<Binding> = (0..functions.len() as u32).map(Binding::Function).collect();
    nodes.push(Binding::Main);
    let edges: Vec<Vec<Binding>> = nodes
        .iter()
        .map(|node| match node {
            Binding::Function(i) => edges_of(hir::function_hir(db, functions[*i as usize])),
            Binding::Main => edges_of(hir::top_level_hir(db, file)),
        })
        .collect();
    let position = |b: Binding| match b {
        Binding::Function(i) => i as usize,
        Binding::Main => functions.len(),
    };
    let groups: Vec<Vec<Binding>> = tarjan(nodes.len(), &|n| edges[n].iter().map(|&b| position(b)).collect())
        .into_iter()
        .map(|group| group.into_iter().map(|n| nodes[n]).collect())
        .collect();
    let mut group_of = vec![0; nodes.len()];
    for (g, group) in groups.iter().enumerate() {
        for &b in group {
            group_of[position(b)] = g as u32;
        }
    }
    BindingGroups { groups, group_of }
}

/// Strongly connected components, each after the components it depends on (iterative Tarjan).
fn tarjan(count: usize, successors: &dyn Fn(usize) -> Vec<usize>) -> Vec<Vec<usize>> {
    let mut index = vec![usize::MAX; count];
    let mut low = vec![0; count];
    let mut on_stack = vec![false; count];
    let mut stack = Vec::new();
    let mut groups = Vec::new();
    let mut next = 0;
    for root in 0..count {
        if index[root] != usize::MAX {
            continue;
        }
        let mut work: Vec<(usize, Vec<usize>, usize)> = vec![(root, successors(root), 0)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some((node, succ, i)) = work.last_mut() {
            let node = *node;
            if let Some(&s) = succ.get(*i) {
                *i += 1;
                if index[s] == usize::MAX {
                    index[s] = next;
                    low[s] = next;
                    next += 1;
                    stack.push(s);
                    on_stack[s] = true;
                    work.push((s, successors(s), 0));
                } else if on_stack[s] {
                    low[node] = low[node].min(index[s]);
                }
                continue;
            }
            work.pop();
            if let Some((parent, _, _)) = work.last() {
                low[*parent] = low[*parent].min(low[node]);
            }
            if low[node] == index[node] {
                let mut group = Vec::new();
                while let Some(member) = stack.pop() {
                    on_stack[member] = false;
                    group.push(member);
                    if member == node {
                        break;
                    }
                }
                group.sort();
                groups.push(group);
            }
        }
    }
    groups
}

fn group_of(db: &dyn Db, file: SourceFile, binding: Binding) -> &[Binding] {
    let groups = binding_groups(db, file);
    let position = match binding {
        Binding::Function(i) => i as usize,
        Binding::Main => groups.group_of.len() - 1,
    };
    groups.group_of.get(position).map_or(&[], |&g| groups.groups[g as usize].as_slice())
}

/// The types of one top-level function.
#[salsa::tracked(returns(ref))]
pub fn function_types<'db>(db: &'db dyn Db, function: Function<'db>) -> FunctionTypes {
    let file = function.file(db);
    let functions = file_functions(db, file);
    let index = functions.iter().position(|f| *f == function).unwrap_or(0) as u32;
    let group = group_of(db, file, Binding::Function(index));
    if group.contains(&Binding::Main) {
        let top = top_level_types(db, file);
        let name = function.name(db);
        if let Some((_, types)) = top.functions.iter().rev().find(|(n, _)| n == name) {
            return types.clone();
        }
    }
    let mut inferrer = GroupInferrer::new(db, file, group);
    inferrer.run();
    let (_, mut results) = inferrer.finish();
    let position = group.iter().position(|b| *b == Binding::Function(index)).unwrap_or(0);
    results.swap_remove(position).1
}

/// A function's type scheme alone: what its callers depend on, so that an edit to its body
/// that keeps its type does not re-infer them.
#[salsa::tracked(returns(ref))]
pub fn function_scheme<'db>(db: &'db dyn Db, function: Function<'db>) -> Scheme {
    function_types(db, function).scheme.clone()
}

/// The types of the top-level statements (and of the functions in main's group).
#[salsa::tracked(returns(ref))]
pub fn top_level_types(db: &dyn Db, file: SourceFile) -> TopLevelTypes {
    let group = group_of(db, file, Binding::Main);
    let mut inferrer = GroupInferrer::new(db, file, group);
    inferrer.run();
    let (main, functions) = inferrer.finish();
    match main {
        Some(main) => TopLevelTypes { main: main.body, functions, diagnostics: main.diagnostics },
        None => TopLevelTypes { functions, ..TopLevelTypes::default() },
    }
}

/// Every type diagnostic of a file, with absolute spans.
///
/// A body whose syntax is already reported (an error or a construct Weft rejects) is not
/// type-checked in the report: what the parser recovered would only give follow-on errors.
pub fn file_type_diagnostics(db: &dyn Db, file: SourceFile) -> Vec<Diagnostic> {
    let syntax_errors: Vec<TextRange> = crate::parsed::syntax_diagnostics(db, file)
        .iter()
        .filter(|d| d.is_error())
        .map(|d| d.range)
        .collect();
    let mut out = Vec::new();
    let mut function_ranges = Vec::new();
    for function in file_functions(db, file) {
        let offset = function.offset(db);
        let range = TextRange::at(offset, function.syntax(db).text_len());
        function_ranges.push(range);
        if syntax_errors.iter().any(|e| range.contains_range(*e)) {
            continue;
        }
        out.extend(function_types(db, *function).diagnostics.iter().map(|d| d.clone().shifted(offset)));
    }
    let top_level_has_errors =
        syntax_errors.iter().any(|e| !function_ranges.iter().any(|f| f.contains_range(*e)));
    if !top_level_has_errors {
        out.extend(top_level_types(db, file).diagnostics.iter().cloned());
    }
    out
}

/// Why two types had to be equal; becomes the message and labels of a mismatch.
struct Origin {
    /// Where the mismatch shows.
    range: TextRange,
    /// What the other type came from, if it has a place in this body.
    other: Option<TextRange>,
    what: &'static str,
}

enum UnifyError {
    Mismatch,
    Infinite,
}

/// One body being inferred: the HIR and the types found so far.
struct BodyState<'a> {
    body: &'a Body,
    expr_types: Vec<Type>,
    local_types: Vec<Type>,
    local_schemes: Vec<(LocalId, Scheme)>,
    instantiations: Vec<(ExprId, Vec<Type>)>,
    /// In-group function reads, resolved to identity instantiations when the group is done.
    group_reads: Vec<(ExprId, String)>,
    lambda_types: Vec<Type>,
    diagnostics: Vec<Diagnostic>,
    /// The expected return type of the function or nested `def` being inferred.
    returns: Vec<(Type, Option<TextRange>)>,
    loop_depth: u32,
}

/// How deeply types may nest: far beyond any real program (`[[[f32]]]` is 4), and shallow
/// enough that every recursive walk over a type is safe.
const MAX_TYPE_DEPTH: usize = 200;

struct GroupInferrer<'a> {
    /// Set when `zonk` met a type deeper than `MAX_TYPE_DEPTH`.
    too_deep: std::cell::Cell<bool>,
    /// The type variables each function's annotations name, with where each is first written.
    annotation_vars: Vec<(Binding, Vec<AnnotationVar>)>,
    db: &'a dyn Db,
    file: SourceFile,
    group: &'a [Binding],
    functions: &'a [Function<'a>],
    bindings: Vec<Option<Type>>,
    classes: Vec<Class>,
    /// `(x, r)`: `r` is the float type of `x`, once `x` is known.
    float_of: Vec<(TyVar, TyVar)>,
    /// Quantified variables of nested schemes: never defaulted.
    generic: HashSet<TyVar>,
    /// Variables below this are bound or generic: defaulting after each top-level statement
    /// starts here, so a long file does not default quadratically.
    defaulted_up_to: usize,
    /// `load_npy` element types: decided by the uses of the data anywhere in the file, so not
    /// defaulted at the end of the statement that loads it.
    late_defaults: Vec<Type>,
    /// The monomorphic type of each function of the group, by name.
    group_types: HashMap<String, Type>,
    /// Main's locals by name, when main is in the group.
    main_locals: HashMap<String, LocalId>,
    /// The types of main's locals when main is in the group.
    main_local_types: Vec<Type>,
    main_local_schemes: Vec<(LocalId, Scheme)>,
    outputs: Vec<(Binding, BodyState<'a>)>,
}

impl<'a> GroupInferrer<'a> {
    fn new(db: &'a dyn Db, file: SourceFile, group: &'a [Binding]) -> Self {
        GroupInferrer {
            too_deep: std::cell::Cell::new(false),
            annotation_vars: Vec::new(),
            db,
            file,
            group,
            functions: file_functions(db, file),
            bindings: Vec::new(),
            classes: Vec::new(),
            float_of: Vec::new(),
            generic: HashSet::default(),
            defaulted_up_to: 0,
            late_defaults: Vec::new(),
            group_types: HashMap::default(),
            main_locals: HashMap::default(),
            main_local_types: Vec::new(),
            main_local_schemes: Vec::new(),
            outputs: Vec::new(),
        }
    }

    fn body_of(&self, binding: Binding) -> &'a Body {
        match binding {
            Binding::Function(i) => hir::function_hir(self.db, self.functions[i as usize]),
            Binding::Main => hir::top_level_hir(self.db, self.file),
        }
    }

    fn new_state(&mut self, body: &'a Body) -> BodyState<'a> {
        let expr_types = (0..body.exprs.len()).map(|_| Type::Var(u32::MAX)).collect();
        let local_types = (0..body.locals.len()).map(|_| self.fresh(Class::ANY)).collect();
        let lambda_types = (0..body.lambdas.len()).map(|_| Type::Var(u32::MAX)).collect();
        BodyState {
            body,
            expr_types,
            local_types,
            local_schemes: Vec::new(),
            instantiations: Vec::new(),
            group_reads: Vec::new(),
            lambda_types,
            diagnostics: body.diagnostics.clone(),
            returns: Vec::new(),
            loop_depth: 0,
        }
    }

    fn run(&mut self) {
        // Main's locals first: the group's functions may read them.
        let mut main_state = None;
        if self.group.contains(&Binding::Main) {
            let body = self.body_of(Binding::Main);
            let state = self.new_state(body);
            for (id, local) in body.locals.iter().enumerate() {
                if local.scope == 0 {
                    self.main_locals.insert(local.name.clone(), id as LocalId);
                }
            }
            self.main_local_types = state.local_types.clone();
            main_state = Some(state);
        }
        // Each function's type from its annotations, so that calls within the group see them.
        let mut states = Vec::new();
        for &binding in self.group {
            let Binding::Function(i) = binding else { continue };
            let body = self.body_of(binding);
            let mut state = self.new_state(body);
            let mut type_vars = HashMap::default();
            let params = self.param_types(&state, &body.params, &mut type_vars);
            let ret = self.annotation_or_fresh(&body.ret_annotation, &mut type_vars);
            state.returns.push((ret.clone(), body.ret_annotation.as_ref().map(TypeRef::range)));
            self.annotation_vars.push((binding, annotation_vars(body, &type_vars)));
            self.group_types
                .insert(self.functions[i as usize].name(self.db).clone(), Type::func(params, ret));
            states.push((binding, state));
        }
        for (binding, mut state) in states {
            let root = state.body.root.clone();
            self.infer_block(&mut state, &root);
            flow::check_function(state.body, &mut state.diagnostics);
            self.outputs.push((binding, state));
        }
        if let Some(mut state) = main_state {
            let root = state.body.root.clone();
            // Which of main's locals a statement so far has bound: the others keep their types
            // open for the statement that will bind them.
            let mut assigned = vec![false; state.body.locals.len()];
            // Comprehension and lambda variables, by where they are bound: statements come in
            // source order, so one pass over this list finds each statement's.
            let mut nested: Vec<(usize, TextRange)> = (state.body.locals.iter().enumerate())
                .filter(|(_, l)| l.scope != 0)
                .map(|(i, l)| (i, l.range))
                .collect();
            nested.sort_by_key(|(_, range)| range.start());
            let mut next_nested = 0;
            // Everything here is per statement, and a large file's top level has hundreds: no
            // step may walk all of main's locals or copy its tables.
            for stmt in root {
                self.infer_stmt(&mut state, stmt);
                // Locals' types are variables fixed at the start; only new schemes are added.
                let known = self.main_local_schemes.len();
                self.main_local_schemes.extend(state.local_schemes[known..].iter().cloned());
                let mut newly = Vec::new();
                mark_assigned(state.body, stmt, &mut assigned, &mut newly);
                let stmt_range = state.body.stmt_ranges[stmt as usize];
                while let Some(&(local, range)) = nested.get(next_nested) {
                    if range.start() >= stmt_range.end() {
                        break;
                    }
                    if stmt_range.contains_range(range) && !assigned[local] {
                        assigned[local] = true;
                        newly.push(local);
                    }
                    next_nested += 1;
                }
                newly.sort_unstable();
                self.default_all(&assigned, &newly);
            }
            flow::check_top_level(state.body, &mut state.diagnostics);
            self.outputs.push((Binding::Main, state));
        }
    }

    /// Generalises the group's functions, defaults the rest, and resolves every type.
    fn finish(mut self) -> (Option<FunctionTypes>, Vec<(String, FunctionTypes)>) {
        self.resolve_float_of(false);
        self.check_annotation_vars();
        let in_main = self.group.contains(&Binding::Main);
        let mut quantified: Vec<TyVar> = Vec::new();
        if !in_main {
            for ty in self.group_types.values() {
                let ty = self.zonk(ty);
                ty.vars(&mut quantified);
            }
            for &(x, r) in &self.float_of.clone() {
                if quantified.contains(&self.find_var(x)) {
                    let r = self.find_var(r);
                    if !quantified.contains(&r) {
                        quantified.push(r);
                    }
                }
            }
        }
        let keep: HashSet<TyVar> = quantified.iter().copied().chain(self.generic.iter().copied()).collect();
        self.defaulted_up_to = 0;
        self.default_except(&keep);
        let schemes: HashMap<String, Scheme> = self
            .group_types
            .iter()
            .map(|(name, ty)| {
                let ty = self.zonk(ty);
                let mut vars = Vec::new();
                ty.vars(&mut vars);
                let float_of = self.float_of_over(&mut vars);
                let vars = vars.into_iter().map(|v| (v, self.classes[v as usize])).collect();
                (name.clone(), Scheme { vars, float_of, ty })
            })
            .collect();
        let mut main = None;
        let mut functions = Vec::new();
        for (binding, state) in std::mem::take(&mut self.outputs) {
            let body = self.resolve_state(state, &schemes);
            match binding {
                Binding::Main => {
                    main = Some(FunctionTypes { scheme: Scheme::mono(Type::Tuple(vec![])), ..body })
                }
                Binding::Function(i) => {
                    let name = self.functions[i as usize].name(self.db).clone();
                    let scheme =
                        schemes.get(&name).cloned().unwrap_or_else(|| Scheme::mono(Type::Tuple(vec![])));
                    functions.push((name, FunctionTypes { scheme, ..body }));
                }
            }
        }
        (main, functions)
    }

    fn resolve_state(&self, mut state: BodyState<'a>, schemes: &HashMap<String, Scheme>) -> FunctionTypes {
        for (expr, name) in std::mem::take(&mut state.group_reads) {
            if let Some(scheme) = schemes.get(&name) {
                state.instantiations.push((expr, scheme.vars.iter().map(|(v, _)| Type::Var(*v)).collect()));
            }
        }
        let zonk_all = |types: Vec<Type>| types.iter().map(|t| self.zonk(t)).collect::<Vec<_>>();
        let body = BodyTypes {
            expr_types: zonk_all(state.expr_types),
            local_types: zonk_all(state.local_types),
            local_schemes: state
                .local_schemes
                .iter()
                .map(|(l, s)| (*l, Scheme { ty: self.zonk(&s.ty), ..s.clone() }))
                .collect(),
            instantiations: state.instantiations.iter().map(|(e, ts)| (*e, zonk_all(ts.clone()))).collect(),
            lambda_types: zonk_all(state.lambda_types),
        };
        let mut diagnostics = state.diagnostics;
        if self.too_deep.get() {
            diagnostics.push(
                Diagnostic::new(
                    Code::InfiniteType,
                    state.body.name_range,
                    format!("a type here is nested more than {MAX_TYPE_DEPTH} levels deep"),
                )
                .with_note("Weft limits the nesting of types so that every pass stays fast and safe"),
            );
        }
        check_function_values(state.body, &body, &mut diagnostics);
        FunctionTypes { scheme: Scheme::mono(Type::Tuple(vec![])), body, diagnostics }
    }

    // ---- The unification table. ----

    fn fresh(&mut self, class: Class) -> Type {
        self.bindings.push(None);
        self.classes.push(class);
        Type::Var((self.bindings.len() - 1) as TyVar)
    }

    fn find_var(&self, mut v: TyVar) -> TyVar {
        while let Some(Some(Type::Var(next))) = self.bindings.get(v as usize) {
            v = *next;
        }
        v
    }

    /// Follows variable bindings at the head of the type.
    fn shallow(&self, ty: &Type) -> Type {
        let mut ty = ty.clone();
        while let Type::Var(v) = ty {
            match self.bindings.get(v as usize) {
                Some(Some(bound)) => ty = bound.clone(),
                _ => break,
            }
        }
        ty
    }

    /// The type with every bound variable replaced. A type deeper than `MAX_TYPE_DEPTH` is cut
    /// off there (and reported), so that no later pass meets an unboundedly deep type.
    fn zonk(&self, ty: &Type) -> Type {
        self.zonk_at(ty, 0)
    }

    fn zonk_at(&self, ty: &Type, depth: usize) -> Type {
        if depth > MAX_TYPE_DEPTH {
            self.too_deep.set(true);
            return Type::Tuple(vec![]);
        }
        let inner = |t: &Type| self.zonk_at(t, depth + 1);
        match self.shallow(ty) {
            Type::Var(v) => Type::Var(v),
            Type::Scalar(s) => Type::Scalar(s),
            Type::Tuple(items) => Type::Tuple(items.iter().map(inner).collect()),
            Type::Seq(elem) => Type::seq(inner(&elem)),
            Type::Func(params, ret) => Type::func(params.iter().map(inner).collect(), inner(&ret)),
        }
    }

    /// Calls `f` on each unbound variable of the type, following bindings as `zonk` does but
    /// building nothing: the defaulting after every top-level statement walks every pending
    /// type, so this must not allocate.
    fn each_free_var<F: FnMut(TyVar)>(&self, ty: &Type, depth: usize, f: &mut F) {
        if depth > MAX_TYPE_DEPTH {
            self.too_deep.set(true);
            return;
        }
        match ty {
            Type::Var(v) => match self.bindings.get(*v as usize) {
                Some(Some(bound)) => self.each_free_var(bound, depth, f),
                _ => f(*v),
            },
            Type::Scalar(_) => {}
            Type::Tuple(items) => items.iter().for_each(|t| self.each_free_var(t, depth + 1, f)),
            Type::Seq(elem) => self.each_free_var(elem, depth + 1, f),
            Type::Func(params, ret) => {
                params.iter().for_each(|t| self.each_free_var(t, depth + 1, f));
                self.each_free_var(ret, depth + 1, f);
            }
        }
    }

    fn free_vars_into(&self, ty: &Type, out: &mut HashSet<TyVar>) {
        self.each_free_var(ty, 0, &mut |v| {
            out.insert(v);
        });
    }

    fn var_of(&self, ty: &Type) -> TyVar {
        match self.shallow(ty) {
            Type::Var(v) => v,
            _ => u32::MAX,
        }
    }

    fn occurs(&self, v: TyVar, ty: &Type) -> bool {
        let mut found = false;
        self.each_free_var(ty, 0, &mut |w| found |= w == v);
        found
    }

    fn unify(&mut self, a: &Type, b: &Type) -> Result<(), UnifyError> {
        let (a, b) = (self.shallow(a), self.shallow(b));
        match (&a, &b) {
            (Type::Var(x), Type::Var(y)) if x == y => Ok(()),
            (Type::Var(x), Type::Var(y)) => {
                let class =
                    self.classes[*x as usize].meet(self.classes[*y as usize]).ok_or(UnifyError::Mismatch)?;
                // The newer variable points to the older, so that chains of bindings stay short.
                let (old, new) = if x < y { (*x, *y) } else { (*y, *x) };
                self.classes[old as usize] = class;
                self.bindings[new as usize] = Some(Type::Var(old));
                self.resolve_float_of(true);
                Ok(())
            }
            (Type::Var(x), other) | (other, Type::Var(x)) => {
                if self.occurs(*x, other) {
                    return Err(UnifyError::Infinite);
                }
                let class = self.classes[*x as usize];
                self.constrain(other, class)?;
                self.bindings[*x as usize] = Some(other.clone());
                self.resolve_float_of(true);
                Ok(())
            }
            (Type::Scalar(x), Type::Scalar(y)) if x == y => Ok(()),
            (Type::Tuple(xs), Type::Tuple(ys)) if xs.len() == ys.len() => {
                xs.iter().zip(ys).try_for_each(|(x, y)| self.unify(x, y))
            }
            (Type::Seq(x), Type::Seq(y)) => self.unify(x, y),
            (Type::Func(xs, r), Type::Func(ys, s)) if xs.len() == ys.len() => {
                xs.iter().zip(ys).try_for_each(|(x, y)| self.unify(x, y))?;
                self.unify(r, s)
            }
            _ => Err(UnifyError::Mismatch),
        }
    }

    fn constrain(&mut self, ty: &Type, class: Class) -> Result<(), UnifyError> {
        match self.shallow(ty) {
            Type::Var(v) => {
                let met = self.classes[v as usize].meet(class).ok_or(UnifyError::Mismatch)?;
                self.classes[v as usize] = met;
                Ok(())
            }
            Type::Scalar(s) => class.allows_scalar(s).then_some(()).ok_or(UnifyError::Mismatch),
            Type::Tuple(items) if class.allows_compound() => {
                let inner = Class { scalars: None, ..class };
                items.iter().try_for_each(|t| self.constrain(t, inner))
            }
            Type::Seq(elem) if class.allows_compound() => {
                self.constrain(&elem, Class { scalars: None, ..class })
            }
            Type::Func(..) if class == Class::ANY => Ok(()),
            _ => Err(UnifyError::Mismatch),
        }
    }

    /// Settles `/`'s result types whose operand type is known. `lazy` stops at the first
    /// unresolved operand so unification stays cheap.
    fn resolve_float_of(&mut self, lazy: bool) {
        if lazy && self.float_of.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut self.float_of);
        for (x, r) in pending {
            match self.shallow(&Type::Var(x)).as_scalar() {
                Some(s) => {
                    let float = Type::Scalar(s.float_of().unwrap_or(Scalar::F32));
                    let _ = self.unify(&Type::Var(r), &float);
                }
                None => self.float_of.push((x, r)),
            }
        }
    }

    /// Defaults after a top-level statement. Main's locals not bound yet keep their variables
    /// (a later statement binds them); everything before the watermark is bound or generic.
    fn default_all(&mut self, assigned: &[bool], newly_assigned: &[usize]) {
        // The variables this statement's names now stand for (some older than the watermark).
        let mut bound_now = Vec::new();
        for &local in newly_assigned {
            self.each_free_var(&self.main_local_types[local], 0, &mut |v| {
                if !bound_now.contains(&v) {
                    bound_now.push(v);
                }
            });
        }
        // Only these can be defaulted below, so only these need to be known as kept. This runs
        // after every statement over every pending type (hundreds in a large file), so the
        // scan must stay cheap.
        let float_operands: Vec<TyVar> = self.float_of.iter().map(|&(x, _)| self.find_var(x)).collect();
        let may_default = |v: TyVar| {
            v as usize >= self.defaulted_up_to || bound_now.contains(&v) || float_operands.contains(&v)
        };
        let mut keep = HashSet::default();
        let unassigned = self.main_local_types.iter().zip(assigned).filter(|(_, a)| !**a).map(|(t, _)| t);
        for ty in unassigned.chain(&self.late_defaults) {
            self.each_free_var(ty, 0, &mut |v| {
                if may_default(v) {
                    keep.insert(v);
                }
            });
        }
        // Functions inferred with the top level take their other types from later calls.
        for ty in self.group_types.values() {
            self.each_free_var(ty, 0, &mut |v| {
                if may_default(v) && !bound_now.contains(&v) {
                    keep.insert(v);
                }
            });
        }
        for v in bound_now {
            if !keep.contains(&v) && !self.generic.contains(&v) && self.bindings[v as usize].is_none() {
                let default = Type::Scalar(self.classes[v as usize].default_type());
                let _ = self.unify(&Type::Var(v), &default);
            }
        }
        self.default_except(&keep);
        self.defaulted_up_to = self.bindings.len();
    }

    /// Gives every unbound variable outside `keep` (and not generic) its class's default type.
    fn default_except(&mut self, keep: &HashSet<TyVar>) {
        // Operands of `/` first, so their results follow.
        for (x, _) in self.float_of.clone() {
            let x = self.find_var(x);
            if !keep.contains(&x) && !self.generic.contains(&x) && self.bindings[x as usize].is_none() {
                let default = Type::Scalar(self.classes[x as usize].default_type());
                let _ = self.unify(&Type::Var(x), &default);
            }
        }
        self.resolve_float_of(false);
        for v in self.defaulted_up_to as TyVar..self.bindings.len() as TyVar {
            if self.bindings[v as usize].is_none() && !keep.contains(&v) && !self.generic.contains(&v) {
                let default = Type::Scalar(self.classes[v as usize].default_type());
                self.bindings[v as usize] = Some(default);
            }
        }
        self.resolve_float_of(false);
    }

    fn instantiate(&mut self, scheme: &Scheme) -> (Type, Vec<Type>) {
        let fresh: Vec<Type> = scheme.vars.iter().map(|(_, class)| self.fresh(*class)).collect();
        let lookup = |v: TyVar| scheme.vars.iter().position(|(q, _)| *q == v).map(|i| fresh[i].clone());
        let ty = scheme.ty.map_vars(&mut |v| lookup(v));
        for &(x, r) in &scheme.float_of {
            if let (Some(Type::Var(x)), Some(Type::Var(r))) = (lookup(x), lookup(r)) {
                self.float_of.push((x, r));
            }
        }
        self.resolve_float_of(true);
        (ty, fresh)
    }

    /// Generalises a nested function's type (`binding` is the name it is bound to, `scope` its
    /// own scope) over the variables that nothing outside it mentions: not the locals of the
    /// scopes around it, which it may capture, nor the enclosing functions' results.
    fn generalise_nested(
        &mut self,
        state: &BodyState<'a>,
        scope: hir::ScopeId,
        binding: LocalId,
        ty: &Type,
    ) -> Scheme {
        let ty = self.zonk(ty);
        let mut candidates = Vec::new();
        ty.vars(&mut candidates);
        if candidates.is_empty() {
            return Scheme::mono(ty);
        }
        let mut outside = HashSet::default();
        for (id, local) in state.body.locals.iter().enumerate() {
            if id as LocalId != binding && !state.body.scope_within(local.scope, scope) {
                self.free_vars_into(&state.local_types[id], &mut outside);
            }
        }
        for (ret, _) in &state.returns {
            self.free_vars_into(ret, &mut outside);
        }
        for ty in self.group_types.values() {
            self.free_vars_into(ty, &mut outside);
        }
        let mut vars: Vec<TyVar> = candidates.into_iter().filter(|v| !outside.contains(v)).collect();
        let float_of = self.float_of_over(&mut vars);
        self.generic.extend(vars.iter().copied());
        Scheme { vars: vars.into_iter().map(|v| (v, self.classes[v as usize])).collect(), float_of, ty }
    }

    /// A type variable in an annotation promises that the function works for every type (of
    /// its inferred class): the body may not fix it, nor make two of them one.
    fn check_annotation_vars(&mut self) {
        for (binding, vars) in std::mem::take(&mut self.annotation_vars) {
            let mut diagnostics = Vec::new();
            let mut seen: Vec<(TyVar, &str, TextRange)> = Vec::new();
            for (name, ty, range) in &vars {
                match self.shallow(ty) {
                    Type::Var(v) => match seen.iter().find(|(w, _, _)| *w == v) {
                        Some((_, other, other_range)) => diagnostics.push(
                            Diagnostic::new(
                                Code::TypeMismatch,
                                *range,
                                format!("the annotation says `{name}` and `{other}` may differ, but the body makes them one type"),
                            )
                            .with_label(*other_range, format!("`{other}` is written here"))
                            .with_help(format!("write `{other}` for both, or keep the two apart in the body")),
                        ),
                        None => seen.push((v, name, *range)),
                    },
                    _ => diagnostics.push(
                        Diagnostic::new(
                            Code::TypeMismatch,
                            *range,
                            format!(
                                "the annotation says `{name}` may be any type, but the body needs {}",
                                self.describe(ty)
                            ),
                        )
                        .with_help(format!("write that type instead of `{name}`")),
                    ),
                }
            }
            if let Some((_, state)) = self.outputs.iter_mut().find(|(b, _)| *b == binding) {
                state.diagnostics.extend(diagnostics);
            }
        }
    }

    /// The pending `/` constraints over the variables a scheme quantifies; their result
    /// variables join the quantified ones.
    fn float_of_over(&self, vars: &mut Vec<TyVar>) -> Vec<(TyVar, TyVar)> {
        let float_of: Vec<(TyVar, TyVar)> = self
            .float_of
            .iter()
            .map(|&(x, r)| (self.find_var(x), self.find_var(r)))
            .filter(|(x, _)| vars.contains(x))
            .collect();
        for &(_, r) in &float_of {
            if !vars.contains(&r) {
                vars.push(r);
            }
        }
        float_of
    }

    /// Each parameter's type: its annotation, or a fresh variable; the local takes it too.
    fn param_types(
        &mut self,
        state: &BodyState<'a>,
        params: &[hir::Param],
        type_vars: &mut HashMap<String, Type>,
    ) -> Vec<Type> {
        params
            .iter()
            .map(|p| {
                let ty = self.annotation_or_fresh(&p.annotation, type_vars);
                let local_ty = state.local_types[p.local as usize].clone();
                let _ = self.unify(&local_ty, &ty);
                ty
            })
            .collect()
    }

    fn annotation_or_fresh(
        &mut self,
        annotation: &Option<TypeRef>,
        vars: &mut HashMap<String, Type>,
    ) -> Type {
        match annotation {
            Some(t) => self.type_of_annotation(t, vars),
            None => self.fresh(Class::ANY),
        }
    }

    fn type_of_annotation(&mut self, annotation: &TypeRef, vars: &mut HashMap<String, Type>) -> Type {
        match annotation {
            TypeRef::Scalar(s, _) => Type::Scalar(*s),
            TypeRef::Var(name, _) => {
                if let Some(t) = vars.get(name) {
                    return t.clone();
                }
                let t = self.fresh(Class::ANY);
                vars.insert(name.clone(), t.clone());
                t
            }
            TypeRef::Tuple(items, _) => {
                Type::Tuple(items.iter().map(|t| self.type_of_annotation(t, vars)).collect())
            }
            TypeRef::Seq(elem, _) => Type::seq(self.type_of_annotation(elem, vars)),
            TypeRef::Error(_) => self.fresh(Class::ANY),
        }
    }

    // ---- Reporting. ----

    fn require(&mut self, state: &mut BodyState<'a>, expected: &Type, actual: &Type, origin: Origin) -> bool {
        match self.unify(expected, actual) {
            Ok(()) => true,
            Err(error) => {
                let diagnostic = self.mismatch(error, expected, actual, origin);
                state.diagnostics.push(diagnostic);
                false
            }
        }
    }

    fn mismatch(&self, error: UnifyError, expected: &Type, actual: &Type, origin: Origin) -> Diagnostic {
        let (expected, actual) = (self.describe(expected), self.describe(actual));
        if let UnifyError::Infinite = error {
            return Diagnostic::new(
                Code::InfiniteType,
                origin.range,
                format!("this would need a type that contains itself ({actual} and {expected})"),
            );
        }
        let mut diagnostic = Diagnostic::new(
            Code::TypeMismatch,
            origin.range,
            format!("{}: expected {expected}, found {actual}", origin.what),
        );
        if let Some(other) = origin.other {
            diagnostic = diagnostic.with_label(other, format!("this is {expected}"));
        }
        if let Some(help) = conversion_help(&expected, &actual) {
            diagnostic = diagnostic.with_help(help);
        }
        diagnostic
    }

    /// A type as a message shows it: an undecided numeric type reads as its class.
    fn describe(&self, ty: &Type) -> String {
        let ty = self.zonk(ty);
        if let Type::Var(v) = ty {
            let class = self.classes[v as usize];
            return match class.name() {
                Some("Num") => "a number".to_string(),
                Some("Int") => "an integer".to_string(),
                Some("Float") => "a float".to_string(),
                _ => "a value of any type".to_string(),
            };
        }
        let mut order = Vec::new();
        ty.vars(&mut order);
        let renamed =
            ty.map_vars(&mut |v| Some(Type::Var(order.iter().position(|o| *o == v).unwrap_or(0) as TyVar)));
        format!("`{renamed}`")
    }

    fn report_class(
        &mut self,
        state: &mut BodyState<'a>,
        ty: &Type,
        class: Class,
        range: TextRange,
        what: &str,
    ) {
        if self.constrain(ty, class).is_err() {
            let found = self.describe(ty);
            let needed = match class.name() {
                Some("Num") => "a number (i32, i64, f32 or f64)",
                Some("Int") => "an integer (i32 or i64)",
                Some("Float") => "a float (f32 or f64)",
                Some("Ord") => "an ordered type (a number, or a tuple or sequence of them)",
                Some("Eq") => "a type with equality (not a function)",
                Some("Scalar") => "a number or a bool",
                _ => "another type",
            };
            let mut diagnostic =
                Diagnostic::new(Code::TypeMismatch, range, format!("{what} needs {needed}, found {found}"))
                    .with_label(range, format!("this is {found}"));
            if class.name() == Some("Float") && found.contains("i32") {
                diagnostic = diagnostic.with_help("convert it with `f32(x)`");
            } else if class.name() == Some("Float") && found.contains("i64") {
                diagnostic = diagnostic.with_help("convert it with `f64(x)`");
            }
            state.diagnostics.push(diagnostic);
        }
    }

    // ---- Statements. ----

    fn infer_block(&mut self, state: &mut BodyState<'a>, block: &[hir::StmtId]) {
        for &stmt in block {
            self.infer_stmt(state, stmt);
        }
    }

    fn infer_stmt(&mut self, state: &mut BodyState<'a>, id: hir::StmtId) {
        let body = state.body;
        let range = body.stmt_ranges[id as usize];
        match body.stmt(id) {
            Stmt::Assign { targets, value } => {
                let ty = self.infer_expr(state, *value, None);
                for target in targets {
                    self.bind_pattern(state, target, &ty, *value);
                }
                // `f = lambda ...` is generalised like a `def`.
                if let ([Pattern::Bind(local, _)], hir::Expr::Lambda(lambda)) =
                    (targets.as_slice(), body.expr(*value))
                {
                    let scope = body.lambdas[*lambda as usize].scope;
                    let scheme = self.generalise_nested(state, scope, *local, &ty);
                    state.local_schemes.push((*local, scheme));
                }
            }
            Stmt::If { cond, then, otherwise } => {
                self.expect_bool(state, *cond, "an `if` condition");
                self.infer_block(state, then);
                self.infer_block(state, otherwise);
            }
            Stmt::For { pattern, iterable, body: loop_body } => {
                self.bind_iteration(state, pattern, *iterable, "a `for` loop runs over a sequence");
                state.loop_depth += 1;
                self.infer_block(state, loop_body);
                state.loop_depth -= 1;
            }
            Stmt::While { cond, body: loop_body } => {
                self.expect_bool(state, *cond, "a `while` condition");
                state.loop_depth += 1;
                self.infer_block(state, loop_body);
                state.loop_depth -= 1;
            }
            Stmt::Return(value) => {
                if state.loop_depth > 0 {
                    state.diagnostics.push(
                        Diagnostic::new(Code::ReturnInLoop, range, "`return` inside a loop")
                            .with_note("a loop body only rebinds names: its values are carried to the next iteration")
                            .with_help("bind the result to a name in the loop and return it after the loop"),
                    );
                }
                let Some((expected, annotation)) = state.returns.last().cloned() else { return };
                let Some(value) = value else {
                    state.diagnostics.push(
                        Diagnostic::new(
                            Code::TypeMismatch,
                            range,
                            "a bare `return`: every Weft function returns a value",
                        )
                        .with_help("write `return e`"),
                    );
                    return;
                };
                let ty = self.infer_expr(state, *value, None);
                let origin = Origin {
                    range: body.expr_range(*value),
                    other: annotation,
                    what: "the returned value has the wrong type",
                };
                let origin = if annotation.is_none() {
                    Origin { what: "this function returns values of two types", ..origin }
                } else {
                    origin
                };
                self.require(state, &expected, &ty, origin);
            }
            Stmt::Assert { cond, .. } => self.expect_bool(state, *cond, "an `assert` condition"),
            Stmt::Expr(expr) => {
                self.infer_expr(state, *expr, None);
            }
            Stmt::Print { sink, args } if *sink != Sink::Text => self.infer_chart(state, *sink, args, range),
            Stmt::Print { args, .. } => {
                for &arg in args {
                    if let hir::Expr::Literal(Literal::Str(_)) = body.expr(arg) {
                        state.expr_types[arg as usize] = Type::Tuple(vec![]);
                        continue;
                    }
                    let ty = self.infer_expr(state, arg, None);
                    if let Type::Func(..) = self.shallow(&ty) {
                        state.diagnostics.push(Diagnostic::new(
                            Code::UnsupportedFunctionValue,
                            body.expr_range(arg),
                            "a function cannot be printed",
                        ));
                    }
                }
            }
            Stmt::Def { local, lambda } => {
                let ty = self.infer_lambda(state, *lambda, None);
                let local_ty = state.local_types[*local as usize].clone();
                let _ = self.unify(&local_ty, &ty);
                let scope = body.lambdas[*lambda as usize].scope;
                let scheme = self.generalise_nested(state, scope, *local, &ty);
                state.local_schemes.push((*local, scheme));
            }
        }
    }

    fn expect_bool(&mut self, state: &mut BodyState<'a>, expr: ExprId, what: &'static str) {
        let ty = self.infer_expr(state, expr, None);
        let origin = Origin { range: state.body.expr_range(expr), other: None, what };
        self.require(state, &Type::BOOL, &ty, origin);
    }

    /// `for pattern in iterable`: the iterable is a sequence, and the pattern binds its elements.
    fn bind_iteration(
        &mut self,
        state: &mut BodyState<'a>,
        pattern: &Pattern,
        iterable: ExprId,
        what: &'static str,
    ) {
        let seq = self.infer_expr(state, iterable, None);
        let elem = self.fresh(Class::ANY);
        let origin = Origin { range: state.body.expr_range(iterable), other: None, what };
        self.require(state, &Type::seq(elem.clone()), &seq, origin);
        self.bind_pattern(state, pattern, &elem, iterable);
    }

    fn bind_pattern(&mut self, state: &mut BodyState<'a>, pattern: &Pattern, ty: &Type, value: ExprId) {
        match pattern {
            Pattern::Bind(local, range) => {
                let local_ty = state.local_types[*local as usize].clone();
                let first = state.body.local(*local).range;
                let other = (first != *range).then_some(first);
                let origin =
                    Origin { range: state.body.expr_range(value), other, what: "a name keeps one type" };
                self.require(state, &local_ty, ty, origin);
            }
            Pattern::Tuple(items, range) => {
                let parts: Vec<Type> = items.iter().map(|_| self.fresh(Class::ANY)).collect();
                let origin = Origin {
                    range: state.body.expr_range(value),
                    other: Some(*range),
                    what: "only a tuple of the same width can be unpacked",
                };
                if self.require(state, &Type::Tuple(parts.clone()), ty, origin) {
                    for (item, part) in items.iter().zip(&parts) {
                        self.bind_pattern(state, item, part, value);
                    }
                }
            }
            Pattern::Invalid(_) => {}
        }
    }

    // ---- Expressions. ----

    fn infer_expr(&mut self, state: &mut BodyState<'a>, id: ExprId, expected: Option<&Type>) -> Type {
        let ty = weft_core::ensure_stack(|| self.infer_expr_inner(state, id, expected));
        state.expr_types[id as usize] = ty.clone();
        ty
    }

    fn infer_expr_inner(&mut self, state: &mut BodyState<'a>, id: ExprId, expected: Option<&Type>) -> Type {
        let body = state.body;
        let range = body.expr_range(id);
        match body.expr(id) {
            hir::Expr::Missing => self.fresh(Class::ANY),
            hir::Expr::Literal(literal) => match literal {
                Literal::Int(_) => self.fresh(Class::num()),
                Literal::Float(_) => self.fresh(Class::float()),
                Literal::Bool(_) => Type::BOOL,
                Literal::Str(_) => {
                    state.diagnostics.push(
                        Diagnostic::new(Code::InvalidString, range, "Weft has no string values")
                            .with_note("a string may only be a literal argument of `print`, `assert`, `load_npy` or `load_csv`"),
                    );
                    self.fresh(Class::ANY)
                }
            },
            hir::Expr::Local(local) => {
                if let Some(scheme) =
                    state.local_schemes.iter().find(|(l, _)| l == local).map(|(_, s)| s.clone())
                {
                    let (ty, inst) = self.instantiate(&scheme);
                    state.instantiations.push((id, inst));
                    return ty;
                }
                state.local_types[*local as usize].clone()
            }
            hir::Expr::Global(name) => self.infer_global(state, id, name),
            hir::Expr::Prelude(name) => self.prelude_value(state, id, name),
            hir::Expr::Tuple(items) => {
                let items = items.clone();
                Type::Tuple(items.iter().map(|&e| self.infer_expr(state, e, None)).collect())
            }
            hir::Expr::List(items) => {
                let elem = self.fresh(Class::ANY);
                for &item in items {
                    let ty = self.infer_expr(state, item, None);
                    let origin = Origin {
                        range: body.expr_range(item),
                        other: Some(body.expr_range(items[0])),
                        what: "the elements of a list have one type",
                    };
                    self.require(state, &elem, &ty, origin);
                }
                Type::seq(elem)
            }
            hir::Expr::Index { base, index } => self.infer_index(state, *base, *index),
            hir::Expr::Slice { base, start, stop, step } => {
                let seq = self.infer_expr(state, *base, None);
                let elem = self.fresh(Class::ANY);
                let origin = Origin {
                    range: body.expr_range(*base),
                    other: None,
                    what: "only a sequence can be sliced",
                };
                self.require(state, &Type::seq(elem), &seq, origin);
                for part in [start, stop, step].into_iter().flatten() {
                    self.expect_i32(state, *part, "a slice bound");
                }
                seq
            }
            hir::Expr::Unary { op, operand } => {
                let ty = self.infer_expr(state, *operand, None);
                let operand_range = body.expr_range(*operand);
                match op {
                    hir::UnaryOp::Neg | hir::UnaryOp::Pos => {
                        self.report_class(state, &ty, Class::num(), operand_range, "arithmetic")
                    }
                    hir::UnaryOp::Invert => self.report_class(state, &ty, Class::int(), operand_range, "`~`"),
                    hir::UnaryOp::Not => {
                        let origin = Origin { range: operand_range, other: None, what: "`not` takes a bool" };
                        self.require(state, &Type::BOOL, &ty, origin);
                    }
                }
                ty
            }
            hir::Expr::Binary { op, lhs, rhs } => self.infer_binary(state, *op, *lhs, *rhs),
            hir::Expr::And(lhs, rhs) | hir::Expr::Or(lhs, rhs) => {
                self.expect_bool(state, *lhs, "`and` and `or` take bools");
                self.expect_bool(state, *rhs, "`and` and `or` take bools");
                Type::BOOL
            }
            hir::Expr::Compare { operands, ops } => {
                let types: Vec<Type> = operands.iter().map(|&e| self.infer_expr(state, e, None)).collect();
                for (i, op) in ops.iter().enumerate() {
                    let (l, r) = (operands[i], operands[i + 1]);
                    let origin = Origin {
                        range: body.expr_range(r),
                        other: Some(body.expr_range(l)),
                        what: "both sides of a comparison have one type",
                    };
                    if self.require(state, &types[i], &types[i + 1], origin) {
                        let (class, what) = if matches!(op, hir::BinaryOp::Eq | hir::BinaryOp::Ne) {
                            (Class::EQ, "`==` and `!=`")
                        } else {
                            (Class::ORD, "an ordering comparison")
                        };
                        self.report_class(state, &types[i], class, body.expr_range(l), what);
                    }
                }
                Type::BOOL
            }
            hir::Expr::If { cond, then, otherwise } => {
                self.expect_bool(state, *cond, "a conditional expression's condition");
                let a = self.infer_expr(state, *then, expected);
                let b = self.infer_expr(state, *otherwise, expected);
                let origin = Origin {
                    range: body.expr_range(*otherwise),
                    other: Some(body.expr_range(*then)),
                    what: "both branches of a conditional expression have one type",
                };
                self.require(state, &a, &b, origin);
                a
            }
            hir::Expr::Call { callee, args } => self.infer_call(state, id, *callee, args),
            hir::Expr::Lambda(lambda) => self.infer_lambda(state, *lambda, expected),
            hir::Expr::Comprehension { element, clauses } => {
                for clause in clauses {
                    match clause {
                        Clause::For { pattern, iterable, .. } => self.bind_iteration(
                            state,
                            pattern,
                            *iterable,
                            "a comprehension runs over a sequence",
                        ),
                        Clause::If(cond) => self.expect_bool(state, *cond, "a comprehension's `if` filter"),
                    }
                }
                Type::seq(self.infer_expr(state, *element, None))
            }
        }
    }

    fn expect_i32(&mut self, state: &mut BodyState<'a>, expr: ExprId, what: &'static str) {
        let ty = self.infer_expr(state, expr, None);
        let origin = Origin { range: state.body.expr_range(expr), other: None, what };
        self.require(state, &Type::I32, &ty, origin);
    }

    fn infer_global(&mut self, state: &mut BodyState<'a>, id: ExprId, name: &str) -> Type {
        if let Some(ty) = self.group_types.get(name) {
            state.group_reads.push((id, name.to_string()));
            return ty.clone();
        }
        if let Some(index) = function_index(self.db, self.file, name) {
            let scheme = function_scheme(self.db, self.functions[index as usize]).clone();
            let (ty, inst) = self.instantiate(&scheme);
            state.instantiations.push((id, inst));
            return ty;
        }
        if let Some(&local) = self.main_locals.get(name) {
            if let Some(scheme) =
                self.main_local_schemes.iter().find(|(l, _)| *l == local).map(|(_, s)| s.clone())
            {
                let (ty, inst) = self.instantiate(&scheme);
                state.instantiations.push((id, inst));
                return ty;
            }
            return self.main_local_types[local as usize].clone();
        }
        // Bound only in code the parser could not make sense of (already reported).
        if self.group.contains(&Binding::Main) {
            return self.fresh(Class::ANY);
        }
        // A top-level binding read from a function outside main's group: main is done.
        let top = top_level_types(self.db, self.file);
        let main_body = hir::top_level_hir(self.db, self.file);
        let local = main_body.locals.iter().position(|l| l.scope == 0 && l.name == name);
        match local {
            Some(local) => {
                if let Some(scheme) = top.main.scheme_of(local as LocalId) {
                    let (ty, inst) = self.instantiate(&scheme.clone());
                    state.instantiations.push((id, inst));
                    return ty;
                }
                top.main.local(local as LocalId).clone()
            }
            None => self.fresh(Class::ANY),
        }
    }

    fn infer_index(&mut self, state: &mut BodyState<'a>, base: ExprId, index: ExprId) -> Type {
        let body = state.body;
        let base_ty = self.infer_expr(state, base, None);
        if let Type::Tuple(items) = self.shallow(&base_ty) {
            state.expr_types[index as usize] = Type::I32;
            let Some(i) = literal_index(body, index) else {
                state.diagnostics.push(
                    Diagnostic::new(
                        Code::InvalidTupleIndex,
                        body.expr_range(index),
                        "a tuple is indexed by an integer literal",
                    )
                    .with_label(
                        body.expr_range(base),
                        format!("this is a tuple, {}", self.describe(&base_ty)),
                    )
                    .with_help("unpack it instead: `a, b = t`"),
                );
                return self.fresh(Class::ANY);
            };
            let position = if i < 0 { items.len() as i64 + i } else { i };
            return match items.get(position as usize).filter(|_| position >= 0) {
                Some(ty) => ty.clone(),
                None => {
                    state.diagnostics.push(Diagnostic::new(
                        Code::InvalidTupleIndex,
                        body.expr_range(index),
                        format!("index {i} is out of range for a tuple of {} components", items.len()),
                    ));
                    self.fresh(Class::ANY)
                }
            };
        }
        let elem = self.fresh(Class::ANY);
        let origin = Origin {
            range: body.expr_range(base),
            other: None,
            what: "only sequences and tuples can be indexed",
        };
        self.require(state, &Type::seq(elem.clone()), &base_ty, origin);
        self.expect_i32(state, index, "a sequence index is an i32");
        elem
    }

    fn infer_binary(
        &mut self,
        state: &mut BodyState<'a>,
        op: hir::BinaryOp,
        lhs: ExprId,
        rhs: ExprId,
    ) -> Type {
        use hir::BinaryOp::*;
        let body = state.body;
        let a = self.infer_expr(state, lhs, None);
        let b = self.infer_expr(state, rhs, None);
        let origin = Origin {
            range: body.expr_range(rhs),
            other: Some(body.expr_range(lhs)),
            what: "both operands of an operator have one type (there are no implicit conversions)",
        };
        if !self.require(state, &a, &b, origin) {
            // A fresh type, so that one mistake is reported once.
            return if op == Div { self.fresh(Class::float()) } else { self.fresh(Class::ANY) };
        }
        let what = format!("`{}`", op.symbol());
        let class = match op {
            BitAnd | BitOr | BitXor | Shl | Shr => Class::int(),
            _ => Class::num(),
        };
        let before = state.diagnostics.len();
        self.report_class(state, &a, class, body.expr_range(lhs), &what);
        if state.diagnostics.len() > before {
            return if op == Div { self.fresh(Class::float()) } else { a };
        }
        // The operand type resolved, so that a chain `1 + 1 + ...` does not walk ever longer
        // chains of variable bindings.
        let a = self.shallow(&a);
        if op == Div {
            let result = self.fresh(Class::float());
            if let (Type::Var(x), Type::Var(r)) = (self.shallow(&a), &result) {
                self.float_of.push((x, *r));
                return result;
            }
            let scalar = self.shallow(&a).as_scalar().and_then(Scalar::float_of).unwrap_or(Scalar::F32);
            return Type::Scalar(scalar);
        }
        a
    }

    fn infer_lambda(&mut self, state: &mut BodyState<'a>, id: LambdaId, expected: Option<&Type>) -> Type {
        let body = state.body;
        let lambda = &body.lambdas[id as usize];
        let mut type_vars = HashMap::default();
        let params = self.param_types(state, &lambda.params, &mut type_vars);
        if let Some(Type::Func(expected_params, _)) = expected.map(|t| self.shallow(t))
            && expected_params.len() == params.len()
        {
            for (p, e) in params.iter().zip(&expected_params) {
                let _ = self.unify(p, e);
            }
        }
        let ret = match &lambda.body {
            LambdaBody::Expr(e) => self.infer_expr(state, *e, None),
            LambdaBody::Block(block) => {
                let ret = self.annotation_or_fresh(&lambda.ret_annotation, &mut type_vars);
                state.returns.push((ret.clone(), lambda.ret_annotation.as_ref().map(TypeRef::range)));
                let depth = std::mem::take(&mut state.loop_depth);
                self.infer_block(state, block);
                state.loop_depth = depth;
                state.returns.pop();
                ret
            }
        };
        let ty = Type::func(params, ret);
        state.lambda_types[id as usize] = ty.clone();
        ty
    }

    fn infer_call(&mut self, state: &mut BodyState<'a>, id: ExprId, callee: ExprId, args: &[ExprId]) -> Type {
        let body = state.body;
        if let hir::Expr::Prelude(name) = body.expr(callee) {
            let name = name.clone();
            return self.infer_prelude_call(state, id, callee, &name, args);
        }
        let callee_ty = self.infer_expr(state, callee, None);
        let (params, ret) = match self.shallow(&callee_ty) {
            Type::Func(params, ret) => (params, *ret),
            Type::Var(_)
                if self.constrain(&callee_ty, Class::ANY).is_ok()
                    && self.classes[self.var_of(&callee_ty) as usize] == Class::ANY =>
            {
                let params: Vec<Type> = args.iter().map(|_| self.fresh(Class::ANY)).collect();
                let ret = self.fresh(Class::ANY);
                let _ = self.unify(&callee_ty, &Type::func(params.clone(), ret.clone()));
                (params, ret)
            }
            other => {
                state.diagnostics.push(
                    Diagnostic::new(Code::WrongArity, body.expr_range(callee), "this is not a function")
                        .with_label(body.expr_range(callee), format!("this is {}", self.describe(&other))),
                );
                args.iter().for_each(|&a| {
                    self.infer_expr(state, a, None);
                });
                return self.fresh(Class::ANY);
            }
        };
        if params.len() != args.len() {
            state.diagnostics.push(
                Diagnostic::new(
                    Code::WrongArity,
                    body.expr_range(id),
                    format!(
                        "this function takes {} argument{}, but {} {} given",
                        params.len(),
                        plural(params.len()),
                        args.len(),
                        if args.len() == 1 { "was" } else { "were" }
                    ),
                )
                .with_label(body.expr_range(callee), format!("this is {}", self.describe(&callee_ty))),
            );
            args.iter().for_each(|&a| {
                self.infer_expr(state, a, None);
            });
            return ret;
        }
        self.check_args(state, callee, args, &params);
        ret
    }

    /// Infers arguments against parameter types: lambdas last, so that they see what the other
    /// arguments decided.
    fn check_args(&mut self, state: &mut BodyState<'a>, callee: ExprId, args: &[ExprId], params: &[Type]) {
        let body = state.body;
        for i in lambdas_last(body, args) {
            let ty = self.infer_expr(state, args[i], Some(&params[i]));
            let origin = Origin {
                range: body.expr_range(args[i]),
                other: Some(body.expr_range(callee)),
                what: "an argument has the wrong type",
            };
            if !self.require(state, &params[i], &ty, origin)
                && let (Type::Seq(_), Type::Tuple(items)) = (self.shallow(&params[i]), self.shallow(&ty))
                && let Some(help) = self.tuple_parameter_help(body, callee, i, items.len())
                && let Some(diagnostic) = state.diagnostics.last_mut()
            {
                diagnostic.help = Some(help);
            }
        }
    }

    /// The help for a tuple passed where the callee's parameter is a sequence only because the
    /// callee indexes it (`p[0]`): tuple indexing is not inferred, so an unannotated parameter
    /// that is indexed is a sequence, and a tuple parameter needs its annotation. Only for a
    /// parameter whose every read is such an index, so that the annotation is the whole fix.
    fn tuple_parameter_help(&self, body: &Body, callee: ExprId, arg: usize, arity: usize) -> Option<String> {
        match body.expr(callee) {
            hir::Expr::Global(name) => {
                let index = function_index(self.db, self.file, name)?;
                let function = *file_functions(self.db, self.file).get(index as usize)?;
                let callee_body = hir::function_hir(self.db, function);
                let (params, ret) = (&callee_body.params, callee_body.ret_annotation.as_ref());
                indexed_parameter_help(callee_body, name, params, ret, arg, arity)
            }
            hir::Expr::Local(local) => {
                let lambda = body.stmts.iter().find_map(|stmt| match stmt {
                    Stmt::Def { local: def, lambda } if def == local => Some(*lambda),
                    _ => None,
                })?;
                let lambda = &body.lambdas[lambda as usize];
                let name = lambda.name.as_deref()?;
                indexed_parameter_help(body, name, &lambda.params, lambda.ret_annotation.as_ref(), arg, arity)
            }
            _ => None,
        }
    }

    fn prelude_value(&mut self, state: &mut BodyState<'a>, id: ExprId, name: &str) -> Type {
        match prelude_signature(self, name, None) {
            // A prelude function that itself takes a function is resolved at its call.
            Some((params, _)) if params.iter().any(|p| matches!(p, Type::Func(..))) => {
                state.diagnostics.push(
                    Diagnostic::new(
                        Code::UnsupportedFunctionValue,
                        state.body.expr_range(id),
                        format!("`{name}` takes a function, so it cannot be passed as a value"),
                    )
                    .with_help(format!(
                        "call `{name}` where its function is known, or wrap the call in a lambda"
                    )),
                );
                self.fresh(Class::ANY)
            }
            Some((params, ret)) => Type::func(params, ret),
            None => {
                let (why, help) = if Sink::from_name(name).is_some() {
                    ("is a statement", format!("call `{name}(...)` on a line of its own, at the top level"))
                } else {
                    ("is overloaded", format!("wrap it in a lambda, e.g. `lambda a, b: {name}(a, b)`"))
                };
                state.diagnostics.push(
                    Diagnostic::new(
                        Code::UnsupportedFunctionValue,
                        state.body.expr_range(id),
                        format!("`{name}` {why}, so it cannot be passed as a value"),
                    )
                    .with_help(help),
                );
                self.fresh(Class::ANY)
            }
        }
    }

    /// `__session_input__("xs")`: the value an earlier cell bound to `xs`, at the type the
    /// file's `CellInterface` gives it.
    fn infer_session_input(
        &mut self,
        state: &mut BodyState<'a>,
        id: ExprId,
        callee: ExprId,
        args: &[ExprId],
    ) -> Type {
        let body = state.body;
        state.expr_types[callee as usize] = Type::Tuple(vec![]);
        let name = body.string_argument(args);
        for &a in args {
            state.expr_types[a as usize] = Type::Tuple(vec![]);
        }
        let interface = self.file.interface(self.db);
        let input = name.and_then(|name| interface.inputs.iter().find(|input| input.name == name));
        match input {
            Some(input) => input.ty.clone(),
            None => {
                state.diagnostics.push(Diagnostic::new(
                    Code::UnknownName,
                    body.expr_range(id),
                    format!("`{}` reads the values of a REPL or notebook session", crate::db::SESSION_INPUT),
                ));
                self.fresh(Class::ANY)
            }
        }
    }

    fn infer_prelude_call(
        &mut self,
        state: &mut BodyState<'a>,
        id: ExprId,
        callee: ExprId,
        name: &str,
        args: &[ExprId],
    ) -> Type {
        let body = state.body;
        if name == crate::db::SESSION_INPUT {
            return self.infer_session_input(state, id, callee, args);
        }
        if matches!(name, "load_npy" | "load_csv") {
            let ok = body.string_argument(args).is_some();
            for &a in args {
                state.expr_types[a as usize] = Type::Tuple(vec![]);
            }
            if !ok {
                state.diagnostics.push(
                    Diagnostic::new(
                        Code::InvalidString,
                        body.expr_range(id),
                        format!("`{name}` takes one string literal, the path"),
                    )
                    .with_help(format!("write `{name}(\"data/file\")`")),
                );
            }
            state.expr_types[callee as usize] = Type::Tuple(vec![]);
            return if name == "load_csv" {
                Type::seq(Type::seq(Type::F32))
            } else {
                let elem = self.fresh(Class::ANY);
                self.late_defaults.push(elem.clone());
                Type::seq(elem)
            };
        }
        if name == "unzip" {
            return self.infer_unzip(state, id, callee, args);
        }
        if let Some(sink) = Sink::from_name(name).filter(|&sink| sink != Sink::Text) {
            state.diagnostics.push(
                Diagnostic::new(
                    Code::UnsupportedConstruct,
                    body.expr_range(id),
                    format!("`{name}` draws a chart and gives no value"),
                )
                .with_help(format!("call `{name}` as a statement of its own, at the top level")),
            );
            self.infer_chart(state, sink, args, body.expr_range(id));
            return Type::Tuple(vec![]);
        }
        let Some(signature) = prelude_signature(self, name, Some(args.len())) else {
            state.diagnostics.push(Diagnostic::new(
                Code::WrongArity,
                body.expr_range(id),
                format!("`{name}` does not take {} argument{}", args.len(), plural(args.len())),
            ));
            args.iter().for_each(|&a| {
                self.infer_expr(state, a, None);
            });
            return self.fresh(Class::ANY);
        };
        let (params, ret) = signature;
        state.expr_types[callee as usize] = Type::func(params.clone(), ret.clone());
        self.check_args_prelude(state, Some(callee), name, args, &params);
        // A literal cast to a type it can have takes that type (`f64(0.1)` is the f64 nearest
        // 0.1, not the f32 nearest 0.1 widened), as a literal in any other context does.
        if let (Some(target), [arg]) = (Scalar::from_name(name), args)
            && is_numeric_literal(state.body, *arg)
            && let Type::Var(v) = self.shallow(&state.expr_types[*arg as usize])
            && self.classes[v as usize].allows_scalar(target)
        {
            let _ = self.unify(&Type::Var(v), &Type::Scalar(target));
        }
        ret
    }

    /// A chart statement: its arguments against the chart function's signature.
    fn infer_chart(&mut self, state: &mut BodyState<'a>, sink: Sink, args: &[ExprId], call: TextRange) {
        let name = sink.name();
        let Some((params, _)) = prelude_signature(self, name, Some(args.len())) else {
            let range = match (args.first(), args.last()) {
                (Some(&first), Some(&last)) => {
                    state.body.expr_range(first).cover(state.body.expr_range(last))
                }
                _ => call,
            };
            let signature = crate::prelude::prelude_doc(name).map_or("", |doc| doc.signature);
            state.diagnostics.push(
                Diagnostic::new(
                    Code::WrongArity,
                    range,
                    format!("`{name}` does not take {} argument{}", args.len(), plural(args.len())),
                )
                .with_help(format!("call it as `{signature}`")),
            );
            args.iter().for_each(|&a| {
                self.infer_expr(state, a, None);
            });
            return;
        };
        self.check_args_prelude(state, None, name, args, &params);
    }

    fn check_args_prelude(
        &mut self,
        state: &mut BodyState<'a>,
        callee: Option<ExprId>,
        name: &str,
        args: &[ExprId],
        params: &[Type],
    ) {
        let body = state.body;
        for i in lambdas_last(body, args) {
            let ty = self.infer_expr(state, args[i], Some(&params[i]));
            // Class constraints of the prelude's signature read better as class errors.
            if let Type::Var(v) = self.shallow(&params[i]) {
                let class = self.classes[v as usize];
                if class != Class::ANY && self.constrain(&ty, class).is_err() {
                    self.report_class(state, &ty, class, body.expr_range(args[i]), &format!("`{name}`"));
                    continue;
                }
            }
            let origin = Origin {
                range: body.expr_range(args[i]),
                other: callee.map(|callee| body.expr_range(callee)),
                what: "an argument of a prelude function has the wrong type",
            };
            self.require(state, &params[i], &ty, origin);
        }
    }

    fn infer_unzip(
        &mut self,
        state: &mut BodyState<'a>,
        id: ExprId,
        callee: ExprId,
        args: &[ExprId],
    ) -> Type {
        let body = state.body;
        let [arg] = args else {
            state.diagnostics.push(Diagnostic::new(
                Code::WrongArity,
                body.expr_range(id),
                "`unzip` takes one argument",
            ));
            return self.fresh(Class::ANY);
        };
        let ty = self.infer_expr(state, *arg, None);
        state.expr_types[callee as usize] = Type::Tuple(vec![]);
        let width = match self.shallow(&ty) {
            Type::Seq(elem) => match self.shallow(&elem) {
                Type::Tuple(items) => items.len(),
                _ => 2,
            },
            _ => 2,
        };
        let parts: Vec<Type> = (0..width).map(|_| self.fresh(Class::ANY)).collect();
        let origin =
            Origin { range: body.expr_range(*arg), other: None, what: "`unzip` takes a sequence of tuples" };
        self.require(state, &Type::seq(Type::Tuple(parts.clone())), &ty, origin);
        Type::Tuple(parts.into_iter().map(Type::seq).collect())
    }
}

/// The instantiated type of a prelude function at a call with `arity` arguments (`None` when
/// the function is used as a value: only non-overloaded ones can be).
fn prelude_signature(
    cx: &mut GroupInferrer<'_>,
    name: &str,
    arity: Option<usize>,
) -> Option<(Vec<Type>, Type)> {
    use Type as T;
    let any = |cx: &mut GroupInferrer<'_>| cx.fresh(Class::ANY);
    let seq = T::seq;
    let f = |params: Vec<Type>, ret: Type| Some((params, ret));
    let a = any(cx);
    let n = arity;
    match (name, n) {
        ("len", Some(1) | None) => f(vec![seq(a)], T::I32),
        ("range", Some(k @ 1..=3)) => f(vec![T::I32; k], seq(T::I32)),
        ("indices", Some(1) | None) => f(vec![seq(a)], seq(T::I32)),
        ("map", Some(k @ 2..)) => {
            let elems: Vec<Type> = (1..k).map(|_| any(cx)).collect();
            let r = any(cx);
            let mut params = vec![T::func(elems.clone(), r.clone())];
            params.extend(elems.into_iter().map(seq));
            f(params, seq(r))
        }
        ("zip", Some(k @ 1..)) => {
            let elems: Vec<Type> = (0..k).map(|_| any(cx)).collect();
            let ret = if k == 1 { elems[0].clone() } else { T::Tuple(elems.clone()) };
            f(elems.into_iter().map(seq).collect(), seq(ret))
        }
        ("concat", Some(2) | None) => f(vec![seq(a.clone()), seq(a.clone())], seq(a)),
        ("flatten", Some(1) | None) => f(vec![seq(seq(a.clone()))], seq(a)),
        ("reverse", Some(1) | None) => f(vec![seq(a.clone())], seq(a)),
        ("replicate", Some(2) | None) => f(vec![a.clone(), T::I32], seq(a)),
        ("gather", Some(2) | None) => f(vec![seq(a.clone()), seq(T::I32)], seq(a)),
        ("scatter", Some(3) | None) => f(vec![seq(a.clone()), seq(T::I32), seq(a.clone())], seq(a)),
        ("permute", Some(2) | None) => f(vec![seq(a.clone()), seq(T::I32)], seq(a)),
        ("filter", Some(2) | None) => f(vec![T::func(vec![a.clone()], T::BOOL), seq(a.clone())], seq(a)),
        ("sort", Some(1) | None) => {
            let o = cx.fresh(Class::ORD);
            f(vec![seq(o.clone())], seq(o))
        }
        ("count", Some(1) | None) => f(vec![seq(T::BOOL)], T::I32),
        ("lengths", Some(1) | None) => f(vec![seq(seq(a))], seq(T::I32)),
        ("partition", Some(2) | None) => f(vec![seq(a.clone()), seq(T::I32)], seq(seq(a))),
        ("reduce", Some(3) | None) => {
            f(vec![T::func(vec![a.clone(), a.clone()], a.clone()), seq(a.clone()), a.clone()], a)
        }
        ("sum" | "product", Some(1) | None) => {
            let x = cx.fresh(Class::num());
            f(vec![seq(x.clone())], x)
        }
        ("min" | "max", Some(1)) => {
            let o = cx.fresh(Class::ORD);
            f(vec![seq(o.clone())], o)
        }
        ("min" | "max", Some(2)) => {
            let x = cx.fresh(Class::num());
            f(vec![x.clone(), x.clone()], x)
        }
        ("any" | "all", Some(1) | None) => f(vec![seq(T::BOOL)], T::BOOL),
        ("argmin" | "argmax", Some(1) | None) => {
            let o = cx.fresh(Class::ORD);
            f(vec![seq(o)], T::I32)
        }
        ("scan", Some(2) | None) => {
            f(vec![T::func(vec![a.clone(), a.clone()], a.clone()), seq(a.clone())], seq(a))
        }
        ("exclusive_scan", Some(3) | None) => {
            f(vec![T::func(vec![a.clone(), a.clone()], a.clone()), a.clone(), seq(a.clone())], seq(a))
        }
        ("abs", Some(1) | None) => {
            let x = cx.fresh(Class::num());
            f(vec![x.clone()], x)
        }
        ("sqrt" | "exp" | "log" | "sin" | "cos" | "tan" | "erf" | "floor" | "ceil", Some(1) | None) => {
            let x = cx.fresh(Class::float());
            f(vec![x.clone()], x)
        }
        ("atan2", Some(2) | None) => {
            let x = cx.fresh(Class::float());
            f(vec![x.clone(), x.clone()], x)
        }
        ("pow", Some(2) | None) => {
            let x = cx.fresh(Class::num());
            f(vec![x.clone(), x.clone()], x)
        }
        ("i32" | "i64" | "f32" | "f64" | "bool", Some(1) | None) => {
            let x = cx.fresh(Class::scalar());
            f(vec![x], T::Scalar(Scalar::from_name(name).unwrap_or(Scalar::I32)))
        }
        ("random_f32", Some(2) | None) => f(vec![T::I32, T::I32], seq(T::F32)),
        ("random_i32", Some(4) | None) => f(vec![T::I32; 4], seq(T::I32)),
        // The chart statements: numbers of any numeric type, drawn as they are.
        ("plot", Some(2)) => {
            let (x, y) = (cx.fresh(Class::num()), cx.fresh(Class::num()));
            f(vec![seq(x), seq(y)], T::Tuple(vec![]))
        }
        ("hist", Some(2)) => f(vec![seq(cx.fresh(Class::num())), T::I32], T::Tuple(vec![])),
        ("image", Some(1)) => f(vec![seq(seq(cx.fresh(Class::num())))], T::Tuple(vec![])),
        _ => None,
    }
}

/// A type variable named in annotations: its name, its type, and where it is first written.
type AnnotationVar = (String, Type, TextRange);

/// Each type variable a function's annotations name, its type, and its first occurrence.
fn annotation_vars(body: &Body, types: &HashMap<String, Type>) -> Vec<AnnotationVar> {
    let mut first: Vec<(String, TextRange)> = Vec::new();
    let mut stack: Vec<&TypeRef> = body
        .params
        .iter()
        .filter_map(|p| p.annotation.as_ref())
        .chain(body.ret_annotation.as_ref())
        .collect();
    stack.reverse();
    while let Some(annotation) = stack.pop() {
        match annotation {
            TypeRef::Var(name, range) if !first.iter().any(|(n, _)| n == name) => {
                first.push((name.clone(), *range))
            }
            TypeRef::Tuple(items, _) => stack.extend(items.iter().rev()),
            TypeRef::Seq(elem, _) => stack.push(elem),
            _ => {}
        }
    }
    first
        .into_iter()
        .filter_map(|(name, range)| Some((name.clone(), types.get(&name)?.clone(), range)))
        .collect()
}

/// Marks the locals `stmt` binds (in any branch or loop body) as assigned, and adds those not
/// assigned before to `newly`.
fn mark_assigned(body: &Body, stmt: hir::StmtId, assigned: &mut [bool], newly: &mut Vec<usize>) {
    let mut locals = Vec::new();
    let nested = |block: &[hir::StmtId], assigned: &mut [bool], newly: &mut Vec<usize>| {
        block.iter().for_each(|&s| mark_assigned(body, s, assigned, newly))
    };
    match body.stmt(stmt) {
        Stmt::Assign { targets, .. } => locals = Pattern::locals_of(targets),
        Stmt::For { pattern, body: block, .. } => {
            pattern.locals(&mut locals);
            nested(block, assigned, newly);
        }
        Stmt::While { body: block, .. } => nested(block, assigned, newly),
        Stmt::If { then, otherwise, .. } => {
            nested(then, assigned, newly);
            nested(otherwise, assigned, newly);
        }
        Stmt::Def { local, .. } => locals.push(*local),
        Stmt::Return(_) | Stmt::Assert { .. } | Stmt::Expr(_) | Stmt::Print { .. } => {}
    }
    for local in locals {
        if !std::mem::replace(&mut assigned[local as usize], true) {
            newly.push(local as usize);
        }
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The order arguments are inferred in: lambdas last, so that their parameters get the types
/// the other arguments decided (`map(lambda p: p[0], pairs)`).
fn lambdas_last(body: &Body, args: &[ExprId]) -> Vec<usize> {
    let is_lambda = |i: &usize| matches!(body.expr(args[*i]), hir::Expr::Lambda(_));
    let (mut order, lambdas): (Vec<usize>, Vec<usize>) = (0..args.len()).partition(|i| !is_lambda(i));
    order.extend(lambdas);
    order
}

/// A number written out, possibly negated: `2`, `-0.5`.
fn is_numeric_literal(body: &Body, expr: ExprId) -> bool {
    match body.expr(expr) {
        hir::Expr::Literal(Literal::Int(_) | Literal::Float(_)) => true,
        hir::Expr::Unary { op: hir::UnaryOp::Neg, operand } => is_numeric_literal(body, *operand),
        _ => false,
    }
}

/// `t[0]`, `t[-1]`: the literal a tuple index must be.
pub fn literal_index(body: &Body, index: ExprId) -> Option<i64> {
    match body.expr(index) {
        hir::Expr::Literal(Literal::Int(i)) => Some(*i),
        hir::Expr::Unary { op: hir::UnaryOp::Neg, operand } => match body.expr(*operand) {
            hir::Expr::Literal(Literal::Int(i)) => Some(-*i),
            _ => None,
        },
        _ => None,
    }
}

fn literal_out_of_range(value: i64, range: TextRange) -> Diagnostic {
    Diagnostic::new(Code::LiteralOutOfRange, range, format!("{value} does not fit in an i32")).with_help(
        "integer literals are i32 unless their context makes them i64 (`x + 5000000000` with `x: i64`)",
    )
}

/// The help for a mismatch between two numeric types: the cast that fixes it, towards the float
/// type when an integer meets a float (the lossless direction).
/// `def swap(p: (a, b))`, for `tuple_parameter_help`: when parameter `arg` of the `def` `name`
/// is unannotated and every read of it is an index by a literal, the `def` with that parameter
/// annotated as a tuple of `arity` type variables (letters its other annotations do not use).
fn indexed_parameter_help(
    body: &Body,
    name: &str,
    params: &[hir::Param],
    ret: Option<&TypeRef>,
    arg: usize,
    arity: usize,
) -> Option<String> {
    let param = params.get(arg).filter(|p| p.annotation.is_none())?;
    let indexed: HashSet<ExprId> = body
        .exprs
        .iter()
        .filter_map(|e| match e {
            hir::Expr::Index { base, index } if literal_index(body, *index).is_some() => Some(*base),
            _ => None,
        })
        .collect();
    let mut reads = body
        .exprs
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e, hir::Expr::Local(l) if *l == param.local))
        .map(|(id, _)| id as ExprId)
        .peekable();
    if reads.peek().is_none() || !reads.all(|id| indexed.contains(&id)) {
        return None;
    }
    let mut used = Vec::new();
    for annotation in params.iter().filter_map(|p| p.annotation.as_ref()).chain(ret) {
        type_var_names(annotation, &mut used);
    }
    let vars: Vec<String> = ('a'..='z').map(String::from).filter(|v| !used.contains(v)).take(arity).collect();
    if arity == 0 || vars.len() < arity {
        return None;
    }
    let tuple = if arity == 1 { format!("({},)", vars[0]) } else { format!("({})", vars.join(", ")) };
    let rendered: Vec<String> = params
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let param_name = &body.local(p.local).name;
            match (&p.annotation, i == arg) {
                (_, true) => format!("{param_name}: {tuple}"),
                (Some(annotation), false) => format!("{param_name}: {}", render_type_ref(annotation)),
                (None, false) => param_name.clone(),
            }
        })
        .collect();
    let param_name = &body.local(param.local).name;
    Some(format!(
        "`{name}` indexes `{param_name}`, which makes an unannotated parameter a sequence (tuple \
         indexing is not inferred); to pass a tuple, annotate the parameter: `def {name}({})`",
        rendered.join(", ")
    ))
}

fn type_var_names(annotation: &TypeRef, out: &mut Vec<String>) {
    match annotation {
        TypeRef::Var(v, _) => out.push(v.clone()),
        TypeRef::Tuple(items, _) => items.iter().for_each(|t| type_var_names(t, out)),
        TypeRef::Seq(elem, _) => type_var_names(elem, out),
        TypeRef::Scalar(..) | TypeRef::Error(_) => {}
    }
}

/// An annotation as it is written: `[(f32, a)]`.
fn render_type_ref(annotation: &TypeRef) -> String {
    match annotation {
        TypeRef::Scalar(scalar, _) => scalar.name().to_string(),
        TypeRef::Var(v, _) => v.clone(),
        TypeRef::Tuple(items, _) if items.len() == 1 => format!("({},)", render_type_ref(&items[0])),
        TypeRef::Tuple(items, _) => {
            format!("({})", items.iter().map(render_type_ref).collect::<Vec<_>>().join(", "))
        }
        TypeRef::Seq(elem, _) => format!("[{}]", render_type_ref(elem)),
        TypeRef::Error(_) => "…".to_string(),
    }
}

fn conversion_help(expected: &str, actual: &str) -> Option<String> {
    let scalar =
        |s: &str| ["`i32`", "`i64`", "`f32`", "`f64`"].contains(&s).then(|| s.trim_matches('`').to_string());
    let (expected, actual) = (scalar(expected)?, scalar(actual)?);
    let to = if actual.starts_with('f') && expected.starts_with('i') { actual } else { expected };
    Some(format!("there are no implicit conversions: convert with `{to}(x)`"))
}

/// Functions are values of a restricted kind: never stored in a sequence or a tuple, never
/// returned, never chosen by a conditional.
fn check_function_values(body: &Body, types: &BodyTypes, diagnostics: &mut Vec<Diagnostic>) {
    let stores_function = |ty: &Type| match ty {
        Type::Seq(elem) => elem.contains_func(),
        Type::Tuple(items) => items.iter().any(Type::contains_func),
        _ => false,
    };
    // `-2147483648` is checked as a whole, so its literal alone is not.
    let negated: Vec<ExprId> = body
        .exprs
        .iter()
        .filter_map(|e| match e {
            hir::Expr::Unary { op: hir::UnaryOp::Neg, operand } => Some(*operand),
            _ => None,
        })
        .collect();
    for (id, expr) in body.exprs.iter().enumerate() {
        let ty = types.expr(id as ExprId);
        let range = body.expr_range(id as ExprId);
        match expr {
            hir::Expr::Literal(Literal::Int(i))
                if *ty == Type::I32 && i32::try_from(*i).is_err() && !negated.contains(&(id as ExprId)) =>
            {
                diagnostics.push(literal_out_of_range(*i, range))
            }
            hir::Expr::Unary { op: hir::UnaryOp::Neg, operand } if *ty == Type::I32 => {
                if let hir::Expr::Literal(Literal::Int(i)) = body.expr(*operand)
                    && i32::try_from(-*i).is_err()
                {
                    diagnostics.push(literal_out_of_range(-*i, range));
                }
            }
            hir::Expr::List(items) | hir::Expr::Tuple(items) if stores_function(ty) => {
                let mut diagnostic = Diagnostic::new(
                    Code::FunctionInData,
                    range,
                    format!(
                        "a function cannot be stored in a {}",
                        if matches!(expr, hir::Expr::List(_)) { "sequence" } else { "tuple" }
                    ),
                );
                if let Some(&f) = items.iter().find(|&&i| types.expr(i).contains_func()) {
                    diagnostic = diagnostic
                        .with_label(body.expr_range(f), format!("this is a function, `{}`", types.expr(f)));
                }
                diagnostics.push(diagnostic.with_help(
                    "pass functions as arguments instead; Weft resolves every call at compile time",
                ));
            }
            hir::Expr::Comprehension { element, .. } if stores_function(ty) => diagnostics.push(
                Diagnostic::new(Code::FunctionInData, range, "a function cannot be stored in a sequence")
                    .with_label(
                        body.expr_range(*element),
                        format!("this is a function, `{}`", types.expr(*element)),
                    ),
            ),
            hir::Expr::If { then, .. } if matches!(ty, Type::Func(..)) => diagnostics.push(
                Diagnostic::new(
                    Code::UnsupportedFunctionValue,
                    range,
                    "a conditional expression cannot choose between functions",
                )
                .with_label(body.expr_range(*then), "this is a function")
                .with_help("call the functions in the branches instead: `f(x) if c else g(x)`"),
            ),
            _ => {}
        }
    }
    let returns_function = |ty: &Type| matches!(ty, Type::Func(_, ret) if ret.contains_func());
    for (i, lambda) in body.lambdas.iter().enumerate() {
        if returns_function(&types.lambda_types[i]) {
            diagnostics.push(Diagnostic::new(
                Code::UnsupportedFunctionValue,
                lambda.range,
                "a function cannot return a function",
            ));
        }
    }
    for (id, stmt) in body.stmts.iter().enumerate() {
        if let Stmt::Return(Some(value)) = stmt
            && types.expr(*value).contains_func()
        {
            diagnostics.push(
                Diagnostic::new(
                    Code::UnsupportedFunctionValue,
                    body.stmt_ranges[id],
                    "a function cannot return a function",
                )
                .with_label(body.expr_range(*value), format!("this is a function, `{}`", types.expr(*value))),
            );
        }
    }
}
