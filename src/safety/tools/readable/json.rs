//! JSON pretty-printed for the model, keys in the order the server sent
//! them. One value per line, so a page of it cut at a line's end never
//! splits a token.

/// `text` pretty-printed, or why it is not JSON.
pub fn pretty(text: &str) -> Result<String, serde_json::Error> {
    let mut out = Vec::with_capacity(text.len() + text.len() / 2);
    let mut reader = serde_json::Deserializer::from_str(text);
    let mut writer = serde_json::Serializer::pretty(&mut out);
    serde_transcode::transcode(&mut reader, &mut writer)?;
    reader.end()?;
    // The serializer writes only valid UTF-8.
    Ok(String::from_utf8(out).unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_their_order_and_bad_json_is_an_error() {
        assert_eq!(
            pretty("{\"b\":1,\"a\":[true]}").unwrap(),
            "{\n  \"b\": 1,\n  \"a\": [\n    true\n  ]\n}"
        );
        assert!(pretty("{\"a\":").is_err());
        assert!(pretty("{} trailing").is_err());
    }
}
