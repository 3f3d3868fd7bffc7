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

use weft_analysis::Database;
use weft_analysis::SourceFile;
use weft_analysis::pipeline;
use weft_core::BinaryOp;
use weft_core::types::Scalar;
use weft_exec::cpu::{self, Buffer, Counters, FlatValue};
use weft_exec::interp;
use weft_flat::flatten::InnerSchedule;
use weft_flat::fuse;
use weft_flat::ir;
use weft_flat::ir::{Op, ReduceOp};
use weft_flat::wgsl::prims::{BLOCK, ITEMS};
use weft_flat::wgsl::{Access, Kernel};
use weft_gpu::runtime::{Binding, DeviceBuffer, Gpu};
use weft_gpu::{self as gpu, DeviceValue};

const RUNS: usize = 9;
const N: usize = 1 << 22;

/// A named thing to time.
type Case<'a> = (&'static str, Box<dyn FnMut() + 'a>);

/// Median per case of `RUNS` rounds, each round running every case once, by the wall clock.
fn interleaved(cases: &mut [Case<'_>]) -> Vec<Duration> {
    let mut timed: Vec<Measured<'_>> = cases
        .iter_mut()
        .map(|(name, f)| -> Measured<'_> {
            (
                *name,
                Box::new(move || {
                    let start = Instant::now();
                    f();
                    start.elapsed()
                }),
            )
        })
        .collect();
    interleaved_measured(&mut timed)
}

/// A named thing to time that measures itself (by timestamp queries, say).
type Measured<'a> = (&'static str, Box<dyn FnMut() -> Duration + 'a>);

/// Median of `RUNS` interleaved rounds of `cases`, each giving its own measured time, after
/// one round of warming up.
fn interleaved_measured(cases: &mut [Measured<'_>]) -> Vec<Duration> {
    for (_, f) in cases.iter_mut() {
        f();
    }
    let mut times = vec![Vec::with_capacity(RUNS); cases.len()];
    for _ in 0..RUNS {
        for (k, (_, f)) in cases.iter_mut().enumerate() {
            times[k].push(f());
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
    hand_block_sum("hand_reduce", &[("src", "f32", Access::Read)], "src[i]")
}

/// Per-block sums of `element` (an expression in `i`) over the `arrays` it reads, into `dst`.
fn hand_block_sum(name: &str, arrays: &[(&str, &str, Access)], element: &str) -> Kernel {
    let mut arrays = arrays.to_vec();
    arrays.push(("dst", "f32", Access::ReadWrite));
    kernel(
        name,
        &arrays,
        &format!(
            "var<workgroup> s: array<f32, 256>;
//MAIN    let block = wid.x + wid.y * nwg.x;
    var acc = 0.0;
    for (var k = 0u; k < {ITEMS}u; k++) {{
        let i = block * {BLOCK}u + k * 256u + lid;
        if (i < p[0]) {{ acc += {element}; }}
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

fn device_value(gpu: &Gpu, value: FlatValue) -> DeviceValue {
    gpu::upload(gpu, value).expect("uploads")
}

fn raw(value: &DeviceValue) -> Arc<DeviceBuffer> {
    match value {
        DeviceValue::Device(v) => v.buffer.clone(),
        DeviceValue::Host(_) => panic!("a device value"),
    }
}

fn primitives(gpu: &Gpu) {
    let floats = FlatValue::vector(Buffer::F32((0..N).map(|i| (i % 97) as f32 * 0.25).collect()));
    let ints = FlatValue::i32s((0..N).map(|i| (i % 7) as i32 - 3).collect());
    let index = FlatValue::i32s((0..N).map(|i| ((i as u64 * 2_654_435_761) % N as u64) as i32).collect());
    let (a, b) = (device_value(gpu, floats.clone()), device_value(gpu, floats));
    let (ints, index) = (device_value(gpu, ints), device_value(gpu, index));
    let hand = Hand { gpu };
    let copy_out = hand.buffer(N as u64 * 4);
    let hand_out = hand.buffer(N as u64 * 4);
    let apply = |op: Op, dest: Scalar, args: Vec<DeviceValue>| {
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
    fn draw(&mut self, _chart: weft_exec::chart::Chart) {}

    fn read_file(&mut self, path: &str) -> std::io::Result<Vec<u8>> {
        std::fs::read(format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR")))
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
        let Ok(program) = pipeline::flat_program(&db, file, Default::default()) else { continue };
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
    let program = pipeline::flat_program(db, file, Default::default()).expect("flattens");
    let kernels = weft_flat::wgsl::program::program_kernels(program);
    for k in &kernels {
        gpu.prepare(&k.kernel).expect("builds");
    }
    kernels.len()
}

fn pipelines() {
    use salsa::Setter;
    let path = format!("{}/../../samples/dot_product.weft", env!("CARGO_MANIFEST_DIR"));
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
        let program = pipeline::flat_program(&db, file, Default::default()).expect("flattens");
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
    if wanted("black_scholes") {
        black_scholes(gpu);
    }
    if wanted("library") {
        library_kernels(gpu);
    }
    if wanted("ablation") {
        ablation(gpu);
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
        let op = Op::SegSortPerm { keys: vec![0], segs: weft_flat::ir::Segs { offsets: 1, lengths: 2 } };
        let args =
            [FlatValue::i32s(keys.clone()), FlatValue::i32s(vec![0]), FlatValue::i32s(vec![SORTED as i32])];
        let on_device: Vec<DeviceValue> = args.iter().map(|a| device_value(gpu, a.clone())).collect();
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
    let dir = format!("{}/../../samples", env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("the samples")
        .filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".weft").map(String::from))
        .collect();
    names.sort();
    names
}

fn sample_program(name: &str) -> (Database, SourceFile) {
    let path = format!("{}/../../samples/{name}.weft", env!("CARGO_MANIFEST_DIR"));
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
        let program = pipeline::flat_program(&db, file, Default::default()).expect("flattens");
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
    let unchecked = weft_flat::flatten::Options { without_checks: true, ..Default::default() };
    for name in names {
        let (db, file) = sample_program(&name);
        let Ok(checked) = pipeline::flat_program(&db, file, Default::default()) else { continue };
        let Ok(bare) = pipeline::fused_program(&db, file, unchecked.into()) else { continue };
        let bare = &bare.program;
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
            ("gpu bare", Box::new(|| drop(gpu::run(gpu, bare, &mut QuietHost).expect("runs")))),
            ("cpu", Box::new(|| cpu::run(checked, &mut QuietHost, &mut Counters::default()).expect("runs"))),
            (
                "cpu bare",
                Box::new(|| cpu::run(bare, &mut QuietHost, &mut Counters::default()).expect("runs")),
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

// ---- fusion (issue 9) ----------------------------------------------------------------------

/// A program flattened and fused by `strategy`, within the adapter's bindings.
fn fused_program(db: &Database, file: SourceFile, gpu: &Gpu, strategy: fuse::Strategy) -> ir::Program {
    scheduled_program(db, file, gpu, strategy, InnerSchedule::Auto)
}

/// `fused_program` for the GPU, with inner reductions scheduled as `inner` says.
fn scheduled_program(
    db: &Database,
    file: SourceFile,
    gpu: &Gpu,
    strategy: fuse::Strategy,
    inner: InnerSchedule,
) -> ir::Program {
    let mut options = pipeline::Options::default();
    options.fusion.strategy = strategy;
    options.flatten.inner = inner;
    let options = options.for_gpu(gpu.limits.max_storage_buffers_per_shader_stage);
    pipeline::fused_program(db, file, options).expect("flattens").program.clone()
}

/// Kernel time (timestamp queries) of a profiled run of `program`, counting only launches
/// attributed to source offsets in `region`.
fn kernel_time(gpu: &Gpu, program: &ir::Program, region: std::ops::Range<u32>) -> Duration {
    let report = gpu::run_profiled(gpu, program, &mut QuietHost).expect("runs");
    let profile = report.profile.expect("a profile");
    profile.timings.iter().filter(|t| region.contains(&t.source.0) && t.source.1 > 0).map(|t| t.time).sum()
}

/// Kernel time of what `launch` dispatches, by the same timestamp queries.
fn hand_time(gpu: &Gpu, launch: &dyn Fn()) -> Duration {
    gpu.start_profile(None).expect("profiles");
    launch();
    gpu.wait().expect("finishes");
    let profile = gpu.finish_profile().expect("profiled").expect("a profile");
    profile.timings.iter().map(|t| t.time).sum()
}

const BLACK_SCHOLES: &str = "n = 4000000
riskfree = 0.02
volatility = 0.30

def cnd(d: f32) -> f32:
    return 0.5 * (1.0 + erf(d / sqrt(2.0)))

def price(s: f32, k: f32, t: f32) -> (f32, f32):
    sqrt_t = sqrt(t)
    d1 = (log(s / k) + (riskfree + 0.5 * volatility * volatility) * t) / (volatility * sqrt_t)
    d2 = d1 - volatility * sqrt_t
    discounted_k = k * exp(-riskfree * t)
    call = s * cnd(d1) - discounted_k * cnd(d2)
    put = discounted_k * cnd(-d2) - s * cnd(-d1)
    return (call, put)

spots = [5.0 + 25.0 * u for u in random_f32(n, 1)]
strikes = [1.0 + 99.0 * u for u in random_f32(n, 2)]
times = [0.25 + 9.75 * u for u in random_f32(n, 3)]
calls, puts = unzip([price(s, k, t) for s, k, t in zip(spots, strikes, times)])
print(calls[0], puts[n - 1])
";

/// The same pricing as one hand-written kernel: inputs from the same hash, one thread per
/// option, calls and puts written out.
fn hand_black_scholes() -> Kernel {
    use std::collections::BTreeSet;
    use weft_flat::wgsl::scalar::{Helper, helper_source};
    let helpers = helper_source(&BTreeSet::from([Helper::Erf, Helper::Random]));
    let body = format!(
        "{helpers}
fn uniform(seed: i32, i: u32) -> f32 {{ return f32(random_bits(seed, i) >> 8u) * 5.9604645e-8f; }}
fn cnd(d: f32) -> f32 {{ return 0.5f * (1.0f + erf_f32(d / sqrt(2.0f))); }}
//MAIN    let i = (wid.x + wid.y * nwg.x) * 256u + lid;
    if (i >= p[0]) {{ return; }}
    let s = 5.0f + 25.0f * uniform(1, i);
    let k = 1.0f + 99.0f * uniform(2, i);
    let t = 0.25f + 9.75f * uniform(3, i);
    let r = 0.02f;
    let v = 0.3f;
    let sqrt_t = sqrt(t);
    let d1 = (log(s / k) + (r + 0.5f * v * v) * t) / (v * sqrt_t);
    let d2 = d1 - v * sqrt_t;
    let dk = k * exp(-r * t);
    calls[i] = s * cnd(d1) - dk * cnd(d2);
    puts[i] = dk * cnd(-d2) - s * cnd(-d1);
"
    );
    kernel(
        "hand_black_scholes",
        &[("calls", "f32", Access::ReadWrite), ("puts", "f32", Access::ReadWrite)],
        &body,
    )
}

fn hand_dot_blocks() -> Kernel {
    hand_block_sum("hand_dot", &[("a", "f32", Access::Read), ("b", "f32", Access::Read)], "a[i] * b[i]")
}

fn hand_saxpy() -> Kernel {
    kernel(
        "hand_saxpy",
        &[("x", "f32", Access::Read), ("y", "f32", Access::Read), ("out", "f32", Access::ReadWrite)],
        "//MAIN    let i = (wid.x + wid.y * nwg.x) * 256u + lid;\n    if (i < p[0]) { out[i] = 2.5f * x[i] + y[i]; }\n",
    )
}

/// Scalar CSR: one thread per row, a loop over its non-zeros.
fn hand_spmv() -> Kernel {
    kernel(
        "hand_spmv",
        &[
            ("row_ptr", "i32", Access::Read),
            ("cols", "i32", Access::Read),
            ("vals", "f32", Access::Read),
            ("x", "f32", Access::Read),
            ("y", "f32", Access::ReadWrite),
        ],
        "//MAIN    let r = (wid.x + wid.y * nwg.x) * 256u + lid;
    if (r >= p[0]) { return; }
    var acc = 0.0f;
    for (var k = row_ptr[r]; k < row_ptr[r + 1u]; k++) { acc += vals[k] * x[cols[k]]; }
    y[r] = acc;
",
    )
}

/// One row of the library table: a Weft program's measured region against a hand-written run
/// that moves `bytes`.
struct LibraryCase<'a> {
    name: &'static str,
    size: usize,
    program: &'a (String, std::ops::Range<u32>),
    hand: &'a dyn Fn(),
    bytes: u64,
    inner: InnerSchedule,
}

/// A Weft program whose measured part is the body of `if n > 0:` (fusion stays inside a
/// control region, so the inputs made before it are stored arrays, as a library call would
/// get them).
fn measured_program(setup: &str, measured: &str) -> (String, std::ops::Range<u32>) {
    let head = format!("{setup}if n > 0:\n");
    let body: String = measured.lines().map(|l| format!("    {l}\n")).collect();
    let region = head.len() as u32..(head.len() + body.len()) as u32;
    (head + &body, region)
}

/// Black-Scholes: the whole program, fused by each strategy, against one hand-written kernel.
fn black_scholes(gpu: &Gpu) {
    let hand = Hand { gpu };
    println!("\n## Fusion: kernel time by timestamp queries, median of {RUNS} interleaved runs\n");
    // Black-Scholes: the whole program, fused by each strategy, against one hand-written kernel.
    let db = Database::default();
    let file = SourceFile::new(&db, "black_scholes_4m.weft".into(), BLACK_SCHOLES.into());
    let programs: Vec<(fuse::Strategy, ir::Program)> =
        [fuse::Strategy::None, fuse::Strategy::Ilp].map(|s| (s, fused_program(&db, file, gpu, s))).into();
    const OPTIONS: usize = 4_000_000;
    let (calls, puts) = (hand.buffer(OPTIONS as u64 * 4), hand.buffer(OPTIONS as u64 * 4));
    let hand_bs = || hand.launch(&hand_black_scholes(), OPTIONS, &[(&calls, OPTIONS), (&puts, OPTIONS)]);
    let everything = 0..u32::MAX;
    let mut cases: Vec<Measured<'_>> = vec![
        ("none", Box::new(|| kernel_time(gpu, &programs[0].1, everything.clone()))),
        ("ilp", Box::new(|| kernel_time(gpu, &programs[1].1, everything.clone()))),
        ("hand-written", Box::new(|| hand_time(gpu, &hand_bs))),
    ];
    let t = interleaved_measured(&mut cases);
    let launches = |p: &ir::Program| {
        let report = gpu::run(gpu, p, &mut QuietHost).expect("runs");
        report.stats.launches
    };
    println!(
        "### Black-Scholes, {OPTIONS} options (inputs generated on the device, calls and puts written)\n"
    );
    println!("| version | launches | kernel time (ms) | against fused | against hand-written |");
    println!("|---|---|---|---|---|");
    for (k, name) in ["--fusion none", "--fusion ilp", "hand-written, one kernel"].iter().enumerate() {
        let n = if k < 2 { launches(&programs[k].1).to_string() } else { "1".into() };
        println!(
            "| {name} | {n} | {:.2} | {:.2} | {:.2} |",
            ms(t[k]),
            ms(t[k]) / ms(t[1]),
            ms(t[k]) / ms(t[2])
        );
    }
}

/// Dot, saxpy and spmv: the measured region of a Weft program, fused, against hand-written
/// kernels on the same sizes, and those against the copy bandwidth of the same run.
fn library_kernels(gpu: &Gpu) {
    let hand = Hand { gpu };
    // Copy bandwidth, the ceiling for the memory-bound cases (a size that stays a 1-D grid).
    const COPY: usize = 16_000_000;
    let (src, dst) = (hand.buffer(COPY as u64 * 4), hand.buffer(COPY as u64 * 4));
    let copy = || hand.launch(&hand_copy(), COPY, &[(&src, COPY), (&dst, COPY)]);
    let copy_time = interleaved_measured(&mut [("copy", Box::new(|| hand_time(gpu, &copy)))])[0];
    let copy_rate = (2 * COPY * 4) as f64 / copy_time.as_secs_f64() / 1e9;
    println!("\nCopy of {COPY} u32: {:.2} ms, {copy_rate:.2} GB/s (read + write).\n", ms(copy_time));

    // Dot, saxpy, spmv: the measured region only, against hand-written kernels on the same sizes.
    const DOT: usize = 10_000_000;
    const SAXPY: usize = 16_000_000;
    let dot = measured_program(
        &format!("n = {DOT}\nxs = random_f32(n, 1)\nys = random_f32(n, 2)\n"),
        "print(sum([x * y for x, y in zip(xs, ys)]))",
    );
    let saxpy = measured_program(
        &format!("n = {SAXPY}\nxs = random_f32(n, 1)\nys = random_f32(n, 2)\n"),
        "zs = [2.5 * x + y for x, y in zip(xs, ys)]\nprint(zs[0])",
    );
    let rows = 105_000;
    let spmv = measured_program(
        &format!(
            "n = {rows}\nlens = random_i32(n, 0, 20, 7)\nnnz = sum(lens)\n\
             vals = partition(random_f32(nnz, 9), lens)\ncols = partition(random_i32(nnz, 0, n, 8), lens)\n\
             x = random_f32(n, 10)\n"
        ),
        "y = [sum([a * x[c] for a, c in zip(ai, ci)]) for ai, ci in zip(vals, cols)]\nprint(y[0])",
    );
    let (a, b) = (hand.buffer(SAXPY as u64 * 4), hand.buffer(SAXPY as u64 * 4));
    let out = hand.buffer(SAXPY as u64 * 4);
    let partials = hand.buffer((DOT.div_ceil(BLOCK as usize) * 4) as u64);
    fastrand::seed(3);
    let lens: Vec<i32> = (0..rows).map(|_| fastrand::i32(0..20)).collect();
    let mut row_ptr = vec![0i32];
    for l in &lens {
        row_ptr.push(row_ptr.last().unwrap() + l);
    }
    let nnz = *row_ptr.last().unwrap() as usize;
    let upload = |v: FlatValue| raw(&device_value(gpu, v));
    let ptr = upload(FlatValue::i32s(row_ptr));
    let cols = upload(FlatValue::i32s((0..nnz).map(|_| fastrand::i32(0..rows as i32)).collect()));
    let vals = upload(FlatValue::vector(Buffer::F32((0..nnz).map(|_| fastrand::f32()).collect())));
    let x = upload(FlatValue::vector(Buffer::F32((0..rows).map(|_| fastrand::f32()).collect())));
    let y = hand.buffer(rows as u64 * 4);
    let hand_dot = || {
        hand.launch_blocks(
            &hand_dot_blocks(),
            DOT,
            &[(&a, DOT), (&b, DOT), (&partials, DOT.div_ceil(BLOCK as usize))],
        );
        hand.reduce(&partials, DOT.div_ceil(BLOCK as usize));
    };
    let hand_saxpy_run = || hand.launch(&hand_saxpy(), SAXPY, &[(&a, SAXPY), (&b, SAXPY), (&out, SAXPY)]);
    let hand_spmv_run = || {
        hand.launch(
            &hand_spmv(),
            rows,
            &[(&ptr, rows + 1), (&cols, nnz), (&vals, nnz), (&x, rows), (&y, rows)],
        )
    };
    println!("\n### Library kernels: the measured region fused (ilp) against hand-written WGSL\n");
    println!(
        "| kernel | size | weft fused (ms) | hand-written (ms) | weft / hand | hand's bandwidth | against copy |"
    );
    println!("|---|---|---|---|---|---|---|");
    let spmv_bytes = (nnz * 12 + rows * 12) as u64;
    let cases_of = [
        LibraryCase {
            name: "dot",
            size: DOT,
            program: &dot,
            hand: &hand_dot,
            bytes: (2 * DOT * 4) as u64,
            inner: InnerSchedule::Auto,
        },
        LibraryCase {
            name: "saxpy",
            size: SAXPY,
            program: &saxpy,
            hand: &hand_saxpy_run,
            bytes: (3 * SAXPY * 4) as u64,
            inner: InnerSchedule::Auto,
        },
        LibraryCase {
            name: "spmv_csr",
            size: nnz,
            program: &spmv,
            hand: &hand_spmv_run,
            bytes: spmv_bytes,
            inner: InnerSchedule::Auto,
        },
        LibraryCase {
            name: "spmv_csr, --inner flat",
            size: nnz,
            program: &spmv,
            hand: &hand_spmv_run,
            bytes: spmv_bytes,
            inner: InnerSchedule::Flat,
        },
        LibraryCase {
            name: "spmv_csr, --inner sequential",
            size: nnz,
            program: &spmv,
            hand: &hand_spmv_run,
            bytes: spmv_bytes,
            inner: InnerSchedule::Sequential,
        },
    ];
    for LibraryCase { name, size, program: (source, region), hand: hand_run, bytes, inner } in cases_of {
        let db = Database::default();
        let file = SourceFile::new(&db, "kernel.weft".into(), source.clone());
        let program = scheduled_program(&db, file, gpu, fuse::Strategy::Ilp, inner);
        let mut cases: Vec<Measured<'_>> = vec![
            ("weft", Box::new(|| kernel_time(gpu, &program, region.clone()))),
            ("hand", Box::new(|| hand_time(gpu, hand_run))),
        ];
        let t = interleaved_measured(&mut cases);
        let rate = bytes as f64 / t[1].as_secs_f64() / 1e9;
        println!(
            "| {name} | {size} | {:.2} | {:.2} | {:.2} | {rate:.2} GB/s | {:.0}% |",
            ms(t[0]),
            ms(t[1]),
            ms(t[0]) / ms(t[1]),
            100.0 * rate / copy_rate
        );
    }
}

/// Every sample under each strategy: launches, bytes bound and time, normalised to `none`;
/// and the ILP's build and solve time.
fn ablation(gpu: &Gpu) {
    println!(
        "\n## Fusion ablation: every sample, median of {RUNS} interleaved runs, normalised to --fusion none\n"
    );
    println!(
        "| sample | launches none / greedy / ilp | bytes bound none / greedy / ilp | time greedy | time ilp | fuse, ilp (ms) | of which solving (ms) | proved optimal |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let mut slowest = 0.0f64;
    for name in sample_names() {
        let (db, file) = sample_program(&name);
        let Ok(flat) = pipeline::flat_program(&db, file, Default::default()) else { continue };
        let strategies = [fuse::Strategy::None, fuse::Strategy::Greedy, fuse::Strategy::Ilp];
        let programs: Vec<ir::Program> =
            strategies.iter().map(|&s| fused_program(&db, file, gpu, s)).collect();
        let stats: Vec<_> =
            programs.iter().map(|p| gpu::run(gpu, p, &mut QuietHost).expect("runs").stats).collect();
        let mut cases: Vec<Case<'_>> = programs
            .iter()
            .map(|p| -> Case<'_> {
                (
                    "run",
                    Box::new(move || {
                        gpu::run(gpu, p, &mut QuietHost).expect("runs");
                    }),
                )
            })
            .collect();
        let t = interleaved(&mut cases);
        let options = fuse::Options {
            strategy: fuse::Strategy::Ilp,
            max_bindings: gpu.limits.max_storage_buffers_per_shader_stage,
        };
        let start = Instant::now();
        let (_, plan) = fuse::fuse(flat, options);
        let solve = start.elapsed();
        slowest = slowest.max(ms(solve));
        let optimal = plan.regions.iter().all(|r| r.solver.proved_optimal != Some(false));
        let solving = plan.regions.iter().map(|r| r.solver.micros).sum::<u64>() as f64 / 1e3;
        println!(
            "| {name} | {} / {} / {} | {} / {} / {} | {:.2} | {:.2} | {:.2} | {solving:.2} | {} |",
            stats[0].launches,
            stats[1].launches,
            stats[2].launches,
            stats[0].bytes_bound,
            stats[1].bytes_bound,
            stats[2].bytes_bound,
            ms(t[1]) / ms(t[0]),
            ms(t[2]) / ms(t[0]),
            ms(solve),
            if optimal { "yes" } else { "no" }
        );
    }
    println!("\nThe slowest fusion (analysis, ILP build and solve, rewrite) took {slowest:.2} ms.");
}
