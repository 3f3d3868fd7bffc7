//! `weft-ide`: editor features over the database: what is at a position, and what it means. Every answer is
//! in byte offsets of the file; the language server converts to its protocol's positions, and
//! the REPL and the Jupyter kernel can ask the same questions.
//!
//! Each feature is a plain function over `&dyn Db` and reads the same salsa queries as `weft
//! check`, so an edit recomputes only what it touched. None of them fails: a file that does not
//! parse or type-check still gets every answer its parts allow.

mod analysis;
mod completion;
pub mod format;
mod hover;
mod inlay;
mod kernels;
mod navigation;
mod outline;

use weft_analysis::pipeline;

pub use analysis::{Analysis, AnalysisHost, Cancellable, Cancelled};
pub use weft_analysis::db::{Database, Db, SourceFile};
use weft_analysis::hir::{self, Body, ExprId, LocalId};
use weft_analysis::items::{Function, file_functions, function_signature};
use weft_analysis::names::{NameResolution, Resolution, function_names, top_level_statement_names};
use weft_analysis::parsed::parsed_file;
pub use weft_flat::fuse::plan::{FusionPlan, PlanOp};
pub use weft_syntax::{Code, Diagnostic, Severity, TextRange, TextSize};
use weft_syntax::{SyntaxKind, SyntaxToken, identifier_key};

pub use completion::{Completion, CompletionKind, SignatureHelp, completions, signature_help};
pub use hover::{Hover, hover};
pub use inlay::{InlayHint, InlayKind, InlayOptions, inlay_hints};
pub use kernels::{
    FunctionKernels, FunctionPlan, KernelSource, TOP_LEVEL, function_kernels, function_plan, kernel_sources,
    op_excerpt,
};
pub use navigation::{Edit, definition, highlights, prepare_rename, references, rename};
pub use outline::{
    SemanticToken, Symbol, SymbolKind, TokenKind, document_symbols, folding_ranges, selection_ranges,
    semantic_tokens,
};

/// The fusion plan the editor shows: the one `weft fusion FILE` prints (flattened for a GPU,
/// fused within the portable binding limit), located in the source. It is the pipeline's own
/// query, so the command line and the editor agree by construction. Needs no GPU; `None` when
/// the file does not compile.
pub fn fusion_plan(db: &dyn Db, file: SourceFile) -> Option<&FusionPlan> {
    pipeline::fusion_plan(db, file, pipeline::Options::portable_gpu()).ok()
}

/// Every diagnostic of the file, in source order: what `weft check` prints.
pub fn diagnostics(db: &dyn Db, file: SourceFile) -> Vec<Diagnostic> {
    weft_analysis::file_diagnostics(db, file).clone()
}

/// The body a position is in: one top-level function, or the top-level statements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner<'db> {
    Function(Function<'db>),
    TopLevel,
}

impl<'db> Owner<'db> {
    /// The body around `offset`.
    pub fn at(db: &'db dyn Db, file: SourceFile, offset: TextSize) -> Owner<'db> {
        file_functions(db, file)
            .iter()
            .find(|f| function_range(db, **f).contains(offset))
            .map_or(Owner::TopLevel, |f| Owner::Function(*f))
    }

    /// Where the body's relative spans start in the file.
    pub fn base(self, db: &dyn Db) -> TextSize {
        match self {
            Owner::Function(f) => f.offset(db),
            Owner::TopLevel => 0.into(),
        }
    }

    fn names(self, db: &'db dyn Db, file: SourceFile) -> &'db NameResolution {
        match self {
            Owner::Function(f) => function_names(db, f),
            Owner::TopLevel => top_level_statement_names(db, file),
        }
    }

    fn hir(self, db: &'db dyn Db, file: SourceFile) -> &'db Body {
        match self {
            Owner::Function(f) => hir::function_hir(db, f),
            Owner::TopLevel => hir::top_level_hir(db, file),
        }
    }

    fn types(self, db: &'db dyn Db, file: SourceFile) -> &'db weft_analysis::infer::BodyTypes {
        match self {
            Owner::Function(f) => &weft_analysis::infer::function_types(db, f).body,
            Owner::TopLevel => &weft_analysis::infer::top_level_types(db, file).main,
        }
    }

    fn shapes(self, db: &'db dyn Db, file: SourceFile) -> &'db weft_analysis::shapes::BodyShapes {
        match self {
            Owner::Function(f) => weft_analysis::shapes::function_shapes(db, f),
            Owner::TopLevel => weft_analysis::shapes::top_level_shapes(db, file),
        }
    }
}

fn function_range(db: &dyn Db, function: Function<'_>) -> TextRange {
    let start = function.offset(db);
    TextRange::at(start, function.syntax_node(db).text_range().len())
}

/// What a name denotes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Referent {
    /// A parameter or local, by its first binding (absolute), in the body that binds it.
    Local {
        name: String,
        first: TextRange,
    },
    /// A top-level function or binding.
    TopLevel(String),
    Prelude(String),
}

impl Referent {
    pub fn name(&self) -> &str {
        match self {
            Referent::Local { name, .. } | Referent::TopLevel(name) | Referent::Prelude(name) => name,
        }
    }
}

/// A name in the source and what it denotes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameAt<'db> {
    pub range: TextRange,
    pub referent: Referent,
    pub owner: Owner<'db>,
}

impl NameAt<'_> {
    pub fn name(&self) -> &str {
        self.referent.name()
    }
}

/// The identifier token touching `offset` (the one after it wins when two touch).
pub(crate) fn ident_at(db: &dyn Db, file: SourceFile, offset: TextSize) -> Option<SyntaxToken> {
    let root = parsed_file(db, file).syntax();
    if offset > root.text_range().end() {
        return None;
    }
    root.token_at_offset(offset)
        .filter(|t| t.kind() == SyntaxKind::IDENT)
        .max_by_key(|t| t.text_range().start())
}

/// The name at `offset` and what it denotes.
pub fn name_at(db: &dyn Db, file: SourceFile, offset: TextSize) -> Option<NameAt<'_>> {
    let token = ident_at(db, file, offset)?;
    let range = token.text_range();
    let name = identifier_key(token.text());
    let owner = Owner::at(db, file, range.start());
    if let Owner::Function(f) = owner {
        let name_range = function_signature(db, f).name_range + f.offset(db);
        if name_range == range {
            return Some(NameAt { range, referent: Referent::TopLevel(name), owner: Owner::TopLevel });
        }
    }
    let base = owner.base(db);
    let names = owner.names(db, file);
    let relative = range - base;
    let resolution = names
        .references
        .iter()
        .chain(&names.definitions)
        .find(|(r, _)| *r == relative)
        .map(|(_, resolution)| resolution.clone())?;
    let referent = match resolution {
        Resolution::Local { def_range } => Referent::Local { name, first: def_range + base },
        Resolution::TopLevel => Referent::TopLevel(name),
        Resolution::Prelude => Referent::Prelude(name),
        Resolution::Unresolved => return None,
    };
    Some(NameAt { range, referent, owner })
}

/// The HIR local whose first binding is at `first` (absolute).
fn local_at(body: &Body, base: TextSize, first: TextRange) -> Option<LocalId> {
    body.locals.iter().position(|l| l.range + base == first).map(|i| i as LocalId)
}

/// The innermost expression of `body` containing `offset` (relative).
fn expr_at(body: &Body, offset: TextSize) -> Option<ExprId> {
    body.expr_ranges
        .iter()
        .enumerate()
        .filter(|(_, r)| r.contains_inclusive(offset) && !r.is_empty())
        .min_by_key(|(_, r)| r.len())
        .map(|(i, _)| i as ExprId)
}

/// Each body of the file (its functions, then the top-level statements), with its name
/// resolution.
fn bodies<'db>(db: &'db dyn Db, file: SourceFile) -> impl Iterator<Item = (Owner<'db>, &'db NameResolution)> {
    let functions = file_functions(db, file).iter().map(|&f| Owner::Function(f));
    functions.chain(std::iter::once(Owner::TopLevel)).map(move |owner| (owner, owner.names(db, file)))
}

/// Every name of the file with what it denotes: each body's reads and bindings, and the
/// top-level `def` names.
fn all_names<'db>(db: &'db dyn Db, file: SourceFile) -> Vec<NameAt<'db>> {
    let text = file.text(db);
    let mut out = Vec::new();
    for (owner, names) in bodies(db, file) {
        let base = owner.base(db);
        for (range, resolution) in names.references.iter().chain(&names.definitions) {
            let range = *range + base;
            let Some(name) = text.get(std::ops::Range::<usize>::from(range)).map(identifier_key) else {
                continue;
            };
            let referent = match resolution {
                Resolution::Local { def_range } => Referent::Local { name, first: *def_range + base },
                Resolution::TopLevel => Referent::TopLevel(name),
                Resolution::Prelude => Referent::Prelude(name),
                Resolution::Unresolved => continue,
            };
            out.push(NameAt { range, referent, owner });
        }
    }
    for &f in file_functions(db, file) {
        let range = function_signature(db, f).name_range + f.offset(db);
        out.push(NameAt { range, referent: Referent::TopLevel(f.name(db).clone()), owner: Owner::TopLevel });
    }
    out.sort_by_key(|n| n.range.start());
    out.dedup_by_key(|n| n.range);
    out
}

#[cfg(test)]
mod tests;
