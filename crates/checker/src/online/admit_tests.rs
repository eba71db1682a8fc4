//! The admission worklists against the definition they replace: the least fixpoint, iterated
//! until nothing changes (the previous, quadratic code, kept here as the oracle), on random
//! queues with missing, queued, live, aborted and chained writers, with and without a cap.

use super::{Online, OnlineOptions, TxnRecord, Writer};
use krait_history::{OpKind, TxnStatus, NO_TIME};
use std::collections::HashSet;

fn oracle_blocked(on: &Online, force: bool) -> std::collections::HashSet<u64> {
    let mut blocked: std::collections::HashSet<u64> = Default::default();
    loop {
        let mut changed = false;
        for s in &on.sessions {
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
                        match on.writes.get(&(k, v)) {
                            None if on.deleted_writes.contains_key(&(k, v))
                                || on.is_init_value(k, v) => {}
                            None => {
                                let overdue = on.sweep >= q.sweep + 2
                                    && q.seen_at.elapsed() >= on.opts.read_wait
                                    && !on.provisional.contains(&(k, v));
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
fn oracle_admission(on: &Online, blocked: &std::collections::HashSet<u64>) -> Vec<usize> {
    let ready: Vec<usize> = on
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
    let cap = on.opts.max_admit;
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
        let picked: std::collections::HashSet<u64> = on
            .sessions
            .iter()
            .zip(&take)
            .flat_map(|(s, &t)| s.queue.iter().take(t).map(|q| q.seq))
            .collect();
        let mut changed = false;
        for (si, s) in on.sessions.iter().enumerate() {
            for (i, q) in s.queue.iter().take(take[si]).enumerate() {
                // List elements count as reads: each names the write that appended it.
                let misses = q.t.needs().any(|(k, v)| {
                    matches!(on.writes.get(&(k, v)), Some(Writer::Queued(w)) if !picked.contains(w))
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

struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// A checker with random transactions queued (and, per `admit_first`, some admitted first):
/// reads of earlier writes, of later ones (other sessions lagging), and of values nobody wrote.
fn random_online(r: &mut Rng, cap: usize) -> Online {
    let mut on = Online::new(OnlineOptions {
        max_admit: cap,
        ..OnlineOptions::default()
    });
    let sessions = 1 + r.below(5) as u32;
    for s in 0..sessions {
        on.session(&format!("s{s}")).unwrap();
    }
    let keys: Vec<u32> = (0..4).map(|k| on.key(&format!("k{k}"))).collect();
    let n = 1 + r.below(30);
    for ext in 1..=n {
        let mut ops = Vec::new();
        for _ in 0..1 + r.below(3) {
            let k = keys[r.below(4) as usize];
            if r.below(2) == 0 {
                ops.push((OpKind::Write, k, ext * 100 + ops.len() as u64));
            } else {
                // A value some transaction writes (maybe later), or nobody's.
                let w = 1 + r.below(n + 3);
                ops.push((OpKind::Read, k, w * 100 + r.below(2)));
            }
        }
        let status = match r.below(8) {
            0 => TxnStatus::Aborted,
            1 => TxnStatus::Unknown,
            _ => TxnStatus::Committed,
        };
        let t = TxnRecord {
            session: r.below(sessions as u64) as u32,
            ext,
            status,
            start: NO_TIME,
            commit: NO_TIME,
            ops,
            lists: Vec::new(),
            app: Vec::new(),
            claims: Vec::new(),
        };
        // Duplicate values are refused on arrival; skip those transactions.
        let _ = on.push(t);
    }
    on
}

#[test]
fn worklists_equal_the_fixpoint() {
    let mut r = Rng(0x2545_f491_4f6c_dd1d);
    let (mut compared, mut waited, mut cut) = (0, 0, 0);
    for case in 0..3000 {
        let cap = [0, 1, 3, 7][case % 4];
        let mut on = random_online(&mut r, cap);
        // Admit a first round sometimes, so live writers are among those read.
        if case % 3 == 0 {
            on.opts.max_admit = 2;
            let blocked = on.blocked_set(false);
            let take = on.admission(&blocked);
            on.admit(&take);
            on.opts.max_admit = cap;
        }
        for force in [false, true] {
            let want = oracle_blocked(&on, force);
            let got = on.blocked_set(force);
            assert_eq!(got, want, "case {case}, force {force}");
            let take = on.admission(&got);
            assert_eq!(take, oracle_admission(&on, &want), "case {case}");
            compared += 1;
            waited += usize::from(!got.is_empty());
            let ready = on.admission_uncapped(&got);
            cut += usize::from(cap > 0 && take != ready && take.iter().sum::<usize>() < cap);
        }
    }
    assert_eq!(compared, 6000);
    // The generator makes the interesting cases: something waits, a reader is cut at the cap.
    assert!(waited > 1000 && cut > 100, "waited {waited}, cut {cut}");
}

impl Online {
    /// What admission would take without a cap.
    fn admission_uncapped(&self, blocked: &HashSet<u64>) -> Vec<usize> {
        self.sessions
            .iter()
            .map(|s| {
                s.queue
                    .iter()
                    .take_while(|q| !blocked.contains(&q.seq))
                    .count()
            })
            .collect()
    }
}
