//! Read-heavy histories (many readers of each version, writes the known graph orders): pairing
//! each write only with the first later one it is known to precede (`pair_by_heads`) forms a
//! few constraints per key instead of one per pair of versions, and the verdict, confirmed
//! apart from the checker, is the same with it off.

use crate::common;

use common::confirmed;
use krait_checker::{check, Options};
use krait_history::History;
use krait_workloads::{blindw, BlindW};

fn read_heavy(fractured: f64, seed: u64) -> History {
    blindw(&BlindW {
        sessions: 12,
        keys: 40,
        ops_per_txn: 12,
        read_only: 0.9,
        fractured_reads: fractured,
        seed,
        ..BlindW::wm(1500)
    })
}

/// Checks `h` with `pair_by_heads` on and off: the verdict (true: ACCEPT) both agree on, each
/// confirmed, and the constraints each formed.
fn both(h: &History) -> (bool, usize, usize) {
    let mut seen = Vec::new();
    for on in [true, false] {
        let o = Options {
            pair_by_heads: on,
            want_order: true,
            ..Options::default()
        };
        let rep = check(h, &o).unwrap();
        let accept = confirmed(h, &rep, &format!("pair_by_heads={on}"));
        seen.push((accept, rep.stats.constraints_formed));
    }
    assert_eq!(seen[0].0, seen[1].0, "the switch changed the verdict");
    (seen[0].0, seen[0].1, seen[1].1)
}

#[test]
fn a_serializable_read_heavy_history_forms_a_few_constraints_per_key() {
    for seed in 1..=3 {
        let h = read_heavy(0.0, seed);
        let (accept, on, off) = both(&h);
        assert!(accept, "seed {seed}: the simulated store is serializable");
        // Each key has about 150 × 12 / 40 = 45 versions: a thousand pairs, or about one
        // constraint per version.
        assert!(
            on * 4 < off,
            "seed {seed}: {on} constraints formed vs {off}"
        );
    }
}

#[test]
fn fractured_reads_in_a_read_heavy_history_are_rejected_either_way() {
    for seed in 1..=3 {
        let h = read_heavy(0.02, seed);
        let (accept, _, _) = both(&h);
        assert!(
            !accept,
            "seed {seed}: fractured reads are never serializable"
        );
    }
}
