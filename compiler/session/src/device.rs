//! The session's GPU: created when a run first needs it, kept while it works, and replaced
//! after a device loss (the driver's report, or `reset`). A failure to create one is not kept:
//! the next run tries again instead of remembering the failure forever.

use std::sync::Arc;

use weft_gpu::runtime::{Gpu, GpuError};

/// Where a session keeps its device.
#[derive(Default)]
pub struct DeviceSlot {
    /// The adapter asked for (`--device`, `WEFT_ADAPTER`): the first whose name contains it.
    preferred: Option<String>,
    /// Below how many elements a call runs on the CPU executor (`Gpu::set_cpu_crossover`):
    /// `None` takes the adapter's default (`Gpu::default_cpu_crossover`).
    cpu_crossover: Option<u64>,
    device: Option<Arc<Gpu>>,
}

impl DeviceSlot {
    /// A slot that will ask for `preferred` (or, when `None`, `WEFT_ADAPTER`, else the best
    /// adapter).
    pub fn new(preferred: Option<String>) -> DeviceSlot {
        DeviceSlot { preferred, cpu_crossover: None, device: None }
    }

    /// The slot, its devices running calls smaller than `elements` on the CPU executor (0: none;
    /// `None`: the adapter's default).
    pub fn with_cpu_crossover(mut self, elements: Option<u64>) -> DeviceSlot {
        self.cpu_crossover = elements;
        self
    }

    /// The device, created now if there is none. A failure is not kept: the next call tries
    /// again (a driver installed meanwhile, a device that came back).
    pub fn get(&mut self) -> Result<Arc<Gpu>, GpuError> {
        if let Some(device) = &self.device
            && !device.is_lost()
        {
            return Ok(device.clone());
        }
        let from_env = std::env::var("WEFT_ADAPTER").ok().filter(|n| !n.is_empty());
        let name = self.preferred.clone().or(from_env);
        let device = Arc::new(Gpu::new(name.as_deref())?);
        device.set_cpu_crossover(self.cpu_crossover.unwrap_or_else(|| device.default_cpu_crossover()));
        self.device = Some(device.clone());
        Ok(device)
    }

    /// The device if one was created and still works.
    pub fn current(&self) -> Option<&Arc<Gpu>> {
        self.device.as_ref().filter(|device| !device.is_lost())
    }

    /// Drops the device (after a device loss): the next `get` creates a new one. Device
    /// values made on the old one can no longer be used.
    pub fn reset(&mut self) {
        self.device = None;
    }

    /// Asks for another adapter from the next `get` on (`None`: `WEFT_ADAPTER`, else the
    /// best), dropping the current device.
    pub fn prefer(&mut self, preferred: Option<String>) {
        self.preferred = preferred;
        self.reset();
    }
}
