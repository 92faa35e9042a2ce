//! The language model and what it reads: the providers and their
//! fallback ([`llm`]), the [`signal`] a turn perceives, the [`media`] people
//! send (read for the model), and the long-term [`memory`] recalled into a
//! prompt. Below the safety desks, which ask the model too; above the
//! store, where memory is kept.

pub mod llm;
pub mod media;
pub mod memory;
pub mod signal;
