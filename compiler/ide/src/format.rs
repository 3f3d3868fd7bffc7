//! The formatter `weft fmt` and the language server share: canonical spacing and indentation,
//! comments kept.
//!
//! It works on the lossless tree's tokens, so it never changes what the program says: the
//! significant tokens come out in the same order with the same text, and only whitespace and
//! blank lines change. Rules (PEP 8's, where Weft's subset has them):
//! - four spaces per indentation level; lines continued inside brackets keep their own
//!   indentation, since alignment there is the author's;
//! - one space around binary operators, `=`, `->` and after `,` and `:`; none inside brackets,
//!   before `(` or `[` of a call or an index, after a unary operator, around `=` of a keyword
//!   argument or an unannotated default, or around `:` of a slice;
//! - an inline comment is at least two spaces after the code (wider gaps stay, so comments
//!   aligned in a column stay aligned); a comment on its own line takes the indentation of the
//!   code after it;
//! - at most two blank lines at the top level and one inside a block, none at the start, and
//!   one newline at the end.
//!
//! A file with syntax errors is not formatted: its tree says too little about its layout.

use weft_analysis::db::{Db, SourceFile};
use weft_analysis::parsed::{parsed_file, syntax_diagnostics};
use weft_syntax::SyntaxKind::{self, *};
use weft_syntax::diagnostics::{Code, Diagnostic};
use weft_syntax::{SyntaxNode, SyntaxToken};

/// The formatted text of `file`, or its syntax errors.
pub fn format_file(db: &dyn Db, file: SourceFile) -> Result<String, Vec<Diagnostic>> {
    let errors: Vec<Diagnostic> =
        syntax_diagnostics(db, file).iter().filter(|d| d.code == Code::SyntaxError).cloned().collect();
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(format_tree(&parsed_file(db, file).syntax()))
}

/// One output line before blank lines and comments are settled.
struct Line {
    /// Spaces before the text; `None` for a line continued inside brackets, which keeps `lead`.
    indent: Option<usize>,
    lead: String,
    text: String,
    comment_only: bool,
}

#[derive(Default)]
struct Formatter {
    lines: Vec<Line>,
    current: Option<Line>,
    depth: usize,
    brackets: usize,
    /// The original whitespace at the start of a continued line.
    continuation: Option<String>,
    previous: Option<SyntaxToken>,
    /// The width of the last whitespace, which an inline comment keeps if it is wider.
    gap: usize,
}

fn format_tree(root: &SyntaxNode) -> String {
    let mut f = Formatter::default();
    for token in root.descendants_with_tokens().filter_map(|e| e.into_token()) {
        f.token(&token);
    }
    f.end_line();
    f.finish()
}

impl Formatter {
    fn token(&mut self, token: &SyntaxToken) {
        match token.kind() {
            INDENT => self.depth += 1,
            DEDENT => self.depth = self.depth.saturating_sub(1),
            EOF => {}
            WHITESPACE => {
                if self.continuation.is_some() && self.current.is_none() {
                    self.continuation = Some(token.text().to_string());
                }
                self.gap = token.text().len();
            }
            NEWLINE | BLANK_NEWLINE => self.newline(),
            LINE_CONTINUATION => {
                self.push_text(" \\");
                self.end_line();
                self.continuation = Some(String::new());
            }
            COMMENT => match &mut self.current {
                Some(line) => {
                    // Comments aligned in a column stay aligned.
                    line.text.extend(std::iter::repeat_n(' ', self.gap.max(2)));
                    line.text.push_str(token.text().trim_end());
                }
                None => {
                    self.start_line();
                    let line = self.current.as_mut().expect("just started");
                    line.text.push_str(token.text().trim_end());
                    line.comment_only = true;
                }
            },
            _ => {
                self.gap = 0;
                self.significant(token)
            }
        }
    }

    fn newline(&mut self) {
        if self.brackets > 0 {
            self.end_line();
            self.continuation = Some(String::new());
            return;
        }
        if self.current.is_none() && self.continuation.is_none() {
            self.lines.push(Line {
                indent: Some(0),
                lead: String::new(),
                text: String::new(),
                comment_only: false,
            });
        }
        self.end_line();
        self.continuation = None;
    }

    fn start_line(&mut self) {
        let (indent, lead) = match self.continuation.take() {
            Some(lead) => (None, lead),
            None => (Some(self.depth * 4), String::new()),
        };
        self.current = Some(Line { indent, lead, text: String::new(), comment_only: false });
        self.previous = None;
    }

    fn end_line(&mut self) {
        if let Some(line) = self.current.take() {
            self.lines.push(line);
        }
    }

    fn push_text(&mut self, text: &str) {
        if self.current.is_none() {
            self.start_line();
        }
        self.current.as_mut().expect("started").text.push_str(text);
    }

    fn significant(&mut self, token: &SyntaxToken) {
        let space = match (&self.current, &self.previous) {
            (Some(_), Some(previous)) => space_between(previous, token),
            _ => "",
        };
        // A comment-only line is followed by code on a line of its own.
        if self.current.as_ref().is_some_and(|l| l.comment_only) {
            self.end_line();
        }
        self.push_text(space);
        self.push_text(token.text());
        match token.kind() {
            L_PAREN | L_BRACK | L_BRACE => self.brackets += 1,
            R_PAREN | R_BRACK | R_BRACE => self.brackets = self.brackets.saturating_sub(1),
            _ => {}
        }
        self.previous = Some(token.clone());
    }

    fn finish(self) -> String {
        let lines = self.lines;
        // Own-line comments take the indentation of the next line of code.
        let mut indents: Vec<Option<usize>> = lines.iter().map(|l| l.indent).collect();
        let mut next_code = Some(0);
        for (k, line) in lines.iter().enumerate().rev() {
            if line.comment_only && line.indent.is_some() {
                indents[k] = next_code;
            } else if !line.text.is_empty() && line.indent.is_some() {
                next_code = line.indent;
            }
        }
        let mut out = String::new();
        let mut blanks = 0;
        let mut next_indent = vec![0; lines.len()];
        let mut after = 0;
        for k in (0..lines.len()).rev() {
            next_indent[k] = after;
            if !lines[k].text.is_empty() {
                after = indents[k].unwrap_or(after);
            }
        }
        for (k, line) in lines.iter().enumerate() {
            if line.text.is_empty() {
                blanks += 1;
                continue;
            }
            if !out.is_empty() {
                let limit = if indents[k].unwrap_or(next_indent[k]) == 0 { 2 } else { 1 };
                out.extend(std::iter::repeat_n('\n', blanks.min(limit)));
            }
            blanks = 0;
            match indents[k] {
                Some(n) => out.extend(std::iter::repeat_n(' ', n)),
                None => out.push_str(&line.lead),
            }
            out.push_str(line.text.trim_end());
            out.push('\n');
        }
        out
    }
}

/// The space between two significant tokens on one line.
fn space_between(previous: &SyntaxToken, next: &SyntaxToken) -> &'static str {
    let (p, n) = (previous.kind(), next.kind());
    let parent = |t: &SyntaxToken| t.parent().map(|n| n.kind());
    let in_slice = |t: &SyntaxToken| parent(t) == Some(SLICE);
    // `1 .real` must not become `1.real`, which lexes as the float `1.`.
    if n == DOT && matches!(p, INT_NUMBER | FLOAT_NUMBER) {
        return " ";
    }
    if matches!(n, R_PAREN | R_BRACK | R_BRACE | COMMA | COLON | SEMICOLON | DOT) {
        return "";
    }
    if matches!(p, L_PAREN | L_BRACK | L_BRACE | DOT) {
        return "";
    }
    if p == COLON && in_slice(previous) {
        return "";
    }
    if matches!(n, L_PAREN | L_BRACK)
        && matches!(p, IDENT | R_PAREN | R_BRACK | STRING)
        && matches!(parent(next), Some(ARG_LIST | INDEX_EXPR | PARAM_LIST))
    {
        return "";
    }
    if (p == EQ && tight_equals(previous)) || (n == EQ && tight_equals(next)) {
        return "";
    }
    if matches!(p, MINUS | PLUS | TILDE) && parent(previous) == Some(PREFIX_EXPR) {
        return "";
    }
    if matches!(p, STAR | STAR2) && matches!(parent(previous), Some(STAR_PARAM | STAR_EXPR)) {
        return "";
    }
    " "
}

/// `=` of a keyword argument, or of a default whose parameter has no annotation.
fn tight_equals(eq: &SyntaxToken) -> bool {
    match eq.parent() {
        Some(node) if node.kind() == KEYWORD_ARG => true,
        Some(node) if node.kind() == DEFAULT_VALUE => {
            !node.parent().is_some_and(|param| param.children().any(|c| c.kind() == TYPE_ANNOTATION))
        }
        _ => false,
    }
}

/// The significant tokens of a tree, which formatting keeps.
pub fn significant_tokens(root: &SyntaxNode) -> Vec<(SyntaxKind, String)> {
    root.descendants_with_tokens()
        .filter_map(|e| e.into_token())
        .filter(|t| {
            !t.kind().is_trivia() && !matches!(t.kind(), NEWLINE | INDENT | DEDENT | EOF | BLANK_NEWLINE)
        })
        .map(|t| (t.kind(), t.text().to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_analysis::db::Database;

    fn format(text: &str) -> String {
        let db = Database::default();
        let file = SourceFile::new(&db, "f.weft".into(), text.into());
        format_file(&db, file).expect("no syntax errors")
    }

    #[test]
    fn spacing_indentation_comments_and_blank_lines() {
        let text = "def f(x, y = 2):  # c\n  if x>1 :\n        return [a [0] for a in  x]  \n\n\n\n  # only\n  z = f( -x,y=3 )[1:2]\n  return (z +\n       1)\nprint (f(1))\n";
        let expected = "def f(x, y=2):  # c\n    if x > 1:\n        return [a[0] for a in x]\n\n    # only\n    z = f(-x, y=3)[1:2]\n    return (z +\n       1)\nprint(f(1))\n";
        assert_eq!(format(text), expected);
        assert_eq!(format(expected), expected);
        // Attribute access is rejected later, but its tokens must survive formatting.
        assert_eq!(format("x = 1 .real\n"), "x = 1 .real\n");
    }

    #[test]
    fn every_sample_formats_idempotently_and_keeps_its_tokens() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples");
        let mut count = 0;
        for entry in std::fs::read_dir(root).expect("samples") {
            let path = entry.expect("entry").path();
            if path.extension().is_none_or(|e| e != "weft") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("readable");
            let once = format(&text);
            assert_eq!(format(&once), once, "{} is not stable", path.display());
            let tokens = |t: &str| significant_tokens(&weft_syntax::parse(t).syntax());
            assert_eq!(tokens(&text), tokens(&once), "{} changed its tokens", path.display());
            let comments = |t: &str| t.lines().filter(|l| l.contains('#')).count();
            assert_eq!(comments(&text), comments(&once), "{} lost a comment", path.display());
            count += 1;
        }
        assert!(count >= 10);
    }
}
