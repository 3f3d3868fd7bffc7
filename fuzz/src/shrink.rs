//! Shrinking a failing program: greedy, one step at a time, each step kept only if the
//! program still compiles and still fails the same way. The steps: remove a statement or a
//! function, replace an expression by one of its subexpressions of the same type or by the
//! simplest literal of its type, drop an element of a list literal. Frozen expressions and
//! pinned statements (the clamps that make loops and recursion end) are left alone.

use std::time::{Duration, Instant};

use crate::program::{Expr, Kind, Program, Stmt, StmtKind, Ty};

/// The smallest program reached from `program` by steps after which `still_fails` holds,
/// within `budget`.
pub fn shrink(program: &Program, budget: Duration, still_fails: &mut dyn FnMut(&Program) -> bool) -> Program {
    let start = Instant::now();
    let mut best = program.clone();
    'outer: loop {
        for candidate in candidates(&best) {
            if start.elapsed() > budget {
                break 'outer;
            }
            if candidate.size() < best.size() && still_fails(&candidate) {
                best = candidate;
                continue 'outer;
            }
        }
        break;
    }
    best
}

/// Every one-step simplification of `p`, the largest cuts first.
fn candidates(p: &Program) -> Vec<Program> {
    let mut out = Vec::new();
    for k in 0..p.functions.len() {
        let mut c = p.clone();
        c.functions.remove(k);
        out.push(c);
    }
    let statements = count_stmts(p);
    for k in 0..statements {
        let mut c = p.clone();
        if remove_stmt(&mut c, k) {
            out.push(c);
        }
    }
    let exprs = count_exprs(p);
    for k in 0..exprs {
        let Some(e) = nth_expr(&mut p.clone(), k).cloned() else { continue };
        if e.frozen || e.ty == Ty::Fn {
            continue;
        }
        let mut replacements: Vec<Expr> = Vec::new();
        let simplest = simplest(&e.ty);
        if !matches!(&e.kind, Kind::Lit(t) if Some(t) == lit_text(&simplest).as_ref()) {
            replacements.push(simplest);
        }
        let mut copy = e.clone();
        replacements.extend(copy.children_mut().into_iter().filter(|c| c.ty == e.ty).map(|c| c.clone()));
        if let Kind::List(items) = &e.kind
            && items.len() > 1
        {
            for drop in 0..items.len() {
                let mut fewer = items.clone();
                fewer.remove(drop);
                replacements.push(Expr::new(e.ty.clone(), Kind::List(fewer)));
            }
        }
        for r in replacements {
            let mut c = p.clone();
            if let Some(slot) = nth_expr(&mut c, k) {
                *slot = r;
                out.push(c);
            }
        }
    }
    out
}

fn lit_text(e: &Expr) -> Option<String> {
    match &e.kind {
        Kind::Lit(t) => Some(t.clone()),
        _ => None,
    }
}

/// The simplest value of a type.
fn simplest(ty: &Ty) -> Expr {
    match ty {
        Ty::I32 => Expr::lit(Ty::I32, "0"),
        Ty::F32 => Expr::lit(Ty::F32, "0.0"),
        Ty::Bool => Expr::lit(Ty::Bool, "False"),
        Ty::Seq(elem) => Expr::new(ty.clone(), Kind::List(vec![simplest(elem)])),
        Ty::Tuple(parts) => Expr::new(ty.clone(), Kind::Tuple(parts.iter().map(simplest).collect())),
        Ty::Fn => Expr::lit(Ty::Fn, "(lambda: 0)"),
    }
}

fn count_in(block: &[Stmt]) -> usize {
    block
        .iter()
        .map(|s| {
            1 + match &s.kind {
                StmtKind::If(_, a, b) => count_in(a) + count_in(b),
                StmtKind::Loop { body, .. } => count_in(body),
                _ => 0,
            }
        })
        .sum()
}

fn count_stmts(p: &Program) -> usize {
    p.functions.iter().map(|f| count_in(&f.body)).sum::<usize>() + count_in(&p.main)
}

/// Removes the `k`th statement of `block` in preorder, unless it is pinned: `Some(removed)`
/// once the `k`th is reached, `None` (with `k` counted down) when the block has fewer.
fn remove_in(block: &mut Vec<Stmt>, k: &mut usize) -> Option<bool> {
    for i in 0..block.len() {
        if *k == 0 {
            if block[i].pinned {
                return Some(false);
            }
            block.remove(i);
            return Some(true);
        }
        *k -= 1;
        let nested: Vec<&mut Vec<Stmt>> = match &mut block[i].kind {
            StmtKind::If(_, a, b) => vec![a, b],
            StmtKind::Loop { body, .. } => vec![body],
            _ => Vec::new(),
        };
        for inner in nested {
            if let Some(done) = remove_in(inner, k) {
                return Some(done);
            }
        }
    }
    None
}

/// Removes the `k`th statement of the program (functions first, then main) unless it is
/// pinned.
fn remove_stmt(p: &mut Program, mut k: usize) -> bool {
    for f in &mut p.functions {
        if let Some(done) = remove_in(&mut f.body, &mut k) {
            return done;
        }
    }
    remove_in(&mut p.main, &mut k).unwrap_or(false)
}

/// The expressions of a statement, in order.
fn stmt_exprs(s: &mut Stmt) -> Vec<&mut Expr> {
    match &mut s.kind {
        StmtKind::Assign(_, e) | StmtKind::Return(e) | StmtKind::Assert(e) => {
            vec![e]
        }
        StmtKind::Print(es) => es.iter_mut().collect(),
        StmtKind::If(c, a, b) => {
            let mut v = vec![c];
            for s in a.iter_mut().chain(b.iter_mut()) {
                v.extend(stmt_exprs(s));
            }
            v
        }
        StmtKind::Loop { bound, body, .. } => {
            let mut v = vec![bound];
            for s in body {
                v.extend(stmt_exprs(s));
            }
            v
        }
    }
}

/// Finds the `k`th node of `e` in preorder (`k` counts down as nodes pass).
fn walk<'a>(e: &'a mut Expr, k: &mut usize, found: &mut Option<&'a mut Expr>) {
    if found.is_some() {
        return;
    }
    if *k == 0 {
        *found = Some(e);
        return;
    }
    *k -= 1;
    for child in e.children_mut() {
        walk(child, k, found);
        if found.is_some() {
            return;
        }
    }
}

fn roots(p: &mut Program) -> Vec<&mut Expr> {
    let mut out = Vec::new();
    for f in &mut p.functions {
        for s in &mut f.body {
            out.extend(stmt_exprs(s));
        }
    }
    for s in &mut p.main {
        out.extend(stmt_exprs(s));
    }
    out
}

fn count_exprs(p: &Program) -> usize {
    let mut c = p.clone();
    roots(&mut c).iter().map(|e| e.size()).sum()
}

/// The `k`th expression node in preorder.
fn nth_expr(p: &mut Program, mut k: usize) -> Option<&mut Expr> {
    for root in roots(p) {
        let size = root.size();
        if k < size {
            let mut found = None;
            walk(root, &mut k, &mut found);
            return found;
        }
        k -= size;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::{Function, Profile};

    #[test]
    fn shrinking_keeps_the_failure_and_pinned_statements() {
        let seven = Expr::lit(Ty::I32, "7");
        let sum = Expr::binary(
            Ty::I32,
            "+",
            Expr::binary(Ty::I32, "*", Expr::lit(Ty::I32, "2"), Expr::lit(Ty::I32, "3")),
            seven,
        );
        let program = Program {
            profile: Profile::Exact,
            functions: vec![Function {
                name: "f1".into(),
                params: vec![("p".into(), Ty::I32)],
                result: Ty::I32,
                body: vec![Stmt::new(StmtKind::Return(Expr::var(Ty::I32, "p"))).pinned()],
            }],
            main: vec![
                Stmt::new(StmtKind::Print(vec![Expr::lit(Ty::Bool, "True")])),
                Stmt::new(StmtKind::Print(vec![sum])),
            ],
        };
        // "Fails" while the text still contains a 7.
        let shrunk = shrink(&program, Duration::from_secs(5), &mut |p| p.text().contains('7'));
        assert_eq!(shrunk.text(), "print(7)\n");
    }
}
