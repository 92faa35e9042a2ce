//! Reloading the configuration while the daemon runs (SIGHUP, or
//! `passepartout reload` through the admin path).
//!
//! The file is read and checked as at start (every problem at once, the
//! tool names against the tools the daemon has); a file with any problem is
//! refused whole and the running configuration is kept. Otherwise the
//! settings [`live`] names are taken — who may talk and approve on each
//! gateway, the model providers, the system prompt, the skills' gates and
//! rules, the configured loops — and every other change is named as
//! waiting for a restart. Everything that can fail (the providers'
//! clients, the skills' patterns, the loops' schedules) is built before
//! anything is swapped, so a reload applies entirely or not at all; the
//! loops, changed last, are the one step that can fail part-way, and say
//! which of them did. A turn under way finishes with the pipeline it
//! started with; the next one uses the new. The secrets the file names are
//! kept out of what the daemon shows from then on, whatever else applies.

pub mod live;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use passepartout_admin::Reloaded;
use passepartout_gateway::LiveSecrets;
use tokio::sync::Mutex;

use crate::config::{self, Config, LoopEntry};
use crate::daemon::admin::{Inspection, Reload};
use crate::engine::conversations::Conversations;
use crate::engine::loops::configured::Configured;
use crate::engine::loops::daemon::Loops;
use crate::engine::pipeline::cascade::Cascade;
use crate::gateways::GatewayComponent;
use crate::model::llm::ToolSpec;
use crate::people::access::Access;
use crate::people::pairing::{Lists, Pairing};
use crate::safety::approvals::{Approvals, Policy};
use crate::safety::skills::{Skills, check_names};
use crate::safety::tools::ToolCatalog;

/// What a reload swaps, handed in by the daemon.
pub struct Live {
    /// Who may talk, per gateway (the intake's).
    pub access: Arc<Access>,
    /// The pairing desk, which knows who the lists name.
    pub pairing: Arc<Pairing>,
    /// The models.
    pub cascade: Arc<Cascade>,
    /// The pipeline.
    pub conversations: Arc<Conversations>,
    /// The approvals' policy.
    pub approvals: Arc<Approvals>,
    pub loops: Arc<Loops>,
    /// The secrets kept out of what the daemon shows.
    pub secrets: LiveSecrets,
}

/// Reads the configuration again and applies it.
pub struct Reloader {
    /// The file read at start, read again; none: the defaults and the
    /// environment only.
    file: Option<PathBuf>,
    /// The configuration the daemon runs on; held while a reload runs, so
    /// two never interleave.
    running: Mutex<Config>,
    /// Gateways that do not come from the configuration (plugged in), whose
    /// lists a reload keeps.
    fixed: Vec<Lists>,
    /// The tools besides the configured ones (the loops', plugged-in ones),
    /// for the check of the names the gates give.
    more_tools: Vec<ToolSpec>,
    live: Live,
}

impl Reloader {
    /// A reloader of `file` for a daemon started on `running`, with the
    /// lists of the plugged-in gateway components `fixed` (see [`lists`]).
    pub fn new(
        file: Option<PathBuf>,
        running: Config,
        fixed: Vec<Lists>,
        more_tools: Vec<ToolSpec>,
        live: Live,
    ) -> Self {
        Self {
            file,
            running: Mutex::new(running),
            fixed,
            more_tools,
            live,
        }
    }

    /// Reads the file and applies it, or refuses it.
    pub async fn reload(&self) -> Reloaded {
        let mut running = self.running.lock().await;
        let reloaded = match self.read() {
            Ok(reloaded) => reloaded,
            Err(problems) => return refused(problems),
        };
        // Whatever of the file applies now: a secret it adds may be quoted
        // before the restart that uses it, and the answer below may name it.
        let places = crate::gateways::secret_places(&reloaded, &[]);
        self.live.secrets.add(&config::configured_secrets(&reloaded, &places));
        let (changes, mut merged) = match live::changes(&running, &reloaded)
            .and_then(|changes| Ok((changes, live::merged(&running, &reloaded)?)))
        {
            Ok(both) => both,
            Err(error) => return refused(vec![error.to_string()]),
        };
        if changes.live.is_empty() {
            return told(Reloaded {
                applied: true,
                message: match changes.need_restart.is_empty() {
                    true => "The configuration is unchanged.".into(),
                    false => "Nothing that applies now changed.".into(),
                },
                need_restart: changes.need_restart,
                ..Reloaded::default()
            });
        }
        // What runs is the merge, not the file: checked whole, with the
        // tools that actually run, so that no gate goes while its tool
        // stays until the restart.
        if let Err(problems) = self.check(&running, &merged) {
            return refused(problems);
        }
        let built = match self.build(&merged) {
            Ok(built) => built,
            Err(error) => return refused(vec![error]),
        };
        self.apply(&merged, built.swapped);
        let loops_changed = changes.live.iter().any(|path| path.starts_with("loops.entries"));
        let loops = match loops_changed {
            true => Some(self.reconfigure_loops(&running, &merged, built.loops).await),
            false => None,
        };
        if loops.as_ref().is_some_and(|(_, failed)| *failed) {
            // Tried again at the next reload, rather than taken as done.
            merged.loops.entries = running.loops.entries.clone();
        }
        *running = merged;
        let mut message = format!("Reloaded: {} now apply.", changes.live.join(", "));
        if let Some((Some(loops), _)) = loops {
            message.push(' ');
            message.push_str(&loops);
        }
        told(Reloaded {
            applied: true,
            message,
            changed: changes.live,
            need_restart: changes.need_restart,
            problems: Vec::new(),
        })
    }

    /// The file, loaded and checked as at start; or every problem in it.
    fn read(&self) -> Result<Config, Vec<String>> {
        let more = &self.more_tools;
        let loaded = config::load_checked(self.file.as_deref(), None, crate::gateways::problems, |config| {
            let catalog = ToolCatalog::registered(config, more.iter().cloned());
            check_names(&config.skills, &config.tools, &catalog).errors
        });
        match loaded {
            Ok((config, warnings)) => {
                for warning in warnings {
                    tracing::warn!(%warning, "configuration");
                }
                Ok(config)
            }
            Err(config::ConfigError::Invalid { problems }) => Err(problems),
            Err(error) => Err(vec![error.to_string()]),
        }
    }

    /// Every problem of the configuration that would run: its own checks,
    /// and the names its gates give against the tools it runs.
    fn check(&self, running: &Config, config: &Config) -> Result<(), Vec<String>> {
        let mut problems = config::validate(config, crate::foundation::clock::Clock::start().now_ms());
        problems.extend(crate::gateways::problems(config));
        let catalog = ToolCatalog::registered(config, self.more_tools.iter().cloned());
        problems.extend(check_names(&config.skills, &config.tools, &catalog).errors);
        problems.extend(self.loop_names_taken(running, config));
        match problems.is_empty() {
            true => Ok(()),
            false => Err(problems),
        }
    }

    /// Everything that can fail, built from `config` before anything changes.
    fn build(&self, config: &Config) -> Result<Built, String> {
        let providers = crate::model::llm::providers(config).map_err(|e| e.to_string())?;
        let skills = Skills::from_config(&config.skills, &config.tools, &config.mcp)
            .map_err(|e| format!("a [skills] pattern is not a valid regular expression: {e}"))?;
        let loops = self.live.loops.configured(config).map_err(|e| e.to_string())?;
        Ok(Built {
            swapped: Swapped { providers, skills },
            loops,
        })
    }

    /// Refuses a new or changed configured loop that would take the name
    /// of a loop made in a chat: that loop is somebody's, and is not
    /// replaced unasked. (An entry unchanged since the start, left out then
    /// for the same reason, stays left out without holding up a reload.)
    fn loop_names_taken(&self, running: &Config, config: &Config) -> Vec<String> {
        let made = match self.live.loops.made_in_chat() {
            Ok(made) => made,
            Err(error) => return vec![format!("cannot read the loops made in chats: {error}")],
        };
        made.into_iter()
            .filter(|(name, _)| {
                loop_entry(config, name.as_str()).is_some_and(|new| loop_entry(running, name.as_str()) != Some(new))
            })
            .map(|(name, chat)| {
                let chat = chat.map_or_else(|| "a chat".to_owned(), |chat| format!("the chat {chat}"));
                format!(
                    "loops.entries: \"{name}\" is already the name of a loop made in {chat}; \
                     stop that loop first (passepartout loops stop {name}) or give this one another name"
                )
            })
            .collect()
    }

    /// Swaps every live part but the loops for `config`'s.
    fn apply(&self, config: &Config, swapped: Swapped) {
        let live = &self.live;
        let mut lists = lists(&crate::gateways::components(config));
        lists.extend(self.fixed.iter().cloned());
        live.access
            .set_rosters(lists.iter().map(|l| (l.gateway.clone(), l.talkers.clone())));
        let deciders = lists.iter().map(|l| (l.gateway.clone(), l.deciders.clone()));
        let policy = Policy::from_rosters(deciders, &config.approvals).with_paired(live.pairing.paired());
        live.approvals.set_policy(policy);
        live.pairing.set_lists(lists, &config.approvals);
        live.cascade
            .replace(swapped.providers, Duration::from_secs(config.llm.cooldown_s));
        let pipeline = live.conversations.pipeline().reconfigured(config, swapped.skills);
        live.conversations.set_pipeline(pipeline);
    }

    /// Brings the configured loops from `running`'s entries to `merged`'s
    /// (`configured`, built from them): a loop whose entry is the same in
    /// both is left as it is (sleeping, finished or stopped). What was
    /// done, and whether any loop failed.
    async fn reconfigure_loops(
        &self,
        running: &Config,
        merged: &Config,
        configured: Vec<Configured>,
    ) -> (Option<String>, bool) {
        let same: BTreeSet<String> = merged
            .loops
            .entries
            .iter()
            .filter(|e| loop_entry(running, &e.name) == Some(*e))
            .map(|e| e.name.clone())
            .collect();
        match self.live.loops.reconfigure(configured, &same).await {
            Ok(done) => {
                let named =
                    |what: &str, names: &[String]| (!names.is_empty()).then(|| format!("{what}: {}", names.join(", ")));
                let parts: Vec<String> = [
                    named("loops started", &done.started),
                    named("restarted", &done.restarted),
                    named("stopped", &done.removed),
                    named("could not start", &done.failed),
                    named("not started (a loop made in a chat has the name)", &done.taken),
                ]
                .into_iter()
                .flatten()
                .collect();
                let failed = !done.failed.is_empty() || !done.taken.is_empty();
                ((!parts.is_empty()).then(|| format!("{}.", parts.join("; "))), failed)
            }
            Err(error) => (
                Some(format!("The configured loops could not be changed: {error}.")),
                true,
            ),
        }
    }
}

#[async_trait]
impl Reload for Reloader {
    async fn reload(&self) -> Reloaded {
        Reloader::reload(self).await
    }

    /// What `check-config` checks: the file, the names its gates give, and
    /// what would stop an enabled gateway from starting.
    fn inspect(&self) -> Inspection {
        self.inspected(self.file.as_deref())
    }

    fn inspect_file(&self, file: &std::path::Path) -> Inspection {
        self.inspected(Some(file))
    }

    fn file(&self) -> Option<PathBuf> {
        self.file.clone()
    }
}

impl Reloader {
    /// What `check-config` checks of `file`: the file, the names its gates
    /// give, and what would stop an enabled gateway from starting.
    fn inspected(&self, file: Option<&std::path::Path>) -> Inspection {
        let more = &self.more_tools;
        let mut warnings = Vec::new();
        let loaded = config::load_checked(file, None, crate::gateways::problems, |config| {
            let catalog = ToolCatalog::registered(config, more.iter().cloned());
            let found = check_names(&config.skills, &config.tools, &catalog);
            warnings = found.warnings;
            let unstartable = crate::gateways::start_problems(config, |name| std::env::var(name).ok());
            [found.errors, unstartable].concat()
        });
        let mut web_enabled = false;
        let problems = match loaded {
            Ok((config, from_environment)) => {
                warnings.splice(0..0, from_environment);
                web_enabled = config.web.enabled;
                Vec::new()
            }
            Err(config::ConfigError::Invalid { problems }) => problems,
            Err(error) => vec![error.to_string()],
        };
        Inspection {
            file: file.map(std::path::Path::to_path_buf),
            problems,
            warnings,
            web_enabled,
        }
    }
}

/// `config`'s `[[loops.entries]]` entry called `name`.
fn loop_entry<'a>(config: &'a Config, name: &str) -> Option<&'a LoopEntry> {
    config.loops.entries.iter().find(|e| e.name == name)
}

/// What a reload builds before it swaps anything.
struct Built {
    swapped: Swapped,
    loops: Vec<Configured>,
}

/// The parts swapped whole.
struct Swapped {
    providers: Vec<Arc<dyn crate::model::llm::ChatModel>>,
    skills: Skills,
}

/// Each component's lists: who may talk through it, who may approve.
pub fn lists(components: &[Box<dyn GatewayComponent>]) -> Vec<Lists> {
    components
        .iter()
        .map(|c| Lists {
            gateway: c.id(),
            talkers: c.talkers(),
            deciders: c.deciders(),
        })
        .collect()
}

fn refused(problems: Vec<String>) -> Reloaded {
    told(Reloaded {
        applied: false,
        message: format!(
            "The configuration was not reloaded; the daemon runs on as before. {} problem(s):\n  - {}",
            problems.len(),
            problems.join("\n  - ")
        ),
        problems,
        ..Reloaded::default()
    })
}

/// Logs what a reload did, and answers it.
fn told(reloaded: Reloaded) -> Reloaded {
    if reloaded.applied {
        tracing::info!(
            changed = ?reloaded.changed,
            need_restart = ?reloaded.need_restart,
            "configuration reloaded"
        );
        if !reloaded.need_restart.is_empty() {
            tracing::warn!(
                settings = %reloaded.need_restart.join(", "),
                "changed settings that apply only after a restart"
            );
        }
    } else {
        tracing::error!(problems = ?reloaded.problems, "configuration refused; the running one is kept");
    }
    reloaded
}
