//! No answer shows a configured secret: the core hands the gateway the
//! secrets it was configured with (model providers' keys, the Telegram
//! token, …), and every text the API hands out has them replaced by
//! [`REDACTED`]. A streamed answer is handed out a little behind what was
//! written — the length of the longest secret, less one — so a secret that
//! arrives in two pieces is never half shown.

/// What a secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Secrets shorter than this are not looked for: they would match
/// ordinary words.
const MIN_SECRET: usize = 8;

/// The secrets to keep out of answers. `Debug` shows how many, never them.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secrets {
    values: Vec<String>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secrets({})", self.values.len())
    }
}

impl Secrets {
    pub fn new(values: impl IntoIterator<Item = String>) -> Self {
        let mut values: Vec<String> = values.into_iter().filter(|v| v.len() >= MIN_SECRET).collect();
        // The longest first, so one that contains another goes whole.
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        Self { values }
    }

    /// `text` with every secret replaced.
    pub fn redact(&self, text: &str) -> String {
        self.values
            .iter()
            .fold(text.to_owned(), |text, secret| text.replace(secret.as_str(), REDACTED))
    }

    /// A text still being written, redacted, less its tail where a
    /// secret's start may be (shown whole once the rest of it arrives).
    pub fn redact_growing(&self, text: &str) -> String {
        let mut shown = self.redact(text);
        let mut upto = shown.len().saturating_sub(self.hold_back());
        while !shown.is_char_boundary(upto) {
            upto -= 1;
        }
        shown.truncate(upto);
        shown
    }

    /// How many bytes of a growing text to hold back: a secret's start may
    /// be in them.
    pub fn hold_back(&self) -> usize {
        self.values.first().map_or(0, |longest| longest.len() - 1)
    }
}

/// Hands out a growing text redacted, each byte once, the held-back tail
/// only when the text is complete.
#[derive(Default)]
pub struct Redacted {
    given: usize,
}

impl Redacted {
    /// What of `text` (all written so far, redacted whole) is new and safe
    /// to hand out; all of it when `complete`.
    pub fn next(&mut self, secrets: &Secrets, text: &str, complete: bool) -> String {
        let shown = secrets.redact(text);
        let hold = if complete { 0 } else { secrets.hold_back() };
        let mut upto = shown.len().saturating_sub(hold).max(self.given);
        while !shown.is_char_boundary(upto) {
            upto -= 1;
        }
        let news = shown.get(self.given..upto).unwrap_or_default().to_owned();
        self.given = self.given.max(upto);
        news
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_replaced_and_short_ones_are_not_looked_for() {
        let secrets = Secrets::new(["sk-canary-123456".to_owned(), "abc".to_owned()]);
        assert_eq!(secrets.redact("key: sk-canary-123456 abc"), "key: [redacted] abc");
    }

    #[test]
    fn a_secret_streamed_in_pieces_is_never_half_shown() {
        let secrets = Secrets::new(["sk-canary-123456".to_owned()]);
        let mut redacted = Redacted::default();
        let mut text = String::new();
        let mut out = String::new();
        for piece in ["Here: sk-can", "ary-12", "3456 and ", "more é text"] {
            text.push_str(piece);
            let news = redacted.next(&secrets, &text, false);
            assert!(!news.contains("sk-can"), "{news:?}");
            out.push_str(&news);
        }
        out.push_str(&redacted.next(&secrets, &text, true));
        assert_eq!(out, "Here: [redacted] and more é text");
        assert_eq!(redacted.next(&secrets, &text, true), "", "each byte once");
    }

    #[test]
    fn a_draft_being_written_never_shows_a_secret_s_start() {
        let secrets = Secrets::new(["sk-canary-123456".to_owned()]);
        let mut draft = String::new();
        for piece in ["Here: sk-can", "ary-12", "3456 and ", "more é text"] {
            draft.push_str(piece);
            let shown = secrets.redact_growing(&draft);
            assert!(!shown.contains("sk-"), "{shown:?}");
            assert!(
                draft.starts_with(shown.split("[redacted]").next().unwrap()),
                "{shown:?}"
            );
        }
        assert_eq!(secrets.redact_growing(&draft), "Here: [redacted] a");
        assert_eq!(Secrets::default().redact_growing("abc"), "abc");
    }

    #[test]
    fn without_secrets_everything_goes_at_once() {
        let mut redacted = Redacted::default();
        assert_eq!(redacted.next(&Secrets::default(), "abc", false), "abc");
    }
}
