//! One round: admit, rebuild the history of the live transactions, check it with the facts
//! carried from deleted ones, and collect garbage after an ACCEPT.

use super::{Online, OnlineError, RoundStats, NONE};
use crate::pipeline::{run, Carried, HUB, START};
use crate::{Report, Verdict};
use krait_history::{History, HistoryBuilder, OpKind, TxnId, TxnStatus};
use std::time::Instant;

/// A round's history and the maps between its transaction ids and slab slots.
struct RoundHistory {
    h: History,
    /// Slab slot per transaction of `h`.
    txn_slab: Vec<u32>,
    /// Transaction of `h` per slab slot (NONE: not live).
    slab_txn: Vec<u32>,
    /// Unknown outcomes earlier rounds found read.
    committed_unknown: Vec<TxnId>,
    /// With repeated values: the op of its transaction's record each op of `h` is.
    op_src: Vec<u32>,
    /// Some read was left out as young.
    withheld: bool,
}

impl Online {
    /// Admits what may be admitted, checks the round's history, collects garbage on ACCEPT.
    pub(super) fn round_inner(&mut self, force: bool) -> Result<Option<RoundStats>, OnlineError> {
        if self.verdict.is_some() {
            return Ok(None);
        }
        if self.repeated && self.opts.check.level == crate::Level::Causal {
            return Err(OnlineError::CausalRepeated);
        }
        let t0 = Instant::now();
        let blocked = self.blocked_set(force);
        let waiting_before = self.waiting();
        if waiting_before == blocked.len() && !(force && self.withheld) {
            return Ok(None);
        }
        self.round += 1;
        self.level = self.opts.check.level.name(false).to_string();
        let take = self.admission(&blocked);
        let (new, new_ids, admitted_fences) = self.admit(&take);
        self.assign_epochs(&admitted_fences, &new_ids);

        // Epochs are final for this round once its fences are numbered.
        let agree = self.agree();
        let RoundHistory {
            h,
            txn_slab,
            slab_txn,
            committed_unknown,
            op_src,
            withheld,
        } = self.round_history(agree)?;
        self.withheld = withheld;
        if let Some(cert) = self.stale_read(&h, &new_ids, &slab_txn) {
            self.verdict = Some(Report::plain(
                self.opts.check.level.name(self.opts.check.strict.is_some()),
                Verdict::Reject(Box::new(cert)),
                Default::default(),
                Default::default(),
                None,
            ));
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
        let carried = self.carried_for(&slab_txn, committed_unknown);
        let checked = h.num_txns();
        let t_build = t0.elapsed();
        let (report, fin) = if self.opts.check.level == crate::Level::Causal {
            self.causal_check(&h, &new_ids, &txn_slab, &slab_txn, &carried)?
        } else {
            run(&h, &self.opts.check, Some(&carried), self.opts.gc).map_err(OnlineError::Check)?
        };
        drop(carried);
        self.last_agree = agree;
        let mut st = RoundStats {
            round: self.round,
            new,
            checked,
            constraints: report.stats.constraints,
            constraints_after_prune: report.stats.constraints_after_prune,
            ..Default::default()
        };
        if self.opts.check.level == crate::Level::Causal {
            st.forced_edges = Some(st.constraints);
            st.constraints = 0;
        }
        if !matches!(report.verdict, Verdict::Accept) {
            self.verdict = Some(report);
            st.live = self.live_count;
            st.waiting = self.waiting();
            st.time = t0.elapsed();
            return Ok(Some(st));
        }
        if let Some(f) = &fin {
            self.mark_read_unknown(f, &txn_slab);
        }
        st.epoch_agree = agree;
        st.gc_held = self.gc_hold();
        let t_check = t0.elapsed();
        if let Some(fin) = fin {
            // Below 2 nothing is old, nothing was ever deleted, and nothing needs carrying
            // but the edges causal consistency forced this round (computed once, see `causal`).
            let open = self.unknown_writer_open(&fin);
            if st.gc_held.is_none() {
                st.gc_held = open.clone();
            }
            if agree >= 2 && !self.lists_seen && self.opts.gc && open.is_none() {
                st.deleted = if self.repeated {
                    let old_below = self.agree_with_withheld_reads(agree);
                    if old_below >= 2 {
                        self.collect(&fin, &txn_slab, old_below, Some((&h, &op_src[..], agree)))
                    } else {
                        0
                    }
                } else {
                    self.collect(&fin, &txn_slab, agree, None)
                };
            } else if self.opts.check.level == crate::Level::Causal {
                self.keep_forced(&fin, &txn_slab);
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

    /// The round's history: live transactions, session by session, reads of deleted writes
    /// left out and reads of folded versions read as initial. With repeated values, the reads
    /// of young transactions (epoch above `agree` − 2, or none yet) are left out too: a write
    /// still to come may be the one such a read read, and a check that assumed otherwise
    /// could reject falsely or decide edges that do not hold. Once all of them are two epochs
    /// old, every transaction still to come follows them, and cannot be a writer they read.
    fn round_history(&self, agree: u32) -> Result<RoundHistory, OnlineError> {
        let mut b = HistoryBuilder::new().with_keys(self.keys.clone());
        if self.cobra_claims {
            b = b.with_cobra_claims();
        }
        if let Some(fk) = self.fence_key {
            b.set_fence_key(fk);
        }
        let initial = self.initial.filter(|_| self.repeated);
        if let Some(v) = initial {
            b.set_init_value(v);
        }
        let everything_arrived = self.sessions.iter().all(|s| s.closed && s.queue.is_empty());
        let mut op_src: Vec<u32> = Vec::new();
        let mut withheld = false;
        let mut txn_slab: Vec<u32> = Vec::with_capacity(self.live_count);
        let mut txn_pos: Vec<u32> = Vec::with_capacity(self.live_count);
        let mut committed_unknown: Vec<TxnId> = Vec::new();
        let mut slab_txn: Vec<u32> = vec![NONE; self.slab.len()];
        for s in &self.sessions {
            b.begin_session(s.name.clone());
            for &id in &s.live {
                let l = self.slab[id as usize].as_ref().unwrap();
                let young = !everything_arrived && self.young(l.epoch, agree);
                for (i, &(kind, k, v)) in l.t.ops.iter().enumerate() {
                    if l.ghost.binary_search(&(i as u32)).is_ok() {
                        continue;
                    }
                    // Fence values are unique: a fence read names its writer for good, and
                    // the paths epochs count on run through it.
                    if young && kind != OpKind::Write && Some(k) != self.fence_key {
                        withheld = true;
                        continue;
                    }
                    if self.repeated {
                        op_src.push(i as u32);
                    }
                    let list = l.t.lists.iter().find(|x| x.0 as usize == i);
                    if self.indexed_write(kind, v) {
                        // Repeated values were refused on arrival unless allowed.
                        let _ = b.op(kind, k, v);
                    } else if kind == OpKind::Read
                        && !self.writes.contains_key(&(k, v))
                        && self.is_init_value(k, v)
                    {
                        b.op_unindexed(OpKind::ReadInit, k, 0);
                    } else if let (OpKind::ReadInit, Some(v0), false) =
                        (kind, initial, list.is_some())
                    {
                        // The initial state and every delete hold the same value.
                        b.op_unindexed(OpKind::Read, k, v0);
                    } else {
                        b.op_unindexed(kind, k, v);
                    }
                    if let Some((_, list)) = list {
                        b.list(list);
                    }
                    if let Ok(j) = l.t.app.binary_search_by_key(&(i as u32), |x| x.0) {
                        b.app_value(&l.t.app[j].1);
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
                txn_pos.push(l.pos);
                if l.read_unknown {
                    committed_unknown.push(t);
                }
            }
        }
        let mut h = b.finish();
        // A round holds only part of each session: name each by its place in the whole one.
        h.txn_pos = txn_pos;
        Ok(RoundHistory {
            h,
            txn_slab,
            slab_txn,
            committed_unknown,
            op_src,
            withheld,
        })
    }

    /// Unknown-outcome transactions someone read from have committed: kept in from now on,
    /// still without a commit point in their session (their readers may be collected later).
    /// Those the ACCEPT only assumed committed stay undecided: a later round tries every set
    /// again.
    fn mark_read_unknown(&mut self, fin: &crate::pipeline::Final, txn_slab: &[u32]) {
        for (t, &id) in txn_slab.iter().enumerate() {
            if fin.b.txn_node[t] == NONE || fin.assumed.contains(&(t as TxnId)) {
                continue;
            }
            let l = self.slab[id as usize].as_mut().unwrap();
            if l.t.status == TxnStatus::Unknown {
                l.read_unknown = true;
            }
        }
    }

    /// With repeated values: whether collection must wait, because the round's ACCEPT took a
    /// transaction of unknown outcome as committed without a read that shows it did (another
    /// set may serve a later round), or because a live one that writes has not been shown
    /// committed yet. A later read of its value may choose it, adding an old writer to its
    /// keys, while collection judged which old versions may still be read without it: a
    /// deletion made so could leave a later round unable to place it (a false REJECT).
    /// Says which, where one does.
    fn unknown_writer_open(&self, fin: &crate::pipeline::Final) -> Option<String> {
        if !fin.assumed.is_empty() {
            return Some(format!(
                "this round's ACCEPT took {} transaction(s) of unknown outcome as committed",
                fin.assumed.len()
            ));
        }
        // Unique values: a read names its writer for good, and nothing here applies (nor is
        // the slab scanned, every round).
        if !self.repeated {
            return None;
        }
        if self.initial.is_some() {
            return Some("the initial value is also written (deletes, or a write of the initial value): a read of it may have read the initial state".into());
        }
        let open = self.slab.iter().flatten().find(|l| {
            l.t.status == TxnStatus::Unknown
                && !l.read_unknown
                && l.t.ops.iter().any(|o| o.0 == OpKind::Write)
        })?;
        Some(format!(
            "T{}, of unknown outcome, may yet be read (values repeat)",
            open.t.ext
        ))
    }

    /// Whether a live transaction's reads are left out of this round (repeated values only):
    /// young, unless every session has ended and nothing waits.
    pub(super) fn young(&self, epoch: u32, agree: u32) -> bool {
        self.repeated && (epoch == NONE || epoch.saturating_add(2) > agree)
    }

    /// `agree` for garbage collection where reads of young transactions are left out: those
    /// reads are checked later, like the reads of transactions still to come, so collection
    /// may count on a path to them only from what precedes the last fence before each (as it
    /// counts on one to a transaction still to come from what precedes its session's last).
    fn agree_with_withheld_reads(&self, agree: u32) -> u32 {
        let mut out = agree;
        for s in &self.sessions {
            let mut last_fence = if s.gone_fence == NONE {
                0
            } else {
                s.gone_fence
            };
            for &id in &s.live {
                let l = self.slab[id as usize].as_ref().unwrap();
                if l.fence && l.epoch != NONE && l.t.status == TxnStatus::Committed {
                    last_fence = last_fence.max(l.epoch);
                } else if self.young(l.epoch, agree) && self.has_withheld_reads(l) {
                    out = out.min(last_fence);
                }
            }
        }
        out
    }

    /// Whether a young transaction has reads a round leaves out (an aborted one's mean
    /// nothing; fence reads are always checked).
    fn has_withheld_reads(&self, l: &super::Live) -> bool {
        l.t.status != TxnStatus::Aborted
            && l.t
                .ops
                .iter()
                .any(|o| o.0 != OpKind::Write && Some(o.1) != self.fence_key)
    }

    /// The carried facts in the round history's transaction ids.
    fn carried_for(&self, slab_txn: &[u32], committed_unknown: Vec<TxnId>) -> Carried {
        Carried {
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
                            slab_txn[(x & !START) as usize] | (x & START)
                        }
                    };
                    (m(u), m(v))
                })
                .collect(),
        }
    }

    /// A newly admitted read of a write that an earlier round deleted.
    pub(super) fn stale_read(
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
            for (i, &(kind, k, v)) in l.t.ops.iter().enumerate() {
                let key = &self.keys[k as usize];
                let shown = || match l.t.app.binary_search_by_key(&(i as u32), |a| a.0) {
                    Ok(j) => krait_history::quote_app_value(&l.t.app[j].1),
                    Err(_) => v.to_string(),
                };
                let (writer, round, what) = match kind {
                    // The true initial state, after a later write became the key's initial
                    // version: stale too.
                    OpKind::ReadInit => match self.init_value.get(&k) {
                        Some(&(_, w)) => (w, None, format!("the initial version of {key}")),
                        None => continue,
                    },
                    OpKind::Read
                        if !(self.writes.contains_key(&(k, v))
                            || self.is_init_value(k, v)
                            || (self.repeated && self.initial == Some(v))) =>
                    {
                        match self.deleted_writes.get(&(k, v)) {
                            Some(&(w, r)) => (w, Some(r), format!("{key} = {}", shown())),
                            None => continue,
                        }
                    }
                    _ => continue,
                };
                let r = krait_history::resolve(h);
                let t = slab_txn[id as usize];
                let causal = self.opts.check.level == crate::Level::Causal;
                return Some(crate::cert::stale_read(
                    h, &r, t, &what, key, writer, round, causal,
                ));
            }
        }
        None
    }
}
