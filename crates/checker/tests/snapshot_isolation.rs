//! Snapshot isolation against the brute-force oracle written from its definition (interleavings
//! of starts and commits, `common::si`), under every combination of the checker's switches,
//! with unique and with repeated values, plain and strict; and hand-made histories, one per
//! anomaly, with their exact certificates.

use crate::common;

use common::si::{random_si_history, si_order_is_valid, snapshot_isolated};
use common::{
    all_option_sets, cycle_edges, edge as e, is_closed, random_history_with, verified, Rng,
};
use krait_checker::{check, Anomaly, Level, Options, SolverKind, Verdict};
use krait_history::{build_history, History, SimpleTxn as T};

fn si(o: Options) -> Options {
    Options {
        level: Level::SnapshotIsolation,
        ..o
    }
}

/// Counts of what the sample exercised.
#[derive(Debug, Default)]
struct Seen {
    accept: usize,
    reject: usize,
    to_solver: usize,
    confirmed: usize,
    /// Histories snapshot isolation accepts that serializability rejects.
    si_only: usize,
}

/// Checks `count` random histories, half from serial executions with faults and half from
/// executions under snapshot isolation with faults (so write skews are common); with
/// `repeat`, written values repeat.
fn run(count: usize, seed: u64, max_txns: u64, repeat: bool, sets: &[(String, Options)]) -> Seen {
    let mut r = Rng(seed);
    let mut seen = Seen::default();
    for i in 0..count {
        let keys = 1 + r.below(3);
        let range = repeat.then(|| 1 + r.below(3));
        let h = if i % 2 == 0 {
            let init_zero = repeat && r.chance(30);
            random_history_with(&mut r, max_txns, keys, range, init_zero)
        } else {
            random_si_history(&mut r, max_txns, keys, range)
        };
        let strict = r.chance(20).then_some(1);
        let truth = snapshot_isolated(&h, strict);
        if truth {
            seen.accept += 1;
            seen.si_only += usize::from(!common::serializable(&h, strict));
        } else {
            seen.reject += 1;
        }
        for (name, opts) in sets {
            let opts = Options {
                strict,
                ..si(opts.clone())
            };
            let rep = check(&h, &opts).unwrap();
            seen.to_solver += usize::from(rep.stats.constraints_after_prune > 0);
            if !matches!(rep.verdict, Verdict::Unknown { .. }) {
                seen.confirmed += usize::from(verified(&h, &rep));
            }
            match (&rep.verdict, truth) {
                (Verdict::Accept, true) => {
                    let order = rep.order.as_ref().unwrap();
                    assert!(
                        si_order_is_valid(&h, order, &rep.snapshots),
                        "history {i} [{name}]: bad commit order {order:?} / {:?}\n{h:#?}",
                        rep.snapshots
                    );
                }
                (Verdict::Reject(c), false) => {
                    assert!(is_closed(&c.cycle), "history {i} [{name}]: open cycle {c:#?}");
                }
                (Verdict::Unknown { .. }, _) if opts.solver == SolverKind::BruteForce => {}
                (v, t) => panic!(
                    "history {i} [{name}] strict={strict:?}: checker says {v:?}, truth snapshot-isolated={t}\n{h:#?}"
                ),
            }
        }
    }
    eprintln!("{seen:?}");
    seen
}

#[test]
fn ten_thousand_histories_every_switch_combination() {
    let sets = all_option_sets();
    let a = run(5_000, 0x51_0000_0001, 8, false, &sets);
    let b = run(5_000, 0x51_0000_0002, 8, true, &sets);
    for s in [&a, &b] {
        assert!(s.accept > 500 && s.reject > 500, "unbalanced: {s:?}");
        assert!(s.si_only > 50, "too few histories only SI accepts: {s:?}");
        assert!(s.to_solver > 100, "the solver was rarely needed: {s:?}");
    }
}

#[test]
fn larger_histories() {
    let sets = vec![
        (
            "default".to_string(),
            Options {
                want_order: true,
                ..Options::default()
            },
        ),
        (
            "no pruning".to_string(),
            Options {
                prune: false,
                want_order: true,
                ..Options::default()
            },
        ),
    ];
    run(300, 0x51_0000_0003, 11, false, &sets);
    run(300, 0x51_0000_0004, 11, true, &sets);
}

fn verdict(h: &History, level: Level) -> Verdict {
    let opts = Options {
        level,
        want_order: true,
        ..Options::default()
    };
    let rep = check(h, &opts).unwrap();
    assert!(verified(h, &rep), "krait-verify cannot check {rep:?}");
    rep.verdict
}

/// The anomaly and cycle of a REJECT.
fn cycle_of(v: &Verdict) -> (Anomaly, Vec<(String, String, String)>) {
    let c = v.certificate().expect("a REJECT");
    (c.anomaly, cycle_edges(c))
}

#[test]
fn write_skew_is_snapshot_isolated_but_not_serializable() {
    let h = build_history(&[
        T::new(0, 1).r0("x").r0("y").w("x", 1),
        T::new(1, 2).r0("x").r0("y").w("y", 2),
    ])
    .unwrap();
    assert_eq!(verdict(&h, Level::SnapshotIsolation), Verdict::Accept);
    let (a, cyc) = cycle_of(&verdict(&h, Level::Serializable));
    assert_eq!(a, Anomaly::G2Item);
    assert_eq!(cyc.len(), 2);
}

#[test]
fn read_skew_is_g_sib() {
    let h = build_history(&[
        T::new(0, 1).w("x", 1).w("y", 1),
        T::new(1, 2).r("x", 1).r0("y"),
    ])
    .unwrap();
    let (a, cyc) = cycle_of(&verdict(&h, Level::SnapshotIsolation));
    assert_eq!(a, Anomaly::GSIb);
    assert_eq!(cyc, vec![e("T1", "wr", "T2"), e("T2", "rw", "T1")]);
}

#[test]
fn lost_update_is_rejected_by_the_first_committer_rule() {
    let h = build_history(&[
        T::new(0, 1).r0("x").w("x", 1),
        T::new(1, 2).r0("x").w("x", 2),
    ])
    .unwrap();
    let v = verdict(&h, Level::SnapshotIsolation);
    assert_eq!(v.certificate().unwrap().anomaly, Anomaly::LostUpdate);
    // Without chains (combine off) the same is found as a cycle: version order and the
    // anti-dependency against it.
    let rep = check(
        &h,
        &Options {
            level: Level::SnapshotIsolation,
            combine: false,
            ..Options::default()
        },
    )
    .unwrap();
    assert!(rep.verdict.is_reject());
}

#[test]
fn long_fork_is_named() {
    // T1 writes x, T2 writes y; T3 sees x but not y, T4 sees y but not x: their snapshots fork.
    let h = build_history(&[
        T::new(0, 1).w("x", 1),
        T::new(1, 2).w("y", 2),
        T::new(2, 3).r("x", 1).r0("y"),
        T::new(3, 4).r("y", 2).r0("x"),
    ])
    .unwrap();
    let (a, cyc) = cycle_of(&verdict(&h, Level::SnapshotIsolation));
    assert_eq!(a, Anomaly::LongFork);
    assert_eq!(
        cyc,
        vec![
            e("T1", "wr", "T3"),
            e("T3", "rw", "T2"),
            e("T2", "wr", "T4"),
            e("T4", "rw", "T1")
        ]
    );
    // Serializability rejects it too: the same cycle is a G2-item there.
    assert!(verdict(&h, Level::Serializable).is_reject());
}

#[test]
fn concurrent_blind_writes_need_an_order_of_snapshots() {
    // T1 and T2 write x blindly; T3 reads T1's x, T4 reads T2's x, and each saw the other's
    // key initial. Versions of x must be ordered, and whichever is first, the later writer's
    // snapshot must hold it: T3 (reading T1's x, which T2 overwrote if T1 < T2) and T4 cannot
    // both be explained.
    let h = build_history(&[
        T::new(0, 1).w("x", 1).w("a", 1),
        T::new(1, 2).w("x", 2).w("b", 2),
        T::new(2, 3).r("x", 1).r("b", 2),
        T::new(3, 4).r("x", 2).r("a", 1),
    ])
    .unwrap();
    let v = verdict(&h, Level::SnapshotIsolation);
    assert!(v.is_reject(), "{v:?}");
}

#[test]
fn session_order_puts_earlier_commits_in_the_snapshot() {
    // One session: T1 writes x, then T2 reads x as initial. Snapshot isolation (with session
    // guarantees) rejects the stale read.
    let h = build_history(&[T::new(0, 1).w("x", 1), T::new(0, 2).r0("x")]).unwrap();
    let (a, cyc) = cycle_of(&verdict(&h, Level::SnapshotIsolation));
    assert_eq!(a, Anomaly::GSIb);
    assert_eq!(cyc, vec![e("T1", "session", "T2"), e("T2", "rw", "T1")]);
}

#[test]
fn accept_gives_a_commit_order_with_snapshots() {
    let h = build_history(&[
        T::new(0, 1).r0("x").r0("y").w("x", 1),
        T::new(1, 2).r0("x").r0("y").w("y", 2),
        T::new(2, 3).r("x", 1).r("y", 2),
    ])
    .unwrap();
    let rep = check(
        &h,
        &si(Options {
            want_order: true,
            ..Options::default()
        }),
    )
    .unwrap();
    assert!(rep.verdict.is_accept());
    assert_eq!(rep.level, "snapshot-isolation");
    let order = rep.order.clone().unwrap();
    assert!(si_order_is_valid(&h, &order, &rep.snapshots));
    // T1 and T2 overlap (each snapshot is empty); T3's holds both.
    let pos3 = order.iter().position(|&t| t == 3).unwrap();
    assert_eq!((pos3, rep.snapshots[pos3]), (2, 2));
    assert_eq!(rep.snapshots[..2], [0, 0]);
}
