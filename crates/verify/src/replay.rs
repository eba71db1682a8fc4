//! An ACCEPT's serial order, replayed read by read: every committed transaction once, nothing
//! aborted, each transaction after the commits logged before it in its session, and every read
//! returning the key's latest version (a list read: every version so far, in order).

use crate::facts::Facts;
use crate::{invalid, txn_of, Problem};
use krait_history::{OpKind, TxnId, TxnStatus};
use serde_json::Value;
use std::collections::HashMap;

pub fn replay(f: &Facts, order: &[Value]) -> Result<String, Problem> {
    let h = f.h;
    let mut placed: HashMap<TxnId, usize> = HashMap::new();
    for (i, v) in order.iter().enumerate() {
        let name = match v {
            Value::Number(n) => format!("T{n}"),
            Value::String(s) => s.clone(),
            _ => return invalid(format!("order entry {v} is no transaction")),
        };
        let t = txn_of(h, &name).ok_or(Problem::Invalid(format!("no transaction {name}")))?;
        if h.txn_status[t as usize] == TxnStatus::Aborted {
            return invalid(format!("{name} aborted, yet the order places it"));
        }
        if placed.insert(t, i).is_some() {
            return invalid(format!("{name} is placed twice"));
        }
    }
    for t in 0..h.num_txns() as TxnId {
        if h.txn_status[t as usize] == TxnStatus::Committed && !placed.contains_key(&t) {
            return invalid(format!(
                "{} committed but is not in the order",
                h.display_txn(t)
            ));
        }
    }
    for s in 0..h.num_sessions() {
        let mut last_commit: Option<(usize, TxnId)> = None;
        for t in h.session_range(s) {
            if let Some(&p) = placed.get(&t) {
                if let Some((lp, lt)) = last_commit {
                    if lp > p {
                        return invalid(format!(
                            "{} is placed before {}, which committed before it in its session",
                            h.display_txn(t),
                            h.display_txn(lt)
                        ));
                    }
                }
                if h.txn_status[t as usize] == TxnStatus::Committed {
                    last_commit = Some((p, t));
                }
            }
        }
    }
    let mut txns: Vec<(usize, TxnId)> = placed.iter().map(|(&t, &p)| (p, t)).collect();
    txns.sort_unstable();
    let mut state: Vec<Vec<u64>> = vec![Vec::new(); h.num_keys()];
    let mut reads = 0usize;
    for (_, t) in txns {
        for o in h.ops(t) {
            let k = h.op_key[o] as usize;
            let ok = match (h.op_kind[o], h.list_of(o as u32)) {
                (OpKind::Write, _) => {
                    state[k].push(h.op_value[o]);
                    continue;
                }
                (_, Some(list)) => state[k] == list,
                // By value: with values written more than once, any write of it will do, and
                // so will the initial state where it holds that value.
                (OpKind::Read, None) => match state[k].last() {
                    Some(&v) => v == h.op_value[o],
                    None => h.init_value == Some(h.op_value[o]),
                },
                (OpKind::ReadInit, None) => state[k].is_empty(),
            };
            reads += 1;
            if !ok {
                return invalid(format!(
                    "in the order given, {} reads {} = {}, but the latest version then is {}",
                    h.display_txn(t),
                    h.keys[k],
                    match h.op_kind[o] {
                        OpKind::ReadInit => "the initial one".to_string(),
                        _ => h.op_value[o].to_string(),
                    },
                    match state[k].last() {
                        None => "the initial one".to_string(),
                        Some(v) => v.to_string(),
                    }
                ));
            }
        }
    }
    Ok(format!(
        "ACCEPT: the serial order of {} transactions replays all {reads} reads",
        placed.len()
    ))
}
