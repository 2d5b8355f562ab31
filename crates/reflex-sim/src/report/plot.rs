//! Minimal SVG line plots (no plotting dependency): several named series of (x, y) points,
//! linear axes with "nice" ticks, a legend. Used for latency vs accepted traffic and for
//! instantaneous latency over time.

use std::fmt::Write;

/// One line of a plot.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend label.
    pub label: String,
    /// Points in drawing order.
    pub points: Vec<(f64, f64)>,
}

/// A line plot.
#[derive(Clone, Debug)]
pub struct Plot {
    /// Title.
    pub title: String,
    /// X-axis label.
    pub x_label: String,
    /// Y-axis label.
    pub y_label: String,
    /// Lines.
    pub series: Vec<Series>,
    /// Upper bound for the y axis (clips runaway latencies past saturation).
    pub y_max: Option<f64>,
}

const W: f64 = 640.0;
const H: f64 = 420.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 55.0;
const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

fn nice_step(span: f64) -> f64 {
    let raw = (span / 5.0).max(f64::MIN_POSITIVE);
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let k = if norm < 1.5 {
        1.0
    } else if norm < 3.0 {
        2.0
    } else if norm < 7.0 {
        5.0
    } else {
        10.0
    };
    k * mag
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

impl Plot {
    /// Renders the plot as an SVG document.
    pub fn to_svg(&self) -> String {
        let pts = || {
            self.series
                .iter()
                .flat_map(|s| s.points.iter())
                .filter(|p| p.0.is_finite() && p.1.is_finite())
        };
        let x_max = pts().map(|p| p.0).fold(0.0, f64::max).max(1e-9);
        let mut y_max = pts().map(|p| p.1).fold(0.0, f64::max).max(1e-9);
        if let Some(cap) = self.y_max {
            y_max = y_max.min(cap);
        }
        let (xs, ys) = (nice_step(x_max), nice_step(y_max));
        let (x_top, y_top) = ((x_max / xs).ceil() * xs, (y_max / ys).ceil() * ys);
        let px = |x: f64| LEFT + (x / x_top) * (W - LEFT - RIGHT);
        let py = |y: f64| H - BOTTOM - (y.min(y_top) / y_top) * (H - TOP - BOTTOM);
        let mut s = String::new();
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
        let _ = writeln!(
            s,
            r#"<text x="{}" y="22" text-anchor="middle" font-size="15">{}</text>"#,
            W / 2.0,
            escape(&self.title)
        );
        let mut t = 0.0;
        while t <= x_top + xs * 1e-6 {
            let x = px(t);
            let _ = writeln!(
                s,
                r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" stroke="#e0e0e0"/>"##,
                H - BOTTOM
            );
            let _ = writeln!(
                s,
                r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                H - BOTTOM + 16.0,
                fmt_tick(t, xs)
            );
            t += xs;
        }
        let mut t = 0.0;
        while t <= y_top + ys * 1e-6 {
            let y = py(t);
            let _ = writeln!(
                s,
                r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#e0e0e0"/>"##,
                W - RIGHT
            );
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
                LEFT - 6.0,
                y + 4.0,
                fmt_tick(t, ys)
            );
            t += ys;
        }
        let _ = writeln!(
            s,
            r#"<rect x="{LEFT}" y="{TOP}" width="{:.1}" height="{:.1}" fill="none" stroke="black"/>"#,
            W - LEFT - RIGHT,
            H - TOP - BOTTOM
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            (LEFT + W - RIGHT) / 2.0,
            H - 12.0,
            escape(&self.x_label)
        );
        let _ = writeln!(
            s,
            r#"<text transform="translate(16,{:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
            (TOP + H - BOTTOM) / 2.0,
            escape(&self.y_label)
        );
        for (i, series) in self.series.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let path: Vec<String> = series
                .points
                .iter()
                .filter(|p| p.0.is_finite() && p.1.is_finite())
                .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
                .collect();
            let _ = writeln!(
                s,
                r#"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#,
                path.join(" ")
            );
            for p in &path {
                let (x, y) = p.split_once(',').unwrap_or(("0", "0"));
                let _ = writeln!(s, r#"<circle cx="{x}" cy="{y}" r="2.5" fill="{color}"/>"#);
            }
            let ly = TOP + 14.0 + 16.0 * i as f64;
            let _ = writeln!(
                s,
                r#"<line x1="{:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{color}" stroke-width="2"/>"#,
                LEFT + 10.0,
                LEFT + 30.0
            );
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{:.1}">{}</text>"#,
                LEFT + 36.0,
                ly + 4.0,
                escape(&series.label)
            );
        }
        s.push_str("</svg>\n");
        s
    }
}

fn fmt_tick(v: f64, step: f64) -> String {
    if step >= 1.0 {
        format!("{v:.0}")
    } else {
        let digits = (-step.log10().floor()) as usize;
        format!("{v:.digits$}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_series_and_legend() {
        let p = Plot {
            title: "a < b".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            series: vec![Series {
                label: "UD_DFS".into(),
                points: vec![(0.0, 1.0), (0.5, 2.0), (1.0, f64::NAN)],
            }],
            y_max: None,
        };
        let svg = p.to_svg();
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("a &lt; b"));
        assert!(svg.contains("UD_DFS"));
        assert_eq!(svg.matches("<circle").count(), 2);
        assert_eq!(nice_step(10.0), 2.0);
        assert_eq!(fmt_tick(0.25, 0.05), "0.25");
    }
}
