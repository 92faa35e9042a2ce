//! A gateway as the daemon sees it: the worked example of ARCHITECTURE.md,
//! compiled with the tests so that it cannot drift from the code.
//!
//! A gateway crate implements the contract's `Listen` and `Deliver` (here a
//! "notes" gateway that takes nothing in and prints what it is given); its
//! component, in `src/gateways/`, says who may talk and approve through it,
//! builds it, checks it for `doctor`, and says what the core must know of it
//! besides: its section's problems, the settings a reload applies live, the
//! files it takes. `cargo run --example gateway_component` prints what the
//! daemon would learn of it.

use std::sync::Arc;

use async_trait::async_trait;
use passepartout::foundation::checkup::{Check, Level};
use passepartout::gateways::{
    BuildContext, BuildError, Built, Checked, GatewayComponent, Roster, SecretPlaces, Upload,
};
use passepartout_gateway::{
    Deliver, Delivered, GatewayError, GatewayId, Intake, Listen, Outbound, OutboundBody, Surface,
};
use tokio_util::sync::CancellationToken;

/// The gateway's `[notes]` section, as its crate's `config.rs` would define it.
#[derive(Clone, Debug, Default)]
pub struct NotesConfig {
    pub enabled: bool,
    pub allowed_users: Vec<String>,
}

/// The running gateway: its crate's half, which never sees the core.
pub struct NotesGateway;

#[async_trait]
impl Listen for NotesGateway {
    fn id(&self) -> GatewayId {
        GatewayId::new("notes").expect("valid id")
    }

    async fn listen(&self, _intake: Intake, shutdown: CancellationToken) -> Result<(), GatewayError> {
        // A real gateway polls its platform here and hands each update to
        // the intake, advancing its cursor only once the intake took it.
        shutdown.cancelled().await;
        Ok(())
    }
}

#[async_trait]
impl Deliver for NotesGateway {
    async fn deliver(&self, message: &Outbound) -> Result<Delivered, GatewayError> {
        if let OutboundBody::Text { text, .. } = &message.body {
            println!("{}: {text}", message.conversation);
        }
        Ok(Delivered {
            message_ids: Vec::new(),
        })
    }
}

// ANCHOR: component
pub struct Notes {
    section: NotesConfig,
}

#[async_trait]
impl GatewayComponent for Notes {
    fn id(&self) -> GatewayId {
        GatewayId::new("notes").expect("valid id")
    }
    fn enabled(&self) -> bool {
        self.section.enabled
    }
    fn talkers(&self) -> Roster {
        Roster::Listed {
            users: self.section.allowed_users.clone(),
            chats: vec![],
        }
    }
    fn deciders(&self) -> Roster {
        Roster::Listed {
            users: self.section.allowed_users.clone(),
            chats: vec![],
        }
    }
    fn surface(&self) -> Surface {
        // Plain text only: no buttons, replies or reactions to answer with.
        Surface::TEXT
    }
    fn secrets(&self) -> SecretPlaces {
        // A token in a variable or a file would be named here
        // (`.named(env, file)`): the sandbox keeps its file out of reach
        // and what the daemon shows leaves its value out.
        SecretPlaces::default()
    }
    fn name(&self) -> String {
        // As people read it: "**Ada** (the notes): …" in a bridge's copies.
        "the notes".to_owned()
    }
    async fn build(&self, _with: &BuildContext) -> Result<Built, BuildError> {
        let gateway = Arc::new(NotesGateway);
        Ok(Built {
            listen: gateway.clone(),
            deliver: gateway,
            fetch: None,
            local_path: None,
            draft: None,
        })
    }
    async fn check(&self) -> Option<Checked> {
        Some(Check::new("notes", Level::Ok, "prints what it is given", None).into())
    }
    fn problems(&self) -> Vec<String> {
        // Usually its crate's section type checks itself; `check-config`
        // and a reload show what it finds.
        let nobody = self.section.enabled && self.section.allowed_users.is_empty();
        let problem = "notes.allowed_users is empty: nobody could talk";
        nobody.then(|| problem.to_owned()).into_iter().collect()
    }
    fn live_keys(&self) -> Vec<&'static str> {
        // A reload applies a change to who may talk at once; any other
        // change to `[notes]` waits for a restart.
        vec!["notes.allowed_users"]
    }
    fn upload(&self) -> Upload {
        Upload {
            max_bytes: 1024 * 1024,
            platform: "the notes",
            copied: true,
        }
    }
    // Not needed here, so left to their defaults: `start_problems` (a
    // secret it names but cannot read), `handoff_word` (its id) and
    // `bridges` (none of its chats may be bridged).
}
// ANCHOR_END: component

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let notes = Notes {
        section: NotesConfig {
            enabled: true,
            allowed_users: vec!["ada".into()],
        },
    };
    if let Some(checked) = notes.check().await {
        println!("{}", checked.check);
    }
    println!("{} talkers: {:?}", notes.id(), notes.talkers());
    println!("live on reload: {:?}", notes.live_keys());
}
