//! krait-transport: the hop between collectors on many hosts and one verifier. Each session's
//! records — the same JSON Lines records as its local log — go to a durable, ordered log, and
//! the verifier reads them back in the order each session wrote them. The log is NATS
//! JetStream today ([`nats`]); [`Sink`] and [`Source`] are what the collector and the verifier
//! see, so another log (Kafka) is one more implementation of them.
//!
//! Records and their guarantees: a transaction is published twice at most. Just before its
//! COMMIT goes out, a *pending* record (its operations, outcome unknown) is published and
//! acknowledged, so a collector that dies after sending COMMIT leaves the most the database
//! may have done, exactly like a log line cut short; once the outcome is known the *final*
//! record follows. A transaction that never asked to commit has only its final record
//! (aborted). A session that ends normally says so with an *end* record. Each record carries a
//! message id (session, transaction number, kind), so a
//! publish retried after a lost acknowledgement is stored once.

#![warn(missing_docs)]

mod assemble;
pub mod nats;

pub use assemble::{Assembler, Record};

/// Why a record could not be moved.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// The address is not one this crate understands.
    #[error("{0}")]
    BadAddress(String),
    /// The log could not be reached or refused the request (after retrying where that helps).
    #[error("{0}")]
    Unavailable(String),
}

/// What a record is to the verifier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The transaction's operations, published before its COMMIT is sent; its outcome is not
    /// known yet.
    Pending,
    /// The transaction's record with its outcome.
    Final,
    /// The session has ended normally: no record follows (without one, a silent session may
    /// be a lost host, and is given up on only after a timeout).
    End,
}

/// Where one session's records go, in order.
pub trait Sink: Send {
    /// Publishes record `n` (the session's n-th transaction) of kind `kind`, returning once
    /// the log has stored it durably (retrying while the log is unreachable).
    fn publish(&mut self, n: u64, kind: Kind, record: &str) -> Result<(), TransportError>;
}

/// Where the verifier reads records from: every session's, each session's in its order.
pub trait Source {
    /// The records that arrived within `wait`, at most `max` of them.
    fn poll(
        &mut self,
        wait: std::time::Duration,
        max: usize,
    ) -> Result<Vec<Record>, TransportError>;
    /// Whether every record stored when this was asked has been returned by `poll`.
    fn caught_up(&mut self) -> Result<bool, TransportError>;
    /// The position of the last record the log holds, and of the last one `poll` returned.
    fn coverage(&mut self) -> Result<Coverage, TransportError>;
    /// How long the log has been unreachable (None: it answered the last request). A reader
    /// waiting out an outage counts none of it as quiet: records may be stored meanwhile.
    fn unreachable_for(&self) -> Option<std::time::Duration> {
        None
    }
    /// What happened to the connection since the last call, in words (lost, regained, a
    /// record skipped and read again), for the person watching.
    fn take_notices(&mut self) -> Vec<String> {
        Vec::new()
    }
}

/// How far a reader got through the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Coverage {
    /// The position (stream sequence) of the last record the log holds.
    pub stored: u64,
    /// The position of the last record returned.
    pub read: u64,
}
