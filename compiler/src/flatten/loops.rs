//! Loops under flattening.
//!
//! In the root a loop is a host `While`. Inside parallel code every element runs its own
//! iterations; the loop then runs on the host over the *active* elements: each round packs
//! the elements whose condition holds into a child context, runs the body once for all of
//! them, writes their new state back and evaluates their condition again, until no element is
//! active. A body with nested parallel work is flattened as in any other context.

use crate::core::{self, BinaryOp, ExprId, Pattern};
use crate::ir::{Op, ReduceOp, StmtKind, VarId};
use crate::types::{Scalar, Type};

use super::{CtxId, Flattener, R, ROOT, Rep, seqs};

impl<'c> Flattener<'c> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn for_loop(
        &mut self,
        func: &'c core::Function,
        id: ExprId,
        state: &Pattern,
        init: ExprId,
        elem: &Pattern,
        seq: ExprId,
        body: ExprId,
    ) -> R<Rep> {
        let ty = func.ty(id).clone();
        let init = self.expr(init, ROOT)?;
        let seq = self.expr(seq, ROOT)?.seq().ok_or_else(|| self.bug("a loop over a non-sequence"))?;
        let mut init_vars = vec![self.b.i32(0)];
        init_vars.extend(self.canonical(&init, &ty, ROOT));
        let state_vars = self.fresh_like(&init_vars);
        let counter = state_vars[0];
        let cond = self.nested_block(|me| Ok(vec![me.b.binary(BinaryOp::Lt, counter, seq.lengths)]))?;
        let body = self.nested_block(|me| {
            let current = seqs::from_layout(&ty, &mut state_vars[1..].iter().copied());
            me.bind(state, current, ROOT)?;
            let position = me.b.add(seq.offsets, counter);
            let item = me.gather_coll(&seq.elems, position);
            me.bind(elem, item, ROOT)?;
            let next = me.expr(body, ROOT)?;
            let one = me.b.i32(1);
            let mut vars = vec![me.b.add(counter, one)];
            vars.extend(me.canonical(&next, &ty, ROOT));
            Ok(vars)
        })?;
        let dests = self.fresh_like(&init_vars);
        self.b.push(StmtKind::While { state: state_vars, init: init_vars, cond, body, dests: dests.clone() });
        Ok(seqs::from_layout(&ty, &mut dests[1..].iter().copied()))
    }

    pub(super) fn while_loop(
        &mut self,
        func: &'c core::Function,
        id: ExprId,
        state: &Pattern,
        init: ExprId,
        cond: ExprId,
        body: ExprId,
    ) -> R<Rep> {
        let ty = func.ty(id).clone();
        let init = self.expr(init, ROOT)?;
        let init_vars = self.canonical(&init, &ty, ROOT);
        let state_vars = self.fresh_like(&init_vars);
        let bind_state = |me: &mut Self| {
            let current = seqs::from_layout(&ty, &mut state_vars.iter().copied());
            me.bind(state, current, ROOT)
        };
        let cond = self.nested_block(|me| {
            bind_state(me)?;
            let c = me.expr(cond, ROOT)?.leaf().ok_or_else(|| me.bug("a non-scalar loop condition"))?;
            Ok(vec![c])
        })?;
        let body = self.nested_block(|me| {
            bind_state(me)?;
            let next = me.expr(body, ROOT)?;
            Ok(me.canonical(&next, &ty, ROOT))
        })?;
        let dests = self.fresh_like(&init_vars);
        self.b.push(StmtKind::While { state: state_vars, init: init_vars, cond, body, dests: dests.clone() });
        Ok(seqs::from_layout(&ty, &mut dests.into_iter()))
    }

    /// A `for` loop inside parallel code: the state carries a counter into the sequence.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn lifted_for_loop(
        &mut self,
        func: &'c core::Function,
        id: ExprId,
        state: &Pattern,
        init: ExprId,
        elem: &Pattern,
        seq: ExprId,
        body: ExprId,
        ctx: CtxId,
    ) -> R<Rep> {
        let ty = func.ty(id).clone();
        let init = self.expr(init, ctx)?;
        let seq = self.expr(seq, ctx)?;
        let zero = self.b.i32(0);
        let start = Rep::Tuple(vec![Rep::Leaf(zero), init]);
        let carried = Type::Tuple(vec![Type::Scalar(Scalar::I32), ty]);
        let mut cond = |me: &mut Self, current: &Rep, here: CtxId| {
            let Rep::Tuple(fields) = current else { return Err(me.bug("a loop state without its counter")) };
            let counter = fields[0].leaf().ok_or_else(|| me.bug("a loop counter"))?;
            let seq = me.lift(&seq, ctx, here).seq().ok_or_else(|| me.bug("a loop over a non-sequence"))?;
            Ok(me.b.binary(BinaryOp::Lt, counter, seq.lengths))
        };
        let mut step = |me: &mut Self, current: &Rep, here: CtxId| {
            let Rep::Tuple(fields) = current else { return Err(me.bug("a loop state without its counter")) };
            let counter = fields[0].leaf().ok_or_else(|| me.bug("a loop counter"))?;
            let seq = me.lift(&seq, ctx, here).seq().ok_or_else(|| me.bug("a loop over a non-sequence"))?;
            me.bind(state, fields[1].clone(), here)?;
            let position = me.b.add(seq.offsets, counter);
            let item = me.gather_coll(&seq.elems, position);
            me.bind(elem, item, here)?;
            let next = me.expr(body, here)?;
            let one = me.b.i32(1);
            Ok(Rep::Tuple(vec![Rep::Leaf(me.b.add(counter, one)), next]))
        };
        match self.lifted_loop(&carried, start, ctx, &mut cond, &mut step)? {
            Rep::Tuple(mut fields) if fields.len() == 2 => Ok(fields.swap_remove(1)),
            _ => Err(self.bug("a loop state without its counter")),
        }
    }

    /// A `while` loop inside parallel code.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn lifted_while_loop(
        &mut self,
        func: &'c core::Function,
        id: ExprId,
        state: &Pattern,
        init: ExprId,
        cond: ExprId,
        body: ExprId,
        ctx: CtxId,
    ) -> R<Rep> {
        let ty = func.ty(id).clone();
        let init = self.expr(init, ctx)?;
        let mut holds = |me: &mut Self, current: &Rep, here: CtxId| {
            me.bind(state, current.clone(), here)?;
            me.expr(cond, here)?.leaf().ok_or_else(|| me.bug("a non-scalar loop condition"))
        };
        let mut step = |me: &mut Self, current: &Rep, here: CtxId| {
            me.bind(state, current.clone(), here)?;
            me.expr(body, here)
        };
        self.lifted_loop(&ty, init, ctx, &mut holds, &mut step)
    }

    /// Runs every element of `ctx` from state `init` (of type `ty`) while `holds` for it,
    /// applying `step`; both are given a state in a context and flatten there.
    fn lifted_loop(
        &mut self,
        ty: &Type,
        init: Rep,
        ctx: CtxId,
        holds: &mut dyn FnMut(&mut Self, &Rep, CtxId) -> R<VarId>,
        step: &mut dyn FnMut(&mut Self, &Rep, CtxId) -> R<Rep>,
    ) -> R<Rep> {
        let size = self.size(ctx);
        let start = self.force_rep(&init, ctx);
        let active = holds(self, &start, ctx)?;
        let active = self.flag_vector(active, ctx);
        let any = |me: &mut Self, state: &[VarId]| {
            Ok(me.b.emit("running", Op::Reduce { op: ReduceOp::Or, src: state[0] }))
        };
        let round = |me: &mut Self, current: Rep, state: &[VarId]| {
            let active = state[0];
            let iota = me.b.emit("iota", Op::Iota { len: size });
            let running = me.b.emit("running", Op::Pack { src: iota, flags: active });
            let count = me.b.length(running);
            let here = me.new_ctx(ctx, count, Some(running));
            let mine = me.gather_top(&current, running);
            let next = step(me, &mine, here)?;
            let next = me.force_rep(&next, here);
            let again = holds(me, &next, here)?;
            let again = me.flag_vector(again, here);
            // Write the running elements' new state and condition back.
            let (current, next) = me.share_elems(&current, &next)?;
            let mut written = Vec::new();
            for (old, new) in
                super::prims::top_leaves(&current).into_iter().zip(super::prims::top_leaves(&next))
            {
                written.push(me.b.emit("state", Op::Scatter { dst: old, index: running, src: new }));
            }
            let merged = super::prims::rebuild_top(&current, &mut written.into_iter());
            let f = me.b.bool(false);
            let idle = me.b.replicate(f, size);
            let active = me.b.emit("running", Op::Scatter { dst: idle, index: running, src: again });
            Ok((merged, vec![active]))
        };
        let (values, _) = self.rounds(ty, &start, vec![active], any, round)?;
        Ok(values)
    }
}
