//! Cobra session logs decoded on every core, straight into the history's arrays.
//!
//! First every log is mapped into memory (or, where it does not map, read) and walked by its
//! records' lengths alone, on every core: that counts the operations of its committed
//! transactions and keeps their writes (`cobra_writes`), which make one table. The op arrays
//! are then sized exactly and cut into one slice a log, in file order. Each worker takes the
//! next log and decodes it into its slices, numbering its keys within itself; each read is
//! looked up in the table as it is decoded, so its writer is known and its claims checked
//! there. In file order, as soon as it and those before it are decoded, each log's keys and
//! transactions join the history (on the calling thread, while the other cores decode on:
//! joining after all were decoded left them idle through it); last, one parallel pass gives
//! the keys their history-wide ids. Claims come out compacted ([`CobraClaims::compacted`]) and
//! what each read observed is handed to the history's first resolution.
//!
//! The outcome is the one reading the logs one after another gives: the same ids, the same
//! warnings, the same resolution and claims, and on bad input the same first error, because
//! what crosses logs (key ids, transaction ids used twice, which error comes first) is
//! settled in file order.

use super::cobra::{key_name, looks_timestamped, session_name, CobraOp, Decoder, Record};
use super::cobra_writes::{self, Scan, WriteTable};
use crate::error::{InputError, Location, Warning};
use crate::fxhash::FxHashMap;
use crate::model::resolve::ResolvedAtLoad;
use crate::model::{
    CobraClaims, HistoryBuilder, KeyId, OpId, OpKind, ReadProblem, TxnStatus, DELETE_WRITE_ID,
};
use rayon::prelude::*;
use std::path::{Path, PathBuf};

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
    /// Its reads whose claims (value hash, writer named) are not those of the write they
    /// observed, and the problems these show: each op counted within the log, in op order.
    kept: Vec<(OpId, (u64, u64))>,
    problems: Vec<(OpId, ReadProblem)>,
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
    /// What each operation observed, as resolving gives it (`crate::model::resolve`).
    read_from: &'a mut [OpId],
}

impl<'a> Slots<'a> {
    /// The first `n` places, and the rest.
    fn split(self, n: usize) -> (Slots<'a>, Slots<'a>) {
        let (kind, kind2) = self.kind.split_at_mut(n);
        let (key, key2) = self.key.split_at_mut(n);
        let (value, value2) = self.value.split_at_mut(n);
        let (read_from, read_from2) = self.read_from.split_at_mut(n);
        (
            Slots {
                kind,
                key,
                value,
                read_from,
            },
            Slots {
                kind: kind2,
                key: key2,
                value: value2,
                read_from: read_from2,
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
    // the room counted below whatever is appended to it meanwhile.
    let mut lens = Vec::with_capacity(files.len());
    for (_, path) in files {
        lens.push(
            std::fs::metadata(path)
                .map_err(|e| InputError::io(path, e))?
                .len(),
        );
    }
    // Every log read and counted, its writes kept, on every core; then the table of them all.
    let (logs, scans): (Vec<_>, Vec<Scan>) = (0..files.len())
        .into_par_iter()
        .with_max_len(1)
        .map(|i| {
            let path = &files[i].1;
            let bytes = read_log(path, lens[i]);
            let read = bytes
                .as_ref()
                .map(|b| timestamps.unwrap_or_else(|| looks_timestamped(b.bytes())))
                .map_err(Clone::clone);
            let scan = match (&bytes, &read) {
                (Ok(b), Ok(ts)) => cobra_writes::scan(b.bytes(), *ts),
                _ => Scan::default(),
            };
            ((bytes.ok(), read), scan)
        })
        .unzip();
    let table = WriteTable::of(&scans.iter().collect::<Vec<_>>());
    // Zeroed arrays come from the system as untouched pages: each place is written once.
    let n: usize = scans.iter().map(|s| s.ops).sum();
    let mut kind = OpKind::zeroed(n);
    let mut key = vec![0 as KeyId; n];
    let mut value = vec![0u64; n];
    let mut read_from = vec![0 as OpId; n];
    let mut rest = Slots {
        kind: &mut kind,
        key: &mut key,
        value: &mut value,
        read_from: &mut read_from,
    };
    let mut items = Vec::with_capacity(files.len());
    let mut base = 0;
    for (i, ((bytes, read), scan)) in logs.into_iter().zip(&scans).enumerate() {
        let (mine, more) = rest.split(scan.ops);
        items.push((i, base as OpId, bytes, read, mine));
        (rest, base) = (more, base + scan.ops);
    }
    // Per log, its keys' history-wide ids and its count of operations; the reads whose claims
    // are not their writes', and the problems those show, in op order.
    let mut maps = Vec::with_capacity(files.len());
    let (mut kept, mut problems) = (Vec::new(), Vec::new());
    let table = &table;
    crate::in_order::map_in_order(
        items,
        |local: &mut FxHashMap<u64, KeyId>, (i, base, bytes, read, slots)| {
            let path = &files[i].1;
            let bytes = bytes.as_ref().map_or(&[][..], LogBytes::bytes);
            let decode = Decode { table, base };
            (base, decode_log(path, read, bytes, slots, local, decode))
        },
        |(base, mut p)| {
            maps.push((join(b, &mut p, base as usize, &mut keys, warnings)?, p.cap));
            kept.extend(p.kept.iter().map(|&(o, c)| (base + o, c)));
            problems.extend(p.problems.drain(..).map(|(o, x)| (base + o, x)));
            Ok(())
        },
    )?;
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
    b.set_ops(kind, key, value);
    let mut base = 0;
    let mut writes = Vec::with_capacity(scans.iter().map(|s| s.writes.len()).sum());
    for s in &scans {
        writes.extend(s.writes.iter().map(|w| (base + w.op, w.hash)));
        base += s.ops as OpId;
    }
    b.h.cobra = Some(CobraClaims::compacted(n, writes.into_iter(), kept));
    b.h.resolved_at_load = ResolvedAtLoad::new(read_from, problems);
    Ok(())
}

/// A log's bytes: mapped (no copy, and no fresh buffer to fault in: on this project's machine
/// first touches of fresh memory cost more than decoding), or read where the file does not map.
enum LogBytes {
    Mapped(memmap2::Mmap),
    Read(Vec<u8>),
}

impl LogBytes {
    fn bytes(&self) -> &[u8] {
        match self {
            LogBytes::Mapped(m) => m,
            LogBytes::Read(v) => v,
        }
    }
}

/// The first `len` bytes of the log at `path`, mapped, or read where the file does not map.
fn read_log(path: &Path, len: u64) -> Result<LogBytes, InputError> {
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
            return Ok(LogBytes::Mapped(m));
        }
    }
    let mut buf = Vec::new();
    file.take(len)
        .read_to_end(&mut buf)
        .map_err(|e| InputError::io(path, e))?;
    Ok(LogBytes::Read(buf))
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
    d: Decode,
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
            d,
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
    /// A read of `key` (hash) and write id `wid` comes a few records on: a hint.
    #[inline]
    fn ahead(&self, _key: u64, _wid: u64) {}
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
        d.reads(|op, later| {
            if let Some((key, wid)) = later {
                s.ahead(key, wid);
            }
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

/// What decoding a log looks up: every log's writes, and where its operations start among all.
#[derive(Clone, Copy)]
struct Decode<'t> {
    table: &'t WriteTable,
    base: OpId,
}

/// Decoding one log into its slots, keys numbered within the log.
struct Fill<'p, 's> {
    p: &'p mut Part,
    s: Slots<'s>,
    /// Key hash → its id within this log (the thread's map, used again log after log).
    local: &'p mut FxHashMap<u64, KeyId>,
    d: Decode<'p>,
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
            s.read_from[i] = if op.kind == OpKind::Write {
                self.d.base + i as OpId
            } else {
                let (observed, kept) = self.d.table.read(op);
                if let Some(problem) = kept {
                    let p = &mut *self.p;
                    p.kept.push((i as OpId, (op.value_hash, op.writer)));
                    p.problems.extend(problem.map(|x| (i as OpId, x)));
                }
                observed
            };
        }
        self.p.n += 1;
    }
    #[inline]
    fn ahead(&self, key: u64, wid: u64) {
        self.d.table.prefetch(key, wid);
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
