//! `weft-repl`: `weft repl`, the terminal front end of the session engine
//! (`weft_session::engine`). It reads inputs (with rustyline on a terminal, line by line from a
//! pipe), sends each complete one to the engine as a cell, and renders the engine's events.
//!
//! **Architecture Invariant:** no compiler logic lives here: what an input means, its type, its
//! completions and its diagnostics all come from the engine.

mod commands;

use std::cell::RefCell;
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::rc::Rc;

use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Context, Editor, Helper};
use weft_session::engine::Engine;
use weft_session::engine::command::{self, Command};
use weft_session::figure::FigureFiles;
use weft_session::{Backend, DeviceSlot, Event, Session};
use weft_syntax::input::{InputStatus, input_status, word_start};

/// What `weft repl` was asked for.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// `None`: the default policy (the GPU where there is one that is not a CPU).
    pub backend: Option<Backend>,
    pub device: Option<String>,
    /// Loaded first.
    pub file: Option<PathBuf>,
    /// Where charts are written.
    pub figures: PathBuf,
    pub options: weft_session::Options,
}

/// The REPL's state: the engine, and what the terminal needs between inputs.
pub struct Repl {
    engine: Engine,
    /// Where events are shown: in colour on a terminal, plain in a pipe.
    screen: Screen,
    /// Whether any cell failed (the exit status without a terminal).
    failed: bool,
}

/// Runs `weft repl`; gives the exit status.
pub fn run(config: Config) -> i32 {
    let interactive = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let session = Session::new(DeviceSlot::new(config.device.clone()));
    let engine = Engine::new(session, config.backend, config.options);
    let interrupt = engine.interrupt();
    // Ctrl-C during a computation stops it; at the prompt, rustyline reads it as a key.
    let _ = ctrlc::set_handler(move || interrupt.request());
    let screen =
        Screen { color: interactive, figures: FigureFiles::new(config.figures.clone()), unwritten: false };
    let repl = Rc::new(RefCell::new(Repl { engine, screen, failed: false }));
    if let Some(file) = &config.file {
        commands::execute(&mut repl.borrow_mut(), Command::Load(file.clone()));
    }
    if interactive {
        interactive_loop(repl.clone())
    } else {
        piped_loop(&mut repl.borrow_mut())
    }
    let failed = repl.borrow().failed || repl.borrow().screen.unwritten;
    i32::from(failed && !interactive)
}

impl Repl {
    /// Runs an input: a command or a cell. Gives `false` to quit. A panic (a bug in Weft) is
    /// reported, and the session goes on with what it holds.
    fn input(&mut self, text: &str) -> bool {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.run_input(text))) {
            Ok(go_on) => go_on,
            Err(_) => {
                eprintln!("weft: internal error: this input failed (a bug in Weft); earlier values are kept");
                self.failed = true;
                true
            }
        }
    }

    fn run_input(&mut self, text: &str) -> bool {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return true;
        }
        if command::command_text(trimmed).is_some() {
            return commands::run(self, trimmed);
        }
        let screen = &mut self.screen;
        let ok = self.engine.run_cell(text, &mut |event| screen.show(event));
        self.failed |= !ok;
        true
    }
}

/// Where the REPL shows events: results, printed text and the files charts went to on stdout,
/// diagnostics and notices on stderr.
struct Screen {
    color: bool,
    figures: FigureFiles,
    /// Whether a chart could not be written (the exit status without a terminal).
    unwritten: bool,
}

impl Screen {
    fn show(&mut self, event: Event) {
        match event {
            Event::Printed(line) => {
                print!("{line}");
                let _ = std::io::stdout().flush();
            }
            Event::Chart(chart) => match self.figures.write(&chart) {
                Ok(line) => println!("{line}"),
                Err(why) => {
                    self.unwritten = true;
                    eprintln!("weft: {why}");
                }
            },
            Event::Value { text, ty, .. } => println!("{text} : {ty}"),
            Event::Notice(notice) => eprintln!("weft: {notice}"),
            Event::Profile(text) => eprint!("{text}"),
            Event::Diagnostic { diagnostic, source, text } => {
                let rendered =
                    weft_syntax::diagnostics::render_text(&[diagnostic], &source, &text, self.color);
                let _ = std::io::stdout().flush();
                eprint!("{rendered}");
            }
        }
    }
}

/// Without a terminal: no prompts or colours; an input ends where the parser says it is
/// complete, or where a line at the left margin starts the next one.
fn piped_loop(repl: &mut Repl) {
    let stdin = std::io::stdin();
    let mut buffer = String::new();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let starts_statement = !line.starts_with([' ', '\t', '#']) && !line.trim().is_empty();
        let first_word = line.split(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap_or("");
        let continues = matches!(first_word, "elif" | "else");
        if !buffer.is_empty() && starts_statement && !continues && in_open_block(&buffer) {
            let input = std::mem::take(&mut buffer);
            if !repl.input(&input) {
                return;
            }
        }
        if buffer.is_empty() && command::command_text(&line).is_some() {
            // A command is one line.
            if !repl.input(&line) {
                return;
            }
            continue;
        }
        buffer.push_str(&line);
        buffer.push('\n');
        let status = input_status(buffer.trim_end_matches('\n'));
        let complete = match status {
            InputStatus::Complete | InputStatus::Invalid => true,
            // A block ends with an empty line, as at Python's prompt.
            InputStatus::Incomplete { .. } => line.trim().is_empty() && in_open_block(&buffer),
        };
        if complete {
            let input = std::mem::take(&mut buffer);
            if !repl.input(&input) {
                return;
            }
        }
    }
    if !buffer.trim().is_empty() {
        repl.input(&buffer);
    }
}

/// Whether the input has an indented block (which a line at the margin ends), and no bracket
/// is still open.
fn in_open_block(buffer: &str) -> bool {
    let status = input_status(&format!("{}\n", buffer.trim_end_matches('\n')));
    buffer.lines().skip(1).any(|l| l.starts_with([' ', '\t'])) && status == InputStatus::Complete
}

fn history_path() -> Option<PathBuf> {
    let state = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local/state")))?;
    Some(state.join("weft").join("history"))
}

fn interactive_loop(repl: Rc<RefCell<Repl>>) {
    let config = rustyline::Config::builder().auto_add_history(true).build();
    let Ok(mut editor) = Editor::<ReplHelper, rustyline::history::FileHistory>::with_config(config) else {
        piped_loop(&mut repl.borrow_mut());
        return;
    };
    editor.set_helper(Some(ReplHelper { repl: repl.clone() }));
    let history = history_path();
    if let Some(path) = &history {
        let _ = editor.load_history(path);
    }
    println!("Weft {} — :help for commands, Ctrl-D to quit", env!("CARGO_PKG_VERSION"));
    loop {
        let prompt = format!("[{}]> ", repl.borrow().engine.next_cell());
        match editor.readline(&prompt) {
            Ok(line) => {
                let keep_going = repl.borrow_mut().input(&line);
                if let Some(path) = &history {
                    let _ = path.parent().map(std::fs::create_dir_all);
                    let _ = editor.save_history(path);
                }
                if !keep_going {
                    break;
                }
            }
            // Ctrl-C at the prompt clears the line.
            Err(ReadlineError::Interrupted) => continue,
            Err(_) => break,
        }
    }
}

/// Completion, hints, highlighting and multi-line input, all from the engine.
struct ReplHelper {
    repl: Rc<RefCell<Repl>>,
}

impl Helper for ReplHelper {}

impl Completer for ReplHelper {
    type Candidate = Pair;

    fn complete(&self, line: &str, pos: usize, _ctx: &Context<'_>) -> rustyline::Result<(usize, Vec<Pair>)> {
        let start = word_start(line, pos);
        // A command's name: after the prefix (and any indent), before any space.
        let lead = line.len() - line.trim_start().len();
        if pos > lead
            && command::command_text(line).is_some()
            && let Some(typed) = line.get(lead + 1..pos)
            && !typed.contains(' ')
        {
            let prefix = &line[lead..lead + 1];
            let pairs = command::COMMANDS
                .iter()
                .filter(|(name, _)| name.starts_with(typed))
                .map(|(name, _)| Pair {
                    display: format!("{prefix}{name}"),
                    replacement: format!("{prefix}{name}"),
                })
                .collect();
            return Ok((lead, pairs));
        }
        let Ok(mut repl) = self.repl.try_borrow_mut() else { return Ok((start, Vec::new())) };
        let (code, offset) = commands::code_part(line, pos);
        let pairs = repl
            .engine
            .completions(code, offset)
            .into_iter()
            .map(|c| Pair {
                display: match &c.detail {
                    Some(detail) => format!("{} : {detail}", c.label),
                    None => c.label.clone(),
                },
                replacement: c.label,
            })
            .collect();
        Ok((start, pairs))
    }
}

impl Hinter for ReplHelper {
    type Hint = String;

    /// What the name just typed is: a value's type, a function's scheme or signature.
    fn hint(&self, line: &str, pos: usize, _ctx: &Context<'_>) -> Option<String> {
        if pos < line.len() {
            return None;
        }
        let word = &line[word_start(line, pos)..pos];
        if word.is_empty() {
            return None;
        }
        let mut repl = self.repl.try_borrow_mut().ok()?;
        Some(format!("  : {}", repl.engine.hint(word)?))
    }
}

impl Highlighter for ReplHelper {
    fn highlight<'l>(&self, line: &'l str, _pos: usize) -> std::borrow::Cow<'l, str> {
        std::borrow::Cow::Owned(highlight(line))
    }

    fn highlight_hint<'h>(&self, hint: &'h str) -> std::borrow::Cow<'h, str> {
        std::borrow::Cow::Owned(format!("\x1b[2m{hint}\x1b[0m"))
    }

    fn highlight_char(&self, _line: &str, _pos: usize, _kind: rustyline::highlight::CmdKind) -> bool {
        true
    }
}

impl Validator for ReplHelper {
    /// An input continues while the parser says a block or a bracket is open.
    fn validate(&self, ctx: &mut ValidationContext) -> rustyline::Result<ValidationResult> {
        let input = ctx.input();
        if command::command_text(input).is_some() {
            return Ok(ValidationResult::Valid(None));
        }
        Ok(match input_status(input) {
            InputStatus::Incomplete { .. } => ValidationResult::Incomplete,
            _ => ValidationResult::Valid(None),
        })
    }
}

/// Keywords, numbers, strings and comments in colour, from the lexer's tokens.
fn highlight(line: &str) -> String {
    use weft_syntax::SyntaxKind;
    let lexed = weft_syntax::lex::lex(line);
    let mut out = String::new();
    let mut at = 0usize;
    for token in &lexed.tokens {
        let len = usize::from(token.len);
        let text = &line[at..(at + len).min(line.len())];
        at += len;
        let colour = match token.kind {
            SyntaxKind::COMMENT => Some("2"),
            SyntaxKind::STRING => Some("32"),
            SyntaxKind::INT_NUMBER | SyntaxKind::FLOAT_NUMBER => Some("36"),
            kind if format!("{kind:?}").ends_with("_KW") => Some("35"),
            _ => None,
        };
        match colour {
            Some(colour) => out.push_str(&format!("\x1b[{colour}m{text}\x1b[0m")),
            None => out.push_str(text),
        }
    }
    out.push_str(&line[at.min(line.len())..]);
    out
}
