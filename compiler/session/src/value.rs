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

    /// Whether its arrays are on the device.
    pub fn is_on_device(&self) -> bool {
        matches!(&self.repr, Repr::Device(vars) if vars.iter().any(|v| matches!(v, DeviceValue::Device(_))))
    }
}

fn nested_bytes(value: &interp::NestedValue) -> u64 {
    match value {
        interp::NestedValue::Tuple(parts) => parts.iter().map(nested_bytes).sum(),
        interp::NestedValue::Seq(seq) => (0..seq.len()).map(|i| nested_bytes(&seq.get(i))).sum(),
        interp::NestedValue::I64(_) | interp::NestedValue::F64(_) => 8,
        _ => 4,
    }
}
