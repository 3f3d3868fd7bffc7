//! Hover: the type and shape of a name or expression, a prelude function's docs, and for a
//! parallel operation the kernel it became, what else that kernel computes, and its schedule.

use std::fmt::Write as _;

use rowan::{TextRange, TextSize};

use super::navigation::top_level_definition;
use super::{NameAt, Owner, Referent, expr_at, local_at, name_at};
use weft_analysis::db::{Db, SourceFile};
use weft_analysis::infer::{function_index, function_scheme};
use weft_analysis::items::file_functions;
use weft_analysis::prelude::prelude_doc;
use weft_flat::fuse::plan::{FusionPlan, PlanKernel, PlanOp};
use weft_syntax::line_index::LineIndex;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hover {
    pub range: TextRange,
    /// Markdown, with Weft code in ```` ```weft ```` blocks.
    pub markdown: String,
}

/// What is at `offset`. The kernel part needs the fusion plan (`super::fusion_plan`), which a
/// caller that cannot wait for it (the language server, right after an edit) leaves out.
pub fn hover(db: &dyn Db, file: SourceFile, offset: TextSize, plan: Option<&FusionPlan>) -> Option<Hover> {
    let (range, mut markdown) = match name_at(db, file, offset) {
        Some(name) => (name.range, describe_name(db, file, &name)?),
        None => describe_expr(db, file, offset)?,
    };
    if let Some(kernel) = plan.and_then(|plan| kernel_note(plan, file.text(db), offset)) {
        markdown.push_str("\n\n---\n\n");
        markdown.push_str(&kernel);
    }
    Some(Hover { range, markdown })
}

fn code(text: &str) -> String {
    format!("```weft\n{text}\n```")
}

fn describe_name(db: &dyn Db, file: SourceFile, name: &NameAt<'_>) -> Option<String> {
    match &name.referent {
        Referent::Prelude(n) => {
            let doc = prelude_doc(n)?;
            Some(format!("{}\n\n{}\n\n*prelude*", code(&doc.signature.replace(" | ", "\n")), doc.doc))
        }
        Referent::TopLevel(n) => match function_index(db, file, n) {
            Some(index) => {
                let f = file_functions(db, file)[index as usize];
                Some(code(&format!("def {n}: {}", function_scheme(db, f))))
            }
            None => {
                // A read shows what the name's first assignment bound.
                let definition = || top_level_definition(db, file, n);
                let text = binding_text(db, file, Owner::TopLevel, name.range)
                    .or_else(|| binding_text(db, file, Owner::TopLevel, definition()?))?;
                Some(code(&format!("{n}: {text}")))
            }
        },
        Referent::Local { name: n, first } => {
            let text = binding_text(db, file, name.owner, name.range)
                .or_else(|| binding_text(db, file, name.owner, *first))?;
            Some(code(&format!("{n}: {text}")))
        }
    }
}

/// The type and shape of the binding at `range`, or else of the local bound there. Never another
/// binding of the same name, which may be in another scope.
fn binding_text(db: &dyn Db, file: SourceFile, owner: Owner<'_>, range: TextRange) -> Option<String> {
    let base = owner.base(db);
    let shapes = owner.shapes(db, file);
    if let Some(binding) = shapes.bindings.iter().find(|b| b.range + base == range) {
        return Some(shapes.render(&binding.ty, &binding.shape));
    }
    let body = owner.hir(db, file);
    let types = owner.types(db, file);
    let local = local_at(body, base, range)?;
    if let Some(scheme) = types.scheme_of(local) {
        return Some(scheme.to_string());
    }
    types.local_types.get(local as usize).map(ToString::to_string)
}

fn describe_expr(db: &dyn Db, file: SourceFile, offset: TextSize) -> Option<(TextRange, String)> {
    let owner = Owner::at(db, file, offset);
    let base = owner.base(db);
    let body = owner.hir(db, file);
    let expr = expr_at(body, offset.checked_sub(base)?)?;
    let ty = owner.types(db, file).expr_types.get(expr as usize)?;
    Some((body.expr_range(expr) + base, code(&ty.to_string())))
}

/// The kernel whose op spans `offset` most tightly, and that op.
pub(crate) fn kernel_at(plan: &FusionPlan, offset: TextSize) -> Option<(&PlanKernel, &PlanOp)> {
    plan.kernels
        .iter()
        .flat_map(|k| k.ops.iter().map(move |op| (k, op)))
        .filter(|(_, op)| op.start <= u32::from(offset) && u32::from(offset) < op.end)
        .min_by_key(|(_, op)| op.end - op.start)
}

fn kernel_note(plan: &FusionPlan, text: &str, offset: TextSize) -> Option<String> {
    let (kernel, op) = kernel_at(plan, offset)?;
    let lines = LineIndex::new(text);
    let mut out = format!(
        "**kernel `{}`** ({}): {} runs {}, over {}.",
        kernel.name,
        kernel.pattern,
        super::op_excerpt(text, op),
        kernel.schedule,
        super::kernels::without_ir_numbers(&kernel.launch)
    );
    let others: Vec<&PlanOp> = kernel.ops.iter().filter(|o| *o != op).collect();
    if !others.is_empty() {
        out.push_str("\n\nFused with:");
        for other in others {
            let at = lines.line_col(other.start.into());
            let _ = write!(out, "\n- {} at line {}", super::op_excerpt(text, other), at.line + 1);
        }
    }
    let schedule = plan.schedules.iter().find(|s| s.start <= u32::from(offset) && u32::from(offset) < s.end);
    if let Some(choice) = schedule {
        let _ = write!(out, "\n\nSchedule: {}.", choice.schedule);
    }
    Some(out)
}
