//! Certificates of the weak levels: the shortest cycle of session order, write→read and the
//! version orders the level forced, each forced edge saying which read forced it and by which
//! rule; named by the weakest rule on the cycle (non-monotonic read for read committed, fractured
//! read or a session guarantee for read atomic, causality violation for causal consistency).

use super::explain::{cycle_summary, key_name, session_text, txn_name, txns};
use super::{Anomaly, CertEdge, Certificate};
use crate::graph::{self, Csr, EdgeKind, Label, Node, INIT};
use crate::weak::{Forced, Rule};
use krait_history::{History, Resolution, TxnId};

pub(crate) fn weak_certificate(
    h: &History,
    r: &Resolution,
    node_txn: &[TxnId],
    edges: &[(Node, Node)],
    labels: &[Label],
    why: &[u32],
    forced: &[Forced],
) -> Certificate {
    // Nodes past the transactions' are an online round's hubs (carried paths).
    let txn_nodes = node_txn.len() + 1;
    let n = edges
        .iter()
        .map(|&(u, v)| u.max(v) as usize + 1)
        .max()
        .unwrap_or(0)
        .max(txn_nodes);
    let csr = Csr::build(n, edges, false);
    let (comp, ncomp) = graph::scc(n, &csr);
    let mut size = vec![0u32; ncomp as usize];
    for &c in &comp {
        size[c as usize] += 1;
    }
    let cid = (0..ncomp)
        .filter(|&c| size[c as usize] > 1)
        .min_by_key(|&c| (size[c as usize], c))
        .expect("a cycle exists");
    let members: Vec<Node> = (0..n as Node)
        .filter(|&x| comp[x as usize] == cid)
        .collect();
    // Fewest forced edges first, then fewest edges.
    let cost = |e: u32| {
        let c = if why[e as usize] != u32::MAX {
            graph::Cost::Rw
        } else if labels[e as usize].kind == EdgeKind::Session {
            graph::Cost::Session
        } else {
            graph::Cost::Other
        };
        (c, false)
    };
    let cyc = graph::best_cycle(
        &csr,
        &comp,
        cid,
        &members,
        cost,
        64,
        super::cycle::CYCLE_SEARCH_BUDGET,
    )
    .expect("a cycle exists");
    let name = |x: Node| -> String {
        if x == INIT {
            "INIT".to_string()
        } else if x as usize >= txn_nodes {
            "(collected)".to_string()
        } else {
            txn_name(h, node_txn[x as usize - 1])
        }
    };
    let txn = |x: Node| (x != INIT && (x as usize) < txn_nodes).then(|| node_txn[x as usize - 1]);
    let mut named: Vec<TxnId> = Vec::new();
    let mut rules: Vec<Rule> = Vec::new();
    let mut cycle = Vec::new();
    for &e in &cyc {
        let (u, v) = edges[e as usize];
        let l = labels[e as usize];
        named.extend(txn(u));
        let (a, b) = (name(u), name(v));
        let key = (l.key != crate::graph::NO_KEY).then(|| key_name(h, l.key));
        let kn = key.clone().unwrap_or_default();
        let explanation = match (l.kind, why[e as usize]) {
            (EdgeKind::Session, _) => session_text(h, &a, &b, txn(u)),
            (EdgeKind::Wr, _) => format!("{b} read {kn} from {a}"),
            (EdgeKind::Carried, _) => format!(
                "{a} precedes {b} through transactions garbage-collected in earlier rounds, or by an order their reads forced"
            ),
            (_, u32::MAX) => format!("{b} overwrote the initial version of {kn}"),
            (_, i) => {
                let fe = forced[i as usize];
                rules.push(fe.rule);
                let reader = r.op_txn[fe.op as usize];
                named.push(reader);
                let t2 = txn_name(h, reader);
                let t1 = if fe.t1 == INIT {
                    "the initial version".to_string()
                } else {
                    format!("{b}'s version")
                };
                let via_key = |op: u32| key_name(h, h.op_key[op as usize]);
                let level_says = match fe.rule {
                    Rule::Earlier { via } => format!(
                        "{t2} read {} from {a} before it read {kn} from {b}, and {a} wrote {kn} too: under read committed a transaction's reads never go back to an older version",
                        via_key(via)
                    ),
                    Rule::ReadFrom { via } => format!(
                        "{t2} read {} from {a}, which wrote {kn} too, yet read {kn} from {b}: under read atomic a transaction sees all of what it sees of another",
                        via_key(via)
                    ),
                    Rule::Session => format!(
                        "{a} wrote {kn} earlier in {t2}'s session, yet {t2} read {kn} from {b}: read atomic keeps a session's own writes visible to it"
                    ),
                    Rule::Causal => format!(
                        "{a}, which wrote {kn}, is in {t2}'s causal past, yet {t2} read {kn} from {b}: causal consistency shows every causally earlier write"
                    ),
                };
                format!("{a}'s version of {kn} must precede {t1}: {level_says}")
            }
        };
        cycle.push(CertEdge {
            from: a,
            to: b,
            kind: l.kind,
            key,
            explanation,
            forced_because: None,
            deduced: None,
            assumed: false,
        });
    }
    let same_read_twice = cyc.len() == 2 && cyc.iter().all(|&e| why[e as usize] != u32::MAX) && {
        let (x, y) = (
            forced[why[cyc[0] as usize] as usize],
            forced[why[cyc[1] as usize] as usize],
        );
        x.key == y.key && r.op_txn[x.op as usize] == r.op_txn[y.op as usize]
    };
    let carried = cyc
        .iter()
        .any(|&e| labels[e as usize].kind == EdgeKind::Carried);
    let anomaly = match rules.iter().min() {
        // A carried edge may stand for an order an earlier round's reads forced.
        None if carried => Anomaly::CausalityViolation,
        None => Anomaly::G1c,
        Some(_) if same_read_twice => Anomaly::NonRepeatableRead,
        Some(Rule::Earlier { .. }) => Anomaly::NonMonotonicRead,
        Some(Rule::ReadFrom { .. }) => Anomaly::FracturedRead,
        Some(Rule::Session) => Anomaly::SessionGuarantee,
        Some(Rule::Causal) => Anomaly::CausalityViolation,
    };
    let summary = cycle_summary(anomaly, &cycle);
    Certificate {
        anomaly,
        summary,
        cycle,
        constraints: Vec::new(),
        cases: Vec::new(),
        txns: txns(h, r, &named),
    }
}
