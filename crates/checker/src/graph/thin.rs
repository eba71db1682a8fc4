//! Known edges that others imply through a session chain, left out of the graph pruning and
//! the solver search (and kept aside for certificates, which show the direct edge).
//!
//! Of a set E of edges between nodes on chains (a chain's earlier position reaches its later
//! ones), an edge (u, v) is implied when E also has (u, v') with v' earlier on v's chain, or
//! (u', v) with u' later on u's chain. Leaving out every such edge at once keeps reachability:
//! the edge standing in for a left-out one has the same source and target chains and a strictly
//! smaller distance pos(target) − pos(source), so by induction on that distance every left-out
//! edge is implied by kept ones. Read-heavy histories state most of their write→read and
//! reader→gate edges this way (a reader of 160 keys reads from at most one writer per session
//! that matters, a writer is seen first by one reader per session).

use super::{Built, Label, Labels, Node};
use std::sync::Arc;

const NONE: (u32, u32) = (u32::MAX, u32::MAX);

/// Thins the write→read edges of each reader as they are stated, readers in any order (in
/// session order it leaves out the most).
pub(crate) struct WrThinner {
    on: bool,
    /// Per chain: (reader node, latest position of a writer on that chain it read from).
    latest: Vec<(u32, u32)>,
    /// Per writer node: (chain, earliest position) of a reader of it seen so far on one chain.
    first_in: Vec<(u32, u32)>,
}

impl WrThinner {
    pub(crate) fn new(on: bool, num_chains: usize, num_nodes: usize) -> WrThinner {
        WrThinner {
            on,
            latest: if on {
                vec![NONE; num_chains]
            } else {
                Vec::new()
            },
            first_in: if on {
                vec![NONE; num_nodes]
            } else {
                Vec::new()
            },
        }
    }

    /// Adds the write→read edges of one reader (`edges`: placed (writer, reader) with their
    /// labels, one per writer) to `sink`, leaving out those others imply.
    pub(crate) fn add(
        &mut self,
        chain_of: &[(u32, u32)],
        sink: &mut EdgeSink,
        edges: &[(Node, Node, Label)],
    ) {
        if !self.on {
            for &(u, v, l) in edges {
                sink.push(u, v, l);
            }
            return;
        }
        let Some(&(_, r, _)) = edges.first() else {
            return;
        };
        let at = |x: Node| chain_of[x as usize];
        for &(w, _, _) in edges {
            let (c, p) = at(w);
            if c != u32::MAX {
                let slot = &mut self.latest[c as usize];
                if slot.0 != r || slot.1 < p {
                    *slot = (r, p);
                }
            }
        }
        let (rc, rp) = at(r);
        for &(w, _, l) in edges {
            let (c, p) = at(w);
            let later_writer = c != u32::MAX && self.latest[c as usize].1 > p;
            let fi = &mut self.first_in[w as usize];
            let earlier_reader = rc != u32::MAX && fi.0 == rc && fi.1 < rp;
            if rc != u32::MAX && (fi.0 != rc || fi.1 > rp) {
                *fi = (rc, rp);
            }
            if later_writer || earlier_reader {
                sink.spare.leave_out(w, r, l);
            } else {
                sink.push(w, r, l);
            }
        }
    }
}

/// Edges thinning left out. Kept only with `keep` (for a certificate, which shows each step as
/// the history stated it); otherwise only counted, so a check that needs them knows to build
/// the graph again keeping them (`pipeline`).
/// With `only`, of those kept only the edges inside one component: `only[node]` is the node's
/// component, or [`NO_COMP`] (a certificate's cycle lies in one component of the known graph,
/// and an edge left out parallels a path of it, so it joins the nodes of one or none).
/// With `alone`, the build is made for these edges alone: those it keeps are not stored (on a
/// read-heavy history, millions of edges of fresh memory the first build already has).
#[derive(Default)]
pub struct Spare {
    pub keep: bool,
    pub only: Option<Arc<Vec<u32>>>,
    pub alone: bool,
    pub edges: Vec<(Node, Node, Label)>,
    pub left_out: usize,
}

/// A node in no component `Spare::only` keeps edges of.
pub(crate) const NO_COMP: u32 = u32::MAX;

impl Spare {
    pub(crate) fn new(keep: bool) -> Spare {
        Spare {
            keep,
            ..Default::default()
        }
    }
    /// Keeping only the edges inside the components of `only` (see [`Spare`]).
    pub(crate) fn only(only: Arc<Vec<u32>>) -> Spare {
        Spare {
            keep: true,
            only: Some(only),
            ..Default::default()
        }
    }
    /// The same, for a build made for the left-out edges alone (see [`Spare`]).
    pub(crate) fn alone(self) -> Spare {
        Spare {
            alone: true,
            ..self
        }
    }
    /// Another, empty, that keeps what this one keeps.
    pub(crate) fn like(&self) -> Spare {
        Spare {
            keep: self.keep,
            only: self.only.clone(),
            alone: self.alone,
            ..Default::default()
        }
    }
    #[inline]
    pub(crate) fn leave_out(&mut self, u: Node, v: Node, l: Label) {
        if !self.keep {
            self.left_out += 1;
        } else if self.only.as_ref().is_none_or(|c| {
            let cu = c.get(u as usize).copied().unwrap_or(NO_COMP);
            cu != NO_COMP && c.get(v as usize) == Some(&cu)
        }) {
            self.edges.push((u, v, l));
        }
    }
    /// Room for `n` more, where they are all kept.
    pub(crate) fn reserve(&mut self, n: usize) {
        if self.keep && self.only.is_none() {
            self.edges.reserve(n);
        }
    }
    pub(crate) fn absorb(&mut self, other: &Spare) {
        self.edges.extend_from_slice(&other.edges);
        self.left_out += other.left_out;
    }
}

/// Known edges stated apart from the graph (by one range of transactions), joined later.
#[derive(Default)]
pub(crate) struct EdgeSink {
    pub(crate) edges: Vec<(Node, Node)>,
    pub(crate) labels: Labels,
    pub(crate) spare: Spare,
}

impl EdgeSink {
    pub(crate) fn new(spare: &Spare) -> EdgeSink {
        EdgeSink {
            spare: spare.like(),
            ..Default::default()
        }
    }
    #[inline]
    pub(crate) fn push(&mut self, u: Node, v: Node, l: Label) {
        if !self.spare.alone {
            self.edges.push((u, v));
            self.labels.push(l);
        }
    }
    /// Appends everything to the graph's edges, in the order stated.
    pub(crate) fn drain_into(self, b: &mut Built) {
        b.edges.extend_from_slice(&self.edges);
        b.labels.append(&self.labels);
        b.spare.absorb(&self.spare);
    }
}

/// Adds edges from several sources into one target (`sources` sorted by node, so a chain's
/// nodes come in position order), leaving out those from a node its chain's later source
/// follows. `sources` is left holding those kept, first.
pub(crate) fn add_into(b: &mut Built, sources: &mut [Node], target: Node, label: Label, on: bool) {
    if !on || b.spare.keep {
        for i in 0..sources.len() {
            let u = sources[i];
            if on && implied(&b.chain_of, u, sources.get(i + 1).copied()) {
                b.spare.leave_out(u, target, label);
            } else if !b.spare.alone {
                b.edges.push((u, target));
                b.labels.push(label);
            }
        }
        return;
    }
    // Without a branch per source: whether one is left out is as likely as not on a
    // read-heavy history (readers of a version from the same session), so a branch on it was
    // mispredicted half the time, a third of chaining.
    let chain_of = &b.chain_of;
    let n = sources.len();
    let mut kept = 0;
    let mut cur = sources
        .first()
        .map_or((u32::MAX, 0), |&u| chain_of[u as usize]);
    for i in 0..n {
        // Each source's chain place is a scattered read; asked for 8 sources ahead, their
        // misses overlap (80k read-heavy: chaining 170 → 162 ms, medians of 8).
        if let Some(&x) = sources.get(i + 8) {
            krait_history::prefetch(&chain_of[x as usize]);
        }
        let u = sources[i];
        let next = sources
            .get(i + 1)
            .map_or((u32::MAX, 0), |&x| chain_of[x as usize]);
        let left_out = (cur.0 != u32::MAX) & (next.0 == cur.0) & (next.1 > cur.1);
        sources[kept] = u;
        kept += usize::from(!left_out);
        cur = next;
    }
    b.spare.left_out += n - kept;
    b.edges.extend(sources[..kept].iter().map(|&u| (u, target)));
    b.labels.push_n(label, kept);
}

/// Whether the edge from `u` is implied by one from `next`, the next source into the same
/// target: a later node of `u`'s chain.
#[inline]
fn implied(chain_of: &[(u32, u32)], u: Node, next: Option<Node>) -> bool {
    let (c, p) = chain_of[u as usize];
    c != u32::MAX
        && next.is_some_and(|n| {
            let (c2, p2) = chain_of[n as usize];
            c2 == c && p2 > p
        })
}

impl Built {
    /// Puts the left-out edges back, for certificates: a cycle then shows each step as the
    /// history stated it, not as a detour through a session.
    pub(crate) fn restore_spare(&mut self) {
        let spare = std::mem::take(&mut self.spare.edges);
        self.edges.reserve(spare.len());
        for (u, v, l) in spare {
            self.edges.push((u, v));
            self.labels.push(l);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::EdgeKind;

    /// Sources leave out, without a branch per source, exactly the edges the plain rule does
    /// when it keeps them for a certificate: on random sorted sources over chains and nodes on
    /// none.
    #[test]
    fn left_out_edges_are_those_kept_aside_for_certificates() {
        let mut rng = super::super::test_rng::Rng(0xbb67_ae85_84ca_a73bu64);
        let mut next = move |n: u64| rng.below(n);
        let n = 200;
        // Nodes in runs of a chain each, a few on none.
        let chain_of: Vec<(u32, u32)> = (0..n)
            .map(|x| {
                if next(10) == 0 {
                    (u32::MAX, 0)
                } else {
                    ((x / 17) as u32 % 5, x as u32)
                }
            })
            .collect();
        let label = Label::fact(EdgeKind::Rw, 3);
        for round in 0..200 {
            let mut sources: Vec<Node> = (0..next(30)).map(|_| next(n) as Node).collect();
            sources.sort_unstable();
            let plain = |keep: bool| {
                let mut b = Built::plain(
                    Vec::new(),
                    Vec::new(),
                    n as usize,
                    Vec::new(),
                    Labels::default(),
                    chain_of.clone(),
                    5,
                );
                b.spare = Spare::new(keep);
                b
            };
            let mut fast = plain(false);
            let mut kept = plain(true);
            add_into(&mut fast, &mut sources.clone(), 999, label, true);
            add_into(&mut kept, &mut sources.clone(), 999, label, true);
            assert_eq!(fast.edges, kept.edges, "round {round}");
            assert_eq!(fast.labels, kept.labels);
            assert_eq!(fast.spare.left_out, kept.spare.edges.len());
            assert_eq!(fast.edges.len() + fast.spare.left_out, sources.len());
        }
    }
}
