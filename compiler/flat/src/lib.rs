//! `weft-flat`: the back half's passes, as pure functions over plain data. `flatten` turns the
//! core program (`weft_core`) into the segmented IR (`ir`), `simplify` tidies it, `fuse` groups
//! its ops into kernels (with a plan that explains why), and `wgsl` generates each kernel's
//! WGSL, validated by naga.
//!
//! **Architecture Invariant:** no salsa and no wgpu here. The order of the passes and their
//! caching belong to `weft_analysis::pipeline`; running kernels belongs to `weft-gpu`.

pub mod flatten;
pub mod fuse;
pub mod ir;
pub mod positions;
pub mod simplify;
pub mod wgsl;
