//! The integration tests of the `weft` binary, one binary: the command line, the language
//! server through a real LSP client, and the tidy checks over the whole workspace.

mod cli;
mod lsp;
mod lsp_client;
mod repl;
mod tidy;
