//! The gateways' parts of `passepartout setup`: each gateway's flags,
//! flattened into the wizard's, and its step, in the order they run after
//! the model's. A gateway left out of the build has neither.

use clap::Args;

use crate::config::interview::Step;

/// Every gateway step's flags.
#[derive(Clone, Debug, Default, Args)]
pub struct Flags {
    /// The Telegram step's.
    #[cfg(feature = "telegram")]
    #[command(flatten)]
    pub telegram: super::telegram::setup::TelegramFlags,
    /// The Signal step's.
    #[cfg(feature = "signal")]
    #[command(flatten)]
    pub signal: super::signal::setup::SignalFlags,
    /// The Matrix step's.
    #[cfg(feature = "matrix")]
    #[command(flatten)]
    pub matrix: super::matrix::setup::MatrixFlags,
    /// The dashboard step's.
    #[cfg(feature = "web")]
    #[command(flatten)]
    pub web: super::web::setup::WebFlags,
}

/// The gateways' steps, in the order they run, each with its flags.
#[cfg_attr(
    not(any(feature = "telegram", feature = "signal", feature = "web", feature = "matrix")),
    allow(unused_variables, unused_mut)
)]
#[allow(clippy::vec_init_then_push)] // each push is a cargo feature's
pub fn steps(flags: &Flags) -> Vec<Box<dyn Step>> {
    let mut steps: Vec<Box<dyn Step>> = Vec::new();
    #[cfg(feature = "telegram")]
    steps.push(Box::new(super::telegram::setup::TelegramStep {
        flags: flags.telegram.clone(),
    }));
    #[cfg(feature = "signal")]
    steps.push(Box::new(super::signal::setup::SignalStep {
        flags: flags.signal.clone(),
    }));
    #[cfg(feature = "matrix")]
    steps.push(Box::new(super::matrix::setup::MatrixStep {
        flags: flags.matrix.clone(),
    }));
    #[cfg(feature = "web")]
    steps.push(Box::new(super::web::setup::WebStep {
        flags: flags.web.clone(),
    }));
    steps
}
