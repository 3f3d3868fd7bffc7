//! The fusion plan: every kernel a program runs, what each is made of, what it reads and
//! writes, and why adjacent ops stayed apart. One structure serves every view: `weft fusion`
//! prints it as text, JSON (schema `SCHEMA`, below), Graphviz dot or SVG, and the editor and
//! notebook show the same plan.
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
        let at = |offset: u32| {
            let lc = index.line_col(offset.into());
            (lc.line + 1, lc.col + 1)
        };
        let ops = self.kernels.iter_mut().flat_map(|k| k.ops.iter_mut());
        let ops = ops.chain(self.unfused.iter_mut().flat_map(|u| [&mut u.from, &mut u.to]));
        let ops = ops.chain(self.rewrites.iter_mut());
        for op in ops {
            (op.line, op.col) = at(op.start);
        }
        for s in &mut self.schedules {
            (s.line, s.col) = at(s.start);
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

    /// A standalone SVG: kernels as boxes in plan order, fused ones shaded, and the pairs
    /// kept apart as labelled arrows on the left.
    pub fn to_svg(&self) -> String {
        const WIDTH: usize = 760;
        const LINE: usize = 16;
        let mut y = 40;
        let mut boxes = String::new();
        let mut tops = Vec::new();
        for k in &self.kernels {
            let height = LINE * (k.ops.len() + 1) + 10;
            tops.push((k.name.clone(), y, height));
            let fill = if k.ops.len() > 1 { "#d8ecff" } else { "#f4f4f4" };
            let _ = writeln!(
                boxes,
                "<rect x=\"200\" y=\"{y}\" width=\"{}\" height=\"{height}\" rx=\"6\" fill=\"{fill}\" stroke=\"#333\"/>",
                WIDTH - 220
            );
            let _ = writeln!(
                boxes,
                "<text x=\"210\" y=\"{}\" font-weight=\"bold\">{} [{}]</text>",
                y + LINE,
                escape_xml(&k.name),
                escape_xml(&k.pattern)
            );
            for (n, op) in k.ops.iter().enumerate() {
                let _ = writeln!(
                    boxes,
                    "<text x=\"220\" y=\"{}\">{}:{} {}</text>",
                    y + LINE * (n + 2),
                    op.line,
                    op.col,
                    escape_xml(&op.op)
                );
            }
            y += height + 14;
        }
        let mut arrows = String::new();
        let mid = |name: &str| tops.iter().find(|t| t.0 == name).map(|t| t.1 + t.2 / 2);
        for (n, u) in self.unfused.iter().enumerate() {
            let (Some(a), Some(b)) = (mid(&u.from_kernel), mid(&u.to_kernel)) else {
                continue;
            };
            let x = 190 - (n % 12) * 14;
            let _ = writeln!(
                arrows,
                "<path d=\"M200 {a} H{x} V{b} H198\" fill=\"none\" stroke=\"#c33\" marker-end=\"url(#arrow)\"><title>{}</title></path>",
                escape_xml(&format!("{} -> {}: {}", u.from_kernel, u.to_kernel, u.reason))
            );
        }
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{}\" font-family=\"monospace\" font-size=\"12\">
<defs><marker id=\"arrow\" markerWidth=\"8\" markerHeight=\"8\" refX=\"6\" refY=\"3\" orient=\"auto\"><path d=\"M0,0 L6,3 L0,6 z\" fill=\"#c33\"/></marker></defs>
<text x=\"10\" y=\"20\" font-weight=\"bold\">fusion plan: {} kernels, strategy {}</text>
{boxes}{arrows}</svg>
",
            y + 20,
            self.kernels.len(),
            self.strategy
        )
    }
}

fn escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}

fn escape_xml(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}
