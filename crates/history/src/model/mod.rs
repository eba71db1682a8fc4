//! The in-memory history: sessions, transactions and operations in a struct-of-arrays layout.
//!
//! Transactions are stored grouped by session, in session order, so a session is a contiguous
//! range of transaction ids and session order needs no extra storage. Operations are stored in
//! transaction order, so a transaction is a contiguous range of operation ids.

mod builder;
mod claims;
mod first_writes;
mod huge;
pub(crate) mod resolve;
mod simple;
mod stream;
mod summary;
mod write_index;

pub use builder::HistoryBuilder;
pub use claims::{CobraClaims, COMPACT_FROM};
pub use first_writes::{Writer, Writers};
pub(crate) use resolve::writer_txns;
pub use resolve::{
    claim_problem, claim_problems, initial_claim_problem, op_txns, resolve, resolve_deferred,
    resolve_unchecked, ReadProblem, Resolution, FROM_AMBIGUOUS, FROM_INIT, FROM_NOBODY,
};
pub use simple::{build_history, BuildError, SimpleTxn};
pub use stream::{Keys, TxnRecord};
pub use summary::{summarize, Summary};
pub use write_index::WriteIndex;

use crate::fxhash::FxHashMap;
use serde::{Deserialize, Serialize};

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

// Cobra's reserved write ids and fence key: facts of the history Cobra's client records (they
// decide what a read observed), so the model owns them and the reader and writer use them.

/// Cobra: the write id of a read of the initial, pre-loaded state.
pub const INIT_WRITE_ID: u64 = 0xbebe_ebee;
/// Cobra: the write id of a read of a key that did not exist (also the initial version).
pub const NULL_WRITE_ID: u64 = 0xdead_beef;
/// Cobra: the write id every delete carries (so deletes cannot be told apart by a reader).
pub const DELETE_WRITE_ID: u64 = 0xabcd_efab;
/// Native JSON Lines: the value a delete writes (`["w", key, null]`: the row is gone). A
/// history with deletes starts every key at it, so a read of `null` (no row) may have read
/// the initial state or any delete of its key: [`History::init_value`].
pub const ABSENT_VALUE: u64 = 0xab5e_ab5e_ab5e_ab5e;
/// Cobra: XXH64 of "FZVERSION" as UTF-16LE, the fence key.
pub const FENCE_KEY_HASH: u64 = 0xb887_3aa8_2ef6_c6d3;

/// A transaction's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TxnStatus {
    /// The database acknowledged the commit.
    Committed,
    /// The transaction aborted (or the client rolled it back).
    Aborted,
    /// The client lost the connection before learning the outcome.
    Unknown,
}

impl TxnStatus {
    /// The name the formats and reports use.
    pub fn as_str(self) -> &'static str {
        match self {
            TxnStatus::Committed => "committed",
            TxnStatus::Aborted => "aborted",
            TxnStatus::Unknown => "unknown",
        }
    }
}

/// What an operation does.
// One byte, `Write` zero: room for a log's kinds comes zeroed from the system
// (`OpKind::zeroed`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[repr(u8)]
pub enum OpKind {
    /// A write of a value (other writes of the key may write the same value).
    Write = 0,
    /// A read that observed the value in `op_value`.
    Read,
    /// A read that observed the initial state of the key (or its absence).
    ReadInit,
}

impl OpKind {
    /// `n` kinds, all `Write`, in memory the system hands out zeroed: pages never written are
    /// never touched. `vec![OpKind::Write; n]` writes every byte (an enum is not known to be
    /// zero), and room for a large log's kinds is mostly written once more by its decoder, so
    /// the first pass over it was a serial page fault per 4 KiB before decoding began.
    pub(crate) fn zeroed(n: usize) -> Vec<OpKind> {
        let mut bytes = std::mem::ManuallyDrop::new(vec![0u8; n]);
        // SAFETY: `OpKind` is `repr(u8)` with `Write` = 0, so every zero byte is a valid
        // `OpKind`, and its size and alignment are a byte's: the allocation is the same block
        // a `Vec<u8>` of this length and capacity owns, handed over whole.
        unsafe {
            Vec::from_raw_parts(
                bytes.as_mut_ptr().cast::<OpKind>(),
                bytes.len(),
                bytes.capacity(),
            )
        }
    }
}

/// A whole history. All `txn_*` arrays have one entry per transaction, all `op_*` arrays one
/// entry per operation.
#[derive(Clone, Debug, Default)]
pub struct History {
    /// Session names (file names for Cobra logs, the `session` field for JSON Lines).
    pub session_names: Vec<String>,
    /// `session_txns[s]..session_txns[s+1]` are the transactions of session `s`, in order.
    pub session_txns: Vec<TxnId>,

    /// Each transaction's id in the input (external id).
    pub txn_ext: Vec<u64>,
    /// Each transaction's outcome.
    pub txn_status: Vec<TxnStatus>,
    /// `txn_ops[t]..txn_ops[t+1]` are the operations of transaction `t`, in order.
    pub txn_ops: Vec<OpId>,
    /// Start timestamps, or [`NO_TIME`].
    pub txn_start: Vec<u64>,
    /// Commit timestamps, or [`NO_TIME`].
    pub txn_commit: Vec<u64>,

    /// Each operation's kind.
    pub op_kind: Vec<OpKind>,
    /// Each operation's key.
    pub op_key: Vec<KeyId>,
    /// For a write, its unique value (Cobra: the write id); for a read, the value it observed.
    pub op_value: Vec<u64>,

    /// Key names, by key id.
    pub keys: Vec<String>,
    /// The key fence transactions use, if the history has one.
    pub fence_key: Option<KeyId>,
    /// Cobra's claims, for a history read from Cobra logs.
    pub cobra: Option<CobraClaims>,

    /// (key, value) of every write → its (first) operation; built while loading and reused to
    /// resolve reads.
    pub write_index: WriteIndex,
    /// (key, value) written more than once → the later writes, in op order (the first is in
    /// `write_index`). Empty for a history whose written values are unique per key, so such a
    /// history pays nothing for the general case.
    pub dup_writes: FxHashMap<(KeyId, u64), Vec<OpId>>,
    /// The value every key holds before any write, where the format says (dbcop, PolySI: 0): a
    /// read of it may have read the initial state as well as any write of that value.
    pub init_value: Option<u64>,
    /// External transaction id → dense id.
    pub txn_index: FxHashMap<u64, TxnId>,
    /// List-append reads (Elle): `(read op, start, end)`, sorted by op, says the read returned
    /// the whole list `list_values[start..end]` — the key's versions from the empty initial
    /// list, in order. The op itself reads the last element (or the initial state when empty).
    pub list_reads: Vec<(OpId, u32, u32)>,
    /// The lists of `list_reads`, one after another.
    pub list_values: Vec<u64>,
    /// The application's own values, where the log has them (the collector's `k<id>|<value>`
    /// payload, an untagged recording's value): `(op, end)` sorted by op, the value being
    /// `app_text[previous end..end]`. Certificates show these instead of the ids or hashes
    /// the checker works with; empty for formats without them.
    pub app_values: Vec<(OpId, u32)>,
    /// The text of `app_values`, one after another.
    pub app_text: String,
    /// Each transaction's 1-based place in its session as the input had it, where that is not
    /// its place in `session_range` (a history with every transaction a session of its own);
    /// empty otherwise. Reports name long-id transactions by it.
    pub txn_pos: Vec<u32>,
}

/// Longest application value a report shows whole, in characters.
const SHOWN_APP_CHARS: usize = 40;

/// An application value in quotes, control characters escaped (it cannot rewrite the
/// terminal), cut to 40 characters with the rest counted.
pub fn quote_app_value(a: &str) -> String {
    let n = a.chars().count();
    if n <= SHOWN_APP_CHARS {
        return format!("{a:?}");
    }
    let cut: String = a.chars().take(SHOWN_APP_CHARS).collect();
    format!("{cut:?}…(+{} chars)", n - SHOWN_APP_CHARS)
}

/// Ids below this name a transaction as `T<id>` (a person's own numbering); longer ones (a
/// collector's `client << 40 | n`, Cobra's random ids) give way to `<session>:<n>`, its n-th
/// transaction in its session: short, and the same on every run.
pub const SHORT_ID_LIMIT: u64 = 1_000_000;

impl History {
    /// Number of transactions.
    pub fn num_txns(&self) -> usize {
        self.txn_ext.len()
    }
    /// Number of operations.
    pub fn num_ops(&self) -> usize {
        self.op_kind.len()
    }
    /// Number of sessions.
    pub fn num_sessions(&self) -> usize {
        self.session_names.len()
    }
    /// Number of distinct keys.
    pub fn num_keys(&self) -> usize {
        self.keys.len()
    }
    /// The operations of transaction `t`, in order.
    pub fn ops(&self, t: TxnId) -> std::ops::Range<usize> {
        self.txn_ops[t as usize] as usize..self.txn_ops[t as usize + 1] as usize
    }
    /// The transactions of session `s`, in session order.
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
    /// The same history with every transaction a session of its own (named after the session it
    /// was in, and named in reports by its place there), so no order between a session's transactions is assumed: for clients whose
    /// sessions issue transactions concurrently (`krait check --no-session-order`).
    pub fn one_session_per_txn(&self) -> History {
        let mut h = self.clone();
        let sessions: Vec<usize> = (0..self.num_txns() as TxnId)
            .map(|t| self.session_of(t))
            .collect();
        h.txn_pos = (0..self.num_txns() as TxnId)
            .map(|t| self.place(t, sessions[t as usize]))
            .collect();
        h.session_names = sessions
            .iter()
            .map(|&s| self.session_names[s].clone())
            .collect();
        h.session_txns = (0..=self.num_txns() as TxnId).collect();
        h
    }
    /// The session of transaction `t`.
    pub fn session_of(&self, t: TxnId) -> usize {
        // session_txns is sorted; the session is the last start <= t.
        self.session_txns.partition_point(|&start| start <= t) - 1
    }
    /// Whether any transaction has a start or commit timestamp.
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
    /// The application's own value for op `op`, if the log has it.
    pub fn app_value(&self, op: OpId) -> Option<&str> {
        let i = self.app_values.partition_point(|a| a.0 < op);
        let &(o, end) = self.app_values.get(i)?;
        let start = if i == 0 { 0 } else { self.app_values[i - 1].1 };
        (o == op).then(|| &self.app_text[start as usize..end as usize])
    }
    /// Op `op`'s value as reports show it: the application's own value, quoted (escaped,
    /// long ones cut), where the log has it; else the number the history holds.
    pub fn value_text(&self, op: usize) -> String {
        match self.app_value(op as OpId) {
            Some(a) => quote_app_value(a),
            None => self.op_value[op].to_string(),
        }
    }
    /// Whether some key is written with the same value more than once.
    pub fn has_duplicates(&self) -> bool {
        !self.dup_writes.is_empty()
    }
    /// The first write of `value` to `key`.
    #[inline]
    pub fn first_write(&self, key: KeyId, value: u64) -> Option<OpId> {
        self.write_index.get(self.ops_view(), key, value)
    }
    fn ops_view(&self) -> write_index::Ops<'_> {
        write_index::Ops {
            key: &self.op_key,
            value: &self.op_value,
        }
    }
    /// Every write of `value` to `key`, in op order.
    pub fn writes_of(&self, key: KeyId, value: u64) -> impl Iterator<Item = OpId> + '_ {
        let first = self.first_write(key, value);
        let more = first
            .and_then(|_| self.dup_writes.get(&(key, value)))
            .map_or(&[][..], |v| &v[..]);
        first.into_iter().chain(more.iter().copied())
    }
    /// Whether transaction `t` writes the key of its op `op` again later (so `op`'s version is
    /// never installed: a read of it is an intermediate read). It scans the rest of the
    /// transaction: asking it of every write of a large transaction is quadratic, so a pass
    /// over many ops marks each transaction's last write of a key instead.
    pub fn overwritten_in(&self, t: TxnId, op: usize) -> bool {
        let k = self.op_key[op];
        (op + 1..self.ops(t).end).any(|x| self.op_kind[x] == OpKind::Write && self.op_key[x] == k)
    }
    /// Whether the history has list-append reads.
    pub fn has_lists(&self) -> bool {
        !self.list_reads.is_empty()
    }
    /// How reports name transaction `t`: `T` and its id when the id is short (below
    /// [`SHORT_ID_LIMIT`]), else `<session>:<n>`, its n-th transaction in its session.
    pub fn display_txn(&self, t: TxnId) -> String {
        let ext = self.txn_ext[t as usize];
        if ext < SHORT_ID_LIMIT {
            return format!("T{ext}");
        }
        let s = self.session_of(t);
        format!("{}:{}", self.session_names[s], self.place(t, s))
    }

    /// Transaction `t`'s 1-based place in session `s` (its own) as the input had it.
    fn place(&self, t: TxnId, s: usize) -> u32 {
        match self.txn_pos.get(t as usize) {
            Some(&p) => p,
            None => t - self.session_txns[s] + 1,
        }
    }

    /// The transaction a report names ([`History::display_txn`]'s inverse): `T<id>` or
    /// `<session>:<n>`, followed by nothing or by a space or `'` and more words.
    pub fn txn_named(&self, name: &str) -> Option<TxnId> {
        let name = name
            .split(|c: char| c.is_whitespace() || c == '\'')
            .next()
            .unwrap_or(name);
        if let Some((session, n)) = name.rsplit_once(':') {
            if let Ok(n) = n.parse::<u32>() {
                let found = (0..self.num_sessions())
                    .filter(|&s| self.session_names[s] == session)
                    .flat_map(|s| self.session_range(s).map(move |t| (s, t)))
                    .find(|&(s, t)| self.place(t, s) == n)
                    .map(|(_, t)| t);
                if found.is_some() {
                    return found;
                }
            }
        }
        let id = name.strip_prefix('T')?.parse::<u64>().ok()?;
        self.txn_index.get(&id).copied()
    }

    /// Bytes held by the arrays (not counting allocator slack), for memory reports.
    pub fn heap_bytes(&self) -> usize {
        let n = self.num_txns();
        let m = self.num_ops();
        let mut b = n * (8 + 1 + 4 + 8 + 8) + m * (1 + 4 + 8);
        b += self.keys.iter().map(|k| k.len() + 24).sum::<usize>();
        b += self.app_values.len() * 8 + self.app_text.len();
        if let Some(c) = &self.cobra {
            b += c.heap_bytes();
        }
        // hashbrown: one control byte plus the entry per bucket, at most 7/8 full.
        b += self.write_index.capacity() * (4 + 1);
        b += self.txn_index.capacity() * (8 + 4 + 1);
        b += self
            .dup_writes
            .values()
            .map(|v| v.capacity() * 4 + 16 + 24 + 1)
            .sum::<usize>();
        b
    }
}
