//! Streaming a turn's reply to the person as a draft while the model writes
//! it, on a gateway that shows drafts (see the contract's `draft` module).
//!
//! The pipeline writes the models' text into a [`DraftSink`]; a [`Drafter`]
//! runs beside the turn and shows the text so far through the gateway, at
//! the gateway's pace: first once the text is [`DraftPace::first_after`]
//! old, then at most once every [`DraftPace::every`]. Each time the draft
//! gains a platform message, the store records it before anything else, so
//! a turn run again after a crash writes into the draft it left instead of
//! beside it.
//!
//! The draft is never the reply: the turn's commit hands the draft's
//! messages to the reply it takes over ([`hand_over`]), and the gateway
//! makes them that reply when the outbox delivers it. A stopped turn's
//! commit hands them, with the text they showed ([`ShownText`]), to a
//! message of their own that the gateway removes or marks stopped
//! ([`hand_over_stopped`]). Showing a draft is best effort; a failure only
//! leaves it as it was.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use passepartout_gateway::{ConversationKey, Draft, DraftPace, DraftText, MessageId, OutboundBody, ReplyKind};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::model::llm::TextSink;
use crate::store::{PendingOutbound, Store};

/// Longest a gateway may take to show a draft before that showing is given up.
const SHOW_TIMEOUT: Duration = Duration::from_secs(10);
/// How long after a failed showing the draft is tried again, at the least.
const AFTER_FAILURE: Duration = Duration::from_secs(1);

/// What the pipeline streams.
enum Piece {
    Text(String),
    Discard,
}

/// The pipeline's end of a draft: every piece of text, and every discard,
/// in order, to the [`Drafter`]. Never blocks.
pub(super) struct DraftSink(mpsc::UnboundedSender<Piece>);

impl TextSink for DraftSink {
    fn text(&self, delta: &str) {
        let _ = self.0.send(Piece::Text(delta.to_owned()));
    }

    fn discard(&self) {
        let _ = self.0.send(Piece::Discard);
    }
}

/// The text a draft was last given to show (shown, or being shown when
/// the turn stopped), read by the worker when the turn is stopped: the
/// drafter itself goes with the stopped turn.
#[derive(Clone, Default)]
pub(super) struct ShownText(Arc<Mutex<String>>);

impl ShownText {
    /// What the draft shows.
    pub(super) fn get(&self) -> String {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Notes that the draft shows `text`, grown from the first `grown_from`
    /// bytes of what it showed before (copying only the new part).
    fn showed(&self, text: &str, grown_from: Option<usize>) {
        let mut shown = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match grown_from
            .filter(|from| *from == shown.len())
            .and_then(|from| text.get(from..))
        {
            Some(news) => shown.push_str(news),
            None => text.clone_into(&mut shown),
        }
    }
}

/// Shows one turn's draft: the turn answering journal entry `seq` in `conversation`.
pub(super) struct Drafter {
    gateway: Arc<dyn Draft>,
    shown_text: ShownText,
    store: Store,
    conversation: ConversationKey,
    seq: u64,
    in_reply_to: MessageId,
    pieces: mpsc::UnboundedReceiver<Piece>,
    /// When the drafter started: each showing is logged with its time
    /// since, so the pace can be checked where it is kept, not where the
    /// platform happens to receive the showings.
    began: Instant,
}

/// What the draft shows and what it will show next.
#[derive(Default)]
struct Shown {
    /// The draft's messages.
    messages: Vec<MessageId>,
    /// The text so far.
    text: String,
    /// How much of `text` the draft shows, when it shows a beginning of it.
    showing: Option<usize>,
    /// When the first text of the draft came, for the first showing.
    first_text: Option<Instant>,
    /// When the draft was last shown, for the pace.
    last_shown: Option<Instant>,
    /// After a failed showing: not again before this.
    not_before: Option<Instant>,
}

impl Drafter {
    /// A drafter for the turn answering `in_reply_to` (journal entry
    /// `seq`), and the sink its pipeline writes to.
    pub(super) fn new(
        gateway: Arc<dyn Draft>,
        store: Store,
        conversation: ConversationKey,
        seq: u64,
        in_reply_to: MessageId,
    ) -> (Self, Arc<dyn TextSink>) {
        let (sender, pieces) = mpsc::unbounded_channel();
        let drafter = Self {
            gateway,
            shown_text: ShownText::default(),
            store,
            conversation,
            seq,
            in_reply_to,
            pieces,
            began: Instant::now(),
        };
        (drafter, Arc::new(DraftSink(sender)))
    }

    /// What the draft shows, as it changes.
    pub(super) fn shown_text(&self) -> ShownText {
        self.shown_text.clone()
    }

    /// Runs `turn` with the draft shown beside it; the turn's end (which
    /// drops its sink) ends the draft's showing too.
    pub(super) async fn alongside<T>(drafter: Option<Drafter>, turn: impl Future<Output = T>) -> T {
        match drafter {
            None => turn.await,
            Some(drafter) => tokio::join!(turn, drafter.run()).0,
        }
    }

    /// Shows the text as it comes, until the sink is dropped (the turn
    /// ended). A showing under way is finished first, so a message the
    /// platform created is always recorded; one due then is made too.
    async fn run(mut self) {
        let pace = self.gateway.pace();
        let mut shown = Shown {
            // A turn run again after a crash takes over the draft it left.
            messages: self.store.draft_messages(self.seq).unwrap_or_else(|error| {
                tracing::warn!(conversation = %self.conversation, %error, "cannot read an earlier draft");
                Vec::new()
            }),
            ..Shown::default()
        };
        let mut given_up = false;
        loop {
            let due = shown.due(pace).filter(|_| !given_up);
            // Due now: shown at once, with whatever came meanwhile (a timer
            // would round the wait up to its next tick, and a discard could
            // slip in before it).
            if due.is_some_and(|due| due <= Instant::now()) {
                let closed = loop {
                    match self.pieces.try_recv() {
                        Ok(piece) => shown.take(piece),
                        Err(mpsc::error::TryRecvError::Empty) => break false,
                        Err(mpsc::error::TryRecvError::Disconnected) => break true,
                    }
                };
                // A discard among them leaves nothing to show yet.
                if shown.due(pace).is_some() {
                    given_up = !self.show(&mut shown).await;
                }
                if closed {
                    return;
                }
                continue;
            }
            let piece = tokio::select! {
                biased;
                piece = self.pieces.recv() => piece,
                _ = sleep_until(due), if due.is_some() => continue,
            };
            match piece {
                Some(piece) => shown.take(piece),
                // What is not due yet is left to the reply that takes over.
                None => return,
            }
        }
    }

    /// Shows the text so far; `false` when the gateway will not show drafts
    /// here at all, so the turn stops trying.
    async fn show(&self, shown: &mut Shown) -> bool {
        let now = Instant::now();
        shown.last_shown = Some(now);
        let at_ms = u64::try_from(now.duration_since(self.began).as_millis()).unwrap_or(u64::MAX);
        tracing::debug!(conversation = %self.conversation, at_ms, "showing the draft");
        // Before the showing: a stop can come in its middle, when the
        // person may have seen it already.
        self.shown_text.showed(&shown.text, shown.showing);
        let draft = DraftText {
            text: &shown.text,
            grown_from: shown.showing,
            in_reply_to: Some(&self.in_reply_to),
        };
        let showing = self.gateway.show_draft(&self.conversation, &shown.messages, draft);
        let messages = match tokio::time::timeout(SHOW_TIMEOUT, showing).await {
            Ok(Ok(messages)) => messages,
            Ok(Err(error)) => {
                tracing::debug!(conversation = %self.conversation, %error, "draft not shown");
                shown.not_before = Some(Instant::now() + AFTER_FAILURE);
                return !error.is_permanent();
            }
            Err(_) => {
                tracing::debug!(conversation = %self.conversation, "draft not shown in time");
                shown.not_before = Some(Instant::now() + AFTER_FAILURE);
                return true;
            }
        };
        shown.showing = Some(shown.text.len());
        if messages != shown.messages {
            if let Err(error) = self.store.keep_draft_messages(self.seq, &messages).await {
                tracing::warn!(conversation = %self.conversation, %error, "cannot record where a draft is shown");
            }
            shown.messages = messages;
        }
        true
    }
}

impl Shown {
    fn take(&mut self, piece: Piece) {
        match piece {
            Piece::Text(text) => {
                self.text.push_str(&text);
                self.first_text.get_or_insert_with(Instant::now);
            }
            // The model starts a new text; the draft shows the old one until then.
            Piece::Discard => {
                self.text.clear();
                self.showing = None;
                self.first_text = None;
            }
        }
    }

    /// When the draft is next to be shown: never while it shows all there
    /// is, else at the pace's earliest.
    fn due(&self, pace: DraftPace) -> Option<Instant> {
        let first_text = self.first_text?;
        if self.showing == Some(self.text.len()) {
            return None;
        }
        let paced = [
            Some(first_text + pace.first_after),
            self.last_shown.map(|last| last + pace.every),
            self.not_before,
        ];
        paced.into_iter().flatten().max()
    }
}

async fn sleep_until(due: Option<Instant>) {
    if let Some(due) = due {
        tokio::time::sleep_until(due).await;
    }
}

/// Gives the draft's `messages` to the reply that takes it over: the
/// turn's last answer, else its first text of any kind; when the turn has
/// no text at all, a message of its own withdraws the draft.
pub(super) fn hand_over(replies: &mut Vec<PendingOutbound>, messages: Vec<MessageId>) {
    if messages.is_empty() {
        return;
    }
    let answer = replies
        .iter()
        .rposition(|reply| {
            matches!(
                reply.body,
                OutboundBody::Text {
                    kind: ReplyKind::Answer,
                    ..
                }
            )
        })
        .or_else(|| {
            replies
                .iter()
                .position(|reply| matches!(reply.body, OutboundBody::Text { .. }))
        });
    match answer {
        Some(index) => replies[index].drafts = messages,
        None => replies.insert(
            0,
            PendingOutbound {
                in_reply_to: None,
                body: OutboundBody::Withdraw,
                drafts: messages,
            },
        ),
    }
}

/// Gives a stopped turn's draft `messages` to a message of their own, first
/// among the turn's replies: the gateway removes them or, where what it
/// showed stays on screen, marks `partial` (what they showed) stopped.
/// The message says which one it was stopped answering (`answering`).
pub(super) fn hand_over_stopped(
    replies: &mut Vec<PendingOutbound>,
    messages: Vec<MessageId>,
    partial: String,
    answering: &MessageId,
) {
    if messages.is_empty() {
        return;
    }
    replies.insert(
        0,
        PendingOutbound {
            in_reply_to: Some(answering.clone()),
            body: OutboundBody::Stopped { partial },
            drafts: messages,
        },
    );
}

#[cfg(test)]
#[path = "drafting_tests.rs"]
mod tests;
