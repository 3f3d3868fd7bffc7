//! The primitive library: the data-parallel building blocks of the segmented IR, in WGSL.
//!
//! Reductions and scans work on blocks of `BLOCK` elements, one workgroup per block, each
//! thread taking `ITEMS` consecutive elements; a tree (reduce) or Hillis–Steele (scan) pass in
//! workgroup memory combines the threads. Longer inputs take more passes: the block totals are
//! reduced or scanned the same way, then added back (reduce-then-scan). Nothing spins or waits
//! on another workgroup, so the kernels are correct without forward-progress guarantees, and
//! no loop runs more than `ITEMS` times.
//!
//! A scan is segmented by head flags: a flag starts a new segment, and the pair operator
//! `(fa, a) ⊕ (fb, b) = (fa | fb, fb ? b : a ⊕ b)` is associative, so the same passes do plain
//! and segmented scans. Values live in storage types: `bool` is a `u32` 0 or 1.

use crate::ir::ReduceOp;
use weft_core::types::Scalar;

use super::scalar::storage_type;
use super::{Access, FIRST_SCALAR, Kernel, MAIN_HEADER, Operand, WORKGROUP, Writer};

/// Elements per thread in a block. Workgroup barriers are the expensive part of a pass (on
/// llvmpipe each one is a coroutine switch), so a thread takes 16 elements: 4,096 per block.
pub const ITEMS: u32 = 16;
/// Elements per workgroup of a reduce or scan pass.
pub const BLOCK: u32 = WORKGROUP * ITEMS;

/// `op` on storage values of `elem`: the combining function's WGSL and the identity.
pub(super) fn combine(op: ReduceOp, elem: Scalar) -> (String, String) {
    let t = storage_type(elem);
    let float = matches!(elem, Scalar::F32 | Scalar::F64);
    let body = match op {
        ReduceOp::Add => "a + b".to_string(),
        ReduceOp::Mul => "a * b".to_string(),
        ReduceOp::Min if float => {
            format!("select(a, b, {})", super::scalar::float_extreme("a", "b", false, elem))
        }
        ReduceOp::Max if float => {
            format!("select(a, b, {})", super::scalar::float_extreme("a", "b", true, elem))
        }
        ReduceOp::Min => "min(a, b)".to_string(),
        ReduceOp::Max => "max(a, b)".to_string(),
        ReduceOp::And => "a & b".to_string(),
        ReduceOp::Or => "a | b".to_string(),
        ReduceOp::Xor => "a ^ b".to_string(),
    };
    let f = |x: &str| if elem == Scalar::F64 { format!("f64({x})") } else { x.to_string() };
    let identity = match (op, elem) {
        (ReduceOp::Add | ReduceOp::Or | ReduceOp::Xor, _) => format!("{t}(0)"),
        (ReduceOp::Mul, _) => format!("{t}(1)"),
        // Infinities, not NaN: drivers may fold `x != x` to false (Mesa does), which would let
        // a NaN identity win every comparison.
        (ReduceOp::Min, Scalar::F32 | Scalar::F64) => f("bitcast<f32>(0x7f800000u)"),
        (ReduceOp::Max, Scalar::F32 | Scalar::F64) => f("bitcast<f32>(0xff800000u)"),
        (ReduceOp::Min, Scalar::Bool) | (ReduceOp::And, Scalar::Bool) => "1u".to_string(),
        (ReduceOp::Max, Scalar::Bool) => "0u".to_string(),
        (ReduceOp::Min, Scalar::I32) => "2147483647i".to_string(),
        (ReduceOp::Max, Scalar::I32) => "(-2147483647i - 1i)".to_string(),
        (ReduceOp::Min, _) => "9223372036854775807li".to_string(),
        (ReduceOp::Max, _) => "(-9223372036854775807li - 1li)".to_string(),
        (ReduceOp::And, _) => format!("{t}(-1)"),
    };
    (format!("fn combine(a: {t}, b: {t}) -> {t} {{ return {body}; }}\n"), identity)
}

/// What a segmented reduction gives for an empty segment: the identity, or zero for `min`
/// and `max` (whose empty case a check rules out before), as the CPU executor does.
pub fn empty_value(op: ReduceOp, elem: Scalar) -> String {
    match op {
        ReduceOp::Min | ReduceOp::Max => format!("{}(0)", storage_type(elem)),
        _ => combine(op, elem).1,
    }
}

fn suffix(op: ReduceOp, elem: Scalar) -> String {
    format!("{}_{}", op.name(), elem.name())
}

/// The workgroup id and the block's first element, for kernels with barriers: they must not
/// return early, so threads past the end only skip their loads and stores.
pub(super) fn block_header() -> String {
    format!(
        "@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {{
    let block = wid.x + wid.y * nwg.x;
    let start = block * {BLOCK}u;
    let live = start < max(p[0], 1u);
"
    )
}

/// One pass of a reduction: block `b` of `src` (of `p[0]` elements) to `dst[b]`. Thread `t`
/// reads elements `t`, `t + 256`, ... of its block (coalesced), then a tree combines the
/// threads.
pub fn reduce_blocks(op: ReduceOp, elem: Scalar) -> Kernel {
    let t = storage_type(elem);
    let (combine, id) = combine(op, elem);
    let header = block_header();
    let source = format!(
        "@group(0) @binding(0) var<storage, read> p: array<u32>;
@group(0) @binding(1) var<storage, read> src: array<{t}>;
@group(0) @binding(2) var<storage, read_write> dst: array<{t}>;
var<workgroup> partial: array<{t}, 256>;
{combine}
{header}    var acc: {t} = {id};
    for (var k = 0u; k < {ITEMS}u; k++) {{
        let i = start + k * 256u + lid;
        if (i < p[0]) {{ acc = combine(acc, src[i]); }}
    }}
    partial[lid] = acc;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s = s >> 1u) {{
        if (lid < s) {{ partial[lid] = combine(partial[lid], partial[lid + s]); }}
        workgroupBarrier();
    }}
    if (lid == 0u && live) {{ dst[block] = partial[0]; }}
}}
"
    );
    Kernel {
        name: format!("reduce_blocks_{}", suffix(op, elem)),
        source,
        bindings: vec![Access::Read, Access::ReadWrite],
    }
}

/// One pass of a scan: each block of `src` scanned inclusively into `dst`, with its total in
/// `sums[b]`. Thread `t` scans `ITEMS` consecutive elements, Hillis–Steele combines the
/// threads' totals, and each thread adds the total before it. Segmented, it reads head flags
/// and also writes, per block, whether any element is a head (`sum_flags`) and where the first
/// head is (`first_head`, `BLOCK` if none); unsegmented, none of that is generated.
pub fn scan_blocks(op: ReduceOp, elem: Scalar, segmented: bool) -> Kernel {
    let input = if segmented { ScanInput::Flagged } else { ScanInput::Plain };
    scan_blocks_of(op, elem, input, None, None, false).expect("a scan of a buffer always generates")
}

/// The segmented `scan_blocks` of the elements of a compact layout's segments where they lie:
/// element `i` of segment `ids[i]` is `src[offsets[s] + i - starts[s]]`, and a head where
/// `i == starts[s]`. It reads what `segment_gather` would have written, in the same pass: a
/// segmented reduction takes one launch and one pass over its elements fewer.
pub fn seg_scan_blocks_gathered(op: ReduceOp, elem: Scalar) -> Kernel {
    scan_blocks_of(op, elem, ScanInput::Gathered, None, None, false)
        .expect("a scan of a buffer always generates")
}

/// `seg_scan_blocks_gathered` whose elements a fused producer computes at the gathered
/// positions (`fused::Produced`): its bindings come after the scan's own.
pub fn seg_scan_blocks_gathered_produced(
    op: ReduceOp,
    elem: Scalar,
    produced: &super::fused::Produced<'_>,
) -> Result<Kernel, super::scalar::NotScalar> {
    scan_blocks_of(op, elem, ScanInput::Gathered, Some(produced), None, false)
}

/// Where a scan's blocks' pass finds its elements and its segments' heads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ScanInput {
    /// Element `i` of `src`, unsegmented.
    Plain,
    /// Element `i` of `src`, and a head where `flags[i]` is set.
    Flagged,
    /// Gathered from `src` through a compact layout (`seg_scan_blocks_gathered`).
    Gathered,
}

/// `scan_blocks` writing the exclusive scan from `init` (`init ⊕` everything before the
/// element in its block), where the plain one writes the inclusive scan: the carry pass then
/// finishes an exclusive scan as it finishes an inclusive one (every `ReduceOp` commutes), with
/// no pass to shift the inclusive scan by one. `sums` are the blocks' totals, without `init`.
/// Floats are combined in another order than the shift pass did (`carry ⊕ (init ⊕ prefix)`),
/// which may round differently, as any parallel scan may against the sequential one.
pub fn scan_blocks_exclusive(op: ReduceOp, elem: Scalar, init: Operand) -> Kernel {
    scan_blocks_of(op, elem, ScanInput::Plain, None, Some(init), false)
        .expect("a scan of a buffer always generates")
}

/// The starts of a compact layout, `i32` lengths in one block (at most `BLOCK`), and its
/// total as the count record `total` (`count_record`), clamped to `p[2]`, the bound its
/// elements are allocated by: `last_end`'s work, in the scan's launch.
pub fn layout_starts(init: Operand) -> Kernel {
    scan_blocks_of(ReduceOp::Add, Scalar::I32, ScanInput::Plain, None, Some(init), true)
        .expect("a scan of a buffer always generates")
}

/// `scan_blocks` whose input elements a fused producer computes (`fused::Produced`) instead
/// of reading `src`: its bindings come after the scan's own.
pub fn scan_blocks_produced(
    op: ReduceOp,
    elem: Scalar,
    segmented: bool,
    produced: &super::fused::Produced<'_>,
) -> Result<Kernel, super::scalar::NotScalar> {
    let input = if segmented { ScanInput::Flagged } else { ScanInput::Plain };
    scan_blocks_of(op, elem, input, Some(produced), None, false)
}

fn scan_blocks_of(
    op: ReduceOp,
    elem: Scalar,
    input: ScanInput,
    produced: Option<&super::fused::Produced<'_>>,
    exclusive: Option<Operand>,
    total_record: bool,
) -> Result<Kernel, super::scalar::NotScalar> {
    let t = storage_type(elem);
    let (combine, id) = combine(op, elem);
    let segmented = input != ScanInput::Plain;
    let mut w = Writer::new();
    if input == ScanInput::Gathered {
        w.bind("ids", "i32", Access::Read);
        w.bind("offsets", "i32", Access::Read);
        w.bind("starts", "i32", Access::Read);
    }
    if produced.is_none() {
        w.bind("src", t, Access::Read);
    }
    if input == ScanInput::Flagged {
        w.bind("flags", "u32", Access::Read);
    }
    w.bind("dst", t, Access::ReadWrite);
    w.bind("sums", t, Access::ReadWrite);
    if total_record {
        w.bind("total", "i32", Access::ReadWrite);
    }
    if segmented {
        w.bind("sum_flags", "u32", Access::ReadWrite);
        w.bind("first_head", "u32", Access::ReadWrite);
    }
    // An exclusive scan writes `init ⊕` the prefix before each element, the inclusive one the
    // prefix through it.
    let (before, write, init_value) = match exclusive {
        Some(init) => {
            let init = w.operand(0, init);
            let init = if elem == Scalar::Bool { format!("select(0u, 1u, {init})") } else { init };
            (format!("    let prefix = combine({init}, carry);\n    var excl = prefix;\n"), "excl", init)
        }
        None => (String::new(), "v", id.to_string()),
    };
    let after = if exclusive.is_some() { "            excl = combine(prefix, vals[k]);\n" } else { "" };
    let header = block_header();
    // The code that only a segmented scan has, by where it goes.
    let seg = |text: &str| if segmented { text.to_string() } else { String::new() };
    let shared = seg("var<workgroup> tf: array<u32, 256>;\nvar<workgroup> first: atomic<u32>;\n");
    let init = seg(&format!(
        "    if (lid == 0u) {{ atomicStore(&first, {BLOCK}u); }}\n    workgroupBarrier();\n    var seen: array<u32, {ITEMS}>;\n    var f = 0u;\n"
    ));
    let read = match input {
        ScanInput::Gathered => format!("{GATHERED_AT}x = src[at]; head = select(0u, 1u, within == 0i);"),
        _ => "x = src[i]; head = flags[i];".to_string(),
    };
    let element = if segmented {
        format!(
            "        var head = 0u;
        if (i < n) {{ {read} }}
        if (head != 0u) {{ acc = x; atomicMin(&first, lid * {ITEMS}u + k); }} else {{ acc = combine(acc, x); }}
        f = f | head;
        seen[k] = f;
"
        )
    } else {
        "        if (i < n) { x = src[i]; }\n        acc = combine(acc, x);\n".to_string()
    };
    let publish = seg("    tf[lid] = f;\n");
    let step = if segmented {
        "        var left_flag = 0u;
        if (lid >= d) { left = tv[lid - d]; left_flag = tf[lid - d]; }
        workgroupBarrier();
        if (lid >= d) {
            if (tf[lid] == 0u) { tv[lid] = combine(left, tv[lid]); }
            tf[lid] = tf[lid] | left_flag;
        }
"
    } else {
        "        if (lid >= d) { left = tv[lid - d]; }
        workgroupBarrier();
        if (lid >= d) { tv[lid] = combine(left, tv[lid]); }
"
    };
    let open =
        if segmented { "if (seen[k] == 0u) { v = combine(carry, v); }" } else { "v = combine(carry, v);" };
    let mut tail = seg("    if (lid == 255u && live) { sum_flags[block] = tf[255]; }
    if (lid == 0u && live) { first_head[block] = atomicLoad(&first); }
");
    if total_record {
        let end = format!("min(combine({init_value}, tv[255]), i32(min(p[2], 2147483647u)))");
        let record = count_record("total", &end);
        tail.push_str(&format!(
            "    if (lid == 255u && block == 0u) {{
{record}    }}
"
        ));
    }
    let main = format!(
        "var<workgroup> tv: array<{t}, 256>;
{shared}{combine}
{header}    let n = p[0];
    let base = start + lid * {ITEMS}u;
{init}    var vals: array<{t}, {ITEMS}>;
    var acc: {t} = {id};
    for (var k = 0u; k < {ITEMS}u; k++) {{
        let i = base + k;
        var x: {t} = {id};
{element}        vals[k] = acc;
    }}
    tv[lid] = acc;
{publish}    workgroupBarrier();
    for (var d = 1u; d < 256u; d = d << 1u) {{
        var left: {t} = {id};
{step}        workgroupBarrier();
    }}
    var carry: {t} = {id};
    if (lid > 0u) {{ carry = tv[lid - 1u]; }}
{before}    for (var k = 0u; k < {ITEMS}u; k++) {{
        if (base + k < n) {{
            var v = vals[k];
            {open}
            dst[base + k] = {write};
{after}        }}
    }}
    if (lid == 255u && live) {{ sums[block] = tv[255]; }}
{tail}}}
"
    );
    let kind = match (input, exclusive) {
        (ScanInput::Gathered, _) => "seg_scan_blocks_gathered",
        (ScanInput::Flagged, _) => "seg_scan_blocks",
        (ScanInput::Plain, Some(_)) => "exscan_blocks",
        (ScanInput::Plain, None) => "scan_blocks",
    };
    let name = format!("{kind}{}_{}", if total_record { "_total" } else { "" }, suffix(op, elem));
    match produced {
        None => Ok(w.finish(name, &main)),
        Some(produced) => {
            let element = produced.declare(&mut w)?;
            let main = main.replace("src[i]", "element(i)").replace("src[at]", "element(at)");
            let main = format!("{element}{main}");
            Ok(w.finish(format!("{name}_of_{}", produced.name), &main))
        }
    }
}

/// The last pass of a scan: block `b > 0` of `dst` combined with the scanned total of the
/// blocks before it, up to the block's first head when segmented.
pub fn scan_add_carry(op: ReduceOp, elem: Scalar, segmented: bool) -> Kernel {
    let t = storage_type(elem);
    let (combine, _) = combine(op, elem);
    let mut decls = format!(
        "@group(0) @binding(0) var<storage, read> p: array<u32>;\n@group(0) @binding(1) var<storage, read_write> dst: array<{t}>;\n@group(0) @binding(2) var<storage, read> scanned: array<{t}>;\n"
    );
    let mut bindings = vec![Access::ReadWrite, Access::Read];
    let open = if segmented {
        bindings.push(Access::Read);
        decls.push_str("@group(0) @binding(3) var<storage, read> first_head: array<u32>;\n");
        " && (i % BLOCK) < first_head[block]"
    } else {
        ""
    };
    let source = format!(
        "{decls}{combine}
const BLOCK: u32 = {BLOCK}u;
{MAIN_HEADER}    let block = i / BLOCK;
    if (block > 0u{open}) {{ dst[i] = combine(scanned[block - 1u], dst[i]); }}
}}
"
    );
    let kind = if segmented { "seg_scan_add_carry" } else { "scan_add_carry" };
    Kernel { name: format!("{kind}_{}", suffix(op, elem)), source, bindings }
}

/// Where the last of the first `p[4]` segments ends (0 if there are none), in one thread, as
/// the count record `dst` (`count_record`): the total of a compact layout whose number of
/// segments is on the device, or whose total only the device knows. It is clamped to `p[5]`,
/// the bound its elements are allocated by, so that a launch over it never passes them.
pub fn last_end() -> Kernel {
    let record = count_record("dst", "end");
    let bound = FIRST_SCALAR + 1;
    let body = format!(
        "    var end = 0i;
    let m = p[{FIRST_SCALAR}];
    if (m > 0u) {{ end = starts[m - 1u] + lengths[m - 1u]; }}
    end = min(end, i32(min(p[{bound}], 2147483647u)));
{record}"
    );
    let arrays = [
        ("starts", "i32", Access::Read),
        ("lengths", "i32", Access::Read),
        ("dst", "i32", Access::ReadWrite),
    ];
    simple("last_end", &arrays, &body)
}

/// WGSL statements that find element `i` of a compact layout in its source: its segment `s`,
/// its position `within` the segment, and `at`, where it lies (`ids`, `starts` and `offsets`
/// bound).
const GATHERED_AT: &str = "    let s = u32(ids[i]);
    let within = i32(i) - starts[s];
    let at = u32(offsets[s] + within);
    ";

/// The words of a count record: an element count computed on the device, then the
/// workgroup grid `(x, y, 1)` of a launch of one thread per counted element, which an
/// indirect dispatch reads at word `COUNT_GRID_WORD`.
pub const COUNT_RECORD_WORDS: usize = 4;
pub const COUNT_GRID_WORD: usize = 1;
/// The parameter word that carries the grid's row width (at most 65,535 workgroups, or less
/// where a test narrows it) to the kernels that write count records.
pub const GRID_WIDTH_WORD: usize = 3;

/// WGSL statements that write the count `total` (an `i32` expression, not negative) into the
/// count record `dst`, with the grid of one thread per element in rows of at most
/// `p[GRID_WIDTH_WORD]` workgroups: the layout `Gpu::dispatch_counted` lays a host grid out in.
fn count_record(dst: &str, total: &str) -> String {
    let w = WORKGROUP;
    format!(
        "    {{
        let n = u32(max({total}, 0i));
        let groups = (n + {w}u - 1u) / {w}u;
        let x = min(groups, max(p[{GRID_WIDTH_WORD}], 1u));
        {dst}[0] = i32(n);
        {dst}[1] = i32(x);
        {dst}[2] = select(0i, i32((groups + x - 1u) / max(x, 1u)), x > 0u);
        {dst}[3] = 1i;
    }}
"
    )
}

/// The most parts `concat_parts` joins in one kernel.
pub const CONCAT_PARTS: usize = 4;

/// The concatenation of `k` vectors of `elem` whose lengths are parameter words
/// `p[4..4 + k]` (filled on the device where they are device counts), into `out`, launched
/// over the sum of their bounds; thread 0 writes the total length as the count record `total`
/// (`count_record`).
pub fn concat_parts(elem: Scalar, k: usize) -> Kernel {
    let t = storage_type(elem);
    let mut arrays: Vec<(String, &str, Access)> =
        (0..k).map(|j| (format!("in{j}"), t, Access::Read)).collect();
    arrays.push(("out".into(), t, Access::ReadWrite));
    arrays.push(("total".into(), "i32", Access::ReadWrite));
    let lengths: Vec<String> = (0..k).map(|j| format!("p[{}]", FIRST_SCALAR + j)).collect();
    let record = count_record("total", &format!("i32({})", lengths.join(" + ")));
    let mut body = format!("    if (i == 0u) {{\n{record}    }}\n    var at = i;\n");
    for (j, length) in lengths.iter().enumerate() {
        body.push_str(&format!(
            "    if (at < {length}) {{ out[i] = in{j}[at]; return; }}
    at = at - {length};
"
        ));
    }
    let arrays: Vec<(&str, &str, Access)> = arrays.iter().map(|(n, t, a)| (n.as_str(), *t, *a)).collect();
    simple(&format!("concat_{k}_{}", elem.name()), &arrays, &body)
}

/// An exclusive scan from `init`, from the inclusive one: element `i` is `init` at a head (or
/// at 0), else `init ⊕ inclusive[i - 1]`.
pub fn scan_shift(op: ReduceOp, elem: Scalar, segmented: bool, init: Operand) -> Kernel {
    let t = storage_type(elem);
    let (combine, _) = combine(op, elem);
    let mut w = Writer::new();
    w.bind("incl", t, Access::Read);
    let head = if segmented {
        w.bind("flags", "u32", Access::Read);
        "i == 0u || flags[i] != 0u"
    } else {
        "i == 0u"
    };
    let init = w.operand(0, init);
    let init = if elem == Scalar::Bool { format!("select(0u, 1u, {init})") } else { init };
    w.bind("out", t, Access::ReadWrite);
    let main = format!(
        "{combine}
{MAIN_HEADER}    let init: {t} = {init};
    if ({head}) {{ out[i] = init; }} else {{ out[i] = combine(init, incl[i - 1u]); }}
}}
"
    );
    let kind = if segmented { "seg_scan_shift" } else { "scan_shift" };
    w.finish(format!("{kind}_{}", suffix(op, elem)), &main)
}

/// Element `i` of the compact layout: its segment, the last of the `p[4]` segments that
/// starts at or before `i` (a binary search of the non-decreasing `starts`; empty segments
/// share their start with the next), and its position in that segment. One pass, where
/// scattering the heads and spreading them by a max-scan takes three or more.
pub fn segment_search() -> Kernel {
    let body = format!(
        "    var lo = 0u;
    var hi = p[{FIRST_SCALAR}];
    while (lo < hi) {{
        let mid = (lo + hi) / 2u;
        if (u32(starts[mid]) <= i) {{ lo = mid + 1u; }} else {{ hi = mid; }}
    }}
    let id = i32(lo) - 1i;
    ids[i] = id;
    positions[i] = i32(i) - starts[u32(id)];
"
    );
    let arrays = [
        ("starts", "i32", Access::Read),
        ("ids", "i32", Access::ReadWrite),
        ("positions", "i32", Access::ReadWrite),
    ];
    simple("segment_search", &arrays, &body)
}

/// The compact layout of segments that may lie anywhere: element `j` of segment `s` is
/// `src[offsets[s] + j - starts[s]]`, and it is a head when it is its segment's first.
pub fn segment_gather(elem: Scalar) -> Kernel {
    let t = storage_type(elem);
    simple(
        &format!("segment_gather_{}", elem.name()),
        &[
            ("ids", "i32", Access::Read),
            ("offsets", "i32", Access::Read),
            ("starts", "i32", Access::Read),
            ("src", t, Access::Read),
            ("vals", t, Access::ReadWrite),
            ("flags", "u32", Access::ReadWrite),
        ],
        &format!("{GATHERED_AT}vals[i] = src[at];\n    flags[i] = select(0u, 1u, within == 0i);\n"),
    )
}

/// `segment_gather` whose source elements a fused producer computes at the gathered positions
/// (`fused::Produced`) instead of reading `src`: its bindings come after the others.
pub fn segment_gather_produced(
    elem: Scalar,
    produced: &super::fused::Produced<'_>,
) -> Result<Kernel, super::scalar::NotScalar> {
    let mut w = Writer::new();
    w.bind("ids", "i32", Access::Read);
    w.bind("offsets", "i32", Access::Read);
    w.bind("starts", "i32", Access::Read);
    w.bind("vals", storage_type(elem), Access::ReadWrite);
    w.bind("flags", "u32", Access::ReadWrite);
    let element = produced.declare(&mut w)?;
    let main = format!(
        "{element}{MAIN_HEADER}{GATHERED_AT}vals[i] = element(at);
    flags[i] = select(0u, 1u, within == 0i);
}}
"
    );
    Ok(w.finish(format!("segment_gather_{}_of_{}", elem.name(), produced.name), &main))
}

/// Per segment, the last element of its inclusive scan, or `empty` for an empty segment.
pub fn segment_last(elem: Scalar, empty: &str) -> Kernel {
    let t = storage_type(elem);
    simple(
        &format!("segment_last_{}", elem.name()),
        &[
            ("lengths", "i32", Access::Read),
            ("starts", "i32", Access::Read),
            ("scanned", t, Access::Read),
            ("out", t, Access::ReadWrite),
        ],
        &format!(
            "    let n = lengths[i];
    if (n > 0i) {{ out[i] = scanned[u32(starts[i] + n - 1i)]; }} else {{ out[i] = {empty}; }}
"
        ),
    )
}

/// Per segment, the position of its first smallest (or largest) element, in `total_cmp`
/// order: one thread walks each segment.
pub fn segment_arg_extreme(elem: Scalar, max: bool) -> Kernel {
    let t = storage_type(elem);
    let float = matches!(elem, Scalar::F32 | Scalar::F64);
    let better = match (max, float) {
        (_, true) => super::scalar::float_extreme("best", "x", max, elem),
        (false, false) => "x < best".to_string(),
        (true, false) => "x > best".to_string(),
    };
    simple(
        &format!("segment_arg_{}_{}", if max { "max" } else { "min" }, elem.name()),
        &[
            ("offsets", "i32", Access::Read),
            ("lengths", "i32", Access::Read),
            ("src", t, Access::Read),
            ("out", "i32", Access::ReadWrite),
        ],
        &format!(
            "    let o = u32(offsets[i]);
    let n = u32(max(lengths[i], 0i));
    var at = 0u;
    if (n > 0u) {{
        var best = src[o];
        for (var k = 1u; k < n; k++) {{
            let x = src[o + k];
            if ({better}) {{ best = x; at = k; }}
        }}
    }}
    out[i] = i32(at);
"
        ),
    )
}

/// `out[pos[i] - 1] = src[i]` where `flags[i]`, `pos` being the inclusive count of flags:
/// the scatter half of `pack`. The last thread writes the kept count, `pos`'s last element,
/// as the count record `count` (`count_record`).
pub fn pack_scatter(elem: Scalar) -> Kernel {
    let t = storage_type(elem);
    let record = count_record("count", "i32(pos[i])");
    simple(
        &format!("pack_scatter_{}", elem.name()),
        &[
            ("src", t, Access::Read),
            ("flags", "u32", Access::Read),
            ("pos", "u32", Access::Read),
            ("out", t, Access::ReadWrite),
            ("count", "i32", Access::ReadWrite),
        ],
        &format!(
            "    if (flags[i] != 0u) {{ out[pos[i] - 1u] = src[i]; }}\n    if (i + 1u == p[0]) {{\n{record}    }}\n"
        ),
    )
}

/// The first half of a scatter: for each destination, the last thread (in index order) that
/// writes it, so that the last write wins as in the interpreter. `p[2]` is the destination's
/// length: an index out of range (which a check reports apart) writes nothing.
pub fn scatter_winners(index: Scalar) -> Kernel {
    simple(
        &format!("scatter_winners_{}", index.name()),
        &[("index", storage_type(index), Access::Read), ("winner", "atomic<i32>", Access::ReadWrite)],
        "    let d = u32(index[i]);\n    if (d < p[2]) { atomicMax(&winner[d], i32(i)); }\n",
    )
}

/// The second half of a scatter: each winning thread writes its value into `out`, a copy of
/// the destination. With `distinct` indexes every thread writes, and there is no first half.
pub fn scatter_write(index: Scalar, src: Operand, distinct: bool) -> Kernel {
    let mut w = Writer::new();
    w.bind("index", storage_type(index), Access::Read);
    if !distinct {
        w.bind("winner", "i32", Access::Read);
    }
    let value = w.operand(0, src);
    let t = src.ty();
    w.bind("out", storage_type(t), Access::ReadWrite);
    let value = super::scalar::to_storage(t, &value);
    let wins = if distinct { "" } else { " && winner[d] == i32(i)" };
    let main = format!(
        "{MAIN_HEADER}    let d = u32(index[i]);
    if (d < p[2]{wins}) {{ out[d] = {value}; }}
}}
"
    );
    let kind = if distinct { "scatter_distinct" } else { "scatter_write" };
    w.finish(format!("{kind}_{}", t.name()), &main)
}

/// `out[i] = value`, for every `i`: `replicate` (NESL's `dist`).
pub fn fill(value: Operand) -> Kernel {
    let mut w = Writer::new();
    let x = w.operand(0, value);
    let t = value.ty();
    w.bind("out", storage_type(t), Access::ReadWrite);
    let main = format!("{MAIN_HEADER}    out[i] = {};\n}}\n", super::scalar::to_storage(t, &x));
    w.finish(format!("fill_{}", t.name()), &main)
}

/// `out[i] = i`.
pub fn iota() -> Kernel {
    simple("iota", &[("out", "i32", Access::ReadWrite)], "    out[i] = i32(i);\n")
}

/// `parts[0][0], parts[1][0], ..., parts[0][1], ...`: thread `i` writes element `i` of the
/// output.
pub fn interleave(parts: &[Operand]) -> Kernel {
    let mut w = Writer::new();
    let k = parts.len().max(1);
    let mut cases = String::new();
    let t = parts.first().map_or(Scalar::I32, |p| p.ty());
    for (j, &part) in parts.iter().enumerate() {
        let x = w.operand(j, part).replace("[i]", "[e]");
        cases.push_str(&format!("        case {j}u: {{ out[i] = {}; }}\n", super::scalar::to_storage(t, &x)));
    }
    w.bind("out", storage_type(t), Access::ReadWrite);
    let main = format!(
        "{MAIN_HEADER}    let e = i / {k}u;\n    switch (i % {k}u) {{\n{cases}        default: {{}}\n    }}\n}}\n"
    );
    w.finish(format!("interleave_{k}_{}", t.name()), &main)
}

/// `dst[i] = src[i]` for 32-bit elements: the bandwidth baseline of the benchmarks.
pub fn copy() -> Kernel {
    simple(
        "copy",
        &[("src", "u32", Access::Read), ("dst", "u32", Access::ReadWrite)],
        "    dst[i] = src[i];\n",
    )
}

/// Counts to `p[2]` in one thread: an adapter that stops loops early (llvmpipe before Mesa
/// 25 stops at 65,535 iterations) gives a smaller count.
pub fn loop_counter() -> Kernel {
    simple(
        "loop_counter",
        &[("out", "u32", Access::ReadWrite)],
        "    var c = 0u;\n    for (var k = 0u; k < p[2]; k++) { c = c + 1u; }\n    out[0] = c;\n",
    )
}

/// A kernel without helpers whose bindings are `arrays`, in order, and whose `main` is
/// `MAIN_HEADER` followed by `body`.
pub(super) fn simple(name: &str, arrays: &[(&str, &str, Access)], body: &str) -> Kernel {
    let mut w = Writer::new();
    for (array, ty, access) in arrays {
        w.bind(array, ty, *access);
    }
    w.finish(name.to_string(), &format!("{MAIN_HEADER}{body}}}\n"))
}
