//! Records what happened to each lease, prints it as a readable timeline, and draws it as SVG.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// A lease was granted (with its expiration).
    Granted,
    /// A lease was renewed (with its new expiration).
    Renewed,
    /// A grant or renewal was denied.
    Denied,
    /// The holder cancelled the lease.
    Cancelled,
    /// The landlord found the lease expired.
    Expired,
    /// The holder stopped (crashed, went away) without cancelling.
    Stopped,
    /// The holder was told its renewals failed.
    Failed,
    /// Anything else worth a line.
    Note,
}

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Kind::Granted => "granted",
            Kind::Renewed => "renewed",
            Kind::Denied => "DENIED",
            Kind::Cancelled => "cancelled",
            Kind::Expired => "EXPIRED",
            Kind::Stopped => "stopped",
            Kind::Failed => "FAILED",
            Kind::Note => "note",
        }
    }
    fn color(self) -> &'static str {
        match self {
            Kind::Granted => "#2b8a3e",
            Kind::Renewed => "#1c7ed6",
            Kind::Denied => "#c92a2a",
            Kind::Cancelled => "#5f3dc4",
            Kind::Expired => "#e8590c",
            Kind::Stopped => "#495057",
            Kind::Failed => "#c92a2a",
            Kind::Note => "#868e96",
        }
    }
}

/// One entry of the timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Milliseconds since the start of the run.
    pub at: i64,
    /// Which holder or lease (one lane per name).
    pub who: String,
    /// What happened.
    pub kind: Kind,
    /// The lease's expiration after the event, in ms since the start, if it has one.
    pub until: Option<i64>,
    /// Free text.
    pub detail: String,
}

/// An append-only list of entries.
#[derive(Debug, Default, Clone)]
pub struct Timeline {
    entries: Vec<Entry>,
}

impl Timeline {
    /// An empty timeline.
    pub fn new() -> Timeline {
        Timeline::default()
    }

    /// Adds an entry and returns its printed line.
    pub fn record(
        &mut self,
        at: i64,
        who: &str,
        kind: Kind,
        until: Option<i64>,
        detail: impl Into<String>,
    ) -> String {
        let e = Entry { at, who: who.to_string(), kind, until, detail: detail.into() };
        let line = format_line(&e);
        self.entries.push(e);
        line
    }

    /// Every entry, in the order recorded.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// How many entries of `kind` concern `who`.
    pub fn count(&self, who: &str, kind: Kind) -> usize {
        self.entries.iter().filter(|e| e.who == who && e.kind == kind).count()
    }

    /// Counts per kind, for a summary.
    pub fn totals(&self) -> BTreeMap<Kind, usize> {
        let mut m = BTreeMap::new();
        for e in &self.entries {
            *m.entry(e.kind).or_insert(0) += 1;
        }
        m
    }

    /// The timeline as an SVG chart: one lane per holder, a bar for each period the holder
    /// held a lease, a tick for each event.
    pub fn to_svg(&self, title: &str) -> String {
        let mut lanes: Vec<String> = Vec::new();
        for e in &self.entries {
            if !lanes.contains(&e.who) {
                lanes.push(e.who.clone());
            }
        }
        let end = self
            .entries
            .iter()
            .map(|e| e.at.max(e.until.unwrap_or(0).min(e.at + 60_000)))
            .max()
            .unwrap_or(1)
            .max(1);
        let (left, top, lane_h, width) = (150.0, 50.0, 34.0, 900.0);
        let height = top + lane_h * lanes.len() as f64 + 80.0;
        let x = |t: i64| left + (t.max(0) as f64) / (end as f64) * width;
        let mut s = String::new();
        let _ = write!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{height}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="{left}" y="24" font-size="16" font-weight="bold">{title}</text>
"#,
            w = left + width + 40.0,
            title = xml_escape(title)
        );
        // Time axis.
        let axis_y = top + lane_h * lanes.len() as f64 + 10.0;
        let _ = writeln!(
            s,
            r##"<line x1="{left}" y1="{axis_y}" x2="{r}" y2="{axis_y}" stroke="#333"/>"##,
            r = left + width
        );
        let step = nice_step(end);
        let mut t = 0;
        while t <= end {
            let _ = writeln!(
                s,
                r##"<line x1="{xx}" y1="{axis_y}" x2="{xx}" y2="{y2}" stroke="#333"/><text x="{xx}" y="{ty}" text-anchor="middle">{label}</text>"##,
                xx = x(t),
                y2 = axis_y + 5.0,
                ty = axis_y + 18.0,
                label = format_secs(t)
            );
            t += step;
        }
        let _ = writeln!(
            s,
            r#"<text x="{cx}" y="{ty}" text-anchor="middle">time since start (s)</text>"#,
            cx = left + width / 2.0,
            ty = axis_y + 38.0
        );
        for (i, lane) in lanes.iter().enumerate() {
            let y = top + lane_h * i as f64;
            let _ = writeln!(
                s,
                r#"<text x="{lx}" y="{ty}" text-anchor="end">{name}</text>"#,
                lx = left - 8.0,
                ty = y + lane_h / 2.0 + 4.0,
                name = xml_escape(lane)
            );
            // Bars: from each grant/renewal to the next event of the lane or its expiration.
            let evs: Vec<&Entry> = self.entries.iter().filter(|e| &e.who == lane).collect();
            // A bar runs to the next event that changes the lease (a note or a crash does
            // not: the landlord still holds the lease); after a crash it is drawn greyed.
            for (k, e) in evs.iter().enumerate() {
                if let (Kind::Granted | Kind::Renewed, Some(until)) = (e.kind, e.until) {
                    let later = &evs[k + 1..];
                    let stop = later
                        .iter()
                        .find(|n| !matches!(n.kind, Kind::Note | Kind::Stopped))
                        .map(|n| n.at.min(until))
                        .unwrap_or(until)
                        .min(end);
                    let crash = later.iter().find(|n| n.kind == Kind::Stopped).map(|n| n.at);
                    let mid = crash.filter(|&c| c < stop).unwrap_or(stop);
                    for (a, b, fill) in [(e.at, mid, "#a5d8ff"), (mid, stop, "#dee2e6")] {
                        if b > a {
                            let _ = writeln!(
                                s,
                                r##"<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="{fill}" stroke="#1c7ed6" stroke-width="0.5"/>"##,
                                x0 = x(a),
                                y0 = y + 8.0,
                                w = (x(b) - x(a)).max(1.0),
                                h = lane_h - 16.0
                            );
                        }
                    }
                }
            }
            for e in &evs {
                let _ = writeln!(
                    s,
                    r#"<line x1="{xx}" y1="{y0}" x2="{xx}" y2="{y1}" stroke="{c}" stroke-width="2"><title>{label} at {at} ms {d}</title></line>"#,
                    xx = x(e.at),
                    y0 = y + 4.0,
                    y1 = y + lane_h - 4.0,
                    c = e.kind.color(),
                    label = e.kind.label(),
                    at = e.at,
                    d = xml_escape(&e.detail)
                );
            }
        }
        // Legend.
        let ly = axis_y + 56.0;
        for (i, k) in [
            Kind::Granted,
            Kind::Renewed,
            Kind::Cancelled,
            Kind::Expired,
            Kind::Denied,
            Kind::Stopped,
        ]
        .iter()
        .enumerate()
        {
            let lx = left + 110.0 * i as f64;
            let _ = writeln!(
                s,
                r#"<rect x="{lx}" y="{ry}" width="12" height="12" fill="{c}"/><text x="{tx}" y="{ty}">{l}</text>"#,
                ry = ly - 10.0,
                c = k.color(),
                tx = lx + 16.0,
                ty = ly,
                l = k.label()
            );
        }
        s.push_str("</svg>\n");
        s
    }
}

fn nice_step(end: i64) -> i64 {
    for step in [100, 200, 500, 1_000, 2_000, 5_000, 10_000, 30_000, 60_000] {
        if end / step <= 12 {
            return step;
        }
    }
    600_000
}

fn format_secs(ms: i64) -> String {
    if ms % 1000 == 0 {
        format!("{}", ms / 1000)
    } else {
        format!("{:.1}", ms as f64 / 1000.0)
    }
}

fn format_line(e: &Entry) -> String {
    let until = match e.until {
        Some(u) if u == i64::MAX => " until FOREVER".to_string(),
        Some(u) => format!(" until {:>7.3}s", u as f64 / 1000.0),
        None => String::new(),
    };
    format!(
        "{:>8.3}s  {:<14} {:<10}{}{}{}",
        e.at as f64 / 1000.0,
        e.who,
        e.kind.label(),
        until,
        if e.detail.is_empty() { "" } else { "  " },
        e.detail
    )
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_and_draws() {
        let mut t = Timeline::new();
        let line = t.record(1500, "holder-1", Kind::Granted, Some(3500), "2000 ms");
        assert!(line.contains("holder-1") && line.contains("granted"));
        t.record(3500, "holder-1", Kind::Expired, None, "");
        assert_eq!(t.count("holder-1", Kind::Expired), 1);
        let svg = t.to_svg("demo <1>");
        assert!(svg.starts_with("<svg") && svg.contains("holder-1") && svg.contains("&lt;1&gt;"));
        assert!(svg.contains("time since start (s)"));
    }
}
