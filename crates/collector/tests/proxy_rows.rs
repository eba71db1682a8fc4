//! `krait proxy` against a real PostgreSQL: statements of several rows by primary key — an
//! INSERT of several rows, `SELECT`, `UPDATE` (increments too) and `DELETE … WHERE pk IN (…)` —
//! recorded row by row, a key the SELECT found no row for as a read of no row; and what cannot
//! be placed (a SELECT of several rows that does not return the key column, an UPDATE that
//! matched some of its keys but not all) noted instead. Needs KRAIT_PG_URL and says it skipped
//! otherwise; makes and drops its own database.

use crate::common;

use common::proxy::{committed_writes, kv_db, verdict, with_proxy};
use krait_checker::Level;
use krait_history::{History, OpKind, TxnStatus};

/// Reads of `key` by committed transactions other than the proxy's load: (of a row, of no row).
fn committed_reads(h: &History, key: &str) -> (usize, usize) {
    let mut out = (0, 0);
    for t in 0..h.num_txns() as u32 {
        let load = h.session_names[h.session_of(t)] == "initial";
        if load || h.txn_status[t as usize] != TxnStatus::Committed {
            continue;
        }
        for o in h.ops(t) {
            if h.keys[h.op_key[o] as usize] != key {
                continue;
            }
            match h.op_kind[o] {
                OpKind::Read if h.op_value[o] != krait_history::ABSENT_VALUE => out.0 += 1,
                OpKind::Read | OpKind::ReadInit => out.1 += 1,
                OpKind::Write => {}
            }
        }
    }
    out
}

#[test]
fn inserts_of_several_rows_and_selects_by_a_list_of_keys_are_recorded_row_by_row() {
    let Some(db) = kv_db("proxy_rows") else {
        return;
    };
    let ((), l, report) = with_proxy(&db, &[("kv", "k")], "rows", |_, via| {
        let mut c = postgres::Client::connect(via, postgres::NoTls).unwrap();
        // Simple protocol, then extended with parameters.
        c.batch_execute("INSERT INTO kv (k, v) VALUES (2, 'b'), (3, 'c')")
            .unwrap();
        c.execute(
            "INSERT INTO kv (k, v) VALUES ($1, $2), ($3, $4)",
            &[&4i32, &"d", &5i32, &"e"],
        )
        .unwrap();
        let mut tx = c.transaction().unwrap();
        // Key 9 has no row: a read of no row.
        let rows = tx
            .query("SELECT k, v FROM kv WHERE k IN (2, 3, 9)", &[])
            .unwrap();
        assert_eq!(rows.len(), 2);
        let rows = tx
            .query(
                "SELECT * FROM kv WHERE k IN ($1, $2) FOR UPDATE",
                &[&4i32, &8i32],
            )
            .unwrap();
        assert_eq!(rows.len(), 1);
        tx.execute("UPDATE kv SET v = 'x' WHERE k = 2", &[])
            .unwrap();
        tx.commit().unwrap();
        // The key column not returned: the rows cannot be told apart.
        let rows = c.query("SELECT v FROM kv WHERE k IN (1, 5)", &[]).unwrap();
        assert_eq!(rows.len(), 2);
    });
    assert_eq!(report.unrecorded, 0);
    assert_eq!(
        report.unrecorded_reads, 1,
        "the SELECT without its key column"
    );
    let h = &l.history;
    for (k, n) in [("kv/2/v", 2), ("kv/3/v", 1), ("kv/4/v", 1), ("kv/5/v", 1)] {
        assert_eq!(committed_writes(h, k), n, "{k}");
    }
    assert_eq!(committed_reads(h, "kv/2/v"), (1, 0));
    assert_eq!(committed_reads(h, "kv/3/v"), (1, 0));
    assert_eq!(committed_reads(h, "kv/9/v"), (0, 1), "key 9: no row");
    assert_eq!(committed_reads(h, "kv/4/v"), (1, 0));
    assert_eq!(committed_reads(h, "kv/8/v"), (0, 1), "key 8: no row");
    assert_eq!(
        committed_reads(h, "kv/1/v"),
        (0, 0),
        "not placed, not recorded"
    );
    assert_eq!(
        committed_reads(h, "kv/5/v"),
        (0, 0),
        "not placed, not recorded"
    );
    assert!(verdict(h, Level::Serializable).is_accept());
}

/// Write skew through list reads: two REPEATABLE READ transactions each read both rows with one
/// `IN` list and update a different one. Snapshot isolation allows it, serializability does
/// not, and the recorded history says so: the reads of the list are what make the cycle.
#[test]
fn a_write_skew_read_through_a_list_of_keys_is_rejected_under_serializability() {
    let Some(db) = kv_db("proxy_rows_skew") else {
        return;
    };
    let ((), l, _) = with_proxy(&db, &[("kv", "k")], "rows_skew", |_, via| {
        let mut a = postgres::Client::connect(via, postgres::NoTls).unwrap();
        let mut b = postgres::Client::connect(via, postgres::NoTls).unwrap();
        a.batch_execute("INSERT INTO kv (k, v) VALUES (2, 'b')")
            .unwrap();
        let rr = postgres::IsolationLevel::RepeatableRead;
        let mut t1 = a.build_transaction().isolation_level(rr).start().unwrap();
        let mut t2 = b.build_transaction().isolation_level(rr).start().unwrap();
        for t in [&mut t1, &mut t2] {
            let rows = t
                .query("SELECT k, v FROM kv WHERE k IN (1, 2)", &[])
                .unwrap();
            assert_eq!(rows.len(), 2);
        }
        t1.execute("UPDATE kv SET v = 'a1' WHERE k = 1", &[])
            .unwrap();
        t2.execute("UPDATE kv SET v = 'b2' WHERE k = 2", &[])
            .unwrap();
        t1.commit().unwrap();
        t2.commit().unwrap();
    });
    let h = &l.history;
    assert!(verdict(h, Level::SnapshotIsolation).is_accept());
    let v = verdict(h, Level::Serializable);
    assert!(v.is_reject(), "{v:?}");
}

/// An UPDATE or DELETE by a list of keys writes each listed row. The reply counts the rows it
/// matched: all of them, the writes stand; none, they are taken back (a transaction of nothing
/// else is recorded as doing nothing); some, the reply does not say which, so the statement is
/// noted as one whose writes may not all have happened.
#[test]
fn updates_and_deletes_by_a_list_of_keys_are_recorded_row_by_row() {
    let Some(db) = kv_db("proxy_rows_write") else {
        return;
    };
    let ((), l, report) = with_proxy(&db, &[("kv", "k")], "rows_write", |_, via| {
        let mut c = postgres::Client::connect(via, postgres::NoTls).unwrap();
        c.batch_execute("INSERT INTO kv (k, v) VALUES (2, 'b'), (3, 'c')")
            .unwrap();
        let mut tx = c.transaction().unwrap();
        assert_eq!(
            tx.execute(
                "UPDATE kv SET v = $1 WHERE k IN ($2, $3)",
                &[&"x", &1i32, &2i32]
            )
            .unwrap(),
            2
        );
        // No such rows: taken back.
        assert_eq!(
            tx.execute("DELETE FROM kv WHERE k IN (8, 9)", &[]).unwrap(),
            0
        );
        tx.commit().unwrap();
        assert_eq!(
            c.execute("DELETE FROM kv WHERE k IN (3, 3)", &[]).unwrap(),
            1
        );
        let rows = c
            .query("SELECT k, v FROM kv WHERE k IN (1, 2, 3)", &[])
            .unwrap();
        assert_eq!(rows.len(), 2);
        // Key 7 has no row: one of two matched.
        assert_eq!(
            c.execute("UPDATE kv SET v = 'y' WHERE k IN (1, 7)", &[])
                .unwrap(),
            1
        );
    });
    assert_eq!(
        report.unrecorded, 1,
        "the UPDATE that matched one of its two keys"
    );
    let h = &l.history;
    assert_eq!(
        committed_writes(h, "kv/1/v"),
        3,
        "the load, the list UPDATE, the noted one"
    );
    assert_eq!(committed_writes(h, "kv/2/v"), 2);
    assert_eq!(
        committed_writes(h, "kv/3/v"),
        2,
        "the INSERT and the DELETE"
    );
    assert_eq!(committed_writes(h, "kv/8/v"), 0, "taken back");
    assert_eq!(committed_writes(h, "kv/9/v"), 0, "taken back");
    assert_eq!(committed_reads(h, "kv/3/v"), (0, 1), "deleted: no row");
    assert!(
        l.warnings
            .iter()
            .any(|w| w.message.contains("may have written")),
        "{:?}",
        l.warnings
    );
    assert!(verdict(h, Level::Serializable).is_accept());
}

/// An increment by a list of keys (`SET c = c ± v WHERE pk IN (…)`), by the simple and the
/// extended protocol: each row the server returns is a read of its old value and a write of
/// the new, under the key it returns; a listed key with no row is neither. The client sees an
/// UPDATE's reply, its row count and no rows.
#[test]
fn increments_by_a_list_of_keys_are_recorded_row_by_row() {
    let Some(db) = kv_db("proxy_rows_inc") else {
        return;
    };
    let mut admin = postgres::Client::connect(&db.url, postgres::NoTls).unwrap();
    admin
        .batch_execute("CREATE TABLE acct (id INT PRIMARY KEY, balance INT)")
        .unwrap();
    let ((), l, report) = with_proxy(&db, &[("acct", "id")], "rows_inc", |_, via| {
        let mut c = postgres::Client::connect(via, postgres::NoTls).unwrap();
        c.batch_execute("INSERT INTO acct (id, balance) VALUES (1, 10), (2, 20), (3, 30)")
            .unwrap();
        let mut tx = c.transaction().unwrap();
        // Key 9 has no row.
        tx.batch_execute("UPDATE acct SET balance = balance + 5 WHERE id IN (1, 2, 9)")
            .unwrap();
        let n = tx
            .execute(
                "UPDATE acct SET balance = balance - $1 WHERE id IN ($2, $3)",
                &[&1i32, &3i32, &2i32],
            )
            .unwrap();
        assert_eq!(n, 2, "the client is told of the rows matched");
        tx.commit().unwrap();
    });
    assert_eq!(report.unrecorded, 0);
    let balances: Vec<(i32, i32)> = admin
        .query("SELECT id, balance FROM acct ORDER BY id", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(balances, [(1, 15), (2, 24), (3, 29)]);
    let h = &l.history;
    for (k, writes, reads) in [
        ("acct/1/balance", 2, 1),
        ("acct/2/balance", 3, 2),
        ("acct/3/balance", 2, 1),
        ("acct/9/balance", 0, 0),
    ] {
        assert_eq!(committed_writes(h, k), writes, "{k}");
        assert_eq!(committed_reads(h, k), (reads, 0), "{k}");
    }
    // Each read names the value the write before it wrote: a wrong old value would be a read
    // of a value nobody wrote.
    assert!(verdict(h, Level::Serializable).is_accept());
}
