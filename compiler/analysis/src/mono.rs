//! Specialisation: typed HIR to the first-order, monomorphic core (`core`).
//!
//! Every use of a polymorphic or higher-order function becomes a call of an *instance*: a copy
//! specialised to concrete types and to the functions it is passed. Function values never exist
//! at run time: a function value is a compile-time `Target` (which code, at which types) plus
//! the values it captured, which travel as ordinary leading arguments.
//!
//! Along the way statements become nested `let`s (names are renamed apart, so a rebinding is a
//! new variable), `if` statements join the names they rebind into a tuple, loops carry the
//! names they rebind as explicit state, and comprehensions become `map`/`filter`/`flatten`.
//!
//! Top-level bindings read by functions are passed to them as implicit leading arguments, with
//! the value they have at the call (Python's late binding).

use std::collections::BTreeSet;

use rustc_hash::FxHashMap as HashMap;

use rowan::{TextRange, TextSize};

use crate::db::{Db, SourceFile};
use crate::freed_later::FreedLater;
use crate::hir::{self, Body, Clause, ExprId, LambdaBody, LambdaId, LocalId, Pattern, Stmt, StmtId};
use crate::infer::{BodyTypes, function_types, top_level_types};
use crate::items::{Function, file_functions};
use weft_core::types::{Scalar, TyVar, Type};
use weft_core::{self as core, Callee, ExprId as CoreExpr, FuncId, Literal, Prim, PrintArg, VarId};
use weft_syntax::diagnostics::{Code, Diagnostic};

/// The whole program in core form, or the diagnostics that stop it from being built.
#[salsa::tracked(returns(ref))]
pub fn core_program(db: &dyn Db, file: SourceFile) -> Result<FreedLater<core::Program>, Vec<Diagnostic>> {
    let mut mono = Mono::new(db, file);
    let main = mono.lower_main();
    if !mono.diagnostics.is_empty() {
        return Err(std::mem::take(&mut mono.diagnostics));
    }
    let functions = mono.functions.into_iter().map(|f| f.expect("every instance is built")).collect();
    Ok(FreedLater::new(core::Program { functions, main }))
}

/// Which HIR body a closure's code lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Owner {
    Function(u32),
    Main,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum TargetKind {
    TopLevel(u32),
    Lambda(Owner, LambdaId),
    /// The function a comprehension maps (or, with `filter`, tests) at its `clause`-th clause.
    ComprehensionMap(Owner, ExprId, usize),
    ComprehensionFilter(Owner, ExprId, usize),
    /// A prelude function passed as a value, at a concrete type; the span (absolute) is where
    /// it was passed, which is where its run-time errors point.
    Prelude(String, Type, TextRange),
}

/// Which code a function value runs, and at which types: the key of an instance.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Target {
    kind: TargetKind,
    /// Concrete types for the type variables of the code's body.
    subst: Vec<(TyVar, Type)>,
    /// For each free slot (captured local or top-level binding) that holds a function.
    free_statics: Vec<Option<Target>>,
    /// For each parameter that is a function: the function passed (set at the call).
    param_statics: Vec<Option<Target>>,
}

/// A function value at compile time: its code and the variables holding what it captured.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct FnValue {
    target: Target,
    captures: Vec<VarId>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Binding {
    Var(VarId),
    Func(FnValue),
    /// A nested `def` or a named `lambda` of the body being lowered. It becomes a function value
    /// each time it is read, with what it captures as it is then (Python's late binding: a
    /// closure sees a captured name's value when it is called).
    Closure(LambdaId),
}

/// What a closure reads from outside itself.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Slot {
    Local(LocalId),
    Global(String),
}

/// Where the names of the code being lowered live.
#[derive(Debug, Clone, Default)]
struct Env {
    locals: HashMap<LocalId, Binding>,
    globals: HashMap<String, Binding>,
}

/// The function being built.
struct Builder {
    func: core::Function,
    offset: TextSize,
}

impl Builder {
    fn new(name: String, offset: TextSize) -> Builder {
        Builder {
            func: core::Function {
                name,
                params: Vec::new(),
                ret: Type::Tuple(vec![]),
                body: 0,
                vars: Vec::new(),
                exprs: Vec::new(),
                types: Vec::new(),
                spans: Vec::new(),
                equal_lengths: Vec::new(),
            },
            offset,
        }
    }

    fn add(&mut self, expr: core::Expr, ty: Type, range: TextRange) -> CoreExpr {
        self.func.exprs.push(expr);
        self.func.types.push(ty);
        self.func.spans.push(range + self.offset);
        (self.func.exprs.len() - 1) as CoreExpr
    }

    fn var(&mut self, name: &str, ty: Type) -> VarId {
        self.func.vars.push(core::Var { name: name.to_string(), ty });
        (self.func.vars.len() - 1) as VarId
    }

    fn var_ty(&self, var: VarId) -> Type {
        self.func.vars[var as usize].ty.clone()
    }

    fn read(&mut self, var: VarId, range: TextRange) -> CoreExpr {
        let ty = self.var_ty(var);
        self.add(core::Expr::Var(var), ty, range)
    }

    fn unit(&mut self, range: TextRange) -> CoreExpr {
        self.add(core::Expr::Tuple(vec![]), Type::Tuple(vec![]), range)
    }

    fn ty(&self, e: CoreExpr) -> Type {
        self.func.types[e as usize].clone()
    }
}

/// How a statement sequence ends.
#[derive(Clone)]
enum End {
    /// A function body: it ends with `return`.
    Return,
    /// An `if` branch or a loop body: it gives the current values of these locals, as a tuple.
    Values(Vec<LocalId>),
    /// The top level: it gives `()`.
    Unit,
    /// A branch of an `if` that returns on some paths, where both branches may also fall
    /// through: it gives `(returned, value, joined...)`, a falling path `(False, default, ...)`.
    /// The rest of the block then runs once, when nothing returned, instead of being copied
    /// into each branch (which would double the code for every such `if`).
    Partial(Vec<LocalId>),
}

/// The lowering context of one body at one specialisation.
struct Ctx<'a> {
    owner: Owner,
    body: &'a Body,
    types: &'a BodyTypes,
    subst: HashMap<TyVar, Type>,
    env: Env,
    builder: Builder,
    /// The concrete return type of the function being built (`()` for main).
    ret: Type,
}

struct Mono<'a> {
    db: &'a dyn Db,
    file: SourceFile,
    items: &'a [Function<'a>],
    instances: HashMap<Target, FuncId>,
    functions: Vec<Option<core::Function>>,
    /// The top-level bindings each top-level function reads, directly or through calls.
    globals_of: Vec<Vec<String>>,
    /// Nested functions being turned into values (to catch ones that need each other).
    resolving: Vec<(Owner, LambdaId)>,
    diagnostics: Vec<Diagnostic>,
}

impl<'a> Mono<'a> {
    fn new(db: &'a dyn Db, file: SourceFile) -> Self {
        let items = file_functions(db, file);
        let mut mono = Mono {
            db,
            file,
            items,
            instances: HashMap::default(),
            functions: Vec::new(),
            globals_of: Vec::new(),
            resolving: Vec::new(),
            diagnostics: Vec::new(),
        };
        mono.globals_of = mono.compute_globals();
        mono
    }

    fn function_index(&self, name: &str) -> Option<u32> {
        crate::infer::function_index(self.db, self.file, name)
    }

    fn body_of(&self, owner: Owner) -> &'a Body {
        match owner {
            Owner::Function(i) => hir::function_hir(self.db, self.items[i as usize]),
            Owner::Main => hir::top_level_hir(self.db, self.file),
        }
    }

    fn types_of(&self, owner: Owner) -> &'a BodyTypes {
        match owner {
            Owner::Function(i) => &function_types(self.db, self.items[i as usize]).body,
            Owner::Main => &top_level_types(self.db, self.file).main,
        }
    }

    fn shapes_of(&self, owner: Owner) -> &'a crate::shapes::BodyShapes {
        match owner {
            Owner::Function(i) => crate::shapes::function_shapes(self.db, self.items[i as usize]),
            Owner::Main => crate::shapes::top_level_shapes(self.db, self.file),
        }
    }

    fn offset_of(&self, owner: Owner) -> TextSize {
        match owner {
            Owner::Function(i) => self.items[i as usize].offset(self.db),
            Owner::Main => 0.into(),
        }
    }

    /// The top-level bindings (not functions) each function reads, closed over calls.
    fn compute_globals(&self) -> Vec<Vec<String>> {
        let direct: Vec<(BTreeSet<String>, Vec<u32>)> = (0..self.items.len() as u32)
            .map(|i| {
                let body = self.body_of(Owner::Function(i));
                let mut vars = BTreeSet::new();
                let mut calls = Vec::new();
                for expr in &body.exprs {
                    if let hir::Expr::Global(name) = expr {
                        match self.function_index(name) {
                            Some(f) => calls.push(f),
                            None => {
                                vars.insert(name.clone());
                            }
                        }
                    }
                }
                (vars, calls)
            })
            .collect();
        let mut globals: Vec<BTreeSet<String>> = direct.iter().map(|(v, _)| v.clone()).collect();
        loop {
            let mut changed = false;
            for (i, (_, calls)) in direct.iter().enumerate() {
                for &callee in calls {
                    let extra: Vec<String> =
                        globals[callee as usize].difference(&globals[i]).cloned().collect();
                    if !extra.is_empty() {
                        changed = true;
                        globals[i].extend(extra);
                    }
                }
            }
            if !changed {
                break;
            }
        }
        globals.into_iter().map(|g| g.into_iter().collect()).collect()
    }

    fn error(&mut self, code: Code, range: TextRange, message: impl Into<String>) {
        self.diagnostics.push(Diagnostic::new(code, range, message));
    }

    // ---- Entry points. ----

    fn lower_main(&mut self) -> core::Function {
        let body = self.body_of(Owner::Main);
        let mut ctx = Ctx {
            owner: Owner::Main,
            body,
            types: self.types_of(Owner::Main),
            subst: HashMap::default(),
            env: Env::default(),
            builder: Builder::new("main".to_string(), 0.into()),
            ret: Type::Tuple(vec![]),
        };
        // A session's statement takes the values of earlier cells as main's parameters
        // (`__session_input__` reads them; parameter `k` is variable `k`) and returns its
        // outputs' final values.
        let interface = self.file.interface(self.db);
        for input in &interface.inputs {
            let var = ctx.builder.var(&input.name, input.ty.clone());
            ctx.builder.func.params.push(var);
        }
        let outputs: Vec<LocalId> = interface
            .outputs
            .iter()
            .filter_map(|name| {
                let local = body.locals.iter().position(|l| l.scope == 0 && l.name == *name);
                local.map(|l| l as LocalId)
            })
            .collect();
        let end = if interface.outputs.is_empty() { End::Unit } else { End::Values(outputs) };
        let root = body.root.clone();
        let result = self.lower_seq(&mut ctx, &root, &end);
        ctx.builder.func.ret = ctx.builder.ty(result);
        ctx.builder.func.body = result;
        ctx.builder.func
    }

    /// The instance for `target`, built on first use.
    fn instance(&mut self, target: &Target) -> FuncId {
        if let Some(&id) = self.instances.get(target) {
            return id;
        }
        let id = self.functions.len() as FuncId;
        self.functions.push(None);
        self.instances.insert(target.clone(), id);
        let func = if target_depth(target) > MAX_SPECIALISATION_DEPTH {
            // A recursive function that passes itself a new function built from the last one
            // (`rec(n - 1, lambda x: f(x) + 1)`) would need infinitely many instances.
            if !self.diagnostics.iter().any(|d| d.code == Code::UnsupportedFunctionValue) {
                self.diagnostics.push(
                    Diagnostic::new(
                        Code::UnsupportedFunctionValue,
                        self.target_span(target),
                        "specialising this function for the functions passed to it does not end: \
                         each call passes a new function built from the previous one",
                    )
                    .with_help(
                        "pass the data the function needs instead of a function that wraps the last one",
                    ),
                );
            }
            Builder::new("<unbounded>".to_string(), 0.into()).func
        } else {
            weft_core::ensure_stack(|| self.build_instance(target))
        };
        self.functions[id as usize] = Some(func);
        id
    }

    /// Where a target's code is, for a diagnostic about it.
    fn target_span(&self, target: &Target) -> TextRange {
        match &target.kind {
            TargetKind::TopLevel(i) => {
                self.body_of(Owner::Function(*i)).name_range + self.offset_of(Owner::Function(*i))
            }
            TargetKind::Lambda(owner, lambda) => {
                self.body_of(*owner).lambdas[*lambda as usize].range + self.offset_of(*owner)
            }
            TargetKind::ComprehensionMap(owner, e, _) | TargetKind::ComprehensionFilter(owner, e, _) => {
                self.body_of(*owner).expr_range(*e) + self.offset_of(*owner)
            }
            TargetKind::Prelude(_, _, range) => *range,
        }
    }

    fn build_instance(&mut self, target: &Target) -> core::Function {
        let subst: HashMap<TyVar, Type> = target.subst.iter().cloned().collect();
        match &target.kind {
            TargetKind::Prelude(name, ty, range) => self.prelude_wrapper(name, ty, *range),
            TargetKind::TopLevel(index) => {
                let owner = Owner::Function(*index);
                let body = self.body_of(owner);
                let name = format!("{}{}", body.name, type_suffix(&target.subst));
                let mut ctx = self.new_ctx(owner, subst, name);
                if let Type::Func(_, ret) = &function_types(self.db, self.items[*index as usize]).scheme.ty {
                    ctx.ret = ctx.concrete(ret);
                }
                let slots: Vec<Slot> =
                    self.globals_of[*index as usize].iter().cloned().map(Slot::Global).collect();
                self.bind_free_slots(&mut ctx, &slots, &target.free_statics);
                let params: Vec<LocalId> = body.params.iter().map(|p| p.local).collect();
                self.bind_params(&mut ctx, &params, &target.param_statics);
                let root = body.root.clone();
                ctx.builder.func.body = self.lower_seq(&mut ctx, &root, &End::Return);
                ctx.builder.func.ret = ctx.builder.ty(ctx.builder.func.body);
                ctx.builder.func
            }
            TargetKind::Lambda(owner, lambda) => {
                let body = self.body_of(*owner);
                let info = &body.lambdas[*lambda as usize];
                let label = info
                    .name
                    .clone()
                    .unwrap_or_else(|| format!("<lambda@{}>", u32::from(info.range.start())));
                let name = format!("{}.{label}{}", body.name, type_suffix(&target.subst));
                let mut ctx = self.new_ctx(*owner, subst, name);
                if let Some(Type::Func(_, ret)) = ctx.types.lambda_types.get(*lambda as usize) {
                    ctx.ret = ctx.concrete(ret);
                }
                let slots = self.free_slots_of_lambda(body, *lambda);
                self.bind_free_slots(&mut ctx, &slots, &target.free_statics);
                // A named function sees itself (recursion), and reading it rebuilds this target.
                if let Some(local) = self.def_local(body, *lambda).or_else(|| lambda_binding(body, *lambda)) {
                    ctx.env.locals.insert(local, Binding::Closure(*lambda));
                }
                let params: Vec<LocalId> = info.params.iter().map(|p| p.local).collect();
                self.bind_params(&mut ctx, &params, &target.param_statics);
                let result = match &info.body {
                    LambdaBody::Expr(e) => self.lower_expr(&mut ctx, *e),
                    LambdaBody::Block(block) => self.lower_seq(&mut ctx, &block.clone(), &End::Return),
                };
                ctx.builder.func.body = result;
                ctx.builder.func.ret = ctx.builder.ty(result);
                ctx.builder.func
            }
            TargetKind::ComprehensionMap(owner, expr, clause)
            | TargetKind::ComprehensionFilter(owner, expr, clause) => {
                let is_filter = matches!(target.kind, TargetKind::ComprehensionFilter(..));
                let body = self.body_of(*owner);
                let name = format!(
                    "{}.<{}@{}>{}",
                    body.name,
                    if is_filter { "filter" } else { "map" },
                    u32::from(body.expr_range(*expr).start()),
                    type_suffix(&target.subst)
                );
                let mut ctx = self.new_ctx(*owner, subst, name);
                let slots = self.free_slots_of_clause(body, *expr, *clause, is_filter);
                self.bind_free_slots(&mut ctx, &slots, &target.free_statics);
                let hir::Expr::Comprehension { element, clauses } = body.expr(*expr) else {
                    unreachable!("a comprehension target names a comprehension")
                };
                let Clause::For { pattern, iterable, .. } = &clauses[*clause] else {
                    unreachable!("a comprehension target names a `for` clause")
                };
                let elem_ty = match ctx.concrete(ctx.types.expr(*iterable)) {
                    Type::Seq(elem) => *elem,
                    other => other,
                };
                let param = ctx.builder.var("elem", elem_ty);
                ctx.builder.func.params.push(param);
                let range = pattern.range();
                let read = ctx.builder.read(param, range);
                let param_ty = ctx.builder.var_ty(param);
                let core_pattern = self.bind_pattern(&mut ctx, pattern, &param_ty);
                let rest = if is_filter {
                    let conds = filters_after(clauses, *clause);
                    self.lower_conjunction(&mut ctx, &conds, range)
                } else {
                    self.lower_clauses(&mut ctx, *expr, *element, clauses, *clause + 1)
                };
                let ty = ctx.builder.ty(rest);
                let result = ctx.builder.add(
                    core::Expr::Let { pattern: core_pattern, value: read, body: rest },
                    ty.clone(),
                    range,
                );
                ctx.builder.func.body = result;
                ctx.builder.func.ret = ty;
                ctx.builder.func
            }
        }
    }

    fn new_ctx(&self, owner: Owner, subst: HashMap<TyVar, Type>, name: String) -> Ctx<'a> {
        Ctx {
            owner,
            body: self.body_of(owner),
            types: self.types_of(owner),
            subst,
            env: Env::default(),
            builder: Builder::new(name, self.offset_of(owner)),
            ret: Type::Tuple(vec![]),
        }
    }

    fn def_local(&self, body: &Body, lambda: LambdaId) -> Option<LocalId> {
        body.stmts.iter().find_map(|s| match s {
            Stmt::Def { local, lambda: l } if *l == lambda => Some(*local),
            _ => None,
        })
    }

    /// Parameters for what a closure captured: one per captured value, and for a captured
    /// function, its own captures.
    fn bind_free_slots(&mut self, ctx: &mut Ctx<'a>, slots: &[Slot], statics: &[Option<Target>]) {
        for (slot, stat) in slots.iter().zip(statics) {
            let value = match stat {
                Some(target) => {
                    let types = self.capture_types(target);
                    let captures: Vec<VarId> =
                        types.into_iter().map(|t| ctx.builder.var("capture", t)).collect();
                    ctx.builder.func.params.extend(&captures);
                    Binding::Func(FnValue { target: target.clone(), captures })
                }
                None => {
                    let ty = match slot {
                        Slot::Local(l) => ctx.concrete(ctx.types.local(*l)),
                        Slot::Global(name) => self.global_type(name),
                    };
                    let name = match slot {
                        Slot::Local(l) => ctx.body.local(*l).name.clone(),
                        Slot::Global(name) => name.clone(),
                    };
                    let var = ctx.builder.var(&name, ty);
                    ctx.builder.func.params.push(var);
                    Binding::Var(var)
                }
            };
            match slot {
                Slot::Local(l) => ctx.env.locals.insert(*l, value),
                Slot::Global(name) => ctx.env.globals.insert(name.clone(), value),
            };
        }
    }

    fn bind_params(&mut self, ctx: &mut Ctx<'a>, params: &[LocalId], statics: &[Option<Target>]) {
        for (i, &local) in params.iter().enumerate() {
            let value = match statics.get(i).cloned().flatten() {
                Some(target) => {
                    let types = self.capture_types(&target);
                    let captures: Vec<VarId> =
                        types.into_iter().map(|t| ctx.builder.var("capture", t)).collect();
                    ctx.builder.func.params.extend(&captures);
                    Binding::Func(FnValue { target, captures })
                }
                None => {
                    let ty = ctx.concrete(ctx.types.local(local));
                    let var = ctx.builder.var(&ctx.body.local(local).name.clone(), ty);
                    ctx.builder.func.params.push(var);
                    Binding::Var(var)
                }
            };
            ctx.env.locals.insert(local, value);
        }
    }

    /// The types of the values a function value carries, in order.
    fn capture_types(&mut self, target: &Target) -> Vec<Type> {
        let subst: HashMap<TyVar, Type> = target.subst.iter().cloned().collect();
        let (owner, slots) = match &target.kind {
            TargetKind::Prelude(..) => return Vec::new(),
            TargetKind::TopLevel(i) => (
                Owner::Function(*i),
                self.globals_of[*i as usize].iter().cloned().map(Slot::Global).collect(),
            ),
            TargetKind::Lambda(owner, lambda) => {
                (*owner, self.free_slots_of_lambda(self.body_of(*owner), *lambda))
            }
            TargetKind::ComprehensionMap(owner, e, c) => {
                (*owner, self.free_slots_of_clause(self.body_of(*owner), *e, *c, false))
            }
            TargetKind::ComprehensionFilter(owner, e, c) => {
                (*owner, self.free_slots_of_clause(self.body_of(*owner), *e, *c, true))
            }
        };
        let types = self.types_of(owner);
        let mut out = Vec::new();
        for (slot, stat) in slots.iter().zip(&target.free_statics) {
            match stat {
                Some(inner) => out.extend(self.capture_types(inner)),
                None => out.push(match slot {
                    Slot::Local(l) => concrete(&subst, types.local(*l)),
                    Slot::Global(name) => self.global_type(name),
                }),
            }
        }
        out
    }

    fn global_type(&self, name: &str) -> Type {
        let main = self.body_of(Owner::Main);
        let types = self.types_of(Owner::Main);
        main.locals
            .iter()
            .position(|l| l.scope == 0 && l.name == name)
            .map(|l| concrete(&HashMap::default(), types.local(l as LocalId)))
            .unwrap_or(Type::Tuple(vec![]))
    }

    // ---- Free variables of closures. ----

    fn free_slots_of_lambda(&self, body: &Body, lambda: LambdaId) -> Vec<Slot> {
        let info = &body.lambdas[lambda as usize];
        let mut roots = Vec::new();
        let mut stmts = Vec::new();
        match &info.body {
            LambdaBody::Expr(e) => roots.push(*e),
            LambdaBody::Block(block) => stmts.extend(block.iter().copied()),
        }
        let own = self.def_local(body, lambda).or_else(|| lambda_binding(body, lambda));
        let mut slots = self.free_slots(body, info.scope, roots, stmts);
        slots.retain(|s| Some(s) != own.map(Slot::Local).as_ref());
        slots
    }

    fn free_slots_of_clause(&self, body: &Body, expr: ExprId, clause: usize, is_filter: bool) -> Vec<Slot> {
        let hir::Expr::Comprehension { element, clauses } = body.expr(expr) else { return Vec::new() };
        let Clause::For { scope, .. } = &clauses[clause] else { return Vec::new() };
        let mut roots: Vec<ExprId> = filters_after(clauses, clause);
        if !is_filter {
            roots.clear();
            for c in &clauses[clause + 1..] {
                match c {
                    Clause::For { iterable, .. } => roots.push(*iterable),
                    Clause::If(cond) => roots.push(*cond),
                }
            }
            roots.push(*element);
        }
        self.free_slots(body, *scope, roots, Vec::new())
    }

    /// Locals outside `scope` and top-level bindings read by these expressions and statements,
    /// nested closures included, in a stable order.
    fn free_slots(
        &self,
        body: &Body,
        scope: hir::ScopeId,
        mut exprs: Vec<ExprId>,
        mut stmts: Vec<StmtId>,
    ) -> Vec<Slot> {
        let mut slots = BTreeSet::new();
        loop {
            if let Some(s) = stmts.pop() {
                stmt_parts(body.stmt(s), &mut exprs, &mut stmts);
                if let Stmt::Def { lambda, .. } = body.stmt(s) {
                    lambda_parts(body, *lambda, &mut exprs, &mut stmts);
                }
                continue;
            }
            let Some(e) = exprs.pop() else { break };
            match body.expr(e) {
                hir::Expr::Local(l) if !body.scope_within(body.local(*l).scope, scope) => {
                    slots.insert(Slot::Local(*l));
                }
                hir::Expr::Global(name) => match self.function_index(name) {
                    Some(f) => slots.extend(self.globals_of[f as usize].iter().cloned().map(Slot::Global)),
                    None => {
                        slots.insert(Slot::Global(name.clone()));
                    }
                },
                hir::Expr::Lambda(lambda) => lambda_parts(body, *lambda, &mut exprs, &mut stmts),
                _ => {}
            }
            exprs.extend(body.expr(e).children());
        }
        slots.into_iter().collect()
    }

    // ---- Function values. ----

    /// The function value an expression of function type denotes.
    fn lower_fn(&mut self, ctx: &mut Ctx<'a>, e: ExprId) -> Option<FnValue> {
        let range = ctx.body.expr_range(e);
        match ctx.body.expr(e) {
            hir::Expr::Local(l) => match ctx.env.locals.get(l).cloned() {
                Some(Binding::Func(value)) => Some(self.instantiate_read(ctx, e, value)),
                Some(Binding::Closure(lambda)) => {
                    let value = self.closure_value(ctx, lambda, range)?;
                    Some(self.instantiate_read(ctx, e, value))
                }
                _ => {
                    self.error(
                        Code::UnsupportedFunctionValue,
                        range + ctx.builder.offset,
                        "this function is not known here",
                    );
                    None
                }
            },
            hir::Expr::Global(name) => {
                let Some(index) = self.function_index(name) else {
                    return match ctx.env.globals.get(name).cloned() {
                        Some(Binding::Func(value)) => Some(self.instantiate_read(ctx, e, value)),
                        _ => {
                            self.error(
                                Code::UnsupportedFunctionValue,
                                range + ctx.builder.offset,
                                "this function is not known here",
                            );
                            None
                        }
                    };
                };
                let scheme = &function_types(self.db, self.items[index as usize]).scheme;
                let inst = ctx.types.instantiation(e).map(<[Type]>::to_vec).unwrap_or_default();
                let subst: Vec<(TyVar, Type)> =
                    scheme.vars.iter().zip(inst).map(|((v, _), t)| (*v, ctx.concrete(&t))).collect();
                let slots: Vec<String> = self.globals_of[index as usize].clone();
                self.make_fn(
                    ctx,
                    TargetKind::TopLevel(index),
                    subst,
                    slots.into_iter().map(Slot::Global).collect(),
                    range,
                )
            }
            hir::Expr::Prelude(name) => {
                let ty = ctx.concrete(ctx.types.expr(e));
                Some(FnValue {
                    target: Target {
                        kind: TargetKind::Prelude(name.clone(), ty, range + ctx.builder.offset),
                        subst: Vec::new(),
                        free_statics: Vec::new(),
                        param_statics: Vec::new(),
                    },
                    captures: Vec::new(),
                })
            }
            hir::Expr::Lambda(lambda) => {
                let slots = self.free_slots_of_lambda(ctx.body, *lambda);
                let subst = ctx.subst_vec();
                self.make_fn(ctx, TargetKind::Lambda(ctx.owner, *lambda), subst, slots, range)
            }
            _ => {
                self.error(
                    Code::UnsupportedFunctionValue,
                    range + ctx.builder.offset,
                    "this function value cannot be resolved at compile time",
                );
                None
            }
        }
    }

    /// A read of a function-valued name: a generalised one is specialised to this use.
    fn instantiate_read(&mut self, ctx: &Ctx<'a>, e: ExprId, mut value: FnValue) -> FnValue {
        let Some(inst) = ctx.types.instantiation(e) else { return value };
        let TargetKind::Lambda(owner, lambda) = value.target.kind.clone() else { return value };
        let body = self.body_of(owner);
        let types = self.types_of(owner);
        let Some(local) = self.def_local(body, lambda).or_else(|| lambda_binding(body, lambda)) else {
            return value;
        };
        let Some(scheme) = types.scheme_of(local) else { return value };
        for ((v, _), t) in scheme.vars.iter().zip(inst) {
            let t = ctx.concrete(t);
            value.target.subst.retain(|(w, _)| w != v);
            value.target.subst.push((*v, t));
        }
        value.target.subst.sort_by_key(|(v, _)| *v);
        value
    }

    /// A nested function of the current body as a function value, capturing what it reads as it
    /// is now. Nested functions that call each other would need each other's values first.
    fn closure_value(&mut self, ctx: &mut Ctx<'a>, lambda: LambdaId, range: TextRange) -> Option<FnValue> {
        let key = (ctx.owner, lambda);
        if self.resolving.contains(&key) {
            self.diagnostics.push(
                Diagnostic::new(
                    Code::UnsupportedFunctionValue,
                    range + ctx.builder.offset,
                    "nested functions that call each other are not supported yet",
                )
                .with_help("make one of them a top-level function"),
            );
            return None;
        }
        self.resolving.push(key);
        let slots = self.free_slots_of_lambda(ctx.body, lambda);
        let subst = ctx.subst_vec();
        let value = self.make_fn(ctx, TargetKind::Lambda(ctx.owner, lambda), subst, slots, range);
        self.resolving.pop();
        value
    }

    /// A function value for code with these free slots, read from the current environment.
    fn make_fn(
        &mut self,
        ctx: &mut Ctx<'a>,
        kind: TargetKind,
        subst: Vec<(TyVar, Type)>,
        slots: Vec<Slot>,
        range: TextRange,
    ) -> Option<FnValue> {
        let mut free_statics = Vec::new();
        let mut captures = Vec::new();
        for slot in &slots {
            let value = match slot {
                Slot::Local(l) => ctx.env.locals.get(l).cloned(),
                Slot::Global(name) => ctx.env.globals.get(name).cloned().or_else(|| {
                    // In main, top-level bindings are main's locals.
                    let local = ctx.body.locals.iter().position(|x| x.scope == 0 && &x.name == name)?;
                    (ctx.owner == Owner::Main)
                        .then(|| ctx.env.locals.get(&(local as LocalId)).cloned())
                        .flatten()
                }),
            };
            let value = match value {
                Some(Binding::Closure(lambda)) => {
                    Some(Binding::Func(self.closure_value(ctx, lambda, range)?))
                }
                other => other,
            };
            match value {
                Some(Binding::Var(v)) => {
                    free_statics.push(None);
                    captures.push(v);
                }
                Some(Binding::Func(f)) => {
                    free_statics.push(Some(f.target));
                    captures.extend(f.captures);
                }
                Some(Binding::Closure(_)) | None => {
                    let name = match slot {
                        Slot::Local(l) => ctx.body.local(*l).name.clone(),
                        Slot::Global(name) => name.clone(),
                    };
                    self.diagnostics.push(
                        Diagnostic::new(
                            Code::PossiblyUnbound,
                            range + ctx.builder.offset,
                            format!("`{name}` is not bound yet where this function is used"),
                        )
                        .with_help(format!("bind `{name}` before this point")),
                    );
                    return None;
                }
            }
        }
        Some(FnValue { target: Target { kind, subst, free_statics, param_statics: Vec::new() }, captures })
    }

    /// Calls a function value with HIR arguments: function arguments become part of the
    /// instance, the others are passed.
    fn call_fn(
        &mut self,
        ctx: &mut Ctx<'a>,
        value: FnValue,
        args: &[ExprId],
        range: TextRange,
        ty: Type,
    ) -> CoreExpr {
        let mut target = value.target;
        let mut core_args: Vec<CoreExpr> =
            value.captures.iter().map(|&v| ctx.builder.read(v, range)).collect();
        for &arg in args {
            if matches!(ctx.concrete(ctx.types.expr(arg)), Type::Func(..)) {
                match self.lower_fn(ctx, arg) {
                    Some(f) => {
                        target.param_statics.push(Some(f.target));
                        core_args.extend(f.captures.iter().map(|&v| ctx.builder.read(v, range)));
                    }
                    None => target.param_statics.push(None),
                }
            } else {
                target.param_statics.push(None);
                core_args.push(self.lower_expr(ctx, arg));
            }
        }
        if let TargetKind::Prelude(name, ..) = &target.kind {
            let name = name.clone();
            return self.prim_call(ctx, &name, core_args, Vec::new(), range, ty);
        }
        let func = self.instance(&target);
        ctx.builder.add(core::Expr::Call { func, args: core_args }, ty, range)
    }

    fn callee(&mut self, ctx: &mut Ctx<'a>, e: ExprId) -> Option<Callee> {
        let value = self.lower_fn(ctx, e)?;
        let range = ctx.body.expr_range(e);
        let func = self.instance(&value.target);
        let captures = value.captures.iter().map(|&v| ctx.builder.read(v, range)).collect();
        Some(Callee { func, captures })
    }

    fn prelude_wrapper(&mut self, name: &str, ty: &Type, range: TextRange) -> core::Function {
        let mut builder = Builder::new(format!("{name}{}", type_suffix(&[(0, ty.clone())])), 0.into());
        let Type::Func(params, ret) = ty else { return builder.func };
        let args: Vec<CoreExpr> = params
            .iter()
            .map(|p| {
                let v = builder.var("x", p.clone());
                builder.func.params.push(v);
                builder.read(v, range)
            })
            .collect();
        let prim = prim_of(name, args.len()).unwrap_or(Prim::Len);
        let body = builder.add(core::Expr::Prim { prim, args, funcs: Vec::new() }, (**ret).clone(), range);
        builder.func.body = body;
        builder.func.ret = (**ret).clone();
        builder.func
    }

    // ---- Statements. ----

    fn lower_seq(&mut self, ctx: &mut Ctx<'a>, stmts: &[StmtId], end: &End) -> CoreExpr {
        weft_core::ensure_stack(|| self.lower_seq_inner(ctx, stmts, end))
    }

    fn lower_seq_inner(&mut self, ctx: &mut Ctx<'a>, stmts: &[StmtId], end: &End) -> CoreExpr {
        // A newer edit cancels the lowering between statements: the top level of a large file
        // takes tens of milliseconds, longer than an edit may wait for the plan it cancels.
        self.db.unwind_if_revision_cancelled();
        let Some((&first, rest)) = stmts.split_first() else { return self.lower_end(ctx, end) };
        let body = ctx.body;
        let range = body.stmt_ranges[first as usize];
        match body.stmt(first) {
            Stmt::Assign { targets, value } => {
                if let ([Pattern::Bind(local, _)], hir::Expr::Lambda(_)) =
                    (targets.as_slice(), body.expr(*value))
                {
                    // A named lambda is a function value: no run-time code until it is called.
                    if let hir::Expr::Lambda(lambda) = body.expr(*value) {
                        ctx.env.locals.insert(*local, Binding::Closure(*lambda));
                    }
                    return self.lower_seq(ctx, rest, end);
                }
                if let [Pattern::Bind(local, _)] = targets.as_slice()
                    && matches!(ctx.concrete(ctx.types.expr(*value)), Type::Func(..))
                {
                    // `h = inc`: a name for a function value, resolved at compile time.
                    if let Some(f) = self.lower_fn(ctx, *value) {
                        ctx.env.locals.insert(*local, Binding::Func(f));
                    }
                    return self.lower_seq(ctx, rest, end);
                }
                let value_expr = self.lower_expr(ctx, *value);
                let value_ty = ctx.builder.ty(value_expr);
                if let [target] = targets.as_slice() {
                    let pattern = self.bind_pattern(ctx, target, &value_ty);
                    let rest_expr = self.lower_seq(ctx, rest, end);
                    return self.let_(ctx, pattern, value_expr, rest_expr, range);
                }
                let shared = ctx.builder.var("value", value_ty.clone());
                let mut patterns = Vec::new();
                for target in targets {
                    patterns.push(self.bind_pattern(ctx, target, &value_ty));
                }
                let mut result = self.lower_seq(ctx, rest, end);
                for pattern in patterns.into_iter().rev() {
                    let read = ctx.builder.read(shared, range);
                    result = self.let_(ctx, pattern, read, result, range);
                }
                self.let_(ctx, core::Pattern::Var(shared), value_expr, result, range)
            }
            Stmt::Def { local, lambda } => {
                ctx.env.locals.insert(*local, Binding::Closure(*lambda));
                self.lower_seq(ctx, rest, end)
            }
            Stmt::If { cond, then, otherwise } => {
                self.check_function_rebinding(ctx, &[then, otherwise], range);
                let cond_expr = self.lower_expr(ctx, *cond);
                let returns = contains_return(body, then) || contains_return(body, otherwise);
                let both_fall_through = !crate::flow::always_returns_block(body, then)
                    && !crate::flow::always_returns_block(body, otherwise);
                if returns && (matches!(end, End::Partial(_)) || both_fall_through) {
                    return self.lower_partial_if(ctx, cond_expr, then, otherwise, rest, end, range);
                }
                if matches!(end, End::Return) && returns {
                    // Each branch continues with the rest of the block.
                    let saved = ctx.env.clone();
                    let then_stmts: Vec<StmtId> = then.iter().chain(rest).copied().collect();
                    let then_expr = self.lower_seq(ctx, &then_stmts, end);
                    ctx.env = saved;
                    let else_stmts: Vec<StmtId> = otherwise.iter().chain(rest).copied().collect();
                    let else_expr = self.lower_seq(ctx, &else_stmts, end);
                    let ty = ctx.builder.ty(then_expr);
                    return ctx.builder.add(
                        core::Expr::If { cond: cond_expr, then: then_expr, otherwise: else_expr },
                        ty,
                        range,
                    );
                }
                let joined = self.joined_locals(ctx, then, otherwise);
                let saved = ctx.env.clone();
                let then_expr = self.lower_seq(ctx, then, &End::Values(joined.clone()));
                ctx.env = saved.clone();
                let else_expr = self.lower_seq(ctx, otherwise, &End::Values(joined.clone()));
                ctx.env = saved;
                let ty = ctx.builder.ty(then_expr);
                let if_expr = ctx.builder.add(
                    core::Expr::If { cond: cond_expr, then: then_expr, otherwise: else_expr },
                    ty,
                    range,
                );
                let pattern = self.rebind(ctx, &joined);
                let rest_expr = self.lower_seq(ctx, rest, end);
                self.let_(ctx, pattern, if_expr, rest_expr, range)
            }
            Stmt::For { pattern, iterable, body: loop_body } => {
                self.check_function_rebinding(ctx, &[loop_body], range);
                let seq = self.lower_expr(ctx, *iterable);
                let carried = self.carried_locals(ctx, loop_body);
                let init = self.current_tuple(ctx, &carried, range);
                let saved = ctx.env.clone();
                let state = self.rebind(ctx, &carried);
                let elem_ty = match ctx.builder.ty(seq) {
                    Type::Seq(elem) => *elem,
                    other => other,
                };
                let elem = self.bind_pattern(ctx, pattern, &elem_ty);
                let next = self.lower_seq(ctx, loop_body, &End::Values(carried.clone()));
                ctx.env = saved;
                let ty = ctx.builder.ty(init);
                let loop_expr =
                    ctx.builder.add(core::Expr::ForLoop { state, init, elem, seq, body: next }, ty, range);
                let after = self.rebind(ctx, &carried);
                let rest_expr = self.lower_seq(ctx, rest, end);
                self.let_(ctx, after, loop_expr, rest_expr, range)
            }
            Stmt::While { cond, body: loop_body } => {
                self.check_function_rebinding(ctx, &[loop_body], range);
                let carried = self.carried_locals(ctx, loop_body);
                let init = self.current_tuple(ctx, &carried, range);
                let saved = ctx.env.clone();
                let state = self.rebind(ctx, &carried);
                let cond_expr = self.lower_expr(ctx, *cond);
                let next = self.lower_seq(ctx, loop_body, &End::Values(carried.clone()));
                ctx.env = saved;
                let ty = ctx.builder.ty(init);
                let loop_expr = ctx.builder.add(
                    core::Expr::WhileLoop { state, init, cond: cond_expr, body: next },
                    ty,
                    range,
                );
                let after = self.rebind(ctx, &carried);
                let rest_expr = self.lower_seq(ctx, rest, end);
                self.let_(ctx, after, loop_expr, rest_expr, range)
            }
            Stmt::Return(value) => {
                let value = match value {
                    Some(value) => self.lower_expr(ctx, *value),
                    None => ctx.builder.unit(range),
                };
                self.returned(ctx, value, end, range)
            }
            Stmt::Assert { cond, message } => {
                let cond = self.lower_expr(ctx, *cond);
                let assert = ctx.builder.add(
                    core::Expr::Assert { cond, message: message.clone() },
                    Type::Tuple(vec![]),
                    range,
                );
                let rest_expr = self.lower_seq(ctx, rest, end);
                self.let_(ctx, core::Pattern::Wildcard, assert, rest_expr, range)
            }
            Stmt::Expr(expr) => {
                if matches!(ctx.concrete(ctx.types.expr(*expr)), Type::Func(..)) {
                    return self.lower_seq(ctx, rest, end);
                }
                let value = self.lower_expr(ctx, *expr);
                let rest_expr = self.lower_seq(ctx, rest, end);
                self.let_(ctx, core::Pattern::Wildcard, value, rest_expr, range)
            }
            Stmt::Print { sink, args } => {
                let args: Vec<PrintArg> = args
                    .iter()
                    .map(|&a| match body.expr(a) {
                        hir::Expr::Literal(hir::Literal::Str(text)) => PrintArg::Text(text.clone()),
                        _ => PrintArg::Value(self.lower_expr(ctx, a)),
                    })
                    .collect();
                let print =
                    ctx.builder.add(core::Expr::Print { sink: *sink, args }, Type::Tuple(vec![]), range);
                let rest_expr = self.lower_seq(ctx, rest, end);
                self.let_(ctx, core::Pattern::Wildcard, print, rest_expr, range)
            }
        }
    }

    fn let_(
        &mut self,
        ctx: &mut Ctx<'a>,
        pattern: core::Pattern,
        value: CoreExpr,
        body: CoreExpr,
        range: TextRange,
    ) -> CoreExpr {
        let ty = ctx.builder.ty(body);
        ctx.builder.add(core::Expr::Let { pattern, value, body }, ty, range)
    }

    fn lower_end(&mut self, ctx: &mut Ctx<'a>, end: &End) -> CoreExpr {
        let range = ctx.body.name_range;
        match end {
            End::Return | End::Unit => ctx.builder.unit(range),
            End::Values(locals) => self.current_tuple(ctx, locals, range),
            End::Partial(joined) => {
                let flag = ctx.builder.add(core::Expr::Literal(Literal::Bool(false)), Type::BOOL, range);
                let ret = ctx.ret.clone();
                let value = default_value(&mut ctx.builder, &ret, range);
                let mut items = vec![flag, value];
                let mut types = vec![Type::BOOL, ret];
                for &local in joined {
                    let read = match ctx.env.locals.get(&local) {
                        Some(Binding::Var(v)) => ctx.builder.read(*v, range),
                        _ => ctx.builder.unit(range),
                    };
                    types.push(ctx.builder.ty(read));
                    items.push(read);
                }
                ctx.builder.add(core::Expr::Tuple(items), Type::Tuple(types), range)
            }
        }
    }

    /// What `return value` gives in a block that ends this way.
    fn returned(&mut self, ctx: &mut Ctx<'a>, value: CoreExpr, end: &End, range: TextRange) -> CoreExpr {
        let End::Partial(joined) = end else { return value };
        let flag = ctx.builder.add(core::Expr::Literal(Literal::Bool(true)), Type::BOOL, range);
        let mut types = vec![Type::BOOL, ctx.ret.clone()];
        let mut items = vec![flag, value];
        for &local in joined {
            let ty = match ctx.env.locals.get(&local) {
                Some(Binding::Var(v)) => ctx.builder.var_ty(*v),
                _ => ctx.concrete(ctx.types.local(local)),
            };
            items.push(default_value(&mut ctx.builder, &ty, range));
            types.push(ty);
        }
        ctx.builder.add(core::Expr::Tuple(items), Type::Tuple(types), range)
    }

    /// `if` with returns on some paths, both branches falling through on others: the branches
    /// give `(returned, value, joined...)` and the rest of the block runs once, if nothing
    /// returned (see `End::Partial`).
    #[allow(clippy::too_many_arguments)]
    fn lower_partial_if(
        &mut self,
        ctx: &mut Ctx<'a>,
        cond: CoreExpr,
        then: &[StmtId],
        otherwise: &[StmtId],
        rest: &[StmtId],
        end: &End,
        range: TextRange,
    ) -> CoreExpr {
        let joined = self.joined_locals(ctx, then, otherwise);
        let partial = End::Partial(joined.clone());
        let saved = ctx.env.clone();
        let then_expr = self.lower_seq(ctx, then, &partial);
        ctx.env = saved.clone();
        let else_expr = self.lower_seq(ctx, otherwise, &partial);
        ctx.env = saved;
        let ty = ctx.builder.ty(then_expr);
        let branches =
            ctx.builder.add(core::Expr::If { cond, then: then_expr, otherwise: else_expr }, ty, range);
        let done = ctx.builder.var("returned", Type::BOOL);
        let value = ctx.builder.var("value", ctx.ret.clone());
        let core::Pattern::Tuple(mut parts) = self.rebind(ctx, &joined) else {
            unreachable!("rebind gives a tuple pattern")
        };
        parts.splice(0..0, [core::Pattern::Var(done), core::Pattern::Var(value)]);
        let rest_expr = self.lower_seq(ctx, rest, end);
        let read_value = ctx.builder.read(value, range);
        let on_return = self.returned(ctx, read_value, end, range);
        let read_done = ctx.builder.read(done, range);
        let ty = ctx.builder.ty(rest_expr);
        let body = ctx.builder.add(
            core::Expr::If { cond: read_done, then: on_return, otherwise: rest_expr },
            ty,
            range,
        );
        self.let_(ctx, core::Pattern::Tuple(parts), branches, body, range)
    }

    fn current_tuple(&mut self, ctx: &mut Ctx<'a>, locals: &[LocalId], range: TextRange) -> CoreExpr {
        let items: Vec<CoreExpr> = locals
            .iter()
            .map(|l| match ctx.env.locals.get(l) {
                Some(Binding::Var(v)) => ctx.builder.read(*v, range),
                _ => ctx.builder.unit(range),
            })
            .collect();
        let ty = Type::Tuple(items.iter().map(|&e| ctx.builder.ty(e)).collect());
        ctx.builder.add(core::Expr::Tuple(items), ty, range)
    }

    /// Fresh variables for these locals (the values after a join or a loop), as a pattern.
    fn rebind(&mut self, ctx: &mut Ctx<'a>, locals: &[LocalId]) -> core::Pattern {
        let items = locals
            .iter()
            .map(|&l| {
                let ty = match ctx.env.locals.get(&l) {
                    Some(Binding::Var(v)) => ctx.builder.var_ty(*v),
                    _ => ctx.concrete(ctx.types.local(l)),
                };
                let var = ctx.builder.var(&ctx.body.local(l).name.clone(), ty);
                ctx.env.locals.insert(l, Binding::Var(var));
                core::Pattern::Var(var)
            })
            .collect();
        core::Pattern::Tuple(items)
    }

    /// A name that holds a function cannot be rebound in a branch or a loop: which function it
    /// holds after would be decided at run time, and function values exist only at compile time.
    fn check_function_rebinding(&mut self, ctx: &Ctx<'a>, blocks: &[&Vec<StmtId>], range: TextRange) {
        let mut assigned = BTreeSet::new();
        for block in blocks {
            assigned_locals(ctx.body, block, &mut assigned);
        }
        for local in assigned {
            if matches!(ctx.env.locals.get(&local), Some(Binding::Func(_) | Binding::Closure(_))) {
                let name = &ctx.body.local(local).name;
                self.diagnostics.push(
                    Diagnostic::new(
                        Code::UnsupportedFunctionValue,
                        range + ctx.builder.offset,
                        format!("`{name}` holds a function and is rebound in this branch or loop"),
                    )
                    .with_help(
                        "give the other function its own name, or call both and choose between the results",
                    ),
                );
            }
        }
    }

    /// Locals an `if` statement rebinds that are bound after it on both branches.
    fn joined_locals(&self, ctx: &Ctx<'a>, then: &[StmtId], otherwise: &[StmtId]) -> Vec<LocalId> {
        let before: BTreeSet<LocalId> =
            ctx.env.locals.iter().filter(|(_, v)| matches!(v, Binding::Var(_))).map(|(l, _)| *l).collect();
        let after_then = definitely_bound(ctx.body, then, &before);
        let after_else = definitely_bound(ctx.body, otherwise, &before);
        let mut assigned = BTreeSet::new();
        assigned_locals(ctx.body, then, &mut assigned);
        assigned_locals(ctx.body, otherwise, &mut assigned);
        assigned.into_iter().filter(|l| after_then.contains(l) && after_else.contains(l)).collect()
    }

    /// Locals a loop body rebinds that were bound before the loop: its carried state.
    fn carried_locals(&self, ctx: &Ctx<'a>, body: &[StmtId]) -> Vec<LocalId> {
        let mut assigned = BTreeSet::new();
        assigned_locals(ctx.body, body, &mut assigned);
        assigned.into_iter().filter(|l| matches!(ctx.env.locals.get(l), Some(Binding::Var(_)))).collect()
    }

    /// Binds a HIR pattern to fresh variables and gives the core pattern.
    fn bind_pattern(&mut self, ctx: &mut Ctx<'a>, pattern: &Pattern, ty: &Type) -> core::Pattern {
        match pattern {
            Pattern::Bind(local, _) => {
                let var = ctx.builder.var(&ctx.body.local(*local).name.clone(), ty.clone());
                ctx.env.locals.insert(*local, Binding::Var(var));
                core::Pattern::Var(var)
            }
            Pattern::Tuple(items, _) => {
                let parts: Vec<Type> = match ty {
                    Type::Tuple(parts) if parts.len() == items.len() => parts.clone(),
                    _ => vec![Type::Tuple(vec![]); items.len()],
                };
                core::Pattern::Tuple(
                    items.iter().zip(&parts).map(|(p, t)| self.bind_pattern(ctx, p, t)).collect(),
                )
            }
            Pattern::Invalid(_) => core::Pattern::Wildcard,
        }
    }

    // ---- Expressions. ----

    fn lower_expr(&mut self, ctx: &mut Ctx<'a>, e: ExprId) -> CoreExpr {
        weft_core::ensure_stack(|| self.lower_expr_inner(ctx, e))
    }

    fn lower_expr_inner(&mut self, ctx: &mut Ctx<'a>, e: ExprId) -> CoreExpr {
        let body = ctx.body;
        let range = body.expr_range(e);
        let ty = ctx.concrete(ctx.types.expr(e));
        match body.expr(e) {
            hir::Expr::Missing | hir::Expr::Prelude(_) | hir::Expr::Lambda(_) => ctx.builder.unit(range),
            hir::Expr::Literal(hir::Literal::Int(i)) => self.int_literal(ctx, *i, ty, range),
            hir::Expr::Literal(literal) => {
                let literal = match literal {
                    hir::Literal::Bool(b) => Literal::Bool(*b),
                    hir::Literal::Float(bits) => {
                        Literal::Float(f64::from_bits(*bits), ty.as_scalar().unwrap_or(Scalar::F32))
                    }
                    hir::Literal::Int(_) | hir::Literal::Str(_) => return ctx.builder.unit(range),
                };
                ctx.builder.add(core::Expr::Literal(literal), ty, range)
            }
            hir::Expr::Local(l) => match ctx.env.locals.get(l).cloned() {
                Some(Binding::Var(v)) => ctx.builder.read(v, range),
                _ => ctx.builder.unit(range),
            },
            hir::Expr::Global(name) => {
                let value = ctx.env.globals.get(name).cloned();
                match value {
                    Some(Binding::Var(v)) => ctx.builder.read(v, range),
                    _ => ctx.builder.unit(range),
                }
            }
            hir::Expr::Tuple(items) => {
                let items = items.iter().map(|&i| self.lower_expr(ctx, i)).collect();
                ctx.builder.add(core::Expr::Tuple(items), ty, range)
            }
            hir::Expr::List(items) => {
                let items = items.iter().map(|&i| self.lower_expr(ctx, i)).collect();
                ctx.builder.add(core::Expr::List(items), ty, range)
            }
            hir::Expr::Index { base, index } => {
                let base_ty = ctx.concrete(ctx.types.expr(*base));
                let base_expr = self.lower_expr(ctx, *base);
                if let Type::Tuple(items) = base_ty {
                    let i = crate::infer::literal_index(body, *index).unwrap_or(0);
                    let i = if i < 0 { items.len() as i64 + i } else { i };
                    return ctx.builder.add(core::Expr::TupleGet(base_expr, i.max(0) as u32), ty, range);
                }
                let in_bounds = self.shapes_of(ctx.owner).proves_in_bounds(e);
                let index = self.lower_expr(ctx, *index);
                ctx.builder.add(core::Expr::Index { seq: base_expr, index, in_bounds }, ty, range)
            }
            hir::Expr::Slice { base, start, stop, step } => {
                let seq = self.lower_expr(ctx, *base);
                let mut part = |p: &Option<ExprId>| p.map(|p| self.lower_expr(ctx, p));
                let (start, stop, step) = (part(start), part(stop), part(step));
                ctx.builder.add(core::Expr::Slice { seq, start, stop, step }, ty, range)
            }
            hir::Expr::Unary { op: hir::UnaryOp::Neg, operand }
                if matches!(body.expr(*operand), hir::Expr::Literal(hir::Literal::Int(_))) =>
            {
                // `-2147483648` is one literal, which fits an i32 as a whole.
                let hir::Expr::Literal(hir::Literal::Int(i)) = body.expr(*operand) else {
                    unreachable!("the guard matched an integer literal")
                };
                self.int_literal(ctx, i.wrapping_neg(), ty, range)
            }
            hir::Expr::Unary { op, operand } => {
                let operand = self.lower_expr(ctx, *operand);
                let op = match op {
                    hir::UnaryOp::Pos => return operand,
                    hir::UnaryOp::Neg => core::UnaryOp::Neg,
                    hir::UnaryOp::Not => core::UnaryOp::Not,
                    hir::UnaryOp::Invert => core::UnaryOp::Invert,
                };
                ctx.builder.add(core::Expr::Unary { op, operand }, ty, range)
            }
            hir::Expr::Binary { op, lhs, rhs } => {
                let lhs = self.lower_expr(ctx, *lhs);
                let rhs = self.lower_expr(ctx, *rhs);
                ctx.builder.add(core::Expr::Binary { op: *op, lhs, rhs }, ty, range)
            }
            hir::Expr::And(lhs, rhs) => {
                let (lhs, rhs) = (self.lower_expr(ctx, *lhs), self.lower_expr(ctx, *rhs));
                ctx.builder.add(core::Expr::And(lhs, rhs), ty, range)
            }
            hir::Expr::Or(lhs, rhs) => {
                let (lhs, rhs) = (self.lower_expr(ctx, *lhs), self.lower_expr(ctx, *rhs));
                ctx.builder.add(core::Expr::Or(lhs, rhs), ty, range)
            }
            hir::Expr::Compare { operands, ops } => self.lower_compare(ctx, operands, ops, range),
            hir::Expr::If { cond, then, otherwise } => {
                let cond = self.lower_expr(ctx, *cond);
                let then = self.lower_expr(ctx, *then);
                let otherwise = self.lower_expr(ctx, *otherwise);
                ctx.builder.add(core::Expr::If { cond, then, otherwise }, ty, range)
            }
            hir::Expr::Call { callee, args } => {
                if let hir::Expr::Prelude(name) = body.expr(*callee) {
                    let name = name.clone();
                    let call = self.lower_prelude_call(ctx, &name, args, range, ty);
                    if self.shapes_of(ctx.owner).proves_equal_lengths(e) {
                        ctx.builder.func.equal_lengths.push(call);
                    }
                    return call;
                }
                match self.lower_fn(ctx, *callee) {
                    Some(value) => self.call_fn(ctx, value, args, range, ty),
                    None => ctx.builder.unit(range),
                }
            }
            hir::Expr::Comprehension { element, clauses } => {
                let clauses = clauses.clone();
                self.lower_clauses(ctx, e, *element, &clauses, 0)
            }
        }
    }

    /// An integer literal at its type: a float type takes its value; an i32 must hold it.
    fn int_literal(&mut self, ctx: &mut Ctx<'a>, value: i64, ty: Type, range: TextRange) -> CoreExpr {
        let literal = match ty.as_scalar() {
            Some(s) if s.is_float() => Literal::Float(value as f64, s),
            Some(s) => {
                if s == Scalar::I32 && i32::try_from(value).is_err() {
                    self.diagnostics.push(
                        Diagnostic::new(
                            Code::LiteralOutOfRange,
                            range + ctx.builder.offset,
                            format!("{value} does not fit in an i32"),
                        )
                        .with_help("use a smaller value, or make it an `i64`"),
                    );
                }
                Literal::Int(value, s)
            }
            None => Literal::Int(value, Scalar::I32),
        };
        ctx.builder.add(core::Expr::Literal(literal), ty, range)
    }

    /// `a < b < c`: each operand evaluated once, left to right, stopping at the first false.
    fn lower_compare(
        &mut self,
        ctx: &mut Ctx<'a>,
        operands: &[ExprId],
        ops: &[hir::BinaryOp],
        range: TextRange,
    ) -> CoreExpr {
        let first = self.lower_expr(ctx, operands[0]);
        if let ([op], [_, second]) = (ops, operands) {
            let second = self.lower_expr(ctx, *second);
            return ctx.builder.add(
                core::Expr::Binary { op: *op, lhs: first, rhs: second },
                Type::BOOL,
                range,
            );
        }
        let first_ty = ctx.builder.ty(first);
        let left = ctx.builder.var("cmp", first_ty);
        let rest = self.compare_chain_inner(ctx, left, &operands[1..], ops, range);
        ctx.builder.add(
            core::Expr::Let { pattern: core::Pattern::Var(left), value: first, body: rest },
            Type::BOOL,
            range,
        )
    }

    fn compare_chain_inner(
        &mut self,
        ctx: &mut Ctx<'a>,
        left: VarId,
        operands: &[ExprId],
        ops: &[hir::BinaryOp],
        range: TextRange,
    ) -> CoreExpr {
        let right_value = self.lower_expr(ctx, operands[0]);
        let right_ty = ctx.builder.ty(right_value);
        let right = ctx.builder.var("cmp", right_ty);
        let (l, r) = (ctx.builder.read(left, range), ctx.builder.read(right, range));
        let test = ctx.builder.add(core::Expr::Binary { op: ops[0], lhs: l, rhs: r }, Type::BOOL, range);
        let body = if ops.len() > 1 {
            let rest = weft_core::ensure_stack(|| {
                self.compare_chain_inner(ctx, right, &operands[1..], &ops[1..], range)
            });
            ctx.builder.add(core::Expr::And(test, rest), Type::BOOL, range)
        } else {
            test
        };
        ctx.builder.add(
            core::Expr::Let { pattern: core::Pattern::Var(right), value: right_value, body },
            Type::BOOL,
            range,
        )
    }

    /// Clauses from `index` on: `for p in s if c` is `map(λp. rest, filter(λp. c, s))`, and a
    /// later `for` clause flattens.
    fn lower_clauses(
        &mut self,
        ctx: &mut Ctx<'a>,
        expr: ExprId,
        element: ExprId,
        clauses: &[Clause],
        index: usize,
    ) -> CoreExpr {
        let Some(position) = (index..clauses.len()).find(|&i| matches!(clauses[i], Clause::For { .. }))
        else {
            return self.lower_expr(ctx, element);
        };
        let Clause::For { iterable, .. } = &clauses[position] else { unreachable!("found a `for` clause") };
        let range = ctx.body.expr_range(expr);
        let mut seq = self.lower_expr(ctx, *iterable);
        let seq_ty = ctx.builder.ty(seq);
        if !filters_after(clauses, position).is_empty() {
            let callee = self.comprehension_callee(
                ctx,
                TargetKind::ComprehensionFilter(ctx.owner, expr, position),
                range,
            );
            seq = ctx.builder.add(
                core::Expr::Prim { prim: Prim::Filter, args: vec![seq], funcs: callee },
                seq_ty,
                range,
            );
        }
        let callee =
            self.comprehension_callee(ctx, TargetKind::ComprehensionMap(ctx.owner, expr, position), range);
        let ret = callee.first().map(|c| self.functions_ret(c.func)).unwrap_or(Type::Tuple(vec![]));
        let nested = clauses[position + 1..].iter().any(|c| matches!(c, Clause::For { .. }));
        let mapped_ty = Type::seq(ret.clone());
        let mapped = ctx.builder.add(
            core::Expr::Prim { prim: Prim::Map, args: vec![seq], funcs: callee },
            mapped_ty,
            range,
        );
        if nested {
            let flat_ty = ret.elem().cloned().map(Type::seq).unwrap_or(ret);
            return ctx.builder.add(
                core::Expr::Prim { prim: Prim::Flatten, args: vec![mapped], funcs: Vec::new() },
                flat_ty,
                range,
            );
        }
        mapped
    }

    fn functions_ret(&self, func: FuncId) -> Type {
        self.functions[func as usize].as_ref().map(|f| f.ret.clone()).unwrap_or(Type::Tuple(vec![]))
    }

    fn comprehension_callee(&mut self, ctx: &mut Ctx<'a>, kind: TargetKind, range: TextRange) -> Vec<Callee> {
        let (expr, clause, is_filter) = match &kind {
            TargetKind::ComprehensionMap(_, e, c) => (*e, *c, false),
            TargetKind::ComprehensionFilter(_, e, c) => (*e, *c, true),
            _ => return Vec::new(),
        };
        let slots = self.free_slots_of_clause(ctx.body, expr, clause, is_filter);
        let subst = ctx.subst_vec();
        let Some(value) = self.make_fn(ctx, kind, subst, slots, range) else { return Vec::new() };
        let func = self.instance(&value.target);
        let captures = value.captures.iter().map(|&v| ctx.builder.read(v, range)).collect();
        vec![Callee { func, captures }]
    }

    fn lower_conjunction(&mut self, ctx: &mut Ctx<'a>, conds: &[ExprId], range: TextRange) -> CoreExpr {
        let mut result: Option<CoreExpr> = None;
        for &cond in conds.iter().rev() {
            let test = self.lower_expr(ctx, cond);
            result = Some(match result {
                Some(rest) => ctx.builder.add(core::Expr::And(test, rest), Type::BOOL, range),
                None => test,
            });
        }
        result.unwrap_or_else(|| ctx.builder.add(core::Expr::Literal(Literal::Bool(true)), Type::BOOL, range))
    }

    fn lower_prelude_call(
        &mut self,
        ctx: &mut Ctx<'a>,
        name: &str,
        args: &[ExprId],
        range: TextRange,
        ty: Type,
    ) -> CoreExpr {
        let body = ctx.body;
        if name == crate::db::SESSION_INPUT {
            let interface = self.file.interface(self.db);
            let input = body
                .string_argument(args)
                .and_then(|name| interface.inputs.iter().position(|input| input.name == name));
            if let (Owner::Main, Some(input)) = (ctx.owner, input) {
                return ctx.builder.read(input as VarId, range);
            }
            self.diagnostics.push(Diagnostic::new(
                Code::UnknownName,
                range,
                format!("`{name}` may only be read by a session's top-level statements"),
            ));
            return ctx.builder.unit(range);
        }
        if matches!(name, "load_npy" | "load_csv") {
            let path = body.string_argument(args).unwrap_or_default().to_string();
            let prim = if name == "load_npy" { Prim::LoadNpy(path) } else { Prim::LoadCsv(path) };
            return ctx.builder.add(
                core::Expr::Prim { prim, args: Vec::new(), funcs: Vec::new() },
                ty,
                range,
            );
        }
        let mut funcs = Vec::new();
        let mut values = Vec::new();
        for &arg in args {
            if matches!(ctx.concrete(ctx.types.expr(arg)), Type::Func(..)) {
                funcs.extend(self.callee(ctx, arg));
            } else {
                values.push(self.lower_expr(ctx, arg));
            }
        }
        self.prim_call(ctx, name, values, funcs, range, ty)
    }

    fn prim_call(
        &mut self,
        ctx: &mut Ctx<'a>,
        name: &str,
        args: Vec<CoreExpr>,
        funcs: Vec<Callee>,
        range: TextRange,
        ty: Type,
    ) -> CoreExpr {
        let arity = args.len() + funcs.len();
        let prim = match prim_of(name, arity) {
            Some(prim) => prim,
            None => {
                self.error(
                    Code::WrongArity,
                    range + ctx.builder.offset,
                    format!("`{name}` cannot be called this way"),
                );
                return ctx.builder.unit(range);
            }
        };
        ctx.builder.add(core::Expr::Prim { prim, args, funcs }, ty, range)
    }
}

impl Ctx<'_> {
    fn concrete(&self, ty: &Type) -> Type {
        concrete(&self.subst, ty)
    }

    fn subst_vec(&self) -> Vec<(TyVar, Type)> {
        let mut subst: Vec<(TyVar, Type)> = self.subst.iter().map(|(v, t)| (*v, t.clone())).collect();
        subst.sort_by_key(|(v, _)| *v);
        subst
    }
}

/// A type with the substitution applied; what is still a variable (it never mattered which
/// type it was) becomes `i32`.
fn concrete(subst: &HashMap<TyVar, Type>, ty: &Type) -> Type {
    ty.map_vars(&mut |v| Some(subst.get(&v).cloned().unwrap_or(Type::I32)))
}

fn type_suffix(subst: &[(TyVar, Type)]) -> String {
    if subst.is_empty() {
        return String::new();
    }
    let types: Vec<String> = subst.iter().map(|(_, t)| t.to_string()).collect();
    format!("[{}]", types.join(", "))
}

fn prim_of(name: &str, arity: usize) -> Option<Prim> {
    Some(match (name, arity) {
        ("len", _) => Prim::Len,
        ("range", _) => Prim::Range,
        ("indices", _) => Prim::Indices,
        ("map", _) => Prim::Map,
        ("zip", _) => Prim::Zip,
        ("unzip", _) => Prim::Unzip,
        ("concat", _) => Prim::Concat,
        ("flatten", _) => Prim::Flatten,
        ("reverse", _) => Prim::Reverse,
        ("replicate", _) => Prim::Replicate,
        ("gather", _) => Prim::Gather,
        ("scatter", _) => Prim::Scatter,
        ("permute", _) => Prim::Permute,
        ("filter", _) => Prim::Filter,
        ("sort", _) => Prim::Sort,
        ("count", _) => Prim::Count,
        ("lengths", _) => Prim::Lengths,
        ("partition", _) => Prim::Partition,
        ("reduce", _) => Prim::Reduce,
        ("sum", _) => Prim::Sum,
        ("product", _) => Prim::Product,
        ("min", 1) => Prim::Min,
        ("max", 1) => Prim::Max,
        ("min", 2) => Prim::Min2,
        ("max", 2) => Prim::Max2,
        ("any", _) => Prim::Any,
        ("all", _) => Prim::All,
        ("argmin", _) => Prim::ArgMin,
        ("argmax", _) => Prim::ArgMax,
        ("scan", _) => Prim::Scan,
        ("exclusive_scan", _) => Prim::ExclusiveScan,
        ("abs", _) => Prim::Abs,
        ("sqrt", _) => Prim::Sqrt,
        ("exp", _) => Prim::Exp,
        ("log", _) => Prim::Log,
        ("sin", _) => Prim::Sin,
        ("cos", _) => Prim::Cos,
        ("tan", _) => Prim::Tan,
        ("atan2", _) => Prim::Atan2,
        ("erf", _) => Prim::Erf,
        ("pow", _) => Prim::Pow,
        ("floor", _) => Prim::Floor,
        ("ceil", _) => Prim::Ceil,
        ("random_f32", _) => Prim::RandomF32,
        ("random_i32", _) => Prim::RandomI32,
        (cast, _) => Prim::Cast(Scalar::from_name(cast)?),
    })
}

/// A value of a type that no path reads: the value slot of a tuple that says nothing was
/// returned, or a joined name on a path that did return.
fn default_value(builder: &mut Builder, ty: &Type, range: TextRange) -> CoreExpr {
    let expr = match ty {
        Type::Scalar(Scalar::Bool) => core::Expr::Literal(Literal::Bool(false)),
        Type::Scalar(s) if s.is_float() => core::Expr::Literal(Literal::Float(0.0, *s)),
        Type::Scalar(s) => core::Expr::Literal(Literal::Int(0, *s)),
        Type::Tuple(items) => {
            let items = items.iter().map(|t| default_value(builder, t, range)).collect();
            core::Expr::Tuple(items)
        }
        Type::Seq(_) => core::Expr::List(Vec::new()),
        Type::Func(..) | Type::Var(_) => core::Expr::Tuple(Vec::new()),
    };
    let ty = match ty {
        Type::Func(..) | Type::Var(_) => Type::Tuple(Vec::new()),
        other => other.clone(),
    };
    builder.add(expr, ty, range)
}

/// How many function values may nest inside one specialisation (a function passed a function
/// passed a function...): far beyond real programs, and a bound on runaway specialisation.
const MAX_SPECIALISATION_DEPTH: usize = 32;

fn target_depth(target: &Target) -> usize {
    let inner = target.free_statics.iter().chain(&target.param_statics).flatten();
    1 + inner.map(target_depth).max().unwrap_or(0)
}

/// The `if` clauses right after the `for` clause at `index`.
fn filters_after(clauses: &[Clause], index: usize) -> Vec<ExprId> {
    clauses[index + 1..]
        .iter()
        .map_while(|c| match c {
            Clause::If(cond) => Some(*cond),
            Clause::For { .. } => None,
        })
        .collect()
}

fn stmt_parts(stmt: &Stmt, exprs: &mut Vec<ExprId>, stmts: &mut Vec<StmtId>) {
    match stmt {
        Stmt::Assign { value, .. } => exprs.push(*value),
        Stmt::If { cond, then, otherwise } => {
            exprs.push(*cond);
            stmts.extend(then.iter().chain(otherwise));
        }
        Stmt::For { iterable, body, .. } => {
            exprs.push(*iterable);
            stmts.extend(body);
        }
        Stmt::While { cond, body } => {
            exprs.push(*cond);
            stmts.extend(body);
        }
        Stmt::Return(value) => exprs.extend(value),
        Stmt::Assert { cond, .. } => exprs.push(*cond),
        Stmt::Expr(e) => exprs.push(*e),
        Stmt::Print { args, .. } => exprs.extend(args),
        Stmt::Def { .. } => {}
    }
}

fn lambda_parts(body: &Body, lambda: LambdaId, exprs: &mut Vec<ExprId>, stmts: &mut Vec<StmtId>) {
    match &body.lambdas[lambda as usize].body {
        LambdaBody::Expr(e) => exprs.push(*e),
        LambdaBody::Block(block) => stmts.extend(block),
    }
}

/// The local a `name = lambda ...` statement binds.
fn lambda_binding(body: &Body, lambda: LambdaId) -> Option<LocalId> {
    body.stmts.iter().find_map(|s| match s {
        Stmt::Assign { targets, value } => match (targets.as_slice(), body.expr(*value)) {
            ([Pattern::Bind(local, _)], hir::Expr::Lambda(l)) if *l == lambda => Some(*local),
            _ => None,
        },
        _ => None,
    })
}

fn contains_return(body: &Body, block: &[StmtId]) -> bool {
    block.iter().any(|&s| match body.stmt(s) {
        Stmt::Return(_) => true,
        Stmt::If { then, otherwise, .. } => contains_return(body, then) || contains_return(body, otherwise),
        Stmt::For { body: b, .. } | Stmt::While { body: b, .. } => contains_return(body, b),
        _ => false,
    })
}

/// Locals assigned anywhere in these statements (not inside nested functions).
fn assigned_locals(body: &Body, block: &[StmtId], out: &mut BTreeSet<LocalId>) {
    for &s in block {
        match body.stmt(s) {
            Stmt::Assign { targets, .. } => out.extend(Pattern::locals_of(targets)),
            Stmt::If { then, otherwise, .. } => {
                assigned_locals(body, then, out);
                assigned_locals(body, otherwise, out);
            }
            Stmt::For { pattern, body: b, .. } => {
                let mut locals = Vec::new();
                pattern.locals(&mut locals);
                out.extend(locals);
                assigned_locals(body, b, out);
            }
            Stmt::While { body: b, .. } => assigned_locals(body, b, out),
            _ => {}
        }
    }
}

/// The locals bound on every path through `block`, given those bound before.
fn definitely_bound(body: &Body, block: &[StmtId], before: &BTreeSet<LocalId>) -> BTreeSet<LocalId> {
    let mut bound = before.clone();
    for &s in block {
        match body.stmt(s) {
            Stmt::Assign { targets, .. } => bound.extend(Pattern::locals_of(targets)),
            Stmt::If { then, otherwise, .. } => {
                let a = definitely_bound(body, then, &bound);
                let b = definitely_bound(body, otherwise, &bound);
                bound = a.intersection(&b).copied().collect();
            }
            _ => {}
        }
    }
    bound
}
