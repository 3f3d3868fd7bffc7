//! Random tests of vectorised recursion: the samples' quicksort and quickhull, flattened on the
//! CPU executor, against the reference interpreter, on inputs chosen to break them: many
//! duplicates, sorted and reverse-sorted inputs, empty inputs, and points on a small grid (many
//! collinear and repeated points). The quicksort output is also checked against Rust's sort.

use crate::common;

use common::differential::{compare, run_source as run};
use proptest::prelude::*;
use weft_session::Backend;

/// The functions of `samples/quicksort.weft` and `samples/quickhull.weft`, read from the
/// samples themselves so that the test follows them.
fn sample_functions(name: &str, upto: &str) -> String {
    let path = format!("{}/samples/{name}.weft", crate::common::workspace_root().display());
    let text = std::fs::read_to_string(&path).expect("the sample exists");
    let start = text.find("def ").expect("the sample defines functions");
    let end = text.find(upto).expect("the sample has the marker");
    text[start..end].to_string()
}

/// Runs `source` on both executors and gives the CPU executor's output once they agree.
fn agree(source: &str) -> Result<String, TestCaseError> {
    let (expected, expected_error) = run(source, Backend::Interp);
    let (actual, actual_error) = run(source, Backend::Cpu);
    prop_assert_eq!(&expected_error, &actual_error, "{}", source);
    if let Err(difference) = compare(&expected, &actual) {
        prop_assert!(false, "{}\n{}", source, difference);
    }
    Ok(actual)
}

/// Integers with many duplicates, as given, sorted, or reverse-sorted.
fn sort_input() -> impl Strategy<Value = Vec<i32>> {
    (prop::collection::vec(-5i32..6, 0..40), 0..3u8).prop_map(|(mut xs, order)| {
        match order {
            1 => xs.sort(),
            2 => xs.sort_by(|a, b| b.cmp(a)),
            _ => {}
        }
        xs
    })
}

/// Points on a 5 x 5 grid, so that many are collinear or repeated; sometimes all on one line.
fn hull_input() -> impl Strategy<Value = Vec<(i32, i32)>> {
    (prop::collection::vec((0i32..5, 0i32..5), 0..30), any::<bool>()).prop_map(|(points, on_a_line)| {
        if on_a_line { points.into_iter().map(|(x, _)| (x, 2 * x)).collect() } else { points }
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn quicksort_matches_the_interpreter_and_sorts(xs in sort_input()) {
        let functions = sample_functions("quicksort", "def is_sorted");
        let source = format!("{functions}\ndef ints(x: [i32]) -> [i32]:\n    return x\nprint(quicksort(ints({xs:?})))\n");
        let output = agree(&source)?;
        let mut sorted = xs.clone();
        sorted.sort_unstable();
        prop_assert_eq!(output.trim(), format!("{sorted:?}"));
    }

    #[test]
    fn quickhull_matches_the_interpreter(points in hull_input()) {
        let functions = sample_functions("quickhull", "def area");
        let literal: Vec<String> = points.iter().map(|(x, y)| format!("({x}.0, {y}.0)")).collect();
        let source = format!(
            "{functions}\ndef pts(p: [(f32, f32)]) -> [(f32, f32)]:\n    return p\nprint(quickhull(pts([{}])))\n",
            literal.join(", ")
        );
        agree(&source)?;
    }
}
