//! The recorder API (`krait_collector::Recorder`) as an application uses it: transactions
//! recorded by hand read back exactly, with every outcome (and the ones a dropped transaction
//! leaves); a bank-transfer service on SQLite records a serializable history; the same service
//! on PostgreSQL at READ COMMITTED keeps its invariant (no negative balance) while krait catches
//! the lost updates, which read committed allows and snapshot isolation does not. The
//! PostgreSQL test needs KRAIT_PG_URL and says it skipped otherwise.

use crate::common;

use krait_checker::{Level, Verdict};
use krait_collector::Recorder;
use krait_history::{History, OpKind, TxnStatus};
use std::path::PathBuf;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("krait-recorder-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn load(dir: &std::path::Path) -> History {
    let l = krait_history::load(dir, None).unwrap();
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    l.history
}

fn verdict(h: &History, level: Level) -> Verdict {
    common::verified_verdict(h, level)
}

#[test]
fn recorded_transactions_read_back_exactly_with_every_outcome() {
    let dir = tmp("exact");
    let rec = Recorder::create(&dir).unwrap();
    let mut s = rec.session("app-1").unwrap();
    // T1 writes x (tagged), T2 reads it back: the read names T1's write.
    let mut t = s.begin().unwrap();
    let stored = t.tag("x", "alice:10").unwrap();
    t.committed().unwrap();
    let mut t = s.begin().unwrap();
    assert_eq!(t.read_tagged("x", Some(&stored)).unwrap(), Some("alice:10"));
    // A value nobody recorded is the initial state.
    assert_eq!(t.read_tagged("y", Some("100")).unwrap(), Some("100"));
    t.committed().unwrap();
    // Rolled back; COMMIT sent and no answer; dropped before and after COMMIT.
    let mut t = s.begin().unwrap();
    t.write("z", 7).unwrap();
    t.aborted().unwrap();
    let mut t = s.begin().unwrap();
    t.write("z", 8).unwrap();
    t.committing().unwrap();
    assert!(t.write("z", 9).is_err(), "no operation after committing()");
    t.unknown().unwrap();
    {
        let mut t = s.begin().unwrap();
        t.write("z", 10).unwrap();
    }
    {
        let mut t = s.begin().unwrap();
        t.write("z", 11).unwrap();
        t.committing().unwrap();
    }
    // Names are checked, and a session name is used once.
    assert!(rec.session("app-1").is_err());
    assert!(rec.session("../evil").is_err());
    drop(s);
    assert!(
        Recorder::create(&dir).is_err(),
        "a directory with logs is refused"
    );

    let h = load(&dir);
    assert_eq!(h.num_txns(), 6);
    use TxnStatus::*;
    assert_eq!(
        h.txn_status,
        [Committed, Committed, Aborted, Unknown, Aborted, Unknown]
    );
    let r = krait_history::resolve(&h);
    let read_x = h.ops(1).start;
    assert_eq!(r.writer_txn(read_x as u32), Some(0), "T2 read T1's write");
    assert_eq!(h.op_kind[read_x + 1], OpKind::ReadInit);
    assert!(verdict(&h, Level::Serializable).is_accept());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A transaction whose writes wait for COMMIT's announcement (`defer_writes`) reads back
/// as any other; until then its records are held in memory, but never more than a bounded
/// piece of them.
#[test]
fn deferred_writes_reach_the_log_by_commit_and_in_bounded_pieces() {
    let dir = tmp("deferred");
    let rec = Recorder::create(&dir).unwrap();
    let mut s = rec.session("app").unwrap();
    let log = dir.join("app.jsonl");
    let size = || std::fs::metadata(&log).unwrap().len();
    let mut t = s.begin().unwrap();
    t.defer_writes();
    t.write("x", 1).unwrap();
    t.read("y", None).unwrap();
    assert_eq!(size(), 0, "held until COMMIT is announced");
    t.committing().unwrap();
    assert!(size() > 0, "on the log before COMMIT is sent");
    t.committed().unwrap();
    // Dropped before COMMIT: aborted, as an undeferred one.
    {
        let mut t = s.begin().unwrap();
        t.defer_writes();
        t.write("x", 2).unwrap();
    }
    // A long transaction: its records go out in pieces as they grow.
    let before = size();
    let mut t = s.begin().unwrap();
    t.defer_writes();
    for i in 0..10_000 {
        t.write(&format!("k{i}"), 100 + i).unwrap();
    }
    let held = size() - before;
    assert!(held > 0, "10,000 writes were all held in memory");
    t.committing().unwrap();
    assert!(
        size() - before - held < 128 << 10,
        "more than a piece was held"
    );
    t.committed().unwrap();
    // Deferral ends with its transaction.
    let mut t = s.begin().unwrap();
    let mark = size();
    t.write("x", 3).unwrap();
    assert!(size() > mark, "an undeferred write goes out at once");
    t.committed().unwrap();
    drop(s);

    let h = load(&dir);
    use TxnStatus::*;
    assert_eq!(h.txn_status, [Committed, Aborted, Committed, Committed]);
    assert_eq!(h.ops(2).len(), 10_000);
    assert!(verdict(&h, Level::Serializable).is_accept());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Moves `amount` from one account to another if the first has it; the invariant the service
/// keeps is that no balance goes negative.
fn transfer(
    c: &mut rusqlite::Connection,
    s: &mut krait_collector::RecSession,
    from: &str,
    to: &str,
    amount: i64,
) -> std::io::Result<bool> {
    let mut t = s.begin()?;
    let tx = match c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate) {
        Ok(tx) => tx,
        Err(_) => {
            t.aborted()?;
            return Ok(false);
        }
    };
    let get = |k: &str| -> String {
        tx.query_row("SELECT v FROM accounts WHERE k = ?1", [k], |r| r.get(0))
            .unwrap()
    };
    let a = get(from);
    let a: i64 = t.read_tagged(from, Some(&a))?.unwrap().parse().unwrap();
    let b = get(to);
    let b: i64 = t.read_tagged(to, Some(&b))?.unwrap().parse().unwrap();
    if a < amount {
        drop(tx);
        t.aborted()?;
        return Ok(false);
    }
    for (k, v) in [(from, a - amount), (to, b + amount)] {
        let stored = t.tag(k, &v.to_string())?;
        tx.execute("UPDATE accounts SET v = ?1 WHERE k = ?2", [&stored, k])
            .unwrap();
    }
    t.committing()?;
    match tx.commit() {
        Ok(()) => t.committed()?,
        Err(_) => t.aborted()?,
    }
    Ok(true)
}

#[test]
fn a_bank_on_sqlite_records_a_serializable_history() {
    let dir = tmp("sqlite");
    let db = dir.with_extension("db");
    let _ = std::fs::remove_file(&db);
    let rec = Recorder::create(&dir).unwrap();
    let open = || {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.busy_timeout(std::time::Duration::from_secs(10)).unwrap();
        c
    };
    {
        // The initial balances, loaded through a recorded session: every value has a writer.
        let c = open();
        c.execute_batch("CREATE TABLE accounts (k TEXT PRIMARY KEY, v TEXT)")
            .unwrap();
        let mut s = rec.session("setup").unwrap();
        let mut t = s.begin().unwrap();
        for k in ["a", "b", "c"] {
            let v = t.tag(k, "100").unwrap();
            c.execute("INSERT INTO accounts VALUES (?1, ?2)", [k, &v])
                .unwrap();
        }
        t.committed().unwrap();
    }
    std::thread::scope(|sc| {
        for i in 0..4 {
            let rec = &rec;
            let open = &open;
            sc.spawn(move || {
                let mut c = open();
                let mut s = rec.session(&format!("teller-{i}")).unwrap();
                let names = ["a", "b", "c"];
                for n in 0..40 {
                    let (f, t) = (names[(i + n) % 3], names[(i + n + 1) % 3]);
                    transfer(&mut c, &mut s, f, t, 7).unwrap();
                }
            });
        }
    });
    let h = load(&dir);
    assert_eq!(h.num_sessions(), 5);
    assert!(verdict(&h, Level::Serializable).is_accept());
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&db);
}

#[test]
fn a_flag_recorded_untagged_has_repeated_values_and_checks() {
    let dir = tmp("untagged");
    let rec = Recorder::create(&dir).unwrap();
    let mut s = rec.session("flags").unwrap();
    let mut t = s.begin().unwrap();
    t.write_value("f", "off").unwrap();
    t.committed().unwrap();
    let mut flag = "off";
    for _ in 0..6 {
        let next = if flag == "off" { "on" } else { "off" };
        let mut t = s.begin().unwrap();
        t.read_value("f", Some(flag)).unwrap();
        t.write_value("f", next).unwrap();
        t.committed().unwrap();
        flag = next;
    }
    let h = load(&dir);
    assert!(
        h.has_duplicates(),
        "off and on are each written more than once"
    );
    assert!(verdict(&h, Level::Serializable).is_accept());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bank_at_read_committed_keeps_its_invariant_and_krait_catches_lost_updates() {
    let Some(db) = common::TempDb::new("KRAIT_PG_URL", "recorder_bank") else {
        return;
    };
    db.exec(&format!(
        "ALTER DATABASE {} SET default_transaction_isolation = 'read committed'",
        db.name
    ));
    let dir = tmp("pg");
    let rec = Recorder::create(&dir).unwrap();
    {
        let mut c = postgres::Client::connect(&db.url, postgres::NoTls).unwrap();
        c.batch_execute("CREATE TABLE accounts (k TEXT PRIMARY KEY, v TEXT)")
            .unwrap();
        let mut s = rec.session("setup").unwrap();
        let mut t = s.begin().unwrap();
        for k in ["a", "b"] {
            let v = t.tag(k, "1000").unwrap();
            c.execute("INSERT INTO accounts VALUES ($1, $2)", &[&k, &v])
                .unwrap();
        }
        t.committed().unwrap();
    }
    std::thread::scope(|sc| {
        for i in 0..6 {
            let (rec, url) = (&rec, &db.url);
            sc.spawn(move || {
                let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
                let mut s = rec.session(&format!("teller-{i}")).unwrap();
                for n in 0..30 {
                    let (from, to) = if (i + n) % 2 == 0 {
                        ("a", "b")
                    } else {
                        ("b", "a")
                    };
                    let mut t = s.begin().unwrap();
                    let mut tx = c.transaction().unwrap();
                    let get = |tx: &mut postgres::Transaction, k: &str| -> String {
                        tx.query_one("SELECT v FROM accounts WHERE k = $1", &[&k])
                            .unwrap()
                            .get(0)
                    };
                    let a = get(&mut tx, from);
                    let a: i64 = t
                        .read_tagged(from, Some(&a))
                        .unwrap()
                        .unwrap()
                        .parse()
                        .unwrap();
                    let b = get(&mut tx, to);
                    let b: i64 = t
                        .read_tagged(to, Some(&b))
                        .unwrap()
                        .unwrap()
                        .parse()
                        .unwrap();
                    // The service's own check passes: it never moves money it does not see.
                    assert!(a >= 0 && b >= 0);
                    if a < 5 {
                        drop(tx);
                        t.aborted().unwrap();
                        continue;
                    }
                    // Time between read and write, as a real service has: others commit.
                    std::thread::sleep(std::time::Duration::from_millis(2));
                    // Rows in key order, as a careful service updates them (no deadlock);
                    // a statement that fails rolls the transaction back.
                    let mut updates = [(from, a - 5), (to, b + 5)];
                    updates.sort();
                    let mut failed = false;
                    for (k, v) in updates {
                        let stored = t.tag(k, &v.to_string()).unwrap();
                        let r =
                            tx.execute("UPDATE accounts SET v = $1 WHERE k = $2", &[&stored, &k]);
                        if r.is_err() {
                            failed = true;
                            break;
                        }
                    }
                    if failed {
                        drop(tx);
                        t.aborted().unwrap();
                        continue;
                    }
                    t.committing().unwrap();
                    match tx.commit() {
                        Ok(()) => t.committed().unwrap(),
                        Err(_) => t.aborted().unwrap(),
                    }
                }
            });
        }
    });
    let h = load(&dir);
    // Read committed allows what happened; snapshot isolation and serializability do not.
    assert!(verdict(&h, Level::ReadCommitted).is_accept());
    // Every tagged read and write keeps the balance the application stored.
    assert_eq!(h.app_values.len(), h.num_ops());
    match verdict(&h, Level::SnapshotIsolation) {
        Verdict::Reject(c) => {
            eprintln!("caught: {}", c.summary);
            // The certificate shows balances, not write ids.
            let ops: Vec<&String> = c.txns.iter().flat_map(|t| &t.ops).collect();
            assert!(!ops.is_empty());
            for o in &ops {
                let v = o.split(" = ").nth(1).unwrap_or("");
                let shown = v.split(' ').next().unwrap_or("");
                assert!(
                    shown.len() > 2
                        && shown.starts_with('"')
                        && shown.ends_with('"')
                        && shown[1..shown.len() - 1].parse::<i64>().is_ok(),
                    "{o}"
                );
            }
        }
        v => panic!("six tellers at read committed lost no update? {v:?}"),
    }
    assert!(verdict(&h, Level::Serializable).is_reject());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The bank example (SQLite) killed mid-run: every balance the database holds was written by a
/// transaction the log has, as committed or unknown — never missing, never aborted — and the
/// history, cut lines and all, is still accepted.
#[test]
fn a_recording_killed_mid_run_loses_no_committed_transaction() {
    // The example's binary, built by `cargo test` beside this test's.
    let exe = std::env::current_exe().unwrap();
    let bank = exe
        .parent()
        .and_then(|d| d.parent())
        .map(|d| d.join("examples").join("bank"));
    let Some(bank) = bank.filter(|b| b.is_file()) else {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "skipped: the bank example is not built (cargo test --workspace builds it)"
        );
        return;
    };
    let dir = tmp("killed");
    let db = dir.with_extension("db");
    let mut child = std::process::Command::new(&bank)
        .arg("sqlite")
        .arg(&dir)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Once a transaction is in the log (a loaded machine may take long to start the run),
    // long enough for more transfers to commit, short of the run's end.
    let started = std::time::Instant::now();
    let logged = || {
        std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| std::fs::read_to_string(e.path()).is_ok_and(|t| t.contains("\"committed\"")))
    };
    while !logged() && started.elapsed() < std::time::Duration::from_secs(30) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    std::thread::sleep(std::time::Duration::from_millis(150));
    child.kill().unwrap();
    let _ = child.wait();
    // Lines cut by the kill are read, and said to be.
    let l = krait_history::load(&dir, None).unwrap();
    for w in &l.warnings {
        assert!(w.message.contains("cut short"), "{w:?}");
    }
    let h = l.history;
    assert!(h.num_txns() > 1, "the run was killed before it started");
    let c = rusqlite::Connection::open(&db).unwrap();
    let mut st = c.prepare("SELECT k, v FROM krait_bank_accounts").unwrap();
    let rows: Vec<(String, String)> = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(rows.len(), 2);
    for (k, v) in rows {
        let id: u64 = v[1..v.find('|').unwrap()].parse().unwrap();
        let key = h.keys.iter().position(|x| *x == k).unwrap() as u32;
        let w = h.writes_of(key, id).next().unwrap_or_else(|| {
            panic!("the database holds {k} = {v}, whose write is not in the log")
        });
        let t = krait_history::op_txns(&h)[w as usize];
        assert_ne!(
            h.txn_status[t as usize],
            TxnStatus::Aborted,
            "the write of {k} the database kept is logged as aborted"
        );
    }
    assert!(verdict(&h, Level::Serializable).is_accept());
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&db);
}
