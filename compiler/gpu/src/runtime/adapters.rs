//! Finding adapters: the instance (backends from `WGPU_BACKEND`), the choice of one, and the
//! summaries `weft devices` prints.

use super::{GpuError, GpuResult};

pub(super) fn instance() -> wgpu::Instance {
    let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
    // wgpu checks every indirect dispatch's grid with a compute pass of its own, unless told
    // not to: a hidden launch before each of ours. Our grids come only from count records that
    // our kernels write (`wgsl::prims::count_record`) for counts no larger than a bound whose
    // grid the host has checked against the adapter's limits (`Gpu::dispatch_counted`).
    if std::env::var_os("WGPU_VALIDATION_INDIRECT_CALL").is_none() {
        descriptor.flags.remove(wgpu::InstanceFlags::VALIDATION_INDIRECT_CALL);
    }
    wgpu::Instance::new(descriptor)
}

/// The adapter whose name contains `name`, or the best one: a discrete GPU before an
/// integrated one, a CPU adapter last, and Vulkan, Metal or DX12 before GL.
pub(super) fn choose(instance: &wgpu::Instance, name: Option<&str>) -> GpuResult<wgpu::Adapter> {
    let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()));
    if adapters.is_empty() {
        return Err(GpuError(
            "no GPU adapter found: install a Vulkan driver (on Debian, `mesa-vulkan-drivers` gives lavapipe, which runs on the CPU)"
                .into(),
        ));
    }
    if let Some(name) = name {
        let wanted = name.to_lowercase();
        return adapters.into_iter().find(|a| a.get_info().name.to_lowercase().contains(&wanted)).ok_or_else(
            || GpuError(format!("no adapter's name contains `{name}`; `weft devices` lists them")),
        );
    }
    adapters
        .into_iter()
        .min_by_key(|a| rank(&a.get_info()))
        .ok_or_else(|| GpuError("no GPU adapter found".into()))
}

fn rank(info: &wgpu::AdapterInfo) -> (u8, u8) {
    let device = match info.device_type {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Other => 3,
        wgpu::DeviceType::Cpu => 4,
    };
    let backend = u8::from(info.backend == wgpu::Backend::Gl);
    (device, backend)
}

/// What `weft devices` shows of one adapter.
#[derive(Debug, Clone)]
pub struct AdapterSummary {
    pub name: String,
    pub backend: String,
    pub device_type: String,
    pub driver: String,
    pub limits: Vec<(&'static str, u64)>,
    pub features: Vec<String>,
    /// Whether `Gpu::new(None)` would choose it.
    pub chosen: bool,
}

/// Every adapter the backends offer.
pub fn adapter_summaries() -> Vec<AdapterSummary> {
    let instance = instance();
    let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()));
    let best = adapters.iter().enumerate().min_by_key(|(_, a)| rank(&a.get_info())).map(|(k, _)| k);
    adapters
        .iter()
        .enumerate()
        .map(|(k, adapter)| {
            let info = adapter.get_info();
            let l = adapter.limits();
            let features = adapter.features();
            let interesting = [
                (wgpu::Features::SHADER_F64, "SHADER_F64"),
                (wgpu::Features::SHADER_INT64, "SHADER_INT64"),
                (wgpu::Features::SUBGROUP, "SUBGROUP"),
                (wgpu::Features::TIMESTAMP_QUERY, "TIMESTAMP_QUERY"),
                (wgpu::Features::SHADER_F16, "SHADER_F16"),
            ];
            AdapterSummary {
                name: info.name.clone(),
                backend: format!("{:?}", info.backend),
                device_type: format!("{:?}", info.device_type),
                driver: format!("{} {}", info.driver, info.driver_info).trim().to_string(),
                limits: vec![
                    ("max_storage_buffer_binding_size", l.max_storage_buffer_binding_size),
                    ("max_buffer_size", l.max_buffer_size),
                    (
                        "max_storage_buffers_per_shader_stage",
                        u64::from(l.max_storage_buffers_per_shader_stage),
                    ),
                    (
                        "max_compute_workgroups_per_dimension",
                        u64::from(l.max_compute_workgroups_per_dimension),
                    ),
                    (
                        "max_compute_invocations_per_workgroup",
                        u64::from(l.max_compute_invocations_per_workgroup),
                    ),
                    ("max_compute_workgroup_storage_size", u64::from(l.max_compute_workgroup_storage_size)),
                ],
                features: interesting
                    .iter()
                    .filter(|(f, _)| features.contains(*f))
                    .map(|(_, n)| n.to_string())
                    .collect(),
                chosen: Some(k) == best,
            }
        })
        .collect()
}
