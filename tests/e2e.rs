//! The end-to-end tests, one module a file beside this one, built as one
//! test binary: linking the daemon and its dependencies into some forty
//! binaries, one a file, was most of the test build's time and disk.
//! The tests that drive a real browser are the `clients` binary's
//! (`tests/clients.rs`). `tests/ci.rs` checks that every file here is
//! listed in one of the two.

mod support;

mod approval_display;
mod approval_prompts;
mod approvals;
mod approvals_restart;
mod bridges;
mod bridges_crash;
mod chaos;
mod chat_control;
mod chat_terminal;
mod check_config;
mod ci;
mod cli;
mod cli_client;
mod compaction;
mod confinement;
mod consensus;
mod conversation;
mod crash;
mod deploy;
mod fake_telegram;
mod follow_me;
mod formatted_replies;
mod full_disk;
mod gateway_rosters;
mod linking;
mod loops;
mod loops_control;
mod markup_send;
mod matrix;
mod mcp;
mod mcp_installs;
mod media;
mod media_gateways;
mod pairing;
mod parts;
mod parts_crash;
mod plugged_gateway;
mod reasoning;
mod reload;
mod restart;
mod sandbox;
mod setup;
mod signal;
mod signal_cli_real;
mod signal_link;
mod signal_rpc;
mod standing_rules;
mod standing_rules_everywhere;
mod stopping;
mod streaming;
mod telegram;
mod telegram_gateway;
mod telegram_media;
mod web;
mod web_admin;
mod web_api;
mod web_chat;
mod web_connections;
mod web_forms;
mod web_pages;
mod web_secrets;
mod web_times;
