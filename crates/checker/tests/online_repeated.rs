//! Online checking of histories whose written values repeat: rounds, epochs and garbage
//! collection keep the one-shot verdict (itself compared with a brute-force search over serial
//! orders in `duplicates.rs`, and here too where a history is small enough).

use crate::common;

use common::fenced::{option_sets, random_fenced_repeated};
use common::{serializable, Rng};
use krait_checker::online::{replay, replay_restarting, Online, OnlineOptions};
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
}

impl Seen {
    fn add(self, o: Seen) -> Seen {
        Seen {
            rejects: self.rejects + o.rejects,
            accepts: self.accepts + o.accepts,
            brute_checked: self.brute_checked + o.brute_checked,
            deleted: self.deleted + o.deleted,
            deleted_with_choices: self.deleted_with_choices + o.deleted_with_choices,
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

/// Every history at round sizes 1, 3, 8 and all-at-once under the default options; every
/// tenth under every online option set; every second at snapshot isolation too. The histories
/// are drawn one after another from one seed, then checked on every core.
#[test]
fn ten_thousand_fenced_histories_with_repeated_values_online_equals_one_shot() {
    use rayon::prelude::*;
    let mut r = Rng(0x5eed_d0b1_0001);
    let histories: Vec<_> = (0..10_000)
        .map(|i| (i, random_fenced_repeated(&mut r)))
        // A few write too little to repeat anything: the unique path checks those.
        .filter(|(_, h)| h.has_duplicates() || h.init_value.is_some())
        .collect();
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
    for &round in &[1usize, 3, 8, 1000] {
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
        if i.is_multiple_of(2) {
            let mut o = OnlineOptions::default();
            o.check.level = Level::SnapshotIsolation;
            let expect = one_shot(h, &o.check);
            let got = online(h, &o, round, seen)
                .verdict()
                .is_some_and(|r| r.verdict.is_reject());
            assert_eq!(got, expect, "history {i}, round size {round}, SI\n{h:?}");
        }
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
