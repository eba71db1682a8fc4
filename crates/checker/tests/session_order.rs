//! Checking without session order (`Options::session_order = false`) and the further anomaly
//! certificates of a REJECT (`Report::also`), on random histories against the brute-force
//! oracles of every level: without session order each verdict is the oracle's on the history
//! with every transaction a session of its own, dropping the assumption never turns an ACCEPT
//! into a REJECT, and every further certificate is a closed cycle of a class of its own that
//! krait-verify derives edge by edge.

use crate::common;

use common::si::snapshot_isolated;
use common::weak::{weak_ok, Weak};
use common::{is_closed, random_history, serializable, Rng};
use krait_checker::{check, Level, Options, Verdict};
use krait_history::History;

fn oracle(h: &History, level: Level) -> bool {
    match level {
        Level::Serializable => serializable(h, None),
        Level::SnapshotIsolation => snapshot_isolated(h, None),
        Level::ReadCommitted => weak_ok(h, Weak::ReadCommitted),
        Level::ReadAtomic => weak_ok(h, Weak::ReadAtomic),
        Level::Causal => weak_ok(h, Weak::Causal),
    }
}

fn verdict(h: &History, level: Level, session_order: bool) -> bool {
    let opts = Options {
        level,
        session_order,
        want_order: true,
        ..Options::default()
    };
    let rep = check(h, &opts).unwrap();
    assert_eq!(rep.session_order, session_order);
    common::verified(h, &rep);
    match &rep.verdict {
        Verdict::Accept => true,
        Verdict::Reject(c) => {
            let mut classes = vec![c.anomaly];
            for more in &rep.also {
                assert!(is_closed(&more.cycle), "open further cycle {more:#?}");
                assert!(
                    !classes.contains(&more.anomaly),
                    "{:?} reported twice: {rep:#?}",
                    more.anomaly
                );
                classes.push(more.anomaly);
            }
            false
        }
        v => panic!("{v:?}"),
    }
}

#[test]
fn without_session_order_each_level_is_its_definition_on_sessions_of_one() {
    let mut r = Rng(0x5e55_0001);
    let levels = [
        Level::Serializable,
        Level::SnapshotIsolation,
        Level::ReadCommitted,
        Level::ReadAtomic,
        Level::Causal,
    ];
    let mut relaxed = 0;
    for i in 0..3_000 {
        let h = random_history(&mut r, 6, 3);
        let alone = h.one_session_per_txn();
        for level in levels {
            let with = verdict(&h, level, true);
            let without = verdict(&h, level, false);
            assert_eq!(with, oracle(&h, level), "history {i} at {level:?}: {h:#?}");
            assert_eq!(
                without,
                oracle(&alone, level),
                "history {i} at {level:?} without session order: {h:#?}"
            );
            assert!(!with || without, "dropping session order rejected {i}");
            relaxed += usize::from(without && !with);
        }
    }
    // The sample holds histories that only session order rejects.
    assert!(
        relaxed > 50,
        "only {relaxed} verdicts depended on session order"
    );
}
