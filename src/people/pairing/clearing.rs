//! `passepartout pair clear`: the owner clears the codes waiting — all of
//! them, one gateway's, one person's (`gateway:user`, as `pair list` shows
//! them) or one code — so that a flood of strangers who filled every
//! waiting place (`pairing.max_waiting`) no longer keeps real newcomers out
//! until the codes expire. Those cleared are sent nothing; writing again,
//! they are offered a new code like anyone. Each code cleared is audited,
//! never the code.

use std::sync::PoisonError;

use passepartout_gateway::{GatewayId, UserId};

use super::codes::Pending;
use super::{Code, PairError, Pairing, forget_expired};
use crate::store::{Audited, Person};

/// Which codes to clear.
#[derive(Debug)]
enum Which {
    All,
    Gateway(GatewayId),
    Person(GatewayId, UserId),
    Code(Code),
}

impl Pairing {
    /// Clears the codes waiting that `which` names (all, with none) on the
    /// word of `by`: what the owner is told.
    pub fn clear(&self, which: Option<&str>, by: &Person) -> Result<String, PairError> {
        if !self.is_owner(by) {
            return Err(PairError::NotOwner);
        }
        let which = self.which(which)?;
        let now_ms = self.clock.now_ms();
        let cleared = {
            let mut codes = self.codes.lock().unwrap_or_else(PoisonError::into_inner);
            forget_expired(&self.store, &mut codes, now_ms);
            codes.remove_where(|code, pending: &Pending| match &which {
                Which::All => true,
                Which::Gateway(gateway) => pending.conversation.gateway == *gateway,
                Which::Person(gateway, user) => pending.conversation.gateway == *gateway && pending.user == *user,
                Which::Code(named) => code == named,
            })
        };
        if cleared.is_empty() {
            return match which {
                Which::Code(_) => Err(PairError::Unknown),
                _ => Ok("no pairing codes waiting there; nothing cleared".into()),
            };
        }
        let codes: Vec<String> = cleared.iter().map(|(code, _)| code.as_str().to_owned()).collect();
        if let Err(error) = self.store.forget_pairing_codes(&codes) {
            // Not kept out of memory alone: a restart would bring them back.
            let mut kept = self.codes.lock().unwrap_or_else(PoisonError::into_inner);
            for (code, pending) in cleared {
                kept.put_back(code, pending);
            }
            return Err(error.into());
        }
        for (_, pending) in &cleared {
            crate::people::audit::alone(
                &self.store,
                now_ms,
                pending.conversation.clone(),
                Audited::PairingCleared {
                    person: pending.user.clone(),
                    by: by.clone(),
                },
            );
        }
        let n = cleared.len();
        tracing::info!(cleared = n, by = %by, "cleared pairing codes");
        let codes = if n == 1 { "code" } else { "codes" };
        Ok(format!(
            "cleared {n} pairing {codes}; whoever writes again is sent a new one"
        ))
    }

    /// What the owner named: a gateway, `gateway:user`, or a code waiting.
    fn which(&self, typed: Option<&str>) -> Result<Which, PairError> {
        let Some(typed) = typed.map(str::trim) else {
            return Ok(Which::All);
        };
        let not_one = || PairError::NotWaiting(typed.to_owned());
        if let Some((gateway, user)) = typed.split_once(':') {
            let gateway = GatewayId::new(gateway).map_err(|_| not_one())?;
            let user = UserId::new(user.trim()).map_err(|_| not_one())?;
            return Ok(Which::Person(gateway, user));
        }
        if let Some(gateway) = (self.lists.load().iter()).find(|l| l.gateway.as_str() == typed) {
            return Ok(Which::Gateway(gateway.gateway.clone()));
        }
        Code::parse(typed).map(Which::Code).ok_or_else(not_one)
    }
}
