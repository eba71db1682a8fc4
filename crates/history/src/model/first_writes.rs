//! A second form of the (key, value) → first write index, made for resolving a read-heavy
//! history and dropped after: each entry holds its key and value beside the write's id, so a
//! read's lookup is one access into the table, which a lookup some reads ahead can ask for in
//! advance ([`FirstWrites::prefetch`]). Through the history's own index a lookup waits on the
//! table, then on the write's key and value in the op arrays, each a miss in memory; with that
//! second miss depending on the first, nothing could ask for it ahead.
//!
//! Made only for large read-heavy histories ([`FirstWrites::worth_it`]): it takes 32 to 64
//! bytes a distinct (key, value) written, for the time resolving takes; a write-heavy history
//! would pay to build it about what it saves, and a small one finds its index and writes in
//! cache anyway.
//!
//! [`Writers`] is the same table with each write's transaction and value hash beside it, for a
//! history whose written values are unique: the serializability check's per-transaction pass
//! looks each read up there itself ([`super::resolve_deferred`]), so no array of every read's
//! writer is made, and the writer's transaction and claims come with the one access.

use super::huge::{Room, Zeroable};
use super::write_index::hash;
use super::{History, KeyId, OpId, OpKind, TxnId, TxnStatus};

/// One entry: the value in the low 64 bits, the key in the next 32, the write's id plus one in
/// the top 32 (0: an empty slot, so a fresh table is zeroed memory).
type Entry = u128;

/// The first write of each (key, value) written, by open addressing with linear probing, at
/// most half full.
pub(crate) struct FirstWrites {
    slots: Room<Entry>,
    /// The hash's top bits pick the home slot (its low bits mix least).
    shift: u32,
}

impl FirstWrites {
    /// Whether resolving `h` pays for the table: at least four reads a distinct (key, value)
    /// written, and op arrays several times a processor's last cache, where the history's own
    /// index misses in memory twice a read. At 80k read-heavy transactions (13 million ops)
    /// resolving took 111 ms with it against 125 (medians of 8 alternating runs); at 8k, whose
    /// index and writes stay in cache, 10.2 against 8.4.
    pub(crate) fn worth_it(h: &History) -> bool {
        let writes = h.write_index.len();
        let ops = h.num_ops();
        ops >= 1 << 22 && ops >= 5 * writes
    }

    /// The table of `h`'s first writes (those of its index), on every core ([`fill`]).
    pub(crate) fn of(h: &History) -> FirstWrites {
        use rayon::prelude::*;
        let bits = table_bits(h.write_index.len());
        let shift = 64 - bits;
        let ops: Vec<OpId> = h.write_index.ops().collect();
        let entries: Vec<(u32, Entry)> = ops
            .par_iter()
            .with_min_len(1 << 12)
            .map(|&o| {
                let (k, v) = (h.op_key[o as usize], h.op_value[o as usize]);
                let e = u128::from(v) | (u128::from(k) << 64) | (u128::from(o + 1) << 96);
                (home(shift, k, v) as u32, e)
            })
            .collect();
        let mut slots = Room::zeroed(1 << bits);
        fill(slots.as_mut_slice(), entries, |e| *e == 0);
        FirstWrites { slots, shift }
    }

    #[inline]
    fn home(&self, k: KeyId, v: u64) -> usize {
        home(self.shift, k, v)
    }

    /// Asks for the slot where the lookup of (k, v) starts (a hint: nothing else changes).
    #[inline]
    pub(crate) fn prefetch(&self, k: KeyId, v: u64) {
        crate::prefetch(&self.slots.as_slice()[self.home(k, v)]);
    }

    /// The first write of (k, v), as the history's index gives it.
    #[inline]
    pub(crate) fn get(&self, k: KeyId, v: u64) -> Option<OpId> {
        let want = u128::from(v) | (u128::from(k) << 64);
        let slots = self.slots.as_slice();
        let mask = slots.len() - 1;
        let mut s = self.home(k, v);
        loop {
            let e = slots[s];
            if e == 0 {
                return None;
            }
            if e & ((1u128 << 96) - 1) == want {
                return Some((e >> 96) as OpId - 1);
            }
            s = (s + 1) & mask;
        }
    }
}

/// A write, as [`Writers`] holds it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(32))]
struct Slot {
    value: u64,
    key: KeyId,
    /// The write's id plus one (0: an empty slot).
    op: u32,
    /// Cobra's value hash of the write (0 without claims).
    hash: u64,
    txn: TxnId,
}

// SAFETY: integers and padding; all zeros is the empty slot.
unsafe impl Zeroable for Slot {}

/// What a read of a written (key, value) observed: the write, its transaction, and its value
/// hash where the history has Cobra's claims (else 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Writer {
    /// The write.
    pub op: OpId,
    /// Its transaction.
    pub txn: TxnId,
    /// Its value hash in Cobra's logs (0 without them).
    pub hash: u64,
}

/// Every write of a history whose written values are unique, by (key, value), with its
/// transaction and value hash: a slot of 32 bytes, at most half of them full.
#[derive(Clone, Debug, Default)]
pub struct Writers {
    slots: Room<Slot>,
    shift: u32,
}

impl Writers {
    /// Whether every read of `h` has one write it may have observed, or none, found by (key,
    /// value) alone: no value written twice to a key, none that is also the initial state's,
    /// no list reads, and no outcome unknown (whether such a transaction took part depends on
    /// who read from it, which is asked before any transaction's facts).
    pub fn apply_to(h: &History) -> bool {
        h.dup_writes.is_empty()
            && h.init_value.is_none()
            && !h.has_lists()
            && !h.txn_status.contains(&TxnStatus::Unknown)
    }

    /// Whether deferring `h`'s resolution to a lookup per read in this table pays: 16 ops or
    /// more a write. Making it costs per write what resolving saves per read; on Cobra's
    /// write-heavier histories (1 to 9 reads a write) resolving took longer with it
    /// (chengRW-10000 1.6 → 8.1 ms, tpcc-10000 6.0 → 11.8, twitter-100000 16.5 → 36.5;
    /// medians of 10 alternating runs, 2026-12-07), on read-heavy ones (45 a write) far less.
    pub fn worth_it(h: &History) -> bool {
        h.num_ops() >= 16 * h.write_index.len()
    }

    /// The table of `h`'s writes, on every core (as the first writes' is made); `h` must be one
    /// [`Writers::apply_to`].
    pub fn of(h: &History) -> Writers {
        use rayon::prelude::*;
        debug_assert!(Writers::apply_to(h));
        let bits = table_bits(h.write_index.len());
        let shift = 64 - bits;
        let claims = h.cobra.as_ref();
        let entries: Vec<(u32, Slot)> = (0..h.num_txns() as TxnId)
            .into_par_iter()
            .with_min_len(1 << 8)
            .flat_map_iter(|t| {
                h.ops(t)
                    .filter(|&o| h.op_kind[o] == OpKind::Write)
                    .map(move |o| {
                        let (key, value) = (h.op_key[o], h.op_value[o]);
                        let slot = Slot {
                            value,
                            key,
                            op: o as u32 + 1,
                            hash: claims.map_or(0, |c| c.get(h, o).0),
                            txn: t,
                        };
                        (home(shift, key, value) as u32, slot)
                    })
            })
            .collect();
        let mut slots = Room::zeroed(1 << bits);
        fill(slots.as_mut_slice(), entries, |s| s.op == 0);
        Writers { slots, shift }
    }

    /// Asks for the slot where the lookup of (k, v) starts (a hint: nothing else changes).
    #[inline]
    pub fn prefetch(&self, k: KeyId, v: u64) {
        crate::prefetch(&self.slots.as_slice()[home(self.shift, k, v)]);
    }

    /// The write of (k, v), if any.
    #[inline]
    pub fn get(&self, k: KeyId, v: u64) -> Option<Writer> {
        let slots = self.slots.as_slice();
        let mask = slots.len() - 1;
        let mut s = home(self.shift, k, v);
        loop {
            let e = &slots[s];
            if e.op == 0 {
                return None;
            }
            if e.value == v && e.key == k {
                return Some(Writer {
                    op: e.op - 1,
                    txn: e.txn,
                    hash: e.hash,
                });
            }
            s = (s + 1) & mask;
        }
    }
}

/// log2 of the slots for `n` entries: a table at most half full.
fn table_bits(n: usize) -> u32 {
    (2 * n).max(16).next_power_of_two().trailing_zeros()
}

/// The home slot of (k, v) in a table of 2^(64 - shift) slots: the hash's top bits (its low
/// bits mix least).
#[inline]
fn home(shift: u32, k: KeyId, v: u64) -> usize {
    (hash(k, v) >> shift) as usize
}

/// Fills the empty `slots` (2^n of them) with `entries` (each with its home slot), on every core: the
/// entries are sorted by home slot and the table cut into regions, each filled by one task
/// from its run of entries in that order (walking its region once, forward). An entry whose
/// probe would run past its region's end goes in after all of them, from its home on: linear
/// probing finds an entry whatever the order of insertion, as none is ever removed. `empty`
/// tells an empty slot.
fn fill<E: Copy + Send + Sync>(
    slots: &mut [E],
    mut entries: Vec<(u32, E)>,
    empty: impl Fn(&E) -> bool + Sync,
) {
    use rayon::prelude::*;
    entries.par_sort_unstable_by_key(|x| x.0);
    let parts = rayon::current_num_threads() * 4;
    let per = slots.len().div_ceil(parts).max(1);
    let late: Vec<(u32, E)> = slots
        .par_chunks_mut(per)
        .enumerate()
        .flat_map_iter(|(i, region)| {
            let lo = i * per;
            let from = entries.partition_point(|x| (x.0 as usize) < lo);
            let to = entries.partition_point(|x| (x.0 as usize) < lo + region.len());
            // Homes ascend, so each probe starts at or past where the last ended.
            let mut at = 0;
            let mut late = Vec::new();
            for &(home, e) in &entries[from..to] {
                at = at.max(home as usize - lo);
                if at < region.len() {
                    region[at] = e;
                    at += 1;
                } else {
                    late.push((home, e));
                }
            }
            late
        })
        .collect();
    let mask = slots.len() - 1;
    for (home, e) in late {
        let mut s = home as usize;
        while !empty(&slots[s]) {
            s = (s + 1) & mask;
        }
        slots[s] = e;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{HistoryBuilder, OpKind, TxnStatus};

    /// Against the history's own index, on keys and values drawn from few, with values written
    /// again (the first write is the answer), read values never written, and the extremes of
    /// both.
    #[test]
    fn the_table_answers_as_the_index_does() {
        let mut rng = crate::test_rng::Rng(11);
        let mut b = HistoryBuilder::new();
        let keys: Vec<KeyId> = (0..40).map(|i| b.key(&format!("k{i}"))).collect();
        b.begin_session("s");
        let value = |x: u64| match x % 9 {
            0 => u64::MAX - x % 3,
            1 => x % 3,
            _ => x % 2000,
        };
        for t in 0..3000u64 {
            for _ in 0..1 + rng.next() % 4 {
                let (k, v) = (keys[(rng.next() % 40) as usize], value(rng.next()));
                b.op(OpKind::Write, k, v);
            }
            b.finish_txn(t, TxnStatus::Committed, 0, 0).unwrap();
        }
        let h = b.finish();
        let t = FirstWrites::of(&h);
        let mut hits = 0;
        for &k in &keys {
            for x in 0..3000 {
                let v = value(x);
                let want = h.first_write(k, v);
                hits += usize::from(want.is_some());
                assert_eq!(t.get(k, v), want, "key {k} value {v}");
            }
            assert_eq!(t.get(k, u64::MAX - 5), h.first_write(k, u64::MAX - 5));
        }
        assert!(hits > 1000 && h.write_index.len() > 1000, "{hits}");
        let fresh = FirstWrites::of(&HistoryBuilder::new().finish());
        assert_eq!(fresh.get(0, 0), None);
    }

    /// Each write of a history with unique values is found with its transaction, every other
    /// (key, value) is not; a value written twice to a key, or an unknown outcome, rules the
    /// table out.
    #[test]
    fn writers_find_each_write_and_its_transaction() {
        let mut rng = crate::test_rng::Rng(23);
        let mut b = HistoryBuilder::new();
        let keys: Vec<KeyId> = (0..30).map(|i| b.key(&format!("k{i}"))).collect();
        b.begin_session("s");
        let mut next = 1u64;
        for t in 0..20_000u64 {
            for _ in 0..1 + rng.next() % 3 {
                let k = keys[(rng.next() % 30) as usize];
                // Values unique per key, some at the extremes.
                let v = if next.is_multiple_of(97) {
                    u64::MAX - next
                } else {
                    next
                };
                next += 1;
                b.op(OpKind::Write, k, v);
                b.op(OpKind::Read, k, v);
            }
            b.finish_txn(t, TxnStatus::Committed, 0, 0).unwrap();
        }
        let h = b.finish();
        assert!(Writers::apply_to(&h));
        let w = Writers::of(&h);
        assert!(
            matches!(w.slots, Room::Mapped { .. }),
            "a table of 2 MiB and more"
        );
        let mut found = 0;
        for t in 0..h.num_txns() as TxnId {
            for o in h.ops(t) {
                let (k, v) = (h.op_key[o], h.op_value[o]);
                let got = w.get(k, v).expect("written");
                assert_eq!(
                    (got.op, got.txn, got.hash),
                    (h.first_write(k, v).unwrap(), t, 0)
                );
                found += usize::from(h.op_kind[o] == OpKind::Write);
            }
        }
        assert!(found > 20_000 && (found as u64) < next);
        for &k in &keys {
            assert_eq!(w.get(k, 0), None);
            assert_eq!(w.get(k, next + 1), None);
        }
        let mut b = HistoryBuilder::new();
        let k = b.key("k");
        b.begin_session("s");
        b.op(OpKind::Write, k, 5);
        b.finish_txn(1, TxnStatus::Committed, 0, 0).unwrap();
        b.op(OpKind::Write, k, 6);
        b.finish_txn(2, TxnStatus::Unknown, 0, 0).unwrap();
        assert!(!Writers::apply_to(&b.finish()));
        let mut b = HistoryBuilder::new();
        let k = b.key("k");
        b.begin_session("s");
        b.op(OpKind::Write, k, 5);
        b.op(OpKind::Write, k, 5);
        b.finish_txn(1, TxnStatus::Committed, 0, 0).unwrap();
        assert!(!Writers::apply_to(&b.finish()));
    }
}
