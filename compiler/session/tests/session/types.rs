//! Type inference: the schemes of functions and the types of top-level bindings, as
//! `weft dev --after types` prints them, and the errors that the numeric classes and
//! defaulting rules give.

use expect_test::{Expect, expect};
use weft_analysis::Database;
use weft_analysis::SourceFile;
use weft_analysis::file_diagnostics;
use weft_analysis::pipeline::dump_after;

fn check(text: &str, expect: Expect) {
    let db = Database::default();
    let file = SourceFile::new(&db, "types.weft".to_string(), text.to_string());
    let mut out = dump_after(&db, file, "types").expect("a types dump");
    let codes: Vec<&str> = file_diagnostics(&db, file).iter().map(|d| d.code.as_str()).collect();
    out.push_str(&format!("diagnostics: {codes:?}\n"));
    expect.assert_eq(&out);
}

#[test]
fn unannotated_functions_are_generalised_over_their_classes() {
    check(
        "def double(x):\n    return x * 2\n\ndef half(x):\n    return x / 2\n\n\
         def less(a, b):\n    return a < b\n\ndef same(a, b):\n    return a == b\n\n\
         def apply(f, x):\n    return f(x)\n\ndef first(xs):\n    return xs[0]\n",
        expect![[r#"
            def double: Num a => a -> a
            def half: (Num a, Float b) => a -> b
            def less: Ord a => (a, a) -> bool
            def same: Eq a => (a, a) -> bool
            def apply: (a -> b, a) -> b
            def first: [a] -> a
            diagnostics: []
        "#]],
    );
}

#[test]
fn one_function_at_several_types() {
    check(
        "def double(x):\n    return x * 2\n\na = double(3)\nb = double(1.5)\nc = double(f64(1))\n",
        expect![[r#"
            def double: Num a => a -> a
            a: i32
            b: f32
            c: f64
            diagnostics: []
        "#]],
    );
}

#[test]
fn literals_default_at_the_end_of_each_top_level_statement() {
    // `n` is an i32 once its statement ends, so `n * 1.5` is a type error, as in the reference.
    check(
        "n = 3\nm = n * 1.5\nys = [x for x in [1, 2]]\nz = ys[0] + 1.5\n",
        expect![[r#"
            n: i32
            m: i32
            ys: [i32]
            z: i32
            diagnostics: ["E0300", "E0300"]
        "#]],
    );
}

#[test]
fn literals_take_the_type_their_context_demands() {
    check(
        "def scale(xs: [f32]) -> [f32]:\n    return [2 * x for x in xs]\n\nk = sqrt(2)\nq = 7 / 2\n",
        expect![[r#"
            def scale: [f32] -> [f32]
            k: f32
            q: f32
            diagnostics: []
        "#]],
    );
}

#[test]
fn nested_functions_are_polymorphic_and_closures_see_their_scope() {
    check(
        "def both(x: i32, y: f32) -> (i32, f32):\n    def twice(v):\n        return v + v\n    \
         return (twice(x), twice(y))\n\ndef offsets(xs: [i32], k: i32) -> [i32]:\n    \
         add = lambda x: x + k\n    return [add(x) for x in xs]\n",
        expect![[r#"
            def both: (i32, f32) -> (i32, f32)
            def offsets: ([i32], i32) -> [i32]
            diagnostics: []
        "#]],
    );
}

#[test]
fn mutually_recursive_functions_are_monomorphic_in_their_group() {
    check(
        "def even(n):\n    return True if n == 0 else odd(n - 1)\n\n\
         def odd(n):\n    return False if n == 0 else even(n - 1)\n\nprint(even(10))\n",
        expect![[r#"
            def even: Num a => a -> bool
            def odd: Num a => a -> bool
            diagnostics: []
        "#]],
    );
}

#[test]
fn ordering_and_equality_follow_the_classes() {
    // Tuples and sequences are ordered lexicographically; bools and functions are not ordered.
    check(
        "a = (1, 2.5) < (1, 3.5)\nb = [1, 2] < [1, 2, 0]\nc = True < False\nd = [[1]] == [[1]]\n",
        expect![[r#"
            a: bool
            b: bool
            c: bool
            d: bool
            diagnostics: ["E0300"]
        "#]],
    );
}

#[test]
fn a_nested_function_is_not_generalised_over_what_it_captures() {
    // `g` captures `x`, so `g(1.5)` makes `x` a float too: `f` takes floats only (a literal `1` is one; an `i32` is not).
    check(
        "def f(x):\n    def g(y):\n        return x + y\n    return g(1.5)\n\none = f(1)\nn = 2\nwrong = f(n)\n",
        expect![[r#"
            def f: Float a => a -> a
            one: f32
            n: i32
            wrong: f32
            diagnostics: ["E0300"]
        "#]],
    );
}

#[test]
fn a_top_level_name_read_by_a_function_still_defaults_with_its_statement() {
    check(
        "def f():\n    return k\n\nk = 3\nprint(k, f())\nk = 1.5\n",
        expect![[r#"
        def f: () -> i32
        k: i32
        diagnostics: ["E0300"]
    "#]],
    );
}
