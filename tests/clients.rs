//! The tests that drive the programs people use against the daemon (a real
//! headless browser, and the official OpenAI Python client in the browser
//! support's own checks), built as a test binary of their own: cargo runs
//! test binaries one after another, so the browsers, each several
//! processes, never share the two processors with the end-to-end tests'
//! daemons and the programs they wait on, whose bounds a browser's start
//! would stretch. `tests/ci.rs` checks that every file in `tests/` is a
//! module of this binary or of `tests/e2e.rs`, and of one only.

mod support;

mod approval_display_browser;
mod browser_support;
mod web_admin_browser;
mod web_browser;
mod web_chat_browser;
mod web_look_browser;
mod web_pages_browser;
