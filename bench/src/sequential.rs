//! The sequential baselines: the plain loops a Rust programmer writes, on one core, with no
//! SIMD intrinsics. `lines_of_code` counts a baseline's lines from this file's own text.

use crate::inputs::{Array, Inputs, get_f32, get_i32};

pub fn dot(inputs: &Inputs) -> Array {
    let (xs, ys) = (get_f32(inputs, "xs"), get_f32(inputs, "ys"));
    let mut total = 0.0f32;
    for i in 0..xs.len() {
        total += xs[i] * ys[i];
    }
    Array::F32(vec![total])
}

pub fn black_scholes(inputs: &Inputs) -> Array {
    let (s, k, t) = (get_f32(inputs, "spots"), get_f32(inputs, "strikes"), get_f32(inputs, "times"));
    let cnd = |d: f32| 0.5 * (1.0 + libm::erff(d / std::f32::consts::SQRT_2));
    let mut out = Vec::with_capacity(2 * s.len());
    for i in 0..s.len() {
        let sqrt_t = t[i].sqrt();
        let d1 = ((s[i] / k[i]).ln() + (0.02 + 0.5 * 0.30 * 0.30) * t[i]) / (0.30 * sqrt_t);
        let d2 = d1 - 0.30 * sqrt_t;
        let discounted_k = k[i] * (-0.02 * t[i]).exp();
        out.push(s[i] * cnd(d1) - discounted_k * cnd(d2));
        out.push(discounted_k * cnd(-d2) - s[i] * cnd(-d1));
    }
    Array::F32(out)
}

pub fn sort(inputs: &Inputs) -> Array {
    let mut xs = get_i32(inputs, "xs").to_vec();
    xs.sort_unstable();
    Array::I32(xs)
}

pub fn spmv_csr(inputs: &Inputs) -> Array {
    let (vals, cols, lens, x) =
        (get_f32(inputs, "vals"), get_i32(inputs, "cols"), get_i32(inputs, "lens"), get_f32(inputs, "x"));
    let mut y = Vec::with_capacity(lens.len());
    let mut k = 0;
    for &len in lens {
        let mut total = 0.0f32;
        for _ in 0..len {
            total += vals[k] * x[cols[k] as usize];
            k += 1;
        }
        y.push(total);
    }
    Array::F32(y)
}

pub fn segmented_sums(inputs: &Inputs) -> Array {
    let (values, lens) = (get_f32(inputs, "values"), get_i32(inputs, "lens"));
    let mut sums = Vec::with_capacity(lens.len());
    let mut start = 0;
    for &len in lens {
        sums.push(values[start..start + len as usize].iter().sum::<f32>());
        start += len as usize;
    }
    Array::F32(sums)
}

/// The lines of baseline `name` in this file, its signature and closing brace included.
pub fn lines_of_code(name: &str) -> usize {
    let source = include_str!("sequential.rs");
    let signature = format!("pub fn {name}(");
    let body = source.lines().skip_while(|line| !line.starts_with(&signature));
    body.take_while(|line| *line != "}").filter(|line| !line.trim().is_empty()).count() + 1
}
