//! Recursion under flattening: one lifted IR function per recursive core function.
//!
//! Calls of non-recursive functions are inlined where they happen. A recursive function (one
//! that can reach itself through calls and function arguments) cannot be inlined, so it gets a
//! *lifted* IR function, `f^`: it takes one collection per parameter plus the number of
//! elements, and runs `f`'s body once for all of them, as a lifted context. A recursive call
//! inside that body, in whatever context it sits (a split arm, a comprehension), calls `f^`
//! once for all the elements of that context: every level of the recursion tree is one flat
//! step over all its active segments (NESL; Blelloch and Sabot). Conditionals pack the active
//! elements, so each level's context holds only the elements still recursing, and a call on an
//! empty context is skipped: that is what ends the recursion.
//!
//! The host recursion is as deep as the data's recursion tree; the executor bounds it with a
//! clear error (E0409), as the interpreter does.

use crate::ir::{self, Block, FuncId, IrType, StmtKind, VarId};
use weft_core as core;
use weft_core::types::{Scalar, Type};

use super::{
    Ctx, CtxId, FlattenResult, Flattener, Frame, MOST_REPEATS, Memo, Overlap, ROOT, Rep, is_scalar_data,
    keep_disjoint, prims, seqs,
};

impl<'c> Flattener<'c> {
    /// Calls the lifted version of recursive `callee` for every element of `ctx`, with
    /// `args` (each a value of the given context, `ctx` or an ancestor of it).
    pub(super) fn call_lifted(
        &mut self,
        callee: core::FuncId,
        args: Vec<(Rep, CtxId)>,
        ctx: CtxId,
    ) -> FlattenResult<Rep> {
        let id = self.lifted_function(callee)?;
        let function = self.core.function(callee);
        let mut collections = Vec::new();
        for ((rep, from), &param) in args.into_iter().zip(&function.params) {
            let rep = self.lift(&rep, from, ctx);
            let collection = self.collection(&rep, &function.vars[param as usize].ty, ctx);
            self.note_overlap(callee, &collection);
            collections.push(collection);
        }
        let size = self.size(ctx);
        let piece = self.options.piece_size;
        if self.lifted(ctx) && self.lifted_depth == 0 && piece > 0 && is_scalar_data(&function.ret) {
            self.schedule(ir::Schedule::OneCallPerLevelPiecewise);
            return self.call_piecewise(id, &function.ret, &collections, size, piece);
        }
        let mut vars = Vec::new();
        for collection in &collections {
            seqs::push_vars(collection, &mut vars);
        }
        vars.push(size);
        let result_types = ir::layout(&function.ret, true);
        let call = |me: &mut Self| {
            let dests: Vec<VarId> = result_types.iter().map(|&t| me.b.var("result", t)).collect();
            me.b.push(StmtKind::Call { func: id, args: vars.clone(), dests: dests.clone() });
            Ok(dests)
        };
        let results = if self.lifted(ctx) {
            self.schedule(ir::Schedule::OneCallPerLevel);
            // The emptiness test that ends the recursion.
            let zero = self.b.i32(0);
            let any = self.b.binary(core::BinaryOp::Gt, size, zero);
            let then = self.nested_block(call)?;
            let otherwise = self.nested_block(|me| {
                let empty = me.empty_coll(&function.ret);
                let mut out = Vec::new();
                seqs::push_vars(&empty, &mut out);
                Ok(out)
            })?;
            let dests = self.fresh_like(&then.results);
            self.b.push(StmtKind::If { cond: any, then, otherwise, dests: dests.clone() });
            dests
        } else {
            call(self)?
        };
        let rep = self.assumed_disjoint(callee, seqs::from_layout(&function.ret, &mut results.into_iter()));
        Ok(if self.lifted(ctx) {
            rep
        } else {
            let zero = self.b.i32(0);
            self.gather_coll(&rep, zero)
        })
    }

    /// A value of `ctx` as a collection with one value per element (one in the root).
    fn collection(&mut self, rep: &Rep, ty: &Type, ctx: CtxId) -> Rep {
        let collection = if self.lifted(ctx) {
            self.force_rep(rep, ctx)
        } else {
            // One copy: each sequence's one segment.
            let one = self.b.i32(1);
            keep_disjoint(self.repeat(rep, one), &mark_disjoint(rep.clone(), 1), 1)
        };
        let mut out = Vec::new();
        seqs::push_vars(&collection, &mut out);
        if out.len() != ir::layout(ty, true).len() {
            self.b.record_bug(format!("an argument of type {ty} has {} variables", out.len()));
        }
        collection
    }

    /// Piecewise execution (Palmer, Prins and Westfold): a recursion entered from parallel
    /// code runs `piece` elements at a time, in a host loop, each piece flat. A level's
    /// frontier (every element's open subproblems at that depth, all live at once) is then a
    /// piece's, not the whole input's. The results, numbers and tuples, one per element, are
    /// written into a result allocated whole before the loop (`Op::WriteAt`), each once.
    fn call_piecewise(
        &mut self,
        id: FuncId,
        ret: &Type,
        args: &[Rep],
        size: VarId,
        piece: u32,
    ) -> FlattenResult<Rep> {
        let start = self.b.i32(0);
        let result_types = ir::layout(ret, true);
        let whole: Vec<VarId> = result_types
            .iter()
            .map(|t| {
                let zero = self.b.zero(t.elem);
                self.b.replicate(zero, size)
            })
            .collect();
        let whole = seqs::from_layout(ret, &mut whole.into_iter());
        let (results, _) = self.rounds(
            ret,
            &whole,
            vec![start],
            |me, state| Ok(me.b.binary(core::BinaryOp::Lt, state[0], size)),
            |me, so_far, state| {
                let start = state[0];
                let left = me.b.sub(size, start);
                let piece = me.b.i32(i64::from(piece.min(i32::MAX as u32)));
                let short = me.b.binary(core::BinaryOp::Lt, left, piece);
                let count = me.b.select(short, left, piece);
                let iota = me.b.emit("iota", ir::Op::Iota { len: count });
                let mine = me.b.add(iota, start);
                let mut vars = Vec::new();
                for arg in args {
                    let picked: Vec<VarId> =
                        prims::top_leaves(arg).into_iter().map(|v| me.b.gather(v, mine)).collect();
                    seqs::push_vars(&prims::rebuild_top(arg, &mut picked.into_iter()), &mut vars);
                }
                vars.push(count);
                let dests: Vec<VarId> = result_types.iter().map(|&t| me.b.var("result", t)).collect();
                me.b.push(StmtKind::Call { func: id, args: vars, dests: dests.clone() });
                let mut whole = Vec::new();
                seqs::push_vars(&so_far, &mut whole);
                let written: Vec<VarId> = whole
                    .into_iter()
                    .zip(dests)
                    .map(|(dst, src)| me.b.emit("result", ir::Op::WriteAt { dst, at: start, src }))
                    .collect();
                let next = me.b.add(start, count);
                Ok((seqs::from_layout(ret, &mut written.into_iter()), vec![next]))
            },
        )?;
        Ok(results)
    }

    /// The IR function `f^` of recursive core function `f`, flattened on first use.
    fn lifted_function(&mut self, callee: core::FuncId) -> FlattenResult<FuncId> {
        if let Some(&id) = self.lifted_ids.get(&callee) {
            return Ok(id);
        }
        let id = self.functions.len() as FuncId;
        self.functions.push(None);
        self.lifted_ids.insert(callee, id);
        let outer = self.enter_function();
        let function = self.core.function(callee);
        let size = self.b.var("size", IrType::scalar(Scalar::I32));
        let all = self.new_ctx(ROOT, size, None);
        let mut frame = Frame::new(function, self.next_frame);
        self.next_frame += 1;
        let mut params = Vec::new();
        for &p in &function.params {
            let var = &function.vars[p as usize];
            let vars: Vec<VarId> =
                ir::layout(&var.ty, true).into_iter().map(|t| self.b.var(&var.name, t)).collect();
            params.extend(&vars);
            let rep = self.assumed_disjoint(callee, seqs::from_layout(&var.ty, &mut vars.into_iter()));
            frame.vars[p as usize] = Some((rep, all));
        }
        params.push(size);
        self.frames.push(frame);
        self.b.span = function.span(function.body);
        self.lifted_depth += 1;
        let body = self.expr(function.body, all).map(|rep| {
            let rep = self.force_rep(&rep, all);
            self.note_overlap(callee, &rep);
            let results = self.canonical(&rep, &function.ret, all);
            Block { stmts: self.b.take_stmts(), results }
        });
        self.lifted_depth -= 1;
        let lifted = body.and_then(|body| self.finish(format!("{}^", function.name), params, body));
        self.leave_function(outer);
        self.functions[id as usize] = Some(lifted?);
        Ok(id)
    }

    /// The arguments or results of lifted `callee`, as disjoint as its calls and returns are
    /// taken to be (`Flattener::assumed`).
    fn assumed_disjoint(&self, callee: core::FuncId, rep: Rep) -> Rep {
        match self.assumed.get(&callee).copied().unwrap_or(Overlap::Repeats(1)) {
            Overlap::Repeats(times) => mark_disjoint(rep, times),
            Overlap::Any => rep,
        }
    }

    /// Notes how far `rep`, an argument or result of lifted `callee`, overlaps
    /// (`Flattener::found`).
    fn note_overlap(&mut self, callee: core::FuncId, rep: &Rep) {
        let overlap = match overlap_of(rep, &self.b) {
            Some(times) if times <= MOST_REPEATS => Overlap::Repeats(times),
            _ => Overlap::Any,
        };
        let found = self.found.entry(callee).or_insert(Overlap::Repeats(1));
        *found = found.worst(overlap);
    }

    /// Starts flattening another IR function: a fresh builder, contexts, frames and memo.
    fn enter_function(&mut self) -> OuterFunction<'c> {
        OuterFunction {
            builder: std::mem::take(&mut self.b),
            ctxs: std::mem::replace(&mut self.ctxs, vec![Ctx::root()]),
            frames: std::mem::take(&mut self.frames),
            memo: std::mem::take(&mut self.memo),
        }
    }

    fn leave_function(&mut self, outer: OuterFunction<'c>) {
        self.b = outer.builder;
        self.ctxs = outer.ctxs;
        self.frames = outer.frames;
        self.memo = outer.memo;
    }
}

/// How many times, at most, a collection's sequences' segments overlap at any level, where
/// each has segments of its own (`SeqRep::repeats`); `None` where they may overlap anyhow.
fn overlap_of(rep: &Rep, b: &super::builder::Builder) -> Option<u32> {
    match rep {
        Rep::Leaf(_) => Some(1),
        Rep::Tuple(items) => items.iter().try_fold(1, |most, r| Some(most.max(overlap_of(r, b)?))),
        Rep::Seq(seq) => {
            let own = seq.disjoint && b.is_vector(seq.offsets) && b.is_vector(seq.lengths);
            own.then_some(seq.repeats).zip(overlap_of(&seq.elems, b)).map(|(a, b)| a.max(b))
        }
    }
}

/// `rep` with every sequence, at every level, marked as overlapping at most `times` times.
fn mark_disjoint(rep: Rep, times: u32) -> Rep {
    match rep {
        Rep::Seq(mut seq) => {
            seq.disjoint = true;
            seq.repeats = times;
            seq.elems = mark_disjoint(seq.elems, times);
            Rep::Seq(seq)
        }
        Rep::Tuple(items) => Rep::Tuple(items.into_iter().map(|r| mark_disjoint(r, times)).collect()),
        leaf => leaf,
    }
}

/// The state of the IR function being flattened when another one is started.
struct OuterFunction<'c> {
    builder: super::builder::Builder,
    ctxs: Vec<Ctx>,
    frames: Vec<Frame<'c>>,
    memo: Memo,
}
