//! Admission: which waiting transactions a round may take. A read must name a write already
//! seen (its writer's session may lag), unless it is overdue; a reader comes with the writers
//! it names, and a session's transactions come in order.

use super::{Live, Online, Writer, NONE};
use krait_history::{FxHashMap, KeyId, TxnStatus};
use std::collections::HashSet;

/// Where each queued transaction is, and who reads from it: the dependencies admission follows.
struct Queues {
    /// Queued seq → (session index, position in its queue).
    pos: FxHashMap<u64, (usize, usize)>,
    /// Queued writer seq → the queued transactions with a read it must come with.
    readers: FxHashMap<u64, Vec<u64>>,
}

impl Online {
    /// Indexes the queues; `missing(t, read)` is called for each read of a write not seen at all
    /// (not queued, live, deleted or folded) and says whether `t` must wait for it: those are
    /// returned. Aborted transactions' reads count only with `aborted_reads`.
    fn index_queues(
        &self,
        aborted_reads: bool,
        mut missing: impl FnMut(&super::Queued, (KeyId, u64)) -> bool,
    ) -> (Queues, Vec<u64>) {
        let mut q = Queues {
            pos: FxHashMap::default(),
            readers: FxHashMap::default(),
        };
        let mut roots = Vec::new();
        for (si, s) in self.sessions.iter().enumerate() {
            for (i, t) in s.queue.iter().enumerate() {
                q.pos.insert(t.seq, (si, i));
                if !aborted_reads && t.t.status == TxnStatus::Aborted {
                    continue;
                }
                let mut root = false;
                for (k, v) in t.t.needs() {
                    if !self.writes.contains_key(&(k, v)) {
                        // A read of a deleted write is stale at once; with repeated values a
                        // write still to come may be the one read, so it waits as for any.
                        let known = (self.deleted_writes.contains_key(&(k, v)) && !self.repeated)
                            || self.is_init_value(k, v)
                            || self.initial == Some(v);
                        if !known {
                            root |= missing(t, (k, v));
                        }
                        continue;
                    }
                    // A reader comes with every writer of its value seen so far.
                    for w in self.writes.all(&(k, v)) {
                        if let Writer::Queued(w) = w {
                            q.readers.entry(w).or_default().push(t.seq);
                        }
                    }
                }
                if root {
                    roots.push(t.seq);
                }
            }
        }
        (q, roots)
    }

    /// The queued transactions that must wait: those reading a write not seen yet (unless
    /// overdue, or `force`), everything after them in their sessions, and every reader of a
    /// waiting transaction's writes, transitively. One pass over the queues and their
    /// dependencies (each transaction is marked once), however long the chains.
    pub(super) fn blocked_set(&self, force: bool) -> HashSet<u64> {
        // An aborted transaction's reads mean nothing: they never wait.
        let (q, mut stack) = self.index_queues(false, |t, kv| {
            let overdue = self.sweep >= t.sweep + 2
                && t.seen_at.elapsed() >= self.opts.read_wait
                && !self.provisional.contains(&kv);
            !force && !overdue
        });
        let mut blocked: HashSet<u64> = HashSet::default();
        // Per session, the first position known to wait: everything from there on waits.
        let mut from: Vec<usize> = self.sessions.iter().map(|s| s.queue.len()).collect();
        while let Some(x) = stack.pop() {
            let (si, i) = q.pos[&x];
            if i >= from[si] {
                continue;
            }
            for t in self.sessions[si].queue.range(i..from[si]) {
                blocked.insert(t.seq);
                stack.extend(q.readers.get(&t.seq).into_iter().flatten().copied());
            }
            from[si] = i;
        }
        blocked
    }

    /// How many transactions to admit from the front of each session's queue: all that need
    /// not wait, or with `max_admit`, the sessions in turn up to the cap, less every reader
    /// whose writer was left out (and what follows it in its session), transitively.
    pub(super) fn admission(&self, blocked: &HashSet<u64>) -> Vec<usize> {
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
        // Every reader (aborted ones too) comes with the writers it names: what is left out,
        // past the cap or waiting, starts the worklist.
        let (q, _) = self.index_queues(true, |_, _| false);
        let mut stack: Vec<u64> = Vec::new();
        for (si, s) in self.sessions.iter().enumerate() {
            stack.extend(s.queue.range(take[si]..).map(|t| t.seq));
        }
        while let Some(w) = stack.pop() {
            for r in q.readers.get(&w).into_iter().flatten() {
                let (si, i) = q.pos[r];
                if i < take[si] {
                    stack.extend(self.sessions[si].queue.range(i..take[si]).map(|t| t.seq));
                    take[si] = i;
                }
            }
        }
        // Readers and writers that name each other across the cap: take them all.
        if take.iter().all(|&t| t == 0) {
            ready
        } else {
            take
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
                    pos: q.pos,
                    ghost: Vec::new(),
                    read_unknown: false,
                    epoch: NONE,
                    fence,
                });
                let l = self.slab[id as usize].as_ref().unwrap();
                for &(kind, k, v) in &l.t.ops {
                    if self.indexed_write(kind, v) {
                        self.writes
                            .replace((k, v), Writer::Queued(q.seq), Writer::Live(id));
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
