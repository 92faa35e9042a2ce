//! The usage on the dashboard: tokens in and out per UTC day over the last
//! days (every day, the quiet ones as zero), per provider and per
//! conversation over the same days, each with the consensus voters' share
//! (what the usage records keep under a provider's name marked as votes),
//! and each sum's cost from the configured prices (`cost_usd`; `priced`
//! says whether any provider has a price).

use std::collections::BTreeMap;

use passepartout_admin::Unreadable;
use serde_json::{Value, json};

use crate::engine::pipeline::model_command::ProviderInfo;
use crate::engine::pipeline::usage_report::{self, UsageSum};
use crate::store::{ByProvider, Store, Tokens};

/// The most days a page may ask for: what the store keeps by default and
/// more, not a scan without end.
const MAX_DAYS: u32 = 400;

/// Days `days` back from the day of `now_ms`: per day, per provider, per
/// conversation, priced by `providers`.
pub(super) fn series(store: &Store, now_ms: u64, days: u32, providers: &[ProviderInfo]) -> Result<Value, Unreadable> {
    let days = days.clamp(1, MAX_DAYS);
    let today = usage_report::day_of(now_ms);
    let first = today.saturating_sub(u64::from(days) - 1);
    let recorded: BTreeMap<u64, ByProvider> = store
        .usage_by_day(first, today)
        .map_err(Unreadable::because)?
        .into_iter()
        .collect();
    let mut all = ByProvider::new();
    let per_day: Vec<Value> = (first..=today)
        .map(|day| {
            let used = recorded.get(&day).cloned().unwrap_or_default();
            crate::store::add_usage(&mut all, &used);
            json!({ "day": date(day), "tokens": sum(&used, providers) })
        })
        .collect();
    let mut per_provider: BTreeMap<String, (Tokens, Tokens)> = BTreeMap::new();
    for (recorded, tokens) in &all {
        let (provider, votes) = match usage_report::voter_of(recorded) {
            Some(voter) => (voter, true),
            None => (recorded.as_str(), false),
        };
        let (turns, voting) = per_provider.entry(provider.to_owned()).or_default();
        let into = if votes { voting } else { turns };
        into.tokens_in += tokens.tokens_in;
        into.tokens_out += tokens.tokens_out;
    }
    let per_provider: Vec<Value> = per_provider
        .into_iter()
        .map(|(name, (turns, votes))| {
            let (tokens_in, tokens_out) = (turns.tokens_in + votes.tokens_in, turns.tokens_out + votes.tokens_out);
            let cost = providers.iter().find(|p| p.name == name).map_or(0.0, |p| {
                tokens_in as f64 * p.price_in_per_mtok / 1e6 + tokens_out as f64 * p.price_out_per_mtok / 1e6
            });
            json!({
                "provider": name,
                "tokens_in": tokens_in,
                "tokens_out": tokens_out,
                "votes_in": votes.tokens_in,
                "votes_out": votes.tokens_out,
                "cost_usd": cost,
            })
        })
        .collect();
    let mut per_conversation: Vec<Value> = store
        .usage_by_conversation(first, today)
        .map_err(Unreadable::because)?
        .into_iter()
        .map(|(key, used)| {
            let mut tokens = sum(&used, providers);
            tokens["gateway"] = json!(key.gateway);
            tokens["chat"] = json!(key.chat);
            tokens
        })
        .collect();
    per_conversation.sort_by_key(|c| {
        std::cmp::Reverse(c["tokens_in"].as_u64().unwrap_or(0) + c["tokens_out"].as_u64().unwrap_or(0))
    });
    Ok(json!({
        "first": date(first),
        "last": date(today),
        "days": per_day,
        "providers": per_provider,
        "conversations": per_conversation,
        "total": sum(&all, providers),
        "priced": providers.iter().any(|p| p.price_in_per_mtok > 0.0 || p.price_out_per_mtok > 0.0),
    }))
}

/// Tokens in and out, of them the voters', and what they cost (USD) at
/// `providers`' prices.
fn sum(used: &ByProvider, providers: &[ProviderInfo]) -> Value {
    let sum = UsageSum::of(used, providers);
    json!({
        "tokens_in": sum.tokens_in,
        "tokens_out": sum.tokens_out,
        "votes_in": sum.votes_in,
        "votes_out": sum.votes_out,
        "cost_usd": sum.cost_usd,
    })
}

/// A UTC day as `YYYY-MM-DD`.
fn date(day: u64) -> String {
    let ms = i64::try_from(day.saturating_mul(86_400_000)).unwrap_or(i64::MAX);
    jiff::Timestamp::from_millisecond(ms)
        .map(|at| at.strftime("%Y-%m-%d").to_string())
        .unwrap_or_else(|_| day.to_string())
}

#[cfg(test)]
mod tests {
    use passepartout_gateway::{ChatId, ConversationKey, GatewayId};

    use super::*;
    use crate::engine::pipeline::usage_report::votes_of;

    fn used(provider: &str, tokens_in: u64, tokens_out: u64) -> ByProvider {
        ByProvider::from([(provider.to_owned(), Tokens { tokens_in, tokens_out })])
    }

    #[test]
    fn every_day_is_listed_and_votes_are_their_providers_share() {
        let (_dir, store) = crate::store::tests_support::open_temp();
        let key = ConversationKey::new(GatewayId::new("socket").unwrap(), ChatId::new("me").unwrap());
        // 2026-03-03, and two days before.
        let today = 20_515;
        store.add_usage(&key, today - 2, &used("fake", 10, 5)).unwrap();
        store.add_usage(&key, today, &used(&votes_of("fake"), 4, 1)).unwrap();
        store.add_usage(&key, today - 40, &used("old", 99, 99)).unwrap();
        let out = series(&store, today * 86_400_000 + 1, 3, &[]).unwrap();
        assert_eq!(out["first"], "2026-03-01");
        assert_eq!(out["last"], "2026-03-03");
        let days = out["days"].as_array().unwrap();
        assert_eq!(days.len(), 3);
        assert_eq!(days[0]["tokens"]["tokens_in"], 10);
        assert_eq!(days[1]["tokens"]["tokens_in"], 0, "a quiet day is zero");
        assert_eq!(days[2]["tokens"]["votes_in"], 4);
        assert_eq!(
            out["providers"],
            json!([{"provider": "fake", "tokens_in": 14, "tokens_out": 6, "votes_in": 4, "votes_out": 1, "cost_usd": 0.0}])
        );
        assert_eq!(out["conversations"][0]["chat"], "me");
        assert_eq!(out["conversations"][0]["tokens_in"], 14, "the old day is outside");
        assert_eq!(out["priced"], false);
    }

    #[test]
    fn each_sum_is_priced_at_its_providers_prices_votes_included() {
        let (_dir, store) = crate::store::tests_support::open_temp();
        let key = ConversationKey::new(GatewayId::new("socket").unwrap(), ChatId::new("me").unwrap());
        let today = 20_515;
        store.add_usage(&key, today, &used("paid", 1_000_000, 100_000)).unwrap();
        store
            .add_usage(&key, today, &used(&votes_of("paid"), 1_000_000, 0))
            .unwrap();
        store.add_usage(&key, today, &used("free", 500, 500)).unwrap();
        let prices = [ProviderInfo {
            name: "paid".into(),
            price_in_per_mtok: 3.0,
            price_out_per_mtok: 15.0,
            ..ProviderInfo::default()
        }];
        let out = series(&store, today * 86_400_000 + 1, 1, &prices).unwrap();
        let cost = |value: &Value| value["cost_usd"].as_f64().unwrap();
        // 2 M in at $3, 0.1 M out at $15.
        assert!((cost(&out["total"]) - 7.5).abs() < 1e-9, "{out}");
        assert!((cost(&out["days"][0]["tokens"]) - 7.5).abs() < 1e-9, "{out}");
        assert!((cost(&out["conversations"][0]) - 7.5).abs() < 1e-9, "{out}");
        let providers = out["providers"].as_array().unwrap();
        assert_eq!(providers[0]["provider"], "free");
        assert_eq!(cost(&providers[0]), 0.0);
        assert!((cost(&providers[1]) - 7.5).abs() < 1e-9, "{out}");
        assert_eq!(out["priced"], true);
    }
}
