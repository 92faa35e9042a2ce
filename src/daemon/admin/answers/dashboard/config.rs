//! The configuration on the dashboard: the file a reload reads, with every
//! secret masked (see [`crate::config::masked`]), and what `check-config`
//! says of it now. A file that is not TOML is not shown at all, and every
//! problem is scrubbed of what was masked, since a message may quote it.
//! The file as edited on the page comes back as an [`Edit`]: laid over the
//! file (see [`crate::config::edited`]), then written as every change is
//! (`admin/config_write.rs`).

use passepartout_admin::Unreadable;
use serde_json::{Value, json};

use crate::config::{edited, masked};
use crate::daemon::admin::Reload;
use crate::daemon::admin::config_write::{Change, ChangeError, digest};

/// The file as edited on the page: masked values left as shown keep the
/// file's.
pub(in crate::daemon::admin) struct Edit(pub String);

impl Change for Edit {
    fn text(&mut self, current: &str) -> Result<String, ChangeError> {
        // A browser sends a textarea's lines ended with CRLF.
        let text = self.0.replace("\r\n", "\n");
        Ok(edited::edited(current, &text)?)
    }
}

/// The masked file and its check.
pub(super) fn shown(reload: &dyn Reload) -> Result<Value, Unreadable> {
    let inspection = reload.inspect();
    let Some(file) = inspection.file else {
        return Ok(json!({
            "file": null,
            "text": null,
            "problems": inspection.problems,
            "warnings": inspection.warnings,
        }));
    };
    let shown = file.display().to_string();
    let text = match std::fs::read(&file).map(|bytes| (digest(&bytes), String::from_utf8(bytes))) {
        Ok((based_on, Ok(text))) => (based_on, text),
        Ok((_, Err(_))) => {
            return Ok(json!({
                "file": shown,
                "text": null,
                "unreadable": "it is not UTF-8 text",
                "problems": [],
                "warnings": [],
            }));
        }
        Err(error) => {
            return Ok(json!({
                "file": shown,
                "text": null,
                "unreadable": error.to_string(),
                "problems": [],
                "warnings": [],
            }));
        }
    };
    let (based_on, text) = text;
    match masked::masked(&text) {
        Ok(masked) => Ok(json!({
            "file": shown,
            "based_on": based_on,
            "text": masked.text,
            "problems": inspection.problems.iter().map(|p| masked.scrub(p)).collect::<Vec<_>>(),
            "warnings": inspection.warnings.iter().map(|w| masked.scrub(w)).collect::<Vec<_>>(),
        })),
        // The parser's messages quote the file: none of them is shown.
        Err(not_toml) => Ok(json!({
            "file": shown,
            "text": null,
            "unreadable": format!("{not_toml}; `passepartout check-config` says where"),
            "problems": [],
            "warnings": [],
        })),
    }
}
