//! Photos and files across a bridge. A person's attachment is fetched once
//! through the gateway it came in by, then kept as one copy per other chat
//! under the daemon's `outgoing/` folder, sent from there and removed once
//! delivered (or by the next start, when nothing waits on it any more).
//! What a chat's platform cannot take, what is larger than the daemon
//! fetches (`[media]`'s limits) or what cannot be fetched becomes a line
//! saying so: "**Ada** (Signal) sent report.pdf (23.1 MB), too large for
//! Telegram".

use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::PathBuf;

use passepartout_gateway::markup::escape;
use passepartout_gateway::{Attachment, ConversationKey, OutboundBody, OutboundFile, ReplyKind};

use super::relay::Who;
use crate::model::media::Fetchers;
use crate::model::media::store::extension;
use crate::safety::tools::send_file::size_text;
use crate::safety::tools::uploads::Uploads;

/// How a bridge carries files: who fetches them, what each platform takes,
/// and where the copies wait.
pub struct Carrier {
    pub fetchers: Fetchers,
    pub uploads: Uploads,
    /// `<data_dir>/outgoing`.
    pub outgoing: PathBuf,
}

impl Carrier {
    /// `attachment`, posted in `from` by `who`, for each of `to`: the file,
    /// or the line that says why it is not. `caption` goes under it, after
    /// who sent it (a caption is plain text).
    pub async fn carry(
        &self,
        from: &ConversationKey,
        attachment: &Attachment,
        who: &Who,
        caption: Option<&str>,
        to: &[ConversationKey],
    ) -> Vec<OutboundBody> {
        let name = file_name(attachment);
        let limits: Vec<u64> = to.iter().map(|chat| self.uploads.of(&chat.gateway).max_bytes).collect();
        let largest = limits.iter().copied().max().unwrap_or(0);
        let said = match caption {
            Some(caption) => format!("{}: {caption}", who.plain()),
            None => who.plain(),
        };
        let note = |why: String| OutboundBody::Text {
            text: format!("{} sent {}{why}", who.markdown(), escape(&name)),
            kind: ReplyKind::Notice,
        };
        let Some(fetch) = self.fetchers.get(&from.gateway) else {
            return to.iter().map(|_| note(", which I cannot fetch".to_owned())).collect();
        };
        let fetched = match fetch.fetch(&attachment.file, largest).await {
            Ok(fetched) => fetched,
            Err(passepartout_gateway::GatewayError::TooLarge { size, .. }) => {
                let size = size
                    .or(attachment.size)
                    .map(size_text)
                    .unwrap_or_else(|| "large".into());
                return to
                    .iter()
                    .map(|_| note(format!(" ({size}), too large to pass on")))
                    .collect();
            }
            Err(error) => {
                tracing::warn!(from = %from, %error, "cannot fetch a file to relay");
                return to
                    .iter()
                    .map(|_| note(", which could not be fetched".to_owned()))
                    .collect();
            }
        };
        let media_type = attachment
            .mime
            .clone()
            .or(fetched.mime)
            .unwrap_or_else(|| "application/octet-stream".to_owned());
        let size = fetched.bytes.len() as u64;
        to.iter()
            .zip(limits)
            .map(|(chat, limit)| {
                if size > limit {
                    let platform = self.uploads.of(&chat.gateway).platform;
                    return note(format!(" ({}), too large for {platform}", size_text(size)));
                }
                match self.keep(&name, &fetched.bytes) {
                    Ok(path) => OutboundBody::File(OutboundFile {
                        path,
                        name: name.clone(),
                        media_type: media_type.clone(),
                        size,
                        caption: Some(said.clone()),
                        temporary: true,
                    }),
                    Err(error) => {
                        tracing::error!(%error, "cannot keep a file to relay");
                        note(", which I could not keep to pass on".to_owned())
                    }
                }
            })
            .collect()
    }

    /// Writes `bytes` as `name` in a folder of its own under `outgoing`.
    fn keep(&self, name: &str, bytes: &[u8]) -> std::io::Result<String> {
        let folder = self.outgoing.join(format!("{:016x}", rand::random::<u64>()));
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&folder)?;
        let path = folder.join(name);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        Ok(path.to_string_lossy().into_owned())
    }
}

/// The name the copy goes by: the sender's own, without any path in it, or
/// one made of what it is.
fn file_name(attachment: &Attachment) -> String {
    let given = attachment
        .name
        .as_deref()
        .and_then(|name| name.rsplit(['/', '\\']).next())
        .map(|name| name.chars().filter(|c| !c.is_control()).take(100).collect::<String>())
        .filter(|name| !name.trim().is_empty() && name != "." && name != "..");
    given.unwrap_or_else(|| {
        let ext = extension(attachment.mime.as_deref().unwrap_or_default());
        format!("{}.{ext}", attachment.kind.noun().replace(' ', "-"))
    })
}

#[cfg(test)]
mod tests {
    use passepartout_gateway::{FileRef, MediaKind};

    use super::*;

    fn attachment(name: Option<&str>, mime: Option<&str>) -> Attachment {
        Attachment {
            kind: MediaKind::Photo,
            file: FileRef("x".into()),
            mime: mime.map(str::to_owned),
            size: None,
            name: name.map(str::to_owned),
            duration_s: None,
        }
    }

    #[test]
    fn a_copy_is_named_without_a_path_or_after_what_it_is() {
        assert_eq!(file_name(&attachment(Some("../../etc/passwd"), None)), "passwd");
        assert_eq!(file_name(&attachment(Some("report.pdf"), None)), "report.pdf");
        assert_eq!(file_name(&attachment(Some(".."), Some("image/png"))), "photo.png");
        assert_eq!(file_name(&attachment(None, Some("image/jpeg"))), "photo.jpg");
    }
}
