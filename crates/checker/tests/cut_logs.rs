//! Logs cut at every byte, as a crash or a full disk leaves them: the batch reader and the
//! follower (`krait watch`) read the same history from every cut, and a cut never turns a
//! correct run into a REJECT — the outcome given to a cut last line is the one its bytes prove.

use krait_checker::{check, Options, Verdict};
use krait_history::{read_jsonl_dir, History, KeyId, OpKind, TxnStatus};
use krait_history::{Follower, Keys};
use std::path::Path;

/// Session c0 as the collector writes it: T1 writes x = 5, then T2 reads x = 5 and writes
/// y = 7 (the line that gets cut). Session c1 read y = 7 (its log is complete), so T2 did commit.
const C0: &str = concat!(
    r#"{"session":"c0","txn":1,"start":100,"ops":[["w","x",5]],"status":"committed","commit":150}"#,
    "\n",
    r#"{"session":"c0","txn":2,"start":200,"ops":[["r","x",5],["w","y",7]],"status":"committed","commit":260}"#,
    "\n"
);
const C1: &str = concat!(
    r#"{"session":"c1","txn":3,"start":300,"ops":[["r","y",7],["r","x",5]],"status":"committed","commit":350}"#,
    "\n"
);

/// (session, txn, status, ops with key names) in a canonical order.
type Txns = Vec<(String, u64, TxnStatus, Vec<(OpKind, String, u64)>)>;

fn from_history(h: &History) -> Txns {
    let mut out = Txns::new();
    for s in 0..h.num_sessions() {
        for t in h.session_range(s) {
            let ops = h
                .ops(t)
                .map(|o| {
                    (
                        h.op_kind[o],
                        h.keys[h.op_key[o] as usize].clone(),
                        h.op_value[o],
                    )
                })
                .collect();
            out.push((
                h.session_names[s].clone(),
                h.txn_ext[t as usize],
                h.txn_status[t as usize],
                ops,
            ));
        }
    }
    out.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    out
}

#[derive(Default)]
struct KeyTable(Vec<String>);
impl Keys for KeyTable {
    fn key(&mut self, name: &str) -> KeyId {
        match self.0.iter().position(|k| k == name) {
            Some(i) => i as KeyId,
            None => {
                self.0.push(name.to_string());
                self.0.len() as KeyId - 1
            }
        }
    }
    fn fence_key(&mut self, _: KeyId) {}
}

fn followed(dir: &Path) -> Txns {
    let mut f = Follower::new(dir, None).unwrap();
    let mut keys = KeyTable::default();
    let first = f.poll(&mut keys).unwrap();
    let (last, _) = f.finish(&mut keys).unwrap();
    // Records carry the follower's session numbers; its names come in the order numbered.
    let names: Vec<String> = first
        .new_sessions
        .into_iter()
        .chain(last.new_sessions)
        .collect();
    let mut txns = first.txns;
    txns.extend(last.txns);
    let mut out: Txns = txns
        .into_iter()
        .map(|t| {
            let ops = t
                .ops
                .iter()
                .map(|&(k, key, v)| (k, keys.0[key as usize].clone(), v))
                .collect();
            (names[t.session as usize].clone(), t.ext, t.status, ops)
        })
        .collect();
    out.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    out
}

#[test]
fn every_cut_of_the_last_line_reads_the_same_and_never_false_alarms() {
    let dir = std::env::temp_dir().join(format!("krait-cut-logs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("c1.jsonl"), C1).unwrap();
    let line2 = C0.find("{\"session\":\"c0\",\"txn\":2").unwrap();
    let ops_open = C0[line2..].find("\"ops\":[").unwrap() + line2 + 7;
    let ops_closed = C0[line2..].find("]],").unwrap() + line2 + 2;
    let status_letter = C0[line2..].find("\"status\":\"").unwrap() + line2 + 10;
    let mut seen = [0usize; 4];
    for cut in line2 + 1..=C0.len() {
        let text = &C0[..cut];
        std::fs::write(dir.join("c0.jsonl"), text).unwrap();
        let batch = read_jsonl_dir(&dir).unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
        let b = from_history(&batch.history);
        assert_eq!(b, followed(&dir), "cut at byte {cut}: {text:?}");
        let t2 = b.iter().find(|t| t.0 == "c0" && t.1 == 2);
        let verdict = check(&batch.history, &Options::default()).unwrap().verdict;
        if cut < ops_open {
            // Cut before its ops: never asked to commit, left out; T3's read of y = 7 is then a
            // read of nobody — true, since such a T2 cannot have committed.
            assert!(t2.is_none(), "cut at {cut}");
            assert!(matches!(verdict, Verdict::Reject(_)), "cut at {cut}");
            seen[0] += 1;
        } else if cut < ops_closed {
            // Inside its ops: COMMIT was never sent, aborted (the complete ops kept).
            let t2 = t2.unwrap();
            assert_eq!(t2.2, TxnStatus::Aborted, "cut at {cut}");
            assert!(t2.3.len() <= 2);
            seen[1] += 1;
        } else if cut <= status_letter {
            // COMMIT was sent, its outcome not yet written: unknown, and read, so committed.
            let t2 = t2.unwrap();
            assert_eq!(t2.2, TxnStatus::Unknown, "cut at {cut}");
            assert_eq!(t2.3.len(), 2);
            assert_eq!(verdict, Verdict::Accept, "cut at {cut}: {text:?}");
            seen[2] += 1;
        } else {
            let t2 = t2.unwrap();
            assert_eq!(t2.2, TxnStatus::Committed, "cut at {cut}");
            assert_eq!(t2.3.len(), 2);
            assert_eq!(verdict, Verdict::Accept, "cut at {cut}: {text:?}");
            seen[3] += 1;
        }
    }
    assert!(seen.iter().all(|&n| n > 0), "{seen:?}");
    // A complete last line without its newline is complete, in both readers.
    std::fs::write(dir.join("c0.jsonl"), C0.trim_end()).unwrap();
    let batch = read_jsonl_dir(&dir).unwrap();
    assert!(batch.warnings.is_empty());
    assert_eq!(from_history(&batch.history), followed(&dir));
    let _ = std::fs::remove_dir_all(&dir);
}

use crate::common;

/// A history in the collector's layout (head, ops, then the outcome), one file.
fn collector_text(h: &History) -> String {
    let mut out = String::new();
    for s in 0..h.num_sessions() {
        for t in h.session_range(s) {
            let ops: Vec<String> = h
                .ops(t)
                .map(|o| {
                    let k = &h.keys[h.op_key[o] as usize];
                    match h.op_kind[o] {
                        OpKind::Write => format!("[\"w\",\"{k}\",{}]", h.op_value[o]),
                        OpKind::Read => format!("[\"r\",\"{k}\",{}]", h.op_value[o]),
                        OpKind::ReadInit => format!("[\"r\",\"{k}\",null]"),
                    }
                })
                .collect();
            let end = match h.txn_status[t as usize] {
                TxnStatus::Committed => {
                    format!(",\"status\":\"committed\",\"commit\":{}}}", 1000 + t)
                }
                st => format!(",\"status\":\"{}\"}}", st.as_str()),
            };
            out += &format!(
                "{{\"session\":\"{}\",\"txn\":{},\"start\":{},\"ops\":[{}]{end}\n",
                h.session_names[s],
                h.txn_ext[t as usize],
                t,
                ops.join(",")
            );
        }
    }
    out
}

/// Batch reading (`check`) and following (`watch`) agree on every prefix of generated logs:
/// cut at every byte, both read the same transactions with the same outcomes.
#[test]
fn batch_and_follow_agree_on_every_prefix() {
    let dir = std::env::temp_dir().join(format!("krait-prefixes-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut r = common::Rng(0x9f1e);
    let mut cuts = 0;
    for i in 0..12 {
        let h = common::random_history(&mut r, 8, 2);
        let text = collector_text(&h);
        for cut in 0..=text.len() {
            std::fs::write(dir.join("c.jsonl"), &text[..cut]).unwrap();
            let batch = match read_jsonl_dir(&dir) {
                Ok(l) => from_history(&l.history),
                // An empty file is no history; the follower then has nothing either.
                Err(_) if text[..cut].trim().is_empty() => Txns::new(),
                Err(e) => panic!("history {i}, cut at {cut}: {e}"),
            };
            assert_eq!(batch, followed(&dir), "history {i}, cut at {cut}");
            cuts += 1;
        }
    }
    assert!(cuts > 3000, "{cuts}");
    let _ = std::fs::remove_dir_all(&dir);
}
