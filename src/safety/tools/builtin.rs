//! The built-in tools, configured: memory, history search, time, the workspace's files, the
//! shell, `http_get`, `web_search` (when a backend is configured) and `send_file`. (The loops bring their own tools.) Their specs are
//! also known without setting them up, so that the configuration's tool
//! names can be checked before anything is created.

use std::sync::Arc;

use super::files;
use super::http_get::{BuildError, HttpGet};
use super::send_file::SendFileTool;
use super::shell::ShellTool;
use super::uploads::Uploads;
use super::web_search::{self, WebSearch};
use super::workspace::{Workspace, WorkspaceError};
use super::{CurrentTime, ForgetFact, Recall, Remember, SearchHistory, Tool};
use crate::config::Config;
use crate::model::llm::ToolSpec;
use crate::safety::sandbox::Policy;

/// Why the built-in tools could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    #[error(transparent)]
    HttpClient(#[from] BuildError),
    #[error(transparent)]
    WebSearch(#[from] web_search::BuildError),
}

/// Every built-in tool for `config`, `send_file` taking what each gateway
/// takes (`uploads`), the shell's commands confined by `sandbox`; creates the
/// workspace if it is missing.
pub fn builtin(config: &Config, uploads: Uploads, sandbox: Policy) -> Result<Vec<Arc<dyn Tool>>, SetupError> {
    let workspace = Arc::new(Workspace::open(config.workspace())?);
    let mut tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(Remember),
        Arc::new(Recall),
        Arc::new(ForgetFact),
        Arc::new(SearchHistory),
        Arc::new(CurrentTime),
        Arc::new(HttpGet::new(&config.tools.http_get)?),
        Arc::new(ShellTool::new(
            config.tools.shell.clone(),
            config.tools.output_cap_bytes,
            workspace.clone(),
            sandbox,
        )),
    ];
    if let Some(search) = WebSearch::new(&config.tools.web_search)? {
        tools.push(Arc::new(search));
    }
    tools.extend(files::tools(&workspace, &config.tools.files));
    tools.push(Arc::new(SendFileTool::new(
        workspace,
        config.data_dir().join("outgoing"),
        uploads,
    )));
    Ok(tools)
}

/// The spec of every tool [`builtin`] sets up for `config`, without setting
/// any of them up: no workspace is created, no HTTP client built.
pub fn builtin_specs(config: &Config) -> Vec<ToolSpec> {
    let mut specs = vec![
        Remember.spec(),
        Recall.spec(),
        ForgetFact.spec(),
        SearchHistory.spec(),
        CurrentTime.spec(),
        HttpGet::spec_for(&config.tools.http_get),
        ShellTool::spec_for(&config.tools.shell),
    ];
    specs.extend(WebSearch::spec_for(&config.tools.web_search));
    specs.extend(files::specs(&config.tools.files));
    specs.push(SendFileTool::spec_for());
    specs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::safety::sandbox::Support;

    /// The specs of the tools `builtin` builds for `config`.
    fn built(config: &Config) -> Vec<ToolSpec> {
        builtin(
            config,
            Uploads::default(),
            Policy::for_tools(
                config,
                &crate::config::SecretPlaces::of(config),
                None,
                Support::pretend(0),
            ),
        )
        .unwrap()
        .iter()
        .map(|tool| tool.spec())
        .collect()
    }

    #[test]
    fn the_specs_are_those_of_the_tools_set_up_and_create_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::default();
        config.tools.workspace = Some(dir.path().join("workspace"));
        config.tools.shell.timeout_s = 7;
        config.tools.files.max_read_bytes = 1234;
        config.tools.http_get.max_bytes = 5678;
        let specs = builtin_specs(&config);
        assert!(!dir.path().join("workspace").exists(), "no workspace made");
        assert_eq!(specs, built(&config));
        assert!(
            !specs.iter().any(|spec| spec.name == "web_search"),
            "no backend, no search"
        );

        config.tools.web_search.backend = Some(crate::config::SearchBackend::Brave);
        config.tools.web_search.api_key_env = Some("PASSEPARTOUT_TEST_UNSET_KEY".into());
        config.tools.web_search.max_count = 7;
        let specs = builtin_specs(&config);
        assert_eq!(specs, built(&config));
        assert!(specs.iter().any(|spec| spec.name == "web_search"), "{specs:?}");
    }
}
