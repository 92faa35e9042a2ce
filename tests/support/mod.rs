//! Test support shared by the end-to-end tests: a fake OpenAI-compatible
//! server, and a harness that runs a real daemon on a temp dir against it.
#![allow(dead_code)] // each test crate uses a different part

pub mod fake_llm;
pub mod harness;
pub mod process;
