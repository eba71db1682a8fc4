//! Writing a history as Cobra's binary per-session logs (the reader is `cobra`).

use crate::model::{
    writer_txns, History, OpKind, TxnId, TxnStatus, FENCE_KEY_HASH, INIT_WRITE_ID, NULL_WRITE_ID,
};
use std::io::Write;
use std::path::Path;

/// Writes `h` as a Cobra log directory. Only committed transactions can be written (the format
/// has no aborts or unknown outcomes); keys that are not 16-digit hex hashes are hashed (XXH64
/// of UTF-16LE, as Cobra's client does). An unknown outcome that a written transaction read did
/// commit, at a time unknown: it is written as committed in a log of its own, so that no
/// session order claims it committed before its session's later transactions (the order after
/// its session's earlier commits is lost, which can only hide a violation, never make one).
/// List-append reads have no Cobra form, nor do values written more than once: such a
/// history is refused. Returns how many
/// transactions were left out and how many unknown outcomes got logs of their own.
pub fn write_dir(h: &History, dir: &Path, timestamps: bool) -> std::io::Result<(usize, usize)> {
    if h.has_lists() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the history has list-append reads, which Cobra logs cannot carry (convert to .jsonl)",
        ));
    }
    // Cobra names a write by its value alone (its write id), so a value written twice, to any
    // key, would make a log that no reader (ours included) can take back.
    let mut seen = std::collections::HashSet::new();
    for o in 0..h.op_kind.len() {
        if h.op_kind[o] == OpKind::Write && !seen.insert(h.op_value[o]) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "the value {} is written more than once, and Cobra logs name a write by its value (write .jsonl instead)",
                    h.op_value[o]
                ),
            ));
        }
    }
    std::fs::create_dir_all(dir)?;
    let key_hash: Vec<u64> = h.keys.iter().map(|k| cobra_key_hash(k)).collect();
    let writer_of = writer_txns(h);
    // Unknown outcomes read by what is written, transitively.
    let mut written: Vec<bool> = h
        .txn_status
        .iter()
        .map(|&s| s == TxnStatus::Committed)
        .collect();
    let mut stack: Vec<TxnId> = (0..h.num_txns() as TxnId)
        .filter(|&t| written[t as usize])
        .collect();
    while let Some(t) = stack.pop() {
        for o in h.ops(t) {
            if let Some(w) = writer_of[o] {
                if !written[w as usize] && h.txn_status[w as usize] == TxnStatus::Unknown {
                    written[w as usize] = true;
                    stack.push(w);
                }
            }
        }
    }
    let mut skipped = 0;
    let mut own_log: Vec<TxnId> = Vec::new();
    let mut used: std::collections::HashSet<String> = Default::default();
    for s in 0..h.num_sessions() {
        let name = &h.session_names[s];
        let file = if name.starts_with('T') && name[1..].parse::<u64>().is_ok() {
            format!("{name}.log")
        } else {
            format!("T{s}.log")
        };
        used.insert(file.clone());
        let mut out = std::io::BufWriter::new(std::fs::File::create(dir.join(file))?);
        for t in h.session_range(s) {
            match h.txn_status[t as usize] {
                TxnStatus::Committed => {
                    write_txn(h, t, &key_hash, &writer_of, timestamps, &mut out)?
                }
                _ if written[t as usize] => own_log.push(t),
                _ => skipped += 1,
            }
        }
        out.flush()?;
    }
    let mut n = h.num_sessions();
    for &t in &own_log {
        let file = loop {
            let f = format!("T{n}.log");
            n += 1;
            if used.insert(f.clone()) {
                break f;
            }
        };
        let mut out = std::io::BufWriter::new(std::fs::File::create(dir.join(file))?);
        write_txn(h, t, &key_hash, &writer_of, timestamps, &mut out)?;
        out.flush()?;
    }
    Ok((skipped, own_log.len()))
}

fn write_txn(
    h: &History,
    t: TxnId,
    key_hash: &[u64],
    writer_of: &[Option<TxnId>],
    timestamps: bool,
    out: &mut impl Write,
) -> std::io::Result<()> {
    let ext = h.txn_ext[t as usize];
    out.write_all(b"S")?;
    out.write_all(&ext.to_be_bytes())?;
    if timestamps {
        out.write_all(&h.txn_start[t as usize].to_be_bytes())?;
    }
    for o in h.ops(t) {
        let k = key_hash[h.op_key[o] as usize];
        let v = h.op_value[o];
        let vh = h
            .cobra
            .as_ref()
            .map(|c| c.get(h, o).0)
            .unwrap_or_else(|| value_hash(v));
        match h.op_kind[o] {
            OpKind::Write => {
                out.write_all(b"W")?;
                for x in [v, k, vh] {
                    out.write_all(&x.to_be_bytes())?;
                }
            }
            OpKind::Read | OpKind::ReadInit => {
                let (wt, wid) = if h.op_kind[o] == OpKind::ReadInit {
                    let wid = if v == NULL_WRITE_ID || v == INIT_WRITE_ID {
                        v
                    } else {
                        INIT_WRITE_ID
                    };
                    (wid, wid)
                } else {
                    let claimed = h.cobra.as_ref().map(|c| c.get(h, o).1);
                    (
                        claimed.unwrap_or_else(|| {
                            writer_of[o].map(|w| h.txn_ext[w as usize]).unwrap_or(0)
                        }),
                        v,
                    )
                };
                let vh = if h.cobra.is_none() && h.op_kind[o] == OpKind::ReadInit {
                    0
                } else {
                    vh
                };
                out.write_all(b"R")?;
                for x in [wt, wid, k, vh] {
                    out.write_all(&x.to_be_bytes())?;
                }
            }
        }
    }
    out.write_all(b"C")?;
    out.write_all(&ext.to_be_bytes())?;
    if timestamps {
        out.write_all(&h.txn_commit[t as usize].to_be_bytes())?;
    }
    Ok(())
}

fn cobra_key_hash(k: &str) -> u64 {
    if k == "FZVERSION" {
        return FENCE_KEY_HASH;
    }
    if k.len() == 16 {
        if let Ok(h) = u64::from_str_radix(k, 16) {
            return h;
        }
    }
    let utf16: Vec<u8> = k.encode_utf16().flat_map(|u| u.to_le_bytes()).collect();
    crate::xxh64::xxh64(&utf16, 0)
}

fn value_hash(v: u64) -> u64 {
    crate::xxh64::xxh64(&v.to_le_bytes(), 0)
}
