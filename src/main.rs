//! `weft`: the one user-facing binary. It parses the command line and dispatches to library code;
//! nothing here knows how Weft is compiled.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use weft_analysis::check::{CheckConfig, OutputFormat, check_sources};
use weft_analysis::pipeline::{self, InnerSchedule, Options, Strategy};
use weft_analysis::{Database, SourceFile};
use weft_session::figure::FigureFiles;
use weft_session::{Backend, DeviceSlot, Event, RunError, Session};
use weft_syntax::Diagnostic;
use weft_syntax::diagnostics::render_text;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Turns transparent huge pages off for this process. Every front end allocates and frees
/// short-lived buffers of megabytes (an executor's vectors, a plan's graphs), and with huge
/// pages each fresh 2 MiB page is zeroed by the kernel when first touched. Measured
/// (`docs/performance.md`): the language server's peak was 40–80 MB higher with them and no
/// faster; quicksort of 1M on the CPU executor spent a quarter of its time zeroing them, and
/// takes 18% less time without them.
fn no_transparent_huge_pages() {
    // SAFETY: sets a flag of this process, from plain integers.
    #[cfg(target_os = "linux")]
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// Keeps a long-lived process's resident memory close to what it holds. The language server
/// lives as long as the editor and rewrites its database on every key, so its resident memory is
/// what a user sees of it. mimalloc gives freed pages back to the system a second after they
/// are freed by default, longer than an edit's plan takes, so each plan's garbage stayed
/// resident while the next one was built; after 25 ms, the peak is 30–50 MB lower again, at no
/// measurable cost in latency (after 0 ms, edits took 20% longer). Measured on the 2,000-line
/// file (`docs/performance.md`, issue 27).
fn lean_memory() {
    /// `mi_option_purge_delay` in mimalloc's `mi_option_e`, which keeps its numbering across
    /// versions; `libmimalloc-sys` names no constant for it.
    const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
    // SAFETY: takes plain integers and only sets an option of this process.
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 25);
    }
}

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
        /// On the GPU executor, run a call (a flattened recursion) whose arguments' arrays hold
        /// fewer elements than this on the CPU executor, where launch and read-back latency would
        /// cost more than the work; 0 runs everything on the device. By default, the adapter's
        /// crossover (4,096 elements on a GPU; 1,048,576 on a CPU adapter such as lavapipe).
        #[arg(long)]
        cpu_crossover: Option<u64>,
        /// Where charts (`plot`, `hist`, `image`) are written.
        #[arg(long, default_value = FigureFiles::DEFAULT_DIRECTORY)]
        figures: PathBuf,
        #[command(flatten)]
        schedule: ScheduleArgs,
    },
    /// An interactive session: each input runs as a cell, values stay where they were computed
    /// (on the GPU, between inputs), and `:help` lists the commands.
    Repl {
        /// A file to load first.
        file: Option<PathBuf>,
        #[command(flatten)]
        session: SessionArgs,
    },
    /// A Jupyter kernel on the same session engine as the REPL: `weft kernel install` writes
    /// its kernelspec; Jupyter runs it as `weft kernel --connection-file F`.
    Kernel {
        #[command(subcommand)]
        action: Option<KernelAction>,
        /// The connection file Jupyter gives the kernel.
        #[arg(long)]
        connection_file: Option<PathBuf>,
        #[command(flatten)]
        session: SessionArgs,
    },
    /// List the GPU adapters, with their limits and features.
    Devices,
    /// Time the papers' workloads on Weft's executors and on sequential Rust, numpy, JAX,
    /// Numba and Taichi, on the same inputs, after checking every output against the
    /// interpreter. The Python peers are installed into a virtual environment of their own
    /// (`WEFT_BENCH_VENV`, or the user's cache).
    Bench {
        /// The workloads to run (all when none): dot, black_scholes, sort, spmv_csr,
        /// segmented_sums, quickhull, barnes_hut, kmeans, spmv_ell, cg, bfs.
        workloads: Vec<String>,
        /// Sizes for every workload, in place of each one's own (`--sizes 1000,100000`).
        #[arg(long, value_delimiter = ',')]
        sizes: Option<Vec<usize>>,
        /// Timed runs per measurement, after one warm-up run.
        #[arg(long, default_value_t = 5)]
        repeat: usize,
        /// Small sizes and 2 repeats: checks that every workload and peer works.
        #[arg(long)]
        quick: bool,
        /// Write the report (`docs/benchmarks.md` and its plots) into this directory.
        #[arg(long, num_args = 0..=1, default_missing_value = "docs")]
        report: Option<PathBuf>,
        /// Leave out the Python peers.
        #[arg(long)]
        no_python: bool,
        /// Also run each workload on Weft's executors under every fusion strategy and inner
        /// schedule (NESL on the GPU's Table 2), normalised to the unoptimised base.
        #[arg(long)]
        ablation: bool,
        #[command(flatten)]
        schedule: ScheduleArgs,
    },
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
        #[arg(long, default_value_t = pipeline::PORTABLE_BINDINGS)]
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
        #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(pipeline::PASSES))]
        after: Option<String>,
        /// The `.weft` file.
        file: Option<PathBuf>,
    },
}

/// How a session (the REPL's, the kernel's) runs its cells.
#[derive(clap::Args)]
struct SessionArgs {
    /// Which executor runs the cells (by default the GPU where there is one that is not a
    /// CPU, else the cpu executor).
    #[arg(long, value_enum)]
    backend: Option<BackendArg>,
    /// The GPU adapter to use: the first whose name contains this.
    #[arg(long)]
    device: Option<String>,
    /// Where the REPL writes charts (`plot`, `hist`, `image`); a notebook shows them instead.
    #[arg(long, default_value = FigureFiles::DEFAULT_DIRECTORY)]
    figures: PathBuf,
    #[command(flatten)]
    schedule: ScheduleArgs,
}

#[derive(Subcommand)]
enum KernelAction {
    /// Write the kernelspec (kernel.json and a logo) where Jupyter finds it.
    Install {
        /// In the user's Jupyter data directory (the default).
        #[arg(long, conflicts_with_all = ["sys_prefix", "prefix"])]
        user: bool,
        /// In the active Python environment (`$VIRTUAL_ENV` or `$CONDA_PREFIX`).
        #[arg(long, conflicts_with = "prefix")]
        sys_prefix: bool,
        /// In `PREFIX/share/jupyter`.
        #[arg(long)]
        prefix: Option<PathBuf>,
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
    #[arg(long, default_value_t = pipeline::DEFAULT_PIECE_SIZE)]
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
    fn options(self) -> Options {
        let mut options = Options::default();
        options.flatten.inner = match self.inner {
            InnerArg::Auto => InnerSchedule::Auto,
            InnerArg::Flat => InnerSchedule::Flat,
            InnerArg::Sequential => InnerSchedule::Sequential,
        };
        options.flatten.piece_size = self.piece_size;
        options.fusion.strategy = match self.fusion {
            FusionArg::None => Strategy::None,
            FusionArg::Greedy => Strategy::Greedy,
            FusionArg::Ilp => Strategy::Ilp,
        };
        options
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

impl BackendArg {
    fn backend(self) -> Backend {
        match self {
            BackendArg::Interp => Backend::Interp,
            BackendArg::Cpu => Backend::Cpu,
            BackendArg::Gpu => Backend::Gpu,
        }
    }
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
    no_transparent_huge_pages();
    match cli.command {
        Command::Check { files, format, shapes } => check(&files, format, shapes),
        Command::Run { file, backend, device, profile, cpu_crossover, figures, schedule } => {
            let slot = DeviceSlot::new(device).with_cpu_crossover(cpu_crossover);
            run(&file, (backend, slot), profile, figures, schedule.options())
        }
        Command::Repl { file, session: SessionArgs { backend, device, figures, schedule } } => {
            let backend = backend.map(BackendArg::backend);
            let config = weft_repl::Config { backend, device, file, figures, options: schedule.options() };
            ExitCode::from(weft_repl::run(config) as u8)
        }
        Command::Kernel { action: Some(KernelAction::Install { user, sys_prefix, prefix }), .. } => {
            // `--user` is the default; clap keeps the three apart.
            let place = match (user, sys_prefix, prefix) {
                (_, _, Some(prefix)) => weft_kernel::InstallPlace::Prefix(prefix),
                (_, true, None) => weft_kernel::InstallPlace::SysPrefix,
                (_, false, None) => weft_kernel::InstallPlace::User,
            };
            let executable = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("weft"));
            match weft_kernel::install(&place, &executable) {
                Ok(dir) => {
                    println!("installed the Weft kernelspec in {}", dir.display());
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Kernel {
            action: None,
            connection_file,
            session: SessionArgs { backend, device, schedule, .. },
        } => {
            let Some(connection_file) = connection_file else {
                eprintln!(
                    "error: `weft kernel` needs --connection-file F (Jupyter passes it); `weft kernel install` installs the kernelspec"
                );
                return ExitCode::from(2);
            };
            let backend = backend.map(BackendArg::backend);
            let config = weft_kernel::Config { backend, device, options: schedule.options() };
            match weft_kernel::run(&connection_file, config) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Devices => devices(),
        Command::Bench { workloads, sizes, repeat, quick, report, no_python, ablation, schedule } => {
            let config = weft_bench::Config {
                workloads,
                sizes,
                repeat: if quick { repeat.min(2) } else { repeat }.max(1),
                quick,
                no_python,
                ablation,
                options: schedule.options(),
                work_dir: std::env::temp_dir().join(format!("weft-bench-{}", std::process::id())),
            };
            bench(&config, report.as_deref())
        }
        Command::Wgsl { file, schedule } => {
            wgsl(&file, schedule.options().for_gpu(pipeline::PORTABLE_BINDINGS))
        }
        Command::Ir { file, schedule } => ir(&file, schedule.options()),
        Command::Fusion { file, format, max_bindings, schedule } => {
            fusion(&file, format, schedule.options().for_gpu(max_bindings))
        }
        Command::Fmt { files, check } => fmt(&files, check),
        Command::Lsp => {
            lean_memory();
            weft_lsp::serve_stdio()
        }
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
fn load(path: &Path) -> Result<(Database, SourceFile), ExitCode> {
    let bytes = std::fs::read(path).map_err(|error| {
        eprintln!("error: cannot read {}: {error}", path.display());
        ExitCode::from(USAGE_ERROR)
    })?;
    let (text, utf8_error) = weft_analysis::decode_source(&bytes);
    let db = Database::default();
    let file = SourceFile::new(&db, path.display().to_string(), text);
    if let Some(error) = utf8_error {
        report(&db, file, &[error]);
        return Err(ExitCode::from(1));
    }
    Ok((db, file))
}

fn report(db: &Database, file: SourceFile, diagnostics: &[Diagnostic]) {
    let text = render_text(diagnostics, file.path(db), file.text(db), use_color(&std::io::stderr()));
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// `weft run FILE`: the program's output on stdout, notices, diagnostics and the profile on
/// stderr.
fn run(
    path: &Path,
    (backend, slot): (Option<BackendArg>, DeviceSlot),
    profile: bool,
    figures: PathBuf,
    options: Options,
) -> ExitCode {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) => {
            eprintln!("error: cannot read {}: {error}", path.display());
            return ExitCode::from(USAGE_ERROR);
        }
    };
    let (text, utf8_error) = weft_analysis::decode_source(&bytes);
    let mut session = Session::new(slot);
    let file = session.source(path.display().to_string(), text);
    if let Some(error) = utf8_error {
        report(session.db(), file, &[error]);
        return ExitCode::from(1);
    }
    let backend = backend.map(BackendArg::backend);
    let mut out = std::io::BufWriter::new(std::io::stdout());
    let mut figures = FigureFiles::new(figures);
    let mut unwritten = false;
    let mut events = |event: Event| match event {
        Event::Printed(line) => {
            let _ = out.write_all(line.as_bytes());
        }
        Event::Chart(chart) => match figures.write(&chart) {
            Ok(line) => {
                let _ = writeln!(out, "{line}");
            }
            Err(why) => {
                unwritten = true;
                eprintln!("weft: {why}");
            }
        },
        Event::Notice(notice) => eprintln!("weft: {notice}"),
        Event::Profile(text) => {
            let _ = out.flush();
            let _ = std::io::stderr().write_all(text.as_bytes());
        }
        Event::Diagnostic { .. } | Event::Value { .. } => {}
    };
    let result = session.run(file, backend, options, profile, &mut events);
    let _ = out.flush();
    drop(out);
    let code = match result {
        // A chart that could not be written fails the run, after the rest of it.
        Ok(_) if unwritten => ExitCode::from(1),
        Ok(_) => ExitCode::SUCCESS,
        Err(RunError::Compile(diagnostics)) => {
            report(session.db(), file, &diagnostics);
            ExitCode::from(1)
        }
        Err(RunError::Runtime(diagnostic)) => {
            report(session.db(), file, &[diagnostic]);
            ExitCode::from(1)
        }
        Err(RunError::NoDevice(why)) => {
            eprintln!("error: {why}");
            ExitCode::from(1)
        }
    };
    // The process ends next; freeing every tree and memo first would only delay the exit.
    std::mem::forget(session);
    code
}

/// `weft bench`: progress on stderr (a bar on a terminal), the tables on stdout.
fn bench(config: &weft_bench::Config, report: Option<&Path>) -> ExitCode {
    struct Bar(indicatif::ProgressBar);
    impl weft_bench::Progress for Bar {
        fn start(&mut self, steps: u64) {
            self.0.set_length(steps);
        }
        fn step(&mut self, what: &str) {
            self.0.inc(1);
            if self.0.is_hidden() {
                eprintln!("[{}/{}] {what}", self.0.position(), self.0.length().unwrap_or(0));
            } else {
                self.0.set_message(what.to_string());
            }
        }
        fn say(&mut self, line: &str) {
            self.0.suspend(|| eprintln!("{line}"));
        }
    }
    let bar = indicatif::ProgressBar::new(0);
    if let Ok(style) = indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {elapsed} {msg}") {
        bar.set_style(style);
    }
    let results = weft_bench::run(config, &mut Bar(bar.clone()));
    bar.finish_and_clear();
    let _ = std::fs::remove_dir_all(&config.work_dir);
    let results = match results {
        Ok(results) => results,
        Err(why) => {
            eprintln!("error: {why}");
            return ExitCode::FAILURE;
        }
    };
    println!("machine: {}; GPU adapter: {}", results.machine, results.adapter.as_deref().unwrap_or("none"));
    for w in &results.workloads {
        println!("\n{} ({}), times in ms:\n{}", w.name, w.origin, weft_bench::report::table(w));
    }
    for a in &results.ablation {
        println!("\nablation of {} at {}:\n{}", a.workload, a.size, weft_bench::report::ablation_table(a));
    }
    println!("{}", weft_bench::report::summary_table(&results));
    println!("{}", weft_bench::report::behind(&results));
    if let Some(dir) = report {
        let written = weft_bench::report::markdown(&results, dir)
            .and_then(|text| std::fs::write(dir.join("benchmarks.md"), text).map_err(|e| e.to_string()));
        if let Err(why) = written {
            eprintln!("error: cannot write the report: {why}");
            return ExitCode::FAILURE;
        }
        eprintln!("wrote {}", dir.join("benchmarks.md").display());
    }
    // A contender that failed or disagreed with the interpreter is reported in its table, and
    // fails the command: `--quick` exists to check that every one works.
    let excluded: Vec<String> = (results.workloads.iter())
        .flat_map(|w| {
            w.entries
                .iter()
                .filter(|e| e.excluded.is_some())
                .map(move |e| format!("{} on {}", e.peer, w.name))
        })
        .collect();
    if excluded.is_empty() {
        return ExitCode::SUCCESS;
    }
    eprintln!("error: not timed: {}", excluded.join(", "));
    ExitCode::FAILURE
}

/// `weft devices`: every adapter, the one `weft run` would choose marked.
fn devices() -> ExitCode {
    let adapters = weft_session::adapter_summaries();
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
fn wgsl(path: &Path, options: Options) -> ExitCode {
    show(path, |db, file| {
        let kernels = pipeline::kernels(db, file, options)?;
        let index = weft_syntax::line_index::LineIndex::new(file.text(db));
        let mut out = String::new();
        let mut failures = Vec::new();
        for kernel in kernels {
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
                    failures.push(Diagnostic::new(weft_syntax::Code::InternalError, kernel.span, why))
                }
            }
            out.push('\n');
        }
        if failures.is_empty() { Ok(out) } else { Err(failures) }
    })
}

/// `weft fusion FILE`: the plan, in the format asked for.
fn fusion(path: &Path, format: PlanFormat, options: Options) -> ExitCode {
    show(path, |db, file| {
        let plan = pipeline::fusion_plan(db, file, options)?;
        Ok(match format {
            PlanFormat::Text => plan.to_text(),
            PlanFormat::Json => plan.to_json() + "\n",
            PlanFormat::Dot => plan.to_dot(),
            PlanFormat::Svg => weft_session::figure::fusion_graph(plan),
        })
    })
}

fn ir(path: &Path, options: Options) -> ExitCode {
    show(path, |db, file| pipeline::fused_program(db, file, options).map(|fused| fused.program.to_string()))
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
    show(path, |db, file| pipeline::dump_after(db, file, pass))
}

/// Prints what `text` gives for the file at `path`, or its diagnostics.
fn show(
    path: &Path,
    text: impl FnOnce(&Database, SourceFile) -> Result<String, Vec<Diagnostic>>,
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
        match weft_ide::format::format_file(&db, file) {
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
    let db = Database::default();
    let report = check_sources(&db, &sources, config);
    // The process ends next; freeing every tree and memo first would only delay the exit.
    std::mem::forget(db);
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(report.output.as_bytes());
    let _ = stdout.flush();
    if report.has_errors { ExitCode::from(1) } else { ExitCode::SUCCESS }
}
