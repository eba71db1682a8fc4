//! The scanner and the block reader against serde's reading, on random records: the fast path
//! must give the same record as serde wherever it takes a line, and a whole file read in blocks
//! (here, tiny ones: every file crosses many block and piece edges) must give the same history,
//! warnings and errors as the same file with every line left to serde, and a file mapped into
//! memory the same as the same bytes read through a reader. A history built by copying
//! operations on every core, or taking them in place where sessions come one after another,
//! must be the one adding them in turn builds.

use super::jsonl::read;
use super::jsonl_block::{Rec, ValRef};
use super::jsonl_serde::LineIn;
use crate::test_rng::Rng;
use std::path::Path;

/// A random record; `escaped` writes the session name's first letter as `\u0073`, which serde
/// reads as the same name and the scanner leaves alone.
fn record(r: &mut Rng, txn: u64, escaped: bool) -> String {
    let ws = |r: &mut Rng| if r.below(8) == 0 { " " } else { "" };
    let session = r.below(5);
    let s = if escaped { "\\u0073" } else { "s" };
    let mut line = format!("{{\"session\":{}\"{s}{session}\",", ws(r));
    line += &format!("\"txn\":{}{txn}", ws(r));
    match r.below(6) {
        0 => line += ",\"status\":\"aborted\"",
        1 => line += ",\"status\":\"unknown\"",
        2 => line += ",\"status\":\"ok\"",
        _ => {}
    }
    if r.below(2) == 0 {
        let start = r.below(1000);
        line += &format!(",\"start\":{start},\"commit\":{}", start + r.below(100));
    }
    line += ",\"ops\":[";
    let n = r.below(6);
    for i in 0..n {
        if i > 0 {
            line += ",";
        }
        let key = match r.below(4) {
            0 => format!("{}", r.below(30)),
            1 => format!("\"a-much-longer-key-name-{}\"", r.below(10)),
            _ => format!("\"k{}\"", r.below(30)),
        };
        let value = match r.below(5) {
            0 => "null".to_string(),
            _ => format!("{}", r.below(1_000_000)),
        };
        let kind = if value == "null" || r.below(2) == 0 {
            "r"
        } else {
            "w"
        };
        let app = if r.below(10) == 0 { ",\"v\"" } else { "" };
        line += &format!("[{}\"{kind}\",{key},{value}{app}]", ws(r));
    }
    line += "]}";
    line
}

/// What a parsed record says, written out to compare.
fn shown(rec: &Rec, scanned: &[super::jsonl_scan::OpRef]) -> String {
    let h = rec.head();
    let mut out = format!(
        "{} {} {:?} {:?} {:?} {} |",
        h.session, h.txn, h.status, h.start, h.commit, h.num_ops
    );
    rec.each_op(scanned, |i, kind, key, v, app| {
        let v = match v {
            ValRef::Null => "null".to_string(),
            ValRef::Num(n) => n.to_string(),
            ValRef::List(l) => format!("{l:?}"),
        };
        out += &format!(" {i}:{kind}:{key}:{v}:{app:?}");
        Ok::<(), ()>(())
    })
    .unwrap();
    out
}

#[test]
fn the_scanner_reads_what_serde_reads() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let mut taken = 0;
    for txn in 0..20_000 {
        let line = record(&mut r, txn, false);
        let mut scanned = Vec::new();
        let rec = Rec::parse(&line, &mut scanned).unwrap();
        if matches!(rec, Rec::Fast(_)) {
            taken += 1;
        }
        let by_serde = Rec::Slow(serde_json::from_str::<LineIn>(&line).unwrap());
        assert_eq!(shown(&rec, &scanned), shown(&by_serde, &[]), "{line}");
    }
    assert!(taken > 19_000, "the scanner took only {taken} lines");
}

/// Reads `text` as a file, writing the outcome out to compare.
fn outcome(text: &str) -> String {
    shown_outcome(read(text.as_bytes(), Path::new("h.jsonl")))
}

fn shown_outcome(r: Result<super::Loaded, crate::InputError>) -> String {
    match r {
        Ok(l) => format!("{:?}\n{:?}", l.history, l.warnings),
        Err(e) => format!("error: {e}"),
    }
}

/// Reads `bytes` from a file (mapped into memory, unless empty) and through a reader named as
/// the file: the outcomes must be the same.
fn mapped_reads_as_read(dir: &Path, bytes: &[u8], what: &str) -> String {
    let f = dir.join("h.jsonl");
    std::fs::write(&f, bytes).unwrap();
    let mapped = shown_outcome(super::jsonl::read_file(&f));
    assert_eq!(mapped, shown_outcome(read(bytes, &f)), "{what}");
    mapped
}

#[test]
fn blocks_read_what_lines_read() {
    let dir = std::env::temp_dir().join(format!("krait-jsonl-blocks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut r = Rng(12345);
    let (mut errors, mut warned, mut loaded) = (0, 0, 0);
    for round in 0..200 {
        let n = 1 + r.below(120);
        let bad = r.below(4) == 0;
        let bad_at = r.below(n);
        let (mut fast, mut slow) = (String::new(), String::new());
        for i in 0..n {
            let seed = r.next();
            let txn = if r.below(200) == 0 { 0 } else { i };
            let line = |escaped| record(&mut Rng(seed | 1), txn, escaped);
            let (a, b) = match (bad && i == bad_at, r.below(12)) {
                (true, 0) => (
                    "{\"session\":\"s1\",\"txn\":1,\"status\":\"maybe\",\"ops\":[]}".into(),
                    "{\"session\":\"\\u00731\",\"txn\":1,\"status\":\"maybe\",\"ops\":[]}".into(),
                ),
                (true, _) => ("{\"session\":".to_string(), "{\"session\":".to_string()),
                (false, 0) => ("# a comment".into(), "# a comment".into()),
                (false, 1) => (String::new(), String::new()),
                _ => (line(false), line(true)),
            };
            let nl = if i + 1 == n && r.below(2) == 0 {
                ""
            } else {
                "\n"
            };
            fast += &(a + nl);
            slow += &(b + nl);
        }
        // A last line cut by a crash, sometimes.
        if r.below(3) == 0 {
            let cut = record(&mut Rng(round | 1), 1_000_000 + round, false);
            let cut = &cut[..cut.len() / 2];
            if fast.ends_with('\n') {
                fast += cut;
                slow += cut;
            }
        }
        let got = outcome(&fast);
        assert_eq!(got, outcome(&slow), "round {round}:\n{fast}");
        mapped_reads_as_read(&dir, fast.as_bytes(), &format!("round {round}:\n{fast}"));
        if got.starts_with("error") {
            errors += 1;
        } else if got.ends_with("[]") {
            loaded += 1;
        } else {
            warned += 1;
        }
    }
    // Every kind of outcome was compared.
    assert!(
        errors > 10 && warned > 10 && loaded > 10,
        "{errors} {warned} {loaded}"
    );
    // Lines longer than a block (tests use 1 KiB blocks), an empty file, a file of one cut
    // line, a file not UTF-8 after a long line.
    let long = |txn: u64| {
        let ops: Vec<String> = (0..200).map(|i| format!("[\"r\",\"k{i}\",{i}]")).collect();
        format!(
            "{{\"session\":\"s{}\",\"txn\":{txn},\"ops\":[{}]}}",
            txn % 3,
            ops.join(",")
        )
    };
    let mut text = String::new();
    for txn in 0..20 {
        text += &long(txn);
        text += "\n";
        text += &record(&mut r, 100 + txn, false);
        text += "\n";
    }
    let got = mapped_reads_as_read(&dir, text.as_bytes(), "long lines");
    assert!(got.contains("k199"), "{got}");
    let got = mapped_reads_as_read(&dir, text.trim_end().as_bytes(), "no last newline");
    assert!(!got.starts_with("error"), "{got}");
    mapped_reads_as_read(&dir, b"", "empty");
    let cut = long(7);
    let got = mapped_reads_as_read(&dir, &cut.as_bytes()[..cut.len() / 2], "one cut line");
    assert!(got.contains("cut short"), "{got}");
    let mut bytes = text.clone().into_bytes();
    bytes.extend_from_slice(b"{\"session\":\"\xff\"}\n");
    let got = mapped_reads_as_read(&dir, &bytes, "not UTF-8");
    assert!(got.contains("line 41") && got.contains("UTF-8"), "{got}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn errors_name_the_line_across_blocks() {
    let mut text = String::new();
    let mut r = Rng(7);
    for i in 0..500 {
        text += &record(&mut r, i, false);
        text += "\n";
    }
    text += "{\"session\":\"s1\",\"txn\":9999,\"ops\":[[\"x\",\"k\",1]]}\n";
    let e = outcome(&text);
    assert!(e.contains("line 501") && e.contains("bad op kind"), "{e}");
    let mut text = "{\"session\":\"s1\",\"txn\":1,\"ops\":[]}\n".repeat(300);
    text += "not json\n";
    let e = outcome(&text);
    assert!(
        e.contains("line 301") && e.contains("not a transaction record"),
        "{e}"
    );
    let mut bytes = "{\"session\":\"s1\",\"txn\":1,\"ops\":[]}\n"
        .repeat(100)
        .into_bytes();
    bytes.extend_from_slice(b"{\"session\":\"\xff\"}\n");
    let e = match read(&bytes[..], Path::new("h.jsonl")) {
        Ok(_) => "loaded".to_string(),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("line 101") && e.contains("UTF-8"), "{e}");
    // The first bad line is the one named, whether it is not JSON or not UTF-8.
    let good = "{\"session\":\"s1\",\"txn\":1,\"ops\":[]}\n".repeat(50);
    let bad_text = &b"{\"session\":\"a\xffb\",\"txn\":2,\"ops\":[]}\n"[..];
    for (middle, after, want) in [
        (&b"not json\n"[..], bad_text, "not a transaction record"),
        (bad_text, &b"not json\n"[..], "UTF-8"),
    ] {
        let mut bytes = good.clone().into_bytes();
        bytes.extend_from_slice(middle);
        bytes.extend_from_slice(good.as_bytes());
        bytes.extend_from_slice(after);
        let e = match read(&bytes[..], Path::new("h.jsonl")) {
            Ok(_) => "loaded".to_string(),
            Err(e) => e.to_string(),
        };
        assert!(e.contains("line 51") && e.contains(want), "{e}");
    }
}

#[test]
fn copying_on_every_core_builds_what_adding_in_turn_builds() {
    use super::jsonl_build::{TEST_IN_PLACE, TEST_PARALLEL_FROM};
    let mut r = Rng(777);
    let (mut errors, mut deletes, mut in_place) = (0, 0, 0);
    for round in 0..200 {
        let mut text = String::new();
        for i in 0..1 + r.below(80) {
            // Now and then a transaction id used twice; no application values (those are
            // always added in turn).
            let txn = if r.below(60) == 0 { 0 } else { i };
            let mut line = record(&mut r, txn, false).replace(",\"v\"]", "]");
            // Now and then a delete, which makes every key start absent.
            if r.below(40) == 0 {
                let del = "[\"w\",\"k1\",null]";
                line = match line.contains("\"ops\":[]") {
                    true => line.replace("\"ops\":[]", &format!("\"ops\":[{del}]")),
                    false => line.replacen("\"ops\":[", &format!("\"ops\":[{del},"), 1),
                };
            }
            text += &line;
            text.push('\n');
        }
        // Every other round, each session's records one after another (taken in place).
        if round % 2 == 1 {
            let mut lines: Vec<&str> = text.lines().collect();
            lines.sort_by_key(|l| l.split('"').nth(3).unwrap_or("").to_string());
            text = lines.join("\n") + "\n";
        }
        let outcomes: Vec<String> = [usize::MAX, 0]
            .iter()
            .map(|&from| {
                TEST_PARALLEL_FROM.with(|c| c.set(from));
                outcome(&text)
            })
            .collect();
        TEST_PARALLEL_FROM.with(|c| c.set(usize::MAX));
        assert_eq!(outcomes[0], outcomes[1], "round {round}:\n{text}");
        in_place += TEST_IN_PLACE.with(|c| c.replace(0));
        errors += outcomes[0].starts_with("error") as usize;
        deletes += text.contains("[\"w\",\"k1\",null]") as usize;
    }
    assert!(
        errors > 10 && deletes > 10 && in_place > 50,
        "{errors} errors, {deletes} with deletes, {in_place} taken in place"
    );
}
