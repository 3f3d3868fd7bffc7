//! The session engine the REPL and the notebook kernel share: a sequence of cells over one
//! `Session`.
//!
//! A cell is a piece of top-level Weft. Its `def`s join the session's definitions (a new `def f`
//! replaces the old one for every later call: late binding); its other statements run one at a
//! time, each compiled as a program of its own:
//!
//! ```text
//! def helper(x): ...                   # the definitions the statement mentions, transitively
//! xs = __session_input__("xs")         # one line per earlier value it reads
//! <the statement, from the cell>       # an expression statement becomes `__result__ = (...)`
//! ```
//!
//! The program's main takes the earlier values as parameters (`CellInterface::inputs`; a GPU
//! value passes as the device buffers it already is) and returns the names the statement binds
//! (`CellInterface::outputs`). So a statement costs what it and the definitions it uses cost,
//! whatever came before; earlier cells are never run again; and a run-time error keeps what the
//! cell's earlier statements bound. Every diagnostic is mapped back to the cell it came from.

pub mod command;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use rowan::{TextRange, TextSize};
use weft_analysis::db::{CellInput, CellInterface, SESSION_INPUT};
use weft_analysis::pipeline::{self, Options};
use weft_analysis::{SourceFile, hir};
use weft_core::types::Type;
use weft_exec::interp::NestedValue;
use weft_flat::fuse::plan::Place;
use weft_syntax::SyntaxKind::{self, *};
use weft_syntax::ast::{self, AstNode};
use weft_syntax::{Code, Diagnostic, Severity};

use crate::value::{Repr, SessionValue};
use crate::{Backend, Entry, Event, RunError, Session};

/// The name the value of a cell's final expression is bound to, then shown and kept as `_`.
const RESULT: &str = "__result__";

/// A session of cells.
pub struct Engine {
    session: Session,
    /// `None`: the default policy chooses per statement (`default_backend`).
    backend: Option<Backend>,
    options: Options,
    /// Every source the engine compiled, by id less one: each cell, and each expression a
    /// command asked about, with the name diagnostics show (`cell[4]`, `:type`).
    cells: Vec<(String, String)>,
    /// How many cells have been run (commands' expressions are not cells).
    numbered: usize,
    /// The live definitions, by name: the last `def` of each.
    defs: BTreeMap<String, Def>,
    /// The top-level values, by name.
    globals: BTreeMap<String, Global>,
    /// The file every statement compiles in; its text is replaced each time, so the database
    /// holds one statement's work, not the whole history.
    scratch: SourceFile,
    /// For each definition, the last statement program that ran it: what `:fusion NAME` shows.
    last_use: BTreeMap<String, (usize, std::sync::Arc<Program>)>,
    /// Notices already shown (each once a session).
    notices: BTreeSet<String>,
    /// Definitions' schemes as `hint` found them, until a `def` changes what they mean.
    schemes: BTreeMap<String, Option<String>>,
    /// How many items of a sequence a shown value keeps at each level.
    pub shown_items: usize,
    /// The file the `load` command read last, for `reload`.
    loaded: Option<std::path::PathBuf>,
}

#[derive(Debug, Clone)]
struct Def {
    cell: usize,
    /// Where the `def` starts in its cell.
    offset: TextSize,
    text: String,
    /// Why it no longer type-checks, after a definition it uses changed (against its cell):
    /// it cannot be used until fixed.
    broken: Vec<Diagnostic>,
}

#[derive(Debug, Clone)]
struct Global {
    value: SessionValue,
    cell: usize,
    /// `value.known_lengths()`, kept: later cells' shape analysis takes them as facts.
    lengths: Vec<u64>,
}

impl Global {
    fn new(value: SessionValue, cell: usize) -> Global {
        let lengths = value.known_lengths();
        Global { value, cell, lengths }
    }

    /// How a statement that reads it sees it.
    fn input(&self, name: &str) -> CellInput {
        CellInput { name: name.to_string(), ty: self.value.ty.clone(), lengths: self.lengths.clone() }
    }
}

/// One name of `:vars`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VarInfo {
    pub name: String,
    /// The type, with the lengths of the value (`[f32; 1000]`).
    pub ty: String,
    pub shape: Option<String>,
    pub on_device: bool,
    pub bytes: u64,
    pub cell: usize,
}

/// How long the parts of `:time` took.
#[derive(Debug, Clone, Copy, Default)]
pub struct Timing {
    pub compile: Duration,
    /// Moving host values to the device for a GPU run.
    pub upload: Duration,
    /// Running (launches and waiting for the device included), uploads excluded.
    pub run: Duration,
    /// Reading the result back and formatting it.
    pub download: Duration,
    pub bytes_uploaded: u64,
    pub bytes_read_back: u64,
    pub launches: u64,
}

/// What a piece of a statement's program text is.
#[derive(Debug, Clone)]
enum Origin {
    /// Text of cell `cell` (1-based), starting at `offset` in it.
    Cell { cell: usize, offset: TextSize },
    /// A definition from an earlier cell.
    Def { name: String, cell: usize, offset: TextSize },
    /// Text the engine wrote.
    Synthetic,
}

/// A statement's program: its text, where each piece came from, and its interface.
#[derive(Debug, Clone, Default)]
struct Program {
    text: String,
    pieces: Vec<(TextRange, Origin)>,
    interface: CellInterface,
}

impl Program {
    fn push(&mut self, text: &str, origin: Origin) {
        let start = TextSize::of(self.text.as_str());
        self.text.push_str(text);
        self.pieces.push((TextRange::at(start, TextSize::of(text)), origin));
    }
}

impl Engine {
    pub fn new(session: Session, backend: Option<Backend>, options: Options) -> Engine {
        let scratch = session.source("cell", "");
        Engine {
            session,
            backend,
            options,
            cells: Vec::new(),
            numbered: 0,
            defs: BTreeMap::new(),
            globals: BTreeMap::new(),
            last_use: BTreeMap::new(),
            scratch,
            notices: BTreeSet::new(),
            schemes: BTreeMap::new(),
            shown_items: SHOWN_ITEMS,
            loaded: None,
        }
    }

    /// The flag that stops the running cell (a Ctrl-C handler, a kernel's interrupt request).
    pub fn interrupt(&self) -> crate::Interrupt {
        self.session.interrupt()
    }

    pub fn session(&mut self) -> &mut Session {
        &mut self.session
    }

    pub fn backend(&self) -> Option<Backend> {
        self.backend
    }

    pub fn set_backend(&mut self, backend: Option<Backend>) {
        self.backend = backend;
    }

    /// The number the next cell gets.
    pub fn next_cell(&self) -> usize {
        self.numbered + 1
    }

    /// Numbers the next cell `n`: a notebook's execution count, which inputs run without history
    /// do not advance, so that `cell[N]` in a diagnostic is the notebook's `In [N]`.
    pub fn number_next_cell(&mut self, n: usize) {
        self.numbered = n.saturating_sub(1);
    }

    /// Stores a source; gives its id.
    fn add_source(&mut self, name: String, text: &str) -> usize {
        self.cells.push((name, text.to_string()));
        self.cells.len()
    }

    /// How a message names a source: `cell 5`, or the command's name.
    fn label_of(&self, id: usize) -> String {
        let name = self.source_of(id).0;
        match name.strip_prefix("cell[").and_then(|rest| rest.strip_suffix(']')) {
            Some(number) => format!("cell {number}"),
            None => name,
        }
    }

    /// Where a span of a statement's program was written: its range, line and column in that
    /// source, and the source's name when it is not `cell` (a definition from another cell).
    fn place(&self, program: &Program, cell: usize, range: TextRange) -> Place {
        let (origin, range) = self.locate(program, cell, range);
        let (name, text) = self.source_of(origin);
        let lc = weft_syntax::line_index::LineIndex::new(&text).line_col(range.start());
        Place { range, line: lc.line + 1, col: lc.col + 1, source: (origin != cell).then_some(name) }
    }

    /// An expression statement whose value a REPL shows: not a `print` or a chart (a prelude
    /// one: a session's own `def image` gives a value), which give nothing.
    fn is_shown_expression(&self, node: &weft_syntax::SyntaxNode) -> bool {
        let Some(statement) = ast::ExprStmt::cast(node.clone()) else { return false };
        let callee = statement.expr().and_then(|e| e.as_call()?.callee()?.as_name_ref().map(|n| n.text()));
        !callee.is_some_and(|name| match weft_core::Sink::from_name(&name) {
            Some(weft_core::Sink::Text) => true,
            Some(_) => !self.defs.contains_key(&name),
            None => false,
        })
    }

    /// A source's name and text.
    fn source_of(&self, id: usize) -> (String, String) {
        id.checked_sub(1).and_then(|i| self.cells.get(i)).cloned().unwrap_or_default()
    }

    /// The source name of cell `n`, as diagnostics show it.
    pub fn cell_name(n: usize) -> String {
        format!("cell[{n}]")
    }

    /// Forgets every definition and value.
    pub fn reset(&mut self) {
        self.defs.clear();
        self.globals.clear();
        self.last_use.clear();
        self.schemes.clear();
    }

    /// Runs a cell; says whether it ran to the end. Whatever happens, the session stays usable:
    /// a cell that does not compile changes nothing, and one that stops keeps what its earlier
    /// statements bound.
    pub fn run_cell(&mut self, text: &str, events: &mut (dyn FnMut(Event) + Send)) -> bool {
        self.run_cell_timed(text, false, events).is_some()
    }

    /// `run_cell`, with the time each part took (`:time`), profiling the GPU's kernels when
    /// `profile` (`:profile`). `None` when the cell failed.
    pub fn run_cell_timed(
        &mut self,
        text: &str,
        profile: bool,
        events: &mut (dyn FnMut(Event) + Send),
    ) -> Option<Timing> {
        self.numbered += 1;
        let cell = self.add_source(Engine::cell_name(self.numbered), text);
        // A request to stop made while this cell compiles or between its statements counts.
        self.session.interrupt.clear();
        let mut timing = Timing::default();
        let started = Instant::now();
        let parse = weft_syntax::parse(text);
        let statements: Vec<weft_syntax::SyntaxNode> = parse.syntax().children().collect();
        let redefined: BTreeSet<String> = statements.iter().filter_map(def_name).collect();
        // The whole cell is checked first: a cell that does not compile changes nothing.
        let whole: Vec<(TextSize, String)> = vec![(TextSize::from(0), text.to_string())];
        let check = self.program(cell, &whole, &redefined, false, &cell_fresh_bindings(&statements));
        // A definition an earlier redefinition broke stays unusable until fixed.
        let broken: Vec<(usize, Diagnostic)> = check
            .pieces
            .iter()
            .filter_map(|(_, origin)| match origin {
                Origin::Def { name, .. } => self.defs.get(name),
                _ => None,
            })
            .flat_map(|def| def.broken.iter().map(|d| (def.cell, d.clone())))
            .collect();
        if !broken.is_empty() {
            for (def_cell, diagnostic) in broken {
                let (source, text) = self.source_of(def_cell);
                events(Event::Diagnostic { diagnostic, source, text });
            }
            return None;
        }
        self.load(&check);
        let diagnostics = weft_analysis::file_diagnostics(self.session.db(), self.scratch);
        let failed = diagnostics.iter().any(|d| d.severity == Severity::Error);
        for d in diagnostics.iter().cloned() {
            // A warning about an earlier cell's definition was shown with that cell.
            let here = matches!(self.origin(&check, d.range), Some(Origin::Cell { .. }));
            if here || d.severity == Severity::Error {
                self.emit(&check, cell, d, None, events);
            }
        }
        timing.compile += started.elapsed();
        if failed {
            return None;
        }
        let last = statements.len().saturating_sub(1);
        for (index, statement) in statements.iter().enumerate() {
            if statement.kind() == FUNCTION_DEF {
                self.define(cell, statement, events);
                continue;
            }
            if self.session.interrupt.is_requested() {
                let d = weft_exec::interrupted(statement.text_range());
                let (source, text) = self.source_of(cell);
                events(Event::Diagnostic { diagnostic: d, source, text });
                return None;
            }
            let show = index == last && self.is_shown_expression(statement);
            match self.run_statement(cell, statement, show, profile, &mut timing, events) {
                Ok(()) => {}
                Err(()) => return None,
            }
        }
        Some(timing)
    }

    /// Records a `def` and names the earlier definitions it breaks.
    fn define(
        &mut self,
        cell: usize,
        statement: &weft_syntax::SyntaxNode,
        events: &mut (dyn FnMut(Event) + Send),
    ) {
        let Some(name) = def_name(statement) else { return };
        let text = statement.text().to_string();
        let offset = statement.text_range().start();
        self.defs.insert(name.clone(), Def { cell, offset, text, broken: Vec::new() });
        // A new definition can change any scheme that reaches it.
        self.schemes.clear();
        // Every definition that reads the new one, directly or not, must still type-check.
        let dependants: Vec<String> = self
            .defs
            .iter()
            .filter(|(other, def)| **other != name && self.reaches(&def.text, &name))
            .map(|(other, _)| other.clone())
            .collect();
        for dependant in dependants {
            let def = self.defs[&dependant].clone();
            let pieces = vec![(def.offset, def.text.clone())];
            let own = BTreeSet::from([dependant.clone()]);
            let program = self.program(def.cell, &pieces, &own, false, &BTreeSet::new());
            self.load(&program);
            let diagnostics = weft_analysis::file_diagnostics(self.session.db(), self.scratch);
            let mut broken = Vec::new();
            // An error in another definition it uses is that definition's own report.
            let own = |d: &&Diagnostic| matches!(self.origin(&program, d.range), Some(Origin::Cell { .. }));
            for d in diagnostics.iter().filter(|d| d.severity == Severity::Error).filter(own).cloned() {
                let why = format!("`{dependant}` ({}) no longer type-checks", self.label_of(def.cell));
                let d = Diagnostic { message: format!("{why}: {}", d.message), ..d };
                let d =
                    d.with_help(format!("redefine `{dependant}`, or `{name}` as it was, to use it again"));
                let (def_cell, d) = self.map(&program, def.cell, d, None, false);
                let (source, text) = self.source_of(def_cell);
                events(Event::Diagnostic { diagnostic: d.clone(), source, text });
                broken.push(d);
            }
            if let Some(def) = self.defs.get_mut(&dependant) {
                def.broken = broken;
            }
        }
    }

    /// Whether the text of a definition reaches `name` through the definitions it mentions.
    fn reaches(&self, text: &str, name: &str) -> bool {
        let mut seen = BTreeSet::new();
        let mut pending = vec![text.to_string()];
        while let Some(text) = pending.pop() {
            for ident in identifiers(&text) {
                if ident == name {
                    return true;
                }
                if let Some(def) = self.defs.get(&ident)
                    && seen.insert(ident)
                {
                    pending.push(def.text.clone());
                }
            }
        }
        false
    }

    /// Runs one statement and binds what it bound; emits the diagnostic it stopped with.
    fn run_statement(
        &mut self,
        cell: usize,
        statement: &weft_syntax::SyntaxNode,
        show: bool,
        profile: bool,
        timing: &mut Timing,
        events: &mut (dyn FnMut(Event) + Send),
    ) -> Result<(), ()> {
        let started = Instant::now();
        let range = statement.text_range();
        let text = statement.text().to_string();
        let mut bound = hir::statement_bindings(statement).into_iter().map(|(n, _)| n).collect::<Vec<_>>();
        bound.sort();
        bound.dedup();
        if show {
            bound.push(RESULT.to_string());
        }
        let fresh = fresh_bindings(statement);
        let mut program = self.program(cell, &[(range.start(), text)], &BTreeSet::new(), show, &fresh);
        program.interface.outputs.clone_from(&bound);
        timing.compile += started.elapsed();
        let statement_number = self.statement_number(cell, range);
        let outputs = self.execute(cell, &program, statement_number, profile, timing, events)?;
        let shared = std::sync::Arc::new(program.clone());
        for (_, origin) in &program.pieces {
            if let Origin::Def { name, .. } = origin {
                self.last_use.insert(name.clone(), (cell, shared.clone()));
            }
        }
        let started = Instant::now();
        for (name, value) in outputs {
            if name == RESULT {
                match self.describe(&value) {
                    Ok(event) => events(event),
                    Err(RunError::Runtime(d)) => self.emit(&program, cell, d, None, events),
                    Err(_) => {}
                }
                self.globals.insert("_".to_string(), Global::new(value, cell));
            } else {
                self.globals.insert(name, Global::new(value, cell));
            }
        }
        timing.download += started.elapsed();
        Ok(())
    }

    /// Computes `expr` without binding anything: `:time`, `:shape` and `:profile`.
    pub fn evaluate(
        &mut self,
        command: &str,
        expr: &str,
        profile: bool,
        events: &mut (dyn FnMut(Event) + Send),
    ) -> Option<(Option<SessionValue>, Timing)> {
        let mut timing = Timing::default();
        let started = Instant::now();
        self.session.interrupt.clear();
        let (cell, program) = self.expression_program(command, expr);
        timing.compile += started.elapsed();
        let outputs = self.execute(cell, &program, 1, profile, &mut timing, events).ok()?;
        let value = outputs.into_iter().find(|(name, _)| name == RESULT).map(|(_, value)| value);
        Some((value, timing))
    }

    /// Compiles and runs a statement's program; gives the values of its outputs that were
    /// bound (a function, or a name a path left unbound, is not a value to keep).
    fn execute(
        &mut self,
        cell: usize,
        program: &Program,
        statement_number: usize,
        profile: bool,
        timing: &mut Timing,
        events: &mut (dyn FnMut(Event) + Send),
    ) -> Result<Vec<(String, SessionValue)>, ()> {
        let started = Instant::now();
        self.load(program);
        let file = self.scratch;
        let backend = match self.backend {
            Some(backend) => backend,
            None => {
                let (backend, notice) =
                    crate::default_backend(&self.session.db, file, &mut self.session.device);
                if let Some(notice) = notice
                    && self.notices.insert(notice.clone())
                {
                    events(Event::Notice(notice));
                }
                backend
            }
        };
        let args: Vec<SessionValue> =
            program.interface.inputs.iter().map(|input| self.globals[&input.name].value.clone()).collect();
        // Compiling is the pipeline's queries; running them first times it apart from the run.
        let compiled = self.compile(file, backend);
        timing.compile += started.elapsed();
        let device_before = self.session.device.current().map(|gpu| gpu.stats());
        let started = Instant::now();
        let outcome = compiled.and_then(|()| {
            self.session.invoke((file, Entry::Main), args, (backend, self.options), profile, events)
        });
        let upload = outcome.as_ref().map_or(Duration::ZERO, |invoked| invoked.upload);
        timing.upload += upload;
        timing.run += started.elapsed().saturating_sub(upload);
        if let (Some(before), Some(gpu)) = (device_before, self.session.device.current()) {
            let after = gpu.stats();
            timing.bytes_uploaded += after.bytes_uploaded.saturating_sub(before.bytes_uploaded);
            timing.bytes_read_back += after.bytes_read_back.saturating_sub(before.bytes_read_back);
        }
        let (result, report) = match outcome {
            Ok(invoked) => (invoked.value, invoked.report),
            Err(error) => {
                let diagnostics = match error {
                    RunError::Compile(diagnostics) => diagnostics,
                    RunError::Runtime(diagnostic) => vec![diagnostic],
                    RunError::NoDevice(why) => {
                        vec![Diagnostic::new(Code::InternalError, TextRange::default(), why)]
                    }
                };
                for d in diagnostics {
                    let note = (d.severity == Severity::Error && statement_number > 1).then(|| {
                        format!(
                            "statement {statement_number} of cell {cell} stopped; the statements before it kept what they bound"
                        )
                    });
                    self.emit(program, cell, d, note, events);
                }
                return Err(());
            }
        };
        if let Some(report) = &report {
            timing.launches += report.stats.launches;
            if profile {
                events(Event::Profile(crate::profile_text(report, None, &program.text)));
            }
        }
        let values = self.split(result);
        Ok(program
            .interface
            .outputs
            .iter()
            .cloned()
            .zip(values)
            .filter(|(_, value)| value.ty != Type::Tuple(vec![]))
            .collect())
    }

    /// Runs the pipeline for `backend` (so that the run that follows only runs).
    fn compile(&mut self, file: SourceFile, backend: Backend) -> Result<(), RunError> {
        let db = self.session.db();
        match backend {
            Backend::Interp => pipeline::core_program(db, file).map(|_| ()),
            Backend::Cpu => pipeline::fused_program(db, file, self.options).map(|_| ()),
            Backend::Gpu => {
                let gpu = self.session.device.get().map_err(|e| RunError::NoDevice(e.0))?;
                let options = self.options.for_gpu(gpu.limits.max_storage_buffers_per_shader_stage);
                pipeline::fused_program(self.session.db(), file, options).map(|_| ())
            }
        }
        .map_err(RunError::Compile)
    }

    /// The statement's position in its cell (1-based).
    fn statement_number(&self, cell: usize, range: TextRange) -> usize {
        let parse = weft_syntax::parse(&self.source_of(cell).1);
        parse.syntax().children().take_while(|s| s.text_range().start() < range.start()).count() + 1
    }

    /// A main's tuple result as one value per output.
    fn split(&self, result: SessionValue) -> Vec<SessionValue> {
        let Type::Tuple(types) = &result.ty else { return Vec::new() };
        match result.repr {
            Repr::Nested(NestedValue::Tuple(items)) => types
                .iter()
                .zip(items.iter())
                .map(|(ty, item)| SessionValue { ty: ty.clone(), repr: Repr::Nested(item.clone()) })
                .collect(),
            Repr::Flat(vars) => split_vars(types, vars)
                .map(|(ty, vars)| SessionValue { ty, repr: Repr::Flat(vars) })
                .collect(),
            Repr::Device(vars) => split_vars(types, vars)
                .map(|(ty, vars)| SessionValue { ty, repr: Repr::Device(vars) })
                .collect(),
            Repr::Nested(_) => Vec::new(),
        }
    }

    /// Builds the program of `pieces` of cell `cell`: the definitions they mention (but those in
    /// `skip`), then an input line per earlier value they read (but the names in `fresh`, which
    /// the statement binds before reading), then the pieces.
    fn program(
        &self,
        cell: usize,
        pieces: &[(TextSize, String)],
        skip: &BTreeSet<String>,
        wrapped: bool,
        fresh: &BTreeSet<String>,
    ) -> Program {
        let mut mentioned: BTreeSet<String> = BTreeSet::new();
        let mut defs: BTreeSet<String> = BTreeSet::new();
        let mut pending: Vec<String> = pieces.iter().map(|(_, text)| text.clone()).collect();
        while let Some(text) = pending.pop() {
            for ident in identifiers(&text) {
                if let Some(def) = self.defs.get(&ident)
                    && !skip.contains(&ident)
                    && defs.insert(ident.clone())
                {
                    pending.push(def.text.clone());
                }
                mentioned.insert(ident);
            }
        }
        let mut program = Program::default();
        // In cell order, as the user wrote them.
        let mut ordered: Vec<(&String, &Def)> = defs.iter().map(|name| (name, &self.defs[name])).collect();
        ordered.sort_by_key(|(_, def)| (def.cell, def.offset));
        for (name, def) in ordered {
            program.push(&def.text, Origin::Def { name: name.clone(), cell: def.cell, offset: def.offset });
            program.push("\n", Origin::Synthetic);
        }
        for name in &mentioned {
            if let Some(global) = self.globals.get(name)
                && !fresh.contains(name)
            {
                program.push(&format!("{name} = {SESSION_INPUT}(\"{name}\")\n"), Origin::Synthetic);
                program.interface.inputs.push(global.input(name));
            }
        }
        for (offset, text) in pieces {
            if wrapped {
                program.push(&format!("{RESULT} = (\n"), Origin::Synthetic);
                program.push(text, Origin::Cell { cell, offset: *offset });
                program.push("\n)\n", Origin::Synthetic);
            } else {
                program.push(text, Origin::Cell { cell, offset: *offset });
                program.push("\n", Origin::Synthetic);
            }
        }
        program
    }

    fn load(&mut self, program: &Program) {
        use salsa::Setter;
        let db = self.session.db_mut();
        self.scratch.set_text(db).to(program.text.clone());
        self.scratch.set_interface(db).to(program.interface.clone());
    }

    /// Sends `d` (reported against `program`'s text) as an event against the cell it came from.
    fn emit(
        &self,
        program: &Program,
        cell: usize,
        d: Diagnostic,
        note: Option<String>,
        events: &mut (dyn FnMut(Event) + Send),
    ) {
        let compile_time = d.code != Code::Interrupted && !d.code.as_str().starts_with("E04");
        let (origin_cell, diagnostic) = self.map(program, cell, d, note, compile_time);
        let (source, text) = self.source_of(origin_cell);
        events(Event::Diagnostic { diagnostic, source, text });
    }

    /// `d`, reported against `program`'s text, against the cell it came from instead. A
    /// compile-time error inside an earlier cell's definition says that definition no longer
    /// type-checks.
    fn map(
        &self,
        program: &Program,
        cell: usize,
        mut d: Diagnostic,
        note: Option<String>,
        compile_time: bool,
    ) -> (usize, Diagnostic) {
        let origin = self.origin(program, d.range);
        let (origin_cell, range) = self.locate(program, cell, d.range);
        d.range = range;
        if let Some(Origin::Def { name, cell: def_cell, .. }) = origin
            && def_cell != cell
            && compile_time
            && d.severity == Severity::Error
            && !d.message.contains("no longer type-checks")
        {
            d.message =
                format!("`{name}` ({}) no longer type-checks: {}", self.label_of(def_cell), d.message);
        }
        d.labels.retain_mut(|label| {
            let (label_cell, range) = self.locate(program, cell, label.range);
            label.range = range;
            label_cell == origin_cell
        });
        if let Some(note) = note {
            d.notes.push(note);
        }
        (origin_cell, d)
    }

    fn origin(&self, program: &Program, range: TextRange) -> Option<Origin> {
        program.pieces.iter().find(|(piece, _)| piece.contains_range(range)).map(|(_, origin)| origin.clone())
    }

    /// Which cell a range of `program`'s text lies in, and where in that cell. Engine-written
    /// text maps to the start of the statement (`cell`'s first piece).
    fn locate(&self, program: &Program, cell: usize, range: TextRange) -> (usize, TextRange) {
        let found = program.pieces.iter().find(|(piece, _)| piece.contains(range.start()) || *piece == range);
        match found.map(|(piece, origin)| (piece, origin)) {
            Some((piece, Origin::Cell { cell, offset } | Origin::Def { cell, offset, .. })) => {
                let start = range.start() - piece.start() + *offset;
                let len = range.len().min(piece.end() - range.start());
                (*cell, TextRange::at(start, len))
            }
            _ => {
                // Engine-written text before the cell's statement maps to its start; after it
                // (the closing bracket of `__result__ = (...)`), to its end.
                let own = program
                    .pieces
                    .iter()
                    .find(|(_, origin)| matches!(origin, Origin::Cell { cell: c, .. } if *c == cell));
                let at = match own {
                    Some((piece, Origin::Cell { offset, .. })) if range.start() >= piece.end() => {
                        *offset + piece.len()
                    }
                    Some((_, Origin::Cell { offset, .. })) => *offset,
                    _ => TextSize::default(),
                };
                (cell, TextRange::empty(at))
            }
        }
    }

    /// The event that shows a value: its text (shortened), its type with its lengths, its shape.
    /// Of a device value, only what the text needs is read back (`preview`).
    pub fn describe(&self, value: &SessionValue) -> Result<Event, RunError> {
        let preview = self.session.preview(value)?;
        let (text, table) = preview.text_and_table(self.shown_items).map_err(RunError::Runtime)?;
        Ok(Event::Value { text, ty: preview.sized_type(), shape: preview.shape(), table })
    }

    /// The value's type with its lengths, and its shape. A device value's come from its
    /// descriptors alone: none of its data is read back.
    pub fn shape_of(&self, value: &SessionValue) -> Result<(String, Option<String>), RunError> {
        let preview = self.session.preview(value)?;
        Ok((preview.sized_type(), preview.shape()))
    }

    /// Every top-level value, by name.
    pub fn vars(&self) -> Vec<VarInfo> {
        self.globals
            .iter()
            .map(|(name, global)| {
                let sized = self.shape_of(&global.value).ok();
                VarInfo {
                    name: name.clone(),
                    ty: sized.as_ref().map_or(global.value.ty.to_string(), |(ty, _)| ty.clone()),
                    shape: sized.and_then(|(_, shape)| shape),
                    on_device: global.value.is_on_device(),
                    bytes: global.value.bytes(),
                    cell: global.cell,
                }
            })
            .collect()
    }

    /// The live definitions' names, with the cell of each.
    pub fn definitions(&self) -> Vec<(String, usize)> {
        self.defs.iter().map(|(name, def)| (name.clone(), def.cell)).collect()
    }

    /// A top-level value by name.
    pub fn value(&self, name: &str) -> Option<&SessionValue> {
        self.globals.get(name).map(|g| &g.value)
    }

    /// What a name is, for a hint beside it as it is typed: a value's type with the lengths the
    /// session knows (`[f32; 3]`, nothing read back), a definition's scheme, a prelude
    /// function's signature. `None` for anything else. Runs nothing.
    pub fn hint(&mut self, name: &str) -> Option<String> {
        if let Some(global) = self.globals.get(name) {
            return Some(type_with_lengths(&global.value.ty, &global.lengths));
        }
        if self.defs.contains_key(name) {
            if let Some(scheme) = self.schemes.get(name) {
                return scheme.clone();
            }
            let scheme = self.type_of(name, &mut |_| {});
            self.schemes.insert(name.to_string(), scheme.clone());
            return scheme;
        }
        weft_analysis::prelude::prelude_doc(name).map(|doc| doc.signature.to_string())
    }

    /// The type of `expr` (a definition's scheme for a function's name), or the diagnostics
    /// that stop it from having one. Runs nothing.
    pub fn type_of(&mut self, expr: &str, events: &mut (dyn FnMut(Event) + Send)) -> Option<String> {
        let name = expr.trim();
        if self.defs.contains_key(name) && !self.globals.contains_key(name) {
            let def = self.defs[name].clone();
            let program = self.program(
                def.cell,
                &[(def.offset, def.text.clone())],
                &BTreeSet::from([name.to_string()]),
                false,
                &BTreeSet::new(),
            );
            self.load(&program);
            let db = self.session.db();
            let function = weft_analysis::items::file_functions(db, self.scratch)
                .iter()
                .rev()
                .find(|f| f.name(db) == name)
                .copied()?;
            return Some(weft_analysis::infer::function_scheme(db, function).to_string());
        }
        let (cell, program) = self.expression_program(":type", expr);
        let core = pipeline::core_program(self.session.db(), self.scratch);
        match core {
            Ok(core) => match &core.main.ret {
                Type::Tuple(items) => items.first().map(ToString::to_string),
                other => Some(other.to_string()),
            },
            Err(diagnostics) => {
                for d in diagnostics.clone() {
                    self.emit(&program, cell, d, None, events);
                }
                None
            }
        }
    }

    /// Loads the program that computes `expr` (the argument of command `command`) into the
    /// scratch file; gives its source's id and the program.
    fn expression_program(&mut self, command: &str, expr: &str) -> (usize, Program) {
        let cell = self.add_source(command.to_string(), expr);
        let pieces = [(TextSize::from(0), expr.to_string())];
        // A `print(...)` or a chart has no value to keep.
        let parse = weft_syntax::parse(expr);
        let valued = parse.syntax().children().next().is_none_or(|s| self.is_shown_expression(&s));
        let mut program = self.program(cell, &pieces, &BTreeSet::new(), valued, &BTreeSet::new());
        program.interface.outputs = if valued { vec![RESULT.to_string()] } else { Vec::new() };
        self.load(&program);
        (cell, program)
    }

    /// The fusion plan (`weft fusion`'s text, and the plan), the kernels (`weft wgsl`) or the
    /// flat IR (`weft ir`) of computing `expr`.
    pub fn listing(
        &mut self,
        what: Listing,
        expr: &str,
        events: &mut (dyn FnMut(Event) + Send),
    ) -> Option<Listed> {
        let command = match what {
            Listing::Fusion => ":fusion",
            Listing::Wgsl => ":wgsl",
            Listing::Ir => ":ir",
        };
        let (cell, program) = match self.last_use.get(expr.trim()) {
            Some((cell, program)) if !self.globals.contains_key(expr.trim()) => {
                let (cell, program) = (*cell, program.as_ref().clone());
                self.load(&program);
                (cell, program)
            }
            _ => self.expression_program(command, expr),
        };
        let db = self.session.db();
        let file = self.scratch;
        let options = match self.session.device.current() {
            Some(gpu) => self.options.for_gpu(gpu.limits.max_storage_buffers_per_shader_stage),
            None => Options::portable_gpu(),
        };
        let result = match what {
            Listing::Fusion => pipeline::fusion_plan(db, file, options).map(|plan| {
                let mut plan = plan.clone();
                plan.relocate(|range| self.place(&program, cell, range));
                Listed { text: plan.to_text(), plan: Some(plan) }
            }),
            Listing::Ir => pipeline::fused_program(db, file, options)
                .map(|fused| Listed { text: fused.program.to_string(), plan: None }),
            Listing::Wgsl => pipeline::kernels(db, file, options).map(|kernels| {
                let text = kernels
                    .iter()
                    .map(|k| {
                        format!("// kernel `{}`, for `{}`\n{}\n", k.kernel.name, k.function, k.kernel.source)
                    })
                    .collect();
                Listed { text, plan: None }
            }),
        };
        match result {
            Ok(listed) => Some(listed),
            Err(diagnostics) => {
                for d in diagnostics {
                    self.emit(&program, cell, d, None, events);
                }
                None
            }
        }
    }

    /// Completions at `offset` of `line`, from the session's database: the definitions and
    /// values so far, the prelude, and the keywords.
    pub fn completions(&mut self, line: &str, offset: usize) -> Vec<weft_ide::Completion> {
        let at = self.load_in_context(line, offset);
        weft_ide::completions(self.session.db(), self.scratch, at)
            .into_iter()
            .filter(|c| !c.label.starts_with("__"))
            .collect()
    }

    /// What is at byte `offset` of `code`, as the language server's hover says it (Markdown):
    /// a name's type or scheme, a prelude function's signature and docs, an expression's type
    /// and shape, and the kernel it runs in. Runs nothing.
    pub fn inspect(&mut self, code: &str, offset: usize) -> Option<String> {
        let at = self.load_in_context(code, offset);
        let db = self.session.db();
        let plan = weft_ide::fusion_plan(db, self.scratch);
        weft_ide::hover(db, self.scratch, at, plan).map(|hover| hover.markdown)
    }

    /// Loads `text` after every definition and value of the session, for an editor question
    /// about it; gives where byte `offset` of `text` is in the scratch file.
    fn load_in_context(&mut self, text: &str, offset: usize) -> TextSize {
        let mut program = Program::default();
        for (name, def) in &self.defs {
            program.push(&def.text, Origin::Def { name: name.clone(), cell: def.cell, offset: def.offset });
            program.push("\n", Origin::Synthetic);
        }
        for (name, global) in &self.globals {
            program.push(&format!("{name} = {SESSION_INPUT}(\"{name}\")\n"), Origin::Synthetic);
            program.interface.inputs.push(global.input(name));
        }
        let start = program.text.len();
        program.push(text, Origin::Synthetic);
        self.load(&program);
        TextSize::from((start + offset.min(text.len())) as u32)
    }
}

/// How many items of a sequence a shown value keeps at each level, unless told otherwise.
pub const SHOWN_ITEMS: usize = 10;

/// What `Engine::listing` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listing {
    Fusion,
    Wgsl,
    Ir,
}

/// What `Engine::listing` gives: the text `weft fusion`, `weft wgsl` or `weft ir` prints, and
/// with the fusion plan's text the plan itself, to draw.
#[derive(Debug, Clone)]
pub struct Listed {
    pub text: String,
    pub plan: Option<weft_flat::fuse::plan::FusionPlan>,
}

fn def_name(node: &weft_syntax::SyntaxNode) -> Option<String> {
    let def = ast::FunctionDef::cast(node.clone())?;
    Some(def.name()?.text())
}

/// The identifiers a text mentions.
fn identifiers(text: &str) -> Vec<String> {
    let lexed = weft_syntax::lex::lex(text);
    let mut at = 0usize;
    let mut out = Vec::new();
    for token in &lexed.tokens {
        let len = usize::from(token.len);
        if token.kind == SyntaxKind::IDENT {
            out.push(text[at..at + len].to_string());
        }
        at += len;
    }
    out
}

/// The names a plain assignment binds without reading them (`x = 1.5` makes a new `x`, of any
/// type; `x = x + 1` and `x += 1` read the old one).
fn fresh_bindings(statement: &weft_syntax::SyntaxNode) -> BTreeSet<String> {
    if statement.kind() != ASSIGN_STMT {
        return BTreeSet::new();
    }
    let bound: BTreeSet<String> = hir::statement_bindings(statement).into_iter().map(|(n, _)| n).collect();
    let targets: Vec<TextRange> = ast::targets(statement).iter().map(|t| t.text_range()).collect();
    let mut read = BTreeSet::new();
    for child in statement.children() {
        if !targets.contains(&child.text_range()) {
            read.extend(identifiers(&child.text().to_string()));
        }
    }
    bound.into_iter().filter(|name| !read.contains(name)).collect()
}

/// The names a cell binds afresh: those whose first mention in the cell is a plain assignment
/// that binds without reading them.
fn cell_fresh_bindings(statements: &[weft_syntax::SyntaxNode]) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut fresh = BTreeSet::new();
    for statement in statements {
        for name in fresh_bindings(statement) {
            if !seen.contains(&name) {
                fresh.insert(name);
            }
        }
        seen.extend(identifiers(&statement.text().to_string()));
    }
    fresh
}

/// Splits a tuple's flat variables by item.
fn split_vars<V>(types: &[Type], vars: Vec<V>) -> impl Iterator<Item = (Type, Vec<V>)> {
    let mut vars = vars.into_iter();
    types
        .iter()
        .map(move |ty| {
            let n = weft_flat::ir::layout(ty, false).len();
            (ty.clone(), vars.by_ref().take(n).collect())
        })
        .collect::<Vec<_>>()
        .into_iter()
}

/// A type with the lengths a session knows of its value (`CellInput::lengths`).
fn type_with_lengths(ty: &Type, lengths: &[u64]) -> String {
    match (ty, lengths) {
        (Type::Seq(elem), [len, rest @ ..]) => format!("[{}; {len}]", type_with_lengths(elem, rest)),
        _ => ty.to_string(),
    }
}
