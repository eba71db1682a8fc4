//! One check, phase by phase: resolve each read's writer → build the known graph (or a finding)
//! → real-time edges under `strict` → facts carried from earlier online rounds → the level's
//! decision → a certificate in words for a REJECT.
//!
//! Serializability and snapshot isolation share one decision (`ser`): snapshot isolation is
//! decided over a graph whose transactions are split into snapshot and commit (`graph::split`),
//! which `graph::build` lays out. A level of another kind adds its module and its arms here.

use crate::graph::{self, Built, EdgeKind, Label, Node, Spare};
use crate::report::MatchedRead;
use crate::ser::{self, Decided};
use crate::{cert, realtime, CheckError, CheckStats, Options, Report, Timings, Verdict};
use krait_history::{History, Resolution, TxnId, FROM_INIT};
use std::borrow::Cow;
use std::time::Instant;

/// How a level is decided, each a module with its own constraints and decision over the known
/// graph. Strict levels are the same decision over a graph with real-time edges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Decision {
    /// Version-order constraints over the (split, for snapshot isolation) graph: `ser`.
    Polygraph,
}

impl Decision {
    fn of(opts: &Options) -> Decision {
        match opts.level {
            crate::Level::Serializable | crate::Level::SnapshotIsolation => Decision::Polygraph,
            // Decided before this point (`weak`).
            _ => unreachable!("weak levels are decided by crate::weak"),
        }
    }
}

/// Facts an online round carries over from transactions no longer in its history: `hubs` extra
/// nodes (stand-ins for garbage-collected paths with many ends) and known edges between
/// transactions (their [`TxnId`] in the round's history) and hubs (`HUB | index`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Carried {
    /// Unknown outcomes an earlier round found read (so committed), whose readers may be gone.
    pub committed_unknown: Vec<TxnId>,
    pub hubs: u32,
    pub edges: Vec<(u32, u32)>,
}

/// Marks a hub in [`Carried::edges`].
pub(crate) const HUB: u32 = 1 << 31;
/// Marks a transaction's snapshot node (snapshot isolation) in [`Carried::edges`].
pub(crate) const START: u32 = 1 << 30;

/// The graph an accepted check ended with, for garbage collection.
pub(crate) struct Final {
    pub b: Built,
    pub remaining: Vec<u32>,
    /// Each read's write as the check left it: a read with several possible writers that only
    /// one could explain names that one ([`krait_history::FROM_AMBIGUOUS`] where still open).
    pub read_from: Vec<u32>,
    /// The transaction of each op.
    pub op_txn: Vec<krait_history::TxnId>,
    /// Unknown outcomes taken as committed to find this ACCEPT, though no read names one of
    /// them alone: another set may be what a later round needs, so the online checker neither
    /// holds them committed from now on nor collects on a graph that assumes them.
    pub assumed: Vec<TxnId>,
}

/// Checks `h`; with `want_final`, an ACCEPT also returns its graph (online garbage collection).
///
/// A transaction whose outcome is unknown takes part only if a read shows it committed. Where a
/// read's value was also written by such a transaction, the read *may* show it: a REJECT of the
/// check that leaves them out is then confirmed by checking with each set of them taken as
/// committed (a transaction nobody reads can always be taken as aborted, so these sets are all
/// there is to try).
pub(crate) fn run(
    h: &History,
    opts: &Options,
    carried: Option<&Carried>,
    want_final: bool,
) -> Result<(Report, Option<Final>), CheckError> {
    if !opts.session_order {
        if carried.is_some() {
            return Err(CheckError::Unsupported(
                "checking without session order is for the whole history at once (online rounds keep it)".into(),
            ));
        }
        let h = h.one_session_per_txn();
        let opts = Options {
            session_order: true,
            ..opts.clone()
        };
        return run(&h, &opts, None, want_final).map(|(mut r, f)| {
            r.session_order = false;
            (r, f)
        });
    }
    if opts.level.is_weak() {
        if carried.is_some() {
            // Causal consistency online is `weak::online`, called by the online checker.
            return Err(CheckError::Unsupported(format!(
                "--level {} is checked on the whole history: it lets a transaction read any committed version however old, so no write could ever be deleted and an online check's memory would grow with the history (online rounds check ser, si and cc; cc implies it)",
                opts.level.name(false)
            )));
        }
        return crate::weak::run(h, opts).map(|r| (r, None));
    }
    let first = run_once(h, opts, carried, want_final, &[])?;
    // A read of the initial value may also have read a write of it (a delete): that write's
    // transaction is a candidate as much as a second writer of a repeated value is.
    if !first.0.verdict.is_reject() || !(h.has_duplicates() || h.init_value.is_some()) {
        return Ok(first);
    }
    let known = carried.map_or(&[][..], |c| &c.committed_unknown[..]);
    let maybe = unknown_candidates(h, known);
    if maybe.is_empty() {
        return Ok(first);
    }
    if maybe.len() > MAX_UNKNOWN_WRITERS {
        let reason = format!(
            "no serial order without the {} transactions of unknown outcome some read's value could come from, and too many to try each set of them as committed",
            maybe.len()
        );
        let (report, _) = ended(
            opts,
            Verdict::Unknown { reason },
            first.0.stats,
            first.0.timings,
        );
        return Ok((report, None));
    }
    let mut unknown = None;
    for mask in 1u32..(1 << maybe.len()) {
        let set: Vec<TxnId> = (0..maybe.len())
            .filter(|&i| mask >> i & 1 == 1)
            .map(|i| maybe[i])
            .collect();
        let (report, mut fin) = run_once(h, opts, carried, want_final, &set)?;
        match report.verdict {
            Verdict::Accept => {
                if let Some(f) = &mut fin {
                    f.assumed = set;
                }
                return Ok((report, fin));
            }
            // Without an answer for this set, the REJECT is not confirmed.
            Verdict::Unknown { .. } => unknown.get_or_insert((report, fin)),
            Verdict::Reject(_) => continue,
        };
    }
    Ok(unknown.unwrap_or(first))
}

/// At most this many unknown outcomes are tried as committed, each set of them (2^n checks).
const MAX_UNKNOWN_WRITERS: usize = 8;

/// Transactions of unknown outcome whose final write of a key is a candidate of some read,
/// less those already `known` to have committed (an earlier round found them read).
fn unknown_candidates(h: &History, known: &[TxnId]) -> Vec<TxnId> {
    let r = krait_history::resolve(h);
    let mut out: Vec<TxnId> = r
        .cand_ops
        .iter()
        .filter(|&&w| w < krait_history::FROM_AMBIGUOUS)
        .map(|&w| r.op_txn[w as usize])
        .filter(|&t| h.txn_status[t as usize] == krait_history::TxnStatus::Unknown)
        .filter(|t| !known.contains(t))
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

fn run_once(
    h: &History,
    opts: &Options,
    carried: Option<&Carried>,
    want_final: bool,
    also_committed: &[TxnId],
) -> Result<(Report, Option<Final>), CheckError> {
    let t0 = Instant::now();
    // The timeout counts from the start of this check, not from when the options were made.
    let opts = match opts.timeout {
        Some(d) => {
            let mut o = opts.clone();
            let end = t0 + d;
            o.budget.deadline = Some(o.budget.deadline.map_or(end, |x| x.min(end)));
            Cow::Owned(o)
        }
        None => Cow::Borrowed(opts),
    };
    // Cobra's claims are checked where graph building looks up each read's writer; where it
    // can find each writer itself, nothing is resolved before it (a certificate, an order or
    // the online checker's next round resolve every read after all).
    let defer = match opts.defer_resolution {
        crate::Defer::Never => false,
        crate::Defer::WherePays => krait_history::Writers::worth_it(h),
        crate::Defer::Always => true,
    } && carried.is_none()
        && !want_final
        && also_committed.is_empty();
    let mut r = if defer {
        krait_history::resolve_deferred(h)
    } else {
        krait_history::resolve_unchecked(h)
    };
    let mut timings = Timings {
        resolve: t0.elapsed(),
        ..Default::default()
    };
    let mut stats = CheckStats::default();
    let t1 = Instant::now();
    let mut committed_unknown = carried.map_or(Vec::new(), |c| c.committed_unknown.clone());
    committed_unknown.extend_from_slice(also_committed);
    let mut b = match build_graph(h, &mut r, &opts, &committed_unknown, Spare::new(false)) {
        Ok(b) => b,
        Err(finding) => {
            timings.graph = t1.elapsed();
            let t = Instant::now();
            r.complete(h);
            let cert = cert::certify(h, &r, &finding);
            timings.certificate = t.elapsed();
            return Ok(ended(
                &opts,
                Verdict::Reject(Box::new(cert)),
                stats,
                timings,
            ));
        }
    };
    if let Some(drift) = opts.strict {
        stats.realtime_edges = realtime::add_edges(h, &mut b, drift)?;
    }
    if let Some(c) = carried {
        add_carried(&mut b, c);
    }
    stats.txns_checked = b.node_txn.len();
    stats.unknown_outcome_excluded = b.excluded_unknown;
    stats.constraints = b.constraints.len() + b.chain_pairs() + b.dup_pairs();
    stats.ambiguous_reads = b.choices.len();
    timings.graph = t1.elapsed();

    let decided = match Decision::of(&opts) {
        Decision::Polygraph => ser::decide(&mut b, &opts, &mut stats, &mut timings),
    };
    // A certificate's time counts from here: it needs the edges the build left out.
    let t = Instant::now();
    // Everything from here on but an ACCEPT without an order reads the resolution.
    let complete =
        !matches!(decided, Decided::Accept { .. }) || b.deferred.is_some() || opts.want_order;
    // The certificate of a cycle of the known graph needs only the edges inside its cyclic
    // components: on a read-heavy graph, thousands of its millions. Found beside completing
    // the resolution: the components are one thread's work.
    let ((), cyclic) = rayon::join(
        || {
            if complete {
                r.complete(h);
            }
        },
        || matches!(decided, Decided::Cycle).then(|| cert::Cyclic::of(&b)),
    );
    if !matches!(decided, Decided::Accept { .. }) {
        if b.spare.left_out > 0 {
            let keep = match &cyclic {
                Some(c) => Spare::only(std::sync::Arc::new(c.nodes())),
                None => Spare::new(true),
            };
            b.spare.edges = left_out_edges(h, &mut r, &opts, &committed_unknown, keep);
        }
        b.restore_spare();
    }
    stats.ambiguous_after_prune = b.choices.iter().filter(|c| c.num_alive() > 1).count();
    stats.conditional_edges = b.cond.len();
    // Reads pruning left one candidate name it in any certificate.
    for c in &b.choices {
        if let Some(x) = c.single() {
            for &op in &c.ops {
                r.read_from[op as usize] = c.cand_ops[x];
            }
        }
    }
    let verdict = |cert: crate::Certificate| Verdict::Reject(Box::new(cert));
    let mut snapshots = Vec::new();
    let mut also = Vec::new();
    let (verdict, order, matched, fin) = match decided {
        // Only the fence key broke: that is the violation to report.
        Decided::Accept { .. } | Decided::Unknown(_) if b.deferred.is_some() => {
            let cert = cert::certify(h, &r, b.deferred.as_ref().unwrap());
            (verdict(cert), None, Vec::new(), None)
        }
        Decided::Accept {
            remaining,
            chosen,
            picks,
        } => {
            let (order, matched) = if opts.want_order {
                let (order, snaps) = ser::serial_order(h, &b, &remaining, &chosen, &picks);
                snapshots = snaps;
                (Some(order), matched_reads(h, &r, &b, &picks))
            } else {
                (None, Vec::new())
            };
            let fin = want_final.then(|| Final {
                b,
                remaining,
                read_from: std::mem::take(&mut r.read_from),
                op_txn: std::mem::take(&mut r.op_txn),
                assumed: Vec::new(),
            });
            (Verdict::Accept, order, matched, fin)
        }
        Decided::Cycle => {
            let more = opts.max_anomalies.saturating_sub(1);
            let (first, more) = cert::cycle_certificates(
                h,
                &r,
                &b,
                cyclic.as_ref().expect("made for a cycle"),
                more,
            );
            also = more;
            (verdict(first), None, Vec::new(), None)
        }
        Decided::NoWriter(c) => (
            verdict(cert::no_writer_certificate(h, &r, &b, c)),
            None,
            Vec::new(),
            None,
        ),
        Decided::Unsat {
            remaining,
            core,
            choices,
        } => {
            let cert = cert::unsat_certificate(h, &r, &b, &remaining, &core, &choices);
            (verdict(cert), None, Vec::new(), None)
        }
        Decided::Unknown(reason) => (Verdict::Unknown { reason }, None, Vec::new(), None),
    };
    if !verdict.is_accept() {
        timings.certificate = t.elapsed();
    }
    let report = Report {
        level: opts.level.name(opts.strict.is_some()),
        session_order: true,
        verdict,
        stats,
        timings,
        order,
        snapshots,
        matched,
        also,
    };
    Ok((report, fin))
}

/// The known graph with the level's constraints (`Decision`); ambiguous reads only one
/// candidate could explain name their writer in `r` from here on.
fn build_graph(
    h: &History,
    r: &mut Resolution,
    opts: &Options,
    committed_unknown: &[TxnId],
    spare: Spare,
) -> Result<Built, crate::findings::Finding> {
    let (mut b, mut facts) = graph::build(h, r, opts, committed_unknown, spare)?;
    for (op, w) in std::mem::take(&mut facts.resolved) {
        r.read_from[op as usize] = w;
    }
    if opts.time_guess && h.has_timestamps() && !facts.amb.is_empty() {
        crate::guess::guess_choices(h, r, &mut facts.amb);
        b.commit_time = (0..b.num_nodes as graph::Node)
            .map(|n| {
                b.txn_of(n)
                    .map_or(krait_history::NO_TIME, |t| h.txn_commit[t as usize])
            })
            .collect();
    }
    match Decision::of(opts) {
        Decision::Polygraph => ser::add_chains(&mut b, facts, opts),
    }
    Ok(b)
}

/// The known edges the first build left out (`Built::spare`), for a certificate: the same
/// build again, deterministic, keeping them this time. Only a check that did not accept pays
/// for it, and only where edges were left out. `r` is the resolution the first build was
/// given, unless that build named the writers of ambiguous reads in it: then it is made again.
fn left_out_edges(
    h: &History,
    r: &mut Resolution,
    opts: &Options,
    committed_unknown: &[TxnId],
    keep: Spare,
) -> Vec<(Node, Node, Label)> {
    let mut fresh = None;
    // Without ambiguous reads the build writes nothing into the resolution.
    let r = if r.ambiguous.is_empty() {
        r
    } else {
        fresh.insert(krait_history::resolve(h))
    };
    // The first build checked Cobra's claims of every read it looked at, as this one would.
    let claims_checked = std::mem::replace(&mut r.claims_checked, true);
    // The first build of the same history succeeded, so this one does; were it not to, the
    // certificate would still hold, its steps shown through session detours.
    let edges = build_graph(h, r, opts, committed_unknown, keep.alone())
        .map_or_else(|_| Vec::new(), |b| b.spare.edges);
    r.claims_checked = claims_checked;
    edges
}

/// The writer each ambiguous read was matched to, in the reader's op order.
fn matched_reads(h: &History, r: &Resolution, b: &Built, picks: &[u32]) -> Vec<MatchedRead> {
    let mut out: Vec<(u32, MatchedRead)> = Vec::new();
    for (c, &x) in b.choices.iter().zip(picks) {
        let w = c.cand_ops[x as usize];
        for &op in &c.ops {
            out.push((
                op,
                MatchedRead {
                    txn: h.txn_ext[r.op_txn[op as usize] as usize],
                    key: h.keys[c.key as usize].clone(),
                    value: h.op_value[op as usize],
                    writer: (w != FROM_INIT).then(|| h.txn_ext[r.op_txn[w as usize] as usize]),
                },
            ));
        }
    }
    out.sort_by_key(|m| m.0);
    out.into_iter().map(|m| m.1).collect()
}

/// What earlier rounds knew, as known edges: hubs become extra nodes after the graph's own.
fn add_carried(b: &mut Built, c: &Carried) {
    let first_hub = b.num_nodes as Node;
    b.num_nodes += c.hubs as usize;
    let map = |x: u32| -> Option<Node> {
        if x & HUB != 0 {
            Some(first_hub + (x & !HUB))
        } else {
            let n = b.txn_node[(x & !START) as usize];
            (n != u32::MAX).then(|| if x & START != 0 { b.start(n) } else { n })
        }
    };
    let label = Label::fact(EdgeKind::Carried, graph::NO_KEY);
    let edges: Vec<(Node, Node)> = c
        .edges
        .iter()
        .filter_map(|&(u, v)| Some((map(u)?, map(v)?)))
        .collect();
    for e in edges {
        b.edges.push(e);
        b.labels.push(label);
    }
    b.chain_of.resize(b.num_nodes, (u32::MAX, 0));
}

/// A check that ends without an accepted graph (no serial order, nothing to collect).
fn ended(
    opts: &Options,
    verdict: Verdict,
    stats: CheckStats,
    timings: Timings,
) -> (Report, Option<Final>) {
    let level = opts.level.name(opts.strict.is_some());
    (Report::plain(level, verdict, stats, timings, None), None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use krait_workloads::{blindw, BlindW};
    use std::sync::Arc;

    /// A build made for its left-out edges alone (storing none it keeps, not checking Cobra's
    /// claims again) gives the edges a build that keeps everything leaves out, all of them or
    /// those inside the components asked for, whichever way the reads were resolved.
    #[test]
    fn a_build_for_the_left_out_edges_alone_gives_the_same_ones() {
        let dir = std::env::temp_dir().join(format!("krait-left-out-{}", std::process::id()));
        let opts = Options::default();
        for seed in 1..=3 {
            let h = blindw(&BlindW {
                sessions: 12,
                keys: 40,
                ops_per_txn: 12,
                read_only: 0.9,
                fractured_reads: 0.01,
                seed,
                ..BlindW::wm(1500)
            });
            // Through Cobra's logs, so that every read carries claims.
            let _ = std::fs::remove_dir_all(&dir);
            krait_history::write_cobra_dir(&h, &dir, false).unwrap();
            let h = krait_history::read_cobra_dir(&dir, Default::default())
                .unwrap()
                .history;
            assert!(h.cobra.is_some());
            for deferred in [false, true] {
                let fresh = || {
                    if deferred {
                        krait_history::resolve_deferred(&h)
                    } else {
                        krait_history::resolve_unchecked(&h)
                    }
                };
                let Ok(all) = build_graph(&h, &mut fresh(), &opts, &[], Spare::new(true)) else {
                    panic!("seed {seed}: the blind writes' reads all have a writer");
                };
                assert!(
                    all.spare.edges.len() > 100,
                    "seed {seed}: thinning left out edges"
                );
                let mut r = fresh();
                assert_eq!(
                    left_out_edges(&h, &mut r, &opts, &[], Spare::new(true)),
                    all.spare.edges,
                    "seed {seed}, deferred {deferred}"
                );
                assert!(
                    !r.claims_checked,
                    "the resolution is handed back as it came"
                );
                let comp: Vec<u32> = (0..all.num_nodes as u32).map(|n| n % 3).collect();
                let inside: Vec<_> = all
                    .spare
                    .edges
                    .iter()
                    .filter(|e| comp[e.0 as usize] == comp[e.1 as usize])
                    .copied()
                    .collect();
                assert_eq!(
                    left_out_edges(&h, &mut r, &opts, &[], Spare::only(Arc::new(comp))),
                    inside,
                    "seed {seed}, deferred {deferred}"
                );
                let Ok(alone) = build_graph(&h, &mut fresh(), &opts, &[], Spare::new(true).alone())
                else {
                    unreachable!("the same build succeeded above");
                };
                assert!(alone.edges.len() * 4 < all.edges.len(), "seed {seed}");
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
