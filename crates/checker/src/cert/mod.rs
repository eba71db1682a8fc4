//! Certificates: for every REJECT, a concrete and checkable explanation — the offending read, or
//! the cycle (each edge typed, with its key and the values involved), or the set of constraints
//! that admit no acyclic choice — named by its anomaly class after Adya. Only this module turns
//! what the checker found into words.

mod choices;
mod cycle;
mod deduce;
mod explain;
mod lists;
mod reasons;
mod weak;

pub(crate) use choices::no_writer_certificate;
pub(crate) use cycle::{cycle_certificates, unsat_certificate, Cyclic};
pub use explain::{classify, classify_si};
pub(crate) use explain::{describe_txn, Explainer};
pub(crate) use reasons::{certify, stale_read};
pub(crate) use weak::weak_certificate;

use crate::graph::EdgeKind;
use serde::Serialize;

/// The class of a violation, after Adya (G0 … G2-item), Elle (list-append anomalies) and the
/// checker's own reasons (unsatisfiable constraints, stale reads online).
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
    /// The same cycles, closed through session order (Elle's `-process` classes): the cycle
    /// shown uses a session edge, so it holds only if each session ran its transactions one
    /// after another (`--no-session-order` checks without that).
    #[serde(rename = "G0-process")]
    G0Process,
    /// G1c, closed through session order.
    #[serde(rename = "G1c-process")]
    G1cProcess,
    /// G-single, closed through session order (a session that missed its own earlier write or
    /// read an older version than it had seen).
    #[serde(rename = "G-single-process")]
    GSingleProcess,
    /// G2-item, closed through session order.
    #[serde(rename = "G2-item-process")]
    G2ItemProcess,
    /// The same cycles, closed only through real-time order (strict serializability).
    #[serde(rename = "G0-realtime")]
    G0Realtime,
    /// G1c, closed through real-time order.
    #[serde(rename = "G1c-realtime")]
    G1cRealtime,
    /// G-single, closed through real-time order (a stale read).
    #[serde(rename = "G-single-realtime")]
    GSingleRealtime,
    /// G2-item, closed through real-time order.
    #[serde(rename = "G2-item-realtime")]
    G2ItemRealtime,
    /// Snapshot isolation: a cycle with exactly one anti-dependency (Adya's G-SIb, missed
    /// effects; read skew is the smallest).
    #[serde(rename = "G-SIb")]
    GSIb,
    /// Snapshot isolation: two transactions each saw one of two independent writes and missed
    /// the other (two anti-dependencies, not in a row).
    #[serde(rename = "long-fork")]
    LongFork,
    /// Snapshot isolation: any other cycle whose anti-dependencies are never two in a row.
    #[serde(rename = "G-SI")]
    GSI,
    /// Read committed: a transaction read a version older than one an earlier read of it
    /// implied (its reads went back in the version order).
    #[serde(rename = "non-monotonic-read")]
    NonMonotonicRead,
    /// Read atomic: a transaction saw some of another's writes and missed others.
    #[serde(rename = "fractured-read")]
    FracturedRead,
    /// Read atomic: a transaction did not see a write made earlier in its own session.
    #[serde(rename = "session-guarantee-violation")]
    SessionGuarantee,
    /// Causal consistency: a transaction missed a write in its causal past.
    #[serde(rename = "causality-violation")]
    CausalityViolation,
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
    /// A read of a value several writes wrote, none of which can be the write it read.
    #[serde(rename = "no-possible-writer")]
    NoPossibleWriter,
    /// No single cycle: a set of constraints none of whose choices is acyclic.
    #[serde(rename = "unsatisfiable-constraints")]
    Unsatisfiable,
}

impl Anomaly {
    /// The class's name with a few words of what it means, for people.
    pub fn name(self) -> &'static str {
        match self {
            Anomaly::G0 => "G0 (write cycle)",
            Anomaly::G1a => "G1a (aborted read)",
            Anomaly::G1b => "G1b (intermediate read)",
            Anomaly::G1c => "G1c (circular information flow)",
            Anomaly::GSingle => "G-single (read skew: one anti-dependency)",
            Anomaly::G2Item => "G2-item (write skew: anti-dependency cycle)",
            Anomaly::G0Process => "G0-process (write cycle through session order)",
            Anomaly::G1cProcess => "G1c-process (circular information flow through session order)",
            Anomaly::GSingleProcess => {
                "G-single-process (one anti-dependency, closed through session order)"
            }
            Anomaly::G2ItemProcess => {
                "G2-item-process (anti-dependency cycle through session order)"
            }
            Anomaly::G0Realtime => "G0-realtime (write cycle through real-time order)",
            Anomaly::G1cRealtime => "G1c-realtime (information flow against real time)",
            Anomaly::GSingleRealtime => {
                "G-single-realtime (stale read: one anti-dependency against real time)"
            }
            Anomaly::G2ItemRealtime => {
                "G2-item-realtime (anti-dependency cycle through real-time order)"
            }
            Anomaly::GSIb => "G-SIb (missed effects, e.g. read skew: one anti-dependency)",
            Anomaly::LongFork => {
                "long fork (two snapshots each missed one of two independent writes)"
            }
            Anomaly::GSI => "G-SI (a dependency cycle with no two anti-dependencies in a row)",
            Anomaly::NonMonotonicRead => "non-monotonic read (a later read saw an older version)",
            Anomaly::FracturedRead => "fractured read (saw part of a transaction's writes)",
            Anomaly::SessionGuarantee => {
                "session guarantee violation (missed its own session's earlier write)"
            }
            Anomaly::CausalityViolation => "causality violation (missed a causally earlier write)",
            Anomaly::LostUpdate => "lost update",
            Anomaly::NonRepeatableRead => "non-repeatable read",
            Anomaly::OwnWriteNotSeen => "own write not seen",
            Anomaly::ReadOfNobody => "read of a value nobody wrote",
            Anomaly::GarbageRead => "garbage read",
            Anomaly::StaleRead => "stale read (of a superseded write)",
            Anomaly::DuplicateElements => "duplicate elements (a list read holds a value twice)",
            Anomaly::IncompatibleOrder => "incompatible order (a list read no version order gives)",
            Anomaly::NoPossibleWriter => {
                "no possible writer (every write of the value read is ruled out)"
            }
            Anomaly::Unsatisfiable => "unsatisfiable constraints (no acyclic version order)",
        }
    }
}

/// One edge of a certificate's cycle or path, in words.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct CertEdge {
    /// The transaction (or group of readers) the edge leaves.
    pub from: String,
    /// The transaction the edge enters.
    pub to: String,
    /// What orders them.
    pub kind: EdgeKind,
    /// The key the edge is about (none for session and real-time order).
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
    /// The cycle, its assumed edge marked.
    pub cycle: Vec<CertEdge>,
}

/// What a certificate says about one edge beyond its kind and key.
#[derive(Clone, Debug, Default)]
pub(crate) struct EdgeNote {
    pub forced_because: Option<String>,
    pub deduced: Option<Box<Deduction>>,
    pub assumed: bool,
}

/// A transaction a certificate names, with everything it did.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct CertTxn {
    /// Its name (`T` and the history's id).
    pub name: String,
    /// Its session, as the history names it (escaped for the terminal).
    pub session: String,
    /// committed, aborted or unknown.
    pub status: String,
    /// Its operations in words, reads with the transaction they read from.
    pub ops: Vec<String>,
}

/// One side of an either/or constraint.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct CertOption {
    /// "T3's chain of x before T7's".
    pub choice: String,
    /// The edges this side adds.
    pub edges: Vec<CertEdge>,
    /// A cycle this option closes with the known graph alone, if it does.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub closes_cycle: Vec<CertEdge>,
}

/// An either/or constraint on a key's version order: exactly one option holds.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct CertConstraint {
    /// The key whose versions it orders.
    pub key: String,
    /// The two orders of two chains of versions.
    pub options: [CertOption; 2],
}

/// One combination of choices for an unsatisfiable set of constraints, and the cycle it closes.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct CertCase {
    /// One option per constraint of the set, in words.
    pub choices: Vec<String>,
    /// The cycle these choices close.
    pub cycle: Vec<CertEdge>,
}

/// Why a history is rejected, checkable apart from the checker (`krait verify-certificate`).
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Certificate {
    /// The violation's class.
    pub anomaly: Anomaly,
    /// One sentence naming the transactions and what they did.
    pub summary: String,
    /// The cycle, edge by edge, each edge's `to` being the next edge's `from`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cycle: Vec<CertEdge>,
    /// No single cycle: constraints none of whose combinations of options is acyclic.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub constraints: Vec<CertConstraint>,
    /// For a small unsatisfiable set: every combination of choices with the cycle it closes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cases: Vec<CertCase>,
    /// The transactions named, with their operations.
    pub txns: Vec<CertTxn>,
}
