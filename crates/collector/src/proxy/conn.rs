//! One client connection through the proxy: what each message means for the history. Client
//! messages are looked at (and their writes logged) *before* they are forwarded; server
//! messages after they arrive. Transaction boundaries come from the server's ReadyForQuery
//! status, so explicit transactions, autocommit statements and the extended protocol's implicit
//! transactions are all followed the same way.

use super::sql::{classify, Operand, Stmt, TableSpec};
use super::wire::{Fields, Msg};
use crate::recorder::RecSession;
use std::collections::{HashMap, VecDeque};
use std::io;

/// A statement the server will answer, in order.
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

/// The recording state of one connection.
pub(crate) struct Conn {
    pub session: RecSession,
    tables: std::sync::Arc<Vec<TableSpec>>,
    /// Prepared statements: what each is, and its parameters' type ids.
    prepared: HashMap<String, (Stmt, Vec<u32>)>,
    /// Bound portals: the statement and its parameters, normalized.
    portals: HashMap<String, (Stmt, Vec<Option<Vec<u8>>>)>,
    describing: VecDeque<String>,
    pending: VecDeque<Pending>,
    /// The last row description: (column, type id, binary).
    cols: Vec<(String, u32, bool)>,
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

/// A value in the text form PostgreSQL prints it in, whichever format it travelled in, so a
/// write by parameter and a read of the same value agree (integers and booleans decoded; text
/// as is; other binary values as hex, which only matches itself).
fn normalize(v: &[u8], oid: u32, binary: bool) -> Vec<u8> {
    if !binary {
        return v.to_vec();
    }
    let int = |b: &[u8]| -> Option<i64> {
        Some(match b.len() {
            2 => i16::from_be_bytes(b.try_into().ok()?) as i64,
            4 => i32::from_be_bytes(b.try_into().ok()?) as i64,
            8 => i64::from_be_bytes(b.try_into().ok()?),
            _ => return None,
        })
    };
    match oid {
        20 | 21 | 23 => int(v).map_or_else(|| v.to_vec(), |i| i.to_string().into_bytes()),
        16 => (if v.first() == Some(&1) { "t" } else { "f" }).into(),
        _ if std::str::from_utf8(v).is_ok() && matches!(oid, 0 | 19 | 25 | 1042 | 1043) => {
            v.to_vec()
        }
        _ => {
            let mut s = String::from("\\x");
            for b in v {
                s.push_str(&format!("{b:02x}"));
            }
            s.into_bytes()
        }
    }
}

/// A column value as a history value: a hash of its text form (NULL its own value).
pub(crate) fn value_id(v: Option<&[u8]>) -> u64 {
    match v {
        Some(v) => krait_history::hash_bytes(v),
        None => krait_history::hash_bytes(b"\0NULL"),
    }
}

/// A column value as the application sees it, for certificates (NULL has none).
pub(crate) fn app_of(v: Option<&[u8]>) -> Option<std::borrow::Cow<'_, str>> {
    v.map(String::from_utf8_lossy)
}

/// `TABLE/KEY/COLUMN`: one history key per column of a row.
pub(crate) fn key_of(t: &TableSpec, key: &[u8], col: &str) -> String {
    format!("{}/{}/{col}", t.name, String::from_utf8_lossy(key))
}

impl Conn {
    pub(crate) fn new(session: RecSession, tables: std::sync::Arc<Vec<TableSpec>>) -> Conn {
        Conn {
            session,
            tables,
            prepared: HashMap::new(),
            portals: HashMap::new(),
            describing: VecDeque::new(),
            pending: VecDeque::new(),
            cols: Vec::new(),
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

    /// A statement is about to be sent for execution.
    fn execute(&mut self, stmt: Stmt, params: &[Option<Vec<u8>>]) -> io::Result<()> {
        match stmt {
            Stmt::Begin => {
                self.explicit = true;
                self.ensure_txn()?;
                self.pending.push_back(Pending::Other);
            }
            Stmt::Commit => {
                if self.session.in_txn() {
                    self.session.committing()?;
                }
                self.pending.push_back(Pending::Other);
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
                self.pending.push_back(Pending::Other);
            }
            Stmt::Select { table, key } => {
                self.ensure_txn()?;
                let key = self.operand(&key, params).unwrap_or_default();
                self.pending.push_back(Pending::Select {
                    table,
                    key,
                    rows: 0,
                });
            }
            Stmt::UnrecordedRead(why) => {
                self.unrecorded_reads += 1;
                if self.unrecorded_reads <= 10 {
                    eprintln!(
                        "krait proxy: {}: read not recorded: {why}",
                        self.session.name()
                    );
                }
                self.pending.push_back(Pending::Other);
            }
            Stmt::Unrecorded(why) => {
                self.unrecorded += 1;
                if self.unrecorded <= 10 {
                    eprintln!("krait proxy: {}: not recorded: {why}", self.session.name());
                }
                self.pending.push_back(Pending::Other);
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
                self.pending.push_back(Pending::Increment {
                    table,
                    key: self.operand(&key, params).unwrap_or_default(),
                    col,
                    delta: self.operand(&delta, params).unwrap_or_default(),
                    minus,
                });
            }
            Stmt::Rollback | Stmt::Ignored => self.pending.push_back(Pending::Other),
        }
        Ok(())
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
                self.execute(stmt, &[])?;
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
                self.prepared.insert(name, (stmt, oids));
            }
            b'B' => {
                let (Some(portal), Some(name)) = (f.cstr(), f.cstr()) else {
                    return Ok(());
                };
                let nf = f.i16().unwrap_or(0).max(0) as usize;
                let fmts: Vec<i16> = (0..nf).filter_map(|_| f.i16()).collect();
                let np = f.i16().unwrap_or(0).max(0) as usize;
                let (stmt, oids) = self
                    .prepared
                    .get(&name)
                    .cloned()
                    .unwrap_or((Stmt::Ignored, Vec::new()));
                let params = (0..np)
                    .map(|i| {
                        let v = f.value().flatten()?;
                        // One format code applies to all; none means text.
                        let fmt = match fmts.len() {
                            0 => 0,
                            1 => fmts[0],
                            _ => fmts.get(i).copied().unwrap_or(0),
                        };
                        Some(normalize(&v, oids.get(i).copied().unwrap_or(0), fmt == 1))
                    })
                    .collect();
                self.portals.insert(portal, (stmt, params));
            }
            b'E' => {
                let portal = f.cstr().unwrap_or_default();
                let (stmt, params) = self
                    .portals
                    .get(&portal)
                    .cloned()
                    .unwrap_or((Stmt::Ignored, Vec::new()));
                self.execute(stmt, &params)?;
            }
            // Describe of a statement: its parameter types come back next.
            b'D' if f.byte() == Some(b'S') => {
                self.describing.push_back(f.cstr().unwrap_or_default());
            }
            _ => {}
        }
        Ok(())
    }

    fn read_row(&mut self, table: usize, key: &[u8], row: Option<&Msg>) -> io::Result<()> {
        let t = self.tables[table].clone();
        let values: Vec<Option<Vec<u8>>> = match row {
            Some(m) => {
                let mut f = Fields::new(&m.body);
                let n = f.i16().unwrap_or(0).max(0);
                (0..n).map(|_| f.value().flatten()).collect()
            }
            None => vec![None; self.cols.len()],
        };
        let cols = self.cols.clone();
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
        let Some(Pending::Increment {
            table,
            key,
            col,
            delta,
            minus,
        }) = self.pending.front()
        else {
            return Ok(());
        };
        let (table, key, col, minus) = (*table, key.clone(), col.clone(), *minus);
        let mut f = Fields::new(&m.body);
        f.i16();
        let new = f.value().flatten();
        let (oid, binary) = self.cols.first().map_or((0, false), |c| (c.1, c.2));
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
        let increment = matches!(self.pending.front(), Some(Pending::Increment { .. }));
        let mut f = Fields::new(&m.body);
        match m.tag {
            b't' => {
                let n = f.i16().unwrap_or(0).max(0);
                let oids: Vec<u32> = (0..n).filter_map(|_| f.i32()).map(|o| o as u32).collect();
                if let Some(name) = self.describing.pop_front() {
                    if let Some(p) = self.prepared.get_mut(&name) {
                        p.1 = oids;
                    }
                }
            }
            b'T' => {
                let n = f.i16().unwrap_or(0).max(0);
                self.cols = (0..n)
                    .filter_map(|_| {
                        let name = f.cstr()?;
                        f.i32()?;
                        f.i16()?;
                        let oid = f.i32()? as u32;
                        f.i16()?;
                        f.i32()?;
                        let fmt = f.i16()?;
                        Some((name, oid, fmt == 1))
                    })
                    .collect();
                if increment {
                    return Ok(false);
                }
            }
            b'D' if increment => {
                if self.session.in_txn() {
                    self.increment_row(m)?;
                }
                return Ok(false);
            }
            b'D' => {
                if let Some(Pending::Select { table, key, rows }) = self.pending.front_mut() {
                    *rows += 1;
                    let (table, key) = (*table, key.clone());
                    if self.session.in_txn() {
                        self.read_row(table, &key, Some(m))?;
                    }
                }
            }
            b'C' | b'I' => {
                self.last_tag = f.cstr().unwrap_or_default();
                if let Some(Pending::Select {
                    table,
                    key,
                    rows: 0,
                }) = self.pending.pop_front()
                {
                    if self.session.in_txn() {
                        self.read_row(table, &key, None)?;
                    }
                }
            }
            b'E' => {
                self.failed = true;
                self.pending.pop_front();
            }
            b'Z' => {
                // The batch is answered: what was not answered was skipped after an error.
                self.pending.clear();
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
