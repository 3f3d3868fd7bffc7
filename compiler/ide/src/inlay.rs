//! Inlay hints: the type or shape after each binding, and the kernel each parallel operation
//! fused into (`⟨k3⟩`) after the operation.

use rowan::{TextRange, TextSize};

use std::collections::BTreeMap;

use super::{Owner, kernels};
use weft_analysis::db::{Db, SourceFile};
use weft_analysis::items::file_functions;
use weft_flat::fuse::plan::FusionPlan;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InlayKind {
    /// `: f32` after a binding whose value has no sequence, or when shapes are off.
    Type,
    /// `: [f32; len(xs)]` after a binding of a sequence.
    Shape,
    /// `⟨k3⟩` after a parallel operation, `⟨k3, k4⟩` when it became several kernels.
    Kernel,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlayHint {
    pub offset: TextSize,
    pub kind: InlayKind,
    pub label: String,
    /// For a kernel hint, each op in it with its kernel (a line each); for a binding, its name.
    pub tooltip: String,
}

/// Which hints to give; each kind can be switched off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InlayOptions {
    pub types: bool,
    pub shapes: bool,
    pub kernels: bool,
}

impl Default for InlayOptions {
    fn default() -> Self {
        InlayOptions { types: true, shapes: true, kernels: true }
    }
}

/// The hints whose position is in `range`, in source order. Kernel hints come from `plan`
/// (`super::fusion_plan`), when the caller has it.
pub fn inlay_hints(
    db: &dyn Db,
    file: SourceFile,
    range: TextRange,
    options: InlayOptions,
    plan: Option<&FusionPlan>,
) -> Vec<InlayHint> {
    let mut hints = Vec::new();
    if options.types || options.shapes {
        let owners = file_functions(db, file).iter().map(|f| Owner::Function(*f)).chain([Owner::TopLevel]);
        let annotated = annotated_names(db, file);
        for owner in owners {
            binding_hints(db, file, owner, (range, &annotated), options, &mut hints);
        }
    }
    if let Some(plan) = plan.filter(|_| options.kernels) {
        kernel_hints(plan, file.text(db), range, &mut hints);
    }
    hints.sort_by_key(|h| h.offset);
    hints
}

fn binding_hints(
    db: &dyn Db,
    file: SourceFile,
    owner: Owner<'_>,
    (range, annotated): (TextRange, &[TextRange]),
    options: InlayOptions,
    out: &mut Vec<InlayHint>,
) {
    let base = owner.base(db);
    let shapes = owner.shapes(db, file);
    let mut covered = Vec::new();
    for binding in &shapes.bindings {
        let end = binding.range.end() + base;
        covered.push(binding.range);
        if !range.contains_inclusive(end) || annotated.contains(&(binding.range + base)) {
            continue;
        }
        let ty = binding.ty.to_string();
        let shaped = shapes.render(&binding.ty, &binding.shape);
        // An integer whose value is the atom named after it says nothing more.
        let shaped = shaped.strip_suffix(&format!(" = {}", binding.name)).unwrap_or(&shaped).to_string();
        let (kind, label) = if options.shapes && shaped != ty {
            (InlayKind::Shape, shaped)
        } else if options.types {
            (InlayKind::Type, ty)
        } else {
            continue;
        };
        out.push(InlayHint { offset: end, kind, label: format!(": {label}"), tooltip: binding.name.clone() });
    }
    if !options.types {
        return;
    }
    // Lambda parameters and comprehension variables, which shape analysis does not list.
    let body = owner.hir(db, file);
    let types = owner.types(db, file);
    for (id, local) in body.locals.iter().enumerate() {
        let end = local.range.end() + base;
        if covered.contains(&local.range)
            || !range.contains_inclusive(end)
            || types.scheme_of(id as u32).is_some()
        {
            continue;
        }
        let Some(ty) = types.local_types.get(id) else { continue };
        out.push(InlayHint {
            offset: end,
            kind: InlayKind::Type,
            label: format!(": {ty}"),
            tooltip: local.name.clone(),
        });
    }
}

/// The names whose type is written next to them: parameters and targets with an annotation.
fn annotated_names(db: &dyn Db, file: SourceFile) -> Vec<TextRange> {
    use weft_syntax::SyntaxKind::*;
    let root = weft_analysis::parsed::parsed_file(db, file).syntax();
    root.descendants()
        .filter(|n| {
            matches!(n.kind(), PARAM | ANN_ASSIGN_STMT) && n.children().any(|c| c.kind() == TYPE_ANNOTATION)
        })
        .filter_map(|n| n.children().find(|c| matches!(c.kind(), NAME | NAME_REF)).map(|c| c.text_range()))
        .collect()
}

/// One hint per expression that became kernels, at its end (`kernels::hint_anchor`): the
/// kernels' numbers, and a tooltip naming each op in them by its source text.
fn kernel_hints(plan: &FusionPlan, text: &str, range: TextRange, out: &mut Vec<InlayHint>) {
    let mut at: BTreeMap<TextSize, (Vec<&str>, Vec<String>)> = BTreeMap::new();
    for kernel in &plan.kernels {
        let short = kernel.name.split('_').next().unwrap_or(&kernel.name);
        for op in kernel.ops.iter().filter(|op| op.end > op.start) {
            let anchor = kernels::hint_anchor(text, op);
            if !range.contains_inclusive(anchor) {
                continue;
            }
            let (names, lines) = at.entry(anchor).or_default();
            if !names.contains(&short) {
                names.push(short);
            }
            lines.push(format!("{} ({}): {}", kernel.name, kernel.pattern, kernels::op_excerpt(text, op)));
        }
    }
    for (offset, (names, lines)) in at {
        out.push(InlayHint {
            offset,
            kind: InlayKind::Kernel,
            label: format!("⟨{}⟩", names.join(", ")),
            tooltip: lines.join("\n"),
        });
    }
}
