//! Following logs that are still being written: records cut anywhere, errors with file and
//! line or offset.

use krait_history::{Follower, KeyId, Keys, OpKind, SimpleTxn, StreamFormat, TxnStatus};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Default)]
struct Table {
    ids: HashMap<String, KeyId>,
    names: Vec<String>,
    fence: Option<KeyId>,
}

impl Keys for Table {
    fn key(&mut self, name: &str) -> KeyId {
        if let Some(&k) = self.ids.get(name) {
            return k;
        }
        let k = self.names.len() as KeyId;
        self.names.push(name.to_string());
        self.ids.insert(name.to_string(), k);
        k
    }
    fn fence_key(&mut self, k: KeyId) {
        self.fence = Some(k);
    }
}

fn tmp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("krait-stream-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    let _ = std::fs::remove_file(&p);
    p
}

fn append(p: &Path, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(p)
        .unwrap();
    f.write_all(bytes).unwrap();
}

#[test]
fn jsonl_line_cut_anywhere() {
    let p = tmp("cut.jsonl");
    let line = br#"{"session":"a","txn":1,"ops":[["w","x",5],["r","y",null]],"status":"committed"}
"#;
    append(&p, &line[..30]);
    let mut keys = Table::default();
    let mut f = Follower::new(&p, None).unwrap();
    assert_eq!(f.format, StreamFormat::Jsonl);
    let got = f.poll(&mut keys).unwrap();
    assert!(got.txns.is_empty());
    // Up to the end of the write op, as the collector logs it before sending the write.
    let cut = line.windows(2).position(|w| w == b"5]").unwrap() + 2;
    append(&p, &line[30..cut]);
    let got = f.poll(&mut keys).unwrap();
    assert!(got.txns.is_empty());
    // The write is logged (before it was sent): a reader may have seen it already.
    assert_eq!(got.provisional, vec![(keys.ids["x"], 5)]);
    append(&p, &line[cut..]);
    let got = f.poll(&mut keys).unwrap();
    assert_eq!(got.txns.len(), 1);
    let t = &got.txns[0];
    assert_eq!(
        (
            got.new_sessions[t.session as usize].as_str(),
            t.ext,
            t.status
        ),
        ("a", 1, TxnStatus::Committed)
    );
    assert_eq!(
        t.ops,
        vec![
            (OpKind::Write, keys.ids["x"], 5),
            (OpKind::ReadInit, keys.ids["y"], 0)
        ]
    );
    assert!(got.provisional.is_empty());
}

#[test]
fn jsonl_errors_name_file_and_line() {
    let p = tmp("bad.jsonl");
    append(&p, b"{\"session\":\"a\",\"txn\":1,\"ops\":[]}\n");
    let mut keys = Table::default();
    let mut f = Follower::new(&p, None).unwrap();
    assert_eq!(f.poll(&mut keys).unwrap().txns.len(), 1);
    append(
        &p,
        b"{\"session\":\"a\",\"txn\":2,\"ops\":[[\"x\",\"k\",1]]}\n",
    );
    let e = f.poll(&mut keys).unwrap_err().to_string();
    assert!(
        e.ends_with("bad.jsonl: line 2: op 0: bad op kind \"x\"; expected \"r\" or \"w\""),
        "{e}"
    );
    // A log that shrinks was replaced or truncated under us.
    let p = tmp("shrink.jsonl");
    append(&p, b"{\"session\":\"a\",\"txn\":1,\"ops\":[]}\n");
    let mut f = Follower::new(&p, None).unwrap();
    f.poll(&mut keys).unwrap();
    std::fs::write(&p, b"").unwrap();
    let e = f.poll(&mut keys).unwrap_err().to_string();
    assert!(e.contains("shrank"), "{e}");
}

#[test]
fn jsonl_cut_last_line_recovered_at_the_end() {
    let p = tmp("end.jsonl");
    append(
        &p,
        b"{\"session\":\"a\",\"txn\":1,\"ops\":[[\"w\",\"x\",5]],\"status\":\"committed\"}\n{\"session\":\"a\",\"txn\":2,\"ops\":[[\"w\",\"x\",6]]",
    );
    let mut keys = Table::default();
    let mut f = Follower::new(&p, None).unwrap();
    assert_eq!(f.poll(&mut keys).unwrap().txns.len(), 1);
    let (got, warnings) = f.finish(&mut keys).unwrap();
    assert_eq!(got.txns.len(), 1);
    // Ops closed means COMMIT was sent: the outcome is unknown.
    assert_eq!(got.txns[0].status, TxnStatus::Unknown);
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].contains("end.jsonl: line 2: the last line is cut short"));
}

#[test]
fn cobra_logs_fed_a_byte_at_a_time() {
    let txns = vec![
        SimpleTxn::new(0, 1).w("x", 1).w("y", 2),
        SimpleTxn::new(0, 2).r("x", 1).w("x", 3),
        SimpleTxn::new(1, 3).r("y", 2).r0("z"),
        SimpleTxn::new(1, 4).r("x", 3),
    ];
    let h = krait_history::build_history(&txns).unwrap();
    let src = tmp("cobra-src");
    krait_history::write_cobra_dir(&h, &src, false).unwrap();
    let dst = tmp("cobra-dst");
    std::fs::create_dir_all(&dst).unwrap();
    let mut files = Vec::new();
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        let bytes = std::fs::read(&p).unwrap();
        let to = dst.join(p.file_name().unwrap());
        std::fs::write(&to, b"").unwrap();
        files.push((to, bytes));
    }
    let mut keys = Table::default();
    let mut f = Follower::new(&dst, None).unwrap();
    assert_eq!(f.format, StreamFormat::Cobra);
    let mut got = Vec::new();
    let longest = files.iter().map(|f| f.1.len()).max().unwrap();
    for i in 0..longest {
        for (p, bytes) in &files {
            if i < bytes.len() {
                append(p, &bytes[i..i + 1]);
            }
        }
        got.extend(f.poll(&mut keys).unwrap().txns);
    }
    got.extend(f.finish(&mut keys).unwrap().0.txns);
    let mut ids: Vec<u64> = got.iter().map(|t| t.ext).collect();
    ids.sort_unstable();
    assert_eq!(ids, vec![1, 2, 3, 4]);
    let t2 = got.iter().find(|t| t.ext == 2).unwrap();
    assert_eq!(t2.ops.len(), 2);
    assert_eq!(t2.ops[0].0, OpKind::Read);
    // The read names its writer (Cobra's claim), kept alongside.
    assert_eq!(t2.claims[0].1, 1);
    assert_eq!(
        got.iter().find(|t| t.ext == 3).unwrap().ops[1].0,
        OpKind::ReadInit
    );

    // A transaction cut off at the end of a file is dropped, with a warning naming the offset.
    let (p, bytes) = &files[0];
    append(p, &bytes[..10]);
    let (rest, warnings) = f.finish(&mut keys).unwrap();
    assert!(rest.txns.is_empty());
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0].contains(&format!("byte offset {}", bytes.len())),
        "{warnings:?}"
    );
}

/// Loading and following decode Cobra logs with the same decoder: a malformed log is the same
/// error either way, offsets counted from the start of the file even after earlier polls.
#[test]
fn cobra_errors_are_the_same_loaded_or_followed() {
    let txns = vec![
        SimpleTxn::new(0, 1).w("x", 1),
        SimpleTxn::new(0, 2).r("x", 1),
    ];
    let h = krait_history::build_history(&txns).unwrap();
    let src = tmp("cobra-same-src");
    krait_history::write_cobra_dir(&h, &src, false).unwrap();
    let log = src.join("T0.log");
    let good = std::fs::read(&log).unwrap();
    let bad: [&[u8]; 3] = [b"Q", b"S\0\0\0\0\0\0\0\x09S", b"W"];
    for (i, tail) in bad.iter().enumerate() {
        let mut bytes = good.clone();
        bytes.extend_from_slice(tail);
        if tail.len() > 1 {
            bytes.extend_from_slice(&[0; 8]);
        }
        let dir = tmp(&format!("cobra-same-{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("T0.log"), &good).unwrap();
        let mut f = Follower::new(&dir, None).unwrap();
        let mut keys = Table::default();
        let first = f.finish(&mut keys).unwrap().0.txns.len();
        assert_eq!(first, 2);
        std::fs::write(dir.join("T0.log"), &bytes).unwrap();
        let loaded = krait_history::read_cobra_dir(&dir, Default::default()).err();
        let followed = f.finish(&mut keys).err();
        match (loaded, followed) {
            (Some(l), Some(f)) => assert_eq!(l, f, "case {i}"),
            // A record cut short: a warning when loaded, nothing more when followed.
            (None, None) => assert_eq!(*tail, b"W", "case {i}"),
            other => panic!("case {i}: {other:?}"),
        }
    }
}

/// A log replaced under its name (rotated, recreated by another run) is not more of the same
/// history: an error naming the file, even when the new file is longer.
#[test]
fn a_replaced_log_is_an_error() {
    let p = tmp("replaced.jsonl");
    let line = "{\"session\":\"a\",\"txn\":1,\"ops\":[[\"w\",\"x\",1]]}\n";
    std::fs::write(&p, line).unwrap();
    let mut f = Follower::new(&p, Some(StreamFormat::Jsonl)).unwrap();
    let mut keys = Table::default();
    assert_eq!(f.poll(&mut keys).unwrap().txns.len(), 1);
    let other = tmp("replaced.jsonl.new");
    std::fs::write(&other, format!("{line}{line}{line}")).unwrap();
    std::fs::rename(&other, &p).unwrap();
    let e = f.poll(&mut keys).unwrap_err();
    assert!(
        e.to_string().contains("replaced while being followed"),
        "{e}"
    );
    let _ = std::fs::remove_file(&p);
}

/// FIFOs and devices are refused instead of blocking the reader forever.
#[test]
fn fifos_are_refused() {
    let dir = tmp("fifo-dir");
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("c0.jsonl");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        skip_notice("skipped: mkfifo is not available");
        return;
    }
    let e = krait_history::load(&dir, None).err().expect("refused");
    assert!(e.to_string().contains("not a regular file"), "{e}");
    let e = krait_history::load(&fifo, None).err().expect("refused");
    assert!(e.to_string().contains("not a regular file"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A skip notice the test harness does not capture: written to stderr directly (the print
/// macros are captured), so `cargo test` shows it without `--nocapture`.
fn skip_notice(msg: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{msg}");
}

#[test]
fn complete_last_line_without_newline_is_not_a_cut() {
    let p = tmp("no-newline.jsonl");
    append(
        &p,
        br#"{"session":"a","txn":1,"ops":[["w","x",5]],"status":"committed"}"#,
    );
    let mut keys = Table::default();
    let mut f = Follower::new(&p, None).unwrap();
    // Still being written as far as a poll can tell: no newline yet.
    assert!(f.poll(&mut keys).unwrap().txns.is_empty());
    // The logs ended: the record is complete, as the batch reader takes it, with no warning.
    let (got, warnings) = f.finish(&mut keys).unwrap();
    assert_eq!(got.txns.len(), 1);
    assert_eq!(got.txns[0].status, TxnStatus::Committed);
    assert!(warnings.is_empty(), "{warnings:?}");
    let batch = krait_history::read_jsonl_file(&p).unwrap();
    assert!(batch.warnings.is_empty());
}
