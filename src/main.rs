//! `weft`: the one user-facing binary. It parses the command line and dispatches to library code;
//! nothing here knows how Weft is compiled.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use weft_compiler::check::{CheckConfig, OutputFormat, check_sources};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "weft",
    version,
    about = "Weft: nested data-parallel programs, in a subset of Python, on the GPU"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Report syntax and name errors without running anything.
    Check {
        /// The `.weft` files to check.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// How to print diagnostics.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Text,
    Json,
}

/// Exit status for a usage error (bad arguments, unreadable file), as the language brief sets.
const USAGE_ERROR: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Check { files, format } => check(&files, format),
    }
}

fn check(files: &[PathBuf], format: Format) -> ExitCode {
    let mut sources = Vec::with_capacity(files.len());
    for path in files {
        match std::fs::read(path) {
            Ok(bytes) => sources.push((path.display().to_string(), bytes)),
            Err(error) => {
                eprintln!("error: cannot read {}: {error}", path.display());
                return ExitCode::from(USAGE_ERROR);
            }
        }
    }
    let format = match format {
        Format::Text => OutputFormat::Text,
        Format::Json => OutputFormat::Json,
    };
    // Colour only for a person at a terminal, and never when NO_COLOR is set (no-color.org).
    let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let config = CheckConfig { format, color };
    let db = weft_compiler::Database::default();
    let report = check_sources(&db, &sources, config);
    // The process ends next; freeing every tree and memo first would only delay the exit.
    std::mem::forget(db);
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(report.output.as_bytes());
    let _ = stdout.flush();
    if report.has_errors { ExitCode::from(1) } else { ExitCode::SUCCESS }
}
