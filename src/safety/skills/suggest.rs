//! "Did you mean": the known name closest to one that matches nothing, for
//! the messages that refuse a misspelt tool or argument name. A name is close
//! when a few edits (a character inserted, deleted, replaced, or two swapped)
//! make it — at most a third of the longer name's length, ignoring case — or
//! when the typed name abbreviates it (`cmd` for `command`). Nothing is
//! suggested when nothing is close: a guess would mislead.

/// The name among `known` closest to `typed`, if one is close; the first of
/// equally close ones.
pub fn closest<'a>(typed: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let typed = typed.to_lowercase();
    let mut best: Option<(usize, &str)> = None;
    for name in known {
        let lower = name.to_lowercase();
        let edits = distance(&typed, &lower);
        let longer = typed.chars().count().max(lower.chars().count());
        let close = edits <= (longer / 3).max(1) || abbreviates(&typed, &lower);
        if close && best.is_none_or(|(fewest, _)| edits < fewest) {
            best = Some((edits, name));
        }
    }
    best.map(|(_, name)| name)
}

/// The fewest single-character insertions, deletions, substitutions and
/// swaps of neighbours that turn `a` into `b`.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rows of the table: two back (for a swap), the last, the current.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut last: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut current = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let substitution = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (last[j] + 1).min(current[j - 1] + 1).min(last[j - 1] + substitution);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(before[j - 2] + 1);
            }
            current[j] = best;
        }
        before = std::mem::replace(&mut last, current);
    }
    last[b.len()]
}

/// Whether `typed` (two characters or more) starts like `name` and the rest
/// of its characters appear in `name` in order, as `cmd` in `command`.
fn abbreviates(typed: &str, name: &str) -> bool {
    let mut wanted = typed.chars();
    let (Some(first), true) = (wanted.next(), typed.chars().count() >= 2) else {
        return false;
    };
    let mut rest = name.chars();
    if rest.next() != Some(first) {
        return false;
    }
    wanted.all(|c| rest.any(|n| n == c))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOLS: &[&str] = &["http_get", "read_file", "schedule", "schedules", "shell", "write_file"];

    fn suggest(typed: &str) -> Option<&'static str> {
        closest(typed, TOOLS.iter().copied())
    }

    #[test]
    fn counts_insertions_deletions_substitutions_and_swaps() {
        assert_eq!(distance("shell", "shell"), 0);
        assert_eq!(distance("shel", "shell"), 1);
        assert_eq!(distance("shelll", "shell"), 1);
        assert_eq!(distance("shall", "shell"), 1);
        assert_eq!(distance("sehll", "shell"), 1);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("cmd", "command"), 4);
        assert_eq!(distance("kitten", "sitting"), 3);
    }

    #[test]
    fn a_small_slip_is_suggested() {
        assert_eq!(suggest("shel"), Some("shell"));
        assert_eq!(suggest("Shell"), Some("shell"));
        assert_eq!(suggest("sehll"), Some("shell"));
        assert_eq!(suggest("write-file"), Some("write_file"));
        assert_eq!(suggest("readfile"), Some("read_file"));
        assert_eq!(suggest("http_gte"), Some("http_get"));
        assert_eq!(suggest("shedule"), Some("schedule"));
    }

    #[test]
    fn the_closest_wins_and_ties_go_to_the_first() {
        assert_eq!(suggest("schedule"), Some("schedule"), "an exact match");
        assert_eq!(suggest("schedulesx"), Some("schedules"));
        assert_eq!(closest("ab", ["ax", "xb"]), Some("ax"));
    }

    #[test]
    fn an_abbreviation_is_suggested() {
        assert_eq!(closest("cmd", ["command"]), Some("command"));
        assert_eq!(closest("cmd", ["path", "content", "command"]), Some("command"));
        assert_eq!(closest("wf", TOOLS.iter().copied()), Some("write_file"));
        assert_eq!(closest("c", ["command"]), None, "one letter abbreviates nothing");
        assert_eq!(closest("dmc", ["command"]), None, "the first letter must match");
    }

    #[test]
    fn nothing_is_suggested_when_nothing_is_close() {
        assert_eq!(suggest("xyz"), None);
        assert_eq!(suggest("browser"), None);
        assert_eq!(suggest("*"), None);
        assert_eq!(suggest(""), None);
        assert_eq!(closest("shell", []), None);
    }
}
