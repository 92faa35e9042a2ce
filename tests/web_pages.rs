//! The dashboard's Conversations, Usage and Configuration pages end to end:
//! a real daemon with `[web]` on port 0 and a configuration file holding a
//! canary secret, a conversation made through the socket against the fake
//! model (a tool call, then a reply with known usage), and a real HTTP
//! client signed in with a link the socket hands out. Every page lists what
//! it should, and the canary is in no response.

use reqwest::StatusCode;

use crate::support;
use support::web_pages::{ME, start, start_with};

fn csrf_of(page: &str) -> String {
    let at = page.find(r#"name="csrf" value=""#).expect("a CSRF field") + r#"name="csrf" value=""#.len();
    page[at..].split('"').next().unwrap().to_owned()
}

/// `n` as the pages write it: thousands apart by a narrow space.
fn grouped(n: u64) -> String {
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

#[tokio::test]
async fn conversations_list_the_socket_chat_its_history_folds_the_tool_call_and_search_finds_it() {
    let pages = start().await;
    let (status, listing) = pages.get("/conversations").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        listing.contains(&format!(r#"<a href="{ME}">socket:me</a>"#)),
        "{listing}"
    );
    assert!(listing.contains(" UTC</td>"), "dated: {listing}");

    let (status, history) = pages.get(ME).await;
    assert_eq!(status, StatusCode::OK);
    assert!(history.contains("When does the zebra crossing open?"), "{history}");
    assert!(history.contains("The zebra crossing opens at noon."), "{history}");
    assert!(
        history.contains(r#"<details class="tool"><summary>Tool call: <code>current_time</code></summary>"#),
        "{history}"
    );
    assert!(
        history.contains("None: nothing has been folded into a summary."),
        "{history}"
    );

    let (status, found) = pages.get("/conversations?q=zebra").await;
    assert_eq!(status, StatusCode::OK);
    let results = &found[found.find("Found for").expect("results")..];
    assert!(
        results.contains(&format!(r#"<a href="{ME}">socket:me</a>"#)),
        "{results}"
    );
    assert!(results.contains("zebra crossing"), "{results}");
    let (_, nothing) = pages.get("/conversations?q=giraffe").await;
    assert!(nothing.contains("Nothing in the history matches."), "{nothing}");

    let (status, _) = pages.get("/conversations/not-a-key").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn usage_shows_the_fake_models_tokens_per_day_provider_and_conversation() {
    let pages = start().await;
    let today = &pages.daemon.daemon.as_ref().unwrap().status()["usage"]["today"];
    let (tokens_in, tokens_out) = (
        today["tokens_in"].as_u64().unwrap(),
        today["tokens_out"].as_u64().unwrap(),
    );
    assert!(tokens_in >= 1234 && tokens_out >= 56, "{today}");
    let (status, usage) = pages.get("/usage").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        usage.contains(&format!(
            "In all: <strong>{}</strong> tokens in, <strong>{}</strong> out.",
            grouped(tokens_in),
            grouped(tokens_out)
        )),
        "{usage}"
    );
    assert_eq!(usage.matches(r#"<svg class="chart" viewBox"#).count(), 3, "{usage}");
    assert!(usage.contains(">fake</text>"), "the provider: {usage}");
    assert!(usage.contains(">socket:me</text>"), "the conversation: {usage}");
    assert!(!usage.contains("style="), "{usage}");
}

#[tokio::test]
async fn the_configuration_shows_web_masks_the_canary_and_reloads_with_the_sessions_token() {
    let pages = start().await;
    let (status, config) = pages.get("/config").await;
    assert_eq!(status, StatusCode::OK);
    assert!(config.contains("[web]\nenabled = true"), "{config}");
    assert!(config.contains("NOTES_TOKEN = &quot;••••••&quot;"), "{config}");
    assert!(!config.contains("# the dashboard"), "comments are left out: {config}");
    assert!(config.contains("finds no problem"), "{config}");

    let (status, _) = pages.post("/config/reload", &[("csrf", "forged")]).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, reloaded) = pages.post("/config/reload", &[("csrf", &csrf_of(&config))]).await;
    assert_eq!(status, StatusCode::OK);
    let result = &reloaded[reloaded
        .find(r#"<section class="result""#)
        .expect("what the reload did")..];
    let result = &result[..result.find("</section>").expect("the section's end")];
    // The daemon runs on the file it reads again: nothing changed, nothing
    // waits for a restart.
    assert!(
        result.contains(r#"<p class="ok">"#) && result.contains("The configuration is unchanged."),
        "{result}"
    );
    assert!(!result.contains("restart"), "{result}");
    assert!(reloaded.contains("[web]"), "the page again: {reloaded}");
    drop(pages.llm);
}

#[tokio::test]
async fn with_prices_usage_shows_the_cost_beside_the_tokens() {
    let pages = start_with("price_in_per_mtok = 1000.0\nprice_out_per_mtok = 2000.0\n").await;
    let today = &pages.daemon.daemon.as_ref().unwrap().status()["usage"]["today"];
    let cost = today["cost_usd"].as_f64().unwrap();
    assert!(cost > 1.0, "1234 tokens in at $1000 a million: {today}");
    let (status, usage) = pages.get("/usage").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        usage.contains(&format!("About <strong>${cost:.2}</strong>.")),
        "{usage}"
    );
    assert!(
        usage.contains(r#"<td data-label="Provider">fake</td>"#)
            && usage.contains(&format!(r#"<td data-label="Cost">${cost:.2}</td>"#)),
        "the provider's tokens and cost: {usage}"
    );
    assert!(
        usage.contains(r#"<td data-label="Conversation">socket:me</td>"#),
        "{usage}"
    );
    let (_, free) = start().await.get("/usage").await;
    assert!(!free.contains(r#"data-label="Cost""#), "no prices, no costs: {free}");
    assert!(free.contains("No provider has a price"), "{free}");
}
