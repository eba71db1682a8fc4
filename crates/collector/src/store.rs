//! Stores: a database holding one table `krait_kv (k PRIMARY KEY, v)` — krait's own, so a
//! run never drops a table of the user's — seen through one connection
//! per session, with the database's own error codes mapped to what the history must record.
//!
//! SQL used (all backends): `SELECT v FROM krait_kv WHERE k = ?` for a read; an upsert for a write
//! (PostgreSQL `INSERT … ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v`, MariaDB
//! `INSERT … ON DUPLICATE KEY UPDATE v = VALUES(v)`, SQLite `INSERT … ON CONFLICT(k) DO UPDATE`);
//! transactions opened with the isolation level asked for.

use std::time::Duration;

/// The isolation level a run's transactions ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isolation {
    /// SERIALIZABLE: what krait checks for; any REJECT is the database's fault.
    Serializable,
    /// REPEATABLE READ (snapshot isolation in PostgreSQL): write skew may show up.
    RepeatableRead,
    /// READ COMMITTED: lost updates and worse may show up.
    ReadCommitted,
}

/// A name [`Isolation`]'s `from_str` does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown isolation {0:?}: serializable, repeatable-read or read-committed")]
pub struct UnknownIsolation(pub String);

impl std::str::FromStr for Isolation {
    type Err = UnknownIsolation;
    fn from_str(s: &str) -> Result<Self, UnknownIsolation> {
        match s {
            "serializable" => Ok(Isolation::Serializable),
            "repeatable-read" | "snapshot" => Ok(Isolation::RepeatableRead),
            "read-committed" => Ok(Isolation::ReadCommitted),
            _ => Err(UnknownIsolation(s.to_string())),
        }
    }
}

impl Isolation {
    /// The level as SQL spells it, e.g. `REPEATABLE READ`.
    pub fn sql(self) -> &'static str {
        match self {
            Isolation::Serializable => "SERIALIZABLE",
            Isolation::RepeatableRead => "REPEATABLE READ",
            Isolation::ReadCommitted => "READ COMMITTED",
        }
    }
}

/// The isolation a store documents for the level its transactions ask for: what a recorded
/// history should be checked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Promise {
    /// Serializability.
    Serializable,
    /// Snapshot isolation.
    SnapshotIsolation,
    /// Read committed (checked once krait checks the weak levels).
    ReadCommitted,
    /// Less than snapshot isolation and more than read committed, or undocumented.
    Other,
}

/// A store's [`Promise`], with where it comes from in words ("PostgreSQL's REPEATABLE READ is
/// snapshot isolation").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Promised {
    /// The level promised.
    pub level: Promise,
    /// Why: the store, the level asked for, and what its documentation says it gives.
    pub why: String,
}

/// How a database operation failed, as the history must record it.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum StoreError {
    /// The database aborted the transaction (serialization failure, deadlock, busy): it did not
    /// commit, and may be retried.
    #[error("aborted by the database: {0}")]
    Abort(String),
    /// The connection failed: whether the transaction committed is unknown.
    #[error("connection lost: {0}")]
    Lost(String),
    /// Anything else (bad configuration, SQL error): the run stops.
    #[error("{0}")]
    Fatal(String),
}

/// One connection, one transaction at a time.
pub trait Store: Send {
    /// Opens a transaction at the backend's isolation level.
    fn begin(&mut self) -> Result<(), StoreError>;
    /// The stored value of `key` (`None`: no such row).
    fn read(&mut self, key: &str) -> Result<Option<String>, StoreError>;
    /// Upserts `key`.
    fn write(&mut self, key: &str, value: &str) -> Result<(), StoreError>;
    /// Commits; [`StoreError::Lost`] here means the outcome is unknown.
    fn commit(&mut self) -> Result<(), StoreError>;
    /// Ends a failed transaction; errors here are ignored by callers.
    fn rollback(&mut self);
}

/// Where sessions connect to.
pub trait Backend: Send + Sync {
    /// The database and its version or address, for the user (passwords redacted).
    fn describe(&self) -> String;
    /// Creates (or empties) the table and loads the initial rows.
    fn setup(&self, initial: &[(String, String)]) -> Result<(), StoreError>;
    /// A new connection (one per session).
    fn connect(&self) -> Result<Box<dyn Store>, StoreError>;
    /// What the store promises at the level asked for (it may ask the server how it is set up).
    fn promise(&self) -> Result<Promised, StoreError>;
}

pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// A database URL fit to print: its password, if any, replaced by `***`.
pub(crate) fn redact(url: &str) -> String {
    let Some(scheme) = url.find("://") else {
        return url.to_string();
    };
    let rest = &url[scheme + 3..];
    let Some(at) = rest.find('@') else {
        return url.to_string();
    };
    match rest[..at].find(':') {
        Some(colon) => format!(
            "{}{}:***{}",
            &url[..scheme + 3],
            &rest[..colon],
            &rest[at..]
        ),
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn passwords_are_never_printed() {
        assert_eq!(
            super::redact("postgres://alice:s3cret@db:5432/app"),
            "postgres://alice:***@db:5432/app"
        );
        assert_eq!(
            super::redact("mysql://root@127.0.0.1:3306/x"),
            "mysql://root@127.0.0.1:3306/x"
        );
        assert_eq!(super::redact("sqlite:/tmp/x.db"), "sqlite:/tmp/x.db");
    }
}
