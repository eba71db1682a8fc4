//! Elle/Jepsen list-append histories against an exact brute-force labeller.
//!
//! List reads carry far more information than register reads (the whole version order of a key),
//! and the checker turns them into write-order and read-from facts of its own. This test keeps an
//! independent model of the semantics so that a mistake in that translation shows up as a
//! disagreement: a history is serializable iff some serial order of every committed transaction
//! plus any subset of the unknown-outcome (`:info`) ones, never an aborted (`:fail`) one,
//! replays with each key's list starting empty, appends pushing, and every read of a placed
//! transaction returning exactly the current list (its own earlier appends included). A
//! transaction follows the committed transactions before it in its session; an unknown outcome
//! may land late, so it holds back nobody.
//!
//! The generator runs a little store serially, sometimes from stale snapshots, lets aborted
//! writes leak and unknown ones land late or never, then corrupts some reads the ways real
//! databases do. Everything is seeded, so a failure reproduces exactly.

use crate::common;

use common::Rng;
use krait_checker::{check, Options, SolverKind, Verdict};
use krait_history::{build_history, SimpleTxn, TxnStatus};
use std::collections::HashSet;

const KEYS: [&str; 3] = ["x", "y", "z"];

#[derive(Clone, Debug, PartialEq, Eq)]
enum Op {
    Append(usize, u64),
    Read(usize, Vec<u64>),
}

/// The test's own transaction, so the labeller never sees the checker's data structures.
#[derive(Clone, Debug)]
struct Txn {
    session: usize,
    id: u64,
    status: TxnStatus,
    ops: Vec<Op>,
}

fn to_simple(txns: &[Txn]) -> Vec<SimpleTxn> {
    txns.iter()
        .map(|t| {
            let mut s = SimpleTxn::new(t.session, t.id).status(t.status);
            for op in &t.ops {
                s = match op {
                    Op::Append(k, v) => s.w(KEYS[*k], *v),
                    Op::Read(k, l) => s.rl(KEYS[*k], l),
                };
            }
            s
        })
        .collect()
}

fn compact(txns: &[Txn]) -> String {
    let mut out = String::new();
    for t in txns {
        let st = match t.status {
            TxnStatus::Committed => "ok",
            TxnStatus::Aborted => "fail",
            TxnStatus::Unknown => "info",
        };
        let ops: Vec<String> = t
            .ops
            .iter()
            .map(|op| match op {
                Op::Append(k, v) => format!("a {} {v}", KEYS[*k]),
                Op::Read(k, l) => {
                    let l: Vec<String> = l.iter().map(u64::to_string).collect();
                    format!("r {} [{}]", KEYS[*k], l.join(" "))
                }
            })
            .collect();
        out += &format!("  s{} T{} {st}: {}\n", t.session, t.id, ops.join(", "));
    }
    out
}

/// Reads [`compact`]'s notation back (`;` or a newline between transactions), so hand cases
/// and reported failures are written the same way.
fn parse(s: &str) -> Vec<Txn> {
    let txns = s
        .split([';', '\n'])
        .map(str::trim)
        .filter(|l| !l.is_empty());
    txns.map(|l| {
        let (head, body) = l.split_once(':').unwrap();
        let h: Vec<&str> = head.split_whitespace().collect();
        let status = match h[2] {
            "ok" => TxnStatus::Committed,
            "fail" => TxnStatus::Aborted,
            _ => TxnStatus::Unknown,
        };
        let ops = body.split(',').map(|o| {
            let w: Vec<&str> = o.trim().splitn(3, ' ').collect();
            let k = KEYS.iter().position(|&k| k == w[1]).unwrap();
            match w[0] {
                "a" => Op::Append(k, w[2].parse().unwrap()),
                _ => Op::Read(
                    k,
                    w[2].trim_matches(['[', ']'])
                        .split_whitespace()
                        .map(|v| v.parse().unwrap())
                        .collect(),
                ),
            }
        });
        Txn {
            session: h[0][1..].parse().unwrap(),
            id: h[1][1..].parse().unwrap(),
            status,
            ops: ops.collect(),
        }
    })
    .collect()
}

/// The exact label: depth-first search over serial orders. Unknown transactions left unplaced
/// at the end are the skipped ones, so the skipped set needs no state of its own; a dead end is
/// remembered by (placed set, every key's list), which determines all that can follow.
fn serializable(txns: &[Txn], nkeys: usize) -> bool {
    let n = txns.len();
    assert!(n <= 32);
    // Committed transactions before each one in its session: the only session-order bound.
    let mut before = vec![0u32; n];
    for t in 0..n {
        for u in 0..t {
            if txns[u].session == txns[t].session && txns[u].status == TxnStatus::Committed {
                before[t] |= 1 << u;
            }
        }
    }
    let committed: u32 = (0..n)
        .filter(|&t| txns[t].status == TxnStatus::Committed)
        .fold(0, |m, t| m | 1 << t);
    type Dead = HashSet<(u32, Vec<Vec<u64>>)>;
    fn go(
        txns: &[Txn],
        before: &[u32],
        committed: u32,
        dead: &mut Dead,
        placed: u32,
        lists: &[Vec<u64>],
    ) -> bool {
        if placed & committed == committed {
            return true;
        }
        if dead.contains(&(placed, lists.to_vec())) {
            return false;
        }
        // Lists only grow, so a committed read still to come must extend today's list; cutting
        // here keeps histories with many appends and one impossible read from exploding.
        let hopeless = txns.iter().enumerate().any(|(u, t)| {
            placed & (1 << u) == 0
                && t.status == TxnStatus::Committed
                && t.ops
                    .iter()
                    .any(|op| matches!(op, Op::Read(k, l) if !l.starts_with(&lists[*k])))
        });
        for (t, tx) in txns.iter().enumerate().filter(|_| !hopeless) {
            if placed & (1 << t) != 0 || tx.status == TxnStatus::Aborted || before[t] & !placed != 0
            {
                continue;
            }
            let mut next = lists.to_vec();
            let ok = tx.ops.iter().all(|op| match op {
                Op::Append(k, v) => {
                    next[*k].push(*v);
                    true
                }
                Op::Read(k, l) => next[*k] == *l,
            });
            if ok && go(txns, before, committed, dead, placed | 1 << t, &next) {
                return true;
            }
        }
        dead.insert((placed, lists.to_vec()));
        false
    }
    let empty = vec![Vec::new(); nkeys];
    go(txns, &before, committed, &mut HashSet::new(), 0, &empty)
}

/// A random history from a simulated store. Roughly: each transaction picks a client, reads
/// from the current state or (sometimes) an old snapshot, appends fresh values, and its fate
/// decides whether and when the appends reach the store. Some reads are then corrupted.
fn generate(rng: &mut Rng) -> (Vec<Txn>, usize) {
    let nkeys = 1 + rng.index(3);
    let nclients = 1 + rng.index(4);
    let ntxns = 2 + rng.index(9);
    // Per-history rates, so some histories are clean and some are riddled.
    let stale_pct = [0, 10, 30][rng.index(3)];
    let corrupt_pct = [0, 0, 8, 20][rng.index(4)];
    let leak_pct = [0, 30, 70][rng.index(3)];
    // Jepsen retires a process after :info; some stores' clients carry on in the same session,
    // which the semantics must handle too.
    let retire = rng.chance(60);

    let mut client_session: Vec<usize> = (0..nclients).collect();
    let mut next_session = nclients;
    let mut next_value = 1u64;
    let mut state: Vec<Vec<u64>> = vec![Vec::new(); nkeys];
    let mut snapshots = vec![state.clone()];
    // Unknown outcomes landing late: (the transaction they land before, their appends).
    let mut pending: Vec<(usize, Vec<(usize, u64)>)> = Vec::new();
    let mut txns = Vec::new();

    for i in 0..ntxns {
        pending.retain(|(due, apps)| {
            if *due > i {
                return true;
            }
            for &(k, v) in apps {
                state[k].push(v);
            }
            snapshots.push(state.clone());
            false
        });
        let c = rng.index(nclients);
        let status = match rng.index(100) {
            0..=69 => TxnStatus::Committed,
            70..=81 => TxnStatus::Aborted,
            _ => TxnStatus::Unknown,
        };
        let mut view = if rng.chance(stale_pct) {
            snapshots[rng.index(snapshots.len())].clone()
        } else {
            state.clone()
        };
        let mut ops = Vec::new();
        let mut apps = Vec::new();
        for _ in 0..1 + rng.index(4) {
            let k = rng.index(nkeys);
            if rng.chance(45) {
                let v = next_value;
                next_value += 1;
                view[k].push(v);
                apps.push((k, v));
                ops.push(Op::Append(k, v));
            } else {
                ops.push(Op::Read(k, view[k].clone()));
            }
        }
        let apply = match status {
            TxnStatus::Committed => Some(0),
            TxnStatus::Aborted => rng.chance(leak_pct).then_some(0),
            TxnStatus::Unknown => match rng.index(10) {
                0..=3 => Some(0),
                4..=6 => None,
                _ => Some(1 + rng.index(2)),
            },
        };
        match apply {
            // A stale transaction's appends still go on top of the latest state: lost updates
            // and write skew, the classic non-serializable shapes.
            Some(0) => {
                for &(k, v) in &apps {
                    state[k].push(v);
                }
                snapshots.push(state.clone());
            }
            Some(d) => pending.push((i + 1 + d, apps)),
            None => {}
        }
        txns.push(Txn {
            session: client_session[c],
            id: i as u64 + 1,
            status,
            ops,
        });
        if status == TxnStatus::Unknown && retire {
            client_session[c] = next_session;
            next_session += 1;
        }
    }

    for t in txns.iter_mut() {
        for op in t.ops.iter_mut() {
            if let Op::Read(_, l) = op {
                if rng.chance(corrupt_pct) {
                    corrupt(rng, l, &mut next_value);
                }
            }
        }
    }
    (txns, nkeys)
}

fn corrupt(rng: &mut Rng, l: &mut Vec<u64>, next_value: &mut u64) {
    let n = l.len();
    match rng.index(7) {
        0 if n > 0 => {
            l.remove(rng.index(n));
        }
        1 if n > 1 => {
            let i = rng.index(n - 1);
            l.swap(i, i + 1);
        }
        2 if n > 0 => {
            let i = rng.index(n);
            l.insert(i + rng.index(n - i + 1), l[i]);
        }
        // A prefix is a stale read, often still serializable: keeps the labels honest.
        3 if n > 0 => l.truncate(rng.index(n)),
        4 if n > 2 => {
            l.remove(1 + rng.index(n - 2));
        }
        5 => l.clear(),
        _ => {
            // A value nobody appended.
            let v = *next_value;
            *next_value += 1;
            l.insert(rng.index(n + 1), v);
        }
    }
}

/// The checker's verdict, with a panic turned into text so a crash is reported like a wrong
/// answer, with its history.
fn verdict(txns: &[Txn], opts: &Options) -> Result<Verdict, String> {
    let h = build_history(&to_simple(txns)).map_err(|e| format!("build_history: {e}"))?;
    let opts = &Options {
        want_order: true,
        ..opts.clone()
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&h, opts))) {
        Ok(Ok(rep)) => {
            // Every verdict is also checked apart from the checker, by krait-verify.
            let v = serde_json::to_value(&rep).unwrap();
            match krait_verify::verify(&h, &v) {
                Err(krait_verify::Problem::Invalid(p)) => Err(format!(
                    "krait-verify refutes {}: {p}",
                    short(&Ok(rep.verdict))
                )),
                _ => Ok(rep.verdict),
            }
        }
        Ok(Err(e)) => Err(format!("check error: {e}")),
        Err(_) => Err("panic (its message is printed above)".into()),
    }
}

fn agrees(label: bool, v: &Result<Verdict, String>, allow_unknown: bool) -> bool {
    match v {
        Ok(Verdict::Accept) => label,
        Ok(Verdict::Reject(_)) => !label,
        Ok(Verdict::Unknown { .. }) => allow_unknown,
        Err(_) => false,
    }
}

fn size(txns: &[Txn]) -> usize {
    txns.iter().map(|t| 1 + t.ops.len()).sum()
}

/// Greedily drops transactions and operations while the disagreement survives, so what is
/// reported is small enough to reason about by hand. A dropped append also leaves every read,
/// or the read would only turn into an unrelated foreign-value rejection.
fn shrink(mut txns: Vec<Txn>, nkeys: usize, opts: &Options) -> Vec<Txn> {
    let brute = opts.solver == SolverKind::BruteForce;
    let fails = |t: &[Txn]| !agrees(serializable(t, nkeys), &verdict(t, opts), brute);
    let without = |txns: &[Txn], i: usize, j: Option<usize>| {
        let mut c = txns.to_vec();
        let gone: Vec<Op> = match j {
            Some(j) => vec![c[i].ops.remove(j)],
            None => c.remove(i).ops,
        };
        for op in c.iter_mut().flat_map(|t| t.ops.iter_mut()) {
            if let Op::Read(k, l) = op {
                l.retain(|v| !gone.contains(&Op::Append(*k, *v)));
            }
        }
        c
    };
    loop {
        let mut candidates = Vec::new();
        for i in 0..txns.len() {
            candidates.push(without(&txns, i, None));
            // An empty transaction is a shape of its own; dropping the whole one covers it.
            if txns[i].ops.len() > 1 {
                candidates.extend((0..txns[i].ops.len()).map(|j| without(&txns, i, Some(j))));
            }
        }
        match candidates.into_iter().find(|c| fails(c)) {
            Some(c) => txns = c,
            None => return txns,
        }
    }
}

struct Mismatch {
    txns: Vec<Txn>,
    nkeys: usize,
    options: (String, Options),
}

/// Panics with the smallest disagreements, shrunk, and the smallest one in full. Only the
/// smallest few are shrunk: when the checker is badly off, shrinking thousands takes minutes.
fn report(mut bad: Vec<Mismatch>, total: usize) {
    if bad.is_empty() {
        return;
    }
    let count = bad.len();
    bad.sort_by_key(|m| size(&m.txns));
    bad.truncate(25);
    for m in bad.iter_mut() {
        m.txns = shrink(std::mem::take(&mut m.txns), m.nkeys, &m.options.1);
    }
    bad.sort_by_key(|m| size(&m.txns));
    let mut seen = HashSet::new();
    let mut text = format!("{count} of {total} checks disagree with the label\n");
    let mut first = None;
    for m in &bad {
        let c = compact(&m.txns);
        if seen.len() < 5 && seen.insert(c.clone()) {
            let label = serializable(&m.txns, m.nkeys);
            let v = short(&verdict(&m.txns, &m.options.1));
            text += &format!(
                "--- serializable={label} checker={v} ({})\n{c}",
                m.options.0
            );
            first.get_or_insert((label, v));
        }
    }
    let (label, v) = first.unwrap();
    panic!(
        "{text}\nsmallest in full:\n{:#?}\nlabel: serializable={label}\nverdict: {v}",
        to_simple(&bad[0].txns)
    );
}

fn short(v: &Result<Verdict, String>) -> String {
    match v {
        Ok(Verdict::Accept) => "ACCEPT".into(),
        Ok(Verdict::Reject(c)) => format!("REJECT {:?}: {}", c.anomaly, c.summary),
        Ok(Verdict::Unknown { reason }) => format!("UNKNOWN ({reason})"),
        Err(e) => e.clone(),
    }
}

#[test]
fn labeller_hand_cases() {
    // `+` serializable, `-` not.
    for case in [
        // Session order puts 1 before 2, so 2 cannot head the list; without it, 2 then 1.
        "- s0 T1 ok: a x 1; s0 T2 ok: a x 2; s1 T3 ok: r x [2]",
        "+ s0 T1 ok: a x 1; s1 T2 ok: a x 2; s2 T3 ok: r x [2]; s2 T4 ok: r x [2 1]",
        "- s0 T1 ok: a x 1; s1 T2 ok: r x [1 1]",
        // An unknown outcome that was read committed; an aborted one that was read is G1a.
        "+ s0 T1 ok: a x 1; s1 T2 info: a x 3; s2 T3 ok: r x [1 3]",
        "- s0 T1 ok: a x 1; s1 T2 fail: a x 3; s2 T3 ok: r x [1 3]",
        // The unknown T1 landed after its session's later commit T2; a committed T1 could not.
        "+ s0 T1 info: a x 1; s0 T2 ok: a x 2; s1 T3 ok: r x [2]; s1 T4 ok: r x [2 1]",
        "- s0 T1 ok: a x 1; s0 T2 ok: a x 2; s1 T3 ok: r x [2]; s1 T4 ok: r x [2 1]",
        // Own appends are visible to own later reads; a read of an unplaced unknown is moot,
        // but one of a placed unknown counts.
        "+ s0 T1 ok: a x 1, r x [1], a y 2; s1 T2 info: r x [7]",
        "- s0 T1 ok: a x 1; s1 T2 info: r x [7], a x 2; s2 T3 ok: r x [1 2]",
    ] {
        let want = case.starts_with('+');
        assert_eq!(serializable(&parse(&case[2..]), KEYS.len()), want, "{case}");
    }
}

/// Labels `n` random histories and checks each under every option set; BruteForce may give up.
fn compare(seed: u64, n: usize, sets: &[(String, Options)]) {
    let mut rng = Rng(seed);
    let (mut yes, mut bad) = (0, Vec::new());
    for _ in 0..n {
        let (txns, nkeys) = generate(&mut rng);
        let label = serializable(&txns, nkeys);
        yes += label as usize;
        for (name, o) in sets {
            if !agrees(
                label,
                &verdict(&txns, o),
                o.solver == SolverKind::BruteForce,
            ) {
                // The first disagreeing option set per history is enough to point at it.
                let options = (name.clone(), o.clone());
                bad.push(Mismatch {
                    txns: txns.clone(),
                    nkeys,
                    options,
                });
                break;
            }
        }
    }
    eprintln!("{yes} of {n} serializable");
    // Both labels well represented, or a generator drift would make the test quietly weak.
    assert!(
        yes * 5 >= n && (n - yes) * 5 >= n,
        "{yes} of {n} serializable"
    );
    report(bad, n * sets.len());
}

#[test]
fn list_append_histories_match_an_exact_search() {
    compare(
        0x9e37_79b9_7f4a_7c15,
        40_000,
        &[("default".into(), Options::default())],
    );
}

#[test]
fn list_append_every_switch_combination() {
    let mut sets = Vec::new();
    for combine in [false, true] {
        for coalesce in [false, true] {
            for prune in [false, true] {
                for solver in [SolverKind::Cdcl, SolverKind::BruteForce] {
                    let o = Options {
                        combine,
                        coalesce,
                        prune,
                        solver,
                        ..Options::default()
                    };
                    let name =
                        format!("combine={combine} coalesce={coalesce} prune={prune} {solver:?}");
                    sets.push((name, o));
                }
            }
        }
    }
    compare(0x2545_f491_4f6c_dd1d, 6_000, &sets);
}

/// The same histories in online rounds of several sizes, and after a round trip through the
/// native format (`krait convert`): the label must hold there too.
#[test]
fn list_append_in_rounds_and_after_a_native_round_trip() {
    use krait_checker::online::{replay, OnlineOptions};
    let mut rng = Rng(0x51ed_2701_a3c4_5b6f);
    let n = 10_000;
    let mut bad = Vec::new();
    for _ in 0..n {
        let (txns, nkeys) = generate(&mut rng);
        let label = serializable(&txns, nkeys);
        let h = build_history(&to_simple(&txns)).unwrap();
        let mut text = Vec::new();
        krait_history::write_jsonl(&h, &mut text).unwrap();
        let back = krait_history::read_jsonl(&text[..], std::path::Path::new("h.jsonl"))
            .unwrap()
            .history;
        let after = check(&back, &Options::default()).unwrap().verdict;
        if after.is_accept() != label {
            bad.push(format!(
                "round trip: {} {}",
                compact(&txns),
                short(&Ok(after))
            ));
        }
        // Rounds of several sizes, and rounds that admit at most 2 of what waits (a list's
        // elements must come in with it).
        for (rs, cap) in [(1, 0), (2, 0), (3, 0), (8, 0), (8, 2)] {
            let opts = OnlineOptions {
                max_admit: cap,
                ..OnlineOptions::default()
            };
            let on = replay(&h, opts, rs, |_, _| {}).unwrap();
            let accept = on.verdict().is_none_or(|r| r.verdict.is_accept());
            if accept != label {
                bad.push(format!(
                    "rounds of {rs} (cap {cap}): serializable={label} {}",
                    compact(&txns)
                ));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} disagreements:\n{}",
        bad.len(),
        bad[..bad.len().min(5)].join("\n")
    );
}
