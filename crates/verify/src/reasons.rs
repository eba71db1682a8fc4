//! REJECTs for one reason rather than a cycle: a witness is looked for among the transactions
//! the certificate names, from the definitions alone.

use crate::facts::{Facts, Seen, Ver};
use crate::{invalid, named_txns, Problem};
use krait_history::{OpKind, TxnId, TxnStatus};
use serde_json::Value;
use std::collections::HashMap;

pub fn reason(f: &Facts, report: &Value) -> Result<String, Problem> {
    let h = f.h;
    let anomaly = report["anomaly"].as_str().unwrap_or("");
    let named = named_txns(h, report);
    if named.is_empty() {
        return invalid(format!("a {anomaly} certificate that names no transaction"));
    }
    let readers: Vec<TxnId> = named
        .iter()
        .copied()
        .filter(|&t| f.took_part[t as usize])
        .collect();
    let reads = |t: TxnId| h.ops(t).filter(move |&o| h.op_kind[o] != OpKind::Write);
    let found = match anomaly {
        "G1a" => readers.iter().any(|&t| {
            reads(t).any(|o| {
                let k = h.op_key[o];
                let mut vals: Vec<u64> =
                    h.list_of(o as u32).map(<[u64]>::to_vec).unwrap_or_default();
                if h.op_kind[o] == OpKind::Read {
                    vals.push(h.op_value[o]);
                }
                vals.iter().any(|&v| {
                    f.write_of(k, v)
                        .is_some_and(|w| h.txn_status[f.op_txn[w] as usize] == TxnStatus::Aborted)
                })
            })
        }),
        "G1b" => readers.iter().any(|&t| {
            reads(t).any(|o| {
                let k = h.op_key[o];
                let mut vals: Vec<u64> = Vec::new();
                if let Some(l) = h.list_of(o as u32) {
                    // Inside a list only a value followed by another transaction's counts.
                    for w in l.windows(2) {
                        let (a, b) = (f.write_of(k, w[0]), f.write_of(k, w[1]));
                        if let (Some(a), Some(b)) = (a, b) {
                            if f.op_txn[a] != f.op_txn[b] {
                                vals.push(w[0]);
                            }
                        }
                    }
                }
                // Inside a list, even one's own append followed by another's is intermediate;
                // a plain read of one's own earlier write is another anomaly.
                let in_list = vals.iter().any(|&v| {
                    f.write_of(k, v)
                        .is_some_and(|w| f.last_write(f.op_txn[w], k) != Some(w))
                });
                in_list
                    || (h.op_kind[o] == OpKind::Read
                        && f.write_of(k, h.op_value[o]).is_some_and(|w| {
                            let wt = f.op_txn[w];
                            wt != t && f.last_write(wt, k) != Some(w)
                        }))
            })
        }),
        "read-of-unwritten" => readers.iter().any(|&t| {
            reads(t).any(|o| {
                let k = h.op_key[o];
                let list_foreign = h
                    .list_of(o as u32)
                    .is_some_and(|l| l.iter().any(|&v| f.write_of(k, v).is_none()));
                // A read of nobody, or of its own write made later in the transaction.
                list_foreign
                    || match f.seen(o) {
                        Seen::Nobody => true,
                        Seen::Write(w) => f.op_txn[w] == t && w > o,
                        Seen::Init => false,
                    }
            })
        }),
        "own-write-not-seen" => readers.iter().any(|&t| {
            let mut own: HashMap<u32, usize> = HashMap::new();
            h.ops(t).any(|o| {
                let k = h.op_key[o];
                match h.op_kind[o] {
                    OpKind::Write => {
                        own.insert(k, o);
                        false
                    }
                    _ => own.get(&k).is_some_and(|&w| f.seen(o) != Seen::Write(w)),
                }
            })
        }),
        "non-repeatable-read" => readers.iter().any(|&t| {
            let mut keys: Vec<u32> = h.ops(t).map(|o| h.op_key[o]).collect();
            keys.sort_unstable();
            keys.dedup();
            keys.iter().any(|&k| {
                let rs = f.external_reads(t, k);
                rs.iter()
                    .any(|&a| rs.iter().any(|&b| f.seen(a) != f.seen(b)))
            })
        }),
        "duplicate-elements" => readers.iter().any(|&t| {
            h.ops(t).any(|o| {
                h.list_of(o as u32).is_some_and(|l| {
                    let mut s = l.to_vec();
                    s.sort_unstable();
                    s.windows(2).any(|w| w[0] == w[1])
                })
            })
        }),
        "incompatible-order" => incompatible(f, &readers),
        // Two transactions read one version of a key and both overwrote it: no version order
        // puts either write after the other's without the later one missing the earlier.
        "lost-update" => readers.iter().any(|&a| {
            readers.iter().any(|&b| {
                a < b
                    && h.ops(a).any(|o| {
                        let k = h.op_key[o];
                        f.writes(a, k)
                            && f.writes(b, k)
                            && f.version_read(a, k)
                                .is_some_and(|v| f.version_read(b, k) == Some(v))
                    })
            })
        }),
        "garbage-read" if h.cobra.is_some() => garbage_read(f, &readers),
        other => {
            return Err(Problem::Unsupported(format!(
                "a {other} certificate (not derivable from the history by definition alone)"
            )))
        }
    };
    if found {
        Ok(format!(
            "REJECT: {anomaly}, witnessed among the named transactions"
        ))
    } else {
        invalid(format!(
            "no {anomaly} among the transactions the certificate names"
        ))
    }
}

/// A list read no version order gives: own appends skipped or reordered, a transaction's appends
/// entered after their start, or two facts giving one version two direct neighbours.
fn incompatible(f: &Facts, named: &[TxnId]) -> bool {
    let h = f.h;
    let list_breaks = named.iter().any(|&t| {
        h.ops(t).any(|o| {
            let Some(l) = h.list_of(o as u32) else {
                return false;
            };
            let k = h.op_key[o];
            let ws: Vec<Option<usize>> = l.iter().map(|&v| f.write_of(k, v)).collect();
            ws.iter().enumerate().any(|(i, w)| {
                let Some(w) = *w else { return false };
                let wt = f.op_txn[w];
                let own_writes: Vec<usize> = h
                    .ops(wt)
                    .filter(|&x| h.op_kind[x] == OpKind::Write && h.op_key[x] == k)
                    .collect();
                let at = own_writes.iter().position(|&x| x == w).unwrap();
                match i.checked_sub(1).and_then(|p| ws[p]) {
                    Some(p) if f.op_txn[p] == wt => {
                        own_writes.iter().position(|&x| x == p) != Some(at.wrapping_sub(1))
                    }
                    _ => at != 0,
                }
            })
        })
    });
    if list_breaks {
        return true;
    }
    // Two versions each said to come directly after (or before) the same one.
    let mut succ: HashMap<(u32, Ver), Ver> = HashMap::new();
    let mut pred: HashMap<(u32, Ver), Ver> = HashMap::new();
    for t in 0..h.num_txns() as TxnId {
        if !f.took_part[t as usize] {
            continue;
        }
        let mut steps: Vec<(u32, Ver, Ver)> = Vec::new();
        let mut keys: Vec<u32> = h.ops(t).map(|o| h.op_key[o]).collect();
        keys.sort_unstable();
        keys.dedup();
        for &k in &keys {
            if let (true, Some(v)) = (f.writes(t, k), f.version_read(t, k)) {
                steps.push((k, v, Ver::Of(t)));
            }
        }
        for o in h.ops(t) {
            if let Some(l) = h.list_of(o as u32) {
                let k = h.op_key[o];
                let mut prev = Ver::Init;
                for &v in l {
                    let Some(w) = f.write_of(k, v) else { break };
                    let wt = Ver::Of(f.op_txn[w]);
                    if wt != prev {
                        steps.push((k, prev, wt));
                    }
                    prev = wt;
                }
            }
        }
        for (k, a, b) in steps {
            if succ.insert((k, a), b).is_some_and(|x| x != b)
                || pred.insert((k, b), a).is_some_and(|x| x != a)
            {
                return true;
            }
        }
    }
    false
}

/// Cobra's claims contradict the history among `readers`: a read whose value hash differs from
/// the hash its write recorded or that names another writer, or two reads of one key's
/// initial version (by the same write id) with different hashes, since that version holds one
/// value.
fn garbage_read(f: &Facts, readers: &[TxnId]) -> bool {
    let h = f.h;
    let Some(c) = &h.cobra else { return false };
    let mut initial: HashMap<(u32, u64), u64> = HashMap::new();
    readers.iter().any(|&t| {
        h.ops(t).any(|o| match h.op_kind[o] {
            OpKind::ReadInit => {
                let hash = c.get(h, o).0;
                *initial.entry((h.op_key[o], h.op_value[o])).or_insert(hash) != hash
            }
            OpKind::Read => match f.seen(o) {
                Seen::Write(w) => {
                    let (hash, writer) = c.get(h, o);
                    hash != c.get(h, w).0 || writer != h.txn_ext[f.op_txn[w] as usize]
                }
                _ => false,
            },
            OpKind::Write => false,
        })
    })
}
