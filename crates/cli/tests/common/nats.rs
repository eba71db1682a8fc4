//! Shared by the NATS tests: the `krait` binary, a stream of the test's own, and `watch` run
//! and read back.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

pub fn krait() -> Command {
    Command::new(env!("CARGO_BIN_EXE_krait"))
}

pub fn skip(msg: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipped: {msg}");
}

pub fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("krait-nats-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A stream of the test's own on the server `KRAIT_NATS_URL` names; deleted when dropped.
pub struct Stream {
    pub url: String,
}

impl Stream {
    pub fn new(server: &str, tag: &str) -> Stream {
        let url = format!(
            "{}/KRAIT_TEST_{tag}_{}",
            server.trim_end_matches('/'),
            std::process::id()
        );
        let s = Stream { url };
        s.delete();
        s
    }
    pub fn from_env(tag: &str) -> Option<Stream> {
        match std::env::var("KRAIT_NATS_URL") {
            Ok(server) => Some(Stream::new(&server, tag)),
            Err(_) => {
                skip("KRAIT_NATS_URL is not set");
                None
            }
        }
    }
    pub fn delete(&self) {
        use krait_transport::nats::{Connection, Target};
        if let Ok(c) = Connection::open(&Target::parse(&self.url).unwrap()) {
            let _ = c.delete_stream();
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.delete();
    }
}

/// `krait check H --json`: (exit code, the report).
pub fn check(h: &str) -> (i32, serde_json::Value) {
    let out = krait().args(["check", h, "--json"]).output().unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "check {h}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap(), v)
}

/// `krait watch STREAM --sessions N --json` with `args`, started.
pub fn watch(stream: &str, sessions: &str, args: &[&str]) -> Child {
    krait()
        .args(["watch", stream, "--sessions", sessions, "--json"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// A watch's end: its exit code (None when killed), its JSON lines (a last line cut by a
/// kill left out) and its stderr.
pub fn watched(c: Child) -> (Option<i32>, Vec<serde_json::Value>, String) {
    let out = c.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let lines = text
        .split_inclusive('\n')
        .filter(|l| l.ends_with('\n'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    (out.status.code(), lines, err)
}

/// Sends `signal` to `c` and reaps it.
pub fn stop(c: &mut Child, signal: i32) {
    unsafe { libc::kill(c.id() as i32, signal) };
    let _ = c.wait();
}

/// `krait generate H --workload blindw-rw --txns N --sessions 8 --fence-every 10` plus `more`.
pub fn generated(h: &std::path::Path, txns: &str, more: &[&str]) {
    let out = krait()
        .args(["generate", h.to_str().unwrap(), "--workload", "blindw-rw"])
        .args(["--txns", txns, "--sessions", "8", "--fence-every", "10"])
        .args(more)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `krait convert H STREAM` plus `more` (e.g. `--publishers 8`): the history published.
pub fn published(h: &std::path::Path, stream: &str, more: &[&str]) {
    let out = krait()
        .args(["convert", h.to_str().unwrap(), stream])
        .args(more)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
