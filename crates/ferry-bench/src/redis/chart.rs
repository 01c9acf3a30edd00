//! Grouped bar charts as SVG (plotters' SVG backend, like [`crate::plot`], which has line
//! charts and heat maps but no bars): one group per test, one bar per server, a note (Ferry's
//! ratio) over the last bar of each group, one legend for the figure.

use std::path::Path;

use plotters::prelude::*;

use crate::BoxError;

/// One chart of the figure.
#[derive(Debug, Clone)]
pub struct BarPanel {
    /// Caption above the chart.
    pub title: String,
    /// Label of the y axis (linear, from zero).
    pub y_label: String,
    /// Group labels, left to right.
    pub groups: Vec<String>,
    /// Series: a legend name and one value per group; drawn in the same colour by index in
    /// every panel.
    pub series: Vec<(String, Vec<f64>)>,
    /// Text over the last bar of each group (empty for none).
    pub notes: Vec<String>,
}

const PANEL_W: u32 = 720;
const PANEL_H: u32 = 400;

/// Draws `panels` in a grid of `columns` columns and writes the SVG to `path`.
pub fn grouped_bars_svg(
    path: &Path,
    title: &str,
    columns: usize,
    panels: &[BarPanel],
) -> Result<(), BoxError> {
    let columns = columns.max(1);
    let rows = panels.len().div_ceil(columns).max(1);
    // `canvas` is the whole picture in pixels (what `backend_coord` returns); `root` is the
    // part under the title and the legend.
    let canvas =
        SVGBackend::new(path, (PANEL_W * columns as u32, PANEL_H * rows as u32 + 64)).into_drawing_area();
    canvas.fill(&WHITE)?;
    let root = canvas.titled(title, ("sans-serif", 20))?;
    let (legend, root) = root.split_vertically(28);
    // One legend for every panel, the series' colours by index.
    if let Some(first) = panels.first() {
        for (s, (name, _)) in first.series.iter().enumerate() {
            let color = Palette99::pick(s).to_rgba();
            let x = 20 + 160 * s as i32;
            legend.draw(&Rectangle::new([(x, 6), (x + 14, 20)], color.filled()))?;
            legend.draw(&Text::new(name.clone(), (x + 20, 7), ("sans-serif", 14)))?;
        }
    }
    for (area, panel) in root.split_evenly((rows, columns)).iter().zip(panels) {
        let groups = panel.groups.len().max(1);
        let top = panel
            .series
            .iter()
            .flat_map(|(_, v)| v.iter().copied())
            .filter(|v| v.is_finite())
            .fold(0.0f64, f64::max);
        let top = if top > 0.0 { top * 1.12 } else { 1.0 };
        let mut chart = ChartBuilder::on(area)
            .caption(&panel.title, ("sans-serif", 15))
            .margin(10)
            .x_label_area_size(28)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..groups as f64, 0f64..top)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(WHITE)
            .x_labels(0)
            .y_desc(&panel.y_label)
            .y_label_formatter(&|y| short(*y))
            .label_style(("sans-serif", 12))
            .draw()?;
        let n = panel.series.len().max(1);
        let width = 0.8 / n as f64;
        for (s, (_, values)) in panel.series.iter().enumerate() {
            let color = Palette99::pick(s).to_rgba();
            let bars = values
                .iter()
                .enumerate()
                .filter(|(_, v)| v.is_finite())
                .map(|(g, &v)| {
                    let x0 = g as f64 + 0.1 + s as f64 * width;
                    Rectangle::new([(x0, 0.0), (x0 + width * 0.95, v)], color.filled())
                });
            chart.draw_series(bars)?;
        }
        let text = ("sans-serif", 12).into_font();
        for g in 0..panel.groups.len() {
            // The group's label under its bars, centred by an estimate of the text's width.
            let label = &panel.groups[g];
            let (x, y) = chart.backend_coord(&(g as f64 + 0.5, 0.0));
            canvas.draw(&Text::new(
                label.clone(),
                (x - 3 * label.len() as i32, y + 8),
                text.clone(),
            ))?;
            let note = panel.notes.get(g).filter(|n| !n.is_empty());
            let last = panel
                .series
                .last()
                .and_then(|(_, v)| v.get(g))
                .filter(|v| v.is_finite());
            if let (Some(note), Some(&v)) = (note, last) {
                let x_bar = g as f64 + 0.1 + (n - 1) as f64 * width;
                let (x, y) = chart.backend_coord(&(x_bar, v));
                canvas.draw(&Text::new(note.clone(), (x, y - 16), text.clone()))?;
            }
        }
    }
    root.present()?;
    Ok(())
}

/// `1.2M`, `350k`, `12`, `0.85`: short labels for the y axis.
fn short(v: f64) -> String {
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            s
        }
    };
    if v >= 1e6 {
        format!("{}M", trim(format!("{:.2}", v / 1e6)))
    } else if v >= 1e3 {
        format!("{}k", trim(format!("{:.1}", v / 1e3)))
    } else {
        trim(format!("{v:.2}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert_eq!(short(1_250_000.0), "1.25M");
        assert_eq!(short(350_000.0), "350k");
        assert_eq!(short(12.5), "12.5");
        assert_eq!(short(0.0), "0");
    }

    #[test]
    fn draws() {
        let scratch = ferry_testkit::Scratch::new("redis-chart");
        let path = scratch.0.join("bars.svg");
        let panel = BarPanel {
            title: "requests/s, pipeline 16".into(),
            y_label: "requests/s".into(),
            groups: vec!["GET 4 KiB".into(), "MGET 2x2 KiB".into()],
            series: vec![
                ("redis-server".into(), vec![200_000.0, 150_000.0]),
                ("ferry".into(), vec![260_000.0, f64::NAN]),
            ],
            notes: vec!["1.30x".into(), String::new()],
        };
        grouped_bars_svg(&path, "t", 1, &[panel]).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.contains("MGET 2x2 KiB") && svg.contains("1.30x") && svg.contains("ferry"));
    }
}
