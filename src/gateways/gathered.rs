//! What the core learns from every gateway at once, each answer gathered
//! from the components of [`components`]: who may talk and approve, each
//! surface and upload limit by id, the sections' problems and what would
//! stop a gateway from starting, the settings a reload applies live, their
//! names and where their secrets are kept.
//! The core asks these and never names a gateway.

use std::collections::HashMap;
use std::path::Path;

use super::{GatewayComponent, components};
use crate::config::{Config, ConfigError, SecretPlaces};
use crate::foundation::notices::Surfaces;
use crate::people::Channels;
use crate::people::access::Access;
use crate::people::pairing::{Lists, Pairing};
use crate::safety::approvals::Policy;
use crate::safety::tools::uploads::Uploads;
use crate::store::{Store, StoreError};

/// Who may talk through each gateway of `config`.
pub fn access(config: &Config) -> Access {
    Access::from_rosters(components(config).iter().map(|c| (c.id(), c.talkers())))
}

/// Who may decide approvals: each gateway's deciders, and
/// `approvals.global_approvers`.
pub fn policy(config: &Config) -> Policy {
    let deciders = components(config)
        .iter()
        .map(|c| (c.id(), c.deciders()))
        .collect::<Vec<_>>();
    Policy::from_rosters(deciders, &config.approvals)
}

/// Each gateway's surface, by its id.
pub fn surfaces(config: &Config) -> Surfaces {
    Surfaces::new(components(config).iter().map(|c| (c.id(), c.surface())))
}

/// What each gateway takes of a file sent through it, by its id.
pub fn uploads(config: &Config) -> Uploads {
    Uploads::new(components(config).iter().map(|c| (c.id(), c.upload())))
}

/// Every gateway section's problems, in the order of [`components`], then
/// the bridges' chats each gateway cannot join: what `check-config` and a
/// reload add to the configuration's own.
pub fn problems(config: &Config) -> Vec<String> {
    let components = components(config);
    let mut problems: Vec<String> = components.iter().flat_map(|c| c.problems()).collect();
    problems.extend(bridge_problems(config, &components));
    if config.matrix.enabled && !cfg!(feature = "matrix") {
        problems.push("matrix.enabled: this passepartout was built without Matrix (the `matrix` feature)".into());
    }
    problems
}

/// Every gateway section's warnings, in the order of [`components`]:
/// what `check-config` prints beside the configuration's own.
pub fn warnings(config: &Config) -> Vec<String> {
    components(config).iter().flat_map(|c| c.warnings()).collect()
}

/// Why a chat of a `[[bridges]]` entry cannot be joined: no such gateway,
/// one that is off, or a chat it does not let talk (or cannot bridge).
/// Entries that do not name their chats well are the bridges' own
/// problems, reported by the configuration's check.
fn bridge_problems(config: &Config, components: &[Box<dyn GatewayComponent>]) -> Vec<String> {
    let mut problems = Vec::new();
    for bridge in &config.bridges {
        let Ok(conversations) = bridge.conversations() else {
            continue;
        };
        for conversation in conversations {
            let name = &bridge.name;
            let found = components.iter().find(|c| c.id() == conversation.gateway);
            let problem = match found {
                None => Some(format!("there is no gateway called {}", conversation.gateway)),
                Some(component) if !component.enabled() => Some(format!("{} is not enabled", conversation.gateway)),
                Some(component) if !component.bridges() => Some(format!(
                    "only group chats on {} can be bridged",
                    listed(components.iter().filter(|c| c.bridges()).map(|c| c.name()))
                )),
                Some(component) => component.bridge_problem(&conversation.chat),
            };
            if let Some(problem) = problem {
                problems.push(format!("bridge \"{name}\": {conversation}: {problem}"));
            }
        }
    }
    problems
}

/// `names` as a sentence lists them: "Telegram and Signal", "A, B and C".
fn listed(names: impl Iterator<Item = String>) -> String {
    let mut names: Vec<String> = names.collect();
    match names.pop() {
        None => "no gateway".to_owned(),
        Some(last) if names.is_empty() => last,
        Some(last) => format!("{} and {last}", names.join(", ")),
    }
}

/// The gateways of `components` as people name them, the running ones
/// offered to `/handoff`.
pub fn channels(components: &[Box<dyn GatewayComponent>]) -> Channels {
    Channels::new(components.iter().map(|c| (c.id(), c.name(), c.handoff_word())))
        .offering(components.iter().filter(|c| c.enabled()).map(|c| c.handoff_word()))
}

/// Where the secrets of `config` are kept: its own (the model providers',
/// the transcriber's and the web search's keys), those of every gateway it
/// configures, on or off, and those of the `plugged` gateways.
pub fn secret_places(config: &Config, plugged: &[Box<dyn GatewayComponent>]) -> SecretPlaces {
    components(config)
        .iter()
        .chain(plugged)
        .fold(SecretPlaces::of(config), |places, component| {
            places.and(component.secrets())
        })
}

/// What would stop an enabled gateway of `config` from starting, with
/// variables looked up through `lookup` (the process's environment in the
/// binary, a map in tests). Empty when every enabled gateway can start.
pub fn start_problems(config: &Config, lookup: impl Fn(&str) -> Option<String>) -> Vec<String> {
    components(config)
        .iter()
        .filter(|c| c.enabled())
        .flat_map(|c| c.start_problems(&lookup))
        .collect()
}

/// The key paths of the gateway sections a reload of a daemon running on
/// `running` applies live.
pub fn live_keys(running: &Config) -> Vec<&'static str> {
    components(running).iter().flat_map(|c| c.live_keys()).collect()
}

/// The configuration in `file` (and the environment, or `env` in tests),
/// loaded as [`crate::config::load`] does and checked by every gateway's
/// component too: what a file written for the daemon must pass.
pub fn load(file: Option<&Path>, env: Option<HashMap<String, String>>) -> Result<Config, ConfigError> {
    crate::config::load_checked(file, env, problems, |_| Vec::new()).map(|(config, _)| config)
}

/// The pairing desk over `components`' lists, with the people paired
/// before (read from `store`).
pub fn pairing(
    components: &[Box<dyn GatewayComponent>],
    config: &Config,
    store: &Store,
    clock: crate::foundation::clock::Clock,
) -> Result<Pairing, StoreError> {
    let lists = components
        .iter()
        .map(|c| Lists {
            gateway: c.id(),
            talkers: c.talkers(),
            deciders: c.deciders(),
        })
        .collect();
    Pairing::new(&config.pairing, &config.approvals, lists, store.clone(), clock)
}

#[cfg(test)]
#[path = "gathered_tests.rs"]
mod tests;
