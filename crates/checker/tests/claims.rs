//! Cobra's claims (the writer a read names, and the value hash it saw) checked where graph
//! building looks up each read's writer, not in a pass of their own: a claim the history
//! contradicts is still a REJECT naming that read, the first in op order, and it still comes
//! before any other finding, wherever the parallel pass stopped.

use krait_checker::{check, Anomaly, Defer, Options, Verdict};
use krait_history::{History, HistoryBuilder, OpKind, TxnStatus, DELETE_WRITE_ID, INIT_WRITE_ID};

/// One operation with its claims: (kind, key, value, value hash, writer named).
type Op = (OpKind, u32, u64, u64, u64);

fn w(key: u32, value: u64, hash: u64) -> Op {
    (OpKind::Write, key, value, hash, 0)
}
fn r(key: u32, value: u64, hash: u64, writer: u64) -> Op {
    (OpKind::Read, key, value, hash, writer)
}

/// Sessions of (transaction id, ops), over keys "k0".."k{keys - 1}".
fn history(keys: u32, sessions: &[Vec<(u64, Vec<Op>)>]) -> History {
    let mut b = HistoryBuilder::new().with_cobra_claims();
    for k in 0..keys {
        b.key(&format!("k{k}"));
    }
    for (s, txns) in sessions.iter().enumerate() {
        b.begin_session(format!("s{s}"));
        for (ext, ops) in txns {
            for &(kind, key, value, hash, writer) in ops {
                b.op(kind, key, value);
                b.cobra_claim(hash, writer);
            }
            b.finish_txn(*ext, TxnStatus::Committed, 0, 0).unwrap();
        }
    }
    b.finish()
}

/// Both ways of finding each read's writer: looked up by graph building itself (where every
/// read has one write or none), and resolved in a pass of its own first.
fn both_ways() -> [Options; 2] {
    [Defer::Always, Defer::Never].map(|defer_resolution| Options {
        defer_resolution,
        ..Options::default()
    })
}

/// The certificate's summary of a REJECT for a read with a claim problem (garbage read), the
/// same both ways.
fn garbage(h: &History) -> String {
    let [deferred, resolved] = both_ways().map(|o| {
        let rep = check(h, &o).unwrap();
        match rep.verdict {
            Verdict::Reject(c) => {
                assert_eq!(c.anomaly, Anomaly::GarbageRead, "{}", c.summary);
                c.summary
            }
            v => panic!("expected a REJECT, got {v:?}"),
        }
    });
    assert_eq!(deferred, resolved);
    deferred
}

#[test]
fn each_kind_of_claim_problem_is_a_garbage_read() {
    // Write 0x100 of T1 on k0, hash 70.
    let t1 = (1, vec![w(0, 0x100, 70)]);
    let wrong_writer = history(1, &[vec![t1.clone()], vec![(2, vec![r(0, 0x100, 70, 9)])]]);
    assert_eq!(
        garbage(&wrong_writer),
        "T2 read k0 naming write 0x100 of transaction 9, but that write belongs to T1"
    );
    let wrong_value = history(1, &[vec![t1.clone()], vec![(2, vec![r(0, 0x100, 71, 1)])]]);
    assert_eq!(
        garbage(&wrong_value),
        "T2 read k0 with value hash 0x47, but the write it names wrote value hash 0x46: the database returned a value nobody wrote"
    );
    let delete = history(1, &[vec![t1], vec![(2, vec![r(0, DELETE_WRITE_ID, 0, 1)])]]);
    assert_eq!(
        garbage(&delete),
        "T2 read k0 naming a delete, which the log format cannot attribute to one writer"
    );
}

/// A read of a key's initial version (write id `0xbebeebee`): (key, value hash, writer named).
fn r_init(key: u32, hash: u64, writer: u64) -> Op {
    (OpKind::ReadInit, key, INIT_WRITE_ID, hash, writer)
}

#[test]
fn two_reads_of_one_initial_version_with_different_hashes_are_a_garbage_read() {
    let h = history(
        2,
        &[
            vec![(1, vec![r_init(0, 70, 0), r_init(1, 5, 0)])],
            vec![(2, vec![r_init(1, 5, 0), r_init(0, 71, 0)])],
        ],
    );
    assert_eq!(
        garbage(&h),
        "T2 read the initial version of k0 with value hash 0x47, but T1 read it with value hash 0x46: a key's initial version holds one value, so one of them returned a value nobody wrote"
    );
    let mut report = serde_json::to_value(check(&h, &Options::default()).unwrap()).unwrap();
    report["level"] = "serializable".into();
    assert!(
        krait_verify::verify(&h, &report).is_ok(),
        "{:?}",
        krait_verify::verify(&h, &report)
    );
    // The same hash everywhere, or differing only on an aborted reader: no problem.
    let same = history(
        2,
        &[
            vec![(1, vec![r_init(0, 70, 0)])],
            vec![(2, vec![r_init(0, 70, 0)])],
        ],
    );
    assert!(matches!(
        check(&same, &Options::default()).unwrap().verdict,
        Verdict::Accept
    ));
}

#[test]
fn a_read_of_its_own_write_has_its_claims_checked_too() {
    // T1 writes k0 and reads it back, naming the wrong value hash.
    let h = history(1, &[vec![(1, vec![w(0, 0x100, 70), r(0, 0x100, 72, 1)])]]);
    assert_eq!(
        garbage(&h),
        "T1 read k0 with value hash 0x48, but the write it names wrote value hash 0x46: the database returned a value nobody wrote"
    );
}

#[test]
fn a_claim_problem_comes_before_an_earlier_finding() {
    // T1, first in op order, reads a value nobody wrote (a finding of graph building, which
    // stops its pass there); T3's wrong claim, later, is still the one reported.
    let h = history(
        2,
        &[
            vec![(1, vec![r(1, 0x999, 5, 7)])],
            vec![(2, vec![w(0, 0x100, 70)]), (3, vec![r(0, 0x100, 70, 8)])],
        ],
    );
    assert_eq!(
        garbage(&h),
        "T3 read k0 naming write 0x100 of transaction 8, but that write belongs to T2"
    );
    // Without the claim problem, the finding is reported.
    let fine = history(
        2,
        &[
            vec![(1, vec![r(1, 0x999, 5, 7)])],
            vec![(2, vec![w(0, 0x100, 70)]), (3, vec![r(0, 0x100, 70, 2)])],
        ],
    );
    for o in both_ways() {
        let rep = check(&fine, &o).unwrap();
        assert!(
            matches!(&rep.verdict, Verdict::Reject(c) if c.anomaly == Anomaly::ReadOfNobody),
            "{:?}",
            rep.verdict
        );
    }
}

/// A history large enough that graph building splits it into ranges checked in parallel: a
/// chain of writes and reads in 4 sessions, each transaction reading the previous one's write
/// of its key.
fn large(bad: &[u64], nobody_at: Option<u64>) -> History {
    const TXNS: u64 = 6000;
    const KEYS: u32 = 50;
    let mut sessions: Vec<Vec<(u64, Vec<Op>)>> = vec![Vec::new(); 4];
    // Per key, its last write (value, writer).
    let mut last: Vec<Option<(u64, u64)>> = vec![None; KEYS as usize];
    for t in 1..=TXNS {
        let mut ops = Vec::new();
        for i in 0..12u64 {
            let k = ((t * 7 + i * 13) % KEYS as u64) as u32;
            if ops.iter().any(|o: &Op| o.1 == k) {
                continue;
            }
            match last[k as usize] {
                Some((v, wt)) => {
                    let writer = if bad.contains(&t) { wt + 1_000_000 } else { wt };
                    ops.push(r(k, v, v * 3, writer));
                }
                None => ops.push((OpKind::ReadInit, k, 0, 0, 0)),
            }
        }
        if nobody_at == Some(t) {
            ops.push(r(ops[0].1, 0xdead_0000, 1, 1));
        }
        // The write goes to a key this transaction did not read.
        let k = (t % KEYS as u64) as u32;
        if !ops.iter().any(|o| o.1 == k) {
            let v = 0x1_0000 + t;
            ops.push(w(k, v, v * 3));
            last[k as usize] = Some((v, t));
        }
        // Transactions run one after another, so the history is serializable.
        sessions[(t % 4) as usize].push((t, ops));
    }
    let keys_named: Vec<Vec<(u64, Vec<Op>)>> = sessions;
    history(KEYS, &keys_named)
}

#[test]
fn in_a_large_history_the_first_claim_problem_in_op_order_is_reported() {
    let fine = large(&[], None);
    assert!(fine.num_ops() > 1 << 16, "{} ops", fine.num_ops());
    for o in both_ways() {
        assert!(check(&fine, &o).unwrap().verdict.is_accept());
    }
    // Ops are in session order: session 1 holds transactions 1, 5, 9, …; session 3 holds 3,
    // 7, …; so transaction 5001 (session 1) comes before 4003 (session 3) in op order.
    let h = large(&[4003, 5001], None);
    let s = garbage(&h);
    assert!(s.starts_with("T5001 read "), "{s}");
    // A read of nobody earlier in the same range, where that range's pass stops, does not
    // hide it; nor does one in an earlier range.
    for (bad, nobody) in [(17, 13), (101, 97), (4003, 9)] {
        let s = garbage(&large(&[bad], Some(nobody)));
        assert!(s.starts_with(&format!("T{bad} read ")), "{s}");
    }
}
