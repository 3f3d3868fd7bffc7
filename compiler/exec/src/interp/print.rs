//! Values as text, the way Python's `repr` shows them (docs/language.md, "Values as text").
//!
//! Every executor's output is compared with the interpreter's, so this is the one definition of
//! how a value prints: integers in decimal, `True`/`False`, `[1, 2]`, `(1, 2.5)`, and a float as
//! the shortest text that reads back to the same value *of its own type* (an `f32` prints as an
//! `f32`), laid out by Python's `repr` rules (`2.0`, `1e-07`, `1e+16`, `inf`, `nan`).

use std::fmt::Write as _;

use super::value::{Elems, NestedValue, Seq};

/// The text of a value, as `print` shows it.
pub fn format_value(value: &NestedValue) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

/// Appends the text of a value to `out`.
pub fn write_value(out: &mut String, value: &NestedValue) {
    match value {
        NestedValue::Bool(b) => out.push_str(if *b { "True" } else { "False" }),
        NestedValue::I32(i) => {
            let _ = write!(out, "{i}");
        }
        NestedValue::I64(i) => {
            let _ = write!(out, "{i}");
        }
        NestedValue::F32(x) => out.push_str(&format_f32(*x)),
        NestedValue::F64(x) => out.push_str(&format_f64(*x)),
        NestedValue::Tuple(items) => {
            out.push('(');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(out, item);
            }
            if items.len() == 1 {
                out.push(',');
            }
            out.push(')');
        }
        NestedValue::Seq(seq) => write_seq(out, seq),
    }
}

fn write_seq(out: &mut String, seq: &Seq) {
    fn items<T: Copy>(out: &mut String, xs: &[T], f: impl Fn(&mut String, T)) {
        for (i, &x) in xs.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            f(out, x);
        }
    }
    out.push('[');
    match seq.elems() {
        Elems::Bool(xs) => items(out, xs, |o, b| o.push_str(if b { "True" } else { "False" })),
        Elems::I32(xs) => items(out, xs, |o, i| {
            let _ = write!(o, "{i}");
        }),
        Elems::I64(xs) => items(out, xs, |o, i| {
            let _ = write!(o, "{i}");
        }),
        Elems::F32(xs) => items(out, xs, |o, x| o.push_str(&format_f32(x))),
        Elems::F64(xs) => items(out, xs, |o, x| o.push_str(&format_f64(x))),
        Elems::Values(xs) => {
            for (i, x) in xs.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(out, x);
            }
        }
    }
    out.push(']');
}

/// An `f32` as the shortest text that reads back to the same `f32`, in Python's layout.
pub fn format_f32(x: f32) -> String {
    if x.is_nan() {
        return "nan".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    // `{:e}` gives the shortest digits that round-trip in the value's own type.
    python_layout(&format!("{x:e}"))
}

/// An `f64` as Python's `repr` shows it.
pub fn format_f64(x: f64) -> String {
    if x.is_nan() {
        return "nan".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    python_layout(&format!("{x:e}"))
}

/// Lays out Rust's shortest scientific text (`-1.5e-7`) as Python's `repr` does: positional when
/// the decimal exponent is in `-4..16`, always with a `.`; otherwise `d.ddde±XX`.
fn python_layout(sci: &str) -> String {
    let (negative, rest) = match sci.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, sci),
    };
    let (mantissa, exponent) = rest.split_once('e').unwrap_or((rest, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let mut out = String::with_capacity(digits.len() + 8);
    if negative {
        out.push('-');
    }
    if (-4..16).contains(&exponent) {
        if exponent >= 0 {
            let int_len = exponent as usize + 1;
            if digits.len() <= int_len {
                out.push_str(&digits);
                out.extend(std::iter::repeat_n('0', int_len - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..int_len]);
                out.push('.');
                out.push_str(&digits[int_len..]);
            }
        } else {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exponent - 1) as usize));
            out.push_str(&digits);
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(out, "e{}{:02}", if exponent < 0 { '-' } else { '+' }, exponent.unsigned_abs());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f64_matches_python_repr() {
        // Expected texts are Python 3's `repr(float)`.
        let cases: &[(f64, &str)] = &[
            (2.0, "2.0"),
            (0.1, "0.1"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e-7, "1e-07"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (1.5e20, "1.5e+20"),
            (-0.0, "-0.0"),
            (0.0, "0.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (123.456, "123.456"),
            (-2.5e-300, "-2.5e-300"),
            (1e100, "1e+100"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (9007199254740993.0, "9007199254740992.0"),
            (1234567890123456.7, "1234567890123456.8"),
            (12345678901234567.0, "1.2345678901234568e+16"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "nan"),
        ];
        for &(x, text) in cases {
            assert_eq!(format_f64(x), text, "{x:e}");
        }
    }

    #[test]
    fn f32_prints_its_own_shortest_text() {
        let cases: &[(f32, &str)] = &[
            (0.1, "0.1"),
            (0.1 + 0.2, "0.3"),
            (1.0 / 3.0, "0.33333334"),
            (2.0, "2.0"),
            (1e-7, "1e-07"),
            (1e16, "1e+16"),
            (16777216.0, "16777216.0"),
            (16777217.0, "16777216.0"),
            (3.4028235e38, "3.4028235e+38"),
            (1e-45, "1e-45"),
            (-0.0, "-0.0"),
            (f32::INFINITY, "inf"),
            (f32::NAN, "nan"),
        ];
        for &(x, text) in cases {
            assert_eq!(format_f32(x), text, "{x:e}");
        }
    }

    #[test]
    fn compound_values() {
        let v = NestedValue::tuple(vec![
            NestedValue::I32(1),
            NestedValue::F32(2.5),
            NestedValue::Seq(Seq::from_values(vec![
                NestedValue::Seq(Seq::i32s(vec![1, -2])),
                NestedValue::Seq(Seq::empty()),
            ])),
            NestedValue::Seq(Seq::bools(vec![true, false])),
            NestedValue::I64(-42),
        ]);
        assert_eq!(format_value(&v), "(1, 2.5, [[1, -2], []], [True, False], -42)");
        assert_eq!(format_value(&NestedValue::unit()), "()");
    }
}
