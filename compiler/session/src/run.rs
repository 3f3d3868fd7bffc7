//! Running a file's top-level statements on an executor: the program comes from the pipeline's
//! queries, so a second run of unchanged text compiles nothing.

use weft_analysis::pipeline::{self, Options};
use weft_analysis::{Db, SourceFile};
use weft_exec::interp::Host;
use weft_exec::{cpu, interp};
use weft_gpu::runtime::Gpu;
use weft_syntax::Diagnostic;

use crate::backend::Backend;

/// Why a run stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunError {
    /// The program does not compile: every diagnostic (warnings included).
    Compile(Vec<Diagnostic>),
    /// The program stopped with a run-time error (E0410 when it was interrupted).
    Runtime(Diagnostic),
    /// No GPU could run it: why.
    NoDevice(String),
}

/// What a run did, by executor.
#[derive(Debug, Clone, Default)]
pub enum RunReport {
    #[default]
    Interp,
    Cpu(cpu::Counters),
    Gpu(Box<weft_gpu::Report>),
}

/// Runs a file's top-level statements on `backend`. A GPU run needs `gpu`: the program is
/// flattened for it and fused within its binding limit, and `profile` times every kernel
/// (`Report::profile`).
pub fn run_program(
    db: &dyn Db,
    file: SourceFile,
    backend: Backend,
    options: Options,
    gpu: Option<&Gpu>,
    profile: bool,
    host: &mut (dyn Host + Send),
) -> Result<RunReport, RunError> {
    match (backend, gpu) {
        (Backend::Interp, _) => {
            let program = pipeline::core_program(db, file).map_err(RunError::Compile)?;
            interp::run_with_big_stack(program, host).map_err(RunError::Runtime)?;
            Ok(RunReport::Interp)
        }
        (Backend::Cpu, _) => {
            let fused = pipeline::fused_program(db, file, options).map_err(RunError::Compile)?;
            let mut counters = cpu::Counters::default();
            cpu::run(&fused.program, host, &mut counters).map_err(RunError::Runtime)?;
            Ok(RunReport::Cpu(counters))
        }
        (Backend::Gpu, None) => Err(RunError::NoDevice("a GPU run needs a device".to_string())),
        (Backend::Gpu, Some(gpu)) => {
            let options = options.for_gpu(gpu.limits.max_storage_buffers_per_shader_stage);
            let fused = pipeline::fused_program(db, file, options).map_err(RunError::Compile)?;
            let run = if profile { weft_gpu::run_profiled } else { weft_gpu::run };
            let report = run(gpu, &fused.program, host).map_err(RunError::Runtime)?;
            Ok(RunReport::Gpu(Box::new(report)))
        }
    }
}

/// `run_program`, a GPU run on the process's shared device (`weft_gpu::shared_gpu`): for tools
/// and tests, which run many programs one after another. A `Session` owns its device instead.
pub fn run_file(
    db: &dyn Db,
    file: SourceFile,
    backend: Backend,
    options: Options,
    host: &mut (dyn Host + Send),
) -> Result<RunReport, RunError> {
    let gpu = match backend {
        Backend::Gpu => Some(weft_gpu::shared_gpu().map_err(|e| RunError::NoDevice(e.0))?),
        _ => None,
    };
    run_program(db, file, backend, options, gpu, false, host)
}

impl RunReport {
    /// The CPU executor's counters, for a CPU run.
    pub fn counters(&self) -> Option<&cpu::Counters> {
        match self {
            RunReport::Cpu(counters) => Some(counters),
            _ => None,
        }
    }

    /// The GPU executor's report, for a GPU run.
    pub fn gpu(&self) -> Option<&weft_gpu::Report> {
        match self {
            RunReport::Gpu(report) => Some(report.as_ref()),
            _ => None,
        }
    }
}
