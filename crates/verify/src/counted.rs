//! A lost update found by counting, where values repeat: the certificate names transactions
//! that read one value of a key and then overwrote the key, more of them than there are
//! versions holding that value. Re-counted here from the history by the definition: under
//! serializability and snapshot isolation each version is read and then overwritten by at most
//! one committed transaction, and a version is the last write of the key by a transaction that
//! did not abort, or the initial state.

use super::{invalid, named_txns, Problem};
use krait_history::{History, OpKind, TxnId, TxnStatus};
use serde_json::Value;
use std::collections::HashMap;

/// Confirms the certificate: some (key, value) read-then-overwritten by more of the named
/// committed transactions than the history has versions of it.
pub(crate) fn lost_update(h: &History, report: &Value) -> Result<String, Problem> {
    // (key, value read; None: the initial state of a history that does not say its value).
    let mut readers: HashMap<(u32, Option<u64>), usize> = HashMap::new();
    for t in named_txns(h, report) {
        if h.txn_status[t as usize] != TxnStatus::Committed {
            continue;
        }
        // A first access that is a read, with a write of the key after it.
        for (k, first, last) in first_and_last(h, t) {
            let value = match h.op_kind[first] {
                OpKind::Write => continue,
                OpKind::ReadInit => h.init_value,
                _ => Some(h.op_value[first]),
            };
            if last.is_some() {
                *readers.entry((k, value)).or_default() += 1;
            }
        }
    }
    // The versions of each (key, value): one pass over the history.
    let mut versions: HashMap<(u32, Option<u64>), usize> = HashMap::new();
    for t in 0..h.num_txns() as TxnId {
        if h.txn_status[t as usize] == TxnStatus::Aborted {
            continue;
        }
        for (k, _, last) in first_and_last(h, t) {
            if last.is_some() {
                *versions.entry((k, last)).or_default() += 1;
            }
        }
    }
    for (&(k, v), &n) in &readers {
        let held = versions.get(&(k, v)).copied().unwrap_or(0)
            + usize::from(v.is_none() || v == h.init_value);
        if n > held {
            return Ok(format!(
                "REJECT: lost update, {n} named committed transactions read key {:?} at one value and then overwrote it, and {held} versions hold that value",
                h.keys[k as usize]
            ));
        }
    }
    invalid("no value of a key that the named transactions read and then overwrote more often than versions of it exist")
}
/// Per key a transaction touches: its first op on the key, and the value of its last write.
fn first_and_last(h: &History, t: TxnId) -> Vec<(u32, usize, Option<u64>)> {
    let mut v: Vec<(u32, usize, Option<u64>)> = Vec::new();
    for o in h.ops(t) {
        let k = h.op_key[o];
        let i = match v.iter().position(|x| x.0 == k) {
            Some(i) => i,
            None => {
                v.push((k, o, None));
                v.len() - 1
            }
        };
        if h.op_kind[o] == OpKind::Write {
            v[i].2 = Some(h.op_value[o]);
        }
    }
    v
}
