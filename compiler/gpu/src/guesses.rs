//! Sizes guessed inside a call, and checked when it returns.
//!
//! Inside a call, a segment layout whose segments lie in collections whose sizes the host holds
//! only as bounds (the concatenation of a level's results, after a recursive call, above all)
//! would be allocated by the bounds' sum, which compounds with the depth of a recursion
//! (`docs/performance.md`, issue 30, tenth part), or sized exactly by a second read-back per
//! level. The executor guesses instead: where the summed bound is larger, the layout is allocated
//! by the elements of the call's largest vector argument, plus one per segment and one more (a
//! sort, a partition or a hull returns no more than it was given, plus an element per segment),
//! and its total is cut at that size on the device, so no kernel passes the buffer. A call whose
//! arguments hold no more than an element per segment of the layout (scalars, or a lifted
//! function's scalar parameters, one per instance) guesses nothing: it has no collection to
//! guess from. The rule counts elements, not types: a lifted call of scalars whose layout has
//! fewer segments than instances may still guess, and pays a rerun if the guess fails.
//!
//! A total that reaches its guess may have been cut. A read-back checks the guessed totals it
//! brings before the host uses anything it read (unless it found a failure from before the call
//! opened: that failure is the program's, and the guesses no longer matter); the outermost call
//! that guessed reads back once when it returns, to check the rest. A guess that failed, or a
//! guessed layout the device had no room for (after a read-back that reports any failure from
//! before it), stops the call, and the walker runs the call again from its arguments
//! (`Machine::guesses_held`): values are immutable, so the second run gives what a run without
//! guesses gives. The run then guesses no more, and `Report::guesses` counts the failure.
//!
//! A call run again repeats no output: a function cannot print or draw (E0102,
//! `print-in-function`), so output comes only from top-level statements, outside every call.

use std::sync::Arc;

use rowan::TextRange;

use weft_core::types::Scalar;
use weft_exec::host_flow::RunResult;
use weft_flat::wgsl::scalar::storage_size;
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
    pending_at_open: usize,
    /// Totals cut at a guess, with the guess, that no read-back has brought yet.
    unchecked: Vec<(Arc<DeviceCount>, usize)>,
    /// A read-back found a total at its guess, or a guessed layout found no room.
    failed: bool,
    /// A guess failed earlier in the run, or the run failed.
    disabled: bool,
}

/// How many layouts a run allocated by a guess, and how many of those guesses failed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GuessCounts {
    pub made: u64,
    pub failed: u64,
}

impl Guesses {
    /// Whether the failure of launch `error` (a sequence number) came from before the call
    /// opened.
    pub(crate) fn failed_before_open(&self, error: u32) -> bool {
        (error as usize) < self.pending_at_open
    }

    /// A read-back found no failure: every launch before the call is checked.
    pub(crate) fn launches_checked(&mut self) {
        self.pending_at_open = 0;
    }

    /// The run failed on its own: what was guessed no longer matters, and the failure's
    /// explanation, which reads back again, must not take a cut total for a failed guess.
    pub(crate) fn give_up(&mut self) {
        self.unchecked.clear();
        self.disabled = true;
    }
}

impl GpuMachine<'_, '_> {
    /// A call with `args` opens at `depth + 1` (`Machine::open_guesses`): notes its largest
    /// argument, and opens the region of guesses if none is open.
    pub(super) fn open_region(&mut self, args: &[DeviceValue], depth: usize) -> bool {
        let elements = args.iter().map(DeviceValue::elements).max().unwrap_or(0);
        let guesses = &mut self.guesses;
        if guesses.arg_elements.len() <= depth + 1 {
            guesses.arg_elements.resize(depth + 2, 0);
        }
        guesses.arg_elements[depth + 1] = elements;
        if guesses.open || guesses.disabled {
            return false;
        }
        guesses.open = true;
        guesses.pending_at_open = self.pending.len();
        true
    }

    /// The size to allocate a layout of `lengths` by, whose segments lie within collections
    /// of sizes `within`, where none is exact on the host: their summed bound where it is no
    /// larger than the guess, else the guess (`true`). `None` where the executor may not guess:
    /// outside a region, or in a call whose arguments hold no more than an element per segment.
    pub(super) fn bound_or_guess(
        &self,
        lengths: &DeviceVec,
        within: &[DeviceValue],
    ) -> Option<(usize, bool)> {
        let g = &self.guesses;
        if !g.open || g.disabled || within.is_empty() {
            return None;
        }
        let args = g.arg_elements.get(self.depth).copied()?;
        // One more than a result as large as the guess allows, which then never reaches it.
        let guess = args + lengths.len + 1;
        let summed = within
            .iter()
            .map(|size| size.host_size().or_else(|| self.device_length(size).map(|(bound, _)| bound)))
            .try_fold(0usize, |sum, b| b.and_then(|b| sum.checked_add(b)));
        match summed {
            Some(bound) if bound <= guess => Some((bound, false)),
            // Arguments of no more than an element per segment (scalars, or a lifted function's
            // scalar parameters) hold no collection that the results could be within; a guess
            // whose segment ids one binding cannot hold could never be allocated.
            _ if args <= lengths.len => None,
            _ if guess as u64 * storage_size(Scalar::I32) > self.gpu.max_binding() => None,
            _ => Some((guess, true)),
        }
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
        let mut cut = false;
        self.guesses.unchecked.retain(|(count, guess)| {
            match counts.iter().position(|c| Arc::ptr_eq(c, count)) {
                Some(i) => {
                    cut |= words[i] >= *guess;
                    false
                }
                None => true,
            }
        });
        if cut { Err(self.guess_failed(span)) } else { Ok(()) }
    }

    /// A guess failed: whatever the call computed since is void (its failures, the layouts
    /// kept for reuse, the guesses still unchecked), and the error stops the call, which the
    /// walker runs again.
    pub(super) fn guess_failed(&mut self, span: TextRange) -> Diagnostic {
        self.gpu.clear_record(&self.record);
        self.pending.clear();
        self.guesses.pending_at_open = 0;
        self.layouts.clear();
        self.guesses.unchecked.clear();
        self.guesses.failed = true;
        self.guesses.disabled = true;
        self.report.guesses.failed += 1;
        Diagnostic::new(
            Code::InternalError,
            span,
            "internal error: a size guessed on the GPU was too small, and the call was not run again",
        )
    }

    /// The region's call ended (`Machine::guesses_held`): whether every guess held. A call
    /// that `returned` reads back the totals no read-back has checked. One that stopped with an
    /// error stopped at a read-back, which checked every guess before that error could be raised
    /// (or the error came first, from before the call): the error is the program's, unless it
    /// is the guess's.
    pub(super) fn close_region(&mut self, returned: bool, span: TextRange) -> RunResult<bool> {
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
