//! Completion (locals, top-level names, the prelude, keywords) and signature help.

use rowan::{TextRange, TextSize};

use super::Owner;
use weft_analysis::db::{Db, SourceFile};
use weft_analysis::infer::{function_scheme, top_level_types};
use weft_analysis::items::{file_functions, function_signature};
use weft_analysis::parsed::parsed_file;
use weft_analysis::prelude::{PRELUDE_DOCS, prelude_doc};
use weft_syntax::SyntaxKind::*;
use weft_syntax::SyntaxNode;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompletionKind {
    Local,
    Function,
    Variable,
    Prelude,
    Keyword,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    pub label: String,
    pub kind: CompletionKind,
    /// The type or signature.
    pub detail: Option<String>,
    pub doc: Option<String>,
}

const KEYWORDS: &[&str] = &[
    "def", "return", "if", "elif", "else", "for", "in", "while", "lambda", "and", "or", "not", "True",
    "False", "assert",
];

/// What may be written at `offset`: every name in scope there whose start matches the word
/// being typed, locals first.
pub fn completions(db: &dyn Db, file: SourceFile, offset: TextSize) -> Vec<Completion> {
    let text = file.text(db);
    let mut at = usize::from(offset).min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let prefix_start = text[..at]
        .char_indices()
        .rev()
        .take_while(|(_, c)| *c == '_' || c.is_alphanumeric())
        .last()
        .map_or(at, |(i, _)| i);
    let prefix = &text[prefix_start..at];
    let mut out: Vec<Completion> = Vec::new();
    let mut push = |c: Completion| {
        if c.label.starts_with(prefix) && !out.iter().any(|o| o.label == c.label) {
            out.push(c);
        }
    };
    let owner = Owner::at(db, file, offset);
    let base = owner.base(db);
    let body = owner.hir(db, file);
    let types = owner.types(db, file);
    let root = parsed_file(db, file).syntax();
    for (id, local) in body.locals.iter().enumerate() {
        if !visible_at(&root, local.range + base, offset, owner == Owner::TopLevel) {
            continue;
        }
        let kind = if owner == Owner::TopLevel { CompletionKind::Variable } else { CompletionKind::Local };
        let detail = match types.scheme_of(id as u32) {
            Some(scheme) => Some(scheme.to_string()),
            None => types.local_types.get(id).map(ToString::to_string),
        };
        push(Completion { label: local.name.clone(), kind, detail, doc: None });
    }
    for &f in file_functions(db, file) {
        let detail = Some(function_scheme(db, f).to_string());
        push(Completion { label: f.name(db).clone(), kind: CompletionKind::Function, detail, doc: None });
    }
    if owner != Owner::TopLevel {
        let top = weft_analysis::hir::top_level_hir(db, file);
        let top_types = &top_level_types(db, file).main;
        for (id, local) in top.locals.iter().enumerate() {
            let detail = top_types.local_types.get(id).map(ToString::to_string);
            push(Completion { label: local.name.clone(), kind: CompletionKind::Variable, detail, doc: None });
        }
    }
    for doc in PRELUDE_DOCS {
        push(Completion {
            label: doc.name.to_string(),
            kind: CompletionKind::Prelude,
            detail: Some(doc.signature.to_string()),
            doc: Some(doc.doc.to_string()),
        });
    }
    for keyword in KEYWORDS {
        push(Completion {
            label: keyword.to_string(),
            kind: CompletionKind::Keyword,
            detail: None,
            doc: None,
        });
    }
    out
}

/// Whether a local first bound at `binding` is offered at `offset`: only inside the innermost
/// lambda, comprehension or `def` around the binding (a nested `def`'s own name belongs to the
/// scope around it). A comprehension's or lambda's variables are offered anywhere inside it (the
/// element comes before its `for`); a function's locals from their first binding on; the top
/// level's anywhere, as functions see them.
fn visible_at(root: &SyntaxNode, binding: TextRange, offset: TextSize, top_level: bool) -> bool {
    let Some(token) = root.token_at_offset(binding.start()).right_biased() else { return true };
    let is_def_name = |node: &SyntaxNode| {
        node.kind() == FUNCTION_DEF && node.children().any(|c| c.kind() == NAME && c.text_range() == binding)
    };
    let scope = token.parent_ancestors().find(|n| {
        matches!(n.kind(), LAMBDA_EXPR | LIST_COMP | GENERATOR_EXP | SET_COMP | DICT_COMP | FUNCTION_DEF)
            && !is_def_name(n)
    });
    match scope {
        Some(scope) if scope.kind() != FUNCTION_DEF => scope.text_range().contains_inclusive(offset),
        Some(def) => def.text_range().contains_inclusive(offset) && (top_level || binding.start() <= offset),
        None => true,
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureHelp {
    /// `name(a: t, b: u) -> r`.
    pub label: String,
    /// Each parameter's text within `label`.
    pub params: Vec<String>,
    pub active_param: u32,
    pub doc: Option<String>,
}

/// The signature of the call whose argument list holds `offset`, and which argument is being
/// written.
pub fn signature_help(db: &dyn Db, file: SourceFile, offset: TextSize) -> Option<SignatureHelp> {
    let root = parsed_file(db, file).syntax();
    let offset = offset.min(root.text_range().end());
    // The last token before `offset` that is not trivia: an unclosed argument list ends there.
    let mut token = root.token_at_offset(offset).left_biased()?;
    while token.kind().is_trivia() || token.kind() == NEWLINE {
        token = token.prev_token()?;
    }
    let args = token
        .parent_ancestors()
        .find(|n| n.kind() == ARG_LIST && n.text_range().start() < offset && open_at(n, offset))?;
    let call = args.parent().filter(|p| p.kind() == CALL_EXPR)?;
    let callee = call.first_child().filter(|c| c.kind() == NAME_REF)?;
    let name = weft_syntax::identifier_key(&callee.text().to_string());
    let active_param =
        args.children_with_tokens().filter(|t| t.kind() == COMMA && t.text_range().end() <= offset).count()
            as u32;
    if let Some(doc) = prelude_doc(&name) {
        let label = doc.signature.split(" | ").next().unwrap_or(doc.signature).to_string();
        return Some(SignatureHelp {
            params: params_of(&label),
            label,
            active_param,
            doc: Some(doc.doc.into()),
        });
    }
    let f = file_functions(db, file).iter().rev().find(|f| *f.name(db) == name)?;
    let signature = function_signature(db, *f);
    let names: Vec<&str> = signature.params.iter().map(|p| p.name.as_str()).collect();
    let label = format!("{name}({}): {}", names.join(", "), function_scheme(db, *f));
    let params = names.iter().map(|n| n.to_string()).collect();
    Some(SignatureHelp { label, params, active_param, doc: None })
}

/// Whether `offset` is inside the parentheses of `args` (the closing one may be missing).
fn open_at(args: &weft_syntax::SyntaxNode, offset: TextSize) -> bool {
    let closing = args.last_token().filter(|t| t.kind() == R_PAREN);
    closing.is_none_or(|t| offset <= t.text_range().start())
}

/// The parameters of `name(a: t, b: (u, v)) -> r`: the text between the outer parentheses,
/// split at commas outside brackets.
fn params_of(label: &str) -> Vec<String> {
    let Some(open) = label.find('(') else { return Vec::new() };
    let mut depth = 0;
    let mut params = Vec::new();
    let mut current = String::new();
    for c in label[open + 1..].chars() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' if depth == 0 => break,
            ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                params.push(current.trim().to_string());
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    if !current.trim().is_empty() {
        params.push(current.trim().to_string());
    }
    params
}
