//! The web gateway of passepartout: a dashboard in the browser, served over
//! HTTP on the machine's own address (`[web]`, off by default).
//!
//! The daemon binds a [`WebGateway`] and runs it like every gateway. It reads
//! what it shows through the same [`passepartout_admin::Admin`] handle the
//! local socket serves `passepartout status` with, and checks who is signed
//! in through [`Sessions`], which the core implements over its store: a
//! browser signs in with a one-time link `passepartout web` prints, and then
//! has the rights of the machine's owner. The gateway never sees the store.
//!
//! People also talk to the assistant through it: the API under `/v1`
//! (OpenAI's Chat Completions, each API key a person of its own) hands their
//! messages to the core's intake like any gateway, and the core's replies
//! and drafts come back through the [`hub::Hub`] to whoever waits on the
//! conversation. A chat page follows a conversation the same way.
//!
//! Every response carries strict security headers; a request whose `Host` is
//! not the dashboard's own is refused (DNS rebinding), and a form sent from
//! another origin or without the session's CSRF token is refused too. Every
//! asset is compiled in: no page loads anything from another origin, and no
//! page holds inline script or style.
//!
//! | concept | file |
//! | --- | --- |
//! | `[web]`, its checks | `config.rs` |
//! | the gateway: bind, listen, health | `server.rs` |
//! | accepting and serving connections: limits, timeouts | `serve.rs`, `connections.rs` |
//! | whose a loopback connection is | `peer_uid.rs` |
//! | routes, body limit, shared state | `router.rs` |
//! | security headers | `headers.rs` |
//! | `Host` and `Origin` checks | `host.rs` |
//! | the session cookie, CSRF tokens, the signed-in guard | `session.rs` |
//! | what the core keeps of links and sessions | `sessions.rs` |
//! | trading a link for a session; signing out | `sign_in.rs` |
//! | failed sign-ins per client | `rate_limit.rs` |
//! | live updates (server-sent events) | `events.rs` |
//! | embedded CSS, JS and the icon | `assets.rs`, `assets/` |
//! | HTML escaping | `escape.rs` |
//! | pages: shell and navigation, overview, conversations, usage, configuration, errors | `pages/` |
//! | SVG charts drawn on the server | `pages/chart.rs` |
//! | the chat page: history, sending, the reply streamed | `chat.rs`, `pages/chat.rs`, `assets/chat.js` |
//! | the owner's chats: new, listed, renamed, deleted; what the core keeps of them | `chat_list.rs`, `chats.rs` |
//! | the assistant's Markdown as escaped HTML | `markdown.rs` |
//! | files attached on the chat page, until the core fetches them | `uploads.rs` |
//! | files the assistant sent, offered as downloads | `downloads.rs` |
//! | approvals: what waits, decided, standing rules | `approvals.rs`, `pages/approvals.rs` |
//! | loops, tools and their gates | `loops.rs`, `pages/loops.rs` |
//! | the checks every form that changes something passes | `posted.rs` |
//! | who waits on which conversation; replies and drafts to them | `hub.rs` |
//! | the owner and the API keys, and their conversations | `people.rs` |
//! | what the core keeps of API keys | `keys.rs` |
//! | what the core keeps of where API conversations stand | `threads.rs` |
//! | the OpenAI-compatible API under `/v1` | `api/` |
//! | `/metrics` in Prometheus' text format | `metrics.rs` |
//! | configured secrets kept out of answers | `redact.rs` |
//!
//! A new page is a file in `pages/` rendering into [`pages::layout::page`],
//! a route in `router.rs` behind the signed-in guard, and an entry in
//! `pages/layout.rs`' navigation.

pub mod api;
mod approvals;
mod assets;
mod chat;
mod chat_list;
mod chats;
mod config;
mod connections;
mod downloads;
mod error;
mod escape;
mod events;
mod headers;
mod host;
pub mod hub;
mod keys;
mod loops;
mod markdown;
mod metrics;
pub mod pages;
mod peer_uid;
pub mod people;
mod posted;
mod rate_limit;
mod redact;
mod router;
mod serve;
mod server;
mod session;
mod sessions;
mod sign_in;
mod threads;
mod uploads;

pub use chats::{Chats, EARLIER_CHAT_ID, WebChat};
pub use config::{DEFAULT_LISTEN, WebSection};
pub use error::WebError;
pub use keys::{ApiKeys, Key};
pub use redact::{LiveSecrets, Secrets};
pub use server::{GATEWAY_ID, SURFACE, WebConfig, WebGateway};
pub use sessions::{Sessions, SessionsUnavailable};
pub use threads::Threads;
