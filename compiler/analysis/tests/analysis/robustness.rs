//! No input makes the front end panic or hang: every prefix of every sample and test program, and
//! random byte mutations of each, go through the parser and the whole check (and, when that is
//! clean, specialisation to the core), each within a bound.

use crate::common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use salsa::Setter;
use weft_analysis::db::{Database, SourceFile};
use weft_analysis::decode_source;
use weft_analysis::file_diagnostics;
use weft_syntax as syntax;

/// Far above the real cost (well under a millisecond per input); only a hang or a blow-up trips it,
/// even in a debug build on a busy 2-core machine.
const TIME_BOUND: Duration = Duration::from_secs(2);
const MUTATIONS_PER_PROGRAM: usize = 300;

fn programs() -> Vec<PathBuf> {
    let res = common::weft_programs(common::ALL_PROGRAM_DIRS);
    assert!(res.len() > 20, "expected the samples and test programs, found {}", res.len());
    res
}

/// Checks `bytes` as the new text of `file`, failing with the input if it panics or is too slow.
fn check_bounded(db: &mut Database, file: SourceFile, bytes: &[u8], origin: &str) {
    let started = Instant::now();
    let (text, _) = decode_source(bytes);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let parse = syntax::parse(&text);
        assert_eq!(parse.syntax().to_string(), text, "the tree is lossless");
        file.set_text(db).to(text.clone());
        // An input that checks clean is also specialised to the core, the last compile step.
        let clean = !file_diagnostics(db, file).iter().any(|d| d.is_error());
        if clean {
            let _ = weft_analysis::mono::core_program(db, file);
        }
        file_diagnostics(db, file).len()
    }));
    let elapsed = started.elapsed();
    assert!(outcome.is_ok(), "the check panicked on {origin}; input: {text:?}");
    assert!(elapsed < TIME_BOUND, "the check took {elapsed:?} on {origin}; input: {text:?}");
}

/// Runs `test` on its own thread and fails if it has not finished within `limit`, so that a hang
/// fails the test instead of stalling the suite.
fn with_watchdog(limit: Duration, test: impl FnOnce() + Send + 'static) {
    let (done, finished) = std::sync::mpsc::channel();
    let worker = std::thread::spawn(move || {
        test();
        let _ = done.send(());
    });
    match finished.recv_timeout(limit) {
        Ok(()) => worker.join().expect("the test thread finished"),
        // The thread panicked: re-raise its panic with its message.
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            std::panic::resume_unwind(worker.join().expect_err("a disconnected test thread panicked"))
        }
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!("the test did not finish within {limit:?}"),
    }
}

/// The whole sweep, not one input: far above the few seconds it takes.
const SWEEP_BOUND: Duration = Duration::from_secs(600);

#[test]
fn every_prefix_checks_without_panic() {
    with_watchdog(SWEEP_BOUND, every_prefix);
}

fn every_prefix() {
    let mut db = Database::default();
    let file = SourceFile::new(&db, "prefix.weft".to_string(), String::new());
    let mut inputs = 0;
    for path in programs() {
        let bytes = std::fs::read(&path).expect("readable");
        for end in 0..=bytes.len() {
            check_bounded(&mut db, file, &bytes[..end], &format!("{} up to byte {end}", path.display()));
            inputs += 1;
        }
    }
    assert!(inputs > 5_000, "only {inputs} prefixes were checked");
}

#[test]
fn random_mutations_check_without_panic() {
    with_watchdog(SWEEP_BOUND, random_mutations);
}

fn random_mutations() {
    // Bytes that upset a Python parser most: brackets, layout, quotes, operators, invalid UTF-8.
    const INTERESTING: &[u8] = b"()[]{}:,;\n\r\t \\\"'#=+-*/%<>!@.0123456789_abcdefxyzjJeE\xff\xc3";
    let mut rng = fastrand::Rng::with_seed(SEED);
    let mut db = Database::default();
    let file = SourceFile::new(&db, "mutant.weft".to_string(), String::new());
    for path in programs() {
        let original = std::fs::read(&path).expect("readable");
        for round in 0..MUTATIONS_PER_PROGRAM {
            let mut bytes = original.clone();
            for _ in 0..rng.usize(1..=4) {
                mutate(&mut rng, &mut bytes, INTERESTING);
            }
            check_bounded(&mut db, file, &bytes, &format!("mutation {round} of {}", path.display()));
        }
    }
}

/// Fixed, so that a failure reproduces; change it to explore other mutations.
const SEED: u64 = 0x7765_6674;

fn mutate(rng: &mut fastrand::Rng, bytes: &mut Vec<u8>, interesting: &[u8]) {
    let at = rng.usize(0..=bytes.len());
    match rng.u8(0..5) {
        0 if at < bytes.len() => {
            let end = (at + rng.usize(1..=8)).min(bytes.len());
            bytes.drain(at..end);
        }
        1 => bytes.insert(at, interesting[rng.usize(0..interesting.len())]),
        2 => bytes.insert(at, rng.u8(..)),
        3 if at < bytes.len() => bytes[at] = interesting[rng.usize(0..interesting.len())],
        _ => {
            let start = rng.usize(0..=bytes.len());
            let end = (start + rng.usize(0..=40)).min(bytes.len());
            let chunk = bytes[start..end].to_vec();
            bytes.splice(at..at, chunk);
        }
    }
}
