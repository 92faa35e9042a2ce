//! A text's search terms. Word boundaries follow Unicode (UAX #29); words are
//! lower-cased and, in Latin script, reduced to their English stem
//! (Snowball), so "appointments" meets "appointment" and "Termine" meets
//! "Termin". Chinese, Japanese and Korean have no spaces between words, so a
//! run of their characters gives every character and every pair of
//! neighbours: "绿茶" gives 绿, 茶 and 绿茶, which finds a fact without
//! guessing where its words end.

use rust_stemmers::{Algorithm, Stemmer};
use unicode_segmentation::UnicodeSegmentation;

/// The search terms of `text`, in order, repeats kept (BM25 counts them).
pub fn tokens(text: &str) -> Vec<String> {
    let stemmer = Stemmer::create(Algorithm::English);
    let mut out = Vec::new();
    let mut run: Vec<char> = Vec::new();
    // Where the last CJK word ended: a run continues only across adjacent words.
    let mut run_end = 0;
    for (start, word) in text.unicode_word_indices() {
        if word.chars().all(is_cjk) {
            if start != run_end {
                flush(&mut run, &mut out);
            }
            run.extend(word.chars().flat_map(char::to_lowercase));
            run_end = start + word.len();
            continue;
        }
        flush(&mut run, &mut out);
        // A word mixing scripts ("iPhone用") splits into its CJK and other parts.
        let lower = word.to_lowercase();
        let mut rest = String::new();
        for c in lower.chars() {
            if is_cjk(c) {
                push_word(&stemmer, &mut rest, &mut out);
                run.push(c);
            } else {
                flush(&mut run, &mut out);
                rest.push(c);
            }
        }
        push_word(&stemmer, &mut rest, &mut out);
        flush(&mut run, &mut out);
    }
    flush(&mut run, &mut out);
    out
}

fn push_word(stemmer: &Stemmer, word: &mut String, out: &mut Vec<String>) {
    if word.is_empty() {
        return;
    }
    let stem = stemmer.stem(word.trim_end_matches("'s"));
    out.push(if stem.is_empty() {
        std::mem::take(word)
    } else {
        stem.into_owned()
    });
    word.clear();
}

/// Every character of a CJK run and every pair of neighbours.
fn flush(run: &mut Vec<char>, out: &mut Vec<String>) {
    for (i, &c) in run.iter().enumerate() {
        out.push(c.to_string());
        if let Some(&next) = run.get(i + 1) {
            out.push([c, next].iter().collect());
        }
    }
    run.clear();
}

/// Han, Hiragana, Katakana and Hangul: scripts written without spaces
/// between words (Korean uses spaces, but its words inflect by suffix, and
/// pairs of syllables match those forms better than whole words).
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x11FF       // Hangul Jamo
        | 0x3040..=0x309F     // Hiragana
        | 0x30A0..=0x30FF     // Katakana
        | 0x3130..=0x318F     // Hangul compatibility Jamo
        | 0x31F0..=0x31FF     // Katakana phonetic extensions
        | 0x3400..=0x4DBF     // Han extension A
        | 0x4E00..=0x9FFF     // Han
        | 0xAC00..=0xD7AF     // Hangul syllables
        | 0xF900..=0xFAFF     // Han compatibility
        | 0xFF66..=0xFF9D     // half-width Katakana
        | 0x20000..=0x2FA1F   // Han extensions B and later
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_words_are_lower_cased_and_stemmed() {
        assert_eq!(tokens("Appointments"), tokens("appointment"));
        assert_eq!(tokens("parties"), tokens("party"));
        assert_eq!(tokens("boxes"), tokens("box"));
        assert_eq!(tokens("meeting"), tokens("meet"));
        assert_eq!(tokens("called"), tokens("call"));
        assert_eq!(tokens("Ann's cat"), ["ann", "cat"]);
    }

    #[test]
    fn german_plurals_meet_their_singular() {
        assert_eq!(tokens("Termine"), tokens("Termin"));
        assert_eq!(tokens("Äpfel"), ["äpfel"], "lower-cased, letters kept");
    }

    #[test]
    fn cjk_runs_give_characters_and_pairs() {
        assert_eq!(tokens("绿茶"), ["绿", "绿茶", "茶"]);
        assert_eq!(tokens("茶"), ["茶"]);
        assert_eq!(tokens("カタカナ")[..2], ["カ", "カタ"]);
        assert_eq!(tokens("iPhone用"), ["iphon", "用"]);
        assert_eq!(tokens("茶 tea 茶"), ["茶", "tea", "茶"], "runs end at other words");
    }

    #[test]
    fn punctuation_and_empty_text_give_nothing() {
        assert!(tokens("").is_empty());
        assert!(tokens(" ?! ... ").is_empty());
        assert_eq!(tokens("4711"), ["4711"]);
    }
}
