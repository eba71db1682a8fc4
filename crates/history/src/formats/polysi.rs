//! The text format of PolySI, IsoVista and Plume: one operation per line,
//! `r(key,value,session,txn)` or `w(key,value,session,txn)`, all numbers. The operations of one
//! transaction id form that transaction; a session's transactions appear in session order. Value
//! 0 is the initial value of every key. IsoVista writes the writes of aborted transactions with
//! transaction id -1. See `docs/history-format.md`.

use super::gather::{Collector, POp, PTxn};
use super::{Format, Loaded};
use crate::error::{InputError, Location};
use crate::fxhash::FxHashMap;
use crate::model::{OpKind, TxnStatus};
use std::io::BufRead;
use std::path::Path;

/// Reads a PolySI text file.
pub fn read_file(path: &Path) -> Result<Loaded, InputError> {
    let f = std::fs::File::open(path).map_err(|e| InputError::io(path, e))?;
    read(std::io::BufReader::with_capacity(1 << 20, f), path)
}

const SHAPE: &str = "expected r(key,value,session,txn) or w(key,value,session,txn)";

/// One line's fields: (is write, key, value, session, txn); txn `None` is IsoVista's -1.
type Fields = (bool, u64, u64, u64, Option<u64>);

fn parse_line(text: &[u8]) -> Result<Fields, String> {
    let shown = || {
        let s = String::from_utf8_lossy(text);
        if s.chars().count() > 60 {
            format!("{}...", s.chars().take(60).collect::<String>())
        } else {
            s.into_owned()
        }
    };
    let bad = || format!("not an operation: {SHAPE}, found {:?}", shown());
    let write = match text.first() {
        Some(b'w') => true,
        Some(b'r') => false,
        _ => return Err(bad()),
    };
    let Some(inner) = text
        .get(1..)
        .and_then(|t| t.strip_prefix(b"("))
        .and_then(|t| t.strip_suffix(b")"))
    else {
        return Err(bad());
    };
    let parts: Vec<&[u8]> = inner.split(|&c| c == b',').collect();
    if parts.len() != 4 {
        return Err(bad());
    }
    let names = ["key", "value", "session", "transaction id"];
    let mut nums = [0u64; 4];
    let mut aborted = false;
    for (i, p) in parts.iter().enumerate() {
        // Only the transaction id may be negative, and only -1 (IsoVista's aborted writes).
        let digits = if i == 3 {
            p.strip_prefix(b"-").unwrap_or(p)
        } else {
            p
        };
        if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
            return Err(bad());
        }
        let s = std::str::from_utf8(digits).unwrap_or_default();
        let n: u64 = s
            .parse()
            .map_err(|_| format!("the {} {s} does not fit in 64 bits", names[i]))?;
        if digits.len() != p.len() {
            if n != 1 {
                return Err(format!(
                    "transaction id -{s}: the only negative id is -1 (a write of an aborted transaction)"
                ));
            }
            aborted = true;
        }
        nums[i] = n;
    }
    Ok((
        write,
        nums[0],
        nums[1],
        nums[2],
        (!aborted).then_some(nums[3]),
    ))
}

/// Reads PolySI text from `input`; `path` names it in errors.
pub fn read(mut input: impl BufRead, path: &Path) -> Result<Loaded, InputError> {
    let mut col = Collector::new();
    // txn id → (session, line it began on)
    let mut txns: FxHashMap<u64, (usize, u64)> = FxHashMap::default();
    // Per session: the transaction that is open (the last one begun).
    let mut open: Vec<Option<u64>> = Vec::new();
    let mut aborted: Vec<(usize, POp)> = Vec::new();
    let mut max_ext: Option<u64> = None;
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    loop {
        buf.clear();
        let n = input.read_until(b'\n', &mut buf).map_err(|e| {
            InputError::new(
                path,
                Location::Line(line_no + 1),
                format!("cannot read: {e}"),
            )
        })?;
        if n == 0 {
            break;
        }
        line_no += 1;
        let at = Location::Line(line_no);
        let text = buf.trim_ascii_end();
        if text.trim_ascii().is_empty() {
            continue;
        }
        let (write, key, value, session, txn) =
            parse_line(text).map_err(|m| InputError::new(path, at, m))?;
        let sname = session.to_string();
        let s = col.session(&sname);
        if open.len() <= s {
            open.resize(s + 1, None);
        }
        let kind = if write { OpKind::Write } else { OpKind::Read };
        let Some(txn) = txn else {
            // IsoVista keeps only the writes of aborted transactions, without their grouping.
            if write {
                let k = col.key(&key.to_string());
                aborted.push((
                    s,
                    POp {
                        kind,
                        key: k,
                        value,
                        at,
                    },
                ));
            }
            continue;
        };
        match txns.get(&txn) {
            Some(&(ts, first)) if ts != s => {
                return Err(InputError::new(
                    path,
                    at,
                    format!(
                        "transaction {txn} is in session {}, which it began in on line {first}, not in session {session}",
                        col.session_name(ts)
                    ),
                ))
            }
            Some(&(_, first)) if open[s] != Some(txn) => {
                let cur = open[s].unwrap_or_default();
                return Err(InputError::new(
                    path,
                    at,
                    format!(
                        "transaction {txn} (begun on line {first}) continues after transaction {cur} of session {session} began on line {}; a session runs one transaction at a time",
                        txns[&cur].1
                    ),
                ));
            }
            Some(_) => {}
            None => {
                txns.insert(txn, (s, line_no));
                open[s] = Some(txn);
                max_ext = max_ext.max(Some(txn));
                col.push(s, PTxn::new(txn, TxnStatus::Committed, at));
            }
        }
        let k = col.key(&key.to_string());
        col.last_mut(s)
            .expect("the open transaction was pushed")
            .ops
            .push(POp {
                kind,
                key: k,
                value,
                at,
            });
    }
    let mut next = max_ext.map_or(Some(0), |m| m.checked_add(1));
    for (s, op) in aborted {
        let Some(ext) = next else {
            return Err(InputError::new(
                path,
                op.at,
                "no transaction id is left for this aborted write (ids reach 2^64-1)",
            ));
        };
        next = ext.checked_add(1);
        let mut t = PTxn::new(ext, TxnStatus::Aborted, op.at);
        t.ops.push(op);
        col.push(s, t);
    }
    Ok(Loaded {
        history: col.finish(path, true)?,
        warnings: Vec::new(),
        format: Format::Polysi,
    })
}
