//! Name resolution: every name read is bound by a local, an enclosing function (a closure), the
//! top level or the prelude; or it is reported.
//!
//! Scoping follows Python 3. A name assigned anywhere in a function body is local to the whole
//! body; `lambda`s and comprehensions open their own scopes (a comprehension's first iterable is
//! read in the enclosing scope); functions see every top-level name of the file, whatever its
//! position, as Python's late binding does at call time. Top-level statements run in order, so
//! they see only the names bound before them.
//!
//! Reports `unknown-name`, `duplicate-definition` (parameters and nested functions) and
//! `unused-name` (locals and nested functions never read; `_`-prefixed names are exempt).
//!
//! The walk is iterative (rowan's preorder) so deep expressions cannot overflow the stack.
//! Tests: `compiler/tests/data/diagnostics/` and the unit tests below.

use std::collections::BTreeSet;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use rowan::{TextRange, TextSize, WalkEvent};

use crate::db::{Db, SourceFile};
use crate::diagnostics::{Code, Diagnostic};
use crate::items::{Function, function_body, function_signature};
use crate::parsed::parsed_file;
use crate::prelude::{PRELUDE_NAMES, is_prelude_name};
use crate::syntax::{SyntaxKind::*, SyntaxNode, ast::is_expression};

/// What a name read refers to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Resolution {
    /// A parameter or local of this function or an enclosing one, first bound at `def_range`.
    Local {
        def_range: TextRange,
    },
    /// A top-level function or binding.
    TopLevel,
    Prelude,
    Unresolved,
}

/// The result of resolving one function (spans relative to its `def`) or the top-level
/// statements (spans absolute).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct NameResolution {
    /// Each name read and what it refers to, in source order.
    pub references: Vec<(TextRange, Resolution)>,
    pub diagnostics: Vec<Diagnostic>,
}

/// Whether a top-level name is visible at a point of the code being resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TopLevelLookup {
    Visible,
    /// Bound, but only by a statement after this point (top-level statements run in order).
    BoundLater(TextRange),
    Absent,
}

/// Every name bound at the top level: the scope function bodies see. Position-free, so moving a
/// function does not change it.
#[salsa::tracked(returns(ref))]
pub fn top_level_names(db: &dyn Db, file: SourceFile) -> BTreeSet<String> {
    let root = parsed_file(db, file).syntax();
    collect_bindings(&root).into_iter().map(|site| site.name).collect()
}

/// Resolves the names of one top-level function: its body and the bodies nested in it.
#[salsa::tracked(returns(ref))]
pub fn function_names<'db>(db: &'db dyn Db, function: Function<'db>) -> NameResolution {
    let signature = function_signature(db, function);
    let body = function_body(db, function);
    let top_level = top_level_names(db, function.file(db));
    let visible = |name: &str, _at: TextSize| {
        if top_level.contains(name) { TopLevelLookup::Visible } else { TopLevelLookup::Absent }
    };
    let mut resolver = Resolver::new(&visible, body.offset);
    let Some(block) = body.block_node() else { return resolver.res };
    let params = signature.params.iter().map(|p| (p.name.clone(), p.range));
    resolver.push_function_scope(params, &block);
    resolver.walk(&block);
    resolver.pop_scope();
    resolver.res
}

/// Resolves the top-level statements, in order. Spans are absolute.
#[salsa::tracked(returns(ref))]
pub fn top_level_statement_names(db: &dyn Db, file: SourceFile) -> NameResolution {
    let root = parsed_file(db, file).syntax();
    let sites = collect_bindings(&root);
    let mut first_binding: HashMap<&str, &BindingSite> = HashMap::default();
    for site in &sites {
        let first = first_binding.entry(site.name.as_str()).or_insert(site);
        if site.available_from < first.available_from {
            *first = site;
        }
    }
    let visible = |name: &str, at: TextSize| match first_binding.get(name) {
        Some(site) if site.available_from <= at => TopLevelLookup::Visible,
        Some(site) => TopLevelLookup::BoundLater(site.range),
        None => TopLevelLookup::Absent,
    };
    let mut resolver = Resolver::new(&visible, 0.into());
    resolver.binding_sites.extend(sites.iter().filter(|s| !s.also_read).map(|s| s.range));
    resolver.walk(&root);
    resolver.res
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BindingKind {
    Param,
    Local,
    NestedFunction,
    ComprehensionVar,
}

/// A place where a name is bound, found before the walk (Python decides locality per scope).
struct BindingSite {
    name: String,
    /// The name's own range.
    range: TextRange,
    kind: BindingKind,
    /// For top-level statements: from where on the binding is visible.
    available_from: TextSize,
    /// `x` in `x += e` reads the name as well as binding it.
    also_read: bool,
}

struct Binding {
    name: String,
    range: TextRange,
    kind: BindingKind,
    used: bool,
}

#[derive(Default)]
struct Scope {
    names: HashMap<String, usize>,
    /// Reads inside this range skip the scope: a comprehension's first iterable.
    outer_range: Option<TextRange>,
}

struct Resolver<'a> {
    scopes: Vec<Scope>,
    bindings: Vec<Binding>,
    /// Whether a name is bound at the top level and visible at an offset.
    top_level: &'a dyn Fn(&str, TextSize) -> TopLevelLookup,
    /// Ranges of name references that bind rather than read.
    binding_sites: HashSet<TextRange>,
    /// Added to every range taken from the tree being walked.
    base: TextSize,
    res: NameResolution,
}

impl<'a> Resolver<'a> {
    fn new(top_level: &'a dyn Fn(&str, TextSize) -> TopLevelLookup, base: TextSize) -> Self {
        Resolver {
            scopes: Vec::new(),
            bindings: Vec::new(),
            top_level,
            binding_sites: HashSet::default(),
            base,
            res: NameResolution::default(),
        }
    }

    fn walk(&mut self, root: &SyntaxNode) {
        let mut preorder = root.preorder();
        while let Some(event) = preorder.next() {
            match event {
                WalkEvent::Enter(node) => match node.kind() {
                    // Top-level functions are resolved by their own query.
                    FUNCTION_DEF if node.parent().is_some_and(|p| p.kind() == SOURCE_FILE) => {
                        preorder.skip_subtree()
                    }
                    FUNCTION_DEF => self.enter_nested_function(&node),
                    LAMBDA_EXPR => self.enter_lambda(&node),
                    LIST_COMP | GENERATOR_EXP | SET_COMP | DICT_COMP => self.enter_comprehension(&node),
                    // Annotations name types, which the type checker resolves.
                    TYPE_ANNOTATION | RET_TYPE => preorder.skip_subtree(),
                    // The target of a rejected `x := e` binds; validation has already reported it.
                    NAMED_EXPR => {
                        if let Some(target) = node.first_child() {
                            self.binding_sites.insert(self.range(&target));
                        }
                    }
                    NAME_REF => self.name_ref(&node),
                    _ => {}
                },
                WalkEvent::Leave(node) => {
                    let nested_def =
                        node.kind() == FUNCTION_DEF && node.parent().is_some_and(|p| p.kind() != SOURCE_FILE);
                    if nested_def
                        || matches!(
                            node.kind(),
                            LAMBDA_EXPR | LIST_COMP | GENERATOR_EXP | SET_COMP | DICT_COMP
                        )
                    {
                        self.pop_scope();
                    }
                }
            }
        }
    }

    fn range(&self, node: &SyntaxNode) -> TextRange {
        node.text_range() + self.base
    }

    fn push_function_scope(&mut self, params: impl Iterator<Item = (String, TextRange)>, block: &SyntaxNode) {
        self.scopes.push(Scope::default());
        for (name, range) in params {
            self.bind(name, range, BindingKind::Param);
        }
        for site in collect_bindings(block) {
            if !site.also_read {
                self.binding_sites.insert(site.range + self.base);
            }
            self.bind(site.name, site.range + self.base, site.kind);
        }
    }

    fn enter_nested_function(&mut self, def: &SyntaxNode) {
        let params = param_names(def).map(|(name, range)| (name, range + self.base)).collect::<Vec<_>>();
        match def.children().find(|n| n.kind() == BLOCK) {
            Some(block) => self.push_function_scope(params.into_iter(), &block),
            None => {
                self.scopes.push(Scope::default());
                for (name, range) in params {
                    self.bind(name, range, BindingKind::Param);
                }
            }
        }
    }

    fn enter_lambda(&mut self, lambda: &SyntaxNode) {
        self.scopes.push(Scope::default());
        for (name, range) in param_names(lambda) {
            self.bind(name, range + self.base, BindingKind::Param);
        }
    }

    fn enter_comprehension(&mut self, comprehension: &SyntaxNode) {
        let clauses: Vec<SyntaxNode> = comprehension.children().filter(|n| n.kind() == COMP_FOR).collect();
        let outer_range = clauses
            .first()
            .and_then(|first| first.children().filter(|n| is_expression(n.kind())).nth(1))
            .map(|iterable| self.range(&iterable));
        self.scopes.push(Scope { names: HashMap::default(), outer_range });
        for clause in clauses {
            let Some(target) = clause.children().find(|n| is_expression(n.kind())) else { continue };
            for name_ref in target_names(&target) {
                let range = self.range(&name_ref);
                self.binding_sites.insert(range);
                self.bind(name_ref.text().to_string(), range, BindingKind::ComprehensionVar);
            }
        }
    }

    /// Binds `name` in the innermost scope. A second parameter or nested function of the same
    /// name is a duplicate; a second assignment is an ordinary rebinding.
    fn bind(&mut self, name: String, range: TextRange, kind: BindingKind) {
        let scope = self.scopes.last_mut().expect("bind is called inside a scope");
        if let Some(&existing) = scope.names.get(&name) {
            let first = &self.bindings[existing];
            let what = match (first.kind, kind) {
                (BindingKind::Param, BindingKind::Param) => Some("parameter"),
                (BindingKind::NestedFunction, BindingKind::NestedFunction) => Some("function"),
                _ => None,
            };
            if let Some(what) = what {
                let diagnostic = Diagnostic::new(
                    Code::DuplicateDefinition,
                    range,
                    format!("the {what} `{name}` is defined twice in this scope"),
                )
                .with_label(first.range, "first defined here")
                .with_help(format!("rename one of the {what}s"));
                self.res.diagnostics.push(diagnostic);
            }
            return;
        }
        scope.names.insert(name.clone(), self.bindings.len());
        self.bindings.push(Binding { name, range, kind, used: false });
    }

    fn pop_scope(&mut self) {
        let Some(scope) = self.scopes.pop() else { return };
        let mut unused: Vec<&Binding> = scope
            .names
            .values()
            .map(|&idx| &self.bindings[idx])
            .filter(|b| !b.used && !b.name.starts_with('_'))
            .filter(|b| matches!(b.kind, BindingKind::Local | BindingKind::NestedFunction))
            .collect();
        unused.sort_by_key(|b| b.range.start());
        for binding in unused {
            let message = match binding.kind {
                BindingKind::NestedFunction => format!("the function `{}` is never used", binding.name),
                _ => format!("`{}` is assigned but never read", binding.name),
            };
            let diagnostic = Diagnostic::new(Code::UnusedName, binding.range, message)
                .with_help(format!("remove it, or rename it to `_{}` to mark it unused", binding.name));
            self.res.diagnostics.push(diagnostic);
        }
    }

    fn name_ref(&mut self, node: &SyntaxNode) {
        let range = self.range(node);
        if self.binding_sites.contains(&range) {
            return;
        }
        let Some(token) = node.first_token() else { return };
        let name = token.text();
        let resolution = self.lookup(name, range);
        if resolution == Resolution::Unresolved {
            self.res.diagnostics.push(self.unknown_name(name, range));
        }
        self.res.references.push((range, resolution));
    }

    fn lookup(&mut self, name: &str, range: TextRange) -> Resolution {
        for scope in self.scopes.iter().rev() {
            if scope.outer_range.is_some_and(|outer| outer.contains_range(range)) {
                continue;
            }
            if let Some(&idx) = scope.names.get(name) {
                let binding = &mut self.bindings[idx];
                binding.used = true;
                return Resolution::Local { def_range: binding.range };
            }
        }
        if (self.top_level)(name, range.start()) == TopLevelLookup::Visible {
            return Resolution::TopLevel;
        }
        if is_prelude_name(name) {
            return Resolution::Prelude;
        }
        Resolution::Unresolved
    }

    fn unknown_name(&self, name: &str, range: TextRange) -> Diagnostic {
        let diagnostic = Diagnostic::new(Code::UnknownName, range, format!("unknown name `{name}`"));
        if let TopLevelLookup::BoundLater(binding) = (self.top_level)(name, range.start()) {
            return diagnostic
                .with_label(binding, format!("`{name}` is bound here, after it is read"))
                .with_help("top-level statements run in order: bind the name before reading it");
        }
        if let Some(help) = python_builtin_help(name) {
            return diagnostic.with_help(help);
        }
        let candidates = self
            .scopes
            .iter()
            .filter(|s| !s.outer_range.is_some_and(|outer| outer.contains_range(range)))
            .flat_map(|s| s.names.keys().map(String::as_str))
            .chain(PRELUDE_NAMES.iter().copied());
        match closest_name(name, candidates) {
            Some(close) => diagnostic.with_help(format!("did you mean `{close}`?")),
            None => diagnostic,
        }
    }
}

/// Python builtins that Weft spells differently.
fn python_builtin_help(name: &str) -> Option<&'static str> {
    let help = match name {
        "int" => "Weft's integer cast is `i32(x)` (or `i64(x)`)",
        "float" => "Weft's float cast is `f32(x)` (or `f64(x)`)",
        "enumerate" => "write `zip(indices(xs), xs)`",
        "sorted" => "use `sort(xs)`",
        "list" | "tuple" | "str" | "dict" | "set" => {
            "Weft has no such conversion; build the value with a comprehension"
        }
        "None" => "Weft has no null value",
        _ => return None,
    };
    Some(help)
}

fn closest_name<'n>(name: &str, candidates: impl Iterator<Item = &'n str>) -> Option<&'n str> {
    // One edit turns any one-letter name into any other, so suggest nothing for those.
    let limit = if name.len() < 2 { 0 } else { (name.len() / 3).max(1) };
    candidates
        .filter(|c| *c != name)
        .map(|c| (strsim::damerau_levenshtein(name, c), c))
        .filter(|(distance, _)| *distance <= limit)
        .min()
        .map(|(_, c)| c)
}

fn param_names(owner: &SyntaxNode) -> impl Iterator<Item = (String, TextRange)> + use<> {
    owner
        .children()
        .filter(|n| n.kind() == PARAM_LIST)
        .flat_map(|list| list.children())
        .filter(|p| matches!(p.kind(), PARAM | STAR_PARAM))
        .filter_map(|p| p.children().find(|n| n.kind() == NAME))
        .filter(|name| !name.text().is_empty())
        .map(|name| (name.text().to_string(), name.text_range()))
}

/// The name references a target binds: `x`, or each name in `a, (b, c)`. Indexes and attributes
/// bind nothing (validation rejects them).
fn target_names(target: &SyntaxNode) -> Vec<SyntaxNode> {
    let mut res = Vec::new();
    let mut pending = vec![target.clone()];
    while let Some(node) = pending.pop() {
        match node.kind() {
            NAME_REF => res.push(node),
            TUPLE_EXPR | PAREN_EXPR | LIST_EXPR | STAR_EXPR => {
                pending.extend(node.children().filter(|n| is_expression(n.kind())))
            }
            _ => {}
        }
    }
    res.sort_by_key(|n| n.text_range().start());
    res
}

/// Every binding in the scope that `root` opens, not descending into nested scopes (whose own
/// names are theirs) but recording nested functions' names.
fn collect_bindings(root: &SyntaxNode) -> Vec<BindingSite> {
    let mut res = Vec::new();
    let mut preorder = root.preorder();
    while let Some(event) = preorder.next() {
        let WalkEvent::Enter(node) = event else { continue };
        if node == *root {
            continue;
        }
        match node.kind() {
            FUNCTION_DEF => {
                if let Some(name) =
                    node.children().find(|n| n.kind() == NAME).filter(|n| !n.text().is_empty())
                {
                    res.push(BindingSite {
                        name: name.text().to_string(),
                        range: name.text_range(),
                        kind: BindingKind::NestedFunction,
                        available_from: node.text_range().start(),
                        also_read: false,
                    });
                }
                preorder.skip_subtree();
            }
            LAMBDA_EXPR | LIST_COMP | GENERATOR_EXP | SET_COMP | DICT_COMP | CLASS_DEF => {
                preorder.skip_subtree()
            }
            ASSIGN_STMT | AUG_ASSIGN_STMT | FOR_STMT => {
                let exprs: Vec<SyntaxNode> = node.children().filter(|n| is_expression(n.kind())).collect();
                let targets = match node.kind() {
                    ASSIGN_STMT => &exprs[..exprs.len().saturating_sub(1)],
                    _ => &exprs[..exprs.len().min(1)],
                };
                for target in targets {
                    let available_from = match node.kind() {
                        FOR_STMT => target.text_range().end(),
                        _ => node.text_range().end(),
                    };
                    for name_ref in target_names(target) {
                        res.push(BindingSite {
                            name: name_ref.text().to_string(),
                            range: name_ref.text_range(),
                            kind: BindingKind::Local,
                            available_from,
                            also_read: node.kind() == AUG_ASSIGN_STMT,
                        });
                    }
                }
            }
            _ => {}
        }
    }
    res
}
