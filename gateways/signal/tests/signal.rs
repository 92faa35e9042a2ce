//! The Signal gateway's integration tests, one binary (one link, not one
//! per file), against the fake signal-cli daemon on 127.0.0.1.

#[path = "../../../tests/support/fake_signal.rs"]
mod fake_signal;
mod signal_gateway;
mod signal_media;
