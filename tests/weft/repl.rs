//! `weft repl`: golden transcripts of piped sessions (the same on every executor), and the
//! real binary in a pseudo-terminal (prompts, continuation lines, completion, history,
//! Ctrl-C, Ctrl-D).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rexpect::session::PtySession;

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/weft/data/repl")
}

fn gpu_available() -> bool {
    let available = !weft_session::adapter_summaries().is_empty();
    if !available {
        assert!(
            std::env::var("WEFT_REQUIRE_GPU").is_err(),
            "WEFT_REQUIRE_GPU is set and there is no adapter"
        );
        eprintln!("skipped the gpu executor: no adapter (set WEFT_REQUIRE_GPU=1 to fail instead)");
    }
    available
}

fn backends() -> Vec<&'static str> {
    let mut backends = vec!["interp", "cpu"];
    if gpu_available() {
        backends.push("gpu");
    }
    backends
}

/// Runs `weft repl` with `script` on stdin; gives stdout and stderr interleaved as the user
/// reads them (stderr is merged by the shell-free pipe below), and the exit status.
fn piped(backend: &str, script: &str) -> (String, i32) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_weft"))
        .args(["repl", "--backend", backend])
        .current_dir(data())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("weft repl starts");
    child.stdin.take().expect("stdin").write_all(script.as_bytes()).expect("the script is written");
    let output = child.wait_with_output().expect("weft repl ends");
    let text = format!(
        "--- stdout\n{}--- stderr\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (text, output.status.code().unwrap_or(-1))
}

/// `:vars` says where each value lives and how many bytes it takes there, which is the one
/// thing that differs by executor.
fn without_places(text: &str) -> String {
    text.lines()
        .map(|line| match line.find(", host, ").or_else(|| line.find(", device, ")) {
            Some(at) if line.contains(" bytes (cell ") => {
                let cell = &line[line.find(" (cell ").unwrap_or(line.len())..];
                format!("{}, <where>, <bytes>{cell}\n", &line[..at])
            }
            _ => format!("{line}\n"),
        })
        .collect()
}

#[test]
fn a_piped_session_prints_the_same_transcript_on_every_executor() {
    let script = std::fs::read_to_string(data().join("session.weft")).expect("the script");
    for backend in backends() {
        let (text, status) = piped(backend, &script);
        assert_eq!(status, 1, "{backend}: a cell failed, so the status is 1\n{text}");
        expect_test::expect_file!["data/repl/session.out"].assert_eq(&without_places(&text));
        if backend == "gpu" {
            assert!(text.contains("xs : [f32; 3], shape 3, device, "), "{text}");
        }
    }
}

#[test]
fn a_piped_session_without_errors_exits_0() {
    let (text, status) = piped("cpu", "x = 1\nx + 1\n");
    assert_eq!((text.as_str(), status), ("--- stdout\n2 : i32\n--- stderr\n", 0));
}

/// What rustyline writes when it stops reading a line (it turns bracketed paste off).
const LINE_DONE: &str = "\u{1b}[?2004l";

/// A REPL in a pseudo-terminal, with its history in `state`.
fn terminal(backend: &str, state: &Path) -> PtySession {
    let mut command = Command::new(env!("CARGO_BIN_EXE_weft"));
    command.args(["repl", "--backend", backend]).env("XDG_STATE_HOME", state).env("TERM", "xterm");
    let mut session =
        rexpect::session::spawn_command(command, Some(30_000)).expect("weft repl starts in a pty");
    session.exp_string("[1]> ").expect("the first prompt");
    session
}

#[test]
fn the_terminal_repl_prompts_continues_blocks_completes_and_exits_on_ctrl_d() {
    let state = tempdir("terminal");
    let mut repl = terminal("interp", &state);
    type_line(&mut repl, "x = 41");
    repl.exp_string("[2]> ").unwrap();
    type_line(&mut repl, "x + 1");
    repl.exp_string("42 : i32").unwrap();
    repl.exp_string("[3]> ").unwrap();
    // A block continues until an empty line.
    type_line(&mut repl, "def double(a):");
    type_line(&mut repl, "    return a * 2");
    type_line(&mut repl, "");
    repl.exp_string("[4]> ").unwrap();
    // Completion from the session: `dou` + Tab completes the definition.
    type_keys(&mut repl, "dou\t");
    repl.exp_string("double").unwrap();
    type_line(&mut repl, "(x)");
    repl.exp_string("82 : i32").unwrap();
    exit_at_prompt(&mut repl, "[5]> ");
}

/// A paste of several lines and the Enter after it, written at once (as a terminal pastes, and as
/// the VS Code extension's Send Selection to REPL types them), run as one cell. rustyline before
/// 19 left the bytes after the first key of a read unhandled until more input came.
#[test]
fn a_paste_and_enter_in_one_write_run_as_one_cell() {
    let state = tempdir("paste");
    let mut repl = terminal("interp", &state);
    repl.send("\x1b[200~xs = [1.0, 2.0, 3.0, 4.0]\nprint(sum([x * x for x in xs]))\x1b[201~\r").unwrap();
    repl.flush().unwrap();
    repl.exp_string("30.0").unwrap();
    // A cell with a block ends with an empty line: a second Enter in the same write.
    repl.send("\x1b[200~def f(x):\n    return x + 1\n\nprint(f(41))\x1b[201~\r\r").unwrap();
    repl.flush().unwrap();
    repl.exp_string("42").unwrap();
    exit_at_prompt(&mut repl, "[3]> ");
}

#[test]
fn history_is_kept_across_two_sessions() {
    let state = tempdir("history");
    let mut first = terminal("interp", &state);
    type_line(&mut first, "answer = 6 * 7");
    exit_at_prompt(&mut first, "[2]> ");
    assert!(std::fs::read_to_string(state.join("weft/history")).unwrap().contains("answer = 6 * 7"));
    let mut second = terminal("interp", &state);
    // Up arrow, then Enter: the line from the first session runs again.
    type_keys(&mut second, "\x1b[A");
    type_line(&mut second, "");
    second.exp_string("[2]> ").unwrap();
    type_line(&mut second, "answer");
    second.exp_string("42 : i32").unwrap();
    exit_at_prompt(&mut second, "[3]> ");
}

#[test]
fn ctrl_c_interrupts_a_long_computation_on_every_executor_and_keeps_the_session() {
    for backend in backends() {
        let state = tempdir(&format!("interrupt-{backend}"));
        let mut repl = terminal(backend, &state);
        type_line(&mut repl, "kept = 7");
        repl.exp_string("[2]> ").unwrap();
        // At the prompt, Ctrl-C clears the line.
        type_keys(&mut repl, "this is not run");
        repl.send_control('c').unwrap();
        // Each accepted or cancelled line ends rustyline's raw mode (bracketed paste off); only
        // then is a prompt a new one rather than the line being redrawn.
        repl.exp_string(LINE_DONE).unwrap();
        repl.exp_string("[2]> ").unwrap();
        type_line(&mut repl, "i = 0");
        repl.exp_string("[3]> ").unwrap();
        type_line(&mut repl, "while i >= 0:");
        type_line(&mut repl, "    i = i + 1");
        type_line(&mut repl, "");
        // The loop runs once the input is accepted.
        repl.exp_string(LINE_DONE).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        repl.send_control('c').unwrap();
        repl.exp_string("interrupted").unwrap_or_else(|e| panic!("{backend}: {e}"));
        repl.exp_string("[4]> ").unwrap();
        type_line(&mut repl, "kept");
        repl.exp_string("7 : i32").unwrap_or_else(|e| panic!("{backend}: {e}"));
        exit_at_prompt(&mut repl, "[5]> ");
    }
}

/// Waits for `prompt`, then exits with Ctrl-D. The prompt is drawn only once rustyline has put
/// the terminal in raw mode; a Ctrl-D sent before that reaches the line discipline in canonical
/// mode, which turns it into a NUL byte that rustyline then ignores, and the REPL never exits.
fn exit_at_prompt(session: &mut PtySession, prompt: &str) {
    session.exp_string(prompt).expect("the prompt before Ctrl-D");
    session.send_control('d').unwrap();
    session.exp_eof().unwrap();
}

/// Types `keys` one at a time, as a person does.
fn type_keys(session: &mut PtySession, keys: &str) {
    for key in keys.chars() {
        session.send(&key.to_string()).expect("a key is sent");
        session.flush().expect("the key is flushed");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Types a line and Enter.
fn type_line(session: &mut PtySession, line: &str) {
    type_keys(session, line);
    type_keys(session, "\r");
}

fn tempdir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("weft-repl-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir
}

#[test]
fn time_and_profile_report_their_parts() {
    let (text, status) = piped("cpu", ":time sum(range(10))\n");
    assert_eq!(status, 0, "{text}");
    assert!(text.contains("45 : i32\ncompile "), "{text}");
    assert!(text.contains(" ms, upload ") && text.contains("read back and show"), "{text}");
    if gpu_available() {
        let (text, status) = piped("cpu", "xs = [1.0, 2.0]\n:profile sum(xs)\n");
        assert_eq!(status, 0, "{text}");
        assert!(text.contains("3.0 : f32") && text.contains("launches"), "{text}");
    }
}

#[test]
fn charts_go_to_files_and_commands_take_either_prefix() {
    let dir = tempdir("charts");
    let figures = dir.join("figures");
    let mut child = Command::new(env!("CARGO_BIN_EXE_weft"))
        .args(["repl", "--backend", "cpu", "--figures"])
        .arg(&figures)
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("weft repl starts");
    let script =
        "xs = [1.0, 2.0, 4.0]\nplot(xs, xs)\n%type xs\n:type xs\n%nonsense\nimage([[1, 2], [3, 4]])\n";
    child.stdin.take().expect("stdin").write_all(script.as_bytes()).expect("the script is written");
    let output = child.wait_with_output().expect("weft repl ends");
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    let (plot, image) = (figures.join("plot-1.svg"), figures.join("image-2.svg"));
    let expected = format!(
        "plot of 3 points: {}\nxs : [f32]\nxs : [f32]\nimage of 2 × 2 pixels: {}\n",
        plot.display(),
        image.display()
    );
    assert_eq!(stdout, expected, "{stderr}");
    assert_eq!(stderr, "weft: unknown command `%nonsense`; `%help` lists the commands\n");
    for file in [plot, image] {
        let svg = std::fs::read_to_string(&file).expect("the chart was written");
        assert!(svg.starts_with("<svg "), "{}", file.display());
    }
    let _ = std::fs::remove_dir_all(dir);
}
