//! Inputs: the arrays a workload reads, drawn from a seeded generator, and written as `.npy`
//! files that Weft's `load_npy` and every Python peer read, so that all run on the same data.

use std::path::Path;

use npyz::WriterBuilder;

/// A flat array of one element type: what every input and output is, as far as checking
/// and writing go.
#[derive(Debug, Clone)]
pub enum Array {
    F32(Vec<f32>),
    I32(Vec<i32>),
}

/// A workload's inputs, by the names its programs load them under.
pub type Inputs = Vec<(&'static str, Array)>;

impl Array {
    pub fn map_f32(self, f: impl Fn(f32) -> f32) -> Array {
        match self {
            Array::F32(xs) => Array::F32(xs.into_iter().map(f).collect()),
            other => other,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Array::F32(xs) => xs.len(),
            Array::I32(xs) => xs.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn to_f64(&self) -> Vec<f64> {
        match self {
            Array::F32(xs) => xs.iter().map(|&x| f64::from(x)).collect(),
            Array::I32(xs) => xs.iter().map(|&x| f64::from(x)).collect(),
        }
    }

    /// Bytes of payload.
    pub fn bytes(&self) -> usize {
        4 * self.len()
    }

    fn write_npy(&self, path: &Path) -> std::io::Result<()> {
        let file = std::io::BufWriter::new(std::fs::File::create(path)?);
        let shape = [self.len() as u64];
        match self {
            Array::F32(xs) => {
                let mut out =
                    npyz::WriteOptions::new().default_dtype().shape(&shape).writer(file).begin_nd()?;
                out.extend(xs.iter().copied())?;
                out.finish()
            }
            Array::I32(xs) => {
                let mut out =
                    npyz::WriteOptions::new().default_dtype().shape(&shape).writer(file).begin_nd()?;
                out.extend(xs.iter().copied())?;
                out.finish()
            }
        }
    }
}

/// Input `name`, which the workload draws as `f32`.
pub fn get_f32<'a>(inputs: &'a Inputs, name: &str) -> &'a [f32] {
    match inputs.iter().find(|(n, _)| *n == name) {
        Some((_, Array::F32(xs))) => xs,
        _ => panic!("the workload has no f32 input `{name}`"),
    }
}

/// Input `name`, which the workload draws as `i32`.
pub fn get_i32<'a>(inputs: &'a Inputs, name: &str) -> &'a [i32] {
    match inputs.iter().find(|(n, _)| *n == name) {
        Some((_, Array::I32(xs))) => xs,
        _ => panic!("the workload has no i32 input `{name}`"),
    }
}

/// Writes each input as `{dir}/{name}.npy`.
pub fn write_all(inputs: &Inputs, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (name, array) in inputs {
        array.write_npy(&dir.join(format!("{name}.npy")))?;
    }
    Ok(())
}
