//! Bar charts drawn on the server as inline SVG: no script, no library,
//! nothing from elsewhere. The page's Content-Security-Policy refuses
//! `style` attributes, so every colour comes from a class the stylesheet
//! fills (`.chart .seg-in`, …) and every position from SVG's own attributes.
//! Each bar is tokens in and out stacked, the consensus voters' part of
//! each in a paler shade, and carries a `<title>` a browser shows on
//! hovering; every label is escaped.

use std::fmt::Write as _;

use crate::escape::Escaped;

/// The classes of a bar's four parts, bottom up, and what each is.
pub const SEGMENTS: [(&str, &str); 4] = [
    ("seg-in", "tokens in"),
    ("seg-in-votes", "tokens in, consensus votes"),
    ("seg-out", "tokens out"),
    ("seg-out-votes", "tokens out, consensus votes"),
];

/// One bar: its label, and tokens in and out with the voters' share.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bar {
    /// What the bar stands for (a day, a provider).
    pub label: String,
    /// Tokens read.
    pub tokens_in: u64,
    /// Tokens written.
    pub tokens_out: u64,
    /// Of the tokens read, the voters'.
    pub votes_in: u64,
    /// Of the tokens written, the voters'.
    pub votes_out: u64,
}

impl Bar {
    fn total(&self) -> u64 {
        self.tokens_in.saturating_add(self.tokens_out)
    }

    /// The four parts' sizes in [`SEGMENTS`]' order.
    fn parts(&self) -> [u64; 4] {
        let votes_in = self.votes_in.min(self.tokens_in);
        let votes_out = self.votes_out.min(self.tokens_out);
        [
            self.tokens_in - votes_in,
            votes_in,
            self.tokens_out - votes_out,
            votes_out,
        ]
    }

    /// What hovering the bar says.
    fn title(&self) -> String {
        let votes = if self.votes_in + self.votes_out > 0 {
            format!(
                " (consensus votes: {} in, {} out)",
                grouped(self.votes_in),
                grouped(self.votes_out)
            )
        } else {
            String::new()
        };
        format!(
            "{}: {} tokens in, {} out{votes}",
            self.label,
            grouped(self.tokens_in),
            grouped(self.tokens_out)
        )
    }
}

/// Columns, one per bar left to right (days): `caption` names the chart
/// for screen readers; a chart with nothing to show is `empty`, a sentence.
pub fn columns(caption: &str, bars: &[Bar], empty: &str) -> String {
    const WIDTH: u64 = 720;
    const HEIGHT: u64 = 220;
    const LEFT: u64 = 56;
    const BOTTOM: u64 = 24;
    const TOP: u64 = 8;
    // Room for the newest day's label, centred under its column.
    const RIGHT: u64 = 24;
    let Some(top) = scale(bars) else {
        return format!(r#"<p class="meta">{}</p>"#, Escaped(empty));
    };
    let plot = HEIGHT - BOTTOM - TOP;
    let slot = (WIDTH - LEFT - RIGHT) as f64 / bars.len() as f64;
    let mut svg = open(caption, WIDTH, HEIGHT);
    for step in [0, top / 2, top] {
        let y = TOP + plot - plot * step / top;
        let _ = write!(
            svg,
            r#"<line class="grid" x1="{LEFT}" y1="{y}" x2="{}" y2="{y}"/><text class="axis" x="{}" y="{}" text-anchor="end">{}</text>"#,
            WIDTH - RIGHT,
            LEFT - 6,
            y + 4,
            short(step)
        );
    }
    // About eight labels under the axis, whatever the number of days,
    // counted from the last: the newest bar is always labelled.
    let every = bars.len().div_ceil(8).max(1);
    for (i, bar) in bars.iter().enumerate() {
        let x = LEFT as f64 + slot * i as f64 + slot * 0.15;
        let width = (slot * 0.7).max(1.0);
        let _ = write!(svg, "<g><title>{}</title>", Escaped(&bar.title()));
        let mut bottom = (TOP + plot) as f64;
        for ((class, _), part) in SEGMENTS.iter().zip(bar.parts()) {
            if part == 0 {
                continue;
            }
            let height = plot as f64 * part as f64 / top as f64;
            bottom -= height;
            let _ = write!(
                svg,
                r#"<rect class="{class}" x="{x:.1}" y="{bottom:.1}" width="{width:.1}" height="{height:.1}"/>"#
            );
        }
        svg += "</g>";
        if (bars.len() - 1 - i).is_multiple_of(every) {
            let _ = write!(
                svg,
                r#"<text class="axis" x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
                x + width / 2.0,
                HEIGHT - 6,
                Escaped(&bar.label)
            );
        }
    }
    svg + "</svg>"
}

/// Rows, one per bar top to bottom (providers, conversations), each with
/// its label on the left and its total on the right.
pub fn rows(caption: &str, bars: &[Bar], empty: &str) -> String {
    const WIDTH: u64 = 720;
    const LABEL: u64 = 210;
    const VALUE: u64 = 80;
    const ROW: u64 = 24;
    let Some(top) = scale(bars) else {
        return format!(r#"<p class="meta">{}</p>"#, Escaped(empty));
    };
    let plot = (WIDTH - LABEL - VALUE) as f64;
    let height = ROW * bars.len() as u64 + 4;
    let mut svg = open(caption, WIDTH, height);
    for (i, bar) in bars.iter().enumerate() {
        let y = ROW * i as u64 + 2;
        let _ = write!(
            svg,
            r#"<g><title>{}</title><text class="label" x="{}" y="{}" text-anchor="end">{}</text>"#,
            Escaped(&bar.title()),
            LABEL - 8,
            y + 15,
            Escaped(&clipped(&bar.label, 30))
        );
        let mut x = LABEL as f64;
        for ((class, _), part) in SEGMENTS.iter().zip(bar.parts()) {
            if part == 0 {
                continue;
            }
            let width = plot * part as f64 / top as f64;
            let _ = write!(
                svg,
                r#"<rect class="{class}" x="{x:.1}" y="{}" width="{width:.1}" height="{}"/>"#,
                y + 3,
                ROW - 8
            );
            x += width;
        }
        let _ = write!(
            svg,
            r#"<text class="axis" x="{:.1}" y="{}">{}</text></g>"#,
            x + 6.0,
            y + 15,
            short(bar.total())
        );
    }
    svg + "</svg>"
}

/// The top of the scale: the largest bar rounded up to 1, 2 or 5 times a
/// power of ten; none when no bar has any tokens.
fn scale(bars: &[Bar]) -> Option<u64> {
    let largest = bars.iter().map(Bar::total).max().filter(|largest| *largest > 0)?;
    let mut power = 1u64;
    loop {
        for step in [1, 2, 5] {
            let top = power.saturating_mul(step);
            if top >= largest || top == u64::MAX {
                return Some(top);
            }
        }
        power = power.saturating_mul(10);
    }
}

fn open(caption: &str, width: u64, height: u64) -> String {
    format!(
        r#"<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" aria-label="{caption}" xmlns="http://www.w3.org/2000/svg"><title>{caption}</title>"#,
        caption = Escaped(caption)
    )
}

/// What the colours mean: once on a page of charts.
pub fn legend() -> String {
    let mut out = String::from(r#"<ul class="legend">"#);
    for (class, meaning) in SEGMENTS {
        let _ = write!(
            out,
            r#"<li><svg class="chart" width="12" height="12" aria-hidden="true"><rect class="{class}" width="12" height="12"/></svg> {meaning}</li>"#
        );
    }
    out + "</ul>"
}

/// A number of tokens, short: 950, 12.3k, 4.5M.
pub fn short(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => trimmed(n as f64 / 1e3, "k"),
        1_000_000..1_000_000_000 => trimmed(n as f64 / 1e6, "M"),
        _ => trimmed(n as f64 / 1e9, "G"),
    }
}

fn trimmed(value: f64, unit: &str) -> String {
    let text = format!("{value:.1}");
    format!("{}{unit}", text.strip_suffix(".0").unwrap_or(&text))
}

/// A number with its thousands apart: 1 234 567.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push('\u{202f}');
        }
        out.push(digit);
    }
    out
}

fn clipped(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(label: &str, tokens_in: u64, tokens_out: u64) -> Bar {
        Bar {
            label: label.into(),
            tokens_in,
            tokens_out,
            ..Bar::default()
        }
    }

    #[test]
    fn no_data_is_a_sentence_not_an_empty_chart() {
        for bars in [vec![], vec![bar("2026-03-01", 0, 0)]] {
            let html = columns("Tokens per day", &bars, "No tokens used <yet>.");
            assert_eq!(html, r#"<p class="meta">No tokens used &lt;yet&gt;.</p>"#);
            assert!(rows("Per provider", &bars, "None.").starts_with("<p"));
        }
    }

    #[test]
    fn one_day_is_one_full_height_column_with_its_parts_stacked() {
        let day = Bar {
            label: "03-03".into(),
            tokens_in: 150,
            tokens_out: 50,
            votes_in: 50,
            votes_out: 0,
        };
        let svg = columns("Tokens per day", &[day], "none");
        assert!(svg.starts_with(r#"<svg class="chart""#), "{svg}");
        assert_eq!(svg.matches("<rect").count(), 3, "three parts");
        assert!(svg.contains(r#"<rect class="seg-in" x="#), "{svg}");
        assert!(svg.contains(r#"class="seg-in-votes""#), "{svg}");
        assert!(
            !svg.contains(r#"<rect class="seg-out-votes" x="#),
            "an empty part is not drawn"
        );
        // 200 tokens on a scale to 200: the parts fill the plot's 188 units.
        assert!(svg.contains(r#"height="94.0"/>"#), "100 of 200 is half: {svg}");
        assert!(svg.contains("<title>03-03: 150 tokens in, 50 out (consensus votes: 50 in, 0 out)</title>"));
        assert!(svg.contains(">200</text>"), "the scale's top is labelled: {svg}");
        assert!(!svg.contains("style="), "the CSP refuses style attributes");
    }

    #[test]
    fn labels_are_escaped() {
        let hostile = bar(r#"<script>alert("x")</script>"#, 3, 1);
        for svg in [
            rows("Per conversation <b>", std::slice::from_ref(&hostile), "none"),
            columns("Per day", std::slice::from_ref(&hostile), "none"),
        ] {
            assert!(!svg.contains("<script>") && !svg.contains("<b>"), "{svg}");
            assert!(svg.contains("&lt;script&gt;"), "{svg}");
        }
    }

    #[test]
    fn the_newest_column_is_always_labelled_and_the_legend_names_every_part() {
        let days: Vec<Bar> = (1..=30).map(|d| bar(&format!("d{d}"), d, 0)).collect();
        let svg = columns("Per day", &days, "none");
        assert!(svg.contains(">d30</text>"), "{svg}");
        assert_eq!(svg.matches(r#"text-anchor="middle""#).count(), 8, "{svg}");
        let legend = legend();
        for (class, meaning) in SEGMENTS {
            assert!(legend.contains(class) && legend.contains(meaning), "{legend}");
        }
    }

    #[test]
    fn scales_and_numbers_read_round() {
        assert_eq!(scale(&[bar("a", 7, 0)]), Some(10));
        assert_eq!(scale(&[bar("a", 120, 30)]), Some(200));
        assert_eq!(scale(&[bar("a", 3_000, 0)]), Some(5_000));
        assert_eq!(short(950), "950");
        assert_eq!(short(12_345), "12.3k");
        assert_eq!(short(2_000_000), "2M");
        assert_eq!(grouped(1_234_567), "1\u{202f}234\u{202f}567");
    }
}
