//! The prelude's operations (`core::Prim`) on interpreter values, as docs/language.md's prelude
//! table defines them, with the run-time errors it lists (E0400, E0403–E0407, E0409).
//!
//! Higher-order operations (`map`, `filter`, `reduce`, `scan`, `exclusive_scan`) apply their
//! function arguments sequentially, left to right, so the first error a program meets is the
//! one sequential Python would meet.

use std::sync::Arc;

use weft_core::types::Type;
use weft_core::{BinaryOp, ExprId, FuncId, Prim};
use weft_syntax::diagnostics::Code;

use super::data;
use super::ops::{self, Fail, fail, ill_typed, total_cmp};
use super::value::{Data, Elems, NestedValue, Seq, SeqBuilder};
use super::{EvalResult, Frame, Interp, at, resolve_index};

/// The longest sequence there can be: `len` gives an `i32`.
const MAX_LEN: usize = i32::MAX as usize;

fn check_len(what: &str, n: u128) -> Result<usize, Fail> {
    if n > MAX_LEN as u128 {
        return fail(
            Code::ResourceExhausted,
            format!("{what} would have {n} elements, more than the maximum length {MAX_LEN}"),
        );
    }
    Ok(n as usize)
}

/// A vector for `n` elements, or E0409 when the memory is not there.
fn alloc<T>(n: usize) -> Result<Vec<T>, Fail> {
    let mut v = Vec::new();
    match v.try_reserve_exact(n) {
        Ok(()) => Ok(v),
        Err(_) => fail(Code::ResourceExhausted, format!("out of memory for a sequence of {n} elements")),
    }
}

fn seq_arg(args: &[NestedValue], i: usize) -> Result<&Seq, Fail> {
    match args.get(i) {
        Some(NestedValue::Seq(s)) => Ok(s),
        _ => ill_typed("a sequence argument"),
    }
}

fn int_arg(args: &[NestedValue], i: usize) -> Result<i64, Fail> {
    match args.get(i).and_then(NestedValue::as_int) {
        Some(n) => Ok(n),
        None => ill_typed("an integer argument"),
    }
}

fn value_arg(args: &[NestedValue], i: usize) -> Result<&NestedValue, Fail> {
    match args.get(i) {
        Some(v) => Ok(v),
        None => ill_typed("a missing argument"),
    }
}

/// A count argument (`replicate`, `random_f32`, ...): negative is E0406.
fn count_arg(args: &[NestedValue], i: usize, what: &str) -> Result<usize, Fail> {
    let n = int_arg(args, i)?;
    if n < 0 {
        return fail(Code::InvalidArgument, format!("{what} count {n} is negative"));
    }
    check_len(what, n as u128)
}

/// The elements of `seq` at `positions`, in the same storage.
fn pick(seq: &Seq, positions: &[usize]) -> Seq {
    match seq.elems() {
        Elems::Bool(s) => Seq::bools(positions.iter().map(|&i| s[i]).collect()),
        Elems::I32(s) => Seq::i32s(positions.iter().map(|&i| s[i]).collect()),
        Elems::I64(s) => Seq::i64s(positions.iter().map(|&i| s[i]).collect()),
        Elems::F32(s) => Seq::f32s(positions.iter().map(|&i| s[i]).collect()),
        Elems::F64(s) => Seq::f64s(positions.iter().map(|&i| s[i]).collect()),
        Elems::Values(s) => Seq::from_data(Data::Values(positions.iter().map(|&i| s[i].clone()).collect())),
    }
}

/// The elements of a sequence of integers, widened to `i64`.
fn ints(seq: &Seq) -> Result<Vec<i64>, Fail> {
    match seq.elems() {
        Elems::I32(s) => Ok(s.iter().map(|&i| i64::from(i)).collect()),
        Elems::I64(s) => Ok(s.to_vec()),
        Elems::Values(s) => {
            s.iter().map(|v| v.as_int().map_or_else(|| ill_typed("an integer"), Ok)).collect()
        }
        _ => ill_typed("a sequence of integers"),
    }
}

/// The flags of a sequence of `bool`s.
fn flags(seq: &Seq) -> Result<Vec<bool>, Fail> {
    match seq.elems() {
        Elems::Bool(s) => Ok(s.to_vec()),
        Elems::Values(s) => s.iter().map(|v| v.as_bool().map_or_else(|| ill_typed("a bool"), Ok)).collect(),
        _ => ill_typed("a sequence of bools"),
    }
}

/// `xs[start:stop:step]`, clamped as Python's slices are; step 1 shares the buffer.
pub(super) fn slice(
    seq: &Seq,
    start: Option<i64>,
    stop: Option<i64>,
    step: Option<i64>,
) -> Result<Seq, Fail> {
    let step = step.unwrap_or(1);
    if step == 0 {
        return fail(Code::InvalidArgument, "slice step cannot be zero");
    }
    let len = seq.len() as i64;
    let clamp = |bound: Option<i64>, default: i64| match bound {
        None => default,
        Some(b) if b < 0 => {
            let b = b + len;
            if b < 0 { if step < 0 { -1 } else { 0 } } else { b }
        }
        Some(b) if b >= len => {
            if step < 0 {
                len - 1
            } else {
                len
            }
        }
        Some(b) => b,
    };
    let start = clamp(start, if step < 0 { len - 1 } else { 0 });
    let stop = clamp(stop, if step < 0 { -1 } else { len });
    if step == 1 {
        return Ok(seq.window(start as usize, (stop - start).max(0) as usize));
    }
    let count = if step < 0 {
        if stop < start { (start - stop - 1) / -step + 1 } else { 0 }
    } else if start < stop {
        (stop - start - 1) / step + 1
    } else {
        0
    };
    let positions: Vec<usize> = (0..count).map(|k| (start + k * step) as usize).collect();
    Ok(pick(seq, &positions))
}

/// `range(...)` with 1 to 3 arguments.
fn range(args: &[NestedValue]) -> Result<NestedValue, Fail> {
    let (start, stop, step) = match args.len() {
        1 => (0, int_arg(args, 0)?, 1),
        2 => (int_arg(args, 0)?, int_arg(args, 1)?, 1),
        _ => (int_arg(args, 0)?, int_arg(args, 1)?, int_arg(args, 2)?),
    };
    if step == 0 {
        return fail(Code::InvalidArgument, "range step cannot be zero");
    }
    let count = if step > 0 && start < stop {
        (stop - start - 1) / step + 1
    } else if step < 0 && start > stop {
        (start - stop - 1) / -step + 1
    } else {
        0
    };
    let count = check_len("range", count as u128)?;
    let mut v = alloc::<i32>(count)?;
    v.extend((0..count as i64).map(|k| (start + k * step) as i32));
    Ok(NestedValue::Seq(Seq::i32s(v)))
}

fn sum_or_product(prim: &Prim, xs: &Seq, ret: &Type) -> Result<NestedValue, Fail> {
    let sum = matches!(prim, Prim::Sum);
    Ok(match xs.elems() {
        Elems::I32(s) => NestedValue::I32(if sum {
            s.iter().fold(0i32, |a, &x| a.wrapping_add(x))
        } else {
            s.iter().fold(1i32, |a, &x| a.wrapping_mul(x))
        }),
        Elems::I64(s) => NestedValue::I64(if sum {
            s.iter().fold(0i64, |a, &x| a.wrapping_add(x))
        } else {
            s.iter().fold(1i64, |a, &x| a.wrapping_mul(x))
        }),
        Elems::F32(s) => NestedValue::F32(if sum {
            s.iter().fold(0.0, |a, &x| a + x)
        } else {
            s.iter().fold(1.0, |a, &x| a * x)
        }),
        Elems::F64(s) => NestedValue::F64(if sum {
            s.iter().fold(0.0, |a, &x| a + x)
        } else {
            s.iter().fold(1.0, |a, &x| a * x)
        }),
        _ => {
            let Some(scalar) = ret.as_scalar() else { return ill_typed("the sum of non-numbers") };
            let mut acc = ops::cast(&NestedValue::I32(i32::from(!sum)), scalar)?;
            let op = if sum { BinaryOp::Add } else { BinaryOp::Mul };
            for x in xs.iter() {
                acc = ops::binary(op, &acc, &x)?;
            }
            acc
        }
    })
}

/// The index of the first smallest (`max == false`) or first largest element, in the total order
/// of `ops::total_cmp`.
fn extreme(name: &str, xs: &Seq, max: bool) -> Result<usize, Fail> {
    if xs.is_empty() {
        return fail(Code::EmptySequence, format!("{name} of an empty sequence"));
    }
    let better = |o: std::cmp::Ordering| if max { o.is_gt() } else { o.is_lt() };
    let mut best = 0;
    let mut best_value = xs.get(0);
    for i in 1..xs.len() {
        let x = xs.get(i);
        if better(total_cmp(&x, &best_value)) {
            best = i;
            best_value = x;
        }
    }
    Ok(best)
}

fn sort(xs: &Seq) -> Seq {
    match xs.elems() {
        Elems::Bool(s) => {
            let mut v = s.to_vec();
            v.sort();
            Seq::bools(v)
        }
        Elems::I32(s) => {
            let mut v = s.to_vec();
            v.sort();
            Seq::i32s(v)
        }
        Elems::I64(s) => {
            let mut v = s.to_vec();
            v.sort();
            Seq::i64s(v)
        }
        Elems::F32(s) => {
            let mut v = s.to_vec();
            v.sort_by(|a, b| ops::float_cmp(*a, *b));
            Seq::f32s(v)
        }
        Elems::F64(s) => {
            let mut v = s.to_vec();
            v.sort_by(|a, b| ops::float_cmp(*a, *b));
            Seq::f64s(v)
        }
        Elems::Values(s) => {
            let mut v = s.to_vec();
            v.sort_by(total_cmp);
            Seq::from_data(Data::Values(v.into()))
        }
    }
}

fn replicate(x: &NestedValue, n: usize) -> Result<Seq, Fail> {
    Ok(match x {
        NestedValue::Bool(b) => Seq::bools(filled(*b, n)?),
        NestedValue::I32(i) => Seq::i32s(filled(*i, n)?),
        NestedValue::I64(i) => Seq::i64s(filled(*i, n)?),
        NestedValue::F32(f) => Seq::f32s(filled(*f, n)?),
        NestedValue::F64(f) => Seq::f64s(filled(*f, n)?),
        v => Seq::from_data(Data::Values(filled(v.clone(), n)?.into())),
    })
}

fn filled<T: Clone>(x: T, n: usize) -> Result<Vec<T>, Fail> {
    let mut v = alloc(n)?;
    v.resize(n, x);
    Ok(v)
}

fn same_lengths(name: &str, seqs: &[&Seq]) -> Result<usize, Fail> {
    let n = seqs.first().map_or(0, |s| s.len());
    if let Some(other) = seqs.iter().find(|s| s.len() != n) {
        return fail(
            Code::LengthMismatch,
            format!("{name} needs sequences of equal length, got lengths {n} and {}", other.len()),
        );
    }
    Ok(n)
}

/// Every prelude operation that applies no function argument and does no IO.
fn pure_prim(prim: &Prim, args: &[NestedValue], ret: &Type) -> Result<NestedValue, Fail> {
    let unary_float = |f32_fn: fn(f32) -> f32, f64_fn: fn(f64) -> f64| {
        ops::float_unary(value_arg(args, 0)?, f32_fn, f64_fn)
    };
    Ok(match prim {
        Prim::Len => NestedValue::I32(seq_arg(args, 0)?.len() as i32),
        Prim::Range => range(args)?,
        Prim::Indices => range(&[NestedValue::I32(seq_arg(args, 0)?.len() as i32)])?,
        Prim::Zip => {
            let seqs = (0..args.len()).map(|i| seq_arg(args, i)).collect::<Result<Vec<_>, _>>()?;
            let n = same_lengths("zip", &seqs)?;
            let tuples: Arc<[NestedValue]> =
                (0..n).map(|i| NestedValue::tuple(seqs.iter().map(|s| s.get(i)).collect())).collect();
            NestedValue::Seq(Seq::from_data(Data::Values(tuples)))
        }
        Prim::Unzip => {
            let Type::Tuple(items) = ret else { return ill_typed("unzip to a non-tuple") };
            let ps = seq_arg(args, 0)?;
            let mut builders: Vec<SeqBuilder> =
                items.iter().map(|_| SeqBuilder::with_capacity(ps.len())).collect();
            for p in ps.iter() {
                let NestedValue::Tuple(parts) = p else { return ill_typed("unzip of non-tuples") };
                if parts.len() != builders.len() {
                    return ill_typed("unzip of tuples of the wrong width");
                }
                for (b, part) in builders.iter_mut().zip(parts.iter()) {
                    b.push(part.clone());
                }
            }
            NestedValue::tuple(builders.into_iter().map(|b| NestedValue::Seq(b.finish())).collect())
        }
        Prim::Concat => {
            let (xs, ys) = (seq_arg(args, 0)?, seq_arg(args, 1)?);
            let n = check_len("concat", xs.len() as u128 + ys.len() as u128)?;
            let mut b = SeqBuilder::with_capacity(n);
            b.extend_from(xs);
            b.extend_from(ys);
            NestedValue::Seq(b.finish())
        }
        Prim::Flatten => {
            let xss = seq_arg(args, 0)?;
            let mut total = 0u128;
            for xs in xss.iter() {
                let NestedValue::Seq(xs) = xs else { return ill_typed("flatten of non-sequences") };
                total += xs.len() as u128;
            }
            let mut b = SeqBuilder::with_capacity(check_len("flatten", total)?);
            for xs in xss.iter() {
                if let NestedValue::Seq(xs) = xs {
                    b.extend_from(&xs);
                }
            }
            NestedValue::Seq(b.finish())
        }
        Prim::Reverse => {
            let xs = seq_arg(args, 0)?;
            let positions: Vec<usize> = (0..xs.len()).rev().collect();
            NestedValue::Seq(pick(xs, &positions))
        }
        Prim::Replicate => {
            let n = count_arg(args, 1, "replicate")?;
            NestedValue::Seq(replicate(value_arg(args, 0)?, n)?)
        }
        Prim::Gather => {
            let (xs, idx) = (seq_arg(args, 0)?, seq_arg(args, 1)?);
            let mut positions = alloc(idx.len())?;
            for i in ints(idx)? {
                match resolve_index(i, xs.len()) {
                    Some(p) => positions.push(p),
                    None => {
                        return fail(
                            Code::IndexOutOfRange,
                            format!("gather index {i} is out of range for a sequence of length {}", xs.len()),
                        );
                    }
                }
            }
            NestedValue::Seq(pick(xs, &positions))
        }
        Prim::Scatter => {
            let (src, idx, dst) = (seq_arg(args, 0)?, seq_arg(args, 1)?, seq_arg(args, 2)?);
            if src.len() != idx.len() {
                return fail(
                    Code::LengthMismatch,
                    format!("scatter has {} values but {} indexes", src.len(), idx.len()),
                );
            }
            let mut out: Vec<NestedValue> = dst.iter().collect();
            for (k, i) in ints(idx)?.into_iter().enumerate() {
                match resolve_index(i, dst.len()) {
                    Some(p) => out[p] = src.get(k),
                    None => {
                        return fail(
                            Code::IndexOutOfRange,
                            format!(
                                "scatter index {i} is out of range for a sequence of length {}",
                                dst.len()
                            ),
                        );
                    }
                }
            }
            NestedValue::Seq(Seq::from_values(out))
        }
        Prim::Permute => {
            let (xs, idx) = (seq_arg(args, 0)?, seq_arg(args, 1)?);
            let n = xs.len();
            if idx.len() != n {
                return fail(
                    Code::LengthMismatch,
                    format!("permute of {n} elements got {} indexes", idx.len()),
                );
            }
            let mut inverse = vec![usize::MAX; n];
            for (k, i) in ints(idx)?.into_iter().enumerate() {
                if !(0..n as i64).contains(&i) {
                    return fail(
                        Code::NotAPermutation,
                        format!(
                            "permute index {i} is out of range for {n} elements, so the indexes are not a permutation"
                        ),
                    );
                }
                if inverse[i as usize] != usize::MAX {
                    return fail(
                        Code::NotAPermutation,
                        format!(
                            "permute index {i} appears more than once, so the indexes are not a permutation"
                        ),
                    );
                }
                inverse[i as usize] = k;
            }
            NestedValue::Seq(pick(xs, &inverse))
        }
        Prim::Sort => NestedValue::Seq(sort(seq_arg(args, 0)?)),
        Prim::Count => NestedValue::I32(flags(seq_arg(args, 0)?)?.into_iter().filter(|b| *b).count() as i32),
        Prim::Lengths => {
            let xss = seq_arg(args, 0)?;
            let lens: Result<Vec<i32>, Fail> = xss
                .iter()
                .map(|xs| {
                    xs.as_seq().map_or_else(|| ill_typed("lengths of non-sequences"), |s| Ok(s.len() as i32))
                })
                .collect();
            NestedValue::Seq(Seq::i32s(lens?))
        }
        Prim::Partition => {
            let (xs, lens) = (seq_arg(args, 0)?, ints(seq_arg(args, 1)?)?);
            if let Some(n) = lens.iter().find(|n| **n < 0) {
                return fail(Code::LengthMismatch, format!("partition length {n} is negative"));
            }
            let total: i64 = lens.iter().sum();
            if total != xs.len() as i64 {
                return fail(
                    Code::LengthMismatch,
                    format!("partition lengths sum to {total}, but the sequence has {} elements", xs.len()),
                );
            }
            let mut start = 0;
            let segments: Arc<[NestedValue]> = lens
                .iter()
                .map(|&n| {
                    let segment = xs.window(start, n as usize);
                    start += n as usize;
                    NestedValue::Seq(segment)
                })
                .collect();
            NestedValue::Seq(Seq::from_data(Data::Values(segments)))
        }
        Prim::Sum | Prim::Product => sum_or_product(prim, seq_arg(args, 0)?, ret)?,
        Prim::Min | Prim::Max => {
            let xs = seq_arg(args, 0)?;
            xs.get(extreme(prim.name(), xs, matches!(prim, Prim::Max))?)
        }
        Prim::ArgMin | Prim::ArgMax => {
            NestedValue::I32(extreme(prim.name(), seq_arg(args, 0)?, matches!(prim, Prim::ArgMax))? as i32)
        }
        Prim::Min2 | Prim::Max2 => {
            let (a, b) = (value_arg(args, 0)?, value_arg(args, 1)?);
            let o = total_cmp(b, a);
            let take_b = if matches!(prim, Prim::Max2) { o.is_gt() } else { o.is_lt() };
            if take_b { b.clone() } else { a.clone() }
        }
        Prim::Any => NestedValue::Bool(flags(seq_arg(args, 0)?)?.contains(&true)),
        Prim::All => NestedValue::Bool(!flags(seq_arg(args, 0)?)?.contains(&false)),
        Prim::Abs => ops::abs(value_arg(args, 0)?)?,
        Prim::Sqrt => unary_float(f32::sqrt, f64::sqrt)?,
        Prim::Exp => unary_float(f32::exp, f64::exp)?,
        Prim::Log => unary_float(f32::ln, f64::ln)?,
        Prim::Sin => unary_float(f32::sin, f64::sin)?,
        Prim::Cos => unary_float(f32::cos, f64::cos)?,
        Prim::Tan => unary_float(f32::tan, f64::tan)?,
        Prim::Erf => unary_float(ops::erf_f32, ops::erf)?,
        Prim::Floor => unary_float(f32::floor, f64::floor)?,
        Prim::Ceil => unary_float(f32::ceil, f64::ceil)?,
        Prim::Atan2 => match (value_arg(args, 0)?, value_arg(args, 1)?) {
            (NestedValue::F32(y), NestedValue::F32(x)) => NestedValue::F32(y.atan2(*x)),
            (NestedValue::F64(y), NestedValue::F64(x)) => NestedValue::F64(y.atan2(*x)),
            _ => return ill_typed("atan2 of non-floats"),
        },
        Prim::Pow => ops::binary(BinaryOp::Pow, value_arg(args, 0)?, value_arg(args, 1)?)?,
        Prim::Cast(s) => ops::cast(value_arg(args, 0)?, *s)?,
        Prim::RandomF32 => {
            let n = count_arg(args, 0, "random_f32")?;
            alloc::<f32>(n)?;
            NestedValue::Seq(Seq::f32s(data::random_f32(n, int_arg(args, 1)? as i32)))
        }
        Prim::RandomI32 => {
            let n = count_arg(args, 0, "random_i32")?;
            let (lo, hi) = (int_arg(args, 1)?, int_arg(args, 2)?);
            if lo >= hi {
                return fail(
                    Code::InvalidArgument,
                    format!("random_i32 needs lo < hi, got lo = {lo} and hi = {hi}"),
                );
            }
            alloc::<i32>(n)?;
            NestedValue::Seq(Seq::i32s(data::random_i32(n, lo as i32, hi as i32, int_arg(args, 3)? as i32)))
        }
        Prim::Map
        | Prim::Filter
        | Prim::Reduce
        | Prim::Scan
        | Prim::ExclusiveScan
        | Prim::LoadNpy(_)
        | Prim::LoadCsv(_) => return ill_typed("a prelude operation in the wrong evaluator"),
    })
}

impl<'p> Interp<'p, '_> {
    /// Evaluates prelude operation `prim` (expression `id`) on evaluated arguments, with its
    /// function arguments as `(function, captured values)`.
    pub(super) fn prim(
        &mut self,
        f: Frame<'p>,
        id: ExprId,
        prim: &Prim,
        args: Vec<NestedValue>,
        callees: &[(FuncId, Vec<NestedValue>)],
    ) -> EvalResult<NestedValue> {
        let span = f.func.span(id);
        let ret = f.func.ty(id);
        let err = |e: Fail| at(e, span);
        let callee = |k: usize| {
            callees.get(k).ok_or_else(|| err(ill_typed::<()>("a missing function argument").unwrap_err()))
        };
        match prim {
            Prim::Map => {
                let op = callee(0)?;
                let seqs =
                    (0..args.len()).map(|i| seq_arg(&args, i)).collect::<Result<Vec<_>, _>>().map_err(err)?;
                let n = same_lengths("map", &seqs).map_err(err)?;
                let mut out = SeqBuilder::with_capacity(n);
                for i in 0..n {
                    out.push(self.apply(op, seqs.iter().map(|s| s.get(i)), span)?);
                }
                Ok(NestedValue::Seq(out.finish()))
            }
            Prim::Filter => {
                let op = callee(0)?;
                let xs = seq_arg(&args, 0).map_err(err)?;
                let mut keep = Vec::new();
                for i in 0..xs.len() {
                    match self.apply(op, [xs.get(i)], span)? {
                        NestedValue::Bool(true) => keep.push(i),
                        NestedValue::Bool(false) => {}
                        _ => {
                            return Err(err(
                                ill_typed::<()>("a filter predicate that gives a non-bool").unwrap_err()
                            ));
                        }
                    }
                }
                Ok(NestedValue::Seq(pick(xs, &keep)))
            }
            Prim::Reduce => {
                let op = callee(0)?;
                let xs = seq_arg(&args, 0).map_err(err)?;
                let mut acc = value_arg(&args, 1).map_err(err)?.clone();
                for x in xs.iter() {
                    acc = self.apply(op, [acc, x], span)?;
                }
                Ok(acc)
            }
            Prim::Scan => {
                let op = callee(0)?;
                let xs = seq_arg(&args, 0).map_err(err)?;
                let mut out = SeqBuilder::with_capacity(xs.len());
                if !xs.is_empty() {
                    let mut acc = xs.get(0);
                    for i in 1..xs.len() {
                        let next = self.apply(op, [acc.clone(), xs.get(i)], span)?;
                        out.push(std::mem::replace(&mut acc, next));
                    }
                    out.push(acc);
                }
                Ok(NestedValue::Seq(out.finish()))
            }
            Prim::ExclusiveScan => {
                let op = callee(0)?;
                let mut acc = value_arg(&args, 0).map_err(err)?.clone();
                let xs = seq_arg(&args, 1).map_err(err)?;
                let mut out = SeqBuilder::with_capacity(xs.len());
                for i in 0..xs.len() {
                    if i + 1 < xs.len() {
                        let next = self.apply(op, [acc.clone(), xs.get(i)], span)?;
                        out.push(std::mem::replace(&mut acc, next));
                    } else {
                        out.push(acc.clone());
                    }
                }
                Ok(NestedValue::Seq(out.finish()))
            }
            Prim::LoadNpy(path) | Prim::LoadCsv(path) => {
                let bytes = self.host.read_file(path).map_err(|e| {
                    err(Fail { code: Code::DataLoadError, message: format!("cannot read `{path}`: {e}") })
                })?;
                match prim {
                    Prim::LoadNpy(_) => data::parse_npy(path, &bytes, ret),
                    _ => data::parse_csv(path, &bytes, ret),
                }
                .map_err(err)
            }
            _ => pure_prim(prim, &args, ret).map_err(err),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interp::print::format_value;
    use weft_core::types::Scalar;

    fn i32s(v: &[i32]) -> NestedValue {
        NestedValue::Seq(Seq::i32s(v.to_vec()))
    }

    fn f32s(v: &[f32]) -> NestedValue {
        NestedValue::Seq(Seq::f32s(v.to_vec()))
    }

    fn run(prim: Prim, args: Vec<NestedValue>, ret: Type) -> Result<String, (Code, String)> {
        pure_prim(&prim, &args, &ret).map(|v| format_value(&v)).map_err(|e| (e.code, e.message))
    }

    fn ok(prim: Prim, args: Vec<NestedValue>, ret: Type) -> String {
        run(prim, args, ret).expect("no failure")
    }

    fn code(prim: Prim, args: Vec<NestedValue>, ret: Type) -> Code {
        run(prim, args, ret).expect_err("a failure").0
    }

    #[test]
    fn sequence_operations() {
        let ti = || Type::seq(Type::I32);
        assert_eq!(
            ok(Prim::Range, vec![NestedValue::I32(2), NestedValue::I32(-7), NestedValue::I32(-3)], ti()),
            "[2, -1, -4]"
        );
        assert_eq!(ok(Prim::Range, vec![NestedValue::I32(-3)], ti()), "[]");
        assert_eq!(
            code(Prim::Range, vec![NestedValue::I32(0), NestedValue::I32(5), NestedValue::I32(0)], ti()),
            Code::InvalidArgument
        );
        let pairs = Type::seq(Type::Tuple(vec![Type::I32, Type::F32]));
        let zipped = ok(Prim::Zip, vec![i32s(&[1, 2]), f32s(&[0.5, 1.5])], pairs.clone());
        assert_eq!(zipped, "[(1, 0.5), (2, 1.5)]");
        assert_eq!(code(Prim::Zip, vec![i32s(&[1, 2]), f32s(&[0.5])], pairs), Code::LengthMismatch);
        let unzip_ty = Type::Tuple(vec![ti(), Type::seq(Type::F32)]);
        assert_eq!(ok(Prim::Unzip, vec![NestedValue::Seq(Seq::empty())], unzip_ty), "([], [])");
        assert_eq!(ok(Prim::Concat, vec![i32s(&[1]), i32s(&[2, 3])], ti()), "[1, 2, 3]");
        let nested = NestedValue::Seq(Seq::from_values(vec![i32s(&[1, 2]), i32s(&[]), i32s(&[3])]));
        assert_eq!(ok(Prim::Flatten, vec![nested.clone()], ti()), "[1, 2, 3]");
        assert_eq!(ok(Prim::Lengths, vec![nested], ti()), "[2, 0, 1]");
        assert_eq!(ok(Prim::Reverse, vec![i32s(&[1, 2, 3])], ti()), "[3, 2, 1]");
        assert_eq!(
            ok(Prim::Replicate, vec![NestedValue::F32(1.0), NestedValue::I32(3)], ti()),
            "[1.0, 1.0, 1.0]"
        );
        assert_eq!(
            code(Prim::Replicate, vec![NestedValue::I32(1), NestedValue::I32(-1)], ti()),
            Code::InvalidArgument
        );
        assert_eq!(ok(Prim::Gather, vec![i32s(&[10, 20, 30]), i32s(&[2, -3, 2])], ti()), "[30, 10, 30]");
        assert_eq!(code(Prim::Gather, vec![i32s(&[10]), i32s(&[1])], ti()), Code::IndexOutOfRange);
        let scatter = vec![i32s(&[7, 8]), i32s(&[2, 0]), i32s(&[0, 0, 0])];
        assert_eq!(ok(Prim::Scatter, scatter, ti()), "[8, 0, 7]");
        assert_eq!(
            code(Prim::Scatter, vec![i32s(&[7]), i32s(&[2, 0]), i32s(&[0; 3])], ti()),
            Code::LengthMismatch
        );
        assert_eq!(
            code(Prim::Scatter, vec![i32s(&[7]), i32s(&[3]), i32s(&[0; 3])], ti()),
            Code::IndexOutOfRange
        );
        assert_eq!(ok(Prim::Permute, vec![i32s(&[10, 20, 30]), i32s(&[2, 0, 1])], ti()), "[20, 30, 10]");
        assert_eq!(
            code(Prim::Permute, vec![i32s(&[10, 20, 30]), i32s(&[2, 0, 2])], ti()),
            Code::NotAPermutation
        );
        assert_eq!(code(Prim::Permute, vec![i32s(&[10, 20]), i32s(&[0, 2])], ti()), Code::NotAPermutation);
        assert_eq!(code(Prim::Permute, vec![i32s(&[10, 20]), i32s(&[0])], ti()), Code::LengthMismatch);
        let parts = ok(Prim::Partition, vec![i32s(&[1, 2, 3, 4]), i32s(&[1, 0, 3])], Type::seq(ti()));
        assert_eq!(parts, "[[1], [], [2, 3, 4]]");
        assert_eq!(code(Prim::Partition, vec![i32s(&[1, 2]), i32s(&[3])], ti()), Code::LengthMismatch);
        assert_eq!(code(Prim::Partition, vec![i32s(&[1, 2]), i32s(&[3, -1])], ti()), Code::LengthMismatch);
        let flags = NestedValue::Seq(Seq::bools(vec![true, false, true]));
        assert_eq!(ok(Prim::Count, vec![flags.clone()], Type::I32), "2");
        assert_eq!(ok(Prim::Any, vec![flags.clone()], Type::BOOL), "True");
        assert_eq!(ok(Prim::All, vec![flags], Type::BOOL), "False");
        assert_eq!(ok(Prim::All, vec![NestedValue::Seq(Seq::empty())], Type::BOOL), "True");
    }

    #[test]
    fn sort_min_max_use_one_total_order() {
        let nan = f32::NAN;
        let xs = f32s(&[3.0, nan, -0.0, 0.0, -1.0]);
        assert_eq!(ok(Prim::Sort, vec![xs.clone()], Type::seq(Type::F32)), "[-1.0, -0.0, 0.0, 3.0, nan]");
        assert_eq!(ok(Prim::Min, vec![xs.clone()], Type::F32), "-1.0");
        assert_eq!(ok(Prim::Max, vec![xs.clone()], Type::F32), "nan");
        assert_eq!(ok(Prim::ArgMax, vec![f32s(&[1.0, 5.0, 5.0])], Type::I32), "1");
        assert_eq!(ok(Prim::ArgMin, vec![xs], Type::I32), "4");
        assert_eq!(code(Prim::Min, vec![NestedValue::Seq(Seq::empty())], Type::I32), Code::EmptySequence);
        assert_eq!(code(Prim::ArgMax, vec![NestedValue::Seq(Seq::empty())], Type::I32), Code::EmptySequence);
        assert_eq!(ok(Prim::Min2, vec![NestedValue::F32(0.0), NestedValue::F32(-0.0)], Type::F32), "0.0");
        assert_eq!(ok(Prim::Max2, vec![NestedValue::I32(2), NestedValue::I32(5)], Type::I32), "5");
        let t = |a: i32, b: f32| NestedValue::tuple(vec![NestedValue::I32(a), NestedValue::F32(b)]);
        let ts = NestedValue::Seq(Seq::from_values(vec![t(2, 1.0), t(1, 9.0), t(2, 0.5), t(1, 9.0)]));
        let ty = Type::seq(Type::Tuple(vec![Type::I32, Type::F32]));
        assert_eq!(ok(Prim::Sort, vec![ts], ty), "[(1, 9.0), (1, 9.0), (2, 0.5), (2, 1.0)]");
    }

    #[test]
    fn reductions_and_scalars() {
        assert_eq!(ok(Prim::Sum, vec![NestedValue::Seq(Seq::empty())], Type::F32), "0.0");
        assert_eq!(ok(Prim::Product, vec![NestedValue::Seq(Seq::empty())], Type::I32), "1");
        assert_eq!(ok(Prim::Sum, vec![i32s(&[i32::MAX, 1])], Type::I32), "-2147483648");
        assert_eq!(ok(Prim::Sum, vec![f32s(&[0.1, 0.2])], Type::F32), "0.3");
        assert_eq!(ok(Prim::Floor, vec![NestedValue::F32(-2.5)], Type::F32), "-3.0");
        assert_eq!(ok(Prim::Sqrt, vec![NestedValue::F64(-1.0)], Type::F32), "nan");
        assert_eq!(ok(Prim::Log, vec![NestedValue::F32(0.0)], Type::F32), "-inf");
        assert_eq!(ok(Prim::Pow, vec![NestedValue::I32(3), NestedValue::I32(4)], Type::I32), "81");
        assert_eq!(
            code(Prim::Pow, vec![NestedValue::I32(3), NestedValue::I32(-1)], Type::I32),
            Code::InvalidArgument
        );
        assert_eq!(ok(Prim::Cast(Scalar::I32), vec![NestedValue::F32(-3.9)], Type::I32), "-3");
        assert_eq!(ok(Prim::Cast(Scalar::Bool), vec![NestedValue::I32(2)], Type::BOOL), "True");
        assert_eq!(ok(Prim::Abs, vec![NestedValue::I32(-4)], Type::I32), "4");
        assert_eq!(
            ok(Prim::Atan2, vec![NestedValue::F64(1.0), NestedValue::F64(1.0)], Type::I32),
            "0.7853981633974483"
        );
    }
}
