//! The integration tests of the whole engine, through `weft-session`, one binary: every
//! executor against the interpreter and CPython, run-time errors, the pipeline's IR and fusion
//! plans, shapes and types on real programs, and the session boundary itself.

mod boundary;
mod common;
mod cpu_executor;
mod engine;
mod flatten_ir;
mod flatten_properties;
mod fusion_rules;
mod gpu_executor;
mod recursion_properties;
mod run_errors;
mod samples;
mod shapes;
mod types;
