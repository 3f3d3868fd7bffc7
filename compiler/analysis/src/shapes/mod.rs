//! Shape analysis: the symbolic length of every sequence-valued expression, whether nested
//! sequences are regular, the length equalities `map` and `zip` need, and which `a[i]` are
//! proven in bounds.
//!
//! Queries: `function_shapes(f)` (per function, so an edit re-runs the functions it touches and
//! those whose callees' summaries changed) and `top_level_shapes(file)`. A function's result
//! `BodyShapes` doubles as its *summary*: its parameters' shapes and its result's, in atoms its
//! callers substitute their arguments into.
//!
//! Consumers: `check` reports the diagnostics (a proven length mismatch is an error, an
//! unproven equality a warning, because the executors check it at run time); `weft check
//! --shapes` prints `report`; `mono` marks proven indexes, whose bounds checks `flatten` then
//! leaves out. The reference interpreter checks every index regardless: it is the oracle.
//!
//! Soundness rests on the atoms (`symbolic`): an equality or a bound is concluded only from the
//! structure of symbolic expressions, never assumed.

mod symbolic;
mod walk;

use std::fmt::Write as _;

use rowan::TextRange;
use rustc_hash::FxHashSet as HashSet;

pub use symbolic::{Atom, AtomId, Linear};

use crate::db::{Db, SourceFile};
use crate::hir::{self, ExprId};
use crate::infer::{function_index, function_types, top_level_types};
use crate::items::{Function, file_functions};
use weft_core::types::Type;
use weft_syntax::diagnostics::Diagnostic;
use weft_syntax::line_index::LineIndex;

/// A sequence's length: symbolic, or varying between the elements of an enclosing sequence
/// (which makes that sequence irregular).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Len {
    Known(Linear),
    Varies,
}

/// What the analysis knows of a value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Shape {
    /// A value with no sequence in it, or nothing known.
    Scalar,
    /// An integer with a symbolic value (a length, a literal, an index).
    Int(Linear),
    /// An element of a `range`: some integer with `lower <= i < upper`.
    Index {
        lower: Linear,
        upper: Linear,
    },
    Tuple(Vec<Shape>),
    Seq {
        len: Len,
        elem: Box<Shape>,
    },
}

/// One binding (a parameter, an assignment's target, a loop variable) and the shape it gets.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BindingShape {
    pub name: String,
    /// Relative to the body, as the HIR's spans are.
    pub range: TextRange,
    pub ty: Type,
    pub shape: Shape,
}

/// The shapes of one body (a function or the top-level statements).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct BodyShapes {
    pub params: Vec<Shape>,
    /// The function's result (none for the top level, or a function that never returns).
    pub ret: Option<Shape>,
    /// Every atom the shapes mention, by `AtomId`.
    pub atoms: Vec<Atom>,
    pub bindings: Vec<BindingShape>,
    /// Relative to the body.
    pub diagnostics: Vec<Diagnostic>,
    /// `a[i]` expressions whose index is proven to be in `0..len(a)`.
    pub proven_indexes: Vec<ExprId>,
    /// How many `a[i]` on sequences the body has.
    pub index_sites: u32,
    /// `zip` and `map` calls whose sequences are proven to have equal lengths.
    pub equal_lengths: Vec<ExprId>,
}

impl BodyShapes {
    pub fn proves_in_bounds(&self, index_expr: ExprId) -> bool {
        self.proven_indexes.contains(&index_expr)
    }

    pub fn proves_equal_lengths(&self, call: ExprId) -> bool {
        self.equal_lengths.contains(&call)
    }

    /// `[f32; len(xs)]`, `[[i32]; n] (irregular)`, `i32 = len(xs) - 1`.
    pub fn render(&self, ty: &Type, shape: &Shape) -> String {
        render(ty, shape, &self.atoms)
    }
}

#[salsa::tracked(returns(ref))]
pub fn function_shapes<'db>(db: &'db dyn Db, function: Function<'db>) -> BodyShapes {
    let file = function.file(db);
    let body = hir::function_hir(db, function);
    let types = &function_types(db, function).body;
    let source = function.syntax_node(db).text().to_string();
    let index = file_functions(db, file).iter().position(|f| *f == function).unwrap_or(0) as u32;
    walk::Walker::new(db, file, body, types, &source, reaching(db, file, index)).function()
}

#[salsa::tracked(returns(ref))]
pub fn top_level_shapes(db: &dyn Db, file: SourceFile) -> BodyShapes {
    let body = hir::top_level_hir(db, file);
    let types = &top_level_types(db, file).main;
    walk::Walker::new(db, file, body, types, file.text(db), HashSet::default()).top_level()
}

/// The top-level functions a function calls (or passes as a value), by index.
#[salsa::tracked(returns(ref))]
pub fn function_callees<'db>(db: &'db dyn Db, function: Function<'db>) -> Vec<u32> {
    let file = function.file(db);
    let mut out: Vec<u32> = hir::function_hir(db, function)
        .exprs
        .iter()
        .filter_map(|e| match e {
            hir::Expr::Global(name) => function_index(db, file, name),
            _ => None,
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The functions from which `target` can be reached by calls: asking their shapes from
/// `target`'s would be a cycle, so their results count as unknown there.
fn reaching(db: &dyn Db, file: SourceFile, target: u32) -> HashSet<u32> {
    let functions = file_functions(db, file);
    let callees: Vec<&Vec<u32>> = functions.iter().map(|f| function_callees(db, *f)).collect();
    let mut reached: HashSet<u32> = HashSet::default();
    let mut stack = vec![target];
    while let Some(f) = stack.pop() {
        for (caller, calls) in callees.iter().enumerate() {
            let caller = caller as u32;
            if calls.contains(&f) && reached.insert(caller) {
                stack.push(caller);
            }
        }
    }
    reached
}

/// Every shape diagnostic of a file, with absolute spans.
pub fn file_shape_diagnostics(db: &dyn Db, file: SourceFile) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for function in file_functions(db, file) {
        let offset = function.offset(db);
        out.extend(function_shapes(db, *function).diagnostics.iter().map(|d| d.clone().shifted(offset)));
    }
    out.extend(top_level_shapes(db, file).diagnostics.iter().cloned());
    out
}

/// What `weft check --shapes` prints: each body's bindings with their types and shapes, by line,
/// and how many of its indexes are proven in bounds.
pub fn report(db: &dyn Db, file: SourceFile) -> String {
    let lines = LineIndex::new(file.text(db));
    let mut out = String::new();
    for function in file_functions(db, file) {
        let shapes = function_shapes(db, *function);
        let _ = write!(out, "def {}", function.name(db));
        if let (Some(ret), Type::Func(_, ret_ty)) = (&shapes.ret, &function_types(db, *function).scheme.ty) {
            let _ = write!(out, " -> {}", shapes.render(ret_ty, ret));
        }
        out.push('\n');
        write_body(&mut out, shapes, function.offset(db), &lines);
    }
    let top = top_level_shapes(db, file);
    if !top.bindings.is_empty() {
        out.push_str("top level\n");
        write_body(&mut out, top, 0.into(), &lines);
    }
    out
}

fn write_body(out: &mut String, shapes: &BodyShapes, offset: rowan::TextSize, lines: &LineIndex) {
    let mut bindings: Vec<&BindingShape> = shapes.bindings.iter().collect();
    bindings.sort_by_key(|b| b.range.start());
    for binding in bindings {
        let line = lines.line_col(binding.range.start() + offset).line + 1;
        let text = shapes.render(&binding.ty, &binding.shape);
        // An integer whose value is the atom named after it says nothing more.
        let text = text.strip_suffix(&format!(" = {}", binding.name)).unwrap_or(&text);
        let _ = writeln!(out, "  {line:>4}  {} : {text}", binding.name);
    }
    if shapes.index_sites > 0 {
        let _ = writeln!(
            out,
            "  index checks: {} of {} proven in bounds",
            shapes.proven_indexes.len(),
            shapes.index_sites
        );
    }
}

/// How a value of type `ty` with this shape prints: the type, with each sequence's length after
/// a `;`, an `(irregular)` mark where some inner length varies, and an integer's value.
pub fn render(ty: &Type, shape: &Shape, atoms: &[Atom]) -> String {
    let mut irregular = false;
    let mut text = render_type(ty, shape, atoms, &mut irregular);
    if irregular {
        text.push_str(" (irregular)");
    }
    if let Shape::Int(value) = shape {
        let _ = write!(text, " = {}", value.display(atoms));
    }
    text
}

fn render_type(ty: &Type, shape: &Shape, atoms: &[Atom], irregular: &mut bool) -> String {
    match (ty, shape) {
        (Type::Seq(elem_ty), Shape::Seq { len, elem }) => {
            let inner = render_type(elem_ty, elem, atoms, irregular);
            match len {
                Len::Known(len) => format!("[{inner}; {}]", len.display(atoms)),
                Len::Varies => {
                    *irregular = true;
                    format!("[{inner}]")
                }
            }
        }
        (Type::Tuple(types), Shape::Tuple(shapes)) if types.len() == shapes.len() && !types.is_empty() => {
            let items: Vec<String> =
                types.iter().zip(shapes).map(|(t, s)| render_type(t, s, atoms, irregular)).collect();
            if items.len() == 1 { format!("({},)", items[0]) } else { format!("({})", items.join(", ")) }
        }
        _ => ty.to_string(),
    }
}
