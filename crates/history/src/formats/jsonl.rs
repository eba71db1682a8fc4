//! krait's native format: JSON Lines, one transaction per line (see `docs/history-format.md`).
//!
//! ```text
//! {"session":"c1","txn":1,"status":"committed","start":10,"commit":20,"ops":[["w","x",1],["r","y",null]]}
//! ```
//! A session's transactions appear in session order; sessions may interleave.

pub(crate) use super::jsonl_repair::{repair, Repair};
use super::{regular_file, Format, Loaded};
use crate::error::{InputError, Location, Warning};
use crate::model::{
    HistoryBuilder, KeyId, Keys, OpKind, TxnRecord, TxnStatus, NATIVE_FENCE_KEY, NO_TIME,
};
use serde::Deserialize;
use std::borrow::Cow;
use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;

#[derive(Deserialize)]
#[serde(untagged)]
enum Name<'a> {
    Str(#[serde(borrow)] Cow<'a, str>),
    Int(i64),
}

impl Name<'_> {
    fn to_key(&self) -> Cow<'_, str> {
        match self {
            Name::Str(s) => Cow::Borrowed(s.as_ref()),
            Name::Int(i) => Cow::Owned(i.to_string()),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LineIn<'a> {
    #[serde(borrow)]
    session: Name<'a>,
    txn: u64,
    #[serde(default, borrow)]
    pub(crate) status: Option<Cow<'a, str>>,
    #[serde(default)]
    start: Option<u64>,
    #[serde(default)]
    commit: Option<u64>,
    #[serde(borrow)]
    ops: Vec<OpIn<'a>>,
}

/// One operation: `[kind, key, value]`, or `[kind, key, value, app]` with the application's
/// own value (a string) that `value` stands for.
struct OpIn<'a> {
    kind: Cow<'a, str>,
    key: Name<'a>,
    value: OpVal,
    app: Option<Cow<'a, str>>,
}

impl<'de: 'a, 'a> Deserialize<'de> for OpIn<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for V<'a> {
            type Value = OpIn<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "an operation [kind, key, value] or [kind, key, value, application value]",
                )
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<OpIn<'a>, A::Error> {
                use serde::de::Error;
                let kind: Cow<'a, str> = a
                    .next_element::<BorrowedCow<'a>>()?
                    .ok_or_else(|| A::Error::invalid_length(0, &self))?
                    .0;
                let key = a
                    .next_element()?
                    .ok_or_else(|| A::Error::invalid_length(1, &self))?;
                let value = a
                    .next_element()?
                    .ok_or_else(|| A::Error::invalid_length(2, &self))?;
                let app = a.next_element::<BorrowedCow<'a>>()?.map(|c| c.0);
                if a.next_element::<serde::de::IgnoredAny>()?.is_some() {
                    return Err(A::Error::invalid_length(5, &self));
                }
                Ok(OpIn {
                    kind,
                    key,
                    value,
                    app,
                })
            }
        }
        d.deserialize_seq(V(std::marker::PhantomData))
    }
}

/// A string borrowed from the input where it has no escapes.
struct BorrowedCow<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for BorrowedCow<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct W<'a>(#[serde(borrow)] Cow<'a, str>);
        W::deserialize(d).map(|w| BorrowedCow(w.0))
    }
}

/// An op's value: a number, `null` (the initial state), or a list (a list-append read).
enum OpVal {
    Null,
    Num(u64),
    List(Vec<u64>),
}

impl<'de> Deserialize<'de> for OpVal {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // By hand rather than `untagged`, which would buffer every value.
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = OpVal;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an unsigned integer, null or a list of unsigned integers")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<OpVal, E> {
                Ok(OpVal::Num(v))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<OpVal, E> {
                Ok(OpVal::Null)
            }
            fn visit_none<E: serde::de::Error>(self) -> Result<OpVal, E> {
                Ok(OpVal::Null)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<OpVal, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = a.next_element::<u64>()? {
                    v.push(x);
                }
                Ok(OpVal::List(v))
            }
        }
        d.deserialize_any(V)
    }
}

struct Pending {
    file: usize,
    line: u64,
    ext: u64,
    status: TxnStatus,
    start: u64,
    commit: u64,
    ops: Vec<(OpKind, KeyId, u64)>,
    /// (op index, list) of list-append reads.
    lists: Vec<(u32, Vec<u64>)>,
    /// (op index, the application's value) where the log has one.
    app: Vec<(u32, String)>,
}

/// Reads a JSON Lines file.
pub fn read_file(path: &Path) -> Result<Loaded, InputError> {
    let f = std::fs::File::open(path).map_err(|e| InputError::io(path, e))?;
    read(std::io::BufReader::with_capacity(1 << 20, f), path)
}

/// The `*.jsonl` files of a directory (one per session, as the collector writes them).
pub fn dir_files(dir: &Path) -> Result<Vec<std::path::PathBuf>, InputError> {
    let rd = std::fs::read_dir(dir).map_err(|e| InputError::io(dir, e))?;
    let mut files: Vec<_> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    for f in &files {
        regular_file(f)?;
    }
    Ok(files)
}

/// Reads every `*.jsonl` file of a directory as one history.
pub fn read_dir(dir: &Path) -> Result<Loaded, InputError> {
    let files = dir_files(dir)?;
    if files.is_empty() {
        return Err(InputError::new(
            dir,
            Location::Nowhere,
            "no *.jsonl files in this directory",
        ));
    }
    // Opened one at a time, as they are read: more sessions than the open-file limit allows.
    let inputs = files
        .into_iter()
        .map(|f| {
            (
                f.clone(),
                LazyFile {
                    path: f,
                    file: None,
                },
            )
        })
        .collect();
    read_many(inputs)
}

/// A session file opened when first read and closed when dropped.
struct LazyFile {
    path: std::path::PathBuf,
    file: Option<std::io::BufReader<std::fs::File>>,
}

impl LazyFile {
    fn open(&mut self) -> std::io::Result<&mut std::io::BufReader<std::fs::File>> {
        if self.file.is_none() {
            let f = std::fs::File::open(&self.path)?;
            self.file = Some(std::io::BufReader::with_capacity(1 << 20, f));
        }
        Ok(self.file.as_mut().unwrap())
    }
}

impl std::io::Read for LazyFile {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.open()?.read(buf)
    }
}

impl BufRead for LazyFile {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.open()?.fill_buf()
    }
    fn consume(&mut self, n: usize) {
        if let Some(f) = self.file.as_mut() {
            f.consume(n);
        }
    }
}

/// Reads JSON Lines from `input`; `path` names it in errors.
pub fn read(input: impl BufRead, path: &Path) -> Result<Loaded, InputError> {
    read_many(vec![(path.to_path_buf(), input)])
}

/// One complete record of a log being followed (a line of a file, a message of a stream):
/// keys interned by `keys`, the session numbered by `session`.
pub fn parse_stream_line(
    text: &str,
    path: &Path,
    at: Location,
    keys: &mut dyn Keys,
    session: &mut dyn FnMut(&str) -> u32,
) -> Result<TxnRecord, InputError> {
    let l: LineIn = serde_json::from_str(text)
        .map_err(|e| InputError::new(path, at, format!("not a transaction record: {e}")))?;
    let status = parse_status(l.status.as_deref(), path, at)?;
    let mut ops = Vec::with_capacity(l.ops.len());
    let mut lists = Vec::new();
    let mut app = Vec::new();
    for (i, op) in l.ops.iter().enumerate() {
        let k = keys.key(&op.key.to_key());
        ops.push(parse_op(i, &op.kind, k, &op.value, &mut lists, path, at)?);
        if let Some(a) = &op.app {
            app.push((i as u32, a.to_string()));
        }
    }
    check_times(&l, path, at)?;
    Ok(TxnRecord {
        lists,
        app,
        session: session(&l.session.to_key()),
        ext: l.txn,
        status,
        start: l.start.unwrap_or(NO_TIME),
        commit: l.commit.unwrap_or(NO_TIME),
        ops,
        claims: Vec::new(),
    })
}

fn check_times(l: &LineIn, path: &Path, at: Location) -> Result<(), InputError> {
    match (l.start, l.commit) {
        (Some(s), Some(c)) if c < s => Err(InputError::new(
            path,
            at,
            format!("commit time {c} is before start time {s}"),
        )),
        _ => Ok(()),
    }
}

fn parse_status(s: Option<&str>, path: &Path, at: Location) -> Result<TxnStatus, InputError> {
    Ok(match s {
        None | Some("committed") | Some("ok") => TxnStatus::Committed,
        Some("aborted") | Some("fail") => TxnStatus::Aborted,
        Some("unknown") | Some("info") => TxnStatus::Unknown,
        Some(other) => {
            return Err(InputError::new(
                path,
                at,
                format!("bad status {other:?}; expected committed, aborted or unknown"),
            ))
        }
    })
}

fn parse_op(
    i: usize,
    kind: &str,
    k: KeyId,
    value: &OpVal,
    lists: &mut Vec<(u32, Vec<u64>)>,
    path: &Path,
    at: Location,
) -> Result<(OpKind, KeyId, u64), InputError> {
    Ok(match (kind, value) {
        ("w", OpVal::Num(v)) => (OpKind::Write, k, *v),
        ("w", _) => {
            return Err(InputError::new(
                path,
                at,
                format!("op {i}: a write needs a value"),
            ))
        }
        ("r", OpVal::Num(v)) => (OpKind::Read, k, *v),
        ("r", OpVal::Null) => (OpKind::ReadInit, k, 0),
        ("r", OpVal::List(l)) => {
            lists.push((i as u32, l.clone()));
            match l.last() {
                Some(&v) => (OpKind::Read, k, v),
                None => (OpKind::ReadInit, k, 0),
            }
        }
        (other, _) => {
            return Err(InputError::new(
                path,
                at,
                format!("op {i}: bad op kind {other:?}; expected \"r\" or \"w\""),
            ))
        }
    })
}

/// The warning for a last line cut before its operations.
pub(crate) const CUT_HEAD: &str =
    "the last line is cut short before its operations (the client stopped before the transaction asked to commit): left out";

/// Reads several inputs (one per session file, as the collector writes them) as one history.
fn read_many<R: BufRead>(inputs: Vec<(std::path::PathBuf, R)>) -> Result<Loaded, InputError> {
    let mut b = HistoryBuilder::new();
    let mut sessions: Vec<(String, Vec<Pending>)> = Vec::new();
    let mut session_index: HashMap<String, usize> = HashMap::new();
    let mut fence: Option<KeyId> = None;
    let mut warnings = Vec::new();
    let paths: Vec<std::path::PathBuf> = inputs.iter().map(|(p, _)| p.clone()).collect();
    for (file_no, (path, mut input)) in inputs.into_iter().enumerate() {
        let path = path.as_path();
        let mut buf = String::new();
        let mut line_no = 0u64;
        loop {
            buf.clear();
            let n = input.read_line(&mut buf).map_err(|e| {
                InputError::new(
                    path,
                    Location::Line(line_no + 1),
                    format!("cannot read: {e}"),
                )
            })?;
            if n == 0 {
                break;
            }
            line_no += 1;
            let complete = buf.ends_with('\n');
            let text = buf.trim();
            if text.is_empty() || text.starts_with('#') {
                continue;
            }
            let at = Location::Line(line_no);
            let repaired;
            let l: LineIn = match serde_json::from_str(text) {
                Ok(l) => l,
                // Only a last line that ends mid-record (no newline) is a crash to recover from.
                Err(e) => match (!complete && e.is_eof(), repair(text)) {
                    (true, Some(Repair::Drop)) => {
                        warnings.push(Warning {
                            path: path.to_path_buf(),
                            location: at,
                            message: CUT_HEAD.to_string(),
                        });
                        continue;
                    }
                    (true, Some(Repair::Fixed(fixed, status))) => {
                        warnings.push(Warning {
                            path: path.to_path_buf(),
                            location: at,
                            message: format!("the last line is cut short (the client stopped): read as a transaction with outcome {status}"),
                        });
                        repaired = fixed;
                        serde_json::from_str(&repaired).map_err(|e| {
                            InputError::new(path, at, format!("not a transaction record: {e}"))
                        })?
                    }
                    _ => {
                        return Err(InputError::new(
                            path,
                            at,
                            format!("not a transaction record: {e}"),
                        ))
                    }
                },
            };
            parse_line(
                l,
                path,
                at,
                file_no,
                line_no,
                &mut b,
                &mut fence,
                &mut sessions,
                &mut session_index,
            )?;
        }
    }
    let mut first_line: HashMap<u64, (usize, u64)> = HashMap::new();
    let has_lists = sessions
        .iter()
        .any(|(_, txns)| txns.iter().any(|p| !p.lists.is_empty()));
    for (name, txns) in sessions {
        b.begin_session(name);
        for p in txns {
            let path = paths[p.file].as_path();
            let mut lists = p.lists.iter().peekable();
            let mut app = p.app.iter().peekable();
            for (i, &(kind, k, v)) in p.ops.iter().enumerate() {
                let earlier = b.op(kind, k, v);
                if let Some((_, l)) = lists.next_if(|l| l.0 as usize == i) {
                    b.list(l);
                }
                if let Some((_, a)) = app.next_if(|a| a.0 as usize == i) {
                    b.app_value(a);
                }
                // A list holds each appended element once (see gather.rs).
                if earlier.is_some() && has_lists {
                    return Err(InputError::new(
                        path,
                        Location::Line(p.line),
                        format!(
                            "key {:?} is appended the value {v} more than once (list-append values must be unique per key)",
                            b.h.keys[k as usize]
                        ),
                    ));
                }
            }
            if b.finish_txn(p.ext, p.status, p.start, p.commit).is_err() {
                let (f, l) = first_line.get(&p.ext).copied().unwrap_or((0, 0));
                let where_ = if f == p.file {
                    format!("line {l}")
                } else {
                    format!("{} line {l}", paths[f].display())
                };
                return Err(InputError::new(
                    path,
                    Location::Line(p.line),
                    format!("transaction id {} is used twice (first on {where_})", p.ext),
                ));
            }
            first_line.insert(p.ext, (p.file, p.line));
        }
    }
    Ok(Loaded {
        history: b.finish(),
        warnings,
        format: Format::Jsonl,
    })
}

fn parse_line(
    l: LineIn,
    path: &Path,
    at: Location,
    file_no: usize,
    line_no: u64,
    b: &mut HistoryBuilder,
    fence: &mut Option<KeyId>,
    sessions: &mut Vec<(String, Vec<Pending>)>,
    session_index: &mut HashMap<String, usize>,
) -> Result<(), InputError> {
    let status = parse_status(l.status.as_deref(), path, at)?;
    let mut ops = Vec::with_capacity(l.ops.len());
    let mut lists = Vec::new();
    let mut app = Vec::new();
    for (i, op) in l.ops.iter().enumerate() {
        let k = b.key(&op.key.to_key());
        if fence.is_none() && b.h.keys[k as usize] == NATIVE_FENCE_KEY {
            *fence = Some(k);
            b.set_fence_key(k);
        }
        ops.push(parse_op(i, &op.kind, k, &op.value, &mut lists, path, at)?);
        if let Some(a) = &op.app {
            app.push((i as u32, a.to_string()));
        }
    }
    let sname = l.session.to_key().into_owned();
    let si = *session_index.entry(sname.clone()).or_insert_with(|| {
        sessions.push((sname, Vec::new()));
        sessions.len() - 1
    });
    check_times(&l, path, at)?;
    sessions[si].1.push(Pending {
        file: file_no,
        line: line_no,
        ext: l.txn,
        status,
        start: l.start.unwrap_or(NO_TIME),
        commit: l.commit.unwrap_or(NO_TIME),
        ops,
        lists,
        app,
    });
    Ok(())
}
