//! The weak levels (read committed, read atomic, causal), from their axioms alone: an ACCEPT's
//! commit order extends session order and write→read, and puts every writer t3 of x that a
//! reader t2 sees by the level's rule before the writer t2 read x from; a REJECT's cycle holds
//! edge by edge, each version-order edge t3 → t1 justified by some such reader.

use crate::facts::{Facts, Seen};
use crate::{invalid, txn_of, Problem};
use krait_history::{OpKind, TxnId, TxnStatus};
use serde_json::Value;
use std::collections::HashMap;

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Weak {
    ReadCommitted,
    ReadAtomic,
    Causal,
}

pub fn of(level: &str) -> Option<Weak> {
    match level {
        "read-committed" => Some(Weak::ReadCommitted),
        "read-atomic" => Some(Weak::ReadAtomic),
        "causal" => Some(Weak::Causal),
        _ => None,
    }
}

/// The writer a read names (None: the initial state), or why none.
type Writer = Result<Option<TxnId>, String>;

/// `t`'s external reads in program order: (key, writer).
fn reads(f: &Facts, t: TxnId) -> Vec<(u32, Writer)> {
    let h = f.h;
    let mut own: HashMap<u32, usize> = HashMap::new();
    let mut out = Vec::new();
    for o in h.ops(t) {
        let k = h.op_key[o];
        if h.op_kind[o] == OpKind::Write {
            own.insert(k, o);
            continue;
        }
        if own.contains_key(&k) {
            continue;
        }
        let w = match f.seen(o) {
            Seen::Init => Ok(None),
            Seen::Nobody => Err(format!("{} read a value nobody wrote", h.display_txn(t))),
            Seen::Write(w) => {
                let wt = f.op_txn[w];
                if f.last_write(wt, k) != Some(w) || wt == t {
                    Err(format!(
                        "{} read a version nobody installed",
                        h.display_txn(t)
                    ))
                } else {
                    Ok(Some(wt))
                }
            }
        };
        out.push((k, w));
    }
    out
}

fn writes(f: &Facts, t: TxnId, k: u32) -> bool {
    f.last_write(t, k).is_some()
}

/// What reader `t2` sees under the level, worked out once per reader: where it first read
/// each writer, and (causal) its whole causal past.
struct Sight {
    level: Weak,
    t2: TxnId,
    /// Writer → position of the first read of it.
    first_read: HashMap<TxnId, usize>,
    /// Causal: everything reaching `t2` by session order and write→read.
    past: Vec<bool>,
}

/// Whether `a` committed before `b` in `b`'s session.
fn so(f: &Facts, a: TxnId, b: TxnId) -> bool {
    f.session[a as usize] == f.session[b as usize]
        && f.pos[a as usize] < f.pos[b as usize]
        && f.h.txn_status[a as usize] == TxnStatus::Committed
}

impl Sight {
    fn new(f: &Facts, level: Weak, t2: TxnId, rs: &[(u32, Writer)]) -> Sight {
        let mut first_read = HashMap::new();
        for (i, r) in rs.iter().enumerate() {
            if let Ok(Some(w)) = r.1 {
                first_read.entry(w).or_insert(i);
            }
        }
        let past = if level == Weak::Causal {
            causal_past(f, t2)
        } else {
            Vec::new()
        };
        Sight {
            level,
            t2,
            first_read,
            past,
        }
    }

    /// Whether `t2`'s `i`-th external read sees `t3`.
    fn sees(&self, f: &Facts, t3: TxnId, i: usize) -> bool {
        match self.level {
            Weak::ReadCommitted => self.first_read.get(&t3).is_some_and(|&j| j < i),
            Weak::ReadAtomic => self.first_read.contains_key(&t3) || so(f, t3, self.t2),
            Weak::Causal => self.past[t3 as usize],
        }
    }
}

/// Everything reaching `t2` backwards over session order and write→read.
fn causal_past(f: &Facts, t2: TxnId) -> Vec<bool> {
    let h = f.h;
    let mut seen = vec![false; h.num_txns()];
    let mut stack = vec![t2];
    while let Some(b) = stack.pop() {
        let session = h.session_range(f.session[b as usize] as usize);
        let preds = session
            .filter(|&a| f.took_part[a as usize] && so(f, a, b))
            .chain(reads(f, b).into_iter().filter_map(|r| r.1.ok().flatten()));
        for a in preds {
            if !seen[a as usize] {
                seen[a as usize] = true;
                stack.push(a);
            }
        }
    }
    seen
}

/// An ACCEPT's commit order, checked against the level's axiom.
pub fn replay(f: &Facts, order: &[Value], level: Weak) -> Result<String, Problem> {
    let h = f.h;
    let placed = crate::replay::placements(f, order, None)?;
    // The placed writers of each key.
    let mut writers: HashMap<u32, Vec<TxnId>> = HashMap::new();
    for &t in placed.keys() {
        let mut keys: Vec<u32> = h
            .ops(t)
            .filter(|&o| h.op_kind[o] == OpKind::Write)
            .map(|o| h.op_key[o])
            .collect();
        keys.sort_unstable();
        keys.dedup();
        for k in keys {
            writers.entry(k).or_default().push(t);
        }
    }
    let mut count = 0;
    for (&t2, &p2) in &placed {
        let rs = reads(f, t2);
        let sight = Sight::new(f, level, t2, &rs);
        for (i, (x, w)) in rs.iter().enumerate() {
            let x = *x;
            count += 1;
            let t1 = match w {
                Err(why) => return invalid(why.clone()),
                Ok(t1) => *t1,
            };
            let p1 = match t1 {
                None => None,
                Some(t1) => match placed.get(&t1) {
                    Some(&p1) if p1 < p2 => Some(p1),
                    _ => {
                        return invalid(format!(
                            "{} is not placed before {}, which read from it",
                            h.display_txn(t1),
                            h.display_txn(t2)
                        ))
                    }
                },
            };
            for &t3 in writers.get(&x).into_iter().flatten() {
                if Some(t3) == t1 || t3 == t2 {
                    continue;
                }
                if sight.sees(f, t3, i) && p1.is_none_or(|p1| placed[&t3] > p1) {
                    return invalid(format!(
                        "{} sees {} but read {} from {}, placed before it",
                        h.display_txn(t2),
                        h.display_txn(t3),
                        h.keys[x as usize],
                        t1.map_or("the initial state".into(), |t| h.display_txn(t))
                    ));
                }
            }
        }
    }
    Ok(format!(
        "ACCEPT: the commit order of {} transactions satisfies the level's axiom on all {count} reads",
        placed.len()
    ))
}

/// A version-order edge `from` → `to` on key `k` the level forces, justified by some reader;
/// `to` None is the initial state.
pub fn forced(
    f: &Facts,
    level: Weak,
    from: TxnId,
    to: Option<TxnId>,
    k: u32,
) -> Result<(), Problem> {
    let h = f.h;
    if !writes(f, from, k) {
        return invalid(format!(
            "{} does not write {}",
            h.display_txn(from),
            h.keys[k as usize]
        ));
    }
    for t2 in (0..h.num_txns() as TxnId).filter(|&t| f.took_part[t as usize] && t != from) {
        let rs = reads(f, t2);
        let read = |r: &(u32, Writer)| r.0 == k && r.1 == Ok(to);
        if !rs.iter().any(read) {
            continue;
        }
        let sight = Sight::new(f, level, t2, &rs);
        if rs
            .iter()
            .enumerate()
            .any(|(i, r)| read(r) && sight.sees(f, from, i))
        {
            return Ok(());
        }
    }
    invalid(format!(
        "no reader of {} from {} sees {}",
        h.keys[k as usize],
        to.map_or("the initial state".into(), |t| h.display_txn(t)),
        h.display_txn(from)
    ))
}

/// A transaction named in a weak-level certificate, or the initial state ("INIT").
pub fn node(h: &krait_history::History, name: &str) -> Result<Option<TxnId>, Problem> {
    if name == "INIT" {
        return Ok(None);
    }
    txn_of(h, name)
        .map(Some)
        .ok_or(Problem::Invalid(format!("no transaction {name}")))
}
