//! Every history of VeriStrong's benchmark (../shared/data/veristrong) that its README lists at
//! serializability or snapshot isolation gets VeriStrong's verdict, its serial (or commit)
//! order replayed read by read apart from the checker. Most of them write a value more than once. Skips, saying so, where the shared
//! data is absent.

use krait_checker::{check, Options};
use std::path::PathBuf;

fn data() -> Option<PathBuf> {
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/veristrong");
    if d.join("README.md").is_file() {
        Some(d)
    } else {
        // Printed by the harness even without --nocapture: the test name says it ran empty.
        println!("skipped: {} is absent", d.display());
        eprintln!("skipped: {} is absent", d.display());
        None
    }
}

/// (history, VeriStrong's verdict is accept) for each README row at level `ser`.
fn serializable_rows(d: &std::path::Path) -> Vec<(String, bool)> {
    let text = std::fs::read_to_string(d.join("README.md")).unwrap();
    text.lines()
        .filter_map(|l| {
            let c: Vec<&str> = l.split('|').map(str::trim).collect();
            (c.len() > 4 && c[1].starts_with("ser/") && c[2] == "ser")
                .then(|| (c[1].to_string(), c[3] == "accept"))
        })
        .collect()
}

#[test]
fn veristrong_histories_get_veristrongs_verdicts() {
    let Some(d) = data() else { return };
    let rows = serializable_rows(&d);
    assert!(
        rows.len() >= 70,
        "the README lists {} histories",
        rows.len()
    );
    let mut with_duplicates = 0;
    for (name, accept) in rows {
        let h = krait_history::load(&d.join(&name), None)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .history;
        with_duplicates += usize::from(h.has_duplicates());
        let opts = Options {
            want_order: true,
            ..Options::default()
        };
        let rep = check(&h, &opts).unwrap();
        assert_eq!(rep.verdict.is_accept(), accept, "{name}: {:?}", rep.verdict);
        let v = serde_json::to_value(&rep).unwrap();
        let what = krait_verify::verify(&h, &v).unwrap_or_else(|p| panic!("{name}: {p}"));
        eprintln!("{name}: {what}");
    }
    eprintln!("{with_duplicates} of them write a value more than once");
    // The point of this benchmark: values written more than once.
    assert!(with_duplicates > 50, "{with_duplicates}");
}

#[test]
fn veristrong_snapshot_isolation_histories_get_veristrongs_verdicts() {
    let Some(d) = data() else { return };
    let text = std::fs::read_to_string(d.join("README.md")).unwrap();
    let rows: Vec<(String, bool)> = text
        .lines()
        .filter_map(|l| {
            let c: Vec<&str> = l.split('|').map(str::trim).collect();
            (c.len() > 4 && c[1].starts_with("si/") && c[2] == "si")
                .then(|| (c[1].to_string(), c[3] == "accept"))
        })
        .collect();
    assert!(rows.len() >= 4, "the README lists {} histories", rows.len());
    for (name, accept) in rows {
        let h = krait_history::load(&d.join(&name), None)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .history;
        let opts = Options {
            level: krait_checker::Level::SnapshotIsolation,
            want_order: true,
            ..Options::default()
        };
        let rep = check(&h, &opts).unwrap();
        assert_eq!(rep.verdict.is_accept(), accept, "{name}: {:?}", rep.verdict);
        // The commit order and snapshots, replayed apart from the checker.
        let v = serde_json::to_value(&rep).unwrap();
        let what = krait_verify::verify(&h, &v).unwrap_or_else(|p| panic!("{name}: {p}"));
        eprintln!("{name}: {what}");
    }
}
