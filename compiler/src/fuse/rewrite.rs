//! Rewrites that turn a fusion the kernels cannot express into one they can, before the
//! kernels are chosen.
//!
//! FILTER -> REDUCE (Nessie's rule): `reduce(pack(src, flags))`, where nothing else reads the
//! packed vector, reduces `select(flags, src, identity)` instead, over the unfiltered index
//! space: no compaction, and the select fuses with its producers and with the reduction
//! (map -> reduce).

use rowan::TextRange;

use crate::core::Literal;
use crate::ir::{Block, Function, Op, ReduceOp, Stmt, StmtKind, VarId, VarInfo};
use crate::types::Scalar;

/// `f` with every filter feeding only a reduction rewritten, and where each rewrite was; then
/// without the ops whose results nothing reads (flattening leaves some, such as the count of
/// a filter that became a select), which a fused kernel would otherwise compute for nothing.
pub fn filter_reductions(f: &Function) -> (Function, Vec<TextRange>) {
    let mut reads = vec![0u32; f.vars.len()];
    count_reads(&f.body, &mut reads);
    let mut out = f.clone();
    let mut at = Vec::new();
    let mut vars = std::mem::take(&mut out.vars);
    rewrite_block(&mut out.body, &reads, &mut vars, &mut at);
    out.vars = vars;
    loop {
        let mut reads = vec![0u32; out.vars.len()];
        count_reads(&out.body, &mut reads);
        if !remove_dead(&mut out.body, &reads, &out.vars) {
            return (out, at);
        }
    }
}

/// Drops the pure ops of `block` whose result no one reads; says whether it dropped any.
fn remove_dead(block: &mut Block, reads: &[u32], vars: &[VarInfo]) -> bool {
    let before = block.stmts.len();
    block.stmts.retain(|s| match &s.kind {
        StmtKind::Op { dest: Some(d), op } => reads[*d as usize] > 0 || super::graph::op_may_fail(vars, op),
        _ => true,
    });
    let mut dropped = block.stmts.len() < before;
    for stmt in &mut block.stmts {
        match &mut stmt.kind {
            StmtKind::If { then, otherwise, .. } => {
                dropped |= remove_dead(then, reads, vars);
                dropped |= remove_dead(otherwise, reads, vars);
            }
            StmtKind::While { cond, body, .. } => {
                dropped |= remove_dead(cond, reads, vars);
                dropped |= remove_dead(body, reads, vars);
            }
            _ => {}
        }
    }
    dropped
}

fn count_reads(block: &Block, reads: &mut [u32]) {
    let mut all = Vec::new();
    block.reads(&mut all);
    for v in all {
        reads[v as usize] += 1;
    }
}

fn rewrite_block(block: &mut Block, reads: &[u32], vars: &mut Vec<VarInfo>, at: &mut Vec<TextRange>) {
    let reductions: Vec<(VarId, ReduceOp)> = block
        .stmts
        .iter()
        .filter_map(|s| match &s.kind {
            StmtKind::Op { op: Op::Reduce { op, src }, .. } => Some((*src, *op)),
            _ => None,
        })
        .collect();
    let mut stmts = Vec::with_capacity(block.stmts.len());
    for mut stmt in std::mem::take(&mut block.stmts) {
        match &mut stmt.kind {
            StmtKind::Op { dest: Some(kept), op: Op::Pack { src, flags } } => {
                let reduced = reductions.iter().find(|(v, _)| v == kept).map(|&(_, op)| op);
                let elem = vars[*kept as usize].ty.elem;
                if let Some(identity) =
                    reduced.filter(|_| reads[*kept as usize] == 1).and_then(|op| identity(op, elem))
                {
                    let id = vars.len() as VarId;
                    vars.push(VarInfo { name: "identity".into(), ty: crate::ir::IrType::scalar(elem) });
                    let (src, flags, kept) = (*src, *flags, *kept);
                    stmts.push(Stmt {
                        kind: StmtKind::Op { dest: Some(id), op: Op::Const(identity) },
                        span: stmt.span,
                    });
                    let select = Op::Select(flags, src, id);
                    stmts.push(Stmt { kind: StmtKind::Op { dest: Some(kept), op: select }, span: stmt.span });
                    at.push(stmt.span);
                    continue;
                }
            }
            StmtKind::If { then, otherwise, .. } => {
                rewrite_block(then, reads, vars, at);
                rewrite_block(otherwise, reads, vars, at);
            }
            StmtKind::While { cond, body, .. } => {
                rewrite_block(cond, reads, vars, at);
                rewrite_block(body, reads, vars, at);
            }
            _ => {}
        }
        stmts.push(stmt);
    }
    block.stmts = stmts;
}

/// The identity of `op` on `elem`, for the operators whose identity is a plain value.
fn identity(op: ReduceOp, elem: Scalar) -> Option<Literal> {
    let int = matches!(elem, Scalar::I32 | Scalar::I64);
    Some(match (op, elem) {
        (ReduceOp::Add | ReduceOp::Xor | ReduceOp::Or, Scalar::Bool) => Literal::Bool(false),
        (ReduceOp::And, Scalar::Bool) => Literal::Bool(true),
        (_, Scalar::Bool) => return None,
        (ReduceOp::Add | ReduceOp::Xor | ReduceOp::Or, _) if int => Literal::Int(0, elem),
        (ReduceOp::And, _) if int => Literal::Int(-1, elem),
        (ReduceOp::Mul, _) if int => Literal::Int(1, elem),
        (ReduceOp::Add, _) => Literal::Float(0.0, elem),
        (ReduceOp::Mul, _) => Literal::Float(1.0, elem),
        _ => return None,
    })
}
