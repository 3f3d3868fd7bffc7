//! `cargo bench --bench gpu`: the GPU executor on the adapter `WEFT_ADAPTER` names (or the best).
//!
//! 1. The primitives against a plain copy kernel (the bandwidth baseline) and against
//!    hand-written WGSL versions of the same algorithms, kept below, on 4M elements.
//! 2. Every sample on the GPU executor and on the CPU executor: launches, submissions,
//!    read-backs, bytes bound to kernels, and time.
//! 3. The dot product from source to ready pipelines: cold (a new device, device creation
//!    reported apart) and warm, after an edit to another function.
//!
//! Every time is the median of `RUNS` runs, the cases interleaved round by round.

use std::sync::Arc;
use std::time::{Duration, Instant};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use weft_compiler::core::BinaryOp;
use weft_compiler::cpu::{self, Buffer, Counters, Value};
use weft_compiler::gpu::{self, GValue};
use weft_compiler::ir::{Op, ReduceOp};
use weft_compiler::runtime::{Binding, DeviceBuffer, Gpu};
use weft_compiler::types::Scalar;
use weft_compiler::wgsl::prims::{BLOCK, ITEMS};
use weft_compiler::wgsl::{Access, Kernel};
use weft_compiler::{Database, SourceFile, driver, interp};

const RUNS: usize = 9;
const N: usize = 1 << 22;

/// A named thing to time.
type Case<'a> = (&'static str, Box<dyn FnMut() + 'a>);

/// Median per case of `RUNS` rounds, each round running every case once.
fn interleaved(cases: &mut [Case<'_>]) -> Vec<Duration> {
    for (_, f) in cases.iter_mut() {
        f();
    }
    let mut times = vec![Vec::with_capacity(RUNS); cases.len()];
    for _ in 0..RUNS {
        for (k, (_, f)) in cases.iter_mut().enumerate() {
            let start = Instant::now();
            f();
            times[k].push(start.elapsed());
        }
    }
    times
        .into_iter()
        .map(|mut t| {
            t.sort();
            t[RUNS / 2]
        })
        .collect()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

// ---- hand-written kernels: the same algorithms, written out for one type and one op ----

const HEADER: &str = "@group(0) @binding(0) var<storage, read> p: array<u32>;\n";
const MAIN: &str = "@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
";

fn kernel(name: &str, arrays: &[(&str, &str, Access)], body: &str) -> Kernel {
    let mut source = HEADER.to_string();
    for (k, (array, ty, access)) in arrays.iter().enumerate() {
        let mode = if *access == Access::Read { "read" } else { "read_write" };
        source
            .push_str(&format!("@group(0) @binding({}) var<storage, {mode}> {array}: array<{ty}>;\n", k + 1));
    }
    source.push_str(body.split("//MAIN").next().unwrap_or(""));
    source.push_str(MAIN);
    source.push_str(body.split("//MAIN").nth(1).unwrap_or(body));
    source.push_str("}\n");
    Kernel { name: name.into(), source, bindings: arrays.iter().map(|a| a.2).collect() }
}

fn hand_copy() -> Kernel {
    kernel(
        "hand_copy",
        &[("src", "u32", Access::Read), ("dst", "u32", Access::ReadWrite)],
        "//MAIN    let i = (wid.x + wid.y * nwg.x) * 256u + lid;\n    if (i < p[0]) { dst[i] = src[i]; }\n",
    )
}

fn hand_add() -> Kernel {
    kernel(
        "hand_add",
        &[("a", "f32", Access::Read), ("b", "f32", Access::Read), ("out", "f32", Access::ReadWrite)],
        "//MAIN    let i = (wid.x + wid.y * nwg.x) * 256u + lid;\n    if (i < p[0]) { out[i] = a[i] + b[i]; }\n",
    )
}

fn hand_gather() -> Kernel {
    kernel(
        "hand_gather",
        &[("src", "f32", Access::Read), ("index", "i32", Access::Read), ("out", "f32", Access::ReadWrite)],
        "//MAIN    let i = (wid.x + wid.y * nwg.x) * 256u + lid;\n    if (i < p[0]) { out[i] = src[u32(index[i])]; }\n",
    )
}

/// Each workgroup sums `BLOCK` elements: `ITEMS` per thread, 256 apart, then a tree in
/// workgroup memory.
fn hand_reduce() -> Kernel {
    kernel(
        "hand_reduce",
        &[("src", "f32", Access::Read), ("dst", "f32", Access::ReadWrite)],
        &format!(
            "var<workgroup> s: array<f32, 256>;
//MAIN    let block = wid.x + wid.y * nwg.x;
    var acc = 0.0;
    for (var k = 0u; k < {ITEMS}u; k++) {{
        let i = block * {BLOCK}u + k * 256u + lid;
        if (i < p[0]) {{ acc += src[i]; }}
    }}
    s[lid] = acc;
    workgroupBarrier();
    for (var d = 128u; d > 0u; d >>= 1u) {{
        if (lid < d) {{ s[lid] += s[lid + d]; }}
        workgroupBarrier();
    }}
    if (lid == 0u) {{ dst[block] = s[0]; }}
"
        ),
    )
}

/// Scans blocks of `BLOCK` `i32` (`ITEMS` consecutive ones per thread, Hillis–Steele over the
/// threads), writing each block's total.
fn hand_scan_blocks() -> Kernel {
    kernel(
        "hand_scan_blocks",
        &[
            ("src", "i32", Access::Read),
            ("dst", "i32", Access::ReadWrite),
            ("sums", "i32", Access::ReadWrite),
        ],
        &format!(
            "var<workgroup> t: array<i32, 256>;
//MAIN    let block = wid.x + wid.y * nwg.x;
    let base = block * {BLOCK}u + lid * {ITEMS}u;
    var v: array<i32, {ITEMS}>;
    var acc = 0i;
    for (var k = 0u; k < {ITEMS}u; k++) {{
        if (base + k < p[0]) {{ acc += src[base + k]; }}
        v[k] = acc;
    }}
    t[lid] = acc;
    workgroupBarrier();
    for (var d = 1u; d < 256u; d <<= 1u) {{
        var left = 0i;
        if (lid >= d) {{ left = t[lid - d]; }}
        workgroupBarrier();
        t[lid] += left;
        workgroupBarrier();
    }}
    var carry = 0i;
    if (lid > 0u) {{ carry = t[lid - 1u]; }}
    for (var k = 0u; k < {ITEMS}u; k++) {{ if (base + k < p[0]) {{ dst[base + k] = v[k] + carry; }} }}
    if (lid == 255u) {{ sums[block] = t[255]; }}
"
        ),
    )
}

fn hand_add_carry() -> Kernel {
    kernel(
        "hand_add_carry",
        &[("dst", "i32", Access::ReadWrite), ("scanned", "i32", Access::Read)],
        &format!(
            "//MAIN    let i = (wid.x + wid.y * nwg.x) * 256u + lid;
    let block = i / {BLOCK}u;
    if (i < p[0] && block > 0u) {{ dst[i] += scanned[block - 1u]; }}
"
        ),
    )
}

struct Hand<'g> {
    gpu: &'g Gpu,
}

impl Hand<'_> {
    fn buffer(&self, bytes: u64) -> Arc<DeviceBuffer> {
        self.gpu.alloc(bytes).expect("allocates")
    }

    fn launch(&self, kernel: &Kernel, n: usize, bindings: &[(&Arc<DeviceBuffer>, usize)]) {
        let bindings: Vec<Binding> = bindings
            .iter()
            .map(|(b, len)| Binding { buffer: (*b).clone(), bytes: (*len as u64 * 4).max(4) })
            .collect();
        self.gpu.dispatch(kernel, n as u64, &[0; 4], &bindings).expect("launches");
    }

    fn launch_blocks(&self, kernel: &Kernel, n: usize, bindings: &[(&Arc<DeviceBuffer>, usize)]) {
        let bindings: Vec<Binding> = bindings
            .iter()
            .map(|(b, len)| Binding { buffer: (*b).clone(), bytes: (*len as u64 * 4).max(4) })
            .collect();
        let blocks = (n as u64).div_ceil(u64::from(BLOCK));
        self.gpu.dispatch_groups(kernel, blocks, n as u64, &[0; 4], &bindings).expect("launches");
    }

    fn reduce(&self, src: &Arc<DeviceBuffer>, n: usize) -> Arc<DeviceBuffer> {
        let (mut current, mut len) = (src.clone(), n);
        loop {
            let blocks = len.div_ceil(BLOCK as usize);
            let out = self.buffer(blocks as u64 * 4);
            self.launch_blocks(&hand_reduce(), len, &[(&current, len), (&out, blocks)]);
            if blocks == 1 {
                return out;
            }
            (current, len) = (out, blocks);
        }
    }

    fn scan(&self, src: &Arc<DeviceBuffer>, n: usize) -> Arc<DeviceBuffer> {
        let out = self.buffer(n as u64 * 4);
        let blocks = n.div_ceil(BLOCK as usize);
        let sums = self.buffer(blocks as u64 * 4);
        self.launch_blocks(&hand_scan_blocks(), n, &[(src, n), (&out, n), (&sums, blocks)]);
        if blocks > 1 {
            let scanned = self.scan(&sums, blocks);
            self.launch(&hand_add_carry(), n, &[(&out, n), (&scanned, blocks)]);
        }
        out
    }
}

fn device_value(gpu: &Gpu, value: Value) -> GValue {
    gpu::upload(gpu, value).expect("uploads")
}

fn raw(value: &GValue) -> Arc<DeviceBuffer> {
    match value {
        GValue::Device(v) => v.buffer.clone(),
        GValue::Host(_) => panic!("a device value"),
    }
}

fn primitives(gpu: &Gpu) {
    let floats = Value::vector(Buffer::F32((0..N).map(|i| (i % 97) as f32 * 0.25).collect()));
    let ints = Value::i32s((0..N).map(|i| (i % 7) as i32 - 3).collect());
    let index = Value::i32s((0..N).map(|i| ((i as u64 * 2_654_435_761) % N as u64) as i32).collect());
    let (a, b) = (device_value(gpu, floats.clone()), device_value(gpu, floats));
    let (ints, index) = (device_value(gpu, ints), device_value(gpu, index));
    let hand = Hand { gpu };
    let copy_out = hand.buffer(N as u64 * 4);
    let hand_out = hand.buffer(N as u64 * 4);
    let apply = |op: Op, dest: Scalar, args: Vec<GValue>| {
        gpu::apply(gpu, &op, Some(dest), args).expect("runs");
        gpu.wait().expect("finishes");
    };
    let wait = || gpu.wait().expect("finishes");
    let mut cases: Vec<Case<'_>> = vec![
        (
            "copy (hand-written, the baseline)",
            Box::new(|| {
                hand.launch(&hand_copy(), N, &[(&raw(&a), N), (&copy_out, N)]);
                wait();
            }),
        ),
        (
            "element-wise add",
            Box::new(|| apply(Op::Binary(BinaryOp::Add, 0, 1), Scalar::F32, vec![a.clone(), b.clone()])),
        ),
        (
            "element-wise add, hand-written",
            Box::new(|| {
                hand.launch(&hand_add(), N, &[(&raw(&a), N), (&raw(&b), N), (&hand_out, N)]);
                wait();
            }),
        ),
        (
            "gather",
            Box::new(|| apply(Op::Gather { src: 0, index: 1 }, Scalar::F32, vec![a.clone(), index.clone()])),
        ),
        (
            "gather, hand-written",
            Box::new(|| {
                hand.launch(&hand_gather(), N, &[(&raw(&a), N), (&raw(&index), N), (&hand_out, N)]);
                wait();
            }),
        ),
        (
            "reduce (add f32)",
            Box::new(|| apply(Op::Reduce { op: ReduceOp::Add, src: 0 }, Scalar::F32, vec![a.clone()])),
        ),
        (
            "reduce, hand-written",
            Box::new(|| {
                hand.reduce(&raw(&a), N);
                wait();
            }),
        ),
        (
            "scan (add i32)",
            Box::new(|| {
                apply(Op::Scan { op: ReduceOp::Add, src: 0, init: None }, Scalar::I32, vec![ints.clone()])
            }),
        ),
        (
            "scan, hand-written",
            Box::new(|| {
                hand.scan(&raw(&ints), N);
                wait();
            }),
        ),
    ];
    // Bytes each case must move at least: reads plus writes.
    let bytes = [8.0, 12.0, 12.0, 12.0, 12.0, 4.0, 4.0, 8.0, 8.0].map(|b: f64| b * N as f64);
    let names: Vec<&str> = cases.iter().map(|c| c.0).collect();
    let times = interleaved(&mut cases);
    let copy_bandwidth = bytes[0] / times[0].as_secs_f64();
    println!("\n## Primitives, {N} elements of 4 bytes, median of {RUNS} interleaved runs\n");
    println!("| primitive | time (ms) | GB/s | of copy bandwidth | library / hand-written |");
    println!("|---|---|---|---|---|");
    for (k, name) in names.iter().enumerate() {
        let bandwidth = bytes[k] / times[k].as_secs_f64();
        let against_hand =
            if k % 2 == 1 { format!("{:.2}", ms(times[k]) / ms(times[k + 1])) } else { String::new() };
        println!(
            "| {name} | {:.2} | {:.2} | {:.0}% | {against_hand} |",
            ms(times[k]),
            bandwidth / 1e9,
            100.0 * bandwidth / copy_bandwidth
        );
    }
}

/// Reads data files from the workspace root; prints nothing.
struct QuietHost;

impl interp::Host for QuietHost {
    fn print(&mut self, _line: &str) {}

    fn read_file(&mut self, path: &str) -> std::io::Result<Vec<u8>> {
        std::fs::read(format!("{}/../{path}", env!("CARGO_MANIFEST_DIR")))
    }
}

fn samples(gpu: &Gpu) {
    let names = sample_names();
    println!("\n## Samples: GPU executor against the CPU executor, median of {RUNS} interleaved runs\n");
    println!(
        "| sample | launches | submissions | read-backs | bytes bound | on the cpu | gpu (ms) | cpu (ms) | gpu / cpu |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for name in names {
        let (db, file) = sample_program(&name);
        let Ok(program) = driver::flat_program(&db, file) else { continue };
        let report = gpu::run(gpu, program, &mut QuietHost).expect("runs on the gpu");
        let mut cases: Vec<Case<'_>> = vec![
            (
                "gpu",
                Box::new(|| {
                    gpu::run(gpu, program, &mut QuietHost).expect("runs");
                }),
            ),
            (
                "cpu",
                Box::new(|| {
                    cpu::run(program, &mut QuietHost, &mut Counters::default()).expect("runs");
                }),
            ),
        ];
        let times = interleaved(&mut cases);
        let s = &report.stats;
        let on_cpu: Vec<String> = report.on_cpu.iter().map(|(op, n)| format!("{op} ×{n}")).collect();
        println!(
            "| {name} | {} | {} | {} | {} | {} | {:.2} | {:.2} | {:.1} |",
            s.launches,
            s.submissions,
            s.read_backs,
            s.bytes_bound,
            on_cpu.join(", "),
            ms(times[0]),
            ms(times[1]),
            ms(times[0]) / ms(times[1])
        );
    }
}

/// Source to ready pipelines: flatten, generate every kernel, build every pipeline.
fn ready(db: &Database, file: SourceFile, gpu: &Gpu) -> usize {
    let program = driver::flat_program(db, file).expect("flattens");
    let kernels = weft_compiler::wgsl::program::program_kernels(program);
    for k in &kernels {
        gpu.prepare(&k.kernel).expect("builds");
    }
    kernels.len()
}

fn pipelines() {
    use salsa::Setter;
    let path = format!("{}/../samples/dot_product.weft", env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(path).expect("the sample");
    let mut cold = Vec::new();
    let mut devices = Vec::new();
    let mut warm = Vec::new();
    let mut at_run_time = Vec::new();
    let mut count = 0;
    let mut built = 0;
    for _ in 0..RUNS {
        let start = Instant::now();
        let fresh = Gpu::new(std::env::var("WEFT_ADAPTER").ok().as_deref()).expect("a device");
        devices.push(start.elapsed());
        let mut db = Database::default();
        let file = SourceFile::new(&db, "dot_product.weft".into(), source.clone());
        let start = Instant::now();
        count = ready(&db, file, &fresh);
        cold.push(start.elapsed());
        // The kernels `weft wgsl` lists are those of vector operands; a scalar a reduction left
        // on the device makes a few more at run time. The first run builds those.
        let program = driver::flat_program(&db, file).expect("flattens");
        gpu::run(&fresh, program, &mut QuietHost).expect("runs");
        let stats = fresh.stats();
        built = stats.pipelines_built;
        at_run_time.push(stats.pipeline_time);
        // An edit to another function than the kernels' own.
        let edited = source.replace("return sqrt(dotp(xs, xs))", "return sqrt(dotp(xs, xs)) + 0.0");
        file.set_text(&mut db).to(edited);
        let start = Instant::now();
        ready(&db, file, &fresh);
        warm.push(start.elapsed());
    }
    for t in [&mut cold, &mut devices, &mut warm, &mut at_run_time] {
        t.sort();
    }
    println!("\n## The dot product, source to {count} ready pipelines, median of {RUNS}\n");
    println!("| step | time (ms) |");
    println!("|---|---|");
    println!("| device creation (apart) | {:.1} |", ms(devices[RUNS / 2]));
    println!("| cold: parse to pipelines, empty cache | {:.1} |", ms(cold[RUNS / 2]));
    println!("| warm: after an edit to `norm` | {:.2} |", ms(warm[RUNS / 2]));
    println!(
        "| the first run's pipelines ({built} in all, those above included), built as the run needs them | {:.1} |",
        ms(at_run_time[RUNS / 2])
    );
}

fn main() {
    // `cargo bench` passes `--bench`; no other argument is used.
    let gpu = match gpu::shared_gpu() {
        Ok(gpu) => gpu,
        Err(e) => {
            println!("skipped: no GPU adapter ({e})");
            return;
        }
    };
    println!("# GPU executor on {} ({:.0} ms to create the device)", gpu.describe(), ms(gpu.device_time));
    // `WEFT_BENCH_ONLY=sort,levels,...` runs only the named sections.
    let only = std::env::var("WEFT_BENCH_ONLY").unwrap_or_default();
    let wanted = |name: &str| only.is_empty() || only.split(',').any(|w| w == name);
    if wanted("pipelines") {
        pipelines();
    }
    if wanted("primitives") {
        primitives(gpu);
    }
    if wanted("samples") {
        samples(gpu);
    }
    if wanted("sort") {
        sort(gpu);
    }
    if wanted("levels") {
        recursion_levels(gpu);
    }
    if wanted("checks") {
        check_cost(gpu);
    }
}

/// The radix sort of 1M random `i32`s against the CPU executor's sort (a parallel merge sort
/// of positions) and `slice::sort_unstable` of the keys alone: keys over the whole range, and
/// keys in `0..1000` (whose upper digits the radix sort skips).
fn sort(gpu: &Gpu) {
    const SORTED: usize = 1 << 20;
    fastrand::seed(5);
    for (range, lo, hi) in [("all of i32", i32::MIN, i32::MAX), ("0..1000", 0, 1000)] {
        let keys: Vec<i32> = (0..SORTED).map(|_| fastrand::i32(lo..hi)).collect();
        let op = Op::SegSortPerm { keys: vec![0], segs: weft_compiler::ir::Segs { offsets: 1, lengths: 2 } };
        let args = [Value::i32s(keys.clone()), Value::i32s(vec![0]), Value::i32s(vec![SORTED as i32])];
        let on_device: Vec<GValue> = args.iter().map(|a| device_value(gpu, a.clone())).collect();
        let before = gpu.stats();
        gpu::apply(gpu, &op, Some(Scalar::I32), on_device.clone()).expect("sorts");
        let after = gpu.stats();
        let mut cases: Vec<Case<'_>> = vec![
            (
                "gpu radix sort",
                Box::new(|| {
                    gpu::apply(gpu, &op, Some(Scalar::I32), on_device.clone()).expect("sorts");
                    gpu.wait().expect("finishes");
                }),
            ),
            (
                "cpu executor sort",
                Box::new(|| {
                    cpu::kernels::run_op(&op, &args).expect("sorts");
                }),
            ),
            (
                "sort_unstable",
                Box::new(|| {
                    let mut k = keys.clone();
                    k.sort_unstable();
                    std::hint::black_box(k);
                }),
            ),
        ];
        let times = interleaved(&mut cases);
        println!("\n## Sort of {SORTED} random i32 in {range}, median of {RUNS} interleaved runs\n");
        println!(
            "The GPU sort: {} launches, {} read-backs, {} bytes bound.\n",
            after.launches - before.launches,
            after.read_backs - before.read_backs,
            after.bytes_bound - before.bytes_bound
        );
        println!("| sort | time (ms) | against sort_unstable |");
        println!("|---|---|---|");
        for ((name, _), t) in cases.iter().zip(&times) {
            println!("| {name} | {:.1} | {:.2} |", ms(*t), ms(*t) / ms(times[2]));
        }
    }
}

/// The samples' names, sorted.
fn sample_names() -> Vec<String> {
    let dir = format!("{}/../samples", env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("the samples")
        .filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".weft").map(String::from))
        .collect();
    names.sort();
    names
}

fn sample_program(name: &str) -> (Database, SourceFile) {
    let path = format!("{}/../samples/{name}.weft", env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(path).expect("the sample");
    let db = Database::default();
    let file = SourceFile::new(&db, format!("{name}.weft"), source);
    (db, file)
}

/// Launches and read-backs per call depth of the recursive samples: a flattened recursion
/// runs one level of its recursion tree per pair of depths (the function, then its body).
fn recursion_levels(gpu: &Gpu) {
    for name in ["quicksort", "quickhull"] {
        let (db, file) = sample_program(name);
        let program = driver::flat_program(&db, file).expect("flattens");
        let report = gpu::run(gpu, program, &mut QuietHost).expect("runs");
        println!("\n## {name}: work by call depth on the GPU executor\n");
        println!("| depth | calls | launches | read-backs |");
        println!("|---|---|---|---|");
        for (depth, level) in report.levels.iter().enumerate().skip(1) {
            println!("| {depth} | {} | {} | {} |", level.calls, level.launches, level.read_backs);
        }
        println!(
            "\nIn all: {} launches, {} read-backs, {} call depths.",
            report.stats.launches,
            report.stats.read_backs,
            report.levels.len() - 1
        );
    }
}

/// Every sample with its run-time checks and without them (`flatten::Options::without_checks`;
/// the program's own asserts stay), on both executors: what the checks that shape analysis
/// could not remove cost.
fn check_cost(gpu: &Gpu) {
    let names = sample_names();
    println!("\n## The cost of run-time checks, median of {RUNS} interleaved runs\n");
    println!(
        "| sample | check launches | gpu checked (ms) | gpu unchecked (ms) | gpu overhead | cpu checked (ms) | cpu unchecked (ms) | cpu overhead |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let unchecked = weft_compiler::flatten::Options { without_checks: true, ..Default::default() };
    for name in names {
        let (db, file) = sample_program(&name);
        let Ok(checked) = driver::flat_program(&db, file) else { continue };
        let Ok(bare) = driver::flat_program_with(&db, file, unchecked) else { continue };
        let report = gpu::run(gpu, checked, &mut QuietHost).expect("runs on the gpu");
        let check_launches: u64 = report
            .stats
            .per_kernel
            .iter()
            .filter(|(k, _)| (k.contains("check") && !k.contains("assert")) || k.starts_with("permutation"))
            .map(|(_, n)| n)
            .sum();
        let mut cases: Vec<Case<'_>> = vec![
            ("gpu", Box::new(|| drop(gpu::run(gpu, checked, &mut QuietHost).expect("runs")))),
            ("gpu bare", Box::new(|| drop(gpu::run(gpu, &bare, &mut QuietHost).expect("runs")))),
            ("cpu", Box::new(|| cpu::run(checked, &mut QuietHost, &mut Counters::default()).expect("runs"))),
            (
                "cpu bare",
                Box::new(|| cpu::run(&bare, &mut QuietHost, &mut Counters::default()).expect("runs")),
            ),
        ];
        let t = interleaved(&mut cases);
        let overhead = |a: Duration, b: Duration| format!("{:+.1}%", (ms(a) / ms(b) - 1.0) * 100.0);
        println!(
            "| {name} | {check_launches} | {:.2} | {:.2} | {} | {:.2} | {:.2} | {} |",
            ms(t[0]),
            ms(t[1]),
            overhead(t[0], t[1]),
            ms(t[2]),
            ms(t[3]),
            overhead(t[2], t[3])
        );
    }
}
