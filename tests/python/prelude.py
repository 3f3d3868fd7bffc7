#!/usr/bin/env python3
"""The Weft prelude in plain CPython (standard library only), and a runner for Weft samples.

Every Weft program is a Python program. This module defines every function of the Weft prelude
(docs/language.md, "The prelude") so that a sample can run under CPython and give the reference
output that the Weft executors are compared against:

    python3 tests/python/prelude.py samples/quicksort.weft      # run one program
    python3 tests/python/prelude.py --write-expected            # regenerate tests/data/samples/*.expected
    python3 tests/python/prelude.py --check-expected            # compare with the stored files
    python3 tests/python/prelude.py --f32 samples/kmeans.weft   # run with f32 emulation (see below)
    python3 tests/python/prelude.py --compare-f32               # every sample, f64 against f32 emulation
    python3 tests/python/prelude.py --compare-perturbed 1e-6    # every sample, against perturbed inputs

Run from the repository root: `load_npy` and `load_csv` paths are relative to the working
directory, as Python's `open` is.

Differences from Weft that the samples must stay clear of (see docs/language.md, "Where Weft
differs from Python"):

- Floats are Python's doubles, not f32, and print as doubles. The expected outputs are compared
  with a relative tolerance on the Rust side.
- Integers do not wrap at 32 bits (the casts `i32`/`i64` do wrap).
- There is no type checker: a program that Weft rejects may still run here.

The program sees only the prelude: Python's own built-ins (`int`, `sorted`, `open`, ...) are not
in scope, so a sample that uses one fails here as it does in Weft.

`--f32` emulates single precision: every float literal is rounded to f32, and the result of every
arithmetic operator, of the scalar functions and of each step of `sum`/`product` is rounded to
f32. Rounding a double result of `+ - * /` or `sqrt` on f32 operands to f32 gives exactly the IEEE
f32 result, so this is bit-exact for those operations evaluated left to right. It is a tool to
check that a sample's discrete outputs (counts, comparisons, iteration numbers) do not depend on
the precision; the expected files are always written in double precision. `--compare-perturbed EPS` is a
stronger test of the same kind: it scales every value of `random_f32` by 1 +- EPS (a sign per
element) and compares the outputs with the unperturbed ones, token by token (integers and words
exactly, floats within a relative 1e-3).
"""

import ast
import builtins
import functools
import itertools
import math
import os
import struct
import subprocess
import sys

_b = builtins
_M32 = 0xFFFFFFFF

# Set by --f32: round float results to single precision.
_F32_MODE = False


class WeftError(Exception):
    """A Weft run-time error (the code is the one docs/language.md lists)."""

    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code


def _seq(x, what):
    if not isinstance(x, list):
        raise TypeError(f"{what} expects a sequence (a list), got {type(x).__name__}")
    return x


def _f32r(x):
    """x rounded to the nearest f32 (as a Python float)."""
    x = float(x)
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def _round_result(x):
    """In --f32 mode, round a float result to f32; anything else is returned unchanged."""
    if _F32_MODE and type(x) is float:
        return _f32r(x)
    return x


# ---------------------------------------------------------------------------------------------
# Sequences


def len(xs):  # noqa: A001 - the prelude shadows the built-in on purpose
    return _b.len(xs)


def range(*args):  # noqa: A001
    if not 1 <= _b.len(args) <= 3:
        raise TypeError("range takes 1 to 3 arguments")
    if _b.len(args) == 3 and args[2] == 0:
        raise WeftError("E0406", "range step must not be zero")
    return list(_b.range(*args))


def indices(xs):
    return list(_b.range(_b.len(_seq(xs, "indices"))))


def _equal_lengths(name, xss):
    if _b.len(xss) == 0:
        raise TypeError(f"{name} needs at least one sequence")
    for xs in xss:
        _seq(xs, name)
    n = _b.len(xss[0])
    for xs in xss[1:]:
        if _b.len(xs) != n:
            raise WeftError(
                "E0403",
                f"{name}: sequences of different lengths ({', '.join(str(_b.len(s)) for s in xss)})",
            )


def map(f, *xss):  # noqa: A001
    _equal_lengths("map", xss)
    return [f(*args) for args in _b.zip(*xss)]


def zip(*xss):  # noqa: A001
    _equal_lengths("zip", xss)
    return list(_b.zip(*xss))


def unzip(ps):
    """A list of n-tuples to an n-tuple of lists. An empty input gives ([], []): the width is a
    type-level fact that CPython does not know."""
    _seq(ps, "unzip")
    if _b.len(ps) == 0:
        return ([], [])
    width = _b.len(ps[0])
    return tuple([p[k] for p in ps] for k in _b.range(width))


def concat(xs, ys):
    return list(_seq(xs, "concat")) + list(_seq(ys, "concat"))


def flatten(xss):
    return [x for xs in _seq(xss, "flatten") for x in xs]


def reverse(xs):
    return list(_b.reversed(_seq(xs, "reverse")))


def replicate(x, n):
    if n < 0:
        raise WeftError("E0406", f"replicate: negative count {n}")
    return [x] * n


def _index(xs, i, what):
    n = _b.len(xs)
    if not -n <= i < n:
        raise WeftError("E0400", f"{what}: index {i} out of range for length {n}")
    return i + n if i < 0 else i


def gather(xs, idx):
    _seq(xs, "gather")
    return [xs[_index(xs, i, "gather")] for i in _seq(idx, "gather")]


def scatter(src, idx, dst):
    _equal_lengths("scatter", [src, idx])
    out = list(_seq(dst, "scatter"))
    for v, i in _b.zip(src, idx):
        out[_index(out, i, "scatter")] = v
    return out


def permute(xs, idx):
    _equal_lengths("permute", [xs, idx])
    n = _b.len(xs)
    if sorted(idx) != list(_b.range(n)):
        raise WeftError("E0405", "permute: the indexes are not a permutation")
    out = [None] * n
    for v, i in _b.zip(xs, idx):
        out[i] = v
    return out


def filter(p, xs):  # noqa: A001
    return [x for x in _seq(xs, "filter") if p(x)]


def _sort_key(x):
    if type(x) is float:
        return (1, 0.0) if math.isnan(x) else (0, x)
    if type(x) is tuple:
        return tuple(_sort_key(c) for c in x)
    return x


def sort(xs):
    return sorted(_seq(xs, "sort"), key=_sort_key)


def count(flags):
    return _b.sum(1 for f in _seq(flags, "count") if f)


def lengths(xss):
    return [_b.len(xs) for xs in _seq(xss, "lengths")]


def partition(xs, lens):
    _seq(xs, "partition")
    if _b.sum(lens) != _b.len(xs) or _b.any(k < 0 for k in lens):
        raise WeftError("E0403", f"partition: lengths {lens} do not split {_b.len(xs)} elements")
    out = []
    start = 0
    for k in lens:
        out.append(xs[start : start + k])
        start += k
    return out


# ---------------------------------------------------------------------------------------------
# Reductions and scans


def reduce(op, xs, init):
    return functools.reduce(op, _seq(xs, "reduce"), init)


def sum(xs):  # noqa: A001
    acc = 0
    for x in _seq(xs, "sum"):
        acc = _round_result(acc + x)
    return acc


def product(xs):
    acc = 1
    for x in _seq(xs, "product"):
        acc = _round_result(acc * x)
    return acc


def _extreme(name, pick, args):
    if _b.len(args) == 1:
        xs = _seq(args[0], name)
        if _b.len(xs) == 0:
            raise WeftError("E0404", f"{name} of an empty sequence")
        return pick(xs)
    if _b.len(args) == 2:
        if isinstance(args[0], list) or isinstance(args[1], list):
            raise TypeError(f"{name}(a, b) takes two scalars")
        return pick(args[0], args[1])
    raise TypeError(f"{name} takes a sequence or two scalars")


def min(*args):  # noqa: A001
    return _extreme("min", _b.min, args)


def max(*args):  # noqa: A001
    return _extreme("max", _b.max, args)


def any(bs):  # noqa: A001
    return _b.any(_seq(bs, "any"))


def all(bs):  # noqa: A001
    return _b.all(_seq(bs, "all"))


def argmin(xs):
    if _b.len(_seq(xs, "argmin")) == 0:
        raise WeftError("E0404", "argmin of an empty sequence")
    best = 0
    for i, x in enumerate(xs):
        if x < xs[best]:
            best = i
    return best


def argmax(xs):
    if _b.len(_seq(xs, "argmax")) == 0:
        raise WeftError("E0404", "argmax of an empty sequence")
    best = 0
    for i, x in enumerate(xs):
        if x > xs[best]:
            best = i
    return best


def scan(op, xs):
    return list(itertools.accumulate(_seq(xs, "scan"), op))


def exclusive_scan(op, init, xs):
    out = []
    acc = init
    for x in _seq(xs, "exclusive_scan"):
        out.append(acc)
        acc = op(acc, x)
    return out


# ---------------------------------------------------------------------------------------------
# Scalars (IEEE results where Python's math module would raise)


def abs(x):  # noqa: A001
    return _b.abs(x)


def _float_fn(name, f):
    def g(*args):
        for a in args:
            if type(a) is not float:
                raise TypeError(f"{name} takes floats, got {type(a).__name__} (write f32(x))")
        try:
            r = f(*args)
        except OverflowError:
            r = math.inf
        except ValueError:
            r = math.nan
        return _round_result(r)

    g.__name__ = name
    return g


def _sqrt(x):
    return math.nan if x < 0 else math.sqrt(x)


def _log(x):
    if x == 0:
        return -math.inf
    return math.nan if x < 0 or math.isnan(x) else math.log(x)


def _exp(x):
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


sqrt = _float_fn("sqrt", _sqrt)
exp = _float_fn("exp", _exp)
log = _float_fn("log", _log)
sin = _float_fn("sin", math.sin)
cos = _float_fn("cos", math.cos)
tan = _float_fn("tan", math.tan)
atan2 = _float_fn("atan2", math.atan2)
erf = _float_fn("erf", math.erf)


def _rounding(name, f):
    def g(x):
        if type(x) is not float:
            raise TypeError(f"{name} takes a float, got {type(x).__name__} (write f32(x))")
        if math.isinf(x) or math.isnan(x):
            return x
        # IEEE floor and ceil keep the sign of a zero result: ceil(-0.5) is -0.0.
        return math.copysign(float(f(x)), x)

    g.__name__ = name
    return g


floor = _rounding("floor", math.floor)
ceil = _rounding("ceil", math.ceil)


def pow(x, y):  # noqa: A001
    if type(x) is int and type(y) is int:
        if y < 0:
            raise WeftError("E0406", f"pow: negative integer exponent {y}")
        return x**y
    if type(x) is not float or type(y) is not float:
        raise TypeError("pow takes two integers or two floats")
    try:
        r = math.pow(x, y)
    except OverflowError:
        r = math.inf
    except ValueError:
        r = math.nan
    return _round_result(r)


def _to_int(x, bits):
    if type(x) is float:
        if math.isnan(x):
            return 0
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        if x <= lo:
            return lo
        if x >= hi:
            return hi
        return int(x)  # truncates toward zero
    x = int(x)  # an integer or a bool: wrap
    x &= (1 << bits) - 1
    return x - (1 << bits) if x >= 1 << (bits - 1) else x


def i32(x):
    return _to_int(x, 32)


def i64(x):
    return _to_int(x, 64)


def f32(x):
    return _f32r(x)


def f64(x):
    return float(x)


def bool(x):  # noqa: A001
    return _b.bool(x)


# ---------------------------------------------------------------------------------------------
# Data


def _mix32(x):
    x ^= x >> 16
    x = (x * 0x7FEB352D) & _M32
    x ^= x >> 15
    x = (x * 0x846CA68B) & _M32
    x ^= x >> 16
    return x


def _bits(seed, i):
    return _mix32(_mix32(seed & _M32) ^ (i & _M32))


# Set by --compare-perturbed (through the environment of the child process): every value of
# random_f32 is scaled by 1 +- eps, to test that a sample's discrete results have a margin.
_PERTURB = float(os.environ.get("WEFT_PERTURB", "0"))


def random_f32(n, seed):
    if n < 0:
        raise WeftError("E0406", f"random_f32: negative count {n}")
    xs = [(_bits(seed, i) >> 8) * 2.0**-24 for i in _b.range(n)]
    if _PERTURB:
        xs = [x * (1.0 + _PERTURB * (1 if _bits(seed + 7919, i) & 1 else -1)) for i, x in enumerate(xs)]
    return xs


def random_i32(n, lo, hi, seed):
    if n < 0:
        raise WeftError("E0406", f"random_i32: negative count {n}")
    if hi <= lo:
        raise WeftError("E0406", f"random_i32: empty range [{lo}, {hi})")
    return [lo + _bits(seed, i) % (hi - lo) for i in _b.range(n)]


_NPY_DTYPES = {
    "<f4": ("f", 4, float),
    "<f8": ("d", 8, float),
    "<i4": ("i", 4, int),
    "<i8": ("q", 8, int),
    "|b1": ("?", 1, _b.bool),
}


def _load_error(path, message):
    return WeftError("E0407", f"{path}: {message}")


def load_npy(path):
    """A .npy file (format version 1, 2 or 3, C order) as nested lists: a k-dimensional array
    gives a k-deep sequence."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise _load_error(path, f"cannot read the file ({e.strerror})") from None
    if data[:6] != b"\x93NUMPY" or _b.len(data) < 10:
        raise _load_error(path, "not a .npy file (bad magic)")
    major = data[6]
    if major == 1:
        (hlen,) = struct.unpack("<H", data[8:10])
        start = 10
    elif major in (2, 3):
        if _b.len(data) < 12:
            raise _load_error(path, "truncated header")
        (hlen,) = struct.unpack("<I", data[8:12])
        start = 12
    else:
        raise _load_error(path, f"unsupported .npy format version {major}")
    try:
        header = ast.literal_eval(data[start : start + hlen].decode("latin1" if major < 3 else "utf8"))
    except (ValueError, SyntaxError, UnicodeDecodeError):
        raise _load_error(path, "malformed header") from None
    if not isinstance(header, dict) or not {"descr", "fortran_order", "shape"} <= set(header):
        raise _load_error(path, "malformed header")
    descr = header["descr"]
    if descr == "<b1":
        descr = "|b1"
    if descr not in _NPY_DTYPES:
        raise _load_error(path, f"unsupported dtype {descr!r} (supported: <f4 <f8 <i4 <i8 |b1)")
    if header["fortran_order"]:
        raise _load_error(path, "Fortran-order arrays are not supported; save in C order")
    shape = header["shape"]
    if not isinstance(shape, tuple) or _b.len(shape) == 0:
        raise _load_error(path, f"unsupported shape {shape!r} (a 0-d array is not a sequence)")
    code, size, conv = _NPY_DTYPES[descr]
    total = math.prod(shape)
    body = data[start + hlen :]
    if _b.len(body) != total * size:
        raise _load_error(path, f"expected {total * size} bytes of data, found {_b.len(body)}")
    flat = [conv(v) for v in struct.unpack(f"<{total}{code}", body)]

    def nest(values, dims):
        if _b.len(dims) == 1:
            return values
        step = math.prod(dims[1:])
        return [nest(values[k * step : (k + 1) * step], dims[1:]) for k in _b.range(dims[0])]

    return nest(flat, list(shape))


def _csv_field(path, lineno, text):
    t = text.strip()
    low = t.lower()
    try:
        if "." in t or "e" in low or "inf" in low or "nan" in low:
            return float(t)
        return int(t)
    except ValueError:
        raise _load_error(path, f"line {lineno}: {text!r} is not a number") from None


def load_csv(path):
    """A CSV file of numbers (no header, comma-separated) as a list of rows; empty lines are
    skipped. A field is an int unless it has a '.', an 'e', 'inf' or 'nan'."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise _load_error(path, f"cannot read the file ({e.strerror})") from None
    except UnicodeDecodeError:
        raise _load_error(path, "not UTF-8 text") from None
    rows = []
    for lineno, line in enumerate(lines, 1):
        if line.strip() == "":
            continue
        rows.append([_csv_field(path, lineno, field) for field in line.split(",")])
    return rows


# ---------------------------------------------------------------------------------------------
# Charts. CPython draws nothing: each chart statement prints one line with the data it would
# draw, in the form the Rust test hosts capture a chart in (`common::differential`), so that the
# executors' chart data is checked against CPython's like any printed value.


def _chart_numbers(xs, what):
    return [float(x) for x in _seq(xs, what)]


def plot(xs, ys):
    xs, ys = _chart_numbers(xs, "plot"), _chart_numbers(ys, "plot")
    if _b.len(xs) != _b.len(ys):
        raise WeftError("E0403", f"plot: {_b.len(xs)} x values and {_b.len(ys)} y values")
    print("plot", xs, ys)


def hist(xs, bins):
    xs = _chart_numbers(xs, "hist")
    if not 1 <= bins <= 1000:
        raise WeftError("E0406", f"hist: {bins} bins")
    print("hist", xs, bins)


def image(xss):
    rows = [_chart_numbers(row, "image") for row in _seq(xss, "image")]
    if not rows or not rows[0]:
        raise WeftError("E0404", "image: no pixels")
    if _b.any(_b.len(row) != _b.len(rows[0]) for row in rows):
        raise WeftError("E0403", "image: rows of different lengths")
    print("image", _b.len(rows[0]), _b.len(rows), [v for row in rows for v in row])


# ---------------------------------------------------------------------------------------------
# Running programs

PRELUDE_NAMES = [
    "len", "range", "indices", "map", "zip", "unzip", "concat", "flatten", "reverse",
    "replicate", "gather", "scatter", "permute", "filter", "sort", "count", "lengths",
    "partition", "reduce", "sum", "product", "min", "max", "any", "all", "argmin", "argmax",
    "scan", "exclusive_scan", "abs", "sqrt", "exp", "log", "sin", "cos", "tan", "atan2", "erf",
    "pow", "floor", "ceil", "i32", "i64", "f32", "f64", "bool", "random_f32", "random_i32",
    "load_npy", "load_csv", "plot", "hist", "image",
]  # fmt: skip


def prelude():
    """The globals a Weft program runs with: the prelude and `print`, and nothing else."""
    g = {name: globals()[name] for name in PRELUDE_NAMES}
    g["print"] = _b.print
    return g


_I32_WARNED = [False]


def _r(x):
    """--f32 mode: round float results; warn once about integers outside the i32 range."""
    t = type(x)
    if t is float:
        return _f32r(x)
    if t is int and not -(1 << 31) <= x < (1 << 31) and not _I32_WARNED[0]:
        _I32_WARNED[0] = True
        print(f"warning: integer {x} is outside the i32 range (Weft would wrap it)", file=sys.stderr)
    return x


class _DropAnnotations(ast.NodeTransformer):
    """Weft never evaluates annotations; CPython would (`xs: [a]` names an unbound `a`)."""

    def visit_FunctionDef(self, node):
        self.generic_visit(node)
        node.returns = None
        for arg in node.args.args:
            arg.annotation = None
        return node


class _F32Rounding(ast.NodeTransformer):
    """Rounds every float literal and every operator result to f32 (for --f32)."""

    def _wrap(self, node):
        return ast.copy_location(
            ast.Call(func=ast.Name(id="__weft_r", ctx=ast.Load()), args=[node], keywords=[]), node
        )

    def visit_Constant(self, node):
        if type(node.value) is float:
            return ast.copy_location(ast.Constant(value=_f32r(node.value)), node)
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        return self._wrap(node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        return node if isinstance(node.op, ast.Not) else self._wrap(node)

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        if not isinstance(node.target, ast.Name):
            return node
        load = ast.Name(id=node.target.id, ctx=ast.Load())
        value = self._wrap(ast.BinOp(left=load, op=node.op, right=node.value))
        return ast.copy_location(ast.Assign(targets=[node.target], value=value), node)


def run_file(path, f32_mode=False):
    global _F32_MODE
    with open(path, encoding="utf-8") as f:
        source = f.read()
    tree = ast.fix_missing_locations(_DropAnnotations().visit(ast.parse(source, filename=path)))
    g = prelude()
    if f32_mode:
        _F32_MODE = True
        tree = ast.fix_missing_locations(_F32Rounding().visit(tree))
        g["__weft_r"] = _r
    g["__builtins__"] = dict(g)
    g["__name__"] = "__weft__"
    exec(compile(tree, path, "exec"), g)


def _repo_root():
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _samples(root):
    d = os.path.join(root, "samples")
    return sorted(n[:-5] for n in os.listdir(d) if n.endswith(".weft"))


def _run_sample(root, name, f32_mode=False, perturb=None):
    cmd = [sys.executable, os.path.abspath(__file__)]
    if f32_mode:
        cmd.append("--f32")
    cmd.append(os.path.join("samples", name + ".weft"))
    env = dict(os.environ)
    env.pop("WEFT_PERTURB", None)
    if perturb is not None:
        env["WEFT_PERTURB"] = str(perturb)
    return subprocess.run(cmd, cwd=root, capture_output=True, text=True, env=env)


def write_expected(check_only=False):
    root = _repo_root()
    out_dir = os.path.join(root, "tests", "data", "samples")
    os.makedirs(out_dir, exist_ok=True)
    failed = []
    for name in _samples(root):
        p = _run_sample(root, name)
        if p.returncode != 0:
            failed.append(name)
            print(f"FAILED: samples/{name}.weft (exit {p.returncode})\n{p.stderr}", file=sys.stderr)
            continue
        target = os.path.join(out_dir, name + ".expected")
        if check_only:
            try:
                with open(target, encoding="utf-8") as f:
                    old = f.read()
            except OSError:
                old = None
            if old != p.stdout:
                failed.append(name)
                print(f"DIFFERS: {target}", file=sys.stderr)
            else:
                print(f"ok  {name}")
        else:
            with open(target, "w", encoding="utf-8") as f:
                f.write(p.stdout)
            print(f"wrote tests/data/samples/{name}.expected")
    if failed:
        print(f"{_b.len(failed)} sample(s) failed: {', '.join(failed)}", file=sys.stderr)
        sys.exit(1)


def _tokens(text):
    return text.replace("[", " [ ").replace("]", " ] ").replace("(", " ( ").replace(")", " ) ").replace(",", " , ").split()


def _number(tok):
    try:
        return int(tok)
    except ValueError:
        pass
    try:
        return float(tok)
    except ValueError:
        return None


def compare_outputs(a, b, rel=1e-3):
    """Token by token: integers and words equal, floats within a relative tolerance. Returns a
    list of differences (empty when the outputs agree)."""
    ta, tb = _tokens(a), _tokens(b)
    if _b.len(ta) != _b.len(tb):
        return [f"token counts differ: {_b.len(ta)} and {_b.len(tb)}"]
    diffs = []
    for x, y in _b.zip(ta, tb):
        nx, ny = _number(x), _number(y)
        if type(nx) is float or type(ny) is float:
            if nx is None or ny is None:
                diffs.append(f"{x} / {y}")
            elif not (nx == ny or _b.abs(nx - ny) <= rel * _b.max(_b.abs(nx), _b.abs(ny))):
                diffs.append(f"{x} / {y}")
        elif x != y:
            diffs.append(f"{x} / {y}")
    return diffs


def compare_variant(f32_mode=False, perturb=None):
    root = _repo_root()
    bad = 0
    for name in _samples(root):
        p64 = _run_sample(root, name)
        p32 = _run_sample(root, name, f32_mode=f32_mode, perturb=perturb)
        if p64.returncode != 0 or p32.returncode != 0:
            bad += 1
            print(f"FAILED {name}:\n{p64.stderr}{p32.stderr}")
            continue
        diffs = compare_outputs(p64.stdout, p32.stdout)
        warn = p32.stderr.strip()
        print(f"{'ok  ' if not diffs else 'DIFF'} {name}" + (f"  ({warn})" if warn else ""))
        for d in diffs[:10]:
            print(f"       {d}")
        bad += _b.bool(diffs)
    sys.exit(1 if bad else 0)


def main(argv):
    if argv == ["--write-expected"]:
        write_expected()
    elif argv == ["--check-expected"]:
        write_expected(check_only=True)
    elif argv == ["--compare-f32"]:
        compare_variant(f32_mode=True)
    elif _b.len(argv) == 2 and argv[0] == "--compare-perturbed":
        compare_variant(perturb=float(argv[1]))
    elif _b.len(argv) == 2 and argv[0] == "--f32":
        run_file(argv[1], f32_mode=True)
    elif _b.len(argv) == 1 and not argv[0].startswith("-"):
        run_file(argv[0])
    else:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main(sys.argv[1:])
