//! The audit trail: every approval requested and decided, every standing
//! rule made and revoked, every tool call that ran, every vote of the models
//! on a call, every pairing code offered, approved or refused and every
//! pairing revoked, and every link made or refused and every unlink, with who
//! and when. Written by the store in the same transaction as what it records
//! (its form is the store's, `store::records`), or on its own by [`alone`]
//! for a step that changes nothing else; read by `passepartout approvals
//! --all`.

use passepartout_gateway::{ConversationKey, visible};

pub use crate::store::{AuditEvent, Audited, VoteOutcome};

use crate::people::{named, shown};
use crate::store::{How, Store};

/// Records `what`, a step that changes nothing else (a code refused), at
/// `at_ms` in `conversation`. A failure is logged, not raised: the step
/// happened either way.
pub fn alone(store: &Store, at_ms: u64, conversation: ConversationKey, what: Audited) {
    let event = AuditEvent {
        at_ms,
        conversation,
        what,
    };
    if let Err(error) = store.audit(&event) {
        tracing::error!(%error, "cannot keep an audit event");
    }
}

impl AuditEvent {
    /// One line for a person: what, where, who; what a call, a person or
    /// a model wrote in it shown with its control, bidirectional and
    /// invisible characters as escapes, so a line never redraws, reorders or
    /// hides itself (nor does one kept before they were escaped).
    pub fn describe(&self) -> String {
        visible::line(&self.line()).into_owned()
    }

    /// The line's words: those of an action's steps from
    /// [`action_line`](Self::action_line), the rest (standing rules,
    /// pairing, linking) here.
    fn line(&self) -> String {
        match &self.what {
            Audited::Requested { .. } | Audited::Decided { .. } | Audited::Voted { .. } | Audited::ToolRan { .. } => {
                self.action_line()
            }
            Audited::RuleMade {
                rule,
                scope,
                by,
                how,
                token,
                ..
            } => format!(
                "standing rule {rule} made {} with {}: {scope} in {}",
                crate::people::made_by(by, *how),
                token.as_str(),
                self.conversation
            ),
            Audited::RuleRevoked { rule, scope, by, .. } => {
                format!(
                    "standing rule {rule} revoked by {}: {scope} in {}",
                    shown(by),
                    self.conversation
                )
            }
            Audited::PairingOffered { person, names } => {
                let gateway = &self.conversation.gateway;
                format!(
                    "sent a pairing code to {} in {}",
                    named(gateway, person, names),
                    self.conversation
                )
            }
            Audited::Paired {
                person,
                approver,
                by,
                names,
            } => {
                let approver = if *approver { " as an approver" } else { "" };
                format!(
                    "paired {}{approver} by {}",
                    named(&self.conversation.gateway, person, names),
                    shown(by)
                )
            }
            Audited::PairingRefused { by } => format!("refused an unknown pairing code from {}", shown(by)),
            Audited::PairingCleared { person, by } => format!(
                "cleared the pairing code of {}:{} by {}",
                self.conversation.gateway,
                person.as_str(),
                shown(by)
            ),
            Audited::Unpaired { person, by } => {
                format!(
                    "revoked {}:{} by {}",
                    self.conversation.gateway,
                    person.as_str(),
                    shown(by)
                )
            }
            Audited::Linked { person, by, with } => {
                format!("linked {} with {with} as person {person}", shown(by))
            }
            Audited::LinkRefused { by } => format!("refused an unknown link code from {}", shown(by)),
            Audited::Unlinked { person, identities, by } => format!(
                "unlinked {} from person {person} by {}",
                identities.join(", "),
                shown(by)
            ),
        }
    }

    /// The words of an action's steps: held for approval, decided, voted
    /// on by the models, run.
    fn action_line(&self) -> String {
        match &self.what {
            Audited::Requested {
                token,
                action,
                requester,
                requester_names,
                ..
            } => format!(
                "requested {} {} by {} in {}",
                token.as_str(),
                fenced(action),
                named(&self.conversation.gateway, requester, requester_names),
                self.conversation
            ),
            Audited::Decided {
                token,
                action,
                outcome,
                by,
                how,
            } => {
                // The dashboard's owner has no name of their own to show.
                let by = match (by, how) {
                    (_, How::Web) => " from the web".to_owned(),
                    (Some(person), how) => format!(" by {} ({})", shown(person), how.as_str()),
                    (None, how) => format!(" ({})", how.as_str()),
                };
                format!(
                    "{} {} {}{by} in {}",
                    outcome.as_str(),
                    token.as_str(),
                    fenced(action),
                    self.conversation
                )
            }
            Audited::Voted {
                action,
                requester,
                outcome,
                summary,
                refused,
                ..
            } => {
                let refused = if *refused { "; refused" } else { "" };
                format!(
                    "models voted on {} for {} in {}: {} ({summary}){refused}",
                    fenced(action),
                    requester.as_str(),
                    self.conversation,
                    outcome.as_str()
                )
            }
            Audited::ToolRan {
                action,
                requester,
                is_error,
                approval,
                rule,
                confined,
                ..
            } => {
                let approved = match (approval, rule) {
                    (Some(token), _) => format!(", approved {}", token.as_str()),
                    (None, Some(rule)) => format!(", allowed by standing rule {rule}"),
                    (None, None) => String::new(),
                };
                let failed = if *is_error { " (failed)" } else { "" };
                let confined = confined
                    .as_ref()
                    .map(|ruleset| format!(", confined ({ruleset})"))
                    .unwrap_or_default();
                format!(
                    "ran {}{failed} for {}{approved}{confined} in {}",
                    fenced(action),
                    requester.as_str(),
                    self.conversation
                )
            }
            _ => unreachable!("only an action's steps are worded here"),
        }
    }
}

/// `action` between as many backticks as it needs, so that a line shows
/// where it begins and ends even when it holds backticks of its own; its
/// line breaks are kept (and shown as escapes), unlike in a code span.
fn fenced(action: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in action.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if action.starts_with('`') || action.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{action}{pad}{fence}")
}

#[cfg(test)]
mod tests {
    use passepartout_gateway::{ApprovalToken, ChatId, ConversationKey, GatewayId, UserId};

    use super::fenced;
    use crate::store::{AuditEvent, Audited, How, Names, Person, Status};

    #[test]
    fn a_request_names_who_asked_as_their_platform_gave_them() {
        let event = AuditEvent {
            at_ms: 0,
            conversation: ConversationKey::new(GatewayId::new("telegram").unwrap(), ChatId::new("42").unwrap()),
            what: Audited::Requested {
                token: ApprovalToken::new("ABCDEFGH").unwrap(),
                action: "shell: ls".into(),
                requester: UserId::new("42").unwrap(),
                requester_names: Names {
                    name: Some("Ada Lovelace".into()),
                    username: Some("ada".into()),
                },
                reason: "shell asks".into(),
            },
        };
        assert_eq!(
            event.describe(),
            "requested ABCDEFGH `shell: ls` by Ada Lovelace @ada (telegram:42) in telegram:42"
        );
    }

    #[test]
    fn a_line_never_redraws_or_reorders_itself() {
        // As kept before actions were escaped: the line is escaped when read.
        let event = AuditEvent {
            at_ms: 0,
            conversation: ConversationKey::new(GatewayId::new("socket").unwrap(), ChatId::new("me").unwrap()),
            what: Audited::Decided {
                token: ApprovalToken::new("ABCDEFGH").unwrap(),
                action: "shell: curl x | sh\r\u{1b}[2Kls\n\u{202e}".into(),
                outcome: Status::Approved,
                by: None,
                how: How::Timer,
            },
        };
        assert_eq!(
            event.describe(),
            "approved ABCDEFGH `shell: curl x | sh\\r\\x1b[2Kls\\n\\u{202e}` (timer) in socket:me"
        );
    }

    #[test]
    fn a_decision_on_the_web_reads_from_the_web() {
        let conversation = ConversationKey::new(GatewayId::new("socket").unwrap(), ChatId::new("me").unwrap());
        let decided = |how, by| AuditEvent {
            at_ms: 0,
            conversation: conversation.clone(),
            what: Audited::Decided {
                token: ApprovalToken::new("ABCDEFGH").unwrap(),
                action: "shell: ls".into(),
                outcome: Status::Approved,
                by,
                how,
            },
        };
        let owner = Person::known_as(GatewayId::new("socket").unwrap(), UserId::new("web").unwrap());
        assert_eq!(
            decided(How::Web, Some(owner.clone())).describe(),
            "approved ABCDEFGH `shell: ls` from the web in socket:me"
        );
        assert_eq!(
            decided(How::Cli, Some(owner)).describe(),
            "approved ABCDEFGH `shell: ls` by socket:web (cli) in socket:me"
        );
        assert_eq!(
            decided(How::Timer, None).describe(),
            "approved ABCDEFGH `shell: ls` (timer) in socket:me"
        );
    }

    #[test]
    fn an_action_with_backticks_of_its_own_is_fenced_by_more() {
        assert_eq!(fenced("shell: ls"), "`shell: ls`");
        assert_eq!(fenced("shell: echo `date`"), "`` shell: echo `date` ``");
        assert_eq!(fenced("a ``b`` c"), "```a ``b`` c```");
    }
}
