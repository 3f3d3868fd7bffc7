//! The engine's answers as Jupyter content: a result's mime bundle, a diagnostic's traceback.

use jupyter_protocol::{Media, MediaType};
use base64::Engine as _;
use weft_session::figure::Figure;
use weft_syntax::Diagnostic;

/// A result: `text/plain` is the value's text alone, as IPython's repr is (`42`); `text/html`
/// shows it with its type and shape.
pub fn value(text: &str, ty: &str, shape: Option<&str>) -> Media {
    let caption = match shape {
        Some(shape) => format!("{} · shape {}", escape(ty), escape(shape)),
        None => escape(ty),
    };
    let html = format!(
        "<div class=\"weft-value\"><pre style=\"margin:0\">{}</pre>\
         <div style=\"opacity:0.7;font-size:smaller\">{caption}</div></div>",
        escape(text)
    );
    Media::new(vec![MediaType::Plain(text.to_string()), MediaType::Html(html)])
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
