//! `krait watch` may be started before the clients: it waits for its path to appear (for
//! `--idle-exit` at most), then follows it as usual.

use std::process::{Command, Stdio};
use std::time::Duration;

fn krait() -> Command {
    Command::new(env!("CARGO_BIN_EXE_krait"))
}

#[test]
fn watch_waits_for_its_directory_to_appear() {
    let dir = std::env::temp_dir().join(format!("krait-watch-wait-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let child = krait()
        .arg("watch")
        .arg(&dir)
        .args(["--idle-exit", "2s", "--interval", "50ms"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("c0.jsonl"),
        "{\"session\":\"c0\",\"txn\":1,\"ops\":[[\"w\",\"x\",1]]}\n\
         {\"session\":\"c0\",\"txn\":2,\"ops\":[[\"r\",\"x\",1]]}\n",
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stderr.contains("waiting for"), "{stderr}");
    assert!(stdout.contains("ACCEPT"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn watch_gives_up_on_a_path_that_never_appears() {
    let dir = std::env::temp_dir().join(format!("krait-watch-never-{}", std::process::id()));
    let out = krait()
        .arg("watch")
        .arg(&dir)
        .args(["--idle-exit", "300ms", "--interval", "50ms"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no such file or directory"), "{stderr}");
}
