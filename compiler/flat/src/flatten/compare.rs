//! Operators on values of any type under flattening: scalars element-wise, tuples field by
//! field, and sequences lexicographically, through a child context over their common prefix.
//!
//! Two orders exist, as in the interpreter (`interp::ops`): Python's, for the comparison
//! operators (NaN is unequal to everything), and the total order of `sort`, `min`, `max`,
//! `argmin` and `argmax` (NaN above every number and equal to itself, `-0.0 == 0.0`).

use crate::ir::{Op, ReduceOp, Segs, VarId};
use weft_core::types::{Scalar, Type};
use weft_core::{BinaryOp, UnaryOp};

use super::{CtxId, FlattenResult, Flattener, Rep, SeqRep, may_fail};

/// Which order a comparison follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Order {
    /// Python's operators: `==` and `<` element by element.
    Python,
    /// `interp::ops::total_cmp`.
    Total,
}

impl Flattener<'_> {
    /// `a op b` on values of type `ty`: arithmetic on scalars, comparisons on any type.
    pub(super) fn binary(
        &mut self,
        op: BinaryOp,
        ty: &Type,
        a: &Rep,
        b: &Rep,
        ctx: CtxId,
    ) -> FlattenResult<VarId> {
        match (ty, a, b) {
            (Type::Scalar(s), Rep::Leaf(x), Rep::Leaf(y)) => {
                let mut operands = [*x, *y];
                if may_fail(op, *s) {
                    self.guard(&mut operands, ctx);
                }
                Ok(self.b.binary(op, operands[0], operands[1]))
            }
            _ if op.is_comparison() => self.compare(op, Order::Python, ty, a, b, ctx),
            _ => Err(self.unsupported(self.b.span, &format!("`{}` on values of type {ty}", op.symbol()))),
        }
    }

    /// A comparison (`op` is `==`, `!=`, `<`, `<=`, `>` or `>=`) of two values of type `ty`.
    pub(super) fn compare(
        &mut self,
        op: BinaryOp,
        order: Order,
        ty: &Type,
        a: &Rep,
        b: &Rep,
        ctx: CtxId,
    ) -> FlattenResult<VarId> {
        if op == BinaryOp::Ne {
            let equal = self.compare(BinaryOp::Eq, order, ty, a, b, ctx)?;
            return Ok(self.not(equal));
        }
        match (ty, a, b) {
            (Type::Scalar(s), Rep::Leaf(x), Rep::Leaf(y)) => Ok(self.scalar_compare(op, order, *s, *x, *y)),
            (Type::Tuple(types), Rep::Tuple(xs), Rep::Tuple(ys)) => {
                self.tuple_compare(op, order, types, xs, ys, ctx)
            }
            (Type::Seq(elem), Rep::Seq(xs), Rep::Seq(ys)) if op == BinaryOp::Eq => {
                self.seq_equal(order, elem, xs, ys, ctx)
            }
            (Type::Seq(elem), Rep::Seq(xs), Rep::Seq(ys)) => self.seq_order(op, order, elem, xs, ys, ctx),
            _ => Err(self.bug("a comparison of mismatched values")),
        }
    }

    fn not(&mut self, v: VarId) -> VarId {
        self.b.emit("t", Op::Unary(UnaryOp::Not, v))
    }

    fn or(&mut self, a: VarId, b: VarId) -> VarId {
        self.b.binary(BinaryOp::BitOr, a, b)
    }

    fn scalar_compare(&mut self, op: BinaryOp, order: Order, s: Scalar, x: VarId, y: VarId) -> VarId {
        if order == Order::Python || !s.is_float() {
            return self.b.binary(op, x, y);
        }
        match op {
            BinaryOp::Eq => {
                let equal = self.b.binary(BinaryOp::Eq, x, y);
                let x_nan = self.b.binary(BinaryOp::Ne, x, x);
                let y_nan = self.b.binary(BinaryOp::Ne, y, y);
                let both_nan = self.b.binary(BinaryOp::BitAnd, x_nan, y_nan);
                self.or(equal, both_nan)
            }
            BinaryOp::Lt => self.total_less(x, y),
            BinaryOp::Gt => self.total_less(y, x),
            BinaryOp::Le => {
                let greater = self.total_less(y, x);
                self.not(greater)
            }
            _ => {
                let less = self.total_less(x, y);
                self.not(less)
            }
        }
    }

    /// `x < y` for floats with NaN above every number.
    fn total_less(&mut self, x: VarId, y: VarId) -> VarId {
        let less = self.b.binary(BinaryOp::Lt, x, y);
        let x_number = self.b.binary(BinaryOp::Eq, x, x);
        let y_nan = self.b.binary(BinaryOp::Ne, y, y);
        let below_nan = self.b.binary(BinaryOp::BitAnd, x_number, y_nan);
        self.or(less, below_nan)
    }

    /// Tuples: equal when every field is; otherwise ordered by the first field that differs.
    fn tuple_compare(
        &mut self,
        op: BinaryOp,
        order: Order,
        types: &[Type],
        xs: &[Rep],
        ys: &[Rep],
        ctx: CtxId,
    ) -> FlattenResult<VarId> {
        if op == BinaryOp::Eq {
            let mut all = self.b.bool(true);
            for ((t, x), y) in types.iter().zip(xs).zip(ys) {
                let eq = self.compare(BinaryOp::Eq, order, t, x, y, ctx)?;
                let f = self.b.bool(false);
                all = self.b.select(all, eq, f);
            }
            return Ok(all);
        }
        // Decided by the first field that differs, else the tuples are equal.
        let strict = strict_of(op);
        let mut result = self.b.bool(strict != op);
        for ((t, x), y) in types.iter().zip(xs).zip(ys).rev() {
            let less_or_greater = self.compare(strict, order, t, x, y, ctx)?;
            let eq = self.compare(BinaryOp::Eq, order, t, x, y, ctx)?;
            result = self.b.select(eq, result, less_or_greater);
        }
        Ok(result)
    }

    /// The two sequences trimmed to `common` elements each, entered as a child context of
    /// element pairs: the child, the pair's values there, and one segment per element of `ctx`
    /// (a single segment in the root).
    fn enter_pairs(
        &mut self,
        xs: &SeqRep,
        ys: &SeqRep,
        common: VarId,
        ctx: CtxId,
    ) -> FlattenResult<(CtxId, Vec<Rep>, Segs)> {
        // Trimmed sequences are not compact: their elements run past `common`.
        let trimmed = |seq: &SeqRep| SeqRep { lengths: common, compact: false, ..seq.clone() };
        let (a, b) = (trimmed(xs), trimmed(ys));
        let (child, elems, offsets, lengths) = self.enter(&[a, b], ctx, None)?;
        let segs = if self.lifted(ctx) {
            Segs { offsets: self.force(offsets, ctx), lengths: self.force(lengths, ctx) }
        } else {
            let one = self.b.i32(1);
            Segs { offsets: self.b.replicate(offsets, one), lengths: self.b.replicate(lengths, one) }
        };
        Ok((child, elems, segs))
    }

    /// A per-element flag of the child context as a vector.
    pub(super) fn flag_vector(&mut self, flag: VarId, child: CtxId) -> VarId {
        let flag = self.force(flag, child);
        if self.b.is_vector(flag) {
            flag
        } else {
            let size = self.size(child);
            self.b.replicate(flag, size)
        }
    }

    /// `xs == ys` on sequences: equal lengths, and equal elements where the lengths agree.
    fn seq_equal(
        &mut self,
        order: Order,
        elem: &Type,
        xs: &SeqRep,
        ys: &SeqRep,
        ctx: CtxId,
    ) -> FlattenResult<VarId> {
        let same_length = self.b.binary(BinaryOp::Eq, xs.lengths, ys.lengths);
        let zero = self.b.i32(0);
        let common = self.b.select(same_length, xs.lengths, zero);
        let (child, elems, segs) = self.enter_pairs(xs, ys, common, ctx)?;
        let equal = self.compare(BinaryOp::Eq, order, elem, &elems[0], &elems[1], child)?;
        let equal = self.flag_vector(equal, child);
        let all = self.b.emit("equal", Op::SegReduce { op: ReduceOp::And, src: equal, segs });
        let all = self.unseg(all, !self.lifted(ctx));
        let f = self.b.bool(false);
        Ok(self.b.select(same_length, all, f))
    }

    /// `xs < ys` (and `<=`, `>`, `>=`) on sequences, lexicographically: the first position
    /// where the elements differ decides; where none does, the lengths do.
    fn seq_order(
        &mut self,
        op: BinaryOp,
        order: Order,
        elem: &Type,
        xs: &SeqRep,
        ys: &SeqRep,
        ctx: CtxId,
    ) -> FlattenResult<VarId> {
        let x_shorter = self.b.binary(BinaryOp::Lt, xs.lengths, ys.lengths);
        let common = self.b.select(x_shorter, xs.lengths, ys.lengths);
        let (child, elems, segs) = self.enter_pairs(xs, ys, common, ctx)?;
        let equal = self.compare(BinaryOp::Eq, order, elem, &elems[0], &elems[1], child)?;
        let equal = self.flag_vector(equal, child);
        let strict = self.compare(strict_of(op), order, elem, &elems[0], &elems[1], child)?;
        let strict = self.flag_vector(strict, child);
        // The first position whose elements differ, per segment, where one does.
        let unequal = self.not(equal);
        let differs = self.b.emit("differs", Op::SegReduce { op: ReduceOp::Or, src: unequal, segs });
        let within = self.b.emit("within", Op::SegIota { lengths: segs.lengths, within: vec![] });
        let ids = self.b.emit("segment", Op::SegIds { lengths: segs.lengths, within: vec![] });
        let none = self.b.i32(i64::from(i32::MAX));
        let candidate = self.b.select(equal, none, within);
        let first = self.b.emit("first", Op::SegReduce { op: ReduceOp::Min, src: candidate, segs });
        let first_here = self.b.gather(first, ids);
        let at_first = self.b.binary(BinaryOp::Eq, within, first_here);
        let f = self.b.bool(false);
        let hit = self.b.select(at_first, strict, f);
        let by_element = self.b.emit("decided", Op::SegReduce { op: ReduceOp::Or, src: hit, segs });
        let single = !self.lifted(ctx);
        let by_element = self.unseg(by_element, single);
        let differs = self.unseg(differs, single);
        let by_length = self.b.binary(op, xs.lengths, ys.lengths);
        Ok(self.b.select(differs, by_element, by_length))
    }
}

/// The strict comparison that decides `op` where two elements differ.
fn strict_of(op: BinaryOp) -> BinaryOp {
    match op {
        BinaryOp::Lt | BinaryOp::Le => BinaryOp::Lt,
        _ => BinaryOp::Gt,
    }
}
