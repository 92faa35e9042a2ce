//! The built-in tools, configured: memory, time, the workspace's files, the
//! shell and `http_get`. (The loops bring their own tools.)

use std::sync::Arc;

use super::files;
use super::http_get::{BuildError, HttpGet};
use super::shell::ShellTool;
use super::workspace::{Workspace, WorkspaceError};
use super::{CurrentTime, ForgetFact, Recall, Remember, Tool};
use crate::config::Config;

/// Why the built-in tools could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    #[error(transparent)]
    HttpClient(#[from] BuildError),
}

/// Every built-in tool for `config`; creates the workspace if it is missing.
pub fn builtin(config: &Config) -> Result<Vec<Arc<dyn Tool>>, SetupError> {
    let workspace = Arc::new(Workspace::open(config.workspace())?);
    let mut tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(Remember),
        Arc::new(Recall),
        Arc::new(ForgetFact),
        Arc::new(CurrentTime),
        Arc::new(HttpGet::new(&config.tools.http_get)?),
        Arc::new(ShellTool::new(
            config.tools.shell.clone(),
            config.tools.output_cap_bytes,
            workspace.clone(),
        )),
    ];
    tools.extend(files::tools(&workspace, &config.tools.files));
    Ok(tools)
}
