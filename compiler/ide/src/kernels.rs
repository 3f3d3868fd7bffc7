//! Kernels as the source shows them. The flattener puts a kernel in whatever instance it ran
//! in: a function inlined into its caller lands in `main`, a recursive one in a mangled
//! instance such as `quicksort[f32]^`. A user thinks in the `def`s they wrote, so every view
//! here attributes a kernel to the `def` (or the top level) whose text holds its ops, and names
//! ops by their source text rather than by IR variables.

use std::collections::BTreeMap;

use rowan::{TextRange, TextSize};
use weft_analysis::db::{Db, SourceFile};
use weft_analysis::items::file_functions;
use weft_analysis::pipeline;
use weft_flat::fuse::plan::{FusionPlan, PlanKernel, PlanOp};
use weft_syntax::Diagnostic;

use super::Owner;

/// The name the views use for the top-level statements, as `weft/wgsl` and `weft fusion` do.
pub const TOP_LEVEL: &str = "main";

/// The source function a position belongs to: a `def`'s name, or `TOP_LEVEL`.
pub fn source_function(db: &dyn Db, file: SourceFile, offset: TextSize) -> String {
    match Owner::at(db, file, offset) {
        Owner::Function(f) => f.name(db).clone(),
        Owner::TopLevel => TOP_LEVEL.into(),
    }
}

/// Where a kernel's work is written: its first op with a span, or nothing for a kernel that no
/// source text produced.
fn kernel_offset(kernel: &PlanKernel) -> Option<TextSize> {
    kernel.ops.iter().find(|op| op.end > op.start).map(|op| TextSize::from(op.start))
}

/// The kernels of one source function, counted over every instance that runs them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionKernels {
    /// The `def`'s name, or `TOP_LEVEL`.
    pub function: String,
    /// Where the lens goes: the `def`'s name, or the first top-level statement.
    pub range: TextRange,
    pub kernels: usize,
    /// Kernels per instance the flattener made (`quicksort[f32]^`, `main`, ...), by name.
    pub instances: BTreeMap<String, usize>,
}

/// Each `def` of the file with its kernels, then the top level (when it has statements).
pub fn function_kernels(db: &dyn Db, file: SourceFile, plan: &FusionPlan) -> Vec<FunctionKernels> {
    let mut out: Vec<FunctionKernels> = file_functions(db, file)
        .iter()
        .map(|f| FunctionKernels {
            function: f.name(db).clone(),
            range: weft_analysis::items::function_signature(db, *f).name_range + f.offset(db),
            kernels: 0,
            instances: BTreeMap::new(),
        })
        .collect();
    if let Some(first) = first_top_level_statement(db, file) {
        out.push(FunctionKernels {
            function: TOP_LEVEL.into(),
            range: first,
            kernels: 0,
            instances: BTreeMap::new(),
        });
    }
    for kernel in &plan.kernels {
        let Some(at) = kernel_offset(kernel) else { continue };
        let owner = source_function(db, file, at);
        if let Some(entry) = out.iter_mut().find(|e| e.function == owner) {
            entry.kernels += 1;
            *entry.instances.entry(kernel.function.clone()).or_default() += 1;
        }
    }
    out
}

/// The first line of the first top-level statement that is not a `def`, trimmed.
fn first_top_level_statement(db: &dyn Db, file: SourceFile) -> Option<TextRange> {
    use weft_syntax::SyntaxKind::*;
    let root = weft_analysis::parsed::parsed_file(db, file).syntax();
    let text = file.text(db);
    let statement = root.children().find(|n| !matches!(n.kind(), FUNCTION_DEF | ERROR))?;
    let range = statement.text_range();
    let slice = &text[std::ops::Range::<usize>::from(range)];
    let first_line = slice.lines().next().unwrap_or("").trim_end();
    Some(TextRange::at(range.start(), TextSize::of(first_line)))
}

/// Whether a request's `function` names a kernel: its source function, or an instance other than
/// `main` (whose kernels include those of the `def`s inlined into it; `main` means the top level).
fn names(function: &str, source: &str, instance: &str) -> bool {
    function == source || (function != TOP_LEVEL && function == instance)
}

/// The plan as an editor's fusion view reads it: the kernels of `function` only when given (a
/// `def`'s name, `main` for the top level, or an instance), each with the source function it
/// belongs to, in the plan's order; and the pairs kept apart between two of those kernels. The
/// regions, schedules and rewrites stay whole.
pub fn function_plan(
    db: &dyn Db,
    file: SourceFile,
    plan: &FusionPlan,
    function: Option<&str>,
) -> FunctionPlan {
    let mut kernels = Vec::new();
    let mut sources = Vec::new();
    for kernel in &plan.kernels {
        let source =
            kernel_offset(kernel).map_or_else(|| TOP_LEVEL.into(), |at| source_function(db, file, at));
        if function.is_none_or(|f| names(f, &source, &kernel.function)) {
            kernels.push(kernel.clone());
            sources.push(source);
        }
    }
    let kept: std::collections::HashSet<&str> = kernels.iter().map(|k| k.name.as_str()).collect();
    let unfused = plan
        .unfused
        .iter()
        .filter(|u| kept.contains(u.from_kernel.as_str()) && kept.contains(u.to_kernel.as_str()))
        .cloned()
        .collect();
    let plan = FusionPlan {
        schema: plan.schema,
        strategy: plan.strategy.clone(),
        max_bindings: plan.max_bindings,
        kernels,
        unfused,
        regions: plan.regions.clone(),
        schedules: plan.schedules.clone(),
        rewrites: plan.rewrites.clone(),
    };
    FunctionPlan { plan, sources }
}

/// A plan cut down to one source function's kernels (`function_plan`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionPlan {
    pub plan: FusionPlan,
    /// Each kernel's source function, in the order of `plan.kernels`.
    pub sources: Vec<String>,
}

/// One kernel as WGSL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelSource {
    /// The source function it belongs to: a `def`'s name, or `TOP_LEVEL`.
    pub function: String,
    /// The instance the flattener put it in (`quicksort[f32]^`, `main`).
    pub instance: String,
    pub name: String,
    pub span: TextRange,
    pub wgsl: String,
}

/// The WGSL kernels of the program the plan describes; those of `function` only when given,
/// which names a source function (a `def`, or `main` for the top level) or one instance. A
/// second request on unchanged text is a cache hit: it runs no pass.
pub fn kernel_sources(
    db: &dyn Db,
    file: SourceFile,
    function: Option<&str>,
) -> Result<Vec<KernelSource>, Vec<Diagnostic>> {
    Ok(pipeline::kernels(db, file, pipeline::Options::portable_gpu())?
        .iter()
        .map(|k| KernelSource {
            function: source_function(db, file, k.span.start()),
            instance: k.function.clone(),
            name: k.kernel.name.clone(),
            span: k.span,
            wgsl: k.kernel.source.clone(),
        })
        .filter(|k| function.is_none_or(|f| names(f, &k.function, &k.instance)))
        .collect())
}

/// An op as the source writes it: the text of its first line, shortened to `width`
/// characters, then what it computes (`reduce.max`, without the IR's variable names).
pub fn op_excerpt(text: &str, op: &PlanOp) -> String {
    const WIDTH: usize = 48;
    let what = op.op.rsplit(" = ").next().unwrap_or(&op.op);
    let source = text.get(op.start as usize..op.end as usize).unwrap_or("");
    let line = source.lines().next().unwrap_or("").trim();
    let short: String = if line.chars().count() > WIDTH {
        line.chars().take(WIDTH - 1).chain(['…']).collect()
    } else {
        line.to_string()
    };
    if short.is_empty() { what.to_string() } else { format!("`{short}` ({what})") }
}

/// IR text (a kernel's launch, `len(xs%1) threads`) with the IR's variable numbers dropped,
/// leaving the source names they carry: `len(xs) threads`.
pub fn without_ir_numbers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '%' && chars.peek().is_some_and(char::is_ascii_digit) {
            while chars.next_if(char::is_ascii_digit).is_some() {}
            continue;
        }
        out.push(c);
    }
    out
}

/// Where a kernel hint for an op goes: the end of the op's text, or, when the op spans a block
/// statement (a loop's bookkeeping, an `if`), the end of its first line, so that the hint sits
/// on the statement's header instead of at the start of the next line.
pub(crate) fn hint_anchor(text: &str, op: &PlanOp) -> TextSize {
    let source = text.get(op.start as usize..op.end as usize).unwrap_or("");
    match source.find(['\n', '\r']) {
        Some(newline) => TextSize::from(op.start + source[..newline].trim_end().len() as u32),
        None => TextSize::from(op.end),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(text: &str, source: &str, ir: &str) -> PlanOp {
        let start = text.find(source).expect("the op's text") as u32;
        PlanOp { op: ir.into(), start, end: start + source.len() as u32, line: 0, col: 0 }
    }

    #[test]
    fn ops_read_as_their_source_and_hints_sit_on_the_line_they_belong_to() {
        let text = "while i < n:\n    i = i + 1\nys = [x * 2 for x in xs]\n";
        let loop_op = op(text, "while i < n:\n    i = i + 1\n", "t%4 = binary<");
        // A block statement's hint goes at the end of its header, not at column 0 below it.
        assert_eq!(hint_anchor(text, &loop_op), TextSize::from(12));
        assert_eq!(op_excerpt(text, &loop_op), "`while i < n:` (binary<)");
        let map = op(text, "x * 2", "t%9 = binary*");
        assert_eq!(hint_anchor(text, &map), TextSize::from(map.end));
        assert_eq!(op_excerpt(text, &map), "`x * 2` (binary*)");
        let long = format!("ys = [{}]\n", "x + ".repeat(30) + "x");
        let excerpt = op_excerpt(&long, &op(&long, long.trim_end(), "reduce.add"));
        assert!(excerpt.ends_with("…` (reduce.add)") && excerpt.chars().count() < 70, "{excerpt}");
        assert_eq!(without_ir_numbers("len(xs%1) threads, 100% busy"), "len(xs) threads, 100% busy");
    }
}
