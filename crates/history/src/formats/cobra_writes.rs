//! Every Cobra log's writes, gathered before any log is decoded, so that decoding a read finds
//! its write — in whatever log — checks the read's claims (the writer it names, the value hash it
//! saw) there, and settles what it observed.
//!
//! The walk that counts each log's operations (its slices of the op arrays are sized by it)
//! already visits every record; it also keeps each committed write. The writes of all logs then
//! make one table, (key hash, write id) → the write's op, transaction and value hash. Decoding
//! a read looks it up, asked for some reads ahead so that the misses overlap, and keeps the
//! read's claims only where they are not the write's: a read-heavy history no longer writes
//! two claim words an op into fresh memory, and resolving no longer makes its own table and
//! looks every read up again (80k read-heavy transactions: 200 MB and a pass less).
//!
//! What a read observes is what resolving finds through the history's index: the first write
//! of its key and write id, in op order (a write id used twice fails the load later anyway),
//! the initial state for the reserved ids, else nobody; its problems are those resolving would
//! report. Only the logs' committed transactions count, as decoding keeps no others.

use super::cobra::{record_len, CobraOp};
use crate::model::first_writes::fill_by_home;
use crate::model::{OpId, OpKind, ReadProblem, DELETE_WRITE_ID, FROM_INIT, FROM_NOBODY};

/// A write of a committed transaction, as counting a log finds it.
#[derive(Clone, Copy, Debug)]
pub(super) struct ScannedWrite {
    /// Its operation, counted within the log.
    pub op: u32,
    /// Its transaction, counted (committed ones) within the log.
    pub txn: u32,
    pub key: u64,
    pub wid: u64,
    pub hash: u64,
}

/// What counting one log found.
#[derive(Debug, Default)]
pub(super) struct Scan {
    /// Operations of its committed transactions.
    pub ops: usize,
    /// The writes among them, in op order.
    pub writes: Vec<ScannedWrite>,
    /// Its committed transactions' ids, in order.
    pub txns: Vec<u64>,
}

#[inline]
fn be(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Walks a log's records by their lengths alone: the operations and writes of its transactions
/// committed before its last whole `C` record. Decoding a log keeps no more (an operation it
/// keeps precedes its transaction's commit), and exactly these where it finds nothing wrong. A
/// bad opcode ends the walk; decoding reports it.
pub(super) fn scan(b: &[u8], ts: bool) -> Scan {
    let mut s = Scan::default();
    let (mut i, mut ops, mut writes) = (0, 0, 0);
    while i < b.len() {
        let Some(len) = record_len(b[i], ts) else {
            break;
        };
        if i + len > b.len() {
            break;
        }
        match b[i] {
            b'R' => ops += 1,
            b'W' => {
                s.writes.push(ScannedWrite {
                    op: ops as u32,
                    txn: s.txns.len() as u32,
                    wid: be(b, i + 1),
                    key: be(b, i + 9),
                    hash: be(b, i + 17),
                });
                ops += 1;
            }
            b'C' => {
                s.txns.push(be(b, i + 1));
                (s.ops, writes) = (ops, s.writes.len());
            }
            _ => {}
        }
        i += len;
    }
    s.writes.truncate(writes);
    s
}

/// One write in the table: key hash, write id, value hash, and (op + 1) | transaction << 32;
/// all zero for an empty slot. Thirty-two bytes: a lookup never spans two cache lines.
type Slot = [u64; 4];

/// The writes of every log, by (key hash, write id): open addressing, linear probing, at most
/// half full.
pub(super) struct WriteTable {
    slots: Vec<Slot>,
    shift: u32,
    /// Each transaction's id, by its place among the logs' committed transactions.
    txn_ext: Vec<u64>,
}

/// A write found in the table.
#[derive(Clone, Copy)]
struct Found {
    op: OpId,
    /// Its transaction's id.
    txn: u64,
    hash: u64,
}

impl WriteTable {
    /// The table of the logs' scans, in file order (each log's operations and transactions
    /// numbered after those of the logs before it). Deletes share one write id and are left
    /// out, as the history's index leaves them out.
    pub(super) fn of(scans: &[&Scan]) -> WriteTable {
        use rayon::prelude::*;
        let n: usize = scans.iter().map(|s| s.writes.len()).sum();
        let bits = (2 * n).max(16).next_power_of_two().trailing_zeros();
        let mut t = WriteTable {
            slots: vec![[0; 4]; 1 << bits],
            shift: 64 - bits,
            txn_ext: scans.iter().flat_map(|s| s.txns.iter().copied()).collect(),
        };
        let (mut op_base, mut txn_base) = (0u64, 0u64);
        let mut logs = Vec::with_capacity(scans.len());
        for s in scans {
            logs.push((op_base, txn_base, &s.writes));
            op_base += s.ops as u64;
            txn_base += s.txns.len() as u64;
        }
        let tr = &t;
        let entries: Vec<(u32, Slot)> = logs
            .par_iter()
            .flat_map_iter(|&(ob, tb, ws)| {
                ws.iter()
                    .filter(|w| w.wid != DELETE_WRITE_ID)
                    .map(move |w| {
                        let tag = (ob + w.op as u64 + 1) | (tb + w.txn as u64) << 32;
                        (tr.home(w.key, w.wid) as u32, [w.key, w.wid, w.hash, tag])
                    })
            })
            .collect();
        fill_by_home(&mut t.slots, entries);
        t
    }

    #[inline]
    fn home(&self, key: u64, wid: u64) -> usize {
        // Keys are hashes already and write ids random or counted: two multiplies mix both
        // into the top bits, which pick the slot.
        let x = (key ^ wid.wrapping_mul(0xff51_afd7_ed55_8ccd)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (x >> self.shift) as usize
    }

    /// Asks for the slot where the lookup of (key, wid) starts (a hint: nothing else changes).
    #[inline]
    pub(super) fn prefetch(&self, key: u64, wid: u64) {
        crate::prefetch(&self.slots[self.home(key, wid)]);
    }

    #[inline]
    fn get(&self, key: u64, wid: u64) -> Option<Found> {
        let mask = self.slots.len() - 1;
        let mut s = self.home(key, wid);
        loop {
            let e = &self.slots[s];
            if e[3] == 0 {
                return None;
            }
            if e[0] == key && e[1] == wid {
                return Some(Found {
                    op: (e[3] as u32) - 1,
                    txn: self.txn_ext[(e[3] >> 32) as usize],
                    hash: e[2],
                });
            }
            s = (s + 1) & mask;
        }
    }

    /// What read `op` observed — a write's op, [`FROM_INIT`] or [`FROM_NOBODY`] — and, where
    /// its claims are not those of that write, the problem they show, if any: `(observed,
    /// Some(problem or none))`; `(observed, None)` where its claims are the write's.
    #[inline]
    pub(super) fn read(&self, op: &CobraOp) -> (OpId, Option<Option<ReadProblem>>) {
        if op.kind == OpKind::ReadInit {
            return (FROM_INIT, Some(None));
        }
        debug_assert_eq!(op.kind, OpKind::Read);
        let Some(w) = self.get(op.key_hash, op.wid) else {
            let p = (op.wid == DELETE_WRITE_ID).then_some(ReadProblem::AmbiguousDelete);
            return (FROM_NOBODY, Some(p));
        };
        let problem = if op.writer != w.txn {
            ReadProblem::WrongWriter {
                claimed: op.writer,
                actual: w.txn,
            }
        } else if op.value_hash != w.hash {
            ReadProblem::ValueMismatch {
                read: op.value_hash,
                written: w.hash,
            }
        } else {
            return (w.op, None);
        };
        (w.op, Some(Some(problem)))
    }
}
