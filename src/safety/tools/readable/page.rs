//! One page of a long text: at most a set number of bytes from a `start`
//! the model chooses, cut where a reader would cut — at a line's end, or
//! failing that between words — so that it can ask for the rest with the
//! `start` the result names.

/// Where a page may end, best first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    /// Prose: a line's end in the page's second half, else a space there,
    /// else anywhere between characters.
    Prose,
    /// Structured text (pretty-printed JSON): any line's end in the page,
    /// so that no token is split; anywhere only if one line fills the page.
    Lines,
}

/// `start` is past the end of the text.
#[derive(Debug, PartialEq, Eq)]
pub struct PastEnd {
    pub start: usize,
    pub total: usize,
}

/// The part of a text shown, by byte offsets into it.
#[derive(Debug, PartialEq, Eq)]
pub struct Page<'a> {
    pub text: &'a str,
    pub start: usize,
    pub end: usize,
    pub total: usize,
}

impl Page<'_> {
    /// Where the next page starts, if there is more.
    pub fn next(&self) -> Option<usize> {
        (self.end < self.total).then_some(self.end)
    }

    /// Whether this is the whole text.
    pub fn is_whole(&self) -> bool {
        self.start == 0 && self.end == self.total
    }
}

/// At most `size` bytes of `text` from byte `start` (moved forward to the
/// next character boundary if it falls inside one).
pub fn page(text: &str, start: usize, size: usize, cut: Cut) -> Result<Page<'_>, PastEnd> {
    let total = text.len();
    if start > total || (start == total && total > 0) {
        return Err(PastEnd { start, total });
    }
    let mut start = start;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let mut end = (start + size.max(1)).min(total);
    if end < total {
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        end = better_end(text, start, end, cut);
    }
    Ok(Page {
        text: &text[start..end],
        start,
        end,
        total,
    })
}

/// The end of the page at or before `end` that `cut` prefers.
fn better_end(text: &str, start: usize, end: usize, cut: Cut) -> usize {
    let window = &text[start..end];
    let half = window.len() / 2;
    let after = |at: usize| start + at + 1;
    match cut {
        Cut::Lines => window.rfind('\n').map(after),
        Cut::Prose => window
            .rfind('\n')
            .filter(|&at| at >= half)
            .or_else(|| window.rfind(' ').filter(|&at| at >= half))
            .map(after),
    }
    .filter(|&better| better > start)
    .unwrap_or(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_end_at_lines_then_words_then_characters() {
        let text = "first line\nsecond line goes on\nthird";
        let first = page(text, 0, 25, Cut::Prose).unwrap();
        assert_eq!(first.text, "first line\nsecond line ");
        assert_eq!(first.next(), Some(23));
        let rest = page(text, 23, 100, Cut::Prose).unwrap();
        assert_eq!((rest.text, rest.next()), ("goes on\nthird", None));
        let json = page(text, 0, 25, Cut::Lines).unwrap();
        assert_eq!(json.text, "first line\n");
        let word = page("abcdefghij", 0, 4, Cut::Prose).unwrap();
        assert_eq!(word.text, "abcd");
    }

    #[test]
    fn offsets_stay_on_characters_and_past_the_end_is_an_error() {
        let text = "ééé";
        let first = page(text, 0, 3, Cut::Prose).unwrap();
        assert_eq!((first.text, first.end), ("é", 2));
        assert_eq!(page(text, 1, 2, Cut::Prose).unwrap().text, "é");
        assert_eq!(page(text, 6, 2, Cut::Prose), Err(PastEnd { start: 6, total: 6 }));
        assert!(page("", 0, 10, Cut::Prose).unwrap().is_whole());
    }
}
