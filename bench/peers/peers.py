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

    return "numpy " + np.__version__, locals(), lambda r: r


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

    def ready(result):
        return result.block_until_ready()

    impls = {k: v for k, v in locals().items() if k in WORKLOADS}
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

    impls = {k: v for k, v in locals().items() if k in WORKLOADS}
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

    def ready(result):
        ti.sync()
        return result

    impls = {k: v for k, v in locals().items() if k in WORKLOADS}
    # Taichi's implementations take their inputs into fields first (outside the timing, as
    # Weft's uploads are) and give a function that runs the kernels.
    return "taichi " + ".".join(map(str, ti.__version__)), impls, ready, True


WORKLOADS = {
    "dot": ["xs", "ys"],
    "black_scholes": ["spots", "strikes", "times"],
    "sort": ["xs"],
    "spmv_csr": ["vals", "cols", "lens", "x"],
    "segmented_sums": ["values", "lens"],
}


def lines_of_code(function):
    """Lines of the implementation, without blank lines and comments (decorators count)."""
    try:
        source = inspect.getsource(getattr(function, "py_func", getattr(function, "__wrapped__", function)))
    except (OSError, TypeError):
        return None
    return sum(1 for line in source.splitlines() if line.strip() and not line.strip().startswith("#"))


def flattened(result, n_out):
    if hasattr(result, "to_numpy"):
        result = result.to_numpy()
    array = np.asarray(result, dtype=np.float64).ravel()
    return array[:n_out].tolist() if n_out is not None else array.tolist()


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
        try:
            function = impls[workload]
            line["loc"] = lines_of_code(function)
            args = [load(directory, name) for name in WORKLOADS[workload]]
            if staged:
                step = function(*args)
                call = step
            else:
                call = lambda: function(*args)
            result = ready(call())  # warm-up: compiles
            if run["check"]:
                n_out = len(args[2]) if workload == "spmv_csr" else (len(args[1]) if workload == "segmented_sums" else None)
                if workload == "black_scholes":
                    n_out = 2 * len(args[0])
                if workload == "sort":
                    n_out = len(args[0])
                line["output"] = flattened(result, n_out)
            times = []
            for _ in range(run["repeat"]):
                start = time.perf_counter()
                ready(call())
                times.append((time.perf_counter() - start) * 1000.0)
            line["times_ms"] = times
        except Exception as e:
            line["error"] = f"{type(e).__name__}: {e}"
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
