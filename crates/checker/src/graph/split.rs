//! Snapshot isolation's graph: each transaction is two nodes, its snapshot (start) and its
//! commit, with start → commit. A dependency a → b (session, write→read, version order, real
//! time) puts a's commit before b's snapshot; an anti-dependency a → b (a read a version b
//! overwrote) puts a's snapshot before b's commit. A cycle in this graph is exactly a cycle of
//! dependencies with no two anti-dependencies in a row (every anti-dependency must be entered
//! at a snapshot, which only a dependency reaches): Adya's G-SI, or acyclicity of
//! (SO ∪ WR ∪ WW) ; RW? of Cerone and Gotsman. So the serializability machinery — chains,
//! constraints, pruning, the solver — decides SI unchanged over this graph, and with edges
//! linear in the history instead of the composed relation's quadratic count.
//!
//! Every edge is built between transactions' (commit) nodes and placed by [`Built::ends`];
//! under serializability a transaction is one node and `ends` is the identity.

use super::{Built, EdgeKind, Label, Node, INIT, NO_KEY};

impl Built {
    /// Splits every transaction node into snapshot and commit (before any edge is added): the
    /// snapshot nodes follow the commit nodes, and gates follow them.
    pub(super) fn split_nodes(&mut self) {
        let n = self.node_txn.len() as Node;
        self.split = true;
        self.first_start = n + 1;
        self.num_nodes += n as usize;
        self.first_gate = self.num_nodes as Node;
        self.chain_of.resize(self.num_nodes, (u32::MAX, 0));
    }

    /// Once session chains are laid out: each transaction's snapshot sits just before its
    /// commit on its session's chain, and precedes it.
    pub(super) fn split_chains(&mut self) {
        if !self.split {
            return;
        }
        for c in 1..self.first_start {
            let s = self.start(c);
            let (ch, pos) = self.chain_of[c as usize];
            self.chain_of[c as usize] = (ch, 2 * pos + 1);
            self.chain_of[s as usize] = (ch, 2 * pos);
            self.edges.push((s, c));
            self.labels.push(Label::fact(EdgeKind::Within, NO_KEY));
        }
    }

    /// How this graph places edges (a copy, for closures that cannot borrow the graph).
    #[inline]
    pub fn placer(&self) -> Placer {
        Placer {
            split: self.split,
            first_start: self.first_start,
        }
    }

    /// The snapshot node of transaction node `n` (`n` itself under serializability, and for
    /// nodes that are not transactions).
    #[inline]
    pub fn start(&self, n: Node) -> Node {
        self.placer().start(n)
    }

    /// Whether `n` is a transaction's snapshot node.
    #[inline]
    pub fn is_start(&self, n: Node) -> bool {
        self.split && n >= self.first_start && n < self.first_gate
    }

    /// Where an edge of `kind` between transaction (or gate) nodes goes: see [`Placer::ends`].
    #[inline]
    pub fn ends(&self, u: Node, v: Node, kind: EdgeKind) -> (Node, Node) {
        self.placer().ends(u, v, kind)
    }

    /// Adds a known edge between transaction (or gate) nodes, placed by [`Self::ends`].
    #[inline]
    pub fn push_edge(&mut self, u: Node, v: Node, label: Label) {
        let e = self.ends(u, v, label.kind);
        self.edges.push(e);
        self.labels.push(label);
    }

    /// One option of a constraint as placed edges: `raw` (between transaction or gate nodes)
    /// and, under snapshot isolation, the version order itself (`tail` before `head`), which
    /// there is not implied by the readers' anti-dependencies: it keeps two concurrent
    /// transactions from writing one key.
    pub fn place_side(
        &self,
        raw: impl IntoIterator<Item = (Node, Node, Label)>,
        key: u32,
        tail: Node,
        head: Node,
    ) -> Vec<(Node, Node, Label)> {
        let pl = self.placer();
        let mut out: Vec<(Node, Node, Label)> = raw
            .into_iter()
            .map(|(u, v, l)| {
                let (a, b) = pl.ends(u, v, l.kind);
                (a, b, l)
            })
            .collect();
        if let Some(ww) = pl.version_edge(tail, head) {
            if !out.iter().any(|&(u, v, _)| (u, v) == ww) {
                out.push((ww.0, ww.1, Label::fact(EdgeKind::Ww, key)));
            }
        }
        out
    }
}

/// Where edges go: under snapshot isolation transaction node `n` (its commit, `< first_start`)
/// has its snapshot at `n + first_start - 1`.
#[derive(Clone, Copy)]
pub struct Placer {
    pub split: bool,
    first_start: Node,
}

impl Placer {
    /// The snapshot node of transaction node `n` (`n` itself when not split or not a
    /// transaction).
    #[inline]
    pub fn start(self, n: Node) -> Node {
        if self.split && n != INIT && n < self.first_start {
            n + self.first_start - 1
        } else {
            n
        }
    }

    /// An anti-dependency leaves `u`'s snapshot; every other edge enters `v`'s snapshot.
    #[inline]
    pub fn ends(self, u: Node, v: Node, kind: EdgeKind) -> (Node, Node) {
        if kind == EdgeKind::Rw {
            (self.start(u), v)
        } else {
            (u, self.start(v))
        }
    }

    /// Under snapshot isolation, the edge "`tail`'s version directly or indirectly before
    /// `head`'s" that an option ordering two writes must state itself (None: implied by the
    /// option's other edges, or by the initial version preceding everything).
    #[inline]
    pub fn version_edge(self, tail: Node, head: Node) -> Option<(Node, Node)> {
        (self.split && tail != INIT).then(|| (tail, self.start(head)))
    }
}
