//! Between the compiler's byte offsets and LSP's positions (UTF-16 code units, the encoding
//! every client supports), and from the compiler's plain data to protocol types.

use tower_lsp_server::ls_types as lsp;
use weft_ide::{Code, Diagnostic, Severity, TextRange, TextSize};

/// Where each line starts, to convert positions of one text.
#[derive(Debug, Clone)]
pub struct LineMap {
    text: std::sync::Arc<str>,
    starts: Vec<u32>,
    /// Each character outside ASCII: its byte offset, and the UTF-8 bytes it takes beyond its
    /// UTF-16 code units, summed over it and every such character before it. A position is
    /// then a binary search away, however long its line (a semantic token per character of a
    /// 100,000-token line stays linear).
    wide: Vec<(u32, u32)>,
}

impl LineMap {
    pub fn new(text: &str) -> LineMap {
        // Lines end at `\n`, `\r\n` or a lone `\r`, as in the lexer and the protocol.
        let bytes = text.as_bytes();
        let mut starts = vec![0];
        for (i, &b) in bytes.iter().enumerate() {
            if b == b'\n' || (b == b'\r' && bytes.get(i + 1) != Some(&b'\n')) {
                starts.push(i as u32 + 1);
            }
        }
        let mut wide = Vec::new();
        let mut extra = 0;
        for (i, c) in text.char_indices().filter(|(_, c)| !c.is_ascii()) {
            extra += (c.len_utf8() - c.len_utf16()) as u32;
            wide.push((i as u32, extra));
        }
        LineMap { text: text.into(), starts, wide }
    }

    /// Extra UTF-8 bytes of the characters that start before byte `offset`.
    fn extra_before(&self, offset: usize) -> u32 {
        let k = self.wide.partition_point(|&(at, _)| (at as usize) < offset);
        if k == 0 { 0 } else { self.wide[k - 1].1 }
    }

    pub fn position(&self, offset: TextSize) -> lsp::Position {
        let offset = u32::from(offset).min(self.text.len() as u32);
        let line = self.starts.partition_point(|&s| s <= offset) - 1;
        let start = self.starts[line] as usize;
        let mut end = offset as usize;
        while !self.text.is_char_boundary(end) {
            end -= 1;
        }
        let character = (end - start) as u32 - (self.extra_before(end) - self.extra_before(start));
        lsp::Position { line: line as u32, character }
    }

    /// The byte offset of a position; past the end of a line is the line's end, past the last
    /// line is the end of the text, as the protocol asks.
    pub fn offset(&self, position: lsp::Position) -> TextSize {
        let Some(&start) = self.starts.get(position.line as usize) else {
            return TextSize::of(&*self.text);
        };
        let line_end = self.line_end(position.line as usize);
        let line = &self.text[start as usize..line_end];
        let mut units = 0;
        for (i, c) in line.char_indices() {
            units += c.len_utf16() as u32;
            // A position inside a surrogate pair means the character it is in.
            if units > position.character {
                return TextSize::from(start + i as u32);
            }
        }
        TextSize::from(line_end as u32)
    }

    /// The byte offset where `line` ends, before its terminator.
    fn line_end(&self, line: usize) -> usize {
        self.starts.get(line + 1).map_or(self.text.len(), |&next| {
            let next = next as usize;
            if self.text[..next].ends_with("\r\n") { next - 2 } else { next - 1 }
        })
    }

    /// `range` cut at line ends, each piece within one line (terminators left out).
    pub fn line_pieces(&self, range: TextRange) -> Vec<lsp::Range> {
        let (start, end) = (self.position(range.start()), self.position(range.end()));
        (start.line..=end.line)
            .map(|line| {
                let from = if line == start.line { start } else { lsp::Position { line, character: 0 } };
                let to = if line == end.line {
                    end
                } else {
                    self.position(TextSize::from(self.line_end(line as usize) as u32))
                };
                lsp::Range { start: from, end: to }
            })
            .filter(|piece| piece.end.character > piece.start.character)
            .collect()
    }

    pub fn range(&self, range: TextRange) -> lsp::Range {
        lsp::Range { start: self.position(range.start()), end: self.position(range.end()) }
    }

    pub fn text_range(&self, range: lsp::Range) -> TextRange {
        let (start, end) = (self.offset(range.start), self.offset(range.end));
        TextRange::new(start.min(end), end.max(start))
    }
}

pub fn diagnostic(d: &Diagnostic, map: &LineMap, uri: &lsp::Uri) -> lsp::Diagnostic {
    let mut message = d.message.clone();
    for note in &d.notes {
        message.push_str("\nnote: ");
        message.push_str(note);
    }
    if let Some(help) = &d.help {
        message.push_str("\nhelp: ");
        message.push_str(help);
    }
    let related: Vec<lsp::DiagnosticRelatedInformation> = d
        .labels
        .iter()
        .filter(|l| l.range != d.range)
        .map(|l| lsp::DiagnosticRelatedInformation {
            location: lsp::Location { uri: uri.clone(), range: map.range(l.range) },
            message: l.message.clone(),
        })
        .collect();
    let unnecessary = d.code == Code::UnusedName;
    lsp::Diagnostic {
        range: map.range(d.range),
        severity: Some(match d.severity {
            Severity::Error => lsp::DiagnosticSeverity::ERROR,
            Severity::Warning => lsp::DiagnosticSeverity::WARNING,
        }),
        code: Some(lsp::NumberOrString::String(d.code.as_str().to_string())),
        // No link: the docs are not hosted anywhere every user can reach, and a path on the
        // machine that built the server works for nobody else.
        code_description: None,
        source: Some("weft".into()),
        message,
        related_information: (!related.is_empty()).then_some(related),
        tags: unnecessary.then(|| vec![lsp::DiagnosticTag::UNNECESSARY]),
        data: None,
    }
}

pub const TOKEN_TYPES: &[lsp::SemanticTokenType] = &[
    lsp::SemanticTokenType::KEYWORD,
    lsp::SemanticTokenType::FUNCTION,
    lsp::SemanticTokenType::PARAMETER,
    lsp::SemanticTokenType::VARIABLE,
    lsp::SemanticTokenType::NUMBER,
    lsp::SemanticTokenType::STRING,
    lsp::SemanticTokenType::COMMENT,
    lsp::SemanticTokenType::OPERATOR,
];

pub const TOKEN_MODIFIERS: &[lsp::SemanticTokenModifier] =
    &[lsp::SemanticTokenModifier::DECLARATION, lsp::SemanticTokenModifier::DEFAULT_LIBRARY];

/// Semantic tokens in the protocol's relative encoding; a token spanning lines is split.
/// A function's kernel lens: `7 kernels · view fusion`, with the count per instance when
/// several instances run them (`quicksort[f32]^: 4, quicksort[i32]^: 3`); the top level's
/// says so.
pub fn kernel_lens_title(f: &weft_ide::FunctionKernels) -> String {
    let plural = if f.kernels == 1 { "" } else { "s" };
    let whose = if f.function == weft_ide::TOP_LEVEL { "top level: " } else { "" };
    let mut title = format!("{whose}{} kernel{plural}", f.kernels);
    if f.instances.len() > 1 {
        let parts: Vec<String> = f.instances.iter().map(|(name, n)| format!("{name}: {n}")).collect();
        title.push_str(&format!(" ({})", parts.join(", ")));
    }
    title.push_str(" · view fusion");
    title
}

pub fn semantic_tokens(tokens: &[weft_ide::SemanticToken], map: &LineMap) -> Vec<lsp::SemanticToken> {
    use weft_ide::TokenKind::*;
    let mut out = Vec::with_capacity(tokens.len());
    let (mut last_line, mut last_start) = (0, 0);
    for token in tokens {
        let (kind, builtin) = match token.kind {
            Keyword => (0, false),
            Function => (1, false),
            Builtin => (1, true),
            Parameter => (2, false),
            Variable => (3, false),
            Number => (4, false),
            String => (5, false),
            Comment => (6, false),
            Operator => (7, false),
        };
        let modifiers = u32::from(token.declaration) | (u32::from(builtin) << 1);
        // Clients without multiline-token support (most) need one token per line.
        for piece in map.line_pieces(token.range) {
            let (start, end) = (piece.start, piece.end);
            let delta_line = start.line - last_line;
            let delta_start = if delta_line == 0 { start.character - last_start } else { start.character };
            out.push(lsp::SemanticToken {
                delta_line,
                delta_start,
                length: end.character - start.character,
                token_type: kind,
                token_modifiers_bitset: modifiers,
            });
            (last_line, last_start) = (start.line, start.character);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_utf16_code_units() {
        let text = "a = \"é𝄞\"\nb = 1\n";
        let map = LineMap::new(text);
        let b = TextSize::from(text.find('b').unwrap() as u32);
        assert_eq!(map.position(b), lsp::Position { line: 1, character: 0 });
        let quote = TextSize::from(text.rfind('"').unwrap() as u32);
        // `é` is one code unit, `𝄞` two.
        assert_eq!(map.position(quote), lsp::Position { line: 0, character: 8 });
        assert_eq!(map.offset(lsp::Position { line: 0, character: 8 }), quote);
        assert_eq!(
            map.offset(lsp::Position { line: 0, character: 99 }),
            TextSize::from(text.find('\n').unwrap() as u32)
        );
        assert_eq!(map.offset(lsp::Position { line: 9, character: 0 }), TextSize::of(text));
        // A lone `\r` and `\r\n` end lines too; past a line's end is before its terminator.
        let mixed = LineMap::new("a\rbc\r\nd");
        assert_eq!(mixed.position(TextSize::from(3)), lsp::Position { line: 1, character: 1 });
        assert_eq!(mixed.offset(lsp::Position { line: 1, character: 9 }), TextSize::from(4));
        assert_eq!(mixed.offset(lsp::Position { line: 2, character: 0 }), TextSize::from(6));
        // A token across lines is cut at each line's end, its terminator left out.
        let pieces = LineMap::new("s = '''ab\r\ncd\n'''\n").line_pieces(TextRange::new(4.into(), 17.into()));
        let spans: Vec<_> =
            pieces.iter().map(|p| (p.start.line, p.start.character, p.end.character)).collect();
        assert_eq!(spans, [(0, 4, 9), (1, 0, 2), (2, 0, 3)]);
        // Inside a surrogate pair, the offset is the character's start.
        assert_eq!(
            map.offset(lsp::Position { line: 0, character: 7 }),
            TextSize::from(text.find('𝄞').unwrap() as u32)
        );
    }
}
