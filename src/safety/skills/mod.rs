//! Skills: deterministic verification between what the model proposes and
//! what runs (the seeds' `defskill`). A [`Skill`] has a name, a priority, a
//! trigger (which conversations it applies to), an optional prompt fragment
//! added to the system prompt when triggered, and a gate run on every
//! proposed tool call.
//!
//! [`Skills::decide`] runs the triggered gates highest priority first. A
//! gate allows (the next gate runs), permits (lower-priority gates are
//! skipped), rewrites the call (later gates see the new call), rejects it (the
//! first rejection ends the check), or requires approval — which does not end
//! the check, so a higher-priority *allow* cannot be overtaken but a
//! lower-priority *reject* still refuses outright. Each gate's executions,
//! time and rejections are counted for `status`. The tool and argument
//! names the gates' settings give are checked against the registered tools
//! ([`check_names`]), so that a typo never switches a gate off in silence.

mod allowlist;
mod approval;
mod mcp_approval;
mod names;
mod rate_limit;
mod rules;
mod shell_safety;
mod suggest;
pub use suggest::closest;

use std::sync::Arc;

use serde_json::Value;
use tokio::time::Instant;

pub use allowlist::ToolAllowlist;
pub use approval::ApprovalPolicy;
pub use mcp_approval::McpApproval;
pub use names::{NameCheck, check_names};
pub use rate_limit::RateLimit;
pub use rules::{Rule, Rules, names as names_tool};
pub use shell_safety::ShellSafety;
// The call the gates judge is the one an approval stores: its form is the store's.
pub use crate::store::ProposedCall;

use crate::config::{McpConfig, SkillsConfig, ToolsConfig};
use crate::foundation::telemetry::Telemetry;
use crate::model::signal::Origin;

/// What a gate says about a call.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// No objection; the next gate decides.
    Allow,
    /// Run it; lower-priority gates are not asked.
    Permit,
    /// Run this call instead; the next gate sees it.
    Rewrite(ProposedCall),
    /// Do not run it, for this reason (shown to the model and the person).
    Reject(String),
    /// Run it only once a person approves, for this reason.
    RequireApproval(String),
}

/// The outcome of every gate together.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    Run(ProposedCall),
    Reject {
        skill: String,
        reason: String,
        /// The call as the rejecting gate saw it.
        call: ProposedCall,
    },
    NeedsApproval {
        skill: String,
        reason: String,
        call: ProposedCall,
    },
}

/// One skill.
pub trait Skill: Send + Sync {
    fn name(&self) -> &str;

    /// Higher runs first.
    fn priority(&self) -> i32;

    /// Whether the skill applies to a turn started by `origin`.
    fn triggered(&self, _origin: &Origin) -> bool {
        true
    }

    /// Whether the gate limits which tools exist for a conversation at all
    /// (an allowlist): such gates also decide which tools are offered.
    fn limits_offer(&self) -> bool {
        false
    }

    /// Whether the gate counts the calls it judges (a rate limit): such a
    /// gate is left out when a tool's standing is only asked about.
    fn counts_calls(&self) -> bool {
        false
    }

    /// Text added to the system prompt when the skill is triggered.
    fn prompt(&self) -> Option<String> {
        None
    }

    /// Judges a proposed call; `now` is for skills that count over time.
    fn gate(&self, call: &ProposedCall, origin: &Origin, now: Instant) -> Verdict;
}

/// Priorities of the built-in skills.
pub mod priority {
    pub const SHELL_SAFETY: i32 = 100;
    pub const ALLOWLIST: i32 = 90;
    pub const RATE_LIMIT: i32 = 80;
    pub const RULES: i32 = 50;
    pub const APPROVAL_POLICY: i32 = 10;
}

/// What the gates say of a tool in general, before any call: for `/tools`
/// and `passepartout tools`. A rule on its arguments may still decide a
/// given call otherwise.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Standing {
    Allowed,
    NeedsApproval(String),
    Denied(String),
}

/// Every skill, highest priority first.
#[derive(Clone)]
pub struct Skills {
    skills: Vec<Arc<dyn Skill>>,
    telemetry: Arc<Telemetry>,
}

impl Skills {
    pub fn new(mut skills: Vec<Arc<dyn Skill>>) -> Self {
        skills.sort_by_key(|skill| std::cmp::Reverse(skill.priority()));
        Self {
            skills,
            telemetry: Arc::new(Telemetry::default()),
        }
    }

    /// The built-in skills, configured; `mcp`'s servers' calls need approval
    /// unless trusted. Fails on a pattern that is not a valid regular
    /// expression (`check-config` reports those first).
    pub fn from_config(skills: &SkillsConfig, tools: &ToolsConfig, mcp: &McpConfig) -> Result<Self, regex::Error> {
        let mut built: Vec<Arc<dyn Skill>> = vec![
            Arc::new(ShellSafety::new(&skills.deny_shell)?),
            Arc::new(ApprovalPolicy::new(tools.require_approval.iter().cloned())),
        ];
        if !mcp.servers.is_empty() {
            built.push(Arc::new(McpApproval::new(mcp)));
        }
        if skills.tool_calls_per_minute > 0 {
            built.push(Arc::new(RateLimit::per_minute(skills.tool_calls_per_minute)));
        }
        if !skills.allowlists.is_empty() {
            built.push(Arc::new(ToolAllowlist::new(&skills.allowlists)));
        }
        if !skills.rules.is_empty() {
            built.push(Arc::new(Rules::new(&skills.rules)?));
        }
        Ok(Self::new(built))
    }

    /// The same skills, counting their decisions in `telemetry` (the
    /// skills they replace, so the counts go on across a reload).
    pub fn with_telemetry(self, telemetry: Arc<Telemetry>) -> Self {
        Self { telemetry, ..self }
    }

    /// Prompt fragments of the skills triggered for `origin`, in priority order.
    pub fn prompts(&self, origin: &Origin) -> Vec<String> {
        self.skills
            .iter()
            .filter(|skill| skill.triggered(origin))
            .filter_map(|skill| skill.prompt())
            .collect()
    }

    /// Whether `tool` may be offered to the model in `origin`'s conversation
    /// at all (the allowlists decide; everything else is judged per call).
    pub fn offers(&self, tool: &str, origin: &Origin) -> bool {
        let probe = ProposedCall {
            tool: tool.to_owned(),
            arguments: Value::Object(Default::default()),
        };
        self.skills
            .iter()
            .filter(|skill| skill.limits_offer() && skill.triggered(origin))
            .all(|skill| !matches!(skill.gate(&probe, origin, Instant::now()), Verdict::Reject(_)))
    }

    /// The standing of `tool` in `origin`'s conversation: the gates asked
    /// about a call with no arguments, without counting it anywhere.
    pub fn standing(&self, tool: &str, origin: &Origin) -> Standing {
        let probe = ProposedCall {
            tool: tool.to_owned(),
            arguments: Value::Object(Default::default()),
        };
        let mut standing = Standing::Allowed;
        let now = Instant::now();
        for skill in self.skills.iter().filter(|s| s.triggered(origin) && !s.counts_calls()) {
            match skill.gate(&probe, origin, now) {
                Verdict::Allow | Verdict::Rewrite(_) => {}
                Verdict::Permit => break,
                Verdict::Reject(reason) => return Standing::Denied(reason),
                Verdict::RequireApproval(reason) => {
                    if standing == Standing::Allowed {
                        standing = Standing::NeedsApproval(reason);
                    }
                }
            }
        }
        standing
    }

    /// Runs every triggered gate on `call`.
    pub fn decide(&self, call: ProposedCall, origin: &Origin) -> Decision {
        let mut call = call;
        let mut approval: Option<(String, String)> = None;
        for skill in self.skills.iter().filter(|skill| skill.triggered(origin)) {
            let started = Instant::now();
            let verdict = skill.gate(&call, origin, started);
            let rejected = matches!(verdict, Verdict::Reject(_));
            self.telemetry.record(skill.name(), started.elapsed(), rejected);
            match verdict {
                Verdict::Allow => {}
                Verdict::Permit => break,
                Verdict::Rewrite(rewritten) => {
                    tracing::info!(skill = skill.name(), from = %call.summary(), to = %rewritten.summary(), "call rewritten");
                    call = rewritten;
                }
                Verdict::Reject(reason) => {
                    tracing::info!(skill = skill.name(), call = %call.summary(), %reason, "call rejected");
                    return Decision::Reject {
                        skill: skill.name().to_owned(),
                        reason,
                        call,
                    };
                }
                Verdict::RequireApproval(reason) => {
                    approval.get_or_insert((skill.name().to_owned(), reason));
                }
            }
        }
        match approval {
            Some((skill, reason)) => Decision::NeedsApproval { skill, reason, call },
            None => Decision::Run(call),
        }
    }

    /// Per-skill executions, time and rejections; shared, so the status
    /// can read them while the pipeline counts.
    pub fn telemetry(&self) -> &Arc<Telemetry> {
        &self.telemetry
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use passepartout_gateway::{ChatId, ConversationKey, GatewayId, MessageId, UserId};

    use super::*;

    pub fn origin(chat: &str) -> Origin {
        Origin {
            conversation: ConversationKey::new(GatewayId::new("socket").unwrap(), ChatId::new(chat).unwrap()),
            sender: UserId::new("1").unwrap(),
            message_id: MessageId::new("m").unwrap(),
            sender_names: Default::default(),
        }
    }

    pub fn shell(command: &str) -> ProposedCall {
        ProposedCall {
            tool: "shell".into(),
            arguments: serde_json::json!({ "command": command }),
        }
    }

    struct Fixed(&'static str, i32, Verdict);

    impl Skill for Fixed {
        fn name(&self) -> &str {
            self.0
        }
        fn priority(&self) -> i32 {
            self.1
        }
        fn gate(&self, _: &ProposedCall, _: &Origin, _: Instant) -> Verdict {
            self.2.clone()
        }
    }

    fn skills(list: Vec<Fixed>) -> Skills {
        Skills::new(list.into_iter().map(|s| Arc::new(s) as Arc<dyn Skill>).collect())
    }

    #[test]
    fn a_lower_priority_reject_beats_an_earlier_approval_requirement() {
        let skills = skills(vec![
            Fixed("ask", 10, Verdict::RequireApproval("ask first".into())),
            Fixed("deny", 1, Verdict::Reject("never".into())),
        ]);
        assert_eq!(
            skills.decide(shell("ls"), &origin("c")),
            Decision::Reject {
                skill: "deny".into(),
                reason: "never".into(),
                call: shell("ls"),
            }
        );
    }

    #[test]
    fn permit_skips_lower_gates_and_rewrite_is_seen_by_later_ones() {
        let skills = skills(vec![
            Fixed("ask", 1, Verdict::RequireApproval("ask".into())),
            Fixed("allow", 5, Verdict::Permit),
            Fixed("rewrite", 9, Verdict::Rewrite(shell("ls -1"))),
        ]);
        assert_eq!(skills.decide(shell("ls"), &origin("c")), Decision::Run(shell("ls -1")));
        let stats = skills.telemetry().snapshot();
        assert_eq!(stats["rewrite"].executions, 1);
        assert!(!stats.contains_key("ask"), "gates after a permit do not run");
    }

    #[test]
    fn defaults_ask_before_shell_and_refuse_destruction() {
        let skills =
            Skills::from_config(&SkillsConfig::default(), &ToolsConfig::default(), &McpConfig::default()).unwrap();
        assert!(matches!(
            skills.decide(shell("ls -la"), &origin("c")),
            Decision::NeedsApproval { skill, .. } if skill == "approval_policy"
        ));
        assert!(matches!(
            skills.decide(shell("rm -rf /"), &origin("c")),
            Decision::Reject { skill, .. } if skill == "shell_safety"
        ));
        let read = ProposedCall {
            tool: "read_file".into(),
            arguments: serde_json::json!({"path": "a"}),
        };
        assert!(matches!(skills.decide(read, &origin("c")), Decision::Run(_)));
        let task = ProposedCall {
            tool: "schedule".into(),
            arguments: serde_json::json!({"name": "t", "when": "every hour", "task": "look around"}),
        };
        assert!(
            matches!(skills.decide(task, &origin("c")), Decision::NeedsApproval { .. }),
            "a task the assistant runs by itself is approved once, when set up"
        );
        let reminder = ProposedCall {
            tool: "remind".into(),
            arguments: serde_json::json!({"name": "r", "when": "in 5 minutes", "message": "tea"}),
        };
        assert!(matches!(skills.decide(reminder, &origin("c")), Decision::Run(_)));
    }
}
