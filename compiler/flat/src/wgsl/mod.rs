//! WGSL code generation: every kernel the GPU executor runs, as WGSL text that naga parses and
//! validates before wgpu sees it.
//!
//! Kernels come in two kinds. Element-wise ops and element loops are generated from the IR
//! (`map_kernel`, `element_loop_kernel`), one op's scalar code (`scalar`) per element. The
//! primitive library (`prims`) holds the data-parallel building blocks: reduce, scans
//! (multi-pass, segmented by head flags), scatter, pack and the segment descriptors.
//!
//! Every kernel follows one calling convention, which `runtime` relies on:
//! - binding 0 is `p`, a read-only `array<u32>` of parameters: `p[0]` the number of threads
//!   the launch covers, `p[1]` the op's sequence number (what a failure records), `p[2]` and
//!   `p[3]` for the kernel's own use, host scalars from `p[4]` on;
//! - the other bindings are storage arrays, in the order `Kernel::bindings` lists them;
//! - the launch is a 2-D grid of workgroups (WebGPU allows 65,535 per dimension), laid out by
//!   the host or, for a count computed on the device, written by the kernel that computes it
//!   (`prims::count_record`, whose writers take the grid's row width in `p[3]`); thread
//!   `(wid.x + wid.y * nwg.x) * WORKGROUP + lid` handles element `i`;
//! - a kernel that can fail ends with a binding `err`, and a failing thread does
//!   `atomicMin(&err[0], p[1])`: the first op (in program order) that failed.
//!
//! Nothing here waits on another workgroup, and every loop has a bound known at launch.

pub mod fused;
pub mod prims;
pub mod program;
pub mod scalar;
pub mod sort;

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::ir::{Block, Function, Op, StmtKind, VarId};
use weft_core::types::Scalar;

use self::scalar::{
    Helper, NotScalar, from_storage, helper_source, scalar_op, storage_type, to_storage, wgsl_type,
};

/// Threads per workgroup of every generated kernel.
pub const WORKGROUP: u32 = 256;
/// The first parameter slot of host scalars.
pub const FIRST_SCALAR: usize = 4;

/// How a kernel uses one of its storage bindings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    Read,
    ReadWrite,
}

/// One compute kernel: WGSL with a single entry point, `main`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Kernel {
    /// A stable name saying what it computes, such as `map_add_f32`.
    pub name: String,
    pub source: String,
    /// Bindings 1.. (binding 0 is always the parameters).
    pub bindings: Vec<Access>,
}

impl Kernel {
    /// Parses and validates the kernel with naga. A failure is a compiler bug.
    pub fn validate(&self) -> Result<naga::Module, String> {
        let module = naga::front::wgsl::parse_str(&self.source).map_err(|e| {
            format!("kernel `{}` does not parse: {}", self.name, e.emit_to_string(&self.source))
        })?;
        let mut validator = naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::all(),
        );
        validator
            .validate(&module)
            .map_err(|e| format!("kernel `{}` is not valid WGSL: {:?}", self.name, e.as_inner()))?;
        Ok(module)
    }
}

/// The fewest bytes each binding of a validated kernel reads, by binding number: one element
/// for a runtime-sized array, the whole type otherwise. Binding a shorter buffer is a
/// validation error on the device, which the runtime turns into a diagnostic before it can
/// happen.
pub fn min_binding_bytes(module: &naga::Module) -> Vec<u64> {
    let mut layouter = naga::proc::Layouter::default();
    if layouter.update(module.to_ctx()).is_err() {
        return Vec::new();
    }
    let min_size = |ty: naga::Handle<naga::Type>| -> u64 {
        match &module.types[ty].inner {
            naga::TypeInner::Array { size: naga::ArraySize::Dynamic, stride, .. } => u64::from(*stride),
            naga::TypeInner::Struct { members, .. } => {
                members.last().map_or(0, |last| match &module.types[last.ty].inner {
                    naga::TypeInner::Array { size: naga::ArraySize::Dynamic, stride, .. } => {
                        u64::from(last.offset) + u64::from(*stride)
                    }
                    _ => u64::from(layouter[ty].size),
                })
            }
            _ => u64::from(layouter[ty].size),
        }
    };
    let mut sizes = Vec::new();
    for (_, var) in module.global_variables.iter() {
        if let Some(binding) = &var.binding {
            let k = binding.binding as usize;
            if sizes.len() <= k {
                sizes.resize(k + 1, 0);
            }
            sizes[k] = min_size(var.ty);
        }
    }
    sizes
}

/// How a generated kernel gets one operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operand {
    /// A vector with one entry per thread.
    Elements(Scalar),
    /// A whole vector, indexed arbitrarily (a gather's source).
    Whole(Scalar),
    /// A one-element buffer on the device: a scalar no one read back.
    DeviceScalar(Scalar),
    /// A host scalar in parameter slot `FIRST_SCALAR + k` (32-bit types only).
    Param(Scalar, usize),
}

impl Operand {
    pub fn ty(self) -> Scalar {
        match self {
            Operand::Elements(t) | Operand::Whole(t) | Operand::DeviceScalar(t) | Operand::Param(t, _) => t,
        }
    }
}

/// Writes a kernel's declarations, and the header of `main` that computes `i`.
struct Writer {
    decls: String,
    bindings: Vec<Access>,
    helpers: BTreeSet<Helper>,
}

impl Writer {
    fn new() -> Writer {
        let decls = "@group(0) @binding(0) var<storage, read> p: array<u32>;\n".to_string();
        Writer { decls, bindings: Vec::new(), helpers: BTreeSet::new() }
    }

    /// Declares the next binding, an array of `ty` (a storage type) called `name`.
    fn bind(&mut self, name: &str, ty: &str, access: Access) {
        self.bindings.push(access);
        let mode = match access {
            Access::Read => "read",
            Access::ReadWrite => "read_write",
        };
        let _ = writeln!(
            self.decls,
            "@group(0) @binding({}) var<storage, {mode}> {name}: array<{ty}>;",
            self.bindings.len()
        );
    }

    /// The expression for operand `k`, declaring its binding if it has one.
    fn operand(&mut self, k: usize, operand: Operand) -> String {
        let name = format!("in{k}");
        match operand {
            Operand::Elements(t) => {
                self.bind(&name, storage_type(t), Access::Read);
                from_storage(t, &format!("{name}[i]"))
            }
            Operand::Whole(t) => {
                self.bind(&name, storage_type(t), Access::Read);
                name
            }
            Operand::DeviceScalar(t) => {
                self.bind(&name, storage_type(t), Access::Read);
                from_storage(t, &format!("{name}[0]"))
            }
            Operand::Param(t, slot) => param(t, FIRST_SCALAR + slot),
        }
    }

    fn finish(self, name: String, main: &str) -> Kernel {
        let mut source = self.decls;
        source.push('\n');
        source.push_str(&helper_source(&self.helpers));
        source.push_str(main);
        Kernel { name, source, bindings: self.bindings }
    }
}

/// A 32-bit host scalar from parameter slot `slot`.
fn param(ty: Scalar, slot: usize) -> String {
    match ty {
        Scalar::Bool => format!("(p[{slot}] != 0u)"),
        Scalar::I32 => format!("bitcast<i32>(p[{slot}])"),
        Scalar::F32 => format!("bitcast<f32>(p[{slot}])"),
        // 64-bit scalars travel as device scalars; a slot for one is a bug caught by naga.
        Scalar::I64 | Scalar::F64 => format!("{}(p[{slot}])", wgsl_type(ty)),
    }
}

/// The opening of `main`: `i`, and the early exit of threads past the end. Only kernels
/// without barriers may return early.
pub const MAIN_HEADER: &str = "@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x) * 256u + lid;
    if (i >= p[0]) { return; }
";

/// What a failing thread does.
const FAIL: &str = "atomicMin(&err[0], p[1]);";

/// One element-wise op (or check) over `operands`, in the order `op.operands()` lists them.
pub fn map_kernel(op: &Op, operands: &[Operand], result: Option<Scalar>) -> Result<Kernel, NotScalar> {
    let mut w = Writer::new();
    let args: Vec<String> = operands.iter().enumerate().map(|(k, &o)| w.operand(k, o)).collect();
    let types: Vec<Scalar> = operands.iter().map(|o| o.ty()).collect();
    let code = scalar_op(op, &args, &types, result, &mut w.helpers)?;
    let mut main = MAIN_HEADER.to_string();
    if let (Some(ty), Some(value)) = (result, &code.value) {
        w.bind("out", storage_type(ty), Access::ReadWrite);
        let _ = writeln!(main, "    out[i] = {};", to_storage(ty, value));
    }
    if let Some(fails) = &code.fails {
        w.bind("err", "atomic<u32>", Access::ReadWrite);
        let _ = writeln!(main, "    if ({fails}) {{ {FAIL} }}");
    }
    main.push_str("}\n");
    Ok(w.finish(kernel_name("map", op, &types, result), &main))
}

fn kernel_name(prefix: &str, op: &Op, types: &[Scalar], result: Option<Scalar>) -> String {
    let what = match op {
        Op::Unary(u, _) => format!("{u:?}"),
        Op::Binary(b, _, _) => format!("{b:?}"),
        Op::Math(f, _) => f.name().to_string(),
        Op::Check(check) => format!("check_{}", check.name()),
        other => other.name(),
    };
    let what: String =
        what.to_lowercase().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    let mut name = format!("{prefix}_{what}");
    for t in types.iter().chain(&result) {
        name.push('_');
        name.push_str(t.name());
    }
    name
}

/// An element loop (`ir::StmtKind::ElementLoop`): thread `i` runs element `i`'s loop.
pub struct LoopKernel<'a> {
    pub function: &'a Function,
    /// `params` take `inputs`, `state` takes `init`: one operand each.
    pub params: &'a [VarId],
    pub inputs: &'a [Operand],
    pub state: &'a [VarId],
    pub init: &'a [Operand],
    /// The whole vectors the blocks gather from.
    pub shared: &'a [VarId],
    pub cond: &'a Block,
    pub body: &'a Block,
}

impl LoopKernel<'_> {
    /// Bindings: the inputs, the initial states and the shared vectors that are not host
    /// scalars, in that order, then one output per state variable, then `err`.
    pub fn kernel(&self) -> Result<Kernel, NotScalar> {
        let f = self.function;
        let mut w = Writer::new();
        let mut main = MAIN_HEADER.to_string();
        let mut declared = BTreeSet::new();
        let mut body = String::new();
        let operands = self.inputs.iter().chain(self.init);
        let vars = self.params.iter().chain(self.state);
        for (k, (&var, &operand)) in vars.zip(operands).enumerate() {
            let value = w.operand(k, operand);
            let _ = writeln!(body, "    v{var} = {value};");
            declared.insert(var);
        }
        let mut shared = Vec::new();
        for (k, &var) in self.shared.iter().enumerate() {
            let name = format!("shared{k}");
            w.bind(&name, storage_type(f.ty(var).elem), Access::Read);
            shared.push((var, name));
        }
        let mut code = BlockWriter {
            f,
            shared: &shared,
            helpers: &mut w.helpers,
            declared: &mut declared,
            out: String::new(),
        };
        let cond = code.block(self.cond, 2)?;
        let next = code.block(self.body, 2)?;
        let (cond_code, next_code) = (cond.0, next.0);
        let Some(&c) = cond.1.first() else {
            return Err(NotScalar("an element loop without a condition".into()));
        };
        let mut all: Vec<VarId> = declared.iter().copied().collect();
        all.sort_unstable();
        for v in all {
            let _ = writeln!(main, "    var v{v}: {};", wgsl_type(f.ty(v).elem));
        }
        main.push_str(&body);
        main.push_str("    loop {\n");
        main.push_str(&cond_code);
        let _ = writeln!(main, "        if (!v{c}) {{ break; }}");
        main.push_str(&next_code);
        // The next state is computed in full before any of it is assigned.
        for (k, &r) in next.1.iter().enumerate() {
            let _ = writeln!(main, "        let next{k} = v{r};");
        }
        for (k, &s) in self.state.iter().enumerate() {
            let _ = writeln!(main, "        v{s} = next{k};");
        }
        main.push_str("    }\n");
        for (k, &s) in self.state.iter().enumerate() {
            let ty = f.ty(s).elem;
            w.bind(&format!("out{k}"), storage_type(ty), Access::ReadWrite);
            let _ = writeln!(main, "    out{k}[i] = {};", to_storage(ty, &format!("v{s}")));
        }
        w.bind("err", "atomic<u32>", Access::ReadWrite);
        main.push_str("}\n");
        Ok(w.finish(format!("element_loop_{}", f.name.replace('^', "_lifted")), &main))
    }
}

/// Scalar statements of an element loop's blocks, as WGSL assignments to `v{id}` variables
/// declared at the top of `main`.
struct BlockWriter<'a> {
    f: &'a Function,
    shared: &'a [(VarId, String)],
    helpers: &'a mut BTreeSet<Helper>,
    declared: &'a mut BTreeSet<VarId>,
    out: String,
}

impl BlockWriter<'_> {
    /// The block's code at `depth` levels of indentation, and its results.
    fn block(&mut self, block: &Block, depth: usize) -> Result<(String, Vec<VarId>), NotScalar> {
        let saved = std::mem::take(&mut self.out);
        let pad = "    ".repeat(depth);
        for stmt in &block.stmts {
            match &stmt.kind {
                StmtKind::Op { dest, op } => {
                    let operands = op.operands();
                    let mut args = Vec::with_capacity(operands.len());
                    let mut types = Vec::with_capacity(operands.len());
                    for (k, &v) in operands.iter().enumerate() {
                        let whole = op.reads_whole(k);
                        match self.shared.iter().find(|(s, _)| *s == v) {
                            Some((_, name)) if whole => args.push(name.clone()),
                            _ if whole => {
                                return Err(NotScalar("a gather from a vector that is not shared".into()));
                            }
                            _ => {
                                self.declared.insert(v);
                                args.push(format!("v{v}"));
                            }
                        }
                        types.push(self.f.ty(v).elem);
                    }
                    let result = dest.map(|d| self.f.ty(d).elem);
                    let code = scalar_op(op, &args, &types, result, self.helpers)?;
                    if let Some(fails) = &code.fails {
                        let _ = writeln!(self.out, "{pad}if ({fails}) {{ {FAIL} return; }}");
                    }
                    if let (Some(d), Some(value)) = (dest, &code.value) {
                        self.declared.insert(*d);
                        let _ = writeln!(self.out, "{pad}v{d} = {value};");
                    }
                }
                StmtKind::If { cond, then, otherwise, dests } => {
                    self.declared.insert(*cond);
                    let (then_code, then_results) = self.block(then, depth + 1)?;
                    let (else_code, else_results) = self.block(otherwise, depth + 1)?;
                    let _ = writeln!(self.out, "{pad}if (v{cond}) {{");
                    self.out.push_str(&then_code);
                    self.assign(dests, &then_results, depth + 1);
                    let _ = writeln!(self.out, "{pad}}} else {{");
                    self.out.push_str(&else_code);
                    self.assign(dests, &else_results, depth + 1);
                    let _ = writeln!(self.out, "{pad}}}");
                }
                _ => return Err(NotScalar("a host statement inside an element loop".into())),
            }
        }
        for &r in &block.results {
            self.declared.insert(r);
        }
        let code = std::mem::replace(&mut self.out, saved);
        Ok((code, block.results.clone()))
    }

    fn assign(&mut self, dests: &[VarId], values: &[VarId], depth: usize) {
        let pad = "    ".repeat(depth);
        for (&d, &v) in dests.iter().zip(values) {
            self.declared.insert(d);
            let _ = writeln!(self.out, "{pad}v{d} = v{v};");
        }
    }
}

#[cfg(test)]
mod tests;
