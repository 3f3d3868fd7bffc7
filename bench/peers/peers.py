"""The Python peers of `weft bench`: numpy, JAX, Numba and Taichi, each written the way its users
would write the workload.

`weft bench` runs this script once per peer, in the virtual environment it made:

    python peers.py PEER PLAN.json

PLAN.json lists runs: {"workload", "dir", "repeat", "check"}. `dir` holds the inputs as .npy
files, written by `weft bench`. For each run this prints one JSON line: the peer's version, the
lines of code of its implementation, the time of each repeat in milliseconds (after one warm-up
run, which compiles), and, for a check run, the output flattened to a list. A workload the peer
cannot run gives {"error": ...}; a peer that cannot be imported gives one such line per run.

Every implementation works in float32 and int32, as Weft does. Where a peer has no natural way
to express a workload, `NOTES` says what it does instead, and the report prints it.
"""

import inspect
import json
import math
import os
import sys
import time

import numpy as np

RISKFREE = np.float32(0.02)
VOLATILITY = np.float32(0.30)

NOTES = {
    ("numpy", "black_scholes"): "no erf in numpy: the Abramowitz–Stegun polynomial (7.5e-8)",
    ("taichi-cpu", "black_scholes"): "no erf in Taichi: the Abramowitz–Stegun polynomial",
    ("taichi-vulkan", "black_scholes"): "no erf in Taichi: the Abramowitz–Stegun polynomial",
    ("numpy", "sort"): "np.sort (introsort/radix), not quicksort",
    ("jax", "sort"): "jnp.sort, not quicksort",
    ("numba", "sort"): "np.sort inside @njit (sequential), not a parallel quicksort",
    ("taichi-cpu", "sort"): "ti.algorithms.parallel_sort (odd-even merge sort)",
    ("taichi-vulkan", "sort"): "ti.algorithms.parallel_sort (odd-even merge sort)",
    ("numpy", "segmented_sums"): "np.add.reduceat over the row starts (empty rows fixed up)",
    ("jax", "segmented_sums"): "jax.ops.segment_sum over row ids",
    ("jax", "spmv_csr"): "jax.ops.segment_sum over row ids",
    ("numpy", "quickhull"): "scipy.spatial.ConvexHull (Qhull, in C)",
    ("numba", "quickhull"): "Andrew's monotone chain (a sort, then a sequential scan)",
    ("numpy", "bfs"): "one pass over all edges per level (np.unique of the reached vertices)",
    ("jax", "bfs"): "one pass over all edges per level (segment_max), in a while_loop",
    ("numba", "bfs"): "a sequential queue",
    ("numba", "barnes_hut"): "the same tree, built sequentially; the walks in parallel, each with an explicit stack",
    ("taichi-cpu", "barnes_hut"): "the tree built in numpy (kernels cannot grow one), the walks in a kernel with an explicit stack",
    ("taichi-vulkan", "barnes_hut"): "the tree built in numpy (kernels cannot grow one), the walks in a kernel with an explicit stack",
    ("taichi-cpu", "bfs"): "one parallel pass over the vertices per level; a vertex reached twice in a level is written twice with the same level",
    ("taichi-vulkan", "bfs"): "one parallel pass over the vertices per level; a vertex reached twice in a level is written twice with the same level",
}

# Workloads a peer has no natural form for, and why: the report says so instead of a time.
MISSING = {
    ("jax", "quickhull"): "a hull's size depends on the data, which jit cannot trace; JAX has no convex hull",
    ("taichi-cpu", "quickhull"): "Taichi kernels have no recursion and no dynamic lists; Taichi has no convex hull",
    ("taichi-vulkan", "quickhull"): "Taichi kernels have no recursion and no dynamic lists; Taichi has no convex hull",
    ("numpy", "barnes_hut"): "a tree walk per body does not vectorise",
    ("jax", "barnes_hut"): "a tree walk per body does not vectorise, and the tree's size depends on the data",
}


def load(directory, name):
    return np.load(os.path.join(directory, name + ".npy"))


def erf_as(x):
    """erf by Abramowitz and Stegun 7.1.26, for peers without one."""
    sign = np.sign(x)
    x = np.abs(x)
    t = np.float32(1.0) / (np.float32(1.0) + np.float32(0.3275911) * x)
    y = np.float32(1.0) - (((((np.float32(1.061405429) * t - np.float32(1.453152027)) * t)
                             + np.float32(1.421413741)) * t - np.float32(0.284496736)) * t
                           + np.float32(0.254829592)) * t * np.exp(-x * x)
    return sign * y


def row_ids(lens):
    return np.repeat(np.arange(len(lens), dtype=np.int32), lens)


# ---- numpy ----------------------------------------------------------------------------------

def numpy_peer():
    def dot(xs, ys):
        return np.dot(xs, ys)

    def black_scholes(s, k, t):
        sqrt_t = np.sqrt(t)
        d1 = (np.log(s / k) + (RISKFREE + np.float32(0.5) * VOLATILITY * VOLATILITY) * t) / (VOLATILITY * sqrt_t)
        d2 = d1 - VOLATILITY * sqrt_t
        cnd = lambda d: np.float32(0.5) * (np.float32(1.0) + erf_as(d / np.float32(math.sqrt(2.0))))
        dk = k * np.exp(-RISKFREE * t)
        return np.stack([s * cnd(d1) - dk * cnd(d2), dk * cnd(-d2) - s * cnd(-d1)], axis=1)

    def sort(xs):
        return np.sort(xs)

    def spmv_csr(vals, cols, lens, x):
        products = vals * x[cols]
        return np.bincount(row_ids(lens), weights=products, minlength=len(lens)).astype(np.float32)

    def segmented_sums(values, lens):
        starts = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
        sums = np.add.reduceat(values, np.minimum(starts, max(len(values) - 1, 0))) if len(values) else np.zeros(len(lens), np.float32)
        return np.where(lens > 0, sums, np.float32(0.0))

    def kmeans(X):
        X = X.reshape(-1, 8)
        C = X[:4].copy()
        for _ in range(5):
            a = ((X[:, None, :] - C[None, :, :]) ** 2).sum(axis=2).argmin(axis=1)
            for i in range(4):
                members = X[a == i]
                if len(members):
                    C[i] = members.sum(axis=0) / np.float32(len(members))
        return C

    def spmv_ell(data, idx, x):
        return (data.reshape(-1, len(x)) * x[idx.reshape(-1, len(x))]).sum(axis=0)

    def cg(vals, cols, row_ptr, b):
        rows = row_ids(np.diff(row_ptr))
        spmv = lambda v: np.bincount(rows, weights=vals * v[cols], minlength=len(b)).astype(np.float32)
        x, r, p = np.zeros_like(b), b.copy(), b.copy()
        rr = r @ r
        for _ in range(10):
            q = spmv(p)
            alpha = rr / (p @ q)
            x += alpha * p
            r -= alpha * q
            rr_next = r @ r
            p = r + (rr_next / rr) * p
            rr = rr_next
        return x

    def bfs(offsets, targets):
        sources = row_ids(np.diff(offsets))
        levels = np.full(len(offsets) - 1, -1, np.int32)
        levels[0] = 0
        level = 0
        while True:
            reached = targets[levels[sources] == level]
            fresh = np.unique(reached[levels[reached] < 0])
            if len(fresh) == 0:
                return levels
            level += 1
            levels[fresh] = level

    def quickhull(xs, ys):
        from scipy.spatial import ConvexHull
        points = np.stack([xs, ys], axis=1)
        return points[ConvexHull(points).vertices]

    return "numpy " + np.__version__, {k: v for k, v in locals().items() if k in WORKLOADS}, lambda r: r


# ---- JAX --------------------------------------------------------------------------------------

def jax_peer():
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_platforms", "cpu")

    @jax.jit
    def dot(xs, ys):
        return jnp.dot(xs, ys)

    @jax.jit
    def black_scholes(s, k, t):
        sqrt_t = jnp.sqrt(t)
        d1 = (jnp.log(s / k) + (RISKFREE + 0.5 * VOLATILITY * VOLATILITY) * t) / (VOLATILITY * sqrt_t)
        d2 = d1 - VOLATILITY * sqrt_t
        cnd = lambda d: 0.5 * (1.0 + jax.scipy.special.erf(d / math.sqrt(2.0)))
        dk = k * jnp.exp(-RISKFREE * t)
        return jnp.stack([s * cnd(d1) - dk * cnd(d2), dk * cnd(-d2) - s * cnd(-d1)], axis=1)

    @jax.jit
    def sort(xs):
        return jnp.sort(xs)

    def spmv_csr(vals, cols, lens, x):
        return _spmv(vals, cols, jnp.asarray(row_ids(lens)), x, len(lens))

    def _spmv(vals, cols, rows, x, n):
        return jax.ops.segment_sum(vals * x[cols], rows, num_segments=n)
    _spmv = jax.jit(_spmv, static_argnums=4)

    def segmented_sums(values, lens):
        return _segsum(values, jnp.asarray(row_ids(lens)), len(lens))

    def _segsum(values, rows, n):
        return jax.ops.segment_sum(values, rows, num_segments=n)
    _segsum = jax.jit(_segsum, static_argnums=2)

    def kmeans(X):
        return _kmeans(jnp.asarray(X.reshape(-1, 8)))

    @jax.jit
    def _kmeans(X):
        def step(_, C):
            a = ((X[:, None, :] - C[None, :, :]) ** 2).sum(axis=2).argmin(axis=1)
            onehot = jax.nn.one_hot(a, 4, dtype=X.dtype)
            counts = onehot.sum(axis=0)
            sums = onehot.T @ X
            return jnp.where(counts[:, None] > 0, sums / jnp.maximum(counts, 1)[:, None], C)
        return jax.lax.fori_loop(0, 5, step, X[:4])

    def spmv_ell(data, idx, x):
        return _spmv_ell(data.reshape(-1, len(x)), idx.reshape(-1, len(x)), x)

    @jax.jit
    def _spmv_ell(data, idx, x):
        return (data * x[idx]).sum(axis=0)

    def cg(vals, cols, row_ptr, b):
        return _cg(vals, cols, jnp.asarray(row_ids(np.diff(row_ptr))), b)

    @jax.jit
    def _cg(vals, cols, rows, b):
        spmv = lambda v: jax.ops.segment_sum(vals * v[cols], rows, num_segments=b.shape[0])
        def step(_, state):
            x, r, p, rr = state
            q = spmv(p)
            alpha = rr / (p @ q)
            x, r = x + alpha * p, r - alpha * q
            rr_next = r @ r
            return x, r, r + (rr_next / rr) * p, rr_next
        return jax.lax.fori_loop(0, 10, step, (jnp.zeros_like(b), b, b, b @ b))[0]

    def bfs(offsets, targets):
        return _bfs(jnp.asarray(row_ids(np.diff(offsets))), jnp.asarray(targets), len(offsets) - 1)

    def _bfs(sources, targets, n):
        def more(state):
            return state[2]
        def step(state):
            levels, level, _ = state
            hit = jax.ops.segment_max((levels[sources] == level).astype(jnp.int32), targets, num_segments=n)
            fresh = (hit > 0) & (levels < 0)
            return jnp.where(fresh, level + 1, levels), level + 1, fresh.any()
        levels = jnp.full(n, -1, jnp.int32).at[0].set(0)
        return jax.lax.while_loop(more, step, (levels, 0, True))[0]
    _bfs = jax.jit(_bfs, static_argnums=2)

    def ready(result):
        return result.block_until_ready()

    impls = {k: v for k, v in locals().items() if k in WORKLOADS or k.startswith("_")}
    return "jax " + jax.__version__, impls, ready


# ---- Numba ------------------------------------------------------------------------------------

def numba_peer():
    import numba
    from numba import njit, prange

    @njit(parallel=True, fastmath=False)
    def dot(xs, ys):
        total = np.float32(0.0)
        for i in prange(len(xs)):
            total += xs[i] * ys[i]
        return total

    @njit(parallel=True)
    def black_scholes(s, k, t):
        out = np.empty((len(s), 2), np.float32)
        for i in prange(len(s)):
            sqrt_t = math.sqrt(t[i])
            d1 = (math.log(s[i] / k[i]) + (RISKFREE + np.float32(0.5) * VOLATILITY * VOLATILITY) * t[i]) / (VOLATILITY * sqrt_t)
            d2 = d1 - VOLATILITY * sqrt_t
            dk = k[i] * math.exp(-RISKFREE * t[i])
            c1 = 0.5 * (1.0 + math.erf(d1 / math.sqrt(2.0)))
            c2 = 0.5 * (1.0 + math.erf(d2 / math.sqrt(2.0)))
            out[i, 0] = s[i] * c1 - dk * c2
            out[i, 1] = dk * (1.0 - c2) - s[i] * (1.0 - c1)
        return out

    @njit
    def sort(xs):
        return np.sort(xs)

    @njit(parallel=True)
    def spmv_csr(vals, cols, lens, x):
        starts = np.zeros(len(lens) + 1, np.int64)
        starts[1:] = np.cumsum(lens)
        y = np.empty(len(lens), np.float32)
        for r in prange(len(lens)):
            total = np.float32(0.0)
            for k in range(starts[r], starts[r + 1]):
                total += vals[k] * x[cols[k]]
            y[r] = total
        return y

    @njit(parallel=True)
    def segmented_sums(values, lens):
        starts = np.zeros(len(lens) + 1, np.int64)
        starts[1:] = np.cumsum(lens)
        sums = np.empty(len(lens), np.float32)
        for r in prange(len(lens)):
            total = np.float32(0.0)
            for k in range(starts[r], starts[r + 1]):
                total += values[k]
            sums[r] = total
        return sums

    @njit(parallel=True)
    def kmeans(X):
        X = X.reshape(-1, 8)
        C = X[:4].copy()
        a = np.empty(len(X), np.int64)
        for _ in range(5):
            for p in prange(len(X)):
                best, best_d = 0, np.inf
                for i in range(4):
                    d = np.float32(0.0)
                    for j in range(8):
                        d += (X[p, j] - C[i, j]) ** 2
                    if d < best_d:
                        best, best_d = i, d
                a[p] = best
            sums = np.zeros((4, 8), np.float32)
            counts = np.zeros(4, np.int64)
            for p in range(len(X)):
                counts[a[p]] += 1
                sums[a[p]] += X[p]
            for i in range(4):
                if counts[i] > 0:
                    C[i] = sums[i] / np.float32(counts[i])
        return C

    @njit(parallel=True)
    def spmv_ell(data, idx, x):
        n = len(x)
        y = np.zeros(n, np.float32)
        for i in prange(n):
            total = np.float32(0.0)
            for j in range(len(data) // n):
                total += data[j * n + i] * x[idx[j * n + i]]
            y[i] = total
        return y

    @njit(parallel=True)
    def _spmv(vals, cols, row_ptr, v, out):
        for r in prange(len(out)):
            total = np.float32(0.0)
            for k in range(row_ptr[r], row_ptr[r + 1]):
                total += vals[k] * v[cols[k]]
            out[r] = total

    @njit
    def cg(vals, cols, row_ptr, b):
        x, r, p, q = np.zeros_like(b), b.copy(), b.copy(), np.empty_like(b)
        rr = r @ r
        for _ in range(10):
            _spmv(vals, cols, row_ptr, p, q)
            alpha = rr / (p @ q)
            x += alpha * p
            r -= alpha * q
            rr_next = r @ r
            p = r + (rr_next / rr) * p
            rr = rr_next
        return x

    @njit
    def bfs(offsets, targets):
        levels = np.full(len(offsets) - 1, -1, np.int32)
        queue = np.empty(len(offsets) - 1, np.int64)
        levels[0], queue[0], head, tail = 0, 0, 0, 1
        while head < tail:
            v = queue[head]
            head += 1
            for e in range(offsets[v], offsets[v + 1]):
                u = targets[e]
                if levels[u] < 0:
                    levels[u] = levels[v] + 1
                    queue[tail] = u
                    tail += 1
        return levels

    @njit
    def quickhull(xs, ys):
        by_y = np.argsort(ys, kind="mergesort")
        order = by_y[np.argsort(xs[by_y], kind="mergesort")]
        hull = np.empty((2 * len(xs) + 1, 2), np.float32)
        k = 0
        for passes in range(2):
            start = k
            for t in range(len(order)):
                i = order[t] if passes == 0 else order[len(order) - 1 - t]
                while k >= start + 2 and ((hull[k - 1, 0] - hull[k - 2, 0]) * (ys[i] - hull[k - 2, 1])
                                          - (hull[k - 1, 1] - hull[k - 2, 1]) * (xs[i] - hull[k - 2, 0])) <= 0:
                    k -= 1
                hull[k, 0], hull[k, 1] = xs[i], ys[i]
                k += 1
            k -= 1
        return hull[:k]

    @njit
    def _build_tree(xs, ys, ms):
        # Weft's quadtree, level by level: cells are (x0, y0, side, bodies), bodies kept as
        # index ranges of a permutation that each level regroups by quadrant.
        n = len(xs)
        cap = 8 * n + 16
        m, cx, cy, side = np.empty(cap, np.float32), np.empty(cap, np.float32), np.empty(cap, np.float32), np.empty(cap, np.float32)
        first, nchild = np.empty(cap, np.int64), np.empty(cap, np.int64)
        order = np.arange(n)
        cells = np.zeros((1, 5))  # x0, y0, side, start, end
        cells[0, 2], cells[0, 4] = 1.0, n
        nodes, depth = 0, 0
        while len(cells) > 0:
            children = np.zeros((4 * len(cells), 5))
            counts = np.zeros(len(cells), np.int64)
            k = 0
            for c in range(len(cells)):
                x0, y0, sd, a, b = cells[c]
                a, b = int(a), int(b)
                if b - a > 1 and depth < 16:
                    half = np.float32(0.5) * np.float32(sd)
                    ids = order[a:b].copy()
                    at = a
                    for q in range(4):
                        start = at
                        for i in ids:
                            if (xs[i] >= np.float32(x0) + half) == (q % 2 == 1) and (ys[i] >= np.float32(y0) + half) == (q // 2 == 1):
                                order[at] = i
                                at += 1
                        if at > start:
                            children[k, 0] = np.float32(x0) + half * (q % 2)
                            children[k, 1] = np.float32(y0) + half * (q // 2)
                            children[k, 2], children[k, 3], children[k, 4] = half, start, at
                            k += 1
                            counts[c] += 1
            next_start = nodes + len(cells)
            for c in range(len(cells)):
                a, b = int(cells[c, 3]), int(cells[c, 4])
                mass, mx, my = np.float32(0.0), np.float32(0.0), np.float32(0.0)
                for i in order[a:b]:
                    mass += ms[i]
                    mx += ms[i] * xs[i]
                    my += ms[i] * ys[i]
                m[nodes], cx[nodes], cy[nodes], side[nodes] = mass, mx / mass, my / mass, cells[c, 2]
                first[nodes], nchild[nodes] = next_start, counts[c]
                next_start += counts[c]
                nodes += 1
            cells = children[:k]
            depth += 1
        return m[:nodes], cx[:nodes], cy[:nodes], side[:nodes], first[:nodes], nchild[:nodes]

    @njit(parallel=True)
    def barnes_hut(xs, ys, ms):
        m, cx, cy, side, first, nchild = _build_tree(xs, ys, ms)
        out = np.empty((len(xs), 2), np.float32)
        for b in prange(len(xs)):
            stack = np.empty(64 * 4, np.int64)
            stack[0], top = 0, 1
            ax, ay = np.float32(0.0), np.float32(0.0)
            while top > 0:
                top -= 1
                i = stack[top]
                dx, dy = cx[i] - xs[b], cy[i] - ys[b]
                if nchild[i] == 0 or side[i] * side[i] < np.float32(0.25) * (dx * dx + dy * dy):
                    r2 = dx * dx + dy * dy + np.float32(0.0001)
                    k = m[i] / (r2 * np.sqrt(r2))
                    ax += k * dx
                    ay += k * dy
                else:
                    for c in range(first[i] + nchild[i] - 1, first[i] - 1, -1):
                        stack[top] = c
                        top += 1
            out[b, 0], out[b, 1] = ax, ay
        return out

    impls = {k: v for k, v in locals().items() if k in WORKLOADS or k.startswith("_")}
    return "numba " + numba.__version__, impls, lambda r: r


# ---- Taichi -----------------------------------------------------------------------------------

def taichi_peer(arch_name):
    import taichi as ti
    arch = ti.cpu if arch_name == "cpu" else ti.vulkan
    ti.init(arch=arch, log_level=ti.WARN, default_fp=ti.f32, default_ip=ti.i32, offline_cache=False)

    def fields(*arrays):
        out = []
        for a in arrays:
            f = ti.field(ti.f32 if a.dtype == np.float32 else ti.i32, shape=max(len(a), 1))
            if len(a):
                f.from_numpy(a)
            out.append(f)
        return out

    @ti.kernel
    def _dot(xs: ti.template(), ys: ti.template(), n: ti.i32) -> ti.f32:
        total = 0.0
        for i in range(n):
            total += xs[i] * ys[i]
        return total

    @ti.func
    def cnd(d):
        x = ti.abs(d) / ti.sqrt(2.0)
        t = 1.0 / (1.0 + 0.3275911 * x)
        y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
                   + 0.254829592) * t * ti.exp(-x * x)
        return 0.5 * (1.0 + ti.math.sign(d) * y)

    @ti.kernel
    def _black_scholes(s: ti.template(), k: ti.template(), t: ti.template(), out: ti.template(), n: ti.i32):
        for i in range(n):
            sqrt_t = ti.sqrt(t[i])
            d1 = (ti.log(s[i] / k[i]) + (0.02 + 0.5 * 0.3 * 0.3) * t[i]) / (0.3 * sqrt_t)
            d2 = d1 - 0.3 * sqrt_t
            dk = k[i] * ti.exp(-0.02 * t[i])
            out[i, 0] = s[i] * cnd(d1) - dk * cnd(d2)
            out[i, 1] = dk * cnd(-d2) - s[i] * cnd(-d1)

    @ti.kernel
    def _rows(lens: ti.template(), starts: ti.template(), n: ti.i32):
        # A serial prefix sum: Taichi's parallel scan needs a field of its own size.
        ti.loop_config(serialize=True)
        for r in range(n):
            starts[r + 1] = starts[r] + lens[r]

    @ti.kernel
    def _spmv(vals: ti.template(), cols: ti.template(), starts: ti.template(), x: ti.template(), y: ti.template(), n: ti.i32):
        for r in range(n):
            total = 0.0
            for k in range(starts[r], starts[r + 1]):
                total += vals[k] * x[cols[k]]
            y[r] = total

    @ti.kernel
    def _segsum(values: ti.template(), starts: ti.template(), sums: ti.template(), n: ti.i32):
        for r in range(n):
            total = 0.0
            for k in range(starts[r], starts[r + 1]):
                total += values[k]
            sums[r] = total

    def dot(xs, ys):
        a, b = fields(xs, ys)
        return lambda: _dot(a, b, len(xs))

    def black_scholes(s, k, t):
        fs, fk, ft = fields(s, k, t)
        out = ti.field(ti.f32, shape=(max(len(s), 1), 2))
        def run():
            _black_scholes(fs, fk, ft, out, len(s))
            return out
        return run

    def sort(xs):
        (keys,) = fields(xs)
        def run():
            keys.from_numpy(xs)
            ti.algorithms.parallel_sort(keys)
            return keys
        return run

    def spmv_csr(vals, cols, lens, x):
        fv, fc, fl, fx = fields(vals, cols, lens, x)
        starts = ti.field(ti.i32, shape=len(lens) + 1)
        y = ti.field(ti.f32, shape=max(len(lens), 1))
        def run():
            _rows(fl, starts, len(lens))
            _spmv(fv, fc, starts, fx, y, len(lens))
            return y
        return run

    def segmented_sums(values, lens):
        fv, fl = fields(values, lens)
        starts = ti.field(ti.i32, shape=len(lens) + 1)
        sums = ti.field(ti.f32, shape=max(len(lens), 1))
        def run():
            _rows(fl, starts, len(lens))
            _segsum(fv, starts, sums, len(lens))
            return sums
        return run

    @ti.kernel
    def _assign(X: ti.template(), C: ti.template(), a: ti.template(), n: ti.i32):
        for p in range(n):
            best, best_d = 0, 3.0e38
            for i in range(4):
                d = 0.0
                for j in range(8):
                    d += (X[p * 8 + j] - C[i, j]) ** 2
                if d < best_d:
                    best, best_d = i, d
            a[p] = best

    @ti.kernel
    def _accumulate(X: ti.template(), a: ti.template(), sums: ti.template(), counts: ti.template(), n: ti.i32):
        for i, j in sums:
            sums[i, j] = 0.0
        for i in counts:
            counts[i] = 0
        for p in range(n):
            ti.atomic_add(counts[a[p]], 1)
            for j in range(8):
                ti.atomic_add(sums[a[p], j], X[p * 8 + j])

    @ti.kernel
    def _centres(C: ti.template(), sums: ti.template(), counts: ti.template()):
        for i, j in C:
            if counts[i] > 0:
                C[i, j] = sums[i, j] / counts[i]

    def kmeans(X):
        (fx,) = fields(X)
        n = len(X) // 8
        C, sums = ti.field(ti.f32, shape=(4, 8)), ti.field(ti.f32, shape=(4, 8))
        counts, a = ti.field(ti.i32, shape=4), ti.field(ti.i32, shape=max(n, 1))
        def run():
            C.from_numpy(X[:32].reshape(4, 8))
            for _ in range(5):
                _assign(fx, C, a, n)
                _accumulate(fx, a, sums, counts, n)
                _centres(C, sums, counts)
            return C
        return run

    @ti.kernel
    def _spmv_ell(data: ti.template(), idx: ti.template(), x: ti.template(), y: ti.template(), n: ti.i32, k: ti.i32):
        for i in range(n):
            total = 0.0
            for j in range(k):
                total += data[j * n + i] * x[idx[j * n + i]]
            y[i] = total

    def spmv_ell(data, idx, x):
        fd, fi, fx = fields(data, idx, x)
        y = ti.field(ti.f32, shape=max(len(x), 1))
        def run():
            _spmv_ell(fd, fi, fx, y, len(x), len(data) // len(x))
            return y
        return run

    @ti.kernel
    def _cg_update(x: ti.template(), r: ti.template(), p: ti.template(), q: ti.template(), alpha: ti.f32, n: ti.i32):
        for i in range(n):
            x[i] += alpha * p[i]
            r[i] -= alpha * q[i]

    @ti.kernel
    def _cg_direction(p: ti.template(), r: ti.template(), beta: ti.f32, n: ti.i32):
        for i in range(n):
            p[i] = r[i] + beta * p[i]

    def cg(vals, cols, row_ptr, b):
        fv, fc, fr = fields(vals, cols, row_ptr)
        n = len(b)
        x, r, p, q = (ti.field(ti.f32, shape=n) for _ in range(4))
        def run():
            x.fill(0.0)
            r.from_numpy(b)
            p.from_numpy(b)
            rr = _dot(r, r, n)
            for _ in range(10):
                _spmv(fv, fc, fr, p, q, n)
                alpha = rr / _dot(p, q, n)
                _cg_update(x, r, p, q, alpha, n)
                rr_next = _dot(r, r, n)
                _cg_direction(p, r, rr_next / rr, n)
                rr = rr_next
            return x
        return run

    @ti.kernel
    def _bfs_level(offsets: ti.template(), targets: ti.template(), levels: ti.template(), level: ti.i32, n: ti.i32) -> ti.i32:
        found = 0
        for v in range(n):
            if levels[v] == level:
                for e in range(offsets[v], offsets[v + 1]):
                    u = targets[e]
                    if levels[u] < 0:
                        levels[u] = level + 1
                        found += 1
        return found

    def bfs(offsets, targets):
        fo, ft = fields(offsets, targets)
        n = len(offsets) - 1
        levels = ti.field(ti.i32, shape=n)
        def run():
            levels.fill(-1)
            levels[0] = 0
            level = 0
            while _bfs_level(fo, ft, levels, level, n) > 0:
                level += 1
            return levels
        return run

    def _quadtree(xs, ys, ms):
        """Weft's quadtree, level by level, in numpy. `order` holds the bodies of the level's
        cells, each cell's together and in cell order; the bodies of each cell that splits are
        regrouped by quadrant with a stable sort."""
        order = np.arange(len(xs))
        x0, y0, side = np.zeros(1, np.float32), np.zeros(1, np.float32), np.ones(1, np.float32)
        sizes = np.array([len(xs)])
        parts, nodes, depth = [], 0, 0
        while len(sizes) > 0:
            start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
            m = np.add.reduceat(ms[order], start)
            mx = np.add.reduceat((ms * xs)[order], start)
            my = np.add.reduceat((ms * ys)[order], start)
            cell_of = np.repeat(np.arange(len(sizes)), sizes)
            half = np.float32(0.5) * side
            q = ((xs[order] >= (x0 + half)[cell_of]).astype(np.int64)
                 + 2 * (ys[order] >= (y0 + half)[cell_of]).astype(np.int64))
            splits = (sizes > 1) & (depth < 16)
            regroup = np.argsort(cell_of * 4 + q, kind="stable")
            order, cell_of, q = order[regroup], cell_of[regroup], q[regroup]
            keys = cell_of * 4 + q
            firsts = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]]))
            group_sizes = np.diff(np.append(firsts, len(order)))
            keep = splits[cell_of[firsts]]
            counts = np.bincount(cell_of[firsts][keep], minlength=len(sizes))
            first = nodes + len(sizes) + np.concatenate([[0], np.cumsum(counts)[:-1]])
            parts.append((m, mx / m, my / m, side, first, counts))
            nodes += len(sizes)
            c, cq = cell_of[firsts][keep], q[firsts][keep]
            x0, y0, side = x0[c] + half[c] * (cq % 2), y0[c] + half[c] * (cq // 2), half[c]
            order, sizes = order[splits[cell_of]], group_sizes[keep]
            depth += 1
        return [np.concatenate([p[k] for p in parts]) for k in range(6)]

    @ti.kernel
    def _walk(xs: ti.template(), ys: ti.template(), m: ti.template(), cx: ti.template(), cy: ti.template(),
              side: ti.template(), first: ti.template(), nchild: ti.template(), out: ti.template(), n: ti.i32):
        for b in range(n):
            stack = ti.Vector.zero(ti.i32, 128)
            stack[0] = 0
            top = 1
            ax, ay = 0.0, 0.0
            while top > 0:
                top -= 1
                i = stack[top]
                dx, dy = cx[i] - xs[b], cy[i] - ys[b]
                if nchild[i] == 0 or side[i] * side[i] < 0.25 * (dx * dx + dy * dy):
                    r2 = dx * dx + dy * dy + 0.0001
                    k = m[i] / (r2 * ti.sqrt(r2))
                    ax += k * dx
                    ay += k * dy
                else:
                    for j in range(nchild[i]):
                        stack[top] = first[i] + nchild[i] - 1 - j
                        top += 1
            out[b, 0] = ax
            out[b, 1] = ay

    def barnes_hut(xs, ys, ms):
        fx, fy = fields(xs, ys)
        out = ti.field(ti.f32, shape=(max(len(xs), 1), 2))
        # A tree of depth at most 16 has at most 16 nodes per body, and one root.
        capacity = 16 * len(xs) + 1
        dtypes = [np.float32] * 4 + [np.int32] * 2
        tree_fields = [ti.field(ti.f32 if d == np.float32 else ti.i32, shape=capacity) for d in dtypes]
        def run():
            for f, dtype, a in zip(tree_fields, dtypes, _quadtree(xs, ys, ms)):
                padded = np.zeros(capacity, dtype)
                padded[:len(a)] = a
                f.from_numpy(padded)
            _walk(fx, fy, *tree_fields, out, len(xs))
            return out
        return run

    def ready(result):
        ti.sync()
        return result

    impls = {k: v for k, v in locals().items() if k in WORKLOADS or k.startswith("_") or k == "cnd"}
    # Taichi's implementations take their inputs into fields first (outside the timing, as
    # Weft's uploads are) and give a function that runs the kernels.
    return "taichi " + ".".join(map(str, ti.__version__)), impls, ready, True


WORKLOADS = {
    "dot": ["xs", "ys"],
    "black_scholes": ["spots", "strikes", "times"],
    "sort": ["xs"],
    "spmv_csr": ["vals", "cols", "lens", "x"],
    "segmented_sums": ["values", "lens"],
    "quickhull": ["xs", "ys"],
    "barnes_hut": ["xs", "ys", "ms"],
    "kmeans": ["X"],
    "spmv_ell": ["data", "idx", "x"],
    "cg": ["vals", "cols", "row_ptr", "b"],
    "bfs": ["offsets", "targets"],
}


# The helpers (jitted functions, kernels) each implementation calls, counted in its lines.
HELPERS = {
    "jax": {"spmv_csr": ["_spmv"], "segmented_sums": ["_segsum"], "kmeans": ["_kmeans"],
            "spmv_ell": ["_spmv_ell"], "cg": ["_cg"], "bfs": ["_bfs"]},
    "numba": {"cg": ["_spmv"], "barnes_hut": ["_build_tree"]},
    "taichi": {"dot": ["_dot"], "black_scholes": ["_black_scholes", "cnd"], "spmv_csr": ["_rows", "_spmv"],
               "segmented_sums": ["_rows", "_segsum"], "kmeans": ["_assign", "_accumulate", "_centres"],
               "spmv_ell": ["_spmv_ell"], "cg": ["_spmv", "_dot", "_cg_update", "_cg_direction"],
               "bfs": ["_bfs_level"], "barnes_hut": ["_quadtree", "_walk"]},
}


def lines_of_code(function):
    """Lines of one function, without blank lines and comments (decorators count)."""
    function = getattr(function, "func", function)  # Taichi's kernels and funcs
    try:
        source = inspect.getsource(getattr(function, "py_func", getattr(function, "__wrapped__", function)))
    except (OSError, TypeError):
        return None
    return sum(1 for line in source.splitlines() if line.strip() and not line.strip().startswith("#"))


def flattened(result):
    if hasattr(result, "to_numpy"):
        result = result.to_numpy()
    return np.asarray(result, dtype=np.float64).ravel().tolist()


def main():
    peer, plan_path = sys.argv[1], sys.argv[2]
    with open(plan_path) as f:
        plan = json.load(f)
    staged = False
    try:
        if peer == "numpy":
            version, impls, ready = numpy_peer()
        elif peer == "jax":
            version, impls, ready = jax_peer()
        elif peer == "numba":
            version, impls, ready = numba_peer()
        elif peer in ("taichi-cpu", "taichi-vulkan"):
            version, impls, ready, staged = taichi_peer(peer.split("-")[1])
        else:
            raise ValueError(f"unknown peer {peer}")
    except Exception as e:  # a peer that cannot start says why for every run
        for run in plan:
            print(json.dumps({"workload": run["workload"], "dir": run["dir"], "error": f"{type(e).__name__}: {e}"}), flush=True)
        return
    for run in plan:
        workload, directory = run["workload"], run["dir"]
        line = {"workload": workload, "dir": directory, "version": version}
        note = NOTES.get((peer, workload))
        if note:
            line["note"] = note
        if (peer, workload) in MISSING:
            line["missing"] = MISSING[(peer, workload)]
            print(json.dumps(line), flush=True)
            continue
        try:
            function = impls[workload]
            helpers = HELPERS.get(peer.split("-")[0], {}).get(workload, [])
            counts = [lines_of_code(f) for f in [function] + [impls[h] for h in helpers]]
            line["loc"] = sum(counts) if None not in counts else None
            args = [load(directory, name) for name in WORKLOADS[workload]]
            if staged:
                step = function(*args)
                call = step
            else:
                call = lambda: function(*args)
            result = ready(call())  # warm-up: compiles
            if run["check"]:
                line["output"] = flattened(result)
            times = []
            # As `weft bench` does: at least 3 repeats, and no more once 3 s have gone.
            while len(times) < run["repeat"]:
                start = time.perf_counter()
                ready(call())
                times.append((time.perf_counter() - start) * 1000.0)
                if len(times) >= 3 and sum(times) > 3000.0:
                    break
            line["times_ms"] = times
        except Exception as e:
            line["error"] = f"{type(e).__name__}: {e}"
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
