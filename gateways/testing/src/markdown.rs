//! [`proptest`] strategies for the Markdown a model may write, for property
//! tests of rendering and splitting: what any surface makes of it must be
//! sound, and no input may make a send fail.
//!
//! Random characters hardly ever form Markdown, so [`markdown`] strings
//! together the pieces Markdown is made of — emphasis and code markers,
//! fences with languages, headings, quotes, list markers, tables, links,
//! images, HTML, footnotes — with text that is hard to count: emoji outside
//! the BMP (two UTF-16 units), CJK (three UTF-8 bytes, one unit), combining
//! and joining characters, tabs and `\r\n`, now and then anything at all.
//! [`long_markdown`] repeats such a text, so that replies get split.

use proptest::prelude::*;

/// The pieces a generated text is made of.
const PIECES: &[&str] = &[
    "a",
    "word",
    "longerword",
    " ",
    "  ",
    "\t",
    "\n",
    "\n\n",
    "\r\n",
    "**",
    "*",
    "_",
    "__",
    "~~",
    "~",
    "`",
    "``",
    "```",
    "```rust\n",
    "```\n",
    "~~~py\n",
    "# ",
    "## ",
    "###### ",
    "> ",
    ">> ",
    "- ",
    "* ",
    "+ ",
    "1. ",
    "3) ",
    "   ",
    "    ",
    "- [ ] ",
    "- [x] ",
    "|",
    " | ",
    "|---|---|\n",
    "| a | b |\n",
    "[",
    "]",
    "(",
    ")",
    "](",
    "](https://example.com/p?q=1)",
    "](notes.md)",
    "](javascript:x)",
    "<https://example.com>",
    "<a@b.example>",
    "![",
    "![alt](https://e.com/i.png)",
    "<b>",
    "</b>",
    "<div>\n",
    "<!-- c -->",
    "[^1]",
    "[^1]: ",
    "---\n",
    "***\n",
    "\\",
    "\\*",
    "&amp;",
    "&#x1F600;",
    "||",
    "é",
    "中文",
    "😀",
    "👍🏽",
    "🇫🇷",
    "e\u{301}",
    "\u{200d}",
    "\u{feff}",
    "\0",
];

/// A Markdown text of up to `max_pieces` pieces.
pub fn markdown_of(max_pieces: usize) -> BoxedStrategy<String> {
    let piece = prop_oneof![
        12 => prop::sample::select(PIECES).prop_map(str::to_owned),
        1 => "\\PC{0,8}",
    ];
    prop::collection::vec(piece, 0..max_pieces)
        .prop_map(|pieces| pieces.concat())
        .boxed()
}

/// A Markdown text short enough for one message.
pub fn markdown() -> BoxedStrategy<String> {
    markdown_of(120)
}

/// A Markdown text of several kilobytes, made of a generated text repeated:
/// long enough to be split on every platform.
pub fn long_markdown() -> BoxedStrategy<String> {
    (markdown_of(400), 1usize..12)
        .prop_map(|(text, times)| text.repeat(times))
        .boxed()
}
