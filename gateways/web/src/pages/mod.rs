//! The dashboard's pages, rendered on the server: each reads as it is with
//! scripting off. `layout` is the shell every page shares (head, navigation,
//! the sign-out form); `parts` and `chart` are pieces pages share (tables,
//! dates, SVG charts); each other file is one page.

pub mod approvals;
pub mod channels;
pub mod chart;
pub mod chat;
pub mod configuration;
pub mod conversations;
pub mod errors;
pub mod keys;
pub mod layout;
pub mod logs;
pub mod loops;
pub mod noted;
pub mod overview;
pub mod parts;
pub mod shown;
pub mod usage;
