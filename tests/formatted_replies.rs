//! The model's Markdown, through the real daemon, as each platform shows
//! it: Telegram gets plain text with entities (UTF-16 offsets, never a
//! parse mode), Signal plain text with text styles; a code block split
//! across messages stays a code block in each. The fakes check entities and
//! styles as Telegram and signal-cli do, so a bad one fails the send.

use crate::support;

use serde_json::{Value, json};
use support::fake_llm::{FakeLlm, Script, last_user_text};
use support::fake_signal::{self, FakeSignal};
use support::fake_telegram::{FakeFailure, FakeTelegram};
use support::gateway_daemons::{with_signal, with_telegram};
use support::harness::{TestDaemon, WAIT};

const TOKEN: &str = "123456:formatted-replies-token";
const OWNER: i64 = 42;
const SIGNAL_OWNER: &str = "0a0a0a0a-0000-4000-8000-00000000000a";

/// A reply with every kind of formatting, emoji and CJK before the styled
/// words so that UTF-16 offsets differ from byte and `char` offsets.
const MARKDOWN: &str = "Here is **the plan** for 中文 😀 users:

1. Install with `cargo`
2. Read [the docs](https://example.com/docs)

| tool | use |
|------|-----|
| rg   | search |

```rust
fn main() {}
```";

/// Line `i` of the long code block.
fn code_line(i: usize) -> String {
    format!("print('line {i}')  # 😀")
}

/// A reply whose code block is longer than any one message.
fn long_markdown() -> String {
    let code: Vec<String> = (0..300).map(code_line).collect();
    format!("Intro.\n\n```python\n{}\n```\n\nDone.", code.join("\n"))
}

/// The model answers "show me" with [`MARKDOWN`], "long" with the long reply.
fn model(request: &Value) -> Script {
    match last_user_text(request).as_str() {
        "show me" => Script::Reply(MARKDOWN.to_owned()),
        "long" => Script::Reply(long_markdown()),
        _ => Script::Echo,
    }
}

/// The offset of `needle` in `text`, in UTF-16 code units.
fn utf16_at(text: &str, needle: &str) -> usize {
    let at = text.find(needle).unwrap_or_else(|| panic!("{needle:?} in {text:?}"));
    text[..at].encode_utf16().count()
}

async fn telegram_daemon(llm: &FakeLlm, telegram: &FakeTelegram) -> (TestDaemon, tempfile::TempDir) {
    with_telegram(llm, telegram, TOKEN, OWNER, |_| {}).await
}

async fn signal_daemon(llm: &FakeLlm, signal: &FakeSignal) -> TestDaemon {
    with_signal(llm, signal, SIGNAL_OWNER, |_| {}).await
}

#[tokio::test]
async fn markdown_reaches_telegram_as_entities() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeLlm::start().await;
    llm.set_responder(model);
    let _daemon = telegram_daemon(&llm, &telegram).await;
    telegram.push_update(telegram.text_message(OWNER, OWNER, "show me"));

    let sent = telegram.wait_for_sent(1, WAIT).await;
    let reply = &sent[0];
    assert_eq!(
        reply.text,
        "Here is the plan for 中文 😀 users:\n\n1. Install with cargo\n2. Read the docs\n\n\
         tool | use\nrg | search\n\nfn main() {}"
    );
    assert!(reply.params.get("parse_mode").is_none(), "never a parse mode");
    let entities = reply.params["entities"].as_array().expect("entities were sent");
    let text = &reply.text;
    let expected = [
        json!({"type": "bold", "offset": 8, "length": 8}),
        // 中文 is two units, 😀 two more: 51, where bytes would say 60.
        json!({"type": "code", "offset": 51, "length": 5}),
        json!({"type": "text_link", "offset": utf16_at(text, "the docs"), "length": 8,
               "url": "https://example.com/docs"}),
        json!({"type": "bold", "offset": utf16_at(text, "tool | use"), "length": 10}),
        json!({"type": "pre", "offset": utf16_at(text, "fn main"), "length": 12, "language": "rust"}),
    ];
    assert_eq!(entities, &expected);
}

#[tokio::test]
async fn a_long_code_block_stays_pre_in_every_telegram_part() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeLlm::start().await;
    llm.set_responder(model);
    let _daemon = telegram_daemon(&llm, &telegram).await;
    telegram.push_update(telegram.text_message(OWNER, OWNER, "long"));

    // 300 lines of 22 UTF-16 units: two messages at least, read as they
    // stand once the last part is there (a part may first have been shown
    // as a draft and then edited into place).
    let sent = telegram
        .chat_settles(OWNER, WAIT, |messages| {
            messages.len() >= 2 && messages.last().is_some_and(|(_, text, _)| text.ends_with("Done."))
        })
        .await;
    let mut lines = Vec::new();
    for (_, text, entities) in &sent {
        assert!(text.encode_utf16().count() <= 4096);
        let pre: Vec<&Value> = entities
            .as_array()
            .expect("every part has entities")
            .iter()
            .filter(|entity| entity["type"] == "pre")
            .collect();
        assert_eq!(pre.len(), 1, "one pre entity in {entities:?}");
        assert_eq!(pre[0]["language"], "python", "the language goes with every piece");
        let units: Vec<u16> = text.encode_utf16().collect();
        let (offset, length) = (
            pre[0]["offset"].as_u64().unwrap() as usize,
            pre[0]["length"].as_u64().unwrap() as usize,
        );
        let code = String::from_utf16(&units[offset..offset + length]).unwrap();
        lines.extend(code.lines().map(str::to_owned));
    }
    assert_eq!(
        lines,
        (0..300).map(code_line).collect::<Vec<_>>(),
        "every line, in pre, once"
    );
}

#[tokio::test]
async fn markdown_reaches_signal_as_text_styles() {
    let signal = FakeSignal::start().await;
    let llm = FakeLlm::start().await;
    llm.set_responder(model);
    let _daemon = signal_daemon(&llm, &signal).await;
    signal.push_envelope(fake_signal::text_envelope(SIGNAL_OWNER, 1_700_000_000_001, "show me"));

    let sent = signal.wait_for_sent(1).await;
    let reply = &sent[0];
    let text = reply.message.as_deref().unwrap();
    assert_eq!(
        text,
        "Here is the plan for 中文 😀 users:\n\n1. Install with cargo\n2. Read the docs (https://example.com/docs)\n\n\
         tool | use\nrg | search\n\nfn main() {}"
    );
    assert_eq!(
        reply.text_styles,
        [
            "8:8:BOLD".to_owned(),
            "51:5:MONOSPACE".to_owned(),
            format!("{}:10:BOLD", utf16_at(text, "tool | use")),
            format!("{}:12:MONOSPACE", utf16_at(text, "fn main")),
        ]
    );
}

#[tokio::test]
async fn a_long_code_block_stays_monospace_in_every_signal_part() {
    let signal = FakeSignal::start().await;
    let llm = FakeLlm::start().await;
    llm.set_responder(model);
    let _daemon = signal_daemon(&llm, &signal).await;
    signal.push_envelope(fake_signal::text_envelope(SIGNAL_OWNER, 1_700_000_000_002, "long"));

    let mut sent = signal.wait_for_sent(2).await;
    while !sent.last().unwrap().message.as_deref().unwrap().ends_with("Done.") {
        sent = signal.wait_for_sent(sent.len() + 1).await;
    }
    let mut lines = Vec::new();
    for part in &sent {
        let text = part.message.as_deref().unwrap();
        assert!(text.len() <= passepartout_signal::SIGNAL_TEXT_LIMIT);
        let [style] = part.text_styles.as_slice() else {
            panic!("one style in {part:?}");
        };
        let fields: Vec<&str> = style.split(':').collect();
        assert_eq!(fields[2], "MONOSPACE");
        let (start, length): (usize, usize) = (fields[0].parse().unwrap(), fields[1].parse().unwrap());
        let units: Vec<u16> = text.encode_utf16().collect();
        lines.extend(
            String::from_utf16(&units[start..start + length])
                .unwrap()
                .lines()
                .map(str::to_owned),
        );
    }
    assert!(sent.len() >= 3, "{} parts", sent.len());
    assert_eq!(
        lines,
        (0..300).map(code_line).collect::<Vec<_>>(),
        "every line, monospace, once"
    );
}

#[tokio::test]
async fn a_reply_telegram_refuses_for_its_formatting_arrives_as_plain_text_once() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeLlm::start().await;
    llm.set_responder(model);
    let _daemon = telegram_daemon(&llm, &telegram).await;
    // Telegram checks a link's host more strictly than any URL parser.
    telegram.fail_next(
        "sendMessage",
        FakeFailure::BadRequest("Bad Request: can't parse entities: Wrong URL host".into()),
    );
    telegram.push_update(telegram.text_message(OWNER, OWNER, "show me"));

    let sent = telegram.wait_for_sent(1, WAIT).await;
    assert_eq!(sent.len(), 1, "{sent:#?}");
    assert!(
        sent[0].text.starts_with("Here is the plan for 中文 😀 users:"),
        "{}",
        sent[0].text
    );
    assert!(sent[0].params.get("entities").is_none(), "plain: {:#?}", sent[0].params);
    assert_eq!(telegram.calls("sendMessage").len(), 2, "refused once, then plain");
}
