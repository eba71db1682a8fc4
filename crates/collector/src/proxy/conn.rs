//! One client connection through the proxy: what each message means for the history. Client
//! messages are looked at (and their writes logged) *before* they are forwarded; server
//! messages after they arrive. Transaction boundaries come from the server's ReadyForQuery
//! status, so explicit transactions, autocommit statements and the extended protocol's implicit
//! transactions are all followed the same way.

use super::notes::Notes;
use super::sql::{classify, classify_all, Operand, Stmt, TableSpec};
pub(crate) use super::values::{app_of, key_of, value_id};
use super::values::{fmt_of, normalize};

mod replies;
#[cfg(test)]
mod undone_tests;
use super::wire::{Fields, Msg};
use crate::recorder::{OpMark, RecSession};
use std::collections::{HashMap, VecDeque};
use std::io;

/// What an executed statement means for the history.
enum Pending {
    /// A recorded SELECT of row `key` of `table`: rows seen so far.
    Select {
        table: usize,
        key: Vec<u8>,
        rows: usize,
    },
    /// A recorded `SELECT … WHERE pk IN (keys)`: which keys a returned row named so far, and
    /// whether a row came back whose key the reply does not show (the key column not
    /// selected): its reads cannot be recorded.
    SelectIn {
        table: usize,
        keys: Vec<Vec<u8>>,
        seen: Vec<bool>,
        unnamed: bool,
    },
    /// An increment sent with `RETURNING pk, col`: its reply rows are the proxy's, not the
    /// client's. `keys` are sorted.
    Increment {
        table: usize,
        keys: Vec<Vec<u8>>,
        col: String,
        delta: Vec<u8>,
        minus: bool,
    },
    /// An UPDATE or DELETE of `rows` distinct keys, whose writes were logged between marks
    /// `from` and `to`: taken back if its reply says it matched no row, noted if it matched
    /// some of the keys but not all.
    Write {
        from: OpMark,
        to: OpMark,
        rows: u64,
    },
    /// `ROLLBACK TO SAVEPOINT name`, sent when the transaction's operations numbered up to
    /// `to` were logged: once the server confirms it, what was logged since the savepoint
    /// did not happen.
    RollbackTo {
        name: String,
        to: OpMark,
    },
    /// A statement on a declared table that is not recorded (`write`: it may write): counted
    /// and noted once the server says it ran, not when the server rejects it (a rejected
    /// statement wrote nothing). `txn` is the transaction it ran in, as it was sent.
    Unrecorded {
        why: String,
        write: bool,
        txn: Option<u64>,
    },
    Other,
}

/// What the server owes the client, in the order the client asked: a client may send many
/// requests before reading any reply (pipelining, as tokio-postgres does with concurrent
/// queries), so each reply is matched with the request at the front of this queue.
enum Reply {
    /// A Describe: ParameterDescription (of a statement), then RowDescription or NoData, for
    /// the statement of Parse number `parse`.
    Describe { parse: u64 },
    /// An Execute of a portal bound from Parse number `parse` (`None`: a simple query, whose
    /// RowDescription comes in its reply), with the result formats its Bind asked for.
    Exec {
        what: Pending,
        parse: Option<u64>,
        formats: Vec<i16>,
    },
    /// A Sync, or the end of a simple query: ReadyForQuery answers it and everything before.
    Sync,
}

/// A row description: (column, type id).
type Cols = Vec<(String, u32)>;

/// The recording state of one connection.
pub(crate) struct Conn {
    pub session: RecSession,
    tables: std::sync::Arc<Vec<TableSpec>>,
    /// Where the statements it could not record are written down, for the check to say.
    notes: std::sync::Arc<Notes>,
    /// Prepared statements: what each is, its parameters' type ids, its Parse number.
    prepared: HashMap<String, (Stmt, Vec<u32>, u64)>,
    /// Bound portals: the statement, its parameters normalized, its Parse number and the
    /// result formats asked for.
    portals: HashMap<String, (Stmt, Vec<Option<Vec<u8>>>, u64, Vec<i16>)>,
    /// Parses seen so far: a statement name may be parsed again while an Execute of its
    /// earlier text still waits for its rows, so descriptions are kept per Parse.
    parses: u64,
    /// Row descriptions by Parse number, as the server gave them.
    described: HashMap<u64, Cols>,
    /// Parses of increments sent with `RETURNING`: their row descriptions are the proxy's.
    rewritten: std::collections::HashSet<u64>,
    queue: VecDeque<Reply>,
    /// The row description of the simple query being answered.
    query_cols: Cols,
    failed: bool,
    last_tag: String,
    /// Operations of the transaction being recorded that did not happen (an UPDATE or DELETE
    /// that matched no row, statements rolled back to a savepoint) and could not be taken
    /// back: they had reached the log.
    phantom: u32,
    /// The open transaction's savepoints, innermost last: each name and the number of the
    /// first operation logged after it.
    savepoints: Vec<(String, OpMark)>,
    /// Writes were sent outside an explicit transaction: they commit with their statement, so
    /// a connection lost before the answer leaves them unknown, not aborted.
    autocommit_sent: bool,
    explicit: bool,
    /// Syncs (and simple queries) sent, and ReadyForQuery messages received: the n-th
    /// ReadyForQuery answers the n-th Sync.
    syncs_sent: u64,
    syncs_answered: u64,
    /// Syncs sent when the transaction recorded now was opened: an answer to one of those
    /// (a pipelined Close's, say) says nothing of it.
    opened_at: u64,
    /// The Sync whose answer ends the transaction recorded now (after COMMIT, ROLLBACK or an
    /// autocommit statement): the next transaction's operations wait for it (see
    /// [`Conn::must_wait`]).
    end_due: Option<u64>,
    /// The server's side of the connection is gone: nothing waits for it any more.
    pub(crate) closed: bool,
    /// Statements on declared tables the proxy could not record that may have written.
    pub unrecorded: u64,
    /// Reads of declared tables it could not record.
    pub unrecorded_reads: u64,
}

impl Conn {
    pub(crate) fn new(
        session: RecSession,
        tables: std::sync::Arc<Vec<TableSpec>>,
        notes: std::sync::Arc<Notes>,
    ) -> Conn {
        Conn {
            session,
            tables,
            notes,
            prepared: HashMap::new(),
            portals: HashMap::new(),
            parses: 0,
            described: HashMap::new(),
            rewritten: Default::default(),
            queue: VecDeque::new(),
            query_cols: Vec::new(),
            failed: false,
            last_tag: String::new(),
            phantom: 0,
            savepoints: Vec::new(),
            autocommit_sent: false,
            explicit: false,
            syncs_sent: 0,
            syncs_answered: 0,
            opened_at: 0,
            end_due: None,
            closed: false,
            unrecorded: 0,
            unrecorded_reads: 0,
        }
    }

    fn operand(&self, o: &Operand, params: &[Option<Vec<u8>>]) -> Option<Vec<u8>> {
        match o {
            Operand::Const(v) => v.clone(),
            Operand::Param(n) => params.get(*n).cloned().flatten(),
        }
    }

    /// An UPDATE or INSERT (`cols`) or a DELETE (None) of the rows a list of keys names: their
    /// writes logged, what its reply will say to check.
    fn write_rows(
        &mut self,
        table: usize,
        keys: &[Operand],
        cols: Option<&[(String, Operand)]>,
        params: &[Option<Vec<u8>>],
    ) -> io::Result<Pending> {
        self.ensure_txn()?;
        let mark = self.session.mark();
        let keys = self.distinct(keys, params);
        for key in &keys {
            match cols {
                Some(cols) => self.log_row(table, key, cols, params)?,
                None => self.log_delete(table, key)?,
            }
        }
        if !self.explicit {
            self.autocommit_sent = true;
        }
        Ok(Pending::Write {
            from: mark,
            to: self.session.mark(),
            rows: keys.len() as u64,
        })
    }

    /// The distinct keys a list names, sorted (a key listed twice is one row).
    fn distinct(&self, keys: &[Operand], params: &[Option<Vec<u8>>]) -> Vec<Vec<u8>> {
        let mut keys: Vec<Vec<u8>> = keys
            .iter()
            .map(|k| self.operand(k, params).unwrap_or_default())
            .collect();
        keys.sort();
        keys.dedup();
        keys
    }

    /// Logs the deletion of row `key` of `table`: every column reads as absent (no row) until
    /// written again.
    fn log_delete(&mut self, table: usize, key: &[u8]) -> io::Result<()> {
        let t = self.tables[table].clone();
        for c in t.cols.iter().filter(|c| **c != t.pk) {
            self.session.op("w", &key_of(&t, key, c), None, None)?;
        }
        Ok(())
    }

    /// Logs the writes of columns `cols` of row `key` of `table`.
    fn log_row(
        &mut self,
        table: usize,
        key: &[u8],
        cols: &[(String, Operand)],
        params: &[Option<Vec<u8>>],
    ) -> io::Result<()> {
        let t = self.tables[table].clone();
        for (c, v) in cols {
            let v = self.operand(v, params);
            self.session.op(
                "w",
                &key_of(&t, key, c),
                Some(value_id(v.as_deref())),
                app_of(v.as_deref()).as_deref(),
            )?;
        }
        Ok(())
    }

    fn ensure_txn(&mut self) -> io::Result<()> {
        if !self.session.in_txn() {
            self.session.open_txn()?;
            self.opened_at = self.syncs_sent;
        }
        Ok(())
    }

    /// A statement is about to be sent for execution: its writes are logged now; what its
    /// reply will mean is returned.
    fn execute(&mut self, stmt: Stmt, params: &[Option<Vec<u8>>]) -> io::Result<Pending> {
        // What ends the transaction now recorded: its outcome comes with the next Sync's answer.
        let ends = match &stmt {
            Stmt::Commit | Stmt::Rollback => true,
            // Savepoints live inside a transaction block (outside one the server refuses them).
            Stmt::Begin
            | Stmt::Ignored
            | Stmt::Savepoint(_)
            | Stmt::RollbackTo(_)
            | Stmt::Release(_) => false,
            _ => !self.explicit,
        };
        if ends {
            self.end_due = Some(self.syncs_sent + 1);
        }
        Ok(match stmt {
            Stmt::Begin => {
                self.explicit = true;
                self.ensure_txn()?;
                // Its writes commit only with the COMMIT the proxy announces first; a proxy
                // that dies before closes the connection, and the database undoes them.
                self.session.defer_writes();
                Pending::Other
            }
            Stmt::Commit => {
                if self.session.in_txn() {
                    self.session.committing()?;
                }
                Pending::Other
            }
            Stmt::InsertRows { table, rows } => {
                self.ensure_txn()?;
                for (key, cols) in &rows {
                    let key = self.operand(key, params).unwrap_or_default();
                    self.log_row(table, &key, cols, params)?;
                }
                if !self.explicit {
                    self.autocommit_sent = true;
                }
                Pending::Other
            }
            Stmt::Write {
                table,
                key,
                cols,
                update,
            } => {
                let w = self.write_rows(table, &[key], Some(&cols), params)?;
                // An INSERT writes its row or fails: there is no count to look at.
                if update {
                    w
                } else {
                    Pending::Other
                }
            }
            Stmt::Delete { table, key } => self.write_rows(table, &[key], None, params)?,
            Stmt::UpdateIn { table, keys, cols } => {
                self.write_rows(table, &keys, Some(&cols), params)?
            }
            Stmt::DeleteIn { table, keys } => self.write_rows(table, &keys, None, params)?,
            Stmt::Select { table, key } => {
                self.ensure_txn()?;
                let key = self.operand(&key, params).unwrap_or_default();
                Pending::Select {
                    table,
                    key,
                    rows: 0,
                }
            }
            Stmt::SelectIn { table, keys } => {
                self.ensure_txn()?;
                let keys = self.distinct(&keys, params);
                Pending::SelectIn {
                    table,
                    seen: vec![false; keys.len()],
                    keys,
                    unnamed: false,
                }
            }
            Stmt::UnrecordedRead(why) => Pending::Unrecorded {
                why,
                write: false,
                txn: self.session.txn_id(),
            },
            Stmt::Unrecorded(why) => Pending::Unrecorded {
                why,
                write: true,
                txn: self.session.txn_id(),
            },
            Stmt::Increment {
                table,
                keys,
                col,
                delta,
                minus,
            } => {
                self.ensure_txn()?;
                if !self.explicit {
                    self.autocommit_sent = true;
                }
                Pending::Increment {
                    table,
                    keys: self.distinct(&keys, params),
                    col,
                    delta: self.operand(&delta, params).unwrap_or_default(),
                    minus,
                }
            }
            Stmt::Savepoint(name) => {
                if self.session.in_txn() {
                    self.savepoints.push((name, self.session.mark()));
                }
                Pending::Other
            }
            Stmt::RollbackTo(name) => Pending::RollbackTo {
                name,
                to: self.session.mark(),
            },
            Stmt::Release(name) => {
                // Released with every savepoint made after it.
                if let Some(i) = self.savepoints.iter().rposition(|s| s.0 == name) {
                    self.savepoints.truncate(i);
                }
                Pending::Other
            }
            Stmt::Rollback | Stmt::Ignored => Pending::Other,
        })
    }

    /// Whether client message `m` must wait before it is looked at and forwarded: a client
    /// may send the next transaction's statements before the last one's outcome arrives
    /// (pipelining across COMMIT, or autocommit statements back to back), but the log holds
    /// one transaction at a time and learns where one ends only from the server. So a
    /// statement waits until the Sync that ends the transaction before it is answered. A
    /// statement in the same Sync block as the end is not held (the server answers nothing
    /// before that Sync, which must go out).
    pub(crate) fn must_wait(&self, m: &Msg) -> bool {
        matches!(m.tag, b'Q' | b'E')
            && !self.closed
            && self.end_due.is_some_and(|d| self.syncs_sent >= d)
    }

    /// Looks at a message from the client, before it is forwarded (an increment's is
    /// rewritten to return the new value).
    pub(crate) fn on_client(&mut self, m: &mut Msg) -> io::Result<()> {
        let mut f = Fields::new(&m.body);
        match m.tag {
            b'Q' => {
                let sql = f.cstr().unwrap_or_default();
                let mut stmts = classify_all(&sql, &self.tables);
                if let [Stmt::Increment { table, col, .. }] = &stmts[..] {
                    let base = sql.trim_end().trim_end_matches(';');
                    let pk = &self.tables[*table].pk;
                    let mut body = format!("{base} RETURNING {pk}, {col}").into_bytes();
                    body.push(0);
                    m.body = body;
                }
                // An increment among several statements cannot be sent with RETURNING.
                if stmts.len() > 1 {
                    for s in &mut stmts {
                        if matches!(s, Stmt::Increment { .. }) {
                            *s = Stmt::Unrecorded(format!(
                                "an increment among several statements of one query: {}",
                                sql.trim()
                            ));
                        }
                    }
                }
                // The server answers each statement in order, then once ReadyForQuery.
                for stmt in stmts {
                    let what = self.execute(stmt, &[])?;
                    self.queue.push_back(Reply::Exec {
                        what,
                        parse: None,
                        formats: Vec::new(),
                    });
                }
                self.queue.push_back(Reply::Sync);
                self.syncs_sent += 1;
            }
            b'P' => {
                let (Some(name), Some(sql)) = (f.cstr(), f.cstr()) else {
                    return Ok(());
                };
                let rest = f.rest().to_vec();
                let mut f = Fields::new(&rest);
                let n = f.i16().unwrap_or(0).max(0);
                let oids = (0..n).filter_map(|_| f.i32()).map(|o| o as u32).collect();
                let stmt = classify(&sql, &self.tables);
                self.parses += 1;
                if let Stmt::Increment { table, col, .. } = &stmt {
                    // Returns each row's key and new value; what the client is told of rows is
                    // kept as an UPDATE's (NoData to a Describe, no DataRow).
                    let base = sql.trim_end().trim_end_matches(';');
                    let pk = &self.tables[*table].pk;
                    let mut body = name.as_bytes().to_vec();
                    body.push(0);
                    body.extend_from_slice(format!("{base} RETURNING {pk}, {col}").as_bytes());
                    body.push(0);
                    body.extend_from_slice(&rest);
                    m.body = body;
                    self.rewritten.insert(self.parses);
                }
                self.prepared.insert(name, (stmt, oids, self.parses));
                self.forget_descriptions();
            }
            b'B' => {
                let (Some(portal), Some(name)) = (f.cstr(), f.cstr()) else {
                    return Ok(());
                };
                let nf = f.i16().unwrap_or(0).max(0) as usize;
                let fmts: Vec<i16> = (0..nf).filter_map(|_| f.i16()).collect();
                let np = f.i16().unwrap_or(0).max(0) as usize;
                let (stmt, oids, parse) =
                    self.prepared
                        .get(&name)
                        .cloned()
                        .unwrap_or((Stmt::Ignored, Vec::new(), 0));
                let params = (0..np)
                    .map(|i| {
                        let v = f.value().flatten()?;
                        Some(normalize(
                            &v,
                            oids.get(i).copied().unwrap_or(0),
                            fmt_of(&fmts, i),
                        ))
                    })
                    .collect();
                let nr = f.i16().unwrap_or(0).max(0) as usize;
                let results: Vec<i16> = (0..nr).filter_map(|_| f.i16()).collect();
                self.portals.insert(portal, (stmt, params, parse, results));
            }
            b'E' => {
                let portal = f.cstr().unwrap_or_default();
                let (stmt, params, parse, formats) = self
                    .portals
                    .get(&portal)
                    .cloned()
                    .unwrap_or((Stmt::Ignored, Vec::new(), 0, Vec::new()));
                let what = self.execute(stmt, &params)?;
                self.queue.push_back(Reply::Exec {
                    what,
                    parse: Some(parse),
                    formats,
                });
            }
            b'D' => {
                let kind = f.byte();
                let name = f.cstr().unwrap_or_default();
                let parse = match kind {
                    Some(b'S') => self.prepared.get(&name).map(|p| p.2),
                    _ => self.portals.get(&name).map(|p| p.2),
                };
                self.queue.push_back(Reply::Describe {
                    parse: parse.unwrap_or(0),
                });
            }
            b'S' => {
                self.queue.push_back(Reply::Sync);
                self.syncs_sent += 1;
            }
            _ => {}
        }
        Ok(())
    }

    /// Drops the descriptions no prepared statement and no awaited reply needs any more
    /// (clients that prepare a statement per query would otherwise grow them forever).
    fn forget_descriptions(&mut self) {
        if self.described.len() <= 2 * self.prepared.len() + self.queue.len() + 64 {
            return;
        }
        let mut keep: std::collections::HashSet<u64> =
            self.prepared.values().map(|p| p.2).collect();
        keep.extend(self.portals.values().map(|p| p.2));
        for r in &self.queue {
            match r {
                Reply::Describe { parse }
                | Reply::Exec {
                    parse: Some(parse), ..
                } => {
                    keep.insert(*parse);
                }
                _ => {}
            }
        }
        self.described.retain(|p, _| keep.contains(p));
        self.rewritten.retain(|p| keep.contains(p));
    }

    /// The connection is gone: a transaction still open ends as the most it may have done.
    pub(crate) fn lost(&mut self) {
        if self.session.in_txn() && self.autocommit_sent {
            let _ = self.session.end("unknown");
        }
        self.session.drop_txn();
    }
}
