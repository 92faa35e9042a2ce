//! What the daemon and every handler know the web gateway by: its id, and
//! the surface its replies are written for. At the bottom of the crate:
//! it imports nothing of it.

use passepartout_gateway::Surface;

/// The gateway id.
pub const GATEWAY_ID: &str = "web";

/// A page in a browser: plain text, no buttons to answer with yet. An API
/// key answers approvals only when made to, so one that may not is told
/// who may.
pub const SURFACE: Surface = Surface {
    who_approves: Some(
        "Approvals here are answered on the dashboard's Approvals page, or by an API key made with \
         `passepartout web keys create NAME --approver` (in its own conversations).",
    ),
    ..Surface::TEXT
};
