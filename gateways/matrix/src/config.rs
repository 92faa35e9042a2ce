//! `[matrix]`: the assistant's Matrix account as the configuration file
//! describes it — its homeserver, its user, where its password or access
//! token is, who may talk to it and who may approve, and how it behaves in
//! rooms — and the checks on it serde cannot express.

use std::path::PathBuf;

use passepartout_gateway::GroupMode;
use serde::{Deserialize, Serialize};

/// The name the assistant's device is given when it logs in.
pub const DEFAULT_DEVICE_NAME: &str = "passepartout";
/// The environment variable the password is read from unless another
/// place is named.
pub const DEFAULT_PASSWORD_ENV: &str = "MATRIX_PASSWORD";

/// `[matrix]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MatrixSection {
    /// Whether the daemon runs the Matrix gateway.
    pub enabled: bool,
    /// The homeserver's address (`https://matrix.example.org`).
    pub homeserver: String,
    /// The assistant's own user id (`@assistant:example.org`).
    pub user: String,
    /// Environment variable holding the account's password, used to log in
    /// once; the session it gives is kept with the store.
    pub password_env: Option<String>,
    /// Or a file holding it; when set, it is used instead of `password_env`.
    pub password_file: Option<PathBuf>,
    /// Environment variable holding an access token of the account's,
    /// instead of a password.
    pub access_token_env: Option<String>,
    /// Or a file holding it (what `setup` writes, mode 0600).
    pub access_token_file: Option<PathBuf>,
    /// The device id the access token belongs to; when not set, the
    /// homeserver says (`whoami`).
    pub device_id: Option<String>,
    /// The name the assistant's device is shown under.
    pub device_name: String,
    /// User ids that may talk to the assistant; everyone else is refused,
    /// or paired.
    pub allowed_users: Vec<String>,
    /// Rooms (`!id:server`) where everyone in them may talk to it, besides
    /// direct chats.
    pub allowed_rooms: Vec<String>,
    /// User ids that may approve actions, in the room the prompt went to;
    /// when not set, `allowed_users`.
    pub approvers: Option<Vec<String>>,
    /// In rooms: `mention_or_reply` (only messages that mention the
    /// assistant or reply to it) or `all`.
    pub group_mode: GroupMode,
    /// Show a reply while it is written, as a message edited about once a
    /// second; when not set, `pipeline.stream`.
    pub stream: Option<bool>,
}

impl Default for MatrixSection {
    fn default() -> Self {
        Self {
            enabled: false,
            homeserver: String::new(),
            user: String::new(),
            password_env: None,
            password_file: None,
            access_token_env: None,
            access_token_file: None,
            device_id: None,
            device_name: DEFAULT_DEVICE_NAME.into(),
            allowed_users: Vec::new(),
            allowed_rooms: Vec::new(),
            approvers: None,
            group_mode: GroupMode::MentionOrReply,
            stream: None,
        }
    }
}

impl MatrixSection {
    /// Who may approve: `approvers`, else `allowed_users`.
    pub fn approver_ids(&self) -> &[String] {
        self.approvers.as_deref().unwrap_or(&self.allowed_users)
    }

    /// Whether the section names an access token rather than a password.
    pub fn uses_token(&self) -> bool {
        self.access_token_env.is_some() || self.access_token_file.is_some()
    }

    /// Every problem with the section, as sentences naming the key. Empty
    /// when valid. A value that may be a secret pasted in the wrong place
    /// is never repeated.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.enabled {
            self.account_problems(&mut problems);
            if self.allowed_users.is_empty() && self.allowed_rooms.is_empty() {
                problems.push(
                    "matrix.allowed_users (or allowed_rooms) is empty: nobody could talk to the assistant".into(),
                );
            }
        }
        for (key, list) in [
            ("matrix.allowed_users", &self.allowed_users),
            ("matrix.approvers", self.approvers.as_ref().unwrap_or(&Vec::new())),
        ] {
            for user in list.iter().filter(|user| !is_user_id(user)) {
                problems.push(format!("{key}: {user:?} is not a user id (@name:server)"));
            }
        }
        for room in self.allowed_rooms.iter().filter(|room| !is_room_id(room)) {
            problems.push(format!("matrix.allowed_rooms: {room:?} is not a room id (!id:server)"));
        }
        if self.device_name.trim().is_empty() || self.device_name.chars().any(char::is_control) {
            problems.push("matrix.device_name must be a name on one line".into());
        }
        problems
    }

    fn account_problems(&self, problems: &mut Vec<String>) {
        let homeserver = url::Url::parse(&self.homeserver);
        if !homeserver.is_ok_and(|url| matches!(url.scheme(), "http" | "https") && url.host().is_some()) {
            problems.push(format!(
                "matrix.homeserver must be the homeserver's http:// or https:// address, not {:?}",
                self.homeserver
            ));
        }
        if !is_user_id(&self.user) {
            problems.push(format!(
                "matrix.user must be the assistant's user id (@name:server), not {:?}",
                self.user
            ));
        }
        let password = self.password_env.is_some() || self.password_file.is_some();
        match (password, self.uses_token()) {
            (false, false) => problems.push(
                "matrix.password_env, password_file, access_token_env or access_token_file must say how the assistant logs in"
                    .into(),
            ),
            (true, true) => problems.push(
                "matrix: give a password (password_env, password_file) or an access token (access_token_env, \
                 access_token_file), not both"
                    .into(),
            ),
            _ => {}
        }
        for (key, name) in [
            ("password_env", &self.password_env),
            ("access_token_env", &self.access_token_env),
        ] {
            // Not quoted: a value that is no variable's name may be the secret itself.
            if name.as_deref().is_some_and(|name| !is_variable_name(name)) {
                problems.push(format!(
                    "matrix.{key} must name the environment variable holding the secret (letters, digits and _), \
                     not hold the secret itself"
                ));
            }
        }
    }
}

/// Whether `id` reads as a Matrix user id: `@localpart:server`.
pub fn is_user_id(id: &str) -> bool {
    id.strip_prefix('@')
        .and_then(|rest| rest.split_once(':'))
        .is_some_and(|(local, server)| !local.is_empty() && !server.is_empty() && !id.contains(char::is_whitespace))
}

/// Whether `id` reads as a Matrix room id: `!opaque:server`.
pub fn is_room_id(id: &str) -> bool {
    id.strip_prefix('!')
        .and_then(|rest| rest.split_once(':'))
        .is_some_and(|(opaque, server)| !opaque.is_empty() && !server.is_empty() && !id.contains(char::is_whitespace))
}

/// Whether `name` can be an environment variable's name as a shell sets one.
fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enabled() -> MatrixSection {
        MatrixSection {
            enabled: true,
            homeserver: "https://matrix.example.org".into(),
            user: "@assistant:example.org".into(),
            password_env: Some(DEFAULT_PASSWORD_ENV.into()),
            allowed_users: vec!["@ada:example.org".into()],
            ..MatrixSection::default()
        }
    }

    #[test]
    fn the_defaults_are_valid_and_a_working_section_has_no_problem() {
        assert!(MatrixSection::default().problems().is_empty());
        assert_eq!(enabled().problems(), Vec::<String>::new());
    }

    #[test]
    fn each_problem_names_its_key() {
        let section = MatrixSection {
            homeserver: "matrix.example.org".into(),
            user: "assistant".into(),
            password_env: None,
            allowed_users: vec!["ada".into()],
            allowed_rooms: vec!["#room:example.org".into()],
            approvers: Some(vec!["@bob".into()]),
            device_name: "two\nlines".into(),
            ..enabled()
        };
        let problems = section.problems();
        for expected in [
            "matrix.homeserver",
            "matrix.user must",
            "must say how the assistant logs in",
            "matrix.allowed_users: \"ada\"",
            "matrix.approvers: \"@bob\"",
            "matrix.allowed_rooms: \"#room:example.org\"",
            "matrix.device_name",
        ] {
            assert!(
                problems.iter().any(|p| p.contains(expected)),
                "{expected} missing from {problems:?}"
            );
        }
        let nobody = MatrixSection {
            allowed_users: Vec::new(),
            ..enabled()
        };
        assert!(nobody.problems().iter().any(|p| p.contains("nobody could talk")));
        let both = MatrixSection {
            access_token_file: Some("/t".into()),
            ..enabled()
        };
        assert!(both.problems().iter().any(|p| p.contains("not both")));
    }

    #[test]
    fn a_password_pasted_in_place_of_its_variable_is_refused_without_being_shown() {
        let section = MatrixSection {
            password_env: Some("hunter2 is secret!".into()),
            ..enabled()
        };
        let problems = section.problems();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("matrix.password_env must name"), "{problems:?}");
        assert!(!problems[0].contains("hunter2"), "{problems:?}");
    }

    #[test]
    fn ids_are_told_apart() {
        assert!(is_user_id("@ada:example.org") && is_user_id("@a:localhost:8448"));
        assert!(!is_user_id("ada:example.org") && !is_user_id("@ada") && !is_user_id("@:x") && !is_user_id("@a b:x"));
        assert!(is_room_id("!abc:example.org") && !is_room_id("#abc:example.org") && !is_room_id("!abc"));
    }

    #[test]
    fn approvers_default_to_the_allowed_users() {
        let mut section = enabled();
        assert_eq!(section.approver_ids(), ["@ada:example.org"]);
        section.approvers = Some(vec!["@bob:example.org".into()]);
        assert_eq!(section.approver_ids(), ["@bob:example.org"]);
    }
}
