//! Emitting IR statements: fresh variables, the open block, and the span new statements get.

use rowan::TextRange;

use rustc_hash::FxHashMap;

use crate::ir::{self, Check, IrType, Op, Stmt, StmtKind, VarId, VarInfo};
use weft_core::types::Scalar;
use weft_core::{BinaryOp, Literal};

/// Builds one IR function. Op results get their types from `ir::op_result`, so a flattening
/// rule cannot give a variable a type its op does not produce; an ill-typed op is recorded as
/// a compiler bug (`bug`) and reported as E0499 when the function is finished.
#[derive(Default)]
pub(super) struct Builder {
    pub vars: Vec<VarInfo>,
    stmts: Vec<Stmt>,
    /// The span of the core expression being flattened: every statement emitted gets it.
    pub span: TextRange,
    pub bug: Option<String>,
    /// The integer constants emitted (`Op::Const`), by variable.
    constants: FxHashMap<VarId, i64>,
}

impl Builder {
    pub fn var(&mut self, name: &str, ty: IrType) -> VarId {
        self.vars.push(VarInfo { name: name.to_string(), ty });
        (self.vars.len() - 1) as VarId
    }

    pub fn ty(&self, var: VarId) -> IrType {
        self.vars[var as usize].ty
    }

    pub fn is_vector(&self, var: VarId) -> bool {
        self.ty(var).is_vector()
    }

    pub fn emit(&mut self, name: &str, op: Op) -> VarId {
        let operands: Vec<IrType> = op.operands().iter().map(|&v| self.ty(v)).collect();
        let ty = match ir::op_result(&op, &operands) {
            Ok(Some(ty)) => ty,
            Ok(None) => {
                self.record_bug(format!("{} has no result", op.name()));
                IrType::scalar(Scalar::Bool)
            }
            Err(e) => {
                self.record_bug(format!("{}: {e}", op.name()));
                IrType::scalar(Scalar::Bool)
            }
        };
        let dest = self.var(name, ty);
        self.push(StmtKind::Op { dest: Some(dest), op });
        dest
    }

    pub fn check(&mut self, check: Check) {
        self.push(StmtKind::Op { dest: None, op: Op::Check(check) });
    }

    pub fn push(&mut self, kind: StmtKind) {
        self.stmts.push(Stmt { kind, span: self.span });
    }

    pub fn record_bug(&mut self, message: String) {
        self.bug.get_or_insert(message);
    }

    pub fn take_stmts(&mut self) -> Vec<Stmt> {
        std::mem::take(&mut self.stmts)
    }

    pub fn set_stmts(&mut self, stmts: Vec<Stmt>) {
        self.stmts = stmts;
    }

    // --- shorthands -----------------------------------------------------------------------

    pub fn literal(&mut self, literal: Literal) -> VarId {
        let var = self.emit("c", Op::Const(literal));
        if let Literal::Int(value, _) = literal {
            self.constants.insert(var, value);
        }
        var
    }

    /// The value of `var` where it is an integer constant.
    pub fn constant(&self, var: VarId) -> Option<i64> {
        self.constants.get(&var).copied()
    }

    pub fn i32(&mut self, value: i64) -> VarId {
        self.literal(Literal::Int(value, Scalar::I32))
    }

    pub fn bool(&mut self, value: bool) -> VarId {
        self.literal(Literal::Bool(value))
    }

    /// The zero (or `False`) of a scalar type, for filling and for empty collections.
    pub fn zero(&mut self, elem: Scalar) -> VarId {
        match elem {
            Scalar::Bool => self.bool(false),
            Scalar::I32 | Scalar::I64 => self.literal(Literal::Int(0, elem)),
            Scalar::F32 | Scalar::F64 => self.literal(Literal::Float(0.0, elem)),
        }
    }

    pub fn binary(&mut self, op: BinaryOp, a: VarId, b: VarId) -> VarId {
        self.emit("t", Op::Binary(op, a, b))
    }

    pub fn add(&mut self, a: VarId, b: VarId) -> VarId {
        self.binary(BinaryOp::Add, a, b)
    }

    pub fn sub(&mut self, a: VarId, b: VarId) -> VarId {
        self.binary(BinaryOp::Sub, a, b)
    }

    pub fn mul(&mut self, a: VarId, b: VarId) -> VarId {
        self.binary(BinaryOp::Mul, a, b)
    }

    pub fn select(&mut self, cond: VarId, a: VarId, b: VarId) -> VarId {
        self.emit("t", Op::Select(cond, a, b))
    }

    pub fn gather(&mut self, src: VarId, index: VarId) -> VarId {
        let name = self.vars[src as usize].name.clone();
        self.emit(&name, Op::Gather { src, index })
    }

    /// `first[index]` where `from_first`, else `second[index]`; a gather where both are one.
    pub fn gather_either(&mut self, first: VarId, second: VarId, from_first: VarId, index: VarId) -> VarId {
        if first == second {
            return self.gather(first, index);
        }
        let name = self.vars[first as usize].name.clone();
        self.emit(&name, Op::GatherEither { first, second, from_first, index })
    }

    pub fn length(&mut self, vector: VarId) -> VarId {
        self.emit("n", Op::Length(vector))
    }

    pub fn replicate(&mut self, value: VarId, len: VarId) -> VarId {
        let name = self.vars[value as usize].name.clone();
        self.emit(&name, Op::Replicate { value, len })
    }

    /// The sum of `i32` sizes. Sizes of one value (a `replicate`, such as a list display's
    /// lengths under a nested context) sum to a product: scalar code, where a reduction would
    /// be a pass over them, and on a GPU a value to read back before a branch can use it.
    pub fn sum(&mut self, src: VarId) -> VarId {
        if let Some((value, count)) = self.replicated(src) {
            return self.mul(value, count);
        }
        self.emit("total", Op::Reduce { op: ir::ReduceOp::Add, src })
    }

    /// Start positions of segments laid out one after another: the exclusive sum of `lengths`.
    /// Segments of one length (a `replicate`, such as a list display's under a nested
    /// context) start at its multiples: element-wise, which fuses, where a scan would not.
    pub fn offsets_of(&mut self, lengths: VarId) -> VarId {
        if let Some((length, count)) = self.replicated(lengths) {
            let iota = self.emit("iota", Op::Iota { len: count });
            return self.emit("offsets", Op::Binary(BinaryOp::Mul, iota, length));
        }
        let zero = self.i32(0);
        self.emit("offsets", Op::Scan { op: ir::ReduceOp::Add, src: lengths, init: Some(zero) })
    }

    /// The segment ids (`Op::SegIds`) of the compact layout of `lengths`, which lies within
    /// collections of sizes `within`. Segments of one constant length `k` (a `replicate`,
    /// such as a list display's under a nested context) are index arithmetic, `i // k`,
    /// which fuses into the gathers that read it, where a layout would be a scan and a search
    /// over its starts. Its size, `k` times the count, is then exact on the host wherever the
    /// count is; a layout's total would be a bound, with the exact size on the device.
    pub fn seg_ids(&mut self, lengths: VarId, within: Vec<VarId>) -> VarId {
        match self.constant_lengths(lengths) {
            Some((length, positions)) => self.binary(BinaryOp::FloorDiv, positions, length),
            None => self.emit("segment", Op::SegIds { lengths, within }),
        }
    }

    /// The positions within segments (`Op::SegIota`) of the compact layout of `lengths`, as
    /// `seg_ids` gives their ids: `i % k` for segments of one constant length `k`.
    pub fn seg_iota(&mut self, lengths: VarId, within: Vec<VarId>) -> VarId {
        match self.constant_lengths(lengths) {
            Some((length, positions)) => self.binary(BinaryOp::Mod, positions, length),
            None => self.emit("within", Op::SegIota { lengths, within }),
        }
    }

    /// For `lengths` of one positive constant (a `replicate` of it), that length and the
    /// positions of the layout's elements (an `iota` over their total).
    fn constant_lengths(&mut self, lengths: VarId) -> Option<(VarId, VarId)> {
        let (length, count) = self.replicated(lengths)?;
        if self.constant(length)? <= 0 {
            return None;
        }
        let total = self.mul(length, count);
        Some((length, self.emit("position", Op::Iota { len: total })))
    }

    /// The value and count of a `replicate` emitted into the open block as `var`.
    pub fn replicated(&self, var: VarId) -> Option<(VarId, VarId)> {
        self.stmts.iter().rev().find_map(|stmt| match &stmt.kind {
            StmtKind::Op { dest: Some(d), op: Op::Replicate { value, len } } if *d == var => {
                Some((*value, *len))
            }
            _ => None,
        })
    }

    pub fn cast(&mut self, to: Scalar, v: VarId) -> VarId {
        if self.ty(v).elem == to {
            return v;
        }
        self.emit("t", Op::Cast(to, v))
    }
}
