//! Styled text as signal-cli's text styles.
//!
//! `send` takes `textStyle`, a list of `"start:length:STYLE"` strings with
//! STYLE one of BOLD, ITALIC, SPOILER, STRIKETHROUGH, MONOSPACE, and start
//! and length in UTF-16 code units (signal-cli(1), `--text-style`). Signal
//! lets styles overlap freely, so every span maps as it is: code and code
//! blocks are MONOSPACE. Links and quotes never reach here as spans: the
//! Signal flavor spells them out in the text.

use passepartout_gateway::markup::{Style, Styled, utf16_ranges};

/// The `textStyle` list of `styled`, in span order.
pub fn text_styles(styled: &Styled) -> Vec<String> {
    let (ranges, names): (Vec<_>, Vec<_>) = styled
        .spans
        .iter()
        .filter_map(|span| Some((span.range.clone(), name(&span.style)?)))
        .unzip();
    utf16_ranges(&styled.text, &ranges)
        .into_iter()
        .zip(names)
        .map(|(units, name)| format!("{}:{}:{name}", units.start, units.len()))
        .collect()
}

/// Signal's name of `style`; `None` for what Signal cannot show as a style.
fn name(style: &Style) -> Option<&'static str> {
    match style {
        Style::Bold => Some("BOLD"),
        Style::Italic => Some("ITALIC"),
        Style::Strikethrough => Some("STRIKETHROUGH"),
        Style::Code | Style::Pre { .. } => Some("MONOSPACE"),
        Style::Link { .. } | Style::Blockquote => None,
    }
}

#[cfg(test)]
mod tests {
    use passepartout_gateway::markup::{Flavor, render};

    use super::*;

    #[test]
    fn styles_count_utf16_units() {
        let styled = render("😀 中 **bold _both_** ~~x~~ `c`", Flavor::SPELLED);
        assert_eq!(styled.text, "😀 中 bold both x c");
        assert_eq!(
            text_styles(&styled),
            ["5:9:BOLD", "10:4:ITALIC", "15:1:STRIKETHROUGH", "17:1:MONOSPACE"]
        );
    }

    #[test]
    fn links_and_quotes_are_text_not_styles() {
        let styled = render("> see [docs](https://e.com)", Flavor::SPELLED);
        assert_eq!(styled.text, "> see docs (https://e.com)");
        assert!(text_styles(&styled).is_empty());
    }
}
