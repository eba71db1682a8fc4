//! The in-memory history: sessions, transactions and operations in a struct-of-arrays layout.
//!
//! Transactions are stored grouped by session, in session order, so a session is a contiguous
//! range of transaction ids and session order needs no extra storage. Operations are stored in
//! transaction order, so a transaction is a contiguous range of operation ids.

use crate::fxhash::FxHashMap;
use serde::Serialize;

/// Dense transaction id: an index into the transaction arrays.
pub type TxnId = u32;
/// Dense key id: an index into [`History::keys`].
pub type KeyId = u32;
/// Dense operation id: an index into the operation arrays.
pub type OpId = u32;

/// Marks a missing timestamp.
pub const NO_TIME: u64 = u64::MAX;

/// The name of the key our collector reserves for fence transactions.
pub const NATIVE_FENCE_KEY: &str = "__krait_fence";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TxnStatus {
    Committed,
    Aborted,
    /// The client lost the connection before learning the outcome.
    Unknown,
}

impl TxnStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TxnStatus::Committed => "committed",
            TxnStatus::Aborted => "aborted",
            TxnStatus::Unknown => "unknown",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OpKind {
    /// A write of a value that is unique among all writes of its key.
    Write,
    /// A read that observed the value in `op_value`.
    Read,
    /// A read that observed the initial state of the key (or its absence).
    ReadInit,
}

/// What Cobra's logs say beyond our model: the writer a read names and the value hashes.
/// Kept so that a read whose claims do not match the write it names can be rejected.
#[derive(Clone, Debug, Default)]
pub struct CobraClaims {
    /// Per operation: for a write its value hash, for a read the value hash it saw.
    pub value_hash: Vec<u64>,
    /// Per operation: for a read the writer transaction id it names (external id); 0 otherwise.
    pub read_writer: Vec<u64>,
}

/// A whole history. All `txn_*` arrays have one entry per transaction, all `op_*` arrays one
/// entry per operation.
#[derive(Clone, Debug, Default)]
pub struct History {
    /// Session names (file names for Cobra logs, the `session` field for JSON Lines).
    pub session_names: Vec<String>,
    /// `session_txns[s]..session_txns[s+1]` are the transactions of session `s`, in order.
    pub session_txns: Vec<TxnId>,

    pub txn_ext: Vec<u64>,
    pub txn_status: Vec<TxnStatus>,
    /// `txn_ops[t]..txn_ops[t+1]` are the operations of transaction `t`, in order.
    pub txn_ops: Vec<OpId>,
    pub txn_start: Vec<u64>,
    pub txn_commit: Vec<u64>,

    pub op_kind: Vec<OpKind>,
    pub op_key: Vec<KeyId>,
    /// For a write, its unique value (Cobra: the write id); for a read, the value it observed.
    pub op_value: Vec<u64>,

    pub keys: Vec<String>,
    /// The key fence transactions use, if the history has one.
    pub fence_key: Option<KeyId>,
    pub cobra: Option<CobraClaims>,

    /// (key, value) of every write → its operation; built while loading, where duplicates are
    /// input errors, and reused to resolve reads.
    pub write_index: FxHashMap<(KeyId, u64), OpId>,
    /// External transaction id → dense id.
    pub txn_index: FxHashMap<u64, TxnId>,
    /// List-append reads (Elle): `(read op, start, end)`, sorted by op, says the read returned
    /// the whole list `list_values[start..end]` — the key's versions from the empty initial
    /// list, in order. The op itself reads the last element (or the initial state when empty).
    pub list_reads: Vec<(OpId, u32, u32)>,
    pub list_values: Vec<u64>,
}

impl History {
    pub fn num_txns(&self) -> usize {
        self.txn_ext.len()
    }
    pub fn num_ops(&self) -> usize {
        self.op_kind.len()
    }
    pub fn num_sessions(&self) -> usize {
        self.session_names.len()
    }
    pub fn num_keys(&self) -> usize {
        self.keys.len()
    }
    pub fn ops(&self, t: TxnId) -> std::ops::Range<usize> {
        self.txn_ops[t as usize] as usize..self.txn_ops[t as usize + 1] as usize
    }
    pub fn session_range(&self, s: usize) -> std::ops::Range<TxnId> {
        self.session_txns[s]..self.session_txns[s + 1]
    }
    /// The session of every transaction (computed; the layout stores only ranges).
    pub fn txn_sessions(&self) -> Vec<u32> {
        let mut out = vec![0u32; self.num_txns()];
        for s in 0..self.num_sessions() {
            for t in self.session_range(s) {
                out[t as usize] = s as u32;
            }
        }
        out
    }
    pub fn session_of(&self, t: TxnId) -> usize {
        // session_txns is sorted; the session is the last start <= t.
        self.session_txns.partition_point(|&start| start <= t) - 1
    }
    pub fn has_timestamps(&self) -> bool {
        self.txn_start.iter().any(|&t| t != NO_TIME)
            || self.txn_commit.iter().any(|&t| t != NO_TIME)
    }
    /// A fence is a transaction whose first operation reads the fence key.
    pub fn is_fence(&self, t: TxnId) -> bool {
        let Some(fk) = self.fence_key else {
            return false;
        };
        let r = self.ops(t);
        !r.is_empty()
            && self.op_key[r.start] == fk
            && matches!(self.op_kind[r.start], OpKind::Read | OpKind::ReadInit)
    }
    /// The list a list-append read returned, if the op is one.
    pub fn list_of(&self, op: OpId) -> Option<&[u64]> {
        let i = self.list_reads.partition_point(|l| l.0 < op);
        let &(o, a, b) = self.list_reads.get(i)?;
        (o == op).then(|| &self.list_values[a as usize..b as usize])
    }
    pub fn has_lists(&self) -> bool {
        !self.list_reads.is_empty()
    }
    pub fn display_txn(&self, t: TxnId) -> String {
        format!("T{}", self.txn_ext[t as usize])
    }

    /// Bytes held by the arrays (not counting allocator slack), for memory reports.
    pub fn heap_bytes(&self) -> usize {
        let n = self.num_txns();
        let m = self.num_ops();
        let mut b = n * (8 + 1 + 4 + 8 + 8) + m * (1 + 4 + 8);
        b += self.keys.iter().map(|k| k.len() + 24).sum::<usize>();
        if let Some(c) = &self.cobra {
            b += (c.value_hash.len() + c.read_writer.len()) * 8;
        }
        // hashbrown: one control byte plus the entry per bucket, at most 7/8 full.
        b += self.write_index.capacity() * (16 + 4 + 1);
        b += self.txn_index.capacity() * (8 + 4 + 1);
        b
    }
}

/// Incremental construction of a [`History`], one session at a time.
#[derive(Default)]
pub struct HistoryBuilder {
    pub(crate) h: History,
    key_index: FxHashMap<String, KeyId>,
    open_session: bool,
}

impl HistoryBuilder {
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
    pub fn with_cobra_claims(mut self) -> Self {
        self.h.cobra = Some(CobraClaims::default());
        self
    }
    pub fn key(&mut self, name: &str) -> KeyId {
        if let Some(&k) = self.key_index.get(name) {
            return k;
        }
        let k = self.h.keys.len() as KeyId;
        self.h.keys.push(name.to_string());
        self.key_index.insert(name.to_string(), k);
        k
    }
    /// Adds a key the caller knows is new (a reader with its own index, such as Cobra's hashes).
    /// It is not entered in the name index, so [`Self::key`] must not be mixed with it.
    pub fn new_key_unindexed(&mut self, name: String) -> KeyId {
        let k = self.h.keys.len() as KeyId;
        self.h.keys.push(name);
        k
    }
    pub fn set_fence_key(&mut self, k: KeyId) {
        self.h.fence_key = Some(k);
    }
    pub fn begin_session(&mut self, name: impl Into<String>) {
        if self.open_session {
            self.end_session();
        }
        self.h.session_names.push(name.into());
        self.open_session = true;
    }
    pub fn end_session(&mut self) {
        if self.open_session {
            self.h.session_txns.push(self.h.txn_ext.len() as TxnId);
            self.open_session = false;
        }
    }
    /// Adds an operation to the transaction that the next [`Self::finish_txn`] closes. A write
    /// whose (key, value) another write already has is refused with that write's op id.
    pub fn op(&mut self, kind: OpKind, key: KeyId, value: u64) -> Result<(), OpId> {
        if kind == OpKind::Write {
            let id = self.h.op_kind.len() as OpId;
            if let Some(&prev) = self.h.write_index.get(&(key, value)) {
                return Err(prev);
            }
            self.h.write_index.insert((key, value), id);
        }
        self.push_op(kind, key, value);
        Ok(())
    }
    /// Adds an operation that takes no part in read resolution (Cobra's deletes share one id).
    pub fn op_unindexed(&mut self, kind: OpKind, key: KeyId, value: u64) {
        self.push_op(kind, key, value);
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
    /// Adds a list-append read: of the last element, or of the initial state when empty.
    pub fn list_read(&mut self, key: KeyId, values: &[u64]) {
        match values.last() {
            Some(&v) => self.push_op(OpKind::Read, key, v),
            None => self.push_op(OpKind::ReadInit, key, 0),
        }
        self.list(values);
    }
    pub fn cobra_claim(&mut self, value_hash: u64, read_writer: u64) {
        let c = self.h.cobra.as_mut().expect("cobra claims enabled");
        c.value_hash.push(value_hash);
        c.read_writer.push(read_writer);
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
        for i in keep..self.h.op_kind.len() {
            if self.h.op_kind[i] == OpKind::Write {
                let k = (self.h.op_key[i], self.h.op_value[i]);
                if self.h.write_index.get(&k) == Some(&(i as OpId)) {
                    self.h.write_index.remove(&k);
                }
            }
        }
        self.h.op_kind.truncate(keep);
        self.h.op_key.truncate(keep);
        self.h.op_value.truncate(keep);
        if let Some(c) = self.h.cobra.as_mut() {
            c.value_hash.truncate(keep);
            c.read_writer.truncate(keep);
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
        let t = self.h.txn_ext.len() as TxnId;
        if let Some(&prev) = self.h.txn_index.get(&ext) {
            return Err(prev);
        }
        self.h.txn_index.insert(ext, t);
        self.h.txn_ext.push(ext);
        self.h.txn_status.push(status);
        self.h.txn_start.push(start);
        self.h.txn_commit.push(commit);
        self.h.txn_ops.push(self.h.op_kind.len() as OpId);
        Ok(t)
    }
    pub fn num_ops(&self) -> usize {
        self.h.op_kind.len()
    }
    pub fn finish(mut self) -> History {
        self.end_session();
        self.h
    }
}

/// A transaction spelled out, for building small histories in tests and examples.
#[derive(Clone, Debug)]
pub struct SimpleTxn {
    pub session: usize,
    pub id: u64,
    pub status: TxnStatus,
    /// (kind, key, value); the value of a `ReadInit` is ignored.
    pub ops: Vec<(OpKind, String, u64)>,
    /// (op index, list) for list-append reads.
    pub lists: Vec<(usize, Vec<u64>)>,
    pub start: u64,
    pub commit: u64,
}

impl SimpleTxn {
    pub fn new(session: usize, id: u64) -> Self {
        SimpleTxn {
            session,
            id,
            status: TxnStatus::Committed,
            ops: Vec::new(),
            lists: Vec::new(),
            start: NO_TIME,
            commit: NO_TIME,
        }
    }
    pub fn r(mut self, key: &str, value: u64) -> Self {
        self.ops.push((OpKind::Read, key.to_string(), value));
        self
    }
    pub fn r0(mut self, key: &str) -> Self {
        self.ops.push((OpKind::ReadInit, key.to_string(), 0));
        self
    }
    /// A list-append read that returned this whole list (`[]`: the initial, empty list).
    pub fn rl(mut self, key: &str, list: &[u64]) -> Self {
        self.lists.push((self.ops.len(), list.to_vec()));
        match list.last() {
            Some(&v) => self.ops.push((OpKind::Read, key.to_string(), v)),
            None => self.ops.push((OpKind::ReadInit, key.to_string(), 0)),
        }
        self
    }
    pub fn w(mut self, key: &str, value: u64) -> Self {
        self.ops.push((OpKind::Write, key.to_string(), value));
        self
    }
    pub fn status(mut self, s: TxnStatus) -> Self {
        self.status = s;
        self
    }
    pub fn times(mut self, start: u64, commit: u64) -> Self {
        self.start = start;
        self.commit = commit;
        self
    }
}

/// Builds a history from transactions listed in any order; each session keeps the order in
/// which its transactions appear. Duplicate write values or ids are reported as errors.
pub fn build_history(txns: &[SimpleTxn]) -> Result<History, String> {
    let mut b = HistoryBuilder::new();
    let nsessions = txns.iter().map(|t| t.session + 1).max().unwrap_or(0);
    for s in 0..nsessions {
        b.begin_session(format!("s{s}"));
        for t in txns.iter().filter(|t| t.session == s) {
            for (i, (kind, key, value)) in t.ops.iter().enumerate() {
                let k = b.key(key);
                if key == NATIVE_FENCE_KEY {
                    b.set_fence_key(k);
                }
                b.op(*kind, k, *value)
                    .map_err(|_| format!("key {key} written with {value} twice"))?;
                if let Some((_, l)) = t.lists.iter().find(|l| l.0 == i) {
                    b.list(l);
                }
            }
            b.finish_txn(t.id, t.status, t.start, t.commit)
                .map_err(|_| format!("txn id {} used twice", t.id))?;
        }
    }
    Ok(b.finish())
}
