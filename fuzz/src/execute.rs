//! Runs program text on one executor and compares what two executors did.
//!
//! The interpreter is the reference. The CPU executor and, for programs of an exact profile,
//! the GPU executor must print its bytes and fail with its code at its span. The GPU
//! executor's transcendental functions and regrouped float sums may differ in the last bits,
//! so for `Profile::Full` programs its floats are compared within a relative 1e-3 (the bounds
//! are in docs/language.md); CPython, which computes in f64, always is.

use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::process::Command;

use weft_analysis::pipeline::{self, Options, Strategy};
use weft_analysis::{Database, SourceFile};
use weft_exec::interp;
use weft_session::{Backend, RunError};
use weft_syntax::Code;

/// Where a program ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Executor {
    Interp,
    Cpu(Strategy),
    Gpu(Strategy),
    /// CPython with the prelude shim, in its f32 emulation (`tests/python/prelude.py --f32`).
    CPython,
}

impl std::fmt::Display for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Executor::Interp => f.write_str("interp"),
            Executor::Cpu(s) => write!(f, "cpu --fusion {}", strategy_name(*s)),
            Executor::Gpu(s) => write!(f, "gpu --fusion {}", strategy_name(*s)),
            Executor::CPython => f.write_str("cpython"),
        }
    }
}

fn strategy_name(s: Strategy) -> &'static str {
    match s {
        Strategy::None => "none",
        Strategy::Greedy => "greedy",
        Strategy::Ilp => "ilp",
    }
}

pub const STRATEGIES: [Strategy; 3] = [Strategy::None, Strategy::Greedy, Strategy::Ilp];

/// What a run did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub stdout: String,
    /// The run-time error it stopped with: code, span and message.
    pub error: Option<(String, u32, u32, String)>,
    /// A panic: a crash, always a finding.
    pub panic: Option<String>,
}

/// Why a run did not happen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Skipped {
    /// The program does not compile: a generator bug, or a shrink step gone too far.
    Invalid(String),
    /// The flattener does not handle it yet (E0408): only the interpreter runs it.
    Unflattened,
    /// No GPU adapter.
    NoDevice,
    /// CPython cannot run it as Weft does (an exception Weft does not raise, such as float
    /// division by zero, or an integer that Weft would wrap).
    PythonDiffers,
}

struct Capture(String);

impl interp::Host for Capture {
    fn print(&mut self, line: &str) {
        self.0.push_str(line);
    }

    /// A chart as its data, so that executors are compared on what they would draw.
    fn draw(&mut self, chart: weft_exec::chart::Chart) {
        self.0.push_str(&format!("{chart:?}\n"));
    }

    fn read_file(&mut self, path: &str) -> std::io::Result<Vec<u8>> {
        Err(std::io::Error::other(format!("generated programs read no files ({path})")))
    }
}

/// The compile errors of `text`, rendered, if it has any.
pub fn compile_errors(text: &str) -> Option<String> {
    let db = Database::default();
    let file = SourceFile::new(&db, "fuzz.weft".into(), text.to_string());
    match catch_unwind(AssertUnwindSafe(|| pipeline::core_program(&db, file).map(|_| ()))) {
        Ok(Ok(())) => None,
        Ok(Err(diagnostics)) => {
            Some(weft_syntax::diagnostics::render_text(&diagnostics, "fuzz.weft", text, false))
        }
        Err(panic) => Some(format!("the checker panicked: {}", panic_message(&*panic))),
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic".into())
}

thread_local! {
    /// The database of the program this thread ran last. A program runs on every executor in
    /// turn, so sharing one database compiles it once: the core and the flat program are the
    /// pipeline's cached queries, and each fusion strategy fuses once.
    static LAST_PROGRAM: RefCell<Option<(String, Database, SourceFile)>> = const { RefCell::new(None) };
}

/// A database holding `text` (the last program's, when it is the same text).
fn program_database(text: &str) -> (Database, SourceFile) {
    LAST_PROGRAM.with(|last| {
        let mut last = last.borrow_mut();
        match &*last {
            Some((cached, db, file)) if cached == text => (db.clone(), *file),
            _ => {
                let db = Database::default();
                let file = SourceFile::new(&db, "fuzz.weft".into(), text.to_string());
                *last = Some((text.to_string(), db.clone(), file));
                (db, file)
            }
        }
    })
}

/// Runs `text` on `executor`. `python` is the path of `tests/python/prelude.py`.
pub fn run(text: &str, executor: Executor, python: Option<&Path>) -> Result<Outcome, Skipped> {
    let (backend, strategy) = match executor {
        Executor::CPython => return run_python(text, python),
        Executor::Interp => (Backend::Interp, Strategy::default()),
        Executor::Cpu(s) => (Backend::Cpu, s),
        Executor::Gpu(s) => (Backend::Gpu, s),
    };
    let (db, file) = program_database(text);
    let mut options = Options::default();
    options.fusion.strategy = strategy;
    let mut host = Capture(String::new());
    let result =
        catch_unwind(AssertUnwindSafe(|| weft_session::run_file(&db, file, backend, options, &mut host)));
    if result.is_err() {
        // A panic may leave a query half done: the next run starts from a fresh database.
        LAST_PROGRAM.with(|last| last.borrow_mut().take());
    }
    let stdout = host.0;
    match result {
        Ok(Ok(_)) => Ok(Outcome { stdout, error: None, panic: None }),
        Ok(Err(RunError::Runtime(d))) => Ok(Outcome {
            stdout,
            error: Some((
                d.code.as_str().to_string(),
                d.range.start().into(),
                d.range.end().into(),
                d.message,
            )),
            panic: None,
        }),
        Ok(Err(RunError::Compile(diagnostics))) => {
            if diagnostics.iter().any(|d| d.code == Code::UnsupportedOnDevice) {
                Err(Skipped::Unflattened)
            } else {
                Err(Skipped::Invalid(format!("{diagnostics:?}")))
            }
        }
        Ok(Err(RunError::NoDevice(_))) => Err(Skipped::NoDevice),
        Err(panic) => Ok(Outcome { stdout, error: None, panic: Some(panic_message(&*panic)) }),
    }
}

fn run_python(text: &str, python: Option<&Path>) -> Result<Outcome, Skipped> {
    let Some(prelude) = python else { return Err(Skipped::PythonDiffers) };
    let dir = std::env::temp_dir().join(format!("weft-fuzz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(format!("p{:?}.weft", std::thread::current().id()).replace(['(', ')'], ""));
    std::fs::write(&path, text).map_err(|_| Skipped::PythonDiffers)?;
    let output = Command::new("python3").arg(prelude).arg("--f32").arg(&path).output();
    let _ = std::fs::remove_file(&path);
    let output = output.map_err(|_| Skipped::PythonDiffers)?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() || stderr.contains("outside the i32 range") {
        return Err(Skipped::PythonDiffers);
    }
    Ok(Outcome { stdout: String::from_utf8_lossy(&output.stdout).into_owned(), error: None, panic: None })
}

/// How closely two outcomes must agree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agreement {
    /// The same bytes, and the same error code and span.
    Exact,
    /// Floats within a relative 1e-3; everything else exact.
    Tolerant,
}

/// `Ok` when `actual` agrees with the reference `expected`; otherwise what differs.
pub fn compare(expected: &Outcome, actual: &Outcome, agreement: Agreement) -> Result<(), String> {
    if let Some(panic) = &actual.panic {
        return Err(format!("panicked: {panic}"));
    }
    let errors = |o: &Outcome| o.error.as_ref().map(|(code, start, end, _)| (code.clone(), *start, *end));
    if errors(expected) != errors(actual) {
        let show = |o: &Outcome| match &o.error {
            Some((code, start, end, message)) => format!("{code} at {start}..{end}: {message}"),
            None => "no error".to_string(),
        };
        return Err(format!("error differs: expected {}, got {}", show(expected), show(actual)));
    }
    let same = match agreement {
        Agreement::Exact => expected.stdout == actual.stdout,
        Agreement::Tolerant => close(&expected.stdout, &actual.stdout),
    };
    if same {
        return Ok(());
    }
    let lines = expected.stdout.lines().zip(actual.stdout.lines()).enumerate();
    for (k, (e, a)) in lines {
        let differs = match agreement {
            Agreement::Exact => e != a,
            Agreement::Tolerant => !close(e, a),
        };
        if differs {
            return Err(format!("line {} differs:\n  expected: {e}\n  actual:   {a}", k + 1));
        }
    }
    Err(format!(
        "{} lines expected, {} printed",
        expected.stdout.lines().count(),
        actual.stdout.lines().count()
    ))
}

/// Splits printed text into words, numbers and punctuation.
fn tokens(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        let punct = matches!(c, '[' | ']' | '(' | ')' | ',');
        if c.is_whitespace() || punct {
            if let Some(s) = start.take() {
                out.push(&text[s..i]);
            }
            if punct {
                out.push(&text[i..i + c.len_utf8()]);
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(s) = start {
        out.push(&text[s..]);
    }
    out
}

/// Token by token: floats within a relative 1e-3 (NaN equal to NaN, infinities exact), an
/// integer never equal to a float, everything else exact.
pub fn close(expected: &str, actual: &str) -> bool {
    let (a, b) = (tokens(expected), tokens(actual));
    a.len() == b.len() && a.iter().zip(&b).all(|(x, y)| token_close(x, y))
}

fn token_close(x: &str, y: &str) -> bool {
    if x == y {
        return true;
    }
    let is_float = |t: &str| t.contains(['.', 'e', 'E']) || t.ends_with("inf") || t == "nan";
    let (Ok(a), Ok(b)) = (x.parse::<f64>(), y.parse::<f64>()) else { return false };
    if !is_float(x) || !is_float(y) {
        return false;
    }
    if a.is_nan() || b.is_nan() || a.is_infinite() || b.is_infinite() {
        return (a.is_nan() && b.is_nan()) || a == b;
    }
    (a - b).abs() <= 1e-3 * a.abs().max(b.abs()) + 1e-6
}
