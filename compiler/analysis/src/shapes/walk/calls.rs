//! Calls in the walk: the prelude's functions, each with what it does to shapes (and the length
//! relations `map` and `zip` need), and calls of top-level functions, whose result shape is the
//! callee's summary with the arguments' lengths put in.

use rustc_hash::FxHashMap as HashMap;

use super::{Term, Walker, element, element_of_type, len_of};
use crate::hir::{self, ExprId};
use crate::items::file_functions;
use crate::shapes::symbolic::{Atom, AtomId, Comparison, Definition, Linear, compare};
use crate::shapes::{Len, Shape, function_shapes};
use weft_core::types::Type;
use weft_syntax::diagnostics::{Code, Diagnostic};

impl Walker<'_> {
    pub(super) fn call(&mut self, id: ExprId, callee: ExprId, args: &[ExprId]) -> Shape {
        match self.body.expr(callee).clone() {
            hir::Expr::Prelude(name) => self.prelude_call(id, &name, args),
            hir::Expr::Global(name) => {
                let shapes: Vec<Shape> = args.iter().map(|&a| self.expr(a)).collect();
                match self.summary_result(&name, &shapes) {
                    Some(shape) => shape,
                    None => self.unknown_expr(id),
                }
            }
            _ => {
                self.expr(callee);
                for &a in args {
                    self.expr(a);
                }
                self.unknown_expr(id)
            }
        }
    }

    /// The result of calling the top-level function `name` with arguments of these shapes,
    /// from its shape summary, or `None` when it is unknown (or in this body's call cycle).
    fn summary_result(&mut self, name: &str, args: &[Shape]) -> Option<Shape> {
        let index = crate::infer::function_index(self.db, self.file, name)?;
        if self.callers.contains(&index) {
            return None;
        }
        let function = *file_functions(self.db, self.file).get(index as usize)?;
        let summary = function_shapes(self.db, function);
        let ret = summary.ret.clone()?;
        let mut subst: HashMap<AtomId, Linear> = HashMap::default();
        for (param, arg) in summary.params.iter().zip(args) {
            unify(param, arg, &mut subst);
        }
        let mut call = Translation { subst, callee_atoms: &summary.atoms, hint: format!("{name}(…)") };
        Some(self.translate(&ret, &mut call, 0))
    }

    /// A callee's shape in this body's atoms: its parameters' atoms become the arguments'
    /// values, a `max` or product of them is rebuilt from theirs, and its other atoms become
    /// fresh unknowns (named after the call, `depth` levels of elements down).
    fn translate(&mut self, shape: &Shape, call: &mut Translation, depth: usize) -> Shape {
        match shape {
            Shape::Seq { len, elem } => {
                let len = match len {
                    Len::Known(l) => match self.translate_linear(l, call, depth) {
                        Some(l) => Len::Known(l),
                        None => Len::Known(self.unknown_len("…")),
                    },
                    Len::Varies => Len::Varies,
                };
                let elem = self.translate(elem, call, depth + 1);
                Shape::Seq { len, elem: Box::new(elem) }
            }
            Shape::Int(l) => self.translate_linear(l, call, depth).map_or(Shape::Scalar, Shape::Int),
            Shape::Index { .. } | Shape::Scalar => Shape::Scalar,
            Shape::Tuple(items) => {
                Shape::Tuple(items.iter().map(|s| self.translate(s, call, depth)).collect())
            }
        }
    }

    fn translate_linear(&mut self, value: &Linear, call: &mut Translation, depth: usize) -> Option<Linear> {
        let mut out = Linear::constant(value.constant);
        for &(atom, c) in &value.terms {
            let mapped = match call.subst.get(&atom) {
                Some(mapped) => mapped.clone(),
                None => {
                    let mapped = self.translate_atom(atom, call, depth)?;
                    call.subst.insert(atom, mapped.clone());
                    mapped
                }
            };
            out = out.add_scaled(&mapped, c)?;
        }
        Some(out)
    }

    fn translate_atom(&mut self, atom: AtomId, call: &mut Translation, depth: usize) -> Option<Linear> {
        let info = call.callee_atoms.get(atom as usize)?.clone();
        match info.definition {
            Some(Definition::Max0(value)) => {
                let value = self.translate_linear(&value, call, depth)?;
                Some(self.clamped(&value))
            }
            Some(Definition::Product(a, b)) => {
                let a = self.translate_linear(&a, call, depth)?;
                let b = self.translate_linear(&b, call, depth)?;
                self.product(&a, &b)
            }
            None => {
                let name = format!("len({}{})", call.hint, "[i]".repeat(depth));
                let new = self.atom(name, info.nonneg);
                self.unnamed.insert(new);
                Some(Linear::atom(new))
            }
        }
    }

    fn prelude_call(&mut self, id: ExprId, name: &str, args: &[ExprId]) -> Shape {
        if name == "map" {
            return self.map(id, args);
        }
        let shapes: Vec<Shape> = args.iter().map(|&a| self.expr(a)).collect();
        let arg = |i: usize| shapes.get(i).cloned().unwrap_or(Shape::Scalar);
        let int = |i: usize| match shapes.get(i) {
            Some(Shape::Int(v)) => Some(v.clone()),
            _ => None,
        };
        // An integer argument nothing is known of is still one value: an atom.
        let int_or_atom = |me: &mut Self, i: usize| -> Linear {
            int(i).unwrap_or_else(|| {
                let name = args.get(i).map_or_else(|| "?".to_string(), |&a| me.text(a));
                Linear::atom(me.atom(name, false))
            })
        };
        let seq = |len: Linear, elem: Shape| Shape::Seq { len: Len::Known(len), elem: Box::new(elem) };
        let result = match (name, shapes.len()) {
            (crate::db::SESSION_INPUT, 1) => self.session_input(args),
            ("len", 1) => len_of(&arg(0)).map(Shape::Int),
            ("range", 1) => {
                let n = int_or_atom(self, 0);
                let len = self.clamped(&n);
                Some(seq(len, Shape::Index { lower: Linear::constant(0), upper: n }))
            }
            ("range", 2) => {
                let (a, b) = (int_or_atom(self, 0), int_or_atom(self, 1));
                b.sub(&a).map(|d| {
                    let len = self.clamped(&d);
                    seq(len, Shape::Index { lower: a, upper: b })
                })
            }
            ("indices", 1) => {
                len_of(&arg(0)).map(|n| seq(n.clone(), Shape::Index { lower: Linear::constant(0), upper: n }))
            }
            ("zip", _) => {
                self.require_equal_lengths(id, "zip", args, &shapes);
                len_of(&arg(0)).map(|n| seq(n, Shape::Tuple(shapes.iter().map(element).collect())))
            }
            ("unzip", 1) => match (len_of(&arg(0)), element(&arg(0))) {
                (Some(n), Shape::Tuple(items)) => {
                    Some(Shape::Tuple(items.into_iter().map(|e| seq(n.clone(), e)).collect()))
                }
                _ => None,
            },
            ("concat", 2) => match (len_of(&arg(0)), len_of(&arg(1))) {
                (Some(a), Some(b)) => {
                    let elem = self.join_elements(&element(&arg(0)), &element(&arg(1)));
                    a.add(&b).map(|n| seq(n, elem))
                }
                _ => None,
            },
            ("reverse" | "sort", 1) => Some(arg(0)).filter(|s| len_of(s).is_some()),
            ("replicate", 2) => int(1).map(|n| seq(n, self.forget_since(&arg(0), usize::MAX))),
            ("random_f32", 2) | ("random_i32", 4) => int(0).map(|n| seq(n, Shape::Scalar)),
            ("gather", 2) => len_of(&arg(1)).map(|n| seq(n, element(&arg(0)))),
            // `dst` with some of its elements replaced by `src`'s.
            ("scatter", 3) => len_of(&arg(2)).map(|n| {
                let elem = self.join_elements(&element(&arg(0)), &element(&arg(2)));
                seq(n, elem)
            }),
            ("permute", 2) => Some(arg(0)).filter(|s| len_of(s).is_some()),
            ("filter", 2) => {
                let n = Linear::atom(self.atom(format!("count({})", self.text(id)), true));
                Some(seq(n, element(&arg(1))))
            }
            ("lengths", 1) => len_of(&arg(0)).map(|n| seq(n, Shape::Scalar)),
            ("partition", 2) => {
                let elem = Shape::Seq { len: Len::Varies, elem: Box::new(element(&arg(0))) };
                len_of(&arg(1)).map(|n| seq(n, elem))
            }
            ("scan", 2) => len_of(&arg(1)).map(|n| seq(n, Shape::Scalar)),
            ("exclusive_scan", 3) => len_of(&arg(2)).map(|n| seq(n, Shape::Scalar)),
            ("count", 1) => {
                let atom = match self.term(id) {
                    Some(term) => self.opaque_atom(term, self.text(id), true),
                    None => self.atom(self.text(id), true),
                };
                Some(Shape::Int(Linear::atom(atom)))
            }
            // Only `i32` values are symbolic: `i32(x)` of one is itself.
            ("i32", 1) => int(0).map(Shape::Int),
            _ => None,
        };
        match result {
            Some(shape) => shape,
            None => self.determined_seq(id).unwrap_or_else(|| self.unknown_expr(id)),
        }
    }

    /// An earlier cell's value (`__session_input__("xs")`), with the lengths the session
    /// knows it has: constants, so that what a cell does with them is checked as if the value
    /// were written in it.
    fn session_input(&mut self, args: &[ExprId]) -> Option<Shape> {
        let name = self.body.string_argument(args)?;
        let interface = self.file.interface(self.db);
        let input = interface.inputs.iter().find(|input| input.name == name)?;
        fn known(ty: &Type, lengths: &[u64]) -> Shape {
            match (ty, lengths) {
                (Type::Seq(elem), [len, rest @ ..]) => Shape::Seq {
                    len: Len::Known(Linear::constant(i64::try_from(*len).unwrap_or(i64::MAX))),
                    elem: Box::new(known(elem, rest)),
                },
                _ => element_of_type(ty),
            }
        }
        (!input.lengths.is_empty()).then(|| known(&input.ty, &input.lengths))
    }

    /// A sequence whose length is not known, but which its arguments determine (`flatten(xss)`):
    /// its length is one atom for every such call on the same values, so that
    /// `zip(flatten(xss), flatten(xss))` needs no check.
    fn determined_seq(&mut self, id: ExprId) -> Option<Shape> {
        let Some(Type::Seq(elem)) = self.types.expr_types.get(id as usize) else { return None };
        let term = self.term(id)?;
        let name = format!("len({})", self.text(id));
        let len = Linear::atom(self.opaque_atom(Term::Len(Box::new(term)), name, true));
        Some(Shape::Seq { len: Len::Known(len), elem: Box::new(element_of_type(elem)) })
    }

    /// `map(f, xs, ...)`: the lengths must agree; an inline lambda or a top-level function is
    /// walked with the elements, so its result's shape is known per element.
    fn map(&mut self, id: ExprId, args: &[ExprId]) -> Shape {
        let Some((&f, seqs)) = args.split_first() else { return self.unknown_expr(id) };
        let shapes: Vec<Shape> = seqs.iter().map(|&a| self.expr(a)).collect();
        self.require_equal_lengths(id, "map", seqs, &shapes);
        let Some(len) = shapes.first().and_then(len_of) else { return self.unknown_expr(id) };
        let watermark = self.atoms.len();
        let elems: Vec<Shape> = shapes
            .iter()
            .zip(seqs)
            .map(|(s, &e)| self.instantiate(&element(s), &format!("{}[i]", self.text(e))))
            .collect();
        let result = match self.body.expr(f).clone() {
            hir::Expr::Lambda(lambda) => Some(self.lambda(lambda, Some(elems))),
            hir::Expr::Global(name) => self.summary_result(&name, &elems),
            _ => {
                self.expr(f);
                None
            }
        };
        let elem = match result {
            Some(shape) => self.forget_since(&shape, watermark),
            None => element(&self.unknown_expr(id)),
        };
        Shape::Seq { len: Len::Known(len), elem: Box::new(elem) }
    }

    /// `zip` and `map` need equal lengths: a proven difference is an error, an unproven
    /// equality a warning that the executors check it. One diagnostic per call, labelling the
    /// first sequence and each one whose length is not proven equal to it.
    fn require_equal_lengths(&mut self, call: ExprId, what: &str, args: &[ExprId], shapes: &[Shape]) {
        let Some(first) = shapes.first().and_then(len_of) else { return };
        let mut differ = false;
        let mut all_known = true;
        let mut labels = Vec::new();
        for (k, shape) in shapes.iter().enumerate().skip(1) {
            let Some(other) = len_of(shape) else {
                all_known = false;
                continue;
            };
            match compare(&first, &other) {
                Comparison::Equal => continue,
                Comparison::Differ(_) => differ = true,
                Comparison::Unknown => {}
            }
            labels.push((args[k], other));
        }
        if labels.is_empty() {
            if all_known {
                self.out.equal_lengths.push(call);
            }
            return;
        }
        let (code, message) = if differ {
            let lengths: Vec<String> = std::iter::once(&first)
                .chain(labels.iter().map(|(_, l)| l))
                .map(|l| l.display(&self.atoms).to_string())
                .collect();
            let message = format!(
                "`{what}` needs sequences of equal length, but their lengths are {}",
                lengths.join(" and ")
            );
            (Code::ProvenLengthMismatch, message)
        } else {
            let message = format!(
                "cannot prove that `{what}`'s sequences have equal lengths; it is checked at run time"
            );
            (Code::UnprovenLength, message)
        };
        // The primary span is the function's name, so that the arguments' labels stand apart.
        let primary = match self.body.expr(call) {
            hir::Expr::Call { callee, .. } => self.body.expr_range(*callee),
            _ => self.body.expr_range(call),
        };
        let mut diagnostic = Diagnostic::new(code, primary, message).with_label(
            self.body.expr_range(args[0]),
            format!("this has length {}", first.display(&self.atoms)),
        );
        for (arg, len) in &labels {
            diagnostic = diagnostic.with_label(
                self.body.expr_range(*arg),
                format!("this has length {}", len.display(&self.atoms)),
            );
        }
        if !differ {
            diagnostic = diagnostic.with_help(
                "lengths are proved equal when both sequences come from the same one \
                 (a comprehension over `xs`, `indices(xs)` or `range(len(xs))`)",
            );
        }
        self.out.diagnostics.push(diagnostic);
    }
}

/// A call being translated into the caller's atoms: what each callee atom stands for so far.
struct Translation<'s> {
    subst: HashMap<AtomId, Linear>,
    callee_atoms: &'s [Atom],
    hint: String,
}

/// Matches a callee parameter's shape against an argument's, recording what the parameter's
/// atoms stand for.
fn unify(param: &Shape, arg: &Shape, subst: &mut HashMap<AtomId, Linear>) {
    match (param, arg) {
        (Shape::Seq { len: Len::Known(p), elem: pe }, Shape::Seq { len: Len::Known(a), elem: ae }) => {
            if let Some(atom) = p.as_atom() {
                subst.insert(atom, a.clone());
            }
            unify(pe, ae, subst);
        }
        (Shape::Int(p), Shape::Int(a)) => {
            if let Some(atom) = p.as_atom() {
                subst.insert(atom, a.clone());
            }
        }
        (Shape::Tuple(ps), Shape::Tuple(args)) => {
            for (p, a) in ps.iter().zip(args) {
                unify(p, a, subst);
            }
        }
        _ => {}
    }
}
