//! The dashboard step: on request (`--web`, or a yes when asked), the web
//! dashboard is turned on, on this machine's loopback address only: its
//! overview, the chat, the approvals and the OpenAI-compatible API in a
//! browser. `passepartout web --open` then signs this machine's browser in.

use async_trait::async_trait;
use clap::Args;

use super::error::SetupError;
use super::only::{Only, Place};
use super::render;
use super::{Context, Part, Step};

/// The dashboard step's flags.
#[derive(Clone, Debug, Args)]
pub struct WebFlags {
    /// Turn on the web dashboard (this machine only; `passepartout web
    /// --open` signs its browser in). Interactively, setup asks.
    #[arg(id = "web", long = "web")]
    pub web: bool,
}

/// `[web]`, on loopback.
pub struct WebStep;

#[async_trait(?Send)]
impl Step for WebStep {
    fn only(&self) -> Only {
        Only {
            name: "web",
            about: "The web dashboard, chat and API on this machine (`[web]`)",
            place: Place::Table("web"),
        }
    }

    async fn run(&self, cx: &mut Context<'_>) -> Result<Part, SetupError> {
        let prompt = "A dashboard in your browser too (chat, approvals, the OpenAI-compatible API; this machine only)?";
        // `--only web` asked for it already; a script asks with `--web`.
        let wanted =
            cx.args.web.web || cx.args.only.is_some() || (cx.input.interactive() && cx.input.yes(prompt, true).await?);
        let mut part = Part::default();
        if wanted {
            part.section = render::web();
        }
        Ok(part)
    }
}
