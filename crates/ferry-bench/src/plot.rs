//! Line charts, heat maps and grouped bar charts ([`bars_svg`], the one for every benchmark)
//! as SVG (plotters' SVG backend: text is written as `<text>` elements, so no font library is
//! needed to draw).

use std::path::Path;

use plotters::prelude::*;

/// One line: a name for the legend and its points, in x order.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend entry.
    pub name: String,
    /// `(x, y)` points; non-positive values are dropped (the axes are logarithmic).
    pub points: Vec<(f64, f64)>,
}

/// How the x axis of a panel is labelled (it is logarithmic, base 2, either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XAxis {
    /// Byte counts: `16 B`, `4 KiB`.
    Bytes,
    /// Plain counts: `1`, `32`, `128`.
    Count,
}

/// One chart of the figure.
#[derive(Debug, Clone)]
pub struct Panel {
    /// Caption above the chart.
    pub title: String,
    /// Label of the x axis.
    pub x_label: String,
    /// What the x values are.
    pub x_axis: XAxis,
    /// Label of the y axis.
    pub y_label: String,
    /// Lines, drawn in the same colour by index in every panel.
    pub series: Vec<Series>,
}

/// Width of one panel, its legend strip included.
const PANEL_WIDTH: u32 = 660;
/// Width of the legend strip on a panel's right.
const LEGEND_WIDTH: u32 = 130;

/// The series of `items`: one per `name`, in the order the names first appear, each item's
/// point `xy`, every series sorted by x.
pub fn series<T>(
    items: impl IntoIterator<Item = T>,
    name: impl Fn(&T) -> String,
    xy: impl Fn(&T) -> (f64, f64),
) -> Vec<Series> {
    let mut out: Vec<Series> = Vec::new();
    for item in items {
        let (name, point) = (name(&item), xy(&item));
        match out.iter_mut().find(|s| s.name == name) {
            Some(s) => s.points.push(point),
            None => out.push(Series {
                name,
                points: vec![point],
            }),
        }
    }
    for s in &mut out {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

/// Formats a byte count for an axis: `16 B`, `4 KiB`, `64 KiB`.
pub fn bytes_label(bytes: f64) -> String {
    let b = bytes.round() as u64;
    if b >= 1 << 20 && b % (1 << 20) == 0 {
        format!("{} MiB", b >> 20)
    } else if b >= 1 << 10 && b % (1 << 10) == 0 {
        format!("{} KiB", b >> 10)
    } else {
        format!("{b} B")
    }
}

/// Draws `panels` in a grid of `columns` columns, all with a logarithmic x axis (base 2) and
/// logarithmic y axes, and writes the SVG to `path`.
pub fn log_log_svg(
    path: &Path,
    title: &str,
    columns: usize,
    panels: &[Panel],
) -> Result<(), crate::BoxError> {
    let columns = columns.max(1);
    let rows = panels.len().div_ceil(columns).max(1);
    let root = SVGBackend::new(path, (PANEL_WIDTH * columns as u32, 420 * rows as u32)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(title, ("sans-serif", 22))?;
    let areas = root.split_evenly((rows, columns));
    for (area, panel) in areas.iter().zip(panels) {
        // The legend goes in a strip on the right, where it cannot hide a point.
        let (area, legend) = area.split_horizontally(PANEL_WIDTH - LEGEND_WIDTH);
        let points = || {
            panel
                .series
                .iter()
                .flat_map(|s| s.points.iter().copied())
                .filter(|&(x, y)| x > 0.0 && y > 0.0 && y.is_finite())
        };
        let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
        for (x, y) in points() {
            (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y));
        }
        if x0 > x1 {
            (x0, x1, y0, y1) = (1.0, 2.0, 1.0, 2.0);
        }
        let mut chart = ChartBuilder::on(&area)
            .caption(&panel.title, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(
                (x0 / 1.2..x1 * 1.2).log_scale().base(2.0),
                (y0 / 1.5..y1 * 1.5).log_scale(),
            )?;
        let x_format = |x: &f64| match panel.x_axis {
            XAxis::Bytes => bytes_label(*x),
            XAxis::Count => format_si(*x),
        };
        chart
            .configure_mesh()
            .x_desc(&panel.x_label)
            .y_desc(&panel.y_label)
            .y_labels(12)
            .x_label_formatter(&x_format)
            .y_label_formatter(&|y| format_si(*y))
            .label_style(("sans-serif", 12))
            .draw()?;
        for (i, s) in panel.series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .copied()
                .filter(|&(x, y)| x > 0.0 && y > 0.0 && y.is_finite())
                .collect();
            chart.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?;
            chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled())))?;
            let y = 48 + 20 * i as i32;
            legend.draw(&PathElement::new(vec![(4, y), (24, y)], color.stroke_width(2)))?;
            legend.draw(&Circle::new((14, y), 3, color.filled()))?;
            legend.draw(&Text::new(s.name.clone(), (30, y - 6), ("sans-serif", 12)))?;
        }
    }
    root.present()?;
    Ok(())
}

/// `1.2M`, `350k`, `12`, `0.8`: short labels for a logarithmic axis.
fn format_si(v: f64) -> String {
    if v >= 1e6 {
        format!("{}M", trim(v / 1e6))
    } else if v >= 1e3 {
        format!("{}k", trim(v / 1e3))
    } else {
        trim(v)
    }
}

fn trim(v: f64) -> String {
    let s = if v >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert_eq!(bytes_label(16.0), "16 B");
        assert_eq!(bytes_label(4096.0), "4 KiB");
        assert_eq!(bytes_label(65536.0), "64 KiB");
        assert_eq!(format_si(1_250_000.0), "1.25M");
        assert_eq!(format_si(350_000.0), "350k");
        assert_eq!(format_si(0.5), "0.5");
    }

    #[test]
    fn bars_carry_their_values_or_the_notes() {
        let scratch = ferry_testkit::Scratch::new("plot-bars");
        let panel = |notes: Vec<String>| BarPanel {
            title: "requests/s, pipeline 16".into(),
            y_label: "requests/s".into(),
            groups: vec!["GET 4 KiB".into(), "MGET 2x2 KiB".into()],
            bars: vec![
                Bars {
                    name: "redis-server".into(),
                    values: vec![200_000.0, 150_000.0],
                },
                Bars {
                    name: "ferry".into(),
                    values: vec![260_000.0, f64::NAN],
                },
            ],
            notes,
        };
        let path = scratch.0.join("bars.svg");
        bars_svg(
            &path,
            "t",
            1,
            &[panel(vec!["1.30x".into(), "-".into()]), panel(vec![])],
        )
        .unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        for text in ["MGET 2x2 KiB", "1.30x", "ferry", "260000", "150000"] {
            assert!(svg.contains(text), "{text} missing");
        }
        // A note goes over the last series' bar only, and a missing value gets none.
        assert_eq!(svg.matches("1.30x").count(), 1);
        assert!(!svg.contains(">-<"));
    }
}

/// One heat map: a value per (row, column) cell, drawn red above zero and blue below, with the
/// value written in the cell.
#[derive(Debug, Clone)]
pub struct HeatMap {
    /// Caption above it.
    pub title: String,
    /// Column labels, left to right.
    pub columns: Vec<String>,
    /// Row labels, top to bottom.
    pub rows: Vec<String>,
    /// Label under the columns.
    pub x_label: String,
    /// Label beside the rows.
    pub y_label: String,
    /// `values[row][column]`; NaN cells are left grey.
    pub values: Vec<Vec<f64>>,
}

/// Draws `maps` one above the other and writes the SVG to `path`.
pub fn heat_map_svg(path: &Path, title: &str, maps: &[HeatMap]) -> Result<(), crate::BoxError> {
    const CELL_W: i32 = 78;
    const CELL_H: i32 = 34;
    const LEFT: i32 = 110;
    const TOP: i32 = 40;
    let width = maps.iter().map(|m| m.columns.len()).max().unwrap_or(1) as i32 * CELL_W + LEFT + 30;
    let heights: Vec<i32> = maps
        .iter()
        .map(|m| TOP + m.rows.len() as i32 * CELL_H + 50)
        .collect();
    let height = heights.iter().sum::<i32>() + 40;
    let root = SVGBackend::new(path, (width as u32, height as u32)).into_drawing_area();
    root.fill(&WHITE)?;
    root.draw(&Text::new(title.to_owned(), (10, 10), ("sans-serif", 18)))?;
    let mut y0 = 40;
    for (map, h) in maps.iter().zip(&heights) {
        let scale = map
            .values
            .iter()
            .flatten()
            .filter(|v| v.is_finite())
            .fold(1.0f64, |m, v| m.max(v.abs()));
        root.draw(&Text::new(map.title.clone(), (10, y0), ("sans-serif", 15)))?;
        for (r, row) in map.values.iter().enumerate() {
            let y = y0 + TOP + r as i32 * CELL_H;
            let label = map.rows.get(r).cloned().unwrap_or_default();
            root.draw(&Text::new(label, (10, y + CELL_H / 3), ("sans-serif", 12)))?;
            for (c, v) in row.iter().enumerate() {
                let x = LEFT + c as i32 * CELL_W;
                let color = if !v.is_finite() {
                    RGBColor(220, 220, 220)
                } else {
                    // Blue below zero, red above, white at zero; full colour at the largest |v|.
                    let t = (v.abs() / scale).min(1.0);
                    let fade = (255.0 * (1.0 - t)) as u8;
                    if *v < 0.0 {
                        RGBColor(fade, fade, 255)
                    } else {
                        RGBColor(255, fade, fade)
                    }
                };
                root.draw(&Rectangle::new(
                    [(x, y), (x + CELL_W - 2, y + CELL_H - 2)],
                    color.filled(),
                ))?;
                let text = if v.is_finite() {
                    format!("{v:+.0}%")
                } else {
                    "-".to_owned()
                };
                root.draw(&Text::new(text, (x + 14, y + CELL_H / 3), ("sans-serif", 12)))?;
            }
        }
        let yl = y0 + TOP + map.rows.len() as i32 * CELL_H + 4;
        for (c, label) in map.columns.iter().enumerate() {
            root.draw(&Text::new(
                label.clone(),
                (LEFT + c as i32 * CELL_W + 14, yl),
                ("sans-serif", 12),
            ))?;
        }
        root.draw(&Text::new(
            format!("{} →   ({} ↓)", map.x_label, map.y_label),
            (LEFT, yl + 18),
            ("sans-serif", 12),
        ))?;
        y0 += h;
    }
    root.present()?;
    Ok(())
}

/// One series of a bar chart: a value per group.
#[derive(Debug, Clone)]
pub struct Bars {
    /// Legend entry.
    pub name: String,
    /// A value per group, in the groups' order.
    pub values: Vec<f64>,
}

/// One bar chart: groups along x, a bar per series in each group.
#[derive(Debug, Clone, Default)]
pub struct BarPanel {
    /// Caption above it.
    pub title: String,
    /// Label of the y axis (linear, from zero); may be empty.
    pub y_label: String,
    /// Group labels, left to right.
    pub groups: Vec<String>,
    /// The series, drawn in the same colour by index in every panel.
    pub bars: Vec<Bars>,
    /// Text over the last series' bar of each group (a ratio, say). Without notes, every bar
    /// is labelled with its value.
    pub notes: Vec<String>,
}

/// Draws `panels` as grouped bar charts in rows of `columns` and writes the SVG to `path`.
pub fn bars_svg(
    path: &Path,
    title: &str,
    columns: usize,
    panels: &[BarPanel],
) -> Result<(), crate::BoxError> {
    let columns = columns.clamp(1, panels.len().max(1));
    let rows = panels.len().div_ceil(columns).max(1);
    let size = (PANEL_WIDTH * columns as u32, 440 * rows as u32);
    let root = SVGBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(title, ("sans-serif", 20))?;
    for (area, panel) in root.split_evenly((rows, columns)).iter().zip(panels) {
        let (area, legend) = area.split_horizontally(PANEL_WIDTH - LEGEND_WIDTH);
        let series = panel.bars.len().max(1);
        let groups = panel.groups.len().max(1);
        let top = panel
            .bars
            .iter()
            .flat_map(|b| b.values.iter().copied())
            .filter(|v| v.is_finite())
            .fold(0.0f64, f64::max)
            .max(f64::MIN_POSITIVE)
            * 1.15;
        let mut chart = ChartBuilder::on(&area)
            .caption(&panel.title, ("sans-serif", 15))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(if panel.y_label.is_empty() { 55 } else { 70 })
            .build_cartesian_2d(0f64..groups as f64, 0f64..top)?;
        let labels = panel.groups.clone();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(groups * 2 + 1)
            .x_label_formatter(&|x| {
                let i = x.floor() as usize;
                if (x - x.floor() - 0.5).abs() < 1e-6 {
                    labels.get(i).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc(&panel.y_label)
            .y_label_formatter(&|v| format_si(*v))
            .draw()?;
        let width = 0.8 / series as f64;
        for (i, bars) in panel.bars.iter().enumerate() {
            let color = Palette99::pick(i).mix(0.9);
            for (g, &v) in bars.values.iter().enumerate() {
                if !v.is_finite() {
                    continue;
                }
                let x0 = g as f64 + 0.1 + width * i as f64;
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(x0, 0.0), (x0 + width, v)],
                    color.filled(),
                )))?;
                let label = match panel.notes.get(g) {
                    _ if panel.notes.is_empty() => trim(v),
                    Some(note) if i + 1 == panel.bars.len() => note.clone(),
                    _ => continue,
                };
                chart.draw_series(std::iter::once(Text::new(
                    label,
                    (x0, v + top * 0.02),
                    ("sans-serif", 11),
                )))?;
            }
            let y = 48 + 20 * i as i32;
            legend.draw(&Rectangle::new([(4, y - 6), (24, y + 6)], color.filled()))?;
            legend.draw(&Text::new(bars.name.clone(), (30, y - 6), ("sans-serif", 12)))?;
        }
    }
    root.present()?;
    Ok(())
}
