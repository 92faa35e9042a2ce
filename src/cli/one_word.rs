//! A one-word answer typed in `chat` ("yes", "no", "always") replies to
//! the approval prompt shown last, in the plain chat and at a terminal alike.

/// "yes", "no", "approve", "always", "deny", "ok": what answers the prompt just shown.
pub(super) fn is_one_word_answer(line: &str) -> bool {
    let word = line.trim().trim_end_matches(['.', '!']).to_lowercase();
    matches!(
        word.as_str(),
        "approve" | "approved" | "yes" | "y" | "ok" | "okay" | "always" | "deny" | "denied" | "no" | "n" | "reject"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_word_answers_reply_to_the_prompt_just_shown() {
        for line in ["yes", "Always", " always! ", "no", "deny.", "ok"] {
            assert!(is_one_word_answer(line), "{line:?}");
        }
        for line in ["always remember the milk", "sure", "", "alwayss"] {
            assert!(!is_one_word_answer(line), "{line:?}");
        }
    }
}
