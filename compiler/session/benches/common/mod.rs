//! Helpers the executor benchmarks share: timing, flattening an entry function, a silent host.

use std::time::{Duration, Instant};

use weft_analysis::Database;
use weft_analysis::SourceFile;
use weft_analysis::pipeline;
use weft_flat::flatten;
use weft_flat::ir;

/// The median of `runs` timed calls of `f`, after one warm-up call (pages in the inputs and the
/// thread pools).
pub fn median(mut f: impl FnMut(), runs: usize) -> Duration {
    f();
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2]
}

/// The flattened entry point `name` of a program (whose top level must call it, so that it is
/// specialised).
pub fn entry(source: &str, name: &str) -> ir::Program {
    entry_with(source, name, flatten::Options::default())
}

/// `entry`, flattened with the schedule `options` ask for.
pub fn entry_with(source: &str, name: &str, options: flatten::Options) -> ir::Program {
    let db = Database::default();
    let file = SourceFile::new(&db, format!("{name}.weft"), source.to_string());
    let core = pipeline::core_program(&db, file).expect("the benchmark program compiles");
    let id = core.functions.iter().position(|f| f.name == name).expect("the entry function exists");
    flatten::flatten_entry(core, id as u32, options).expect("the benchmark program flattens")
}

/// `entry`, fused as a run fuses it (`pipeline::entry_program`, default options).
pub fn fused_entry(source: &str, name: &str) -> ir::Program {
    let db = Database::default();
    let file = SourceFile::new(&db, format!("{name}.weft"), source.to_string());
    let core = pipeline::core_program(&db, file).expect("the benchmark program compiles");
    let id = core.functions.iter().position(|f| f.name == name).expect("the entry function exists");
    let fused = pipeline::entry_program(&db, file, id as u32, pipeline::Options::default());
    fused.expect("the benchmark program fuses").program.clone()
}

/// Prints nothing and reads no files.
pub struct NoHost;

impl weft_exec::interp::Host for NoHost {
    fn print(&mut self, _: &str) {}
    fn draw(&mut self, _chart: weft_exec::chart::Chart) {}
    fn read_file(&mut self, path: &str) -> std::io::Result<Vec<u8>> {
        Err(std::io::Error::other(format!("no files in benchmarks: {path}")))
    }
}
