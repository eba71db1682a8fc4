//! Hand-built histories whose truth is known, with their exact verdicts and certificates.

use crate::common;

use krait_checker::{check, Anomaly, EdgeKind, Options, Verdict};
use krait_history::{build_history, History, SimpleTxn as T, TxnStatus};

fn h(txns: &[T]) -> History {
    build_history(txns).unwrap()
}

fn reject(hist: &History) -> krait_checker::Certificate {
    let rep = check(hist, &Options::default()).unwrap();
    assert!(
        common::verified(hist, &rep),
        "krait-verify cannot check {rep:#?}"
    );
    match rep.verdict {
        Verdict::Reject(c) => *c,
        v => panic!("expected REJECT, got {v:?}"),
    }
}

fn cycle_kinds(c: &krait_checker::Certificate) -> Vec<(String, EdgeKind, String)> {
    c.cycle
        .iter()
        .map(|e| (e.from.clone(), e.kind, e.to.clone()))
        .collect()
}

/// The worked example of the paper description, §9: six transactions on x and one session edge
/// T3 → T5. One constraint, decided by pruning; the only serial order is T3 T4 T1 T6 T2 T5.
#[test]
fn worked_example_section_9() {
    let hist = h(&[
        T::new(0, 1).w("x", 1),
        T::new(1, 2).r("x", 1).w("x", 2),
        T::new(2, 3).w("x", 3),
        T::new(3, 4).r("x", 3),
        T::new(2, 5).r("x", 2),
        T::new(4, 6).r("x", 1),
    ]);
    let rep = check(
        &hist,
        &Options {
            want_order: true,
            ..Options::default()
        },
    )
    .unwrap();
    assert_eq!(rep.verdict, Verdict::Accept);
    assert_eq!(rep.stats.constraints, 1);
    assert_eq!(rep.stats.constraints_after_prune, 0);
    assert_eq!(rep.order.unwrap(), vec![3, 4, 1, 6, 2, 5]);
    // Without pruning the solver must find the same answer.
    let rep = check(
        &hist,
        &Options {
            prune: false,
            want_order: true,
            ..Options::default()
        },
    )
    .unwrap();
    assert_eq!(rep.stats.constraints_after_prune, 1);
    assert_eq!(rep.order.unwrap(), vec![3, 4, 1, 6, 2, 5]);
}

#[test]
fn aborted_read_is_g1a() {
    let c = reject(&h(&[
        T::new(0, 1).w("x", 1).status(TxnStatus::Aborted),
        T::new(1, 2).r("x", 1),
    ]));
    assert_eq!(c.anomaly, Anomaly::G1a);
    assert_eq!(c.summary, "T2 read x = 1, written by T1, which aborted");
}

#[test]
fn intermediate_read_is_g1b() {
    let c = reject(&h(&[
        T::new(0, 1).w("x", 1).w("x", 2),
        T::new(1, 2).r("x", 1),
    ]));
    assert_eq!(c.anomaly, Anomaly::G1b);
    assert_eq!(
        c.summary,
        "T2 read x = 1, an intermediate version: T1 wrote x again before committing"
    );
}

#[test]
fn read_of_unwritten_value() {
    let c = reject(&h(&[T::new(0, 1).w("x", 1), T::new(1, 2).r("x", 9)]));
    assert_eq!(c.anomaly, Anomaly::ReadOfNobody);
    assert!(
        c.summary
            .starts_with("T2 read x = 9, a value no transaction in the history wrote"),
        "{}",
        c.summary
    );
}

#[test]
fn own_write_must_be_seen() {
    let c = reject(&h(&[
        T::new(0, 1).w("x", 1),
        T::new(1, 2).w("x", 2).r("x", 1),
    ]));
    assert_eq!(c.anomaly, Anomaly::OwnWriteNotSeen);
    assert_eq!(
        c.summary,
        "T2 wrote x = 2 and then read x as 1 from T1: a transaction must see its own latest write"
    );
    // Reading one's own earlier (not latest) write is the same fault.
    let c = reject(&h(&[T::new(0, 2).w("x", 2).w("x", 3).r("x", 2)]));
    assert_eq!(c.anomaly, Anomaly::OwnWriteNotSeen);
}

#[test]
fn read_of_own_later_write() {
    let c = reject(&h(&[T::new(0, 1).r("x", 5).w("x", 5)]));
    assert_eq!(c.anomaly, Anomaly::ReadOfNobody);
    assert_eq!(
        c.summary,
        "T1 read x = 5, a value it only writes later: no execution can produce this"
    );
}

#[test]
fn non_repeatable_read() {
    let c = reject(&h(&[
        T::new(0, 1).w("x", 1),
        T::new(1, 2).r0("x").r("x", 1),
    ]));
    assert_eq!(c.anomaly, Anomaly::NonRepeatableRead);
    assert_eq!(
        c.summary,
        "T2 read x twice and saw two versions: the initial version and then 1 (from T1)"
    );
}

#[test]
fn lost_update() {
    let c = reject(&h(&[
        T::new(0, 1).w("x", 1),
        T::new(1, 2).r("x", 1).w("x", 2),
        T::new(2, 3).r("x", 1).w("x", 3),
    ]));
    assert_eq!(c.anomaly, Anomaly::LostUpdate);
    assert_eq!(c.summary, "T2 and T3 both read the version of x written by T1 and both overwrote it: one of the updates is lost");
    assert_eq!(c.cycle.len(), 2);
    // The same history without combining is still rejected, by the solver or pruning.
    let rep = check(
        &h(&[
            T::new(0, 1).w("x", 1),
            T::new(1, 2).r("x", 1).w("x", 2),
            T::new(2, 3).r("x", 1).w("x", 3),
        ]),
        &Options {
            combine: false,
            ..Options::default()
        },
    )
    .unwrap();
    assert!(rep.verdict.is_reject());
}

#[test]
fn classification_follows_adya() {
    use krait_checker::classify;
    let e = |kind| krait_checker::CertEdge {
        from: "a".into(),
        to: "b".into(),
        kind,
        key: None,
        explanation: String::new(),
        forced_because: None,
        deduced: None,
        assumed: false,
    };
    assert_eq!(classify(&[e(EdgeKind::Ww), e(EdgeKind::Ww)]), Anomaly::G0);
    // Through session order: Elle's `-process` classes; through real time, `-realtime` first.
    assert_eq!(
        classify(&[e(EdgeKind::Ww), e(EdgeKind::Session)]),
        Anomaly::G0Process
    );
    assert_eq!(classify(&[e(EdgeKind::Ww), e(EdgeKind::Wr)]), Anomaly::G1c);
    assert_eq!(
        classify(&[e(EdgeKind::Wr), e(EdgeKind::Wr), e(EdgeKind::Session)]),
        Anomaly::G1cProcess
    );
    assert_eq!(
        classify(&[e(EdgeKind::Rw), e(EdgeKind::Wr)]),
        Anomaly::GSingle
    );
    assert_eq!(
        classify(&[e(EdgeKind::Rw), e(EdgeKind::Wr), e(EdgeKind::Session)]),
        Anomaly::GSingleProcess
    );
    assert_eq!(
        classify(&[e(EdgeKind::Rw), e(EdgeKind::Session), e(EdgeKind::RealTime)]),
        Anomaly::GSingleRealtime
    );
    assert_eq!(
        classify(&[e(EdgeKind::Rw), e(EdgeKind::Rw)]),
        Anomaly::G2Item
    );
    assert_eq!(
        classify(&[e(EdgeKind::Rw), e(EdgeKind::Rw), e(EdgeKind::Session)]),
        Anomaly::G2ItemProcess
    );
}

#[test]
fn wr_cycle_is_g1c() {
    let c = reject(&h(&[
        T::new(0, 1).w("x", 1).r("y", 2),
        T::new(1, 2).w("y", 2).r("x", 1),
    ]));
    assert_eq!(c.anomaly, Anomaly::G1c);
    assert_eq!(
        cycle_kinds(&c),
        vec![
            ("T1".into(), EdgeKind::Wr, "T2".into()),
            ("T2".into(), EdgeKind::Wr, "T1".into())
        ]
    );
    assert_eq!(c.cycle[0].explanation, "T2 read x = 1, which T1 wrote");
}

#[test]
fn read_skew_is_g_single() {
    // T2 updates x and y; T3 sees the new x but the old y.
    let c = reject(&h(&[
        T::new(0, 1).w("x", 1).w("y", 1),
        T::new(1, 2).r("x", 1).w("x", 2).r("y", 1).w("y", 2),
        T::new(2, 3).r("x", 2).r("y", 1),
    ]));
    assert_eq!(c.anomaly, Anomaly::GSingle);
    assert_eq!(
        cycle_kinds(&c),
        vec![
            ("T2".into(), EdgeKind::Wr, "T3".into()),
            ("T3".into(), EdgeKind::Rw, "T2".into())
        ]
    );
    assert_eq!(
        c.cycle[1].explanation,
        "T3 read y = 1 (written by T1), which T2 overwrote"
    );
}

#[test]
fn write_skew_is_g2_item() {
    let c = reject(&h(&[
        T::new(0, 1).r0("x").r0("y").w("x", 1),
        T::new(1, 2).r0("x").r0("y").w("y", 2),
    ]));
    assert_eq!(c.anomaly, Anomaly::G2Item);
    let kinds: Vec<EdgeKind> = c.cycle.iter().map(|e| e.kind).collect();
    assert_eq!(kinds, vec![EdgeKind::Rw, EdgeKind::Rw]);
}

#[test]
fn blind_write_cycle_needs_the_solver_or_pruning() {
    // Two blind writers of x and y; readers see them in opposite orders, which no single version
    // order per key can explain.
    let hist = h(&[
        T::new(0, 1).w("x", 1).w("y", 1),
        T::new(1, 2).w("x", 2).w("y", 2),
        T::new(2, 3).r("x", 1).r("y", 2),
        T::new(3, 4).r("x", 2).r("y", 1),
    ]);
    // T3 saw x from T1 and y from T2; T4 the reverse.
    let out = check(&hist, &Options::default()).unwrap();
    let truth_serializable = false;
    assert_eq!(out.verdict.is_accept(), truth_serializable);
    // Pruning off: the solver must find it, with an unsatisfiable set of constraints.
    let out = check(
        &hist,
        &Options {
            prune: false,
            ..Options::default()
        },
    )
    .unwrap();
    let c = out.verdict.certificate().expect("reject").clone();
    assert_eq!(c.anomaly, Anomaly::Unsatisfiable);
    // The wr edges on y alone already rule out both orders of x: a core of one constraint.
    assert_eq!(c.constraints.len(), 1, "{c:#?}");
    assert_eq!(c.constraints[0].key, "x");
    for opt in &c.constraints[0].options {
        assert_eq!(opt.closes_cycle.len(), 2, "{opt:#?}");
    }
    assert_eq!(
        c.constraints[0].options[0].edges[0].explanation,
        "T3 read x = 1 (written by T1), which T2 overwrote"
    );
}

#[test]
fn pruned_edge_carries_its_reason() {
    let hist = h(&[
        T::new(0, 1).w("x", 1).w("y", 1),
        T::new(1, 2).w("x", 2).w("y", 2),
        T::new(2, 3).r("x", 1).r("y", 2),
        T::new(3, 4).r("x", 2).r("y", 1),
    ]);
    let c = check(&hist, &Options::default())
        .unwrap()
        .verdict
        .certificate()
        .unwrap()
        .clone();
    assert!(c.cycle.iter().any(|e| e.forced_because.is_some()), "{c:#?}");
    // T3 -rw y-> T1 holds because T1's y came after T2's; the order not taken is the reverse.
    let deduced: Vec<&str> = c
        .cycle
        .iter()
        .filter_map(|e| e.forced_because.as_deref())
        .collect();
    assert_eq!(
        deduced,
        vec!["the other version order (T2's writes of y after T1's) is impossible: it would close the cycle T2 -wr-> T4 -rw-> T2"],
        "{c:#?}"
    );
}

#[test]
fn unknown_outcome_transactions() {
    // Read by a committed transaction: it committed, and takes part.
    let hist = h(&[
        T::new(0, 1).w("x", 1).status(TxnStatus::Unknown),
        T::new(1, 2).r("x", 1),
    ]);
    assert!(check(&hist, &Options::default())
        .unwrap()
        .verdict
        .is_accept());
    // Never read: left out, even though its reads would be impossible.
    let hist = h(&[
        T::new(0, 1).w("x", 1),
        T::new(1, 2).r("x", 1).w("x", 2),
        T::new(2, 3).r("x", 1).w("x", 3).status(TxnStatus::Unknown),
    ]);
    let rep = check(&hist, &Options::default()).unwrap();
    assert!(rep.verdict.is_accept());
    assert_eq!(rep.stats.unknown_outcome_excluded, 1);
}

/// The fault seen on PostgreSQL behind a proxy that delays COMMIT responses: the client gives
/// up on T1 (outcome unknown), reconnects under the same session and commits T2; T1's commit
/// lands later. Ordering T1 before T2 would give a false G-single; T1 follows only the commits
/// logged before it.
#[test]
fn unknown_outcome_may_commit_after_its_session_goes_on() {
    let txns = [
        T::new(0, 1).w("x", 1).status(TxnStatus::Unknown),
        T::new(0, 2).w("x", 2),
        T::new(1, 3).r("x", 2),
        T::new(1, 4).r("x", 1),
    ];
    let rep = check(
        &h(&txns),
        &Options {
            want_order: true,
            ..Options::default()
        },
    )
    .unwrap();
    assert_eq!(rep.verdict, Verdict::Accept);
    assert_eq!(rep.order.unwrap(), vec![2, 3, 1, 4]);
    // It still follows what its session committed before it: here x = 0 came first and T1
    // cannot have committed before T0.
    let hist = h(&[
        T::new(0, 10).w("y", 1),
        T::new(0, 1).r0("y").w("x", 1).status(TxnStatus::Unknown),
        T::new(1, 3).r("x", 1),
    ]);
    let c = reject(&hist);
    assert_eq!(
        cycle_kinds(&c),
        vec![
            ("T10".into(), EdgeKind::Session, "T1".into()),
            ("T1".into(), EdgeKind::Rw, "T10".into()),
        ]
    );
}

#[test]
fn serializable_examples_accept() {
    let hist = h(&[
        T::new(0, 1).w("x", 1).w("y", 1),
        T::new(1, 2).r("x", 1).r("y", 1),
        T::new(0, 3).r("x", 1).w("x", 3),
        T::new(1, 4).r("x", 3).r("y", 1),
        T::new(2, 5).r0("z").w("z", 5),
    ]);
    let rep = check(
        &hist,
        &Options {
            want_order: true,
            ..Options::default()
        },
    )
    .unwrap();
    assert_eq!(rep.verdict, Verdict::Accept);
}

/// A stale read far down one session: session order is transitive, so the certificate is two
/// steps however many transactions lie between (Elle: G-single-process).
#[test]
fn single_session_stale_read_is_two_steps() {
    let mut txns = vec![T::new(0, 1).w("x", 1)];
    for i in 2..200 {
        txns.push(T::new(0, i).w("y", i));
    }
    txns.push(T::new(0, 200).r0("x"));
    let c = reject(&h(&txns));
    assert_eq!(
        cycle_kinds(&c),
        vec![
            ("T1".into(), EdgeKind::Session, "T200".into()),
            ("T200".into(), EdgeKind::Rw, "T1".into()),
        ]
    );
    assert_eq!(c.cycle[0].explanation, "T1 came before T200 in session s0");
}

/// At read committed both the collector's fences and the workload lose updates; the certificate
/// names the workload's (the fence key is krait's own instrumentation, not the user's data).
#[test]
fn lost_update_on_the_workload_is_shown_before_one_on_the_fence_key() {
    let fence = krait_history::NATIVE_FENCE_KEY;
    let c = reject(&h(&[
        T::new(0, 1).r0(fence).w(fence, 1),
        T::new(1, 2).r0(fence).w(fence, 2),
        T::new(2, 3).r0("x").w("x", 10),
        T::new(3, 4).r0("x").w("x", 20),
    ]));
    assert_eq!(c.anomaly, Anomaly::LostUpdate);
    assert!(
        c.cycle.iter().all(|e| e.key.as_deref() == Some("x")),
        "{c:#?}"
    );
    // Alone, the fence's lost update is still reported.
    let c = reject(&h(&[
        T::new(0, 1).r0(fence).w(fence, 1),
        T::new(1, 2).r0(fence).w(fence, 2),
    ]));
    assert_eq!(c.anomaly, Anomaly::LostUpdate);
    assert!(c.cycle.iter().all(|e| e.key.as_deref() == Some(fence)));
}

/// Within one strongly connected component, a cycle through the workload's keys is shown
/// before a shorter one through the fence key.
#[test]
fn cycle_through_the_workload_is_shown_before_one_through_the_fence_key() {
    let fence = krait_history::NATIVE_FENCE_KEY;
    // T1 and T2 write-skew on x and y (two anti-dependencies); T2 and T3 also close a cycle
    // with one anti-dependency, but through the fence key.
    let c = reject(&h(&[
        T::new(0, 1).r0("x").r0("y").w("x", 1),
        T::new(1, 2).r0("x").r0("y").w("y", 2).w(fence, 7),
        T::new(2, 3).r(fence, 7).w("x", 3),
        T::new(0, 4).r("x", 3).r0(fence),
    ]));
    assert!(
        c.cycle.iter().all(|e| e.key.as_deref() != Some(fence)),
        "{c:#?}"
    );
}

/// A shorter cycle through the fence key in another component does not hide the workload's.
#[test]
fn workload_cycle_in_a_larger_component_is_shown_before_a_fence_cycle() {
    let fence = krait_history::NATIVE_FENCE_KEY;
    let c = reject(&h(&[
        // The workload's read skew: C sees B's v (which B wrote after reading A's x) but not
        // A's y.
        T::new(0, 1).w("x", 1).w("y", 1),
        T::new(1, 2).r("x", 1).w("v", 1),
        T::new(2, 3).r("v", 1).r0("y"),
        // Two transactions whose only cycle runs through the fence key.
        T::new(3, 5).w(fence, 9).w("q", 1),
        T::new(4, 6).r("q", 1).r0(fence),
    ]));
    assert_eq!(c.anomaly, Anomaly::GSingle);
    let keys: Vec<&str> = c.cycle.iter().filter_map(|e| e.key.as_deref()).collect();
    assert!(!keys.contains(&fence) && keys.contains(&"y"), "{c:#?}");
}

/// Fences losing an update (found while building the graph) do not hide the workload's write
/// skew (found only as a cycle): the fence key is set aside, the rest checked, and only when
/// the rest is serializable is the fence's lost update the verdict, saying why.
#[test]
fn workload_cycle_is_shown_before_a_lost_update_of_fences() {
    let fence = krait_history::NATIVE_FENCE_KEY;
    let fences = [
        T::new(0, 1).r0(fence).w(fence, 1),
        T::new(1, 2).r0(fence).w(fence, 2),
    ];
    let skew = [
        T::new(2, 3).r0("x").r0("y").w("x", 3),
        T::new(3, 4).r0("x").r0("y").w("y", 4),
    ];
    let c = reject(&h(&[fences.to_vec(), skew.to_vec()].concat()));
    assert_eq!(c.anomaly, Anomaly::G2Item, "{c:#?}");
    let c = reject(&h(&fences));
    assert_eq!(c.anomaly, Anomaly::LostUpdate);
    assert!(c.summary.contains("fence key"), "{}", c.summary);
}

/// A write→read edge another implies through a session (T1 → T2 in session 1, both read by
/// T3) is left out of the graph the check searches; a REJECT's certificate still shows it as
/// the history states it: T3 read T1's x, then T1 overwrote the z that T3 read first — not the
/// detour T1 → T2 → T3. Whatever the build left out comes back for the certificate.
#[test]
fn a_certificate_shows_the_edges_thinning_left_out() {
    let hist = h(&[
        T::new(0, 1).w("x", 1).w("z", 1),
        T::new(0, 2).w("y", 1),
        T::new(1, 3).r0("z").r("x", 1).r("y", 1),
    ]);
    let c = reject(&hist);
    assert_eq!(
        cycle_kinds(&c),
        vec![
            ("T1".into(), EdgeKind::Wr, "T3".into()),
            ("T3".into(), EdgeKind::Rw, "T1".into())
        ]
    );
    assert_eq!(c.cycle[0].explanation, "T3 read x = 1, which T1 wrote");
}
