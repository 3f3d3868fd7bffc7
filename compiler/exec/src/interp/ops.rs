//! Operators and scalar functions with Weft's exact semantics: wrapping integers, Python's
//! flooring `//` and `%` (for floats too), shifts wrapped to the type's width, saturating casts,
//! IEEE-754 floats, structural equality and Python's lexicographic ordering.
//!
//! These are pure functions of values. A failure is a `Fail` (a code and a message) that the
//! evaluator places at the offending expression's span.

use std::cmp::Ordering;

use weft_core::types::Scalar;
use weft_core::{BinaryOp, UnaryOp};
use weft_syntax::diagnostics::Code;

use super::value::{Elems, NestedValue, Seq};

/// A run-time error before it gets its span.
#[derive(Debug, Clone, PartialEq)]
pub struct Fail {
    pub code: Code,
    pub message: String,
}

pub fn fail<T>(code: Code, message: impl Into<String>) -> Result<T, Fail> {
    Err(Fail { code, message: message.into() })
}

/// A value of the wrong shape for the operation: the core was not well typed, a compiler bug.
pub fn ill_typed<T>(what: &str) -> Result<T, Fail> {
    fail(Code::InternalError, format!("internal error: ill-typed core program ({what})"))
}

/// Integers `**` as Weft defines it: wrapping, by repeated squaring; a negative exponent is
/// E0406. Shared by the interpreter and the CPU executor.
pub fn int_pow<T: IntPow>(base: T, exp: T) -> Result<T, Fail> {
    let Some(mut e) = exp.exponent() else {
        return fail(
            Code::InvalidArgument,
            format!("negative exponent {exp} in an integer power ({base} ** {exp})"),
        );
    };
    let (mut b, mut acc) = (base, T::ONE);
    while e > 0 {
        if e & 1 == 1 {
            acc = acc.wrapping_times(b);
        }
        b = b.wrapping_times(b);
        e >>= 1;
    }
    Ok(acc)
}

/// The integer types `int_pow` works on.
pub trait IntPow: Copy + std::fmt::Display {
    const ONE: Self;
    /// The exponent as unsigned, or `None` if it is negative.
    fn exponent(self) -> Option<u64>;
    fn wrapping_times(self, other: Self) -> Self;
}

macro_rules! int_pow_impl {
    ($t:ty) => {
        impl IntPow for $t {
            const ONE: Self = 1;
            fn exponent(self) -> Option<u64> {
                u64::try_from(self).ok()
            }
            fn wrapping_times(self, other: Self) -> Self {
                self.wrapping_mul(other)
            }
        }
    };
}

int_pow_impl!(i32);
int_pow_impl!(i64);

macro_rules! int_binary {
    ($name:ident, $t:ty, $variant:ident, $float:ty, $fvariant:ident) => {
        fn $name(op: BinaryOp, a: $t, b: $t) -> Result<NestedValue, Fail> {
            use BinaryOp::*;
            Ok(match op {
                Add => NestedValue::$variant(a.wrapping_add(b)),
                Sub => NestedValue::$variant(a.wrapping_sub(b)),
                Mul => NestedValue::$variant(a.wrapping_mul(b)),
                Div => {
                    if b == 0 {
                        return fail(Code::DivisionByZero, format!("division by zero: {a} / 0"));
                    }
                    NestedValue::$fvariant(a as $float / b as $float)
                }
                FloorDiv => {
                    if b == 0 {
                        return fail(Code::DivisionByZero, format!("division by zero: {a} // 0"));
                    }
                    let q = a.wrapping_div(b);
                    let r = a.wrapping_rem(b);
                    NestedValue::$variant(if r != 0 && ((r < 0) != (b < 0)) { q.wrapping_sub(1) } else { q })
                }
                Mod => {
                    if b == 0 {
                        return fail(Code::DivisionByZero, format!("modulo by zero: {a} % 0"));
                    }
                    let r = a.wrapping_rem(b);
                    NestedValue::$variant(if r != 0 && ((r < 0) != (b < 0)) { r.wrapping_add(b) } else { r })
                }
                Pow => NestedValue::$variant(int_pow(a, b)?),
                BitAnd => NestedValue::$variant(a & b),
                BitOr => NestedValue::$variant(a | b),
                BitXor => NestedValue::$variant(a ^ b),
                Shl | Shr => return shift_int(op, NestedValue::$variant(a), i64::from(b)),
                Eq => NestedValue::Bool(a == b),
                Ne => NestedValue::Bool(a != b),
                Lt => NestedValue::Bool(a < b),
                Le => NestedValue::Bool(a <= b),
                Gt => NestedValue::Bool(a > b),
                Ge => NestedValue::Bool(a >= b),
            })
        }
    };
}

int_binary!(binary_i32, i32, I32, f32, F32);
int_binary!(binary_i64, i64, I64, f64, F64);

macro_rules! float_binary {
    ($name:ident, $divmod:ident, $pow:ident, $t:ty, $variant:ident) => {
        /// Float `**` as Weft defines it on every executor: IEEE-754 `pow`, except that an
        /// exponent of `0.5` is a correctly rounded square root and a small integer exponent
        /// (-2 to 4) is a product, so that these common cases never depend on the accuracy of
        /// a device's `pow` (see docs/language.md, "Float accuracy").
        pub fn $pow(a: $t, b: $t) -> $t {
            if b == 0.5 {
                // `pow`'s special cases: `(-inf) ** 0.5` is `inf`, `(-0.0) ** 0.5` is `0.0`.
                return if a == 0.0 {
                    0.0
                } else if a == <$t>::NEG_INFINITY {
                    <$t>::INFINITY
                } else {
                    a.sqrt()
                };
            }
            match b {
                1.0 => a,
                2.0 => a * a,
                3.0 => a * a * a,
                4.0 => (a * a) * (a * a),
                -1.0 => 1.0 / a,
                -2.0 => 1.0 / (a * a),
                _ => a.powf(b),
            }
        }

        /// Python's `divmod` for floats (CPython's `float_divmod`), with IEEE results for a zero
        /// divisor instead of an exception.
        pub fn $divmod(a: $t, b: $t) -> ($t, $t) {
            if b == 0.0 {
                return ((a / b).floor(), a % b);
            }
            let mut m = a % b;
            let mut div = (a - m) / b;
            if m != 0.0 {
                if (b < 0.0) != (m < 0.0) {
                    m += b;
                    div -= 1.0;
                }
            } else {
                m = (0.0 as $t).copysign(b);
            }
            let floordiv = if div != 0.0 {
                let mut f = div.floor();
                if div - f > 0.5 {
                    f += 1.0;
                }
                f
            } else {
                (0.0 as $t).copysign(a / b)
            };
            (floordiv, m)
        }

        fn $name(op: BinaryOp, a: $t, b: $t) -> Result<NestedValue, Fail> {
            use BinaryOp::*;
            Ok(match op {
                Add => NestedValue::$variant(a + b),
                Sub => NestedValue::$variant(a - b),
                Mul => NestedValue::$variant(a * b),
                Div => NestedValue::$variant(a / b),
                FloorDiv => NestedValue::$variant($divmod(a, b).0),
                Mod => NestedValue::$variant($divmod(a, b).1),
                Pow => NestedValue::$variant($pow(a, b)),
                Eq => NestedValue::Bool(a == b),
                Ne => NestedValue::Bool(a != b),
                Lt => NestedValue::Bool(a < b),
                Le => NestedValue::Bool(a <= b),
                Gt => NestedValue::Bool(a > b),
                Ge => NestedValue::Bool(a >= b),
                BitAnd | BitOr | BitXor | Shl | Shr => return ill_typed("a bitwise operator on floats"),
            })
        }
    };
}

float_binary!(binary_f32, divmod_f32, pow_f32, f32, F32);
float_binary!(binary_f64, divmod_f64, pow_f64, f64, F64);

/// `x << n` and `x >> n`: Python's shifts, wrapped to the width of `x`'s type.
fn shift_int(op: BinaryOp, x: NestedValue, n: i64) -> Result<NestedValue, Fail> {
    if n < 0 {
        return fail(Code::InvalidArgument, format!("negative shift count {n}"));
    }
    let left = op == BinaryOp::Shl;
    Ok(match x {
        NestedValue::I32(x) => NestedValue::I32(match (left, n >= 32) {
            (true, true) => 0,
            (true, false) => x.wrapping_shl(n as u32),
            (false, true) => x >> 31,
            (false, false) => x >> n,
        }),
        NestedValue::I64(x) => NestedValue::I64(match (left, n >= 64) {
            (true, true) => 0,
            (true, false) => x.wrapping_shl(n as u32),
            (false, true) => x >> 63,
            (false, false) => x >> n,
        }),
        _ => return ill_typed("a shift of a non-integer"),
    })
}

/// A binary operator on two values.
pub fn binary(op: BinaryOp, a: &NestedValue, b: &NestedValue) -> Result<NestedValue, Fail> {
    use NestedValue::*;
    if matches!(op, BinaryOp::Shl | BinaryOp::Shr) {
        // The shift amount may have another integer type than the shifted value.
        let Some(n) = b.as_int() else { return ill_typed("a non-integer shift amount") };
        return shift_int(op, a.clone(), n);
    }
    match (a, b) {
        (I32(x), I32(y)) => binary_i32(op, *x, *y),
        (I64(x), I64(y)) => binary_i64(op, *x, *y),
        (F32(x), F32(y)) => binary_f32(op, *x, *y),
        (F64(x), F64(y)) => binary_f64(op, *x, *y),
        (Bool(x), Bool(y)) => Ok(Bool(match op {
            BinaryOp::BitAnd => x & y,
            BinaryOp::BitOr => x | y,
            BinaryOp::BitXor => x ^ y,
            BinaryOp::Eq => x == y,
            BinaryOp::Ne => x != y,
            BinaryOp::Lt => !x & y,
            BinaryOp::Le => x <= y,
            BinaryOp::Gt => x & !y,
            BinaryOp::Ge => x >= y,
            _ => return ill_typed("arithmetic on bool"),
        })),
        _ if op.is_comparison() => Ok(Bool(compare(op, a, b))),
        _ => ill_typed("operands of different types"),
    }
}

/// A comparison of any two values of one type. Tuples and sequences compare as Python's do:
/// the first pair of elements that are not `==` decides, otherwise the lengths do.
pub fn compare(op: BinaryOp, a: &NestedValue, b: &NestedValue) -> bool {
    /// The length of a tuple or sequence, and its element `i`.
    fn len(x: &NestedValue) -> Option<usize> {
        match x {
            NestedValue::Tuple(t) => Some(t.len()),
            NestedValue::Seq(s) => Some(s.len()),
            _ => None,
        }
    }
    fn item(x: &NestedValue, i: usize) -> NestedValue {
        match x {
            NestedValue::Tuple(t) => t[i].clone(),
            NestedValue::Seq(s) => s.get(i),
            _ => x.clone(),
        }
    }
    match (len(a), len(b)) {
        (Some(la), Some(lb)) => {
            if matches!(op, BinaryOp::Eq | BinaryOp::Ne) {
                return (a == b) == (op == BinaryOp::Eq);
            }
            for i in 0..la.min(lb) {
                let (x, y) = (item(a, i), item(b, i));
                if x != y {
                    return compare(op, &x, &y);
                }
            }
            match op {
                BinaryOp::Lt => la < lb,
                BinaryOp::Le => la <= lb,
                BinaryOp::Gt => la > lb,
                BinaryOp::Ge => la >= lb,
                _ => false,
            }
        }
        _ => matches!(binary(op, a, b), Ok(NestedValue::Bool(true))),
    }
}

/// The total order `sort`, `min`, `max`, `argmin` and `argmax` use: numbers by value with
/// `-0.0 == 0.0` and NaN above everything (NaNs equal to each other), `False < True`, and
/// tuples and sequences lexicographically.
pub fn total_cmp(a: &NestedValue, b: &NestedValue) -> Ordering {
    use NestedValue::*;
    match (a, b) {
        (Bool(x), Bool(y)) => x.cmp(y),
        (I32(x), I32(y)) => x.cmp(y),
        (I64(x), I64(y)) => x.cmp(y),
        (F32(x), F32(y)) => float_cmp(*x, *y),
        (F64(x), F64(y)) => float_cmp(*x, *y),
        (Tuple(x), Tuple(y)) => x
            .iter()
            .zip(y.iter())
            .map(|(p, q)| total_cmp(p, q))
            .find(|o| o.is_ne())
            .unwrap_or(x.len().cmp(&y.len())),
        (Seq(x), Seq(y)) => seq_cmp(x, y),
        _ => Ordering::Equal,
    }
}

fn seq_cmp(x: &Seq, y: &Seq) -> Ordering {
    let first = match (x.elems(), y.elems()) {
        (Elems::I32(p), Elems::I32(q)) => return p.cmp(q),
        (Elems::I64(p), Elems::I64(q)) => return p.cmp(q),
        (Elems::F32(p), Elems::F32(q)) => p.iter().zip(q).map(|(a, b)| float_cmp(*a, *b)).find(|o| o.is_ne()),
        (Elems::F64(p), Elems::F64(q)) => p.iter().zip(q).map(|(a, b)| float_cmp(*a, *b)).find(|o| o.is_ne()),
        _ => (0..x.len().min(y.len())).map(|i| total_cmp(&x.get(i), &y.get(i))).find(|o| o.is_ne()),
    };
    first.unwrap_or(x.len().cmp(&y.len()))
}

/// Floats ordered with NaN last and `-0.0 == 0.0`.
pub fn float_cmp<T: PartialOrd>(a: T, b: T) -> Ordering {
    #[allow(clippy::eq_op)]
    let (a_nan, b_nan) = (a != a, b != b);
    match (a_nan, b_nan) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

pub fn unary(op: UnaryOp, v: &NestedValue) -> Result<NestedValue, Fail> {
    use NestedValue::*;
    Ok(match (op, v) {
        (UnaryOp::Neg, I32(x)) => I32(x.wrapping_neg()),
        (UnaryOp::Neg, I64(x)) => I64(x.wrapping_neg()),
        (UnaryOp::Neg, F32(x)) => F32(-x),
        (UnaryOp::Neg, F64(x)) => F64(-x),
        (UnaryOp::Not, Bool(b)) => Bool(!b),
        (UnaryOp::Invert, I32(x)) => I32(!x),
        (UnaryOp::Invert, I64(x)) => I64(!x),
        _ => return ill_typed("a unary operator on the wrong type"),
    })
}

/// `i32(x)`, `f32(x)`, `bool(x)`, ...: float to integer truncates toward zero and saturates (NaN
/// gives 0), integer to integer wraps, `bool(x)` is `x != 0`.
pub fn cast(v: &NestedValue, to: Scalar) -> Result<NestedValue, Fail> {
    use NestedValue::*;
    macro_rules! from_number {
        ($x:expr, $zero:expr) => {
            match to {
                Scalar::Bool => Bool($x != $zero),
                Scalar::I32 => I32($x as i32),
                Scalar::I64 => I64($x as i64),
                Scalar::F32 => F32($x as f32),
                Scalar::F64 => F64($x as f64),
            }
        };
    }
    Ok(match *v {
        Bool(b) => from_number!(u8::from(b), 0),
        I32(x) => from_number!(x, 0),
        I64(x) => from_number!(x, 0),
        F32(x) => from_number!(x, 0.0),
        F64(x) => from_number!(x, 0.0),
        _ => return ill_typed("a cast of a compound value"),
    })
}

/// `abs(x)`, wrapping for the most negative integer.
pub fn abs(v: &NestedValue) -> Result<NestedValue, Fail> {
    use NestedValue::*;
    Ok(match *v {
        I32(x) => I32(x.wrapping_abs()),
        I64(x) => I64(x.wrapping_abs()),
        F32(x) => F32(x.abs()),
        F64(x) => F64(x.abs()),
        _ => return ill_typed("abs of a non-number"),
    })
}

/// A float function of one argument, applied in the argument's own type.
pub fn float_unary(
    v: &NestedValue,
    f32_fn: fn(f32) -> f32,
    f64_fn: fn(f64) -> f64,
) -> Result<NestedValue, Fail> {
    match *v {
        NestedValue::F32(x) => Ok(NestedValue::F32(f32_fn(x))),
        NestedValue::F64(x) => Ok(NestedValue::F64(f64_fn(x))),
        _ => ill_typed("a float function of a non-float"),
    }
}

/// `erf` for `f32`: computed in `f64` and rounded once.
pub fn erf_f32(x: f32) -> f32 {
    erf(f64::from(x)) as f32
}

/// The error function: a Taylor series below 1.5 and a continued fraction for `erfc` above,
/// accurate to a few ulps of `f64`.
pub fn erf(x: f64) -> f64 {
    const SQRT_PI: f64 = 1.772_453_850_905_516;
    if x.is_nan() {
        return x;
    }
    let ax = x.abs();
    if ax < 1.5 {
        // erf(x) = 2x/sqrt(pi) exp(-x^2) sum_n (2x^2)^n / (1*3*...*(2n+1)), summed by Horner.
        let x2 = x * x;
        let mut acc = 0.0;
        let mut fk = 25.5;
        for _ in 0..25 {
            acc = 2.0 + x2 * acc / fk;
            fk -= 1.0;
        }
        return acc * x * (-x2).exp() / SQRT_PI;
    }
    let erfc = if ax >= 30.0 {
        0.0
    } else {
        // erfc(x) = exp(-x^2)/sqrt(pi) * 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))), by the
        // three-term recurrence of its convergents.
        let x2 = ax * ax;
        let (mut a, mut da) = (0.0, 0.5);
        let (mut p, mut p_last) = (1.0, 0.0);
        let (mut q, mut q_last) = (da + x2, 1.0);
        for _ in 0..50 {
            a += da;
            da += 2.0;
            let b = da + x2;
            let t = p;
            p = b * p - a * p_last;
            p_last = t;
            let t = q;
            q = b * q - a * q_last;
            q_last = t;
        }
        p / q * ax * (-x2).exp() / SQRT_PI
    };
    if x > 0.0 { 1.0 - erfc } else { erfc - 1.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(op: BinaryOp, x: impl Into<NestedValue>, y: impl Into<NestedValue>) -> NestedValue {
        binary(op, &x.into(), &y.into()).expect("no failure")
    }

    #[test]
    fn integer_arithmetic_wraps_and_floors() {
        use BinaryOp::*;
        assert_eq!(b(Add, i32::MAX, 1), NestedValue::I32(i32::MIN));
        assert_eq!(b(Mul, 65536, 65536), NestedValue::I32(0));
        assert_eq!(b(FloorDiv, -7, 2), NestedValue::I32(-4));
        assert_eq!(b(Mod, -7, 2), NestedValue::I32(1));
        assert_eq!(b(Mod, 7, -2), NestedValue::I32(-1));
        assert_eq!(b(FloorDiv, 7, -2), NestedValue::I32(-4));
        assert_eq!(b(FloorDiv, i32::MIN, -1), NestedValue::I32(i32::MIN));
        assert_eq!(b(Mod, i32::MIN, -1), NestedValue::I32(0));
        assert_eq!(b(Div, 7, 2), NestedValue::F32(3.5));
        assert_eq!(b(Div, 7i64, 2i64), NestedValue::F64(3.5));
        assert_eq!(b(Pow, 2, 31), NestedValue::I32(i32::MIN));
        assert_eq!(b(Pow, 3i64, 0i64), NestedValue::I64(1));
        assert_eq!(b(Pow, -2, 3), NestedValue::I32(-8));
        assert_eq!(b(Shl, 1, 40), NestedValue::I32(0));
        assert_eq!(b(Shl, 1, 31), NestedValue::I32(i32::MIN));
        assert_eq!(b(Shr, -8, 1), NestedValue::I32(-4));
        assert_eq!(b(Shr, -8, 100), NestedValue::I32(-1));
        assert_eq!(b(Shr, 8, 100), NestedValue::I32(0));
        assert_eq!(b(Shl, 1i64, 40), NestedValue::I64(1 << 40));
        assert_eq!(b(BitXor, 6, 3), NestedValue::I32(5));
        for (op, x, y, code) in [
            (FloorDiv, 1, 0, Code::DivisionByZero),
            (Mod, 1, 0, Code::DivisionByZero),
            (Div, 1, 0, Code::DivisionByZero),
            (Pow, 2, -1, Code::InvalidArgument),
            (Shl, 1, -1, Code::InvalidArgument),
        ] {
            assert_eq!(binary(op, &NestedValue::I32(x), &NestedValue::I32(y)).map_err(|e| e.code), Err(code));
        }
    }

    #[test]
    fn float_floor_division_and_modulo_follow_python() {
        use BinaryOp::*;
        // Python: 7.5 // 2.0 == 3.0, -7.5 // 2.0 == -4.0, -7.5 % 2.0 == 0.5, 7.5 % -2.0 == -0.5,
        // 5.0 % -inf == -inf, -5.0 // inf == -1.0, -0.0 % 5.0 == 0.0, 6.0 % -3.0 == -0.0.
        assert_eq!(b(FloorDiv, 7.5f32, 2.0f32), NestedValue::F32(3.0));
        assert_eq!(b(FloorDiv, -7.5f64, 2.0f64), NestedValue::F64(-4.0));
        assert_eq!(b(Mod, -7.5f64, 2.0f64), NestedValue::F64(0.5));
        assert_eq!(b(Mod, 7.5f32, -2.0f32), NestedValue::F32(-0.5));
        assert_eq!(b(Mod, 5.0f64, f64::NEG_INFINITY), NestedValue::F64(f64::NEG_INFINITY));
        assert_eq!(b(FloorDiv, -5.0f64, f64::INFINITY), NestedValue::F64(-1.0));
        let NestedValue::F64(m) = b(Mod, 6.0f64, -3.0f64) else { panic!() };
        assert!(m == 0.0 && m.is_sign_negative());
        assert_eq!(b(Div, 1.0f32, 0.0f32), NestedValue::F32(f32::INFINITY));
        let NestedValue::F32(m) = b(Mod, 1.0f32, 0.0f32) else { panic!() };
        assert!(m.is_nan());
    }

    #[test]
    fn casts_saturate_and_wrap() {
        let c = |v: NestedValue, s| cast(&v, s).expect("a scalar");
        assert_eq!(c(NestedValue::F32(-2.7), Scalar::I32), NestedValue::I32(-2));
        assert_eq!(c(NestedValue::F32(3e9), Scalar::I32), NestedValue::I32(i32::MAX));
        assert_eq!(c(NestedValue::F64(f64::NAN), Scalar::I64), NestedValue::I64(0));
        assert_eq!(c(NestedValue::I64(1 << 32 | 5), Scalar::I32), NestedValue::I32(5));
        assert_eq!(c(NestedValue::Bool(true), Scalar::F32), NestedValue::F32(1.0));
        assert_eq!(c(NestedValue::F32(-0.0), Scalar::Bool), NestedValue::Bool(false));
        assert_eq!(c(NestedValue::F32(f32::NAN), Scalar::Bool), NestedValue::Bool(true));
        assert_eq!(abs(&NestedValue::I32(i32::MIN)), Ok(NestedValue::I32(i32::MIN)));
    }

    #[test]
    fn sequences_compare_like_python_lists() {
        let s = |v: Vec<i32>| NestedValue::Seq(Seq::i32s(v));
        assert!(compare(BinaryOp::Lt, &s(vec![1, 2]), &s(vec![1, 2, 0])));
        assert!(compare(BinaryOp::Gt, &s(vec![2]), &s(vec![1, 9])));
        assert!(compare(BinaryOp::Eq, &s(vec![1, 2]), &s(vec![1, 2])));
        let t = |a: f32, b: i32| NestedValue::tuple(vec![NestedValue::F32(a), NestedValue::I32(b)]);
        assert!(compare(BinaryOp::Le, &t(1.0, 2), &t(1.0, 2)));
        assert!(!compare(BinaryOp::Lt, &t(f32::NAN, 2), &t(1.0, 3)));
        assert_eq!(total_cmp(&t(f32::NAN, 0), &t(1.0, 3)), Ordering::Greater);
        assert_eq!(total_cmp(&NestedValue::F32(-0.0), &NestedValue::F32(0.0)), Ordering::Equal);
    }

    #[test]
    fn erf_is_accurate() {
        // math.erf in Python 3.
        let cases = [
            (0.1, 0.1124629160182849),
            (0.5, 0.5204998778130465),
            (1.0, 0.8427007929497149),
            (1.4, 0.9522851197626487),
            (1.6, 0.976348383344644),
            (2.5, 0.999593047982555),
            (-3.0, -0.9999779095030014),
            (6.0, 1.0),
        ];
        for (x, want) in cases {
            let got = erf(x);
            assert!((got - want).abs() <= 4.0 * f64::EPSILON * want.abs(), "erf({x}) = {got}, want {want}");
        }
        assert_eq!(erf_f32(1.0), 0.8427008);
    }
}
