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

use std::borrow::Cow;
use std::collections::BTreeSet;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use rowan::{TextRange, TextSize, WalkEvent};

use crate::db::{Db, SourceFile};
use crate::items::{Function, function_body, function_signature};
use crate::parsed::parsed_file;
use crate::prelude::{PRELUDE_NAMES, is_prelude_name};
use weft_syntax::ast::{self, AstNode, is_expression, targets};
use weft_syntax::diagnostics::{Code, Diagnostic};
use weft_syntax::{SyntaxKind::*, SyntaxNode, identifier_key};

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
    /// Each name bound (a parameter, an assignment's target, a loop or comprehension variable,
    /// a nested `def`) and the binding it belongs to: a local, by its first binding, or a
    /// top-level name. Rename and references need the rebindings the reads do not show.
    pub definitions: Vec<(TextRange, Resolution)>,
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

/// The top-level names a function's text mentions: all its name resolution and its HIR need to
/// know of the top level. A top-level name added or removed elsewhere leaves this unchanged, so
/// an edit at the top level does not re-resolve or re-lower every function.
#[salsa::tracked(returns(ref))]
pub fn function_globals<'db>(db: &'db dyn Db, function: Function<'db>) -> BTreeSet<String> {
    let top_level = top_level_names(db, function.file(db));
    // Over the green tree: this runs for every function on every top-level edit, and needs no
    // positions.
    let ident = rowan::SyntaxKind::from(IDENT);
    let mut mentioned = BTreeSet::new();
    let mut pending: Vec<&rowan::GreenNodeData> = vec![function.syntax(db)];
    while let Some(node) = pending.pop() {
        for child in node.children() {
            match child {
                rowan::NodeOrToken::Node(node) => pending.push(node),
                rowan::NodeOrToken::Token(token) if token.kind() == ident => {
                    // `identifier_key` allocates; most names are ASCII and are their own key.
                    let name = token.text();
                    let key =
                        if name.is_ascii() { Cow::Borrowed(name) } else { Cow::Owned(identifier_key(name)) };
                    if top_level.contains(&*key) && !mentioned.contains(&*key) {
                        mentioned.insert(key.into_owned());
                    }
                }
                rowan::NodeOrToken::Token(_) => {}
            }
        }
    }
    mentioned
}

/// Resolves the names of one top-level function: its body and the bodies nested in it.
#[salsa::tracked(returns(ref))]
pub fn function_names<'db>(db: &'db dyn Db, function: Function<'db>) -> NameResolution {
    let signature = function_signature(db, function);
    let body = function_body(db, function);
    let top_level = function_globals(db, function);
    let visible = |name: &str, _at: TextSize| {
        if top_level.contains(name) { TopLevelLookup::Visible } else { TopLevelLookup::Absent }
    };
    // Read only for an unknown name's help, so only then does the function depend on them all.
    let file = function.file(db);
    let top_level_list = || top_level_names(db, file).iter().map(String::as_str).collect();
    let mut resolver = Resolver::new(&visible, &top_level_list, body.offset);
    let Some(block) = body.block_node() else { return resolver.finish() };
    resolver.scopes.push(Scope::default());
    for param in &signature.params {
        resolver.bind(param.name.clone(), param.range, BindingKind::Param);
    }
    resolver.walk(&block);
    resolver.pop_scope();
    resolver.finish()
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
    let top_level_list = || first_binding.keys().copied().collect();
    let mut resolver = Resolver::new(&visible, &top_level_list, 0.into());
    resolver.walk(&root);
    resolver.finish()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BindingKind {
    Param,
    Local,
    NestedFunction,
    ComprehensionVar,
}

/// A place where a top-level name is bound, for the ordering rule of top-level statements.
struct BindingSite {
    name: String,
    /// The name's own range.
    range: TextRange,
    /// From where on the binding is visible.
    available_from: TextSize,
}

struct Binding {
    name: String,
    range: TextRange,
    kind: BindingKind,
    used: bool,
}

/// A name read that waits for its scope to close: Python decides that a name is local from
/// every binding in the scope, including the ones after the read.
struct PendingRead {
    name: String,
    range: TextRange,
    /// Whether the read left a function or lambda on its way out: it then happens when that is
    /// called, and sees top-level names bound anywhere, as Python's late binding does.
    at_call_time: bool,
}

#[derive(Default)]
struct Scope {
    /// A function or lambda body, which runs when called rather than where it stands.
    is_function: bool,
    names: HashMap<String, usize>,
    /// Reads inside this range skip the scope: a comprehension's first iterable.
    outer_range: Option<TextRange>,
    pending: Vec<PendingRead>,
}

/// One walk over a body. Bindings are recorded as they are met; reads wait in their scope and are
/// resolved when it closes, so each body is walked once.
struct Resolver<'a> {
    scopes: Vec<Scope>,
    bindings: Vec<Binding>,
    /// Whether a name is bound at the top level and visible at an offset.
    top_level: &'a dyn Fn(&str, TextSize) -> TopLevelLookup,
    /// Every top-level name, for "did you mean" help; only asked for when a name is unknown.
    top_level_names: &'a dyn Fn() -> Vec<&'a str>,
    /// Ranges of name references that bind rather than read.
    binding_sites: HashSet<TextRange>,
    /// Added to every range taken from the tree being walked.
    base: TextSize,
    res: NameResolution,
}

fn opens_scope(node: &SyntaxNode) -> bool {
    match node.kind() {
        FUNCTION_DEF => !is_top_level(node),
        LAMBDA_EXPR | LIST_COMP | GENERATOR_EXP | SET_COMP | DICT_COMP => true,
        _ => false,
    }
}

fn is_top_level(def: &SyntaxNode) -> bool {
    def.parent().is_some_and(|p| p.kind() == SOURCE_FILE)
}

impl<'a> Resolver<'a> {
    fn new(
        top_level: &'a dyn Fn(&str, TextSize) -> TopLevelLookup,
        top_level_names: &'a dyn Fn() -> Vec<&'a str>,
        base: TextSize,
    ) -> Self {
        Resolver {
            scopes: Vec::new(),
            bindings: Vec::new(),
            top_level,
            top_level_names,
            binding_sites: HashSet::default(),
            base,
            res: NameResolution::default(),
        }
    }

    fn finish(mut self) -> NameResolution {
        self.res.references.sort_by_key(|(range, _)| range.start());
        self.res.definitions.sort_by_key(|(range, _)| range.start());
        self.res
    }

    fn walk(&mut self, root: &SyntaxNode) {
        let mut preorder = root.preorder();
        while let Some(event) = preorder.next() {
            let node = match event {
                WalkEvent::Enter(node) => node,
                WalkEvent::Leave(node) => {
                    if opens_scope(&node) {
                        self.pop_scope();
                    }
                    continue;
                }
            };
            match node.kind() {
                // Top-level functions are resolved by their own query.
                FUNCTION_DEF if is_top_level(&node) => preorder.skip_subtree(),
                FUNCTION_DEF => self.enter_nested_function(&node),
                LAMBDA_EXPR => {
                    self.scopes.push(Scope { is_function: true, ..Scope::default() });
                    self.bind_params(&node);
                }
                // Rejected constructs: validation reported them, and their names mean nothing.
                kind if ast::is_rejected_block(kind) || matches!(kind, RAISE_STMT | DECORATOR) => {
                    preorder.skip_subtree()
                }
                LIST_COMP | GENERATOR_EXP | SET_COMP | DICT_COMP => self.enter_comprehension(&node),
                // A comprehension's clauses bind when it is entered.
                COMP_FOR if !node.parent().is_some_and(|p| opens_scope(&p)) => {
                    self.bind_targets(&node, BindingKind::ComprehensionVar)
                }
                ASSIGN_STMT | AUG_ASSIGN_STMT | FOR_STMT => self.bind_targets(&node, BindingKind::Local),
                // Annotations name types, which the type checker resolves.
                TYPE_ANNOTATION | RET_TYPE => preorder.skip_subtree(),
                // The target of a rejected `x := e` binds; validation has already reported it.
                NAMED_EXPR => {
                    if let Some(target) = node.first_child() {
                        self.binding_sites.insert(self.range(&target));
                    }
                }
                NAME_REF => self.read(&node),
                _ => {}
            }
        }
    }

    fn range(&self, node: &SyntaxNode) -> TextRange {
        node.text_range() + self.base
    }

    fn enter_nested_function(&mut self, def: &SyntaxNode) {
        if let Some(name) = def_name(def) {
            let range = self.range(name.syntax());
            self.bind(name.text(), range, BindingKind::NestedFunction);
        }
        self.scopes.push(Scope { is_function: true, ..Scope::default() });
        self.bind_params(def);
    }

    fn bind_params(&mut self, owner: &SyntaxNode) {
        for (name, range) in param_names(owner) {
            self.bind(name, range + self.base, BindingKind::Param);
        }
    }

    fn enter_comprehension(&mut self, comprehension: &SyntaxNode) {
        let first_iterable = comprehension
            .children()
            .find(|n| n.kind() == COMP_FOR)
            .and_then(|first| first.children().filter(|n| is_expression(n.kind())).nth(1));
        let outer_range = first_iterable.map(|iterable| self.range(&iterable));
        self.scopes.push(Scope { outer_range, ..Scope::default() });
        // Its variables are bound in all of it, the element (which comes first) included, so a
        // comprehension in its element or in a later clause's sequence shadows them.
        for clause in comprehension.children().filter(|n| n.kind() == COMP_FOR) {
            self.bind_targets(&clause, BindingKind::ComprehensionVar);
        }
    }

    /// Binds the names an assignment, a loop or a comprehension clause assigns to.
    fn bind_targets(&mut self, node: &SyntaxNode, kind: BindingKind) {
        let also_read = node.kind() == AUG_ASSIGN_STMT;
        for target in targets(node) {
            for name_ref in target_names(&target) {
                let range = self.range(name_ref.syntax());
                if !also_read {
                    self.binding_sites.insert(range);
                }
                // Top-level bindings belong to the file's scope, which `top_level` describes.
                if self.scopes.is_empty() {
                    self.res.definitions.push((range, Resolution::TopLevel));
                } else {
                    self.bind(name_ref.text(), range, kind);
                }
            }
        }
    }

    /// Binds `name` in the innermost scope. A second parameter or nested function of the same
    /// name is a duplicate; a second assignment is an ordinary rebinding.
    fn bind(&mut self, name: String, range: TextRange, kind: BindingKind) {
        let Some((scope, outer)) = self.scopes.split_last_mut() else { return };
        if let Some(&existing) = scope.names.get(&name) {
            let first = &self.bindings[existing];
            self.res.definitions.push((range, Resolution::Local { def_range: first.range }));
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
        // The enclosing scopes the binding is in, as a read there would see them (`defer`): a
        // comprehension's first iterable belongs to the scope around the comprehension, so a
        // binding inside it (a nested comprehension's variable, a lambda's parameter) shadows
        // nothing of that comprehension.
        let shadowed = outer
            .iter()
            .rev()
            .filter(|s| !s.outer_range.is_some_and(|skipped| skipped.contains_range(range)))
            .find_map(|s| s.names.get(&name))
            .map(|&b| self.bindings[b].range);
        if let Some(outer_range) = shadowed.filter(|_| !name.starts_with('_')) {
            let diagnostic = Diagnostic::new(
                Code::ShadowedName,
                range,
                format!("`{name}` shadows a binding of the enclosing scope"),
            )
            .with_label(outer_range, "the shadowed binding")
            .with_help(format!("rename one of them; inside this scope, `{name}` means only this binding"));
            self.res.diagnostics.push(diagnostic);
        }
        self.res.definitions.push((range, Resolution::Local { def_range: range }));
        self.bindings.push(Binding { name, range, kind, used: false });
    }

    fn read(&mut self, node: &SyntaxNode) {
        let range = self.range(node);
        if self.binding_sites.contains(&range) {
            return;
        }
        let Some(token) = node.first_token() else { return };
        let read = PendingRead { name: identifier_key(token.text()), range, at_call_time: false };
        self.defer(read, self.scopes.len());
    }

    /// Queues `read` on the innermost of the first `depth` scopes that it does not skip, or
    /// resolves it at the top level when there is none.
    fn defer(&mut self, read: PendingRead, depth: usize) {
        let target = self.scopes[..depth]
            .iter()
            .rposition(|s| !s.outer_range.is_some_and(|outer| outer.contains_range(read.range)));
        match target {
            Some(idx) => self.scopes[idx].pending.push(read),
            None => self.resolve_outside_functions(read),
        }
    }

    /// Resolves the reads waiting in the innermost scope, hands the others outwards, reports its
    /// unused bindings, and closes it.
    fn pop_scope(&mut self) {
        let Some(scope) = self.scopes.last_mut() else { return };
        let pending = std::mem::take(&mut scope.pending);
        let is_function = scope.is_function;
        for mut read in pending {
            let innermost = self.scopes.last().expect("the scope being closed");
            match innermost.names.get(&read.name) {
                Some(&idx) => {
                    let binding = &mut self.bindings[idx];
                    binding.used = true;
                    self.res.references.push((read.range, Resolution::Local { def_range: binding.range }));
                }
                None => {
                    read.at_call_time |= is_function;
                    self.defer(read, self.scopes.len() - 1);
                }
            }
        }
        let scope = self.scopes.pop().expect("the scope being closed");
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

    fn resolve_outside_functions(&mut self, read: PendingRead) {
        let at = if read.at_call_time { TextSize::from(u32::MAX) } else { read.range.start() };
        let resolution = if (self.top_level)(&read.name, at) == TopLevelLookup::Visible {
            Resolution::TopLevel
        } else if is_prelude_name(&read.name) {
            Resolution::Prelude
        } else {
            self.res.diagnostics.push(self.unknown_name(&read.name, read.range));
            Resolution::Unresolved
        };
        self.res.references.push((read.range, resolution));
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
            .chain((self.top_level_names)())
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

fn param_names(owner: &SyntaxNode) -> Vec<(String, TextRange)> {
    let Some(list) = owner.children().find_map(ast::ParamList::cast) else { return Vec::new() };
    list.params()
        .filter_map(|param| param.name())
        .filter(|name| !name.text().is_empty())
        .map(|name| (name.text(), name.syntax().text_range()))
        .collect()
}

/// The name references a target binds: `x`, or each name in `a, (b, c)`. Indexes and attributes
/// bind nothing (validation rejects them).
fn target_names(target: &SyntaxNode) -> Vec<ast::NameRef> {
    let mut res = Vec::new();
    let mut pending = vec![target.clone()];
    while let Some(node) = pending.pop() {
        match node.kind() {
            NAME_REF => res.extend(ast::NameRef::cast(node)),
            TUPLE_EXPR | PAREN_EXPR | LIST_EXPR | STAR_EXPR => {
                pending.extend(node.children().filter(|n| is_expression(n.kind())))
            }
            _ => {}
        }
    }
    res.sort_by_key(|n| n.syntax().text_range().start());
    res
}

/// The name a `def` binds, unless it is missing.
fn def_name(def: &SyntaxNode) -> Option<ast::Name> {
    ast::FunctionDef::cast(def.clone())?.name().filter(|name| name.ident().is_some())
}

/// Every name the top level binds, with where it becomes visible. Functions, lambdas and
/// comprehensions have scopes of their own and are not entered, but a `def` binds its name.
fn collect_bindings(root: &SyntaxNode) -> Vec<BindingSite> {
    let mut res = Vec::new();
    let mut preorder = root.preorder();
    while let Some(event) = preorder.next() {
        let WalkEvent::Enter(node) = event else { continue };
        match node.kind() {
            FUNCTION_DEF => {
                if let Some(name) = def_name(&node) {
                    res.push(BindingSite {
                        name: name.text(),
                        range: name.syntax().text_range(),
                        available_from: node.text_range().start(),
                    });
                }
                preorder.skip_subtree();
            }
            LAMBDA_EXPR | LIST_COMP | GENERATOR_EXP | SET_COMP | DICT_COMP => preorder.skip_subtree(),
            kind if ast::is_rejected_block(kind) => preorder.skip_subtree(),
            ASSIGN_STMT | AUG_ASSIGN_STMT | FOR_STMT => {
                // A loop's target is bound after its iterable is evaluated, before the body runs.
                let iterable = node.children().filter(|n| is_expression(n.kind())).nth(1);
                for target in targets(&node) {
                    let available_from = match (node.kind(), &iterable) {
                        (FOR_STMT, Some(iterable)) => iterable.text_range().end(),
                        (FOR_STMT, None) => target.text_range().end(),
                        _ => node.text_range().end(),
                    };
                    res.extend(target_names(&target).into_iter().map(|name_ref| BindingSite {
                        name: name_ref.text(),
                        range: name_ref.syntax().text_range(),
                        available_from,
                    }));
                }
            }
            _ => {}
        }
    }
    res
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use super::*;
    use crate::check::file_diagnostics;
    use crate::db::Database;
    use crate::items::file_functions;

    /// Renders what each name read resolves to, `name@offset -> resolution`, in source order,
    /// then the codes of the file's diagnostics.
    #[track_caller]
    fn check(text: &str, expect: Expect) {
        let db = Database::default();
        let file = SourceFile::new(&db, "test.weft".to_string(), text.to_string());
        let mut references: Vec<(TextRange, Resolution)> = Vec::new();
        for function in file_functions(&db, file) {
            let offset = function.offset(&db);
            references.extend(function_names(&db, *function).references.iter().map(|(range, res)| {
                let res = match res {
                    Resolution::Local { def_range } => Resolution::Local { def_range: *def_range + offset },
                    other => other.clone(),
                };
                (*range + offset, res)
            }));
        }
        references.extend(top_level_statement_names(&db, file).references.iter().cloned());
        references.sort_by_key(|(range, _)| range.start());
        let mut res = String::new();
        for (range, resolution) in references {
            let name = &text[range];
            let target = match resolution {
                Resolution::Local { def_range } => format!("local@{}", u32::from(def_range.start())),
                other => format!("{other:?}"),
            };
            res.push_str(&format!("{name}@{} -> {target}\n", u32::from(range.start())));
        }
        // Name resolution's own findings; later passes (types) are tested elsewhere.
        let codes: Vec<&str> = file_diagnostics(&db, file)
            .iter()
            .filter(|d| d.code.as_str() < "E0204" || d.code.as_str().starts_with('W'))
            .map(|d| d.code.as_str())
            .collect();
        res.push_str(&format!("diagnostics: {codes:?}\n"));
        expect.assert_eq(&res);
    }

    #[test]
    fn a_name_assigned_anywhere_in_a_function_is_local_to_all_of_it() {
        check(
            "x = 1\ndef f():\n    y = x\n    x = 2\n    return y + x\n",
            expect![[r#"
                x@23 -> local@29
                y@46 -> local@19
                x@50 -> local@29
                diagnostics: []
            "#]],
        );
    }

    #[test]
    fn closures_read_enclosing_locals() {
        check(
            "def f(k):\n    def g(x):\n        return x * k\n    return g(1)\n",
            expect![[r#"
                x@39 -> local@20
                k@43 -> local@6
                g@56 -> local@18
                diagnostics: []
            "#]],
        );
    }

    #[test]
    fn a_comprehension_reads_its_first_iterable_outside_its_own_scope() {
        check(
            "def f(x):\n    return [x for x in x]\n",
            expect![[r#"
                x@22 -> local@28
                x@33 -> local@6
                diagnostics: ["W0203"]
            "#]],
        );
    }

    #[test]
    fn a_comprehension_in_the_first_iterable_shadows_nothing_of_the_outer_one() {
        check(
            "n = 5\nprint([x for x in [x * 2 for x in range(n)] if x > 2])\n",
            expect![[r#"
                print@6 -> Prelude
                x@13 -> local@19
                x@25 -> local@35
                range@40 -> Prelude
                n@46 -> TopLevel
                x@53 -> local@19
                diagnostics: []
            "#]],
        );
    }

    #[test]
    fn a_comprehension_in_the_element_shadows_the_outer_variable() {
        check(
            "def f(ys):\n    return [[z for z in ys] for z in ys]\n",
            expect![[r#"
                z@24 -> local@30
                ys@35 -> local@6
                ys@48 -> local@6
                diagnostics: ["W0203"]
            "#]],
        );
    }

    #[test]
    fn later_comprehension_clauses_see_earlier_targets() {
        check(
            "def f(xss):\n    return [y for xs in xss for y in xs if y > 0]\n",
            expect![[r#"
                y@24 -> local@44
                xss@36 -> local@6
                xs@49 -> local@30
                y@55 -> local@44
                diagnostics: []
            "#]],
        );
    }

    #[test]
    fn augmented_assignment_reads_its_target() {
        check(
            "def f(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total\n",
            expect![[r#"
                xs@38 -> local@6
                total@50 -> local@15
                x@59 -> local@33
                total@72 -> local@15
                diagnostics: []
            "#]],
        );
    }

    #[test]
    fn functions_see_top_level_names_bound_later_but_statements_do_not() {
        check(
            "def f():\n    return scale * g()\n\ndef g():\n    return 2\n\nprint(scale)\nscale = 3\nprint(f())\n",
            expect![[r#"
                scale@20 -> TopLevel
                g@28 -> TopLevel
                print@56 -> Prelude
                scale@62 -> Unresolved
                print@79 -> Prelude
                f@85 -> TopLevel
                diagnostics: ["E0200"]
            "#]],
        );
    }

    #[test]
    fn lambda_parameters_shadow_outer_names() {
        check(
            "def f(a, b):\n    return map(lambda a: a + b, [a])\n",
            expect![[r#"
                map@24 -> Prelude
                a@38 -> local@35
                b@42 -> local@9
                a@46 -> local@6
                diagnostics: ["W0203"]
            "#]],
        );
    }

    #[test]
    fn a_top_level_lambda_reads_top_level_names_when_called() {
        check(
            "f = lambda: y\ny = 1\nprint(f())\n",
            expect![[r#"
                y@12 -> TopLevel
                print@20 -> Prelude
                f@26 -> TopLevel
                diagnostics: []
            "#]],
        );
    }

    #[test]
    fn a_top_level_loop_reads_its_iterable_before_binding_its_target() {
        check(
            "for x in x:\n    print(x)\n",
            expect![[r#"
                x@9 -> Unresolved
                print@16 -> Prelude
                x@22 -> TopLevel
                diagnostics: ["E0200"]
            "#]],
        );
    }

    #[test]
    fn rejected_star_parameters_still_bind_their_names() {
        check(
            "def f(*args):\n    def g(*more):\n        return more\n    return g(args)\n",
            expect![[r#"
                more@47 -> local@25
                g@63 -> local@22
                args@65 -> local@7
                diagnostics: ["E0101", "E0101"]
            "#]],
        );
    }

    #[test]
    fn unknown_names_suggest_top_level_names() {
        let db = Database::default();
        let text = "def compute_total(xs):\n    return sum(xs)\n\nprint(compute_totl([1]))\n";
        let file = SourceFile::new(&db, "test.weft".to_string(), text.to_string());
        let helps: Vec<Option<String>> = file_diagnostics(&db, file).iter().map(|d| d.help.clone()).collect();
        assert_eq!(helps, [Some("did you mean `compute_total`?".to_string())]);
    }

    #[test]
    fn names_are_compared_after_nfkc_normalisation() {
        check(
            "\u{fb01} = 1\nprint(fi)\n",
            expect![[r#"
                print@8 -> Prelude
                fi@14 -> TopLevel
                diagnostics: []
            "#]],
        );
    }
}
