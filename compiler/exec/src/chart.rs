//! What a chart statement (`plot`, `hist`, `image`) hands the host: its values as `f64`,
//! checked here so that every executor stops with the same code on the same bad input. The
//! executors compute nothing for a chart; drawing it is the front end's business
//! (`weft_session::figure`).

use weft_core::Sink;
use weft_syntax::diagnostics::Code;

use crate::interp::NestedValue;

/// The most bins `hist` draws.
pub const MAX_BINS: i64 = 1000;

/// A chart's data.
#[derive(Debug, Clone, PartialEq)]
pub enum Chart {
    /// `plot(xs, ys)`: the points `(xs[i], ys[i])` joined by a line.
    Plot { xs: Vec<f64>, ys: Vec<f64> },
    /// `hist(xs, bins)`: `xs` counted in `bins` equal bins.
    Hist { xs: Vec<f64>, bins: usize },
    /// `image(xss)`: `height` rows of `width` values, row after row.
    Image { width: usize, height: usize, pixels: Vec<f64> },
}

impl Chart {
    /// The chart `sink` draws of its arguments (already type-checked), or the error that stops
    /// the run: the code and the message.
    pub fn from_values(sink: Sink, args: &[NestedValue]) -> Result<Chart, (Code, String)> {
        let wrong =
            || (Code::InternalError, format!("internal error: `{}` got ill-typed arguments", sink.name()));
        match (sink, args) {
            (Sink::Plot, [xs, ys]) => {
                let (xs, ys) = (numbers(xs).ok_or_else(wrong)?, numbers(ys).ok_or_else(wrong)?);
                if xs.len() != ys.len() {
                    let why = format!(
                        "`plot` needs as many y values as x values, but there are {} and {}",
                        xs.len(),
                        ys.len()
                    );
                    return Err((Code::LengthMismatch, why));
                }
                Ok(Chart::Plot { xs, ys })
            }
            (Sink::Hist, [xs, bins]) => {
                let xs = numbers(xs).ok_or_else(wrong)?;
                let bins = bins.as_int().ok_or_else(wrong)?;
                if !(1..=MAX_BINS).contains(&bins) {
                    let why = format!("`hist` draws 1 to {MAX_BINS} bins, not {bins}");
                    return Err((Code::InvalidArgument, why));
                }
                Ok(Chart::Hist { xs, bins: bins as usize })
            }
            (Sink::Image, [rows]) => {
                let rows = rows.as_seq().ok_or_else(wrong)?;
                let rows =
                    rows.iter().map(|row| numbers(&row).ok_or_else(wrong)).collect::<Result<Vec<_>, _>>()?;
                let width = rows.first().map_or(0, Vec::len);
                if width == 0 {
                    return Err((
                        Code::EmptySequence,
                        "`image` needs at least one row and one column".into(),
                    ));
                }
                if let Some((i, row)) = rows.iter().enumerate().find(|(_, row)| row.len() != width) {
                    let why = format!(
                        "`image` needs rows of equal length, but row 0 has {width} value{} and row {i} has {}",
                        plural(width),
                        row.len()
                    );
                    return Err((Code::LengthMismatch, why));
                }
                Ok(Chart::Image { width, height: rows.len(), pixels: rows.concat() })
            }
            _ => Err(wrong()),
        }
    }

    /// The prelude function that drew it.
    pub fn name(&self) -> &'static str {
        match self {
            Chart::Plot { .. } => "plot",
            Chart::Hist { .. } => "hist",
            Chart::Image { .. } => "image",
        }
    }

    /// What it shows, in a few words: `plot of 100 points`, `image of 64 × 48 pixels`.
    pub fn summary(&self) -> String {
        match self {
            Chart::Plot { xs, .. } => format!("plot of {} point{}", xs.len(), plural(xs.len())),
            Chart::Hist { xs, bins } => {
                format!("histogram of {} value{} in {bins} bin{}", xs.len(), plural(xs.len()), plural(*bins))
            }
            Chart::Image { width, height, .. } => format!("image of {width} × {height} pixels"),
        }
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// A sequence of numbers as `f64`s (exactly: every Weft number but a large `i64` is one).
fn numbers(value: &NestedValue) -> Option<Vec<f64>> {
    value
        .as_seq()?
        .iter()
        .map(|item| match item {
            NestedValue::I32(x) => Some(f64::from(x)),
            NestedValue::I64(x) => Some(x as f64),
            NestedValue::F32(x) => Some(f64::from(x)),
            NestedValue::F64(x) => Some(x),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interp::Seq;

    fn seq(items: &[f64]) -> NestedValue {
        NestedValue::Seq(Seq::f64s(items.to_vec()))
    }

    #[test]
    fn charts_take_numbers_of_any_type_and_check_their_shape() {
        let ints = NestedValue::Seq(Seq::i32s(vec![1, 2]));
        let chart = Chart::from_values(Sink::Plot, &[ints, seq(&[0.5, 1.5])]).unwrap();
        assert_eq!(chart, Chart::Plot { xs: vec![1.0, 2.0], ys: vec![0.5, 1.5] });
        assert_eq!(chart.summary(), "plot of 2 points");

        let (code, why) = Chart::from_values(Sink::Plot, &[seq(&[1.0]), seq(&[])]).unwrap_err();
        assert_eq!(
            (code, why.as_str()),
            (Code::LengthMismatch, "`plot` needs as many y values as x values, but there are 1 and 0")
        );

        let (code, _) = Chart::from_values(Sink::Hist, &[seq(&[1.0]), NestedValue::I32(0)]).unwrap_err();
        assert_eq!(code, Code::InvalidArgument);

        let rows = |rows: Vec<NestedValue>| NestedValue::Seq(Seq::from_values(rows));
        let image =
            Chart::from_values(Sink::Image, &[rows(vec![seq(&[1.0, 2.0]), seq(&[3.0, 4.0])])]).unwrap();
        assert_eq!(image, Chart::Image { width: 2, height: 2, pixels: vec![1.0, 2.0, 3.0, 4.0] });
        let (code, why) =
            Chart::from_values(Sink::Image, &[rows(vec![seq(&[1.0, 2.0]), seq(&[3.0])])]).unwrap_err();
        assert_eq!(
            (code, why.as_str()),
            (
                Code::LengthMismatch,
                "`image` needs rows of equal length, but row 0 has 2 values and row 1 has 1"
            )
        );
        let (code, _) = Chart::from_values(Sink::Image, &[rows(vec![])]).unwrap_err();
        assert_eq!(code, Code::EmptySequence);
    }
}
