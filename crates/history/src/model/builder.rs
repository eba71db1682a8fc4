//! Building a [`History`] one session at a time: every reader ends here, so the indexes (writes
//! by (key, value), with values written more than once kept apart) and the check that does not
//! depend on the format (a transaction id used twice) are made once, as the arrays are filled.

use super::write_index::{self, Ops};
use super::{CobraClaims, History, KeyId, OpId, OpKind, TxnId, TxnStatus};

fn name_hash(name: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = crate::fxhash::FxHasher::default();
    name.hash(&mut h);
    h.finish()
}

/// Incremental construction of a [`History`], one session at a time.
#[derive(Default)]
pub struct HistoryBuilder {
    pub(crate) h: History,
    /// Key ids by name: the names themselves are in `h.keys` (an index of its own copies
    /// was a second allocation a key, on a proxy's millions of column keys).
    key_index: hashbrown::HashTable<KeyId>,
    open_session: bool,
    /// Writes added by [`Self::write_deferred`], indexed together by
    /// [`Self::index_deferred_writes`].
    deferred: Vec<OpId>,
}

impl HistoryBuilder {
    /// An empty history, no session open.
    pub fn new() -> Self {
        let mut b = HistoryBuilder::default();
        b.h.txn_ops.push(0);
        b.h.session_txns.push(0);
        b
    }
    /// Starts from a key table the caller owns (ops then name keys by these ids).
    pub fn with_keys(mut self, keys: Vec<String>) -> Self {
        self.h.keys = keys;
        self
    }
    /// Records Cobra's claims ([`Self::cobra_claim`]) along with the operations.
    pub fn with_cobra_claims(mut self) -> Self {
        self.h.cobra = Some(CobraClaims::default());
        self
    }
    /// The id of a key, added on first sight.
    pub fn key(&mut self, name: &str) -> KeyId {
        let hash = name_hash(name);
        let keys = &self.h.keys;
        if let Some(&k) = self.key_index.find(hash, |&k| keys[k as usize] == name) {
            return k;
        }
        let k = keys.len() as KeyId;
        self.h.keys.push(name.to_string());
        let keys = &self.h.keys;
        self.key_index
            .insert_unique(hash, k, |&k| name_hash(&keys[k as usize]));
        k
    }
    /// Adds a key the caller knows is new (a reader with its own index, such as Cobra's hashes).
    /// It is not entered in the name index, so [`Self::key`] must not be mixed with it.
    pub fn new_key_unindexed(&mut self, name: String) -> KeyId {
        let k = self.h.keys.len() as KeyId;
        self.h.keys.push(name);
        k
    }
    /// Marks `k` as the key fence transactions read.
    pub fn set_fence_key(&mut self, k: KeyId) {
        self.h.fence_key = Some(k);
    }
    /// Starts the next session (closing the open one); its transactions follow in order.
    pub fn begin_session(&mut self, name: impl Into<String>) {
        if self.open_session {
            self.end_session();
        }
        self.h.session_names.push(name.into());
        self.open_session = true;
    }
    /// Closes the open session, if any.
    pub fn end_session(&mut self) {
        if self.open_session {
            self.h.session_txns.push(self.h.txn_ext.len() as TxnId);
            self.open_session = false;
        }
    }
    /// Adds an operation to the transaction that the next [`Self::finish_txn`] closes. For a
    /// write whose (key, value) an earlier write already has, returns that earlier write's op
    /// (the write is added all the same: duplicate values are allowed, and a format whose
    /// values are ids can refuse them).
    pub fn op(&mut self, kind: OpKind, key: KeyId, value: u64) -> Option<OpId> {
        let mut earlier = None;
        if kind == OpKind::Write {
            earlier = self.index_write(key, value, self.h.op_kind.len() as OpId);
        }
        self.push_op(kind, key, value);
        earlier
    }
    /// Enters write `id` of (key, value) in the index; a value written before keeps its first
    /// write there and lists this one among the later ones, which is returned.
    fn index_write(&mut self, key: KeyId, value: u64, id: OpId) -> Option<OpId> {
        let h = &mut self.h;
        let ops = Ops {
            key: &h.op_key,
            value: &h.op_value,
        };
        let earlier = h.write_index.insert(ops, key, value, id);
        if earlier.is_some() {
            h.dup_writes.entry((key, value)).or_default().push(id);
        }
        earlier
    }
    /// Adds a write whose entry in the (key, value) index is made later, with every other such
    /// write at once ([`Self::index_deferred_writes`]): a format whose reads name their writer
    /// (Cobra's write ids) learns of a repeated id only then, and in return the index of a
    /// large history is built in a fraction of the time.
    pub fn write_deferred(&mut self, key: KeyId, value: u64) {
        self.deferred.push(self.h.op_kind.len() as OpId);
        self.push_op(OpKind::Write, key, value);
    }
    /// Marks op `o` (filled in by the reader itself) as a write for
    /// [`Self::index_deferred_writes`], as [`Self::write_deferred`] does; ops come in op order.
    pub(crate) fn defer_write(&mut self, o: OpId) {
        self.deferred.push(o);
    }
    /// [`Self::defer_write`] for many writes at once (in op order, after any deferred before).
    pub(crate) fn defer_writes(&mut self, ops: Vec<OpId>) {
        if self.deferred.is_empty() {
            self.deferred = ops;
        } else {
            self.deferred.extend_from_slice(&ops);
        }
    }
    /// Indexes the writes [`Self::write_deferred`] added, as [`Self::op`] would have one by one
    /// in op order. Returns the first of them (by op) whose (key, value) an earlier write has,
    /// with that earlier write.
    ///
    /// One insert at a time into a table of millions of entries misses the cache on nearly
    /// every insert. Here the entries are hashed on every core, sorted by the bucket they start
    /// probing at, and inserted in that order into a table sized once, so the inserts walk the
    /// table from one end to the other. Within a bucket they stay in op order, so which write
    /// is the earlier one and the order of the later ones are the same as one by one.
    pub fn index_deferred_writes(&mut self) -> Option<(OpId, OpId)> {
        use rayon::prelude::*;
        let deferred = std::mem::take(&mut self.deferred);
        if deferred.is_empty() {
            return None;
        }
        if deferred.len() < 1 << 18 {
            // A table this small stays in cache: one by one is faster than sorting. Room made
            // first: grown as it filled, the table was rehashed each time it doubled.
            let ops = Ops {
                key: &self.h.op_key,
                value: &self.h.op_value,
            };
            self.h.write_index.reserve(ops, deferred.len());
            let mut first_dup = None;
            for o in deferred {
                let (k, v) = (self.h.op_key[o as usize], self.h.op_value[o as usize]);
                if let Some(earlier) = self.index_write(k, v, o) {
                    first_dup = first_dup.or(Some((o, earlier)));
                }
            }
            return first_dup;
        }
        let h = &self.h;
        // The whole entry travels with the sort: looked up by op instead, in hash order, every
        // insert would miss the cache on the op arrays.
        let mut entries: Vec<(u64, u64, KeyId, OpId)> = deferred
            .par_iter()
            .map(|&o| {
                let (k, v) = (h.op_key[o as usize], h.op_value[o as usize]);
                (write_index::hash(k, v), v, k, o)
            })
            .collect();
        drop(deferred);
        let h = &mut self.h;
        let ops = Ops {
            key: &h.op_key,
            value: &h.op_value,
        };
        h.write_index.reserve(ops, entries.len());
        // hashbrown's bucket count for this capacity (a power of two, 7/8 of it usable); a
        // wrong guess costs locality, never correctness.
        let buckets = (h.write_index.capacity() / 7 * 8).next_power_of_two() as u64;
        let mask = buckets - 1;
        entries.par_sort_unstable_by_key(|e| (e.0 & mask, e.3));
        let mut first_dup: Option<(OpId, OpId)> = None;
        for &(hash, v, k, o) in &entries {
            if let Some(earlier) = h.write_index.insert_hashed(ops, hash, k, v, o) {
                h.dup_writes.entry((k, v)).or_default().push(o);
                if first_dup.is_none_or(|(later, _)| o < later) {
                    first_dup = Some((o, earlier));
                }
            }
        }
        // Later duplicates of one write were pushed in bucket order of their keys, each list
        // in op order already.
        first_dup
    }
    /// Says that every key holds `value` before its first write (see [`History::init_value`]).
    pub fn set_init_value(&mut self, value: u64) {
        self.h.init_value = Some(value);
    }
    /// Adds an operation that takes no part in read resolution (Cobra's deletes share one id).
    pub fn op_unindexed(&mut self, kind: OpKind, key: KeyId, value: u64) {
        self.push_op(kind, key, value);
    }
    /// Makes room for `n` more operations at once: arrays grown by doubling copy themselves
    /// into fresh memory at every step, which on large histories costs more than filling them.
    /// Room never touched costs no memory, so an upper bound is fine.
    pub fn reserve_ops(&mut self, n: usize) {
        self.h.op_kind.reserve(n);
        self.h.op_key.reserve(n);
        self.h.op_value.reserve(n);
        if let Some(c) = self.h.cobra.as_mut() {
            c.reserve(n);
        }
    }
    /// Puts in every operation at once, for a reader that filled the arrays itself (Cobra's
    /// logs, decoded on every core); no operation may have been added before.
    pub(crate) fn set_ops(&mut self, kind: Vec<OpKind>, key: Vec<KeyId>, value: Vec<u64>) {
        debug_assert!(
            self.h.op_kind.is_empty() && self.deferred.iter().all(|&o| (o as usize) < kind.len())
        );
        self.h.op_kind = kind;
        self.h.op_key = key;
        self.h.op_value = value;
    }
    fn push_op(&mut self, kind: OpKind, key: KeyId, value: u64) {
        self.h.op_kind.push(kind);
        self.h.op_key.push(key);
        self.h.op_value.push(value);
    }
    /// Records that the last operation added (a read of the last element, or of the initial
    /// state when the list is empty) returned this whole list (list-append).
    pub fn list(&mut self, values: &[u64]) {
        let op = self.h.op_kind.len() as OpId - 1;
        let a = self.h.list_values.len() as u32;
        self.h.list_values.extend_from_slice(values);
        self.h
            .list_reads
            .push((op, a, self.h.list_values.len() as u32));
    }
    /// Records the application's own value of the last operation added.
    pub fn app_value(&mut self, value: &str) {
        let op = self.h.op_kind.len() as OpId - 1;
        self.h.app_text.push_str(value);
        self.h.app_values.push((op, self.h.app_text.len() as u32));
    }
    /// Adds a list-append read: of the last element, or of the initial state when empty.
    pub fn list_read(&mut self, key: KeyId, values: &[u64]) {
        match values.last() {
            Some(&v) => self.push_op(OpKind::Read, key, v),
            None => self.push_op(OpKind::ReadInit, key, 0),
        }
        self.list(values);
    }
    /// Cobra's claims for the last operation added: its value hash and, for a read, the writer
    /// transaction it names (0 for a write).
    pub fn cobra_claim(&mut self, value_hash: u64, read_writer: u64) {
        let c = self.h.cobra.as_mut().expect("cobra claims enabled");
        c.push(value_hash, read_writer);
    }
    /// Drops operations added since the last finished transaction (a truncated transaction).
    pub fn discard_open_ops(&mut self) {
        let keep = *self.h.txn_ops.last().unwrap() as usize;
        while self
            .h
            .list_reads
            .last()
            .is_some_and(|l| l.0 as usize >= keep)
        {
            let (_, a, _) = self.h.list_reads.pop().unwrap();
            self.h.list_values.truncate(a as usize);
        }
        while self
            .h
            .app_values
            .last()
            .is_some_and(|a| a.0 as usize >= keep)
        {
            self.h.app_values.pop();
            let end = self.h.app_values.last().map_or(0, |a| a.1);
            self.h.app_text.truncate(end as usize);
        }
        while self.deferred.last().is_some_and(|&o| o as usize >= keep) {
            self.deferred.pop();
        }
        for i in keep..self.h.op_kind.len() {
            if self.h.op_kind[i] == OpKind::Write {
                let k = (self.h.op_key[i], self.h.op_value[i]);
                if let Some(more) = self.h.dup_writes.get_mut(&k) {
                    // Later duplicates are the open transaction's own: drop them first.
                    more.retain(|&o| (o as usize) < keep);
                    if more.is_empty() {
                        self.h.dup_writes.remove(&k);
                    }
                }
                let h = &mut self.h;
                let ops = Ops {
                    key: &h.op_key,
                    value: &h.op_value,
                };
                h.write_index.remove_if(ops, k.0, k.1, i as OpId);
            }
        }
        self.h.op_kind.truncate(keep);
        self.h.op_key.truncate(keep);
        self.h.op_value.truncate(keep);
        if let Some(c) = self.h.cobra.as_mut() {
            c.truncate(keep);
        }
    }
    /// Closes the transaction holding the operations added since the last one. A transaction id
    /// used before is refused with the earlier transaction.
    pub fn finish_txn(
        &mut self,
        ext: u64,
        status: TxnStatus,
        start: u64,
        commit: u64,
    ) -> Result<TxnId, TxnId> {
        let end = self.h.op_kind.len() as OpId;
        self.finish_txn_at(ext, status, start, commit, end)
    }
    /// [`Self::finish_txn`] for a reader that fills the op arrays itself, later and in bulk
    /// (Cobra's logs, decoded on every core): the transaction's operations end at op `end`.
    pub(crate) fn finish_txn_at(
        &mut self,
        ext: u64,
        status: TxnStatus,
        start: u64,
        commit: u64,
        end: OpId,
    ) -> Result<TxnId, TxnId> {
        let t = self.h.txn_ext.len() as TxnId;
        if let Some(&prev) = self.h.txn_index.get(&ext) {
            return Err(prev);
        }
        self.h.txn_index.insert(ext, t);
        self.h.txn_ext.push(ext);
        self.h.txn_status.push(status);
        self.h.txn_start.push(start);
        self.h.txn_commit.push(commit);
        self.h.txn_ops.push(end);
        Ok(t)
    }
    /// Operations added so far.
    pub fn num_ops(&self) -> usize {
        self.h.op_kind.len()
    }
    /// The history, the open session closed.
    pub fn finish(mut self) -> History {
        self.end_session();
        self.index_deferred_writes();
        self.h
    }
}
