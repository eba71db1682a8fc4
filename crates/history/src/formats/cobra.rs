//! Cobra's binary per-session logs: a directory of `T<n>.log`, each a sequence of records
//! `S txn`, `W wid key value`, `R writer wid key value`, `C txn` (one opcode byte, then
//! big-endian i64 fields). Only committed transactions appear. See `docs/history-format.md`.
//!
//! One [`Decoder`] checks records and hands them out one at a time; the batch reader here and the
//! follower (`crate::follow`) both use it, so a log reads the same whether it is loaded whole or
//! tailed while it grows. They differ only in what they do at the end of the bytes: the batch
//! reader drops an unfinished last transaction with a warning, the follower waits for more.

use super::{cobra_part, regular_file, Format, Loaded};
use crate::error::{InputError, Location};
use crate::fxhash::FxHashMap;
use crate::model::{
    CobraClaims, HistoryBuilder, OpKind, COMPACT_FROM, FENCE_KEY_HASH, INIT_WRITE_ID, NO_TIME,
    NULL_WRITE_ID,
};
use std::path::{Path, PathBuf};

/// How to read a Cobra log directory.
#[derive(Clone, Copy, Debug, Default)]
pub struct CobraOptions {
    /// The variant with an 8-byte timestamp after `S` and `C`; `None` detects it.
    pub timestamps: Option<bool>,
}

/// The session files of a Cobra history directory, ordered by their number.
pub(crate) fn session_files(dir: &Path) -> Result<Vec<(u64, PathBuf)>, InputError> {
    let rd = std::fs::read_dir(dir).map_err(|e| InputError::io(dir, e))?;
    let mut files = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| InputError::io(dir, e))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(num) = name.strip_prefix('T').and_then(|s| s.strip_suffix(".log")) {
            if let Ok(n) = num.parse::<u64>() {
                regular_file(&entry.path())?;
                files.push((n, entry.path()));
            }
        }
    }
    files.sort();
    Ok(files)
}

/// Whether `dir` is a directory holding at least one `T<n>.log`.
pub(crate) fn is_cobra_dir(dir: &Path) -> bool {
    dir.is_dir() && session_files(dir).map(|f| !f.is_empty()).unwrap_or(false)
}

/// The session a log file holds: its file stem (`T3`).
pub(crate) fn session_name(p: &Path) -> String {
    p.file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("?")
        .to_string()
}

/// The name a key hash gets in the model, and whether it is the fence key ("FZVERSION").
pub(crate) fn key_name(h: u64) -> (String, bool) {
    if h == FENCE_KEY_HASH {
        ("FZVERSION".to_string(), true)
    } else {
        (format!("{h:016x}"), false)
    }
}

#[inline]
fn be(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().unwrap())
}

/// Bytes of an `R` record.
const READ_LEN: usize = 33;

/// Bytes of the record with opcode `op` (`S` and `C` carry a timestamp more in the stamped
/// variant); `None` where `op` is none.
#[inline]
pub(crate) fn record_len(op: u8, ts: bool) -> Option<usize> {
    match op {
        b'S' | b'C' => Some(if ts { 17 } else { 9 }),
        b'W' => Some(25),
        b'R' => Some(READ_LEN),
        _ => None,
    }
}

/// Whether the bytes parse as the timestamped variant: the first record must be `S` and the
/// plain layout must not, while the stamped one does, reach a valid opcode after it. Works on
/// the start of a file still being written too.
pub(crate) fn looks_timestamped(b: &[u8]) -> bool {
    fn walk(b: &[u8], ts: bool) -> bool {
        let mut i = 0;
        let mut seen = 0;
        while i < b.len() && seen < 64 {
            let Some(len) = record_len(b[i], ts) else {
                return false;
            };
            i += len;
            seen += 1;
        }
        true
    }
    !b.is_empty() && !walk(b, false) && walk(b, true)
}

/// A `W` or `R` record of the open transaction.
pub(crate) struct CobraOp {
    /// Byte offset of the record in the file.
    pub at: u64,
    /// `Write`; `Read`, or `ReadInit` for a read of one of the initial-state write ids.
    pub kind: OpKind,
    pub key_hash: u64,
    /// The write id written, or read.
    pub wid: u64,
    pub value_hash: u64,
    /// A read: the writer transaction it names; a write: 0.
    pub writer: u64,
}

/// A record, checked against the ones before it.
pub(crate) enum Record {
    /// `S`: a transaction starts.
    Start,
    /// `W` or `R`: an operation of the open transaction.
    Op(CobraOp),
    /// `C`: the open transaction committed.
    Commit {
        /// Byte offset of the record in the file.
        at: u64,
        txn: u64,
        start: u64,
        commit: u64,
    },
}

/// Reads the records of (part of) one log. Errors name the file and the record's byte offset;
/// a record the bytes end inside of ends decoding without an error ([`Self::cut`]).
pub(crate) struct Decoder<'a> {
    bytes: &'a [u8],
    path: &'a Path,
    /// Offset in the file of `bytes[0]`.
    base: u64,
    ts: bool,
    /// The next record starts here (in `bytes`).
    pos: usize,
    /// The open transaction: (id, start time, offset of its `S` in the file).
    open: Option<(u64, u64, u64)>,
    /// The record the bytes end inside of: (offset in the file, opcode).
    cut: Option<(u64, u8)>,
}

impl<'a> Decoder<'a> {
    pub fn new(bytes: &'a [u8], path: &'a Path, base: u64, ts: bool) -> Self {
        Decoder {
            bytes,
            path,
            base,
            ts,
            pos: 0,
            open: None,
            cut: None,
        }
    }

    /// Bytes consumed: the end of the last record handed out.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// The transaction still open: (id, offset of its `S` in the file).
    pub fn open(&self) -> Option<(u64, u64)> {
        self.open.map(|(t, _, at)| (t, at))
    }

    /// The record the bytes ended inside of, if they did: (offset in the file, opcode).
    pub fn cut(&self) -> Option<(u64, u8)> {
        self.cut
    }

    /// Hands `f` the `R` records that come next in the open transaction, each whole in the
    /// bytes, and moves past them; anything else is left to [`Self::next_record`], which
    /// reads these the same way. Most of a read-heavy log is such runs: read here by fixed
    /// offsets, they take a third of the instructions each that going through a [`Record`]
    /// and its checks did.
    #[inline(always)]
    pub fn reads(&mut self, mut f: impl FnMut(&CobraOp)) {
        if self.open.is_none() || self.cut.is_some() {
            return;
        }
        let b = self.bytes;
        let mut i = self.pos;
        while let Some(r) = b.get(i..i + READ_LEN) {
            let r: &[u8; READ_LEN] = r.try_into().expect("a whole record");
            if r[0] != b'R' {
                break;
            }
            let field = |at: usize| u64::from_be_bytes(r[at..at + 8].try_into().expect("8 bytes"));
            let wid = field(9);
            let init = wid == INIT_WRITE_ID || wid == NULL_WRITE_ID;
            f(&CobraOp {
                at: self.base + i as u64,
                kind: if init { OpKind::ReadInit } else { OpKind::Read },
                key_hash: field(17),
                wid,
                value_hash: field(25),
                writer: field(1),
            });
            i += READ_LEN;
        }
        self.pos = i;
    }

    /// The next record; `None` at the end of the bytes or at a record they end inside of.
    pub fn next_record(&mut self) -> Result<Option<Record>, InputError> {
        let (b, i) = (self.bytes, self.pos);
        if i >= b.len() || self.cut.is_some() {
            return Ok(None);
        }
        let op = b[i];
        let at = self.base + i as u64;
        let err = |msg: String| InputError::new(self.path, Location::Offset(at), msg);
        let len = match record_len(op, self.ts) {
            Some(len) => len,
            None => {
                let shown = if op.is_ascii_graphic() {
                    format!(" ('{}')", op as char)
                } else {
                    String::new()
                };
                return Err(err(format!(
                    "bad opcode 0x{op:02x}{shown}; expected S, W, R or C"
                )));
            }
        };
        if i + len > b.len() {
            self.cut = Some((at, op));
            return Ok(None);
        }
        let time = |b: &[u8]| if self.ts { be(b, i + 9) } else { NO_TIME };
        let rec = match (op, self.open) {
            (b'S', Some((t, _, s_at))) => {
                return Err(err(format!(
                "transaction {t} (started at byte offset {s_at}) has no commit before this start"
            )))
            }
            (b'S', None) => {
                self.open = Some((be(b, i + 1), time(b), at));
                Record::Start
            }
            (b'C', open) => {
                let t = be(b, i + 1);
                match open {
                    Some((o, start, _)) if o == t => {
                        self.open = None;
                        Record::Commit {
                            at,
                            txn: t,
                            start,
                            commit: time(b),
                        }
                    }
                    Some((o, _, _)) => {
                        return Err(err(format!(
                            "commit of transaction {t}, but transaction {o} is the one open"
                        )))
                    }
                    None => {
                        return Err(err(format!(
                            "commit of transaction {t}, which never started"
                        )))
                    }
                }
            }
            (_, None) => {
                return Err(err(format!(
                    "'{}' record outside a transaction",
                    op as char
                )))
            }
            (b'W', Some(_)) => {
                let wid = be(b, i + 1);
                if wid == INIT_WRITE_ID || wid == NULL_WRITE_ID {
                    return Err(err(format!(
                        "write uses the reserved initial-state write id 0x{wid:x}"
                    )));
                }
                Record::Op(CobraOp {
                    at,
                    kind: OpKind::Write,
                    key_hash: be(b, i + 9),
                    wid,
                    value_hash: be(b, i + 17),
                    writer: 0,
                })
            }
            (_, Some(_)) => {
                let wid = be(b, i + 9);
                let init = wid == INIT_WRITE_ID || wid == NULL_WRITE_ID;
                Record::Op(CobraOp {
                    at,
                    kind: if init { OpKind::ReadInit } else { OpKind::Read },
                    key_hash: be(b, i + 17),
                    wid,
                    value_hash: be(b, i + 25),
                    writer: be(b, i + 1),
                })
            }
        };
        self.pos = i + len;
        Ok(Some(rec))
    }
}

/// Reads a Cobra log directory, one session per `T<n>.log`, the logs decoded on every core
/// (`cobra_part`).
pub fn read_dir(dir: &Path, opts: CobraOptions) -> Result<Loaded, InputError> {
    let files = session_files(dir)?;
    if files.is_empty() {
        return Err(InputError::new(
            dir,
            Location::Nowhere,
            "no T<n>.log session files in this directory",
        ));
    }
    let mut b = HistoryBuilder::new().with_cobra_claims();
    let bytes_on_disk: u64 = files
        .iter()
        .filter_map(|(_, p)| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    let mut warnings = Vec::new();
    cobra_part::read_all(
        &mut b,
        &files,
        bytes_on_disk,
        opts.timestamps,
        &mut warnings,
    )?;
    if let Some((later, _)) = b.index_deferred_writes() {
        let mut logs = files.iter().map(|(_, p)| {
            let bytes = std::fs::read(p).map_err(|e| InputError::io(p, e))?;
            Ok((p.clone(), bytes))
        });
        return Err(repeated_write_id(&mut logs, later, opts.timestamps));
    }
    let mut history = b.finish();
    if history.num_ops() >= COMPACT_FROM {
        CobraClaims::compact(&mut history);
    }
    Ok(Loaded {
        history,
        warnings,
        format: Format::Cobra,
    })
}

/// Reads one log's bytes as a history of one session, named after `path`; `timestamps` says
/// which variant the bytes are. For bytes at hand (tests, fuzzing); [`read_dir`] reads files.
pub fn read_log(bytes: &[u8], path: &Path, timestamps: bool) -> Result<Loaded, InputError> {
    let mut b = HistoryBuilder::new().with_cobra_claims();
    let mut warnings = Vec::new();
    let mut keys = FxHashMap::default();
    cobra_part::read_direct(&mut b, bytes, path, timestamps, &mut keys, &mut warnings)?;
    if let Some((later, _)) = b.index_deferred_writes() {
        let mut logs = std::iter::once(Ok((path.to_path_buf(), bytes.to_vec())));
        return Err(repeated_write_id(&mut logs, later, Some(timestamps)));
    }
    Ok(Loaded {
        history: b.finish(),
        warnings,
        format: Format::Cobra,
    })
}

/// The error for a write id used twice: op `later` (counting the operations of committed
/// transactions over `logs` in order, as they were added) named with its file and offset. Only
/// a failing load comes here, so reading the logs again costs nothing that matters.
fn repeated_write_id(
    logs: &mut dyn Iterator<Item = Result<(PathBuf, Vec<u8>), InputError>>,
    later: u32,
    timestamps: Option<bool>,
) -> InputError {
    let mut before = 0u64;
    for log in logs {
        let (path, bytes) = match log {
            Ok(l) => l,
            Err(e) => return e,
        };
        let ts = timestamps.unwrap_or_else(|| looks_timestamped(&bytes));
        let mut d = Decoder::new(&bytes, &path, 0, ts);
        let mut open: Vec<(u64, u64)> = Vec::new();
        while let Ok(Some(rec)) = d.next_record() {
            match rec {
                Record::Start => open.clear(),
                Record::Op(op) => open.push((op.at, op.wid)),
                Record::Commit { .. } => {
                    let n = open.len() as u64;
                    if (later as u64) < before + n {
                        let (at, wid) = open[(later as u64 - before) as usize];
                        return InputError::new(
                            &path,
                            Location::Offset(at),
                            format!("write id 0x{wid:x} is used by an earlier write"),
                        );
                    }
                    before += n;
                }
            }
        }
    }
    InputError::new(
        Path::new("."),
        Location::Nowhere,
        format!("a write id is used by more than one write (operation {later})"),
    )
}
