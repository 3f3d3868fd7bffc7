//! `cargo bench --bench check`: parse and name resolution of a generated 5,000-line file, the
//! target in `docs/performance.md` (under 30 ms). Baselines in the same run: parsing alone, and
//! re-checking after an edit to one function (the incremental path an editor takes).
//!
//! The generated file is also written to `target/bench-5000-lines.weft`, so that the whole
//! `weft check` command can be timed against it (see `docs/performance.md`).

use criterion::{Criterion, criterion_group, criterion_main};

/// The allocator the `weft` binary uses, so that the figures are the command's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use salsa::Setter;
use weft_analysis::Database;
use weft_analysis::SourceFile;
use weft_analysis::file_diagnostics;
use weft_syntax as syntax;

const LINES: usize = 5_000;

/// One function in the style of the samples: comprehensions, a filter, a loop, a branch, a lambda.
fn function(i: usize) -> String {
    format!(
        "def kernel_{i}(xs: [f32], ys: [f32], n: i32) -> f32:\n\
         \x20   # Scaled dot product with a running correction.\n\
         \x20   scaled = [x * {i}.5 + y for x, y in zip(xs, ys) if x > 0.0]\n\
         \x20   total = reduce(lambda a, b: a + b, scaled, 0.0)\n\
         \x20   k = 0\n\
         \x20   while k < n:\n\
         \x20       total = total * 0.5 + sqrt(abs(total))\n\
         \x20       k += 1\n\
         \x20   if total > {i}.0:\n\
         \x20       return total - max(scaled)\n\
         \x20   return total + sum([xs[j] * ys[-j] for j in range(len(xs))])\n\
         \n"
    )
}

fn generated_file() -> String {
    let mut res = String::from("# Generated for the 5,000-line check benchmark.\n\n");
    let mut i = 0;
    while res.lines().count() + 14 < LINES {
        res.push_str(&function(i));
        i += 1;
    }
    res.push_str("xs = random_f32(1000, 1)\nys = random_f32(1000, 2)\n");
    while res.lines().count() < LINES {
        res.push_str(&format!("print(kernel_{}(xs, ys, 3))\n", res.lines().count() % i));
    }
    res
}

fn benches(c: &mut Criterion) {
    let text = generated_file();
    assert_eq!(text.lines().count(), LINES);
    let target = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-5000-lines.weft");
    let _ = std::fs::write(&target, &text);

    // The check must be clean, or the benchmark measures error reporting instead.
    let db = Database::default();
    let file = SourceFile::new(&db, "bench.weft".to_string(), text.clone());
    assert!(file_diagnostics(&db, file).is_empty(), "{:?}", file_diagnostics(&db, file).first());

    // `weft check` exits without freeing its trees, so the drops are kept out of the timings.
    c.bench_function("parse 5000 lines", |b| b.iter_with_large_drop(|| syntax::parse(&text)));
    c.bench_function("check 5000 lines (parse + names, fresh database)", |b| {
        b.iter_with_large_drop(|| {
            let db = Database::default();
            let file = SourceFile::new(&db, "bench.weft".to_string(), text.clone());
            file_diagnostics(&db, file).len();
            db
        })
    });

    let edited = text.replacen("    k = 0\n", "    k = 0 + 0\n", 1);
    let mut db = Database::default();
    let file = SourceFile::new(&db, "bench.weft".to_string(), text.clone());
    file_diagnostics(&db, file);
    let mut flip = false;
    c.bench_function("re-check 5000 lines after editing one function", |b| {
        b.iter(|| {
            flip = !flip;
            file.set_text(&mut db).to(if flip { edited.clone() } else { text.clone() });
            file_diagnostics(&db, file).len()
        })
    });
}

criterion_group!(check, benches);
criterion_main!(check);
