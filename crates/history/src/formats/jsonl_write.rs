//! krait's native format written: one JSON Lines record per transaction, as
//! `docs/history-format.md` describes and `jsonl` reads back (the application's values kept,
//! the fence key under its native name).

use crate::model::{History, OpKind, ABSENT_VALUE, NATIVE_FENCE_KEY, NO_TIME};
use std::io::Write;
use std::path::Path;

/// Writes `h` in the native format, sessions one after another.
pub fn write(h: &History, out: &mut impl Write) -> std::io::Result<()> {
    for s in 0..h.num_sessions() {
        for_each_line(h, s, |line| out.write_all(line.as_bytes()))?;
    }
    Ok(())
}

/// Calls `each` with every transaction of session `s` as a native record (one line, its
/// newline included), in session order.
pub fn for_each_line<E>(
    h: &History,
    s: usize,
    mut each: impl FnMut(&str) -> Result<(), E>,
) -> Result<(), E> {
    let mut line = String::with_capacity(256);
    let sname = serde_json::to_string(&h.session_names[s]).unwrap();
    for t in h.session_range(s) {
        let ti = t as usize;
        line.clear();
        use std::fmt::Write as _;
        let _ = write!(
            line,
            "{{\"session\":{sname},\"txn\":{},\"status\":\"{}\"",
            h.txn_ext[ti],
            h.txn_status[ti].as_str()
        );
        if h.txn_start[ti] != NO_TIME {
            let _ = write!(line, ",\"start\":{}", h.txn_start[ti]);
        }
        if h.txn_commit[ti] != NO_TIME {
            let _ = write!(line, ",\"commit\":{}", h.txn_commit[ti]);
        }
        line.push_str(",\"ops\":[");
        for (i, o) in h.ops(t).enumerate() {
            if i > 0 {
                line.push(',');
            }
            // The fence key under its native name, so fences stay fences (Cobra's is
            // FZVERSION).
            let name = match h.fence_key {
                Some(f) if f == h.op_key[o] => NATIVE_FENCE_KEY,
                _ => &h.keys[h.op_key[o] as usize],
            };
            let key = serde_json::to_string(name).unwrap();
            // A history with deletes writes the value deletes write as `null`, both ways.
            let absent = h.init_value == Some(ABSENT_VALUE) && h.op_value[o] == ABSENT_VALUE;
            let _ = match (h.op_kind[o], h.list_of(o as u32)) {
                (OpKind::Write, _) if absent => write!(line, "[\"w\",{key},null"),
                (OpKind::Read, None) if absent => write!(line, "[\"r\",{key},null"),
                (OpKind::Write, _) => write!(line, "[\"w\",{key},{}", h.op_value[o]),
                (_, Some(list)) => write!(line, "[\"r\",{key},{list:?}"),
                (OpKind::Read, _) => write!(line, "[\"r\",{key},{}", h.op_value[o]),
                (OpKind::ReadInit, _) => write!(line, "[\"r\",{key},null"),
            };
            if let Some(a) = h.app_value(o as u32) {
                line.push(',');
                line.push_str(&serde_json::to_string(a).unwrap());
            }
            line.push(']');
        }
        line.push_str("]}\n");
        each(&line)?;
    }
    Ok(())
}

/// Writes `h` in the native format to a file (created or truncated).
pub fn write_file(h: &History, path: &Path) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    write(h, &mut out)?;
    out.flush()
}
