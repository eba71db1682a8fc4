//! The history from JSON Lines records gathered per session: sessions in order of first sight,
//! each one's transactions in order. Operations are stored as read, in the order the inputs
//! hold them ([`FileOrder`]). Without list-append reads or application values (nearly every
//! large log) those arrays become the history's own where each session's records come one
//! after another (the shape writers give), and are copied into session order on every core
//! otherwise; with them, operations go one at a time, as the builder takes them.

use super::jsonl::AppVals;
use super::jsonl_block::{unpack, PieceOps};
use super::{Format, Loaded};
use crate::error::{InputError, Location, Warning};
use crate::model::{HistoryBuilder, KeyId, OpId, OpKind, TxnStatus, ABSENT_VALUE};
use rayon::prelude::*;
use std::collections::HashMap;
use std::ops::Range;
use std::path::PathBuf;

/// A transaction read, waiting for its session to be built.
pub(crate) struct Pending {
    /// The input (by number) and line it was read from.
    pub file: usize,
    pub line: u64,
    pub ext: u64,
    pub status: TxnStatus,
    pub start: u64,
    pub commit: u64,
    /// Where its operations are in [`FileOrder`].
    pub ops: Range<usize>,
    /// (op index, list) of list-append reads.
    pub lists: Vec<(u32, Vec<u64>)>,
    /// The application's values where the log has them.
    pub app: AppVals,
}

/// Every record's operations in the order the inputs hold them.
#[derive(Default)]
pub(crate) struct FileOrder {
    kind: Vec<OpKind>,
    key: Vec<KeyId>,
    value: Vec<u64>,
}

impl FileOrder {
    /// Room for `n` more operations (an input's bound, from its size).
    pub fn reserve(&mut self, n: usize) {
        self.kind.reserve(n);
        self.key.reserve(n);
        self.value.reserve(n);
    }

    pub fn len(&self) -> usize {
        self.value.len()
    }

    /// Stores a record's operations; returns where they are.
    pub fn extend(&mut self, ops: &[(OpKind, KeyId, u64)]) -> Range<usize> {
        let first = self.len();
        for &(kind, key, value) in ops {
            self.kind.push(kind);
            self.key.push(key);
            self.value.push(value);
        }
        first..self.len()
    }

    /// Stores the operations `first..end` of a piece, their key numbers mapped to key ids by
    /// `table`; returns where they are.
    #[inline]
    pub fn extend_scanned(
        &mut self,
        ops: &PieceOps,
        (first, end): (usize, usize),
        table: &[KeyId],
    ) -> Range<usize> {
        let at = self.len();
        let keys = &ops.keys[first..end];
        self.value.extend_from_slice(&ops.values[first..end]);
        self.kind.extend(keys.iter().map(|&x| unpack(x).0));
        self.key
            .extend(keys.iter().map(|&x| table[unpack(x).1 as usize]));
        at..self.len()
    }
}

/// Below this many operations the copy stays on the calling thread.
const PARALLEL_FROM: usize = 1 << 16;

#[cfg(test)]
thread_local! {
    /// Tests set where copying on every core starts, to take either way on small logs.
    pub(crate) static TEST_PARALLEL_FROM: std::cell::Cell<usize> =
        const { std::cell::Cell::new(PARALLEL_FROM) };
    /// Histories whose operations were taken in place, for tests to see that way taken.
    pub(crate) static TEST_IN_PLACE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

fn parallel_from() -> usize {
    #[cfg(test)]
    return TEST_PARALLEL_FROM.with(|c| c.get());
    #[cfg(not(test))]
    PARALLEL_FROM
}

/// The history of `sessions` (read from `paths`, their operations in `ops`), with the
/// warnings reading gave.
pub(crate) fn build(
    mut b: HistoryBuilder,
    sessions: Vec<(String, Vec<Pending>)>,
    warnings: Vec<Warning>,
    paths: &[PathBuf],
    ops: FileOrder,
) -> Result<Loaded, InputError> {
    let txns = || sessions.iter().flat_map(|(_, t)| t.iter());
    let has_lists = txns().any(|p| !p.lists.is_empty());
    // List-append values must hear of a repeat as each write is added, and application values
    // are placed by the builder one at a time.
    if ops.len() < parallel_from() || has_lists || txns().any(|p| !p.app.is_empty()) {
        b.reserve_ops(ops.len());
        return in_turn(b, sessions, warnings, paths, &ops, has_lists);
    }
    // Each session's records one after another, sessions in order of first sight.
    let mut at = 0;
    let in_place = txns().all(|p| {
        let next = p.ops.start == at;
        at = p.ops.end;
        next
    });
    #[cfg(test)]
    TEST_IN_PLACE.with(|c| c.set(c.get() + usize::from(in_place)));
    let (kind, key, value) = if in_place {
        let FileOrder {
            mut kind,
            mut key,
            mut value,
        } = ops;
        // Room reserved from the inputs' sizes and not used is given back, not copied.
        kind.shrink_to_fit();
        key.shrink_to_fit();
        value.shrink_to_fit();
        (kind, key, value)
    } else {
        in_session_order(&sessions, &ops)
    };
    let deletes = kind
        .par_iter()
        .zip(&value)
        .any(|(&k, &v)| k == OpKind::Write && v == ABSENT_VALUE);
    // Every write is indexed at the end, together, in op order.
    let writes: Vec<OpId> = kind
        .par_iter()
        .enumerate()
        .filter(|(_, &k)| k == OpKind::Write)
        .map(|(o, _)| o as OpId)
        .collect();
    b.set_ops(kind, key, value);
    b.defer_writes(writes);
    let mut first_line: HashMap<u64, (usize, u64)> = HashMap::new();
    let mut end = 0;
    for (name, txns) in sessions {
        b.begin_session(name);
        for p in txns {
            end += p.ops.len();
            let closed = b.finish_txn_at(p.ext, p.status, p.start, p.commit, end as OpId);
            if closed.is_err() {
                return Err(used_twice(&p, &first_line, paths));
            }
            first_line.insert(p.ext, (p.file, p.line));
        }
    }
    Ok(loaded(b, deletes, warnings))
}

/// The operations of `sessions` in session order, each transaction's copied into its own
/// slices of the arrays on every core.
fn in_session_order(
    sessions: &[(String, Vec<Pending>)],
    ops: &FileOrder,
) -> (Vec<OpKind>, Vec<KeyId>, Vec<u64>) {
    let total = ops.len();
    let mut kind = OpKind::zeroed(total);
    let mut key = vec![0 as KeyId; total];
    let mut value = vec![0u64; total];
    let mut slices = Vec::with_capacity(sessions.iter().map(|s| s.1.len()).sum());
    let (mut k, mut y, mut v) = (&mut kind[..], &mut key[..], &mut value[..]);
    for p in sessions.iter().flat_map(|(_, t)| t.iter()) {
        let n = p.ops.len();
        let (k1, k2) = k.split_at_mut(n);
        let (y1, y2) = y.split_at_mut(n);
        let (v1, v2) = v.split_at_mut(n);
        slices.push((p.ops.clone(), k1, y1, v1));
        (k, y, v) = (k2, y2, v2);
    }
    slices.into_par_iter().for_each(|(r, k, y, v)| {
        k.copy_from_slice(&ops.kind[r.clone()]);
        y.copy_from_slice(&ops.key[r.clone()]);
        v.copy_from_slice(&ops.value[r]);
    });
    (kind, key, value)
}

/// One operation at a time, as the builder takes them (`has_lists`: some transaction has
/// list-append reads).
fn in_turn(
    mut b: HistoryBuilder,
    sessions: Vec<(String, Vec<Pending>)>,
    warnings: Vec<Warning>,
    paths: &[PathBuf],
    ops: &FileOrder,
    has_lists: bool,
) -> Result<Loaded, InputError> {
    let mut first_line: HashMap<u64, (usize, u64)> = HashMap::new();
    let mut deletes = false;
    for (name, txns) in sessions {
        b.begin_session(name);
        for p in txns {
            let path = paths[p.file].as_path();
            let mut lists = p.lists.iter().peekable();
            let mut app = p.app.iter().peekable();
            for (i, o) in p.ops.clone().enumerate() {
                let (kind, k, v) = (ops.kind[o], ops.key[o], ops.value[o]);
                deletes |= kind == OpKind::Write && v == ABSENT_VALUE;
                // Repeated values are allowed but for list appends, which must hear of a
                // repeat at once; the rest are indexed together at the end.
                let earlier = if has_lists || kind != OpKind::Write {
                    b.op(kind, k, v)
                } else {
                    b.write_deferred(k, v);
                    None
                };
                if let Some((_, l)) = lists.next_if(|l| l.0 as usize == i) {
                    b.list(l);
                }
                if let Some((_, a)) = app.next_if(|a| a.0 as usize == i) {
                    b.app_value(a);
                }
                // A list holds each appended element once (see gather.rs).
                if earlier.is_some() && has_lists {
                    return Err(InputError::new(
                        path,
                        Location::Line(p.line),
                        format!(
                            "key {:?} is appended the value {v} more than once (list-append values must be unique per key)",
                            b.h.keys[k as usize]
                        ),
                    ));
                }
            }
            if b.finish_txn(p.ext, p.status, p.start, p.commit).is_err() {
                return Err(used_twice(&p, &first_line, paths));
            }
            first_line.insert(p.ext, (p.file, p.line));
        }
    }
    Ok(loaded(b, deletes, warnings))
}

/// The error for transaction `p`, whose id an earlier one (first seen at `first_line`) used.
fn used_twice(
    p: &Pending,
    first_line: &HashMap<u64, (usize, u64)>,
    paths: &[PathBuf],
) -> InputError {
    let (f, l) = first_line.get(&p.ext).copied().unwrap_or((0, 0));
    let where_ = if f == p.file {
        format!("line {l}")
    } else {
        format!("{} line {l}", paths[f].display())
    };
    InputError::new(
        &paths[p.file],
        Location::Line(p.line),
        format!("transaction id {} is used twice (first on {where_})", p.ext),
    )
}

fn loaded(b: HistoryBuilder, deletes: bool, warnings: Vec<Warning>) -> Loaded {
    let mut history = b.finish();
    if deletes {
        absent_is_initial(&mut history);
    }
    Loaded {
        history,
        warnings,
        format: Format::Jsonl,
    }
}

/// A history with deletes: every key starts absent, so a read of no row (`null`) reads the
/// value deletes write, from the initial state or from any delete of its key.
fn absent_is_initial(h: &mut crate::History) {
    h.init_value = Some(ABSENT_VALUE);
    for o in 0..h.op_kind.len() {
        // A list read of `[]` stays one: its whole list, the empty one, is what it read.
        if h.op_kind[o] == OpKind::ReadInit && h.list_of(o as u32).is_none() {
            h.op_kind[o] = OpKind::Read;
            h.op_value[o] = ABSENT_VALUE;
        }
    }
}
