//! `/model`: which providers there are and how they are, and which one this
//! conversation asks first.
//!
//! A pinned provider is asked first, and when it does not answer the rest of
//! the cascade does and the reply says so: someone who pinned a model wants
//! an answer more than a failure, but must not be misled about who gave it.

use passepartout_gateway::markup::escape;

use super::cascade::{EntryState, ProviderHealth};
use super::commands::ChatChange;

/// A configured provider, as `/model` and `/usage` name and price it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProviderInfo {
    pub name: String,
    pub model: String,
    /// USD per million tokens in and out; 0 for a free or local one.
    pub price_in_per_mtok: f64,
    pub price_out_per_mtok: f64,
}

/// The word that returns to the cascade's order.
pub const AUTO: &str = "auto";

/// Answers `/model` (with `arg`, if any) given the `providers` configured,
/// the cascade's `health` (its entries, in order) and the provider `pinned`
/// here; returns the reply and the change to store.
pub fn answer(
    arg: Option<&str>,
    providers: &[ProviderInfo],
    health: &[ProviderHealth],
    pinned: Option<&str>,
) -> (String, Option<ChatChange>) {
    let Some(arg) = arg else {
        return (list(providers, health, pinned), None);
    };
    if arg.eq_ignore_ascii_case(AUTO) {
        let order = health.iter().map(|h| h.name.as_str()).collect::<Vec<_>>().join(", ");
        return (
            format!("Back to the usual order here: {}.", escape(&order)),
            Some(ChatChange::Pin(None)),
        );
    }
    let Some(entry) = health.iter().find(|h| h.name.eq_ignore_ascii_case(arg)) else {
        return (unknown(arg, health), None);
    };
    let mut text = format!(
        "{}{} answers first here from now on; if it does not answer, the next one does and I say so. \
         /model auto returns to the usual order.",
        escape(&entry.name),
        model_of(providers, &entry.name)
            .map(|m| format!(" ({})", escape(m)))
            .unwrap_or_default()
    );
    if entry.state != EntryState::Ok {
        text.push_str(&format!(" Note: it is {} right now.", state(entry)));
    }
    (text, Some(ChatChange::Pin(Some(entry.name.clone()))))
}

fn list(providers: &[ProviderInfo], health: &[ProviderHealth], pinned: Option<&str>) -> String {
    let mut text = "Models, in the order they are asked:".to_owned();
    for entry in health {
        let model = model_of(providers, &entry.name)
            .map(|m| format!(" — {}", escape(m)))
            .unwrap_or_default();
        let mark = if pinned == Some(entry.name.as_str()) {
            " (pinned here)"
        } else {
            ""
        };
        text.push_str(&format!("\n• {}{model} — {}{mark}", escape(&entry.name), state(entry)));
    }
    match pinned {
        Some(name) if !health.iter().any(|h| h.name == name) => text.push_str(&format!(
            "\nPinned here: {}, which is no longer configured, so the usual order applies. /model auto clears it.",
            escape(name)
        )),
        Some(name) => text.push_str(&format!(
            "\n{} is asked first here; /model auto returns to the usual order.",
            escape(name)
        )),
        None => text.push_str("\n/model NAME asks NAME first in this conversation."),
    }
    text
}

fn unknown(arg: &str, health: &[ProviderHealth]) -> String {
    let wanted = arg.to_lowercase();
    let mut names: Vec<(f64, &str)> = health
        .iter()
        .map(|h| (strsim::jaro_winkler(&wanted, &h.name.to_lowercase()), h.name.as_str()))
        .collect();
    names.sort_by(|a, b| b.0.total_cmp(&a.0));
    let close: Vec<&str> = names
        .iter()
        .filter(|(score, _)| *score >= 0.7)
        .map(|(_, n)| *n)
        .collect();
    let offered = if close.is_empty() {
        names.iter().map(|(_, n)| *n).collect::<Vec<_>>()
    } else {
        close
    };
    let offered: Vec<String> = offered
        .into_iter()
        .take(3)
        .map(|n| format!("/model {}", escape(n)))
        .collect();
    format!(
        "No provider {}; try {} (or /model auto).",
        escape(arg),
        offered.join(", ")
    )
}

fn model_of<'a>(providers: &'a [ProviderInfo], name: &str) -> Option<&'a str> {
    providers.iter().find(|p| p.name == name).map(|p| p.model.as_str())
}

fn state(entry: &ProviderHealth) -> String {
    match entry.state {
        EntryState::Ok => "healthy".to_owned(),
        EntryState::CoolingDown => format!("rate limited (resting {} s more)", entry.cooldown_s.unwrap_or(1)),
        EntryState::Unhealthy => "unhealthy (credentials refused)".to_owned(),
        EntryState::Unreachable => "unreachable at its last call".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn health(name: &str, state: EntryState) -> ProviderHealth {
        ProviderHealth {
            name: name.into(),
            state,
            ..ProviderHealth::default()
        }
    }

    fn setup() -> (Vec<ProviderInfo>, Vec<ProviderHealth>) {
        let providers = vec![ProviderInfo {
            name: "local".into(),
            model: "llama3.2".into(),
            ..ProviderInfo::default()
        }];
        let health = vec![
            health("local", EntryState::Ok),
            health("claude", EntryState::Unhealthy),
            health("openai", EntryState::Ok),
        ];
        (providers, health)
    }

    #[test]
    fn the_list_shows_models_states_and_the_pin() {
        let (providers, health) = setup();
        let (text, change) = answer(None, &providers, &health, Some("claude"));
        assert_eq!(change, None);
        assert!(text.contains("• local — llama3.2 — healthy"), "{text}");
        assert!(
            text.contains("• claude — unhealthy (credentials refused) (pinned here)"),
            "{text}"
        );
    }

    #[test]
    fn a_name_pins_case_insensitively_and_auto_unpins() {
        let (providers, health) = setup();
        let (text, change) = answer(Some("LOCAL"), &providers, &health, None);
        assert_eq!(change, Some(ChatChange::Pin(Some("local".into()))));
        assert!(text.starts_with("local (llama3.2) answers first here"), "{text}");
        let (text, _) = answer(Some("claude"), &providers, &health, None);
        assert!(text.contains("unhealthy"), "{text}");
        let (text, change) = answer(Some("auto"), &providers, &health, Some("local"));
        assert_eq!(change, Some(ChatChange::Pin(None)));
        assert!(text.contains("local, claude, openai"), "{text}");
    }

    #[test]
    fn an_unknown_name_offers_the_closest() {
        let (providers, health) = setup();
        let (text, change) = answer(Some("claud"), &providers, &health, None);
        assert_eq!(change, None);
        assert_eq!(text, "No provider claud; try /model claude (or /model auto).");
        let (text, _) = answer(Some("zzz"), &providers, &health, None);
        assert!(text.starts_with("No provider zzz; try /model "), "{text}");
    }

    #[test]
    fn a_pin_no_longer_configured_is_said() {
        let (providers, health) = setup();
        let (text, _) = answer(None, &providers, &health, Some("gone"));
        assert!(text.contains("gone, which is no longer configured"), "{text}");
    }
}
