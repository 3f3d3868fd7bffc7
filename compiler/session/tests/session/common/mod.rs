//! Helpers shared by the session's integration tests: where the Weft test programs live, and
//! the differential harness.

pub mod differential;

#[path = "../../../../tests/programs.rs"]
mod programs;

pub use programs::*;
