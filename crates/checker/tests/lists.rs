//! Elle list-append reads, hand-made: each rule of the semantics (docs/semantics.md) with the
//! verdict and anomaly it gives.

use crate::common;

use krait_checker::{check, Anomaly, Options, Verdict};
use krait_history::{build_history, SimpleTxn as T, TxnStatus};

fn verdict(txns: &[T]) -> Verdict {
    let h = build_history(txns).unwrap();
    let opts = Options {
        want_order: true,
        ..Options::default()
    };
    let rep = check(&h, &opts).unwrap();
    assert!(
        common::verified(&h, &rep),
        "krait-verify cannot check {rep:#?}"
    );
    rep.verdict
}

fn anomaly(txns: &[T]) -> (Anomaly, String) {
    match verdict(txns) {
        Verdict::Reject(c) => (c.anomaly, c.summary.clone()),
        v => panic!("expected REJECT, got {v:?}"),
    }
}

#[test]
fn the_first_element_is_the_first_version() {
    // p0 appends 1 then 2; p1 reads [2]: 2 cannot be the first version.
    let (a, _) = anomaly(&[
        T::new(0, 1).w("x", 1),
        T::new(0, 2).w("x", 2),
        T::new(1, 3).rl("x", &[2]),
    ]);
    assert_ne!(a, Anomaly::Unsatisfiable);
    // Without the session order it is fine: 2 then 1.
    assert_eq!(
        verdict(&[
            T::new(0, 1).w("x", 1),
            T::new(1, 2).w("x", 2),
            T::new(2, 3).rl("x", &[2]),
            T::new(2, 4).rl("x", &[2, 1]),
        ]),
        Verdict::Accept
    );
}

#[test]
fn duplicates_are_their_own_anomaly() {
    let (a, s) = anomaly(&[T::new(0, 1).w("x", 1), T::new(1, 2).rl("x", &[1, 1])]);
    assert_eq!(a, Anomaly::DuplicateElements);
    assert_eq!(
        s,
        "T2 read x as a list holding 1 twice: a value appended once is in the list once"
    );
}

#[test]
fn a_list_may_not_skip_part_of_a_transactions_appends() {
    let base = [
        T::new(0, 1).w("x", 1).w("x", 2),
        T::new(0, 2).w("x", 3).w("x", 4),
        T::new(0, 3).w("x", 5).w("x", 6),
    ];
    let mut h = base.to_vec();
    h.push(T::new(1, 4).rl("x", &[1, 2, 4, 5, 6]));
    let (a, s) = anomaly(&h);
    assert_eq!(a, Anomaly::IncompatibleOrder);
    assert!(
        s.contains("4 is not preceded by its transaction's earlier append"),
        "{s}"
    );
    let mut h = base.to_vec();
    h.push(T::new(1, 4).rl("x", &[1, 2, 3, 4, 5, 6]));
    assert_eq!(verdict(&h), Verdict::Accept);
    // Own appends out of order or with a gap.
    let mut h = base.to_vec();
    h.push(T::new(2, 9).w("y", 7).w("y", 8).w("y", 9));
    h.push(T::new(1, 4).rl("y", &[7, 9]));
    let (a, s) = anomaly(&h);
    assert_eq!(a, Anomaly::IncompatibleOrder);
    assert!(s.contains("9 does not directly follow"), "{s}");
    let mut h = base.to_vec();
    h.push(T::new(1, 4).rl("x", &[2, 1]));
    assert_eq!(
        anomaly(&h).0,
        Anomaly::G1b,
        "ends on an intermediate version"
    );
    // Ending inside a transaction's appends is an intermediate read.
    let mut h = base.to_vec();
    h.push(T::new(1, 4).rl("x", &[1, 2, 3]));
    assert_eq!(anomaly(&h).0, Anomaly::G1b);
}

#[test]
fn elements_of_unknown_outcomes_committed_and_of_aborted_ones_did_not() {
    let info = [
        T::new(0, 1).w("x", 1),
        T::new(1, 2).w("x", 2).status(TxnStatus::Unknown),
        T::new(2, 3).w("x", 3),
    ];
    let mut h = info.to_vec();
    h.push(T::new(3, 4).rl("x", &[1, 2, 3]));
    assert_eq!(verdict(&h), Verdict::Accept);
    let mut h = info.to_vec();
    h.push(T::new(3, 4).rl("x", &[1, 3]));
    assert_eq!(
        verdict(&h),
        Verdict::Accept,
        "an :info append may never apply"
    );
    let mut h = info.to_vec();
    h[1] = T::new(1, 2).w("x", 2).status(TxnStatus::Aborted);
    h.push(T::new(3, 4).rl("x", &[1, 2, 3]));
    assert_eq!(anomaly(&h).0, Anomaly::G1a);
}

#[test]
fn a_list_and_a_read_modify_write_disagreeing_on_a_predecessor() {
    // T3 read [1] and appended 3, so 3 directly follows 1; a list shows 2 right before 3.
    let (a, _) = anomaly(&[
        T::new(0, 1).w("x", 1),
        T::new(1, 2).w("x", 2),
        T::new(2, 3).rl("x", &[1]).w("x", 3),
        T::new(3, 4).rl("x", &[1, 2, 3]),
    ]);
    assert_eq!(a, Anomaly::IncompatibleOrder);
}

#[test]
fn foreign_elements_and_own_appends() {
    let (a, _) = anomaly(&[T::new(0, 1).w("x", 1), T::new(1, 2).rl("x", &[1, 9])]);
    assert_eq!(a, Anomaly::ReadOfNobody);
    // A transaction sees its own appends at the end of the list.
    assert_eq!(
        verdict(&[
            T::new(0, 1).w("x", 1),
            T::new(1, 2).rl("x", &[1]).w("x", 2).rl("x", &[1, 2]),
        ]),
        Verdict::Accept
    );
}
