//! `SegSortPerm` and `permute`'s check on the device: the radix passes of `wgsl::sort`.
//!
//! A sort orders the source positions of the compact layout of its segments. Each key, last
//! first, takes one pass per 4-bit digit in which its keys differ; when there is more than one
//! segment, the segment ids travel beside the positions and are sorted by last, as the most
//! significant key, so that every segment ends up in its own place of the compact layout,
//! sorted. What is read back: the layout's total (which `compact` reads once per descriptor
//! anyway) and, for each key of 32 or 64 bits, the bits in which its keys differ.

use rowan::TextRange;

use weft_core::types::Scalar;
use weft_exec::cpu::ScalarValue;
use weft_exec::host_flow::{RunResult, internal_at};
use weft_flat::ir::{ReduceOp, Stmt, StmtKind};
use weft_flat::wgsl::FIRST_SCALAR;
use weft_flat::wgsl::prims::BLOCK;
use weft_flat::wgsl::sort::{self, DIGIT_BITS, SortKey};

use super::GpuMachine;
use super::value::{DeviceValue, DeviceVec};

/// The positions being sorted, with their segment ids when there is more than one segment.
struct Sorting {
    order: DeviceVec,
    segs: Option<DeviceVec>,
}

impl GpuMachine<'_, '_> {
    /// For each segment, the positions of its elements in stable order of `keys`, in the
    /// compact layout.
    pub(super) fn sort_positions(
        &mut self,
        keys: &[DeviceVec],
        offsets: &DeviceVec,
        lengths: &DeviceVec,
        span: TextRange,
    ) -> RunResult<DeviceVec> {
        let (starts, total) = self.compact(lengths, span)?;
        let order = self.alloc(Scalar::I32, total, span)?;
        if total == 0 {
            return Ok(order);
        }
        let (ids, _) = self.segment_ids(lengths, &starts, total, span)?;
        let bindings = [ids.binding(), offsets.binding(), starts.binding(), order.binding()];
        self.launch(&sort::source_positions(), total, &[], &bindings, span)?;
        let mut sorting = Sorting { order, segs: (lengths.len > 1).then_some(ids) };
        for key in keys.iter().rev() {
            let varying = self.varying_bits(key, span)?;
            sorting = self.sort_by(sorting, SortKey::Data(key.elem), Some(key), varying, span)?;
        }
        if sorting.segs.is_some() {
            let bits = u32::BITS - (lengths.len as u32 - 1).leading_zeros();
            let varying = u64::MAX >> (64 - bits);
            sorting = self.sort_by(sorting, SortKey::Segment, None, varying, span)?;
        }
        Ok(sorting.order)
    }

    /// The bits in which the key patterns differ: an OR and an AND of all of them, read back
    /// together. A 32-bit key in a small range (or floats of one sign and scale) varies in a
    /// few low digits, and the passes of the others can go.
    fn varying_bits(&mut self, key: &DeviceVec, span: TextRange) -> RunResult<u64> {
        let bits = SortKey::Data(key.elem).bits();
        if bits < 32 || key.len == 0 {
            return Ok((1 << bits) - 1);
        }
        let wide = if bits == 64 { Scalar::I64 } else { Scalar::I32 };
        let patterns = self.alloc(wide, key.len, span)?;
        let bindings = [key.binding(), patterns.binding()];
        self.launch(&sort::key_patterns(key.elem), key.len, &[], &bindings, span)?;
        let any = self.reduce(ReduceOp::Or, &patterns, span)?;
        let all = self.reduce(ReduceOp::And, &patterns, span)?;
        let both = self.concat(&[DeviceValue::Device(any), DeviceValue::Device(all)], span)?;
        match self.host_value(&DeviceValue::Device(both), span)? {
            weft_exec::cpu::FlatValue::Vector(b) => match (b.get(0), b.get(1)) {
                (Some(ScalarValue::I32(any)), Some(ScalarValue::I32(all))) => {
                    Ok(u64::from((any ^ all) as u32))
                }
                (Some(ScalarValue::I64(any)), Some(ScalarValue::I64(all))) => Ok((any ^ all) as u64),
                _ => Err(internal_at("key patterns that are not two integers", span)),
            },
            _ => Err(internal_at("key patterns that are not a vector", span)),
        }
    }

    /// The radix passes by the digits of one key that have `varying` bits: a pass by a digit
    /// every key shares would leave the order as it is.
    fn sort_by(
        &mut self,
        mut sorting: Sorting,
        key: SortKey,
        data: Option<&DeviceVec>,
        varying: u64,
        span: TextRange,
    ) -> RunResult<Sorting> {
        for shift in (0..u64::BITS).step_by(DIGIT_BITS as usize) {
            if (varying >> shift) & ((1 << DIGIT_BITS) - 1) != 0 {
                sorting = self.radix_pass(&sorting, key, data, shift, span)?;
            }
        }
        Ok(sorting)
    }

    /// One stable pass by the digit of `key` at `shift`.
    fn radix_pass(
        &mut self,
        sorting: &Sorting,
        key: SortKey,
        data: Option<&DeviceVec>,
        shift: u32,
        span: TextRange,
    ) -> RunResult<Sorting> {
        let n = sorting.order.len;
        let blocks = n.div_ceil(BLOCK as usize);
        let carry = sorting.segs.is_some();
        let params = [0, 0, shift, blocks as u32];
        let hist = self.alloc(Scalar::I32, blocks << DIGIT_BITS, span)?;
        let segs = sorting.segs.as_ref().filter(|_| key == SortKey::Segment);
        let mut bindings = vec![sorting.order.binding()];
        bindings.extend(segs.map(DeviceVec::binding));
        bindings.extend(data.map(DeviceVec::binding));
        bindings.push(hist.binding());
        self.launch_blocks(&sort::radix_count(key), n, None, &params, &bindings, span)?;
        let mut inputs = vec![sorting.order.binding()];
        inputs.extend(sorting.segs.as_ref().map(DeviceVec::binding));
        inputs.extend(data.map(DeviceVec::binding));
        let scanned = self.scan_inclusive(ReduceOp::Add, &hist, None, span)?;
        let order = self.alloc(Scalar::I32, n, span)?;
        let mut bindings = inputs;
        bindings.extend([hist.binding(), scanned.binding(), order.binding()]);
        let segs = match &sorting.segs {
            Some(_) => {
                let segs = self.alloc(Scalar::I32, n, span)?;
                bindings.push(segs.binding());
                Some(segs)
            }
            None => None,
        };
        self.launch_blocks(&sort::radix_scatter(key, carry), n, None, &params, &bindings, span)?;
        Ok(Sorting { order, segs })
    }

    /// `permute`'s check (`stmt`, over `args`), by marking each target: a target out of
    /// range, or marked twice, fails the launch.
    pub(super) fn permutation_check(&mut self, stmt: &Stmt, args: &[DeviceValue]) -> RunResult<()> {
        let span = stmt.span;
        let [index, offsets, lengths] = &self.devices(args, span)?[..] else {
            return Err(internal_at("permutation check operands", span));
        };
        let (starts, total) = self.compact(lengths, span)?;
        if total == 0 {
            return Ok(());
        }
        let (ids, _) = self.segment_ids(lengths, &starts, total, span)?;
        let seen = self.fill(&DeviceValue::Host(ScalarValue::I32(0)), total, span)?;
        let bindings = [
            ids.binding(),
            offsets.binding(),
            lengths.binding(),
            starts.binding(),
            index.binding(),
            seen.binding(),
        ];
        let bindings = self.with_record(bindings.to_vec());
        // The sequence number comes after the read-backs above, which would otherwise count
        // this launch as checked before it ran.
        let StmtKind::Op { op, .. } = &stmt.kind else {
            return Err(internal_at("a permutation check that is not an op", span));
        };
        let operands = op.operands().into_iter().zip(args.iter().cloned()).collect();
        let mut params = [0u32; FIRST_SCALAR];
        params[1] = self.expect_failure(stmt.clone(), 0, operands)?;
        self.launch(&sort::permutation_marks(), total, &params, &bindings, span)
    }
}
