//! `weft`: the one user-facing binary. It parses the command line and dispatches to library code;
//! nothing here knows how Weft is compiled.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use weft_compiler::check::{CheckConfig, OutputFormat, check_sources};
use weft_compiler::diagnostics::render_text;
use weft_compiler::driver::{self, Backend, RunError};
use weft_compiler::{Diagnostic, SourceFile, flatten, fuse, gpu, interp};

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
    /// Report syntax, name, type and shape errors without running anything.
    Check {
        /// The `.weft` files to check.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// How to print diagnostics.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Also print each binding's type and shape (`ys : [f32; len(xs)]`), and how many
        /// indexes are proven in bounds.
        #[arg(long, conflicts_with = "format")]
        shapes: bool,
    },
    /// Compile a file and run its top-level statements.
    Run {
        /// The `.weft` file to run.
        file: PathBuf,
        /// Which executor runs it.
        #[arg(long, value_enum)]
        backend: Option<BackendArg>,
        /// The GPU adapter to use: the first whose name contains this (see `weft devices`);
        /// `WEFT_ADAPTER` says the same.
        #[arg(long)]
        device: Option<String>,
        /// Print on stderr what the GPU executor did: launches, read-backs, bytes moved, and
        /// which ops ran on the CPU executor instead.
        #[arg(long)]
        profile: bool,
        #[command(flatten)]
        schedule: ScheduleArgs,
    },
    /// List the GPU adapters, with their limits and features.
    Devices,
    /// Print the WGSL kernels of a file's program, each validated by naga.
    Wgsl {
        /// The `.weft` file.
        file: PathBuf,
        #[command(flatten)]
        schedule: ScheduleArgs,
    },
    /// Print the fusion plan of a file's program: its kernels, what each reads and writes,
    /// and why adjacent ops stayed apart. Needs no GPU.
    Fusion {
        /// The `.weft` file.
        file: PathBuf,
        /// How to print the plan.
        #[arg(long, value_enum, default_value_t = PlanFormat::Text)]
        format: PlanFormat,
        /// Storage buffers one kernel may bind (the adapter's limit; WebGPU guarantees 8).
        #[arg(long, default_value_t = weft_compiler::fuse::PORTABLE_BINDINGS)]
        max_bindings: u32,
        #[command(flatten)]
        schedule: ScheduleArgs,
    },
    /// Print the flattened, segmented IR of a file's program.
    Ir {
        /// The `.weft` file.
        file: PathBuf,
        #[command(flatten)]
        schedule: ScheduleArgs,
    },
    /// Format files in place: canonical spacing and indentation, comments kept. A file with
    /// syntax errors is reported and left as it is.
    Fmt {
        /// The `.weft` files to format.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Change nothing; list the files that formatting would change, and exit 1 if any.
        #[arg(long)]
        check: bool,
    },
    /// Run the language server on stdin and stdout (LSP 3.17).
    Lsp,
    /// Compiler developer tools: `weft dev --after PASS FILE`, `weft dev fuzz`.
    #[command(args_conflicts_with_subcommands = true)]
    Dev {
        #[command(subcommand)]
        tool: Option<DevTool>,
        /// Print the program after this pass.
        #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(driver::PASSES))]
        after: Option<String>,
        /// The `.weft` file.
        file: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum DevTool {
    /// Generate random valid programs, run each on the interpreter, the CPU executor and the
    /// GPU executor under every fusion strategy (and CPython where it can run them), compare
    /// them exactly, and shrink and save every disagreement.
    Fuzz {
        /// The campaign's seed: the same seed gives the same programs.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Stop starting new programs after this many seconds.
        #[arg(long, default_value_t = 60)]
        seconds: u64,
        /// Stop after this many programs, if sooner.
        #[arg(long)]
        programs: Option<u64>,
        /// The index of the first program (to reproduce a finding).
        #[arg(long, default_value_t = 0)]
        start: u64,
        /// Print program `start` and exit, without running it.
        #[arg(long)]
        print: bool,
        /// Skip the GPU executor.
        #[arg(long)]
        no_gpu: bool,
        /// Save each shrunk finding here.
        #[arg(long, default_value = "target/fuzz-findings")]
        out: PathBuf,
    },
}

/// How flattening schedules nested work.
#[derive(Clone, Copy, clap::Args)]
struct ScheduleArgs {
    /// How a reduction (`sum`, `product`, `reduce`) of a scalar comprehension inside parallel
    /// code runs: as a sequential loop inside each element (Copperhead's schedule), flat, or
    /// (auto) flat on the CPU and, on a GPU, as a run-time cost estimate from the lengths picks.
    #[arg(long, value_enum, default_value_t = InnerArg::Auto)]
    inner: InnerArg,
    /// Run a recursive function called from parallel code on this many elements at a time
    /// (piecewise execution, which bounds its memory); 0 runs all elements at once.
    #[arg(long, default_value_t = flatten::DEFAULT_PIECE_SIZE)]
    piece_size: u32,
    /// How ops are grouped into kernels: one per op, greedily, or by the integer linear
    /// program.
    #[arg(long, value_enum, default_value_t = FusionArg::Ilp)]
    fusion: FusionArg,
}

#[derive(Clone, Copy, ValueEnum)]
enum FusionArg {
    /// One kernel per IR op.
    None,
    /// Greedy top-down: each candidate pair, in program order, fused when it can be.
    Greedy,
    /// Nessie's integer linear program (bounded; greedy past the bound).
    Ilp,
}

#[derive(Clone, Copy, ValueEnum)]
enum InnerArg {
    /// Flat on the CPU; on a GPU, chosen at run time by a cost estimate.
    Auto,
    /// Always flat, segmented operations.
    Flat,
    /// Always a loop inside each element, where it applies.
    Sequential,
}

#[derive(Clone, Copy, ValueEnum)]
enum PlanFormat {
    Text,
    Json,
    Dot,
    Svg,
}

impl ScheduleArgs {
    fn options(self) -> flatten::Options {
        let strategy = match self.fusion {
            FusionArg::None => fuse::Strategy::None,
            FusionArg::Greedy => fuse::Strategy::Greedy,
            FusionArg::Ilp => fuse::Strategy::Ilp,
        };
        flatten::Options {
            inner: match self.inner {
                InnerArg::Auto => flatten::InnerSchedule::Auto,
                InnerArg::Flat => flatten::InnerSchedule::Flat,
                InnerArg::Sequential => flatten::InnerSchedule::Sequential,
            },
            piece_size: self.piece_size,
            fusion: fuse::Options { strategy, ..fuse::Options::default() },
            ..flatten::Options::default()
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum BackendArg {
    /// The reference interpreter: nested semantics, no flattening.
    Interp,
    /// The flattened CPU executor.
    Cpu,
    /// The GPU executor.
    Gpu,
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
        Command::Check { files, format, shapes } => check(&files, format, shapes),
        Command::Run { file, backend, device, profile, schedule } => {
            if let Some(name) = device {
                gpu::prefer_adapter(name);
            }
            run(&file, backend, profile, schedule.options())
        }
        Command::Devices => devices(),
        Command::Wgsl { file, schedule } => wgsl(&file, schedule.options().for_gpu()),
        Command::Ir { file, schedule } => ir(&file, schedule.options()),
        Command::Fusion { file, format, max_bindings, schedule } => {
            let mut options = schedule.options().for_gpu();
            options.fusion.max_bindings = max_bindings;
            fusion(&file, format, options)
        }
        Command::Fmt { files, check } => fmt(&files, check),
        Command::Lsp => weft_lsp::serve_stdio(),
        Command::Dev {
            tool: Some(DevTool::Fuzz { seed, seconds, programs, start, print, no_gpu, out }),
            ..
        } => {
            let config = weft_fuzz::Config {
                seed,
                budget: std::time::Duration::from_secs(seconds),
                max_programs: programs,
                gpu: !no_gpu,
                python: Some(PathBuf::from("tests/python/prelude.py")).filter(|p| p.exists()),
                save_to: Some(out),
                shrink_budget: std::time::Duration::from_secs(60),
            };
            fuzz(&config, start, print)
        }
        Command::Dev { tool: None, after: Some(after), file: Some(file) } => dev(&file, &after),
        Command::Dev { .. } => {
            eprintln!("error: `weft dev` needs `--after PASS FILE`, or the tool `fuzz`");
            ExitCode::from(USAGE_ERROR)
        }
    }
}

/// Colour only for a person at a terminal, and never when NO_COLOR is set (no-color.org).
fn use_color(stream: &impl IsTerminal) -> bool {
    stream.is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Reads a source file into a fresh database; a read failure is a usage error.
fn load(path: &Path) -> Result<(weft_compiler::Database, SourceFile), ExitCode> {
    let bytes = std::fs::read(path).map_err(|error| {
        eprintln!("error: cannot read {}: {error}", path.display());
        ExitCode::from(USAGE_ERROR)
    })?;
    let (text, utf8_error) = weft_compiler::decode_source(&bytes);
    let db = weft_compiler::Database::default();
    let file = SourceFile::new(&db, path.display().to_string(), text);
    if let Some(error) = utf8_error {
        report(&db, file, &[error]);
        return Err(ExitCode::from(1));
    }
    Ok((db, file))
}

fn report(db: &weft_compiler::Database, file: SourceFile, diagnostics: &[Diagnostic]) {
    let text = render_text(diagnostics, file.path(db), file.text(db), use_color(&std::io::stderr()));
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// Prints to stdout and reads data files relative to the working directory.
struct StdoutHost {
    out: std::io::BufWriter<std::io::Stdout>,
}

impl interp::Host for StdoutHost {
    fn print(&mut self, line: &str) {
        let _ = self.out.write_all(line.as_bytes());
    }

    fn read_file(&mut self, path: &str) -> std::io::Result<Vec<u8>> {
        std::fs::read(path)
    }
}

fn run(path: &Path, backend: Option<BackendArg>, profile: bool, options: flatten::Options) -> ExitCode {
    let (db, file) = match load(path) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    let backend = match backend {
        Some(BackendArg::Interp) => Backend::Interp,
        Some(BackendArg::Cpu) => Backend::Cpu,
        Some(BackendArg::Gpu) => Backend::Gpu,
        None => default_backend(&db, file),
    };
    let mut host = StdoutHost { out: std::io::BufWriter::new(std::io::stdout()) };
    let result = match backend {
        Backend::Gpu if profile => driver::run_gpu_profiled(&db, file, options, &mut host)
            .map(|report| print_profile(&report, file.text(&db))),
        Backend::Gpu => driver::run_gpu_with(&db, file, options, &mut host).map(|_| ()),
        other => driver::run_with(&db, file, other, options, &mut host),
    };
    let _ = host.out.flush();
    let code = match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(RunError::Compile(diagnostics)) => {
            report(&db, file, &diagnostics);
            ExitCode::from(1)
        }
        Err(RunError::Runtime(diagnostic)) => {
            report(&db, file, &[diagnostic]);
            ExitCode::from(1)
        }
        Err(RunError::NoDevice(why)) => {
            eprintln!("error: {why}");
            ExitCode::from(1)
        }
    };
    std::mem::forget(db);
    code
}

/// What `--profile` prints, on stderr: the GPU executor's counts, then kernel time, launches,
/// read-backs and bytes by source range (the op or condition they ran for), by kernel, and by
/// call depth.
fn print_profile(report: &gpu::Report, text: &str) {
    let s = &report.stats;
    let mut out = String::new();
    if let Ok(device) = gpu::shared_gpu() {
        out.push_str(&format!("profile: adapter {}\n", device.describe()));
    }
    out.push_str(&format!(
        "  launches {}, submissions {}, read-backs {} ({} bytes), uploads {} ({} bytes)\n",
        s.launches, s.submissions, s.read_backs, s.bytes_read_back, s.uploads, s.bytes_uploaded
    ));
    out.push_str(&format!(
        "  bytes bound to kernels {}, buffers created {}, pipelines built {} in {:.1} ms\n",
        s.bytes_bound,
        s.buffers_created,
        s.pipelines_built,
        s.pipeline_time.as_secs_f64() * 1e3
    ));
    if let Some(profile) = &report.profile {
        out.push_str(&profile_tables(profile, text));
    }
    if report.levels.len() > 2 {
        out.push_str("  by call depth (1 is the top level):\n    depth     calls  launches  read-backs\n");
        for (depth, level) in report.levels.iter().enumerate().skip(1) {
            out.push_str(&format!(
                "    {depth:>5} {:>9} {:>9} {:>11}\n",
                level.calls, level.launches, level.read_backs
            ));
        }
    }
    for (op, count) in &report.on_cpu {
        out.push_str(&format!("  ran on the cpu executor ({count}x): {op}\n"));
    }
    let _ = std::io::stderr().write_all(out.as_bytes());
}

/// The profile's time and traffic by source range, then time and launches by kernel.
fn profile_tables(profile: &weft_compiler::runtime::Profile, text: &str) -> String {
    use std::collections::BTreeMap;
    use std::time::Duration;
    let clock = match profile.clock {
        weft_compiler::runtime::ProfileClock::Timestamps => "timestamp queries",
        weft_compiler::runtime::ProfileClock::WallClock => "wall clock around each launch",
    };
    let total: Duration = profile.timings.iter().map(|t| t.time).sum();
    let mut out = format!("  kernel time {:.3} ms ({clock})\n", total.as_secs_f64() * 1e3);
    let mut by_source: BTreeMap<(u32, u32), Duration> = BTreeMap::new();
    let mut by_kernel: BTreeMap<&str, (Duration, u64)> = BTreeMap::new();
    for t in &profile.timings {
        *by_source.entry(t.source).or_default() += t.time;
        let k = by_kernel.entry(&t.kernel).or_default();
        k.0 += t.time;
        k.1 += 1;
    }
    let mut sources: Vec<_> = profile.sources.iter().collect();
    sources.sort_by_key(|(range, traffic)| {
        (
            std::cmp::Reverse(by_source.get(*range).copied().unwrap_or_default()),
            std::cmp::Reverse(traffic.launches),
        )
    });
    let index = weft_compiler::line_index::LineIndex::new(text);
    out.push_str("  by source (bytes: bound to kernels and read back):\n         ms  launches  read-backs           bytes  where\n");
    for ((start, end), traffic) in sources {
        let time = by_source.get(&(*start, *end)).copied().unwrap_or_default();
        let at = index.line_col((*start).into());
        let snippet: String = text
            .get(*start as usize..*end as usize)
            .unwrap_or("")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let snippet = if snippet.chars().count() > 48 {
            format!("{}…", snippet.chars().take(47).collect::<String>())
        } else {
            snippet
        };
        let snippet = if *end == 0 { "(the run's setup and final check)".to_string() } else { snippet };
        out.push_str(&format!(
            "  {:>9.3} {:>9} {:>11} {:>15}  {}:{} {snippet}\n",
            time.as_secs_f64() * 1e3,
            traffic.launches,
            traffic.read_backs,
            traffic.bytes_bound + traffic.bytes_read_back,
            at.line + 1,
            at.col + 1
        ));
    }
    let mut kernels: Vec<_> = by_kernel.into_iter().collect();
    kernels.sort_by(|a, b| b.1.0.cmp(&a.1.0).then(a.0.cmp(b.0)));
    out.push_str("  by kernel:\n         ms  launches  kernel\n");
    for (name, (time, launches)) in kernels {
        out.push_str(&format!("  {:>9.3} {launches:>9}  {name}\n", time.as_secs_f64() * 1e3));
    }
    out
}

/// The gpu executor on a GPU adapter that is not a CPU (lavapipe and llvmpipe only when asked
/// for), else the cpu executor, or the interpreter for a program the flattener cannot handle
/// yet; with a one-line notice unless it is the gpu, as the brief asks.
fn default_backend(db: &weft_compiler::Database, file: SourceFile) -> Backend {
    match driver::flat_program(db, file) {
        Err(diagnostics)
            if diagnostics.iter().all(|d| d.code == weft_compiler::Code::UnsupportedOnDevice) =>
        {
            let position = weft_compiler::line_index::LineIndex::new(file.text(db))
                .line_col(diagnostics[0].range.start());
            eprintln!(
                "weft: running on the reference interpreter: {} ({}:{}:{})",
                diagnostics[0].message,
                file.path(db),
                position.line + 1,
                position.col + 1
            );
            Backend::Interp
        }
        _ if gpu::shared_gpu().is_ok_and(|device| !device.is_cpu()) => Backend::Gpu,
        _ => {
            eprintln!(
                "weft: running on the cpu executor (no GPU adapter other than a CPU one; --backend gpu uses it)"
            );
            Backend::Cpu
        }
    }
}

/// `weft devices`: every adapter, the one `weft run` would choose marked.
fn devices() -> ExitCode {
    let adapters = weft_compiler::runtime::adapter_summaries();
    if adapters.is_empty() {
        eprintln!(
            "error: no GPU adapter found; on Debian, `mesa-vulkan-drivers` gives lavapipe (Vulkan on the CPU)"
        );
        return ExitCode::from(1);
    }
    let mut out = String::new();
    for a in &adapters {
        let mark = if a.chosen { "*" } else { " " };
        out.push_str(&format!("{mark} {} ({}, {})\n", a.name, a.backend, a.device_type));
        if !a.driver.is_empty() {
            out.push_str(&format!("    driver: {}\n", a.driver));
        }
        for (name, value) in &a.limits {
            out.push_str(&format!("    {name}: {value}\n"));
        }
        out.push_str(&format!(
            "    features: {}\n",
            if a.features.is_empty() { "none".to_string() } else { a.features.join(", ") }
        ));
    }
    out.push_str(
        "* the adapter `weft run --backend gpu` chooses (set another with --device or WEFT_ADAPTER)\n",
    );
    let _ = std::io::stdout().write_all(out.as_bytes());
    ExitCode::SUCCESS
}

/// `weft wgsl FILE`: the kernels of the program, each validated.
fn wgsl(path: &Path, options: flatten::Options) -> ExitCode {
    show(path, |db, file| {
        let program = driver::flat_program_with(db, file, options)?;
        let index = weft_compiler::line_index::LineIndex::new(file.text(db));
        let mut out = String::new();
        let mut failures = Vec::new();
        for kernel in weft_compiler::wgsl::program::program_kernels(&program) {
            let at = index.line_col(kernel.span.start());
            out.push_str(&format!(
                "// kernel `{}`, for `{}` at {}:{}:{}\n",
                kernel.kernel.name,
                kernel.function,
                file.path(db),
                at.line + 1,
                at.col + 1
            ));
            match kernel.kernel.validate() {
                Ok(_) => out.push_str(&kernel.kernel.source),
                Err(why) => {
                    failures.push(Diagnostic::new(weft_compiler::Code::InternalError, kernel.span, why))
                }
            }
            out.push('\n');
        }
        if failures.is_empty() { Ok(out) } else { Err(failures) }
    })
}

/// `weft fusion FILE`: the plan, in the format asked for.
fn fusion(path: &Path, format: PlanFormat, options: flatten::Options) -> ExitCode {
    show(path, |db, file| {
        let (_, plan) = driver::fused_program_with(db, file, options)?;
        let mut plan = plan.into_owned();
        plan.locate(file.text(db));
        Ok(match format {
            PlanFormat::Text => plan.to_text(),
            PlanFormat::Json => plan.to_json() + "\n",
            PlanFormat::Dot => plan.to_dot(),
            PlanFormat::Svg => plan.to_svg(),
        })
    })
}

fn ir(path: &Path, options: flatten::Options) -> ExitCode {
    show(path, |db, file| driver::flat_program_with(db, file, options).map(|program| program.to_string()))
}

/// `weft dev fuzz`: a differential campaign, its progress on stderr and its summary on stdout;
/// exit 1 if it found a disagreement.
fn fuzz(config: &weft_fuzz::Config, start: u64, print: bool) -> ExitCode {
    if print {
        let program = weft_fuzz::generate::program(weft_fuzz::program_seed(config.seed, start));
        print!("{}", program.text());
        return ExitCode::SUCCESS;
    }
    let tty = std::io::stderr().is_terminal();
    let mut last = 0;
    let report = weft_fuzz::campaign(config, start, &mut |r| {
        if tty && r.programs != last {
            last = r.programs;
            eprint!(
                "\r{} programs, {} findings, {:.0} s",
                r.programs,
                r.findings.len(),
                r.elapsed.as_secs_f64()
            );
        }
    });
    if tty {
        eprintln!();
    }
    print!("{}", weft_fuzz::summary(config, &report));
    if report.findings.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) }
}

fn dev(path: &Path, pass: &str) -> ExitCode {
    show(path, |db, file| driver::dump_after(db, file, pass))
}

/// Prints what `text` gives for the file at `path`, or its diagnostics.
fn show(
    path: &Path,
    text: impl FnOnce(&weft_compiler::Database, SourceFile) -> Result<String, Vec<Diagnostic>>,
) -> ExitCode {
    let (db, file) = match load(path) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    let code = match text(&db, file) {
        Ok(text) => {
            let _ = std::io::stdout().write_all(text.as_bytes());
            ExitCode::SUCCESS
        }
        Err(diagnostics) => {
            report(&db, file, &diagnostics);
            ExitCode::from(1)
        }
    };
    std::mem::forget(db);
    code
}

/// `weft fmt FILE...`: each file formatted in place, or with `--check` only listed.
fn fmt(files: &[PathBuf], check: bool) -> ExitCode {
    let mut status = ExitCode::SUCCESS;
    for path in files {
        let (db, file) = match load(path) {
            Ok(loaded) => loaded,
            Err(code) => return code,
        };
        match weft_compiler::format::format_file(&db, file) {
            Ok(formatted) if formatted == *file.text(&db) => {}
            Ok(_) if check => {
                println!("{} would be reformatted", path.display());
                status = ExitCode::from(1);
            }
            Ok(formatted) => {
                if let Err(error) = std::fs::write(path, formatted) {
                    eprintln!("error: cannot write {}: {error}", path.display());
                    return ExitCode::from(USAGE_ERROR);
                }
            }
            Err(diagnostics) => {
                report(&db, file, &diagnostics);
                status = ExitCode::from(1);
            }
        }
    }
    status
}

fn check(files: &[PathBuf], format: Format, shapes: bool) -> ExitCode {
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
    let color = use_color(&std::io::stdout());
    let config = CheckConfig { format, color, shapes };
    let db = weft_compiler::Database::default();
    let report = check_sources(&db, &sources, config);
    // The process ends next; freeing every tree and memo first would only delay the exit.
    std::mem::forget(db);
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(report.output.as_bytes());
    let _ = stdout.flush();
    if report.has_errors { ExitCode::from(1) } else { ExitCode::SUCCESS }
}
