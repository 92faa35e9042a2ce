//! Test support for passepartout's gateways, used by their test suites only.
//!
//! A gateway test plays the core: it runs a real gateway's
//! [`Listen`](passepartout_gateway::Listen) in a task ([`Listening`]) and
//! answers what arrives on the intake, either one message at a time
//! ([`CoreSide`], when the test decides when and how to acknowledge) or from a
//! script in a task of its own ([`ScriptedCore`], which records what it saw).
//! [`build`] makes the contract's ids and messages in one line, and
//! [`normalize`] helps the tests of a platform's normalizer, [`json`]
//! draws the JSON for its property tests, and [`markdown`] the Markdown a
//! model may write.
//!
//! Every wait here is on an event, under [`PATIENCE`]: a test that gets no
//! answer fails instead of hanging.

#![deny(missing_docs)]
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod build;
mod core_side;
pub mod json;
mod listening;
pub mod markdown;
pub mod normalize;
mod scripted;

use std::future::Future;
use std::time::Duration;

pub use core_side::CoreSide;
pub use listening::Listening;
pub use scripted::{Recorder, ScriptedCore, Seen};

/// How long any single expected event may take before the test fails.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// Awaits `future`, failing the test if it takes longer than [`PATIENCE`].
pub async fn within<F: Future>(future: F) -> F::Output {
    tokio::time::timeout(PATIENCE, future)
        .await
        .expect("timed out waiting for an event")
}
