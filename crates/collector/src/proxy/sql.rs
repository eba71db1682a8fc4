//! Which statements the proxy records, recognized from their SQL: transaction control, and on
//! the declared tables single-row statements by primary key — `SELECT cols|* FROM t WHERE pk =
//! v`, `UPDATE t SET c = v, … WHERE pk = v`, `INSERT INTO t (cols) VALUES (vs)` (with `ON
//! CONFLICT (…) DO UPDATE SET c = EXCLUDED.c`) — where each v is a constant or a parameter
//! (`$n`) — and savepoints. A simple query of several statements is taken statement by
//! statement. Any other statement that names a declared table is reported as not recorded:
//! the history would miss what it did.

/// A value in a statement: a constant (its text; None for NULL) or the n-th parameter.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Operand {
    Const(Option<Vec<u8>>),
    Param(usize),
}

/// What a statement is to the recorder.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Stmt {
    Begin,
    Commit,
    Rollback,
    /// Reads the columns the row description names of row `key` of table `table`.
    Select {
        table: usize,
        key: Operand,
    },
    /// `SELECT … WHERE pk IN (keys)`: reads of the rows returned, each named by its key
    /// column, and of no row for each key none was returned for.
    SelectIn {
        table: usize,
        keys: Vec<Operand>,
    },
    /// An INSERT of several rows: (key, columns) each, written as [`Stmt::Write`] writes one.
    InsertRows {
        table: usize,
        rows: Vec<(Operand, Vec<(String, Operand)>)>,
    },
    /// Writes these columns of row `key`; an UPDATE (`update`) only if the row exists, as its
    /// reply's row count tells.
    Write {
        table: usize,
        key: Operand,
        cols: Vec<(String, Operand)>,
        update: bool,
    },
    /// `UPDATE t SET col = col ± delta WHERE pk = key` (or `pk IN (keys)`): a read-modify-write
    /// of each row whose values only the database knows; sent with `RETURNING pk, col`
    /// (stripped from the reply) so each row's new value is seen, and its old one is the new
    /// one ∓ delta.
    Increment {
        table: usize,
        keys: Vec<Operand>,
        col: String,
        delta: Operand,
        minus: bool,
    },
    /// `UPDATE t SET c = v, … WHERE pk IN (keys)`: [`Stmt::Write`] of each listed row that
    /// exists; the reply counts the rows matched but not which, so a count short of the list
    /// is noted.
    UpdateIn {
        table: usize,
        keys: Vec<Operand>,
        cols: Vec<(String, Operand)>,
    },
    /// `DELETE FROM t WHERE pk IN (keys)`: [`Stmt::Delete`] of each listed row, as `UpdateIn`.
    DeleteIn {
        table: usize,
        keys: Vec<Operand>,
    },
    /// `DELETE FROM t WHERE pk = key`: every column of the row becomes absent.
    Delete {
        table: usize,
        key: Operand,
    },
    /// Names a declared table in a way the proxy cannot record (why): a history without what
    /// it wrote can be wrong.
    Unrecorded(String),
    /// A read of declared tables the proxy cannot record (several rows, an aggregate): the
    /// history only misses reads, which makes the check weaker, never wrong.
    UnrecordedRead(String),
    /// `SAVEPOINT name`.
    Savepoint(String),
    /// `ROLLBACK TO [SAVEPOINT] name`: what the transaction did since undone.
    RollbackTo(String),
    /// `RELEASE [SAVEPOINT] name`.
    Release(String),
    /// Touches no declared table (SET, SHOW, other tables…).
    Ignored,
}

/// A declared table: its name and primary-key column (lower case), and its columns (read
/// from the database at start: a delete removes every one of them).
#[derive(Clone, Debug)]
pub(crate) struct TableSpec {
    pub name: String,
    pub pk: String,
    pub cols: Vec<String>,
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Word(String),
    Quoted(String),
    Str(Vec<u8>),
    Num(String),
    Param(usize),
    Punct(char),
}

fn tokens(sql: &str) -> Option<Vec<Tok>> {
    tokens_at(sql, &mut Vec::new())
}

/// The tokens of `sql`, and in `semis` where each `;` outside strings, quotes and comments is.
fn tokens_at(sql: &str, semis: &mut Vec<usize>) -> Option<Vec<Tok>> {
    let b = sql.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i] as char;
        if c.is_whitespace() {
            i += 1;
        } else if sql[i..].starts_with("--") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if sql[i..].starts_with("/*") {
            i += sql[i..].find("*/")? + 2;
        } else if c.is_ascii_alphabetic() || c == '_' {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'$') {
                i += 1;
            }
            out.push(Tok::Word(sql[s..i].to_ascii_lowercase()));
        } else if c == '"' {
            let end = sql[i + 1..].find('"')?;
            out.push(Tok::Quoted(sql[i + 1..i + 1 + end].to_string()));
            i += end + 2;
        } else if c == '\'' {
            let mut v = Vec::new();
            i += 1;
            loop {
                match b.get(i)? {
                    b'\'' if b.get(i + 1) == Some(&b'\'') => {
                        v.push(b'\'');
                        i += 2;
                    }
                    b'\'' => {
                        i += 1;
                        break;
                    }
                    &x => {
                        v.push(x);
                        i += 1;
                    }
                }
            }
            out.push(Tok::Str(v));
        } else if c.is_ascii_digit() || (c == '-' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            let s = i;
            i += 1;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.') {
                i += 1;
            }
            out.push(Tok::Num(sql[s..i].to_string()));
        } else if c == '$' {
            let s = i + 1;
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let n: usize = sql[s..i].parse().ok()?;
            out.push(Tok::Param(n.checked_sub(1)?));
        } else {
            if c == ';' {
                semis.push(i);
            }
            out.push(Tok::Punct(c));
            i += c.len_utf8();
        }
    }
    // A trailing semicolon ends the one statement.
    if out.last() == Some(&Tok::Punct(';')) {
        out.pop();
    }
    Some(out)
}

struct P<'a> {
    t: &'a [Tok],
    i: usize,
}

impl P<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.t.get(self.i)
    }
    fn word(&mut self, w: &str) -> bool {
        if self.peek() == Some(&Tok::Word(w.to_string())) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn punct(&mut self, c: char) -> bool {
        if self.peek() == Some(&Tok::Punct(c)) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    /// A (possibly schema-qualified) name; its last part.
    fn name(&mut self) -> Option<String> {
        let mut n = match self.peek()? {
            Tok::Word(w) => w.clone(),
            Tok::Quoted(q) => q.clone(),
            _ => return None,
        };
        self.i += 1;
        while self.punct('.') {
            n = self.name()?;
        }
        Some(n)
    }
    fn operand(&mut self) -> Option<Operand> {
        let o = match self.peek()? {
            Tok::Str(v) => Operand::Const(Some(v.clone())),
            Tok::Num(n) => Operand::Const(Some(n.clone().into_bytes())),
            Tok::Param(n) => Operand::Param(*n),
            Tok::Word(w) if w == "null" => Operand::Const(None),
            _ => return None,
        };
        self.i += 1;
        Some(o)
    }
    fn done(&self) -> bool {
        self.i == self.t.len()
    }
}

fn table_of(tables: &[TableSpec], name: &str) -> Option<usize> {
    tables.iter().position(|t| t.name == name)
}

/// The end of a statement, past `FOR UPDATE`-style locking clauses where they may stand (after
/// a SELECT).
fn at_end(p: &mut P, locking: bool) -> bool {
    if locking && p.word("for") {
        while matches!(p.peek(), Some(Tok::Word(_))) {
            p.i += 1;
        }
    }
    p.done()
}

/// `WHERE pk = v` at the end of a statement.
fn where_pk(p: &mut P, pk: &str, locking: bool) -> Option<Operand> {
    if !(p.word("where") && p.name()? == pk && p.punct('=')) {
        return None;
    }
    let key = p.operand()?;
    at_end(p, locking).then_some(key)
}

/// `WHERE pk = v` or `WHERE pk IN (v, …)` at the end of a statement.
fn where_keys(p: &mut P, pk: &str, locking: bool) -> Option<Vec<Operand>> {
    let at = p.i;
    if let Some(k) = where_pk(p, pk, locking) {
        return Some(vec![k]);
    }
    p.i = at;
    if !(p.word("where") && p.name()? == pk && p.word("in") && p.punct('(')) {
        return None;
    }
    let mut keys = Vec::new();
    loop {
        keys.push(p.operand()?);
        if !p.punct(',') {
            break;
        }
    }
    (p.punct(')') && at_end(p, locking)).then_some(keys)
}

/// What each statement of `sql` is (a simple query may hold several, separated by `;`, which
/// the server runs in order as one implicit transaction unless they say otherwise).
pub(crate) fn classify_all(sql: &str, tables: &[TableSpec]) -> Vec<Stmt> {
    let mut semis = Vec::new();
    if tokens_at(sql, &mut semis).is_none() {
        return vec![classify(sql, tables)];
    }
    let mut out = Vec::new();
    let mut from = 0;
    for end in semis.into_iter().chain(std::iter::once(sql.len())) {
        let piece = &sql[from..end];
        from = (end + 1).min(sql.len());
        if !piece.trim().is_empty() {
            out.push(classify(piece, tables));
        }
    }
    if out.is_empty() {
        out.push(Stmt::Ignored);
    }
    out
}

/// What statement `sql` is, given the declared tables.
pub(crate) fn classify(sql: &str, tables: &[TableSpec]) -> Stmt {
    let Some(t) = tokens(sql) else {
        return Stmt::Unrecorded("unreadable SQL".into());
    };
    let touches = t.iter().any(|x| match x {
        Tok::Word(w) | Tok::Quoted(w) => table_of(tables, w).is_some(),
        _ => false,
    });
    let p = &mut P { t: &t, i: 0 };
    let first = match p.peek() {
        Some(Tok::Word(w)) => w.clone(),
        _ => return Stmt::Ignored,
    };
    p.i += 1;
    let parsed = match first.as_str() {
        "begin" | "start" => return Stmt::Begin,
        "commit" | "end" => return Stmt::Commit,
        "rollback" | "abort" if !t.iter().any(|x| *x == Tok::Word("to".into())) => {
            return Stmt::Rollback
        }
        "rollback" => {
            while !p.word("to") {
                p.i += 1;
            }
            p.word("savepoint");
            return match p.name() {
                Some(n) if p.done() => Stmt::RollbackTo(n),
                _ => Stmt::Unrecorded(format!("unreadable ROLLBACK TO: {}", sql.trim())),
            };
        }
        "savepoint" | "release" => {
            p.word("savepoint");
            return match (p.name(), first.as_str()) {
                (Some(n), "savepoint") if p.done() => Stmt::Savepoint(n),
                (Some(n), _) if p.done() => Stmt::Release(n),
                _ => Stmt::Unrecorded(format!("unreadable savepoint statement: {}", sql.trim())),
            };
        }
        // Maintenance and plans change no row (EXPLAIN ANALYZE runs its statement: not this).
        "vacuum" | "analyze" => return Stmt::Ignored,
        "explain" if !t.iter().any(|x| *x == Tok::Word("analyze".into())) => return Stmt::Ignored,
        _ if !touches => return Stmt::Ignored,
        "select" => select(p, tables),
        "update" => update(p, tables),
        "insert" => insert(p, tables),
        "delete" => delete(p, tables),
        _ => None,
    };
    parsed.unwrap_or_else(|| {
        let why = format!(
            "not a single-row statement by primary key the proxy can record: {}",
            sql.trim()
        );
        let locks = t.iter().any(|x| *x == Tok::Word("for".into()));
        if first == "select" && !locks {
            Stmt::UnrecordedRead(why)
        } else {
            Stmt::Unrecorded(why)
        }
    })
}

fn select(p: &mut P, tables: &[TableSpec]) -> Option<Stmt> {
    // A plain column list (or *), so the row description names the columns read.
    if !p.punct('*') {
        loop {
            p.name()?;
            if !p.punct(',') {
                break;
            }
        }
    }
    if !p.word("from") {
        return None;
    }
    let table = table_of(tables, &p.name()?)?;
    let mut keys = where_keys(p, &tables[table].pk, true)?;
    Some(if keys.len() == 1 {
        Stmt::Select {
            table,
            key: keys.remove(0),
        }
    } else {
        Stmt::SelectIn { table, keys }
    })
}

fn update(p: &mut P, tables: &[TableSpec]) -> Option<Stmt> {
    let table = table_of(tables, &p.name()?)?;
    if !p.word("set") {
        return None;
    }
    let mut cols = Vec::new();
    loop {
        let c = p.name()?;
        if !p.punct('=') {
            return None;
        }
        // `c = c + v`: alone in its SET, it is an increment.
        if cols.is_empty() && p.peek() == Some(&Tok::Word(c.clone())) {
            p.i += 1;
            let minus = if p.punct('+') {
                false
            } else if p.punct('-') {
                true
            } else {
                return None;
            };
            let delta = p.operand()?;
            let keys = where_keys(p, &tables[table].pk, false)?;
            return Some(Stmt::Increment {
                table,
                keys,
                col: c,
                delta,
                minus,
            });
        }
        cols.push((c, p.operand()?));
        if !p.punct(',') {
            break;
        }
    }
    let mut keys = where_keys(p, &tables[table].pk, false)?;
    cols.retain(|(c, _)| *c != tables[table].pk);
    Some(if keys.len() == 1 {
        Stmt::Write {
            table,
            key: keys.remove(0),
            cols,
            update: true,
        }
    } else {
        Stmt::UpdateIn { table, keys, cols }
    })
}

fn delete(p: &mut P, tables: &[TableSpec]) -> Option<Stmt> {
    if !p.word("from") {
        return None;
    }
    let table = table_of(tables, &p.name()?)?;
    // Without its columns a delete cannot say what it removed.
    if tables[table].cols.is_empty() {
        return None;
    }
    let mut keys = where_keys(p, &tables[table].pk, false)?;
    Some(if keys.len() == 1 {
        Stmt::Delete {
            table,
            key: keys.remove(0),
        }
    } else {
        Stmt::DeleteIn { table, keys }
    })
}

fn insert(p: &mut P, tables: &[TableSpec]) -> Option<Stmt> {
    if !p.word("into") {
        return None;
    }
    let table = table_of(tables, &p.name()?)?;
    let mut names = Vec::new();
    if !p.punct('(') {
        return None;
    }
    loop {
        names.push(p.name()?);
        if !p.punct(',') {
            break;
        }
    }
    if !(p.punct(')') && p.word("values")) {
        return None;
    }
    // One tuple per row.
    let mut tuples = Vec::new();
    loop {
        if !p.punct('(') {
            return None;
        }
        let mut vals = Vec::new();
        loop {
            vals.push(p.operand()?);
            if !p.punct(',') {
                break;
            }
        }
        if !p.punct(')') || vals.len() != names.len() {
            return None;
        }
        tuples.push(vals);
        if !p.punct(',') {
            break;
        }
    }
    // An upsert that sets each column it names to the inserted value writes the same row.
    if p.word("on") {
        if !(p.word("conflict") && p.punct('(')) {
            return None;
        }
        while !p.punct(')') {
            p.name()?;
            p.punct(',');
        }
        if !(p.word("do") && p.word("update") && p.word("set")) {
            return None;
        }
        loop {
            let c = p.name()?;
            if !(p.punct('=') && p.word("excluded") && p.punct('.') && p.name()? == c) {
                return None;
            }
            if !p.punct(',') {
                break;
            }
        }
    }
    if !p.done() {
        return None;
    }
    let pk = &tables[table].pk;
    let at = names.iter().position(|n| n == pk)?;
    let mut rows: Vec<(Operand, Vec<(String, Operand)>)> = tuples
        .into_iter()
        .map(|vals| {
            let key = vals[at].clone();
            let cols = names
                .iter()
                .cloned()
                .zip(vals)
                .filter(|(n, _)| n != pk)
                .collect();
            (key, cols)
        })
        .collect();
    Some(if rows.len() == 1 {
        let (key, cols) = rows.remove(0);
        Stmt::Write {
            table,
            key,
            cols,
            update: false,
        }
    } else {
        Stmt::InsertRows { table, rows }
    })
}

#[cfg(test)]
#[path = "sql_tests.rs"]
mod tests;
