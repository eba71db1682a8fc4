//! Replaying a finished history through the online checker, as live clients would deliver it.

use super::{Online, OnlineError, OnlineOptions, RoundStats, TxnRecord};
use krait_history::{KeyId, OpKind};

/// Replays a finished history in rounds of `round_size` transactions, in commit-time order when
/// every transaction has one, else drawn from the sessions in proportion to their length (so
/// they progress together, as live clients would), and calls `each` after every round. Returns the checker after its last round.
pub fn replay(
    h: &krait_history::History,
    opts: OnlineOptions,
    round_size: usize,
    each: impl FnMut(&RoundStats, &Online),
) -> Result<Online, OnlineError> {
    replay_inner(h, opts, round_size, each, false)
}

/// [`replay`], with the checker saved and restored from its saved state after every round,
/// as a verifier killed and restarted from a checkpoint each time would run: the verdict,
/// rounds and collection must be those of [`replay`].
pub fn replay_restarting(
    h: &krait_history::History,
    opts: OnlineOptions,
    round_size: usize,
) -> Result<Online, OnlineError> {
    replay_inner(h, opts, round_size, |_, _| {}, true)
}

fn replay_inner(
    h: &krait_history::History,
    opts: OnlineOptions,
    round_size: usize,
    mut each: impl FnMut(&RoundStats, &Online),
    restart: bool,
) -> Result<Online, OnlineError> {
    let mut on = Online::new(opts);
    for k in &h.keys {
        on.key(k);
    }
    if let Some(fk) = h.fence_key {
        on.set_fence_key(fk);
    }
    on.set_cobra_claims(h.cobra.is_some());
    if h.has_duplicates() || h.init_value.is_some() {
        on.allow_repeated_values();
        if let Some(v) = h.init_value {
            on.set_initial_value(v);
        }
    }
    let ns = h.num_sessions();
    let mut seen = std::collections::HashSet::new();
    for s in 0..ns {
        // A name the history uses twice (no reader makes one, but a built history may) is
        // made distinct; others stay as they are, so reports name sessions as the input does.
        let name = &h.session_names[s];
        let name = if seen.insert(name.as_str()) {
            name.clone()
        } else {
            format!("{name}#{s}")
        };
        on.session(&name)?;
    }
    let len: Vec<usize> = (0..ns).map(|s| h.session_range(s).len()).collect();
    let mut fed = vec![0usize; ns];
    let total = h.num_txns();
    let by_time = total > 0 && h.txn_commit.iter().all(|&c| c != krait_history::NO_TIME);
    let mut pushed = 0usize;
    let mut in_round = 0usize;
    while pushed < total {
        let next = |s: usize| h.session_range(s).start as usize + fed[s];
        // By commit time when every transaction has one (as a live system delivers them),
        // else the session furthest behind, relative to its length.
        let s = if by_time {
            (0..ns)
                .filter(|&s| fed[s] < len[s])
                .min_by_key(|&s| h.txn_commit[next(s)])
                .unwrap()
        } else {
            (0..ns)
                .filter(|&s| fed[s] < len[s])
                .min_by(|&a, &b| (fed[a] * len[b]).cmp(&(fed[b] * len[a])))
                .unwrap()
        };
        let t = h.session_range(s).start + fed[s] as u32;
        fed[s] += 1;
        pushed += 1;
        let ops: Vec<(OpKind, KeyId, u64)> = h
            .ops(t)
            .map(|o| (h.op_kind[o], h.op_key[o], h.op_value[o]))
            .collect();
        let lists = h
            .ops(t)
            .filter_map(|o| {
                h.list_of(o as u32)
                    .map(|l| ((o - h.ops(t).start) as u32, l.to_vec()))
            })
            .collect();
        let app = if h.app_values.is_empty() {
            Vec::new()
        } else {
            h.ops(t)
                .filter_map(|o| {
                    let a = h.app_value(o as u32)?;
                    Some(((o - h.ops(t).start) as u32, a.to_string()))
                })
                .collect()
        };
        let claims = match &h.cobra {
            Some(c) => h.ops(t).map(|o| c.get(h, o)).collect(),
            None => Vec::new(),
        };
        on.push(TxnRecord {
            session: s as u32,
            ext: h.txn_ext[t as usize],
            status: h.txn_status[t as usize],
            start: h.txn_start[t as usize],
            commit: h.txn_commit[t as usize],
            ops,
            lists,
            app,
            claims,
        })?;
        if fed[s] == len[s] {
            on.close_session(s as u32);
        }
        in_round += 1;
        if in_round >= round_size {
            in_round = 0;
            if let Some(st) = on.round()? {
                each(&st, &on);
            }
            if on.verdict().is_some() {
                return Ok(on);
            }
            if restart {
                on = Online::restore(on.opts.clone(), &on.save()?)?;
            }
        }
    }
    for st in on.finish()? {
        each(&st, &on);
    }
    Ok(on)
}
