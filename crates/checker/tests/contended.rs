//! Contended histories (write-heavy, few keys, many sessions: the solver decides): every
//! combination of the techniques for them — lazy decisions, skipping pairs of writes nobody
//! reads, thinning decided edges — with pruning on and off gives the same verdict, and each
//! verdict is confirmed apart from the checker (the serial order replayed, the certificate
//! re-derived).

use crate::common;

use common::confirmed;
use krait_checker::{check, Options, Verdict};
use krait_history::History;
use krait_workloads::{blindw, BlindW};

fn contended(read_only: f64, fractured: f64, seed: u64) -> History {
    blindw(&BlindW {
        sessions: 24,
        keys: 12,
        read_only,
        fractured_reads: fractured,
        seed,
        ..BlindW::wm(150)
    })
}

fn all_combinations() -> Vec<(String, Options)> {
    let mut v = Vec::new();
    for bits in 0..32u32 {
        let on = |i: u32| bits & (1 << i) != 0;
        let o = Options {
            solver_lazy: on(0),
            skip_unobserved: on(1),
            thin_edges: on(2),
            prune_search_few: on(2),
            time_order: on(1),
            prune: on(3),
            pair_by_heads: on(4),
            want_order: true,
            ..Options::default()
        };
        v.push((
            format!(
                "lazy={} skip_unobserved={} (and time_order) thin_edges={} prune={} pair_by_heads={}",
                on(0),
                on(1),
                on(2),
                on(3),
                on(4)
            ),
            o,
        ));
    }
    v
}

/// The verdict kind (true: ACCEPT) every combination agrees on, each one confirmed.
fn agreed(h: &History) -> bool {
    let mut seen = None;
    for (name, o) in all_combinations() {
        let accept = confirmed(h, &check(h, &o).unwrap(), &name);
        match seen {
            None => seen = Some(accept),
            Some(s) => assert_eq!(s, accept, "{name} disagrees"),
        }
    }
    seen.unwrap()
}

#[test]
fn a_serializable_contended_history_is_accepted_by_every_combination() {
    for seed in 1..=3 {
        let h = contended(0.1, 0.0, seed);
        assert!(
            agreed(&h),
            "seed {seed}: the simulated store is serializable"
        );
    }
}

#[test]
fn fractured_reads_on_contended_keys_are_rejected_by_every_combination() {
    for seed in 1..=3 {
        let h = contended(0.3, 0.2, seed);
        assert!(
            !agreed(&h),
            "seed {seed}: fractured reads are never serializable"
        );
    }
}

#[test]
fn the_techniques_leave_the_solver_less_to_do() {
    let h = contended(0.1, 0.0, 7);
    let all = check(&h, &Options::default()).unwrap();
    let none = check(
        &h,
        &Options {
            solver_lazy: false,
            skip_unobserved: false,
            thin_edges: false,
            ..Options::default()
        },
    )
    .unwrap();
    assert!(matches!(all.verdict, Verdict::Accept));
    assert!(matches!(none.verdict, Verdict::Accept));
    // Pairs of writes nobody reads are most of what pruning leaves on such a history.
    assert!(
        all.stats.constraints_after_prune * 2 < none.stats.constraints_after_prune,
        "{} vs {}",
        all.stats.constraints_after_prune,
        none.stats.constraints_after_prune
    );
    assert!(all.stats.decisions < none.stats.decisions);
}
