//! Charts drawn with plotters: plots and histograms as SVG; images as SVG while small, as PNG
//! when large. The notebook kernel sends a `Figure` as display data; the REPL and `weft run`
//! write it to a file (`save`).

use std::path::{Path, PathBuf};

use plotters::prelude::*;
use plotters::style::colors::colormaps::ViridisRGB;

use weft_flat::fuse::plan::{FusionPlan, Unfused};

use crate::Chart;

/// The size of a plot or a histogram, in pixels.
const SIZE: (u32, u32) = (640, 400);
/// A line plot keeps at most this many points: the least and greatest of each of
/// `MAX_POINTS / 2` runs of neighbours, which keeps the line's envelope.
const MAX_POINTS: usize = 20_000;
/// Images with at most this many pixels are SVG; larger ones are PNG.
const MAX_SVG_PIXELS: usize = 64 * 64;
/// The longer side of a drawn image, in pixels, as far as whole-pixel scaling allows.
const IMAGE_SIDE: usize = 400;

/// A drawn chart: its bytes and how to name and send them.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// `image/svg+xml` or `image/png`.
    pub mime: &'static str,
    /// `svg` or `png`.
    pub extension: &'static str,
    pub bytes: Vec<u8>,
    /// What it shows (`plot of 100 points`), its plain-text form.
    pub summary: String,
    /// The function that drew it, to name its file.
    pub name: &'static str,
}

/// The chart drawn.
pub fn render(chart: &Chart) -> Figure {
    let (mime, extension, bytes) = match chart {
        Chart::Plot { xs, ys } => svg(|area| draw_plot(area, xs, ys)),
        Chart::Hist { xs, bins } => svg(|area| draw_hist(area, xs, *bins)),
        // `Chart::from_values` makes no such image; one built by hand draws as a blank.
        Chart::Image { width, height, pixels } if *width == 0 || pixels.len() != width * height => {
            svg(|_| {})
        }
        Chart::Image { width, height, pixels } if width * height <= MAX_SVG_PIXELS => {
            let scale = image_scale(*width, *height);
            let size = ((width * scale) as u32, (height * scale) as u32);
            let mut text = String::new();
            {
                let area = SVGBackend::with_string(&mut text, size).into_drawing_area();
                draw_image(&area, *width, pixels, scale);
                // Errors here are plotters' own IO into a string, which cannot fail.
                let _ = area.present();
            }
            ("image/svg+xml", "svg", text.into_bytes())
        }
        Chart::Image { width, height, pixels } => ("image/png", "png", png(*width, *height, pixels)),
    };
    Figure { mime, extension, bytes, summary: chart.summary(), name: chart.name() }
}

/// Where a terminal front end (`weft run`, the REPL) keeps the charts a program draws: files
/// numbered from 1 in one directory.
#[derive(Debug, Clone)]
pub struct FigureFiles {
    directory: PathBuf,
    written: usize,
}

impl FigureFiles {
    /// The directory where `weft run` and the REPL write charts unless told otherwise.
    pub const DEFAULT_DIRECTORY: &str = "weft-figures";

    pub fn new(directory: PathBuf) -> FigureFiles {
        FigureFiles { directory, written: 0 }
    }

    /// Draws `chart` into the next file and gives the line that tells the user where it is
    /// (`plot of 3 points: weft-figures/plot-1.svg`), or why it could not be written.
    pub fn write(&mut self, chart: &Chart) -> Result<String, String> {
        let figure = render(chart);
        self.written += 1;
        match save(&figure, &self.directory, self.written) {
            Ok(path) => Ok(format!("{}: {}", figure.summary, path.display())),
            Err(error) => {
                Err(format!("cannot write the {} in {}: {error}", figure.summary, self.directory.display()))
            }
        }
    }
}

/// Writes `figure` to `directory` as `{name}-{number}.{extension}` (`plot-3.svg`), creating the
/// directory, and gives the file's path.
pub fn save(figure: &Figure, directory: &Path, number: usize) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(directory)?;
    let path = directory.join(format!("{}-{number}.{}", figure.name, figure.extension));
    std::fs::write(&path, &figure.bytes)?;
    Ok(path)
}

/// A fusion plan as a graph: each kernel a box listing its ops (with their source lines), an
/// arrow from a kernel to each later one that reads what it writes, labelled with the buffers,
/// and in red why neighbouring ops were kept apart. The notebook's `%fusion` shows it.
pub fn fusion_graph(plan: &FusionPlan) -> String {
    const WIDTH: i32 = 520;
    const LEFT: i32 = 20;
    const LINE: i32 = 18;
    const GAP: i32 = 56;
    // Lanes beyond this many reuse the first ones, so that the graph keeps its width.
    const MAX_LANES: i32 = 24;
    let heights: Vec<i32> = plan.kernels.iter().map(|k| LINE * (k.ops.len() as i32 + 2) + 12).collect();
    let mut tops = Vec::with_capacity(heights.len());
    let mut y = 44;
    for height in &heights {
        tops.push(y);
        y += height + GAP;
    }
    let apart: Vec<&Unfused> = plan.unfused.iter().collect();
    let size = (WIDTH as u32 + 420, (y + LINE * apart.len() as i32 + 20).max(60) as u32);
    let mut text = String::new();
    {
        let area = SVGBackend::with_string(&mut text, size).into_drawing_area();
        let _ = area.fill(&WHITE);
        let font = |size: i32, colour: &'static RGBColor| {
            TextStyle::from(("monospace", size).into_font()).color(colour)
        };
        let fused = plan.kernels.iter().filter(|k| k.ops.len() > 1).count();
        let title =
            format!("fusion plan: {} kernels, {fused} fused, strategy {}", plan.kernels.len(), plan.strategy);
        let _ = area.draw(&Text::new(title, (LEFT, 14), font(14, &BLACK)));
        let index_of = |name: &str| plan.kernels.iter().position(|k| k.name == name);
        // Each arrow that skips kernels runs down a lane of its own, right of the boxes.
        let mut lanes = 0;
        for (i, kernel) in plan.kernels.iter().enumerate() {
            let (top, bottom) = (tops[i], tops[i] + heights[i]);
            let fill = if kernel.ops.len() > 1 { RGBColor(225, 238, 255) } else { RGBColor(242, 242, 242) };
            let _ = area.draw(&Rectangle::new([(LEFT, top), (LEFT + WIDTH, bottom)], fill.filled()));
            let _ = area.draw(&Rectangle::new([(LEFT, top), (LEFT + WIDTH, bottom)], BLACK.stroke_width(1)));
            let title = format!("{} [{}] in {}", kernel.name, kernel.pattern, kernel.function);
            let _ = area.draw(&Text::new(title, (LEFT + 8, top + 6), font(14, &BLACK)));
            for (k, op) in kernel.ops.iter().enumerate() {
                let line = format!("{:>4}:{:<3} {}", op.line, op.col, op.op);
                let _ = area.draw(&Text::new(
                    line,
                    (LEFT + 16, top + 8 + LINE * (k as i32 + 1)),
                    font(13, &BLACK),
                ));
            }
            let launch = format!("{}, {} buffers", kernel.launch, kernel.bindings);
            let at = (LEFT + 16, top + 8 + LINE * (kernel.ops.len() as i32 + 1));
            let _ = area.draw(&Text::new(launch, at, font(11, &GREY)));
            // Arrows to the later kernels that read what this one writes.
            let mut skipping = 0;
            for (j, reader) in plan.kernels.iter().enumerate().skip(i + 1) {
                let buffers: Vec<&str> = reader
                    .inputs
                    .iter()
                    .filter(|b| kernel.outputs.iter().any(|o| o.var == b.var))
                    .map(|b| b.name.as_str())
                    .collect();
                if buffers.is_empty() {
                    continue;
                }
                let label = buffers.join(", ");
                let path = if j == i + 1 {
                    let x = LEFT + WIDTH / 2;
                    let _ = area.draw(&Text::new(label, (x + 8, bottom + GAP / 2 - 14), font(12, &BLUE)));
                    vec![(x, bottom), (x, tops[j])]
                } else {
                    lanes += 1;
                    skipping += 1;
                    let x = LEFT + WIDTH + 12 * (lanes % MAX_LANES + 1);
                    let _ =
                        area.draw(&Text::new(label, (x + 3, bottom - 6 + 13 * skipping), font(11, &BLUE)));
                    vec![
                        (LEFT + WIDTH, bottom - 8),
                        (x, bottom - 8),
                        (x, tops[j] + 8),
                        (LEFT + WIDTH, tops[j] + 8),
                    ]
                };
                let (tip, from) = (path[path.len() - 1], path[path.len() - 2]);
                let _ = area.draw(&PathElement::new(path, BLUE.stroke_width(1)));
                let _ = area.draw(&Polygon::new(arrow_head(from, tip), BLUE.filled()));
            }
        }
        // Why neighbouring ops stayed apart: beside the gap between their kernels when they
        // are next to each other, else in the list below.
        let mut below = 0;
        for reason in apart {
            let line = format!("kept apart [{}]: {} -> {}", reason.constraint, reason.from.op, reason.to.op);
            let at = match (index_of(&reason.from_kernel), index_of(&reason.to_kernel)) {
                (Some(i), Some(j)) if j == i + 1 => {
                    (LEFT + WIDTH / 2 + 8, tops[i] + heights[i] + GAP / 2 + 2)
                }
                _ => {
                    below += 1;
                    (LEFT, y + LINE * (below - 1))
                }
            };
            let _ = area.draw(&Text::new(line, at, font(12, &RED)));
        }
        let _ = area.present();
    }
    text
}

/// The colour of a kernel's launch line.
const GREY: RGBColor = RGBColor(90, 90, 90);

/// The triangle at the end of an arrow from `from` to `tip`.
fn arrow_head(from: (i32, i32), tip: (i32, i32)) -> Vec<(i32, i32)> {
    let (dx, dy) = ((tip.0 - from.0) as f64, (tip.1 - from.1) as f64);
    let length = (dx * dx + dy * dy).sqrt().max(1.0);
    let (ux, uy) = (dx / length, dy / length);
    let back = (tip.0 as f64 - 8.0 * ux, tip.1 as f64 - 8.0 * uy);
    let side = (-uy * 4.0, ux * 4.0);
    vec![
        tip,
        ((back.0 + side.0) as i32, (back.1 + side.1) as i32),
        ((back.0 - side.0) as i32, (back.1 - side.1) as i32),
    ]
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

fn svg(draw: impl FnOnce(&Area<'_>)) -> (&'static str, &'static str, Vec<u8>) {
    let mut text = String::new();
    {
        let area = SVGBackend::with_string(&mut text, SIZE).into_drawing_area();
        let _ = area.fill(&WHITE);
        draw(&area);
        let _ = area.present();
    }
    ("image/svg+xml", "svg", text.into_bytes())
}

/// The finite values' least and greatest, widened when they are equal so that an axis has a
/// length; `(0, 1)` when there are none.
fn bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    // An axis needs a length that is finite (values beyond ±f64::MAX / 4 are drawn at its
    // ends) and that f64 can tell from its ends (±0.5, or a millionth of the magnitude).
    let (lo, hi) = (lo.max(-f64::MAX / 4.0), hi.min(f64::MAX / 4.0));
    let pad = (lo.abs().max(hi.abs()) * 1e-6).max(0.5);
    if hi - lo < pad { (lo - pad, hi + pad) } else { (lo, hi) }
}

fn draw_plot(area: &Area<'_>, xs: &[f64], ys: &[f64]) {
    let points: Vec<(f64, f64)> =
        xs.iter().zip(ys).map(|(&x, &y)| (x, y)).filter(|(x, y)| x.is_finite() && y.is_finite()).collect();
    let points = thin(points);
    let (x0, x1) = bounds(points.iter().map(|p| p.0));
    let (y0, y1) = bounds(points.iter().map(|p| p.1));
    let Ok(mut chart) = ChartBuilder::on(area)
        .margin(16)
        .x_label_area_size(32)
        .y_label_area_size(56)
        .build_cartesian_2d(x0..x1, y0..y1)
    else {
        return;
    };
    let _ = chart.configure_mesh().light_line_style(WHITE).draw();
    let _ = chart.draw_series(LineSeries::new(points, BLUE.stroke_width(2)));
}

/// At most `MAX_POINTS` of `points`: of each run of neighbours, the one with the least and the
/// one with the greatest y, in the order the points came.
fn thin(points: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    if points.len() <= MAX_POINTS {
        return points;
    }
    let run = points.len().div_ceil(MAX_POINTS / 2);
    let mut kept = Vec::with_capacity(MAX_POINTS);
    for chunk in points.chunks(run) {
        let by_y = |a: &(usize, &(f64, f64)), b: &(usize, &(f64, f64))| a.1.1.total_cmp(&b.1.1);
        let (Some(lo), Some(hi)) =
            (chunk.iter().enumerate().min_by(by_y), chunk.iter().enumerate().max_by(by_y))
        else {
            continue;
        };
        let (first, second) = if lo.0 <= hi.0 { (lo.1, hi.1) } else { (hi.1, lo.1) };
        kept.push(*first);
        kept.push(*second);
    }
    kept
}

fn draw_hist(area: &Area<'_>, xs: &[f64], bins: usize) {
    let bins = bins.max(1);
    let (lo, hi) = bounds(xs.iter().copied());
    let width = (hi - lo) / bins as f64;
    let mut counts = vec![0u64; bins];
    for &x in xs.iter().filter(|x| x.is_finite()) {
        // The greatest value falls in the last bin, as numpy's histogram puts it.
        let bin = (((x - lo) / width) as usize).min(bins - 1);
        counts[bin] += 1;
    }
    let top = counts.iter().copied().max().unwrap_or(0).max(1) as f64 * 1.05;
    let Ok(mut chart) = ChartBuilder::on(area)
        .margin(16)
        .x_label_area_size(32)
        .y_label_area_size(56)
        .build_cartesian_2d(lo..hi, 0.0..top)
    else {
        return;
    };
    let _ = chart.configure_mesh().light_line_style(WHITE).y_desc("count").draw();
    let bars = counts.iter().enumerate().map(|(i, &count)| {
        let left = lo + width * i as f64;
        Rectangle::new([(left, 0.0), (left + width, count as f64)], BLUE.mix(0.7).filled())
    });
    let _ = chart.draw_series(bars);
    // White edges keep neighbouring bars of one height apart.
    let edges = counts.iter().enumerate().map(|(i, &count)| {
        let left = lo + width * i as f64;
        Rectangle::new([(left, 0.0), (left + width, count as f64)], WHITE.stroke_width(1))
    });
    let _ = chart.draw_series(edges);
}

/// How many screen pixels each image pixel takes: enough that the longer side is near
/// `IMAGE_SIDE`, at least 1.
fn image_scale(width: usize, height: usize) -> usize {
    (IMAGE_SIDE / width.max(height)).max(1)
}

/// The colour of each value: viridis from the least finite value (dark) to the greatest
/// (bright); a value that is not finite is grey.
fn colours(pixels: &[f64]) -> impl Iterator<Item = RGBColor> + '_ {
    let (lo, hi) = bounds(pixels.iter().copied());
    pixels.iter().map(move |&v| {
        if v.is_finite() {
            ViridisRGB::get_color(((v - lo) / (hi - lo)).clamp(0.0, 1.0))
        } else {
            RGBColor(128, 128, 128)
        }
    })
}

fn draw_image<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    width: usize,
    pixels: &[f64],
    scale: usize,
) {
    for (i, colour) in colours(pixels).enumerate() {
        let (x, y) = ((i % width * scale) as i32, (i / width * scale) as i32);
        let corner = (x + scale as i32, y + scale as i32);
        let _ = area.draw(&Rectangle::new([(x, y), corner], colour.filled()));
    }
}

/// A large image as PNG: drawn with plotters into an RGB buffer at its own resolution scaled
/// by whole pixels, and encoded with the `png` crate.
fn png(width: usize, height: usize, pixels: &[f64]) -> Vec<u8> {
    let scale = image_scale(width, height);
    let (w, h) = ((width * scale) as u32, (height * scale) as u32);
    let mut buffer = vec![0u8; w as usize * h as usize * 3];
    {
        let area = BitMapBackend::with_buffer(&mut buffer, (w, h)).into_drawing_area();
        if scale == 1 {
            let backend_pixels = colours(pixels).enumerate();
            for (i, colour) in backend_pixels {
                let _ = area.draw_pixel(((i % width) as i32, (i / width) as i32), &colour);
            }
        } else {
            draw_image(&area, width, pixels, scale);
        }
        let _ = area.present();
    }
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut bytes, w, h);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    // Encoding into memory fails only on a size the buffer does not have, which it has.
    if let Ok(mut writer) = encoder.write_header() {
        let _ = writer.write_image_data(&buffer);
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plots_and_histograms_are_svg_with_their_data_drawn() {
        let plot = render(&Chart::Plot { xs: vec![0.0, 1.0, 2.0], ys: vec![0.0, 1.0, 4.0] });
        assert_eq!((plot.mime, plot.extension, plot.name), ("image/svg+xml", "svg", "plot"));
        let text = String::from_utf8(plot.bytes).unwrap();
        assert!(text.starts_with("<svg") && text.contains("<polyline"), "{text}");

        let hist = render(&Chart::Hist { xs: vec![1.0, 2.0, 2.0, 3.0], bins: 3 });
        let text = String::from_utf8(hist.bytes).unwrap();
        // Three bars.
        let bars = text.matches("opacity=\"0.7\" fill=\"#0000FF\"").count();
        assert_eq!(bars, 3, "{text}");
        assert_eq!(hist.summary, "histogram of 4 values in 3 bins");
    }

    #[test]
    fn small_images_are_svg_and_large_ones_png() {
        let small = render(&Chart::Image { width: 2, height: 2, pixels: vec![0.0, 1.0, 2.0, 3.0] });
        assert_eq!(small.mime, "image/svg+xml");
        let text = String::from_utf8(small.bytes).unwrap();
        assert_eq!(text.matches("<rect").count(), 4, "{text}");

        let side = 100;
        let pixels: Vec<f64> = (0..side * side).map(|i| i as f64).collect();
        let large = render(&Chart::Image { width: side, height: side, pixels });
        assert_eq!(large.mime, "image/png");
        assert!(large.bytes.starts_with(b"\x89PNG\r\n\x1a\n"));
    }

    #[test]
    fn extreme_values_draw_without_a_panic() {
        for values in [vec![1.0e17], vec![-1.0e308, 1.0e308], vec![f64::NAN, f64::INFINITY], vec![]] {
            let n = values.len();
            render(&Chart::Plot { xs: values.clone(), ys: values.clone() });
            render(&Chart::Hist { xs: values.clone(), bins: 3 });
            if n > 0 {
                render(&Chart::Image { width: n, height: 1, pixels: values });
            }
        }
    }

    #[test]
    fn long_plots_keep_their_envelope() {
        let n = 100_000;
        let points: Vec<(f64, f64)> =
            (0..n).map(|i| (i as f64, if i == 77_777 { 1e6 } else { 0.0 })).collect();
        let kept = thin(points);
        assert!(kept.len() <= MAX_POINTS);
        assert!(kept.contains(&(77_777.0, 1e6)), "the spike survives thinning");
        assert!(kept.windows(2).all(|w| w[0].0 <= w[1].0), "points stay in order");
    }

    #[test]
    fn saved_figures_are_named_by_function_and_number() {
        let dir = std::env::temp_dir().join(format!("weft-figure-test-{}", std::process::id()));
        let figure = render(&Chart::Plot { xs: vec![0.0], ys: vec![1.0] });
        let path = save(&figure, &dir, 3).unwrap();
        assert_eq!(path, dir.join("plot-3.svg"));
        assert_eq!(std::fs::read(&path).unwrap(), figure.bytes);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
