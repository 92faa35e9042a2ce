//! Wrong approval tokens named, per person: the moments each named one, in
//! the `guesses` tree, so the limit on guessing holds across a restart
//! (a daemon restarted every few minutes would otherwise give a guesser a
//! fresh allowance each time). Only the moments within the window are kept.

use super::Store;
use super::error::StoreError;

impl Store {
    /// How many wrong tokens `who` named within `window_ms` before `now_ms`.
    pub fn guesses(&self, who: &str, now_ms: u64, window_ms: u64) -> Result<usize, StoreError> {
        Ok(self.recent_guesses(who, now_ms, window_ms)?.len())
    }

    /// Records that `who` named a wrong token at `now_ms`, forgetting the
    /// moments older than `window_ms`.
    pub fn record_guess(&self, who: &str, now_ms: u64, window_ms: u64) -> Result<(), StoreError> {
        let mut moments = self.recent_guesses(who, now_ms, window_ms)?;
        moments.push(now_ms);
        let bytes = serde_json::to_vec(&moments).map_err(|e| StoreError::Corrupt {
            tree: "guesses",
            reason: e.to_string(),
        })?;
        self.wrote(
            self.inner
                .guesses
                .insert(who.as_bytes(), bytes)
                .map_err(StoreError::from),
        )?;
        Ok(())
    }

    fn recent_guesses(&self, who: &str, now_ms: u64, window_ms: u64) -> Result<Vec<u64>, StoreError> {
        let Some(bytes) = self.inner.guesses.get(who.as_bytes())? else {
            return Ok(Vec::new());
        };
        let mut moments: Vec<u64> = serde_json::from_slice(&bytes).map_err(|e| StoreError::Corrupt {
            tree: "guesses",
            reason: e.to_string(),
        })?;
        moments.retain(|at| now_ms.saturating_sub(*at) < window_ms);
        Ok(moments)
    }
}

#[cfg(test)]
mod tests {
    use crate::store::tests::{open_temp, reopen};

    const HOUR: u64 = 3_600_000;

    #[test]
    fn guesses_are_counted_within_the_window_and_survive_reopening() {
        let (_dir, store) = open_temp();
        let path = store.path().to_path_buf();
        for at in [0, 10, HOUR / 2] {
            store.record_guess("telegram:7", at, HOUR).unwrap();
        }
        drop(store);
        let store = reopen(&path);
        assert_eq!(store.guesses("telegram:7", HOUR / 2, HOUR).unwrap(), 3);
        assert_eq!(
            store.guesses("telegram:7", HOUR + 5, HOUR).unwrap(),
            2,
            "the first passed"
        );
        assert_eq!(store.guesses("telegram:8", HOUR / 2, HOUR).unwrap(), 0, "per person");
    }
}
