//! The ops that are not element-wise, as passes of the primitive library (`wgsl::prims`),
//! and element loops.
//!
//! Segments may lie anywhere in their source vector (`ir::Segs`), so the segmented ops first
//! build the compact layout: the segment starts (an exclusive scan of the lengths), the segment
//! id and position of every element (a binary search of the starts). A segmented reduction's
//! scan reads each element where it lies through them; a segmented scan gathers the elements
//! and flags the segment heads first. The total length of the compact layout sizes
//! allocations, so it is read back, once per lengths vector (`compact`), with the lengths' own
//! count when that is still on the device (`exact_lengths`).
//!
//! Sizes stay on the device where a bound will do (`DeviceVec::count`): a `pack` allocates its
//! input's length and leaves the kept count on the device, a `concat` of such vectors joins
//! them in one kernel and sums their counts there, and scans, scatters and element-wise kernels
//! run over the bound with the count read on the device; their launches take the grid the
//! count's record holds (indirect dispatches), except a scan's blocks' pass.

use std::sync::Arc;

use rowan::TextRange;

use crate::runtime::{Binding, Grid};
use weft_core::types::Scalar;
use weft_exec::Interrupt;
use weft_exec::cpu::{self, ScalarValue};
use weft_exec::host_flow::{Frame, RunResult, get, internal_at};
use weft_flat::ir::{Function, Op, ReduceOp, Stmt, StmtKind};
use weft_flat::wgsl::{self, LoopKernel, prims};
use weft_syntax::diagnostics::{Code, Diagnostic};

use super::value::{DeviceCount, DeviceValue, DeviceVec};
use super::{GpuMachine, gpu_error};

impl GpuMachine<'_, '_> {
    /// Runs a data-movement, reduction or scan op.
    pub(super) fn primitive(
        &mut self,
        op: &Op,
        args: &[DeviceValue],
        span: TextRange,
    ) -> RunResult<Option<DeviceValue>> {
        let a = |k: usize| {
            args.get(k).ok_or_else(|| internal_at(format!("{} is missing operand {k}", op.name()), span))
        };
        let result = match op {
            // A length still counted on the device: the vector is allocated and filled by its
            // bound, and carries the count, as the vector it is the length of does.
            Op::Replicate { .. } => {
                let (n, count) = self.extent_of(a(1)?, span)?;
                DeviceVec { count, ..self.fill(a(0)?, n, span)? }
            }
            Op::Iota { .. } => {
                let (n, count) = self.extent_of(a(0)?, span)?;
                let out = self.alloc(Scalar::I32, n, span)?;
                self.launch(&prims::iota(), n, &[], &[out.binding()], span)?;
                DeviceVec { count, ..out }
            }
            Op::SegIds { within, .. } | Op::SegIota { within, .. } => {
                let lengths = self.device(a(0)?, span)?;
                // The flattener's bound (the sizes of the collections the segments lie in),
                // where those sizes are exact: a bound summed from bounds would compound, as
                // a recursion's results nest in its callers'. Inside a call, such a bound or
                // a guess from the call's arguments (`guesses`). Lengths still counted on
                // the device are settled instead, with every other count in one read-back:
                // the sizes built on them (a level's contexts) are then on the host.
                let settled = lengths.unsettled().is_none() && !within.is_empty();
                let lengths = lengths.exact_if_known();
                let bound = match args[1..].iter().map(DeviceValue::host_size).sum() {
                    Some(exact) if settled => Some((exact, false)),
                    _ if settled => self.bound_or_guess(&lengths, &args[1..]),
                    _ => None,
                };
                let (ids, positions) = match bound {
                    Some((bound, guessed)) => self.bounded_segment_ids(lengths, bound, guessed, span)?,
                    None => {
                        let lengths = self.exact_lengths(lengths, span)?;
                        let (starts, total) = self.compact(&lengths, span)?;
                        self.segment_ids(&lengths, &starts, total, span)?
                    }
                };
                if matches!(op, Op::SegIds { .. }) { ids } else { positions }
            }
            Op::Concat(_) => self.concat(args, span)?,
            Op::Interleave { parts, .. } => {
                let n = self.host_count(a(parts.len())?, span)?;
                let parts = &args[..parts.len()];
                let mut params = vec![0; wgsl::FIRST_SCALAR];
                let mut bindings = Vec::new();
                let operands = self.operands(parts, None, &mut params, &mut bindings, span)?;
                let out = self.alloc(parts[0].elem(), n * parts.len(), span)?;
                bindings.push(out.binding());
                self.launch(&prims::interleave(&operands), out.len, &params, &bindings, span)?;
                out
            }
            Op::Scatter { distinct, .. } => self.scatter(a(0)?, a(1)?, a(2)?, *distinct, span)?,
            Op::Pack { counts, .. } => {
                let (src, flags) = (self.device(a(0)?, span)?, self.device(a(1)?, span)?);
                // The flags' running count: the filter's own where the flattener gave it.
                let counts = match counts {
                    Some(_) => self.device(a(2)?, span)?,
                    None => self.scan_inclusive(ReduceOp::Add, &as_i32(&flags), None, span)?,
                };
                // The kept count stays on the device: the result is allocated by its bound,
                // the input's length. Flags counted on the device run over their bound, and
                // the last counted thread writes the record.
                let mut out = self.alloc(src.elem, flags.len, span)?;
                if flags.len > 0 {
                    let record = self.count_record(span)?;
                    if flags.unsettled().is_some() {
                        // A device count of 0 runs no thread: the record must read 0 then.
                        self.gpu.clear(&record.buffer, record.bytes());
                    }
                    let bindings =
                        [src.binding(), flags.binding(), counts.binding(), out.binding(), record.binding()];
                    let params = self.grid_width_param();
                    let kernel = prims::pack_scatter(src.elem);
                    self.launch_counted(&kernel, flags.len, flags.unsettled(), &params, &bindings, span)?;
                    out.count = Some(self.device_count(record.buffer));
                }
                out
            }
            Op::Reduce { op: rop, .. } => {
                let src = self.device(a(0)?, span)?;
                if src.len == 0 {
                    return self.empty_combination(op, src.elem, 0, span);
                }
                self.reduce(*rop, &src, span)?
            }
            Op::Scan { op: rop, init, .. } => {
                let src = self.device(a(0)?, span)?;
                let init = if init.is_some() { Some(a(1)?) } else { None };
                match self.known_starts(*rop, &src, init) {
                    Some(starts) => starts,
                    None => self.scan(*rop, &src, None, init, span)?,
                }
            }
            Op::SegReduce { .. } | Op::SegScan { .. } => {
                let lengths = self.device(a(2)?, span)?;
                let lengths = self.exact_lengths(lengths, span)?;
                // Both are read only below their counts (the elements the layout names, one
                // offset per segment), so their bounds serve as well as their lengths.
                let (src, offsets) = (self.device(a(0)?, span)?, self.device(a(1)?, span)?);
                let (starts, total) = self.compact(&lengths, span)?;
                if total == 0 {
                    return self.empty_combination(op, src.elem, lengths.len, span);
                }
                let (ids, _) = self.segment_ids(&lengths, &starts, total, span)?;
                let layout = vec![ids.binding(), offsets.binding(), starts.binding(), src.binding()];
                // The scan reads each element where it lies, with no gathered copy, where the
                // adapter lets it bind the layout besides the scan's own buffers (9 in all).
                let in_place = match op {
                    Op::SegReduce { op: rop, .. } => {
                        Some((*rop, prims::seg_scan_blocks_gathered(*rop, src.elem)))
                    }
                    _ => None,
                };
                if let Some((rop, pass)) = in_place.filter(|(_, pass)| self.fits(pass)) {
                    let launch =
                        |me: &mut Self, b: &[Binding]| me.launch_blocks(&pass, total, None, &[], b, span);
                    let scanned =
                        self.seg_scan_gathered(rop, src.elem, total, layout, Vec::new(), launch, span)?;
                    return Ok(Some(DeviceValue::Device(
                        self.segment_lasts(rop, &scanned, &lengths, &starts, span)?,
                    )));
                }
                let vals = self.alloc(src.elem, total, span)?;
                let flags = self.alloc(Scalar::Bool, total, span)?;
                let mut bindings = layout;
                bindings.extend([vals.binding(), flags.binding()]);
                self.launch(&prims::segment_gather(src.elem), total, &[], &bindings, span)?;
                let init = match op {
                    Op::SegScan { init: Some(_), .. } => Some(a(3)?),
                    _ => None,
                };
                self.segmented_tail(op, &vals, &flags, &lengths, &starts, init, span)?
            }
            Op::SegArgExtreme { max, .. } => {
                let (src, offsets, lengths) =
                    (self.device(a(0)?, span)?, self.device(a(1)?, span)?, self.device(a(2)?, span)?);
                let out = self.alloc(Scalar::I32, lengths.len, span)?;
                let bindings = [offsets.binding(), lengths.binding(), src.binding(), out.binding()];
                self.launch(&prims::segment_arg_extreme(src.elem, *max), lengths.len, &[], &bindings, span)?;
                out
            }
            _ => {
                self.note_on_cpu(op);
                self.sync(span)?;
                return self.on_cpu(op, args, span);
            }
        };
        Ok(Some(DeviceValue::Device(result)))
    }

    /// A reduction, or a segmented reduction or scan over `segments` segments, with no
    /// element to combine: the CPU executor's kernels give the result (or the error) of one
    /// empty segment on the host, with no read-back, and a segmented reduction fills its
    /// result with it.
    pub(super) fn empty_combination(
        &mut self,
        op: &Op,
        elem: Scalar,
        segments: usize,
        span: TextRange,
    ) -> RunResult<Option<DeviceValue>> {
        let vector = |elem: Scalar, values: &[ScalarValue]| {
            cpu::FlatValue::vector(cpu::Buffer::from_scalars(elem, values))
        };
        let zero = [ScalarValue::I32(0)];
        let host = match op {
            Op::Reduce { .. } => vec![vector(elem, &[])],
            Op::SegReduce { .. } => {
                vec![vector(elem, &[]), vector(Scalar::I32, &zero), vector(Scalar::I32, &zero)]
            }
            _ => return Ok(Some(DeviceValue::Device(self.alloc(elem, 0, span)?))),
        };
        let result = match cpu::kernels::run_op(op, &host) {
            Ok(result) => result,
            Err(e) => {
                // Errors come in program order: the device's first.
                self.sync(span)?;
                return Err(Diagnostic::new(e.code, span, e.message));
            }
        };
        match result.map(|r| r.materialized()) {
            Some(cpu::FlatValue::Scalar(s)) => Ok(Some(DeviceValue::Host(s))),
            Some(cpu::FlatValue::Vector(b)) if matches!(op, Op::SegReduce { .. }) => {
                let value = b.get(0).ok_or_else(|| internal_at("an empty segment without a value", span))?;
                self.fill(&DeviceValue::Host(value), segments, span).map(|v| Some(DeviceValue::Device(v)))
            }
            _ => Err(internal_at(format!("`{}` of nothing", op.name()), span)),
        }
    }

    /// A segmented reduction or scan from its elements gathered into the compact layout
    /// (`vals`, with head `flags`): the segmented scan, then the exclusive shift from `init`, or
    /// each segment's last element.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn segmented_tail(
        &mut self,
        op: &Op,
        vals: &DeviceVec,
        flags: &DeviceVec,
        lengths: &DeviceVec,
        starts: &DeviceVec,
        init: Option<&DeviceValue>,
        span: TextRange,
    ) -> RunResult<DeviceVec> {
        let (Op::SegReduce { op: rop, .. } | Op::SegScan { op: rop, .. }) = op else {
            return Err(internal_at(format!("{} is not segmented", op.name()), span));
        };
        let scanned = self.scan_inclusive(*rop, vals, Some(flags), span)?;
        match (op, init) {
            (Op::SegScan { .. }, Some(init)) => self.shift(*rop, &scanned, Some(flags), init, span),
            (Op::SegScan { .. }, None) => Ok(scanned),
            _ => self.segment_lasts(*rop, &scanned, lengths, starts, span),
        }
    }

    /// Each segment's reduction: the last element of its inclusive scan `scanned`, or the
    /// operator's identity for an empty segment.
    pub(super) fn segment_lasts(
        &mut self,
        op: ReduceOp,
        scanned: &DeviceVec,
        lengths: &DeviceVec,
        starts: &DeviceVec,
        span: TextRange,
    ) -> RunResult<DeviceVec> {
        let elem = scanned.elem;
        let out = self.alloc(elem, lengths.len, span)?;
        let kernel = prims::segment_last(elem, &prims::empty_value(op, elem));
        let bindings = [lengths.binding(), starts.binding(), scanned.binding(), out.binding()];
        self.launch(&kernel, lengths.len, &[], &bindings, span)?;
        Ok(out)
    }

    /// The segmented inclusive scan of the `total` elements of a compact layout, whose blocks'
    /// pass (`wgsl::prims::seg_scan_blocks_gathered`, or a fused one) reads them where they lie.
    /// `launch` runs that pass bound to `inputs`, the buffers it writes, then `trailing` (a
    /// fused producer's own); the carry's passes follow.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn seg_scan_gathered(
        &mut self,
        op: ReduceOp,
        elem: Scalar,
        total: usize,
        inputs: Vec<Binding>,
        trailing: Vec<Binding>,
        launch: impl FnOnce(&mut Self, &[Binding]) -> RunResult<()>,
        span: TextRange,
    ) -> RunResult<DeviceVec> {
        let blocks = total.div_ceil(prims::BLOCK as usize);
        let out = self.alloc(elem, total, span)?;
        let sums = self.alloc(elem, blocks, span)?;
        let (any, first) = self.block_heads(blocks, span)?;
        let mut bindings = inputs;
        bindings.extend([out.binding(), sums.binding(), any.binding(), first.binding()]);
        bindings.extend(trailing);
        launch(self, &bindings)?;
        self.scan_carry(op, out, &sums, Some(&(any, first)), span)
    }

    /// Whether the adapter lets one kernel bind all of `kernel`'s storage buffers (the
    /// parameters included).
    pub(super) fn fits(&self, kernel: &wgsl::Kernel) -> bool {
        kernel.bindings.len() < self.gpu.limits.max_storage_buffers_per_shader_stage as usize
    }

    /// A launch over `n` elements, or over a bound `n` and a device `count`.
    pub(super) fn launch_counted(
        &self,
        kernel: &wgsl::Kernel,
        n: usize,
        count: Option<&Arc<DeviceCount>>,
        params: &[u32],
        bindings: &[Binding],
        span: TextRange,
    ) -> RunResult<()> {
        let groups = n.div_ceil(wgsl::WORKGROUP as usize) as u64;
        let (grid, counts) = match count {
            // The count's record holds the grid for its elements: an indirect dispatch.
            Some(c) => (Grid::Device { bound: groups, record: &c.buffer }, vec![(0, c)]),
            None => (Grid::Host(groups), Vec::new()),
        };
        self.launch_grid(kernel, grid, n, &counts, params, bindings, span)
    }

    /// A launch over `n` elements, with parameter words filled on the device from `counts`
    /// (`Gpu::dispatch_counted`).
    #[allow(clippy::too_many_arguments)]
    fn launch_grid(
        &self,
        kernel: &wgsl::Kernel,
        grid: Grid<'_>,
        n: usize,
        counts: &[(usize, &Arc<DeviceCount>)],
        params: &[u32],
        bindings: &[Binding],
        span: TextRange,
    ) -> RunResult<()> {
        if n == 0 {
            return Ok(());
        }
        let counts: Vec<_> = counts.iter().map(|&(k, c)| (k, &c.buffer)).collect();
        let words = param_words(params);
        self.gpu
            .dispatch_counted(kernel, grid, n as u64, &counts, &words, bindings)
            .map_err(|e| gpu_error(e, span))
    }

    pub(super) fn launch(
        &self,
        kernel: &wgsl::Kernel,
        n: usize,
        params: &[u32],
        bindings: &[Binding],
        span: TextRange,
    ) -> RunResult<()> {
        self.gpu.dispatch(kernel, n as u64, &param_words(params), bindings).map_err(|e| gpu_error(e, span))
    }

    /// A launch of one workgroup per `BLOCK` elements, over `n` elements or over a bound `n`
    /// and a device `count`.
    pub(super) fn launch_blocks(
        &self,
        kernel: &wgsl::Kernel,
        n: usize,
        count: Option<&Arc<DeviceCount>>,
        params: &[u32],
        bindings: &[Binding],
        span: TextRange,
    ) -> RunResult<()> {
        let counts: Vec<_> = count.map(|c| (0, c)).into_iter().collect();
        let grid = Grid::Host(n.div_ceil(prims::BLOCK as usize) as u64);
        self.launch_grid(kernel, grid, n, &counts, params, bindings, span)
    }

    /// An operand that must be a device array.
    pub(super) fn device(&self, value: &DeviceValue, span: TextRange) -> RunResult<DeviceVec> {
        match value {
            DeviceValue::Device(v) => Ok(v.clone()),
            DeviceValue::Host(_) => Err(internal_at("a host scalar where a vector was expected", span)),
        }
    }

    /// `n` copies of a scalar: zeros by the device's fill command, with no launch.
    pub(super) fn fill(&mut self, value: &DeviceValue, n: usize, span: TextRange) -> RunResult<DeviceVec> {
        if let DeviceValue::Host(s) = value
            && zero_bits(*s)
        {
            let out = self.alloc(s.ty(), n, span)?;
            self.gpu.clear(&out.buffer, out.bytes());
            return Ok(out);
        }
        let mut params = vec![0; wgsl::FIRST_SCALAR];
        let mut bindings = Vec::new();
        let operands = self.operands(std::slice::from_ref(value), None, &mut params, &mut bindings, span)?;
        let out = self.alloc(value.elem(), n, span)?;
        bindings.push(out.binding());
        self.launch(&prims::fill(operands[0]), n, &params, &bindings, span)?;
        Ok(out)
    }

    /// The inclusive scan of `src`, segmented by the head `flags` if given.
    pub(super) fn scan_inclusive(
        &mut self,
        op: ReduceOp,
        src: &DeviceVec,
        flags: Option<&DeviceVec>,
        span: TextRange,
    ) -> RunResult<DeviceVec> {
        self.scan(op, src, flags, None, span)
    }

    /// The inclusive scan of `src`, segmented by the head `flags` if given, or the exclusive
    /// one from `init` (unsegmented): the blocks' pass, then the carry's.
    fn scan(
        &mut self,
        op: ReduceOp,
        src: &DeviceVec,
        flags: Option<&DeviceVec>,
        init: Option<&DeviceValue>,
        span: TextRange,
    ) -> RunResult<DeviceVec> {
        let n = src.len;
        let elem = src.elem;
        // Over a bound, the blocks past the count scan nothing that is read: a block's carry
        // comes from the blocks before it.
        let count = src.unsettled().cloned();
        let mut out = self.alloc(elem, n, span)?;
        out.count = count.clone();
        if n == 0 {
            return Ok(out);
        }
        let blocks = n.div_ceil(prims::BLOCK as usize);
        let sums = self.alloc(elem, blocks, span)?;
        let mut bindings = vec![src.binding()];
        bindings.extend(flags.map(DeviceVec::binding));
        bindings.extend([out.binding(), sums.binding()]);
        let block_flags = match flags {
            Some(_) => {
                let (any, first) = self.block_heads(blocks, span)?;
                bindings.extend([any.binding(), first.binding()]);
                Some((any, first))
            }
            None => None,
        };
        let mut params = vec![0; wgsl::FIRST_SCALAR];
        let kernel = match init {
            Some(init) => {
                let operand = self.operand(0, init, false, &mut params, &mut bindings, span)?;
                prims::scan_blocks_exclusive(op, elem, operand)
            }
            None => prims::scan_blocks(op, elem, flags.is_some()),
        };
        self.launch_blocks(&kernel, n, count.as_ref(), &params, &bindings, span)?;
        self.scan_carry(op, out, &sums, block_flags.as_ref(), span)
    }

    /// What a segmented scan's blocks' pass writes besides the scan and the blocks' totals:
    /// whether each block holds a segment head, and where its first head is.
    fn block_heads(&mut self, blocks: usize, span: TextRange) -> RunResult<(DeviceVec, DeviceVec)> {
        Ok((self.alloc(Scalar::Bool, blocks, span)?, self.alloc(Scalar::I32, blocks, span)?))
    }

    /// The passes of a scan after its first: the block totals `sums` scanned, then combined
    /// into each block of `out`.
    pub(super) fn scan_carry(
        &mut self,
        op: ReduceOp,
        out: DeviceVec,
        sums: &DeviceVec,
        block_flags: Option<&(DeviceVec, DeviceVec)>,
        span: TextRange,
    ) -> RunResult<DeviceVec> {
        if sums.len > 1 {
            let scanned = self.scan_inclusive(op, sums, block_flags.map(|(any, _)| any), span)?;
            let mut bindings = vec![out.binding(), scanned.binding()];
            bindings.extend(block_flags.map(|(_, first)| first.binding()));
            let kernel = prims::scan_add_carry(op, out.elem, block_flags.is_some());
            self.launch_counted(&kernel, out.len, out.unsettled(), &[], &bindings, span)?;
        }
        Ok(out)
    }

    /// The exclusive scan from `init`, from the inclusive one.
    pub(super) fn shift(
        &mut self,
        op: ReduceOp,
        scanned: &DeviceVec,
        flags: Option<&DeviceVec>,
        init: &DeviceValue,
        span: TextRange,
    ) -> RunResult<DeviceVec> {
        let mut params = vec![0; wgsl::FIRST_SCALAR];
        let mut bindings = vec![scanned.binding()];
        bindings.extend(flags.map(DeviceVec::binding));
        let operands = self.operands(std::slice::from_ref(init), None, &mut params, &mut bindings, span)?;
        let mut out = self.alloc(scanned.elem, scanned.len, span)?;
        out.count = scanned.unsettled().cloned();
        bindings.push(out.binding());
        let kernel = prims::scan_shift(op, scanned.elem, flags.is_some(), operands[0]);
        self.launch_counted(&kernel, scanned.len, out.count.as_ref(), &params, &bindings, span)?;
        Ok(out)
    }

    /// The whole vector reduced to a device scalar, block by block.
    pub(super) fn reduce(&mut self, op: ReduceOp, src: &DeviceVec, span: TextRange) -> RunResult<DeviceVec> {
        let mut current = src.clone();
        loop {
            let blocks = current.len.div_ceil(prims::BLOCK as usize);
            let out = self.alloc(current.elem, blocks, span)?;
            let bindings = [current.binding(), out.binding()];
            self.launch_blocks(
                &prims::reduce_blocks(op, current.elem),
                current.len,
                None,
                &[],
                &bindings,
                span,
            )?;
            if blocks == 1 {
                let total = DeviceVec { scalar: true, ..out };
                self.keep_scalar(&total);
                return Ok(total);
            }
            current = out;
        }
    }

    /// A count record (`wgsl::prims::COUNT_RECORD_WORDS` words) for a kernel to write.
    pub(super) fn count_record(&mut self, span: TextRange) -> RunResult<DeviceVec> {
        self.alloc(Scalar::I32, prims::COUNT_RECORD_WORDS, span)
    }

    /// The parameters of a kernel that writes a count record: the grid's row width.
    pub(super) fn grid_width_param(&self) -> Vec<u32> {
        let mut params = vec![0; wgsl::FIRST_SCALAR];
        params[prims::GRID_WIDTH_WORD] = u32::try_from(self.gpu.grid_width()).unwrap_or(u32::MAX);
        params
    }

    /// The compact layout of segments of `lengths`: where each starts, and the total. Built
    /// once per lengths vector: a nested program asks for the same descriptor's layout many
    /// times (its ids, its positions, each segmented reduction over it).
    pub(super) fn compact(&mut self, lengths: &DeviceVec, span: TextRange) -> RunResult<(DeviceVec, usize)> {
        if let Some(known) = self.layouts.iter().find(|l| l.describes(lengths)) {
            let (starts, total, count) = (known.starts.clone(), known.total, known.total_count.clone());
            let total = match count {
                Some(count) => self.settled(&count, span)?,
                None => total,
            };
            return Ok((starts, total));
        }
        let starts = self.starts_of(lengths, span)?;
        // The total is the last start plus the last length: two words of one read-back.
        let total = match lengths.len.checked_sub(1) {
            Some(last) => {
                let at = last as u64 * 4;
                let words = self.read_parts(&[(&starts.buffer, at, 4), (&lengths.buffer, at, 4)], span)?;
                words.iter().map(|w| super::value::count_word(w)).sum()
            }
            None => 0,
        };
        self.keep_layout(CompactLayout {
            lengths: lengths.clone(),
            starts: starts.clone(),
            total,
            total_count: None,
            ids: None,
        });
        Ok((starts, total))
    }

    /// The segment ids and positions of the compact layout of settled `lengths`, whose total
    /// is at most `bound` (`Op::SegIds`'s `within`): allocated by the bound, with the total left
    /// on the device as their count, and no read-back. The starts and the total come from
    /// `starts_and_total` (clamped to the bound), and the binary search runs over the total.
    fn bounded_segment_ids(
        &mut self,
        lengths: DeviceVec,
        bound: usize,
        guessed: bool,
        span: TextRange,
    ) -> RunResult<(DeviceVec, DeviceVec)> {
        if let Some(known) = self.layouts.iter().find(|l| l.describes(&lengths)) {
            let (starts, total, count) = (known.starts.clone(), known.total, known.total_count.clone());
            return self.search_segments(&lengths, &starts, total, count, span);
        }
        let (starts, total) = self.starts_and_total(&lengths, bound, span)?;
        if guessed {
            self.note_guess(&total, bound);
        }
        self.keep_layout(CompactLayout {
            lengths: lengths.clone(),
            starts: starts.clone(),
            total: bound,
            total_count: Some(total.clone()),
            ids: None,
        });
        match self.search_segments(&lengths, &starts, bound, Some(total), span) {
            // A guess the device has no room for failed as one too small does: the call runs
            // again, and allocates what it needs once it is known. The work recorded so far is
            // checked first: a failure in it is the program's, and the voided launches must
            // all be submitted before the record is cleared under them.
            Err(e) if guessed && e.code == Code::ResourceExhausted => {
                self.sync(span)?;
                Err(self.guess_failed(span))
            }
            found => found,
        }
    }

    /// The starts of the compact layout of `lengths` and its total as a device count, at most
    /// `bound`: one launch for lengths in one scan block (`layout_starts`), else the scan's and
    /// `last_end`'s.
    fn starts_and_total(
        &mut self,
        lengths: &DeviceVec,
        bound: usize,
        span: TextRange,
    ) -> RunResult<(DeviceVec, Arc<DeviceCount>)> {
        if lengths.len > prims::BLOCK as usize {
            let starts = self.starts_of(lengths, span)?;
            let total = self.layout_total(lengths, &starts, bound, span)?;
            return Ok((starts, total));
        }
        let count = lengths.unsettled().cloned();
        let mut starts = self.alloc(Scalar::I32, lengths.len, span)?;
        starts.count = count.clone();
        let sums = self.alloc(Scalar::I32, 1, span)?;
        let record = self.count_record(span)?;
        let mut params = self.grid_width_param();
        params[2] = u32::try_from(bound).unwrap_or(u32::MAX);
        let mut bindings = vec![lengths.binding(), starts.binding(), sums.binding(), record.binding()];
        let zero = DeviceValue::Host(ScalarValue::I32(0));
        let init = self.operand(0, &zero, false, &mut params, &mut bindings, span)?;
        if lengths.len == 0 {
            // No launch: a record of no elements (buffers are reused, so it is written).
            self.gpu.clear(&record.buffer, record.bytes());
        }
        self.launch_blocks(
            &prims::layout_starts(init),
            lengths.len,
            count.as_ref(),
            &params,
            &bindings,
            span,
        )?;
        Ok((starts, self.device_count(record.buffer)))
    }

    /// The total of the compact layout of `lengths` as a device count (`last_end`), at most
    /// `bound`.
    fn layout_total(
        &mut self,
        lengths: &DeviceVec,
        starts: &DeviceVec,
        bound: usize,
        span: TextRange,
    ) -> RunResult<Arc<DeviceCount>> {
        let record = self.count_record(span)?;
        let bindings = [starts.binding(), lengths.binding(), record.binding()];
        let mut params = self.grid_width_param();
        params.extend([lengths.len as u32, u32::try_from(bound).unwrap_or(u32::MAX)]);
        let counts: Vec<_> = lengths.unsettled().map(|c| (wgsl::FIRST_SCALAR, c)).into_iter().collect();
        self.launch_grid(&prims::last_end(), Grid::Host(1), 1, &counts, &params, &bindings, span)?;
        Ok(self.device_count(record.buffer))
    }

    /// A device count on the host: a read-back (with every other unsettled count) if it is
    /// not there yet.
    fn settled(&mut self, count: &Arc<DeviceCount>, span: TextRange) -> RunResult<usize> {
        if count.exact.get().is_none() {
            self.list_unsettled(count);
            self.read_parts(&[], span)?;
        }
        count
            .exact
            .get()
            .copied()
            .ok_or_else(|| internal_at("a device count the read-back did not bring", span))
    }

    /// Segment lengths whose count is still on the device, settled together with their
    /// total: one read-back brings both (and every other unsettled count), and the compact
    /// layout is kept for `compact`.
    pub(super) fn exact_lengths(&mut self, lengths: DeviceVec, span: TextRange) -> RunResult<DeviceVec> {
        let Some(count) = lengths.unsettled().cloned() else {
            return Ok(lengths.exact_if_known());
        };
        self.list_unsettled(&count);
        let (starts, total) = self.starts_and_total(&lengths, usize::MAX, span)?;
        self.read_parts(&[], span)?;
        let (lengths, starts) = (lengths.exact_if_known(), starts.exact_if_known());
        let total = total.exact.get().copied().unwrap_or(0);
        self.keep_layout(CompactLayout {
            lengths: lengths.clone(),
            starts,
            total,
            total_count: None,
            ids: None,
        });
        Ok(lengths)
    }

    /// The exclusive sum from 0 of segment lengths whose compact layout is kept: the layout's
    /// starts, with no launch. A flattened program takes the offsets of the segments it has
    /// just built their ids for (`seg_ids`, then `exscan.add` of the same lengths).
    fn known_starts(&self, op: ReduceOp, src: &DeviceVec, init: Option<&DeviceValue>) -> Option<DeviceVec> {
        let from_zero = matches!(init, Some(DeviceValue::Host(ScalarValue::I32(0))));
        if op != ReduceOp::Add || !from_zero {
            return None;
        }
        let lengths = src.clone().exact_if_known();
        self.layouts.iter().find(|l| l.describes(&lengths)).map(|l| l.starts.clone())
    }

    /// Where each segment of the compact layout starts: the exclusive scan of the lengths.
    fn starts_of(&mut self, lengths: &DeviceVec, span: TextRange) -> RunResult<DeviceVec> {
        self.scan(ReduceOp::Add, lengths, None, Some(&DeviceValue::Host(ScalarValue::I32(0))), span)
    }

    fn keep_layout(&mut self, layout: CompactLayout) {
        // A layout whose lengths only this cache holds can never be asked for again.
        self.layouts.retain(|l| Arc::strong_count(&l.lengths.buffer) > 1);
        if self.layouts.len() >= LAYOUTS_KEPT {
            self.layouts.remove(0);
        }
        self.layouts.push(layout);
    }

    /// For each element of the compact layout, its segment and its position in it: one pass
    /// writes both, since a nested program that asks for one asks for the other.
    pub(super) fn segment_ids(
        &mut self,
        lengths: &DeviceVec,
        starts: &DeviceVec,
        total: usize,
        span: TextRange,
    ) -> RunResult<(DeviceVec, DeviceVec)> {
        self.search_segments(lengths, starts, total, None, span)
    }

    /// `segment_ids` over `total` elements, or over a bound `total` and the device `count` of
    /// the layout's elements (the ids and positions then carry it).
    fn search_segments(
        &mut self,
        lengths: &DeviceVec,
        starts: &DeviceVec,
        total: usize,
        count: Option<Arc<DeviceCount>>,
        span: TextRange,
    ) -> RunResult<(DeviceVec, DeviceVec)> {
        if let Some(ids) = self.layouts.iter().find(|l| l.describes(lengths)).and_then(|l| l.ids.clone()) {
            return Ok(ids);
        }
        let (mut ids, mut positions) =
            (self.alloc(Scalar::I32, total, span)?, self.alloc(Scalar::I32, total, span)?);
        let mut params = vec![0; wgsl::FIRST_SCALAR + 1];
        params[wgsl::FIRST_SCALAR] = lengths.len as u32;
        let bindings = [starts.binding(), ids.binding(), positions.binding()];
        self.launch_counted(&prims::segment_search(), total, count.as_ref(), &params, &bindings, span)?;
        ids.count = count.clone();
        positions.count = count;
        if let Some(layout) = self.layouts.iter_mut().find(|l| l.describes(lengths)) {
            layout.ids = Some((ids.clone(), positions.clone()));
        }
        // The ids are as long as the elements: only the latest layouts keep theirs.
        let with_ids = self.layouts.iter().filter(|l| l.ids.is_some()).count();
        if with_ids > IDS_KEPT
            && let Some(oldest) = self.layouts.iter_mut().find(|l| l.ids.is_some())
        {
            oldest.ids = None;
        }
        Ok((ids, positions))
    }

    pub(super) fn concat(&mut self, parts: &[DeviceValue], span: TextRange) -> RunResult<DeviceVec> {
        let vectors = parts.iter().all(|p| matches!(p, DeviceValue::Device(v) if !v.scalar));
        let counted = parts.iter().any(|p| matches!(p, DeviceValue::Device(v) if v.unsettled().is_some()));
        if vectors && counted && parts.len() <= prims::CONCAT_PARTS {
            return self.concat_counted(parts, span);
        }
        let parts = &self.with_exact_lens(parts.to_vec(), span)?;
        let elem = parts.first().map_or(Scalar::I32, DeviceValue::elem);
        let size = wgsl::scalar::storage_size(elem);
        let total = parts.iter().map(|p| p.vector_len().unwrap_or(1)).sum();
        let out = self.alloc(elem, total, span)?;
        let mut at = 0u64;
        for part in parts {
            let part = match part {
                DeviceValue::Device(v) => v.clone(),
                DeviceValue::Host(s) => {
                    let bytes = super::value::encode(&cpu::Buffer::from_scalars(s.ty(), &[*s])).0;
                    let buffer = self.gpu.upload(&bytes).map_err(|e| gpu_error(e, span))?;
                    DeviceVec { buffer, len: 1, elem, scalar: true, count: None }
                }
            };
            self.gpu.copy(&part.buffer, 0, &out.buffer, at, part.bytes());
            at += part.len as u64 * size;
        }
        Ok(out)
    }

    /// `concat` of vectors some of whose lengths are on the device: one kernel over the sum
    /// of their bounds, and the total a device count.
    fn concat_counted(&mut self, parts: &[DeviceValue], span: TextRange) -> RunResult<DeviceVec> {
        let parts = self.devices(parts, span)?;
        let elem = parts[0].elem;
        let bound = parts.iter().map(|p| p.len).sum();
        if bound == 0 {
            return self.alloc(elem, 0, span);
        }
        let mut out = self.alloc(elem, bound, span)?;
        let total = self.count_record(span)?;
        let mut params = self.grid_width_param();
        params.resize(wgsl::FIRST_SCALAR + parts.len(), 0);
        let mut counts = Vec::new();
        for (j, part) in parts.iter().enumerate() {
            params[wgsl::FIRST_SCALAR + j] = part.len as u32;
            if let Some(count) = part.unsettled() {
                counts.push((wgsl::FIRST_SCALAR + j, count.clone()));
            }
        }
        let mut bindings: Vec<Binding> = parts.iter().map(DeviceVec::binding).collect();
        bindings.extend([out.binding(), total.binding()]);
        let counts: Vec<_> = counts.iter().map(|(k, c)| (*k, c)).collect();
        let kernel = prims::concat_parts(elem, parts.len());
        let grid = Grid::Host(bound.div_ceil(wgsl::WORKGROUP as usize) as u64);
        self.launch_grid(&kernel, grid, bound, &counts, &params, &bindings, span)?;
        out.count = Some(self.device_count(total.buffer));
        Ok(out)
    }

    /// `dst` with `src` written over `dst[at..at + len(src)]` (`Op::WriteAt`): a copy command,
    /// into `dst`'s own buffer where nobody else holds it, else into a copy of it.
    pub(super) fn write_at(
        &mut self,
        dst: DeviceValue,
        at: &DeviceValue,
        src: &DeviceValue,
        span: TextRange,
    ) -> RunResult<DeviceVec> {
        let at = self.host_count(at, span)?;
        let src = self.device(src, span)?;
        // `dst` is matched, not passed to `device`, whose clone would hold a second reference
        // to the buffer and defeat the test for writing in place below.
        let DeviceValue::Device(dst) = dst else {
            return Err(internal_at("a write into a host scalar", span));
        };
        if at + src.len > dst.len {
            let message = format!("a write of {} elements at {at} into {} elements", src.len, dst.len);
            return Err(internal_at(message, span));
        }
        let out = if Arc::strong_count(&dst.buffer) == 1 {
            dst
        } else {
            let out = self.alloc(dst.elem, dst.len, span)?;
            self.gpu.copy(&dst.buffer, 0, &out.buffer, 0, dst.bytes());
            out
        };
        self.gpu.copy(
            &src.buffer,
            0,
            &out.buffer,
            at as u64 * wgsl::scalar::storage_size(out.elem),
            src.bytes(),
        );
        Ok(out)
    }

    /// A copy of `dst` with `dst[index[i]] = src[i]`; the last write to a place wins. With
    /// `distinct` indexes (`Op::Scatter`) no write needs to win: one launch, not three.
    fn scatter(
        &mut self,
        dst: &DeviceValue,
        index: &DeviceValue,
        src: &DeviceValue,
        distinct: bool,
        span: TextRange,
    ) -> RunResult<DeviceVec> {
        let dst = self.with_exact_len(dst.clone(), span)?;
        let (dst, index) = (self.device(&dst, span)?, self.device(index, span)?);
        let out = self.alloc(dst.elem, dst.len, span)?;
        self.gpu.copy(&dst.buffer, 0, &out.buffer, 0, dst.bytes());
        let count = index.unsettled().cloned();
        let mut bindings = vec![index.binding()];
        if !distinct {
            let winners = self.fill(&DeviceValue::Host(ScalarValue::I32(-1)), dst.len, span)?;
            let bound = [0, 0, dst.len as u32];
            self.launch_counted(
                &prims::scatter_winners(index.elem),
                index.len,
                count.as_ref(),
                &bound,
                &[index.binding(), winners.binding()],
                span,
            )?;
            bindings.push(winners.binding());
        }
        let mut params = vec![0; wgsl::FIRST_SCALAR];
        params[2] = dst.len as u32;
        let operands = self.operands(std::slice::from_ref(src), None, &mut params, &mut bindings, span)?;
        bindings.push(out.binding());
        let write = prims::scatter_write(index.elem, operands[0], distinct);
        self.launch_counted(&write, index.len, count.as_ref(), &params, &bindings, span)?;
        Ok(out)
    }

    /// An element loop as one kernel: thread `i` runs element `i`'s loop.
    pub(super) fn run_element_loop(
        &mut self,
        f: &Function,
        stmt: &Stmt,
        frame: &mut Frame<DeviceValue>,
    ) -> RunResult<Vec<DeviceValue>> {
        let span = stmt.span;
        let StmtKind::ElementLoop { len, inputs, shared, params, init, state, cond, body, .. } = &stmt.kind
        else {
            return Err(internal_at("an element loop that is not one", span));
        };
        let n = self.host_count(&get(frame, *len, span)?, span)?;
        let input_values = self.frame_values(frame, inputs, false, span)?;
        let init_values = self.frame_values(frame, init, false, span)?;
        let shared_values = self.frame_values(frame, shared, false, span)?;
        if n == 0 {
            return state
                .iter()
                .map(|&s| Ok(DeviceValue::Device(self.alloc(f.ty(s).elem, 0, span)?)))
                .collect();
        }
        let mut words = vec![0; wgsl::FIRST_SCALAR];
        let mut bindings = Vec::new();
        let entry: Vec<DeviceValue> = input_values.iter().chain(&init_values).cloned().collect();
        let operands = self.operands(&entry, None, &mut words, &mut bindings, span)?;
        for value in &shared_values {
            bindings.push(self.device(value, span)?.binding());
        }
        let looped = LoopKernel {
            function: f,
            params,
            inputs: &operands[..inputs.len()],
            state,
            init: &operands[inputs.len()..],
            shared,
            cond,
            body,
        };
        let kernel = match looped.kernel() {
            Ok(kernel) => kernel,
            Err(why) => return self.element_loop_on_cpu(f, stmt, frame, &why.0),
        };
        let mut outs = Vec::with_capacity(state.len());
        for &s in state {
            let out = self.alloc(f.ty(s).elem, n, span)?;
            bindings.push(out.binding());
            outs.push(DeviceValue::Device(out));
        }
        let mut reads = Vec::new();
        stmt.reads(&mut reads);
        reads.sort_unstable();
        reads.dedup();
        let operands =
            reads.iter().filter_map(|&v| get(frame, v, span).ok().map(|value| (v, value))).collect();
        words[1] = self.expect_failure(stmt.clone(), f.vars.len(), operands)?;
        let bindings = self.with_record(bindings);
        self.launch(&kernel, n, &words, &bindings, span)?;
        Ok(outs)
    }

    /// An element loop the code generator cannot express, on the CPU executor.
    fn element_loop_on_cpu(
        &mut self,
        f: &Function,
        stmt: &Stmt,
        frame: &mut Frame<DeviceValue>,
        why: &str,
    ) -> RunResult<Vec<DeviceValue>> {
        *self.report.on_cpu.entry(format!("element loop ({why})")).or_insert(0) += 1;
        self.sync(stmt.span)?;
        let mut reads = Vec::new();
        stmt.reads(&mut reads);
        let mut host_frame: Frame<cpu::FlatValue> = vec![None; f.vars.len()];
        for v in reads {
            if let Ok(value) = get(frame, v, stmt.span) {
                host_frame[v as usize] = Some(self.host_value(&value, stmt.span)?);
            }
        }
        let (results, _) = cpu::element_loop_stmt(stmt, f.vars.len(), &host_frame, &Interrupt::default())?;
        results.into_iter().map(|v| self.upload(v, stmt.span)).collect()
    }
}

/// How many compact layouts a run keeps.
/// Enough for every level of a deep recursion: a level's descriptors are used again after
/// the levels below it return, and each layout not kept costs a read-back of its total. The
/// starts are as long as the descriptor, which the program holds anyway.
const LAYOUTS_KEPT: usize = 128;
/// How many of the kept layouts keep their segment ids.
const IDS_KEPT: usize = 16;

/// The compact layout of one lengths vector. Holding `lengths` keeps its buffer alive, so no
/// other vector can take its place (and be mistaken for it) while the entry exists.
pub(super) struct CompactLayout {
    lengths: DeviceVec,
    starts: DeviceVec,
    /// The number of elements, or a bound on it where `total_count` holds it on the device.
    total: usize,
    total_count: Option<Arc<DeviceCount>>,
    /// The segment ids and the positions within segments.
    ids: Option<(DeviceVec, DeviceVec)>,
}

impl CompactLayout {
    /// Whether the layout is of `lengths`, settled since or not.
    fn describes(&self, lengths: &DeviceVec) -> bool {
        Arc::ptr_eq(&self.lengths.buffer, &lengths.buffer) && self.lengths.known_len() == lengths.known_len()
    }
}

/// A launch's parameter words: `params`, padded with zeros to the first host scalar's slot.
pub(super) fn param_words(params: &[u32]) -> Vec<u32> {
    let mut words = params.to_vec();
    words.resize(words.len().max(wgsl::FIRST_SCALAR), 0);
    words
}

/// Whether a host scalar's storage is all zero bits (`False`, `0`, `+0.0`).
fn zero_bits(s: ScalarValue) -> bool {
    match s {
        ScalarValue::Bool(b) => !b,
        ScalarValue::I32(i) => i == 0,
        ScalarValue::I64(i) => i == 0,
        ScalarValue::F32(x) => x.to_bits() == 0,
        ScalarValue::F64(x) => x.to_bits() == 0,
    }
}

/// Flags (`bool`, stored as 0 or 1) read as `i32` counts.
fn as_i32(flags: &DeviceVec) -> DeviceVec {
    DeviceVec { elem: Scalar::I32, ..flags.clone() }
}
