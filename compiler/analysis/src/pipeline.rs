//! The one pipeline: the order of the passes from a source file to GPU kernels, their options,
//! and the salsa queries that cache each step.
//!
//! ```text
//! source ──check──▶ core ──flatten──▶ flat IR ──fuse──▶ fused IR + plan ──wgsl──▶ kernels
//! ```
//!
//! Every front end (`weft run`, `weft fusion`, the language server, the REPL) asks these
//! queries, so the command line and the editor get the same plan by construction. The options
//! are part of each query's key: a GPU run's program (flattened for the device, fused within its
//! binding limit) is cached like the CPU one, and a second request on unchanged text runs no
//! pass at all. The passes themselves (`weft_flat::flatten`, `fuse`, `wgsl`) are plain
//! functions over plain data; only this module knows salsa.
//!
//! Fusion is planned per function instance (`fused_function`), so an edit re-plans only the
//! functions whose IR it changed; `fused_program` assembles the parts, and `fusion_plan` their
//! plans alone. A newer edit cancels a query between statements while lowering, between
//! expressions while flattening, and inside a region's graph and solve while fusing (salsa
//! unwinds with `Cancelled`), so a large program never holds up an edit.

use std::fmt::Write as _;

use weft_core as core;
use weft_flat::fuse::{self, plan::FusionPlan};
use weft_flat::wgsl::program::{ProgramKernel, program_kernels};
use weft_flat::{flatten, ir, positions};
use weft_syntax::diagnostics::Diagnostic;

use crate::check::file_diagnostics;
use crate::db::{Db, SourceFile};
use crate::freed_later::FreedLater;
use crate::infer::{function_types, top_level_types};
use crate::items::file_functions;
use crate::{hir, mono};

pub use weft_flat::flatten::{DEFAULT_PIECE_SIZE, InnerSchedule};
pub use weft_flat::fuse::{PORTABLE_BINDINGS, Strategy};

/// Everything that decides the back half of the pipeline: how flattening schedules nested
/// work, and how the flat program's ops are grouped into kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Options {
    pub flatten: flatten::Options,
    pub fusion: fuse::Options,
}

impl Options {
    /// The options of a GPU run, flattened for the device, its kernels within `max_bindings`
    /// storage buffers (the adapter's limit; `fuse::PORTABLE_BINDINGS` when none is at hand).
    pub fn for_gpu(self, max_bindings: u32) -> Options {
        Options { flatten: self.flatten.for_gpu(), fusion: fuse::Options { max_bindings, ..self.fusion } }
    }

    /// What the editor and `weft fusion` show without a device: the GPU program within the
    /// portable binding limit.
    pub fn portable_gpu() -> Options {
        Options::default().for_gpu(fuse::PORTABLE_BINDINGS)
    }
}

impl From<flatten::Options> for Options {
    fn from(flatten: flatten::Options) -> Options {
        Options { flatten, ..Options::default() }
    }
}

/// The fused program the executors run, and the plan that chose its kernels (by byte offsets;
/// `fusion_plan` gives it with lines and columns).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fused {
    pub program: ir::Program,
    pub plan: FusionPlan,
}

/// The core program of a file, or its diagnostics if any is an error.
pub fn core_program(db: &dyn Db, file: SourceFile) -> Result<&core::Program, Vec<Diagnostic>> {
    let diagnostics = file_diagnostics(db, file);
    if diagnostics.iter().any(Diagnostic::is_error) {
        return Err(diagnostics.clone());
    }
    mono::core_program(db, file).as_deref().map_err(Clone::clone)
}

/// The flattened (segmented) program, before fusion, or why it cannot be built: compile
/// errors, or E0408 for what the flattener does not handle yet.
pub fn flat_program(
    db: &dyn Db,
    file: SourceFile,
    options: flatten::Options,
) -> Result<&ir::Program, Vec<Diagnostic>> {
    flat_query(db, file, options).as_deref().map_err(Clone::clone)
}

/// The program the executors run, with its fusion plan.
pub fn fused_program(db: &dyn Db, file: SourceFile, options: Options) -> Result<&Fused, Vec<Diagnostic>> {
    fused_query(db, file, options).as_deref().map_err(Clone::clone)
}

/// The fusion plan, located in the source (each op with its line and column): what `weft
/// fusion` prints and the editor shows. The fusion itself (`fused_function`) does not read the
/// text; only assembling and locating its parts does.
pub fn fusion_plan(db: &dyn Db, file: SourceFile, options: Options) -> Result<&FusionPlan, Vec<Diagnostic>> {
    located_plan_query(db, file, options).as_deref().map_err(Clone::clone)
}

/// Every distinct WGSL kernel of the fused program, in program order.
pub fn kernels(db: &dyn Db, file: SourceFile, options: Options) -> Result<&[ProgramKernel], Vec<Diagnostic>> {
    kernels_query(db, file, options).as_ref().map(|kernels| kernels.as_slice()).map_err(Clone::clone)
}

/// Function `func` of the core program as an entry point (`flatten::flatten_entry`: its
/// parameters and results are variables laid out as `ir::layout` says), fused: what a session
/// runs to call one function with arguments.
pub fn entry_program(
    db: &dyn Db,
    file: SourceFile,
    func: core::FuncId,
    options: Options,
) -> Result<&Fused, Vec<Diagnostic>> {
    entry_query(db, file, func, options).as_deref().map_err(Clone::clone)
}

#[salsa::tracked(returns(ref))]
fn entry_query(
    db: &dyn Db,
    file: SourceFile,
    func: core::FuncId,
    options: Options,
) -> Result<FreedLater<Fused>, Vec<Diagnostic>> {
    let program = core_program(db, file)?;
    if func as usize >= program.functions.len() {
        let why = format!("internal error: no function {func} in the core program");
        return Err(vec![Diagnostic::new(weft_syntax::Code::InternalError, Default::default(), why)]);
    }
    let flat = flatten::flatten_entry(program, func, options.flatten).map_err(|d| vec![d])?;
    let interrupt = || db.unwind_if_revision_cancelled();
    let (program, plan) = fuse::fuse_interruptibly(&flat, options.fusion, &interrupt, db.solve_cache());
    Ok(FreedLater::new(Fused { program, plan }))
}

#[salsa::tracked(returns(ref))]
fn flat_query(
    db: &dyn Db,
    file: SourceFile,
    options: flatten::Options,
) -> Result<FreedLater<ir::Program>, Vec<Diagnostic>> {
    let program = core_program(db, file)?;
    let interrupt = || db.unwind_if_revision_cancelled();
    flatten::flatten_interruptibly(program, options, &interrupt).map(FreedLater::new).map_err(|d| vec![d])
}

#[salsa::tracked(returns(ref))]
fn fused_query(
    db: &dyn Db,
    file: SourceFile,
    options: Options,
) -> Result<FreedLater<Fused>, Vec<Diagnostic>> {
    let flat = flat_program(db, file, options.flatten)?;
    Ok(FreedLater::new(fuse_by_function(db, file, flat, options)))
}

/// Function `index` of the flat program, its spans as ranks (`weft_flat::positions`): the
/// value it had before an edit that only moved its text, so salsa keeps what was computed from
/// it (`fused_function`) however many lines moved.
#[salsa::tracked(returns(ref))]
fn ranked_function(
    db: &dyn Db,
    file: SourceFile,
    options: flatten::Options,
    index: usize,
) -> Option<FreedLater<ir::Function>> {
    let flat = flat_program(db, file, options).ok()?;
    flat.functions.get(index).map(|f| FreedLater::new(positions::ranked(f)))
}

/// Function `index`'s fusion, spans as ranks: the plan per function instance. An edit re-plans
/// the functions whose IR it changed; every other is this query's memo.
#[salsa::tracked(returns(ref))]
fn fused_function(
    db: &dyn Db,
    file: SourceFile,
    options: Options,
    index: usize,
) -> Option<FreedLater<fuse::FunctionFusion>> {
    let function = ranked_function(db, file, options.flatten, index).as_ref()?;
    let interrupt = || db.unwind_if_revision_cancelled();
    Some(FreedLater::new(fuse::fuse_function(function, options.fusion, &interrupt, db.solve_cache())))
}

/// The fused program and its plan, assembled from each function's `fused_function`: the same
/// program and plan as `fuse::fuse` of the whole program.
fn fuse_by_function(db: &dyn Db, file: SourceFile, flat: &ir::Program, options: Options) -> Fused {
    let parts = (flat.functions.iter().enumerate())
        .map(|(index, f)| {
            let Some(part) = fused_function(db, file, options, index) else {
                return unranked_fusion(db, f, options);
            };
            let mut part = fuse::FunctionFusion::clone(part);
            let ranks = positions::Ranks::of(f);
            ranks.restore(&mut part.function);
            part.plan.map_spans(|span| ranks.range(span));
            part
        })
        .collect();
    let (program, plan) = fuse::assemble(flat, options.fusion, parts);
    Fused { program, plan }
}

/// Function `f`'s fusion computed here, for a function `fused_function` cannot read. Not
/// reached (that query reads this very program), but fusing here is right.
fn unranked_fusion(db: &dyn Db, f: &ir::Function, options: Options) -> fuse::FunctionFusion {
    let interrupt = || db.unwind_if_revision_cancelled();
    fuse::fuse_function(f, options.fusion, &interrupt, db.solve_cache())
}

/// The plan alone, assembled from each function's part of it and located in the text: the plan
/// `fused_program` holds, without building the fused program, which only an executor needs
/// (the editor asks for the plan after every edit).
#[salsa::tracked(returns(ref))]
fn located_plan_query(
    db: &dyn Db,
    file: SourceFile,
    options: Options,
) -> Result<FreedLater<FusionPlan>, Vec<Diagnostic>> {
    let flat = flat_program(db, file, options.flatten)?;
    let parts = (flat.functions.iter().enumerate()).map(|(index, f)| {
        let Some(part) = fused_function(db, file, options, index) else {
            return unranked_fusion(db, f, options).plan;
        };
        let mut plan = part.plan.clone();
        let ranks = positions::Ranks::of(f);
        plan.map_spans(|span| ranks.range(span));
        plan
    });
    let mut plan = fuse::assemble_plan(flat, options.fusion, parts);
    plan.locate(file.text(db));
    Ok(FreedLater::new(plan))
}

#[salsa::tracked(returns(ref))]
fn kernels_query(
    db: &dyn Db,
    file: SourceFile,
    options: Options,
) -> Result<FreedLater<Vec<ProgramKernel>>, Vec<Diagnostic>> {
    Ok(FreedLater::new(program_kernels(&fused_program(db, file, options)?.program)))
}

/// The passes `weft dev --after` can show.
pub const PASSES: &[&str] = &["parse", "hir", "types", "core", "ir"];

/// The program as it is after `pass`, as text.
pub fn dump_after(db: &dyn Db, file: SourceFile, pass: &str) -> Result<String, Vec<Diagnostic>> {
    match pass {
        "parse" => Ok(weft_syntax::debug_tree(&crate::parsed::parsed_file(db, file).syntax())),
        "hir" => {
            let mut out = String::new();
            for function in file_functions(db, file) {
                let _ = writeln!(out, "{:#?}", hir::function_hir(db, *function));
            }
            let _ = writeln!(out, "{:#?}", hir::top_level_hir(db, file));
            Ok(out)
        }
        "types" => Ok(types_summary(db, file)),
        "core" => core_program(db, file).map(|program| program.to_string()),
        "ir" => flat_program(db, file, flatten::Options::default()).map(|program| program.to_string()),
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
