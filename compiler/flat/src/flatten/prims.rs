//! The prelude under flattening: each operation as segmented IR ops, in any context.

use crate::ir::{Check, LengthCheck, MathFn, Op, ReduceOp, Segs, VarId};
use weft_core::types::{Scalar, Type};
use weft_core::{self as core, BinaryOp, Callee, Expr, ExprId, Prim};

use super::{CtxId, FlattenResult, Flattener, Rep, SeqRep, seqs};

impl<'c> Flattener<'c> {
    pub(super) fn prim(
        &mut self,
        func: &'c core::Function,
        id: ExprId,
        prim: &Prim,
        args: &[ExprId],
        funcs: &[Callee],
        ctx: CtxId,
    ) -> FlattenResult<Rep> {
        let ret = func.ty(id).clone();
        let arg_types: Vec<Type> = args.iter().map(|&a| func.ty(a).clone()).collect();
        let values = args.iter().map(|&a| self.expr(a, ctx)).collect::<FlattenResult<Vec<Rep>>>()?;
        let seq = |me: &Self, i: usize| -> FlattenResult<SeqRep> {
            values.get(i).cloned().and_then(Rep::seq).ok_or_else(|| me.bug("a non-sequence argument"))
        };
        let leaf = |me: &Self, i: usize| -> FlattenResult<VarId> {
            values.get(i).and_then(Rep::leaf).ok_or_else(|| me.bug("a non-scalar argument"))
        };
        let elem_of = |t: &Type| match t {
            Type::Seq(e) => (**e).clone(),
            _ => Type::Tuple(vec![]),
        };
        Ok(match prim {
            Prim::Len => Rep::Leaf(seq(self, 0)?.lengths),
            Prim::Range => {
                let (start, stop, step) = match values.len() {
                    1 => (None, leaf(self, 0)?, None),
                    2 => (Some(leaf(self, 0)?), leaf(self, 1)?, None),
                    _ => (Some(leaf(self, 0)?), leaf(self, 1)?, Some(leaf(self, 2)?)),
                };
                self.range(start, stop, step, ctx)
            }
            Prim::Indices => {
                let n = seq(self, 0)?.lengths;
                self.range(None, n, None, ctx)
            }
            Prim::Map => {
                let seqs: Vec<SeqRep> =
                    (0..values.len()).map(|i| seq(self, i)).collect::<FlattenResult<_>>()?;
                let callee = funcs.first().ok_or_else(|| self.bug("a map without a function"))?;
                let check = (!func.equal_lengths.contains(&id)).then_some("map");
                self.map(callee, &seqs, ctx, check)?
            }
            Prim::Filter => {
                let xs = seq(self, 0)?;
                let callee = funcs.first().ok_or_else(|| self.bug("a filter without a function"))?;
                self.filter(callee, &xs, ctx)?
            }
            Prim::Zip => {
                let seqs: Vec<SeqRep> =
                    (0..values.len()).map(|i| seq(self, i)).collect::<FlattenResult<_>>()?;
                let check = (!func.equal_lengths.contains(&id)).then_some("zip");
                let (_, elems, offsets, lengths) = self.enter(&seqs, ctx, check)?;
                Rep::Seq(Box::new(SeqRep {
                    offsets,
                    lengths,
                    elems: Rep::Tuple(elems),
                    compact: true,
                    disjoint: true,
                    repeats: 1,
                }))
            }
            Prim::Unzip => {
                let xs = seq(self, 0)?;
                match &xs.elems {
                    Rep::Tuple(fields) => Rep::Tuple(
                        fields
                            .iter()
                            .map(|f| Rep::Seq(Box::new(SeqRep { elems: f.clone(), ..xs.clone() })))
                            .collect(),
                    ),
                    _ => return Err(self.bug("unzip of a non-tuple sequence")),
                }
            }
            Prim::Concat => self.concat(&seq(self, 0)?, &seq(self, 1)?, ctx)?,
            Prim::Flatten => self.flatten_seq(&seq(self, 0)?, ctx)?,
            Prim::Reverse => {
                let xs = seq(self, 0)?;
                let (segs, single) = self.segs(&xs, ctx, true);
                let ids = self.b.emit("segment", Op::SegIds { lengths: segs.lengths, within: vec![] });
                let within = self.b.emit("within", Op::SegIota { lengths: segs.lengths, within: vec![] });
                let starts = self.b.gather(segs.offsets, ids);
                let lens = self.b.gather(segs.lengths, ids);
                let one = self.b.i32(1);
                let end = self.b.add(starts, lens);
                let last = self.b.sub(end, one);
                let positions = self.b.sub(last, within);
                let elems = self.gather_coll(&xs.elems, positions);
                self.compact_result(elems, &xs, segs, single)
            }
            Prim::Replicate => {
                let n = self.b.cast(Scalar::I32, leaf(self, 1)?);
                let mut operands = [n];
                self.guard(&mut operands, ctx);
                self.b.check(Check::NonNegative { n: operands[0], what: "replicate".to_string() });
                let counts = self.range(None, n, None, ctx).seq().ok_or_else(|| self.bug("range"))?;
                let (child, _, offsets, lengths) = self.enter(&[counts], ctx, None)?;
                let value = self.lift(&values[0], ctx, child);
                self.exit(&value, child, offsets, lengths)
            }
            Prim::Gather => {
                let (xs, idx) = (seq(self, 0)?, seq(self, 1)?);
                let (child, elems, offsets, lengths) = self.enter(&[idx], ctx, None)?;
                let xs_here =
                    self.lift(&Rep::Seq(Box::new(xs)), ctx, child).seq().ok_or_else(|| self.bug("gather"))?;
                let i = elems[0].leaf().ok_or_else(|| self.bug("a non-integer gather index"))?;
                let picked = self.index(&xs_here, i, child, "gather ")?;
                self.exit(&picked, child, offsets, lengths)
            }
            Prim::Scatter => self.scatter(&seq(self, 0)?, &seq(self, 1)?, &seq(self, 2)?, ctx)?,
            Prim::Permute => self.permute(&seq(self, 0)?, &seq(self, 1)?, ctx)?,
            Prim::Sort => {
                let xs = seq(self, 0)?;
                let mut keys = Vec::new();
                if !scalar_leaves(&xs.elems, &mut keys) {
                    return self.merge_sort(&elem_of(&arg_types[0]), &xs, ctx);
                }
                let (segs, single) = self.segs(&xs, ctx, true);
                let order = self.b.emit("order", Op::SegSortPerm { keys, segs });
                let elems = self.gather_coll(&xs.elems, order);
                self.compact_result(elems, &xs, segs, single)
            }
            Prim::Count => {
                let xs = seq(self, 0)?;
                let flags = xs.elems.leaf().ok_or_else(|| self.bug("count of non-flags"))?;
                let ones = self.b.cast(Scalar::I32, flags);
                let xs = SeqRep { elems: Rep::Leaf(ones), ..xs };
                Rep::Leaf(self.reduce_leaf(ReduceOp::Add, &xs, ones, ctx))
            }
            Prim::Lengths => {
                let xss = seq(self, 0)?;
                let inner = xss.elems.clone().seq().ok_or_else(|| self.bug("lengths of a flat sequence"))?;
                Rep::Seq(Box::new(SeqRep { elems: Rep::Leaf(inner.lengths), ..xss }))
            }
            Prim::Partition => self.partition(&seq(self, 0)?, &seq(self, 1)?, ctx)?,
            Prim::Sum | Prim::Product | Prim::Any | Prim::All => {
                let op = match prim {
                    Prim::Sum => ReduceOp::Add,
                    Prim::Product => ReduceOp::Mul,
                    Prim::Any => ReduceOp::Or,
                    _ => ReduceOp::And,
                };
                let xs = seq(self, 0)?;
                let src = xs.elems.leaf().ok_or_else(|| self.bug("a reduction of non-scalars"))?;
                Rep::Leaf(self.reduce_leaf(op, &xs, src, ctx))
            }
            Prim::Min | Prim::Max | Prim::ArgMin | Prim::ArgMax => {
                let xs = seq(self, 0)?;
                let mut operands = [xs.lengths];
                self.guard(&mut operands, ctx);
                self.b.check(Check::NonEmpty { len: operands[0], what: prim.name().to_string() });
                let max = matches!(prim, Prim::Max | Prim::ArgMax);
                let Some(src) = xs.elems.leaf() else {
                    let arg = matches!(prim, Prim::ArgMin | Prim::ArgMax);
                    return self.extreme_by_tree(max, arg, &elem_of(&arg_types[0]), &xs, ctx);
                };
                match prim {
                    Prim::Min => Rep::Leaf(self.reduce_leaf(ReduceOp::Min, &xs, src, ctx)),
                    Prim::Max => Rep::Leaf(self.reduce_leaf(ReduceOp::Max, &xs, src, ctx)),
                    _ => {
                        let (segs, single) = self.segs(&xs, ctx, false);
                        let at = self.b.emit("at", Op::SegArgExtreme { max, src, segs });
                        Rep::Leaf(self.unseg(at, single))
                    }
                }
            }
            Prim::Min2 | Prim::Max2 => {
                let f = if matches!(prim, Prim::Min2) { MathFn::Min } else { MathFn::Max };
                // The type checker gives the two-argument forms numbers only.
                Rep::Leaf(self.b.emit("t", Op::Math(f, vec![leaf(self, 0)?, leaf(self, 1)?])))
            }
            Prim::Reduce => {
                let xs = seq(self, 0)?;
                let callee = funcs.first().ok_or_else(|| self.bug("reduce without a function"))?;
                let elem = elem_of(&arg_types[0]);
                match self.operator(callee, &elem) {
                    Some(ops) => self.reduce_with_init(&ops, &xs, &values[1], ctx)?,
                    None => self.reduce_with(callee, &elem, &xs, &values[1], ctx)?,
                }
            }
            Prim::Scan | Prim::ExclusiveScan => {
                let exclusive = matches!(prim, Prim::ExclusiveScan);
                let xs = if exclusive { seq(self, 1)? } else { seq(self, 0)? };
                let callee = funcs.first().ok_or_else(|| self.bug("scan without a function"))?;
                let elem = elem_of(&ret);
                let init = exclusive.then(|| values[0].clone());
                match self.operator(callee, &elem) {
                    Some(ops) => self.scan(&ops, &xs, init, ctx)?,
                    None => self.scan_with(callee, &elem, &xs, init.as_ref(), ctx)?,
                }
            }
            Prim::Abs
            | Prim::Sqrt
            | Prim::Exp
            | Prim::Log
            | Prim::Sin
            | Prim::Cos
            | Prim::Tan
            | Prim::Erf
            | Prim::Floor
            | Prim::Ceil
            | Prim::Atan2 => {
                let f = match prim {
                    Prim::Abs => MathFn::Abs,
                    Prim::Sqrt => MathFn::Sqrt,
                    Prim::Exp => MathFn::Exp,
                    Prim::Log => MathFn::Log,
                    Prim::Sin => MathFn::Sin,
                    Prim::Cos => MathFn::Cos,
                    Prim::Tan => MathFn::Tan,
                    Prim::Erf => MathFn::Erf,
                    Prim::Floor => MathFn::Floor,
                    Prim::Ceil => MathFn::Ceil,
                    _ => MathFn::Atan2,
                };
                let operands = (0..values.len()).map(|i| leaf(self, i)).collect::<FlattenResult<Vec<_>>>()?;
                Rep::Leaf(self.b.emit("t", Op::Math(f, operands)))
            }
            Prim::Pow => {
                let (a, b) = (leaf(self, 0)?, leaf(self, 1)?);
                self.binary(BinaryOp::Pow, &arg_types[0], &Rep::Leaf(a), &Rep::Leaf(b), ctx).map(Rep::Leaf)?
            }
            Prim::Cast(to) => Rep::Leaf(self.b.emit("t", Op::Cast(*to, leaf(self, 0)?))),
            Prim::RandomF32 | Prim::RandomI32 => {
                let operands = (0..values.len()).map(|i| leaf(self, i)).collect::<FlattenResult<Vec<_>>>()?;
                let n = self.b.cast(Scalar::I32, operands[0]);
                let mut guarded = [n];
                self.guard(&mut guarded, ctx);
                self.b.check(Check::NonNegative { n: guarded[0], what: prim.name().to_string() });
                let seed = self.b.cast(Scalar::I32, operands[operands.len() - 1]);
                if matches!(prim, Prim::RandomI32) {
                    let mut bounds = [operands[1], operands[2]];
                    self.guard(&mut bounds, ctx);
                    self.b.check(Check::RandomRange { lo: bounds[0], hi: bounds[1] });
                }
                let counts = self.range(None, n, None, ctx).seq().ok_or_else(|| self.bug("range"))?;
                let (child, elems, offsets, lengths) = self.enter(&[counts], ctx, None)?;
                let index = elems[0].leaf().ok_or_else(|| self.bug("range"))?;
                let seed = self.lift(&Rep::Leaf(seed), ctx, child).leaf().unwrap_or(seed);
                let data = match prim {
                    Prim::RandomF32 => self.b.emit("random", Op::RandomF32 { seed, index }),
                    _ => {
                        let lo = self.lift(&Rep::Leaf(operands[1]), ctx, child).leaf().unwrap_or(operands[1]);
                        let hi = self.lift(&Rep::Leaf(operands[2]), ctx, child).leaf().unwrap_or(operands[2]);
                        self.b.emit("random", Op::RandomI32 { lo, hi, seed, index })
                    }
                };
                self.exit(&Rep::Leaf(data), child, offsets, lengths)
            }
            Prim::LoadNpy(path) | Prim::LoadCsv(path) => {
                if self.lifted(ctx) {
                    return Err(self.unsupported(self.b.span, "loading data inside parallel code"));
                }
                let csv = matches!(prim, Prim::LoadCsv(_));
                let fields: Vec<VarId> = (0..crate::ir::layout(&ret, false).len())
                    .map(|field| {
                        self.b.emit("loaded", Op::Load { path: path.clone(), csv, ty: ret.clone(), field })
                    })
                    .collect();
                let rep = seqs::from_layout(&ret, &mut fields.into_iter());
                mark_compact(rep)
            }
        })
    }

    /// `range(start, stop, step)`: uniform when its arguments are.
    pub(super) fn range(
        &mut self,
        start: Option<VarId>,
        stop: VarId,
        step: Option<VarId>,
        ctx: CtxId,
    ) -> Rep {
        let simple = start.is_none() && step.is_none();
        let zero = self.b.i32(0);
        let (start, step, count) = self.range_parts(start, stop, step, ctx);
        if !self.b.is_vector(count) && !self.b.is_vector(start) && !self.b.is_vector(step) {
            let iota = self.b.emit("iota", Op::Iota { len: count });
            let elems = if simple {
                iota
            } else {
                let scaled = self.b.mul(iota, step);
                self.b.add(scaled, start)
            };
            return Rep::Seq(Box::new(SeqRep {
                offsets: zero,
                lengths: count,
                elems: Rep::Leaf(elems),
                compact: true,
                disjoint: true,
                repeats: 1,
            }));
        }
        let count = self.force(count, ctx);
        let within = self.b.emit("within", Op::SegIota { lengths: count, within: vec![] });
        let elems = if simple {
            within
        } else {
            // A uniform start or step (a literal step, say) stays a scalar.
            let ids = self.b.emit("segment", Op::SegIds { lengths: count, within: vec![] });
            let per_item = |me: &mut Self, v: VarId| if me.b.is_vector(v) { me.b.gather(v, ids) } else { v };
            let start = per_item(self, start);
            let step = per_item(self, step);
            let scaled = self.b.mul(within, step);
            self.b.add(scaled, start)
        };
        let offsets = self.b.offsets_of(count);
        Rep::Seq(Box::new(SeqRep {
            offsets,
            lengths: count,
            elems: Rep::Leaf(elems),
            compact: true,
            disjoint: true,
            repeats: 1,
        }))
    }

    /// A range's start, step (checked not to be zero) and number of items, in `ctx`.
    pub(super) fn range_parts(
        &mut self,
        start: Option<VarId>,
        stop: VarId,
        step: Option<VarId>,
        ctx: CtxId,
    ) -> (VarId, VarId, VarId) {
        let zero = self.b.i32(0);
        let one = self.b.i32(1);
        let start = start.unwrap_or(zero);
        let step = self.checked_step(step, "range", ctx);
        // count = (stop - start - 1) / step + 1 when the range is not empty, stepping either way,
        // in i64: the distance between two i32 bounds need not fit in an i32.
        let forward = self.b.binary(BinaryOp::Gt, step, zero);
        let ahead = self.b.binary(BinaryOp::Lt, start, stop);
        let behind = self.b.binary(BinaryOp::Gt, start, stop);
        let non_empty = self.b.select(forward, ahead, behind);
        let [start64, stop64, step64, zero64, one64] =
            [start, stop, step, zero, one].map(|v| self.b.cast(Scalar::I64, v));
        let distance = {
            let forwards = self.b.sub(stop64, start64);
            let backwards = self.b.sub(start64, stop64);
            self.b.select(forward, forwards, backwards)
        };
        let stride = {
            let negated = self.b.emit("t", Op::Unary(weft_core::UnaryOp::Neg, step64));
            let abs = self.b.select(forward, step64, negated);
            let is_zero = self.b.binary(BinaryOp::Eq, abs, zero64);
            self.b.select(is_zero, one64, abs)
        };
        let less = self.b.sub(distance, one64);
        let quotient = self.b.binary(BinaryOp::FloorDiv, less, stride);
        let count_if = self.b.add(quotient, one64);
        let count = self.b.select(non_empty, count_if, zero64);
        (start, step, self.b.cast(Scalar::I32, count))
    }

    /// Applies a function to the elements of sequences, in a child context; `check` names the
    /// operation whose lengths are checked equal (`None` when shape analysis proved them).
    fn map(
        &mut self,
        callee: &Callee,
        seqs: &[SeqRep],
        ctx: CtxId,
        check: Option<&str>,
    ) -> FlattenResult<Rep> {
        let (child, elems, offsets, lengths) = self.enter(seqs, ctx, check)?;
        let body = self.call_in(callee, elems, ctx, child)?;
        Ok(self.exit(&body, child, offsets, lengths))
    }

    /// Flattens `callee` in `child` with its captures (evaluated in `ctx`) and `args` (values
    /// of `child`).
    pub(super) fn call_in(
        &mut self,
        callee: &Callee,
        args: Vec<Rep>,
        ctx: CtxId,
        child: CtxId,
    ) -> FlattenResult<Rep> {
        let mut bound = Vec::new();
        for &capture in &callee.captures {
            bound.push((self.expr(capture, ctx)?, ctx));
        }
        bound.extend(args.into_iter().map(|a| (a, child)));
        if self.recursive[callee.func as usize] {
            return self.call_lifted(callee.func, bound, child);
        }
        self.inline(callee.func, bound, child)
    }

    fn filter(&mut self, callee: &Callee, xs: &SeqRep, ctx: CtxId) -> FlattenResult<Rep> {
        let (child, elems, offsets, lengths) = self.enter(std::slice::from_ref(xs), ctx, None)?;
        let flags = self.call_in(callee, elems.clone(), ctx, child)?;
        let flags = flags.leaf().ok_or_else(|| self.bug("a non-bool filter"))?;
        let flags = self.force(flags, child);
        let flags = if self.b.is_vector(flags) {
            flags
        } else {
            let size = self.size(child);
            self.b.replicate(flags, size)
        };
        if !self.lifted(ctx) {
            // The count comes after the pack, as FILTER->FILTER expects: between two filters
            // it allows only ops computed from the first one's result.
            let kept = self.pack_coll(&elems[0], flags, None);
            let ones = self.b.cast(Scalar::I32, flags);
            let zero = self.b.i32(0);
            let count = self.b.sum(ones);
            return Ok(Rep::Seq(Box::new(SeqRep {
                offsets: zero,
                lengths: count,
                elems: kept,
                compact: true,
                disjoint: true,
                repeats: 1,
            })));
        }
        // The running count of kept elements serves the packs (each kept element's place) and
        // gives every segment's offset and count at its two ends: the segments lie one after
        // another in the child context, from `offsets`. No segmented sum, no scan of counts.
        let ones = self.b.cast(Scalar::I32, flags);
        let counted = self.b.emit("counted", Op::Scan { op: ReduceOp::Add, src: ones, init: None });
        let kept = self.pack_coll(&elems[0], flags, Some(counted));
        let ends = self.b.add(offsets, lengths);
        let before = self.kept_before(counted, offsets);
        let through = self.kept_before(counted, ends);
        let counts = self.b.sub(through, before);
        Ok(Rep::Seq(Box::new(SeqRep {
            offsets: before,
            lengths: counts,
            elems: kept,
            compact: true,
            disjoint: true,
            repeats: 1,
        })))
    }

    /// How many elements the running count `counted` (inclusive) has kept before each of the
    /// positions `at`: 0 at position 0, else the count through the position before. The
    /// count is read only where `at` is past 0, so an empty count is never read.
    fn kept_before(&mut self, counted: VarId, at: VarId) -> VarId {
        let (zero, one) = (self.b.i32(0), self.b.i32(1));
        let none_before = self.b.replicate(zero, one);
        let past_start = self.b.binary(BinaryOp::Gt, at, zero);
        let previous = self.b.sub(at, one);
        let index = self.b.select(past_start, previous, zero);
        self.b.gather_either(counted, none_before, past_start, index)
    }

    fn pack_coll(&mut self, coll: &Rep, flags: VarId, counts: Option<VarId>) -> Rep {
        match coll {
            Rep::Leaf(v) => Rep::Leaf(self.b.emit("kept", Op::Pack { src: *v, flags, counts })),
            Rep::Tuple(items) => Rep::Tuple(items.iter().map(|r| self.pack_coll(r, flags, counts)).collect()),
            Rep::Seq(seq) => Rep::Seq(Box::new(SeqRep {
                offsets: self.b.emit("kept", Op::Pack { src: seq.offsets, flags, counts }),
                lengths: self.b.emit("kept", Op::Pack { src: seq.lengths, flags, counts }),
                elems: seq.elems.clone(),
                compact: false,
                disjoint: seq.disjoint,
                repeats: seq.repeats,
            })),
        }
    }

    /// A sequence whose elements were produced segment after segment for `segs`.
    fn compact_result(&mut self, elems: Rep, xs: &SeqRep, segs: Segs, single: bool) -> Rep {
        if single {
            let zero = self.b.i32(0);
            return Rep::Seq(Box::new(SeqRep {
                offsets: zero,
                lengths: xs.lengths,
                elems,
                compact: true,
                disjoint: true,
                repeats: 1,
            }));
        }
        let offsets = self.b.offsets_of(segs.lengths);
        Rep::Seq(Box::new(SeqRep {
            offsets,
            lengths: segs.lengths,
            elems,
            compact: true,
            disjoint: true,
            repeats: 1,
        }))
    }

    /// A built-in reduction of one leaf of a sequence's elements, per segment.
    fn reduce_leaf(&mut self, op: ReduceOp, xs: &SeqRep, src: VarId, ctx: CtxId) -> VarId {
        let uniform = !self.b.is_vector(xs.offsets) && !self.b.is_vector(xs.lengths);
        if uniform && xs.compact && (!self.lifted(ctx) || !matches!(op, ReduceOp::Min | ReduceOp::Max)) {
            return self.b.emit("reduced", Op::Reduce { op, src });
        }
        let (segs, single) = self.segs(xs, ctx, !matches!(op, ReduceOp::Min | ReduceOp::Max));
        let reduced = self.b.emit("reduced", Op::SegReduce { op, src, segs });
        self.unseg(reduced, single)
    }

    /// `reduce(op, xs, init)`: `op(init, op-fold of xs)`, or `init` for an empty `xs`.
    fn reduce_with_init(
        &mut self,
        ops: &[ReduceOp],
        xs: &SeqRep,
        init: &Rep,
        ctx: CtxId,
    ) -> FlattenResult<Rep> {
        let mut leaves = Vec::new();
        scalar_leaves(&xs.elems, &mut leaves);
        let mut inits = Vec::new();
        scalar_leaves(init, &mut inits);
        let zero = self.b.i32(0);
        let non_empty = self.b.binary(BinaryOp::Gt, xs.lengths, zero);
        let mut out = Vec::new();
        for ((&op, &src), &init) in ops.iter().zip(&leaves).zip(&inits) {
            let reduced = self.reduce_leaf(op, xs, src, ctx);
            let combined = self.combine(op, init, reduced);
            out.push(if matches!(op, ReduceOp::Min | ReduceOp::Max) {
                self.b.select(non_empty, combined, init)
            } else {
                combined
            });
        }
        Ok(rebuild(init, &mut out.into_iter()))
    }

    /// `a op b` for a built-in operator, element-wise.
    fn combine(&mut self, op: ReduceOp, a: VarId, b: VarId) -> VarId {
        match op {
            ReduceOp::Add => self.b.add(a, b),
            ReduceOp::Mul => self.b.mul(a, b),
            ReduceOp::Min => self.b.emit("t", Op::Math(MathFn::Min, vec![a, b])),
            ReduceOp::Max => self.b.emit("t", Op::Math(MathFn::Max, vec![a, b])),
            ReduceOp::And => self.b.binary(BinaryOp::BitAnd, a, b),
            ReduceOp::Or => self.b.binary(BinaryOp::BitOr, a, b),
            ReduceOp::Xor => self.b.binary(BinaryOp::BitXor, a, b),
        }
    }

    fn scan(&mut self, ops: &[ReduceOp], xs: &SeqRep, init: Option<Rep>, ctx: CtxId) -> FlattenResult<Rep> {
        let mut leaves = Vec::new();
        scalar_leaves(&xs.elems, &mut leaves);
        let inits: Vec<VarId> = match &init {
            Some(init) => {
                let mut v = Vec::new();
                scalar_leaves(init, &mut v);
                v
            }
            None => vec![],
        };
        let uniform_init = inits.iter().all(|&v| !self.b.is_vector(v));
        let (segs, single) = self.segs(xs, ctx, uniform_init);
        let mut out = Vec::new();
        for (k, (&op, &src)) in ops.iter().zip(&leaves).enumerate() {
            let scanned = match inits.get(k) {
                None => self.b.emit("scanned", Op::SegScan { op, src, init: None, segs }),
                Some(&init) if !self.b.is_vector(init) => {
                    self.b.emit("scanned", Op::SegScan { op, src, init: Some(init), segs })
                }
                Some(&init) => {
                    // A per-segment start: scan from the identity, then combine with the start.
                    let elem = self.b.ty(src).elem;
                    let identity = self.identity(op, elem);
                    let scanned = self.b.emit("scanned", Op::SegScan { op, src, init: Some(identity), segs });
                    let ids = self.b.emit("segment", Op::SegIds { lengths: segs.lengths, within: vec![] });
                    let starts = self.b.gather(init, ids);
                    self.combine(op, starts, scanned)
                }
            };
            out.push(scanned);
        }
        let elems = rebuild(&xs.elems, &mut out.into_iter());
        Ok(self.compact_result(elems, xs, segs, single))
    }

    fn identity(&mut self, op: ReduceOp, elem: Scalar) -> VarId {
        use weft_core::Literal;
        let literal = match (op, elem) {
            (ReduceOp::Add | ReduceOp::Or | ReduceOp::Xor, _) => super::literal_of(elem, 0),
            (ReduceOp::Mul, _) => super::literal_of(elem, 1),
            (ReduceOp::And, Scalar::Bool) => Literal::Bool(true),
            (ReduceOp::And, _) => super::literal_of(elem, -1),
            (ReduceOp::Min, Scalar::I32) => Literal::Int(i64::from(i32::MAX), elem),
            (ReduceOp::Min, Scalar::I64) => Literal::Int(i64::MAX, elem),
            (ReduceOp::Max, Scalar::I32) => Literal::Int(i64::from(i32::MIN), elem),
            (ReduceOp::Max, Scalar::I64) => Literal::Int(i64::MIN, elem),
            (ReduceOp::Min, Scalar::Bool) => Literal::Bool(true),
            (ReduceOp::Max, Scalar::Bool) => Literal::Bool(false),
            (ReduceOp::Min, _) => Literal::Float(f64::INFINITY, elem),
            (ReduceOp::Max, _) => Literal::Float(f64::NEG_INFINITY, elem),
        };
        self.b.literal(literal)
    }

    /// The built-in operator (one per scalar leaf of `elem`) that a function passed to
    /// `reduce` or `scan` computes, if it is one: `+`, `*`, `&`, `|`, `^`, `and`, `or`, `min`
    /// or `max`, applied field by field on tuples.
    fn operator(&self, callee: &Callee, elem: &Type) -> Option<Vec<ReduceOp>> {
        let function = self.core.function(callee.func);
        if !callee.captures.is_empty() || function.params.len() != 2 {
            return None;
        }
        let (a, b) = (function.params[0], function.params[1]);
        recognise(function, function.body, a, b, elem, &mut Vec::new())
    }

    fn concat(&mut self, xs: &SeqRep, ys: &SeqRep, ctx: CtxId) -> FlattenResult<Rep> {
        let uniform = |me: &Self, s: &SeqRep| !me.b.is_vector(s.offsets) && !me.b.is_vector(s.lengths);
        let keep = uniform(self, xs) && uniform(self, ys);
        let (xsegs, single) = self.segs(xs, ctx, keep);
        let (ysegs, _) = self.segs(ys, ctx, keep);
        let lengths = self.b.add(xsegs.lengths, ysegs.lengths);
        let (x_within, y_within) = (self.within(xs, &xsegs, single), self.within(ys, &ysegs, single));
        let within =
            if x_within.is_empty() || y_within.is_empty() { vec![] } else { [x_within, y_within].concat() };
        // Per segment of the result: where it starts, where its `ys` part starts (`split`),
        // and how far each part's elements lie from their places in the result. Each element
        // then needs its segment's three values and its own position alone, and is read from
        // its operand where it lies: the operands' elements are never copied into one
        // collection first. The segment ids come first: the GPU executor keeps the layout they
        // build, whose starts then serve as the exclusive sum of the lengths with no launch.
        let ids = self.b.emit("segment", Op::SegIds { lengths, within });
        let starts = if single {
            let (zero, one) = (self.b.i32(0), self.b.i32(1));
            self.b.replicate(zero, one)
        } else {
            self.b.offsets_of(lengths)
        };
        let split = self.b.add(starts, xsegs.lengths);
        let x_shift = self.b.sub(xsegs.offsets, starts);
        let y_shift = self.b.sub(ysegs.offsets, split);
        let size = self.b.length(ids);
        let position = self.b.emit("position", Op::Iota { len: size });
        let segment_split = self.b.gather(split, ids);
        let from_x = self.b.binary(BinaryOp::Lt, position, segment_split);
        let (x_by, y_by) = (self.b.gather(x_shift, ids), self.b.gather(y_shift, ids));
        let shift = self.b.select(from_x, x_by, y_by);
        let positions = self.b.add(position, shift);
        let elems = self.gather_either_coll(&xs.elems, &ys.elems, from_x, positions)?;
        if single {
            let zero = self.b.i32(0);
            let total = self.unseg(lengths, true);
            return Ok(Rep::Seq(Box::new(SeqRep {
                offsets: zero,
                lengths: total,
                elems,
                compact: true,
                disjoint: true,
                repeats: 1,
            })));
        }
        Ok(Rep::Seq(Box::new(SeqRep {
            offsets: starts,
            lengths,
            elems,
            compact: true,
            disjoint: true,
            repeats: 1,
        })))
    }

    fn flatten_seq(&mut self, xss: &SeqRep, ctx: CtxId) -> FlattenResult<Rep> {
        let (segs, single) = self.segs(xss, ctx, true);
        let (middle, _) = self.segment_elems(xss, segs, single);
        let inner = middle.seq().ok_or_else(|| self.bug("flatten of a flat sequence"))?;
        let middle_offsets = self.b.offsets_of(segs.lengths);
        let totals = self.b.emit(
            "lengths",
            Op::SegReduce {
                op: ReduceOp::Add,
                src: inner.lengths,
                segs: Segs { offsets: middle_offsets, lengths: segs.lengths },
            },
        );
        let inner_segs = Segs { offsets: inner.offsets, lengths: inner.lengths };
        let (data, _) = self.segment_elems(&inner, inner_segs, false);
        if single {
            let zero = self.b.i32(0);
            let total = self.unseg(totals, true);
            return Ok(Rep::Seq(Box::new(SeqRep {
                offsets: zero,
                lengths: total,
                elems: data,
                compact: true,
                disjoint: true,
                repeats: 1,
            })));
        }
        let offsets = self.b.offsets_of(totals);
        Ok(Rep::Seq(Box::new(SeqRep {
            offsets,
            lengths: totals,
            elems: data,
            compact: true,
            disjoint: true,
            repeats: 1,
        })))
    }

    /// `scatter(src, idx, dst)`: a compact copy of `dst`, then each value of `src` written at
    /// its index, per segment.
    fn scatter(&mut self, src: &SeqRep, idx: &SeqRep, dst: &SeqRep, ctx: CtxId) -> FlattenResult<Rep> {
        let mut operands = [src.lengths, idx.lengths];
        self.guard(&mut operands, ctx);
        self.b.check(Check::LengthsEqual {
            a: operands[0],
            b: operands[1],
            what: LengthCheck::ScatterValues,
        });
        let keep =
            [src, idx, dst].iter().all(|s| !self.b.is_vector(s.offsets) && !self.b.is_vector(s.lengths));
        let (dsegs, single) = self.segs(dst, ctx, keep);
        let (copy, _) = self.segment_elems(dst, dsegs, single);
        let out_offsets = self.b.offsets_of(dsegs.lengths);
        let copied = SeqRep {
            offsets: out_offsets,
            lengths: dsegs.lengths,
            elems: copy.clone(),
            compact: true,
            disjoint: true,
            repeats: 1,
        };
        let (child, elems, _, _) = self.enter(&[idx.clone(), src.clone()], ctx, None)?;
        // In the child context each index is checked against its own segment of `dst`.
        let target = if single {
            let zero = self.b.i32(0);
            let len = self.unseg(dsegs.lengths, true);
            SeqRep {
                offsets: zero,
                lengths: len,
                elems: copy.clone(),
                compact: true,
                disjoint: true,
                repeats: 1,
            }
        } else {
            self.lift(&Rep::Seq(Box::new(copied.clone())), ctx, child)
                .seq()
                .ok_or_else(|| self.bug("scatter"))?
        };
        let index = elems[0].leaf().ok_or_else(|| self.bug("a non-integer scatter index"))?;
        let position = self.checked_position(&target, index, child, "scatter ");
        let position = self.force(position, child);
        let values = self.force_rep(&elems[1], child);
        // Sequence elements of `dst` and `src` must point into one collection of elements.
        let (copy, values) = self.share_elems(&copy, &values)?;
        let mut written = Vec::new();
        for (dst_leaf, value) in top_leaves(&copy).into_iter().zip(top_leaves(&values)) {
            written.push(self.b.emit(
                "scattered",
                Op::Scatter { dst: dst_leaf, index: position, src: value, distinct: false },
            ));
        }
        let elems = rebuild_top(&copy, &mut written.into_iter());
        Ok(self.compact_result(elems, dst, dsegs, single))
    }

    fn permute(&mut self, xs: &SeqRep, idx: &SeqRep, ctx: CtxId) -> FlattenResult<Rep> {
        let mut operands = [xs.lengths, idx.lengths];
        self.guard(&mut operands, ctx);
        self.b.check(Check::LengthsEqual {
            a: operands[0],
            b: operands[1],
            what: LengthCheck::PermuteIndexes,
        });
        let keep = !self.b.is_vector(xs.lengths)
            && !self.b.is_vector(idx.lengths)
            && !self.b.is_vector(xs.offsets)
            && !self.b.is_vector(idx.offsets);
        let (xsegs, single) = self.segs(xs, ctx, keep);
        let (isegs, _) = self.segs(idx, ctx, keep);
        let (values, _) = self.segment_elems(xs, xsegs, single);
        let (index, ids) = self.segment_elems(idx, isegs, single);
        let index = index.leaf().ok_or_else(|| self.bug("a non-integer permutation"))?;
        let out_offsets = self.b.offsets_of(xsegs.lengths);
        self.b
            .check(Check::Permutation { index, segs: Segs { offsets: out_offsets, lengths: isegs.lengths } });
        let starts = self.b.gather(out_offsets, ids);
        let index = self.b.cast(Scalar::I32, index);
        let positions = self.b.add(starts, index);
        let elems = self.permute_coll(&values, positions);
        Ok(self.compact_result(elems, xs, xsegs, single))
    }

    /// A collection with value `i` moved to `positions[i]`, a permutation. Sequence values
    /// move as descriptors; their own elements stay where they are.
    pub(super) fn permute_coll(&mut self, values: &Rep, positions: VarId) -> Rep {
        let mut out = Vec::new();
        for leaf in top_leaves(values) {
            let elem = self.b.ty(leaf).elem;
            let zero = self.b.zero(elem);
            let size = self.b.length(leaf);
            let blank = self.b.replicate(zero, size);
            out.push(
                self.b.emit(
                    "permuted",
                    Op::Scatter { dst: blank, index: positions, src: leaf, distinct: false },
                ),
            );
        }
        rebuild_top(values, &mut out.into_iter())
    }

    fn partition(&mut self, xs: &SeqRep, lens: &SeqRep, ctx: CtxId) -> FlattenResult<Rep> {
        let keep = [xs, lens].iter().all(|s| !self.b.is_vector(s.offsets) && !self.b.is_vector(s.lengths));
        let (xsegs, single) = self.segs(xs, ctx, keep);
        let (lsegs, _) = self.segs(lens, ctx, keep);
        let (inner_lengths, ids) = self.segment_elems(lens, lsegs, single);
        let inner_lengths = inner_lengths.leaf().ok_or_else(|| self.bug("partition lengths"))?;
        let inner_lengths = self.b.cast(Scalar::I32, inner_lengths);
        let compact_offsets = self.b.offsets_of(lsegs.lengths);
        let lsegs_compact = Segs { offsets: compact_offsets, lengths: lsegs.lengths };
        let sums =
            self.b.emit("sums", Op::SegReduce { op: ReduceOp::Add, src: inner_lengths, segs: lsegs_compact });
        self.b.check(Check::PartitionLengths { lengths: inner_lengths, sums, totals: xsegs.lengths });
        let zero = self.b.i32(0);
        let local = self.b.emit(
            "starts",
            Op::SegScan { op: ReduceOp::Add, src: inner_lengths, init: Some(zero), segs: lsegs_compact },
        );
        let bases = self.b.gather(xsegs.offsets, ids);
        let inner_offsets = self.b.add(bases, local);
        // The pieces lie in `xs`'s segments: apart only where those are `xs`'s own, not one
        // uniform segment that every element repeats.
        let own = single || (self.b.is_vector(xs.offsets) && self.b.is_vector(xs.lengths));
        let inner = SeqRep {
            offsets: inner_offsets,
            lengths: inner_lengths,
            elems: xs.elems.clone(),
            compact: xs.compact && own,
            disjoint: xs.disjoint && own,
            repeats: xs.repeats,
        };
        Ok(self.compact_result(Rep::Seq(Box::new(inner)), lens, lsegs, single))
    }
}

/// The scalar leaves of a value made of scalars and tuples; false if it holds a sequence.
fn scalar_leaves(rep: &Rep, out: &mut Vec<VarId>) -> bool {
    match rep {
        Rep::Leaf(v) => {
            out.push(*v);
            true
        }
        Rep::Tuple(items) => items.iter().all(|r| scalar_leaves(r, out)),
        Rep::Seq(_) => false,
    }
}

/// The vectors a collection's values are made of at the top level: scalar leaves, and the
/// descriptors of sequences (not their elements).
pub(super) fn top_leaves(rep: &Rep) -> Vec<VarId> {
    fn walk(rep: &Rep, out: &mut Vec<VarId>) {
        match rep {
            Rep::Leaf(v) => out.push(*v),
            Rep::Tuple(items) => items.iter().for_each(|r| walk(r, out)),
            Rep::Seq(seq) => out.extend([seq.offsets, seq.lengths]),
        }
    }
    let mut out = Vec::new();
    walk(rep, &mut out);
    out
}

/// `template` with the vectors `top_leaves` lists replaced, in order, by `leaves`.
pub(super) fn rebuild_top(template: &Rep, leaves: &mut impl Iterator<Item = VarId>) -> Rep {
    match template {
        Rep::Leaf(v) => Rep::Leaf(leaves.next().unwrap_or(*v)),
        Rep::Tuple(items) => Rep::Tuple(items.iter().map(|r| rebuild_top(r, leaves)).collect()),
        Rep::Seq(seq) => {
            let offsets = leaves.next().unwrap_or(seq.offsets);
            let lengths = leaves.next().unwrap_or(seq.lengths);
            Rep::segments(offsets, lengths, seq.elems.clone())
        }
    }
}

/// `template` with its leaves replaced, in order, by `leaves`.
fn rebuild(template: &Rep, leaves: &mut impl Iterator<Item = VarId>) -> Rep {
    match template {
        Rep::Leaf(v) => Rep::Leaf(leaves.next().unwrap_or(*v)),
        Rep::Tuple(items) => Rep::Tuple(items.iter().map(|r| rebuild(r, leaves)).collect()),
        Rep::Seq(seq) => Rep::Seq(seq.clone()),
    }
}

/// Loaded data is laid out compactly at every level.
pub(super) fn mark_compact(rep: Rep) -> Rep {
    match rep {
        Rep::Seq(seq) => {
            let SeqRep { offsets, lengths, elems, .. } = *seq;
            Rep::Seq(Box::new(SeqRep {
                offsets,
                lengths,
                elems: mark_compact(elems),
                compact: true,
                disjoint: true,
                repeats: 1,
            }))
        }
        Rep::Tuple(items) => Rep::Tuple(items.into_iter().map(mark_compact).collect()),
        leaf => leaf,
    }
}

/// Which operand of an operator function an expression reads: parameter `a` or `b`, then a
/// path of tuple fields.
fn operand(
    function: &core::Function,
    e: ExprId,
    aliases: &[(core::VarId, core::VarId)],
) -> Option<(core::VarId, Vec<u32>)> {
    match function.expr(e) {
        Expr::Var(v) => {
            let v = aliases.iter().rev().find(|(alias, _)| alias == v).map_or(*v, |(_, target)| *target);
            Some((v, vec![]))
        }
        Expr::TupleGet(t, i) => {
            let (v, mut path) = operand(function, *t, aliases)?;
            path.push(*i);
            Some((v, path))
        }
        _ => None,
    }
}

/// The built-in operators `body` applies to parameters `a` and `b` of type `elem`, leaf by
/// leaf, with `path` the tuple fields already selected.
fn recognise(
    function: &core::Function,
    body: ExprId,
    a: core::VarId,
    b: core::VarId,
    elem: &Type,
    aliases: &mut Vec<(core::VarId, core::VarId)>,
) -> Option<Vec<ReduceOp>> {
    recognise_at(function, body, a, b, elem, &[], aliases)
}

fn recognise_at(
    function: &core::Function,
    body: ExprId,
    a: core::VarId,
    b: core::VarId,
    elem: &Type,
    path: &[u32],
    aliases: &mut Vec<(core::VarId, core::VarId)>,
) -> Option<Vec<ReduceOp>> {
    let reads = |e: ExprId, aliases: &[(core::VarId, core::VarId)], param: core::VarId| {
        operand(function, e, aliases).is_some_and(|(v, p)| v == param && p == path)
    };
    let pair = |x: ExprId, y: ExprId, aliases: &[(core::VarId, core::VarId)]| {
        (reads(x, aliases, a) && reads(y, aliases, b)) || (reads(x, aliases, b) && reads(y, aliases, a))
    };
    match (function.expr(body), elem) {
        (Expr::Let { pattern: core::Pattern::Var(v), value, body }, _) => {
            let (target, p) = operand(function, *value, aliases)?;
            if !p.is_empty() {
                return None;
            }
            aliases.push((*v, target));
            let found = recognise_at(function, *body, a, b, elem, path, aliases);
            aliases.pop();
            found
        }
        (Expr::Tuple(items), Type::Tuple(types)) if items.len() == types.len() => {
            let mut out = Vec::new();
            for (i, (&item, ty)) in items.iter().zip(types).enumerate() {
                let mut inner = path.to_vec();
                inner.push(i as u32);
                out.extend(recognise_at(function, item, a, b, ty, &inner, aliases)?);
            }
            Some(out)
        }
        (Expr::Binary { op, lhs, rhs }, Type::Scalar(_)) if pair(*lhs, *rhs, aliases) => {
            Some(vec![match op {
                BinaryOp::Add => ReduceOp::Add,
                BinaryOp::Mul => ReduceOp::Mul,
                BinaryOp::BitAnd => ReduceOp::And,
                BinaryOp::BitOr => ReduceOp::Or,
                BinaryOp::BitXor => ReduceOp::Xor,
                _ => return None,
            }])
        }
        (Expr::And(x, y), Type::Scalar(Scalar::Bool)) if pair(*x, *y, aliases) => Some(vec![ReduceOp::And]),
        (Expr::Or(x, y), Type::Scalar(Scalar::Bool)) if pair(*x, *y, aliases) => Some(vec![ReduceOp::Or]),
        (Expr::Prim { prim: Prim::Min2, args, .. }, Type::Scalar(_))
            if args.len() == 2 && pair(args[0], args[1], aliases) =>
        {
            Some(vec![ReduceOp::Min])
        }
        (Expr::Prim { prim: Prim::Max2, args, .. }, Type::Scalar(_))
            if args.len() == 2 && pair(args[0], args[1], aliases) =>
        {
            Some(vec![ReduceOp::Max])
        }
        _ => None,
    }
}
