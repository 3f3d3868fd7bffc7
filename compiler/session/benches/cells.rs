//! The session engine's latency: the round trip of a small expression cell after warm-up, per
//! executor, split into compiling and running; and the compile time of a one-line cell after 1
//! and after 200 earlier cells. `cargo bench -p weft-session --bench cells`; the figures are in
//! docs/performance.md.

use std::time::{Duration, Instant};

use weft_analysis::pipeline::Options;
use weft_session::engine::Engine;
use weft_session::{Backend, Session};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const CELL: &str = "sum([x * x for x in range(1000)])";

fn percentile(times: &mut [Duration], p: f64) -> Duration {
    times.sort();
    times[((times.len() - 1) as f64 * p) as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// p50 and p95 of `CELL`'s round trip (the cell is new text each time, so it compiles each
/// time, as a user's next input does), and the p50 of its compile and run parts.
fn round_trip(backend: Backend) -> Option<String> {
    let mut engine = Engine::new(Session::default(), Some(backend), Options::default());
    let mut total = Vec::new();
    let mut compile = Vec::new();
    let mut run = Vec::new();
    for i in 0..120 {
        // A different constant each time: nothing is cached from the previous input.
        let text = format!("{CELL} + {i}");
        let started = Instant::now();
        let timing = engine.run_cell_timed(&text, false, &mut |_| {})?;
        let elapsed = started.elapsed();
        if i >= 20 {
            total.push(elapsed);
            compile.push(timing.compile);
            run.push(timing.run + timing.download);
        }
    }
    Some(format!(
        "round trip of `{CELL}`, {}: p50 {:.2} ms, p95 {:.2} ms (p50 compile {:.2} ms, run and show {:.2} ms)",
        backend.name(),
        ms(percentile(&mut total, 0.5)),
        ms(percentile(&mut total, 0.95)),
        ms(percentile(&mut compile, 0.5)),
        ms(percentile(&mut run, 0.5)),
    ))
}

/// A CPU session after `earlier` cells (values and definitions, alternately; the last a value).
fn session_after(earlier: usize) -> Engine {
    let mut engine = Engine::new(Session::default(), Some(Backend::Cpu), Options::default());
    for i in 0..earlier {
        let text =
            if i % 2 == 0 { format!("v{i} = {i}") } else { format!("def f{i}(x):\n    return x + {i}\n") };
        engine.run_cell(&text, &mut |_| {});
    }
    engine
}

/// The p50 compile times of a one-line cell in each of two sessions, measured alternately so
/// that the machine's drift affects both alike.
fn compile_times(sessions: &mut [Engine; 2]) -> [Duration; 2] {
    let mut times = [Vec::new(), Vec::new()];
    for i in 0..400 {
        for (engine, times) in sessions.iter_mut().zip(times.iter_mut()) {
            if let Some(timing) = engine.run_cell_timed(&format!("v0 * 2 + {i}"), false, &mut |_| {}) {
                times.push(timing.compile);
            }
        }
    }
    times.map(|mut t| percentile(&mut t, 0.5))
}

fn main() {
    for backend in [Backend::Interp, Backend::Cpu, Backend::Gpu] {
        match round_trip(backend) {
            Some(line) => println!("{line}"),
            None => println!("{}: did not run (no adapter?)", backend.name()),
        }
    }
    let [one, many] = compile_times(&mut [session_after(1), session_after(201)]);
    println!(
        "compile of a one-line cell: after 1 cell {:.3} ms, after 201 cells {:.3} ms ({:.2}x)",
        ms(one),
        ms(many),
        many.as_secs_f64() / one.as_secs_f64()
    );
}
