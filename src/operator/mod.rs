//! What the operator reads and sets up: the [`status`] document, the
//! [`doctor`]'s checks of every part, and the guided [`setup`] that writes
//! a configuration. Above the gateways and the engine, whose state they
//! report; below the daemon and the command line, which show them.

pub mod doctor;
pub mod setup;
pub mod status;
