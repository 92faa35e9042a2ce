//! One voter's answer, read strictly. A voter is asked for exactly one JSON
//! object, `{"vote":"agree"|"disagree","reason":"…"}`; anything else — prose,
//! a fence around the object, another key, another word for the vote, no
//! text at all — is no vote. So is a voter that failed or did not answer in
//! time. The reason is kept as one short line: it is shown to people.

use std::fmt;
use std::time::Duration;

use serde::Deserialize;

/// Longest reason kept, in characters; a longer one is cut with "…".
pub const MAX_REASON_CHARS: usize = 200;

/// How one voter voted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Vote {
    /// The call should go ahead, for this reason.
    Agree(String),
    /// It should not, for this reason.
    Disagree(String),
    /// No vote, and why.
    Abstain(Abstention),
}

/// Why a voter did not vote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Abstention {
    /// It did not answer within the voters' timeout.
    TimedOut(Duration),
    /// It was not asked or its call failed (resting after a rate limit,
    /// refused credentials, unreachable, an error status).
    Failed(String),
    /// It answered, but not in the form asked for.
    Malformed,
}

impl fmt::Display for Abstention {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Abstention::TimedOut(after) => write!(f, "no answer within {} s", after.as_secs().max(1)),
            Abstention::Failed(why) => write!(f, "failed: {why}"),
            Abstention::Malformed => f.write_str("answered out of form"),
        }
    }
}

/// The form asked for, and nothing else.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    vote: Word,
    reason: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum Word {
    Agree,
    Disagree,
}

/// Reads a voter's answer text; anything but the asked-for object is an
/// abstention.
pub fn parse(text: &str) -> Vote {
    match serde_json::from_str::<Answer>(text.trim()) {
        Ok(Answer {
            vote: Word::Agree,
            reason,
        }) => Vote::Agree(one_line(&reason)),
        Ok(Answer {
            vote: Word::Disagree,
            reason,
        }) => Vote::Disagree(one_line(&reason)),
        Err(_) => Vote::Abstain(Abstention::Malformed),
    }
}

/// `reason` on one line, its whitespace runs made single spaces, at most
/// [`MAX_REASON_CHARS`] long.
fn one_line(reason: &str) -> String {
    let line = reason.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= MAX_REASON_CHARS {
        return line;
    }
    let mut cut: String = line.chars().take(MAX_REASON_CHARS - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_asked_for_object_is_a_vote() {
        assert_eq!(
            parse(r#"{"vote":"agree","reason":"lists the workspace"}"#),
            Vote::Agree("lists the workspace".into())
        );
        assert_eq!(
            parse("  \n{\"reason\": \"deletes files\\noutside   the repo\", \"vote\": \"disagree\"}\n"),
            Vote::Disagree("deletes files outside the repo".into()),
            "order of keys and surrounding whitespace do not matter; the reason becomes one line"
        );
    }

    #[test]
    fn anything_else_is_an_abstention() {
        for malformed in [
            "",
            "agree",
            "I agree, this is fine.",
            "```json\n{\"vote\":\"agree\",\"reason\":\"ok\"}\n```",
            r#"{"vote":"agree","reason":"ok"} and more"#,
            r#"{"vote":"Agree","reason":"ok"}"#,
            r#"{"vote":"yes","reason":"ok"}"#,
            r#"{"vote":"abstain","reason":"unsure"}"#,
            r#"{"vote":"agree"}"#,
            r#"{"vote":"agree","reason":7}"#,
            r#"{"vote":"agree","reason":"ok","confidence":0.9}"#,
            r#"[{"vote":"agree","reason":"ok"}]"#,
            r#"{"vote":true,"reason":"ok"}"#,
        ] {
            assert_eq!(parse(malformed), Vote::Abstain(Abstention::Malformed), "{malformed:?}");
        }
    }

    #[test]
    fn a_long_reason_is_cut_to_a_line_people_can_read() {
        let long = "x".repeat(MAX_REASON_CHARS + 50);
        let Vote::Disagree(reason) = parse(&format!(r#"{{"vote":"disagree","reason":"{long}"}}"#)) else {
            panic!("a vote");
        };
        assert_eq!(reason.chars().count(), MAX_REASON_CHARS);
        assert!(reason.ends_with('…'));
    }
}
