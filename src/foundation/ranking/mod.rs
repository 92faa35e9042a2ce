//! Ranking text by relevance to a query: the words of a text in any script
//! ([`tokens`]) and BM25 scores over them ([`Bm25`]). Memory recall and
//! history search use it; it knows nothing of facts or turns, only text.

mod bm25;
mod tokens;

pub use bm25::Bm25;
pub use tokens::tokens;
