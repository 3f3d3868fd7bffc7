//! Every kernel the generators can produce parses and validates with naga.

use super::prims;
use super::*;
use crate::ir::{Check, MathFn, ReduceOp};
use weft_core::{BinaryOp, Literal, UnaryOp};

const OPS: [ReduceOp; 7] =
    [ReduceOp::Add, ReduceOp::Mul, ReduceOp::Min, ReduceOp::Max, ReduceOp::And, ReduceOp::Or, ReduceOp::Xor];

fn valid(kernel: &Kernel) {
    if let Err(e) = kernel.validate() {
        panic!("{e}\n{}", kernel.source);
    }
}

fn supports(op: ReduceOp, elem: Scalar) -> bool {
    match op {
        ReduceOp::Add | ReduceOp::Mul => !matches!(elem, Scalar::Bool),
        ReduceOp::And | ReduceOp::Or | ReduceOp::Xor => {
            matches!(elem, Scalar::Bool | Scalar::I32 | Scalar::I64)
        }
        ReduceOp::Min | ReduceOp::Max => true,
    }
}

#[test]
fn every_sort_kernel_validates() {
    use super::sort::{self, SortKey};
    let keys = Scalar::ALL.map(SortKey::Data);
    for key in keys.into_iter().chain([SortKey::Segment]) {
        valid(&sort::radix_count(key));
        for carry_segments in [false, true] {
            valid(&sort::radix_scatter(key, carry_segments));
        }
    }
    valid(&sort::source_positions());
    for t in Scalar::ALL {
        valid(&sort::key_patterns(t));
    }
    valid(&sort::permutation_marks());
}

#[test]
fn every_primitive_validates_for_every_type() {
    for elem in Scalar::ALL {
        for op in OPS.into_iter().filter(|&op| supports(op, elem)) {
            valid(&prims::reduce_blocks(op, elem));
            for segmented in [false, true] {
                valid(&prims::scan_blocks(op, elem, segmented));
                valid(&prims::scan_add_carry(op, elem, segmented));
                valid(&prims::scan_shift(op, elem, segmented, Operand::DeviceScalar(elem)));
            }
            valid(&prims::scan_blocks_exclusive(op, elem, Operand::DeviceScalar(elem)));
            valid(&prims::seg_scan_blocks_gathered(op, elem));
            if !matches!(elem, Scalar::I64 | Scalar::F64) {
                valid(&prims::scan_blocks_exclusive(op, elem, Operand::Param(elem, 0)));
            }
        }
        valid(&prims::segment_gather(elem));
        valid(&prims::segment_last(elem, &format!("{}(0)", scalar::storage_type(elem))));
        for max in [false, true] {
            valid(&prims::segment_arg_extreme(elem, max));
        }
        valid(&prims::pack_scatter(elem));
        for distinct in [false, true] {
            valid(&prims::scatter_write(Scalar::I32, Operand::Elements(elem), distinct));
        }
        valid(&prims::fill(Operand::DeviceScalar(elem)));
        valid(&prims::interleave(&[Operand::Elements(elem), Operand::DeviceScalar(elem)]));
        valid(&prims::concat_parts(elem, 3));
    }
    for kernel in [
        prims::segment_search(),
        prims::last_end(),
        prims::layout_starts(Operand::Param(Scalar::I32, 0)),
        prims::iota(),
        prims::copy(),
        prims::loop_counter(),
        prims::scatter_winners(Scalar::I64),
        prims::fill(Operand::Param(Scalar::F32, 0)),
    ] {
        valid(&kernel);
    }
}

#[test]
fn every_element_wise_op_validates() {
    use Scalar::*;
    let mut ops: Vec<(Op, Vec<Scalar>, Option<Scalar>)> = Vec::new();
    for ty in [I32, I64, F32, F64] {
        let int = matches!(ty, I32 | I64);
        let cmp = [BinaryOp::Eq, BinaryOp::Ne, BinaryOp::Lt, BinaryOp::Le, BinaryOp::Gt, BinaryOp::Ge];
        for b in
            [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::FloorDiv, BinaryOp::Mod, BinaryOp::Pow]
        {
            ops.push((Op::Binary(b, 0, 1), vec![ty, ty], Some(ty)));
        }
        let float = if ty == I64 || ty == F64 { F64 } else { F32 };
        ops.push((Op::Binary(BinaryOp::Div, 0, 1), vec![ty, ty], Some(if int { float } else { ty })));
        for b in cmp {
            ops.push((Op::Binary(b, 0, 1), vec![ty, ty], Some(Bool)));
        }
        if int {
            for b in [BinaryOp::BitAnd, BinaryOp::BitOr, BinaryOp::BitXor, BinaryOp::Shl, BinaryOp::Shr] {
                ops.push((Op::Binary(b, 0, 1), vec![ty, ty], Some(ty)));
            }
            ops.push((Op::Unary(UnaryOp::Invert, 0), vec![ty], Some(ty)));
        }
        ops.push((Op::Unary(UnaryOp::Neg, 0), vec![ty], Some(ty)));
        for to in Scalar::ALL {
            ops.push((Op::Cast(to, 0), vec![ty], Some(to)));
        }
        let mut fns = vec![MathFn::Abs, MathFn::Min, MathFn::Max, MathFn::Pow];
        if !int {
            fns.extend([MathFn::Sqrt, MathFn::Exp, MathFn::Log, MathFn::Sin, MathFn::Cos, MathFn::Tan]);
            fns.extend([MathFn::Floor, MathFn::Ceil, MathFn::Atan2]);
        }
        if ty == F32 {
            fns.push(MathFn::Erf);
        }
        for f in fns {
            let args = vec![ty; f.arity()];
            ops.push((Op::Math(f, (0..f.arity() as u32).collect()), args, Some(ty)));
        }
        ops.push((Op::Select(0, 1, 2), vec![Bool, ty, ty], Some(ty)));
    }
    ops.push((Op::Unary(UnaryOp::Not, 0), vec![Bool], Some(Bool)));
    for b in [BinaryOp::Lt, BinaryOp::Le, BinaryOp::Gt, BinaryOp::Ge, BinaryOp::Eq] {
        ops.push((Op::Binary(b, 0, 1), vec![Bool, Bool], Some(Bool)));
    }
    ops.push((Op::Binary(BinaryOp::BitXor, 0, 1), vec![Bool, Bool], Some(Bool)));
    ops.push((Op::RandomF32 { seed: 0, index: 1 }, vec![I32, I32], Some(F32)));
    ops.push((Op::RandomI32 { lo: 0, hi: 1, seed: 2, index: 3 }, vec![I32; 4], Some(I32)));
    let index = Check::IndexInRange { index: 0, len: 1, written: 2, what: String::new() };
    ops.push((Op::Check(index), vec![I64, I32, I64], None));
    ops.push((Op::Check(Check::Assert { cond: 0, message: None }), vec![Bool], None));
    for (op, types, result) in ops {
        // Every operand kind, one after another.
        for kind in 0..3 {
            let operands: Vec<Operand> = types
                .iter()
                .enumerate()
                .map(|(k, &t)| match (kind + k) % 3 {
                    0 => Operand::Elements(t),
                    1 => Operand::DeviceScalar(t),
                    _ if matches!(t, I64 | F64) => Operand::DeviceScalar(t),
                    _ => Operand::Param(t, k),
                })
                .collect();
            let kernel = map_kernel(&op, &operands, result).expect("element-wise");
            valid(&kernel);
        }
    }
    // Gathers read their sources whole, for every element type.
    for ty in Scalar::ALL {
        let gather = map_kernel(
            &Op::Gather { src: 0, index: 1 },
            &[Operand::Whole(ty), Operand::Elements(I32)],
            Some(ty),
        );
        valid(&gather.expect("a gather"));
        let either = Op::GatherEither { first: 0, second: 1, from_first: 2, index: 3 };
        let operands =
            [Operand::Whole(ty), Operand::Whole(ty), Operand::Elements(Bool), Operand::Elements(I32)];
        valid(&map_kernel(&either, &operands, Some(ty)).expect("a gather from either source"));
    }
}

#[test]
fn literals_are_exact() {
    assert_eq!(scalar::literal(&Literal::Int(i32::MIN as i64, I32)).unwrap().0, "(-2147483647i - 1i)");
    assert_eq!(scalar::f32_literal(0.1), "0.1f");
    assert_eq!(scalar::f32_literal(f32::INFINITY), format!("bitcast<f32>({}u)", f32::INFINITY.to_bits()));
    assert!(scalar::literal(&Literal::Float(f64::NAN, Scalar::F64)).is_none());
}

use Scalar::I32;
