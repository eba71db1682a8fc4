//! SQLite through `rusqlite` (bundled): the embedded default. SQLite's transactions are
//! serializable; SQLITE_BUSY and SQLITE_LOCKED (a writer in the way) and SQLITE_PROTOCOL (a lock
//! race lost for seconds) abort the transaction.

use crate::store::{Backend, Isolation, Promise, Promised, Store, StoreError, BUSY_TIMEOUT};
use rusqlite::{Connection, ErrorCode, OptionalExtension};
use std::path::PathBuf;

pub(crate) struct Sqlite {
    path: PathBuf,
}

impl Sqlite {
    pub(crate) fn new(path: PathBuf, isolation: Isolation) -> Result<Sqlite, StoreError> {
        if isolation != Isolation::Serializable {
            return Err(StoreError::Fatal(
                "SQLite only offers serializable transactions".into(),
            ));
        }
        Ok(Sqlite { path })
    }
    /// A connection in WAL mode. Setting the mode reads the database, which a writer on a
    /// loaded machine can hold past the busy timeout: that is a connection to try again
    /// (`Lost`, which sessions retry with backoff), not a failed run.
    fn open(&self) -> Result<Connection, StoreError> {
        let c = Connection::open(&self.path).map_err(fatal)?;
        c.busy_timeout(BUSY_TIMEOUT).map_err(fatal)?;
        c.pragma_update(None, "journal_mode", "WAL")
            .map_err(retry_or_fatal)?;
        c.pragma_update(None, "synchronous", "NORMAL")
            .map_err(retry_or_fatal)?;
        Ok(c)
    }
}

fn fatal(e: rusqlite::Error) -> StoreError {
    StoreError::Fatal(format!("sqlite: {e}"))
}

fn retry_or_fatal(e: rusqlite::Error) -> StoreError {
    match classify(e) {
        StoreError::Abort(e) => StoreError::Lost(e),
        other => other,
    }
}

/// SQLITE_PROTOCOL is a WAL lock race lost dozens of times over seconds (a loaded machine), and
/// SQLite returns it only when starting a transaction, so nothing of it was done: an abort.
fn classify(e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy)
        | Some(ErrorCode::DatabaseLocked)
        | Some(ErrorCode::FileLockingProtocolFailed) => StoreError::Abort(format!("sqlite: {e}")),
        _ => fatal(e),
    }
}

impl Backend for Sqlite {
    /// SQLite runs one writer at a time: its transactions are serializable (its documentation,
    /// Isolation In SQLite); krait opens it at no other level.
    fn promise(&self) -> Result<Promised, StoreError> {
        Ok(Promised {
            level: Promise::Serializable,
            why: "SQLite promises serializability (its documentation, Isolation In SQLite)".into(),
        })
    }
    fn describe(&self) -> String {
        format!("SQLite {} ({})", rusqlite::version(), self.path.display())
    }
    fn setup(&self, initial: &[(String, String)]) -> Result<(), StoreError> {
        let mut c = self.open()?;
        c.execute_batch(
            "DROP TABLE IF EXISTS krait_kv; CREATE TABLE krait_kv (k TEXT PRIMARY KEY, v TEXT NOT NULL);",
        )
        .map_err(fatal)?;
        let tx = c.transaction().map_err(fatal)?;
        {
            let mut st = tx
                .prepare("INSERT INTO krait_kv (k, v) VALUES (?1, ?2)")
                .map_err(fatal)?;
            for (k, v) in initial {
                st.execute((k, v)).map_err(fatal)?;
            }
        }
        tx.commit().map_err(fatal)
    }
    fn connect(&self) -> Result<Box<dyn Store>, StoreError> {
        Ok(Box::new(SqliteConn { c: self.open()? }))
    }
}

struct SqliteConn {
    c: Connection,
}

impl Store for SqliteConn {
    fn begin(&mut self) -> Result<(), StoreError> {
        // DEFERRED: readers run concurrently; a writer that finds another writer gets BUSY.
        self.c.execute_batch("BEGIN DEFERRED").map_err(classify)
    }
    fn read(&mut self, key: &str) -> Result<Option<String>, StoreError> {
        let mut st = self
            .c
            .prepare_cached("SELECT v FROM krait_kv WHERE k = ?1")
            .map_err(classify)?;
        st.query_row([key], |r| r.get::<_, String>(0))
            .optional()
            .map_err(classify)
    }
    fn write(&mut self, key: &str, value: &str) -> Result<(), StoreError> {
        let mut st = self
            .c
            .prepare_cached(
                "INSERT INTO krait_kv (k, v) VALUES (?1, ?2) ON CONFLICT(k) DO UPDATE SET v = excluded.v",
            )
            .map_err(classify)?;
        st.execute((key, value)).map(|_| ()).map_err(classify)
    }
    fn commit(&mut self) -> Result<(), StoreError> {
        self.c.execute_batch("COMMIT").map_err(classify)
    }
    fn rollback(&mut self) {
        let _ = self.c.execute_batch("ROLLBACK");
    }
}
