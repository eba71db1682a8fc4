//! Readers on hand-made bytes: every construct, every malformed case with its exact error, and
//! round trips through both writers.

use krait_history::{
    read_cobra_dir, read_cobra_log, read_jsonl, read_jsonl_file, resolve, write_cobra_dir,
    write_jsonl, write_jsonl_file, CobraOptions, InputError, Location, OpKind, TxnStatus,
    FENCE_KEY_HASH, FROM_INIT, FROM_NOBODY, INIT_WRITE_ID, NULL_WRITE_ID,
};
use std::path::{Path, PathBuf};

struct Log(Vec<u8>);
impl Log {
    fn new() -> Log {
        Log(Vec::new())
    }
    fn rec(mut self, op: u8, fields: &[u64]) -> Log {
        self.0.push(op);
        for f in fields {
            self.0.extend_from_slice(&f.to_be_bytes());
        }
        self
    }
    fn s(self, t: u64) -> Log {
        self.rec(b'S', &[t])
    }
    fn c(self, t: u64) -> Log {
        self.rec(b'C', &[t])
    }
    fn w(self, wid: u64, k: u64, v: u64) -> Log {
        self.rec(b'W', &[wid, k, v])
    }
    fn r(self, wt: u64, wid: u64, k: u64, v: u64) -> Log {
        self.rec(b'R', &[wt, wid, k, v])
    }
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("krait-readers-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write_dir(name: &str, sessions: &[Log]) -> PathBuf {
    let d = tmpdir(name);
    for (i, s) in sessions.iter().enumerate() {
        std::fs::write(d.join(format!("T{i}.log")), &s.0).unwrap();
    }
    // Other files are ignored.
    std::fs::write(d.join("notes.txt"), b"ignored").unwrap();
    d
}

fn load_err(name: &str, sessions: &[Log]) -> InputError {
    let d = write_dir(name, sessions);
    match read_cobra_dir(&d, CobraOptions::default()) {
        Ok(_) => panic!("{name}: expected an error"),
        Err(e) => e,
    }
}

#[test]
fn cobra_every_construct() {
    let d = write_dir(
        "constructs",
        &[
            Log::new()
                .s(1)
                .w(0x100, 7, 70)
                .w(0x101, 8, 80)
                .c(1)
                .s(2)
                .r(INIT_WRITE_ID, INIT_WRITE_ID, 9, 5)
                .c(2),
            Log::new()
                .s(3)
                .r(1, 0x100, 7, 70)
                .r(NULL_WRITE_ID, NULL_WRITE_ID, 10, 0)
                .c(3)
                .s(4)
                .r(1, 0x101, FENCE_KEY_HASH, 80)
                .c(4),
        ],
    );
    let l = read_cobra_dir(&d, CobraOptions::default()).unwrap();
    let h = &l.history;
    assert!(l.warnings.is_empty());
    assert_eq!(h.num_sessions(), 2);
    assert_eq!(h.session_names, vec!["T0", "T1"]);
    assert_eq!(h.txn_ext, vec![1, 2, 3, 4]);
    assert_eq!(
        h.op_kind,
        vec![
            OpKind::Write,
            OpKind::Write,
            OpKind::ReadInit,
            OpKind::Read,
            OpKind::ReadInit,
            OpKind::Read
        ]
    );
    assert_eq!(h.keys[h.op_key[0] as usize], "0000000000000007");
    assert_eq!(
        h.fence_key.map(|k| h.keys[k as usize].as_str()),
        Some("FZVERSION")
    );
    assert!(h.is_fence(3));
    let r = resolve(h);
    assert_eq!(r.read_from[3], 0);
    assert_eq!(r.read_from[2], FROM_INIT);
    assert_eq!(r.read_from[4], FROM_INIT);
    // The fence read names write 0x101 on key 8, not the fence key: nobody wrote that.
    assert_eq!(r.read_from[5], FROM_NOBODY);
    assert!(r.problems.is_empty());
}

#[test]
fn cobra_claims_are_checked() {
    // Right write id, wrong writer transaction; right writer, wrong value hash.
    let d = write_dir(
        "claims",
        &[
            Log::new().s(1).w(0x100, 7, 70).c(1),
            Log::new().s(2).r(9, 0x100, 7, 70).r(1, 0x100, 7, 71).c(2),
        ],
    );
    let h = read_cobra_dir(&d, CobraOptions::default()).unwrap().history;
    let r = resolve(&h);
    assert_eq!(
        r.problems,
        vec![
            (
                1,
                krait_history::ReadProblem::WrongWriter {
                    claimed: 9,
                    actual: 1
                }
            ),
            (
                2,
                krait_history::ReadProblem::ValueMismatch {
                    read: 71,
                    written: 70
                }
            ),
        ]
    );
}

#[test]
fn cobra_truncated_last_transaction_is_a_warning() {
    let mut log = Log::new().s(1).w(0x100, 7, 70).c(1).s(2).w(0x101, 7, 71);
    log.0.extend_from_slice(&[b'C', 0, 0]);
    let d = write_dir("truncated", &[log]);
    let l = read_cobra_dir(&d, CobraOptions::default()).unwrap();
    assert_eq!(l.history.num_txns(), 1);
    assert_eq!(l.history.num_ops(), 1);
    assert_eq!(l.warnings.len(), 1);
    assert_eq!(l.warnings[0].location, Location::Offset(77));
    assert_eq!(
        l.warnings[0].message,
        "truncated record 'C' in transaction 2: transaction dropped"
    );
    // A file that simply stops inside a transaction.
    let d = write_dir(
        "unfinished",
        &[Log::new().s(1).w(0x100, 7, 70).c(1).s(2).w(0x101, 7, 71)],
    );
    let l = read_cobra_dir(&d, CobraOptions::default()).unwrap();
    assert_eq!(l.history.num_txns(), 1);
    assert_eq!(
        l.warnings[0].message,
        "transaction 2 has no commit (the file ends): transaction dropped"
    );
    assert_eq!(l.warnings[0].location, Location::Offset(43));
    // The dropped write does not count as written.
    assert!(l.history.write_index.len() == 1);
}

#[test]
fn cobra_malformed() {
    let e = load_err("opcode", &[Log::new().s(1).c(1).rec(b'Q', &[1])]);
    assert_eq!(e.location, Location::Offset(18));
    assert_eq!(e.message, "bad opcode 0x51 ('Q'); expected S, W, R or C");
    assert!(
        e.to_string()
            .ends_with("T0.log: byte offset 18: bad opcode 0x51 ('Q'); expected S, W, R or C"),
        "{e}"
    );

    let e = load_err("commit-unstarted", &[Log::new().c(5)]);
    assert_eq!(
        (e.location, e.message.as_str()),
        (
            Location::Offset(0),
            "commit of transaction 5, which never started"
        )
    );

    let e = load_err("commit-other", &[Log::new().s(1).c(2)]);
    assert_eq!(
        e.message,
        "commit of transaction 2, but transaction 1 is the one open"
    );

    let e = load_err("nested", &[Log::new().s(1).s(2)]);
    assert_eq!(
        (e.location, e.message.as_str()),
        (
            Location::Offset(9),
            "transaction 1 (started at byte offset 0) has no commit before this start"
        )
    );

    let e = load_err("outside", &[Log::new().w(1, 2, 3)]);
    assert_eq!(e.message, "'W' record outside a transaction");

    let e = load_err("dup-txn", &[Log::new().s(1).c(1), Log::new().s(1).c(1)]);
    assert!(e.path.ends_with("T1.log"));
    assert_eq!(
        (e.location, e.message.as_str()),
        (Location::Offset(9), "transaction id 1 is used twice")
    );

    let e = load_err(
        "dup-wid",
        &[Log::new().s(1).w(0x100, 7, 70).w(0x100, 7, 71).c(1)],
    );
    assert_eq!(
        (e.location, e.message.as_str()),
        (
            Location::Offset(34),
            "write id 0x100 is used by an earlier write"
        )
    );

    // Write ids are checked once every log is read: the later write is still the one named,
    // in its own file, past a transaction the first file drops unfinished.
    let e = load_err(
        "dup-wid-files",
        &[
            Log::new().s(1).w(0x200, 7, 70).c(1).s(5).w(0x999, 8, 1),
            Log::new()
                .s(2)
                .w(0x300, 7, 71)
                .c(2)
                .s(3)
                .w(0x200, 7, 72)
                .c(3),
        ],
    );
    assert!(e.path.ends_with("T1.log"), "{e:?}");
    assert_eq!(
        (e.location, e.message.as_str()),
        (
            Location::Offset(52),
            "write id 0x200 is used by an earlier write"
        )
    );

    let e = load_err("reserved", &[Log::new().s(1).w(INIT_WRITE_ID, 7, 70).c(1)]);
    assert_eq!(
        e.message,
        "write uses the reserved initial-state write id 0xbebeebee"
    );

    let d = tmpdir("empty-dir");
    let e = read_cobra_dir(&d, CobraOptions::default()).err().unwrap();
    assert_eq!(e.message, "no T<n>.log session files in this directory");
}

#[test]
fn cobra_timestamped_variant() {
    let mut log = Vec::new();
    for (op, fields) in [
        (b'S', vec![1u64, 1_000]),
        (b'W', vec![0x100, 7, 70]),
        (b'C', vec![1, 2_000]),
    ] {
        log.push(op);
        for f in fields {
            log.extend_from_slice(&f.to_be_bytes());
        }
    }
    let d = write_dir("ts", &[Log(log)]);
    let h = read_cobra_dir(&d, CobraOptions::default()).unwrap().history;
    assert_eq!((h.txn_start[0], h.txn_commit[0]), (1_000, 2_000));
    let h = read_cobra_dir(
        &d,
        CobraOptions {
            timestamps: Some(true),
        },
    )
    .unwrap()
    .history;
    assert_eq!(h.txn_commit[0], 2_000);
}

#[test]
fn cobra_round_trip() {
    let d = write_dir(
        "rt-in",
        &[
            Log::new()
                .s(1)
                .w(0x100, 7, 70)
                .w(0x101, 8, 80)
                .c(1)
                .s(2)
                .r(INIT_WRITE_ID, INIT_WRITE_ID, 9, 5)
                .c(2),
            Log::new()
                .s(3)
                .r(1, 0x100, 7, 70)
                .r(NULL_WRITE_ID, NULL_WRITE_ID, 10, 0)
                .c(3),
        ],
    );
    let h = read_cobra_dir(&d, CobraOptions::default()).unwrap().history;
    let out = tmpdir("rt-out");
    write_cobra_dir(&h, &out, false).unwrap();
    for i in 0..2 {
        assert_eq!(
            std::fs::read(d.join(format!("T{i}.log"))).unwrap(),
            std::fs::read(out.join(format!("T{i}.log"))).unwrap()
        );
    }
    // Through the native format and back: the same history.
    let j = out.join("h.jsonl");
    write_jsonl_file(&h, &j).unwrap();
    let h2 = read_jsonl_file(&j).unwrap().history;
    assert_eq!(h2.txn_ext, h.txn_ext);
    assert_eq!(h2.op_kind, h.op_kind);
    assert_eq!(
        h2.op_value
            .iter()
            .zip(&h2.op_kind)
            .filter(|(_, k)| **k != OpKind::ReadInit)
            .count(),
        3
    );
    assert_eq!(resolve(&h2).read_from, resolve(&h).read_from);
}

fn jsonl_err(text: &str) -> InputError {
    match read_jsonl(text.as_bytes(), Path::new("h.jsonl")) {
        Ok(_) => panic!("expected an error for {text:?}"),
        Err(e) => e,
    }
}

#[test]
fn jsonl_every_construct() {
    let text = r#"# a comment line, and a blank one follow

{"session":"a","txn":1,"status":"committed","start":10,"commit":20,"ops":[["w","x",1],["r","y",null]]}
{"session":2,"txn":2,"status":"aborted","ops":[["w","x",2]]}
{"session":"a","txn":3,"ops":[["r","x",1],["w",7,3]]}
{"session":2,"txn":4,"status":"unknown","ops":[["r","__krait_fence",null],["w","__krait_fence",9]]}
"#;
    let h = read_jsonl(text.as_bytes(), Path::new("h.jsonl"))
        .unwrap()
        .history;
    assert_eq!(h.session_names, vec!["a", "2"]);
    assert_eq!(h.txn_ext, vec![1, 3, 2, 4]);
    assert_eq!(
        h.txn_status,
        vec![
            TxnStatus::Committed,
            TxnStatus::Committed,
            TxnStatus::Aborted,
            TxnStatus::Unknown
        ]
    );
    assert_eq!((h.txn_start[0], h.txn_commit[0]), (10, 20));
    assert_eq!(h.txn_start[1], krait_history::NO_TIME);
    assert_eq!(h.keys, vec!["x", "y", "7", "__krait_fence"]);
    assert!(h.is_fence(3));
    let r = resolve(&h);
    assert_eq!(r.read_from[2], 0);
    // Round trip.
    let mut out = Vec::new();
    write_jsonl(&h, &mut out).unwrap();
    let h2 = read_jsonl(out.as_slice(), Path::new("again.jsonl"))
        .unwrap()
        .history;
    assert_eq!(
        (h2.txn_ext, h2.op_value, h2.keys),
        (h.txn_ext.clone(), h.op_value.clone(), h.keys.clone())
    );
    let mut out2 = Vec::new();
    write_jsonl(
        &read_jsonl(out.as_slice(), Path::new("x")).unwrap().history,
        &mut out2,
    )
    .unwrap();
    assert_eq!(out, out2);
}

#[test]
fn jsonl_malformed() {
    let ok = r#"{"session":"a","txn":1,"ops":[["w","x",1]]}"#;
    let e = jsonl_err(&format!(
        "{ok}\n{{\"session\":\"a\",\"txn\":1,\"ops\":[]}}\n"
    ));
    assert_eq!(
        (e.location, e.message.as_str()),
        (
            Location::Line(2),
            "transaction id 1 is used twice (first on line 1)"
        )
    );
    // A value written twice is no error (a read of it may have read either).
    let dup = format!("{ok}\n{{\"session\":\"b\",\"txn\":2,\"ops\":[[\"w\",\"x\",1]]}}\n");
    let h = read_jsonl(dup.as_bytes(), Path::new("h.jsonl"))
        .unwrap()
        .history;
    assert!(h.has_duplicates());
    let e = jsonl_err(r#"{"session":"a","txn":1,"ops":[["x","k",1]]}"#);
    assert_eq!(
        e.message,
        "op 0: bad op kind \"x\"; expected \"r\" or \"w\""
    );
    let e = jsonl_err(r#"{"session":"a","txn":1,"ops":[["w","k",[1]]]}"#);
    assert_eq!(
        e.message,
        "op 0: a write needs a value, or null for a delete"
    );
    let e = jsonl_err(r#"{"session":"a","txn":1,"status":"maybe","ops":[]}"#);
    assert_eq!(
        e.message,
        "bad status \"maybe\"; expected committed, aborted or unknown"
    );
    let e = jsonl_err(r#"{"session":"a","txn":1,"start":5,"commit":4,"ops":[]}"#);
    assert_eq!(e.message, "commit time 4 is before start time 5");
    let e = jsonl_err("{\"session\":\"a\",\"txn\":1,\"ops\":[]}\nnot json\n");
    assert_eq!(e.location, Location::Line(2));
    assert!(
        e.message.starts_with("not a transaction record: "),
        "{}",
        e.message
    );
    let e = jsonl_err(r#"{"session":"a","txn":-1,"ops":[]}"#);
    assert!(
        e.message.starts_with("not a transaction record: "),
        "{}",
        e.message
    );
    let e = jsonl_err(r#"{"session":"a","txn":1,"ops":[],"extra":1}"#);
    assert!(e.message.contains("unknown field `extra`"), "{}", e.message);
    assert!(
        e.to_string()
            .starts_with("h.jsonl: line 1: not a transaction record"),
        "{e}"
    );
}

#[test]
fn detect_and_load() {
    let d = write_dir("detect", &[Log::new().s(1).c(1)]);
    assert_eq!(
        krait_history::detect(&d).unwrap(),
        krait_history::Format::Cobra
    );
    let e = krait_history::load(Path::new("/nonexistent/krait"), None)
        .err()
        .unwrap();
    assert_eq!(e.message, "no such file or directory");
    let empty = tmpdir("not-cobra");
    assert_eq!(
        krait_history::detect(&empty).err().unwrap().message,
        "a directory, but it holds no T<n>.log or *.jsonl session files"
    );
}

#[test]
fn jsonl_directory_and_cut_lines() {
    let d = tmpdir("jsonl-dir");
    std::fs::write(
        d.join("c0.jsonl"),
        concat!(
            r#"{"session":"c0","txn":1,"start":1,"ops":[["w","x",1]],"status":"committed","commit":2}"#,
            "\n",
            // COMMIT was sent (ops closed), then the client died: outcome unknown.
            r#"{"session":"c0","txn":2,"start":3,"ops":[["w","x",2]]"#
        ),
    )
    .unwrap();
    std::fs::write(
        d.join("c1.jsonl"),
        concat!(
            r#"{"session":"c1","txn":3,"start":1,"ops":[["r","x",1]],"status":"committed","commit":2}"#,
            "\n",
            // Died in the middle of the operations: never asked to commit.
            r#"{"session":"c1","txn":4,"start":3,"ops":[["w","y",5],["w","#
        ),
    )
    .unwrap();
    std::fs::write(d.join("README"), "ignored").unwrap();
    let l = krait_history::load(&d, None).unwrap();
    let h = &l.history;
    assert_eq!(h.txn_ext, vec![1, 2, 3, 4]);
    assert_eq!(
        h.txn_status,
        vec![
            TxnStatus::Committed,
            TxnStatus::Unknown,
            TxnStatus::Committed,
            TxnStatus::Aborted
        ]
    );
    assert_eq!(
        h.ops(3).len(),
        1,
        "the cut write is dropped, the whole one kept"
    );
    assert_eq!(l.warnings.len(), 2);
    assert_eq!(l.warnings[0].message, "the last line is cut short (the client stopped): read as a transaction with outcome unknown");
    assert!(l.warnings[1].path.ends_with("c1.jsonl"));
    // A cut line that is not the last one is an error.
    std::fs::write(
        d.join("c2.jsonl"),
        "{\"session\":\"c2\",\"txn\":9,\"ops\":[\n{\"session\":\"c2\",\"txn\":10,\"ops\":[]}\n",
    )
    .unwrap();
    let e = krait_history::load(&d, None).err().unwrap();
    assert!(
        e.path.ends_with("c2.jsonl") && e.location == Location::Line(1),
        "{e}"
    );
}

#[test]
fn no_input_makes_a_reader_panic() {
    // Every prefix and thousands of byte mutations of valid inputs: errors or histories, never a
    // panic.
    let mut seed = 0x1234_5678_9abc_def1u64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let cobra = Log::new()
        .s(1)
        .w(0x100, 7, 70)
        .c(1)
        .s(2)
        .r(1, 0x100, 7, 70)
        .r(INIT_WRITE_ID, INIT_WRITE_ID, 9, 5)
        .c(2)
        .0;
    let jsonl = br#"{"session":"a","txn":1,"start":1,"commit":2,"ops":[["w","x",1],["r","y",null]]}
{"session":"b","txn":2,"status":"aborted","ops":[["r","x",1],["w","y",2]]}
"#
    .to_vec();
    for base in [&cobra, &jsonl] {
        let mut cases: Vec<Vec<u8>> = (0..base.len()).map(|i| base[..i].to_vec()).collect();
        for _ in 0..3000 {
            let mut m = base.clone();
            for _ in 0..1 + rnd() % 4 {
                let i = (rnd() % m.len() as u64) as usize;
                match rnd() % 3 {
                    0 => m[i] = rnd() as u8,
                    1 => {
                        m.remove(i);
                    }
                    _ => m.insert(i, b"SWRC{}[]\",:0123456789"[(rnd() % 21) as usize]),
                }
            }
            cases.push(m);
        }
        for bytes in cases {
            let _ = read_cobra_log(&bytes, Path::new("T0.log"), false);
            let _ = read_jsonl(bytes.as_slice(), Path::new("h.jsonl"));
        }
    }
}
