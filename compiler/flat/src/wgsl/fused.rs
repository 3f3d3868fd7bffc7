//! A fused kernel (`ir::FusedKernel`) as one WGSL entry point: every op of its body computed
//! per element in registers, the values read after the kernel written out, and the
//! reductions folded in the same pass (map -> reduce), each into one partial result per
//! block of `BLOCK` elements that the primitive reduce then finishes.

use std::fmt::Write as _;

use crate::ir::{Function, FusedKernel, Op, ReduceOp, Stmt, StmtKind, VarId};
use weft_core::types::Scalar;

use super::prims::{ITEMS, block_header, combine};
use super::scalar::{NotScalar, from_storage, scalar_op, storage_type, to_storage, wgsl_type};
use super::{Access, FAIL, Kernel, MAIN_HEADER, Operand, Writer, param};

/// The generated kernel and what its bindings after the inputs hold.
pub struct FusedCode {
    pub kernel: Kernel,
    /// The vectors it writes, one binding each, after the inputs.
    pub written: Vec<VarId>,
    /// Its reductions (result variable, operator, element type), one partials binding each,
    /// after the written vectors.
    pub reductions: Vec<(VarId, ReduceOp, Scalar)>,
    /// Whether it ends with the error record.
    pub fails: bool,
}

/// `kernel` over its inputs, each passed as `inputs` says (vectors `Whole`). Bindings: the
/// bound inputs in order, the written vectors, the partials, then `err` if anything can fail.
pub fn fused_kernel(
    f: &Function,
    kernel: &FusedKernel,
    inputs: &[(VarId, Operand)],
) -> Result<FusedCode, NotScalar> {
    let mut w = Writer::new();
    let reads = bind_inputs(&mut w, inputs, "in");
    let (mut body, reductions, fails) = body_code(f, &kernel.body, &reads, &mut w)?;
    let written: Vec<VarId> = kernel.outputs.iter().copied().filter(|&v| f.ty(v).is_vector()).collect();
    for (k, &v) in written.iter().enumerate() {
        let elem = f.ty(v).elem;
        w.bind(&format!("out{k}"), storage_type(elem), Access::ReadWrite);
        let _ = writeln!(body, "out{k}[i] = {};", to_storage(elem, &format!("v{v}")));
    }
    let mut decls = String::new();
    for (k, &(_, op, elem)) in reductions.iter().enumerate() {
        let t = storage_type(elem);
        w.bind(&format!("partials{k}"), t, Access::ReadWrite);
        let (combine, _) = combine(op, elem);
        decls.push_str(&combine.replace("fn combine(", &format!("fn combine{k}(")));
        let _ = writeln!(decls, "var<workgroup> shared{k}: array<{t}, 256>;");
    }
    if fails {
        w.bind("err", "atomic<u32>", Access::ReadWrite);
    }
    let main = if reductions.is_empty() {
        format!("{MAIN_HEADER}{}}}\n", indent(&body, 1))
    } else {
        reduce_main(&decls, &body, &reductions)
    };
    let name = format!("fused_{}", kernel.name);
    Ok(FusedCode { kernel: w.finish(name, &main), written, reductions, fails })
}

/// How the body reads each input: the expression for element `i`, and the array's name.
type Reads = Vec<(VarId, (String, String))>;

/// Binds the inputs (named `{prefix}{k}`) and says how the body reads each.
fn bind_inputs(w: &mut Writer, inputs: &[(VarId, Operand)], prefix: &str) -> Reads {
    let mut reads = Vec::with_capacity(inputs.len());
    for (k, &(var, operand)) in inputs.iter().enumerate() {
        let name = format!("{prefix}{k}");
        let read = match operand {
            Operand::Whole(t) | Operand::Elements(t) => {
                w.bind(&name, storage_type(t), Access::Read);
                (from_storage(t, &format!("{name}[i]")), name)
            }
            Operand::DeviceScalar(t) => {
                w.bind(&name, storage_type(t), Access::Read);
                (from_storage(t, &format!("{name}[0]")), name)
            }
            Operand::Param(t, slot) => (param(t, super::FIRST_SCALAR + slot), String::new()),
        };
        reads.push((var, read));
    }
    reads
}

/// The members' code for element `i`: a `let` per value, each reduction folded into its
/// accumulator, each failure recorded. Gives the code, the reductions and whether anything
/// can fail.
#[allow(clippy::type_complexity)]
fn body_code(
    f: &Function,
    members: &[Stmt],
    reads: &Reads,
    w: &mut Writer,
) -> Result<(String, Vec<(VarId, ReduceOp, Scalar)>, bool), NotScalar> {
    let value_of = |v: VarId| -> String {
        match reads.iter().find(|(var, _)| *var == v) {
            Some((_, (element, _))) => element.clone(),
            None => format!("v{v}"),
        }
    };
    let mut body = String::new();
    let mut reductions = Vec::new();
    let mut fails = false;
    for stmt in members {
        let StmtKind::Op { dest, op } = &stmt.kind else {
            return Err(NotScalar("a fused kernel holds a statement that is not an op".into()));
        };
        let result = dest.map(|d| f.ty(d).elem);
        let value = match op {
            Op::Reduce { op: r, src } => {
                let d = dest.ok_or_else(|| NotScalar("a reduction without a result".into()))?;
                let elem = f.ty(*src).elem;
                let k = reductions.len();
                reductions.push((d, *r, elem));
                let _ = writeln!(body, "acc{k} = combine{k}(acc{k}, {});", to_storage(elem, &value_of(*src)));
                continue;
            }
            Op::Iota { .. } => "i32(i)".to_string(),
            Op::Replicate { value, .. } => value_of(*value),
            Op::Gather { .. } | Op::GatherEither { .. } => {
                let operands = op.operands();
                let mut args = Vec::with_capacity(operands.len());
                for (k, &v) in operands.iter().enumerate() {
                    if !op.reads_whole(k) {
                        args.push(value_of(v));
                        continue;
                    }
                    let Some((_, (_, array))) = reads.iter().find(|(var, _)| *var == v) else {
                        return Err(NotScalar("a fused gather from a vector the kernel computes".into()));
                    };
                    args.push(array.clone());
                }
                let types: Vec<Scalar> = operands.iter().map(|&v| f.ty(v).elem).collect();
                let code = scalar_op(op, &args, &types, result, &mut w.helpers)?;
                code.value.unwrap_or_default()
            }
            _ => {
                let operands = op.operands();
                let args: Vec<String> = operands.iter().map(|&v| value_of(v)).collect();
                let types: Vec<Scalar> = operands.iter().map(|&v| f.ty(v).elem).collect();
                let code = scalar_op(op, &args, &types, result, &mut w.helpers)?;
                if let Some(condition) = code.fails {
                    fails = true;
                    let _ = writeln!(body, "if ({condition}) {{ {FAIL} }}");
                }
                match code.value {
                    Some(v) => v,
                    None => continue,
                }
            }
        };
        if let Some(d) = dest {
            let _ = writeln!(body, "let v{d}: {} = {value};", wgsl_type(f.ty(*d).elem));
        }
    }
    Ok((body, reductions, fails))
}

/// A producer of one vector, inlined into a primitive's pass: its ops (maps only) as a WGSL
/// function `element(i)` giving element `i` of `src` in storage form, which the primitive
/// calls where it would read `src` (at `i`, or at any position: the ops are pure per element,
/// so computing one twice is only work).
pub struct Produced<'a> {
    pub f: &'a Function,
    /// Names the kernel (`k3_map_scan`).
    pub name: &'a str,
    pub members: &'a [Stmt],
    pub src: VarId,
    /// The producer's inputs, as `fused_kernel` takes them.
    pub inputs: &'a [(VarId, Operand)],
}

impl Produced<'_> {
    /// Binds the producer's inputs (and the error record if it can fail) after the
    /// primitive's own bindings, and gives the function's text.
    pub(super) fn declare(&self, w: &mut Writer) -> Result<String, NotScalar> {
        let reads = bind_inputs(w, self.inputs, "produced");
        let (body, reductions, fails) = body_code(self.f, self.members, &reads, w)?;
        if !reductions.is_empty() {
            return Err(NotScalar("a producer with a reduction".into()));
        }
        if fails {
            w.bind("err", "atomic<u32>", Access::ReadWrite);
        }
        let elem = self.f.ty(self.src).elem;
        let value = match reads.iter().find(|(v, _)| *v == self.src) {
            Some((_, (element, _))) => element.clone(),
            None => format!("v{}", self.src),
        };
        Ok(format!(
            "fn element(i: u32) -> {} {{\n{}    return {};\n}}\n",
            storage_type(elem),
            indent(&body, 1),
            to_storage(elem, &value)
        ))
    }
}

/// The block-reduce shape of `prims::reduce_blocks`, with the body computing each element.
fn reduce_main(decls: &str, body: &str, reductions: &[(VarId, ReduceOp, Scalar)]) -> String {
    let mut main = format!("{decls}\n{}", block_header());
    for (k, &(_, op, elem)) in reductions.iter().enumerate() {
        let (_, identity) = combine(op, elem);
        let _ = writeln!(main, "    var acc{k}: {} = {identity};", storage_type(elem));
    }
    let _ = writeln!(main, "    for (var k = 0u; k < {ITEMS}u; k++) {{");
    let _ = writeln!(main, "        let i = start + k * 256u + lid;");
    let _ = writeln!(main, "        if (i < p[0]) {{\n{}        }}\n    }}", indent(body, 3));
    for k in 0..reductions.len() {
        let _ = writeln!(main, "    shared{k}[lid] = acc{k};");
    }
    main.push_str(
        "    workgroupBarrier();\n    for (var s = 128u; s > 0u; s = s >> 1u) {\n        if (lid < s) {\n",
    );
    for k in 0..reductions.len() {
        let _ =
            writeln!(main, "            shared{k}[lid] = combine{k}(shared{k}[lid], shared{k}[lid + s]);");
    }
    main.push_str("        }\n        workgroupBarrier();\n    }\n    if (lid == 0u && live) {\n");
    for k in 0..reductions.len() {
        let _ = writeln!(main, "        partials{k}[block] = shared{k}[0];");
    }
    main.push_str("    }\n}\n");
    main
}

fn indent(code: &str, depth: usize) -> String {
    let pad = "    ".repeat(depth);
    code.lines().map(|l| format!("{pad}{l}\n")).collect()
}
