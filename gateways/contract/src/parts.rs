//! Messages that go out in parts, each part exactly once as far as a crash
//! allows.
//!
//! A gateway splits a long text into several platform messages. If part 2
//! fails, sending the whole message again would show part 1 twice; so the
//! core tells the gateway where to resume (a [`Resume`], given to
//! [`Deliver::deliver_from`]) and the gateway tells the core each part as it
//! goes out ([`Progress`]), which the core records durably before the next
//! part is attempted. Splitting is deterministic, so part `n` of a retry is part `n`
//! of the first attempt.
//!
//! [`send_parts`] is the loop every splitting gateway runs: it skips the
//! parts already sent, sends the rest in order, and reports each but the
//! last (the last one's success is the delivery's own result).
//!
//! [`Deliver::deliver_from`]: crate::Deliver::deliver_from

use std::future::Future;

use async_trait::async_trait;

use crate::error::GatewayError;
use crate::ids::MessageId;

/// Told of each part of a message as it goes out.
#[async_trait]
pub trait Progress: Send + Sync {
    /// Part `index` (counting from 0 over the whole message) was sent, as
    /// the platform message `id` when the platform gave one. Returns once
    /// the progress is recorded, so the next part is sent only after it;
    /// an error (the record could not be kept) stops the delivery with it.
    async fn part_sent(&self, index: u32, id: Option<&MessageId>) -> Result<(), GatewayError>;
}

/// Progress nobody records: a delivery outside the outbox (a test, a probe).
#[derive(Clone, Copy, Debug, Default)]
pub struct Untracked;

#[async_trait]
impl Progress for Untracked {
    async fn part_sent(&self, _index: u32, _id: Option<&MessageId>) -> Result<(), GatewayError> {
        Ok(())
    }
}

/// Where a delivery starts, and who hears of each part sent.
#[derive(Clone, Copy)]
pub struct Resume<'a> {
    /// The first part not sent yet (0: the whole message).
    pub first_part: u32,
    /// Told of each part once it is sent.
    pub progress: &'a dyn Progress,
}

impl Resume<'static> {
    /// The whole message, its progress not recorded.
    pub fn whole() -> Self {
        Resume {
            first_part: 0,
            progress: &Untracked,
        }
    }
}

impl std::fmt::Debug for Resume<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resume")
            .field("first_part", &self.first_part)
            .finish_non_exhaustive()
    }
}

/// Sends `parts` from `resume.first_part` on, in order, with `send` (given
/// each part's index in the whole message, so the first part can quote and
/// the last carry buttons), reporting every part but the last to
/// `resume.progress`. Returns the ids of the parts sent by this call; stops
/// at the first failure, the platform's or the progress's, which is
/// returned. A `first_part` past the end cannot come from this split (the
/// last part is never reported): the message splits differently than when
/// its first parts went out (a newer renderer, another limit), and it is
/// sent whole again rather than not at all.
pub async fn send_parts<T, F, Fut>(
    parts: Vec<T>,
    resume: Resume<'_>,
    mut send: F,
) -> Result<Vec<MessageId>, GatewayError>
where
    F: FnMut(usize, T) -> Fut,
    Fut: Future<Output = Result<Option<MessageId>, GatewayError>>,
{
    let last = parts.len().saturating_sub(1);
    let first = match resume.first_part as usize {
        first if first > last => 0,
        first => first,
    };
    let mut ids = Vec::new();
    for (index, part) in parts.into_iter().enumerate().skip(first) {
        let id = send(index, part).await?;
        if index < last {
            resume.progress.part_sent(index as u32, id.as_ref()).await?;
        }
        ids.extend(id);
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Records what it is told.
    #[derive(Default)]
    struct Recorder(Mutex<Vec<(u32, Option<MessageId>)>>);

    #[async_trait]
    impl Progress for Recorder {
        async fn part_sent(&self, index: u32, id: Option<&MessageId>) -> Result<(), GatewayError> {
            self.0.lock().unwrap().push((index, id.cloned()));
            Ok(())
        }
    }

    fn from(first_part: u32, progress: &dyn Progress) -> Resume<'_> {
        Resume { first_part, progress }
    }

    fn id(n: usize) -> MessageId {
        MessageId::new(n.to_string()).unwrap()
    }

    #[tokio::test]
    async fn sends_every_part_and_reports_all_but_the_last() {
        let recorder = Recorder::default();
        let mut sent = Vec::new();
        let ids = send_parts(vec!["a", "b", "c"], from(0, &recorder), |index, part| {
            sent.push((index, part));
            async move { Ok(Some(id(index + 10))) }
        })
        .await
        .unwrap();
        assert_eq!(sent, [(0, "a"), (1, "b"), (2, "c")]);
        assert_eq!(ids, [id(10), id(11), id(12)]);
        assert_eq!(*recorder.0.lock().unwrap(), [(0, Some(id(10))), (1, Some(id(11)))]);
    }

    #[tokio::test]
    async fn resumes_at_the_first_part_not_sent() {
        let recorder = Recorder::default();
        let mut sent = Vec::new();
        let ids = send_parts(vec!["a", "b", "c"], from(1, &recorder), |index, part| {
            sent.push((index, part));
            async move { Ok(Some(id(index))) }
        })
        .await
        .unwrap();
        assert_eq!(
            sent,
            [(1, "b"), (2, "c")],
            "part 0 is not sent again; indexes stay absolute"
        );
        assert_eq!(ids, [id(1), id(2)]);
        assert_eq!(*recorder.0.lock().unwrap(), [(1, Some(id(1)))]);
    }

    #[tokio::test]
    async fn stops_at_a_failure_with_the_parts_before_it_reported() {
        let recorder = Recorder::default();
        let result = send_parts(vec!["a", "b", "c"], from(0, &recorder), |index, _| async move {
            match index {
                1 => Err(GatewayError::Transient { reason: "down".into() }),
                _ => Ok(Some(id(index))),
            }
        })
        .await;
        assert!(matches!(result, Err(GatewayError::Transient { .. })));
        assert_eq!(*recorder.0.lock().unwrap(), [(0, Some(id(0)))]);
    }

    #[tokio::test]
    async fn a_resume_past_the_end_of_a_changed_split_sends_the_message_whole() {
        let sent = std::sync::Mutex::new(Vec::new());
        let ids = send_parts(
            vec!["a", "b"],
            Resume {
                first_part: 5,
                ..Resume::whole()
            },
            |index, part| {
                sent.lock().unwrap().push((index, part));
                async move { Ok(Some(MessageId::new(format!("m{index}")).unwrap())) }
            },
        )
        .await
        .unwrap();
        assert_eq!(*sent.lock().unwrap(), [(0, "a"), (1, "b")]);
        assert_eq!(ids.len(), 2);
    }
}
