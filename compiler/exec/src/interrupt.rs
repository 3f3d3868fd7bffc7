//! The one interruption flag of a run. A front end sets it from another thread (Ctrl-C in the
//! REPL, a notebook's interrupt request); the executors poll it between statements, at calls
//! and at each loop step (the interpreter's calls and loops, the host control flow, the CPU
//! executor's element loops) and stop with E0410.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rowan::TextRange;
use weft_syntax::{Code, Diagnostic};

/// A shared flag: clones see the same one.
#[derive(Debug, Clone, Default)]
pub struct Interrupt(Arc<AtomicBool>);

impl Interrupt {
    /// Asks the run to stop.
    pub fn request(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Lowers the flag, before the next run.
    pub fn clear(&self) {
        self.0.store(false, Ordering::Relaxed);
    }

    pub fn is_requested(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// E0410 at `span` if the run should stop.
    pub fn check(&self, span: TextRange) -> Result<(), Diagnostic> {
        if self.is_requested() { Err(interrupted(span)) } else { Ok(()) }
    }
}

/// The error an interrupted run stops with.
pub fn interrupted(span: TextRange) -> Diagnostic {
    Diagnostic::new(Code::Interrupted, span, "interrupted")
}
