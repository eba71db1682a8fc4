//! Resolves every read to the write it observed, to the initial state, to nobody, or — where its
//! value was written more than once, or is also the initial value — to the list of writes it may
//! have observed; and records reads whose claims (Cobra's named writer and value hash) disagree
//! with the write they name.
//! These are facts about the history, not errors: the checker turns them into REJECTs.

use super::first_writes::{FirstWrites, Writers};
use super::{History, KeyId, OpId, OpKind, TxnId, DELETE_WRITE_ID};
use serde::Serialize;

/// `read_from[op]` for a read of the initial state.
pub const FROM_INIT: OpId = OpId::MAX;
/// `read_from[op]` for a read of a value no write in the history has.
pub const FROM_NOBODY: OpId = OpId::MAX - 1;
/// `read_from[op]` for a read of a value written more than once (or also the initial value):
/// [`Resolution::candidates`] lists the writes it may have read.
pub const FROM_AMBIGUOUS: OpId = OpId::MAX - 2;

/// A read whose claims disagree with the write it resolved to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ReadProblem {
    /// Cobra: the read names writer transaction `claimed`, but the write it names is by another.
    WrongWriter {
        /// The writer transaction the read names (external id).
        claimed: u64,
        /// The transaction of the write it names (external id).
        actual: u64,
    },
    /// Cobra: the value hash read differs from the one written.
    ValueMismatch {
        /// The value hash the read saw.
        read: u64,
        /// The value hash the write wrote.
        written: u64,
    },
    /// The read names a delete, which Cobra's format cannot tell apart from other deletes.
    AmbiguousDelete,
    /// Cobra: the read of a key's initial version (or of its absence) claims value hash `read`,
    /// an earlier read of the same claims `earlier` (op `earlier_op`): the initial version holds
    /// one value, so one of the two returned a value nobody wrote.
    InitialMismatch {
        /// The value hash this read saw.
        read: u64,
        /// The value hash the earlier read of the initial version saw.
        earlier: u64,
        /// That earlier read.
        earlier_op: OpId,
    },
}

/// Every read resolved: what it observed, and the problems found on the way.
#[derive(Clone, Debug)]
pub struct Resolution {
    /// For each read op: the write op it observed, [`FROM_INIT`] or [`FROM_NOBODY`]. For writes:
    /// the op itself.
    pub read_from: Vec<OpId>,
    /// Transaction of each op.
    pub op_txn: Vec<TxnId>,
    /// Reads whose claims disagree with what they resolved to, in op order.
    pub problems: Vec<(OpId, ReadProblem)>,
    /// `(read, start, end)` for each [`FROM_AMBIGUOUS`] read, in op order: it may have read any
    /// of `cand_ops[start..end]` (write ops, in op order, and [`FROM_INIT`] first where the
    /// initial value matches). Empty for histories whose written values are unique.
    pub ambiguous: Vec<(OpId, u32, u32)>,
    /// The candidate lists of `ambiguous`, one after another.
    pub cand_ops: Vec<OpId>,
    /// Whether `problems` holds every read's claim problem. False from [`resolve_unchecked`]:
    /// its caller checks the claims where it looks up each read's writer anyway
    /// ([`claim_problem`]), and [`claim_problems`] finds them all where it needs them.
    pub claims_checked: bool,
    /// Where resolving was deferred ([`resolve_deferred`]): the table each read's writer is
    /// looked up in, and every array above empty until [`Resolution::complete`].
    pub writers: Option<Writers>,
}

impl Resolution {
    /// Resolves every read where [`resolve_deferred`] left that to its caller (as
    /// [`resolve_unchecked`] does: the same arrays, whatever the caller found on the way).
    pub fn complete(&mut self, h: &History) {
        if self.writers.is_some() {
            *self = resolve_unchecked(h);
        }
    }
    /// Whether the arrays are still to be made ([`resolve_deferred`]).
    pub fn is_deferred(&self) -> bool {
        self.writers.is_some()
    }
    /// The transaction whose write a read observed (None for initial reads and reads of nobody).
    pub fn writer_txn(&self, read: OpId) -> Option<TxnId> {
        let w = self.read_from[read as usize];
        (w < FROM_AMBIGUOUS).then(|| self.op_txn[w as usize])
    }
    /// The writes an ambiguous read may have read (empty for any other op).
    pub fn candidates(&self, read: OpId) -> &[OpId] {
        let i = self.ambiguous.partition_point(|a| a.0 < read);
        match self.ambiguous.get(i) {
            Some(&(o, a, b)) if o == read => &self.cand_ops[a as usize..b as usize],
            _ => &[],
        }
    }
}

/// The transaction of every operation (the layout stores only ranges), in parallel: the ops
/// of a run of transactions are one slice, filled transaction by transaction.
pub fn op_txns(h: &History) -> Vec<TxnId> {
    use rayon::prelude::*;
    let mut op_txn = vec![0 as TxnId; h.num_ops()];
    let n = h.num_txns();
    if n == 0 {
        return op_txn;
    }
    // Runs of whole transactions, about CHUNK ops each: (first, end) and their ops.
    let mut runs: Vec<(usize, usize, &mut [TxnId])> = Vec::new();
    let mut rest: &mut [TxnId] = &mut op_txn[h.txn_ops[0] as usize..];
    let mut first = 0;
    while first < n {
        let at = h.txn_ops[first] as usize;
        let mut end = first + 1;
        while end < n && (h.txn_ops[end + 1] as usize) - at < CHUNK {
            end += 1;
        }
        let (run, r) = std::mem::take(&mut rest).split_at_mut(h.txn_ops[end] as usize - at);
        runs.push((first, end, run));
        (rest, first) = (r, end);
    }
    runs.into_par_iter().for_each(|(first, end, run)| {
        let base = h.txn_ops[first] as usize;
        for t in first..end {
            run[h.txn_ops[t] as usize - base..h.txn_ops[t + 1] as usize - base].fill(t as TxnId);
        }
    });
    op_txn
}

/// Ops are resolved (and their transactions found) in chunks of this many, one a task.
const CHUNK: usize = 1 << 14;

/// How many ops ahead resolving asks for a read's slot in [`FirstWrites`]: at 80k read-heavy
/// transactions 8 did as well, none was 107–165 ms against 83–95.
const AHEAD: usize = 32;

/// What each op observed ([`read_from_of`]), through `table` where it was made, else through
/// the history's own index.
fn lookups(h: &History, table: Option<&FirstWrites>) -> Vec<OpId> {
    use rayon::prelude::*;
    let Some(t) = table else {
        return (0..h.num_ops())
            .into_par_iter()
            .with_min_len(CHUNK)
            .map(|o| read_from_of(h, o, |k, v| h.first_write(k, v)))
            .collect();
    };
    let n = h.num_ops();
    let mut out = vec![0 as OpId; n];
    out.par_chunks_mut(CHUNK).enumerate().for_each(|(c, out)| {
        let base = c * CHUNK;
        for (i, x) in out.iter_mut().enumerate() {
            let o = base + i;
            // The slot of a read some reads ahead, asked for now: the lookups' misses overlap
            // instead of coming one after another.
            let a = o + AHEAD;
            if a < n && h.op_kind[a] == OpKind::Read {
                t.prefetch(h.op_key[a], h.op_value[a]);
            }
            *x = read_from_of(h, o, |k, v| t.get(k, v));
        }
    });
    out
}

/// Resolves every read of `h`.
pub fn resolve(h: &History) -> Resolution {
    let mut r = resolve_unchecked(h);
    r.problems = claim_problems(h, &r.op_txn, &r.read_from);
    r.claims_checked = true;
    r
}

/// [`resolve`] without the pass that checks Cobra's claims: `problems` is left empty and
/// `claims_checked` false. A pass of its own, it looks up every read's writer's transaction and
/// value hash again (a tenth of a read-heavy check); a caller that looks up each read's writer
/// anyway checks them there.
pub fn resolve_unchecked(h: &History) -> Resolution {
    let op_txn = op_txns(h);
    // The common case first, in parallel: one lookup per read.
    let table = FirstWrites::worth_it(h).then(|| FirstWrites::of(h));
    let read_from = lookups(h, table.as_ref());
    drop(table);
    // Reads of a repeated value: their candidates, in op order.
    let mut ambiguous = Vec::new();
    let mut cand_ops = Vec::new();
    if !h.dup_writes.is_empty() || h.init_value.is_some() {
        for o in (0..h.num_ops()).filter(|&o| read_from[o] == FROM_AMBIGUOUS) {
            let (k, v) = (h.op_key[o], h.op_value[o]);
            let a = cand_ops.len() as u32;
            if h.init_value == Some(v) {
                cand_ops.push(FROM_INIT);
            }
            cand_ops.extend(h.writes_of(k, v));
            ambiguous.push((o as OpId, a, cand_ops.len() as u32));
        }
    }
    Resolution {
        read_from,
        op_txn,
        problems: Vec::new(),
        ambiguous,
        cand_ops,
        claims_checked: h.cobra.is_none(),
        writers: None,
    }
}

/// Where each read of `h` has one write it may have observed or none ([`Writers::apply_to`]):
/// no resolution yet, only the table of writes by (key, value) with their transactions and
/// value hashes, for a caller that looks every read up once anyway and checks its claims there
/// (the serializability check's per-transaction pass). Where it needs the arrays after all (a
/// certificate), [`Resolution::complete`] makes them. Otherwise [`resolve_unchecked`]. Where
/// this pays, [`Writers::worth_it`] says.
///
/// On a read-heavy history this spares an array of every op's writer and one of every op's
/// transaction, written once and read once (at 80k transactions of 160 reads, 100 MB of
/// first touches), and the two lookups a read made in them.
pub fn resolve_deferred(h: &History) -> Resolution {
    if !Writers::apply_to(h) {
        return resolve_unchecked(h);
    }
    Resolution {
        read_from: Vec::new(),
        op_txn: Vec::new(),
        problems: Vec::new(),
        ambiguous: Vec::new(),
        cand_ops: Vec::new(),
        claims_checked: h.cobra.is_none(),
        writers: Some(Writers::of(h)),
    }
}

/// What Cobra's logs claim about each read that contradicts what it resolved to (`read_from`),
/// in op order; empty for a history without claims.
pub fn claim_problems(
    h: &History,
    op_txn: &[TxnId],
    read_from: &[OpId],
) -> Vec<(OpId, ReadProblem)> {
    use rayon::prelude::*;
    let Some(c) = &h.cobra else {
        return Vec::new();
    };
    // With the write known, its lookups no longer wait on the hash lookup, and many are in
    // flight at once (one pass doing both was half as slow again).
    (0..h.num_ops())
        .into_par_iter()
        .with_min_len(CHUNK)
        .filter_map(|o| {
            let w = read_from[o];
            let p = claim_problem(h, c, o, w, || (op_txn[w as usize], c.get(h, w as usize).0))?;
            Some((o as OpId, p))
        })
        .collect()
}

/// What op `o` observed: itself for a write, else its write, the initial state, nobody, or
/// [`FROM_AMBIGUOUS`].
#[inline]
fn read_from_of(h: &History, o: usize, first_write: impl Fn(KeyId, u64) -> Option<OpId>) -> OpId {
    let (k, v) = (h.op_key[o], h.op_value[o]);
    match h.op_kind[o] {
        OpKind::Write => o as OpId,
        OpKind::ReadInit => FROM_INIT,
        OpKind::Read => match first_write(k, v) {
            // The common case, and the only one of a history with unique values.
            Some(w) if h.init_value != Some(v) && !h.dup_writes.contains_key(&(k, v)) => w,
            Some(_) => FROM_AMBIGUOUS,
            None if h.init_value == Some(v) => FROM_INIT,
            None => FROM_NOBODY,
        },
    }
}

/// What Cobra's logs (`c`, those of `h`) claim about op `o`, resolved to `w`, that the history
/// contradicts; `write_of` gives the transaction of `w` and its value hash where it is a write.
#[inline]
pub fn claim_problem(
    h: &History,
    c: &super::claims::CobraClaims,
    o: usize,
    w: OpId,
    write_of: impl FnOnce() -> (TxnId, u64),
) -> Option<ReadProblem> {
    if h.op_kind[o] != OpKind::Read {
        return None;
    }
    if w == FROM_NOBODY && h.op_value[o] == DELETE_WRITE_ID {
        return Some(ReadProblem::AmbiguousDelete);
    }
    if w >= FROM_AMBIGUOUS {
        return None;
    }
    // Claims left out of compacted ones are those of the write resolved to.
    let (hash, writer) = c.read_claims_kept(o)?;
    let (txn, written) = write_of();
    let actual = h.txn_ext[txn as usize];
    if writer != actual {
        return Some(ReadProblem::WrongWriter {
            claimed: writer,
            actual,
        });
    }
    (hash != written).then_some(ReadProblem::ValueMismatch {
        read: hash,
        written,
    })
}

/// Cobra: the first read of a key's initial version whose value hash differs from that of an
/// earlier read of it, among the reads of transactions that take part (`takes_part`, per
/// transaction). The initial version and the absent row are told apart by the write id each
/// read names (`0xbebeebee`, `0xdeadbeef`), so each is compared only with its own kind.
pub fn initial_claim_problem(h: &History, takes_part: &[bool]) -> Option<(OpId, ReadProblem)> {
    let c = h.cobra.as_ref()?;
    let mut first: crate::fxhash::FxHashMap<(KeyId, u64), (u64, OpId)> = Default::default();
    let ops = (0..h.num_txns() as TxnId)
        .filter(|&t| takes_part[t as usize])
        .flat_map(|t| h.ops(t));
    for o in ops.filter(|&o| h.op_kind[o] == OpKind::ReadInit) {
        let hash = c.get(h, o).0;
        let (earlier, earlier_op) = *first
            .entry((h.op_key[o], h.op_value[o]))
            .or_insert((hash, o as OpId));
        if earlier != hash {
            let p = ReadProblem::InitialMismatch {
                read: hash,
                earlier,
                earlier_op,
            };
            return Some((o as OpId, p));
        }
    }
    None
}

/// The writer transaction of each read (None for initial reads, reads of nobody and ambiguous
/// reads).
pub fn writer_txns(h: &History) -> Vec<Option<TxnId>> {
    let r = resolve(h);
    (0..h.num_ops())
        .map(|o| {
            if h.op_kind[o] == OpKind::Write {
                None
            } else {
                r.writer_txn(o as OpId)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{HistoryBuilder, TxnStatus};

    /// Chunk by chunk, as the plain per-transaction fill gives: transactions of every size
    /// (empty ones, ones spanning chunks), many chunks.
    #[test]
    fn op_txns_is_each_ops_transaction() {
        let mut b = HistoryBuilder::new();
        let k = b.key("x");
        b.begin_session("s");
        let mut rng = crate::test_rng::Rng(7);
        for t in 0..800u64 {
            let x = rng.next();
            let n = match x % 10 {
                0 => 0,
                1 => 2 * CHUNK as u64 + 5,
                _ => x % 50,
            };
            for _ in 0..n {
                b.op(OpKind::ReadInit, k, 0);
            }
            b.finish_txn(t, TxnStatus::Committed, 0, 0).unwrap();
        }
        let h = b.finish();
        assert!(h.num_ops() > 20 * CHUNK);
        let mut want = vec![0; h.num_ops()];
        for t in 0..h.num_txns() {
            for o in h.ops(t as TxnId) {
                want[o] = t as TxnId;
            }
        }
        assert_eq!(op_txns(&h), want);
    }

    /// Through the inline table, every op observes what the history's own index says: on
    /// reads of values written once, written again, never written, and of the initial value
    /// (also written by some writes), across many chunks.
    #[test]
    fn lookups_through_the_table_agree_with_the_index() {
        let mut b = HistoryBuilder::new();
        b.set_init_value(7);
        let keys: Vec<_> = (0..30).map(|i| b.key(&format!("k{i}"))).collect();
        b.begin_session("s");
        let mut rng = crate::test_rng::Rng(3);
        for t in 0..30_000u64 {
            for _ in 0..rng.below(8) {
                let k = keys[rng.below(30) as usize];
                let v = rng.below(5_000);
                let kind = match rng.below(10) {
                    0..=2 => OpKind::Write,
                    3 => OpKind::ReadInit,
                    _ => OpKind::Read,
                };
                b.op(kind, k, v);
            }
            b.finish_txn(t, TxnStatus::Committed, 0, 0).unwrap();
        }
        let h = b.finish();
        assert!(h.num_ops() > 4 * CHUNK && !h.dup_writes.is_empty());
        let plain = lookups(&h, None);
        for want in [FROM_INIT, FROM_NOBODY, FROM_AMBIGUOUS] {
            assert!(plain.contains(&want), "{want}");
        }
        assert_eq!(lookups(&h, Some(&FirstWrites::of(&h))), plain);
    }
}
