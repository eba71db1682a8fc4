//! What a recorder could not record, kept beside a history (`unrecorded.log`, JSON Lines: `krait
//! proxy` writes one object per statement on a declared table that it could not turn into
//! reads and writes), read back as one warning that names the transactions and says what the
//! verdict then covers: a statement that may have written can make it wrong; a read left out
//! only makes the check weaker.

use crate::{History, Location, Warning};
use std::path::Path;

/// The file's name in a history directory (not `*.jsonl`: it is no session's log).
pub const UNRECORDED_FILE: &str = "unrecorded.log";

/// The warning for `dir`'s unrecorded statements, if it has any.
pub(crate) fn warning(dir: &Path, h: &History) -> Option<Warning> {
    let path = dir.join(UNRECORDED_FILE);
    let text = std::fs::read_to_string(&path).ok()?;
    let (mut writes, mut reads) = (0usize, 0usize);
    let mut txns: Vec<String> = Vec::new();
    let mut first: [Option<String>; 2] = [None, None];
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let may_write = v["may_write"].as_bool().unwrap_or(true);
        let statement = v["statement"].as_str().unwrap_or("?").to_string();
        if may_write {
            writes += 1;
            let name = match v["txn"].as_u64().and_then(|id| h.txn_index.get(&id)) {
                Some(&t) => h.display_txn(t),
                None => format!(
                    "an unrecorded transaction of {}",
                    v["session"].as_str().unwrap_or("?")
                ),
            };
            if !txns.contains(&name) {
                txns.push(name);
            }
        } else {
            reads += 1;
        }
        first[usize::from(!may_write)].get_or_insert(statement);
    }
    let mut parts = Vec::new();
    if writes > 0 {
        let shown: Vec<&str> = txns.iter().take(5).map(String::as_str).collect();
        let more = txns.len().saturating_sub(shown.len());
        parts.push(format!(
            "{writes} statements that may have written were not recorded, in {}{} (first: {}): the verdict can be wrong about the keys they touched",
            shown.join(", "),
            if more > 0 { format!(" and {more} more") } else { String::new() },
            first[0].as_deref().unwrap_or("?"),
        ));
    }
    if reads > 0 {
        parts.push(format!(
            "{reads} reads were not recorded (first: {}): the check is weaker for them, never wrong",
            first[1].as_deref().unwrap_or("?"),
        ));
    }
    if parts.is_empty() {
        return None;
    }
    Some(Warning {
        path,
        location: Location::Nowhere,
        message: format!(
            "the recorder could not record everything: {}",
            parts.join("; ")
        ),
    })
}
