//! `weft-syntax`: the lossless, error-tolerant concrete syntax tree of a Weft file, and the
//! diagnostic data every later layer reports in (`diagnostics`, `line_index`).
//!
//! `lex` turns text into tokens (with Python's INDENT/DEDENT layout), `parse` builds a rowan green
//! tree from them, `ast` gives typed views over the tree, and `validate` reports the Python
//! constructs that parse but lie outside the Weft subset.
//!
//! **Architecture Invariant:** this crate knows nothing of salsa, names, types or any front end.
//! It is a pure function from text to `(tree, errors)`, and parsing never fails.

pub mod ast;
mod build;
pub mod diagnostics;
mod green;
pub mod input;
mod kind;
pub mod lex;
pub mod line_index;
mod parse;
pub mod validate;

pub use diagnostics::{Code, Diagnostic, Severity};
pub use green::Green;
pub use kind::SyntaxKind;
pub use parse::{Parse, SyntaxError, parse};
pub use rowan::{GreenNode, TextRange, TextSize};

/// The name an identifier spells, as Python compares names: NFKC-normalised, so that `ﬁ` and
/// `fi` are one name. ASCII names, nearly all of them, are returned as they are.
pub fn identifier_key(text: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    if text.is_ascii() { text.to_string() } else { text.nfkc().collect() }
}

/// The rowan language tag for Weft trees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WeftLanguage {}

impl rowan::Language for WeftLanguage {
    type Kind = SyntaxKind;

    fn kind_from_raw(raw: rowan::SyntaxKind) -> SyntaxKind {
        SyntaxKind::from_raw(raw.0)
    }

    fn kind_to_raw(kind: SyntaxKind) -> rowan::SyntaxKind {
        kind.into()
    }
}

pub type SyntaxNode = rowan::SyntaxNode<WeftLanguage>;
pub type SyntaxToken = rowan::SyntaxToken<WeftLanguage>;
pub type SyntaxElement = rowan::SyntaxElement<WeftLanguage>;

impl Parse {
    pub fn syntax(&self) -> SyntaxNode {
        SyntaxNode::new_root(GreenNode::clone(&self.green))
    }

    pub fn source_file(&self) -> ast::SourceFile {
        ast::SourceFile { syntax: self.syntax() }
    }
}

/// The tree as indented text, one node or token per line: the format of the parse snapshots.
pub fn debug_tree(node: &SyntaxNode) -> String {
    use std::fmt::Write;
    let mut res = String::new();
    let mut indent = 0;
    for event in node.preorder_with_tokens() {
        match event {
            rowan::WalkEvent::Enter(element) => {
                let _ = write!(res, "{:indent$}{:?}@{:?}", "", element.kind(), element.text_range());
                if let rowan::NodeOrToken::Token(token) = &element {
                    let _ = write!(res, " {:?}", token.text());
                }
                res.push('\n');
                indent += 2;
            }
            rowan::WalkEvent::Leave(_) => indent -= 2,
        }
    }
    res
}
