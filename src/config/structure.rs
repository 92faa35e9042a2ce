//! The structural check: every key known and every value of the right type,
//! all of it reported at once. Serde stops at the first problem, so the raw
//! settings tree (file and environment merged) is read again and again:
//! each time a problem is noted and the key at fault taken out, so that its
//! default stands in, until what is left reads. The semantic checks then run
//! on that, and [`Reading::hides`] drops what they say about keys already
//! reported, which would only be an echo.

use std::collections::HashMap;

use config::{Map, Value, ValueKind};

use super::Config;
use super::environment::FROM_ENVIRONMENT;
use super::key_path::{KeyPath, Segment};
use super::wording;

/// More problems than any file a person wrote; past this, the rest would be noise.
const MAX_PROBLEMS: usize = 200;

/// What the structural check made of the settings.
#[derive(Debug)]
pub struct Reading {
    /// The configuration without the keys at fault; `None` when a problem
    /// could not be set aside, so nothing after it could be read.
    pub config: Option<Config>,
    /// One sentence per problem, ordered by key.
    pub problems: Vec<String>,
    /// One sentence per variable that sets nothing; not problems: the
    /// environment holds variables for other purposes and versions too.
    pub warnings: Vec<String>,
    /// Keys taken out, as written in problems.
    taken_out: Vec<String>,
    /// Arrays that lost an entry: their later entries moved down, so what
    /// the semantic checks say about them by index would be misplaced.
    shortened: Vec<String>,
}

impl Reading {
    /// Whether a semantic problem is about a key the structural check took
    /// out (it saw the default, not what was written) or names an entry
    /// of a shortened array by its new index.
    pub fn hides(&self, problem: &str) -> bool {
        self.taken_out.iter().any(|key| mentions(problem, key))
            || self
                .shortened
                .iter()
                .any(|array| problem.contains(&format!("{array}[")))
    }
}

/// Reads `tree` into a [`Config`], noting every unknown key and every value
/// of the wrong type on the way.
pub fn read(mut tree: Map<String, Value>) -> Reading {
    let mut found: Vec<(String, String)> = Vec::new();
    let mut warnings = Vec::new();
    let mut taken_out = Vec::new();
    let mut removed = Removed::default();
    loop {
        let error = match Value::new(None, ValueKind::Table(tree.clone())).try_deserialize::<Config>() {
            Ok(config) => {
                found.sort();
                return Reading {
                    config: Some(config),
                    problems: found.into_iter().map(|(_, problem)| problem).collect(),
                    warnings,
                    taken_out,
                    shortened: removed.arrays(),
                };
            }
            Err(error) => error,
        };
        let fault = Fault::from(error);
        let here = fault.at();
        let written = removed.original(&here);
        let shown = written.to_string();
        let problem = fault.describe(&written, &tree);
        let missing_echo = matches!(fault, Fault::Missing { .. }) && taken_out.contains(&shown);
        let target = match fault {
            // A required key cannot be defaulted: the table holding it goes.
            Fault::Missing { .. } => here.split_last().map(|(parent, _)| parent).unwrap_or_default(),
            _ => here.clone(),
        };
        let unknown_variable =
            matches!(fault, Fault::Unknown { .. }) && here.find(&tree).is_some_and(wholly_from_environment);
        if unknown_variable {
            warnings.push(format!("{problem}; ignored"));
        } else if !missing_echo {
            found.push((shown.clone(), problem.clone()));
        }
        taken_out.push(shown);
        if let Some((array, Segment::Index(index))) = target.split_last() {
            removed.note(&array, removed.original_index(&array, *index));
        }
        if !target.remove(&mut tree) || found.len() >= MAX_PROBLEMS {
            // Nothing more can be learnt past this problem.
            found.sort();
            return Reading {
                config: None,
                problems: found.into_iter().map(|(_, problem)| problem).collect(),
                warnings,
                taken_out,
                shortened: removed.arrays(),
            };
        }
    }
}

/// Whether `problem` names `key` itself (not a longer key it starts).
fn mentions(problem: &str, key: &str) -> bool {
    problem.match_indices(key).any(|(at, _)| {
        let after = problem[at + key.len()..].chars().next();
        !matches!(after, Some(c) if c.is_alphanumeric() || c == '_')
    })
}

/// One problem the parser stopped at, with the path it gave.
enum Fault {
    Unknown {
        at: KeyPath,
        key: String,
        known: Vec<String>,
    },
    NotOneOf {
        at: KeyPath,
        enum_name: String,
    },
    WrongShapeForChoice {
        at: KeyPath,
        enum_name: String,
    },
    WrongType {
        at: KeyPath,
        expected: String,
        found: String,
    },
    Missing {
        at: KeyPath,
    },
    Other {
        at: KeyPath,
        message: String,
    },
}

impl From<config::ConfigError> for Fault {
    fn from(error: config::ConfigError) -> Self {
        match error {
            config::ConfigError::Type {
                unexpected,
                expected,
                key,
                ..
            } => Fault::WrongType {
                at: KeyPath::parse(key.as_deref().unwrap_or_default()),
                expected: expected.to_string(),
                found: unexpected.to_string(),
            },
            config::ConfigError::NotFound(key) => Fault::Missing {
                at: KeyPath::parse(&key),
            },
            config::ConfigError::At { error, key, .. } => {
                Fault::from_message(KeyPath::parse(key.as_deref().unwrap_or_default()), &error.to_string())
            }
            other => Fault::from_message(KeyPath::default(), &other.to_string()),
        }
    }
}

impl Fault {
    /// Reads the messages serde and the `config` crate write for a custom
    /// error; their wording is all there is to go on.
    fn from_message(at: KeyPath, message: &str) -> Self {
        if let Some(rest) = message.strip_prefix("unknown field `") {
            let mut quoted = rest.split('`').step_by(2);
            let key = quoted.next().unwrap_or_default().to_string();
            let known = quoted.map(str::to_string).filter(|k| !k.is_empty()).collect();
            return Fault::Unknown { at, key, known };
        }
        if let Some(rest) = message.strip_prefix("enum ")
            && let Some((name, _)) = rest.split_once(" does not have variant constructor ")
        {
            return Fault::NotOneOf {
                at,
                enum_name: name.to_string(),
            };
        }
        if let Some(rest) = message.strip_prefix("value of enum ")
            && let Some((name, _)) = rest.split_once(' ')
        {
            return Fault::WrongShapeForChoice {
                at,
                enum_name: name.to_string(),
            };
        }
        for prefix in ["invalid type: ", "invalid value: "] {
            if let Some(rest) = message.strip_prefix(prefix)
                && let Some((found, expected)) = rest.split_once(", expected ")
            {
                return Fault::WrongType {
                    at,
                    expected: expected.to_string(),
                    found: found.to_string(),
                };
            }
        }
        Fault::Other {
            at,
            message: message.to_string(),
        }
    }

    /// The key at fault, in the tree as it is now.
    fn at(&self) -> KeyPath {
        match self {
            Fault::Unknown { at, key, .. } => at.child(key),
            Fault::NotOneOf { at, .. }
            | Fault::WrongShapeForChoice { at, .. }
            | Fault::WrongType { at, .. }
            | Fault::Missing { at }
            | Fault::Other { at, .. } => at.clone(),
        }
    }

    /// The sentence for this problem; `written` is the key as the user
    /// wrote it (array indices before any entry was taken out).
    fn describe(&self, written: &KeyPath, tree: &Map<String, Value>) -> String {
        let here = self.at();
        let value = here.find(tree);
        let sentence = match self {
            Fault::Unknown { key, known, .. } => {
                let known: Vec<&str> = known.iter().map(String::as_str).collect();
                match wording::did_you_mean(key, &known) {
                    Some(near) => {
                        let near = written
                            .split_last()
                            .map(|(parent, _)| parent.child(near))
                            .unwrap_or_default();
                        format!("{written} is not a setting; did you mean {near}?")
                    }
                    None => format!("{written} is not a setting"),
                }
            }
            Fault::NotOneOf { enum_name, .. } => {
                let found = value.map(|v| v.to_string()).unwrap_or_default();
                format!("{written}: {}", wording::not_one_of(&found, enum_name))
            }
            Fault::WrongShapeForChoice { enum_name, .. } => {
                format!("{written}: {}", wording::expected_one_of(enum_name))
            }
            Fault::WrongType { expected, found, .. } => format!("{written}: {}", wording::wrong_type(expected, found)),
            Fault::Missing { .. } => format!("{written} is required"),
            Fault::Other { message, .. } if written.0.is_empty() => message.clone(),
            Fault::Other { message, .. } => format!("{written}: {message}"),
        };
        match value.filter(|v| from_environment(v)).and_then(|_| here.env_var()) {
            Some(variable) => format!("{variable}: {sentence}"),
            None => sentence,
        }
    }
}

/// Whether `value`, or anything in it, was set by an environment variable.
fn from_environment(value: &Value) -> bool {
    value.origin() == Some(FROM_ENVIRONMENT)
        || match &value.kind {
            ValueKind::Table(table) => table.values().any(from_environment),
            ValueKind::Array(array) => array.iter().any(from_environment),
            _ => false,
        }
}

/// Whether `value`, and everything in it, was set by environment variables.
/// (A table the variables' paths made has no origin of its own.)
fn wholly_from_environment(value: &Value) -> bool {
    match &value.kind {
        ValueKind::Table(table) if value.origin() != Some(FROM_ENVIRONMENT) => {
            !table.is_empty() && table.values().all(wholly_from_environment)
        }
        _ => value.origin() == Some(FROM_ENVIRONMENT),
    }
}

/// Array entries taken out so far, by the array's path, as indices in the
/// file; so later problems in the same array keep the index the user sees.
#[derive(Default)]
struct Removed(HashMap<String, Vec<usize>>);

impl Removed {
    fn note(&mut self, array: &KeyPath, original: usize) {
        let indices = self.0.entry(array.to_string()).or_default();
        indices.push(original);
        indices.sort_unstable();
    }

    /// The index in the file of what is now entry `index` of `array`.
    fn original_index(&self, array: &KeyPath, index: usize) -> usize {
        let mut original = index;
        for removed in self.0.get(&array.to_string()).into_iter().flatten() {
            if *removed <= original {
                original += 1;
            }
        }
        original
    }

    /// `path` with every index it crosses as it is in the file.
    fn original(&self, path: &KeyPath) -> KeyPath {
        let mut written = KeyPath::default();
        for segment in &path.0 {
            let segment = match segment {
                Segment::Index(index) => Segment::Index(self.original_index(&written, *index)),
                key => key.clone(),
            };
            written.0.push(segment);
        }
        written
    }

    fn arrays(&self) -> Vec<String> {
        self.0.keys().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_toml(text: &str) -> Reading {
        let merged = config::Config::builder()
            .add_source(config::File::from_str(text, config::FileFormat::Toml))
            .build()
            .unwrap();
        read(config::Source::collect(&merged).unwrap())
    }

    #[test]
    fn an_entry_taken_out_does_not_shift_the_index_of_later_problems() {
        let reading = read_toml(
            "[[loops.entries]]\nname = \"a\"\n[[loops.entries]]\nname = \"b\"\noutput = \"socket:x\"\nmesage = \"x\"\n",
        );
        assert_eq!(
            reading.problems,
            [
                "loops.entries[0].output is required",
                "loops.entries[1].mesage is not a setting; did you mean loops.entries[1].message?",
            ]
        );
        assert!(reading.hides("loops.entries[0].name \"a\" is used twice"));
        assert!(reading.config.is_some());
    }

    #[test]
    fn a_valid_tree_reads_with_no_problem() {
        let reading = read_toml("[pipeline]\nmax_depth = 3\n");
        assert!(reading.problems.is_empty());
        assert_eq!(reading.config.as_ref().unwrap().pipeline.max_depth, 3);
        assert!(!reading.hides("pipeline.max_depth must be at least 1"));
    }
}
