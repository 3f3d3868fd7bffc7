//! Element loops (`ir::StmtKind::ElementLoop`): every element runs its own scalar loop, the
//! elements in parallel with rayon. Each op of the loop's blocks runs on scalars through the
//! same kernels as the vector ops, so results and run-time errors are the same.

use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;
use rowan::TextRange;

use weft_core::BinaryOp;
use weft_flat::ir::{Block, Check, Op, StmtKind, VarId};

use super::kernels;
use super::value::{Buffer, FlatValue, ScalarValue};
use super::{RunResult, at, internal_at};
use crate::Interrupt;

/// One element loop statement, ready to run.
pub(super) struct Loop<'p> {
    pub params: &'p [VarId],
    pub state: &'p [VarId],
    /// The whole vectors the blocks index (`gather` with a scalar index), by variable.
    pub shared: &'p [(VarId, FlatValue)],
    pub cond: &'p Block,
    pub body: &'p Block,
    /// The number of variables of the enclosing function: the size of an element's frame.
    pub vars: usize,
    /// Polled at each iteration of each element.
    pub interrupt: &'p Interrupt,
}

type Frame = Vec<Option<ScalarValue>>;

impl Loop<'_> {
    /// Runs `n` elements: their final states as vectors, and the iterations run in all. The
    /// first failing element, in element order, gives the error.
    pub fn run(
        &self,
        n: usize,
        inputs: &[FlatValue],
        init: &[FlatValue],
    ) -> RunResult<(Vec<FlatValue>, u64)> {
        // The first failing element so far: later elements stop, so that one that would never
        // end cannot hang a program the interpreter stops with an earlier element's error.
        let first_failure = AtomicUsize::new(usize::MAX);
        let outcomes: Vec<RunResult<(Vec<ScalarValue>, u64)>> = (0..n)
            .into_par_iter()
            .map_init(
                || vec![None; self.vars],
                |frame, i| {
                    let outcome = self.element(frame, i, inputs, init, &first_failure);
                    if outcome.is_err() {
                        first_failure.fetch_min(i, Ordering::Relaxed);
                    }
                    outcome
                },
            )
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
        let types = init.iter().map(FlatValue::ty);
        let results =
            columns.iter().zip(types).map(|(c, ty)| FlatValue::vector(Buffer::from_scalars(ty, c))).collect();
        Ok((results, iterations))
    }

    fn element(
        &self,
        frame: &mut Frame,
        i: usize,
        inputs: &[FlatValue],
        init: &[FlatValue],
        first_failure: &AtomicUsize,
    ) -> RunResult<(Vec<ScalarValue>, u64)> {
        let span = span_of(self.cond);
        let entry = |v: &FlatValue| match v {
            FlatValue::Scalar(s) => Ok(*s),
            FlatValue::Vector(b) => {
                b.get(i).ok_or_else(|| internal_at("an element loop input is too short", span))
            }
            FlatValue::Progression(p) if i < p.len => Ok(ScalarValue::I32(p.get(i))),
            FlatValue::Progression(_) => Err(internal_at("an element loop input is too short", span)),
        };
        for (&p, input) in self.params.iter().zip(inputs) {
            set(frame, p, entry(input)?, span)?;
        }
        let mut state = init.iter().map(entry).collect::<RunResult<Vec<_>>>()?;
        let mut iterations = 0;
        loop {
            self.interrupt.check(span)?;
            if first_failure.load(Ordering::Relaxed) < i {
                // Never used: an earlier element's error stops the program.
                return Ok((state, iterations));
            }
            for (&s, &value) in self.state.iter().zip(&state) {
                set(frame, s, value, span)?;
            }
            match self.block(frame, self.cond)?.as_slice() {
                [ScalarValue::Bool(true)] => {}
                [ScalarValue::Bool(false)] => return Ok((state, iterations)),
                _ => return Err(internal_at("an element loop condition that is not a bool", span)),
            }
            state = self.block(frame, self.body)?;
            iterations += 1;
        }
    }

    fn shared_vector(&self, v: VarId) -> Option<&FlatValue> {
        self.shared.iter().find(|(s, _)| *s == v).map(|(_, value)| value)
    }

    fn block(&self, frame: &mut Frame, block: &Block) -> RunResult<Vec<ScalarValue>> {
        let read = |frame: &Frame, v: VarId| {
            frame
                .get(v as usize)
                .copied()
                .flatten()
                .ok_or_else(|| internal_at(format!("%{v} is read before it is set"), span_of(block)))
        };
        for stmt in &block.stmts {
            match &stmt.kind {
                StmtKind::Op { dest: Some(d), op: Op::Gather { src, index } }
                    if let Some(whole) = self.shared_vector(*src) =>
                {
                    let index = FlatValue::Scalar(read(frame, *index)?);
                    match kernels::gather(whole, &index).map_err(|e| at(e, stmt.span))? {
                        FlatValue::Scalar(s) => set(frame, *d, s, stmt.span)?,
                        FlatValue::Vector(_) | FlatValue::Progression(_) => {
                            return Err(internal_at("a gather of many inside an element loop", stmt.span));
                        }
                    }
                }
                StmtKind::Op { dest: Some(d), op } if let Some(value) = fast_op(op, frame) => {
                    set(frame, *d, value, stmt.span)?;
                }
                StmtKind::Op { dest: None, op: Op::Check(check) } if passes_fast(check, frame) => {}
                StmtKind::Op { dest, op } => {
                    let args = op
                        .operands()
                        .iter()
                        .map(|&v| read(frame, v).map(FlatValue::Scalar))
                        .collect::<RunResult<Vec<_>>>()?;
                    match (dest, kernels::run_op(op, &args).map_err(|e| at(e, stmt.span))?) {
                        (Some(d), Some(FlatValue::Scalar(s))) => set(frame, *d, s, stmt.span)?,
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
                        set(frame, d, value, stmt.span)?;
                    }
                }
                _ => return Err(internal_at("a host statement inside an element loop", stmt.span)),
            }
        }
        block.results.iter().map(|&r| read(frame, r)).collect()
    }
}

fn set(frame: &mut Frame, v: VarId, value: ScalarValue, span: TextRange) -> RunResult<()> {
    match frame.get_mut(v as usize) {
        Some(slot) => {
            *slot = Some(value);
            Ok(())
        }
        None => Err(internal_at(format!("%{v} does not exist"), span)),
    }
}

fn span_of(block: &Block) -> TextRange {
    block.stmts.first().map(|s| s.span).unwrap_or_default()
}

/// The commonest ops of element loops (arithmetic that cannot fail, comparisons, `select`),
/// straight on scalars: the vector kernels would allocate for every one. `None` for the
/// others, which go through `kernels::run_op`. Integer arithmetic wraps and float arithmetic
/// is IEEE, as in the kernels.
fn fast_op(op: &Op, frame: &Frame) -> Option<ScalarValue> {
    let get = |v: VarId| frame.get(v as usize).copied().flatten();
    match op {
        Op::Binary(op, a, b) => fast_binary(*op, get(*a)?, get(*b)?),
        Op::Const(literal) => match kernels::literal(literal) {
            Ok(FlatValue::Scalar(s)) => Some(s),
            _ => None,
        },
        Op::Select(c, a, b) => match get(*c)? {
            ScalarValue::Bool(true) => get(*a),
            ScalarValue::Bool(false) => get(*b),
            _ => None,
        },
        _ => None,
    }
}

/// Whether a bounds check visibly passes; a failing one goes through the kernel, which words
/// the error.
fn passes_fast(check: &Check, frame: &Frame) -> bool {
    let get = |v: VarId| frame.get(v as usize).copied().flatten();
    match check {
        Check::IndexInRange { index, len, .. } => match (get(*index), get(*len)) {
            (Some(ScalarValue::I32(i)), Some(ScalarValue::I32(n))) => 0 <= i && i < n,
            _ => false,
        },
        _ => false,
    }
}

fn fast_binary(op: BinaryOp, a: ScalarValue, b: ScalarValue) -> Option<ScalarValue> {
    use BinaryOp::*;
    use ScalarValue as S;
    macro_rules! compare {
        ($x:expr, $y:expr) => {
            match op {
                Eq => Some(S::Bool($x == $y)),
                Ne => Some(S::Bool($x != $y)),
                Lt => Some(S::Bool($x < $y)),
                Le => Some(S::Bool($x <= $y)),
                Gt => Some(S::Bool($x > $y)),
                Ge => Some(S::Bool($x >= $y)),
                _ => None,
            }
        };
    }
    macro_rules! ints {
        ($wrap:path, $x:expr, $y:expr) => {
            match op {
                Add => Some($wrap($x.wrapping_add($y))),
                Sub => Some($wrap($x.wrapping_sub($y))),
                Mul => Some($wrap($x.wrapping_mul($y))),
                _ => compare!($x, $y),
            }
        };
    }
    macro_rules! floats {
        ($wrap:path, $x:expr, $y:expr) => {
            match op {
                Add => Some($wrap($x + $y)),
                Sub => Some($wrap($x - $y)),
                Mul => Some($wrap($x * $y)),
                Div => Some($wrap($x / $y)),
                _ => compare!($x, $y),
            }
        };
    }
    match (a, b) {
        (S::I32(x), S::I32(y)) => ints!(S::I32, x, y),
        (S::I64(x), S::I64(y)) => ints!(S::I64, x, y),
        (S::F32(x), S::F32(y)) => floats!(S::F32, x, y),
        (S::F64(x), S::F64(y)) => floats!(S::F64, x, y),
        _ => None,
    }
}
