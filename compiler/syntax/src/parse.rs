//! The parser: tokens to a lossless rowan tree, by hand-written recursive descent.
//!
//! **Parsing never fails.** `parse` returns a tree and a list of errors for any input. A missing
//! piece becomes an empty `MISSING` node and skipped tokens land in `ERROR` nodes, so later passes
//! never see gaps. The grammar is Python 3's, including the constructs Weft rejects: those are
//! parsed into their own nodes and reported by `validate`, which can then name them.
//!
//! Two guards keep the parser total: `MAX_DEPTH` bounds recursion (deeply nested brackets get an
//! error instead of a stack overflow), and `fuel` turns a lookahead loop that makes no progress
//! into a loud panic in tests rather than a hang.
//!
//! Tests: `compiler/tests/parse.rs` (snapshots in `compiler/tests/data/parse/`) and the
//! robustness test in `compiler/tests/robustness.rs`.

use rowan::{TextRange, TextSize};

use super::Green;
use super::build::{Checkpoint, TreeBuilder};
use super::kind::SyntaxKind::{self, *};
use super::lex::{self, Token};

/// A syntax error: the range it covers and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SyntaxError {
    pub range: TextRange,
    pub message: String,
    /// A related span, such as the bracket that an error says is never closed.
    pub label: Option<(TextRange, String)>,
    pub help: Option<String>,
}

/// The parser's result: always a tree, plus every independent error found on the way.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Parse {
    pub green: Green,
    pub errors: Vec<SyntaxError>,
}

pub fn parse(text: &str) -> Parse {
    let lexed = lex::lex(text);
    let mut parser = Parser::new(text, &lexed.tokens);
    parser.errors.extend(lexed.errors.into_iter().map(|e| SyntaxError {
        range: e.range,
        message: e.message,
        label: None,
        help: None,
    }));
    parser.source_file();
    let Parser { builder, mut errors, .. } = parser;
    errors.sort_by_key(|e| (e.range.start(), e.range.end()));
    errors.dedup_by_key(|e| e.range.start());
    let (root, height) = builder.finish();
    Parse { green: Green::new(root, height), errors }
}

/// Beyond this nesting of brackets (and of the other recursive expression forms) the parser
/// reports an error instead of recursing: CPython's own limit.
const MAX_DEPTH: u32 = 200;
/// Indented blocks open at once, at most: CPython's limit.
const MAX_OPEN_BLOCKS: u32 = 99;
/// Lookahead calls allowed without consuming a token before the parser declares itself stuck.
/// Unwinding from `MAX_DEPTH` legitimately looks ahead a few times per level without consuming.
const FUEL: u32 = 64 * MAX_DEPTH;

struct Parser<'t> {
    text: &'t str,
    tokens: &'t [Token],
    starts: Vec<TextSize>,
    /// Index of the next unconsumed token, trivia included.
    pos: usize,
    builder: TreeBuilder,
    errors: Vec<SyntaxError>,
    depth: u32,
    open_blocks: u32,
    fuel: std::cell::Cell<u32>,
}

impl<'t> Parser<'t> {
    fn new(text: &'t str, tokens: &'t [Token]) -> Self {
        let mut starts = Vec::with_capacity(tokens.len() + 1);
        let mut offset = TextSize::from(0);
        for token in tokens {
            starts.push(offset);
            offset += token.len;
        }
        starts.push(offset);
        Parser {
            text,
            tokens,
            starts,
            pos: 0,
            builder: TreeBuilder::default(),
            errors: Vec::new(),
            depth: 0,
            open_blocks: 0,
            fuel: std::cell::Cell::new(FUEL),
        }
    }

    // ---- Token access. ----

    /// Raw index of the `n`th non-trivia token from the current position.
    fn nth_index(&self, n: usize) -> usize {
        let fuel = self.fuel.get();
        if fuel == 0 {
            // A parser bug. Tests should hear of it loudly; users get the end of the file, which
            // ends every loop, and `source_file` keeps the rest of the text in an ERROR node.
            debug_assert!(false, "the parser is no longer making progress at token {}", self.pos);
            return self.tokens.len();
        }
        self.fuel.set(fuel - 1);
        let mut seen = 0;
        let mut idx = self.pos;
        while idx < self.tokens.len() {
            if !self.tokens[idx].kind.is_trivia() {
                if seen == n {
                    return idx;
                }
                seen += 1;
            }
            idx += 1;
        }
        self.tokens.len()
    }

    fn nth(&self, n: usize) -> SyntaxKind {
        self.tokens.get(self.nth_index(n)).map_or(EOF, |t| t.kind)
    }

    fn current(&self) -> SyntaxKind {
        self.nth(0)
    }

    fn at(&self, kind: SyntaxKind) -> bool {
        self.current() == kind
    }

    fn at_any(&self, kinds: &[SyntaxKind]) -> bool {
        kinds.contains(&self.current())
    }

    fn current_range(&self) -> TextRange {
        let idx = self.nth_index(0);
        TextRange::new(self.starts[idx], self.starts[(idx + 1).min(self.tokens.len())])
    }

    fn current_text(&self) -> &'t str {
        &self.text[self.current_range()]
    }

    /// The end of the last consumed non-trivia token: where "expected X" errors point.
    fn previous_end(&self) -> TextSize {
        (0..self.pos)
            .rev()
            .find(|&idx| !self.tokens[idx].kind.is_trivia() && self.tokens[idx].len > 0.into())
            .map_or(0.into(), |idx| self.starts[idx + 1])
    }

    // ---- Tree building. ----

    fn flush_trivia(&mut self) {
        while self.pos < self.tokens.len() && self.tokens[self.pos].kind.is_trivia() {
            self.emit_token();
        }
    }

    fn emit_token(&mut self) {
        let token = self.tokens[self.pos];
        let range = TextRange::at(self.starts[self.pos], token.len);
        self.builder.token(token.kind, &self.text[range]);
        self.pos += 1;
    }

    fn bump(&mut self) {
        self.flush_trivia();
        if self.pos < self.tokens.len() {
            self.emit_token();
            self.fuel.set(FUEL);
        }
    }

    fn bump_n(&mut self, n: usize) {
        for _ in 0..n {
            self.bump();
        }
    }

    fn start_node(&mut self, kind: SyntaxKind) {
        self.flush_trivia();
        self.builder.start_node(kind);
    }

    fn checkpoint(&mut self) -> Checkpoint {
        self.flush_trivia();
        self.builder.checkpoint()
    }

    fn start_node_at(&mut self, checkpoint: Checkpoint, kind: SyntaxKind) {
        self.builder.start_node_at(checkpoint, kind);
    }

    fn finish_node(&mut self) {
        self.builder.finish_node();
    }

    fn node(&mut self, kind: SyntaxKind, f: impl FnOnce(&mut Self)) {
        self.start_node(kind);
        f(self);
        self.finish_node();
    }

    fn missing(&mut self) {
        self.builder.start_node(MISSING);
        self.builder.finish_node();
    }

    // ---- Errors. ----

    fn error_at(&mut self, range: TextRange, message: impl Into<String>) {
        self.errors.push(SyntaxError { range, message: message.into(), label: None, help: None });
    }

    /// Adds help to the error just reported.
    fn with_help(&mut self, help: impl Into<String>) {
        if let Some(error) = self.errors.last_mut() {
            error.help = Some(help.into());
        }
    }

    /// Bumps an opening bracket and returns its range, for `expect_closing`.
    fn bump_opening(&mut self) -> TextRange {
        let range = self.current_range();
        self.bump();
        range
    }

    /// Expects the bracket that closes the one at `opening`, pointing at it when it is missing.
    fn expect_closing(&mut self, kind: SyntaxKind, opening: TextRange) {
        if self.expect(kind) {
            return;
        }
        // Mid-line, the bracket may well be closed later: the likelier slip is a missing `,`.
        if !self.at_any(&[NEWLINE, EOF, DEDENT]) {
            self.with_help("separate the items with `,`");
            return;
        }
        let open_text = self.text[opening].to_string();
        let close_text = match kind {
            R_PAREN => ")",
            R_BRACK => "]",
            _ => "}",
        };
        if let Some(error) = self.errors.last_mut() {
            error.label = Some((opening, format!("this `{open_text}` is never closed")));
            error.help = Some(format!("add `{close_text}` to close it"));
        }
    }

    /// An error about the current token ("found `)`").
    fn error_here(&mut self, message: impl Into<String>) {
        let range = self.current_range();
        let range = if range.is_empty() { TextRange::empty(self.previous_end()) } else { range };
        self.error_at(range, message);
    }

    /// The current token as an error message names it: its text, or a description of a token
    /// that has none (end of line, end of file, a layout token).
    fn found(&self) -> String {
        match self.current() {
            kind @ (NEWLINE | EOF | INDENT | DEDENT) => kind.describe().to_string(),
            _ => format!("`{}`", self.current_text()),
        }
    }

    fn expect(&mut self, kind: SyntaxKind) -> bool {
        if self.at(kind) {
            self.bump();
            return true;
        }
        let message = format!("expected {}, found {}", kind.describe(), self.found());
        // "Expected `:`" reads best right after what came before it.
        let range = TextRange::empty(self.previous_end());
        let range = if self.at_any(&[NEWLINE, EOF, DEDENT]) { range } else { self.current_range() };
        self.error_at(range, message);
        false
    }

    fn eat(&mut self, kind: SyntaxKind) -> bool {
        if self.at(kind) {
            self.bump();
            return true;
        }
        false
    }

    fn error_and_bump(&mut self, message: impl Into<String>) {
        self.error_here(message);
        self.node(ERROR, |p| p.bump());
    }

    /// Guards recursion: past `MAX_DEPTH`, reports once and skips the construct (a whole
    /// bracketed group when it starts with a bracket).
    fn too_deep(&mut self) -> bool {
        if self.depth < MAX_DEPTH {
            return false;
        }
        self.error_here("this is nested too deeply");
        self.with_help(format!("Weft, like CPython, allows at most {MAX_DEPTH} nested brackets"));
        if self.at_any(&[EOF, NEWLINE, DEDENT, INDENT]) {
            self.missing();
            return true;
        }
        self.node(ERROR, |p| {
            let mut open = 0usize;
            loop {
                match p.current() {
                    L_PAREN | L_BRACK | L_BRACE => open += 1,
                    R_PAREN | R_BRACK | R_BRACE => open = open.saturating_sub(1),
                    EOF | NEWLINE | DEDENT | INDENT => break,
                    _ => {}
                }
                p.bump();
                if open == 0 {
                    break;
                }
            }
        });
        true
    }

    // ---- Statements. ----

    fn source_file(&mut self) {
        self.builder.start_node(SOURCE_FILE);
        while !self.at(EOF) {
            self.statement();
        }
        self.flush_trivia();
        if self.pos < self.tokens.len() {
            self.error_here("the parser stopped making progress here; this is a bug in Weft");
            self.node(ERROR, |p| {
                while p.pos < p.tokens.len() {
                    p.emit_token();
                }
            });
        }
        self.builder.finish_node();
    }

    fn statement(&mut self) {
        match self.current() {
            DEF_KW => self.function_def(),
            CLASS_KW => self.class_def(),
            IF_KW => self.if_stmt(),
            FOR_KW => self.for_stmt(),
            WHILE_KW => self.while_stmt(),
            TRY_KW => self.try_stmt(),
            WITH_KW => self.with_stmt(),
            IDENT if self.at_soft_keyword_block("match") => self.match_stmt(),
            AT => self.decorator(),
            ASYNC_KW => self.node(ASYNC_STMT, |p| {
                p.bump();
                p.nested(Self::statement);
            }),
            INDENT => {
                self.error_here("unexpected indentation");
                self.node(ERROR, |p| p.indented_block());
            }
            DEDENT => self.error_and_bump("unexpected end of block"),
            ELSE_KW | ELIF_KW | EXCEPT_KW | FINALLY_KW => {
                let message = format!("`{}` does not follow a matching statement", self.current_text());
                self.error_here(message);
                self.node(ERROR, |p| {
                    while !p.at_any(&[COLON, NEWLINE, EOF]) {
                        p.bump();
                    }
                    p.eat(COLON);
                    p.block();
                });
            }
            _ => self.simple_statement_line(),
        }
    }

    /// Simple statements separated by `;`, then the end of the line.
    fn simple_statement_line(&mut self) {
        self.simple_statement();
        while self.eat(SEMICOLON) {
            if self.at_any(&[NEWLINE, EOF, DEDENT]) {
                break;
            }
            self.simple_statement();
        }
        self.end_of_line();
    }

    fn end_of_line(&mut self) {
        if self.eat(NEWLINE) || self.at_any(&[EOF, DEDENT]) {
            return;
        }
        self.error_here(format!("expected end of line, found {}", self.found()));
        self.node(ERROR, |p| {
            while !p.at_any(&[NEWLINE, EOF, DEDENT]) {
                p.bump();
            }
        });
        self.eat(NEWLINE);
    }

    fn at_statement_end(&self) -> bool {
        self.at_any(&[NEWLINE, SEMICOLON, EOF, DEDENT])
    }

    fn simple_statement(&mut self) {
        match self.current() {
            RETURN_KW => self.node(RETURN_STMT, |p| {
                p.bump();
                if !p.at_statement_end() {
                    p.star_expr_list();
                }
            }),
            PASS_KW => self.node(PASS_STMT, Self::bump),
            BREAK_KW => self.node(BREAK_STMT, Self::bump),
            CONTINUE_KW => self.node(CONTINUE_STMT, Self::bump),
            IMPORT_KW | FROM_KW => self.node(IMPORT_STMT, Self::bump_to_statement_end),
            GLOBAL_KW => self.node(GLOBAL_STMT, Self::bump_to_statement_end),
            NONLOCAL_KW => self.node(NONLOCAL_STMT, Self::bump_to_statement_end),
            DEL_KW => self.node(DEL_STMT, |p| {
                p.bump();
                p.star_expr_list();
            }),
            RAISE_KW => self.node(RAISE_STMT, |p| {
                p.bump();
                if !p.at_statement_end() {
                    p.expr();
                }
                if p.eat(FROM_KW) {
                    p.expr();
                }
            }),
            ASSERT_KW => self.node(ASSERT_STMT, |p| {
                p.bump();
                p.expr();
                if p.eat(COMMA) {
                    p.expr();
                }
            }),
            _ => self.expr_or_assignment(),
        }
    }

    fn bump_to_statement_end(&mut self) {
        while !self.at_statement_end() {
            self.bump();
        }
    }

    fn expr_or_assignment(&mut self) {
        let checkpoint = self.checkpoint();
        self.star_expr_list();
        match self.current() {
            EQ => {
                self.start_node_at(checkpoint, ASSIGN_STMT);
                while self.eat(EQ) {
                    self.star_expr_list();
                }
            }
            AUG_ASSIGN => {
                self.start_node_at(checkpoint, AUG_ASSIGN_STMT);
                self.bump();
                self.star_expr_list();
            }
            COLON => {
                self.start_node_at(checkpoint, ANN_ASSIGN_STMT);
                self.bump();
                self.node(TYPE_ANNOTATION, Self::expr);
                if self.eat(EQ) {
                    self.star_expr_list();
                }
            }
            _ => self.start_node_at(checkpoint, EXPR_STMT),
        }
        self.finish_node();
    }

    fn function_def(&mut self) {
        self.node(FUNCTION_DEF, |p| {
            p.bump();
            p.name();
            if p.at(L_PAREN) {
                p.node(PARAM_LIST, |p| {
                    let opening = p.bump_opening();
                    p.params(R_PAREN, true);
                    p.expect_closing(R_PAREN, opening);
                });
            } else {
                p.expect(L_PAREN);
                p.missing();
            }
            if p.at(ARROW) {
                p.node(RET_TYPE, |p| {
                    p.bump();
                    p.expr();
                });
            }
            if !p.expect(COLON) {
                p.with_help("a `def` line ends with `:`, and the body follows, indented");
            }
            p.block();
        });
    }

    /// Parameters up to `end` (`)` for a def, `:` for a lambda).
    fn params(&mut self, end: SyntaxKind, annotated: bool) {
        // CPython's ordering rules, so that Weft calls a syntax error what CPython does.
        let (mut seen_default, mut seen_star, mut seen_double_star) = (false, false, false);
        while !self.at_any(&[end, NEWLINE, EOF]) {
            if seen_double_star && !self.at(COMMA) {
                self.error_here("a parameter cannot follow `**kwargs`");
            }
            match self.current() {
                IDENT => {
                    let name_range = self.current_range();
                    let has_default = self.param(annotated);
                    if seen_default && !has_default && !seen_star {
                        self.error_at(
                            name_range,
                            "a parameter without a default cannot follow one with a default",
                        );
                    }
                    seen_default |= has_default;
                }
                STAR | STAR2 if self.nth(1) == IDENT => {
                    seen_star = true;
                    seen_double_star |= self.at(STAR2);
                    self.node(STAR_PARAM, |p| {
                        p.bump();
                        p.name();
                        if annotated && p.at(COLON) {
                            p.node(TYPE_ANNOTATION, |p| {
                                p.bump();
                                p.nested(Self::expr);
                            });
                        }
                    });
                }
                STAR | SLASH => {
                    seen_star |= self.at(STAR);
                    self.node(PARAM_MARKER, Self::bump);
                }
                R_PAREN | R_BRACK | R_BRACE => break,
                _ => {
                    let message = format!("expected a parameter, found {}", self.found());
                    if self.at(COMMA) {
                        self.error_here(message);
                    } else {
                        self.error_and_bump(message);
                    }
                }
            }
            if !self.eat(COMMA) {
                break;
            }
        }
    }

    /// One named parameter; says whether it has a default value.
    fn param(&mut self, annotated: bool) -> bool {
        let mut has_default = false;
        self.node(PARAM, |p| {
            p.name();
            if annotated && p.at(COLON) {
                p.node(TYPE_ANNOTATION, |p| {
                    p.bump();
                    p.nested(Self::expr);
                });
            }
            if p.at(EQ) {
                has_default = true;
                p.node(DEFAULT_VALUE, |p| {
                    p.bump();
                    p.nested(Self::expr);
                });
            }
        });
        has_default
    }

    fn name(&mut self) {
        if self.at(IDENT) {
            self.node(NAME, Self::bump);
        } else {
            self.error_here(format!("expected a name, found {}", self.found()));
            self.missing();
        }
    }

    /// A suite: an indented block after a line break, or simple statements on the same line.
    fn block(&mut self) {
        self.node(BLOCK, |p| {
            if p.eat(NEWLINE) {
                if p.at(INDENT) {
                    p.indented_block();
                } else {
                    p.error_here("expected an indented block");
                    p.with_help("indent the lines of the block, by four spaces for example");
                }
            } else if p.at(EOF) {
                p.error_here("expected an indented block");
                p.with_help("indent the lines of the block, by four spaces for example");
            } else {
                p.simple_statement_line();
            }
        });
    }

    /// `INDENT statements DEDENT`. Past CPython's limit of nested blocks the block is skipped
    /// whole, so statement nesting is bounded like expression nesting.
    fn indented_block(&mut self) {
        if self.open_blocks >= MAX_OPEN_BLOCKS {
            self.error_here("too many levels of indentation");
            self.with_help(format!("Weft, like CPython, allows at most {MAX_OPEN_BLOCKS} nested blocks"));
            self.node(ERROR, |p| {
                let mut open = 0usize;
                loop {
                    match p.current() {
                        INDENT => open += 1,
                        DEDENT => open -= 1,
                        EOF => break,
                        _ => {}
                    }
                    p.bump();
                    if open == 0 {
                        break;
                    }
                }
            });
            return;
        }
        self.open_blocks += 1;
        self.bump();
        while !self.at_any(&[DEDENT, EOF]) {
            self.statement();
        }
        self.eat(DEDENT);
        self.open_blocks -= 1;
    }

    fn if_stmt(&mut self) {
        self.node(IF_STMT, |p| {
            p.bump();
            p.expr();
            p.expect(COLON);
            p.block();
            while p.at(ELIF_KW) {
                p.node(ELIF_CLAUSE, |p| {
                    p.bump();
                    p.expr();
                    p.expect(COLON);
                    p.block();
                });
            }
            p.else_clause();
        });
    }

    fn else_clause(&mut self) {
        if self.at(ELSE_KW) {
            self.node(ELSE_CLAUSE, |p| {
                p.bump();
                p.expect(COLON);
                p.block();
            });
        }
    }

    fn for_stmt(&mut self) {
        self.node(FOR_STMT, |p| {
            p.bump();
            p.target_list();
            p.expect(IN_KW);
            p.star_expr_list();
            p.expect(COLON);
            p.block();
            p.else_clause();
        });
    }

    fn while_stmt(&mut self) {
        self.node(WHILE_STMT, |p| {
            p.bump();
            p.expr();
            p.expect(COLON);
            p.block();
            p.else_clause();
        });
    }

    fn try_stmt(&mut self) {
        self.node(TRY_STMT, |p| {
            p.bump();
            p.expect(COLON);
            p.block();
            while p.at(EXCEPT_KW) {
                p.node(EXCEPT_CLAUSE, |p| {
                    p.bump();
                    p.eat(STAR);
                    if !p.at(COLON) {
                        p.expr();
                        if p.eat(AS_KW) {
                            p.name();
                        }
                    }
                    p.expect(COLON);
                    p.block();
                });
            }
            p.else_clause();
            if p.at(FINALLY_KW) {
                p.node(FINALLY_CLAUSE, |p| {
                    p.bump();
                    p.expect(COLON);
                    p.block();
                });
            }
        });
    }

    fn with_stmt(&mut self) {
        self.node(WITH_STMT, |p| {
            p.bump();
            loop {
                p.expr();
                if p.eat(AS_KW) {
                    p.target_list();
                }
                if !p.eat(COMMA) {
                    break;
                }
            }
            p.expect(COLON);
            p.block();
        });
    }

    /// Whether the current line is `word ...:` followed by an indented block: how Python tells
    /// the soft keywords `match` and `case` from names.
    fn at_soft_keyword_block(&self, word: &str) -> bool {
        if self.current_text() != word {
            return false;
        }
        let significant: Vec<SyntaxKind> = self.tokens[self.pos..]
            .iter()
            .map(|t| t.kind)
            .filter(|k| !k.is_trivia())
            .skip(1)
            .take_while(|&k| k != NEWLINE)
            .collect();
        let starts_expression =
            !matches!(significant.first(), None | Some(EQ | AUG_ASSIGN | DOT | COLON | COMMA));
        starts_expression && significant.last() == Some(&COLON)
    }

    /// `match` and `case` blocks, parsed loosely (Weft rejects them) but keeping their structure.
    fn match_stmt(&mut self) {
        self.node(MATCH_STMT, |p| {
            p.bump_to(COLON);
            p.node(BLOCK, |p| {
                if !p.eat(NEWLINE) || !p.at(INDENT) {
                    p.error_here("expected an indented block of `case` clauses");
                    return;
                }
                p.bump();
                while !p.at_any(&[DEDENT, EOF]) {
                    if p.at_soft_keyword_block("case") {
                        p.node(CASE_CLAUSE, |p| {
                            p.bump_to(COLON);
                            p.block();
                        });
                    } else {
                        p.statement();
                    }
                }
                p.eat(DEDENT);
            });
        });
    }

    /// Bumps every token up to and including `kind` on the current line.
    fn bump_to(&mut self, kind: SyntaxKind) {
        while !self.at_any(&[kind, NEWLINE, EOF]) {
            self.bump();
        }
        self.expect(kind);
    }

    fn class_def(&mut self) {
        self.node(CLASS_DEF, |p| {
            p.bump();
            p.name();
            if p.at(L_PAREN) {
                p.arg_list();
            }
            p.expect(COLON);
            p.block();
        });
    }

    fn decorator(&mut self) {
        self.node(DECORATOR, |p| {
            p.bump();
            p.expr();
        });
        self.end_of_line();
    }

    // ---- Expressions. ----

    /// `a, b` without brackets: a tuple, as after `return` or on the right of `=`.
    fn star_expr_list(&mut self) {
        self.bare_tuple(Self::star_or_expr);
    }

    /// Targets of `for` and comprehensions, which stop before `in`.
    fn target_list(&mut self) {
        self.bare_tuple(Self::target);
    }

    /// `element`, or several separated by commas, which make a tuple.
    fn bare_tuple(&mut self, element: fn(&mut Self)) {
        let checkpoint = self.checkpoint();
        element(self);
        if self.at(COMMA) {
            self.start_node_at(checkpoint, TUPLE_EXPR);
            while self.eat(COMMA) {
                if !self.at_expr_start() {
                    break;
                }
                element(self);
            }
            self.finish_node();
        }
    }

    /// A target: an expression without comparisons (so that it stops before `in`), maybe starred.
    fn target(&mut self) {
        self.maybe_starred(|p| p.binary(0));
    }

    fn star_or_expr(&mut self) {
        self.maybe_starred(Self::expr);
    }

    fn maybe_starred(&mut self, plain: fn(&mut Self)) {
        if self.at(STAR) {
            self.node(STAR_EXPR, |p| {
                p.bump();
                p.binary(0);
            });
        } else {
            plain(self);
        }
    }

    fn at_expr_start(&self) -> bool {
        matches!(
            self.current(),
            IDENT
                | INT_NUMBER
                | FLOAT_NUMBER
                | IMAG_NUMBER
                | STRING
                | TRUE_KW
                | FALSE_KW
                | NONE_KW
                | ELLIPSIS
                | L_PAREN
                | L_BRACK
                | L_BRACE
                | MINUS
                | PLUS
                | TILDE
                | NOT_KW
                | LAMBDA_KW
                | AWAIT_KW
                | STAR
                | YIELD_KW
        )
    }

    fn expr(&mut self) {
        match self.current() {
            LAMBDA_KW => self.lambda(),
            YIELD_KW => self.node(YIELD_EXPR, |p| {
                p.bump();
                p.eat(FROM_KW);
                if p.at_expr_start() {
                    p.nested(Self::star_expr_list);
                }
            }),
            _ => {
                let checkpoint = self.checkpoint();
                self.or_test();
                if self.at(IF_KW) {
                    self.start_node_at(checkpoint, COND_EXPR);
                    self.bump();
                    self.or_test();
                    self.expect(ELSE_KW);
                    self.nested(Self::expr);
                    self.finish_node();
                } else if self.at(WALRUS) {
                    self.start_node_at(checkpoint, NAMED_EXPR);
                    self.bump();
                    self.nested(Self::expr);
                    self.finish_node();
                }
            }
        }
    }

    /// Runs `f` one nesting level deeper, unless that is too deep. Every recursive cycle of the
    /// grammar passes through here once: brackets count one level each, as in CPython.
    fn nested(&mut self, f: impl FnOnce(&mut Self)) {
        if self.too_deep() {
            return;
        }
        self.depth += 1;
        f(self);
        self.depth -= 1;
    }

    fn lambda(&mut self) {
        self.node(LAMBDA_EXPR, |p| {
            p.bump();
            p.node(PARAM_LIST, |p| p.params(COLON, false));
            p.expect(COLON);
            p.nested(Self::expr);
        });
    }

    fn or_test(&mut self) {
        let checkpoint = self.checkpoint();
        self.and_test();
        while self.at(OR_KW) {
            self.start_node_at(checkpoint, BOOL_EXPR);
            self.bump();
            self.and_test();
            self.finish_node();
        }
    }

    fn and_test(&mut self) {
        let checkpoint = self.checkpoint();
        self.not_test();
        while self.at(AND_KW) {
            self.start_node_at(checkpoint, BOOL_EXPR);
            self.bump();
            self.not_test();
            self.finish_node();
        }
    }

    fn not_test(&mut self) {
        if self.at(NOT_KW) {
            self.node(PREFIX_EXPR, |p| {
                p.bump();
                p.nested(Self::not_test);
            });
        } else {
            self.comparison();
        }
    }

    /// The length of the comparison operator at the current token, if any (`not in` is two).
    fn comparison_operator(&self) -> Option<usize> {
        match self.current() {
            LT | GT | EQ2 | GTEQ | LTEQ | NEQ | IN_KW => Some(1),
            NOT_KW if self.nth(1) == IN_KW => Some(2),
            IS_KW if self.nth(1) == NOT_KW => Some(2),
            IS_KW => Some(1),
            _ => None,
        }
    }

    fn comparison(&mut self) {
        let checkpoint = self.checkpoint();
        self.binary(0);
        if self.comparison_operator().is_none() {
            return;
        }
        self.start_node_at(checkpoint, COMPARE_EXPR);
        while let Some(len) = self.comparison_operator() {
            self.node(COMPARE_OP, |p| p.bump_n(len));
            self.binary(0);
        }
        self.finish_node();
    }

    /// Left-associative binary operators by precedence climbing: `binary(0)` parses a whole
    /// `|` expression, `binary(p)` only operators that bind at least as tightly as `p`.
    fn binary(&mut self, min_power: u8) {
        let checkpoint = self.checkpoint();
        self.factor();
        while let Some(power) = binding_power(self.current()).filter(|&p| p >= min_power) {
            self.start_node_at(checkpoint, BIN_EXPR);
            self.bump();
            self.binary(power + 1);
            self.finish_node();
        }
    }

    fn factor(&mut self) {
        if self.at_any(&[PLUS, MINUS, TILDE]) {
            self.node(PREFIX_EXPR, |p| {
                p.bump();
                p.nested(Self::factor);
            });
        } else {
            self.power();
        }
    }

    fn power(&mut self) {
        let checkpoint = self.checkpoint();
        if self.at(AWAIT_KW) {
            self.node(AWAIT_EXPR, |p| {
                p.bump();
                p.primary();
            });
        } else {
            self.primary();
        }
        if self.at(STAR2) {
            self.start_node_at(checkpoint, BIN_EXPR);
            self.bump();
            self.nested(Self::factor);
            self.finish_node();
        }
    }

    fn primary(&mut self) {
        let checkpoint = self.checkpoint();
        self.atom();
        loop {
            match self.current() {
                L_PAREN => {
                    self.start_node_at(checkpoint, CALL_EXPR);
                    self.nested(Self::arg_list);
                }
                L_BRACK => {
                    self.start_node_at(checkpoint, INDEX_EXPR);
                    self.nested(Self::subscript);
                }
                DOT => {
                    self.start_node_at(checkpoint, ATTR_EXPR);
                    self.bump();
                    self.name();
                }
                _ => return,
            }
            self.finish_node();
        }
    }

    fn arg_list(&mut self) {
        self.node(ARG_LIST, |p| {
            let opening = p.bump_opening();
            let mut seen_keyword = false;
            while !p.at_any(&[R_PAREN, NEWLINE, EOF]) {
                let start = p.current_range().start();
                let keyword = p.at(STAR2) || (p.at(IDENT) && p.nth(1) == EQ);
                let positional = !keyword && !p.at(STAR);
                p.argument();
                if seen_keyword && positional {
                    let range = TextRange::new(start, p.previous_end().max(start));
                    p.error_at(range, "a positional argument cannot follow a keyword argument");
                }
                seen_keyword |= keyword;
                if !p.eat(COMMA) {
                    break;
                }
            }
            p.expect_closing(R_PAREN, opening);
        });
    }

    fn argument(&mut self) {
        match self.current() {
            STAR | STAR2 => self.node(STAR_EXPR, |p| {
                p.bump();
                p.expr();
            }),
            IDENT if self.nth(1) == EQ => self.node(KEYWORD_ARG, |p| {
                p.name();
                p.bump();
                p.expr();
            }),
            _ => {
                let checkpoint = self.checkpoint();
                self.expr();
                if self.at(FOR_KW) {
                    self.start_node_at(checkpoint, GENERATOR_EXP);
                    self.comprehension_clauses();
                    self.finish_node();
                }
            }
        }
    }

    fn subscript(&mut self) {
        let opening = self.bump_opening();
        let checkpoint = self.checkpoint();
        self.subscript_item();
        if self.at(COMMA) {
            self.start_node_at(checkpoint, TUPLE_EXPR);
            while self.eat(COMMA) {
                if self.at(R_BRACK) {
                    break;
                }
                self.subscript_item();
            }
            self.finish_node();
        }
        self.expect_closing(R_BRACK, opening);
    }

    fn subscript_item(&mut self) {
        let checkpoint = self.checkpoint();
        if !self.at(COLON) {
            self.expr();
        }
        if !self.at(COLON) {
            return;
        }
        self.start_node_at(checkpoint, SLICE);
        self.bump();
        if !self.at_any(&[COLON, R_BRACK, COMMA]) {
            self.expr();
        }
        if self.eat(COLON) && !self.at_any(&[R_BRACK, COMMA]) {
            self.expr();
        }
        self.finish_node();
    }

    fn comprehension_clauses(&mut self) {
        while self.at(FOR_KW) || (self.at(ASYNC_KW) && self.nth(1) == FOR_KW) {
            self.node(COMP_FOR, |p| {
                p.eat(ASYNC_KW);
                p.bump();
                p.target_list();
                p.expect(IN_KW);
                p.or_test();
            });
            while self.at(IF_KW) {
                self.node(COMP_IF, |p| {
                    p.bump();
                    p.or_test();
                });
            }
        }
    }

    fn atom(&mut self) {
        match self.current() {
            IDENT => self.node(NAME_REF, Self::bump),
            INT_NUMBER | FLOAT_NUMBER | IMAG_NUMBER | TRUE_KW | FALSE_KW | NONE_KW | ELLIPSIS => {
                self.node(LITERAL, Self::bump)
            }
            STRING => self.node(LITERAL, |p| {
                while p.at(STRING) {
                    p.bump();
                }
            }),
            L_PAREN => self.nested(Self::parenthesized),
            L_BRACK => self.nested(Self::list_display),
            L_BRACE => self.nested(Self::brace_display),
            _ => {
                self.error_here(format!("expected an expression, found {}", self.found()));
                self.missing();
            }
        }
    }

    fn parenthesized(&mut self) {
        let checkpoint = self.checkpoint();
        let opening = self.bump_opening();
        if self.eat(R_PAREN) {
            self.start_node_at(checkpoint, TUPLE_EXPR);
            self.finish_node();
            return;
        }
        self.star_or_expr();
        let kind = match self.current() {
            FOR_KW | ASYNC_KW => {
                self.comprehension_clauses();
                GENERATOR_EXP
            }
            COMMA => {
                while self.eat(COMMA) {
                    if self.at(R_PAREN) || !self.at_expr_start() {
                        break;
                    }
                    self.star_or_expr();
                }
                TUPLE_EXPR
            }
            _ => PAREN_EXPR,
        };
        self.expect_closing(R_PAREN, opening);
        self.start_node_at(checkpoint, kind);
        self.finish_node();
    }

    fn list_display(&mut self) {
        let checkpoint = self.checkpoint();
        let opening = self.bump_opening();
        let mut kind = LIST_EXPR;
        if !self.at(R_BRACK) {
            self.star_or_expr();
            if self.at_any(&[FOR_KW, ASYNC_KW]) {
                self.comprehension_clauses();
                kind = LIST_COMP;
            } else {
                self.rest_of_display(R_BRACK);
            }
        }
        self.expect_closing(R_BRACK, opening);
        self.start_node_at(checkpoint, kind);
        self.finish_node();
    }

    fn rest_of_display(&mut self, close: SyntaxKind) {
        while self.eat(COMMA) {
            if self.at(close) || !self.at_expr_start() {
                break;
            }
            self.star_or_expr();
        }
    }

    fn brace_display(&mut self) {
        let checkpoint = self.checkpoint();
        let opening = self.bump_opening();
        let kind = if self.at(R_BRACE) {
            DICT_EXPR
        } else if self.at(STAR2) || self.dict_entry_ahead() {
            self.dict_entry();
            if self.at_any(&[FOR_KW, ASYNC_KW]) {
                self.comprehension_clauses();
                DICT_COMP
            } else {
                while self.eat(COMMA) && !self.at(R_BRACE) {
                    self.dict_entry();
                }
                DICT_EXPR
            }
        } else {
            self.star_or_expr();
            if self.at_any(&[FOR_KW, ASYNC_KW]) {
                self.comprehension_clauses();
                SET_COMP
            } else {
                self.rest_of_display(R_BRACE);
                SET_EXPR
            }
        };
        self.expect_closing(R_BRACE, opening);
        self.start_node_at(checkpoint, kind);
        self.finish_node();
    }

    /// Whether the display that just opened is a dict: its first expression is followed by `:`.
    fn dict_entry_ahead(&self) -> bool {
        let mut depth = 0usize;
        let significant = self.tokens[self.pos..].iter().filter(|t| !t.kind.is_trivia());
        for token in significant {
            match token.kind {
                L_PAREN | L_BRACK | L_BRACE => depth += 1,
                R_PAREN | R_BRACK | R_BRACE if depth > 0 => depth -= 1,
                COLON if depth == 0 => return true,
                R_BRACE | COMMA | LAMBDA_KW if depth == 0 => return false,
                NEWLINE => return false,
                _ => {}
            }
        }
        false
    }

    fn dict_entry(&mut self) {
        self.node(DICT_ENTRY, |p| {
            if p.eat(STAR2) {
                p.binary(0);
                return;
            }
            p.expr();
            p.expect(COLON);
            p.expr();
        });
    }
}

/// How tightly a binary operator binds, loosest first: `|`, `^`, `&`, shifts, `+ -`, `* / // % @`.
fn binding_power(kind: SyntaxKind) -> Option<u8> {
    let power = match kind {
        PIPE => 1,
        CARET => 2,
        AMP => 3,
        SHL | SHR => 4,
        PLUS | MINUS => 5,
        STAR | SLASH | SLASH2 | PERCENT | AT => 6,
        _ => return None,
    };
    Some(power)
}
