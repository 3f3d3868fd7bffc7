//! `weft-session`: the boundary every front end runs programs through (`weft run`, the REPL,
//! the Jupyter kernel). A `Session` owns the database, the device and the interruption flag;
//! it decides the backend, runs a file's statements or one entry function on any executor, and
//! reports what happened as `Event`s that front ends render.
//!
//! **Architecture Invariant:** a session does no terminal or protocol IO. Programs print
//! through events; the only files it reads are the ones a program loads (`load_npy`,
//! `load_csv`), relative to the session's directory.

mod backend;
mod device;
pub mod engine;
pub mod figure;
mod preview;
mod render;
mod run;
mod value;

use std::path::PathBuf;

use rowan::TextRange;
use weft_analysis::pipeline;
use weft_analysis::{Database, SourceFile};
use weft_exec::interp::Host;
use weft_exec::{cpu, interp};
use weft_gpu::runtime::Gpu;
use weft_syntax::{Code, Diagnostic};

use crate::value::Repr;

pub use backend::{Backend, default_backend};
pub use device::DeviceSlot;
pub use preview::Table;
pub use render::profile_text;
pub use run::{RunError, RunReport, run_file, run_program};
pub use value::SessionValue;
pub use weft_analysis::pipeline::Options;
pub use weft_exec::Interrupt;
pub use weft_exec::chart::Chart;
pub use weft_gpu::runtime::adapter_summaries;

/// Which function of a program a session runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entry {
    /// The top-level statements (a cell's statement takes and returns values so).
    Main,
    /// A function of the core program.
    Function(weft_core::FuncId),
}

/// What `Session::invoke` gives: the result, the GPU executor's report for a GPU run, and the
/// time spent moving host arguments to the device (`:time`).
pub(crate) struct Invoked {
    pub value: SessionValue,
    pub report: Option<weft_gpu::Report>,
    pub upload: std::time::Duration,
}

/// What a run tells its front end, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// Text the program printed: one line, with its newline.
    Printed(String),
    /// A chart the program drew (`plot`, `hist`, `image`); `figure::render` draws it.
    Chart(Chart),
    /// Which executor runs the program and why, when it is not the one a user would expect.
    Notice(String),
    /// A value, as it prints, with its type (`[[f32]]`) and, for a sequence, its shape: its
    /// length and the lengths one level down (`3 × 4`, or `3 × 0..5` where they differ); a
    /// sequence also as a table.
    Value { text: String, ty: String, shape: Option<String>, table: Option<Table> },
    /// A diagnostic (a compile error, a warning, the error a run stopped with), against the
    /// source it is about: its name (`cell[4]`) and text, for rendering.
    Diagnostic { diagnostic: Diagnostic, source: String, text: String },
    /// What a GPU run did, as `profile_text` renders it.
    Profile(String),
}

/// A front end's handle on the compiler and the executors.
pub struct Session {
    db: Database,
    device: DeviceSlot,
    interrupt: Interrupt,
    /// Where programs load their data files from.
    directory: PathBuf,
}

impl Default for Session {
    fn default() -> Session {
        Session::new(DeviceSlot::default())
    }
}

impl Session {
    pub fn new(device: DeviceSlot) -> Session {
        Session {
            db: Database::default(),
            device,
            interrupt: Interrupt::default(),
            directory: PathBuf::new(),
        }
    }

    /// A session over `db` (say, one that logs the queries it executes).
    pub fn with_database(db: Database, device: DeviceSlot) -> Session {
        Session { db, ..Session::new(device) }
    }

    pub fn db(&self) -> &Database {
        &self.db
    }

    pub fn db_mut(&mut self) -> &mut Database {
        &mut self.db
    }

    /// Programs read their data files relative to `directory` (the working directory when
    /// empty).
    pub fn set_directory(&mut self, directory: PathBuf) {
        self.directory = directory;
    }

    /// The flag that stops a run: another thread (a Ctrl-C handler, a notebook's interrupt
    /// request) sets it, and the run stops at the next statement, call or loop step with
    /// E0410. Each run clears it first.
    pub fn interrupt(&self) -> Interrupt {
        self.interrupt.clone()
    }

    pub fn device(&mut self) -> &mut DeviceSlot {
        &mut self.device
    }

    /// A source for the session's database.
    pub fn source(&self, path: impl Into<String>, text: impl Into<String>) -> SourceFile {
        SourceFile::new(&self.db, path.into(), text.into())
    }

    /// Runs `file`'s top-level statements on `backend` (the default policy's choice when
    /// `None`), sending what it prints and reports to `events`.
    pub fn run(
        &mut self,
        file: SourceFile,
        backend: Option<Backend>,
        options: Options,
        profile: bool,
        events: &mut (dyn FnMut(Event) + Send),
    ) -> Result<RunReport, RunError> {
        self.interrupt.clear();
        let backend = match backend {
            Some(backend) => backend,
            None => {
                let (backend, notice) = default_backend(&self.db, file, &mut self.device);
                if let Some(notice) = notice {
                    events(Event::Notice(notice));
                }
                backend
            }
        };
        let gpu = match backend {
            Backend::Gpu => Some(self.device.get().map_err(|e| RunError::NoDevice(e.0))?),
            _ => None,
        };
        let mut host = EventHost { events, interrupt: self.interrupt.clone(), directory: &self.directory };
        let report = run_program(&self.db, file, backend, options, gpu.as_deref(), profile, &mut host)?;
        if let (true, Some(gpu), Some(report)) = (profile, &gpu, report.gpu()) {
            let text = profile_text(report, Some(&gpu.describe()), file.text(&self.db));
            (host.events)(Event::Profile(text));
        }
        Ok(report)
    }
}

impl Session {
    /// Calls the top-level function `entry` of `file` with `args` on `backend` and gives its
    /// result, kept where that executor keeps values (a GPU call's arrays stay on the device).
    /// The function must have a specialisation at the arguments' types, that is, the file's
    /// own code must call it with such arguments.
    pub fn call(
        &mut self,
        file: SourceFile,
        entry: &str,
        args: Vec<SessionValue>,
        backend: Backend,
        options: Options,
        events: &mut (dyn FnMut(Event) + Send),
    ) -> Result<SessionValue, RunError> {
        self.interrupt.clear();
        let core = pipeline::core_program(&self.db, file).map_err(RunError::Compile)?;
        let types: Vec<_> = args.iter().map(|a| a.ty.clone()).collect();
        let specialised = |f: &weft_core::Function| {
            let name = f.name.strip_prefix(entry);
            name.is_some_and(|rest| rest.is_empty() || rest.starts_with('['))
                && f.params.iter().map(|&p| &f.vars[p as usize].ty).eq(types.iter())
        };
        let Some(func) = core.functions.iter().position(specialised) else {
            let shown: Vec<String> = types.iter().map(ToString::to_string).collect();
            let why = format!("no function `{entry}` takes ({})", shown.join(", "));
            let help = "a function is compiled for the argument types the file itself calls it with";
            return Err(RunError::Runtime(
                Diagnostic::new(Code::InvalidArgument, TextRange::default(), why).with_help(help),
            ));
        };
        self.invoke((file, Entry::Function(func as u32)), args, (backend, options), false, events)
            .map(|invoked| invoked.value)
    }

    /// Runs `entry` of `file`'s program with `args` on `backend` and gives its result, with the
    /// GPU executor's report for a GPU run (timing every kernel when `profile`). Arguments are
    /// moved to where the executor needs them; a device value already there is not copied.
    pub(crate) fn invoke(
        &mut self,
        (file, entry): (SourceFile, Entry),
        args: Vec<SessionValue>,
        (backend, options): (Backend, Options),
        profile: bool,
        events: &mut (dyn FnMut(Event) + Send),
    ) -> Result<Invoked, RunError> {
        let core = pipeline::core_program(&self.db, file).map_err(RunError::Compile)?;
        let mut upload = std::time::Duration::ZERO;
        let ret = match entry {
            Entry::Main => core.main.ret.clone(),
            Entry::Function(func) => core.functions[func as usize].ret.clone(),
        };
        fn fused(
            db: &Database,
            file: SourceFile,
            entry: Entry,
            options: Options,
        ) -> Result<&pipeline::Fused, RunError> {
            match entry {
                Entry::Main => pipeline::fused_program(db, file, options),
                Entry::Function(func) => pipeline::entry_program(db, file, func, options),
            }
            .map_err(RunError::Compile)
        }
        let mut host = EventHost { events, interrupt: self.interrupt.clone(), directory: &self.directory };
        let (repr, report) = match backend {
            Backend::Interp => {
                let args = args.iter().map(|a| self.nested(a)).collect::<Result<Vec<_>, _>>()?;
                let result = match entry {
                    Entry::Main => interp::run_main(core, args, &mut host),
                    Entry::Function(func) => interp::call(core, func, args, &mut host),
                };
                (Repr::Nested(result.map_err(RunError::Runtime)?), None)
            }
            Backend::Cpu => {
                let program = &fused(&self.db, file, entry, options)?.program;
                let mut vars = Vec::new();
                for arg in &args {
                    vars.extend(self.flat(arg)?);
                }
                let mut counters = cpu::Counters::default();
                let results = cpu::call(program, program.main, vars, &mut host, &mut counters)
                    .map_err(RunError::Runtime)?;
                (Repr::Flat(results), None)
            }
            Backend::Gpu => {
                let gpu = self.device.get().map_err(|e| RunError::NoDevice(e.0))?;
                let options = options.for_gpu(gpu.limits.max_storage_buffers_per_shader_stage);
                let program = &fused(&self.db, file, entry, options)?.program;
                let mut vars = Vec::new();
                let uploading = std::time::Instant::now();
                for arg in &args {
                    match &arg.repr {
                        Repr::Device(values) => vars.extend(values.iter().cloned()),
                        _ => {
                            for value in self.flat(arg)? {
                                vars.push(weft_gpu::upload(&gpu, value).map_err(RunError::Runtime)?);
                            }
                        }
                    }
                }
                upload = uploading.elapsed();
                let (results, report) =
                    weft_gpu::call_reported(&gpu, program, program.main, vars, &mut host, profile)
                        .map_err(RunError::Runtime)?;
                (Repr::Device(results), Some(report))
            }
        };
        Ok(Invoked { value: SessionValue { ty: ret, repr }, report, upload })
    }

    /// The value as the interpreter represents it, read back from the device if it is there.
    pub fn nested(&self, value: &SessionValue) -> Result<interp::NestedValue, RunError> {
        match &value.repr {
            Repr::Nested(nested) => Ok(nested.clone()),
            _ => {
                let vars = self.flat(value)?;
                cpu::try_vars_to_value(&value.ty, &vars).map_err(|why| RunError::Runtime(internal(why)))
            }
        }
    }

    /// The value as it prints (`print`'s text, without the newline).
    pub fn display(&self, value: &SessionValue) -> Result<String, RunError> {
        Ok(interp::print::format_value(&self.nested(value)?))
    }

    /// The event that shows a value: its whole text, type and shape, and a table of as many
    /// items a level as the engine shows.
    pub fn describe(&self, value: &SessionValue) -> Result<Event, RunError> {
        let nested = self.nested(value)?;
        Ok(Event::Value {
            text: interp::print::format_value(&nested),
            ty: value.ty.to_string(),
            shape: shape_text(&nested),
            table: self.preview(value)?.table(engine::SHOWN_ITEMS).map_err(RunError::Runtime)?,
        })
    }

    /// The value's flat variables on the host.
    fn flat(&self, value: &SessionValue) -> Result<Vec<cpu::FlatValue>, RunError> {
        match &value.repr {
            Repr::Nested(nested) => Ok(cpu::value_to_vars(&value.ty, nested)),
            Repr::Flat(vars) => Ok(vars.clone()),
            Repr::Device(values) => {
                let gpu = self.device_of_values()?;
                values.iter().map(|v| weft_gpu::download(&gpu, v).map_err(RunError::Runtime)).collect()
            }
        }
    }

    /// The value, ready to be shown (`preview`): a device value's descriptors read back, a
    /// host value as it is.
    pub(crate) fn preview(&self, value: &SessionValue) -> Result<preview::Preview, RunError> {
        match &value.repr {
            Repr::Device(vars) => {
                preview::Preview::read(self.device_of_values()?, &value.ty, vars).map_err(RunError::Runtime)
            }
            Repr::Flat(vars) => Ok(preview::Preview::host(&value.ty, vars)),
            Repr::Nested(nested) => {
                Ok(preview::Preview::host(&value.ty, &cpu::value_to_vars(&value.ty, nested)))
            }
        }
    }

    /// The device that holds the session's device values.
    fn device_of_values(&self) -> Result<std::sync::Arc<Gpu>, RunError> {
        self.device.current().cloned().ok_or_else(|| {
            RunError::NoDevice("the device that held this value is gone; compute it again".to_string())
        })
    }
}

/// A sequence's length, and the lengths of its items when they are sequences: `3`, `3 × 4`,
/// `3 × 0..5`; `None` for anything else.
pub(crate) fn shape_text(value: &interp::NestedValue) -> Option<String> {
    let interp::NestedValue::Seq(seq) = value else { return None };
    let rows: Vec<usize> = (0..seq.len())
        .map_while(|i| match seq.get(i) {
            interp::NestedValue::Seq(item) => Some(item.len()),
            _ => None,
        })
        .collect();
    Some(shape_of_lengths(seq.len(), &rows))
}

/// The shape of a sequence of `outer` elements whose rows, if they are sequences, have the
/// lengths `rows`: `3`, `3 × 2`, or for rows of different lengths `3 × 1..4`.
pub(crate) fn shape_of_lengths(outer: usize, rows: &[usize]) -> String {
    match (rows.iter().min(), rows.iter().max()) {
        (Some(lo), Some(hi)) if rows.len() == outer && lo == hi => format!("{outer} × {lo}"),
        (Some(lo), Some(hi)) if rows.len() == outer => format!("{outer} × {lo}..{hi}"),
        _ => outer.to_string(),
    }
}

fn internal(why: String) -> Diagnostic {
    Diagnostic::new(Code::InternalError, TextRange::default(), format!("internal error: {why}"))
}

/// The host a session's runs see: prints become events, files are read from the session's
/// directory, and the session's flag interrupts.
struct EventHost<'a> {
    events: &'a mut (dyn FnMut(Event) + Send),
    interrupt: Interrupt,
    directory: &'a std::path::Path,
}

impl Host for EventHost<'_> {
    fn print(&mut self, line: &str) {
        (self.events)(Event::Printed(line.to_string()));
    }

    fn draw(&mut self, chart: Chart) {
        (self.events)(Event::Chart(chart));
    }

    fn read_file(&mut self, path: &str) -> std::io::Result<Vec<u8>> {
        std::fs::read(self.directory.join(path))
    }

    fn interrupt(&self) -> Interrupt {
        self.interrupt.clone()
    }
}
