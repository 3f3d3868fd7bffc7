//! Spans as ranks: a function whose text moved in the file, but did not change, is the same
//! value it was.
//!
//! The IR's spans are byte offsets in the file, so an edit anywhere before a function changes
//! every span in it, and a cache keyed by the function's IR would miss. `ranked` replaces each
//! offset by its rank among the function's own offsets, and `Ranks::range` maps a ranked span
//! back. Ranks keep the offsets' order, so a pass that only copies spans, compares them and
//! covers them (`TextRange::cover`) gives on the ranked function what it gives on the original,
//! with ranks for offsets: fusion is such a pass.

use rowan::{TextRange, TextSize};

use crate::ir::Function;

/// The offsets of a function's spans, by rank. Offset 0 is always rank 0, so a default
/// (empty, at 0) span maps to itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ranks {
    offsets: Vec<TextSize>,
}

/// `f` with every span's offsets replaced by their ranks (`Ranks::of(f)`'s).
pub fn ranked(f: &Function) -> Function {
    let offsets = Ranks::of(f).offsets;
    let rank = |offset: TextSize| {
        let at = offsets.binary_search(&offset).expect("every offset is in the table");
        TextSize::from(at as u32)
    };
    let mut ranked = f.clone();
    ranked.body.for_each_stmt_mut(&mut |stmt| {
        stmt.span = TextRange::new(rank(stmt.span.start()), rank(stmt.span.end()));
    });
    ranked
}

impl Ranks {
    /// The offsets of `f`'s spans, by rank.
    pub fn of(f: &Function) -> Ranks {
        let mut spans = Vec::new();
        f.body.spans(&mut spans);
        let mut offsets = vec![TextSize::from(0)];
        offsets.extend(spans.iter().flat_map(|span| [span.start(), span.end()]));
        offsets.sort_unstable();
        offsets.dedup();
        Ranks { offsets }
    }

    /// The span a ranked span stands for.
    pub fn range(&self, ranked: TextRange) -> TextRange {
        TextRange::new(self.offset(ranked.start()), self.offset(ranked.end()))
    }

    /// Every span of `f` (ranked) back in the file.
    pub fn restore(&self, f: &mut Function) {
        f.body.for_each_stmt_mut(&mut |stmt| stmt.span = self.range(stmt.span));
    }

    fn offset(&self, rank: TextSize) -> TextSize {
        // A pass that made up a span would have no offset to map back to: the function's end is
        // the least wrong place for it.
        debug_assert!(usize::from(rank) < self.offsets.len(), "rank {rank:?} was never an offset");
        let last = self.offsets.len() - 1;
        self.offsets[usize::from(rank).min(last)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Block, IrType, Op, Stmt, StmtKind, VarInfo};
    use weft_core::Literal;
    use weft_core::types::Scalar;

    fn function(spans: &[(u32, u32)]) -> Function {
        let stmts = spans
            .iter()
            .map(|&(start, end)| Stmt {
                kind: StmtKind::Op { dest: None, op: Op::Const(Literal::Bool(true)) },
                span: TextRange::new(start.into(), end.into()),
            })
            .collect();
        let vars = vec![VarInfo { name: "x".into(), ty: IrType::scalar(Scalar::Bool) }];
        Function { name: "f".into(), params: vec![], vars, body: Block { stmts, results: vec![] } }
    }

    #[test]
    fn a_function_that_moved_ranks_to_the_same_value() {
        let original = function(&[(10, 20), (12, 15), (30, 30)]);
        let here = ranked(&original);
        assert_eq!(here, ranked(&function(&[(110, 120), (112, 115), (130, 130)])));
        let mut back = here.clone();
        Ranks::of(&original).restore(&mut back);
        assert_eq!(back, original);
    }

    #[test]
    fn covering_ranked_spans_covers_the_offsets() {
        let original = function(&[(10, 20), (15, 40)]);
        let (f, ranks) = (ranked(&original), Ranks::of(&original));
        let cover = f.body.stmts[0].span.cover(f.body.stmts[1].span);
        assert_eq!(ranks.range(cover), TextRange::new(10.into(), 40.into()));
        assert_eq!(ranks.range(TextRange::default()), TextRange::default());
    }
}
