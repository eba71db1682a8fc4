//! Admission: which waiting transactions a round may take. A read must name a write already
//! seen (its writer's session may lag), unless it is overdue; a reader comes with the writers
//! it names, and a session's transactions come in order.

use super::{Live, Online, Writer, NONE};
use krait_history::TxnStatus;

impl Online {
    pub(super) fn blocked_set(&self, force: bool) -> std::collections::HashSet<u64> {
        let mut blocked: std::collections::HashSet<u64> = Default::default();
        loop {
            let mut changed = false;
            for s in &self.sessions {
                let mut after_blocked = false;
                for q in &s.queue {
                    if blocked.contains(&q.seq) {
                        after_blocked = true;
                        continue;
                    }
                    let mut block = after_blocked;
                    // An aborted transaction's reads mean nothing: they never wait.
                    if !block && q.t.status != TxnStatus::Aborted {
                        for (k, v) in q.t.needs() {
                            match self.writes.get(&(k, v)) {
                                None if self.deleted_writes.contains_key(&(k, v))
                                    || self.is_init_value(k, v) => {}
                                None => {
                                    let overdue = self.sweep >= q.sweep + 2
                                        && q.seen_at.elapsed() >= self.opts.read_wait
                                        && !self.provisional.contains(&(k, v));
                                    if !force && !overdue {
                                        block = true;
                                    }
                                }
                                Some(Writer::Queued(w)) if blocked.contains(w) => block = true,
                                _ => {}
                            }
                            if block {
                                break;
                            }
                        }
                    }
                    if block {
                        blocked.insert(q.seq);
                        after_blocked = true;
                        changed = true;
                    }
                }
            }
            if !changed {
                return blocked;
            }
        }
    }

    /// How many transactions to admit from the front of each session's queue.
    pub(super) fn admission(&self, blocked: &std::collections::HashSet<u64>) -> Vec<usize> {
        let ready: Vec<usize> = self
            .sessions
            .iter()
            .map(|s| {
                s.queue
                    .iter()
                    .take_while(|q| !blocked.contains(&q.seq))
                    .count()
            })
            .collect();
        let total: usize = ready.iter().sum();
        let cap = self.opts.max_admit;
        if cap == 0 || total <= cap {
            return ready;
        }
        // Round robin up to the cap, then drop readers whose queued writers were left out
        // (and what follows them in their sessions) until that holds.
        let mut take = vec![0usize; ready.len()];
        let mut left = cap;
        while left > 0 {
            for (t, &r) in take.iter_mut().zip(&ready) {
                if *t < r && left > 0 {
                    *t += 1;
                    left -= 1;
                }
            }
        }
        loop {
            let picked: std::collections::HashSet<u64> = self
                .sessions
                .iter()
                .zip(&take)
                .flat_map(|(s, &t)| s.queue.iter().take(t).map(|q| q.seq))
                .collect();
            let mut changed = false;
            for (si, s) in self.sessions.iter().enumerate() {
                for (i, q) in s.queue.iter().take(take[si]).enumerate() {
                    // List elements count as reads: each names the write that appended it.
                    let misses = q.t.needs().any(|(k, v)| {
                        matches!(self.writes.get(&(k, v)), Some(Writer::Queued(w)) if !picked.contains(w))
                    });
                    if misses {
                        take[si] = i;
                        changed = true;
                        break;
                    }
                }
            }
            if !changed {
                // Readers and writers that name each other across the cap: take them all.
                return if take.iter().all(|&t| t == 0) {
                    ready
                } else {
                    take
                };
            }
        }
    }

    /// Admits `take[s]` transactions from the front of each session's queue, in session
    /// order. Returns how many, the new slab slots per session, and the fences among them.
    pub(super) fn admit(&mut self, take: &[usize]) -> (usize, Vec<Vec<u32>>, Vec<u32>) {
        let mut admitted_fences: Vec<u32> = Vec::new();
        let mut new_ids: Vec<Vec<u32>> = vec![Vec::new(); self.sessions.len()];
        let mut new = 0;
        for si in 0..self.sessions.len() {
            for _ in 0..take[si] {
                let q = self.sessions[si].queue.pop_front().unwrap();
                if self.opts.track_commits && q.t.commit != krait_history::NO_TIME {
                    self.admitted_commits.push(q.t.commit);
                }
                let fence = self.is_fence_txn(&q.t);
                let id = self.alloc(Live {
                    t: q.t,
                    ghost: Vec::new(),
                    read_unknown: false,
                    epoch: NONE,
                    fence,
                });
                let l = self.slab[id as usize].as_ref().unwrap();
                for &(kind, k, v) in &l.t.ops {
                    if self.indexed_write(kind, v) {
                        self.writes.insert((k, v), Writer::Live(id));
                    }
                }
                self.sessions[si].live.push(id);
                new_ids[si].push(id);
                if fence {
                    admitted_fences.push(id);
                }
                new += 1;
            }
        }
        (new, new_ids, admitted_fences)
    }
}
