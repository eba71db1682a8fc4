//! Histories whose written values repeat (a read may have several candidate writers) against the
//! brute-force serial-order search, under every combination of the checker's switches.

use crate::common;

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

/// Whether each matched read's writer is the latest writer of its key before the reader in
/// the serial order (none: no writer before it), and every ambiguous read is matched.
fn matched_are_latest(h: &History, order: &[u64], matched: &[krait_checker::MatchedRead]) -> bool {
    let mut latest: std::collections::HashMap<&str, u64> = Default::default();
    let mut expect = Vec::new();
    for &ext in order {
        let t = h.txn_index[&ext];
        let mut own: Vec<&str> = Vec::new();
        for o in h.ops(t) {
            let k = h.keys[h.op_key[o] as usize].as_str();
            match h.op_kind[o] {
                krait_history::OpKind::Write => own.push(k),
                _ if !own.contains(&k) => expect.push((ext, k, latest.get(k).copied())),
                _ => {}
            }
        }
        for k in own {
            latest.insert(k, ext);
        }
    }
    matched
        .iter()
        .all(|m| expect.contains(&(m.txn, m.key.as_str(), m.writer)))
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
                        "history {i} [{name}]: bad serial order {order:?}\n{}",
                        compact(&h)
                    );
                    assert!(
                        matched_are_latest(&h, order, &rep.matched),
                        "history {i} [{name}]: matched writers {:?} disagree with {order:?}\n{}",
                        rep.matched,
                        compact(&h)
                    );
                }
                (Verdict::Reject(c), false) => {
                    let closed = |cycle: &[krait_checker::CertEdge]| {
                        cycle.windows(2).all(|w| w[0].to == w[1].from)
                            && cycle.first().map(|e| &e.from) == cycle.last().map(|e| &e.to)
                    };
                    assert!(closed(&c.cycle), "history {i} [{name}]: open cycle {c:#?}");
                    for case in &c.cases {
                        assert!(
                            closed(&case.cycle),
                            "history {i} [{name}]: open case {c:#?}"
                        );
                    }
                }
                (Verdict::Unknown { .. }, _) if opts.solver == SolverKind::BruteForce => {}
                (v, t) => panic!(
                    "history {i} [{name}]: checker says {v:?}, truth serializable={t}\n{}",
                    compact(&h)
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
    let ordered = |o: Options| Options {
        want_order: true,
        ..o
    };
    let sets = vec![
        ("default".to_string(), ordered(Options::default())),
        (
            "no pruning".to_string(),
            ordered(Options {
                prune: false,
                ..Options::default()
            }),
        ),
    ];
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

fn reject_of(txns: &[krait_history::SimpleTxn]) -> krait_checker::Certificate {
    let h = krait_history::build_history(txns).unwrap();
    match check(&h, &Options::default()).unwrap().verdict {
        Verdict::Reject(c) => *c,
        v => panic!("expected a REJECT, got {v:?}"),
    }
}

#[test]
fn a_read_none_of_whose_writers_committed_their_value() {
    use krait_history::{SimpleTxn as T, TxnStatus};
    // x = 1 was written by an aborted transaction and, as an intermediate version, by another.
    let c = reject_of(&[
        T::new(0, 1).w("x", 1).status(TxnStatus::Aborted),
        T::new(0, 2).w("x", 1).w("x", 2),
        T::new(1, 3).r("x", 1),
    ]);
    assert_eq!(
        serde_json::to_value(c.anomaly).unwrap(),
        "no-possible-writer"
    );
    assert_eq!(
        c.summary,
        "T3 read x = 1, which T1 or T2 wrote, and none of them can be the write it read: T1 aborted; T2 wrote x again before committing"
    );
    // All aborted: an aborted read.
    let c = reject_of(&[
        T::new(0, 1).w("x", 1).status(TxnStatus::Aborted),
        T::new(0, 2).w("x", 1).status(TxnStatus::Aborted),
        T::new(1, 3).r("x", 1),
    ]);
    assert_eq!(c.anomaly, krait_checker::Anomaly::G1a);
}

#[test]
fn each_candidate_writer_closes_a_cycle() {
    use krait_history::SimpleTxn as T;
    // T3 read x = 1, written by T1 and by T4. T1's version was overwritten by T2, which T3
    // follows (it read T2's y); T4 comes after T3 in its session.
    let c = reject_of(&[
        T::new(0, 1).w("x", 1),
        T::new(0, 2).w("x", 2).w("y", 1),
        T::new(1, 3).r("x", 1).r("y", 1),
        T::new(1, 4).w("x", 1),
    ]);
    assert_eq!(
        serde_json::to_value(c.anomaly).unwrap(),
        "no-possible-writer"
    );
    assert_eq!(
        c.summary,
        "no possible writer (every write of the value read is ruled out): T3 read x = 1, which T1 or T4 wrote, and each choice of writer closes a cycle"
    );
    let cases: Vec<(Vec<String>, Vec<(String, String, String)>)> = c
        .cases
        .iter()
        .map(|k| {
            let edges = k
                .cycle
                .iter()
                .map(|e| (e.from.clone(), e.kind.short().to_string(), e.to.clone()))
                .collect();
            (k.choices.clone(), edges)
        })
        .collect();
    let e = |a: &str, k: &str, b: &str| (a.to_string(), k.to_string(), b.to_string());
    assert_eq!(
        cases,
        vec![
            (
                vec!["T3 read x from T1".to_string()],
                vec![e("T3", "rw", "T2"), e("T2", "wr", "T3")]
            ),
            (
                vec!["T3 read x from T4".to_string()],
                vec![e("T4", "wr", "T3"), e("T3", "session", "T4")]
            ),
        ]
    );
}

#[test]
fn an_accept_names_the_writer_each_read_was_matched_to() {
    use krait_history::SimpleTxn as T;
    // Both T1 and T2 wrote x = 1; T3 read it after T4 overwrote T1's: only T2 can be the one.
    let h = krait_history::build_history(&[
        T::new(0, 1).w("x", 1),
        T::new(0, 4).w("x", 3).w("y", 1),
        T::new(1, 2).w("x", 1),
        T::new(2, 3).r("y", 1).r("x", 1),
    ])
    .unwrap();
    let rep = check(
        &h,
        &Options {
            want_order: true,
            ..Options::default()
        },
    )
    .unwrap();
    assert!(rep.verdict.is_accept());
    assert_eq!(
        rep.matched,
        vec![krait_checker::MatchedRead {
            txn: 3,
            key: "x".into(),
            value: 1,
            writer: Some(2)
        }]
    );
}

#[test]
fn a_read_of_zero_reads_the_files_own_write_of_zero() {
    // dbcop: every key starts at 0, unless the file writes 0 to it; then a read of 0 reads that
    // write (dbcop's `version_zero` tests: "an explicit x:=0 write wins"). T1 read x = 0, which
    // only T2 wrote, and T2 read T1's y: a cycle. Taking the initial state as one more writer
    // of 0 once accepted this (and an IsoVista history of a PostgreSQL bug with it).
    let text = r#"[[{"events": [["r", 1, 0], ["w", 2, 1]], "committed": true}],
                   [{"events": [["r", 2, 1], ["w", 1, 0]], "committed": true}]]"#;
    let h = krait_history::read_dbcop_json(text.as_bytes(), std::path::Path::new("h.json"))
        .unwrap()
        .history;
    assert!(check(&h, &Options::default()).unwrap().verdict.is_reject());
    // Without the write of 0, the read of 0 is of the initial state: serializable (T1, T2).
    let text = r#"[[{"events": [["r", 1, 0], ["w", 2, 1]], "committed": true}],
                   [{"events": [["r", 2, 1], ["w", 1, 5]], "committed": true}]]"#;
    let h = krait_history::read_dbcop_json(text.as_bytes(), std::path::Path::new("h.json"))
        .unwrap()
        .history;
    let rep = check(
        &h,
        &Options {
            want_order: true,
            ..Options::default()
        },
    )
    .unwrap();
    assert!(rep.verdict.is_accept(), "{:?}", rep.verdict);
    assert_eq!(rep.order, Some(vec![1, 2]));
}

#[test]
fn more_readers_then_writers_of_a_value_than_its_versions_are_a_lost_update() {
    use krait_checker::{Anomaly, Level};
    use krait_history::SimpleTxn as T;
    // Three transactions read x = 1 and then overwrote x; only T0 and T1 left x = 1.
    let txns = [
        T::new(0, 10).w("x", 1),
        T::new(1, 1).r("x", 1).w("x", 1),
        T::new(2, 2).r("x", 1).w("x", 2),
        T::new(3, 3).r("x", 1).w("x", 3),
    ];
    let h = krait_history::build_history(&txns).unwrap();
    for level in [Level::Serializable, Level::SnapshotIsolation] {
        let opts = Options {
            level,
            ..Options::default()
        };
        let rep = check(&h, &opts).unwrap();
        // krait-verify re-counts it from the history.
        assert!(verified(&h, &rep), "{level:?}: not confirmed");
        let Verdict::Reject(c) = rep.verdict else {
            panic!("{level:?}: a lost update accepted");
        };
        assert_eq!(c.anomaly, Anomaly::LostUpdate);
        assert_eq!(
            c.summary,
            "lost update on x: 3 committed transactions read x = 1 and then overwrote it (T1, T2, T3), but only 2 versions of x hold 1 (written last by T10, T1). Each version is read and then overwritten by at most one transaction, so two of them read the same version and both overwrote it, whichever write of 1 each one read"
        );
        assert_eq!(c.txns.len(), 4);
        // Without the count the search still finds it.
        let off = Options {
            count_versions: false,
            ..opts
        };
        assert!(matches!(
            check(&h, &off).unwrap().verdict,
            Verdict::Reject(_)
        ));
    }
    // A certificate naming one reader fewer does not add up, and krait-verify says so.
    let mut v = serde_json::to_value(check(&h, &Options::default()).unwrap()).unwrap();
    v["txns"]
        .as_array_mut()
        .unwrap()
        .retain(|t| t["name"] != "T3");
    assert!(matches!(
        krait_verify::verify(&h, &v),
        Err(krait_verify::Problem::Invalid(_))
    ));
    // One reader fewer: a chain T10, T1, T2 explains it.
    let h = krait_history::build_history(&txns[..3]).unwrap();
    assert!(check(&h, &Options::default()).unwrap().verdict.is_accept());
}

/// Deletes (`["w", key, null]` in JSON Lines): a read of no row may have read the initial
/// state or any delete of its key, and nothing else.
#[test]
fn a_read_of_no_row_reads_the_initial_state_or_a_delete() {
    let verdict = |lines: &[&str]| {
        let text = lines.join("\n") + "\n";
        let h = krait_history::read_jsonl(text.as_bytes(), std::path::Path::new("h.jsonl"))
            .unwrap()
            .history;
        let sets = all_option_sets();
        let got: Vec<bool> = sets
            .iter()
            .map(|(_, o)| krait_checker::check(&h, o).unwrap().verdict.is_accept())
            .collect();
        assert!(
            got.iter().all(|&a| a == got[0]),
            "switches disagree: {got:?}"
        );
        assert_eq!(
            got[0],
            serializable(&h, None),
            "the brute-force search disagrees"
        );
        got[0]
    };
    // Inserted, deleted, then found absent by the same session: it read the delete.
    assert!(verdict(&[
        r#"{"session":"a","txn":1,"ops":[["w","x",1]]}"#,
        r#"{"session":"a","txn":2,"ops":[["w","x",null]]}"#,
        r#"{"session":"a","txn":3,"ops":[["r","x",null]]}"#,
    ]));
    // Found absent before the insert: it read the initial state.
    assert!(verdict(&[
        r#"{"session":"a","txn":1,"ops":[["r","x",null]]}"#,
        r#"{"session":"a","txn":2,"ops":[["w","x",1]]}"#,
        r#"{"session":"a","txn":3,"ops":[["w","x",null]]}"#,
    ]));
    // Found absent after the insert and before the delete: neither can be what it read.
    assert!(!verdict(&[
        r#"{"session":"a","txn":1,"ops":[["w","x",1]]}"#,
        r#"{"session":"a","txn":2,"ops":[["r","x",null]]}"#,
        r#"{"session":"a","txn":3,"ops":[["w","x",null]]}"#,
    ]));
    // An aborted delete cannot be what it read.
    assert!(!verdict(&[
        r#"{"session":"a","txn":1,"ops":[["w","x",1]]}"#,
        r#"{"session":"b","txn":2,"status":"aborted","ops":[["w","x",null]]}"#,
        r#"{"session":"a","txn":3,"ops":[["r","x",null]]}"#,
    ]));
}
