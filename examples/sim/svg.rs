//! A small hand-written SVG line plotter: panels side by side, labelled axes, a legend.

use std::fmt::Write;

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Solid line with point markers (measurements).
    Measured,
    /// Dashed line without markers (the analysis).
    Analysis,
}

pub struct Series {
    pub name: String,
    pub color: &'static str,
    pub style: Style,
    pub points: Vec<(f64, f64)>,
}

/// Where a panel's legend goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Corner {
    TopLeft,
    BottomRight,
}

pub struct Panel {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    pub legend: Corner,
    /// The y axis reaches at least this many times the largest value (room for the legend).
    pub headroom: f64,
}

const W: f64 = 560.0;
const H: f64 = 400.0;
const ML: f64 = 78.0;
const MR: f64 = 20.0;
const MT: f64 = 40.0;
const MB: f64 = 56.0;

/// Colours that stay apart in print and for most colour-blind readers.
pub const COLORS: [&str; 6] = ["#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9"];

fn nice_step(range: f64) -> f64 {
    let raw = range / 6.0;
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let m = if f < 1.5 {
        1.0
    } else if f < 3.0 {
        2.0
    } else if f < 7.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

fn bounds(vals: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in vals.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    // Axes start at zero: every quantity plotted here is a size, a rate or a delay.
    lo = lo.min(0.0);
    if hi <= lo {
        hi = lo + 1.0;
    }
    let step = nice_step(hi - lo);
    ((lo / step).floor() * step, (hi / step).ceil() * step)
}

fn fmt_tick(v: f64, step: f64) -> String {
    if step >= 1.0 {
        format!("{v:.0}")
    } else {
        let d = (-step.log10()).ceil() as usize;
        format!("{v:.d$}")
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

fn panel(out: &mut String, p: &Panel, ox: f64) {
    let pts = || p.series.iter().flat_map(|s| s.points.iter());
    let (x0, x1) = bounds(pts().map(|q| q.0));
    let y_top = pts().map(|q| q.1).filter(|v| v.is_finite()).fold(0.0f64, f64::max);
    let (y0, y1) = bounds(pts().map(|q| q.1).chain([y_top * p.headroom.max(1.0)]));
    let (pw, ph) = (W - ML - MR, H - MT - MB);
    let sx = |x: f64| ox + ML + (x - x0) / (x1 - x0) * pw;
    let sy = |y: f64| MT + ph - (y - y0) / (y1 - y0) * ph;
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="24" text-anchor="middle" font-size="15" font-weight="bold">{}</text>"#,
        ox + ML + pw / 2.0,
        esc(&p.title)
    );
    let _ = writeln!(
        out,
        r##"<rect x="{:.1}" y="{MT}" width="{pw:.1}" height="{ph:.1}" fill="none" stroke="#333"/>"##,
        ox + ML
    );
    // Ticks and grid.
    let xs = nice_step(x1 - x0);
    let mut x = x0;
    while x <= x1 + xs * 1e-6 {
        let px = sx(x);
        let _ = writeln!(
            out,
            r##"<line x1="{px:.1}" y1="{MT}" x2="{px:.1}" y2="{:.1}" stroke="#ddd"/><text x="{px:.1}" y="{:.1}" text-anchor="middle" font-size="12">{}</text>"##,
            MT + ph,
            MT + ph + 16.0,
            fmt_tick(x, xs)
        );
        x += xs;
    }
    let ys = nice_step(y1 - y0);
    let mut y = y0;
    while y <= y1 + ys * 1e-6 {
        let py = sy(y);
        let _ = writeln!(
            out,
            r##"<line x1="{:.1}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end" font-size="12">{}</text>"##,
            ox + ML,
            ox + ML + pw,
            ox + ML - 6.0,
            py + 4.0,
            fmt_tick(y, ys)
        );
        y += ys;
    }
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="13">{}</text>"#,
        ox + ML + pw / 2.0,
        H - 14.0,
        esc(&p.x_label)
    );
    let (lx, ly) = (ox + 18.0, MT + ph / 2.0);
    let _ = writeln!(
        out,
        r#"<text x="{lx:.1}" y="{ly:.1}" text-anchor="middle" font-size="13" transform="rotate(-90 {lx:.1} {ly:.1})">{}</text>"#,
        esc(&p.y_label)
    );
    // Series.
    for s in &p.series {
        let path: Vec<String> = s
            .points
            .iter()
            .filter(|q| q.0.is_finite() && q.1.is_finite())
            .map(|&(x, y)| format!("{:.1},{:.1}", sx(x), sy(y)))
            .collect();
        let dash = if s.style == Style::Analysis { r#" stroke-dasharray="6 4""# } else { "" };
        let _ = writeln!(
            out,
            r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="1.8"{dash}/>"#,
            path.join(" "),
            s.color
        );
        if s.style == Style::Measured {
            for q in &path {
                let (cx, cy) = q.split_once(',').expect("formatted as x,y");
                let _ =
                    writeln!(out, r#"<circle cx="{cx}" cy="{cy}" r="2.6" fill="{}"/>"#, s.color);
            }
        }
    }
    // Legend, top left inside the plot.
    let lw = 14.0 + 7.2 * p.series.iter().map(|s| s.name.len()).max().unwrap_or(0) as f64 + 30.0;
    let lh = 8.0 + 17.0 * p.series.len() as f64;
    let (bx, by) = match p.legend {
        Corner::TopLeft => (ox + ML + 8.0, MT + 8.0),
        Corner::BottomRight => (ox + ML + pw - 8.0 - lw, MT + ph - 8.0 - lh),
    };
    let _ = writeln!(
        out,
        r##"<rect x="{bx:.1}" y="{by:.1}" width="{lw:.1}" height="{lh:.1}" fill="white" fill-opacity="0.85" stroke="#999"/>"##
    );
    for (i, s) in p.series.iter().enumerate() {
        let y = by + 14.0 + 17.0 * i as f64;
        let x = bx + 8.0;
        let dash = if s.style == Style::Analysis { r#" stroke-dasharray="6 4""# } else { "" };
        let _ = writeln!(
            out,
            r#"<line x1="{x:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{}" stroke-width="2"{dash}/><text x="{:.1}" y="{y:.1}" font-size="12">{}</text>"#,
            y - 4.0,
            x + 24.0,
            y - 4.0,
            s.color,
            x + 30.0,
            esc(&s.name)
        );
    }
}

/// A figure: a caption line and panels side by side.
pub fn render(caption: &str, panels: &[Panel]) -> String {
    let width = W * panels.len() as f64;
    let height = H + 28.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="Helvetica, Arial, sans-serif">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    for (i, p) in panels.iter().enumerate() {
        panel(&mut out, p, W * i as f64);
    }
    let _ = writeln!(
        out,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="12" fill="#444">{}</text>"##,
        width / 2.0,
        H + 18.0,
        esc(caption)
    );
    out.push_str("</svg>\n");
    out
}
