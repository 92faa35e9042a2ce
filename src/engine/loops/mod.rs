//! Background loops: work the assistant does without being asked — a
//! heartbeat, periodic checks, schedules and reminders.
//!
//! A loop is defined by a [`LoopSpec`](spec::LoopSpec): a name, a body (a
//! task prompt or a built-in handler), sleep bounds with jitter, optional
//! limits, an optional supervisor, an output chat, and whether a timer or a
//! trigger starts its iterations. The [`Registry`](registry::Registry) runs
//! each loop as a task (`run`) within a concurrency limit, and stops them
//! by name or all at once at shutdown, under a deadline. The runtime decides
//! when an iteration runs; the daemon decides what it does, by implementing
//! [`Iterate`](iterate::Iterate). Sleeps and backoff come from [`sleep`],
//! their randomness from an injectable [`random`] source, and what a loop is
//! doing is a serializable [`LoopStatus`](status::LoopStatus). When
//! scheduled work falls due — every N minutes, daily at a time, a cron
//! expression, or once — is a [`Schedule`](crate::foundation::clock::schedule::Schedule).
//! A loop defined in the config becomes a spec in [`configured`].
//!
//! The daemon's side lives here too: [`daemon`] runs the iterations (a
//! reminder or a task in its output conversation, the [`heartbeat`] right
//! there) and holds the running [`Loops`]; [`schedules`] is the book of
//! loops that outlive a restart (and starts a loop stopped on request
//! again); a reminder's or a task's iteration is a
//! [`job`] for its conversation's worker, a task's prompt a background turn
//! of the pipeline ([`prompt`]); [`tools`] are the model's `remind`,
//! `schedule`, `schedules`, `cancel_schedule` and `set_next_sleep`.

pub mod configured;
pub mod daemon;
pub mod heartbeat;
pub mod iterate;
pub mod job;
pub mod next_sleep;
pub mod prompt;
pub mod random;
pub mod registry;
mod run;
pub mod schedules;
pub mod sleep;
pub mod spec;
pub mod status;
pub mod tools;

pub use daemon::Loops;
