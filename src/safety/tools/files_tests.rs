//! Tests of `read_file`, `list_dir` and `write_file` on real files.

use std::os::unix::fs::symlink;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;

use super::*;
use crate::safety::tools::testing;

struct Fixture {
    _temp: tempfile::TempDir,
    workspace: Arc<Workspace>,
    outside: PathBuf,
    context: ToolContext,
    read: ReadFileTool,
    list: ListDirTool,
    write: WriteFileTool,
}

impl Fixture {
    fn root(&self) -> &Path {
        self.workspace.root()
    }
}

fn fixture_with(config: FilesConfig) -> Fixture {
    let temp = tempfile::tempdir().unwrap();
    let workspace = Arc::new(Workspace::open(temp.path().join("ws")).unwrap());
    let outside = temp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "secret").unwrap();
    Fixture {
        read: ReadFileTool::new(workspace.clone(), &config),
        list: ListDirTool::new(workspace.clone()),
        write: WriteFileTool::new(workspace.clone(), &config),
        _temp: temp,
        workspace,
        outside,
        context: testing::context(),
    }
}

fn fixture() -> Fixture {
    fixture_with(FilesConfig::default())
}

fn refusal(result: Result<String, ToolError>) -> String {
    match result {
        Err(ToolError::Refused(message)) => message,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn write_read_list_round_trip() {
    let f = fixture();
    let written = f
        .write
        .call(&f.context, json!({"path": "notes/day/one.txt", "content": "héllo\n"}))
        .await
        .unwrap();
    assert_eq!(written, "wrote 7 bytes to `notes/day/one.txt`");
    let appended = f
        .write
        .call(
            &f.context,
            json!({"path": "notes/day/one.txt", "content": "again\n", "append": true}),
        )
        .await
        .unwrap();
    assert_eq!(appended, "appended 6 bytes to `notes/day/one.txt`");
    let text = f
        .read
        .call(&f.context, json!({"path": "notes/day/one.txt"}))
        .await
        .unwrap();
    assert_eq!(text, "héllo\nagain\n");
    assert_eq!(
        std::fs::read_to_string(f.root().join("notes/day/one.txt")).unwrap(),
        text
    );

    // Replacing, not appending, truncates.
    f.write
        .call(&f.context, json!({"path": "notes/day/one.txt", "content": "new"}))
        .await
        .unwrap();
    assert_eq!(
        f.read
            .call(&f.context, json!({"path": "notes/day/one.txt"}))
            .await
            .unwrap(),
        "new"
    );

    assert_eq!(f.list.call(&f.context, json!({})).await.unwrap(), "notes/");
    assert_eq!(f.list.call(&f.context, json!({"path": ""})).await.unwrap(), "notes/");
    assert_eq!(f.list.call(&f.context, json!({"path": "notes"})).await.unwrap(), "day/");
    assert_eq!(
        f.list.call(&f.context, json!({"path": "notes/day"})).await.unwrap(),
        "one.txt"
    );
}

#[tokio::test]
async fn list_sorts_marks_and_shows_links() {
    let f = fixture();
    std::fs::write(f.root().join("b.txt"), "").unwrap();
    std::fs::create_dir(f.root().join("c")).unwrap();
    std::fs::write(f.root().join("a.txt"), "").unwrap();
    symlink("a.txt", f.root().join("link")).unwrap();
    symlink(&f.outside, f.root().join("away")).unwrap();
    let listing = f.list.call(&f.context, json!({"path": "."})).await.unwrap();
    let away = format!("away -> {}", f.outside.display());
    assert_eq!(listing, ["a.txt", &away, "b.txt", "c/", "link -> a.txt"].join("\n"));

    std::fs::create_dir(f.root().join("empty")).unwrap();
    assert_eq!(
        f.list.call(&f.context, json!({"path": "empty"})).await.unwrap(),
        "(empty directory)"
    );
    // Listing through the outside link is refused, not followed.
    assert!(refusal(f.list.call(&f.context, json!({"path": "away"})).await).contains("absolute target"));
}

#[tokio::test]
async fn list_caps_the_number_of_entries() {
    let f = fixture();
    let extra = 7;
    for index in 0..MAX_LIST_ENTRIES + extra {
        std::fs::write(f.root().join(format!("f{index:05}")), "").unwrap();
    }
    let listing = f.list.call(&f.context, json!({})).await.unwrap();
    let lines: Vec<&str> = listing.lines().collect();
    assert_eq!(lines.len(), MAX_LIST_ENTRIES + 1);
    assert_eq!(lines[0], "f00000");
    assert_eq!(lines[MAX_LIST_ENTRIES - 1], format!("f{:05}", MAX_LIST_ENTRIES - 1));
    assert!(lines[MAX_LIST_ENTRIES].starts_with(&format!("[{extra} more entries not shown")));
}

#[tokio::test]
async fn paths_leaving_the_workspace_are_refused_by_every_tool() {
    let f = fixture();
    for path in ["../x", "/etc/passwd", "a/../../x", ""] {
        let read = refusal(f.read.call(&f.context, json!({"path": path})).await);
        let write = refusal(f.write.call(&f.context, json!({"path": path, "content": "x"})).await);
        assert_eq!(read, write, "{path}");
        if !path.is_empty() {
            assert_eq!(refusal(f.list.call(&f.context, json!({"path": path})).await), read);
        }
    }
    assert!(!f.workspace.root().parent().unwrap().join("x").exists());
}

#[tokio::test]
async fn a_link_to_a_directory_outside_is_not_followed() {
    let f = fixture();
    symlink("../outside", f.root().join("out")).unwrap();
    let read = refusal(f.read.call(&f.context, json!({"path": "out/secret.txt"})).await);
    assert!(
        read.contains("`out`") && read.contains("outside the workspace"),
        "{read}"
    );
    let write = refusal(
        f.write
            .call(&f.context, json!({"path": "out/new.txt", "content": "x"}))
            .await,
    );
    assert!(write.contains("outside the workspace"), "{write}");
    let deeper = refusal(
        f.write
            .call(&f.context, json!({"path": "out/sub/new.txt", "content": "x"}))
            .await,
    );
    assert!(deeper.contains("outside the workspace"), "{deeper}");
    assert!(!f.outside.join("new.txt").exists());
    assert!(!f.outside.join("sub").exists());
}

#[tokio::test]
async fn a_final_link_to_a_file_outside_is_not_followed() {
    let f = fixture();
    symlink("../outside/secret.txt", f.root().join("secret")).unwrap();
    symlink("../outside/planted.txt", f.root().join("dangling")).unwrap();
    let read = refusal(f.read.call(&f.context, json!({"path": "secret"})).await);
    assert!(read.contains("outside the workspace"), "{read}");
    refusal(
        f.write
            .call(&f.context, json!({"path": "secret", "content": "gotcha"}))
            .await,
    );
    refusal(
        f.write
            .call(&f.context, json!({"path": "dangling", "content": "gotcha"}))
            .await,
    );
    assert_eq!(std::fs::read_to_string(f.outside.join("secret.txt")).unwrap(), "secret");
    assert!(!f.outside.join("planted.txt").exists());
}

#[tokio::test]
async fn a_link_inside_the_workspace_is_followed() {
    let f = fixture();
    std::fs::create_dir(f.root().join("real")).unwrap();
    symlink("real", f.root().join("alias")).unwrap();
    f.write
        .call(&f.context, json!({"path": "alias/f.txt", "content": "via link"}))
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(f.root().join("real/f.txt")).unwrap(),
        "via link"
    );
    assert_eq!(
        f.read.call(&f.context, json!({"path": "alias/f.txt"})).await.unwrap(),
        "via link"
    );
}

#[tokio::test]
async fn binary_and_non_utf8_files_are_refused() {
    let f = fixture();
    std::fs::write(f.root().join("nul.bin"), b"abc\0def").unwrap();
    std::fs::write(f.root().join("latin1.txt"), b"caf\xe9").unwrap();
    std::fs::write(f.root().join("empty.txt"), b"").unwrap();
    assert!(refusal(f.read.call(&f.context, json!({"path": "nul.bin"})).await).contains("binary"));
    let latin = refusal(f.read.call(&f.context, json!({"path": "latin1.txt"})).await);
    assert!(latin.contains("not UTF-8") && latin.contains("offset 3"), "{latin}");
    assert_eq!(
        f.read.call(&f.context, json!({"path": "empty.txt"})).await.unwrap(),
        "(empty file)"
    );
}

#[tokio::test]
async fn too_large_reads_and_writes_are_refused_with_the_size() {
    let f = fixture_with(FilesConfig {
        max_read_bytes: 10,
        max_write_bytes: 5,
    });
    std::fs::write(f.root().join("ten.txt"), "0123456789").unwrap();
    std::fs::write(f.root().join("eleven.txt"), "0123456789a").unwrap();
    assert_eq!(
        f.read.call(&f.context, json!({"path": "ten.txt"})).await.unwrap(),
        "0123456789"
    );
    let read = refusal(f.read.call(&f.context, json!({"path": "eleven.txt"})).await);
    assert!(
        read.contains("is 11 bytes") && read.contains("limit of 10 bytes"),
        "{read}"
    );

    let write = refusal(
        f.write
            .call(&f.context, json!({"path": "w.txt", "content": "123456"}))
            .await,
    );
    assert!(
        write.contains("is 6 bytes") && write.contains("limit of 5 bytes"),
        "{write}"
    );
    assert!(!f.root().join("w.txt").exists());
    f.write
        .call(&f.context, json!({"path": "w.txt", "content": "12345"}))
        .await
        .unwrap();
}

#[tokio::test]
async fn directories_and_missing_files_get_a_hint() {
    let f = fixture();
    std::fs::create_dir(f.root().join("dir")).unwrap();
    std::fs::write(f.root().join("file"), "x").unwrap();
    let hint = |result: Result<String, ToolError>| match result {
        Err(ToolError::Failed(message)) => message,
        other => panic!("expected a failure, got {other:?}"),
    };
    assert!(hint(f.read.call(&f.context, json!({"path": "dir"})).await).contains("list_dir"));
    assert!(hint(f.read.call(&f.context, json!({"path": "missing"})).await).contains("does not exist"));
    assert!(hint(f.write.call(&f.context, json!({"path": "dir", "content": "x"})).await).contains("directory"));
    assert!(hint(f.list.call(&f.context, json!({"path": "file"})).await).contains("not a directory"));
    let under_file = f
        .write
        .call(&f.context, json!({"path": "file/x", "content": "x"}))
        .await;
    assert!(matches!(under_file, Err(ToolError::Failed(_))), "{under_file:?}");
}

#[tokio::test]
async fn a_fifo_is_refused_without_blocking() {
    let f = fixture();
    let status = std::process::Command::new("mkfifo")
        .arg(f.root().join("pipe"))
        .status()
        .unwrap();
    assert!(status.success());
    let guard = Duration::from_secs(10);
    let read = tokio::time::timeout(guard, f.read.call(&f.context, json!({"path": "pipe"})))
        .await
        .expect("read_file blocked on a FIFO");
    assert!(refusal(read).contains("not a regular file"));
    let write = tokio::time::timeout(guard, f.write.call(&f.context, json!({"path": "pipe", "content": "x"})))
        .await
        .expect("write_file blocked on a FIFO");
    // No reader: opening for writing fails at once (ENXIO) instead of waiting.
    assert!(write.is_err(), "{write:?}");
    assert!(
        f.list
            .call(&f.context, json!({}))
            .await
            .unwrap()
            .contains("pipe (special file)")
    );
}

#[tokio::test]
async fn bad_arguments_are_invalid_arguments() {
    let f = fixture();
    let cases: [(&dyn Tool, serde_json::Value); 7] = [
        (&f.read, json!({})),
        (&f.read, json!({"path": 3})),
        (&f.read, json!({"path": "a", "mode": "r"})),
        (&f.list, json!({"dir": "a"})),
        (&f.write, json!({"path": "a"})),
        (&f.write, json!({"path": "a", "content": "x", "append": "yes"})),
        (&f.write, json!({"path": "a", "content": "x", "overwrite": true})),
    ];
    for (tool, arguments) in cases {
        let result = tool.call(&f.context, arguments.clone()).await;
        assert!(
            matches!(result, Err(ToolError::InvalidArguments(_))),
            "{arguments}: {result:?}"
        );
    }
    assert!(!f.root().join("a").exists());
}

#[test]
fn specs_are_closed_object_schemas() {
    let f = fixture();
    let specs = tools(&f.workspace, &FilesConfig::default());
    let names: Vec<String> = specs.iter().map(|tool| tool.spec().name).collect();
    assert_eq!(names, ["read_file", "list_dir", "write_file"]);
    for tool in specs {
        let spec = tool.spec();
        assert_eq!(spec.parameters["type"], "object", "{}", spec.name);
        assert_eq!(spec.parameters["additionalProperties"], false, "{}", spec.name);
        assert!(!spec.description.is_empty());
    }
}
