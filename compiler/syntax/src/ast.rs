//! Typed views over the untyped syntax tree, in rust-analyzer's style.
//!
//! A view is a `SyntaxNode` whose kind has been checked. Accessors return `Option` because any
//! piece may be missing in broken code; they never panic. The statement and expression enums
//! cover the Weft subset and put everything the subset rejects in `Other`.

use super::{SyntaxKind, SyntaxKind::*, SyntaxNode, SyntaxToken};

pub trait AstNode: Sized {
    fn cast(node: SyntaxNode) -> Option<Self>;
    fn syntax(&self) -> &SyntaxNode;
}

macro_rules! ast_node {
    ($(#[$doc:meta])* $name:ident, $kind:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub struct $name {
            pub(crate) syntax: SyntaxNode,
        }

        impl AstNode for $name {
            fn cast(node: SyntaxNode) -> Option<Self> {
                (node.kind() == $kind).then_some(Self { syntax: node })
            }

            fn syntax(&self) -> &SyntaxNode {
                &self.syntax
            }
        }
    };
}

ast_node!(SourceFile, SOURCE_FILE);
ast_node!(FunctionDef, FUNCTION_DEF);
ast_node!(ParamList, PARAM_LIST);

/// A parameter: `x`, `x: T`, or a rejected `*args`/`**kwargs`, which still binds its name so that
/// its uses are not reported as unknown.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Param {
    pub(crate) syntax: SyntaxNode,
}

impl AstNode for Param {
    fn cast(node: SyntaxNode) -> Option<Self> {
        matches!(node.kind(), PARAM | STAR_PARAM).then_some(Self { syntax: node })
    }

    fn syntax(&self) -> &SyntaxNode {
        &self.syntax
    }
}
ast_node!(Block, BLOCK);
ast_node!(Name, NAME);
ast_node!(NameRef, NAME_REF);
ast_node!(AssignStmt, ASSIGN_STMT);
ast_node!(AugAssignStmt, AUG_ASSIGN_STMT);
ast_node!(ReturnStmt, RETURN_STMT);
ast_node!(IfStmt, IF_STMT);
ast_node!(ElifClause, ELIF_CLAUSE);
ast_node!(ElseClause, ELSE_CLAUSE);
ast_node!(ForStmt, FOR_STMT);
ast_node!(WhileStmt, WHILE_STMT);
ast_node!(AssertStmt, ASSERT_STMT);
ast_node!(ExprStmt, EXPR_STMT);
ast_node!(LambdaExpr, LAMBDA_EXPR);
ast_node!(
    /// One `for target in iterable` clause of a comprehension.
    CompFor,
    COMP_FOR
);
ast_node!(CallExpr, CALL_EXPR);
ast_node!(ArgList, ARG_LIST);

fn child<N: AstNode>(node: &SyntaxNode) -> Option<N> {
    node.children().find_map(N::cast)
}

fn children<N: AstNode>(node: &SyntaxNode) -> impl Iterator<Item = N> + use<N> {
    node.children().filter_map(N::cast)
}

/// Children that are expressions (or holes where one was expected).
fn expr_children(node: &SyntaxNode) -> impl Iterator<Item = Expr> + use<> {
    node.children().filter_map(Expr::cast)
}

impl SourceFile {
    pub fn statements(&self) -> impl Iterator<Item = Stmt> + use<> {
        self.syntax.children().filter_map(Stmt::cast)
    }

    pub fn functions(&self) -> impl Iterator<Item = FunctionDef> + use<> {
        children(&self.syntax)
    }
}

impl FunctionDef {
    pub fn name(&self) -> Option<Name> {
        child(&self.syntax)
    }

    pub fn param_list(&self) -> Option<ParamList> {
        child(&self.syntax)
    }

    /// The annotation after `->`.
    pub fn ret_type(&self) -> Option<Expr> {
        let ret = self.syntax.children().find(|n| n.kind() == RET_TYPE)?;
        expr_children(&ret).next()
    }

    pub fn body(&self) -> Option<Block> {
        child(&self.syntax)
    }
}

impl ParamList {
    pub fn params(&self) -> impl Iterator<Item = Param> + use<> {
        children(&self.syntax)
    }
}

impl Param {
    pub fn name(&self) -> Option<Name> {
        child(&self.syntax)
    }

    pub fn annotation(&self) -> Option<Expr> {
        let annotation = self.syntax.children().find(|n| n.kind() == TYPE_ANNOTATION)?;
        expr_children(&annotation).next()
    }
}

impl Block {
    pub fn statements(&self) -> impl Iterator<Item = Stmt> + use<> {
        self.syntax.children().filter_map(Stmt::cast)
    }
}

impl Name {
    pub fn ident(&self) -> Option<SyntaxToken> {
        self.syntax.first_token().filter(|t| t.kind() == IDENT)
    }

    /// The name, NFKC-normalised as Python compares names.
    pub fn text(&self) -> String {
        self.ident().map(|t| super::identifier_key(t.text())).unwrap_or_default()
    }
}

impl NameRef {
    /// The name, NFKC-normalised as Python compares names.
    pub fn text(&self) -> String {
        self.syntax.first_token().map(|t| super::identifier_key(t.text())).unwrap_or_default()
    }
}

impl AssignStmt {
    /// Every expression but the last: `a = b = e` has targets `a` and `b`.
    pub fn targets(&self) -> impl Iterator<Item = Expr> + use<> {
        let mut exprs: Vec<Expr> = expr_children(&self.syntax).collect();
        exprs.pop();
        exprs.into_iter()
    }

    pub fn value(&self) -> Option<Expr> {
        expr_children(&self.syntax).last()
    }
}

impl AugAssignStmt {
    pub fn target(&self) -> Option<Expr> {
        expr_children(&self.syntax).next()
    }

    pub fn value(&self) -> Option<Expr> {
        expr_children(&self.syntax).nth(1)
    }
}

impl ReturnStmt {
    pub fn value(&self) -> Option<Expr> {
        expr_children(&self.syntax).next()
    }
}

impl IfStmt {
    pub fn condition(&self) -> Option<Expr> {
        expr_children(&self.syntax).next()
    }

    pub fn then_block(&self) -> Option<Block> {
        child(&self.syntax)
    }

    pub fn elif_clauses(&self) -> impl Iterator<Item = ElifClause> + use<> {
        children(&self.syntax)
    }

    pub fn else_clause(&self) -> Option<ElseClause> {
        child(&self.syntax)
    }
}

impl ElifClause {
    pub fn condition(&self) -> Option<Expr> {
        expr_children(&self.syntax).next()
    }

    pub fn block(&self) -> Option<Block> {
        child(&self.syntax)
    }
}

impl ElseClause {
    pub fn block(&self) -> Option<Block> {
        child(&self.syntax)
    }
}

impl ForStmt {
    pub fn target(&self) -> Option<Expr> {
        expr_children(&self.syntax).next()
    }

    pub fn iterable(&self) -> Option<Expr> {
        expr_children(&self.syntax).nth(1)
    }

    pub fn body(&self) -> Option<Block> {
        child(&self.syntax)
    }
}

impl WhileStmt {
    pub fn condition(&self) -> Option<Expr> {
        expr_children(&self.syntax).next()
    }

    pub fn body(&self) -> Option<Block> {
        child(&self.syntax)
    }
}

impl AssertStmt {
    pub fn condition(&self) -> Option<Expr> {
        expr_children(&self.syntax).next()
    }

    pub fn message(&self) -> Option<Expr> {
        expr_children(&self.syntax).nth(1)
    }
}

impl ExprStmt {
    pub fn expr(&self) -> Option<Expr> {
        expr_children(&self.syntax).next()
    }
}

impl LambdaExpr {
    pub fn param_list(&self) -> Option<ParamList> {
        child(&self.syntax)
    }

    pub fn body(&self) -> Option<Expr> {
        expr_children(&self.syntax).next()
    }
}

impl CompFor {
    pub fn target(&self) -> Option<Expr> {
        expr_children(&self.syntax).next()
    }

    pub fn iterable(&self) -> Option<Expr> {
        expr_children(&self.syntax).nth(1)
    }
}

impl CallExpr {
    pub fn callee(&self) -> Option<Expr> {
        expr_children(&self.syntax).next()
    }

    pub fn arg_list(&self) -> Option<ArgList> {
        child(&self.syntax)
    }
}

impl ArgList {
    /// Positional arguments; keyword and star arguments are `Other` expressions.
    pub fn args(&self) -> impl Iterator<Item = SyntaxNode> + use<> {
        self.syntax.children()
    }
}

/// A statement of the Weft subset, or `Other` for one it rejects.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Stmt {
    FunctionDef(FunctionDef),
    Assign(AssignStmt),
    AugAssign(AugAssignStmt),
    Return(ReturnStmt),
    If(IfStmt),
    For(ForStmt),
    While(WhileStmt),
    Assert(AssertStmt),
    Expr(ExprStmt),
    Other(SyntaxNode),
}

impl Stmt {
    pub fn cast(node: SyntaxNode) -> Option<Stmt> {
        let stmt = match node.kind() {
            FUNCTION_DEF => Stmt::FunctionDef(FunctionDef { syntax: node }),
            ASSIGN_STMT => Stmt::Assign(AssignStmt { syntax: node }),
            AUG_ASSIGN_STMT => Stmt::AugAssign(AugAssignStmt { syntax: node }),
            RETURN_STMT => Stmt::Return(ReturnStmt { syntax: node }),
            IF_STMT => Stmt::If(IfStmt { syntax: node }),
            FOR_STMT => Stmt::For(ForStmt { syntax: node }),
            WHILE_STMT => Stmt::While(WhileStmt { syntax: node }),
            ASSERT_STMT => Stmt::Assert(AssertStmt { syntax: node }),
            EXPR_STMT => Stmt::Expr(ExprStmt { syntax: node }),
            kind if is_statement(kind) => Stmt::Other(node),
            _ => return None,
        };
        Some(stmt)
    }

    pub fn syntax(&self) -> &SyntaxNode {
        match self {
            Stmt::FunctionDef(it) => &it.syntax,
            Stmt::Assign(it) => &it.syntax,
            Stmt::AugAssign(it) => &it.syntax,
            Stmt::Return(it) => &it.syntax,
            Stmt::If(it) => &it.syntax,
            Stmt::For(it) => &it.syntax,
            Stmt::While(it) => &it.syntax,
            Stmt::Assert(it) => &it.syntax,
            Stmt::Expr(it) => &it.syntax,
            Stmt::Other(node) => node,
        }
    }
}

/// The targets a binding node assigns to: every expression but the last of an `x = y = e`, or the
/// first expression of an augmented assignment, a `for` statement or a comprehension clause.
pub fn targets(node: &SyntaxNode) -> Vec<SyntaxNode> {
    let mut exprs: Vec<SyntaxNode> = node.children().filter(|n| is_expression(n.kind())).collect();
    match node.kind() {
        ASSIGN_STMT => {
            exprs.pop();
        }
        AUG_ASSIGN_STMT | FOR_STMT | COMP_FOR => exprs.truncate(1),
        _ => exprs.clear(),
    }
    exprs
}

/// Rejected statements reported once, as a whole: later passes do not look inside them.
pub fn is_rejected_block(kind: SyntaxKind) -> bool {
    matches!(kind, CLASS_DEF | TRY_STMT | WITH_STMT | IMPORT_STMT | MATCH_STMT)
}

pub fn is_statement(kind: SyntaxKind) -> bool {
    matches!(
        kind,
        FUNCTION_DEF
            | CLASS_DEF
            | DECORATOR
            | EXPR_STMT
            | ASSIGN_STMT
            | AUG_ASSIGN_STMT
            | ANN_ASSIGN_STMT
            | RETURN_STMT
            | IF_STMT
            | FOR_STMT
            | WHILE_STMT
            | ASSERT_STMT
            | PASS_STMT
            | BREAK_STMT
            | CONTINUE_STMT
            | IMPORT_STMT
            | GLOBAL_STMT
            | NONLOCAL_STMT
            | DEL_STMT
            | RAISE_STMT
            | TRY_STMT
            | WITH_STMT
            | ASYNC_STMT
            | MATCH_STMT
            | ERROR
    )
}

/// An expression node. The kind says which; the typed views above cover the ones later passes
/// take apart.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Expr {
    syntax: SyntaxNode,
}

impl Expr {
    pub fn cast(node: SyntaxNode) -> Option<Expr> {
        is_expression(node.kind()).then_some(Expr { syntax: node })
    }

    pub fn syntax(&self) -> &SyntaxNode {
        &self.syntax
    }

    pub fn kind(&self) -> SyntaxKind {
        self.syntax.kind()
    }

    pub fn is_missing(&self) -> bool {
        self.kind() == MISSING
    }

    pub fn as_name_ref(&self) -> Option<NameRef> {
        NameRef::cast(self.syntax.clone())
    }

    pub fn as_call(&self) -> Option<CallExpr> {
        CallExpr::cast(self.syntax.clone())
    }

    pub fn as_lambda(&self) -> Option<LambdaExpr> {
        LambdaExpr::cast(self.syntax.clone())
    }
}

pub fn is_expression(kind: SyntaxKind) -> bool {
    matches!(
        kind,
        NAME_REF
            | LITERAL
            | PAREN_EXPR
            | TUPLE_EXPR
            | LIST_EXPR
            | LIST_COMP
            | GENERATOR_EXP
            | DICT_EXPR
            | SET_EXPR
            | DICT_COMP
            | SET_COMP
            | BIN_EXPR
            | BOOL_EXPR
            | PREFIX_EXPR
            | COMPARE_EXPR
            | COND_EXPR
            | LAMBDA_EXPR
            | CALL_EXPR
            | STAR_EXPR
            | INDEX_EXPR
            | SLICE
            | ATTR_EXPR
            | NAMED_EXPR
            | YIELD_EXPR
            | AWAIT_EXPR
            | MISSING
    )
}
