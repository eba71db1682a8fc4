//! Online mode: rounds, epochs and garbage collection keep the one-shot verdict.

use crate::common;

use common::fenced::{fence, option_sets, random_fenced, random_late_reads};
use common::Rng;
use krait_checker::online::{replay, replay_restarting, Online, OnlineOptions, TxnRecord};
use krait_checker::{check, Options, Verdict};
use krait_history::SimpleTxn;

fn push_all(on: &mut Online, txns: &[SimpleTxn]) {
    for t in txns {
        let ops = t
            .ops
            .iter()
            .map(|(k, key, v)| (*k, on.key(key), *v))
            .collect();
        let s = on.session(&format!("s{}", t.session)).unwrap();
        on.push(TxnRecord {
            session: s,
            ext: t.id,
            status: t.status,
            start: t.start,
            commit: t.commit,
            ops,
            lists: t
                .lists
                .iter()
                .map(|(i, l)| (*i as u32, l.clone()))
                .collect(),
            app: Vec::new(),
            claims: Vec::new(),
        })
        .unwrap();
    }
}

/// The paper's §4.3 example. T3 is superseded, but it lies on a cycle with T1 and T2 through
/// both sides of an undecided constraint, so it must stay: T7 and T8 later decide those
/// constraints and close T1 ⇝ T4 → T3 → T1.
#[test]
fn paper_unsafe_deletion_example() {
    // Sessions: s0 = T1 T4, s1 = T3 T6, s2 = T2 T5; then two fences each (epochs 1..6).
    let old = vec![
        SimpleTxn::new(0, 1).w("d", 1).w("a", 1),
        SimpleTxn::new(2, 2).w("d", 2).w("a", 2),
        SimpleTxn::new(1, 3).r("a", 2).w("b", 3),
        SimpleTxn::new(0, 4).w("b", 4).w("c", 4),
        SimpleTxn::new(2, 5).r("b", 3).w("c", 5),
        SimpleTxn::new(1, 6).w("b", 6),
        fence(0, 101, None, 1001),
        fence(1, 102, Some(1001), 1002),
        fence(2, 103, Some(1002), 1003),
        fence(0, 104, Some(1003), 1004),
        fence(1, 105, Some(1004), 1005),
        fence(2, 106, Some(1005), 1006),
    ];
    let future = vec![
        SimpleTxn::new(0, 7).r("d", 1),
        SimpleTxn::new(1, 8).r("c", 5),
    ];
    let mut on = Online::new(OnlineOptions::default());
    push_all(&mut on, &old);
    let st = on.round().unwrap().expect("a round ran");
    assert!(on.verdict().is_none(), "the old part alone is serializable");
    assert_eq!(st.epoch_agree, 4);
    assert!(
        on.last_superseded.contains(&3),
        "T3 is superseded: {:?}",
        on.last_superseded
    );
    assert!(!on.last_deleted.contains(&3), "T3 must not be deleted");
    assert!(on.is_live(3));
    // T1, T2 (writers of d that a future read may name) are in the frontier: never deleted.
    assert!(on.is_live(1) && on.is_live(2));

    push_all(&mut on, &future);
    on.round().unwrap().expect("a second round ran");
    let report = on.verdict().expect("the second round rejects");
    let cert = report.verdict.certificate().expect("a certificate");
    let names: Vec<&str> = cert.cycle.iter().map(|e| e.from.as_str()).collect();
    for t in ["T1", "T3", "T4"] {
        assert!(names.contains(&t), "cycle {names:?} lacks {t}");
    }
    // The one-shot check of the whole history agrees.
    let all: Vec<SimpleTxn> = old.iter().chain(&future).cloned().collect();
    let h = krait_history::build_history(&all).unwrap();
    assert!(check(&h, &Options::default()).unwrap().verdict.is_reject());
}

/// Without fences nothing is ever old: rounds still give the one-shot verdict, nothing is
/// deleted.
#[test]
fn no_fences_no_deletion() {
    let txns = vec![
        SimpleTxn::new(0, 1).w("x", 1),
        SimpleTxn::new(1, 2).r("x", 1).w("y", 2),
        SimpleTxn::new(0, 3).r("y", 2),
    ];
    let h = krait_history::build_history(&txns).unwrap();
    let on = replay(&h, OnlineOptions::default(), 1, |st, _| {
        assert_eq!(st.deleted, 0)
    })
    .unwrap();
    assert!(on.verdict().is_none());
    assert_eq!(on.live(), 3);
}

/// A read that waits for a writer from a session that lags behind is not a violation.
#[test]
fn reads_wait_for_lagging_writers() {
    let mut on = Online::new(OnlineOptions::default());
    push_all(&mut on, &[SimpleTxn::new(0, 1).r("x", 5)]);
    assert!(on.round().unwrap().is_none(), "nothing can be admitted yet");
    assert_eq!(on.waiting(), 1);
    push_all(&mut on, &[SimpleTxn::new(1, 2).w("x", 5)]);
    let st = on.round().unwrap().unwrap();
    assert_eq!(st.new, 2);
    assert!(on.verdict().is_none());
}

/// A read of a write that never comes is rejected when the stream ends.
#[test]
fn read_of_nobody_at_the_end() {
    let mut on = Online::new(OnlineOptions::default());
    push_all(&mut on, &[SimpleTxn::new(0, 1).r("x", 5)]);
    on.finish().unwrap();
    let r = on.verdict().expect("rejected");
    assert_eq!(
        r.verdict.certificate().unwrap().anomaly,
        krait_checker::Anomaly::ReadOfNobody
    );
}

/// A read naming a write that garbage collection deleted, by a transaction that arrives later:
/// the writer was not in the frontier, so the read is stale, and it is rejected.
#[test]
fn stale_read_of_a_deleted_write_is_rejected() {
    // s0: W(x,1), then W(x,2) by the same session: T1 is superseded by T2 on x.
    let mut txns = vec![
        SimpleTxn::new(0, 1).w("x", 1),
        SimpleTxn::new(0, 2).w("x", 2),
    ];
    let mut prev = None;
    let mut id = 100;
    for round in 0..3 {
        for s in 0..2 {
            id += 1;
            txns.push(fence(s, id, prev, id));
            prev = Some(id);
        }
        let _ = round;
    }
    // Without folding, T2 (the last writer of x) stays in the frontier.
    let mut on = Online::new(OnlineOptions {
        fold: false,
        ..OnlineOptions::default()
    });
    push_all(&mut on, &txns);
    on.round().unwrap().unwrap();
    assert!(on.verdict().is_none());
    assert!(
        on.last_deleted.contains(&1),
        "T1 deleted: {:?}",
        on.last_deleted
    );
    assert!(!on.is_live(1) && on.is_live(2));
    // Now a new transaction reads x = 1: a stale read, rejected in the next round.
    push_all(&mut on, &[SimpleTxn::new(1, 9).r("x", 1)]);
    let st = on.round().unwrap().expect("the reader is admitted at once");
    assert_eq!(st.round, 2);
    let cert = on.verdict().unwrap().verdict.certificate().unwrap().clone();
    assert_eq!(cert.anomaly, krait_checker::Anomaly::StaleRead);
    assert!(
        cert.summary
            .starts_with("T9 read x = 1, written by T1, which round 1 garbage-collected"),
        "{}",
        cert.summary
    );
    // With folding, T2 goes too, and x = 2 stands as x's initial version: reading it is fine,
    // reading x's true initial state is stale.
    let mut on = Online::new(OnlineOptions::default());
    push_all(&mut on, &txns);
    on.round().unwrap().unwrap();
    assert!(!on.is_live(1) && !on.is_live(2), "{:?}", on.last_deleted);
    assert_eq!(on.folded_keys(), 1);
    push_all(&mut on, &[SimpleTxn::new(1, 10).r("x", 2)]);
    on.round().unwrap().unwrap();
    assert!(on.verdict().is_none());
    push_all(&mut on, &[SimpleTxn::new(1, 11).r0("x")]);
    on.round().unwrap().unwrap();
    let cert = on.verdict().unwrap().verdict.certificate().unwrap().clone();
    assert_eq!(cert.anomaly, krait_checker::Anomaly::StaleRead);
    assert!(
        cert.summary
            .starts_with("T11 read the initial version of x, but T2 had overwritten it"),
        "{}",
        cert.summary
    );
    // The one-shot check of everything agrees.
    txns.push(SimpleTxn::new(1, 9).r("x", 1));
    let h = krait_history::build_history(&txns).unwrap();
    assert!(check(&h, &Options::default()).unwrap().verdict.is_reject());
}

#[test]
fn online_verdict_equals_one_shot_on_random_fenced_histories() {
    let mut r = Rng(0x5eed_0001);
    let sets = option_sets();
    let mut deleted = 0u64;
    let mut rejects = 0;
    let count = 3000;
    for i in 0..count {
        let h = if i % 2 == 0 {
            random_fenced(&mut r)
        } else {
            random_late_reads(&mut r)
        };
        let truth = check(&h, &Options::default()).unwrap().verdict;
        assert!(!matches!(truth, Verdict::Unknown { .. }));
        if truth.is_reject() {
            rejects += 1;
        }
        for &round in &[1usize, 3, 8, 1000] {
            for (name, o) in &sets {
                if i % 3 == 2 && *name != "default" {
                    continue;
                }
                // Strict needs timestamps, which only the first generator records.
                if o.check.strict.is_some() && i % 2 == 1 {
                    continue;
                }
                let expect = if o.check.strict.is_some() {
                    check(&h, &o.check).unwrap().verdict.is_reject()
                } else {
                    truth.is_reject()
                };
                let on = replay(&h, o.clone(), round, |_, _| {}).unwrap();
                let online_reject = on.verdict().is_some_and(|r| r.verdict.is_reject());
                assert_eq!(
                    online_reject,
                    expect,
                    "history {i}, round size {round}, {name}: online {} one-shot {}\n{h:?}",
                    if online_reject { "REJECT" } else { "ACCEPT" },
                    if expect { "REJECT" } else { "ACCEPT" },
                );
                if *name == "default" {
                    deleted += on.deleted_total();
                }
            }
        }
    }
    assert!(
        rejects > count / 5 && rejects < count * 9 / 10,
        "{rejects} rejects"
    );
    assert!(deleted > 1000, "garbage collection hardly ran: {deleted}");
}

/// A verifier restarted from its saved state after every round (`watch --checkpoint`) goes on
/// exactly as one that ran through: same verdict, same rounds, same transactions collected.
#[test]
fn a_checker_restored_after_every_round_runs_as_one_never_stopped() {
    let mut r = Rng(0x5eed_0c4e);
    let sets = option_sets();
    let (mut rejects, mut deleted) = (0, 0u64);
    for i in 0..600 {
        let h = if i % 2 == 0 {
            random_fenced(&mut r)
        } else {
            random_late_reads(&mut r)
        };
        for &round in &[1usize, 3, 8] {
            for (name, o) in &sets {
                if o.check.strict.is_some() && i % 2 == 1 {
                    continue;
                }
                let through = replay(&h, o.clone(), round, |_, _| {}).unwrap();
                let restarted = replay_restarting(&h, o.clone(), round).unwrap();
                let verdict = |on: &Online| on.verdict().map(|r| r.verdict.is_reject());
                let got = (
                    verdict(&restarted),
                    restarted.rounds(),
                    restarted.deleted_total(),
                );
                let want = (verdict(&through), through.rounds(), through.deleted_total());
                assert_eq!(got, want, "history {i}, round size {round}, {name}\n{h:?}");
                if *name == "default" {
                    rejects += usize::from(want.0 == Some(true));
                    deleted += want.2;
                }
            }
        }
    }
    assert!(rejects > 100, "{rejects} rejects");
    assert!(deleted > 1000, "garbage collection hardly ran: {deleted}");
}
