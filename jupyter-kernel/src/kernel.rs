//! The kernel: five sockets, as the connection file says, and the requests on them.
//!
//! - **heartbeat** echoes every message;
//! - **shell** takes requests one at a time: cells run on the engine's own thread, and the
//!   shell task waits for each answer;
//! - **control** runs beside it, so that `interrupt_request` reaches a running cell: it raises
//!   the session's `Interrupt`, which every executor checks at its next op or dispatch;
//! - **iopub** is fed by one task from a queue, so that the engine's thread can publish a
//!   cell's output as it is produced;
//! - **stdin** is bound, as clients expect, but Weft programs read no input.
//!
//! Every incoming message's HMAC-SHA256 signature is checked (`jupyter-zmq-client`); one that
//! fails is logged on stderr and dropped, and the kernel goes on. Every request is framed by
//! `status` busy and idle on iopub.

use std::sync::mpsc as std_mpsc;

use jupyter_protocol::{
    CodeMirrorMode, CommInfoReply, CompleteReply, ConnectionInfo, DisplayData, ErrorOutput, ExecuteInput,
    ExecuteReply, ExecuteRequest, ExecuteResult, ExecutionCount, HelpLink, HistoryEntry, HistoryReply,
    HistoryRequest, InspectReply, InterruptReply, IsCompleteReply, JupyterMessage, JupyterMessageContent,
    KernelInfoReply, LanguageInfo, Media, MediaType, ReplyError, ReplyStatus, ShutdownReply, Status,
    StreamContent, Transient,
};
use jupyter_zmq_client::{Connection, KernelControlConnection, RawMessage, RuntimeError};
use tokio::sync::{mpsc, oneshot};
use weft_session::engine::Engine;
use weft_session::engine::command::{self, Answer, Command, CommandError};
use weft_session::{Backend, DeviceSlot, Event, Interrupt, Options, Session, figure};
use weft_syntax::Severity;
use weft_syntax::input::{InputStatus, input_status, word_start};
use zeromq::{SocketRecv, SocketSend};

use crate::render;

/// What `weft kernel` was asked for.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// `None`: the default policy (the GPU where there is one that is not a CPU).
    pub backend: Option<Backend>,
    pub device: Option<String>,
    pub options: Options,
}

/// Runs the kernel on the connection file until a shutdown request.
pub fn run(connection_file: &std::path::Path, config: Config) -> Result<(), String> {
    let text = std::fs::read_to_string(connection_file)
        .map_err(|e| format!("cannot read {}: {e}", connection_file.display()))?;
    let mut info: ConnectionInfo = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not a Jupyter connection file: {e}", connection_file.display()))?;
    // "*" means every interface to ZeroMQ; the socket library binds by address.
    if info.ip == "*" {
        info.ip = "0.0.0.0".to_string();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the kernel's runtime: {e}"))?;
    runtime.block_on(serve(info, config))
}

/// Work for the engine's thread.
type Job = Box<dyn FnOnce(&mut Engine) + Send>;

/// The engine on a thread of its own (it is not `Send`, and cells block): the shell task sends
/// it jobs and awaits their answers.
struct EngineThread {
    jobs: std_mpsc::Sender<Job>,
}

impl EngineThread {
    fn start(config: Config) -> (EngineThread, Interrupt) {
        let (jobs, queue) = std_mpsc::channel::<Job>();
        let (interrupt_tx, interrupt_rx) = std_mpsc::channel();
        std::thread::spawn(move || {
            let session = Session::new(DeviceSlot::new(config.device.clone()));
            let mut engine = Engine::new(session, config.backend, config.options);
            let _ = interrupt_tx.send(engine.interrupt());
            for job in queue {
                // A panic is a compiler bug; the job's caller gets no answer and reports it, and
                // the session goes on with what it holds.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(&mut engine)));
            }
        });
        let interrupt = interrupt_rx.recv().unwrap_or_default();
        (EngineThread { jobs }, interrupt)
    }

    async fn call<R: Send + 'static>(
        &self,
        job: impl FnOnce(&mut Engine) -> R + Send + 'static,
    ) -> Option<R> {
        let (answer, answered) = oneshot::channel();
        self.jobs
            .send(Box::new(move |engine| {
                let _ = answer.send(job(engine));
            }))
            .ok()?;
        answered.await.ok()
    }
}

/// What the shell remembers between requests.
struct Shell {
    engine: EngineThread,
    iopub: mpsc::UnboundedSender<JupyterMessage>,
    count: ExecutionCount,
    /// Inputs run with `store_history`, with their results' text, by execution count.
    history: Vec<(usize, String, String)>,
}

async fn serve(info: ConnectionInfo, config: Config) -> Result<(), String> {
    let session_id = uuid::Uuid::new_v4().to_string();
    let failed = |what: &str, e: RuntimeError| format!("cannot open the {what} socket: {e}");
    let mut iopub_socket = jupyter_zmq_client::create_kernel_iopub_connection(&info, &session_id)
        .await
        .map_err(|e| failed("iopub", e))?;
    let mut shell = jupyter_zmq_client::create_kernel_shell_connection(&info, &session_id)
        .await
        .map_err(|e| failed("shell", e))?;
    let control = jupyter_zmq_client::create_kernel_control_connection(&info, &session_id)
        .await
        .map_err(|e| failed("control", e))?;
    let _stdin = jupyter_zmq_client::create_kernel_stdin_connection(&info, &session_id)
        .await
        .map_err(|e| failed("stdin", e))?;
    let mut heartbeat = jupyter_zmq_client::create_kernel_heartbeat_connection(&info)
        .await
        .map_err(|e| failed("heartbeat", e))?;

    tokio::spawn(async move {
        while let Ok(beat) = heartbeat.socket.recv().await {
            if heartbeat.socket.send(beat).await.is_err() {
                break;
            }
        }
    });
    let (iopub, mut published) = mpsc::unbounded_channel::<JupyterMessage>();
    tokio::spawn(async move {
        while let Some(message) = published.recv().await {
            if let Err(e) = iopub_socket.send(message).await {
                eprintln!("weft kernel: cannot publish on iopub: {e}");
            }
        }
    });
    let _ = iopub.send(Status::starting().into());

    let (engine, interrupt) = EngineThread::start(config);
    let (shutdown_tx, mut shutdown) = mpsc::unbounded_channel::<()>();
    tokio::spawn(serve_control(control, iopub.clone(), interrupt, shutdown_tx));

    let mut state =
        Shell { engine, iopub: iopub.clone(), count: ExecutionCount::new(0), history: Vec::new() };
    loop {
        let request = tokio::select! {
            request = read(&mut shell, "shell") => match request {
                Some(request) => request,
                None => break,
            },
            _ = shutdown.recv() => break,
        };
        let _ = iopub.send(Status::busy().as_child_of(&request));
        let reply = state.answer(&request).await;
        let stop = matches!(request.content, JupyterMessageContent::ShutdownRequest(_));
        if let Some(reply) = reply {
            let _ = shell.send(reply).await;
        }
        let _ = iopub.send(Status::idle().as_child_of(&request));
        if stop {
            break;
        }
    }
    // Let the last replies and statuses leave before the process ends.
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    Ok(())
}

/// The control channel, beside a running cell: interrupts, kernel info and shutdown.
async fn serve_control(
    mut control: KernelControlConnection,
    iopub: mpsc::UnboundedSender<JupyterMessage>,
    interrupt: Interrupt,
    shutdown: mpsc::UnboundedSender<()>,
) {
    while let Some(request) = read(&mut control, "control").await {
        let _ = iopub.send(Status::busy().as_child_of(&request));
        let reply = match &request.content {
            JupyterMessageContent::InterruptRequest(_) => {
                interrupt.request();
                Some(InterruptReply::new().as_child_of(&request))
            }
            JupyterMessageContent::KernelInfoRequest(_) => Some(kernel_info().as_child_of(&request)),
            JupyterMessageContent::ShutdownRequest(r) => {
                // A running cell stops first.
                interrupt.request();
                Some(ShutdownReply { restart: r.restart, ..Default::default() }.as_child_of(&request))
            }
            _ => None,
        };
        let stop = matches!(request.content, JupyterMessageContent::ShutdownRequest(_));
        if let Some(reply) = reply {
            let _ = control.send(reply).await;
        }
        let _ = iopub.send(Status::idle().as_child_of(&request));
        if stop {
            let _ = shutdown.send(());
            return;
        }
    }
}

/// The next message with a good signature; `None` when the socket itself fails.
async fn read<S: zeromq::SocketRecv>(
    connection: &mut Connection<S>,
    channel: &str,
) -> Option<JupyterMessage> {
    loop {
        let frames = match connection.socket.recv().await {
            Ok(frames) => frames,
            Err(e) => {
                eprintln!("weft kernel: the {channel} socket failed: {e}");
                return None;
            }
        };
        // The signature is checked here; a bad one, a malformed frame or content that does
        // not parse drops the message, and the kernel goes on.
        match RawMessage::from_multipart(frames, &connection.mac).and_then(parse) {
            Ok(message) => return Some(message),
            Err(RuntimeError::VerifyError(_)) => {
                eprintln!(
                    "weft kernel: dropped a message on {channel}: its signature does not match the key"
                );
            }
            Err(e) => eprintln!("weft kernel: dropped a message on {channel}: {e}"),
        }
    }
}

/// A verified message's frames as a message: as `jupyter-zmq-client` parses them, except that
/// fields the protocol makes optional and `jupyter-protocol` requires get the protocol's
/// defaults first (a `history_request` searching without `unique` or `n`).
fn parse(raw: RawMessage) -> Result<JupyterMessage, RuntimeError> {
    let [header, parent, metadata, content, buffers @ ..] = raw.jparts.as_slice() else {
        return Err(RuntimeError::InsufficientMessageParts(raw.jparts.len()));
    };
    let header: jupyter_protocol::Header = serde_json::from_slice(header)?;
    let mut content: serde_json::Value = serde_json::from_slice(content)?;
    if header.msg_type == "history_request"
        && let Some(fields) = content.as_object_mut()
    {
        let defaults =
            [("output", false.into()), ("raw", true.into()), ("unique", false.into()), ("n", 0.into())];
        for (name, value) in defaults {
            fields.entry(name).or_insert(value);
        }
        for name in ["start", "stop"] {
            fields.entry(name).or_insert(0.into());
        }
    }
    let content = JupyterMessageContent::from_type_and_content(&header.msg_type, content)
        .map_err(|source| RuntimeError::ParseError { msg_type: header.msg_type.clone(), source })?;
    Ok(JupyterMessage {
        zmq_identities: raw.zmq_identities.clone(),
        // An empty parent header (`{}`) is none.
        parent_header: serde_json::from_slice(parent).ok(),
        metadata: serde_json::from_slice(metadata)?,
        header,
        content,
        buffers: buffers.to_vec(),
        channel: None,
    })
}

fn kernel_info() -> KernelInfoReply {
    KernelInfoReply {
        status: ReplyStatus::Ok,
        protocol_version: "5.3".to_string(),
        implementation: "weft".to_string(),
        implementation_version: env!("CARGO_PKG_VERSION").to_string(),
        language_info: LanguageInfo {
            name: "weft".to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            mimetype: Some("text/x-weft".to_string()),
            file_extension: Some(".weft".to_string()),
            // The syntax is a subset of Python's.
            pygments_lexer: Some("python3".to_string()),
            codemirror_mode: Some(CodeMirrorMode::python()),
            nbconvert_exporter: None,
        },
        banner: format!("Weft {}: nested data-parallel Python, on the GPU", env!("CARGO_PKG_VERSION")),
        help_links: vec![HelpLink {
            text: "The Weft language".to_string(),
            url: "https://github.com/weft-lang/weft/blob/main/docs/language.md".to_string(),
        }],
        debugger: false,
        error: None,
    }
}

impl Shell {
    async fn answer(&mut self, request: &JupyterMessage) -> Option<JupyterMessage> {
        let reply: JupyterMessage = match &request.content {
            JupyterMessageContent::KernelInfoRequest(_) => kernel_info().as_child_of(request),
            JupyterMessageContent::ExecuteRequest(execute) => self.execute(request, execute).await,
            JupyterMessageContent::IsCompleteRequest(r) => match input_status(&r.code) {
                InputStatus::Complete => IsCompleteReply::complete(),
                InputStatus::Incomplete { indent } => IsCompleteReply::incomplete(indent),
                InputStatus::Invalid => IsCompleteReply::invalid(),
            }
            .as_child_of(request),
            JupyterMessageContent::CompleteRequest(r) => {
                let (code, cursor) = (r.code.clone(), byte_offset(&r.code, r.cursor_pos));
                let start = word_start(&code, cursor);
                let matches = self
                    .engine
                    .call(move |engine| engine.completions(&code, cursor))
                    .await
                    .unwrap_or_default()
                    .into_iter()
                    .map(|c| c.label)
                    .collect();
                CompleteReply {
                    matches,
                    cursor_start: char_offset(&r.code, start),
                    cursor_end: r.cursor_pos,
                    ..Default::default()
                }
                .as_child_of(request)
            }
            JupyterMessageContent::InspectRequest(r) => {
                let (code, cursor) = (r.code.clone(), byte_offset(&r.code, r.cursor_pos));
                // Jupyter asks with the cursor just after a name, where the name is inspected.
                let at = word_start(&code, cursor).min(cursor.saturating_sub(1));
                let found = self.engine.call(move |engine| engine.inspect(&code, at)).await.flatten();
                InspectReply {
                    found: found.is_some(),
                    data: found.map_or_else(Media::default, |markdown| {
                        Media::new(vec![MediaType::Plain(markdown.clone()), MediaType::Markdown(markdown)])
                    }),
                    ..Default::default()
                }
                .as_child_of(request)
            }
            JupyterMessageContent::HistoryRequest(r) => {
                HistoryReply::new(self.history(r)).as_child_of(request)
            }
            JupyterMessageContent::CommInfoRequest(_) => CommInfoReply::default().as_child_of(request),
            JupyterMessageContent::ShutdownRequest(r) => {
                ShutdownReply { restart: r.restart, ..Default::default() }.as_child_of(request)
            }
            JupyterMessageContent::UnknownMessage(unknown) => {
                if !unknown.msg_type.ends_with("_request") {
                    return None;
                }
                let content = unknown.reply(serde_json::json!({ "status": "error", "ename": "NotImplemented",
                    "evalue": format!("weft kernel does not answer {}", unknown.msg_type), "traceback": [] }));
                JupyterMessage::new(content, Some(request))
            }
            _ => return None,
        };
        Some(reply)
    }

    async fn execute(&mut self, request: &JupyterMessage, execute: &ExecuteRequest) -> JupyterMessage {
        let silent = execute.silent;
        let store_history = execute.store_history && !silent;
        if store_history {
            self.count.increment();
        }
        let count = self.count;
        if !silent {
            let _ = self.iopub.send(
                ExecuteInput { code: execute.code.clone(), execution_count: count }.as_child_of(request),
            );
        }
        let (iopub, parent, code) = (self.iopub.clone(), request.clone(), execute.code.clone());
        let outcome = self
            .engine
            .call(move |engine| {
                let mut error: Option<ReplyError> = None;
                let mut shown = String::new();
                let mut on_event = |event| {
                    let message = match event {
                        Event::Printed(text) if !silent => StreamContent::stdout(&text).as_child_of(&parent),
                        Event::Chart(chart) if !silent => {
                            DisplayData::new(render::figure(&figure::render(&chart))).as_child_of(&parent)
                        }
                        Event::Profile(text) if !silent => StreamContent::stdout(&text).as_child_of(&parent),
                        Event::Notice(text) if !silent => {
                            StreamContent::stderr(&format!("weft: {text}\n")).as_child_of(&parent)
                        }
                        Event::Value { text, ty, shape, table } if !silent => {
                            shown = text.clone();
                            ExecuteResult {
                                execution_count: count,
                                data: render::value(&text, &ty, shape.as_deref(), table.as_ref()),
                                metadata: Default::default(),
                                transient: Some(Transient::default()),
                            }
                            .as_child_of(&parent)
                        }
                        Event::Diagnostic { diagnostic, source, text } => {
                            if diagnostic.severity != Severity::Error {
                                if silent {
                                    return;
                                }
                                StreamContent::stderr(&render::warning(&diagnostic, &source, &text))
                                    .as_child_of(&parent)
                            } else {
                                let output = ErrorOutput {
                                    ename: diagnostic.code.as_str().to_string(),
                                    evalue: diagnostic.message.clone(),
                                    traceback: render::traceback(&diagnostic, &source, &text),
                                };
                                if error.is_none() {
                                    error = Some(ReplyError {
                                        ename: output.ename.clone(),
                                        evalue: output.evalue.clone(),
                                        traceback: output.traceback.clone(),
                                    });
                                }
                                output.as_child_of(&parent)
                            }
                        }
                        _ => return,
                    };
                    let _ = iopub.send(message);
                };
                let answer = match command::command_text(&code) {
                    None => {
                        if store_history {
                            engine.number_next_cell(count.value());
                        }
                        engine.run_cell(&code, &mut on_event);
                        Ok(Answer::Done)
                    }
                    Some(_) => match command::parse(&code) {
                        Ok(Command::Quit) => Err(CommandError::Usage(
                            "a notebook's kernel is shut down from the notebook (Kernel › Shut Down)"
                                .to_string(),
                        )),
                        Ok(command) => engine.command(command, &mut on_event),
                        Err(why) => Err(CommandError::Usage(why)),
                    },
                };
                match answer {
                    Ok(answer) if !silent => {
                        if let Some(message) = render::answer(answer) {
                            let _ = iopub.send(JupyterMessage::new(message, Some(&parent)));
                        }
                    }
                    Ok(_) => {}
                    Err(CommandError::Usage(why)) => {
                        let output = ErrorOutput {
                            ename: "UsageError".to_string(),
                            evalue: why.clone(),
                            traceback: vec![format!("\u{1b}[31mUsageError\u{1b}[0m: {why}")],
                        };
                        error = Some(ReplyError {
                            ename: output.ename.clone(),
                            evalue: output.evalue.clone(),
                            traceback: output.traceback.clone(),
                        });
                        let _ = iopub.send(output.as_child_of(&parent));
                    }
                    // Its diagnostics went out as errors already.
                    Err(CommandError::Failed) => {}
                }
                (error, shown)
            })
            .await;
        let (error, shown) = outcome.unwrap_or_else(|| {
            let lost = "internal error: the session engine failed on this cell (a bug in Weft); earlier values are kept".to_string();
            (
                Some(ReplyError { ename: "E0499".to_string(), evalue: lost.clone(), traceback: vec![lost] }),
                String::new(),
            )
        });
        if store_history {
            self.history.push((count.value(), execute.code.clone(), shown));
        }
        ExecuteReply {
            status: if error.is_some() { ReplyStatus::Error } else { ReplyStatus::Ok },
            execution_count: count,
            user_expressions: Some(Default::default()),
            error: error.map(Box::new),
            ..Default::default()
        }
        .as_child_of(request)
    }

    /// The inputs a history request asks for, from this kernel's session (numbered 1).
    fn history(&self, request: &HistoryRequest) -> Vec<HistoryEntry> {
        const SESSION: usize = 1;
        let entry = |(line, input, output): &(usize, String, String), with_output: bool| {
            if with_output {
                HistoryEntry::InputOutput(SESSION, *line, (input.clone(), output.clone()))
            } else {
                HistoryEntry::Input(SESSION, *line, input.clone())
            }
        };
        fn last<T>(mut entries: Vec<T>, n: i32) -> Vec<T> {
            let n = usize::try_from(n).unwrap_or(0);
            entries.split_off(entries.len().saturating_sub(n))
        }
        match request {
            HistoryRequest::Tail { n, output, .. } => {
                last(self.history.iter().collect(), *n).into_iter().map(|e| entry(e, *output)).collect()
            }
            HistoryRequest::Range { start, stop, output, .. } => self
                .history
                .iter()
                .filter(|(line, ..)| (*start as i64..*stop as i64).contains(&(*line as i64)))
                .map(|e| entry(e, *output))
                .collect(),
            HistoryRequest::Search { pattern, unique, output, n, .. } => {
                let mut seen = std::collections::HashSet::new();
                let mut matches: Vec<&(usize, String, String)> = self
                    .history
                    .iter()
                    .rev()
                    .filter(|(_, input, _)| glob_match(pattern, input))
                    .filter(|(_, input, _)| !*unique || seen.insert(input.clone()))
                    .collect();
                matches.reverse();
                let matches = if *n > 0 { last(matches, *n) } else { matches };
                matches.into_iter().map(|e| entry(e, *output)).collect()
            }
        }
    }
}

/// IPython's history pattern: `*` any run of characters, `?` any one, the rest literal.
fn glob_match(pattern: &str, text: &str) -> bool {
    wildmatch::WildMatch::new(pattern).matches(text)
}

/// Jupyter counts cursor positions in Unicode characters; the engine in bytes.
fn byte_offset(text: &str, chars: usize) -> usize {
    text.char_indices().nth(chars).map_or(text.len(), |(i, _)| i)
}

fn char_offset(text: &str, bytes: usize) -> usize {
    text[..bytes.min(text.len())].chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_patterns_match_as_ipython_globs() {
        assert!(glob_match("sum*", "sum([1, 2])"));
        assert!(glob_match("*x*", "1 + x"));
        assert!(glob_match("a?c", "abc"));
        assert!(!glob_match("a?c", "ac"));
        assert!(!glob_match("sum*", "len(xs)"));
        assert!(glob_match("*", ""));
    }

    #[test]
    fn cursor_positions_convert_between_characters_and_bytes() {
        let text = "é + xs";
        assert_eq!(byte_offset(text, 6), text.len());
        assert_eq!(byte_offset(text, 1), 2);
        assert_eq!(char_offset(text, 2), 1);
        assert_eq!(word_start(text, text.len()), text.len() - 2);
    }
}
