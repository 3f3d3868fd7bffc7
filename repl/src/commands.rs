//! The REPL's `:` commands: each parses its argument and asks the engine.

use weft_session::Backend;
use weft_session::engine::Listing;

use crate::Repl;

/// Every command, with what `:help` says of it.
pub const COMMANDS: &[(&str, &str)] = &[
    ("help", "this list"),
    ("quit", "leave (Ctrl-D does too)"),
    ("type", "EXPR: its type, without running it (a function's name: its scheme)"),
    ("shape", "EXPR: its type with its lengths, and its shape (runs it)"),
    ("fusion", "EXPR: the fusion plan of computing it"),
    ("wgsl", "EXPR: the GPU kernels of computing it"),
    ("ir", "EXPR: the flat IR of computing it"),
    ("time", "EXPR: run it, and time compiling, uploading, running and reading back apart"),
    ("profile", "EXPR: run it on the GPU executor with the --profile tables"),
    ("load", "FILE: run a file's statements as a cell"),
    ("reload", "run the last loaded file again"),
    ("backend", "interp|cpu|gpu|auto: the executor for the next cells"),
    ("device", "[NAME]: the GPU in use, or use the adapter whose name contains NAME"),
    ("vars", "every top-level value: type, shape, where it lives, bytes"),
    ("shown", "N: how many items of a sequence a result shows at each level"),
    ("reset", "forget every definition and value"),
];

/// The text after `:name `, and the cursor within it, for completing a command's expression.
pub fn code_part(line: &str, pos: usize) -> (&str, usize) {
    if line.starts_with(':')
        && let Some(space) = line.find(' ')
        && pos > space
    {
        return (&line[space + 1..], pos - space - 1);
    }
    (line, pos)
}

/// Runs `:command`; gives `false` to quit.
pub fn run(repl: &mut Repl, command: &str) -> bool {
    let (name, argument) = command.split_once(char::is_whitespace).unwrap_or((command, ""));
    let argument = argument.trim();
    let matches: Vec<&str> = COMMANDS.iter().map(|(n, _)| *n).filter(|n| n.starts_with(name)).collect();
    let name = match matches.as_slice() {
        _ if COMMANDS.iter().any(|(n, _)| *n == name) => name,
        [only] => only,
        _ => {
            eprintln!("weft: unknown command `:{name}`; :help lists the commands");
            repl.failed = true;
            return true;
        }
    };
    let engine = &mut repl.engine;
    let screen = &mut repl.screen;
    let mut ok = true;
    let needs_argument = ["type", "shape", "fusion", "wgsl", "ir", "time", "profile", "load", "shown"];
    if argument.is_empty() && needs_argument.contains(&name) {
        eprintln!(
            "weft: `:{name}` takes an argument: :{name} {}",
            help_of(name).split(':').next().unwrap_or("")
        );
        repl.failed = true;
        return true;
    }
    match name {
        "help" => {
            for (name, help) in COMMANDS {
                println!("  :{name:<8} {help}");
            }
            println!(
                "  Anything else is Weft: definitions, bindings, loops; an expression shows `value : type`."
            );
        }
        "quit" => return false,
        "type" => match engine.type_of(argument, &mut |e| screen.show(e)) {
            Some(ty) => println!("{argument} : {ty}"),
            None => ok = false,
        },
        "shape" => match engine.evaluate(":shape", argument, false, &mut |e| screen.show(e)) {
            Some((Some(value), _)) => match engine.shape_of(&value) {
                Ok((ty, shape)) => println!("{ty} (shape {})", shape.unwrap_or_else(|| "scalar".to_string())),
                Err(_) => ok = false,
            },
            Some((None, _)) => println!("{argument} has no value"),
            None => ok = false,
        },
        "fusion" | "wgsl" | "ir" => {
            let what = match name {
                "fusion" => Listing::Fusion,
                "wgsl" => Listing::Wgsl,
                _ => Listing::Ir,
            };
            match engine.listing(what, argument, &mut |e| screen.show(e)) {
                Some(text) => print!("{text}"),
                None => ok = false,
            }
        }
        "time" | "profile" => {
            let profile = name == "profile";
            let previous = engine.backend();
            if profile {
                engine.set_backend(Some(Backend::Gpu));
            }
            let outcome = engine.evaluate(&format!(":{name}"), argument, profile, &mut |e| screen.show(e));
            engine.set_backend(previous);
            match outcome {
                Some((value, mut timing)) => {
                    let started = std::time::Instant::now();
                    if let Some(Ok(event)) = value.map(|value| engine.describe(&value)) {
                        screen.show(event);
                    }
                    timing.download += started.elapsed();
                    if !profile {
                        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
                        println!(
                            "compile {:.2} ms, upload {:.2} ms ({} bytes), run {:.2} ms ({} launches), read back and show {:.2} ms",
                            ms(timing.compile),
                            ms(timing.upload),
                            timing.bytes_uploaded,
                            ms(timing.run),
                            timing.launches,
                            ms(timing.download)
                        );
                    }
                }
                None => ok = false,
            }
        }
        "load" => {
            repl.load(std::path::Path::new(argument));
            return true;
        }
        "reload" => match repl.loaded.clone() {
            Some(path) => {
                repl.load(&path);
                return true;
            }
            None => {
                eprintln!("weft: nothing loaded yet; :load FILE first");
                ok = false;
            }
        },
        "backend" => {
            let backend = match argument {
                "interp" => Some(Some(Backend::Interp)),
                "cpu" => Some(Some(Backend::Cpu)),
                "gpu" => Some(Some(Backend::Gpu)),
                "auto" => Some(None),
                "" => {
                    println!("{}", engine.backend().map_or("auto", Backend::name));
                    None
                }
                _ => {
                    eprintln!("weft: `:backend` takes interp, cpu, gpu or auto");
                    ok = false;
                    None
                }
            };
            if let Some(backend) = backend {
                engine.set_backend(backend);
            }
        }
        "device" => {
            if !argument.is_empty() {
                engine.session().device().prefer(Some(argument.to_string()));
            }
            match engine.session().device().get() {
                Ok(gpu) => println!("{}", gpu.describe()),
                Err(err) => {
                    eprintln!("weft: no GPU: {}", err.0);
                    ok = false;
                }
            }
        }
        "vars" => {
            for var in engine.vars() {
                let place = if var.on_device { "device" } else { "host" };
                let shape = var.shape.map(|s| format!(", shape {s}")).unwrap_or_default();
                println!(
                    "{} : {}{shape}, {place}, {} bytes (cell {})",
                    var.name, var.ty, var.bytes, var.cell
                );
            }
            for (name, cell) in engine.definitions() {
                println!("{name} : function (cell {cell})");
            }
        }
        "shown" => match argument.parse::<usize>() {
            Ok(n) if n >= 2 => engine.shown_items = n,
            _ => {
                eprintln!("weft: `:shown` takes a number of items, 2 or more");
                ok = false;
            }
        },
        "reset" => engine.reset(),
        _ => {}
    }
    repl.failed |= !ok;
    true
}

fn help_of(name: &str) -> &'static str {
    COMMANDS.iter().find(|(n, _)| *n == name).map_or("", |(_, help)| help)
}
