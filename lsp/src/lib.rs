//! The Weft language server, `weft lsp`: LSP 3.17 over stdio, on tower-lsp-server, asking the
//! compiler's one incremental database through `weft_ide` (an `AnalysisHost` and its snapshots).
//!
//! How work flows:
//! - Text changes are applied in the order of their versions, before any `.await`. The server
//!   asks for whole-document sync, so a change that arrives after a newer one (tower-lsp-server
//!   runs handlers concurrently and does not order them, tower-lsp #284) is simply dropped.
//! - Every query runs on an `Analysis` snapshot on tokio's blocking pool, never on the async
//!   runtime. Setting a newer text cancels the snapshots' work: it unwinds as `Cancelled`,
//!   which becomes `ContentModified`, while any other panic becomes an internal error for that
//!   request only, and the server goes on.
//! - Diagnostics are published per version, and only while that version is still the latest.
//! - The fusion plan is built in the background after the diagnostics, since the ILP can take
//!   seconds on a large file. Until it is ready for the current version, hovers leave out the
//!   kernel and inlay hints show types and shapes only; then the client is asked to refresh its
//!   hints and lenses.
//!
//! **Architecture Invariant:** this crate knows the protocol and nothing of the compiler's
//! passes: every answer comes from a `weft_ide` function.

mod convert;

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::Value;
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp_server::ls_types::{self as lsp, *};
use tower_lsp_server::{Client, LanguageServer, LspService, Server};
use weft_ide::{self as ide, Analysis, AnalysisHost, Db, FusionPlan, InlayOptions, SourceFile, TextRange};

pub use convert::LineMap;

/// The stack of every thread the server runs requests on. The compiler's own deep walks grow
/// their stacks as they go (`weft_core::ensure_stack`), but what surrounds them does not: the
/// comparisons and drops of deep trees, and the serialisation of answers. A chain of 100,000
/// terms, an `elif` chain of thousands of branches and the parser's deepest nesting all fit in
/// this, with room to spare; the memory is reserved, and only what a request touches is used.
const STACK_BYTES: usize = 256 << 20;

/// Runs the server on stdin and stdout until the client says `exit` or goes away.
pub fn serve_stdio() -> std::process::ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_stack_size(STACK_BYTES)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the language server: {error}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let shut_down = runtime.block_on(async {
        let (service, socket) = service();
        let shut_down = service.inner().shut_down.clone();
        Server::new(tokio::io::stdin(), tokio::io::stdout(), socket).serve(service).await;
        shut_down.load(std::sync::atomic::Ordering::SeqCst)
    });
    // Blocking queries still running for a client that is gone are abandoned.
    runtime.shutdown_background();
    // The protocol: 0 after a `shutdown` request, 1 for an `exit` (or a client gone) without one.
    if shut_down { std::process::ExitCode::SUCCESS } else { std::process::ExitCode::FAILURE }
}

/// The service, with Weft's custom requests.
pub fn service() -> (LspService<Backend>, tower_lsp_server::ClientSocket) {
    LspService::build(Backend::new)
        .custom_method("weft/fusionPlan", Backend::fusion_plan)
        .custom_method("weft/wgsl", Backend::wgsl)
        .finish()
}

/// An open document.
struct Document {
    file: SourceFile,
    version: i32,
    map: LineMap,
}

#[derive(Default)]
struct State {
    host: AnalysisHost,
    documents: HashMap<String, Document>,
    /// The version of each document whose fusion plan is built (the pipeline caches the plan
    /// itself; until it is built, no request waits for it).
    plans: HashMap<String, i32>,
    inlay: InlayOptions,
    /// Whether the client asks again for hints and lenses when told they changed.
    refresh_inlay_hints: bool,
    refresh_code_lenses: bool,
}

#[derive(Clone)]
pub struct Backend {
    client: Client,
    state: Arc<Mutex<State>>,
    /// Set by `WEFT_LSP_TEST_PANIC_ON_HOVER`: every hover panics inside its query, so that the
    /// end-to-end tests can check a failing request leaves the server working.
    panic_on_hover: bool,
    /// Whether the client sent `shutdown`, which decides the exit status.
    shut_down: Arc<std::sync::atomic::AtomicBool>,
}

/// What a query gets: a snapshot of the database, the document and its line map.
struct Snapshot {
    analysis: Analysis,
    file: SourceFile,
    map: LineMap,
    uri: Uri,
    inlay: InlayOptions,
    /// Whether the plan of this very version is built (asking for it then is a cache hit).
    plan_ready: bool,
}

impl Snapshot {
    /// The fusion plan of this version, if it is built yet.
    fn plan<'db>(&self, db: &'db dyn Db) -> Option<&'db FusionPlan> {
        if self.plan_ready { ide::fusion_plan(db, self.file) } else { None }
    }
}

/// The settings a client may send, in `initializationOptions` or as `weft` in its settings.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Settings {
    inlay_hints: Option<InlaySettings>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct InlaySettings {
    types: Option<bool>,
    shapes: Option<bool>,
    kernels: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FusionPlanParams {
    text_document: TextDocumentIdentifier,
    /// Only this function's kernels (`main` for the top-level statements, or an instance).
    function: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WgslParams {
    text_document: TextDocumentIdentifier,
    /// Only this function's kernels (`main` for the top-level statements).
    function: Option<String>,
}

impl Backend {
    fn new(client: Client) -> Backend {
        let panic_on_hover = std::env::var_os("WEFT_LSP_TEST_PANIC_ON_HOVER").is_some();
        Backend { client, state: Arc::default(), panic_on_hover, shut_down: Arc::default() }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn apply_settings(&self, value: Value) {
        let settings: Settings =
            serde_json::from_value(value.get("weft").cloned().unwrap_or(value)).unwrap_or_default();
        if let Some(inlay) = settings.inlay_hints {
            let mut state = self.lock();
            let current = state.inlay;
            state.inlay = InlayOptions {
                types: inlay.types.unwrap_or(current.types),
                shapes: inlay.shapes.unwrap_or(current.shapes),
                kernels: inlay.kernels.unwrap_or(current.kernels),
            };
        }
    }

    /// Sets a document's text if `version` is newer than what the server has. Runs before any
    /// await, so the latest version always wins.
    fn set_text(&self, uri: &Uri, version: i32, text: String) -> bool {
        let mut state = self.lock();
        let State { host, documents, .. } = &mut *state;
        let map = LineMap::new(&text);
        match documents.get_mut(uri.as_str()) {
            Some(doc) if doc.version >= version => false,
            Some(doc) => {
                host.set_text(doc.file, text);
                doc.version = version;
                doc.map = map;
                true
            }
            None => {
                let file = host.add_file(uri.as_str().to_string(), text);
                documents.insert(uri.as_str().to_string(), Document { file, version, map });
                true
            }
        }
    }

    fn snapshot(&self, uri: &Uri) -> Option<Snapshot> {
        let state = self.lock();
        let doc = state.documents.get(uri.as_str())?;
        let plan_ready = state.plans.get(uri.as_str()) == Some(&doc.version);
        Some(Snapshot {
            analysis: state.host.analysis(),
            file: doc.file,
            map: doc.map.clone(),
            uri: uri.clone(),
            inlay: state.inlay,
            plan_ready,
        })
    }

    /// Runs `query` on a snapshot, off the async runtime.
    async fn query<T: Send + 'static>(
        &self,
        uri: &Uri,
        query: impl FnOnce(&Snapshot, &dyn Db) -> T + Send + 'static,
    ) -> Result<Option<T>> {
        let Some(snapshot) = self.snapshot(uri) else { return Ok(None) };
        let task = tokio::task::spawn_blocking(move || {
            // The snapshot is dropped after an unwind, so nothing half-updated is seen again.
            let analysis = snapshot.analysis.clone();
            std::panic::catch_unwind(AssertUnwindSafe(|| analysis.with(move |db| query(&snapshot, db))))
        });
        match task.await {
            Ok(Ok(Ok(value))) => Ok(Some(value)),
            Ok(Ok(Err(_cancelled))) => Err(Error::new(ErrorCode::ContentModified)),
            Ok(Err(panic)) => {
                let why = panic_message(&panic);
                self.client
                    .log_message(MessageType::ERROR, format!("weft lsp: a request failed: {why}"))
                    .await;
                Err(Error {
                    code: ErrorCode::InternalError,
                    message: format!("internal error: {why}").into(),
                    data: None,
                })
            }
            Err(join) => {
                Err(Error { code: ErrorCode::InternalError, message: join.to_string().into(), data: None })
            }
        }
    }

    /// Whether `version` of this very input (not one from before a close and reopen) is still
    /// the document's latest.
    fn is_current(state: &State, uri: &Uri, file: SourceFile, version: i32) -> bool {
        state.documents.get(uri.as_str()).is_some_and(|d| d.file == file && d.version == version)
    }

    /// Checks the document and publishes its diagnostics, unless a newer version came first.
    async fn publish(&self, uri: Uri, version: i32) {
        // The input the diagnostics are for comes with them, so a close and reopen in between
        // is noticed.
        let checked = self
            .query(&uri, |s, db| {
                let diagnostics = ide::diagnostics(db, s.file)
                    .iter()
                    .map(|d| convert::diagnostic(d, &s.map, &s.uri))
                    .collect::<Vec<_>>();
                (s.file, diagnostics)
            })
            .await;
        let Ok(Some((file, diagnostics))) = checked else { return };
        let current = Self::is_current(&self.lock(), &uri, file, version);
        if current {
            self.client.publish_diagnostics(uri.clone(), diagnostics, Some(version)).await;
            let me = self.clone();
            tokio::spawn(async move { me.build_plan(uri, file, version).await });
        }
    }

    /// Builds the fusion plan of `version` in the background (the ILP can take seconds on a
    /// large file); kernel hints, the kernel part of hovers and the lenses appear when it is
    /// ready. A newer edit cancels it.
    async fn build_plan(&self, uri: Uri, file: SourceFile, version: i32) {
        let Ok(Some(true)) = self.query(&uri, |s, db| ide::fusion_plan(db, s.file).is_some()).await else {
            return;
        };
        let (inlays, lenses) = {
            let mut state = self.lock();
            if !Self::is_current(&state, &uri, file, version) {
                return;
            }
            state.plans.insert(uri.as_str().to_string(), version);
            (state.refresh_inlay_hints, state.refresh_code_lenses)
        };
        if inlays {
            let _ = self.client.inlay_hint_refresh().await;
        }
        if lenses {
            let _ = self.client.code_lens_refresh().await;
        }
    }

    async fn fusion_plan(&self, params: FusionPlanParams) -> Result<Value> {
        let function = params.function;
        let plan = self
            .query(&params.text_document.uri, move |s, db| {
                let plan = ide::fusion_plan(db, s.file)?;
                let text = s.file.text(db);
                Some(editor_plan(s, text, ide::function_plan(db, s.file, plan, function.as_deref())))
            })
            .await?;
        Ok(plan.flatten().unwrap_or(Value::Null))
    }

    async fn wgsl(&self, params: WgslParams) -> Result<Value> {
        let function = params.function;
        let kernels = self
            .query(&params.text_document.uri, move |s, db| {
                let kernels = ide::kernel_sources(db, s.file, function.as_deref()).ok()?;
                let json: Vec<Value> = kernels
                    .into_iter()
                    .map(|k| {
                        serde_json::json!({
                            "function": k.function,
                            "instance": k.instance,
                            "name": k.name,
                            "range": s.map.range(k.span),
                            "wgsl": k.wgsl,
                        })
                    })
                    .collect();
                Some(Value::Array(json))
            })
            .await?;
        Ok(kernels.flatten().unwrap_or(Value::Null))
    }
}

/// A plan as `weft/fusionPlan` answers it: what `weft fusion --format json` prints, with each
/// kernel's source function (`source`), and each op's place as a protocol range (`range`) and
/// its source text (`excerpt`, as hovers name it), so that a client never converts byte offsets.
fn editor_plan(s: &Snapshot, text: &str, function_plan: ide::FunctionPlan) -> Value {
    let ide::FunctionPlan { plan, sources } = function_plan;
    let placed = |op: &ide::PlanOp| {
        let span = TextRange::new(op.start.into(), op.end.into());
        serde_json::json!({ "range": s.map.range(span), "excerpt": ide::op_excerpt(text, op) })
    };
    let add = |json: &mut Value, op: &ide::PlanOp| {
        if let (Some(json), Value::Object(extra)) = (json.as_object_mut(), placed(op)) {
            json.extend(extra);
        }
    };
    let mut json = serde_json::to_value(&plan).expect("a plan serialises");
    for ((kernel, source), planned) in
        json["kernels"].as_array_mut().into_iter().flatten().zip(sources).zip(&plan.kernels)
    {
        kernel["source"] = Value::String(source);
        for (op, planned) in kernel["ops"].as_array_mut().into_iter().flatten().zip(&planned.ops) {
            add(op, planned);
        }
    }
    for (pair, planned) in json["unfused"].as_array_mut().into_iter().flatten().zip(&plan.unfused) {
        add(&mut pair["from"], &planned.from);
        add(&mut pair["to"], &planned.to);
    }
    json
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into())
}

fn location(s: &Snapshot, range: TextRange) -> Location {
    Location { uri: s.uri.clone(), range: s.map.range(range) }
}

fn capabilities() -> ServerCapabilities {
    ServerCapabilities {
        position_encoding: Some(PositionEncodingKind::UTF16),
        text_document_sync: Some(TextDocumentSyncCapability::Kind(TextDocumentSyncKind::FULL)),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        definition_provider: Some(OneOf::Left(true)),
        references_provider: Some(OneOf::Left(true)),
        document_highlight_provider: Some(OneOf::Left(true)),
        rename_provider: Some(OneOf::Right(RenameOptions {
            prepare_provider: Some(true),
            work_done_progress_options: Default::default(),
        })),
        document_symbol_provider: Some(OneOf::Left(true)),
        workspace_symbol_provider: Some(OneOf::Left(true)),
        completion_provider: Some(CompletionOptions::default()),
        signature_help_provider: Some(SignatureHelpOptions {
            trigger_characters: Some(vec!["(".into(), ",".into()]),
            ..Default::default()
        }),
        inlay_hint_provider: Some(OneOf::Left(true)),
        code_lens_provider: Some(CodeLensOptions { resolve_provider: Some(false) }),
        folding_range_provider: Some(FoldingRangeProviderCapability::Simple(true)),
        selection_range_provider: Some(SelectionRangeProviderCapability::Simple(true)),
        document_formatting_provider: Some(OneOf::Left(true)),
        semantic_tokens_provider: Some(SemanticTokensServerCapabilities::SemanticTokensOptions(
            SemanticTokensOptions {
                legend: SemanticTokensLegend {
                    token_types: convert::TOKEN_TYPES.to_vec(),
                    token_modifiers: convert::TOKEN_MODIFIERS.to_vec(),
                },
                full: Some(SemanticTokensFullOptions::Bool(true)),
                ..Default::default()
            },
        )),
        ..Default::default()
    }
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        if let Some(options) = params.initialization_options {
            self.apply_settings(options);
        }
        if let Some(workspace) = &params.capabilities.workspace {
            let mut state = self.lock();
            state.refresh_inlay_hints =
                workspace.inlay_hint.as_ref().and_then(|c| c.refresh_support).unwrap_or(false);
            state.refresh_code_lenses =
                workspace.code_lens.as_ref().and_then(|c| c.refresh_support).unwrap_or(false);
        }
        Ok(InitializeResult {
            capabilities: capabilities(),
            server_info: Some(ServerInfo {
                name: "weft".into(),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            }),
            offset_encoding: None,
        })
    }

    async fn shutdown(&self) -> Result<()> {
        self.shut_down.store(true, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }

    async fn did_change_configuration(&self, params: DidChangeConfigurationParams) {
        self.apply_settings(params.settings);
        // Hints already shown were computed with the old settings.
        if self.lock().refresh_inlay_hints {
            let _ = self.client.inlay_hint_refresh().await;
        }
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        let doc = params.text_document;
        if self.set_text(&doc.uri, doc.version, doc.text) {
            self.publish(doc.uri, doc.version).await;
        }
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        let uri = params.text_document.uri;
        let version = params.text_document.version;
        // Whole-document sync: the last change holds the text.
        let Some(change) = params.content_changes.into_iter().next_back() else { return };
        if change.range.is_none() && self.set_text(&uri, version, change.text) {
            self.publish(uri, version).await;
        }
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        let uri = params.text_document.uri;
        {
            let mut state = self.lock();
            state.documents.remove(uri.as_str());
            state.plans.remove(uri.as_str());
        }
        self.client.publish_diagnostics(uri, Vec::new(), None).await;
    }

    async fn hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        let at = params.text_document_position_params;
        let position = at.position;
        let panic_on_hover = self.panic_on_hover;
        let hover = self
            .query(&at.text_document.uri, move |s, db| {
                assert!(!panic_on_hover, "a hover failed on purpose (WEFT_LSP_TEST_PANIC_ON_HOVER)");
                let offset = s.map.offset(position);
                ide::hover(db, s.file, offset, s.plan(db)).map(|h| Hover {
                    contents: HoverContents::Markup(MarkupContent {
                        kind: MarkupKind::Markdown,
                        value: h.markdown,
                    }),
                    range: Some(s.map.range(h.range)),
                })
            })
            .await?;
        Ok(hover.flatten())
    }

    async fn goto_definition(&self, params: GotoDefinitionParams) -> Result<Option<GotoDefinitionResponse>> {
        let at = params.text_document_position_params;
        let position = at.position;
        let target = self
            .query(&at.text_document.uri, move |s, db| {
                let range = ide::definition(db, s.file, s.map.offset(position))?;
                Some(GotoDefinitionResponse::Scalar(location(s, range)))
            })
            .await?;
        Ok(target.flatten())
    }

    async fn references(&self, params: ReferenceParams) -> Result<Option<Vec<Location>>> {
        let at = params.text_document_position;
        let position = at.position;
        let include_declaration = params.context.include_declaration;
        self.query(&at.text_document.uri, move |s, db| {
            let offset = s.map.offset(position);
            let definition = ide::definition(db, s.file, offset);
            ide::references(db, s.file, offset)
                .into_iter()
                .filter(|r| include_declaration || Some(*r) != definition)
                .map(|r| location(s, r))
                .collect()
        })
        .await
    }

    async fn document_highlight(
        &self,
        params: DocumentHighlightParams,
    ) -> Result<Option<Vec<DocumentHighlight>>> {
        let at = params.text_document_position_params;
        let position = at.position;
        self.query(&at.text_document.uri, move |s, db| {
            ide::highlights(db, s.file, s.map.offset(position))
                .into_iter()
                .map(|(range, write)| DocumentHighlight {
                    range: s.map.range(range),
                    kind: Some(if write {
                        DocumentHighlightKind::WRITE
                    } else {
                        DocumentHighlightKind::READ
                    }),
                })
                .collect()
        })
        .await
    }

    async fn prepare_rename(
        &self,
        params: TextDocumentPositionParams,
    ) -> Result<Option<PrepareRenameResponse>> {
        let position = params.position;
        let range = self
            .query(&params.text_document.uri, move |s, db| {
                ide::prepare_rename(db, s.file, s.map.offset(position)).map(|r| s.map.range(r))
            })
            .await?;
        Ok(range.flatten().map(PrepareRenameResponse::Range))
    }

    async fn rename(&self, params: RenameParams) -> Result<Option<WorkspaceEdit>> {
        let at = params.text_document_position;
        let position = at.position;
        let new_name = params.new_name;
        let edits = self
            .query(&at.text_document.uri, move |s, db| {
                let edits = ide::rename(db, s.file, s.map.offset(position), &new_name)?;
                let edits: Vec<TextEdit> = edits
                    .into_iter()
                    .map(|e| TextEdit { range: s.map.range(e.range), new_text: e.new_text })
                    .collect();
                Ok::<_, String>(WorkspaceEdit {
                    changes: Some(HashMap::from([(s.uri.clone(), edits)])),
                    ..Default::default()
                })
            })
            .await?;
        match edits {
            None => Ok(None),
            Some(Ok(edit)) => Ok(Some(edit)),
            Some(Err(why)) => Err(Error::invalid_params(why)),
        }
    }

    async fn document_symbol(&self, params: DocumentSymbolParams) -> Result<Option<DocumentSymbolResponse>> {
        let symbols = self
            .query(&params.text_document.uri, |s, db| {
                ide::document_symbols(db, s.file)
                    .iter()
                    .map(|sym| document_symbol(s, sym))
                    .collect::<Vec<_>>()
            })
            .await?;
        Ok(symbols.map(DocumentSymbolResponse::Nested))
    }

    async fn symbol(&self, params: WorkspaceSymbolParams) -> Result<Option<WorkspaceSymbolResponse>> {
        let uris: Vec<Uri> = {
            let state = self.lock();
            state.documents.keys().filter_map(|u| u.parse().ok()).collect()
        };
        let query = params.query.to_lowercase();
        let mut found = Vec::new();
        for uri in uris {
            let query = query.clone();
            let symbols = self
                .query(&uri, move |s, db| {
                    let mut out = Vec::new();
                    flat_symbols(s, ide::document_symbols(db, s.file), &query, &mut out);
                    out
                })
                .await?;
            found.extend(symbols.unwrap_or_default());
        }
        Ok(Some(WorkspaceSymbolResponse::Nested(found)))
    }

    async fn completion(&self, params: CompletionParams) -> Result<Option<CompletionResponse>> {
        let at = params.text_document_position;
        let position = at.position;
        let items = self
            .query(&at.text_document.uri, move |s, db| {
                ide::completions(db, s.file, s.map.offset(position))
                    .into_iter()
                    .map(completion_item)
                    .collect()
            })
            .await?;
        Ok(items.map(CompletionResponse::Array))
    }

    async fn signature_help(&self, params: SignatureHelpParams) -> Result<Option<SignatureHelp>> {
        let at = params.text_document_position_params;
        let position = at.position;
        let help = self
            .query(&at.text_document.uri, move |s, db| {
                let help = ide::signature_help(db, s.file, s.map.offset(position))?;
                let parameters = help
                    .params
                    .iter()
                    .map(|p| ParameterInformation {
                        label: ParameterLabel::Simple(p.clone()),
                        documentation: None,
                    })
                    .collect();
                Some(SignatureHelp {
                    signatures: vec![SignatureInformation {
                        label: help.label,
                        documentation: help.doc.map(Documentation::String),
                        parameters: Some(parameters),
                        active_parameter: Some(help.active_param),
                    }],
                    active_signature: Some(0),
                    active_parameter: Some(help.active_param),
                })
            })
            .await?;
        Ok(help.flatten())
    }

    async fn inlay_hint(&self, params: InlayHintParams) -> Result<Option<Vec<InlayHint>>> {
        let range = params.range;
        self.query(&params.text_document.uri, move |s, db| {
            let range = s.map.text_range(range);
            ide::inlay_hints(db, s.file, range, s.inlay, s.plan(db))
                .into_iter()
                .map(|h| InlayHint {
                    position: s.map.position(h.offset),
                    label: InlayHintLabel::String(h.label),
                    // A kernel is neither a type nor a parameter, the protocol's two kinds.
                    kind: (h.kind != ide::InlayKind::Kernel).then_some(InlayHintKind::TYPE),
                    text_edits: None,
                    tooltip: Some(InlayHintTooltip::String(h.tooltip)),
                    padding_left: Some(h.kind == ide::InlayKind::Kernel),
                    padding_right: None,
                    data: None,
                })
                .collect()
        })
        .await
    }

    async fn code_lens(&self, params: CodeLensParams) -> Result<Option<Vec<CodeLens>>> {
        self.query(&params.text_document.uri, |s, db| {
            let Some(plan) = s.plan(db) else { return Vec::new() };
            ide::function_kernels(db, s.file, plan)
                .into_iter()
                .map(|f| CodeLens {
                    range: s.map.range(f.range),
                    command: Some(Command {
                        title: convert::kernel_lens_title(&f),
                        command: "weft.showFusion".into(),
                        arguments: Some(vec![
                            serde_json::json!(s.uri.as_str()),
                            serde_json::json!(f.function),
                        ]),
                    }),
                    data: None,
                })
                .collect()
        })
        .await
    }

    async fn folding_range(&self, params: FoldingRangeParams) -> Result<Option<Vec<FoldingRange>>> {
        self.query(&params.text_document.uri, |s, db| {
            ide::folding_ranges(db, s.file)
                .into_iter()
                .map(|r| {
                    let range = s.map.range(r);
                    FoldingRange {
                        start_line: range.start.line,
                        end_line: range.end.line,
                        kind: Some(FoldingRangeKind::Region),
                        ..Default::default()
                    }
                })
                .collect()
        })
        .await
    }

    async fn selection_range(&self, params: SelectionRangeParams) -> Result<Option<Vec<SelectionRange>>> {
        let positions = params.positions;
        self.query(&params.text_document.uri, move |s, db| {
            positions
                .iter()
                .map(|&p| {
                    let ranges = ide::selection_ranges(db, s.file, s.map.offset(p));
                    let mut selection: Option<SelectionRange> = None;
                    for range in ranges.into_iter().rev() {
                        selection = Some(SelectionRange {
                            range: s.map.range(range),
                            parent: selection.map(Box::new),
                        });
                    }
                    selection.unwrap_or(SelectionRange { range: Range { start: p, end: p }, parent: None })
                })
                .collect()
        })
        .await
    }

    async fn semantic_tokens_full(
        &self,
        params: SemanticTokensParams,
    ) -> Result<Option<SemanticTokensResult>> {
        let tokens = self
            .query(&params.text_document.uri, |s, db| {
                convert::semantic_tokens(&ide::semantic_tokens(db, s.file), &s.map)
            })
            .await?;
        Ok(tokens.map(|data| SemanticTokensResult::Tokens(SemanticTokens { result_id: None, data })))
    }

    async fn formatting(&self, params: DocumentFormattingParams) -> Result<Option<Vec<TextEdit>>> {
        self.query(&params.text_document.uri, |s, db| {
            let text = s.analysis.text(s.file);
            match ide::format::format_file(db, s.file) {
                Ok(formatted) if formatted != text => {
                    let whole = TextRange::up_to(ide::TextSize::of(text));
                    vec![TextEdit { range: s.map.range(whole), new_text: formatted }]
                }
                _ => Vec::new(),
            }
        })
        .await
    }
}

fn completion_item(c: ide::Completion) -> CompletionItem {
    CompletionItem {
        kind: Some(match c.kind {
            ide::CompletionKind::Local => CompletionItemKind::VARIABLE,
            ide::CompletionKind::Variable => CompletionItemKind::VARIABLE,
            ide::CompletionKind::Function | ide::CompletionKind::Prelude => CompletionItemKind::FUNCTION,
            ide::CompletionKind::Keyword => CompletionItemKind::KEYWORD,
        }),
        label: c.label,
        detail: c.detail,
        documentation: c
            .doc
            .map(|d| Documentation::MarkupContent(MarkupContent { kind: MarkupKind::Markdown, value: d })),
        ..Default::default()
    }
}

fn symbol_kind(kind: ide::SymbolKind) -> lsp::SymbolKind {
    match kind {
        ide::SymbolKind::Function => lsp::SymbolKind::FUNCTION,
        ide::SymbolKind::Variable => lsp::SymbolKind::VARIABLE,
    }
}

#[allow(deprecated)]
fn document_symbol(s: &Snapshot, symbol: &ide::Symbol) -> DocumentSymbol {
    DocumentSymbol {
        name: symbol.name.clone(),
        detail: symbol.detail.clone(),
        kind: symbol_kind(symbol.kind),
        tags: None,
        deprecated: None,
        range: s.map.range(symbol.range),
        selection_range: s.map.range(symbol.selection),
        children: Some(symbol.children.iter().map(|c| document_symbol(s, c)).collect()),
    }
}

fn flat_symbols(s: &Snapshot, symbols: Vec<ide::Symbol>, query: &str, out: &mut Vec<WorkspaceSymbol>) {
    for symbol in symbols {
        if symbol.name.to_lowercase().contains(query) {
            out.push(WorkspaceSymbol {
                name: symbol.name.clone(),
                kind: symbol_kind(symbol.kind),
                tags: None,
                container_name: None,
                location: OneOf::Left(location(s, symbol.selection)),
                data: None,
            });
        }
        flat_symbols(s, symbol.children, query, out);
    }
}
