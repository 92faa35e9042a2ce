//! Files the owner attaches on the chat page, held until the core fetches
//! them. A message with a file enters the intake as media naming the file
//! by a reference ([`FileRef`]), as every gateway's media does; the core
//! fetches the bytes when it reads the message (through the gateway's
//! [`Fetch`](passepartout_gateway::Fetch)) and saves them in the
//! workspace's `inbox/`.
//!
//! They are kept in memory, at most [`KEPT`] of them (the oldest goes
//! first), since each is fetched moments after it came; a daemon that
//! restarts before the core read the message loses the file, and the core
//! then says it could not be fetched.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

use passepartout_gateway::{Fetched, FileRef, GatewayError};

/// Files held at once, at most.
pub const KEPT: usize = 8;

/// One file attached on the page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Upload {
    pub bytes: Vec<u8>,
    pub mime: Option<String>,
}

/// The files not fetched yet, oldest first.
#[derive(Default)]
pub struct Uploads {
    held: Mutex<VecDeque<(FileRef, Upload)>>,
}

impl Uploads {
    /// Holds `upload` under `file`, letting the oldest go past [`KEPT`].
    pub fn hold(&self, file: FileRef, upload: Upload) {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        while held.len() >= KEPT {
            held.pop_front();
        }
        held.push_back((file, upload));
    }

    /// The bytes of `file`, if held and no larger than `max_bytes`. The file
    /// stays held: a fetch that failed further on is tried again.
    pub fn fetch(&self, file: &FileRef, max_bytes: u64) -> Result<Fetched, GatewayError> {
        let held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let Some((_, upload)) = held.iter().find(|(held, _)| held == file) else {
            return Err(GatewayError::Rejected {
                reason: "the file is no longer held: it was attached before the daemon restarted".into(),
            });
        };
        let size = upload.bytes.len() as u64;
        if size > max_bytes {
            return Err(GatewayError::TooLarge {
                size: Some(size),
                limit: max_bytes,
            });
        }
        Ok(Fetched {
            bytes: upload.bytes.clone(),
            mime: upload.mime.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upload(bytes: &[u8]) -> Upload {
        Upload {
            bytes: bytes.to_vec(),
            mime: Some("text/plain".into()),
        }
    }

    #[test]
    fn a_held_file_is_fetched_and_a_too_large_one_refused() {
        let uploads = Uploads::default();
        uploads.hold(FileRef("a".into()), upload(b"hello"));
        assert_eq!(uploads.fetch(&FileRef("a".into()), 100).unwrap().bytes, b"hello");
        assert!(matches!(
            uploads.fetch(&FileRef("a".into()), 4),
            Err(GatewayError::TooLarge {
                size: Some(5),
                limit: 4
            })
        ));
        assert!(matches!(
            uploads.fetch(&FileRef("b".into()), 100),
            Err(GatewayError::Rejected { .. })
        ));
    }

    #[test]
    fn the_oldest_goes_past_the_cap() {
        let uploads = Uploads::default();
        for n in 0..=KEPT {
            uploads.hold(FileRef(n.to_string()), upload(b"x"));
        }
        assert!(uploads.fetch(&FileRef("0".into()), 10).is_err());
        assert!(uploads.fetch(&FileRef(KEPT.to_string()), 10).is_ok());
    }
}
