//! Tests of `send_file` on real files: what it stages, what it refuses.

use passepartout_gateway::{ChatId, ConversationKey, GatewayId};
use serde_json::json;

use super::*;
use crate::safety::tools::testing;

struct Fixture {
    _temp: tempfile::TempDir,
    workspace: Arc<Workspace>,
    outgoing: PathBuf,
    tool: SendFileTool,
}

fn fixture() -> Fixture {
    let temp = tempfile::tempdir().unwrap();
    let workspace = Arc::new(Workspace::open(temp.path().join("ws")).unwrap());
    let outgoing = temp.path().join("outgoing");
    std::fs::write(temp.path().join("secret.txt"), "secret").unwrap();
    Fixture {
        // What the daemon's gateways take, as their components say.
        tool: SendFileTool::new(
            workspace.clone(),
            outgoing.clone(),
            crate::gateways::uploads(&crate::config::Config::default()),
        ),
        _temp: temp,
        workspace,
        outgoing,
    }
}

fn on(gateway: &str) -> ToolContext {
    ToolContext {
        conversation: ConversationKey {
            gateway: GatewayId::new(gateway).unwrap(),
            chat: ChatId::new("42").unwrap(),
        },
        ..testing::context()
    }
}

#[tokio::test]
async fn stages_a_copy_of_the_file_with_its_type_and_caption() {
    let f = fixture();
    std::fs::create_dir(f.workspace.root().join("reports")).unwrap();
    std::fs::write(f.workspace.root().join("reports/q3.pdf"), b"%PDF-1.7 fake").unwrap();
    let context = on("telegram");
    let said = f
        .tool
        .call(&context, json!({"path": "reports/q3.pdf", "caption": "Q3"}))
        .await
        .unwrap();
    assert!(
        said.contains("reports/q3.pdf") && said.contains("application/pdf"),
        "{said}"
    );
    let staged = context.outgoing.take();
    assert_eq!(staged.len(), 1);
    let file = &staged[0];
    assert_eq!(
        (
            file.name.as_str(),
            file.media_type.as_str(),
            file.size,
            file.caption.as_deref()
        ),
        ("q3.pdf", "application/pdf", 13, Some("Q3"))
    );
    assert!(file.temporary);
    assert!(Path::new(&file.path).starts_with(&f.outgoing), "{}", file.path);
    assert_eq!(std::fs::read(&file.path).unwrap(), b"%PDF-1.7 fake");
    // The copy does not follow later changes in the workspace.
    std::fs::write(f.workspace.root().join("reports/q3.pdf"), b"changed").unwrap();
    assert_eq!(std::fs::read(&file.path).unwrap(), b"%PDF-1.7 fake");
    remove_copy(Path::new(&file.path));
    assert_eq!(
        std::fs::read_dir(&f.outgoing).unwrap().count(),
        0,
        "the copy's folder goes too"
    );
}

#[tokio::test]
async fn the_socket_gets_the_workspace_path_itself() {
    let f = fixture();
    std::fs::write(f.workspace.root().join("notes.md"), b"# notes").unwrap();
    let context = on("socket");
    f.tool.call(&context, json!({"path": "./notes.md"})).await.unwrap();
    let staged = context.outgoing.take();
    assert_eq!(Path::new(&staged[0].path), f.workspace.root().join("notes.md"));
    assert!(!staged[0].temporary, "the workspace's own file is never removed");
    assert_eq!(staged[0].media_type, "text/markdown");
    assert!(!f.outgoing.exists(), "nothing was copied");
}

#[tokio::test]
async fn a_path_outside_the_workspace_is_refused_and_nothing_is_staged() {
    let f = fixture();
    let outside = f.workspace.root().parent().unwrap().join("secret.txt");
    std::os::unix::fs::symlink(&outside, f.workspace.root().join("link.txt")).unwrap();
    let context = on("telegram");
    for path in ["../secret.txt", outside.to_str().unwrap(), "link.txt"] {
        let refused = f.tool.call(&context, json!({ "path": path })).await.unwrap_err();
        assert!(matches!(refused, ToolError::Refused(_)), "{path}: {refused:?}");
    }
    assert!(context.outgoing.take().is_empty());
    assert!(!f.outgoing.exists(), "nothing was copied");
}

#[tokio::test]
async fn a_file_too_large_for_the_platform_gets_a_clear_answer() {
    let f = fixture();
    // Sparse: as large as it says, without the disk space.
    let big = std::fs::File::create(f.workspace.root().join("big.bin")).unwrap();
    big.set_len(passepartout_telegram::MAX_UPLOAD_BYTES + 1).unwrap();
    let context = on("telegram");
    let refused = f.tool.call(&context, json!({"path": "big.bin"})).await.unwrap_err();
    let ToolError::Refused(why) = refused else {
        panic!("{refused:?}")
    };
    assert!(why.contains("Telegram takes files of at most 50.0 MB"), "{why}");
    assert!(why.contains("50.0 MB") && why.contains("smaller"), "{why}");
    assert!(context.outgoing.take().is_empty());
    // Signal takes it.
    let signal = on("signal");
    f.tool.call(&signal, json!({"path": "big.bin"})).await.unwrap();
    let staged = signal.outgoing.take();
    assert_eq!(staged[0].size, passepartout_telegram::MAX_UPLOAD_BYTES + 1);
    remove_copy(Path::new(&staged[0].path));
}

#[tokio::test]
async fn empty_files_directories_and_bad_arguments_are_refused() {
    let f = fixture();
    std::fs::write(f.workspace.root().join("empty.txt"), b"").unwrap();
    std::fs::create_dir(f.workspace.root().join("dir")).unwrap();
    let context = on("socket");
    let empty = f.tool.call(&context, json!({"path": "empty.txt"})).await.unwrap_err();
    assert!(
        matches!(&empty, ToolError::Refused(why) if why.contains("empty")),
        "{empty:?}"
    );
    let dir = f.tool.call(&context, json!({"path": "dir"})).await.unwrap_err();
    assert!(
        matches!(&dir, ToolError::Failed(why) if why.contains("directory")),
        "{dir:?}"
    );
    let missing = f.tool.call(&context, json!({"path": "nope.txt"})).await.unwrap_err();
    assert!(
        matches!(&missing, ToolError::Failed(why) if why.contains("does not exist")),
        "{missing:?}"
    );
    let long = "x".repeat(MAX_CAPTION_CHARS + 1);
    let caption = f
        .tool
        .call(&context, json!({"path": "empty.txt", "caption": long}))
        .await
        .unwrap_err();
    assert!(matches!(caption, ToolError::InvalidArguments(_)));
    let unknown = f
        .tool
        .call(&context, json!({"path": "a", "to": "b"}))
        .await
        .unwrap_err();
    assert!(matches!(unknown, ToolError::InvalidArguments(_)));
    assert!(context.outgoing.take().is_empty());
}

#[tokio::test]
async fn at_start_only_the_copies_the_outbox_waits_on_are_kept() {
    use crate::store::{PendingOutbound, TurnCommit};
    use passepartout_gateway::OutboundBody;

    let f = fixture();
    std::fs::write(f.workspace.root().join("a.txt"), b"a").unwrap();
    std::fs::write(f.workspace.root().join("b.txt"), b"b").unwrap();
    let context = on("telegram");
    f.tool.call(&context, json!({"path": "a.txt"})).await.unwrap();
    f.tool.call(&context, json!({"path": "b.txt"})).await.unwrap();
    let mut staged = context.outgoing.take();
    let orphan = staged.pop().unwrap();
    let waiting = staged.pop().unwrap();
    let (_dir, store) = crate::store::tests_support::open_temp();
    let commit = TurnCommit {
        replies: vec![PendingOutbound {
            drafts: Vec::new(),
            in_reply_to: None,
            body: OutboundBody::File(waiting.clone()),
        }],
        ..TurnCommit::default()
    };
    store.commit_turn(&context.conversation, commit).unwrap();
    assert_eq!(prune_outgoing(&f.outgoing, &store).unwrap(), 1);
    assert!(Path::new(&waiting.path).exists(), "the outbox still sends it");
    assert!(!Path::new(&orphan.path).exists());
    assert!(!Path::new(&orphan.path).parent().unwrap().exists());
    let nowhere = f.outgoing.join("missing");
    assert_eq!(
        prune_outgoing(&nowhere, &store).unwrap(),
        0,
        "no folder yet: nothing to do"
    );
}

#[test]
fn sizes_read_as_people_say_them() {
    assert_eq!(size_text(12), "12 bytes");
    assert_eq!(size_text(12_345), "12.3 KB");
    assert_eq!(size_text(50_000_001), "50.0 MB");
}
