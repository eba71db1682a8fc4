//! PostgreSQL through `postgres`. Errors are classified by SQLSTATE (see `classify`): the
//! transaction aborted, the connection was lost (a COMMIT's outcome unknown), or fatal; each
//! with the server's message, detail and hint.

use crate::store::{Backend, Isolation, Promise, Promised, Store, StoreError};
use ::postgres::{Client, NoTls, Statement};

pub(crate) struct Postgres {
    url: String,
    isolation: Isolation,
}

impl Postgres {
    pub(crate) fn new(url: &str, isolation: Isolation) -> Postgres {
        Postgres {
            url: url.to_string(),
            isolation,
        }
    }
}

/// The server's own words: SQLSTATE, message, detail and hint (the driver's Display says only
/// "db error").
pub(crate) fn describe(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(d) => {
            let mut s = format!("postgres {}: {}", d.code().code(), d.message());
            if let Some(x) = d.detail() {
                s += &format!(" (detail: {x})");
            }
            if let Some(x) = d.hint() {
                s += &format!(" (hint: {x})");
            }
            s
        }
        None => format!("postgres: {e}{}", source_text(e)),
    }
}

fn source_text(e: &postgres::Error) -> String {
    use std::error::Error;
    e.source().map(|s| format!(": {s}")).unwrap_or_default()
}

/// What an error means for the transaction it ended. Aborts: the server rolled the transaction
/// back (serialization failure 40001, deadlock 40P01, lock or statement timeout 55P03/57014,
/// out of resources 53xxx — the serializable conflict pool among them); lost: the connection is
/// gone, so the outcome of a COMMIT in flight is unknown (class 08, admin or crash shutdown
/// 57P01/57P02/57P03, a terminated backend, or an I/O error); anything else is fatal.
fn classify(e: postgres::Error) -> StoreError {
    let text = describe(&e);
    if let Some(code) = e.code() {
        let c = code.code();
        return match c {
            "40001" | "40P01" | "55P03" | "57014" => StoreError::Abort(text),
            _ if c.starts_with("53") => StoreError::Abort(text),
            _ if c.starts_with("08") || c.starts_with("57P") => StoreError::Lost(text),
            _ => StoreError::Fatal(text),
        };
    }
    StoreError::Lost(text)
}

/// Connecting: a server that refuses or is out of connections is retried; bad credentials or
/// a database that does not exist are not.
fn classify_connect(e: postgres::Error) -> StoreError {
    let text = format!("connecting: {}", describe(&e));
    match e.code().map(|c| c.code()) {
        Some(c) if c.starts_with("28") || c == "3D000" => StoreError::Fatal(text),
        Some(c) if c.starts_with("53") || c.starts_with("57P") || c.starts_with("08") => {
            StoreError::Lost(text)
        }
        Some(_) => StoreError::Fatal(text),
        None => StoreError::Lost(text),
    }
}

impl Backend for Postgres {
    /// PostgreSQL's documentation (Transaction Isolation): SERIALIZABLE is serializable (SSI),
    /// REPEATABLE READ is snapshot isolation, READ COMMITTED is read committed.
    fn promise(&self) -> Result<Promised, StoreError> {
        let (level, what) = match self.isolation {
            Isolation::Serializable => (Promise::Serializable, "serializability"),
            Isolation::RepeatableRead => (Promise::SnapshotIsolation, "snapshot isolation"),
            Isolation::ReadCommitted => (Promise::ReadCommitted, "read committed"),
        };
        Ok(Promised {
            level,
            why: format!(
                "PostgreSQL's {} promises {what} (its documentation, Transaction Isolation)",
                self.isolation.sql()
            ),
        })
    }
    fn describe(&self) -> String {
        format!(
            "PostgreSQL {} ({})",
            crate::store::redact(&self.url),
            self.isolation.sql()
        )
    }
    fn setup(&self, initial: &[(String, String)]) -> Result<(), StoreError> {
        let mut c = Client::connect(&self.url, NoTls)
            .map_err(|e| StoreError::Fatal(format!("postgres connect: {e}")))?;
        c.batch_execute(
            "DROP TABLE IF EXISTS krait_kv; CREATE TABLE krait_kv (k TEXT PRIMARY KEY, v TEXT NOT NULL);",
        )
        .map_err(|e| StoreError::Fatal(format!("postgres: {e}")))?;
        let mut tx = c
            .transaction()
            .map_err(|e| StoreError::Fatal(format!("postgres: {e}")))?;
        let st = tx
            .prepare("INSERT INTO krait_kv (k, v) VALUES ($1, $2)")
            .map_err(|e| StoreError::Fatal(format!("postgres: {e}")))?;
        for (k, v) in initial {
            tx.execute(&st, &[k, v])
                .map_err(|e| StoreError::Fatal(format!("postgres: {e}")))?;
        }
        tx.commit()
            .map_err(|e| StoreError::Fatal(format!("postgres: {e}")))
    }
    fn connect(&self) -> Result<Box<dyn Store>, StoreError> {
        let mut c = Client::connect(&self.url, NoTls).map_err(classify_connect)?;
        let read = c
            .prepare("SELECT v FROM krait_kv WHERE k = $1")
            .map_err(classify)?;
        let write = c
            .prepare("INSERT INTO krait_kv (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v")
            .map_err(classify)?;
        Ok(Box::new(PgConn {
            c,
            read,
            write,
            begin: format!("BEGIN ISOLATION LEVEL {}", self.isolation.sql()),
        }))
    }
}

struct PgConn {
    c: Client,
    read: Statement,
    write: Statement,
    begin: String,
}

impl Store for PgConn {
    fn begin(&mut self) -> Result<(), StoreError> {
        self.c.batch_execute(&self.begin).map_err(classify)
    }
    fn read(&mut self, key: &str) -> Result<Option<String>, StoreError> {
        let rows = self.c.query(&self.read, &[&key]).map_err(classify)?;
        Ok(rows.first().map(|r| r.get::<_, String>(0)))
    }
    fn write(&mut self, key: &str, value: &str) -> Result<(), StoreError> {
        self.c
            .execute(&self.write, &[&key, &value])
            .map(|_| ())
            .map_err(classify)
    }
    fn commit(&mut self) -> Result<(), StoreError> {
        self.c.batch_execute("COMMIT").map_err(classify)
    }
    fn rollback(&mut self) {
        let _ = self.c.batch_execute("ROLLBACK");
    }
}
