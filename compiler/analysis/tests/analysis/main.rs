//! The integration tests of `weft-analysis`, one binary: parse trees, the Python subset,
//! rendered diagnostics, incremental reuse and robustness on mutated programs.

#[path = "../../../tests/programs.rs"]
mod common;
mod diagnostics;
mod incremental;
mod parse;
mod python_subset;
mod robustness;
