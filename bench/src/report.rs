//! The report: a terminal table per workload, and `--report`'s Markdown (`docs/benchmarks.md`)
//! with one log–log SVG plot of time against size per workload, drawn with plotters.

use std::fmt::Write as _;
use std::path::Path;

use plotters::prelude::*;

use crate::{Ablation, Entry, HAND_WGSL, Results, WorkloadResults, summary};

/// The table of one workload: per contender, the median (min–max) per size, the ratio to the
/// fastest at the largest size, and the lines of code.
pub fn table(w: &WorkloadResults) -> String {
    let mut out = String::new();
    let largest = w.sizes.iter().copied().max().unwrap_or(0);
    let fastest = fastest_at(w, largest);
    let _ = write!(out, "| implementation | version | lines |");
    for size in &w.sizes {
        let _ = write!(out, " {} |", thousands(*size));
    }
    let _ =
        writeln!(out, " × fastest at {} | GPU launches / read-backs, largest size run |", thousands(largest));
    let _ = writeln!(out, "|---|---|---|{}---|---|", "---|".repeat(w.sizes.len()));
    for e in &w.entries {
        let _ =
            write!(out, "| {} | {} | {} |", e.peer, e.version, e.loc.map_or("".into(), |l| l.to_string()));
        for size in &w.sizes {
            let cell = match (at(e, *size), e.skipped.iter().find(|(s, _)| s == size), &e.excluded) {
                _ if e.missing.is_some() => "n/a".to_string(),
                (_, _, Some(_)) => "✗".to_string(),
                (Some((median, min, max)), _, _) => format!("{} ({}–{})", ms(median), ms(min), ms(max)),
                (None, Some(_), _) => "—".to_string(),
                (None, None, _) => "".to_string(),
            };
            let _ = write!(out, " {cell} |");
        }
        let ratio = match (at(e, largest), fastest) {
            (Some((median, ..)), Some(best)) if best > 0.0 => format!("{:.2}", median / best),
            _ => String::new(),
        };
        let counts = e
            .times
            .iter()
            .rev()
            .find_map(|(_, _, c)| *c)
            .map_or(String::new(), |c| format!("{} / {}", c.launches, c.read_backs));
        let _ = writeln!(out, " {ratio} | {counts} |");
    }
    let notes: Vec<String> = w
        .entries
        .iter()
        .flat_map(|e| {
            let excluded = e.excluded.iter().map(move |why| format!("{}: not timed, {why}", e.peer));
            let missing = e.missing.iter().map(move |why| format!("{}: not written: {why}", e.peer));
            let note = e.note.iter().map(move |n| format!("{}: {n}", e.peer));
            let mut skipped: Vec<String> = Vec::new();
            if let Some((_, why)) = e.skipped.first() {
                let sizes: Vec<String> = e.skipped.iter().map(|(s, _)| thousands(*s)).collect();
                skipped.push(format!("{}: not timed at {} ({why})", e.peer, sizes.join(", ")));
            }
            excluded.chain(missing).chain(note).chain(skipped)
        })
        .collect();
    if !notes.is_empty() {
        let _ = writeln!(out);
        for note in notes {
            let _ = writeln!(out, "- {note}");
        }
    }
    out
}

/// The ablation of one workload, after NESL on the GPU's Table 2: each variant's time on the
/// GPU and CPU executors relative to the base, with the GPU executor's launches, read-backs
/// and bytes bound to kernels.
pub fn ablation_table(a: &Ablation) -> String {
    let mut out = String::from(
        "| variant | GPU ms | × base | launches | read-backs | MB bound to kernels | CPU ms | × base |\n|---|---|---|---|---|---|---|---|\n",
    );
    let base = a.rows.first().and_then(|(_, r)| r.as_ref().ok()).map(|v| (v.gpu_ms, v.cpu_ms));
    for (name, row) in &a.rows {
        match (row, base) {
            (Ok(v), Some((base_gpu, base_cpu))) => {
                let _ = writeln!(
                    out,
                    "| {name} | {} | {:.2} | {} | {} | {:.1} | {} | {:.2} |",
                    ms(v.gpu_ms),
                    v.gpu_ms / base_gpu,
                    v.counts.launches,
                    v.counts.read_backs,
                    v.counts.bytes_bound as f64 / 1e6,
                    ms(v.cpu_ms),
                    v.cpu_ms / base_cpu
                );
            }
            (Ok(_), None) => {
                let _ = writeln!(out, "| {name} | the base did not run | | | | | | |");
            }
            (Err(why), _) => {
                let _ = writeln!(out, "| {name} | failed: {why} | | | | | | |");
            }
        }
    }
    out
}

/// Where Weft is behind a peer, per workload: how far, and what the measurements say of why
/// (the GPU executor's launches and read-backs per run, and the share of the adapter's copy
/// bandwidth a flat workload reaches).
pub fn behind(results: &Results) -> String {
    let mut out = String::new();
    for w in &results.workloads {
        let largest = w.sizes.iter().copied().max().unwrap_or(0);
        // The size every Weft executor and the fastest peer share: the largest the GPU ran.
        let best_weft = w
            .entries
            .iter()
            .filter(|e| e.peer.starts_with("weft") && e.peer != "weft interpreter")
            .filter_map(|e| Some((e, at(e, largest)?.0)))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        let fastest = w
            .entries
            .iter()
            .filter(|e| !e.peer.starts_with("weft"))
            .filter_map(|e| Some((e, at(e, largest)?.0)))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        let (Some((weft, weft_ms)), Some((peer, peer_ms))) = (best_weft, fastest) else { continue };
        if weft_ms <= peer_ms {
            let _ = writeln!(
                out,
                "- **{}** at {}: Weft ({}) is the fastest, {:.2}× ahead of {}.",
                w.name,
                thousands(largest),
                weft.peer,
                peer_ms / weft_ms,
                peer.peer
            );
            continue;
        }
        let mut why = Vec::new();
        let gpu = w.entries.iter().find(|e| e.peer == "weft gpu");
        if let Some((size, _, Some(c))) = gpu.and_then(|g| g.times.iter().rev().find(|t| t.2.is_some())) {
            why.push(format!(
                "the GPU executor makes {} and {} per run at {}",
                counted(c.launches, "launch", "launches"),
                counted(c.read_backs, "read-back", "read-backs"),
                thousands(*size)
            ));
        }
        if crate::wgsl::WRITTEN.contains(&w.name.as_str()) {
            why.extend(bandwidth_share(w, "weft gpu", results.gpu_copy_gbs, "the adapter's"));
            why.extend(bandwidth_share(w, "weft cpu", Some(results.cpu_copy_gbs), "one core's"));
        }
        if let Some(hand) = w.entries.iter().find(|e| e.peer == HAND_WGSL) {
            let gpu_at = gpu.and_then(|g| g.times.last()).and_then(|(s, t, _)| Some((*s, summary(t)?.0)));
            if let Some((size, gpu_ms)) = gpu_at
                && let Some((hand_ms, ..)) = at(hand, size)
            {
                why.push(format!(
                    "the hand-written WGSL takes {:.2}× the GPU executor's time there",
                    hand_ms / gpu_ms
                ));
            }
        }
        let _ = writeln!(
            out,
            "- **{}** at {}: the fastest Weft executor ({}, {} ms) takes {:.2}× the time of {} ({} ms){}.",
            w.name,
            thousands(largest),
            weft.peer,
            ms(weft_ms),
            weft_ms / peer_ms,
            peer.peer,
            ms(peer_ms),
            if why.is_empty() { String::new() } else { format!("; {}", why.join("; ")) }
        );
    }
    let _ = writeln!(
        out,
        "\nCopy bandwidth, the limit of a flat kernel that reads and writes each element once: one core's \
         `copy_from_slice` {:.1} GB/s; the GPU adapter's copy kernel {}.",
        results.cpu_copy_gbs,
        results.gpu_copy_gbs.map_or("not measured".into(), |g| format!("{g:.1} GB/s"))
    );
    out
}

/// The whole Markdown report; each workload's plot is written beside it as
/// `benchmarks/{workload}.svg`.
pub fn markdown(results: &Results, docs: &Path) -> Result<String, String> {
    let plots = docs.join("benchmarks");
    std::fs::create_dir_all(&plots).map_err(|e| format!("cannot create {}: {e}", plots.display()))?;
    let mut out = String::new();
    let _ = writeln!(out, "# Benchmarks\n");
    let _ = writeln!(
        out,
        "Written by `weft bench --report`{}. Every implementation's output was checked against Weft's \
         interpreter on a small input before it was timed. Times are milliseconds of running only: \
         inputs are loaded (and uploaded to the device) before the clock starts, and a warm-up run \
         compiles first. Each cell is the median of {} repeats (at least 3, fewer once a \
         measurement has taken 3 s), with the minimum and maximum.\n",
        if results.quick { " --quick" } else { "" },
        results.repeat,
    );
    let _ = writeln!(out, "- Machine: {}", results.machine);
    let _ = writeln!(out, "- GPU adapter: {}", results.adapter.as_deref().unwrap_or("none"));
    let _ = writeln!(out, "- Weft's options: {}", results.options);
    let _ = writeln!(out, "- Whole run: {:.0} s\n", results.seconds);
    let _ = writeln!(out, "## Summary\n\n{}", summary_table(results));
    for w in &results.workloads {
        let _ = writeln!(out, "## {}\n\n{}; sizes in {}.\n", w.name, w.origin, w.unit);
        if let Some(why) = &w.scaled {
            let _ = writeln!(out, "Scaled down: {why}.\n");
        }
        let _ = writeln!(out, "{}", table(w));
        let svg = plots.join(format!("{}.svg", w.name));
        plot(w, &svg)?;
        let _ = writeln!(out, "![{} time against size](benchmarks/{}.svg)\n", w.name, w.name);
    }
    let _ = writeln!(out, "## Where Weft is behind, and why\n\n{}", behind(results));
    if !results.ablation.is_empty() {
        let _ = writeln!(
            out,
            "## Ablation\n\nAfter NESL on the GPU's Table 2: each workload on Weft's GPU and CPU executors, \
             from the base (one kernel per op, every inner computation flat) with each optimisation added, \
             at the largest size up to {} the adapter runs. \"MB bound to kernels\" is the size of the buffers \
             the launches bind: an upper bound on the memory they touch, and what fusion saves.\n",
            thousands(crate::ABLATION_LIMIT)
        );
        for a in &results.ablation {
            let _ = writeln!(out, "### {} at {}\n\n{}", a.workload, thousands(a.size), ablation_table(a));
        }
    }
    Ok(out)
}

/// Per workload, each contender's ratio to the fastest at the largest size every timed
/// contender reached.
pub fn summary_table(results: &Results) -> String {
    let mut peers: Vec<&str> = Vec::new();
    for e in results.workloads.iter().flat_map(|w| &w.entries) {
        if !peers.contains(&e.peer.as_str()) {
            peers.push(&e.peer);
        }
    }
    let mut out = String::from("| workload | size |");
    for p in &peers {
        let _ = write!(out, " {p} |");
    }
    let _ = writeln!(out, "\n|---|---|{}", "---|".repeat(peers.len()));
    for w in &results.workloads {
        let largest = w.sizes.iter().copied().max().unwrap_or(0);
        let fastest = fastest_at(w, largest);
        let _ = write!(out, "| {} | {} |", w.name, thousands(largest));
        for p in &peers {
            let cell = w.entries.iter().find(|e| e.peer == *p).and_then(|e| at(e, largest));
            let text = match (cell, fastest) {
                (Some((median, ..)), Some(best)) => format!("{:.2}×", median / best),
                _ => "—".into(),
            };
            let _ = write!(out, " {text} |");
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(
        out,
        "\nTimes relative to the fastest implementation at that size (1.00× is the fastest); — where one was not timed at it."
    );
    out
}

/// How fast `peer` reads `w`'s inputs at the largest size it ran, against a copy bandwidth.
fn bandwidth_share(w: &WorkloadResults, peer: &str, copy_gbs: Option<f64>, whose: &str) -> Option<String> {
    let entry = w.entries.iter().find(|e| e.peer == peer)?;
    let (size, times, _) = entry.times.last()?;
    let (median, ..) = summary(times)?;
    let bytes = w.input_bytes.iter().find(|(s, _)| s == size)?.1 as f64;
    let gbs = bytes / (median / 1000.0) / 1e9;
    let copy = copy_gbs?;
    Some(format!(
        "{peer} reads its inputs at {gbs:.2} GB/s at {}, {:.0}% of {whose} copy bandwidth",
        thousands(*size),
        100.0 * gbs / copy
    ))
}

fn at(e: &Entry, size: usize) -> Option<(f64, f64, f64)> {
    e.times.iter().find(|(s, ..)| *s == size).and_then(|(_, times, _)| summary(times))
}

fn fastest_at(w: &WorkloadResults, size: usize) -> Option<f64> {
    w.entries.iter().filter_map(|e| at(e, size)).map(|(median, ..)| median).min_by(f64::total_cmp)
}

fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn ms(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Time against size, both axes logarithmic, a line per contender, as NESL on the GPU plots.
fn plot(w: &WorkloadResults, path: &Path) -> Result<(), String> {
    let series: Vec<(&str, Vec<(f64, f64)>)> = w
        .entries
        .iter()
        .map(|e| {
            let points =
                e.times.iter().filter_map(|(s, times, _)| Some((*s as f64, summary(times)?.0.max(1e-4))));
            (e.peer.as_str(), points.collect::<Vec<_>>())
        })
        .filter(|(_, points)| !points.is_empty())
        .collect();
    let all = series.iter().flat_map(|(_, p)| p.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in all {
        (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y));
    }
    if series.is_empty() {
        (x0, x1, y0, y1) = (1.0, 10.0, 1.0, 10.0);
    }
    let drawn = (|| -> Result<(), Box<dyn std::error::Error>> {
        let root = SVGBackend::new(path, (720, 440)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("{}: time against size", w.name), ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d((x0 / 1.5..x1 * 1.5).log_scale(), (y0 / 2.0..y1 * 2.0).log_scale())?;
        chart.configure_mesh().x_desc(w.unit.as_str()).y_desc("milliseconds").draw()?;
        for (i, (name, points)) in series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(points.iter().copied(), color.stroke_width(2)))?
                .label(*name)
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], color.stroke_width(2)));
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
        }
        chart.configure_series_labels().border_style(BLACK).background_style(WHITE.mix(0.8)).draw()?;
        root.present()?;
        Ok(())
    })();
    drawn.map_err(|e| format!("cannot draw {}: {e}", path.display()))
}
