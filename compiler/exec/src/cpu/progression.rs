//! The strided layout: `i32` vectors that are arithmetic progressions (`start + step * i`),
//! held as three numbers and never written out.
//!
//! A regular nested sequence (every segment of one width `w`) has the segment descriptor
//! `offsets = [o, o + s, o + 2s, ...]`, `lengths = [w, w, ...]`: two progressions. The flattener
//! builds those descriptors with `iota`, `replicate` of a scalar width, `* w` and the exclusive
//! `scan` of the lengths; here each of those gives a `FlatValue::Progression` in O(1), so a regular
//! sequence is stored as its elements plus a stride, with no descriptor vectors. The ops that
//! read descriptors (segment ids and positions, segmented reductions, gathers through the
//! offsets) take the strided form directly. Any other op gets the progression written out first
//! (`materialize`), so the vector kernels never see one.
//!
//! Arithmetic wraps as `i32` does, and a progression's elements are computed with wrapping
//! arithmetic, so both forms hold the same values.

use weft_core::BinaryOp;
use weft_flat::ir::{Op, ReduceOp};

use super::kernels::{self, KResult};
use super::value::{FlatValue, ScalarValue};

/// `start + step * i` for `i` in `0..len`, in wrapping `i32` arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progression {
    pub start: i32,
    pub step: i32,
    pub len: usize,
}

impl Progression {
    pub fn get(&self, i: usize) -> i32 {
        self.start.wrapping_add(self.step.wrapping_mul(i as i32))
    }

    /// The vector it stands for.
    pub fn materialize(&self) -> FlatValue {
        let p = *self;
        FlatValue::i32s(kernels::par_map_idx(p.len, |i| p.get(i)))
    }

    /// The smallest and largest element, for bounds checks (a progression is monotone).
    fn extremes(&self) -> Option<(i64, i64)> {
        if self.len == 0 {
            return None;
        }
        let (first, last) = (self.start as i64, self.start as i64 + self.step as i64 * (self.len as i64 - 1));
        // Past the i32 range, the elements wrap and are no longer monotone.
        if last < i32::MIN as i64 || last > i32::MAX as i64 {
            return Some((i32::MIN as i64, i32::MAX as i64));
        }
        Some((first.min(last), first.max(last)))
    }

    /// A width `w` repeated: the lengths of a regular sequence.
    fn constant(&self) -> Option<i32> {
        (self.step == 0 || self.len <= 1).then_some(self.start)
    }
}

fn int(v: &FlatValue) -> Option<i32> {
    match v {
        FlatValue::Scalar(ScalarValue::I32(x)) => Some(*x),
        _ => None,
    }
}

fn count(v: &FlatValue) -> Option<usize> {
    int(v).and_then(|n| usize::try_from(n).ok())
}

/// The ops that produce or consume progressions cheaply: `Some(result)`, or `None` when the
/// operands are not in a form this handles (then the caller writes progressions out and runs
/// the vector kernel, which also reports any error).
pub fn run_op(op: &Op, args: &[FlatValue]) -> Option<KResult<Option<FlatValue>>> {
    use FlatValue::Progression as P;
    let prog = |p: Progression| Some(Ok(Some(P(p))));
    match (op, args) {
        (Op::Iota { .. }, [len]) => prog(Progression { start: 0, step: 1, len: count(len)? }),
        (Op::Replicate { .. }, [value, len]) => {
            prog(Progression { start: int(value)?, step: 0, len: count(len)? })
        }
        (Op::Binary(op, ..), [a, b]) => binary(*op, a, b).map(|p| Ok(Some(P(p)))),
        (Op::Length(_), [P(p)]) => {
            Some(Ok(Some(FlatValue::Scalar(ScalarValue::I32(i32::try_from(p.len).ok()?)))))
        }
        (Op::Reduce { op: ReduceOp::Add, .. }, [P(p)]) => {
            // n * start + step * n (n - 1) / 2, modulo 2^32 as the wrapping sum is.
            let n = p.len as u64;
            let triangle = (n as u128 * n.saturating_sub(1) as u128 / 2) as u32 as i32;
            let sum = (n as u32 as i32).wrapping_mul(p.start).wrapping_add(p.step.wrapping_mul(triangle));
            Some(Ok(Some(FlatValue::Scalar(ScalarValue::I32(sum)))))
        }
        // The exclusive sum of a constant width: the offsets of a regular sequence.
        (Op::Scan { op: ReduceOp::Add, init: Some(_), .. }, [P(p), init]) => {
            prog(Progression { start: int(init)?, step: p.constant()?, len: p.len })
        }
        (Op::Gather { .. }, [P(src), index]) => Some(gather_from(src, index)),
        (Op::Gather { .. }, [src @ FlatValue::Vector(_), P(index)]) => {
            Some(kernels::gather_strided(src, index.start, index.step, index.len))
        }
        (Op::SegIds { .. } | Op::SegIota { .. }, [P(lengths), within @ ..]) => {
            let layout = seg_iota(lengths, matches!(op, Op::SegIds { .. }))?;
            Some(layout.and_then(|layout| {
                if let Some(layout) = &layout {
                    kernels::within_bound(layout, within)?;
                }
                Ok(layout)
            }))
        }
        (Op::SegReduce { op, .. }, [src @ FlatValue::Vector(_), P(offsets), P(lengths)]) => {
            let width = lengths.constant()?;
            if offsets.len != lengths.len {
                return None;
            }
            let width = usize::try_from(width).ok()?;
            Some(
                kernels::seg_reduce_strided(*op, src, offsets.start, offsets.step, width, offsets.len)
                    .map(Some),
            )
        }
        _ => None,
    }
}

/// `a op b` where the result is again a progression: sums and differences of progressions
/// and scalars, and a progression times a scalar.
fn binary(op: BinaryOp, a: &FlatValue, b: &FlatValue) -> Option<Progression> {
    use FlatValue::Progression as P;
    let combine = |p: &Progression, q: &Progression, sign: i32| -> Option<Progression> {
        (p.len == q.len).then(|| Progression {
            start: p.start.wrapping_add(q.start.wrapping_mul(sign)),
            step: p.step.wrapping_add(q.step.wrapping_mul(sign)),
            len: p.len,
        })
    };
    let scalar = |x: i32, len: usize| Progression { start: x, step: 0, len };
    match (op, a, b) {
        (BinaryOp::Add, P(p), P(q)) => combine(p, q, 1),
        (BinaryOp::Sub, P(p), P(q)) => combine(p, q, -1),
        (BinaryOp::Add, P(p), s) | (BinaryOp::Add, s, P(p)) => combine(p, &scalar(int(s)?, p.len), 1),
        (BinaryOp::Sub, P(p), s) => combine(p, &scalar(int(s)?, p.len), -1),
        (BinaryOp::Sub, s, P(p)) => combine(&scalar(int(s)?, p.len), p, -1),
        (BinaryOp::Mul, P(p), s) | (BinaryOp::Mul, s, P(p)) => {
            let k = int(s)?;
            Some(Progression { start: p.start.wrapping_mul(k), step: p.step.wrapping_mul(k), len: p.len })
        }
        _ => None,
    }
}

/// `src[index]` for a progression `src`: a progression again when the index is one (or a
/// scalar), else the elements at the indexes. Out of range is the gather kernel's error.
fn gather_from(src: &Progression, index: &FlatValue) -> KResult<Option<FlatValue>> {
    let in_range = |lo: i64, hi: i64| lo >= 0 && hi < src.len as i64;
    match index {
        FlatValue::Scalar(s) => match s.as_int() {
            Some(i) if in_range(i, i) => Ok(Some(FlatValue::Scalar(ScalarValue::I32(src.get(i as usize))))),
            _ => kernels::gather(&src.materialize(), index).map(Some),
        },
        FlatValue::Progression(ix) => match ix.extremes() {
            None => Ok(Some(FlatValue::Progression(Progression { start: 0, step: 0, len: 0 }))),
            Some((lo, hi)) if in_range(lo, hi) => Ok(Some(FlatValue::Progression(Progression {
                start: src.get(ix.start as usize),
                step: src.step.wrapping_mul(ix.step),
                len: ix.len,
            }))),
            _ => kernels::gather(&src.materialize(), &ix.materialize()).map(Some),
        },
        // Reading a constant (the one offset of a sequence every element shares) at any valid
        // indexes gives that constant again.
        FlatValue::Vector(_) if src.step == 0 && kernels::all_indexes_below(index, src.len) => {
            let len = index.vector_len().unwrap_or(0);
            Ok(Some(FlatValue::Progression(Progression { start: src.start, step: 0, len })))
        }
        FlatValue::Vector(_) => kernels::gather(&src.materialize(), index).map(Some),
    }
}

/// The segment number (`ids`) or the position within the segment of each element of a
/// regular sequence of `lengths.len` segments of one width.
fn seg_iota(lengths: &Progression, ids: bool) -> Option<KResult<Option<FlatValue>>> {
    let width = usize::try_from(lengths.constant()?).ok()?;
    let total = width.checked_mul(lengths.len)?;
    let at = move |i: usize| if ids { (i / width) as i32 } else { (i % width) as i32 };
    Some(Ok(Some(FlatValue::i32s(kernels::par_map_idx(total, at)))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(start: i32, step: i32, len: usize) -> FlatValue {
        FlatValue::Progression(Progression { start, step, len })
    }

    fn i32s(v: &[i32]) -> FlatValue {
        FlatValue::i32s(v.to_vec())
    }

    fn written(v: FlatValue) -> FlatValue {
        match v {
            FlatValue::Progression(p) => p.materialize(),
            other => other,
        }
    }

    /// Every op this module runs gives what the vector kernel gives on the written-out vectors.
    #[test]
    fn agrees_with_the_vector_kernels() {
        let n = FlatValue::Scalar(ScalarValue::I32(5));
        let three = FlatValue::Scalar(ScalarValue::I32(3));
        let cases: Vec<(Op, Vec<FlatValue>)> = vec![
            (Op::Iota { len: 0 }, vec![n.clone()]),
            (Op::Replicate { value: 0, len: 1 }, vec![three.clone(), n.clone()]),
            (Op::Binary(BinaryOp::Add, 0, 1), vec![p(1, 2, 5), p(-4, 3, 5)]),
            (Op::Binary(BinaryOp::Sub, 0, 1), vec![three.clone(), p(1, 2, 5)]),
            (Op::Binary(BinaryOp::Mul, 0, 1), vec![p(i32::MAX - 3, 7, 5), three.clone()]),
            (Op::Length(0), vec![p(0, 1, 7)]),
            (Op::Reduce { op: ReduceOp::Add, src: 0 }, vec![p(i32::MAX - 1, 1000, 9)]),
            (Op::Scan { op: ReduceOp::Add, src: 0, init: Some(1) }, vec![p(4, 0, 6), three.clone()]),
            (Op::Gather { src: 0, index: 1 }, vec![p(10, 5, 6), p(5, -2, 3)]),
            (Op::Gather { src: 0, index: 1 }, vec![p(10, 0, 6), i32s(&[0, 5, 2])]),
            (Op::Gather { src: 0, index: 1 }, vec![i32s(&[9, 8, 7, 6, 5]), p(4, -2, 3)]),
            (Op::SegIds { lengths: 0, within: vec![] }, vec![p(3, 0, 4)]),
            (Op::SegIota { lengths: 0, within: vec![] }, vec![p(3, 0, 4)]),
            (Op::SegIds { lengths: 0, within: vec![] }, vec![p(0, 0, 4)]),
        ];
        for (op, args) in cases {
            let fast = run_op(&op, &args).unwrap_or_else(|| panic!("{op:?} is not handled")).expect("runs");
            let written_args: Vec<FlatValue> = args.into_iter().map(written).collect();
            let slow = kernels::run_op(&op, &written_args).expect("runs");
            assert_eq!(fast.map(written), slow, "{op:?}");
        }
    }

    #[test]
    fn strided_segment_reductions_agree() {
        let src = FlatValue::f32s((0..24).map(|i| i as f32 * 0.5).collect());
        for (offsets, lengths) in
            [(p(0, 6, 4), p(6, 0, 4)), (p(2, 0, 5), p(3, 0, 5)), (p(0, 0, 3), p(0, 0, 3))]
        {
            let op = Op::SegReduce {
                op: ReduceOp::Add,
                src: 0,
                segs: weft_flat::ir::Segs { offsets: 1, lengths: 2 },
            };
            let args = vec![src.clone(), offsets, lengths];
            let fast = run_op(&op, &args).expect("handled").expect("runs");
            let slow =
                kernels::run_op(&op, &args.into_iter().map(written).collect::<Vec<_>>()).expect("runs");
            assert_eq!(fast, slow);
        }
    }

    #[test]
    fn out_of_range_gathers_fail_as_the_kernel_does() {
        let op = Op::Gather { src: 0, index: 1 };
        let bad = run_op(&op, &[p(0, 0, 3), i32s(&[0, 3])]).expect("handled");
        assert!(bad.is_err());
        let bad = run_op(&op, &[i32s(&[1, 2]), p(0, 1, 3)]).expect("handled");
        assert!(bad.is_err());
    }
}
