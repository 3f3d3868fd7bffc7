//! A value shown as a session shows it: its text shortened at every level, its type with its
//! lengths, its shape. One walk over the IR's layout serves every executor's values. For a
//! device value it reads back every segment descriptor, since the sized type and the shape need
//! each length, and of the scalar data only the elements that the shortened text shows: at most
//! two read-backs, whatever the nesting. A host value is read in place.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use weft_core::types::Type;
use weft_exec::{cpu, interp};
use weft_gpu::DeviceValue;
use weft_gpu::runtime::Gpu;
use weft_syntax::Diagnostic;

/// A collection of values as the IR lays it out, with descriptors and leaves by number.
enum Coll {
    /// Scalars: leaf `slot`.
    Scalars(usize),
    Tuples(Vec<Coll>),
    /// Sequences: the descriptors numbered `offsets` and `lengths`, and the elements.
    Seqs {
        offsets: usize,
        lengths: usize,
        elems: Box<Coll>,
    },
    Units,
}

/// The value's scalar arrays, by leaf number (`None` where the layout ran out of variables).
enum Leaves {
    Device(Arc<Gpu>, Vec<Option<DeviceValue>>),
    Host(Vec<Option<cpu::FlatValue>>),
}

pub(crate) struct Preview {
    ty: Type,
    /// The value as element 0 of a collection of one.
    root: Coll,
    descriptors: Vec<Vec<usize>>,
    leaves: Leaves,
}

impl Preview {
    /// Reads the descriptors of `vars`, a device value of `ty` laid out as
    /// `ir::layout(ty, false)`.
    pub(crate) fn read(gpu: Arc<Gpu>, ty: &Type, vars: &[DeviceValue]) -> Result<Preview, Diagnostic> {
        let mut layout = Layout { vars: vars.iter(), descriptors: Vec::new(), leaves: Vec::new() };
        let root = layout.many(ty);
        let ranges: Vec<_> = layout.descriptors.iter().flatten().map(|&v| (v, 0, usize::MAX)).collect();
        let mut read = weft_gpu::download_ranges(&gpu, &ranges)?.into_iter();
        let descriptors = layout
            .descriptors
            .iter()
            .map(|d| d.and_then(|_| read.next()).map_or_else(Vec::new, |v| indices(&v)))
            .collect();
        let leaves = Leaves::Device(gpu, layout.leaves.into_iter().map(|v| v.cloned()).collect());
        Ok(Preview { ty: ty.clone(), root, descriptors, leaves })
    }

    /// A host value of `ty`, laid out as `ir::layout(ty, false)`.
    pub(crate) fn host(ty: &Type, vars: &[cpu::FlatValue]) -> Preview {
        let mut layout = Layout { vars: vars.iter(), descriptors: Vec::new(), leaves: Vec::new() };
        let root = layout.many(ty);
        let descriptors = layout.descriptors.iter().map(|d| d.map_or_else(Vec::new, indices)).collect();
        let leaves = Leaves::Host(layout.leaves.into_iter().map(|v| v.cloned()).collect());
        Preview { ty: ty.clone(), root, descriptors, leaves }
    }

    /// The value's text, sequences longer than `items` shortened at every level to their first
    /// `items - 1` elements and their last, and for a sequence its table (`table`); only the
    /// elements shown are read back, in one read-back.
    pub(crate) fn text_and_table(&self, items: usize) -> Result<(String, Option<Table>), Diagnostic> {
        let items = items.max(2);
        let shown = self.read_shown(items)?;
        let mut text = String::new();
        self.write(&mut text, &self.root, 0, items, &shown);
        Ok((text, self.table_of(items, &shown)))
    }

    /// A sequence as a table of the elements its text shows: a row per element, a column per
    /// field of a tuple or per shown item of an inner sequence. `None` for anything else.
    pub(crate) fn table(&self, items: usize) -> Result<Option<Table>, Diagnostic> {
        let items = items.max(2);
        Ok(self.table_of(items, &self.read_shown(items)?))
    }

    fn table_of(&self, items: usize, shown: &[BTreeMap<usize, interp::NestedValue>]) -> Option<Table> {
        let Coll::Seqs { offsets, lengths, elems } = &self.root else { return None };
        let cell = |coll: &Coll, i: usize| {
            let mut text = String::new();
            self.write(&mut text, coll, i, items, shown);
            text
        };
        let (start, n) = self.segment(*offsets, *lengths, 0);
        let mut rows = Vec::new();
        let mut widths = BTreeSet::new();
        for j in with_gap(n, items) {
            let Some(j) = j else {
                rows.push(None);
                continue;
            };
            let cells = match &**elems {
                Coll::Tuples(fields) if !fields.is_empty() => {
                    fields.iter().map(|f| cell(f, start + j)).collect()
                }
                Coll::Seqs { offsets, lengths, elems: inner } => {
                    let (first, m) = self.segment(*offsets, *lengths, start + j);
                    widths.insert(m);
                    with_gap(m, items)
                        .map(|k| k.map_or_else(|| "…".to_string(), |k| cell(inner, first + k)))
                        .collect()
                }
                other => vec![cell(other, start + j)],
            };
            rows.push(Some((j, cells)));
        }
        let columns = match (&**elems, widths.len()) {
            (Coll::Tuples(fields), _) if !fields.is_empty() => {
                (0..fields.len()).map(|k| format!(".{k}")).collect()
            }
            (Coll::Seqs { .. }, 1) => {
                let m = widths.first().copied().unwrap_or(0);
                with_gap(m, items).map(|k| k.map_or_else(|| "…".to_string(), |k| k.to_string())).collect()
            }
            _ => Vec::new(),
        };
        Some(Table { columns, rows })
    }

    /// The scalars the text of a value shortened to `items` per level shows, by leaf number and
    /// index; only those are read back.
    fn read_shown(&self, items: usize) -> Result<Vec<BTreeMap<usize, interp::NestedValue>>, Diagnostic> {
        let slots = match &self.leaves {
            Leaves::Device(_, leaves) => leaves.len(),
            Leaves::Host(leaves) => leaves.len(),
        };
        let mut wanted = vec![BTreeSet::new(); slots];
        self.want(&self.root, 0, items, &mut wanted);
        let mut ranges = Vec::new();
        for (slot, indices) in wanted.iter().enumerate() {
            for run in runs(indices) {
                ranges.push((slot, run));
            }
        }
        // Each run's values, with the index of the run's first element in them: a device run
        // is read back alone, a host run is read where it is.
        let fetched: Vec<Option<(cpu::FlatValue, usize)>> = match &self.leaves {
            Leaves::Device(gpu, leaves) => {
                let reads: Vec<_> = ranges
                    .iter()
                    .filter_map(|(slot, run)| Some((leaves[*slot].as_ref()?, run.start, run.len())))
                    .collect();
                let mut read = weft_gpu::download_ranges(gpu, &reads)?.into_iter();
                ranges
                    .iter()
                    .map(|(slot, run)| leaves[*slot].as_ref().and_then(|_| Some((read.next()?, run.start))))
                    .collect()
            }
            Leaves::Host(leaves) => {
                ranges.iter().map(|(slot, _)| Some((leaves[*slot].clone()?, 0))).collect()
            }
        };
        let mut shown: Vec<BTreeMap<usize, interp::NestedValue>> = vec![BTreeMap::new(); slots];
        for ((slot, run), fetched) in ranges.iter().zip(fetched) {
            let Some((value, first)) = fetched else { continue };
            for i in run.clone() {
                let k = i - first;
                let scalar = match &value {
                    cpu::FlatValue::Scalar(s) => Some(*s),
                    cpu::FlatValue::Vector(b) => b.get(k),
                    cpu::FlatValue::Progression(p) => (k < p.len).then(|| cpu::ScalarValue::I32(p.get(k))),
                };
                if let Some(s) = scalar {
                    shown[*slot].insert(i, s.to_interp());
                }
            }
        }
        // A wanted element past the end of its leaf is a malformed value: an executor's bug.
        if wanted.iter().zip(&shown).any(|(wanted, shown)| wanted.len() != shown.len()) {
            return Err(Diagnostic::new(
                weft_syntax::Code::InternalError,
                rowan::TextRange::default(),
                "internal error: a device value's segments point outside its elements",
            ));
        }
        Ok(shown)
    }

    /// The type with the value's lengths (`engine::sized_type`'s rules).
    pub(crate) fn sized_type(&self) -> String {
        self.sized(&self.ty, &self.root, 0)
    }

    /// The value's shape (`shape_text`'s rules): its length, and its rows' lengths.
    pub(crate) fn shape(&self) -> Option<String> {
        let Coll::Seqs { offsets, lengths, elems } = &self.root else { return None };
        let (start, n) = self.segment(*offsets, *lengths, 0);
        let rows = match &**elems {
            Coll::Seqs { lengths, .. } => {
                self.descriptors[*lengths].get(start..start + n).unwrap_or_default()
            }
            _ => &[],
        };
        Some(crate::shape_of_lengths(n, rows))
    }

    /// The elements of sequence `i` of `seq`'s collection: its start and its length.
    fn segment(&self, offsets: usize, lengths: usize, i: usize) -> (usize, usize) {
        let at = |d: usize| self.descriptors[d].get(i).copied().unwrap_or(0);
        (at(offsets), at(lengths))
    }

    /// Marks the leaf elements that element `i` of `coll` shows.
    fn want(&self, coll: &Coll, i: usize, items: usize, wanted: &mut [BTreeSet<usize>]) {
        match coll {
            Coll::Scalars(slot) => {
                wanted[*slot].insert(i);
            }
            Coll::Tuples(fields) => fields.iter().for_each(|f| self.want(f, i, items, wanted)),
            Coll::Seqs { offsets, lengths, elems } => {
                let (start, n) = self.segment(*offsets, *lengths, i);
                for k in shown_indices(n, items) {
                    self.want(elems, start + k, items, wanted);
                }
            }
            Coll::Units => {}
        }
    }

    fn write(
        &self,
        out: &mut String,
        coll: &Coll,
        i: usize,
        items: usize,
        shown: &[BTreeMap<usize, interp::NestedValue>],
    ) {
        match coll {
            Coll::Scalars(slot) => match shown[*slot].get(&i) {
                Some(value) => interp::print::write_value(out, value),
                None => out.push('?'),
            },
            Coll::Tuples(fields) => {
                out.push('(');
                for (k, field) in fields.iter().enumerate() {
                    if k > 0 {
                        out.push_str(", ");
                    }
                    self.write(out, field, i, items, shown);
                }
                if fields.len() == 1 {
                    out.push(',');
                }
                out.push(')');
            }
            Coll::Seqs { offsets, lengths, elems } => {
                let (start, n) = self.segment(*offsets, *lengths, i);
                out.push('[');
                let indices = shown_indices(n, items);
                for (k, &j) in indices.iter().enumerate() {
                    if k > 0 {
                        out.push_str(", ");
                    }
                    if n > items && k == indices.len() - 1 {
                        out.push_str("…, ");
                    }
                    self.write(out, elems, start + j, items, shown);
                }
                out.push(']');
            }
            Coll::Units => interp::print::write_value(out, &interp::NestedValue::unit()),
        }
    }

    fn sized(&self, ty: &Type, coll: &Coll, i: usize) -> String {
        match (ty, coll) {
            (Type::Seq(elem), Coll::Seqs { offsets, lengths, elems }) => {
                let (start, n) = self.segment(*offsets, *lengths, i);
                if matches!(**elem, Type::Scalar(_)) {
                    return format!("[{elem}; {n}]");
                }
                let mut rows = (start..start + n).map(|j| self.sized(elem, elems, j));
                let inner = match rows.next() {
                    Some(first) if rows.all(|row| row == first) => first,
                    _ => elem.to_string(),
                };
                format!("[{inner}; {n}]")
            }
            (Type::Tuple(types), Coll::Tuples(fields)) if !types.is_empty() => {
                tuple_text(types.iter().zip(fields).map(|(t, f)| self.sized(t, f, i)).collect())
            }
            _ => ty.to_string(),
        }
    }
}

/// The indices `shown_indices` gives, with `None` where elements are left out.
fn with_gap(n: usize, items: usize) -> impl Iterator<Item = Option<usize>> {
    let indices = shown_indices(n, items);
    let gap = (n > items).then(|| indices.len() - 1);
    indices
        .into_iter()
        .enumerate()
        .flat_map(move |(k, j)| (gap == Some(k)).then_some(None).into_iter().chain([Some(j)]))
}

/// A sequence as a notebook shows it: the column headers (none where rows differ in length),
/// and rows of cell texts, each with its element's index; `None` is the row of the elements
/// left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    pub columns: Vec<String>,
    pub rows: Vec<Option<(usize, Vec<String>)>>,
}

/// Which of `n` elements a shortened sequence shows: all of them, or the first `items - 1`
/// and the last.
fn shown_indices(n: usize, items: usize) -> Vec<usize> {
    if n <= items { (0..n).collect() } else { (0..items - 1).chain([n - 1]).collect() }
}

/// A tuple type's text from its items', as `Type` writes it (`(bool)` for one item).
fn tuple_text(items: Vec<String>) -> String {
    format!("({})", items.join(", "))
}

/// Walks a value's variables in layout order, numbering its descriptors and leaves (`None`
/// past the last variable of a malformed value).
struct Layout<'v, V> {
    vars: std::slice::Iter<'v, V>,
    descriptors: Vec<Option<&'v V>>,
    leaves: Vec<Option<&'v V>>,
}

impl<'v, V> Layout<'v, V> {
    /// A collection (`layout(ty, true)`). A single value (`layout(ty, false)`) reads the same
    /// way, as a collection of one: a sequence's offset and length as descriptors of one
    /// entry, a scalar as a leaf of one element.
    fn many(&mut self, ty: &Type) -> Coll {
        let next = |list: &mut Vec<Option<&'v V>>, vars: &mut std::slice::Iter<'v, V>| {
            list.push(vars.next());
            list.len() - 1
        };
        match ty {
            Type::Scalar(_) => Coll::Scalars(next(&mut self.leaves, &mut self.vars)),
            Type::Tuple(items) => Coll::Tuples(items.iter().map(|t| self.many(t)).collect()),
            Type::Seq(elem) => {
                let offsets = next(&mut self.descriptors, &mut self.vars);
                let lengths = next(&mut self.descriptors, &mut self.vars);
                Coll::Seqs { offsets, lengths, elems: Box::new(self.many(elem)) }
            }
            Type::Var(_) | Type::Func(..) => Coll::Units,
        }
    }
}

/// A descriptor's entries as indices (a malformed entry as 0).
fn indices(value: &cpu::FlatValue) -> Vec<usize> {
    let index =
        |s: Option<cpu::ScalarValue>| usize::try_from(s.and_then(|s| s.as_int()).unwrap_or(0)).unwrap_or(0);
    match value {
        cpu::FlatValue::Scalar(s) => vec![index(Some(*s))],
        cpu::FlatValue::Vector(b) => (0..b.len()).map(|i| index(b.get(i))).collect(),
        cpu::FlatValue::Progression(p) => {
            (0..p.len).map(|i| index(Some(cpu::ScalarValue::I32(p.get(i))))).collect()
        }
    }
}

/// Sorted indices as runs of consecutive ones.
fn runs(indices: &BTreeSet<usize>) -> Vec<std::ops::Range<usize>> {
    let mut runs: Vec<std::ops::Range<usize>> = Vec::new();
    for &i in indices {
        match runs.last_mut() {
            Some(run) if run.end == i => run.end += 1,
            _ => runs.push(i..i + 1),
        }
    }
    runs
}
