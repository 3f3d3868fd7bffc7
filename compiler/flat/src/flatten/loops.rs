//! Loops under flattening.
//!
//! In the root a loop is a host `While`. Inside parallel code every element runs its own
//! iterations, in one of two ways:
//! - A loop whose state is numbers and tuples and whose code is scalar (a `while`, or a `for`
//!   over a `range` or a sequence of numbers) is one `ElementLoop`: each element loops on its
//!   own inside one element-wise step, reading its sequence's items where they are. With
//!   `Options::inner`, a reduction of a scalar comprehension may run the same way.
//! - Any other loop runs on the host over the *active* elements: each round packs the elements
//!   whose condition holds into a child context, runs the body once for all of them, writes
//!   their new state back and evaluates their condition again, until no element is active. A
//!   body with nested parallel work is flattened as in any other context.

use crate::ir::{self, IrType, Op, ReduceOp, Segs, StmtKind, VarId};
use weft_core::types::{Scalar, Type};
use weft_core::{self as core, BinaryOp, Expr, ExprId, Pattern};

use super::{
    CtxId, FlattenResult, Flattener, ROOT, Rep, SeqRep, is_safe, is_scalar_data, is_scalar_math, seqs,
};

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
    ) -> FlattenResult<Rep> {
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
    ) -> FlattenResult<Rep> {
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
    ) -> FlattenResult<Rep> {
        let ty = func.ty(id).clone();
        let init = self.expr(init, ctx)?;
        if let Some(done) = self.element_for_loop(func, &ty, state, &init, elem, seq, body, ctx)? {
            self.schedule(ir::Schedule::SequentialInEachElement);
            return Ok(done);
        }
        self.schedule(ir::Schedule::RoundsOverRunningElements);
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
    ) -> FlattenResult<Rep> {
        let ty = func.ty(id).clone();
        let init = self.expr(init, ctx)?;
        let mut reads = Vec::new();
        if is_scalar_data(&ty)
            && self.scalar_code(func, cond, &mut reads)
            && self.scalar_code(func, body, &mut reads)
        {
            let holds = |me: &mut Self, _: &Rep, current: Rep| {
                me.bind(state, current, ROOT)?;
                me.expr(cond, ROOT)?.leaf().ok_or_else(|| me.bug("a non-scalar loop condition"))
            };
            let step = |me: &mut Self, _: &Rep, current: Rep| {
                me.bind(state, current, ROOT)?;
                me.expr(body, ROOT)
            };
            if let Some(done) = self.element_loop(reads, &Rep::Tuple(vec![]), &ty, &init, ctx, holds, step)? {
                self.schedule(ir::Schedule::SequentialInEachElement);
                return Ok(done);
            }
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

    /// A `for` loop with scalar state and a scalar body, over a `range` or a sequence of
    /// numbers or tuples, as one `ElementLoop`; `None` when it is not one.
    #[allow(clippy::too_many_arguments)]
    fn element_for_loop(
        &mut self,
        func: &'c core::Function,
        ty: &Type,
        state: &Pattern,
        init: &Rep,
        elem: &Pattern,
        seq: ExprId,
        body: ExprId,
        ctx: CtxId,
    ) -> FlattenResult<Option<Rep>> {
        let mut reads = Vec::new();
        let walks_numbers = matches!(func.ty(seq), Type::Seq(item) if is_scalar_data(item));
        if !is_scalar_data(ty) || !walks_numbers || !self.scalar_code(func, body, &mut reads) {
            return Ok(None);
        }
        let walked = self.walked(func, seq, ctx)?;
        self.walk_in_each_element(reads, &walked, ty, init, ctx, |me, current, item| {
            me.bind(state, current, ROOT)?;
            me.bind(elem, item, ROOT)?;
            me.expr(body, ROOT)
        })
    }

    /// A loop over each item of `walked` (a value of `ctx` from `walked()`), with state of type
    /// `ty` from `init`, as one `ElementLoop`: `next` flattens, in the root context, the next
    /// state from the current one and the item. `reads` are the free variables `next` reads.
    #[allow(clippy::too_many_arguments)]
    fn walk_in_each_element(
        &mut self,
        reads: Vec<core::VarId>,
        walked: &Rep,
        ty: &Type,
        init: &Rep,
        ctx: CtxId,
        next: impl FnOnce(&mut Self, Rep, Rep) -> FlattenResult<Rep>,
    ) -> FlattenResult<Option<Rep>> {
        // The state carries a counter into the walked items.
        let carried = Type::Tuple(vec![Type::Scalar(Scalar::I32), ty.clone()]);
        let zero = self.b.i32(0);
        let start = Rep::Tuple(vec![Rep::Leaf(zero), init.clone()]);
        let holds = |me: &mut Self, walked: &Rep, current: Rep| {
            let counter = counter_of(me, &current)?;
            let len = me.walk_len(walked)?;
            Ok(me.b.binary(BinaryOp::Lt, counter, len))
        };
        let step = |me: &mut Self, walked: &Rep, current: Rep| {
            let counter = counter_of(me, &current)?;
            let Rep::Tuple(mut fields) = current else {
                return Err(me.bug("a loop state without its counter"));
            };
            let item = me.walk_item(walked, counter)?;
            let state = next(me, fields.swap_remove(1), item)?;
            let one = me.b.i32(1);
            Ok(Rep::Tuple(vec![Rep::Leaf(me.b.add(counter, one)), state]))
        };
        Ok(match self.element_loop(reads, walked, &carried, &start, ctx, holds, step)? {
            Some(Rep::Tuple(mut fields)) if fields.len() == 2 => Some(fields.swap_remove(1)),
            Some(_) => return Err(self.bug("a loop state without its counter")),
            None => None,
        })
    }

    /// Copperhead's schedule for a small, regular inner computation: inside parallel code,
    /// `sum`, `product` or `reduce` (with an operator and an initial value that cannot fail) of
    /// a sequence of numbers, or of a comprehension over one whose body is scalar code, may run
    /// as a loop inside each element. Reading the items where they are, it builds no inner
    /// sequence, and it folds left to right as the interpreter does. `Options::inner` says
    /// when: never, always, or (on a GPU) when the run-time cost estimate of `sequential_pays`
    /// favours it, with the flat code in the other arm. `None`: flat code, as any other prim.
    pub(super) fn sequential_reduction(
        &mut self,
        func: &'c core::Function,
        id: ExprId,
        ctx: CtxId,
    ) -> FlattenResult<Option<Rep>> {
        use core::Prim;
        let Expr::Prim { prim: prim @ (Prim::Sum | Prim::Product | Prim::Reduce), args, funcs } =
            func.expr(id)
        else {
            return Ok(None);
        };
        if !self.lifted(ctx) {
            return Ok(None);
        }
        let span = self.b.span;
        let guarded = match self.options.inner_schedule() {
            super::InnerSchedule::Flat => None,
            super::InnerSchedule::Sequential => Some(false),
            super::InnerSchedule::Auto => Some(true),
        };
        let plan = guarded.and_then(|_| self.sequential_plan(func, id));
        let (Some(guarded), Some(plan)) = (guarded, plan) else {
            self.schedules.push((span, ir::Schedule::SegmentedReduction));
            return Ok(None);
        };
        let walked = self.walked(func, plan.seq, ctx)?;
        if !guarded {
            let reduced = self.reduce_in_each_element(func, id, &plan, &walked, ctx)?;
            let schedule = if reduced.is_some() {
                ir::Schedule::SequentialReduction
            } else {
                ir::Schedule::SegmentedReduction
            };
            self.schedules.push((span, schedule));
            return Ok(reduced);
        }
        self.schedules.push((span, ir::Schedule::GuardedReduction));
        let ty = func.ty(id).clone();
        let lengths = self.walk_len(&walked)?;
        let cond = self.sequential_pays(lengths, ctx);
        let then = self.nested_block(|me| {
            let reduced = match me.reduce_in_each_element(func, id, &plan, &walked, ctx)? {
                Some(reduced) => reduced,
                None => me.prim(func, id, prim, args, funcs, ctx)?,
            };
            Ok(me.canonical(&reduced, &ty, ctx))
        })?;
        let otherwise = self.nested_block(|me| {
            let reduced = me.prim(func, id, prim, args, funcs, ctx)?;
            Ok(me.canonical(&reduced, &ty, ctx))
        })?;
        let dests = self.fresh_like(&then.results);
        self.b.push(StmtKind::If { cond, then, otherwise, dests: dests.clone() });
        Ok(Some(seqs::from_layout(&ty, &mut dests.into_iter())))
    }

    /// The run-time cost estimate that picks the schedule of an inner reduction over items of
    /// per-element `lengths` in `ctx`. The sequential loop takes about `longest · max(m, W)`
    /// thread steps for `m` elements with a device of `W` threads (a thread runs its whole
    /// inner sequence, the longest holds its wave back, and fewer than `W` elements leave
    /// threads idle); the flat code about `FLAT_PASSES · max(total, W)` (its passes over all
    /// the items). Sequential when it is not the dearer; in `f32`, which does not overflow.
    fn sequential_pays(&mut self, lengths: VarId, ctx: CtxId) -> VarId {
        let (longest, total, elements) = if self.b.is_vector(lengths) {
            let longest = self.b.emit("longest", Op::Reduce { op: ReduceOp::Max, src: lengths });
            let total = self.b.sum(lengths);
            let elements = self.b.length(lengths);
            (longest, total, elements)
        } else {
            let elements = self.size(ctx);
            (lengths, self.b.mul(lengths, elements), elements)
        };
        let float = |me: &mut Self, x: f32| me.b.literal(core::Literal::Float(f64::from(x), Scalar::F32));
        let threads = float(self, ESTIMATE_THREADS);
        let at_least_threads = |me: &mut Self, count: VarId| {
            let count = me.b.cast(Scalar::F32, count);
            let few = me.b.binary(BinaryOp::Lt, count, threads);
            me.b.select(few, threads, count)
        };
        let element_steps = at_least_threads(self, elements);
        let item_steps = at_least_threads(self, total);
        let longest = self.b.cast(Scalar::F32, longest);
        let sequential = self.b.mul(longest, element_steps);
        let passes = float(self, FLAT_PASSES);
        let flat = self.b.mul(passes, item_steps);
        self.b.binary(BinaryOp::Le, sequential, flat)
    }

    /// Whether the reduction `id` can run as a loop inside each element, and how.
    fn sequential_plan(&self, func: &'c core::Function, id: ExprId) -> Option<SequentialPlan<'c>> {
        use core::Prim;
        let Expr::Prim { prim, args, funcs } = func.expr(id) else { return None };
        let ty = func.ty(id);
        let mut reads = Vec::new();
        let &source = args.first()?;
        let (seq, f) = match func.expr(source) {
            Expr::Prim { prim: Prim::Map, args: inner, funcs: fs } if inner.len() == 1 && fs.len() == 1 => {
                (inner[0], Some(&fs[0]))
            }
            _ => (source, None),
        };
        let walks_numbers = matches!(func.ty(seq), Type::Seq(item) if is_scalar_data(item));
        if !is_scalar_data(ty) || !walks_numbers || !f.is_none_or(|f| self.scalar_callee(func, f, &mut reads))
        {
            return None;
        }
        let combine = match (prim, ty) {
            (Prim::Sum, Type::Scalar(_)) => Combine::Builtin(BinaryOp::Add),
            (Prim::Product, Type::Scalar(_)) => Combine::Builtin(BinaryOp::Mul),
            (Prim::Reduce, _) => match (funcs.first(), args.get(1)) {
                (Some(op), Some(&init))
                    if is_safe(func, init)
                        && self.scalar_callee(func, op, &mut reads)
                        && is_safe(self.core.function(op.func), self.core.function(op.func).body) =>
                {
                    Combine::Call(op, init)
                }
                _ => return None,
            },
            _ => return None,
        };
        Some(SequentialPlan { seq, f, combine, reads })
    }

    /// The reduction `id` as a loop inside each element of `ctx`, by `plan`, over `walked`.
    /// `None` when a value the loop reads cannot be its parameter.
    fn reduce_in_each_element(
        &mut self,
        func: &'c core::Function,
        id: ExprId,
        plan: &SequentialPlan<'c>,
        walked: &Rep,
        ctx: CtxId,
    ) -> FlattenResult<Option<Rep>> {
        let ty = func.ty(id).clone();
        let init = match (&plan.combine, &ty) {
            (Combine::Call(_, init), _) => self.expr(*init, ctx)?,
            (Combine::Builtin(BinaryOp::Mul), Type::Scalar(s)) => {
                let one = self.b.i32(1);
                Rep::Leaf(self.b.cast(*s, one))
            }
            (_, Type::Scalar(s)) => Rep::Leaf(self.b.zero(*s)),
            _ => return Err(self.bug("a sum of a non-number")),
        };
        let (f, combine) = (plan.f, plan.combine);
        self.walk_in_each_element(plan.reads.clone(), walked, &ty, &init, ctx, |me, acc, item| {
            let value = match f {
                Some(f) => me.call_in(f, vec![item], ROOT, ROOT)?,
                None => item,
            };
            match combine {
                Combine::Call(op, _) => me.call_in(op, vec![acc, value], ROOT, ROOT),
                Combine::Builtin(op) => match (acc.leaf(), value.leaf()) {
                    (Some(a), Some(v)) => Ok(Rep::Leaf(me.b.binary(op, a, v))),
                    _ => Err(me.bug("a sum of a non-number")),
                },
            }
        })
    }

    /// Whether applying `callee` is scalar code: its captures are numbers, tuples or free
    /// sequences of them, and its body is scalar code. Pushes the variables of `func` its
    /// captures read.
    fn scalar_callee(
        &self,
        func: &core::Function,
        callee: &core::Callee,
        reads: &mut Vec<core::VarId>,
    ) -> bool {
        let callee_fn = self.core.function(callee.func);
        !self.recursive[callee.func as usize]
            && callee.captures.iter().all(|&c| match (func.expr(c), func.ty(c)) {
                (Expr::Var(v), Type::Seq(item)) if is_scalar_data(item) => {
                    reads.push(*v);
                    true
                }
                _ => self.scalar_code(func, c, reads),
            })
            && self.scalar_code(callee_fn, callee_fn.body, &mut Vec::new())
    }

    /// What an element loop walks, evaluated in `ctx`: for `range(...)`, its `(start, step,
    /// count)`, so that no element's range is ever built; otherwise the sequence itself.
    fn walked(&mut self, func: &'c core::Function, seq: ExprId, ctx: CtxId) -> FlattenResult<Rep> {
        if let Expr::Prim { prim: core::Prim::Range, args, .. } = func.expr(seq) {
            let mut bounds = Vec::new();
            for &arg in args {
                bounds.push(self.expr(arg, ctx)?.leaf().ok_or_else(|| self.bug("a non-scalar range bound"))?);
            }
            let (start, stop, step) = match bounds.as_slice() {
                [stop] => (None, *stop, None),
                [start, stop] => (Some(*start), *stop, None),
                [start, stop, step] => (Some(*start), *stop, Some(*step)),
                _ => return Err(self.bug("a range with no bounds")),
            };
            let outer_span = std::mem::replace(&mut self.b.span, func.span(seq));
            let (start, step, count) = self.range_parts(start, stop, step, ctx);
            self.b.span = outer_span;
            return Ok(Rep::Tuple(vec![Rep::Leaf(start), Rep::Leaf(step), Rep::Leaf(count)]));
        }
        self.expr(seq, ctx)
    }

    fn walk_len(&mut self, walked: &Rep) -> FlattenResult<VarId> {
        match walked {
            Rep::Tuple(parts) if parts.len() == 3 => parts[2].leaf().ok_or_else(|| self.bug("a range count")),
            Rep::Seq(seq) => Ok(seq.lengths),
            _ => Err(self.bug("an element loop walks neither a range nor a sequence")),
        }
    }

    /// Item `k` of what an element loop walks, in the root context inside the loop.
    fn walk_item(&mut self, walked: &Rep, k: VarId) -> FlattenResult<Rep> {
        match walked {
            Rep::Tuple(parts) if parts.len() == 3 => {
                let (Some(start), Some(step)) = (parts[0].leaf(), parts[1].leaf()) else {
                    return Err(self.bug("a range start and step"));
                };
                let scaled = self.b.mul(k, step);
                Ok(Rep::Leaf(self.b.add(start, scaled)))
            }
            Rep::Seq(seq) => {
                let position = self.b.add(seq.offsets, k);
                Ok(self.gather_coll(&seq.elems, position))
            }
            _ => Err(self.bug("an element loop walks neither a range nor a sequence")),
        }
    }

    /// A loop with scalar state (of type `ty`, from `init`) as one `ElementLoop`: every element
    /// of `ctx` loops on its own inside one element-wise step, as a GPU thread would. `reads`
    /// are the free variables of the loop's code and `walked` a value of `ctx` it reads too;
    /// both become scalar parameters (a sequence's elements stay whole, shared). `holds` and
    /// `step` flatten the condition and the next state in the root context, as host code, given
    /// `walked`'s parameters and the current state. `None` when a value read is not numbers,
    /// tuples or sequences of them.
    #[allow(clippy::too_many_arguments)]
    fn element_loop(
        &mut self,
        reads: Vec<core::VarId>,
        walked: &Rep,
        ty: &Type,
        init: &Rep,
        ctx: CtxId,
        holds: impl FnOnce(&mut Self, &Rep, Rep) -> FlattenResult<VarId>,
        step: impl FnOnce(&mut Self, &Rep, Rep) -> FlattenResult<Rep>,
    ) -> FlattenResult<Option<Rep>> {
        let mut reads = reads;
        reads.sort_unstable();
        reads.dedup();
        let mut inputs = Inputs::default();
        let Some(walked) = self.scalar_params(walked, &mut inputs) else { return Ok(None) };
        let mut locals = Vec::new();
        for v in reads {
            let Some((rep, from)) = self.frame().vars[v as usize].clone() else { continue };
            let rep = self.lift(&rep, from, ctx);
            let Some(local) = self.scalar_params(&rep, &mut inputs) else {
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
        let current = || seqs::from_layout(ty, &mut state_vars.iter().copied());
        let cond = self.nested_block(|me| Ok(vec![holds(me, &walked, current())?]));
        let body = self.nested_block(|me| {
            let next = step(me, &walked, current())?;
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
            inputs: inputs.outer,
            shared: inputs.shared,
            params: inputs.params,
            init: init_vars,
            state: state_vars,
            cond,
            body,
            dests: dests.clone(),
        });
        Ok(Some(seqs::from_layout(ty, &mut dests.into_iter())))
    }

    /// `rep` with each leaf replaced by a scalar parameter, the leaf becoming an input; a
    /// sequence of numbers or tuples keeps its elements, which the loop reads whole. `None` for
    /// a sequence of sequences.
    fn scalar_params(&mut self, rep: &Rep, inputs: &mut Inputs) -> Option<Rep> {
        Some(match rep {
            Rep::Leaf(v) => {
                let info = self.b.vars[*v as usize].clone();
                let param = self.b.var(&info.name, IrType::scalar(info.ty.elem));
                inputs.outer.push(*v);
                inputs.params.push(param);
                Rep::Leaf(param)
            }
            Rep::Tuple(items) => {
                Rep::Tuple(items.iter().map(|r| self.scalar_params(r, inputs)).collect::<Option<_>>()?)
            }
            Rep::Seq(seq) => {
                let mut elems = Vec::new();
                seqs::push_vars(&seq.elems, &mut elems);
                if holds_seq(&seq.elems) || elems.iter().any(|&v| !self.b.is_vector(v)) {
                    return None;
                }
                let offsets = self.scalar_params(&Rep::Leaf(seq.offsets), inputs)?.leaf()?;
                let lengths = self.scalar_params(&Rep::Leaf(seq.lengths), inputs)?.leaf()?;
                for v in elems {
                    if !inputs.shared.contains(&v) {
                        inputs.shared.push(v);
                    }
                }
                Rep::segments(offsets, lengths, seq.elems.clone())
            }
        })
    }

    /// Whether `e` is scalar code: numbers and tuples only, through operators, conditionals,
    /// lets, scalar prelude functions, calls of non-recursive functions that are scalar code
    /// too, and `xs[i]` and `len(xs)` of free sequences of numbers or tuples. Pushes the
    /// variables of `func` it reads.
    fn scalar_code(&self, func: &core::Function, e: ExprId, reads: &mut Vec<core::VarId>) -> bool {
        let all = |items: &[ExprId], reads: &mut Vec<core::VarId>| {
            items.iter().all(|&x| self.scalar_code(func, x, reads))
        };
        // A free sequence read an item at a time, inside the loop, from its shared elements.
        let walkable = |seq: ExprId, reads: &mut Vec<core::VarId>| match (func.expr(seq), func.ty(seq)) {
            (Expr::Var(v), Type::Seq(item)) if is_scalar_data(item) => {
                reads.push(*v);
                true
            }
            _ => false,
        };
        if !is_scalar_data(func.ty(e)) {
            return false;
        }
        match func.expr(e) {
            Expr::Literal(_) => true,
            Expr::Var(v) => {
                reads.push(*v);
                true
            }
            Expr::Tuple(items) => all(items, reads),
            Expr::TupleGet(t, _) => all(&[*t], reads),
            Expr::Index { seq, index, .. } => walkable(*seq, reads) && all(&[*index], reads),
            Expr::Unary { operand, .. } => all(&[*operand], reads),
            Expr::Binary { lhs, rhs, .. } => all(&[*lhs, *rhs], reads),
            Expr::And(a, b) | Expr::Or(a, b) => all(&[*a, *b], reads),
            Expr::If { cond, then, otherwise } => all(&[*cond, *then, *otherwise], reads),
            Expr::Let { value, body, .. } => all(&[*value, *body], reads),
            Expr::Assert { cond, .. } => all(&[*cond], reads),
            Expr::Prim { prim: core::Prim::Len, args, funcs } => {
                funcs.is_empty() && args.len() == 1 && walkable(args[0], reads)
            }
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
        cond: impl FnOnce(&mut Self, &[VarId]) -> FlattenResult<VarId>,
        round: impl FnOnce(&mut Self, Rep, &[VarId]) -> FlattenResult<(Rep, Vec<VarId>)>,
    ) -> FlattenResult<(Rep, Vec<VarId>)> {
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
        holds: &mut dyn FnMut(&mut Self, &Rep, CtxId) -> FlattenResult<VarId>,
        step: &mut dyn FnMut(&mut Self, &Rep, CtxId) -> FlattenResult<Rep>,
    ) -> FlattenResult<Rep> {
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
            let running = me.b.emit("running", Op::Pack { src: iota, flags: active, counts: None });
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
                written.push(
                    me.b.emit("state", Op::Scatter { dst: old, index: running, src: new, distinct: true }),
                );
            }
            let merged = super::prims::rebuild_top(&current, &mut written.into_iter());
            let merged = me.compact_sparse_state(ty, &merged)?;
            let f = me.b.bool(false);
            let idle = me.b.replicate(f, size);
            let active =
                me.b.emit("running", Op::Scatter { dst: idle, index: running, src: again, distinct: true });
            Ok((merged, vec![active]))
        };
        let (values, _) = self.rounds(ty, &start, vec![active], any, round)?;
        Ok(values)
    }
}

impl Flattener<'_> {
    /// A loop state (of type `ty`) whose sequences are copied out of the elements they share
    /// when those hold more than twice the elements the sequences cover. The merge of each round
    /// points the state into every round's elements joined (`share_elems`), so without the copy
    /// the elements of finished rounds and superseded states would stay, and grow, round after
    /// round; copying only past twice keeps a loop that slices its state (`xs = xs[1:]`) linear,
    /// amortised. Sequences nested in sequences still share their innermost elements.
    fn compact_sparse_state(&mut self, ty: &Type, state: &Rep) -> FlattenResult<Rep> {
        let mut shared = Vec::new();
        self.shared_seqs(state, &mut shared);
        if shared.is_empty() {
            return Ok(state.clone());
        }
        let mut held = self.b.i32(0);
        let mut covered = self.b.i32(0);
        for seq in shared {
            let size = self.coll_size(&seq.elems)?;
            held = self.b.add(held, size);
            let lengths = self.b.sum(seq.lengths);
            covered = self.b.add(covered, lengths);
        }
        let two = self.b.i32(2);
        let bound = self.b.mul(covered, two);
        let sparse = self.b.binary(BinaryOp::Gt, held, bound);
        let vars = |rep: &Rep| {
            let mut vars = Vec::new();
            seqs::push_vars(rep, &mut vars);
            vars
        };
        let then = self.nested_block(|me| Ok(vars(&me.compact_state(state))))?;
        let otherwise = self.nested_block(|_| Ok(vars(state)))?;
        let dests = self.fresh_like(&then.results);
        self.b.push(StmtKind::If { cond: sparse, then, otherwise, dests: dests.clone() });
        Ok(seqs::from_layout(ty, &mut dests.into_iter()))
    }

    /// The top-level sequences of `rep` that point into shared elements.
    fn shared_seqs<'r>(&self, rep: &'r Rep, out: &mut Vec<&'r SeqRep>) {
        match rep {
            Rep::Leaf(_) => {}
            Rep::Tuple(fields) => fields.iter().for_each(|f| self.shared_seqs(f, out)),
            Rep::Seq(seq) => {
                if self.shares_elems(seq) {
                    out.push(seq);
                }
            }
        }
    }

    /// Whether a lifted sequence may point into elements other sequences share.
    fn shares_elems(&self, seq: &SeqRep) -> bool {
        !seq.compact && self.b.is_vector(seq.offsets) && self.b.is_vector(seq.lengths)
    }

    /// `state` with every sequence `shared_seqs` finds copied out into elements of its own.
    fn compact_state(&mut self, state: &Rep) -> Rep {
        match state {
            Rep::Leaf(_) => state.clone(),
            Rep::Tuple(fields) => Rep::Tuple(fields.iter().map(|f| self.compact_state(f)).collect()),
            Rep::Seq(seq) if !self.shares_elems(seq) => state.clone(),
            Rep::Seq(seq) => {
                let segs = Segs { offsets: seq.offsets, lengths: seq.lengths };
                let (elems, _) = self.segment_elems(seq, segs, false);
                let offsets = self.b.offsets_of(seq.lengths);
                Rep::Seq(Box::new(SeqRep {
                    offsets,
                    lengths: seq.lengths,
                    elems,
                    compact: true,
                    disjoint: true,
                    repeats: 1,
                }))
            }
        }
    }
}

/// The values of the enclosing context an element loop reads: `outer` (scalars or vectors of
/// the context) become the scalar `params`; `shared` vectors are read whole.
/// How a sequential reduction combines its accumulator with the next item.
/// An inner reduction that can run as a loop inside each element: the sequence it walks, the
/// function it maps over the items (if any), how it combines them, and the variables read.
struct SequentialPlan<'a> {
    seq: ExprId,
    f: Option<&'a core::Callee>,
    combine: Combine<'a>,
    reads: Vec<core::VarId>,
}

/// The threads the schedule's cost estimate assumes a device keeps busy at once: few for a GPU,
/// so that a few thousand elements already count as enough parallelism for the loop.
const ESTIMATE_THREADS: f32 = 4096.0;

/// The passes over all items the flat code of an inner reduction makes, by the estimate: the
/// segment ids and positions, the items' gathers, and the segmented reduction's own passes.
const FLAT_PASSES: f32 = 4.0;

#[derive(Clone, Copy)]
enum Combine<'a> {
    Builtin(BinaryOp),
    /// A function, with the reduction's initial value.
    Call(&'a core::Callee, ExprId),
}

#[derive(Default)]
struct Inputs {
    outer: Vec<VarId>,
    params: Vec<VarId>,
    shared: Vec<VarId>,
}

fn counter_of(me: &Flattener<'_>, state: &Rep) -> FlattenResult<VarId> {
    match state {
        Rep::Tuple(fields) if fields.len() == 2 => fields[0].leaf().ok_or_else(|| me.bug("a loop counter")),
        _ => Err(me.bug("a loop state without its counter")),
    }
}

fn holds_seq(rep: &Rep) -> bool {
    match rep {
        Rep::Leaf(_) => false,
        Rep::Tuple(items) => items.iter().any(holds_seq),
        Rep::Seq(_) => true,
    }
}
