//! The configured secrets a gateway keeps out of what it shows (model
//! providers' keys, the Telegram token, …): every text it hands out has them
//! replaced by [`REDACTED`]. The core hands a gateway [`LiveSecrets`], which a
//! reload of the configuration brings up to date while the gateway runs, so
//! a secret added by a reload is kept out from then on.

use std::sync::Arc;

use arc_swap::ArcSwap;

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
    /// `values`, each also as a log writes it escaped (a quote or a
    /// backslash in a password, written by `{:?}` or in a JSON log line),
    /// so that the escaped form is replaced too.
    pub fn new(values: impl IntoIterator<Item = String>) -> Self {
        let values = values.into_iter().flat_map(|value| {
            // As `{:?}` writes it, which is as JSON writes a quote, a
            // backslash, a new line or a tab; without its quotes.
            let debug = format!("{value:?}");
            let escaped = debug[1..debug.len() - 1].to_owned();
            std::iter::once(value).chain(std::iter::once(escaped))
        });
        Self::exactly(values)
    }

    /// `values` as they are.
    fn exactly(values: impl IntoIterator<Item = String>) -> Self {
        let mut values: Vec<String> = values.into_iter().filter(|v| v.len() >= MIN_SECRET).collect();
        // The longest first, so one that contains another goes whole; equal
        // ones side by side, so each is kept once.
        values.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        values.dedup();
        Self { values }
    }

    /// These secrets and `more`'s.
    pub fn with(&self, more: &Secrets) -> Secrets {
        Secrets::exactly(self.values.iter().chain(&more.values).cloned())
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

/// The secrets as they are now, shared between the core, which adds what a
/// reload brings, and whoever redacts with them. An answer being written
/// keeps the secrets it started with ([`LiveSecrets::now`]); the next one
/// uses the new.
#[derive(Clone, Default)]
pub struct LiveSecrets {
    now: Arc<ArcSwap<Secrets>>,
}

impl std::fmt::Debug for LiveSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LiveSecrets({:?})", self.now.load())
    }
}

impl LiveSecrets {
    /// Starts out holding `secrets`.
    pub fn new(secrets: Secrets) -> Self {
        Self {
            now: Arc::new(ArcSwap::from_pointee(secrets)),
        }
    }

    /// The secrets now.
    pub fn now(&self) -> Arc<Secrets> {
        self.now.load_full()
    }

    /// Keeps `more` out too, besides every secret kept out so far: one a
    /// reload took away may still be in what was said before it.
    pub fn add(&self, more: &Secrets) {
        self.now.rcu(|now| now.with(more));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reloading_the_same_secrets_keeps_each_once() {
        let configured = Secrets::new(["sk-first-123456".to_owned(), "sk-other-654321".to_owned()]);
        let live = LiveSecrets::new(configured.clone());
        for _ in 0..5 {
            live.add(&configured);
        }
        assert_eq!(*live.now(), configured, "two secrets of one length, each kept once");
    }

    #[test]
    fn a_secret_is_replaced_as_a_log_or_json_escapes_it_too() {
        let secret = r#"pa"ss\word-123"#.to_owned();
        let secrets = Secrets::new([secret.clone()]);
        let debug = format!("error={secret:?}");
        let json = format!(r#"{{"error":"{}"}}"#, secret.replace('\\', "\\\\").replace('"', "\\\""));
        for text in [debug, json] {
            let redacted = secrets.redact(&text);
            assert!(redacted.contains(REDACTED), "{redacted}");
            assert!(
                !redacted.contains("ss\\\\word") && !redacted.contains("ss\\word"),
                "{redacted}"
            );
        }
        // Reloading the same secrets adds no escapes of escapes.
        let live = LiveSecrets::new(secrets.clone());
        for _ in 0..3 {
            live.add(&Secrets::new([secret.clone()]));
        }
        assert_eq!(*live.now(), secrets);
    }

    #[test]
    fn a_secret_is_replaced_and_short_ones_are_not_looked_for() {
        let secrets = Secrets::new(["sk-canary-123456".to_owned(), "abc".to_owned()]);
        assert_eq!(secrets.redact("key: sk-canary-123456 abc"), "key: [redacted] abc");
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
    fn secrets_added_are_kept_out_with_the_earlier_ones_by_every_holder() {
        let live = LiveSecrets::new(Secrets::new(["old-secret-1".to_owned()]));
        let holder = live.clone();
        let before = holder.now();
        live.add(&Secrets::new(["new-secret-2".to_owned()]));
        assert_eq!(
            holder.now().redact("old-secret-1 new-secret-2"),
            "[redacted] [redacted]"
        );
        assert_eq!(
            before.redact("new-secret-2"),
            "new-secret-2",
            "what was taken stays as it was"
        );
        assert_eq!(format!("{live:?}"), "LiveSecrets(Secrets(2))");
    }
}
