//! Recovering the last line of a native log cut short by a crash (or a full disk): what its
//! bytes prove the transaction did, never more (see `docs/semantics.md`).

use super::jsonl_serde::LineIn;

/// What a last line cut short by a crash (or a full disk) still says.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Repair {
    /// The record completed as it must have been: the JSON text and the outcome it got.
    Fixed(String, &'static str),
    /// Cut before its operations began: the transaction never asked to commit and nothing of
    /// it reached the database, so it is left out.
    Drop,
}

/// The collector writes a transaction's line progressively: `{"session":…,"txn":…,"start":…,
/// "ops":[` first, each op before it is sent, `]` just before COMMIT is sent, and the outcome
/// (`,"status":"committed","commit":…}` …) once it is known. So a cut inside the ops means
/// COMMIT never went out (aborted, complete ops kept); a cut after `]` means COMMIT went out,
/// and the outcome is the status whose first letter was written, else unknown. A complete
/// record (only its newline missing) is itself.
pub(crate) fn repair(text: &str) -> Option<Repair> {
    let valid = |t: &str| serde_json::from_str::<serde::de::IgnoredAny>(t).is_ok();
    if valid(text) {
        let status = match serde_json::from_str::<LineIn>(text).ok()?.status.as_deref() {
            Some("aborted") | Some("fail") => "aborted",
            Some("unknown") | Some("info") => "unknown",
            _ => "committed",
        };
        return Some(Repair::Fixed(text.to_string(), status));
    }
    const OPS: &str = "\"ops\":[";
    let Some(p0) = text.find(OPS) else {
        // Only a head cut before its ops is dropped; anything else unrecognised is an error.
        return text.starts_with('{').then_some(Repair::Drop);
    };
    let body = p0 + OPS.len();
    // Scan the ops array: strings (keys may hold brackets), depth, ends of complete ops.
    let bytes = text.as_bytes();
    let (mut depth, mut in_str, mut esc) = (1u32, false, false);
    let mut last_op_end = body;
    let mut closed = None;
    for (i, &c) in bytes.iter().enumerate().skip(body) {
        if in_str {
            match c {
                _ if esc => esc = false,
                b'\\' => esc = true,
                b'"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_str = true,
            b'[' | b'{' => depth += 1,
            b']' | b'}' => {
                depth -= 1;
                if depth == 1 {
                    last_op_end = i + 1;
                } else if depth == 0 {
                    closed = Some(i);
                    break;
                }
            }
            _ => {}
        }
    }
    let (fixed, status) = match closed {
        None => {
            let ops = text[body..last_op_end].trim_end_matches(',');
            (
                format!("{}{ops}],\"status\":\"aborted\"}}", &text[..body]),
                "aborted",
            )
        }
        Some(pc) => {
            let rest = &text[pc + 1..];
            let status = match rest.find("\"status\":\"").map(|i| &rest[i + 10..]) {
                Some(r) if r.starts_with('c') => "committed",
                Some(r) if r.starts_with('a') => "aborted",
                _ => "unknown",
            };
            // A commit time counts only when something after it shows its digits all arrived.
            let commit = rest.find("\"commit\":").and_then(|i| {
                let r = &rest[i + 9..];
                let n = r.bytes().take_while(u8::is_ascii_digit).count();
                (n > 0 && n < r.len()).then(|| &r[..n])
            });
            let commit = match (status, commit) {
                ("committed", Some(c)) => format!(",\"commit\":{c}"),
                _ => String::new(),
            };
            (
                format!("{},\"status\":\"{status}\"{commit}}}", &text[..=pc]),
                status,
            )
        }
    };
    valid(&fixed).then_some(Repair::Fixed(fixed, status))
}
