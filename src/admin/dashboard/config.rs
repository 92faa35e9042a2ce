//! The configuration on the dashboard: the file a reload reads, with every
//! secret masked (see [`crate::config::masked`]), and what `check-config`
//! says of it now. A file that is not TOML is not shown at all, and every
//! problem is scrubbed of what was masked, since a message may quote it.

use passepartout_admin::Unreadable;
use serde_json::{Value, json};

use crate::admin::Reload;
use crate::config::masked;

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
    let text = match std::fs::read_to_string(&file) {
        Ok(text) => text,
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
    match masked::masked(&text) {
        Ok(masked) => Ok(json!({
            "file": shown,
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
