//! Online checking of histories whose written values repeat: rounds, epochs and garbage
//! collection keep the one-shot verdict (itself compared with a brute-force search over serial
//! orders in `duplicates.rs`, and here too where a history is small enough).

use crate::common;

use common::fenced::{option_sets, random_fenced_repeated};
use common::{serializable, Rng};
use krait_checker::online::{replay, replay_restarting, Online, OnlineError, OnlineOptions};
use krait_checker::{check, Level, Options, Verdict};

/// What the sample exercised, so a generator that stops producing the hard cases fails loudly.
#[derive(Debug, Default)]
struct Seen {
    rejects: usize,
    accepts: usize,
    brute_checked: usize,
    deleted: u64,
    /// Runs in which garbage collection deleted a transaction while a read with several
    /// possible writers was held.
    deleted_with_choices: usize,
    /// Histories with a transaction of unknown outcome whose write some read's value matches.
    unknown_candidates: usize,
    /// Of those, the ones whose one-shot verdict is an ACCEPT.
    unknown_accepts: usize,
}

impl Seen {
    fn add(self, o: Seen) -> Seen {
        Seen {
            rejects: self.rejects + o.rejects,
            accepts: self.accepts + o.accepts,
            brute_checked: self.brute_checked + o.brute_checked,
            deleted: self.deleted + o.deleted,
            deleted_with_choices: self.deleted_with_choices + o.deleted_with_choices,
            unknown_candidates: self.unknown_candidates + o.unknown_candidates,
            unknown_accepts: self.unknown_accepts + o.unknown_accepts,
        }
    }
}

fn one_shot(h: &krait_history::History, o: &Options) -> bool {
    let v = check(h, o).unwrap().verdict;
    assert!(!matches!(v, Verdict::Unknown { .. }), "{v:?}");
    v.is_reject()
}

fn online(h: &krait_history::History, o: &OnlineOptions, round: usize, seen: &mut Seen) -> Online {
    let mut with_choices = false;
    let on = replay(h, o.clone(), round, |st, _| {
        with_choices |= st.deleted > 0 && st.constraints > 0;
    })
    .unwrap();
    seen.deleted_with_choices += usize::from(with_choices);
    assert!(
        on.repeated_values(),
        "replay did not take the history as repeating values"
    );
    on
}

fn committed(h: &krait_history::History) -> usize {
    h.txn_status
        .iter()
        .filter(|s| **s != krait_history::TxnStatus::Aborted)
        .count()
}

/// Every history at round sizes 1, 2, 3, 8 and all-at-once under the default options, at
/// serializability and snapshot isolation, and refused by causal consistency online; every
/// tenth under every online option set. The histories
/// are drawn one after another from one seed, then checked on every core.
#[test]
fn ten_thousand_fenced_histories_with_repeated_values_online_equals_one_shot() {
    use rayon::prelude::*;
    let mut r = Rng(0x5eed_d0b1_0001);
    let histories: Vec<_> = (0..10_100)
        .map(|i| (i, random_fenced_repeated(&mut r)))
        // A few write too little to repeat anything: the unique path checks those.
        .filter(|(_, h)| h.has_duplicates() || h.init_value.is_some())
        .collect();
    assert!(histories.len() >= 10_000, "{}", histories.len());
    let sets = option_sets();
    let seen = histories
        .par_iter()
        .map(|(i, h)| {
            let mut seen = Seen::default();
            one_history(*i, h, &sets, &mut seen);
            seen
        })
        .reduce(Seen::default, Seen::add);
    eprintln!("{seen:?}");
    assert!(seen.rejects > 2000 && seen.accepts > 2000, "{seen:?}");
    assert!(seen.brute_checked > 300, "{seen:?}");
    assert!(
        seen.deleted > 10_000,
        "garbage collection hardly ran: {seen:?}"
    );
    assert!(seen.deleted_with_choices > 100, "{seen:?}");
    assert!(
        seen.unknown_candidates > 1000 && seen.unknown_accepts > 300,
        "{seen:?}"
    );
}

/// Whether some read's value was also written by a transaction of unknown outcome.
fn unknown_candidate(h: &krait_history::History) -> bool {
    let r = krait_history::resolve(h);
    r.cand_ops.iter().any(|&w| {
        w < krait_history::FROM_AMBIGUOUS
            && h.txn_status[r.op_txn[w as usize] as usize] == krait_history::TxnStatus::Unknown
    })
}

fn one_history(
    i: usize,
    h: &krait_history::History,
    sets: &[(&'static str, OnlineOptions)],
    seen: &mut Seen,
) {
    let truth = one_shot(h, &Options::default());
    if committed(h) <= 12 {
        assert_eq!(
            !truth,
            serializable(h, None),
            "history {i}: one-shot and brute force disagree\n{h:?}"
        );
        seen.brute_checked += 1;
    }
    if truth {
        seen.rejects += 1;
    } else {
        seen.accepts += 1;
    }
    if unknown_candidate(h) {
        seen.unknown_candidates += 1;
        seen.unknown_accepts += usize::from(!truth);
    }
    // Causal consistency online takes unique values only: every such history is refused.
    let mut cc = OnlineOptions::default();
    cc.check.level = Level::Causal;
    assert!(
        matches!(
            replay(h, cc, 3, |_, _| {}),
            Err(OnlineError::CausalRepeated)
        ),
        "history {i}: causal consistency online did not refuse repeated values"
    );
    let mut si = OnlineOptions::default();
    si.check.level = Level::SnapshotIsolation;
    let si_truth = one_shot(h, &si.check);
    for &round in &[1usize, 2, 3, 8, 1000] {
        for (name, o) in sets {
            // All at once is one round: the option sets differ little there.
            if (!i.is_multiple_of(10) || round == 1000) && *name != "default" {
                continue;
            }
            let expect = if o.check.strict.is_some() {
                one_shot(h, &o.check)
            } else {
                truth
            };
            let on = online(h, o, round, seen);
            let got = on.verdict().is_some_and(|r| r.verdict.is_reject());
            assert_eq!(
                got,
                expect,
                "history {i}, round size {round}, {name}: online says {:?} after {} rounds\n{h:?}",
                on.verdict().map(|r| &r.verdict),
                on.rounds()
            );
            if *name == "default" {
                seen.deleted += on.deleted_total();
            }
        }
        let got = online(h, &si, round, seen)
            .verdict()
            .is_some_and(|r| r.verdict.is_reject());
        assert_eq!(got, si_truth, "history {i}, round size {round}, SI\n{h:?}");
    }
}

/// Saved and restored after every round, the checker goes on as one that never stopped.
#[test]
fn repeated_values_survive_a_restart_after_every_round() {
    let mut r = Rng(0x5eed_d0b1_0c4e);
    let mut deleted = 0;
    for i in 0..500 {
        let h = random_fenced_repeated(&mut r);
        if !(h.has_duplicates() || h.init_value.is_some()) {
            continue;
        }
        for &round in &[1usize, 4] {
            let o = OnlineOptions::default();
            let through = replay(&h, o.clone(), round, |_, _| {}).unwrap();
            let restarted = replay_restarting(&h, o, round).unwrap();
            let key = |on: &Online| {
                (
                    on.verdict().map(|r| r.verdict.is_reject()),
                    on.rounds(),
                    on.deleted_total(),
                )
            };
            assert_eq!(key(&restarted), key(&through), "history {i}, round {round}");
            deleted += through.deleted_total();
        }
    }
    assert!(deleted > 500, "garbage collection hardly ran: {deleted}");
}

/// A read whose value only a transaction of unknown outcome could have written (another
/// writer aborted, or written later in the reader's own session) shows that it committed:
/// online, in rounds of every size, as at once.
#[test]
fn a_read_only_an_unknown_outcome_explains_accepts_in_rounds() {
    use krait_history::{build_history, SimpleTxn, TxnStatus};
    let aborted_other = build_history(&[
        SimpleTxn::new(0, 1).r("y", 1),
        SimpleTxn::new(1, 2).w("y", 1).status(TxnStatus::Unknown),
        SimpleTxn::new(2, 3).w("y", 1).status(TxnStatus::Aborted),
    ])
    .unwrap();
    let later_own = build_history(&[
        SimpleTxn::new(0, 1).w("y", 1).status(TxnStatus::Unknown),
        SimpleTxn::new(0, 2).r("y", 1),
        SimpleTxn::new(0, 3).w("y", 1),
    ])
    .unwrap();
    for (name, h) in [("aborted other", &aborted_other), ("later own", &later_own)] {
        for level in [Level::Serializable, Level::SnapshotIsolation] {
            let mut o = OnlineOptions::default();
            o.check.level = level;
            assert!(!one_shot(h, &o.check), "{name}: one-shot");
            for round in 1..=3 {
                let on = replay(h, o.clone(), round, |_, _| {}).unwrap();
                assert!(
                    on.verdict().is_none(),
                    "{name}, {level:?}, rounds of {round}: {:?}",
                    on.verdict().map(|r| &r.verdict)
                );
            }
        }
    }
}

/// Causal consistency online refuses a history whose values repeat, naming why, rather than
/// miss the read of the initial state after the session's own write of a value written again.
#[test]
fn causal_consistency_online_refuses_repeated_values() {
    use krait_history::{build_history, SimpleTxn};
    let h = build_history(&[
        SimpleTxn::new(0, 1).w("x", 3),
        SimpleTxn::new(0, 2).r0("x"),
        SimpleTxn::new(0, 3).w("x", 3),
    ])
    .unwrap();
    let mut o = OnlineOptions::default();
    o.check.level = Level::Causal;
    assert!(one_shot(&h, &o.check), "one-shot causal REJECTs");
    for round in 1..=3 {
        let e = replay(&h, o.clone(), round, |_, _| {}).err();
        assert_eq!(e, Some(OnlineError::CausalRepeated), "rounds of {round}");
        assert!(e
            .unwrap()
            .to_string()
            .contains("check the whole history at once"));
    }
}
