//! MariaDB / MySQL through `mysql`. Errors 1213 (deadlock) and 1205 (lock wait timeout) abort
//! the transaction; 1020 (record changed, MariaDB's snapshot-isolation check) too; an I/O or
//! driver error leaves its outcome unknown.

use crate::store::{Backend, Isolation, Promise, Promised, Store, StoreError};
use ::mysql::prelude::Queryable;
use ::mysql::{Conn, Opts};

pub(crate) struct MySql {
    url: String,
    isolation: Isolation,
}

impl MySql {
    pub(crate) fn new(url: &str, isolation: Isolation) -> MySql {
        MySql {
            url: url.to_string(),
            isolation,
        }
    }
    fn open(&self) -> Result<Conn, StoreError> {
        let opts =
            Opts::from_url(&self.url).map_err(|e| StoreError::Fatal(format!("mysql url: {e}")))?;
        // Refused, out of connections, shutting down: retried; bad credentials (1045), no such
        // database (1049): not.
        Conn::new(opts).map_err(|e| match &e {
            mysql::Error::MySqlError(me) if matches!(me.code, 1045 | 1049 | 1044) => {
                StoreError::Fatal(format!(
                    "mysql connect {} ({}): {}",
                    me.code, me.state, me.message
                ))
            }
            _ => match classify(e) {
                StoreError::Fatal(t) | StoreError::Abort(t) | StoreError::Lost(t) => {
                    StoreError::Lost(format!("connecting: {t}"))
                }
            },
        })
    }
}

/// Aborts: deadlock 1213, lock wait timeout 1205, record changed 1020 (MariaDB's snapshot
/// check), query interrupted 1317; lost: too many connections 1040, connection killed 1927,
/// server shutdown 1053, server gone or connection lost 2006/2013, and any I/O or driver
/// error (a COMMIT's outcome then unknown); anything else is fatal. Each with the server's
/// code, SQLSTATE and message.
fn classify(e: mysql::Error) -> StoreError {
    match &e {
        mysql::Error::MySqlError(me) => {
            let text = format!("mysql {} ({}): {}", me.code, me.state, me.message);
            match me.code {
                1213 | 1205 | 1020 | 1317 => StoreError::Abort(text),
                1040 | 1927 | 1053 | 2006 | 2013 => StoreError::Lost(text),
                _ => StoreError::Fatal(text),
            }
        }
        _ => StoreError::Lost(format!("mysql: {e}")),
    }
}

impl Backend for MySql {
    /// InnoDB: SERIALIZABLE is serializable (locking reads). REPEATABLE READ reads one snapshot
    /// but, unless `innodb_snapshot_isolation` is on (MariaDB 10.6.18+, off by default before
    /// 11.8), a write to a row changed since that snapshot goes through: a lost update, less
    /// than snapshot isolation. READ COMMITTED is read committed.
    fn promise(&self) -> Result<Promised, StoreError> {
        let sql = self.isolation.sql();
        Ok(match self.isolation {
            Isolation::Serializable => Promised {
                level: Promise::Serializable,
                why: format!("MariaDB/InnoDB's {sql} promises serializability"),
            },
            Isolation::ReadCommitted => Promised {
                level: Promise::ReadCommitted,
                why: format!("MariaDB/InnoDB's {sql} promises read committed"),
            },
            Isolation::RepeatableRead => {
                let mut c = self.open()?;
                // Absent (MySQL, older MariaDB) reads as off.
                let on: Option<i64> = c
                    .query_first("SELECT @@innodb_snapshot_isolation")
                    .unwrap_or(None);
                if on == Some(1) {
                    Promised {
                        level: Promise::SnapshotIsolation,
                        why: format!(
                            "MariaDB/InnoDB's {sql} with innodb_snapshot_isolation on promises snapshot isolation"
                        ),
                    }
                } else {
                    Promised {
                        level: Promise::Other,
                        why: format!(
                            "MariaDB/InnoDB's {sql} with innodb_snapshot_isolation off reads one snapshot but lets a write overwrite a row changed since it (a lost update): less than snapshot isolation"
                        ),
                    }
                }
            }
        })
    }
    fn describe(&self) -> String {
        format!(
            "MariaDB/MySQL {} ({})",
            crate::store::redact(&self.url),
            self.isolation.sql()
        )
    }
    fn setup(&self, initial: &[(String, String)]) -> Result<(), StoreError> {
        let mut c = self.open()?;
        let f = |e: mysql::Error| StoreError::Fatal(format!("mysql: {e}"));
        c.query_drop("DROP TABLE IF EXISTS krait_kv").map_err(f)?;
        c.query_drop(
            "CREATE TABLE krait_kv (k VARCHAR(255) PRIMARY KEY, v TEXT NOT NULL) ENGINE=InnoDB",
        )
        .map_err(f)?;
        for chunk in initial.chunks(500) {
            c.exec_batch(
                "INSERT INTO krait_kv (k, v) VALUES (?, ?)",
                chunk.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            )
            .map_err(f)?;
        }
        Ok(())
    }
    fn connect(&self) -> Result<Box<dyn Store>, StoreError> {
        let mut c = self.open()?;
        c.query_drop(format!(
            "SET SESSION TRANSACTION ISOLATION LEVEL {}",
            self.isolation.sql()
        ))
        .map_err(classify)?;
        Ok(Box::new(MyConn { c }))
    }
}

struct MyConn {
    c: Conn,
}

impl Store for MyConn {
    fn begin(&mut self) -> Result<(), StoreError> {
        self.c.query_drop("START TRANSACTION").map_err(classify)
    }
    fn read(&mut self, key: &str) -> Result<Option<String>, StoreError> {
        self.c
            .exec_first("SELECT v FROM krait_kv WHERE k = ?", (key,))
            .map_err(classify)
    }
    fn write(&mut self, key: &str, value: &str) -> Result<(), StoreError> {
        self.c
            .exec_drop(
                "INSERT INTO krait_kv (k, v) VALUES (?, ?) ON DUPLICATE KEY UPDATE v = VALUES(v)",
                (key, value),
            )
            .map_err(classify)
    }
    fn commit(&mut self) -> Result<(), StoreError> {
        self.c.query_drop("COMMIT").map_err(classify)
    }
    fn rollback(&mut self) {
        let _ = self.c.query_drop("ROLLBACK");
    }
}
