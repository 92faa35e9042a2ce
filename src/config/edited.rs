//! A configuration file edited as the dashboard shows it (masked, see
//! [`masked`]), made into the file to write: what the person changed
//! replaces what was there, a value left as shown (masked) keeps the file's
//! own, and whatever was not changed keeps its comments and layout, since
//! the edit is laid over the file rather than written in its place.
//!
//! Each value is compared with the one shown at the same place: unchanged,
//! the file's is kept (its secret, its comments); changed, the new one is
//! taken, unless it still holds the mask (a masked value changed in part
//! cannot be put back, and is refused, naming where).

use toml_edit::{Array, ArrayOfTables, DocumentMut, InlineTable, Item, Table, Value};

use super::masked::{self, MASK};

/// Why an edited file cannot be made into one to write.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EditError {
    /// The edited text is not TOML: where it stops being TOML.
    #[error("the edited file is not valid TOML: {0}")]
    NotToml(String),
    /// A value still holds the mask but is not the one shown there.
    #[error(
        "{0} still holds the mask {MASK} but was changed, or moved: a masked value is kept only where it was shown and as it was; give the whole value anew"
    )]
    MaskMoved(String),
    /// An entry of an array of tables holds the mask, but the file has no
    /// entry it can be matched with by name (new, renamed, or moved
    /// without a name): its secret is not known.
    #[error(
        "{0} holds the mask {MASK}, but the file has no entry of that name to take the secret from (the entry is new, renamed, or was moved or had another taken out before it without a name): type the secret again"
    )]
    MaskUnmatched(String),
}

/// `edited` (the masked file, edited) laid over `current` (the file).
/// `current` not being TOML leaves nothing to put back: `edited` is taken
/// as it is, unless it holds a mask.
pub fn edited(current: &str, edited: &str) -> Result<String, EditError> {
    let new: DocumentMut = edited
        .parse()
        .map_err(|error: toml_edit::TomlError| EditError::NotToml(place(&error)))?;
    let (Ok(mut file), Ok(shown)) = (
        current.parse::<DocumentMut>(),
        masked::masked(current).map(|m| m.text.parse::<DocumentMut>()),
    ) else {
        return match edited.contains(MASK) {
            true => Err(EditError::MaskMoved("the file".into())),
            false => Ok(edited.to_owned()),
        };
    };
    let shown = shown.map_err(|error| EditError::NotToml(place(&error)))?;
    lay_table(file.as_table_mut(), Some(shown.as_table()), new.as_table(), "")?;
    Ok(file.to_string())
}

/// Where the parser stopped, without the line it quotes (it may hold a
/// secret): `line 3, column 12`.
fn place(error: &toml_edit::TomlError) -> String {
    let message = error.to_string();
    let first = message.lines().next().unwrap_or_default();
    let reason = message.lines().last().unwrap_or_default().trim();
    format!("{} ({reason})", first.trim_start_matches("TOML parse error at ").trim())
}

fn path_of(within: &str, key: &str) -> String {
    match within.is_empty() {
        true => key.to_owned(),
        false => format!("{within}.{key}"),
    }
}

/// Lays the table `new` over `file`, `shown` being what was shown of it.
fn lay_table(file: &mut Table, shown: Option<&Table>, new: &Table, within: &str) -> Result<(), EditError> {
    let gone: Vec<String> = file
        .iter()
        .filter(|(key, _)| !new.contains_key(key))
        .map(|(key, _)| key.to_owned())
        .collect();
    for key in gone {
        file.remove(&key);
    }
    for (key, item) in new.iter() {
        let path = path_of(within, key);
        let shown_item = shown.and_then(|table| table.get(key));
        match (file.get_mut(key), item) {
            (Some(Item::Table(old)), Item::Table(table)) => {
                lay_table(old, shown_item.and_then(Item::as_table), table, &path)?;
            }
            (Some(Item::ArrayOfTables(old)), Item::ArrayOfTables(tables)) => {
                lay_tables(old, shown_item.and_then(Item::as_array_of_tables), tables, &path)?;
            }
            (Some(Item::Value(old)), Item::Value(value)) => {
                let laid = lay_value(Some(old), shown_item.and_then(Item::as_value), value, &path)?;
                *old = laid;
            }
            (_, item) => {
                unmasked(item, &path)?;
                file.insert(key, item.clone());
            }
        }
    }
    Ok(())
}

fn lay_tables(
    file: &mut ArrayOfTables,
    shown: Option<&ArrayOfTables>,
    new: &ArrayOfTables,
    within: &str,
) -> Result<(), EditError> {
    if names(file.iter()) != names(new.iter()) {
        return lay_moved_tables(file, shown, new, within);
    }
    for (index, table) in new.iter().enumerate() {
        let path = format!("{within}[{index}]");
        match file.get_mut(index) {
            Some(old) => lay_table(old, shown.and_then(|s| s.get(index)), table, &path)?,
            None => {
                unmasked(&Item::Table(table.clone()), &path)?;
                file.push(table.clone());
            }
        }
    }
    Ok(())
}

/// The entries of an array of tables were added, taken out or moved: each
/// is laid over the file's entry of the same `name`, never over another
/// by its place. One with no such entry in the file (new, renamed, or
/// without a name) has no secret to put back, so a mask in it is refused.
/// The entries keep the file's places in the document, in the new order.
fn lay_moved_tables(
    file: &mut ArrayOfTables,
    shown: Option<&ArrayOfTables>,
    new: &ArrayOfTables,
    within: &str,
) -> Result<(), EditError> {
    let old_names = names(file.iter());
    let mut laid = ArrayOfTables::new();
    for (index, table) in new.iter().enumerate() {
        let path = format!("{within}[{index}]");
        let name = name(table);
        let found = name.and_then(|name| {
            let mut same = (0..old_names.len()).filter(|&at| old_names[at] == Some(name));
            same.next().filter(|_| same.next().is_none())
        });
        let mut entry = match found.and_then(|at| file.get(at).map(|old| (at, old.clone()))) {
            Some((at, mut old)) => {
                lay_table(&mut old, shown.and_then(|s| s.get(at)), table, &path)?;
                old
            }
            None => {
                if Item::Table(table.clone()).to_string().contains(MASK) {
                    return Err(EditError::MaskUnmatched(match name {
                        Some(name) => format!("{path} (name = {name:?})"),
                        None => path,
                    }));
                }
                table.clone()
            }
        };
        entry.set_position(file.get(index).and_then(Table::position));
        laid.push(entry);
    }
    *file = laid;
    Ok(())
}

/// The `name` of each entry of an array of tables, by which an entry is
/// known wherever it stands.
fn names<'a>(tables: impl Iterator<Item = &'a Table>) -> Vec<Option<&'a str>> {
    tables.map(name).collect()
}

fn name(table: &Table) -> Option<&str> {
    table.get("name").and_then(Item::as_str)
}

/// The value to write at `path`: the file's when `new` is what was shown
/// there, else `new` (with the file's comments around it), which must not
/// hold the mask where it was changed.
fn lay_value(file: Option<&Value>, shown: Option<&Value>, new: &Value, path: &str) -> Result<Value, EditError> {
    if let (Some(file), Some(shown)) = (file, shown)
        && same(shown, new)
    {
        return Ok(file.clone());
    }
    let mut laid = match new {
        Value::Array(array) => {
            let file = file.and_then(Value::as_array);
            let shown = shown.and_then(Value::as_array);
            let mut laid = Array::new();
            for (index, element) in array.iter().enumerate() {
                let path = format!("{path}[{index}]");
                laid.push_formatted(lay_value(
                    file.and_then(|a| a.get(index)),
                    shown.and_then(|a| a.get(index)),
                    element,
                    &path,
                )?);
            }
            laid.set_trailing(array.trailing().as_str().unwrap_or(""));
            laid.set_trailing_comma(array.trailing_comma());
            Value::Array(laid)
        }
        Value::InlineTable(table) => {
            let file = file.and_then(Value::as_inline_table);
            let shown = shown.and_then(Value::as_inline_table);
            let mut laid = InlineTable::new();
            for (key, inner) in table.iter() {
                let value = lay_value(
                    file.and_then(|t| t.get(key)),
                    shown.and_then(|t| t.get(key)),
                    inner,
                    &path_of(path, key),
                )?;
                laid.insert(key, value);
            }
            Value::InlineTable(laid)
        }
        Value::String(text) if text.value().contains(MASK) => return Err(EditError::MaskMoved(path.to_owned())),
        other => other.clone(),
    };
    match file {
        Some(file) => *laid.decor_mut() = file.decor().clone(),
        None => *laid.decor_mut() = new.decor().clone(),
    }
    Ok(laid)
}

/// Refuses a new item holding the mask: there is nothing to put back.
fn unmasked(item: &Item, path: &str) -> Result<(), EditError> {
    match item.to_string().contains(MASK) {
        true => Err(EditError::MaskMoved(path.to_owned())),
        false => Ok(()),
    }
}

/// Whether two values are equal, their comments and layout aside.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::String(a), Value::String(b)) => a.value() == b.value(),
        (Value::Integer(a), Value::Integer(b)) => a.value() == b.value(),
        (Value::Float(a), Value::Float(b)) => a.value().to_bits() == b.value().to_bits(),
        (Value::Boolean(a), Value::Boolean(b)) => a.value() == b.value(),
        (Value::Datetime(a), Value::Datetime(b)) => a.value() == b.value(),
        (Value::Array(a), Value::Array(b)) => a.len() == b.len() && a.iter().zip(b.iter()).all(|(a, b)| same(a, b)),
        (Value::InlineTable(a), Value::InlineTable(b)) => {
            a.len() == b.len() && a.iter().all(|(key, a)| b.get(key).is_some_and(|b| same(a, b)))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"# my assistant
[telegram]
enabled = true # on
token_file = "/etc/pp/telegram.token"
allowed_users = [1]

[[llm.providers]]
name = "main"
base_url = "https://user:hunter22pass@proxy.example/v1"
api_key = "sk-live-0123456789"

[mcp.servers.github]
command = "npx"
args = ["server", "--token", "ghp_abcdefghijkl"]
"#;

    fn shown() -> String {
        masked::masked(FILE).unwrap().text
    }

    #[test]
    fn the_file_shown_and_saved_unchanged_is_the_file() {
        assert_eq!(edited(FILE, &shown()).unwrap(), FILE);
    }

    #[test]
    fn a_masked_value_left_as_shown_keeps_the_secret_and_a_new_one_replaces_it() {
        let text = shown().replace("allowed_users = [1]", "allowed_users = [1, 2]");
        let written = edited(FILE, &text).unwrap();
        assert!(written.contains("allowed_users = [1, 2]"), "{written}");
        assert!(
            written.contains("sk-live-0123456789") && written.contains("ghp_abcdefghijkl"),
            "{written}"
        );
        assert!(
            written.contains("# my assistant") && written.contains("# on"),
            "comments kept: {written}"
        );
        let text = shown().replacen(&format!("api_key = \"{MASK}\""), "api_key = \"sk-new\"", 1);
        let written = edited(FILE, &text).unwrap();
        assert!(
            written.contains("api_key = \"sk-new\"") && !written.contains("sk-live"),
            "{written}"
        );
        assert!(
            written.contains("hunter22pass"),
            "the URL's credentials kept: {written}"
        );
    }

    #[test]
    fn a_mask_changed_in_part_or_moved_is_refused_by_its_place() {
        let text = shown().replace("@proxy.example", "@other.example");
        assert_eq!(
            edited(FILE, &text),
            Err(EditError::MaskMoved("llm.providers[0].base_url".into()))
        );
        let text = format!("{}\n[web]\npublic_url = \"{MASK}\"\n", shown());
        assert_eq!(edited(FILE, &text), Err(EditError::MaskMoved("web".into())));
    }

    const PROVIDERS: &str = r#"[[llm.providers]]
name = "a"
base_url = "https://a.example/v1"
api_key = "sk-a-0123456789"

[[llm.providers]]
name = "b"
base_url = "https://b.example/v1"
api_key = "sk-b-0123456789"
"#;

    /// The blocks of the providers shown, each from its `[[` on.
    fn providers_shown() -> (String, String) {
        let shown = masked::masked(PROVIDERS).unwrap().text;
        let at = shown.rfind("[[llm.providers]]").unwrap();
        (shown[..at].to_owned(), shown[at..].to_owned())
    }

    /// Each provider's key, by its name, in the written file.
    fn keys(written: &str) -> Vec<(String, String)> {
        let document: DocumentMut = written.parse().unwrap();
        document["llm"]["providers"]
            .as_array_of_tables()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p["name"].as_str().unwrap().to_owned(),
                    p["api_key"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    }

    #[test]
    fn providers_swapped_keep_each_its_own_key() {
        let (a, b) = providers_shown();
        let written = edited(PROVIDERS, &format!("{}\n{}", b.trim_end(), a.trim_end())).unwrap();
        assert_eq!(
            keys(&written),
            [
                ("b".into(), "sk-b-0123456789".into()),
                ("a".into(), "sk-a-0123456789".into())
            ],
            "{written}"
        );
        assert!(
            written.find("https://b.example") < written.find("https://a.example"),
            "{written}"
        );
    }

    #[test]
    fn the_first_provider_taken_out_leaves_the_second_its_key() {
        let (_, b) = providers_shown();
        let written = edited(PROVIDERS, &b).unwrap();
        assert_eq!(keys(&written), [("b".into(), "sk-b-0123456789".into())], "{written}");
        assert!(
            written.contains("https://b.example") && !written.contains("sk-a"),
            "{written}"
        );
    }

    #[test]
    fn a_new_or_renamed_provider_holding_the_mask_is_refused() {
        let (a, b) = providers_shown();
        let added = b.replace("name = \"b\"", "name = \"c\"");
        let text = format!("{a}{b}\n{added}");
        assert_eq!(
            edited(PROVIDERS, &text),
            Err(EditError::MaskUnmatched("llm.providers[2] (name = \"c\")".into()))
        );
        let text = format!("{a}\n{added}");
        let error = edited(PROVIDERS, &text).unwrap_err();
        assert_eq!(
            error,
            EditError::MaskUnmatched("llm.providers[1] (name = \"c\")".into())
        );
        assert!(error.to_string().contains("type the secret again"), "{error}");
        let unnamed = b.replace("name = \"b\"\n", "");
        assert_eq!(
            edited(PROVIDERS, &unnamed),
            Err(EditError::MaskUnmatched("llm.providers[0]".into()))
        );
    }

    #[test]
    fn keys_taken_out_are_gone_and_bad_toml_says_where_without_quoting() {
        let text = shown().replace("allowed_users = [1]\n", "");
        assert!(!edited(FILE, &text).unwrap().contains("allowed_users"));
        let error = edited(FILE, "[web\nsecret = \"sk-typed\"").unwrap_err();
        let EditError::NotToml(place) = &error else {
            panic!("{error:?}")
        };
        assert!(place.contains("line 1"), "{place}");
        assert!(!error.to_string().contains("sk-typed"), "{error}");
    }
}
