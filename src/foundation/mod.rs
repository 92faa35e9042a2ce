//! The ground floor: what every other layer may use and which knows
//! nothing of conversations, people or gateways. The clock and its
//! schedules, the daemon's lifecycle (one task tracker, the drain), the
//! daemon's own message texts ([`notices`]), text ranking, duration
//! histograms and per-name telemetry, the data directory, the open-files
//! limit, and one line of the doctor's checkup.

pub mod checkup;
pub mod clock;
pub mod data_dir;
pub mod histogram;
pub mod lifecycle;
pub mod notices;
pub mod open_files;
pub mod ranking;
pub mod telemetry;
