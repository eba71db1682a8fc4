//! What a choice of writers that breaks a weak level teaches about the other choices: for
//! each violation found, the reads of repeated values whose chosen writer it needs. Every edge
//! of the weak graph is there for reasons: a write→read edge for a read of the writer, a
//! forced edge for its read and the rule's read (or a causal path of such edges), session
//! order and the initial state for none; a transaction of unknown outcome takes part because
//! someone read it. Those reasons hold in every other choice that keeps the same writers for
//! the reads they name, and so does the cycle, which is why a clause "not all of these
//! together" excludes only choices that break the level too.
//!
//! Cycles are found one per strongly connected component, each the shortest through a node of
//! it counting only edges that need a choice, so that what is learnt names few reads.

use super::facts::Facts;
use super::{graph_of, Forced, Rule};
use crate::findings::Finding;
use crate::graph::{scc, Csr, EdgeKind, Node, INIT};
use krait_history::{History, Resolution, TxnStatus};
use std::collections::VecDeque;

/// Cycles looked at, at most, in one broken choice: each is a clause learnt.
const MAX_CYCLES: usize = 64;

/// The reads whose choices one choice of writers depends on, and what it learns.
pub(super) struct Learner<'a> {
    pub h: &'a History,
    /// Per op: whether it is a read whose writer is being chosen.
    pub doubtful: &'a [bool],
    /// Whether to name only the reads a violation needs; otherwise every read chosen, which
    /// excludes just that one choice (trying them all in turn).
    pub precise: bool,
    /// Every read chosen, for the imprecise case.
    pub all: &'a [u32],
}

impl Learner<'_> {
    /// The reads whose choices in `r` the per-transaction finding needs.
    pub fn of_finding(&self, r: &Resolution, finding: &Finding) -> Vec<u32> {
        let op = match finding {
            Finding::ReadProblem { op, .. }
            | Finding::OwnWriteNotSeen { op, .. }
            | Finding::ReadOfNobody { op }
            | Finding::FutureRead { op, .. }
            | Finding::AbortedRead { op }
            | Finding::IntermediateRead { op } => *op,
            _ => return self.all.to_vec(),
        };
        if !self.precise {
            return self.all.to_vec();
        }
        let mut out = Vec::new();
        if self.doubtful[op as usize] {
            out.push(op);
        }
        // A reader of unknown outcome is checked only because someone read it.
        if self.h.txn_status[r.op_txn[op as usize] as usize] != TxnStatus::Committed {
            out.extend(self.unknown_reads(r));
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Reads chosen to have read a transaction of unknown outcome: together, they keep every
    /// such transaction that takes part in it (each takes part because an included one read
    /// it, by a read either stated or chosen).
    fn unknown_reads<'b>(&'b self, r: &'b Resolution) -> impl Iterator<Item = u32> + 'b {
        self.all.iter().copied().filter(|&o| {
            r.writer_txn(o)
                .is_some_and(|t| self.h.txn_status[t as usize] == TxnStatus::Unknown)
        })
    }

    /// For a graph with a cycle: per cycle found, the reads whose choices it needs. An empty
    /// set means the level breaks whatever the choices.
    pub fn of_cycles(&self, r: &Resolution, f: &Facts, forced: &[Forced]) -> Vec<Vec<u32>> {
        if !self.precise {
            return vec![self.all.to_vec()];
        }
        let n = f.num_nodes();
        let (edges, labels, why) = graph_of(f, forced);
        let wr: Vec<bool> = labels.iter().map(|l| l.kind == EdgeKind::Wr).collect();
        let csr = Csr::build(n, &edges, false);
        let (comp, ncomp) = scc(n, &csr);
        let mut size = vec![0u32; ncomp as usize];
        for &c in &comp {
            size[c as usize] += 1;
        }
        let mut causal: Option<Csr> = None;
        let mut out = Vec::new();
        let mut started = vec![false; ncomp as usize];
        for s in 0..n as Node {
            let c = comp[s as usize];
            if size[c as usize] < 2 || started[c as usize] {
                continue;
            }
            started[c as usize] = true;
            let cycle = self.shortest_cycle(f, forced, &csr, &comp, (&edges, &why, &wr), s);
            let mut need = Vec::new();
            // Whether a transaction of unknown outcome takes part: on the cycle, as the reader
            // behind a forced edge, or on a causal path.
            let mut unknown = false;
            for e in cycle {
                let (u, v) = edges[e as usize];
                unknown |= self.uncommitted(f, u) || self.uncommitted(f, v);
                match why[e as usize] {
                    u32::MAX if wr[e as usize] => need.extend(self.wr_reads(f, u, v)),
                    u32::MAX => {}
                    i => {
                        let fe = &forced[i as usize];
                        need.extend(self.forced_reads(fe));
                        let t2 = reader_of(f, r, fe);
                        unknown |= self.uncommitted(f, t2);
                        if fe.rule == Rule::Causal {
                            let csr = causal.get_or_insert_with(|| {
                                Csr::build_from(n, || f.known.iter().map(|&(u, v, _)| (u, v)))
                            });
                            let (reads, unknown_on_path) =
                                self.causal_path_reads(f, csr, fe.t3, t2);
                            need.extend(reads);
                            unknown |= unknown_on_path;
                        }
                    }
                }
            }
            if unknown {
                need.extend(self.unknown_reads(r));
            }
            need.sort_unstable();
            need.dedup();
            out.push(need);
            if out.len() >= MAX_CYCLES {
                break;
            }
        }
        out
    }

    /// Whether node `x` is a transaction of unknown outcome (which takes part only because
    /// someone read it).
    fn uncommitted(&self, f: &Facts, x: Node) -> bool {
        x != INIT && self.h.txn_status[f.node_txn[x as usize - 1] as usize] != TxnStatus::Committed
    }

    /// The doubtful reads a forced edge names: the read of t1 and the rule's read of t3.
    fn forced_reads(&self, fe: &Forced) -> impl Iterator<Item = u32> + '_ {
        let via = match fe.rule {
            Rule::Earlier { via } | Rule::ReadFrom { via } => Some(via),
            Rule::Session | Rule::Causal => None,
        };
        std::iter::once(fe.op)
            .chain(via)
            .filter(|&o| self.doubtful[o as usize])
    }

    /// A known edge u → v: session order needs nothing; write→read needs one of v's reads of
    /// u, none if one of them is stated.
    fn wr_reads(&self, f: &Facts, u: Node, v: Node) -> Option<u32> {
        let mut chosen = None;
        for &(_, w, op) in f.reads_of(v) {
            if w == u {
                if !self.doubtful[op as usize] {
                    return None;
                }
                chosen.get_or_insert(op);
            }
        }
        chosen
    }

    /// The reads a causal path from `from` to `to` in session order and write→read needs,
    /// along the path that needs fewest (`known` is `f.known` as adjacency); and whether a
    /// transaction of unknown outcome lies on it.
    fn causal_path_reads(&self, f: &Facts, known: &Csr, from: Node, to: Node) -> (Vec<u32>, bool) {
        let n = f.num_nodes();
        let needs = |e: u32| {
            let (u, v, l) = f.known[e as usize];
            if l.kind == EdgeKind::Wr {
                self.wr_reads(f, u, v)
            } else {
                None
            }
        };
        let mut s = ZeroOne::new(n, from);
        while let Some(x) = s.q.pop_front() {
            if x == to {
                break;
            }
            for &(y, e) in known.succ(x) {
                s.relax(x, y, e, u32::from(needs(e).is_some()));
            }
        }
        let ZeroOne { dist, via, .. } = s;
        debug_assert!(
            dist[to as usize] != u32::MAX,
            "a causal edge has a causal path"
        );
        let mut out = Vec::new();
        let mut unknown = false;
        let mut y = to;
        while y != from && via[y as usize] != u32::MAX {
            let e = via[y as usize];
            out.extend(needs(e));
            unknown |= self.uncommitted(f, y);
            y = f.known[e as usize].0;
        }
        (out, unknown || self.uncommitted(f, from))
    }

    /// The edges of a cycle through `s` within its component, fewest edges needing a choice
    /// first (a 0-1 search; a causal edge counts as needing one).
    fn shortest_cycle(
        &self,
        f: &Facts,
        forced: &[Forced],
        csr: &Csr,
        comp: &[u32],
        (edges, why, wr): (&[(Node, Node)], &[u32], &[bool]),
        s: Node,
    ) -> Vec<u32> {
        let n = f.num_nodes();
        let c = comp[s as usize];
        let weight = |e: u32| -> u32 {
            let (u, v) = edges[e as usize];
            match why[e as usize] {
                u32::MAX if wr[e as usize] => u32::from(self.wr_reads(f, u, v).is_some()),
                u32::MAX => 0,
                i => {
                    let fe = &forced[i as usize];
                    u32::from(fe.rule == Rule::Causal || self.forced_reads(fe).next().is_some())
                }
            }
        };
        let mut z = ZeroOne::new(n, s);
        // The best edge back into s: (its cost in all, the edge).
        let mut best: Option<(u32, u32)> = None;
        while let Some(x) = z.q.pop_front() {
            if best.is_some_and(|(b, _)| z.dist[x as usize] >= b) {
                break;
            }
            for &(y, e) in csr.succ(x) {
                if comp[y as usize] != c {
                    continue;
                }
                let w = weight(e);
                if y == s {
                    let d = z.dist[x as usize] + w;
                    if best.is_none_or(|(b, _)| d < b) {
                        best = Some((d, e));
                    }
                    continue;
                }
                z.relax(x, y, e, w);
            }
        }
        let via = z.via;
        let (_, last) = best.expect("a node of a strongly connected component lies on a cycle");
        let mut cycle = vec![last];
        let mut x = edges[last as usize].0;
        while x != s {
            let e = via[x as usize];
            cycle.push(e);
            x = edges[e as usize].0;
        }
        cycle.reverse();
        cycle
    }
}

/// A search where edges cost 0 or 1: a deque, cost-0 edges to its front.
struct ZeroOne {
    dist: Vec<u32>,
    /// The edge each node was last reached by.
    via: Vec<u32>,
    q: VecDeque<Node>,
}

impl ZeroOne {
    fn new(n: usize, from: Node) -> ZeroOne {
        let mut z = ZeroOne {
            dist: vec![u32::MAX; n],
            via: vec![u32::MAX; n],
            q: VecDeque::new(),
        };
        z.dist[from as usize] = 0;
        z.q.push_back(from);
        z
    }

    fn relax(&mut self, x: Node, y: Node, e: u32, w: u32) {
        let d = self.dist[x as usize] + w;
        if d < self.dist[y as usize] {
            self.dist[y as usize] = d;
            self.via[y as usize] = e;
            if w == 0 {
                self.q.push_front(y);
            } else {
                self.q.push_back(y);
            }
        }
    }
}

/// The node whose read a forced edge comes from (nodes are numbered in transaction order).
fn reader_of(f: &Facts, r: &Resolution, fe: &Forced) -> Node {
    let t = r.op_txn[fe.op as usize];
    let i = f.node_txn.binary_search(&t).expect("a reader takes part");
    i as Node + 1
}
