//! The dashboard step: on request (`--web`, or a yes when asked), the web
//! dashboard is turned on, on this machine's loopback address only: its
//! overview, the chat, the approvals and the OpenAI-compatible API in a
//! browser. `passepartout web --open` then signs this machine's browser in.

use async_trait::async_trait;
use clap::Args;
use passepartout_web::DEFAULT_LISTEN;

use crate::config::interview::render::quoted;
use crate::config::interview::{Context, Only, Part, Place, SetupError, Step};

/// The dashboard step's flags.
#[derive(Clone, Debug, Default, Args)]
pub struct WebFlags {
    /// Turn on the web dashboard (this machine only; `passepartout web
    /// --open` signs its browser in). Interactively, setup asks.
    #[arg(id = "web", long = "web")]
    pub web: bool,
}

/// `[web]`, on loopback, from its flag's answer or the person's.
pub struct WebStep {
    pub flags: WebFlags,
}

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
            self.flags.web || cx.only.is_some() || (cx.input.interactive() && cx.input.yes(prompt, true).await?);
        let mut part = Part::default();
        if wanted {
            part.section = section();
        }
        Ok(part)
    }
}

/// The web dashboard, on this machine's loopback address.
fn section() -> String {
    format!(
        "# The web dashboard: the overview, a chat, the approvals and an\n\
         # OpenAI-compatible API under /v1, on this machine only.\n\
         # `passepartout web --open` signs this machine's browser in.\n\
         [web]\n\
         enabled = true\n\
         # Where it listens: this machine's loopback address only.\n\
         listen = {}\n",
        quoted(DEFAULT_LISTEN)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::interview::render::{assert_commented, document, loaded};

    #[test]
    fn the_web_section_round_trips_on_loopback() {
        let text = document(&[section()]);
        assert_commented(&text);
        let config = loaded(&text);
        assert!(config.web.enabled);
        assert_eq!(config.web.listen.to_string(), DEFAULT_LISTEN);
    }
}
