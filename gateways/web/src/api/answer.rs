//! One answer as an API client reads it: the text the core says in reply to
//! the request's message (drafts while it is written, then the replies,
//! approval prompts and files of the turn), put together in order, each new
//! piece handed out once. A draft and the reply that takes it over are the
//! same text, so the reply adds only what the draft had not yet shown.
//!
//! An approval prompt is shown to a key that may not approve (one not made
//! with `--approver`) as a notice that the owner must approve it on the
//! dashboard's Approvals page, never with words it cannot act on.

use std::sync::Arc;

use passepartout_gateway::markup::code;
use passepartout_gateway::{ApprovalToken, TurnEnd};

use crate::hub::{Heard, Said};
use crate::redact::{Redacted, Secrets};

/// What has been said so far.
#[derive(Default)]
pub struct Answer {
    /// Kept out of what is handed out.
    secrets: Arc<Secrets>,
    /// How much of the redacted text was handed out.
    redacted: Redacted,
    /// Everything handed out.
    text: String,
    /// The draft of the reply being written.
    drafted: String,
    /// How much of it was handed out: a prefix of `drafted` until the
    /// draft starts over otherwise.
    shown: String,
    /// Set once the turn is over.
    ended: Option<TurnEnd>,
    /// What every turn of the answer used so far.
    used: TurnEnd,
    /// The caller may not approve what it asked for.
    may_not_approve: bool,
    /// An approval the answer's last turn asked for, still waiting.
    waiting: bool,
}

/// Where the owner approves what a plain key asked for.
pub const APPROVALS_PAGE: &str = "/approvals";

impl Answer {
    /// An answer from which `secrets` are kept out.
    pub fn new(secrets: Arc<Secrets>) -> Self {
        Self {
            secrets,
            ..Self::default()
        }
    }

    /// An answer for a caller that may not approve what it asks for.
    pub fn for_a_key_that_may_not_approve(self) -> Self {
        Self {
            may_not_approve: true,
            ..self
        }
    }

    /// Takes in `heard`, said earlier and not heard then (an approval's
    /// outcome): its text opens the answer, and it ends nothing. The text
    /// it adds, secrets redacted.
    pub fn take_missed(&mut self, heard: &Heard) -> String {
        let heard = Heard {
            turn_end: None,
            ..heard.clone()
        };
        self.take(&heard)
    }

    /// Adds `note`, a paragraph of the daemon's own; the text it adds.
    pub fn note(&mut self, note: &str) -> String {
        self.separate(note);
        self.redacted.next(&self.secrets, &self.text, self.ended.is_some())
    }

    /// Whether the turn ended with an approval still waiting.
    pub fn waits_for_a_decision(&self) -> bool {
        self.ended.is_some() && self.waiting
    }

    /// Goes on after an approval: the outcome's turn is the answer's next
    /// part, and its end the answer's end.
    pub fn go_on(&mut self) {
        self.ended = None;
        self.waiting = false;
    }

    /// Takes in `heard`; the text it adds to what was handed out (maybe
    /// none), secrets redacted.
    pub fn take(&mut self, heard: &Heard) -> String {
        self.take_raw(heard);
        self.redacted.next(&self.secrets, &self.text, self.ended.is_some())
    }

    /// Takes in `heard`; the text it adds as written.
    fn take_raw(&mut self, heard: &Heard) -> String {
        let added = match &heard.said {
            Said::Draft { text, restart } => {
                if *restart {
                    self.drafted.clone_from(text);
                } else {
                    self.drafted.push_str(text);
                }
                // A draft that started over cannot take back what was sent:
                // the reply then comes whole at the end.
                match self.drafted.strip_prefix(self.shown.as_str()) {
                    Some(news) if !news.is_empty() => {
                        let news = if self.shown.is_empty() && !self.text.is_empty() {
                            format!("\n\n{news}")
                        } else {
                            news.to_owned()
                        };
                        self.shown.clone_from(&self.drafted);
                        self.text.push_str(&news);
                        news
                    }
                    _ => String::new(),
                }
            }
            Said::Reply { text, .. } => self.reply(text),
            Said::Approval { token, text } => {
                self.waiting = true;
                if self.may_not_approve {
                    self.separate(&owner_approves(text, token))
                } else {
                    self.separate(text)
                }
            }
            Said::File { name, caption, .. } => {
                let note = match caption {
                    Some(caption) => format!("(A file, {name}: {caption} It is in the assistant's workspace.)"),
                    None => format!("(A file, {name}. It is in the assistant's workspace.)"),
                };
                self.separate(&note)
            }
            Said::Stopped { partial } if self.shown.is_empty() && !partial.is_empty() => self.separate(partial),
            Said::Stopped { .. } | Said::Nothing => String::new(),
        };
        if let Some(end) = heard.turn_end {
            self.used.tokens_in += end.tokens_in;
            self.used.tokens_out += end.tokens_out;
            self.ended = Some(self.used);
        } else if !matches!(heard.said, Said::Approval { .. } | Said::Nothing) {
            // Said after the prompt: the outcome has come.
            self.waiting = false;
        }
        added
    }

    /// The whole answer so far, secrets redacted.
    pub fn text(&self) -> String {
        self.secrets.redact(&self.text)
    }

    /// What the turn used, once it is over.
    pub fn ended(&self) -> Option<TurnEnd> {
        self.ended
    }

    /// A reply: the rest of what its draft showed, or the reply whole.
    fn reply(&mut self, text: &str) -> String {
        if !self.shown.is_empty()
            && let Some(rest) = text.strip_prefix(self.shown.as_str())
        {
            let rest = rest.to_owned();
            self.text.push_str(&rest);
            self.drafted.clear();
            self.shown.clear();
            return rest;
        }
        self.separate(text)
    }

    /// `text` as a paragraph of its own after what was said.
    fn separate(&mut self, text: &str) -> String {
        let added = if self.text.is_empty() {
            text.to_owned()
        } else {
            format!("\n\n{text}")
        };
        self.text.push_str(&added);
        self.drafted.clear();
        self.shown.clear();
        added
    }
}

/// An approval `prompt` as a key that may not approve is shown it: how to
/// answer it (which only the owner may) becomes where the owner does, and
/// the offer of a standing rule goes.
fn owner_approves(prompt: &str, token: &ApprovalToken) -> String {
    let token = token.as_str();
    let how = format!(
        "Send {} or {}.",
        code(&format!("approve {token}")),
        code(&format!("deny {token}"))
    );
    let always = format!("Send {} ", code(&format!("always {token}")));
    let owner = format!("Only the owner can approve it, on the dashboard's Approvals page ({APPROVALS_PAGE}).");
    let mut shown: Vec<String> = prompt
        .lines()
        .filter(|line| !line.starts_with(&always))
        .map(|line| line.replace(&how, &owner))
        .collect();
    if !shown.iter().any(|line| line.contains(&owner)) {
        shown.push(owner);
    }
    shown.join("\n").trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use passepartout_gateway::{ApprovalToken, ReplyKind};

    use super::*;

    fn heard(said: Said, end: bool) -> Heard {
        Heard {
            in_reply_to: None,
            said,
            turn_end: end.then_some(TurnEnd {
                tokens_in: 5,
                tokens_out: 3,
            }),
        }
    }

    fn draft(text: &str, restart: bool) -> Heard {
        heard(
            Said::Draft {
                text: text.into(),
                restart,
            },
            false,
        )
    }

    fn reply(text: &str, end: bool) -> Heard {
        heard(
            Said::Reply {
                text: text.into(),
                kind: ReplyKind::Answer,
            },
            end,
        )
    }

    #[test]
    fn drafts_stream_and_the_reply_adds_only_what_they_had_not_shown() {
        let mut answer = Answer::default();
        assert_eq!(answer.take(&draft("Hel", true)), "Hel");
        assert_eq!(answer.take(&draft("lo", false)), "lo");
        assert_eq!(answer.ended(), None);
        assert_eq!(answer.take(&reply("Hello, world", true)), ", world");
        assert_eq!(answer.text(), "Hello, world");
    }

    #[test]
    fn a_configured_secret_never_leaves_in_a_draft_or_a_reply() {
        let secret = "sk-canary-7f3a9c1e5b";
        let mut answer = Answer::new(Arc::new(Secrets::new([secret.to_owned()])));
        let mut out = answer.take(&draft("The key is sk-canary-", true));
        out += &answer.take(&draft("7f3a9c1e5b, see", false));
        assert!(!out.contains("sk-canary"), "{out}");
        out += &answer.take(&reply("The key is sk-canary-7f3a9c1e5b, see?", true));
        assert_eq!(out, "The key is [redacted], see?");
        assert_eq!(answer.text(), out);
        assert_eq!(answer.ended().unwrap().tokens_in, 5);
    }

    #[test]
    fn a_draft_that_started_over_sends_nothing_and_the_reply_follows_whole() {
        let mut answer = Answer::default();
        answer.take(&draft("Maybe", true));
        assert_eq!(answer.take(&draft("Yes", true)), "");
        assert_eq!(answer.take(&reply("Yes.", true)), "\n\nYes.");
    }

    #[test]
    fn an_approval_prompt_and_a_file_are_paragraphs_of_the_answer() {
        let mut answer = Answer::default();
        assert_eq!(answer.take(&reply("I need to run it.", false)), "I need to run it.");
        let token = ApprovalToken::new("ABC234").unwrap();
        let prompt = heard(
            Said::Approval {
                token,
                text: "Approve? approve ABC234".into(),
            },
            true,
        );
        assert_eq!(answer.take(&prompt), "\n\nApprove? approve ABC234");
        let mut files = Answer::default();
        let file = heard(
            Said::File {
                name: "a.pdf".into(),
                caption: None,
                outbound: "1-0".into(),
            },
            false,
        );
        assert!(files.take(&file).contains("a.pdf"));
    }

    #[test]
    fn a_key_that_may_not_approve_is_told_where_the_owner_does_and_waits_for_the_outcome() {
        let token = ApprovalToken::new("ABC234").unwrap();
        let text = "**Approval needed** (`ABC234`): `ls`\nWhy: risky.\nSend `approve ABC234` or `deny ABC234`. \
                    Expires in 10 minutes; unanswered, it does not run.\n\n```\nls\n```\n\n\
                    Send `always ABC234` to also let `ls` run here without asking, for 30 days.";
        let prompt = heard(
            Said::Approval {
                token: token.clone(),
                text: text.into(),
            },
            true,
        );
        let mut plain = Answer::default().for_a_key_that_may_not_approve();
        let shown = plain.take(&prompt);
        assert!(
            !shown.contains("approve ABC234") && !shown.contains("always ABC234"),
            "{shown}"
        );
        assert!(
            shown.contains("Only the owner can approve it") && shown.contains("(/approvals)"),
            "{shown}"
        );
        assert!(shown.contains("```\nls\n```"), "the action stays: {shown}");
        assert!(plain.waits_for_a_decision());
        plain.go_on();
        assert_eq!(plain.ended(), None);
        assert_eq!(plain.take(&reply("Approved; it ran.", true)), "\n\nApproved; it ran.");
        assert!(!plain.waits_for_a_decision());
        assert_eq!(plain.ended().unwrap().tokens_in, 10, "both turns counted");

        let mut approver = Answer::default();
        assert_eq!(
            approver.take(&prompt),
            text,
            "an approver key is shown the prompt as it is"
        );
        let mut missed = Answer::default();
        assert_eq!(missed.take_missed(&reply("It ran.", true)), "It ran.");
        assert_eq!(missed.ended(), None, "what was missed ends nothing");
    }
}
