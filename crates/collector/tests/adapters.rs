//! The table adapters (`RecTxn::get`, `put`, `update_with` over a `Table`) on each client: a
//! counter incremented from several threads records a history krait accepts at the level the
//! database gives, and a read-committed one on PostgreSQL is caught losing increments. The
//! PostgreSQL and MariaDB tests need KRAIT_PG_URL / KRAIT_MYSQL_URL and say they skipped
//! otherwise; each makes and drops its own database.

use crate::common;

use krait_checker::{Level, Verdict};
use krait_collector::{RecSession, Recorder, Rows, Table};
use krait_history::History;
use std::path::PathBuf;

const THREADS: usize = 4;
const INCREMENTS: usize = 25;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("krait-adapters-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn verdict(dir: &std::path::Path, level: Level) -> (Verdict, History) {
    let l = krait_history::load(dir, None).unwrap();
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    (common::verified_verdict(&l.history, level), l.history)
}

/// One recorded increment of counter `c` in the open database transaction `db`; commits with
/// `commit` and records the outcome. Returns whether it committed.
fn increment<D: Rows>(
    s: &mut RecSession,
    t: &Table,
    mut db: D,
    commit: impl FnOnce(D) -> Result<(), String>,
) -> bool {
    let mut r = s.begin().unwrap();
    let bumped = r.update_with(&mut db, t, "c", |v| {
        // Work between the read and the write, as an application does: others may commit.
        std::thread::sleep(std::time::Duration::from_millis(1));
        (v.map_or(0, |v| v.parse::<u64>().unwrap()) + 1).to_string()
    });
    if bumped.is_err() {
        drop(db);
        r.aborted().unwrap();
        return false;
    }
    r.committing().unwrap();
    match commit(db) {
        Ok(()) => {
            r.committed().unwrap();
            true
        }
        Err(_) => {
            r.aborted().unwrap();
            false
        }
    }
}

#[test]
fn a_counter_on_sqlite_is_recorded_and_accepted() {
    let dir = tmp("sqlite");
    let file = dir.with_extension("db");
    let _ = std::fs::remove_file(&file);
    let rec = Recorder::create(&dir).unwrap();
    let table = Table::new("counters", "k", "v").unwrap();
    rusqlite::Connection::open(&file)
        .unwrap()
        .execute_batch("CREATE TABLE counters (k TEXT PRIMARY KEY, v TEXT)")
        .unwrap();
    let committed: usize = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..THREADS)
            .map(|i| {
                let (rec, table, file) = (&rec, &table, &file);
                sc.spawn(move || {
                    let mut c = rusqlite::Connection::open(file).unwrap();
                    c.busy_timeout(std::time::Duration::from_secs(10)).unwrap();
                    let mut s = rec.session(&format!("w{i}")).unwrap();
                    (0..INCREMENTS)
                        .filter(|_| {
                            let tx = c
                                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                                .unwrap();
                            increment(&mut s, table, tx, |tx| {
                                tx.commit().map_err(|e| e.to_string())
                            })
                        })
                        .count()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum()
    });
    assert_eq!(committed, THREADS * INCREMENTS);
    let (v, h) = verdict(&dir, Level::Serializable);
    assert!(v.is_accept(), "{v:?}");
    assert_eq!(h.keys, ["counters/c"]);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&file);
}

#[test]
fn fences_let_the_online_checker_free_what_is_done() {
    let dir = tmp("fenced");
    let rec = Recorder::create(&dir).unwrap();
    let table = Table::new("counters", "k", "v").unwrap();
    let file = dir.with_extension("db");
    let _ = std::fs::remove_file(&file);
    rusqlite::Connection::open(&file)
        .unwrap()
        .execute_batch("CREATE TABLE counters (k TEXT PRIMARY KEY, v TEXT)")
        .unwrap();
    std::thread::scope(|sc| {
        for i in 0..THREADS {
            let (rec, table, file) = (&rec, &table, &file);
            sc.spawn(move || {
                let mut c = rusqlite::Connection::open(file).unwrap();
                c.busy_timeout(std::time::Duration::from_secs(10)).unwrap();
                let mut s = rec.session(&format!("w{i}")).unwrap();
                for n in 0..4 * INCREMENTS {
                    let mut tx = c
                        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                        .unwrap();
                    let mut r = s.begin().unwrap();
                    // A fence every 10 transactions; a key of its own per session otherwise.
                    if n % 10 == 0 {
                        r.fence(&mut tx, table).unwrap();
                    } else {
                        r.update_with(&mut tx, table, &format!("s{i}"), |v| {
                            (v.map_or(0, |v| v.parse::<u64>().unwrap()) + 1).to_string()
                        })
                        .unwrap();
                    }
                    r.committing().unwrap();
                    tx.commit().unwrap();
                    r.committed().unwrap();
                }
            });
        }
    });
    let h = krait_history::load(&dir, None).unwrap().history;
    assert_eq!(
        krait_history::summarize(&h).fences,
        THREADS * 4 * INCREMENTS / 10
    );
    let mut deleted = 0;
    let on = krait_checker::online::replay(
        &h,
        krait_checker::online::OnlineOptions::default(),
        50,
        |st, _| deleted = st.deleted_total,
    )
    .unwrap();
    assert!(on.verdict().is_none(), "{:?}", on.verdict());
    assert!(
        deleted > (h.num_txns() / 2) as u64,
        "the fences' epochs let garbage collection free most of the history: {deleted} of {}",
        h.num_txns()
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&file);
}

#[test]
fn untagged_values_are_stored_as_they_are() {
    let dir = tmp("untagged");
    let rec = Recorder::create(&dir).unwrap();
    let table = Table::new("flags", "k", "v").unwrap().untagged();
    let mut c = rusqlite::Connection::open_in_memory().unwrap();
    c.execute_batch("CREATE TABLE flags (k TEXT PRIMARY KEY, v TEXT)")
        .unwrap();
    let mut s = rec.session("s").unwrap();
    for v in ["on", "off", "on", "off"] {
        let mut tx = c.transaction().unwrap();
        let mut r = s.begin().unwrap();
        r.get(&mut tx, &table, "f").unwrap();
        r.put(&mut tx, &table, "f", v).unwrap();
        r.committing().unwrap();
        tx.commit().unwrap();
        r.committed().unwrap();
    }
    let stored: String = c
        .query_row("SELECT v FROM flags WHERE k = 'f'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(stored, "off", "the application's own value, untagged");
    let (v, h) = verdict(&dir, Level::Serializable);
    assert!(h.has_duplicates());
    assert!(v.is_accept(), "{v:?}");
    assert!(Table::new("flags; DROP TABLE x", "k", "v").is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Increments on PostgreSQL at `iso`, each thread on its own connection.
fn pg_counter(db: &common::TempDb, iso: postgres::IsolationLevel, dir: &std::path::Path) {
    let rec = Recorder::create(dir).unwrap();
    let table = Table::new("counters", "k", "v").unwrap();
    let mut c = postgres::Client::connect(&db.url, postgres::NoTls).unwrap();
    c.batch_execute(
        "DROP TABLE IF EXISTS counters; CREATE TABLE counters (k TEXT PRIMARY KEY, v TEXT)",
    )
    .unwrap();
    std::thread::scope(|sc| {
        for i in 0..THREADS {
            let (rec, table, url) = (&rec, &table, &db.url);
            sc.spawn(move || {
                let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
                let mut s = rec.session(&format!("w{i}")).unwrap();
                for _ in 0..INCREMENTS {
                    let tx = c.build_transaction().isolation_level(iso).start().unwrap();
                    increment(&mut s, table, tx, |tx| {
                        tx.commit().map_err(|e| e.to_string())
                    });
                }
            });
        }
    });
}

#[test]
fn a_counter_on_postgres_at_repeatable_read_is_accepted_at_read_committed_caught() {
    let Some(db) = common::TempDb::new("KRAIT_PG_URL", "adapters_pg") else {
        return;
    };
    let dir = tmp("pg-rr");
    pg_counter(&db, postgres::IsolationLevel::RepeatableRead, &dir);
    let (v, _) = verdict(&dir, Level::SnapshotIsolation);
    assert!(v.is_accept(), "{v:?}");

    let dir = tmp("pg-rc");
    pg_counter(&db, postgres::IsolationLevel::ReadCommitted, &dir);
    assert!(verdict(&dir, Level::ReadCommitted).0.is_accept());
    match verdict(&dir, Level::SnapshotIsolation).0 {
        Verdict::Reject(c) => eprintln!("caught: {}", c.summary),
        v => panic!("{THREADS} threads at read committed lost no increment? {v:?}"),
    }
}

#[test]
fn a_counter_on_mariadb_at_serializable_is_accepted() {
    let Some(db) = common::TempDb::new("KRAIT_MYSQL_URL", "adapters_my") else {
        return;
    };
    let dir = tmp("my");
    let rec = Recorder::create(&dir).unwrap();
    let table = Table::new("counters", "k", "v").unwrap();
    let opts = || mysql::Opts::from_url(&db.url.replacen("mariadb://", "mysql://", 1)).unwrap();
    {
        use mysql::prelude::Queryable;
        let mut c = mysql::Conn::new(opts()).unwrap();
        c.query_drop("CREATE TABLE counters (k VARCHAR(64) PRIMARY KEY, v TEXT)")
            .unwrap();
    }
    std::thread::scope(|sc| {
        for i in 0..THREADS {
            let (rec, table, opts) = (&rec, &table, &opts);
            sc.spawn(move || {
                let mut c = mysql::Conn::new(opts()).unwrap();
                let mut s = rec.session(&format!("w{i}")).unwrap();
                for _ in 0..INCREMENTS {
                    let tx = c
                        .start_transaction(
                            mysql::TxOpts::default()
                                .set_isolation_level(Some(mysql::IsolationLevel::Serializable)),
                        )
                        .unwrap();
                    increment(&mut s, table, tx, |tx| {
                        tx.commit().map_err(|e| e.to_string())
                    });
                }
            });
        }
    });
    let (v, _) = verdict(&dir, Level::Serializable);
    assert!(v.is_accept(), "{v:?}");
}
