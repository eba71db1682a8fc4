//! Why a deduced edge holds, in a form another program can replay. Pruning (and the solver)
//! add one option of a constraint because the other closes a cycle; the reason given is that
//! cycle, found among the edges known before the deduced edge was added, with the other
//! option's edge marked as assumed, and its own deduced edges explained the same way. Every
//! reason uses strictly earlier edges, so the explanation is well-founded.

use super::explain::is_forced;
use super::{Deduction, EdgeNote, Explainer};
use crate::graph::{self, Built, Csr, Node};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;

/// Deduced edges explained per certificate before the rest are named only in words (a
/// certificate stays readable, and its cost bounded, whatever pruning did).
const MAX_EXPLAINED: u32 = 400;
const MAX_DEPTH: u32 = 24;

pub(crate) struct Deducer<'a> {
    pub x: Explainer<'a>,
    /// The graph reasons are searched in, made the first time one is (see `cert::Cyclic`).
    csr: &'a dyn Fn() -> &'a Csr,
    first: RefCell<HashMap<u32, u32>>,
    left: Cell<u32>,
}

impl<'a> Deducer<'a> {
    pub fn new(x: Explainer<'a>, csr: &'a dyn Fn() -> &'a Csr) -> Self {
        Deducer {
            x,
            csr,
            first: RefCell::new(HashMap::new()),
            left: Cell::new(MAX_EXPLAINED),
        }
    }

    fn b(&self) -> &Built {
        self.x.b
    }

    /// The index of the first edge constraint `c` added: its reason must come from before it.
    fn first_index(&self, c: u32) -> u32 {
        if let Some(&i) = self.first.borrow().get(&c) {
            return i;
        }
        let i = self
            .b()
            .labels
            .iter()
            .position(|l| l.constraint == c)
            .unwrap_or(0) as u32;
        self.first.borrow_mut().insert(c, i);
        i
    }

    /// The note for known edge `e` (an index into the built edges).
    pub fn note(&self, e: u32) -> EdgeNote {
        self.note_at(e, 0)
    }

    fn note_at(&self, e: u32, depth: u32) -> EdgeNote {
        let b = self.b();
        let l = b.labels[e as usize];
        if !is_forced(&l) {
            return EdgeNote::default();
        }
        let c = &b.constraints[l.constraint as usize];
        let (u, v) = b.edges[e as usize];
        // An option's own edge, or the tail → head edge stated beside it (into b's head: the
        // first option, which puts chain a first).
        let added_first = b.first_edges(c).iter().any(|&(a, bb, _)| (a, bb) == (u, v))
            || (!b
                .second_edges(c)
                .iter()
                .any(|&(a, bb, _)| (a, bb) == (u, v))
                && v == c.b.0);
        let (ha, hb) = (self.x.node_name(c.a.0), self.x.node_name(c.b.0));
        let key = &self.x.h.keys[c.key as usize];
        // The first option puts chain a first; the other order is the one not taken.
        let (other, desc) = if added_first {
            (
                b.second_edges(c),
                format!("{ha}'s writes of {key} after {hb}'s"),
            )
        } else {
            (
                b.first_edges(c),
                format!("{hb}'s writes of {key} after {ha}'s"),
            )
        };
        let desc = format!("the other version order ({desc}) is impossible");
        if depth > MAX_DEPTH || self.left.get() == 0 {
            return EdgeNote {
                forced_because: Some(desc),
                ..Default::default()
            };
        }
        self.left.set(self.left.get() - 1);
        let limit = self.first_index(l.constraint);
        for &(ou, ov, ol) in other {
            let Some(path) = graph::shortest_path_below((self.csr)(), ov, ou, limit) else {
                continue;
            };
            let mut es: Vec<(Node, Node, crate::graph::Label)> = path
                .iter()
                .map(|&p| {
                    (
                        b.edges[p as usize].0,
                        b.edges[p as usize].1,
                        b.labels[p as usize],
                    )
                })
                .collect();
            es.push((ou, ov, ol));
            let last = es.len() - 1;
            let notes = |i: usize| {
                if i == last {
                    EdgeNote {
                        assumed: true,
                        ..Default::default()
                    }
                } else {
                    self.note_at(path[i], depth + 1)
                }
            };
            let cycle = self.x.path(&es, &notes);
            let chain: Vec<String> = cycle
                .iter()
                .map(|e| format!("{} -{}-> ", e.from, e.kind.short()))
                .collect();
            return EdgeNote {
                forced_because: Some(format!(
                    "{desc}: it would close the cycle {}{}",
                    chain.concat(),
                    cycle[0].from
                )),
                deduced: Some(Box::new(Deduction { cycle })),
                assumed: false,
            };
        }
        EdgeNote {
            forced_because: Some(desc),
            ..Default::default()
        }
    }
}
