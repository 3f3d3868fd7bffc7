//! What `weft run` and `weft dev` do, as library calls: compile a file to the core, run it on
//! an executor, or show the program after a pass. Front ends supply the IO (`interp::Host`).

use std::borrow::Cow;
use std::fmt::Write as _;

use crate::check::file_diagnostics;
use crate::db::{Db, SourceFile};
use crate::diagnostics::Diagnostic;
use crate::infer::{function_types, top_level_types};
use crate::items::file_functions;
use crate::{core, cpu, flatten, fuse, gpu, hir, interp, ir, mono};

/// The executors `weft run` can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Interp,
    /// The flattened program on the parallel CPU executor.
    Cpu,
    /// The flattened program on the GPU executor (the adapter `WEFT_ADAPTER` names, or the
    /// best one).
    Gpu,
}

/// Why a run stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunError {
    /// The program does not compile: every diagnostic (warnings included).
    Compile(Vec<Diagnostic>),
    /// The program stopped with a run-time error.
    Runtime(Diagnostic),
    /// No GPU could run it: why.
    NoDevice(String),
}

/// The core program of a file, or its diagnostics if any is an error.
pub fn compile(db: &dyn Db, file: SourceFile) -> Result<&core::Program, Vec<Diagnostic>> {
    let diagnostics = file_diagnostics(db, file);
    if diagnostics.iter().any(Diagnostic::is_error) {
        return Err(diagnostics.clone());
    }
    mono::core_program(db, file).as_ref().map_err(Clone::clone)
}

/// Compiles and runs a file's top-level statements.
pub fn run<H: interp::Host + Send>(
    db: &dyn Db,
    file: SourceFile,
    backend: Backend,
    host: &mut H,
) -> Result<(), RunError> {
    run_with(db, file, backend, flatten::Options::default(), host)
}

/// `run`, flattening with the schedule `options` ask for (the interpreter ignores them).
pub fn run_with<H: interp::Host + Send>(
    db: &dyn Db,
    file: SourceFile,
    backend: Backend,
    options: flatten::Options,
    host: &mut H,
) -> Result<(), RunError> {
    match backend {
        Backend::Interp => {
            let program = compile(db, file).map_err(RunError::Compile)?;
            interp::run_with_big_stack(program, host).map_err(RunError::Runtime)
        }
        Backend::Cpu => run_cpu_with(db, file, options, host).map(|_| ()),
        Backend::Gpu => run_gpu_with(db, file, options, host).map(|_| ()),
    }
}

/// The flattened program, or why it cannot be built: compile errors, or E0408 for what the
/// flattener does not handle yet.
pub fn flat_program(db: &dyn Db, file: SourceFile) -> Result<&ir::Program, Vec<Diagnostic>> {
    flatten::ir_program(db, file).as_ref().map_err(Clone::clone)
}

/// The program the executors run: flattened with the schedule `options` ask for, then fused
/// as `options.fusion` says. The default options' program is the database's; others are
/// built afresh each time.
pub fn flat_program_with(
    db: &dyn Db,
    file: SourceFile,
    options: flatten::Options,
) -> Result<Cow<'_, ir::Program>, Vec<Diagnostic>> {
    fused_program_with(db, file, options).map(|(program, _)| program)
}

/// `flat_program_with`, and the fusion plan that chose its kernels.
pub fn fused_program_with(
    db: &dyn Db,
    file: SourceFile,
    options: flatten::Options,
) -> Result<(Cow<'_, ir::Program>, Cow<'_, fuse::plan::FusionPlan>), Vec<Diagnostic>> {
    if options == flatten::Options::default() {
        let (program, plan) = fuse::fused_program(db, file).as_ref().map_err(Clone::clone)?;
        return Ok((Cow::Borrowed(program), Cow::Borrowed(plan)));
    }
    let flat_options = flatten::Options { fusion: fuse::Options::default(), ..options };
    let flat = if flat_options == flatten::Options::default() {
        Cow::Borrowed(flat_program(db, file)?)
    } else {
        let program = compile(db, file)?;
        Cow::Owned(flatten::flatten_with(program, flat_options).map_err(|d| vec![d])?)
    };
    let (program, plan) = fuse::fuse(&flat, options.fusion);
    Ok((Cow::Owned(program), Cow::Owned(plan)))
}

/// Runs a file on the CPU executor and gives its counters: how many ops ran, over how many
/// elements.
pub fn run_cpu(
    db: &dyn Db,
    file: SourceFile,
    host: &mut dyn interp::Host,
) -> Result<cpu::Counters, RunError> {
    run_cpu_with(db, file, flatten::Options::default(), host)
}

/// `run_cpu`, flattening with the schedule `options` ask for.
pub fn run_cpu_with(
    db: &dyn Db,
    file: SourceFile,
    options: flatten::Options,
    host: &mut dyn interp::Host,
) -> Result<cpu::Counters, RunError> {
    let program = flat_program_with(db, file, options).map_err(RunError::Compile)?;
    let mut counters = cpu::Counters::default();
    cpu::run(&program, host, &mut counters).map_err(RunError::Runtime)?;
    Ok(counters)
}

/// Runs a file on the process's GPU (`gpu::shared_gpu`) and gives what the run did.
pub fn run_gpu_with(
    db: &dyn Db,
    file: SourceFile,
    options: flatten::Options,
    host: &mut dyn interp::Host,
) -> Result<gpu::Report, RunError> {
    run_on_shared_gpu(db, file, options, host, gpu::run)
}

/// `run_gpu_with`, timing every kernel (`gpu::Report::profile`).
pub fn run_gpu_profiled(
    db: &dyn Db,
    file: SourceFile,
    options: flatten::Options,
    host: &mut dyn interp::Host,
) -> Result<gpu::Report, RunError> {
    run_on_shared_gpu(db, file, options, host, gpu::run_profiled)
}

type GpuRun =
    fn(&crate::runtime::Gpu, &ir::Program, &mut dyn interp::Host) -> Result<gpu::Report, Diagnostic>;

fn run_on_shared_gpu(
    db: &dyn Db,
    file: SourceFile,
    options: flatten::Options,
    host: &mut dyn interp::Host,
    run: GpuRun,
) -> Result<gpu::Report, RunError> {
    let device = gpu::shared_gpu().map_err(|e| RunError::NoDevice(e.0))?;
    // Kernels may bind as many storage buffers as this adapter allows.
    let mut options = options.for_gpu();
    options.fusion.max_bindings = device.limits.max_storage_buffers_per_shader_stage;
    let program = flat_program_with(db, file, options).map_err(RunError::Compile)?;
    run(device, &program, host).map_err(RunError::Runtime)
}

/// The passes `weft dev --after` can show.
pub const PASSES: &[&str] = &["parse", "hir", "types", "core", "ir"];

/// The program as it is after `pass`, as text.
pub fn dump_after(db: &dyn Db, file: SourceFile, pass: &str) -> Result<String, Vec<Diagnostic>> {
    match pass {
        "parse" => Ok(crate::syntax::debug_tree(&crate::parsed::parsed_file(db, file).syntax())),
        "hir" => {
            let mut out = String::new();
            for function in file_functions(db, file) {
                let _ = writeln!(out, "{:#?}", hir::function_hir(db, *function));
            }
            let _ = writeln!(out, "{:#?}", hir::top_level_hir(db, file));
            Ok(out)
        }
        "types" => Ok(types_summary(db, file)),
        "core" => compile(db, file).map(|program| program.to_string()),
        "ir" => flat_program(db, file).map(|program| program.to_string()),
        _ => Ok(String::new()),
    }
}

/// Each function's type scheme, then each top-level binding's type.
fn types_summary(db: &dyn Db, file: SourceFile) -> String {
    let mut out = String::new();
    for function in file_functions(db, file) {
        let _ = writeln!(out, "def {}: {}", function.name(db), function_types(db, *function).scheme);
    }
    let main = hir::top_level_hir(db, file);
    let types = &top_level_types(db, file).main;
    for (id, local) in main.locals.iter().enumerate() {
        if local.scope == 0 {
            let ty = match types.scheme_of(id as u32) {
                Some(scheme) => scheme.to_string(),
                None => types.local(id as u32).to_string(),
            };
            let _ = writeln!(out, "{}: {ty}", local.name);
        }
    }
    out
}
