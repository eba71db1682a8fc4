//! The verifier's own reader of krait's native JSON Lines (`docs/history-format.md`), written
//! apart from krait-history's, which the checker uses: a bug in that reader would otherwise be
//! confirmed by both. It is kept plain rather than fast: each line becomes a
//! `serde_json::Value`, checked field by field against the format's documentation, and the
//! model is built with `HistoryBuilder` (the model's constructor, not the shared reader's code).
//!
//! It reads a file, or a directory of `*.jsonl` session logs as one history. It does not repair
//! a last line cut short by a crash, as the shared reader does: such a log is refused, and
//! `krait convert` turns it into a whole one that both readers take.

use krait_history::{
    History, HistoryBuilder, InputError, KeyId, Location, OpKind, TxnStatus, ABSENT_VALUE,
    NATIVE_FENCE_KEY, NO_TIME,
};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// The fields a record may have: any other is refused, as it is usually a typo.
const FIELDS: [&str; 6] = ["session", "txn", "status", "start", "commit", "ops"];

/// Why a log whose last line a crash cut short is refused, and what to do instead.
const NO_REPAIR: &str = "the verifier's reader does not repair it as `krait check` does; `krait convert` the history to a new .jsonl and verify against that";

/// What an operation does, with the value the line gives it (`None`: `null`).
enum Act {
    /// `["w", key, v]`; `null` is a delete.
    Write(Option<u64>),
    /// `["r", key, v]`; `null` read the initial state (or no row).
    Read(Option<u64>),
    /// `["r", key, [v1, ..., vn]]`: a list-append read of the whole list.
    ListRead(Vec<u64>),
}

/// One operation of a record, its key already interned.
struct Op {
    key: KeyId,
    act: Act,
    /// The application's own value that the number stands for.
    app: Option<String>,
}

/// One record: a transaction, and where it was read (file number, line).
struct Txn {
    file: usize,
    line: u64,
    ext: u64,
    status: TxnStatus,
    start: u64,
    commit: u64,
    ops: Vec<Op>,
}

/// Records gathered per session, to be built once all are read: a session's lines may be
/// spread over the input, and whether `null` reads mean "no row" is known only at the end.
struct Reader {
    /// Keys are interned here as lines are read, so key ids follow their first appearance.
    b: HistoryBuilder,
    paths: Vec<PathBuf>,
    /// Sessions in order of first appearance, each with its transactions in input order.
    sessions: Vec<(String, Vec<Txn>)>,
    session_at: HashMap<String, usize>,
    /// Transaction id → (file number, line) of the record that used it first.
    used: HashMap<u64, (usize, u64)>,
    /// Some write is a delete: every key starts absent, and `null` reads read that.
    deletes: bool,
    /// Some read returned a whole list: an element appended twice to a key is then an error.
    lists: bool,
    /// Key names by id, for errors.
    key_names: Vec<String>,
}

/// Reads a native JSON Lines history: a file, or every `*.jsonl` file of a directory (in name
/// order) as one history.
pub fn read_path(path: &Path) -> Result<History, InputError> {
    let files = if path.is_dir() {
        session_files(path)?
    } else {
        vec![path.to_path_buf()]
    };
    let mut r = Reader::new(files.clone());
    for (n, f) in files.iter().enumerate() {
        // Asked before opening: opening a FIFO blocks, and a device may never end.
        let meta = std::fs::metadata(f).map_err(|e| InputError::io(f, e))?;
        if !meta.is_file() {
            return Err(InputError::new(f, Location::Nowhere, "not a regular file"));
        }
        let file = std::fs::File::open(f).map_err(|e| InputError::io(f, e))?;
        r.read_input(std::io::BufReader::new(file), n)?;
    }
    r.build()
}

/// Reads native JSON Lines from `input`; `path` names it in errors.
pub fn read(input: impl BufRead, path: &Path) -> Result<History, InputError> {
    let mut r = Reader::new(vec![path.to_path_buf()]);
    r.read_input(input, 0)?;
    r.build()
}

/// The `*.jsonl` files of a directory, sorted by name (the directory's sessions).
fn session_files(dir: &Path) -> Result<Vec<PathBuf>, InputError> {
    let mut files = Vec::new();
    for e in std::fs::read_dir(dir).map_err(|e| InputError::io(dir, e))? {
        let p = e.map_err(|e| InputError::io(dir, e))?.path();
        if p.extension().is_some_and(|x| x == "jsonl") {
            files.push(p);
        }
    }
    if files.is_empty() {
        return Err(InputError::new(
            dir,
            Location::Nowhere,
            "no *.jsonl files in this directory",
        ));
    }
    files.sort();
    Ok(files)
}

/// A session or key name: a string, or an integer read as its decimal text.
fn name(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) if n.is_u64() || n.is_i64() => Some(n.to_string()),
        _ => None,
    }
}

/// A `start` or `commit` time: absent (or `null`), or nanoseconds.
fn time(rec: &Map<String, Value>, field: &str) -> Result<Option<u64>, String> {
    match rec.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| format!("{field:?} must be an unsigned integer (nanoseconds), not {v}")),
    }
}

fn status(rec: &Map<String, Value>) -> Result<TxnStatus, String> {
    // Jepsen's names are taken too, as the shared reader takes them: the checker may have
    // judged a history that uses them.
    Ok(match rec.get("status") {
        None | Some(Value::Null) => TxnStatus::Committed,
        Some(Value::String(s)) if s == "committed" || s == "ok" => TxnStatus::Committed,
        Some(Value::String(s)) if s == "aborted" || s == "fail" => TxnStatus::Aborted,
        Some(Value::String(s)) if s == "unknown" || s == "info" => TxnStatus::Unknown,
        Some(v) => {
            return Err(format!(
                "bad status {v}; expected \"committed\", \"aborted\" or \"unknown\""
            ))
        }
    })
}

/// An unsigned 64-bit value, or `null` (`None`).
fn number_or_null(v: &Value) -> Result<Option<u64>, ()> {
    match v {
        Value::Null => Ok(None),
        v => v.as_u64().map(Some).ok_or(()),
    }
}

/// What `["r"|"w", key, value]` does, from its kind and value.
fn act(kind: &Value, value: &Value) -> Result<Act, String> {
    match kind.as_str() {
        Some("w") => number_or_null(value).map(Act::Write).map_err(|()| {
            format!("a write's value must be an unsigned 64-bit integer, or null for a delete, not {value}")
        }),
        Some("r") => match value {
            Value::Array(list) => list
                .iter()
                .map(Value::as_u64)
                .collect::<Option<Vec<u64>>>()
                .map(Act::ListRead)
                .ok_or_else(|| {
                    format!("a list read's elements must be unsigned 64-bit integers: {value}")
                }),
            v => number_or_null(v).map(Act::Read).map_err(|()| {
                format!("a read's value must be an unsigned 64-bit integer, null or a list of them, not {v}")
            }),
        },
        _ => Err(format!("bad op kind {kind}; expected \"r\" or \"w\"")),
    }
}

impl Reader {
    fn new(paths: Vec<PathBuf>) -> Reader {
        Reader {
            b: HistoryBuilder::new(),
            paths,
            sessions: Vec::new(),
            session_at: HashMap::new(),
            used: HashMap::new(),
            deletes: false,
            lists: false,
            key_names: Vec::new(),
        }
    }

    /// Reads input number `file` line by line; blank lines and `#` comments are skipped.
    fn read_input(&mut self, mut input: impl BufRead, file: usize) -> Result<(), InputError> {
        let path = self.paths[file].clone();
        let mut bytes = Vec::new();
        let mut line = 0u64;
        loop {
            bytes.clear();
            let n = input
                .read_until(b'\n', &mut bytes)
                .map_err(|e| InputError::io(&path, e))?;
            if n == 0 {
                return Ok(());
            }
            line += 1;
            let at = Location::Line(line);
            let text = std::str::from_utf8(&bytes)
                .map_err(|_| InputError::new(&path, at, "not UTF-8 text"))?
                .trim();
            if text.is_empty() || text.starts_with('#') {
                continue;
            }
            let cut = !bytes.ends_with(b"\n");
            let rec = match serde_json::from_str::<Value>(text) {
                Ok(Value::Object(rec)) => rec,
                Ok(_) => {
                    return Err(InputError::new(
                        &path,
                        at,
                        "not a transaction record: a JSON object is expected",
                    ))
                }
                Err(e) if cut && e.is_eof() => {
                    let msg = format!("the last line is cut short ({e}): {NO_REPAIR}");
                    return Err(InputError::new(&path, at, msg));
                }
                Err(e) => {
                    let msg = format!("not a transaction record: {e}");
                    return Err(InputError::new(&path, at, msg));
                }
            };
            self.record(&rec, file, line)
                .map_err(|msg| InputError::new(&path, at, msg))?;
        }
    }

    /// Takes one record, filed under its session.
    fn record(&mut self, rec: &Map<String, Value>, file: usize, line: u64) -> Result<(), String> {
        if let Some(f) = rec.keys().find(|f| !FIELDS.contains(&f.as_str())) {
            return Err(format!(
                "unknown field {f:?}; a record has session, txn, status, start, commit and ops"
            ));
        }
        let field = |f: &str| rec.get(f).ok_or_else(|| format!("missing field {f:?}"));
        let session = name(field("session")?)
            .ok_or("the session must be a string or an integer".to_string())?;
        let ext = field("txn")?
            .as_u64()
            .ok_or("the transaction id (\"txn\") must be an unsigned integer".to_string())?;
        let status = status(rec)?;
        let (start, commit) = (time(rec, "start")?, time(rec, "commit")?);
        if let (Some(s), Some(c)) = (start, commit) {
            if c < s {
                return Err(format!("commit time {c} is before start time {s}"));
            }
        }
        let Value::Array(raw_ops) = field("ops")? else {
            return Err("\"ops\" must be an array of operations".into());
        };
        let mut ops = Vec::with_capacity(raw_ops.len());
        for (i, op) in raw_ops.iter().enumerate() {
            ops.push(self.op(op).map_err(|e| format!("op {i}: {e}"))?);
        }
        if let Some(&(f, l)) = self.used.get(&ext) {
            let first = if f == file {
                format!("line {l}")
            } else {
                format!("{} line {l}", self.paths[f].display())
            };
            return Err(format!(
                "transaction id {ext} is used twice (first on {first})"
            ));
        }
        self.used.insert(ext, (file, line));
        let t = Txn {
            file,
            line,
            ext,
            status,
            start: start.unwrap_or(NO_TIME),
            commit: commit.unwrap_or(NO_TIME),
            ops,
        };
        let next = self.sessions.len();
        let s = *self.session_at.entry(session.clone()).or_insert(next);
        if s == next {
            self.sessions.push((session, Vec::new()));
        }
        self.sessions[s].1.push(t);
        Ok(())
    }

    /// One operation: `[kind, key, value]` or `[kind, key, value, application value]`.
    fn op(&mut self, op: &Value) -> Result<Op, String> {
        let Some(parts) = op.as_array().filter(|p| p.len() == 3 || p.len() == 4) else {
            return Err(format!(
                "an operation is [kind, key, value] or [kind, key, value, application value], not {op}"
            ));
        };
        let act = act(&parts[0], &parts[2])?;
        let key = name(&parts[1])
            .ok_or_else(|| format!("a key must be a string or an integer, not {}", parts[1]))?;
        let app = match parts.get(3) {
            None => None,
            Some(Value::String(a)) => Some(a.clone()),
            Some(v) => {
                return Err(format!(
                    "the application's value (4th element) must be a string, not {v}"
                ))
            }
        };
        self.deletes |= matches!(act, Act::Write(None));
        self.lists |= matches!(act, Act::ListRead(_));
        Ok(Op {
            key: self.key(&key),
            act,
            app,
        })
    }

    /// The id of a key; the reserved fence key is marked as such.
    fn key(&mut self, name: &str) -> KeyId {
        let k = self.b.key(name);
        if k as usize == self.key_names.len() {
            self.key_names.push(name.to_string());
        }
        if name == NATIVE_FENCE_KEY {
            self.b.set_fence_key(k);
        }
        k
    }

    /// The history: sessions in order of first appearance, each one's transactions in order.
    fn build(self) -> Result<History, InputError> {
        let Reader {
            mut b,
            paths,
            sessions,
            deletes,
            lists,
            key_names,
            ..
        } = self;
        for (name, txns) in sessions {
            b.begin_session(name);
            for t in txns {
                let path = &paths[t.file];
                let at = Location::Line(t.line);
                for op in &t.ops {
                    // With list reads, an element appended twice would leave a list ambiguous
                    // (the format refuses it).
                    if let Some(v) = add_op(&mut b, op, deletes).filter(|_| lists) {
                        let key = &key_names[op.key as usize];
                        let msg = format!("key {key:?} is appended the value {v} more than once (list-append values must be unique per key)");
                        return Err(InputError::new(path, at, msg));
                    }
                }
                if b.finish_txn(t.ext, t.status, t.start, t.commit).is_err() {
                    // Ids used twice were refused as they were read.
                    let msg = format!("transaction id {} is used twice", t.ext);
                    return Err(InputError::new(path, at, msg));
                }
            }
        }
        if deletes {
            b.set_init_value(ABSENT_VALUE);
        }
        Ok(b.finish())
    }
}

/// Adds `op` to the open transaction. Returns the value of a write whose (key, value) an
/// earlier write has.
fn add_op(b: &mut HistoryBuilder, op: &Op, deletes: bool) -> Option<u64> {
    let k = op.key;
    let mut again = None;
    match &op.act {
        Act::Write(v) => {
            let v = v.unwrap_or(ABSENT_VALUE);
            again = b.op(OpKind::Write, k, v).map(|_| v);
        }
        Act::Read(Some(v)) => {
            b.op(OpKind::Read, k, *v);
        }
        // With deletes, every key starts absent: a read of no row may have read the initial
        // state or any delete, which is what a read of the value deletes write means.
        Act::Read(None) if deletes => {
            b.op(OpKind::Read, k, ABSENT_VALUE);
        }
        Act::Read(None) => {
            b.op(OpKind::ReadInit, k, 0);
        }
        Act::ListRead(list) => b.list_read(k, list),
    }
    if let Some(a) = &op.app {
        b.app_value(a);
    }
    again
}
