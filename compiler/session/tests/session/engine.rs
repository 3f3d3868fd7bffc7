//! The session engine: cells as database inputs, redefinition and its diagnostics, errors that
//! leave the session usable, resident values, interrupts, and a compile cost that does not grow
//! with the session.

use std::time::{Duration, Instant};

use weft_analysis::Database;
use weft_analysis::pipeline::Options;
use weft_session::engine::Engine;
use weft_session::{Backend, DeviceSlot, Event, Session};
use weft_syntax::Code;

use crate::common::differential::gpu_available;

fn backends() -> Vec<Backend> {
    let mut backends = vec![Backend::Interp, Backend::Cpu];
    if gpu_available() {
        backends.push(Backend::Gpu);
    }
    backends
}

fn engine(backend: Backend) -> Engine {
    Engine::new(Session::default(), Some(backend), Options::default())
}

/// What a cell shows: results as `value : type`, printed lines, and diagnostics as
/// `source code message`.
fn cell(engine: &mut Engine, text: &str) -> (bool, String) {
    let mut out = String::new();
    let ok = engine.run_cell(text, &mut |event| match event {
        Event::Value { text, ty, .. } => out.push_str(&format!("{text} : {ty}\n")),
        Event::Printed(line) => out.push_str(&line),
        Event::Chart(chart) => out.push_str(&format!("{}\n", chart.summary())),
        Event::Diagnostic { diagnostic, source, .. } => {
            out.push_str(&format!("{source} {} {}\n", diagnostic.code.as_str(), diagnostic.message))
        }
        Event::Notice(_) | Event::Profile(_) => {}
    });
    (ok, out)
}

#[test]
fn later_cells_see_earlier_values_and_definitions_on_every_executor() {
    for backend in backends() {
        let mut e = engine(backend);
        assert_eq!(cell(&mut e, "def sq(x):\n    return x * x\n"), (true, String::new()));
        assert_eq!(cell(&mut e, "xs = [1.0, 2.0, 3.0]"), (true, String::new()));
        assert_eq!(
            cell(&mut e, "sum([sq(x) for x in xs])"),
            (true, "14.0 : f32\n".to_string()),
            "{backend:?}"
        );
        assert_eq!(cell(&mut e, "_ * 2.0"), (true, "28.0 : f32\n".to_string()), "{backend:?}");
        assert_eq!(cell(&mut e, "print(len(xs))"), (true, "3\n".to_string()), "{backend:?}");
        // A name may be bound again with another type, as in Python.
        assert_eq!(cell(&mut e, "xs = 7\nxs + 1"), (true, "8 : i32\n".to_string()), "{backend:?}");
    }
}

#[test]
fn a_redefinition_is_late_bound_and_names_the_definitions_it_breaks() {
    let mut e = engine(Backend::Interp);
    cell(&mut e, "def f(x):\n    return x + 1\n");
    cell(&mut e, "def g(x):\n    return f(x) * 2\n");
    assert_eq!(cell(&mut e, "g(1)"), (true, "4 : i32\n".to_string()));
    // `g`, defined before, calls the new `f`.
    assert_eq!(cell(&mut e, "def f(x):\n    return x + 10\n"), (true, String::new()));
    assert_eq!(cell(&mut e, "g(1)"), (true, "22 : i32\n".to_string()));
    // A definition that breaks `g` is accepted, and `g` is named, with its cell, until fixed.
    let (ok, out) = cell(&mut e, "def f(x):\n    return x > 0\n");
    assert!(ok, "{out}");
    assert!(out.starts_with("cell[2] E0300 `g` (cell 2) no longer type-checks:"), "{out}");
    let (ok, out) = cell(&mut e, "g(1)");
    assert!(!ok);
    assert!(out.contains("`g` (cell 2) no longer type-checks"), "{out}");
    cell(&mut e, "def g(x):\n    return f(x)\n");
    assert_eq!(cell(&mut e, "g(1)"), (true, "True : bool\n".to_string()));
}

#[test]
fn a_cell_that_does_not_compile_changes_nothing() {
    let mut e = engine(Backend::Cpu);
    cell(&mut e, "x = 1");
    let (ok, out) = cell(&mut e, "x = 2\ny = x + 1.5");
    assert!(!ok);
    assert!(out.starts_with("cell[2] E0300"), "{out}");
    assert_eq!(cell(&mut e, "x"), (true, "1 : i32\n".to_string()));
    let (ok, out) = cell(&mut e, "y");
    assert!(!ok && out.contains("E0200"), "{out}");
}

#[test]
fn a_run_time_error_keeps_what_the_earlier_statements_bound() {
    for backend in backends() {
        let mut e = engine(backend);
        let (ok, out) = cell(&mut e, "a = 5\nxs = [1, 2, 3]\nb = xs[a]\nc = 1");
        assert!(!ok);
        assert!(out.starts_with("cell[1] E0400"), "{backend:?}: {out}");
        assert_eq!(cell(&mut e, "a + xs[2]"), (true, "8 : i32\n".to_string()), "{backend:?}");
        let (ok, out) = cell(&mut e, "c");
        assert!(!ok && out.contains("E0200"), "{backend:?}: {out}");
    }
}

#[test]
fn a_run_time_error_inside_an_earlier_definition_points_into_its_cell() {
    let mut e = engine(Backend::Cpu);
    cell(&mut e, "def at(xs, i):\n    return xs[i]\n");
    let (ok, out) = cell(&mut e, "at([1, 2], 5)");
    assert!(!ok);
    assert!(out.starts_with("cell[1] E0400 index 5 is out of range"), "{out}");
    // Commands' expressions are not cells: the next cell is still number 3.
    assert_eq!(e.type_of("at([1], 0)", &mut |_| {}), Some("i32".to_string()));
    assert_eq!(e.next_cell(), 3);
}

#[test]
fn a_run_time_error_is_located_in_its_cell_and_names_its_statement() {
    let mut e = engine(Backend::Interp);
    let mut diagnostics = Vec::new();
    e.run_cell("x = 1\ny = [1, 2][x + 4]", &mut |event| {
        if let Event::Diagnostic { diagnostic, source, text } = event {
            diagnostics.push((diagnostic, source, text));
        }
    });
    let [(d, source, text)] = diagnostics.as_slice() else { panic!("{diagnostics:?}") };
    assert_eq!(source, "cell[1]");
    assert_eq!(&text[d.range], "[1, 2][x + 4]");
    assert!(d.notes.iter().any(|n| n.contains("statement 2 of cell 1")), "{:?}", d.notes);
}

#[test]
fn long_values_are_shortened_and_typed_with_their_lengths_on_every_executor() {
    for backend in backends() {
        let mut e = engine(backend);
        assert_eq!(
            cell(&mut e, "range(1000000)"),
            (true, "[0, 1, 2, 3, 4, 5, 6, 7, 8, …, 999999] : [i32; 1000000]\n".to_string()),
            "{backend:?}"
        );
        e.shown_items = 4;
        assert_eq!(
            cell(&mut e, "[[i, i] for i in range(5)]"),
            (true, "[[0, 0], [1, 1], [2, 2], …, [4, 4]] : [[i32; 2]; 5]\n".to_string()),
            "{backend:?}"
        );
        assert_eq!(
            cell(&mut e, "[range(i) for i in range(3)]"),
            (true, "[[], [0], [0, 1]] : [[i32]; 3]\n".to_string()),
            "{backend:?}"
        );
        assert_eq!(
            cell(&mut e, "[(i, [[j, i] for j in range(i)]) for i in range(6)]"),
            (
                true,
                "[(0, []), (1, [[0, 1]]), (2, [[0, 2], [1, 2]]), …, (5, [[0, 5], [1, 5], [2, 5], …, [4, 5]])] \
                 : [(i32, [[i32]]); 6]\n"
                    .to_string()
            ),
            "{backend:?}"
        );
        assert_eq!(
            cell(&mut e, "([1.5], (True,))"),
            (true, "([1.5], (True,)) : ([f32; 1], (bool))\n".to_string()),
            "{backend:?}"
        );
    }
}

#[test]
fn later_cells_know_the_real_lengths_of_earlier_values_on_every_executor() {
    for backend in backends() {
        let mut e = engine(backend);
        let bound = cell(&mut e, "xs = [1.0, 2.0, 3.0]\nys = [4.0, 5.0]\nrows = [[1, 2], [3, 4]]");
        assert_eq!(bound, (true, String::new()), "{backend:?}");
        // Without the lengths, this zip would only be checked at run time, with a warning.
        assert_eq!(
            cell(&mut e, "[(r, y) for (r, y) in zip(rows, ys)]"),
            (true, "[([1, 2], 4.0), ([3, 4], 5.0)] : [([i32; 2], f32); 2]\n".to_string()),
            "{backend:?}"
        );
        // A mismatch is proven before anything runs, and the cell binds nothing.
        let (ok, out) = cell(&mut e, "zs = 1\n[x + y for (x, y) in zip(xs, ys)]");
        assert!(!ok, "{backend:?}");
        assert!(out.starts_with("cell[3] E0350 `zip` needs sequences of equal length"), "{backend:?}: {out}");
        assert!(e.value("zs").is_none(), "{backend:?}");
        // Rows of different lengths are not claimed equal: the index is still checked.
        assert!(cell(&mut e, "ragged = [[1, 2], [3]]").0, "{backend:?}");
        let (ok, out) = cell(&mut e, "[r[1] for r in ragged]");
        assert!(!ok && out.contains("E0400"), "{backend:?}: {out}");
        assert_eq!(e.hint("ragged").as_deref(), Some("[[i32]; 2]"), "{backend:?}");
        assert_eq!(cell(&mut e, "ragged[1]"), (true, "[3] : [i32; 1]\n".to_string()), "{backend:?}");
    }
}

#[test]
fn hints_name_what_a_word_is_without_running_anything() {
    let mut e = engine(Backend::Cpu);
    assert!(cell(&mut e, "def sq(x):\n    return x * x\n\nrows = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]").0);
    assert_eq!(e.hint("rows").as_deref(), Some("[[f32; 2]; 3]"));
    assert_eq!(e.hint("sq").as_deref(), Some("Num a => a -> a"));
    assert_eq!(e.hint("len").as_deref(), Some("len(xs: [a]) -> i32"));
    assert_eq!(e.hint("nothing"), None);
}

fn require_gpu() -> bool {
    if gpu_available() {
        return true;
    }
    eprintln!("skipped: no GPU adapter (set WEFT_REQUIRE_GPU=1 to fail instead)");
    assert!(std::env::var("WEFT_REQUIRE_GPU").is_err(), "WEFT_REQUIRE_GPU is set and there is no adapter");
    false
}

#[test]
fn values_computed_on_the_gpu_stay_there_between_cells() {
    if !require_gpu() {
        return;
    }
    let mut e = engine(Backend::Gpu);
    assert_eq!(cell(&mut e, "xs = random_f32(1000000, 1)"), (true, String::new()));
    assert!(e.value("xs").is_some_and(|xs| xs.is_on_device()));
    let gpu = e.session().device().current().cloned().expect("the device that ran the cell");
    let before = gpu.stats();
    let (ok, out) = cell(&mut e, "sum(xs)");
    assert!(ok, "{out}");
    let after = gpu.stats();
    assert_eq!(after.bytes_uploaded - before.bytes_uploaded, 0, "a resident value is not uploaded again");
    assert_eq!(after.bytes_read_back - before.bytes_read_back, 4, "only the scalar result is read back");
}

#[test]
fn a_nested_device_value_is_read_back_only_as_far_as_its_text_needs() {
    if !require_gpu() {
        return;
    }
    let mut e = engine(Backend::Gpu);
    let rows = "rows = [[i * 1000 + j for j in range(1000)] for i in range(1000)]";
    assert_eq!(cell(&mut e, rows), (true, String::new()));
    let gpu = e.session().device().current().cloned().expect("the device that ran the cell");
    let before = gpu.stats();
    e.shown_items = 3;
    assert_eq!(
        cell(&mut e, "rows"),
        (
            true,
            "[[0, 1, …, 999], [1000, 1001, …, 1999], …, [999000, 999001, …, 999999]] : [[i32; 1000]; 1000]\n"
                .to_string()
        )
    );
    let after = gpu.stats();
    // The rows' offsets and lengths (every length decides the type), then 9 of the million
    // elements: two read-backs, not the 4 MB of data.
    assert_eq!(after.bytes_read_back - before.bytes_read_back, 2 * 4 * 1000 + 9 * 4, "bytes read back");
    assert_eq!(after.read_backs - before.read_backs, 2, "read-backs");
    // A row of the collection, at its own offset.
    assert_eq!(cell(&mut e, "rows[999]"), (true, "[999000, 999001, …, 999999] : [i32; 1000]\n".to_string()));
    assert_eq!(
        cell(&mut e, "last = rows[998]\nlast"),
        (true, "[998000, 998001, …, 998999] : [i32; 1000]\n".to_string())
    );
    let vars = e.vars();
    let rows = vars.iter().find(|v| v.name == "rows").expect("rows");
    assert_eq!((rows.ty.as_str(), rows.shape.as_deref()), ("[[i32; 1000]; 1000]", Some("1000 × 1000")));
}

#[test]
fn compiling_a_cell_costs_the_same_after_200_earlier_cells() {
    let executed_for_last_cell = |earlier: usize| {
        let (db, log) = Database::with_execution_log();
        let mut e = Engine::new(
            Session::with_database(db, DeviceSlot::default()),
            Some(Backend::Cpu),
            Options::default(),
        );
        for i in 0..earlier {
            let text = if i % 2 == 0 {
                format!("v{i} = {i}")
            } else {
                format!("def f{i}(x):\n    return x + {i}\n")
            };
            assert!(e.run_cell(&text, &mut |_| {}), "{text}");
        }
        log.take();
        assert!(e.run_cell("sum([x * x for x in range(1000)]) + v0", &mut |_| {}));
        // The query names, without the ids salsa gave their inputs.
        let mut names: Vec<String> =
            log.take().iter().map(|q| q.split('(').next().unwrap_or(q).to_string()).collect();
        names.sort();
        names
    };
    // Both sessions end with a value cell, so the scratch file changes alike for the last one.
    let after_one = executed_for_last_cell(1);
    let after_200 = executed_for_last_cell(201);
    assert_eq!(after_one, after_200, "queries executed for one cell after 1 and after 200 earlier cells");
}

#[test]
fn an_interrupt_stops_a_cell_and_keeps_what_was_bound_before() {
    for backend in backends() {
        let mut e = engine(backend);
        cell(&mut e, "kept = 41");
        let interrupt = e.interrupt();
        let stopper = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            let asked = Instant::now();
            interrupt.request();
            asked
        });
        let mut stopped_with = None;
        e.run_cell("before = 1\ni = 0\nwhile i >= 0:\n    i = i + 1\n", &mut |event| {
            if let Event::Diagnostic { diagnostic, .. } = event {
                stopped_with = Some(diagnostic.code);
            }
        });
        let asked = stopper.join().expect("the stopper thread");
        let latency = asked.elapsed();
        assert_eq!(stopped_with, Some(Code::Interrupted), "{backend:?}");
        assert!(latency < Duration::from_millis(100), "{backend:?}: stopped {latency:?} after the request");
        assert_eq!(cell(&mut e, "kept + before"), (true, "42 : i32\n".to_string()), "{backend:?}");
    }
}

#[test]
fn types_listings_and_variables_come_from_the_session() {
    let mut e = engine(Backend::Cpu);
    cell(&mut e, "def sq(x):\n    return x * x\nxs = [1.0, 2.0]");
    assert_eq!(e.type_of("sq", &mut |_| {}), Some("Num a => a -> a".to_string()));
    assert_eq!(e.type_of("[sq(x) for x in xs]", &mut |_| {}), Some("[f32]".to_string()));
    let plan = e.listing(weft_session::engine::Listing::Fusion, "sum([sq(x) for x in xs])", &mut |_| {});
    let plan = plan.expect("a plan");
    assert!(plan.plan.is_some_and(|plan| !plan.kernels.is_empty()));
    // Ops are placed where they were written: `x * x` in `sq`, line 2 of cell 1.
    assert!(plan.text.contains("2:12  ") && plan.text.contains("= binary* (cell[1])"), "{}", plan.text);
    let vars = e.vars();
    assert_eq!(vars.len(), 1);
    assert_eq!((vars[0].name.as_str(), vars[0].ty.as_str(), vars[0].bytes), ("xs", "[f32; 2]", 16));
    let completions = e.completions("s", 1);
    assert!(completions.iter().any(|c| c.label == "sq"), "{completions:?}");
    assert!(completions.iter().any(|c| c.label == "sum"), "{completions:?}");
    assert!(!completions.iter().any(|c| c.label.starts_with("__")), "{completions:?}");
}
