//! Online checking (`check --round-size`, `watch`) of histories whose values repeat and whose
//! rows are deleted: the same verdict as checking the whole history at once, with garbage
//! collection still bounding what is held.

use crate::common;

use common::number_before;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn krait() -> Command {
    Command::new(env!("CARGO_BIN_EXE_krait"))
}

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("krait-online-rep-{}-{name}", std::process::id()))
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn check(p: &Path, extra: &[&str]) -> Output {
    krait().arg("check").arg(p).args(extra).output().unwrap()
}

fn watch(p: &Path, extra: &[&str]) -> Output {
    krait()
        .arg("watch")
        .arg(p)
        .args([
            "--format",
            "jsonl",
            "--idle-exit",
            "1s",
            "--interval",
            "20ms",
        ])
        .args(extra)
        .output()
        .unwrap()
}

/// How many transactions the run's last line says were garbage-collected.
fn collected(out: &str) -> u64 {
    number_before(out, " garbage-collected")
}

/// A fenced history whose values repeat (20 per key), correct and with stale reads: rounds
/// and watch give the one-shot verdict, and a correct one is collected as it goes.
#[test]
fn generated_histories_with_repeated_values_online() {
    for (stale, want) in [("0", 0), ("0.01", 1)] {
        let p = tmp(&format!("gen-{stale}.jsonl"));
        let out = krait()
            .arg("generate")
            .arg(&p)
            .args(["--txns", "3000", "--sessions", "6", "--keys", "40"])
            .args(["--fence-every", "5", "--value-range", "20", "--seed", "7"])
            .args(["--stale-reads", stale])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        let whole = check(&p, &[]);
        assert_eq!(whole.status.code(), Some(want), "{}", text(&whole));
        let rounds = check(&p, &["--round-size", "300"]);
        assert_eq!(rounds.status.code(), Some(want), "{}", text(&rounds));
        let unflagged = watch(&p, &[]);
        assert_eq!(unflagged.status.code(), Some(2), "{}", text(&unflagged));
        assert!(
            text(&unflagged).contains("--repeated-values"),
            "{}",
            text(&unflagged)
        );
        let watched = watch(&p, &["--repeated-values"]);
        assert_eq!(watched.status.code(), Some(want), "{}", text(&watched));
        if want == 0 {
            let t = text(&rounds);
            assert!(
                t.contains("ACCEPT (serializable): 3000 transactions"),
                "{t}"
            );
            assert!(collected(&t) > 2000, "{t}");
            assert!(text(&watched).contains("ACCEPT"), "{}", text(&watched));
        } else {
            assert!(text(&rounds).contains("REJECT"), "{}", text(&rounds));
        }
        let _ = std::fs::remove_file(&p);
    }
}

/// Deletes online: a read of no row after the session's own write may have read another
/// session's delete (ACCEPT), and without one it read the initial state after an overwrite
/// (REJECT), as checked whole.
#[test]
fn deletes_online() {
    let cases = [
        (
            "read-a-delete",
            [
                r#"{"session":"a","txn":1,"ops":[["w","x",1]]}"#,
                r#"{"session":"b","txn":2,"ops":[["w","x",null]]}"#,
                r#"{"session":"a","txn":3,"ops":[["r","x",null]]}"#,
            ],
            0,
        ),
        (
            "no-delete-of-x",
            [
                r#"{"session":"a","txn":1,"ops":[["w","x",1]]}"#,
                r#"{"session":"b","txn":2,"ops":[["w","y",null]]}"#,
                r#"{"session":"a","txn":3,"ops":[["r","x",null]]}"#,
            ],
            1,
        ),
    ];
    for (name, lines, want) in cases {
        let p = tmp(&format!("{name}.jsonl"));
        std::fs::write(&p, lines.join("\n") + "\n").unwrap();
        for out in [
            check(&p, &[]),
            check(&p, &["--round-size", "1"]),
            watch(&p, &["--repeated-values"]),
        ] {
            assert_eq!(out.status.code(), Some(want), "{name}: {}", text(&out));
        }
        let _ = std::fs::remove_file(&p);
    }
}

/// Snapshot isolation in rounds of 50 on a generated history with repeated values that is
/// serializable: a reader whose snapshot node alone looked deletable while its commit stayed
/// once let collection delete a write its open choice needed, and the round then rejected
/// falsely ("no possible writer"). Whether a reader goes is decided for its transaction.
#[test]
fn snapshot_isolation_in_rounds_keeps_the_writes_an_open_choice_needs() {
    let p = tmp("si-rounds.jsonl");
    let out = krait()
        .arg("generate")
        .arg(&p)
        .args([
            "--workload",
            "blindw-rw",
            "--txns",
            "6000",
            "--sessions",
            "9",
        ])
        .args(["--keys", "100", "--fence-every", "4", "--value-range", "17"])
        .args(["--seed", "5", "--fractured-reads", "0.0005"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    for level in ["ser", "si"] {
        let whole = check(&p, &["--level", level]);
        assert_eq!(whole.status.code(), Some(0), "{}", text(&whole));
        let rounds = check(&p, &["--level", level, "--round-size", "50"]);
        assert_eq!(rounds.status.code(), Some(0), "{level}: {}", text(&rounds));
        assert!(collected(&text(&rounds)) > 4000, "{}", text(&rounds));
    }
    let _ = std::fs::remove_file(&p);
}
