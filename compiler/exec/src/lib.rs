//! `weft-exec`: the executors that need no device. `interp` is the reference interpreter over
//! the core, the oracle for every other executor; `cpu` runs the segmented IR in parallel with
//! rayon; `host_flow` is the host control flow (calls, branches, loops, prints) that the CPU
//! and GPU executors share; `Interrupt` is the flag that stops any of them.

pub mod cpu;
pub mod host_flow;
pub mod interp;
mod interrupt;

pub use interrupt::{Interrupt, interrupted};
