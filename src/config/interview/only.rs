//! `setup --only PART`: one part of an existing configuration file asked
//! for again and put in place of the old one, everything else of the file
//! kept byte for byte — comments, order, other sections.
//!
//! Each step says what `--only` calls it and where its part stands
//! ([`Only`]), so `--only` takes the names of the steps there are. The file
//! is edited through `toml_edit`, as `signal link --write` does: a step's
//! own table (`[telegram]`, `[signal]`) is replaced whole where it stands
//! (added at the end when missing); for the model, the first
//! `[[llm.providers]]` entry, the one asked first, is replaced, the others
//! kept (one of the same name as the new entry removed, since names are
//! unique).

use std::path::{Path, PathBuf};

use thiserror::Error;
use toml_edit::{ArrayOfTables, DocumentMut, Item, Table};

/// What `--only` calls a step's part, and where the part stands in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Only {
    /// Its name, as `--only` takes it.
    pub name: &'static str,
    /// What it is, for `--help`.
    pub about: &'static str,
    pub place: Place,
}

/// Where a part stands in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// A table of its own, by its key (`telegram`).
    Table(&'static str),
    /// The first `[[llm.providers]]` entry.
    FirstProvider,
}

/// Why the part could not be put in the file.
#[derive(Debug, Error)]
pub enum OnlyError {
    #[error("{} does not exist: run `passepartout setup` without --only to write one", path.display())]
    Missing { path: PathBuf },
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{} is not TOML ({reason}): fix it, or write it anew with `passepartout setup --force`", path.display())]
    Parse { path: PathBuf, reason: String },
    #[error("`{key}` in {} is not a table: fix it by hand", path.display())]
    NotATable { path: PathBuf, key: &'static str },
}

/// The text of the file at `path`, which `--only` changes.
pub fn existing(path: &Path) -> Result<String, OnlyError> {
    std::fs::read_to_string(path).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => OnlyError::Missing {
            path: path.to_path_buf(),
        },
        _ => OnlyError::Read {
            path: path.to_path_buf(),
            source,
        },
    })
}

/// `old` (the file at `path`) with the part at `place` replaced by
/// `section`, a step's rendered section.
pub fn replace(old: &str, path: &Path, place: Place, section: &str) -> Result<String, OnlyError> {
    let mut document: DocumentMut = old.parse().map_err(|error: toml_edit::TomlError| OnlyError::Parse {
        path: path.to_path_buf(),
        reason: error.message().to_owned(),
    })?;
    let new: DocumentMut = section.parse().expect("a step renders TOML");
    let not_a_table = |key| OnlyError::NotATable {
        path: path.to_path_buf(),
        key,
    };
    match place {
        Place::Table(key) => {
            let mut table = new
                .get(key)
                .and_then(Item::as_table)
                .cloned()
                .expect("the step renders its table");
            match document.get(key) {
                Some(Item::Table(old)) => table.set_position(old.position()),
                Some(Item::None) | None => table.set_position(None),
                Some(_) => return Err(not_a_table(key)),
            }
            spaced(&mut table);
            document.insert(key, Item::Table(table));
        }
        Place::FirstProvider => {
            let mut entry = new["llm"]["providers"]
                .as_array_of_tables()
                .and_then(|entries| entries.get(0))
                .cloned()
                .expect("the step renders one provider");
            let llm = document
                .entry("llm")
                .or_insert_with(|| {
                    let mut table = Table::new();
                    table.set_implicit(true);
                    Item::Table(table)
                })
                .as_table_mut()
                .ok_or_else(|| not_a_table("llm"))?;
            let providers = llm
                .entry("providers")
                .or_insert_with(|| Item::ArrayOfTables(ArrayOfTables::new()))
                .as_array_of_tables_mut()
                .ok_or_else(|| not_a_table("llm.providers"))?;
            put_first(providers, &mut entry);
        }
    }
    Ok(document.to_string())
}

/// Puts `entry` in place of the first of `providers`, and removes another
/// of its name.
fn put_first(providers: &mut ArrayOfTables, entry: &mut Table) {
    let name = entry.get("name").and_then(Item::as_str).map(str::to_owned);
    spaced(entry);
    let Some(first) = providers.get_mut(0) else {
        entry.set_position(None);
        providers.push(entry.clone());
        return;
    };
    entry.set_position(first.position());
    *first = entry.clone();
    let same = (1..providers.len())
        .rev()
        .filter(|index| providers.get(*index).and_then(|t| t.get("name")).and_then(Item::as_str) == name.as_deref())
        .collect::<Vec<_>>();
    for index in same {
        providers.remove(index);
    }
}

/// A blank line above the section's comment, as between the sections
/// `setup` writes.
fn spaced(table: &mut Table) {
    let comment = table
        .decor()
        .prefix()
        .and_then(|prefix| prefix.as_str())
        .unwrap_or_default()
        .trim_start_matches('\n')
        .to_owned();
    table.decor_mut().set_prefix(format!("\n{comment}"));
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = "# mine, kept\ndata_dir = \"/srv/pp\"   # and this\n\n\
                       [[llm.providers]]\nname = \"local\"\nmodel = \"llama3.2\"\n\n\
                       [[llm.providers]]\nname = \"backup\"   # second\nmodel = \"qwen\"\n\n\
                       # the bot\n[telegram]\nenabled = true\ntoken_env = \"OLD\"\nallowed_users = [1]\n\n\
                       [pipeline]\nmax_depth = 7 # deep\n";

    fn replaced(place: Place, section: &str) -> String {
        replace(OLD, Path::new("c.toml"), place, section).unwrap()
    }

    #[test]
    fn the_telegram_section_is_replaced_where_it_stands_and_the_rest_kept() {
        let new = replaced(
            Place::Table("telegram"),
            "# The Telegram bot.\n[telegram]\nenabled = true\ntoken_file = \"/t\"\nallowed_users = [42]\n",
        );
        let (before, after) = OLD.split_once("# the bot\n").unwrap();
        let after = &after[after.find("[pipeline]").unwrap()..];
        assert!(new.starts_with(before), "{new}");
        assert!(new.ends_with(after), "{new}");
        assert!(
            new.contains("# The Telegram bot.\n[telegram]\nenabled = true\ntoken_file = \"/t\"\n"),
            "{new}"
        );
        assert!(!new.contains("OLD"), "{new}");
    }

    #[test]
    fn a_missing_section_is_added_at_the_end() {
        let new = replaced(
            Place::Table("signal"),
            "# Signal.\n[signal]\nenabled = true\naccount = \"+1555\"\nnote_to_self = true\n",
        );
        assert!(new.starts_with(OLD), "{new}");
        assert!(
            new.ends_with("\n# Signal.\n[signal]\nenabled = true\naccount = \"+1555\"\nnote_to_self = true\n"),
            "{new}"
        );
    }

    #[test]
    fn the_model_replaces_the_first_provider_and_keeps_the_others() {
        let new = replaced(
            Place::FirstProvider,
            "# The model.\n[[llm.providers]]\nname = \"anthropic\"\nkind = \"anthropic\"\n",
        );
        assert!(new.contains("[[llm.providers]]\nname = \"anthropic\""), "{new}");
        assert!(!new.contains("llama3.2"), "{new}");
        assert!(
            new.contains("[[llm.providers]]\nname = \"backup\"   # second\n"),
            "{new}"
        );
        assert!(new.find("anthropic").unwrap() < new.find("backup").unwrap(), "{new}");
        assert!(
            new.starts_with("# mine, kept\ndata_dir = \"/srv/pp\"   # and this\n"),
            "{new}"
        );

        // A new entry named as the second: that one goes, the names stay unique.
        let new = replaced(
            Place::FirstProvider,
            "[[llm.providers]]\nname = \"backup\"\nmodel = \"m2\"\n",
        );
        assert_eq!(new.matches("name = \"backup\"").count(), 1, "{new}");
        assert!(!new.contains("qwen"), "{new}");
    }

    #[test]
    fn a_file_without_providers_gets_one_and_a_broken_file_is_refused() {
        let new = replace(
            "[pipeline]\nmax_depth = 3\n",
            Path::new("c.toml"),
            Place::FirstProvider,
            "[[llm.providers]]\nname = \"x\"\n",
        )
        .unwrap();
        assert!(new.starts_with("[pipeline]\nmax_depth = 3\n"), "{new}");
        assert!(new.contains("[[llm.providers]]\nname = \"x\""), "{new}");
        let refused = replace(
            "[pipeline\n",
            Path::new("c.toml"),
            Place::FirstProvider,
            "[[llm.providers]]\nname = \"x\"\n",
        );
        assert!(matches!(refused, Err(OnlyError::Parse { .. })));
        let refused = replace(
            "telegram = 3\n",
            Path::new("c.toml"),
            Place::Table("telegram"),
            "[telegram]\nenabled = true\n",
        );
        assert!(matches!(refused, Err(OnlyError::NotATable { .. })));
    }
}
