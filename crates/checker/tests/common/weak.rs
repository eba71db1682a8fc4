//! The weak levels from their axiomatic definitions (Biswas and Enea), by brute force: is there
//! a total commit order of the transactions that take part, extending session order and
//! write→read, such that for every read of x from t1 by t2, every other writer t3 of x that t2
//! sees by the level's rule comes before t1?
//!
//! - read committed: t2 read from t3 at an earlier read;
//! - read atomic: t2 read from t3 at all, or t3 committed before t2 in t2's session;
//! - causal: t3 reaches t2 by session order and write→read.

use krait_history::{History, OpKind, TxnId, TxnStatus};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Weak {
    ReadCommitted,
    ReadAtomic,
    Causal,
}

/// (reader, key, writer or None for the initial state, index of the read in the reader)
type Read = (usize, u32, Option<usize>, usize);

/// Whether some set of the unknown-outcome transactions taken as committed, and some choice of
/// writer for each read (where values repeat, any included transaction whose last write of
/// the key wrote the value read, or the initial state where it holds that value), satisfy the
/// level. `None`: more than `max_choices` choices for some set (the oracle gives up).
pub fn weak_ok_within(h: &History, level: Weak, max_choices: u64) -> Option<bool> {
    let n = h.num_txns();
    assert!(n <= 9);
    let unknown: Vec<usize> = (0..n)
        .filter(|&t| h.txn_status[t] == TxnStatus::Unknown)
        .collect();
    let mut gave_up = false;
    for mask in 0u32..1 << unknown.len() {
        let inc: Vec<bool> = (0..n)
            .map(|t| match h.txn_status[t] {
                TxnStatus::Committed => true,
                TxnStatus::Aborted => false,
                TxnStatus::Unknown => {
                    let i = unknown.iter().position(|&u| u == t).unwrap();
                    mask >> i & 1 == 1
                }
            })
            .collect();
        let Some(cands) = reads(h, &inc) else {
            continue;
        };
        let choices = cands
            .iter()
            .try_fold(1u64, |p, c| p.checked_mul(c.2.len() as u64))
            .filter(|&p| p <= max_choices);
        let Some(choices) = choices else {
            gave_up = true;
            continue;
        };
        for mut c in 0..choices {
            let rs: Vec<Read> = cands
                .iter()
                .map(|(t, k, ws, i)| {
                    let w = ws[(c % ws.len() as u64) as usize];
                    c /= ws.len() as u64;
                    (*t, *k, w, *i)
                })
                .collect();
            if consistent(h, &inc, level, &rs) {
                return Some(true);
            }
        }
    }
    (!gave_up).then_some(false)
}

/// [`weak_ok_within`] for histories whose values are unique (one choice).
pub fn weak_ok(h: &History, level: Weak) -> bool {
    weak_ok_within(h, level, 1).expect("values are unique")
}

/// The external reads of the included transactions with the writers each may have read, or
/// None when some read no commit order can explain (own write not seen, a value no included
/// transaction left as its last write of the key, nor the initial one).
fn reads(h: &History, inc: &[bool]) -> Option<Vec<(usize, u32, Vec<Option<usize>>, usize)>> {
    let mut out = Vec::new();
    let last_write = |u: usize, k: u32| {
        h.ops(u as TxnId)
            .rev()
            .find(|&x| h.op_kind[x] == OpKind::Write && h.op_key[x] == k)
            .map(|x| h.op_value[x])
    };
    for t in (0..h.num_txns()).filter(|&t| inc[t]) {
        let mut own: std::collections::HashMap<u32, u64> = Default::default();
        for (i, o) in h.ops(t as TxnId).enumerate() {
            let k = h.op_key[o];
            match h.op_kind[o] {
                OpKind::Write => {
                    own.insert(k, h.op_value[o]);
                }
                kind => {
                    if let Some(&v) = own.get(&k) {
                        if kind != OpKind::Read || h.op_value[o] != v {
                            return None;
                        }
                        continue;
                    }
                    if kind == OpKind::ReadInit {
                        out.push((t, k, vec![None], i));
                        continue;
                    }
                    let v = h.op_value[o];
                    let mut ws: Vec<Option<usize>> = Vec::new();
                    if h.init_value == Some(v) {
                        ws.push(None);
                    }
                    ws.extend(
                        (0..h.num_txns())
                            .filter(|&u| u != t && inc[u] && last_write(u, k) == Some(v))
                            .map(Some),
                    );
                    if ws.is_empty() {
                        return None;
                    }
                    out.push((t, k, ws, i));
                }
            }
        }
    }
    Some(out)
}

fn writes(h: &History, t: usize, k: u32) -> bool {
    h.ops(t as TxnId)
        .any(|o| h.op_kind[o] == OpKind::Write && h.op_key[o] == k)
}

fn consistent(h: &History, inc: &[bool], level: Weak, rs: &[Read]) -> bool {
    let n = h.num_txns();
    // Session order: a committed transaction precedes the included ones after it in its session.
    let sessions = h.txn_sessions();
    let so = |a: usize, b: usize| {
        a < b && sessions[a] == sessions[b] && h.txn_status[a] == TxnStatus::Committed
    };
    let wr = |a: usize, b: usize| rs.iter().any(|r| r.0 == b && r.2 == Some(a));
    // Causal past: the transitive closure of session order and write→read.
    let mut hb = vec![vec![false; n]; n];
    for a in 0..n {
        for b in 0..n {
            hb[a][b] = inc[a] && inc[b] && (so(a, b) || wr(a, b));
        }
    }
    for m in 0..n {
        for a in 0..n {
            for b in 0..n {
                if hb[a][m] && hb[m][b] {
                    hb[a][b] = true;
                }
            }
        }
    }
    // The premises, fixed by the history: (t3, t1) pairs t3 must precede t1 in (None: the
    // initial state, which precedes everything: then no order exists).
    let mut before: Vec<(usize, Option<usize>)> = Vec::new();
    for &(t2, x, t1, i) in rs {
        for t3 in (0..n).filter(|&t3| inc[t3] && t3 != t2 && Some(t3) != t1 && writes(h, t3, x)) {
            let sees = match level {
                Weak::ReadCommitted => rs.iter().any(|r| r.0 == t2 && r.2 == Some(t3) && r.3 < i),
                Weak::ReadAtomic => wr(t3, t2) || so(t3, t2),
                Weak::Causal => hb[t3][t2],
            };
            if sees {
                before.push((t3, t1));
            }
        }
    }
    if before.iter().any(|b| b.1.is_none()) {
        return false;
    }
    // Some total order of the included transactions with session order, write→read and
    // `before`: depth first, placing one whose required predecessors are all placed.
    let members: Vec<usize> = (0..n).filter(|&t| inc[t]).collect();
    let must_precede = |a: usize, b: usize| {
        so(a, b) || wr(a, b) || before.iter().any(|&(x, y)| x == a && y == Some(b))
    };
    let mut placed = vec![false; n];
    fn go(
        members: &[usize],
        placed: &mut Vec<bool>,
        left: usize,
        must: &dyn Fn(usize, usize) -> bool,
    ) -> bool {
        if left == 0 {
            return true;
        }
        for &t in members {
            if placed[t] || members.iter().any(|&u| !placed[u] && u != t && must(u, t)) {
                continue;
            }
            placed[t] = true;
            if go(members, placed, left - 1, must) {
                return true;
            }
            placed[t] = false;
        }
        false
    }
    go(&members, &mut placed, members.len(), &must_precede)
}
