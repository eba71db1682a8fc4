//! `krait generate` makes histories of any shape: operations per transaction and the share of
//! read-only transactions, for read-heavy histories like real OLTP ones.

use crate::common;

use common::number_before;
use std::process::Command;

fn krait() -> Command {
    Command::new(env!("CARGO_BIN_EXE_krait"))
}

/// (reads, writes) from `krait stats`' line.
fn counts(stats: &str) -> (u64, u64) {
    (
        number_before(stats, " reads"),
        number_before(stats, " writes"),
    )
}

#[test]
fn ops_per_txn_and_read_ratio_shape_the_history() {
    let p = std::env::temp_dir().join(format!("krait-gen-{}.jsonl", std::process::id()));
    let st = krait()
        .args(["generate", "--txns", "1000", "--sessions", "12"])
        .args(["--ops-per-txn", "20", "--read-ratio", "0.9", "--seed", "4"])
        .arg(&p)
        .status()
        .unwrap();
    assert!(st.success());
    let out = krait().arg("stats").arg(&p).output().unwrap();
    let stats = String::from_utf8_lossy(&out.stdout).into_owned();
    let (reads, writes) = counts(&stats);
    // Every transaction has 20 operations; read-only ones read, the others write blindly.
    assert_eq!(reads + writes, 20 * 1000, "{stats}");
    let share = reads as f64 / 20_000.0;
    assert!((0.85..=0.95).contains(&share), "{share}: {stats}");
    let out = krait().arg("check").arg(&p).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let _ = std::fs::remove_file(&p);
    // Out of range: a usage error naming the flag.
    let out = krait()
        .args(["generate", "--txns", "10", "--read-ratio", "1.5"])
        .arg(std::env::temp_dir().join("krait-gen-bad.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--read-ratio"));
}

#[test]
fn repeated_values_are_refused_as_cobra_logs_which_name_a_write_by_its_value() {
    let dir = std::env::temp_dir().join(format!("krait-gen-dup-{}", std::process::id()));
    let generate = |out: &std::path::Path| {
        krait()
            .args(["generate", "--txns", "50", "--keys", "5"])
            .args(["--value-range", "3"])
            .arg(out)
            .output()
            .unwrap()
    };
    let out = generate(&dir);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("written more than once") && err.contains(".jsonl"),
        "{err}"
    );
    // Nothing half-written is left behind.
    assert!(!dir.exists());
    // As JSON Lines the same history is fine.
    let p = dir.with_extension("jsonl");
    assert!(generate(&p).status.success());
    let out = krait().arg("check").arg(&p).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let _ = std::fs::remove_file(&p);
}
