//! Histories over NATS JetStream, end to end through the `krait` binary: collector processes
//! publish (`krait run --publish`), `krait watch nats://…` verifies while they run, and
//! `krait check nats://…` reads the stream whole. What the stream delivers is compared with
//! the collectors' own local logs: nothing lost, nothing twice — also when the NATS server
//! restarts mid-run and when a collector is killed for good.
//!
//! Needs `KRAIT_NATS_URL` (nats://HOST:PORT with JetStream; `.ci/run` sets it) and, for the
//! database runs, `KRAIT_PG_URL`; the restart test starts its own `nats-server` (on PATH or
//! /usr/sbin). Each test uses a stream of its own and deletes it. `nats_watch.rs` tests the
//! verifier alone: faults in replayed streams, late sessions, restarts.

use crate::common;

use common::nats::{check, generated, krait, skip, stop, tmp, watch, watched, Stream};
use common::TempPg;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

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

/// Bytes in the files of `dir` and the folders in it (0 while it does not exist).
fn bytes_under(dir: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    rd.filter_map(Result::ok)
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => bytes_under(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
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

/// A nats-server of the test's own, on a free port with its store under the test's folder,
/// to stop and start again on that store.
struct OwnServer {
    bin: PathBuf,
    port: u16,
    store: PathBuf,
    child: Child,
}

impl OwnServer {
    /// Started; None (said as skipped) where no nats-server is installed.
    fn start(dir: &Path) -> Option<OwnServer> {
        let Some(bin) = nats_server() else {
            skip("no nats-server (apt-get install nats-server)");
            return None;
        };
        let (port, store) = (free_port(), dir.join("js"));
        let child = start_server(&bin, port, &store);
        Some(OwnServer {
            bin,
            port,
            store,
            child,
        })
    }

    fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Stopped with `signal`, and started again on the same store after `pause`.
    fn restart(&mut self, signal: i32, pause: Duration) {
        stop(&mut self.child, signal);
        std::thread::sleep(pause);
        self.child = start_server(&self.bin, self.port, &self.store);
    }
}

#[test]
fn a_nats_restart_mid_run_loses_and_duplicates_nothing() {
    let dir = tmp("restart");
    let Some(mut server) = OwnServer::start(&dir) else {
        return;
    };
    let stream = Stream::new(&server.url(), "restart");
    let sqlite = format!("sqlite:{}", dir.join("db.sqlite").display());
    let mut run = krait()
        .args(run_args(&sqlite, &stream.url, &dir.join("h")))
        .args([
            "--workload",
            "blindw-rw",
            "--clients",
            "4",
            "--txns",
            "8000",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Stopped as soon as the run has written, not after a fixed time: on a fast machine 4,000
    // transactions were done within the 700 ms this used to wait.
    let began = std::time::Instant::now();
    while bytes_under(&dir.join("h")) == 0 && began.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        run.try_wait().unwrap().is_none(),
        "the run ended before the restart"
    );
    // Stopped mid-run and back a second later, on the same store: publishers retry.
    server.restart(libc::SIGTERM, Duration::from_secs(1));
    wait_ok(run, "the run across the restart");
    let (code, local) = check(dir.join("h").to_str().unwrap());
    assert_eq!(code, 0, "{local}");
    let (code, streamed) = check(&stream.url);
    assert_eq!(code, 0, "{streamed}");
    assert_eq!(streamed["history"], local["history"]);
    drop(stream);
    stop(&mut server.child, libc::SIGTERM);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The verifier across server restarts: nats-server killed (SIGKILL) and started again on the
/// same store twice, each time for longer than `--idle-exit`, while `watch` follows a stream
/// eight publishers fill. The watch says it lost and regained the stream, takes no outage for
/// quiet (it once ended with an ACCEPT of a quarter of the stream, or rejected a read whose
/// writer the outage held back), and its verdict covers every record: the same as `krait
/// check` of the stream afterwards.
#[test]
fn watch_across_two_server_restarts_covers_every_record() {
    let dir = tmp("watch-restart");
    let Some(mut server) = OwnServer::start(&dir) else {
        return;
    };
    let stream = Stream::new(&server.url(), "watchrestart");
    let h = dir.join("h.jsonl");
    generated(&h, "60000", &[]);
    let w = watch(&stream.url, "8", &["--idle-exit", "2s"]);
    let publish = krait()
        .args([
            "convert",
            h.to_str().unwrap(),
            &stream.url,
            "--publishers",
            "8",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    for _ in 0..2 {
        std::thread::sleep(Duration::from_millis(800));
        server.restart(libc::SIGKILL, Duration::from_millis(2500));
    }
    wait_ok(publish, "publishing across the restarts");
    let (code, lines, err) = watched(w);
    let last = lines.last().cloned().unwrap_or_default();
    assert_eq!(code, Some(0), "{last} {err}");
    assert!(
        err.contains("lost the stream") && err.contains("regained the stream"),
        "{err}"
    );
    let (code, streamed) = check(&stream.url);
    assert_eq!(code, 0, "{streamed}");
    assert_eq!(
        last["history"]["txns"], streamed["history"]["txns"],
        "{last}"
    );
    assert_eq!(streamed["history"]["txns"], 60000, "{streamed}");
    let records = &last["stream_records"];
    assert_eq!(records["read"], records["stored"], "{last}");
    drop(stream);
    stop(&mut server.child, libc::SIGTERM);
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
            // To a file, not a pipe: nobody reads the lost host's, and a full pipe would stall it.
            .stderr(std::fs::File::create(dir.join(format!("h{k}.err"))).unwrap())
            .spawn()
            .unwrap()
    };
    // Long enough to go on well past the lost host's timeout, on a loaded machine too.
    let mut survivor = host(0, "20000");
    let mut lost = host(1, "1000000");
    std::thread::sleep(Duration::from_millis(800));
    stop(&mut lost, libc::SIGKILL);
    let status = survivor.wait().unwrap();
    assert!(
        status.success(),
        "the surviving host: {status}: {}",
        std::fs::read_to_string(dir.join("h0.err")).unwrap_or_default()
    );
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
