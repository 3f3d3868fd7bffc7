//! Values of the GPU executor, and their bytes on the device.

use std::sync::{Arc, OnceLock};

use crate::runtime::{Binding, DeviceBuffer};
use weft_core::types::Scalar;
use weft_exec::cpu::{self, Buffer, ScalarValue};
use weft_flat::wgsl::scalar::storage_size;

/// A host scalar, or an array on the device.
#[derive(Debug, Clone)]
pub enum DeviceValue {
    Host(ScalarValue),
    Device(DeviceVec),
}

/// `len` elements of `elem` in storage layout (`bool` as a `u32`). A `scalar` one holds one
/// element that the IR sees as a scalar: a result the host has not read back.
///
/// With a `count`, the vector's exact length is on the device and `len` is only a bound on
/// it, which sizes the buffer: a filter's result before anyone asked how many were kept. A
/// kernel over such a vector runs over the bound and reads the count on the device
/// (`Gpu::dispatch_counted`); an op that needs the exact length on the host settles it first
/// (`GpuMachine::with_exact_len`), and every read-back brings back all unsettled counts with it.
#[derive(Debug, Clone)]
pub struct DeviceVec {
    pub buffer: Arc<DeviceBuffer>,
    pub len: usize,
    pub elem: Scalar,
    pub scalar: bool,
    pub count: Option<Arc<DeviceCount>>,
}

/// An element count computed on the device, in a count record (`wgsl::prims::count_record`):
/// the count, an `i32` no larger than the bound of the vectors it counts, in the first word
/// of `buffer`, then the grid of an indirect launch over the counted elements. `exact` is set
/// once a read-back has brought the count to the host.
#[derive(Debug)]
pub struct DeviceCount {
    pub buffer: Arc<DeviceBuffer>,
    pub exact: OnceLock<usize>,
}

impl DeviceVec {
    /// A vector of exactly `len` elements.
    pub fn exact(buffer: Arc<DeviceBuffer>, len: usize, elem: Scalar) -> DeviceVec {
        DeviceVec { buffer, len, elem, scalar: false, count: None }
    }

    /// The device count of a vector whose exact length the host does not know yet.
    pub fn unsettled(&self) -> Option<&Arc<DeviceCount>> {
        self.count.as_ref().filter(|c| c.exact.get().is_none())
    }

    /// The exact length where the host knows it, else the bound.
    pub fn known_len(&self) -> usize {
        self.count.as_ref().and_then(|c| c.exact.get().copied()).map_or(self.len, |n| n.min(self.len))
    }

    /// This vector with its exact length, where a read-back has brought its count.
    pub fn exact_if_known(self) -> DeviceVec {
        match self.count.as_ref().and_then(|c| c.exact.get().copied()) {
            Some(len) => DeviceVec { len: len.min(self.len), count: None, ..self },
            None => self,
        }
    }

    pub fn bytes(&self) -> u64 {
        self.len as u64 * storage_size(self.elem)
    }

    pub fn binding(&self) -> Binding {
        Binding { buffer: self.buffer.clone(), bytes: self.bytes() }
    }

    /// The value of `data`, this array's bytes.
    pub fn decode(&self, data: &[u8]) -> cpu::FlatValue {
        let buffer = decode(self.elem, data);
        if self.scalar
            && let Some(s) = buffer.get(0)
        {
            return cpu::FlatValue::Scalar(s);
        }
        cpu::FlatValue::vector(buffer)
    }
}

impl DeviceValue {
    pub fn elem(&self) -> Scalar {
        match self {
            DeviceValue::Host(s) => s.ty(),
            DeviceValue::Device(v) => v.elem,
        }
    }

    /// The elements of a vector, exact where the host knows them, else its bound; 0 for a
    /// scalar. What a call's arguments weigh, for the crossover and for guesses.
    pub fn elements(&self) -> usize {
        match self {
            DeviceValue::Device(v) if !v.scalar => v.known_len(),
            _ => 0,
        }
    }

    /// A non-negative integer on the host: an exact size.
    pub fn host_size(&self) -> Option<usize> {
        match self {
            DeviceValue::Host(s) => s.as_int().and_then(|n| usize::try_from(n).ok()),
            DeviceValue::Device(_) => None,
        }
    }

    /// The length of a vector; `None` for a scalar, on the host or the device.
    pub fn vector_len(&self) -> Option<usize> {
        match self {
            DeviceValue::Device(v) if !v.scalar => Some(v.len),
            _ => None,
        }
    }

    /// This value with its exact length where a read-back has brought its count
    /// (`DeviceVec::exact_if_known`).
    pub fn exact_if_known(self) -> DeviceValue {
        match self {
            DeviceValue::Device(v) => DeviceValue::Device(v.exact_if_known()),
            host => host,
        }
    }

    /// A one-element device array as a device scalar.
    pub fn as_scalar(self) -> DeviceValue {
        match self {
            DeviceValue::Device(v) => DeviceValue::Device(DeviceVec { scalar: true, ..v }),
            host => host,
        }
    }
}

/// A host scalar as one parameter word (32-bit types only).
pub fn param_bits(s: ScalarValue) -> u32 {
    match s {
        ScalarValue::Bool(b) => u32::from(b),
        ScalarValue::I32(i) => i as u32,
        ScalarValue::F32(x) => x.to_bits(),
        ScalarValue::I64(i) => i as u32,
        ScalarValue::F64(x) => (x as f32).to_bits(),
    }
}

/// A host vector's bytes in storage layout, its element type and its length.
pub fn encode(buffer: &Buffer) -> (Vec<u8>, Scalar, usize) {
    let bytes = match buffer {
        Buffer::Bool(v) => v.iter().flat_map(|&b| u32::from(b).to_le_bytes()).collect(),
        Buffer::I32(v) => bytemuck::cast_slice(v).to_vec(),
        Buffer::I64(v) => bytemuck::cast_slice(v).to_vec(),
        Buffer::F32(v) => bytemuck::cast_slice(v).to_vec(),
        Buffer::F64(v) => bytemuck::cast_slice(v).to_vec(),
    };
    (bytes, buffer.ty(), buffer.len())
}

/// A count read back: the `i32` in the first word of `bytes` (0 if there is none, or if it is
/// negative).
pub fn count_word(bytes: &[u8]) -> usize {
    let n = decode(Scalar::I32, bytes).get(0).and_then(|s| s.as_int()).unwrap_or(0);
    usize::try_from(n).unwrap_or(0)
}

/// Storage bytes as a host vector of `elem`.
pub fn decode(elem: Scalar, data: &[u8]) -> Buffer {
    fn words<const N: usize>(data: &[u8]) -> impl Iterator<Item = [u8; N]> + '_ {
        data.chunks_exact(N).map(|c| c.try_into().unwrap_or([0; N]))
    }
    match elem {
        Scalar::Bool => Buffer::Bool(words::<4>(data).map(|w| u32::from_le_bytes(w) != 0).collect()),
        Scalar::I32 => Buffer::I32(words::<4>(data).map(i32::from_le_bytes).collect()),
        Scalar::F32 => Buffer::F32(words::<4>(data).map(f32::from_le_bytes).collect()),
        Scalar::I64 => Buffer::I64(words::<8>(data).map(i64::from_le_bytes).collect()),
        Scalar::F64 => Buffer::F64(words::<8>(data).map(f64::from_le_bytes).collect()),
    }
}
