//! PostgreSQL through `postgres`. SQLSTATE 40001 (serialization failure) and 40P01 (deadlock)
//! abort the transaction; a closed connection leaves its outcome unknown.

use crate::store::{Backend, Isolation, Store, StoreError};
use postgres::error::SqlState;
use postgres::{Client, NoTls, Statement};

pub struct Postgres {
    url: String,
    isolation: Isolation,
}

impl Postgres {
    pub fn new(url: &str, isolation: Isolation) -> Postgres {
        Postgres {
            url: url.to_string(),
            isolation,
        }
    }
}

fn classify(e: postgres::Error) -> StoreError {
    if let Some(code) = e.code() {
        if *code == SqlState::T_R_SERIALIZATION_FAILURE || *code == SqlState::T_R_DEADLOCK_DETECTED
        {
            return StoreError::Abort(format!("postgres {}: {e}", code.code()));
        }
        return StoreError::Fatal(format!("postgres {}: {e}", code.code()));
    }
    if e.is_closed() {
        return StoreError::Lost(format!("postgres: {e}"));
    }
    StoreError::Lost(format!("postgres: {e}"))
}

impl Backend for Postgres {
    fn describe(&self) -> String {
        format!("PostgreSQL {} ({})", self.url, self.isolation.sql())
    }
    fn setup(&self, initial: &[(String, String)]) -> Result<(), StoreError> {
        let mut c = Client::connect(&self.url, NoTls)
            .map_err(|e| StoreError::Fatal(format!("postgres connect: {e}")))?;
        c.batch_execute(
            "DROP TABLE IF EXISTS kv; CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT NOT NULL);",
        )
        .map_err(|e| StoreError::Fatal(format!("postgres: {e}")))?;
        let mut tx = c
            .transaction()
            .map_err(|e| StoreError::Fatal(format!("postgres: {e}")))?;
        let st = tx
            .prepare("INSERT INTO kv (k, v) VALUES ($1, $2)")
            .map_err(|e| StoreError::Fatal(format!("postgres: {e}")))?;
        for (k, v) in initial {
            tx.execute(&st, &[k, v])
                .map_err(|e| StoreError::Fatal(format!("postgres: {e}")))?;
        }
        tx.commit()
            .map_err(|e| StoreError::Fatal(format!("postgres: {e}")))
    }
    fn connect(&self) -> Result<Box<dyn Store>, StoreError> {
        let mut c = Client::connect(&self.url, NoTls)
            .map_err(|e| StoreError::Fatal(format!("postgres connect: {e}")))?;
        let read = c
            .prepare("SELECT v FROM kv WHERE k = $1")
            .map_err(classify)?;
        let write = c
            .prepare("INSERT INTO kv (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v")
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
