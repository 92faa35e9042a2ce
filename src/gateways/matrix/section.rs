//! The `[matrix]` section as the wizard writes it: the homeserver, the
//! assistant's account and how it proves who it is (the access token of
//! the device setup logged in, or, when setup could not log in, the
//! password, by file or variable, never the secret itself), and the owner,
//! who may talk and approve.

use crate::config::interview::SecretRef;
use crate::config::interview::render::{path, quoted};

/// How the daemon logs in.
#[derive(Clone, Debug, PartialEq)]
pub enum Proof {
    /// The access token of the device setup logged in, and that device.
    Token { token: SecretRef, device_id: String },
    /// The password, for the daemon to log in with once.
    Password(SecretRef),
}

/// The `[matrix]` section's answers.
#[derive(Clone, Debug, PartialEq)]
pub struct MatrixAnswers {
    pub homeserver: String,
    pub user: String,
    pub proof: Proof,
    pub device_name: String,
    /// The owner's user id: allowed to talk, and the approver.
    pub owner: String,
}

/// The Matrix account's section.
pub fn render(answers: &MatrixAnswers) -> String {
    let proof = match &answers.proof {
        Proof::Token { token, device_id } => {
            let (key, place) = secret("access_token", token);
            format!(
                "# The access token of the assistant's device, which setup logged in once\n\
                 # ({place}).\n\
                 {key}\
                 # The device the token belongs to; its encryption keys are kept in the\n\
                 # data folder's matrix/.\n\
                 device_id = {}\n",
                quoted(device_id)
            )
        }
        Proof::Password(password) => {
            let (key, place) = secret("password", password);
            format!(
                "# The account's password ({place}); the daemon logs in once with it and\n\
                 # keeps the session in the data folder's matrix/.\n\
                 {key}"
            )
        }
    };
    format!(
        "# The assistant's Matrix account.\n\
         [matrix]\n\
         enabled = true\n\
         # The homeserver.\n\
         homeserver = {homeserver}\n\
         # The assistant's own user id.\n\
         user = {user}\n\
         {proof}\
         # The name its device is listed under.\n\
         device_name = {device_name}\n\
         # User ids that may talk to the assistant (in a direct chat, or a room\n\
         # they invite it to); anyone else's invitation is declined.\n\
         allowed_users = [{owner}]\n\
         # Who may approve the assistant's actions.\n\
         approvers = [{owner}]\n",
        homeserver = quoted(&answers.homeserver),
        user = quoted(&answers.user),
        device_name = quoted(&answers.device_name),
        owner = quoted(&answers.owner),
    )
}

/// The key naming `secret`'s place (`<name>_file` or `<name>_env`), and
/// that place in words.
fn secret(name: &str, secret: &SecretRef) -> (String, &'static str) {
    match secret {
        SecretRef::File(file) => (format!("{name}_file = {}\n", path(file)), "a file of mode 0600"),
        SecretRef::Env(variable) => (
            format!("{name}_env = {}\n", quoted(variable)),
            "an environment variable set where the daemon runs",
        ),
        SecretRef::None => unreachable!("an account always proves who it is"),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::interview::render::{assert_commented, document, loaded};

    fn answers(proof: Proof) -> MatrixAnswers {
        MatrixAnswers {
            homeserver: "https://matrix.example.org".into(),
            user: "@assistant:example.org".into(),
            proof,
            device_name: "passepartout".into(),
            owner: "@ada:example.org".into(),
        }
    }

    #[test]
    fn a_token_section_round_trips_with_the_owner_as_approver() {
        let text = document(&[render(&answers(Proof::Token {
            token: SecretRef::File("/etc/pp/matrix.token".into()),
            device_id: "ABCDEFGH".into(),
        }))]);
        assert_commented(&text);
        let config = loaded(&text);
        assert!(config.matrix.enabled);
        assert_eq!(config.matrix.allowed_users, ["@ada:example.org"]);
        assert_eq!(config.matrix.approver_ids(), ["@ada:example.org"]);
        assert_eq!(
            config.matrix.access_token_file.as_deref(),
            Some(Path::new("/etc/pp/matrix.token"))
        );
        assert_eq!(config.matrix.device_id.as_deref(), Some("ABCDEFGH"));
        assert!(config.matrix.problems().is_empty(), "{:?}", config.matrix.problems());
    }

    #[test]
    fn a_password_section_names_its_variable() {
        let text = document(&[render(&answers(Proof::Password(SecretRef::Env("MX_PASS".into()))))]);
        assert_commented(&text);
        let config = loaded(&text);
        assert_eq!(config.matrix.password_env.as_deref(), Some("MX_PASS"));
        assert!(!config.matrix.uses_token());
    }
}
