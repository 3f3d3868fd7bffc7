//! Values a session keeps between runs, where the executor that made them keeps them.

use weft_core::types::Type;
use weft_exec::{cpu, interp};
use weft_gpu::DeviceValue;

/// A value of a Weft type: the interpreter's nested value, the CPU executor's flat variables,
/// or the GPU executor's variables, whose arrays stay on the device between runs (passing one
/// to the next GPU call copies nothing).
#[derive(Debug, Clone)]
pub struct SessionValue {
    pub(crate) ty: Type,
    pub(crate) repr: Repr,
}

#[derive(Debug, Clone)]
pub(crate) enum Repr {
    Nested(interp::NestedValue),
    /// Laid out as `ir::layout(ty, false)` says.
    Flat(Vec<cpu::FlatValue>),
    /// The same layout, on the device (scalars on the host or the device).
    Device(Vec<DeviceValue>),
}

impl SessionValue {
    /// A value made on the host, as the interpreter represents it.
    pub fn nested(ty: Type, value: interp::NestedValue) -> SessionValue {
        SessionValue { ty, repr: Repr::Nested(value) }
    }

    pub fn ty(&self) -> &Type {
        &self.ty
    }

    /// The bytes its data takes where it lives.
    pub fn bytes(&self) -> u64 {
        match &self.repr {
            Repr::Nested(nested) => nested_bytes(nested),
            Repr::Flat(vars) => vars
                .iter()
                .map(|v| match v {
                    cpu::FlatValue::Vector(buffer) => {
                        let wide = matches!(**buffer, cpu::Buffer::I64(_) | cpu::Buffer::F64(_));
                        buffer.len() as u64 * if wide { 8 } else { 4 }
                    }
                    _ => 4,
                })
                .sum(),
            Repr::Device(vars) => vars
                .iter()
                .map(|v| match v {
                    DeviceValue::Device(vec) => vec.bytes(),
                    DeviceValue::Host(_) => 4,
                })
                .sum(),
        }
    }

    /// A sequence's lengths, as far as they are the same at each level, outermost first
    /// (`CellInput::lengths`): what the host knows without reading anything back. Of a device
    /// value that is its outer length, when the host holds it.
    pub fn known_lengths(&self) -> Vec<u64> {
        if !matches!(self.ty, Type::Seq(_)) {
            return Vec::new();
        }
        match &self.repr {
            Repr::Nested(nested) => nested_lengths(nested),
            Repr::Flat(vars) => {
                let mut lengths = Vec::new();
                let mut level = &self.ty;
                // A single sequence's length, then each level's lengths vector, every segment
                // of the level (the value's own and any others the collection holds) alike.
                let mut at = 1;
                while let Type::Seq(elem) = level {
                    let common = match vars.get(at) {
                        Some(cpu::FlatValue::Scalar(s)) => s.as_int(),
                        Some(cpu::FlatValue::Vector(b)) => {
                            let first = b.get(0).and_then(|s| s.as_int());
                            (0..b.len())
                                .all(|i| b.get(i).and_then(|s| s.as_int()) == first)
                                .then_some(first)
                                .flatten()
                        }
                        Some(cpu::FlatValue::Progression(p)) => {
                            (p.step == 0 && p.len > 0).then_some(p.start.into())
                        }
                        None => None,
                    };
                    let Some(len) = common.and_then(|n| u64::try_from(n).ok()) else { break };
                    lengths.push(len);
                    // An empty sequence has no rows: the collection's other segments say
                    // nothing of it (and a host value would stop here too).
                    if len == 0 {
                        break;
                    }
                    // A nested level's descriptors follow directly only when its elements are
                    // sequences themselves: tuples interleave their fields.
                    if !matches!(**elem, Type::Seq(_)) {
                        break;
                    }
                    level = elem;
                    at += 2;
                }
                lengths
            }
            Repr::Device(vars) => match vars.get(1) {
                Some(DeviceValue::Host(s)) => {
                    s.as_int().and_then(|n| u64::try_from(n).ok()).into_iter().collect()
                }
                _ => Vec::new(),
            },
        }
    }

    /// Whether its arrays are on the device.
    pub fn is_on_device(&self) -> bool {
        matches!(&self.repr, Repr::Device(vars) if vars.iter().any(|v| matches!(v, DeviceValue::Device(_))))
    }
}

/// `known_lengths` of a host value: its length, then its rows' common lengths.
fn nested_lengths(value: &interp::NestedValue) -> Vec<u64> {
    let interp::NestedValue::Seq(seq) = value else { return Vec::new() };
    let mut lengths = vec![seq.len() as u64];
    let mut rows = (0..seq.len()).map(|i| nested_lengths(&seq.get(i)));
    if let Some(mut common) = rows.next() {
        for row in rows {
            let same = common.iter().zip(&row).take_while(|(a, b)| a == b).count();
            common.truncate(same);
            if common.is_empty() {
                break;
            }
        }
        lengths.extend(common);
    }
    lengths
}

fn nested_bytes(value: &interp::NestedValue) -> u64 {
    match value {
        interp::NestedValue::Tuple(parts) => parts.iter().map(nested_bytes).sum(),
        interp::NestedValue::Seq(seq) => (0..seq.len()).map(|i| nested_bytes(&seq.get(i))).sum(),
        interp::NestedValue::I64(_) | interp::NestedValue::F64(_) => 8,
        _ => 4,
    }
}
