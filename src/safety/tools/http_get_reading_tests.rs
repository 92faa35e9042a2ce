//! Tests for what `http_get` makes of what it downloads: an article page
//! read past its styles, legacy charsets, JSON, PDFs, plain text, and a
//! long page read a page at a time with `start`. Served by a real HTTP
//! server on 127.0.0.1:0 (private addresses allowed for the test).

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::http::{Uri, header};
use axum::response::IntoResponse;
use serde_json::json;

use super::*;
use crate::config::DEFAULT_OUTPUT_CAP_BYTES;
use crate::safety::tools::{ToolBox, readable, testing};

/// `(content type, body)` by path.
type Pages = HashMap<&'static str, (&'static str, Vec<u8>)>;

async fn serve(pages: Pages) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let pages = Arc::new(pages);
    let app = Router::new().fallback(move |uri: Uri| {
        let pages = pages.clone();
        async move {
            let (content_type, body) = pages.get(uri.path()).cloned().expect("a page the test serves");
            ([(header::CONTENT_TYPE, content_type)], body).into_response()
        }
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://127.0.0.1:{port}")
}

fn config() -> HttpGetConfig {
    HttpGetConfig {
        allow_private: true,
        ..HttpGetConfig::default()
    }
}

/// The tool in a tool box with the default output cap, as the model meets it.
fn toolbox(config: &HttpGetConfig) -> ToolBox {
    ToolBox::new([Arc::new(HttpGet::new(config).unwrap()) as Arc<dyn Tool>])
}

async fn get(tools: &ToolBox, url: &str, start: usize) -> Result<String, ToolError> {
    tools
        .call_parsed(&testing::context(), "http_get", json!({ "url": url, "start": start }))
        .await
}

/// The `start` a result's note gives for the rest, if it was cut.
fn next_start(output: &str) -> Option<usize> {
    let note = output.lines().last()?.strip_prefix("[cut at byte ")?;
    note.split_once(' ')?.0.parse().ok()
}

/// The text of a result, without its first line and its note.
fn text_of(output: &str) -> &str {
    let text = output.split_once('\n').map_or("", |(_, text)| text);
    match text.rfind("[cut at byte ") {
        Some(at) => &text[..at],
        None => text,
    }
}

/// A news article as such pages are: about 27 KB of inline CSS in `<head>`,
/// scripts, navigation, then forty paragraphs.
fn article_page() -> String {
    let css: String = (0..600)
        .map(|i| format!(".block-{i} {{ margin: {i}px; color: #abcdef; }}\n"))
        .collect();
    let paragraphs: String = (1..=40)
        .map(|i| {
            format!(
                "<p>Paragraph {i} of the story goes on about the harbour, the boats and the people who \
                 mend the nets there, and what they said about the winter storms and the price of fish.</p>\n"
            )
        })
        .collect();
    format!(
        "<!DOCTYPE html><html><head><title>The harbour in winter</title><style>{css}</style>\
         <script>window.tracking = {{ id: 42 }};</script></head><body>\
         <nav><a href=\"/\">Home</a> <a href=\"/sport\">Sport</a> <a href=\"/weather\">Weather</a></nav>\
         <article><h1>The harbour in winter</h1><h2>The boats</h2>{paragraphs}</article>\
         <footer>All rights reserved</footer></body></html>"
    )
}

#[tokio::test]
async fn an_article_reaches_the_model_without_its_styles() {
    let page = article_page();
    assert!(
        page.len() > 34_000 && page.find("Paragraph 1 ").unwrap() > 16 * 1024,
        "{}",
        page.len()
    );
    let base = serve(Pages::from([(
        "/article",
        ("text/html; charset=utf-8", page.into_bytes()),
    )]))
    .await;
    let tools = toolbox(&config());
    let url = format!("{base}/article");

    let first = get(&tools, &url, 0).await.unwrap();
    assert!(
        first.starts_with("HTTP 200, text/html, ")
            && first.lines().next().unwrap().contains("the main article as Markdown"),
        "{first}"
    );
    assert!(
        first.len() <= DEFAULT_OUTPUT_CAP_BYTES,
        "the tool box cut it: {}",
        first.len()
    );
    assert!(
        first.contains("# The harbour in winter") && first.contains("## The boats"),
        "{first}"
    );
    assert!(first.contains("Paragraph 1 of the story"), "{first}");
    let mut text = text_of(&first).to_owned();
    let mut start = next_start(&first);
    while let Some(at) = start {
        let more = get(&tools, &url, at).await.unwrap();
        assert!(more.len() <= DEFAULT_OUTPUT_CAP_BYTES, "{}", more.len());
        text.push_str(text_of(&more));
        start = next_start(&more);
    }
    for i in 1..=40 {
        let paragraph = format!("Paragraph {i} of the story");
        assert_eq!(text.matches(&paragraph).count(), 1, "{paragraph} in {text}");
    }
    for gone in ["margin:", "#abcdef", "tracking", "Sport", "All rights reserved"] {
        assert!(!text.contains(gone), "{gone} in {text}");
    }
}

#[tokio::test]
async fn legacy_charsets_are_decoded_from_the_header_or_the_page() {
    let (shift_jis, _, _) = encoding_rs::SHIFT_JIS.encode("日本語のページです。");
    let shift_jis = shift_jis.into_owned();
    let meta_page = |charset: &str, body: &[u8]| {
        let mut page = format!("<html><head><meta charset=\"{charset}\"><title>t</title></head><body><p>").into_bytes();
        page.extend_from_slice(body);
        page.extend_from_slice(b"</p></body></html>");
        page
    };
    let base = serve(Pages::from([
        (
            "/latin1-meta",
            ("text/html", meta_page("iso-8859-1", b"Caf\xe9 cr\xe8me br\xfbl\xe9e")),
        ),
        (
            "/latin1-header",
            ("text/plain; charset=ISO-8859-1", b"na\xefve fa\xe7ade".to_vec()),
        ),
        ("/sjis-meta", ("text/html", meta_page("Shift_JIS", &shift_jis))),
        ("/sjis-header", ("text/plain; charset=Shift_JIS", shift_jis.clone())),
    ]))
    .await;
    let tools = toolbox(&config());
    for (path, expected, note) in [
        (
            "/latin1-meta",
            "Café crème brûlée",
            "decoded from windows-1252 (declared in the page)",
        ),
        ("/latin1-header", "naïve façade", "decoded from windows-1252"),
        (
            "/sjis-meta",
            "日本語のページです。",
            "decoded from Shift_JIS (declared in the page)",
        ),
        ("/sjis-header", "日本語のページです。", "decoded from Shift_JIS"),
    ] {
        let output = get(&tools, &format!("{base}{path}"), 0).await.unwrap();
        assert!(output.contains(expected), "{path}: {output}");
        assert!(output.lines().next().unwrap().ends_with(note), "{path}: {output}");
        assert!(!output.contains('\u{FFFD}'), "{path}: {output}");
    }
}

#[tokio::test]
async fn json_is_pretty_printed_and_cut_between_lines() {
    let items: Vec<_> = (0..400)
        .map(|i| json!({ "id": i, "name": format!("item number {i}"), "tags": ["a", "b"] }))
        .collect();
    let body = serde_json::to_vec(&json!({ "items": items, "total": 400 })).unwrap();
    let base = serve(Pages::from([("/items", ("application/json", body.clone()))])).await;
    let tools = toolbox(&config());
    let url = format!("{base}/items");
    let pretty = serde_json::to_string_pretty(&json!({ "items": items, "total": 400 })).unwrap();

    let mut text = String::new();
    let mut start = Some(0);
    let mut pages = 0;
    while let Some(at) = start {
        let output = get(&tools, &url, at).await.unwrap();
        assert!(
            output.lines().next().unwrap().contains("JSON, pretty-printed"),
            "{output}"
        );
        let page = text_of(&output);
        start = next_start(&output);
        if start.is_some() {
            assert!(page.ends_with('\n'), "cut inside a line: {page:?}");
            assert!(output.lines().last().unwrap().contains(" (line "), "{output}");
        }
        text.push_str(page);
        pages += 1;
    }
    assert!(pages > 1, "{pages}");
    assert_eq!(text, pretty);
}

#[tokio::test]
async fn a_pdf_gives_its_text_up_to_the_page_cap() {
    let pdf = readable::testing::pdf(&["Quarterly report", "Revenue went up", "Costs went down"]);
    let base = serve(Pages::from([
        ("/report.pdf", ("application/pdf", pdf.clone())),
        ("/download", ("application/octet-stream", pdf)),
        (
            "/broken.pdf",
            ("application/pdf", b"%PDF-1.4\nnot really a PDF".to_vec()),
        ),
    ]))
    .await;
    let tools = toolbox(&config());
    let whole = get(&tools, &format!("{base}/report.pdf"), 0).await.unwrap();
    assert!(
        whole.lines().next().unwrap().ends_with("the PDF's text, 3 pages"),
        "{whole}"
    );
    for words in [
        "[page 1]\nQuarterly report",
        "Revenue went up",
        "[page 3]\nCosts went down",
    ] {
        assert!(whole.contains(words), "{words} in {whole}");
    }
    let served_as_bytes = get(&tools, &format!("{base}/download"), 0).await.unwrap();
    assert!(served_as_bytes.contains("Revenue went up"), "{served_as_bytes}");

    let capped = toolbox(&HttpGetConfig {
        max_pdf_pages: 2,
        ..config()
    });
    let first_two = get(&capped, &format!("{base}/report.pdf"), 0).await.unwrap();
    assert!(
        first_two.contains("its first 2 of 3 pages") && !first_two.contains("Costs"),
        "{first_two}"
    );

    let broken = get(&tools, &format!("{base}/broken.pdf"), 0).await;
    assert!(
        matches!(&broken, Err(ToolError::Failed(message)) if message.starts_with("the PDF cannot be read")),
        "{broken:?}"
    );
}

#[tokio::test]
async fn a_long_page_is_read_a_page_at_a_time_with_start() {
    let paragraph = |i: usize| format!("<p>Entry {i:05}: {}</p>\n", "words of the long page ".repeat(4));
    let body: String = (0..20_000).map(paragraph).collect();
    let page = format!("<html><head><title>Long</title></head><body><article>{body}</article></body></html>");
    assert!(page.len() > 2_000_000, "{}", page.len());
    let base = serve(Pages::from([("/long", ("text/html", page.into_bytes()))])).await;
    let tools = toolbox(&config());
    let url = format!("{base}/long");

    let first = get(&tools, &url, 0).await.unwrap();
    let second_start = next_start(&first).expect("cut");
    assert!(
        first
            .lines()
            .next()
            .unwrap()
            .contains(&format!("bytes 0–{second_start} of ")),
        "{first}"
    );
    assert!(
        first.contains("Entry 00000") && !first.contains("Entry 19999"),
        "{}",
        &first[..200]
    );
    let second = get(&tools, &url, second_start).await.unwrap();
    let third_start = next_start(&second).expect("cut");
    // The pages join up: no text lost or repeated between them.
    let last_entry = |text: &str| {
        text.rmatch_indices("Entry ")
            .next()
            .map(|(at, _)| text[at..at + 11].to_owned())
    };
    let first_of_second = text_of(&second)
        .split("Entry ")
        .nth(1)
        .map(|rest| format!("Entry {}", &rest[..5]));
    let after = |entry: String| entry[6..].parse::<usize>().unwrap();
    assert!(after(first_of_second.unwrap()) <= after(last_entry(text_of(&first)).unwrap()) + 1);
    assert!(third_start > second_start);

    let total: usize = first
        .lines()
        .next()
        .unwrap()
        .split(" of ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let last = get(&tools, &url, total - 500).await.unwrap();
    assert!(last.contains("Entry 19999") && next_start(&last).is_none(), "{last}");
    let past = get(&tools, &url, total + 1).await;
    assert!(
        matches!(past, Err(ToolError::InvalidArguments(ref m)) if m.contains("past the end")),
        "{past:?}"
    );
}

#[tokio::test]
async fn plain_text_comes_back_as_it_is() {
    let text = "# not a heading to rewrite\n<b>not markup either</b>\n  indented line\n";
    let base = serve(Pages::from([("/notes.txt", ("text/plain", text.as_bytes().to_vec()))])).await;
    let output = get(&toolbox(&config()), &format!("{base}/notes.txt"), 0).await.unwrap();
    assert_eq!(
        output,
        format!("HTTP 200, text/plain, {} bytes; text\n{text}", text.len())
    );
}

#[test]
fn the_default_page_fits_the_default_output_cap() {
    let defaults = crate::config::Config::default();
    assert!(
        defaults.tools.http_get.page_bytes + crate::config::HTTP_PAGE_MARGIN_BYTES <= defaults.tools.output_cap_bytes
    );
}
