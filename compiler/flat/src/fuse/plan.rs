//! The fusion plan: every kernel a program runs, what each is made of, what it reads and
//! writes, and why adjacent ops stayed apart. One structure serves every view: `weft fusion`
//! prints it as text, JSON (schema `SCHEMA`, below) or Graphviz dot (its SVG graph is drawn
//! by `weft_session::figure`), and the editor and notebook show the same plan.
//!
//! JSON schema, version 1 (a field is only ever added with a new version):
//! ```text
//! { "schema": 1, "strategy": "none"|"greedy"|"ilp", "max_bindings": u32,
//!   "kernels": [ { "name": "k3_map_reduce", "function": str, "pattern": str,
//!                  "schedule": "flattened"|"sequential per element",
//!                  "ops": [ { "op": str, "start": u32, "end": u32, "line": u32, "col": u32 } ],
//!                  "inputs":  [ { "var": u32, "name": str, "elem": str, "bytes": str } ],
//!                  "outputs": [ same ], "launch": str, "bindings": u32 } ],
//!   "unfused": [ { "from_kernel": str, "to_kernel": str, "from": op, "to": op,
//!                  "constraint": str, "reason": str } ],
//!   "regions": [ { "function": str, "start": u32, "end": u32, "statements": u32,
//!                  "candidate_pairs": u32, "solver": { "method": str, "proved_optimal": bool|null,
//!                  "variables": u32, "constraints": u32, "branch_nodes": u64,
//!                  "simplex_iterations": u64, "cuts": u32 } } ],
//!   "schedules": [ { "start": u32, "end": u32, "line": u32, "col": u32, "schedule": str } ],
//!   "rewrites": [ op ] }
//! ```
//! Byte counts are expressions in the lengths of the program's vectors (`4*len(xs%3)`); spans
//! are byte offsets, lines and columns 1-based (0 until `locate` has the source).

use std::fmt::Write as _;

use rowan::TextRange;
use serde::Serialize;

use crate::ir::{Schedule, VarId};
use weft_syntax::line_index::LineIndex;

use super::Options;
use super::solve::SolverReport;

pub const SCHEMA: u32 = 1;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FusionPlan {
    pub schema: u32,
    pub strategy: String,
    pub max_bindings: u32,
    pub kernels: Vec<PlanKernel>,
    pub unfused: Vec<Unfused>,
    pub regions: Vec<RegionPlan>,
    pub schedules: Vec<ScheduleChoice>,
    /// Rewrites made before choosing kernels (`filter -> reduce`), where they were made.
    pub rewrites: Vec<PlanOp>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanKernel {
    /// Stable: `k{position in the plan}_{pattern}`.
    pub name: String,
    pub function: String,
    /// `map`, `reduce`, `map_reduce`, `element_loop`, or the primitive's op name.
    pub pattern: String,
    pub schedule: String,
    pub ops: Vec<PlanOp>,
    pub inputs: Vec<Buffer>,
    pub outputs: Vec<Buffer>,
    pub launch: String,
    /// Storage buffers it binds, by the plan's count (parameters and error record included).
    pub bindings: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanOp {
    pub op: String,
    pub start: u32,
    pub end: u32,
    pub line: u32,
    pub col: u32,
}

impl PlanOp {
    pub fn new(op: String, span: TextRange) -> PlanOp {
        PlanOp { op, start: span.start().into(), end: span.end().into(), line: 0, col: 0 }
    }
}

/// Moves the span `start..end` where `place` says, and gives the rest of where that is.
fn place_span(place: &mut impl FnMut(TextRange) -> Place, start: &mut u32, end: &mut u32) -> Place {
    let placed = place(TextRange::new((*start).into(), (*end).into()));
    (*start, *end) = (placed.range.start().into(), placed.range.end().into());
    placed
}

impl Place {
    /// Sets an entry's line and column, and names the source in its text where it is another.
    fn apply(self, line: &mut u32, col: &mut u32, text: &mut String) {
        (*line, *col) = (self.line, self.col);
        if let Some(source) = self.source {
            *text = format!("{text} ({source})");
        }
    }
}

/// Where `FusionPlan::relocate` puts an op: its span and 1-based line and column in the source
/// it was written in, and that source's name when it is not the plan's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub range: TextRange,
    pub line: u32,
    pub col: u32,
    pub source: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Buffer {
    pub var: VarId,
    pub name: String,
    pub elem: String,
    /// Bytes, as an expression in the lengths of vectors.
    pub bytes: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unfused {
    pub from_kernel: String,
    pub to_kernel: String,
    pub from: PlanOp,
    pub to: PlanOp,
    /// `dataflow` (`to` reads what `from` computes) or `siblings` (both read a common input).
    pub relation: String,
    /// `index-space`, `compatibility`, `no-fused-form`, `random-access`, `dependency`,
    /// `convexity`, `bindings`, `objective`, `greedy-order` or `strategy`.
    pub constraint: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RegionPlan {
    pub function: String,
    pub start: u32,
    pub end: u32,
    pub statements: u32,
    pub candidate_pairs: u32,
    pub solver: SolverReport,
}

/// How a nested construct runs (Copperhead's choice, `ir::Schedule`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScheduleChoice {
    pub start: u32,
    pub end: u32,
    pub line: u32,
    pub col: u32,
    pub schedule: String,
}

impl ScheduleChoice {
    pub fn new(span: TextRange, schedule: Schedule) -> ScheduleChoice {
        ScheduleChoice {
            start: span.start().into(),
            end: span.end().into(),
            line: 0,
            col: 0,
            schedule: schedule.describe().into(),
        }
    }
}

impl FusionPlan {
    pub fn new(options: Options) -> FusionPlan {
        FusionPlan {
            schema: SCHEMA,
            strategy: options.strategy.name().into(),
            max_bindings: options.max_bindings,
            kernels: Vec::new(),
            unfused: Vec::new(),
            regions: Vec::new(),
            schedules: Vec::new(),
            rewrites: Vec::new(),
        }
    }

    /// Fills in lines and columns from the program's source.
    pub fn locate(&mut self, source: &str) {
        let index = LineIndex::new(source);
        self.relocate(|range| {
            let lc = index.line_col(range.start());
            Place { range, line: lc.line + 1, col: lc.col + 1, source: None }
        });
    }

    /// Moves every op, schedule and region to where `place` says its span (in the plan's program) was
    /// written. An op placed in another source than the one the plan is read against names it:
    /// `t%5 = binary> (cell[2])`.
    pub fn relocate(&mut self, mut place: impl FnMut(TextRange) -> Place) {
        let ops = self.kernels.iter_mut().flat_map(|k| k.ops.iter_mut());
        let ops = ops.chain(self.unfused.iter_mut().flat_map(|u| [&mut u.from, &mut u.to]));
        let ops = ops.chain(self.rewrites.iter_mut());
        for op in ops {
            let placed = place_span(&mut place, &mut op.start, &mut op.end);
            placed.apply(&mut op.line, &mut op.col, &mut op.op);
        }
        for s in &mut self.schedules {
            let placed = place_span(&mut place, &mut s.start, &mut s.end);
            placed.apply(&mut s.line, &mut s.col, &mut s.schedule);
        }
        for region in &mut self.regions {
            place_span(&mut place, &mut region.start, &mut region.end);
        }
    }

    /// Replaces every span the plan records (its ops', schedules' and regions') with what `map`
    /// gives for it; lines and columns are left as they are.
    pub fn map_spans(&mut self, mut map: impl FnMut(TextRange) -> TextRange) {
        let ops = self.kernels.iter_mut().flat_map(|k| k.ops.iter_mut());
        let ops = ops.chain(self.unfused.iter_mut().flat_map(|u| [&mut u.from, &mut u.to]));
        let ops = ops.chain(self.rewrites.iter_mut());
        let spans = ops.map(|op| (&mut op.start, &mut op.end));
        let spans = spans.chain(self.schedules.iter_mut().map(|s| (&mut s.start, &mut s.end)));
        let spans = spans.chain(self.regions.iter_mut().map(|r| (&mut r.start, &mut r.end)));
        for (start, end) in spans {
            let mapped = map(TextRange::new((*start).into(), (*end).into()));
            (*start, *end) = (mapped.start().into(), mapped.end().into());
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a plan serialises")
    }

    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let fused = self.kernels.iter().filter(|k| k.ops.len() > 1).count();
        let _ = writeln!(
            out,
            "fusion plan (schema {}): strategy {}, at most {} storage buffers per kernel",
            self.schema, self.strategy, self.max_bindings
        );
        let _ = writeln!(out, "{} kernels, {fused} of them fused from several ops", self.kernels.len());
        for k in &self.kernels {
            let _ =
                writeln!(out, "\n{} [{}] in {}: {}, {}", k.name, k.pattern, k.function, k.schedule, k.launch);
            for op in &k.ops {
                let _ = writeln!(out, "    {:>4}:{:<3} {}", op.line, op.col, op.op);
            }
            let list = |bs: &[Buffer]| {
                if bs.is_empty() {
                    return "-".to_string();
                }
                bs.iter().map(|b| format!("{} ({} bytes)", b.name, b.bytes)).collect::<Vec<_>>().join(", ")
            };
            let _ = writeln!(out, "    reads  {}", list(&k.inputs));
            let _ = writeln!(out, "    writes {}", list(&k.outputs));
            let _ = writeln!(out, "    binds  {} storage buffers", k.bindings);
        }
        if !self.unfused.is_empty() {
            let _ = writeln!(out, "\nkept apart:");
            for u in &self.unfused {
                let _ = writeln!(
                    out,
                    "  {}:{} {} ({}) {} {}:{} {} ({}): [{}] {}",
                    u.from.line,
                    u.from.col,
                    u.from.op,
                    u.from_kernel,
                    if u.relation == "siblings" { "~" } else { "->" },
                    u.to.line,
                    u.to.col,
                    u.to.op,
                    u.to_kernel,
                    u.constraint,
                    u.reason
                );
            }
        }
        if !self.regions.is_empty() {
            let _ = writeln!(out, "\nregions:");
            for r in &self.regions {
                let s = &r.solver;
                let optimal = match s.proved_optimal {
                    Some(true) => ", proved optimal",
                    Some(false) => ", not proved optimal",
                    None => "",
                };
                let _ = writeln!(
                    out,
                    "  {} ({} statements, {} candidate pairs): {}{optimal}, {} variables, {} constraints, {} branch nodes, {} cuts",
                    r.function,
                    r.statements,
                    r.candidate_pairs,
                    s.method,
                    s.variables,
                    s.constraints,
                    s.branch_nodes,
                    s.cuts
                );
            }
        }
        if !self.rewrites.is_empty() {
            let _ = writeln!(out, "\nrewrites:");
            for r in &self.rewrites {
                let _ = writeln!(out, "  {}:{} {}", r.line, r.col, r.op);
            }
        }
        if !self.schedules.is_empty() {
            let _ = writeln!(out, "\nschedules:");
            for s in &self.schedules {
                let _ = writeln!(out, "  {}:{} {}", s.line, s.col, s.schedule);
            }
        }
        out
    }

    /// Graphviz: one box per kernel listing its ops, one edge per pair kept apart.
    pub fn to_dot(&self) -> String {
        let mut out =
            String::from("digraph fusion {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n");
        for k in &self.kernels {
            let ops: Vec<String> =
                k.ops.iter().map(|op| format!("{}:{} {}", op.line, op.col, escape(&op.op))).collect();
            let _ = writeln!(
                out,
                "  \"{}\" [label=\"{} [{}]\\l{}\\l\"{}];",
                k.name,
                k.name,
                k.pattern,
                ops.join("\\l"),
                if k.ops.len() > 1 { ", style=filled, fillcolor=\"#d8ecff\"" } else { "" }
            );
        }
        for u in &self.unfused {
            let style = if u.relation == "siblings" { ", style=dashed, dir=none" } else { "" };
            let _ = writeln!(
                out,
                "  \"{}\" -> \"{}\" [label=\"{}\"{style}];",
                u.from_kernel, u.to_kernel, u.constraint
            );
        }
        out.push_str("}\n");
        out
    }
}

fn escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}
