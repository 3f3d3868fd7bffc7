//! Byte offsets to 0-based lines and UTF-8 byte columns, for JSON output and (later) LSP positions.

use rowan::TextSize;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineIndex {
    /// The offset at which each line starts; the first is always 0.
    line_starts: Vec<TextSize>,
    len: TextSize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineCol {
    /// 0-based.
    pub line: u32,
    /// 0-based, in UTF-8 bytes.
    pub col: u32,
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        let mut line_starts = vec![TextSize::from(0)];
        let bytes = text.as_bytes();
        for (i, &b) in bytes.iter().enumerate() {
            // "\r\n" counts once, at its "\n"; a lone "\r" ends a line too, as in Python.
            let ends_line = b == b'\n' || (b == b'\r' && bytes.get(i + 1) != Some(&b'\n'));
            if ends_line {
                line_starts.push(TextSize::from(i as u32 + 1));
            }
        }
        LineIndex { line_starts, len: TextSize::of(text) }
    }

    pub fn line_col(&self, offset: TextSize) -> LineCol {
        let offset = offset.min(self.len);
        let line = self.line_starts.partition_point(|&start| start <= offset) - 1;
        LineCol { line: line as u32, col: u32::from(offset - self.line_starts[line]) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_columns_are_zero_based_bytes() {
        let index = LineIndex::new("ab\r\nçd\ne");
        let at = |o: u32| index.line_col(o.into());
        assert_eq!(at(0), LineCol { line: 0, col: 0 });
        assert_eq!(at(4), LineCol { line: 1, col: 0 });
        assert_eq!(at(7), LineCol { line: 1, col: 3 });
        assert_eq!(at(8), LineCol { line: 2, col: 0 });
        assert_eq!(at(99), LineCol { line: 2, col: 1 });
    }
}
