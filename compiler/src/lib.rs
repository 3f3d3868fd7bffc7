//! The Weft compiler: the one library that every front end (`weft check`, the language server,
//! the REPL, the Jupyter kernel) calls.
//!
//! The pipeline, as far as it is built: source text → `syntax` (lossless, error-tolerant tree) →
//! `items` (top-level functions as salsa tracked structs) → `names` (resolution) → `hir` (bodies
//! with names resolved) → `infer` and `flow` (types and control-flow checks) → `mono`
//! (specialisation to the first-order `core`) → `interp` (the reference interpreter). `check`
//! collects the diagnostics and `driver` runs programs. Every analysis is a salsa query over the
//! one `db::Database`; see `ARCHITECTURE.md` for the walk from text to output and the invariants.
//!
//! **Architecture Invariant:** the compiler never knows its front ends. It does no IO, knows no
//! protocol, and returns values plus diagnostics rather than printing.

pub mod check;
mod control;
pub mod core;
pub mod cpu;
pub mod db;
pub mod diagnostics;
pub mod driver;
pub mod flatten;
pub mod flow;
pub mod format;
pub mod fuse;
pub mod gpu;
pub mod hir;
pub mod ide;
pub mod infer;
pub mod interp;
pub mod ir;
pub mod items;
pub mod line_index;
pub mod mono;
pub mod names;
pub mod parsed;
pub mod prelude;
pub mod runtime;
pub mod shapes;
pub mod simplify;
pub mod syntax;
pub mod types;
pub mod wgsl;

pub use check::{decode_source, file_diagnostics};

/// Runs a step of a recursive walk over a program, growing the stack first if it runs low, so
/// that a program nested as deep as it is long (`x + x + ... + x`) cannot overflow it.
pub(crate) fn ensure_stack<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(128 * 1024, 2 * 1024 * 1024, f)
}
pub use db::{Database, Db, SourceFile};
pub use diagnostics::{Code, Diagnostic, Severity};
