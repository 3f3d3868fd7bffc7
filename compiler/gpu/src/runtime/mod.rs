//! The wgpu runtime: one device per process or session, with its queue, a pipeline cache
//! keyed by kernel source, a buffer pool, batched dispatches and counted read-backs.
//!
//! Work is recorded, not submitted: `dispatch`, `copy` and `upload` append to the current
//! batch, and the batch is encoded and submitted in one go when the host must see a value
//! (`read`) or the batch grows long. Every read also fetches an error record (`wgsl`'s calling
//! convention: the first failing op's sequence number; one per run), so that no value is
//! trusted before the host knows that nothing failed.

mod adapters;

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use weft_flat::wgsl::{Access, Kernel, WORKGROUP};

pub use self::adapters::{AdapterSummary, adapter_summaries};

/// No op has failed: the error record's resting value.
pub const NO_ERROR: u32 = u32::MAX;
/// Dispatches a batch may hold before it is submitted without a read.
const BATCH_LIMIT: usize = 256;

/// What the runtime did, for `--profile`, tests and benchmarks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Kernel launches (dispatches), and those of them whose grid the device wrote
    /// (indirect dispatches).
    pub launches: u64,
    pub indirect_launches: u64,
    /// Queue submissions.
    pub submissions: u64,
    /// Reads of device memory by the host, and their bytes.
    pub read_backs: u64,
    pub bytes_read_back: u64,
    /// Host data written to the device.
    pub uploads: u64,
    pub bytes_uploaded: u64,
    /// Bytes bound to launches: what the kernels may read and write.
    pub bytes_bound: u64,
    /// Bytes copied between device buffers by copy commands (no launch).
    pub bytes_copied: u64,
    /// Buffers created (not taken from the pool).
    pub buffers_created: u64,
    /// Pipelines built (not found in the cache), and the time spent building them.
    pub pipelines_built: u64,
    pub pipeline_time: Duration,
    /// Launches per kernel name.
    pub per_kernel: std::collections::BTreeMap<String, u64>,
}

/// How `--profile` times kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfileClock {
    /// Timestamp queries around each launch's compute pass: device time.
    Timestamps,
    /// Wall-clock time around a submission of each launch alone, and the wait for it: what
    /// an adapter without timestamp queries allows; it includes the submission's overhead.
    WallClock,
}

/// One launch's time, and the source range (`attribute_to`) it ran for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelTiming {
    pub kernel: String,
    pub source: (u32, u32),
    pub time: Duration,
}

/// The kernel times of a profiled stretch of work, and its traffic by source range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    pub clock: ProfileClock,
    pub timings: Vec<KernelTiming>,
    pub sources: std::collections::BTreeMap<(u32, u32), Traffic>,
}

/// What the work attributed to one source range moved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    pub launches: u64,
    pub bytes_bound: u64,
    pub read_backs: u64,
    pub bytes_read_back: u64,
}

/// Timestamps written by a submitted batch, to collect once it has run.
struct PendingTimes {
    staging: wgpu::Buffer,
    launches: Vec<(String, (u32, u32))>,
}

/// A device buffer that returns to the pool when the last value holding it is dropped.
pub struct DeviceBuffer {
    buffer: Option<wgpu::Buffer>,
    size: u64,
    pool: Arc<Mutex<Pool>>,
}

impl DeviceBuffer {
    pub fn raw(&self) -> &wgpu::Buffer {
        self.buffer.as_ref().expect("a live buffer has its wgpu buffer")
    }

    pub fn size(&self) -> u64 {
        self.size
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        if let Some(buffer) = self.buffer.take()
            && let Ok(mut pool) = self.pool.lock()
        {
            pool.give_back(self.size, buffer);
        }
    }
}

impl std::fmt::Debug for DeviceBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceBuffer({} bytes)", self.size)
    }
}

/// Free buffers by size (a power of two), kept for reuse up to `POOL_LIMIT` bytes, and the
/// bytes of every buffer the runtime holds, in use or free.
#[derive(Default)]
struct Pool {
    free: HashMap<u64, Vec<wgpu::Buffer>>,
    bytes: u64,
    live: u64,
}

const POOL_LIMIT: u64 = 1 << 30;

impl Pool {
    fn give_back(&mut self, size: u64, buffer: wgpu::Buffer) {
        if self.bytes + size <= POOL_LIMIT {
            self.bytes += size;
            self.free.entry(size).or_default().push(buffer);
        } else {
            self.live -= size;
        }
    }

    fn take(&mut self, size: u64) -> Option<wgpu::Buffer> {
        let buffer = self.free.get_mut(&size)?.pop()?;
        self.bytes -= size;
        Some(buffer)
    }

    /// Destroys the free buffers, to make room for a new one.
    fn release_free(&mut self) {
        self.free.clear();
        self.live -= self.bytes;
        self.bytes = 0;
    }
}

/// Where a launch's workgroups come from.
#[derive(Clone, Copy)]
pub enum Grid<'a> {
    /// `groups` workgroups, which the host lays out in rows.
    Host(u64),
    /// The grid in a count record that a kernel wrote on the device
    /// (`wgsl::prims::count_record`): one thread per counted element, at most `bound`
    /// workgroups.
    Device { bound: u64, record: &'a Arc<DeviceBuffer> },
}

/// A kernel ready to launch.
struct Pipeline {
    name: String,
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
    /// The fewest bytes the kernel reads through each binding (`wgsl::min_binding_bytes`),
    /// one entry per binding of its layout.
    min_bytes: Vec<u64>,
}

/// One bound buffer range: the whole buffer from 0, `bytes` long.
#[derive(Clone)]
pub struct Binding {
    pub buffer: Arc<DeviceBuffer>,
    pub bytes: u64,
}

enum Command {
    /// `params` is the byte offset of its `words` parameter words in the batch's buffer.
    Dispatch {
        pipeline: Arc<Pipeline>,
        bindings: Vec<Binding>,
        params: usize,
        words: usize,
        groups: (u32, u32),
        /// A count record whose grid replaces `groups` (`Grid::Device`): an indirect dispatch.
        record: Option<Arc<DeviceBuffer>>,
        /// Parameter words the device fills just before the launch, each from the first word
        /// of a buffer: counts the host does not know (`dispatch_counted`).
        counts: Vec<(usize, Arc<DeviceBuffer>)>,
        /// What the launch is attributed to, when profiling (`attribute_to`).
        source: (u32, u32),
    },
    /// Zeros written over a buffer's first `bytes` (a fill command, not a launch).
    Clear {
        buffer: Arc<DeviceBuffer>,
        bytes: u64,
    },
    Copy {
        from: Arc<DeviceBuffer>,
        from_offset: u64,
        to: Arc<DeviceBuffer>,
        to_offset: u64,
        bytes: u64,
    },
}

#[derive(Default)]
struct Batch {
    commands: Vec<Command>,
    /// Every dispatch's parameters, each at a multiple of the storage offset alignment.
    params: Vec<u8>,
}

/// `Gpu::default_cpu_crossover` on a CPU adapter.
pub const CPU_ADAPTER_CROSSOVER: u64 = 1 << 20;
/// `Gpu::default_cpu_crossover` on a GPU: the default piece size (`flatten::DEFAULT_PIECE_SIZE`),
/// so that a piecewise recursion, called a piece at a time, stays on the device.
pub const GPU_CROSSOVER: u64 = weft_flat::flatten::DEFAULT_PIECE_SIZE as u64;

/// The device and everything kept on it between runs.
pub struct Gpu {
    pub info: wgpu::AdapterInfo,
    pub limits: wgpu::Limits,
    pub features: wgpu::Features,
    device: wgpu::Device,
    queue: wgpu::Queue,
    pipelines: Mutex<HashMap<u64, Arc<Pipeline>>>,
    pool: Arc<Mutex<Pool>>,
    batch: Mutex<Batch>,
    stats: Mutex<Stats>,
    /// The most workgroups a launch puts in one grid row: the adapter's limit, or less for
    /// tests of the 2-D path.
    grid_width: AtomicU32,
    /// `limit_memory`'s cap, in bytes.
    memory_budget: AtomicU64,
    /// `set_cpu_crossover`'s size.
    cpu_crossover: AtomicU64,
    /// The profile being recorded, if any, and the source range launches are attributed to
    /// (start in the high half, end in the low).
    profile: Mutex<Option<Profile>>,
    source: AtomicU64,
    /// Error records a finished run left clean (`return_record`), for the next runs to take
    /// instead of writing a new one: a cell that only reads resident values then uploads
    /// nothing at all.
    spare_records: Mutex<Vec<Arc<DeviceBuffer>>>,
    /// How long creating the device took: reported apart from compile times.
    pub device_time: Duration,
    /// A validation error the device reported outside any error scope: kept here, not left
    /// to wgpu's default handler, which panics (`take_device_error`).
    device_error: Arc<Mutex<Option<String>>>,
    /// Set by the driver when the device is lost (a reset, a removed GPU): the device can run
    /// nothing more, and its owner replaces it (`weft_session::DeviceSlot`).
    lost: Arc<AtomicBool>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Why there is no GPU, or why the device refused work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuError(pub String);

impl GpuError {
    /// A kernel that naga or the device rejected: a compiler bug, not the program's fault.
    pub fn internal(what: impl std::fmt::Display) -> GpuError {
        GpuError(format!("internal error: {what}"))
    }

    pub fn is_internal(&self) -> bool {
        self.0.starts_with("internal error: ")
    }
}

impl std::fmt::Display for GpuError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

type GpuResult<T> = Result<T, GpuError>;

impl Gpu {
    /// The best adapter, or the first whose name contains `name` (case-insensitive), as
    /// `--device` or `WEFT_ADAPTER` ask. Backends follow `WGPU_BACKEND` when it is set.
    pub fn new(name: Option<&str>) -> GpuResult<Gpu> {
        let start = Instant::now();
        let instance = adapters::instance();
        let adapter = adapters::choose(&instance, name)?;
        let want =
            wgpu::Features::SHADER_F64 | wgpu::Features::SHADER_INT64 | wgpu::Features::TIMESTAMP_QUERY;
        let features = adapter.features() & want;
        // The adapter's own limits: WebGPU's defaults allow only 8 storage buffers per stage.
        let limits = adapter.limits();
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("weft"),
            required_features: features,
            required_limits: limits.clone(),
            ..Default::default()
        }))
        .map_err(|e| GpuError(format!("the adapter refused a device: {e}")))?;
        let lost = Arc::new(AtomicBool::new(false));
        let flag = lost.clone();
        device.set_device_lost_callback(move |_, _| flag.store(true, Ordering::Relaxed));
        let device_error = Arc::new(Mutex::new(None));
        let slot = device_error.clone();
        device.on_uncaptured_error(Arc::new(move |error: wgpu::Error| {
            lock(&slot).get_or_insert_with(|| error.to_string());
        }));
        Ok(Gpu {
            info: adapter.get_info(),
            limits,
            features,
            device,
            queue,
            pipelines: Mutex::new(HashMap::new()),
            pool: Arc::new(Mutex::new(Pool::default())),
            batch: Mutex::new(Batch::default()),
            stats: Mutex::new(Stats::default()),
            grid_width: AtomicU32::new(u32::MAX),
            memory_budget: AtomicU64::new(u64::MAX),
            cpu_crossover: AtomicU64::new(0),
            profile: Mutex::new(None),
            source: AtomicU64::new(0),
            spare_records: Mutex::new(Vec::new()),
            device_time: start.elapsed(),
            device_error,
            lost,
        })
    }

    /// Whether the adapter computes on the CPU (lavapipe, llvmpipe, WARP).
    /// Whether the driver reported the device lost.
    pub fn is_lost(&self) -> bool {
        self.lost.load(Ordering::Relaxed)
    }

    /// Gives the device up now, as a loss would (wgpu's `Device::destroy`): how tests check
    /// that an owner recovers.
    pub fn destroy(&self) {
        self.device.destroy();
        let _ = self.device.poll(wgpu::PollType::Poll);
    }

    pub fn is_cpu(&self) -> bool {
        self.info.device_type == wgpu::DeviceType::Cpu
    }

    pub fn describe(&self) -> String {
        format!("{} ({:?}, {:?})", self.info.name, self.info.backend, self.info.device_type)
    }

    pub fn stats(&self) -> Stats {
        lock(&self.stats).clone()
    }

    /// Launches and read-backs so far: `stats` without copying the per-kernel counts.
    pub fn launches_and_read_backs(&self) -> (u64, u64) {
        let stats = lock(&self.stats);
        (stats.launches, stats.read_backs)
    }

    pub fn reset_stats(&self) {
        *lock(&self.stats) = Stats::default();
    }

    /// The largest buffer one binding may cover.
    pub fn max_binding(&self) -> u64 {
        self.limits.max_storage_buffer_binding_size.min(self.limits.max_buffer_size)
    }

    /// A buffer of at least `bytes` bytes, from the pool when one is free. A buffer larger
    /// than one binding may cover, or one the device has no memory for (or that would pass
    /// `limit_memory`'s budget), is an error that says so; the free buffers of the pool are
    /// given up first, to make room.
    pub fn alloc(&self, bytes: u64) -> GpuResult<Arc<DeviceBuffer>> {
        if bytes > self.max_binding() {
            return Err(GpuError(format!(
                "{} is larger than this adapter's storage binding limit of {}",
                byte_size(bytes),
                byte_size(self.max_binding())
            )));
        }
        let size = bytes.max(256).next_power_of_two().min(self.max_binding().max(256));
        let size = size.max(bytes.next_multiple_of(4));
        match self.try_alloc(size, false) {
            Ok(buffer) => Ok(buffer),
            // Buffers the program dropped stay out of the pool while the unsubmitted batch
            // uses them: submitting returns them, and then the pool's free buffers go too.
            Err(_) => {
                self.submit()?;
                self.try_alloc(size, true)
            }
        }
    }

    /// A buffer of `size` bytes from the pool, or a new one if it fits; `release` gives up
    /// the pool's free buffers first when it does not.
    fn try_alloc(&self, size: u64, release: bool) -> GpuResult<Arc<DeviceBuffer>> {
        let mut pool = lock(&self.pool);
        if let Some(buffer) = pool.take(size) {
            return Ok(Arc::new(DeviceBuffer { buffer: Some(buffer), size, pool: self.pool.clone() }));
        }
        let budget = self.memory_budget.load(Ordering::Relaxed);
        if release && pool.live + size > budget {
            pool.release_free();
        }
        if pool.live + size > budget {
            return Err(GpuError(format!(
                "out of device memory: {} more does not fit, with {} in use of the {} allowed",
                byte_size(size),
                byte_size(pool.live),
                byte_size(budget)
            )));
        }
        if release {
            pool.release_free();
        }
        let buffer = self.create_buffer(size).map_err(|e| {
            GpuError(format!(
                "out of device memory: {} more does not fit, with {} in use ({e})",
                byte_size(size),
                byte_size(pool.live)
            ))
        })?;
        pool.live += size;
        lock(&self.stats).buffers_created += 1;
        Ok(Arc::new(DeviceBuffer { buffer: Some(buffer), size, pool: self.pool.clone() }))
    }

    /// A new buffer, or the device's out-of-memory error: caught in an error scope, which
    /// would otherwise reach wgpu's handler of uncaptured errors, and that panics.
    fn create_buffer(&self, size: u64) -> Result<wgpu::Buffer, wgpu::Error> {
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size,
            // Any buffer may hold a count record that an indirect dispatch reads.
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST
                | wgpu::BufferUsages::INDIRECT,
            mapped_at_creation: false,
        });
        match pollster::block_on(scope.pop()) {
            Some(error) => Err(error),
            None => Ok(buffer),
        }
    }

    /// Bytes of the buffers the runtime holds, in use or free in the pool.
    pub fn memory_in_use(&self) -> u64 {
        lock(&self.pool).live
    }

    /// Caps the bytes of buffers the runtime holds at once, as if the device had only that
    /// much memory: for tests of running out.
    pub fn limit_memory(&self, bytes: u64) {
        self.memory_budget.store(bytes, Ordering::Relaxed);
    }

    /// Calls of functions whose vector arguments hold fewer than `elements` elements in all run
    /// on the CPU executor (`weft_gpu`'s `call_elsewhere`): below that size a flattened
    /// recursion costs more in launch and read-back latency than the CPU spends on the work.
    /// 0, the default, runs everything on the device.
    pub fn set_cpu_crossover(&self, elements: u64) {
        self.cpu_crossover.store(elements, Ordering::Relaxed);
    }

    pub fn cpu_crossover(&self) -> u64 {
        self.cpu_crossover.load(Ordering::Relaxed)
    }

    /// The crossover a session sets unless told otherwise (`docs/performance.md`, issue 30).
    /// On a CPU adapter (lavapipe), measured: quicksort on the GPU executor took longer than on
    /// the CPU executor at every size timed, up to 1M elements (the device shares the CPU's
    /// cores and adds latency), hence 2^20. On a GPU, estimated: a level of a flattened
    /// recursion costs about 40 launches of a few microseconds and a read-back of tens of
    /// microseconds, a quarter of a millisecond, which the CPU executor spends on about 16,000
    /// elements at 13 passes per level; capped at the piece size (`GPU_CROSSOVER`).
    pub fn default_cpu_crossover(&self) -> u64 {
        if self.is_cpu() { CPU_ADAPTER_CROSSOVER } else { GPU_CROSSOVER }
    }

    /// A new buffer holding `data`. The write lands before the next submitted batch.
    pub fn upload(&self, data: &[u8]) -> GpuResult<Arc<DeviceBuffer>> {
        let buffer = self.alloc(data.len() as u64)?;
        if !data.is_empty() {
            let padded;
            let bytes = if data.len().is_multiple_of(4) {
                data
            } else {
                padded = [data, &[0; 4][..4 - data.len() % 4]].concat();
                &padded
            };
            // Pending work must not see the new contents early: it cannot, since it does not
            // hold this buffer (the pool only hands out buffers no one holds).
            self.queue.write_buffer(buffer.raw(), 0, bytes);
        }
        let mut stats = lock(&self.stats);
        stats.uploads += 1;
        stats.bytes_uploaded += data.len() as u64;
        Ok(buffer)
    }

    /// `value` in every `u32` of a buffer of `count` words, by a fill kernel.
    pub fn filled(&self, value: u32, count: u64) -> GpuResult<Arc<DeviceBuffer>> {
        let buffer = self.alloc(count * 4)?;
        if count > 0 {
            let kernel = weft_flat::wgsl::prims::fill(weft_flat::wgsl::Operand::Param(
                weft_core::types::Scalar::I32,
                0,
            ));
            self.dispatch(
                &kernel,
                count,
                &[0, 0, 0, 0, value],
                &[Binding { buffer: buffer.clone(), bytes: count * 4 }],
            )?;
        }
        Ok(buffer)
    }

    /// The kernel's pipeline, built and validated on first use.
    fn pipeline(&self, kernel: &Kernel) -> GpuResult<Arc<Pipeline>> {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        kernel.source.hash(&mut hasher);
        let key = hasher.finish();
        if let Some(p) = lock(&self.pipelines).get(&key) {
            return Ok(p.clone());
        }
        for (ty, feature, name) in [
            ("f64", wgpu::Features::SHADER_F64, "SHADER_F64"),
            ("i64", wgpu::Features::SHADER_INT64, "SHADER_INT64"),
        ] {
            if kernel.source.contains(ty) && !self.features.contains(feature) {
                return Err(GpuError(format!(
                    "`{ty}` needs the adapter feature {name}, which {} does not have; run with --backend cpu",
                    self.info.name
                )));
            }
        }
        let start = Instant::now();
        let module = kernel.validate().map_err(GpuError::internal)?;
        let mut min_bytes = weft_flat::wgsl::min_binding_bytes(&module);
        min_bytes.resize(kernel.bindings.len() + 1, 0);
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let shader = self.device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(&kernel.name),
            source: wgpu::ShaderSource::Naga(std::borrow::Cow::Owned(module)),
        });
        let entries: Vec<wgpu::BindGroupLayoutEntry> = std::iter::once(Access::Read)
            .chain(kernel.bindings.iter().copied())
            .enumerate()
            .map(|(k, access)| wgpu::BindGroupLayoutEntry {
                binding: k as u32,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Storage { read_only: access == Access::Read },
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            })
            .collect();
        let layout = self
            .device
            .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: None, entries: &entries });
        let pipeline_layout = self.device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: None,
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let pipeline = self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(&kernel.name),
            layout: Some(&pipeline_layout),
            module: &shader,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        });
        if let Some(error) = pollster::block_on(scope.pop()) {
            return Err(GpuError::internal(format!("the device rejected kernel `{}`: {error}", kernel.name)));
        }
        let built = Arc::new(Pipeline { name: kernel.name.clone(), pipeline, layout, min_bytes });
        lock(&self.pipelines).insert(key, built.clone());
        let mut stats = lock(&self.stats);
        stats.pipelines_built += 1;
        stats.pipeline_time += start.elapsed();
        Ok(built)
    }

    /// Builds the kernel's pipeline now, so that a later launch finds it ready.
    pub fn prepare(&self, kernel: &Kernel) -> GpuResult<()> {
        self.pipeline(kernel).map(|_| ())
    }

    /// Launches `kernel` over `threads` threads (rounded up to workgroups of `WORKGROUP`) or,
    /// for block kernels, `groups` workgroups: see `dispatch_groups`. `params` fill `p`
    /// (`p[0]` is set to `threads`).
    pub fn dispatch(
        &self,
        kernel: &Kernel,
        threads: u64,
        params: &[u32],
        bindings: &[Binding],
    ) -> GpuResult<()> {
        let groups = threads.div_ceil(u64::from(WORKGROUP));
        self.dispatch_groups(kernel, groups, threads, params, bindings)
    }

    /// Launches `groups` workgroups as a 2-D grid (at most 65,535 per dimension); `p[0]` is
    /// `n`. Bindings `1..` are `bindings` (the error record last, for a kernel that can fail).
    pub fn dispatch_groups(
        &self,
        kernel: &Kernel,
        groups: u64,
        n: u64,
        params: &[u32],
        bindings: &[Binding],
    ) -> GpuResult<()> {
        self.dispatch_counted(kernel, Grid::Host(groups), n, &[], params, bindings)
    }

    /// `dispatch_groups` over a bound the host knows (`n`), with parameter words `counts`
    /// read on the device: word `k` of a pair `(k, buffer)` is the first word of `buffer`,
    /// copied in just before the launch. With `k = 0` that is the exact element count, which
    /// the kernel reads as it reads a host count, and no read-back waits for it; the threads
    /// past it return at once. A `Grid::Device` launch takes its workgroups from the count's
    /// record (an indirect dispatch), so that only the counted elements' workgroups run.
    pub fn dispatch_counted(
        &self,
        kernel: &Kernel,
        grid: Grid<'_>,
        n: u64,
        counts: &[(usize, &Arc<DeviceBuffer>)],
        params: &[u32],
        bindings: &[Binding],
    ) -> GpuResult<()> {
        let (groups, record) = match grid {
            Grid::Host(groups) => (groups, None),
            Grid::Device { bound, record } => (bound, Some(record.clone())),
        };
        if groups == 0 {
            return Ok(());
        }
        let pipeline = self.pipeline(kernel)?;
        check_bindings(&pipeline, bindings)?;
        let max = u64::from(self.limits.max_compute_workgroups_per_dimension.max(1));
        let x = groups.min(self.grid_width());
        let y = groups.div_ceil(x);
        if y > max {
            return Err(GpuError(format!(
                "a launch of {groups} workgroups is larger than this adapter's grid of {max} x {max}"
            )));
        }
        let mut words = params.to_vec();
        let filled = counts.iter().map(|&(k, _)| k + 1).max().unwrap_or(0);
        words.resize(words.len().max(filled).max(1), 0);
        words[0] = u32::try_from(n).map_err(|_| GpuError(format!("a launch over {n} elements")))?;
        let align = u64::from(self.limits.min_storage_buffer_offset_alignment.max(4)) as usize;
        let mut stats = lock(&self.stats);
        stats.launches += 1;
        stats.indirect_launches += u64::from(record.is_some());
        stats.bytes_bound += bindings.iter().map(|b| b.bytes).sum::<u64>();
        *stats.per_kernel.entry(pipeline.name.clone()).or_insert(0) += 1;
        drop(stats);
        let clock = self.count_traffic(|t| {
            t.launches += 1;
            t.bytes_bound += bindings.iter().map(|b| b.bytes).sum::<u64>();
        });
        if clock == Some(ProfileClock::WallClock) {
            // The launch goes alone, after everything before it has finished.
            self.wait()?;
        }
        let source = self.current_source();
        let name = pipeline.name.clone();
        let full = {
            let mut batch = lock(&self.batch);
            let offset = batch.params.len().next_multiple_of(align);
            batch.params.resize(offset, 0);
            batch.params.extend(words.iter().flat_map(|w| w.to_le_bytes()));
            batch.commands.push(Command::Dispatch {
                pipeline,
                bindings: bindings.to_vec(),
                params: offset,
                words: words.len(),
                groups: (x as u32, y as u32),
                record,
                counts: counts.iter().map(|&(k, buffer)| (k, buffer.clone())).collect(),
                source,
            });
            batch.commands.len() >= BATCH_LIMIT
        };
        if clock == Some(ProfileClock::WallClock) {
            let start = Instant::now();
            self.wait()?;
            let timing = KernelTiming { kernel: name, source, time: start.elapsed() };
            if let Some(profile) = lock(&self.profile).as_mut() {
                profile.timings.push(timing);
            }
            return Ok(());
        }
        if full { self.submit() } else { Ok(()) }
    }

    /// Starts recording kernel times (`finish_profile` gives them): by timestamp queries where
    /// the adapter has them, unless `clock` says otherwise.
    pub fn start_profile(&self, clock: Option<ProfileClock>) -> GpuResult<()> {
        self.wait()?;
        let timestamps = self.features.contains(wgpu::Features::TIMESTAMP_QUERY);
        let clock = match clock {
            Some(ProfileClock::Timestamps) if !timestamps => {
                return Err(GpuError("this adapter has no timestamp queries".into()));
            }
            Some(clock) => clock,
            None if timestamps => ProfileClock::Timestamps,
            None => ProfileClock::WallClock,
        };
        *lock(&self.profile) = Some(Profile { clock, timings: Vec::new(), sources: Default::default() });
        Ok(())
    }

    /// Waits for the recorded work and gives its kernel times; recording stops.
    pub fn finish_profile(&self) -> GpuResult<Option<Profile>> {
        let waited = self.wait();
        let profile = lock(&self.profile).take();
        waited.map(|()| profile)
    }

    /// When profiling, counts traffic for the current source range; gives the clock.
    fn count_traffic(&self, count: impl FnOnce(&mut Traffic)) -> Option<ProfileClock> {
        let mut profile = lock(&self.profile);
        let profile = profile.as_mut()?;
        count(profile.sources.entry(self.current_source()).or_default());
        Some(profile.clock)
    }

    /// The source range `attribute_to` set last.
    fn current_source(&self) -> (u32, u32) {
        let packed = self.source.load(Ordering::Relaxed);
        ((packed >> 32) as u32, packed as u32)
    }

    /// Attributes the launches and read-backs from now on to the source range `start..end`,
    /// for profiles.
    pub fn attribute_to(&self, start: u32, end: u32) {
        self.source.store(u64::from(start) << 32 | u64::from(end), Ordering::Relaxed);
    }

    /// Copies `bytes` bytes between device buffers, in order with the launches.
    pub fn copy(
        &self,
        from: &Arc<DeviceBuffer>,
        from_offset: u64,
        to: &Arc<DeviceBuffer>,
        to_offset: u64,
        bytes: u64,
    ) {
        if bytes == 0 {
            return;
        }
        lock(&self.stats).bytes_copied += bytes;
        lock(&self.batch).commands.push(Command::Copy {
            from: from.clone(),
            from_offset,
            to: to.clone(),
            to_offset,
            bytes,
        });
    }

    /// Zeros over the first `bytes` of `buffer` (a multiple of 4), recorded in the batch: the
    /// device's fill command, where a kernel would cost a launch.
    pub fn clear(&self, buffer: &Arc<DeviceBuffer>, bytes: u64) {
        if bytes == 0 {
            return;
        }
        lock(&self.batch).commands.push(Command::Clear { buffer: buffer.clone(), bytes });
    }

    /// Encodes and submits the recorded work.
    pub fn submit(&self) -> GpuResult<()> {
        let mut batch = lock(&self.batch);
        let times = self.submit_locked(&mut batch);
        drop(batch);
        let times = times?;
        // Waiting for the timestamps happens outside the batch lock, so that other threads
        // can record meanwhile.
        self.collect_times(times)
    }

    /// Submits `batch` while its lock is held: threads sharing the device record into one
    /// batch, so a thread's later submission (a read) must not overtake the batch that holds
    /// its earlier work.
    /// Drops the recorded, unsubmitted launches (an interrupted run's): none of them runs,
    /// and their buffers go back to the pool.
    pub fn discard_batch(&self) -> usize {
        let batch = std::mem::take(&mut *lock(&self.batch));
        batch.commands.len()
    }

    fn submit_locked(&self, batch: &mut Batch) -> GpuResult<Option<PendingTimes>> {
        if batch.commands.is_empty() {
            return Ok(None);
        }
        let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
        let batch = std::mem::take(batch);
        let times = self.encode(&batch, &mut encoder);
        self.queue.submit([encoder.finish()]);
        self.take_device_error(&batch)?;
        // Only now may the batch's buffers return to the pool: a buffer handed out earlier
        // could get another thread's `write_buffer`, which the submission would run first.
        drop(batch);
        lock(&self.stats).submissions += 1;
        Ok(times)
    }

    /// The validation error the device reported since the last call, as an internal error
    /// naming the kernels of the batch it came with. The runtime checks each launch's
    /// bindings before recording it, so this is the net under a compiler bug, never a path
    /// a valid program takes.
    fn take_device_error(&self, batch: &Batch) -> GpuResult<()> {
        let Some(error) = lock(&self.device_error).take() else { return Ok(()) };
        let mut kernels: Vec<&str> = batch
            .commands
            .iter()
            .filter_map(|c| match c {
                Command::Dispatch { pipeline, .. } => Some(pipeline.name.as_str()),
                Command::Copy { .. } | Command::Clear { .. } => None,
            })
            .collect();
        kernels.dedup();
        let error = error.split_whitespace().collect::<Vec<_>>().join(" ");
        Err(GpuError::internal(format!(
            "the device rejected a batch of launches of {}: {error}",
            if kernels.is_empty() {
                "no kernel".to_string()
            } else {
                kernels.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
            }
        )))
    }

    /// Reads a submitted batch's timestamps into the profile.
    fn collect_times(&self, times: Option<PendingTimes>) -> GpuResult<()> {
        let Some(PendingTimes { staging, launches }) = times else { return Ok(()) };
        let data = self.map_and_read(&staging, None)?;
        let period = f64::from(self.queue.get_timestamp_period());
        let stamp = |k: usize| {
            let bytes: [u8; 8] = data[k * 8..k * 8 + 8].try_into().unwrap_or_default();
            u64::from_le_bytes(bytes)
        };
        let mut profile = lock(&self.profile);
        let Some(profile) = profile.as_mut() else { return Ok(()) };
        for (k, (kernel, source)) in launches.into_iter().enumerate() {
            let ticks = stamp(2 * k + 1).saturating_sub(stamp(2 * k));
            let time = Duration::from_nanos((ticks as f64 * period) as u64);
            profile.timings.push(KernelTiming { kernel, source, time });
        }
        Ok(())
    }

    /// Maps a read-back buffer once `submission` (or all work) is done, and copies it out.
    fn map_and_read(
        &self,
        staging: &wgpu::Buffer,
        submission: Option<wgpu::SubmissionIndex>,
    ) -> GpuResult<Vec<u8>> {
        let slice = staging.slice(..);
        let (tx, rx) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        self.device
            .poll(wgpu::PollType::Wait { submission_index: submission, timeout: None })
            .map_err(|e| GpuError(format!("the device did not finish: {e}")))?;
        rx.recv()
            .map_err(|_| GpuError("a read-back was lost".into()))?
            .map_err(|e| GpuError(format!("a read-back failed: {e}")))?;
        let data =
            slice.get_mapped_range().map_err(|e| GpuError(format!("a read-back failed: {e}")))?.to_vec();
        staging.unmap();
        Ok(data)
    }

    /// Records a batch's launches and copies into `encoder`. The caller keeps the batch (and
    /// so its buffers, out of the pool) until the encoder is submitted.
    /// When profiling by timestamps, each launch's pass writes two, which are resolved into
    /// the returned staging buffer.
    fn encode(&self, batch: &Batch, encoder: &mut wgpu::CommandEncoder) -> Option<PendingTimes> {
        if batch.commands.is_empty() {
            return None;
        }
        let timed = lock(&self.profile).as_ref().is_some_and(|p| p.clock == ProfileClock::Timestamps);
        let launches: Vec<(String, (u32, u32))> = batch
            .commands
            .iter()
            .filter_map(|c| match c {
                Command::Dispatch { pipeline, source, .. } if timed => Some((pipeline.name.clone(), *source)),
                _ => None,
            })
            .collect();
        let queries = (!launches.is_empty()).then(|| {
            self.device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("kernel times"),
                ty: wgpu::QueryType::Timestamp,
                count: 2 * launches.len() as u32,
            })
        });
        let mut launch = 0u32;
        let params = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("parameters"),
            size: (batch.params.len().max(4) as u64).next_multiple_of(4),
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        self.queue.write_buffer(&params, 0, &batch.params);
        for command in &batch.commands {
            match command {
                Command::Dispatch {
                    pipeline,
                    bindings,
                    params: offset,
                    words,
                    groups,
                    record,
                    counts,
                    ..
                } => {
                    for (k, count) in counts {
                        let at = (*offset + 4 * k) as u64;
                        encoder.copy_buffer_to_buffer(count.raw(), 0, &params, at, 4);
                    }
                    let param_bytes = *words as u64 * 4;
                    let mut entries = vec![wgpu::BindGroupEntry {
                        binding: 0,
                        resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                            buffer: &params,
                            offset: *offset as u64,
                            size: wgpu::BufferSize::new(param_bytes.next_multiple_of(4).max(4)),
                        }),
                    }];
                    for (k, b) in bindings.iter().enumerate() {
                        // An empty array still binds one element: the device requires as much
                        // as one element of the shader's array type (8 bytes for `i64`).
                        let min = pipeline.min_bytes.get(k + 1).copied().unwrap_or(0);
                        let bytes = b.bytes.next_multiple_of(4).max(4).max(min);
                        entries.push(wgpu::BindGroupEntry {
                            binding: k as u32 + 1,
                            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                                buffer: b.buffer.raw(),
                                offset: 0,
                                size: wgpu::BufferSize::new(bytes),
                            }),
                        });
                    }
                    let group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                        label: None,
                        layout: &pipeline.layout,
                        entries: &entries,
                    });
                    let timestamp_writes =
                        queries.as_ref().map(|query_set| wgpu::ComputePassTimestampWrites {
                            query_set,
                            beginning_of_pass_write_index: Some(2 * launch),
                            end_of_pass_write_index: Some(2 * launch + 1),
                        });
                    launch += 1;
                    let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                        label: Some(&pipeline.name),
                        timestamp_writes,
                    });
                    pass.set_pipeline(&pipeline.pipeline);
                    pass.set_bind_group(0, &group, &[]);
                    match record {
                        Some(record) => {
                            let at = (weft_flat::wgsl::prims::COUNT_GRID_WORD * 4) as u64;
                            pass.dispatch_workgroups_indirect(record.raw(), at);
                        }
                        None => pass.dispatch_workgroups(groups.0, groups.1, 1),
                    }
                }
                Command::Clear { buffer, bytes } => encoder.clear_buffer(buffer.raw(), 0, Some(*bytes)),
                Command::Copy { from, from_offset, to, to_offset, bytes } => {
                    encoder.copy_buffer_to_buffer(from.raw(), *from_offset, to.raw(), *to_offset, *bytes);
                }
            }
        }
        let query_set = queries?;
        let bytes = 16 * launches.len() as u64;
        let resolved = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("resolved kernel times"),
            size: bytes,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("kernel times"),
            size: bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        encoder.resolve_query_set(&query_set, 0..2 * launches.len() as u32, &resolved, 0);
        encoder.copy_buffer_to_buffer(&resolved, 0, &staging, 0, bytes);
        Some(PendingTimes { staging, launches })
    }

    /// An error record: one word, `NO_ERROR` until a kernel bound to it fails. Each run
    /// has its own, so that runs sharing the device do not see each other's failures. A
    /// record an earlier run returned clean is taken first; only when there is none is one
    /// written (an upload of 4 bytes).
    pub fn error_record(&self) -> GpuResult<Arc<DeviceBuffer>> {
        if let Some(record) = lock(&self.spare_records).pop() {
            return Ok(record);
        }
        self.upload(&NO_ERROR.to_le_bytes())
    }

    /// Gives back a record that holds `NO_ERROR` and that no unfinished launch can still
    /// write (`error_record`). A few are kept: as many as runs share the device at once.
    pub fn return_record(&self, record: Arc<DeviceBuffer>) {
        const SPARE_RECORDS: usize = 4;
        let mut spare = lock(&self.spare_records);
        if spare.len() < SPARE_RECORDS {
            spare.push(record);
        }
    }

    /// Sets an error record back to `NO_ERROR`, once the host has reported its error.
    pub fn clear_record(&self, record: &Arc<DeviceBuffer>) {
        self.queue.write_buffer(record.raw(), 0, &NO_ERROR.to_le_bytes());
    }

    /// Submits the recorded work and waits until the device has finished it: for timing.
    pub fn wait(&self) -> GpuResult<()> {
        self.submit()?;
        self.device
            .poll(wgpu::PollType::Wait { submission_index: None, timeout: None })
            .map(|_| ())
            .map_err(|e| GpuError(format!("the device did not finish: {e}")))
    }

    /// Reads `bytes` bytes of `buffer` from `offset` (a multiple of 4), after all recorded
    /// work, together with the error `record`.
    pub fn read(
        &self,
        buffer: &Arc<DeviceBuffer>,
        offset: u64,
        bytes: u64,
        record: &Arc<DeviceBuffer>,
    ) -> GpuResult<(Vec<u8>, u32)> {
        let (mut parts, error) = self.read_parts(&[(buffer, offset, bytes)], record)?;
        Ok((parts.pop().unwrap_or_default(), error))
    }

    /// `read` of several ranges `(buffer, offset, bytes)` at once, offsets multiples of 4:
    /// one submission and one read-back for them all.
    pub fn read_parts(
        &self,
        parts: &[(&Arc<DeviceBuffer>, u64, u64)],
        record: &Arc<DeviceBuffer>,
    ) -> GpuResult<(Vec<Vec<u8>>, u32)> {
        debug_assert!(parts.iter().all(|&(_, offset, _)| offset.is_multiple_of(4)), "unaligned read-back");
        // The batch and the copies go in one submission, under the batch lock.
        let mut batch = lock(&self.batch);
        // The record's word first, then each part at the next multiple of 4.
        let mut at = 4;
        let places: Vec<u64> = parts
            .iter()
            .map(|&(_, _, bytes)| {
                let place = at;
                at += bytes.next_multiple_of(4);
                place
            })
            .collect();
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("read-back"),
            size: at,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
        let recorded = std::mem::take(&mut *batch);
        let times = self.encode(&recorded, &mut encoder);
        encoder.copy_buffer_to_buffer(record.raw(), 0, &staging, 0, 4);
        for (&(buffer, offset, bytes), &place) in parts.iter().zip(&places) {
            if bytes > 0 {
                encoder.copy_buffer_to_buffer(
                    buffer.raw(),
                    offset,
                    &staging,
                    place,
                    bytes.next_multiple_of(4),
                );
            }
        }
        let index = self.queue.submit([encoder.finish()]);
        let rejected = self.take_device_error(&recorded);
        drop(recorded);
        drop(batch);
        rejected?;
        let data = self.map_and_read(&staging, Some(index))?;
        self.collect_times(times)?;
        let error = u32::from_le_bytes([data[0], data[1], data[2], data[3]]);
        let bytes: u64 = parts.iter().map(|&(_, _, bytes)| bytes).sum();
        self.count_traffic(|t| {
            t.read_backs += 1;
            t.bytes_read_back += bytes;
        });
        let mut stats = lock(&self.stats);
        stats.read_backs += 1;
        stats.submissions += 1;
        stats.bytes_read_back += bytes;
        let read = parts
            .iter()
            .zip(&places)
            .map(|(&(_, _, bytes), &place)| data[place as usize..(place + bytes) as usize].to_vec())
            .collect();
        Ok((read, error))
    }

    /// The error record after all recorded work: `NO_ERROR` or the first failing op's
    /// sequence number.
    pub fn first_error(&self, record: &Arc<DeviceBuffer>) -> GpuResult<u32> {
        self.read(record, 0, 0, record).map(|(_, e)| e)
    }

    /// The most workgroups a launch puts in one grid row.
    pub fn grid_width(&self) -> u64 {
        let max = u64::from(self.limits.max_compute_workgroups_per_dimension.max(1));
        u64::from(self.grid_width.load(Ordering::Relaxed)).clamp(1, max)
    }

    /// Puts at most `width` workgroups in a grid row, so that small launches take the 2-D
    /// path that large ones need. Set it between runs: a count record keeps the grid of the
    /// width it was written under.
    pub fn limit_grid_width(&self, width: u32) {
        self.grid_width.store(width.max(1), Ordering::Relaxed);
    }

    /// Runs a loop of `n` iterations in one thread and gives the count it reached: an adapter
    /// that cuts loops short (llvmpipe before Mesa 25 stops at 65,535) gives less.
    pub fn count_loop(&self, n: u32) -> GpuResult<u32> {
        let out = self.alloc(4)?;
        let kernel = weft_flat::wgsl::prims::loop_counter();
        self.dispatch_groups(&kernel, 1, 1, &[0, 0, n, 0], &[Binding { buffer: out.clone(), bytes: 4 }])?;
        let (data, _) = self.read(&out, 0, 4, &out)?;
        Ok(u32::from_le_bytes([data[0], data[1], data[2], data[3]]))
    }
}

/// Refuses a launch whose buffers do not match its kernel's bindings, which the device would
/// report as a validation error only when the batch is submitted, far from its cause. (An
/// empty array is bound as one element, which every buffer of the pool has room for.)
fn check_bindings(pipeline: &Pipeline, bindings: &[Binding]) -> GpuResult<()> {
    let expected = pipeline.min_bytes.len().saturating_sub(1);
    if bindings.len() != expected {
        return Err(GpuError::internal(format!(
            "kernel `{}` has {expected} buffer bindings but was given {}",
            pipeline.name,
            bindings.len()
        )));
    }
    for (k, (b, &min)) in bindings.iter().zip(&pipeline.min_bytes[1..]).enumerate() {
        let bound = b.buffer.size;
        if bound < min {
            return Err(GpuError::internal(format!(
                "kernel `{}` reads at least {min} bytes through binding {} but was given a buffer of {bound}",
                pipeline.name,
                k + 1
            )));
        }
    }
    Ok(())
}

/// `bytes` for people: `512 bytes`, `4.0 KiB`, `3.0 MiB`, `1.50 GiB`.
pub fn byte_size(bytes: u64) -> String {
    let x = bytes as f64;
    match bytes {
        0..1024 => format!("{bytes} bytes"),
        1024..0x10_0000 => format!("{:.1} KiB", x / 1024.0),
        0x10_0000..0x4000_0000 => format!("{:.1} MiB", x / 1024.0 / 1024.0),
        _ => format!("{:.2} GiB", x / 1024.0 / 1024.0 / 1024.0),
    }
}
