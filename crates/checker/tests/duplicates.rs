//! Histories whose written values repeat (a read may have several candidate writers) against the
//! brute-force serial-order search, under every combination of the checker's switches.

mod common;

use common::{all_option_sets, order_is_valid, random_history_with, serializable, verified, Rng};
use krait_checker::{check, Options, SolverKind, Verdict};
use krait_history::History;

/// The history in one line per transaction, for failure messages.
fn compact(h: &History) -> String {
    let mut out = format!("init={:?}\n", h.init_value);
    for t in 0..h.num_txns() as u32 {
        let ops: Vec<String> = h
            .ops(t)
            .map(|o| {
                let k = &h.keys[h.op_key[o] as usize];
                match h.op_kind[o] {
                    krait_history::OpKind::Write => format!("w({k},{})", h.op_value[o]),
                    krait_history::OpKind::Read => format!("r({k},{})", h.op_value[o]),
                    krait_history::OpKind::ReadInit => format!("r({k},init)"),
                }
            })
            .collect();
        out += &format!(
            "s{} T{} {:?}: {}\n",
            h.session_of(t),
            h.txn_ext[t as usize],
            h.txn_status[t as usize],
            ops.join(" ")
        );
    }
    out
}

/// Whether every read's value is written by at most one write and is not also the initial value.
fn ambiguous(h: &History) -> bool {
    h.has_duplicates() || h.init_value.is_some()
}

/// How often the checker met reads with several candidates: in the graph, left open after
/// pruning (so decided by the solver), and REJECTs whose certificate names such a read.
#[derive(Debug, Default)]
struct Seen {
    choices: usize,
    to_solver: usize,
    no_writer: usize,
    unsat_with_choices: usize,
    checked: usize,
    confirmed: usize,
}

fn run(count: usize, seed: u64, max_txns: u64, sets: &[(String, Options)]) -> (usize, usize) {
    let mut r = Rng(seed);
    let (mut yes, mut no) = (0, 0);
    let mut seen = Seen::default();
    for i in 0..count {
        let keys = 1 + r.below(3);
        let range = 1 + r.below(3);
        let init_zero = r.chance(30);
        let h = random_history_with(&mut r, max_txns, keys, Some(range), init_zero);
        let truth = serializable(&h, None);
        if truth {
            yes += 1
        } else {
            no += 1
        }
        for (name, opts) in sets {
            let rep = check(&h, opts).unwrap();
            if !matches!(rep.verdict, Verdict::Unknown { .. }) {
                seen.checked += 1;
                seen.confirmed += usize::from(verified(&h, &rep));
            }
            seen.choices += usize::from(rep.stats.ambiguous_reads > 0);
            seen.to_solver += usize::from(rep.stats.ambiguous_after_prune > 0);
            if let Verdict::Reject(c) = &rep.verdict {
                let s = serde_json::to_string(&c.anomaly).unwrap();
                seen.no_writer += usize::from(s.contains("no-possible-writer"));
                seen.unsat_with_choices += usize::from(
                    s.contains("unsatisfiable") && c.summary.contains("several writes"),
                );
            }
            match (&rep.verdict, truth) {
                (Verdict::Accept, true) => {
                    let order = rep.order.as_ref().unwrap();
                    assert!(
                        order_is_valid(&h, order),
                        "history {i} [{name}]: bad serial order {order:?}\n{}", compact(&h)
                    );
                }
                (Verdict::Reject(c), false) => {
                    for w in c.cycle.windows(2) {
                        assert_eq!(w[0].to, w[1].from, "history {i} [{name}]: broken cycle");
                    }
                }
                (Verdict::Unknown { .. }, _) if opts.solver == SolverKind::BruteForce => {}
                (v, t) => panic!(
                    "history {i} [{name}]: checker says {v:?}, truth serializable={t}\n{}", compact(&h)
                ),
            }
        }
    }
    eprintln!("{seen:?}");
    assert!(
        seen.choices > 0 && seen.to_solver > 0,
        "the sample never left a choice open: {seen:?}"
    );
    (yes, no)
}

#[test]
fn ten_thousand_histories_with_repeated_values_every_switch_combination() {
    let (yes, no) = run(10_000, 0xd0b1_e5ee_d000_0001, 8, &all_option_sets());
    eprintln!("{yes} serializable, {no} not");
    assert!(yes > 1000 && no > 1000, "unbalanced: {yes} / {no}");
}

#[test]
fn larger_histories_with_repeated_values() {
    let sets = vec![
        ("default".to_string(), Options::default()),
        (
            "no pruning".to_string(),
            Options {
                prune: false,
                want_order: true,
                ..Options::default()
            },
        ),
    ];
    let sets: Vec<_> = sets
        .into_iter()
        .map(|(n, o)| {
            (
                n,
                Options {
                    want_order: true,
                    ..o
                },
            )
        })
        .collect();
    run(400, 0xd0b1_e5ee_d000_0002, 14, &sets);
}

#[test]
fn generated_histories_do_repeat_values() {
    let mut r = Rng(5);
    let n = (0..200)
        .filter(|_| ambiguous(&random_history_with(&mut r, 8, 2, Some(2), false)))
        .count();
    assert!(n > 100, "{n}");
}
