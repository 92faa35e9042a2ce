//! An approval as the store keeps it: the exact action, who asked and where,
//! who may decide, when it expires, and what became of it. The approvals
//! desk gives it its life; this is only its form.

use passepartout_gateway::{ApprovalToken, ConversationKey, GatewayId, Inbound, MessageId, Sender, UserId, names};
use serde::{Deserialize, Serialize};

use super::call::ProposedCall;

/// A request for a person's approval of one tool call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Approval {
    /// Increasing with creation; orders listings.
    pub id: u64,
    /// What a person answers with; unique, single-use.
    pub token: ApprovalToken,
    /// Where the action was proposed, and where its outcome is told.
    pub conversation: ConversationKey,
    /// Who sent the message whose turn proposed it.
    pub requester: UserId,
    /// What the requester's platform calls them, to show them by.
    #[serde(default, skip_serializing_if = "Names::is_empty")]
    pub requester_names: Names,
    /// That message.
    pub message_id: MessageId,
    /// The exact call that runs once approved.
    pub call: ProposedCall,
    /// Which skill asked for approval, and why.
    pub skill: String,
    pub reason: String,
    /// How the models voted on it, when they did (`[skills.consensus]`),
    /// as the prompt shows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub votes: Option<String>,
    /// Who may decide, fixed when the approval is created.
    pub approvers: Vec<Approver>,
    pub created_ms: u64,
    pub expires_ms: u64,
    pub status: Status,
    /// Who decided, how and when; none while pending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    /// For an approved action: whether it ran.
    #[serde(default)]
    pub run: RunState,
    /// Where the prompt was delivered (platform message ids), to edit it
    /// once decided.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompts: Vec<MessageId>,
    /// Whether the reminder before its timeout was sent (once, across restarts).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reminded: bool,
    /// What the run returned (or its error), kept until the model was told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// Whether the outcome has entered the conversation (the model was told,
    /// or the person was); until then the daemon owes it, across restarts.
    #[serde(default)]
    pub settled: bool,
}

impl Approval {
    pub fn is_pending(&self) -> bool {
        self.status == Status::Pending
    }

    /// The action as a person reads it.
    pub fn action(&self) -> String {
        self.call.summary()
    }
}

/// Where an approval is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pending,
    Approved,
    Denied,
    /// Nobody answered in time.
    Expired,
    /// The requester withdrew it.
    Cancelled,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Approved => "approved",
            Status::Denied => "denied",
            Status::Expired => "timed out",
            Status::Cancelled => "cancelled",
        }
    }
}

/// Whether an approved action ran. `Started` is made durable before the tool
/// starts, so a crash while it runs is never followed by a second run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum RunState {
    #[default]
    NotStarted,
    Started {
        at_ms: u64,
    },
    Finished {
        at_ms: u64,
        is_error: bool,
    },
    /// The daemon stopped while it ran: it may or may not have finished,
    /// and it is not run again.
    Interrupted,
}

/// Who may decide: people of one gateway (all of its users when `user` is
/// none — a gateway that vouches for its peers itself), in the
/// prompt's conversation or, when `anywhere`, in any.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approver {
    pub gateway: GatewayId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<UserId>,
    #[serde(default)]
    pub anywhere: bool,
}

impl std::fmt::Display for Approver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.user {
            Some(user) => write!(f, "{}:{}", self.gateway, user.as_str())?,
            None => write!(f, "{}:*", self.gateway)?,
        }
        if self.anywhere {
            write!(f, " (anywhere)")?;
        }
        Ok(())
    }
}

/// Someone who answered: a person on a gateway.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Person {
    pub gateway: GatewayId,
    pub user: UserId,
    /// The other ids the gateway knows them by (a Signal number).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<UserId>,
    /// What they were called when they answered, to show them by later.
    #[serde(flatten)]
    pub names: Names,
}

/// A person's name and username as their platform gave them (cleaned by
/// [`names`]), kept to show them by; never used to decide anything.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Names {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
}

impl Names {
    /// What `sender`'s platform calls them, cleaned again here: the record
    /// keeps nothing a gateway let through by mistake.
    pub fn of(sender: &Sender) -> Self {
        Self {
            name: sender.display_name.as_deref().and_then(names::clean_name),
            username: sender.username.as_deref().and_then(names::clean_username),
        }
    }

    /// Whether the platform gave neither.
    pub fn is_empty(&self) -> bool {
        self.name.is_none() && self.username.is_none()
    }
}

impl Person {
    /// The sender of `inbound`.
    pub fn of(inbound: &Inbound) -> Self {
        Self {
            gateway: inbound.conversation.gateway.clone(),
            user: inbound.sender.id.clone(),
            aliases: inbound.sender.aliases.clone(),
            names: Names::of(&inbound.sender),
        }
    }

    /// `user` on `gateway`, known by no other id.
    pub fn known_as(gateway: GatewayId, user: UserId) -> Self {
        Self {
            gateway,
            user,
            aliases: Vec::new(),
            names: Names::default(),
        }
    }

    /// Whether `user` is this person's id or one of their aliases.
    pub fn is(&self, user: &UserId) -> bool {
        self.user == *user || self.aliases.contains(user)
    }
}

/// `gateway:user`: the person's id, as logs and keys name them (never their name).
impl std::fmt::Display for Person {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.gateway, self.user.as_str())
    }
}

/// A decision on an approval.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    pub outcome: Status,
    /// Who decided; none when the timer did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<Person>,
    pub how: How,
    pub at_ms: u64,
    /// The message that carried the answer, so the same message redone
    /// after a crash is recognized as the winner rather than a late second answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<(ConversationKey, MessageId)>,
}

/// How an answer was given.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum How {
    /// A reply to the prompt: approve / yes / ok, deny / no.
    Reply,
    /// `approve TOKEN` / `deny TOKEN`.
    Token,
    /// `/approve TOKEN` / `/deny TOKEN`.
    Command,
    /// A button under the prompt.
    Button,
    /// A reaction on the prompt.
    Reaction,
    /// `passepartout approvals approve|deny`.
    Cli,
    /// A button on the web dashboard's Approvals page.
    Web,
    /// `/cancel` by the requester.
    Cancel,
    /// Nobody answered in time.
    Timer,
}

impl How {
    pub fn as_str(self) -> &'static str {
        match self {
            How::Reply => "reply",
            How::Token => "token",
            How::Command => "command",
            How::Button => "button",
            How::Reaction => "reaction",
            How::Cli => "cli",
            How::Web => "web",
            How::Cancel => "cancel",
            How::Timer => "timer",
        }
    }
}
