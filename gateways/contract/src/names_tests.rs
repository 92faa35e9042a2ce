//! Tests of [`super`]: names made fit to show, and the property that no
//! cleaned name can pose as an id or carry markup.

use proptest::prelude::*;

use super::*;
use crate::markup::{Flavor, render};

#[test]
fn a_plain_name_is_kept_as_it_is() {
    assert_eq!(clean_name("Ada Lovelace").as_deref(), Some("Ada Lovelace"));
    assert_eq!(clean_name("José Núñez-O'Brien").as_deref(), Some("José Núñez-O'Brien"));
    assert_eq!(clean_name("山田 太郎").as_deref(), Some("山田 太郎"));
    assert_eq!(clean_name("Ada 🌸").as_deref(), Some("Ada 🌸"));
}

#[test]
fn control_and_bidirectional_characters_are_stripped_and_spaces_collapsed() {
    assert_eq!(clean_name("Ada\nLovelace\t\u{7}").as_deref(), Some("Ada Lovelace"));
    // A right-to-left override would show what follows the name reversed.
    assert_eq!(clean_name("Ada\u{202E}24:margelet").as_deref(), Some("Ada24margelet"));
    assert_eq!(
        clean_name("  Ada   \u{2028} Lovelace  ").as_deref(),
        Some("Ada Lovelace")
    );
    assert_eq!(clean_name("\u{200B}\u{FEFF}"), None, "nothing showable left");
    assert_eq!(clean_name(""), None);
}

#[test]
fn a_name_cannot_pose_as_an_id_or_a_username() {
    assert_eq!(clean_name("Bob (telegram:42)").as_deref(), Some("Bob telegram42"));
    assert_eq!(clean_name("@bob").as_deref(), Some("bob"));
    // Full-width and modifier look-alikes of the brackets, the colon and the at sign.
    assert_eq!(
        clean_name("Bob （telegram：42） ＠bob").as_deref(),
        Some("Bob telegram42 bob")
    );
    assert_eq!(
        clean_name("Bob telegram\u{A789}42\u{02D0}").as_deref(),
        Some("Bob telegram42")
    );
    assert_eq!(
        shown(Some("Bob (telegram:42)"), None, "telegram:7"),
        "Bob telegram42 (telegram:7)",
        "the real id is the one in brackets"
    );
}

#[test]
fn markup_in_a_name_is_stripped() {
    assert_eq!(
        clean_name("*Ada* _L_ `x` [a](b) <i> # | ~ \\").as_deref(),
        Some("Ada L x ab i")
    );
    assert_eq!(clean_name("- Ada").as_deref(), Some("Ada"), "no list");
    assert_eq!(clean_name("> Ada").as_deref(), Some("Ada"), "no quote");
    assert_eq!(clean_name("1986. Ada").as_deref(), Some("1986 Ada"), "no ordered list");
}

#[test]
fn a_long_name_is_cut_with_an_ellipsis() {
    let long = "a".repeat(200);
    let cut = clean_name(&long).unwrap();
    assert_eq!(cut.chars().count(), NAME_MAX_CHARS + 1);
    assert!(cut.ends_with('…'));
    assert_eq!(
        clean_name(&"b".repeat(NAME_MAX_CHARS)).unwrap().chars().count(),
        NAME_MAX_CHARS
    );
}

#[test]
fn usernames_are_kept_only_in_the_platforms_form() {
    assert_eq!(clean_username("ada_lovelace").as_deref(), Some("ada_lovelace"));
    assert_eq!(clean_username("@ada").as_deref(), Some("ada"));
    for bad in ["_ada", "ada_", "ada lovelace", "ada:42", "a", "ädä", &"a".repeat(33)] {
        assert_eq!(clean_username(bad), None, "{bad}");
    }
}

#[test]
fn a_person_is_shown_by_name_and_username_then_id() {
    assert_eq!(shown(None, None, "telegram:42"), "telegram:42");
    assert_eq!(shown(Some("Ada"), None, "signal:u"), "Ada (signal:u)");
    assert_eq!(shown(None, Some("ada"), "telegram:42"), "@ada (telegram:42)");
    assert_eq!(
        shown(Some("Ada Lovelace"), Some("ada"), "telegram:42"),
        "Ada Lovelace @ada (telegram:42)"
    );
    assert_eq!(
        shown(Some("\u{7}"), Some("_x"), "telegram:42"),
        "telegram:42",
        "nothing left to show"
    );
}

proptest! {
    /// Whatever a platform gives, the shown person renders through the
    /// notices' Markdown as exactly the same text, with no styling, on one
    /// line, and ends with the id (in brackets after a name).
    #[test]
    fn a_shown_person_is_inert_in_markdown(name in any::<String>(), username in "[A-Za-z0-9_@]{0,12}") {
        let person = shown(Some(&name), Some(&username), "telegram:42");
        let rendered = render(&person, Flavor::RICH);
        prop_assert_eq!(&rendered.text, &person);
        prop_assert!(rendered.spans.is_empty(), "{:?}", rendered.spans);
        prop_assert!(!person.contains('\n'));
        prop_assert!(person == "telegram:42" || person.ends_with(" (telegram:42)"), "{}", person);
        prop_assert!(person.matches('(').count() <= 1);
        prop_assert_eq!(person.matches(':').count(), 1);
    }

    #[test]
    fn a_shown_name_with_markup_characters_is_inert(name in "[ -~]{0,60}") {
        let person = shown(Some(&name), None, "signal:u");
        let rendered = render(&person, Flavor::SPELLED);
        prop_assert_eq!(&rendered.text, &person);
        prop_assert!(rendered.spans.is_empty());
    }
}
