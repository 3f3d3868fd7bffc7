//! Reductions and scans with any associative operator, as flat rounds.
//!
//! The built-in operators (`+`, `min`, ...) map to the IR's `SegReduce` and `SegScan`. Any
//! other operator, a user function or the comparison behind `min` of tuples and sequences, runs
//! as a host loop of rounds; each round applies the operator once, lifted over every pair of
//! every segment at once:
//! - a tree reduction pairs neighbours and halves every segment per round, `ceil(log2 n)`
//!   rounds and O(n) applications in all;
//! - a scan (Hillis and Steele) combines each element with the one `d` places before it, for
//!   `d = 1, 2, 4, ...`: `ceil(log2 n)` rounds of at most n applications.
//!
//! Both regroup the applications, which the language allows: `reduce` and `scan` require an
//! associative operator (docs/language.md).

use crate::ir::{MathFn, Op, ReduceOp, Segs, VarId};
use weft_core::types::Type;
use weft_core::{BinaryOp, Callee};

use super::compare::Order;
use super::{CtxId, FlattenResult, Flattener, Rep, SeqRep};

/// How a round combines two values of a collection, the earlier one first.
pub(super) enum Combiner<'a> {
    /// The operator function of `reduce` or `scan`, with its captures read in `ctx`.
    Call { callee: &'a Callee, ctx: CtxId },
    /// Keeps the smaller (or, with `max`, the larger) in the total order, the earlier of two
    /// equal ones; values are `(key, position)` pairs and `key` has type `ty`.
    Pick { max: bool, ty: Type },
}

/// The values of a sequence in a context, one segment per element (a single one in the root),
/// laid out compactly, segment after segment.
pub(super) struct Segmented {
    pub segs: Segs,
    pub single: bool,
    pub values: Rep,
}

impl<'c> Flattener<'c> {
    pub(super) fn segmented(&mut self, xs: &SeqRep, ctx: CtxId) -> Segmented {
        let (segs, single) = self.segs(xs, ctx, false);
        let (values, _) = self.segment_elems(xs, segs, single);
        let offsets = self.b.offsets_of(segs.lengths);
        Segmented { segs: Segs { offsets, lengths: segs.lengths }, single, values }
    }

    /// `init` put in front of every segment.
    pub(super) fn prepend(&mut self, init: &Rep, seq: Segmented, ctx: CtxId) -> FlattenResult<Segmented> {
        let firsts = if seq.single {
            let one = self.b.i32(1);
            self.repeat(init, one)
        } else {
            self.force_rep(init, ctx)
        };
        let one = self.b.i32(1);
        let lengths = self.b.add(seq.segs.lengths, one);
        let segments = self.b.length(seq.segs.lengths);
        let ids = self.b.emit("segment", Op::SegIds { lengths, within: vec![] });
        let within = self.b.emit("within", Op::SegIota { lengths, within: vec![] });
        let zero = self.b.i32(0);
        let is_first = self.b.binary(BinaryOp::Eq, within, zero);
        let old_start = self.b.gather(seq.segs.offsets, ids);
        let old_position = self.b.add(old_start, within);
        let old_position = self.b.sub(old_position, one);
        let shifted = self.b.add(old_position, segments);
        let positions = self.b.select(is_first, ids, shifted);
        let both = self.concat_coll(&[firsts, seq.values])?;
        let values = self.gather_coll(&both, positions);
        let offsets = self.b.offsets_of(lengths);
        Ok(Segmented { segs: Segs { offsets, lengths }, single: seq.single, values })
    }

    /// A value of the root as a collection of `n` copies.
    pub(super) fn repeat(&mut self, rep: &Rep, n: VarId) -> Rep {
        match rep {
            Rep::Leaf(v) => Rep::Leaf(self.b.replicate(*v, n)),
            Rep::Tuple(items) => Rep::Tuple(items.iter().map(|r| self.repeat(r, n)).collect()),
            Rep::Seq(seq) => {
                let offsets = self.b.replicate(seq.offsets, n);
                let lengths = self.b.replicate(seq.lengths, n);
                Rep::segments(offsets, lengths, seq.elems.clone())
            }
        }
    }

    /// Combines the values at `left` and `right` (positions in `values`, one pair per element
    /// of `pairs`) into a collection of `pairs`.
    fn combine_at(
        &mut self,
        combiner: &Combiner,
        values: &Rep,
        left: VarId,
        right: VarId,
        pairs: CtxId,
    ) -> FlattenResult<Rep> {
        let a = self.gather_coll(values, left);
        let b = self.gather_coll(values, right);
        match combiner {
            Combiner::Call { callee, ctx } => {
                let combined = self.call_in(callee, vec![a, b], *ctx, pairs)?;
                Ok(self.force_rep(&combined, pairs))
            }
            Combiner::Pick { max, ty } => {
                let (Rep::Tuple(a), Rep::Tuple(b)) = (a, b) else {
                    return Err(self.bug("a pick of values without positions"));
                };
                let op = if *max { BinaryOp::Gt } else { BinaryOp::Lt };
                let better = self.compare(op, Order::Total, ty, &b[0], &a[0], pairs)?;
                let better = self.force(better, pairs);
                let at = self.b.select(better, right, left);
                Ok(self.gather_coll(values, at))
            }
        }
    }

    /// The context of `count` pairs, each belonging to the segment `segment_of` names.
    fn pairs_ctx(&mut self, count: VarId, segment_of: VarId, single: bool, ctx: CtxId) -> CtxId {
        self.new_ctx(ctx, count, (!single).then_some(segment_of))
    }

    /// Reduces every segment (non-empty) to its first value combined with all the others:
    /// a value of `ctx` (the one value in the root).
    pub(super) fn tree_reduce(
        &mut self,
        combiner: &Combiner,
        ty: &Type,
        seq: Segmented,
        ctx: CtxId,
    ) -> FlattenResult<Rep> {
        let single = seq.single;
        let cond = |me: &mut Self, state: &[VarId]| {
            let longest = me.b.emit("longest", Op::Reduce { op: ReduceOp::Max, src: state[0] });
            let one = me.b.i32(1);
            Ok(me.b.binary(BinaryOp::Gt, longest, one))
        };
        let round = |me: &mut Self, values: Rep, state: &[VarId]| {
            let lengths = state[0];
            let offsets = me.b.offsets_of(lengths);
            let (one, two) = (me.b.i32(1), me.b.i32(2));
            let halves = me.b.binary(BinaryOp::FloorDiv, lengths, two);
            let paired = me.b.mul(halves, two);
            let odd = me.b.sub(lengths, paired);
            let next_lengths = me.b.add(halves, odd);
            // Pair k of a segment combines its elements 2k and 2k + 1.
            let pair_segment = me.b.emit("segment", Op::SegIds { lengths: halves, within: vec![] });
            let pair_within = me.b.emit("within", Op::SegIota { lengths: halves, within: vec![] });
            let pair_count = me.b.length(pair_segment);
            let start = me.b.gather(offsets, pair_segment);
            let twice = me.b.mul(pair_within, two);
            let left = me.b.add(start, twice);
            let right = me.b.add(left, one);
            let pairs = me.pairs_ctx(pair_count, pair_segment, single, ctx);
            let combined = me.combine_at(combiner, &values, left, right, pairs)?;
            // The next values: each segment's pairs, then its odd last element if any.
            let ids = me.b.emit("segment", Op::SegIds { lengths: next_lengths, within: vec![] });
            let within = me.b.emit("within", Op::SegIota { lengths: next_lengths, within: vec![] });
            let pair_offsets = me.b.offsets_of(halves);
            let pairs_here = me.b.gather(halves, ids);
            let from_pair = me.b.binary(BinaryOp::Lt, within, pairs_here);
            let pair_start = me.b.gather(pair_offsets, ids);
            let pair_position = me.b.add(pair_start, within);
            let segment_start = me.b.gather(offsets, ids);
            let segment_length = me.b.gather(lengths, ids);
            let end = me.b.add(segment_start, segment_length);
            let last = me.b.sub(end, one);
            let carried = me.b.add(last, pair_count);
            let positions = me.b.select(from_pair, pair_position, carried);
            let both = me.concat_coll(&[combined, values])?;
            Ok((me.gather_coll(&both, positions), vec![next_lengths]))
        };
        let (values, _) = self.rounds(ty, &seq.values, vec![seq.segs.lengths], cond, round)?;
        Ok(if single {
            let zero = self.b.i32(0);
            self.gather_coll(&values, zero)
        } else {
            values
        })
    }

    /// The inclusive scan of every segment, as a collection in the same layout.
    pub(super) fn tree_scan(
        &mut self,
        combiner: &Combiner,
        ty: &Type,
        seq: &Segmented,
        ctx: CtxId,
    ) -> FlattenResult<Rep> {
        let lengths = seq.segs.lengths;
        let ids = self.b.emit("segment", Op::SegIds { lengths, within: vec![] });
        let within = self.b.emit("within", Op::SegIota { lengths, within: vec![] });
        let size = self.b.length(ids);
        let positions = self.b.emit("iota", Op::Iota { len: size });
        let longest = self.b.emit("longest", Op::Reduce { op: ReduceOp::Max, src: lengths });
        let single = seq.single;
        let cond = |me: &mut Self, state: &[VarId]| Ok(me.b.binary(BinaryOp::Lt, state[0], longest));
        let round = |me: &mut Self, values: Rep, state: &[VarId]| {
            let distance = state[0];
            // Every element at least `distance` into its segment takes the one that far back.
            let active = me.b.binary(BinaryOp::Ge, within, distance);
            let right = me.b.emit("active", Op::Pack { src: positions, flags: active, counts: None });
            let count = me.b.length(right);
            let left = me.b.sub(right, distance);
            let segment = me.b.gather(ids, right);
            let pairs = me.pairs_ctx(count, segment, single, ctx);
            let combined = me.combine_at(combiner, &values, left, right, pairs)?;
            let taken = me.b.cast(weft_core::types::Scalar::I32, active);
            let rank = me.b.offsets_of(taken);
            let kept = me.b.add(positions, count);
            let from = me.b.select(active, rank, kept);
            let both = me.concat_coll(&[combined, values])?;
            let two = me.b.i32(2);
            Ok((me.gather_coll(&both, from), vec![me.b.mul(distance, two)]))
        };
        let one = self.b.i32(1);
        let (values, _) = self.rounds(ty, &seq.values, vec![one], cond, round)?;
        Ok(values)
    }

    /// A sequence value of `ctx` from per-segment results laid out compactly.
    pub(super) fn segmented_result(&mut self, values: Rep, lengths: VarId, single: bool) -> Rep {
        let (offsets, lengths) = if single {
            (self.b.i32(0), self.unseg(lengths, true))
        } else {
            (self.b.offsets_of(lengths), lengths)
        };
        Rep::Seq(Box::new(SeqRep {
            offsets,
            lengths,
            elems: values,
            compact: true,
            disjoint: true,
            repeats: 1,
        }))
    }

    /// `reduce(f, xs, init)` for an operator that is not built in: the tree reduction of
    /// `[init] + xs`, which is `f(init, ...)` of the elements, or `init` when `xs` is empty.
    pub(super) fn reduce_with(
        &mut self,
        callee: &Callee,
        elem: &Type,
        xs: &SeqRep,
        init: &Rep,
        ctx: CtxId,
    ) -> FlattenResult<Rep> {
        let seq = self.segmented(xs, ctx);
        let seq = self.prepend(init, seq, ctx)?;
        self.tree_reduce(&Combiner::Call { callee, ctx }, elem, seq, ctx)
    }

    /// `scan(f, xs)` or `exclusive_scan(f, init, xs)` for an operator that is not built in.
    /// The exclusive scan is the inclusive scan of `[init] + xs[:-1]` (the operator never sees
    /// the last element, as in the interpreter), cut to the length of `xs`.
    pub(super) fn scan_with(
        &mut self,
        callee: &Callee,
        elem: &Type,
        xs: &SeqRep,
        init: Option<&Rep>,
        ctx: CtxId,
    ) -> FlattenResult<Rep> {
        let seq = self.segmented(xs, ctx);
        let combiner = Combiner::Call { callee, ctx };
        let Some(init) = init else {
            let scanned = self.tree_scan(&combiner, elem, &seq, ctx)?;
            return Ok(self.segmented_result(scanned, seq.segs.lengths, seq.single));
        };
        let lengths = seq.segs.lengths;
        let (zero, one) = (self.b.i32(0), self.b.i32(1));
        let but_last = self.b.sub(lengths, one);
        let but_last = self.b.emit("t", Op::Math(MathFn::Max, vec![but_last, zero]));
        let trimmed = Segmented { segs: Segs { offsets: seq.segs.offsets, lengths: but_last }, ..seq };
        let with_init = self.prepend(init, trimmed, ctx)?;
        let scanned = self.tree_scan(&combiner, elem, &with_init, ctx)?;
        // An empty `xs` gives `[]`, not `[init]`.
        let ids = self.b.emit("segment", Op::SegIds { lengths, within: vec![] });
        let within = self.b.emit("within", Op::SegIota { lengths, within: vec![] });
        let start = self.b.gather(with_init.segs.offsets, ids);
        let positions = self.b.add(start, within);
        let values = self.gather_coll(&scanned, positions);
        Ok(self.segmented_result(values, lengths, with_init.single))
    }

    /// `min`, `max`, `argmin` or `argmax` of a non-empty sequence of any ordered type: a tree
    /// reduction of `(value, position)` pairs that keeps the first extreme one.
    pub(super) fn extreme_by_tree(
        &mut self,
        max: bool,
        arg: bool,
        elem: &Type,
        xs: &SeqRep,
        ctx: CtxId,
    ) -> FlattenResult<Rep> {
        let seq = self.segmented(xs, ctx);
        let positions = self.b.emit("within", Op::SegIota { lengths: seq.segs.lengths, within: vec![] });
        let seq = Segmented { values: Rep::Tuple(vec![seq.values, Rep::Leaf(positions)]), ..seq };
        let pair_ty = Type::Tuple(vec![elem.clone(), Type::Scalar(weft_core::types::Scalar::I32)]);
        let picked = self.tree_reduce(&Combiner::Pick { max, ty: elem.clone() }, &pair_ty, seq, ctx)?;
        match picked {
            Rep::Tuple(mut fields) if fields.len() == 2 => Ok(fields.swap_remove(usize::from(arg))),
            _ => Err(self.bug("an extreme without its position")),
        }
    }

    /// `sort` of a sequence whose elements hold sequences: a stable bottom-up merge sort in
    /// the total order. Round `w` (1, 2, 4, ...) merges neighbouring sorted runs of `w`
    /// elements: each element counts, by a binary search in the other run, the elements that
    /// go before it, and moves to its place in the merged run. `ceil(log2 n)` rounds of
    /// `ceil(log2 w) + 1` lifted comparisons over all elements.
    pub(super) fn merge_sort(&mut self, elem: &Type, xs: &SeqRep, ctx: CtxId) -> FlattenResult<Rep> {
        let seq = self.segmented(xs, ctx);
        let lengths = seq.segs.lengths;
        let ids = self.b.emit("segment", Op::SegIds { lengths, within: vec![] });
        let within = self.b.emit("within", Op::SegIota { lengths, within: vec![] });
        let size = self.b.length(ids);
        let positions = self.b.emit("iota", Op::Iota { len: size });
        let segment_start = self.b.gather(seq.segs.offsets, ids);
        let segment_length = self.b.gather(lengths, ids);
        let longest = self.b.emit("longest", Op::Reduce { op: ReduceOp::Max, src: lengths });
        let elements = self.new_ctx(ctx, size, (!seq.single).then_some(ids));
        let cond = |me: &mut Self, state: &[VarId]| Ok(me.b.binary(BinaryOp::Lt, state[0], longest));
        let round = |me: &mut Self, values: Rep, state: &[VarId]| {
            let width = state[0];
            let (zero, one, two) = (me.b.i32(0), me.b.i32(1), me.b.i32(2));
            let run = me.b.binary(BinaryOp::FloorDiv, within, width);
            let run_start = me.b.mul(run, width);
            let rank = me.b.sub(within, run_start);
            let parity = me.b.binary(BinaryOp::Mod, run, two);
            let is_left = me.b.binary(BinaryOp::Eq, parity, zero);
            let pair = me.b.binary(BinaryOp::FloorDiv, run, two);
            let double = me.b.mul(width, two);
            let pair_start = me.b.mul(pair, double);
            let right_start = me.b.add(pair_start, width);
            let other_start = me.b.select(is_left, right_start, pair_start);
            let other_end = me.b.add(other_start, width);
            let other_end = me.b.emit("t", Op::Math(MathFn::Min, vec![other_end, segment_length]));
            let other_length = me.b.sub(other_end, other_start);
            let other_length = me.b.emit("t", Op::Math(MathFn::Max, vec![other_length, zero]));
            // Binary search for how many of the other run go first: on ties, the left run.
            let lo = me.b.replicate(zero, size);
            let nothing = Rep::Tuple(vec![]);
            let unit = Type::Tuple(vec![]);
            let searching = |me: &mut Self, state: &[VarId]| {
                let open = me.b.binary(BinaryOp::Lt, state[0], state[1]);
                Ok(me.b.emit("searching", Op::Reduce { op: ReduceOp::Or, src: open }))
            };
            let step = |me: &mut Self, _: Rep, state: &[VarId]| {
                let (lo, hi) = (state[0], state[1]);
                let open = me.b.binary(BinaryOp::Lt, lo, hi);
                let sum = me.b.add(lo, hi);
                let mid = me.b.binary(BinaryOp::FloorDiv, sum, two);
                let probe_within = me.b.add(other_start, mid);
                let probe_at = me.b.add(segment_start, probe_within);
                let probe_at = me.b.select(open, probe_at, positions);
                let other = me.gather_coll(&values, probe_at);
                let other_less = me.compare(BinaryOp::Lt, Order::Total, elem, &other, &values, elements)?;
                let mine_less = me.compare(BinaryOp::Lt, Order::Total, elem, &values, &other, elements)?;
                let other_not_after = me.b.emit("t", Op::Unary(weft_core::UnaryOp::Not, mine_less));
                let before = me.b.select(is_left, other_less, other_not_after);
                let before = me.force(before, elements);
                let f = me.b.bool(false);
                let go_right = me.b.select(open, before, f);
                let not_before = me.b.emit("t", Op::Unary(weft_core::UnaryOp::Not, before));
                let go_left = me.b.select(open, not_before, f);
                let above = me.b.add(mid, one);
                let lo = me.b.select(go_right, above, lo);
                let hi = me.b.select(go_left, mid, hi);
                Ok((Rep::Tuple(vec![]), vec![lo, hi]))
            };
            let (_, bounds) = me.rounds(&unit, &nothing, vec![lo, other_length], searching, step)?;
            let merged_within = me.b.add(pair_start, rank);
            let merged_within = me.b.add(merged_within, bounds[0]);
            let target = me.b.add(segment_start, merged_within);
            let next = me.permute_coll(&values, target);
            Ok((next, vec![me.b.mul(width, two)]))
        };
        let one = self.b.i32(1);
        let (values, _) = self.rounds(elem, &seq.values, vec![one], cond, round)?;
        Ok(self.segmented_result(values, lengths, seq.single))
    }
}
