//! Okapi BM25 over [`tokens`](super::tokens): a document scores for each
//! query term it holds, more for a term rare among the documents, with
//! diminishing returns for repeats and a penalty for length. Built once per
//! set of documents (an inverted index from term to postings), it scores a
//! query by reading only the postings of the query's terms.

use std::collections::{HashMap, HashSet};

use super::tokens;

/// Term-frequency saturation: how fast repeats stop counting.
const K1: f64 = 1.2;
/// Length normalisation: 0 ignores a document's length, 1 divides by it.
const B: f64 = 0.75;

/// An index of documents, by their position in the list given.
#[derive(Debug, Default)]
pub struct Bm25 {
    /// Term → (document, how often the term occurs in it).
    postings: HashMap<String, Vec<(u32, u32)>>,
    lengths: Vec<u32>,
    average_length: f64,
}

impl Bm25 {
    /// Indexes `documents`; a document is referred to by its position.
    pub fn new<'a>(documents: impl IntoIterator<Item = &'a str>) -> Self {
        Self::indexing(documents, |_| true)
    }

    /// Indexes only the terms of `query` in `documents`: what one query
    /// needs, for less work than [`Bm25::new`] when the index is not kept.
    pub fn for_query<'a>(documents: impl IntoIterator<Item = &'a str>, query: &str) -> Self {
        let wanted: HashSet<String> = tokens(query).into_iter().collect();
        Self::indexing(documents, |term| wanted.contains(term))
    }

    fn indexing<'a>(documents: impl IntoIterator<Item = &'a str>, keep: impl Fn(&str) -> bool) -> Self {
        let mut index = Self::default();
        let mut counts: HashMap<String, u32> = HashMap::new();
        for (doc, text) in documents.into_iter().enumerate() {
            let terms = tokens(text);
            index.lengths.push(terms.len() as u32);
            for term in terms.into_iter().filter(|term| keep(term)) {
                *counts.entry(term).or_default() += 1;
            }
            for (term, count) in counts.drain() {
                index.postings.entry(term).or_default().push((doc as u32, count));
            }
        }
        let total: u64 = index.lengths.iter().map(|&l| u64::from(l)).sum();
        index.average_length = total as f64 / index.lengths.len().max(1) as f64;
        index
    }

    /// How many documents are indexed.
    pub fn len(&self) -> usize {
        self.lengths.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lengths.is_empty()
    }

    /// Each document's score for `query`, by position; 0 for one sharing no
    /// term with it.
    pub fn scores(&self, query: &str) -> Vec<f64> {
        let mut scores = vec![0.0; self.len()];
        let mut terms = tokens(query);
        terms.sort_unstable();
        terms.dedup();
        let n = self.len() as f64;
        for term in terms {
            let Some(postings) = self.postings.get(&term) else {
                continue;
            };
            let df = postings.len() as f64;
            // The "+1" keeps a term found in most documents slightly positive.
            let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
            for &(doc, tf) in postings {
                let tf = f64::from(tf);
                let length = f64::from(self.lengths[doc as usize]) / self.average_length.max(1.0);
                scores[doc as usize] += idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * length));
            }
        }
        scores
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rarer_terms_and_shorter_documents_score_higher() {
        let index = Bm25::new(["the cat sat", "the dog sat", "the cat and the dog and the bird sat"]);
        let scores = index.scores("cat");
        assert!(scores[0] > scores[2], "{scores:?}: shorter document first");
        assert_eq!(scores[1], 0.0);
        let scores = index.scores("bird sat");
        assert!(scores[2] > scores[0], "{scores:?}: the rare term decides");
    }

    #[test]
    fn an_index_for_one_query_scores_as_the_whole_index_does() {
        let documents = ["the cat sat", "the dog sat", "the cat and the dog and the bird sat"];
        for query in ["cat", "bird sat", "fish", ""] {
            assert_eq!(
                Bm25::for_query(documents, query).scores(query),
                Bm25::new(documents).scores(query),
                "{query}"
            );
        }
    }

    #[test]
    fn an_empty_index_or_query_scores_nothing() {
        assert!(Bm25::new([]).scores("cat").is_empty());
        assert_eq!(Bm25::new(["cat"]).scores(""), [0.0]);
    }
}
