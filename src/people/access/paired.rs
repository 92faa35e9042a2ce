//! The people let in by pairing, live: loaded from the store at start and
//! changed as owners approve codes and revoke people, so the intake and the
//! approvals see a change at once. Beside the configuration's lists, never
//! instead of them.

use std::collections::HashMap;
use std::sync::{PoisonError, RwLock};

use passepartout_gateway::{GatewayId, Sender, UserId};

/// Paired users per gateway, each with whether they may approve.
#[derive(Debug, Default)]
pub struct Paired {
    people: RwLock<HashMap<GatewayId, HashMap<UserId, bool>>>,
}

impl Paired {
    /// Lets `user` in on `gateway` (replacing whether they approve).
    pub fn insert(&self, gateway: GatewayId, user: UserId, approver: bool) {
        let mut people = self.people.write().unwrap_or_else(PoisonError::into_inner);
        people.entry(gateway).or_default().insert(user, approver);
    }

    /// Forgets `user` on `gateway`; whether they were paired.
    pub fn remove(&self, gateway: &GatewayId, user: &UserId) -> bool {
        let mut people = self.people.write().unwrap_or_else(PoisonError::into_inner);
        people
            .get_mut(gateway)
            .is_some_and(|users| users.remove(user).is_some())
    }

    /// Whether `sender` (by id or alias) is paired on `gateway`.
    pub fn allows(&self, gateway: &GatewayId, sender: &Sender) -> bool {
        self.find(gateway, sender).is_some()
    }

    /// Whether `sender` is paired on `gateway` as an approver.
    pub fn approves(&self, gateway: &GatewayId, sender: &Sender) -> bool {
        self.find(gateway, sender) == Some(true)
    }

    /// The paired approvers on `gateway`.
    pub fn approvers(&self, gateway: &GatewayId) -> Vec<UserId> {
        let people = self.people.read().unwrap_or_else(PoisonError::into_inner);
        let mut approvers: Vec<UserId> = people
            .get(gateway)
            .map(|users| users.iter().filter(|(_, a)| **a).map(|(u, _)| u.clone()).collect())
            .unwrap_or_default();
        approvers.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        approvers
    }

    fn find(&self, gateway: &GatewayId, sender: &Sender) -> Option<bool> {
        let people = self.people.read().unwrap_or_else(PoisonError::into_inner);
        let users = people.get(gateway)?;
        sender.ids().find_map(|id| users.get(id).copied())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn telegram() -> GatewayId {
        GatewayId::new("telegram").unwrap()
    }

    #[test]
    fn paired_people_are_let_in_until_removed() {
        let paired = Paired::default();
        let ada = Sender::new(UserId::new("42").unwrap());
        assert!(!paired.allows(&telegram(), &ada));
        paired.insert(telegram(), ada.id.clone(), false);
        assert!(paired.allows(&telegram(), &ada));
        assert!(!paired.approves(&telegram(), &ada), "not an approver unless asked");
        assert!(
            !paired.allows(&GatewayId::new("signal").unwrap(), &ada),
            "on their gateway only"
        );
        paired.insert(telegram(), ada.id.clone(), true);
        assert_eq!(paired.approvers(&telegram()), vec![ada.id.clone()]);
        assert!(paired.remove(&telegram(), &ada.id));
        assert!(!paired.allows(&telegram(), &ada));
        assert!(!paired.remove(&telegram(), &ada.id), "only once");
    }
}
