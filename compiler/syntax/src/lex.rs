//! The lexer: source text to tokens, with Python's layout rules.
//!
//! Indentation becomes zero-width `INDENT`/`DEDENT` tokens and the end of a logical line becomes
//! `NEWLINE`; line breaks inside brackets, blank lines and comments are trivia. Every byte of the
//! input lands in exactly one token, so the tree built from these tokens is lossless.
//!
//! The lexer never fails. Problems (an unterminated string, a dedent to no known level, an unknown
//! character) come back as `LexError`s beside the tokens.
//!
//! One recovery goes beyond Python's tokenizer: inside brackets, a line that starts with a keyword
//! that can only begin a statement (`def`, `return`, ...) at or left of the indentation of the line
//! that opened the bracket closes all open brackets. An unclosed `(` then costs one error, not the
//! rest of the file. Valid Python never triggers it.

use rowan::{TextRange, TextSize};

use super::kind::SyntaxKind::{self, *};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    pub kind: SyntaxKind,
    pub len: TextSize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LexError {
    pub range: TextRange,
    pub message: String,
}

#[derive(Debug, Default)]
pub struct Lexed {
    pub tokens: Vec<Token>,
    pub errors: Vec<LexError>,
}

pub fn lex(text: &str) -> Lexed {
    let mut lexer = Lexer {
        text,
        pos: 0,
        res: Lexed::default(),
        indents: vec![Level { width: 0, alt_width: 0, opened_block: false }],
        open_brackets: 0,
        line_has_tokens: false,
    };
    lexer.run();
    lexer.res
}

struct Lexer<'a> {
    text: &'a str,
    pos: usize,
    res: Lexed,
    /// The enclosing indentation levels; the bottom is always 0.
    indents: Vec<Level>,
    /// How many brackets are open (closing an unopened one leaves it at 0).
    open_brackets: u32,
    /// Whether the current logical line has produced a non-trivia token yet.
    line_has_tokens: bool,
}

/// An indentation level: its width with tabs to the next multiple of 8, and with tabs as one
/// column. Python calls indentation inconsistent when the two widths order lines differently.
#[derive(Debug, Clone, Copy)]
struct Level {
    width: u32,
    alt_width: u32,
    /// False for a width that was an error (it matched no enclosing block): lines at it belong to
    /// the block around them, and closing it emits no `DEDENT`.
    opened_block: bool,
}

impl Lexer<'_> {
    fn run(&mut self) {
        // A byte-order mark is not part of the program, as in CPython.
        if self.text.starts_with('\u{feff}') {
            self.push(WHITESPACE, '\u{feff}'.len_utf8());
        }
        self.start_line();
        while self.pos < self.text.len() {
            self.next_token();
        }
        if self.line_has_tokens {
            self.push(NEWLINE, 0);
        }
        while let Some(level) = self.indents.pop().filter(|_| !self.indents.is_empty()) {
            if level.opened_block {
                self.push(DEDENT, 0);
            }
        }
    }

    fn rest(&self) -> &str {
        &self.text[self.pos..]
    }

    fn push(&mut self, kind: SyntaxKind, len: usize) {
        self.res.tokens.push(Token { kind, len: TextSize::from(len as u32) });
        self.pos += len;
        if !kind.is_trivia() && !matches!(kind, NEWLINE | INDENT | DEDENT) {
            self.line_has_tokens = true;
        }
    }

    fn error(&mut self, start: usize, end: usize, message: impl Into<String>) {
        let range = TextRange::new((start as u32).into(), (end as u32).into());
        self.res.errors.push(LexError { range, message: message.into() });
    }

    /// At the start of a physical line outside brackets: skip blank lines, then emit the layout
    /// tokens of the first line that has a token. `DEDENT`s come before the indentation, so that a
    /// closed block does not end with the next line's leading whitespace.
    fn start_line(&mut self) {
        loop {
            let rest = self.rest();
            let (width, alt_width, len) = indentation(rest);
            let after = &rest[len..];
            let blank = after.is_empty() || after.starts_with('#') || newline_len(after).is_some();
            if !blank {
                self.layout(Level { width, alt_width, opened_block: true }, len);
                return;
            }
            if len > 0 {
                self.push(WHITESPACE, len);
            }
            let rest = self.rest();
            if rest.starts_with('#') {
                let len = rest.find(['\n', '\r']).unwrap_or(rest.len());
                self.push(COMMENT, len);
            }
            match newline_len(self.rest()) {
                Some(len) => self.push(BLANK_NEWLINE, len),
                None => return,
            }
        }
    }

    /// Emits the `DEDENT`s and `INDENT` that take the block structure to a line indented by
    /// `line`, whose indentation is `len` bytes long.
    fn layout(&mut self, line: Level, len: usize) {
        let top = |lexer: &Self| *lexer.indents.last().expect("the bottom level is never closed");
        let mut dedented = false;
        while line.width < top(self).width {
            let closed = self.indents.pop().expect("a deeper level than the bottom");
            if closed.opened_block {
                self.push(DEDENT, 0);
            }
            dedented = true;
        }
        let start = self.pos;
        if len > 0 {
            self.push(WHITESPACE, len);
        }
        let current = top(self);
        let consistent = match line.width.cmp(&current.width) {
            std::cmp::Ordering::Equal => line.alt_width == current.alt_width,
            _ => line.alt_width > current.alt_width,
        };
        if !consistent {
            self.error(start, start + len, "inconsistent use of tabs and spaces in indentation");
        }
        if line.width <= current.width {
            return;
        }
        if dedented {
            let line_end = self.pos + self.rest().find(['\n', '\r']).unwrap_or(self.rest().len());
            self.error(self.pos, line_end, "this line's indentation matches no enclosing block");
            // Later lines at this width belong to the same block and raise no second error.
            self.indents.push(Level { opened_block: false, ..line });
            return;
        }
        self.indents.push(line);
        self.push(INDENT, 0);
    }

    fn next_token(&mut self) {
        let rest = self.rest();
        let first = rest.chars().next().expect("next_token is called before the end");
        if let Some(len) = newline_len(rest) {
            self.newline(len);
            return;
        }
        match first {
            ' ' | '\t' | '\x0c' => {
                let len = rest.find(|c| !matches!(c, ' ' | '\t' | '\x0c')).unwrap_or(rest.len());
                self.push(WHITESPACE, len);
            }
            '#' => {
                let len = rest.find(['\n', '\r']).unwrap_or(rest.len());
                self.push(COMMENT, len);
            }
            '\\' => match newline_len(&rest[1..]) {
                Some(len) => self.push(LINE_CONTINUATION, 1 + len),
                None => {
                    self.error(self.pos, self.pos + 1, "a backslash must end its line");
                    self.push(ERROR_TOKEN, 1);
                }
            },
            '0'..='9' => self.number(),
            '.' if rest[1..].starts_with(|c: char| c.is_ascii_digit()) => self.number(),
            '"' | '\'' => self.string(0),
            c if is_identifier_start(c) => self.name_or_prefixed_string(),
            _ => self.punctuation(first),
        }
    }

    fn newline(&mut self, len: usize) {
        if self.open_brackets > 0 && !self.next_line_closes_brackets(len) {
            self.push(BLANK_NEWLINE, len);
            return;
        }
        self.open_brackets = 0;
        if self.line_has_tokens {
            self.push(NEWLINE, len);
        } else {
            self.push(BLANK_NEWLINE, len);
        }
        self.line_has_tokens = false;
        self.start_line();
    }

    /// The recovery described in the module doc: a line that starts with a keyword that cannot
    /// appear inside brackets closes them.
    fn next_line_closes_brackets(&self, newline_len: usize) -> bool {
        let next_line = &self.rest()[newline_len..];
        let (_, _, len) = indentation(next_line);
        let word = &next_line[len..];
        let word_len = word.find(|c: char| !is_identifier_continue(c)).unwrap_or(word.len());
        SyntaxKind::keyword(&word[..word_len]).is_some_and(SyntaxKind::starts_statement_only)
    }

    fn name_or_prefixed_string(&mut self) {
        let rest = self.rest();
        let len = rest.find(|c: char| !is_identifier_continue(c)).unwrap_or(rest.len());
        let word = &rest[..len];
        let is_prefix = len <= 2
            && matches!(
                word.to_ascii_lowercase().as_str(),
                "r" | "u" | "b" | "f" | "br" | "rb" | "fr" | "rf"
            );
        if is_prefix && rest[len..].starts_with(['"', '\'']) {
            self.string(len);
            return;
        }
        let kind = SyntaxKind::keyword(word).unwrap_or(IDENT);
        self.push(kind, len);
    }

    fn number(&mut self) {
        let bytes = self.rest().as_bytes();
        let digits = |from: usize, ok: fn(u8) -> bool| {
            let mut end = from;
            while end < bytes.len() && (ok(bytes[end]) || bytes[end] == b'_') {
                end += 1;
            }
            end
        };
        if bytes[0] == b'0' && bytes.len() > 1 && matches!(bytes[1], b'x' | b'X' | b'o' | b'O' | b'b' | b'B')
        {
            let end = digits(2, |b| b.is_ascii_hexdigit());
            if let Some(message) = invalid_number(&self.rest()[..end], INT_NUMBER) {
                self.error(self.pos, self.pos + end, message);
            }
            self.push(INT_NUMBER, end);
            return;
        }
        let mut kind = INT_NUMBER;
        let mut end = digits(0, |b| b.is_ascii_digit());
        if end < bytes.len() && bytes[end] == b'.' {
            kind = FLOAT_NUMBER;
            end = digits(end + 1, |b| b.is_ascii_digit());
        }
        if end < bytes.len() && matches!(bytes[end], b'e' | b'E') {
            let mut exponent = end + 1;
            if exponent < bytes.len() && matches!(bytes[exponent], b'+' | b'-') {
                exponent += 1;
            }
            if exponent < bytes.len() && bytes[exponent].is_ascii_digit() {
                kind = FLOAT_NUMBER;
                end = digits(exponent, |b| b.is_ascii_digit());
            }
        }
        if end < bytes.len() && matches!(bytes[end], b'j' | b'J') {
            kind = IMAG_NUMBER;
            end += 1;
        }
        if let Some(message) = invalid_number(&self.rest()[..end], kind) {
            self.error(self.pos, self.pos + end, message);
        }
        self.push(kind, end);
    }

    /// A string literal whose prefix (`r`, `f`, `b`, ...) is `prefix_len` bytes long.
    fn string(&mut self, prefix_len: usize) {
        let start = self.pos;
        let rest = self.rest();
        let body = &rest[prefix_len..];
        let quote = body.as_bytes()[0];
        let triple = body.len() >= 3 && body.as_bytes()[1] == quote && body.as_bytes()[2] == quote;
        let open_len = if triple { 3 } else { 1 };
        let bytes = body.as_bytes();
        let mut i = open_len;
        let mut terminated = false;
        while i < bytes.len() {
            let b = bytes[i];
            if b == b'\\' {
                // Even in raw strings a backslash keeps the next quote (or line break, which may be
                // "\r\n") from ending the string.
                i += 1 + newline_len(&body[i + 1..]).unwrap_or(1);
                continue;
            }
            if !triple && (b == b'\n' || b == b'\r') {
                break;
            }
            if b == quote && (!triple || bytes[i..].starts_with(&[quote, quote, quote])) {
                i += open_len;
                terminated = true;
                break;
            }
            i += 1;
        }
        let mut len = prefix_len + i.min(bytes.len());
        while !rest.is_char_boundary(len) {
            len += 1;
        }
        if !terminated {
            self.error(start, start + len, "this string is never closed");
            // Python's tokenizer stops here; assume the line ends so the next ones still parse.
            self.open_brackets = 0;
        }
        self.push(STRING, len);
    }

    fn punctuation(&mut self, first: char) {
        let Some((kind, len)) = operator(self.rest().as_bytes()) else {
            let len = first.len_utf8();
            self.error(self.pos, self.pos + len, format!("`{}` is not valid here", first.escape_debug()));
            self.push(ERROR_TOKEN, len);
            return;
        };
        match kind {
            L_PAREN | L_BRACK | L_BRACE => self.open_brackets += 1,
            R_PAREN | R_BRACK | R_BRACE => self.open_brackets = self.open_brackets.saturating_sub(1),
            _ => {}
        }
        self.push(kind, len);
    }
}

/// The operator or delimiter at the start of `text`, longest match first, and its length.
fn operator(text: &[u8]) -> Option<(SyntaxKind, usize)> {
    let second = text.get(1).copied().unwrap_or(0);
    let third = text.get(2).copied().unwrap_or(0);
    // `op` alone, `op=` as an augmented assignment, or the doubled `opop` (and `opop=`).
    let with_doubling = |single: SyntaxKind, double: SyntaxKind| match (second, third) {
        (b'=', _) => (AUG_ASSIGN, 2),
        (s, b'=') if s == text[0] => (AUG_ASSIGN, 3),
        (s, _) if s == text[0] => (double, 2),
        _ => (single, 1),
    };
    let res = match text[0] {
        b'(' => (L_PAREN, 1),
        b')' => (R_PAREN, 1),
        b'[' => (L_BRACK, 1),
        b']' => (R_BRACK, 1),
        b'{' => (L_BRACE, 1),
        b'}' => (R_BRACE, 1),
        b',' => (COMMA, 1),
        b';' => (SEMICOLON, 1),
        b'~' => (TILDE, 1),
        b':' if second == b'=' => (WALRUS, 2),
        b':' => (COLON, 1),
        b'.' if second == b'.' && third == b'.' => (ELLIPSIS, 3),
        b'.' => (DOT, 1),
        b'*' => with_doubling(STAR, STAR2),
        b'/' => with_doubling(SLASH, SLASH2),
        b'<' if second == b'<' => with_doubling(LT, SHL),
        b'>' if second == b'>' => with_doubling(GT, SHR),
        b'<' if second == b'=' => (LTEQ, 2),
        b'>' if second == b'=' => (GTEQ, 2),
        b'<' => (LT, 1),
        b'>' => (GT, 1),
        b'=' if second == b'=' => (EQ2, 2),
        b'=' => (EQ, 1),
        b'!' if second == b'=' => (NEQ, 2),
        b'-' if second == b'>' => (ARROW, 2),
        b'+' | b'-' | b'%' | b'&' | b'|' | b'^' | b'@' if second == b'=' => (AUG_ASSIGN, 2),
        b'+' => (PLUS, 1),
        b'-' => (MINUS, 1),
        b'%' => (PERCENT, 1),
        b'&' => (AMP, 1),
        b'|' => (PIPE, 1),
        b'^' => (CARET, 1),
        b'@' => (AT, 1),
        _ => return None,
    };
    Some(res)
}

/// The width of the leading whitespace with tabs to the next multiple of 8 (as Python does), the
/// width with tabs as one column, and the whitespace's length in bytes.
fn indentation(line: &str) -> (u32, u32, usize) {
    let (mut width, mut alt_width) = (0, 0);
    for (i, c) in line.char_indices() {
        match c {
            ' ' => (width, alt_width) = (width + 1, alt_width + 1),
            '\t' => (width, alt_width) = ((width / 8 + 1) * 8, alt_width + 1),
            '\x0c' => (width, alt_width) = (0, 0),
            _ => return (width, alt_width, i),
        }
    }
    (width, alt_width, line.len())
}

/// Python identifiers: Unicode's XID classes, plus `_`.
fn is_identifier_start(c: char) -> bool {
    c == '_' || unicode_ident::is_xid_start(c)
}

fn is_identifier_continue(c: char) -> bool {
    unicode_ident::is_xid_continue(c)
}

/// What is wrong with a number literal the lexer took in loosely, if anything: digits outside the
/// base, misplaced underscores, an empty prefixed literal, or leading zeros.
fn invalid_number(text: &str, kind: SyntaxKind) -> Option<&'static str> {
    let underscores_ok =
        |digits: &str| !digits.starts_with('_') && !digits.ends_with('_') && !digits.contains("__");
    let lower = text.to_ascii_lowercase();
    if let Some((base, digits)) = lower
        .strip_prefix("0x")
        .map(|d| (16, d))
        .or_else(|| lower.strip_prefix("0o").map(|d| (8, d)))
        .or_else(|| lower.strip_prefix("0b").map(|d| (2, d)))
    {
        // `0x_1f` is valid: one underscore may follow the prefix.
        let digits = digits.strip_prefix('_').unwrap_or(digits);
        if digits.is_empty() || !underscores_ok(digits) {
            return Some("this number literal is malformed");
        }
        if !digits.chars().all(|c| c == '_' || c.is_digit(base)) {
            return Some(match base {
                2 => "a binary literal has only the digits 0 and 1",
                8 => "an octal literal has only the digits 0 to 7",
                _ => "this hexadecimal literal is malformed",
            });
        }
        return None;
    }
    let groups_ok = lower
        .split(|c: char| !(c.is_ascii_digit() || c == '_'))
        .filter(|group| !group.is_empty())
        .all(underscores_ok);
    if !groups_ok {
        return Some("an underscore in a number must stand between two digits");
    }
    if kind == INT_NUMBER && lower.starts_with('0') && lower.chars().any(|c| matches!(c, '1'..='9')) {
        return Some("leading zeros are not allowed in a decimal integer; write `0o17` for an octal number");
    }
    None
}

fn newline_len(text: &str) -> Option<usize> {
    if text.starts_with("\r\n") {
        Some(2)
    } else if text.starts_with(['\n', '\r']) {
        Some(1)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<SyntaxKind> {
        lex(text).tokens.iter().map(|t| t.kind).filter(|k| !k.is_trivia()).collect()
    }

    #[test]
    fn indentation_becomes_indent_and_dedent() {
        let res = kinds("def f():\n    return 1\nx = 2\n");
        assert_eq!(
            res,
            [
                DEF_KW, IDENT, L_PAREN, R_PAREN, COLON, NEWLINE, INDENT, RETURN_KW, INT_NUMBER, NEWLINE,
                DEDENT, IDENT, EQ, INT_NUMBER, NEWLINE
            ]
        );
    }

    #[test]
    fn tokens_cover_every_byte() {
        let text = "x = (1 +\n  2) # c\n\n  \ty = 'a\\'b' \\\n + 3.5e-2j\n$";
        let total: u32 = lex(text).tokens.iter().map(|t| u32::from(t.len)).sum();
        assert_eq!(total as usize, text.len());
    }

    fn errors(text: &str) -> Vec<String> {
        lex(text).errors.into_iter().map(|e| format!("{:?}: {}", e.range, e.message)).collect()
    }

    #[test]
    fn python_accepts_these_and_so_does_the_lexer() {
        for text in [
            "\u{feff}x = 1\n",
            "print(x, \"ab\\\r\ncd\")\r\n",
            "x = 0x_1f + 0b1_0 + 0o7 + 00 + 0_0 + 1_000.000_1e1_0 + 1e-7 + .5 + 5.\n",
            "\u{e9}t\u{e9} = 1\ne\u{301} = 2\n",
            "if x:\n\tif y:\n\t\tz = 1\n",
        ] {
            assert_eq!(errors(text), Vec::<String>::new(), "{text:?}");
        }
    }

    #[test]
    fn malformed_numbers_are_errors() {
        for text in ["0x", "0b2", "0o9", "1_", "1__0", "0777", "0_7", "1._5"] {
            assert_eq!(errors(text).len(), 1, "{text}");
        }
    }

    #[test]
    fn identifiers_follow_unicode_xid() {
        let res = kinds("x\u{b2} = 1");
        assert_eq!(res[..2], [IDENT, ERROR_TOKEN]);
    }

    #[test]
    fn tabs_and_spaces_must_order_lines_consistently() {
        assert_eq!(
            errors("def f(x):\n\ty = x\n        return y\n"),
            ["17..25: inconsistent use of tabs and spaces in indentation"]
        );
    }

    #[test]
    fn a_dedent_to_an_unknown_level_is_reported_once() {
        let text = "if x:\n        y = 1\n    z = 2\n    w = 3\nv = 4\n";
        assert_eq!(errors(text), ["24..29: this line's indentation matches no enclosing block"]);
        let res = kinds(text);
        assert_eq!(
            res.iter().filter(|k| **k == INDENT).count(),
            res.iter().filter(|k| **k == DEDENT).count()
        );
        assert_eq!(res.iter().filter(|k| **k == INDENT).count(), 1);
    }

    #[test]
    fn operators_take_the_longest_match() {
        let res =
            kinds("a **= b ** c // d //= e << f <<= g >> h >>= i <= j >= k == l != m -> n := o ... p @= q");
        let operators: Vec<SyntaxKind> = res.into_iter().filter(|k| !matches!(k, IDENT | NEWLINE)).collect();
        assert_eq!(
            operators,
            [
                AUG_ASSIGN, STAR2, SLASH2, AUG_ASSIGN, SHL, AUG_ASSIGN, SHR, AUG_ASSIGN, LTEQ, GTEQ, EQ2,
                NEQ, ARROW, WALRUS, ELLIPSIS, AUG_ASSIGN
            ]
        );
    }

    #[test]
    fn unclosed_bracket_stops_at_next_def() {
        let res = kinds("def f(x):\n    return g(x\ndef h():\n    return 1\n");
        let defs = res.iter().filter(|k| **k == DEF_KW).count();
        let newlines = res.iter().filter(|k| **k == NEWLINE).count();
        assert_eq!((defs, newlines), (2, 4));
    }
}
