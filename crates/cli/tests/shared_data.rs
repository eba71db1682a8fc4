//! Every history in ../shared/data/cobra: loads with the documented counts, and gets its known
//! verdict. Skips, saying so, where the shared data is absent (a user's machine).

use krait_checker::{check, Anomaly, Options};
use std::path::PathBuf;

fn data() -> Option<PathBuf> {
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/cobra");
    if d.is_dir() {
        Some(d)
    } else {
        skip_notice(&format!("skipped: {} is absent", d.display()));
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
        let opts = Options {
            want_order: true,
            ..Options::default()
        };
        let rep = check(&loaded.history, &opts).unwrap();
        assert_eq!(
            rep.verdict.is_accept(),
            serializable,
            "{name}: {:?}",
            rep.verdict
        );
        // Every verdict confirmed apart from the checker: the serial order replayed read by
        // read, or the certificate re-derived.
        let v = serde_json::to_value(&rep).unwrap();
        let what = krait_verify::verify(&loaded.history, &v)
            .unwrap_or_else(|p| panic!("{name}: krait-verify: {p}"));
        eprintln!("{name}: {what}");
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
    // The same history gives the same certificate, run after run.
    for _ in 0..5 {
        let again = check(&h, &Options::default()).unwrap();
        assert_eq!(again.verdict.certificate(), Some(&c));
    }
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

/// Online mode on the paper's scaling histories: rounds of several sizes accept, and garbage
/// collection keeps only a small part of the history.
#[test]
fn scaling_histories_accept_online() {
    use krait_checker::online::{replay, OnlineOptions};
    let Some(d) = data() else { return };
    for name in ["scaling/chengRM-100000", "scaling/twitter-100000"] {
        let h = krait_history::load(&d.join(name), None).unwrap().history;
        for round in [5_000, 30_000] {
            let mut max_live = 0;
            let on = replay(&h, OnlineOptions::default(), round, |st, _| {
                max_live = max_live.max(st.live)
            })
            .unwrap();
            assert!(on.verdict().is_none(), "{name} round {round}");
            assert!(
                on.deleted_total() > h.num_txns() as u64 / 3,
                "{name} round {round}: {} deleted",
                on.deleted_total()
            );
            assert!(max_live < h.num_txns() * 2 / 3, "{name}: {max_live} live");
        }
    }
}

/// `krait watch` on Cobra logs that are still being written: the files of chengRM-100000 are
/// copied in pieces cut at arbitrary bytes (mid-record), while watch follows the directory.
#[test]
fn watch_follows_cobra_logs_being_written() {
    let Some(d) = data() else { return };
    let src = d.join("scaling/chengRM-100000");
    let dst = std::env::temp_dir().join(format!("krait-watch-cobra-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dst);
    std::fs::create_dir_all(&dst).unwrap();
    let files: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (dst.join(p.file_name().unwrap()), bytes)
        })
        .collect();
    // Every file exists (empty) before watch starts, as a client would create it.
    for (p, _) in &files {
        std::fs::write(p, b"").unwrap();
    }
    let watcher = std::process::Command::new(env!("CARGO_BIN_EXE_krait"))
        .arg("watch")
        .arg(&dst)
        .args(["--interval", "30ms", "--idle-exit", "2s", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    let steps = 25;
    for step in 1..=steps {
        for (i, (p, bytes)) in files.iter().enumerate() {
            // Cut points differ per file and step, and land inside records.
            let at = |s: usize| match s {
                0 => 0,
                s if s == steps => bytes.len(),
                s => (bytes.len() * s / steps + 7 * i + 3 * s).min(bytes.len()),
            };
            let mut f = std::fs::OpenOptions::new().append(true).open(p).unwrap();
            f.write_all(&bytes[at(step - 1)..at(step)]).unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(40));
    }
    let out = watcher.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (v, rounds) = lines.split_last().unwrap();
    assert_eq!(v["verdict"], "ACCEPT");
    assert_eq!(v["history"]["txns"], 103_763);
    assert!(rounds.len() >= 5);
    assert!(v["deleted"].as_u64().unwrap() > 50_000);
    let _ = std::fs::remove_dir_all(&dst);
}

/// A skip notice the test harness does not capture: written to stderr directly (the print
/// macros are captured), so `cargo test` shows it without `--nocapture`.
fn skip_notice(msg: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{msg}");
}
