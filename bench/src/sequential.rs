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

pub fn kmeans(inputs: &Inputs) -> Array {
    const D: usize = 8;
    const K: usize = 4;
    let flat = get_f32(inputs, "X");
    let points: Vec<&[f32]> = flat.chunks(D).collect();
    let mut centres: Vec<Vec<f32>> = points[..K].iter().map(|p| p.to_vec()).collect();
    for _ in 0..5 {
        let mut sums = vec![vec![0.0f32; D]; K];
        let mut counts = [0usize; K];
        for p in &points {
            let dist = |c: &Vec<f32>| p.iter().zip(c).map(|(a, b)| (a - b) * (a - b)).sum::<f32>();
            let mut best = 0;
            for j in 1..K {
                if dist(&centres[j]) < dist(&centres[best]) {
                    best = j;
                }
            }
            counts[best] += 1;
            for (s, x) in sums[best].iter_mut().zip(p.iter()) {
                *s += x;
            }
        }
        for j in 0..K {
            if counts[j] > 0 {
                centres[j] = sums[j].iter().map(|s| s / counts[j] as f32).collect();
            }
        }
    }
    Array::F32(centres.concat())
}

pub fn spmv_ell(inputs: &Inputs) -> Array {
    let (data, idx, x) = (get_f32(inputs, "data"), get_i32(inputs, "idx"), get_f32(inputs, "x"));
    let n = x.len();
    let mut y = vec![0.0f32; n];
    for (slab, cols) in data.chunks(n).zip(idx.chunks(n)) {
        for i in 0..n {
            y[i] += slab[i] * x[cols[i] as usize];
        }
    }
    Array::F32(y)
}

pub fn cg(inputs: &Inputs) -> Array {
    let (vals, cols, row_ptr, b) =
        (get_f32(inputs, "vals"), get_i32(inputs, "cols"), get_i32(inputs, "row_ptr"), get_f32(inputs, "b"));
    let n = b.len();
    let spmv = |x: &[f32], y: &mut [f32]| {
        for r in 0..n {
            let mut total = 0.0f32;
            for k in row_ptr[r] as usize..row_ptr[r + 1] as usize {
                total += vals[k] * x[cols[k] as usize];
            }
            y[r] = total;
        }
    };
    let dot = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(a, b)| a * b).sum::<f32>();
    let (mut x, mut r, mut p, mut q) = (vec![0.0f32; n], b.to_vec(), b.to_vec(), vec![0.0f32; n]);
    let mut rr = dot(&r, &r);
    for _ in 0..10 {
        spmv(&p, &mut q);
        let alpha = rr / dot(&p, &q);
        for i in 0..n {
            x[i] += alpha * p[i];
            r[i] -= alpha * q[i];
        }
        let rr_next = dot(&r, &r);
        for i in 0..n {
            p[i] = r[i] + (rr_next / rr) * p[i];
        }
        rr = rr_next;
    }
    Array::F32(x)
}

pub fn bfs(inputs: &Inputs) -> Array {
    let (offsets, targets) = (get_i32(inputs, "offsets"), get_i32(inputs, "targets"));
    let mut levels = vec![-1i32; offsets.len() - 1];
    let mut queue = std::collections::VecDeque::from([0usize]);
    levels[0] = 0;
    while let Some(v) = queue.pop_front() {
        for &u in &targets[offsets[v] as usize..offsets[v + 1] as usize] {
            if levels[u as usize] < 0 {
                levels[u as usize] = levels[v] + 1;
                queue.push_back(u as usize);
            }
        }
    }
    Array::I32(levels)
}

pub fn quickhull(inputs: &Inputs) -> Array {
    type P = (f32, f32);
    fn cross(o: P, a: P, b: P) -> f32 {
        (a.0 - o.0) * (b.1 - o.1) - (a.1 - o.1) * (b.0 - o.0)
    }
    fn side(points: &[P], a: P, b: P, hull: &mut Vec<P>) {
        let left: Vec<P> = points.iter().copied().filter(|&p| cross(a, b, p) > 0.0).collect();
        if left.is_empty() {
            hull.push(a);
            return;
        }
        let mut far = left[0];
        for &p in &left[1..] {
            if cross(a, b, p) > cross(a, b, far) {
                far = p;
            }
        }
        side(&left, a, far, hull);
        side(&left, far, b, hull);
    }
    let (xs, ys) = (get_f32(inputs, "xs"), get_f32(inputs, "ys"));
    let points: Vec<P> = xs.iter().copied().zip(ys.iter().copied()).collect();
    let (mut leftmost, mut rightmost) = (points[0], points[0]);
    for &p in &points[1..] {
        if p.0 < leftmost.0 {
            leftmost = p;
        }
        if p.0 > rightmost.0 {
            rightmost = p;
        }
    }
    let mut hull = Vec::new();
    side(&points, leftmost, rightmost, &mut hull);
    side(&points, rightmost, leftmost, &mut hull);
    Array::F32(hull.into_iter().flat_map(|(x, y)| [x, y]).collect())
}

pub fn barnes_hut(inputs: &Inputs) -> Array {
    struct Node {
        m: f32,
        cx: f32,
        cy: f32,
        side: f32,
        first: usize,
        children: usize,
    }
    let (xs, ys, ms) = (get_f32(inputs, "xs"), get_f32(inputs, "ys"), get_f32(inputs, "ms"));
    // The quadtree, level by level: each cell (x0, y0, side, bodies) and its non-empty quadrants.
    let mut nodes: Vec<Node> = Vec::new();
    let mut cells: Vec<(f32, f32, f32, Vec<usize>)> = vec![(0.0, 0.0, 1.0, (0..xs.len()).collect())];
    let mut depth = 0;
    while !cells.is_empty() {
        let mut next = Vec::new();
        let mut first = nodes.len() + cells.len();
        for (x0, y0, side, ids) in &cells {
            let before = next.len();
            if ids.len() > 1 && depth < 16 {
                let half = 0.5 * side;
                for q in 0..4 {
                    let (right, top) = (q % 2 == 1, q / 2 == 1);
                    let inside: Vec<usize> = ids
                        .iter()
                        .copied()
                        .filter(|&i| (xs[i] >= x0 + half) == right && (ys[i] >= y0 + half) == top)
                        .collect();
                    if !inside.is_empty() {
                        next.push((x0 + half * (q % 2) as f32, y0 + half * (q / 2) as f32, half, inside));
                    }
                }
            }
            let m: f32 = ids.iter().map(|&i| ms[i]).sum();
            let cx = ids.iter().map(|&i| ms[i] * xs[i]).sum::<f32>() / m;
            let cy = ids.iter().map(|&i| ms[i] * ys[i]).sum::<f32>() / m;
            let children = next.len() - before;
            nodes.push(Node { m, cx, cy, side: *side, first, children });
            first += children;
        }
        cells = next;
        depth += 1;
    }
    fn walk(nodes: &[Node], i: usize, px: f32, py: f32) -> (f32, f32) {
        let node = &nodes[i];
        let (dx, dy) = (node.cx - px, node.cy - py);
        if node.children == 0 || node.side * node.side < 0.25 * (dx * dx + dy * dy) {
            let r2 = dx * dx + dy * dy + 0.0001;
            let k = node.m / (r2 * r2.sqrt());
            return (k * dx, k * dy);
        }
        (node.first..node.first + node.children)
            .map(|c| walk(nodes, c, px, py))
            .fold((0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1))
    }
    let accelerations = xs.iter().zip(ys).flat_map(|(&x, &y)| {
        let (ax, ay) = walk(&nodes, 0, x, y);
        [ax, ay]
    });
    Array::F32(accelerations.collect())
}

/// The lines of baseline `name` in this file, its signature and closing brace included.
pub fn lines_of_code(name: &str) -> usize {
    let source = include_str!("sequential.rs");
    let signature = format!("pub fn {name}(");
    let body = source.lines().skip_while(|line| !line.starts_with(&signature));
    body.take_while(|line| *line != "}").filter(|line| !line.trim().is_empty()).count() + 1
}
