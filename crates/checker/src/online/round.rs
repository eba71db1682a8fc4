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
}

impl Online {
    /// Admits what may be admitted, checks the round's history, collects garbage on ACCEPT.
    pub(super) fn round_inner(&mut self, force: bool) -> Result<Option<RoundStats>, OnlineError> {
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
        let (new, new_ids, admitted_fences) = self.admit(&take);
        self.assign_epochs(&admitted_fences, &new_ids);

        let RoundHistory {
            h,
            txn_slab,
            slab_txn,
            committed_unknown,
        } = self.round_history()?;
        if let Some(cert) = self.stale_read(&h, &new_ids, &slab_txn) {
            self.verdict = Some(Report {
                level: self.opts.check.level.name(self.opts.check.strict.is_some()),
                session_order: true,
                verdict: Verdict::Reject(Box::new(cert)),
                stats: Default::default(),
                timings: Default::default(),
                order: None,
                snapshots: Vec::new(),
                matched: Vec::new(),
                also: Vec::new(),
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
        let carried = self.carried_for(&slab_txn, committed_unknown);
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
        st.gc_held = self.gc_hold();
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

    /// The round's history: live transactions, session by session, reads of deleted writes
    /// left out and reads of folded versions read as initial.
    fn round_history(&self) -> Result<RoundHistory, OnlineError> {
        let mut b = HistoryBuilder::new().with_keys(self.keys.clone());
        if self.cobra_claims {
            b = b.with_cobra_claims();
        }
        if let Some(fk) = self.fence_key {
            b.set_fence_key(fk);
        }
        let mut txn_slab: Vec<u32> = Vec::with_capacity(self.live_count);
        let mut txn_pos: Vec<u32> = Vec::with_capacity(self.live_count);
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
        })
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
                        if !self.writes.contains_key(&(k, v)) && !self.is_init_value(k, v) =>
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
                return Some(crate::cert::stale_read(h, &r, t, &what, key, writer, round));
            }
        }
        None
    }
}
