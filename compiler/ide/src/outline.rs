//! The file's structure: document symbols, folding ranges, selection ranges and semantic tokens.

use rowan::{TextRange, TextSize};

use super::{Referent, all_names};
use weft_analysis::db::{Db, SourceFile};
use weft_analysis::infer::{function_index, function_scheme};
use weft_analysis::items::file_functions;
use weft_analysis::parsed::parsed_file;
use weft_syntax::SyntaxKind::*;
use weft_syntax::ast::{AstNode, FunctionDef};
use weft_syntax::{SyntaxKind, SyntaxNode};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SymbolKind {
    Function,
    Variable,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    pub name: String,
    pub kind: SymbolKind,
    /// The type (a function's scheme).
    pub detail: Option<String>,
    /// The whole definition.
    pub range: TextRange,
    /// The name.
    pub selection: TextRange,
    /// Nested `def`s.
    pub children: Vec<Symbol>,
}

/// The top-level functions (with their nested `def`s) and the top-level variables, in order.
pub fn document_symbols(db: &dyn Db, file: SourceFile) -> Vec<Symbol> {
    let root = parsed_file(db, file).syntax();
    let mut out = Vec::new();
    for &f in file_functions(db, file) {
        let base = f.offset(db);
        let node = f.syntax_node(db);
        let Some(mut symbol) = def_symbol(&node, base) else { continue };
        if function_index(db, file, f.name(db)).is_some() {
            symbol.detail = Some(function_scheme(db, f).to_string());
        }
        out.push(symbol);
    }
    let mut seen = std::collections::HashSet::new();
    for name in all_names(db, file) {
        let top_level_binding = matches!(name.referent, Referent::TopLevel(_))
            && name.owner == super::Owner::TopLevel
            && !out.iter().any(|s: &Symbol| s.selection == name.range)
            && top_level_names_bound(&root, name.range);
        if top_level_binding && seen.insert(name.name().to_string()) {
            let statement = root
                .covering_element(name.range)
                .ancestors()
                .find(|n| n.parent().is_some_and(|p| p.kind() == SOURCE_FILE))
                .map_or(name.range, |n| n.text_range());
            out.push(Symbol {
                name: name.name().to_string(),
                kind: SymbolKind::Variable,
                detail: None,
                range: statement,
                selection: name.range,
                children: Vec::new(),
            });
        }
    }
    out.sort_by_key(|s| s.range.start());
    out
}

/// Whether the name at `range` is an assignment target of a top-level statement.
fn top_level_names_bound(root: &SyntaxNode, range: TextRange) -> bool {
    let element = root.covering_element(range);
    element.ancestors().any(|n| matches!(n.kind(), ASSIGN_STMT | AUG_ASSIGN_STMT | FOR_STMT))
        && element.ancestors().all(|n| !matches!(n.kind(), FUNCTION_DEF | LAMBDA_EXPR | LIST_COMP))
        && is_target(&element)
}

fn is_target(element: &rowan::NodeOrToken<SyntaxNode, weft_syntax::SyntaxToken>) -> bool {
    let Some(statement) =
        element.ancestors().find(|n| matches!(n.kind(), ASSIGN_STMT | AUG_ASSIGN_STMT | FOR_STMT))
    else {
        return false;
    };
    weft_syntax::ast::targets(&statement).iter().any(|t| t.text_range().contains_range(element.text_range()))
}

fn def_symbol(node: &SyntaxNode, base: TextSize) -> Option<Symbol> {
    let def = FunctionDef::cast(node.clone())?;
    let name = def.name()?;
    let children = node
        .descendants()
        .filter(|n| n.kind() == FUNCTION_DEF && n != node)
        .filter(|n| n.ancestors().skip(1).find(|a| a.kind() == FUNCTION_DEF).as_ref() == Some(node))
        .filter_map(|n| def_symbol(&n, base))
        .collect();
    Some(Symbol {
        name: name.text(),
        kind: SymbolKind::Function,
        detail: None,
        range: trimmed(node) + base,
        selection: name.syntax().text_range() + base,
        children,
    })
}

/// The ranges an editor can fold: compound statements, and brackets over several lines.
pub fn folding_ranges(db: &dyn Db, file: SourceFile) -> Vec<TextRange> {
    let root = parsed_file(db, file).syntax();
    let text = file.text(db);
    root.descendants()
        .filter(|n| {
            matches!(
                n.kind(),
                FUNCTION_DEF
                    | IF_STMT
                    | ELIF_CLAUSE
                    | ELSE_CLAUSE
                    | FOR_STMT
                    | WHILE_STMT
                    | LIST_EXPR
                    | LIST_COMP
                    | ARG_LIST
                    | TUPLE_EXPR
            )
        })
        .map(|n| trimmed(&n))
        .filter(|r| text[std::ops::Range::<usize>::from(*r)].contains('\n'))
        .collect()
}

/// A node's range up to the end of its last token of code: without the trailing whitespace,
/// newlines and comments the parser leaves in a block (a comment before the next `def`
/// belongs to that `def`, not to the block above it).
fn trimmed(node: &SyntaxNode) -> TextRange {
    let range = node.text_range();
    let mut token = node.last_token();
    while let Some(t) = token.as_ref().filter(|t| {
        t.text_range().start() > range.start()
            && (t.kind().is_trivia() || matches!(t.kind(), NEWLINE | INDENT | DEDENT))
    }) {
        token = t.prev_token();
    }
    let end = token.map_or(range.end(), |t| t.text_range().end().clamp(range.start(), range.end()));
    TextRange::new(range.start(), end)
}

/// Selection ranges kept around one position: the innermost ones, then the whole file. Deeper
/// chains (a sum of 100,000 terms nests that deep) help nobody, and a client's JSON parser
/// may refuse them: serde_json, for one, stops at 128 levels.
pub const MAX_SELECTION_RANGES: usize = 100;

/// The ranges around `offset`, innermost first: the word, then each enclosing node, at most
/// `MAX_SELECTION_RANGES` of them (the outermost always among them).
pub fn selection_ranges(db: &dyn Db, file: SourceFile, offset: TextSize) -> Vec<TextRange> {
    let root = parsed_file(db, file).syntax();
    let Some(token) = root.token_at_offset(offset.min(root.text_range().end())).right_biased() else {
        return Vec::new();
    };
    let mut out = vec![token.text_range()];
    for node in token.parent_ancestors() {
        let range = trimmed(&node);
        if out.last().is_some_and(|last| range.contains_range(*last) && range != *last) {
            out.push(range);
        }
    }
    if out.len() > MAX_SELECTION_RANGES {
        let outermost = out[out.len() - 1];
        out.truncate(MAX_SELECTION_RANGES - 1);
        out.push(outermost);
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    Keyword,
    Function,
    /// A prelude function.
    Builtin,
    Parameter,
    Variable,
    Number,
    String,
    Comment,
    Operator,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SemanticToken {
    pub range: TextRange,
    pub kind: TokenKind,
    /// A binding rather than a read.
    pub declaration: bool,
}

/// Every token worth colouring, in order, names classified by what they denote.
pub fn semantic_tokens(db: &dyn Db, file: SourceFile) -> Vec<SemanticToken> {
    let root = parsed_file(db, file).syntax();
    let names = all_names(db, file);
    let params: Vec<TextRange> = root
        .descendants()
        .filter(|n| n.kind() == PARAM)
        .filter_map(|p| p.children().find(|c| c.kind() == NAME).map(|n| n.text_range()))
        .collect();
    let mut name_at = names.iter().peekable();
    let mut out = Vec::new();
    for token in root.descendants_with_tokens().filter_map(|e| e.into_token()) {
        let range = token.text_range();
        let kind = match token.kind() {
            IDENT => {
                while name_at.peek().is_some_and(|n| n.range.start() < range.start()) {
                    name_at.next();
                }
                let Some(name) = name_at.peek().filter(|n| n.range == range) else { continue };
                let is_param = |first: &TextRange| params.contains(first);
                let kind = match &name.referent {
                    Referent::Prelude(_) => TokenKind::Builtin,
                    Referent::TopLevel(n) if function_index(db, file, n).is_some() => TokenKind::Function,
                    Referent::Local { first, .. } if is_param(first) => TokenKind::Parameter,
                    _ => TokenKind::Variable,
                };
                let declaration = matches!(&name.referent, Referent::Local { first, .. } if *first == range);
                out.push(SemanticToken { range, kind, declaration });
                continue;
            }
            INT_NUMBER | FLOAT_NUMBER | IMAG_NUMBER => TokenKind::Number,
            STRING => TokenKind::String,
            COMMENT => TokenKind::Comment,
            kind if is_keyword(kind) => TokenKind::Keyword,
            PLUS | MINUS | STAR | SLASH | SLASH2 | PERCENT | STAR2 | AMP | PIPE | CARET | TILDE | SHL
            | SHR | EQ | EQ2 | NEQ | LT | LTEQ | GT | GTEQ | AUG_ASSIGN | ARROW => TokenKind::Operator,
            _ => continue,
        };
        out.push(SemanticToken { range, kind, declaration: false });
    }
    out
}

fn is_keyword(kind: SyntaxKind) -> bool {
    (AND_KW as u16..=YIELD_KW as u16).contains(&(kind as u16))
}
