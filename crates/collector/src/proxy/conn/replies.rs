//! The server's side of a connection: each reply matched with the request at the front of
//! the queue of what the server owes, and what it says for the history (rows read, an
//! increment's new value, where a transaction ends).

use super::{app_of, fmt_of, key_of, normalize, value_id, Cols, Conn, OpMark, Pending, Reply};
use crate::proxy::wire::{Fields, Msg};
use std::io;

impl Conn {
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

    /// A row returned to `SELECT … WHERE pk IN (…)`: the reads of the row its key column
    /// names. Without that column the row cannot be placed, and the statement's reads are
    /// left out ([`Conn::select_in_done`]).
    fn select_in_row(&mut self, table: usize, m: &Msg) -> io::Result<()> {
        let pk = self.tables[table].pk.clone();
        let cols = self.reply_cols();
        let key = cols.iter().position(|c| c.0 == pk).and_then(|i| {
            let mut f = Fields::new(&m.body);
            f.i16();
            for _ in 0..i {
                f.value();
            }
            let (_, oid, binary) = &cols[i];
            f.value().flatten().map(|v| normalize(&v, *oid, *binary))
        });
        let Some(Reply::Exec {
            what:
                Pending::SelectIn {
                    keys,
                    seen,
                    unnamed,
                    ..
                },
            ..
        }) = self.queue.front_mut()
        else {
            return Ok(());
        };
        // The keys are sorted (`Conn::distinct`).
        let at = key.and_then(|k| keys.binary_search(&k).ok());
        let Some(at) = at else {
            *unnamed = true;
            return Ok(());
        };
        seen[at] = true;
        let key = keys[at].clone();
        if self.session.in_txn() && !*unnamed {
            self.read_row(table, &key, Some(m))?;
        }
        Ok(())
    }

    /// The end of a `SELECT … WHERE pk IN (…)`: each key no row was returned for read no row;
    /// or, where a row could not be placed, a note that the statement's reads are not all
    /// recorded (a weaker check, never a wrong one).
    fn select_in_done(
        &mut self,
        table: usize,
        unnamed: bool,
        absent: &[Vec<u8>],
    ) -> io::Result<()> {
        if unnamed {
            let why = format!(
                "a SELECT of several rows of {} by key that does not return the key column {}: its rows cannot be told apart",
                self.tables[table].name, self.tables[table].pk
            );
            self.unrecorded_reads += 1;
            return self
                .notes
                .add(self.session.name(), self.session.txn_id(), false, &why);
        }
        for k in absent {
            self.read_row(table, k, None)?;
        }
        Ok(())
    }

    /// An increment's returned row, its key and new value: the old value is new ∓ delta,
    /// recorded as a read of the old and a write of the new.
    fn increment_row(&mut self, m: &Msg) -> io::Result<()> {
        let Some(Reply::Exec {
            what:
                Pending::Increment {
                    table,
                    keys,
                    col,
                    delta,
                    minus,
                },
            ..
        }) = self.queue.front()
        else {
            return Ok(());
        };
        let (table, col, minus) = (*table, col.clone(), *minus);
        let cols = self.reply_cols();
        let mut f = Fields::new(&m.body);
        f.i16();
        let mut next = |i: usize| {
            let v = f.value().flatten();
            let (oid, binary) = cols.get(i).map_or((0, false), |c| (c.1, c.2));
            v.map(|v| normalize(&v, oid, binary))
        };
        let (key, new) = (next(0), next(1));
        // One key: the row is its own (as a single-key statement's always is). Several: the
        // returned key says which, as the keys are written in the statement or its parameters.
        let key = match &keys[..] {
            [k] => Some(k.clone()),
            _ => key.filter(|k| keys.binary_search(k).is_ok()),
        };
        let num = |v: &[u8]| std::str::from_utf8(v).ok()?.trim().parse::<i128>().ok();
        let (key, old) = match (key, new.as_deref().and_then(num), num(delta)) {
            (Some(k), Some(n), Some(d)) => (k, (if minus { n + d } else { n - d }).to_string()),
            (k, ..) => {
                let why = match k {
                    None => format!(
                        "an increment of {col} by a list of keys returned a row under a key not in the list"
                    ),
                    Some(_) => format!("an increment of {col} whose values are not integers"),
                };
                self.unrecorded += 1;
                if self.unrecorded <= 10 {
                    eprintln!("krait proxy: {}: not recorded: {why}", self.session.name());
                }
                return self
                    .notes
                    .add(self.session.name(), self.session.txn_id(), true, &why);
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
    pub(crate) fn on_server(&mut self, m: &mut Msg) -> io::Result<bool> {
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
                        let parse = *parse;
                        self.described.insert(parse, cols);
                        self.queue.pop_front();
                        if self.rewritten.contains(&parse) {
                            // The client described an UPDATE: it returns no rows.
                            m.tag = b'n';
                            m.body.clear();
                        }
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
                } else if let Some(Reply::Exec {
                    what: Pending::SelectIn { table, .. },
                    ..
                }) = self.queue.front()
                {
                    let table = *table;
                    self.select_in_row(table, m)?;
                }
            }
            b'C' | b'I' | b's' => {
                self.completed(m.tag, &mut f)?;
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
                self.ready_for_query(&mut f)?;
            }
            _ => {}
        }
        Ok(true)
    }

    /// The operations numbered `from..to` did not happen: they are taken back while still
    /// held; otherwise they stay, counted as operations that did not happen.
    fn did_not_happen(&mut self, from: OpMark, to: OpMark) {
        if self.session.in_txn() {
            self.phantom += self.session.retract(from, to);
        }
    }

    /// The server confirmed `ROLLBACK TO SAVEPOINT name`, sent after operation `to`: what the
    /// transaction logged since the savepoint did not happen, later savepoints are gone, and
    /// a transaction an error had failed goes on.
    fn rolled_back_to(&mut self, name: &str, to: OpMark) {
        self.failed = false;
        if let Some(i) = self.savepoints.iter().rposition(|s| s.0 == name) {
            let from = self.savepoints[i].1;
            self.savepoints.truncate(i + 1);
            self.did_not_happen(from, to);
        }
    }

    /// A committed transaction's log holds writes that did not happen (an UPDATE or DELETE
    /// that matched no row, logged before it went out, with other work of the transaction
    /// after it or COMMIT sent in the same batch): said with the transaction, as a statement
    /// that may have written, since a verdict may then be wrong.
    fn phantom_note(&mut self) -> io::Result<()> {
        let why = format!(
            "{} operation(s) that did not happen (of an UPDATE or DELETE that matched no row, or rolled back to a savepoint) had reached the log (sent in one batch with COMMIT, or past the proxy's buffer): the history holds writes that did not happen",
            self.phantom
        );
        self.unrecorded += 1;
        if self.unrecorded <= 10 {
            eprintln!("krait proxy: {}: {why}", self.session.name());
        }
        self.notes
            .add(self.session.name(), self.session.txn_id(), true, &why)
    }

    /// A statement not recorded ran (the server completed it): counted, named on stderr for
    /// the first ten, and noted beside the history with the transaction it ran in.
    fn unrecorded_ran(&mut self, why: &str, write: bool, txn: Option<u64>) -> io::Result<()> {
        let name = self.session.name().to_string();
        if write {
            self.unrecorded += 1;
            if self.unrecorded <= 10 {
                eprintln!("krait proxy: {name}: not recorded: {why}");
            }
        } else {
            self.unrecorded_reads += 1;
            if self.unrecorded_reads <= 10 {
                eprintln!("krait proxy: {name}: read not recorded: {why}");
            }
        }
        self.notes.add(&name, txn, write, why)
    }

    /// CommandComplete (`tag` `C`), EmptyQueryResponse (`I`) or PortalSuspended (`s`): what the
    /// finished (or suspended) request at the front of the queue means for the history.
    fn completed(&mut self, tag: u8, f: &mut Fields) -> io::Result<()> {
        if tag == b'C' {
            self.last_tag = f.cstr().unwrap_or_default();
            match self.queue.front() {
                // "UPDATE 0", "DELETE 0": the row was not there.
                Some(Reply::Exec {
                    what: Pending::Write { from, to, .. },
                    ..
                }) if self.last_tag.rsplit(' ').next() == Some("0") => {
                    let (from, to) = (*from, *to);
                    self.did_not_happen(from, to);
                }
                // More rows than keys: a declared key that is not unique, rows were
                // written that the history does not hold. Fewer (some listed keys had
                // no row): the reply does not say which, and the history holds writes
                // of them all.
                Some(Reply::Exec {
                    what: Pending::Write { rows, .. },
                    ..
                }) => {
                    let rows = *rows;
                    let n = self.last_tag.rsplit(' ').next().unwrap_or("");
                    let why = match n.parse::<u64>() {
                                Ok(n) if n > rows => Some(format!(
                                    "{} by a declared key matched {n} rows: the declared key is not unique, and the history holds one row's writes",
                                    self.last_tag
                                )),
                                Ok(n) if n < rows => Some(format!(
                                    "{} by a list of {rows} keys matched {n} rows, not saying which: the history holds writes of all {rows}",
                                    self.last_tag
                                )),
                                _ => None,
                            };
                    if let Some(why) = why {
                        self.unrecorded += 1;
                        self.notes
                            .add(self.session.name(), self.session.txn_id(), true, &why)?;
                    }
                }
                Some(Reply::Exec {
                    what: Pending::RollbackTo { name, to },
                    ..
                }) => {
                    let (name, to) = (name.clone(), *to);
                    self.rolled_back_to(&name, to);
                }
                Some(Reply::Exec {
                    what: Pending::Unrecorded { why, write, txn },
                    ..
                }) => {
                    let (why, write, txn) = (why.clone(), *write, *txn);
                    self.unrecorded_ran(&why, write, txn)?;
                }
                _ => {}
            }
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
        if let Some(Reply::Exec {
            what:
                Pending::SelectIn {
                    table,
                    keys,
                    seen,
                    unnamed,
                },
            ..
        }) = self.queue.front()
        {
            let (table, unnamed) = (*table, *unnamed);
            let absent: Vec<Vec<u8>> = keys
                .iter()
                .zip(seen)
                .filter(|(_, s)| !**s)
                .map(|(k, _)| k.clone())
                .collect();
            if self.session.in_txn() && tag == b'C' {
                self.select_in_done(table, unnamed, &absent)?;
            }
        }
        if matches!(self.queue.front(), Some(Reply::Exec { .. })) {
            self.queue.pop_front();
        }
        Ok(())
    }

    /// ReadyForQuery: every request up to the first Sync is answered; idle, the transaction
    /// recorded ends, committed or rolled back as the server's replies said.
    fn ready_for_query(&mut self, f: &mut Fields) -> io::Result<()> {
        // Everything asked up to the first Sync is answered.
        while let Some(r) = self.queue.pop_front() {
            if matches!(r, Reply::Sync) {
                self.syncs_answered += 1;
                break;
            }
        }
        if self.end_due.is_some_and(|d| self.syncs_answered >= d) {
            self.end_due = None;
        }
        // Idle after a Sync sent before the transaction now recorded began is the
        // end of an earlier one, not of it.
        if f.byte() == Some(b'I') && self.syncs_answered > self.opened_at {
            if self.session.in_txn() {
                let rolled_back = self.failed || self.last_tag.starts_with("ROLLBACK");
                // Every operation logged was of statements that matched no row: it
                // did nothing, which is what an aborted transaction records.
                let nothing = self.phantom > 0 && self.phantom == self.session.txn_ops();
                if self.phantom > 0 && !nothing && !rolled_back {
                    self.phantom_note()?;
                }
                self.session.end(if rolled_back || nothing {
                    "aborted"
                } else {
                    "committed"
                })?;
            }
            self.phantom = 0;
            self.savepoints.clear();
            self.failed = false;
            self.explicit = false;
            self.autocommit_sent = false;
        }
        Ok(())
    }
}
