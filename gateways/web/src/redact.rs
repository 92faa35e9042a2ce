//! No answer shows a configured secret: the core hands the gateway the
//! secrets it is configured with (model providers' keys, the Telegram
//! token, …; the contract's [`LiveSecrets`], which a reload keeps up to
//! date), and every text the API hands out has them replaced by
//! [`passepartout_gateway::REDACTED`]. A streamed answer is handed out a little behind what was
//! written — the length of the longest secret, less one — so a secret that
//! arrives in two pieces is never half shown.

pub use passepartout_gateway::{LiveSecrets, Secrets};

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
    fn without_secrets_everything_goes_at_once() {
        let mut redacted = Redacted::default();
        assert_eq!(redacted.next(&Secrets::default(), "abc", false), "abc");
    }
}
