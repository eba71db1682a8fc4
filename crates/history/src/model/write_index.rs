//! The (key, value) → first write index, holding op ids alone: a probe reads the key and value
//! it compares from the history's op arrays. A map holding the pair with the id took 24 bytes
//! an entry, at most 7/8 full: on a million transactions of ten writes each, 420 MB, a fifth
//! of a weak level's peak; 4 bytes an entry is 84 MB. A probe pays one more memory access, and
//! only on a hit (the table's control bytes rule out nearly every other entry).

use super::{KeyId, OpId};
use crate::fxhash::FxHasher;
use hashbrown::HashTable;
use std::hash::Hasher;

/// Writes by (key, value): each (key, value) written has its first write here.
#[derive(Clone, Debug, Default)]
pub struct WriteIndex {
    table: HashTable<OpId>,
}

/// The op arrays the ids index into.
#[derive(Clone, Copy)]
pub(crate) struct Ops<'a> {
    pub key: &'a [KeyId],
    pub value: &'a [u64],
}

impl Ops<'_> {
    #[inline]
    fn hash_of(&self, o: OpId) -> u64 {
        hash(self.key[o as usize], self.value[o as usize])
    }
    #[inline]
    fn is(&self, o: OpId, k: KeyId, v: u64) -> bool {
        self.value[o as usize] == v && self.key[o as usize] == k
    }
}

/// The hash of (key, value).
#[inline]
pub(crate) fn hash(k: KeyId, v: u64) -> u64 {
    let mut h = FxHasher::default();
    h.write_u32(k);
    h.write_u64(v);
    h.finish()
}

impl WriteIndex {
    /// The first write of (k, v).
    #[inline]
    pub(crate) fn get(&self, ops: Ops, k: KeyId, v: u64) -> Option<OpId> {
        self.table.find(hash(k, v), |&o| ops.is(o, k, v)).copied()
    }
    /// Enters write `o` of (k, v), unless (k, v) has a write already: that one is returned.
    /// `o` itself need not be in the op arrays yet.
    pub(crate) fn insert(&mut self, ops: Ops, k: KeyId, v: u64, o: OpId) -> Option<OpId> {
        self.insert_hashed(ops, hash(k, v), k, v, o)
    }
    /// [`Self::insert`] with the hash of (k, v) already known.
    pub(crate) fn insert_hashed(
        &mut self,
        ops: Ops,
        h: u64,
        k: KeyId,
        v: u64,
        o: OpId,
    ) -> Option<OpId> {
        match self
            .table
            .entry(h, |&x| ops.is(x, k, v), |&x| ops.hash_of(x))
        {
            hashbrown::hash_table::Entry::Occupied(e) => Some(*e.get()),
            hashbrown::hash_table::Entry::Vacant(e) => {
                e.insert(o);
                None
            }
        }
    }
    /// Removes (k, v)'s entry if it is write `o`.
    pub(crate) fn remove_if(&mut self, ops: Ops, k: KeyId, v: u64, o: OpId) {
        if let Ok(e) = self
            .table
            .find_entry(hash(k, v), |&x| x == o && ops.is(x, k, v))
        {
            e.remove();
        }
    }
    /// Makes room for `n` more entries.
    pub(crate) fn reserve(&mut self, ops: Ops, n: usize) {
        self.table.reserve(n, |&x| ops.hash_of(x));
    }
    /// Entries the table holds without growing.
    pub fn capacity(&self) -> usize {
        self.table.capacity()
    }
    /// Number of (key, value) pairs written.
    pub fn len(&self) -> usize {
        self.table.len()
    }
    /// Whether nothing is written.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }
    /// The first write of every (key, value), in no particular order.
    pub fn ops(&self) -> impl Iterator<Item = OpId> + '_ {
        self.table.iter().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Against a map holding the pairs, on random inserts and removals over a few keys and
    /// values (so most inserts meet an earlier write), growing the table many times over.
    #[test]
    fn the_index_answers_as_a_map_of_pairs_does() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let (mut keys, mut values) = (Vec::new(), Vec::new());
        let mut index = WriteIndex::default();
        let mut model: HashMap<(KeyId, u64), OpId> = HashMap::new();
        for _ in 0..20_000 {
            let (k, v) = (next(50) as KeyId, next(300));
            let o = keys.len() as OpId;
            let ops = Ops {
                key: &keys,
                value: &values,
            };
            if next(5) == 0 {
                // Remove (k, v)'s first write, or try to remove a write that is not it.
                let target = model.get(&(k, v)).copied().unwrap_or(o);
                let victim = if next(2) == 0 { target } else { target + 1 };
                index.remove_if(ops, k, v, victim);
                if model.get(&(k, v)) == Some(&victim) {
                    model.remove(&(k, v));
                }
            } else {
                let earlier = index.insert(ops, k, v, o);
                assert_eq!(earlier, model.get(&(k, v)).copied());
                model.entry((k, v)).or_insert(o);
                keys.push(k);
                values.push(v);
            }
            let ops = Ops {
                key: &keys,
                value: &values,
            };
            let (k, v) = (next(50) as KeyId, next(300));
            assert_eq!(index.get(ops, k, v), model.get(&(k, v)).copied());
        }
        assert_eq!(index.len(), model.len());
        let mut all: Vec<OpId> = index.ops().collect();
        let mut want: Vec<OpId> = model.values().copied().collect();
        all.sort_unstable();
        want.sort_unstable();
        assert_eq!(all, want);
    }
}
