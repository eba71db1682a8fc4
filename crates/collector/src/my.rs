//! MariaDB / MySQL through `mysql`. Errors 1213 (deadlock) and 1205 (lock wait timeout) abort
//! the transaction; 1020 (record changed, MariaDB's snapshot-isolation check) too; an I/O or
//! driver error leaves its outcome unknown.

use crate::store::{Backend, Isolation, Store, StoreError};
use mysql::prelude::Queryable;
use mysql::{Conn, Opts};

pub struct MySql {
    url: String,
    isolation: Isolation,
}

impl MySql {
    pub fn new(url: &str, isolation: Isolation) -> MySql {
        MySql {
            url: url.to_string(),
            isolation,
        }
    }
    fn open(&self) -> Result<Conn, StoreError> {
        let opts =
            Opts::from_url(&self.url).map_err(|e| StoreError::Fatal(format!("mysql url: {e}")))?;
        Conn::new(opts).map_err(|e| StoreError::Fatal(format!("mysql connect: {e}")))
    }
}

fn classify(e: mysql::Error) -> StoreError {
    match &e {
        mysql::Error::MySqlError(me) if matches!(me.code, 1213 | 1205 | 1020) => {
            StoreError::Abort(format!("mysql {}: {}", me.code, me.message))
        }
        mysql::Error::MySqlError(me) => {
            StoreError::Fatal(format!("mysql {}: {}", me.code, me.message))
        }
        _ => StoreError::Lost(format!("mysql: {e}")),
    }
}

impl Backend for MySql {
    fn describe(&self) -> String {
        format!("MariaDB/MySQL {} ({})", self.url, self.isolation.sql())
    }
    fn setup(&self, initial: &[(String, String)]) -> Result<(), StoreError> {
        let mut c = self.open()?;
        let f = |e: mysql::Error| StoreError::Fatal(format!("mysql: {e}"));
        c.query_drop("DROP TABLE IF EXISTS kv").map_err(f)?;
        c.query_drop("CREATE TABLE kv (k VARCHAR(255) PRIMARY KEY, v TEXT NOT NULL) ENGINE=InnoDB")
            .map_err(f)?;
        for chunk in initial.chunks(500) {
            c.exec_batch(
                "INSERT INTO kv (k, v) VALUES (?, ?)",
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
            .exec_first("SELECT v FROM kv WHERE k = ?", (key,))
            .map_err(classify)
    }
    fn write(&mut self, key: &str, value: &str) -> Result<(), StoreError> {
        self.c
            .exec_drop(
                "INSERT INTO kv (k, v) VALUES (?, ?) ON DUPLICATE KEY UPDATE v = VALUES(v)",
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
