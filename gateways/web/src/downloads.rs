//! Files the assistant sends into the owner's web conversation (its
//! `send_file` tool), held for the Chat page to offer as downloads. The
//! core hands the gateway a copy that it removes once the message is
//! delivered, so the bytes are read at delivery and kept in memory: at most
//! [`KEPT`] files (the oldest goes first), each at most [`MAX_BYTES`], and
//! none across a restart (the history still says the file was sent).
//!
//! A file is named in its link by its outbound message's id in base64url,
//! and always served as an attachment of no particular type, so that no
//! file the model picked can run as a page of this dashboard.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// Files held at once, at most.
pub const KEPT: usize = 16;

/// The largest file held, in bytes.
pub const MAX_BYTES: u64 = 25 * 1024 * 1024;

/// One file the assistant sent.
#[derive(Debug, PartialEq, Eq)]
pub struct Download {
    /// Its path segment under `/chat/files/`.
    pub key: String,
    /// The chat it was sent in (the conversation's chat id).
    pub chat: String,
    pub name: String,
    pub caption: Option<String>,
    pub bytes: Vec<u8>,
}

/// The path segment of the file sent in outbound message `id`.
pub fn key(outbound_id: &str) -> String {
    URL_SAFE_NO_PAD.encode(outbound_id)
}

/// The files held, oldest first.
#[derive(Default)]
pub struct Downloads {
    held: Mutex<VecDeque<Arc<Download>>>,
}

impl Downloads {
    /// Holds `download`, letting the oldest go past [`KEPT`]; one sent
    /// again (a delivery retried) replaces its copy.
    pub fn hold(&self, download: Download) {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        held.retain(|d| d.key != download.key);
        while held.len() >= KEPT {
            held.pop_front();
        }
        held.push_back(Arc::new(download));
    }

    /// The file under `key`, if held.
    pub fn get(&self, key: &str) -> Option<Arc<Download>> {
        let held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        held.iter().find(|d| d.key == key).cloned()
    }

    /// Every file held, oldest first.
    pub fn list(&self) -> Vec<Arc<Download>> {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .cloned()
            .collect()
    }
}

/// `name` as a `Content-Disposition` file name: ASCII letters, digits,
/// `.`, `-` and `_`; anything else becomes `_` (the name is the model's).
pub fn safe_name(name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let safe = safe.trim_start_matches('.');
    if safe.is_empty() { "file".into() } else { safe.into() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn download(id: &str) -> Download {
        Download {
            key: key(id),
            chat: "owner".into(),
            name: format!("{id}.txt"),
            caption: None,
            bytes: id.as_bytes().to_vec(),
        }
    }

    #[test]
    fn a_file_is_found_by_its_key_and_the_oldest_goes_past_the_cap() {
        let downloads = Downloads::default();
        for n in 0..=KEPT {
            downloads.hold(download(&format!("1-{n}")));
        }
        assert!(downloads.get(&key("1-0")).is_none());
        assert_eq!(downloads.get(&key("1-1")).unwrap().bytes, b"1-1");
        downloads.hold(download("1-1"));
        assert_eq!(downloads.list().len(), KEPT, "sent again, held once");
    }

    #[test]
    fn a_file_name_cannot_break_out_of_its_header() {
        assert_eq!(safe_name("report 2024.pdf"), "report_2024.pdf");
        assert_eq!(safe_name("a\";\r\nSet-Cookie: x"), "a____Set-Cookie__x");
        assert_eq!(safe_name("..."), "file");
    }
}
