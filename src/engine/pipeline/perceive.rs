//! Perceive: turn an inbound message into a [`Signal`] — or into an approval
//! answer or a command, which are handled here and never reach the model.

use passepartout_gateway::{Inbound, InboundBody};

use crate::model::signal::{MediaMessage, Message, Origin, Signal, SignalBody, Unreadable};
use crate::safety::approvals::{Parsed, answer};

/// A slash command, handled without the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    Help,
    Status,
    Forget,
    /// What waits for approval in this conversation.
    Approvals,
    /// The background loops, as `passepartout loops` shows them.
    Loops,
    /// `/model`: list the providers; `/model NAME` pins one for this
    /// conversation, `/model auto` returns to the cascade.
    Model(Option<String>),
    /// Tokens and their estimated cost, here and in total.
    Usage,
    /// The tools offered here, each with its source and its gate.
    Tools,
    /// A fresh context; the history stays.
    New,
    /// The conversation's running summary.
    Summary,
    /// End the conversation's running turn (acted on at intake; the
    /// command's own turn says whether one was stopped).
    Stop,
    /// `/handoff CHANNEL`: go on in the person's linked private chat there.
    Handoff(Option<String>),
    /// `/continue`: carry over the person's latest conversation elsewhere.
    Continue,
    /// `/here`: what comes unasked (reminders, loops) comes to this chat.
    Here,
    Unknown(String),
}

/// What perceive made of an inbound message.
#[derive(Clone, Debug, PartialEq)]
pub enum Perception {
    /// A signal for reason.
    Signal(Signal),
    /// A command for the daemon itself.
    Command(Command),
    /// An answer to an approval prompt (or something meant as one).
    Answer(Parsed),
    /// Nothing to do (an empty message, a reaction that answers nothing).
    Ignore,
}

/// Normalizes `inbound`: approval answers first.
pub fn perceive(inbound: &Inbound) -> Perception {
    match answer::parse(inbound) {
        Some(parsed) => Perception::Answer(parsed),
        None => ordinary(inbound),
    }
}

/// Normalizes `inbound` as anything but an approval answer (a bare "yes"
/// that replied to a message which turned out not to be a prompt).
pub fn ordinary(inbound: &Inbound) -> Perception {
    let origin = Origin {
        conversation: inbound.conversation.clone(),
        sender: inbound.sender.id.clone(),
        message_id: inbound.message_id.clone(),
        sender_names: crate::store::Names::of(&inbound.sender),
    };
    let body = match &inbound.body {
        InboundBody::Text { text } => {
            let text = text.trim();
            if text.is_empty() {
                return Perception::Ignore;
            }
            if let Some(command) = parse_command(text) {
                return Perception::Command(command);
            }
            SignalBody::Message(Message { text: text.to_owned() })
        }
        InboundBody::Unsupported { what } => SignalBody::Unreadable(Unreadable { what: what.clone() }),
        InboundBody::Media { attachments, caption } => {
            let caption = caption.as_deref().map(str::trim).filter(|c| !c.is_empty());
            if attachments.is_empty() && caption.is_none() {
                return Perception::Ignore;
            }
            SignalBody::Media(MediaMessage {
                attachments: attachments.clone(),
                caption: caption.map(str::to_owned),
            })
        }
        InboundBody::Button { .. } => SignalBody::Unreadable(Unreadable {
            what: "button press".into(),
        }),
        // An edit or a deletion only ever changes the copies in a bridge.
        InboundBody::Reaction { .. } | InboundBody::Edited { .. } | InboundBody::Deleted { .. } => {
            return Perception::Ignore;
        }
    };
    Perception::Signal(Signal { origin, depth: 0, body })
}

/// `/name args…`, where a Telegram-style `/name@bot` counts as `/name`.
fn parse_command(text: &str) -> Option<Command> {
    let mut words = text.strip_prefix('/')?.split_whitespace();
    let word = words.next()?;
    let name = word.split('@').next().unwrap_or(word).to_ascii_lowercase();
    Some(match name.as_str() {
        "help" | "start" => Command::Help,
        "status" => Command::Status,
        "forget" => Command::Forget,
        "approvals" => Command::Approvals,
        "loops" => Command::Loops,
        "model" => Command::Model(words.next().map(str::to_owned)),
        "usage" => Command::Usage,
        "tools" => Command::Tools,
        "new" => Command::New,
        "summary" => Command::Summary,
        "stop" => Command::Stop,
        "handoff" => Command::Handoff(words.next().map(str::to_ascii_lowercase)),
        "continue" => Command::Continue,
        "here" => Command::Here,
        _ => Command::Unknown(name),
    })
}

#[cfg(test)]
mod tests {
    use passepartout_gateway::{ChatId, ConversationKey, GatewayId, MessageId, Sender, UserId};

    use super::*;

    fn inbound(body: InboundBody) -> Inbound {
        Inbound {
            conversation: ConversationKey::new(GatewayId::new("socket").unwrap(), ChatId::new("c").unwrap()),
            sender: Sender::new(UserId::new("1").unwrap()),
            message_id: MessageId::new("m").unwrap(),
            reply_to: None,
            body,
            received_at_ms: 0,
            overheard: false,
            by_reply_only: false,
            client: None,
        }
    }

    fn text(text: &str) -> Perception {
        perceive(&inbound(InboundBody::Text { text: text.into() }))
    }

    #[test]
    fn text_becomes_a_message_signal_at_depth_zero() {
        let Perception::Signal(signal) = text("  hello  ") else {
            panic!()
        };
        assert_eq!(signal.depth, 0);
        assert_eq!(signal.body, SignalBody::Message(Message { text: "hello".into() }));
    }

    #[test]
    fn slash_commands_never_reach_reason() {
        assert_eq!(text("/help"), Perception::Command(Command::Help));
        assert_eq!(text("/status@my_bot"), Perception::Command(Command::Status));
        assert_eq!(text("/FORGET now"), Perception::Command(Command::Forget));
        assert_eq!(text("/approvals"), Perception::Command(Command::Approvals));
        assert_eq!(text("/loops"), Perception::Command(Command::Loops));
        assert_eq!(text("/model"), Perception::Command(Command::Model(None)));
        assert_eq!(
            text("/model@my_bot  Big-One extra"),
            Perception::Command(Command::Model(Some("Big-One".into())))
        );
        assert_eq!(text("/usage"), Perception::Command(Command::Usage));
        assert_eq!(text("/new"), Perception::Command(Command::New));
        assert_eq!(text("/summary"), Perception::Command(Command::Summary));
        assert_eq!(text("/stop"), Perception::Command(Command::Stop));
        assert_eq!(
            text("/frobnicate"),
            Perception::Command(Command::Unknown("frobnicate".into()))
        );
    }

    #[test]
    fn empty_text_and_reactions_that_answer_nothing_are_ignored() {
        assert_eq!(text("   "), Perception::Ignore);
        let reaction = InboundBody::Reaction {
            emoji: "🎉".into(),
            target: MessageId::new("x").unwrap(),
            removed: false,
        };
        assert_eq!(perceive(&inbound(reaction)), Perception::Ignore);
    }

    #[test]
    fn approval_answers_come_first_even_when_they_look_like_commands() {
        assert!(matches!(text("/approve K7PX2Q"), Perception::Answer(_)));
        assert!(matches!(text("approve K7PX2Q"), Perception::Answer(_)));
        assert!(
            matches!(text("approve"), Perception::Answer(_)),
            "malformed, answered as such"
        );
        let thumbs = InboundBody::Reaction {
            emoji: "👍".into(),
            target: MessageId::new("prompt").unwrap(),
            removed: false,
        };
        assert!(matches!(perceive(&inbound(thumbs)), Perception::Answer(_)));
        assert!(matches!(
            ordinary(&inbound(InboundBody::Text { text: "yes".into() })),
            Perception::Signal(_)
        ));
    }

    #[test]
    fn media_becomes_a_media_signal_with_its_caption() {
        let voice = passepartout_gateway::Attachment {
            kind: passepartout_gateway::MediaKind::Voice,
            file: passepartout_gateway::FileRef("f1".into()),
            mime: None,
            size: None,
            name: None,
            duration_s: Some(3),
        };
        let media = InboundBody::Media {
            attachments: vec![voice.clone()],
            caption: Some("  listen  ".into()),
        };
        let Perception::Signal(signal) = perceive(&inbound(media)) else {
            panic!()
        };
        assert_eq!(
            signal.body,
            SignalBody::Media(MediaMessage {
                attachments: vec![voice],
                caption: Some("listen".into()),
            })
        );
        let nothing = InboundBody::Media {
            attachments: vec![],
            caption: Some(" ".into()),
        };
        assert_eq!(perceive(&inbound(nothing)), Perception::Ignore);
    }

    #[test]
    fn what_cannot_be_read_is_named() {
        let Perception::Signal(signal) = perceive(&inbound(InboundBody::Unsupported { what: "photo".into() })) else {
            panic!()
        };
        assert_eq!(signal.body, SignalBody::Unreadable(Unreadable { what: "photo".into() }));
    }
}
