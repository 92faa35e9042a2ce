//! The configured loops brought in line with a reloaded configuration,
//! while the daemon runs: a loop no longer configured stops and is
//! forgotten, a new one starts, a changed one stops and starts again as
//! configured now (keeping its next run when its schedule is the same),
//! and one whose entry did not change is left as it is (running, finished
//! or stopped by hand). Loops made in a chat are left alone: a configured
//! loop that would take one's name does not start (a reload refuses such a
//! file before it comes here).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use super::{BookError, Resumed, Schedules, Source, held_back, held_by_a_chat};
use crate::engine::loops::configured::Configured;
use crate::engine::loops::registry::Registry;
use crate::engine::loops::spec::{LoopName, LoopSpec};
use crate::engine::loops::status::State;

/// How long a changed loop's iteration gets to stop before its new version
/// is started anyway (it is then reported as failed).
const STOP_WAIT: Duration = Duration::from_secs(10);

/// What a reload did to the configured loops, by name.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Reconfigured {
    pub started: Vec<String>,
    pub restarted: Vec<String>,
    pub removed: Vec<String>,
    /// Loops that could not start (logged); they start at the next start.
    pub failed: Vec<String>,
    /// Configured loops not started because a loop made in a chat has
    /// their name; that loop runs on.
    pub taken: Vec<String>,
}

impl Schedules {
    /// Makes the running configured loops those of `configured`, leaving
    /// the loops named in `same` (whose entries did not change) as they are.
    pub async fn reconfigure(
        self: &Arc<Self>,
        configured: Vec<Configured>,
        same: &BTreeSet<String>,
    ) -> Result<Reconfigured, BookError> {
        let registry = self.ready()?;
        let now_ms = self.clock.now_ms();
        let stored = self.stored_records()?;
        let names: BTreeSet<LoopName> = configured.iter().map(|c| c.spec.name.clone()).collect();
        let mut done = Reconfigured::default();
        for record in &stored {
            if record.source == Source::Config && !names.contains(&record.spec.name) {
                self.remove(record.spec.name.as_str()).await?;
                done.removed.push(record.spec.name.to_string());
            }
        }
        // A configured loop the file no longer names cannot be started
        // again, whether the reload stopped it or a person did before; one
        // the file names again can.
        let unnamed: Vec<LoopName> = self
            .aside()
            .iter()
            .filter(|(name, record)| record.source == Source::Config && !names.contains(*name))
            .map(|(name, _)| name.clone())
            .chain(
                stored
                    .iter()
                    .filter(|r| r.source == Source::Config && !names.contains(&r.spec.name))
                    .map(|r| r.spec.name.clone()),
            )
            .collect();
        self.aside().retain(|name, _| !unnamed.contains(name));
        {
            let mut dropped = self.dropped();
            dropped.retain(|name| !names.contains(name));
            dropped.extend(unnamed);
        }
        // A loop made in a chat keeps its name; a changed entry that would
        // take it is reported, an unchanged one was left out at the start.
        let (configured, held): (Vec<Configured>, Vec<Configured>) = configured
            .into_iter()
            .partition(|c| !held_by_a_chat(&stored, &c.spec.name));
        for entry in held.iter().filter(|c| !same.contains(c.spec.name.as_str())) {
            held_back(&entry.spec.name);
            done.taken.push(entry.spec.name.to_string());
        }
        let changed = configured
            .iter()
            .filter(|c| !same.contains(c.spec.name.as_str()))
            .cloned()
            .collect();
        for record in self.configured_records(changed, &stored, now_ms) {
            let name = record.spec.name.clone();
            let previous = stored.iter().find(|s| s.spec.name == name);
            let running = registry
                .status(name.as_str())
                .is_some_and(|s| s.state != State::Stopped);
            let unchanged = previous.is_some_and(|p| p.source == Source::Config && same_loop(&p.spec, &record.spec));
            if unchanged && running {
                continue;
            }
            if running && !stopped(&registry, &name).await {
                tracing::error!(%name, "the loop did not stop in time; its new version starts at the next start");
                done.failed.push(name.to_string());
                continue;
            }
            let mut resumed = Resumed::default();
            self.start_resumed(&registry, record, now_ms, &mut resumed).await;
            match (resumed.started > 0, previous.is_some()) {
                (false, _) => done.failed.push(name.to_string()),
                (true, true) => done.restarted.push(name.to_string()),
                (true, false) => done.started.push(name.to_string()),
            }
        }
        self.set_heartbeat_triggered(&configured);
        tracing::info!(?done, "configured loops reloaded");
        Ok(done)
    }
}

/// Whether two versions of a loop are the same loop (its first run aside,
/// which is set when it starts).
fn same_loop(running: &LoopSpec, configured: &LoopSpec) -> bool {
    let unstarted = |spec: &LoopSpec| LoopSpec {
        first_run_ms: None,
        ..spec.clone()
    };
    unstarted(running) == unstarted(configured)
}

/// Stops loop `name` and waits until it has: whether it did in time.
async fn stopped(registry: &Registry, name: &LoopName) -> bool {
    let Some(mut status) = registry.watch(name.as_str()) else {
        return true;
    };
    if registry.stop(name.as_str()).is_err() {
        return true;
    }
    let stopping = status.wait_for(|s| s.state == State::Stopped);
    matches!(tokio::time::timeout(STOP_WAIT, stopping).await, Ok(Ok(_)))
}
