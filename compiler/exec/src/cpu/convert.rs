//! Interpreter values to and from the IR's layout of a core value (`ir::layout(ty, false)`).
//!
//! Values going in are laid out compactly (offset 0, segments one after another); values
//! coming out may have segments anywhere in their element collection, in any order: segment
//! `s` is always read at `offsets[s] .. offsets[s] + lengths[s]`.

use std::sync::Arc;

use crate::interp::value::{Elems, Seq, SeqBuilder};
use crate::interp::{self};
use weft_core::types::{Scalar, Type};

use super::progression::Progression;
use super::value::{Buffer, FlatValue, ScalarValue};

/// The IR variables of a single (host) value of type `ty`, in the order `layout(ty, false)`
/// lists them.
pub fn value_to_vars(ty: &Type, value: &interp::NestedValue) -> Vec<FlatValue> {
    let mut out = Vec::new();
    push_single(ty, value, &mut out);
    out
}

fn push_single(ty: &Type, value: &interp::NestedValue, out: &mut Vec<FlatValue>) {
    match ty {
        Type::Scalar(s) => {
            out.push(FlatValue::Scalar(ScalarValue::from_interp(value).unwrap_or_else(|| zero(*s))))
        }
        Type::Tuple(items) => {
            let fields = value.as_tuple().unwrap_or(&[]);
            for (k, t) in items.iter().enumerate() {
                match fields.get(k) {
                    Some(v) => push_single(t, v, out),
                    None => push_single(t, &interp::NestedValue::unit(), out),
                }
            }
        }
        Type::Seq(elem) => {
            let seq = value.as_seq().cloned().unwrap_or_else(Seq::empty);
            out.push(FlatValue::Scalar(ScalarValue::I32(0)));
            out.push(FlatValue::Scalar(ScalarValue::I32(seq.len() as i32)));
            push_many(elem, &[seq], out);
        }
        Type::Var(_) | Type::Func(..) => {}
    }
}

fn zero(s: Scalar) -> ScalarValue {
    match s {
        Scalar::Bool => ScalarValue::Bool(false),
        Scalar::I32 => ScalarValue::I32(0),
        Scalar::I64 => ScalarValue::I64(0),
        Scalar::F32 => ScalarValue::F32(0.0),
        Scalar::F64 => ScalarValue::F64(0.0),
    }
}

/// Pushes the collection (`layout(ty, true)`) of the elements of `parts`, one after another.
fn push_many(ty: &Type, parts: &[Seq], out: &mut Vec<FlatValue>) {
    match ty {
        Type::Scalar(s) => out.push(FlatValue::vector(scalars(*s, parts))),
        Type::Tuple(items) => {
            for (k, t) in items.iter().enumerate() {
                let mut field = SeqBuilder::new();
                for part in parts {
                    for v in part.iter() {
                        match v.as_tuple().and_then(|f| f.get(k)) {
                            Some(x) => field.push(x.clone()),
                            None => field.push(interp::NestedValue::unit()),
                        }
                    }
                }
                push_many(t, &[field.finish()], out);
            }
        }
        Type::Seq(elem) => {
            let mut offsets = Vec::new();
            let mut lengths = Vec::new();
            let mut inner = Vec::new();
            let mut at = 0i32;
            for part in parts {
                for v in part.iter() {
                    let s = v.as_seq().cloned().unwrap_or_else(Seq::empty);
                    offsets.push(at);
                    lengths.push(s.len() as i32);
                    at = at.wrapping_add(s.len() as i32);
                    inner.push(s);
                }
            }
            out.extend(descriptor(offsets, lengths));
            push_many(elem, &inner, out);
        }
        Type::Var(_) | Type::Func(..) => {}
    }
}

/// A segment descriptor, strided (two progressions) when every segment has one width.
fn descriptor(offsets: Vec<i32>, lengths: Vec<i32>) -> [FlatValue; 2] {
    let width = lengths.first().copied().unwrap_or(0);
    if lengths.len() > 1 && lengths.iter().all(|&l| l == width) {
        let len = lengths.len();
        return [
            FlatValue::Progression(Progression { start: 0, step: width, len }),
            FlatValue::Progression(Progression { start: width, step: 0, len }),
        ];
    }
    [FlatValue::i32s(offsets), FlatValue::i32s(lengths)]
}

/// The scalars of `parts` in one buffer of type `s`, copying unboxed slices in one go.
fn scalars(s: Scalar, parts: &[Seq]) -> Buffer {
    macro_rules! collect {
        ($variant:ident, $t:ty, $zero:expr) => {{
            let mut v: Vec<$t> = Vec::with_capacity(parts.iter().map(Seq::len).sum());
            for part in parts {
                match part.elems() {
                    Elems::$variant(xs) => v.extend_from_slice(xs),
                    _ => v.extend(part.iter().map(|x| match x {
                        interp::NestedValue::$variant(y) => y,
                        _ => $zero,
                    })),
                }
            }
            Buffer::$variant(v)
        }};
    }
    match s {
        Scalar::Bool => collect!(Bool, bool, false),
        Scalar::I32 => collect!(I32, i32, 0),
        Scalar::I64 => collect!(I64, i64, 0),
        Scalar::F32 => collect!(F32, f32, 0.0),
        Scalar::F64 => collect!(F64, f64, 0.0),
    }
}

/// The interpreter value of type `ty` that the IR variables `vars` hold (laid out as
/// `layout(ty, false)`). Malformed variables give the unit value; `try_vars_to_value` says why.
pub fn vars_to_value(ty: &Type, vars: &[FlatValue]) -> interp::NestedValue {
    try_vars_to_value(ty, vars).unwrap_or_else(|_| interp::NestedValue::unit())
}

/// `vars_to_value`, or why the variables do not have the layout of `ty`.
pub fn try_vars_to_value(ty: &Type, vars: &[FlatValue]) -> Result<interp::NestedValue, String> {
    let mut cursor = vars.iter();
    let v = read_single(ty, &mut cursor)?;
    if cursor.next().is_some() {
        return Err(format!("more variables than the layout of {ty} has"));
    }
    Ok(v)
}

type Cursor<'a> = std::slice::Iter<'a, FlatValue>;

fn next<'a>(cursor: &mut Cursor<'a>, ty: &Type) -> Result<&'a FlatValue, String> {
    cursor.next().ok_or_else(|| format!("fewer variables than the layout of {ty} has"))
}

fn read_single(ty: &Type, cursor: &mut Cursor<'_>) -> Result<interp::NestedValue, String> {
    match ty {
        Type::Scalar(_) => match next(cursor, ty)? {
            FlatValue::Scalar(s) => Ok(s.to_interp()),
            FlatValue::Vector(_) | FlatValue::Progression(_) => {
                Err(format!("a vector where a scalar of {ty} is expected"))
            }
        },
        Type::Tuple(items) => {
            let fields = items.iter().map(|t| read_single(t, cursor)).collect::<Result<Vec<_>, _>>()?;
            Ok(interp::NestedValue::tuple(fields))
        }
        Type::Seq(elem) => {
            let offset = scalar_index(next(cursor, ty)?)?;
            let len = scalar_index(next(cursor, ty)?)?;
            let coll = read_many(elem, cursor)?;
            Ok(interp::NestedValue::Seq(coll.seq(offset, len)?))
        }
        Type::Var(_) | Type::Func(..) => Ok(interp::NestedValue::unit()),
    }
}

fn scalar_index(v: &FlatValue) -> Result<usize, String> {
    match v.as_scalar().and_then(ScalarValue::as_int) {
        Some(i) => usize::try_from(i).map_err(|_| format!("a negative offset or length {i}")),
        None => Err("an offset or length that is not an integer scalar".into()),
    }
}

/// A collection of values, as the IR lays it out.
enum Coll {
    Scalars(Arc<Buffer>),
    Tuples(Vec<Coll>),
    Seqs { offsets: Arc<Buffer>, lengths: Arc<Buffer>, elems: Box<Coll> },
    Units,
}

fn read_many(ty: &Type, cursor: &mut Cursor<'_>) -> Result<Coll, String> {
    let vector = |v: &FlatValue| match v {
        FlatValue::Vector(b) => Ok(b.clone()),
        FlatValue::Progression(p) => match p.materialize() {
            FlatValue::Vector(b) => Ok(b),
            _ => Err(format!("a progression that is not a vector, for {ty}")),
        },
        FlatValue::Scalar(_) => Err(format!("a scalar where a collection of {ty} is expected")),
    };
    Ok(match ty {
        Type::Scalar(_) => Coll::Scalars(vector(next(cursor, ty)?)?),
        Type::Tuple(items) => {
            Coll::Tuples(items.iter().map(|t| read_many(t, cursor)).collect::<Result<_, _>>()?)
        }
        Type::Seq(elem) => {
            let offsets = vector(next(cursor, ty)?)?;
            let lengths = vector(next(cursor, ty)?)?;
            Coll::Seqs { offsets, lengths, elems: Box::new(read_many(elem, cursor)?) }
        }
        Type::Var(_) | Type::Func(..) => Coll::Units,
    })
}

impl Coll {
    /// Elements `start .. start + len` as an interpreter sequence.
    fn seq(&self, start: usize, len: usize) -> Result<Seq, String> {
        let end = start.checked_add(len).ok_or("a segment past the end")?;
        let range = start..end;
        let missing = || format!("a segment {start}..{end} outside its collection");
        Ok(match self {
            Coll::Scalars(b) => match &**b {
                Buffer::Bool(v) => Seq::bools(v.get(range).ok_or_else(missing)?.to_vec()),
                Buffer::I32(v) => Seq::i32s(v.get(range).ok_or_else(missing)?.to_vec()),
                Buffer::I64(v) => Seq::i64s(v.get(range).ok_or_else(missing)?.to_vec()),
                Buffer::F32(v) => Seq::f32s(v.get(range).ok_or_else(missing)?.to_vec()),
                Buffer::F64(v) => Seq::f64s(v.get(range).ok_or_else(missing)?.to_vec()),
            },
            _ => Seq::from_values(range.map(|i| self.get(i)).collect::<Result<Vec<_>, _>>()?),
        })
    }

    /// Element `i`.
    fn get(&self, i: usize) -> Result<interp::NestedValue, String> {
        let missing = || format!("element {i} outside its collection");
        match self {
            Coll::Scalars(b) => b.get(i).map(ScalarValue::to_interp).ok_or_else(missing),
            Coll::Tuples(fields) => {
                Ok(interp::NestedValue::tuple(fields.iter().map(|f| f.get(i)).collect::<Result<_, _>>()?))
            }
            Coll::Seqs { offsets, lengths, elems } => {
                let o = offsets.get(i).and_then(ScalarValue::as_int).ok_or_else(missing)?;
                let l = lengths.get(i).and_then(ScalarValue::as_int).ok_or_else(missing)?;
                let (o, l) =
                    (usize::try_from(o).map_err(|_| missing())?, usize::try_from(l).map_err(|_| missing())?);
                Ok(interp::NestedValue::Seq(elems.seq(o, l)?))
            }
            Coll::Units => Ok(interp::NestedValue::unit()),
        }
    }
}
