//! The verifier refutes what is not so: certificates from the checker are confirmed as they
//! are, and every reversed, dropped or invented edge, every deduction taken away and every
//! serial order with two transactions swapped is refuted.

use krait_checker::{check, Options};
use krait_history::{build_history, History, SimpleTxn as T, TxnStatus};
use krait_verify::{verify, Problem};
use serde_json::Value;

fn report(h: &History, want_order: bool) -> Value {
    let opts = Options {
        want_order,
        ..Options::default()
    };
    serde_json::to_value(check(h, &opts).unwrap()).unwrap()
}

fn refuted(h: &History, v: &Value, what: &str) {
    match verify(h, v) {
        Err(Problem::Invalid(_)) => {}
        other => panic!("{what}: expected a refutation, got {other:?}\n{v:#}"),
    }
}

/// Rejected histories with cycles of every edge kind, deductions among them.
fn rejected() -> Vec<History> {
    let hs = [
        // Write skew (G2-item): two rw edges.
        vec![
            T::new(0, 1).r0("x").r0("y").w("x", 1),
            T::new(1, 2).r0("x").r0("y").w("y", 2),
            T::new(2, 3).r("x", 1).r("y", 2),
        ],
        // Read skew needing a deduced version order.
        vec![
            T::new(0, 1).w("x", 1).w("y", 1),
            T::new(1, 2).w("x", 2).w("y", 2),
            T::new(2, 3).r("x", 1).r("y", 2),
            T::new(3, 4).r("x", 2).r("y", 1),
        ],
        // Lost update.
        vec![
            T::new(0, 1).w("x", 1),
            T::new(1, 2).r("x", 1).w("x", 2),
            T::new(2, 3).r("x", 1).w("x", 3),
        ],
        // A stale read down one session, and a write cycle through wr edges (G1c).
        vec![T::new(0, 1).w("x", 1), T::new(0, 2).r0("x")],
        vec![
            T::new(0, 1).r("y", 2).w("x", 1),
            T::new(1, 2).r("x", 1).w("y", 2),
        ],
        // Lists that disagree, and an unknown outcome that committed late (still a cycle).
        vec![
            T::new(0, 1).w("x", 1),
            T::new(1, 2).w("x", 2),
            T::new(2, 3).rl("x", &[1, 2]),
            T::new(3, 4).rl("x", &[2]),
        ],
        vec![
            T::new(0, 10).w("y", 1),
            T::new(0, 1).r0("y").w("x", 1).status(TxnStatus::Unknown),
            T::new(1, 3).r("x", 1),
        ],
    ];
    hs.iter().map(|t| build_history(t).unwrap()).collect()
}

#[test]
fn certificates_hold_and_every_edge_mutation_is_refuted() {
    let mut mutants = 0;
    for (i, h) in rejected().iter().enumerate() {
        let v = report(h, false);
        assert_eq!(v["verdict"], "REJECT", "history {i}");
        verify(h, &v).unwrap_or_else(|p| panic!("history {i}: {p}\n{v:#}"));
        let Some(cycle) = v["cycle"].as_array().cloned().filter(|c| !c.is_empty()) else {
            continue;
        };
        for j in 0..cycle.len() {
            // Reversed.
            let mut m = v.clone();
            let e = &mut m["cycle"][j];
            let (a, b) = (e["from"].clone(), e["to"].clone());
            e["from"] = b;
            e["to"] = a;
            refuted(h, &m, &format!("history {i}, edge {j} reversed"));
            // Dropped.
            let mut m = v.clone();
            m["cycle"].as_array_mut().unwrap().remove(j);
            if !m["cycle"].as_array().unwrap().is_empty() {
                refuted(h, &m, &format!("history {i}, edge {j} dropped"));
            }
            // Invented: another kind, or another key.
            for kind in ["session", "rt", "wr", "ww", "rw"] {
                if v["cycle"][j]["kind"] == kind {
                    continue;
                }
                let mut m = v.clone();
                m["cycle"][j]["kind"] = kind.into();
                if m["cycle"][j]["key"].is_null() {
                    m["cycle"][j]["key"] = "x".into();
                }
                if verify(h, &m).is_ok() {
                    // Some relabellings state something also true (a session pair that is
                    // also a write→read); only a false one must be refuted.
                    continue;
                }
                refuted(h, &m, &format!("history {i}, edge {j} as {kind}"));
                mutants += 1;
            }
            let mut m = v.clone();
            m["cycle"][j]["key"] = "no-such-key".into();
            if !v["cycle"][j]["key"].is_null() {
                refuted(h, &m, &format!("history {i}, edge {j} on another key"));
            }
            // A deduction taken away or marked as an assumption.
            if v["cycle"][j].get("deduced").is_some() {
                let mut m = v.clone();
                m["cycle"][j].as_object_mut().unwrap().remove("deduced");
                refuted(
                    h,
                    &m,
                    &format!("history {i}, edge {j} without its deduction"),
                );
                let mut m = v.clone();
                m["cycle"][j].as_object_mut().unwrap().remove("deduced");
                m["cycle"][j]["assumed"] = true.into();
                refuted(h, &m, &format!("history {i}, edge {j} assumed"));
                mutants += 2;
            }
            mutants += 3;
        }
    }
    assert!(mutants > 40, "{mutants}");
}

#[test]
fn serial_orders_replay_and_swaps_are_refuted() {
    let h = build_history(&[
        T::new(0, 1).w("x", 1),
        T::new(1, 2).r("x", 1).w("x", 2),
        T::new(2, 3).r("x", 2).rl("y", &[]),
        T::new(2, 4).w("y", 4).rl("y", &[4]),
    ])
    .unwrap();
    let v = report(&h, true);
    assert_eq!(v["verdict"], "ACCEPT");
    assert!(verify(&h, &v).unwrap().contains("replays all"));
    let order = v["order"].as_array().unwrap().clone();
    for i in 0..order.len() - 1 {
        let mut m = v.clone();
        m["order"].as_array_mut().unwrap().swap(i, i + 1);
        refuted(&h, &m, &format!("swap {i}"));
    }
    let mut m = v.clone();
    m["order"].as_array_mut().unwrap().pop();
    refuted(&h, &m, "a committed transaction left out");
}
