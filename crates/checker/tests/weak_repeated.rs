//! The weak levels on histories whose written values repeat (a read may have read any of
//! several writes) against the brute-force definitions (`common::weak`, which tries every
//! choice of writer), under every combination of the three switches (serializability first,
//! impossible writers left out, learning from a broken choice) and with and without guesses
//! from timestamps; hand-made histories where the choice decides.

use crate::common;

use common::weak::{weak_ok_within, Weak};
use common::{random_history_with, Rng};
use krait_checker::{check, Anomaly, Level, Options, Report, Verdict};
use krait_history::{build_history, History, SimpleTxn as T};

const LEVELS: [(Level, Weak); 3] = [
    (Level::ReadCommitted, Weak::ReadCommitted),
    (Level::ReadAtomic, Weak::ReadAtomic),
    (Level::Causal, Weak::Causal),
];

fn run(h: &History, level: Level, ser_first: bool) -> Report {
    run_with(h, level, (ser_first, true, LEARN_ENCODE))
}

/// How the choices of writers are searched: one by one, learning from each broken one, and
/// that with read committed's or read atomic's edges given to the solver up front.
const ONE_BY_ONE: (bool, bool) = (false, false);
const LEARN: (bool, bool) = (true, false);
const LEARN_ENCODE: (bool, bool) = (true, true);

/// At `level` with the switches (serializability first, candidates pruned, (learning,
/// encoding)).
fn run_with(h: &History, level: Level, switches: (bool, bool, (bool, bool))) -> Report {
    run_guessing(h, level, switches, true)
}

/// As [`run_with`], guessing from timestamps or not (`Options::time_guess`).
fn run_guessing(
    h: &History,
    level: Level,
    (ser_first, prune, (learn, encode)): (bool, bool, (bool, bool)),
    time_guess: bool,
) -> Report {
    let opts = Options {
        level,
        weak_ser_first: ser_first,
        weak_prune_candidates: prune,
        weak_learn: learn,
        weak_encode: encode,
        time_guess,
        want_order: true,
        ..Options::default()
    };
    check(h, &opts).unwrap()
}

/// Random start and commit times (a start never after its commit), which only guide the
/// guesses of which write a read saw: no level checked here orders by real time.
fn add_times(h: &mut History, r: &mut Rng) {
    for t in 0..h.num_txns() {
        let s = r.below(40);
        h.txn_start[t] = s;
        h.txn_commit[t] = s + r.below(20);
    }
}

/// Every combination of the switches.
fn switches() -> impl Iterator<Item = (bool, bool, (bool, bool))> {
    [true, false].into_iter().flat_map(|ser_first| {
        [true, false].into_iter().flat_map(move |prune| {
            [LEARN_ENCODE, LEARN, ONE_BY_ONE]
                .into_iter()
                .map(move |search| (ser_first, prune, search))
        })
    })
}

#[test]
fn ten_thousand_histories_with_repeated_values_against_the_definitions() {
    let mut r = Rng(0x5eed_3e9e_a7ed_0001);
    // (decided by the checker, of them by trying choices, unknown, oracle gave up)
    let (mut decided, mut by_choice, mut unknown, mut gave_up) = (0, 0, 0, 0);
    let mut unknown_learning = 0;
    // Unknown with the default switches, per level.
    let mut unknown_by_default = [0usize; 3];
    let mut accepted = [0usize; 3];
    for i in 0..10_000 {
        let keys = 1 + r.below(3);
        let range = 1 + r.below(3);
        let init_zero = r.chance(30);
        let mut h = random_history_with(&mut r, 7, keys, Some(range), init_zero);
        // Half with timestamps, whose guesses half of those use: the verdict never changes.
        let timed = i % 2 == 1;
        if timed {
            add_times(&mut h, &mut r);
        }
        let guess = i % 4 != 1;
        let ser = check(&h, &Options::default()).unwrap().verdict;
        if timed {
            let blind = Options {
                time_guess: false,
                ..Options::default()
            };
            let other = check(&h, &blind).unwrap().verdict;
            if !matches!(ser, Verdict::Unknown { .. }) && !matches!(other, Verdict::Unknown { .. })
            {
                assert_eq!(ser.is_accept(), other.is_accept(), "history {i}\n{h:#?}");
            }
        }
        let mut verdicts = [None; 3];
        for (j, &(level, weak)) in LEVELS.iter().enumerate() {
            let truth = weak_ok_within(&h, weak, 1 << 14);
            gave_up += usize::from(truth.is_none());
            for switches in switches() {
                let rep = run_guessing(&h, level, switches, guess);
                let got = match &rep.verdict {
                    Verdict::Accept => true,
                    Verdict::Reject(c) => {
                        assert!(
                            c.cycle.is_empty() || common::is_closed(&c.cycle),
                            "history {i} at {level:?}: open cycle {c:#?}"
                        );
                        false
                    }
                    Verdict::Unknown { .. } => {
                        unknown += 1;
                        unknown_learning += usize::from(switches.2 != ONE_BY_ONE);
                        unknown_by_default[j] +=
                            usize::from(switches == (true, true, LEARN_ENCODE));
                        continue;
                    }
                };
                decided += 1;
                by_choice += usize::from(!switches.0 && rep.stats.ambiguous_reads > 0);
                if let Some(truth) = truth {
                    assert_eq!(
                        got, truth,
                        "history {i} at {level:?} (serializability first, candidates pruned: {switches:?}): checker {got}, definition {truth}\n{h:#?}"
                    );
                }
                verdicts[j] = Some(got);
            }
        }
        // rc ⊇ ra ⊇ cc ⊇ ser, wherever decided.
        let ladder = [verdicts[0], verdicts[1], verdicts[2], Some(ser.is_accept())];
        for w in ladder.windows(2) {
            if let (Some(weaker), Some(stronger)) = (w[0], w[1]) {
                assert!(
                    weaker || !stronger,
                    "history {i}: ladder {ladder:?}\n{h:#?}"
                );
            }
        }
        for (a, v) in accepted.iter_mut().zip(verdicts) {
            *a += usize::from(v == Some(true));
        }
    }
    eprintln!(
        "decided {decided} (by trying choices {by_choice}), unknown {unknown} ({unknown_by_default:?} with the default switches, {unknown_learning} while learning), oracle gave up {gave_up}, accepted per level {accepted:?}"
    );
    // Learning from broken choices decides every one of these small histories; one by one,
    // a few have too many choices to try.
    assert_eq!(unknown_learning, 0, "unknown while learning");
    assert!(
        by_choice > 1000,
        "few decided by trying choices: {by_choice}"
    );
    for a in accepted {
        assert!((1000..9600).contains(&a), "unbalanced: {accepted:?}");
    }
}

#[test]
fn a_lost_update_of_a_repeated_value_is_read_committed_but_not_serializable() {
    // T2 and T3 both read T1's x and both write 7; T4 reads 7, from either of them.
    let h = build_history(&[
        T::new(0, 1).w("x", 5),
        T::new(1, 2).r("x", 5).w("x", 7),
        T::new(2, 3).r("x", 5).w("x", 7),
        T::new(3, 4).r("x", 7),
    ])
    .unwrap();
    assert!(!check(&h, &Options::default()).unwrap().verdict.is_accept());
    for (level, _) in LEVELS {
        for ser_first in [true, false] {
            let rep = run(&h, level, ser_first);
            assert!(rep.verdict.is_accept(), "{level:?}: {:?}", rep.verdict);
            assert_eq!(rep.stats.ambiguous_reads, 1);
        }
    }
}

#[test]
fn a_read_every_choice_of_writer_leaves_non_monotonic_is_rejected() {
    // T1 and T2 each write x = 1 and y = 1; T3 reads x = 1 and then y as initial: whichever
    // wrote its x, that one also wrote y, which T3 then missed.
    let h = build_history(&[
        T::new(0, 1).w("x", 1).w("y", 1),
        T::new(1, 2).w("x", 1).w("y", 1),
        T::new(2, 3).r("x", 1).r0("y"),
    ])
    .unwrap();
    for ser_first in [true, false] {
        let rep = run(&h, Level::ReadCommitted, ser_first);
        let Verdict::Reject(c) = rep.verdict else {
            panic!("{:?}", rep.verdict);
        };
        assert_eq!(c.anomaly, Anomaly::NonMonotonicRead);
        assert!(c.summary.contains("every way to choose"), "{}", c.summary);
    }
    // Reading y first and x after is read committed, though not read atomic.
    let h = build_history(&[
        T::new(0, 1).w("x", 1).w("y", 1),
        T::new(1, 2).w("x", 1).w("y", 1),
        T::new(2, 3).r0("y").r("x", 1),
    ])
    .unwrap();
    assert!(run(&h, Level::ReadCommitted, false).verdict.is_accept());
    let rep = run(&h, Level::ReadAtomic, true);
    let Verdict::Reject(c) = rep.verdict else {
        panic!("{:?}", rep.verdict);
    };
    assert_eq!(c.anomaly, Anomaly::FracturedRead);
}

/// 13 reads of a value two transactions wrote, in a history that is not serializable (a lost
/// update of y, whose two reads are of a repeated value too): 2^15 choices of writers.
fn thirteen_reads_of_a_repeated_value(then_y: bool) -> History {
    let mut txns = vec![
        T::new(0, 1).w("x", 1).w("y", 1),
        T::new(1, 2).w("x", 1).w("y", 1),
        T::new(2, 3).r("y", 1).w("y", 2),
        T::new(3, 4).r("y", 1).w("y", 3),
    ];
    for i in 0..13 {
        let t = T::new(4 + i, 10 + i as u64).r("x", 1);
        // Then y as initial: whichever wrote the x read, it wrote y too (non-monotonic).
        txns.push(if then_y { t.r0("y") } else { t });
    }
    build_history(&txns).unwrap()
}

#[test]
fn thousands_of_choices_are_decided_by_what_broken_ones_teach() {
    // Read committed holds: the first choice tried passes.
    let h = thirteen_reads_of_a_repeated_value(false);
    for search in [LEARN_ENCODE, LEARN, ONE_BY_ONE] {
        let rep = run_with(&h, Level::ReadCommitted, (true, true, search));
        assert!(rep.verdict.is_accept(), "{:?}", rep.verdict);
        assert_eq!(rep.stats.ambiguous_reads, 15);
    }
    // Each reader breaks read committed whichever writer it read. Given read committed's
    // edges up front, the solver rules out every choice before any is tried.
    let h = thirteen_reads_of_a_repeated_value(true);
    let summary = |search| {
        let rep = run_with(&h, Level::ReadCommitted, (false, true, search));
        let Verdict::Reject(c) = rep.verdict else {
            panic!("{:?}", rep.verdict);
        };
        assert_eq!(c.anomaly, Anomaly::NonMonotonicRead);
        assert!(c.summary.contains("every way to choose"), "{}", c.summary);
        c.summary
    };
    let s = summary(LEARN_ENCODE);
    assert!(s.contains("the solver ruled them all out"), "{s}");
    // Learning alone: a broken choice's violation needs only the first reader's writer, so
    // two choices refute all 32768.
    let s = summary(LEARN);
    assert!(
        s.contains(": 2 tried") && s.contains("the 2 violations learnt"),
        "{s}"
    );
    // One by one, all 32768 are tried, to the same verdict.
    let s = summary(ONE_BY_ONE);
    assert!(s.contains("all 32768 tried"), "{s}");
}

#[test]
fn the_timeout_makes_an_unknown_verdict_with_the_reason() {
    let h = thirteen_reads_of_a_repeated_value(true);
    let opts = Options {
        level: Level::ReadCommitted,
        timeout: Some(std::time::Duration::ZERO),
        ..Options::default()
    };
    let Verdict::Unknown { reason } = check(&h, &opts).unwrap().verdict else {
        panic!("a timeout of zero decides nothing");
    };
    assert!(
        reason.contains("the timeout came after 0 choices") && reason.contains("15 reads"),
        "{reason}"
    );
}

#[test]
fn learning_agrees_with_trying_every_choice_on_larger_histories() {
    // Too many choices for the definitions' oracle; one by one, the polynomial check of each
    // choice is the definition applied to it, and learning must reach the same verdict.
    let mut r = Rng(0x5eed_3e9e_a7ed_0002);
    let (mut compared, mut rejected) = (0, 0);
    for i in 0..2_000 {
        let keys = 1 + r.below(3);
        let range = 1 + r.below(2);
        let init_zero = r.chance(30);
        let h = random_history_with(&mut r, 14, keys, Some(range), init_zero);
        for (level, _) in LEVELS {
            let one_by_one = run_with(&h, level, (false, true, ONE_BY_ONE)).verdict;
            for search in [LEARN, LEARN_ENCODE] {
                let learnt = run_with(&h, level, (false, true, search)).verdict;
                assert!(
                    !matches!(learnt, Verdict::Unknown { .. }),
                    "history {i} at {level:?}: {learnt:?}"
                );
                if matches!(one_by_one, Verdict::Unknown { .. }) {
                    continue;
                }
                assert_eq!(
                    learnt.is_accept(),
                    one_by_one.is_accept(),
                    "history {i} at {level:?} ({search:?}): learning {learnt:?}, one by one {one_by_one:?}\n{h:#?}"
                );
                compared += 1;
                rejected += usize::from(!learnt.is_accept());
            }
        }
    }
    eprintln!("compared {compared}, rejected {rejected}");
    assert!(compared > 6000 && rejected > 600, "{compared} {rejected}");
}
