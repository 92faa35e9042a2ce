//! A conversation worker's copy of the conversation's running summary,
//! recent turns and settings (`/model`, `/new`).
//!
//! The worker is the only writer of its conversation's history, summary and
//! settings, so after loading them once it can keep them up to date itself
//! instead of reading and parsing them from the store for every turn. Any
//! commit that fails drops the copy; the next turn loads it again.
//!
//! The turns are those after the conversation's fresh start (`/new`) and
//! after the last turn its summary covers, the last N of them, each with its
//! history id: a fold into the summary is committed as the id of the last
//! turn folded. Without compaction there is no summary.

use std::collections::VecDeque;

use passepartout_gateway::ConversationKey;

use crate::engine::pipeline::compaction::Earlier;
use crate::engine::pipeline::{SummaryChange, TurnRecord};
use crate::store::{ChatSettings, Store, StoreError, Summary, SummaryWrite};

pub struct RecentHistory {
    limit: usize,
    /// Whether the conversation keeps a running summary.
    compacting: bool,
    loaded: Option<Loaded>,
}

struct Loaded {
    /// What the conversation set for itself.
    settings: ChatSettings,
    summary: Option<Summary>,
    /// The turns' history ids, beside them.
    ids: VecDeque<u64>,
    turns: VecDeque<TurnRecord>,
}

/// What a committed turn changed, for the copy.
#[derive(Debug, Default)]
pub struct Remembered {
    /// The history was deleted first (`/forget`), and the summary with it.
    pub forget: bool,
    /// The summary's change.
    pub summary: Option<SummaryWrite>,
    /// The turn kept, under its history id.
    pub record: Option<(u64, TurnRecord)>,
}

impl RecentHistory {
    /// Keeps the last `limit` turns, and the summary when `compacting`.
    pub fn new(limit: usize, compacting: bool) -> Self {
        Self {
            limit,
            compacting,
            loaded: None,
        }
    }

    /// The summary and the recent turns (oldest first), loaded from `store`
    /// the first time.
    pub fn load(&mut self, store: &Store, key: &ConversationKey) -> Result<Earlier<'_>, StoreError> {
        self.load_with_settings(store, key).map(|(earlier, _)| earlier)
    }

    /// [`RecentHistory::load`], and the conversation's settings beside.
    pub fn load_with_settings(
        &mut self,
        store: &Store,
        key: &ConversationKey,
    ) -> Result<(Earlier<'_>, &ChatSettings), StoreError> {
        let loaded = match self.loaded.take() {
            Some(loaded) => loaded,
            None => self.read(store, key)?,
        };
        let loaded = self.loaded.insert(loaded);
        let earlier = Earlier {
            summary: loaded.summary.as_ref().map(|summary| summary.text.as_str()),
            turns: loaded.turns.make_contiguous(),
        };
        Ok((earlier, &loaded.settings))
    }

    /// Reads the copy from `store`.
    fn read(&self, store: &Store, key: &ConversationKey) -> Result<Loaded, StoreError> {
        let settings = store.chat_settings(key)?;
        let fresh = settings.fresh_after;
        // A summary from before the fresh start is left behind with its turns.
        let summary = match self.compacting {
            true => store
                .summary(key)?
                .filter(|summary| fresh.is_none_or(|fresh| summary.through > fresh)),
            false => None,
        };
        let mark = fresh.max(summary.as_ref().map(|summary| summary.through));
        let (ids, turns) = store.recent_kept_after(key, self.limit, mark)?.into_iter().unzip();
        Ok(Loaded {
            settings,
            summary,
            ids,
            turns,
        })
    }

    /// The conversation's settings were stored as `settings`.
    pub fn settings_stored(&mut self, settings: ChatSettings) {
        if let Some(loaded) = self.loaded.as_mut() {
            loaded.settings = settings;
        }
    }

    /// The summary write for `change`, made by a turn given the turns now
    /// in the copy; `None` when a fold does not match them.
    pub fn summary_write(&self, change: SummaryChange) -> Option<SummaryWrite> {
        match change {
            SummaryChange::Clear => Some(SummaryWrite::Clear),
            SummaryChange::Folded(folded) => {
                let through = folded.turns.checked_sub(1)?;
                let through = *self.loaded.as_ref()?.ids.get(through)?;
                Some(SummaryWrite::Set(Summary {
                    text: folded.text,
                    through,
                }))
            }
        }
    }

    /// A turn committed: `forget` cleared the history (and the summary)
    /// first, then the summary changed, then the record (if any) was
    /// appended.
    pub fn committed(&mut self, remembered: Remembered) {
        let Some(loaded) = self.loaded.as_mut() else {
            return;
        };
        if remembered.forget {
            loaded.ids.clear();
            loaded.turns.clear();
            loaded.summary = None;
        }
        match remembered.summary {
            Some(SummaryWrite::Set(summary)) => {
                while loaded.ids.front().is_some_and(|id| *id <= summary.through) {
                    loaded.ids.pop_front();
                    loaded.turns.pop_front();
                }
                loaded.summary = Some(summary).filter(|_| self.compacting);
            }
            Some(SummaryWrite::Clear) => loaded.summary = None,
            None => {}
        }
        if let Some((id, record)) = remembered.record {
            loaded.ids.push_back(id);
            loaded.turns.push_back(record);
            while loaded.turns.len() > self.limit {
                loaded.ids.pop_front();
                loaded.turns.pop_front();
            }
        }
    }

    /// The store may differ from the copy: load it again next time.
    pub fn invalidate(&mut self) {
        self.loaded = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::pipeline::compaction::Folded;
    use crate::model::llm::ChatMessage;
    use crate::store::TurnCommit;
    use crate::store::tests_support::{conversation, open_temp};

    fn record(text: &str) -> TurnRecord {
        TurnRecord {
            messages: vec![ChatMessage::user(text)],
            at_ms: None,
            by: None,
        }
    }

    fn texts(earlier: Earlier<'_>) -> Vec<String> {
        earlier.turns.iter().map(|t| t.messages[0].content.clone()).collect()
    }

    /// Commits a turn keeping `text`, as the worker does, and tells the copy.
    fn keep(store: &Store, recent: &mut RecentHistory, text: &str, summary: Option<SummaryWrite>) -> u64 {
        let id = store.history_id().unwrap();
        let turn = TurnCommit {
            history_record: Some(serde_json::to_vec(&record(text)).unwrap()),
            history_id: Some(id),
            summary: summary.clone(),
            ..TurnCommit::default()
        };
        store.commit_turn(&conversation("c"), turn).unwrap();
        recent.committed(Remembered {
            forget: false,
            summary,
            record: Some((id, record(text))),
        });
        id
    }

    #[test]
    fn the_copy_matches_what_the_store_would_return() {
        let (_dir, store) = open_temp();
        let key = conversation("c");
        let mut unloaded = RecentHistory::new(2, true);
        for text in ["a", "b", "c"] {
            keep(&store, &mut unloaded, text, None);
        }
        let mut recent = RecentHistory::new(2, true);
        assert_eq!(texts(recent.load(&store, &key).unwrap()), ["b", "c"]);
        keep(&store, &mut recent, "d", None);
        assert_eq!(texts(recent.load(&store, &key).unwrap()), ["c", "d"]);
        recent.committed(Remembered {
            forget: true,
            ..Remembered::default()
        });
        assert!(recent.load(&store, &key).unwrap().turns.is_empty());
        recent.invalidate();
        assert_eq!(
            texts(recent.load(&store, &key).unwrap()),
            ["c", "d"],
            "reloaded from the store"
        );
    }

    #[test]
    fn a_fold_leaves_the_folded_turns_behind_in_the_copy_and_in_the_store() {
        let (_dir, store) = open_temp();
        let key = conversation("c");
        let mut recent = RecentHistory::new(10, true);
        recent.load(&store, &key).unwrap();
        for text in ["a", "b", "c"] {
            keep(&store, &mut recent, text, None);
        }
        let folded = Folded {
            text: "a and b were said".into(),
            turns: 2,
        };
        let write = recent.summary_write(SummaryChange::Folded(folded)).unwrap();
        keep(&store, &mut recent, "d", Some(write));
        let earlier = recent.load(&store, &key).unwrap();
        assert_eq!(earlier.summary, Some("a and b were said"));
        assert_eq!(texts(earlier), ["c", "d"]);
        let mut reloaded = RecentHistory::new(10, true);
        let earlier = reloaded.load(&store, &key).unwrap();
        assert_eq!(
            (earlier.summary, texts(earlier)),
            (Some("a and b were said"), vec!["c".into(), "d".into()])
        );
        assert_eq!(store.history_len(&key), 4, "the folded turns stay in the history");
        let mut plain = RecentHistory::new(10, false);
        let earlier = plain.load(&store, &key).unwrap();
        assert_eq!(
            (earlier.summary, earlier.turns.len()),
            (None, 4),
            "without compaction, no summary"
        );
        assert_eq!(
            recent.summary_write(SummaryChange::Folded(Folded {
                text: "x".into(),
                turns: 3,
            })),
            None,
            "a fold of more turns than the copy has is refused"
        );
    }

    #[test]
    fn the_settings_are_read_once_and_then_kept_by_the_worker() {
        let (_dir, store) = open_temp();
        let key = conversation("c");
        store
            .update_chat_settings(&key, |s| s.pinned_model = Some("big".into()))
            .unwrap();
        let mut recent = RecentHistory::new(10, true);
        let pinned = |recent: &mut RecentHistory| {
            let (_, settings) = recent.load_with_settings(&store, &key).unwrap();
            settings.pinned_model.clone()
        };
        assert_eq!(pinned(&mut recent).as_deref(), Some("big"));
        // Not read again: only the worker changes them, and tells its copy.
        store.update_chat_settings(&key, |s| s.pinned_model = None).unwrap();
        assert_eq!(pinned(&mut recent).as_deref(), Some("big"));
        let stored = store
            .update_chat_settings(&key, |s| s.pinned_model = Some("small".into()))
            .unwrap();
        recent.settings_stored(stored);
        assert_eq!(pinned(&mut recent).as_deref(), Some("small"));
        recent.invalidate();
        assert_eq!(
            pinned(&mut recent).as_deref(),
            Some("small"),
            "read again from the store"
        );
    }

    #[test]
    fn a_summary_from_before_a_fresh_start_is_left_behind() {
        let (_dir, store) = open_temp();
        let key = conversation("c");
        let mut recent = RecentHistory::new(10, true);
        recent.load(&store, &key).unwrap();
        let first = keep(&store, &mut recent, "a", None);
        let summary = Summary {
            text: "a was said".into(),
            through: first,
        };
        keep(&store, &mut recent, "b", Some(SummaryWrite::Set(summary)));
        let mark = store.history_mark().unwrap();
        store
            .update_chat_settings(&key, |s| s.fresh_after = Some(mark))
            .unwrap();
        keep(&store, &mut recent, "c", None);
        let earlier = RecentHistory::new(10, true)
            .load(&store, &key)
            .map(|e| (e.summary.map(str::to_owned), texts(e)))
            .unwrap();
        assert_eq!(earlier, (None, vec!["c".to_owned()]));
    }
}
