//! Signing in to the web dashboard, the core's half: one-time links and
//! the sessions they are traded for, kept in the store as SHA-256 hashes
//! only (a copy of the store signs no one in). A link is 32 random bytes,
//! good once for [`LINK_VALID`]; a session, 32 random bytes, ends after
//! [`IDLE_LIMIT`] unused or [`ABSOLUTE_LIMIT`] after signing in, whichever
//! comes first. The web gateway checks sessions through
//! [`passepartout_web::Sessions`]; the owner issues links and lists and
//! revokes sessions through the admin path (`passepartout web`).

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use passepartout_web::{Sessions, SessionsUnavailable};
use rand::RngCore;
use sha2::{Digest, Sha256};

use crate::foundation::clock::Clock;
use crate::store::{Store, StoreError, WebSession};

/// How long a sign-in link works.
pub const LINK_VALID: Duration = Duration::from_secs(5 * 60);

/// A session unused this long ends.
pub const IDLE_LIMIT: Duration = Duration::from_secs(7 * 24 * 3600);

/// A session ends this long after signing in, used or not.
pub const ABSOLUTE_LIMIT: Duration = Duration::from_secs(30 * 24 * 3600);

/// How stale "last seen" may get before it is written again: a page view
/// is then not a write to the store every time.
const SEEN_EVERY_MS: u64 = 60_000;

/// Hex digits of a session's hash shown as its id.
pub const ID_PREFIX: usize = 12;

/// The sign-in desk over the store.
#[derive(Clone)]
pub struct SignIn {
    store: Store,
    clock: Clock,
}

impl SignIn {
    pub fn new(store: Store, clock: Clock) -> Self {
        Self { store, clock }
    }

    /// A new one-time link's token, and when it expires (ms). Expired
    /// links are forgotten on the way.
    pub fn issue_link(&self) -> Result<(String, u64), StoreError> {
        let now = self.clock.now_ms();
        self.store.forget_web_links(now)?;
        let token = secret();
        let expires_ms = now + LINK_VALID.as_millis() as u64;
        self.store.keep_web_link(&hash(&token), expires_ms)?;
        Ok((token, expires_ms))
    }

    /// The sessions, newest first, as the lines `passepartout web
    /// sessions` prints; the ended ones are forgotten on the way.
    pub fn listing(&self) -> Result<String, StoreError> {
        let sessions = self.live()?;
        if sessions.is_empty() {
            return Ok("No browser is signed in.\n".into());
        }
        let mut out = format!(
            "{:<ID_PREFIX$}  {:<20}  {:<20}  user agent\n",
            "id", "signed in", "last seen"
        );
        for (id, session) in sessions {
            out += &*format!(
                "{}  {:<20}  {:<20}  {}\n",
                &id[..ID_PREFIX],
                when(session.created_ms),
                when(session.seen_ms),
                shown(&session.user_agent)
            );
        }
        Ok(out)
    }

    /// The sessions, newest first, for the dashboard's page: `[{"id",
    /// "created_ms", "seen_ms", "agent"}]`, the id being its prefix.
    pub fn listed(&self) -> Result<serde_json::Value, StoreError> {
        let rows = self.live()?.into_iter().map(|(id, session)| {
            serde_json::json!({
                "id": &id[..ID_PREFIX],
                "created_ms": session.created_ms,
                "seen_ms": session.seen_ms,
                "agent": shown(&session.user_agent),
            })
        });
        Ok(rows.collect())
    }

    /// The live sessions by id (hex), newest first; the ended ones are
    /// forgotten on the way.
    fn live(&self) -> Result<Vec<(String, WebSession)>, StoreError> {
        let now = self.clock.now_ms();
        let mut sessions = Vec::new();
        for (key, session) in self.store.web_sessions()? {
            if ended(&session, now) {
                self.store.forget_web_session(&key)?;
            } else {
                sessions.push((hex(&key), session));
            }
        }
        sessions.sort_by_key(|(_, session)| std::cmp::Reverse(session.created_ms));
        Ok(sessions)
    }

    /// Ends the session whose id starts with `prefix`: `Ok` saying so, or
    /// `Err` saying why not (none, or more than one matches).
    pub fn revoke(&self, prefix: &str) -> Result<Result<String, String>, StoreError> {
        let prefix = prefix.trim().to_ascii_lowercase();
        if prefix.len() < 4 || !prefix.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(Err(format!(
                "{prefix:?} is not a session id: give at least 4 of the hex digits `passepartout web sessions` shows"
            )));
        }
        let matching: Vec<_> = self
            .store
            .web_sessions()?
            .into_iter()
            .filter(|(key, _)| hex(key).starts_with(&prefix))
            .collect();
        match matching.as_slice() {
            [] => Ok(Err(format!("no session {prefix} (see `passepartout web sessions`)"))),
            [(key, _)] => {
                self.store.forget_web_session(key)?;
                Ok(Ok(format!("Session {prefix} is signed out.")))
            }
            _ => Ok(Err(format!(
                "{prefix} names more than one session; give more of its id"
            ))),
        }
    }
}

impl Sessions for SignIn {
    fn redeem(&self, token: &str, user_agent: &str) -> Result<Option<String>, SessionsUnavailable> {
        let now = self.clock.now_ms();
        let Some(expires_ms) = self.store.take_web_link(&hash(token)).map_err(unavailable)? else {
            return Ok(None);
        };
        if now >= expires_ms {
            return Ok(None);
        }
        let session = secret();
        let record = WebSession {
            created_ms: now,
            seen_ms: now,
            user_agent: user_agent.to_owned(),
        };
        self.store
            .keep_web_session(&hash(&session), &record)
            .map_err(unavailable)?;
        Ok(Some(session))
    }

    fn check(&self, session: &str) -> Result<bool, SessionsUnavailable> {
        let key = hash(session);
        let Some(record) = self.store.web_session(&key).map_err(unavailable)? else {
            return Ok(false);
        };
        let now = self.clock.now_ms();
        if ended(&record, now) {
            self.store.forget_web_session(&key).map_err(unavailable)?;
            return Ok(false);
        }
        if now.saturating_sub(record.seen_ms) >= SEEN_EVERY_MS {
            let seen = WebSession {
                seen_ms: now,
                ..record.clone()
            };
            return self.store.touch_web_session(&key, &record, &seen).map_err(unavailable);
        }
        Ok(true)
    }

    fn end(&self, session: &str) -> Result<(), SessionsUnavailable> {
        self.store.forget_web_session(&hash(session)).map_err(unavailable)?;
        Ok(())
    }
}

/// Whether `session` has ended by `now`: idle too long, or too old.
fn ended(session: &WebSession, now: u64) -> bool {
    now.saturating_sub(session.seen_ms) >= IDLE_LIMIT.as_millis() as u64
        || now.saturating_sub(session.created_ms) >= ABSOLUTE_LIMIT.as_millis() as u64
}

/// 32 random bytes, base64url without padding (43 characters).
pub(crate) fn secret() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// What the store keeps of a link or session: its SHA-256.
pub(crate) fn hash(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

/// A user agent as a terminal may show it: without control characters
/// (a browser says what it likes).
fn shown(user_agent: &str) -> String {
    user_agent.chars().filter(|c| !c.is_control()).collect()
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `ms` as a UTC time to the second.
pub(crate) fn when(ms: u64) -> String {
    jiff::Timestamp::from_millisecond(ms as i64)
        .map(|t| t.strftime("%Y-%m-%d %H:%M:%SZ").to_string())
        .unwrap_or_else(|_| "?".into())
}

fn unavailable(error: StoreError) -> SessionsUnavailable {
    SessionsUnavailable {
        message: error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests::open_temp;

    const NOW: u64 = 1_700_000_000_000;

    fn desk() -> (tempfile::TempDir, SignIn) {
        let (dir, store) = open_temp();
        (dir, SignIn::new(store, Clock::at(NOW)))
    }

    #[test]
    fn secrets_are_32_random_bytes_and_only_their_hash_is_kept() {
        let (a, b) = (secret(), secret());
        assert_eq!(a.len(), 43);
        assert_ne!(a, b);
        assert_eq!(
            hex(&hash("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            "SHA-256"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_link_works_once_within_five_minutes() {
        let (_dir, desk) = desk();
        let (token, expires_ms) = desk.issue_link().unwrap();
        assert_eq!(expires_ms, NOW + 300_000);
        assert!(
            desk.store.take_web_link(token.as_bytes()).unwrap().is_none(),
            "kept hashed"
        );
        assert_eq!(desk.redeem("wrong", "ua").unwrap(), None);
        let session = desk.redeem(&token, "Firefox").unwrap().expect("a session");
        assert!(desk.check(&session).unwrap());
        assert_eq!(desk.redeem(&token, "Firefox").unwrap(), None, "used");

        let (late, _) = desk.issue_link().unwrap();
        tokio::time::advance(LINK_VALID).await;
        assert_eq!(desk.redeem(&late, "ua").unwrap(), None, "expired");
    }

    #[tokio::test(start_paused = true)]
    async fn a_session_ends_idle_after_seven_days_and_in_any_case_after_thirty() {
        let (_dir, desk) = desk();
        let (token, _) = desk.issue_link().unwrap();
        let idle = desk.redeem(&token, "a").unwrap().unwrap();
        tokio::time::advance(IDLE_LIMIT - Duration::from_secs(1)).await;
        assert!(desk.check(&idle).unwrap(), "just within");
        tokio::time::advance(IDLE_LIMIT - Duration::from_secs(1)).await;
        assert!(desk.check(&idle).unwrap(), "seen since, so still live");
        tokio::time::advance(IDLE_LIMIT).await;
        assert!(!desk.check(&idle).unwrap(), "idle a week");
        assert!(!desk.check(&idle).unwrap(), "and forgotten");

        let (token, _) = desk.issue_link().unwrap();
        let busy = desk.redeem(&token, "b").unwrap().unwrap();
        for _ in 0..29 {
            tokio::time::advance(Duration::from_secs(24 * 3600)).await;
            assert!(desk.check(&busy).unwrap());
        }
        tokio::time::advance(Duration::from_secs(24 * 3600)).await;
        assert!(!desk.check(&busy).unwrap(), "thirty days after signing in");
    }

    #[tokio::test(start_paused = true)]
    async fn sessions_are_listed_and_revoked_by_a_prefix_of_their_id() {
        let (_dir, desk) = desk();
        assert_eq!(desk.listing().unwrap(), "No browser is signed in.\n");
        let (token, _) = desk.issue_link().unwrap();
        let session = desk.redeem(&token, "Mozilla <x>\u{1b}[2J").unwrap().unwrap();
        let listing = desk.listing().unwrap();
        let id = hex(&hash(&session))[..ID_PREFIX].to_owned();
        assert!(listing.contains(&id), "{listing}");
        assert!(listing.contains("2023-11-14 22:13:20Z"), "{listing}");
        assert!(!listing.contains('\u{1b}'), "a user agent is shown inert: {listing}");
        assert!(!listing.contains(&session), "never the session id itself");
        assert!(desk.revoke("zz").unwrap().is_err());
        assert!(desk.revoke("0000000000").unwrap().is_err() || id.starts_with("0000000000"));
        assert_eq!(
            desk.revoke(&id[..6]).unwrap(),
            Ok(format!("Session {} is signed out.", &id[..6]))
        );
        assert!(!desk.check(&session).unwrap());
        assert!(desk.revoke(&id).unwrap().is_err(), "gone");
    }

    #[test]
    fn ending_a_session_signs_it_out() {
        let (_dir, desk) = desk();
        let (token, _) = desk.issue_link().unwrap();
        let session = desk.redeem(&token, "a").unwrap().unwrap();
        desk.end(&session).unwrap();
        assert!(!desk.check(&session).unwrap());
    }
}
