//! Text renderings of what a run reports, shared by every front end (`weft run --profile`, the
//! REPL's `:profile`, a notebook's output). Diagnostics render with
//! `weft_syntax::diagnostics::render_text`.

use std::collections::BTreeMap;
use std::time::Duration;

use weft_gpu::Report;
use weft_gpu::runtime::{Profile, ProfileClock};
use weft_syntax::line_index::LineIndex;

/// What `weft run --profile` prints (on stderr): the GPU executor's counts, then kernel time, launches,
/// read-backs and bytes by source range (the op or condition they ran for), by kernel, and by
/// call depth.
pub fn profile_text(report: &Report, adapter: Option<&str>, text: &str) -> String {
    let s = &report.stats;
    let mut out = String::new();
    if let Some(adapter) = adapter {
        out.push_str(&format!("profile: adapter {adapter}\n"));
    }
    out.push_str(&format!(
        "  launches {} ({} indirect), submissions {}, read-backs {} ({} bytes), uploads {} ({} bytes)\n",
        s.launches,
        s.indirect_launches,
        s.submissions,
        s.read_backs,
        s.bytes_read_back,
        s.uploads,
        s.bytes_uploaded
    ));
    out.push_str(&format!(
        "  bytes bound to kernels {}, copied {}, buffers created {}, pipelines built {} in {:.1} ms\n",
        s.bytes_bound,
        s.bytes_copied,
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
    let guesses = report.guesses;
    if guesses.made > 0 {
        out.push_str(&format!(
            "  layouts allocated by a guessed size {}, guesses that failed {}{}\n",
            guesses.made,
            guesses.failed,
            if guesses.failed > 0 { " (the call ran again without guesses)" } else { "" }
        ));
    }
    for (op, count) in &report.on_cpu {
        out.push_str(&format!("  ran on the cpu executor ({count}x): {op}\n"));
    }
    for (function, (calls, elements)) in &report.cpu_calls {
        out.push_str(&format!(
            "  calls run on the cpu executor, below the crossover ({calls}x, {elements} elements in all): {function}\n"
        ));
    }
    out
}

/// The profile's time and traffic by source range, then time and launches by kernel.
fn profile_tables(profile: &Profile, text: &str) -> String {
    let clock = match profile.clock {
        ProfileClock::Timestamps => "timestamp queries",
        ProfileClock::WallClock => "wall clock around each launch",
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
    let index = LineIndex::new(text);
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
