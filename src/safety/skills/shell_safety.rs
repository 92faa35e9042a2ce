//! Shell safety: command lines matching a configured pattern are refused
//! outright — no approval can run them. The defaults catch deleting `/` or the
//! home directory, making file systems, fork bombs and writing to block
//! devices (`skills.deny_shell`). It is a tripwire for the obvious, not a
//! sandbox: the approval policy and the scrubbed, workspace-bound shell are
//! the other layers.

use regex::bytes::{RegexSet, RegexSetBuilder};
use tokio::time::Instant;

use super::{ProposedCall, Skill, Verdict, priority};
use crate::model::signal::Origin;

pub struct ShellSafety {
    patterns: RegexSet,
    sources: Vec<String>,
}

impl ShellSafety {
    pub fn new(patterns: &[String]) -> Result<Self, regex::Error> {
        Ok(Self {
            // ASCII classes over bytes: the Unicode tables for \s, \S and \w
            // cost megabytes of automaton for no gain on command lines.
            patterns: RegexSetBuilder::new(patterns).unicode(false).build()?,
            sources: patterns.to_vec(),
        })
    }
}

impl Skill for ShellSafety {
    fn name(&self) -> &str {
        "shell_safety"
    }

    fn priority(&self) -> i32 {
        priority::SHELL_SAFETY
    }

    fn prompt(&self) -> Option<String> {
        Some("Destructive shell commands (deleting / or the home directory, formatting disks, fork bombs) are refused outright; do not propose them.".into())
    }

    fn gate(&self, call: &ProposedCall, _: &Origin, _: Instant) -> Verdict {
        if call.tool != "shell" {
            return Verdict::Allow;
        }
        let Some(command) = call.string_argument("command") else {
            return Verdict::Allow;
        };
        match self.patterns.matches(command.as_bytes()).iter().next() {
            Some(index) => Verdict::Reject(format!(
                "the command matches the safety pattern {:?} and is never run",
                self.sources[index]
            )),
            None => Verdict::Allow,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DEFAULT_DENY_SHELL;
    use crate::safety::skills::tests::{origin, shell};

    fn refused(command: &str) -> bool {
        let patterns: Vec<String> = DEFAULT_DENY_SHELL.iter().map(|s| s.to_string()).collect();
        let skill = ShellSafety::new(&patterns).unwrap();
        matches!(
            skill.gate(&shell(command), &origin("c"), Instant::now()),
            Verdict::Reject(_)
        )
    }

    #[test]
    fn the_defaults_refuse_the_classics() {
        for command in [
            "rm -rf /",
            "sudo rm -rf / ",
            "rm -rf /*",
            "rm -fr ~",
            "rm -r -f $HOME/",
            "cd /tmp && rm -rf / --no-preserve-root",
            "mkfs.ext4 /dev/sda1",
            ":(){ :|:& };:",
            "echo x > /dev/sda",
            "dd if=/dev/zero of=/dev/nvme0n1 bs=1M",
            "chmod -R 777 /",
            "rm -rf build /",
            "rm -rf \"/\"",
            "rm -rf '/'",
            "rm -rf //",
            "rm -rf /.",
            "rm -rf ~/*",
            "rm -rf $HOME/*",
            "rm -rf ${HOME}",
            "rm -rf \"$HOME\"",
            "rm -rf /home/ann",
            "sudo mkfs -t ext4 /dev/sdb",
            "chmod -R a+rwx /",
        ] {
            assert!(refused(command), "{command} should be refused");
        }
    }

    #[test]
    fn ordinary_commands_pass() {
        for command in [
            "ls -la",
            "rm -rf ./build",
            "rm notes/old.txt",
            "echo hi > /dev/null",
            "df -h /",
            "rm -rf /tmp/scratch",
            "man mkfs",
            "grep -r mkfs notes",
        ] {
            assert!(!refused(command), "{command} should pass");
        }
    }
}
