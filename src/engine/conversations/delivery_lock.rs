//! One lock per conversation for delivering its outbox, so that whoever
//! delivers — the worker right after a commit, or a task started when the
//! conversation became reachable or a retry fell due — does it alone: an
//! outbox entry is never sent twice at once, and replies leave in order.
//!
//! The locks are asynchronous (a delivery waits on the gateway while holding
//! one) and live in a map only while someone holds or waits for them, so the
//! map stays as large as the deliveries under way.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

/// Asynchronous locks by key, each kept only while in use.
pub struct DeliveryLocks<K> {
    locks: Mutex<HashMap<K, Arc<AsyncMutex<()>>>>,
}

impl<K> Default for DeliveryLocks<K> {
    fn default() -> Self {
        Self {
            locks: Mutex::default(),
        }
    }
}

impl<K: Hash + Eq + Clone> DeliveryLocks<K> {
    /// Waits until `key`'s lock is free and takes it; it is released when
    /// the guard is dropped.
    pub async fn lock(&self, key: &K) -> DeliveryGuard<'_, K> {
        let lock = self.map().entry(key.clone()).or_default().clone();
        // Made before waiting, so that a waiter given up on still lets go.
        let entry = Entry {
            locks: self,
            key: key.clone(),
            lock: Some(lock.clone()),
        };
        let guard = lock.lock_owned().await;
        DeliveryGuard {
            _guard: guard,
            _entry: entry,
        }
    }

    /// How many keys have a lock held or waited for.
    #[cfg(test)]
    fn in_use(&self) -> usize {
        self.map().len()
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<K, Arc<AsyncMutex<()>>>> {
        // The map is consistent between any two statements: a panic elsewhere
        // while it was locked left nothing half done.
        self.locks.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A held lock. Dropping it lets the next waiter in.
pub struct DeliveryGuard<'a, K: Hash + Eq + Clone> {
    // Fields drop in order: the lock is released before the entry is given up.
    _guard: OwnedMutexGuard<()>,
    _entry: Entry<'a, K>,
}

/// A holder's or waiter's share of a key's lock: the last one given up
/// removes the key from the map.
struct Entry<'a, K: Hash + Eq + Clone> {
    locks: &'a DeliveryLocks<K>,
    key: K,
    lock: Option<Arc<AsyncMutex<()>>>,
}

impl<K: Hash + Eq + Clone> Drop for Entry<'_, K> {
    fn drop(&mut self) {
        // Shares are only taken under the map's lock, so with it held a count
        // of one (the map's own) means nobody holds or waits.
        let mut map = self.locks.map();
        drop(self.lock.take());
        if map.get(&self.key).is_some_and(|lock| Arc::strong_count(lock) == 1) {
            map.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures::FutureExt;

    use super::*;

    #[tokio::test]
    async fn one_holder_per_key_and_keys_apart() {
        let locks = DeliveryLocks::default();
        let a = locks.lock(&"a").await;
        assert!(locks.lock(&"a").now_or_never().is_none(), "a is held");
        let b = locks.lock(&"b").now_or_never();
        assert!(b.is_some(), "b is another key");
        drop(b);
        drop(a);
        assert!(locks.lock(&"a").now_or_never().is_some(), "a was let go");
    }

    #[tokio::test]
    async fn a_waiter_gets_the_lock_when_the_holder_lets_go() {
        let locks = Arc::new(DeliveryLocks::default());
        let held = locks.lock(&"a").await;
        let (taken, mut got) = tokio::sync::oneshot::channel();
        let waiter = tokio::spawn({
            let locks = locks.clone();
            async move {
                let _guard = locks.lock(&"a").await;
                let _ = taken.send(());
            }
        });
        tokio::task::yield_now().await;
        assert!(got.try_recv().is_err(), "still held");
        drop(held);
        tokio::time::timeout(Duration::from_secs(10), waiter)
            .await
            .expect("the waiter got the lock")
            .unwrap();
        assert_eq!(locks.in_use(), 0);
    }

    #[tokio::test]
    async fn keys_nobody_holds_or_waits_for_are_forgotten() {
        let locks = DeliveryLocks::default();
        let held = locks.lock(&"a").await;
        let mut waiting = Box::pin(locks.lock(&"a"));
        assert!((&mut waiting).now_or_never().is_none());
        drop(held);
        assert_eq!(locks.in_use(), 1, "kept for the waiter");
        drop(waiting);
        assert_eq!(locks.in_use(), 0, "a waiter given up on lets go too");
        drop(locks.lock(&"b").await);
        assert_eq!(locks.in_use(), 0);
    }
}
