//! Online causal consistency: rounds, epochs and garbage collection keep the one-shot verdict
//! (itself checked against the brute-force definition in `weak_levels.rs`), under every online
//! option set that applies, on histories from a serial store with stale reads, from a causal
//! store (where serializability and snapshot isolation often fail but causal consistency holds)
//! and from a causal store that breaks causality now and then.

use crate::common;

use common::causal::random_causal_fenced;
use common::fenced::{fence, option_sets, random_fenced, random_late_reads};
use common::Rng;
use krait_checker::online::{replay, replay_restarting, Online, OnlineOptions};
use krait_checker::{check, Level, Options, Verdict};
use krait_history::SimpleTxn;

fn cc() -> Options {
    Options {
        level: Level::Causal,
        ..Options::default()
    }
}

#[test]
fn online_causal_consistency_equals_one_shot_on_random_fenced_histories() {
    let mut r = Rng(0x5eed_cc01);
    let sets = option_sets();
    let (mut deleted, mut rejects, mut cc_only) = (0u64, 0, 0);
    let count = 2400;
    for i in 0..count {
        let h = match i % 4 {
            0 => random_fenced(&mut r),
            1 => random_late_reads(&mut r),
            2 => random_causal_fenced(&mut r, false),
            _ => random_causal_fenced(&mut r, true),
        };
        let truth = check(&h, &cc()).unwrap().verdict;
        assert!(!matches!(truth, Verdict::Unknown { .. }));
        if i % 4 == 2 {
            assert!(truth.is_accept(), "a causal store's history {i}\n{h:?}");
        }
        rejects += usize::from(truth.is_reject());
        cc_only += usize::from(
            truth.is_accept() && check(&h, &Options::default()).unwrap().verdict.is_reject(),
        );
        for &round in &[1usize, 3, 8, 1000] {
            for (name, o) in &sets {
                // Causal consistency has no real-time variant.
                if o.check.strict.is_some() || (i % 5 == 4 && *name != "default") {
                    continue;
                }
                let mut o = o.clone();
                o.check.level = Level::Causal;
                let on = replay(&h, o, round, |_, _| {}).unwrap();
                let online = on.verdict().map(|r| &r.verdict);
                assert!(
                    !matches!(online, Some(Verdict::Unknown { .. })),
                    "history {i}, round size {round}, {name}: {online:?}"
                );
                let online_reject = online.is_some_and(|v| v.is_reject());
                assert_eq!(
                    online_reject,
                    truth.is_reject(),
                    "history {i}, round size {round}, {name}: online {online_reject}\n{h:?}",
                );
                if *name == "default" {
                    deleted += on.deleted_total();
                }
            }
            // Saved and restored after every round: the same run.
            if i % 4 == 3 && round < 1000 {
                let mut o = OnlineOptions::default();
                o.check.level = Level::Causal;
                let on = replay_restarting(&h, o, round).unwrap();
                let online_reject = on.verdict().is_some_and(|r| r.verdict.is_reject());
                assert_eq!(
                    online_reject,
                    truth.is_reject(),
                    "history {i} restarting, round size {round}"
                );
            }
        }
    }
    eprintln!(
        "{rejects} rejects, {cc_only} accepted under causal consistency only, {deleted} deleted"
    );
    assert!(
        rejects > count / 10 && rejects < count * 9 / 10,
        "{rejects} rejects"
    );
    assert!(
        cc_only > 100,
        "{cc_only} histories only causal consistency accepts"
    );
    assert!(deleted > 1000, "garbage collection hardly ran: {deleted}");
}

/// Two fences that read the same fence version: causal consistency allows the lost update,
/// but the epochs then order nothing, so the online check ends UNDECIDED with the reason
/// rather than guess; the one-shot check accepts.
#[test]
fn a_branched_fence_chain_ends_the_online_check_undecided() {
    let txns = vec![
        fence(0, 1, None, 1),
        fence(1, 2, None, 2),
        SimpleTxn::new(0, 3).w("x", 10),
        SimpleTxn::new(1, 4).r("x", 10),
    ];
    let h = krait_history::build_history(&txns).unwrap();
    assert!(check(&h, &cc()).unwrap().verdict.is_accept());
    let mut o = OnlineOptions::default();
    o.check.level = Level::Causal;
    let on = replay(&h, o, 1000, |_, _| {}).unwrap();
    match &on.verdict().unwrap().verdict {
        Verdict::Unknown { reason } => {
            assert!(reason.contains("fence chain branched"), "{reason}");
        }
        v => panic!("{v:?}"),
    }
}

/// A checker saved while checking serializability is not restored to check causal consistency:
/// what it carried holds orders causal consistency may not assume.
#[test]
fn a_saved_checker_is_restored_only_at_its_level() {
    let mut on = Online::new(OnlineOptions::default());
    let x = on.key("x");
    let s = on.session("a").unwrap();
    on.push(krait_history::TxnRecord {
        session: s,
        ext: 1,
        status: krait_history::TxnStatus::Committed,
        start: krait_history::NO_TIME,
        commit: krait_history::NO_TIME,
        ops: vec![(krait_history::OpKind::Write, x, 1)],
        lists: Vec::new(),
        app: Vec::new(),
        claims: Vec::new(),
    })
    .unwrap();
    on.round().unwrap();
    let saved = on.save().unwrap();
    let mut cc = OnlineOptions::default();
    cc.check.level = Level::Causal;
    let err = Online::restore(cc, &saved).err().expect("refused");
    assert!(
        err.to_string().contains("checked serializable, not causal"),
        "{err}"
    );
    assert!(Online::restore(OnlineOptions::default(), &saved).is_ok());
}
