//! Symbolic integers: linear combinations of *atoms* (a parameter's length, an integer
//! parameter, a comprehension index, a filter's count, ...) with integer coefficients, and the
//! little arithmetic the proofs need: equality, a nonzero constant difference, and
//! non-negativity.
//!
//! An atom stands for one value that does not change while it is in scope. Two atoms with
//! different ids may still be equal at run time; the proofs only ever conclude from the
//! *structure* of an expression (all atoms cancel), so they stay sound.
//!
//! The arithmetic is exact (`i64`, checked), and the program's wraps: the walk keeps an
//! arithmetic result symbolic only when `fits_i32` shows, from the atoms' ranges, that the
//! program computes it without wrapping.

use std::fmt;

pub type AtomId = u32;

/// What an atom stands for, and what is known of it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Atom {
    /// How it prints: `len(xs)`, `n`, `count(x > 0)`, `max(n - 1, 0)`.
    pub name: String,
    /// A length or a count: never negative.
    pub nonneg: bool,
    /// An index from a `range`: `lower <= atom`, and `atom < upper`.
    pub lower: Option<Linear>,
    pub upper: Option<Linear>,
    /// What the atom is a function of, when it is one.
    pub definition: Option<Definition>,
}

/// An atom that is a function of other atoms: a clamped value, or a product that is not linear.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Definition {
    /// `max(value, 0)`, the length of a `range` or slice that Python clamps.
    Max0(Linear),
    /// The length of a comprehension over two sequences.
    Product(Linear, Linear),
}

impl Definition {
    pub fn operands(&self) -> Vec<&Linear> {
        match self {
            Definition::Max0(value) => vec![value],
            Definition::Product(a, b) => vec![a, b],
        }
    }
}

/// `constant + Σ coefficient · atom`, with the terms sorted by atom and no zero coefficient.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Linear {
    pub constant: i64,
    pub terms: Vec<(AtomId, i64)>,
}

impl Linear {
    pub fn constant(value: i64) -> Linear {
        Linear { constant: value, terms: Vec::new() }
    }

    pub fn atom(atom: AtomId) -> Linear {
        Linear { constant: 0, terms: vec![(atom, 1)] }
    }

    pub fn as_constant(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.constant)
    }

    /// The atom this is, when it is exactly one atom.
    pub fn as_atom(&self) -> Option<AtomId> {
        match self.terms.as_slice() {
            [(atom, 1)] if self.constant == 0 => Some(*atom),
            _ => None,
        }
    }

    pub fn mentions(&self, pred: impl Fn(AtomId) -> bool) -> bool {
        self.terms.iter().any(|&(a, _)| pred(a))
    }

    /// `self + k · other`, or `None` when a coefficient overflows.
    pub fn add_scaled(&self, other: &Linear, k: i64) -> Option<Linear> {
        let mut terms = self.terms.clone();
        for &(atom, c) in &other.terms {
            let c = c.checked_mul(k)?;
            match terms.binary_search_by_key(&atom, |t| t.0) {
                Ok(i) => terms[i].1 = terms[i].1.checked_add(c)?,
                Err(i) => terms.insert(i, (atom, c)),
            }
        }
        terms.retain(|t| t.1 != 0);
        let constant = self.constant.checked_add(other.constant.checked_mul(k)?)?;
        Some(Linear { constant, terms })
    }

    pub fn add(&self, other: &Linear) -> Option<Linear> {
        self.add_scaled(other, 1)
    }

    pub fn sub(&self, other: &Linear) -> Option<Linear> {
        self.add_scaled(other, -1)
    }

    pub fn scale(&self, k: i64) -> Option<Linear> {
        Linear::default().add_scaled(self, k)
    }

    pub fn plus(&self, k: i64) -> Option<Linear> {
        self.add(&Linear::constant(k))
    }

    /// Replaces atoms by expressions (`None` keeps the atom).
    pub fn substitute(&self, with: &impl Fn(AtomId) -> Option<Linear>) -> Option<Linear> {
        let mut out = Linear::constant(self.constant);
        for &(atom, c) in &self.terms {
            let value = with(atom).unwrap_or_else(|| Linear::atom(atom));
            out = out.add_scaled(&value, c)?;
        }
        Some(out)
    }

    pub fn display<'a>(&'a self, atoms: &'a [Atom]) -> LinearDisplay<'a> {
        LinearDisplay { linear: self, atoms }
    }
}

/// Prints `len(xs) + 2 * n - 1`.
pub struct LinearDisplay<'a> {
    linear: &'a Linear,
    atoms: &'a [Atom],
}

impl fmt::Display for LinearDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for &(atom, c) in &self.linear.terms {
            let name = self.atoms.get(atom as usize).map_or("?", |a| a.name.as_str());
            let sign = if c < 0 { "-" } else { "+" };
            match (first, c.unsigned_abs()) {
                (true, 1) if c < 0 => write!(f, "-{name}")?,
                (true, 1) => write!(f, "{name}")?,
                (true, k) => write!(f, "{}{k} * {name}", if c < 0 { "-" } else { "" })?,
                (false, 1) => write!(f, " {sign} {name}")?,
                (false, k) => write!(f, " {sign} {k} * {name}")?,
            }
            first = false;
        }
        let c = self.linear.constant;
        match (first, c) {
            (true, c) => write!(f, "{c}"),
            (false, 0) => Ok(()),
            (false, c) if c < 0 => write!(f, " - {}", c.unsigned_abs()),
            (false, c) => write!(f, " + {c}"),
        }
    }
}

/// What can be proved about `a - b`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    Equal,
    /// `a - b` is this nonzero constant.
    Differ(i64),
    Unknown,
}

pub fn compare(a: &Linear, b: &Linear) -> Comparison {
    match a.sub(b).and_then(|d| d.as_constant()) {
        Some(0) => Comparison::Equal,
        Some(d) => Comparison::Differ(d),
        None => Comparison::Unknown,
    }
}

/// Whether `value >= 0` follows from the atoms' facts. Terms that are non-negative atoms with
/// positive coefficients are fine as they are; any other atom is replaced by the bound that makes
/// its term smallest (an index's lower bound, or its upper bound less one), a few times over.
pub fn provably_nonneg(value: &Linear, atoms: &[Atom]) -> bool {
    let fine = |&(atom, c): &(AtomId, i64)| c > 0 && atoms.get(atom as usize).is_some_and(|a| a.nonneg);
    let mut value = value.clone();
    for _ in 0..8 {
        let Some(&(atom, c)) = value.terms.iter().find(|t| !fine(t)) else {
            return value.constant >= 0;
        };
        let Some(info) = atoms.get(atom as usize) else { return false };
        let bound = if c > 0 { info.lower.clone() } else { info.upper.as_ref().and_then(|u| u.plus(-1)) };
        let replaced = bound.and_then(|b| value.add_scaled(&Linear::atom(atom), -c)?.add_scaled(&b, c));
        match replaced {
            Some(next) => value = next,
            None => return false,
        }
    }
    false
}

/// The range of values `value` may take, from each atom's: a length or count is in
/// `0..=i32::MAX`, a bounded index between its bounds, any other atom any `i32`.
fn interval(value: &Linear, atoms: &[Atom], depth: u32) -> (i128, i128) {
    let (mut lo, mut hi) = (value.constant as i128, value.constant as i128);
    for &(atom, c) in &value.terms {
        let (a, b) = atom_interval(atoms.get(atom as usize), atoms, depth);
        let (x, y) = (a * c as i128, b * c as i128);
        lo += x.min(y);
        hi += x.max(y);
    }
    (lo, hi)
}

fn atom_interval(atom: Option<&Atom>, atoms: &[Atom], depth: u32) -> (i128, i128) {
    let full = (i32::MIN as i128, i32::MAX as i128);
    let Some(atom) = atom else { return full };
    if atom.nonneg {
        return (0, i32::MAX as i128);
    }
    if depth == 0 {
        return full;
    }
    let lo = atom.lower.as_ref().map_or(full.0, |l| interval(l, atoms, depth - 1).0.max(full.0));
    let hi = atom.upper.as_ref().map_or(full.1, |u| (interval(u, atoms, depth - 1).1 - 1).min(full.1));
    (lo, hi)
}

/// Whether every value `value` may take fits in an `i32`: then the program's wrapping
/// arithmetic computes it exactly.
pub fn fits_i32(value: &Linear, atoms: &[Atom]) -> bool {
    let (lo, hi) = interval(value, atoms, 4);
    lo >= i32::MIN as i128 && hi <= i32::MAX as i128
}

/// Whether `0 <= index < len` follows from the facts.
pub fn provably_in_bounds(index: &Linear, len: &Linear, atoms: &[Atom]) -> bool {
    let below_len = len.sub(index).and_then(|d| d.plus(-1));
    provably_nonneg(index, atoms) && below_len.is_some_and(|d| provably_nonneg(&d, atoms))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn atoms() -> Vec<Atom> {
        let len =
            |name: &str| Atom { name: name.into(), nonneg: true, lower: None, upper: None, definition: None };
        let xs = len("len(xs)");
        let n = Atom { name: "n".into(), nonneg: false, lower: None, upper: None, definition: None };
        // i in range(len(xs))
        let i = Atom {
            name: "i".into(),
            nonneg: false,
            lower: Some(Linear::constant(0)),
            upper: Some(Linear::atom(0)),
            definition: None,
        };
        vec![xs, n, i]
    }

    #[test]
    fn prints_like_source() {
        let atoms = atoms();
        let e = Linear::atom(0).add_scaled(&Linear::atom(1), -2).unwrap().plus(-1).unwrap();
        assert_eq!(e.display(&atoms).to_string(), "len(xs) - 2 * n - 1");
        assert_eq!(Linear::atom(1).scale(-1).unwrap().display(&atoms).to_string(), "-n");
        assert_eq!(Linear::constant(0).display(&atoms).to_string(), "0");
    }

    #[test]
    fn compares_by_structure() {
        let xs = Linear::atom(0);
        assert_eq!(compare(&xs, &xs.plus(0).unwrap()), Comparison::Equal);
        assert_eq!(compare(&xs.plus(1).unwrap(), &xs), Comparison::Differ(1));
        assert_eq!(compare(&xs, &Linear::atom(1)), Comparison::Unknown);
    }

    #[test]
    fn proves_indexes_from_range_bounds() {
        let atoms = atoms();
        let (xs, n, i) = (Linear::atom(0), Linear::atom(1), Linear::atom(2));
        assert!(provably_in_bounds(&i, &xs, &atoms));
        assert!(!provably_in_bounds(&i.plus(1).unwrap(), &xs, &atoms), "i + 1 may reach len(xs)");
        assert!(provably_in_bounds(&i, &xs.plus(1).unwrap(), &atoms));
        assert!(!provably_in_bounds(&i.plus(-1).unwrap(), &xs, &atoms), "i - 1 may be -1");
        assert!(!provably_in_bounds(&n, &xs, &atoms), "n has no known bounds");
        assert!(provably_nonneg(&xs, &atoms));
        assert!(!provably_nonneg(&n, &atoms));
    }
}
