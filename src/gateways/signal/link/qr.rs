//! The link URI as a QR code a phone can scan off the terminal.
//!
//! The `qrcode` crate draws it in Unicode half blocks (two rows of modules
//! per line, so it stays square in a terminal's tall cells), with the
//! quiet zone scanners need. Terminals are mostly light text on a dark
//! background, so the light modules are drawn as blocks and the dark ones
//! left blank: on such a terminal the code reads dark on light, as printed.
//! For a page, [`qr_svg`] draws it as SVG, dark on light.

use qrcode::QrCode;
use qrcode::render::unicode::Dense1x2;
use thiserror::Error;

/// The text was too long for a QR code (a link URI never is).
#[derive(Debug, Error)]
#[error("cannot draw the link as a QR code: {0}")]
pub struct QrError(#[from] qrcode::types::QrError);

/// `text` as a QR code in Unicode half blocks, one line per two rows of modules.
pub fn qr_block(text: &str) -> Result<String, QrError> {
    let code = QrCode::new(text.as_bytes())?;
    Ok(code
        .render::<Dense1x2>()
        .dark_color(Dense1x2::Light)
        .light_color(Dense1x2::Dark)
        .quiet_zone(true)
        .build())
}

/// `text` as a QR code in SVG (dark modules on a light ground, with the
/// quiet zone), for a page to show inline: no script, no style.
pub fn qr_svg(text: &str) -> Result<String, QrError> {
    let code = QrCode::new(text.as_bytes())?;
    let svg = code
        .render::<qrcode::render::svg::Color<'_>>()
        .min_dimensions(240, 240)
        .quiet_zone(true)
        .build();
    // The XML declaration has no place inside a page.
    Ok(match svg.find("<svg") {
        Some(at) => svg[at..].to_owned(),
        None => svg,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_uri_draws_as_an_svg_without_script_or_style() {
        let svg = qr_svg("sgnl://linkdevice?uuid=abc&pub_key=def").unwrap();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"), "{svg}");
        assert!(!svg.contains("<script") && !svg.contains("style="), "{svg}");
    }

    #[test]
    fn a_link_uri_draws_as_a_square_block_of_half_blocks() {
        let uri = "sgnl://linkdevice?uuid=0123456789abcdef&pub_key=BXl0dGVzIG9mIGEga2V5IHRoYXQgaXMgbG9uZyBlbm91Z2g";
        let block = qr_block(uri).unwrap();
        let lines: Vec<&str> = block.lines().collect();
        let width = lines[0].chars().count();
        assert!(
            lines.iter().all(|line| line.chars().count() == width),
            "every line as wide"
        );
        // Two rows of modules a line: about half as many lines as columns.
        assert!(
            lines.len() * 2 >= width && lines.len() * 2 <= width + 1,
            "{} x {width}",
            lines.len()
        );
        assert!(
            block.chars().all(|c| matches!(c, ' ' | '█' | '▀' | '▄' | '\n')),
            "only half blocks"
        );
        // The quiet zone (light) is drawn as blocks around the code.
        assert!(lines[0].chars().all(|c| c == '█'), "{}", lines[0]);
    }
}
