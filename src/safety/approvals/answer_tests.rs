use passepartout_gateway::{ChatId, ConversationKey, GatewayId, Sender, UserId};

use super::*;

fn inbound(body: InboundBody, reply_to: Option<&str>) -> Inbound {
    Inbound {
        conversation: ConversationKey::new(GatewayId::new("socket").unwrap(), ChatId::new("c").unwrap()),
        sender: Sender::new(UserId::new("1").unwrap()),
        message_id: MessageId::new("m").unwrap(),
        reply_to: reply_to.map(|id| MessageId::new(id).unwrap()),
        body,
        received_at_ms: 0,
        overheard: false,
        by_reply_only: false,
        client: None,
    }
}

fn text(text: &str, reply_to: Option<&str>) -> Option<Parsed> {
    parse(&inbound(InboundBody::Text { text: text.into() }, reply_to))
}

fn by_token(choice: Choice, token: &str, how: How) -> Option<Parsed> {
    Some(Parsed::Answer {
        choice,
        target: Target::Token(ApprovalToken::new(token).unwrap()),
        how,
    })
}

fn by_prompt(choice: Choice, prompt: &str, how: How) -> Option<Parsed> {
    Some(Parsed::Answer {
        choice,
        target: Target::Prompt(MessageId::new(prompt).unwrap()),
        how,
    })
}

fn malformed(parsed: Option<Parsed>) -> (String, bool) {
    match parsed {
        Some(Parsed::Malformed { problem, token_like }) => (problem, token_like),
        other => panic!("expected malformed, got {other:?}"),
    }
}

#[test]
fn approve_token_anywhere_in_the_conversation() {
    assert_eq!(
        text("approve K7PX2Q", None),
        by_token(Choice::Approve, "K7PX2Q", How::Token)
    );
    assert_eq!(text("Deny k7px2q.", None), by_token(Choice::Deny, "K7PX2Q", How::Token));
    assert_eq!(
        text("approve K7PX2Q please", None),
        None,
        "more than two words are for the model"
    );
}

#[test]
fn slash_commands_with_a_token_or_replying_to_the_prompt() {
    assert_eq!(
        text("/approve K7PX2Q", None),
        by_token(Choice::Approve, "K7PX2Q", How::Command)
    );
    assert_eq!(
        text("/deny@my_bot K7PX2Q", None),
        by_token(Choice::Deny, "K7PX2Q", How::Command)
    );
    assert_eq!(
        text("/approve", Some("p1")),
        by_prompt(Choice::Approve, "p1", How::Command)
    );
}

#[test]
fn bare_words_count_only_as_replies() {
    for (word, choice) in [
        ("yes", Choice::Approve),
        ("OK!", Choice::Approve),
        ("approve", Choice::Approve),
        ("no", Choice::Deny),
        ("deny", Choice::Deny),
    ] {
        assert_eq!(text(word, Some("p1")), by_prompt(choice, "p1", How::Reply), "{word}");
    }
    assert_eq!(text("yes", None), None, "a bare yes is for the model");
    assert_eq!(text("no", None), None);
    assert_eq!(
        text("yes please do", Some("p1")),
        None,
        "more than a word is for the model"
    );
}

#[test]
fn malformed_commands_are_answered_not_sent_to_the_model() {
    let (problem, token_like) = malformed(text("approve", None));
    assert!(problem.contains("Which approval?"), "{problem}");
    assert!(!token_like);
    let (problem, token_like) = malformed(text("approve !!", None));
    assert!(problem.contains("`!!` is not an approval token"), "{problem}");
    assert!(!token_like, "a slip in plain text is not counted as a guess");
    let (_, token_like) = malformed(text("/approve !!", None));
    assert!(token_like, "a command naming a bad token is");
    let huge = "A".repeat(10 * 1024);
    let (problem, _) = malformed(text(&format!("/approve {huge}"), None));
    assert!(
        problem.len() < 200,
        "a 10 KB token is not echoed back: {} bytes",
        problem.len()
    );
    let (problem, _) = malformed(text(&format!("deny {huge}"), None));
    assert!(problem.contains('…'));
    assert_eq!(
        text("approve this plan for me", None),
        None,
        "ordinary sentences are for the model"
    );
}

#[test]
fn cancel_with_or_without_a_token() {
    assert_eq!(text("/cancel", None), Some(Parsed::Cancel { token: None }));
    assert_eq!(
        text("/cancel k7px2q", None),
        Some(Parsed::Cancel {
            token: Some(ApprovalToken::new("K7PX2Q").unwrap())
        })
    );
    assert!(matches!(text("/cancel !!", None), Some(Parsed::Malformed { .. })));
}

#[test]
fn buttons_and_reactions() {
    let button = |data: &str| parse(&inbound(InboundBody::Button { data: data.into() }, None));
    assert_eq!(
        button("approve:K7PX2Q"),
        by_token(Choice::Approve, "K7PX2Q", How::Button)
    );
    assert_eq!(button("deny:K7PX2Q"), by_token(Choice::Deny, "K7PX2Q", How::Button));
    assert!(matches!(button("approve:??"), Some(Parsed::Malformed { .. })));
    assert_eq!(button("other"), None);
    let reaction = |emoji: &str, removed: bool| {
        parse(&inbound(
            InboundBody::Reaction {
                emoji: emoji.into(),
                target: MessageId::new("p1").unwrap(),
                removed,
            },
            None,
        ))
    };
    assert_eq!(reaction("👍🏽", false), by_prompt(Choice::Approve, "p1", How::Reaction));
    assert_eq!(reaction("👎", false), by_prompt(Choice::Deny, "p1", How::Reaction));
    assert_eq!(reaction("👍", true), None, "taking a reaction back decides nothing");
    assert_eq!(reaction("🎉", false), None);
}

#[test]
fn always_in_every_form_an_approval_takes() {
    assert_eq!(
        text("always K7PX2Q", None),
        by_token(Choice::Always, "K7PX2Q", How::Token)
    );
    assert_eq!(
        text("/always k7px2q", None),
        by_token(Choice::Always, "K7PX2Q", How::Command)
    );
    assert_eq!(text("Always", Some("p1")), by_prompt(Choice::Always, "p1", How::Reply));
    assert_eq!(text("🔁", Some("p1")), by_prompt(Choice::Always, "p1", How::Reply));
    let button = parse(&inbound(
        InboundBody::Button {
            data: "always:K7PX2Q".into(),
        },
        None,
    ));
    assert_eq!(button, by_token(Choice::Always, "K7PX2Q", How::Button));
    let reaction = parse(&inbound(
        InboundBody::Reaction {
            emoji: "🔁".into(),
            target: MessageId::new("p1").unwrap(),
            removed: false,
        },
        None,
    ));
    assert_eq!(reaction, by_prompt(Choice::Always, "p1", How::Reaction));
    assert_eq!(
        text("always remember the milk", None),
        None,
        "an ordinary sentence is for the model"
    );
    let (problem, _) = malformed(text("always", None));
    assert!(problem.contains("`always TOKEN`"), "{problem}");
}

#[test]
fn rules_lists_or_revokes_and_says_what_is_wrong() {
    assert_eq!(text("/rules", None), Some(Parsed::Rules(RulesAsk::List)));
    assert_eq!(text("/rules@my_bot", None), Some(Parsed::Rules(RulesAsk::List)));
    assert_eq!(
        text("/rules revoke 12", None),
        Some(Parsed::Rules(RulesAsk::Revoke(12)))
    );
    assert_eq!(
        text("/rules Revoke #12", None),
        Some(Parsed::Rules(RulesAsk::Revoke(12)))
    );
    for (bad, says) in [
        ("/rules revoke", "Which rule?"),
        ("/rules revoke twelve", "`twelve` is not a rule's number."),
        ("/rules revoke 1 2", "Which rule?"),
        ("/rules delete 12", "`/rules delete` is not something I know."),
    ] {
        let (problem, token_like) = malformed(text(bad, None));
        assert!(problem.starts_with(says), "{bad}: {problem}");
        assert!(problem.contains("/rules revoke ID"), "{bad}: {problem}");
        assert!(!token_like, "{bad}");
    }
    assert_eq!(text("rules", None), None, "without the slash it is for the model");
}
