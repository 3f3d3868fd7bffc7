//! The session boundary the REPL and the kernel build on: runs that report through events,
//! entry functions called with arguments on every executor (device values that outlive a run),
//! a device slot that forgets failures, and one interrupt that stops a long run on each
//! executor and leaves the session working.

use std::time::{Duration, Instant};

use weft_analysis::pipeline::Options;
use weft_core::types::Type;
use weft_exec::interp::{NestedValue, Seq};
use weft_session::{Backend, DeviceSlot, Event, RunError, Session, SessionValue};
use weft_syntax::Code;

use crate::common::differential::gpu_available;

/// The executors this machine can run: the GPU one only with an adapter.
fn backends() -> Vec<Backend> {
    let mut backends = vec![Backend::Interp, Backend::Cpu];
    if gpu_available() {
        backends.push(Backend::Gpu);
    }
    backends
}

/// Runs `text` and gives what it printed.
fn run(session: &mut Session, text: &str, backend: Backend) -> Result<String, RunError> {
    let file = session.source("cell.weft", text);
    let mut printed = String::new();
    let mut events = |event: Event| {
        if let Event::Printed(line) = event {
            printed.push_str(&line);
        }
    };
    session.run(file, Some(backend), Options::default(), false, &mut events)?;
    Ok(printed)
}

#[test]
fn a_run_reports_what_it_prints_as_events_on_every_executor() {
    let mut session = Session::default();
    for backend in backends() {
        let printed = run(&mut session, "print(sum([i * i for i in range(10)]))\n", backend);
        assert_eq!(printed, Ok("285\n".to_string()), "{backend:?}");
    }
}

const SCALE: &str = "\
def scale(xs, k):
    return [x * k for x in xs]

print(scale([1, 2], 3))
";

fn i32s(items: &[i32]) -> SessionValue {
    SessionValue::nested(Type::Seq(Box::new(Type::I32)), NestedValue::Seq(Seq::i32s(items.to_vec())))
}

#[test]
fn an_entry_function_runs_with_arguments_on_every_executor() {
    let mut session = Session::default();
    let file = session.source("scale.weft", SCALE);
    let ten = SessionValue::nested(Type::I32, NestedValue::I32(10));
    for backend in backends() {
        let mut events = |_: Event| {};
        let result = session
            .call(
                file,
                "scale",
                vec![i32s(&[4, 5, 6]), ten.clone()],
                backend,
                Options::default(),
                &mut events,
            )
            .unwrap_or_else(|e| panic!("{backend:?}: {e:?}"));
        assert_eq!(result.ty(), &Type::Seq(Box::new(Type::I32)));
        assert_eq!(result.is_on_device(), backend == Backend::Gpu, "{backend:?}");
        assert_eq!(session.display(&result).expect("readable"), "[40, 50, 60]", "{backend:?}");
        let shown = session.describe(&result).expect("readable");
        let rows = [40, 50, 60].iter().enumerate().map(|(i, x)| Some((i, vec![x.to_string()]))).collect();
        let table = Some(weft_session::Table { columns: vec![], rows });
        let expected =
            Event::Value { text: "[40, 50, 60]".into(), ty: "[i32]".into(), shape: Some("3".into()), table };
        assert_eq!(shown, expected, "{backend:?}");
        // The result is the next call's argument: on the GPU it never leaves the device.
        let again = session
            .call(file, "scale", vec![result, ten.clone()], backend, Options::default(), &mut events)
            .unwrap_or_else(|e| panic!("{backend:?}: {e:?}"));
        assert_eq!(again.is_on_device(), backend == Backend::Gpu, "{backend:?}");
        assert_eq!(session.display(&again).expect("readable"), "[400, 500, 600]", "{backend:?}");
    }
}

#[test]
fn an_entry_function_without_a_specialisation_at_the_arguments_types_is_a_diagnostic() {
    let mut session = Session::default();
    let file = session.source("scale.weft", SCALE);
    let half = SessionValue::nested(Type::F32, NestedValue::F32(0.5));
    let mut events = |_: Event| {};
    let error =
        session.call(file, "scale", vec![i32s(&[1]), half], Backend::Cpu, Options::default(), &mut events);
    match error {
        Err(RunError::Runtime(d)) => {
            assert_eq!(d.code, Code::InvalidArgument);
            assert!(d.message.contains("no function `scale` takes ([i32], f32)"), "{}", d.message);
            assert!(d.help.iter().any(|h| h.contains("argument types")), "{d:?}");
        }
        other => panic!("expected a diagnostic, got {other:?}"),
    }
}

#[test]
fn a_device_slot_forgets_a_failure_and_can_be_replaced() {
    let mut slot = DeviceSlot::new(Some("no adapter is called this".to_string()));
    let error = slot.get().err().expect("no adapter has that name");
    assert!(error.0.contains("no adapter"), "{}", error.0);
    assert!(slot.current().is_none(), "a failure is not kept as the device");
    if !gpu_available() {
        return;
    }
    slot.prefer(None);
    let first = slot.get().expect("the best adapter");
    assert!(std::sync::Arc::ptr_eq(&first, &slot.get().expect("the same device")));
    slot.reset();
    let second = slot.get().expect("a new device");
    assert!(!std::sync::Arc::ptr_eq(&first, &second), "reset gives a new device");
    // A device the driver reports lost is replaced by the next `get`.
    second.destroy();
    assert!(second.is_lost(), "the loss is reported");
    assert!(slot.current().is_none(), "a lost device is not current");
    let third = slot.get().expect("a replacement");
    assert!(!third.is_lost() && !std::sync::Arc::ptr_eq(&second, &third));
}

#[test]
fn a_session_replaces_a_lost_device_and_runs_on() {
    if !gpu_available() {
        return;
    }
    let mut session = Session::default();
    assert_eq!(run(&mut session, "print(sum([1, 2, 3]))\n", Backend::Gpu), Ok("6\n".to_string()));
    session.device().current().expect("the session's device").destroy();
    assert_eq!(run(&mut session, "print(sum([1, 2, 3]))\n", Backend::Gpu), Ok("6\n".to_string()));
}

/// A loop that would run for hours on any executor, with a vector op in each step (so the GPU
/// executor records launches as it goes).
const ENDLESS: &str = "\
xs = [f32(i) for i in range(1000)]
i = 0
while i < 2000000000:
    xs = [x + 1.0 for x in xs]
    i = i + 1
print(xs[0])
";

#[test]
fn an_interrupt_stops_a_long_run_on_every_executor_and_the_session_goes_on() {
    let mut session = Session::default();
    for backend in backends() {
        let interrupt = session.interrupt();
        let started = Instant::now();
        let stopper = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(500));
            interrupt.request();
        });
        let outcome = run(&mut session, ENDLESS, backend);
        stopper.join().expect("the stopper thread");
        match outcome {
            Err(RunError::Runtime(d)) => assert_eq!(d.code, Code::Interrupted, "{backend:?}: {d:?}"),
            other => panic!("{backend:?}: expected an interrupt, got {other:?}"),
        }
        assert!(started.elapsed() < Duration::from_secs(60), "{backend:?} took {:?}", started.elapsed());
        // The next run starts clean: the flag is lowered and no half-recorded work runs.
        let printed = run(&mut session, "print(sum([f32(i) for i in range(10)]))\n", backend);
        assert_eq!(printed, Ok("45.0\n".to_string()), "{backend:?}");
    }
}

#[test]
fn a_nested_value_shows_its_shape() {
    let mut session = Session::default();
    let file = session
        .source("rows.weft", "def rows(n):\n    return [range(i) for i in range(n)]\n\nprint(rows(2))\n");
    let mut events = |_: Event| {};
    let n = SessionValue::nested(Type::I32, NestedValue::I32(4));
    let rows =
        session.call(file, "rows", vec![n], Backend::Cpu, Options::default(), &mut events).expect("runs");
    match session.describe(&rows).expect("readable") {
        Event::Value { text, ty, shape, .. } => {
            assert_eq!(text, "[[], [0], [0, 1], [0, 1, 2]]");
            assert_eq!(ty, "[[i32]]");
            assert_eq!(shape.as_deref(), Some("4 × 0..3"));
        }
        other => panic!("{other:?}"),
    }
}
