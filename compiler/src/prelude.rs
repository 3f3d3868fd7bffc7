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
];

pub fn is_prelude_name(name: &str) -> bool {
    PRELUDE_NAMES.contains(&name)
}
