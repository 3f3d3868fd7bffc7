//! The one diagnostic type every pass reports and every front end renders.
//!
//! A `Diagnostic` is plain data in byte offsets: a stable `Code`, a severity, a message, a primary
//! span, secondary labels, notes and help. Passes build them; front ends only render them, the
//! terminal with ariadne (`render_text`), tools with the versioned JSON schema (`JsonFile`), and the
//! language server with its own conversion.
//!
//! Codes are grouped by the phase that reports them. A code never changes meaning once released;
//! `docs/language.md` lists them all.

use std::fmt;

use rowan::{TextRange, TextSize};
use serde::Serialize;

use crate::line_index::LineIndex;

macro_rules! codes {
    ($($(#[$doc:meta])* $variant:ident = ($code:literal, $name:literal, $severity:ident),)*) => {
        /// A stable diagnostic code, such as `E0200` (`unknown-name`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code {
            $($(#[$doc])* $variant,)*
        }

        impl Code {
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            /// The stable code, such as `E0200`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Code::$variant => $code,)*
                }
            }

            /// The readable name, such as `unknown-name`.
            pub fn name(self) -> &'static str {
                match self {
                    $(Code::$variant => $name,)*
                }
            }

            /// Whether the code is a run-time error (E04xx), which executors report rather than
            /// `weft check`.
            pub fn is_run_time(self) -> bool {
                self.as_str().starts_with("E04")
            }

            pub fn severity(self) -> Severity {
                match self {
                    $(Code::$variant => Severity::$severity,)*
                }
            }
        }
    };
}

codes! {
    // Source.
    /// The file is not valid UTF-8.
    InvalidUtf8 = ("E0001", "invalid-utf8", Error),

    // Syntax.
    /// The text is not Python 3 syntax.
    SyntaxError = ("E0100", "syntax-error", Error),
    /// Python syntax outside the Weft subset (a class, an import, mutation, ...).
    UnsupportedConstruct = ("E0101", "unsupported-construct", Error),
    /// `print` is a top-level statement only.
    PrintInFunction = ("E0102", "print-in-function", Error),
    /// `return` at the top level.
    ReturnOutsideFunction = ("E0103", "return-outside-function", Error),
    /// The left side of `=` (or a loop target) is not a name or a tuple of names.
    InvalidTarget = ("E0104", "invalid-target", Error),

    // Names.
    /// A name that no scope binds and the prelude lacks.
    UnknownName = ("E0200", "unknown-name", Error),
    /// Two functions, or two parameters, with one name in one scope.
    DuplicateDefinition = ("E0201", "duplicate-definition", Error),
    /// A local binding that is never read.
    UnusedName = ("W0202", "unused-name", Warning),
    ShadowedName = ("W0203", "shadowed-name", Warning),
    /// A read where the name is not bound on every path that reaches it.
    PossiblyUnbound = ("E0204", "possibly-unbound", Error),
    /// A path through a function that ends without `return`.
    MissingReturn = ("E0205", "missing-return", Error),

    // Types.
    /// Two types that must be equal are not, or a type lacks an operation (`bool + bool`).
    TypeMismatch = ("E0300", "type-mismatch", Error),
    /// A function stored in a sequence or a tuple.
    FunctionInData = ("E0301", "function-in-data", Error),
    /// A call with the wrong number of arguments, or a call of something that is not a function.
    WrongArity = ("E0302", "wrong-arity", Error),
    /// A function value Weft cannot resolve at compile time: returned, chosen by a conditional,
    /// or an overloaded prelude function passed as a value.
    UnsupportedFunctionValue = ("E0303", "unsupported-function-value", Error),
    /// A tuple indexed by something other than an in-range integer literal.
    InvalidTupleIndex = ("E0304", "invalid-tuple-index", Error),
    /// An integer literal that does not fit its type.
    LiteralOutOfRange = ("E0305", "literal-out-of-range", Error),
    /// `return` inside a loop body (loops only rebind names).
    ReturnInLoop = ("E0306", "return-in-loop", Error),
    /// A type that would contain itself (`x = [x]`).
    InfiniteType = ("E0307", "infinite-type", Error),
    /// A string where Weft has no strings, or a `load_*` path that is not a string literal.
    InvalidString = ("E0308", "invalid-string", Error),

    // Shapes.
    /// Sequences `map` or `zip` needs of equal length whose lengths provably differ.
    ProvenLengthMismatch = ("E0350", "proven-length-mismatch", Error),
    /// Sequences that must have equal lengths where that cannot be proven: the executors check
    /// it at run time (E0403).
    UnprovenLength = ("W0351", "unproven-length", Warning),

    // Run time: reported by the executors (`weft run`), never by `weft check`.
    /// `xs[i]`, or an index of `gather` or `scatter`, outside the sequence.
    IndexOutOfRange = ("E0400", "index-out-of-range", Error),
    /// Integer `/`, `//` or `%` by zero.
    DivisionByZero = ("E0401", "division-by-zero", Error),
    /// A failed `assert`.
    AssertionFailed = ("E0402", "assertion-failed", Error),
    /// Sequences of different lengths where equal ones are needed (`map`, `zip`, ...).
    LengthMismatch = ("E0403", "length-mismatch", Error),
    /// `min`, `max`, `argmin` or `argmax` of an empty sequence.
    EmptySequence = ("E0404", "empty-sequence", Error),
    /// `permute` indexes that are not a permutation.
    NotAPermutation = ("E0405", "not-a-permutation", Error),
    /// A step of 0, a negative count, shift or integer exponent, `random_i32` with `lo >= hi`.
    InvalidArgument = ("E0406", "invalid-argument", Error),
    /// `load_npy` or `load_csv`: a missing file, a bad format or an unsupported dtype.
    DataLoadError = ("E0407", "data-load-error", Error),
    /// `i64` or `f64` on a GPU without them.
    UnsupportedOnDevice = ("E0408", "unsupported-on-device", Error),
    /// Out of memory, or recursion too deep.
    ResourceExhausted = ("E0409", "resource-exhausted", Error),
    /// The run was interrupted (Ctrl-C in the REPL, a notebook's interrupt), between statements,
    /// calls or loop steps.
    Interrupted = ("E0410", "interrupted", Error),
    /// A compiler bug caught at run time (an ill-typed core program), reported instead of a
    /// panic. No program should ever see it.
    InternalError = ("E0499", "internal-error", Error),
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// A secondary span with its own message ("first defined here").
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Label {
    pub range: TextRange,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Diagnostic {
    pub code: Code,
    pub severity: Severity,
    pub message: String,
    /// The primary span, in bytes from the start of the text the diagnostic was reported against.
    pub range: TextRange,
    pub labels: Vec<Label>,
    pub notes: Vec<String>,
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn new(code: Code, range: TextRange, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            code,
            severity: code.severity(),
            message: message.into(),
            range,
            labels: Vec::new(),
            notes: Vec::new(),
            help: None,
        }
    }

    pub fn with_label(mut self, range: TextRange, message: impl Into<String>) -> Diagnostic {
        self.labels.push(Label { range, message: message.into() });
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// The same diagnostic with every span moved by `offset`: per-function queries report spans
    /// relative to their function, and the file-level query places them.
    pub fn shifted(mut self, offset: TextSize) -> Diagnostic {
        self.range += offset;
        for label in &mut self.labels {
            label.range += offset;
        }
        self
    }
}

/// Renders diagnostics for one file as ariadne reports, the way `weft check` prints them.
pub fn render_text(diagnostics: &[Diagnostic], path: &str, text: &str, color: bool) -> String {
    use ariadne::{Config, IndexType, Label as AriadneLabel, Report, ReportKind, Source};

    let config = Config::default().with_index_type(IndexType::Byte).with_color(color);
    let source = Source::from(without_extra_line_breaks(text));
    // Ariadne slices the text at span ends, so they must lie on char boundaries.
    let clamp = |range: TextRange| {
        let len = text.len();
        let mut start = usize::from(range.start()).min(len);
        while !text.is_char_boundary(start) {
            start -= 1;
        }
        let mut end = usize::from(range.end()).clamp(start, len);
        while !text.is_char_boundary(end) {
            end += 1;
        }
        start..end
    };
    let mut out = Vec::new();
    for diagnostic in diagnostics {
        let kind = match diagnostic.severity {
            Severity::Error => ReportKind::Error,
            Severity::Warning => ReportKind::Warning,
        };
        let primary = clamp(diagnostic.range);
        let mut report = Report::build(kind, (path, primary.clone()))
            .with_config(config)
            .with_code(format_args!("{}/{}", diagnostic.code, diagnostic.code.name()))
            .with_message(&diagnostic.message)
            .with_label(AriadneLabel::new((path, primary)).with_message(&diagnostic.message).with_order(-1));
        for label in &diagnostic.labels {
            report =
                report.with_label(AriadneLabel::new((path, clamp(label.range))).with_message(&label.message));
        }
        for note in &diagnostic.notes {
            report = report.with_note(note);
        }
        if let Some(help) = &diagnostic.help {
            report = report.with_help(help);
        }
        // Writing to a Vec cannot fail.
        let _ = report.finish().write((path, &source), &mut out);
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The text with the characters that ariadne treats as line breaks, but Python and `LineIndex` do
/// not (vertical tab, form feed, NEL, the Unicode line and paragraph separators), replaced by
/// spaces of the same byte length, so that every rendering agrees on line numbers.
fn without_extra_line_breaks(text: &str) -> std::borrow::Cow<'_, str> {
    const EXTRA_BREAKS: [char; 5] = ['\x0b', '\x0c', '\u{85}', '\u{2028}', '\u{2029}'];
    if !text.contains(EXTRA_BREAKS) {
        return text.into();
    }
    let mut res = String::with_capacity(text.len());
    for c in text.chars() {
        if EXTRA_BREAKS.contains(&c) {
            res.extend(std::iter::repeat_n(' ', c.len_utf8()));
        } else {
            res.push(c);
        }
    }
    res.into()
}

/// Version of the JSON schema `weft check --format json` emits. Bump it when a field changes.
pub const JSON_SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Serialize)]
pub struct JsonReport<'a> {
    pub version: u32,
    pub files: Vec<JsonFile<'a>>,
}

#[derive(Debug, Serialize)]
pub struct JsonFile<'a> {
    pub path: &'a str,
    pub diagnostics: Vec<JsonDiagnostic>,
}

#[derive(Debug, Serialize)]
pub struct JsonDiagnostic {
    pub code: &'static str,
    pub name: &'static str,
    pub severity: Severity,
    pub message: String,
    pub span: JsonSpan,
    pub labels: Vec<JsonLabel>,
    pub notes: Vec<String>,
    pub help: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct JsonLabel {
    pub message: String,
    pub span: JsonSpan,
}

/// Byte offsets plus 1-based line and column; columns count UTF-8 bytes.
#[derive(Debug, Serialize)]
pub struct JsonSpan {
    pub start: u32,
    pub end: u32,
    pub start_line: u32,
    pub start_column: u32,
    pub end_line: u32,
    pub end_column: u32,
}

impl JsonSpan {
    fn new(range: TextRange, lines: &LineIndex) -> JsonSpan {
        let start = lines.line_col(range.start());
        let end = lines.line_col(range.end());
        JsonSpan {
            start: range.start().into(),
            end: range.end().into(),
            start_line: start.line + 1,
            start_column: start.col + 1,
            end_line: end.line + 1,
            end_column: end.col + 1,
        }
    }
}

impl JsonFile<'_> {
    pub fn new<'a>(path: &'a str, text: &str, diagnostics: &[Diagnostic]) -> JsonFile<'a> {
        let lines = LineIndex::new(text);
        let diagnostics = diagnostics
            .iter()
            .map(|d| JsonDiagnostic {
                code: d.code.as_str(),
                name: d.code.name(),
                severity: d.severity,
                message: d.message.clone(),
                span: JsonSpan::new(d.range, &lines),
                labels: d
                    .labels
                    .iter()
                    .map(|l| JsonLabel { message: l.message.clone(), span: JsonSpan::new(l.range, &lines) })
                    .collect(),
                notes: d.notes.clone(),
                help: d.help.clone(),
            })
            .collect();
        JsonFile { path, diagnostics }
    }
}
