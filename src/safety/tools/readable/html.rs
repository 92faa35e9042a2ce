//! An HTML page as Markdown for the model: the main article picked out by
//! a port of Mozilla's Readability (`dom_smoothie`, the algorithm behind
//! Firefox's reader view), with its headings, lists, links and tables kept
//! as Markdown. A page that is not an article (a front page, a search
//! result list) is converted whole instead, less what is never content:
//! scripts, styles, navigation, headers, footers and forms.

use dom_query::Document;
use dom_smoothie::{Config, Readability, TextMode};
use reqwest::Url;

/// What is left out of a page converted whole.
const NOT_CONTENT: &str = "script, style, noscript, template, svg, canvas, iframe, nav, header, footer, aside, form, \
                           button, [role=navigation], [aria-hidden=true]";

/// Below this many characters, an "article" is more likely a fragment the
/// algorithm settled on than the page's content.
const MIN_ARTICLE_CHARS: usize = 200;

/// How the page became text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Picked {
    /// The main article alone.
    Article,
    /// The whole page, less navigation and the like.
    WholePage,
}

/// A page as Markdown, its title first.
#[derive(Debug)]
pub struct Markdown {
    pub text: String,
    pub picked: Picked,
}

/// Converts `html`, found at `url` (links in it are made absolute to it).
pub fn to_markdown(html: &str, url: &str) -> Markdown {
    if let Some(article) = article(html, url) {
        return article;
    }
    whole_page(html, url)
}

fn article(html: &str, url: &str) -> Option<Markdown> {
    let config = Config {
        text_mode: TextMode::Markdown,
        ..Config::default()
    };
    let mut readability = Readability::new(html, Some(url), Some(config)).ok()?;
    let article = readability.parse().ok()?;
    let body = article.text_content.trim();
    if body.chars().count() < MIN_ARTICLE_CHARS {
        return None;
    }
    let mut text = String::with_capacity(body.len() + 256);
    let title = article.title.trim();
    if !title.is_empty() && !body.starts_with("# ") {
        text.push_str(&format!("# {title}\n\n"));
    }
    if let Some(byline) = article.byline.as_deref().map(str::trim).filter(|b| !b.is_empty()) {
        text.push_str(&format!("{byline}\n\n"));
    }
    text.push_str(body);
    Some(Markdown {
        text,
        picked: Picked::Article,
    })
}

fn whole_page(html: &str, url: &str) -> Markdown {
    let document = Document::from(html);
    let title = document.select("head title").text().trim().to_owned();
    document.select(NOT_CONTENT).remove();
    // Links the model can follow: absolute, as the article's are made.
    if let Ok(base) = Url::parse(url) {
        for link in document.select("a[href]").iter() {
            if let Some(absolute) = link.attr("href").and_then(|href| base.join(href.trim()).ok()) {
                link.set_attr("href", absolute.as_str());
            }
        }
    }
    let body = match document.select("body").nodes().first() {
        Some(body) => body.md(None),
        None => document.md(None),
    };
    let body = body.trim();
    let text = if title.is_empty() || body.starts_with("# ") {
        body.to_owned()
    } else {
        format!("# {title}\n\n{body}")
    };
    Markdown {
        text,
        picked: Picked::WholePage,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const URL: &str = "https://example.com/news/story.html";

    #[test]
    fn an_article_keeps_its_structure_and_loses_the_rest() {
        let paragraph = "This paragraph is long enough to look like the body of an article, with words \
                         and punctuation, the way a real story reads.";
        let html = format!(
            "<html><head><title>The story</title><style>.nav {{ color: red }}</style>\
             <script>var tracking = 1;</script></head><body>\
             <nav><a href=\"/\">Home</a> <a href=\"/about\">About</a></nav>\
             <article><h1>The story</h1><h2>First part</h2><p>{paragraph}</p>\
             <ul><li>one point</li><li>another point</li></ul>\
             <p>{paragraph} See <a href=\"/more\">the follow-up</a>.</p><p>{paragraph}</p></article>\
             <footer>Copyright</footer></body></html>"
        );
        let page = to_markdown(&html, URL);
        assert_eq!(page.picked, Picked::Article);
        assert!(page.text.contains("First part"), "{}", page.text);
        assert!(
            page.text.contains("the follow-up](https://example.com/more)"),
            "{}",
            page.text
        );
        assert!(
            page.text.contains("- one point") || page.text.contains("* one point"),
            "{}",
            page.text
        );
        for gone in ["color: red", "tracking", "Copyright", "About"] {
            assert!(!page.text.contains(gone), "{gone} in {}", page.text);
        }
    }

    #[test]
    fn a_page_without_an_article_is_converted_whole_without_navigation() {
        let html = "<html><head><title>Links</title><script>x()</script></head><body>\
                    <nav>Menu</nav><h2>Today</h2><p><a href=\"https://a.example/\">A</a> <a href=\"b.html\">B</a></p></body></html>";
        let page = to_markdown(html, URL);
        assert_eq!(page.picked, Picked::WholePage);
        assert!(page.text.starts_with("# Links"), "{}", page.text);
        assert!(page.text.contains("## Today"), "{}", page.text);
        assert!(page.text.contains("[A](https://a.example/)"), "{}", page.text);
        assert!(
            page.text.contains("[B](https://example.com/news/b.html)"),
            "{}",
            page.text
        );
        assert!(
            !page.text.contains("Menu") && !page.text.contains("x()"),
            "{}",
            page.text
        );
    }
}
