//! The item tree: a file's top-level functions as salsa tracked structs, with their signatures and
//! bodies as separate queries.
//!
//! A `Function` is identified by its file and name (plus an occurrence number for a duplicate
//! name), never by its position. Its syntax is stored as a green node, which has no absolute
//! offsets, so every span a per-function query reports is relative to the start of the `def`.
//! Inserting a line in one function therefore changes only that function's `syntax` field, and
//! salsa re-runs only the queries that read it. `offset` places the function in the file and is
//! read only by file-level queries.
//!
//! **Architecture Invariant:** editing the body of one function never re-runs another function's
//! queries. `compiler/tests/incremental.rs` counts executions to keep this true.

use rowan::{TextRange, TextSize};

use crate::db::{Db, SourceFile};
use crate::parsed::parsed_file;
use weft_syntax::diagnostics::{Code, Diagnostic};
use weft_syntax::{Green, SyntaxNode, ast, ast::AstNode};

/// A top-level `def`.
#[salsa::tracked(debug)]
pub struct Function<'db> {
    #[returns(copy)]
    pub file: SourceFile,
    #[returns(ref)]
    pub name: String,
    /// 0 for the first `def` of this name in the file, 1 for the second, and so on.
    #[returns(copy)]
    pub occurrence: u32,
    /// The whole `def`, position-free.
    #[tracked]
    #[returns(ref)]
    pub syntax: Green,
    /// Where the `def` starts in the file.
    #[tracked]
    #[returns(copy)]
    pub offset: TextSize,
}

impl<'db> Function<'db> {
    /// The `def` as a tree whose offsets are relative to the start of the `def`.
    pub fn syntax_node(self, db: &'db dyn Db) -> SyntaxNode {
        SyntaxNode::new_root(rowan::GreenNode::clone(self.syntax(db)))
    }
}

/// The functions a file defines, in source order.
#[salsa::tracked(returns(ref))]
pub fn file_functions(db: &dyn Db, file: SourceFile) -> Vec<Function<'_>> {
    let mut seen: std::collections::HashMap<String, u32> = Default::default();
    let parse = parsed_file(db, file);
    parse
        .source_file()
        .functions()
        .map(|def| {
            let name = def.name().map(|n| n.text()).unwrap_or_default();
            let occurrence = seen.entry(name.clone()).or_default();
            let function = Function::new(
                db,
                file,
                name,
                *occurrence,
                parse.green.subtree(def.syntax().green().into_owned()),
                def.syntax().text_range().start(),
            );
            *occurrence += 1;
            function
        })
        .collect()
}

/// Top-level functions that share a name with an earlier one.
#[salsa::tracked(returns(ref))]
pub fn duplicate_functions(db: &dyn Db, file: SourceFile) -> Vec<Diagnostic> {
    let functions = file_functions(db, file);
    let name_range = |function: &Function| {
        let signature = function_signature(db, *function);
        signature.name_range + function.offset(db)
    };
    functions
        .iter()
        .filter(|f| f.occurrence(db) > 0 && !f.name(db).is_empty())
        .map(|duplicate| {
            let first = functions
                .iter()
                .find(|f| f.name(db) == duplicate.name(db) && f.occurrence(db) == 0)
                .expect("a duplicate has a first definition");
            Diagnostic::new(
                Code::DuplicateDefinition,
                name_range(duplicate),
                format!("the function `{}` is defined twice", duplicate.name(db)),
            )
            .with_label(name_range(first), "first defined here")
            .with_help("rename one of the functions")
        })
        .collect()
}

/// What callers need to know of a function: its parameters and annotations. Spans are relative
/// to the `def`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Signature {
    pub name_range: TextRange,
    pub params: Vec<ParamSignature>,
    /// The annotation after `->`, as written.
    pub ret_annotation: Option<Green>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ParamSignature {
    pub name: String,
    pub range: TextRange,
    pub annotation: Option<Green>,
}

#[salsa::tracked(returns(ref))]
pub fn function_signature<'db>(db: &'db dyn Db, function: Function<'db>) -> Signature {
    let node = function.syntax_node(db);
    let def = ast::FunctionDef::cast(node.clone()).expect("a Function's syntax is a FUNCTION_DEF");
    let name_range = def.name().map_or(node.text_range(), |n| n.syntax().text_range());
    let params = def
        .param_list()
        .into_iter()
        .flat_map(|list| list.params())
        .filter_map(|param| {
            let name = param.name()?;
            Some(ParamSignature {
                name: name.text(),
                range: name.syntax().text_range(),
                annotation: param
                    .annotation()
                    .map(|a| function.syntax(db).subtree(a.syntax().green().into_owned())),
            })
        })
        .collect();
    let ret_annotation = def.ret_type().map(|t| function.syntax(db).subtree(t.syntax().green().into_owned()));
    Signature { name_range, params, ret_annotation }
}

/// The body of a function: its block, position-free, and where the block starts within the `def`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Body {
    pub block: Option<Green>,
    pub offset: TextSize,
}

impl Body {
    pub fn block_node(&self) -> Option<SyntaxNode> {
        self.block.as_deref().cloned().map(SyntaxNode::new_root)
    }
}

#[salsa::tracked(returns(ref))]
pub fn function_body<'db>(db: &'db dyn Db, function: Function<'db>) -> Body {
    let node = function.syntax_node(db);
    let block = ast::FunctionDef::cast(node).and_then(|def| def.body());
    Body {
        offset: block.as_ref().map_or(0.into(), |b| b.syntax().text_range().start()),
        block: block.map(|b| function.syntax(db).subtree(b.syntax().green().into_owned())),
    }
}
