//! The weak levels on histories whose written values repeat, so that a read may have read any
//! of several writes. Which one it read changes the level's premises, and deciding whether some
//! choice satisfies a weak level is NP-complete in general (Biswas and Enea), so this is exact
//! but not polynomial: a SAT solver over the choices proposes one, the polynomial check tries
//! it, and a choice that breaks the level teaches a clause — not all of the choices its
//! violation needs together (`learn`) — until a choice passes or none is left. Most violations
//! need the writers of a few reads, so one clause rules out a whole family of choices; with
//! `Options::weak_learn` off the choices are tried one by one, [`MAX_TRIES`] at most.
//!
//! First (`Options::weak_ser_first`) serializability is checked, by the engine that handles
//! repeated values with constraints and the solver, with a small budget of conflicts: a
//! serializable history satisfies every weaker level, whichever writes its reads saw. Most
//! histories of correct databases end there.
//! Past the check's timeout, or [`MAX_WORK`] over all the choices tried (each costs the
//! operations checked and the solver's problem), the verdict is unknown with the reason.

use super::learn::Learner;
use crate::{CheckError, Level, Options, Report, Verdict};
use krait_history::{History, Resolution};
use krait_solver::{Budget, Cdcl, CdclOptions, Engine, Lit, Outcome, Problem, StopReason, Var};
use std::borrow::Cow;
use std::time::Instant;

/// Operations checked and literals given to the solver at most, over all the choices tried.
const MAX_WORK: u64 = 1 << 31;
/// Conflicts the solver may have at least for one proposal, whatever the work left.
const MIN_CONFLICTS: u64 = 1000;
/// Conflicts the serializability check that runs first may have.
const SER_FIRST_CONFLICTS: u64 = 256;
/// Choices tried at most one by one (without learning).
const MAX_TRIES: u64 = 1 << 15;

/// Checks `h` at `opts.level`, `r` having reads with several possible writers.
pub(crate) fn run(
    h: &History,
    mut r: Resolution,
    opts: &Options,
    t0: Instant,
) -> Result<Report, CheckError> {
    let name = opts.level.name(false);
    if opts.weak_ser_first {
        // Only a quick look: a history serializability does not settle at once goes to the
        // level's own search, which is easier (and is what was asked).
        let ser = Options {
            level: Level::Serializable,
            budget: Budget {
                max_conflicts: Some(SER_FIRST_CONFLICTS),
                ..opts.budget.clone()
            },
            ..opts.clone()
        };
        let (rep, _) = crate::pipeline::run(h, &ser, None, false)?;
        if rep.verdict.is_accept() {
            return Ok(Report { level: name, ..rep });
        }
    }
    let overwritten = crate::graph::Overwritten::of(h);
    let doubt: Vec<(u32, Vec<u32>)> = r
        .ambiguous
        .iter()
        .map(|&(o, a, b)| {
            let all = &r.cand_ops[a as usize..b as usize];
            let some: Vec<u32> = all
                .iter()
                .copied()
                .filter(|&w| !opts.weak_prune_candidates || possible(h, &r, &overwritten, o, w))
                .collect();
            // None possible: any one shows why (each breaks every level).
            (
                o,
                if some.is_empty() {
                    all[..1].to_vec()
                } else {
                    some
                },
            )
        })
        .collect();
    r.ambiguous.clear();
    r.cand_ops.clear();
    let unknown = |reason: String, first: Option<Report>| {
        let mut rep = first.unwrap_or_else(|| {
            Report::plain(
                name,
                Verdict::Accept,
                Default::default(),
                Default::default(),
                None,
            )
        });
        rep.verdict = Verdict::Unknown { reason };
        rep.stats.ambiguous_reads = doubt.len();
        Ok(rep)
    };
    // One variable per candidate writer of each read in doubt, in order, and a clause that
    // it read one of them. Several true is no harm: each only adds edges, so the first true
    // one is the choice tried.
    let mut p = Problem::new(0);
    let mut base = Vec::with_capacity(doubt.len());
    let mut index = vec![u32::MAX; h.num_ops()];
    for (d, (o, cands)) in doubt.iter().enumerate() {
        base.push(p.num_vars);
        index[*o as usize] = d as u32;
        let vars: Vec<Lit> = cands.iter().map(|_| Lit::pos(p.new_var())).collect();
        p.clauses.push(vars);
    }
    if opts.weak_learn && opts.weak_encode {
        super::encode::encode(h, &r, &doubt, &base, opts.level, &mut p);
    }
    // The first proposal: each read's likeliest writer.
    let likely = likeliest_all(h, &r, &doubt, opts.time_guess);
    for (d, (_, cands)) in doubt.iter().enumerate() {
        p.phases
            .extend((0..cands.len()).map(|j| (Var(base[d] + j as u32), j == likely[d])));
    }
    let mut doubtful = vec![false; h.num_ops()];
    for (o, _) in &doubt {
        doubtful[*o as usize] = true;
    }
    let all: Vec<u32> = doubt.iter().map(|(o, _)| *o).collect();
    let learner = Learner {
        h,
        doubtful: &doubtful,
        precise: opts.weak_learn,
        all: &all,
    };
    let deadline = [opts.timeout.map(|d| t0 + d), opts.budget.deadline]
        .into_iter()
        .flatten()
        .min();
    let budget = Budget {
        deadline,
        interrupt: opts.budget.interrupt.clone(),
        ..Budget::default()
    };
    // Tried one by one, every choice; too many is an unknown verdict at once.
    let one_by_one = doubt
        .iter()
        .try_fold(1u64, |n, (_, c)| n.checked_mul(c.len() as u64))
        .filter(|&n| n <= MAX_TRIES);
    let one_by_one = match one_by_one {
        Some(n) => n,
        None if opts.weak_learn => u64::MAX,
        None => {
            return unknown(
                format!(
                    "{} reads of values written more than once could each have read one of several writes: too many ways to choose to try one by one ({MAX_TRIES} at most; learning from broken choices is off)",
                    doubt.len()
                ),
                None,
            )
        }
    };
    let mut pick = vec![0usize; doubt.len()];
    let mut first: Option<Report> = None;
    let (mut tried, mut learnt) = (0u64, 0u64);
    let work_per_try = |p: &Problem| {
        (h.num_ops() + p.clauses.len() * 2 + p.lit_edges.len() + p.known_edges.len()).max(1) as u64
    };
    let mut work = 0u64;
    let refuted = loop {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return unknown(
                format!("the timeout came after {tried} choices of which write each of {} reads of repeated values saw, none of them {name}", doubt.len()),
                first,
            );
        }
        work = work.saturating_add(work_per_try(&p));
        if work >= MAX_WORK {
            return unknown(
                format!("{tried} choices of which write each of {} reads of repeated values saw were tried, none of them {name}, and more would take too long", doubt.len()),
                first,
            );
        }
        let model = if opts.weak_learn {
            // The solver's conflicts cost about the problem's size each: its share of the
            // work left bounds them, so a search too hard to settle ends in an unknown
            // verdict rather than running on.
            let size = work_per_try(&p);
            let budget = Budget {
                max_conflicts: Some(((MAX_WORK - work) / size).max(MIN_CONFLICTS)),
                ..budget.clone()
            };
            // Lazy decisions suit serializability's either/or constraints, not a choice
            // among many candidates: without them, the solver was faster on both.
            let mut solver = Cdcl::new(CdclOptions {
                lazy_decisions: false,
                // The phases are the likeliest choice (or the last model): the graph's
                // order would override them with whatever candidates it happens to agree with.
                order_phase: false,
                ..CdclOptions::default()
            });
            let out = solver.solve_raw(&p, &budget);
            work = work.saturating_add(solver.stats().conflicts.saturating_mul(size));
            match out {
                Outcome::Sat { model, .. } => Some(model),
                Outcome::Unsat { .. } => break true,
                Outcome::Unknown(why) => {
                    let what = match why {
                        StopReason::Conflicts => "the solver's budget ran out",
                        _ => "the time ran out",
                    };
                    return unknown(
                        format!("{what} after {tried} choices of which write each of {} reads of repeated values saw, none of them {name}", doubt.len()),
                        first,
                    );
                }
            }
        } else {
            // One by one, as an odometer.
            if tried == one_by_one {
                break true;
            }
            if tried > 0 {
                for (i, (_, cands)) in pick.iter_mut().zip(&doubt) {
                    *i += 1;
                    if *i < cands.len() {
                        break;
                    }
                    *i = 0;
                }
            }
            None
        };
        for (d, (op, cands)) in doubt.iter().enumerate() {
            if let Some(model) = &model {
                let b = base[d] as usize;
                pick[d] = (0..cands.len()).find(|&j| model[b + j]).unwrap_or(0);
            }
            r.read_from[*op as usize] = cands[pick[d]];
        }
        tried += 1;
        let Some(broken) = super::violations(h, &r, opts.level, &learner) else {
            let rep = super::check_resolved(h, Cow::Borrowed(&r), opts, t0.elapsed(), None)?;
            let mut rep = rep.expect("the choice that holds holds again");
            rep.stats.ambiguous_reads = doubt.len();
            return Ok(rep);
        };
        if first.is_none() {
            // The first violation is the one shown: the others need no certificate.
            let again = || r.clone();
            first = super::check_resolved(h, Cow::Borrowed(&r), opts, t0.elapsed(), Some(&again))?;
        }
        let mut empty = false;
        for need in broken.into_iter().filter(|_| opts.weak_learn) {
            learnt += 1;
            empty |= need.is_empty();
            p.clauses.push(
                need.iter()
                    .map(|&o| {
                        let d = index[o as usize] as usize;
                        Lit::neg(Var(base[d] + pick[d] as u32))
                    })
                    .collect(),
            );
        }
        if empty {
            break true;
        }
        // The next proposal starts from this one, so it changes only what it must.
        if let Some(model) = model {
            p.phases = model
                .iter()
                .enumerate()
                .map(|(v, &b)| (Var(v as u32), b))
                .collect();
        }
    };
    debug_assert!(refuted);
    if first.is_none() {
        // Refuted before any choice was tried (by the edges given up front): the likeliest
        // choice shows a violation.
        for (d, (op, cands)) in doubt.iter().enumerate() {
            r.read_from[*op as usize] = cands[likely[d]];
        }
        let again = || r.clone();
        first = super::check_resolved(h, Cow::Borrowed(&r), opts, t0.elapsed(), Some(&again))?;
    }
    let mut rep = first.expect("a certificate was asked for");
    rep.stats.ambiguous_reads = doubt.len();
    if let Verdict::Reject(c) = &mut rep.verdict {
        let how = if tried == 0 {
            "the solver ruled them all out from the level's edges; shown, the likeliest".to_string()
        } else if opts.weak_learn {
            format!("{tried} tried, the others ruled out by the solver and the {learnt} violations learnt from those; shown, the first")
        } else {
            format!("all {tried} tried; shown, the first")
        };
        c.summary = format!(
            "{} (values repeat: every way to choose which write each of the {} reads of a repeated value saw breaks {name}: {how})",
            c.summary,
            doubt.len(),
        );
    }
    Ok(rep)
}

/// Which candidate each read in doubt most likely read, as a first guess (any guess is exact,
/// a good one saves choices tried): the reader's own earlier write; else the version current
/// at its transaction's likeliest snapshot (`guess`); else [`likeliest`].
fn likeliest_all(
    h: &History,
    r: &Resolution,
    doubt: &[(u32, Vec<u32>)],
    time_guess: bool,
) -> Vec<usize> {
    let snaps = crate::guess::Snapshots::new(h).filter(|_| time_guess);
    let mut out = Vec::with_capacity(doubt.len());
    // `doubt` is in op order, so each transaction's reads are together.
    for group in doubt.chunk_by(|a, b| r.op_txn[a.0 as usize] == r.op_txn[b.0 as usize]) {
        let t = r.op_txn[group[0].0 as usize];
        let reads: Vec<(u32, &[u32])> = group.iter().map(|(o, c)| (*o, &c[..])).collect();
        let guessed = snaps.as_ref().map(|s| s.guess(t, &reads));
        for (i, (o, cands)) in group.iter().enumerate() {
            let fallback = likeliest(h, r, *o, cands);
            let own = cands[fallback] < krait_history::FROM_AMBIGUOUS
                && r.op_txn[cands[fallback] as usize] == t;
            let g = guessed.as_ref().and_then(|g| g[i]);
            out.push(if own { fallback } else { g.unwrap_or(fallback) });
        }
    }
    out
}

/// Which of `cands` read `read` most likely read, without a snapshot to go by: the reader's
/// own earlier write; else, with timestamps, the last to commit before the reader started,
/// then the initial value, then the first to commit after; without, the last earlier one in
/// the reader's session, then the initial value, then the first listed.
fn likeliest(h: &History, r: &Resolution, read: u32, cands: &[u32]) -> usize {
    use krait_history::{FROM_INIT, NO_TIME};
    let t = r.op_txn[read as usize];
    let timed = |x: u64| x != NO_TIME;
    let start = h.txn_start.get(t as usize).copied().filter(|&x| timed(x));
    let rank = |w: u32| -> (u8, u64) {
        if w == FROM_INIT || w >= krait_history::FROM_AMBIGUOUS {
            return (2, 0);
        }
        let wt = r.op_txn[w as usize];
        if wt == t {
            return (0, 0);
        }
        let commit = h.txn_commit.get(wt as usize).copied().filter(|&x| timed(x));
        match (start, commit) {
            (Some(s), Some(c)) if c <= s => (1, u64::MAX - c),
            (Some(_), Some(c)) => (3, c),
            _ if h.session_of(wt) == h.session_of(t) && wt < t => (1, u64::MAX - wt as u64),
            _ => (3, u64::MAX),
        }
    };
    (0..cands.len())
        .min_by_key(|&j| rank(cands[j]))
        .unwrap_or(0)
}

/// Whether read `read` may have read write `w` in a history that satisfies any level: not a
/// write of an aborted transaction (an aborted read), nor one its transaction overwrote (an
/// intermediate read), nor a later write of the reader's own (a future read). Each of those
/// breaks every level, so a choice that makes one is never the one that passes.
fn possible(
    h: &History,
    r: &Resolution,
    overwritten: &crate::graph::Overwritten,
    read: u32,
    w: u32,
) -> bool {
    if w >= krait_history::FROM_AMBIGUOUS {
        return true;
    }
    let t = r.op_txn[w as usize];
    h.txn_status[t as usize] != krait_history::TxnStatus::Aborted
        && !overwritten.contains(w)
        && !(t == r.op_txn[read as usize] && w > read)
}
