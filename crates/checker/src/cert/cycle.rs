//! Certificates from the graph: the cycle the known graph closed, or the unsatisfiable core the
//! solver found (with every combination of its choices when small), each edge in words.

use super::deduce::Deducer;
use super::{Anomaly, CertConstraint, CertOption, Certificate, EdgeNote, Explainer};
use crate::graph::{self, Built, Constraint, Csr, EdgeKind, Label, Labels, Node, NodeRows};
use krait_history::{History, Resolution, TxnId};
use std::cell::OnceCell;

/// The known edges with these indices, with their labels.
fn labelled(b: &Built, ids: &[u32]) -> Vec<(Node, Node, Label)> {
    ids.iter()
        .map(|&e| {
            (
                b.edges[e as usize].0,
                b.edges[e as usize].1,
                b.labels[e as usize],
            )
        })
        .collect()
}

/// What each edge costs a certificate's cycle: its kind, and whether it is on the collector's
/// fence key (avoided first, so a cycle through the workload's keys is shown when one exists).
/// Packed in a byte an edge, made once: a search looks it up for every edge it relaxes, and
/// a label is found by a binary search over the labels' runs (held per edge, twelve bytes
/// each, their lookups were already a third of the search on a read-heavy graph of 1.6
/// million edges).
fn edge_cost(labels: &Labels, fence: Option<u32>) -> impl Fn(u32) -> (graph::Cost, bool) {
    const AVOID: u8 = 4;
    let packed: Vec<u8> = labels
        .iter()
        .map(|l: Label| {
            let kind = match l.kind {
                EdgeKind::Rw => 0,
                EdgeKind::Session => 1,
                _ => 2,
            };
            kind | if fence == Some(l.key) { AVOID } else { 0 }
        })
        .collect();
    move |e| {
        let p = packed[e as usize];
        let cost = match p & 3 {
            0 => graph::Cost::Rw,
            1 => graph::Cost::Session,
            _ => graph::Cost::Other,
        };
        (cost, p & AVOID != 0)
    }
}

/// The strongly connected components of a graph with a cycle in them (two nodes or more),
/// smallest first (lowest id among equals, so choices are stable), with their transaction
/// nodes, where a certificate's cycle search starts.
struct Comps {
    comp: Vec<u32>,
    order: Vec<u32>,
    /// `members[i]`: the transaction nodes of component `order[i]`.
    members: Vec<Vec<Node>>,
}

impl Comps {
    fn of(b: &Built, csr: &Csr) -> Comps {
        let (comp, ncomp) = graph::scc(b.num_nodes, csr);
        let mut size = vec![0u32; ncomp as usize];
        for &c in &comp {
            size[c as usize] += 1;
        }
        let mut order: Vec<u32> = (0..ncomp).filter(|&c| size[c as usize] > 1).collect();
        order.sort_by_key(|&c| (size[c as usize], c));
        let mut place = vec![u32::MAX; ncomp as usize];
        for (i, &c) in order.iter().enumerate() {
            place[c as usize] = i as u32;
        }
        let mut members = vec![Vec::new(); order.len()];
        for x in 0..b.first_gate {
            let i = place[comp[x as usize] as usize];
            if i != u32::MAX {
                members[i as usize].push(x);
            }
        }
        Comps {
            comp,
            order,
            members,
        }
    }

    /// The best cycle (see `graph::best_cycle`) of the `i`-th smallest component. Edge indices
    /// are `csr`'s.
    fn best(
        &self,
        csr: &Csr,
        i: usize,
        cost: impl Fn(u32) -> (graph::Cost, bool),
        max_starts: usize,
    ) -> Option<Vec<u32>> {
        graph::best_cycle(
            csr,
            &self.comp,
            self.order[i],
            &self.members[i],
            cost,
            max_starts,
            CYCLE_SEARCH_BUDGET,
        )
    }

    /// The best cycle of the smallest component: its cycles are the shortest to read. Without
    /// one, an edge from a node to itself if there is one; None when `csr` is acyclic.
    fn smallest(
        &self,
        csr: &Csr,
        cost: impl Fn(u32) -> (graph::Cost, bool),
        max_starts: usize,
    ) -> Option<Vec<u32>> {
        if self.order.is_empty() {
            return (0..self.comp.len() as Node)
                .find_map(|x| csr.succ(x).iter().find(|&&(y, _)| y == x))
                .map(|&(_, e)| vec![e]);
        }
        self.best(csr, 0, cost, max_starts)
    }
}

/// The best cycle of the smallest strongly connected component of `csr`.
fn smallest_cycle(
    b: &Built,
    csr: &Csr,
    cost: impl Fn(u32) -> (graph::Cost, bool),
    max_starts: usize,
) -> Option<Vec<u32>> {
    Comps::of(b, csr).smallest(csr, cost, max_starts)
}

/// The edges of `b` that a filter keeps, as a graph of their own: `ids` maps its edge indices
/// back to `b`'s.
struct Sub {
    ids: Vec<u32>,
    csr: Csr,
}

impl Sub {
    fn of(b: &Built, keep: impl Fn(u32) -> bool) -> Sub {
        Sub::among(b, 0..b.edges.len() as u32, keep)
    }

    /// The same over the edges `ids` gives (in `b`'s order), not over all of `b`'s.
    fn among(b: &Built, ids: impl Iterator<Item = u32>, keep: impl Fn(u32) -> bool) -> Sub {
        let ids: Vec<u32> = ids.filter(|&e| keep(e)).collect();
        let csr = Csr::build_from(b.num_nodes, || ids.iter().map(|&e| b.edges[e as usize]));
        Sub { ids, csr }
    }

    /// `b`'s indices of the sub-graph's edges `cyc`.
    fn to_b(&self, cyc: Vec<u32>) -> Vec<u32> {
        cyc.into_iter().map(|e| self.ids[e as usize]).collect()
    }
}

/// The same over the edges of `inner` (a sub-graph of `b`) that `keep` keeps; edge indices
/// are `b`'s.
fn smallest_cycle_among(
    b: &Built,
    inner: &Sub,
    keep: impl Fn(u32) -> bool,
    cost: impl Fn(u32) -> (graph::Cost, bool),
) -> Option<Vec<u32>> {
    let sub = Sub::among(b, inner.ids.iter().copied(), keep);
    let cyc = smallest_cycle(b, &sub.csr, |e| cost(sub.ids[e as usize]), 64)?;
    Some(sub.to_b(cyc))
}

/// The known graph's strongly connected components: an edge can lie on a cycle only if it
/// joins two nodes of one with two nodes or more, or is a loop. Edges restored for a
/// certificate each parallel a path through a session, so they leave the components as they
/// are: which of them can lie on a cycle is known before they are made.
///
/// Made before the edges are restored; the graph of the edges it was made of (`reasons`) is
/// where the deductions' reasons are searched, as they come from before the restored edges.
/// That graph, with each edge's index, is made only if a certificate's cycle has a deduced
/// edge: the components need the targets alone (half the memory: 47 MB instead of 94 for the
/// 5.9 million known edges of a read-heavy history of 80k transactions).
pub(crate) struct Cyclic {
    edges_at: usize,
    csr: OnceCell<Csr>,
    comp: Vec<u32>,
    size: Vec<u32>,
}

impl Cyclic {
    pub(crate) fn of(b: &Built) -> Cyclic {
        let rows = NodeRows::build(b.num_nodes, &b.edges, false);
        let (comp, ncomp) = graph::scc(b.num_nodes, &rows);
        drop(rows);
        let mut size = vec![0u32; ncomp as usize];
        for &c in &comp {
            size[c as usize] += 1;
        }
        Cyclic {
            edges_at: b.edges.len(),
            csr: OnceCell::new(),
            comp,
            size,
        }
    }

    /// The graph of the edges `b` had when this was made, each with its index (`b` is the
    /// same graph, with restored edges after them or not).
    fn reasons<'a>(&'a self, b: &Built) -> &'a Csr {
        self.csr
            .get_or_init(|| Csr::build(b.num_nodes, &b.edges[..self.edges_at], false))
    }

    /// Each node's component where it has two nodes or more, else `graph::NO_COMP`.
    pub(crate) fn nodes(&self) -> Vec<u32> {
        self.comp
            .iter()
            .map(|&c| {
                if self.size[c as usize] > 1 {
                    c
                } else {
                    graph::NO_COMP
                }
            })
            .collect()
    }

    pub(crate) fn may_close(&self, u: Node, v: Node) -> bool {
        let c = self.comp[u as usize];
        c == self.comp[v as usize] && (self.size[c as usize] > 1 || u == v)
    }
}

/// Edges a certificate's cycle search may look at once it has a cycle (a few linear passes
/// over a million-transaction component).
pub(crate) const CYCLE_SEARCH_BUDGET: usize = 16_000_000;

/// Ambiguous reads a core's summary names before counting the rest.
const SUMMARY_READS: usize = 3;

/// Strongly connected components searched for further anomalies, smallest first.
const MORE_COMPONENTS: usize = 16;

/// The certificate of the cycle a REJECT found, and up to `more` further ones, one per anomaly
/// class not reported yet.
///
/// The verdict's cycle avoids the collector's fence key where the workload's own keys close
/// one (the workload's anomaly, rather than one only the instrumentation shows), else it is
/// the best cycle of the smallest component. The further ones come from the same bounded,
/// stable searches: the best cycle of write orders, session and real-time order alone (a G0),
/// then with write→read edges too (G1c), then the best cycle of each component, smallest first
/// (fewest anti-dependencies first).
///
/// `components` are those of the known graph, before edges were restored for the certificate
/// (see `Built::restore_spare`). Only the edges that can lie on a cycle are searched: on a
/// read-heavy graph of twenty million edges, the few thousand inside its one cyclic component.
pub(crate) fn cycle_certificates(
    h: &History,
    r: &Resolution,
    b: &Built,
    components: &Cyclic,
    more: usize,
) -> (Certificate, Vec<Certificate>) {
    let reasons = || components.reasons(b);
    let inner = Sub::of(b, |e| {
        let (u, v) = b.edges[e as usize];
        components.may_close(u, v)
    });
    let cost = edge_cost(&b.labels, h.fence_key);
    let inner_cost = |e: u32| cost(inner.ids[e as usize]);
    let comps = Comps::of(b, &inner.csr);
    let workload = h
        .fence_key
        .and_then(|fk| smallest_cycle_among(b, &inner, |e| b.labels[e as usize].key != fk, &cost));
    // Otherwise the first cycle is the smallest component's best, which the further ones
    // would search for again first.
    let first_is_smallest = workload.is_none();
    let first_cycle = workload
        .or_else(|| Some(inner.to_b(comps.smallest(&inner.csr, inner_cost, 64)?)))
        .expect("a cycle exists");
    let first = certificate_of(h, r, b, &reasons, &first_cycle);
    let mut also = Vec::new();
    if more == 0 {
        return (first, also);
    }
    let mut seen = vec![first.anomaly];
    let without_rw = |with_wr: bool| {
        move |e: u32| match b.labels[e as usize].kind {
            EdgeKind::Rw => false,
            EdgeKind::Wr => with_wr,
            _ => true,
        }
    };
    // Searched lazily: none past the cap.
    let candidates = [false, true]
        .into_iter()
        .map(|with_wr| smallest_cycle_among(b, &inner, without_rw(with_wr), &cost))
        .chain(
            (0..comps.order.len().min(MORE_COMPONENTS))
                .filter(|&i| !(i == 0 && first_is_smallest))
                .map(|i| Some(inner.to_b(comps.best(&inner.csr, i, inner_cost, 64)?))),
        )
        .flatten();
    for cyc in candidates {
        if cyc == first_cycle {
            continue;
        }
        let c = certificate_of(h, r, b, &reasons, &cyc);
        if !seen.contains(&c.anomaly) {
            seen.push(c.anomaly);
            also.push(c);
            if also.len() == more {
                break;
            }
        }
    }
    (first, also)
}

/// The certificate of cycle `cyc` (indices into `b`'s edges; `reasons` gives the graph where
/// deductions' reasons are searched).
fn certificate_of<'a>(
    h: &'a History,
    r: &'a Resolution,
    b: &'a Built,
    reasons: &'a dyn Fn() -> &'a Csr,
    cyc: &[u32],
) -> Certificate {
    let es = labelled(b, cyc);
    let x = Explainer { h, r, b };
    let d = Deducer::new(Explainer { h, r, b }, reasons);
    let cycle = x.path(&es, &|i| d.note(cyc[i]));
    let anomaly = if b.split {
        super::classify_si(&cycle)
    } else {
        super::classify(&cycle)
    };
    Certificate {
        anomaly,
        summary: super::explain::cycle_summary(anomaly, &cycle),
        txns: x.txns_of_edges(&es),
        cycle,
        constraints: Vec::new(),
        cases: Vec::new(),
    }
}

pub(crate) fn unsat_certificate(
    h: &History,
    r: &Resolution,
    b: &Built,
    remaining: &[u32],
    core: &[u32],
    choices: &[u32],
) -> Certificate {
    let x = Explainer { h, r, b };
    let csr = Csr::build(b.num_nodes, &b.edges, false);
    let reasons = || &csr;
    let d = Deducer::new(Explainer { h, r, b }, &reasons);
    let mut txn_ids: Vec<TxnId> = Vec::new();
    let mut constraints = Vec::new();
    for &i in core {
        let c: &Constraint = &b.constraints[remaining[i as usize] as usize];
        let key = h.keys[c.key as usize].clone();
        let (ha, hb) = (x.node_name(c.a.0), x.node_name(c.b.0));
        for n in [c.a.0, c.a.1, c.b.0, c.b.1] {
            if let Some(t) = b.txn_of(n) {
                txn_ids.push(t);
            }
        }
        let assumed = |_| EdgeNote {
            assumed: true,
            ..Default::default()
        };
        let option = |es: &[(Node, Node, Label)], choice: String| CertOption {
            choice,
            edges: es
                .iter()
                .map(|&(u, v, l)| x.path(&[(u, v, l)], &assumed).remove(0))
                .collect(),
            closes_cycle: es
                .iter()
                .find_map(|&(u, v, l)| {
                    let path = graph::shortest_path(&csr, v, u)?;
                    let mut es = labelled(b, &path);
                    es.push((u, v, l));
                    let last = es.len() - 1;
                    Some(x.path(&es, &|i| {
                        if i == last {
                            assumed(i)
                        } else {
                            d.note(path[i])
                        }
                    }))
                })
                .unwrap_or_default(),
        };
        constraints.push(CertConstraint {
            key: key.clone(),
            options: [
                option(
                    b.first_edges(c),
                    format!("chain of {key} from {ha} before chain from {hb}"),
                ),
                option(
                    b.second_edges(c),
                    format!("chain of {key} from {hb} before chain from {ha}"),
                ),
            ],
        });
    }
    let mut reads = Vec::new();
    for &ci in choices {
        let c = &b.choices[ci as usize];
        txn_ids.extend(b.txn_of(c.reader));
        txn_ids.extend(c.cands.iter().filter_map(|&w| b.txn_of(w)));
        reads.push(format!(
            "{} read {} = {} from {}",
            x.node_name(c.reader),
            h.keys[c.key as usize],
            h.value_text(c.ops[0] as usize),
            super::explain::candidates_text(h, r, c.ops[0])
        ));
    }
    let summary = if reads.is_empty() {
        format!(
            "{}: {} version-order choices, each of whose combinations closes a cycle",
            Anomaly::Unsatisfiable.name(),
            core.len()
        )
    } else {
        format!(
            "{}: {} version-order choices and {} reads of a value several writes wrote ({}), each of whose combinations closes a cycle",
            Anomaly::Unsatisfiable.name(),
            core.len(),
            reads.len(),
            // One sentence stays readable: the first few reads, the rest counted.
            match reads.len() {
                n if n > SUMMARY_READS => format!(
                    "{}; and {} more",
                    reads[..SUMMARY_READS].join("; "),
                    n - SUMMARY_READS
                ),
                _ => reads.join("; "),
            }
        )
    };
    let combos = choices.iter().fold(1usize << core.len().min(20), |n, &ci| {
        n.saturating_mul(b.choices[ci as usize].num_alive())
    });
    let cases = if core.len() <= MAX_CASE_CONSTRAINTS && combos <= MAX_CASES {
        case_analysis(&x, &d, b, remaining, core, choices, &constraints)
    } else {
        Vec::new()
    };
    Certificate {
        anomaly: Anomaly::Unsatisfiable,
        summary,
        cycle: Vec::new(),
        constraints,
        cases,
        txns: {
            let mut seen = Vec::new();
            for t in txn_ids {
                if !seen.contains(&t) {
                    seen.push(t);
                }
            }
            seen.into_iter()
                .map(|t| super::describe_txn(h, r, t))
                .collect()
        },
    }
}

/// Cores up to this size are explained case by case (2^n cases, times each read's candidates).
const MAX_CASE_CONSTRAINTS: usize = 4;
const MAX_CASES: usize = 32;

/// Every combination of the core's choices, each with the cycle it closes: a complete,
/// checkable proof that no choice works.
fn case_analysis(
    x: &Explainer,
    d: &Deducer,
    b: &Built,
    remaining: &[u32],
    core: &[u32],
    choices: &[u32],
    described: &[CertConstraint],
) -> Vec<super::CertCase> {
    let mut cases = Vec::new();
    // Each choice's open candidates; a case picks one of each (mixed radix after the mask).
    let alive: Vec<Vec<u32>> = choices
        .iter()
        .map(|&ci| {
            let c = &b.choices[ci as usize];
            (0..c.cands.len() as u32)
                .filter(|&i| c.alive[i as usize])
                .collect()
        })
        .collect();
    let per_mask: usize = alive.iter().map(Vec::len).product();
    for n in 0..(1usize << core.len()) * per_mask {
        let (mask, mut rest) = ((n / per_mask) as u32, n % per_mask);
        let mut edges = b.edges.clone();
        let mut labels = b.labels.clone();
        let mut choice_words = Vec::new();
        let mut fixed = std::collections::HashMap::new();
        for (j, &i) in core.iter().enumerate() {
            let ci = remaining[i as usize];
            let c = &b.constraints[ci as usize];
            let first = mask >> j & 1 == 0;
            fixed.insert(ci, first);
            let es = if first {
                b.first_edges(c)
            } else {
                b.second_edges(c)
            };
            for &(u, v, l) in es {
                edges.push((u, v));
                labels.push(l);
            }
            choice_words.push(described[j].options[usize::from(!first)].choice.clone());
        }
        let mut picks = Vec::new();
        for (j, &ci) in choices.iter().enumerate() {
            let i = alive[j][rest % alive[j].len()];
            rest /= alive[j].len();
            picks.push((ci, i));
            choice_words.push(super::choices::choice_text(
                x.h,
                b,
                &b.choices[ci as usize],
                i as usize,
            ));
        }
        let side = |p: u32| {
            fixed.get(&p).copied().or(match b.decided.get(p as usize) {
                Some(graph::Known::True) => Some(true),
                Some(graph::Known::False) => Some(false),
                _ => None,
            })
        };
        for (u, v, l) in super::choices::case_cond_edges(b, &picks, &side) {
            edges.push((u, v));
            labels.push(l);
        }
        let choices = choice_words;
        let csr = Csr::build(b.num_nodes, &edges, false);
        let cost = edge_cost(&labels, x.h.fence_key);
        if let Some(cyc) = smallest_cycle(b, &csr, cost, 32) {
            let es: Vec<(Node, Node, Label)> = cyc
                .iter()
                .map(|&e| (edges[e as usize].0, edges[e as usize].1, labels[e as usize]))
                .collect();
            // Edges past the known ones are this case's choices.
            let known = b.edges.len() as u32;
            let note = |i: usize| {
                if cyc[i] >= known {
                    EdgeNote {
                        assumed: true,
                        ..Default::default()
                    }
                } else {
                    d.note(cyc[i])
                }
            };
            cases.push(super::CertCase {
                choices,
                cycle: x.path(&es, &note),
            });
        }
    }
    cases
}
