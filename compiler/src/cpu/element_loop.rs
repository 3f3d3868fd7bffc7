//! Element loops (`ir::StmtKind::ElementLoop`): every element runs its own scalar loop, the
//! elements in parallel with rayon. Each op of the loop's blocks runs on scalars through the
//! same kernels as the vector ops, so results and run-time errors are the same.

use rayon::prelude::*;

use crate::ir::{Block, StmtKind, VarId};

use super::kernels;
use super::value::{Buffer, ScalarValue, Value};
use super::{R, at, internal_at};

/// One element loop statement, ready to run.
pub(super) struct Loop<'p> {
    pub params: &'p [VarId],
    pub state: &'p [VarId],
    pub cond: &'p Block,
    pub body: &'p Block,
    /// The number of variables of the enclosing function: the size of an element's frame.
    pub vars: usize,
}

type Frame = Vec<Option<ScalarValue>>;

impl Loop<'_> {
    /// Runs `n` elements: their final states as vectors, and the iterations run in all. The
    /// first failing element, in element order, gives the error.
    pub fn run(&self, n: usize, inputs: &[Value], init: &[Value]) -> R<(Vec<Value>, u64)> {
        let outcomes: Vec<R<(Vec<ScalarValue>, u64)>> = (0..n)
            .into_par_iter()
            .map_init(|| vec![None; self.vars], |frame, i| self.element(frame, i, inputs, init))
            .collect();
        let mut columns: Vec<Vec<ScalarValue>> = vec![Vec::with_capacity(n); self.state.len()];
        let mut iterations = 0;
        for outcome in outcomes {
            let (state, k) = outcome?;
            iterations += k;
            for (column, value) in columns.iter_mut().zip(state) {
                column.push(value);
            }
        }
        let types = init.iter().map(Value::ty);
        let results =
            columns.iter().zip(types).map(|(c, ty)| Value::vector(Buffer::from_scalars(ty, c))).collect();
        Ok((results, iterations))
    }

    fn element(
        &self,
        frame: &mut Frame,
        i: usize,
        inputs: &[Value],
        init: &[Value],
    ) -> R<(Vec<ScalarValue>, u64)> {
        let entry = |v: &Value| match v {
            Value::Scalar(s) => Ok(*s),
            Value::Vector(b) => {
                b.get(i).ok_or_else(|| internal_at("an element loop input is too short", span_of(self.cond)))
            }
        };
        for (&p, input) in self.params.iter().zip(inputs) {
            frame[p as usize] = Some(entry(input)?);
        }
        let mut state = init.iter().map(entry).collect::<R<Vec<_>>>()?;
        let mut iterations = 0;
        loop {
            for (&s, &value) in self.state.iter().zip(&state) {
                frame[s as usize] = Some(value);
            }
            match self.block(frame, self.cond)?.as_slice() {
                [ScalarValue::Bool(true)] => {}
                [ScalarValue::Bool(false)] => return Ok((state, iterations)),
                _ => {
                    return Err(internal_at(
                        "an element loop condition that is not a bool",
                        span_of(self.cond),
                    ));
                }
            }
            state = self.block(frame, self.body)?;
            iterations += 1;
        }
    }

    fn block(&self, frame: &mut Frame, block: &Block) -> R<Vec<ScalarValue>> {
        let read = |frame: &Frame, v: VarId| {
            frame[v as usize]
                .ok_or_else(|| internal_at(format!("%{v} is read before it is set"), span_of(block)))
        };
        for stmt in &block.stmts {
            match &stmt.kind {
                StmtKind::Op { dest, op } => {
                    let args = op
                        .operands()
                        .iter()
                        .map(|&v| read(frame, v).map(Value::Scalar))
                        .collect::<R<Vec<_>>>()?;
                    match (dest, kernels::run_op(op, &args).map_err(|e| at(e, stmt.span))?) {
                        (Some(d), Some(Value::Scalar(s))) => frame[*d as usize] = Some(s),
                        (None, None) => {}
                        _ => {
                            return Err(internal_at(
                                format!("{} inside an element loop", op.name()),
                                stmt.span,
                            ));
                        }
                    }
                }
                StmtKind::If { cond, then, otherwise, dests } => {
                    let taken = match read(frame, *cond)? {
                        ScalarValue::Bool(c) => c,
                        _ => return Err(internal_at("an `if` condition that is not a bool", stmt.span)),
                    };
                    let results = self.block(frame, if taken { then } else { otherwise })?;
                    for (&d, value) in dests.iter().zip(results) {
                        frame[d as usize] = Some(value);
                    }
                }
                _ => return Err(internal_at("a host statement inside an element loop", stmt.span)),
            }
        }
        block.results.iter().map(|&r| read(frame, r)).collect()
    }
}

fn span_of(block: &Block) -> rowan::TextRange {
    block.stmts.first().map(|s| s.span).unwrap_or_default()
}
