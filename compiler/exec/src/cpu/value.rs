//! Run-time values of the CPU executor: one host scalar or one shared flat vector.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::interp;
use crate::interp::ops::float_cmp;
use weft_core::types::Scalar;

/// One host scalar.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ScalarValue {
    Bool(bool),
    I32(i32),
    I64(i64),
    F32(f32),
    F64(f64),
}

impl ScalarValue {
    pub fn ty(self) -> Scalar {
        match self {
            ScalarValue::Bool(_) => Scalar::Bool,
            ScalarValue::I32(_) => Scalar::I32,
            ScalarValue::I64(_) => Scalar::I64,
            ScalarValue::F32(_) => Scalar::F32,
            ScalarValue::F64(_) => Scalar::F64,
        }
    }

    /// An integer of either width, widened to `i64`.
    pub fn as_int(self) -> Option<i64> {
        match self {
            ScalarValue::I32(i) => Some(i64::from(i)),
            ScalarValue::I64(i) => Some(i),
            _ => None,
        }
    }

    pub fn to_interp(self) -> interp::NestedValue {
        match self {
            ScalarValue::Bool(b) => interp::NestedValue::Bool(b),
            ScalarValue::I32(i) => interp::NestedValue::I32(i),
            ScalarValue::I64(i) => interp::NestedValue::I64(i),
            ScalarValue::F32(x) => interp::NestedValue::F32(x),
            ScalarValue::F64(x) => interp::NestedValue::F64(x),
        }
    }

    pub fn from_interp(v: &interp::NestedValue) -> Option<ScalarValue> {
        Some(match *v {
            interp::NestedValue::Bool(b) => ScalarValue::Bool(b),
            interp::NestedValue::I32(i) => ScalarValue::I32(i),
            interp::NestedValue::I64(i) => ScalarValue::I64(i),
            interp::NestedValue::F32(x) => ScalarValue::F32(x),
            interp::NestedValue::F64(x) => ScalarValue::F64(x),
            _ => return None,
        })
    }
}

/// A flat vector of one scalar type.
#[derive(Debug, Clone, PartialEq)]
pub enum Buffer {
    Bool(Vec<bool>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl Buffer {
    pub fn len(&self) -> usize {
        match self {
            Buffer::Bool(v) => v.len(),
            Buffer::I32(v) => v.len(),
            Buffer::I64(v) => v.len(),
            Buffer::F32(v) => v.len(),
            Buffer::F64(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn ty(&self) -> Scalar {
        match self {
            Buffer::Bool(_) => Scalar::Bool,
            Buffer::I32(_) => Scalar::I32,
            Buffer::I64(_) => Scalar::I64,
            Buffer::F32(_) => Scalar::F32,
            Buffer::F64(_) => Scalar::F64,
        }
    }

    /// Element `i`, if it exists.
    pub fn get(&self, i: usize) -> Option<ScalarValue> {
        match self {
            Buffer::Bool(v) => v.get(i).map(|&x| ScalarValue::Bool(x)),
            Buffer::I32(v) => v.get(i).map(|&x| ScalarValue::I32(x)),
            Buffer::I64(v) => v.get(i).map(|&x| ScalarValue::I64(x)),
            Buffer::F32(v) => v.get(i).map(|&x| ScalarValue::F32(x)),
            Buffer::F64(v) => v.get(i).map(|&x| ScalarValue::F64(x)),
        }
    }

    /// The scalars, all of type `ty`, as a buffer (a scalar of another type is a bug and
    /// becomes the type's zero).
    pub fn from_scalars(ty: Scalar, values: &[ScalarValue]) -> Buffer {
        macro_rules! collect {
            ($variant:ident, $zero:expr) => {
                Buffer::$variant(
                    values
                        .iter()
                        .map(|v| if let ScalarValue::$variant(x) = v { *x } else { $zero })
                        .collect(),
                )
            };
        }
        match ty {
            Scalar::Bool => collect!(Bool, false),
            Scalar::I32 => collect!(I32, 0),
            Scalar::I64 => collect!(I64, 0),
            Scalar::F32 => collect!(F32, 0.0),
            Scalar::F64 => collect!(F64, 0.0),
        }
    }

    /// Appends `other`'s elements and says whether it could: not where the types differ.
    pub fn extend_from(&mut self, other: &Buffer) -> bool {
        match (self, other) {
            (Buffer::Bool(a), Buffer::Bool(b)) => a.extend_from_slice(b),
            (Buffer::I32(a), Buffer::I32(b)) => a.extend_from_slice(b),
            (Buffer::I64(a), Buffer::I64(b)) => a.extend_from_slice(b),
            (Buffer::F32(a), Buffer::F32(b)) => a.extend_from_slice(b),
            (Buffer::F64(a), Buffer::F64(b)) => a.extend_from_slice(b),
            _ => return false,
        }
        true
    }

    /// An empty buffer of element type `ty`.
    pub fn empty(ty: Scalar) -> Buffer {
        match ty {
            Scalar::Bool => Buffer::Bool(Vec::new()),
            Scalar::I32 => Buffer::I32(Vec::new()),
            Scalar::I64 => Buffer::I64(Vec::new()),
            Scalar::F32 => Buffer::F32(Vec::new()),
            Scalar::F64 => Buffer::F64(Vec::new()),
        }
    }
}

/// What a variable holds at run time. Vectors are shared: copying a variable never copies data.
#[derive(Debug, Clone, PartialEq)]
pub enum FlatValue {
    Scalar(ScalarValue),
    Vector(Arc<Buffer>),
    /// An `i32` vector that is an arithmetic progression, not written out: the strided layout's
    /// segment descriptors (`cpu::progression`).
    Progression(super::progression::Progression),
}

impl FlatValue {
    pub fn vector(buffer: Buffer) -> FlatValue {
        FlatValue::Vector(Arc::new(buffer))
    }

    pub fn i32s(v: Vec<i32>) -> FlatValue {
        FlatValue::vector(Buffer::I32(v))
    }

    pub fn f32s(v: Vec<f32>) -> FlatValue {
        FlatValue::vector(Buffer::F32(v))
    }

    pub fn bools(v: Vec<bool>) -> FlatValue {
        FlatValue::vector(Buffer::Bool(v))
    }

    pub fn ty(&self) -> Scalar {
        match self {
            FlatValue::Scalar(s) => s.ty(),
            FlatValue::Vector(b) => b.ty(),
            FlatValue::Progression(_) => Scalar::I32,
        }
    }

    /// The number of elements of a vector; `None` for a scalar.
    pub fn vector_len(&self) -> Option<usize> {
        match self {
            FlatValue::Scalar(_) => None,
            FlatValue::Vector(b) => Some(b.len()),
            FlatValue::Progression(p) => Some(p.len),
        }
    }

    pub fn as_scalar(&self) -> Option<ScalarValue> {
        match self {
            FlatValue::Scalar(s) => Some(*s),
            _ => None,
        }
    }

    /// The elements of a vector; `None` for a scalar or a progression not written out.
    pub fn as_buffer(&self) -> Option<&Buffer> {
        match self {
            FlatValue::Vector(b) => Some(b),
            _ => None,
        }
    }

    /// The value with a progression written out as a vector: what every consumer but
    /// `progression::run_op` reads.
    pub fn materialized(self) -> FlatValue {
        match self {
            FlatValue::Progression(p) => p.materialize(),
            other => other,
        }
    }
}

/// The element types of vectors, with what the generic kernels need of them.
pub trait Elem: Copy + Send + Sync + PartialEq + std::fmt::Debug + 'static {
    const TY: Scalar;
    fn wrap(v: Vec<Self>) -> Buffer;
    fn slice(b: &Buffer) -> Option<&[Self]>;
    fn scalar(self) -> ScalarValue;
    fn from_scalar(s: ScalarValue) -> Option<Self>;
    /// The interpreter's total order (`ops::total_cmp`): NaN last, `-0.0 == 0.0`.
    fn order(a: Self, b: Self) -> Ordering;
    fn zero() -> Self;
    fn one() -> Self;
    /// The identity of `and` (`true`, all bits set).
    fn all_ones() -> Self;
    fn add(a: Self, b: Self) -> Self;
    fn mul(a: Self, b: Self) -> Self;
    fn and(a: Self, b: Self) -> Self;
    fn or(a: Self, b: Self) -> Self;
    fn xor(a: Self, b: Self) -> Self;
    /// Whether `add`/`mul` and `and`/`or`/`xor` mean anything for this type.
    const ARITH: bool;
    const BITWISE: bool;
}

macro_rules! elem_common {
    ($t:ty, $variant:ident) => {
        const TY: Scalar = Scalar::$variant;
        fn wrap(v: Vec<Self>) -> Buffer {
            Buffer::$variant(v)
        }
        fn slice(b: &Buffer) -> Option<&[Self]> {
            match b {
                Buffer::$variant(v) => Some(v),
                _ => None,
            }
        }
        fn scalar(self) -> ScalarValue {
            ScalarValue::$variant(self)
        }
        fn from_scalar(s: ScalarValue) -> Option<Self> {
            match s {
                ScalarValue::$variant(x) => Some(x),
                _ => None,
            }
        }
    };
}

macro_rules! elem_int {
    ($t:ty, $variant:ident) => {
        impl Elem for $t {
            elem_common!($t, $variant);
            const ARITH: bool = true;
            const BITWISE: bool = true;
            #[inline]
            fn order(a: Self, b: Self) -> Ordering {
                a.cmp(&b)
            }
            fn zero() -> Self {
                0
            }
            fn one() -> Self {
                1
            }
            fn all_ones() -> Self {
                -1
            }
            #[inline]
            fn add(a: Self, b: Self) -> Self {
                a.wrapping_add(b)
            }
            #[inline]
            fn mul(a: Self, b: Self) -> Self {
                a.wrapping_mul(b)
            }
            #[inline]
            fn and(a: Self, b: Self) -> Self {
                a & b
            }
            #[inline]
            fn or(a: Self, b: Self) -> Self {
                a | b
            }
            #[inline]
            fn xor(a: Self, b: Self) -> Self {
                a ^ b
            }
        }
    };
}

macro_rules! elem_float {
    ($t:ty, $variant:ident) => {
        impl Elem for $t {
            elem_common!($t, $variant);
            const ARITH: bool = true;
            const BITWISE: bool = false;
            #[inline]
            fn order(a: Self, b: Self) -> Ordering {
                float_cmp(a, b)
            }
            fn zero() -> Self {
                0.0
            }
            fn one() -> Self {
                1.0
            }
            fn all_ones() -> Self {
                0.0
            }
            #[inline]
            fn add(a: Self, b: Self) -> Self {
                a + b
            }
            #[inline]
            fn mul(a: Self, b: Self) -> Self {
                a * b
            }
            fn and(a: Self, _: Self) -> Self {
                a
            }
            fn or(a: Self, _: Self) -> Self {
                a
            }
            fn xor(a: Self, _: Self) -> Self {
                a
            }
        }
    };
}

elem_int!(i32, I32);
elem_int!(i64, I64);
elem_float!(f32, F32);
elem_float!(f64, F64);

impl Elem for bool {
    elem_common!(bool, Bool);
    const ARITH: bool = false;
    const BITWISE: bool = true;
    #[inline]
    fn order(a: Self, b: Self) -> Ordering {
        a.cmp(&b)
    }
    fn zero() -> Self {
        false
    }
    fn one() -> Self {
        true
    }
    fn all_ones() -> Self {
        true
    }
    fn add(a: Self, _: Self) -> Self {
        a
    }
    fn mul(a: Self, _: Self) -> Self {
        a
    }
    #[inline]
    fn and(a: Self, b: Self) -> Self {
        a & b
    }
    #[inline]
    fn or(a: Self, b: Self) -> Self {
        a | b
    }
    #[inline]
    fn xor(a: Self, b: Self) -> Self {
        a ^ b
    }
}

/// Runs `$body` with `$xs` bound to the typed slice of a buffer and `$T` to its element type.
macro_rules! each_buffer {
    ($buf:expr, $xs:ident, $T:ident, $body:expr) => {
        match $buf {
            $crate::cpu::value::Buffer::Bool($xs) => {
                #[allow(dead_code)]
                type $T = bool;
                $body
            }
            $crate::cpu::value::Buffer::I32($xs) => {
                #[allow(dead_code)]
                type $T = i32;
                $body
            }
            $crate::cpu::value::Buffer::I64($xs) => {
                #[allow(dead_code)]
                type $T = i64;
                $body
            }
            $crate::cpu::value::Buffer::F32($xs) => {
                #[allow(dead_code)]
                type $T = f32;
                $body
            }
            $crate::cpu::value::Buffer::F64($xs) => {
                #[allow(dead_code)]
                type $T = f64;
                $body
            }
        }
    };
}

/// Runs `$body` with `$T` bound to the Rust type of a `types::Scalar`.
macro_rules! each_scalar_type {
    ($ty:expr, $T:ident, $body:expr) => {
        match $ty {
            weft_core::types::Scalar::Bool => {
                type $T = bool;
                $body
            }
            weft_core::types::Scalar::I32 => {
                type $T = i32;
                $body
            }
            weft_core::types::Scalar::I64 => {
                type $T = i64;
                $body
            }
            weft_core::types::Scalar::F32 => {
                type $T = f32;
                $body
            }
            weft_core::types::Scalar::F64 => {
                type $T = f64;
                $body
            }
        }
    };
}

pub(crate) use each_buffer;
pub(crate) use each_scalar_type;
