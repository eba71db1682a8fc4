//! The checker against a brute-force serial-order search on random small histories, under every
//! combination of its switches.

use crate::common;

use common::{all_option_sets, order_is_valid, random_history, serializable, verified, Rng};
use krait_checker::{check, Options, SolverKind, Verdict};

fn run(count: usize, seed: u64, max_txns: u64) {
    let sets = all_option_sets();
    let mut r = Rng(seed);
    let (mut yes, mut no) = (0, 0);
    let (mut checked, mut confirmed) = (0usize, 0usize);
    for i in 0..count {
        let keys = 2 + r.below(2);
        let h = random_history(&mut r, max_txns, keys);
        let truth = serializable(&h, None);
        if truth {
            yes += 1
        } else {
            no += 1
        }
        for (name, opts) in &sets {
            let rep = check(&h, opts).unwrap();
            if !matches!(rep.verdict, Verdict::Unknown { .. }) {
                checked += 1;
                confirmed += usize::from(verified(&h, &rep));
            }
            match (&rep.verdict, truth) {
                (Verdict::Accept, true) => {
                    let order = rep.order.as_ref().unwrap();
                    assert!(
                        order_is_valid(&h, order),
                        "history {i} [{name}]: bad serial order {order:?}\n{h:#?}"
                    );
                }
                (Verdict::Reject(c), false) => {
                    // A cycle certificate must be closed.
                    for w in c.cycle.windows(2) {
                        assert_eq!(
                            w[0].to, w[1].from,
                            "history {i} [{name}]: broken cycle {c:#?}"
                        );
                    }
                    if let (Some(first), Some(last)) = (c.cycle.first(), c.cycle.last()) {
                        assert_eq!(
                            last.to, first.from,
                            "history {i} [{name}]: open cycle {c:#?}"
                        );
                    }
                }
                // The brute-force engine declines problems with too many constraints.
                (Verdict::Unknown { .. }, _) if opts.solver == SolverKind::BruteForce => {}
                (v, t) => panic!(
                    "history {i} [{name}]: checker says {v:?}, truth serializable={t}\n{h:#?}"
                ),
            }
        }
    }
    assert!(
        yes > count / 10 && no > count / 10,
        "unbalanced sample: {yes} serializable, {no} not"
    );
    eprintln!("krait-verify: {confirmed} of {checked} verdicts confirmed, none refuted");
    // Only cores too large to list case by case may go unconfirmed.
    assert!(confirmed * 100 >= checked * 95, "{confirmed} of {checked}");
}

#[test]
fn ten_thousand_small_histories_every_switch_combination() {
    run(10_000, 0x5eed_1234_abcd_0001, 10);
}

#[test]
fn larger_histories_default_and_polygraph() {
    // Bigger than brute-force engines like, so only the CDCL variants; the oracle still copes.
    let mut r = Rng(77);
    for i in 0..300 {
        let h = random_history(&mut r, 14, 3);
        let truth = serializable(&h, None);
        for opts in [
            Options::default(),
            Options {
                combine: false,
                coalesce: false,
                prune: false,
                ..Options::default()
            },
        ] {
            let rep = check(&h, &opts).unwrap();
            assert_eq!(
                rep.verdict.is_accept(),
                truth,
                "history {i}: {:?}\n{h:#?}",
                rep.verdict
            );
        }
    }
}

/// `krait convert` to Cobra logs and back never turns an ACCEPT into a REJECT: unknown outcomes
/// that were read are kept (each in a log of its own), unread ones and aborts are left out.
#[test]
fn cobra_round_trips_keep_accepts() {
    let mut r = Rng(0xc0b7a);
    let dir = std::env::temp_dir().join(format!("krait-cobra-rt-{}", std::process::id()));
    let mut kept = 0;
    for i in 0..1500 {
        let keys = 2 + r.below(2);
        let h = random_history(&mut r, 10, keys);
        if !check(&h, &Options::default()).unwrap().verdict.is_accept() {
            continue;
        }
        let _ = std::fs::remove_dir_all(&dir);
        krait_history::write_cobra_dir(&h, &dir, false).unwrap();
        let back = krait_history::read_cobra_dir(&dir, Default::default())
            .unwrap()
            .history;
        let v = check(&back, &Options::default()).unwrap().verdict;
        assert!(v.is_accept(), "history {i}: {v:?}\n{h:#?}");
        kept += 1;
    }
    assert!(kept > 300, "{kept}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A round limit that stops pruning early (even before any round) leaves the rest to the solver:
/// the verdict must not change. (With 0 rounds, pairs of chains were once never formed.)
#[test]
fn few_pruning_rounds_keep_the_verdict() {
    let mut r = Rng(0x0dd5_0001);
    for i in 0..2000 {
        let keys = 2 + r.below(2);
        let h = if i % 2 == 0 {
            random_history(&mut r, 10, keys)
        } else {
            common::random_history_with(&mut r, 8, keys, Some(2), i % 4 == 1)
        };
        let truth = serializable(&h, None);
        for rounds in [0, 1, 2] {
            let opts = Options {
                prune_rounds: rounds,
                want_order: true,
                ..Options::default()
            };
            let rep = check(&h, &opts).unwrap();
            assert_eq!(
                rep.verdict.is_accept(),
                truth,
                "history {i}, {rounds} rounds: {:?}\n{h:#?}",
                rep.verdict
            );
            if truth {
                assert!(
                    order_is_valid(&h, rep.order.as_ref().unwrap()),
                    "history {i}"
                );
            }
        }
    }
}
