//! The drafter against a gateway that records every showing, and which
//! reply takes a draft over.
//!
//! The pace is tested under paused time with a draft whose messages are
//! recorded beforehand (as a turn run again after a crash finds them): a
//! store flush is real I/O, during which paused time would jump ahead. How
//! messages are recorded is tested in real time, each piece written only
//! once the one before was shown.

use std::sync::Mutex;

use async_trait::async_trait;
use passepartout_gateway::GatewayError;

use super::*;
use crate::store::tests::{conversation, open_temp};

/// One showing, as the gateway was asked for it.
#[derive(Clone, Debug, PartialEq)]
struct Showing {
    at: Duration,
    shown: Vec<MessageId>,
    text: String,
    grown_from: Option<usize>,
}

/// A gateway that records its showings and, when it `grows`, gives each
/// new part of the text a message.
struct Recorder {
    pace: DraftPace,
    start: Instant,
    showings: Mutex<Vec<Showing>>,
    shown: tokio::sync::Notify,
    grows: bool,
    /// The failure of every showing, when set.
    failing: Option<GatewayError>,
}

impl Recorder {
    fn new(pace: DraftPace) -> Arc<Self> {
        Arc::new(Self {
            pace,
            start: Instant::now(),
            showings: Mutex::default(),
            shown: tokio::sync::Notify::new(),
            grows: false,
            failing: None,
        })
    }

    fn growing(pace: DraftPace) -> Arc<Self> {
        Arc::new(Self {
            grows: true,
            ..Arc::into_inner(Self::new(pace)).unwrap()
        })
    }

    /// Waits until the gateway was asked to show the draft `n` times.
    async fn wait_for(&self, n: usize) {
        let wait = async {
            loop {
                let notified = self.shown.notified();
                if self.showings.lock().unwrap().len() >= n {
                    return;
                }
                notified.await;
            }
        };
        tokio::time::timeout(Duration::from_secs(10), wait)
            .await
            .expect("the draft is shown");
    }

    fn failing(error: GatewayError) -> Arc<Self> {
        Arc::new(Self {
            failing: Some(error),
            ..Arc::into_inner(Self::new(TELEGRAM_LIKE)).unwrap()
        })
    }

    fn showings(&self) -> Vec<Showing> {
        self.showings.lock().unwrap().clone()
    }
}

#[async_trait]
impl Draft for Recorder {
    fn pace(&self) -> DraftPace {
        self.pace
    }

    async fn show_draft(
        &self,
        _conversation: &ConversationKey,
        shown: &[MessageId],
        draft: DraftText<'_>,
    ) -> Result<Vec<MessageId>, GatewayError> {
        self.showings.lock().unwrap().push(Showing {
            at: self.start.elapsed(),
            shown: shown.to_vec(),
            text: draft.text.to_owned(),
            grown_from: draft.grown_from,
        });
        self.shown.notify_waiters();
        if let Some(error) = &self.failing {
            return Err(error.clone());
        }
        if !self.grows {
            return Ok(shown.to_vec());
        }
        // A message per started 10 bytes, as a platform splitting at 10 would.
        let parts = draft.text.len().div_ceil(10).max(1);
        let mut messages = shown.to_vec();
        while messages.len() < parts {
            messages.push(id(&format!("m{}", messages.len() + 1)));
        }
        Ok(messages)
    }
}

const TELEGRAM_LIKE: DraftPace = DraftPace {
    first_after: Duration::from_secs(1),
    every: Duration::from_secs(1),
};

fn id(text: &str) -> MessageId {
    MessageId::new(text).unwrap()
}

/// A store in which journal entry 1's draft was shown in one message.
async fn store_with_a_draft() -> (tempfile::TempDir, Store) {
    let (dir, store) = open_temp();
    store.keep_draft_messages(1, &[id("m1")]).await.unwrap();
    (dir, store)
}

/// Runs a drafter for journal entry 1 beside `turn`, which gets the sink.
async fn drafted<F: Future<Output = ()>>(
    gateway: Arc<dyn Draft>,
    store: &Store,
    turn: impl FnOnce(Arc<dyn TextSink>) -> F,
) {
    let (drafter, sink) = Drafter::new(gateway, store.clone(), conversation("c"), 1, id("in-1"));
    Drafter::alongside(Some(drafter), turn(sink)).await;
}

/// Writes `words`, one every `gap`, then drops the sink.
async fn write(sink: Arc<dyn TextSink>, words: &[&str], gap: Duration) {
    for word in words {
        sink.text(word);
        tokio::time::sleep(gap).await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_draft_is_first_shown_after_a_second_of_text_then_at_most_once_a_second() {
    let (_dir, store) = store_with_a_draft().await;
    let gateway = Recorder::new(TELEGRAM_LIKE);
    // A word every 20 ms for 3.5 s: 175 pieces.
    let words: Vec<String> = (0..175).map(|n| format!("w{n} ")).collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    drafted(gateway.clone(), &store, |sink| {
        write(sink, &words, Duration::from_millis(20))
    })
    .await;
    let showings = gateway.showings();
    let times: Vec<_> = showings.iter().map(|s| s.at).collect();
    assert_eq!(
        times,
        [1, 2, 3].map(Duration::from_secs),
        "the first after a second of text, then once a second; none once the turn ended"
    );
    assert_eq!(showings[0].grown_from, None, "the first showing starts the draft");
    assert_eq!(
        showings[1].grown_from,
        Some(showings[0].text.len()),
        "then it only grows"
    );
    assert!(showings[2].text.starts_with(&showings[1].text));
    assert_eq!(showings[0].shown, [id("m1")]);
}

#[tokio::test(start_paused = true)]
async fn a_quick_answer_shows_no_draft() {
    let (_dir, store) = open_temp();
    let gateway = Recorder::growing(TELEGRAM_LIKE);
    drafted(gateway.clone(), &store, |sink| {
        write(sink, &["Hi", " there."], Duration::from_millis(100))
    })
    .await;
    assert!(gateway.showings().is_empty());
    assert!(store.draft_messages(1).unwrap().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_terminal_is_shown_every_piece_as_it_comes() {
    let (_dir, store) = store_with_a_draft().await;
    let gateway = Recorder::new(DraftPace::AT_ONCE);
    drafted(gateway.clone(), &store, |sink| {
        write(sink, &["a", "b", "c"], Duration::from_millis(5))
    })
    .await;
    let texts: Vec<_> = gateway.showings().into_iter().map(|s| s.text).collect();
    assert_eq!(texts, ["a", "ab", "abc"]);
}

#[tokio::test]
async fn where_a_draft_is_shown_is_recorded_and_taken_over_by_a_turn_run_again() {
    let (_dir, store) = open_temp();
    let gateway = Recorder::growing(DraftPace::AT_ONCE);
    let shown = gateway.clone();
    drafted(gateway.clone(), &store, |sink| async move {
        for (n, piece) in ["0123456789", "0123456789", "0123"].into_iter().enumerate() {
            sink.text(piece);
            shown.wait_for(n + 1).await;
        }
    })
    .await;
    let recorded = store.draft_messages(1).unwrap();
    assert_eq!(recorded, [id("m1"), id("m2"), id("m3")]);
    // The daemon died; the turn runs again and writes into the same draft.
    let again = Recorder::growing(DraftPace::AT_ONCE);
    let shown = again.clone();
    drafted(again.clone(), &store, |sink| async move {
        sink.text("Fresh start");
        shown.wait_for(1).await;
    })
    .await;
    let showings = again.showings();
    assert_eq!(showings.len(), 1);
    assert_eq!(showings[0].shown, recorded, "the draft it left");
    assert_eq!(showings[0].grown_from, None, "shown anew, not appended");
    assert_eq!(
        store.draft_messages(1).unwrap(),
        recorded,
        "a shorter text keeps the messages, to be removed"
    );
}

#[tokio::test(start_paused = true)]
async fn a_discarded_text_is_replaced_by_the_next() {
    let (_dir, store) = store_with_a_draft().await;
    let gateway = Recorder::new(TELEGRAM_LIKE);
    drafted(gateway.clone(), &store, |sink| async move {
        sink.text("Let me look.");
        tokio::time::sleep(Duration::from_millis(1500)).await;
        sink.discard();
        tokio::time::sleep(Duration::from_millis(500)).await;
        sink.text("It is sunny.");
        tokio::time::sleep(Duration::from_millis(1500)).await;
    })
    .await;
    let showings = gateway.showings();
    let shown: Vec<_> = showings.iter().map(|s| (s.text.as_str(), s.grown_from)).collect();
    assert_eq!(shown, [("Let me look.", None), ("It is sunny.", None)]);
    assert_eq!(showings[1].shown, [id("m1")], "in the same messages");
}

#[tokio::test(start_paused = true)]
async fn a_gateway_that_refuses_for_good_is_not_asked_again_and_a_passing_failure_is_retried_later() {
    let (_dir, store) = open_temp();
    // 4.5 s of text.
    let words: Vec<String> = (0..90).map(|n| format!("w{n} ")).collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let refusing = Recorder::failing(GatewayError::Rejected {
        reason: "chat not found".into(),
    });
    drafted(refusing.clone(), &store, |sink| {
        write(sink, &words, Duration::from_millis(50))
    })
    .await;
    assert_eq!(refusing.showings().len(), 1, "given up after a refusal for good");
    let flaky = Recorder::failing(GatewayError::Transient { reason: "502".into() });
    drafted(flaky.clone(), &store, |sink| {
        write(sink, &words, Duration::from_millis(50))
    })
    .await;
    let times: Vec<_> = flaky.showings().into_iter().map(|s| s.at).collect();
    assert_eq!(
        times,
        [1, 2, 3, 4].map(Duration::from_secs),
        "tried again, a second apart"
    );
    assert!(
        store.draft_messages(1).unwrap().is_empty(),
        "nothing shown, nothing recorded"
    );
}

fn text(kind: ReplyKind, text: &str) -> PendingOutbound {
    PendingOutbound {
        in_reply_to: None,
        body: OutboundBody::Text {
            text: text.into(),
            kind,
        },
        drafts: Vec::new(),
    }
}

#[test]
fn the_last_answer_takes_the_draft_over() {
    let mut replies = vec![
        text(ReplyKind::Notice, "I heard you."),
        text(ReplyKind::Answer, "first"),
        text(ReplyKind::Answer, "last"),
    ];
    hand_over(&mut replies, vec![id("7")]);
    let drafts: Vec<_> = replies.iter().map(|r| r.drafts.len()).collect();
    assert_eq!(drafts, [0, 0, 1]);
}

#[test]
fn without_an_answer_the_first_text_takes_the_draft_over_and_without_a_text_it_is_withdrawn() {
    let mut replies = vec![
        text(ReplyKind::Notice, "I stopped after 10 steps."),
        text(ReplyKind::Failure, "No model answered."),
    ];
    hand_over(&mut replies, vec![id("7")]);
    assert_eq!(replies[0].drafts, [id("7")]);
    let mut none = Vec::new();
    hand_over(&mut none, vec![id("7"), id("8")]);
    assert_eq!(none.len(), 1);
    assert_eq!(none[0].body, OutboundBody::Withdraw);
    assert_eq!(none[0].drafts, [id("7"), id("8")]);
    let mut untouched = vec![text(ReplyKind::Answer, "hi")];
    hand_over(&mut untouched, Vec::new());
    assert!(untouched[0].drafts.is_empty(), "no draft, nothing handed over");
}

#[test]
fn a_stopped_draft_goes_to_a_message_of_its_own_with_what_it_showed() {
    let mut replies = Vec::new();
    hand_over_stopped(&mut replies, vec![id("7"), id("8")], "Half an".into(), &id("m1"));
    assert_eq!(replies.len(), 1);
    assert_eq!(
        replies[0].body,
        OutboundBody::Stopped {
            partial: "Half an".into()
        }
    );
    assert_eq!(replies[0].drafts, [id("7"), id("8")]);
    assert_eq!(
        replies[0].in_reply_to,
        Some(id("m1")),
        "it says which reply was stopped"
    );
    let mut none = Vec::new();
    hand_over_stopped(&mut none, Vec::new(), "Half".into(), &id("m1"));
    assert!(none.is_empty(), "no draft, nothing to remove");
}

#[test]
fn the_shown_text_follows_what_the_draft_shows() {
    let shown = ShownText::default();
    shown.showed("Hello", None);
    shown.showed("Hello, world", Some(5));
    assert_eq!(shown.get(), "Hello, world");
    shown.showed("Started over", None);
    assert_eq!(shown.get(), "Started over");
    shown.showed("Something else entirely", Some(3));
    assert_eq!(
        shown.get(),
        "Something else entirely",
        "an offset that does not match what it holds takes the whole text"
    );
}
