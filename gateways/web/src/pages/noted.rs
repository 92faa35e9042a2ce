//! The daemon's notes to the model in a conversation's history, as the
//! pages show them. The core marks each message it wrote in the person's
//! place with a `note` (an approval's outcome, a correction, a note on a
//! file the person sent): a page shows what the note says people see — a
//! short event, or what the person said and sent — never the words meant
//! for the model as the person's.

use serde_json::Value;

/// How the core marked, before notes were kept, what it told the model in
/// the person's place: such a message is the daemon's, not the person's.
const DAEMON_NOTE: &str = "[passepartout] ";

/// What a person's message in the history is, for a page.
#[derive(Debug, PartialEq, Eq)]
pub enum Noted<'a> {
    /// Not a note: the person's own words.
    Said(&'a str),
    /// What the person said with what they sent ("notes.txt").
    Sent {
        /// What they said, if anything.
        said: Option<&'a str>,
        /// The files' names.
        sent: Vec<&'a str>,
    },
    /// Something that happened, in Markdown.
    Event(&'a str),
    /// Meant for the model alone.
    Hidden,
}

/// `message` (a `user` message of the history) as a page shows it.
pub fn noted(message: &Value) -> Noted<'_> {
    let content = message["content"].as_str().unwrap_or_default();
    let note = &message["note"];
    match note["kind"].as_str() {
        Some("sent") => Noted::Sent {
            said: note["said"].as_str().filter(|said| !said.trim().is_empty()),
            sent: note["sent"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect(),
        },
        Some("event") => Noted::Event(note["text"].as_str().unwrap_or_default()),
        // A kind this page does not know is no person's words either.
        Some(_) => Noted::Hidden,
        None => match content.strip_prefix(DAEMON_NOTE) {
            Some(kept_before) => Noted::Event(kept_before),
            None => Noted::Said(content),
        },
    }
}

/// "notes.txt", "notes.txt and a photo", "a, b and c".
pub fn listed(sent: &[&str]) -> String {
    match sent {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn each_note_reads_by_its_kind_and_a_note_kept_before_as_the_daemons() {
        let sent = json!({"role": "user", "content": "[The person sent a file…]", "note": {"kind": "sent", "sent": ["notes.txt", "a photo"]}});
        assert_eq!(
            noted(&sent),
            Noted::Sent {
                said: None,
                sent: vec!["notes.txt", "a photo"]
            }
        );
        let event = json!({"role": "user", "content": "[passepartout] … Tell the person", "note": {"kind": "event", "text": "Denied from the web: `ls`"}});
        assert_eq!(noted(&event), Noted::Event("Denied from the web: `ls`"));
        let hidden = json!({"role": "user", "content": "[passepartout] fix your JSON", "note": {"kind": "hidden"}});
        assert_eq!(noted(&hidden), Noted::Hidden);
        let before = json!({"role": "user", "content": "[passepartout] web approved `ls`"});
        assert_eq!(noted(&before), Noted::Event("web approved `ls`"));
        let said = json!({"role": "user", "content": "hello"});
        assert_eq!(noted(&said), Noted::Said("hello"));
        assert_eq!(listed(&["a", "b", "c"]), "a, b and c");
    }
}
