//! `/usage` and the status's usage totals: tokens by provider, over UTC
//! days, with the cost estimated from the configured prices.
//!
//! The store keeps one record per conversation per day (see
//! `store::usage`); this module says which days "today" and "this month"
//! are, and renders the sums. What the consensus gate's voters used is
//! kept under its provider's name marked as votes ([`votes_of`]), priced as
//! that provider, counted in the sums and shown apart as well.

use serde::{Deserialize, Serialize};

use super::model_command::ProviderInfo;
use crate::store::ByProvider;

const DAY_MS: u64 = 86_400_000;

/// What marks a provider's votes in the usage records.
const VOTES: &str = "votes:";

/// The name `provider`'s voting is recorded under, apart from its turns.
pub fn votes_of(provider: &str) -> String {
    format!("{VOTES}{provider}")
}

/// The provider whose votes `recorded` (a usage record's provider name)
/// holds; none for a provider's own turns.
pub fn voter_of(recorded: &str) -> Option<&str> {
    recorded.strip_prefix(VOTES)
}

/// The UTC day (days since 1970-01-01) that `ms` falls on.
pub fn day_of(ms: u64) -> u64 {
    ms / DAY_MS
}

/// The first UTC day of the month that `ms` falls in.
pub fn first_day_of_month(ms: u64) -> u64 {
    let day = day_of(ms);
    let date = jiff::Timestamp::from_millisecond(i64::try_from(ms).unwrap_or(i64::MAX))
        .map(|t| t.to_zoned(jiff::tz::TimeZone::UTC).date());
    match date {
        Ok(date) => day.saturating_sub(u64::from(date.day().unsigned_abs()) - 1),
        Err(_) => day,
    }
}

/// Tokens and estimated cost over some days.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct UsageSum {
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// USD, from the providers' prices; 0 when all are free.
    pub cost_usd: f64,
    /// Of the tokens, those the consensus gate's voters used.
    pub votes_in: u64,
    pub votes_out: u64,
}

impl UsageSum {
    /// Sums `used`, priced by `providers` (a provider not configured any
    /// more counts as free).
    pub fn of(used: &ByProvider, providers: &[ProviderInfo]) -> Self {
        let mut sum = Self::default();
        for (recorded, tokens) in used {
            sum.tokens_in += tokens.tokens_in;
            sum.tokens_out += tokens.tokens_out;
            let name = match recorded.strip_prefix(VOTES) {
                Some(voter) => {
                    sum.votes_in += tokens.tokens_in;
                    sum.votes_out += tokens.tokens_out;
                    voter
                }
                None => recorded.as_str(),
            };
            if let Some(p) = providers.iter().find(|p| p.name == name) {
                sum.cost_usd += tokens.tokens_in as f64 * p.price_in_per_mtok / 1e6
                    + tokens.tokens_out as f64 * p.price_out_per_mtok / 1e6;
            }
        }
        sum
    }

    fn line(&self, label: &str) -> String {
        let cost = if self.cost_usd > 0.0 {
            format!(", about ${:.4}", self.cost_usd)
        } else {
            String::new()
        };
        let votes = if self.votes_in + self.votes_out > 0 {
            format!(
                " (of which consensus votes: {} in, {} out)",
                self.votes_in, self.votes_out
            )
        } else {
            String::new()
        };
        format!(
            "{label}: {} tokens in, {} out{cost}{votes}",
            self.tokens_in, self.tokens_out
        )
    }
}

/// Today's and this month's sums.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct UsagePeriods {
    pub today: UsageSum,
    pub month: UsageSum,
}

/// Renders `/usage`: this conversation's sums, then everyone's.
pub fn render(here: &UsagePeriods, total: &UsagePeriods) -> String {
    [
        "**Usage** (UTC days; costs estimated from `llm.providers` prices):".to_owned(),
        here.today.line("This conversation today"),
        here.month.line("This conversation this month"),
        total.today.line("In total today"),
        total.month.line("In total this month"),
    ]
    .join("\n")
}

/// The `/usage` text of this conversation alone.
pub fn render_here(here: &UsagePeriods) -> String {
    [
        "**Usage** (UTC days; costs estimated from `llm.providers` prices):".to_owned(),
        here.today.line("This conversation today"),
        here.month.line("This conversation this month"),
    ]
    .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Tokens;

    #[test]
    fn days_and_months_are_utc() {
        // 2026-03-01T00:00:00Z and a moment before it.
        let march_first = 1_772_323_200_000;
        assert_eq!(first_day_of_month(march_first), day_of(march_first));
        assert_eq!(first_day_of_month(march_first + 5 * DAY_MS + 1), day_of(march_first));
        assert_eq!(day_of(march_first - 1), day_of(march_first) - 1);
        assert_eq!(
            first_day_of_month(march_first - 1),
            day_of(march_first) - 28,
            "February 2026"
        );
    }

    #[test]
    fn cost_follows_the_prices_and_free_models_show_tokens_only() {
        let providers = [ProviderInfo {
            name: "paid".into(),
            model: "m".into(),
            price_in_per_mtok: 3.0,
            price_out_per_mtok: 15.0,
        }];
        let used = ByProvider::from([
            (
                "paid".to_owned(),
                Tokens {
                    tokens_in: 1_000_000,
                    tokens_out: 100_000,
                },
            ),
            (
                "local".to_owned(),
                Tokens {
                    tokens_in: 7,
                    tokens_out: 3,
                },
            ),
        ]);
        let sum = UsageSum::of(&used, &providers);
        assert_eq!((sum.tokens_in, sum.tokens_out), (1_000_007, 100_003));
        assert!((sum.cost_usd - 4.5).abs() < 1e-9);
        assert_eq!(sum.line("x"), "x: 1000007 tokens in, 100003 out, about $4.5000");
        let free = UsageSum::of(&ByProvider::from([("local".to_owned(), Tokens::default())]), &providers);
        assert_eq!(free.line("x"), "x: 0 tokens in, 0 out");
    }

    #[test]
    fn votes_are_priced_as_their_provider_and_shown_apart() {
        let providers = [ProviderInfo {
            name: "paid".into(),
            model: "m".into(),
            price_in_per_mtok: 1.0,
            price_out_per_mtok: 10.0,
        }];
        let used = ByProvider::from([
            (
                "paid".to_owned(),
                Tokens {
                    tokens_in: 1_000_000,
                    tokens_out: 0,
                },
            ),
            (
                votes_of("paid"),
                Tokens {
                    tokens_in: 1_000_000,
                    tokens_out: 100_000,
                },
            ),
        ]);
        let sum = UsageSum::of(&used, &providers);
        assert_eq!((sum.tokens_in, sum.tokens_out), (2_000_000, 100_000));
        assert_eq!((sum.votes_in, sum.votes_out), (1_000_000, 100_000));
        assert!((sum.cost_usd - 3.0).abs() < 1e-9);
        assert_eq!(
            sum.line("x"),
            "x: 2000000 tokens in, 100000 out, about $3.0000 (of which consensus votes: 1000000 in, 100000 out)"
        );
    }
}
