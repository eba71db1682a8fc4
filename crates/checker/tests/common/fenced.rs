//! Histories with fences for online checking: random generators and the online option sets
//! the online tests run under.

use super::Rng;
use krait_checker::online::OnlineOptions;
use krait_history::{History, SimpleTxn, TxnStatus, NATIVE_FENCE_KEY};

/// A fence as the collector issues it: read the fence key, write the next value.
pub fn fence(session: usize, id: u64, read: Option<u64>, write: u64) -> SimpleTxn {
    let t = SimpleTxn::new(session, id);
    let t = match read {
        Some(v) => t.r(NATIVE_FENCE_KEY, v),
        None => t.r0(NATIVE_FENCE_KEY),
    };
    t.w(NATIVE_FENCE_KEY, write)
}

/// Random histories with fences: sessions run transactions on a serial store, some reads go
/// stale (so about half are not serializable), fences every few transactions per session.
pub fn random_fenced(r: &mut Rng) -> History {
    let nsessions = 2 + r.below(3) as usize;
    let keys = 2 + r.below(4);
    let n = 10 + r.below(50);
    let fence_every = 2 + r.below(3);
    let stale = r.below(40);
    // Some histories read any version at all: cycles through old transactions get common.
    let chaos = r.chance(30);
    let mut versions: Vec<Vec<u64>> = vec![Vec::new(); keys as usize];
    let mut fence_val: Option<u64> = None;
    let mut next = 1u64;
    let mut per_session = vec![0u64; nsessions];
    let mut txns = Vec::new();
    for i in 0..n {
        let s = r.below(nsessions as u64) as usize;
        per_session[s] += 1;
        if per_session[s].is_multiple_of(fence_every) {
            let v = next;
            next += 1;
            txns.push(fence(s, 10_000 + i, fence_val, v).times(i * 10, i * 10 + 5));
            fence_val = Some(v);
            continue;
        }
        let mut t = SimpleTxn::new(s, 1 + i);
        let mut own: Vec<Option<u64>> = vec![None; keys as usize];
        for _ in 0..1 + r.below(3) {
            let k = r.below(keys);
            let key = format!("k{k}");
            if r.chance(55) {
                if own[k as usize].is_some() {
                    continue;
                }
                let vs = &versions[k as usize];
                let v = if chaos {
                    let j = r.below(vs.len() as u64 + 1) as usize;
                    vs.get(j).copied()
                } else if r.chance(stale) && !vs.is_empty() {
                    // Mostly a recent version: old ones are what garbage collection drops.
                    let back = 1 + r.below(3.min(vs.len() as u64 + 1)) as usize;
                    let j = vs.len() + 1 - back.min(vs.len() + 1);
                    if j == 0 && r.chance(50) {
                        None
                    } else {
                        vs.get(j.saturating_sub(1)).copied()
                    }
                } else {
                    vs.last().copied()
                };
                t = match v {
                    Some(v) => t.r(&key, v),
                    None => t.r0(&key),
                };
            } else {
                own[k as usize] = Some(next);
                t = t.w(&key, next);
                next += 1;
            }
        }
        let status = if r.chance(4) {
            TxnStatus::Aborted
        } else {
            TxnStatus::Committed
        };
        if status == TxnStatus::Committed {
            for (k, v) in own.iter().enumerate() {
                if let Some(v) = v {
                    versions[k].push(*v);
                }
            }
        }
        let start = (i * 10).saturating_sub(r.below(40));
        txns.push(t.status(status).times(start, i * 10 + 5));
    }
    krait_history::build_history(&txns).unwrap()
}

/// Old transactions on a serial store, then two fences per session, then late read-only
/// transactions that read any version at all: they decide constraints among old transactions,
/// which is exactly what deleting the wrong superseded transaction would hide.
pub fn random_late_reads(r: &mut Rng) -> History {
    let nsessions = 2 + r.below(3) as usize;
    let keys = 2 + r.below(3);
    let mut versions: Vec<Vec<u64>> = vec![Vec::new(); keys as usize];
    let mut next = 1u64;
    let mut txns = Vec::new();
    let mut id = 0;
    for _ in 0..4 + r.below(10) {
        id += 1;
        let s = r.below(nsessions as u64) as usize;
        let mut t = SimpleTxn::new(s, id);
        let mut own = vec![false; keys as usize];
        for _ in 0..1 + r.below(3) {
            let k = r.below(keys);
            let key = format!("k{k}");
            if r.chance(40) && !own[k as usize] {
                let vs = &versions[k as usize];
                let v = if r.chance(10) {
                    vs.get(r.below(vs.len() as u64 + 1) as usize).copied()
                } else {
                    vs.last().copied()
                };
                t = match v {
                    Some(v) => t.r(&key, v),
                    None => t.r0(&key),
                };
            } else if !own[k as usize] {
                own[k as usize] = true;
                versions[k as usize].push(next);
                t = t.w(&key, next);
                next += 1;
            }
        }
        txns.push(t);
    }
    let mut fv = None;
    for _ in 0..2 {
        for s in 0..nsessions {
            id += 1;
            txns.push(fence(s, id, fv, 100_000 + id));
            fv = Some(100_000 + id);
        }
    }
    for _ in 0..1 + r.below(4) {
        id += 1;
        let s = r.below(nsessions as u64) as usize;
        let mut t = SimpleTxn::new(s, id);
        for k in 0..keys {
            if r.chance(60) {
                let vs = &versions[k as usize];
                let key = format!("k{k}");
                // One of the last two versions: both may still be in the frontier.
                let back = r.below(2) as usize;
                t = match vs.len().checked_sub(1 + back).map(|j| vs[j]) {
                    Some(v) => t.r(&key, v),
                    None => t.r0(&key),
                };
            }
        }
        txns.push(t);
    }
    krait_history::build_history(&txns).unwrap()
}

pub fn option_sets() -> Vec<(&'static str, OnlineOptions)> {
    let base = OnlineOptions::default();
    let mut no_prune = base.clone();
    no_prune.check.prune = false;
    let mut polygraph = base.clone();
    polygraph.check.combine = false;
    polygraph.check.coalesce = false;
    polygraph.check.prune = false;
    let mut no_gc = base.clone();
    no_gc.gc = false;
    let mut strict = base.clone();
    strict.check.strict = Some(0);
    let mut no_reduce = base.clone();
    no_reduce.reduce = false;
    let mut no_fold = base.clone();
    no_fold.fold = false;
    let mut tiny = base.clone();
    tiny.hub_cap = 1;
    tiny.frontier_limit = 2;
    tiny.max_admit = 2;
    vec![
        ("default", base),
        ("no-prune", no_prune),
        ("polygraph", polygraph),
        ("no-gc", no_gc),
        ("hub-cap-1 admit-2", tiny),
        ("strict", strict),
        ("no-carry-reduction", no_reduce),
        ("no-fold", no_fold),
    ]
}

/// Random fenced histories whose written values repeat: each write draws its value from a
/// small range (with `init_zero`, from 0 up, and every key starts at 0, dbcop's convention),
/// so most reads have several possible writers, some of them deleted by the time they are
/// checked online. Fences keep unique values, as the collector issues them.
///
/// Some transactions end with an unknown outcome: half of those took effect, some of these
/// only after a few later transactions began (a commit whose acknowledgement was lost while
/// the write landed late), and the others never did; stale reads may miss the reader's own
/// session's earlier writes.
pub fn random_fenced_repeated(r: &mut Rng) -> History {
    let nsessions = 2 + r.below(3) as usize;
    let keys = 1 + r.below(3);
    let n = 10 + r.below(50);
    let fence_every = 2 + r.below(3);
    let stale = r.below(30);
    let range = 2 + r.below(3);
    let init_zero = r.chance(30);
    let unknown = if r.chance(50) { 0 } else { 2 + r.below(7) };
    let mut versions: Vec<Vec<u64>> = vec![Vec::new(); keys as usize];
    // Writes of unknown outcomes that land later: (transactions still to begin first, writes).
    let mut landing: Vec<(u64, Vec<(usize, u64)>)> = Vec::new();
    let mut fence_val: Option<u64> = None;
    let mut next_fence = 1u64;
    let mut per_session = vec![0u64; nsessions];
    let mut txns = Vec::new();
    for i in 0..n {
        for (wait, writes) in &mut landing {
            if *wait == 0 {
                for (k, v) in writes.drain(..) {
                    versions[k].push(v);
                }
            } else {
                *wait -= 1;
            }
        }
        landing.retain(|(_, w)| !w.is_empty());
        let s = r.below(nsessions as u64) as usize;
        per_session[s] += 1;
        if per_session[s].is_multiple_of(fence_every) {
            let v = next_fence;
            next_fence += 1;
            txns.push(fence(s, 10_000 + i, fence_val, v).times(i * 10, i * 10 + 5));
            fence_val = Some(v);
            continue;
        }
        let mut t = SimpleTxn::new(s, 1 + i);
        let mut own: Vec<Option<u64>> = vec![None; keys as usize];
        for _ in 0..1 + r.below(3) {
            let k = r.below(keys);
            let key = format!("k{k}");
            if r.chance(55) {
                if own[k as usize].is_some() {
                    continue;
                }
                let vs = &versions[k as usize];
                let v = if r.chance(stale) && !vs.is_empty() {
                    let j = r.below(vs.len() as u64 + 1) as usize;
                    vs.get(j).copied()
                } else {
                    vs.last().copied()
                };
                t = match (v, init_zero) {
                    (Some(v), _) => t.r(&key, v),
                    (None, true) => t.r(&key, 0),
                    (None, false) => t.r0(&key),
                };
            } else {
                let v = if init_zero {
                    r.below(range)
                } else {
                    1 + r.below(range)
                };
                own[k as usize] = Some(v);
                t = t.w(&key, v);
            }
        }
        let status = if r.chance(4) {
            TxnStatus::Aborted
        } else if r.chance(unknown) {
            TxnStatus::Unknown
        } else {
            TxnStatus::Committed
        };
        let writes: Vec<(usize, u64)> = own
            .iter()
            .enumerate()
            .filter_map(|(k, v)| v.map(|v| (k, v)))
            .collect();
        match status {
            TxnStatus::Committed => landing.push((0, writes)),
            TxnStatus::Unknown if r.chance(50) => landing.push((r.below(4), writes)),
            _ => {}
        }
        let start = (i * 10).saturating_sub(r.below(40));
        txns.push(t.status(status).times(start, i * 10 + 5));
    }
    let mut h = krait_history::build_history(&txns).unwrap();
    if init_zero {
        h.init_value = Some(0);
    }
    h
}
