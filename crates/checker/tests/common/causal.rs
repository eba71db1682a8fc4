//! Random fenced histories from a causally consistent store: each session sees a causally
//! closed set of transactions (its own, what it read, and the causal past of transactions
//! propagated to it now and then) and reads the latest version it sees of a key, so causal
//! consistency holds while serializability and snapshot isolation often do not. Fences are
//! atomic read-modify-writes of the fence key, as the collector issues them, and bring the
//! causal past of the fence they read. With `bad`, some reads return an older version the
//! session sees: causality violations. Some transactions end with an unknown outcome, half of
//! which took effect.

use super::fenced::fence;
use super::Rng;
use krait_history::{History, SimpleTxn, TxnStatus};

fn merge(into: &mut Vec<bool>, from: &[bool]) {
    if into.len() < from.len() {
        into.resize(from.len(), false);
    }
    for (a, &b) in into.iter_mut().zip(from) {
        *a |= b;
    }
}

pub fn random_causal_fenced(r: &mut Rng, bad: bool) -> History {
    let nsessions = 2 + r.below(3) as usize;
    let keys = 2 + r.below(3) as usize;
    let n = 10 + r.below(50);
    let fence_every = 2 + r.below(3);
    let propagate = 10 + r.below(60);
    // Per committed transaction (in commit order): its causal past, itself included.
    let mut past: Vec<Vec<bool>> = Vec::new();
    // Per key: (committed transaction, value), in commit order.
    let mut writes: Vec<Vec<(usize, u64)>> = vec![Vec::new(); keys];
    let mut seen: Vec<Vec<bool>> = vec![Vec::new(); nsessions];
    let mut last_fence: Option<(usize, u64)> = None;
    let mut per_session = vec![0u64; nsessions];
    let mut next = 1u64;
    let mut txns = Vec::new();
    let commit = |past: &mut Vec<Vec<bool>>, seen: &mut Vec<bool>| {
        let idx = past.len();
        seen.resize(idx + 1, false);
        seen[idx] = true;
        past.push(seen.clone());
        idx
    };
    for i in 0..n {
        let s = r.below(nsessions as u64) as usize;
        if r.chance(propagate) && !past.is_empty() {
            let j = r.below(past.len() as u64) as usize;
            let from = past[j].clone();
            merge(&mut seen[s], &from);
        }
        per_session[s] += 1;
        if per_session[s].is_multiple_of(fence_every) {
            if let Some((j, _)) = last_fence {
                let from = past[j].clone();
                merge(&mut seen[s], &from);
            }
            txns.push(
                fence(s, 10_000 + i, last_fence.map(|f| f.1), next).times(i * 10, i * 10 + 5),
            );
            let idx = commit(&mut past, &mut seen[s]);
            last_fence = Some((idx, next));
            next += 1;
            continue;
        }
        let mut t = SimpleTxn::new(s, 1 + i);
        let mut own: Vec<Option<u64>> = vec![None; keys];
        let mut read_from: Vec<usize> = Vec::new();
        for _ in 0..1 + r.below(3) {
            let k = r.below(keys as u64) as usize;
            let key = format!("k{k}");
            if r.chance(55) {
                if own[k].is_some() {
                    continue;
                }
                let visible: Vec<(usize, u64)> = writes[k]
                    .iter()
                    .copied()
                    .filter(|&(j, _)| seen[s].get(j) == Some(&true))
                    .collect();
                let pick = if bad && r.chance(15) && !visible.is_empty() {
                    let j = r.below(visible.len() as u64 + 1) as usize;
                    visible.get(j).copied()
                } else {
                    visible.last().copied()
                };
                t = match pick {
                    Some((j, v)) => {
                        read_from.push(j);
                        t.r(&key, v)
                    }
                    None => t.r0(&key),
                };
            } else {
                own[k] = Some(next);
                t = t.w(&key, next);
                next += 1;
            }
        }
        // Unknown outcomes: the client lost the connection; the store committed some of them.
        let (status, took_effect) = match r.below(100) {
            0..=3 => (TxnStatus::Aborted, false),
            4..=6 => (TxnStatus::Unknown, r.chance(50)),
            _ => (TxnStatus::Committed, true),
        };
        if took_effect {
            for j in read_from {
                let from = past[j].clone();
                merge(&mut seen[s], &from);
            }
            let idx = commit(&mut past, &mut seen[s]);
            for (k, v) in own.iter().enumerate() {
                if let Some(v) = v {
                    writes[k].push((idx, *v));
                }
            }
        }
        txns.push(t.status(status).times(i * 10, i * 10 + 5));
    }
    krait_history::build_history(&txns).unwrap()
}
