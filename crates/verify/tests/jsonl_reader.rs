//! The verifier's own JSON Lines reader against the shared one: on every native history in the
//! repository (the CLI's corpus, the docs' examples), on random histories written by
//! krait-history's writer and reshaped the ways the format allows (sessions interleaved,
//! comments, blank lines, CRLF, integer keys and sessions, default status left out), and on a
//! directory of session logs, both produce the same history, field by field. Malformed inputs
//! are refused by both, the verifier naming the line and what was wrong.

use krait_history::{
    History, HistoryBuilder, KeyId, Location, OpKind, TxnStatus, ABSENT_VALUE, NATIVE_FENCE_KEY,
    NO_TIME,
};
use serde_json::Value;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The first field in which `a` and `b` differ, if any.
fn same(a: &History, b: &History) -> Result<(), String> {
    macro_rules! field {
        ($($f:ident),*) => {$(
            if a.$f != b.$f {
                return Err(format!("{}: {:?}\n  vs {:?}", stringify!($f), a.$f, b.$f));
            }
        )*};
    }
    field!(
        session_names,
        session_txns,
        txn_ext,
        txn_status,
        txn_ops,
        txn_start,
        txn_commit
    );
    field!(op_kind, op_key, op_value, keys, fence_key, init_value, txn_index, dup_writes);
    field!(list_reads, list_values, app_values, app_text, txn_pos);
    if a.cobra.is_some() || b.cobra.is_some() {
        return Err("a native history has no Cobra claims".into());
    }
    let firsts = |h: &History| {
        let mut v: Vec<u32> = h.write_index.ops().collect();
        v.sort_unstable();
        v
    };
    if firsts(a) != firsts(b) {
        return Err("write_index: the first writes differ".into());
    }
    Ok(())
}

/// Both readers on `text`, which must be a history both take, and take alike.
fn agree(text: &[u8], what: &str) -> History {
    let path = Path::new("h.jsonl");
    let shared = krait_history::read_jsonl(text, path)
        .unwrap_or_else(|e| panic!("{what}: the shared reader refused it: {e}"));
    let own = krait_verify::jsonl::read(text, path)
        .unwrap_or_else(|e| panic!("{what}: the verifier's reader refused it: {e}"));
    if let Err(d) = same(&shared.history, &own) {
        panic!("{what}: the readers differ in {d}");
    }
    own
}

/// Every `*.jsonl` file under `dir`, build outputs and hidden directories left out.
fn jsonl_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().unwrap().to_string_lossy();
        if p.is_dir() && name != "target" && !name.starts_with('.') {
            jsonl_files(&p, out);
        } else if name.ends_with(".jsonl") {
            out.push(p);
        }
    }
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn every_native_history_in_the_repository_reads_alike() {
    let root = repo_root();
    let mut files = Vec::new();
    for dir in ["crates", "docs"] {
        jsonl_files(&root.join(dir), &mut files);
    }
    // The CLI's corpus alone has 29; a walk that found none would prove nothing.
    assert!(files.len() >= 29, "found only {files:?}");
    for f in &files {
        let shared = krait_history::read_jsonl_file(f).unwrap().history;
        let own = krait_verify::jsonl::read_path(f).unwrap();
        same(&shared, &own).unwrap_or_else(|d| panic!("{}: {d}", f.display()));
    }
    let mut blocks = 0;
    for doc in std::fs::read_dir(root.join("docs")).unwrap() {
        let doc = doc.unwrap().path();
        if doc.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let text = std::fs::read_to_string(&doc).unwrap();
        for (i, block) in text.split("```jsonl\n").skip(1).enumerate() {
            let block = block.split("```").next().unwrap();
            let h = agree(block.as_bytes(), &format!("{} block {i}", doc.display()));
            assert!(h.num_txns() > 0);
            blocks += 1;
        }
    }
    assert!(blocks >= 1, "the docs' JSON Lines examples were not found");
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
}

/// What a random history holds besides plain reads and writes.
#[derive(Clone, Copy, Debug)]
struct Shape {
    /// Values written more than once.
    repeats: bool,
    /// Deletes (`["w", k, null]`); every key then starts absent.
    deletes: bool,
    /// List-append reads (their elements unique per key, as the format requires).
    lists: bool,
}

const KEYS: [&str; 8] = [
    "x",
    "y",
    "acct/1/balance",
    "12",
    "-7",
    "quo\"te\\",
    "ünï ☃",
    NATIVE_FENCE_KEY,
];
const SESSIONS: [&str; 5] = ["c1", "c2", "42", "s p a c e", "0"];
const APP: [&str; 4] = ["150", "", "line\nbreak \"q\" \u{1}", "ünïcödé"];

/// One random operation of a history of this shape; `next_value` numbers unique writes.
fn random_op(r: &mut Rng, b: &mut HistoryBuilder, shape: Shape, k: KeyId, next_value: &mut u64) {
    let value = |r: &mut Rng, next: &mut u64| {
        if shape.repeats {
            r.below(4)
        } else {
            *next += 1 + r.below(3);
            *next
        }
    };
    match r.below(6) {
        0 | 1 => {
            let v = if shape.deletes && r.chance(30) {
                ABSENT_VALUE
            } else {
                value(r, next_value)
            };
            b.op(OpKind::Write, k, v);
        }
        2 if shape.lists => {
            let list: Vec<u64> = (0..r.below(4)).map(|_| r.below(*next_value + 2)).collect();
            b.list_read(k, &list);
        }
        2 if shape.deletes => {
            b.op(OpKind::Read, k, ABSENT_VALUE);
        }
        3 => {
            b.op(OpKind::ReadInit, k, 0);
        }
        _ => {
            b.op(OpKind::Read, k, r.below(*next_value + 4));
        }
    }
    if r.chance(15) {
        let a = *r.pick(&APP[..]);
        b.app_value(a);
    }
}

/// A random history of this shape, built with the model's own constructor.
fn random_history(r: &mut Rng, shape: Shape) -> History {
    let mut b = HistoryBuilder::new();
    let keys: Vec<KeyId> = KEYS.iter().map(|k| b.key(k)).collect();
    b.set_fence_key(keys[KEYS.len() - 1]);
    let mut ids = HashSet::new();
    let mut next_value = 0;
    for s in 0..1 + r.below(SESSIONS.len() as u64) as usize {
        b.begin_session(SESSIONS[s]);
        for _ in 0..1 + r.below(8) {
            for _ in 0..r.below(5) {
                let k = *r.pick(&keys);
                random_op(r, &mut b, shape, k, &mut next_value);
            }
            let ext = match r.below(3) {
                0 => r.below(1000),
                1 => r.next(),
                _ => 1 << 40 | r.below(1 << 20),
            };
            if !ids.insert(ext) {
                b.discard_open_ops();
                continue;
            }
            let status = *r.pick(&[
                TxnStatus::Committed,
                TxnStatus::Committed,
                TxnStatus::Aborted,
                TxnStatus::Unknown,
            ]);
            let start = if r.chance(70) {
                r.below(1 << 40)
            } else {
                NO_TIME
            };
            let commit = match start {
                NO_TIME if r.chance(50) => r.below(1 << 40),
                NO_TIME => NO_TIME,
                s if r.chance(80) => s + r.below(1000),
                _ => NO_TIME,
            };
            b.finish_txn(ext, status, start, commit).unwrap();
        }
    }
    if shape.deletes {
        b.set_init_value(ABSENT_VALUE);
    }
    b.finish()
}

/// `s` as a JSON integer where it is one written canonically ("12", "-7"), else as is.
fn maybe_integer(r: &mut Rng, s: &Value) -> Value {
    let canonical = s.as_str().and_then(|t| {
        let i: i64 = t.parse().ok()?;
        (i.to_string() == t).then_some(i)
    });
    match canonical {
        Some(i) if r.chance(50) => Value::from(i),
        _ => s.clone(),
    }
}

/// The writer's lines reshaped as the format allows: sessions interleaved (each one's order
/// kept), the default status left out, integer-like names as integers, fields reordered,
/// comments, blank lines, CRLF and stray spaces.
fn reshape(r: &mut Rng, written: &str) -> String {
    let mut sessions: Vec<Vec<Value>> = Vec::new();
    let mut last = None;
    for line in written.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        if last.as_ref() != Some(&v["session"]) {
            last = Some(v["session"].clone());
            sessions.push(Vec::new());
        }
        sessions.last_mut().unwrap().push(v);
    }
    sessions.iter_mut().for_each(|s| s.reverse());
    let mut out = String::new();
    loop {
        // Any session with lines left may come next.
        let left: Vec<usize> = (0..sessions.len())
            .filter(|&i| !sessions[i].is_empty())
            .collect();
        if left.is_empty() {
            return out;
        }
        let s = &mut sessions[*r.pick(&left)];
        let mut v = s.pop().unwrap();
        let rec = v.as_object_mut().unwrap();
        if rec["status"] == "committed" && r.chance(50) {
            rec.remove("status");
        }
        rec["session"] = maybe_integer(r, &rec["session"]);
        for op in rec["ops"].as_array_mut().unwrap() {
            op[1] = maybe_integer(r, &op[1]);
        }
        match r.below(8) {
            0 => out.push_str("# a comment\n"),
            1 => out.push_str("  \n"),
            _ => {}
        }
        out.push_str(&serde_json::to_string(&v).unwrap());
        out.push_str(if r.chance(20) { " \r\n" } else { "\n" });
    }
}

#[test]
fn random_written_histories_read_alike() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut deletes, mut lists, mut apps) = (0, 0, 0);
    for case in 0..400 {
        let shape = Shape {
            repeats: case % 4 == 1,
            deletes: case % 4 == 2,
            lists: case % 4 == 3,
        };
        let h = random_history(&mut r, shape);
        let mut written = Vec::new();
        krait_history::write_jsonl(&h, &mut written).unwrap();
        let own = agree(&written, &format!("case {case} {shape:?}"));
        assert_eq!(own.num_txns(), h.num_txns(), "case {case}");
        let text = String::from_utf8(written).unwrap();
        agree(
            reshape(&mut r, &text).as_bytes(),
            &format!("case {case} reshaped"),
        );
        deletes += usize::from(own.init_value == Some(ABSENT_VALUE));
        lists += usize::from(own.has_lists());
        apps += usize::from(!own.app_values.is_empty());
    }
    // The features the shapes ask for did turn up.
    assert!(
        deletes > 50 && lists > 50 && apps > 100,
        "{deletes} {lists} {apps}"
    );
}

#[test]
fn a_directory_of_session_logs_reads_alike() {
    let dir = std::env::temp_dir().join(format!("krait-verify-jsonl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let a = "{\"session\":\"c1\",\"txn\":1,\"ops\":[[\"w\",\"x\",1]]}\n\
             {\"session\":\"c2\",\"txn\":3,\"ops\":[[\"r\",\"x\",1]]}\n";
    let b = "{\"session\":\"c1\",\"txn\":2,\"status\":\"aborted\",\"ops\":[[\"w\",\"y\",null]]}\n";
    std::fs::write(dir.join("a.jsonl"), a).unwrap();
    std::fs::write(dir.join("b.jsonl"), b).unwrap();
    std::fs::write(dir.join("notes.txt"), "not a session log").unwrap();
    let shared = krait_history::read_jsonl_dir(&dir).unwrap().history;
    let own = krait_verify::jsonl::read_path(&dir);
    std::fs::write(
        dir.join("c.jsonl"),
        "{\"session\":\"c3\",\"txn\":1,\"ops\":[]}\n",
    )
    .unwrap();
    let twice = krait_verify::jsonl::read_path(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    let own = own.unwrap();
    same(&shared, &own).unwrap();
    assert_eq!(own.session_names, ["c1", "c2"]);
    assert_eq!(own.txn_ext, [1, 2, 3]);
    let e = twice.unwrap_err();
    assert!(e.path.ends_with("c.jsonl") && e.location == Location::Line(1));
    assert!(e.message.contains("used twice (first on") && e.message.contains("a.jsonl line 1"));
}

#[test]
fn malformed_lines_are_refused_naming_the_line() {
    let ok = r#"{"session":"a","txn":1,"ops":[["w","x",1]]}"#;
    let rec = |rest: &str| format!("{ok}\n{{\"session\":\"a\",\"txn\":2,{rest}}}\n");
    let cases: Vec<(Vec<u8>, u64, &str)> = vec![
        (format!("{ok}\n{{\"session\":\"a\"\n").into(), 2, "not a transaction record"),
        (format!("# c\n\n{ok}\n[1, 2]\n").into(), 4, "a JSON object is expected"),
        (format!("{ok}\n{{\"session\":\"a\",\"ops\":[]}}\n").into(), 2, "missing field \"txn\""),
        (rec("\"ops\":[],\"comit\":5").into(), 2, "unknown field \"comit\""),
        (rec("\"status\":\"commited\",\"ops\":[]").into(), 2, "bad status"),
        (rec("\"ops\":[[\"x\",\"k\",1]]").into(), 2, "op 0: bad op kind"),
        (rec("\"ops\":[[\"r\",\"k\",1],[\"w\",\"k\",[1]]]").into(), 2, "op 1: a write's value"),
        (rec("\"ops\":[[\"w\",\"k\",-1]]").into(), 2, "a write's value"),
        (rec("\"ops\":[[\"r\",\"k\",\"5\"]]").into(), 2, "a read's value"),
        (rec("\"ops\":[[\"r\",\"k\",[1,\"a\"]]]").into(), 2, "a list read's elements"),
        (rec("\"ops\":[[\"w\",\"k\",1,\"a\",\"b\"]]").into(), 2, "an operation is"),
        (rec("\"ops\":[[\"w\",\"k\",3,7]]").into(), 2, "the application's value"),
        (rec("\"ops\":[[\"w\",true,3]]").into(), 2, "a key must be"),
        (rec("\"start\":10,\"commit\":5,\"ops\":[]").into(), 2, "commit time 5 is before"),
        (rec("\"ops\":{}").into(), 2, "\"ops\" must be an array"),
        (format!("{ok}\n{{\"session\":1.5,\"txn\":2,\"ops\":[]}}\n").into(), 2, "session"),
        (format!("{ok}\n{{\"session\":\"a\",\"txn\":-3,\"ops\":[]}}\n").into(), 2, "\"txn\""),
        (
            format!("{ok}\n{}\n", ok.replace("\"a\"", "\"b\"")).into(),
            2,
            "transaction id 1 is used twice (first on line 1)",
        ),
        (
            format!("{ok}\n{{\"session\":\"b\",\"txn\":2,\"ops\":[[\"w\",\"x\",1],[\"r\",\"x\",[1]]]}}\n").into(),
            2,
            "key \"x\" is appended the value 1 more than once",
        ),
        ([format!("{ok}\n").as_bytes(), b"{\"session\":\"\xff\"}\n"].concat(), 2, "UTF-8"),
    ];
    let path = Path::new("bad.jsonl");
    for (text, line, needle) in &cases {
        let shown = String::from_utf8_lossy(text);
        let e = krait_verify::jsonl::read(&text[..], path)
            .map(|_| ())
            .expect_err(&shown);
        assert_eq!(e.location, Location::Line(*line), "{shown}: {e}");
        assert!(e.message.contains(needle), "{shown}: {e}");
        assert!(e.to_string().starts_with("bad.jsonl: line"), "{e}");
        // The shared reader refuses it too, at the same line.
        let shared = krait_history::read_jsonl(&text[..], path).map(|_| ());
        assert_eq!(shared.map_err(|e| e.location), Err(e.location), "{shown}");
    }
    // A last line cut short by a crash: the shared reader repairs it; this one refuses it,
    // saying how to get a whole log.
    let cut = format!("{ok}\n{{\"session\":\"a\",\"txn\":2,\"ops\":[[\"w\",\"x\"");
    let e = krait_verify::jsonl::read(cut.as_bytes(), path)
        .map(|_| ())
        .unwrap_err();
    assert_eq!(e.location, Location::Line(2));
    assert!(
        e.message.contains("cut short") && e.message.contains("krait convert"),
        "{e}"
    );
    assert!(krait_history::read_jsonl(cut.as_bytes(), path).is_ok());
}

/// Only `null` deletes, as the format says: a write of the number the model stores deletes
/// as is a plain write, and a read of `null` then reads the initial state. (The shared reader
/// takes that number for a delete: reported, not followed.)
#[test]
fn only_null_is_a_delete() {
    let text = format!(
        "{{\"session\":\"a\",\"txn\":1,\"ops\":[[\"w\",\"x\",{ABSENT_VALUE}]]}}\n\
         {{\"session\":\"b\",\"txn\":2,\"ops\":[[\"r\",\"x\",null]]}}\n"
    );
    let h = krait_verify::jsonl::read(text.as_bytes(), Path::new("h.jsonl")).unwrap();
    assert_eq!(h.init_value, None);
    assert_eq!(h.op_kind, [OpKind::Write, OpKind::ReadInit]);
    assert_eq!(h.op_value[0], ABSENT_VALUE);
    let deleted = agree(
        b"{\"session\":\"a\",\"txn\":1,\"ops\":[[\"w\",\"x\",null]]}\n",
        "a delete",
    );
    assert_eq!(deleted.init_value, Some(ABSENT_VALUE));
}
