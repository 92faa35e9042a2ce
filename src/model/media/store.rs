//! The media store: photos people sent, kept in `<data_dir>/media/` under
//! their content hash (SHA-256, hex) with an extension from their MIME type.
//! The history refers to a photo by that file name, never holds its bytes;
//! the same photo sent twice is one file. Files older than `media.keep_days`
//! are pruned by the daemon's hourly maintenance ([`MediaStore::prune`]).

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use sha2::{Digest, Sha256};

/// Where photos are kept.
#[derive(Clone, Debug)]
pub struct MediaStore {
    dir: PathBuf,
}

impl MediaStore {
    pub fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Keeps `bytes` (of type `mime`) and returns the file's name in the
    /// store. A file already there is only marked as used now, so pruning
    /// counts its age from its latest arrival. Written to a temporary file
    /// and renamed, so a crash never leaves a partial photo under its hash.
    /// Blocking: call from blocking code.
    pub fn save(&self, bytes: &[u8], mime: &str) -> io::Result<String> {
        let name = format!("{}.{}", hex(&Sha256::digest(bytes)), extension(mime));
        let path = self.dir.join(&name);
        if let Ok(file) = fs::File::options().append(true).open(&path) {
            file.set_modified(SystemTime::now())?;
            return Ok(name);
        }
        fs::DirBuilder::new().recursive(true).mode(0o700).create(&self.dir)?;
        // Unique per save: the same photo saved twice at once (sent to two
        // chats) must not share a partial file.
        let partial = self.dir.join(format!(".{name}.{:016x}.partial", rand::random::<u64>()));
        let mut file = fs::File::options()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&partial)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&partial, &path)?;
        Ok(name)
    }

    /// Reads the photo kept as `name` (a name [`MediaStore::save`] gave).
    pub fn read(&self, name: &str) -> io::Result<Vec<u8>> {
        if name.contains('/') || name.starts_with('.') {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a media file name"));
        }
        fs::read(self.dir.join(name))
    }

    /// Deletes every file last written before `cutoff`; returns how many.
    /// A store never written to has nothing to prune. Blocking.
    pub fn prune(&self, cutoff: SystemTime) -> io::Result<usize> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(error) => return Err(error),
        };
        let mut pruned = 0;
        for entry in entries {
            let entry = entry?;
            let metadata = entry.metadata()?;
            if metadata.is_file() && metadata.modified()? < cutoff {
                fs::remove_file(entry.path())?;
                pruned += 1;
            }
        }
        Ok(pruned)
    }
}

/// The file extension for `mime`; `bin` for a type not listed.
pub fn extension(mime: &str) -> &'static str {
    match mime.split(';').next().unwrap_or_default().trim() {
        "image/jpeg" | "image/jpg" => "jpg",
        "image/png" => "png",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/heic" => "heic",
        "audio/ogg" | "audio/opus" => "ogg",
        "audio/mpeg" | "audio/mp3" => "mp3",
        "audio/mp4" | "audio/m4a" | "audio/x-m4a" => "m4a",
        "audio/aac" => "aac",
        "audio/wav" | "audio/x-wav" | "audio/wave" => "wav",
        "audio/webm" => "webm",
        "audio/flac" | "audio/x-flac" => "flac",
        "application/pdf" => "pdf",
        "text/plain" => "txt",
        "text/markdown" => "md",
        "text/csv" => "csv",
        "application/json" => "json",
        _ => "bin",
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_same_photo_saved_at_once_from_many_threads_is_kept_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = MediaStore::new(dir.path().join("media"));
        let photo = vec![7u8; 256 * 1024];
        let names: Vec<String> = std::thread::scope(|scope| {
            let saves: Vec<_> = (0..8)
                .map(|_| scope.spawn(|| store.save(&photo, "image/jpeg")))
                .collect();
            saves.into_iter().map(|save| save.join().unwrap().unwrap()).collect()
        });
        assert!(names.windows(2).all(|pair| pair[0] == pair[1]));
        assert_eq!(fs::read_dir(store.dir()).unwrap().count(), 1, "no partial file left");
        assert_eq!(store.read(&names[0]).unwrap(), photo);
    }

    #[test]
    fn a_photo_is_kept_once_under_its_content_hash() {
        let dir = tempfile::tempdir().unwrap();
        let store = MediaStore::new(dir.path().join("media"));
        let name = store.save(b"abc", "image/png").unwrap();
        assert_eq!(
            name,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad.png"
        );
        assert_eq!(store.save(b"abc", "image/png").unwrap(), name);
        assert_eq!(fs::read_dir(store.dir()).unwrap().count(), 1, "no partial file left");
        assert_eq!(store.read(&name).unwrap(), b"abc");
        assert!(store.read("../secret").is_err());
    }

    #[test]
    fn pruning_deletes_only_what_is_older_than_the_cutoff() {
        let dir = tempfile::tempdir().unwrap();
        let store = MediaStore::new(dir.path().join("media"));
        assert_eq!(
            store.prune(SystemTime::now()).unwrap(),
            0,
            "no store yet: nothing to prune"
        );
        let old = store.save(b"old", "image/jpeg").unwrap();
        let new = store.save(b"new", "image/jpeg").unwrap();
        let month_ago = SystemTime::now() - Duration::from_secs(31 * 24 * 3600);
        fs::File::options()
            .append(true)
            .open(store.dir().join(&old))
            .unwrap()
            .set_modified(month_ago)
            .unwrap();
        let cutoff = SystemTime::now() - Duration::from_secs(30 * 24 * 3600);
        assert_eq!(store.prune(cutoff).unwrap(), 1);
        assert!(store.read(&old).is_err());
        assert!(store.read(&new).is_ok());
    }

    #[test]
    fn a_photo_sent_again_counts_its_age_from_then() {
        let dir = tempfile::tempdir().unwrap();
        let store = MediaStore::new(dir.path().join("media"));
        let name = store.save(b"again", "image/jpeg").unwrap();
        let path = store.dir().join(&name);
        let month_ago = SystemTime::now() - Duration::from_secs(31 * 24 * 3600);
        fs::File::options()
            .append(true)
            .open(&path)
            .unwrap()
            .set_modified(month_ago)
            .unwrap();
        store.save(b"again", "image/jpeg").unwrap();
        let cutoff = SystemTime::now() - Duration::from_secs(30 * 24 * 3600);
        assert_eq!(store.prune(cutoff).unwrap(), 0);
    }

    #[test]
    fn extensions_follow_the_mime_type() {
        assert_eq!(extension("image/jpeg"), "jpg");
        assert_eq!(extension("audio/ogg; codecs=opus"), "ogg");
        assert_eq!(extension("application/x-unknown"), "bin");
    }
}
