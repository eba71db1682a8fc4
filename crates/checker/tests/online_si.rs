//! Online snapshot isolation: rounds, epochs and garbage collection over the graph split into
//! snapshots and commits keep the one-shot verdict (itself checked against the brute-force
//! oracle in `snapshot_isolation.rs`), under every online option set.

use crate::common;

use common::fenced::{option_sets, random_fenced, random_late_reads};
use common::si::random_si_fenced;
use common::Rng;
use krait_checker::online::replay;
use krait_checker::{check, Level, Options, Verdict};

#[test]
fn online_snapshot_isolation_equals_one_shot_on_random_fenced_histories() {
    let mut r = Rng(0x5eed_5100);
    let sets = option_sets();
    let (mut deleted, mut rejects, mut si_only) = (0u64, 0, 0);
    let count = 2400;
    for i in 0..count {
        let h = match i % 3 {
            0 => random_fenced(&mut r),
            1 => random_late_reads(&mut r),
            _ => {
                let (keys, every) = (2 + r.below(3), 2 + r.below(3));
                random_si_fenced(&mut r, 40, keys, every)
            }
        };
        let si = Options {
            level: Level::SnapshotIsolation,
            ..Options::default()
        };
        let truth = check(&h, &si).unwrap().verdict;
        assert!(!matches!(truth, Verdict::Unknown { .. }));
        rejects += usize::from(truth.is_reject());
        si_only += usize::from(
            truth.is_accept() && check(&h, &Options::default()).unwrap().verdict.is_reject(),
        );
        for &round in &[1usize, 3, 8, 1000] {
            for (name, o) in &sets {
                if i % 4 == 3 && *name != "default" {
                    continue;
                }
                // Strict needs timestamps, which the late-reads generator does not record.
                if o.check.strict.is_some() && i % 3 == 1 {
                    continue;
                }
                let mut o = o.clone();
                o.check.level = Level::SnapshotIsolation;
                let expect = if o.check.strict.is_some() {
                    check(&h, &o.check).unwrap().verdict.is_reject()
                } else {
                    truth.is_reject()
                };
                let on = replay(&h, o, round, |_, _| {}).unwrap();
                let online_reject = on.verdict().is_some_and(|r| r.verdict.is_reject());
                assert_eq!(
                    online_reject, expect,
                    "history {i}, round size {round}, {name}: online {online_reject} one-shot {expect}\n{h:?}",
                );
                if *name == "default" {
                    deleted += on.deleted_total();
                }
            }
        }
    }
    eprintln!("{rejects} rejects, {si_only} accepted only under SI, {deleted} deleted");
    assert!(
        rejects > count / 10 && rejects < count * 9 / 10,
        "{rejects} rejects"
    );
    assert!(si_only > 50, "{si_only} histories only SI accepts");
    assert!(deleted > 1000, "garbage collection hardly ran: {deleted}");
}
