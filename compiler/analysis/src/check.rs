//! `file_diagnostics`: every diagnostic of a file, in source order, with absolute spans. This is
//! what `weft check` prints and what the language server will publish.

use crate::db::{Db, SourceFile};
use crate::items::{duplicate_functions, file_functions};
use crate::names::{function_names, top_level_statement_names};
use crate::parsed::syntax_diagnostics;
use weft_syntax::diagnostics::Diagnostic;

#[salsa::tracked(returns(ref))]
pub fn file_diagnostics(db: &dyn Db, file: SourceFile) -> Vec<Diagnostic> {
    let mut res = syntax_diagnostics(db, file).clone();
    res.extend(duplicate_functions(db, file).iter().cloned());
    for function in file_functions(db, file) {
        let offset = function.offset(db);
        let names = function_names(db, *function);
        res.extend(names.diagnostics.iter().map(|d| d.clone().shifted(offset)));
    }
    res.extend(top_level_statement_names(db, file).diagnostics.iter().cloned());
    res.extend(crate::infer::file_type_diagnostics(db, file));
    // Shapes are analysed on well-typed programs only: on others they would only add noise.
    if !res.iter().any(Diagnostic::is_error) {
        res.extend(crate::shapes::file_shape_diagnostics(db, file));
    }
    res.sort_by_key(|d| (d.range.start(), d.range.end(), d.code));
    res
}

/// Computes the per-function queries of a file on two threads, so that `file_diagnostics`
/// finds them cached. Each function's names and types are independent of the others' bodies,
/// and salsa lets clones of the database run queries concurrently.
pub fn prime_caches(db: &crate::db::Database, file: SourceFile) {
    let count = file_functions(db, file).len();
    if count < 16 {
        return;
    }
    // Split by pass, not by function: a function's types wait for its callees' schemes, so
    // splitting functions between threads makes them wait on each other. Names, validation and
    // the HIR need nothing from other functions; inference runs behind them.
    std::thread::scope(|scope| {
        let other = db.clone();
        scope.spawn(move || {
            let functions = file_functions(&other, file);
            for function in functions.iter().rev() {
                crate::hir::function_hir(&other, *function);
            }
            syntax_diagnostics(&other, file);
            for function in functions {
                function_names(&other, *function);
            }
            crate::infer::top_level_types(&other, file);
        });
        for function in file_functions(db, file) {
            crate::infer::function_types(db, *function);
        }
    });
}

/// A file's text from raw bytes. Invalid UTF-8 is replaced (so the rest of the file can still be
/// checked) and reported at the first bad byte.
pub fn decode_source(bytes: &[u8]) -> (String, Option<Diagnostic>) {
    match std::str::from_utf8(bytes) {
        Ok(text) => (text.to_string(), None),
        Err(error) => {
            let text = String::from_utf8_lossy(bytes).into_owned();
            // The lossy text has the same prefix, so the offset is valid in it.
            let at = rowan::TextSize::from(error.valid_up_to() as u32);
            let diagnostic = Diagnostic::new(
                weft_syntax::diagnostics::Code::InvalidUtf8,
                rowan::TextRange::at(at, rowan::TextSize::of(char::REPLACEMENT_CHARACTER)),
                "this file is not valid UTF-8",
            )
            .with_help("save the file as UTF-8");
            (text, Some(diagnostic))
        }
    }
}

/// How `weft check` prints its findings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputFormat {
    #[default]
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CheckConfig {
    pub format: OutputFormat,
    /// ANSI colours in text output.
    pub color: bool,
    /// After each file's diagnostics, its bindings' types and shapes (`shapes::report`); text
    /// output only.
    pub shapes: bool,
}

/// What `weft check` prints, and whether any diagnostic was an error (exit status 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckReport {
    pub output: String,
    pub has_errors: bool,
}

/// Checks already-read sources, given as `(path, bytes)`, and renders the result.
pub fn check_sources(
    db: &crate::db::Database,
    sources: &[(String, Vec<u8>)],
    config: CheckConfig,
) -> CheckReport {
    let mut has_errors = false;
    let mut checked = Vec::new();
    for (path, bytes) in sources {
        let (text, utf8_error) = decode_source(bytes);
        let file = SourceFile::new(db, path.clone(), text);
        prime_caches(db, file);
        let mut diagnostics: Vec<Diagnostic> = utf8_error.into_iter().collect();
        diagnostics.extend(file_diagnostics(db, file).iter().cloned());
        has_errors |= diagnostics.iter().any(Diagnostic::is_error);
        checked.push((path.as_str(), file.text(db).as_str(), diagnostics, file));
    }
    let output = match config.format {
        OutputFormat::Text => checked
            .iter()
            .map(|(path, text, diagnostics, file)| {
                let mut out = weft_syntax::diagnostics::render_text(diagnostics, path, text, config.color);
                if config.shapes {
                    out.push_str(&crate::shapes::report(db, *file));
                }
                out
            })
            .collect(),
        OutputFormat::Json => {
            let report = weft_syntax::diagnostics::JsonReport {
                version: weft_syntax::diagnostics::JSON_SCHEMA_VERSION,
                files: checked
                    .iter()
                    .map(|(path, text, diagnostics, _)| {
                        weft_syntax::diagnostics::JsonFile::new(path, text, diagnostics)
                    })
                    .collect(),
            };
            let mut json = serde_json::to_string_pretty(&report).expect("the report serializes");
            json.push('\n');
            json
        }
    };
    CheckReport { output, has_errors }
}
