//! Garbage collection where values repeat: what a read may still choose stays.
//!
//! With unique values a read names its writer for good, and collection deletes a superseded
//! writer once the edges its reads implied are carried. With repeated values a read may have
//! read any of several writes, so collection also keeps:
//! - every live writer of a value that a young transaction read (its reads are not checked
//!   yet, see `round_history`: a write still to come may be the one it read, and when it is
//!   checked, every write it may have read must still be there);
//! - for a read that the round left with two or more possible writers, and whose reader
//!   stays, each writer still possible: deleting one would take an option away and leave the
//!   others more constrained than the history makes them, while a reader that goes takes its
//!   whole choice along, one constraint less, as collection deletes constraints of unique
//!   reads too.
//!
//! Conditional edges are undecided constraints like any other: the graph with both sides of
//! every undecided constraint holds them for the rule on cycles.
//! A read checked and left with one possible writer is that writer's read from then on: when
//! that writer goes, the read goes out of later rounds (a ghost), as with unique values,
//! since writes ruled out for it may stay.

use super::{Online, Writer, NONE};
use crate::graph::{Node, INIT};
use crate::pipeline::Final;
use krait_history::{FxHashMap, FxHashSet, History, KeyId, OpKind, FROM_AMBIGUOUS};

impl Online {
    /// What the young transactions of a round read (their reads are not checked yet).
    pub(super) fn young_reads(&self, txn_slab: &[u32], agree: u32) -> FxHashSet<(KeyId, u64)> {
        txn_slab
            .iter()
            .map(|&id| self.slab[id as usize].as_ref().unwrap())
            .filter(|l| self.young(l.epoch, agree))
            .flat_map(|l| l.t.needs())
            .collect()
    }

    /// Per node of the round's graph: kept whatever else collection finds (see the module).
    pub(super) fn pinned(
        &self,
        fin: &Final,
        txn_slab: &[u32],
        young_reads: &FxHashSet<(KeyId, u64)>,
        deleted: &[bool],
    ) -> Vec<bool> {
        let b = &fin.b;
        let mut pin = vec![false; b.num_nodes];
        let mut node_of_slab: FxHashMap<u32, Node> = FxHashMap::default();
        for (t, &id) in txn_slab.iter().enumerate() {
            if b.txn_node[t] != NONE {
                node_of_slab.insert(id, b.txn_node[t]);
            }
        }
        let mark = |pin: &mut Vec<bool>, x: Node| {
            if let Some(t) = b.txn_of(x) {
                let c = b.txn_node[t as usize];
                if c != NONE {
                    pin[c as usize] = true;
                    pin[b.start(c) as usize] = true;
                }
            }
        };
        for kv in young_reads {
            for w in self.writes.all(kv) {
                if let Writer::Live(wid) = w {
                    if let Some(&x) = node_of_slab.get(&wid) {
                        mark(&mut pin, x);
                    }
                }
            }
        }
        // A reader that goes takes its choice along (one constraint less); one that stays must
        // keep every write it may have read, and a write kept so may be a reader that stays:
        // to a fixed point.
        let open: Vec<&crate::graph::Choice> =
            b.choices.iter().filter(|c| c.num_alive() > 1).collect();
        let mut done = vec![false; open.len()];
        loop {
            let mut changed = false;
            for (ci, c) in open.iter().enumerate() {
                if done[ci] || (deleted[c.reader as usize] && !pin[c.reader as usize]) {
                    continue;
                }
                done[ci] = true;
                changed = true;
                for (i, &x) in c.cands.iter().enumerate() {
                    if c.alive[i] && x != INIT {
                        mark(&mut pin, x);
                    }
                }
            }
            if !changed {
                break pin;
            }
        }
    }

    /// Reads of kept transactions whose one possible writer is deleted: (slab slot, op of its
    /// record), to be left out of later rounds.
    pub(super) fn resolved_ghosts(
        &self,
        fin: &Final,
        txn_slab: &[u32],
        h: &History,
        op_src: &[u32],
        deleted: &[bool],
    ) -> Vec<(u32, u32)> {
        let b = &fin.b;
        let mut out = Vec::new();
        for (t, &id) in txn_slab.iter().enumerate() {
            let x = b.txn_node[t];
            if x == NONE || deleted[x as usize] {
                continue;
            }
            for o in h.ops(t as u32) {
                let w = fin.read_from[o];
                if h.op_kind[o] != OpKind::Read || w >= FROM_AMBIGUOUS {
                    continue;
                }
                let y = b.txn_node[fin.op_txn[w as usize] as usize];
                if y != NONE && deleted[y as usize] {
                    out.push((id, op_src[o]));
                }
            }
        }
        out
    }
}
