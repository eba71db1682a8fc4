//! One client connection through the proxy: what each message means for the history. Client
//! messages are looked at (and their writes logged) *before* they are forwarded; server
//! messages after they arrive. Transaction boundaries come from the server's ReadyForQuery
//! status, so explicit transactions, autocommit statements and the extended protocol's implicit
//! transactions are all followed the same way.

use super::sql::{classify, Operand, Stmt, TableSpec};
pub(crate) use super::values::{app_of, key_of, value_id};
use super::values::{fmt_of, normalize};
use super::wire::{Fields, Msg};
use crate::recorder::RecSession;
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
    /// An increment sent with `RETURNING col`: its reply rows are the proxy's, not the
    /// client's.
    Increment {
        table: usize,
        key: Vec<u8>,
        col: String,
        delta: Vec<u8>,
        minus: bool,
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
    queue: VecDeque<Reply>,
    /// The row description of the simple query being answered.
    query_cols: Cols,
    failed: bool,
    last_tag: String,
    /// Writes were sent outside an explicit transaction: they commit with their statement, so
    /// a connection lost before the answer leaves them unknown, not aborted.
    autocommit_sent: bool,
    explicit: bool,
    /// Statements on declared tables the proxy could not record that may have written.
    pub unrecorded: u64,
    /// Reads of declared tables it could not record.
    pub unrecorded_reads: u64,
}

impl Conn {
    pub(crate) fn new(session: RecSession, tables: std::sync::Arc<Vec<TableSpec>>) -> Conn {
        Conn {
            session,
            tables,
            prepared: HashMap::new(),
            portals: HashMap::new(),
            parses: 0,
            described: HashMap::new(),
            queue: VecDeque::new(),
            query_cols: Vec::new(),
            failed: false,
            last_tag: String::new(),
            autocommit_sent: false,
            explicit: false,
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

    fn ensure_txn(&mut self) -> io::Result<()> {
        if !self.session.in_txn() {
            self.session.open_txn()?;
        }
        Ok(())
    }

    /// A statement is about to be sent for execution: its writes are logged now; what its
    /// reply will mean is returned.
    fn execute(&mut self, stmt: Stmt, params: &[Option<Vec<u8>>]) -> io::Result<Pending> {
        Ok(match stmt {
            Stmt::Begin => {
                self.explicit = true;
                self.ensure_txn()?;
                Pending::Other
            }
            Stmt::Commit => {
                if self.session.in_txn() {
                    self.session.committing()?;
                }
                Pending::Other
            }
            Stmt::Write { table, key, cols } => {
                self.ensure_txn()?;
                let key = self.operand(&key, params).unwrap_or_default();
                let t = self.tables[table].clone();
                for (c, v) in &cols {
                    let v = self.operand(v, params);
                    self.session.op(
                        "w",
                        &key_of(&t, &key, c),
                        Some(value_id(v.as_deref())),
                        app_of(v.as_deref()).as_deref(),
                    )?;
                }
                if !self.explicit {
                    self.autocommit_sent = true;
                }
                Pending::Other
            }
            Stmt::Select { table, key } => {
                self.ensure_txn()?;
                let key = self.operand(&key, params).unwrap_or_default();
                Pending::Select {
                    table,
                    key,
                    rows: 0,
                }
            }
            Stmt::UnrecordedRead(why) => {
                self.unrecorded_reads += 1;
                if self.unrecorded_reads <= 10 {
                    eprintln!(
                        "krait proxy: {}: read not recorded: {why}",
                        self.session.name()
                    );
                }
                Pending::Other
            }
            Stmt::Unrecorded(why) => {
                self.unrecorded += 1;
                if self.unrecorded <= 10 {
                    eprintln!("krait proxy: {}: not recorded: {why}", self.session.name());
                }
                Pending::Other
            }
            Stmt::Increment {
                table,
                key,
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
                    key: self.operand(&key, params).unwrap_or_default(),
                    col,
                    delta: self.operand(&delta, params).unwrap_or_default(),
                    minus,
                }
            }
            Stmt::Rollback | Stmt::Ignored => Pending::Other,
        })
    }

    /// Looks at a message from the client, before it is forwarded (an increment's is
    /// rewritten to return the new value).
    pub(crate) fn on_client(&mut self, m: &mut Msg) -> io::Result<()> {
        let mut f = Fields::new(&m.body);
        match m.tag {
            b'Q' => {
                let sql = f.cstr().unwrap_or_default();
                let stmt = classify(&sql, &self.tables);
                if let Stmt::Increment { col, .. } = &stmt {
                    let base = sql.trim_end().trim_end_matches(';');
                    let mut body = format!("{base} RETURNING {col}").into_bytes();
                    body.push(0);
                    m.body = body;
                }
                let what = self.execute(stmt, &[])?;
                self.queue.push_back(Reply::Exec {
                    what,
                    parse: None,
                    formats: Vec::new(),
                });
                self.queue.push_back(Reply::Sync);
            }
            b'P' => {
                let (Some(name), Some(sql)) = (f.cstr(), f.cstr()) else {
                    return Ok(());
                };
                let n = f.i16().unwrap_or(0).max(0);
                let oids = (0..n).filter_map(|_| f.i32()).map(|o| o as u32).collect();
                let stmt = match classify(&sql, &self.tables) {
                    // Its reply cannot be rewritten under the client's Describe.
                    Stmt::Increment { .. } => Stmt::Unrecorded(format!(
                        "an increment by the extended protocol: {}",
                        sql.trim()
                    )),
                    s => s,
                };
                self.parses += 1;
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
            b'S' => self.queue.push_back(Reply::Sync),
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
    }

    /// The columns of the reply at the front of the queue: (name, type id, binary).
    fn reply_cols(&self) -> Vec<(String, u32, bool)> {
        match self.queue.front() {
            Some(Reply::Exec {
                parse: Some(p),
                formats,
                ..
            }) => self
                .described
                .get(p)
                .map(|cols| {
                    cols.iter()
                        .enumerate()
                        .map(|(i, (c, oid))| (c.clone(), *oid, fmt_of(formats, i)))
                        .collect()
                })
                .unwrap_or_default(),
            _ => self
                .query_cols
                .iter()
                .map(|(c, oid)| (c.clone(), *oid, false))
                .collect(),
        }
    }

    fn read_row(&mut self, table: usize, key: &[u8], row: Option<&Msg>) -> io::Result<()> {
        let t = self.tables[table].clone();
        let cols = self.reply_cols();
        let values: Vec<Option<Vec<u8>>> = match row {
            Some(m) => {
                let mut f = Fields::new(&m.body);
                let n = f.i16().unwrap_or(0).max(0);
                (0..n).map(|_| f.value().flatten()).collect()
            }
            None => vec![None; cols.len()],
        };
        for (i, (c, oid, binary)) in cols.iter().enumerate() {
            if *c == t.pk {
                continue;
            }
            let k = key_of(&t, key, c);
            match (row, values.get(i).cloned().flatten()) {
                // No row: the column's initial state (no recorded write).
                (None, _) => self.session.op("r", &k, None, None)?,
                (Some(_), v) => {
                    let v = v.map(|v| normalize(&v, *oid, *binary));
                    self.session.op(
                        "r",
                        &k,
                        Some(value_id(v.as_deref())),
                        app_of(v.as_deref()).as_deref(),
                    )?
                }
            }
        }
        Ok(())
    }

    /// An increment's returned row: the new value, so the old one is new ∓ delta; recorded as
    /// a read of the old and a write of the new.
    fn increment_row(&mut self, m: &Msg) -> io::Result<()> {
        let Some(Reply::Exec {
            what:
                Pending::Increment {
                    table,
                    key,
                    col,
                    delta,
                    minus,
                },
            ..
        }) = self.queue.front()
        else {
            return Ok(());
        };
        let (table, key, col, minus) = (*table, key.clone(), col.clone(), *minus);
        let mut f = Fields::new(&m.body);
        f.i16();
        let new = f.value().flatten();
        let (oid, binary) = self.reply_cols().first().map_or((0, false), |c| (c.1, c.2));
        let new = new.map(|v| normalize(&v, oid, binary));
        let num = |v: &[u8]| std::str::from_utf8(v).ok()?.trim().parse::<i128>().ok();
        let old = match (new.as_deref().and_then(num), num(delta)) {
            (Some(n), Some(d)) => (if minus { n + d } else { n - d }).to_string(),
            _ => {
                self.unrecorded += 1;
                eprintln!(
                    "krait proxy: {}: not recorded: an increment of {col} whose values are not integers",
                    self.session.name()
                );
                return Ok(());
            }
        };
        let t = self.tables[table].clone();
        let k = key_of(&t, &key, &col);
        self.session
            .op("r", &k, Some(value_id(Some(old.as_bytes()))), Some(&old))?;
        self.session.op(
            "w",
            &k,
            Some(value_id(new.as_deref())),
            app_of(new.as_deref()).as_deref(),
        )
    }

    /// Looks at a message from the server; false when it is the proxy's own (an increment's
    /// returned row) and must not reach the client.
    pub(crate) fn on_server(&mut self, m: &Msg) -> io::Result<bool> {
        let increment = matches!(
            self.queue.front(),
            Some(Reply::Exec {
                what: Pending::Increment { .. },
                ..
            })
        );
        let mut f = Fields::new(&m.body);
        match m.tag {
            b't' => {
                let n = f.i16().unwrap_or(0).max(0);
                let oids: Vec<u32> = (0..n).filter_map(|_| f.i32()).map(|o| o as u32).collect();
                if let Some(Reply::Describe { parse }) = self.queue.front() {
                    let parse = *parse;
                    if let Some(p) = self.prepared.values_mut().find(|p| p.2 == parse) {
                        p.1 = oids;
                    }
                }
            }
            b'T' => {
                let n = f.i16().unwrap_or(0).max(0);
                let cols: Cols = (0..n)
                    .filter_map(|_| {
                        let name = f.cstr()?;
                        f.i32()?;
                        f.i16()?;
                        let oid = f.i32()? as u32;
                        f.i16()?;
                        f.i32()?;
                        f.i16()?;
                        Some((name, oid))
                    })
                    .collect();
                match self.queue.front() {
                    Some(Reply::Describe { parse }) => {
                        self.described.insert(*parse, cols);
                        self.queue.pop_front();
                    }
                    _ => {
                        self.query_cols = cols;
                        if increment {
                            return Ok(false);
                        }
                    }
                }
            }
            b'n' => {
                if let Some(Reply::Describe { parse }) = self.queue.front() {
                    self.described.insert(*parse, Vec::new());
                    self.queue.pop_front();
                }
            }
            b'D' if increment => {
                if self.session.in_txn() {
                    self.increment_row(m)?;
                }
                return Ok(false);
            }
            b'D' => {
                if let Some(Reply::Exec {
                    what: Pending::Select { table, key, rows },
                    ..
                }) = self.queue.front_mut()
                {
                    *rows += 1;
                    let (table, key) = (*table, key.clone());
                    if self.session.in_txn() {
                        self.read_row(table, &key, Some(m))?;
                    }
                }
            }
            b'C' | b'I' | b's' => {
                if m.tag == b'C' {
                    self.last_tag = f.cstr().unwrap_or_default();
                }
                if let Some(Reply::Exec {
                    what:
                        Pending::Select {
                            table,
                            key,
                            rows: 0,
                        },
                    ..
                }) = self.queue.front()
                {
                    let (table, key) = (*table, key.clone());
                    if self.session.in_txn() {
                        self.read_row(table, &key, None)?;
                    }
                }
                if matches!(self.queue.front(), Some(Reply::Exec { .. })) {
                    self.queue.pop_front();
                }
            }
            b'E' => {
                // The server skips what was asked after the failed request until the Sync.
                self.failed = true;
                while self
                    .queue
                    .front()
                    .is_some_and(|r| !matches!(r, Reply::Sync))
                {
                    self.queue.pop_front();
                }
            }
            b'Z' => {
                // Everything asked up to the first Sync is answered.
                while let Some(r) = self.queue.pop_front() {
                    if matches!(r, Reply::Sync) {
                        break;
                    }
                }
                if f.byte() == Some(b'I') {
                    if self.session.in_txn() {
                        let rolled_back = self.failed || self.last_tag.starts_with("ROLLBACK");
                        self.session
                            .end(if rolled_back { "aborted" } else { "committed" })?;
                    }
                    self.failed = false;
                    self.explicit = false;
                    self.autocommit_sent = false;
                }
            }
            _ => {}
        }
        Ok(true)
    }

    /// The connection is gone: a transaction still open ends as the most it may have done.
    pub(crate) fn lost(&mut self) {
        if self.session.in_txn() && self.autocommit_sent {
            let _ = self.session.end("unknown");
        }
        self.session.drop_txn();
    }
}
