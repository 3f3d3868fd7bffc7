//! Weft's own executors, driven as a user drives them: through a session engine, the REPL's and
//! the notebook's. One cell defines the workload, one binds its inputs from the `.npy` files,
//! and the timed cell binds `result`; a GPU run's inputs and result stay on the device, and the
//! engine's own timing separates compiling and uploading from running.

use std::path::Path;

use weft_exec::interp::NestedValue;
use weft_session::engine::Engine;
use weft_session::{Backend, DeviceSlot, Event, Options, Session};

use crate::workloads::{PRELUDE, Workload};

/// One of Weft's executors, on one workload.
pub struct WeftRunner {
    engine: Engine,
    backend: Backend,
}

/// What one timed repeat reports beside its time.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Counts {
    pub launches: u64,
    pub read_backs: u64,
    pub bytes_read_back: u64,
    /// Bytes bound to the launches: what the kernels may read and write, the traffic a fusion
    /// saves.
    pub bytes_bound: u64,
}

impl WeftRunner {
    /// An engine on `backend` with the workload's definitions, or why it has none.
    pub fn new(workload: &Workload, backend: Backend, options: Options) -> Result<WeftRunner, String> {
        // The GPU executor is measured on the device: no call runs on the CPU below a crossover.
        let session = Session::new(DeviceSlot::new(None).with_cpu_crossover(Some(0)));
        let mut runner = WeftRunner { engine: Engine::new(session, Some(backend), options), backend };
        runner.cell(&format!("{PRELUDE}\n{}", workload.weft))?;
        Ok(runner)
    }

    /// The GPU adapter, as `weft devices` names it, and whether it is a CPU (lavapipe).
    pub fn adapter(&mut self) -> Option<(String, bool)> {
        let gpu = self.engine.session().device().get().ok()?;
        Some((gpu.describe(), gpu.is_cpu()))
    }

    /// Binds the workload's inputs from the `.npy` files in `dir`.
    pub fn load(&mut self, workload: &Workload, dir: &Path) -> Result<(), String> {
        self.engine.session().set_directory(dir.to_path_buf());
        self.cell(workload.setup).map(drop)
    }

    /// Runs the workload's call once, binding `result`: the run time in milliseconds, and the
    /// device's counts for a GPU run.
    pub fn time_once(&mut self, workload: &Workload) -> Result<(f64, Counts), String> {
        let before = self.device_counts();
        let timing = self.cell(&format!("result = {}\n", workload.call))?;
        let after = self.device_counts();
        let counts = Counts {
            launches: timing.launches,
            read_backs: after.0.saturating_sub(before.0),
            bytes_read_back: timing.bytes_read_back,
            bytes_bound: after.1.saturating_sub(before.1),
        };
        Ok((timing.run.as_secs_f64() * 1000.0, counts))
    }

    /// `result`, read back and flattened to its scalars in order.
    pub fn result(&mut self) -> Result<Vec<f64>, String> {
        let value = self.engine.value("result").cloned().ok_or("the timed cell bound no `result`")?;
        let nested = self.engine.session().nested(&value).map_err(|e| format!("{e:?}"))?;
        let mut leaves = Vec::new();
        flatten(&nested, &mut leaves);
        Ok(leaves)
    }

    /// The device's read-backs and bytes bound so far (zero off the GPU).
    fn device_counts(&mut self) -> (u64, u64) {
        let gpu = match self.backend {
            Backend::Gpu => self.engine.session().device().current().cloned(),
            _ => None,
        };
        gpu.map_or((0, 0), |gpu| {
            let stats = gpu.stats();
            (stats.read_backs, stats.bytes_bound)
        })
    }

    fn cell(&mut self, text: &str) -> Result<weft_session::engine::Timing, String> {
        let mut problems = Vec::new();
        let timing = self.engine.run_cell_timed(text, false, &mut |event| {
            if let Event::Diagnostic { diagnostic, .. } = event {
                problems.push(format!("{}: {}", diagnostic.code, diagnostic.message));
            }
        });
        timing.ok_or_else(|| problems.join("; "))
    }
}

fn flatten(value: &NestedValue, out: &mut Vec<f64>) {
    match value {
        NestedValue::Bool(b) => out.push(f64::from(u8::from(*b))),
        NestedValue::I32(x) => out.push(f64::from(*x)),
        NestedValue::I64(x) => out.push(*x as f64),
        NestedValue::F32(x) => out.push(f64::from(*x)),
        NestedValue::F64(x) => out.push(*x),
        NestedValue::Tuple(items) => items.iter().for_each(|item| flatten(item, out)),
        NestedValue::Seq(seq) => seq.iter().for_each(|item| flatten(&item, out)),
    }
}
