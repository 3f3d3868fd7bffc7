//! `weft-gpu`: the GPU executor and its wgpu runtime, the only crate that links wgpu. The
//! executor runs the segmented IR on a wgpu device, one kernel (or one primitive's
//! passes) per op.
//!
//! Host control flow is `host_flow`'s, as on the CPU executor. A value is a host scalar or a
//! device array (`DeviceValue`); device arrays stay resident, and a scalar computed on the device
//! (a reduction's result) stays there until the host needs it: to branch, to size an
//! allocation or to print. Those read-backs are counted (`runtime::Stats`).
//!
//! Ops run as follows:
//! - ops on host scalars alone run on the host, through the CPU executor's kernels;
//! - element-wise ops and checks are one generated kernel (`wgsl::map_kernel`), element loops
//!   one kernel each (`wgsl::LoopKernel`);
//! - the others run the primitive library's passes (`prims`);
//! - `SegSortPerm` is a radix sort, `permute`'s check marks targets (`sort`);
//! - what has no GPU version (`load_*`, an op WGSL cannot express) runs on the CPU executor,
//!   and the profile says so.
//!
//! Run-time errors: a failing kernel records the op's sequence number on the device, and the
//! host looks at the record with every read-back. When an op failed, the host reads that op's
//! operands back and runs it on the CPU executor, which gives the interpreter's exact code,
//! message and span.

mod fused;
mod guesses;
mod prims;
pub mod runtime;
mod sort;
mod value;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock, Weak};

use rowan::TextRange;

use crate::runtime::{Binding, DeviceBuffer, Gpu, GpuError, NO_ERROR, Profile, Stats};
use weft_core::types::Scalar;
use weft_exec::cpu::{self, Counters, ScalarValue};
use weft_exec::host_flow::{Frame, Machine, RunResult, Walker, get, handed_over, internal_at, set, take};
use weft_exec::interp::Host;
use weft_flat::ir::{Check, FuncId, Function, Op, Program, Stmt, StmtKind, VarId};
use weft_flat::wgsl::scalar::storage_size;
use weft_flat::wgsl::{self, Operand};
use weft_syntax::diagnostics::{Code, Diagnostic};

pub use self::guesses::GuessCounts;
pub use self::value::{DeviceCount, DeviceValue, DeviceVec};

/// What a run on the GPU did.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub counters: Counters,
    pub stats: Stats,
    /// Ops that ran on the CPU executor for want of a GPU version, by name.
    pub on_cpu: BTreeMap<String, u64>,
    /// Calls that ran on the CPU executor because their vector arguments held fewer elements
    /// than the crossover (`Gpu::set_cpu_crossover`), by function: how many, and their
    /// elements in all.
    pub cpu_calls: BTreeMap<String, (u64, u64)>,
    /// By call depth (1: the program's top level, 2: the functions it calls, ...; 0: the
    /// run's setup and final check): the work done while that many calls were open. A
    /// flattened recursion runs one level of its recursion tree per pair of depths (the
    /// vectorised function, then its body). Counted from the shared device's totals, so runs
    /// sharing the device at the same time mix their figures.
    pub levels: Vec<Level>,
    /// Layouts allocated by a guessed size inside a call, and the guesses that failed, each
    /// of which ran its call again (the `guesses` module).
    pub guesses: GuessCounts,
    /// Kernel times, attributed to source ranges, from `run_profiled`.
    pub profile: Option<Profile>,
}

/// The work done at one call depth.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Level {
    /// Calls entered at this depth.
    pub calls: u64,
    pub launches: u64,
    pub read_backs: u64,
}

/// One GPU for the whole process, created on first use (the adapter `WEFT_ADAPTER` names, or
/// the best): for tools and tests that run many programs one after another. Sessions own their
/// device instead (`weft_session::DeviceSlot`), which can be replaced and forgets failures.
pub fn shared_gpu() -> Result<&'static Gpu, GpuError> {
    static SHARED: OnceLock<Result<Gpu, GpuError>> = OnceLock::new();
    SHARED
        .get_or_init(|| {
            let name = std::env::var("WEFT_ADAPTER").ok().filter(|n| !n.is_empty());
            Gpu::new(name.as_deref())
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Runs `program.main` on `gpu`.
pub fn run(gpu: &Gpu, program: &Program, host: &mut dyn Host) -> Result<Report, Diagnostic> {
    let before = gpu.stats();
    let mut report = Report::default();
    let outcome = walk(gpu, program, program.main, Vec::new(), host, &mut report);
    report.stats = stats_since(&before, &gpu.stats());
    outcome.map(|_| report)
}

/// Calls function `func` of `program` with `args` (laid out as its parameters are, on the
/// device or the host) and gives its results, left where they are: device arrays outlive the
/// run, so a session can pass them to the next call without a copy.
pub fn call(
    gpu: &Gpu,
    program: &Program,
    func: FuncId,
    args: Vec<DeviceValue>,
    host: &mut dyn Host,
) -> Result<Vec<DeviceValue>, Diagnostic> {
    walk(gpu, program, func, args, host, &mut Report::default())
}

/// `call`, with what it did: the device's counts, and every kernel's time when `profile`
/// (as `run_profiled` times them).
pub fn call_reported(
    gpu: &Gpu,
    program: &Program,
    func: FuncId,
    args: Vec<DeviceValue>,
    host: &mut dyn Host,
    profile: bool,
) -> Result<(Vec<DeviceValue>, Report), Diagnostic> {
    let span = TextRange::default();
    if profile {
        gpu.start_profile(None).map_err(|e| gpu_error(e, span))?;
    }
    let before = gpu.stats();
    let mut report = Report::default();
    let outcome = walk(gpu, program, func, args, host, &mut report);
    report.stats = stats_since(&before, &gpu.stats());
    if profile {
        report.profile = gpu.finish_profile().map_err(|e| gpu_error(e, span))?;
    }
    outcome.map(|results| (results, report))
}

fn walk(
    gpu: &Gpu,
    program: &Program,
    func: FuncId,
    args: Vec<DeviceValue>,
    host: &mut dyn Host,
    report: &mut Report,
) -> Result<Vec<DeviceValue>, Diagnostic> {
    let span = TextRange::default();
    let machine = GpuMachine::new(gpu, report).map_err(|e| gpu_error(e, span))?;
    let mut walker = Walker::new(program, host, machine);
    let outcome = walker.call_function(func, args, span);
    if outcome.as_ref().is_err_and(|d| d.code == Code::Interrupted) {
        // An interrupted run's half-recorded batch never runs: the user asked to stop.
        gpu.discard_batch();
    }
    // Work whose results no one read may still fail: the run is over only when the device
    // says nothing failed.
    gpu.attribute_to(0, 0);
    let outcome = outcome
        .and_then(|results| walker.machine.with_exact_lens(results, span))
        .and_then(|results| walker.machine.sync(span).map(|()| results));
    walker.machine.call_depth(0);
    outcome
}

/// `run`, timing every kernel (`Report::profile`): by timestamp queries where the adapter
/// has them, else by the wall clock around each launch submitted alone.
pub fn run_profiled(gpu: &Gpu, program: &Program, host: &mut dyn Host) -> Result<Report, Diagnostic> {
    let span = TextRange::default();
    gpu.start_profile(None).map_err(|e| gpu_error(e, span))?;
    let outcome = run(gpu, program, host);
    let profile = gpu.finish_profile();
    let report = outcome?;
    let profile = profile.map_err(|e| gpu_error(e, span))?;
    Ok(Report { profile, ..report })
}

/// A host value, moved to the device (a scalar stays on the host): an operand for `apply`.
pub fn upload(gpu: &Gpu, value: cpu::FlatValue) -> Result<DeviceValue, Diagnostic> {
    let mut report = Report::default();
    let mut machine = GpuMachine::new(gpu, &mut report).map_err(|e| gpu_error(e, TextRange::default()))?;
    machine.upload(value, TextRange::default())
}

/// Runs one op on resident operands (op operand `k` is variable `k`) exactly as the executor
/// does, without waiting for it: for benchmarks and tools. `dest` is its result type.
pub fn apply(
    gpu: &Gpu,
    op: &Op,
    dest: Option<Scalar>,
    args: Vec<DeviceValue>,
) -> Result<Option<DeviceValue>, Diagnostic> {
    let span = TextRange::default();
    let mut report = Report::default();
    let mut machine = GpuMachine::new(gpu, &mut report).map_err(|e| gpu_error(e, span))?;
    let mut frame: Frame<DeviceValue> = args.into_iter().map(Some).collect();
    let result = machine.op(&mut NoFiles, op, dest, &mut frame, &[], span)?;
    let result = result.map(|r| machine.with_exact_len(r, span)).transpose()?;
    machine.sync(span)?;
    Ok(result)
}

/// A value back on the host, after the work that computes it.
pub fn download(gpu: &Gpu, value: &DeviceValue) -> Result<cpu::FlatValue, Diagnostic> {
    let mut report = Report::default();
    let mut machine = GpuMachine::new(gpu, &mut report).map_err(|e| gpu_error(e, TextRange::default()))?;
    machine.host_value(value, TextRange::default())
}

/// Elements `start..start + len` of each value (clamped to its length), read back alone and
/// all at once: a session shows the parts of a long value that its text needs without reading
/// the rest. A host scalar is itself.
pub fn download_ranges(
    gpu: &Gpu,
    ranges: &[(&DeviceValue, usize, usize)],
) -> Result<Vec<cpu::FlatValue>, Diagnostic> {
    let span = TextRange::default();
    // Each device range as the part of its array that is read, and where that part starts.
    let parts: Vec<Result<(DeviceVec, u64), ScalarValue>> = ranges
        .iter()
        .map(|&(value, start, len)| match value {
            DeviceValue::Host(s) => Err(*s),
            DeviceValue::Device(v) => {
                let start = start.min(v.len);
                Ok((
                    DeviceVec { len: len.min(v.len - start), ..v.clone() },
                    start as u64 * storage_size(v.elem),
                ))
            }
        })
        .collect();
    let reads: Vec<(&Arc<DeviceBuffer>, u64, u64)> =
        parts.iter().flatten().map(|(part, offset)| (&part.buffer, *offset, part.bytes())).collect();
    // One read-back, or more where the parts would not fit in one staging buffer.
    let mut data = Vec::new();
    if reads.iter().any(|&(_, _, bytes)| bytes > 0) {
        let mut report = Report::default();
        let mut machine = GpuMachine::new(gpu, &mut report).map_err(|e| gpu_error(e, span))?;
        let room = gpu.limits.max_buffer_size.saturating_sub(4).max(4);
        let mut group_start = 0;
        while group_start < reads.len() {
            let mut bytes = 0;
            let group_end = (group_start..reads.len())
                .find(|&k| {
                    bytes += reads[k].2.next_multiple_of(4);
                    bytes > room && k > group_start
                })
                .unwrap_or(reads.len());
            let (read, error) = gpu
                .read_parts(&reads[group_start..group_end], &machine.record)
                .map_err(|e| gpu_error(e, span))?;
            machine.check_record(error, span)?;
            data.extend(read);
            group_start = group_end;
        }
    }
    let mut data = data.into_iter();
    Ok(parts
        .iter()
        .map(|part| match part {
            Err(s) => cpu::FlatValue::Scalar(*s),
            Ok((part, _)) => part.decode(&data.next().unwrap_or_default()),
        })
        .collect())
}

/// A host for single ops: they print nothing and read no files.
struct NoFiles;

impl Host for NoFiles {
    fn print(&mut self, _line: &str) {}
    fn draw(&mut self, _chart: weft_exec::chart::Chart) {}

    fn read_file(&mut self, path: &str) -> std::io::Result<Vec<u8>> {
        Err(std::io::Error::new(std::io::ErrorKind::NotFound, path.to_string()))
    }
}

fn stats_since(before: &Stats, after: &Stats) -> Stats {
    let mut per_kernel = after.per_kernel.clone();
    for (name, n) in &before.per_kernel {
        if let Some(m) = per_kernel.get_mut(name) {
            *m -= n;
        }
    }
    per_kernel.retain(|_, n| *n > 0);
    Stats {
        launches: after.launches - before.launches,
        indirect_launches: after.indirect_launches - before.indirect_launches,
        submissions: after.submissions - before.submissions,
        read_backs: after.read_backs - before.read_backs,
        bytes_read_back: after.bytes_read_back - before.bytes_read_back,
        uploads: after.uploads - before.uploads,
        bytes_uploaded: after.bytes_uploaded - before.bytes_uploaded,
        bytes_bound: after.bytes_bound - before.bytes_bound,
        bytes_copied: after.bytes_copied - before.bytes_copied,
        buffers_created: after.buffers_created - before.buffers_created,
        pipelines_built: after.pipelines_built - before.pipelines_built,
        pipeline_time: after.pipeline_time.saturating_sub(before.pipeline_time),
        per_kernel,
    }
}

/// How many device scalars a run keeps for read-backs to bring (`GpuMachine::scalars`).
const SCALARS_KEPT: usize = 128;

/// How many launches that may fail can wait for a read-back to check them.
const PENDING_LIMIT: usize = 1024;

/// A launch that may fail, kept until the host knows it did not.
struct Pending {
    seq: u32,
    stmt: Stmt,
    vars: usize,
    /// The statement's operands, by variable.
    operands: Vec<(VarId, DeviceValue)>,
}

pub(crate) struct GpuMachine<'g, 'r> {
    gpu: &'g Gpu,
    /// This run's error record: the first failing launch's sequence number.
    record: Arc<DeviceBuffer>,
    report: &'r mut Report,
    pending: Vec<Pending>,
    loads: cpu::LoadedFiles,
    /// Compact layouts of segment descriptors built this run (`prims`).
    layouts: Vec<prims::CompactLayout>,
    /// The open calls, and the launches and read-backs when that last changed.
    depth: usize,
    depth_mark: (u64, u64),
    /// Device counts no read-back has brought to the host yet: the next read-back, whatever
    /// it is for, brings them all.
    unsettled: Vec<Arc<DeviceCount>>,
    /// Scalars computed on the device (reductions, element-wise ops on device scalars), and
    /// their values once a read-back has brought them: every read-back brings the unread
    /// ones, so a recursion that branches on one scalar and sizes by another reads once.
    scalars: Vec<(Arc<DeviceBuffer>, Scalar, Option<ScalarValue>)>,
    /// Lengths the IR took (`length`) of vectors whose counts are still on the device, with
    /// their bounds: a `replicate`, `iota` or kernel over one runs over the bound and reads
    /// the count on the device, as an op over the counted vector itself does.
    /// Held weakly: an entry keeps no count on the list a read-back brings.
    device_lengths: Vec<(Weak<DeviceCount>, usize)>,
    guesses: guesses::Guesses,
}

impl Drop for GpuMachine<'_, '_> {
    /// No launch that may fail ran since the record was last found clean (or cleared, a
    /// write that lands before the next submission), so it is clean for the next run.
    fn drop(&mut self) {
        if self.pending.is_empty() {
            self.gpu.return_record(self.record.clone());
        }
    }
}

/// A device failure at the op's span: a rejected kernel is a compiler bug (E0499, naming the
/// kernel), anything else a resource the device lacks (E0409).
fn gpu_error(e: GpuError, span: TextRange) -> Diagnostic {
    if e.is_internal() {
        return Diagnostic::new(Code::InternalError, span, e.0);
    }
    Diagnostic::new(Code::ResourceExhausted, span, format!("the GPU could not run this: {e}"))
}

impl<'g, 'r> GpuMachine<'g, 'r> {
    fn new(gpu: &'g Gpu, report: &'r mut Report) -> Result<Self, GpuError> {
        let record = gpu.error_record()?;
        Ok(GpuMachine {
            gpu,
            record,
            report,
            pending: Vec::new(),
            loads: cpu::LoadedFiles::default(),
            layouts: Vec::new(),
            depth: 0,
            depth_mark: gpu.launches_and_read_backs(),
            unsettled: Vec::new(),
            scalars: Vec::new(),
            device_lengths: Vec::new(),
            guesses: guesses::Guesses::default(),
        })
    }

    /// The bindings of a launch that may fail: the error record last.
    fn with_record(&self, mut bindings: Vec<Binding>) -> Vec<Binding> {
        bindings.push(Binding { buffer: self.record.clone(), bytes: 4 });
        bindings
    }

    /// The next sequence number for a launch that may fail, kept with what the CPU executor
    /// needs to explain a failure. A long run of launches that no read-back checked is
    /// checked first, so that the operands kept for them do not pile up.
    fn expect_failure(
        &mut self,
        stmt: Stmt,
        vars: usize,
        operands: Vec<(VarId, DeviceValue)>,
    ) -> RunResult<u32> {
        if self.pending.len() >= PENDING_LIMIT {
            self.sync(stmt.span)?;
        }
        let seq = self.pending.len() as u32;
        self.pending.push(Pending { seq, stmt, vars, operands });
        Ok(seq)
    }

    /// Raises the first recorded failure, if any: the host must not use a value read back in
    /// the same breath as a failure.
    fn check_record(&mut self, error: u32, span: TextRange) -> RunResult<()> {
        if error == NO_ERROR {
            self.pending.clear();
            self.guesses.launches_checked();
            return Ok(());
        }
        self.gpu.clear_record(&self.record);
        let pending = std::mem::take(&mut self.pending);
        let Some(failed) = pending.into_iter().find(|p| p.seq == error) else {
            return Err(internal_at(
                format!("the device reported a failure of unknown launch {error}"),
                span,
            ));
        };
        let highest = failed.operands.iter().map(|(v, _)| *v as usize + 1).max().unwrap_or(0);
        let mut frame: Frame<cpu::FlatValue> = vec![None; failed.vars.max(highest)];
        for (var, value) in failed.operands {
            let host = self.host_value(&value, failed.stmt.span)?;
            set(&mut frame, var, host, failed.stmt.span)?;
        }
        cpu::statement_error(&failed.stmt, failed.vars, &frame)?;
        Err(internal_at(
            format!("`{}` failed on the GPU but not on the CPU executor", stmt_name(&failed.stmt)),
            failed.stmt.span,
        ))
    }

    /// Waits for all recorded work and raises the first failure.
    pub(crate) fn sync(&mut self, span: TextRange) -> RunResult<()> {
        if self.pending.is_empty() && self.unsettled.is_empty() {
            return self.gpu.submit().map_err(|e| gpu_error(e, span));
        }
        self.read_parts(&[], span).map(|_| ())
    }

    /// Reads ranges `(buffer, offset, bytes)` back in one read-back, after checking the error
    /// record. The unsettled device counts come back with them, so that a level of a
    /// recursion pays one read-back for whatever it needs to know.
    fn read_parts(
        &mut self,
        parts: &[(&Arc<DeviceBuffer>, u64, u64)],
        span: TextRange,
    ) -> RunResult<Vec<Vec<u8>>> {
        // A count that only this list holds counts nothing that is still alive.
        let mut counts = std::mem::take(&mut self.unsettled);
        counts.retain(|c| Arc::strong_count(c) > 1);
        let unread: Vec<usize> = (0..self.scalars.len()).filter(|&k| self.scalars[k].2.is_none()).collect();
        let scalars: Vec<(Arc<DeviceBuffer>, Scalar)> =
            unread.iter().map(|&k| (self.scalars[k].0.clone(), self.scalars[k].1)).collect();
        let mut all = parts.to_vec();
        all.extend(counts.iter().map(|c| (&c.buffer, 0, 4)));
        all.extend(scalars.iter().map(|(buffer, elem)| (buffer, 0, storage_size(*elem))));
        let (mut data, error) = self.gpu.read_parts(&all, &self.record).map_err(|e| gpu_error(e, span))?;
        let words: Vec<usize> =
            data[parts.len()..][..counts.len()].iter().map(|w| value::count_word(w)).collect();
        if error != NO_ERROR && self.guesses.failed_before_open(error) {
            // A failure from before the call that guessed is the program's, reported as it is.
            self.guesses.give_up();
        } else if let Err(cut) = self.check_guesses(&counts, &words, span) {
            self.unsettled.extend(counts);
            return Err(cut);
        }
        if error != NO_ERROR {
            // Explaining the failure reads operands back, their counts among them.
            self.unsettled.extend(counts.iter().cloned());
        }
        self.check_record(error, span)?;
        for (count, word) in counts.iter().zip(words) {
            let _ = count.exact.set(word);
        }
        let extra = data.drain(parts.len()..).skip(counts.len());
        for ((k, (_, elem)), bytes) in unread.into_iter().zip(&scalars).zip(extra) {
            self.scalars[k].2 = value::decode(*elem, &bytes).get(0);
        }
        Ok(data)
    }

    /// Keeps `scalar`, a device scalar just computed, to be read with the next read-back.
    fn keep_scalar(&mut self, scalar: &DeviceVec) {
        // A scalar whose buffer only this list holds can never be asked for again.
        self.scalars.retain(|(buffer, _, _)| Arc::strong_count(buffer) > 1);
        if self.scalars.len() >= SCALARS_KEPT {
            self.scalars.remove(0);
        }
        self.scalars.push((scalar.buffer.clone(), scalar.elem, None));
    }

    /// The value of a device scalar that a read-back has brought.
    fn known_scalar(&self, value: &DeviceValue) -> Option<ScalarValue> {
        let DeviceValue::Device(v) = value else { return None };
        let (_, _, known) = self.scalars.iter().find(|(b, _, _)| v.scalar && Arc::ptr_eq(b, &v.buffer))?;
        *known
    }

    /// The bound and the device count of `value` where it is the length of a vector whose
    /// count is still on the device (`GpuMachine::device_lengths`).
    fn device_length(&self, value: &DeviceValue) -> Option<(usize, Arc<DeviceCount>)> {
        let DeviceValue::Device(v) = value else { return None };
        let (count, bound) = self.device_lengths.iter().find_map(|(c, bound)| {
            let count = c.upgrade().filter(|c| v.scalar && Arc::ptr_eq(&c.buffer, &v.buffer))?;
            Some((count, *bound))
        })?;
        count.exact.get().is_none().then_some((bound, count))
    }

    /// A new device count in the first word of `buffer`, to be brought back with the next
    /// read-back.
    fn device_count(&mut self, buffer: Arc<DeviceBuffer>) -> Arc<DeviceCount> {
        let count = Arc::new(DeviceCount { buffer, exact: OnceLock::new() });
        self.unsettled.push(count.clone());
        count
    }

    /// `value` with its exact length on the host: a read-back if its count is still on the
    /// device (with every other unsettled count).
    fn with_exact_len(&mut self, value: DeviceValue, span: TextRange) -> RunResult<DeviceValue> {
        match value {
            DeviceValue::Device(v) if v.count.is_some() => {
                if let Some(count) = v.unsettled() {
                    self.list_unsettled(count);
                    self.read_parts(&[], span)?;
                }
                Ok(DeviceValue::Device(v.exact_if_known()))
            }
            other => Ok(other),
        }
    }

    /// Puts `count` on the list the next read-back brings. Every count is on it from its
    /// making, but a read-back that found a failure gives its counts back only for the
    /// failure's explanation.
    fn list_unsettled(&mut self, count: &Arc<DeviceCount>) {
        if !self.unsettled.iter().any(|c| Arc::ptr_eq(c, count)) {
            self.unsettled.push(count.clone());
        }
    }

    fn with_exact_lens(&mut self, values: Vec<DeviceValue>, span: TextRange) -> RunResult<Vec<DeviceValue>> {
        values.into_iter().map(|v| self.with_exact_len(v, span)).collect()
    }

    /// The values of `vars`: settled, or only where their counts are known when the caller
    /// runs over `counted` device counts (`DeviceVec::count`).
    fn frame_values(
        &mut self,
        frame: &Frame<DeviceValue>,
        vars: &[VarId],
        counted: bool,
        span: TextRange,
    ) -> RunResult<Vec<DeviceValue>> {
        let mut values = vars.iter().map(|&v| get(frame, v, span)).collect::<RunResult<Vec<_>>>()?;
        // A device scalar the host has read is a host scalar (a parameter word) from then on;
        // 64-bit ones stay bound, where a host one would be uploaded.
        for value in &mut values {
            if let Some(known) = self.known_scalar(value).filter(|s| storage_size(s.ty()) == 4) {
                *value = DeviceValue::Host(known);
            }
        }
        if counted {
            Ok(values.into_iter().map(DeviceValue::exact_if_known).collect())
        } else {
            self.with_exact_lens(values, span)
        }
    }

    /// A value as the CPU executor holds it.
    fn host_value(&mut self, value: &DeviceValue, span: TextRange) -> RunResult<cpu::FlatValue> {
        match self.with_exact_len(value.clone(), span)? {
            DeviceValue::Host(s) => Ok(cpu::FlatValue::Scalar(s)),
            DeviceValue::Device(v) => {
                let data = self.read_parts(&[(&v.buffer, 0, v.bytes())], span)?;
                Ok(v.decode(data.first().map_or(&[][..], Vec::as_slice)))
            }
        }
    }

    /// A scalar on the host, read back if it is on the device.
    fn host_scalar(&mut self, value: &DeviceValue, span: TextRange) -> RunResult<ScalarValue> {
        if let Some(known) = self.known_scalar(value) {
            return Ok(known);
        }
        match self.host_value(value, span)? {
            cpu::FlatValue::Scalar(s) => Ok(s),
            cpu::FlatValue::Vector(b) if b.len() == 1 => {
                b.get(0).ok_or_else(|| internal_at("an empty scalar", span))
            }
            _ => Err(internal_at("a vector where a scalar was expected", span)),
        }
    }

    /// The number of elements an op of `len` elements runs over: `len` on the host, or where
    /// it is a length still counted on the device, its bound and that count.
    fn extent_of(
        &mut self,
        len: &DeviceValue,
        span: TextRange,
    ) -> RunResult<(usize, Option<Arc<DeviceCount>>)> {
        match self.device_length(len) {
            Some((bound, count)) => Ok((bound, Some(count))),
            None => self.host_count(len, span).map(|n| (n, None)),
        }
    }

    /// A non-negative count on the host.
    fn host_count(&mut self, value: &DeviceValue, span: TextRange) -> RunResult<usize> {
        match self.host_scalar(value, span)?.as_int() {
            Some(n) => Ok(usize::try_from(n).unwrap_or(0)),
            None => Err(internal_at("a count that is not an integer", span)),
        }
    }

    /// Moves a CPU executor value to the device (a scalar stays on the host).
    fn upload(&mut self, value: cpu::FlatValue, span: TextRange) -> RunResult<DeviceValue> {
        match value.materialized() {
            cpu::FlatValue::Scalar(s) => Ok(DeviceValue::Host(s)),
            cpu::FlatValue::Vector(b) => {
                let (bytes, elem, len) = value::encode(&b);
                let buffer = self.gpu.upload(&bytes).map_err(|e| gpu_error(e, span))?;
                Ok(DeviceValue::Device(DeviceVec::exact(buffer, len, elem)))
            }
            cpu::FlatValue::Progression(_) => {
                Err(internal_at("a progression after it was written out", span))
            }
        }
    }

    /// Runs `op` on the CPU executor's kernels: every operand read back, the result uploaded.
    fn on_cpu(&mut self, op: &Op, args: &[DeviceValue], span: TextRange) -> RunResult<Option<DeviceValue>> {
        let host = args.iter().map(|a| self.host_value(a, span)).collect::<RunResult<Vec<_>>>()?;
        let result = cpu::kernels::run_op(op, &host).map_err(|e| Diagnostic::new(e.code, span, e.message))?;
        result.map(|v| self.upload(v, span)).transpose()
    }

    fn note_on_cpu(&mut self, op: &Op) {
        *self.report.on_cpu.entry(op.name()).or_insert(0) += 1;
    }

    /// Allocates an array of `len` elements of `elem`.
    /// A failure names the array (by its elements, and the span of the op that needs it) and
    /// the limit it met.
    fn alloc(&self, elem: Scalar, len: usize, span: TextRange) -> RunResult<DeviceVec> {
        let bytes = len as u64 * wgsl::scalar::storage_size(elem);
        let buffer = self.gpu.alloc(bytes).map_err(|e| {
            let what =
                format!("an array of {len} {} elements ({})", elem.name(), crate::runtime::byte_size(bytes));
            Diagnostic::new(Code::ResourceExhausted, span, format!("the GPU has no room for {what}: {e}"))
                .with_help("use smaller inputs, or run with `--backend cpu`")
        })?;
        Ok(DeviceVec::exact(buffer, len, elem))
    }

    /// The operand kinds and bindings of a generated kernel's operands: host 32-bit scalars
    /// go in parameter slots, 64-bit ones are uploaded, device arrays are bound. The operands
    /// of `gathered` it reads at any index (a gather's sources) are bound whole.
    fn operands(
        &mut self,
        args: &[DeviceValue],
        gathered: Option<&Op>,
        params: &mut Vec<u32>,
        bindings: &mut Vec<Binding>,
        span: TextRange,
    ) -> RunResult<Vec<Operand>> {
        let mut operands = Vec::with_capacity(args.len());
        for (k, arg) in args.iter().enumerate() {
            let whole = gathered.is_some_and(|op| op.reads_whole(k));
            operands.push(self.operand(k, arg, whole, params, bindings, span)?);
        }
        Ok(operands)
    }

    /// How operand `k` reaches a generated kernel: a 32-bit host scalar in parameter slot
    /// `FIRST_SCALAR + k`, a 64-bit one uploaded, a device value bound (`whole` for an array
    /// read at any index).
    pub(crate) fn operand(
        &mut self,
        k: usize,
        arg: &DeviceValue,
        whole: bool,
        params: &mut Vec<u32>,
        bindings: &mut Vec<Binding>,
        span: TextRange,
    ) -> RunResult<Operand> {
        let arg = match arg {
            DeviceValue::Host(s) if matches!(s.ty(), Scalar::I64 | Scalar::F64) => self
                .upload(cpu::FlatValue::vector(cpu::Buffer::from_scalars(s.ty(), &[*s])), span)?
                .as_scalar(),
            other => other.clone(),
        };
        Ok(match &arg {
            DeviceValue::Host(s) => {
                let slot = wgsl::FIRST_SCALAR + k;
                if params.len() <= slot {
                    params.resize(slot + 1, 0);
                }
                params[slot] = value::param_bits(*s);
                Operand::Param(s.ty(), k)
            }
            DeviceValue::Device(v) => {
                bindings.push(v.binding());
                if v.scalar {
                    Operand::DeviceScalar(v.elem)
                } else if whole {
                    Operand::Whole(v.elem)
                } else {
                    Operand::Elements(v.elem)
                }
            }
        })
    }

    /// An element-wise op or check over device operands: one generated kernel. A failure is
    /// explained by running `stmt` on the CPU executor, or by launch `seq` when given.
    fn element_wise(
        &mut self,
        stmt: &Stmt,
        op: &Op,
        args: &[DeviceValue],
        dest: Option<Scalar>,
        seq: Option<u32>,
    ) -> RunResult<Option<DeviceValue>> {
        let span = stmt.span;
        // The length of the op: its longest element operand (a gather's index for a gather).
        let elements = args.iter().enumerate().filter(|&(k, _)| !op.reads_whole(k)).map(|(_, a)| a);
        let (n, count) = extent(elements);
        let scalar_result = n.is_none();
        let n = n.unwrap_or(1);
        let mut params = vec![0u32; wgsl::FIRST_SCALAR];
        let mut bindings = Vec::new();
        let operands = self.operands(args, Some(op), &mut params, &mut bindings, span)?;
        let Ok(kernel) = wgsl::map_kernel(op, &operands, dest) else {
            // An op WGSL cannot express (`erf` of `f64`): the CPU executor runs it.
            self.note_on_cpu(op);
            self.sync(span)?;
            return self.on_cpu(op, args, span);
        };
        let out = match dest {
            Some(elem) => {
                let mut out = self.alloc(elem, n, span)?;
                out.scalar = scalar_result;
                out.count = count.clone();
                if scalar_result {
                    self.keep_scalar(&out);
                }
                bindings.push(out.binding());
                Some(out)
            }
            None => None,
        };
        if kernel.bindings.len() > bindings.len() {
            params[1] = match seq {
                Some(seq) => seq,
                None => {
                    let operands = op.operands().into_iter().zip(args.iter().cloned()).collect();
                    self.expect_failure(stmt.clone(), 0, operands)?
                }
            };
            bindings = self.with_record(bindings);
        }
        self.launch_counted(&kernel, n, count.as_ref(), &params, &bindings, span)?;
        Ok(out.map(DeviceValue::Device))
    }

    /// `partition`'s check as two element-wise checks: no length is negative, then each
    /// segment's sum is its total. A failure of either is explained by the whole check.
    fn partition_check(&mut self, stmt: &Stmt, op: &Op, args: &[DeviceValue]) -> RunResult<()> {
        let [lengths, sums, totals] = args else {
            return Err(internal_at("partition check operands", stmt.span));
        };
        let operands = op.operands().into_iter().zip(args.iter().cloned()).collect();
        let seq = self.expect_failure(stmt.clone(), 0, operands)?;
        let negative = Op::Check(Check::NonNegative { n: 0, what: String::new() });
        self.element_wise(stmt, &negative, std::slice::from_ref(lengths), None, Some(seq))?;
        let what = weft_flat::ir::LengthCheck::Equal(String::new());
        let unequal = Op::Check(Check::LengthsEqual { a: 0, b: 1, what });
        self.element_wise(stmt, &unequal, &[sums.clone(), totals.clone()], None, Some(seq))?;
        Ok(())
    }

    /// Attributes the device work from now on to `span`, for profiles.
    fn attribute_to(&self, span: TextRange) {
        self.gpu.attribute_to(span.start().into(), span.end().into());
    }

    fn all_device(&self, values: &[DeviceValue]) -> bool {
        values.iter().all(|v| matches!(v, DeviceValue::Device(_)))
    }

    /// Operands that must all be device arrays.
    fn devices(&self, values: &[DeviceValue], span: TextRange) -> RunResult<Vec<DeviceVec>> {
        values.iter().map(|v| self.device(v, span)).collect()
    }

    fn count(&mut self, op: &Op, args: &[DeviceValue], result: Option<&DeviceValue>) {
        let operands = Counters::passed_operands(op, args.iter().map(DeviceValue::vector_len));
        self.report.counters.record_op(op, operands.chain(result.and_then(DeviceValue::vector_len)));
    }
}

/// The extent of a launch over `elements`, the operands it reads element by element: the
/// longest bound, and the device count of one whose exact length is still on the device
/// (operands read element by element are equally long, so any one's count is the length).
/// `None` when no operand is a vector.
fn extent<'v>(elements: impl Iterator<Item = &'v DeviceValue>) -> (Option<usize>, Option<Arc<DeviceCount>>) {
    let mut n = None;
    let mut count = None;
    for value in elements {
        if let DeviceValue::Device(v) = value
            && !v.scalar
        {
            n = Some(n.map_or(v.len, |m: usize| m.max(v.len)));
            if count.is_none() {
                count = v.unsettled().cloned();
            }
        }
    }
    (n, count)
}

fn stmt_name(stmt: &Stmt) -> String {
    match &stmt.kind {
        StmtKind::Op { op, .. } => op.name(),
        StmtKind::Kernel(kernel) => format!("kernel {}", kernel.name),
        _ => "an element loop".into(),
    }
}

/// Whether the op runs over vectors whose exact lengths are still on the device
/// (`DeviceVec::count`): the others have their operands settled first.
fn takes_device_counts(op: &Op) -> bool {
    is_element_wise(op)
        || matches!(
            op,
            Op::Scatter { .. }
                | Op::Pack { .. }
                | Op::Concat(_)
                | Op::Length(_)
                | Op::Scan { .. }
                | Op::SegIds { .. }
                | Op::SegIota { .. }
                | Op::SegReduce { .. }
                | Op::SegScan { .. }
        )
}

/// Whether the op is element-wise: one generated kernel over its operands.
fn is_element_wise(op: &Op) -> bool {
    match op {
        _ if op.is_element_wise() => true,
        Op::Gather { .. } | Op::GatherEither { .. } => true,
        Op::Check(check) => !matches!(check, Check::Permutation { .. } | Check::PartitionLengths { .. }),
        _ => false,
    }
}

impl Machine for GpuMachine<'_, '_> {
    type Value = DeviceValue;

    fn op(
        &mut self,
        host: &mut dyn Host,
        op: &Op,
        dest: Option<Scalar>,
        frame: &mut Frame<DeviceValue>,
        dying: &[VarId],
        span: TextRange,
    ) -> RunResult<Option<DeviceValue>> {
        self.attribute_to(span);
        let mut args = self.frame_values(frame, &op.operands(), takes_device_counts(op), span)?;
        let on_device = args.iter().any(|a| matches!(a, DeviceValue::Device(_)));
        let stmt = Stmt { kind: StmtKind::Op { dest: None, op: op.clone() }, span };
        let result = match op {
            Op::Load { path, csv, ty, field } => match self.loads.field(host, path, *csv, ty, *field) {
                Ok(value) => self.upload(value, span).map(Some),
                Err(e) => {
                    self.sync(span)?;
                    Err(Diagnostic::new(e.code, span, e.message))
                }
            },
            Op::Length(_) => match &args[0] {
                // A count still on the device is a device scalar, read with the next read-back.
                DeviceValue::Device(v) if let Some(count) = v.unsettled() => {
                    let length = DeviceVec {
                        buffer: count.buffer.clone(),
                        len: 1,
                        elem: Scalar::I32,
                        scalar: true,
                        count: None,
                    };
                    self.keep_scalar(&length);
                    // Settled or no longer held, a length needs no entry.
                    self.device_lengths.retain(|(c, _)| c.upgrade().is_some_and(|c| c.exact.get().is_none()));
                    self.device_lengths.push((Arc::downgrade(count), v.len));
                    Ok(Some(DeviceValue::Device(length)))
                }
                DeviceValue::Device(v) => Ok(Some(DeviceValue::Host(ScalarValue::I32(v.len as i32)))),
                DeviceValue::Host(_) => Err(internal_at("the length of a scalar", span)),
            },
            Op::WriteAt { dst, .. } => {
                // A destination read here for the last time leaves the frame, so that where
                // nobody else holds its buffer the values are written into it in place.
                if handed_over(&op.operands(), dying, *dst) {
                    take(frame, *dst, span)?;
                }
                let whole = std::mem::replace(&mut args[0], DeviceValue::Host(ScalarValue::I32(0)));
                self.write_at(whole, &args[1], &args[2], span).map(|v| Some(DeviceValue::Device(v)))
            }
            _ if !on_device && !matches!(op, Op::Replicate { .. } | Op::Iota { .. }) => {
                // Host scalars alone: the host computes. Its error counts only once the device
                // has said that nothing before failed, so that errors come in program order.
                let result = self.on_cpu(op, &args, span);
                if result.is_err() {
                    self.sync(span)?;
                }
                result
            }
            _ if is_element_wise(op) => self.element_wise(&stmt, op, &args, dest, None),
            Op::Check(Check::PartitionLengths { .. }) => {
                self.partition_check(&stmt, op, &args).map(|()| None)
            }
            Op::SegSortPerm { keys, .. } if self.all_device(&args) => {
                let vecs = self.devices(&args, span)?;
                let (keys, segs) = vecs.split_at(keys.len());
                self.sort_positions(keys, &segs[0], &segs[1], span).map(|v| Some(DeviceValue::Device(v)))
            }
            Op::Check(Check::Permutation { .. })
                if self.all_device(&args) && args[0].elem() == Scalar::I32 =>
            {
                self.permutation_check(&stmt, &args).map(|()| None)
            }
            Op::SegSortPerm { .. } | Op::Check(_) => {
                self.note_on_cpu(op);
                self.sync(span)?;
                self.on_cpu(op, &args, span)
            }
            _ => self.primitive(op, &args, span),
        }?;
        // Values the host read back stay read: later ops and conditions use the host copy.
        self.count(op, &args, result.as_ref());
        Ok(result)
    }

    fn element_loop(
        &mut self,
        f: &Function,
        stmt: &Stmt,
        frame: &mut Frame<DeviceValue>,
    ) -> RunResult<Vec<DeviceValue>> {
        self.attribute_to(stmt.span);
        self.run_element_loop(f, stmt, frame)
    }

    fn kernel(&mut self, f: &Function, stmt: &Stmt, frame: &mut Frame<DeviceValue>) -> RunResult<bool> {
        self.run_kernel(f, stmt, frame)
    }

    fn open_guesses(&mut self, args: &[DeviceValue], depth: usize) -> bool {
        self.open_region(args, depth)
    }

    fn guesses_held(&mut self, returned: bool, span: TextRange) -> RunResult<bool> {
        self.close_region(returned, span)
    }

    fn call_depth(&mut self, depth: usize) {
        let now = self.gpu.launches_and_read_backs();
        let (launches, read_backs) = (now.0 - self.depth_mark.0, now.1 - self.depth_mark.1);
        let levels = &mut self.report.levels;
        if levels.len() <= self.depth.max(depth) {
            levels.resize(self.depth.max(depth) + 1, Level::default());
        }
        levels[self.depth].launches += launches;
        levels[self.depth].read_backs += read_backs;
        if depth > self.depth {
            levels[depth].calls += 1;
        }
        self.depth = depth;
        self.depth_mark = now;
    }

    fn truth(&mut self, value: &DeviceValue, span: TextRange) -> RunResult<bool> {
        self.attribute_to(span);
        match self.host_scalar(value, span)? {
            ScalarValue::Bool(b) => Ok(b),
            _ => Err(internal_at("a condition that is not a bool", span)),
        }
    }

    fn to_host(&mut self, values: Vec<DeviceValue>, span: TextRange) -> RunResult<Vec<cpu::FlatValue>> {
        self.attribute_to(span);
        values.iter().map(|v| self.host_value(v, span)).collect()
    }

    fn settle(&mut self, span: TextRange) -> RunResult<()> {
        if self.pending.is_empty() { Ok(()) } else { self.sync(span) }
    }

    /// A call whose vector arguments hold fewer elements than the crossover runs on the CPU
    /// executor, the whole of its recursion: its arguments are read back (one read-back each),
    /// and its results uploaded. Only the arguments' sizes decide, at the call.
    fn call_elsewhere(
        &mut self,
        host: &mut dyn Host,
        program: &Program,
        func: FuncId,
        args: &[DeviceValue],
        depth: usize,
        span: TextRange,
    ) -> RunResult<Option<Vec<DeviceValue>>> {
        let crossover = self.gpu.cpu_crossover();
        // A size still on the device counts as its bound.
        let elements: u64 = args.iter().map(|a| a.elements() as u64).sum();
        if crossover == 0 || elements >= crossover {
            return Ok(None);
        }
        // A launch before the call that failed reports first, as on the device.
        self.settle(span)?;
        self.attribute_to(span);
        let values = args.iter().map(|a| self.host_value(a, span)).collect::<RunResult<Vec<_>>>()?;
        let config = cpu::Config { call_depth: depth, ..cpu::Config::default() };
        let results = cpu::call_with(program, func, values, host, &mut self.report.counters, config)?;
        let name = program.functions.get(func as usize).map_or_else(String::new, |f| f.name.clone());
        let entry = self.report.cpu_calls.entry(name).or_insert((0, 0));
        entry.0 += 1;
        entry.1 += elements;
        results.into_iter().map(|r| self.upload(r, span)).collect::<RunResult<Vec<_>>>().map(Some)
    }

    fn counters(&mut self) -> &mut Counters {
        &mut self.report.counters
    }
}
