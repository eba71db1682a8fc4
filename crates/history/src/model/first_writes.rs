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

use super::write_index::hash;
use super::{History, KeyId, OpId};

/// One entry: the value in the low 64 bits, the key in the next 32, the write's id plus one in
/// the top 32 (0: an empty slot, so a fresh table is zeroed memory).
type Entry = u128;

/// The first write of each (key, value) written, by open addressing with linear probing, at
/// most half full.
pub(crate) struct FirstWrites {
    slots: Vec<Entry>,
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

    /// The table of `h`'s first writes (those of its index), on every core: each write's entry
    /// and home slot are found, the entries sorted by home slot, and the table cut into regions,
    /// each filled by one task from its run of entries in that order (walking its region once,
    /// forward). An entry whose probe would run past its region's end goes in after all of them,
    /// from its home on: linear probing finds an entry whatever the order of insertion, as none
    /// is ever removed.
    pub(crate) fn of(h: &History) -> FirstWrites {
        use rayon::prelude::*;
        let n = h.write_index.len();
        let bits = (2 * n).max(16).next_power_of_two().trailing_zeros();
        let mut t = FirstWrites {
            slots: vec![0; 1 << bits],
            shift: 64 - bits,
        };
        let ops: Vec<OpId> = h.write_index.ops().collect();
        let tr = &t;
        let mut entries: Vec<(u32, Entry)> = ops
            .par_iter()
            .with_min_len(1 << 12)
            .map(|&o| {
                let (k, v) = (h.op_key[o as usize], h.op_value[o as usize]);
                let e = u128::from(v) | (u128::from(k) << 64) | (u128::from(o + 1) << 96);
                (tr.home(k, v) as u32, e)
            })
            .collect();
        entries.par_sort_unstable_by_key(|x| x.0);
        let parts = rayon::current_num_threads() * 4;
        let per = t.slots.len().div_ceil(parts).max(1);
        let late: Vec<(u32, Entry)> = t
            .slots
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
        let mask = t.slots.len() - 1;
        for (home, e) in late {
            let mut s = home as usize;
            while t.slots[s] != 0 {
                s = (s + 1) & mask;
            }
            t.slots[s] = e;
        }
        t
    }

    #[inline]
    fn home(&self, k: KeyId, v: u64) -> usize {
        (hash(k, v) >> self.shift) as usize
    }

    /// Asks for the slot where the lookup of (k, v) starts (a hint: nothing else changes).
    #[inline]
    pub(crate) fn prefetch(&self, k: KeyId, v: u64) {
        crate::prefetch(&self.slots[self.home(k, v)]);
    }

    /// The first write of (k, v), as the history's index gives it.
    #[inline]
    pub(crate) fn get(&self, k: KeyId, v: u64) -> Option<OpId> {
        let want = u128::from(v) | (u128::from(k) << 64);
        let mask = self.slots.len() - 1;
        let mut s = self.home(k, v);
        loop {
            let e = self.slots[s];
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
}
