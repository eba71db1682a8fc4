//! Cobra logs decoded on every core against the same logs decoded one after another into the
//! history: on random directories, many of them broken (a cut file, a bad opcode, a commit of
//! the wrong transaction, a transaction id or write id used twice), both must give the same
//! history, the same warnings and the same first error. Each history's claims, compacted,
//! must read back the same and resolve to the same problems.

use super::cobra_part::read_all;
use crate::error::Warning;
use crate::model::{
    resolve, CobraClaims, History, HistoryBuilder, OpKind, DELETE_WRITE_ID, FENCE_KEY_HASH,
    INIT_WRITE_ID, NULL_WRITE_ID,
};
use crate::test_rng::Rng;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Reads whose compacted claims were left out, over the whole test.
static LEFT_OUT: AtomicUsize = AtomicUsize::new(0);

fn rec(out: &mut Vec<u8>, op: u8, fields: &[u64]) {
    out.push(op);
    for f in fields {
        out.extend_from_slice(&f.to_be_bytes());
    }
}

/// Random session logs: `ts` adds Cobra's timestamps; now and then a fault.
fn random_logs(r: &mut Rng, ts: bool) -> Vec<Vec<u8>> {
    let sessions = 1 + r.below(7) as usize;
    let mut next_wid = 1u64;
    let mut next_txn = 100u64;
    // (write id, key, transaction, value hash) of every write so far.
    let mut written: Vec<(u64, u64, u64, u64)> = Vec::new();
    let mut logs = Vec::new();
    for _ in 0..sessions {
        let mut b = Vec::new();
        for _ in 0..r.below(9) {
            next_txn += 1;
            let t = if r.below(40) == 0 { 101 } else { next_txn };
            let stamp = |r: &mut Rng| if ts { vec![r.below(1000)] } else { vec![] };
            let mut f = vec![t];
            f.extend(stamp(r));
            rec(&mut b, b'S', &f);
            for _ in 0..r.below(6) {
                let key = match r.below(10) {
                    0 => FENCE_KEY_HASH,
                    k => k * 7919,
                };
                if r.below(2) == 0 {
                    let wid = match r.below(30) {
                        0 => DELETE_WRITE_ID,
                        1 => 1,
                        _ => {
                            next_wid += 1;
                            next_wid
                        }
                    };
                    let hash = r.next();
                    written.push((wid, key, t, hash));
                    rec(&mut b, b'W', &[wid, key, hash]);
                } else if !written.is_empty() && r.below(4) != 0 {
                    // A read of a write made so far, its claims those of the write (now and
                    // then the write is a later one in the same transaction: a future read).
                    let (wid, key, wt, hash) = written[r.below(written.len() as u64) as usize];
                    rec(&mut b, b'R', &[wt, wid, key, hash]);
                } else {
                    let wid = match r.below(5) {
                        0 => INIT_WRITE_ID,
                        1 => NULL_WRITE_ID,
                        _ => 1 + r.below(next_wid),
                    };
                    rec(&mut b, b'R', &[r.below(next_txn), wid, key, r.next()]);
                }
            }
            let mut f = vec![if r.below(60) == 0 { t + 1 } else { t }];
            f.extend(stamp(r));
            rec(&mut b, b'C', &f);
        }
        match r.below(12) {
            0 if !b.is_empty() => {
                let cut = r.below(b.len() as u64) as usize;
                b.truncate(cut);
            }
            1 if !b.is_empty() => {
                let at = r.below(b.len() as u64) as usize;
                b[at] = b'X';
            }
            _ => {}
        }
        logs.push(b);
    }
    logs
}

/// What a load gave, as text: every array of the history (indexes sorted), the warnings, or
/// the error.
fn outcome(dir: &Path, files: &[(u64, PathBuf)], bytes: u64, ts: Option<bool>) -> String {
    let mut b = HistoryBuilder::new().with_cobra_claims();
    let mut warnings: Vec<Warning> = Vec::new();
    if let Err(e) = read_all(&mut b, files, bytes, ts, &mut warnings) {
        return format!("error: {e}");
    }
    if let Some((later, earlier)) = b.index_deferred_writes() {
        return format!("repeated write id: op {later} after {earlier}");
    }
    let h: History = b.finish();
    let claims = |h: &History| -> Vec<(u64, u64)> {
        let c = h.cobra.as_ref().unwrap();
        (0..h.num_ops()).map(|o| c.get(h, o)).collect()
    };
    // Compacted claims must read back the same, and resolve to the same problems.
    let mut compact = h.clone();
    CobraClaims::compact(&mut compact);
    assert_eq!(claims(&h), claims(&compact), "{}", dir.display());
    let c = compact.cobra.as_ref().unwrap();
    let left_out = (0..h.num_ops())
        .filter(|&o| h.op_kind[o] != OpKind::Write && c.read_claims_kept(o).is_none())
        .count();
    LEFT_OUT.fetch_add(left_out, Ordering::Relaxed);
    assert_eq!(
        format!("{:?}", resolve(&h).problems),
        format!("{:?}", resolve(&compact).problems),
        "{}",
        dir.display()
    );
    let mut index: Vec<_> = h.write_index.ops().collect();
    index.sort();
    let mut dups: Vec<_> = h.dup_writes.iter().collect();
    dups.sort();
    format!(
        "{:?}\n{:?} {:?} {:?} {:?} {:?} {:?} {:?}\n{:?} {:?} {:?}\n{:?} {:?}\n{index:?}\n{dups:?}\n{warnings:?}\n{:?}\n{}",
        h.session_names,
        h.session_txns,
        h.txn_ext,
        h.txn_status,
        h.txn_ops,
        h.txn_start,
        h.txn_commit,
        h.fence_key,
        h.op_kind,
        h.op_key,
        h.op_value,
        claims(&h),
        h.keys,
        resolve(&h).problems,
        dir.display()
    )
}

#[test]
fn decoding_on_every_core_gives_what_decoding_in_turn_gives() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let root = std::env::temp_dir().join(format!("krait-cobra-par-{}", std::process::id()));
    let (mut errors, mut warned) = (0, 0);
    for i in 0..400 {
        let ts = r.below(3) == 0;
        let logs = random_logs(&mut r, ts);
        let dir = root.join(format!("h{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut files = Vec::new();
        for (n, bytes) in logs.iter().enumerate() {
            let p = dir.join(format!("T{n}.log"));
            std::fs::write(&p, bytes).unwrap();
            files.push((n as u64, p));
        }
        let given = [None, Some(ts)][r.below(2) as usize];
        // 0 bytes: decoded in turn, straight into the history; the most: on every core, each
        // log into its own slices of the arrays.
        let direct = outcome(&dir, &files, 0, given);
        let parts = outcome(&dir, &files, u64::MAX, given);
        assert_eq!(direct, parts, "history {i} ({})", dir.display());
        errors += direct.starts_with("error") as usize;
        warned += direct.contains("Warning") as usize;
    }
    std::fs::remove_dir_all(&root).unwrap();
    // The faults must have been met, or the comparison proves less than it says.
    let left_out = LEFT_OUT.load(Ordering::Relaxed);
    assert!(
        errors > 40 && warned > 20 && left_out > 300,
        "{errors} errors, {warned} warned, {left_out} reads' claims left out"
    );
}
