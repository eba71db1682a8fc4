//! Certificates about reads whose value several writes wrote: which writers each could have
//! read, and why each of them fails — ruled out while building (did not commit, overwritten by
//! its own transaction, the reader's own later write), or by a cycle its choice would close.

use super::deduce::Deducer;
use super::explain::{candidates_text, key_name, simple, txn_name};
use super::{Anomaly, CertCase, Certificate, EdgeNote, Explainer};
use crate::findings::NoWriter;
use crate::graph::{self, Built, Choice, Csr, EdgeKind, Label, Node, RuledOut, INIT};
use krait_history::{History, Resolution, TxnId, TxnStatus};

impl Certificate {
    /// Read `o` returned a value several writes wrote, and none of them can be its writer.
    pub(super) fn no_viable_writer(
        h: &History,
        r: &Resolution,
        o: u32,
        why: &[(u32, NoWriter)],
    ) -> Certificate {
        let t = r.op_txn[o as usize];
        let k = key_name(h, h.op_key[o as usize]);
        let mut ts = vec![t];
        let reasons: Vec<String> = why
            .iter()
            .map(|&(w, reason)| {
                let wt = r.op_txn[w as usize];
                ts.push(wt);
                let name = txn_name(h, wt);
                match reason {
                    NoWriter::Own => format!("{name} is the reader itself, writing it later"),
                    NoWriter::NotCommitted if h.txn_status[wt as usize] == TxnStatus::Aborted => {
                        format!("{name} aborted")
                    }
                    NoWriter::NotCommitted => format!("{name} did not commit"),
                    NoWriter::Overwritten => {
                        format!("{name} wrote {k} again before committing")
                    }
                }
            })
            .collect();
        let all = |x: NoWriter| why.iter().all(|w| w.1 == x);
        let anomaly = if all(NoWriter::NotCommitted) {
            Anomaly::G1a
        } else if all(NoWriter::Overwritten) {
            Anomaly::G1b
        } else if all(NoWriter::Own) {
            Anomaly::ReadOfNobody
        } else {
            Anomaly::NoPossibleWriter
        };
        let summary = format!(
            "{} read {k} = {}, which {} wrote, and none of them can be the write it read: {}",
            txn_name(h, t),
            h.value_text(o as usize),
            candidates_text(h, r, o),
            reasons.join("; ")
        );
        simple(anomaly, summary, h, r, &ts)
    }
}

/// A case per candidate writer of choice `ci`, each with the cycle its choice closes.
pub(crate) fn no_writer_certificate(
    h: &History,
    r: &Resolution,
    b: &Built,
    ci: u32,
) -> Certificate {
    let c = &b.choices[ci as usize];
    let csr = Csr::build(b.num_nodes, &b.edges, false);
    let x = Explainer { h, r, b };
    let reasons = || &csr;
    let d = Deducer::new(Explainer { h, r, b }, &reasons);
    let op = c.ops[0];
    let k = key_name(h, c.key);
    let mut txn_ids: Vec<TxnId> = b.txn_of(c.reader).into_iter().collect();
    let mut cases = Vec::new();
    for (i, &w) in c.cands.iter().enumerate() {
        txn_ids.extend(b.txn_of(w));
        let assumed = |l: Label| (l, true);
        let (cycle_start, first) = match c.why[i] {
            // The write → read edge this choice adds closes the cycle.
            Some(RuledOut::ReaderFirst) => {
                ((w, c.reader), assumed(Label::fact(EdgeKind::Wr, c.key)))
            }
            // The read must precede the write that comes between.
            Some(RuledOut::Overwritten { by }) => {
                txn_ids.extend(b.txn_of(by));
                ((c.reader, by), assumed(Label::fact(EdgeKind::Rw, c.key)))
            }
            None => continue,
        };
        let Some(path) = graph::shortest_path(&csr, cycle_start.1, cycle_start.0) else {
            continue;
        };
        let mut es = vec![(cycle_start.0, cycle_start.1, first.0)];
        es.extend(path.iter().map(|&e| {
            let (u, v) = b.edges[e as usize];
            (u, v, b.labels[e as usize])
        }));
        let note = |j: usize| {
            if j == 0 {
                EdgeNote {
                    assumed: true,
                    ..Default::default()
                }
            } else {
                d.note(path[j - 1])
            }
        };
        cases.push(CertCase {
            choices: vec![choice_text(h, b, c, i)],
            cycle: x.path(&es, &note),
        });
    }
    let summary = format!(
        "{}: {} read {k} = {}, which {} wrote, and each choice of writer closes a cycle",
        Anomaly::NoPossibleWriter.name(),
        x.node_name(c.reader),
        h.value_text(op as usize),
        candidates_text(h, r, op)
    );
    let mut seen = Vec::new();
    for t in txn_ids {
        if !seen.contains(&t) {
            seen.push(t);
        }
    }
    Certificate {
        anomaly: Anomaly::NoPossibleWriter,
        summary,
        cycle: Vec::new(),
        constraints: Vec::new(),
        cases,
        txns: seen
            .into_iter()
            .map(|t| super::describe_txn(h, r, t))
            .collect(),
    }
}

/// "T5 read x from T2" (or "from the initial state").
pub(super) fn choice_text(h: &History, b: &Built, c: &Choice, i: usize) -> String {
    let reader = b
        .txn_of(c.reader)
        .map_or("?".to_string(), |t| txn_name(h, t));
    let from = match c.cands[i] {
        INIT => "the initial state".to_string(),
        w => b.txn_of(w).map_or("?".to_string(), |t| txn_name(h, t)),
    };
    format!("{reader} read {} from {from}", key_name(h, c.key))
}

/// Cond edges a case with these picks and these constraint sides makes hold: `side` gives each
/// constraint's option where the case fixes it (else what pruning decided, if anything).
pub(super) fn case_cond_edges(
    b: &Built,
    picks: &[(u32, u32)],
    side: &dyn Fn(u32) -> Option<bool>,
) -> Vec<(Node, Node, Label)> {
    let mut out = Vec::new();
    for e in &b.cond {
        if !picks.contains(&(e.choice, e.cand)) {
            continue;
        }
        let holds = e.pair == graph::NO_PAIR || side(e.pair) == Some(e.first);
        if holds {
            out.push((e.u, e.v, e.label));
        }
    }
    out
}
