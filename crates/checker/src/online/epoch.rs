//! Epochs from fences (the paper's §4): fences numbered along the fence key's version chain,
//! every other transaction its session's next committed fence's number minus one, and `agree`,
//! the least number every session still sending has reached.

use super::{Online, TxnRecord, Writer, NONE};
use krait_history::{OpKind, TxnStatus};

impl Online {
    pub(super) fn is_fence_txn(&self, t: &TxnRecord) -> bool {
        match (self.fence_key, t.ops.first()) {
            (Some(fk), Some(&(kind, k, _))) => k == fk && kind != OpKind::Write,
            _ => false,
        }
    }

    /// Why nothing may be collected yet, if something stops it: every session must have
    /// announced itself (a session starting late would void the epoch guarantee).
    pub(super) fn gc_hold(&self) -> Option<String> {
        if self.sessions.len() < self.min_sessions {
            return Some(format!(
                "{} of {} sessions have written",
                self.sessions.len(),
                self.min_sessions
            ));
        }
        self.hold_gc
            .then(|| "a log has not named its session yet".to_string())
    }

    pub(super) fn agree(&self) -> u32 {
        if self.gc_hold().is_some() {
            return 0;
        }
        let mut agree = u32::MAX - 2;
        for s in &self.sessions {
            if s.closed && s.queue.is_empty() {
                continue;
            }
            agree = agree.min(if s.max_fence == NONE { 0 } else { s.max_fence });
        }
        agree
    }

    pub(super) fn assign_epochs(&mut self, fences: &[u32], new_ids: &[Vec<u32>]) {
        // Fences may read versions written by fences admitted in the same round: walk back along
        // the chain to a version whose epoch is known, then number forwards. A fence leaves
        // `unresolved` when a walk reaches it, so a cycle among fences ends the walk with an
        // unknown epoch (the check rejects such a cycle anyway).
        let fk = self.fence_key.unwrap_or(NONE);
        // Fences admitted earlier whose walk stopped at a fence still queued then (another
        // session's log lagging) are walked again: otherwise one such fence would leave every
        // later fence of the chain without an epoch, and collection would stall for good.
        let mut fences_all: Vec<u32> = self.pending_fences.iter().map(|p| p.0).collect();
        fences_all.extend_from_slice(fences);
        let fences = &fences_all[..];
        let mut unresolved: krait_history::FxHashSet<u32> = fences.iter().copied().collect();
        for &start in fences {
            if !unresolved.remove(&start) {
                continue;
            }
            let mut chain = vec![start];
            let mut base = loop {
                let l = self.slab[*chain.last().unwrap() as usize].as_ref().unwrap();
                let (kind, _, v) = l.t.ops[0];
                if kind == OpKind::ReadInit {
                    break 0;
                }
                match self.writes.get(&(fk, v)) {
                    Some(&Writer::Live(w)) if self.slab[w as usize].as_ref().unwrap().fence => {
                        if unresolved.remove(&w) {
                            chain.push(w);
                        } else {
                            break self.fence_epoch.get(&v).copied().unwrap_or(NONE);
                        }
                    }
                    _ => break NONE,
                }
            };
            for &id in chain.iter().rev() {
                let l = self.slab[id as usize].as_ref().unwrap();
                let written: Vec<u64> =
                    l.t.ops
                        .iter()
                        .filter(|o| o.0 == OpKind::Write && o.1 == fk)
                        .map(|o| o.2)
                        .collect();
                let e = match base {
                    NONE => NONE,
                    _ if written.is_empty() => base,
                    _ => base + 1,
                };
                if e != NONE {
                    for v in written {
                        self.fence_epoch.insert(v, e);
                    }
                }
                self.slab[id as usize].as_mut().unwrap().epoch = e;
                base = e;
            }
        }
        // Pending fences resolved now settle their sessions' transactions.
        for (id, si, un) in std::mem::take(&mut self.pending_fences) {
            let e = self.slab[id as usize].as_ref().map_or(NONE, |l| l.epoch);
            if e == NONE {
                self.pending_fences.push((id, si, un));
            } else {
                self.settle(si, e, &un);
            }
        }
        // Transactions before a committed fence take its epoch minus one, in session order.
        for (si, ids) in new_ids.iter().enumerate() {
            for &id in ids {
                let (fence, e, status) = {
                    let l = self.slab[id as usize].as_ref().unwrap();
                    (l.fence, l.epoch, l.t.status)
                };
                // An aborted fence bounds nothing (its session retries it), and an unknown
                // outcome may commit after everything its session does next: neither is a
                // session's fence; the unknown one never becomes old (epoch NONE).
                if !fence || status != TxnStatus::Committed {
                    if status != TxnStatus::Unknown {
                        self.sessions[si].unassigned.push(id);
                    }
                    continue;
                }
                let un = std::mem::take(&mut self.sessions[si].unassigned);
                if e != NONE {
                    self.settle(si as u32, e, &un);
                } else {
                    self.pending_fences.push((id, si as u32, un));
                }
            }
        }
    }

    /// A committed fence of epoch `e` in session `si`: the transactions before it (and those
    /// before the session's earlier fences still unresolved, which precede it too) take
    /// `e - 1`, and the session has reached `e`.
    pub(super) fn settle(&mut self, si: u32, e: u32, un: &[u32]) {
        let mut before: Vec<u32> = un.to_vec();
        let mut keep = Vec::new();
        for p in std::mem::take(&mut self.pending_fences) {
            if p.1 == si {
                before.extend(p.2);
            } else {
                keep.push(p);
            }
        }
        self.pending_fences = keep;
        for u in before {
            if let Some(l) = self.slab[u as usize].as_mut() {
                l.epoch = e.saturating_sub(1);
            }
        }
        let s = &mut self.sessions[si as usize];
        s.max_fence = if s.max_fence == NONE {
            e
        } else {
            s.max_fence.max(e)
        };
    }
}
