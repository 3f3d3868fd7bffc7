//! The file-level syntax queries: the parse of a whole file and its syntax diagnostics.
//!
//! These re-run on every edit of the file; the per-function queries in `items` are the firewall
//! behind them.

use crate::db::{Db, SourceFile};
use weft_syntax::diagnostics::{Code, Diagnostic};
use weft_syntax::{self as syntax, Parse, validate::validate};

/// The lossless tree of the file and its syntax errors. Stores rowan's `GreenNode`, which is
/// `Send` and position-free, never a `SyntaxNode`.
#[salsa::tracked(returns(ref), no_eq)]
pub fn parsed_file(db: &dyn Db, file: SourceFile) -> Parse {
    syntax::parse(file.text(db))
}

/// Syntax errors, then the Python constructs outside the Weft subset, in source order.
#[salsa::tracked(returns(ref))]
pub fn syntax_diagnostics(db: &dyn Db, file: SourceFile) -> Vec<Diagnostic> {
    let parse = parsed_file(db, file);
    let mut res: Vec<Diagnostic> = parse
        .errors
        .iter()
        .map(|error| {
            let mut diagnostic = Diagnostic::new(Code::SyntaxError, error.range, error.message.clone());
            if let Some((range, message)) = &error.label {
                diagnostic = diagnostic.with_label(*range, message.clone());
            }
            if let Some(help) = &error.help {
                diagnostic = diagnostic.with_help(help.clone());
            }
            diagnostic
        })
        .collect();
    res.extend(validate(&parse.syntax()));
    res
}
