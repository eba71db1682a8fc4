//! Admission against its definition (docs/online.md, "Admit"; the doc comments of `admit.rs`),
//! stated here apart from the worklists that compute it:
//!
//! 1. In order: a transaction is taken only with its session predecessor.
//! 2. A committed or unknown transaction's read (list elements included) is of a write seen, and
//!    then every queued writer of its value is taken with it (a reader comes with every write
//!    of its value seen so far; live ones are in already); or of a value known without a writer
//!    held (a write an earlier round deleted, where values are unique; a key's folded initial
//!    value; the value every key starts with); or of nothing seen, and then it is taken only
//!    when overdue (two sweeps and `read_wait` passed, and no record still being written holds
//!    the write) or forced. An aborted transaction's reads never wait.
//!
//! The admissible transactions are the greatest set obeying both rules: everything queued,
//! shrunk by dropping whatever breaks a rule until nothing does (each step only drops, and a
//! transaction of the greatest such set never breaks a rule, so it survives every step).
//! With `max_admit` below what is admissible, the sessions are served in turn: the first
//! `max_admit` admissible transactions by (place in session, session); that set is shrunk the
//! same way until every reader, aborted ones too, comes with every queued writer it names; and
//! where nothing is left (readers and writers naming each other across the cap), everything
//! admissible is taken.
//!
//! Checked on random queues with missing, queued, live, aborted, chained, repeated, deleted,
//! folded and overdue writers, with and without a cap, forced and not.

use super::{Online, OnlineOptions, Queued, TxnRecord, Writer};
use krait_history::{KeyId, OpKind, TxnStatus, NO_TIME};
use std::collections::HashSet;
use std::time::Duration;

/// Where the value a read returned stands, as rule 2 sorts it.
enum Source {
    /// Written by transactions seen: these queued ones (live writers need nothing).
    Written(Vec<u64>),
    /// Known with no writer held: deleted (unique values), folded, or every key's initial value.
    Known,
    /// Seen nowhere yet.
    Unseen,
}

fn source(on: &Online, kv: (KeyId, u64)) -> Source {
    let writers: Vec<Writer> = on.writes.all(&kv).collect();
    if !writers.is_empty() {
        let queued = writers.iter().filter_map(|w| match w {
            Writer::Queued(seq) => Some(*seq),
            Writer::Live(_) => None,
        });
        return Source::Written(queued.collect());
    }
    // With repeated values a write still to come may repeat a deleted one, so that waits.
    let deleted = !on.repeated && on.deleted_writes.contains_key(&kv);
    let folded = on.init_value.get(&kv.0).map(|e| e.0) == Some(kv.1);
    if deleted || folded || on.initial == Some(kv.1) {
        Source::Known
    } else {
        Source::Unseen
    }
}

fn overdue(on: &Online, q: &Queued, kv: (KeyId, u64)) -> bool {
    on.sweep >= q.sweep + 2
        && q.seen_at.elapsed() >= on.opts.read_wait
        && !on.provisional.contains(&kv)
}

/// Rule 2 for `q`, with `taken` the set it would be taken with.
fn reads_hold(on: &Online, q: &Queued, taken: &HashSet<u64>, force: bool) -> bool {
    q.t.status == TxnStatus::Aborted
        || q.t.needs().all(|kv| match source(on, kv) {
            Source::Written(ws) => ws.iter().all(|w| taken.contains(w)),
            Source::Known => true,
            Source::Unseen => force || overdue(on, q, kv),
        })
}

/// The cap's rule for `q`: every queued writer it names (aborted or not) is in `taken`.
fn comes_with_writers(on: &Online, q: &Queued, taken: &HashSet<u64>) -> bool {
    q.t.needs().all(|kv| match source(on, kv) {
        Source::Written(ws) => ws.iter().all(|w| taken.contains(w)),
        Source::Known | Source::Unseen => true,
    })
}

/// The greatest subset of `start` in which every transaction has its session predecessor
/// (rule 1) and obeys `rule`: drops every transaction that breaks one, until none does.
fn greatest(
    on: &Online,
    start: HashSet<u64>,
    rule: impl Fn(&Queued, &HashSet<u64>) -> bool,
) -> HashSet<u64> {
    let mut taken = start;
    loop {
        let mut kept = HashSet::new();
        for s in &on.sessions {
            for (i, q) in s.queue.iter().enumerate() {
                let in_order = i == 0 || taken.contains(&s.queue[i - 1].seq);
                if taken.contains(&q.seq) && in_order && rule(q, &taken) {
                    kept.insert(q.seq);
                }
            }
        }
        if kept == taken {
            return taken;
        }
        taken = kept;
    }
}

fn all_queued(on: &Online) -> HashSet<u64> {
    on.sessions
        .iter()
        .flat_map(|s| s.queue.iter().map(|q| q.seq))
        .collect()
}

/// What may be admitted without a cap.
fn oracle_admissible(on: &Online, force: bool) -> HashSet<u64> {
    greatest(on, all_queued(on), |q, taken| {
        reads_hold(on, q, taken, force)
    })
}

/// How long a prefix of each session's queue lies in `set`.
fn prefixes(on: &Online, set: &HashSet<u64>) -> Vec<usize> {
    on.sessions
        .iter()
        .map(|s| {
            let out = s.queue.iter().position(|q| !set.contains(&q.seq));
            out.unwrap_or(s.queue.len())
        })
        .collect()
}

/// How many transactions to admit from the front of each session's queue.
fn oracle_admission(on: &Online, admissible: &HashSet<u64>) -> Vec<usize> {
    let ready = prefixes(on, admissible);
    let cap = on.opts.max_admit;
    if cap == 0 || ready.iter().sum::<usize>() <= cap {
        return ready;
    }
    // Sessions in turn: the first `cap` by (place in session, session).
    let mut turns: Vec<(usize, usize, u64)> = Vec::new();
    for (si, s) in on.sessions.iter().enumerate() {
        for (i, q) in s.queue.iter().take(ready[si]).enumerate() {
            turns.push((i, si, q.seq));
        }
    }
    turns.sort_unstable();
    let served: HashSet<u64> = turns.iter().take(cap).map(|t| t.2).collect();
    let kept = greatest(on, served, |q, taken| comes_with_writers(on, q, taken));
    if kept.is_empty() {
        ready
    } else {
        prefixes(on, &kept)
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

/// A checker with random transactions queued: reads of earlier writes, of later ones (other
/// sessions lagging), and of values nobody wrote. With `repeated`, values are written more
/// than once (several writers of one value, queued and, once some are admitted, live), and
/// sometimes every key starts with a value nobody writes.
fn random_online(r: &mut Rng, cap: usize, repeated: bool) -> Online {
    let mut on = Online::new(OnlineOptions {
        max_admit: cap,
        ..OnlineOptions::default()
    });
    if repeated {
        on.allow_repeated_values();
    }
    let sessions = 1 + r.below(5) as u32;
    for s in 0..sessions {
        on.session(&format!("s{s}")).unwrap();
    }
    let keys: Vec<u32> = (0..4).map(|k| on.key(&format!("k{k}"))).collect();
    let n = 1 + r.below(30);
    if repeated && r.below(2) == 0 {
        on.set_initial_value((n + 1) * 100);
    }
    for ext in 1..=n {
        let mut ops = Vec::new();
        for _ in 0..1 + r.below(3) {
            let k = keys[r.below(4) as usize];
            if r.below(2) == 0 {
                let v = if repeated {
                    (1 + r.below(n)) * 100 + r.below(2)
                } else {
                    ext * 100 + ops.len() as u64
                };
                ops.push((OpKind::Write, k, v));
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
        // Duplicate values are refused on arrival (without `repeated`); those are skipped.
        let _ = on.push(t);
    }
    on
}

/// What earlier rounds and sweeps would have left: writes deleted and initial values folded
/// among the values nobody queued writes, and, in watch mode, sweeps passed with queued
/// transactions seen at different sweeps and some writes still being written.
fn as_if_later(r: &mut Rng, on: &mut Online) {
    let n = on.pushed();
    let keys = on.keys.len() as u64;
    for _ in 0..r.below(4) {
        let kv = (
            r.below(keys) as KeyId,
            (n + 1 + r.below(3)) * 100 + r.below(2),
        );
        if r.below(2) == 0 {
            on.deleted_writes.insert(kv, (n + 1000, 0));
        } else {
            on.init_value.insert(kv.0, (kv.1, n + 1000));
        }
    }
    if r.below(2) == 0 {
        on.opts.read_wait = Duration::ZERO;
        let mut provisional = HashSet::new();
        for _ in 0..r.below(3) {
            provisional.insert((
                r.below(keys) as KeyId,
                (1 + r.below(n + 3)) * 100 + r.below(2),
            ));
        }
        on.next_sweep(HashSet::new());
        on.next_sweep(provisional);
        for s in &mut on.sessions {
            for q in &mut s.queue {
                q.sweep = r.below(3);
            }
        }
    }
}

/// Whether admitting `take` takes a transaction whose read rule 2 lets in for being known
/// without a writer (`Known`), or overdue (`Unseen`, not forced).
fn takes(on: &Online, take: &[usize], want: fn(&Source) -> bool) -> bool {
    on.sessions.iter().zip(take).any(|(s, &n)| {
        s.queue.iter().take(n).any(|q| {
            q.t.status != TxnStatus::Aborted && q.t.needs().any(|kv| want(&source(on, kv)))
        })
    })
}

#[test]
fn admission_follows_its_definition() {
    let mut r = Rng(0x2545_f491_4f6c_dd1d);
    let (mut compared, mut waited, mut cut) = (0, 0, 0);
    let (mut known, mut overdue_taken, mut shared) = (0, 0, 0);
    for case in 0..3000 {
        let cap = [0, 1, 3, 7][case % 4];
        let repeated = case % 5 >= 3;
        let mut on = random_online(&mut r, cap, repeated);
        // Admit a first round sometimes, so live writers are among those read.
        if case % 3 == 0 {
            on.opts.max_admit = 2;
            let blocked = on.blocked_set(false);
            let take = on.admission(&blocked);
            on.admit(&take);
            on.opts.max_admit = cap;
        }
        if case % 2 == 0 {
            as_if_later(&mut r, &mut on);
        }
        for force in [false, true] {
            let admissible = oracle_admissible(&on, force);
            let want: HashSet<u64> = all_queued(&on).difference(&admissible).copied().collect();
            let got = on.blocked_set(force);
            assert_eq!(got, want, "case {case}, force {force}");
            let take = on.admission(&got);
            assert_eq!(take, oracle_admission(&on, &admissible), "case {case}");
            compared += 1;
            waited += usize::from(!got.is_empty());
            let ready = on.admission_uncapped(&got);
            cut += usize::from(cap > 0 && take != ready && take.iter().sum::<usize>() < cap);
            known += usize::from(takes(&on, &ready, |s| matches!(s, Source::Known)));
            if !force {
                overdue_taken += usize::from(takes(&on, &ready, |s| matches!(s, Source::Unseen)));
            }
            shared += usize::from(takes(
                &on,
                &ready,
                |s| matches!(s, Source::Written(ws) if ws.len() > 1),
            ));
        }
    }
    assert_eq!(compared, 6000);
    // The generator makes the interesting cases: something waits, a reader is cut at the cap,
    // reads admitted for a known value, for being overdue, and with several queued writers.
    assert!(waited > 1000 && cut > 100, "waited {waited}, cut {cut}");
    assert!(
        known > 100 && overdue_taken > 100 && shared > 50,
        "known {known}, overdue {overdue_taken}, several writers {shared}"
    );
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
