//! krait's native format: JSON Lines, one transaction per line (see `docs/history-format.md`).
//!
//! ```text
//! {"session":"c1","txn":1,"status":"committed","start":10,"commit":20,"ops":[["w","x",1],["r","y",null]]}
//! ```
//! A session's transactions appear in session order; sessions may interleave.

use super::jsonl_block::{not_utf8, read_blocks, Head, Input, Item, PieceOps, Rec, ValRef, LONG};
use super::jsonl_build::{FileOrder, Pending};
pub(crate) use super::jsonl_repair::{repair, Repair};
use super::jsonl_scan::{itoa_buf, LineRef, OpRef};
use super::{regular_file, Loaded};
use crate::error::{InputError, Location, Warning};
use crate::fxhash::FxHashMap;
use crate::model::{
    HistoryBuilder, KeyId, Keys, OpKind, TxnRecord, TxnStatus, ABSENT_VALUE, NATIVE_FENCE_KEY,
    NO_TIME,
};
use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;

/// The application's values of one record's operations: (op index, end in `text`), the texts
/// one after another. One string a record, not one an operation: a proxy's initial state is a
/// record of millions of them.
#[derive(Default)]
pub(crate) struct AppVals {
    at: Vec<(u32, u32)>,
    text: String,
}

impl AppVals {
    pub(crate) fn push(&mut self, i: u32, a: &str) {
        self.text.push_str(a);
        self.at.push((i, self.text.len() as u32));
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.at.is_empty()
    }
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u32, &str)> {
        self.at.iter().enumerate().map(|(j, &(i, end))| {
            let start = if j == 0 { 0 } else { self.at[j - 1].1 };
            (i, &self.text[start as usize..end as usize])
        })
    }
    fn of(v: Vec<(u32, String)>) -> AppVals {
        let mut a = AppVals::default();
        for (i, t) in &v {
            a.push(*i, t);
        }
        a
    }
}

/// Reads a JSON Lines file.
pub fn read_file(path: &Path) -> Result<Loaded, InputError> {
    read_many::<std::io::Empty>(vec![(path.to_path_buf(), Src::File)])
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
    let inputs = files.into_iter().map(|f| (f, Src::File)).collect();
    let mut l = read_many::<std::io::Empty>(inputs)?;
    l.warnings
        .extend(super::unrecorded::warning(dir, &l.history));
    Ok(l)
}

/// An input of [`read_many`]: a file opened when its turn comes (and closed after), or a
/// reader.
enum Src<R> {
    File,
    Reader(R),
}

/// A file's bytes: mapped into memory where it is a non-empty regular file that maps (the
/// mapping stays valid once the file is closed), else a reader of it.
enum Opened {
    Mapped(memmap2::Mmap),
    Read(std::fs::File),
}

fn open(path: &Path) -> Result<Opened, InputError> {
    let file = std::fs::File::open(path).map_err(|e| InputError::io(path, e))?;
    let meta = file.metadata().map_err(|e| InputError::io(path, e))?;
    if meta.len() == 0 || !meta.is_file() {
        return Ok(Opened::Read(file));
    }
    // SAFETY: the mapping is read-only and private. A file truncated by another process while
    // krait reads it would fault on the pages cut off, as reading a log while its writer
    // rewrites it gives no meaningful answer either way; appending is harmless (the mapping
    // covers the length at open).
    match unsafe { memmap2::MmapOptions::new().populate().map(&file) } {
        Ok(m) => Ok(Opened::Mapped(m)),
        Err(_) => Ok(Opened::Read(file)),
    }
}

/// Reads JSON Lines from `input`; `path` names it in errors.
pub fn read(input: impl BufRead, path: &Path) -> Result<Loaded, InputError> {
    read_many(vec![(path.to_path_buf(), Src::Reader(input))])
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
    let mut scanned = Vec::new();
    let rec = Rec::parse(text, &mut scanned).map_err(|e| not_a_record(path, at, e))?;
    let head = rec.head();
    let status = parse_status(head.status, path, at)?;
    let (ops, lists, app) = record_ops(&rec, &scanned, path, at, |k| keys.key(k))?;
    check_times(&head, path, at)?;
    Ok(TxnRecord {
        lists,
        app,
        session: session(&head.session),
        ext: head.txn,
        status,
        start: head.start.unwrap_or(NO_TIME),
        commit: head.commit.unwrap_or(NO_TIME),
        ops,
        claims: Vec::new(),
    })
}

/// A record's operations, their keys numbered by `key`: (ops, list-append reads, application
/// values), as the model takes them.
#[allow(clippy::type_complexity)]
fn record_ops(
    rec: &Rec,
    scanned: &[OpRef],
    path: &Path,
    at: Location,
    mut key: impl FnMut(&str) -> KeyId,
) -> Result<
    (
        Vec<(OpKind, KeyId, u64)>,
        Vec<(u32, Vec<u64>)>,
        Vec<(u32, String)>,
    ),
    InputError,
> {
    let mut ops = Vec::with_capacity(rec.head().num_ops);
    let mut lists = Vec::new();
    let mut app = Vec::new();
    rec.each_op(scanned, |i, kind, name, value, a| {
        ops.push(parse_op(i, kind, key(name), value, &mut lists, path, at)?);
        if let Some(a) = a {
            app.push((i as u32, a.to_string()));
        }
        Ok(())
    })?;
    Ok((ops, lists, app))
}

fn not_a_record(path: &Path, at: Location, e: serde_json::Error) -> InputError {
    InputError::new(path, at, format!("not a transaction record: {e}"))
}

fn check_times(l: &Head, path: &Path, at: Location) -> Result<(), InputError> {
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
    value: ValRef,
    lists: &mut Vec<(u32, Vec<u64>)>,
    path: &Path,
    at: Location,
) -> Result<(OpKind, KeyId, u64), InputError> {
    Ok(match (kind, value) {
        ("w", ValRef::Num(v)) => (OpKind::Write, k, v),
        ("w", ValRef::Null) => (OpKind::Write, k, ABSENT_VALUE),
        ("w", _) => {
            return Err(InputError::new(
                path,
                at,
                format!("op {i}: a write needs a value, or null for a delete"),
            ))
        }
        ("r", ValRef::Num(v)) => (OpKind::Read, k, v),
        ("r", ValRef::Null) => (OpKind::ReadInit, k, 0),
        ("r", ValRef::List(l)) => {
            lists.push((i as u32, l.to_vec()));
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

/// The file `krait proxy` records the tables' rows at start into (its `initial` session): a
/// cut last line there is an error, not a client that stopped.
pub const INITIAL_STATE_FILE: &str = "initial.jsonl";

/// The error for a cut initial state ([`INITIAL_STATE_FILE`]), the same for `check` and
/// `watch`.
pub(crate) fn cut_initial_state(path: &Path, at: Location) -> InputError {
    InputError::new(
        path,
        at,
        "the initial state (the rows the recorded tables held when the proxy started) is cut short: the disk filled or the proxy stopped while writing it, so what the first reads saw is unknown; record again",
    )
}

/// The warning for a last line cut before its operations.
pub(crate) const CUT_HEAD: &str =
    "the last line is cut short before its operations (the client stopped before the transaction asked to commit): left out";

/// What reading the inputs gathers before the history is built session by session.
struct Gathered {
    b: HistoryBuilder,
    /// Key ids of names shorter than 16 bytes, by their packed text (see `Piece::names`): a
    /// piece's names are looked up without hashing and comparing strings.
    short: FxHashMap<u128, KeyId>,
    sessions: Vec<(String, Vec<Pending>)>,
    session_index: HashMap<String, usize>,
    fence: Option<KeyId>,
    warnings: Vec<Warning>,
    /// Every record's operations, in the order read.
    ops: FileOrder,
}

/// Reads several inputs (one per session file, as the collector writes them) as one history.
fn read_many<R: std::io::Read>(
    inputs: Vec<(std::path::PathBuf, Src<R>)>,
) -> Result<Loaded, InputError> {
    let mut g = Gathered {
        b: HistoryBuilder::new(),
        short: FxHashMap::default(),
        sessions: Vec::new(),
        session_index: HashMap::new(),
        fence: None,
        warnings: Vec::new(),
        ops: FileOrder::default(),
    };
    let paths: Vec<std::path::PathBuf> = inputs.iter().map(|(p, _)| p.clone()).collect();
    for (file_no, (path, src)) in inputs.into_iter().enumerate() {
        let path = path.as_path();
        let opened;
        let input = match src {
            Src::Reader(r) => Input::Reader(Box::new(r)),
            Src::File => {
                opened = open(path)?;
                match &opened {
                    Opened::Mapped(m) => {
                        // An operation takes ten bytes at least.
                        g.ops.reserve(m.len() / 10 + 1);
                        Input::Mapped(&m[..])
                    }
                    Opened::Read(f) => Input::Reader(Box::new(f)),
                }
            }
        };
        let g = std::cell::RefCell::new(&mut g);
        read_blocks(
            input,
            path,
            |piece, base| {
                let mut g = g.borrow_mut();
                // The piece's key numbers → key ids, in the order the piece first names them.
                let mut table = Vec::with_capacity(piece.names.len());
                for item in std::mem::take(&mut piece.items) {
                    match item {
                        Item::Fast {
                            line,
                            head,
                            names_end,
                            app,
                        } => {
                            let at = (path, file_no, base + line);
                            for &(name, packed) in &piece.names[table.len()..names_end as usize] {
                                let mut digits = itoa_buf::Buf::default();
                                table.push(g.packed_key(name.as_str(&mut digits), packed));
                            }
                            g.add_fast(&head, &piece.ops, &table, app, at)?;
                        }
                        Item::Slow { line, rec } => {
                            g.add(&Rec::Slow(rec), &[], path, file_no, base + line)?;
                        }
                        Item::Bad { line, err } => {
                            let at = Location::Line(base + line);
                            return Err(InputError::new(
                                path,
                                at,
                                format!("not a transaction record: {err}"),
                            ));
                        }
                        Item::NotUtf8 { line } => return Err(not_utf8(path, base + line)),
                    }
                }
                Ok(())
            },
            |text, line_no| g.borrow_mut().last_line(text, path, file_no, line_no),
        )?;
    }
    let Gathered {
        b,
        sessions,
        warnings,
        ops,
        ..
    } = g;
    super::jsonl_build::build(b, sessions, warnings, &paths, ops)
}

impl Gathered {
    /// The last line of an input, which has no newline: a record, or a writer's crash to
    /// recover from when it ends mid-record.
    fn last_line(
        &mut self,
        text: &str,
        path: &Path,
        file_no: usize,
        line_no: u64,
    ) -> Result<(), InputError> {
        let text = text.trim();
        if text.is_empty() || text.starts_with('#') {
            return Ok(());
        }
        let at = Location::Line(line_no);
        let mut scanned = Vec::new();
        let e = match Rec::parse(text, &mut scanned) {
            Ok(rec) => return self.add(&rec, &scanned, path, file_no, line_no),
            Err(e) => e,
        };
        // The proxy's initial state is one transaction: cut, the rows the first reads saw are
        // unknown, and no outcome of it could stand in for them.
        if path.file_name().is_some_and(|n| n == INITIAL_STATE_FILE) {
            return Err(cut_initial_state(path, at));
        }
        match (e.is_eof(), repair(text)) {
            (true, Some(Repair::Drop)) => {
                self.warnings.push(Warning {
                    path: path.to_path_buf(),
                    location: at,
                    message: CUT_HEAD.to_string(),
                });
                Ok(())
            }
            (true, Some(Repair::Fixed(fixed, status))) => {
                self.warnings.push(Warning {
                    path: path.to_path_buf(),
                    location: at,
                    message: format!("the last line is cut short (the client stopped): read as a transaction with outcome {status}"),
                });
                scanned.clear();
                let rec =
                    Rec::parse(&fixed, &mut scanned).map_err(|e| not_a_record(path, at, e))?;
                self.add(&rec, &scanned, path, file_no, line_no)
            }
            _ => Err(not_a_record(path, at, e)),
        }
    }

    /// The id of a key named `name`, marking the fence key on first sight.
    fn key(&mut self, name: &str) -> KeyId {
        let k = self.b.key(name);
        if self.fence.is_none() && name == NATIVE_FENCE_KEY {
            self.fence = Some(k);
            self.b.set_fence_key(k);
        }
        k
    }

    /// [`Self::key`] of a piece's name, found by its packed text where it has one (see
    /// `Piece::names`).
    fn packed_key(&mut self, name: &str, packed: u128) -> KeyId {
        if packed == LONG {
            return self.key(name);
        }
        if let Some(&k) = self.short.get(&packed) {
            return k;
        }
        let k = self.key(name);
        self.short.insert(packed, k);
        k
    }

    /// Adds one record to its session's pending transactions, interning its keys.
    fn add(
        &mut self,
        rec: &Rec,
        scanned: &[OpRef],
        path: &Path,
        file_no: usize,
        line_no: u64,
    ) -> Result<(), InputError> {
        let at = Location::Line(line_no);
        let head = rec.head();
        let status = parse_status(head.status, path, at)?;
        let (ops, lists, app) = record_ops(rec, scanned, path, at, |k| self.key(k))?;
        check_times(&head, path, at)?;
        let ops = self.ops.extend(&ops);
        self.push(
            head.session.as_ref(),
            (file_no, line_no),
            &head,
            status,
            ops,
            lists,
            AppVals::of(app),
        );
        Ok(())
    }

    /// Adds a record the scanner read, its operations `l.first..l.end` of `scanned`, their key
    /// numbers mapped to key ids by `table`.
    fn add_fast(
        &mut self,
        l: &LineRef,
        scanned: &PieceOps,
        table: &[KeyId],
        app: AppVals,
        (path, file_no, line_no): (&Path, usize, u64),
    ) -> Result<(), InputError> {
        let at = Location::Line(line_no);
        let status = parse_status(l.status, path, at)?;
        let rec = Rec::Fast(*l);
        let head = rec.head();
        check_times(&head, path, at)?;
        let ops = self.ops.extend_scanned(scanned, (l.first, l.end), table);
        self.push(
            head.session.as_ref(),
            (file_no, line_no),
            &head,
            status,
            ops,
            Vec::new(),
            app,
        );
        Ok(())
    }

    /// Files a read transaction under its session, sessions numbered in order of first sight.
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        session: &str,
        (file, line): (usize, u64),
        head: &Head,
        status: TxnStatus,
        ops: std::ops::Range<usize>,
        lists: Vec<(u32, Vec<u64>)>,
        app: AppVals,
    ) {
        let si = match self.session_index.get(session) {
            Some(&si) => si,
            None => {
                self.sessions.push((session.to_string(), Vec::new()));
                self.session_index
                    .insert(session.to_string(), self.sessions.len() - 1);
                self.sessions.len() - 1
            }
        };
        self.sessions[si].1.push(Pending {
            file,
            line,
            ext: head.txn,
            status,
            start: head.start.unwrap_or(NO_TIME),
            commit: head.commit.unwrap_or(NO_TIME),
            ops,
            lists,
            app,
        });
    }
}
