//! The REPL's commands, `:name` or `%name`: the engine parses and runs them
//! (`weft_session::engine::command`); this shows their answers.

use weft_session::engine::command::{self, Answer, Command, CommandError};

use crate::Repl;

/// The text after `:name `, and the cursor within it, for completing a command's expression.
pub fn code_part(line: &str, pos: usize) -> (&str, usize) {
    let lead = line.len() - line.trim_start().len();
    if command::command_text(line).is_some()
        && let Some(space) = line[lead..].find(' ').map(|space| lead + space)
        && pos > space
    {
        return (&line[space + 1..], pos - space - 1);
    }
    (line, pos)
}

/// Runs a command line (`:type xs`); gives `false` to quit.
pub fn run(repl: &mut Repl, line: &str) -> bool {
    match command::parse(line) {
        Ok(command) => execute(repl, command),
        Err(why) => {
            eprintln!("weft: {why}");
            repl.failed = true;
            true
        }
    }
}

/// Runs a parsed command; gives `false` to quit.
pub fn execute(repl: &mut Repl, command: Command) -> bool {
    let screen = &mut repl.screen;
    match repl.engine.command(command, &mut |event| screen.show(event)) {
        Ok(Answer::Quit) => return false,
        Ok(Answer::Done) => {}
        Ok(Answer::Text(text) | Answer::Wgsl(text) | Answer::Ir(text) | Answer::Fusion { text, .. }) => {
            print!("{text}")
        }
        Err(CommandError::Usage(why)) => {
            eprintln!("weft: {why}");
            repl.failed = true;
        }
        Err(CommandError::Failed) => repl.failed = true,
    }
    true
}
