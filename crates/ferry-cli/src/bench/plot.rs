//! Line charts as SVG (plotters' SVG backend: text is written as `<text>` elements, so no
//! font library is needed to draw).

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

/// One chart of the figure.
#[derive(Debug, Clone)]
pub struct Panel {
    /// Caption above the chart.
    pub title: String,
    /// Label of the y axis.
    pub y_label: String,
    /// Lines, drawn in the same colour by index in every panel.
    pub series: Vec<Series>,
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

/// Draws `panels` in a grid of `columns` columns, all with a logarithmic x axis (base 2,
/// labelled in bytes) and logarithmic y axes, and writes the SVG to `path`.
pub fn log_log_svg(
    path: &Path,
    title: &str,
    x_label: &str,
    columns: usize,
    panels: &[Panel],
) -> Result<(), super::BoxError> {
    let columns = columns.max(1);
    let rows = panels.len().div_ceil(columns).max(1);
    let root = SVGBackend::new(path, (560 * columns as u32, 420 * rows as u32)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(title, ("sans-serif", 22))?;
    let areas = root.split_evenly((rows, columns));
    for (area, panel) in areas.iter().zip(panels) {
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
        let mut chart = ChartBuilder::on(area)
            .caption(&panel.title, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(
                (x0 / 1.2..x1 * 1.2).log_scale().base(2.0),
                (y0 / 1.5..y1 * 1.5).log_scale(),
            )?;
        chart
            .configure_mesh()
            .x_desc(x_label)
            .y_desc(&panel.y_label)
            .y_labels(12)
            .x_label_formatter(&|x| bytes_label(*x))
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
            chart
                .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?
                .label(s.name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
            chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled())))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerLeft)
            .label_font(("sans-serif", 12))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .draw()?;
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
}
