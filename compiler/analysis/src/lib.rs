//! `weft-analysis`: the incremental database and every query over it, from a source file to GPU
//! kernels.
//!
//! The front half is analysis proper: `parsed` (the syntax tree as a query) → `items`
//! (top-level functions as salsa tracked structs) → `names` (resolution) → `hir` (bodies with
//! names resolved) → `infer` and `flow` (types and control-flow checks) → `shapes` (symbolic
//! lengths and index proofs) → `mono` (specialisation to the first-order core, `weft_core`).
//! `check` collects a file's diagnostics. The back half's passes live in `weft-flat` as plain
//! functions; `pipeline` is the one module that orders them and caches them as queries.
//!
//! **Architecture Invariant:** the compiler never knows its front ends. It does no IO, knows no
//! protocol, links no GPU runtime, and returns values plus diagnostics rather than printing.

pub mod check;
pub mod db;
pub mod flow;
mod freed_later;
pub mod hir;
pub mod infer;
pub mod items;
pub mod mono;
pub mod names;
pub mod parsed;
pub mod pipeline;
pub mod prelude;
pub mod shapes;

pub use check::{decode_source, file_diagnostics};
pub use db::{Database, Db, SourceFile};
