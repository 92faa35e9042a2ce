//! Which rules "always" makes, and which calls they cover: above all, that
//! no shell rule ever reaches a command that chains or substitutes.

use serde_json::json;

use super::*;

fn call(tool: &str, arguments: Value) -> ProposedCall {
    ProposedCall {
        tool: tool.into(),
        arguments,
    }
}

fn shell(command: &str) -> ProposedCall {
    call("shell", json!({ "command": command }))
}

fn prefix(words: &[&str]) -> Scope {
    Scope::CommandPrefix {
        words: words.iter().map(|w| (*w).to_owned()).collect(),
    }
}

#[test]
fn a_command_that_chains_substitutes_or_redirects_gets_an_exact_rule_only() {
    for command in [
        "git status; rm -rf /",
        "git status;rm x",
        "git status && rm x",
        "git status || rm x",
        "git status | sh",
        "git status & rm x",
        "git status &",
        "git status $(rm x)",
        "git status `rm x`",
        "git status $HOME",
        "git status ${HOME}",
        "git status > notes",
        "git status >> notes",
        "git status < notes",
        "git status 2>&1",
        "git status\nrm x",
        "git status\r\nrm x",
        "git status\trm",
        "git status 'x'",
        "git status \"x\"",
        "git status \\; rm x",
        "git status *",
        "git status ?",
        "git status [ab]",
        "git status {a,b}",
        "git status ~",
        "git status # comment",
        "(git status)",
        "git status !x",
        "ls -la ; pwd",
    ] {
        assert_eq!(
            derive(&shell(command)),
            Scope::Command {
                command: command.into()
            },
            "{command:?}"
        );
    }
}

#[test]
fn a_plain_command_of_a_program_that_acts_gets_an_exact_rule_only() {
    for command in [
        "sh -c ls",
        "bash script",
        "env ls",
        "sudo ls",
        "xargs ls",
        "find . -delete",
        "FOO=bar ls",
        "git grep status",
        "git push origin main",
        "tar xf a.tar",
        "rm notes/old.txt",
        "echo hi",
        "lsblk",
        "gitstatus",
    ] {
        assert_eq!(
            derive(&shell(command)),
            Scope::Command {
                command: command.into()
            },
            "{command:?}"
        );
    }
}

#[test]
fn a_plain_command_of_a_program_that_only_shows_gets_a_prefix_rule() {
    for (command, words) in [
        ("git status", &["git", "status"][..]),
        ("  git   status  ", &["git", "status"]),
        ("git log --oneline", &["git", "log", "--oneline"]),
        ("ls -la notes", &["ls", "-la", "notes"]),
        ("df -h", &["df", "-h"]),
    ] {
        assert_eq!(derive(&shell(command)), prefix(words), "{command:?}");
    }
    assert_eq!(
        derive(&call("shell", json!({"command": "git status", "cwd": "/"}))),
        Scope::Arguments {
            arguments: json!({"command": "git status", "cwd": "/"})
        },
        "a shell call with more than a command is matched exactly"
    );
}

#[test]
fn a_prefix_rule_covers_the_command_with_more_options_and_nothing_chained() {
    let rule = prefix(&["git", "status"]);
    for command in [
        "git status",
        "git status --short",
        "git status -s -b",
        "  git   status  ",
    ] {
        assert!(covers(&rule, &shell(command)), "{command:?} should be covered");
    }
    for command in [
        "git status; rm -rf /",
        "git status;rm -rf /",
        "git status && x",
        "git status || x",
        "git status | sh",
        "git status & x",
        "git status &",
        "git status $(x)",
        "git status `x`",
        "git status $x",
        "git status > f",
        "git status >f",
        "git status < f",
        "git status\nrm -rf /",
        "git status\n",
        "git status\t-s",
        "git status '-s'",
        "git status -s; x",
        "git status --output=f",
        "git status -s/x",
        "git status notes",
        "git status /etc",
        "git status -",
        "git statusx",
        "git",
        "git log",
        "sudo git status",
        "GIT_DIR=x git status",
        "",
    ] {
        assert!(!covers(&rule, &shell(command)), "{command:?} must not be covered");
    }
    assert!(!covers(&rule, &call("shell", json!({"command": "git status", "x": 1}))));
    assert!(!covers(&rule, &call("shell", json!({"command": ["git", "status"]}))));
}

#[test]
fn an_exact_rule_covers_only_the_same_command_line() {
    let rule = derive(&shell("ls; pwd"));
    assert!(covers(&rule, &shell("ls; pwd")));
    for command in ["ls; pwd; rm -rf x", "ls;  pwd", "ls; pwd ", "ls", "pwd"] {
        assert!(!covers(&rule, &shell(command)), "{command:?}");
    }
}

#[test]
fn file_tools_get_their_path_or_its_directory() {
    let write = |path: &str| call("write_file", json!({"path": path, "content": "x"}));
    let rule = derive(&write("./notes//todo.md"));
    assert_eq!(
        rule,
        Scope::Path {
            argument: "path".into(),
            path: "notes/todo.md".into()
        }
    );
    assert!(covers(
        &rule,
        &call(
            "write_file",
            json!({"path": "notes/todo.md", "content": "other", "append": true})
        )
    ));
    for other in [
        "notes/other.md",
        "notes/todo.md/x",
        "x/../notes/todo.md",
        "/notes/todo.md",
    ] {
        assert!(!covers(&rule, &write(other)), "{other}");
    }

    let read = |path: &str| call("read_file", json!({ "path": path }));
    let rule = derive(&read("notes/todo.md"));
    assert_eq!(
        rule,
        Scope::Directory {
            argument: "path".into(),
            directory: "notes".into()
        }
    );
    assert!(covers(&rule, &read("notes/done.md")));
    assert!(covers(&rule, &read("./notes/done.md")));
    for other in [
        "notes/deeper/x.md",
        "other/todo.md",
        "notes/../secret",
        "todo.md",
        "notes",
    ] {
        assert!(!covers(&rule, &read(other)), "{other}");
    }
    let top = derive(&read("todo.md"));
    assert!(covers(&top, &read("other.md")));
    assert!(!covers(&top, &read("notes/todo.md")));

    assert_eq!(
        derive(&write("../outside.md")),
        Scope::Arguments {
            arguments: json!({"path": "../outside.md", "content": "x"})
        },
        "a path that climbs gets an exact rule"
    );
}

#[test]
fn http_get_gets_the_host() {
    let get = |url: &str| call("http_get", json!({ "url": url }));
    let rule = derive(&get("https://Example.org/a?b=1"));
    assert_eq!(
        rule,
        Scope::Host {
            argument: "url".into(),
            host: "example.org".into()
        }
    );
    for url in [
        "https://example.org/other",
        "http://example.org",
        "https://user@example.org/",
    ] {
        assert!(covers(&rule, &get(url)), "{url}");
    }
    for url in [
        "https://example.org.evil.com/",
        "https://evil.com/?example.org",
        "https://example.org@evil.com/",
        "https://example.org:8443/",
        "https://sub.example.org/",
        "ftp://example.org/",
        "example.org",
    ] {
        assert!(!covers(&rule, &get(url)), "{url}");
    }
    assert!(matches!(derive(&get("not a url")), Scope::Arguments { .. }));
}

#[test]
fn tool_servers_and_other_tools_get_their_exact_arguments() {
    for tool in ["everything__echo", "record", "schedule"] {
        let rule = derive(&call(tool, json!({"message": "hi", "n": 1})));
        assert!(covers(&rule, &call(tool, json!({"n": 1, "message": "hi"}))), "{tool}");
        assert!(!covers(&rule, &call(tool, json!({"message": "hi!", "n": 1}))), "{tool}");
        assert!(!covers(&rule, &call(tool, json!({"message": "hi"}))), "{tool}");
    }
}

#[test]
fn what_a_rule_covers_reads_plainly() {
    assert_eq!(
        shown("shell", &derive(&shell("git status"))),
        "`git status` and the same command with more options"
    );
    assert_eq!(
        shown("shell", &derive(&shell("ls; pwd"))),
        "`ls; pwd` exactly as written"
    );
    assert_eq!(
        shown("read_file", &derive(&call("read_file", json!({"path": "notes/a.md"})))),
        "`read_file` on files in `notes/`"
    );
    assert_eq!(
        shown(
            "http_get",
            &derive(&call("http_get", json!({"url": "https://example.org/x"})))
        ),
        "`http_get` from `example.org`"
    );
    assert_eq!(
        shown("record", &derive(&call("record", json!({"what": "milk"})))),
        "`record {\"what\":\"milk\"}` with exactly these arguments"
    );
}

/// What the offer of a shell rule says it covers, as a person reads it:
/// the command it names, and whether more options are covered too.
fn claim(scope: &Scope) -> (String, bool) {
    use passepartout_gateway::markup::{Flavor, render};
    let read = render(&shown("shell", scope), Flavor::SPELLED).text;
    if let Some(command) = read.strip_suffix(" and the same command with more options") {
        (command.to_owned(), true)
    } else if let Some(command) = read.strip_suffix(" exactly as written") {
        (command.to_owned(), false)
    } else {
        panic!("an offer that says neither: {read}")
    }
}

mod offer_and_matcher {
    use proptest::prelude::*;

    use super::*;

    /// Programs that only show things, others, and arguments of either.
    const PROGRAMS: &[&str] = &[
        "df",
        "ls",
        "git status",
        "git log",
        "uptime",
        "rm",
        "cat",
        "sh -c",
        "git push",
    ];
    const ARGUMENTS: &[&str] = &["-h", "--all", "notes", "/tmp", "a=b", "-l", "x;y", "$(id)"];
    /// Words a later call adds, each with whether it is "an option".
    const ADDED: &[(&str, bool)] = &[
        ("-v", true),
        ("--long", true),
        ("-1", true),
        ("x", false),
        ("/etc", false),
        ("--out=f", false),
        ("-", false),
        ("$(id)", false),
        ("`id`", false),
    ];
    /// How the added words are joined on: only a space keeps one command.
    const JOINS: &[(&str, bool)] = &[
        (" ", true),
        ("; ", false),
        (" && ", false),
        (" | ", false),
        ("\n", false),
    ];

    proptest! {
        /// A rule covers exactly what its offer says: the command it names,
        /// and — only when it says so — that command with more options.
        #[test]
        fn a_rule_covers_what_its_offer_says(
            program in prop::sample::select(PROGRAMS),
            arguments in prop::collection::vec(prop::sample::select(ARGUMENTS), 0..3),
            added in prop::collection::vec(prop::sample::select(ADDED), 0..3),
            join in prop::sample::select(JOINS),
        ) {
            let base = std::iter::once(program).chain(arguments).collect::<Vec<_>>().join(" ");
            let scope = derive(&shell(&base));
            let (named, more_options) = claim(&scope);
            prop_assert_eq!(&named, &base, "the offer names the command itself");
            let later = if added.is_empty() {
                base.clone()
            } else {
                let words: Vec<&str> = added.iter().map(|(word, _)| *word).collect();
                format!("{base}{}{}", join.0, words.join(" "))
            };
            let said = later == base || (more_options && join.1 && added.iter().all(|(_, option)| *option));
            prop_assert_eq!(covers(&scope, &shell(&later)), said, "{} for a rule on {}", later, base);
        }
    }
}
