//! Shared by the checker's tests: a brute-force serializability oracle and a generator of small
//! random histories that are serializable about half the time.
#![allow(dead_code)]

pub mod causal;
pub mod fenced;
pub mod si;
pub mod weak;

use krait_history::{History, OpKind, TxnId, TxnStatus, NO_TIME};
use std::collections::HashSet;

pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// An index below `n`.
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// Is there a serial order of the committed transactions (plus any subset of those with unknown
/// outcome) in which every read returns the latest write? Session order: a transaction follows
/// every committed transaction logged before it in its session; a transaction with an unknown
/// outcome may commit any time after that, so it holds back nobody (docs/semantics.md). Under
/// `strict` (the drift), a transaction also follows every committed transaction whose commit
/// plus the drift is before its start. Depth-first search over orders, remembering dead ends by
/// (placed set, skipped set, latest writer per key).
pub fn serializable(h: &History, strict: Option<u64>) -> bool {
    let n = h.num_txns();
    assert!(n <= 16);
    let sessions = h.txn_sessions();
    let mut state: Vec<Option<u64>> = vec![None; h.num_keys()];
    let mut dead: HashSet<(u32, Vec<Option<u64>>)> = HashSet::new();
    fn go(
        h: &History,
        sessions: &[u32],
        strict: Option<u64>,
        done: u32,
        skipped: u32,
        state: &mut Vec<Option<u64>>,
        dead: &mut HashSet<(u32, Vec<Option<u64>>)>,
    ) -> bool {
        let n = h.num_txns();
        let all_committed =
            (0..n).all(|t| h.txn_status[t] != TxnStatus::Committed || done & (1 << t) != 0);
        if all_committed {
            return true;
        }
        if dead.contains(&(done | (skipped << 16), state.clone())) {
            return false;
        }
        for t in 0..n {
            if done & (1 << t) != 0 || skipped & (1 << t) != 0 {
                continue;
            }
            let st = h.txn_status[t];
            if st == TxnStatus::Aborted {
                continue;
            }
            // Every committed transaction before it in its session is placed.
            let ready = (h.session_txns[sessions[t] as usize] as usize..t)
                .all(|u| h.txn_status[u] != TxnStatus::Committed || done & (1 << u) != 0);
            if !ready {
                continue;
            }
            if st == TxnStatus::Unknown
                && go(h, sessions, strict, done, skipped | (1 << t), state, dead)
            {
                return true;
            }
            // Real time: everything that committed (beyond the drift) before t started must be
            // placed already.
            if let Some(d) = strict {
                let ts = h.txn_start[t];
                let blocked = (0..n).any(|u| {
                    u != t
                        && done & (1 << u) == 0
                        && h.txn_status[u] == TxnStatus::Committed
                        && h.txn_commit[u] != NO_TIME
                        && h.txn_commit[u].saturating_add(d) < ts
                });
                if blocked {
                    continue;
                }
            }
            let saved = state.clone();
            let mut ok = true;
            for o in h.ops(t as TxnId) {
                let k = h.op_key[o] as usize;
                ok &= step(h, o, &mut state[k]);
                if !ok {
                    break;
                }
            }
            if ok && go(h, sessions, strict, done | (1 << t), skipped, state, dead) {
                return true;
            }
            *state = saved;
        }
        dead.insert((done | (skipped << 16), state.clone()));
        false
    }
    go(h, &sessions, strict, 0, 0, &mut state, &mut dead)
}

/// Op `o` of a serial execution, with `state` its key's latest value: a write sets it, a read
/// must return it (or the initial value, where the history has one, before any write).
pub fn step(h: &History, o: usize, state: &mut Option<u64>) -> bool {
    match h.op_kind[o] {
        OpKind::Write => {
            *state = Some(h.op_value[o]);
            true
        }
        OpKind::Read => match *state {
            Some(v) => v == h.op_value[o],
            None => h.init_value == Some(h.op_value[o]),
        },
        OpKind::ReadInit => state.is_none(),
    }
}

/// A small random history: a serial execution in which some reads go stale, some transactions
/// abort or end unknown, and the order transactions are logged per session is sometimes
/// perturbed.
pub fn random_history(r: &mut Rng, max_txns: u64, keys: u64) -> History {
    random_history_with(r, max_txns, keys, None, false)
}

/// The same, with written values drawn from `1..=range` (so values repeat) when a range is
/// given; with `init_zero`, every key starts at 0, values are drawn from `0..range` and reads
/// of the initial state read 0 (the convention of dbcop histories).
pub fn random_history_with(
    r: &mut Rng,
    max_txns: u64,
    keys: u64,
    range: Option<u64>,
    init_zero: bool,
) -> History {
    let n = 2 + r.below(max_txns - 1);
    let nsessions = 1 + r.below(3) as usize;
    let key = |k: u64| format!("k{k}");
    let mut versions: Vec<Vec<u64>> = vec![Vec::new(); keys as usize];
    let mut next = 1u64;
    let mut txns = Vec::new();
    let mut time = 0u64;
    let mut deferred: Vec<(u64, usize, u64)> = Vec::new();
    for i in 0..n {
        let mut t = krait_history::SimpleTxn::new(r.below(nsessions as u64) as usize, 100 + i);
        let nops = 1 + r.below(4);
        let mut own: Vec<Option<u64>> = vec![None; keys as usize];
        for _ in 0..nops {
            let k = r.below(keys);
            if r.chance(50) {
                let v = match own[k as usize] {
                    Some(v) if !r.chance(5) => Some(v),
                    _ => {
                        let vs = &versions[k as usize];
                        if r.chance(15) && !vs.is_empty() {
                            // Stale: any earlier version, or the initial one.
                            let i = r.below(vs.len() as u64 + 1) as usize;
                            if i == vs.len() {
                                None
                            } else {
                                Some(vs[i])
                            }
                        } else {
                            vs.last().copied()
                        }
                    }
                };
                t = match v {
                    Some(v) => t.r(&key(k), v),
                    None => t.r0(&key(k)),
                };
            } else {
                let v = match range {
                    Some(n) if init_zero => r.below(n),
                    Some(n) => 1 + r.below(n),
                    None => {
                        next += 1;
                        next - 1
                    }
                };
                own[k as usize] = Some(v);
                t = t.w(&key(k), v);
            }
        }
        let status = match r.below(20) {
            0 => TxnStatus::Aborted,
            1 => TxnStatus::Unknown,
            _ => TxnStatus::Committed,
        };
        // Writes of an unknown outcome sometimes land a few transactions later (the commit was
        // delayed while its session went on); aborted writes are occasionally visible (a G1a).
        for (due, k, v) in std::mem::take(&mut deferred) {
            if due <= i {
                versions[k].push(v);
            } else {
                deferred.push((due, k, v));
            }
        }
        if status != TxnStatus::Aborted || r.chance(20) {
            let delay = if status == TxnStatus::Unknown && r.chance(50) {
                1 + r.below(3)
            } else {
                0
            };
            for (k, v) in own.iter().enumerate() {
                if let Some(v) = v {
                    if delay == 0 {
                        versions[k].push(*v);
                    } else {
                        deferred.push((i + delay, k, *v));
                    }
                }
            }
        }
        let start = time + r.below(3);
        time += 2 + r.below(3);
        t = t.status(status).times(start, time);
        txns.push(t);
    }
    if r.chance(10) && txns.len() > 2 {
        let i = r.below(txns.len() as u64 - 1) as usize;
        txns.swap(i, i + 1);
    }
    let mut h = krait_history::build_history(&txns).expect("ids are unique");
    if init_zero {
        h.init_value = Some(0);
        for o in 0..h.num_ops() {
            if h.op_kind[o] == OpKind::ReadInit {
                h.op_kind[o] = OpKind::Read;
                h.op_value[o] = 0;
            }
        }
    }
    h
}

/// Every combination of the checker's switches, and the solvers.
pub fn all_option_sets() -> Vec<(String, krait_checker::Options)> {
    use krait_checker::{Options, SolverKind};
    let mut v = Vec::new();
    for combine in [true, false] {
        for coalesce in [true, false] {
            for (prune, skip_unobserved) in
                [(true, true), (true, false), (false, true), (false, false)]
            {
                for (sname, solver, phase, tprop, lazy) in [
                    ("cdcl", SolverKind::Cdcl, true, true, true),
                    ("cdcl-eager", SolverKind::Cdcl, true, true, false),
                    ("cdcl-plain", SolverKind::Cdcl, false, false, false),
                    ("brute", SolverKind::BruteForce, false, false, false),
                ] {
                    let name = format!(
                        "combine={combine} coalesce={coalesce} prune={prune} \
                         skip_unobserved={skip_unobserved} (and pair_by_heads, thin_edges, \
                         prune_search_few, time_order, defer_resolution) solver={sname}"
                    );
                    v.push((
                        name,
                        Options {
                            combine,
                            coalesce,
                            prune,
                            skip_unobserved,
                            pair_by_heads: skip_unobserved,
                            thin_edges: skip_unobserved,
                            prune_search_few: skip_unobserved,
                            time_order: skip_unobserved,
                            defer_resolution: if skip_unobserved {
                                krait_checker::Defer::Always
                            } else {
                                krait_checker::Defer::Never
                            },
                            count_versions: coalesce,
                            solver,
                            solver_order_phase: phase,
                            solver_theory_propagation: tprop,
                            solver_lazy: lazy,
                            want_order: true,
                            ..Options::default()
                        },
                    ));
                }
            }
        }
    }
    v
}

/// Whether report `rep` of `h` ACCEPTs, after confirming it apart from the checker: an
/// ACCEPT's serial order (asked for with `want_order`) replays, and `krait-verify` confirms the
/// verdict. Panics, naming `name`, when it cannot be confirmed or there is no verdict.
pub fn confirmed(h: &History, rep: &krait_checker::Report, name: &str) -> bool {
    let accept = match &rep.verdict {
        krait_checker::Verdict::Accept => {
            let order = rep.order.as_ref().expect("an order was asked for");
            assert!(
                order_is_valid(h, order),
                "{name}: the order does not replay"
            );
            true
        }
        krait_checker::Verdict::Reject(_) => false,
        krait_checker::Verdict::Unknown { reason } => panic!("{name}: no verdict ({reason})"),
    };
    assert!(verified(h, rep), "{name}: the verdict could not be checked");
    accept
}

/// Replays a serial order and checks every read of an included transaction, that every
/// committed transaction is in it, and session order.
pub fn order_is_valid(h: &History, order: &[u64]) -> bool {
    let mut state: Vec<Option<u64>> = vec![None; h.num_keys()];
    let mut placed = std::collections::HashSet::new();
    for &ext in order {
        let t = h.txn_index[&ext];
        placed.insert(t);
        for o in h.ops(t) {
            let k = h.op_key[o] as usize;
            if !step(h, o, &mut state[k]) {
                return false;
            }
        }
    }
    for t in 0..h.num_txns() as u32 {
        if h.txn_status[t as usize] == TxnStatus::Committed && !placed.contains(&t) {
            return false;
        }
    }
    // Every transaction after the committed ones logged before it in its session.
    let pos: std::collections::HashMap<u64, usize> =
        order.iter().enumerate().map(|(i, &e)| (e, i)).collect();
    for s in 0..h.num_sessions() {
        let mut last_commit: Option<usize> = None;
        for t in h.session_range(s) {
            let Some(&p) = pos.get(&h.txn_ext[t as usize]) else {
                continue;
            };
            if last_commit.is_some_and(|l| l > p) {
                return false;
            }
            if h.txn_status[t as usize] == TxnStatus::Committed {
                last_commit = Some(p);
            }
        }
    }
    true
}

/// Checks a verdict with krait-verify (written apart from the checker): a certificate it
/// refutes fails the test. Returns whether it was confirmed (false: of a kind it cannot check).
pub fn verified(h: &History, rep: &krait_checker::Report) -> bool {
    let v = serde_json::to_value(rep).expect("a report serializes");
    match krait_verify::verify(h, &v) {
        Ok(_) => true,
        Err(krait_verify::Problem::Unsupported(_)) => false,
        Err(p) => panic!(
            "krait-verify refutes the verdict: {p}\nreport: {}\nhistory: {h:#?}",
            serde_json::to_string_pretty(&v).unwrap()
        ),
    }
}

/// A certificate's cycle as (from, kind, to) triples, for exact comparisons.
pub fn cycle_edges(c: &krait_checker::Certificate) -> Vec<(String, String, String)> {
    c.cycle
        .iter()
        .map(|e| (e.from.clone(), e.kind.short().to_string(), e.to.clone()))
        .collect()
}

/// One expected (from, kind, to) edge.
pub fn edge(a: &str, k: &str, b: &str) -> (String, String, String) {
    (a.into(), k.into(), b.into())
}

/// Whether each edge of `cycle` ends where the next begins, and the last where the first begins.
pub fn is_closed(cycle: &[krait_checker::CertEdge]) -> bool {
    cycle.windows(2).all(|w| w[0].to == w[1].from)
        && cycle.first().map(|e| &e.from) == cycle.last().map(|e| &e.to)
}
