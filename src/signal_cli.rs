//! The Signal gateway as the daemon runs it: its settings from `[signal]`,
//! and the doctor's check of the signal-cli daemon and the account.

use std::time::Duration;

use passepartout_signal::{Endpoint, RpcClient, RpcOptions, SignalSettings};
use serde_json::{Value, json};

use crate::config::Config;

/// The gateway's settings from `[signal]`.
pub fn settings(config: &Config) -> Result<SignalSettings, String> {
    let signal = &config.signal;
    let endpoint: Endpoint = signal
        .endpoint
        .parse()
        .map_err(|error| format!("signal.endpoint: {error}"))?;
    let mut settings = SignalSettings::new(endpoint, signal.account.clone());
    settings.account_uuid = signal.account_uuid.clone();
    settings.multi_account = signal.multi_account;
    settings.group_mode = signal.group_mode;
    Ok(settings)
}

/// Connects to signal-cli and asks its version and whether it has the
/// account: "signal-cli 0.13.x at … has +1555…", or exactly what is wrong
/// and the command that fixes it.
pub async fn check(config: &Config) -> Result<String, String> {
    let settings = settings(config)?;
    let options = RpcOptions {
        call_timeout: Duration::from_secs(10),
        ..RpcOptions::default()
    };
    let (client, _notifications) = RpcClient::connect(&settings.endpoint, options)
        .await
        .map_err(|error| {
            format!(
                "no signal-cli daemon at {} ({error}); start one: signal-cli daemon --tcp 127.0.0.1:7583 --receive-mode=manual",
                settings.endpoint
            )
        })?;
    let version = client
        .call("version", json!({}))
        .await
        .map_err(|error| format!("signal-cli does not answer `version`: {error}"))?;
    let version = version["version"].as_str().unwrap_or("?").to_owned();
    let account = &settings.account;
    // A single-account daemon serves exactly the account it was started with.
    let has_account = !settings.multi_account
        || listed(
            &client
                .call("listAccounts", json!({}))
                .await
                .map_err(|error| format!("signal-cli does not answer `listAccounts`: {error}"))?,
            account,
        );
    client.close();
    if has_account {
        Ok(format!("signal-cli {version} at {} has {account}", settings.endpoint))
    } else {
        Err(format!(
            "signal-cli {version} has no account {account}: register it with `signal-cli -a {account} register`, then `verify`"
        ))
    }
}

/// Whether `listAccounts`' answer names `account`.
fn listed(accounts: &Value, account: &str) -> bool {
    accounts
        .as_array()
        .into_iter()
        .flatten()
        .any(|entry| entry["number"] == account || entry.as_str() == Some(account))
}
