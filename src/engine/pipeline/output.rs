//! What a turn produces: the record the history keeps, the writes and
//! replies the worker commits in one transaction, and what the models'
//! answers cost.

use passepartout_gateway::markup::escape;
use passepartout_gateway::{ApprovalToken, MessageId, OutboundFile, ReplyKind, UserId};
use serde::{Deserialize, Serialize};

use super::commands::{ChannelAsk, ChatChange};
use super::compaction::Folded;
use crate::model::llm::{ChatMessage, ChatResponse};
use crate::people::audit::AuditEvent;
use crate::safety::approvals::{Approval, Owed, RunState};
use crate::store::{ByProvider, MemoryWrite, Tokens};

/// One finished turn as kept in the conversation's history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TurnRecord {
    pub messages: Vec<ChatMessage>,
    /// When the turn was committed, in milliseconds since the Unix epoch;
    /// what history search and retention go by. Turns kept before it was
    /// recorded have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_ms: Option<u64>,
    /// Who started the turn: a person's turns are found by a history search
    /// over all of that person's conversations. Turns kept before it was
    /// recorded, and loops' iterations, have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<UserId>,
}

/// What a turn did to the conversation's running summary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SummaryChange {
    /// The oldest turns it was given were folded into a new summary.
    Folded(Folded),
    /// The summary is left behind (`/new`).
    Clear,
}

/// What a turn produced, to be committed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TurnOutput {
    pub replies: Vec<(ReplyKind, String)>,
    /// Files sent by the turn (`send_file`); they go out before the replies.
    pub files: Vec<OutboundFile>,
    /// The turn for the history, when it is to be remembered.
    pub record: Option<TurnRecord>,
    /// Delete the conversation's history (`/forget`).
    pub forget: bool,
    /// Facts remembered and forgotten during the turn.
    pub memory: Vec<MemoryWrite>,
    /// Approvals the turn asks for; their prompts follow the replies.
    pub requested: Vec<Approval>,
    /// Approvals whose outcome this turn told, with how an approved run ended.
    pub settled: Vec<(ApprovalToken, Option<RunState>)>,
    /// Approvals whose outcome is owed because of this turn's answer.
    pub settle: Vec<Owed>,
    /// Decided approvals' prompts to edit: the token, the prompt's platform
    /// id, what it shows now. Sent before the replies.
    pub decided: Vec<(ApprovalToken, MessageId, String)>,
    /// Tool calls that ran.
    pub audit: Vec<AuditEvent>,
    /// What the models' answers cost.
    pub cost: Cost,
    /// Why no model answered, when none did.
    pub unanswered: Option<String>,
    /// What the conversation set for itself (`/model NAME`, `/new`).
    pub chat: Option<ChatChange>,
    /// The running summary's change, committed with the turn.
    pub summary: Option<SummaryChange>,
    /// What the person asked of their linked channels (`/handoff`,
    /// `/continue`, `/here`), for the worker to answer.
    pub channels: Option<ChannelAsk>,
}

/// The tokens a turn used, and the model that answered last.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cost {
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub model: Option<String>,
    /// The tokens by the provider that used them, for `/usage`.
    pub by_provider: ByProvider,
}

impl TurnOutput {
    pub(super) fn notice(text: String) -> Self {
        Self {
            replies: vec![(ReplyKind::Notice, text)],
            ..Self::default()
        }
    }

    /// Nothing but `ask`, for the worker to answer.
    pub(super) fn asking(ask: ChannelAsk) -> Self {
        Self {
            channels: Some(ask),
            ..Self::default()
        }
    }

    /// Puts `told` (what could not be read of the person's media) before the
    /// replies, and shows what was `heard` in a voice note: at the head of
    /// the first answer, or on its own when there is none.
    pub(super) fn tell_first(&mut self, mut told: Vec<(ReplyKind, String)>, heard: &[String]) {
        if !heard.is_empty() {
            let shown = heard
                .iter()
                .map(|text| format!("“{}”", escape(text)))
                .collect::<Vec<_>>()
                .join(" ");
            match self.replies.iter_mut().find(|(kind, _)| *kind == ReplyKind::Answer) {
                Some((_, answer)) => *answer = format!("I heard: {shown}\n\n{answer}"),
                None => told.push((ReplyKind::Notice, format!("I heard: {shown}"))),
            }
        }
        self.replies.splice(0..0, told);
    }

    /// Tells the person that no model answered, and why.
    pub(super) fn no_model_answered(&mut self, why: String) {
        self.replies.push((ReplyKind::Failure, why.clone()));
        self.unanswered = Some(why);
    }

    /// What the person was told and what it cost, with nothing of the turn
    /// kept: for a turn in which nothing happened.
    pub(super) fn nothing_kept(self) -> Self {
        Self {
            replies: self.replies,
            files: self.files,
            unanswered: self.unanswered,
            cost: self.cost,
            ..Self::default()
        }
    }
}

impl Cost {
    /// Adds what `response` from `provider` cost; its model is now the one
    /// that answered last.
    pub(super) fn count(&mut self, response: &ChatResponse, provider: &str) {
        self.tokens_in += response.usage.input_tokens;
        self.tokens_out += response.usage.output_tokens;
        self.model = Some(response.model.clone());
        let used = Tokens {
            tokens_in: response.usage.input_tokens,
            tokens_out: response.usage.output_tokens,
        };
        crate::store::add_usage(&mut self.by_provider, &ByProvider::from([(provider.to_owned(), used)]));
    }

    /// Adds what the consensus gate's voters used, by provider; `/usage`
    /// shows it apart from the turns' own.
    pub(super) fn count_votes(&mut self, voted: &ByProvider) {
        for (provider, used) in voted {
            self.tokens_in += used.tokens_in;
            self.tokens_out += used.tokens_out;
            let key = super::usage_report::votes_of(provider);
            crate::store::add_usage(&mut self.by_provider, &ByProvider::from([(key, *used)]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(replies: &[(ReplyKind, &str)]) -> TurnOutput {
        TurnOutput {
            replies: replies.iter().map(|(kind, text)| (*kind, (*text).to_owned())).collect(),
            ..TurnOutput::default()
        }
    }

    #[test]
    fn what_was_heard_heads_the_answer_and_what_could_not_be_read_comes_first() {
        let mut answered = output(&[(ReplyKind::Notice, "n"), (ReplyKind::Answer, "Sure.")]);
        let told = vec![(ReplyKind::Notice, "I can't watch videos yet.".to_owned())];
        answered.tell_first(told, &["call mum".to_owned()]);
        assert_eq!(
            answered.replies,
            [
                (ReplyKind::Notice, "I can't watch videos yet.".to_owned()),
                (ReplyKind::Notice, "n".to_owned()),
                (ReplyKind::Answer, "I heard: “call mum”\n\nSure.".to_owned()),
            ]
        );
    }

    #[test]
    fn without_an_answer_what_was_heard_is_a_notice_of_its_own() {
        let mut failed = output(&[(ReplyKind::Failure, "No language model answered.")]);
        failed.tell_first(Vec::new(), &["call mum".to_owned()]);
        assert_eq!(
            failed.replies,
            [
                (ReplyKind::Notice, "I heard: “call mum”".to_owned()),
                (ReplyKind::Failure, "No language model answered.".to_owned()),
            ]
        );
        let mut untouched = output(&[(ReplyKind::Answer, "Hi.")]);
        untouched.tell_first(Vec::new(), &[]);
        assert_eq!(untouched.replies, [(ReplyKind::Answer, "Hi.".to_owned())]);
    }
}
