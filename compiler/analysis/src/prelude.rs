//! The names the prelude provides. Their types and meanings live with the type checker and the
//! interpreter; name resolution only needs to know that they exist.

/// Every prelude function, as listed in the language brief.
pub const PRELUDE_NAMES: &[&str] = &[
    // Sequences.
    "len",
    "range",
    "indices",
    "map",
    "zip",
    "unzip",
    "concat",
    "flatten",
    "reverse",
    "replicate",
    "gather",
    "scatter",
    "permute",
    "filter",
    "sort",
    "count",
    "lengths",
    "partition",
    // Reductions and scans.
    "reduce",
    "sum",
    "product",
    "min",
    "max",
    "any",
    "all",
    "argmin",
    "argmax",
    "scan",
    "exclusive_scan",
    // Scalars.
    "abs",
    "sqrt",
    "exp",
    "log",
    "sin",
    "cos",
    "tan",
    "atan2",
    "erf",
    "pow",
    "floor",
    "ceil",
    "i32",
    "i64",
    "f32",
    "f64",
    "bool",
    // Data.
    "random_f32",
    "random_i32",
    "load_npy",
    "load_csv",
    // Output.
    "print",
    "plot",
    "hist",
    "image",
];

/// A prelude name, or the session's hidden input reader (`db::SESSION_INPUT`), which no
/// completion offers and only a session's statements use.
pub fn is_prelude_name(name: &str) -> bool {
    PRELUDE_NAMES.contains(&name) || name == crate::db::SESSION_INPUT
}

/// What an editor shows for a prelude function: its signature, as Weft writes types, and what
/// it does (from the language brief).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreludeDoc {
    pub name: &'static str,
    /// The call with named parameters and the result type, `len(xs: [a]) -> i32`; overloads
    /// separated by ` | `.
    pub signature: &'static str,
    pub doc: &'static str,
}

macro_rules! docs {
    ($($name:literal: $signature:literal, $doc:literal;)*) => {
        &[$(PreludeDoc { name: $name, signature: $signature, doc: $doc },)*]
    };
}

/// One entry per `PRELUDE_NAMES` name, in the same order.
pub const PRELUDE_DOCS: &[PreludeDoc] = docs! {
    "len": "len(xs: [a]) -> i32", "The number of elements of `xs`.";
    "range": "range(n: i32) -> [i32] | range(a: i32, b: i32) -> [i32] | range(a: i32, b: i32, step: i32) -> [i32]", "The integers from `a` (default 0) up to `b` (exclusive), by `step` (default 1; never 0).";
    "indices": "indices(xs: [a]) -> [i32]", "`range(len(xs))`: the positions of `xs`.";
    "map": "map(f: (a, ...) -> r, xs: [a], ...) -> [r]", "`f` applied to the elements of one or more sequences, which must have equal lengths.";
    "zip": "zip(xs: [a], ys: [b], ...) -> [(a, b, ...)]", "The sequences' elements paired up. Unlike Python, the lengths must be equal.";
    "unzip": "unzip(ps: [(a, b, ...)]) -> ([a], [b], ...)", "A sequence of tuples as a tuple of sequences.";
    "concat": "concat(xs: [a], ys: [a]) -> [a]", "`xs` followed by `ys` (NESL's `++`).";
    "flatten": "flatten(xss: [[a]]) -> [a]", "The inner sequences one after another.";
    "reverse": "reverse(xs: [a]) -> [a]", "`xs` in reverse order.";
    "replicate": "replicate(x: a, n: i32) -> [a]", "`n` copies of `x` (NESL's `dist`).";
    "gather": "gather(xs: [a], idx: [i32]) -> [a]", "`r[i] = xs[idx[i]]`; each index must be in range.";
    "scatter": "scatter(src: [a], idx: [i32], dst: [a]) -> [a]", "`dst` with `dst[idx[i]] = src[i]`; with duplicate indexes one written value wins, unspecified which.";
    "permute": "permute(xs: [a], idx: [i32]) -> [a]", "`r[idx[i]] = xs[i]`, where `idx` must be a permutation of `indices(xs)`.";
    "filter": "filter(p: a -> bool, xs: [a]) -> [a]", "The elements of `xs` for which `p` holds, in order.";
    "sort": "sort(xs: [a]) -> [a]", "`xs` in ascending order; tuples lexicographically. Stable.";
    "count": "count(flags: [bool]) -> i32", "How many flags are true.";
    "lengths": "lengths(xss: [[a]]) -> [i32]", "The length of each inner sequence.";
    "partition": "partition(xs: [a], lens: [i32]) -> [[a]]", "`xs` split into consecutive segments of the given lengths, which must sum to `len(xs)`.";
    "reduce": "reduce(op: (a, a) -> a, xs: [a], init: a) -> a", "`op` folded over `xs`, starting from `init` (applied once, as `functools.reduce` does). `op` must be associative.";
    "sum": "sum(xs: [a]) -> a", "The sum of `xs` (0 when empty).";
    "product": "product(xs: [a]) -> a", "The product of `xs` (1 when empty).";
    "min": "min(xs: [a]) -> a | min(x: a, y: a) -> a", "The least element (an error on an empty sequence), or the lesser of two scalars.";
    "max": "max(xs: [a]) -> a | max(x: a, y: a) -> a", "The greatest element (an error on an empty sequence), or the greater of two scalars.";
    "any": "any(flags: [bool]) -> bool", "Whether some flag is true (false when empty).";
    "all": "all(flags: [bool]) -> bool", "Whether every flag is true (true when empty).";
    "argmin": "argmin(xs: [a]) -> i32", "The first index of the least element.";
    "argmax": "argmax(xs: [a]) -> i32", "The first index of the greatest element.";
    "scan": "scan(op: (a, a) -> a, xs: [a]) -> [a]", "The inclusive scan: `r[i]` is `op` folded over `xs[0..=i]`.";
    "exclusive_scan": "exclusive_scan(op: (a, a) -> a, init: a, xs: [a]) -> [a]", "The exclusive scan from `init`: NESL's `plus_scan` is `exclusive_scan(add, 0, xs)`.";
    "abs": "abs(x: a) -> a", "The absolute value.";
    "sqrt": "sqrt(x: f) -> f", "The square root.";
    "exp": "exp(x: f) -> f", "`e` to the power `x`.";
    "log": "log(x: f) -> f", "The natural logarithm.";
    "sin": "sin(x: f) -> f", "The sine, in radians.";
    "cos": "cos(x: f) -> f", "The cosine, in radians.";
    "tan": "tan(x: f) -> f", "The tangent, in radians.";
    "atan2": "atan2(y: f, x: f) -> f", "The angle of the point `(x, y)`, in radians.";
    "erf": "erf(x: f) -> f", "The error function.";
    "pow": "pow(x: a, y: a) -> a", "`x` to the power `y`.";
    "floor": "floor(x: f) -> f", "The greatest integer not above `x`, as the float type of `x`.";
    "ceil": "ceil(x: f) -> f", "The least integer not below `x`, as the float type of `x`.";
    "i32": "i32(x) -> i32", "`x` as an `i32`; floats truncate toward zero, like Python's `int`.";
    "i64": "i64(x) -> i64", "`x` as an `i64`; floats truncate toward zero.";
    "f32": "f32(x) -> f32", "`x` as an `f32`.";
    "f64": "f64(x) -> f64", "`x` as an `f64`.";
    "bool": "bool(x) -> bool", "Whether `x` is nonzero.";
    "random_f32": "random_f32(n: i32, seed: i32) -> [f32]", "`n` uniform values in [0, 1); element `i` is a pure function of `(seed, i)`, the same on every executor.";
    "random_i32": "random_i32(n: i32, lo: i32, hi: i32, seed: i32) -> [i32]", "`n` uniform values in [lo, hi); element `i` is a pure function of `(seed, i)`.";
    "load_npy": "load_npy(path: str) -> [a]", "The array in a `.npy` file (top level only; the path is a string literal).";
    "load_csv": "load_csv(path: str) -> [[f32]]", "The rows of a CSV file (top level only; the path is a string literal).";
    "print": "print(v, ...)", "Prints the values separated by spaces, as Python does (top level only).";
    "plot": "plot(xs: [a], ys: [b])", "Draws the points `(xs[i], ys[i])` joined by a line (top level only; the lengths must be equal). A notebook shows the chart; `weft run` and the REPL write it to a file and print its path.";
    "hist": "hist(xs: [a], bins: i32)", "Draws a histogram of `xs` in `bins` equal bins between its least and greatest value (top level only; 1 to 1000 bins).";
    "image": "image(xss: [[a]])", "Draws the rows of `xss` as an image, each value a pixel coloured from least (dark) to greatest (bright) (top level only; the rows must have equal lengths).";
};

/// The docs of a prelude function.
pub fn prelude_doc(name: &str) -> Option<&'static PreludeDoc> {
    PRELUDE_DOCS.iter().find(|d| d.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_prelude_name_has_docs_in_order() {
        let documented: Vec<&str> = PRELUDE_DOCS.iter().map(|d| d.name).collect();
        assert_eq!(documented, PRELUDE_NAMES);
        for doc in PRELUDE_DOCS {
            assert!(doc.signature.starts_with(&format!("{}(", doc.name)), "{doc:?}");
        }
    }

    #[test]
    fn every_output_statement_is_a_prelude_name() {
        for sink in weft_core::Sink::ALL {
            assert!(PRELUDE_NAMES.contains(&sink.name()), "{sink:?}");
        }
    }
}
