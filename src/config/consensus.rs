//! `[skills.consensus]`: other models vote on a proposed tool call before it
//! runs. Which providers vote (by their `[[llm.providers]]` name), how many
//! must agree, which calls are put to the vote, and what a rejection does.
//! With no voters the gate is off.

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};

use super::{LlmConfig, Problems};

pub const DEFAULT_CONSENSUS_TIMEOUT_S: u64 = 20;
/// What `applies_to` is, as a word, for every call that needs approval.
pub const APPLIES_TO_APPROVAL: &str = "approval";

/// `[skills.consensus]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConsensusConfig {
    /// The providers that vote, by their `[[llm.providers]]` names; none:
    /// the gate is off.
    pub voters: Vec<String>,
    /// How many must agree for the call to pass; default: a majority of
    /// the voters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quorum: Option<usize>,
    /// Which calls are put to the vote: `"approval"` (every call the
    /// skills hold for approval) or a list of tool names (every call of
    /// those tools, whether it needs approval or not).
    pub applies_to: AppliesTo,
    /// What a call the voters reject becomes.
    pub on_disagreement: OnDisagreement,
    /// How long each voter has to answer, in seconds; a voter that takes
    /// longer does not vote.
    pub timeout_s: u64,
}

impl Default for ConsensusConfig {
    fn default() -> Self {
        Self {
            voters: Vec::new(),
            quorum: None,
            applies_to: AppliesTo::Approval,
            on_disagreement: OnDisagreement::Ask,
            timeout_s: DEFAULT_CONSENSUS_TIMEOUT_S,
        }
    }
}

/// Which calls the voters see.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AppliesTo {
    /// Every call the skills hold for a person's approval.
    Approval,
    /// Every call of these tools.
    Tools(Vec<String>),
}

/// What a call the voters reject becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnDisagreement {
    /// Refused: it never reaches a person.
    Deny,
    /// A person decides, told how the models voted.
    Ask,
}

impl ConsensusConfig {
    /// Whether any provider votes.
    pub fn enabled(&self) -> bool {
        !self.voters.is_empty()
    }

    /// How many must agree: `quorum`, or a majority of the voters.
    pub fn quorum(&self) -> usize {
        self.quorum.unwrap_or(self.voters.len() / 2 + 1)
    }

    /// Notes what is wrong with `[skills.consensus]`: voters that name no
    /// provider of `llm`, a quorum the voters cannot reach, a timeout that
    /// would outlast the turn (`turn_timeout_s`).
    pub fn check(&self, problems: &mut Problems, llm: &LlmConfig, turn_timeout_s: u64) {
        const AT: &str = "skills.consensus";
        let providers: Vec<&str> = llm.providers.iter().map(|p| p.name.as_str()).collect();
        let mut seen = HashSet::new();
        for (index, voter) in self.voters.iter().enumerate() {
            problems.check(
                llm.has_provider(voter),
                format!(
                    "{AT}.voters[{index}] {voter:?} names no [[llm.providers]] entry (by its name; they are: {})",
                    providers.join(", ")
                ),
            );
            problems.check(
                seen.insert(voter.as_str()),
                format!("{AT}.voters[{index}] {voter:?} is listed twice"),
            );
        }
        if let Some(quorum) = self.quorum {
            problems.check(
                (1..=self.voters.len().max(1)).contains(&quorum),
                format!(
                    "{AT}.quorum ({quorum}) must be between 1 and the number of voters ({})",
                    self.voters.len()
                ),
            );
        }
        if let AppliesTo::Tools(tools) = &self.applies_to {
            problems.check(
                !tools.is_empty(),
                format!("{AT}.applies_to must name at least one tool, or be \"{APPLIES_TO_APPROVAL}\""),
            );
        }
        problems.check(self.timeout_s > 0, format!("{AT}.timeout_s must be at least 1"));
        problems.check(
            !self.enabled() || self.timeout_s < turn_timeout_s,
            format!(
                "{AT}.timeout_s ({} s) must be shorter than pipeline.turn_timeout_s ({turn_timeout_s} s), \
                 or a slow voter ends the whole turn",
                self.timeout_s
            ),
        );
    }
}

impl Serialize for AppliesTo {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            AppliesTo::Approval => serializer.serialize_str(APPLIES_TO_APPROVAL),
            AppliesTo::Tools(tools) => tools.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for AppliesTo {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Either;

        impl<'de> Visitor<'de> for Either {
            type Value = AppliesTo;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "\"{APPLIES_TO_APPROVAL}\" or a list of tool names")
            }

            fn visit_str<E: de::Error>(self, word: &str) -> Result<AppliesTo, E> {
                if word == APPLIES_TO_APPROVAL {
                    Ok(AppliesTo::Approval)
                } else {
                    Err(E::invalid_value(de::Unexpected::Str(word), &self))
                }
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<AppliesTo, A::Error> {
                let mut tools = Vec::new();
                while let Some(tool) = seq.next_element::<String>()? {
                    tools.push(tool);
                }
                Ok(AppliesTo::Tools(tools))
            }
        }

        deserializer.deserialize_any(Either)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ProviderConfig;

    fn llm(names: &[&str]) -> LlmConfig {
        LlmConfig {
            providers: names
                .iter()
                .map(|name| ProviderConfig {
                    name: (*name).to_owned(),
                    ..ProviderConfig::default()
                })
                .collect(),
            ..LlmConfig::default()
        }
    }

    fn problems_of(config: &ConsensusConfig, llm: &LlmConfig) -> Vec<String> {
        let mut problems = Problems::default();
        config.check(&mut problems, llm, 300);
        problems.into_vec()
    }

    #[test]
    fn an_unknown_voter_is_a_problem_naming_the_providers() {
        let config = ConsensusConfig {
            voters: vec!["a".into(), "gtp".into(), "a".into()],
            ..ConsensusConfig::default()
        };
        assert_eq!(
            problems_of(&config, &llm(&["a", "gpt"])),
            [
                "skills.consensus.voters[1] \"gtp\" names no [[llm.providers]] entry (by its name; they are: a, gpt)",
                "skills.consensus.voters[2] \"a\" is listed twice",
            ]
        );
    }

    #[test]
    fn a_quorum_the_voters_cannot_reach_and_a_timeout_past_the_turn_are_problems() {
        let config = ConsensusConfig {
            voters: vec!["a".into(), "b".into()],
            quorum: Some(3),
            applies_to: AppliesTo::Tools(Vec::new()),
            timeout_s: 300,
            ..ConsensusConfig::default()
        };
        let problems = problems_of(&config, &llm(&["a", "b"]));
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].contains("quorum (3) must be between 1 and the number of voters (2)"));
        assert!(problems[1].contains("applies_to must name at least one tool"));
        assert!(problems[2].contains("shorter than pipeline.turn_timeout_s"));
    }

    #[test]
    fn the_quorum_is_a_majority_unless_set() {
        let voters = |n: usize| ConsensusConfig {
            voters: (0..n).map(|i| i.to_string()).collect(),
            ..ConsensusConfig::default()
        };
        assert_eq!([1, 2, 3, 4].map(|n| voters(n).quorum()), [1, 2, 2, 3]);
        let set = ConsensusConfig {
            quorum: Some(1),
            ..voters(3)
        };
        assert_eq!(set.quorum(), 1);
        assert!(!ConsensusConfig::default().enabled());
    }

    #[test]
    fn applies_to_reads_the_word_or_a_list_from_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let read = |applies_to: &str| {
            let path = dir.path().join("c.toml");
            let text = format!(
                "[[llm.providers]]\nname = \"a\"\n[skills.consensus]\nvoters = [\"a\"]\napplies_to = {applies_to}\n"
            );
            std::fs::write(&path, text).unwrap();
            crate::config::load(Some(&path), Some(Default::default())).map(|c| c.skills.consensus.applies_to)
        };
        assert_eq!(read("\"approval\"").unwrap(), AppliesTo::Approval);
        assert_eq!(
            read("[\"shell\", \"http_get\"]").unwrap(),
            AppliesTo::Tools(vec!["shell".into(), "http_get".into()])
        );
        let error = read("\"everything\"").unwrap_err().to_string();
        assert!(error.contains("\"approval\" or a list of tool names"), "{error}");
    }
}
