//! Online verification: a history that keeps growing, checked in rounds with bounded memory
//! (the paper's §4: fences, epochs, garbage collection).
//!
//! Input: transactions as they arrive ([`TxnRecord`], per session, in session order), then
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

mod admit;
#[cfg(test)]
mod admit_tests;
mod carry;
mod causal;
mod choosable;
mod epoch;
mod gc;
mod persist;
mod replay;
mod round;
mod types;
mod writes;

pub use krait_history::TxnRecord;
pub use replay::{replay, replay_restarting};
pub use types::{OnlineError, OnlineOptions, RoundStats};

use crate::Report;
use krait_history::{FxHashMap, KeyId, OpKind};
use krait_history::{ABSENT_VALUE, DELETE_WRITE_ID};
use std::collections::VecDeque;
use std::time::Instant;

const NONE: u32 = u32::MAX;
/// How many deleted writes are remembered for stale-read certificates (about 10 MB).
const DELETED_MEMORY: usize = 1 << 18;

#[derive(serde::Serialize, serde::Deserialize)]
struct Live {
    t: TxnRecord,
    /// Its 1-based place in its session, as arrived: reports name it `<session>:<pos>`.
    pos: u32,
    /// Op indices of reads whose writer was deleted (left out of later rebuilds).
    ghost: Vec<u32>,
    /// An unknown outcome that an earlier round found read: it committed, at a time unknown.
    read_unknown: bool,
    epoch: u32,
    fence: bool,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Queued {
    t: TxnRecord,
    pos: u32,
    seq: u64,
    sweep: u64,
    /// Kept as its age in a checkpoint: an `Instant` means nothing to another process.
    #[serde(with = "persist::age")]
    seen_at: Instant,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Sess {
    name: String,
    live: Vec<u32>,
    queue: VecDeque<Queued>,
    /// The highest epoch of an admitted fence (NONE: none yet).
    max_fence: u32,
    /// Admitted transactions since the last fence, waiting for the next fence's epoch.
    unassigned: Vec<u32>,
    closed: bool,
    /// Transactions pushed so far.
    pushed: u32,
    /// The highest epoch of a committed fence of this session that was deleted (NONE: none).
    gone_fence: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum Writer {
    Live(u32),
    Queued(u64),
}

/// The online checker: transactions pushed as they arrive, checked in rounds.
///
/// Everything but the options and a verdict can be saved and restored ([`Online::save`]), so a
/// restarted verifier goes on where the last one stopped.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct Online {
    /// How it checks and collects (may be changed between rounds).
    #[serde(skip)]
    pub opts: OnlineOptions,
    keys: Vec<String>,
    key_index: FxHashMap<String, KeyId>,
    fence_key: Option<KeyId>,
    slab: Vec<Option<Live>>,
    free: Vec<u32>,
    live_count: usize,
    sessions: Vec<Sess>,
    session_index: FxHashMap<String, u32>,
    writes: writes::WriteIndex,
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
    #[serde(skip)]
    verdict: Option<Report>,
    cobra_claims: bool,
    /// External ids the last garbage collection found superseded (whether or not it could
    /// delete them: a cycle the undecided constraints could close keeps them).
    pub last_superseded: Vec<u64>,
    /// External ids the last garbage collection deleted.
    pub last_deleted: Vec<u64>,
    /// Commit times (ns, as logged) of the transactions admitted since the caller last took
    /// them ([`Online::take_admitted_commits`]).
    admitted_commits: Vec<u64>,
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
    /// Values may be written more than once ([`Online::allow_repeated_values`]).
    repeated: bool,
    /// With repeated values: the value every key holds before its first write (a delete's,
    /// once one was seen), which a read of it may have read instead of any write.
    initial: Option<u64>,
    /// With repeated values: the last round left reads of young transactions out, so the end
    /// of the history needs a round of its own even with nothing new to admit.
    withheld: bool,
    /// The last round's `agree`: under causal consistency every transaction admitted since
    /// has each one old by it (epoch ≤ it − 2) in its causal past (`causal`).
    last_agree: u32,
    /// Causal consistency: edges the reads of live transactions of unknown outcome, unread so
    /// far, would force (computed when they were new, their causal past complete).
    unconfirmed: Vec<causal::Pending>,
    /// The level the rounds so far checked (its name without real time): a restore at
    /// another is refused.
    level: String,
}

impl Online {
    /// An online checker with nothing pushed yet.
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
            writes: Default::default(),
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
            admitted_commits: Vec::new(),
            pending_fences: Vec::new(),
            deleted_writes: FxHashMap::default(),
            deleted_fifo: VecDeque::new(),
            init_value: FxHashMap::default(),
            repeated: false,
            initial: None,
            withheld: false,
            last_agree: 0,
            unconfirmed: Vec::new(),
            level: String::new(),
        }
    }

    /// Takes histories whose values may be written more than once (and deletes): a read then
    /// may have read any write of its value. Must be said before the first push: garbage
    /// collection keeps what such reads may still choose (see `gc`), and checks a read only
    /// once no transaction still to come can be the one it read.
    pub fn allow_repeated_values(&mut self) {
        self.repeated = true;
    }

    /// With repeated values: every key holds `v` before its first write (a history with
    /// deletes: the absent row), so a read of `v` may have read the initial state.
    pub fn set_initial_value(&mut self, v: u64) {
        self.initial = Some(v);
    }

    /// Whether values may repeat ([`Online::allow_repeated_values`]).
    pub fn repeated_values(&self) -> bool {
        self.repeated
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

    /// The name of an interned key.
    pub fn key_name(&self, k: KeyId) -> &str {
        &self.keys[k as usize]
    }

    /// Names the key whose read-modify-writes are fences (Cobra's logs name it differently).
    pub fn set_fence_key(&mut self, k: KeyId) {
        self.fence_key = Some(k);
    }

    /// Histories from Cobra's logs carry claims per op (see [`TxnRecord::claims`]).
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
            pushed: 0,
            gone_fence: NONE,
        });
        self.session_index.insert(name.to_string(), s);
        Ok(s)
    }

    /// No more transactions will come from this session.
    pub fn close_session(&mut self, s: u32) {
        self.sessions[s as usize].closed = true;
    }

    /// Queues a transaction; it is admitted by a later round, once the writes its reads name
    /// have arrived. A repeated value (unless allowed), a repeated fence value, or a list after
    /// collection began is an error.
    pub fn push(&mut self, t: TxnRecord) -> Result<(), OnlineError> {
        self.seq += 1;
        if !t.lists.is_empty() {
            if self.deleted_total > 0 {
                return Err(OnlineError::ListsAfterGc { txn: t.ext });
            }
            self.lists_seen = true;
        }
        for &(kind, k, v) in &t.ops {
            if kind == OpKind::Write && v == ABSENT_VALUE && !self.cobra_claims {
                if !self.repeated {
                    return Err(OnlineError::Delete {
                        txn: t.ext,
                        key: self.keys[k as usize].clone(),
                    });
                }
                self.initial = Some(ABSENT_VALUE);
            }
            if self.indexed_write(kind, v) {
                // Fences must stay unique however values repeat: epochs follow their chain.
                let again = self.writes.contains_key(&(k, v))
                    || (self.repeated && self.deleted_writes.contains_key(&(k, v)));
                if again && self.repeated && Some(k) == self.fence_key {
                    return Err(OnlineError::RepeatedFence {
                        txn: t.ext,
                        key: self.keys[k as usize].clone(),
                        value: v,
                    });
                }
                if again && !self.repeated {
                    return Err(OnlineError::DuplicateWrite {
                        txn: t.ext,
                        key: self.keys[k as usize].clone(),
                        value: v,
                    });
                }
                self.writes.insert((k, v), Writer::Queued(self.seq));
            }
        }
        let sess = &mut self.sessions[t.session as usize];
        sess.pushed += 1;
        let q = Queued {
            pos: sess.pushed,
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

    /// Transactions held (admitted and not deleted).
    pub fn live(&self) -> usize {
        self.live_count
    }

    /// Transactions pushed and not admitted yet.
    pub fn waiting(&self) -> usize {
        self.sessions.iter().map(|s| s.queue.len()).sum()
    }

    /// How many transactions have been pushed so far; the n-th push is number n.
    pub fn pushed(&self) -> u64 {
        self.seq
    }

    /// Transactions deleted by garbage collection so far.
    pub fn deleted_total(&self) -> u64 {
        self.deleted_total
    }

    /// Keys whose latest old version stands in for their initial one.
    pub fn folded_keys(&self) -> usize {
        self.init_value.len()
    }

    /// Commit times (ns, as logged) of the transactions admitted since the last call, so a
    /// caller can measure how far behind the commits verification runs: taken once after each
    /// round (or after `finish`), each transaction is counted once. Kept only with
    /// [`OnlineOptions::track_commits`].
    pub fn take_admitted_commits(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.admitted_commits)
    }
    /// Rounds run so far.
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

    /// Whether the transaction with this external id is held.
    pub fn is_live(&self, ext: u64) -> bool {
        self.slab.iter().flatten().any(|l| l.t.ext == ext)
    }
}
