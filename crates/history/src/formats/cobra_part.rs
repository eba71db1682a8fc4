//! Cobra session logs decoded on every core, straight into the history's arrays.
//!
//! Each worker takes the next log, maps it into memory (or, where it does not map, reads it into
//! a buffer of its own used again) and walks its records by their lengths alone, counting the operations of its committed
//! transactions. Slices of the op arrays are handed out in file order, each log's where the one
//! before it ends, so a log waits only for the one before it to be counted; then it decodes
//! into its slices, numbering its keys within itself. In file order, as soon as it and those
//! before it are decoded, each log's keys and transactions join the history (on the calling
//! thread, while the other cores decode on: joining after all were decoded left them idle
//! through it); last, one parallel pass gives the keys their history-wide ids.
//! Before, each log decoded into arrays of its own that were then copied into the history: a
//! second write of every operation, into fresh memory (8k read-heavy transactions: loading
//! 37 → 30 ms; 80k: about 300 → 200 ms).
//!
//! The outcome is the one reading the logs one after another gives: the same ids, the same
//! warnings, and on bad input the same first error, because what crosses logs (key ids,
//! transaction ids used twice, which error comes first) is settled in file order.

use super::cobra::{
    key_name, looks_timestamped, record_len, session_name, CobraOp, Decoder, Record,
};
use crate::error::{InputError, Location, Warning};
use crate::fxhash::FxHashMap;
use crate::model::{HistoryBuilder, KeyId, OpId, OpKind, TxnStatus, DELETE_WRITE_ID};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};

/// One committed transaction of a part.
struct PartTxn {
    ext: u64,
    start: u64,
    commit: u64,
    /// Its operations end here, counted within the log.
    end: u32,
    /// Byte offset of its `C` record (a transaction id used twice is named there).
    at: u64,
}

/// What decoding one log leaves besides its operations, which go straight into its slices.
#[derive(Default)]
struct Part {
    path: PathBuf,
    /// Operations decoded so far, the open transaction's included.
    n: usize,
    /// Its slots: the operations of its committed transactions, as counted before decoding.
    cap: usize,
    /// The writes to enter in the (key, value) index (deletes share one id and are left out).
    writes: Vec<u32>,
    txns: Vec<PartTxn>,
    /// This log's keys, by their hash, in order of first sight.
    keys: Vec<u64>,
    warning: Option<Warning>,
    /// Decoding stopped here; what came before is kept, so that an earlier problem (a
    /// transaction id used twice) is still the one reported.
    error: Option<InputError>,
}

impl Part {
    /// Drops the operations after the last committed transaction (an unfinished one).
    fn cut_open(&mut self) {
        self.n = self.txns.last().map_or(0, |t| t.end as usize);
        while self.writes.last().is_some_and(|&w| w as usize >= self.n) {
            self.writes.pop();
        }
    }
}

/// One log's slice of each op array: as many places as it has operations in committed
/// transactions.
#[derive(Default)]
struct Slots<'a> {
    kind: &'a mut [OpKind],
    key: &'a mut [KeyId],
    value: &'a mut [u64],
    value_hash: &'a mut [u64],
    writer: &'a mut [u64],
}

impl<'a> Slots<'a> {
    /// The first `n` places, and the rest.
    fn split(self, n: usize) -> (Slots<'a>, Slots<'a>) {
        let (kind, kind2) = self.kind.split_at_mut(n);
        let (key, key2) = self.key.split_at_mut(n);
        let (value, value2) = self.value.split_at_mut(n);
        let (value_hash, value_hash2) = self.value_hash.split_at_mut(n);
        let (writer, writer2) = self.writer.split_at_mut(n);
        (
            Slots {
                kind,
                key,
                value,
                value_hash,
                writer,
            },
            Slots {
                kind: kind2,
                key: key2,
                value: value2,
                value_hash: value_hash2,
                writer: writer2,
            },
        )
    }
}

/// Below this many bytes of logs, decoding stays on the calling thread: starting the other
/// cores' threads costs about half a millisecond, more than they would save.
const PARALLEL_FROM: u64 = 8 << 20;

/// Reads the logs of a Cobra directory (`bytes` in all) into `b` (holding no operations yet),
/// one session each, in file order.
pub(crate) fn read_all(
    b: &mut HistoryBuilder,
    files: &[(u64, PathBuf)],
    bytes: u64,
    timestamps: Option<bool>,
    warnings: &mut Vec<Warning>,
) -> Result<(), InputError> {
    let mut keys: FxHashMap<u64, KeyId> = FxHashMap::default();
    if bytes < PARALLEL_FROM {
        // Every operation record is 25 bytes or more.
        b.reserve_ops((bytes / 25) as usize);
        for (_, path) in files {
            let buf = std::fs::read(path).map_err(|e| InputError::io(path, e))?;
            let ts = timestamps.unwrap_or_else(|| looks_timestamped(&buf));
            read_direct(b, &buf, path, ts, &mut keys, warnings)?;
        }
        return Ok(());
    }
    debug_assert_eq!(b.num_ops(), 0);
    // Each log is read up to the length it had when listed, so that its operations fit in
    // the room below whatever is appended to it meanwhile.
    let mut lens = Vec::with_capacity(files.len());
    for (_, path) in files {
        lens.push(
            std::fs::metadata(path)
                .map_err(|e| InputError::io(path, e))?
                .len(),
        );
    }
    // Every operation record is 25 bytes or more. Zeroed arrays come from the system as
    // untouched pages: only the room used is ever written, once.
    let room: usize = lens.iter().map(|&n| (n / 25) as usize).sum();
    let mut kind = OpKind::zeroed(room);
    let mut key = vec![0 as KeyId; room];
    let mut value = vec![0u64; room];
    let mut value_hash = vec![0u64; room];
    let mut writer = vec![0u64; room];
    let all = Slots {
        kind: &mut kind,
        key: &mut key,
        value: &mut value,
        value_hash: &mut value_hash,
        writer: &mut writer,
    };
    // Per log, its keys' history-wide ids and its count of operations.
    let mut maps = Vec::with_capacity(files.len());
    let mut base = 0;
    decode_in_turn(files, &lens, timestamps, all, |mut p| {
        maps.push((join(b, &mut p, base, &mut keys, warnings)?, p.cap));
        base += p.cap;
        Ok(())
    })?;
    let mut logs_keys = Vec::with_capacity(maps.len());
    let mut rest: &mut [KeyId] = &mut key;
    for (_, cap) in &maps {
        let (mine, more) = rest.split_at_mut(*cap);
        logs_keys.push(mine);
        rest = more;
    }
    logs_keys
        .into_par_iter()
        .zip(&maps)
        .with_max_len(1)
        .for_each(|(ks, (map, _))| ks.iter_mut().for_each(|k| *k = map[*k as usize]));
    for v in [&mut value, &mut value_hash, &mut writer] {
        v.truncate(base);
    }
    kind.truncate(base);
    key.truncate(base);
    b.set_ops(kind, key, value);
    let c = b.h.cobra.as_mut().expect("cobra claims enabled");
    c.set(value_hash, writer);
    Ok(())
}

/// Decodes every log into its slots, on every core, handing each part to `take` in file order
/// as soon as it and those before it are decoded, so that joining them to the history (one
/// thread's work) overlaps decoding the rest; stops at `take`'s first error. Each worker takes
/// the next log, reads it once and counts its operations; the logs' slots are then handed out
/// in file order, each log's starting where the one before it ends, so a log waits at most for
/// the one before it to be read and counted, not decoded.
fn decode_in_turn(
    files: &[(u64, PathBuf)],
    lens: &[u64],
    timestamps: Option<bool>,
    all: Slots,
    take: impl FnMut(Part) -> Result<(), InputError>,
) -> Result<(), InputError> {
    // (the log whose turn it is, the slots not yet handed out)
    let turn = Mutex::new((0, all));
    let turned = Condvar::new();
    crate::in_order::map_in_order(
        (0..files.len()).collect(),
        |(buf, local): &mut (Vec<u8>, FxHashMap<u64, KeyId>), i: usize| {
            let path = &files[i].1;
            let mut map = None;
            let bytes = read_log(path, lens[i], buf, &mut map);
            let read = bytes
                .as_ref()
                .map(|b| timestamps.unwrap_or_else(|| looks_timestamped(b)))
                .map_err(Clone::clone);
            let bytes = bytes.unwrap_or_default();
            let cap = read.as_ref().map_or(0, |&ts| committed_ops(bytes, ts));
            let slots = {
                let mut t = crate::in_order::lock(&turn);
                while t.0 != i {
                    t = turned.wait(t).unwrap_or_else(|e| e.into_inner());
                }
                let (mine, rest) = std::mem::take(&mut t.1).split(cap);
                *t = (i + 1, rest);
                turned.notify_all();
                mine
            };
            decode_log(path, read, bytes, slots, local)
        },
        take,
    )
}

/// The first `len` bytes of the log at `path`: mapped into `map` (no copy, and no fresh buffer
/// to fault in: on this project's machine first touches of fresh memory cost more than
/// decoding), or, where the file does not map, read into `buf` (emptied first).
fn read_log<'b>(
    path: &Path,
    len: u64,
    buf: &'b mut Vec<u8>,
    map: &'b mut Option<memmap2::Mmap>,
) -> Result<&'b [u8], InputError> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| InputError::io(path, e))?;
    // SAFETY: read-only and private; a log truncated by another process while it is read would
    // fault on the pages cut off, as reading a log while its writer rewrites it gives no
    // meaningful answer either way (the length was taken when the logs were listed).
    let whole = file.metadata().is_ok_and(|m| m.is_file() && m.len() >= len);
    if len > 0 && whole {
        if let Ok(m) = unsafe {
            memmap2::MmapOptions::new()
                .len(len as usize)
                .populate()
                .map(&file)
        } {
            return Ok(&map.insert(m)[..]);
        }
    }
    buf.clear();
    file.take(len)
        .read_to_end(buf)
        .map_err(|e| InputError::io(path, e))?;
    Ok(&buf[..])
}

/// The operations of a log's committed transactions, as far as its records can be walked by
/// their lengths alone: those before its last whole `C` record. Decoding a log keeps no more
/// (an operation it keeps precedes its transaction's commit), and exactly these where it finds
/// nothing wrong. A bad opcode ends the walk; decoding reports it.
fn committed_ops(b: &[u8], ts: bool) -> usize {
    let (mut i, mut ops, mut kept) = (0, 0, 0);
    while i < b.len() {
        let Some(len) = record_len(b[i], ts) else {
            break;
        };
        if i + len > b.len() {
            break;
        }
        match b[i] {
            b'W' | b'R' => ops += 1,
            b'C' => kept = ops,
            _ => {}
        }
        i += len;
    }
    kept
}

/// Decodes a log's bytes into its slots (as many as its committed transactions have
/// operations), keys numbered in `local` (emptied first); a log that could not be read is a
/// part holding only that error.
fn decode_log(
    path: &Path,
    read: Result<bool, InputError>,
    bytes: &[u8],
    slots: Slots,
    local: &mut FxHashMap<u64, KeyId>,
) -> Part {
    local.clear();
    let mut p = Part {
        path: path.to_path_buf(),
        cap: slots.kind.len(),
        ..Default::default()
    };
    let decoded = read.and_then(|ts| {
        let mut fill = Fill {
            p: &mut p,
            s: slots,
            local,
        };
        decode_with(&mut fill, bytes, path, ts)
    });
    match decoded {
        Ok(w) => p.warning = w,
        Err(e) => {
            p.cut_open();
            p.error = Some(e);
        }
    }
    p
}

/// Adds a decoded log to `b` as its next session, its operations at `base..base + p.cap`;
/// returns its keys' history-wide ids. `keys` maps key hashes to ids across logs.
fn join(
    b: &mut HistoryBuilder,
    p: &mut Part,
    base: usize,
    keys: &mut FxHashMap<u64, KeyId>,
    warnings: &mut Vec<Warning>,
) -> Result<Vec<KeyId>, InputError> {
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
    if p.n != p.cap {
        // The count and the decoding walk the same records; they cannot disagree.
        let msg = format!("decoded {} operations where {} were counted", p.n, p.cap);
        return Err(InputError::new(&p.path, Location::Nowhere, msg));
    }
    for &w in &p.writes {
        b.defer_write((base + w as usize) as OpId);
    }
    warnings.extend(p.warning.take());
    b.end_session();
    Ok(map)
}

/// Where decoded records go: a log's slots ([`Fill`]), or straight into the history
/// ([`Direct`]).
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
    loop {
        d.reads(|op| {
            let k = s.key(op.key_hash);
            s.op(k, op);
        });
        let Some(rec) = d.next_record()? else { break };
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

/// Decoding one log into its slots, keys numbered within the log.
struct Fill<'p, 's> {
    p: &'p mut Part,
    s: Slots<'s>,
    /// Key hash → its id within this log (the thread's map, used again log after log).
    local: &'p mut FxHashMap<u64, KeyId>,
}

impl Sink for Fill<'_, '_> {
    #[inline]
    fn key(&mut self, hash: u64) -> KeyId {
        let p = &mut *self.p;
        *self.local.entry(hash).or_insert_with(|| {
            p.keys.push(hash);
            p.keys.len() as KeyId - 1
        })
    }
    #[inline]
    fn op(&mut self, key: KeyId, op: &CobraOp) {
        let (i, s) = (self.p.n, &mut self.s);
        if indexed_write(op) {
            self.p.writes.push(i as u32);
        }
        // Past the slots only an unfinished last transaction, dropped at the end.
        if i < s.kind.len() {
            s.kind[i] = op.kind;
            s.key[i] = key;
            s.value[i] = op.wid;
            s.value_hash[i] = op.value_hash;
            s.writer[i] = op.writer;
        }
        self.p.n += 1;
    }
    fn commit(&mut self, txn: u64, start: u64, commit: u64, at: u64) -> Result<(), InputError> {
        self.p.txns.push(PartTxn {
            ext: txn,
            start,
            commit,
            end: self.p.n as u32,
            at,
        });
        Ok(())
    }
    fn drop_open(&mut self) {
        self.p.cut_open();
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
