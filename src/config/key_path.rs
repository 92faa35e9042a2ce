//! Dotted key paths (`llm.providers[0].kind`) and the edits the structural
//! check makes to the raw settings tree: finding a key and taking it out.
//! The paths the `config` crate puts in its errors are read here too; they
//! drop the dot after an index (`llm.providers[0]kind`), which is why they
//! are parsed rather than shown as they come.

use std::fmt;

use config::{Map, Value, ValueKind};

/// One step of a path: a table key or an array index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Segment {
    Key(String),
    Index(usize),
}

/// Where a setting is, from the top of the configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyPath(pub Vec<Segment>);

impl KeyPath {
    /// Reads `a.b[2]c` or `a.b[2].c`; an empty string is the top.
    pub fn parse(text: &str) -> Self {
        let mut segments = Vec::new();
        let mut key = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '.' => flush(&mut key, &mut segments),
                '[' => {
                    flush(&mut key, &mut segments);
                    let mut digits = String::new();
                    for d in chars.by_ref() {
                        if d == ']' {
                            break;
                        }
                        digits.push(d);
                    }
                    match digits.parse() {
                        Ok(index) => segments.push(Segment::Index(index)),
                        Err(_) => segments.push(Segment::Key(format!("[{digits}]"))),
                    }
                }
                c => key.push(c),
            }
        }
        flush(&mut key, &mut segments);
        Self(segments)
    }

    /// This path with `key` added at the end.
    pub fn child(&self, key: &str) -> Self {
        let mut segments = self.0.clone();
        segments.push(Segment::Key(key.to_string()));
        Self(segments)
    }

    /// The path one step up, and the last step; `None` at the top.
    pub fn split_last(&self) -> Option<(KeyPath, &Segment)> {
        let (last, rest) = self.0.split_last()?;
        Some((KeyPath(rest.to_vec()), last))
    }

    /// The `PASSEPARTOUT_…` variable that sets this key, if one can: the
    /// environment cannot reach into arrays.
    pub fn env_var(&self) -> Option<String> {
        let keys: Option<Vec<String>> = self
            .0
            .iter()
            .map(|segment| match segment {
                Segment::Key(key) => Some(key.to_uppercase()),
                Segment::Index(_) => None,
            })
            .collect();
        Some(format!("PASSEPARTOUT_{}", keys?.join("__")))
    }

    /// The value at this path in `tree`, if there is one.
    pub fn find<'a>(&self, tree: &'a Map<String, Value>) -> Option<&'a Value> {
        let (first, rest) = self.0.split_first()?;
        let mut value = match first {
            Segment::Key(key) => tree.get(key)?,
            Segment::Index(_) => return None,
        };
        for segment in rest {
            value = match (segment, &value.kind) {
                (Segment::Key(key), ValueKind::Table(table)) => table.get(key)?,
                (Segment::Index(index), ValueKind::Array(array)) => array.get(*index)?,
                _ => return None,
            };
        }
        Some(value)
    }

    /// Takes the value at this path out of `tree`; false if there was none.
    /// An array entry taken out moves the ones after it down by one.
    pub fn remove(&self, tree: &mut Map<String, Value>) -> bool {
        let Some((parent, last)) = self.split_last() else {
            return false;
        };
        if parent.0.is_empty() {
            return match last {
                Segment::Key(key) => tree.remove(key).is_some(),
                Segment::Index(_) => false,
            };
        }
        let Some(container) = parent.find_mut(tree) else {
            return false;
        };
        match (last, &mut container.kind) {
            (Segment::Key(key), ValueKind::Table(table)) => table.remove(key).is_some(),
            (Segment::Index(index), ValueKind::Array(array)) if *index < array.len() => {
                array.remove(*index);
                true
            }
            _ => false,
        }
    }

    fn find_mut<'a>(&self, tree: &'a mut Map<String, Value>) -> Option<&'a mut Value> {
        let (first, rest) = self.0.split_first()?;
        let mut value = match first {
            Segment::Key(key) => tree.get_mut(key)?,
            Segment::Index(_) => return None,
        };
        for segment in rest {
            value = match (segment, &mut value.kind) {
                (Segment::Key(key), ValueKind::Table(table)) => table.get_mut(key)?,
                (Segment::Index(index), ValueKind::Array(array)) => array.get_mut(*index)?,
                _ => return None,
            };
        }
        Some(value)
    }
}

fn flush(key: &mut String, segments: &mut Vec<Segment>) {
    if !key.is_empty() {
        segments.push(Segment::Key(std::mem::take(key)));
    }
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (at, segment) in self.0.iter().enumerate() {
            match segment {
                Segment::Key(key) if at == 0 => write!(f, "{key}")?,
                Segment::Key(key) => write!(f, ".{key}")?,
                Segment::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crate_paths_without_a_dot_after_an_index_are_read() {
        let path = KeyPath::parse("llm.providers[0]kind");
        assert_eq!(path.to_string(), "llm.providers[0].kind");
        assert_eq!(
            KeyPath::parse("loops.entries[2].supervisor.model").to_string(),
            "loops.entries[2].supervisor.model"
        );
        assert_eq!(KeyPath::parse("").0, vec![]);
    }

    #[test]
    fn only_keys_outside_arrays_have_a_variable() {
        assert_eq!(
            KeyPath::parse("pipeline.max_depth").env_var().as_deref(),
            Some("PASSEPARTOUT_PIPELINE__MAX_DEPTH")
        );
        assert_eq!(KeyPath::parse("llm.providers[0].kind").env_var(), None);
    }
}
