//! The ops of the segmented IR on run-time values: each op is one flat, typed loop over all
//! its elements (or segments), run with rayon above `PAR_THRESHOLD` elements.
//!
//! A failure is an `interp::ops::Fail` (code and message, the interpreter's); the statement
//! interpreter gives it the statement's span. Malformed operands (kinds, types or lengths a
//! checked IR program cannot have) are internal errors, never panics.

use std::cmp::Ordering;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};

use rayon::prelude::*;

use crate::interp;
use crate::interp::ops::{Fail, fail};
use weft_core::types::Scalar;
use weft_core::{BinaryOp, Literal, UnaryOp};
use weft_flat::ir::{Check, LengthCheck, MathFn, Op, ReduceOp};
use weft_syntax::diagnostics::Code;

use super::value::{Buffer, Elem, FlatValue, ScalarValue, each_buffer, each_scalar_type};

/// Vectors shorter than this are processed sequentially.
pub const PAR_THRESHOLD: usize = 16_384;
/// The piece of a vector one rayon task takes in chunked reductions and scans.
const CHUNK: usize = 8_192;

pub type KResult<T> = Result<T, Fail>;

#[cold]
pub fn internal<T>(what: impl std::fmt::Display) -> KResult<T> {
    fail(Code::InternalError, format!("internal error: malformed IR at run time ({what})"))
}

// ---------------------------------------------------------------------------------------------
// Operands

/// An element-wise operand: a scalar broadcast to every element, or a vector.
#[derive(Debug, Clone, Copy)]
pub enum Arg<'a, T> {
    S(T),
    V(&'a [T]),
}

impl<T: Elem> Arg<'_, T> {
    #[inline]
    fn get(&self, i: usize) -> T {
        match self {
            Arg::S(x) => *x,
            Arg::V(xs) => xs[i],
        }
    }
}

pub fn arg<T: Elem>(v: &impl Operand) -> KResult<Arg<'_, T>> {
    v.arg()
}

/// An operand of an element-wise kernel (`element_wise`): a value, or a window of one.
pub trait Operand {
    fn ty(&self) -> Scalar;
    fn vector_len(&self) -> Option<usize>;
    fn arg<T: Elem>(&self) -> KResult<Arg<'_, T>>;
}

impl Operand for FlatValue {
    fn ty(&self) -> Scalar {
        FlatValue::ty(self)
    }

    fn vector_len(&self) -> Option<usize> {
        FlatValue::vector_len(self)
    }

    fn arg<T: Elem>(&self) -> KResult<Arg<'_, T>> {
        match self {
            FlatValue::Scalar(s) => match T::from_scalar(*s) {
                Some(x) => Ok(Arg::S(x)),
                None => internal(format!("a {} scalar where {} is expected", s.ty().name(), T::TY.name())),
            },
            FlatValue::Vector(b) => match T::slice(b) {
                Some(xs) => Ok(Arg::V(xs)),
                None => internal(format!("a {} vector where {} is expected", b.ty().name(), T::TY.name())),
            },
            FlatValue::Progression(_) => unwritten(),
        }
    }
}

/// Elements `range` of a vector, read in place, or a whole value (`range` is `None`): a fused
/// kernel's chunk of one of its inputs (`cpu::fused`), which is then never copied.
#[derive(Debug, Clone)]
pub struct Window<'a> {
    pub value: &'a FlatValue,
    pub range: Option<Range<usize>>,
}

impl Operand for Window<'_> {
    fn ty(&self) -> Scalar {
        self.value.ty()
    }

    fn vector_len(&self) -> Option<usize> {
        match &self.range {
            Some(range) => Some(range.len()),
            None => self.value.vector_len(),
        }
    }

    fn arg<T: Elem>(&self) -> KResult<Arg<'_, T>> {
        match (self.value.arg()?, &self.range) {
            (Arg::V(xs), Some(range)) => match xs.get(range.clone()) {
                Some(window) => Ok(Arg::V(window)),
                None => internal(format!("elements {range:?} of a vector of {}", xs.len())),
            },
            (Arg::S(_), Some(_)) => internal("a window of a scalar"),
            (whole, None) => Ok(whole),
        }
    }
}

/// Vector kernels never see a progression: the executor writes it out first.
#[cold]
fn unwritten<T>() -> KResult<T> {
    internal("a progression that was not written out")
}

fn vector<T: Elem>(v: &FlatValue) -> KResult<&[T]> {
    match arg::<T>(v)? {
        Arg::V(xs) => Ok(xs),
        Arg::S(_) => internal("a scalar where a vector is expected"),
    }
}

fn buffer(v: &FlatValue) -> KResult<&Buffer> {
    match v {
        FlatValue::Vector(b) => Ok(b),
        FlatValue::Scalar(_) => internal("a scalar where a vector is expected"),
        FlatValue::Progression(_) => unwritten(),
    }
}

fn scalar(v: &FlatValue) -> KResult<ScalarValue> {
    match v {
        FlatValue::Scalar(s) => Ok(*s),
        FlatValue::Vector(_) | FlatValue::Progression(_) => internal("a vector where a scalar is expected"),
    }
}

fn scalar_int(v: &FlatValue) -> KResult<i64> {
    match scalar(v)?.as_int() {
        Some(i) => Ok(i),
        None => internal("a non-integer where an integer scalar is expected"),
    }
}

/// A non-negative scalar count or length.
fn scalar_len(v: &FlatValue, what: &str) -> KResult<usize> {
    let n = scalar_int(v)?;
    match usize::try_from(n) {
        Ok(n) => Ok(n),
        Err(_) => internal(format!("{what} {n} is negative")),
    }
}

/// An integer operand of either width, scalar or vector.
#[derive(Debug, Clone, Copy)]
enum IntArg<'a> {
    S(i64),
    V32(&'a [i32]),
    V64(&'a [i64]),
}

impl IntArg<'_> {
    #[inline]
    fn get(&self, i: usize) -> i64 {
        match self {
            IntArg::S(x) => *x,
            IntArg::V32(xs) => i64::from(xs[i]),
            IntArg::V64(xs) => xs[i],
        }
    }
}

fn int_arg(v: &FlatValue) -> KResult<IntArg<'_>> {
    match v {
        FlatValue::Scalar(s) => match s.as_int() {
            Some(i) => Ok(IntArg::S(i)),
            None => internal("a non-integer where an integer is expected"),
        },
        FlatValue::Vector(b) => match &**b {
            Buffer::I32(xs) => Ok(IntArg::V32(xs)),
            Buffer::I64(xs) => Ok(IntArg::V64(xs)),
            _ => internal("a non-integer vector where integers are expected"),
        },
        FlatValue::Progression(_) => unwritten(),
    }
}

/// The common length of the vector operands (`None` when all are scalars).
pub fn common_len<V: Operand>(vals: &[&V]) -> KResult<Option<usize>> {
    let mut n = None;
    for v in vals {
        if let Some(m) = v.vector_len() {
            match n {
                None => n = Some(m),
                Some(k) if k == m => {}
                Some(k) => return internal(format!("element-wise operands of lengths {k} and {m}")),
            }
        }
    }
    Ok(n)
}

fn out<R: Elem>(shape: Option<usize>, v: Vec<R>) -> KResult<FlatValue> {
    match shape {
        Some(_) => Ok(FlatValue::vector(R::wrap(v))),
        None => match v.first() {
            Some(x) => Ok(FlatValue::Scalar(x.scalar())),
            None => internal("a scalar op gave no value"),
        },
    }
}

// ---------------------------------------------------------------------------------------------
// Element-wise maps

pub(super) fn par_map_idx<R: Send>(n: usize, f: impl Fn(usize) -> R + Sync + Send) -> Vec<R> {
    if n >= PAR_THRESHOLD { (0..n).into_par_iter().map(f).collect() } else { (0..n).map(f).collect() }
}

fn map1<A: Elem, R: Send>(n: usize, a: Arg<A>, f: impl Fn(A) -> R + Sync + Send) -> Vec<R> {
    match a {
        Arg::V(xs) if xs.len() >= PAR_THRESHOLD => xs.par_iter().map(|&x| f(x)).collect(),
        Arg::V(xs) => xs.iter().map(|&x| f(x)).collect(),
        Arg::S(x) => par_map_idx(n, |_| f(x)),
    }
}

fn map2<A: Elem, B: Elem, R: Send>(
    n: usize,
    a: Arg<A>,
    b: Arg<B>,
    f: impl Fn(A, B) -> R + Sync + Send,
) -> Vec<R> {
    let big = n >= PAR_THRESHOLD;
    match (a, b) {
        (Arg::V(xs), Arg::V(ys)) if big => xs.par_iter().zip(ys).map(|(&x, &y)| f(x, y)).collect(),
        (Arg::V(xs), Arg::V(ys)) => xs.iter().zip(ys).map(|(&x, &y)| f(x, y)).collect(),
        (Arg::V(xs), Arg::S(y)) if big => xs.par_iter().map(|&x| f(x, y)).collect(),
        (Arg::V(xs), Arg::S(y)) => xs.iter().map(|&x| f(x, y)).collect(),
        (Arg::S(x), Arg::V(ys)) if big => ys.par_iter().map(|&y| f(x, y)).collect(),
        (Arg::S(x), Arg::V(ys)) => ys.iter().map(|&y| f(x, y)).collect(),
        (Arg::S(x), Arg::S(y)) => par_map_idx(n, |_| f(x, y)),
    }
}

/// `map2` for a fallible function: the error is the one of the first failing element.
fn try_map2<A: Elem, B: Elem, R: Elem>(
    n: usize,
    a: Arg<A>,
    b: Arg<B>,
    f: impl Fn(A, B) -> KResult<R> + Sync + Send,
) -> KResult<Vec<R>> {
    let failed = Failed::default();
    let all = map2(n, a, b, |x, y| failed.or_zero(f(x, y).ok()));
    failed.check(n, |i| f(a.get(i), b.get(i)).err())?;
    Ok(all)
}

/// Whether an element of a kernel failed. The kernel writes a zero in its place and carries on,
/// in one tight loop into a vector of the exact size; only once an element has failed does it
/// look for the first error. (Collecting `KResult`s instead grows the vector by doubling and
/// tests every element twice: that made gathers the better part of a quicksort's time.)
#[derive(Default)]
struct Failed(AtomicBool);

impl Failed {
    #[inline]
    fn or_zero<T: Elem>(&self, value: Option<T>) -> T {
        value.unwrap_or_else(|| {
            self.0.store(true, AtomicOrdering::Relaxed);
            T::zero()
        })
    }

    /// `Ok` if no element failed; else the error of the first of `0..n` that fails, in order,
    /// as the interpreter reports it.
    #[inline]
    fn check(&self, n: usize, error: impl Fn(usize) -> Option<Fail>) -> KResult<()> {
        if self.0.load(AtomicOrdering::Relaxed) { Err(first_error(n, error)) } else { Ok(()) }
    }
}

#[cold]
fn first_error(n: usize, error: impl Fn(usize) -> Option<Fail>) -> Fail {
    (0..n)
        .find_map(error)
        .unwrap_or_else(|| internal::<()>("a kernel's element failed, and then did not").unwrap_err())
}

// ---------------------------------------------------------------------------------------------
// Unary, binary, select, cast, math

pub fn unary<V: Operand>(op: UnaryOp, a: &V) -> KResult<FlatValue> {
    let shape = common_len(&[a])?;
    let n = shape.unwrap_or(1);
    match (op, a.ty()) {
        (UnaryOp::Neg, Scalar::I32) => out(shape, map1(n, arg::<i32>(a)?, i32::wrapping_neg)),
        (UnaryOp::Neg, Scalar::I64) => out(shape, map1(n, arg::<i64>(a)?, i64::wrapping_neg)),
        (UnaryOp::Neg, Scalar::F32) => out(shape, map1(n, arg::<f32>(a)?, |x| -x)),
        (UnaryOp::Neg, Scalar::F64) => out(shape, map1(n, arg::<f64>(a)?, |x| -x)),
        (UnaryOp::Not, Scalar::Bool) => out(shape, map1(n, arg::<bool>(a)?, |x| !x)),
        (UnaryOp::Invert, Scalar::I32) => out(shape, map1(n, arg::<i32>(a)?, |x| !x)),
        (UnaryOp::Invert, Scalar::I64) => out(shape, map1(n, arg::<i64>(a)?, |x| !x)),
        (op, t) => internal(format!("{op:?} of {}", t.name())),
    }
}

macro_rules! int_binary {
    ($name:ident, $t:ty, $f:ty, $bits:expr) => {
        fn $name(op: BinaryOp, shape: Option<usize>, n: usize, a: Arg<$t>, b: Arg<$t>) -> KResult<FlatValue> {
            use BinaryOp::*;
            match op {
                Add => out(shape, map2(n, a, b, |x: $t, y: $t| x.wrapping_add(y))),
                Sub => out(shape, map2(n, a, b, |x: $t, y: $t| x.wrapping_sub(y))),
                Mul => out(shape, map2(n, a, b, |x: $t, y: $t| x.wrapping_mul(y))),
                Div => out(
                    shape,
                    try_map2(n, a, b, |x: $t, y: $t| {
                        if y == 0 {
                            return fail(Code::DivisionByZero, format!("division by zero: {x} / 0"));
                        }
                        Ok(x as $f / y as $f)
                    })?,
                ),
                FloorDiv => out(
                    shape,
                    try_map2(n, a, b, |x: $t, y: $t| {
                        if y == 0 {
                            return fail(Code::DivisionByZero, format!("division by zero: {x} // 0"));
                        }
                        let q = x.wrapping_div(y);
                        let r = x.wrapping_rem(y);
                        Ok(if r != 0 && ((r < 0) != (y < 0)) { q.wrapping_sub(1) } else { q })
                    })?,
                ),
                Mod => out(
                    shape,
                    try_map2(n, a, b, |x: $t, y: $t| {
                        if y == 0 {
                            return fail(Code::DivisionByZero, format!("modulo by zero: {x} % 0"));
                        }
                        let r = x.wrapping_rem(y);
                        Ok(if r != 0 && ((r < 0) != (y < 0)) { r.wrapping_add(y) } else { r })
                    })?,
                ),
                Pow => out(shape, try_map2(n, a, b, |x: $t, y: $t| interp::ops::int_pow(x, y))?),
                BitAnd => out(shape, map2(n, a, b, |x: $t, y: $t| x & y)),
                BitOr => out(shape, map2(n, a, b, |x: $t, y: $t| x | y)),
                BitXor => out(shape, map2(n, a, b, |x: $t, y: $t| x ^ y)),
                Shl | Shr => {
                    let left = op == Shl;
                    out(
                        shape,
                        try_map2(n, a, b, |x: $t, y: $t| {
                            if y < 0 {
                                return fail(Code::InvalidArgument, format!("negative shift count {y}"));
                            }
                            let big = i64::from(y) >= $bits;
                            Ok(match (left, big) {
                                (true, true) => 0,
                                (true, false) => x.wrapping_shl(y as u32),
                                (false, true) => x >> ($bits - 1),
                                (false, false) => x >> y,
                            })
                        })?,
                    )
                }
                Eq => out(shape, map2(n, a, b, |x: $t, y: $t| x == y)),
                Ne => out(shape, map2(n, a, b, |x: $t, y: $t| x != y)),
                Lt => out(shape, map2(n, a, b, |x: $t, y: $t| x < y)),
                Le => out(shape, map2(n, a, b, |x: $t, y: $t| x <= y)),
                Gt => out(shape, map2(n, a, b, |x: $t, y: $t| x > y)),
                Ge => out(shape, map2(n, a, b, |x: $t, y: $t| x >= y)),
            }
        }
    };
}

int_binary!(binary_i32, i32, f32, 32);
int_binary!(binary_i64, i64, f64, 64);

macro_rules! float_binary {
    ($name:ident, $t:ty, $divmod:path, $pow:path) => {
        fn $name(op: BinaryOp, shape: Option<usize>, n: usize, a: Arg<$t>, b: Arg<$t>) -> KResult<FlatValue> {
            use BinaryOp::*;
            match op {
                Add => out(shape, map2(n, a, b, |x: $t, y: $t| x + y)),
                Sub => out(shape, map2(n, a, b, |x: $t, y: $t| x - y)),
                Mul => out(shape, map2(n, a, b, |x: $t, y: $t| x * y)),
                Div => out(shape, map2(n, a, b, |x: $t, y: $t| x / y)),
                FloorDiv => out(shape, map2(n, a, b, |x: $t, y: $t| $divmod(x, y).0)),
                Mod => out(shape, map2(n, a, b, |x: $t, y: $t| $divmod(x, y).1)),
                Pow => out(shape, map2(n, a, b, |x: $t, y: $t| $pow(x, y))),
                Eq => out(shape, map2(n, a, b, |x: $t, y: $t| x == y)),
                Ne => out(shape, map2(n, a, b, |x: $t, y: $t| x != y)),
                Lt => out(shape, map2(n, a, b, |x: $t, y: $t| x < y)),
                Le => out(shape, map2(n, a, b, |x: $t, y: $t| x <= y)),
                Gt => out(shape, map2(n, a, b, |x: $t, y: $t| x > y)),
                Ge => out(shape, map2(n, a, b, |x: $t, y: $t| x >= y)),
                BitAnd | BitOr | BitXor | Shl | Shr => internal("a bitwise operator on floats"),
            }
        }
    };
}

float_binary!(binary_f32, f32, interp::ops::divmod_f32, interp::ops::pow_f32);
float_binary!(binary_f64, f64, interp::ops::divmod_f64, interp::ops::pow_f64);

fn binary_bool(
    op: BinaryOp,
    shape: Option<usize>,
    n: usize,
    a: Arg<bool>,
    b: Arg<bool>,
) -> KResult<FlatValue> {
    use BinaryOp::*;
    match op {
        BitAnd => out(shape, map2(n, a, b, |x, y| x & y)),
        BitOr => out(shape, map2(n, a, b, |x, y| x | y)),
        BitXor => out(shape, map2(n, a, b, |x, y| x ^ y)),
        Eq => out(shape, map2(n, a, b, |x, y| x == y)),
        Ne => out(shape, map2(n, a, b, |x, y| x != y)),
        Lt => out(shape, map2(n, a, b, |x: bool, y: bool| !x & y)),
        Le => out(shape, map2(n, a, b, |x, y| x <= y)),
        Gt => out(shape, map2(n, a, b, |x: bool, y: bool| x & !y)),
        Ge => out(shape, map2(n, a, b, |x, y| x >= y)),
        _ => internal("arithmetic on bool"),
    }
}

pub fn binary<V: Operand>(op: BinaryOp, a: &V, b: &V) -> KResult<FlatValue> {
    let shape = common_len(&[a, b])?;
    let n = shape.unwrap_or(1);
    match (a.ty(), b.ty()) {
        (Scalar::I32, Scalar::I32) => binary_i32(op, shape, n, arg(a)?, arg(b)?),
        (Scalar::I64, Scalar::I64) => binary_i64(op, shape, n, arg(a)?, arg(b)?),
        (Scalar::F32, Scalar::F32) => binary_f32(op, shape, n, arg(a)?, arg(b)?),
        (Scalar::F64, Scalar::F64) => binary_f64(op, shape, n, arg(a)?, arg(b)?),
        (Scalar::Bool, Scalar::Bool) => binary_bool(op, shape, n, arg(a)?, arg(b)?),
        (x, y) => internal(format!("`{}` of {} and {}", op.symbol(), x.name(), y.name())),
    }
}

pub fn select<V: Operand>(c: &V, a: &V, b: &V) -> KResult<FlatValue> {
    let shape = common_len(&[c, a, b])?;
    let n = shape.unwrap_or(1);
    let cond = arg::<bool>(c)?;
    if a.ty() != b.ty() {
        return internal("select of two types");
    }
    each_scalar_type!(a.ty(), T, {
        match (cond, arg::<T>(a)?, arg::<T>(b)?) {
            // The common case, as one loop over three slices: a partition's merge.
            (Arg::V(cs), Arg::V(xs), Arg::V(ys)) if n < PAR_THRESHOLD => {
                out(shape, cs.iter().zip(xs).zip(ys).map(|((&c, &x), &y)| if c { x } else { y }).collect())
            }
            (_, x, y) => out(shape, par_map_idx(n, |i| if cond.get(i) { x.get(i) } else { y.get(i) })),
        }
    })
}

macro_rules! cast_number {
    ($a:expr, $S:ty, $zero:expr, $to:expr, $shape:expr, $n:expr) => {{
        let a = arg::<$S>($a)?;
        match $to {
            Scalar::Bool => out($shape, map1($n, a, |x: $S| x != $zero)),
            Scalar::I32 => out($shape, map1($n, a, |x: $S| x as i32)),
            Scalar::I64 => out($shape, map1($n, a, |x: $S| x as i64)),
            Scalar::F32 => out($shape, map1($n, a, |x: $S| x as f32)),
            Scalar::F64 => out($shape, map1($n, a, |x: $S| x as f64)),
        }
    }};
}

/// `ops::cast`: floats to integers truncate and saturate, integers wrap, `bool(x)` is `x != 0`.
pub fn cast<V: Operand>(to: Scalar, a: &V) -> KResult<FlatValue> {
    let shape = common_len(&[a])?;
    let n = shape.unwrap_or(1);
    match a.ty() {
        Scalar::Bool => {
            let a = arg::<bool>(a)?;
            match to {
                Scalar::Bool => out(shape, map1(n, a, |x| x)),
                Scalar::I32 => out(shape, map1(n, a, i32::from)),
                Scalar::I64 => out(shape, map1(n, a, i64::from)),
                Scalar::F32 => out(shape, map1(n, a, |x| f32::from(u8::from(x)))),
                Scalar::F64 => out(shape, map1(n, a, |x| f64::from(u8::from(x)))),
            }
        }
        Scalar::I32 => cast_number!(a, i32, 0, to, shape, n),
        Scalar::I64 => cast_number!(a, i64, 0, to, shape, n),
        Scalar::F32 => cast_number!(a, f32, 0.0, to, shape, n),
        Scalar::F64 => cast_number!(a, f64, 0.0, to, shape, n),
    }
}

fn float_fn<V: Operand>(f: MathFn, shape: Option<usize>, n: usize, a: &V) -> KResult<FlatValue> {
    macro_rules! apply {
        ($t:ty, $erf:path, $ln:path) => {{
            let a = arg::<$t>(a)?;
            match f {
                MathFn::Sqrt => out(shape, map1(n, a, <$t>::sqrt)),
                MathFn::Exp => out(shape, map1(n, a, <$t>::exp)),
                MathFn::Log => out(shape, map1(n, a, $ln)),
                MathFn::Sin => out(shape, map1(n, a, <$t>::sin)),
                MathFn::Cos => out(shape, map1(n, a, <$t>::cos)),
                MathFn::Tan => out(shape, map1(n, a, <$t>::tan)),
                MathFn::Erf => out(shape, map1(n, a, $erf)),
                MathFn::Floor => out(shape, map1(n, a, <$t>::floor)),
                MathFn::Ceil => out(shape, map1(n, a, <$t>::ceil)),
                _ => internal(format!("{} is not a float function", f.name())),
            }
        }};
    }
    match a.ty() {
        Scalar::F32 => apply!(f32, interp::ops::erf_f32, f32::ln),
        Scalar::F64 => apply!(f64, interp::ops::erf, f64::ln),
        // The checker lets an integer operand through (the result is its float type).
        Scalar::I32 => float_fn(f, shape, n, &cast(Scalar::F32, a)?),
        Scalar::I64 => float_fn(f, shape, n, &cast(Scalar::F64, a)?),
        Scalar::Bool => internal(format!("{} of bools", f.name())),
    }
}

pub fn math<V: Operand>(f: MathFn, args: &[V]) -> KResult<FlatValue> {
    if args.len() != f.arity() {
        return internal(format!("{} with {} operands", f.name(), args.len()));
    }
    let refs: Vec<&V> = args.iter().collect();
    let shape = common_len(&refs)?;
    let n = shape.unwrap_or(1);
    let a = &args[0];
    match f {
        MathFn::Abs => match a.ty() {
            Scalar::I32 => out(shape, map1(n, arg::<i32>(a)?, i32::wrapping_abs)),
            Scalar::I64 => out(shape, map1(n, arg::<i64>(a)?, i64::wrapping_abs)),
            Scalar::F32 => out(shape, map1(n, arg::<f32>(a)?, f32::abs)),
            Scalar::F64 => out(shape, map1(n, arg::<f64>(a)?, f64::abs)),
            Scalar::Bool => internal("abs of bools"),
        },
        MathFn::Atan2 => {
            let b = &args[1];
            match (a.ty(), b.ty()) {
                (Scalar::F32, Scalar::F32) => out(shape, map2(n, arg::<f32>(a)?, arg::<f32>(b)?, f32::atan2)),
                (Scalar::F64, Scalar::F64) => out(shape, map2(n, arg::<f64>(a)?, arg::<f64>(b)?, f64::atan2)),
                _ => internal("atan2 of non-floats"),
            }
        }
        MathFn::Pow => binary(BinaryOp::Pow, a, &args[1]),
        MathFn::Min | MathFn::Max => {
            let b = &args[1];
            if a.ty() != b.ty() {
                return internal("min/max of two types");
            }
            let max = f == MathFn::Max;
            each_scalar_type!(a.ty(), T, {
                let (x, y) = (arg::<T>(a)?, arg::<T>(b)?);
                out(
                    shape,
                    map2(n, x, y, |p: T, q: T| {
                        let o = T::order(q, p);
                        if (max && o.is_gt()) || (!max && o.is_lt()) { q } else { p }
                    }),
                )
            })
        }
        _ => float_fn(f, shape, n, a),
    }
}

// ---------------------------------------------------------------------------------------------
// Building vectors

pub fn replicate(value: &FlatValue, len: &FlatValue) -> KResult<FlatValue> {
    let n = scalar_int(len)?;
    if n < 0 {
        return fail(Code::InvalidArgument, format!("replicate count {n} is negative"));
    }
    let n = n as usize;
    let x = scalar(value)?;
    each_scalar_type!(x.ty(), T, {
        let Some(v) = T::from_scalar(x) else { return internal("replicate") };
        Ok(FlatValue::vector(T::wrap(par_map_idx(n, |_| v))))
    })
}

pub fn iota(len: &FlatValue) -> KResult<FlatValue> {
    let n = scalar_len(len, "iota length")?;
    Ok(FlatValue::i32s(par_map_idx(n, |i| i as i32)))
}

/// The start of each segment in the compact layout of `lengths`, and the total.
fn compact_starts(lengths: &[i32]) -> KResult<(Vec<usize>, usize)> {
    let mut starts = Vec::with_capacity(lengths.len());
    let mut total = 0usize;
    for &l in lengths {
        if l < 0 {
            return internal(format!("a negative segment length {l}"));
        }
        starts.push(total);
        total += l as usize;
    }
    Ok((starts, total))
}

/// Splits `out` into one slice per segment of the compact layout of `lengths`.
fn split_compact<'a, T>(mut out: &'a mut [T], lengths: &[i32]) -> Vec<&'a mut [T]> {
    let mut parts = Vec::with_capacity(lengths.len());
    for &l in lengths {
        let k = (l.max(0) as usize).min(out.len());
        let (head, tail) = std::mem::take(&mut out).split_at_mut(k);
        parts.push(head);
        out = tail;
    }
    parts
}

/// Runs `f(segment, out_slice)` for each segment of the compact layout of `lengths`, in
/// parallel over segments when there are many elements.
fn for_compact<T: Send>(
    out: &mut [T],
    lengths: &[i32],
    f: impl Fn(usize, &mut [T]) -> KResult<()> + Sync + Send,
) -> KResult<()> {
    let total = out.len();
    let parts = split_compact(out, lengths);
    if total >= PAR_THRESHOLD || lengths.len() >= PAR_THRESHOLD {
        parts.into_par_iter().enumerate().try_for_each(|(s, o)| f(s, o))
    } else {
        parts.into_iter().enumerate().try_for_each(|(s, o)| f(s, o))
    }
}

pub fn seg_iota(lengths: &FlatValue, ids: bool) -> KResult<FlatValue> {
    let lengths = vector::<i32>(lengths)?;
    let (_, total) = compact_starts(lengths)?;
    let mut v = vec![0i32; total];
    for_compact(&mut v, lengths, |s, o| {
        if ids {
            o.iter_mut().for_each(|x| *x = s as i32);
        } else {
            o.iter_mut().enumerate().for_each(|(i, x)| *x = i as i32);
        }
        Ok(())
    })?;
    Ok(FlatValue::i32s(v))
}

/// The flattener's promise on a layout's `within` sizes (`Op::SegIds`), which the GPU
/// executor allocates by: its elements are no more than theirs together.
pub(crate) fn within_bound(layout: &FlatValue, within: &[FlatValue]) -> KResult<()> {
    if within.is_empty() {
        return Ok(());
    }
    let size = |s: &FlatValue| s.as_scalar().and_then(|s| s.as_int()).unwrap_or(0).max(0) as usize;
    let bound: usize = within.iter().map(size).sum();
    let total = layout.vector_len().unwrap_or(0);
    if total > bound {
        return internal(format!(
            "a segment layout of {total} elements lies within collections of {bound} elements"
        ));
    }
    Ok(())
}

pub fn concat(args: &[FlatValue]) -> KResult<FlatValue> {
    let Some(first) = args.first() else { return internal("concat of nothing") };
    each_scalar_type!(first.ty(), T, {
        let mut v: Vec<T> = Vec::new();
        for a in args {
            match arg::<T>(a)? {
                Arg::S(x) => v.push(x),
                Arg::V(xs) => v.extend_from_slice(xs),
            }
        }
        Ok(FlatValue::vector(T::wrap(v)))
    })
}

pub fn interleave(parts: &[FlatValue], len: &FlatValue) -> KResult<FlatValue> {
    let n = scalar_len(len, "interleave length")?;
    let Some(first) = parts.first() else { return internal("interleave of nothing") };
    for p in parts {
        if p.vector_len().is_some_and(|m| m != n) {
            return internal("interleave of a part of the wrong length");
        }
    }
    let k = parts.len();
    each_scalar_type!(first.ty(), T, {
        let args: Vec<Arg<T>> = parts.iter().map(arg::<T>).collect::<KResult<_>>()?;
        let mut v: Vec<T> = vec![T::zero(); k * n];
        let fill = |(i, chunk): (usize, &mut [T])| {
            for (slot, a) in chunk.iter_mut().zip(&args) {
                *slot = a.get(i);
            }
        };
        if k * n >= PAR_THRESHOLD {
            v.par_chunks_mut(k).enumerate().for_each(fill);
        } else {
            v.chunks_mut(k).enumerate().for_each(fill);
        }
        Ok(FlatValue::vector(T::wrap(v)))
    })
}

/// Element `index` of `random_f32(_, seed)`, element-wise.
pub fn random_f32(seed: &FlatValue, index: &FlatValue) -> KResult<FlatValue> {
    let n = common_len(&[seed, index])?;
    let (seed, index) = (int_arg(seed)?, int_arg(index)?);
    let at = |k: usize| {
        (interp::data::bits(seed.get(k) as i32, index.get(k) as u32) >> 8) as f32 * (1.0 / 16_777_216.0)
    };
    Ok(match n {
        Some(n) => FlatValue::f32s(par_map_idx(n, at)),
        None => FlatValue::Scalar(ScalarValue::F32(at(0))),
    })
}

/// Element `index` of `random_i32(_, lo, hi, seed)`, element-wise; `lo < hi` was checked.
pub fn random_i32(lo: &FlatValue, hi: &FlatValue, seed: &FlatValue, index: &FlatValue) -> KResult<FlatValue> {
    let n = common_len(&[lo, hi, seed, index])?;
    let (lo, hi, seed, index) = (int_arg(lo)?, int_arg(hi)?, int_arg(seed)?, int_arg(index)?);
    let at = |k: usize| {
        let (l, h) = (lo.get(k), hi.get(k));
        let width = (h - l).max(1) as u64;
        (l + (u64::from(interp::data::bits(seed.get(k) as i32, index.get(k) as u32)) % width) as i64) as i32
    };
    Ok(match n {
        Some(n) => FlatValue::i32s(par_map_idx(n, at)),
        None => FlatValue::Scalar(ScalarValue::I32(at(0))),
    })
}

// ---------------------------------------------------------------------------------------------
// Moving data

pub fn length(v: &FlatValue) -> KResult<FlatValue> {
    let n = buffer(v)?.len();
    match i32::try_from(n) {
        Ok(n) => Ok(FlatValue::Scalar(ScalarValue::I32(n))),
        Err(_) => internal(format!("a vector of {n} elements is too long for an i32 length")),
    }
}

fn in_range(i: i64, len: usize) -> Option<usize> {
    usize::try_from(i).ok().filter(|&p| p < len)
}

/// `xs[i]`, or the internal error of an index the flattener should have checked.
fn element_at<T: Copy>(xs: &[T], i: i64) -> KResult<T> {
    picked_at(xs, i).ok_or_else(|| out_of_range(i, xs.len()))
}

/// `xs[i]`, or `None` for an index out of range.
#[inline]
fn picked_at<T: Copy>(xs: &[T], i: i64) -> Option<T> {
    in_range(i, xs.len()).map(|p| xs[p])
}

/// The vector of `pick(k)` for `k` in `0..n`, in parallel above the threshold; the internal
/// error of the first `k` that picks nothing (an index the flattener should have checked).
fn gathered<T: Elem>(
    n: usize,
    pick: impl Fn(usize) -> Option<T> + Sync + Send,
    error: impl Fn(usize) -> Fail,
) -> KResult<FlatValue> {
    let failed = Failed::default();
    let all = par_map_idx(n, |k| failed.or_zero(pick(k)));
    failed.check(n, |k| pick(k).is_none().then(|| error(k)))?;
    Ok(FlatValue::vector(T::wrap(all)))
}

/// The internal error of a gather index out of range.
#[cold]
fn out_of_range(i: i64, len: usize) -> Fail {
    internal::<()>(format!("gather index {i} out of range for {len} elements")).unwrap_err()
}

pub fn gather(src: &FlatValue, index: &FlatValue) -> KResult<FlatValue> {
    let src = buffer(src)?;
    let idx = int_arg(index)?;
    each_buffer!(src, xs, T, {
        let len = xs.len();
        match idx {
            IntArg::S(i) => Ok(FlatValue::Scalar(element_at(xs, i)?.scalar())),
            IntArg::V32(ix) => gathered(
                ix.len(),
                |k| picked_at(xs, i64::from(ix[k])),
                |k| out_of_range(i64::from(ix[k]), len),
            ),
            IntArg::V64(ix) => gathered(ix.len(), |k| picked_at(xs, ix[k]), |k| out_of_range(ix[k], len)),
        }
    })
}

/// `first[index[i]]` where `from_first[i]`, else `second[index[i]]` (`ir::Op::GatherEither`):
/// only the source picked is read.
pub fn gather_either(
    first: &FlatValue,
    second: &FlatValue,
    from_first: &FlatValue,
    index: &FlatValue,
) -> KResult<FlatValue> {
    let n = common_len(&[from_first, index])?.unwrap_or(1);
    let (picks, idx) = (arg::<bool>(from_first)?, int_arg(index)?);
    let (a, b) = (buffer(first)?, buffer(second)?);
    if a.ty() != b.ty() {
        return internal("a gather from two sources of different types");
    }
    each_buffer!(a, xs, T, {
        let ys = T::slice(b).unwrap_or_default();
        let source = |k| if picks.get(k) { &xs[..] } else { ys };
        gathered(n, |k| picked_at(source(k), idx.get(k)), |k| out_of_range(idx.get(k), source(k).len()))
    })
}

/// `src[start + step * i]` for `i` in `0..len`: a gather through a progression of indexes.
pub fn gather_strided(src: &FlatValue, start: i32, step: i32, len: usize) -> KResult<Option<FlatValue>> {
    let src = buffer(src)?;
    let n = src.len();
    let at = |i: usize| start as i64 + step as i64 * i as i64;
    if len > 0 {
        let (first, last) = (at(0), at(len - 1));
        if in_range(first, n).is_none() || in_range(last, n).is_none() {
            let bad = if in_range(first, n).is_none() { first } else { last };
            return internal(format!("gather index {bad} out of range for {n} elements"));
        }
    }
    each_buffer!(src, xs, T, Ok(Some(FlatValue::vector(T::wrap(par_map_idx(len, |i| xs[at(i) as usize]))))))
}

/// Whether every index of an integer vector is in `0..len`.
pub fn all_indexes_below(index: &FlatValue, len: usize) -> bool {
    match int_arg(index) {
        Ok(IntArg::V32(v)) => v.iter().all(|&i| in_range(i as i64, len).is_some()),
        Ok(IntArg::V64(v)) => v.iter().all(|&i| in_range(i, len).is_some()),
        _ => false,
    }
}

pub fn scatter(dst: &FlatValue, index: &FlatValue, src: &FlatValue) -> KResult<FlatValue> {
    scatter_into(dst.clone(), index, src)
}

/// `scatter`, writing into `dst`'s own vector where nobody else holds it (a value handed over
/// at its last read, such as a loop's state) and into a copy otherwise.
pub fn scatter_into(dst: FlatValue, index: &FlatValue, src: &FlatValue) -> KResult<FlatValue> {
    let mut dst = match dst {
        FlatValue::Vector(b) => b,
        other => {
            buffer(&other)?;
            return internal("a scatter into a value that is not a vector");
        }
    };
    let idx = int_arg(index)?;
    let n = match index.vector_len() {
        Some(n) => n,
        None => return internal("a scalar scatter index"),
    };
    if src.vector_len().is_some_and(|m| m != n) {
        return internal("scatter of values and indexes of unequal lengths");
    }
    let len = dst.len();
    let bad = (0..n).into_par_iter().find_first(|&k| in_range(idx.get(k), len).is_none());
    if let Some(k) = bad {
        return internal(format!("scatter index {} out of range for {len} elements", idx.get(k)));
    }
    each_buffer!(Arc::make_mut(&mut dst), xs, T, {
        let values = arg::<T>(src)?;
        for k in 0..n {
            xs[idx.get(k) as usize] = values.get(k);
        }
    });
    Ok(FlatValue::Vector(dst))
}

pub fn write_at(dst: &FlatValue, at: &FlatValue, src: &FlatValue) -> KResult<FlatValue> {
    write_at_into(dst.clone(), at, src)
}

/// `write_at`, writing into `dst`'s own vector where nobody else holds it (a value handed over
/// at its last read, such as a loop's state) and into a copy otherwise.
pub fn write_at_into(dst: FlatValue, at: &FlatValue, src: &FlatValue) -> KResult<FlatValue> {
    let FlatValue::Vector(mut dst) = dst else {
        return internal("a write into a value that is not a vector");
    };
    let at = scalar_len(at, "write place")?;
    let Some(n) = src.vector_len() else { return internal("a write of a scalar") };
    if at.checked_add(n).is_none_or(|end| end > dst.len()) {
        return internal(format!("a write of {n} elements at {at} into {} elements", dst.len()));
    }
    each_buffer!(Arc::make_mut(&mut dst), xs, T, xs[at..at + n].copy_from_slice(vector::<T>(src)?));
    Ok(FlatValue::Vector(dst))
}

pub fn pack(src: &FlatValue, flags: &FlatValue) -> KResult<FlatValue> {
    let src = buffer(src)?;
    let flags = vector::<bool>(flags)?;
    if flags.len() != src.len() {
        return internal("pack with flags of another length");
    }
    each_buffer!(src, xs, T, {
        let v: Vec<T> = if xs.len() >= PAR_THRESHOLD {
            pack_par(xs, flags)
        } else {
            xs.iter().zip(flags).filter(|(_, f)| **f).map(|(x, _)| *x).collect()
        };
        Ok(FlatValue::vector(T::wrap(v)))
    })
}

/// `pack` of a long vector in two parallel passes over chunks: each chunk counts its kept
/// elements, then copies them to where the counts before it say, in a result allocated once.
/// (A parallel `filter` collects a list of vectors and copies them again.)
fn pack_par<T: Elem>(xs: &[T], flags: &[bool]) -> Vec<T> {
    let counts: Vec<usize> =
        flags.par_chunks(CHUNK).map(|f| f.iter().filter(|&&kept| kept).count()).collect();
    let mut out = vec![T::zero(); counts.iter().sum()];
    let mut pieces = Vec::with_capacity(counts.len());
    let mut rest = &mut out[..];
    for &count in &counts {
        let (piece, after) = rest.split_at_mut(count);
        pieces.push(piece);
        rest = after;
    }
    pieces.into_par_iter().zip(xs.par_chunks(CHUNK).zip(flags.par_chunks(CHUNK))).for_each(
        |(piece, (xs, flags))| {
            let kept = xs.iter().zip(flags).filter(|(_, kept)| **kept);
            for (slot, (&x, _)) in piece.iter_mut().zip(kept) {
                *slot = x;
            }
        },
    );
    out
}

// ---------------------------------------------------------------------------------------------
// Reductions and scans

/// Runs `$body` with `$id` (the identity, `None` for min and max, which start from the first
/// element) and `$f` (the combining function) for reduce op `$op` on element type `$T`.
macro_rules! with_op {
    ($op:expr, $T:ty, |$id:ident, $f:ident| $body:expr) => {
        match $op {
            ReduceOp::Add => {
                let $id = Some(<$T as Elem>::zero());
                let $f = |a: $T, b: $T| <$T as Elem>::add(a, b);
                $body
            }
            ReduceOp::Mul => {
                let $id = Some(<$T as Elem>::one());
                let $f = |a: $T, b: $T| <$T as Elem>::mul(a, b);
                $body
            }
            ReduceOp::And => {
                let $id = Some(<$T as Elem>::all_ones());
                let $f = |a: $T, b: $T| <$T as Elem>::and(a, b);
                $body
            }
            ReduceOp::Or => {
                let $id = Some(<$T as Elem>::zero());
                let $f = |a: $T, b: $T| <$T as Elem>::or(a, b);
                $body
            }
            ReduceOp::Xor => {
                let $id = Some(<$T as Elem>::zero());
                let $f = |a: $T, b: $T| <$T as Elem>::xor(a, b);
                $body
            }
            ReduceOp::Min => {
                let $id: Option<$T> = None;
                let $f = |a: $T, b: $T| if <$T as Elem>::order(b, a).is_lt() { b } else { a };
                $body
            }
            ReduceOp::Max => {
                let $id: Option<$T> = None;
                let $f = |a: $T, b: $T| if <$T as Elem>::order(b, a).is_gt() { b } else { a };
                $body
            }
        }
    };
}

fn op_supported<T: Elem>(op: ReduceOp) -> KResult<()> {
    let ok = match op {
        ReduceOp::Add | ReduceOp::Mul => T::ARITH,
        ReduceOp::And | ReduceOp::Or | ReduceOp::Xor => T::BITWISE,
        ReduceOp::Min | ReduceOp::Max => true,
    };
    if ok { Ok(()) } else { internal(format!("reduce {} of {}", op.name(), T::TY.name())) }
}

/// A sequential fold from the identity, or from the first element for min and max (`zero` on
/// empty input).
#[inline]
fn fold_seq<T: Elem, F: Fn(T, T) -> T>(xs: &[T], id: Option<T>, f: &F) -> T {
    match id {
        Some(id) => xs.iter().fold(id, |a, &x| f(a, x)),
        None => match xs.split_first() {
            Some((&x0, rest)) => rest.iter().fold(x0, |a, &x| f(a, x)),
            None => T::zero(),
        },
    }
}

/// The interleaved partial results of `fold_lanes`.
const LANES: usize = 8;

/// The fold of one chunk of a long reduction (`PAR_THRESHOLD` elements or more, whose
/// grouping is free): an op with an identity folds into `LANES` interleaved partials, combined
/// in order at the end. For `+` and `*` of floats that is eight independent chains of additions
/// instead of one, which the compiler vectorises, so the fold runs at the speed of memory, not
/// at the latency of one float addition per element; for the integer and bitwise ops the result
/// is the sequential fold's. `min` and `max` (no identity) fold sequentially.
#[inline]
fn fold_lanes<T: Elem, F: Fn(T, T) -> T>(xs: &[T], id: Option<T>, f: &F) -> T {
    let Some(id) = id else { return fold_seq(xs, None, f) };
    let (groups, rest) = xs.as_chunks::<LANES>();
    let mut lanes = [id; LANES];
    for group in groups {
        for (lane, &x) in lanes.iter_mut().zip(group) {
            *lane = f(*lane, x);
        }
    }
    let lanes = lanes.into_iter().fold(id, f);
    f(lanes, fold_seq(rest, Some(id), f))
}

/// A reduction of a short slice in the interpreter's order; of a long one in parallel over
/// chunks of `CHUNK`, each folded by `fold_lanes`.
fn reduce_slice<T: Elem, F: Fn(T, T) -> T + Sync>(xs: &[T], id: Option<T>, f: &F) -> T {
    if xs.len() < PAR_THRESHOLD {
        return fold_seq(xs, id, f);
    }
    xs.par_chunks(CHUNK).map(|c| fold_lanes(c, id, f)).reduce_with(f).unwrap_or_else(T::zero)
}

pub fn reduce(op: ReduceOp, src: &FlatValue) -> KResult<FlatValue> {
    each_buffer!(buffer(src)?, xs, T, {
        op_supported::<T>(op)?;
        with_op!(op, T, |id, f| Ok(FlatValue::Scalar(reduce_slice(xs, id, &f).scalar())))
    })
}

/// The partial result of one chunk of a long reduction (a fused kernel's), folded in lanes as
/// `reduce` folds each of its chunks.
pub fn reduce_chunk(op: ReduceOp, src: &FlatValue) -> KResult<FlatValue> {
    each_buffer!(buffer(src)?, xs, T, {
        op_supported::<T>(op)?;
        with_op!(op, T, |id, f| Ok(FlatValue::Scalar(fold_lanes(xs, id, &f).scalar())))
    })
}

/// The ranges of a segment descriptor over a vector of `n` elements.
fn seg_ranges<'a>(
    offsets: &FlatValue,
    lengths: &'a FlatValue,
    n: usize,
) -> KResult<(Vec<Range<usize>>, &'a [i32])> {
    let offsets = vector::<i32>(offsets)?;
    let lengths = vector::<i32>(lengths)?;
    if offsets.len() != lengths.len() {
        return internal("segment offsets and lengths of unequal lengths");
    }
    let mut ranges = Vec::with_capacity(offsets.len());
    for (&o, &l) in offsets.iter().zip(lengths) {
        if o < 0 || l < 0 || o as usize + l as usize > n {
            return internal(format!("segment at {o} of length {l} in a vector of {n} elements"));
        }
        ranges.push(o as usize..o as usize + l as usize);
    }
    Ok((ranges, lengths))
}

fn par_segments<R: Send>(ranges: &[Range<usize>], f: impl Fn(&Range<usize>) -> R + Sync + Send) -> Vec<R> {
    if ranges.len() >= 64 { ranges.par_iter().map(f).collect() } else { ranges.iter().map(f).collect() }
}

/// `seg_reduce` over the segments of a regular sequence: segment `k` is
/// `src[start + stride * k ..][..width]`, for `k` in `0..count`.
pub fn seg_reduce_strided(
    op: ReduceOp,
    src: &FlatValue,
    start: i32,
    stride: i32,
    width: usize,
    count: usize,
) -> KResult<FlatValue> {
    let b = buffer(src)?;
    let at = |k: usize| start as i64 + stride as i64 * k as i64;
    if count > 0 && width > 0 {
        let (lo, hi) = (at(0).min(at(count - 1)), at(0).max(at(count - 1)) + width as i64);
        if lo < 0 || hi > b.len() as i64 {
            return internal(format!("strided segments {lo}..{hi} in a vector of {} elements", b.len()));
        }
    }
    each_buffer!(b, xs, T, {
        op_supported::<T>(op)?;
        with_op!(op, T, |id, f| {
            let segment = |k: usize| {
                let from = if width == 0 { 0 } else { at(k) as usize };
                reduce_slice(&xs[from..from + width], id, &f)
            };
            let v: Vec<T> = if count >= 64 {
                (0..count).into_par_iter().map(segment).collect()
            } else {
                (0..count).map(segment).collect()
            };
            Ok(FlatValue::vector(T::wrap(v)))
        })
    })
}

pub fn seg_reduce(
    op: ReduceOp,
    src: &FlatValue,
    offsets: &FlatValue,
    lengths: &FlatValue,
) -> KResult<FlatValue> {
    let b = buffer(src)?;
    let (ranges, _) = seg_ranges(offsets, lengths, b.len())?;
    each_buffer!(b, xs, T, {
        op_supported::<T>(op)?;
        with_op!(op, T, |id, f| {
            let v = par_segments(&ranges, |r| reduce_slice(&xs[r.clone()], id, &f));
            Ok(FlatValue::vector(T::wrap(v)))
        })
    })
}

/// The position of the first smallest (or largest) element; 0 for an empty slice.
fn arg_extreme<T: Elem>(xs: &[T], max: bool) -> usize {
    let better = |x: T, best: T| {
        let o = T::order(x, best);
        if max { o.is_gt() } else { o.is_lt() }
    };
    let seq = |base: usize, xs: &[T]| -> Option<(usize, T)> {
        let (&x0, rest) = xs.split_first()?;
        let mut best = (base, x0);
        for (i, &x) in rest.iter().enumerate() {
            if better(x, best.1) {
                best = (base + i + 1, x);
            }
        }
        Some(best)
    };
    let found = if xs.len() < PAR_THRESHOLD {
        seq(0, xs)
    } else {
        xs.par_chunks(CHUNK)
            .enumerate()
            .filter_map(|(k, c)| seq(k * CHUNK, c))
            .reduce_with(|a, b| if better(b.1, a.1) { b } else { a })
    };
    found.map_or(0, |(i, _)| i)
}

pub fn seg_arg_extreme(
    max: bool,
    src: &FlatValue,
    offsets: &FlatValue,
    lengths: &FlatValue,
) -> KResult<FlatValue> {
    let b = buffer(src)?;
    let (ranges, _) = seg_ranges(offsets, lengths, b.len())?;
    each_buffer!(b, xs, T, {
        let v = par_segments(&ranges, |r| arg_extreme(&xs[r.clone()], max) as i32);
        Ok(FlatValue::i32s(v))
    })
}

/// An inclusive scan (`init == None`, starting from the first element) or an exclusive scan
/// from `init` of `xs` into `out` (of the same length); a two-pass chunked scan when long.
fn scan_into<T: Elem, F: Fn(T, T) -> T + Sync>(xs: &[T], out: &mut [T], init: Option<T>, f: &F) {
    fn seq<T: Elem, F: Fn(T, T) -> T>(xs: &[T], out: &mut [T], carry: Option<T>, exclusive: bool, f: &F) {
        let mut acc = carry;
        for (o, &x) in out.iter_mut().zip(xs) {
            if exclusive {
                let a = acc.unwrap_or(x);
                *o = a;
                acc = Some(f(a, x));
            } else {
                let a = match acc {
                    Some(a) => f(a, x),
                    None => x,
                };
                *o = a;
                acc = Some(a);
            }
        }
    }
    let exclusive = init.is_some();
    if xs.len() < PAR_THRESHOLD {
        return seq(xs, out, init, exclusive, f);
    }
    let totals: Vec<T> = xs.par_chunks(CHUNK).map(|c| fold_seq(c, None, f)).collect();
    let mut carries = Vec::with_capacity(totals.len());
    let mut acc = init;
    for t in totals {
        carries.push(acc);
        acc = Some(match acc {
            Some(a) => f(a, t),
            None => t,
        });
    }
    out.par_chunks_mut(CHUNK)
        .zip(xs.par_chunks(CHUNK))
        .zip(carries)
        .for_each(|((o, c), carry)| seq(c, o, carry, exclusive, f));
}

fn scan_init<T: Elem>(init: Option<&FlatValue>) -> KResult<Option<T>> {
    match init {
        None => Ok(None),
        Some(v) => match T::from_scalar(scalar(v)?) {
            Some(x) => Ok(Some(x)),
            None => internal("a scan initial value of another type"),
        },
    }
}

pub fn scan(op: ReduceOp, src: &FlatValue, init: Option<&FlatValue>) -> KResult<FlatValue> {
    each_buffer!(buffer(src)?, xs, T, {
        op_supported::<T>(op)?;
        let init = scan_init::<T>(init)?;
        with_op!(op, T, |_id, f| {
            let mut v = vec![T::zero(); xs.len()];
            scan_into(xs, &mut v, init, &f);
            Ok(FlatValue::vector(T::wrap(v)))
        })
    })
}

pub fn seg_scan(
    op: ReduceOp,
    src: &FlatValue,
    init: Option<&FlatValue>,
    offsets: &FlatValue,
    lengths: &FlatValue,
) -> KResult<FlatValue> {
    let b = buffer(src)?;
    let (ranges, lens) = seg_ranges(offsets, lengths, b.len())?;
    let (_, total) = compact_starts(lens)?;
    each_buffer!(b, xs, T, {
        op_supported::<T>(op)?;
        let init = scan_init::<T>(init)?;
        with_op!(op, T, |_id, f| {
            let mut v = vec![T::zero(); total];
            for_compact(&mut v, lens, |s, o| {
                let r = ranges[s].clone();
                scan_into(&xs[r], o, init, &f);
                Ok(())
            })?;
            Ok(FlatValue::vector(T::wrap(v)))
        })
    })
}

/// Stable sort of positions by the keys, lexicographically, in total order.
fn sort_positions(keys: &[&Buffer], out: &mut [i32]) {
    fn cmp_at(keys: &[&Buffer], i: usize, j: usize) -> Ordering {
        for k in keys {
            let o = each_buffer!(k, xs, T, T::order(xs[i], xs[j]));
            if o.is_ne() {
                return o;
            }
        }
        Ordering::Equal
    }
    let big = out.len() >= PAR_THRESHOLD;
    match keys {
        [one] => each_buffer!(one, xs, T, {
            let c = |a: &i32, b: &i32| T::order(xs[*a as usize], xs[*b as usize]);
            if big { out.par_sort_by(c) } else { out.sort_by(c) }
        }),
        _ => {
            let c = |a: &i32, b: &i32| cmp_at(keys, *a as usize, *b as usize);
            if big { out.par_sort_by(c) } else { out.sort_by(c) }
        }
    }
}

pub fn seg_sort_perm(keys: &[FlatValue], offsets: &FlatValue, lengths: &FlatValue) -> KResult<FlatValue> {
    let keys: Vec<&Buffer> = keys.iter().map(buffer).collect::<KResult<_>>()?;
    let Some(n) = keys.first().map(|k| k.len()) else { return internal("a sort with no keys") };
    if keys.iter().any(|k| k.len() != n) {
        return internal("sort keys of unequal lengths");
    }
    if n > i32::MAX as usize {
        return internal("sort keys too long for i32 positions");
    }
    let (ranges, lens) = seg_ranges(offsets, lengths, n)?;
    let (_, total) = compact_starts(lens)?;
    let mut v = vec![0i32; total];
    for_compact(&mut v, lens, |s, o| {
        let r = ranges[s].clone();
        o.iter_mut().zip(r).for_each(|(slot, p)| *slot = p as i32);
        sort_positions(&keys, o);
        Ok(())
    })?;
    Ok(FlatValue::i32s(v))
}

// ---------------------------------------------------------------------------------------------
// Checks

/// The first element (lowest index) of `0..n` where `bad` holds.
fn first_bad(n: usize, bad: impl Fn(usize) -> bool + Sync + Send) -> Option<usize> {
    if n >= PAR_THRESHOLD { (0..n).into_par_iter().find_first(|&i| bad(i)) } else { (0..n).find(|&i| bad(i)) }
}

pub fn check(check: &Check, args: &[FlatValue]) -> KResult<()> {
    let refs: Vec<&FlatValue> = args.iter().collect();
    match check {
        Check::IndexInRange { what, .. } => {
            let [index, len, written] = args else { return internal("index check operands") };
            let n = common_len(&refs)?.unwrap_or(1);
            let (i, l, w) = (int_arg(index)?, int_arg(len)?, int_arg(written)?);
            if let Some(k) = first_bad(n, |k| {
                let x = i.get(k);
                !(0 <= x && x < l.get(k))
            }) {
                return fail(
                    Code::IndexOutOfRange,
                    format!("{what}index {} is out of range for a sequence of length {}", w.get(k), l.get(k)),
                );
            }
        }
        Check::LengthsEqual { what, .. } => {
            let [a, b] = args else { return internal("length check operands") };
            let n = common_len(&refs)?.unwrap_or(1);
            let (a, b) = (int_arg(a)?, int_arg(b)?);
            if let Some(k) = first_bad(n, |k| a.get(k) != b.get(k)) {
                let (a, b) = (a.get(k), b.get(k));
                let message = match what {
                    LengthCheck::Equal(name) => {
                        format!("{name} needs sequences of equal length, got lengths {a} and {b}")
                    }
                    LengthCheck::ScatterValues => format!("scatter has {a} values but {b} indexes"),
                    LengthCheck::PermuteIndexes => format!("permute of {a} elements got {b} indexes"),
                };
                return fail(Code::LengthMismatch, message);
            }
        }
        Check::NonEmpty { what, .. } => {
            let [len] = args else { return internal("non-empty check operands") };
            let n = common_len(&refs)?.unwrap_or(1);
            let l = int_arg(len)?;
            if first_bad(n, |k| l.get(k) <= 0).is_some() {
                return fail(Code::EmptySequence, format!("{what} of an empty sequence"));
            }
        }
        Check::Assert { message, .. } => {
            let [cond] = args else { return internal("assert operands") };
            let n = common_len(&refs)?.unwrap_or(1);
            let c = arg::<bool>(cond)?;
            if first_bad(n, |k| !c.get(k)).is_some() {
                let message = match message {
                    Some(m) => format!("assertion failed: {m}"),
                    None => "assertion failed".to_string(),
                };
                return fail(Code::AssertionFailed, message);
            }
        }
        Check::NonNegative { what, .. } => {
            let [x] = args else { return internal("non-negative check operands") };
            let n = common_len(&refs)?.unwrap_or(1);
            let x = int_arg(x)?;
            if let Some(k) = first_bad(n, |k| x.get(k) < 0) {
                return fail(Code::InvalidArgument, format!("{what} count {} is negative", x.get(k)));
            }
        }
        Check::NonZeroStep { what, .. } => {
            let [x] = args else { return internal("step check operands") };
            let n = common_len(&refs)?.unwrap_or(1);
            let x = int_arg(x)?;
            if first_bad(n, |k| x.get(k) == 0).is_some() {
                return fail(Code::InvalidArgument, format!("{what} step cannot be zero"));
            }
        }
        Check::Permutation { .. } => {
            let [index, offsets, lengths] = args else { return internal("permutation check operands") };
            let idx = int_arg(index)?;
            let n = index.vector_len().unwrap_or(0);
            let (ranges, _) = seg_ranges(offsets, lengths, n)?;
            // Per segment, the first bad position and its message; the first segment wins.
            let bad = |r: &Range<usize>| -> Option<String> {
                let len = r.len();
                let mut seen = vec![false; len];
                for p in r.clone() {
                    let i = idx.get(p);
                    match in_range(i, len) {
                        None => {
                            return Some(format!(
                                "permute index {i} is out of range for {len} elements, so the indexes are not a permutation"
                            ));
                        }
                        Some(q) if seen[q] => {
                            return Some(format!(
                                "permute index {i} appears more than once, so the indexes are not a permutation"
                            ));
                        }
                        Some(q) => seen[q] = true,
                    }
                }
                None
            };
            let found = if ranges.len() >= 64 || n >= PAR_THRESHOLD {
                ranges.par_iter().find_map_first(bad)
            } else {
                ranges.iter().find_map(bad)
            };
            if let Some(message) = found {
                return fail(Code::NotAPermutation, message);
            }
        }
        Check::PartitionLengths { .. } => {
            let [lengths, sums, totals] = args else { return internal("partition check operands") };
            let l = int_arg(lengths)?;
            let n = lengths.vector_len().unwrap_or(1);
            if let Some(k) = first_bad(n, |k| l.get(k) < 0) {
                return fail(Code::LengthMismatch, format!("partition length {} is negative", l.get(k)));
            }
            let m = common_len(&[sums, totals])?.unwrap_or(1);
            let (sums, totals) = (int_arg(sums)?, int_arg(totals)?);
            if let Some(k) = first_bad(m, |k| sums.get(k) != totals.get(k)) {
                return fail(
                    Code::LengthMismatch,
                    format!(
                        "partition lengths sum to {}, but the sequence has {} elements",
                        sums.get(k),
                        totals.get(k)
                    ),
                );
            }
        }
        Check::RandomRange { .. } => {
            let [lo, hi] = args else { return internal("random range operands") };
            let n = common_len(&refs)?.unwrap_or(1);
            let (lo, hi) = (int_arg(lo)?, int_arg(hi)?);
            if let Some(k) = first_bad(n, |k| lo.get(k) >= hi.get(k)) {
                return fail(
                    Code::InvalidArgument,
                    format!("random_i32 needs lo < hi, got lo = {} and hi = {}", lo.get(k), hi.get(k)),
                );
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Dispatch

/// A literal's value in its own type (an `i32` literal wraps, an `f32` one rounds).
pub fn literal(lit: &Literal) -> KResult<FlatValue> {
    let v = match *lit {
        Literal::Bool(b) => interp::NestedValue::Bool(b),
        Literal::Int(i, s) => interp::ops::cast(&interp::NestedValue::I64(i), s)?,
        Literal::Float(x, s) => interp::ops::cast(&interp::NestedValue::F64(x), s)?,
    };
    match ScalarValue::from_interp(&v) {
        Some(s) => Ok(FlatValue::Scalar(s)),
        None => internal("a non-scalar literal"),
    }
}

/// An element-wise op (unary, binary, select, cast, math) on operands that may be windows of
/// vectors read in place: `None` for any other op.
pub fn element_wise<V: Operand>(op: &Op, args: &[V]) -> Option<KResult<FlatValue>> {
    let a = |i: usize| operand(op, args, i);
    Some(match op {
        Op::Unary(u, _) => a(0).and_then(|x| unary(*u, x)),
        Op::Binary(b, _, _) => a(0).and_then(|x| binary(*b, x, a(1)?)),
        Op::Select(..) => a(0).and_then(|c| select(c, a(1)?, a(2)?)),
        Op::Cast(to, _) => a(0).and_then(|x| cast(*to, x)),
        Op::Math(f, _) => math(*f, args),
        _ => return None,
    })
}

/// Operand `i` of `op`, or the internal error of a malformed op that lacks it.
fn operand<'a, V>(op: &Op, args: &'a [V], i: usize) -> KResult<&'a V> {
    match args.get(i) {
        Some(v) => Ok(v),
        None => internal(format!("{} is missing operand {i}", op.name())),
    }
}

/// Whether `element_wise` runs `op`, on windows of its operands (the same ops its match names,
/// asked before a chunk builds the windows): the element-wise ops but the random ones, whose
/// kernels take whole values (a chunk copies its slice of an input for them).
pub fn takes_windows(op: &Op) -> bool {
    matches!(op, Op::Unary(..) | Op::Binary(..) | Op::Select(..) | Op::Cast(..) | Op::Math(..))
}

/// Runs every op but `Load` on its operands (in `Op::operands` order): `Some` value, or `None`
/// for a check.
pub fn run_op(op: &Op, args: &[FlatValue]) -> KResult<Option<FlatValue>> {
    if let Some(result) = element_wise(op, args) {
        return result.map(Some);
    }
    let a = |i: usize| operand(op, args, i);
    Ok(Some(match op {
        Op::Const(lit) => literal(lit)?,
        Op::Unary(..) | Op::Binary(..) | Op::Select(..) | Op::Cast(..) | Op::Math(..) => {
            return internal(format!("{} outside `element_wise`", op.name()));
        }
        Op::Replicate { .. } => replicate(a(0)?, a(1)?)?,
        Op::Iota { .. } => iota(a(0)?)?,
        Op::SegIota { .. } | Op::SegIds { .. } => {
            let layout = seg_iota(a(0)?, matches!(op, Op::SegIds { .. }))?;
            within_bound(&layout, &args[1..])?;
            layout
        }
        Op::Concat(_) => concat(args)?,
        Op::Interleave { parts, .. } => interleave(&args[..parts.len().min(args.len())], a(parts.len())?)?,
        Op::RandomF32 { .. } => random_f32(a(0)?, a(1)?)?,
        Op::RandomI32 { .. } => random_i32(a(0)?, a(1)?, a(2)?, a(3)?)?,
        Op::Load { .. } => return internal("load outside the statement interpreter"),
        Op::Length(_) => length(a(0)?)?,
        Op::Gather { .. } => gather(a(0)?, a(1)?)?,
        Op::GatherEither { .. } => gather_either(a(0)?, a(1)?, a(2)?, a(3)?)?,
        Op::Scatter { .. } => scatter(a(0)?, a(1)?, a(2)?)?,
        Op::WriteAt { .. } => write_at(a(0)?, a(1)?, a(2)?)?,
        Op::Pack { .. } => pack(a(0)?, a(1)?)?,
        Op::Reduce { op, .. } => reduce(*op, a(0)?)?,
        Op::SegReduce { op, .. } => seg_reduce(*op, a(0)?, a(1)?, a(2)?)?,
        Op::SegArgExtreme { max, .. } => seg_arg_extreme(*max, a(0)?, a(1)?, a(2)?)?,
        Op::Scan { op, init, .. } => scan(*op, a(0)?, if init.is_some() { Some(a(1)?) } else { None })?,
        Op::SegScan { op, init, .. } => {
            seg_scan(*op, a(0)?, if init.is_some() { Some(a(3)?) } else { None }, a(1)?, a(2)?)?
        }
        Op::SegSortPerm { keys, .. } => {
            let k = keys.len().min(args.len());
            seg_sort_perm(&args[..k], a(k)?, a(k + 1)?)?
        }
        Op::Check(c) => {
            check(c, args)?;
            return Ok(None);
        }
    }))
}
