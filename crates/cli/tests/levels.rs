//! `--level` from the command line, and `krait run --check` checking what the store promises
//! for the isolation asked for. The PostgreSQL test needs KRAIT_PG_URL (`.ci/run` sets it) and
//! says it skipped otherwise; it makes and drops its own database.

use crate::common;

use common::TempPg;
use std::process::Command;

fn krait() -> Command {
    Command::new(env!("CARGO_BIN_EXE_krait"))
}

fn tmp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("krait-levels-{}-{name}", std::process::id()))
}

/// `krait run` of `workload` at `isolation` on the test's database, logs in `dir`, with `--check`
/// and no `--level`: the level checked is what the store promises.
fn run_and_check(
    db: &TempPg,
    isolation: &str,
    workload: &str,
    sizes: &[&str],
    dir: &std::path::Path,
) -> std::process::Output {
    krait()
        .args(["run", "--workload", workload, "--isolation", isolation])
        .args(sizes)
        .args(["--store", &db.url])
        .arg("--out")
        .arg(dir)
        .arg("--check")
        .output()
        .unwrap()
}

fn write(name: &str, text: &str) -> std::path::PathBuf {
    let p = tmp(name);
    std::fs::write(&p, text).unwrap();
    p
}

const WRITE_SKEW: &str = r#"{"session":"a","txn":1,"ops":[["r","x",null],["r","y",null],["w","x",1]]}
{"session":"b","txn":2,"ops":[["r","x",null],["r","y",null],["w","y",2]]}
"#;

#[test]
fn level_names_and_elles_names() {
    let p = write("skew.jsonl", WRITE_SKEW);
    for (args, code, level) in [
        (vec![], 1, "serializable"),
        (vec!["--level", "ser"], 1, "serializable"),
        (vec!["--level", "serializable"], 1, "serializable"),
        (vec!["--level", "si"], 0, "snapshot-isolation"),
        (
            vec!["--level", "snapshot-isolation"],
            0,
            "snapshot-isolation",
        ),
    ] {
        let out = krait()
            .arg("check")
            .arg(&p)
            .arg("--json")
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(code), "{args:?}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["level"], level, "{args:?}");
    }
    let text = krait()
        .arg("check")
        .arg(&p)
        .args(["--level", "si", "--order"])
        .output()
        .unwrap();
    let s = String::from_utf8_lossy(&text.stdout);
    assert!(
        s.contains("ACCEPT: the history is snapshot isolated"),
        "{s}"
    );
    assert!(s.contains("commit order (T@n"), "{s}");
    let bad = krait()
        .arg("check")
        .arg(&p)
        .args(["--level", "bogus"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let _ = std::fs::remove_file(&p);
}

#[test]
fn strict_levels_need_timestamps_and_say_so() {
    let p = write("strict.jsonl", WRITE_SKEW);
    let out = krait()
        .arg("check")
        .arg(&p)
        .args(["--level", "strict-si"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("timestamp"));
    let _ = std::fs::remove_file(&p);
}

#[test]
fn run_check_checks_what_postgres_repeatable_read_promises() {
    let Some(db) = TempPg::new("rr") else {
        return;
    };
    let dir = tmp("rr-run");
    let _ = std::fs::remove_dir_all(&dir);
    let out = run_and_check(
        &db,
        "repeatable-read",
        "write-skew",
        &["--clients", "2", "--txns", "60"],
        &dir,
    );
    let s = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{s}");
    assert!(
        s.contains("PostgreSQL's REPEATABLE READ promises snapshot isolation"),
        "{s}"
    );
    assert!(
        s.contains("ACCEPT: the history is snapshot isolated"),
        "{s}"
    );
    // Asked for serializability of the same run: the write skew, as a certificate.
    let ser = krait()
        .arg("check")
        .arg(&dir)
        .args(["--level", "ser"])
        .output()
        .unwrap();
    let t = String::from_utf8_lossy(&ser.stdout);
    assert_eq!(ser.status.code(), Some(1), "{t}");
    assert!(t.contains("G2-item"), "{t}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn online_rounds_check_snapshot_isolation() {
    let skew = write("online-skew.jsonl", WRITE_SKEW);
    let out = krait()
        .arg("check")
        .arg(&skew)
        .args(["--round-size", "1", "--level", "si"])
        .output()
        .unwrap();
    let s = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{s}");
    assert!(
        s.contains("ACCEPT (snapshot isolated): 2 transactions"),
        "{s}"
    );
    let read_skew = write(
        "online-read-skew.jsonl",
        r#"{"session":"a","txn":1,"ops":[["w","x",1],["w","y",1]]}
{"session":"b","txn":2,"ops":[["r","x",1],["r","y",null]]}
"#,
    );
    let out = krait()
        .arg("check")
        .arg(&read_skew)
        .args(["--round-size", "1", "--level", "si", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["level"], "snapshot-isolation");
    assert_eq!(v["anomaly"], "G-SIb");
    let _ = std::fs::remove_file(&skew);
    let _ = std::fs::remove_file(&read_skew);
}

/// Causal consistency online: rounds delete what no transaction still to come can read without
/// breaking causality and keep the one-shot verdict; read committed and read atomic are refused
/// online with the reason.
#[test]
fn online_rounds_check_causal_consistency() {
    let gen = |name: &str, fault: &[&str]| {
        let p = tmp(name);
        let out = krait()
            .arg("generate")
            .arg(&p)
            .args(["--txns", "3000", "--keys", "200", "--fence-every", "10"])
            .args(["--seed", "4"])
            .args(fault)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        p
    };
    let check = |p: &std::path::Path, level: &str, extra: &[&str]| {
        krait()
            .arg("check")
            .arg(p)
            .args(["--level", level, "--round-size", "300"])
            .args(extra)
            .output()
            .unwrap()
    };
    let good = gen("cc-good.jsonl", &[]);
    let out = check(&good, "cc", &[]);
    let s = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{s}");
    assert!(s.contains("forced edges"), "{s}");
    let last = s.lines().rev().find(|l| !l.is_empty()).unwrap();
    assert!(
        last.starts_with("ACCEPT (causally consistent): 3000 transactions in 10 rounds"),
        "{last}"
    );
    let collected: u64 = last
        .split(", ")
        .find_map(|p| p.strip_suffix(" garbage-collected"))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(collected > 1000, "{last}");

    let bad = gen("cc-bad.jsonl", &["--fractured-reads", "0.01"]);
    let out = check(&bad, "cc", &["--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["level"], "causal");
    assert_eq!(v["anomaly"], "causality-violation", "{v:#}");
    let whole = krait()
        .arg("check")
        .arg(&bad)
        .args(["--level", "cc"])
        .output()
        .unwrap();
    assert_eq!(whole.status.code(), Some(1));

    for level in ["rc", "ra"] {
        let out = check(&good, level, &[]);
        let e = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{e}");
        assert!(e.contains("no write could ever be deleted"), "{e}");
    }
    let _ = std::fs::remove_file(&good);
    let _ = std::fs::remove_file(&bad);
}

#[test]
fn run_check_checks_what_postgres_read_committed_promises() {
    let Some(db) = TempPg::new("rc") else {
        return;
    };
    let dir = tmp("rc-run");
    let _ = std::fs::remove_dir_all(&dir);
    let out = run_and_check(
        &db,
        "read-committed",
        "lost-update",
        &["--clients", "4", "--txns", "200"],
        &dir,
    );
    let s = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{s}");
    assert!(
        s.contains("PostgreSQL's READ COMMITTED promises read committed")
            && s.contains("checking that"),
        "{s}"
    );
    assert!(s.contains("ACCEPT: the history is read committed"), "{s}");
    // The ladder of the same run: read committed up to causal hold; increments lost to
    // concurrent writers (when the run had any) break snapshot isolation, and so
    // serializability.
    let all = krait()
        .arg("check")
        .arg(&dir)
        .args(["--level", "all", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&all.stdout).unwrap();
    let rows = v["ladder"].as_array().unwrap();
    for row in &rows[..3] {
        assert_eq!(row["verdict"], "ACCEPT", "{v:#}");
    }
    assert_eq!(rows[3]["level"], "snapshot-isolation");
    if rows[3]["verdict"] == "REJECT" {
        assert_eq!(rows[3]["anomaly"], "lost-update", "{v:#}");
        assert_eq!(rows[4]["implied_by"], "snapshot-isolation");
        assert_eq!(v["holds"], "causal", "{v:#}");
        assert_eq!(all.status.code(), Some(1));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_ladder_stops_each_branch_at_its_first_failure() {
    let p = write("ladder.jsonl", WRITE_SKEW);
    let out = krait()
        .arg("check")
        .arg(&p)
        .args(["--level", "all"])
        .output()
        .unwrap();
    let s = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{s}");
    for level in [
        "read-committed",
        "read-atomic",
        "causal",
        "snapshot-isolation",
    ] {
        assert!(
            s.lines()
                .any(|l| l.starts_with(level) && l.contains("ACCEPT")),
            "{level}: {s}"
        );
    }
    assert!(
        s.lines().any(|l| l.starts_with("serializable")
            && l.contains("REJECT")
            && l.contains("G2-item")),
        "{s}"
    );
    assert!(
        s.contains("strongest level that holds: snapshot-isolation"),
        "{s}"
    );
    let _ = std::fs::remove_file(&p);
}

/// Plume's (and AWDIT's, PolySI's) text format runs at the weak levels unchanged: T3 reads T2's
/// key 2, T2 read T1's key 1, yet T3 reads key 1 as initial (0): read atomic holds (T3 saw
/// nothing of T1 directly), causal consistency does not.
#[test]
fn plume_text_histories_check_at_the_weak_levels() {
    let p = write(
        "plume.txt",
        "w(1,1,0,1)\nr(1,1,1,2)\nw(2,2,1,2)\nr(2,2,2,3)\nr(1,0,2,3)\n",
    );
    let run = |level: &str| {
        krait()
            .arg("check")
            .arg(&p)
            .args(["--level", level, "--json"])
            .output()
            .unwrap()
    };
    assert_eq!(run("ra").status.code(), Some(0));
    let cc = run("cc");
    assert_eq!(cc.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&cc.stdout).unwrap();
    assert_eq!(v["anomaly"], "causality-violation", "{v:#}");
    let _ = std::fs::remove_file(&p);
}
