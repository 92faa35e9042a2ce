//! Test support shared by the end-to-end tests: fake OpenAI-compatible,
//! Anthropic and Telegram Bot API servers, and a harness that runs a real daemon on a temp dir against it.
#![allow(dead_code)] // each test crate uses a different part

pub mod approvals;
pub mod browser;
pub mod chat;
pub mod closed;
pub mod dashboard;
pub mod fake_anthropic;
pub mod fake_llm;
pub mod fake_signal;
pub mod fake_telegram;
pub mod fake_transcriber;
pub mod gateway_daemons;
pub mod harness;
pub mod linked_pair;
pub mod logs;
pub mod matrix_person;
pub mod mcp;
pub mod mcp_installs;
pub mod media_gateway;
pub mod process;
pub mod pty;
pub mod python;
pub mod skip;
pub mod socket_load;
pub mod synapse;
pub mod tools;
pub mod web;
pub mod web_chat;
pub mod web_pages;
pub mod webdriver_http;
