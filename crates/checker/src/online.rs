//! Online verification: a history that keeps growing, checked in rounds with bounded memory
//! (the paper's §4: fences, epochs, garbage collection).
//!
//! Input: transactions as they arrive ([`TxnIn`], per session, in session order), then
//! [`Online::round`] whenever a round is due. Output per round: [`RoundStats`], and the verdict
//! once a round finds a violation (the certificate then describes the transactions still held).
//!
//! Each round admits the transactions whose reads name writes already seen (a read of a write
//! not yet seen waits: the writer's session may lag behind), rebuilds the history of the live
//! transactions plus the new ones, adds the facts carried from garbage-collected transactions
//! as known edges, and runs the one-shot pipeline on it. Then it deletes what the paper proves
//! safe to delete:
//! - epochs: fences (read-modify-writes of the fence key) are numbered along their version
//!   chain; a read-only fence takes the number of the version it read; a transaction takes its
//!   session's next fence's number minus one; `agree` is the least number every session that
//!   may still send transactions has reached. Everything still to come has epoch ≥ agree, and
//!   the known graph has a path to it from every transaction with epoch ≤ agree − 2.
//! - frontier: an old (≤ agree − 2) writer is in the frontier unless, for every key it wrote,
//!   the known graph leads from it to another old writer of that key. Future reads may still
//!   name frontier writes; a read naming any other old write closes a cycle.
//! - superseded: old, not in the frontier, and everything with a path to it is old.
//! - deleted: superseded, and in the graph with both sides of every undecided constraint it
//!   lies on no cycle, or only in a strongly connected component of superseded transactions.
//!
//! What deleted transactions knew stays as edges: every path between kept transactions through
//! deleted (or synthetic) nodes becomes a carried edge, through a "hub" node where one node
//! would otherwise fan out to more than `hub_cap` ends. Reads of deleted writes by kept
//! transactions are dropped from later rebuilds: all they implied is already among those edges.

use crate::graph::{self, Csr, EdgeKind, Node};
use crate::{run, Carried, Final, Options, Report, Verdict, HUB};
use krait_history::DELETE_WRITE_ID;
use krait_history::{FxHashMap, HistoryBuilder, KeyId, OpKind, TxnId, TxnStatus};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// A transaction as it arrives.
#[derive(Clone, Debug)]
pub struct TxnIn {
    pub session: u32,
    pub ext: u64,
    pub status: TxnStatus,
    pub start: u64,
    pub commit: u64,
    pub ops: Vec<(OpKind, KeyId, u64)>,
    /// (op index, list) of list-append reads: the op reads the list's last element.
    pub lists: Vec<(u32, Vec<u64>)>,
    /// Cobra's claims per op: (value hash, named writer txn); empty when the format has none.
    pub claims: Vec<(u64, u64)>,
}

impl TxnIn {
    /// Every (key, value) a read needs a write of: read values and list elements.
    fn needs(&self) -> impl Iterator<Item = (KeyId, u64)> + '_ {
        let reads = self
            .ops
            .iter()
            .filter(|o| o.0 == OpKind::Read)
            .map(|o| (o.1, o.2));
        let elements = self.lists.iter().flat_map(move |(i, l)| {
            let k = self.ops[*i as usize].1;
            l.iter().map(move |&v| (k, v))
        });
        reads.chain(elements)
    }
}

#[derive(Clone, Debug)]
pub struct OnlineOptions {
    pub check: Options,
    /// Garbage collection (off: every transaction stays, each round re-checks everything).
    pub gc: bool,
    /// A synthetic or deleted node reaching more kept nodes than this becomes a hub.
    pub hub_cap: usize,
    /// Nodes a frontier search may visit before it gives up (and keeps the writer); used only
    /// when the reachability index would not fit in `check.reach_memory_cap`.
    pub frontier_limit: usize,
    /// Reduce carried edges to a transitive reduction (off: carry every path's ends).
    pub reduce: bool,
    /// Let a frontier writer that is its keys' only possible latest version become their
    /// initial version, and go (off: frontier writers stay until overwritten).
    pub fold: bool,
    /// Largest node count for which carried edges are reduced (bitsets: n² bits).
    pub reduce_cap: usize,
    /// Admit at most this many transactions a round (0: no limit), drawn from the sessions in
    /// turn; a reader is admitted only with the writers it names.
    pub max_admit: usize,
    /// Watch mode: how long a read may name a write no log holds (besides two full sweeps of
    /// the logs) before it is rejected; logs written with buffering can lag this much.
    pub read_wait: Duration,
}

impl Default for OnlineOptions {
    fn default() -> Self {
        OnlineOptions {
            check: Options::default(),
            gc: true,
            hub_cap: 8,
            frontier_limit: 64,
            reduce: true,
            fold: true,
            reduce_cap: 40_000,
            max_admit: 0,
            read_wait: Duration::from_secs(10),
        }
    }
}

/// What one round did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct RoundStats {
    pub round: u64,
    /// Transactions admitted this round.
    pub new: usize,
    /// Transactions read but not admitted (their reads name writes not seen yet).
    pub waiting: usize,
    /// Transactions in this round's graph (live before deletion, plus new).
    pub checked: usize,
    /// Transactions held after this round's garbage collection.
    pub live: usize,
    pub deleted: usize,
    pub deleted_total: u64,
    pub constraints: usize,
    pub constraints_after_prune: usize,
    pub carried_edges: usize,
    pub hubs: u32,
    /// Keys whose initial version now stands for a deleted frontier writer's value.
    pub folded_keys: usize,
    pub epoch_agree: u32,
    /// Whole round; of it, the check of the round's graph, and garbage collection.
    #[serde(serialize_with = "ser_ms")]
    pub time: Duration,
    #[serde(serialize_with = "ser_ms")]
    pub check_time: Duration,
    #[serde(serialize_with = "ser_ms")]
    pub gc_time: Duration,
}

fn ser_ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1e3)
}

/// Errors about the input stream, not the verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OnlineError {
    DuplicateWrite { txn: u64, key: String, value: u64 },
    DuplicateTxn { txn: u64 },
    LateSession { name: String },
    ListsAfterGc { txn: u64 },
    Check(crate::CheckError),
}

impl std::fmt::Display for OnlineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OnlineError::DuplicateWrite { txn, key, value } => write!(
                f,
                "transaction {txn} writes key {key:?} with value {value}, which another transaction already wrote (written values must be unique per key)"
            ),
            OnlineError::DuplicateTxn { txn } => write!(f, "transaction id {txn} is used twice"),
            OnlineError::LateSession { name } => write!(
                f,
                "session {name} appeared after transactions were garbage-collected; the epoch guarantee needs every session from the start (start watching before the clients, or use --no-gc)"
            ),
            OnlineError::ListsAfterGc { txn } => write!(
                f,
                "transaction {txn} has a list-append read, but transactions were already garbage-collected and a list needs its key's whole version order (check with --no-gc)"
            ),
            OnlineError::Check(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for OnlineError {}

const NONE: u32 = u32::MAX;
/// How many deleted writes are remembered for stale-read certificates (about 10 MB).
const DELETED_MEMORY: usize = 1 << 18;

struct Live {
    t: TxnIn,
    /// Op indices of reads whose writer was deleted (left out of later rebuilds).
    ghost: Vec<u32>,
    /// An unknown outcome that an earlier round found read: it committed, at a time unknown.
    read_unknown: bool,
    epoch: u32,
    fence: bool,
}

struct Queued {
    t: TxnIn,
    seq: u64,
    sweep: u64,
    seen_at: Instant,
}

struct Sess {
    name: String,
    live: Vec<u32>,
    queue: VecDeque<Queued>,
    /// The highest epoch of an admitted fence (NONE: none yet).
    max_fence: u32,
    /// Admitted transactions since the last fence, waiting for the next fence's epoch.
    unassigned: Vec<u32>,
    closed: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Writer {
    Live(u32),
    Queued(u64),
}

pub struct Online {
    pub opts: OnlineOptions,
    keys: Vec<String>,
    key_index: FxHashMap<String, KeyId>,
    fence_key: Option<KeyId>,
    slab: Vec<Option<Live>>,
    free: Vec<u32>,
    live_count: usize,
    sessions: Vec<Sess>,
    session_index: FxHashMap<String, u32>,
    writes: FxHashMap<(KeyId, u64), Writer>,
    /// Fence-key value written by a live fence → that fence's epoch.
    fence_epoch: FxHashMap<u64, u32>,
    carried: Vec<(u32, u32)>,
    hubs: u32,
    seq: u64,
    sweep: u64,
    round: u64,
    deleted_total: u64,
    /// Writes seen in records still being written (watch mode): reads of them are not overdue.
    provisional: std::collections::HashSet<(KeyId, u64)>,
    verdict: Option<Report>,
    cobra_claims: bool,
    /// External ids superseded and deleted by the last garbage collection (for tests).
    pub last_superseded: Vec<u64>,
    pub last_deleted: Vec<u64>,
    /// Commit times (ns, as logged) of the transactions the last round admitted, so a caller
    /// can measure how far behind the commits verification runs.
    pub last_admitted_commits: Vec<u64>,
    /// Writes of recently deleted transactions → (writer, round), so that a later read of one
    /// is rejected at once as stale (older ones fall out: such a read then waits for a writer
    /// that never comes, and is rejected when the logs end).
    deleted_writes: FxHashMap<(KeyId, u64), (u64, u64)>,
    deleted_fifo: VecDeque<(KeyId, u64)>,
    /// Committed fences whose epoch could not be found yet, with their sessions and the
    /// transactions before them waiting for it.
    pending_fences: Vec<(u32, u32, Vec<u32>)>,
    /// Per key, the value (and writer) that stands for its initial version from now on.
    init_value: FxHashMap<KeyId, (u64, u64)>,
    /// Collect nothing until this many sessions are known (watch mode: sessions announce
    /// themselves with their first transaction).
    pub min_sessions: usize,
    /// Collect nothing while set (watch mode: a log file has not named its session yet).
    pub hold_gc: bool,
    /// A list-append read was admitted: its whole list pins the key's version order from the
    /// initial version on, which the deleted prefix no longer shows, so nothing is collected.
    lists_seen: bool,
}

impl Online {
    pub fn new(opts: OnlineOptions) -> Online {
        Online {
            opts,
            keys: Vec::new(),
            key_index: FxHashMap::default(),
            fence_key: None,
            slab: Vec::new(),
            free: Vec::new(),
            live_count: 0,
            sessions: Vec::new(),
            session_index: FxHashMap::default(),
            writes: FxHashMap::default(),
            fence_epoch: FxHashMap::default(),
            carried: Vec::new(),
            hubs: 0,
            seq: 0,
            sweep: 0,
            round: 0,
            deleted_total: 0,
            provisional: Default::default(),
            verdict: None,
            cobra_claims: false,
            last_superseded: Vec::new(),
            last_deleted: Vec::new(),
            min_sessions: 0,
            hold_gc: false,
            lists_seen: false,
            last_admitted_commits: Vec::new(),
            pending_fences: Vec::new(),
            deleted_writes: FxHashMap::default(),
            deleted_fifo: VecDeque::new(),
            init_value: FxHashMap::default(),
        }
    }

    /// Interns a key name. The collector's fence key is recognised by name.
    pub fn key(&mut self, name: &str) -> KeyId {
        if let Some(&k) = self.key_index.get(name) {
            return k;
        }
        let k = self.keys.len() as KeyId;
        self.keys.push(name.to_string());
        self.key_index.insert(name.to_string(), k);
        if name == krait_history::NATIVE_FENCE_KEY {
            self.fence_key = Some(k);
        }
        k
    }
    pub fn key_name(&self, k: KeyId) -> &str {
        &self.keys[k as usize]
    }
    pub fn set_fence_key(&mut self, k: KeyId) {
        self.fence_key = Some(k);
    }
    /// Histories from Cobra's logs carry claims per op (see [`TxnIn::claims`]).
    pub fn set_cobra_claims(&mut self, on: bool) {
        self.cobra_claims = on;
    }

    /// Registers (or finds) a session. A new session after garbage collection began is an
    /// error: its early transactions could have epochs below what was assumed.
    pub fn session(&mut self, name: &str) -> Result<u32, OnlineError> {
        if let Some(&s) = self.session_index.get(name) {
            return Ok(s);
        }
        if self.deleted_total > 0 {
            return Err(OnlineError::LateSession {
                name: name.to_string(),
            });
        }
        let s = self.sessions.len() as u32;
        self.sessions.push(Sess {
            name: name.to_string(),
            live: Vec::new(),
            queue: VecDeque::new(),
            max_fence: NONE,
            unassigned: Vec::new(),
            closed: false,
        });
        self.session_index.insert(name.to_string(), s);
        Ok(s)
    }

    /// No more transactions will come from this session.
    pub fn close_session(&mut self, s: u32) {
        self.sessions[s as usize].closed = true;
    }

    pub fn push(&mut self, t: TxnIn) -> Result<(), OnlineError> {
        self.seq += 1;
        if !t.lists.is_empty() {
            if self.deleted_total > 0 {
                return Err(OnlineError::ListsAfterGc { txn: t.ext });
            }
            self.lists_seen = true;
        }
        for &(kind, k, v) in &t.ops {
            if self.indexed_write(kind, v) {
                if self.writes.contains_key(&(k, v)) {
                    return Err(OnlineError::DuplicateWrite {
                        txn: t.ext,
                        key: self.keys[k as usize].clone(),
                        value: v,
                    });
                }
                self.writes.insert((k, v), Writer::Queued(self.seq));
            }
        }
        let q = Queued {
            t,
            seq: self.seq,
            sweep: self.sweep,
            seen_at: Instant::now(),
        };
        self.sessions[q.t.session as usize].queue.push_back(q);
        Ok(())
    }

    /// Watch mode: every log has been read to its end once more. A read that still names no
    /// write seen after two such sweeps and `read_wait` (and no write of a record still being
    /// written) names a write nobody made: it is admitted, and rejected.
    pub fn next_sweep(&mut self, provisional: std::collections::HashSet<(KeyId, u64)>) {
        self.sweep += 1;
        self.provisional = provisional;
    }

    pub fn live(&self) -> usize {
        self.live_count
    }
    pub fn waiting(&self) -> usize {
        self.sessions.iter().map(|s| s.queue.len()).sum()
    }
    pub fn deleted_total(&self) -> u64 {
        self.deleted_total
    }
    /// Keys whose latest old version stands in for their initial one.
    pub fn folded_keys(&self) -> usize {
        self.init_value.len()
    }
    pub fn rounds(&self) -> u64 {
        self.round
    }
    /// The report of the round that found a violation (or ran out of budget), if any.
    pub fn verdict(&self) -> Option<&Report> {
        self.verdict.as_ref()
    }

    /// Admits everything still waiting and runs the last rounds.
    pub fn finish(&mut self) -> Result<Vec<RoundStats>, OnlineError> {
        for s in &mut self.sessions {
            s.closed = true;
        }
        let mut out = Vec::new();
        while let Some(st) = self.round_inner(true)? {
            out.push(st);
        }
        Ok(out)
    }

    /// Runs a round over what has arrived; None when nothing could be admitted or a verdict
    /// other than ACCEPT has already been reached.
    pub fn round(&mut self) -> Result<Option<RoundStats>, OnlineError> {
        self.round_inner(false)
    }

    fn blocked_set(&self, force: bool) -> std::collections::HashSet<u64> {
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
    fn admission(&self, blocked: &std::collections::HashSet<u64>) -> Vec<usize> {
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

    fn alloc(&mut self, l: Live) -> u32 {
        self.live_count += 1;
        match self.free.pop() {
            Some(i) => {
                self.slab[i as usize] = Some(l);
                i
            }
            None => {
                self.slab.push(Some(l));
                self.slab.len() as u32 - 1
            }
        }
    }

    fn is_fence_txn(&self, t: &TxnIn) -> bool {
        match (self.fence_key, t.ops.first()) {
            (Some(fk), Some(&(kind, k, _))) => k == fk && kind != OpKind::Write,
            _ => false,
        }
    }

    fn agree(&self) -> u32 {
        if self.hold_gc || self.sessions.len() < self.min_sessions {
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

    fn round_inner(&mut self, force: bool) -> Result<Option<RoundStats>, OnlineError> {
        if self.verdict.is_some() {
            return Ok(None);
        }
        let t0 = Instant::now();
        let blocked = self.blocked_set(force);
        let waiting_before = self.waiting();
        if waiting_before == blocked.len() {
            return Ok(None);
        }
        self.round += 1;
        let take = self.admission(&blocked);
        self.last_admitted_commits.clear();
        // Admit, in session order.
        let mut admitted_fences: Vec<u32> = Vec::new();
        let mut new_ids: Vec<Vec<u32>> = vec![Vec::new(); self.sessions.len()];
        let mut new = 0;
        for si in 0..self.sessions.len() {
            for _ in 0..take[si] {
                let q = self.sessions[si].queue.pop_front().unwrap();
                if q.t.commit != krait_history::NO_TIME {
                    self.last_admitted_commits.push(q.t.commit);
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
        self.assign_epochs(&admitted_fences, &new_ids);

        // The round's history: live transactions, session by session.
        let mut b = HistoryBuilder::new().with_keys(self.keys.clone());
        if self.cobra_claims {
            b = b.with_cobra_claims();
        }
        if let Some(fk) = self.fence_key {
            b.set_fence_key(fk);
        }
        let mut txn_slab: Vec<u32> = Vec::with_capacity(self.live_count);
        let mut committed_unknown: Vec<TxnId> = Vec::new();
        let mut slab_txn: Vec<u32> = vec![NONE; self.slab.len()];
        for s in &self.sessions {
            b.begin_session(s.name.clone());
            for &id in &s.live {
                let l = self.slab[id as usize].as_ref().unwrap();
                for (i, &(kind, k, v)) in l.t.ops.iter().enumerate() {
                    if l.ghost.binary_search(&(i as u32)).is_ok() {
                        continue;
                    }
                    if self.indexed_write(kind, v) {
                        // Duplicates were refused on arrival.
                        let _ = b.op(kind, k, v);
                    } else if kind == OpKind::Read
                        && !self.writes.contains_key(&(k, v))
                        && self.is_init_value(k, v)
                    {
                        b.op_unindexed(OpKind::ReadInit, k, 0);
                    } else {
                        b.op_unindexed(kind, k, v);
                    }
                    if let Some((_, list)) = l.t.lists.iter().find(|x| x.0 as usize == i) {
                        b.list(list);
                    }
                    if self.cobra_claims {
                        let (vh, w) = l.t.claims.get(i).copied().unwrap_or((0, 0));
                        b.cobra_claim(vh, w);
                    }
                }
                let t = b
                    .finish_txn(l.t.ext, l.t.status, l.t.start, l.t.commit)
                    .map_err(|_| OnlineError::DuplicateTxn { txn: l.t.ext })?;
                slab_txn[id as usize] = t;
                txn_slab.push(id);
                if l.read_unknown {
                    committed_unknown.push(t);
                }
            }
        }
        let h = b.finish();
        if let Some(cert) = self.stale_read(&h, &new_ids, &slab_txn) {
            self.verdict = Some(Report {
                verdict: Verdict::Reject(Box::new(cert)),
                stats: Default::default(),
                timings: Default::default(),
                order: None,
            });
            return Ok(Some(RoundStats {
                round: self.round,
                new,
                checked: h.num_txns(),
                live: self.live_count,
                waiting: self.waiting(),
                time: t0.elapsed(),
                ..Default::default()
            }));
        }
        let carried = Carried {
            committed_unknown,
            hubs: self.hubs,
            edges: self
                .carried
                .iter()
                .map(|&(u, v)| {
                    let m = |x: u32| {
                        if x & HUB != 0 {
                            x
                        } else {
                            slab_txn[x as usize]
                        }
                    };
                    (m(u), m(v))
                })
                .collect(),
        };
        let checked = h.num_txns();
        let t_build = t0.elapsed();
        let (report, fin) =
            run(&h, &self.opts.check, Some(&carried), self.opts.gc).map_err(OnlineError::Check)?;
        drop(carried);
        let mut st = RoundStats {
            round: self.round,
            new,
            checked,
            constraints: report.stats.constraints,
            constraints_after_prune: report.stats.constraints_after_prune,
            ..Default::default()
        };
        if !matches!(report.verdict, Verdict::Accept) {
            self.verdict = Some(report);
            st.live = self.live_count;
            st.waiting = self.waiting();
            st.time = t0.elapsed();
            return Ok(Some(st));
        }
        // Unknown-outcome transactions someone read from have committed: keep them in, still
        // without a commit point in their session (their readers may be collected later).
        for (t, &id) in txn_slab.iter().enumerate() {
            let l = self.slab[id as usize].as_mut().unwrap();
            if l.t.status == TxnStatus::Unknown
                && fin.as_ref().is_some_and(|f| f.b.txn_node[t] != NONE)
            {
                l.read_unknown = true;
            }
        }
        let agree = self.agree();
        st.epoch_agree = agree;
        let t_check = t0.elapsed();
        if let Some(fin) = fin {
            // Below 2 nothing is old, nothing was ever deleted, and nothing needs carrying.
            if agree >= 2 && !self.lists_seen {
                st.deleted = self.collect(&fin, &txn_slab, agree);
            }
        }
        st.check_time = t_check - t_build;
        st.gc_time = t0.elapsed() - t_check;
        self.deleted_total += st.deleted as u64;
        st.deleted_total = self.deleted_total;
        st.live = self.live_count;
        st.waiting = self.waiting();
        st.carried_edges = self.carried.len();
        st.folded_keys = self.init_value.len();
        st.hubs = self.hubs;
        st.time = t0.elapsed();
        Ok(Some(st))
    }

    fn assign_epochs(&mut self, fences: &[u32], new_ids: &[Vec<u32>]) {
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
    fn settle(&mut self, si: u32, e: u32, un: &[u32]) {
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

    /// Garbage collection after an accepted round; returns how many transactions it deleted.
    fn collect(&mut self, fin: &Final, txn_slab: &[u32], agree: u32) -> usize {
        let b = &fin.b;
        let n = b.num_nodes;
        let old_epoch = |e: u32| e != NONE && e <= agree - 2;
        let slab_of = |x: Node| -> Option<u32> { b.txn_of(x).map(|t| txn_slab[t as usize]) };
        let csr = Csr::build(n, &b.edges, false);
        let order = graph::topo_order(n, &csr).expect("an accepted round's known graph is acyclic");
        let mut old = vec![false; n];
        for x in 0..n as Node {
            if let Some(id) = slab_of(x) {
                old[x as usize] = old_epoch(self.slab[id as usize].as_ref().unwrap().epoch);
            }
        }
        // Everything with a path to the node is old.
        let mut anc_ok: Vec<bool> = (0..n as Node)
            .map(|x| b.txn_of(x).is_none() || old[x as usize])
            .collect();

        for &u in &order {
            if !anc_ok[u as usize] {
                for &(v, _) in csr.succ(u) {
                    anc_ok[v as usize] = false;
                }
            }
        }
        let mut pos = vec![0u32; n];
        for (i, &x) in order.iter().enumerate() {
            pos[x as usize] = i as u32;
        }
        // Old writes, and per key the old writer last in topological order: nothing old can
        // follow it, so it is in the frontier without a search.
        let mut old_writes: krait_history::FxHashSet<(KeyId, Node)> = Default::default();
        let mut last_writer: FxHashMap<KeyId, Node> = FxHashMap::default();
        let mut writers_of: FxHashMap<KeyId, Vec<Node>> = FxHashMap::default();
        let mut young_writers: FxHashMap<KeyId, Vec<Node>> = FxHashMap::default();
        for x in 0..n as Node {
            if !old[x as usize] {
                if let Some(id) = slab_of(x) {
                    let l = self.slab[id as usize].as_ref().unwrap();
                    for o in l.t.ops.iter().filter(|o| o.0 == OpKind::Write) {
                        young_writers.entry(o.1).or_default().push(x);
                    }
                }
                continue;
            }
            let l = self.slab[slab_of(x).unwrap() as usize].as_ref().unwrap();
            for o in l.t.ops.iter().filter(|o| o.0 == OpKind::Write) {
                if old_writes.insert((o.1, x)) {
                    writers_of.entry(o.1).or_default().push(x);
                }
                let e = last_writer.entry(o.1).or_insert(x);
                if pos[x as usize] > pos[*e as usize] {
                    *e = x;
                }
            }
        }
        // Reachability to transactions (all on session chains) in O(1), when it fits.
        let reach = (graph::ChainReach::memory_needed(n, b.num_chains)
            <= self.opts.check.reach_memory_cap)
            .then(|| graph::ChainReach::build(n, b.num_chains, b.chain_of.clone(), &csr, &order));
        let mut superseded = vec![false; n];
        let mut frontier_keys: Vec<(Node, Vec<KeyId>)> = Vec::new();
        let mut seen = vec![0u32; n];
        let mut stamp = 0u32;
        let mut stack: Vec<Node> = Vec::new();
        for x in 0..n as Node {
            if !(old[x as usize] && anc_ok[x as usize]) {
                continue;
            }
            let id = slab_of(x).unwrap();
            let l = self.slab[id as usize].as_ref().unwrap();
            let mut keys: Vec<KeyId> =
                l.t.ops
                    .iter()
                    .filter(|o| o.0 == OpKind::Write)
                    .map(|o| o.1)
                    .collect();
            keys.sort_unstable();
            keys.dedup();
            // The last old writer of a key is in its frontier without a search.
            let mut uncovered: Vec<KeyId> = keys
                .iter()
                .copied()
                .filter(|k| last_writer.get(k) == Some(&x))
                .collect();
            if !uncovered.is_empty() && !self.opts.fold {
                continue;
            }
            for &k in keys.iter().filter(|k| last_writer.get(k) != Some(&x)) {
                let covered = match &reach {
                    // Exactly: does x reach an old writer of the key placed after it?
                    Some(cr) => writers_of[&k].iter().any(|&y| {
                        y != x && pos[y as usize] > pos[x as usize] && cr.reaches_chained(x, y)
                    }),
                    // Without the index: a bounded search along the key's own edges (chains,
                    // version order, anti-dependencies); giving up keeps the writer, which is
                    // safe.
                    None => {
                        stamp += 1;
                        stack.clear();
                        stack.push(x);
                        seen[x as usize] = stamp;
                        let mut visited = 0;
                        let mut found = false;
                        'dfs: while let Some(u) = stack.pop() {
                            for &(v, e) in csr.succ(u) {
                                if b.labels[e as usize].key != k
                                    || seen[v as usize] == stamp
                                    || pos[v as usize] > pos[last_writer[&k] as usize]
                                {
                                    continue;
                                }
                                seen[v as usize] = stamp;
                                if old_writes.contains(&(k, v)) {
                                    found = true;
                                    break 'dfs;
                                }
                                visited += 1;
                                if visited > self.opts.frontier_limit {
                                    break 'dfs;
                                }
                                stack.push(v);
                            }
                        }
                        found
                    }
                };
                if !covered {
                    uncovered.push(k);
                }
            }
            superseded[x as usize] = uncovered.is_empty();
            if !uncovered.is_empty() {
                frontier_keys.push((x, uncovered));
            }
        }

        // Cycles that undecided constraints could still close.
        let gcsr = crate::with_both_sides(b, &fin.remaining);
        let (comp, ncomp) = graph::scc(n, &gcsr);
        let mut size = vec![0u32; ncomp as usize];
        let mut all_sup = vec![true; ncomp as usize];
        for x in 0..n {
            size[comp[x] as usize] += 1;
            if b.txn_of(x as Node).is_some() && !superseded[x] {
                all_sup[comp[x] as usize] = false;
            }
        }
        let mut deleted = vec![false; n];
        let mut count = 0;
        for x in 0..n {
            let c = comp[x] as usize;
            if superseded[x] && (size[c] == 1 || all_sup[c]) {
                deleted[x] = true;
            }
        }
        // A frontier writer that is the only possible latest version of its frontier keys
        // (every other old writer of the key reaches it and goes now, every younger writer
        // follows it) is the key's initial version for everything to come: keep the value,
        // delete the transaction.
        let mut folds: Vec<(KeyId, u64, u64)> = Vec::new();
        if let (true, Some(cr)) = (self.opts.fold, &reach) {
            let unknown_writes: krait_history::FxHashSet<KeyId> = txn_slab
                .iter()
                .enumerate()
                .filter(|&(t, _)| b.txn_node[t] == NONE)
                .flat_map(|(_, &id)| {
                    let l = self.slab[id as usize].as_ref().unwrap();
                    let unknown = l.t.status == TxnStatus::Unknown;
                    l.t.ops
                        .iter()
                        .filter(move |o| unknown && o.0 == OpKind::Write)
                        .map(|o| o.1)
                })
                .collect();
            for (x, keys) in &frontier_keys {
                let x = *x;
                if size[comp[x as usize] as usize] != 1 {
                    continue;
                }
                let ok = keys.iter().all(|k| {
                    Some(*k) != self.fence_key
                        && !unknown_writes.contains(k)
                        && writers_of[k]
                            .iter()
                            .all(|&y| y == x || (deleted[y as usize] && cr.reaches_chained(y, x)))
                        && young_writers
                            .get(k)
                            .is_none_or(|ys| ys.iter().all(|&y| cr.reaches_chained(x, y)))
                });
                if !ok {
                    continue;
                }
                deleted[x as usize] = true;
                let l = self.slab[slab_of(x).unwrap() as usize].as_ref().unwrap();
                for &k in keys {
                    let v =
                        l.t.ops
                            .iter()
                            .rev()
                            .find(|o| o.0 == OpKind::Write && o.1 == k);
                    folds.push((k, v.unwrap().2, l.t.ext));
                }
            }
        }
        self.carry(fin, txn_slab, &deleted, &csr, &order);
        self.last_superseded.clear();
        self.last_deleted.clear();
        for x in 0..n {
            if superseded[x] || deleted[x] {
                let id = slab_of(x as Node).unwrap();
                let ext = self.slab[id as usize].as_ref().unwrap().t.ext;
                if superseded[x] {
                    self.last_superseded.push(ext);
                }
                if deleted[x] {
                    self.last_deleted.push(ext);
                }
            }
        }
        let folded: krait_history::FxHashSet<(KeyId, u64)> =
            folds.iter().map(|&(k, v, _)| (k, v)).collect();
        let mut gone: Vec<u32> = Vec::new();
        for x in 0..n {
            if deleted[x] {
                gone.push(slab_of(x as Node).unwrap());
            }
        }
        // Old aborted transactions: nobody may read them, and they are in no graph.
        for (t, &id) in txn_slab.iter().enumerate() {
            let l = self.slab[id as usize].as_ref().unwrap();
            if b.txn_node[t] == NONE && l.t.status == TxnStatus::Aborted && old_epoch(l.epoch) {
                gone.push(id);
            }
        }
        for &id in &gone {
            let l = self.slab[id as usize].take().unwrap();
            for &(kind, k, v) in &l.t.ops {
                if kind == OpKind::Write {
                    // Reads of aborted writes are G1a, not stale: they just find no writer.
                    if self.writes.remove(&(k, v)).is_some()
                        && l.t.status != TxnStatus::Aborted
                        && !folded.contains(&(k, v))
                    {
                        self.remember_deleted(k, v, l.t.ext);
                    }
                    if Some(k) == self.fence_key {
                        self.fence_epoch.remove(&v);
                    }
                }
            }
            self.free.push(id);
            self.live_count -= 1;
            count += 1;
        }
        for &(k, v, ext) in &folds {
            if let Some((old, old_ext)) = self.init_value.insert(k, (v, ext)) {
                self.remember_deleted(k, old, old_ext);
            }
        }
        if count > 0 {
            for s in &mut self.sessions {
                let slab = &self.slab;
                s.live.retain(|&id| slab[id as usize].is_some());
                s.unassigned.retain(|&id| slab[id as usize].is_some());
            }
            // Reads of deleted writes: what they implied is now carried.
            for i in 0..self.slab.len() {
                let Some(l) = self.slab[i].as_ref() else {
                    continue;
                };
                let mut add = Vec::new();
                for (j, &(kind, k, v)) in l.t.ops.iter().enumerate() {
                    if kind == OpKind::Read
                        && !self.writes.contains_key(&(k, v))
                        && l.ghost.binary_search(&(j as u32)).is_err()
                    {
                        add.push(j as u32);
                    }
                }
                if !add.is_empty() {
                    let l = self.slab[i].as_mut().unwrap();
                    l.ghost.extend(add);
                    l.ghost.sort_unstable();
                }
            }
        }
        count
    }

    fn remember_deleted(&mut self, k: KeyId, v: u64, writer: u64) {
        self.deleted_writes.insert((k, v), (writer, self.round));
        self.deleted_fifo.push_back((k, v));
        if self.deleted_fifo.len() > DELETED_MEMORY {
            let old = self.deleted_fifo.pop_front().unwrap();
            self.deleted_writes.remove(&old);
        }
    }

    /// Whether this op enters the write index (Cobra's deletes all share one id: they do not).
    fn indexed_write(&self, kind: OpKind, v: u64) -> bool {
        kind == OpKind::Write && !(self.cobra_claims && v == DELETE_WRITE_ID)
    }

    /// Whether (k, v) is the version a deleted frontier writer left as k's initial one.
    fn is_init_value(&self, k: KeyId, v: u64) -> bool {
        self.init_value.get(&k).is_some_and(|e| e.0 == v)
    }

    /// A newly admitted read of a write that an earlier round deleted.
    fn stale_read(
        &self,
        h: &krait_history::History,
        new_ids: &[Vec<u32>],
        slab_txn: &[u32],
    ) -> Option<crate::Certificate> {
        for &id in new_ids.iter().flatten() {
            let l = self.slab[id as usize].as_ref().unwrap();
            // Aborted reads mean nothing; an unknown outcome's only if someone read from it,
            // which the round's check decides.
            if l.t.status != TxnStatus::Committed {
                continue;
            }
            for &(kind, k, v) in &l.t.ops {
                let key = &self.keys[k as usize];
                let (writer, round, what) = match kind {
                    // The true initial state, after a later write became the key's initial
                    // version: stale too.
                    OpKind::ReadInit => match self.init_value.get(&k) {
                        Some(&(_, w)) => (w, None, format!("the initial version of {key}")),
                        None => continue,
                    },
                    OpKind::Read
                        if !self.writes.contains_key(&(k, v)) && !self.is_init_value(k, v) =>
                    {
                        match self.deleted_writes.get(&(k, v)) {
                            Some(&(w, r)) => (w, Some(r), format!("{key} = {v}")),
                            None => continue,
                        }
                    }
                    _ => continue,
                };
                let summary = match round {
                    None => format!(
                        "T{} read {what}, but T{writer} had overwritten it and precedes every transaction still to come (the fences' epochs), so T{} read a version already overwritten before it began: a stale read",
                        l.t.ext, l.t.ext
                    ),
                    Some(round) => format!(
                        "T{} read {what}, written by T{writer}, which round {round} garbage-collected as superseded: an old write of {key} was known to follow T{writer}'s, and every old transaction precedes all transactions still to come (the fences' epochs), so T{} read a version already overwritten before it began",
                        l.t.ext, l.t.ext
                    ),
                };
                let r = krait_history::resolve(h);
                let t = slab_txn[id as usize];
                return Some(crate::Certificate {
                    anomaly: crate::Anomaly::StaleRead,
                    summary,
                    cycle: Vec::new(),
                    constraints: Vec::new(),
                    cases: Vec::new(),
                    txns: vec![crate::cert::describe_txn(h, &r, t)],
                });
            }
        }
        None
    }

    /// Whether the transaction with this external id is held.
    pub fn is_live(&self, ext: u64) -> bool {
        self.slab.iter().flatten().any(|l| l.t.ext == ext)
    }

    /// Drops carried edges that other edges of the next round already imply (a transitive
    /// reduction of what is carried). Reachability over the next round's nodes is computed
    /// exactly with bitsets, in reverse topological order; above a size cap nothing is dropped.
    fn reduce(
        &self,
        n: usize,
        order: &[Node],
        cedges: Vec<(Node, Node)>,
        rebuilt: &[(Node, Node)],
    ) -> Vec<(Node, Node)> {
        let mut idx = vec![u32::MAX; n];
        for &(u, v) in cedges.iter().chain(rebuilt) {
            idx[u as usize] = 0;
            idx[v as usize] = 0;
        }
        let mut m = 0u32;
        for &x in order {
            if idx[x as usize] == 0 {
                idx[x as usize] = m;
                m += 1;
            }
        }
        let m = m as usize;
        if !self.opts.reduce || m > self.opts.reduce_cap {
            return cedges;
        }
        // (source, target, carried edge index or MAX), by source, targets in topological order.
        let mut all: Vec<(u32, u32, u32)> = cedges
            .iter()
            .enumerate()
            .map(|(i, &(u, v))| (idx[u as usize], idx[v as usize], i as u32))
            .collect();
        all.extend(
            rebuilt
                .iter()
                .map(|&(u, v)| (idx[u as usize], idx[v as usize], u32::MAX)),
        );
        all.sort_unstable();
        let words = m.div_ceil(64);
        let mut reach = vec![0u64; m * words];
        let mut keep = vec![true; cedges.len()];
        let mut end = all.len();
        for u in (0..m).rev() {
            let start = all[..end].partition_point(|e| (e.0 as usize) < u);
            let (lo, hi) = reach.split_at_mut((u + 1) * words);
            let row = &mut lo[u * words..];
            for &(_, v, ci) in &all[start..end] {
                let v = v as usize;
                if row[v / 64] >> (v % 64) & 1 == 1 {
                    if ci != u32::MAX {
                        keep[ci as usize] = false;
                    }
                    continue;
                }
                let vrow = &hi[(v - u - 1) * words..(v - u) * words];
                for (a, b) in row.iter_mut().zip(vrow) {
                    *a |= b;
                }
                row[v / 64] |= 1 << (v % 64);
            }
            end = start;
        }
        cedges
            .into_iter()
            .zip(keep)
            .filter_map(|(e, k)| k.then_some(e))
            .collect()
    }

    /// Contracts the graph (`csr`, in topological `order`) onto the transactions kept: the
    /// carried edges for the next round.
    fn carry(
        &mut self,
        fin: &Final,
        txn_slab: &[u32],
        deleted: &[bool],
        csr: &Csr,
        order: &[Node],
    ) {
        let b = &fin.b;
        let n = b.num_nodes;
        let kept = |x: Node| b.txn_of(x).is_some() && !deleted[x as usize];
        const NOT_HUB: u32 = u32::MAX;
        let mut hub_of = vec![NOT_HUB; n];
        let mut hubs = 0u32;
        let mut outs: Vec<Vec<Node>> = vec![Vec::new(); n];
        let cap = self.opts.hub_cap;
        for &x in order.iter().rev() {
            if kept(x) || x == crate::build::INIT {
                continue;
            }
            let mut set: Vec<Node> = Vec::new();
            for &(y, _) in csr.succ(x) {
                if kept(y) || hub_of[y as usize] != NOT_HUB {
                    set.push(y);
                } else {
                    set.extend_from_slice(&outs[y as usize]);
                }
            }
            set.sort_unstable();
            set.dedup();
            if set.len() > cap {
                hub_of[x as usize] = hubs;
                hubs += 1;
            }
            outs[x as usize] = set;
        }
        let name = |x: Node| -> u32 {
            if hub_of[x as usize] != NOT_HUB {
                HUB | hub_of[x as usize]
            } else {
                txn_slab[b.txn_of(x).unwrap() as usize]
            }
        };
        // Node-space edges of the next round: those to carry, and those rebuilt anyway.
        let mut cedges: Vec<(Node, Node)> = Vec::new();
        let mut rebuilt: Vec<(Node, Node)> = Vec::new();
        for x in 0..n as Node {
            if !(kept(x) || hub_of[x as usize] != NOT_HUB) {
                continue;
            }
            let from_hub = hub_of[x as usize] != NOT_HUB;
            for &(y, e) in csr.succ(x) {
                if kept(y) || hub_of[y as usize] != NOT_HUB {
                    let kind = b.labels[e as usize].kind;
                    if !from_hub && kept(y) && matches!(kind, EdgeKind::Session | EdgeKind::Wr) {
                        rebuilt.push((x, y));
                    } else {
                        cedges.push((x, y));
                    }
                } else {
                    for &z in &outs[y as usize] {
                        cedges.push((x, z));
                    }
                }
            }
        }
        cedges.sort_unstable();
        cedges.dedup();
        let cedges = self.reduce(n, order, cedges, &rebuilt);
        let mut edges: Vec<(u32, u32)> = cedges.iter().map(|&(u, v)| (name(u), name(v))).collect();
        edges.sort_unstable();
        edges.dedup();
        // Hubs nobody reaches carry nothing.
        loop {
            let mut indeg = vec![0u32; hubs as usize];
            for &(_, v) in &edges {
                if v & HUB != 0 {
                    indeg[(v & !HUB) as usize] += 1;
                }
            }
            let before = edges.len();
            edges.retain(|&(u, _)| u & HUB == 0 || indeg[(u & !HUB) as usize] > 0);
            if edges.len() == before {
                // Renumber the hubs still used.
                let mut used = vec![NOT_HUB; hubs as usize];
                let mut next = 0;
                for &(u, v) in &edges {
                    for x in [u, v] {
                        if x & HUB != 0 && used[(x & !HUB) as usize] == NOT_HUB {
                            used[(x & !HUB) as usize] = next;
                            next += 1;
                        }
                    }
                }
                let m = |x: u32| {
                    if x & HUB != 0 {
                        HUB | used[(x & !HUB) as usize]
                    } else {
                        x
                    }
                };
                for e in &mut edges {
                    *e = (m(e.0), m(e.1));
                }
                self.hubs = next;
                break;
            }
        }
        self.carried = edges;
    }
}

/// Replays a finished history in rounds of `round_size` transactions, in commit-time order when
/// every transaction has one, else drawn from the sessions in proportion to their length (so
/// they progress together, as live clients would), and calls `each` after every round. Returns the checker after its last round.
pub fn replay(
    h: &krait_history::History,
    opts: OnlineOptions,
    round_size: usize,
    mut each: impl FnMut(&RoundStats, &Online),
) -> Result<Online, OnlineError> {
    let mut on = Online::new(opts);
    for k in &h.keys {
        on.key(k);
    }
    if let Some(fk) = h.fence_key {
        on.set_fence_key(fk);
    }
    on.set_cobra_claims(h.cobra.is_some());
    let ns = h.num_sessions();
    for s in 0..ns {
        // Session names may repeat across formats' conventions; make them distinct.
        let name = format!("{}#{s}", h.session_names[s]);
        on.session(&name)?;
    }
    let len: Vec<usize> = (0..ns).map(|s| h.session_range(s).len()).collect();
    let mut fed = vec![0usize; ns];
    let total = h.num_txns();
    let by_time = total > 0 && h.txn_commit.iter().all(|&c| c != krait_history::NO_TIME);
    let mut pushed = 0usize;
    let mut in_round = 0usize;
    while pushed < total {
        let next = |s: usize| h.session_range(s).start as usize + fed[s];
        // By commit time when every transaction has one (as a live system delivers them),
        // else the session furthest behind, relative to its length.
        let s = if by_time {
            (0..ns)
                .filter(|&s| fed[s] < len[s])
                .min_by_key(|&s| h.txn_commit[next(s)])
                .unwrap()
        } else {
            (0..ns)
                .filter(|&s| fed[s] < len[s])
                .min_by(|&a, &b| (fed[a] * len[b]).cmp(&(fed[b] * len[a])))
                .unwrap()
        };
        let t = h.session_range(s).start + fed[s] as u32;
        fed[s] += 1;
        pushed += 1;
        let ops: Vec<(OpKind, KeyId, u64)> = h
            .ops(t)
            .map(|o| (h.op_kind[o], h.op_key[o], h.op_value[o]))
            .collect();
        let lists = h
            .ops(t)
            .filter_map(|o| {
                h.list_of(o as u32)
                    .map(|l| ((o - h.ops(t).start) as u32, l.to_vec()))
            })
            .collect();
        let claims = match &h.cobra {
            Some(c) => h
                .ops(t)
                .map(|o| (c.value_hash[o], c.read_writer[o]))
                .collect(),
            None => Vec::new(),
        };
        on.push(TxnIn {
            session: s as u32,
            ext: h.txn_ext[t as usize],
            status: h.txn_status[t as usize],
            start: h.txn_start[t as usize],
            commit: h.txn_commit[t as usize],
            ops,
            lists,
            claims,
        })?;
        if fed[s] == len[s] {
            on.close_session(s as u32);
        }
        in_round += 1;
        if in_round >= round_size {
            in_round = 0;
            if let Some(st) = on.round()? {
                each(&st, &on);
            }
            if on.verdict().is_some() {
                return Ok(on);
            }
        }
    }
    for st in on.finish()? {
        each(&st, &on);
    }
    Ok(on)
}
