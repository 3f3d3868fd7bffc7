//! Sizes guessed inside a call, and checked when it returns.
//!
//! The layout after a recursive call (the concatenation of a level's results) lies within
//! collections whose sizes the host holds only as bounds, and a bound summed from bounds
//! compounds with the depth of the recursion (`docs/performance.md`, issue 30, tenth part).
//! Rather than read its total back, which would cost each level a second read-back, the
//! executor guesses: inside a call, a layout whose summed bound is larger is allocated by
//! the elements of the call's largest vector argument, plus one per segment and one more (a
//! sort, a partition or a hull returns no more than it was given, plus an element per
//! segment), and its total is cut at that size on the device, so no kernel passes the buffer.
//!
//! A total that reaches its guess may have been cut. Every read-back checks the guessed totals
//! it brings, before the host uses anything it read; the outermost call that guessed reads
//! back once when it returns, to check the rest. A guess that failed stops the call at that
//! read-back, and the walker runs the call again from its arguments (`Machine::guesses_held`):
//! values are immutable, so the second run gives what a run without guesses gives. The run
//! then guesses no more, and `Report::guesses` counts the failure.

use std::sync::Arc;

use rowan::TextRange;

use weft_exec::host_flow::RunResult;
use weft_syntax::diagnostics::{Code, Diagnostic};

use super::GpuMachine;
use super::value::{DeviceCount, DeviceValue, DeviceVec};

/// The guesses of one run.
#[derive(Debug, Default)]
pub(crate) struct Guesses {
    /// By call depth, the elements of the largest vector argument of the call open there.
    arg_elements: Vec<usize>,
    /// Whether a call that may guess is open: the outermost one, which checks them all.
    open: bool,
    /// How many launches that may fail were waiting when the call opened: a failure of one of
    /// them is the program's, whatever the guesses did after.
    pub(crate) pending_at_open: usize,
    /// Totals cut at a guess, with the guess, that no read-back has brought yet.
    unchecked: Vec<(Arc<DeviceCount>, usize)>,
    /// A read-back found a total at its guess.
    failed: bool,
    /// A guess failed earlier in the run.
    off: bool,
}

/// How many layouts a run allocated by a guess, and how many of those guesses failed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GuessCounts {
    pub made: u64,
    pub failed: u64,
}

impl GpuMachine<'_, '_> {
    /// A call with `args` opens at `depth + 1`: notes its largest argument, and opens the
    /// region of guesses if none is open.
    pub(super) fn open_call(&mut self, args: &[DeviceValue], depth: usize) -> bool {
        let elements = args.iter().map(DeviceValue::elements).max().unwrap_or(0);
        let guesses = &mut self.guesses;
        if guesses.arg_elements.len() <= depth + 1 {
            guesses.arg_elements.resize(depth + 2, 0);
        }
        guesses.arg_elements[depth + 1] = elements;
        if guesses.open || guesses.off {
            return false;
        }
        guesses.open = true;
        guesses.pending_at_open = self.pending.len();
        true
    }

    /// The size to allocate a layout of `lengths` by, whose segments lie within collections
    /// of sizes `within`, where none is exact on the host: their summed bound where it is no
    /// larger than the guess, else the guess (`true`). `None` outside a region of guesses.
    pub(super) fn bound_or_guess(
        &self,
        lengths: &DeviceVec,
        within: &[DeviceValue],
    ) -> Option<(usize, bool)> {
        let g = &self.guesses;
        if !g.open || g.off || within.is_empty() {
            return None;
        }
        let args = g.arg_elements.get(self.depth).copied()?;
        // One more than a result as large as the guess allows, which then never reaches it.
        let guess = args + lengths.len + 1;
        let summed = within
            .iter()
            .map(|size| size.host_size().or_else(|| self.device_length(size).map(|(bound, _)| bound)))
            .try_fold(0usize, |sum, b| b.and_then(|b| sum.checked_add(b)));
        Some(match summed {
            Some(bound) if bound <= guess => (bound, false),
            _ => (guess, true),
        })
    }

    /// `total`, cut at `guess` on the device, to be checked by a read-back.
    pub(super) fn note_guess(&mut self, total: &Arc<DeviceCount>, guess: usize) {
        self.guesses.unchecked.push((total.clone(), guess));
        self.report.guesses.made += 1;
    }

    /// Checks the guessed totals among `counts`, whose words a read-back brought: an error
    /// that stops the call if one reached its guess.
    pub(super) fn check_guesses(
        &mut self,
        counts: &[Arc<DeviceCount>],
        words: &[usize],
        span: TextRange,
    ) -> RunResult<()> {
        let word_of = |c: &Arc<DeviceCount>| counts.iter().position(|k| Arc::ptr_eq(k, c)).map(|i| words[i]);
        let cut = self.guesses.unchecked.iter().any(|(c, guess)| word_of(c).is_some_and(|w| w >= *guess));
        if !cut {
            self.guesses.unchecked.retain(|(c, _)| word_of(c).is_none());
            return Ok(());
        }
        // Whatever the call computed after the cut is void: its failures, the layouts kept
        // for reuse, the guesses still unchecked.
        self.gpu.clear_record(&self.record);
        self.pending.clear();
        self.layouts.clear();
        self.guesses.unchecked.clear();
        self.guesses.failed = true;
        self.guesses.off = true;
        self.report.guesses.failed += 1;
        Err(Diagnostic::new(
            Code::InternalError,
            span,
            "internal error: a size guessed on the GPU was too small, and the call was not run again",
        ))
    }

    /// The region's call ended: whether every guess held. A call that `returned` reads back
    /// the totals no read-back has checked. One that stopped with an error stopped at a
    /// read-back, which checked every guess before that error could be raised (or the error
    /// came first, from before the call): the error is the program's, unless it is the guess's.
    pub(super) fn close_call(&mut self, returned: bool, span: TextRange) -> RunResult<bool> {
        self.guesses.open = false;
        if !returned {
            self.guesses.unchecked.clear();
        } else if !self.guesses.failed && !self.guesses.unchecked.is_empty() {
            self.attribute_to(span);
            let outcome = self.read_parts(&[], span);
            if !self.guesses.failed {
                outcome?;
            }
        }
        Ok(!std::mem::take(&mut self.guesses.failed))
    }
}
