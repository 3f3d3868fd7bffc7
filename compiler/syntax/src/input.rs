//! Whether an interactive input is ready to run: what a REPL asks before it runs a line, and a
//! notebook kernel's `is_complete_request`. The rules are Python's interactive ones: an input
//! continues while a bracket or a triple-quoted string is open, after a line that opens a
//! block (ends with `:`), and inside a block until an empty line.

use crate::kind::SyntaxKind::*;
use crate::lex::lex;

/// What an interactive input needs next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputStatus {
    /// Ready to run (it may still have errors, which running reports).
    Complete,
    /// Needs more lines; the next one is best started with `indent`.
    Incomplete { indent: String },
    /// Can never become valid by adding lines (a closing bracket with none open).
    Invalid,
}

/// Where the name that ends at byte `pos` of `text` starts: what a completion replaces and a
/// hint names, in a REPL line or a notebook cell.
pub fn word_start(text: &str, pos: usize) -> usize {
    text[..pos]
        .char_indices()
        .rev()
        .take_while(|(_, c)| *c == '_' || c.is_alphanumeric())
        .last()
        .map_or(pos, |(i, _)| i)
}

pub fn input_status(text: &str) -> InputStatus {
    let lexed = lex(text);
    let mut depth: i64 = 0;
    for token in &lexed.tokens {
        match token.kind {
            L_PAREN | L_BRACK | L_BRACE => depth += 1,
            R_PAREN | R_BRACK | R_BRACE => depth -= 1,
            _ => {}
        }
        if depth < 0 {
            return InputStatus::Invalid;
        }
    }
    let lines: Vec<&str> = text.lines().collect();
    let last = lines.iter().rev().find(|l| !l.trim().is_empty()).copied().unwrap_or("");
    let indent_of = |line: &str| line[..line.len() - line.trim_start().len()].to_string();
    let open_string = lexed.errors.iter().any(|e| {
        let at = usize::from(e.range.start());
        e.message.contains("never closed")
            && (text[at..].starts_with("\"\"\"") || text[at..].starts_with("'''"))
    });
    if depth > 0 || open_string {
        return InputStatus::Incomplete { indent: indent_of(last) };
    }
    // The last token that is not trivia (a `#` inside a string is no comment).
    let last_token =
        lexed.tokens.iter().map(|t| t.kind).rfind(|k| {
            !k.is_trivia() && !matches!(k, NEWLINE | BLANK_NEWLINE | INDENT | DEDENT | COMMENT | EOF)
        });
    if last_token == Some(COLON) || last.trim_end().ends_with('\\') {
        return InputStatus::Incomplete { indent: format!("{}    ", indent_of(last)) };
    }
    // Inside a block (an indented line outside brackets), an empty line ends the input.
    let in_block = lexed.tokens.iter().any(|t| t.kind == INDENT);
    if in_block && !text.ends_with('\n') {
        return InputStatus::Incomplete { indent: indent_of(last) };
    }
    InputStatus::Complete
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_continue_while_a_block_or_bracket_is_open() {
        let incomplete = |indent: &str| InputStatus::Incomplete { indent: indent.to_string() };
        assert_eq!(input_status("x = 1"), InputStatus::Complete);
        assert_eq!(input_status("xs = [1,\n"), incomplete(""));
        assert_eq!(input_status("def f(x):"), incomplete("    "));
        assert_eq!(input_status("def f(x):\n    return x"), incomplete("    "));
        assert_eq!(input_status("def f(x):\n    return x\n"), InputStatus::Complete);
        assert_eq!(input_status("for i in range(3):\n    if i > 1:"), incomplete("        "));
        assert_eq!(input_status("x = 1)"), InputStatus::Invalid);
        assert_eq!(input_status("s = \"\"\"abc"), incomplete(""));
        assert_eq!(input_status(""), InputStatus::Complete);
        assert_eq!(input_status("if s == \"#\":"), incomplete("    "));
        assert_eq!(input_status("xs = [\n    1,\n]"), InputStatus::Complete);
        assert_eq!(input_status("x = 1  # a comment:"), InputStatus::Complete);
    }
}
