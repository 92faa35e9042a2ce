//! Shell command lines as standing rules see them. A rule may reach beyond
//! the exact command it was made from only for a *plain* command — ASCII
//! letters, digits, spaces and `-_./=:,+@%`, nothing else — so no chaining
//! (`;`, `&&`, `||`, `|`, `&`), substitution (`$(…)`, backticks, `$VAR`),
//! redirection (`<`, `>`), quoting, globbing, escapes or newlines can hide
//! a second command in it; and only for a program (with its subcommand)
//! whose further options change what it shows, never what it does: a rule
//! for `git status` covers `git status --short`, and nothing else.
//! A call such a rule covers must be plain itself, and may add options
//! (`-x`, `--name`) but no operands, no `/` and no `=`.
//! Everything else is covered only by the exact same command line.

/// What a plain command line may hold beside ASCII letters and digits.
const PLAIN: &str = " -_./=:,+@%";

/// Programs, with their subcommand, whose further options only change what
/// they show; the only ones a rule covers beyond the exact command for.
/// Programs that run other commands, write files or take a program as an
/// option (`sh`, `env`, `sudo`, `xargs`, `find`, `tar -I`, `git grep -O`, …)
/// are not here, and never will be.
const SHOWING: &[&[&str]] = &[
    &["git", "status"],
    &["git", "log"],
    &["git", "diff"],
    &["git", "show"],
    &["ls"],
    &["df"],
    &["du"],
    &["free"],
    &["uptime"],
    &["uname"],
    &["whoami"],
    &["id"],
    &["pwd"],
    &["ps"],
    &["wc"],
];

/// The words of `command` if it is plain, else none.
pub fn plain_words(command: &str) -> Option<Vec<&str>> {
    if !command.chars().all(|c| c.is_ascii_alphanumeric() || PLAIN.contains(c)) {
        return None;
    }
    let words: Vec<&str> = command.split(' ').filter(|word| !word.is_empty()).collect();
    (!words.is_empty()).then_some(words)
}

/// The words a rule made from `command` begins with, when it may cover
/// more than the exact command: `command` is plain and runs one of the
/// [`SHOWING`] programs.
pub fn prefix(command: &str) -> Option<Vec<String>> {
    let words = plain_words(command)?;
    SHOWING
        .iter()
        .any(|program| words.starts_with(program))
        .then(|| words.iter().map(|word| (*word).to_owned()).collect())
}

/// Whether `command` is covered by a rule beginning with `words`: it is
/// plain, begins with them, and adds nothing but options.
pub fn covered(words: &[String], command: &str) -> bool {
    let Some(call) = plain_words(command) else {
        return false;
    };
    call.len() >= words.len()
        && call.iter().zip(words).all(|(called, word)| called == word)
        && call[words.len()..].iter().all(|word| further_option(word))
}

/// An option a covered call may add: `-x` or `--name`, naming no path and
/// setting no value.
fn further_option(word: &str) -> bool {
    word.len() > 1 && word.starts_with('-') && !word.contains(['/', '='])
}
