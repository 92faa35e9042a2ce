//! A real Matrix homeserver (Synapse) for the Matrix gateway's tests, and an
//! end-to-end encrypting client (matrix-nio) to talk to the gateway through
//! it, as a person would.
//!
//! Both come from the virtual environment `.ci/install-synapse` makes (run
//! here when it is missing, its output shown if that fails); where this
//! machine's Python cannot make one, the test says it skipped. Each
//! [`Synapse::start`] runs a homeserver named `localhost` on a temp dir of
//! its own: SQLite, no federation, rate limits lifted, listening on a port
//! the system picks, which its log names; it is ready once it has logged
//! that line, and it is killed with its process group when dropped.
//! [`Synapse::register`] makes accounts through the shared-secret admin API,
//! and [`Synapse::client`] a person's client: `tests/support/matrix_client.py`,
//! run once per action, whose device and keys persist in a folder of the
//! homeserver's temp dir, and which prints what it sent and each reply as a
//! JSON line.
//!
//! ```ignore
//! let Some(synapse) = Synapse::start("matrix::an_encrypted_dm_is_answered").await else {
//!     return; // no Synapse here: the skip is reported
//! };
//! let assistant = synapse.register("assistant", "assistant-password", false).await;
//! let alice = synapse.register("alice", "alice-password", false).await;
//! // ... a daemon logged in as the assistant on synapse.url() ...
//! let chat = synapse.client(&alice).dm(Ask::new(&assistant.id, "hello")).await;
//! assert!(chat.replies[0].decrypted);
//! // A conversation of several steps: an approval prompt, answered with 👍.
//! let steps = serde_json::json!([
//!     {"say": "run the tool"}, {"await": "token"}, {"react": "👍"}, {"await": "done"},
//! ]);
//! let chat = synapse.client(&alice).script(&assistant.id, &steps, true).await;
//! // Someone the assistant does not answer is turned away.
//! assert!(synapse.client(&eve).invite_declined(&assistant.id).await);
//! ```

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde::Deserialize;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::skip::{Need, skipped};

/// The homeserver's name: every user id ends in `:localhost`.
pub const SERVER_NAME: &str = "localhost";

/// How long Synapse may take to start: 2 to 4 s alone on a two-core
/// machine, many times that while the suite's other tests compete for it.
pub const START_BOUND: Duration = Duration::from_secs(90);

/// How long the client waits, by default, for the assistant to join the
/// room it is invited to.
pub const JOIN_WAIT: Duration = Duration::from_secs(60);

/// How long the client waits, by default, for the assistant's replies.
pub const REPLY_WAIT: Duration = Duration::from_secs(60);

/// What a client's run may take besides its own waits: the interpreter's
/// start, nio's imports, a login and a first sync, on a busy machine.
const CLIENT_MARGIN: Duration = Duration::from_secs(60);

/// What `.ci/install-synapse` exits with where it cannot install at all.
const CANNOT_INSTALL: i32 = 3;

/// How many homeservers run at once in one test binary: each is a Python
/// process of some 120 MB that takes seconds of processor to start. A test
/// waits for a slot before its homeserver starts, and holds one only.
static SLOTS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(2);

/// Synapse's rate limits of one bucket, and of several (each lifted).
const RATE_LIMITS: &[&str] = &[
    "rc_message",
    "rc_registration",
    "rc_admin_redaction",
    "rc_joins_per_room",
    "rc_key_requests",
    "rc_3pid_validation",
    "rc_third_party_invite",
    "rc_media_create",
    "rc_delayed_event_mgmt",
    "rc_room_creation",
    "rc_reports",
    "rc_user_directory",
    "rc_profile",
];
const NESTED_RATE_LIMITS: &[(&str, &[&str])] = &[
    ("rc_login", &["address", "account", "failed_attempts"]),
    ("rc_joins", &["local", "remote"]),
    ("rc_invites", &["per_room", "per_user", "per_issuer"]),
    ("rc_presence", &["per_user"]),
];
/// A rate no test reaches.
const LIFTED: &str = "{per_second: 1000, burst_count: 1000}";

/// The virtual environment with Synapse and matrix-nio, installed once per
/// test binary; or why it cannot be on this machine.
pub fn venv() -> Result<&'static Path, &'static str> {
    static VENV: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    VENV.get_or_init(install)
        .as_ref()
        .map(PathBuf::as_path)
        .map_err(String::as_str)
}

fn install() -> Result<PathBuf, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/install-synapse");
    let output = std::process::Command::new("bash")
        .arg(script)
        .output()
        .expect("run .ci/install-synapse");
    let stderr = String::from_utf8_lossy(&output.stderr);
    if output.status.code() == Some(CANNOT_INSTALL) {
        return Err(stderr.trim().to_owned());
    }
    assert!(output.status.success(), "installing Synapse failed:\n{stderr}");
    let venv = String::from_utf8(output.stdout).expect("a path in UTF-8");
    Ok(PathBuf::from(venv.trim()))
}

/// A running homeserver; killed, with its temp dir removed, when dropped.
pub struct Synapse {
    child: Child,
    /// `http://127.0.0.1:PORT`, the client-server API's base.
    url: String,
    shared_secret: String,
    python: PathBuf,
    /// Every line Synapse logged so far.
    log: Arc<Mutex<Vec<String>>>,
    dir: tempfile::TempDir,
    _slot: tokio::sync::SemaphorePermit<'static>,
}

impl Synapse {
    /// Starts a homeserver and waits until it listens; `None` (the skip
    /// reported for `test`) where Synapse cannot be installed here.
    pub async fn start(test: &str) -> Option<Synapse> {
        let venv = tokio::task::spawn_blocking(venv)
            .await
            .expect("the install did not panic");
        let venv = match venv {
            Ok(venv) => venv,
            Err(why) => {
                skipped(test, Need::Synapse, why);
                return None;
            }
        };
        let slot = SLOTS.acquire().await.expect("the homeservers' slots are never closed");
        let dir = tempfile::tempdir().expect("a temp dir for Synapse");
        let shared_secret = random_secret();
        let config = dir.path().join("homeserver.yaml");
        std::fs::write(&config, config_text(dir.path(), &shared_secret)).expect("write Synapse's config");
        let python = venv.join("bin/python");
        let mut child = Command::new(&python)
            .args(["-m", "synapse.app.homeserver", "--config-path"])
            .arg(&config)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            // Its own process group, killed whole when dropped.
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .expect("start Synapse");
        let log = Arc::new(Mutex::new(Vec::new()));
        let port = listening_port(&mut child, &log).await;
        Some(Synapse {
            child,
            url: format!("http://127.0.0.1:{port}"),
            shared_secret,
            python,
            log,
            dir,
            _slot: slot,
        })
    }

    /// The client-server API's base URL, `http://127.0.0.1:PORT`: what the
    /// gateway is configured with (user ids name `localhost`, which serves
    /// no discovery).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Every line Synapse logged so far, for a failing test to show.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    /// Makes the account `@local:localhost` with `password` (a server
    /// admin if `admin`), through the shared-secret registration API.
    pub async fn register(&self, local: &str, password: &str, admin: bool) -> User {
        let mut args = vec![
            "register",
            "--homeserver",
            self.url.as_str(),
            "--shared-secret",
            self.shared_secret.as_str(),
            "--user",
            local,
            "--password",
            password,
        ];
        if admin {
            args.push("--admin");
        }
        let output = run_client(&self.python, &args, Duration::ZERO).await;
        let answer = json_lines(&output, &args).into_iter().next();
        let registered: Registered =
            serde_json::from_value(answer.expect("a registration's answer")).expect("a registration's answer");
        User {
            id: registered.user_id,
            password: password.to_owned(),
            access_token: registered.access_token,
            device_id: registered.device_id,
        }
    }

    /// A client of `user`'s, its device kept in this homeserver's temp dir:
    /// every client of the same user is the same device.
    pub fn client(&self, user: &User) -> MatrixClient {
        MatrixClient {
            python: self.python.clone(),
            url: self.url.clone(),
            user: user.clone(),
            store: self.dir.path().join("clients").join(&user.id),
        }
    }
}

impl Drop for Synapse {
    fn drop(&mut self) {
        // Synapse runs no workers here, but whatever it started goes too.
        if let Some(pid) = self
            .child
            .id()
            .and_then(|pid| rustix::process::Pid::from_raw(pid as i32))
        {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}

/// Reads Synapse's log, which goes to its stderr, into `log`, until it
/// says which port it listens on (the port 0 of its config, as bound);
/// that port. Fails the test, showing the log, if it does not within
/// [`START_BOUND`].
async fn listening_port(child: &mut Child, log: &Arc<Mutex<Vec<String>>>) -> u16 {
    let stderr = child.stderr.take().expect("Synapse's stderr");
    let (port_tx, port_rx) = tokio::sync::oneshot::channel();
    // Keeps draining after the port, so that a full pipe never stalls it.
    tokio::spawn({
        let log = Arc::clone(log);
        async move {
            let mut lines = BufReader::new(stderr).lines();
            let mut port_tx = Some(port_tx);
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(port) = port_in(&line)
                    && let Some(tx) = port_tx.take()
                {
                    let _ = tx.send(port);
                }
                log.lock().unwrap().push(line);
            }
        }
    });
    match tokio::time::timeout(START_BOUND, port_rx).await {
        Ok(Ok(port)) => port,
        _ => panic!(
            "Synapse did not listen within {START_BOUND:?} (exited: {:?}); it logged:\n{}",
            child.try_wait().ok().flatten(),
            log.lock().unwrap().join("\n")
        ),
    }
}

/// The port in Synapse's `Synapse now listening on TCP port 45491`.
fn port_in(line: &str) -> Option<u16> {
    let (_, after) = line.split_once("Synapse now listening on TCP port ")?;
    after.split_whitespace().next()?.parse().ok()
}

/// A secret no one else knows: 32 hex digits from the kernel's random source.
fn random_secret() -> String {
    let mut bytes = [0_u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut random| random.read_exact(&mut bytes))
        .expect("read /dev/urandom");
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The homeserver's config: everything in `dir`, the log on stderr (no
/// `log_config`), port 0 so the system picks a free one, rate limits lifted,
/// and passwords hashed cheaply (registering and logging in are quicker).
fn config_text(dir: &Path, shared_secret: &str) -> String {
    // A JSON string is a YAML string too, whatever the path holds.
    let quoted = |path: &str| serde_json::Value::from(path).to_string();
    let in_dir = |name: &str| quoted(&dir.join(name).display().to_string());
    let mut text = format!(
        "server_name: {server_name}\n\
         listeners:\n  - {{port: 0, bind_addresses: ['127.0.0.1'], type: http, tls: false, \
         x_forwarded: false, resources: [{{names: [client], compress: false}}]}}\n\
         database: {{name: sqlite3, args: {{database: {database}}}}}\n\
         media_store_path: {media}\n\
         signing_key_path: {signing_key}\n\
         registration_shared_secret: {secret}\n\
         enable_registration: false\n\
         report_stats: false\n\
         bcrypt_rounds: 4\n\
         trusted_key_servers: []\n\
         suppress_key_server_warning: true\n\
         presence: {{enabled: false}}\n",
        server_name = quoted(SERVER_NAME),
        database = in_dir("homeserver.db"),
        media = in_dir("media_store"),
        signing_key = in_dir("signing.key"),
        secret = quoted(shared_secret),
    );
    for name in RATE_LIMITS {
        text += &*format!("{name}: {LIFTED}\n");
    }
    for (name, buckets) in NESTED_RATE_LIMITS {
        text += &*format!("{name}:\n");
        for bucket in *buckets {
            text += &*format!("  {bucket}: {LIFTED}\n");
        }
    }
    text
}

/// An account on the homeserver.
#[derive(Clone, Debug)]
pub struct User {
    /// `@local:localhost`.
    pub id: String,
    pub password: String,
    /// The token and device of the registration's own login.
    pub access_token: String,
    pub device_id: String,
}

#[derive(Deserialize)]
struct Registered {
    user_id: String,
    access_token: String,
    device_id: String,
}

/// A person's client, run once per action.
pub struct MatrixClient {
    python: PathBuf,
    url: String,
    user: User,
    store: PathBuf,
}

/// What the client says to whom, and what it waits for.
#[derive(Clone, Debug)]
pub struct Ask<'a> {
    /// Whom the room is for (the assistant's user id).
    pub to: &'a str,
    pub text: &'a str,
    /// Whether the room is end-to-end encrypted.
    pub encrypted: bool,
    /// How many replies to wait for, and for how long at most.
    pub replies: usize,
    pub join_wait: Duration,
    pub reply_wait: Duration,
}

impl<'a> Ask<'a> {
    /// `text` to `to`, encrypted, awaiting one reply.
    pub fn new(to: &'a str, text: &'a str) -> Ask<'a> {
        Ask {
            to,
            text,
            encrypted: true,
            replies: 1,
            join_wait: JOIN_WAIT,
            reply_wait: REPLY_WAIT,
        }
    }
}

/// A room the client opened: its message, and the replies to it.
#[derive(Debug)]
pub struct Chat {
    pub room: String,
    /// The event id of the client's (first) message.
    pub sent: String,
    /// Every message the assistant sent into the room, in order.
    pub replies: Vec<Reply>,
    /// What the client did and saw, in order: each message it sent, the
    /// assistant typing and its read receipts, and for a script each
    /// reaction it sent and each message it awaited.
    pub actions: Vec<Action>,
}

/// Something the client did in the room.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Action {
    /// A message (`say`, `reply`, or `dm`'s and `room`'s text).
    Sent {
        event_id: String,
        body: String,
        /// The message it replies to, for a `reply`.
        in_reply_to: Option<String>,
    },
    /// A `react` to `target`: whether it went end-to-end encrypted.
    Reacted {
        event_id: String,
        target: String,
        key: String,
        encrypted: bool,
    },
    /// An `await` met by the assistant's message `event_id`.
    Awaited { event_id: String, substring: String },
    /// The assistant was seen typing in the room (said once).
    Typing {},
    /// The assistant's read receipt on `event_id`.
    Read { event_id: String },
    /// An `await_file` met by the assistant's file `event_id`, downloaded
    /// (and decrypted, when it came `encrypted`) to `text`.
    File {
        event_id: String,
        name: String,
        text: String,
        encrypted: bool,
        caption: Option<String>,
    },
}

/// A message the assistant sent into the room, as the client received it.
#[derive(Clone, Debug, Deserialize)]
pub struct Reply {
    pub room: String,
    pub sender: String,
    pub body: String,
    pub formatted_body: Option<String>,
    /// `m.text`, `m.notice` or `m.emote`.
    pub msgtype: Option<String>,
    /// Whether it came end-to-end encrypted (and the client decrypted it).
    pub decrypted: bool,
    pub event_id: String,
    /// The event it answers (`m.in_reply_to`), if any.
    pub in_reply_to: Option<String>,
    /// The event it edits (`m.replace`), if any, and the edit's new text.
    pub replaces: Option<String>,
    pub new_body: Option<String>,
    /// The root of the thread it is in, if any.
    pub thread: Option<String>,
}

/// What the client exits with, and says, when the invitee declined.
const DECLINED: i32 = 2;

impl MatrixClient {
    /// Opens a direct chat with `ask.to`, says `ask.text` there, and waits
    /// for the replies. Fails the test, showing the client's stderr, if
    /// fewer come than asked for.
    pub async fn dm(&self, ask: Ask<'_>) -> Chat {
        self.chat("dm", &[], &ask).await
    }

    /// Makes a group room named `name`, invites `ask.to`, says `ask.text`
    /// mentioning it, and waits for the replies, as [`MatrixClient::dm`].
    pub async fn room(&self, name: &str, ask: Ask<'_>) -> Chat {
        self.chat("room", &["--name", name], &ask).await
    }

    /// Opens a direct chat with `to` (end-to-end encrypted if `encrypted`)
    /// and holds a conversation there: `steps`, a JSON list of steps as
    /// `matrix_client.py`'s `script` takes them (`{"say": TEXT}`,
    /// `{"await": TEXT, "wait": SECONDS}`, `{"react": KEY}`,
    /// `{"reply": TEXT}`, `{"send_file": NAME, "data": TEXT}`,
    /// `{"await_file": NAME}`; see its docs). Its replies are every message `to`
    /// sent meanwhile. Fails the test, showing the client's stderr, if an
    /// await is not met in time (or `to` does not join).
    pub async fn script(&self, to: &str, steps: &serde_json::Value, encrypted: bool) -> Chat {
        self.script_where(None, to, steps, encrypted).await
    }

    /// [`MatrixClient::script`] in the existing room `room`, once `to` is
    /// in it.
    pub async fn script_in(&self, room: &str, to: &str, steps: &serde_json::Value) -> Chat {
        self.script_where(Some(room), to, steps, false).await
    }

    /// Makes a group room named `name`, encrypted or not, inviting `to`;
    /// its id, without waiting for `to` to join.
    pub async fn create_room(&self, name: &str, to: &str, encrypted: bool) -> String {
        let mut args = vec!["--to", to, "--name", name];
        if encrypted {
            args.push("--encrypted");
        }
        let output = self.run("create", &args, JOIN_WAIT).await;
        let lines = json_lines(&output, &args);
        lines
            .iter()
            .find_map(|line| line["room"].as_str().map(str::to_owned))
            .unwrap_or_else(|| panic!("no room made: {lines:?}"))
    }

    async fn script_where(&self, room: Option<&str>, to: &str, steps: &serde_json::Value, encrypted: bool) -> Chat {
        let list = steps.as_array().expect("a script's steps are a JSON list");
        let awaits: Duration = list
            .iter()
            .filter(|step| step.get("await").is_some() || step.get("await_file").is_some())
            .map(|step| {
                step.get("wait")
                    .and_then(serde_json::Value::as_f64)
                    .map_or(REPLY_WAIT, Duration::from_secs_f64)
            })
            .sum();
        let steps = steps.to_string();
        let join_wait = JOIN_WAIT.as_secs_f64().to_string();
        let reply_wait = REPLY_WAIT.as_secs_f64().to_string();
        let mut args = vec![
            "--to",
            to,
            "--steps",
            steps.as_str(),
            "--wait-join",
            join_wait.as_str(),
            "--wait-reply",
            reply_wait.as_str(),
        ];
        if encrypted {
            args.push("--encrypted");
        }
        if let Some(room) = room {
            args.extend(["--room", room]);
        }
        let output = self.run("script", &args, JOIN_WAIT + awaits).await;
        chat_of(&output, &args)
    }

    /// Invites `to` to a direct chat, as [`MatrixClient::dm`] does (and
    /// says hello there if it joins, waiting for no reply): whether `to`
    /// declined the invitation, leaving the room. False if it joined;
    /// fails the test, showing the client's stderr, if the client failed
    /// otherwise (if `to` did neither within [`JOIN_WAIT`], say).
    pub async fn invite_declined(&self, to: &str) -> bool {
        let join_wait = JOIN_WAIT.as_secs_f64().to_string();
        let args = [
            "--to",
            to,
            "--text",
            "hello",
            "--encrypted",
            "--replies",
            "0",
            "--wait-join",
            join_wait.as_str(),
        ];
        let output = self.run("dm", &args, JOIN_WAIT).await;
        let stderr = String::from_utf8_lossy(&output.stderr);
        if output.status.code() == Some(DECLINED) && stderr.contains(&*format!("{to} declined the invitation")) {
            return true;
        }
        // Any other failure fails the test here, showing the stderr.
        json_lines(&output, &args);
        false
    }

    /// Runs the client's `command` as this user with `args` besides the
    /// login's, bounded by `waits` (the command's own) and a margin; its
    /// output, whatever its exit status.
    pub async fn run(&self, command: &str, args: &[&str], waits: Duration) -> std::process::Output {
        let store = self.store.to_str().expect("a store path in UTF-8");
        let mut all = vec![
            command,
            "--homeserver",
            self.url.as_str(),
            "--user",
            self.user.id.as_str(),
            "--password",
            self.user.password.as_str(),
            "--store",
            store,
        ];
        all.extend_from_slice(args);
        run_client(&self.python, &all, waits).await
    }

    async fn chat(&self, command: &str, extra: &[&str], ask: &Ask<'_>) -> Chat {
        let replies = ask.replies.to_string();
        let join_wait = ask.join_wait.as_secs_f64().to_string();
        let reply_wait = ask.reply_wait.as_secs_f64().to_string();
        let mut args = vec![
            "--to",
            ask.to,
            "--text",
            ask.text,
            "--replies",
            replies.as_str(),
            "--wait-join",
            join_wait.as_str(),
            "--wait-reply",
            reply_wait.as_str(),
        ];
        if ask.encrypted {
            args.push("--encrypted");
        }
        args.extend_from_slice(extra);
        let output = self.run(command, &args, ask.join_wait + ask.reply_wait).await;
        chat_of(&output, &args)
    }
}

/// The chat a client run printed: its room, its replies and its actions;
/// fails the test, showing the client's stderr, if the run failed.
fn chat_of(output: &std::process::Output, args: &[&str]) -> Chat {
    let mut chat = Chat {
        room: String::new(),
        sent: String::new(),
        replies: Vec::new(),
        actions: Vec::new(),
    };
    for line in json_lines(output, args) {
        if chat.room.is_empty()
            && let Some(room) = line["room"].as_str()
        {
            chat.room = room.to_owned();
        }
        if line["kind"] == "reply" {
            chat.replies
                .push(serde_json::from_value(line).expect("a reply the client prints"));
            continue;
        }
        let action: Action = serde_json::from_value(line).expect("an action the client prints");
        if let Action::Sent { event_id, .. } = &action
            && chat.sent.is_empty()
        {
            chat.sent = event_id.clone();
        }
        chat.actions.push(action);
    }
    chat
}

/// Runs `matrix_client.py` with `args`, bounded by `waits` and a margin.
async fn run_client(python: &Path, args: &[&str], waits: Duration) -> std::process::Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/matrix_client.py");
    let child = Command::new(python)
        .arg(script)
        .args(args)
        // Loopback requests go straight to the homeserver, whatever proxy
        // the machine names.
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("no_proxy", "127.0.0.1,localhost")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start matrix_client.py");
    let bound = waits + CLIENT_MARGIN;
    tokio::time::timeout(bound, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("matrix_client.py {args:?} ran past {bound:?}"))
        .expect("matrix_client.py's output")
}

/// The JSON lines a client run printed; fails the test, showing its stderr,
/// if it failed.
fn json_lines(output: &std::process::Output, args: &[&str]) -> Vec<serde_json::Value> {
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "matrix_client.py {args:?} failed ({}):\n{}\nit printed:\n{stdout}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
        .lines()
        .map(|line| {
            serde_json::from_str::<serde_json::Value>(line).unwrap_or_else(|error| panic!("not JSON ({error}): {line}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_port_is_read_from_the_line_that_says_it_listens() {
        let line = "2026-11-29 19:12:01,878 - synapse.app._base - 512 - INFO - call_when_running - \
                    Synapse now listening on TCP port 45491";
        assert_eq!(port_in(line), Some(45491));
        assert_eq!(port_in("Synapse now listening on Unix Socket at: /x"), None);
    }
}
