//! What people are shown of a message the daemon wrote to the model in the
//! person's place: an approval's outcome, a correction of the model's
//! output, a note on a file the person sent, a hand-off's preface. The
//! model reads the message's text; a view of the conversation (the web
//! chat, the Conversations pages) reads its [`Note`] instead, so that the
//! daemon's words to the model never show as the person's.

use serde::{Deserialize, Serialize};

/// What a message the daemon wrote is, for the people who read the
/// conversation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Note {
    /// The person sent media: what they said with it (a caption, what a
    /// voice note said), and what they sent, each in a few words
    /// ("notes.txt", "a voice note").
    Sent {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        said: Option<String>,
        sent: Vec<String>,
    },
    /// Something that happened, in a few words of Markdown: "Denied from
    /// the web: `shell: ls`".
    Event { text: String },
    /// Meant for the model alone (a correction of its output): shown to
    /// nobody.
    Hidden,
}

impl Note {
    /// An event, `text` in Markdown.
    pub fn event(text: impl Into<String>) -> Self {
        Self::Event { text: text.into() }
    }

    /// What a person reads of it, as one line of Markdown; `None` when it
    /// is shown to nobody.
    pub fn shown(&self) -> Option<String> {
        match self {
            Self::Sent { said, sent } => {
                let sent = (!sent.is_empty()).then(|| format!("(sent {})", sent.join(", ")));
                let parts: Vec<&str> = said.iter().map(String::as_str).chain(sent.as_deref()).collect();
                (!parts.is_empty()).then(|| parts.join(" "))
            }
            Self::Event { text } => Some(text.clone()),
            Self::Hidden => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_is_kept_tagged_and_shown_in_a_few_words() {
        let sent = Note::Sent {
            said: Some("for later".into()),
            sent: vec!["notes.txt".into()],
        };
        assert_eq!(
            serde_json::to_value(&sent).unwrap(),
            serde_json::json!({"kind": "sent", "said": "for later", "sent": ["notes.txt"]})
        );
        assert_eq!(sent.shown().as_deref(), Some("for later (sent notes.txt)"));
        let event = Note::event("Denied from the web: `shell: ls`");
        assert_eq!(serde_json::to_value(&event).unwrap()["kind"], "event");
        assert_eq!(event.shown().as_deref(), Some("Denied from the web: `shell: ls`"));
        assert_eq!(Note::Hidden.shown(), None);
        let back: Note = serde_json::from_str(r#"{"kind":"hidden"}"#).unwrap();
        assert_eq!(back, Note::Hidden);
    }
}
