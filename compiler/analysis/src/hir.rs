//! The high-level IR: one function body (or the top-level statements) with names resolved to
//! locals, sugar removed (`x += e` is `x = x + e`), and annotations read as types.
//!
//! Lowering is error-tolerant like the parser: a missing or rejected piece becomes
//! `Expr::Missing` or is skipped, because the passes before have reported it. Inference
//! (`infer`) types the HIR, and specialisation (`mono`) turns typed HIR into the core.
//!
//! Spans are relative to the lowered root: the `def` for a function, the file for the top level.

use rustc_hash::FxHashMap as HashMap;

use rowan::TextRange;

use crate::db::{Db, SourceFile};
use crate::items::Function;
use crate::names::{function_globals, top_level_names};
use crate::parsed::parsed_file;
use crate::prelude::is_prelude_name;
use weft_core::Sink;
use weft_core::types::Scalar;
use weft_syntax::ast::{self, AstNode, is_expression};
use weft_syntax::diagnostics::{Code, Diagnostic};
use weft_syntax::{SyntaxKind, SyntaxKind::*, SyntaxNode, SyntaxToken, identifier_key};

pub type ExprId = u32;
pub type StmtId = u32;
pub type LocalId = u32;
pub type LambdaId = u32;
pub type ScopeId = u32;
pub type Block = Vec<StmtId>;

#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Body {
    /// The function's name (`<top level>` for the statements of a file).
    pub name: String,
    /// The function's name in its `def` (the whole root for the top level).
    pub name_range: TextRange,
    pub params: Vec<Param>,
    pub ret_annotation: Option<TypeRef>,
    pub root: Block,
    pub exprs: Vec<Expr>,
    pub expr_ranges: Vec<TextRange>,
    pub stmts: Vec<Stmt>,
    pub stmt_ranges: Vec<TextRange>,
    pub locals: Vec<Local>,
    pub lambdas: Vec<Lambda>,
    /// Scope 0 is the body itself; each lambda, nested `def` and comprehension clause opens one.
    pub scope_parents: Vec<Option<ScopeId>>,
    /// Annotations naming unknown types.
    pub diagnostics: Vec<Diagnostic>,
}

impl Body {
    pub fn expr(&self, id: ExprId) -> &Expr {
        &self.exprs[id as usize]
    }

    /// The text of a call's one argument when it is a string literal (the path of `load_npy`,
    /// the name `__session_input__` reads).
    pub fn string_argument(&self, args: &[ExprId]) -> Option<&str> {
        match args {
            [a] => match self.expr(*a) {
                Expr::Literal(Literal::Str(text)) => Some(text),
                _ => None,
            },
            _ => None,
        }
    }

    pub fn expr_range(&self, id: ExprId) -> TextRange {
        self.expr_ranges[id as usize]
    }

    pub fn stmt(&self, id: StmtId) -> &Stmt {
        &self.stmts[id as usize]
    }

    pub fn local(&self, id: LocalId) -> &Local {
        &self.locals[id as usize]
    }

    /// Whether `scope` is `outer` or nested inside it.
    pub fn scope_within(&self, mut scope: ScopeId, outer: ScopeId) -> bool {
        loop {
            if scope == outer {
                return true;
            }
            match self.scope_parents[scope as usize] {
                Some(parent) => scope = parent,
                None => return false,
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Param {
    pub local: LocalId,
    pub annotation: Option<TypeRef>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Local {
    pub name: String,
    /// The first binding.
    pub range: TextRange,
    pub scope: ScopeId,
}

/// A nested `def` or a `lambda`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Lambda {
    pub name: Option<String>,
    pub scope: ScopeId,
    pub params: Vec<Param>,
    pub ret_annotation: Option<TypeRef>,
    pub body: LambdaBody,
    pub range: TextRange,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum LambdaBody {
    Block(Block),
    Expr(ExprId),
}

/// A type as written in an annotation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TypeRef {
    Scalar(Scalar, TextRange),
    /// A single lowercase letter: a type variable scoped to the `def`.
    Var(String, TextRange),
    Tuple(Vec<TypeRef>, TextRange),
    Seq(Box<TypeRef>, TextRange),
    Error(TextRange),
}

impl TypeRef {
    pub fn range(&self) -> TextRange {
        match self {
            TypeRef::Scalar(_, r)
            | TypeRef::Var(_, r)
            | TypeRef::Tuple(_, r)
            | TypeRef::Seq(_, r)
            | TypeRef::Error(r) => *r,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    Neg,
    Pos,
    Not,
    Invert,
}

pub use weft_core::BinaryOp;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Literal {
    Int(i64),
    /// The bits of an `f64`.
    Float(u64),
    Bool(bool),
    /// Only as an argument of `print`, `assert` or `load_*`.
    Str(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Expr {
    Missing,
    Literal(Literal),
    Local(LocalId),
    /// A top-level function or binding, read from a function or from the top level.
    Global(String),
    Prelude(String),
    Tuple(Vec<ExprId>),
    List(Vec<ExprId>),
    Index {
        base: ExprId,
        index: ExprId,
    },
    Slice {
        base: ExprId,
        start: Option<ExprId>,
        stop: Option<ExprId>,
        step: Option<ExprId>,
    },
    Unary {
        op: UnaryOp,
        operand: ExprId,
    },
    Binary {
        op: BinaryOp,
        lhs: ExprId,
        rhs: ExprId,
    },
    And(ExprId, ExprId),
    Or(ExprId, ExprId),
    /// `a < b <= c`: operands in order, one fewer operator.
    Compare {
        operands: Vec<ExprId>,
        ops: Vec<BinaryOp>,
    },
    If {
        cond: ExprId,
        then: ExprId,
        otherwise: ExprId,
    },
    Call {
        callee: ExprId,
        args: Vec<ExprId>,
    },
    Lambda(LambdaId),
    Comprehension {
        element: ExprId,
        clauses: Vec<Clause>,
    },
}

impl Expr {
    /// The sub-expressions evaluated with this one, in order. A lambda's body is not among them:
    /// it runs when the lambda is called.
    pub fn children(&self) -> Vec<ExprId> {
        match self {
            Expr::Missing
            | Expr::Literal(_)
            | Expr::Local(_)
            | Expr::Global(_)
            | Expr::Prelude(_)
            | Expr::Lambda(_) => Vec::new(),
            Expr::Tuple(items) | Expr::List(items) => items.clone(),
            Expr::Index { base, index } => vec![*base, *index],
            Expr::Slice { base, start, stop, step } => {
                std::iter::once(*base).chain([start, stop, step].into_iter().flatten().copied()).collect()
            }
            Expr::Unary { operand, .. } => vec![*operand],
            Expr::Binary { lhs, rhs, .. } | Expr::And(lhs, rhs) | Expr::Or(lhs, rhs) => vec![*lhs, *rhs],
            Expr::Compare { operands, .. } => operands.clone(),
            Expr::If { cond, then, otherwise } => vec![*cond, *then, *otherwise],
            Expr::Call { callee, args } => std::iter::once(*callee).chain(args.iter().copied()).collect(),
            Expr::Comprehension { element, clauses } => clauses
                .iter()
                .map(|c| match c {
                    Clause::For { iterable, .. } => *iterable,
                    Clause::If(cond) => *cond,
                })
                .chain(std::iter::once(*element))
                .collect(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Clause {
    /// A `for` clause opens `scope`, where `pattern` is bound.
    For {
        pattern: Pattern,
        iterable: ExprId,
        scope: ScopeId,
    },
    If(ExprId),
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Pattern {
    Bind(LocalId, TextRange),
    Tuple(Vec<Pattern>, TextRange),
    /// A target that is not a name (reported by `validate`).
    Invalid(TextRange),
}

impl Pattern {
    pub fn range(&self) -> TextRange {
        match self {
            Pattern::Bind(_, r) | Pattern::Tuple(_, r) | Pattern::Invalid(r) => *r,
        }
    }

    /// Every local the targets of one assignment bind.
    pub fn locals_of(targets: &[Pattern]) -> Vec<LocalId> {
        let mut out = Vec::new();
        targets.iter().for_each(|t| t.locals(&mut out));
        out
    }

    pub fn locals(&self, out: &mut Vec<LocalId>) {
        match self {
            Pattern::Bind(l, _) => out.push(*l),
            Pattern::Tuple(items, _) => items.iter().for_each(|p| p.locals(out)),
            Pattern::Invalid(_) => {}
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Stmt {
    /// `a = b = value`: every target gets the value.
    Assign {
        targets: Vec<Pattern>,
        value: ExprId,
    },
    If {
        cond: ExprId,
        then: Block,
        otherwise: Block,
    },
    For {
        pattern: Pattern,
        iterable: ExprId,
        body: Block,
    },
    While {
        cond: ExprId,
        body: Block,
    },
    Return(Option<ExprId>),
    Assert {
        cond: ExprId,
        message: Option<String>,
    },
    Expr(ExprId),
    /// A call of `print` or a chart function, as a statement of its own.
    Print {
        sink: Sink,
        args: Vec<ExprId>,
    },
    Def {
        local: LocalId,
        lambda: LambdaId,
    },
}

/// The HIR of one top-level function.
#[salsa::tracked(returns(ref))]
pub fn function_hir<'db>(db: &'db dyn Db, function: Function<'db>) -> Body {
    let def = function.syntax_node(db);
    let mut lowerer = Lowerer::new(function_globals(db, function));
    lowerer.in_function = true;
    lowerer.body.name = function.name(db).clone();
    lowerer.lower_function_def(&def);
    lowerer.body
}

/// The HIR of a file's top-level statements (its `def`s are items of their own).
#[salsa::tracked(returns(ref))]
pub fn top_level_hir(db: &dyn Db, file: SourceFile) -> Body {
    let root = parsed_file(db, file).syntax();
    let mut lowerer = Lowerer::new(top_level_names(db, file));
    lowerer.body.name = "<top level>".to_string();
    lowerer.body.name_range = root.text_range();
    let statements: Vec<SyntaxNode> = root.children().filter(|n| n.kind() != FUNCTION_DEF).collect();
    lowerer.push_scope(&statements);
    lowerer.body.root = lowerer.lower_block(&statements);
    lowerer.body
}

struct Lowerer<'a> {
    body: Body,
    /// The innermost scope last; each maps a name to its local.
    scopes: Vec<(ScopeId, HashMap<String, LocalId>)>,
    /// The top-level names (functions included) the body may read: all of them, or for a
    /// function those its text mentions.
    top_level: &'a std::collections::BTreeSet<String>,
    /// Whether the body is a function's (charts are top-level statements).
    in_function: bool,
}

impl<'a> Lowerer<'a> {
    fn new(top_level: &'a std::collections::BTreeSet<String>) -> Self {
        Lowerer { body: Body::default(), scopes: Vec::new(), top_level, in_function: false }
    }

    fn alloc_expr(&mut self, expr: Expr, range: TextRange) -> ExprId {
        self.body.exprs.push(expr);
        self.body.expr_ranges.push(range);
        (self.body.exprs.len() - 1) as ExprId
    }

    fn alloc_stmt(&mut self, stmt: Stmt, range: TextRange) -> StmtId {
        self.body.stmts.push(stmt);
        self.body.stmt_ranges.push(range);
        (self.body.stmts.len() - 1) as StmtId
    }

    /// Opens a scope binding every name the statements assign (Python: local to the whole body).
    fn push_scope(&mut self, statements: &[SyntaxNode]) -> ScopeId {
        let scope = self.open_scope();
        let mut bound = Vec::new();
        for statement in statements {
            collect_bound_names(statement, &mut bound);
        }
        for (name, range) in bound {
            self.declare(name, range);
        }
        scope
    }

    fn open_scope(&mut self) -> ScopeId {
        let parent = self.scopes.last().map(|(s, _)| *s);
        self.body.scope_parents.push(parent);
        let scope = (self.body.scope_parents.len() - 1) as ScopeId;
        self.scopes.push((scope, HashMap::default()));
        scope
    }

    fn declare(&mut self, name: String, range: TextRange) -> LocalId {
        let (scope, names) = self.scopes.last_mut().expect("a scope is open");
        if let Some(&local) = names.get(&name) {
            return local;
        }
        self.body.locals.push(Local { name: name.clone(), range, scope: *scope });
        let local = (self.body.locals.len() - 1) as LocalId;
        names.insert(name, local);
        local
    }

    /// Where a call of `name` as a statement sends its arguments: `print` always; a chart
    /// function where the name means the prelude's (a user's own `def image` shadows it).
    fn output_sink(&self, name: &str) -> Option<Sink> {
        let sink = Sink::from_name(name)?;
        let prelude = matches!(self.resolve(&identifier_key(name)), Expr::Prelude(_));
        (sink == Sink::Text || prelude).then_some(sink)
    }

    fn resolve(&self, name: &str) -> Expr {
        for (_, names) in self.scopes.iter().rev() {
            if let Some(&local) = names.get(name) {
                return Expr::Local(local);
            }
        }
        if self.top_level.contains(name) {
            Expr::Global(name.to_string())
        } else if is_prelude_name(name) {
            Expr::Prelude(name.to_string())
        } else {
            Expr::Missing
        }
    }

    fn lower_function_def(&mut self, def: &SyntaxNode) {
        let Some(def) = ast::FunctionDef::cast(def.clone()) else { return };
        self.body.name_range = def.name().map_or(def.syntax().text_range(), |n| n.syntax().text_range());
        let statements: Vec<SyntaxNode> = def
            .body()
            .map(|b| b.syntax().children().filter(|n| ast::is_statement(n.kind())).collect())
            .unwrap_or_default();
        self.open_scope();
        self.body.params = self.lower_params(def.param_list());
        self.body.ret_annotation = def.ret_type().map(|t| self.lower_type(t.syntax()));
        self.declare_bound(&statements);
        self.body.root = self.lower_block(&statements);
        self.scopes.pop();
    }

    fn declare_bound(&mut self, statements: &[SyntaxNode]) {
        let mut bound = Vec::new();
        for statement in statements {
            collect_bound_names(statement, &mut bound);
        }
        for (name, range) in bound {
            self.declare(name, range);
        }
    }

    fn lower_params(&mut self, list: Option<ast::ParamList>) -> Vec<Param> {
        let mut params = Vec::new();
        for param in list.into_iter().flat_map(|l| l.params()) {
            let Some(name) = param.name() else { continue };
            let local = self.declare(name.text(), name.syntax().text_range());
            let annotation = param.annotation().map(|a| self.lower_type(a.syntax()));
            params.push(Param { local, annotation });
        }
        params
    }

    fn lower_type(&mut self, node: &SyntaxNode) -> TypeRef {
        let range = node.text_range();
        match node.kind() {
            NAME_REF => {
                let name = name_text(node);
                if let Some(scalar) = Scalar::from_name(&name) {
                    TypeRef::Scalar(scalar, range)
                } else if name.len() == 1 && name.chars().all(|c| c.is_ascii_lowercase()) {
                    TypeRef::Var(name, range)
                } else {
                    self.body.diagnostics.push(
                        Diagnostic::new(Code::UnknownName, range, format!("unknown type `{name}`"))
                            .with_help("the types are bool, i32, i64, f32, f64, [T], (T1, T2, ...) and type variables a, b, ..."),
                    );
                    TypeRef::Error(range)
                }
            }
            LIST_EXPR => {
                let items: Vec<SyntaxNode> = expr_nodes(node).collect();
                match items.as_slice() {
                    [elem] => TypeRef::Seq(Box::new(self.lower_type(elem)), range),
                    _ => self.type_error(range),
                }
            }
            TUPLE_EXPR => {
                let items: Vec<SyntaxNode> = expr_nodes(node).collect();
                TypeRef::Tuple(items.iter().map(|n| self.lower_type(n)).collect(), range)
            }
            PAREN_EXPR => match expr_nodes(node).next() {
                Some(inner) => self.lower_type(&inner),
                None => self.type_error(range),
            },
            _ => self.type_error(range),
        }
    }

    fn type_error(&mut self, range: TextRange) -> TypeRef {
        self.body.diagnostics.push(
            Diagnostic::new(Code::UnknownName, range, "this is not a type")
                .with_help("write a type such as `f32`, `[i32]` or `(i32, f32)`"),
        );
        TypeRef::Error(range)
    }

    fn lower_block(&mut self, statements: &[SyntaxNode]) -> Block {
        statements.iter().filter_map(|s| self.lower_stmt(s)).collect()
    }

    fn lower_block_node(&mut self, block: Option<ast::Block>) -> Block {
        let statements: Vec<SyntaxNode> = block
            .map(|b| b.syntax().children().filter(|n| ast::is_statement(n.kind())).collect())
            .unwrap_or_default();
        self.lower_block(&statements)
    }

    fn lower_stmt(&mut self, node: &SyntaxNode) -> Option<StmtId> {
        let range = node.text_range();
        let stmt = match ast::Stmt::cast(node.clone())? {
            ast::Stmt::FunctionDef(def) => {
                let name = def.name()?;
                let local = self.resolve_local(&name.text())?;
                let lambda = self.lower_nested_def(&def);
                Stmt::Def { local, lambda }
            }
            ast::Stmt::Assign(assign) => {
                let value = self.lower_opt_expr(assign.value(), range);
                let targets = assign.targets().map(|t| self.lower_pattern(t.syntax())).collect();
                Stmt::Assign { targets, value }
            }
            ast::Stmt::AugAssign(aug) => {
                let target = aug.target()?;
                let op = aug_op(node)?;
                let read = self.lower_expr(target.syntax());
                let rhs = self.lower_opt_expr(aug.value(), range);
                let value = self.alloc_expr(Expr::Binary { op, lhs: read, rhs }, range);
                Stmt::Assign { targets: vec![self.lower_pattern(target.syntax())], value }
            }
            ast::Stmt::Return(ret) => Stmt::Return(ret.value().map(|v| self.lower_expr(v.syntax()))),
            ast::Stmt::If(if_stmt) => self.lower_if(&if_stmt),
            ast::Stmt::For(for_stmt) => {
                let iterable = self.lower_opt_expr(for_stmt.iterable(), range);
                let pattern = match for_stmt.target() {
                    Some(t) => self.lower_pattern(t.syntax()),
                    None => Pattern::Invalid(range),
                };
                let body = self.lower_block_node(for_stmt.body());
                Stmt::For { pattern, iterable, body }
            }
            ast::Stmt::While(while_stmt) => {
                let cond = self.lower_opt_expr(while_stmt.condition(), range);
                let body = self.lower_block_node(while_stmt.body());
                Stmt::While { cond, body }
            }
            ast::Stmt::Assert(assert) => {
                let cond = self.lower_opt_expr(assert.condition(), range);
                let message = assert.message().and_then(|m| string_literal(m.syntax()));
                Stmt::Assert { cond, message }
            }
            ast::Stmt::Expr(expr_stmt) => {
                let expr = expr_stmt.expr()?;
                if let Some(call) = expr.as_call()
                    && let Some(sink) =
                        call.callee().and_then(|c| c.as_name_ref()).and_then(|n| self.output_sink(&n.text()))
                {
                    if sink != Sink::Text && self.in_function {
                        let name = sink.name();
                        self.body.diagnostics.push(
                            Diagnostic::new(
                                Code::PrintInFunction,
                                range,
                                format!("`{name}` is not allowed inside a function"),
                            )
                            .with_note(format!("functions are pure so that they can run in parallel on the GPU; `{name}` is a top-level statement"))
                            .with_help(format!("return the values, and call `{name}` with them at the top level")),
                        );
                    }
                    let args = call.arg_list().into_iter().flat_map(|a| a.args()).collect::<Vec<_>>();
                    let args = args.iter().map(|a| self.lower_expr(a)).collect();
                    Stmt::Print { sink, args }
                } else {
                    Stmt::Expr(self.lower_expr(expr.syntax()))
                }
            }
            ast::Stmt::Other(_) => return None,
        };
        Some(self.alloc_stmt(stmt, range))
    }

    fn lower_if(&mut self, if_stmt: &ast::IfStmt) -> Stmt {
        let range = if_stmt.syntax().text_range();
        let cond = self.lower_opt_expr(if_stmt.condition(), range);
        let then = self.lower_block_node(if_stmt.then_block());
        // `elif` chains become nested `if`s in the `else` branch.
        let elifs: Vec<ast::ElifClause> = if_stmt.elif_clauses().collect();
        let mut otherwise = self.lower_block_node(if_stmt.else_clause().and_then(|e| e.block()));
        for elif in elifs.iter().rev() {
            let elif_range = TextRange::new(elif.syntax().text_range().start(), range.end());
            let cond = self.lower_opt_expr(elif.condition(), elif_range);
            let then = self.lower_block_node(elif.block());
            otherwise = vec![self.alloc_stmt(Stmt::If { cond, then, otherwise }, elif_range)];
        }
        Stmt::If { cond, then, otherwise }
    }

    fn lower_nested_def(&mut self, def: &ast::FunctionDef) -> LambdaId {
        let statements: Vec<SyntaxNode> = def
            .body()
            .map(|b| b.syntax().children().filter(|n| ast::is_statement(n.kind())).collect())
            .unwrap_or_default();
        let scope = self.open_scope();
        let params = self.lower_params(def.param_list());
        let ret_annotation = def.ret_type().map(|t| self.lower_type(t.syntax()));
        self.declare_bound(&statements);
        let body = LambdaBody::Block(self.lower_block(&statements));
        self.scopes.pop();
        let name = def.name().map(|n| n.text());
        let range = def.name().map_or(def.syntax().text_range(), |n| n.syntax().text_range());
        self.body.lambdas.push(Lambda { name, scope, params, ret_annotation, body, range });
        (self.body.lambdas.len() - 1) as LambdaId
    }

    fn resolve_local(&self, name: &str) -> Option<LocalId> {
        match self.resolve(name) {
            Expr::Local(local) => Some(local),
            _ => None,
        }
    }

    fn lower_pattern(&mut self, node: &SyntaxNode) -> Pattern {
        let range = node.text_range();
        match node.kind() {
            NAME_REF => {
                let name = name_text(node);
                match self.resolve_local(&name) {
                    Some(local) => Pattern::Bind(local, range),
                    None => Pattern::Invalid(range),
                }
            }
            TUPLE_EXPR | LIST_EXPR => {
                let items: Vec<SyntaxNode> = expr_nodes(node).collect();
                Pattern::Tuple(items.iter().map(|n| self.lower_pattern(n)).collect(), range)
            }
            PAREN_EXPR => match expr_nodes(node).next() {
                Some(inner) => self.lower_pattern(&inner),
                None => Pattern::Invalid(range),
            },
            _ => Pattern::Invalid(range),
        }
    }

    fn lower_opt_expr(&mut self, expr: Option<ast::Expr>, range: TextRange) -> ExprId {
        match expr {
            Some(expr) => self.lower_expr(expr.syntax()),
            None => self.alloc_expr(Expr::Missing, range),
        }
    }

    fn lower_expr(&mut self, node: &SyntaxNode) -> ExprId {
        let range = node.text_range();
        let expr = weft_core::ensure_stack(|| self.expr_of(node));
        self.alloc_expr(expr, range)
    }

    fn children(&mut self, node: &SyntaxNode) -> Vec<ExprId> {
        let nodes: Vec<SyntaxNode> = expr_nodes(node).collect();
        nodes.iter().map(|n| self.lower_expr(n)).collect()
    }

    fn expr_of(&mut self, node: &SyntaxNode) -> Expr {
        match node.kind() {
            NAME_REF => match node.first_token() {
                Some(token) => self.resolve(&identifier_key(token.text())),
                None => Expr::Missing,
            },
            LITERAL => match literal(node) {
                Some(literal) => Expr::Literal(literal),
                None => {
                    if node.first_token().is_some_and(|t| t.kind() == INT_NUMBER) {
                        self.body.diagnostics.push(
                            Diagnostic::new(
                                Code::LiteralOutOfRange,
                                node.text_range(),
                                "this integer does not fit in 64 bits",
                            )
                            .with_help("Weft's widest integer type is i64; write a float (`9.3e18`) if you need the magnitude"),
                        );
                    }
                    Expr::Missing
                }
            },
            PAREN_EXPR => match expr_nodes(node).next() {
                Some(inner) => self.expr_of(&inner),
                None => Expr::Missing,
            },
            TUPLE_EXPR => Expr::Tuple(self.children(node)),
            LIST_EXPR => Expr::List(self.children(node)),
            INDEX_EXPR => {
                let parts: Vec<SyntaxNode> =
                    node.children().filter(|n| is_expression(n.kind()) || n.kind() == SLICE).collect();
                let Some(base) = parts.first() else { return Expr::Missing };
                let base = self.lower_expr(base);
                match parts.get(1) {
                    Some(slice) if slice.kind() == SLICE => self.lower_slice(base, slice),
                    Some(index) => Expr::Index { base, index: self.lower_expr(index) },
                    None => Expr::Missing,
                }
            }
            BIN_EXPR => {
                let operands = self.children(node);
                let op = node
                    .children_with_tokens()
                    .filter_map(|t| t.into_token())
                    .find_map(|t| binary_op(t.kind()));
                match (operands.as_slice(), op) {
                    ([lhs, rhs], Some(op)) => Expr::Binary { op, lhs: *lhs, rhs: *rhs },
                    _ => Expr::Missing,
                }
            }
            BOOL_EXPR => {
                let operands = self.children(node);
                let is_and = node.children_with_tokens().any(|t| t.kind() == AND_KW);
                match operands.as_slice() {
                    [lhs, rhs] if is_and => Expr::And(*lhs, *rhs),
                    [lhs, rhs] => Expr::Or(*lhs, *rhs),
                    _ => Expr::Missing,
                }
            }
            PREFIX_EXPR => {
                let op =
                    node.children_with_tokens().filter_map(|t| t.into_token()).find_map(|t| match t.kind() {
                        MINUS => Some(UnaryOp::Neg),
                        PLUS => Some(UnaryOp::Pos),
                        NOT_KW => Some(UnaryOp::Not),
                        TILDE => Some(UnaryOp::Invert),
                        _ => None,
                    });
                match (self.children(node).as_slice(), op) {
                    ([operand], Some(op)) => Expr::Unary { op, operand: *operand },
                    _ => Expr::Missing,
                }
            }
            COMPARE_EXPR => {
                let operands = self.children(node);
                let ops: Vec<BinaryOp> = node
                    .children()
                    .filter(|n| n.kind() == COMPARE_OP)
                    .map(|op| compare_op(&op).unwrap_or(BinaryOp::Eq))
                    .collect();
                if ops.len() + 1 != operands.len() || ops.is_empty() {
                    return Expr::Missing;
                }
                Expr::Compare { operands, ops }
            }
            COND_EXPR => match self.children(node).as_slice() {
                [then, cond, otherwise] => Expr::If { cond: *cond, then: *then, otherwise: *otherwise },
                _ => Expr::Missing,
            },
            CALL_EXPR => {
                let Some(call) = ast::CallExpr::cast(node.clone()) else { return Expr::Missing };
                let Some(callee) = call.callee() else { return Expr::Missing };
                let callee = self.lower_expr(callee.syntax());
                let args: Vec<SyntaxNode> = call.arg_list().into_iter().flat_map(|a| a.args()).collect();
                let args = args.iter().map(|a| self.lower_expr(a)).collect();
                Expr::Call { callee, args }
            }
            LAMBDA_EXPR => {
                let Some(lambda) = ast::LambdaExpr::cast(node.clone()) else { return Expr::Missing };
                let scope = self.open_scope();
                let params = self.lower_params(lambda.param_list());
                let body = self.lower_opt_expr(lambda.body(), node.text_range());
                self.scopes.pop();
                self.body.lambdas.push(Lambda {
                    name: None,
                    scope,
                    params,
                    ret_annotation: None,
                    body: LambdaBody::Expr(body),
                    range: node.text_range(),
                });
                Expr::Lambda((self.body.lambdas.len() - 1) as LambdaId)
            }
            LIST_COMP => self.lower_comprehension(node),
            _ => Expr::Missing,
        }
    }

    fn lower_slice(&mut self, base: ExprId, slice: &SyntaxNode) -> Expr {
        // Parts are separated by colons; any may be empty.
        let mut parts: [Option<ExprId>; 3] = [None; 3];
        let mut position = 0;
        for element in slice.children_with_tokens() {
            match element {
                rowan::NodeOrToken::Token(t) if t.kind() == COLON => position += 1,
                rowan::NodeOrToken::Node(n) if is_expression(n.kind()) && position < 3 => {
                    parts[position] = Some(self.lower_expr(&n))
                }
                _ => {}
            }
        }
        Expr::Slice { base, start: parts[0], stop: parts[1], step: parts[2] }
    }

    fn lower_comprehension(&mut self, node: &SyntaxNode) -> Expr {
        let Some(element_node) = node.children().find(|n| is_expression(n.kind())) else {
            return Expr::Missing;
        };
        let mut clauses = Vec::new();
        let depth = self.scopes.len();
        for clause in node.children().filter(|n| matches!(n.kind(), COMP_FOR | COMP_IF)) {
            let parts: Vec<SyntaxNode> = expr_nodes(&clause).collect();
            if clause.kind() == COMP_IF {
                let cond = match parts.first() {
                    Some(c) => self.lower_expr(c),
                    None => self.alloc_expr(Expr::Missing, clause.text_range()),
                };
                clauses.push(Clause::If(cond));
                continue;
            }
            // The iterable is read before the clause's own variables exist.
            let iterable = match parts.get(1) {
                Some(it) => self.lower_expr(it),
                None => self.alloc_expr(Expr::Missing, clause.text_range()),
            };
            let scope = self.open_scope();
            let pattern = match parts.first() {
                Some(target) => {
                    let mut bound = Vec::new();
                    collect_target_names(target, &mut bound);
                    for (name, range) in bound {
                        self.declare(name, range);
                    }
                    self.lower_pattern(target)
                }
                None => Pattern::Invalid(clause.text_range()),
            };
            clauses.push(Clause::For { pattern, iterable, scope });
        }
        let element = self.lower_expr(&element_node);
        self.scopes.truncate(depth);
        Expr::Comprehension { element, clauses }
    }
}

/// A `NAME_REF`'s name, normalised as Python compares names.
fn name_text(node: &SyntaxNode) -> String {
    node.first_token().map(|t| identifier_key(t.text())).unwrap_or_default()
}

fn expr_nodes(node: &SyntaxNode) -> impl Iterator<Item = SyntaxNode> + use<> {
    node.children().filter(|n| is_expression(n.kind()))
}

/// Names a statement binds in its own scope, with where: assignment and `for` targets, and
/// `def`s (not the names inside nested functions, lambdas or comprehensions).
pub fn statement_bindings(node: &SyntaxNode) -> Vec<(String, TextRange)> {
    let mut out = Vec::new();
    collect_bound_names(node, &mut out);
    out
}

fn collect_bound_names(node: &SyntaxNode, out: &mut Vec<(String, TextRange)>) {
    match node.kind() {
        FUNCTION_DEF => {
            if let Some(name) = ast::FunctionDef::cast(node.clone()).and_then(|d| d.name()) {
                out.push((name.text(), name.syntax().text_range()));
            }
        }
        ASSIGN_STMT | AUG_ASSIGN_STMT | FOR_STMT => {
            for target in ast::targets(node) {
                collect_target_names(&target, out);
            }
            for child in node.children().filter(|c| c.kind() == BLOCK) {
                child.children().for_each(|s| collect_bound_names(&s, out));
            }
        }
        IF_STMT | WHILE_STMT | ELIF_CLAUSE | ELSE_CLAUSE | BLOCK => {
            node.children().for_each(|c| collect_bound_names(&c, out));
        }
        _ => {}
    }
}

fn collect_target_names(node: &SyntaxNode, out: &mut Vec<(String, TextRange)>) {
    match node.kind() {
        NAME_REF => out.push((name_text(node), node.text_range())),
        TUPLE_EXPR | LIST_EXPR | PAREN_EXPR => expr_nodes(node).for_each(|n| collect_target_names(&n, out)),
        _ => {}
    }
}

fn binary_op(kind: SyntaxKind) -> Option<BinaryOp> {
    Some(match kind {
        PLUS => BinaryOp::Add,
        MINUS => BinaryOp::Sub,
        STAR => BinaryOp::Mul,
        SLASH => BinaryOp::Div,
        SLASH2 => BinaryOp::FloorDiv,
        PERCENT => BinaryOp::Mod,
        STAR2 => BinaryOp::Pow,
        AMP => BinaryOp::BitAnd,
        PIPE => BinaryOp::BitOr,
        CARET => BinaryOp::BitXor,
        SHL => BinaryOp::Shl,
        SHR => BinaryOp::Shr,
        _ => return None,
    })
}

fn compare_op(node: &SyntaxNode) -> Option<BinaryOp> {
    let token = node.first_token()?;
    Some(match token.kind() {
        EQ2 => BinaryOp::Eq,
        NEQ => BinaryOp::Ne,
        LT => BinaryOp::Lt,
        LTEQ => BinaryOp::Le,
        GT => BinaryOp::Gt,
        GTEQ => BinaryOp::Ge,
        _ => return None,
    })
}

fn aug_op(node: &SyntaxNode) -> Option<BinaryOp> {
    let token =
        node.children_with_tokens().filter_map(|t| t.into_token()).find(|t| t.kind() == AUG_ASSIGN)?;
    let symbol = token.text().strip_suffix('=')?;
    Some(match symbol {
        "+" => BinaryOp::Add,
        "-" => BinaryOp::Sub,
        "*" => BinaryOp::Mul,
        "/" => BinaryOp::Div,
        "//" => BinaryOp::FloorDiv,
        "%" => BinaryOp::Mod,
        "**" => BinaryOp::Pow,
        "&" => BinaryOp::BitAnd,
        "|" => BinaryOp::BitOr,
        "^" => BinaryOp::BitXor,
        "<<" => BinaryOp::Shl,
        ">>" => BinaryOp::Shr,
        _ => return None,
    })
}

fn literal(node: &SyntaxNode) -> Option<Literal> {
    let tokens: Vec<SyntaxToken> = node
        .children_with_tokens()
        .filter_map(|t| t.into_token())
        .filter(|t| !t.kind().is_trivia())
        .collect();
    let first = tokens.first()?;
    match first.kind() {
        TRUE_KW => Some(Literal::Bool(true)),
        FALSE_KW => Some(Literal::Bool(false)),
        INT_NUMBER => parse_int(first.text()).map(Literal::Int),
        FLOAT_NUMBER => {
            first.text().replace('_', "").parse::<f64>().ok().map(|x| Literal::Float(x.to_bits()))
        }
        STRING => string_literal(node).map(Literal::Str),
        _ => None,
    }
}

/// Python integer literal text (`1_000`, `0x1F`, `0o17`, `0b101`), or `None` beyond `i64`.
pub fn parse_int(text: &str) -> Option<i64> {
    let digits = text.replace('_', "");
    let lower = digits.to_ascii_lowercase();
    let (radix, body) = match lower.get(..2) {
        Some("0x") => (16, &lower[2..]),
        Some("0o") => (8, &lower[2..]),
        Some("0b") => (2, &lower[2..]),
        _ => (10, lower.as_str()),
    };
    i64::from_str_radix(body, radix).ok()
}

/// The text of a string literal (adjacent literals concatenated), with common escapes decoded.
pub fn string_literal(node: &SyntaxNode) -> Option<String> {
    let mut text = String::new();
    let mut any = false;
    for token in node.descendants_with_tokens().filter_map(|t| t.into_token()).filter(|t| t.kind() == STRING)
    {
        any = true;
        text.push_str(&decode_string(token.text()));
    }
    any.then_some(text)
}

fn decode_string(raw: &str) -> String {
    let prefix_len = raw.find(['\'', '"']).unwrap_or(0);
    let is_raw = raw[..prefix_len].to_ascii_lowercase().contains('r');
    let rest = &raw[prefix_len..];
    let quote = if rest.starts_with("\"\"\"") || rest.starts_with("'''") { 3 } else { 1 };
    let inner = rest.get(quote..rest.len().saturating_sub(quote)).unwrap_or("");
    if is_raw {
        return inner.to_string();
    }
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('0') => out.push('\0'),
            Some('\\') => out.push('\\'),
            Some('\'') => out.push('\''),
            Some('"') => out.push('"'),
            Some('\n') => {}
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}
