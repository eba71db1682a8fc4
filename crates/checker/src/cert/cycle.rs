//! Certificates from the graph: the cycle the known graph closed, or the unsatisfiable core the
//! solver found (with every combination of its choices when small), each edge in words.

use super::deduce::Deducer;
use super::{Anomaly, CertConstraint, CertOption, Certificate, EdgeNote, Explainer};
use crate::graph::{self, Built, Constraint, Csr, EdgeKind, Label, Node};
use krait_history::{History, Resolution, TxnId};

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
fn edge_cost(labels: &[Label], fence: Option<u32>) -> impl Fn(u32) -> (graph::Cost, bool) + '_ {
    move |e| {
        let l = labels[e as usize];
        let cost = match l.kind {
            EdgeKind::Rw => graph::Cost::Rw,
            EdgeKind::Session => graph::Cost::Session,
            _ => graph::Cost::Other,
        };
        (cost, fence == Some(l.key))
    }
}

/// The best cycle (see `graph::best_cycle`) of the smallest non-trivial strongly connected
/// component of `csr` (lowest id among equals, so the choice is stable): its cycles are the
/// shortest to read. None when `csr` is acyclic. Edge indices are `csr`'s.
fn smallest_cycle(
    b: &Built,
    csr: &Csr,
    cost: impl Fn(u32) -> (graph::Cost, bool),
    max_starts: usize,
) -> Option<Vec<u32>> {
    let (comp, ncomp) = graph::scc(b.num_nodes, csr);
    let mut size = vec![0u32; ncomp as usize];
    for &c in &comp {
        size[c as usize] += 1;
    }
    let Some(cid) = (0..ncomp)
        .filter(|&c| size[c as usize] > 1)
        .min_by_key(|&c| (size[c as usize], c))
    else {
        // No component of two or more: the cycle, if any, is an edge from a node to itself.
        return (0..b.num_nodes as Node)
            .find_map(|x| csr.succ(x).iter().find(|&&(y, _)| y == x))
            .map(|&(_, e)| vec![e]);
    };
    let starts: Vec<Node> = (0..b.first_gate)
        .filter(|&x| comp[x as usize] == cid)
        .collect();
    graph::best_cycle(
        csr,
        &comp,
        cid,
        &starts,
        cost,
        max_starts,
        CYCLE_SEARCH_BUDGET,
    )
}

/// Node visits a certificate's cycle search may spend once it has a cycle (a few linear passes
/// over a million-transaction component).
const CYCLE_SEARCH_BUDGET: usize = 4_000_000;

pub(crate) fn cycle_certificate(h: &History, r: &Resolution, b: &Built) -> Certificate {
    let csr = Csr::build(b.num_nodes, &b.edges, false);
    let cost = edge_cost(&b.labels, h.fence_key);
    // A cycle that does not use the collector's fence key, in whichever component holds one:
    // the workload's anomaly, rather than one only the instrumentation shows.
    let workload = h.fence_key.and_then(|fk| {
        let ids: Vec<u32> = (0..b.edges.len() as u32)
            .filter(|&e| b.labels[e as usize].key != fk)
            .collect();
        let kept: Vec<(Node, Node)> = ids.iter().map(|&e| b.edges[e as usize]).collect();
        let sub = Csr::build(b.num_nodes, &kept, false);
        let cyc = smallest_cycle(b, &sub, |e| cost(ids[e as usize]), 64)?;
        Some(cyc.into_iter().map(|e| ids[e as usize]).collect())
    });
    let cyc = workload
        .or_else(|| smallest_cycle(b, &csr, &cost, 64))
        .expect("a cycle exists");
    certificate_of(h, r, b, &csr, &cyc)
}

/// The certificate of cycle `cyc` (indices into `b`'s edges; `csr` is over all of them).
fn certificate_of(h: &History, r: &Resolution, b: &Built, csr: &Csr, cyc: &[u32]) -> Certificate {
    let es = labelled(b, cyc);
    let x = Explainer { h, r, b };
    let d = Deducer::new(Explainer { h, r, b }, csr);
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

/// Ambiguous reads a core's summary names before counting the rest.
const SUMMARY_READS: usize = 3;

/// Strongly connected components searched for further anomalies, smallest first.
const MORE_COMPONENTS: usize = 16;

/// Further anomalies the graph shows besides `first` (the verdict's certificate), one per
/// class, at most `cap`: the best cycle of only write orders, session and real-time order (a
/// G0), then with write→read edges too (G1c), then the best cycle of each strongly connected
/// component of the whole graph, smallest first (anti-dependency classes: fewest
/// anti-dependencies first). Each search is the verdict's own, so the choice is as stable, and
/// as bounded; a class already reported is not reported again.
pub(crate) fn more_cycle_certificates(
    h: &History,
    r: &Resolution,
    b: &Built,
    first: super::Anomaly,
    cap: usize,
) -> Vec<Certificate> {
    let mut out: Vec<Certificate> = Vec::new();
    if cap == 0 {
        return out;
    }
    let csr = Csr::build(b.num_nodes, &b.edges, false);
    let cost = edge_cost(&b.labels, h.fence_key);
    let mut seen = vec![first];
    let mut keep = |cyc: Vec<u32>, out: &mut Vec<Certificate>| {
        let c = certificate_of(h, r, b, &csr, &cyc);
        if !seen.contains(&c.anomaly) {
            seen.push(c.anomaly);
            out.push(c);
        }
    };
    let no_rw = |with_wr: bool| {
        move |k: EdgeKind| match k {
            EdgeKind::Rw => false,
            EdgeKind::Wr => with_wr,
            _ => true,
        }
    };
    for with_wr in [false, true] {
        if out.len() >= cap {
            return out;
        }
        let allowed = no_rw(with_wr);
        let ids: Vec<u32> = (0..b.edges.len() as u32)
            .filter(|&e| allowed(b.labels[e as usize].kind))
            .collect();
        let kept: Vec<(Node, Node)> = ids.iter().map(|&e| b.edges[e as usize]).collect();
        let sub = Csr::build(b.num_nodes, &kept, false);
        if let Some(cyc) = smallest_cycle(b, &sub, |e| cost(ids[e as usize]), 64) {
            keep(cyc.into_iter().map(|e| ids[e as usize]).collect(), &mut out);
        }
    }
    let (comp, ncomp) = graph::scc(b.num_nodes, &csr);
    let mut size = vec![0u32; ncomp as usize];
    for &c in &comp {
        size[c as usize] += 1;
    }
    let mut comps: Vec<u32> = (0..ncomp).filter(|&c| size[c as usize] > 1).collect();
    comps.sort_by_key(|&c| (size[c as usize], c));
    let mut members: Vec<Vec<Node>> = vec![Vec::new(); ncomp as usize];
    for x in 0..b.first_gate {
        let c = comp[x as usize];
        if size[c as usize] > 1 {
            members[c as usize].push(x);
        }
    }
    for &cid in comps.iter().take(MORE_COMPONENTS) {
        if out.len() >= cap {
            break;
        }
        let found = graph::best_cycle(
            &csr,
            &comp,
            cid,
            &members[cid as usize],
            &cost,
            64,
            CYCLE_SEARCH_BUDGET,
        );
        if let Some(cyc) = found {
            keep(cyc, &mut out);
        }
    }
    out
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
    let d = Deducer::new(Explainer { h, r, b }, &csr);
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
            h.op_value[c.ops[0] as usize],
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
