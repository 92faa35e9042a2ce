//! Markup: the Markdown a model writes, rendered once into a neutral form
//! that every surface can show — plain text plus styled byte ranges
//! ([`Styled`]) — and split to a platform's length limit without losing
//! the styling ([`split()`]).
//!
//! Each gateway maps the neutral form to its own wire shape: Telegram's
//! message entities, Signal's text styles, a terminal's escape codes. A
//! surface that cannot show a link or a quote as styling gets it spelled out
//! in the text ([`Flavor`]). Offsets are bytes here; [`utf16`] converts to
//! the UTF-16 code units both Telegram and Signal count in.
//!
//! The pieces: `styled` (the neutral form), `render` (CommonMark through
//! `pulldown-cmark`), `writer` (layout of the plain text), [`split`],
//! [`utf16`], and [`literal`]: values (a command, a name, a person's words)
//! put into Markdown so that they render as themselves.

pub mod literal;
#[cfg(test)]
mod props;
mod render;
#[cfg(test)]
mod render_tests;
pub mod split;
mod styled;
pub mod utf16;
mod writer;

pub use literal::{code, code_block, escape};
pub use render::{Flavor, render};
pub use split::{Unit, split};
pub use styled::{Span, Style, Styled};
pub use utf16::{utf16_len, utf16_offset, utf16_ranges};
