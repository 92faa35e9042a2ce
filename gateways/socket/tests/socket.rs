//! The socket gateway's integration tests, one binary (one link, not one
//! per file): the gateway served to scripted cores and driven by real
//! clients over a Unix socket in a temporary directory.

mod common;
mod delivery;
mod lifecycle;
mod messages;
mod protocol_errors;
