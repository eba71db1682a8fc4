//! Lost updates found by counting, for keys whose values repeat.
//!
//! Under serializability and snapshot isolation a version of a key is read and then overwritten
//! by at most one committed transaction: two that did would each have to follow the other's
//! write (serializability), or be concurrent writers of one key (snapshot isolation's first
//! committer wins). So on each key, the committed transactions whose first access reads value
//! `v` and that later write the key cannot outnumber the versions that hold `v`: the writes of
//! `v` by transactions that committed or may have (each transaction's last write of the key),
//! plus the initial version where it holds `v`. A read of an aborted or overwritten write of
//! `v` is no way out: that is an anomaly of its own at both levels.
//!
//! When values are unique this is the lost-update rule the read-modify-write chains already
//! apply, so it runs only where values repeat; there it rejects at once a history the solver
//! would otherwise have to refute choice by choice (a bank whose balances return to earlier
//! amounts is one). It never decides an ACCEPT. Switch: `Options::count_versions`.
//!
//! An online round holds only part of the history, and the count stays sound there: a read
//! the round checks has every write it may have read in the round (collection keeps them, or
//! leaves the read out of later rounds once its one possible writer is deleted), and a read
//! left out does not count, its transaction's first access of the key then being its write.

use crate::findings::Finding;
use krait_history::{History, OpKind, TxnId, TxnStatus};
use std::collections::HashMap;

/// A value of a key as versions hold it: `None` is the initial state when the history does not
/// say which value that is.
type Val = Option<u64>;

#[derive(Default)]
struct Tally {
    /// Committed transactions that read the value first and then wrote the key, with the read.
    readers: Vec<(TxnId, u32)>,
    /// Transactions (committed or of unknown outcome) whose last write of the key wrote it.
    writers: Vec<TxnId>,
}

/// The key and value with more readers-then-writers than versions, if any: the one with the
/// fewest such readers (the shortest to read), the fence key left out (its values are unique).
pub(crate) fn count_versions(h: &History) -> Result<(), Finding> {
    if h.has_lists() || (!h.has_duplicates() && h.init_value.is_none()) {
        return Ok(());
    }
    // Only keys some value of which two versions hold: on any other key every read names its
    // one writer, and two readers-then-writers of a version are the lost update the
    // read-modify-write chains find (`known::one_step_each`). A proxy's history has a key per
    // column of every row, millions, nearly all of them unique-valued.
    let mut repeats = vec![false; h.num_keys()];
    for &(k, _) in h.dup_writes.keys() {
        repeats[k as usize] = true;
    }
    if let Some(init) = h.init_value {
        for o in 0..h.num_ops() {
            if h.op_kind[o] == OpKind::Write && h.op_value[o] == init {
                repeats[h.op_key[o] as usize] = true;
            }
        }
    }
    if !repeats.contains(&true) {
        return Ok(());
    }
    let mut tally: HashMap<(u32, Val), Tally> = HashMap::new();
    // Per transaction, each key it touches: (first op, whether that was a read, last write).
    let mut seen: HashMap<u32, (u32, bool, Option<u64>)> = HashMap::new();
    for t in 0..h.num_txns() as TxnId {
        let status = h.txn_status[t as usize];
        if status == TxnStatus::Aborted {
            continue;
        }
        seen.clear();
        for o in h.ops(t) {
            let (k, kind, v) = (h.op_key[o], h.op_kind[o], h.op_value[o]);
            if Some(k) == h.fence_key || !repeats[k as usize] {
                continue;
            }
            let e = seen
                .entry(k)
                .or_insert((o as u32, kind != OpKind::Write, None));
            if kind == OpKind::Write {
                e.2 = Some(v);
            }
        }
        for (&k, &(first, read_first, last_write)) in &seen {
            let Some(w) = last_write else { continue };
            tally.entry((k, Some(w))).or_default().writers.push(t);
            if read_first && status == TxnStatus::Committed {
                let val = match h.op_kind[first as usize] {
                    OpKind::ReadInit => h.init_value,
                    _ => Some(h.op_value[first as usize]),
                };
                tally.entry((k, val)).or_default().readers.push((t, first));
            }
        }
    }
    let mut worst: Option<((u32, Val), &Tally, bool)> = None;
    for (&(k, v), t) in &tally {
        let init = v.is_none() || v == h.init_value;
        if t.readers.len() <= t.writers.len() + usize::from(init) {
            continue;
        }
        let better = worst
            .as_ref()
            .is_none_or(|(kv, w, _)| (t.readers.len(), (k, v)) < (w.readers.len(), *kv));
        if better {
            worst = Some(((k, v), t, init));
        }
    }
    match worst {
        None => Ok(()),
        Some(((key, _), t, init)) => {
            let mut readers: Vec<TxnId> = t.readers.iter().map(|r| r.0).collect();
            let mut writers = t.writers.clone();
            readers.sort_unstable();
            writers.sort_unstable();
            Err(Finding::LostUpdateByCount {
                key,
                op: t.readers.iter().map(|r| r.1).min().unwrap_or(0),
                readers,
                writers,
                init,
            })
        }
    }
}
