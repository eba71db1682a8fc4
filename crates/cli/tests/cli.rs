//! The `krait` binary as a user meets it: exit codes, error messages, conversions.

use std::process::Command;

fn krait() -> Command {
    Command::new(env!("CARGO_BIN_EXE_krait"))
}

fn tmp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("krait-cli-{}-{name}", std::process::id()))
}

#[test]
fn bad_input_is_exit_2_with_file_and_line() {
    let p = tmp("bad.jsonl");
    std::fs::write(
        &p,
        "{\"session\":\"a\",\"txn\":1,\"ops\":[]}\n{\"session\":\"a\",\"txn\":1,\"ops\":[]}\n",
    )
    .unwrap();
    let out = krait().arg("check").arg(&p).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.jsonl: line 2: transaction id 1 is used twice (first on line 1)"),
        "{err}"
    );
    let out = krait()
        .arg("check")
        .arg("/nonexistent/history")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = krait().arg("check").output().unwrap();
    assert_eq!(out.status.code(), Some(2), "usage errors exit 2");
}

#[test]
fn verdicts_set_the_exit_code() {
    let ok = tmp("ok.jsonl");
    let st = krait()
        .args(["generate", "--txns", "500"])
        .arg(&ok)
        .status()
        .unwrap();
    assert!(st.success());
    let out = krait().arg("check").arg(&ok).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("ACCEPT"));
    let bad = tmp("skew.jsonl");
    std::fs::write(
        &bad,
        concat!(
            r#"{"session":"a","txn":1,"ops":[["r","x",null],["r","y",null],["w","x",1]]}"#,
            "\n",
            r#"{"session":"b","txn":2,"ops":[["r","x",null],["r","y",null],["w","y",2]]}"#,
            "\n"
        ),
    )
    .unwrap();
    let out = krait().arg("check").arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("G2-item"), "{text}");
    let out = krait()
        .args(["check", "--json"])
        .arg(&bad)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["verdict"], "REJECT");
    assert_eq!(v["anomaly"], "G2-item");
    assert_eq!(v["cycle"].as_array().unwrap().len(), 2);
    // --strict without timestamps: an input error naming the transaction.
    let out = krait()
        .args(["check", "--strict"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("transaction T1 has no start/commit timestamp"));
    // DOT output.
    let dot = tmp("c.dot");
    let out = krait()
        .arg("check")
        .arg(&bad)
        .arg("--dot")
        .arg(&dot)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let d = std::fs::read_to_string(&dot).unwrap();
    assert!(
        d.starts_with("digraph certificate") && d.contains("rw x"),
        "{d}"
    );
}

#[test]
fn convert_round_trips_through_cobra_logs() {
    let src = tmp("src.jsonl");
    assert!(krait()
        .args(["generate", "--txns", "300"])
        .arg(&src)
        .status()
        .unwrap()
        .success());
    let dir = tmp("cobra");
    assert!(krait()
        .arg("convert")
        .arg(&src)
        .arg(&dir)
        .arg("--timestamps")
        .status()
        .unwrap()
        .success());
    let back = tmp("back.jsonl");
    assert!(krait()
        .arg("convert")
        .arg(&dir)
        .arg(&back)
        .status()
        .unwrap()
        .success());
    let a = krait()
        .args(["stats", "--json"])
        .arg(&src)
        .output()
        .unwrap();
    let b = krait()
        .args(["stats", "--json"])
        .arg(&back)
        .output()
        .unwrap();
    let (a, b): (serde_json::Value, serde_json::Value) = (
        serde_json::from_slice(&a.stdout).unwrap(),
        serde_json::from_slice(&b.stdout).unwrap(),
    );
    for f in ["txns", "reads", "writes", "initial_reads", "timestamps"] {
        assert_eq!(a[f], b[f], "{f}");
    }
    assert_eq!(
        krait().arg("check").arg(&back).status().unwrap().code(),
        Some(0)
    );
}

#[test]
fn elle_list_append_orders_versions() {
    let op = |t: &str, v: &str, p: u32, i: u32| {
        format!(
            "{{:type :{t}, :f :txn, :value {v}, :process {p}, :time {}, :index {i}}}\n",
            i * 10
        )
    };
    let mut ok = String::new();
    ok += &op("invoke", "[[:append :x 1]]", 0, 0);
    ok += &op("ok", "[[:append :x 1]]", 0, 1);
    ok += &op("invoke", "[[:append :x 2]]", 1, 2);
    ok += &op("ok", "[[:append :x 2]]", 1, 3);
    ok += &op("invoke", "[[:r :x nil]]", 2, 4);
    ok += &op("ok", "[[:r :x [1 2]]]", 2, 5);
    let mut bad = ok.clone();
    bad += &op("invoke", "[[:r :x nil]]", 3, 6);
    bad += &op("ok", "[[:r :x [2 1]]]", 3, 7);
    let (okp, badp) = (tmp("ok.edn"), tmp("bad.edn"));
    std::fs::write(&okp, ok).unwrap();
    std::fs::write(&badp, bad).unwrap();
    assert_eq!(
        krait().arg("check").arg(&okp).status().unwrap().code(),
        Some(0)
    );
    // Two reads disagree on the order of the appends (Elle: incompatible-order).
    let out = krait()
        .args(["check", "--json"])
        .arg(&badp)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["anomaly"], "incompatible-order", "{v}");
    // The certificate's sentence and transactions survive beside the history's counts, one-shot
    // and in rounds.
    assert!(v["summary"].as_str().unwrap().contains("disagree"), "{v}");
    assert_eq!(v["history"]["txns"], 4, "{v}");
    assert!(v["txns"].is_array(), "{v}");
    // The certificate holds for a checker written apart; a doctored one does not.
    let cert = tmp("bad.json");
    std::fs::write(&cert, &out.stdout).unwrap();
    let vc = krait()
        .arg("verify-certificate")
        .arg(&badp)
        .arg(&cert)
        .output()
        .unwrap();
    assert_eq!(
        vc.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&vc.stdout)
    );
    let mut doctored = v.clone();
    doctored["anomaly"] = "G1a".into();
    std::fs::write(&cert, doctored.to_string()).unwrap();
    let vc = krait()
        .arg("verify-certificate")
        .arg(&badp)
        .arg(&cert)
        .output()
        .unwrap();
    assert_eq!(
        vc.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&vc.stdout)
    );
    let out = krait()
        .args(["check", "--json", "--round-size", "1"])
        .arg(&badp)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["anomaly"], "incompatible-order", "{v}");
    assert!(v["summary"].as_str().unwrap().contains("disagree"), "{v}");
    assert!(v["txns"].is_array(), "{v}");
}

/// `krait watch` follows the logs while `krait run` is still writing them (SQLite, 4 clients,
/// fences every 20 transactions): rounds run as transactions arrive, old transactions are
/// garbage-collected, and the verdict is ACCEPT.
#[test]
fn watch_follows_a_live_run() {
    let dir = tmp("live-run");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = tmp("live-run.sqlite");
    let _ = std::fs::remove_file(&db);
    let watcher = krait()
        .arg("watch")
        .arg(&dir)
        .args([
            "--format",
            "jsonl",
            "--idle-exit",
            "3s",
            // Polled often: a loaded machine may take the run's whole second in a few polls.
            "--interval",
            "20ms",
        ])
        .args(["--sessions", "4", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let run = krait()
        .arg("run")
        .arg("--store")
        .arg(format!("sqlite:{}", db.display()))
        .args([
            "--workload",
            "blindw-rm",
            "--clients",
            "4",
            "--txns",
            "12000",
        ])
        .arg("--out")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let out = watcher.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // JSON Lines: a line per round as it ends, then the verdict.
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (v, rounds) = lines.split_last().unwrap();
    assert_eq!(v["verdict"], "ACCEPT");
    assert!(rounds.len() >= 2, "several rounds while the run went on");
    assert!(rounds.iter().all(|r| r["new"].as_u64().is_some()));
    // Every transaction the run logged (workload, fences, aborted attempts) was checked.
    let logged: usize = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| {
            std::fs::read_to_string(e.unwrap().path())
                .unwrap()
                .lines()
                .count()
        })
        .sum();
    assert_eq!(v["history"]["txns"].as_u64().unwrap() as usize, logged);
    assert!(v["deleted"].as_u64().unwrap() > 0, "garbage collection ran");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&db);
}

/// In `watch`, a read of a value no log holds is rejected once every log has been read through
/// twice more without it and --read-wait has passed (no need to wait for the end).
#[test]
fn watch_rejects_a_read_of_nobody_without_waiting_for_the_end() {
    let p = tmp("watch-nobody.jsonl");
    std::fs::write(
        &p,
        "{\"session\":\"a\",\"txn\":1,\"ops\":[[\"w\",\"x\",1]]}\n{\"session\":\"b\",\"txn\":2,\"ops\":[[\"r\",\"x\",7]]}\n",
    )
    .unwrap();
    let mut child = krait()
        .arg("watch")
        .arg(&p)
        .args(["--interval", "50ms", "--read-wait", "300ms"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t = std::time::Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t.elapsed() > std::time::Duration::from_secs(20) {
            child.kill().unwrap();
            panic!("watch did not reject");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let mut out = String::new();
    use std::io::Read;
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert_eq!(status.code(), Some(1), "{out}");
    assert!(out.contains("read of a value nobody wrote"), "{out}");
    let _ = std::fs::remove_file(&p);
}

/// `--round-size` gives a line per round and the one-shot verdict; `--order` has no meaning
/// when rounds delete transactions, and says so.
#[test]
fn check_in_rounds() {
    let p = tmp("rounds.jsonl");
    let out = krait()
        .args(["generate"])
        .arg(&p)
        .args([
            "--workload",
            "blindw-rm",
            "--txns",
            "3000",
            "--fence-every",
            "5",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let out = krait()
        .arg("check")
        .arg(&p)
        .args(["--round-size", "500"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("round 5: +"), "{text}");
    assert!(
        text.contains("ACCEPT (serializable): 3000 transactions in"),
        "{text}"
    );
    let out = krait()
        .arg("check")
        .arg(&p)
        .args(["--round-size", "500", "--order"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--order needs the whole history"));
    let _ = std::fs::remove_file(&p);
}

/// A second run into a directory that holds a history is refused unless asked to replace it,
/// and a directory another run holds (its lock) is refused outright.
#[test]
fn run_never_deletes_a_history_unasked() {
    let dir = tmp("run-twice");
    let db = tmp("run-twice.sqlite");
    let _ = std::fs::remove_dir_all(&dir);
    let run = |extra: &[&str]| {
        krait()
            .arg("run")
            .arg("--store")
            .arg(format!("sqlite:{}", db.display()))
            .args(["--txns", "40", "--clients", "2", "--out"])
            .arg(&dir)
            .args(extra)
            .output()
            .unwrap()
    };
    assert_eq!(run(&[]).status.code(), Some(0));
    let again = run(&[]);
    assert_eq!(again.status.code(), Some(2));
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(
        err.contains("already holds 2 session logs") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(run(&["--force"]).status.code(), Some(0));
    std::fs::write(dir.join(".krait-run.lock"), "1\n").unwrap();
    // Held by another run: the run cannot start (exit 4, like any run the environment stops).
    let locked = run(&["--force"]);
    assert_eq!(locked.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&locked.stderr).contains("being written by another krait run"));
    let _ = std::fs::remove_dir_all(&dir);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
}

/// More session logs than the open-file limit: read one at a time.
#[test]
fn more_sessions_than_open_files() {
    let dir = tmp("many-sessions");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for s in 0..300 {
        std::fs::write(
            dir.join(format!("c{s}.jsonl")),
            format!("{{\"session\":\"c{s}\",\"txn\":{s},\"ops\":[[\"w\",\"k{s}\",1]]}}\n"),
        )
        .unwrap();
    }
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -n 64 && exec {} check {}",
            env!("CARGO_BIN_EXE_krait"),
            dir.display()
        ))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Session names come from the input: a name holding escape sequences or newlines is written
/// out, never passed to the terminal or into a DOT file raw.
#[test]
fn hostile_session_names_are_escaped() {
    let p = tmp("hostile.jsonl");
    std::fs::write(
        &p,
        "{\"session\":\"a\\u001b[2J\\nb\",\"txn\":1,\"ops\":[[\"w\",\"x\",1]]}\n\
         {\"session\":\"a\\u001b[2J\\nb\",\"txn\":2,\"ops\":[[\"r\",\"x\",null]]}\n",
    )
    .unwrap();
    let dot = tmp("hostile.dot");
    let out = krait()
        .arg("check")
        .arg(&p)
        .arg("--dot")
        .arg(&dot)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains('\u{1b}'), "{text}");
    assert!(text.contains("\\u{1b}[2J\\nb"), "{text}");
    let d = std::fs::read_to_string(&dot).unwrap();
    assert!(
        !d.contains('\u{1b}') && d.lines().all(|l| !l.ends_with("a")),
        "{d}"
    );
    let _ = std::fs::remove_file(&p);
    let _ = std::fs::remove_file(&dot);
}

/// A drawing that fails is a warning, the exit code stays the verdict's; `convert` refuses an
/// output name it would not write in the format the name says.
#[test]
fn drawing_failures_keep_the_verdict_and_convert_refuses_odd_names() {
    let p = tmp("nodot.jsonl");
    std::fs::write(
        &p,
        "{\"session\":\"a\",\"txn\":1,\"ops\":[[\"w\",\"x\",1]]}\n\
         {\"session\":\"a\",\"txn\":2,\"ops\":[[\"r\",\"x\",null]]}\n",
    )
    .unwrap();
    let out = krait()
        .arg("check")
        .arg(&p)
        .arg("--dot")
        .arg(tmp("nodot.png"))
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("warning: the certificate was not drawn"));
    let out = krait()
        .arg("convert")
        .arg(&p)
        .arg(tmp("out.edn"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!tmp("out.edn").exists());
    let _ = std::fs::remove_file(&p);
}

/// A disk that fills up mid-run: the run stops with a clear error (exit 4), and the logs it
/// leaves load and check (each cut last line read as what its bytes prove). Needs a small tmpfs
/// (root); skipped otherwise, visibly.
#[test]
fn a_full_disk_stops_the_run_and_leaves_a_history_that_loads() {
    let Some(disk) = crate::common::SmallDisk::mount(tmp("full-disk"), "256k") else {
        return;
    };
    let mnt = disk.0.clone();
    let db = tmp("full-disk.sqlite");
    let out = krait()
        .arg("run")
        .arg("--store")
        .arg(format!("sqlite:{}", db.display()))
        .args(["--txns", "20000", "--clients", "4", "--out"])
        .arg(mnt.join("h"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    let check = krait().arg("check").arg(mnt.join("h")).output().unwrap();
    assert_eq!(
        check.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
}
