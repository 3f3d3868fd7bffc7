//! One IR op on scalars, as a WGSL expression: the code every element-wise kernel and every
//! element loop is made of. Each op keeps the interpreter's semantics (`interp::ops`): integer
//! arithmetic wraps, `//` and `%` floor, floats compare in `total_cmp` order where the
//! interpreter does, casts saturate. An op that can fail (division by zero, a negative
//! exponent or shift, a check) also gives the condition under which it fails; the kernel
//! records the failure and the host asks the CPU executor for the exact message.

use std::collections::BTreeSet;

use crate::ir::{Check, MathFn, Op};
use weft_core::types::Scalar;
use weft_core::{BinaryOp, Literal, UnaryOp};

/// A helper function a generated kernel calls; each is emitted once per module.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Helper {
    FloorDivI32,
    ModI32,
    FloorDivI64,
    ModI64,
    DivModF32,
    DivModF64,
    PowI32,
    PowI64,
    PowF32,
    PowF64,
    ShlI32,
    ShrI32,
    ShlI64,
    ShrI64,
    MinF32,
    MaxF32,
    MinF64,
    MaxF64,
    CastF32I32,
    CastF64I32,
    CastF32I64,
    CastF64I64,
    Atan2F32,
    Atan2F64,
    Erf,
    Random,
}

/// A scalar as WGSL holds it in registers.
pub fn wgsl_type(ty: Scalar) -> &'static str {
    match ty {
        Scalar::Bool => "bool",
        Scalar::I32 => "i32",
        Scalar::I64 => "i64",
        Scalar::F32 => "f32",
        Scalar::F64 => "f64",
    }
}

/// A scalar as storage buffers hold it (WGSL has no `bool` in storage).
pub fn storage_type(ty: Scalar) -> &'static str {
    match ty {
        Scalar::Bool => "u32",
        other => wgsl_type(other),
    }
}

/// Bytes per element in a storage buffer.
pub fn storage_size(ty: Scalar) -> u64 {
    match ty {
        Scalar::I64 | Scalar::F64 => 8,
        _ => 4,
    }
}

/// `stored`, a value read from storage, as a register value.
pub fn from_storage(ty: Scalar, stored: &str) -> String {
    if ty == Scalar::Bool { format!("({stored} != 0u)") } else { stored.to_string() }
}

/// A register value, as storage holds it.
pub fn to_storage(ty: Scalar, value: &str) -> String {
    if ty == Scalar::Bool { format!("select(0u, 1u, {value})") } else { value.to_string() }
}

/// A WGSL literal with exactly the value of `literal`, or `None` (an `f64` infinity or NaN).
pub fn literal(literal: &Literal) -> Option<(String, Scalar)> {
    Some(match *literal {
        Literal::Bool(b) => (b.to_string(), Scalar::Bool),
        Literal::Int(i, ty) => (int_literal(i, ty), ty),
        Literal::Float(x, Scalar::F32) => (f32_literal(x as f32), Scalar::F32),
        Literal::Float(x, _) if x.is_finite() => (format!("{x:?}lf"), Scalar::F64),
        Literal::Float(..) => return None,
    })
}

fn int_literal(i: i64, ty: Scalar) -> String {
    match ty {
        // The most negative values have no literal: their magnitude overflows.
        Scalar::I64 if i == i64::MIN => "(-9223372036854775807li - 1li)".to_string(),
        Scalar::I64 => format!("{i}li"),
        Scalar::Bool => (i != 0).to_string(),
        Scalar::F32 => f32_literal(i as f32),
        Scalar::F64 => format!("{:?}lf", i as f64),
        Scalar::I32 if i as i32 == i32::MIN => "(-2147483647i - 1i)".to_string(),
        Scalar::I32 => format!("{}i", i as i32),
    }
}

/// The exact bits, so that infinities, NaNs and every rounding survive.
pub fn f32_literal(x: f32) -> String {
    if x.is_finite() { format!("{x:?}f") } else { format!("bitcast<f32>({}u)", x.to_bits()) }
}

/// What an op computes on scalars.
pub struct ScalarCode {
    /// The result, absent for a check.
    pub value: Option<String>,
    /// When the op fails, absent if it cannot.
    pub fails: Option<String>,
}

/// Why an op has no scalar code: the executor runs it another way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotScalar(pub String);

/// `src[index]`, with the index clamped into the storage array `src`.
fn clamped_read(src: &str, index: &str) -> String {
    format!("{src}[min(u32({index}), max(arrayLength(&{src}), 1u) - 1u)]")
}

/// `op` applied to `args` (one WGSL expression per operand, of type `types[k]`), giving a
/// value of type `result`. A gather's sources are the names of whole storage arrays.
pub fn scalar_op(
    op: &Op,
    args: &[String],
    types: &[Scalar],
    result: Option<Scalar>,
    helpers: &mut BTreeSet<Helper>,
) -> Result<ScalarCode, NotScalar> {
    let a = |k: usize| args.get(k).cloned().unwrap_or_default();
    let t = |k: usize| types.get(k).copied().unwrap_or(Scalar::I32);
    let value = |v: String| Ok(ScalarCode { value: Some(v), fails: None });
    match op {
        Op::Const(lit) => match literal(lit) {
            Some((text, _)) => value(text),
            None => Err(NotScalar("an f64 constant that is not finite".into())),
        },
        Op::Unary(u, _) => value(match u {
            UnaryOp::Neg => format!("(-{})", a(0)),
            UnaryOp::Not => format!("(!{})", a(0)),
            UnaryOp::Invert => format!("(~{})", a(0)),
        }),
        Op::Binary(b, _, _) => binary(*b, &a(0), &a(1), t(0), helpers),
        Op::Select(..) => value(format!("select({}, {}, {})", a(2), a(1), a(0))),
        Op::Cast(to, _) => value(cast(&a(0), t(0), *to, helpers)),
        Op::Math(f, _) => math(*f, &a(0), &a(1), t(0), helpers),
        Op::Gather { .. } => {
            let elem = result.ok_or_else(|| NotScalar("a gather without a result".into()))?;
            // The index check runs apart, and nothing waits for it: a bad index is clamped
            // into the buffer, so that the gather does no harm before the failure is seen.
            value(from_storage(elem, &clamped_read(&a(0), &a(1))))
        }
        Op::GatherEither { .. } => {
            let elem = result.ok_or_else(|| NotScalar("a gather without a result".into()))?;
            // Both reads are clamped, so the one not picked is harmless (WGSL's `select`
            // evaluates both): one branch-free load per source.
            let (first, second) = (clamped_read(&a(0), &a(3)), clamped_read(&a(1), &a(3)));
            value(from_storage(elem, &format!("select({second}, {first}, {})", a(2))))
        }
        Op::RandomF32 { .. } => {
            helpers.insert(Helper::Random);
            value(format!("(f32(random_bits({}, u32({})) >> 8u) * 5.9604645e-8f)", a(0), a(1)))
        }
        Op::RandomI32 { .. } => {
            helpers.insert(Helper::Random);
            // `hi - lo` fits a u32 exactly when `lo < hi`, which a check guarantees.
            value(format!(
                "({lo} + i32(random_bits({seed}, u32({index})) % (u32({hi}) - u32({lo}))))",
                lo = a(0),
                hi = a(1),
                seed = a(2),
                index = a(3)
            ))
        }
        Op::Check(check) => {
            let fails = check_fails(check, args, types)?;
            Ok(ScalarCode { value: None, fails: Some(fails) })
        }
        other => Err(NotScalar(format!("{} is not element-wise", other.name()))),
    }
}

fn binary(
    op: BinaryOp,
    a: &str,
    b: &str,
    ty: Scalar,
    helpers: &mut BTreeSet<Helper>,
) -> Result<ScalarCode, NotScalar> {
    use BinaryOp::*;
    let int = matches!(ty, Scalar::I32 | Scalar::I64);
    let wide = ty == Scalar::I64 || ty == Scalar::F64;
    let mut call = |helper: Helper, name: &str| {
        helpers.insert(helper);
        format!("{name}({a}, {b})")
    };
    let (value, fails) = match op {
        Add => (format!("({a} + {b})"), None),
        Sub => (format!("({a} - {b})"), None),
        Mul => (format!("({a} * {b})"), None),
        Div if int => {
            let f = if wide { "f64" } else { "f32" };
            (format!("({f}({a}) / {f}({b}))"), Some(format!("({b} == {})", zero(ty))))
        }
        Div => (format!("({a} / {b})"), None),
        FloorDiv | Mod if int => {
            let (helper, name) = match (op, wide) {
                (FloorDiv, false) => (Helper::FloorDivI32, "floor_div_i32"),
                (FloorDiv, true) => (Helper::FloorDivI64, "floor_div_i64"),
                (_, false) => (Helper::ModI32, "mod_i32"),
                (_, true) => (Helper::ModI64, "mod_i64"),
            };
            (call(helper, name), Some(format!("({b} == {})", zero(ty))))
        }
        FloorDiv | Mod => {
            let (helper, name) =
                if wide { (Helper::DivModF64, "divmod_f64") } else { (Helper::DivModF32, "divmod_f32") };
            let field = if op == FloorDiv { "x" } else { "y" };
            (format!("{}.{field}", call(helper, name)), None)
        }
        Pow => {
            let (helper, name) = match ty {
                Scalar::I32 => (Helper::PowI32, "pow_i32"),
                Scalar::I64 => (Helper::PowI64, "pow_i64"),
                Scalar::F64 => (Helper::PowF64, "pow_f64"),
                _ => (Helper::PowF32, "pow_f32"),
            };
            let fails = int.then(|| format!("({b} < {})", zero(ty)));
            (call(helper, name), fails)
        }
        BitAnd => (format!("({a} & {b})"), None),
        BitOr => (format!("({a} | {b})"), None),
        BitXor if ty == Scalar::Bool => (format!("({a} != {b})"), None),
        BitXor => (format!("({a} ^ {b})"), None),
        Shl | Shr => {
            let (helper, name) = match (op, wide) {
                (Shl, false) => (Helper::ShlI32, "shl_i32"),
                (Shl, true) => (Helper::ShlI64, "shl_i64"),
                (_, false) => (Helper::ShrI32, "shr_i32"),
                (_, true) => (Helper::ShrI64, "shr_i64"),
            };
            (call(helper, name), Some(format!("({b} < {})", zero(ty))))
        }
        Eq => (format!("({a} == {b})"), None),
        Ne => (format!("({a} != {b})"), None),
        // WGSL does not order `bool`s; `false < true`, as in Python.
        Lt if ty == Scalar::Bool => (format!("(!{a} && {b})"), None),
        Le if ty == Scalar::Bool => (format!("(!{a} || {b})"), None),
        Gt if ty == Scalar::Bool => (format!("({a} && !{b})"), None),
        Ge if ty == Scalar::Bool => (format!("({a} || !{b})"), None),
        Lt => (format!("({a} < {b})"), None),
        Le => (format!("({a} <= {b})"), None),
        Gt => (format!("({a} > {b})"), None),
        Ge => (format!("({a} >= {b})"), None),
    };
    Ok(ScalarCode { value: Some(value), fails })
}

fn zero(ty: Scalar) -> &'static str {
    match ty {
        Scalar::I64 => "0li",
        Scalar::F32 => "0.0f",
        Scalar::F64 => "0.0lf",
        Scalar::Bool => "false",
        Scalar::I32 => "0i",
    }
}

fn cast(a: &str, from: Scalar, to: Scalar, helpers: &mut BTreeSet<Helper>) -> String {
    use Scalar::*;
    match (from, to) {
        _ if from == to => a.to_string(),
        (Bool, _) => format!("select({}, {}, {a})", zero(to), one(to)),
        (_, Bool) => format!("({a} != {})", zero(from)),
        (F32 | F64, I32 | I64) => {
            let (helper, name) = match (from, to) {
                (F32, I32) => (Helper::CastF32I32, "cast_f32_i32"),
                (F64, I32) => (Helper::CastF64I32, "cast_f64_i32"),
                (F32, _) => (Helper::CastF32I64, "cast_f32_i64"),
                _ => (Helper::CastF64I64, "cast_f64_i64"),
            };
            helpers.insert(helper);
            format!("{name}({a})")
        }
        _ => format!("{}({a})", wgsl_type(to)),
    }
}

fn one(ty: Scalar) -> &'static str {
    match ty {
        Scalar::I64 => "1li",
        Scalar::F32 => "1.0f",
        Scalar::F64 => "1.0lf",
        Scalar::Bool => "true",
        Scalar::I32 => "1i",
    }
}

fn math(
    f: MathFn,
    a: &str,
    b: &str,
    ty: Scalar,
    helpers: &mut BTreeSet<Helper>,
) -> Result<ScalarCode, NotScalar> {
    let float = matches!(ty, Scalar::F32 | Scalar::F64);
    let wide = ty == Scalar::F64;
    let mut call2 = |helper: Helper, name: &str| {
        helpers.insert(helper);
        format!("{name}({a}, {b})")
    };
    let value = match f {
        MathFn::Abs => format!("abs({a})"),
        MathFn::Sqrt => format!("sqrt({a})"),
        MathFn::Exp => format!("exp({a})"),
        MathFn::Log => format!("log({a})"),
        MathFn::Sin => format!("sin({a})"),
        MathFn::Cos => format!("cos({a})"),
        MathFn::Tan => format!("tan({a})"),
        MathFn::Floor => format!("floor({a})"),
        MathFn::Ceil => format!("ceil({a})"),
        MathFn::Atan2 => call2(
            if wide { Helper::Atan2F64 } else { Helper::Atan2F32 },
            if wide { "atan2_f64" } else { "atan2_f32" },
        ),
        MathFn::Erf if !wide => {
            helpers.insert(Helper::Erf);
            format!("erf_f32({a})")
        }
        MathFn::Erf => return Err(NotScalar("erf of f64".into())),
        MathFn::Pow => return binary(BinaryOp::Pow, a, b, ty, helpers),
        MathFn::Min | MathFn::Max if !float => {
            format!("{}({a}, {b})", if f == MathFn::Min { "min" } else { "max" })
        }
        MathFn::Min => call2(
            if wide { Helper::MinF64 } else { Helper::MinF32 },
            if wide { "min_f64" } else { "min_f32" },
        ),
        MathFn::Max => call2(
            if wide { Helper::MaxF64 } else { Helper::MaxF32 },
            if wide { "max_f64" } else { "max_f32" },
        ),
    };
    Ok(ScalarCode { value: Some(value), fails: None })
}

/// When a check fails, as a WGSL `bool`. Integer operands of two widths compare as `i64`.
fn check_fails(check: &Check, args: &[String], types: &[Scalar]) -> Result<String, NotScalar> {
    let widest = if types.contains(&Scalar::I64) { Scalar::I64 } else { Scalar::I32 };
    let int = |k: usize| -> String {
        let arg = args.get(k).cloned().unwrap_or_default();
        match types.get(k) {
            Some(&t) if t != widest && matches!(t, Scalar::I32 | Scalar::I64) => {
                format!("{}({arg})", wgsl_type(widest))
            }
            _ => arg,
        }
    };
    let z = zero(widest);
    Ok(match check {
        Check::IndexInRange { .. } => format!("!({i} >= {z} && {i} < {len})", i = int(0), len = int(1)),
        Check::LengthsEqual { .. } => format!("({} != {})", int(0), int(1)),
        Check::NonEmpty { .. } => format!("({} <= {z})", int(0)),
        Check::Assert { .. } => format!("(!{})", args.first().cloned().unwrap_or_default()),
        Check::NonNegative { .. } => format!("({} < {z})", int(0)),
        Check::NonZeroStep { .. } => format!("({} == {z})", int(0)),
        Check::RandomRange { .. } => format!("({} >= {})", int(0), int(1)),
        Check::Permutation { .. } | Check::PartitionLengths { .. } => {
            return Err(NotScalar("a whole-sequence check".into()));
        }
    })
}

/// Whether the float `x` (a name: it is read twice) is a NaN, tested on its bits: drivers may
/// fold `x != x` to false (Mesa does).
pub(super) fn is_nan(x: &str, ty: Scalar) -> String {
    if ty == Scalar::F64 {
        format!("((bitcast<u64>({x}) & 0x7ffffffffffffffflu) > 0x7ff0000000000000lu)")
    } else {
        format!("((bitcast<u32>({x}) & 0x7fffffffu) > 0x7f800000u)")
    }
}

/// Whether the float `x` has its sign bit set, `-0.0` included, which no comparison tells.
fn sign_bit(x: &str, ty: Scalar) -> String {
    if ty == Scalar::F64 {
        format!("((bitcast<u64>({x}) >> 63u) == 1lu)")
    } else {
        format!("((bitcast<u32>({x}) >> 31u) == 1u)")
    }
}

/// `min` and `max` of floats in the interpreter's order: NaN is the largest value, and the
/// first of two equal values wins.
pub(super) fn float_extreme(a: &str, b: &str, max: bool, ty: Scalar) -> String {
    let (nan_a, nan_b) = (is_nan(a, ty), is_nan(b, ty));
    if max {
        format!("{b} > {a} || ({nan_b} && !{nan_a})")
    } else {
        format!("{b} < {a} || ({nan_a} && !{nan_b})")
    }
}

/// The WGSL text of the helpers, in a stable order.
pub fn helper_source(helpers: &BTreeSet<Helper>) -> String {
    helpers.iter().map(|h| helper_text(*h)).collect::<Vec<_>>().join("\n")
}

fn helper_text(helper: Helper) -> String {
    match helper {
        Helper::FloorDivI32 => int_divmod("floor_div_i32", "i32", "q - 1i", "q", "0i"),
        Helper::ModI32 => int_divmod("mod_i32", "i32", "r + b", "r", "0i"),
        Helper::FloorDivI64 => int_divmod("floor_div_i64", "i64", "q - 1li", "q", "0li"),
        Helper::ModI64 => int_divmod("mod_i64", "i64", "r + b", "r", "0li"),
        Helper::DivModF32 => {
            float_divmod(Scalar::F32, "vec2<f32>", "f", "(bitcast<u32>(b) & 0x7fffffffu) == 0x7f800000u")
        }
        Helper::DivModF64 => {
            float_divmod(Scalar::F64, "vec2<f64>", "lf", "abs(b) == f64(bitcast<f32>(0x7f800000u))")
        }
        Helper::PowI32 => int_pow("i32", "i", "u32"),
        Helper::PowI64 => int_pow("i64", "li", "u64"),
        Helper::PowF32 => float_pow(Scalar::F32, "f"),
        Helper::PowF64 => float_pow(Scalar::F64, "lf"),
        Helper::ShlI32 => shift("shl_i32", "i32", "32", "0i", "a << u32(n)"),
        Helper::ShrI32 => shift("shr_i32", "i32", "32", "a >> 31u", "a >> u32(n)"),
        Helper::ShlI64 => shift("shl_i64", "i64", "64", "0li", "a << u32(n)"),
        Helper::ShrI64 => shift("shr_i64", "i64", "64", "a >> 63u", "a >> u32(n)"),
        Helper::MinF32 => extreme("min_f32", "f32", &float_extreme("a", "b", false, Scalar::F32)),
        Helper::MaxF32 => extreme("max_f32", "f32", &float_extreme("a", "b", true, Scalar::F32)),
        Helper::MinF64 => extreme("min_f64", "f64", &float_extreme("a", "b", false, Scalar::F64)),
        Helper::MaxF64 => extreme("max_f64", "f64", &float_extreme("a", "b", true, Scalar::F64)),
        Helper::CastF32I32 => saturate(
            "cast_f32_i32",
            Scalar::F32,
            "i32",
            "2147483648.0f",
            "-2147483648.0f",
            "2147483647i",
            "(-2147483647i - 1i)",
            "0i",
        ),
        Helper::CastF64I32 => saturate(
            "cast_f64_i32",
            Scalar::F64,
            "i32",
            "2147483648.0lf",
            "-2147483648.0lf",
            "2147483647i",
            "(-2147483647i - 1i)",
            "0i",
        ),
        Helper::CastF32I64 => saturate(
            "cast_f32_i64",
            Scalar::F32,
            "i64",
            "9223372036854775808.0f",
            "-9223372036854775808.0f",
            "9223372036854775807li",
            "(-9223372036854775807li - 1li)",
            "0li",
        ),
        Helper::CastF64I64 => saturate(
            "cast_f64_i64",
            Scalar::F64,
            "i64",
            "9223372036854775808.0lf",
            "-9223372036854775808.0lf",
            "9223372036854775807li",
            "(-9223372036854775807li - 1li)",
            "0li",
        ),
        Helper::Atan2F32 => atan2(Scalar::F32, "f"),
        Helper::Atan2F64 => atan2(Scalar::F64, "lf"),
        Helper::Erf => ERF.to_string(),
        Helper::Random => RANDOM.to_string(),
    }
}

/// Python's floor division and modulo: the quotient rounds down and the remainder takes the
/// divisor's sign. WGSL's `/` and `%` truncate, and give `a` for a zero divisor.
fn int_divmod(name: &str, ty: &str, adjusted: &str, plain: &str, zero: &str) -> String {
    format!(
        "fn {name}(a: {ty}, b: {ty}) -> {ty} {{\n    if (b == {zero}) {{ return {zero}; }}\n    let q = a / b;\n    let r = a % b;\n    if (r != {zero} && ((r < {zero}) != (b < {zero}))) {{ return {adjusted}; }}\n    return {plain};\n}}\n"
    )
}

/// CPython's `float_divmod`, as `interp::ops` has it. The remainder is `fmod`'s: exact (by
/// a fused multiply-add) while the quotient fits the mantissa, `a` itself for an infinite `b`
/// (tested on the bits: drivers may assume no value is infinite).
fn float_divmod(scalar: Scalar, vec: &str, s: &str, b_is_infinite: &str) -> String {
    let ty = wgsl_type(scalar);
    let negative_quotient = sign_bit("q", scalar);
    let (nan_a, nan_b) = (is_nan("a", scalar), is_nan("b", scalar));
    let (nan, a_is_infinite) = if scalar == Scalar::F64 {
        (
            "bitcast<f64>(0x7ff8000000000000lu)",
            "(bitcast<u64>(a) & 0x7ffffffffffffffflu) == 0x7ff0000000000000lu",
        )
    } else {
        ("bitcast<f32>(0x7fc00000u)", "(bitcast<u32>(a) & 0x7fffffffu) == 0x7f800000u")
    };
    format!(
        "fn divmod_{ty}(a: {ty}, b: {ty}) -> {vec} {{
    if (b == 0.0{s}) {{ return {vec}(floor(a / b), a - b * trunc(a / b)); }}
    // Otherwise NaN in, or an infinite dividend: NaN out, built from its bits (arithmetic that should
    // give NaN may be folded by drivers that assume there is none).
    if ({nan_a} || {nan_b} || {a_is_infinite}) {{ return {vec}({nan}, {nan}); }}
    var m = fma(-b, trunc(a / b), a);
    if ({b_is_infinite}) {{ m = a; }}
    var d = (a - m) / b;
    if (m != 0.0{s}) {{
        if ((b < 0.0{s}) != (m < 0.0{s})) {{ m = m + b; d = d - 1.0{s}; }}
    }} else {{
        m = select(0.0{s}, -0.0{s}, b < 0.0{s});
    }}
    var f = 0.0{s};
    if (d != 0.0{s}) {{
        f = floor(d);
        if (d - f > 0.5{s}) {{ f = f + 1.0{s}; }}
    }} else {{
        // A zero quotient takes the sign of `a / b`, `-0.0 // 5.0` included.
        let q = a / b;
        f = select(0.0{s}, -0.0{s}, {negative_quotient});
    }}
    return {vec}(f, m);
}}
"
    )
}

/// Repeated squaring, wrapping, as `interp::ops::int_pow`; a negative exponent is checked
/// before.
fn int_pow(ty: &str, s: &str, unsigned: &str) -> String {
    format!(
        "fn pow_{ty}(base: {ty}, exp: {ty}) -> {ty} {{
    var b = base;
    var e = {unsigned}(max(exp, 0{s}));
    var acc = 1{s};
    while (e > 0{u}) {{
        if ((e & 1{u}) == 1{u}) {{ acc = acc * b; }}
        b = b * b;
        e = e >> 1u;
    }}
    return acc;
}}
",
        u = if unsigned == "u64" { "lu" } else { "u" }
    )
}

/// Float `**` as `interp::ops::pow_f32` defines it: the square root and small integer
/// exponents first, then `powf`'s special cases, since WGSL's `pow` is undefined for a negative
/// base.
fn float_pow(scalar: Scalar, s: &str) -> String {
    let ty = wgsl_type(scalar);
    let (nan_a, nan_b) = (is_nan("a", scalar), is_nan("b", scalar));
    let minus_infinity = if scalar == Scalar::F64 {
        "bitcast<u64>(a) == 0xfff0000000000000lu"
    } else {
        "bitcast<u32>(a) == 0xff800000u"
    };
    format!(
        "fn pow_{ty}(a: {ty}, b: {ty}) -> {ty} {{
    if (b == 0.0{s}) {{ return 1.0{s}; }}
    if (b == 0.5{s}) {{
        if (a == 0.0{s}) {{ return 0.0{s}; }}
        return select(sqrt(a), -a, {minus_infinity});
    }}
    if (b == 1.0{s}) {{ return a; }}
    if (b == 2.0{s}) {{ return a * a; }}
    if (b == 3.0{s}) {{ return a * a * a; }}
    if (b == 4.0{s}) {{ return (a * a) * (a * a); }}
    if (b == -1.0{s}) {{ return 1.0{s} / a; }}
    if (b == -2.0{s}) {{ return 1.0{s} / (a * a); }}
    if (a == 1.0{s}) {{ return 1.0{s}; }}
    if ({nan_a} || {nan_b}) {{ return a + b; }}
    if (a == 0.0{s}) {{
        let odd = b == floor(b) && (b - 2.0{s} * floor(b / 2.0{s})) == 1.0{s};
        if (b > 0.0{s}) {{ return select(0.0{s}, a, odd); }}
        return select(1.0{s} / abs(a), 1.0{s} / a, odd);
    }}
    if (a < 0.0{s}) {{
        if (b != floor(b)) {{ return (a - a) / (a - a); }}
        let m = pow(-a, b);
        let odd = abs(b) < 9007199254740992.0{s} && (b - 2.0{s} * floor(b / 2.0{s})) == 1.0{s};
        return select(m, -m, odd);
    }}
    return pow(a, b);
}}
"
    )
}

/// `atan2` with IEEE's special cases, which WGSL leaves undefined: NaN in, NaN out; a zero
/// `y` gives `y` itself (signed) when `x` is `+0.0` or positive, and `±pi` (with `y`'s sign)
/// when `x` is `-0.0` or negative.
fn atan2(scalar: Scalar, s: &str) -> String {
    let ty = wgsl_type(scalar);
    let (nan_y, nan_x, negative_x, negative_y) =
        (is_nan("y", scalar), is_nan("x", scalar), sign_bit("x", scalar), sign_bit("y", scalar));
    format!(
        "fn atan2_{ty}(y: {ty}, x: {ty}) -> {ty} {{
    if ({nan_y} || {nan_x}) {{ return x + y; }}
    if (y == 0.0{s}) {{
        if (!{negative_x}) {{ return y; }}
        return select(3.141592653589793{s}, -3.141592653589793{s}, {negative_y});
    }}
    return atan2(y, x);
}}
"
    )
}

fn shift(name: &str, ty: &str, bits: &str, saturated: &str, plain: &str) -> String {
    format!(
        "fn {name}(a: {ty}, n: {ty}) -> {ty} {{\n    if (n >= {bits}{s}) {{ return {saturated}; }}\n    return {plain};\n}}\n",
        s = if ty == "i64" { "li" } else { "i" }
    )
}

fn extreme(name: &str, ty: &str, take_b: &str) -> String {
    format!("fn {name}(a: {ty}, b: {ty}) -> {ty} {{\n    return select(a, b, {take_b});\n}}\n")
}

#[allow(clippy::too_many_arguments)]
fn saturate(
    name: &str,
    from: Scalar,
    to: &str,
    hi: &str,
    lo: &str,
    max: &str,
    min: &str,
    zero: &str,
) -> String {
    format!(
        "fn {name}(x: {from}) -> {to} {{
    if ({nan}) {{ return {zero}; }}
    if (x >= {hi}) {{ return {max}; }}
    if (x <= {lo}) {{ return {min}; }}
    return {to}(x);
}}
",
        from = wgsl_type(from),
        nan = is_nan("x", from),
    )
}

/// Abramowitz and Stegun 7.1.26 refined by one Newton step on `erf`'s derivative: within a
/// few ulps of `f32` (the interpreter computes in `f64` and rounds once).
const ERF: &str = "fn erf_f32(x: f32) -> f32 {
    let ax = abs(x);
    if (ax > 4.0f) { return sign(x); }
    let t = 1.0f / (1.0f + 0.3275911f * ax);
    let poly = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
    var y = 1.0f - poly * exp(-ax * ax);
    if (ax < 0.5f) {
        // Near zero the series is more accurate than the rational fit.
        let x2 = ax * ax;
        y = 1.1283791671f * ax * (1.0f - x2 / 3.0f + x2 * x2 / 10.0f - x2 * x2 * x2 / 42.0f + x2 * x2 * x2 * x2 / 216.0f);
    }
    return select(y, -y, x < 0.0f);
}
";

/// `interp::data`'s documented hash: `lowbias32`, applied to the seed and then to the seed's
/// hash xor the index.
const RANDOM: &str = "fn mix32(v: u32) -> u32 {
    var x = v;
    x = x ^ (x >> 16u);
    x = x * 0x7feb352du;
    x = x ^ (x >> 15u);
    x = x * 0x846ca68bu;
    x = x ^ (x >> 16u);
    return x;
}

fn random_bits(seed: i32, i: u32) -> u32 {
    return mix32(mix32(bitcast<u32>(seed)) ^ i);
}
";
