//! Output for scripts and CI: the JSON error object of bad input (exit 2), times as
//! milliseconds, the schema version, and the JUnit report of `--junit`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn krait() -> Command {
    Command::new(env!("CARGO_BIN_EXE_krait"))
}

fn corpus(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/histories")
        .join(name)
}

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("krait-ci-{}-{name}", std::process::id()))
}

#[test]
fn bad_input_with_json_is_an_error_object_and_exit_2() {
    let bad = tmp("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"session\":\"a\",\"txn\":1,\"ops\":[]}\n{\"session\":\"a\"\n",
    )
    .unwrap();
    let out = krait()
        .arg("check")
        .arg(&bad)
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["verdict"], "ERROR");
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["error"]["path"], bad.display().to_string());
    assert_eq!(v["error"]["line"], 2);
    assert!(v["error"]["message"].as_str().unwrap().len() > 5, "{v}");
    // Without --json, stdout stays empty.
    let out = krait().arg("check").arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let _ = std::fs::remove_file(&bad);
}

#[test]
fn times_are_milliseconds_and_the_schema_is_versioned() {
    let out = krait()
        .arg("check")
        .arg(corpus("g2-item-write-skew.jsonl"))
        .arg("--json")
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema_version"], 1);
    for phase in ["resolve", "graph", "prune", "solve", "certificate"] {
        assert!(v["timings"][phase].is_f64(), "{phase}: {}", v["timings"]);
    }
    assert!(v["load_ms"].is_f64() && v["total_ms"].is_f64());
}

#[test]
fn junit_reports_a_failure_with_the_certificate_or_a_pass() {
    let file = tmp("junit.xml");
    let out = krait()
        .arg("check")
        .arg(corpus("g1a-aborted-read.jsonl"))
        .arg("--junit")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "the exit code stays the verdict's"
    );
    let xml = std::fs::read_to_string(&file).unwrap();
    assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"));
    assert!(xml.contains("<testsuite name=\"krait\" tests=\"1\" failures=\"1\" errors=\"0\""));
    assert!(xml.contains("g1a-aborted-read.jsonl is serializable"));
    assert!(xml.contains(
        "<failure message=\"T2 read x = 1, written by T1, which aborted\" type=\"G1a (aborted read)\">"
    ));
    assert!(xml.contains("</failure></testcase>"));
    let out = krait()
        .arg("check")
        .arg(corpus("accept-unknown-outcome-unread.jsonl"))
        .arg("--junit")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let xml = std::fs::read_to_string(&file).unwrap();
    assert!(xml.contains("failures=\"0\" errors=\"0\""));
    assert!(!xml.contains("<failure"));
    let _ = std::fs::remove_file(&file);
}

/// Every option and argument of every subcommand says what it is for in `--help`.
#[test]
fn every_flag_has_help() {
    let mut bare = Vec::new();
    for cmd in [
        "check",
        "watch",
        "run",
        "generate",
        "convert",
        "stats",
        "verify-certificate",
        "demo",
        "proxy",
    ] {
        let out = krait().args([cmd, "--help"]).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let lines: Vec<&str> = text.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            let t = l.trim_start();
            let is_item = (t.starts_with("--") || t.starts_with("-") || t.starts_with('<'))
                && l.starts_with("  ");
            if !is_item || t.starts_with("-h, --help") || t.starts_with("-V") {
                continue;
            }
            // The help follows on the line, after two spaces, or on the next, indented further.
            let name_end = t.find("  ").unwrap_or(t.len());
            let same_line = !t[name_end..].trim().is_empty();
            let next_line = lines.get(i + 1).is_some_and(|n| {
                n.starts_with("          ")
                    && !n.trim().is_empty()
                    && !n.trim_start().starts_with('-')
            });
            if !same_line && !next_line {
                bare.push(format!("krait {cmd}: {t}"));
            }
        }
    }
    assert!(bare.is_empty(), "options without help: {bare:#?}");
}

/// `krait run --check` takes the check flags: with --json, stdout is the verdict's JSON alone
/// (the run's figures go to stderr), and --junit and --order work as for `krait check`.
#[test]
fn run_check_takes_the_check_flags() {
    let dir = tmp("run");
    let junit = tmp("run-junit.xml");
    let _ = std::fs::remove_dir_all(&dir);
    let out = krait()
        .args([
            "run",
            "--workload",
            "write-skew",
            "--clients",
            "4",
            "--txns",
            "200",
        ])
        .args([
            "--store",
            &format!("sqlite:{}", tmp("run.sqlite").display()),
        ])
        .arg("--out")
        .arg(&dir)
        .args(["--check", "--json", "--order", "--junit"])
        .arg(&junit)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert_eq!(v["verdict"], "ACCEPT");
    // Every committed transaction is in the serial order.
    let committed = v["history"]["committed"].as_u64().unwrap() as usize;
    assert!(committed > 0);
    assert_eq!(v["order"].as_array().map(Vec::len), Some(committed), "{v}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("txn/s"));
    // No --level: the level the store promises, said where the figures go.
    assert_eq!(v["level"], "serializable");
    assert!(String::from_utf8_lossy(&out.stderr).contains("SQLite promises serializability"));
    assert!(std::fs::read_to_string(&junit)
        .unwrap()
        .contains("failures=\"0\""));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&junit);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", tmp("run.sqlite").display()));
    }
}

/// Standard output that cannot be written (`/dev/full`: a full disk) ends a command with a
/// line on stderr and exit 5, never a panic that hides the exit code: `check`, and `proxy`,
/// whose summary at exit once panicked so (its history intact, its exit code lost).
#[test]
fn output_that_cannot_be_written_is_exit_5_not_a_panic() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        eprintln!("skipped: no /dev/full");
        return;
    };
    let out = krait()
        .arg("check")
        .arg(corpus("accept-counter-written-back.jsonl"))
        .arg("--json")
        .stdout(full)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(err.contains("the output could not be written"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    proxy_summary_to_a_full_disk();
}

fn proxy_summary_to_a_full_disk() {
    let Some(db) = crate::common::TempPg::new("devfull") else {
        return;
    };
    let hist = tmp("devfull-hist");
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let (proxy, url) = proxy_on_table(&db, &hist, full.into(), &[]);
    let mut app = connect(&url);
    app.batch_execute("BEGIN; UPDATE t SET v = 1 WHERE id = 1; COMMIT")
        .unwrap();
    drop(app);
    unsafe { libc::kill(proxy.id() as i32, libc::SIGINT) };
    let out = proxy.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(err.contains("the output could not be written"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // The history is intact: checked, it holds the update.
    let check = krait().arg("check").arg(&hist).output().unwrap();
    assert_eq!(
        check.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
    let _ = std::fs::remove_dir_all(&hist);
}

/// `krait proxy` on a table `t (id, v)` holding (1, 0) in `db`, recording into `hist`, its
/// stdout to `stdout`: the running proxy and the URL an application connects to.
fn proxy_on_table(
    db: &crate::common::TempPg,
    hist: &Path,
    stdout: std::process::Stdio,
    more: &[&str],
) -> (std::process::Child, String) {
    let mut c = postgres::Client::connect(&db.url, postgres::NoTls).unwrap();
    c.batch_execute("CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 0)")
        .unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let _ = std::fs::remove_dir_all(hist);
    let proxy = krait()
        .args([
            "proxy",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--upstream",
            &db.url,
        ])
        .arg("--out")
        .arg(hist)
        .args(["--table", "t:id"])
        .args(more)
        .stdout(stdout)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let host = &db.url[db.url.find('@').unwrap() + 1..db.url.rfind('/').unwrap()];
    (proxy, db.url.replace(host, &format!("127.0.0.1:{port}")))
}

/// A client of the proxy at `url`, once it listens.
fn connect(url: &str) -> postgres::Client {
    for _ in 0..100 {
        if let Ok(c) = postgres::Client::connect(url, postgres::NoTls) {
            return c;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("the proxy does not listen at {url}");
}

/// Ctrl-C while a client sits idle in a transaction: the proxy says it is waiting for it,
/// refuses new connections, closes it after --drain-timeout, and exits 0; the transaction it
/// left open was rolled back by the database and is no write of the history.
#[test]
fn a_proxy_stopped_with_a_client_idle_in_a_transaction_waits_a_bounded_time() {
    let Some(db) = crate::common::TempPg::new("drain") else {
        return;
    };
    let hist = tmp("drain-hist");
    let (proxy, url) = proxy_on_table(
        &db,
        &hist,
        std::process::Stdio::piped(),
        &["--drain-timeout", "1s"],
    );
    let mut idle = connect(&url);
    idle.batch_execute("BEGIN; UPDATE t SET v = 7 WHERE id = 1")
        .unwrap();
    let t0 = std::time::Instant::now();
    unsafe { libc::kill(proxy.id() as i32, libc::SIGINT) };
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        postgres::Client::connect(&url, postgres::NoTls).is_err(),
        "a new connection was accepted while stopping"
    );
    let out = proxy.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(t0.elapsed() < std::time::Duration::from_secs(20), "{err}");
    assert!(
        err.contains("stopping: 1 connection(s) still open; waiting up to 1.0 s"),
        "{err}"
    );
    assert!(
        err.contains("closing the 1 connection(s) still open"),
        "{err}"
    );
    assert!(
        idle.batch_execute("COMMIT").is_err(),
        "the connection outlived the proxy"
    );
    let mut c = postgres::Client::connect(&db.url, postgres::NoTls).unwrap();
    let v: i32 = c
        .query_one("SELECT v FROM t WHERE id = 1", &[])
        .unwrap()
        .get(0);
    assert_eq!(v, 0, "the open transaction was rolled back");
    let check = krait()
        .arg("check")
        .arg(&hist)
        .arg("--json")
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&check.stdout).unwrap();
    assert_eq!(report["verdict"], "ACCEPT", "{report}");
    assert_eq!(
        report["history"]["committed"], 1,
        "only the initial state: {report}"
    );
    let _ = std::fs::remove_dir_all(&hist);
}

/// A disk that fills while the proxy writes the initial state (a 64 KiB tmpfs, mounted where
/// this runs as root; skipped elsewhere): the proxy stops at start with the cause, and the cut
/// `initial.jsonl` it leaves is an error for `check`, never an ACCEPT of an empty history.
#[test]
fn a_disk_full_while_the_initial_state_is_written_is_an_error_not_a_verdict() {
    let Some(db) = crate::common::TempPg::new("fullinit") else {
        return;
    };
    let Some(disk) = crate::common::SmallDisk::mount(tmp("fullinit-mnt"), "64k") else {
        return;
    };
    let mut c = postgres::Client::connect(&db.url, postgres::NoTls).unwrap();
    c.batch_execute(
        "CREATE TABLE big (id int PRIMARY KEY, v text);
         INSERT INTO big SELECT g, repeat('x', 100) FROM generate_series(1, 5000) g",
    )
    .unwrap();
    let hist = disk.0.join("hist");
    let out = krait()
        .args(["proxy", "--listen", "127.0.0.1:0", "--upstream", &db.url])
        .arg("--out")
        .arg(&hist)
        .args(["--table", "big:id"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    let check = krait().arg("check").arg(&hist).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    assert!(!err.contains("listening"), "{err}");
    let check_err = String::from_utf8_lossy(&check.stderr);
    assert_eq!(check.status.code(), Some(2), "{check_err}");
    assert!(check_err.contains("initial.jsonl"), "{check_err}");
    assert!(check_err.contains("the initial state"), "{check_err}");
}
