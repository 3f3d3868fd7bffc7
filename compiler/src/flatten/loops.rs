//! Loops under flattening.
//!
//! In the root a loop is a host `While`. Inside parallel code every element runs its own
//! iterations; the loop then runs on the host over the *active* elements: each round packs
//! the elements whose condition holds into a child context, runs the body once for all of
//! them, writes their new state back and evaluates their condition again, until no element is
//! active. A body with nested parallel work is flattened as in any other context.

use crate::core::{self, BinaryOp, Expr, ExprId, Pattern};
use crate::ir::{self, IrType, Op, ReduceOp, StmtKind, VarId};
use crate::types::{Scalar, Type};

use super::{CtxId, Flattener, R, ROOT, Rep, is_scalar_data, is_scalar_math, seqs};

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
        self.schedule(ir::Schedule::RoundsOverRunningElements);
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
        if let Some(done) = self.element_loop(func, &ty, state, &init, cond, body, ctx)? {
            self.schedule(ir::Schedule::SequentialInEachElement);
            return Ok(done);
        }
        self.schedule(ir::Schedule::RoundsOverRunningElements);
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

    /// A `while` loop whose state is numbers and tuples and whose condition and body are scalar
    /// code (no sequences, no recursion, no inner loop) runs as one `ElementLoop`: every
    /// element loops on its own inside one element-wise step, as a GPU thread would. Its free
    /// variables become the loop's inputs. `None` when the loop is not scalar.
    #[allow(clippy::too_many_arguments)]
    fn element_loop(
        &mut self,
        func: &'c core::Function,
        ty: &Type,
        state: &Pattern,
        init: &Rep,
        cond: ExprId,
        body: ExprId,
        ctx: CtxId,
    ) -> R<Option<Rep>> {
        let mut reads = Vec::new();
        if !is_scalar_data(ty)
            || !self.scalar_code(func, cond, &mut reads)
            || !self.scalar_code(func, body, &mut reads)
        {
            return Ok(None);
        }
        reads.sort_unstable();
        reads.dedup();
        // Each free variable is read in the loop through scalar parameters, one per leaf.
        let mut inputs = Vec::new();
        let mut params = Vec::new();
        let mut locals = Vec::new();
        for v in reads {
            let Some((rep, from)) = self.frame().vars[v as usize].clone() else { continue };
            let rep = self.lift(&rep, from, ctx);
            let Some(local) = self.scalar_params(&rep, &mut inputs, &mut params) else {
                return Ok(None);
            };
            locals.push((v, local));
        }
        let frame = self.frames.last_mut().expect("a frame is active");
        let outer: Vec<_> =
            locals.into_iter().map(|(v, local)| (v, frame.vars[v as usize].replace((local, ROOT)))).collect();
        let init_vars = self.canonical(init, ty, ctx);
        let state_vars: Vec<VarId> =
            ir::layout(ty, false).into_iter().map(|t| self.b.var("state", t)).collect();
        let bind_state = |me: &mut Self| {
            let current = seqs::from_layout(ty, &mut state_vars.iter().copied());
            me.bind(state, current, ROOT)
        };
        let cond = self.nested_block(|me| {
            bind_state(me)?;
            let c = me.expr(cond, ROOT)?.leaf().ok_or_else(|| me.bug("a non-scalar loop condition"))?;
            Ok(vec![c])
        });
        let body = self.nested_block(|me| {
            bind_state(me)?;
            let next = me.expr(body, ROOT)?;
            Ok(me.canonical(&next, ty, ROOT))
        });
        let frame = self.frames.last_mut().expect("a frame is active");
        for (v, binding) in outer {
            frame.vars[v as usize] = binding;
        }
        let (cond, body) = (cond?, body?);
        let dests: Vec<VarId> = ir::layout(ty, true).into_iter().map(|t| self.b.var("state", t)).collect();
        let len = self.size(ctx);
        self.b.push(StmtKind::ElementLoop {
            len,
            inputs,
            params,
            init: init_vars,
            state: state_vars,
            cond,
            body,
            dests: dests.clone(),
        });
        Ok(Some(seqs::from_layout(ty, &mut dests.into_iter())))
    }

    /// `rep` (numbers and tuples) with each leaf replaced by a scalar parameter, the leaf
    /// becoming an input; `None` if it holds a sequence.
    fn scalar_params(&mut self, rep: &Rep, inputs: &mut Vec<VarId>, params: &mut Vec<VarId>) -> Option<Rep> {
        Some(match rep {
            Rep::Leaf(v) => {
                let info = self.b.vars[*v as usize].clone();
                let param = self.b.var(&info.name, IrType::scalar(info.ty.elem));
                inputs.push(*v);
                params.push(param);
                Rep::Leaf(param)
            }
            Rep::Tuple(items) => Rep::Tuple(
                items.iter().map(|r| self.scalar_params(r, inputs, params)).collect::<Option<_>>()?,
            ),
            Rep::Seq(_) => return None,
        })
    }

    /// Whether `e` is scalar code: numbers and tuples only, through operators, conditionals,
    /// lets, scalar prelude functions and calls of non-recursive functions that are scalar
    /// code too. Pushes the variables of `func` it reads.
    fn scalar_code(&self, func: &core::Function, e: ExprId, reads: &mut Vec<core::VarId>) -> bool {
        if !is_scalar_data(func.ty(e)) {
            return false;
        }
        let all = |items: &[ExprId], reads: &mut Vec<core::VarId>| {
            items.iter().all(|&x| self.scalar_code(func, x, reads))
        };
        match func.expr(e) {
            Expr::Literal(_) => true,
            Expr::Var(v) => {
                reads.push(*v);
                true
            }
            Expr::Tuple(items) => all(items, reads),
            Expr::TupleGet(t, _) => all(&[*t], reads),
            Expr::Unary { operand, .. } => all(&[*operand], reads),
            Expr::Binary { lhs, rhs, .. } => all(&[*lhs, *rhs], reads),
            Expr::And(a, b) | Expr::Or(a, b) => all(&[*a, *b], reads),
            Expr::If { cond, then, otherwise } => all(&[*cond, *then, *otherwise], reads),
            Expr::Let { value, body, .. } => all(&[*value, *body], reads),
            Expr::Assert { cond, .. } => all(&[*cond], reads),
            Expr::Prim { prim, args, funcs } => {
                funcs.is_empty()
                    && (is_scalar_math(prim) || matches!(prim, core::Prim::Pow))
                    && all(args, reads)
            }
            Expr::Call { func: callee, args } => {
                let callee_fn = self.core.function(*callee);
                !self.recursive[*callee as usize]
                    && all(args, reads)
                    && self.scalar_code(callee_fn, callee_fn.body, &mut Vec::new())
            }
            _ => false,
        }
    }

    /// A host loop over `values` (a collection of `ty`) and `extra` scalars or vectors;
    /// `cond` and `round` see the current state and give the condition and the next state.
    pub(super) fn rounds(
        &mut self,
        ty: &Type,
        values: &Rep,
        extra: Vec<VarId>,
        cond: impl FnOnce(&mut Self, &[VarId]) -> R<VarId>,
        round: impl FnOnce(&mut Self, Rep, &[VarId]) -> R<(Rep, Vec<VarId>)>,
    ) -> R<(Rep, Vec<VarId>)> {
        let mut init = Vec::new();
        seqs::push_vars(values, &mut init);
        let count = init.len();
        init.extend(extra);
        let state = self.fresh_like(&init);
        let cond = self.nested_block(|me| Ok(vec![cond(me, &state[count..])?]))?;
        let body = self.nested_block(|me| {
            let current = seqs::from_layout(ty, &mut state[..count].iter().copied());
            let (next, extra) = round(me, current, &state[count..])?;
            let mut vars = Vec::new();
            seqs::push_vars(&next, &mut vars);
            if vars.len() != count {
                me.b.record_bug("a round changed the layout of its values".to_string());
            }
            vars.extend(extra);
            Ok(vars)
        })?;
        let dests = self.fresh_like(&init);
        self.b.push(StmtKind::While { state, init, cond, body, dests: dests.clone() });
        let values = seqs::from_layout(ty, &mut dests[..count].iter().copied());
        Ok((values, dests[count..].to_vec()))
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
