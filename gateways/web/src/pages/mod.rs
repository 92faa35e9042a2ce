//! The dashboard's pages, rendered on the server: each reads as it is with
//! scripting off. `layout` is the shell every page shares (head, navigation,
//! the sign-out form); each other file is one page.

pub mod approvals;
pub mod errors;
pub mod layout;
pub mod loops;
pub mod overview;
pub mod shown;
