//! Media people send: voice notes are fetched and transcribed, photos kept
//! in the media store and shown to a model that can see them, files saved
//! into the workspace's inbox. A message's media is fetched only when its
//! turn runs (the gateway journaled a reference, see the contract's
//! `media.rs`), through the [`Fetchers`] of the gateways.
//!
//! [`Media::read`] turns a message's attachments and caption into what the
//! model reads — the person's message, with transcripts, image parts and
//! notes on saved files — and the sentences the person is told: a
//! transcriber not set up, a voice note too long, a file too large, a
//! model that cannot see images, a fetch or a transcription that failed.
//! Nothing here is kept across turns but the files themselves.

/// The fake transcription server, for the unit tests of media and doctor.
#[cfg(test)]
#[path = "../../../tests/support/fake_transcriber.rs"]
pub(crate) mod fake_transcriber;
mod fetchers;
pub mod inbox;
mod read;
pub mod store;
pub mod transcribe;

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use crate::config::{Config, Secret};
pub use fetchers::Fetchers;
pub use inbox::Inbox;
pub use read::Reading;
pub use store::MediaStore;
pub use transcribe::{TranscribeError, Transcriber, Transcript};

/// How large or long media may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub max_seconds: u32,
    pub max_audio_bytes: u64,
    pub max_photo_bytes: u64,
    pub max_document_bytes: u64,
}

/// What reads media: the gateways' fetchers, the transcriber, where photos
/// and files go, and the limits.
#[derive(Debug)]
pub struct Media {
    fetchers: Fetchers,
    transcriber: Option<Transcriber>,
    store: MediaStore,
    inbox: Inbox,
    limits: Limits,
}

impl Media {
    /// Media as `config` sets it up, with no gateway able to fetch and no
    /// transcriber (until [`Media::new`] makes them).
    pub fn unplugged(config: &Config) -> Self {
        Self {
            fetchers: Fetchers::default(),
            transcriber: None,
            store: MediaStore::new(config.media_dir()),
            inbox: Inbox::new(config.workspace()),
            limits: Limits {
                max_seconds: config.transcription.max_seconds,
                max_audio_bytes: config.transcription.max_bytes,
                max_photo_bytes: config.media.max_photo_bytes,
                max_document_bytes: config.media.max_document_bytes,
            },
        }
    }

    /// Media as `config` sets it up, fetched through `fetchers`, with the
    /// transcriber of `[transcription]` when it names one ([`transcriber`]).
    /// A transcriber that cannot be set up (a key no HTTP header can carry)
    /// leaves voice notes unread, as `doctor` says, rather than the daemon
    /// unstarted.
    pub fn new(config: &Config, fetchers: Fetchers) -> Self {
        let transcriber = transcriber(config).unwrap_or_else(|error| {
            tracing::error!(%error, "transcription is off; run `passepartout doctor`");
            None
        });
        Self {
            fetchers,
            transcriber,
            ..Self::unplugged(config)
        }
    }

    /// Where photos are kept.
    pub fn store(&self) -> &MediaStore {
        &self.store
    }
}

/// The transcriber `[transcription]` sets up, if any, with its key. A key
/// that cannot be read is a degraded start, as for the model providers.
pub fn transcriber(config: &Config) -> Result<Option<Transcriber>, TranscribeError> {
    let section = &config.transcription;
    let key = match Secret::named(section.api_key_env.as_deref(), section.api_key_file.as_deref()) {
        Some(Ok(key)) => Some(key),
        Some(Err(error)) => {
            tracing::warn!(%error, "no API key for transcription");
            None
        }
        None => None,
    };
    Transcriber::new(section, key)
}

/// Deletes the photos in `store` older than `keep`, by `now`; logs what it
/// did. Runs with the daemon's hourly maintenance.
pub async fn prune(store: MediaStore, keep: Duration, now: SystemTime) {
    let cutoff = now.checked_sub(keep).unwrap_or(SystemTime::UNIX_EPOCH);
    match tokio::task::spawn_blocking(move || store.prune(cutoff)).await {
        Ok(Ok(0)) => {}
        Ok(Ok(pruned)) => tracing::info!(pruned, "old media deleted"),
        Ok(Err(error)) => tracing::error!(%error, "media sweep failed"),
        Err(error) => tracing::error!(%error, "media sweep task failed"),
    }
}

/// What the hourly maintenance prunes of the media store.
#[derive(Clone, Debug)]
pub struct MediaPruning {
    pub dir: PathBuf,
    /// How long a photo is kept; `None` keeps them all.
    pub keep: Option<Duration>,
}

impl MediaPruning {
    pub fn of(config: &Config) -> Self {
        Self {
            dir: config.media_dir(),
            keep: (config.media.keep_days > 0).then(|| Duration::from_secs(config.media.keep_days * 24 * 3600)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transcription_key_no_header_can_carry_leaves_voice_unread_not_the_daemon_down() {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("key");
        std::fs::write(&key, "sk-\u{1}broken").unwrap();
        let mut config = Config {
            data_dir: dir.path().to_path_buf(),
            ..Config::default()
        };
        config.transcription.base_url = Some("http://127.0.0.1:9/v1".into());
        config.transcription.api_key_file = Some(key);
        assert!(transcriber(&config).is_err(), "the key is refused");
        let media = Media::new(&config, Fetchers::default());
        assert!(media.transcriber.is_none());
    }

    #[tokio::test]
    async fn photos_older_than_keep_days_are_pruned_and_zero_keeps_them() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config {
            data_dir: dir.path().to_path_buf(),
            ..Config::default()
        };
        let pruning = MediaPruning::of(&config);
        assert_eq!(pruning.keep, Some(Duration::from_secs(30 * 24 * 3600)));
        let store = MediaStore::new(pruning.dir.clone());
        let name = store.save(b"photo", "image/jpeg").unwrap();
        let in_31_days = SystemTime::now() + Duration::from_secs(31 * 24 * 3600);
        prune(store.clone(), pruning.keep.unwrap(), SystemTime::now()).await;
        assert!(store.read(&name).is_ok(), "a new photo stays");
        prune(store.clone(), pruning.keep.unwrap(), in_31_days).await;
        assert!(store.read(&name).is_err(), "a photo past keep_days goes");
        config.media.keep_days = 0;
        assert_eq!(MediaPruning::of(&config).keep, None);
    }
}
