//! What a check answers: the verdict (with its certificate), statistics, per-phase timings and,
//! on ACCEPT when asked, a serial order; and the errors that are about the input, not the verdict.

use crate::stats::{CheckStats, Timings};
use crate::Certificate;
use serde::Serialize;

/// The answer about one history.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(tag = "verdict", rename_all = "UPPERCASE")]
pub enum Verdict {
    /// Some serial order explains every read.
    Accept,
    /// No serial order does; the certificate says why.
    Reject(Box<Certificate>),
    /// The solver's budget ran out before an answer.
    Unknown {
        /// Which limit stopped it.
        reason: String,
    },
}

impl Verdict {
    /// Whether the verdict is ACCEPT.
    pub fn is_accept(&self) -> bool {
        matches!(self, Verdict::Accept)
    }
    /// Whether the verdict is REJECT.
    pub fn is_reject(&self) -> bool {
        matches!(self, Verdict::Reject(_))
    }
    /// The certificate of a REJECT.
    pub fn certificate(&self) -> Option<&Certificate> {
        match self {
            Verdict::Reject(c) => Some(c),
            _ => None,
        }
    }
}

/// Everything one check says.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The level checked: serializable, strict-serializable, snapshot-isolation or
    /// strict-snapshot-isolation.
    pub level: &'static str,
    /// Whether each session was taken to run its transactions one after another (off with
    /// `Options::session_order`).
    pub session_order: bool,
    /// ACCEPT, REJECT with a certificate, or UNKNOWN.
    #[serde(flatten)]
    pub verdict: Verdict,
    /// What was built and decided.
    pub stats: CheckStats,
    /// Time per phase.
    pub timings: Timings,
    /// A serial order of the transactions (external ids), on ACCEPT when asked for; under
    /// snapshot isolation, their commit order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order: Option<Vec<u64>>,
    /// Under snapshot isolation, with the order: for each transaction in it, how many of the
    /// transactions before it its snapshot holds (it saw their writes, and no later ones').
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub snapshots: Vec<u32>,
    /// With the serial order, for each read whose value several writes wrote: the write it was
    /// matched to (empty when every read names its writer).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub matched: Vec<MatchedRead>,
    /// On a REJECT by a cycle, the other anomaly classes the graph shows, one certificate each
    /// (`Options::max_anomalies` in all, with the verdict's).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<crate::Certificate>,
}

impl Report {
    /// A report of `verdict` at `level` with what its phases measured, and nothing more
    /// (no certificates of other anomalies, no snapshots, no matched reads).
    pub(crate) fn plain(
        level: &'static str,
        verdict: Verdict,
        stats: CheckStats,
        timings: Timings,
        order: Option<Vec<u64>>,
    ) -> Report {
        Report {
            level,
            session_order: true,
            verdict,
            stats,
            timings,
            order,
            snapshots: Vec::new(),
            matched: Vec::new(),
            also: Vec::new(),
        }
    }
}

/// A read whose value several writes wrote, and the writer the serial order gives it.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct MatchedRead {
    /// The reading transaction (external id).
    pub txn: u64,
    /// The key read.
    pub key: String,
    /// The value read.
    pub value: u64,
    /// The writing transaction (external id); none for the initial value.
    pub writer: Option<u64>,
}

/// Errors that are about the input or the options, not the verdict.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    /// Strict serializability needs every transaction's start and commit time.
    #[error("transaction {txn} has no start/commit timestamp, which --strict needs (record timestamps, or check without --strict)")]
    MissingTimestamp {
        /// The transaction, as the history names it.
        txn: String,
    },
    /// What the level asked for cannot check on this history yet.
    #[error("{0}")]
    Unsupported(String),
}
