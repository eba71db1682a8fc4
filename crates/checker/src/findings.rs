//! What building the known graph can find that rules out every serial order before any cycle
//! is searched: typed, with the ops and transactions involved. `cert` turns each into words.

use krait_history::{ReadProblem, TxnId};

/// Where a list-append read puts an element no version order can put there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Misplaced {
    /// Not directly after its own transaction's previous append.
    AfterOwnAppend,
    /// Without its transaction's earlier append before it.
    WithoutEarlierAppend,
}

/// Why a write of the value a read returned cannot be the write it read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NoWriter {
    /// The reader's own transaction writes it, later.
    Own,
    /// Its transaction did not commit (aborted, or an unknown outcome nobody else shows read).
    NotCommitted,
    /// Its transaction overwrote it before committing.
    Overwritten,
}

/// A reject reason found while building, before any graph search. Ops are indices into the
/// history's ops; `key` is a key id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Finding {
    /// The log's claims about read `op` contradict the write it names.
    ReadProblem { op: u32, problem: ReadProblem },
    /// Transaction `txn` wrote the key at op `own`, then read it (`op`) without seeing that write.
    OwnWriteNotSeen { txn: TxnId, op: u32, own: u32 },
    /// Read `op` returned a value no transaction wrote.
    ReadOfNobody { op: u32 },
    /// Read `op` of transaction `txn` returned a value `txn` itself writes only later.
    FutureRead { txn: TxnId, op: u32 },
    /// Read `op` returned a write of a transaction that did not commit (G1a).
    AbortedRead { op: u32 },
    /// Read `op` returned a write its writer overwrote before committing (G1b).
    IntermediateRead { op: u32 },
    /// Read `op` returned a value several writes wrote, and none of them can be its writer:
    /// each candidate write op with why not.
    NoWriter { op: u32, why: Vec<(u32, NoWriter)> },
    /// Transaction `txn` read `key` twice (ops `first` and `second`) and saw two versions.
    NonRepeatable {
        txn: TxnId,
        key: u32,
        first: u32,
        second: u32,
    },
    /// `t1` and `t2` both read `from`'s version of `key` (None: the initial one) and both
    /// overwrote it.
    LostUpdate {
        key: u32,
        from: Option<TxnId>,
        t1: TxnId,
        t2: TxnId,
    },
    /// More committed transactions (`readers`) first read `key` at one value (shown by read
    /// op `op`) and then overwrote it than there are versions holding that value: the last
    /// writes of it by `writers`, and the initial version where `init`. Two of them read one
    /// version and both overwrote it, whichever writes they read (see `graph::versions`).
    LostUpdateByCount {
        key: u32,
        op: u32,
        readers: Vec<TxnId>,
        writers: Vec<TxnId>,
        init: bool,
    },
    /// `txn`'s write of `key` is said to directly follow two different versions.
    TwoPredecessors {
        key: u32,
        txn: TxnId,
        a: Option<TxnId>,
        b: Option<TxnId>,
    },
    /// Two writes of `key` are each said to directly follow `from`'s version.
    TwoSuccessors {
        key: u32,
        from: Option<TxnId>,
        t1: TxnId,
        t2: TxnId,
    },
    /// List read `op` holds `value` twice.
    DuplicateElement { op: u32, value: u64 },
    /// List read `op` holds `value`, which nobody appended.
    ElementOfNobody { op: u32, value: u64 },
    /// List read `op` holds the element appended at op `write` by a transaction that did not
    /// commit.
    AbortedElement { op: u32, write: u32 },
    /// List read `op` holds the element appended at `write` where no version order puts it.
    MisplacedElement { op: u32, write: u32, how: Misplaced },
    /// List read `op` shows another transaction's append right after `write`, though its
    /// transaction appended to the key again.
    IntermediateElement { op: u32, write: u32 },
}
