//! The `standing_rules` tree: the rules a person made by answering an
//! approval with "always", keyed by conversation, tool and id
//! (`gateway 0 chat 0 tool 0 id`), so the rules that could cover a call are
//! one prefix scan away however many there are elsewhere.
//!
//! A rule is made in the same transaction as the decision that approves
//! with it, and only if that decision wins: a second "always", a redone
//! turn or an approval decided first never make one. Making and revoking
//! are audited with the change.
//!
//! Ids are small numbers a person types (`/rules revoke 3`): the tree keeps
//! the last one given under [`LAST_ID`], a key no conversation's prefix
//! starts with, and each rule takes the next. (sled's own generated ids
//! leap by millions at every restart.)

use passepartout_gateway::{ApprovalToken, ConversationKey};
use sled::Transactional;
use sled::transaction::TransactionalTree;

use super::approvals::{Abort, DecidedIn, abort, audit_in, decide_in, decode, encode};
use super::error::StoreError;
use super::records::{AuditEvent, Audited, Decision, Person, StandingRule};
use super::{Decided, Store, keys};

const TREE: &str = "standing_rules";
/// The key of the last rule id given; conversation keys start with a
/// gateway id, which is ASCII, so none starts with 0xff.
const LAST_ID: &[u8] = b"\xfflast_id";

/// Where the rules for `tool` in `conversation` begin.
fn tool_prefix(conversation: &ConversationKey, tool: &str) -> Vec<u8> {
    let mut key = keys::conversation_prefix(conversation);
    key.extend_from_slice(tool.as_bytes());
    key.push(0);
    key
}

fn rule_key(rule: &StandingRule) -> Vec<u8> {
    let mut key = tool_prefix(&rule.conversation, &rule.tool);
    key.extend_from_slice(&rule.id.to_be_bytes());
    key
}

/// Keeps `rule` under the next id (above `floor`, the highest id of the
/// rules kept before ids were counted), audited as made; returns it with
/// its id.
fn make_in(
    rules: &TransactionalTree,
    audit: &TransactionalTree,
    rule: &StandingRule,
    shown: &str,
    floor: u64,
) -> Result<StandingRule, Abort> {
    if rule.tool.contains('\0') {
        return Err(abort(StoreError::Corrupt {
            tree: TREE,
            reason: "a tool name with a NUL".into(),
        }));
    }
    let mut rule = rule.clone();
    let last = rules
        .get(LAST_ID)?
        .and_then(|bytes| <[u8; 8]>::try_from(bytes.as_ref()).ok())
        .map_or(0, u64::from_be_bytes);
    rule.id = last.max(floor) + 1;
    rules.insert(LAST_ID, &rule.id.to_be_bytes())?;
    rules.insert(rule_key(&rule), encode(TREE, &rule).map_err(abort)?)?;
    audit_in(
        audit,
        &AuditEvent {
            at_ms: rule.created_ms,
            conversation: rule.conversation.clone(),
            what: Audited::RuleMade {
                rule: rule.id,
                tool: rule.tool.clone(),
                scope: shown.to_owned(),
                by: rule.by.clone(),
                how: rule.how,
                token: rule.approval.clone(),
                expires_ms: rule.expires_ms,
            },
        },
    )?;
    Ok(rule)
}

impl Store {
    /// Records `decision` on the pending approval `token` and, if it wins
    /// now, keeps `rule` (shown to people as `shown`) — one transaction,
    /// both audited. The rule comes back with its id; none when the
    /// decision did not win now (decided before, or redone).
    pub fn decide_with_rule(
        &self,
        token: &ApprovalToken,
        decision: Decision,
        rule: &StandingRule,
        shown: &str,
    ) -> Result<(Decided, Option<StandingRule>), StoreError> {
        let floor = self.highest_rule_id()?;
        let _writing = self.writing();
        let inner = &self.inner;
        let done = (&inner.approvals, &inner.audit, &inner.standing_rules).transaction(|(approvals, audit, rules)| {
            Ok(match decide_in(approvals, audit, token, &decision)? {
                DecidedIn::Now(approval) => (Decided::Won(approval), Some(make_in(rules, audit, rule, shown, floor)?)),
                other => (other.into(), None),
            })
        });
        let done = self.wrote(done.map_err(StoreError::from))?;
        Ok(done)
    }

    /// Keeps `rule` (shown to people as `shown`) under a fresh id, audited
    /// as made, without an approval being decided with it.
    pub fn add_standing_rule(&self, rule: &StandingRule, shown: &str) -> Result<StandingRule, StoreError> {
        let floor = self.highest_rule_id()?;
        let _writing = self.writing();
        let inner = &self.inner;
        let made = (&inner.standing_rules, &inner.audit)
            .transaction(|(rules, audit)| make_in(rules, audit, rule, shown, floor));
        self.wrote(made.map_err(StoreError::from))
    }

    /// The rules for `tool` in `conversation`, oldest first (expired ones
    /// too, until they are pruned).
    pub fn standing_rules_for(
        &self,
        conversation: &ConversationKey,
        tool: &str,
    ) -> Result<Vec<StandingRule>, StoreError> {
        self.inner
            .standing_rules
            .scan_prefix(tool_prefix(conversation, tool))
            .values()
            .map(|value| decode(TREE, &value?))
            .collect()
    }

    /// The highest id of the rules kept now; 0 for none.
    fn highest_rule_id(&self) -> Result<u64, StoreError> {
        Ok(self.standing_rules()?.iter().map(|rule| rule.id).max().unwrap_or(0))
    }

    /// Every rule, by id.
    pub fn standing_rules(&self) -> Result<Vec<StandingRule>, StoreError> {
        let mut all = Vec::new();
        for item in self.inner.standing_rules.iter() {
            let (key, value) = item?;
            if key.as_ref() != LAST_ID {
                all.push(decode::<StandingRule>(TREE, &value)?);
            }
        }
        all.sort_by_key(|rule| rule.id);
        Ok(all)
    }

    /// The rule an approval's "always" made, if it made one.
    pub fn standing_rule_of(&self, token: &ApprovalToken) -> Result<Option<StandingRule>, StoreError> {
        Ok(self.standing_rules()?.into_iter().find(|rule| rule.approval == *token))
    }

    /// Revokes rule `id` on behalf of `by` at `at_ms`, audited with the
    /// text `shown` gives it; returns it, or none if there is no such rule.
    pub fn revoke_standing_rule(
        &self,
        id: u64,
        by: &Person,
        at_ms: u64,
        shown: impl Fn(&StandingRule) -> String,
    ) -> Result<Option<StandingRule>, StoreError> {
        let Some(rule) = self.standing_rules()?.into_iter().find(|rule| rule.id == id) else {
            return Ok(None);
        };
        let _writing = self.writing();
        let key = rule_key(&rule);
        let inner = &self.inner;
        let revoked = (&inner.standing_rules, &inner.audit).transaction(|(rules, audit)| {
            if rules.remove(key.as_slice())?.is_none() {
                // Revoked (or pruned) meanwhile.
                return Ok(None);
            }
            audit_in(
                audit,
                &AuditEvent {
                    at_ms,
                    conversation: rule.conversation.clone(),
                    what: Audited::RuleRevoked {
                        rule: rule.id,
                        tool: rule.tool.clone(),
                        scope: shown(&rule),
                        by: by.clone(),
                    },
                },
            )?;
            Ok(Some(rule.clone()))
        });
        self.wrote(revoked.map_err(StoreError::from))
    }

    /// Forgets the rules expired at `now_ms`; returns how many went.
    pub fn prune_standing_rules(&self, now_ms: u64) -> Result<usize, StoreError> {
        let _writing = self.writing();
        let mut pruned = 0;
        for item in self.inner.standing_rules.iter() {
            let (key, value) = item?;
            if key.as_ref() == LAST_ID {
                continue;
            }
            // One that does not read is kept, to be looked at rather than lost.
            let expired = decode::<StandingRule>(TREE, &value).is_ok_and(|rule| rule.expires_ms <= now_ms);
            if expired {
                self.wrote(self.inner.standing_rules.remove(key).map_err(StoreError::from))?;
                pruned += 1;
            }
        }
        Ok(pruned)
    }
}

#[cfg(test)]
#[path = "standing_rules_tests.rs"]
mod tests;
