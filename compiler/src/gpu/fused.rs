//! Fused kernels (`ir::StmtKind::Kernel`) on the device: one launch for the whole body, plus
//! the primitive reduce's passes over the partial results of its reductions.

use rowan::TextRange;

use crate::control::{Frame, R, get, set};
use crate::cpu;
use crate::ir::{Function, FusedKernel, Op, Stmt, StmtKind, VarId};
use crate::runtime::Binding;
use crate::types::Scalar;
use crate::wgsl::{self, Operand, prims};

use super::{DeviceVec, GValue, GpuMachine, gpu_error, value};

impl GpuMachine<'_, '_> {
    /// Runs `stmt`, a fused kernel, as one launch and sets its outputs; `false` when it cannot
    /// (nothing on the device to size it by, or a kernel WGSL cannot express), and the walker
    /// runs its ops one at a time instead.
    pub(super) fn run_kernel(&mut self, f: &Function, stmt: &Stmt, frame: &mut Frame<GValue>) -> R<bool> {
        let StmtKind::Kernel(kernel) = &stmt.kind else {
            return Ok(false);
        };
        let span = stmt.span;
        self.attribute_to(span);
        let inputs = kernel.inputs();
        let values = inputs.iter().map(|&v| get(frame, v, span)).collect::<R<Vec<_>>>()?;
        let Some(n) = self.index_space(kernel, &inputs, &values, span)? else {
            return Ok(false);
        };
        let mut params = vec![0u32; wgsl::FIRST_SCALAR];
        let mut bindings = Vec::new();
        let mut operands = Vec::with_capacity(inputs.len());
        for (k, (&var, value)) in inputs.iter().zip(&values).enumerate() {
            let operand = self.kernel_operand(k, value, &mut params, &mut bindings, span)?;
            operands.push((var, operand));
        }
        let Ok(code) = wgsl::fused::fused_kernel(f, kernel, &operands) else {
            return Ok(false);
        };
        let limit = self.gpu.limits.max_storage_buffers_per_shader_stage as usize;
        if code.kernel.bindings.len() + 1 > limit {
            return Ok(false);
        }
        let mut outputs = Vec::new();
        for &v in &code.written {
            let out = self.alloc(f.ty(v).elem, n, span)?;
            bindings.push(out.binding());
            outputs.push((v, out));
        }
        let blocks = n.div_ceil(prims::BLOCK as usize).max(1);
        let mut partials = Vec::new();
        for &(v, _, elem) in &code.reductions {
            let out = self.alloc(elem, blocks, span)?;
            bindings.push(out.binding());
            partials.push((v, out));
        }
        if code.fails {
            let kept = inputs.iter().copied().zip(values.iter().cloned()).collect();
            params[1] = self.expect_failure(stmt.clone(), f.vars.len(), kept)?;
            bindings = self.with_record(bindings);
        }
        let words = super::prims::param_words(&params);
        let launched = if code.reductions.is_empty() {
            if n == 0 { Ok(()) } else { self.gpu.dispatch(&code.kernel, n as u64, &words, &bindings) }
        } else {
            self.gpu.dispatch_groups(&code.kernel, blocks as u64, n as u64, &words, &bindings)
        };
        launched.map_err(|e| gpu_error(e, span))?;
        for (v, out) in outputs {
            set(frame, v, GValue::Device(out), span)?;
        }
        for ((v, partial), &(_, op, _)) in partials.into_iter().zip(&code.reductions) {
            let total = if blocks == 1 {
                DeviceVec { scalar: true, ..partial }
            } else {
                self.reduce(op, &partial, span)?
            };
            set(frame, v, GValue::Device(total), span)?;
        }
        for member in &kernel.body {
            if let StmtKind::Op { op, .. } = &member.kind {
                self.report.counters.record_op(op, std::iter::once(n));
            }
        }
        Ok(true)
    }

    /// The number of elements the kernel runs over: the length of the vectors it reads
    /// element by element, or the count of its `iota` or `replicate`.
    fn index_space(
        &mut self,
        kernel: &FusedKernel,
        inputs: &[VarId],
        values: &[GValue],
        span: TextRange,
    ) -> R<Option<usize>> {
        // A gather's source is read anywhere; the other vectors, one element per thread.
        let element_wise = |v: VarId| {
            kernel.body.iter().any(|s| match &s.kind {
                StmtKind::Op { op: Op::Gather { index, .. }, .. } => *index == v,
                StmtKind::Op { op, .. } => op.operands().contains(&v),
                _ => false,
            })
        };
        let mut n = None;
        for (&var, value) in inputs.iter().zip(values) {
            if let Some(len) = value.vector_len().filter(|_| element_wise(var)) {
                n = Some(n.map_or(len, |m: usize| m.max(len)));
            }
        }
        if n.is_some() {
            return Ok(n);
        }
        for stmt in &kernel.body {
            if let StmtKind::Op { op: Op::Iota { len } | Op::Replicate { len, .. }, .. } = &stmt.kind {
                let at = inputs.iter().position(|v| v == len);
                if let Some(value) = at.map(|k| values[k].clone()) {
                    return self.host_count(&value, span).map(Some);
                }
            }
        }
        Ok(None)
    }

    /// How operand `k` reaches the kernel: a 32-bit host scalar in a parameter slot, a 64-bit
    /// one uploaded, device values bound.
    fn kernel_operand(
        &mut self,
        k: usize,
        value: &GValue,
        params: &mut Vec<u32>,
        bindings: &mut Vec<Binding>,
        span: TextRange,
    ) -> R<Operand> {
        let value = match value {
            GValue::Host(s) if matches!(s.ty(), Scalar::I64 | Scalar::F64) => {
                self.upload(cpu::Value::vector(cpu::Buffer::from_scalars(s.ty(), &[*s])), span)?.as_scalar()
            }
            other => other.clone(),
        };
        Ok(match &value {
            GValue::Host(s) => {
                let slot = wgsl::FIRST_SCALAR + k;
                if params.len() <= slot {
                    params.resize(slot + 1, 0);
                }
                params[slot] = value::param_bits(*s);
                Operand::Param(s.ty(), k)
            }
            GValue::Device(v) => {
                bindings.push(v.binding());
                if v.scalar { Operand::DeviceScalar(v.elem) } else { Operand::Whole(v.elem) }
            }
        })
    }
}
