//! `weft kernel`: the Jupyter front end of the session engine. It speaks the Jupyter messaging
//! protocol 5.3 over ZeroMQ (`kernel`), with `jupyter-protocol`'s message types and
//! `jupyter-zmq-client`'s signed sockets, renders the engine's events as Jupyter messages
//! (`render`), and installs its kernelspec (`install`).
//!
//! **Architecture Invariant:** no compiler logic lives here. What a cell means, its result, its
//! completions and what Shift-Tab says about it all come from `weft_session::engine::Engine`, the
//! engine the REPL uses; this crate only moves its answers over the wire.

mod install;
mod kernel;
mod render;

pub use install::{InstallPlace, install};
pub use kernel::{Config, run};
