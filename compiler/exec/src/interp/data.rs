//! Data the program does not compute from its own values: `random_f32` and `random_i32` (a
//! documented hash of `(seed, i)`, identical on every executor), and the parsers behind
//! `load_npy` and `load_csv`. The file bytes come from the front end's `Host`; this module only
//! decodes them.

use std::sync::Arc;

use weft_core::types::{Scalar, Type};
use weft_syntax::diagnostics::Code;

use super::ops::{Fail, fail};
use super::value::{Data, NestedValue, Seq, SeqBuilder};

/// The "lowbias32" integer hash of docs/language.md, "Random data".
pub fn mix32(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7FEB_352D);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846C_A68B);
    x ^= x >> 16;
    x
}

/// The 32 random bits of element `i` for `seed`.
pub fn bits(seed: i32, i: u32) -> u32 {
    mix32(mix32(seed as u32) ^ i)
}

/// `random_f32(n, seed)`: element `i` is `(bits(seed, i) >> 8) * 2^-24`, in `[0, 1)`.
pub fn random_f32(n: usize, seed: i32) -> Vec<f32> {
    (0..n).map(|i| (bits(seed, i as u32) >> 8) as f32 * (1.0 / 16_777_216.0)).collect()
}

/// `random_i32(n, lo, hi, seed)`: element `i` is `lo + bits(seed, i) % (hi - lo)`, computed
/// exactly; `lo < hi` is the caller's to check.
pub fn random_i32(n: usize, lo: i32, hi: i32, seed: i32) -> Vec<i32> {
    let width = (i64::from(hi) - i64::from(lo)) as u64;
    (0..n).map(|i| (i64::from(lo) + (u64::from(bits(seed, i as u32)) % width) as i64) as i32).collect()
}

/// The element dtypes `load_npy` accepts.
fn npy_dtype(descr: &str) -> Option<(Scalar, usize)> {
    Some(match descr {
        "<i4" => (Scalar::I32, 4),
        "<i8" => (Scalar::I64, 8),
        "<f4" => (Scalar::F32, 4),
        "<f8" => (Scalar::F64, 8),
        "|b1" | "<b1" => (Scalar::Bool, 1),
        _ => return None,
    })
}

/// The `k` and scalar of a `k`-deep sequence type `[[...[s]...]]`.
fn seq_depth(ty: &Type) -> Option<(usize, Scalar)> {
    match ty {
        Type::Seq(elem) => match elem.as_ref() {
            Type::Scalar(s) => Some((1, *s)),
            inner => seq_depth(inner).map(|(k, s)| (k + 1, s)),
        },
        _ => None,
    }
}

/// The type a `k`-dimensional array of `s` loads as: `[[s]]` for `k == 2`.
fn nested_type(k: usize, s: Scalar) -> Type {
    (0..k).fold(Type::Scalar(s), |t, _| Type::seq(t))
}

/// Decodes a `.npy` file (format versions 1 to 3, C order) as the nested sequence `expected`.
pub fn parse_npy(path: &str, bytes: &[u8], expected: &Type) -> Result<NestedValue, Fail> {
    let bad = |why: &str| fail(Code::DataLoadError, format!("`{path}` is not a valid .npy file: {why}"));
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return bad("it does not start with the .npy magic string");
    }
    let (header_len, header_start) = match bytes[6] {
        1 => (usize::from(u16::from_le_bytes([bytes[8], bytes[9]])), 10usize),
        2 | 3 if bytes.len() >= 12 => {
            (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12)
        }
        v => return bad(&format!("unsupported format version {v}")),
    };
    let Some(header) = bytes.get(header_start..header_start.saturating_add(header_len)) else {
        return bad("the header is truncated");
    };
    let header = String::from_utf8_lossy(header);
    let Some(header) = NpyHeader::parse(&header) else {
        return bad(&format!("cannot read the header `{}`", header.trim_end()));
    };
    if header.fortran_order {
        return fail(
            Code::DataLoadError,
            format!("`{path}` holds an array in Fortran order; only C order is supported"),
        );
    }
    let Some((scalar, size)) = npy_dtype(&header.descr) else {
        return fail(
            Code::DataLoadError,
            format!(
                "`{path}` has dtype `{}`, which Weft does not support (supported: <i4 <i8 <f4 <f8 |b1)",
                header.descr
            ),
        );
    };
    let k = header.shape.len();
    let actual = nested_type(k, scalar);
    if seq_depth(expected) != Some((k, scalar)) {
        return fail(
            Code::DataLoadError,
            format!(
                "`{path}` holds a {k}-dimensional array of {} (dtype {}, type {actual}), but the program expects {expected}",
                scalar.name(),
                header.descr
            ),
        );
    }
    // Every prefix of the shape counts the rows at one level, and a length is an `i32`.
    let mut count = 1usize;
    for &dim in &header.shape {
        count = count.saturating_mul(dim);
        if count > i32::MAX as usize {
            return bad(&format!("the shape {:?} is too large", header.shape));
        }
    }
    let data = &bytes[header_start + header_len..];
    if count.checked_mul(size) != Some(data.len()) {
        return bad(&format!(
            "the shape {:?} needs {} bytes of data, but the file holds {}",
            header.shape,
            count.saturating_mul(size),
            data.len()
        ));
    }
    let flat = match scalar {
        Scalar::Bool => Data::Bool(data.iter().map(|&b| b != 0).collect::<Arc<[bool]>>()),
        Scalar::I32 => {
            Data::I32(data.chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
        }
        Scalar::I64 => Data::I64(
            data.chunks_exact(8)
                .map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect(),
        ),
        Scalar::F32 => {
            Data::F32(data.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
        }
        Scalar::F64 => Data::F64(
            data.chunks_exact(8)
                .map(|c| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect(),
        ),
    };
    Ok(NestedValue::Seq(nest(Seq::from_data(flat), &header.shape)))
}

/// Splits a flat sequence into the nested rows of `shape` (C order, at least one dimension); the
/// innermost rows are windows into the flat buffer.
fn nest(flat: Seq, shape: &[usize]) -> Seq {
    let k = shape.len();
    if k <= 1 {
        return flat;
    }
    let last = shape[k - 1];
    let rows: usize = shape[..k - 1].iter().product();
    let mut level: Vec<NestedValue> =
        (0..rows).map(|r| NestedValue::Seq(flat.window(r * last, last))).collect();
    for j in (1..k - 1).rev() {
        let dim = shape[j];
        let groups: usize = shape[..j].iter().product();
        level = (0..groups)
            .map(|g| {
                NestedValue::Seq(Seq::from_data(Data::Values(level[g * dim..(g + 1) * dim].to_vec().into())))
            })
            .collect();
    }
    Seq::from_data(Data::Values(level.into()))
}

struct NpyHeader {
    descr: String,
    fortran_order: bool,
    shape: Vec<usize>,
}

impl NpyHeader {
    /// Parses the Python dict literal of a `.npy` header:
    /// `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }`.
    fn parse(text: &str) -> Option<NpyHeader> {
        let mut p = Parser { s: text.as_bytes(), i: 0 };
        let (mut descr, mut fortran_order, mut shape) = (None, None, None);
        p.expect(b'{')?;
        loop {
            if p.eat(b'}') {
                break;
            }
            let key = p.string()?;
            p.expect(b':')?;
            match key.as_str() {
                "descr" => descr = Some(p.string()?),
                "fortran_order" => fortran_order = Some(p.boolean()?),
                "shape" => shape = Some(p.shape()?),
                _ => return None,
            }
            if !p.eat(b',') {
                p.expect(b'}')?;
                break;
            }
        }
        Some(NpyHeader { descr: descr?, fortran_order: fortran_order?, shape: shape? })
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn skip_space(&mut self) {
        while self.s.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.skip_space();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: u8) -> Option<()> {
        self.eat(c).then_some(())
    }

    fn string(&mut self) -> Option<String> {
        self.skip_space();
        let quote = *self.s.get(self.i).filter(|q| **q == b'\'' || **q == b'"')?;
        let start = self.i + 1;
        let len = self.s[start..].iter().position(|&c| c == quote)?;
        self.i = start + len + 1;
        Some(String::from_utf8_lossy(&self.s[start..start + len]).into_owned())
    }

    fn word(&mut self) -> &[u8] {
        self.skip_space();
        let start = self.i;
        while self.s.get(self.i).is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_') {
            self.i += 1;
        }
        &self.s[start..self.i]
    }

    fn boolean(&mut self) -> Option<bool> {
        match self.word() {
            b"True" => Some(true),
            b"False" => Some(false),
            _ => None,
        }
    }

    fn shape(&mut self) -> Option<Vec<usize>> {
        self.expect(b'(')?;
        let mut dims = Vec::new();
        loop {
            if self.eat(b')') {
                return Some(dims);
            }
            let word = self.word();
            let digits = word.strip_suffix(b"L").unwrap_or(word);
            dims.push(std::str::from_utf8(digits).ok()?.parse().ok()?);
            if !self.eat(b',') {
                self.expect(b')')?;
                return Some(dims);
            }
        }
    }
}

/// Decodes a CSV file of numbers as `[[T]]`, where `expected` is `[[T]]` for a number type `T`
/// (today always `f32`): one row per non-empty line, comma-separated fields (surrounding spaces
/// allowed), each parsed as a `T`.
pub fn parse_csv(path: &str, bytes: &[u8], expected: &Type) -> Result<NestedValue, Fail> {
    let scalar = match seq_depth(expected) {
        Some((2, s)) if s != Scalar::Bool => s,
        _ => {
            return fail(
                Code::DataLoadError,
                format!("load_csv gives a sequence of rows of numbers, but the program expects {expected}"),
            );
        }
    };
    let Ok(text) = std::str::from_utf8(bytes) else {
        return fail(Code::DataLoadError, format!("`{path}` is not a UTF-8 text file"));
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut rows = Vec::new();
    for (line_no, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let mut row = SeqBuilder::new();
        for (field_no, field) in line.split(',').enumerate() {
            let field = field.trim();
            let value = match scalar {
                Scalar::F32 => field.parse().map(NestedValue::F32).ok(),
                Scalar::F64 => field.parse().map(NestedValue::F64).ok(),
                Scalar::I32 => field.parse().map(NestedValue::I32).ok(),
                _ => field.parse().map(NestedValue::I64).ok(),
            };
            match value {
                Some(v) => row.push(v),
                None => {
                    return fail(
                        Code::DataLoadError,
                        format!(
                            "`{path}` line {}, field {}: `{field}` is not a number of type {}",
                            line_no + 1,
                            field_no + 1,
                            scalar.name()
                        ),
                    );
                }
            }
        }
        rows.push(NestedValue::Seq(row.finish()));
    }
    Ok(NestedValue::Seq(Seq::from_data(Data::Values(rows.into()))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interp::print::format_value;

    #[test]
    fn random_values_match_the_documented_formula() {
        // From the Python definition in docs/language.md.
        // `bits(seed, i) >> 8`, which random_f32 scales by 2^-24 exactly.
        assert_eq!(
            random_f32(5, 42).iter().map(|x| (x * 16_777_216.0) as u32).collect::<Vec<_>>(),
            [6298619, 9440409, 12090325, 11137893, 5494726]
        );
        assert_eq!(
            random_f32(3, -7).iter().map(|x| (x * 16_777_216.0) as u32).collect::<Vec<_>>(),
            [12542213, 12378565, 14654124]
        );
        assert_eq!(random_i32(6, -5, 10, 7), [-2, -1, -3, 7, 4, 9]);
        assert_eq!(random_i32(3, i32::MIN, i32::MAX, 1), [-655013515, 1381725158, 1258283920]);
    }

    fn npy(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
        let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
        while !(10 + header.len() + 1).is_multiple_of(64) {
            header.push(' ');
        }
        header.push('\n');
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend((header.len() as u16).to_le_bytes());
        bytes.extend(header.as_bytes());
        bytes.extend(data);
        bytes
    }

    #[test]
    fn npy_shapes_nest() {
        let data: Vec<u8> = (0..6i32).flat_map(|i| i.to_le_bytes()).collect();
        let i32_2d = Type::seq(Type::seq(Type::I32));
        let v = parse_npy("a.npy", &npy("<i4", "(2, 3)", &data), &i32_2d).expect("loads");
        assert_eq!(format_value(&v), "[[0, 1, 2], [3, 4, 5]]");
        let v = parse_npy("a.npy", &npy("<i4", "(6,)", &data), &Type::seq(Type::I32)).expect("loads");
        assert_eq!(format_value(&v), "[0, 1, 2, 3, 4, 5]");
        let i32_3d = Type::seq(i32_2d.clone());
        let v = parse_npy("a.npy", &npy("<i4", "(3, 1, 2)", &data), &i32_3d).expect("loads");
        assert_eq!(format_value(&v), "[[[0, 1]], [[2, 3]], [[4, 5]]]");
        let v = parse_npy("a.npy", &npy("<i4", "(2, 0, 3)", &[]), &i32_3d).expect("loads");
        assert_eq!(format_value(&v), "[[], []]");
        let v = parse_npy("a.npy", &npy("<i4", "(0, 3)", &[]), &i32_2d).expect("loads");
        assert_eq!(format_value(&v), "[]");
        let v = parse_npy("b.npy", &npy("|b1", "(2,)", &[1, 0]), &Type::seq(Type::BOOL)).expect("loads");
        assert_eq!(format_value(&v), "[True, False]");
        let err = parse_npy("a.npy", &npy("<i4", "(2, 3)", &data), &Type::seq(Type::F32)).unwrap_err();
        assert_eq!(err.code, Code::DataLoadError);
        assert!(err.message.contains("[[i32]]") && err.message.contains("[f32]"), "{}", err.message);
        let err = parse_npy("a.npy", &npy("<u2", "(3,)", &data), &Type::seq(Type::I32)).unwrap_err();
        assert!(err.message.contains("<u2"), "{}", err.message);
        let err = parse_npy("a.npy", &npy("<i4", "(7,)", &data), &Type::seq(Type::I32)).unwrap_err();
        assert!(err.message.contains("28 bytes"), "{}", err.message);
        assert!(parse_npy("a.npy", b"\x93NUMPY\x01", &Type::seq(Type::I32)).is_err());
    }

    #[test]
    fn csv_rows() {
        let rows = |s| Type::seq(Type::seq(Type::Scalar(s)));
        let v = parse_csv("d.csv", b"1, 2.5,3\r\n\n  \n-4e1\n", &rows(Scalar::F32)).expect("loads");
        assert_eq!(format_value(&v), "[[1.0, 2.5, 3.0], [-40.0]]");
        let err = parse_csv("d.csv", b"1,2\n3,x\n", &rows(Scalar::F32)).unwrap_err();
        assert_eq!(err.message, "`d.csv` line 2, field 2: `x` is not a number of type f32");
        let v = parse_csv("d.csv", b"1,-2\n3\n", &rows(Scalar::I64)).expect("loads");
        assert_eq!(format_value(&v), "[[1, -2], [3]]");
        assert!(parse_csv("d.csv", b"1.5\n", &rows(Scalar::I32)).is_err());
    }
}
