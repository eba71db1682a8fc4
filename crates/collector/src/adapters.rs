//! Recorded access to the common shape "a row of table T by its primary key", over the
//! `rusqlite`, `postgres` and `mysql` clients' transactions: [`RecTxn::get`], [`RecTxn::put`]
//! and [`RecTxn::update_with`] run the statement and record it in one call, so an application
//! written against a key-value view of its tables records its history without handling tags.
//!
//! [`RecTxn::fence`] makes a transaction a fence (a read-modify-write of one agreed row that
//! every session does every N transactions), which gives online checking (`krait watch`,
//! `--round-size`) the epochs its garbage collection needs.
//!
//! Deletes are left out on purpose: a later read that finds no row could have read the initial
//! state or any delete, which the history cannot say; write a tombstone value instead.

use crate::recorder::RecTxn;
use krait_history::NATIVE_FENCE_KEY;
use std::io;

/// A table read and written by primary key: its name, its key column and its value column
/// (text). History keys are `TABLE/KEY`.
#[derive(Clone, Debug)]
pub struct Table {
    name: String,
    key: String,
    value: String,
    tagged: bool,
}

fn identifier(s: &str) -> io::Result<String> {
    let mut chars = s.chars();
    let ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(s.to_string())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{s:?} is not a plain SQL identifier (letters, digits, '_')"),
        ))
    }
}

impl Table {
    /// Table `name` with key column `key` and value column `value`; values are stored tagged
    /// (`k<id>|<value>`, see [`RecTxn::tag`]) so every read names its write.
    pub fn new(name: &str, key: &str, value: &str) -> io::Result<Table> {
        Ok(Table {
            name: identifier(name)?,
            key: identifier(key)?,
            value: identifier(value)?,
            tagged: true,
        })
    }

    /// Store the application's values as they are, untagged; the history then has repeated
    /// values wherever the application writes one value twice (checked exactly, at more cost).
    pub fn untagged(mut self) -> Table {
        self.tagged = false;
        self
    }

    fn history_key(&self, key: &str) -> String {
        format!("{}/{key}", self.name)
    }
}

/// An open database transaction that can read and write a [`Table`]'s rows.
pub trait Rows {
    /// The value column of the row with this key, if there is one.
    fn select(&mut self, t: &Table, key: &str) -> Result<Option<String>, String>;
    /// Inserts the row, or sets its value if it exists.
    fn upsert(&mut self, t: &Table, key: &str, value: &str) -> Result<(), String>;
}

impl Rows for rusqlite::Transaction<'_> {
    fn select(&mut self, t: &Table, key: &str) -> Result<Option<String>, String> {
        use rusqlite::OptionalExtension;
        let sql = format!("SELECT {} FROM {} WHERE {} = ?1", t.value, t.name, t.key);
        self.query_row(&sql, [key], |r| r.get(0))
            .optional()
            .map_err(|e| e.to_string())
    }
    fn upsert(&mut self, t: &Table, key: &str, value: &str) -> Result<(), String> {
        let sql = format!(
            "INSERT INTO {0} ({1}, {2}) VALUES (?1, ?2) ON CONFLICT ({1}) DO UPDATE SET {2} = excluded.{2}",
            t.name, t.key, t.value
        );
        self.execute(&sql, [key, value])
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}

impl Rows for postgres::Transaction<'_> {
    fn select(&mut self, t: &Table, key: &str) -> Result<Option<String>, String> {
        let sql = format!("SELECT {} FROM {} WHERE {} = $1", t.value, t.name, t.key);
        self.query_opt(&sql, &[&key])
            .map(|r| r.map(|r| r.get(0)))
            .map_err(|e| crate::postgres::describe(&e))
    }
    fn upsert(&mut self, t: &Table, key: &str, value: &str) -> Result<(), String> {
        let sql = format!(
            "INSERT INTO {0} ({1}, {2}) VALUES ($1, $2) ON CONFLICT ({1}) DO UPDATE SET {2} = excluded.{2}",
            t.name, t.key, t.value
        );
        self.execute(&sql, &[&key, &value])
            .map(|_| ())
            .map_err(|e| crate::postgres::describe(&e))
    }
}

impl Rows for mysql::Transaction<'_> {
    fn select(&mut self, t: &Table, key: &str) -> Result<Option<String>, String> {
        use mysql::prelude::Queryable;
        let sql = format!("SELECT {} FROM {} WHERE {} = ?", t.value, t.name, t.key);
        self.exec_first(sql, (key,)).map_err(|e| e.to_string())
    }
    fn upsert(&mut self, t: &Table, key: &str, value: &str) -> Result<(), String> {
        use mysql::prelude::Queryable;
        let sql = format!(
            "INSERT INTO {0} ({1}, {2}) VALUES (?, ?) ON DUPLICATE KEY UPDATE {2} = VALUES({2})",
            t.name, t.key, t.value
        );
        self.exec_drop(sql, (key, value)).map_err(|e| e.to_string())
    }
}

/// What a recorded statement can fail with: the database refused it (the transaction should
/// roll back and be recorded as aborted), or the log could not be written.
#[derive(Debug, thiserror::Error)]
pub enum RecError {
    /// The database's error, in words.
    #[error("database: {0}")]
    Db(String),
    /// Writing the history log failed.
    #[error("history log: {0}")]
    Log(#[from] io::Error),
}

impl RecTxn<'_> {
    /// Reads the row `key` of `t` and records the read; the application's value (tags
    /// removed), or `None` when there is no row.
    pub fn get(
        &mut self,
        db: &mut impl Rows,
        t: &Table,
        key: &str,
    ) -> Result<Option<String>, RecError> {
        let stored = db.select(t, key).map_err(RecError::Db)?;
        let k = t.history_key(key);
        if t.tagged {
            Ok(self.read_tagged(&k, stored.as_deref())?.map(str::to_string))
        } else {
            self.read_value(&k, stored.as_deref())?;
            Ok(stored)
        }
    }

    /// Records a write of `value` to row `key` of `t`, then sends it (insert or update).
    pub fn put(
        &mut self,
        db: &mut impl Rows,
        t: &Table,
        key: &str,
        value: &str,
    ) -> Result<(), RecError> {
        let k = t.history_key(key);
        let stored = if t.tagged {
            self.tag(&k, value)?
        } else {
            self.write_value(&k, value)?;
            value.to_string()
        };
        db.upsert(t, key, &stored).map_err(RecError::Db)
    }

    /// Read-modify-write of row `key`: reads it, writes `f(value)`, records both; returns the
    /// new value. (It does not lock the row: what the database lets happen in between is what
    /// the history shows.)
    pub fn update_with(
        &mut self,
        db: &mut impl Rows,
        t: &Table,
        key: &str,
        f: impl FnOnce(Option<&str>) -> String,
    ) -> Result<String, RecError> {
        let old = self.get(db, t, key)?;
        let new = f(old.as_deref());
        self.put(db, t, key, &new)?;
        Ok(new)
    }

    /// Makes this transaction a fence: reads and rewrites row `__krait_fence` of `t` (a
    /// counter), recorded under the history's fence key. Run one, alone in its transaction and
    /// committed, every N transactions of each session (say every 20): online checking then
    /// knows that nothing before the last fence every session has passed can be affected by
    /// what comes after, and frees it. A fence that aborts is simply retried.
    pub fn fence(&mut self, db: &mut impl Rows, t: &Table) -> Result<(), RecError> {
        let stored = db.select(t, NATIVE_FENCE_KEY).map_err(RecError::Db)?;
        let n: u64 = self
            .read_tagged(NATIVE_FENCE_KEY, stored.as_deref())?
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let next = self.tag(NATIVE_FENCE_KEY, &(n + 1).to_string())?;
        db.upsert(t, NATIVE_FENCE_KEY, &next).map_err(RecError::Db)
    }
}
