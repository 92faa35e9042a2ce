//! Pacing the bot's messages to stay inside Telegram's limits before it
//! hits them, rather than learning them from a 429.
//!
//! Telegram asks bots for at most about one message a second in a chat,
//! twenty a minute in a group, and thirty a second overall. [`Pacing`]
//! hands each send a time slot: no sooner than [`Limits::chat_gap`] after the
//! chat's previous one, no more than [`Limits::group_per_minute`] in any
//! minute of a group (negative chat ids), and at least a thirtieth of a
//! second from any other send of the bot. A caller waits for its slot, so
//! concurrent senders queue instead of racing. A 429 still happens now and
//! then (the limits are Telegram's guesses too); the caller waits as told.
//!
//! Slots are reserved under a short lock and waited for outside it, on
//! tokio's clock, so the rules are tested under paused time.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// How fast the bot may send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Least time between two messages in one chat.
    pub chat_gap: Duration,
    /// Most messages in one group chat within any minute.
    pub group_per_minute: usize,
    /// Most messages overall within a second, spread evenly.
    pub overall_per_second: u32,
}

impl Limits {
    /// Telegram's limits, but `per_minute` messages to one group a minute
    /// (with no more than one a second to a chat, unless that is more);
    /// for a Bot API server of one's own.
    pub fn with_group_per_minute(per_minute: u32) -> Self {
        let per_minute = per_minute.max(1);
        Self {
            chat_gap: (MINUTE / per_minute).min(Self::default().chat_gap),
            group_per_minute: per_minute as usize,
            ..Self::default()
        }
    }

    /// No pacing at all: for measuring the gateway itself, not Telegram.
    pub fn unpaced() -> Self {
        Self {
            chat_gap: Duration::ZERO,
            group_per_minute: usize::MAX,
            overall_per_second: u32::MAX,
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            chat_gap: Duration::from_secs(1),
            group_per_minute: 20,
            overall_per_second: 30,
        }
    }
}

/// How long a group's window of sends lasts.
const MINUTE: Duration = Duration::from_secs(60);
/// Chats remembered before the ones idle for a minute are forgotten.
const CHATS_KEPT: usize = 256;

/// The bot's send slots. Shared by every delivery of the gateway.
#[derive(Debug, Default)]
pub struct Pacing {
    limits: Limits,
    slots: Mutex<Slots>,
}

#[derive(Debug, Default)]
struct Slots {
    /// Each chat's reserved slots of the last minute, in order.
    chats: HashMap<i64, VecDeque<Instant>>,
    /// Every reserved slot of the last moments, in order.
    overall: Vec<Instant>,
}

impl Pacing {
    /// Pacing by `limits`.
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            slots: Mutex::default(),
        }
    }

    /// Waits until a message may go to `chat`, and takes that slot.
    pub async fn wait_turn(&self, chat: i64) {
        let now = Instant::now();
        let slot = self.reserve(chat, now);
        // A slot that is now goes at once: a timer would round it up to the
        // next millisecond tick, on every reply.
        if slot > now {
            tokio::time::sleep_until(slot).await;
        }
    }

    /// Reserves the earliest slot at or after `now` that every rule allows.
    fn reserve(&self, chat: i64, now: Instant) -> Instant {
        let limits = self.limits;
        // Rounded up, so thirty gaps are never shorter than a second.
        let spacing = Duration::from_nanos(1_000_000_000u64.div_ceil(limits.overall_per_second.max(1).into()));
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        if slots.chats.len() > CHATS_KEPT {
            slots
                .chats
                .retain(|_, sent| sent.back().is_some_and(|last| *last + MINUTE > now));
        }
        let mut at = now;
        if let Some(sent) = slots.chats.get(&chat) {
            if let Some(last) = sent.back() {
                at = at.max(*last + limits.chat_gap);
            }
            let per_minute = limits.group_per_minute.max(1);
            if chat < 0 && sent.len() >= per_minute {
                at = at.max(sent[sent.len() - per_minute] + MINUTE);
            }
        }
        slots.overall.retain(|slot| *slot + spacing > now);
        for &taken in &slots.overall {
            if taken + spacing <= at {
                continue;
            }
            if at + spacing <= taken {
                break;
            }
            at = taken + spacing;
        }
        let position = slots.overall.partition_point(|slot| *slot <= at);
        slots.overall.insert(position, at);
        let sent = slots.chats.entry(chat).or_default();
        sent.push_back(at);
        while sent.front().is_some_and(|first| *first + MINUTE <= at) {
            sent.pop_front();
        }
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_group_limit_setting_keeps_telegrams_by_default_and_loosens_the_chat_gap_only_above_it() {
        assert_eq!(Limits::with_group_per_minute(20), Limits::default());
        let own_server = Limits::with_group_per_minute(600);
        assert_eq!(own_server.group_per_minute, 600);
        assert_eq!(own_server.chat_gap, Duration::from_millis(100));
        assert_eq!(Limits::with_group_per_minute(0).group_per_minute, 1);
    }

    fn since(start: Instant, slot: Instant) -> Duration {
        slot - start
    }

    #[tokio::test(start_paused = true)]
    async fn one_chat_gets_a_message_a_second() {
        let pacing = Pacing::default();
        let start = Instant::now();
        pacing.wait_turn(7).await;
        assert_eq!(since(start, Instant::now()), Duration::ZERO, "the first goes at once");
        pacing.wait_turn(7).await;
        assert_eq!(since(start, Instant::now()), Duration::from_secs(1));
        tokio::time::sleep(Duration::from_secs(5)).await;
        let later = Instant::now();
        pacing.wait_turn(7).await;
        assert_eq!(Instant::now(), later, "after a pause it goes at once again");
    }

    #[tokio::test(start_paused = true)]
    async fn chats_do_not_wait_for_each_other_beyond_the_overall_spacing() {
        let pacing = Pacing::default();
        let start = Instant::now();
        let a = pacing.reserve(1, start);
        let a2 = pacing.reserve(1, start);
        let b = pacing.reserve(2, start);
        assert_eq!(since(start, a), Duration::ZERO);
        assert_eq!(since(start, a2), Duration::from_secs(1));
        // Chat 2 fits between chat 1's two slots.
        assert_eq!(since(start, b), Duration::from_nanos(33_333_334));
    }

    #[tokio::test(start_paused = true)]
    async fn a_group_gets_twenty_messages_a_minute() {
        let pacing = Pacing::default();
        let start = Instant::now();
        let slots: Vec<Duration> = (0..22).map(|_| since(start, pacing.reserve(-100, start))).collect();
        assert_eq!(slots[19], Duration::from_secs(19), "a second apart up to the twentieth");
        assert_eq!(
            slots[20],
            Duration::from_secs(60),
            "the 21st waits for the first to leave the minute"
        );
        assert_eq!(slots[21], Duration::from_secs(61));
        // A private chat (positive id) has no per-minute cap.
        let private: Vec<Duration> = (0..22).map(|_| since(start, pacing.reserve(100, start))).collect();
        assert!(private[21] < Duration::from_secs(22), "{private:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn the_bot_sends_at_most_thirty_a_second_overall() {
        let pacing = Pacing::default();
        let start = Instant::now();
        let slots: Vec<Instant> = (0..61).map(|chat| pacing.reserve(chat, start)).collect();
        for window in slots.windows(31) {
            assert!(
                window[30] - window[0] >= Duration::from_secs(1),
                "31 sends within a second"
            );
        }
        assert!(since(start, slots[60]) <= Duration::from_millis(2_001));
    }

    #[tokio::test(start_paused = true)]
    async fn concurrent_senders_to_one_chat_queue() {
        let pacing = std::sync::Arc::new(Pacing::default());
        let start = Instant::now();
        let tasks: Vec<_> = (0..3)
            .map(|_| {
                let pacing = pacing.clone();
                tokio::spawn(async move {
                    pacing.wait_turn(9).await;
                    Instant::now()
                })
            })
            .collect();
        let mut done = Vec::new();
        for task in tasks {
            done.push(since(start, task.await.unwrap()));
        }
        done.sort();
        assert_eq!(done, [Duration::ZERO, Duration::from_secs(1), Duration::from_secs(2)]);
    }

    #[tokio::test(start_paused = true)]
    async fn unpaced_sends_go_at_once() {
        let pacing = Pacing::new(Limits::unpaced());
        let start = Instant::now();
        let last = (0..100).map(|_| pacing.reserve(-5, start)).last().unwrap();
        assert!(
            since(start, last) < Duration::from_micros(1),
            "{:?}",
            since(start, last)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn idle_chats_are_forgotten() {
        let pacing = Pacing::default();
        let start = Instant::now();
        for chat in 0..=CHATS_KEPT as i64 {
            pacing.reserve(chat, start);
        }
        pacing.reserve(-1, start + Duration::from_secs(120));
        let kept = pacing.slots.lock().unwrap().chats.len();
        assert_eq!(kept, 1, "only the chat just used is left");
    }
}
