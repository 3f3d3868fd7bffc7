//! The engine's answers as Jupyter content: a result's mime bundle, a diagnostic's traceback.

use base64::Engine as _;
use jupyter_protocol::{DisplayData, JupyterMessageContent, Media, MediaType, StreamContent};
use std::fmt::Write as _;

use weft_session::Table;
use weft_session::engine::command::Answer;
use weft_session::figure::{self, Figure};
use weft_syntax::Diagnostic;

/// A result: `text/plain` is the value's text alone, as IPython's repr is (`42`); `text/html`
/// shows a sequence as a table, anything else as its text, captioned with the type and shape.
pub fn value(text: &str, ty: &str, shape: Option<&str>, table: Option<&Table>) -> Media {
    let caption = match shape {
        Some(shape) => format!("{} · shape {}", escape(ty), escape(shape)),
        None => escape(ty),
    };
    let html = match table {
        Some(table) => table_html(table, &caption),
        None => format!(
            "<div class=\"weft-value\"><pre style=\"margin:0\">{}</pre>\
             <div style=\"opacity:0.7;font-size:smaller\">{caption}</div></div>",
            escape(text)
        ),
    };
    Media::new(vec![MediaType::Plain(text.to_string()), MediaType::Html(html)])
}

/// A table with a caption, an index column, and a row of `…` where elements are left out.
fn table_html(table: &Table, caption: &str) -> String {
    let mut html = format!(
        "<table class=\"weft-value\"><caption style=\"caption-side:bottom;opacity:0.7;font-size:smaller\">{caption}</caption>"
    );
    if !table.columns.is_empty() {
        html.push_str("<thead><tr><th></th>");
        for column in &table.columns {
            let _ = write!(html, "<th>{}</th>", escape(column));
        }
        html.push_str("</tr></thead>");
    }
    html.push_str("<tbody>");
    let width = table.rows.iter().flatten().map(|(_, cells)| cells.len()).max().unwrap_or(0).max(1);
    for row in &table.rows {
        match row {
            Some((index, cells)) => {
                let _ = write!(html, "<tr><th>{index}</th>");
                for cell in cells {
                    let _ = write!(html, "<td style=\"text-align:right\"><code>{}</code></td>", escape(cell));
                }
                html.push_str("</tr>");
            }
            None => {
                let _ = write!(html, "<tr><th>…</th><td colspan=\"{width}\">…</td></tr>");
            }
        }
    }
    html.push_str("</tbody></table>");
    html
}

/// What a command (a magic) shows besides its events: text as a stream; the fusion plan as a
/// graph; kernels highlighted.
pub fn answer(answer: Answer) -> Option<JupyterMessageContent> {
    let display = |media: Vec<MediaType>| Some(DisplayData::new(Media::new(media)).into());
    match answer {
        Answer::Done | Answer::Quit => None,
        Answer::Text(text) | Answer::Ir(text) => Some(StreamContent::stdout(&text).into()),
        Answer::Fusion { text, plan } => {
            display(vec![MediaType::Svg(figure::fusion_graph(&plan)), MediaType::Plain(text)])
        }
        Answer::Wgsl(text) => display(vec![MediaType::Html(highlighted_wgsl(&text)), MediaType::Plain(text)]),
    }
}

/// WGSL as HTML, highlighted by syntect with bat's WGSL grammar (from two-face).
fn highlighted_wgsl(text: &str) -> String {
    use two_face::re_exports::syntect;
    static SYNTAXES: std::sync::LazyLock<syntect::parsing::SyntaxSet> =
        std::sync::LazyLock::new(two_face::syntax::extra_newlines);
    static THEMES: std::sync::LazyLock<two_face::theme::EmbeddedLazyThemeSet> =
        std::sync::LazyLock::new(two_face::theme::extra);
    let theme = THEMES.get(two_face::theme::EmbeddedThemeName::InspiredGithub);
    let highlighted = SYNTAXES
        .find_syntax_by_extension("wgsl")
        .and_then(|wgsl| syntect::html::highlighted_html_for_string(text, &SYNTAXES, wgsl, theme).ok());
    highlighted.unwrap_or_else(|| format!("<pre>{}</pre>", escape(text)))
}

/// A chart: the drawing (SVG text, or PNG in base64) and its summary as `text/plain`.
pub fn figure(figure: &Figure) -> Media {
    let drawing = match figure.mime {
        "image/png" => MediaType::Png(base64::engine::general_purpose::STANDARD.encode(&figure.bytes)),
        _ => MediaType::Svg(String::from_utf8_lossy(&figure.bytes).into_owned()),
    };
    Media::new(vec![MediaType::Plain(format!("<{}>", figure.summary)), drawing])
}

/// A diagnostic as a traceback: its ariadne rendering, in ANSI colour, one entry per line.
pub fn traceback(diagnostic: &Diagnostic, source: &str, text: &str) -> Vec<String> {
    let rendered =
        weft_syntax::diagnostics::render_text(std::slice::from_ref(diagnostic), source, text, true);
    rendered.lines().map(str::to_string).collect()
}

/// A diagnostic that does not stop the cell (a warning), rendered for the stderr stream.
pub fn warning(diagnostic: &Diagnostic, source: &str, text: &str) -> String {
    weft_syntax::diagnostics::render_text(std::slice::from_ref(diagnostic), source, text, true)
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}
