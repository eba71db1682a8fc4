//! Histories over NATS JetStream, end to end through the `krait` binary: collector processes
//! publish (`krait run --publish`), `krait watch nats://…` verifies while they run, and
//! `krait check nats://…` reads the stream whole. What the stream delivers is compared with
//! the collectors' own local logs: nothing lost, nothing twice — also when the NATS server
//! restarts mid-run and when a collector is killed for good.
//!
//! Needs `KRAIT_NATS_URL` (nats://HOST:PORT with JetStream; `.ci/run` sets it) and, for the
//! database runs, `KRAIT_PG_URL`; the restart test starts its own `nats-server` (on PATH or
//! /usr/sbin). Each test uses a stream of its own and deletes it.

mod common;

use common::TempPg;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

fn krait() -> Command {
    Command::new(env!("CARGO_BIN_EXE_krait"))
}

fn skip(msg: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipped: {msg}");
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("krait-nats-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A stream of the test's own on the server `KRAIT_NATS_URL` names; deleted when dropped.
struct Stream {
    url: String,
}

impl Stream {
    fn new(server: &str, tag: &str) -> Stream {
        let url = format!(
            "{}/KRAIT_TEST_{tag}_{}",
            server.trim_end_matches('/'),
            std::process::id()
        );
        let s = Stream { url };
        s.delete();
        s
    }
    fn from_env(tag: &str) -> Option<Stream> {
        match std::env::var("KRAIT_NATS_URL") {
            Ok(server) => Some(Stream::new(&server, tag)),
            Err(_) => {
                skip("KRAIT_NATS_URL is not set");
                None
            }
        }
    }
    fn delete(&self) {
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
fn check(h: &str) -> (i32, serde_json::Value) {
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

/// Copies every session log of `dirs` into one directory: the whole history as the
/// collectors wrote it locally.
fn merged(dirs: &[PathBuf], into: &Path) -> String {
    for d in dirs {
        for e in std::fs::read_dir(d).unwrap().flatten() {
            if e.path().extension().is_some_and(|x| x == "jsonl") {
                std::fs::copy(e.path(), into.join(e.file_name())).unwrap();
            }
        }
    }
    into.display().to_string()
}

fn run_args(store: &str, stream: &str, out: &Path) -> Vec<String> {
    [
        "run",
        "--store",
        store,
        "--publish",
        stream,
        "--out",
        out.to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec()
}

fn wait_ok(c: Child, what: &str) {
    let out = c.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `krait watch STREAM --sessions N --json` with `args`, started.
fn watch(stream: &str, sessions: &str, args: &[&str]) -> Child {
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
fn watched(c: Child) -> (Option<i32>, Vec<serde_json::Value>, String) {
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

#[test]
fn eight_collector_processes_publish_one_history_that_watch_verifies_exactly_once() {
    let (Some(stream), Some(db)) = (Stream::from_env("eight"), TempPg::new("eight")) else {
        return;
    };
    let root = tmp("eight");
    // One process loads the initial rows; the eight join it.
    let setup = krait()
        .args([
            "run",
            "--store",
            &db.url,
            "--workload",
            "twitter",
            "--txns",
            "0",
        ])
        .arg("--out")
        .arg(root.join("setup"))
        .output()
        .unwrap();
    assert!(
        setup.status.success(),
        "{}",
        String::from_utf8_lossy(&setup.stderr)
    );
    let watch = watch(&stream.url, "16", &["--idle-exit", "5s"]);
    let dirs: Vec<PathBuf> = (0..8).map(|k| root.join(format!("host{k}"))).collect();
    let hosts: Vec<Child> = dirs
        .iter()
        .enumerate()
        .map(|(k, d)| {
            krait()
                .args(run_args(&db.url, &stream.url, d))
                .args(["--workload", "twitter", "--clients", "2", "--txns", "2500"])
                .args(["--no-setup", "--first-client", &(2 * k).to_string()])
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (k, h) in hosts.into_iter().enumerate() {
        wait_ok(h, &format!("host {k}"));
    }
    let (code, lines, err) = watched(watch);
    assert_eq!(code, Some(0), "{lines:?}{err}");
    let last = lines.last().unwrap();
    assert_eq!(last["verdict"], "ACCEPT", "{last}");
    // The stream holds exactly what the collectors logged locally.
    let (code, local) = check(&merged(&dirs, &tmp("eight-merged")));
    assert_eq!(code, 0, "{local}");
    let (code, streamed) = check(&stream.url);
    assert_eq!(code, 0, "{streamed}");
    assert_eq!(streamed["history"], local["history"]);
    assert!(
        local["history"]["committed"].as_u64().unwrap() > 15_000,
        "{local}"
    );
    // ... and watch checked every one of those transactions, once.
    assert_eq!(last["history"]["txns"], local["history"]["txns"], "{last}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn lost_updates_at_read_committed_are_caught_through_the_stream() {
    let (Some(stream), Some(db)) = (Stream::from_env("lost"), TempPg::new("lost")) else {
        return;
    };
    let dir = tmp("lost");
    let run = krait()
        .args(run_args(&db.url, &stream.url, &dir.join("h")))
        .args(["--workload", "lost-update", "--isolation", "read-committed"])
        .args(["--clients", "4", "--txns", "400"])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let (code, lines, _) = watched(watch(&stream.url, "4", &["--idle-exit", "2s"]));
    assert_eq!(code, Some(1), "{lines:?}");
    let last = lines.last().unwrap();
    assert_eq!(last["verdict"], "REJECT", "{last}");
    assert!(!last["cycle"].as_array().unwrap().is_empty(), "{last}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The collectors' fault case: eight publishers replay a history with fractured reads (a
/// reader sees one of a transaction's writes and misses another, which no database at
/// SERIALIZABLE does, so it comes from the simulated store) while watch verifies.
#[test]
fn fractured_reads_published_by_eight_hosts_are_caught_with_their_cycle() {
    let Some(stream) = Stream::from_env("fractured") else {
        return;
    };
    let dir = tmp("fractured");
    let h = dir.join("h.jsonl");
    let gen = krait()
        .args(["generate", h.to_str().unwrap(), "--workload", "blindw-rw"])
        .args(["--txns", "20000", "--sessions", "8", "--fence-every", "10"])
        .args(["--fractured-reads", "0.001"])
        .output()
        .unwrap();
    assert!(
        gen.status.success(),
        "{}",
        String::from_utf8_lossy(&gen.stderr)
    );
    let (one_shot_code, one_shot) = check(h.to_str().unwrap());
    assert_eq!((one_shot_code, &one_shot["verdict"]), (1, &"REJECT".into()));
    let w = watch(&stream.url, "8", &["--idle-exit", "3s"]);
    let conv = krait()
        .args([
            "convert",
            h.to_str().unwrap(),
            &stream.url,
            "--publishers",
            "8",
        ])
        .output()
        .unwrap();
    assert!(
        conv.status.success(),
        "{}",
        String::from_utf8_lossy(&conv.stderr)
    );
    let (code, lines, err) = watched(w);
    assert_eq!(code, Some(1), "{lines:?} {err}");
    let last = lines.last().unwrap();
    assert_eq!(last["verdict"], "REJECT", "{last}");
    // A fractured read is a cycle through a write→read edge and an anti-dependency: the
    // reader read from T1 and missed T1's other write, so it precedes T1 on that key.
    let cycle = last["cycle"].as_array().unwrap();
    let kinds: Vec<&str> = cycle.iter().filter_map(|e| e["kind"].as_str()).collect();
    assert!(kinds.contains(&"wr") && kinds.contains(&"rw"), "{last}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Records that arrive late and out of order across subjects: every other session is
/// published while watch runs, the rest — whose writes the first ones' reads name — 1.5 s
/// later.
/// The readers wait for their writers instead of being rejected, nothing is collected before
/// every expected session has spoken, and every transaction is checked once: ACCEPT.
#[test]
fn sessions_published_late_and_out_of_order_are_waited_for_and_checked_once() {
    let Some(stream) = Stream::from_env("late") else {
        return;
    };
    let dir = tmp("late");
    let h = dir.join("h.jsonl");
    let gen = krait()
        .args(["generate", h.to_str().unwrap(), "--workload", "blindw-rw"])
        .args(["--txns", "8000", "--sessions", "8", "--fence-every", "10"])
        .output()
        .unwrap();
    assert!(
        gen.status.success(),
        "{}",
        String::from_utf8_lossy(&gen.stderr)
    );
    // Split by session, every other one late.
    let text = std::fs::read_to_string(&h).unwrap();
    let (mut early, mut late) = (String::new(), String::new());
    let mut names = std::collections::HashMap::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let seen = names.len();
        let n = *names.entry(v["session"].to_string()).or_insert(seen);
        let half = if n % 2 == 0 { &mut early } else { &mut late };
        half.push_str(line);
        half.push('\n');
    }
    assert_eq!(names.len(), 8);
    let (h1, h2) = (dir.join("early.jsonl"), dir.join("late.jsonl"));
    std::fs::write(&h1, early).unwrap();
    std::fs::write(&h2, late).unwrap();
    let publish = |part: &Path| {
        let out = krait()
            .args([
                "convert",
                part.to_str().unwrap(),
                &stream.url,
                "--publishers",
                "4",
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let w = watch(&stream.url, "8", &["--idle-exit", "4s"]);
    publish(&h1);
    std::thread::sleep(Duration::from_millis(1500));
    publish(&h2);
    let (code, lines, err) = watched(w);
    assert_eq!(code, Some(0), "{lines:?} {err}");
    let last = lines.last().unwrap();
    assert_eq!(last["verdict"], "ACCEPT", "{last}");
    let (_, whole) = check(h.to_str().unwrap());
    assert_eq!(last["history"]["txns"], whole["history"]["txns"], "{last}");
    // The early half waited: some round ran with readers still waiting for the late half.
    assert!(
        lines
            .iter()
            .any(|l| l["waiting"].as_u64().is_some_and(|n| n > 0)),
        "no reader waited: {lines:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn nats_server() -> Option<PathBuf> {
    [
        "/usr/sbin/nats-server",
        "/usr/bin/nats-server",
        "/usr/local/bin/nats-server",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.exists())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start_server(bin: &Path, port: u16, store: &Path) -> Child {
    let c = Command::new(bin)
        .args(["-a", "127.0.0.1", "-p", &port.to_string(), "-js", "-sd"])
        .arg(store)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    c
}

fn stop(c: &mut Child, signal: i32) {
    unsafe { libc::kill(c.id() as i32, signal) };
    let _ = c.wait();
}

#[test]
fn a_nats_restart_mid_run_loses_and_duplicates_nothing() {
    let Some(bin) = nats_server() else {
        skip("no nats-server (apt-get install nats-server)");
        return;
    };
    let dir = tmp("restart");
    let port = free_port();
    let mut server = start_server(&bin, port, &dir.join("js"));
    let stream = Stream::new(&format!("nats://127.0.0.1:{port}"), "restart");
    let sqlite = format!("sqlite:{}", dir.join("db.sqlite").display());
    let mut run = krait()
        .args(run_args(&sqlite, &stream.url, &dir.join("h")))
        .args([
            "--workload",
            "blindw-rw",
            "--clients",
            "4",
            "--txns",
            "4000",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    assert!(
        run.try_wait().unwrap().is_none(),
        "the run ended before the restart"
    );
    // Stopped mid-run and back a second later, on the same store: publishers retry.
    stop(&mut server, libc::SIGTERM);
    std::thread::sleep(Duration::from_secs(1));
    let mut server = start_server(&bin, port, &dir.join("js"));
    wait_ok(run, "the run across the restart");
    let (code, local) = check(dir.join("h").to_str().unwrap());
    assert_eq!(code, 0, "{local}");
    let (code, streamed) = check(&stream.url);
    assert_eq!(code, 0, "{streamed}");
    assert_eq!(streamed["history"], local["history"]);
    drop(stream);
    stop(&mut server, libc::SIGTERM);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_collector_killed_for_good_leaves_at_most_an_unknown_outcome() {
    let Some(stream) = Stream::from_env("killed") else {
        return;
    };
    let dir = tmp("killed");
    let sqlite = format!("sqlite:{}", dir.join("db.sqlite").display());
    let mut run = krait()
        .args(run_args(&sqlite, &stream.url, &dir.join("h")))
        .args([
            "--workload",
            "blindw-rw",
            "--clients",
            "4",
            "--txns",
            "100000",
        ])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    stop(&mut run, libc::SIGKILL);
    // The stream says no more than the database may have done: accepted, in rounds too.
    let (code, streamed) = check(&stream.url);
    assert_eq!(code, 0, "{streamed}");
    assert!(
        streamed["history"]["committed"].as_u64().unwrap() > 0,
        "{streamed}"
    );
    let (code, lines, _) = watched(watch(&stream.url, "4", &["--idle-exit", "1s"]));
    assert_eq!(code, Some(0), "{lines:?}");
    let last = lines.last().unwrap();
    assert_eq!(
        last["history"]["txns"], streamed["history"]["txns"],
        "{last}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_host_lost_for_good_times_out_and_collection_goes_on() {
    let Some(stream) = Stream::from_env("lost_host") else {
        return;
    };
    let dir = tmp("lost-host");
    let sqlite = format!("sqlite:{}", dir.join("db.sqlite").display());
    let setup = krait()
        .args(["run", "--store", &sqlite, "--txns", "0", "--out"])
        .arg(dir.join("setup"))
        .output()
        .unwrap();
    assert!(setup.status.success());
    let watch = watch(
        &stream.url,
        "4",
        &[
            "--idle-exit",
            "4s",
            "--session-timeout",
            "2s",
            "--max-round",
            "500",
        ],
    );
    let host = |k: usize, txns: &str| {
        krait()
            .args(run_args(&sqlite, &stream.url, &dir.join(format!("h{k}"))))
            .args(["--workload", "blindw-rw", "--clients", "2", "--txns", txns])
            .args(["--no-setup", "--first-client", &(2 * k).to_string()])
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let survivor = host(0, "12000");
    let mut lost = host(1, "1000000");
    std::thread::sleep(Duration::from_millis(800));
    stop(&mut lost, libc::SIGKILL);
    wait_ok(survivor, "the surviving host");
    let (code, lines, err) = watched(watch);
    assert_eq!(code, Some(0), "{lines:?}{err}");
    let lost_at: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].get("session_lost").is_some())
        .collect();
    let mut names: Vec<&str> = lost_at
        .iter()
        .map(|&i| lines[i]["session_lost"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["c2", "c3"], "lost: {names:?}\n{err}");
    let last = lines.last().unwrap();
    assert_eq!(last["verdict"], "ACCEPT", "{last}");
    let all = last["history"]["txns"].as_u64().unwrap();
    // Collection went on: fences agreed past where the lost sessions stopped, and more was
    // deleted after (what the lost sessions' last transactions may still precede stays).
    let round = |i: usize| {
        lines[..i]
            .iter()
            .rev()
            .find(|l| l.get("epoch_agree").is_some())
    };
    let agree = |r: Option<&serde_json::Value>, f: &str| r.map_or(0, |r| r[f].as_u64().unwrap());
    // A session counts as lost a timeout after its last record *arrived*, which a verifier
    // catching up with a backlog sees late: measured from the last of the two.
    let before = agree(round(lost_at[1]), "epoch_agree");
    let deleted_before = agree(round(lost_at[1]), "deleted_total");
    let end = round(lines.len()).unwrap();
    assert!(
        end["epoch_agree"].as_u64().unwrap() > before + 20,
        "{before} → {end}"
    );
    assert!(
        end["deleted_total"].as_u64().unwrap() > deleted_before,
        "{deleted_before} → {end}"
    );
    let (code, streamed) = check(&stream.url);
    assert_eq!(code, 0, "{streamed}");
    assert_eq!(streamed["history"]["txns"].as_u64().unwrap(), all);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_restarted_watch_resumes_after_its_last_reported_round() {
    let Some(stream) = Stream::from_env("resume") else {
        return;
    };
    let dir = tmp("resume");
    let h = dir.join("h.jsonl");
    let gen = krait()
        .args(["generate", h.to_str().unwrap(), "--workload", "blindw-rw"])
        .args(["--txns", "60000", "--sessions", "8", "--fence-every", "10"])
        .output()
        .unwrap();
    assert!(
        gen.status.success(),
        "{}",
        String::from_utf8_lossy(&gen.stderr)
    );
    let conv = krait()
        .args(["convert", h.to_str().unwrap(), &stream.url])
        .output()
        .unwrap();
    assert!(
        conv.status.success(),
        "{}",
        String::from_utf8_lossy(&conv.stderr)
    );
    let ckpt = dir.join("watch.ckpt");
    let ckpt_arg = ckpt.to_str().unwrap();
    let resumable = |idle: &str| {
        watch(
            &stream.url,
            "8",
            &[
                "--idle-exit",
                idle,
                "--max-round",
                "1000",
                "--interval",
                "50ms",
                "--checkpoint",
                ckpt_arg,
                "--checkpoint-every",
                "100ms",
            ],
        )
    };
    // The checkpoint's header line names the round it was saved after.
    let saved = || -> u64 {
        std::fs::read(&ckpt)
            .ok()
            .and_then(|b| {
                let line = b.split(|&c| c == b'\n').next()?.to_vec();
                serde_json::from_slice::<serde_json::Value>(&line).ok()
            })
            .and_then(|v| v["round"].as_u64())
            .unwrap_or(0)
    };
    // The first verifier dies a few rounds in.
    let mut first = resumable("30s");
    let t0 = std::time::Instant::now();
    while saved() < 3 && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    stop(&mut first, libc::SIGKILL);
    let cut = saved();
    assert!(cut >= 3, "no checkpoint written");
    let first_lines = watched(first).1;
    let before: Vec<u64> = first_lines
        .iter()
        .filter_map(|l| l["round"].as_u64().filter(|_| l.get("new").is_some()))
        .collect();
    assert!(before.len() as u64 >= cut, "{before:?} {cut}");
    // What the saved state had admitted: the rounds up to the checkpoint's.
    let admitted = |lines: &[serde_json::Value], rounds: std::ops::RangeInclusive<u64>| -> u64 {
        lines
            .iter()
            .filter(|l| l["round"].as_u64().is_some_and(|r| rounds.contains(&r)))
            .filter_map(|l| l["new"].as_u64())
            .sum()
    };
    let checked_before = admitted(&first_lines, 1..=cut);
    assert!(checked_before > 0);
    // The second reports from the next round on, and checks everything.
    let (_, lines, _) = watched(resumable("2s"));
    let rounds: Vec<u64> = lines
        .iter()
        .filter(|l| l.get("new").is_some())
        .map(|l| l["round"].as_u64().unwrap())
        .collect();
    assert_eq!(rounds.first(), Some(&(cut + 1)), "{rounds:?}");
    assert!(rounds.windows(2).all(|w| w[1] == w[0] + 1), "{rounds:?}");
    let last = lines.last().unwrap();
    assert_eq!(last["verdict"], "ACCEPT", "{last}");
    let (_, whole) = check(&stream.url);
    assert_eq!(last["history"]["txns"], whole["history"]["txns"], "{last}");
    // It went on from the saved state: it checked only what the first had not, once each.
    let total = whole["history"]["txns"].as_u64().unwrap();
    assert_eq!(
        checked_before + admitted(&lines, cut + 1..=u64::MAX),
        total,
        "{rounds:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
