//! Graph edges and transactions in words: names (escaped for the terminal), each edge's meaning
//! with its key and values, paths with gate nodes folded away, and the anomaly class of a cycle.

use super::{Anomaly, CertEdge, CertTxn, Certificate, EdgeNote};
use crate::graph::{Built, EdgeKind, Label, Node, INIT, NO_CONSTRAINT, NO_KEY};
use krait_history::{History, OpKind, Resolution, TxnId, FROM_AMBIGUOUS, FROM_INIT, FROM_NOBODY};

/// A name from the input as it may be printed: control characters (escape sequences, newlines)
/// written out, so a session name cannot rewrite the terminal.
pub(crate) fn printable(s: &str) -> String {
    if s.chars().any(char::is_control) {
        s.escape_default().to_string()
    } else {
        s.to_string()
    }
}

pub(crate) fn txn_name(h: &History, t: TxnId) -> String {
    h.display_txn(t)
}

pub(crate) fn key_name(h: &History, k: u32) -> String {
    h.keys[k as usize].clone()
}

/// The writers an ambiguous read may have read, in words: "T1, T4 or the initial state".
pub(crate) fn candidates_text(h: &History, r: &Resolution, o: u32) -> String {
    let names: Vec<String> = r
        .candidates(o)
        .iter()
        .map(|&w| match w {
            FROM_INIT => "the initial state".to_string(),
            w => txn_name(h, r.op_txn[w as usize]),
        })
        .collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

/// What read `o` saw, in words: its value and where it came from.
pub(crate) fn source_text(h: &History, r: &Resolution, o: u32) -> String {
    let v = h.value_text(o as usize);
    match r.read_from[o as usize] {
        FROM_INIT => "the initial version".to_string(),
        FROM_NOBODY => format!("{v} (written by nobody)"),
        FROM_AMBIGUOUS => format!("{v} (from {})", candidates_text(h, r, o)),
        w => format!("{v} (from {})", txn_name(h, r.op_txn[w as usize])),
    }
}

fn describe_read(h: &History, r: &Resolution, o: u32) -> String {
    let k = key_name(h, h.op_key[o as usize]);
    match r.read_from[o as usize] {
        FROM_INIT => format!("r({k}) = initial"),
        FROM_NOBODY => format!("r({k}) = {} (written by nobody)", h.value_text(o as usize)),
        FROM_AMBIGUOUS => format!(
            "r({k}) = {} from {}",
            h.value_text(o as usize),
            candidates_text(h, r, o)
        ),
        w => format!(
            "r({k}) = {} from {}",
            h.value_text(o as usize),
            txn_name(h, r.op_txn[w as usize])
        ),
    }
}

pub(crate) fn describe_txn(h: &History, r: &Resolution, t: TxnId) -> CertTxn {
    let ops = h
        .ops(t)
        .map(|o| match h.op_kind[o] {
            OpKind::Write => format!("w({}) = {}", key_name(h, h.op_key[o]), h.value_text(o)),
            _ => describe_read(h, r, o as u32),
        })
        .collect();
    CertTxn {
        name: txn_name(h, t),
        session: printable(&h.session_names[h.session_of(t)]),
        status: h.txn_status[t as usize].as_str().to_string(),
        ops,
    }
}

pub(crate) fn txns(h: &History, r: &Resolution, ts: &[TxnId]) -> Vec<CertTxn> {
    let mut seen = Vec::new();
    for &t in ts {
        if !seen.contains(&t) {
            seen.push(t);
        }
    }
    seen.into_iter().map(|t| describe_txn(h, r, t)).collect()
}

pub(crate) fn simple(
    anomaly: Anomaly,
    summary: String,
    h: &History,
    r: &Resolution,
    ts: &[TxnId],
) -> Certificate {
    Certificate {
        anomaly,
        summary,
        cycle: Vec::new(),
        constraints: Vec::new(),
        cases: Vec::new(),
        txns: txns(h, r, ts),
    }
}

/// A session-order edge in words: `a` came before `b` in the session of transaction `t`.
pub(crate) fn session_text(h: &History, a: &str, b: &str, t: Option<TxnId>) -> String {
    let s = t
        .map(|t| printable(&h.session_names[h.session_of(t)]))
        .unwrap_or_default();
    format!("{a} came before {b} in session {s}")
}

/// "<anomaly>: cycle A -> B -> A", the summary of a cycle certificate.
pub(crate) fn cycle_summary(anomaly: Anomaly, cycle: &[CertEdge]) -> String {
    let names: Vec<&str> = cycle.iter().map(|e| e.from.as_str()).collect();
    format!(
        "{}: cycle {} -> {}",
        anomaly.name(),
        names.join(" -> "),
        names.first().copied().unwrap_or_default()
    )
}

/// Classifies a cycle by its edge kinds (Adya): by its anti-dependencies and write→read edges;
/// a cycle through a real-time edge is the real-time variant (a violation of strict
/// serializability only), one through a session edge (and none of real time) the `-process`
/// variant, as Elle names them.
pub fn classify(cycle: &[CertEdge]) -> Anomaly {
    let rw = cycle.iter().filter(|e| e.kind == EdgeKind::Rw).count();
    let wr = cycle.iter().filter(|e| e.kind == EdgeKind::Wr).count();
    let rt = cycle.iter().any(|e| e.kind == EdgeKind::RealTime);
    let so = cycle.iter().any(|e| e.kind == EdgeKind::Session);
    // Real time names a cycle before session order does: it is the stronger assumption.
    match (rw, rt, so) {
        (0, false, false) if wr == 0 => Anomaly::G0,
        (0, false, true) if wr == 0 => Anomaly::G0Process,
        (0, true, _) if wr == 0 => Anomaly::G0Realtime,
        (0, false, false) => Anomaly::G1c,
        (0, false, true) => Anomaly::G1cProcess,
        (0, true, _) => Anomaly::G1cRealtime,
        (1, false, false) => Anomaly::GSingle,
        (1, false, true) => Anomaly::GSingleProcess,
        (1, true, _) => Anomaly::GSingleRealtime,
        (_, false, false) => Anomaly::G2Item,
        (_, false, true) => Anomaly::G2ItemProcess,
        (_, true, _) => Anomaly::G2ItemRealtime,
    }
}

/// Classifies a cycle that snapshot isolation forbids (it never has two anti-dependencies in a
/// row): without anti-dependencies as [`classify`] does; with one, G-SIb, or a lost update when
/// the other edge is a write of the same key; with two around two reads, a long fork.
pub fn classify_si(cycle: &[CertEdge]) -> Anomaly {
    let rw = cycle.iter().filter(|e| e.kind == EdgeKind::Rw).count();
    let wr = cycle.iter().filter(|e| e.kind == EdgeKind::Wr).count();
    match rw {
        0 => classify(cycle),
        1 if cycle.len() == 2
            && cycle.iter().any(|e| e.kind == EdgeKind::Ww)
            && cycle[0].key == cycle[1].key =>
        {
            Anomaly::LostUpdate
        }
        1 => Anomaly::GSIb,
        2 if wr == 2 && cycle.len() == 4 => Anomaly::LongFork,
        _ => Anomaly::GSI,
    }
}

/// Turns graph edges into words; gate nodes (the "after chain i" points) are folded away.
pub(crate) struct Explainer<'a> {
    pub h: &'a History,
    pub r: &'a Resolution,
    pub b: &'a Built,
}

impl Explainer<'_> {
    pub fn node_name(&self, n: Node) -> String {
        match self.b.txn_of(n) {
            Some(t) => txn_name(self.h, t),
            None if n == INIT => "INIT".to_string(),
            // A gate stands for "after every reader of a chain's last version".
            None => match self.b.gate_of.get((n - self.b.first_gate) as usize) {
                Some(&(tail, k)) => format!(
                    "the readers of {}'s {}",
                    self.node_name(tail),
                    key_name(self.h, k)
                ),
                None => format!("node {n}"),
            },
        }
    }

    /// The external read of key k in node n (before n wrote k itself).
    fn read_of(&self, n: Node, k: u32) -> Option<usize> {
        let t = self.b.txn_of(n)?;
        let o = self.h.ops(t).find(|&o| self.h.op_key[o] == k)?;
        (self.h.op_kind[o] != OpKind::Write).then_some(o)
    }
    fn write_of(&self, n: Node, k: u32) -> Option<usize> {
        let t = self.b.txn_of(n)?;
        self.h
            .ops(t)
            .rev()
            .find(|&o| self.h.op_kind[o] == OpKind::Write && self.h.op_key[o] == k)
    }
    fn version_text(&self, o: usize) -> String {
        match self.r.read_from[o] {
            FROM_INIT => "the initial version".to_string(),
            FROM_AMBIGUOUS => format!(
                "{} (written by {})",
                self.h.value_text(o),
                candidates_text(self.h, self.r, o as u32)
            ),
            w => format!(
                "{} (written by {})",
                self.h.value_text(o),
                txn_name(self.h, self.r.op_txn[w as usize])
            ),
        }
    }

    pub fn edge(&self, u: Node, v: Node, l: Label) -> CertEdge {
        let (a, b) = (self.node_name(u), self.node_name(v));
        let key = (l.key != NO_KEY).then(|| key_name(self.h, l.key));
        let kn = key.clone().unwrap_or_default();
        let explanation = match l.kind {
            EdgeKind::Session => session_text(self.h, &a, &b, self.b.txn_of(u)),
            EdgeKind::RealTime => format!(
                "{a} committed before {b} started (real time, beyond the clock-drift allowance)"
            ),
            EdgeKind::Wr => match self.read_of(v, l.key) {
                Some(o) => format!("{b} read {kn} = {}, which {a} wrote", self.h.value_text(o)),
                None => format!("{b} read {kn} from {a}"),
            },
            EdgeKind::Ww => match (self.write_of(u, l.key), self.write_of(v, l.key)) {
                _ if u == INIT => format!("{b} overwrote the initial version of {kn}"),
                (Some(x), Some(y)) => format!(
                    "{b} overwrote the version of {kn} that {a} wrote ({} before {})",
                    self.h.value_text(x), self.h.value_text(y)
                ),
                _ => format!("{a}'s write of {kn} precedes {b}'s"),
            },
            EdgeKind::Rw if u >= self.b.first_gate => {
                format!("{a} read {kn}, each before {b} overwrote the version they read")
            }
            EdgeKind::Rw => match self.read_of(u, l.key) {
                Some(o) => format!(
                    "{a} read {kn} = {}, which {b} overwrote",
                    self.version_text(o)
                ),
                // No read of its own: a list read showed a's write directly after a version.
                None => format!(
                    "{a}'s write of {kn} directly follows a version that {b} overwrote (a list read shows it)"
                ),
            },
            EdgeKind::Carried => {
                format!("{a} precedes {b} through transactions garbage-collected in earlier rounds")
            }
            EdgeKind::Within => format!("{a} took its snapshot before it committed"),
        };
        CertEdge {
            from: a,
            to: b,
            kind: l.kind,
            key,
            explanation,
            forced_because: None,
            deduced: None,
            assumed: false,
        }
    }

    /// Words for a path of graph edges, folding gate nodes into the edge that passes them.
    pub fn path(
        &self,
        edges: &[(Node, Node, Label)],
        note: &dyn Fn(usize) -> EdgeNote,
    ) -> Vec<CertEdge> {
        let mut out = Vec::new();
        let mut i = 0;
        // Start the walk at a non-gate node so folding never wraps around.
        let n = edges.len();
        let start = (0..n)
            .find(|&j| edges[j].0 < self.b.first_gate)
            .unwrap_or(0);
        while i < n {
            let (u, mut v, l) = edges[(start + i) % n];
            i += 1;
            // Snapshot to commit of one transaction: the transaction itself, not a step.
            if l.kind == EdgeKind::Within {
                continue;
            }
            let mut nt = note((start + i - 1) % n);
            while v >= self.b.first_gate && i < n {
                let (_, v2, _) = edges[(start + i) % n];
                let n2 = note((start + i) % n);
                nt.assumed |= n2.assumed;
                if nt.forced_because.is_none() {
                    nt.forced_because = n2.forced_because;
                    nt.deduced = n2.deduced;
                }
                v = v2;
                i += 1;
            }
            // Session order is transitive: a run of it is one step.
            while l.kind == EdgeKind::Session
                && i < n
                && edges[(start + i) % n].2.kind == EdgeKind::Session
            {
                v = edges[(start + i) % n].1;
                i += 1;
            }
            let mut e = self.edge(u, v, l);
            e.forced_because = nt.forced_because;
            e.deduced = nt.deduced;
            e.assumed = nt.assumed;
            out.push(e);
        }
        out
    }

    pub fn txns_of_edges(&self, edges: &[(Node, Node, Label)]) -> Vec<CertTxn> {
        let ts: Vec<TxnId> = edges.iter().filter_map(|e| self.b.txn_of(e.0)).collect();
        txns(self.h, self.r, &ts)
    }
}

pub(crate) fn is_forced(l: &Label) -> bool {
    l.constraint != NO_CONSTRAINT
}
