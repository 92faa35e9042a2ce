//! `[memory]`: how much the assistant keeps per person, and how much of it the
//! model sees in each turn.

use serde::{Deserialize, Serialize};

use super::Problems;

pub const DEFAULT_MAX_FACTS: usize = 500;
pub const DEFAULT_MAX_FACT_CHARS: usize = 500;
pub const DEFAULT_CONTEXT_FACTS: usize = 8;

/// `[memory]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryConfig {
    /// Most facts kept per person; `remember` refuses beyond it.
    pub max_facts: usize,
    /// Longest fact, in characters.
    pub max_fact_chars: usize,
    /// Facts put into the model's context each turn, the most related to the
    /// message first; 0 keeps memory out of the context (the model can still
    /// `recall`).
    pub context_facts: usize,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            max_facts: DEFAULT_MAX_FACTS,
            max_fact_chars: DEFAULT_MAX_FACT_CHARS,
            context_facts: DEFAULT_CONTEXT_FACTS,
        }
    }
}

impl MemoryConfig {
    /// Notes what is wrong with `[memory]`.
    pub fn check(&self, problems: &mut Problems) {
        problems.check(self.max_facts > 0, "memory.max_facts must be at least 1");
        problems.check(self.max_fact_chars >= 16, "memory.max_fact_chars must be at least 16");
    }
}
