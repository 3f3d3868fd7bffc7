//! `weft-exec`: the executors that need no device. `interp` is the reference interpreter over
//! the core, the oracle for every other executor; `cpu` runs the segmented IR in parallel with
//! rayon; `host_flow` is the host control flow (calls, branches, loops, prints) that the CPU
//! and GPU executors share; `chart` is the data a chart statement hands the host; `Interrupt` is the flag that stops any of them.

pub mod chart;
pub mod cpu;
pub mod host_flow;
pub mod interp;
mod interrupt;

pub use interrupt::{Interrupt, interrupted};
