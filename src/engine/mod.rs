//! The conversation engine: a message's way from the gateways' queue to
//! its reply. The [`intake`] journals it, one worker per conversation
//! ([`conversations`]) runs its turn through the Perceive → Reason → Act
//! [`pipeline`] and ends it through one tail, [`bridges`] carry it to
//! joined chats, and the background [`loops`] (heartbeat, reminders) run
//! turns of their own.

pub mod bridges;
pub mod conversations;
pub mod intake;
pub mod loops;
pub mod pipeline;
