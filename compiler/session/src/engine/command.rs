//! The commands of the interactive front ends: `:name argument` in the REPL, `%name argument`
//! (a magic, as IPython calls it) in a notebook; either prefix works in both. Parsing and
//! running them is the engine's; a front end only shows the `Answer`.

use std::path::PathBuf;
use std::time::Instant;

use weft_flat::fuse::plan::FusionPlan;

use super::{Engine, Listing};
use crate::{Backend, Event};

/// Every command, with what `help` says of it.
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

/// A parsed command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Help,
    Quit,
    Type(String),
    Shape(String),
    Listing(Listing, String),
    Time(String),
    Profile(String),
    Load(PathBuf),
    Reload,
    /// `None`: show the backend; `Some(None)`: the default policy.
    Backend(Option<Option<Backend>>),
    Device(Option<String>),
    Vars,
    Shown(usize),
    Reset,
}

/// What a command gives its front end to show, besides the events it sent.
#[derive(Debug, Clone)]
pub enum Answer {
    /// Nothing more: what it did came as events (a loaded file's cell, say).
    Done,
    /// Lines of text.
    Text(String),
    /// The fusion plan of an expression: `weft fusion`'s text, and the plan, to draw.
    Fusion { text: String, plan: FusionPlan },
    /// The WGSL kernels of an expression, as `weft wgsl` prints them.
    Wgsl(String),
    /// The flat IR of an expression, as `weft ir` prints it.
    Ir(String),
    /// Leave the session.
    Quit,
}

/// Why a command did not answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandError {
    /// It is not a command as written, or cannot run now: the message says why.
    Usage(String),
    /// It ran and failed; the diagnostics went out as events.
    Failed,
}

/// The command in `line`, without its prefix, when `line` is one: it starts with `:` or `%`
/// (neither can start a Weft statement).
pub fn command_text(line: &str) -> Option<&str> {
    let line = line.trim();
    line.strip_prefix(':').or_else(|| line.strip_prefix('%'))
}

/// Parses a command line (`:type xs`, `%time f(xs)`). A name may be abbreviated to any prefix
/// that only one command has. The messages write commands with the line's own prefix.
pub fn parse(line: &str) -> Result<Command, String> {
    let Some(text) = command_text(line) else {
        return Err("a command starts with `:` or `%`".to_string());
    };
    let prefix = &line.trim_start()[..1];
    let (name, argument) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    let argument = argument.trim();
    let matches: Vec<&str> = COMMANDS.iter().map(|(n, _)| *n).filter(|n| n.starts_with(name)).collect();
    let name = match matches.as_slice() {
        _ if COMMANDS.iter().any(|(n, _)| *n == name) => name,
        [only] if !name.is_empty() => only,
        [_, _, ..] if !name.is_empty() => {
            let candidates: Vec<String> = matches.iter().map(|n| format!("{prefix}{n}")).collect();
            return Err(format!("`{prefix}{name}` is ambiguous: {}", candidates.join(", ")));
        }
        _ => return Err(format!("unknown command `{prefix}{name}`; `{prefix}help` lists the commands")),
    };
    let needs_argument = ["type", "shape", "fusion", "wgsl", "ir", "time", "profile", "load", "shown"];
    if argument.is_empty() && needs_argument.contains(&name) {
        let usage = help_of(name).split(':').next().unwrap_or("");
        return Err(format!("`{prefix}{name}` takes an argument: {prefix}{name} {usage}"));
    }
    let expr = || argument.to_string();
    Ok(match name {
        "help" => Command::Help,
        "quit" => Command::Quit,
        "type" => Command::Type(expr()),
        "shape" => Command::Shape(expr()),
        "fusion" => Command::Listing(Listing::Fusion, expr()),
        "wgsl" => Command::Listing(Listing::Wgsl, expr()),
        "ir" => Command::Listing(Listing::Ir, expr()),
        "time" => Command::Time(expr()),
        "profile" => Command::Profile(expr()),
        "load" => Command::Load(PathBuf::from(argument)),
        "reload" => Command::Reload,
        "backend" => Command::Backend(match argument {
            "" => None,
            "interp" => Some(Some(Backend::Interp)),
            "cpu" => Some(Some(Backend::Cpu)),
            "gpu" => Some(Some(Backend::Gpu)),
            "auto" => Some(None),
            _ => return Err(format!("`{prefix}backend` takes interp, cpu, gpu or auto")),
        }),
        "device" => Command::Device((!argument.is_empty()).then(expr)),
        "vars" => Command::Vars,
        "shown" => match argument.parse::<usize>() {
            Ok(n) if n >= 2 => Command::Shown(n),
            _ => return Err(format!("`{prefix}shown` takes a number of items, 2 or more")),
        },
        "reset" => Command::Reset,
        other => return Err(format!("`{prefix}{other}` is listed but not parsed (a bug in Weft)")),
    })
}

fn help_of(name: &str) -> &'static str {
    COMMANDS.iter().find(|(n, _)| *n == name).map_or("", |(_, help)| help)
}

impl Engine {
    /// Runs `command`. Values it computes, diagnostics and a loaded file's output go to
    /// `events`; the rest is the answer.
    pub fn command(
        &mut self,
        command: Command,
        events: &mut (dyn FnMut(Event) + Send),
    ) -> Result<Answer, CommandError> {
        let text = |text: String| Ok(Answer::Text(text));
        match command {
            Command::Help => {
                let mut help: String =
                    COMMANDS.iter().map(|(name, help)| format!("  {name:<8} {help}\n")).collect();
                help.push_str("Commands start with `:` or `%`. Anything else is Weft: definitions, bindings, loops; an expression shows its value and type.\n");
                text(help)
            }
            Command::Quit => Ok(Answer::Quit),
            Command::Type(expr) => match self.type_of(&expr, events) {
                Some(ty) => text(format!("{expr} : {ty}\n")),
                None => Err(CommandError::Failed),
            },
            Command::Shape(expr) => match self.evaluate(":shape", &expr, false, events) {
                Some((Some(value), _)) => {
                    let (ty, shape) = self.shape_of(&value).map_err(|_| CommandError::Failed)?;
                    text(format!("{ty} (shape {})\n", shape.unwrap_or_else(|| "scalar".to_string())))
                }
                Some((None, _)) => text(format!("{expr} has no value\n")),
                None => Err(CommandError::Failed),
            },
            Command::Listing(what, expr) => {
                let listed = self.listing(what, &expr, events).ok_or(CommandError::Failed)?;
                Ok(match (what, listed.plan) {
                    (Listing::Fusion, Some(plan)) => Answer::Fusion { text: listed.text, plan },
                    (Listing::Wgsl, _) => Answer::Wgsl(listed.text),
                    _ => Answer::Ir(listed.text),
                })
            }
            Command::Time(expr) => self.time(&expr, false, events),
            Command::Profile(expr) => self.time(&expr, true, events),
            Command::Load(path) => self.load_file(path, events),
            Command::Reload => match self.loaded.clone() {
                Some(path) => self.load_file(path, events),
                None => Err(CommandError::Usage("nothing loaded yet; load a file first".to_string())),
            },
            Command::Backend(None) => text(format!("{}\n", self.backend().map_or("auto", Backend::name))),
            Command::Backend(Some(backend)) => {
                self.set_backend(backend);
                Ok(Answer::Done)
            }
            Command::Device(name) => {
                if let Some(name) = name {
                    self.session().device().prefer(Some(name));
                }
                match self.session().device().get() {
                    Ok(gpu) => text(format!("{}\n", gpu.describe())),
                    Err(err) => Err(CommandError::Usage(format!("no GPU: {}", err.0))),
                }
            }
            Command::Vars => {
                let mut out = String::new();
                for var in self.vars() {
                    let place = if var.on_device { "device" } else { "host" };
                    let shape = var.shape.map(|s| format!(", shape {s}")).unwrap_or_default();
                    out.push_str(&format!(
                        "{} : {}{shape}, {place}, {} bytes (cell {})\n",
                        var.name, var.ty, var.bytes, var.cell
                    ));
                }
                for (name, cell) in self.definitions() {
                    out.push_str(&format!("{name} : function (cell {cell})\n"));
                }
                text(out)
            }
            Command::Shown(n) => {
                self.shown_items = n;
                Ok(Answer::Done)
            }
            Command::Reset => {
                self.reset();
                Ok(Answer::Done)
            }
        }
    }

    /// `time` and `profile`: runs `expr` (on the GPU executor for `profile`), shows its value,
    /// and answers with the time each part took (`time`; `profile`'s tables come as an event).
    fn time(
        &mut self,
        expr: &str,
        profile: bool,
        events: &mut (dyn FnMut(Event) + Send),
    ) -> Result<Answer, CommandError> {
        let previous = self.backend();
        if profile {
            self.set_backend(Some(Backend::Gpu));
        }
        let command = if profile { ":profile" } else { ":time" };
        let outcome = self.evaluate(command, expr, profile, events);
        self.set_backend(previous);
        let (value, mut timing) = outcome.ok_or(CommandError::Failed)?;
        let started = Instant::now();
        if let Some(Ok(event)) = value.map(|value| self.describe(&value)) {
            events(event);
        }
        timing.download += started.elapsed();
        if profile {
            return Ok(Answer::Done);
        }
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        Ok(Answer::Text(format!(
            "compile {:.2} ms, upload {:.2} ms ({} bytes), run {:.2} ms ({} launches), read back and show {:.2} ms\n",
            ms(timing.compile),
            ms(timing.upload),
            timing.bytes_uploaded,
            ms(timing.run),
            timing.launches,
            ms(timing.download)
        )))
    }

    /// Runs a file's statements as a cell; its data files load from the file's directory.
    fn load_file(
        &mut self,
        path: PathBuf,
        events: &mut (dyn FnMut(Event) + Send),
    ) -> Result<Answer, CommandError> {
        let text = std::fs::read_to_string(&path)
            .map_err(|err| CommandError::Usage(format!("cannot read {}: {err}", path.display())))?;
        if let Some(directory) = path.parent() {
            self.session().set_directory(directory.to_path_buf());
        }
        self.loaded = Some(path);
        if self.run_cell(&text, events) { Ok(Answer::Done) } else { Err(CommandError::Failed) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_with_either_prefix_and_abbreviated_names() {
        assert_eq!(command_text("  %fusion f(xs)"), Some("fusion f(xs)"));
        assert_eq!(command_text(":t xs"), Some("t xs"));
        assert_eq!(command_text("xs % 2"), None);
        assert_eq!(parse("%fusion f(xs)"), Ok(Command::Listing(Listing::Fusion, "f(xs)".into())));
        assert_eq!(parse(":ty xs"), Ok(Command::Type("xs".into())));
        assert_eq!(parse(":backend cpu"), Ok(Command::Backend(Some(Some(Backend::Cpu)))));
        assert_eq!(parse("%backend"), Ok(Command::Backend(None)));
        assert_eq!(parse(":s 3").unwrap_err(), "`:s` is ambiguous: :shape, :shown");
        assert_eq!(
            parse("%nonsense").unwrap_err(),
            "unknown command `%nonsense`; `%help` lists the commands"
        );
        assert_eq!(parse("%wgsl").unwrap_err(), "`%wgsl` takes an argument: %wgsl EXPR");
        assert_eq!(parse(":shown 1").unwrap_err(), "`:shown` takes a number of items, 2 or more");
        // Every listed command parses.
        for (name, _) in COMMANDS {
            let line = format!(":{name} 2");
            assert!(!parse(&line).is_err_and(|e| e.contains("a bug")), "{line}");
        }
    }
}
