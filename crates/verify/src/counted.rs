//! A lost update found by counting, where values repeat: the certificate names transactions
//! that read one value of a key and then overwrote the key, more of them than there are
//! versions holding that value. Re-counted here from the history by the definition: under
//! serializability and snapshot isolation each version is read and then overwritten by at most
//! one committed transaction, and a version is the last write of the key by a transaction that
//! did not abort, or the initial state.

use super::{invalid, txn_of, Problem};
use krait_history::{History, OpKind, TxnId, TxnStatus};
use serde_json::Value;
use std::collections::HashMap;

/// Confirms the certificate: some (key, value) read-then-overwritten by more of the named
/// committed transactions than the history has versions of it.
pub(crate) fn lost_update(h: &History, report: &Value) -> Result<String, Problem> {
    let named: Vec<TxnId> = report["txns"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| txn_of(h, t["name"].as_str().unwrap_or("")))
        .collect();
    // (key, value read; None: the initial state of a history that does not say its value).
    let mut readers: HashMap<(u32, Option<u64>), usize> = HashMap::new();
    for &t in &named {
        if h.txn_status[t as usize] != TxnStatus::Committed {
            continue;
        }
        for (k, first, _) in first_and_last(h, t) {
            let o = first;
            let wrote = h
                .ops(t)
                .any(|w| w > o && h.op_key[w] == k && h.op_kind[w] == OpKind::Write);
            let value = match h.op_kind[o] {
                OpKind::Write => continue,
                OpKind::ReadInit => h.init_value,
                _ => Some(h.op_value[o]),
            };
            if wrote {
                *readers.entry((k, value)).or_default() += 1;
            }
        }
    }
    for (&(k, v), &n) in &readers {
        let mut versions = usize::from(v.is_none() || v == h.init_value);
        for t in 0..h.num_txns() as TxnId {
            if h.txn_status[t as usize] == TxnStatus::Aborted {
                continue;
            }
            let last = first_and_last(h, t)
                .into_iter()
                .find(|x| x.0 == k)
                .and_then(|x| x.2);
            if last.is_some() && last == v {
                versions += 1;
            }
        }
        if n > versions {
            return Ok(format!(
                "REJECT: lost update, {n} named committed transactions read key {:?} at one value and then overwrote it, and {versions} versions hold that value",
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
