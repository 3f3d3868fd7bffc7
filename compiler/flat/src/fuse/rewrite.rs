//! Rewrites that turn a fusion the kernels cannot express into one they can, before the
//! kernels are chosen.
//!
//! FILTER -> FILTER: `pack(pack(src, keep), more)`, where `more` is computed element-wise
//! from the first filter's result alone and nothing else reads that result, packs once:
//! `pack(src, select(keep, more', false))`, with `more'` computed from `src` itself, by the same
//! ops. Those ops then run on the elements the first filter drops too, so each must be defined
//! everywhere (no integer division by a variable, no random numbers, whose values hang on
//! the position). One compaction instead of two, and the two flag computations fuse into one map.
//! A filter's count (`reduce.add` of its flags as integers) stays right, since the dropped
//! elements' flags are false. Filters nested in parallel code keep their segment descriptors,
//! which read the flags per segment, so the rule leaves them alone.
//!
//! FILTER -> REDUCE (Nessie's rule): `reduce(pack(src, flags))`, where nothing else reads the
//! packed vector, reduces `select(flags, src, identity)` instead, over the unfiltered index
//! space: no compaction, and the select fuses with its producers and with the reduction
//! (map -> reduce).

use rowan::TextRange;

use super::graph::{VarFacts, op_may_fail};
use crate::ir::{Block, Function, Op, ReduceOp, Stmt, StmtKind, VarId, VarInfo};
use weft_core::Literal;
use weft_core::types::Scalar;

/// `f` with filters of filters packing once and every filter feeding only a reduction
/// rewritten, and the rule and place of each rewrite; then without the ops whose results
/// nothing reads (flattening leaves some, such as the count of a filter that became a select),
/// which a fused kernel would otherwise compute for nothing. Each rewrite is a pass over the
/// whole function, and `interrupt` is called before each (a caller that must give up unwinds).
pub fn filters(f: &Function, interrupt: &dyn Fn()) -> (Function, Vec<(&'static str, TextRange)>) {
    let mut out = f.clone();
    let mut at = Vec::new();
    // The rewrites add only flags and reductions' identities, never a divisor: the facts of
    // `f` hold throughout.
    let facts = VarFacts::of(f);
    loop {
        interrupt();
        let reads = count_reads(&out);
        let mut vars = std::mem::take(&mut out.vars);
        let merged = merge_filters(&mut out.body, &reads, &facts, &mut vars);
        out.vars = vars;
        match merged {
            Some(span) => at.push(("filter -> filter", span)),
            None => break,
        }
    }
    let reads = count_reads(&out);
    let mut vars = std::mem::take(&mut out.vars);
    let mut reduced = Vec::new();
    rewrite_block(&mut out.body, &reads, &mut vars, &mut reduced);
    out.vars = vars;
    at.extend(reduced.into_iter().map(|span| ("filter -> reduce", span)));
    loop {
        interrupt();
        let reads = count_reads(&out);
        if !remove_dead(&mut out.body, &reads, &out.vars, &facts) {
            return (out, at);
        }
    }
}

/// One FILTER -> FILTER rewrite in `block` or a block nested in it, if there is one to make;
/// where it was.
fn merge_filters(
    block: &mut Block,
    reads: &[u32],
    facts: &VarFacts,
    vars: &mut Vec<VarInfo>,
) -> Option<TextRange> {
    for j in 0..block.stmts.len() {
        if let Some(span) = merge_at(block, j, reads, facts, vars) {
            return Some(span);
        }
        if let StmtKind::If { then: a, otherwise: b, .. } | StmtKind::While { cond: a, body: b, .. } =
            &mut block.stmts[j].kind
            && let Some(span) =
                merge_filters(a, reads, facts, vars).or_else(|| merge_filters(b, reads, facts, vars))
        {
            return Some(span);
        }
    }
    None
}

/// Merges the filter at `block.stmts[j]` into the filter that produced its source, if the rule
/// applies.
fn merge_at(
    block: &mut Block,
    j: usize,
    reads: &[u32],
    facts: &VarFacts,
    vars: &mut Vec<VarInfo>,
) -> Option<TextRange> {
    // A filter that takes its places from the flags' counts keeps its flags.
    let StmtKind::Op { op: Op::Pack { src: first, flags: more, counts: None }, .. } = block.stmts[j].kind
    else {
        return None;
    };
    let (i, src, keep) = block.stmts[..j].iter().enumerate().find_map(|(i, s)| match s.kind {
        StmtKind::Op { dest: Some(d), op: Op::Pack { src, flags, .. } } if d == first => {
            Some((i, src, flags))
        }
        _ => None,
    })?;
    // The ops between the filters computed from the first one's result: they must be all
    // that reads it, besides the second filter, and must read no other vector.
    let mut chain: Vec<usize> = Vec::new();
    let mut derived = vec![first];
    for (k, stmt) in block.stmts.iter().enumerate().take(j).skip(i + 1) {
        let StmtKind::Op { dest: Some(d), op } = &stmt.kind else { continue };
        let operands = op.operands();
        if !operands.iter().any(|v| derived.contains(v)) {
            continue;
        }
        let others_scalar =
            operands.iter().all(|&v| derived.contains(&v) || !vars[v as usize].ty.is_vector());
        if !others_scalar || !defined_everywhere(op, vars, facts) {
            return None;
        }
        chain.push(k);
        derived.push(*d);
    }
    let chain_reads = |v: VarId| {
        let mut n = 0;
        for &k in &chain {
            if let StmtKind::Op { op, .. } = &block.stmts[k].kind {
                n += op.operands().iter().filter(|&&o| o == v).count() as u32;
            }
        }
        n
    };
    let inner_only =
        derived.iter().all(|&v| v == more || chain_reads(v) + u32::from(v == first) == reads[v as usize]);
    if !derived.contains(&more) || !inner_only || !counts_only(block, j, more, reads) {
        return None;
    }
    // Compute the chain from `src`, and `more` as `keep and more'`.
    for &k in &chain {
        if let StmtKind::Op { op, .. } = &mut block.stmts[k].kind {
            for operand in op.operands_mut() {
                if *operand == first {
                    *operand = src;
                }
            }
        }
    }
    let definition = chain
        .iter()
        .copied()
        .find(|&k| matches!(block.stmts[k].kind, StmtKind::Op { dest: Some(d), .. } if d == more))?;
    let span = block.stmts[j].span;
    let fresh = |vars: &mut Vec<VarInfo>, name: &str, ty: crate::ir::IrType| {
        vars.push(VarInfo { name: name.into(), ty });
        (vars.len() - 1) as VarId
    };
    let computed = fresh(vars, "more", vars[more as usize].ty);
    let no = fresh(vars, "c", crate::ir::IrType::scalar(Scalar::Bool));
    if let StmtKind::Op { dest, .. } = &mut block.stmts[definition].kind {
        *dest = Some(computed);
    }
    let at = block.stmts[definition].span;
    let both = [
        Stmt { kind: StmtKind::Op { dest: Some(no), op: Op::Const(Literal::Bool(false)) }, span: at },
        Stmt { kind: StmtKind::Op { dest: Some(more), op: Op::Select(keep, computed, no) }, span: at },
    ];
    block.stmts.splice(definition + 1..definition + 1, both);
    let j = j + 2;
    if let StmtKind::Op { op: Op::Pack { src: packed, .. }, .. } = &mut block.stmts[j].kind {
        *packed = src;
    }
    Some(span)
}

/// Whether an element-wise op gives a value on any element, so that it may run on those a
/// filter drops: no integer division or modulo by a variable (a nonzero constant is fine), no
/// powers or shifts, and no random numbers (their value hangs on the element's position).
fn defined_everywhere(op: &Op, vars: &[VarInfo], facts: &VarFacts) -> bool {
    let random = matches!(op, Op::RandomF32 { .. } | Op::RandomI32 { .. });
    op.is_element_wise() && !random && !op_may_fail(vars, facts, op)
}

/// Whether every reader of the flags `more` in `block`, besides the filter at `filter`, is a
/// cast whose only readers are sums (the filter's count), which the dropped elements' false
/// flags leave unchanged; and nothing outside `block` reads them. Another pack by `more` (a
/// tuple's other fields) would keep its shorter source under the merged, longer flags.
fn counts_only(block: &Block, filter: usize, more: VarId, reads: &[u32]) -> bool {
    let mut seen = 0;
    for (k, stmt) in block.stmts.iter().enumerate() {
        let StmtKind::Op { dest, op } = &stmt.kind else { continue };
        if !op.operands().contains(&more) {
            continue;
        }
        seen += 1;
        match (op, dest) {
            (Op::Pack { flags, .. }, _) if *flags == more && k == filter => {}
            (Op::Cast(_, _), Some(cast)) => {
                let sums = block
                    .stmts
                    .iter()
                    .filter(|s| matches!(&s.kind, StmtKind::Op { op: Op::Reduce { op: ReduceOp::Add, src }, .. } if src == cast))
                    .count() as u32;
                if sums != reads[*cast as usize] {
                    return false;
                }
            }
            _ => return false,
        }
    }
    seen == reads[more as usize]
}

/// Drops the pure ops of `block` whose result no one reads; says whether it dropped any.
fn remove_dead(block: &mut Block, reads: &[u32], vars: &[VarInfo], facts: &VarFacts) -> bool {
    let before = block.stmts.len();
    block.stmts.retain(|s| match &s.kind {
        StmtKind::Op { dest: Some(d), op } => reads[*d as usize] > 0 || op_may_fail(vars, facts, op),
        _ => true,
    });
    let mut dropped = block.stmts.len() < before;
    for stmt in &mut block.stmts {
        match &mut stmt.kind {
            StmtKind::If { then, otherwise, .. } => {
                dropped |= remove_dead(then, reads, vars, facts);
                dropped |= remove_dead(otherwise, reads, vars, facts);
            }
            StmtKind::While { cond, body, .. } => {
                dropped |= remove_dead(cond, reads, vars, facts);
                dropped |= remove_dead(body, reads, vars, facts);
            }
            _ => {}
        }
    }
    dropped
}

/// How many times each variable of `f` is read.
fn count_reads(f: &Function) -> Vec<u32> {
    let mut reads = vec![0u32; f.vars.len()];
    let mut all = Vec::new();
    f.body.reads(&mut all);
    for v in all {
        reads[v as usize] += 1;
    }
    reads
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
            StmtKind::Op { dest: Some(kept), op: Op::Pack { src, flags, .. } } => {
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
