//! Every history in ../shared/data/cobra: loads with the documented counts, and gets its known
//! verdict. Skips, saying so, where the shared data is absent (a user's machine).

use krait_checker::{check, Anomaly, Options};
use std::path::PathBuf;

fn data() -> Option<PathBuf> {
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/cobra");
    if d.is_dir() {
        Some(d)
    } else {
        println!("skipped: {} is absent", d.display());
        None
    }
}

/// (history, transactions, reads, writes, fences, serializable). Transaction and fence counts are
/// the table in shared/data/README.md; reads and writes were counted independently of krait.
const HISTORIES: &[(&str, usize, usize, usize, usize, bool)] = &[
    ("bugs/cock-G2", 446, 892, 446, 0, false),
    ("bugs/cock-blog", 21, 18, 3, 0, false),
    ("one-shot-10k/chengRM-10000", 9912, 71040, 8256, 0, true),
    ("one-shot-10k/chengRW-10000", 9564, 38072, 38440, 0, true),
    ("one-shot-10k/rubis-10000", 9358, 35770, 11257, 0, true),
    ("one-shot-10k/tpcc-10000", 13870, 256711, 63506, 0, true),
    ("one-shot-10k/twitter-10000", 9990, 32067, 15913, 0, true),
    ("one-shot-chengRW/chengRW-100", 100, 408, 392, 0, true),
    ("one-shot-chengRW/chengRW-200", 194, 760, 792, 0, true),
    ("one-shot-chengRW/chengRW-300", 289, 1096, 1216, 0, true),
    ("one-shot-chengRW/chengRW-400", 382, 1416, 1640, 0, true),
    ("one-shot-chengRW/chengRW-500", 478, 1776, 2048, 0, true),
    ("one-shot-chengRW/chengRW-1000", 961, 3848, 3840, 0, true),
    ("one-shot-chengRW/chengRW-2000", 1930, 7544, 7896, 0, true),
    ("one-shot-chengRW/chengRW-4000", 3808, 15128, 15336, 0, true),
    ("one-shot-chengRW/chengRW-6000", 5751, 22672, 23336, 0, true),
    ("one-shot-chengRW/chengRW-8000", 7726, 30704, 31104, 0, true),
    (
        "one-shot-chengRW/chengRW-10000",
        9564,
        38072,
        38440,
        0,
        true,
    ),
    (
        "one-shot-chengRW/chengRW-12000",
        11464,
        45624,
        46088,
        0,
        true,
    ),
    (
        "one-shot-chengRW/chengRW-14000",
        13337,
        53016,
        53680,
        0,
        true,
    ),
    (
        "one-shot-chengRW/chengRW-16000",
        15263,
        60864,
        61240,
        0,
        true,
    ),
    ("scaling/chengRM-100000", 103763, 717699, 79776, 4691, true),
    ("scaling/twitter-100000", 100184, 406249, 159456, 4532, true),
];

#[test]
fn every_shared_history_loads_with_its_counts_and_verdict() {
    let Some(d) = data() else { return };
    for &(name, txns, reads, writes, fences, serializable) in HISTORIES {
        let loaded =
            krait_history::load(&d.join(name), None).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(loaded.warnings.is_empty(), "{name}: {:?}", loaded.warnings);
        let s = krait_history::summarize(&loaded.history);
        assert_eq!(
            (s.txns, s.reads, s.writes, s.fences),
            (txns, reads, writes, fences),
            "{name}"
        );
        let rep = check(&loaded.history, &Options::default()).unwrap();
        assert_eq!(
            rep.verdict.is_accept(),
            serializable,
            "{name}: {:?}",
            rep.verdict
        );
    }
}

#[test]
fn real_bugs_are_explained() {
    let Some(d) = data() else { return };
    let h = krait_history::load(&d.join("bugs/cock-G2"), None)
        .unwrap()
        .history;
    let c = check(&h, &Options::default())
        .unwrap()
        .verdict
        .certificate()
        .cloned()
        .expect("reject");
    assert_eq!(c.anomaly, Anomaly::G2Item);
    assert_eq!(c.cycle.len(), 2);
    for w in c.cycle.windows(2) {
        assert_eq!(w[0].to, w[1].from);
    }
    assert!(c
        .cycle
        .iter()
        .all(|e| e.kind == krait_checker::EdgeKind::Rw));

    let h = krait_history::load(&d.join("bugs/cock-blog"), None)
        .unwrap()
        .history;
    let c = check(&h, &Options::default())
        .unwrap()
        .verdict
        .certificate()
        .cloned()
        .expect("reject");
    assert_eq!(c.anomaly, Anomaly::ReadOfNobody);
    assert!(
        c.summary.contains("which is not in the history"),
        "{}",
        c.summary
    );
}

#[test]
fn switches_agree_on_shared_histories() {
    let Some(d) = data() else { return };
    let variants = [
        Options {
            combine: false,
            ..Options::default()
        },
        Options {
            coalesce: false,
            ..Options::default()
        },
        Options {
            prune: false,
            ..Options::default()
        },
        Options {
            solver_order_phase: false,
            solver_theory_propagation: false,
            ..Options::default()
        },
    ];
    for name in [
        "bugs/cock-G2",
        "one-shot-chengRW/chengRW-1000",
        "one-shot-10k/twitter-10000",
        "one-shot-10k/tpcc-10000",
    ] {
        let h = krait_history::load(&d.join(name), None).unwrap().history;
        let truth = check(&h, &Options::default()).unwrap().verdict.is_accept();
        for o in &variants {
            let rep = check(&h, o).unwrap();
            assert_eq!(rep.verdict.is_accept(), truth, "{name} with {o:?}");
        }
    }
}
