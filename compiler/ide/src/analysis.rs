//! The editor's handles on the database, after rust-analyzer's and nil's: an `AnalysisHost`
//! that owns the database and applies edits, and `Analysis` snapshots that answer queries on
//! other threads. An edit cancels every snapshot's work in flight: the query unwinds, and
//! `Analysis::with` turns the unwinding into `Err(Cancelled)`, which a server reports as
//! "content modified". Front ends never see salsa.

use std::panic::AssertUnwindSafe;

use salsa::Setter as _;
use weft_analysis::{Database, Db, SourceFile};

/// A query gave up because the text changed under it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancelled;

impl std::fmt::Display for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the text changed while the query ran")
    }
}

pub type Cancellable<T> = Result<T, Cancelled>;

/// Owns the database; the only place edits happen.
#[derive(Default)]
pub struct AnalysisHost {
    db: Database,
}

impl AnalysisHost {
    /// A new source in the database.
    pub fn add_file(&mut self, path: String, text: String) -> SourceFile {
        SourceFile::new(&self.db, path, text)
    }

    /// Replaces a source's text. Waits for the snapshots' queries to unwind first (salsa
    /// cancels them).
    pub fn set_text(&mut self, file: SourceFile, text: String) {
        file.set_text(&mut self.db).to(text);
    }

    /// A snapshot to query, on any thread.
    pub fn analysis(&self) -> Analysis {
        Analysis { db: self.db.clone() }
    }
}

/// A snapshot of the database at one revision.
#[derive(Clone)]
pub struct Analysis {
    db: Database,
}

impl Analysis {
    /// Runs `query` on the snapshot; `Err(Cancelled)` if an edit arrived meanwhile. Any other
    /// panic goes on unwinding to the caller. A query that unwound leaves nothing half-updated
    /// behind: salsa discards its work, and callers drop a cancelled snapshot.
    pub fn with<T>(&self, query: impl FnOnce(&dyn Db) -> T) -> Cancellable<T> {
        let db: &dyn Db = &self.db;
        salsa::Cancelled::catch(AssertUnwindSafe(move || query(db))).map_err(|_| Cancelled)
    }

    pub fn text(&self, file: SourceFile) -> &str {
        file.text(&self.db)
    }
}
