//! API keys for the web gateway's OpenAI-compatible API, the core's half:
//! made with `passepartout web keys create NAME [--approver]` (the key shown
//! that once; an approver key answers its own conversations' approvals),
//! kept in the store as SHA-256 hashes only, listed and revoked by name or
//! id. Each key is a person of its own on the web gateway (`key-<id>`), with
//! its own conversations and memory. The gateway checks a request's key
//! through [`passepartout_web::ApiKeys`].

use std::collections::HashMap;

use passepartout_gateway::ConversationKey;
use passepartout_web::{ApiKeys, Key, SessionsUnavailable};

use super::sign_in::{ID_PREFIX, hash, hex, secret, when};
use crate::foundation::clock::Clock;
use crate::store::{Store, StoreError, WebKey};

/// What every key starts with, so a leaked one is recognisable.
pub const KEY_PREFIX: &str = "pp-";

/// The longest name a key may have.
const MAX_NAME: usize = 64;

/// The API keys desk over the store.
#[derive(Clone)]
pub struct WebKeys {
    store: Store,
    clock: Clock,
}

impl WebKeys {
    pub fn new(store: Store, clock: Clock) -> Self {
        Self { store, clock }
    }

    /// Makes a key called `name`, one that answers its own conversations'
    /// approvals if `approver`: `Ok` with the text that shows it (once), or
    /// `Err` saying why not (a bad or taken name).
    pub fn create(&self, name: &str, approver: bool) -> Result<Result<String, String>, StoreError> {
        let name = name.trim();
        let fits = !name.is_empty()
            && name.len() <= MAX_NAME
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
        if !fits {
            return Ok(Err(format!(
                "{name:?} is not a key name: 1-{MAX_NAME} characters of a-z, A-Z, 0-9, '-', '_' or '.'"
            )));
        }
        if self.store.web_keys()?.iter().any(|(_, key)| key.name == name) {
            return Ok(Err(format!(
                "there is a key called {name} already (see `passepartout web keys`)"
            )));
        }
        let key = format!("{KEY_PREFIX}{}", secret());
        let hashed = hash(&key);
        let record = WebKey {
            name: name.to_owned(),
            created_ms: self.clock.now_ms(),
            approver,
        };
        self.store.keep_web_key(&hashed, &record)?;
        let id = &hex(&hashed)[..ID_PREFIX];
        let approves = if approver {
            " It may approve what its own conversations ask for."
        } else {
            ""
        };
        Ok(Ok(format!(
            "{key}\nAPI key {name} (id {id}).{approves} It is shown only now: keep it where its client reads it.\n"
        )))
    }

    /// The keys, oldest first, as `passepartout web keys` prints them.
    pub fn listing(&self) -> Result<String, StoreError> {
        let mut keys = self.store.web_keys()?;
        if keys.is_empty() {
            return Ok("No API key. Make one with `passepartout web keys create NAME`.\n".into());
        }
        keys.sort_by_key(|(_, key)| key.created_ms);
        let mut out = format!("{:<ID_PREFIX$}  {:<20}  {:<8}  name\n", "id", "made", "approves");
        for (hashed, key) in keys {
            out += &*format!(
                "{}  {:<20}  {:<8}  {}\n",
                &hex(&hashed)[..ID_PREFIX],
                when(key.created_ms),
                if key.approver { "yes" } else { "no" },
                key.name
            );
        }
        Ok(out)
    }

    /// The keys, oldest first, for the dashboard's page: `[{"id", "name",
    /// "made_ms", "approver"}]`, the id being its prefix.
    pub fn listed(&self) -> Result<serde_json::Value, StoreError> {
        let mut keys = self.store.web_keys()?;
        keys.sort_by_key(|(_, key)| key.created_ms);
        let rows = keys.into_iter().map(|(hashed, key)| {
            serde_json::json!({
                "id": &hex(&hashed)[..ID_PREFIX],
                "name": key.name,
                "made_ms": key.created_ms,
                "approver": key.approver,
            })
        });
        Ok(rows.collect())
    }

    /// Revokes the key called `which`, or whose id starts with it.
    pub fn revoke(&self, which: &str) -> Result<Result<String, String>, StoreError> {
        let which = which.trim();
        let keys = self.store.web_keys()?;
        let by_name: Vec<_> = keys.iter().filter(|(_, key)| key.name == which).collect();
        let lower = which.to_ascii_lowercase();
        let by_id: Vec<_> = keys
            .iter()
            .filter(|(hashed, _)| lower.len() >= 4 && hex(hashed).starts_with(&lower))
            .collect();
        let matching = if by_name.is_empty() { by_id } else { by_name };
        match matching.as_slice() {
            [] => Ok(Err(format!("no key {which} (see `passepartout web keys`)"))),
            [(hashed, key)] => {
                self.store.forget_web_key(hashed)?;
                Ok(Ok(format!("API key {} is revoked.", key.name)))
            }
            _ => Ok(Err(format!("{which} names more than one key; give more of its id"))),
        }
    }
}

/// Each key's name by its id, for showing its conversations by name.
pub fn names(store: &Store) -> Result<HashMap<String, String>, StoreError> {
    Ok(store
        .web_keys()?
        .into_iter()
        .map(|(hashed, key)| (hex(&hashed)[..ID_PREFIX].to_owned(), key.name))
        .collect())
}

/// A conversation as people read it when it is one of an API key's: by
/// the key's name; none for every other conversation.
pub fn shown(conversation: &ConversationKey, names: &HashMap<String, String>) -> Option<String> {
    (conversation.gateway.as_str() == passepartout_web::GATEWAY_ID)
        .then(|| shown_chat(conversation.chat.as_str(), names))
        .flatten()
}

/// The web conversation `chat` as people read it: an API key's by the
/// key's name (`API key laptop/~3fa2…`), when `names` knows the key.
pub fn shown_chat(chat: &str, names: &HashMap<String, String>) -> Option<String> {
    let rest = chat.strip_prefix("key-")?;
    let (id, after) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    names.get(id).map(|name| format!("API key {name}{after}"))
}

impl ApiKeys for WebKeys {
    fn check(&self, key: &str) -> Result<Option<Key>, SessionsUnavailable> {
        let hashed = hash(key);
        match self.store.web_key(&hashed) {
            Ok(Some(kept)) => Ok(Some(Key {
                id: hex(&hashed)[..ID_PREFIX].to_owned(),
                approver: kept.approver,
            })),
            Ok(None) => Ok(None),
            Err(error) => Err(SessionsUnavailable {
                message: error.to_string(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests::open_temp;

    fn desk() -> (tempfile::TempDir, WebKeys) {
        let (dir, store) = open_temp();
        (dir, WebKeys::new(store, Clock::at(1_700_000_000_000)))
    }

    fn made(shown: &str) -> String {
        shown.lines().next().unwrap().to_owned()
    }

    #[test]
    fn a_key_is_shown_once_kept_hashed_and_checked() {
        let (_dir, desk) = desk();
        let key = made(&desk.create("laptop", false).unwrap().unwrap());
        assert!(
            key.starts_with(KEY_PREFIX) && key.len() == KEY_PREFIX.len() + 43,
            "{key}"
        );
        let id = desk.check(&key).unwrap().expect("a valid key").id;
        assert_eq!(id, hex(&hash(&key))[..ID_PREFIX]);
        assert_eq!(desk.check("pp-guess").unwrap(), None);
        let listing = desk.listing().unwrap();
        assert!(listing.contains("laptop") && listing.contains(&id), "{listing}");
        assert!(!listing.contains(&key), "never the key itself");
        assert!(desk.store.web_key(key.as_bytes()).unwrap().is_none(), "kept hashed");
    }

    #[test]
    fn only_a_key_made_an_approver_approves_and_the_listing_says_which() {
        let (_dir, desk) = desk();
        let plain = made(&desk.create("plain", false).unwrap().unwrap());
        let shown = desk.create("ops", true).unwrap().unwrap();
        assert!(shown.contains("may approve"), "{shown}");
        let ops = made(&shown);
        assert!(!desk.check(&plain).unwrap().unwrap().approver);
        assert!(desk.check(&ops).unwrap().unwrap().approver);
        let listing = desk.listing().unwrap();
        let row = |name: &str| listing.lines().find(|l| l.ends_with(name)).unwrap().to_owned();
        assert!(listing.lines().next().unwrap().contains("approves"), "{listing}");
        assert!(row("  plain").contains("  no  "), "{listing}");
        assert!(row("  ops").contains("  yes  "), "{listing}");
    }

    #[test]
    fn a_keys_conversations_are_shown_by_its_name() {
        let (_dir, desk) = desk();
        let key = made(&desk.create("laptop", false).unwrap().unwrap());
        let id = desk.check(&key).unwrap().unwrap().id;
        let names = names(&desk.store).unwrap();
        assert_eq!(
            shown_chat(&format!("key-{id}"), &names).as_deref(),
            Some("API key laptop")
        );
        assert_eq!(
            shown_chat(&format!("key-{id}/~00ff"), &names).as_deref(),
            Some("API key laptop/~00ff")
        );
        assert_eq!(shown_chat("key-000000000000/x", &names), None, "a revoked key's");
        assert_eq!(shown_chat("owner", &names), None);
    }

    #[test]
    fn names_are_checked_and_unique() {
        let (_dir, desk) = desk();
        assert!(desk.create("a b", false).unwrap().is_err());
        assert!(desk.create("", false).unwrap().is_err());
        desk.create("phone", false).unwrap().unwrap();
        assert!(desk.create("phone", false).unwrap().unwrap_err().contains("already"));
    }

    #[test]
    fn a_key_is_revoked_by_name_or_id() {
        let (_dir, desk) = desk();
        let a = made(&desk.create("a", false).unwrap().unwrap());
        let b = made(&desk.create("b", false).unwrap().unwrap());
        assert_eq!(desk.revoke("a").unwrap(), Ok("API key a is revoked.".into()));
        assert_eq!(desk.check(&a).unwrap(), None);
        let id = desk.check(&b).unwrap().unwrap().id;
        assert!(desk.revoke("zzzz").unwrap().is_err());
        assert_eq!(desk.revoke(&id[..6]).unwrap(), Ok("API key b is revoked.".into()));
        assert_eq!(desk.check(&b).unwrap(), None);
    }
}
