//! End to end against real databases: record a workload, check the history, compare with what
//! the isolation level promises. PostgreSQL and MariaDB tests need KRAIT_PG_URL / KRAIT_MYSQL_URL
//! (`.ci/run` sets them) and print that they skipped otherwise; each makes and drops its own
//! database.

use crate::common;

use common::TempDb;
use krait_checker::{check, Anomaly, EdgeKind, Level, Options, Verdict};
use krait_collector::{backend, Isolation, Promise, RunConfig, RunReport};
use krait_workloads::{BlindWKv, LostUpdate, Workload, WriteSkew};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("krait-e2e-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn record(
    store: &str,
    iso: Isolation,
    w: &dyn Workload,
    clients: usize,
    txns: usize,
    out: &Path,
) -> RunReport {
    let b = backend(store, iso).unwrap();
    let cfg = RunConfig {
        clients,
        txns,
        fence_every: Some(20),
        out: Some(out.to_path_buf()),
        fsync: false,
        seed: 3,
        replace: false,
        first_client: 0,
        setup: true,
        publish: None,
    };
    krait_collector::run(b.as_ref(), w, &cfg, &AtomicU64::new(0)).unwrap()
}

fn verdict(out: &Path) -> (Verdict, krait_history::Summary) {
    verdict_at(out, Level::Serializable)
}

fn verdict_at(out: &Path, level: Level) -> (Verdict, krait_history::Summary) {
    let l = krait_history::load(out, None).unwrap();
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    // Every test's logs: batch and follow agree on their cuts.
    common::batch_matches_follow(out, &out.file_name().unwrap().to_string_lossy());
    let s = krait_history::summarize(&l.history);
    let opts = Options {
        level,
        want_order: true,
        ..Options::default()
    };
    let rep = check(&l.history, &opts).unwrap();
    // Every verdict, checked apart from the checker.
    let v = serde_json::to_value(&rep).unwrap();
    if let Err(p) = krait_verify::verify(&l.history, &v) {
        assert!(
            matches!(p, krait_verify::Problem::Unsupported(_)),
            "krait-verify refutes {v}: {p}"
        );
    }
    (rep.verdict, s)
}

#[test]
fn sqlite_blindw_rw_is_serializable() {
    let out = tmp("sqlite");
    let db = tmp("sqlite-db.sqlite");
    let rep = record(
        &format!("sqlite:{}", db.display()),
        Isolation::Serializable,
        &BlindWKv {
            keys: 200,
            ops: 8,
            read_only: 0.5,
        },
        4,
        800,
        &out,
    );
    assert_eq!(rep.committed + rep.aborted + rep.unknown, 800);
    let (v, s) = verdict(&out);
    assert_eq!(v, Verdict::Accept);
    assert_eq!(s.sessions, 4);
    assert!(s.fences > 0);
    assert!(s.timestamps);
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_file(&db);
}

#[test]
fn postgres_serializable_prevents_write_skew() {
    let Some(db) = TempDb::new("KRAIT_PG_URL", "ser") else {
        return;
    };
    let out = tmp("pg-ser");
    let rep = record(
        &db.url,
        Isolation::Serializable,
        &WriteSkew::new(4),
        4,
        400,
        &out,
    );
    assert!(
        rep.aborted > 0,
        "SSI must abort some of the overlapping pairs"
    );
    let (v, s) = verdict(&out);
    assert_eq!(v, Verdict::Accept);
    assert!(s.aborted > 0, "aborts are recorded in the history");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn postgres_repeatable_read_allows_write_skew() {
    let Some(db) = TempDb::new("KRAIT_PG_URL", "rr") else {
        return;
    };
    let out = tmp("pg-rr");
    record(
        &db.url,
        Isolation::RepeatableRead,
        &WriteSkew::new(2),
        2,
        40,
        &out,
    );
    let (v, _) = verdict(&out);
    let c = v
        .certificate()
        .cloned()
        .expect("snapshot isolation lets the pair skew: REJECT");
    assert_eq!(c.anomaly, Anomaly::G2Item, "{c:#?}");
    let kinds: Vec<EdgeKind> = c.cycle.iter().map(|e| e.kind).collect();
    assert_eq!(kinds, vec![EdgeKind::Rw, EdgeKind::Rw], "{c:#?}");
    // What REPEATABLE READ promises is kept: snapshot isolation accepts the same history.
    let (v, _) = verdict_at(&out, Level::SnapshotIsolation);
    assert_eq!(v, Verdict::Accept);
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn postgres_promises_by_isolation() {
    let Some(db) = TempDb::new("KRAIT_PG_URL", "promise") else {
        return;
    };
    let level = |iso| backend(&db.url, iso).unwrap().promise().unwrap().level;
    assert_eq!(level(Isolation::Serializable), Promise::Serializable);
    assert_eq!(level(Isolation::RepeatableRead), Promise::SnapshotIsolation);
    assert_eq!(level(Isolation::ReadCommitted), Promise::ReadCommitted);
}

#[test]
fn postgres_repeatable_read_keeps_snapshot_isolation_under_contention() {
    let Some(db) = TempDb::new("KRAIT_PG_URL", "rrlu") else {
        return;
    };
    let out = tmp("pg-rr-lu");
    let rep = record(
        &db.url,
        Isolation::RepeatableRead,
        &LostUpdate { counters: 1 },
        4,
        200,
        &out,
    );
    assert!(
        rep.aborted > 0,
        "first committer wins: some increments abort"
    );
    let (v, _) = verdict_at(&out, Level::SnapshotIsolation);
    assert_eq!(v, Verdict::Accept);
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn postgres_read_committed_loses_updates_which_snapshot_isolation_rejects() {
    let Some(db) = TempDb::new("KRAIT_PG_URL", "rclu") else {
        return;
    };
    let out = tmp("pg-rc-lu");
    record(
        &db.url,
        Isolation::ReadCommitted,
        &LostUpdate { counters: 1 },
        4,
        200,
        &out,
    );
    let (v, _) = verdict_at(&out, Level::SnapshotIsolation);
    let c = v
        .certificate()
        .cloned()
        .expect("read committed loses concurrent increments: REJECT under SI");
    assert_eq!(c.anomaly, Anomaly::LostUpdate, "{c:#?}");
    // What READ COMMITTED promises, it keeps.
    for level in [Level::ReadCommitted, Level::ReadAtomic, Level::Causal] {
        assert_eq!(verdict_at(&out, level).0, Verdict::Accept, "{level:?}");
    }
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn mariadb_repeatable_read_loses_updates() {
    let Some(db) = TempDb::new("KRAIT_MYSQL_URL", "lu") else {
        return;
    };
    let out = tmp("my-lu");
    record(
        &db.url,
        Isolation::RepeatableRead,
        &LostUpdate { counters: 1 },
        4,
        200,
        &out,
    );
    let (v, _) = verdict(&out);
    let c = v
        .certificate()
        .cloned()
        .expect("InnoDB repeatable read loses concurrent increments: REJECT");
    assert_eq!(c.anomaly, Anomaly::LostUpdate, "{c:#?}");
    // Not snapshot isolation either, which is why krait does not take it for that.
    let (v, _) = verdict_at(&out, Level::SnapshotIsolation);
    assert_eq!(v.certificate().unwrap().anomaly, Anomaly::LostUpdate);
    let b = backend(&db.url, Isolation::RepeatableRead).unwrap();
    let p = b.promise().unwrap();
    assert!(
        matches!(p.level, Promise::Other | Promise::SnapshotIsolation),
        "{p:?}"
    );
    let _ = std::fs::remove_dir_all(&out);
}
