//! The incremental database: salsa inputs, the database type, and the `Db` trait every query takes.
//!
//! A `SourceFile` is the only input. Everything else (the parse, the item tree, name resolution,
//! diagnostics) is a tracked query derived from it, so the language server, the REPL and the
//! Jupyter kernel all ask one database and share its cache.
//!
//! **Architecture Invariant:** the database does no IO. Front ends read files and set
//! `SourceFile::text`; queries only compute.

use std::sync::{Arc, Mutex};
use weft_flat::fuse::SolveCache;

/// A Weft source: a file on disk, an editor buffer, a REPL input or a notebook cell.
#[salsa::input(debug)]
pub struct SourceFile {
    #[returns(ref)]
    pub path: String,
    #[returns(ref)]
    pub text: String,
    /// What a session passes in and takes out when the file is one statement of a cell (empty
    /// for a file on disk): see `CellInterface`.
    #[default]
    #[returns(ref)]
    pub interface: CellInterface,
}

/// How a session's statement meets the values earlier cells computed. Each input is read in
/// the text as `__session_input__("name")` and has the type given here (main takes it as a
/// parameter); main returns the outputs' final values, as a tuple, in this order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct CellInterface {
    pub inputs: Vec<CellInput>,
    pub outputs: Vec<String>,
}

/// An earlier cell's value, as a statement reads it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CellInput {
    pub name: String,
    pub ty: weft_core::types::Type,
    /// A sequence's real lengths, as far as they are the same at each level, outermost first:
    /// `[1000, 3]` for 1000 rows of 3, `[5]` for 5 rows of different lengths; empty for
    /// anything else, or where the session does not know them on the host. The shape
    /// analysis takes them as facts (`shapes`), so they must be the value's.
    pub lengths: Vec<u64>,
}

/// The prelude-like function a session's statement reads its inputs with.
pub const SESSION_INPUT: &str = "__session_input__";

/// The trait queries take, so that front ends can wrap the database in their own types.
#[salsa::db]
pub trait Db: salsa::Database {
    /// Fusion's solved ILP components, kept across revisions (`weft_flat::fuse::SolveCache`).
    fn solve_cache(&self) -> &SolveCache;
}

#[salsa::db]
impl Db for Database {
    fn solve_cache(&self) -> &SolveCache {
        &self.solves
    }
}

/// The one database. Cheap to clone: clones share storage, as salsa snapshots do.
///
/// Besides salsa's storage it keeps one memo of its own, fusion's solved ILP components. Salsa
/// keys a query by its inputs, and a component's inputs (its function's IR, its place in the
/// file) change with any edit before it, while the top level, where every non-recursive function
/// is inlined, changes with every edit; the memo is keyed by the component's content, so the ILP
/// runs only for the components an edit changed. It is a cache of a pure function of its key, so
/// reading it from a query keeps the query deterministic.
#[salsa::db]
#[derive(Clone, Default)]
pub struct Database {
    storage: salsa::Storage<Self>,
    solves: Arc<SolveCache>,
}

#[salsa::db]
impl salsa::Database for Database {}

/// Which queries executed (rather than being reused), as `query_name(Id(..))` strings.
/// Tests use it to prove that an edit re-runs only what it must.
#[derive(Clone, Default)]
pub struct ExecutionLog {
    entries: Arc<Mutex<Vec<String>>>,
}

impl ExecutionLog {
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.entries.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Database {
    /// An empty database that keeps its solved ILP components in `solves`, which other
    /// databases may share: a program compiled afresh reuses every component another one
    /// solved. The cache holds a pure function of its keys, so sharing it changes no plan.
    pub fn sharing_solves(solves: Arc<SolveCache>) -> Database {
        Database { storage: salsa::Storage::default(), solves }
    }

    /// A database that records every query execution in the returned log.
    pub fn with_execution_log() -> (Database, ExecutionLog) {
        let log = ExecutionLog::default();
        let entries = log.entries.clone();
        let callback = move |event: salsa::Event| {
            if let salsa::EventKind::WillExecute { database_key } = event.kind {
                let entry = format!("{database_key:?}");
                entries.lock().unwrap_or_else(|e| e.into_inner()).push(entry);
            }
        };
        let db = Database { storage: salsa::Storage::new(Some(Box::new(callback))), solves: Arc::default() };
        (db, log)
    }
}
