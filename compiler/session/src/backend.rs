//! Which executor runs a program when the user does not say.

use weft_analysis::pipeline;
use weft_analysis::{Db, SourceFile};
use weft_flat::flatten;
use weft_syntax::Code;
use weft_syntax::line_index::LineIndex;

use crate::device::DeviceSlot;

/// The executors a program can run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The reference interpreter: nested semantics, no flattening.
    Interp,
    /// The flattened program on the parallel CPU executor.
    Cpu,
    /// The flattened program on the GPU executor.
    Gpu,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Interp => "interp",
            Backend::Cpu => "cpu",
            Backend::Gpu => "gpu",
        }
    }
}

/// The backend for `file` when none is asked for, and the one-line notice to show when it is
/// not the GPU (as the language brief asks): the GPU executor on an adapter that is not a CPU
/// (lavapipe and llvmpipe only when asked for), else the CPU executor, or the interpreter for
/// a program the flattener cannot handle yet.
pub fn default_backend(db: &dyn Db, file: SourceFile, device: &mut DeviceSlot) -> (Backend, Option<String>) {
    match pipeline::flat_program(db, file, flatten::Options::default()) {
        Err(diagnostics)
            if !diagnostics.is_empty() && diagnostics.iter().all(|d| d.code == Code::UnsupportedOnDevice) =>
        {
            let position = LineIndex::new(file.text(db)).line_col(diagnostics[0].range.start());
            let notice = format!(
                "running on the reference interpreter: {} ({}:{}:{})",
                diagnostics[0].message,
                file.path(db),
                position.line + 1,
                position.col + 1
            );
            (Backend::Interp, Some(notice))
        }
        _ if device.get().is_ok_and(|gpu| !gpu.is_cpu()) => (Backend::Gpu, None),
        _ => {
            let notice =
                "running on the cpu executor (no GPU adapter other than a CPU one; --backend gpu uses it)";
            (Backend::Cpu, Some(notice.to_string()))
        }
    }
}
