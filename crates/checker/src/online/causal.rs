//! Causal consistency online: a round's check (`weak::online`) with what only the online
//! checker knows — which transactions are new, which were old when the round began — and the
//! one fence shape that voids the epochs under this level.
//!
//! Collection needs no rule of its own (docs/online.md argues each): an old writer that
//! reaches another old writer of its key cannot be read by a transaction still to come without
//! a cycle, since the later writer is in that transaction's causal past and so must precede
//! the version it reads; deleted transactions have only old ancestors; paths through them are
//! carried. Read committed and read atomic have no such rule: a transaction may read any
//! committed version however old, so no write could ever be deleted.

use super::{Online, OnlineError, NONE};
use crate::graph::EdgeKind;
use crate::pipeline::{Carried, Final};
use crate::weak::online::Unconfirmed;
use crate::{Report, Verdict};
use krait_history::{FxHashMap, History, OpKind, TxnStatus};

/// An edge the reads of a live transaction of unknown outcome, unread so far, would force
/// ([`crate::weak::online::Unconfirmed`]), in slab slots (`t1` NONE: the initial version).
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Pending {
    pub reader: u32,
    pub t3: u32,
    pub t1: u32,
    pub key: u32,
}

impl Online {
    /// Checks the round's history `h` under causal consistency; `new_ids` are the slab slots
    /// admitted this round, `txn_slab`/`slab_txn` map between `h`'s transactions and slots.
    pub(super) fn causal_check(
        &mut self,
        h: &History,
        new_ids: &[Vec<u32>],
        txn_slab: &[u32],
        slab_txn: &[u32],
        carried: &Carried,
    ) -> Result<(Report, Option<Final>), OnlineError> {
        if let Some(reason) = self.fence_branch() {
            let name = self.opts.check.level.name(false);
            let v = Verdict::Unknown { reason };
            let report = Report::plain(name, v, Default::default(), Default::default(), None);
            return Ok((report, None));
        }
        let mut fresh = vec![false; h.num_txns()];
        for &id in new_ids.iter().flatten() {
            let t = slab_txn[id as usize];
            if t != NONE {
                fresh[t as usize] = true;
            }
        }
        let agree = self.last_agree;
        let old: Vec<bool> = txn_slab
            .iter()
            .map(|&id| {
                let l = self.live_ref(id);
                l.t.status == TxnStatus::Committed
                    && l.epoch != NONE
                    && agree >= 2
                    && l.epoch <= agree - 2
            })
            .collect();
        // Edges of unknown outcomes computed when they were new: their ends are kept.
        let confirmed: Vec<Unconfirmed> = self
            .unconfirmed
            .iter()
            .filter_map(|u| {
                let t = |slab: u32| Some(slab_txn[slab as usize]).filter(|&t| t != NONE);
                Some(Unconfirmed {
                    reader: t(u.reader)?,
                    t3: t(u.t3)?,
                    t1: match u.t1 {
                        NONE => None,
                        s => Some(t(s)?),
                    },
                    key: u.key,
                })
            })
            .collect();
        let round = crate::weak::online::causal_round(
            h,
            &self.opts.check,
            carried,
            &fresh,
            &old,
            &confirmed,
        )
        .map_err(OnlineError::Check)?;
        let slab = |t: u32| txn_slab[t as usize];
        self.unconfirmed
            .extend(round.unconfirmed.iter().map(|u| Pending {
                reader: slab(u.reader),
                t3: slab(u.t3),
                t1: u.t1.map_or(NONE, slab),
                key: u.key,
            }));
        // Readers found read this round took part: their edges are in the graph now.
        if let Some(fin) = &round.fin {
            self.unconfirmed.retain(|u| {
                slab_txn[u.reader as usize] == NONE
                    || fin.b.txn_node[slab_txn[u.reader as usize] as usize] == NONE
            });
        }
        Ok((round.report, round.fin))
    }

    /// Transactions the edges of unknown outcomes still unread end at: kept until their
    /// reader is found read (or forever, like the reader itself).
    pub(super) fn causal_pins(&self) -> krait_history::FxHashSet<u32> {
        self.unconfirmed
            .iter()
            .flat_map(|u| [u.t3, u.t1])
            .filter(|&s| s != NONE)
            .collect()
    }

    /// Keeps the edges this round's reads forced (and those carried before) for later rounds
    /// when no collection runs to carry them: a reader's forced edges are computed only in the
    /// round that admits it.
    pub(super) fn keep_forced(&mut self, fin: &Final, txn_slab: &[u32]) {
        let b = &fin.b;
        for (&(u, v), l) in b.edges.iter().zip(b.labels.iter()) {
            // Forced this round, or by unknown outcomes found read (labelled carried).
            if !matches!(l.kind, EdgeKind::Ww | EdgeKind::Carried) {
                continue;
            }
            if let (Some(u), Some(v)) = (b.txn_of(u), b.txn_of(v)) {
                self.carried
                    .push((txn_slab[u as usize], txn_slab[v as usize]));
            }
        }
        self.carried.sort_unstable();
        self.carried.dedup();
    }

    /// Two live fences that read the same fence version and both wrote the next: the fence
    /// chain branched. Serializability and snapshot isolation reject that (a lost update);
    /// causal consistency allows it, but then a session's fences no longer follow every other
    /// session's, epochs order nothing, and an exact online check cannot go on. A branch whose
    /// first fence was already deleted is no such case: the second fence then reads a version
    /// older than one in its own causal past, which the round rejects.
    fn fence_branch(&self) -> Option<String> {
        let fk = self.fence_key?;
        let mut by_version: FxHashMap<Option<u64>, u64> = FxHashMap::default();
        for l in self.slab.iter().flatten() {
            let counts = l.t.status == TxnStatus::Committed || l.read_unknown;
            if !l.fence || !counts || !l.t.ops.iter().any(|o| o.0 == OpKind::Write && o.1 == fk) {
                continue;
            }
            let (kind, _, v) = l.t.ops[0];
            let read = (kind != OpKind::ReadInit).then_some(v);
            if let Some(other) = by_version.insert(read, l.t.ext) {
                let version = read.map_or("the initial version".to_string(), |v| v.to_string());
                return Some(format!(
                    "fences {other} and {} both read fence version {version} and wrote the next: the fence chain branched, which causal consistency allows but which leaves the epochs without an order, so the online check cannot go on (check the whole history instead)",
                    l.t.ext
                ));
            }
        }
        None
    }
}
