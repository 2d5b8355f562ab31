//! Rasterisation of plot [`Shape`]s into an RGB image and PNG encoding (`png` crate), with no
//! system library. Lines, polylines and discs are anti-aliased by coverage: a pixel whose centre
//! lies at distance `d` from the stroke's centre line gets `clamp(w/2 + 0.5 - d, 0, 1)` of the
//! colour, an approximation of the pixel area the stroke covers. A polyline takes the maximum
//! coverage over its segments before blending, so joints are not painted twice. Text uses the
//! X11 misc-fixed bitmap fonts of `embedded-graphics` (ISO 8859-1), picked by size (titles
//! drawn bold); vertical text is the horizontal bitmap turned by -90 degrees.

use std::convert::Infallible;

use embedded_graphics::mono_font::{iso_8859_1 as fonts, MonoFont, MonoTextStyle};
use embedded_graphics::pixelcolor::BinaryColor;
use embedded_graphics::prelude::{DrawTarget, OriginDimensions, Pixel, Point, Size};
use embedded_graphics::text::{Baseline, Text};
use embedded_graphics::Drawable;

use super::plot::{Anchor, Rgb, Shape};
use crate::error::{Result, SimError};

/// An RGB image being drawn, in user units scaled by an integer factor.
pub struct Canvas {
    width: usize,
    height: usize,
    scale: f64,
    rgb: Vec<u8>,
}

/// A rectangle of pixels, `[x0, x1) x [y0, y1)`.
#[derive(Clone, Copy, Debug)]
struct Bounds {
    x0: usize,
    y0: usize,
    x1: usize,
    y1: usize,
}

impl Canvas {
    /// A white `width` x `height` (user units) canvas with `scale` pixels per unit.
    pub fn new(width: f64, height: f64, scale: u32) -> Self {
        let scale = f64::from(scale.max(1));
        let (width, height) = ((width * scale) as usize, (height * scale) as usize);
        Canvas {
            width,
            height,
            scale,
            rgb: vec![255; width * height * 3],
        }
    }

    /// Image size in pixels.
    pub fn size(&self) -> (usize, usize) {
        (self.width, self.height)
    }

    /// Colour of pixel (`x`, `y`).
    pub fn pixel(&self, x: usize, y: usize) -> Rgb {
        let i = (y * self.width + x) * 3;
        Rgb(self.rgb[i], self.rgb[i + 1], self.rgb[i + 2])
    }

    fn blend(&mut self, x: usize, y: usize, c: Rgb, alpha: f64) {
        if alpha <= 0.0 || x >= self.width || y >= self.height {
            return;
        }
        let a = alpha.min(1.0);
        let i = (y * self.width + x) * 3;
        for (k, v) in [c.0, c.1, c.2].into_iter().enumerate() {
            let old = f64::from(self.rgb[i + k]);
            self.rgb[i + k] = (old + (f64::from(v) - old) * a).round() as u8;
        }
    }

    /// Pixels that a shape reaching `pad` pixels around the device box `[x0,x1]x[y0,y1]` can touch.
    fn bounds(&self, (x0, y0): (f64, f64), (x1, y1): (f64, f64), pad: f64) -> Option<Bounds> {
        let clamp = |v: f64, max: usize| v.max(0.0).min(max as f64) as usize;
        let b = Bounds {
            x0: clamp((x0.min(x1) - pad).floor(), self.width),
            y0: clamp((y0.min(y1) - pad).floor(), self.height),
            x1: clamp((x0.max(x1) + pad).ceil() + 1.0, self.width),
            y1: clamp((y0.max(y1) + pad).ceil() + 1.0, self.height),
        };
        (b.x0 < b.x1 && b.y0 < b.y1).then_some(b)
    }

    fn device(&self, (x, y): (f64, f64)) -> (f64, f64) {
        (x * self.scale, y * self.scale)
    }

    /// Draws one shape.
    pub fn draw(&mut self, shape: &Shape) {
        match shape {
            Shape::Line {
                from,
                to,
                color,
                width,
            } => self.stroke(&[*from, *to], *color, *width),
            Shape::Polyline {
                points,
                color,
                width,
            } => self.stroke(points, *color, *width),
            Shape::Disc {
                center,
                radius,
                color,
            } => self.disc(*center, *radius, *color),
            Shape::Frame {
                corner: (x, y),
                size: (w, h),
                color,
            } => {
                let corners = [(*x, *y), (x + w, *y), (x + w, y + h), (*x, y + h), (*x, *y)];
                self.stroke(&corners, *color, 1.0);
            }
            Shape::Text {
                at,
                text,
                size,
                anchor,
                vertical,
            } => self.text(*at, text, *size, *anchor, *vertical),
        }
    }

    /// Strokes the polyline through `points` (user units) `width` units wide.
    fn stroke(&mut self, points: &[(f64, f64)], color: Rgb, width: f64) {
        let pts: Vec<(f64, f64)> = points.iter().map(|&p| self.device(p)).collect();
        let half = width * self.scale / 2.0;
        let (lo, hi) = pts.iter().fold(
            ((f64::MAX, f64::MAX), (f64::MIN, f64::MIN)),
            |(lo, hi), &(x, y)| ((lo.0.min(x), lo.1.min(y)), (hi.0.max(x), hi.1.max(y))),
        );
        let Some(b) = (!pts.is_empty())
            .then(|| self.bounds(lo, hi, half + 1.0))
            .flatten()
        else {
            return;
        };
        let bw = b.x1 - b.x0;
        let mut cover = vec![0f64; bw * (b.y1 - b.y0)];
        let segments: Vec<_> = if pts.len() == 1 {
            vec![(pts[0], pts[0])]
        } else {
            pts.windows(2).map(|w| (w[0], w[1])).collect()
        };
        for (p, q) in segments {
            let Some(s) = self.bounds(p, q, half + 1.0) else {
                continue;
            };
            for y in s.y0..s.y1 {
                for x in s.x0..s.x1 {
                    let d = segment_distance((x as f64 + 0.5, y as f64 + 0.5), p, q);
                    let c = &mut cover[(y - b.y0) * bw + (x - b.x0)];
                    *c = c.max(half + 0.5 - d);
                }
            }
        }
        for y in b.y0..b.y1 {
            for x in b.x0..b.x1 {
                self.blend(x, y, color, cover[(y - b.y0) * bw + (x - b.x0)]);
            }
        }
    }

    fn disc(&mut self, center: (f64, f64), radius: f64, color: Rgb) {
        let c = self.device(center);
        let r = radius * self.scale;
        let Some(b) = self.bounds(c, c, r + 1.0) else {
            return;
        };
        for y in b.y0..b.y1 {
            for x in b.x0..b.x1 {
                let d = (x as f64 + 0.5 - c.0).hypot(y as f64 + 0.5 - c.1);
                self.blend(x, y, color, r + 0.5 - d);
            }
        }
    }

    fn text(&mut self, at: (f64, f64), text: &str, size: f64, anchor: Anchor, vertical: bool) {
        let font = pick_font(size * self.scale);
        // Larger sizes (titles) are drawn bold: each pixel twice, one apart along the text.
        let thick = if size > 12.0 { 2 } else { 1 };
        let mask = Mask::render(text, font);
        let (ax, ay) = self.device(at);
        let (ax, ay) = (ax.round() as i64, ay.round() as i64);
        let shift = match anchor {
            Anchor::Start => 0,
            Anchor::Middle => -(mask.width as i64) / 2,
            Anchor::End => -(mask.width as i64),
        };
        // The font's baseline row holds the glyphs' lowest body pixels: they sit just above the
        // SVG baseline.
        let base = i64::from(font.baseline) + 1;
        for v in 0..mask.height {
            for u in 0..mask.width {
                if !mask.bits[v * mask.width + u] {
                    continue;
                }
                for extra in 0..thick {
                    // Offset along the text and across it (down from the baseline).
                    let (along, across) = (shift + (u + extra) as i64, v as i64 - base);
                    let (x, y) = if vertical {
                        (ax + across, ay - along)
                    } else {
                        (ax + along, ay + across)
                    };
                    if let (Ok(x), Ok(y)) = (usize::try_from(x), usize::try_from(y)) {
                        self.blend(x, y, Rgb(0, 0, 0), 1.0);
                    }
                }
            }
        }
    }

    /// The image as a PNG file (8-bit RGB).
    pub fn encode_png(&self) -> Result<Vec<u8>> {
        let err = |e: png::EncodingError| match e {
            png::EncodingError::IoError(e) => SimError::io("encoding png", e),
            other => SimError::invalid(format!("encoding png: {other}")),
        };
        let (w, h) = (self.width as u32, self.height as u32);
        let mut out = Vec::new();
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_compression(png::Compression::Fast);
        let mut writer = enc.write_header().map_err(err)?;
        writer.write_image_data(&self.rgb).map_err(err)?;
        writer.finish().map_err(err)?;
        Ok(out)
    }
}

/// Distance from `p` to the segment `a`-`b`.
fn segment_distance(p: (f64, f64), a: (f64, f64), b: (f64, f64)) -> f64 {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let len2 = dx * dx + dy * dy;
    let t = if len2 == 0.0 {
        0.0
    } else {
        (((p.0 - a.0) * dx + (p.1 - a.1) * dy) / len2).clamp(0.0, 1.0)
    };
    (p.0 - a.0 - t * dx).hypot(p.1 - a.1 - t * dy)
}

/// The largest font no taller than `em` pixels (the smallest one if none is).
fn pick_font(em: f64) -> &'static MonoFont<'static> {
    let list: [&'static MonoFont<'static>; 3] =
        [&fonts::FONT_6X12, &fonts::FONT_9X15, &fonts::FONT_10X20];
    list.iter()
        .rev()
        .find(|f| f64::from(f.character_size.height) <= em)
        .copied()
        .unwrap_or(list[0])
}

/// A one-bit image of a text line (rows from the top of the character cell).
struct Mask {
    width: usize,
    height: usize,
    bits: Vec<bool>,
}

impl Mask {
    fn render(text: &str, font: &MonoFont<'_>) -> Self {
        let n = text.chars().count() as u32;
        let step = font.character_size.width + font.character_spacing;
        let mut mask = Mask {
            width: (n * step).saturating_sub(font.character_spacing) as usize,
            height: font.character_size.height as usize,
            bits: Vec::new(),
        };
        mask.bits = vec![false; mask.width * mask.height];
        let style = MonoTextStyle::new(font, BinaryColor::On);
        // Drawing into a Vec cannot fail (the error type is Infallible).
        let _ = Text::with_baseline(text, Point::zero(), style, Baseline::Top).draw(&mut mask);
        mask
    }
}

impl OriginDimensions for Mask {
    fn size(&self) -> Size {
        Size::new(self.width as u32, self.height as u32)
    }
}

impl DrawTarget for Mask {
    type Color = BinaryColor;
    type Error = Infallible;

    fn draw_iter<I>(&mut self, pixels: I) -> std::result::Result<(), Infallible>
    where
        I: IntoIterator<Item = Pixel<BinaryColor>>,
    {
        for Pixel(p, c) in pixels {
            if let (Ok(x), Ok(y)) = (usize::try_from(p.x), usize::try_from(p.y)) {
                if x < self.width && y < self.height {
                    self.bits[y * self.width + x] = c.is_on();
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strokes_are_antialiased_and_joints_painted_once() {
        let mut c = Canvas::new(20.0, 10.0, 1);
        let red = Rgb(255, 0, 0);
        c.draw(&Shape::Polyline {
            points: vec![(2.0, 5.0), (10.0, 5.0), (18.0, 5.0)],
            color: red,
            width: 2.0,
        });
        // Rows 4 and 5 are fully inside the 2-unit stroke centred on y = 5; rows 3 and 6 are not.
        assert_eq!(c.pixel(10, 4), red);
        assert_eq!(c.pixel(10, 5), red);
        assert_eq!(c.pixel(10, 3), Rgb(255, 255, 255));
        assert_eq!(c.pixel(10, 6), Rgb(255, 255, 255));
        // The disc edge is a blend.
        c.draw(&Shape::Disc {
            center: (5.0, 2.0),
            radius: 1.2,
            color: Rgb(0, 0, 255),
        });
        let edge = c.pixel(6, 2);
        assert!(edge.2 == 255 && edge.0 > 0 && edge.0 < 255, "{edge:?}");
    }

    #[test]
    fn text_is_drawn_at_its_anchor() {
        let mut c = Canvas::new(100.0, 100.0, 1);
        c.draw(&Shape::Text {
            at: (50.0, 50.0),
            text: "III".into(),
            size: 12.0,
            anchor: Anchor::End,
            vertical: false,
        });
        let (w, h) = c.size();
        let black: Vec<(usize, usize)> = (0..h)
            .flat_map(|y| (0..w).map(move |x| (x, y)))
            .filter(|&(x, y)| c.pixel(x, y) == Rgb(0, 0, 0))
            .collect();
        assert!(!black.is_empty());
        // Ends left of the anchor, sits on the baseline.
        assert!(
            black.iter().all(|&(x, y)| x < 50 && y < 50 && y > 35),
            "{black:?}"
        );
        assert_eq!(pick_font(24.0).character_size.height, 20);
        assert_eq!(pick_font(3.0).character_size.height, 12);
    }
}
