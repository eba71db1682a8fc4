//! What the weak levels need from a history: which transactions take part (as for every
//! level), each transaction's external reads in program order with the writer each names, the
//! keys it writes, session order and write→read edges; or the per-transaction finding that
//! rules the history out at every level.

use crate::findings::Finding;
use crate::graph::{
    participants, walk_sessions, EdgeKind, Label, Node, Overwritten, Participants, INIT, NO_KEY,
};
use krait_history::{History, OpKind, Resolution, TxnId, FROM_INIT, FROM_NOBODY};

pub(crate) struct Facts {
    /// Node i+1 is transaction `node_txn[i]`; node 0 is the initial state.
    pub node_txn: Vec<TxnId>,
    pub excluded_unknown: usize,
    /// Session order and write→read edges.
    pub known: Vec<(Node, Node, Label)>,
    /// Per node, its external reads in program order: `reads[read_start[n]..read_start[n+1]]`,
    /// each (key, writer node, op).
    pub read_start: Vec<u32>,
    pub reads: Vec<(u32, Node, u32)>,
    /// Per node, the keys it writes, sorted: `wkeys[wkey_start[n]..wkey_start[n+1]]`.
    pub wkey_start: Vec<u32>,
    pub wkeys: Vec<u32>,
    /// Per node, its session chain and position on it (committed transactions of a session
    /// share a chain; one of unknown outcome has a chain of its own, as in the known graph).
    pub chain_of: Vec<(u32, u32)>,
    pub num_chains: u32,
    /// Per node, its session; and whether it committed (an unknown outcome precedes nobody).
    pub session: Vec<u32>,
    pub committed: Vec<bool>,
    pub num_keys: usize,
}

impl Facts {
    pub fn reads_of(&self, n: Node) -> &[(u32, Node, u32)] {
        &self.reads[self.read_start[n as usize] as usize..self.read_start[n as usize + 1] as usize]
    }
    pub fn writes_of(&self, n: Node) -> &[u32] {
        &self.wkeys[self.wkey_start[n as usize] as usize..self.wkey_start[n as usize + 1] as usize]
    }
    pub fn num_nodes(&self) -> usize {
        self.node_txn.len() + 1
    }

    /// `committed_unknown`: transactions of unknown outcome known to have committed (an online
    /// round's, whose readers earlier rounds deleted).
    pub fn build(
        h: &History,
        r: &Resolution,
        committed_unknown: &[TxnId],
    ) -> Result<Facts, Finding> {
        let Participants {
            inc,
            excluded_unknown,
            node_txn,
            txn_node,
        } = participants(h, r, committed_unknown)?;
        let n = node_txn.len() + 1;
        let overwritten = Overwritten::of(h);
        let mut stamp = vec![u32::MAX; h.num_keys()];
        let mut own = vec![0u32; h.num_keys()];
        let mut wr_stamp = vec![u32::MAX; n];
        let mut f = Facts {
            node_txn,
            excluded_unknown,
            known: Vec::new(),
            read_start: vec![0],
            reads: Vec::new(),
            wkey_start: vec![0],
            wkeys: Vec::new(),
            chain_of: vec![(u32::MAX, 0); n],
            num_chains: 0,
            session: vec![u32::MAX; n],
            committed: vec![true; n],
            num_keys: h.num_keys(),
        };
        // The initial state writes every key and reads nothing.
        f.read_start.push(0);
        f.wkey_start.push(0);
        for node in 1..n as Node {
            let t = f.node_txn[node as usize - 1];
            let first_w = f.wkeys.len();
            for o in h.ops(t) {
                let k = h.op_key[o];
                let op = o as u32;
                if h.op_kind[o] == OpKind::Write {
                    if stamp[k as usize] != node {
                        f.wkeys.push(k);
                    }
                    stamp[k as usize] = node;
                    own[k as usize] = op;
                    continue;
                }
                let src = r.read_from[o];
                if stamp[k as usize] == node {
                    let mine = own[k as usize];
                    let seen = src == mine
                        || (h.op_kind[o] == OpKind::Read
                            && h.op_value[o] == h.op_value[mine as usize]);
                    if !seen {
                        return Err(Finding::OwnWriteNotSeen {
                            txn: t,
                            op,
                            own: mine,
                        });
                    }
                    continue;
                }
                let w = match src {
                    FROM_NOBODY => return Err(Finding::ReadOfNobody { op }),
                    FROM_INIT => INIT,
                    s => {
                        let wt = r.op_txn[s as usize];
                        if wt == t {
                            return Err(Finding::FutureRead { txn: t, op });
                        }
                        if !inc[wt as usize] {
                            return Err(Finding::AbortedRead { op });
                        }
                        if overwritten.contains(s) {
                            return Err(Finding::IntermediateRead { op });
                        }
                        txn_node[wt as usize]
                    }
                };
                f.reads.push((k, w, op));
                if w != INIT && wr_stamp[w as usize] != node {
                    wr_stamp[w as usize] = node;
                    f.known.push((w, node, Label::fact(EdgeKind::Wr, k)));
                }
            }
            f.wkeys[first_w..].sort_unstable();
            f.read_start.push(f.reads.len() as u32);
            f.wkey_start.push(f.wkeys.len() as u32);
        }
        f.session_order(h, &txn_node);
        Ok(f)
    }

    /// Session order as the known graph has it (`graph::walk_sessions`); the initial state is
    /// on no chain.
    fn session_order(&mut self, h: &History, txn_node: &[Node]) {
        self.num_chains = walk_sessions(h, txn_node, h.num_sessions(), |n, s, at, prev, unknown| {
            self.session[n as usize] = s;
            self.committed[n as usize] = !unknown;
            self.chain_of[n as usize] = at;
            if let Some(p) = prev {
                self.known
                    .push((p, n, Label::fact(EdgeKind::Session, NO_KEY)));
            }
        }) as u32;
    }
}
