//! Hand-written WGSL: the flat workloads as a GPU programmer writes them for one element type,
//! on the same adapter and runtime as Weft's GPU executor (`weft_gpu::runtime`), so the gap
//! between the two is the compiler's. A copy kernel gives the adapter's copy bandwidth, the
//! limit a flat kernel's time is measured against.

use std::sync::Arc;
use std::time::Instant;

use weft_flat::wgsl::prims::{BLOCK, ITEMS};
use weft_flat::wgsl::{Access, Kernel};
use weft_gpu::runtime::{Binding, DeviceBuffer, Gpu};

use crate::inputs::{Array, Inputs, get_f32, get_i32};

/// The workloads written by hand here.
pub const WRITTEN: &[&str] = &["dot", "black_scholes", "spmv_csr", "segmented_sums", "spmv_ell"];

/// What the hand-written kernels do differently from the workload as Weft states it.
pub fn note(workload: &str) -> Option<&'static str> {
    match workload {
        "black_scholes" => Some("erf by the Abramowitz–Stegun polynomial"),
        "spmv_csr" | "segmented_sums" => {
            Some("one thread per row, row offsets computed on the host before the clock")
        }
        _ => None,
    }
}

/// Lines of WGSL of `workload`'s kernels, bindings and entry point included, blank lines not.
pub fn lines_of_code(workload: &str) -> Option<usize> {
    let kernels = match workload {
        "dot" => vec![
            block_sum("dot_blocks", &["a", "b"], "a[i] * b[i]"),
            block_sum("sum_blocks", &["src"], "src[i]"),
        ],
        "black_scholes" => vec![black_scholes()],
        "spmv_csr" => vec![csr_rows()],
        "segmented_sums" => vec![segment_sums()],
        "spmv_ell" => vec![ell_rows()],
        _ => return None,
    };
    Some(kernels.iter().flat_map(|k| k.source.lines()).filter(|l| !l.trim().is_empty()).count())
}

/// The adapter, with the hand-written kernels' buffers.
pub struct HandGpu {
    gpu: Gpu,
}

/// One workload's inputs on the device, and where its output goes.
pub struct Prepared {
    workload: String,
    n: usize,
    /// Each input's buffer and element count.
    inputs: Vec<(Arc<DeviceBuffer>, usize)>,
    output: Arc<DeviceBuffer>,
    output_len: usize,
    /// ELL's slabs per row.
    slabs: u32,
}

impl HandGpu {
    pub fn new() -> Result<HandGpu, String> {
        Gpu::new(None).map(|gpu| HandGpu { gpu }).map_err(|e| e.0)
    }

    pub fn describe(&self) -> String {
        self.gpu.describe()
    }

    /// Whether the adapter runs on the CPU (lavapipe).
    pub fn is_cpu(&self) -> bool {
        self.gpu.is_cpu()
    }

    /// Uploads `workload`'s inputs (outside the clock, as Weft's are).
    pub fn prepare(&self, workload: &str, inputs: &Inputs) -> Result<Prepared, String> {
        let upload = |array: Array| -> Result<(Arc<DeviceBuffer>, usize), String> {
            let bytes: Vec<u8> = match &array {
                Array::F32(xs) => xs.iter().flat_map(|x| x.to_le_bytes()).collect(),
                Array::I32(xs) => xs.iter().flat_map(|x| x.to_le_bytes()).collect(),
            };
            Ok((self.gpu.upload(&bytes).map_err(|e| e.0)?, array.len()))
        };
        let f32s = |name: &str| upload(Array::F32(get_f32(inputs, name).to_vec()));
        let i32s = |name: &str| upload(Array::I32(get_i32(inputs, name).to_vec()));
        let starts = |lens: &[i32]| {
            let mut starts = vec![0i32];
            starts.extend(lens.iter().scan(0, |total, &len| {
                *total += len;
                Some(*total)
            }));
            upload(Array::I32(starts))
        };
        let (n, buffers, output_len, slabs) = match workload {
            "dot" => {
                let n = get_f32(inputs, "xs").len();
                (n, vec![f32s("xs")?, f32s("ys")?], 1, 0)
            }
            "black_scholes" => {
                let n = get_f32(inputs, "spots").len();
                (n, vec![f32s("spots")?, f32s("strikes")?, f32s("times")?], 2 * n, 0)
            }
            "spmv_csr" => {
                let lens = get_i32(inputs, "lens");
                (lens.len(), vec![f32s("vals")?, i32s("cols")?, starts(lens)?, f32s("x")?], lens.len(), 0)
            }
            "segmented_sums" => {
                let lens = get_i32(inputs, "lens");
                (lens.len(), vec![f32s("values")?, starts(lens)?], lens.len(), 0)
            }
            "spmv_ell" => {
                let n = get_f32(inputs, "x").len();
                let slabs = (get_f32(inputs, "data").len() / n.max(1)) as u32;
                (n, vec![f32s("data")?, i32s("idx")?, f32s("x")?], n, slabs)
            }
            other => return Err(format!("no hand-written WGSL for {other}")),
        };
        let output = self.gpu.alloc((output_len.max(1) * 4) as u64).map_err(|e| e.0)?;
        Ok(Prepared { workload: workload.into(), n, inputs: buffers, output, output_len, slabs })
    }

    /// Runs the kernels and waits for the device: the time in milliseconds.
    pub fn time_once(&self, p: &Prepared) -> Result<f64, String> {
        let start = Instant::now();
        let n = p.n;
        let input = |k: usize| (&p.inputs[k].0, p.inputs[k].1);
        match p.workload.as_str() {
            "dot" => {
                let blocks = n.div_ceil(BLOCK as usize);
                let partial = self.gpu.alloc((blocks.max(1) * 4) as u64).map_err(|e| e.0)?;
                self.launch_blocks(
                    &block_sum("dot_blocks", &["a", "b"], "a[i] * b[i]"),
                    n,
                    &[input(0), input(1), (&partial, blocks)],
                )?;
                self.reduce_into(partial, blocks, &p.output)?;
            }
            "black_scholes" => {
                self.launch(&black_scholes(), n, &[], &[input(0), input(1), input(2), (&p.output, 2 * n)])?
            }
            "spmv_csr" => {
                self.launch(&csr_rows(), n, &[], &[input(0), input(1), input(2), input(3), (&p.output, n)])?;
            }
            "segmented_sums" => {
                self.launch(&segment_sums(), n, &[], &[input(0), input(1), (&p.output, n)])?;
            }
            "spmv_ell" => {
                self.launch(&ell_rows(), n, &[0, p.slabs], &[input(0), input(1), input(2), (&p.output, n)])?;
            }
            other => return Err(format!("no hand-written WGSL for {other}")),
        }
        self.gpu.wait().map_err(|e| e.0)?;
        Ok(start.elapsed().as_secs_f64() * 1000.0)
    }

    /// The output, read back.
    pub fn output(&self, p: &Prepared) -> Result<Vec<f64>, String> {
        let record = self.gpu.error_record().map_err(|e| e.0)?;
        let read = self.gpu.read(&p.output, 0, (p.output_len * 4) as u64, &record);
        self.gpu.return_record(record);
        let (bytes, _) = read.map_err(|e| e.0)?;
        Ok(bytes.chunks_exact(4).map(|b| f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))).collect())
    }

    /// The adapter's copy bandwidth in GB/s (bytes read plus bytes written per second), from
    /// the median of `repeat` copies of `n` words.
    pub fn copy_bandwidth(&self, n: usize, repeat: usize) -> Result<f64, String> {
        let src = self.gpu.filled(1, n as u64).map_err(|e| e.0)?;
        let dst = self.gpu.alloc((n * 4) as u64).map_err(|e| e.0)?;
        let copy = copy_kernel();
        let mut times = Vec::new();
        for _ in 0..=repeat {
            let start = Instant::now();
            self.launch(&copy, n, &[], &[(&src, n), (&dst, n)])?;
            self.gpu.wait().map_err(|e| e.0)?;
            times.push(start.elapsed().as_secs_f64());
        }
        times.remove(0);
        let (median, ..) = crate::summary(&times).ok_or("no copy was timed")?;
        Ok(8.0 * n as f64 / median / 1e9)
    }

    fn bindings(bindings: &[(&Arc<DeviceBuffer>, usize)]) -> Vec<Binding> {
        let bound =
            bindings.iter().map(|(b, len)| Binding { buffer: (*b).clone(), bytes: (*len as u64 * 4).max(4) });
        bound.collect()
    }

    fn launch(
        &self,
        kernel: &Kernel,
        n: usize,
        params: &[u32],
        bindings: &[(&Arc<DeviceBuffer>, usize)],
    ) -> Result<(), String> {
        let params = if params.is_empty() { &[0][..] } else { params };
        self.gpu.dispatch(kernel, n as u64, params, &Self::bindings(bindings)).map_err(|e| e.0)
    }

    fn launch_blocks(
        &self,
        kernel: &Kernel,
        n: usize,
        bindings: &[(&Arc<DeviceBuffer>, usize)],
    ) -> Result<(), String> {
        let blocks = (n as u64).div_ceil(u64::from(BLOCK));
        self.gpu.dispatch_groups(kernel, blocks, n as u64, &[0], &Self::bindings(bindings)).map_err(|e| e.0)
    }

    /// Sums `len` partial sums into `out[0]`, a block sum per pass.
    fn reduce_into(
        &self,
        mut current: Arc<DeviceBuffer>,
        mut len: usize,
        out: &Arc<DeviceBuffer>,
    ) -> Result<(), String> {
        let sum = block_sum("sum_blocks", &["src"], "src[i]");
        loop {
            let blocks = len.div_ceil(BLOCK as usize);
            if blocks == 1 {
                return self.launch_blocks(&sum, len, &[(&current, len), (out, 1)]);
            }
            let next = self.gpu.alloc((blocks * 4) as u64).map_err(|e| e.0)?;
            self.launch_blocks(&sum, len, &[(&current, len), (&next, blocks)])?;
            (current, len) = (next, blocks);
        }
    }
}

const MAIN: &str = "@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
";

/// A kernel over `arrays` (binding 0 is the parameters `p`, `p[0]` the element count):
/// `functions` before the entry point, `body` inside it.
fn kernel(name: &str, arrays: &[(&str, &str, Access)], functions: &str, body: &str) -> Kernel {
    let mut source = "@group(0) @binding(0) var<storage, read> p: array<u32>;\n".to_string();
    for (k, (array, ty, access)) in arrays.iter().enumerate() {
        let mode = if *access == Access::Read { "read" } else { "read_write" };
        source
            .push_str(&format!("@group(0) @binding({}) var<storage, {mode}> {array}: array<{ty}>;\n", k + 1));
    }
    source.push_str(functions);
    source.push_str(MAIN);
    source.push_str("    let i = (wid.x + wid.y * nwg.x) * 256u + lid;\n");
    source.push_str(body);
    source.push_str("}\n");
    Kernel { name: name.into(), source, bindings: arrays.iter().map(|a| a.2).collect() }
}

fn copy_kernel() -> Kernel {
    let arrays = [("src", "u32", Access::Read), ("dst", "u32", Access::ReadWrite)];
    kernel("hand_copy", &arrays, "", "    if (i < p[0]) { dst[i] = src[i]; }\n")
}

/// Per-block sums of `element` (an expression in `i` over the `f32` arrays `inputs`) into
/// `dst`: each thread sums `ITEMS` elements 256 apart, then a tree in workgroup memory.
fn block_sum(name: &str, inputs: &[&str], element: &str) -> Kernel {
    let mut arrays: Vec<(&str, &str, Access)> = inputs.iter().map(|a| (*a, "f32", Access::Read)).collect();
    arrays.push(("dst", "f32", Access::ReadWrite));
    let body = format!(
        "    let block = wid.x + wid.y * nwg.x;
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
    );
    kernel(name, &arrays, "var<workgroup> s: array<f32, 256>;\n", &body)
}

fn black_scholes() -> Kernel {
    let arrays = [
        ("s", "f32", Access::Read),
        ("k", "f32", Access::Read),
        ("t", "f32", Access::Read),
        ("out", "f32", Access::ReadWrite),
    ];
    let functions = "fn cnd(d: f32) -> f32 {
    let x = abs(d) / sqrt(2.0);
    let t = 1.0 / (1.0 + 0.3275911 * x);
    let y = 1.0 - t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))) * exp(-x * x);
    return 0.5 * (1.0 + select(y, -y, d < 0.0));
}
";
    let body = "    if (i >= p[0]) { return; }
    let sqrt_t = sqrt(t[i]);
    let d1 = (log(s[i] / k[i]) + (0.02 + 0.5 * 0.3 * 0.3) * t[i]) / (0.3 * sqrt_t);
    let d2 = d1 - 0.3 * sqrt_t;
    let dk = k[i] * exp(-0.02 * t[i]);
    out[2u * i] = s[i] * cnd(d1) - dk * cnd(d2);
    out[2u * i + 1u] = dk * cnd(-d2) - s[i] * cnd(-d1);
";
    kernel("hand_black_scholes", &arrays, functions, body)
}

fn csr_rows() -> Kernel {
    let arrays = [
        ("vals", "f32", Access::Read),
        ("cols", "i32", Access::Read),
        ("starts", "i32", Access::Read),
        ("x", "f32", Access::Read),
        ("y", "f32", Access::ReadWrite),
    ];
    let body = "    if (i >= p[0]) { return; }
    var total = 0.0;
    for (var e = starts[i]; e < starts[i + 1u]; e++) { total += vals[e] * x[cols[e]]; }
    y[i] = total;
";
    kernel("hand_csr_rows", &arrays, "", body)
}

fn segment_sums() -> Kernel {
    let arrays = [
        ("values", "f32", Access::Read),
        ("starts", "i32", Access::Read),
        ("sums", "f32", Access::ReadWrite),
    ];
    let body = "    if (i >= p[0]) { return; }
    var total = 0.0;
    for (var e = starts[i]; e < starts[i + 1u]; e++) { total += values[e]; }
    sums[i] = total;
";
    kernel("hand_segment_sums", &arrays, "", body)
}

fn ell_rows() -> Kernel {
    let arrays = [
        ("data", "f32", Access::Read),
        ("idx", "i32", Access::Read),
        ("x", "f32", Access::Read),
        ("y", "f32", Access::ReadWrite),
    ];
    let body = "    let n = p[0];
    if (i >= n) { return; }
    var total = 0.0;
    for (var j = 0u; j < p[1]; j++) { total += data[j * n + i] * x[idx[j * n + i]]; }
    y[i] = total;
";
    kernel("hand_ell_rows", &arrays, "", body)
}
