//! Control-flow checks on the HIR: every path of a function returns (E0205), and every read of
//! a local is preceded by a binding on every path that reaches it (E0204).
//!
//! A loop may run zero times, so a name first bound in a loop body is not bound after the loop.
//! Reads inside a `lambda` or nested `def` of an enclosing local are not checked: they happen
//! when the closure is called (Python's late binding).

use rowan::TextRange;

use crate::hir::{Block, Body, Expr, ExprId, LambdaBody, LocalId, ScopeId, Stmt};
use weft_syntax::diagnostics::{Code, Diagnostic};

/// Checks a function body and the nested functions in it.
pub fn check_function(body: &Body, diagnostics: &mut Vec<Diagnostic>) {
    check_returns(body, &body.root, body.name_range, &body.name, diagnostics);
    let params: Vec<LocalId> = body.params.iter().map(|p| p.local).collect();
    check_bindings(body, 0, &body.root, &params, false, diagnostics);
    check_lambdas(body, diagnostics);
}

/// Checks the top-level statements and the closures defined among them. Reads before any
/// binding are `names`' to report (E0200); this reports reads bound only on some paths.
pub fn check_top_level(body: &Body, diagnostics: &mut Vec<Diagnostic>) {
    check_bindings(body, 0, &body.root, &[], true, diagnostics);
    check_lambdas(body, diagnostics);
}

fn check_lambdas(body: &Body, diagnostics: &mut Vec<Diagnostic>) {
    for lambda in &body.lambdas {
        if let LambdaBody::Block(block) = &lambda.body {
            let name = lambda.name.clone().unwrap_or_default();
            check_returns(body, block, lambda.range, &name, diagnostics);
            let params: Vec<LocalId> = lambda.params.iter().map(|p| p.local).collect();
            check_bindings(body, lambda.scope, block, &params, false, diagnostics);
        }
    }
}

fn check_returns(
    body: &Body,
    block: &Block,
    name_range: TextRange,
    name: &str,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let Some(end) = fall_off(body, block) else { return };
    let mut diagnostic = Diagnostic::new(
        Code::MissingReturn,
        name_range,
        format!("`{name}` may end without returning a value"),
    );
    let label = match end {
        Some(range) => (range, "this path reaches the end of the function without `return`"),
        None => (name_range, "the body has no `return`"),
    };
    diagnostic = diagnostic.with_label(label.0, label.1);
    diagnostics.push(diagnostic.with_help("every path through a function must end in `return e`"));
}

/// Where control can leave `block` without returning: `None` when every path returns,
/// `Some(None)` for an empty block, else the statement it falls off after.
fn fall_off(body: &Body, block: &Block) -> Option<Option<TextRange>> {
    if block.iter().any(|&s| always_returns(body, s)) {
        return None;
    }
    let &last = block.last()?;
    let range = stmt_head(body, last);
    if let Stmt::If { then, otherwise, .. } = body.stmt(last) {
        if !always_returns_block(body, then) {
            return Some(fall_off(body, then).flatten().or(Some(range)));
        }
        if otherwise.is_empty() {
            return Some(Some(range));
        }
        return Some(fall_off(body, otherwise).flatten().or(Some(range)));
    }
    Some(Some(range))
}

/// The part of a statement a label points at: its condition or value, which, unlike the
/// statement's own range, never runs on into the comments after it.
fn stmt_head(body: &Body, stmt: u32) -> TextRange {
    let expr = match body.stmt(stmt) {
        Stmt::If { cond, .. } | Stmt::While { cond, .. } | Stmt::Assert { cond, .. } => Some(*cond),
        Stmt::For { iterable, .. } => Some(*iterable),
        Stmt::Assign { value, .. } => Some(*value),
        Stmt::Expr(e) => Some(*e),
        Stmt::Return(value) => *value,
        Stmt::Print { .. } | Stmt::Def { .. } => None,
    };
    expr.map_or(body.stmt_ranges[stmt as usize], |e| body.expr_range(e))
}

/// Whether every path through the block ends in `return`.
pub fn always_returns_block(body: &Body, block: &Block) -> bool {
    block.iter().any(|&s| always_returns(body, s))
}

fn always_returns(body: &Body, stmt: u32) -> bool {
    match body.stmt(stmt) {
        Stmt::Return(_) => true,
        Stmt::If { then, otherwise, .. } => {
            always_returns_block(body, then) && always_returns_block(body, otherwise)
        }
        _ => false,
    }
}

struct BindingCheck<'a> {
    body: &'a Body,
    scope: ScopeId,
    top_level: bool,
    reported: Vec<LocalId>,
    diagnostics: &'a mut Vec<Diagnostic>,
}

fn check_bindings(
    body: &Body,
    scope: ScopeId,
    block: &Block,
    params: &[LocalId],
    top_level: bool,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let mut bound = vec![false; body.locals.len()];
    for &p in params {
        bound[p as usize] = true;
    }
    let mut check = BindingCheck { body, scope, top_level, reported: Vec::new(), diagnostics };
    check.block(block, &mut bound);
}

impl BindingCheck<'_> {
    /// Walks a block; `bound` becomes the set bound after it. Returns whether it always returns.
    fn block(&mut self, block: &Block, bound: &mut Vec<bool>) -> bool {
        for &stmt in block {
            if self.stmt(stmt, bound) {
                return true;
            }
        }
        false
    }

    fn stmt(&mut self, id: u32, bound: &mut Vec<bool>) -> bool {
        match self.body.stmt(id) {
            Stmt::Assign { targets, value } => {
                self.reads(*value, bound);
                for target in targets {
                    let mut locals = Vec::new();
                    target.locals(&mut locals);
                    locals.into_iter().for_each(|l| bound[l as usize] = true);
                }
                false
            }
            Stmt::If { cond, then, otherwise } => {
                self.reads(*cond, bound);
                let mut then_bound = bound.clone();
                let then_returns = self.block(then, &mut then_bound);
                let mut else_bound = bound.clone();
                let else_returns = self.block(otherwise, &mut else_bound);
                *bound = match (then_returns, else_returns) {
                    (true, true) => return true,
                    (true, false) => else_bound,
                    (false, true) => then_bound,
                    (false, false) => then_bound.iter().zip(&else_bound).map(|(a, b)| *a && *b).collect(),
                };
                false
            }
            Stmt::For { pattern, iterable, body } => {
                self.reads(*iterable, bound);
                let mut inner = bound.clone();
                let mut locals = Vec::new();
                pattern.locals(&mut locals);
                locals.into_iter().for_each(|l| inner[l as usize] = true);
                self.block(body, &mut inner);
                false
            }
            Stmt::While { cond, body } => {
                self.reads(*cond, bound);
                let mut inner = bound.clone();
                self.block(body, &mut inner);
                false
            }
            Stmt::Return(value) => {
                if let Some(value) = value {
                    self.reads(*value, bound);
                }
                true
            }
            Stmt::Assert { cond, .. } => {
                self.reads(*cond, bound);
                false
            }
            Stmt::Expr(expr) => {
                self.reads(*expr, bound);
                false
            }
            Stmt::Print { args, .. } => {
                args.iter().for_each(|&a| self.reads(a, bound));
                false
            }
            Stmt::Def { local, .. } => {
                bound[*local as usize] = true;
                false
            }
        }
    }

    fn reads(&mut self, expr: ExprId, bound: &[bool]) {
        let mut stack = vec![expr];
        while let Some(e) = stack.pop() {
            let node = self.body.expr(e);
            if let Expr::Local(local) = node {
                self.read(*local, e, bound);
            }
            stack.extend(node.children());
        }
    }

    fn read(&mut self, local: LocalId, expr: ExprId, bound: &[bool]) {
        let info = self.body.local(local);
        let range = self.body.expr_range(expr);
        if info.scope != self.scope || bound[local as usize] || self.reported.contains(&local) {
            return;
        }
        // At top level a read before every binding is `names`' unknown-name error.
        if self.top_level && info.range.start() >= range.start() {
            return;
        }
        self.reported.push(local);
        let mut diagnostic = Diagnostic::new(
            Code::PossiblyUnbound,
            range,
            format!("`{}` may be read before it is bound", info.name),
        )
        .with_label(range, format!("`{}` is not bound on every path to here", info.name));
        if info.range != range {
            diagnostic = diagnostic
                .with_label(info.range, format!("`{}` is bound here, but not on every path", info.name));
        }
        self.diagnostics.push(diagnostic.with_help(format!(
            "bind `{}` on every path before this read (a loop body may run zero times)",
            info.name
        )));
    }
}
