//! HTML escaping of everything a page shows that is not the page's own
//! markup: names, errors, user agents all come from elsewhere.

use std::fmt;

/// `text` made safe inside an element or a quoted attribute.
pub fn html(text: &str) -> String {
    html_escape::encode_quoted_attribute(text).into_owned()
}

/// A value shown in a page, escaped when formatted.
pub struct Escaped<'a>(pub &'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&html(self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_quotes_are_escaped() {
        assert_eq!(
            html(r#"<script>alert("x") & 'y'</script>"#),
            "&lt;script&gt;alert(&quot;x&quot;) &amp; &#x27;y&#x27;&lt;/script&gt;"
        );
        assert_eq!(Escaped("a<b").to_string(), "a&lt;b");
    }

    #[test]
    fn plain_text_is_unchanged() {
        assert_eq!(html("telegram up — 3 pending"), "telegram up — 3 pending");
    }
}
