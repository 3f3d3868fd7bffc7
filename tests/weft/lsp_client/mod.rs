//! A small LSP client for tests and benchmarks: it starts the real `weft lsp` and frames
//! JSON-RPC messages as the protocol says (`Content-Length` headers) over the process's pipes.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub const TIMEOUT: Duration = Duration::from_secs(60);

pub struct Client {
    pub child: Child,
    pub stdin: Option<ChildStdin>,
    messages: Receiver<Value>,
    /// Notifications and server requests seen while waiting for something else.
    seen: Vec<Value>,
    next_id: i64,
}

impl Client {
    pub fn start() -> Client {
        Client::start_with_env(&[])
    }

    /// Starts the server with these environment variables set.
    pub fn start_with_env(vars: &[(&str, &str)]) -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_weft"))
            .arg("lsp")
            .envs(vars.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("weft lsp starts");
        let stdout = child.stdout.take().expect("piped");
        let (send, messages) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let mut length = None;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let line = line.trim_end();
                    if line.is_empty() {
                        break;
                    }
                    if let Some(n) = line.strip_prefix("Content-Length: ") {
                        length = n.parse::<usize>().ok();
                    }
                }
                let mut body = vec![0; length.expect("a Content-Length header")];
                if reader.read_exact(&mut body).is_err() {
                    return;
                }
                let message: Value = serde_json::from_slice(&body).expect("the server sends JSON");
                if send.send(message).is_err() {
                    return;
                }
            }
        });
        let stdin = child.stdin.take();
        Client { child, stdin, messages, seen: Vec::new(), next_id: 0 }
    }

    pub fn send(&mut self, message: Value) {
        let body = message.to_string();
        let stdin = self.stdin.as_mut().expect("open");
        write!(stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).expect("the server reads");
        stdin.flush().expect("flush");
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({ "jsonrpc": "2.0", "method": method, "params": params }));
    }

    /// Sends a request and returns its id, without waiting.
    pub fn request_async(&mut self, method: &str, params: Value) -> i64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        id
    }

    /// The next message before `deadline`. A request from the server (a refresh) is answered at
    /// once, and returned like any other message.
    fn receive(&mut self, deadline: Instant) -> Result<Value, RecvTimeoutError> {
        let message = self.messages.recv_timeout(deadline.saturating_duration_since(Instant::now()))?;
        if message.get("method").is_some() && message.get("id").is_some() {
            self.send(json!({ "jsonrpc": "2.0", "id": message["id"].clone(), "result": null }));
        }
        Ok(message)
    }

    pub fn next(&mut self, deadline: Instant) -> Value {
        match self.receive(deadline) {
            Ok(message) => message,
            Err(RecvTimeoutError::Timeout) => {
                panic!("no message from the server in time; seen {:?}", self.seen)
            }
            Err(RecvTimeoutError::Disconnected) => panic!("the server closed its output"),
        }
    }

    /// The diagnostics of `version`, if they come before `deadline` (a newer edit may make the
    /// server skip a version: it publishes only for the latest).
    pub fn diagnostics_by(&mut self, uri: &str, version: i32, deadline: Instant) -> Option<Vec<Value>> {
        let wanted = |m: &Value| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["uri"] == uri
                && m["params"]["version"] == version
        };
        if let Some(k) = self.seen.iter().position(wanted) {
            return self.seen.remove(k)["params"]["diagnostics"].as_array().cloned();
        }
        loop {
            let message = self.receive(deadline).ok()?;
            if wanted(&message) {
                return message["params"]["diagnostics"].as_array().cloned();
            }
            self.seen.push(message);
        }
    }

    /// Forgets the notifications and server requests seen so far.
    pub fn forget_seen(&mut self) {
        self.seen.clear();
    }

    /// The whole response (`result` or `error`) to request `id`.
    pub fn response(&mut self, id: i64) -> Value {
        let deadline = Instant::now() + TIMEOUT;
        if let Some(k) = self.seen.iter().position(|m| m["id"] == id && m.get("method").is_none()) {
            return self.seen.remove(k);
        }
        loop {
            let message = self.next(deadline);
            if message["id"] == id && message.get("method").is_none() {
                return message;
            }
            self.seen.push(message);
        }
    }

    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.request_async(method, params);
        let response = self.response(id);
        assert!(response.get("error").is_none(), "{method} failed: {response}");
        response["result"].clone()
    }

    /// The first notification of `method` for which `wanted` holds.
    pub fn notification(&mut self, method: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + TIMEOUT;
        if let Some(k) = self.seen.iter().position(|m| m["method"] == method && wanted(&m["params"])) {
            return self.seen.remove(k)["params"].clone();
        }
        loop {
            let message = self.next(deadline);
            if message["method"] == method && wanted(&message["params"]) {
                return message["params"].clone();
            }
            self.seen.push(message);
        }
    }

    pub fn initialize(&mut self) -> Value {
        let result = self.request(
            "initialize",
            json!({ "processId": null, "rootUri": null,
                    "capabilities": { "workspace": { "inlayHint": { "refreshSupport": true }, "codeLens": { "refreshSupport": true } } },
                    "initializationOptions": { "inlayHints": { "types": true, "shapes": true, "kernels": true } } }),
        );
        self.notify("initialized", json!({}));
        result
    }

    pub fn open(&mut self, uri: &str, text: &str) {
        self.notify(
            "textDocument/didOpen",
            json!({ "textDocument": { "uri": uri, "languageId": "weft", "version": 1, "text": text } }),
        );
    }

    pub fn change(&mut self, uri: &str, version: i32, text: &str) {
        self.notify(
            "textDocument/didChange",
            json!({ "textDocument": { "uri": uri, "version": version }, "contentChanges": [{ "text": text }] }),
        );
    }

    pub fn diagnostics(&mut self, uri: &str, version: i32) -> Vec<Value> {
        let params = self
            .notification("textDocument/publishDiagnostics", |p| p["uri"] == uri && p["version"] == version);
        params["diagnostics"].as_array().cloned().unwrap_or_default()
    }

    /// Shuts down and exits; the exit status.
    pub fn shutdown(mut self) -> std::process::ExitStatus {
        self.request("shutdown", Value::Null);
        self.notify("exit", Value::Null);
        drop(self.stdin.take());
        wait(&mut self.child)
    }
}

pub fn wait(child: &mut Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        assert!(Instant::now() < deadline, "the server did not exit");
        std::thread::sleep(Duration::from_millis(10));
    }
}

pub fn position(text: &str, needle: &str, within: usize) -> Value {
    let offset = text.find(needle).expect("the needle occurs") + within;
    let line = text[..offset].matches('\n').count();
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let character: usize = text[line_start..offset].encode_utf16().count();
    json!({ "line": line, "character": character })
}
