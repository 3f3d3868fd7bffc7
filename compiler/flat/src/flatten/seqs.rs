//! Sequences under flattening: segment descriptors, collections of elements, and the rules
//! that build, index, slice, merge and enter them.

use crate::ir::{Check, LengthCheck, Op, Segs, VarId};
use weft_core::types::{Scalar, Type};
use weft_core::{BinaryOp, UnaryOp};

use super::{CtxId, FlattenResult, Flattener, ROOT, Rep, SeqRep};

/// The `Rep` of a value of type `ty` whose variables come from `vars` in the order of
/// `ir::layout(ty, _)`. Sequences built this way are not known to be compact.
/// (The variables' kinds say whether it is one value or a collection; the walk is the same.)
pub(super) fn from_layout(ty: &Type, vars: &mut impl Iterator<Item = VarId>) -> Rep {
    match ty {
        Type::Scalar(_) => Rep::Leaf(vars.next().unwrap_or_default()),
        Type::Tuple(items) => Rep::Tuple(items.iter().map(|t| from_layout(t, vars)).collect()),
        Type::Seq(elem) => {
            let offsets = vars.next().unwrap_or_default();
            let lengths = vars.next().unwrap_or_default();
            let elems = from_layout(elem, vars);
            Rep::segments(offsets, lengths, elems)
        }
        Type::Var(_) | Type::Func(..) => Rep::Tuple(vec![]),
    }
}

/// The variables of `rep` in layout order.
pub(super) fn push_vars(rep: &Rep, out: &mut Vec<VarId>) {
    match rep {
        Rep::Leaf(v) => out.push(*v),
        Rep::Tuple(items) => items.iter().for_each(|r| push_vars(r, out)),
        Rep::Seq(seq) => {
            out.push(seq.offsets);
            out.push(seq.lengths);
            push_vars(&seq.elems, out);
        }
    }
}

/// Whether the sequences point into one collection of elements, which `shifted_offsets` then
/// keeps: their segments may overlap each other's.
fn one_collection(seqs: &[SeqRep]) -> bool {
    let vars = |seq: &SeqRep| {
        let mut out = Vec::new();
        push_vars(&seq.elems, &mut out);
        out
    };
    seqs.split_first().is_some_and(|(first, rest)| rest.iter().all(|seq| vars(seq) == vars(first)))
}

/// `SeqRep::disjoint` and `repeats` of the segments of `seqs`, their offsets shifted into
/// one collection: each overlaps as the most repeated of them, or anyhow (not disjoint).
/// With `per_element`, the descriptors must be vectors: a scalar one is repeated.
fn repeats_together(seqs: &[SeqRep], per_element: impl Fn(&SeqRep) -> bool) -> (bool, u32) {
    if one_collection(seqs) || !seqs.iter().all(|s| s.disjoint && per_element(s)) {
        return (false, 1);
    }
    (true, seqs.iter().map(|s| s.repeats).max().unwrap_or(1))
}

fn first_leaf(rep: &Rep) -> Option<VarId> {
    match rep {
        Rep::Leaf(v) => Some(*v),
        Rep::Tuple(items) => items.iter().find_map(first_leaf),
        Rep::Seq(seq) => Some(seq.offsets),
    }
}

impl Flattener<'_> {
    /// The number of values in a collection.
    pub(super) fn coll_size(&mut self, coll: &Rep) -> FlattenResult<VarId> {
        match first_leaf(coll) {
            Some(v) => Ok(self.b.length(v)),
            None => Err(self.unsupported(self.b.span, "a sequence of empty tuples")),
        }
    }

    /// The values of a collection at `index` (a scalar gives one value, a vector a
    /// collection). Sequences copy their descriptors and share their elements.
    pub(super) fn gather_coll(&mut self, coll: &Rep, index: VarId) -> Rep {
        match coll {
            Rep::Leaf(v) => Rep::Leaf(self.b.gather(*v, index)),
            Rep::Tuple(items) => Rep::Tuple(items.iter().map(|r| self.gather_coll(r, index)).collect()),
            Rep::Seq(seq) => {
                let offsets = self.b.gather(seq.offsets, index);
                let lengths = self.b.gather(seq.lengths, index);
                Rep::segments(offsets, lengths, seq.elems.clone())
            }
        }
    }

    /// The values of `first` at `index` where `from_first`, else of `second`: what
    /// `gather_coll` of the two collections concatenated gives, without writing out that
    /// concatenation. Sequences get descriptors into one shared collection of elements.
    pub(super) fn gather_either_coll(
        &mut self,
        first: &Rep,
        second: &Rep,
        from_first: VarId,
        index: VarId,
    ) -> FlattenResult<Rep> {
        Ok(match (first, second) {
            (Rep::Leaf(a), Rep::Leaf(b)) => Rep::Leaf(self.b.gather_either(*a, *b, from_first, index)),
            (Rep::Tuple(xs), Rep::Tuple(ys)) => {
                let mut items = Vec::with_capacity(xs.len());
                for (x, y) in xs.iter().zip(ys) {
                    items.push(self.gather_either_coll(x, y, from_first, index)?);
                }
                Rep::Tuple(items)
            }
            (Rep::Seq(_), Rep::Seq(_)) => {
                let (Rep::Seq(x), Rep::Seq(y)) = self.share_elems(first, second)? else {
                    return Err(self.bug("shared sequences that are not sequences"));
                };
                let offsets = self.b.gather_either(x.offsets, y.offsets, from_first, index);
                let lengths = self.b.gather_either(x.lengths, y.lengths, from_first, index);
                Rep::segments(offsets, lengths, x.elems)
            }
            _ => return Err(self.bug("a gather from collections of different shapes")),
        })
    }

    /// The collections one after another; nested descriptors are shifted to point into the
    /// concatenated elements.
    pub(super) fn concat_coll(&mut self, parts: &[Rep]) -> FlattenResult<Rep> {
        let Some(first) = parts.first() else {
            return Err(self.bug("a concatenation of nothing"));
        };
        Ok(match first {
            Rep::Leaf(_) => {
                let vars = parts.iter().filter_map(Rep::leaf).collect();
                Rep::Leaf(self.b.emit("concat", Op::Concat(vars)))
            }
            Rep::Tuple(items) => {
                let mut fields = Vec::new();
                for i in 0..items.len() {
                    let column: Vec<Rep> = parts
                        .iter()
                        .map(|p| match p {
                            Rep::Tuple(items) => items[i].clone(),
                            other => other.clone(),
                        })
                        .collect();
                    fields.push(self.concat_coll(&column)?);
                }
                Rep::Tuple(fields)
            }
            Rep::Seq(_) => {
                let seqs: Vec<SeqRep> = parts.iter().filter_map(|p| p.clone().seq()).collect();
                let (disjoint, repeats) = repeats_together(&seqs, |_| true);
                let (offsets, elems) = self.shifted_offsets(&seqs)?;
                let lengths: Vec<VarId> = seqs.iter().map(|s| s.lengths).collect();
                let offsets = self.b.emit("offsets", Op::Concat(offsets));
                let lengths = self.b.emit("lengths", Op::Concat(lengths));
                Rep::Seq(Box::new(SeqRep { offsets, lengths, elems, compact: false, disjoint, repeats }))
            }
        })
    }

    /// Each sequence's offsets, shifted by the sizes of the element collections before it, and
    /// the concatenation of their element collections.
    fn shifted_offsets(&mut self, seqs: &[SeqRep]) -> FlattenResult<(Vec<VarId>, Rep)> {
        // Sequences that already point into one collection (a slice of a sequence, a value
        // picked from a collection) keep it: copying it again would grow it at every round of
        // a loop.
        if one_collection(seqs) {
            return Ok((seqs.iter().map(|seq| seq.offsets).collect(), seqs[0].elems.clone()));
        }
        let mut offsets = Vec::new();
        let mut base: Option<VarId> = None;
        for seq in seqs {
            offsets.push(match base {
                Some(base) => self.b.add(seq.offsets, base),
                None => seq.offsets,
            });
            let size = self.coll_size(&seq.elems)?;
            base = Some(match base {
                Some(base) => self.b.add(base, size),
                None => size,
            });
        }
        let elems: Vec<Rep> = seqs.iter().map(|s| s.elems.clone()).collect();
        Ok((offsets, self.concat_coll(&elems)?))
    }

    /// Two collections of one type, changed so that their sequences point into one collection
    /// of elements: values of either can then be mixed at the top level (scattered, merged).
    pub(super) fn share_elems(&mut self, a: &Rep, b: &Rep) -> FlattenResult<(Rep, Rep)> {
        Ok(match (a, b) {
            (Rep::Tuple(xs), Rep::Tuple(ys)) => {
                let mut left = Vec::new();
                let mut right = Vec::new();
                for (x, y) in xs.iter().zip(ys) {
                    let (l, r) = self.share_elems(x, y)?;
                    left.push(l);
                    right.push(r);
                }
                (Rep::Tuple(left), Rep::Tuple(right))
            }
            (Rep::Seq(x), Rep::Seq(y)) => {
                let (offsets, elems) = self.shifted_offsets(&[(**x).clone(), (**y).clone()])?;
                (
                    Rep::segments(offsets[0], x.lengths, elems.clone()),
                    Rep::segments(offsets[1], y.lengths, elems),
                )
            }
            _ => (a.clone(), b.clone()),
        })
    }

    /// `[a, b, c]` in a context. Uniform items give a uniform sequence; otherwise each
    /// element's items are laid out together (`Interleave`).
    pub(super) fn list(&mut self, items: Vec<Rep>, elem_ty: &Type, ctx: CtxId) -> FlattenResult<Rep> {
        let n = self.b.i32(items.len() as i64);
        let zero = self.b.i32(0);
        if items.is_empty() {
            let elems = self.empty_coll(elem_ty);
            let (offsets, lengths) =
                if self.lifted(ctx) { (self.force(zero, ctx), self.force(zero, ctx)) } else { (zero, zero) };
            let compact = !self.lifted(ctx);
            return Ok(Rep::Seq(Box::new(SeqRep {
                offsets,
                lengths,
                elems,
                compact,
                disjoint: compact,
                repeats: 1,
            })));
        }
        if !self.lifted(ctx) || items.iter().all(|r| self.uniform(r)) {
            let elems = self.concat_coll(&items)?;
            return Ok(Rep::Seq(Box::new(SeqRep {
                offsets: zero,
                lengths: n,
                elems,
                compact: true,
                disjoint: true,
                repeats: 1,
            })));
        }
        let size = self.size(ctx);
        let elems = self.interleave(&items, size)?;
        let lengths = self.force(n, ctx);
        let offsets = self.b.offsets_of(lengths);
        Ok(Rep::Seq(Box::new(SeqRep { offsets, lengths, elems, compact: true, disjoint: true, repeats: 1 })))
    }

    /// Item `i` of every element, laid out element by element: `[a0, b0, a1, b1, ...]`.
    fn interleave(&mut self, items: &[Rep], size: VarId) -> FlattenResult<Rep> {
        Ok(match &items[0] {
            Rep::Leaf(_) => {
                let parts: Vec<VarId> = items.iter().filter_map(Rep::leaf).collect();
                // One item per element (`[a]`) is laid out as it is: no copy.
                if let [only] = parts[..] {
                    let one = if self.b.is_vector(only) { only } else { self.b.replicate(only, size) };
                    return Ok(Rep::Leaf(one));
                }
                Rep::Leaf(self.b.emit("items", Op::Interleave { parts, len: size }))
            }
            Rep::Tuple(fields) => {
                let mut out = Vec::new();
                for i in 0..fields.len() {
                    let column: Vec<Rep> = items
                        .iter()
                        .map(|r| match r {
                            Rep::Tuple(f) => f[i].clone(),
                            other => other.clone(),
                        })
                        .collect();
                    out.push(self.interleave(&column, size)?);
                }
                Rep::Tuple(out)
            }
            Rep::Seq(_) => {
                let seqs: Vec<SeqRep> = items.iter().filter_map(|r| r.clone().seq()).collect();
                let vectors = |s: &SeqRep| self.b.is_vector(s.offsets) && self.b.is_vector(s.lengths);
                let (disjoint, repeats) = repeats_together(&seqs, vectors);
                let (offsets, elems) = self.shifted_offsets(&seqs)?;
                let lengths: Vec<VarId> = seqs.iter().map(|s| s.lengths).collect();
                let offsets = self.b.emit("offsets", Op::Interleave { parts: offsets, len: size });
                let lengths = self.b.emit("lengths", Op::Interleave { parts: lengths, len: size });
                Rep::Seq(Box::new(SeqRep { offsets, lengths, elems, compact: false, disjoint, repeats }))
            }
        })
    }

    /// A collection of no values of type `ty`.
    pub(super) fn empty_coll(&mut self, ty: &Type) -> Rep {
        let zero = self.b.i32(0);
        match ty {
            Type::Scalar(s) => {
                let value = self.b.zero(*s);
                Rep::Leaf(self.b.replicate(value, zero))
            }
            Type::Tuple(items) => Rep::Tuple(items.iter().map(|t| self.empty_coll(t)).collect()),
            Type::Seq(elem) => {
                let offsets = self.b.replicate(zero, zero);
                let lengths = self.b.replicate(zero, zero);
                let elems = self.empty_coll(elem);
                Rep::Seq(Box::new(SeqRep {
                    offsets,
                    lengths,
                    elems,
                    compact: true,
                    disjoint: true,
                    repeats: 1,
                }))
            }
            Type::Var(_) | Type::Func(..) => Rep::Tuple(vec![]),
        }
    }

    /// `seq[index]`, Python's way: a negative index counts from the end; out of range is
    /// E0400 with `what` naming the operation in the message (`""` for `xs[i]`).
    pub(super) fn index(&mut self, seq: &SeqRep, index: VarId, ctx: CtxId, what: &str) -> FlattenResult<Rep> {
        let position = self.checked_position(seq, index, ctx, what);
        Ok(self.pick_own(seq, position, ctx))
    }

    /// The elements of `seq.elems` at `position`, one within each element's own segment:
    /// each picked at most as many times as the segments repeat, so their sequences keep
    /// `disjoint`, with that many times their repeats.
    fn pick_own(&mut self, seq: &SeqRep, position: VarId, ctx: CtxId) -> Rep {
        let picked = self.gather_coll(&seq.elems, position);
        if self.own_segments(seq, ctx) {
            super::keep_disjoint(picked, &seq.elems, seq.repeats)
        } else {
            picked
        }
    }

    /// `seq[index]` where shape analysis proved `0 <= index < len(seq)`: no check, and no
    /// counting from the end. A uniform index is still made per element, as a checked one is, so
    /// that an empty context reads nothing.
    pub(super) fn index_in_bounds(&mut self, seq: &SeqRep, index: VarId, ctx: CtxId) -> Rep {
        let mut operands = [self.b.cast(Scalar::I32, index), seq.offsets];
        self.guard(&mut operands, ctx);
        let [index, offsets] = operands;
        let position = self.b.add(offsets, index);
        self.pick_own(seq, position, ctx)
    }

    /// Where `seq[index]` is in `seq.elems`, after checking it is in range.
    pub(super) fn checked_position(&mut self, seq: &SeqRep, index: VarId, ctx: CtxId, what: &str) -> VarId {
        let zero = self.b.i32(0);
        let index = self.b.cast(Scalar::I32, index);
        let negative = self.b.binary(BinaryOp::Lt, index, zero);
        let from_end = self.b.add(index, seq.lengths);
        let resolved = self.b.select(negative, from_end, index);
        let mut operands = [resolved, seq.lengths, index];
        self.guard(&mut operands, ctx);
        let [resolved, len, written] = operands;
        self.b.check(Check::IndexInRange { index: resolved, len, written, what: what.to_string() });
        self.b.add(seq.offsets, resolved)
    }

    /// A `range` or slice step, checked not to be zero (`what` names the operation); 1 when it
    /// is left out.
    pub(super) fn checked_step(&mut self, step: Option<VarId>, what: &str, ctx: CtxId) -> VarId {
        let Some(step) = step else { return self.b.i32(1) };
        let mut operands = [step];
        self.guard(&mut operands, ctx);
        self.b.check(Check::NonZeroStep { step: operands[0], what: what.to_string() });
        step
    }

    /// `seq[start:stop:step]` with Python's clamping. A step of one shares the elements.
    pub(super) fn slice(
        &mut self,
        seq: &SeqRep,
        start: Option<VarId>,
        stop: Option<VarId>,
        step: Option<VarId>,
        ctx: CtxId,
    ) -> FlattenResult<Rep> {
        let len = seq.lengths;
        let zero = self.b.i32(0);
        let one = self.b.i32(1);
        let minus_one = self.b.i32(-1);
        let step = self.checked_step(step, "slice", ctx);
        let backwards = self.b.binary(BinaryOp::Lt, step, zero);
        let last = self.b.sub(len, one);
        // The bounds a clamped index may take, by direction: [0, len] forwards, [-1, len-1] back.
        let low = self.b.select(backwards, minus_one, zero);
        let high = self.b.select(backwards, last, len);
        let clamp = |me: &mut Self, bound: Option<VarId>, default_forward: VarId, default_backward: VarId| {
            match bound {
                None => me.b.select(backwards, default_backward, default_forward),
                Some(b) => {
                    let b = me.b.cast(Scalar::I32, b);
                    let negative = me.b.binary(BinaryOp::Lt, b, zero);
                    let shifted = me.b.add(b, len);
                    let shifted_low = me.b.binary(BinaryOp::Lt, shifted, zero);
                    let from_end = me.b.select(shifted_low, low, shifted);
                    let too_high = me.b.binary(BinaryOp::Ge, b, len);
                    let in_range = me.b.select(too_high, high, b);
                    me.b.select(negative, from_end, in_range)
                }
            }
        };
        let start = clamp(self, start, zero, last);
        let stop = clamp(self, stop, len, minus_one);
        // count = forwards: max(0, (stop - start - 1) / step + 1); backwards: symmetric.
        let span_forward = self.b.sub(stop, start);
        let span_backward = self.b.sub(start, stop);
        let span = self.b.select(backwards, span_backward, span_forward);
        let abs_step = {
            let negated = self.b.emit("t", Op::Unary(UnaryOp::Neg, step));
            self.b.select(backwards, negated, step)
        };
        let positive = self.b.binary(BinaryOp::Gt, span, zero);
        let span_minus = self.b.sub(span, one);
        let safe_step = {
            let is_zero = self.b.binary(BinaryOp::Eq, abs_step, zero);
            self.b.select(is_zero, one, abs_step)
        };
        let quotient = self.b.binary(BinaryOp::FloorDiv, span_minus, safe_step);
        let count_if = self.b.add(quotient, one);
        let count = self.b.select(positive, count_if, zero);
        let offsets = self.b.add(seq.offsets, start);
        // A step that is the literal 1 (no step written) keeps the elements in place.
        if step == one {
            return Ok(Rep::segments(offsets, count, seq.elems.clone()));
        }
        // Element j of each result is elems[offset + start + j * step].
        let (positions, lengths, new_offsets) = if self.lifted(ctx) || self.b.is_vector(count) {
            let count = self.force(count, ctx);
            let ids = self.b.emit("segment", Op::SegIds { lengths: count, within: vec![] });
            let within = self.b.emit("within", Op::SegIota { lengths: count, within: vec![] });
            let base = self.force(offsets, ctx);
            let step = self.force(step, ctx);
            let base = self.b.gather(base, ids);
            let step = self.b.gather(step, ids);
            let stride = self.b.mul(within, step);
            let new_offsets = self.b.offsets_of(count);
            (self.b.add(base, stride), count, new_offsets)
        } else {
            let iota = self.b.emit("iota", Op::Iota { len: count });
            let stride = self.b.mul(iota, step);
            (self.b.add(offsets, stride), count, zero)
        };
        let elems = self.gather_coll(&seq.elems, positions);
        Ok(Rep::Seq(Box::new(SeqRep {
            offsets: new_offsets,
            lengths,
            elems,
            compact: true,
            disjoint: true,
            repeats: 1,
        })))
    }

    /// Merges the results of a split conditional: `then` holds the values of the elements at
    /// `then_index`, `otherwise` those at `else_index`; both are forced to vectors.
    pub(super) fn merge(
        &mut self,
        ty: &Type,
        then: &Rep,
        otherwise: &Rep,
        then_index: VarId,
        else_index: VarId,
        size: VarId,
    ) -> Rep {
        match (ty, then, otherwise) {
            (Type::Scalar(s), Rep::Leaf(a), Rep::Leaf(b)) => {
                Rep::Leaf(self.scatter_both(*s, *a, *b, then_index, else_index, size))
            }
            (Type::Tuple(types), Rep::Tuple(xs), Rep::Tuple(ys)) => Rep::Tuple(
                types
                    .iter()
                    .zip(xs.iter().zip(ys))
                    .map(|(t, (x, y))| self.merge(t, x, y, then_index, else_index, size))
                    .collect(),
            ),
            (Type::Seq(_), Rep::Seq(x), Rep::Seq(y)) => match self.share_elems(then, otherwise) {
                Ok((Rep::Seq(a), Rep::Seq(b))) => {
                    // Each element takes its segment from one arm, whose elements are forced.
                    let (disjoint, repeats) = repeats_together(&[(**x).clone(), (**y).clone()], |_| true);
                    let offsets =
                        self.scatter_both(Scalar::I32, a.offsets, b.offsets, then_index, else_index, size);
                    let lengths =
                        self.scatter_both(Scalar::I32, a.lengths, b.lengths, then_index, else_index, size);
                    Rep::Seq(Box::new(SeqRep {
                        offsets,
                        lengths,
                        elems: a.elems,
                        compact: false,
                        disjoint,
                        repeats,
                    }))
                }
                _ => {
                    self.b.record_bug("a merge of sequences of empty tuples".to_string());
                    then.clone()
                }
            },
            _ => {
                self.b.record_bug(format!("a merge of mismatched values of type {ty}"));
                then.clone()
            }
        }
    }

    fn scatter_both(
        &mut self,
        elem: Scalar,
        a: VarId,
        b: VarId,
        then_index: VarId,
        else_index: VarId,
        size: VarId,
    ) -> VarId {
        let zero = self.b.zero(elem);
        let blank = self.b.replicate(zero, size);
        // Both indexes are packs of one `iota` (`split`): each names an element once.
        let merged = |dst, index, src| Op::Scatter { dst, index, src, distinct: true };
        let with_then = self.b.emit("merged", merged(blank, then_index, a));
        self.b.emit("merged", merged(with_then, else_index, b))
    }

    /// The sizes that bound the layout of `segs`, `seq`'s descriptor as `segs` gives it
    /// (`Op::SegIds`'s `within`): the size of `seq`'s elements, where `segs` is its one segment
    /// (`single`) or its own segments and they do not overlap, and that size once for each
    /// time they may (`SeqRep::repeats`); none where `segs` repeats a segment per element.
    pub(super) fn within(&mut self, seq: &SeqRep, segs: &Segs, single: bool) -> Vec<VarId> {
        let own = segs.offsets == seq.offsets && segs.lengths == seq.lengths;
        match first_leaf(&seq.elems) {
            Some(leaf) if single => vec![self.b.length(leaf)],
            // Past `MOST_REPEATS` a bound is too loose to allocate by, and its list too long.
            Some(leaf) if own && seq.disjoint && seq.repeats <= super::MOST_REPEATS => {
                vec![self.b.length(leaf); seq.repeats as usize]
            }
            _ => vec![],
        }
    }

    /// Whether `seq`, a value of `ctx`, has segments of its own that overlap at most
    /// `repeats` times: in a lifted context, its descriptor is not one uniform segment that
    /// every element repeats.
    pub(super) fn own_segments(&self, seq: &SeqRep, ctx: CtxId) -> bool {
        seq.disjoint
            && (!self.lifted(ctx) || (self.b.is_vector(seq.offsets) && self.b.is_vector(seq.lengths)))
    }

    /// The descriptor of a sequence value as vectors, for segmented ops: one segment in the
    /// root (or for a uniform sequence when `keep_uniform`), one per element otherwise.
    /// Also says whether it is a single segment whose results are uniform.
    pub(super) fn segs(&mut self, seq: &SeqRep, ctx: CtxId, keep_uniform: bool) -> (Segs, bool) {
        let uniform = !self.b.is_vector(seq.offsets) && !self.b.is_vector(seq.lengths);
        if uniform && (!self.lifted(ctx) || keep_uniform) {
            let one = self.b.i32(1);
            let offsets = self.b.replicate(seq.offsets, one);
            let lengths = self.b.replicate(seq.lengths, one);
            return (Segs { offsets, lengths }, true);
        }
        let offsets = self.force(seq.offsets, ctx);
        let lengths = self.force(seq.lengths, ctx);
        (Segs { offsets, lengths }, false)
    }

    /// A per-segment result as a context value: the one value when there was one segment.
    pub(super) fn unseg(&mut self, per_segment: VarId, single: bool) -> VarId {
        if single {
            let zero = self.b.i32(0);
            self.b.gather(per_segment, zero)
        } else {
            per_segment
        }
    }

    /// The elements of every segment, one segment after another, with each element's segment
    /// number: what a child context over these segments runs on. `single` says `segs` is the
    /// sequence's one segment; otherwise a uniform sequence forced per element repeats its
    /// elements in every segment, even when it is compact.
    pub(super) fn segment_elems(&mut self, seq: &SeqRep, segs: Segs, single: bool) -> (Rep, VarId) {
        let within = self.within(seq, &segs, single);
        self.segment_elems_within(seq, segs, single, within)
    }

    /// `segment_elems`, with `within` for the layout of `segs`.
    fn segment_elems_within(
        &mut self,
        seq: &SeqRep,
        segs: Segs,
        single: bool,
        within: Vec<VarId>,
    ) -> (Rep, VarId) {
        let ids = self.b.seg_ids(segs.lengths, within.clone());
        if seq.compact && (single || self.b.is_vector(seq.offsets)) {
            return (seq.elems.clone(), ids);
        }
        let starts = self.b.gather(segs.offsets, ids);
        let within = self.b.seg_iota(segs.lengths, within);
        let positions = self.b.add(starts, within);
        (self.gather_coll(&seq.elems, positions), ids)
    }

    /// Opens the context of `map` over `seqs` (of equal lengths, checked) in `ctx`: gives the
    /// child context, each sequence's elements there, and the result's descriptor.
    pub(super) fn enter(
        &mut self,
        seqs: &[SeqRep],
        ctx: CtxId,
        what: Option<&str>,
    ) -> FlattenResult<(CtxId, Vec<Rep>, VarId, VarId)> {
        let first = seqs.first().ok_or_else(|| self.bug("a map over no sequences"))?.clone();
        for other in seqs[1..].iter().filter(|_| what.is_some()) {
            let mut operands = [first.lengths, other.lengths];
            self.guard(&mut operands, ctx);
            let what = LengthCheck::Equal(what.unwrap_or_default().to_string());
            self.b.check(Check::LengthsEqual { a: operands[0], b: operands[1], what });
        }
        if !self.lifted(ctx) {
            let child = self.ctx_over(ROOT, first.lengths, None, first.lengths);
            let mut elems = Vec::new();
            let mut iota = None;
            for seq in seqs {
                elems.push(if seq.compact {
                    seq.elems.clone()
                } else {
                    let len = first.lengths;
                    let iota = *iota.get_or_insert_with(|| self.b.emit("iota", Op::Iota { len }));
                    let positions = self.b.add(seq.offsets, iota);
                    self.gather_coll(&seq.elems, positions)
                });
            }
            let zero = self.b.i32(0);
            return Ok((child, elems, zero, first.lengths));
        }
        let (first_segs, _) = self.segs(&first, ctx, false);
        let total = self.b.sum(first_segs.lengths);
        // Every sequence's layout is the first's, bounded by the first's elements.
        let within = self.within(&first, &first_segs, false);
        let mut elems = Vec::new();
        let mut ids = None;
        for seq in seqs {
            let (segs, _) = self.segs(seq, ctx, false);
            let segs = Segs { offsets: segs.offsets, lengths: first_segs.lengths };
            let (e, seg_ids) = self.segment_elems_within(seq, segs, false, within.clone());
            ids.get_or_insert(seg_ids);
            elems.push(e);
        }
        let ids = ids.unwrap_or_default();
        let child = self.ctx_over(ctx, total, Some(ids), first_segs.lengths);
        let offsets = self.b.offsets_of(first_segs.lengths);
        Ok((child, elems, offsets, first_segs.lengths))
    }

    /// A sequence of the values of `body` (a value of context `child`), one per element.
    pub(super) fn exit(&mut self, body: &Rep, child: CtxId, offsets: VarId, lengths: VarId) -> Rep {
        let elems = self.force_rep(body, child);
        Rep::Seq(Box::new(SeqRep { offsets, lengths, elems, compact: true, disjoint: true, repeats: 1 }))
    }
}
