//! Message sizes in words, for the refusal of a message that is too large:
//! "messages are limited to 16 KB; this one is 5 MB".

/// `bytes` as a person reads it: "900 bytes", "16 KB", "5 MB" (units of
/// 1,024, rounded up so that an oversized message never reads as the limit).
pub fn in_words(bytes: u64) -> String {
    const KB: u64 = 1024;
    const MB: u64 = 1024 * KB;
    match bytes {
        0..KB => format!("{bytes} byte{}", if bytes == 1 { "" } else { "s" }),
        KB..MB => format!("{} KB", bytes.div_ceil(KB)),
        _ => format!("{} MB", bytes.div_ceil(MB)),
    }
}

/// The refusal of a message of `size` bytes where `limit` are allowed;
/// `at_least` when only a lower bound of its size is known (it was cut off
/// as it came in).
pub fn too_large(limit: u64, size: u64, at_least: bool) -> String {
    let more = if at_least { "over " } else { "" };
    let shown = if at_least { size.saturating_sub(1) } else { size };
    format!(
        "messages are limited to {}; this one is {more}{}",
        in_words(limit),
        in_words(shown.max(limit + 1))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_in_the_unit_that_fits_and_never_round_down_to_the_limit() {
        assert_eq!(in_words(1), "1 byte");
        assert_eq!(in_words(900), "900 bytes");
        assert_eq!(in_words(16 * 1024), "16 KB");
        assert_eq!(in_words(16 * 1024 + 1), "17 KB");
        assert_eq!(in_words(5 * 1024 * 1024), "5 MB");
        assert_eq!(
            too_large(16 * 1024, 5 * 1024 * 1024, false),
            "messages are limited to 16 KB; this one is 5 MB"
        );
        assert_eq!(
            too_large(16 * 1024, 16 * 1024 + 1, false),
            "messages are limited to 16 KB; this one is 17 KB"
        );
        assert_eq!(
            too_large(16 * 1024, 64 * 1024 + 1, true),
            "messages are limited to 16 KB; this one is over 64 KB"
        );
    }
}
