//! A reload's answer as it may be shown: its message and problems quote
//! the file (`web.public_url "https://u:pw@…" is …`), so every value the
//! masked file hides (see [`crate::config::masked`]) and every configured
//! secret is scrubbed from them before they leave the core — for the
//! dashboard and `passepartout reload` alike.

use passepartout_admin::Reloaded;

use super::AdminContext;
use crate::config::masked;

/// `reloaded` with what the configuration file masks, and the configured
/// secrets, scrubbed from its message and problems. Reads the file: called
/// off the async threads.
pub(super) fn scrubbed(admin: &AdminContext, reloaded: Reloaded) -> Reloaded {
    let file = admin
        .reload
        .inspect()
        .file
        .and_then(|file| std::fs::read_to_string(file).ok())
        .and_then(|text| masked::masked(&text).ok());
    let scrub = |line: &str| {
        let line = file.as_ref().map_or_else(|| line.to_owned(), |file| file.scrub(line));
        (admin.redact)(&line)
    };
    Reloaded {
        message: scrub(&reloaded.message),
        problems: reloaded.problems.iter().map(|problem| scrub(problem)).collect(),
        ..reloaded
    }
}

/// What is answered when the scrubbing itself failed: nothing of the file.
pub(super) fn withheld() -> Reloaded {
    Reloaded {
        applied: false,
        message: "the reload's answer could not be checked for secrets; run `passepartout check-config`".into(),
        ..Reloaded::default()
    }
}
