//! `[media]`: photos and files people send — how large a photo or a file
//! is taken, and how long the photos stay in `<data_dir>/media/`.

use serde::{Deserialize, Serialize};

use super::Problems;

pub const DEFAULT_KEEP_DAYS: u64 = 30;
/// Anthropic reads images of up to 5 MiB *in base64*, which is 4/3 of the
/// bytes: 3.75 MiB of photo. Telegram's largest photo size is below that.
pub const DEFAULT_MAX_PHOTO_BYTES: u64 = 5 * 1024 * 1024 / 4 * 3;
pub const DEFAULT_MAX_DOCUMENT_BYTES: u64 = 20 * 1024 * 1024;

/// `[media]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MediaConfig {
    /// Photos kept in `<data_dir>/media/` are deleted after this many days;
    /// 0 keeps them for good.
    pub keep_days: u64,
    /// Largest photo fetched and shown to the model, in bytes.
    pub max_photo_bytes: u64,
    /// Largest file saved into the workspace's `inbox/`, in bytes.
    pub max_document_bytes: u64,
}

impl Default for MediaConfig {
    fn default() -> Self {
        Self {
            keep_days: DEFAULT_KEEP_DAYS,
            max_photo_bytes: DEFAULT_MAX_PHOTO_BYTES,
            max_document_bytes: DEFAULT_MAX_DOCUMENT_BYTES,
        }
    }
}

impl MediaConfig {
    /// Notes what is wrong with `[media]`.
    pub fn check(&self, problems: &mut Problems) {
        problems.check(self.max_photo_bytes > 0, "media.max_photo_bytes must be at least 1");
        problems.check(
            self.max_document_bytes > 0,
            "media.max_document_bytes must be at least 1",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_photo_fits_anthropics_limit_once_in_base64() {
        let base64_len = DEFAULT_MAX_PHOTO_BYTES.div_ceil(3) * 4;
        assert!(base64_len <= 5 * 1024 * 1024, "{base64_len}");
    }
}
