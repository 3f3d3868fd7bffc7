//! Property test: nested programs on random nested inputs give the same output on the CPU
//! executor (flattened) as on the reference interpreter (nested). The inputs include empty and
//! one-element segments and nest three deep; the programs cover comprehensions with filters,
//! conditionals on sequences, closures, reductions, scans, sorts, slices, indexing from the
//! end, concatenation, partitioning, equality and ordering, reductions and scans with user
//! operators, extremes of sequences, permutes and scatters of sequences of sequences, loops
//! inside comprehensions (scalar bodies and bodies with parallel work) and recursion.

use crate::common;

use common::differential::{compare, run_source_with as run};
use proptest::prelude::*;
use weft_flat::flatten::{InnerSchedule, Options};
use weft_session::Backend;

/// Each program reads `xss : [[i32]]` and `zsss : [[[i32]]]`.
const PROGRAMS: &[&str] = &[
    "print([sum(xs) for xs in xss], [len(xs) for xs in xss])",
    "print([[x * 2 + 1 for x in xs if x % 3 != 0] for xs in xss])",
    "print([max(xs) if len(xs) > 0 else 0 for xs in xss], [min(xs) if len(xs) > 1 else -1 for xs in xss])",
    "print([[x + len(xs) for x in xs] for xs in xss])",
    "print([[xs[i] for i in range(len(xs)) if i % 2 == 0] for xs in xss])",
    "print([[sum(ys) + len(yss) for ys in yss] for yss in zsss])",
    "print([[[y * len(ys) for y in ys if y != 0] for ys in yss] for yss in zsss])",
    "print(flatten(xss), concat(flatten(xss), [7]), [concat(xs, [len(xs)]) for xs in xss])",
    "print([xs if len(xs) % 2 == 0 else reverse(xs) for xs in xss])",
    "print([scan(lambda a, b: a + b, xs) for xs in xss], [exclusive_scan(lambda a, b: max(a, b), len(xs), xs) for xs in xss])",
    "print([sort(xs) for xs in xss], sort(flatten(xss)))",
    "k = 3\nf = lambda x: x * k\nprint([map(f, xs) for xs in xss], [[f(x) - k for x in xs] for xs in xss])",
    "print([[a * b for a, b in zip(xs, reverse(xs))] for xs in xss])",
    "print([xs[-1] if len(xs) > 0 else 0 for xs in xss], [xs[len(xs) // 2] for xs in xss if len(xs) > 0])",
    "print([[x for x in xs if x > min(xs)] if len(xs) > 0 else [] for xs in xss])",
    "print([xs[1:] for xs in xss], [xs[::2] for xs in xss], [xs[::-1] for xs in xss], [xs[-2:] for xs in xss])",
    "print(partition(flatten(xss), lengths(xss)) == xss, [xs == sort(xs) for xs in xss])",
    "print([reduce(lambda a, b: (a[0] + b[0], max(a[1], b[1])), [(x, x) for x in xs], (0, -100)) for xs in xss])",
    "print([sum([f32(x) * 0.5 for x in xs]) for xs in xss], [any([x > 5 for x in xs]) for xs in xss])",
    "print([[(x, len(ys)) for x in ys] for ys in flatten(zsss)], [count([y > 0 for y in flatten(yss)]) for yss in zsss])",
    "print([[gather(xs, [i for i in range(len(xs)) if i != 1]) for xs in yss] for yss in zsss])",
    "print([[x // 2 if x > 0 else -x for x in xs] for xs in xss], [[x for x in range(len(xs), 0, -2)] for xs in xss])",
    "def total(ys):\n    return sum([y * y for y in ys])\nprint([[total(ys) for ys in yss] for yss in zsss], [total(xs) for xs in xss])",
    "print([argmax(xs) if len(xs) > 0 else -1 for xs in xss], [[x for x in xs if x > 0 and 10 // x > 2] for xs in xss])",
    "print([[10 // x if x != 0 else 0 for x in xs] for xs in xss], [[xs[x] if x >= 0 and x < len(xs) else 0 for x in xs] for xs in xss])",
    "print([reduce(lambda a, b: a * 2 + b - a, xs, 1) for xs in xss], reduce(lambda a, b: concat(a, b), xss, [0]))",
    "print([scan(lambda a, b: (a[0] + b[0], a[1] * b[1] % 7), [(x, x) for x in xs]) for xs in xss])",
    "print([exclusive_scan(lambda a, b: concat(a, b), [len(xs)], [[x] for x in xs if x > 0]) for xs in xss])",
    "print([[ys < xs for ys in xss] for xs in xss], [[yss >= zss for yss in zsss] for zss in zsss])",
    "print([min(yss) if len(yss) > 0 else [] for yss in zsss], max(xss) if len(xss) > 0 else [], [argmax(yss) if len(yss) > 0 else -1 for yss in zsss])",
    "print([argmin([(x % 3, -x) for x in xs]) if len(xs) > 0 else -1 for xs in xss], [min([xs, reverse(xs)]) for xs in xss])",
    "print([permute(yss, [len(yss) - 1 - i for i in range(len(yss))]) for yss in zsss], [scatter(xss[:1], [0 for t in xss[:1]], yss) if len(yss) > 0 else yss for yss in zsss], [scatter(yss[:1], [-1], yss) if len(yss) > 0 else yss for yss in zsss])",
    "def steps(n: i32) -> i32:\n    s = 0\n    while n > 0:\n        s += n\n        n -= 2\n    return s\nprint([[steps(x % 6) for x in xs] for xs in xss])",
    "def weigh(xs: [i32]) -> i32:\n    t = 0\n    for i, x in zip(indices(xs), xs):\n        t = t * 3 + i * x\n    return t\nprint([weigh(xs) for xs in xss], [[weigh(ys) for ys in yss] for yss in zsss])",
    "def dot(xs: [i32]) -> i32:\n    t = 0\n    for p in zip(xs, reverse(xs)):\n        t = t + p[0] * p[1]\n    return t\ndef back(xs: [i32]) -> i32:\n    t = 0\n    for i in range(len(xs) - 1, -1, -2):\n        t = t * 10 + xs[i]\n    return t\nprint([dot(xs) for xs in xss], [[back(ys) for ys in yss] for yss in zsss])",
    "def head4(xs: [i32]) -> i32:\n    t = 0\n    for i in range(4):\n        t += xs[i]\n    return t\nprint([head4(xs) for xs in xss])",
    "def stepped(x: i32) -> i32:\n    t = 0\n    for i in range(0, 10, x % 3):\n        t += i\n    return t\nprint([[stepped(x) for x in xs] for xs in xss])",
    "def add2(a: (i32, i32), b: (i32, i32)) -> (i32, i32):\n    return (a[0] + b[0], a[1] * b[1] % 1000)\nprint([sum([x * x for x in xs]) for xs in xss], [[product(ys) for ys in yss] for yss in zsss], [reduce(add2, [(x, x + 2) for x in xs], (0, 1)) for xs in xss])",
    "print([sum([xs[(i * 7) % len(xs)] // (x + 10) for i, x in zip(indices(xs), xs)]) for xs in xss], [[sum([ys[k] for k in range(len(ys) - 1, -1, -1)]) for ys in yss] for yss in zsss], [sum([xs[2] for x in xs]) for xs in xss])",
    "def shrink(xs: [i32]) -> [i32]:\n    while len(xs) > 2:\n        xs = [x + 1 for x in xs[1:] if x != 0]\n    return xs\nprint([shrink(xs) for xs in xss])",
    "def depth(xs: [i32]) -> i32:\n    if len(xs) < 2:\n        return len(xs)\n    h = len(xs) // 2\n    return max(depth(xs[:h]), depth(xs[h:])) + 1\nprint([depth(xs) for xs in xss], [[depth(ys) for ys in yss] for yss in zsss])",
    "def qs(xs: [i32]) -> [i32]:\n    if len(xs) < 2:\n        return xs\n    p = xs[0]\n    parts = [qs(part) for part in [[x for x in xs if x < p], [x for x in xs if x > p]]]\n    return concat(concat(parts[0], [x for x in xs if x == p]), parts[1])\nprint([qs(xs) for xs in xss], qs(flatten(xss)))",
];

fn literal<T: std::fmt::Debug>(value: &T) -> String {
    format!("{value:?}")
}

fn nested() -> impl Strategy<Value = (Vec<Vec<i32>>, Vec<Vec<Vec<i32>>>)> {
    let row = || prop::collection::vec(-9i32..10, 0..5);
    (prop::collection::vec(row(), 0..6), prop::collection::vec(prop::collection::vec(row(), 0..4), 0..4))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn cpu_matches_interpreter_on_random_nested_inputs((xss, zsss) in nested()) {
        // The identity functions type the inputs even where their lists are empty.
        let header = format!(
            "def two(x: [[i32]]) -> [[i32]]:\n    return x\ndef three(x: [[[i32]]]) -> [[[i32]]]:\n    return x\nxss = two({})\nzsss = three({})\n",
            literal(&xss),
            literal(&zsss)
        );
        for program in PROGRAMS {
            let source = format!("{header}{program}\n");
            let (expected, expected_error) = run(&source, Backend::Interp, Options::default());
            // Flat, the default; with inner reductions sequential in each element; and with
            // recursions entered from parallel code running two elements at a time.
            let schedules = [
                Options::default(),
                Options { inner: InnerSchedule::Sequential, ..Options::default() },
                Options { piece_size: 2, ..Options::default() },
            ];
            for options in schedules {
                let (actual, actual_error) = run(&source, Backend::Cpu, options);
                prop_assert_eq!(&expected_error, &actual_error, "{:?}\n{}", options, source);
                if let Err(difference) = compare(&expected, &actual) {
                    prop_assert!(false, "{:?}\n{}\n{}", options, source, difference);
                }
            }
        }
    }
}
