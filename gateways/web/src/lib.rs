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
//! | the router: every feature's routes, body limit, `Host` check | `router.rs` |
//! | what every route may use | `state.rs` |
//! | the gateway's id and surface | `surface.rs` |
//! | security headers | `headers.rs` |
//! | `Host` and `Origin` checks | `host.rs` |
//! | the session cookie, CSRF tokens, the signed-in guard | `session.rs` |
//! | what the core keeps of links and sessions | `sessions.rs` |
//! | trading a link for a session; signing out | `sign_in.rs` |
//! | failed sign-ins per client | `rate_limit.rs` |
//! | live updates (server-sent events); how many are open | `events.rs`, `streams.rs` |
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
//! | `/metrics` in Prometheus' text format; the API's latency | `metrics.rs`, `latency.rs` |
//! | configured secrets kept out of answers | `redact.rs` |
//!
//! ## Where handlers and their HTML live
//!
//! - A feature brings its own routes: the file that holds its handlers has
//!   a `routes()` (paths, methods, a body limit of its own), and `router.rs`
//!   merges it, one line. Handlers take the `AppState` from
//!   `state.rs`, which imports no handler: the arrows run from the features
//!   down to the state, never back.
//! - A page's handlers and its HTML live together in `pages/FEATURE.rs`
//!   (conversations, usage, configuration, logs, keys, channels, the
//!   overview). Where the HTML alone is a file's worth, the handlers are
//!   `FEATURE.rs` at the crate's top and the HTML stays `pages/FEATURE.rs`
//!   (approvals, loops, the chat).
//! - What every page shares: the shell and navigation in `pages/layout.rs`,
//!   the error pages in `pages/errors.rs`, the pieces of HTML and the
//!   dashboard's questions to the core in `pages/parts.rs`; the checks every
//!   form passes in `posted.rs`, the signed-in guards in `session.rs`.
//!
//! So a new page is `pages/FEATURE.rs` (its `routes()`, behind the
//! signed-in guard, rendering into [`pages::layout::page`]), its `mod` line
//! in `pages/mod.rs`, a `.merge` line in `router.rs` and an entry in
//! `pages/layout.rs`' navigation. A document it needs from the core is a
//! `DashboardRequest` variant (`gateways/admin/src/dashboard.rs`) answered
//! in `src/daemon/admin/answers/dashboard/`.

#![deny(missing_docs)]
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

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
mod latency;
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
mod state;
mod streams;
mod surface;
mod threads;
mod uploads;

pub use chats::{Chats, EARLIER_CHAT_ID, WebChat};
pub use config::{DEFAULT_LISTEN, WebSection};
pub use error::WebError;
pub use keys::{ApiKeys, Key};
pub use redact::{LiveSecrets, Secrets};
pub use server::{WebConfig, WebGateway};
pub use sessions::{Sessions, SessionsUnavailable};
pub use surface::{GATEWAY_ID, SURFACE};
pub use threads::Threads;
