//! A loop defined in the config: a `[[loops.entries]]` entry turned into the
//! [`LoopSpec`] the daemon resumes at start. The entry's own readings and
//! checks live with it in [`crate::config`]; this is where they meet the
//! runtime's types.

use crate::config::{EntryBody, EntryProblem, LoopEntry, LoopTrigger, Retrigger};
use crate::foundation::clock::schedule::Zone;

use super::sleep::SleepBounds;
use super::spec::{LoopName, LoopSpec, SpecProblem, Start};

/// A loop from the config.
#[derive(Clone, Debug)]
pub struct Configured {
    pub spec: LoopSpec,
    /// Triggered by every heartbeat (its `start` waits for triggers).
    pub on_heartbeat: bool,
}

impl Configured {
    /// `entry` as the loop the daemon runs; the error lists every problem.
    /// `zone` is for schedules that name none; `now_ms` rules out schedules
    /// that would never run again.
    pub fn from_entry(entry: &LoopEntry, zone: &Zone, now_ms: u64) -> Result<Self, String> {
        build(entry, zone, now_ms).map_err(|problems| {
            let problems: Vec<_> = problems.iter().map(ToString::to_string).collect();
            format!("loop {:?}: {}", entry.name, problems.join("; "))
        })
    }
}

fn build(entry: &LoopEntry, zone: &Zone, now_ms: u64) -> Result<Configured, Vec<EntryProblem>> {
    let problems = entry.problems(zone, now_ms);
    if !problems.is_empty() {
        return Err(problems);
    }
    // Each reading below was just checked; the `?`s keep a check that
    // missed something from becoming a panic.
    let one = |problem: EntryProblem| vec![problem];
    let name = LoopName::new(entry.name.as_str()).map_err(|error| one(EntryProblem::new("name", error.to_string())))?;
    let mut spec = match entry.body().map_err(one)? {
        EntryBody::Task(prompt) => LoopSpec::task(name, prompt),
        EntryBody::Message(text) => LoopSpec::message(name, text),
    };
    spec.output = Some(entry.output_key().map_err(one)?);
    spec.schedule = entry.schedule(zone, now_ms).map_err(one)?;
    let limits = entry.limits();
    spec.sleep = SleepBounds {
        min: limits.sleep_min,
        max: limits.sleep_max,
        default: limits.sleep_default,
    };
    spec.jitter = limits.jitter;
    spec.max_attempts = limits.max_attempts;
    spec.max_duration = limits.max_duration;
    spec.supervisor = entry.supervisor.clone();
    // Sleeping and scheduled loops wait for their first run, so that a
    // restart does not fire every configured loop at the same moment.
    spec.start = match entry.on {
        Some(LoopTrigger::Heartbeat) => Start::OnTrigger(entry.retrigger.unwrap_or(Retrigger::Ignore)),
        None => Start::AfterSleep,
    };
    if let Err(invalid) = spec.validate() {
        return Err(invalid.problems.iter().map(spec_problem).collect());
    }
    Ok(Configured {
        spec,
        on_heartbeat: entry.on == Some(LoopTrigger::Heartbeat),
    })
}

/// A problem [`LoopSpec::validate`] found, under the entry key that causes it.
fn spec_problem(problem: &SpecProblem) -> EntryProblem {
    let key = match problem {
        SpecProblem::Limit(limit) => limit.entry_key(),
        SpecProblem::NoOutput => "output",
        SpecProblem::ScheduledAndTriggered => "on",
    };
    EntryProblem::new(key, problem.to_string())
}

#[cfg(test)]
#[path = "configured_tests.rs"]
mod tests;
