//! Fused kernels (`ir::StmtKind::Kernel`) on the device: one launch for the whole body, plus
//! the primitive reduce's passes over the partial results of its reductions.

use std::sync::Arc;

use rowan::TextRange;

use crate::runtime::Binding;
use weft_core::types::Scalar;
use weft_exec::host_flow::{Frame, RunResult, get, set};
use weft_flat::ir::{Function, FusedKernel, Op, Stmt, StmtKind, VarId};
use weft_flat::wgsl::{self, prims};

use super::{DeviceCount, DeviceValue, DeviceVec, GpuMachine, gpu_error};

impl GpuMachine<'_, '_> {
    /// Runs `stmt`, a fused kernel, as one launch and sets its outputs; `false` when it cannot
    /// (nothing on the device to size it by, or a kernel WGSL cannot express), and the walker
    /// runs its ops one at a time instead.
    pub(super) fn run_kernel(
        &mut self,
        f: &Function,
        stmt: &Stmt,
        frame: &mut Frame<DeviceValue>,
    ) -> RunResult<bool> {
        let StmtKind::Kernel(kernel) = &stmt.kind else {
            return Ok(false);
        };
        let span = stmt.span;
        self.attribute_to(span);
        if let Some((at, producer)) = kernel.split_scan() {
            return self.run_scan_kernel(f, stmt, &kernel.body[at], &producer, frame);
        }
        let inputs = kernel.inputs();
        // A kernel that reduces runs over exact lengths: its blocks' partial results count.
        let reduces =
            kernel.body.iter().any(|s| matches!(&s.kind, StmtKind::Op { op: Op::Reduce { .. }, .. }));
        let values = self.frame_values(frame, &inputs, !reduces, span)?;
        let Some((n, count)) = self.index_space(kernel, &inputs, &values, span)? else {
            return Ok(false);
        };
        let mut params = vec![0u32; wgsl::FIRST_SCALAR];
        let mut bindings = Vec::new();
        let mut operands = Vec::with_capacity(inputs.len());
        for (k, (&var, value)) in inputs.iter().zip(&values).enumerate() {
            let operand = self.operand(k, value, true, &mut params, &mut bindings, span)?;
            operands.push((var, operand));
        }
        let Ok(code) = wgsl::fused::fused_kernel(f, kernel, &operands) else {
            return Ok(false);
        };
        if !self.fits(&code.kernel) {
            return Ok(false);
        }
        let mut outputs = Vec::new();
        for &v in &code.written {
            let mut out = self.alloc(f.ty(v).elem, n, span)?;
            out.count = count.clone();
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
        if code.reductions.is_empty() {
            self.launch_counted(&code.kernel, n, count.as_ref(), &words, &bindings, span)?;
        } else {
            let launched = self.gpu.dispatch_groups(&code.kernel, blocks as u64, n as u64, &words, &bindings);
            launched.map_err(|e| gpu_error(e, span))?;
        }
        for (v, out) in outputs {
            set(frame, v, DeviceValue::Device(out), span)?;
        }
        for ((v, partial), &(_, op, _)) in partials.into_iter().zip(&code.reductions) {
            let total = if blocks == 1 {
                let total = DeviceVec { scalar: true, ..partial };
                self.keep_scalar(&total);
                total
            } else {
                self.reduce(op, &partial, span)?
            };
            set(frame, v, DeviceValue::Device(total), span)?;
        }
        for member in &kernel.body {
            if let StmtKind::Op { op, .. } = &member.kind {
                self.report.counters.record_op(op, std::iter::once(n));
            }
        }
        Ok(true)
    }

    /// A scan (or segmented reduction or scan) whose first pass computes its input from the
    /// kernel's other ops (`wgsl::fused::Produced`); the other passes are the primitive's.
    fn run_scan_kernel(
        &mut self,
        f: &Function,
        stmt: &Stmt,
        scan: &Stmt,
        producer: &FusedKernel,
        frame: &mut Frame<DeviceValue>,
    ) -> RunResult<bool> {
        let span = stmt.span;
        let StmtKind::Op { dest: Some(dest), op } = &scan.kind else {
            return Ok(false);
        };
        let src = producer.outputs[0];
        let elem = f.ty(src).elem;
        let inputs = producer.inputs();
        let values = self.frame_values(frame, &inputs, false, span)?;
        let mut params = vec![0u32; wgsl::FIRST_SCALAR];
        let mut own = Vec::new();
        let mut operands = Vec::with_capacity(inputs.len());
        for (k, (&var, value)) in inputs.iter().zip(&values).enumerate() {
            operands.push((var, self.operand(k, value, true, &mut params, &mut own, span)?));
        }
        let produced = wgsl::fused::Produced {
            f,
            name: &producer.name,
            members: &producer.body,
            src,
            inputs: &operands,
        };
        // The consumer's own operands besides its input: segments, initial value.
        let result = match op {
            Op::Scan { op: rop, init, .. } => {
                let Some((n, _)) =
                    self.index_space(producer, &inputs, &values, span)?.filter(|&(n, _)| n > 0)
                else {
                    return Ok(false);
                };
                let Ok(pass) = prims::scan_blocks_produced(*rop, elem, false, &produced) else {
                    return Ok(false);
                };
                if !self.fits(&pass) {
                    return Ok(false);
                }
                let out = self.alloc(elem, n, span)?;
                let sums = self.alloc(elem, n.div_ceil(prims::BLOCK as usize), span)?;
                let mut bindings = vec![out.binding(), sums.binding()];
                bindings.extend(own);
                self.launch_fused_pass(
                    stmt,
                    f,
                    &pass,
                    &inputs,
                    &values,
                    &mut params,
                    bindings,
                    |me, params, b| me.launch_blocks(&pass, n, None, params, b, span),
                )?;
                let out = self.scan_carry(*rop, out, &sums, None, span)?;
                match init {
                    Some(init) => {
                        let init = self.with_exact_len(get(frame, *init, span)?, span)?;
                        self.shift(*rop, &out, None, &init, span)?
                    }
                    None => out,
                }
            }
            Op::SegReduce { segs, .. } | Op::SegScan { segs, .. } => {
                // The lengths and their layout's total in one read-back; the offsets are read only
                // below their count, so their bound serves.
                let lengths = self.device(&get(frame, segs.lengths, span)?.exact_if_known(), span)?;
                let lengths = self.exact_lengths(lengths, span)?;
                let offsets = self.device(&get(frame, segs.offsets, span)?.exact_if_known(), span)?;
                let (starts, total) = self.compact(&lengths, span)?;
                if total == 0 {
                    return Ok(false);
                }
                let gathered = match op {
                    Op::SegReduce { op: rop, .. } => {
                        prims::seg_scan_blocks_gathered_produced(*rop, elem, &produced)
                            .ok()
                            .map(|k| (*rop, k))
                    }
                    _ => None,
                };
                if let Some((rop, pass)) = gathered.filter(|(_, pass)| self.fits(pass)) {
                    // The scan computes each element where it lies: no gathered copy.
                    let (ids, _) = self.segment_ids(&lengths, &starts, total, span)?;
                    let layout = vec![ids.binding(), offsets.binding(), starts.binding()];
                    let launch = |me: &mut Self, b: &[Binding]| {
                        me.launch_fused_pass(
                            stmt,
                            f,
                            &pass,
                            &inputs,
                            &values,
                            &mut params,
                            b.to_vec(),
                            |me, p, b| me.launch_blocks(&pass, total, None, p, b, span),
                        )
                    };
                    let scanned = self.seg_scan_gathered(rop, elem, total, layout, own, launch, span)?;
                    let result = self.segment_lasts(rop, &scanned, &lengths, &starts, span)?;
                    set(frame, *dest, DeviceValue::Device(result), span)?;
                    self.record_ops(producer, scan);
                    return Ok(true);
                }
                let Ok(pass) = wgsl::prims::segment_gather_produced(elem, &produced) else {
                    return Ok(false);
                };
                if !self.fits(&pass) {
                    return Ok(false);
                }
                let (ids, _) = self.segment_ids(&lengths, &starts, total, span)?;
                let vals = self.alloc(elem, total, span)?;
                let flags = self.alloc(Scalar::Bool, total, span)?;
                let mut bindings =
                    vec![ids.binding(), offsets.binding(), starts.binding(), vals.binding(), flags.binding()];
                bindings.extend(own);
                self.launch_fused_pass(
                    stmt,
                    f,
                    &pass,
                    &inputs,
                    &values,
                    &mut params,
                    bindings,
                    |me, params, b| me.launch(&pass, total, params, b, span),
                )?;
                let init = match op {
                    Op::SegScan { init: Some(init), .. } => {
                        Some(self.with_exact_len(get(frame, *init, span)?, span)?)
                    }
                    _ => None,
                };
                self.segmented_tail(op, &vals, &flags, &lengths, &starts, init.as_ref(), span)?
            }
            _ => return Ok(false),
        };
        set(frame, *dest, DeviceValue::Device(result), span)?;
        self.record_ops(producer, scan);
        Ok(true)
    }

    /// Counts the ops of a producer and its consumer, run as one kernel.
    fn record_ops(&mut self, producer: &FusedKernel, consumer: &Stmt) {
        for member in producer.body.iter().chain([consumer]) {
            if let StmtKind::Op { op, .. } = &member.kind {
                self.report.counters.record_op(op, std::iter::empty());
            }
        }
    }

    /// Launches a pass with a fused producer: with the error record, and a sequence number
    /// whose failure is explained by the kernel's ops, when the producer can fail.
    #[allow(clippy::too_many_arguments)]
    fn launch_fused_pass(
        &mut self,
        stmt: &Stmt,
        f: &Function,
        pass: &wgsl::Kernel,
        inputs: &[VarId],
        values: &[DeviceValue],
        params: &mut [u32],
        mut bindings: Vec<Binding>,
        launch: impl FnOnce(&mut Self, &[u32], &[Binding]) -> RunResult<()>,
    ) -> RunResult<()> {
        if pass.bindings.len() > bindings.len() {
            let kept = inputs.iter().copied().zip(values.iter().cloned()).collect();
            params[1] = self.expect_failure(stmt.clone(), f.vars.len(), kept)?;
            bindings = self.with_record(bindings);
        }
        launch(self, params, &bindings)
    }

    /// The number of elements the kernel runs over: the length of the vectors it reads
    /// element by element (a bound, with the device count of one whose exact length is still
    /// on the device), or the count of its `iota` or `replicate` (a bound, where that count
    /// is still on the device).
    fn index_space(
        &mut self,
        kernel: &FusedKernel,
        inputs: &[VarId],
        values: &[DeviceValue],
        span: TextRange,
    ) -> RunResult<Option<(usize, Option<Arc<DeviceCount>>)>> {
        // A gather's source is read anywhere; the other vectors, one element per thread.
        let element_wise = |v: VarId| {
            kernel.body.iter().any(|s| match &s.kind {
                StmtKind::Op { op, .. } => {
                    op.operands().iter().enumerate().any(|(k, &u)| u == v && !op.reads_whole(k))
                }
                _ => false,
            })
        };
        let elements = inputs.iter().zip(values).filter(|(var, _)| element_wise(**var)).map(|(_, v)| v);
        if let (Some(n), count) = super::extent(elements) {
            return Ok(Some((n, count)));
        }
        for stmt in &kernel.body {
            if let StmtKind::Op { op: Op::Iota { len } | Op::Replicate { len, .. }, .. } = &stmt.kind {
                let at = inputs.iter().position(|v| v == len);
                if let Some(value) = at.map(|k| values[k].clone()) {
                    return self.extent_of(&value, span).map(Some);
                }
            }
        }
        Ok(None)
    }
}
