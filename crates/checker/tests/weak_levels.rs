//! Read committed, read atomic and causal consistency against brute-force oracles written from
//! their axiomatic definitions (`common::weak`), on 10,000 random histories each; the verdicts
//! along the ladder (rc ⊇ ra ⊇ cc ⊇ si ⊇ ser) are monotone on every one, and the sample holds
//! histories that separate each pair of adjacent levels. Hand-made histories, one per anomaly,
//! with their exact certificates.

use crate::common;

use common::si::random_si_history;
use common::weak::{weak_ok, Weak};
use common::{cycle_edges, edge as e, is_closed, random_history, Rng};
use krait_checker::{check, Anomaly, Level, Options, Verdict};
use krait_history::{build_history, History, SimpleTxn as T};

fn accepts(h: &History, level: Level) -> bool {
    let opts = Options {
        level,
        want_order: true,
        ..Options::default()
    };
    let rep = check(h, &opts).unwrap();
    // Every verdict, checked apart from the checker (krait-verify, from the axioms).
    assert!(
        common::verified(h, &rep),
        "krait-verify cannot check {rep:?}"
    );
    match rep.verdict {
        Verdict::Accept => true,
        Verdict::Reject(c) => {
            assert!(is_closed(&c.cycle), "open cycle {c:#?}");
            false
        }
        v => panic!("{v:?}"),
    }
}

#[test]
fn ten_thousand_histories_per_level_against_the_definitions() {
    let mut r = Rng(0x3ea4_0001);
    let ladder = [
        (Level::ReadCommitted, Some(Weak::ReadCommitted)),
        (Level::ReadAtomic, Some(Weak::ReadAtomic)),
        (Level::Causal, Some(Weak::Causal)),
        (Level::SnapshotIsolation, None),
        (Level::Serializable, None),
    ];
    // separated[i]: histories level i accepts and level i+1 rejects.
    let mut separated = [0usize; 4];
    let mut accepted = [0usize; 5];
    for i in 0..10_000 {
        let keys = 1 + r.below(3);
        let h = if i % 2 == 0 {
            random_history(&mut r, 7, keys)
        } else {
            random_si_history(&mut r, 7, keys, None)
        };
        let verdicts: Vec<bool> = ladder
            .iter()
            .map(|&(level, oracle)| {
                let got = accepts(&h, level);
                if let Some(w) = oracle {
                    let truth = weak_ok(&h, w);
                    assert_eq!(
                        got, truth,
                        "history {i} at {level:?}: checker {got}, definition {truth}\n{h:#?}"
                    );
                }
                got
            })
            .collect();
        for j in 0..4 {
            assert!(
                verdicts[j] || !verdicts[j + 1],
                "history {i}: {:?} accepts but {:?} rejects\n{h:#?}",
                ladder[j + 1].0,
                ladder[j].0
            );
            separated[j] += usize::from(verdicts[j] && !verdicts[j + 1]);
        }
        for (a, &v) in accepted.iter_mut().zip(&verdicts) {
            *a += usize::from(v);
        }
    }
    eprintln!("accepted per level {accepted:?}, separated {separated:?}");
    for (j, &s) in separated.iter().enumerate() {
        assert!(
            s >= 20,
            "few histories separate {:?} from {:?}: {separated:?}",
            ladder[j].0,
            ladder[j + 1].0
        );
    }
}

fn reject(h: &History, level: Level) -> krait_checker::Certificate {
    let opts = Options {
        level,
        ..Options::default()
    };
    match check(h, &opts).unwrap().verdict {
        Verdict::Reject(c) => *c,
        v => panic!("expected a REJECT at {level:?}, got {v:?}"),
    }
}

#[test]
fn read_skew_in_the_wrong_order_is_a_non_monotonic_read() {
    // T2 reads x from T1 and then y as initial, though T1 wrote y: its reads went back.
    let h = build_history(&[
        T::new(0, 1).w("x", 1).w("y", 1),
        T::new(1, 2).r("x", 1).r0("y"),
    ])
    .unwrap();
    let c = reject(&h, Level::ReadCommitted);
    assert_eq!(c.anomaly, Anomaly::NonMonotonicRead);
    assert_eq!(
        cycle_edges(&c),
        vec![e("INIT", "ww", "T1"), e("T1", "ww", "INIT")]
    );
    // Read the other way round (old y first, then new x), read committed allows it.
    let h = build_history(&[
        T::new(0, 1).w("x", 1).w("y", 1),
        T::new(1, 2).r0("y").r("x", 1),
    ])
    .unwrap();
    assert!(accepts(&h, Level::ReadCommitted));
    // Read atomic does not: T2 saw part of T1.
    let c = reject(&h, Level::ReadAtomic);
    assert_eq!(c.anomaly, Anomaly::FracturedRead);
}

#[test]
fn own_session_write_missed_is_a_session_guarantee_violation() {
    let h = build_history(&[T::new(0, 1).w("x", 1), T::new(0, 2).r0("x")]).unwrap();
    assert!(accepts(&h, Level::ReadCommitted));
    let c = reject(&h, Level::ReadAtomic);
    assert_eq!(c.anomaly, Anomaly::SessionGuarantee);
}

#[test]
fn missing_a_causally_earlier_write_is_a_causality_violation() {
    // T1 writes x; T2 reads it and writes y; T3 reads T2's y but x as initial.
    let h = build_history(&[
        T::new(0, 1).w("x", 1),
        T::new(1, 2).r("x", 1).w("y", 2),
        T::new(2, 3).r("y", 2).r0("x"),
    ])
    .unwrap();
    assert!(accepts(&h, Level::ReadAtomic));
    let c = reject(&h, Level::Causal);
    assert_eq!(c.anomaly, Anomaly::CausalityViolation);
    assert_eq!(
        cycle_edges(&c),
        vec![e("INIT", "ww", "T1"), e("T1", "ww", "INIT")]
    );
    assert!(c.cycle[1].explanation.contains("causal past"), "{c:#?}");
}

#[test]
fn causal_but_not_snapshot_isolated_nor_serializable() {
    // A long fork is causally consistent.
    let h = build_history(&[
        T::new(0, 1).w("x", 1),
        T::new(1, 2).w("y", 2),
        T::new(2, 3).r("x", 1).r0("y"),
        T::new(3, 4).r("y", 2).r0("x"),
    ])
    .unwrap();
    assert!(accepts(&h, Level::Causal));
    assert!(!accepts(&h, Level::SnapshotIsolation));
}

#[test]
fn circular_information_flow_is_rejected_at_every_level() {
    let h = build_history(&[
        T::new(0, 1).r("y", 2).w("x", 1),
        T::new(1, 2).r("x", 1).w("y", 2),
    ])
    .unwrap();
    for level in [Level::ReadCommitted, Level::ReadAtomic, Level::Causal] {
        assert_eq!(reject(&h, level).anomaly, Anomaly::G1c);
    }
}
