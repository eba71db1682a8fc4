//! Strict serializability: real-time edges with a clock-drift allowance.

use crate::common;

use common::{random_history, serializable, verified, Rng};
use krait_checker::{check, CheckError, EdgeKind, Options};
use krait_history::{build_history, SimpleTxn as T, TxnStatus};

fn strict(drift: u64) -> Options {
    Options {
        strict: Some(drift),
        ..Options::default()
    }
}

#[test]
fn stale_read_after_commit_is_only_strictly_wrong() {
    // T1 commits x=1 at t=100; T2 starts at t=1000 and still reads the initial x.
    let h = build_history(&[
        T::new(0, 1).w("x", 1).times(10, 100),
        T::new(1, 2).r0("x").times(1_000, 1_100),
    ])
    .unwrap();
    assert!(check(&h, &Options::default()).unwrap().verdict.is_accept());
    let rep = check(&h, &strict(0)).unwrap();
    let c = rep.verdict.certificate().expect("strict REJECT").clone();
    let kinds: Vec<EdgeKind> = c.cycle.iter().map(|e| e.kind).collect();
    assert_eq!(kinds, vec![EdgeKind::RealTime, EdgeKind::Rw], "{c:#?}");
    assert_eq!(c.anomaly, krait_checker::Anomaly::GSingleRealtime);
    assert_eq!(c.cycle[0].from, "T1");
    assert_eq!(c.cycle[0].to, "T2");
    assert_eq!(
        c.cycle[1].explanation,
        "T2 read x = the initial version, which T1 overwrote"
    );
    // A drift allowance larger than the gap makes them concurrent: ACCEPT.
    assert!(check(&h, &strict(1_000)).unwrap().verdict.is_accept());
    // Just smaller than the gap: still a violation.
    assert!(check(&h, &strict(899)).unwrap().verdict.is_reject());
}

#[test]
fn missing_timestamps_name_the_transaction() {
    let h = build_history(&[T::new(0, 1).w("x", 1).times(10, 100), T::new(1, 7).r0("x")]).unwrap();
    match check(&h, &strict(0)) {
        Err(CheckError::MissingTimestamp { txn }) => assert_eq!(txn, "T7"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn random_histories_against_real_time_oracle() {
    let mut r = Rng(0xabad_cafe);
    let (mut yes, mut no) = (0, 0);
    for i in 0..4000 {
        let keys = 2 + r.below(2);
        // Unknown outcomes included: they follow what committed before they started, and
        // bound nothing themselves.
        let h = random_history(&mut r, 9, keys);
        let drift = r.below(4);
        let truth = serializable(&h, Some(drift));
        if truth {
            yes += 1
        } else {
            no += 1
        }
        for opts in [
            strict(drift),
            Options {
                prune: false,
                ..strict(drift)
            },
            Options {
                combine: false,
                coalesce: false,
                ..strict(drift)
            },
        ] {
            let rep = check(&h, &opts).unwrap();
            assert_eq!(
                rep.verdict.is_accept(),
                truth,
                "history {i}, drift {drift}: {:?}\n{h:#?}",
                rep.verdict
            );
            verified(&h, &rep);
        }
    }
    assert!(yes > 400 && no > 400, "{yes} {no}");
}

#[test]
fn real_time_edges_stay_linear() {
    // 100k transactions, each overlapping hundreds of others.
    let h = krait_workloads_free_history(100_000);
    let rep = check(&h, &strict(0)).unwrap();
    assert!(rep.verdict.is_accept());
    assert!(
        rep.stats.realtime_edges <= 3 * 100_000,
        "{}",
        rep.stats.realtime_edges
    );
}

/// Overlapping write-only and read-only transactions built directly (the checker's tests do
/// not depend on the workloads crate): transaction i runs over [i*10, i*10 + 5000].
fn krait_workloads_free_history(n: u64) -> krait_history::History {
    let mut txns = Vec::new();
    for i in 0..n {
        let t = T::new((i % 16) as usize, i + 1)
            .w(&format!("k{}", i % 1000), i + 1)
            .times(i * 10, i * 10 + 5_000);
        txns.push(t);
    }
    build_history(&txns).unwrap()
}

/// An unknown outcome may commit at any time after it started: the end time its log gives (when
/// the client gave up) bounds nothing, and a missing commit time is no error.
#[test]
fn unknown_outcome_has_no_commit_time_bound() {
    // T1's client gave up at t=100; T3 starts at t=200 and still reads the initial x; T2 reads
    // T1's write later. T1 committed between 200 and 300: strictly serializable.
    let h = build_history(&[
        T::new(0, 1)
            .w("x", 1)
            .times(10, 100)
            .status(TxnStatus::Unknown),
        T::new(1, 3).r0("x").times(200, 210),
        T::new(1, 2).r("x", 1).times(300, 310),
    ])
    .unwrap();
    assert!(check(&h, &strict(0)).unwrap().verdict.is_accept());
    // No commit time at all: read, so it takes part, and no exit 2.
    let h = build_history(&[
        T::new(0, 1)
            .w("x", 1)
            .times(10, krait_history::NO_TIME)
            .status(TxnStatus::Unknown),
        T::new(1, 2).r("x", 1).times(300, 310),
    ])
    .unwrap();
    assert!(check(&h, &strict(0)).unwrap().verdict.is_accept());
    // It still began after what committed before its start: reading a version overwritten by
    // then is a real-time violation.
    let h = build_history(&[
        T::new(0, 1).w("x", 1).times(10, 20),
        T::new(1, 2)
            .r0("x")
            .w("y", 1)
            .times(100, 200)
            .status(TxnStatus::Unknown),
        T::new(2, 3).r("y", 1).times(300, 310),
    ])
    .unwrap();
    assert!(check(&h, &strict(0)).unwrap().verdict.is_reject());
}
