//! Minimal line plots (no plotting dependency): several named series of (x, y) points, linear
//! axes with "nice" ticks, a legend. Used for latency vs accepted traffic and for instantaneous
//! latency over time. A plot is first laid out as a list of [`Shape`]s in a 640x420 coordinate
//! space; [`Plot::to_svg`] writes them as SVG elements and [`Plot::to_png`] rasterises the same
//! shapes ([`super::raster`]), so both files always show the same picture.

use std::fmt::Write;

use super::raster::Canvas;
use crate::error::Result;

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

/// Width of the drawing, in user units (SVG pixels).
pub const W: f64 = 640.0;
/// Height of the drawing, in user units.
pub const H: f64 = 420.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 55.0;
const COLORS: [Rgb; 8] = [
    Rgb(0x1f, 0x77, 0xb4),
    Rgb(0xd6, 0x27, 0x28),
    Rgb(0x2c, 0xa0, 0x2c),
    Rgb(0xff, 0x7f, 0x0e),
    Rgb(0x94, 0x67, 0xbd),
    Rgb(0x8c, 0x56, 0x4b),
    Rgb(0xe3, 0x77, 0xc2),
    Rgb(0x17, 0xbe, 0xcf),
];
const GRID: Rgb = Rgb(0xe0, 0xe0, 0xe0);
const BLACK: Rgb = Rgb(0, 0, 0);

/// An opaque colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rgb(pub u8, pub u8, pub u8);

impl Rgb {
    fn hex(self) -> String {
        format!("#{:02x}{:02x}{:02x}", self.0, self.1, self.2)
    }
}

/// Horizontal alignment of a text on its anchor point (SVG `text-anchor`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    /// Text starts at the point.
    Start,
    /// Text is centred on the point.
    Middle,
    /// Text ends at the point.
    End,
}

/// One drawing primitive, in user units.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    /// A straight line.
    Line {
        /// Start.
        from: (f64, f64),
        /// End.
        to: (f64, f64),
        /// Colour.
        color: Rgb,
        /// Stroke width.
        width: f64,
    },
    /// Connected line segments.
    Polyline {
        /// Vertices.
        points: Vec<(f64, f64)>,
        /// Colour.
        color: Rgb,
        /// Stroke width.
        width: f64,
    },
    /// A filled disc.
    Disc {
        /// Centre.
        center: (f64, f64),
        /// Radius.
        radius: f64,
        /// Colour.
        color: Rgb,
    },
    /// A one-unit rectangle outline.
    Frame {
        /// Top-left corner.
        corner: (f64, f64),
        /// Width and height.
        size: (f64, f64),
        /// Colour.
        color: Rgb,
    },
    /// A text line; `at` is on its baseline. Vertical text reads bottom to top.
    Text {
        /// Anchor point.
        at: (f64, f64),
        /// Content.
        text: String,
        /// Font size.
        size: f64,
        /// Alignment on the anchor.
        anchor: Anchor,
        /// Rotated by -90 degrees.
        vertical: bool,
    },
}

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

fn text(at: (f64, f64), text: &str, anchor: Anchor) -> Shape {
    Shape::Text {
        at,
        text: text.to_string(),
        size: 12.0,
        anchor,
        vertical: false,
    }
}

/// Axis scale: data value to user units, with the "nice" tick step and top.
struct Axis {
    step: f64,
    top: f64,
}

impl Axis {
    fn new(max: f64) -> Self {
        let step = nice_step(max);
        Axis {
            step,
            top: (max / step).ceil() * step,
        }
    }

    fn ticks(&self) -> impl Iterator<Item = f64> + '_ {
        let n = (self.top / self.step + 1e-6).floor() as usize;
        (0..=n).map(|k| k as f64 * self.step)
    }
}

impl Plot {
    /// The plot as drawing primitives in a [`W`] x [`H`] space.
    pub fn shapes(&self) -> Vec<Shape> {
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
        let (xa, ya) = (Axis::new(x_max), Axis::new(y_max));
        let px = |x: f64| LEFT + (x / xa.top) * (W - LEFT - RIGHT);
        let py = |y: f64| H - BOTTOM - (y.min(ya.top) / ya.top) * (H - TOP - BOTTOM);
        let mut out = vec![Shape::Text {
            at: (W / 2.0, 22.0),
            text: self.title.clone(),
            size: 15.0,
            anchor: Anchor::Middle,
            vertical: false,
        }];
        let grid = |from, to| Shape::Line {
            from,
            to,
            color: GRID,
            width: 1.0,
        };
        for t in xa.ticks() {
            let x = px(t);
            out.push(grid((x, TOP), (x, H - BOTTOM)));
            let label = fmt_tick(t, xa.step);
            out.push(text((x, H - BOTTOM + 16.0), &label, Anchor::Middle));
        }
        for t in ya.ticks() {
            let y = py(t);
            out.push(grid((LEFT, y), (W - RIGHT, y)));
            let label = fmt_tick(t, ya.step);
            out.push(text((LEFT - 6.0, y + 4.0), &label, Anchor::End));
        }
        out.push(Shape::Frame {
            corner: (LEFT, TOP),
            size: (W - LEFT - RIGHT, H - TOP - BOTTOM),
            color: BLACK,
        });
        out.push(text(
            ((LEFT + W - RIGHT) / 2.0, H - 12.0),
            &self.x_label,
            Anchor::Middle,
        ));
        out.push(Shape::Text {
            at: (16.0, (TOP + H - BOTTOM) / 2.0),
            text: self.y_label.clone(),
            size: 12.0,
            anchor: Anchor::Middle,
            vertical: true,
        });
        for (i, series) in self.series.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let points: Vec<(f64, f64)> = series
                .points
                .iter()
                .filter(|p| p.0.is_finite() && p.1.is_finite())
                .map(|&(x, y)| (round1(px(x)), round1(py(y))))
                .collect();
            out.push(Shape::Polyline {
                points: points.clone(),
                color,
                width: 2.0,
            });
            out.extend(points.into_iter().map(|center| Shape::Disc {
                center,
                radius: 2.5,
                color,
            }));
            let ly = TOP + 14.0 + 16.0 * i as f64;
            out.push(Shape::Line {
                from: (LEFT + 10.0, ly),
                to: (LEFT + 30.0, ly),
                color,
                width: 2.0,
            });
            out.push(text((LEFT + 36.0, ly + 4.0), &series.label, Anchor::Start));
        }
        out
    }

    /// Renders the plot as an SVG document.
    pub fn to_svg(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
        for shape in self.shapes() {
            svg_element(&mut s, &shape);
        }
        s.push_str("</svg>\n");
        s
    }

    /// Renders the plot as a PNG image, `scale` pixels per user unit (2 gives 1280x840).
    pub fn to_png(&self, scale: u32) -> Result<Vec<u8>> {
        let mut canvas = Canvas::new(W, H, scale);
        for shape in self.shapes() {
            canvas.draw(&shape);
        }
        canvas.encode_png()
    }
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

fn svg_element(s: &mut String, shape: &Shape) {
    let _ = match shape {
        Shape::Line {
            from,
            to,
            color,
            width,
        } => {
            let extra = if *width == 1.0 {
                String::new()
            } else {
                format!(r#" stroke-width="{width}""#)
            };
            writeln!(
                s,
                r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{}"{extra}/>"#,
                from.0,
                from.1,
                to.0,
                to.1,
                color.hex()
            )
        }
        Shape::Polyline {
            points,
            color,
            width,
        } => {
            let path: Vec<String> = points
                .iter()
                .map(|(x, y)| format!("{x:.1},{y:.1}"))
                .collect();
            writeln!(
                s,
                r#"<polyline fill="none" stroke="{}" stroke-width="{width}" points="{}"/>"#,
                color.hex(),
                path.join(" ")
            )
        }
        Shape::Disc {
            center,
            radius,
            color,
        } => writeln!(
            s,
            r#"<circle cx="{:.1}" cy="{:.1}" r="{radius}" fill="{}"/>"#,
            center.0,
            center.1,
            color.hex()
        ),
        Shape::Frame {
            corner,
            size,
            color,
        } => writeln!(
            s,
            r#"<rect x="{}" y="{}" width="{:.1}" height="{:.1}" fill="none" stroke="{}"/>"#,
            corner.0,
            corner.1,
            size.0,
            size.1,
            color.hex()
        ),
        Shape::Text {
            at,
            text,
            size,
            anchor,
            vertical,
        } => {
            let anchor = match anchor {
                Anchor::Start => "",
                Anchor::Middle => r#" text-anchor="middle""#,
                Anchor::End => r#" text-anchor="end""#,
            };
            let font = if *size == 12.0 {
                String::new()
            } else {
                format!(r#" font-size="{size}""#)
            };
            if *vertical {
                writeln!(
                    s,
                    r#"<text transform="translate({:.1},{:.1}) rotate(-90)"{anchor}{font}>{}</text>"#,
                    at.0,
                    at.1,
                    escape(text)
                )
            } else {
                writeln!(
                    s,
                    r#"<text x="{:.1}" y="{:.1}"{anchor}{font}>{}</text>"#,
                    at.0,
                    at.1,
                    escape(text)
                )
            }
        }
    };
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

    pub(crate) fn sample() -> Plot {
        Plot {
            title: "a < b".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            series: vec![Series {
                label: "UD_DFS".into(),
                points: vec![(0.0, 1.0), (0.5, 2.0), (1.0, f64::NAN)],
            }],
            y_max: None,
        }
    }

    #[test]
    fn renders_series_and_legend() {
        let svg = sample().to_svg();
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("a &lt; b"));
        assert!(svg.contains("UD_DFS"));
        assert!(svg.contains(r##"<polyline fill="none" stroke="#1f77b4" stroke-width="2""##));
        assert!(svg.contains("rotate(-90)"));
        assert_eq!(svg.matches("<circle").count(), 2);
        assert_eq!(nice_step(10.0), 2.0);
        assert_eq!(fmt_tick(0.25, 0.05), "0.25");
    }

    #[test]
    fn png_file_is_written_and_decodes() {
        let dir = std::env::temp_dir().join(format!("reflex-sim-png-{}", std::process::id()));
        crate::report::write_plot(&dir, "p", &sample()).unwrap();
        assert!(std::fs::read_to_string(dir.join("p.svg"))
            .unwrap()
            .starts_with("<svg"));
        let bytes = std::fs::read(dir.join("p.png")).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        let mut reader = png::Decoder::new(std::io::Cursor::new(bytes))
            .read_info()
            .unwrap();
        let mut rgb = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut rgb).unwrap();
        assert_eq!((info.width, info.height), (1280, 840));
        assert_eq!(info.color_type, png::ColorType::Rgb);
        // The series colour is in the picture, and the corner is white background.
        let blue = [0x1f, 0x77, 0xb4];
        assert!(rgb.chunks(3).any(|p| p == blue));
        assert_eq!(&rgb[..3], &[255, 255, 255]);
    }
}
