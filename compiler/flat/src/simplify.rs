//! Simplification of the segmented IR, the pass after `flatten`: common-subexpression
//! elimination, then dead-code elimination.
//!
//! Flattening lowers each core expression on its own, so a function that filters one sequence
//! three times (quicksort's `lesser`, `equal`, `greater`) enters it three times: the same
//! `seg_ids`, `seg_iota` and `gather`s over every element, three times over. Ops are pure and
//! variables are assigned once, so an op whose kind and operands match an earlier op's can
//! reuse that op's result. A repeated check is dropped the same way: it cannot fail where the
//! earlier one passed.
//!
//! An op is reused only where its first copy dominates it: from the block it is in and the
//! blocks nested in that block after it. An element loop's blocks start afresh, since they may
//! read only their own parameters and state.
//!
//! Flattening also computes descriptors nobody reads (the segment ids of a filter's result
//! that is only measured, say). An op whose result is never read and that cannot fail is
//! removed; one that can fail stays, so that the program stops where the interpreter does.

use rustc_hash::FxHashMap;

use crate::ir::{Block, Op, PrintItem, Program, StmtKind, VarId};
use weft_core::Literal;

/// Removes repeated ops, then unread ops, from every function of `program`, calling `interrupt`
/// before each pass over a function (a caller that must give up unwinds from it).
pub fn simplify(program: &mut Program, interrupt: &dyn Fn()) {
    for function in &mut program.functions {
        interrupt();
        let mut pass = Pass { replaced: vec![None; function.vars.len()], seen: FxHashMap::default() };
        pass.block(&mut function.body);
        remove_dead_ops(&mut function.body, function.vars.len(), interrupt);
    }
}

/// Removes the run-time checks the compiler inserted (`flatten::Options::without_checks`),
/// keeping the program's own `assert`s; `simplify` then removes what only the checks read.
pub fn remove_checks(program: &mut Program) {
    fn inserted(stmt: &crate::ir::Stmt) -> bool {
        matches!(&stmt.kind, StmtKind::Op { op: Op::Check(check), .. } if !matches!(check, crate::ir::Check::Assert { .. }))
    }
    fn block(b: &mut Block) {
        b.stmts.retain(|stmt| !inserted(stmt));
        for stmt in &mut b.stmts {
            if let StmtKind::If { then: x, otherwise: y, .. }
            | StmtKind::While { cond: x, body: y, .. }
            | StmtKind::ElementLoop { cond: x, body: y, .. } = &mut stmt.kind
            {
                block(x);
                block(y);
            }
        }
    }
    for function in &mut program.functions {
        block(&mut function.body);
    }
}

/// Removes the ops that cannot fail and whose results no statement reads, until none is left.
fn remove_dead_ops(body: &mut Block, vars: usize, interrupt: &dyn Fn()) {
    loop {
        interrupt();
        let mut read = vec![false; vars];
        let mut vars_read = Vec::new();
        body.reads(&mut vars_read);
        for v in vars_read {
            if let Some(slot) = read.get_mut(v as usize) {
                *slot = true;
            }
        }
        if !remove_unread(body, &read) {
            return;
        }
    }
}

/// Drops the unread ops that cannot fail from `block` and its nested blocks; whether any went.
fn remove_unread(block: &mut Block, read: &[bool]) -> bool {
    let before = block.stmts.len();
    block.stmts.retain(|stmt| match &stmt.kind {
        StmtKind::Op { dest: Some(d), op } => read.get(*d as usize).copied().unwrap_or(true) || can_fail(op),
        _ => true,
    });
    let mut removed = block.stmts.len() != before;
    for stmt in &mut block.stmts {
        match &mut stmt.kind {
            StmtKind::If { then: a, otherwise: b, .. }
            | StmtKind::While { cond: a, body: b, .. }
            | StmtKind::ElementLoop { cond: a, body: b, .. } => {
                removed |= remove_unread(a, read);
                removed |= remove_unread(b, read);
            }
            _ => {}
        }
    }
    removed
}

/// Whether an op can stop the program with a user-facing error: integer division, modulo,
/// powers and shifts, casts, maths functions, file loads and random numbers (their range is
/// checked, but stay on the safe side).
fn can_fail(op: &Op) -> bool {
    use weft_core::BinaryOp::*;
    match op {
        Op::Binary(op, _, _) => matches!(op, FloorDiv | Mod | Div | Pow | Shl | Shr),
        Op::Cast(..) | Op::Math(..) | Op::Load { .. } | Op::RandomF32 { .. } | Op::RandomI32 { .. } => true,
        Op::Check(_) => true,
        _ => false,
    }
}

/// What identifies an op's result: the op with its operands already substituted. Constants
/// compare by bits, so `-0.0` is not `0.0`.
#[derive(PartialEq, Eq, Hash)]
enum Key {
    Float(u64, weft_core::types::Scalar),
    Op(Op),
}

struct Pass {
    /// The earlier variable that holds each removed op's result.
    replaced: Vec<Option<VarId>>,
    /// The ops met so far in the blocks that dominate the current statement, and the variable
    /// each assigned (`None` for a check).
    seen: FxHashMap<Key, Option<VarId>>,
}

impl Pass {
    fn var(&self, v: VarId) -> VarId {
        self.replaced.get(v as usize).copied().flatten().unwrap_or(v)
    }

    fn vars(&self, vs: &mut [VarId]) {
        for v in vs {
            *v = self.var(*v);
        }
    }

    fn block(&mut self, block: &mut Block) {
        let mut added = Vec::new();
        let stmts = std::mem::take(&mut block.stmts);
        for mut stmt in stmts {
            match &mut stmt.kind {
                StmtKind::Op { dest, op } => {
                    for operand in op.operands_mut() {
                        *operand = self.var(*operand);
                    }
                    let key = key_of(op);
                    if let Some(&earlier) = self.seen.get(&key) {
                        if let (Some(d), Some(e)) = (*dest, earlier) {
                            self.replaced[d as usize] = Some(e);
                        }
                        continue;
                    }
                    self.seen.insert(key_of(op), *dest);
                    added.push(key);
                }
                StmtKind::If { cond, then, otherwise, .. } => {
                    *cond = self.var(*cond);
                    self.block(then);
                    self.block(otherwise);
                }
                StmtKind::While { init, cond, body, .. } => {
                    self.vars(init);
                    self.block(cond);
                    self.block(body);
                }
                StmtKind::ElementLoop { len, inputs, shared, init, cond, body, .. } => {
                    *len = self.var(*len);
                    self.vars(inputs);
                    self.vars(shared);
                    self.vars(init);
                    let outer = std::mem::take(&mut self.seen);
                    self.block(cond);
                    self.seen.clear();
                    self.block(body);
                    self.seen = outer;
                }
                StmtKind::Call { args, .. } => self.vars(args),
                // Fusion runs after simplification, so there are no kernels yet.
                StmtKind::Kernel(_) => {}
                StmtKind::Print { items, .. } => {
                    for item in items {
                        if let PrintItem::Value { vars, .. } = item {
                            self.vars(vars);
                        }
                    }
                }
            }
            block.stmts.push(stmt);
        }
        self.vars(&mut block.results);
        for key in added {
            self.seen.remove(&key);
        }
    }
}

fn key_of(op: &Op) -> Key {
    match op {
        Op::Const(Literal::Float(x, s)) => Key::Float(x.to_bits(), *s),
        _ => Key::Op(op.clone()),
    }
}
