//! An ACCEPT's serial order, replayed read by read: every committed transaction once, nothing
//! aborted, each transaction after the commits logged before it in its session, and every read
//! returning the key's latest version (a list read: every version so far, in order). Under
//! snapshot isolation the order is the commit order and each transaction's snapshot is a prefix
//! of it: its reads return the latest version in that prefix (or its own write), and no
//! transaction outside its snapshot and before it wrote a key it writes.

use crate::facts::Facts;
use crate::{invalid, txn_of, Problem};
use krait_history::{OpKind, TxnId, TxnStatus};
use serde_json::Value;
use std::collections::HashMap;

/// The order's transactions, each placed once, none aborted, every committed one placed, and
/// each after the commits logged before it in its session (under snapshot isolation, inside
/// the snapshot: `snaps[i]` transactions before position i are in its snapshot).
pub(crate) fn placements(
    f: &Facts,
    order: &[Value],
    snaps: Option<&[usize]>,
) -> Result<HashMap<TxnId, usize>, Problem> {
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
                    let seen = snaps.map_or(p, |s| s[p]);
                    if lp >= seen {
                        return invalid(format!(
                            "{} is placed (or takes its snapshot) before {}, which committed before it in its session",
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
    Ok(placed)
}

pub fn replay(f: &Facts, order: &[Value]) -> Result<String, Problem> {
    let h = f.h;
    let placed = placements(f, order, None)?;
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

/// Snapshot isolation: `order` is the commit order and `snaps[i]` how many transactions before
/// position i its snapshot holds.
pub fn replay_si(f: &Facts, order: &[Value], snaps: &[Value]) -> Result<String, Problem> {
    let h = f.h;
    if snaps.len() != order.len() {
        return invalid(format!(
            "{} snapshots for {} transactions",
            snaps.len(),
            order.len()
        ));
    }
    let snaps: Vec<usize> = snaps
        .iter()
        .enumerate()
        .map(|(i, v)| match v.as_u64() {
            Some(s) if s as usize <= i => Ok(s as usize),
            _ => invalid(format!("snapshot {v} of position {i} is not before it")),
        })
        .collect::<Result<_, _>>()?;
    let placed = placements(f, order, Some(&snaps))?;
    let mut txns: Vec<(usize, TxnId)> = placed.iter().map(|(&t, &p)| (p, t)).collect();
    txns.sort_unstable();
    // Per key, its versions so far: (position of the writer, value).
    let mut versions: Vec<Vec<(usize, u64)>> = vec![Vec::new(); h.num_keys()];
    let mut reads = 0usize;
    for (i, t) in txns {
        let snap = snaps[i];
        let name = h.display_txn(t);
        let mut own: HashMap<usize, Vec<u64>> = HashMap::new();
        for o in h.ops(t) {
            let k = h.op_key[o] as usize;
            if h.op_kind[o] == OpKind::Write {
                own.entry(k).or_default().push(h.op_value[o]);
                continue;
            }
            // The snapshot's versions (those committed before position `snap`), then its own.
            let snapshot = &versions[k][..versions[k].partition_point(|v| v.0 < snap)];
            let mine: &[u64] = own.get(&k).map_or(&[], Vec::as_slice);
            let latest = mine.last().or(snapshot.last().map(|v| &v.1));
            let ok = match (h.op_kind[o], h.list_of(o as u32)) {
                (_, Some(list)) => {
                    list.len() == snapshot.len() + mine.len()
                        && snapshot
                            .iter()
                            .map(|v| v.1)
                            .chain(mine.iter().copied())
                            .eq(list.iter().copied())
                }
                (OpKind::Read, None) => match latest {
                    Some(&v) => v == h.op_value[o],
                    None => h.init_value == Some(h.op_value[o]),
                },
                _ => latest.is_none(),
            };
            reads += 1;
            if !ok {
                return invalid(format!(
                    "{name}'s snapshot (the first {snap} in the commit order) does not hold the value it read of {}",
                    h.keys[k]
                ));
            }
        }
        for (k, vs) in own {
            if let Some(&(p, _)) = versions[k].last() {
                if p >= snap {
                    return invalid(format!(
                        "{name} and {} both write {} and neither's snapshot holds the other",
                        h.display_txn(txn_at(&placed, p)),
                        h.keys[k]
                    ));
                }
            }
            versions[k].extend(vs.into_iter().map(|v| (i, v)));
        }
    }
    Ok(format!(
        "ACCEPT: the commit order of {} transactions with their snapshots replays all {reads} reads",
        placed.len()
    ))
}

fn txn_at(placed: &HashMap<TxnId, usize>, p: usize) -> TxnId {
    placed
        .iter()
        .find(|&(_, &q)| q == p)
        .map(|(&t, _)| t)
        .expect("a placed position")
}
