//! The weak levels on histories whose written values repeat, so that a read may have read any
//! of several writes. Which one it read changes the level's premises, and deciding whether some
//! choice satisfies a weak level is NP-complete in general (Biswas and Enea), so this is exact
//! but not polynomial: every choice of writer for the reads in doubt is checked in turn by the
//! polynomial check, and the level holds iff one of them passes.
//!
//! First (`Options::weak_ser_first`) serializability is checked, by the engine that handles
//! repeated values with constraints and the solver: a serializable history satisfies every
//! weaker level, whichever writes its reads saw. Most histories of correct databases end there.
//! Past [`MAX_TRIES`] choices, or the check's timeout, the verdict is unknown with the reason.

use crate::{CheckError, Level, Options, Report, Verdict};
use krait_history::{History, Resolution};
use std::borrow::Cow;
use std::time::Instant;

/// Choices of writers tried at most: each is a whole check of the history.
pub(crate) const MAX_TRIES: u64 = 4096;
/// And at most this many operations checked over all tries.
const MAX_WORK: u64 = 1 << 30;

/// Checks `h` at `opts.level`, `r` having reads with several possible writers.
pub(crate) fn run(
    h: &History,
    mut r: Resolution,
    opts: &Options,
    t0: Instant,
) -> Result<Report, CheckError> {
    let name = opts.level.name(false);
    if opts.weak_ser_first {
        let ser = Options {
            level: Level::Serializable,
            ..opts.clone()
        };
        let (rep, _) = crate::pipeline::run(h, &ser, None, false)?;
        if rep.verdict.is_accept() {
            return Ok(Report { level: name, ..rep });
        }
    }
    let doubt: Vec<(u32, Vec<u32>)> = r
        .ambiguous
        .iter()
        .map(|&(o, a, b)| {
            let all = &r.cand_ops[a as usize..b as usize];
            let some: Vec<u32> = all
                .iter()
                .copied()
                .filter(|&w| !opts.weak_prune_candidates || possible(h, &r, o, w))
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
    let tries = doubt
        .iter()
        .try_fold(1u64, |n, (_, c)| n.checked_mul(c.len() as u64))
        .filter(|&n| n <= MAX_TRIES && n.saturating_mul(h.num_ops() as u64) <= MAX_WORK);
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
        Ok(rep)
    };
    let Some(tries) = tries else {
        return unknown(
            format!(
                "{} reads of values written more than once could each have read one of several writes: too many ways to choose for a check of each ({MAX_TRIES} at most, fewer on large histories){}",
                doubt.len(),
                if opts.weak_ser_first {
                    " (the history is not serializable, which would have settled it)"
                } else {
                    ""
                }
            ),
            None,
        );
    };
    r.ambiguous.clear();
    r.cand_ops.clear();
    let deadline = [opts.timeout.map(|d| t0 + d), opts.budget.deadline]
        .into_iter()
        .flatten()
        .min();
    let mut pick = vec![0usize; doubt.len()];
    let mut first: Option<Report> = None;
    for n in 0..tries {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return unknown(
                format!("the timeout came after {n} of the {tries} ways to choose the writers of reads of repeated values"),
                first,
            );
        }
        for ((op, cands), &i) in doubt.iter().zip(&pick) {
            r.read_from[*op as usize] = cands[i];
        }
        // The first violation is the one shown: the others need no certificate.
        let again = || r.clone();
        let want: Option<&dyn Fn() -> Resolution> =
            if first.is_none() { Some(&again) } else { None };
        let checked = super::check_resolved(h, Cow::Borrowed(&r), opts, t0.elapsed(), want)?;
        if let Some(mut rep) = checked {
            rep.stats.ambiguous_reads = doubt.len();
            if rep.verdict.is_accept() {
                return Ok(rep);
            }
            first.get_or_insert(rep);
        }
        // The next choice, as an odometer.
        for (i, (_, cands)) in pick.iter_mut().zip(&doubt) {
            *i += 1;
            if *i < cands.len() {
                break;
            }
            *i = 0;
        }
    }
    let mut rep = first.expect("at least one choice is tried");
    if let Verdict::Reject(c) = &mut rep.verdict {
        c.summary = format!(
            "{} (values repeat: each of the {tries} ways to choose which write each read of a repeated value saw breaks {name}; shown, the first)",
            c.summary
        );
    }
    Ok(rep)
}

/// Whether read `read` may have read write `w` in a history that satisfies any level: not a
/// write of an aborted transaction (an aborted read), nor one its transaction overwrote (an
/// intermediate read), nor a later write of the reader's own (a future read). Each of those
/// breaks every level, so a choice that makes one is never the one that passes.
fn possible(h: &History, r: &Resolution, read: u32, w: u32) -> bool {
    if w >= krait_history::FROM_AMBIGUOUS {
        return true;
    }
    let t = r.op_txn[w as usize];
    let key = h.op_key[w as usize];
    let overwritten = h
        .ops(t)
        .filter(|&o| o > w as usize)
        .any(|o| h.op_kind[o] == krait_history::OpKind::Write && h.op_key[o] == key);
    h.txn_status[t as usize] != krait_history::TxnStatus::Aborted
        && !overwritten
        && !(t == r.op_txn[read as usize] && w > read)
}
