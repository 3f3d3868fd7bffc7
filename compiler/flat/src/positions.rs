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

/// `f` with every span's offsets replaced by their ranks, and the ranks to map them back.
pub fn ranked(f: &Function) -> (Function, Ranks) {
    let mut ranked = f.clone();
    let mut offsets = vec![TextSize::from(0)];
    ranked.body.for_each_stmt_mut(&mut |stmt| offsets.extend([stmt.span.start(), stmt.span.end()]));
    offsets.sort_unstable();
    offsets.dedup();
    let rank = |offset: TextSize| {
        let at = offsets.binary_search(&offset).expect("every offset is in the table");
        TextSize::from(at as u32)
    };
    ranked.body.for_each_stmt_mut(&mut |stmt| {
        stmt.span = TextRange::new(rank(stmt.span.start()), rank(stmt.span.end()));
    });
    (ranked, Ranks { offsets })
}

impl Ranks {
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
        let (here, ranks) = ranked(&function(&[(10, 20), (12, 15), (30, 30)]));
        let (there, _) = ranked(&function(&[(110, 120), (112, 115), (130, 130)]));
        assert_eq!(here, there);
        let mut back = here.clone();
        ranks.restore(&mut back);
        assert_eq!(back, function(&[(10, 20), (12, 15), (30, 30)]));
    }

    #[test]
    fn covering_ranked_spans_covers_the_offsets() {
        let (f, ranks) = ranked(&function(&[(10, 20), (15, 40)]));
        let cover = f.body.stmts[0].span.cover(f.body.stmts[1].span);
        assert_eq!(ranks.range(cover), TextRange::new(10.into(), 40.into()));
        assert_eq!(ranks.range(TextRange::default()), TextRange::default());
    }
}
