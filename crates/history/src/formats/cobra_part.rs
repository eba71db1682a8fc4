//! Cobra session logs decoded on every core. Each log is read and decoded on its own into a
//! [`Part`] (its operations in arrays of the model's own types, keys numbered within the log);
//! then, in file order, each part's keys, transactions and operations join the history.
//!
//! The outcome is the one reading the logs one after another gives: the same ids, the same
//! warnings, and on bad input the same first error, because what crosses logs (key ids,
//! transaction ids used twice, which error comes first) is settled in file order.

use super::cobra::{key_name, looks_timestamped, session_name, CobraOp, Decoder, Record};
use crate::error::{InputError, Location, Warning};
use crate::fxhash::FxHashMap;
use crate::model::{HistoryBuilder, KeyId, OpId, OpKind, TxnStatus, DELETE_WRITE_ID};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// One committed transaction of a part.
struct PartTxn {
    ext: u64,
    start: u64,
    commit: u64,
    /// Its operations end here, counted within the part.
    end: u32,
    /// Byte offset of its `C` record (a transaction id used twice is named there).
    at: u64,
}

/// One session log, decoded.
#[derive(Default)]
pub(crate) struct Part {
    path: PathBuf,
    kind: Vec<OpKind>,
    /// Key ids within this log: indexes into `keys`.
    key: Vec<KeyId>,
    value: Vec<u64>,
    value_hash: Vec<u64>,
    writer: Vec<u64>,
    /// The writes to enter in the (key, value) index (deletes share one id and are left out).
    writes: Vec<u32>,
    txns: Vec<PartTxn>,
    /// This log's keys, by their hash, in order of first sight.
    keys: Vec<u64>,
    /// Key hash → its id within this log.
    local: FxHashMap<u64, KeyId>,
    warning: Option<Warning>,
    /// Decoding stopped here; what came before is kept, so that an earlier problem (a
    /// transaction id used twice) is still the one reported.
    error: Option<InputError>,
}

impl Part {
    /// Empties the part for the log at `path`, of `bytes` bytes, keeping its memory: parts are
    /// used again for later logs, because fresh memory costs a page fault per page touched,
    /// which on small histories was as much as the decoding.
    fn reset(&mut self, path: &Path, bytes: usize) {
        self.path = path.to_path_buf();
        self.kind.clear();
        self.key.clear();
        self.value.clear();
        self.value_hash.clear();
        self.writer.clear();
        self.writes.clear();
        self.txns.clear();
        self.keys.clear();
        self.local.clear();
        self.warning = None;
        self.error = None;
        // Every operation record is 25 bytes or more; room never touched costs nothing.
        let n = bytes / 25;
        self.kind.reserve(n);
        self.key.reserve(n);
        self.value.reserve(n);
        self.value_hash.reserve(n);
        self.writer.reserve(n);
    }

    /// Drops the operations after the last committed transaction (an unfinished one).
    fn cut_open(&mut self) {
        let keep = self.txns.last().map_or(0, |t| t.end as usize);
        self.kind.truncate(keep);
        self.key.truncate(keep);
        self.value.truncate(keep);
        self.value_hash.truncate(keep);
        self.writer.truncate(keep);
        while self.writes.last().is_some_and(|&w| w as usize >= keep) {
            self.writes.pop();
        }
    }
}

/// Below this many bytes of logs, decoding stays on the calling thread: starting the other
/// cores' threads costs about half a millisecond, more than they would save.
const PARALLEL_FROM: u64 = 8 << 20;

/// Reads the logs of a Cobra directory (`bytes` in all) into `b`, one session each, in file
/// order: a few logs at a time are decoded on every core while the ones before them are added
/// to `b`, so that only those few are held twice (as parts and in the history).
pub(crate) fn read_all(
    b: &mut HistoryBuilder,
    files: &[(u64, PathBuf)],
    bytes: u64,
    timestamps: Option<bool>,
    warnings: &mut Vec<Warning>,
) -> Result<(), InputError> {
    let mut keys: FxHashMap<u64, KeyId> = FxHashMap::default();
    let pool = Pool::default();
    if bytes < PARALLEL_FROM {
        let mut buf = Vec::new();
        for (_, path) in files {
            let ts = read_file(path, &mut buf, timestamps)?;
            read_direct(b, &buf, path, ts, &mut keys, warnings)?;
        }
        return Ok(());
    }
    let batch = 2 * rayon::current_num_threads();
    let mut pending: Vec<Part> = Vec::new();
    for chunk in files.chunks(batch) {
        let done = std::mem::take(&mut pending);
        let (next, added) = rayon::join(
            || {
                chunk
                    .par_iter()
                    .map(|(_, path)| decode_file(path, timestamps, &pool))
                    .collect()
            },
            || append_all(b, done, &mut keys, warnings, &pool),
        );
        added?;
        pending = next;
    }
    append_all(b, pending, &mut keys, warnings, &pool)
}

/// Parts and file buffers to use again.
#[derive(Default)]
struct Pool {
    parts: Mutex<Vec<Part>>,
    bufs: Mutex<Vec<Vec<u8>>>,
}

fn take<T: Default>(m: &Mutex<Vec<T>>) -> T {
    m.lock()
        .unwrap_or_else(|e| e.into_inner())
        .pop()
        .unwrap_or_default()
}

fn give<T>(m: &Mutex<Vec<T>>, x: T) {
    m.lock().unwrap_or_else(|e| e.into_inner()).push(x);
}

/// Reads and decodes the log at `path`; a file that cannot be read is a part holding only
/// that error.
fn decode_file(path: &Path, timestamps: Option<bool>, pool: &Pool) -> Part {
    let mut bytes = take(&pool.bufs);
    let mut p = take(&pool.parts);
    match read_file(path, &mut bytes, timestamps) {
        Ok(ts) => decode_into(&mut p, &bytes, path, ts),
        Err(e) => {
            p.reset(path, 0);
            p.error = Some(e);
        }
    }
    give(&pool.bufs, bytes);
    p
}

/// Reads the log at `path` into `buf` (emptied first); says whether it is the timestamped
/// variant (`timestamps`, or detected from the bytes).
fn read_file(path: &Path, buf: &mut Vec<u8>, timestamps: Option<bool>) -> Result<bool, InputError> {
    use std::io::Read;
    buf.clear();
    std::fs::File::open(path)
        .and_then(|mut file| file.read_to_end(buf))
        .map_err(|e| InputError::io(path, e))?;
    Ok(timestamps.unwrap_or_else(|| looks_timestamped(buf)))
}

fn append_all(
    b: &mut HistoryBuilder,
    parts: Vec<Part>,
    keys: &mut FxHashMap<u64, KeyId>,
    warnings: &mut Vec<Warning>,
    pool: &Pool,
) -> Result<(), InputError> {
    for mut p in parts {
        append(b, &mut p, keys, warnings)?;
        give(&pool.parts, p);
    }
    Ok(())
}

/// Where decoded records go: a [`Part`], or straight into the history ([`Direct`]).
trait Sink {
    /// The id of a key, by its hash.
    fn key(&mut self, hash: u64) -> KeyId;
    fn op(&mut self, key: KeyId, op: &CobraOp);
    fn commit(&mut self, txn: u64, start: u64, commit: u64, at: u64) -> Result<(), InputError>;
    /// Drops the operations of the transaction still open.
    fn drop_open(&mut self);
}

/// Decodes one log's bytes into `s`. An unfinished last transaction is dropped, with the
/// warning returned (only committed ones are logged).
fn decode_with(
    s: &mut impl Sink,
    bytes: &[u8],
    path: &Path,
    ts: bool,
) -> Result<Option<Warning>, InputError> {
    let mut d = Decoder::new(bytes, path, 0, ts);
    while let Some(rec) = d.next_record()? {
        match rec {
            Record::Start => {}
            Record::Op(op) => {
                let k = s.key(op.key_hash);
                s.op(k, &op);
            }
            Record::Commit {
                at,
                txn,
                start,
                commit,
            } => s.commit(txn, start, commit, at)?,
        }
    }
    let (at, message) = match (d.cut(), d.open()) {
        (None, None) => return Ok(None),
        (Some((at, op)), None) => (
            at,
            format!("truncated record '{}' at end of file: ignored", op as char),
        ),
        (Some((at, op)), Some((t, _))) => (
            at,
            format!(
                "truncated record '{}' in transaction {t}: transaction dropped",
                op as char
            ),
        ),
        (None, Some((t, at))) => (
            at,
            format!("transaction {t} has no commit (the file ends): transaction dropped"),
        ),
    };
    if d.open().is_some() {
        s.drop_open();
    }
    Ok(Some(Warning {
        path: path.to_path_buf(),
        location: Location::Offset(at),
        message,
    }))
}

/// A write id names one write (reads name their writer by it), checked when every write is
/// in; deletes share one id and take no part in resolution.
fn indexed_write(op: &CobraOp) -> bool {
    op.kind == OpKind::Write && op.wid != DELETE_WRITE_ID
}

impl Sink for Part {
    fn key(&mut self, hash: u64) -> KeyId {
        *self.local.entry(hash).or_insert_with(|| {
            self.keys.push(hash);
            self.keys.len() as KeyId - 1
        })
    }
    fn op(&mut self, key: KeyId, op: &CobraOp) {
        if indexed_write(op) {
            self.writes.push(self.kind.len() as u32);
        }
        self.kind.push(op.kind);
        self.key.push(key);
        self.value.push(op.wid);
        self.value_hash.push(op.value_hash);
        self.writer.push(op.writer);
    }
    fn commit(&mut self, txn: u64, start: u64, commit: u64, at: u64) -> Result<(), InputError> {
        self.txns.push(PartTxn {
            ext: txn,
            start,
            commit,
            end: self.kind.len() as u32,
            at,
        });
        Ok(())
    }
    fn drop_open(&mut self) {
        self.cut_open();
    }
}

/// Decodes into a part used before; a decoding error is kept in it.
fn decode_into(p: &mut Part, bytes: &[u8], path: &Path, ts: bool) {
    p.reset(path, bytes.len());
    match decode_with(p, bytes, path, ts) {
        Ok(w) => p.warning = w,
        Err(e) => {
            p.cut_open();
            p.error = Some(e);
        }
    }
}

/// Decoding straight into the history, where the logs are too small for other cores to pay.
struct Direct<'a> {
    b: &'a mut HistoryBuilder,
    keys: &'a mut FxHashMap<u64, KeyId>,
    path: &'a Path,
}

impl Sink for Direct<'_> {
    fn key(&mut self, hash: u64) -> KeyId {
        global_key(self.b, self.keys, hash)
    }
    fn op(&mut self, key: KeyId, op: &CobraOp) {
        if indexed_write(op) {
            self.b.write_deferred(key, op.wid);
        } else {
            self.b.op_unindexed(op.kind, key, op.wid);
        }
        self.b.cobra_claim(op.value_hash, op.writer);
    }
    fn commit(&mut self, txn: u64, start: u64, commit: u64, at: u64) -> Result<(), InputError> {
        match self.b.finish_txn(txn, TxnStatus::Committed, start, commit) {
            Ok(_) => Ok(()),
            Err(_) => Err(used_twice(self.path, txn, at)),
        }
    }
    fn drop_open(&mut self) {
        self.b.discard_open_ops();
    }
}

/// Reads one log's bytes into `b` as its next session, straight (no part).
pub(crate) fn read_direct(
    b: &mut HistoryBuilder,
    bytes: &[u8],
    path: &Path,
    ts: bool,
    keys: &mut FxHashMap<u64, KeyId>,
    warnings: &mut Vec<Warning>,
) -> Result<(), InputError> {
    b.begin_session(session_name(path));
    let mut s = Direct { b, keys, path };
    warnings.extend(decode_with(&mut s, bytes, path, ts)?);
    b.end_session();
    Ok(())
}

fn used_twice(path: &Path, txn: u64, at: u64) -> InputError {
    let msg = format!("transaction id {txn} is used twice");
    InputError::new(path, Location::Offset(at), msg)
}

/// The history's id of the key with this hash, added on first sight.
fn global_key(b: &mut HistoryBuilder, keys: &mut FxHashMap<u64, KeyId>, hash: u64) -> KeyId {
    *keys.entry(hash).or_insert_with(|| {
        let (name, fence) = key_name(hash);
        let k = b.new_key_unindexed(name);
        if fence {
            b.set_fence_key(k);
        }
        k
    })
}

/// Adds a part to `b` as its next session; `keys` maps key hashes to ids across logs.
pub(crate) fn append(
    b: &mut HistoryBuilder,
    p: &mut Part,
    keys: &mut FxHashMap<u64, KeyId>,
    warnings: &mut Vec<Warning>,
) -> Result<(), InputError> {
    let base = b.num_ops();
    let map: Vec<KeyId> = p.keys.iter().map(|&h| global_key(b, keys, h)).collect();
    b.begin_session(session_name(&p.path));
    for t in &p.txns {
        let end = (base + t.end as usize) as OpId;
        if b.finish_txn_at(t.ext, TxnStatus::Committed, t.start, t.commit, end)
            .is_err()
        {
            return Err(used_twice(&p.path, t.ext, t.at));
        }
    }
    if let Some(e) = p.error.take() {
        return Err(e);
    }
    for &w in &p.writes {
        b.defer_write((base + w as usize) as OpId);
    }
    let h = &mut b.h;
    h.op_kind.extend_from_slice(&p.kind);
    h.op_key.extend(p.key.iter().map(|&k| map[k as usize]));
    h.op_value.extend_from_slice(&p.value);
    let c = h.cobra.as_mut().expect("cobra claims enabled");
    c.extend(&p.value_hash, &p.writer);
    warnings.extend(p.warning.take());
    b.end_session();
    Ok(())
}
