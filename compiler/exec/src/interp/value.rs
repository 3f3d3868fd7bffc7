//! The interpreter's run-time values: scalars, tuples and sequences.
//!
//! Clones are cheap (at most a reference-count increment), because the interpreter copies values
//! into and out of environments all the time. A sequence is an immutable, shared buffer plus a
//! window (`start`, `len`) into it, so a slice `xs[i:j]`, a row of a loaded matrix or a segment of
//! `partition` shares its parent's buffer instead of copying it. Sequences of scalars are stored
//! unboxed (`[i32]` as an `Arc<[i32]>`), which keeps `range`, `random_f32`, `load_npy` and the
//! arithmetic over them fast; sequences of tuples or sequences hold `NestedValue`s.

use std::sync::Arc;

use weft_core::types::Scalar;

/// A Weft value. Functions are not values at run time: every call is resolved statically.
#[derive(Debug, Clone)]
pub enum NestedValue {
    Bool(bool),
    I32(i32),
    I64(i64),
    F32(f32),
    F64(f64),
    /// A tuple; the empty tuple is the unit value `()` that statements give.
    Tuple(Arc<[NestedValue]>),
    Seq(Seq),
}

impl NestedValue {
    /// The unit value `()`.
    pub fn unit() -> NestedValue {
        NestedValue::Tuple(Arc::from(Vec::new()))
    }

    pub fn tuple(items: Vec<NestedValue>) -> NestedValue {
        NestedValue::Tuple(Arc::from(items))
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            NestedValue::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// An integer of either width, widened to `i64`.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            NestedValue::I32(i) => Some(i64::from(*i)),
            NestedValue::I64(i) => Some(*i),
            _ => None,
        }
    }

    pub fn as_seq(&self) -> Option<&Seq> {
        match self {
            NestedValue::Seq(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_tuple(&self) -> Option<&[NestedValue]> {
        match self {
            NestedValue::Tuple(items) => Some(items),
            _ => None,
        }
    }

    /// The scalar type of a scalar value.
    pub fn scalar(&self) -> Option<Scalar> {
        match self {
            NestedValue::Bool(_) => Some(Scalar::Bool),
            NestedValue::I32(_) => Some(Scalar::I32),
            NestedValue::I64(_) => Some(Scalar::I64),
            NestedValue::F32(_) => Some(Scalar::F32),
            NestedValue::F64(_) => Some(Scalar::F64),
            NestedValue::Tuple(_) | NestedValue::Seq(_) => None,
        }
    }
}

/// Structural equality with IEEE-754 float comparison, as Weft's `==` (so `nan != nan`, and
/// `[nan] != [nan]`, and `-0.0 == 0.0`).
impl PartialEq for NestedValue {
    fn eq(&self, other: &NestedValue) -> bool {
        match (self, other) {
            (NestedValue::Bool(a), NestedValue::Bool(b)) => a == b,
            (NestedValue::I32(a), NestedValue::I32(b)) => a == b,
            (NestedValue::I64(a), NestedValue::I64(b)) => a == b,
            (NestedValue::F32(a), NestedValue::F32(b)) => a == b,
            (NestedValue::F64(a), NestedValue::F64(b)) => a == b,
            (NestedValue::Tuple(a), NestedValue::Tuple(b)) => {
                a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| x == y)
            }
            (NestedValue::Seq(a), NestedValue::Seq(b)) => a == b,
            _ => false,
        }
    }
}

impl From<bool> for NestedValue {
    fn from(b: bool) -> NestedValue {
        NestedValue::Bool(b)
    }
}

impl From<i32> for NestedValue {
    fn from(i: i32) -> NestedValue {
        NestedValue::I32(i)
    }
}

impl From<i64> for NestedValue {
    fn from(i: i64) -> NestedValue {
        NestedValue::I64(i)
    }
}

impl From<f32> for NestedValue {
    fn from(x: f32) -> NestedValue {
        NestedValue::F32(x)
    }
}

impl From<f64> for NestedValue {
    fn from(x: f64) -> NestedValue {
        NestedValue::F64(x)
    }
}

impl From<Seq> for NestedValue {
    fn from(s: Seq) -> NestedValue {
        NestedValue::Seq(s)
    }
}

/// The shared buffer behind a sequence.
#[derive(Debug, Clone)]
pub enum Data {
    Bool(Arc<[bool]>),
    I32(Arc<[i32]>),
    I64(Arc<[i64]>),
    F32(Arc<[f32]>),
    F64(Arc<[f64]>),
    /// Tuples, sequences, or (for a sequence built without a known element type) scalars.
    Values(Arc<[NestedValue]>),
}

/// A borrowed view of a sequence's elements, for loops that want the unboxed slice.
#[derive(Debug, Clone, Copy)]
pub enum Elems<'a> {
    Bool(&'a [bool]),
    I32(&'a [i32]),
    I64(&'a [i64]),
    F32(&'a [f32]),
    F64(&'a [f64]),
    Values(&'a [NestedValue]),
}

/// An immutable sequence: a window into a shared buffer.
#[derive(Debug, Clone)]
pub struct Seq {
    data: Data,
    start: usize,
    len: usize,
}

impl Seq {
    fn whole(data: Data) -> Seq {
        let len = match &data {
            Data::Bool(d) => d.len(),
            Data::I32(d) => d.len(),
            Data::I64(d) => d.len(),
            Data::F32(d) => d.len(),
            Data::F64(d) => d.len(),
            Data::Values(d) => d.len(),
        };
        Seq { data, start: 0, len }
    }

    pub fn empty() -> Seq {
        Seq::whole(Data::Values(Arc::from(Vec::new())))
    }

    pub fn from_data(data: Data) -> Seq {
        Seq::whole(data)
    }

    pub fn bools(items: Vec<bool>) -> Seq {
        Seq::whole(Data::Bool(items.into()))
    }

    pub fn i32s(items: Vec<i32>) -> Seq {
        Seq::whole(Data::I32(items.into()))
    }

    pub fn i64s(items: Vec<i64>) -> Seq {
        Seq::whole(Data::I64(items.into()))
    }

    pub fn f32s(items: Vec<f32>) -> Seq {
        Seq::whole(Data::F32(items.into()))
    }

    pub fn f64s(items: Vec<f64>) -> Seq {
        Seq::whole(Data::F64(items.into()))
    }

    /// A sequence of the given values, stored unboxed when they are scalars of one type.
    pub fn from_values(items: Vec<NestedValue>) -> Seq {
        let mut builder = SeqBuilder::with_capacity(items.len());
        for item in items {
            builder.push(item);
        }
        builder.finish()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn elems(&self) -> Elems<'_> {
        let range = self.start..self.start + self.len;
        match &self.data {
            Data::Bool(d) => Elems::Bool(&d[range]),
            Data::I32(d) => Elems::I32(&d[range]),
            Data::I64(d) => Elems::I64(&d[range]),
            Data::F32(d) => Elems::F32(&d[range]),
            Data::F64(d) => Elems::F64(&d[range]),
            Data::Values(d) => Elems::Values(&d[range]),
        }
    }

    /// Element `i`; `i < self.len()` is the caller's to check.
    pub fn get(&self, i: usize) -> NestedValue {
        let i = self.start + i;
        match &self.data {
            Data::Bool(d) => NestedValue::Bool(d[i]),
            Data::I32(d) => NestedValue::I32(d[i]),
            Data::I64(d) => NestedValue::I64(d[i]),
            Data::F32(d) => NestedValue::F32(d[i]),
            Data::F64(d) => NestedValue::F64(d[i]),
            Data::Values(d) => d[i].clone(),
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = NestedValue> + '_ {
        (0..self.len).map(|i| self.get(i))
    }

    /// The elements `start .. start + len`, sharing this sequence's buffer; the range is the
    /// caller's to check.
    pub fn window(&self, start: usize, len: usize) -> Seq {
        debug_assert!(start + len <= self.len);
        Seq { data: self.data.clone(), start: self.start + start, len }
    }
}

/// Element-wise IEEE equality, independent of the storage.
impl PartialEq for Seq {
    fn eq(&self, other: &Seq) -> bool {
        if self.len != other.len {
            return false;
        }
        match (self.elems(), other.elems()) {
            (Elems::Bool(a), Elems::Bool(b)) => a == b,
            (Elems::I32(a), Elems::I32(b)) => a == b,
            (Elems::I64(a), Elems::I64(b)) => a == b,
            (Elems::F32(a), Elems::F32(b)) => a == b,
            (Elems::F64(a), Elems::F64(b)) => a == b,
            _ => (0..self.len).all(|i| self.get(i) == other.get(i)),
        }
    }
}

/// Builds a sequence element by element, choosing the unboxed storage from the first element.
#[derive(Debug)]
pub enum SeqBuilder {
    Empty(usize),
    Bool(Vec<bool>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    Values(Vec<NestedValue>),
}

impl SeqBuilder {
    pub fn new() -> SeqBuilder {
        SeqBuilder::Empty(0)
    }

    /// `capacity` is a hint, reserved once the storage is known.
    pub fn with_capacity(capacity: usize) -> SeqBuilder {
        SeqBuilder::Empty(capacity)
    }

    pub fn push(&mut self, value: NestedValue) {
        match (&mut *self, value) {
            (SeqBuilder::Bool(v), NestedValue::Bool(x)) => v.push(x),
            (SeqBuilder::I32(v), NestedValue::I32(x)) => v.push(x),
            (SeqBuilder::I64(v), NestedValue::I64(x)) => v.push(x),
            (SeqBuilder::F32(v), NestedValue::F32(x)) => v.push(x),
            (SeqBuilder::F64(v), NestedValue::F64(x)) => v.push(x),
            (SeqBuilder::Values(v), x) => v.push(x),
            (SeqBuilder::Empty(cap), x) => {
                let cap = (*cap).max(1);
                *self = match x {
                    NestedValue::Bool(x) => SeqBuilder::Bool(with_first(cap, x)),
                    NestedValue::I32(x) => SeqBuilder::I32(with_first(cap, x)),
                    NestedValue::I64(x) => SeqBuilder::I64(with_first(cap, x)),
                    NestedValue::F32(x) => SeqBuilder::F32(with_first(cap, x)),
                    NestedValue::F64(x) => SeqBuilder::F64(with_first(cap, x)),
                    x => SeqBuilder::Values(with_first(cap, x)),
                }
            }
            // A value of another type than the first: a well-typed program never builds one, but
            // fall back to boxed storage rather than fail.
            (_, x) => {
                let mut values = self.drain_values();
                values.push(x);
                *self = SeqBuilder::Values(values);
            }
        }
    }

    /// Appends every element of `seq`, copying unboxed slices in one go where the storage
    /// agrees.
    pub fn extend_from(&mut self, seq: &Seq) {
        if seq.is_empty() {
            return;
        }
        if let SeqBuilder::Empty(cap) = self {
            let cap = (*cap).max(seq.len());
            *self = match seq.elems() {
                Elems::Bool(_) => SeqBuilder::Bool(Vec::with_capacity(cap)),
                Elems::I32(_) => SeqBuilder::I32(Vec::with_capacity(cap)),
                Elems::I64(_) => SeqBuilder::I64(Vec::with_capacity(cap)),
                Elems::F32(_) => SeqBuilder::F32(Vec::with_capacity(cap)),
                Elems::F64(_) => SeqBuilder::F64(Vec::with_capacity(cap)),
                Elems::Values(_) => SeqBuilder::Values(Vec::with_capacity(cap)),
            };
        }
        match (&mut *self, seq.elems()) {
            (SeqBuilder::Bool(v), Elems::Bool(s)) => v.extend_from_slice(s),
            (SeqBuilder::I32(v), Elems::I32(s)) => v.extend_from_slice(s),
            (SeqBuilder::I64(v), Elems::I64(s)) => v.extend_from_slice(s),
            (SeqBuilder::F32(v), Elems::F32(s)) => v.extend_from_slice(s),
            (SeqBuilder::F64(v), Elems::F64(s)) => v.extend_from_slice(s),
            (SeqBuilder::Values(v), Elems::Values(s)) => v.extend_from_slice(s),
            _ => seq.iter().for_each(|x| self.push(x)),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            SeqBuilder::Empty(_) => 0,
            SeqBuilder::Bool(v) => v.len(),
            SeqBuilder::I32(v) => v.len(),
            SeqBuilder::I64(v) => v.len(),
            SeqBuilder::F32(v) => v.len(),
            SeqBuilder::F64(v) => v.len(),
            SeqBuilder::Values(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn drain_values(&mut self) -> Vec<NestedValue> {
        fn boxed<T: Copy + Into<NestedValue>>(v: &[T]) -> Vec<NestedValue> {
            v.iter().map(|&x| x.into()).collect()
        }
        match std::mem::replace(self, SeqBuilder::Empty(0)) {
            SeqBuilder::Empty(_) => Vec::new(),
            SeqBuilder::Bool(v) => boxed(&v),
            SeqBuilder::I32(v) => boxed(&v),
            SeqBuilder::I64(v) => boxed(&v),
            SeqBuilder::F32(v) => boxed(&v),
            SeqBuilder::F64(v) => boxed(&v),
            SeqBuilder::Values(v) => v,
        }
    }

    pub fn finish(self) -> Seq {
        match self {
            SeqBuilder::Empty(_) => Seq::empty(),
            SeqBuilder::Bool(v) => Seq::bools(v),
            SeqBuilder::I32(v) => Seq::i32s(v),
            SeqBuilder::I64(v) => Seq::i64s(v),
            SeqBuilder::F32(v) => Seq::f32s(v),
            SeqBuilder::F64(v) => Seq::f64s(v),
            SeqBuilder::Values(v) => Seq::from_data(Data::Values(v.into())),
        }
    }
}

impl Default for SeqBuilder {
    fn default() -> SeqBuilder {
        SeqBuilder::new()
    }
}

fn with_first<T>(capacity: usize, first: T) -> Vec<T> {
    let mut v = Vec::with_capacity(capacity);
    v.push(first);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_unboxes_scalars_and_windows_share_the_buffer() {
        let s = Seq::from_values(vec![NestedValue::I32(1), NestedValue::I32(2), NestedValue::I32(3)]);
        assert!(matches!(s.elems(), Elems::I32([1, 2, 3])));
        let w = s.window(1, 2);
        assert!(matches!(w.elems(), Elems::I32([2, 3])));
        assert_eq!(w.get(0), NestedValue::I32(2));
        let boxed = Seq::from_data(Data::Values(vec![NestedValue::I32(2), NestedValue::I32(3)].into()));
        assert_eq!(w, boxed);
        assert_ne!(NestedValue::F32(f32::NAN), NestedValue::F32(f32::NAN));
    }
}
