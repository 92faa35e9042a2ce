//! "Always" on every gateway, said every way it can be said: one daemon with
//! the terminal, Telegram, Signal, the web chat and the API on (against
//! their fakes), and for each gateway and each way of saying "always" (a
//! button, a reply in the chat, the token from the terminal with the real
//! binary, the dashboard), a call asked about, always-allowed, then the same
//! call running without a prompt and a different one still asking. Whoever
//! may approve, in the chat or from the terminal or the dashboard, makes a
//! rule that applies where the prompt said it would.

use crate::support;

use std::path::PathBuf;

use passepartout_admin::WebRequest;
use passepartout_gateway::ReplyKind;
use passepartout_socket::ServerFrame;
use reqwest::StatusCode;
use reqwest::header;
use serde_json::{Value, json};
use support::approvals::{OUTCOME, Setup};
use support::chat::Chat;
use support::fake_llm::{FakeLlm, Script, last_message, last_user_text};
use support::fake_signal::{ACCOUNT_UUID, FakeSignal, quote_envelope, text_envelope};
use support::fake_telegram::FakeTelegram;
use support::gateway_daemons::{signal_on, telegram_on, token_file};
use support::harness::WAIT;
use support::process::run_cli;

const TELEGRAM_TOKEN: &str = "123456:test-token-never-logged";
const TELEGRAM_OWNER: i64 = 42;
const SIGNAL_OWNER: &str = "0a0a0a0a-0000-4000-8000-00000000000a";

#[derive(Clone, Copy, Debug)]
enum Gateway {
    Socket,
    Telegram,
    Signal,
    WebChat,
    Api,
}

#[derive(Clone, Copy, Debug)]
enum Way {
    /// The prompt's Always button (Telegram's, the web chat's card).
    Button,
    /// Said in the chat: a reply to the prompt, or `always TOKEN`.
    Reply,
    /// `passepartout approvals approve TOKEN --always` in a terminal.
    Terminal,
    /// Always on the dashboard's Approvals page.
    Dashboard,
}

/// Every gateway, with every way of saying "always" it offers.
const CASES: &[(Gateway, Way)] = &[
    (Gateway::Socket, Way::Reply),
    (Gateway::Socket, Way::Terminal),
    (Gateway::Socket, Way::Dashboard),
    (Gateway::Telegram, Way::Button),
    (Gateway::Telegram, Way::Reply),
    (Gateway::Telegram, Way::Terminal),
    (Gateway::Telegram, Way::Dashboard),
    (Gateway::Signal, Way::Reply),
    (Gateway::Signal, Way::Terminal),
    (Gateway::Signal, Way::Dashboard),
    (Gateway::WebChat, Way::Button),
    (Gateway::WebChat, Way::Reply),
    (Gateway::WebChat, Way::Terminal),
    (Gateway::WebChat, Way::Dashboard),
    (Gateway::Api, Way::Reply),
    (Gateway::Api, Way::Terminal),
    (Gateway::Api, Way::Dashboard),
];

/// The approval tests' model, which once a tool answered says what it returned.
fn model(request: &Value) -> Script {
    let last = last_message(request);
    if last["role"] == "tool" {
        return Script::Reply(format!("tool said: {}", last["content"].as_str().unwrap_or_default()));
    }
    support::approvals::model(request)
}

/// What a gateway's person was sent in answer to a message.
enum Heard {
    /// An approval prompt, and where a reply to it goes on that gateway.
    Asked(PromptAt),
    /// The answer of a turn that ran.
    Ran(String),
}

/// A prompt, as its gateway names it.
enum PromptAt {
    Socket(String),
    Telegram(i64),
    Signal(u64),
    /// The web chat and the API have no replies to a message.
    Web,
}

struct World {
    setup: Setup,
    telegram: FakeTelegram,
    signal: FakeSignal,
    socket: Chat,
    cli_config: PathBuf,
    http: reqwest::Client,
    base: String,
    cookie: String,
    csrf: String,
    /// The web chat `/chat` opened: `/chat/{id}`.
    chat: String,
    api_key: String,
    /// The API conversation so far, resent with each request as clients
    /// do, so every API case speaks in one conversation.
    api_said: Vec<Value>,
    sent: u64,
}

async fn start() -> World {
    let telegram = FakeTelegram::start(TELEGRAM_TOKEN).await;
    let signal = FakeSignal::start().await;
    let (token_dir, token) = token_file(TELEGRAM_TOKEN);
    let (api_url, endpoint) = (telegram.base_url(), signal.tcp_endpoint());
    let setup = Setup::start_with(|config| {
        config.pairing.enabled = false;
        telegram_on(config, api_url, token, TELEGRAM_OWNER);
        signal_on(config, endpoint, SIGNAL_OWNER);
        config.web.enabled = true;
        config.web.listen = "127.0.0.1:0".parse().unwrap();
    })
    .await;
    // The token was read at start.
    drop(token_dir);
    setup.llm.set_responder(model);
    let socket = setup.chat("owner").await;
    let cli_config = setup.daemon.cli_config(&setup.llm);
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let link = setup
        .cli()
        .await
        .ask::<passepartout_socket::WebAnswer>(passepartout_socket::AdminRequest::Web {
            request: WebRequest::Link,
        })
        .await
        .unwrap()
        .link
        .unwrap();
    let base = link.split("/sign-in/").next().unwrap().to_owned();
    let signed = http.get(&link).send().await.unwrap();
    assert_eq!(signed.status(), StatusCode::SEE_OTHER);
    let cookie = signed.headers()[header::SET_COOKIE].to_str().unwrap();
    let cookie = cookie.split(';').next().unwrap().to_owned();
    let opened = http
        .get(format!("{base}/chat"))
        .header(header::COOKIE, &cookie)
        .send()
        .await
        .unwrap();
    let chat = opened.headers()[header::LOCATION].to_str().unwrap().to_owned();
    let page = http
        .get(format!("{base}{chat}"))
        .header(header::COOKIE, &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let field = r#"name="csrf" value=""#;
    let at = page.find(field).expect("the chat's form") + field.len();
    let csrf = page[at..].split('"').next().unwrap().to_owned();
    let made = run_cli(&cli_config, &["web", "keys", "create", "ops", "--approver"]).await;
    assert!(made.status.success(), "{made:?}");
    let api_key = String::from_utf8(made.stdout)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_owned();
    World {
        setup,
        telegram,
        signal,
        socket,
        cli_config,
        http,
        base,
        cookie,
        csrf,
        chat,
        api_key,
        api_said: Vec::new(),
        sent: 0,
    }
}

impl World {
    /// Sends `text` from the owner on `gateway`; what they were sent back.
    async fn say(&mut self, gateway: Gateway, text: &str) -> Heard {
        self.sent += 1;
        match gateway {
            Gateway::Socket => {
                let original = self.socket.send(text).await;
                let frame = self
                    .socket
                    .take(&format!("an answer to {text:?}"), |frame| match frame {
                        ServerFrame::Approval { in_reply_to, .. } => in_reply_to.as_ref() == Some(&original),
                        ServerFrame::Reply { in_reply_to, kind, .. } => {
                            in_reply_to.as_ref() == Some(&original) && *kind == ReplyKind::Answer
                        }
                        _ => false,
                    })
                    .await;
                match frame {
                    ServerFrame::Approval { id, .. } => Heard::Asked(PromptAt::Socket(id)),
                    ServerFrame::Reply { text, .. } => Heard::Ran(text),
                    _ => unreachable!(),
                }
            }
            Gateway::Telegram => {
                let update = self.telegram.text_message(TELEGRAM_OWNER, TELEGRAM_OWNER, text);
                let asked = update["message"]["message_id"].as_i64().unwrap();
                self.telegram.push_update(update);
                let sent = telegram_sent(&self.telegram, |s| {
                    s.reply_to_message_id == Some(asked)
                        && (s.reply_markup.is_some() || s.text.starts_with("tool said: "))
                })
                .await;
                match sent.reply_markup {
                    Some(_) => Heard::Asked(PromptAt::Telegram(sent.message_id)),
                    None => Heard::Ran(sent.text),
                }
            }
            Gateway::Signal => {
                let at = 1_700_000_000_000 + self.sent;
                self.signal.push_envelope(text_envelope(SIGNAL_OWNER, at, text));
                let sent = self
                    .signal
                    .sent_matching(WAIT, |s| {
                        s.quote_timestamp == Some(at)
                            && s.message
                                .as_deref()
                                .is_some_and(|m| m.starts_with("Approval needed") || m.starts_with("tool said: "))
                    })
                    .await
                    .unwrap_or_else(|| panic!("no answer to {text:?}: {:#?}", self.signal.sent()));
                let message = sent.message.unwrap();
                if message.starts_with("Approval needed") {
                    Heard::Asked(PromptAt::Signal(sent.timestamp))
                } else {
                    Heard::Ran(message)
                }
            }
            Gateway::WebChat => {
                let (event, data) = self.web_chat(text).await;
                match event.as_str() {
                    "approval" => Heard::Asked(PromptAt::Web),
                    _ => Heard::Ran(data["text"].as_str().unwrap_or_default().to_owned()),
                }
            }
            Gateway::Api => {
                self.api_said.push(json!({"role": "user", "content": text}));
                let body = json!({"model": "passepartout", "messages": self.api_said});
                let response = tokio::time::timeout(
                    WAIT,
                    self.http
                        .post(format!("{}/v1/chat/completions", self.base))
                        .bearer_auth(&self.api_key)
                        .json(&body)
                        .send(),
                )
                .await
                .expect("an answer in time")
                .unwrap();
                assert_eq!(response.status(), StatusCode::OK);
                let answer: Value = response.json().await.unwrap();
                let content = answer["choices"][0]["message"]["content"].as_str().unwrap().to_owned();
                self.api_said.push(json!({"role": "assistant", "content": content}));
                if content.contains("Send `approve ") {
                    Heard::Asked(PromptAt::Web)
                } else if content.starts_with("final: ") {
                    // The outcome of the approval before, which no request
                    // heard, opens this answer; the answer is the last part.
                    Heard::Ran(content.rsplit("\n\n").next().unwrap_or_default().to_owned())
                } else {
                    Heard::Ran(content)
                }
            }
        }
    }

    /// Posts `text` on the web chat, streamed: the first event that says
    /// something (an approval, a reply) and its data.
    async fn web_chat(&self, text: &str) -> (String, Value) {
        let form = reqwest::multipart::Form::new()
            .text("csrf", self.csrf.clone())
            .text("id", format!("{:032x}", self.sent))
            .text("text", text.to_owned());
        let mut response = tokio::time::timeout(
            WAIT,
            self.http
                .post(format!("{}{}", self.base, self.chat))
                .header(header::COOKIE, &self.cookie)
                .header(header::ORIGIN, &self.base)
                .header(header::ACCEPT, "text/event-stream")
                .multipart(form)
                .send(),
        )
        .await
        .expect("an answer in time")
        .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let mut body = String::new();
        loop {
            let chunk = tokio::time::timeout(WAIT, response.chunk())
                .await
                .expect("the stream goes on")
                .unwrap()
                .unwrap_or_else(|| panic!("the stream ended without an answer: {body}"));
            body.push_str(std::str::from_utf8(&chunk).unwrap());
            let mut event = None;
            for line in body.lines() {
                if let Some(name) = line.strip_prefix("event: ") {
                    event = Some(name.to_owned());
                } else if let (Some(name), Some(data)) = (&event, line.strip_prefix("data: "))
                    && (name == "approval" || name == "reply")
                {
                    return (name.clone(), serde_json::from_str(data).unwrap());
                }
            }
        }
    }

    /// Posts a dashboard form to `path`.
    async fn post_form(&self, path: &str, fields: &[(&str, &str)]) {
        let mut form = fields.to_vec();
        form.push(("csrf", &self.csrf));
        let response = self
            .http
            .post(format!("{}{path}", self.base))
            .header(header::COOKIE, &self.cookie)
            .header(header::ORIGIN, &self.base)
            .form(&form)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::SEE_OTHER, "{path} {fields:?}");
    }

    /// The token of the one approval waiting whose action holds `what`.
    async fn token_of(&self, what: &str) -> String {
        let listing = self
            .setup
            .cli()
            .await
            .ask::<serde_json::Value>(passepartout_socket::AdminRequest::Approvals { all: false })
            .await
            .expect("approvals");
        let waiting: Vec<&Value> = listing["approvals"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|a| a["action"].as_str().is_some_and(|action| action.contains(what)))
            .collect();
        assert_eq!(waiting.len(), 1, "{listing:#}");
        waiting[0]["token"].as_str().unwrap().to_owned()
    }

    /// Says "always" to the approval `token` (its prompt `at`), `way`, on `gateway`.
    async fn always(&mut self, gateway: Gateway, way: Way, token: &str, at: PromptAt) {
        self.sent += 1;
        match (way, gateway, at) {
            (Way::Terminal, ..) => {
                let output = run_cli(&self.cli_config, &["approvals", "approve", token, "--always"]).await;
                let said = String::from_utf8_lossy(&output.stdout);
                assert!(output.status.success(), "{output:?}");
                assert!(said.contains("Standing rule "), "{said}");
            }
            (Way::Dashboard, ..) => {
                self.post_form("/approvals/decide", &[("token", token), ("choice", "always")])
                    .await
            }
            (Way::Button, Gateway::WebChat, _) => {
                self.post_form(
                    "/approvals/decide",
                    &[("token", token), ("choice", "always"), ("back", "chat")],
                )
                .await
            }
            (Way::Button, Gateway::Telegram, PromptAt::Telegram(prompt)) => {
                let press =
                    self.telegram
                        .callback_query(TELEGRAM_OWNER, TELEGRAM_OWNER, prompt, &format!("always:{token}"));
                self.telegram.push_update(press);
            }
            (Way::Reply, Gateway::Socket, PromptAt::Socket(prompt)) => {
                let notice = self.socket.answer("always", Some(&prompt)).await;
                assert!(notice.contains("Standing rule "), "{notice}");
            }
            (Way::Reply, Gateway::Telegram, PromptAt::Telegram(prompt)) => {
                let reply = self.telegram.reply_to(TELEGRAM_OWNER, TELEGRAM_OWNER, "always", prompt);
                self.telegram.push_update(reply);
            }
            (Way::Reply, Gateway::Signal, PromptAt::Signal(prompt)) => {
                let at = 1_700_000_000_000 + self.sent;
                let reply = quote_envelope(SIGNAL_OWNER, at, "always", prompt, ACCOUNT_UUID);
                self.signal.push_envelope(reply);
            }
            (Way::Reply, Gateway::WebChat | Gateway::Api, PromptAt::Web) => {
                match self.say(gateway, &format!("always {token}")).await {
                    Heard::Ran(notice) => assert!(notice.contains("Standing rule "), "{notice}"),
                    Heard::Asked(_) => panic!("always {token} was asked about"),
                }
            }
            (way, gateway, _) => panic!("{gateway:?} offers no {way:?}"),
        }
        told_outcome(&self.setup.llm, token).await;
    }
}

/// The first message Telegram was asked to send that `wanted` accepts.
async fn telegram_sent(
    telegram: &FakeTelegram,
    wanted: impl Fn(&support::fake_telegram::Sent) -> bool,
) -> support::fake_telegram::Sent {
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut seen = 0;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let sent = telegram.wait_for_sent(seen + 1, left).await;
        if let Some(found) = sent.iter().find(|s| wanted(s)) {
            return found.clone();
        }
        assert!(tokio::time::Instant::now() < deadline, "not sent: {sent:#?}");
        seen = sent.len();
    }
}

/// Waits until the model is told the approval `token` was decided: its
/// decision, and the rule made with it, are in the store by then.
async fn told_outcome(llm: &FakeLlm, token: &str) {
    let told = |requests: &[Value]| {
        requests.iter().any(|r| {
            let text = last_user_text(r);
            text.starts_with(OUTCOME) && text.contains(token)
        })
    };
    let waited = tokio::time::timeout(WAIT, async {
        loop {
            let requests = llm.requests();
            if told(&requests) {
                return;
            }
            llm.wait_for_requests(requests.len() + 1, WAIT).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "the model was never told of {token}");
}

#[tokio::test]
async fn always_said_any_way_on_any_gateway_lets_the_same_call_run_and_no_other() {
    let mut world = start().await;
    for (n, &(gateway, way)) in CASES.iter().enumerate() {
        let case = format!("{gateway:?} by {way:?}");
        let what = format!("case {n} end");
        let call = format!("please record {what}");
        let Heard::Asked(at) = world.say(gateway, &call).await else {
            panic!("{case}: {call:?} ran without asking");
        };
        let token = world.token_of(&what).await;
        world.always(gateway, way, &token, at).await;
        let runs = world.setup.record.calls();

        match world.say(gateway, &call).await {
            Heard::Ran(answer) => assert!(
                answer.starts_with("tool said: recorded #") && answer.contains(&what),
                "{case}: {answer}"
            ),
            Heard::Asked(_) => panic!("{case}: the same call asked again"),
        }
        assert_eq!(world.setup.record.calls(), runs + 1, "{case}");

        let other = format!("another {n}");
        let Heard::Asked(_) = world.say(gateway, &format!("please record {other}")).await else {
            panic!("{case}: a different call ran without asking");
        };
        assert_eq!(world.setup.record.calls(), runs + 1, "{case}: nothing else ran");
    }
}
