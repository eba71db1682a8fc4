//! Certificates: for every REJECT, a concrete and checkable explanation — the offending read, or
//! the cycle (each edge typed, with its key and the values involved), or the set of constraints
//! that admit no acyclic choice — named by its anomaly class after Adya.

use crate::build::{Built, INIT};
use crate::graph::{EdgeKind, Label, Node, NO_CONSTRAINT, NO_KEY};
use krait_history::{History, OpKind, ReadProblem, Resolution, TxnId, FROM_INIT, FROM_NOBODY};
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Anomaly {
    /// Write cycle: only ww edges (with session/real-time order).
    G0,
    /// Aborted read.
    G1a,
    /// Intermediate read.
    G1b,
    /// Cycle of ww/wr edges.
    G1c,
    /// Cycle with exactly one anti-dependency.
    #[serde(rename = "G-single")]
    GSingle,
    /// Cycle with two or more anti-dependencies.
    #[serde(rename = "G2-item")]
    G2Item,
    /// The same cycles, closed only through real-time order (strict serializability).
    #[serde(rename = "G0-realtime")]
    G0Realtime,
    #[serde(rename = "G1c-realtime")]
    G1cRealtime,
    #[serde(rename = "G-single-realtime")]
    GSingleRealtime,
    #[serde(rename = "G2-item-realtime")]
    G2ItemRealtime,
    /// Two transactions read the same version and both overwrote it.
    #[serde(rename = "lost-update")]
    LostUpdate,
    /// A transaction read two different versions of one key.
    #[serde(rename = "non-repeatable-read")]
    NonRepeatableRead,
    /// A transaction did not see its own earlier write.
    #[serde(rename = "own-write-not-seen")]
    OwnWriteNotSeen,
    /// A read of a value that no transaction wrote (or only a later write of the reader).
    #[serde(rename = "read-of-unwritten")]
    ReadOfNobody,
    /// Online mode: a read of a write that garbage collection had deleted as superseded.
    #[serde(rename = "stale-read")]
    StaleRead,
    /// The log's claims about a read contradict the write it names.
    #[serde(rename = "garbage-read")]
    GarbageRead,
    /// A list-append read returned one element twice.
    #[serde(rename = "duplicate-elements")]
    DuplicateElements,
    /// A list-append read whose order no version order can give: it skips or reorders appends
    /// of one transaction, or puts something before a transaction's first append.
    #[serde(rename = "incompatible-order")]
    IncompatibleOrder,
    /// No single cycle: a set of constraints none of whose choices is acyclic.
    #[serde(rename = "unsatisfiable-constraints")]
    Unsatisfiable,
}

impl Anomaly {
    pub fn name(self) -> &'static str {
        match self {
            Anomaly::G0 => "G0 (write cycle)",
            Anomaly::G1a => "G1a (aborted read)",
            Anomaly::G1b => "G1b (intermediate read)",
            Anomaly::G1c => "G1c (circular information flow)",
            Anomaly::GSingle => "G-single (read skew: one anti-dependency)",
            Anomaly::G2Item => "G2-item (write skew: anti-dependency cycle)",
            Anomaly::G0Realtime => "G0-realtime (write cycle through real-time order)",
            Anomaly::G1cRealtime => "G1c-realtime (information flow against real time)",
            Anomaly::GSingleRealtime => {
                "G-single-realtime (stale read: one anti-dependency against real time)"
            }
            Anomaly::G2ItemRealtime => {
                "G2-item-realtime (anti-dependency cycle through real-time order)"
            }
            Anomaly::LostUpdate => "lost update",
            Anomaly::NonRepeatableRead => "non-repeatable read",
            Anomaly::OwnWriteNotSeen => "own write not seen",
            Anomaly::ReadOfNobody => "read of a value nobody wrote",
            Anomaly::GarbageRead => "garbage read",
            Anomaly::StaleRead => "stale read (of a superseded write)",
            Anomaly::DuplicateElements => "duplicate elements (a list read holds a value twice)",
            Anomaly::IncompatibleOrder => "incompatible order (a list read no version order gives)",
            Anomaly::Unsatisfiable => "unsatisfiable constraints (no acyclic version order)",
        }
    }
}

#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct CertEdge {
    pub from: String,
    pub to: String,
    pub kind: EdgeKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The edge in words.
    pub explanation: String,
    /// For an edge the checker deduced (a version order it had to choose), why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forced_because: Option<String>,
    /// The same, checkable: the cycle the other order would close.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deduced: Option<Box<Deduction>>,
    /// Inside a deduction or a case: the version order assumed, not a fact.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub assumed: bool,
}

/// Why a deduced edge holds: assuming the other version order (the edge marked `assumed`),
/// this cycle closes, using only what was known before the edge was deduced (its own deduced
/// edges explained the same way, from strictly earlier ones).
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Deduction {
    pub cycle: Vec<CertEdge>,
}

/// What a certificate says about one edge beyond its kind and key.
#[derive(Clone, Debug, Default)]
pub struct EdgeNote {
    pub forced_because: Option<String>,
    pub deduced: Option<Box<Deduction>>,
    pub assumed: bool,
}

#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct CertTxn {
    pub name: String,
    pub session: String,
    pub status: String,
    pub ops: Vec<String>,
}

#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct CertOption {
    /// "T3's chain of x before T7's".
    pub choice: String,
    pub edges: Vec<CertEdge>,
    /// A cycle this option closes with the known graph alone, if it does.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub closes_cycle: Vec<CertEdge>,
}

#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct CertConstraint {
    pub key: String,
    pub options: [CertOption; 2],
}

/// One combination of choices for an unsatisfiable set of constraints, and the cycle it closes.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct CertCase {
    pub choices: Vec<String>,
    pub cycle: Vec<CertEdge>,
}

#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Certificate {
    pub anomaly: Anomaly,
    pub summary: String,
    /// The cycle, edge by edge, each edge's `to` being the next edge's `from`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cycle: Vec<CertEdge>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub constraints: Vec<CertConstraint>,
    /// For a small unsatisfiable set: every combination of choices with the cycle it closes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cases: Vec<CertCase>,
    /// The transactions named, with their operations.
    pub txns: Vec<CertTxn>,
}

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

fn describe_read(h: &History, r: &Resolution, o: u32) -> String {
    let k = key_name(h, h.op_key[o as usize]);
    match r.read_from[o as usize] {
        FROM_INIT => format!("r({k}) = initial"),
        FROM_NOBODY => format!("r({k}) = {} (written by nobody)", h.op_value[o as usize]),
        w => format!(
            "r({k}) = {} from {}",
            h.op_value[o as usize],
            txn_name(h, r.op_txn[w as usize])
        ),
    }
}

pub(crate) fn describe_txn(h: &History, r: &Resolution, t: TxnId) -> CertTxn {
    let ops = h
        .ops(t)
        .map(|o| match h.op_kind[o] {
            OpKind::Write => format!("w({}) = {}", key_name(h, h.op_key[o]), h.op_value[o]),
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

fn txns(h: &History, r: &Resolution, ts: &[TxnId]) -> Vec<CertTxn> {
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

impl Certificate {
    pub fn read_problem(h: &History, r: &Resolution, o: u32, p: &ReadProblem) -> Certificate {
        let t = r.op_txn[o as usize];
        let k = key_name(h, h.op_key[o as usize]);
        let summary = match p {
            ReadProblem::WrongWriter { claimed, actual } => format!(
                "{} read {k} naming write {:#x} of transaction {claimed}, but that write belongs to T{actual}",
                txn_name(h, t),
                h.op_value[o as usize]
            ),
            ReadProblem::ValueMismatch { read, written } => format!(
                "{} read {k} with value hash {read:#x}, but the write it names wrote value hash {written:#x}: the database returned a value nobody wrote",
                txn_name(h, t)
            ),
            ReadProblem::AmbiguousDelete => {
                format!("{} read {k} naming a delete, which the log format cannot attribute to one writer", txn_name(h, t))
            }
        };
        let mut ts = vec![t];
        if let Some(w) = r.writer_txn(o) {
            ts.push(w);
        }
        simple(Anomaly::GarbageRead, summary, h, r, &ts)
    }

    pub fn read_of_nobody(h: &History, r: &Resolution, o: u32) -> Certificate {
        let t = r.op_txn[o as usize];
        let k = key_name(h, h.op_key[o as usize]);
        let summary = match &h.cobra {
            Some(c) if c.read_writer[o as usize] != 0 => {
                let claimed = c.read_writer[o as usize];
                if h.txn_index.contains_key(&claimed) {
                    format!(
                        "{} read {k} from write {:#x} of T{claimed}, but T{claimed} made no such write",
                        txn_name(h, t),
                        h.op_value[o as usize]
                    )
                } else {
                    format!(
                        "{} read {k} from transaction {claimed}, which is not in the history: a write by no committed transaction (aborted, never committed, or the history is incomplete)",
                        txn_name(h, t)
                    )
                }
            }
            _ => format!(
                "{} read {k} = {}, a value no transaction in the history wrote (garbage, or an incomplete history)",
                txn_name(h, t),
                h.op_value[o as usize]
            ),
        };
        simple(Anomaly::ReadOfNobody, summary, h, r, &[t])
    }

    pub fn aborted_read(h: &History, r: &Resolution, o: u32) -> Certificate {
        let t = r.op_txn[o as usize];
        let w = r.writer_txn(o).unwrap();
        let k = key_name(h, h.op_key[o as usize]);
        let summary = format!(
            "{} read {k} = {}, written by {}, which {}",
            txn_name(h, t),
            h.op_value[o as usize],
            txn_name(h, w),
            if h.txn_status[w as usize] == krait_history::TxnStatus::Aborted {
                "aborted"
            } else {
                "did not commit"
            }
        );
        simple(Anomaly::G1a, summary, h, r, &[t, w])
    }

    pub fn intermediate_read(h: &History, r: &Resolution, o: u32) -> Certificate {
        let t = r.op_txn[o as usize];
        let w = r.writer_txn(o).unwrap();
        let k = key_name(h, h.op_key[o as usize]);
        let summary = format!(
            "{} read {k} = {}, an intermediate version: {} wrote {k} again before committing",
            txn_name(h, t),
            h.op_value[o as usize],
            txn_name(h, w)
        );
        simple(Anomaly::G1b, summary, h, r, &[t, w])
    }

    pub fn own_write_not_seen(
        h: &History,
        r: &Resolution,
        t: TxnId,
        o: u32,
        own: u32,
    ) -> Certificate {
        let k = key_name(h, h.op_key[o as usize]);
        let seen = match r.read_from[o as usize] {
            FROM_INIT => "the initial value".to_string(),
            FROM_NOBODY => format!("{} (written by nobody)", h.op_value[o as usize]),
            x if r.op_txn[x as usize] == t => {
                format!("its own earlier write {}", h.op_value[x as usize])
            }
            x => format!(
                "{} from {}",
                h.op_value[x as usize],
                txn_name(h, r.op_txn[x as usize])
            ),
        };
        let summary = format!(
            "{} wrote {k} = {} and then read {k} as {seen}: a transaction must see its own latest write",
            txn_name(h, t),
            h.op_value[own as usize]
        );
        let mut ts = vec![t];
        if let Some(w) = r.writer_txn(o) {
            ts.push(w);
        }
        simple(Anomaly::OwnWriteNotSeen, summary, h, r, &ts)
    }

    pub fn future_read(h: &History, r: &Resolution, t: TxnId, o: u32) -> Certificate {
        let k = key_name(h, h.op_key[o as usize]);
        let summary = format!(
            "{} read {k} = {}, a value it only writes later: no execution can produce this",
            txn_name(h, t),
            h.op_value[o as usize]
        );
        simple(Anomaly::ReadOfNobody, summary, h, r, &[t])
    }

    pub fn non_repeatable(
        h: &History,
        r: &Resolution,
        t: TxnId,
        k: u32,
        a: u32,
        b: u32,
    ) -> Certificate {
        let src = |x: u32| match x {
            FROM_INIT => "the initial version".to_string(),
            x => format!(
                "{} (from {})",
                h.op_value[x as usize],
                txn_name(h, r.op_txn[x as usize])
            ),
        };
        let summary = format!(
            "{} read {} twice and saw two versions: {} and then {}",
            txn_name(h, t),
            key_name(h, k),
            src(a),
            src(b)
        );
        let mut ts = vec![t];
        for x in [a, b] {
            if x != FROM_INIT {
                ts.push(r.op_txn[x as usize]);
            }
        }
        simple(Anomaly::NonRepeatableRead, summary, h, r, &ts)
    }

    pub fn lost_update(
        h: &History,
        r: &Resolution,
        k: u32,
        from: Option<TxnId>,
        t1: TxnId,
        t2: TxnId,
    ) -> Certificate {
        let kn = key_name(h, k);
        let version = match from {
            Some(w) => format!("the version of {kn} written by {}", txn_name(h, w)),
            None => format!("the initial version of {kn}"),
        };
        let summary = format!(
            "{} and {} both read {version} and both overwrote it: one of the updates is lost",
            txn_name(h, t1),
            txn_name(h, t2)
        );
        let (n1, n2) = (txn_name(h, t1), txn_name(h, t2));
        let cycle = vec![
            CertEdge {
                from: n1.clone(),
                to: n2.clone(),
                kind: EdgeKind::Rw,
                key: Some(kn.clone()),
                explanation: format!("{n1} read {version}, which {n2} overwrote"),
                forced_because: None,
                deduced: None,
                assumed: false,
            },
            CertEdge {
                from: n2.clone(),
                to: n1.clone(),
                kind: EdgeKind::Rw,
                key: Some(kn.clone()),
                explanation: format!("{n2} read {version}, which {n1} overwrote"),
                forced_because: None,
                deduced: None,
                assumed: false,
            },
        ];
        let mut ts = vec![t1, t2];
        if let Some(w) = from {
            ts.push(w);
        }
        Certificate {
            anomaly: Anomaly::LostUpdate,
            summary,
            cycle,
            constraints: Vec::new(),
            cases: Vec::new(),
            txns: txns(h, r, &ts),
        }
    }
}

/// Classifies a cycle by its edge kinds (Adya): session edges do not count; a cycle that needs a
/// real-time edge is the real-time variant (a violation of strict serializability only).
pub fn classify(cycle: &[CertEdge]) -> Anomaly {
    let rw = cycle.iter().filter(|e| e.kind == EdgeKind::Rw).count();
    let wr = cycle.iter().filter(|e| e.kind == EdgeKind::Wr).count();
    let rt = cycle.iter().any(|e| e.kind == EdgeKind::RealTime);
    match (rw, rt) {
        (0, false) if wr == 0 => Anomaly::G0,
        (0, true) if wr == 0 => Anomaly::G0Realtime,
        (0, false) => Anomaly::G1c,
        (0, true) => Anomaly::G1cRealtime,
        (1, false) => Anomaly::GSingle,
        (1, true) => Anomaly::GSingleRealtime,
        (_, false) => Anomaly::G2Item,
        (_, true) => Anomaly::G2ItemRealtime,
    }
}

/// Turns graph edges into words; gate nodes (the "after chain i" points) are folded away.
pub struct Explainer<'a> {
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
            w => format!(
                "{} (written by {})",
                self.h.op_value[o],
                txn_name(self.h, self.r.op_txn[w as usize])
            ),
        }
    }

    pub fn edge(&self, u: Node, v: Node, l: Label) -> CertEdge {
        let (a, b) = (self.node_name(u), self.node_name(v));
        let key = (l.key != NO_KEY).then(|| key_name(self.h, l.key));
        let kn = key.clone().unwrap_or_default();
        let explanation = match l.kind {
            EdgeKind::Session => {
                let s = self
                    .b
                    .txn_of(u)
                    .map(|t| printable(&self.h.session_names[self.h.session_of(t)]))
                    .unwrap_or_default();
                format!("{a} came before {b} in session {s}")
            }
            EdgeKind::RealTime => format!(
                "{a} committed before {b} started (real time, beyond the clock-drift allowance)"
            ),
            EdgeKind::Wr => match self.read_of(v, l.key) {
                Some(o) => format!("{b} read {kn} = {}, which {a} wrote", self.h.op_value[o]),
                None => format!("{b} read {kn} from {a}"),
            },
            EdgeKind::Ww => match (self.write_of(u, l.key), self.write_of(v, l.key)) {
                _ if u == INIT => format!("{b} overwrote the initial version of {kn}"),
                (Some(x), Some(y)) => format!(
                    "{b} overwrote the version of {kn} that {a} wrote ({} before {})",
                    self.h.op_value[x], self.h.op_value[y]
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
            let mut nt = note((start + i) % n);
            i += 1;
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
