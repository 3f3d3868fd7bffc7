//! The GPU sort: a stable least-significant-digit radix sort of positions, and the check that
//! a `permute`'s indexes are permutations.
//!
//! A pass orders the current sequence of positions by one 4-bit digit of one key, stably, in
//! two kernels around a scan: `radix_count` counts each block's digits into a digit-major
//! histogram (`hist[d * blocks + b]`), the scan of the histogram gives every (digit, block)
//! its place in the output, and `radix_scatter` moves each element there. Within a block,
//! thread `t` owns `ITEMS` consecutive elements and a scan of the block's per-thread digit
//! counts (16 digits × 256 threads, 16 KiB of workgroup memory) gives each element its rank,
//! so equal digits keep their order: the passes compose, least significant digit first, into
//! a stable sort.
//!
//! Keys are compared as unsigned 32-bit (64-bit for `i64`, `f64`) patterns that keep their
//! order: integers with the sign bit flipped, floats in the interpreter's order (`float_key`),
//! `bool` as 0 or 1. When the
//! positions come from more than one segment, their segment ids travel beside them and are
//! sorted by in the final passes, as the most significant key.

use weft_core::types::Scalar;

use super::prims::{ITEMS, block_header, simple};
use super::scalar::storage_type;
use super::{Access, Kernel, MAIN_HEADER, Writer};

/// Bits per radix digit; a pass sorts by one digit.
pub const DIGIT_BITS: u32 = 4;
const DIGITS: u32 = 1 << DIGIT_BITS;

/// What a radix pass orders by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SortKey {
    /// `keys[order[i]]`: a key of the elements, which `order` holds positions into.
    Data(Scalar),
    /// `segs[i]`: the segment id carried beside each position.
    Segment,
}

impl SortKey {
    /// How many bits of the key a sort must look at.
    pub fn bits(self) -> u32 {
        match self {
            SortKey::Data(Scalar::Bool) => 1,
            SortKey::Data(Scalar::I32 | Scalar::F32) | SortKey::Segment => 32,
            SortKey::Data(Scalar::I64 | Scalar::F64) => 64,
        }
    }

    fn name(self) -> String {
        match self {
            SortKey::Data(t) => t.name().to_string(),
            SortKey::Segment => "segment".to_string(),
        }
    }
}

/// An `f32`'s bits as a key in the interpreter's order (`ops::total_cmp`): NaNs (tested by
/// their bits, since drivers may fold `x != x`) equal and last, `-0.0` equal to `0.0`, and
/// otherwise negative patterns inverted and positive ones with the sign bit set.
const FLOAT_KEY: &str = "fn float_key(b: u32) -> u32 {
    let magnitude = b & 0x7fffffffu;
    if (magnitude > 0x7f800000u) { return 0xffffffffu; }
    if (magnitude == 0u) { return 0x80000000u; }
    return select(b | 0x80000000u, ~b, b >= 0x80000000u);
}
";

/// `float_key` for `f64`.
const FLOAT_KEY64: &str = "fn float_key64(b: u64) -> u64 {
    let magnitude = b & 0x7ffffffffffffffflu;
    if (magnitude > 0x7ff0000000000000lu) { return 0xfffffffffffffffflu; }
    if (magnitude == 0lu) { return 0x8000000000000000lu; }
    return select(b | 0x8000000000000000lu, ~b, b >= 0x8000000000000000lu);
}
";

/// Declares the inputs of a pass (`order`, then `segs` if `with_segments`, then `keys` for a
/// data key) and returns the WGSL of `fn digit(i: u32) -> u32`: element `i`'s digit at shift
/// `p[2]`.
fn pass_inputs(w: &mut Writer, key: SortKey, with_segments: bool) -> String {
    w.bind("order", "i32", Access::Read);
    if with_segments || key == SortKey::Segment {
        w.bind("segs", "i32", Access::Read);
    }
    let mask = DIGITS - 1;
    match key {
        SortKey::Segment => {
            format!("fn digit(i: u32) -> u32 {{ return (u32(segs[i]) >> p[2]) & {mask}u; }}\n")
        }
        SortKey::Data(t) => {
            w.bind("keys", storage_type(t), Access::Read);
            let bits = pattern(t, "keys[u32(order[i])]");
            if key.bits() == 64 {
                format!(
                    "{}fn digit(i: u32) -> u32 {{ return u32(({bits} >> p[2]) & {mask}lu); }}\n",
                    helpers(t)
                )
            } else {
                format!("{}fn digit(i: u32) -> u32 {{ return ({bits} >> p[2]) & {mask}u; }}\n", helpers(t))
            }
        }
    }
}

/// The order-keeping pattern of the key `x` (a storage value of `t`): a `u32`, or a `u64` for
/// 64-bit keys.
fn pattern(t: Scalar, x: &str) -> String {
    match t {
        Scalar::I32 => format!("(bitcast<u32>({x}) ^ 0x80000000u)"),
        Scalar::F32 => format!("float_key(bitcast<u32>({x}))"),
        Scalar::I64 => format!("(bitcast<u64>({x}) ^ 0x8000000000000000lu)"),
        Scalar::F64 => format!("float_key64(bitcast<u64>({x}))"),
        Scalar::Bool => x.to_string(),
    }
}

/// The functions `pattern` calls for keys of `t`: 64-bit code only where the key is 64-bit,
/// since a device without SHADER_INT64 rejects it.
fn helpers(t: Scalar) -> &'static str {
    match t {
        Scalar::F32 => FLOAT_KEY,
        Scalar::F64 => FLOAT_KEY64,
        _ => "",
    }
}

/// `out[i]`: the pattern of key `i`, as an `i32`. An OR and an AND reduction of these tell
/// which digits vary at all; a pass by a digit that does not vary would change nothing.
/// For 64-bit keys, `out` is `i64`.
pub fn key_patterns(t: Scalar) -> Kernel {
    let mut w = Writer::new();
    w.bind("keys", storage_type(t), Access::Read);
    let wide = SortKey::Data(t).bits() == 64;
    w.bind("out", if wide { "i64" } else { "i32" }, Access::ReadWrite);
    let cast = if wide { "i64" } else { "i32" };
    let main =
        format!("{}{MAIN_HEADER}    out[i] = bitcast<{cast}>({});\n}}\n", helpers(t), pattern(t, "keys[i]"));
    w.finish(format!("key_patterns_{}", t.name()), &main)
}

/// The opening of a pass kernel, whose thread `t` owns `ITEMS` consecutive elements of the
/// block: `digit`, and `counts[d * 256 + t]`, thread `t`'s count of digit `d`, in workgroup
/// memory (16 KiB) by the barrier that ends it. Declares `n`, `base` and the block header's
/// names.
fn thread_counts(digit: &str) -> String {
    let header = block_header();
    let slots = DIGITS * 256;
    format!(
        "var<workgroup> counts: array<u32, {slots}>;
{digit}
{header}    let n = p[0];
    let base = start + lid * {ITEMS}u;
    var mine: array<u32, {DIGITS}>;
    for (var d = 0u; d < {DIGITS}u; d++) {{ mine[d] = 0u; }}
    for (var k = 0u; k < {ITEMS}u; k++) {{
        if (base + k < n) {{ let d = digit(base + k); mine[d] = mine[d] + 1u; }}
    }}
    for (var d = 0u; d < {DIGITS}u; d++) {{ counts[d * 256u + lid] = mine[d]; }}
    workgroupBarrier();
"
    )
}

/// The first half of a pass: block `b`'s count of digit `d` into `hist[d * p[3] + b]`, `p[3]`
/// being the number of blocks. Its inputs are `order`, then `segs` for the segment key or
/// `keys` for a data key.
pub fn radix_count(key: SortKey) -> Kernel {
    let mut w = Writer::new();
    let digit = pass_inputs(&mut w, key, false);
    w.bind("hist", "i32", Access::ReadWrite);
    // Per-thread counts, then sums in two steps: no atomics on 16 shared counters that all 256
    // threads would contend for.
    let counted = thread_counts(&digit);
    let main = format!(
        "{counted}    // Thread t adds up 16 threads' counts of digit t / 16.
    var part = 0u;
    for (var k = 0u; k < 16u; k++) {{ part = part + counts[(lid / 16u) * 256u + (lid % 16u) * 16u + k]; }}
    workgroupBarrier();
    counts[lid] = part;
    workgroupBarrier();
    if (lid < {DIGITS}u && live) {{
        var total = 0u;
        for (var k = 0u; k < 16u; k++) {{ total = total + counts[lid * 16u + k]; }}
        hist[lid * p[3] + block] = i32(total);
    }}
}}
"
    );
    w.finish(format!("radix_count_{}", key.name()), &main)
}

/// The second half of a pass: every element of block `b` with digit `d` goes to the place the
/// inclusive scan `scanned` of `hist` gives (digit `d`'s elements of earlier blocks come
/// first), plus its rank among the block's elements with digit `d`. Moves `order`, and `segs`
/// beside it when carried.
pub fn radix_scatter(key: SortKey, carry_segments: bool) -> Kernel {
    let mut w = Writer::new();
    let digit = pass_inputs(&mut w, key, carry_segments);
    w.bind("hist", "i32", Access::Read);
    w.bind("scanned", "i32", Access::Read);
    w.bind("order_out", "i32", Access::ReadWrite);
    let carry = carry_segments || key == SortKey::Segment;
    let move_segment = if carry {
        w.bind("segs_out", "i32", Access::ReadWrite);
        "            segs_out[to] = segs[i];\n"
    } else {
        ""
    };
    // `counts` is then scanned in its order: the block rank of thread t's first element with
    // digit d.
    let counted = thread_counts(&digit);
    let main = format!(
        "{counted}    // An exclusive scan of all of `counts`: thread t scans slots 16t..16t+15, Hillis-Steele
    // scans the threads' totals, and each thread adds the total before it.
    var own: array<u32, {DIGITS}>;
    var total = 0u;
    for (var k = 0u; k < {DIGITS}u; k++) {{ own[k] = total; total = total + counts[lid * {DIGITS}u + k]; }}
    workgroupBarrier();
    counts[lid] = total;
    workgroupBarrier();
    for (var d = 1u; d < 256u; d = d << 1u) {{
        var left = 0u;
        if (lid >= d) {{ left = counts[lid - d]; }}
        workgroupBarrier();
        counts[lid] = counts[lid] + left;
        workgroupBarrier();
    }}
    var before = 0u;
    if (lid > 0u) {{ before = counts[lid - 1u]; }}
    workgroupBarrier();
    for (var k = 0u; k < {DIGITS}u; k++) {{ counts[lid * {DIGITS}u + k] = before + own[k]; }}
    workgroupBarrier();
    if (live) {{
        var next: array<u32, {DIGITS}>;
        for (var d = 0u; d < {DIGITS}u; d++) {{
            let h = d * p[3] + block;
            next[d] = u32(scanned[h] - hist[h]) + counts[d * 256u + lid] - counts[d * 256u];
        }}
        for (var k = 0u; k < {ITEMS}u; k++) {{
            let i = base + k;
            if (i < n) {{
                let d = digit(i);
                let to = next[d];
                next[d] = to + 1u;
                order_out[to] = order[i];
{move_segment}            }}
        }}
    }}
}}
"
    );
    let carried = if carry_segments && key != SortKey::Segment { "_carrying_segments" } else { "" };
    w.finish(format!("radix_scatter_{}{carried}", key.name()), &main)
}

/// The source position of every element of the compact layout of segments `offsets`:
/// `offsets[s] + j` for element `j` of segment `s`. A sort starts from these.
pub fn source_positions() -> Kernel {
    simple(
        "source_positions",
        &[
            ("ids", "i32", Access::Read),
            ("offsets", "i32", Access::Read),
            ("starts", "i32", Access::Read),
            ("out", "i32", Access::ReadWrite),
        ],
        "    let s = u32(ids[i]);\n    out[i] = offsets[s] + i32(i) - starts[s];\n",
    )
}

/// `permute`'s check: each segment of `index` is a permutation of `0..lengths[s]`. Element
/// `i` of the compact layout marks its target in `seen` (zeroed, in the compact layout), and
/// fails when the target is out of range or was marked before.
pub fn permutation_marks() -> Kernel {
    simple(
        "permutation_marks",
        &[
            ("ids", "i32", Access::Read),
            ("offsets", "i32", Access::Read),
            ("lengths", "i32", Access::Read),
            ("starts", "i32", Access::Read),
            ("index", "i32", Access::Read),
            ("seen", "atomic<u32>", Access::ReadWrite),
            ("err", "atomic<u32>", Access::ReadWrite),
        ],
        "    let s = u32(ids[i]);
    let to = index[u32(offsets[s] + i32(i) - starts[s])];
    if (to < 0i || to >= lengths[s]) { atomicMin(&err[0], p[1]); return; }
    if (atomicAdd(&seen[u32(starts[s] + to)], 1u) != 0u) { atomicMin(&err[0], p[1]); }
",
    )
}
