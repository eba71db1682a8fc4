//! The application's own values: a fourth element per op in JSON Lines, kept by every reader
//! of native logs (batch, cut last line, follower) and written back by `convert`, never used to
//! resolve a read.

use krait_history::{read_jsonl, write_jsonl, Follower, KeyId, Keys};
use std::path::{Path, PathBuf};

const LOG: &str = r#"{"session":"c1","txn":1,"ops":[["w","acct/1",11,"100"],["w","memo",12,"line1\nline2 \"quoted\""]]}
{"session":"c2","txn":2,"ops":[["r","acct/1",11,"100"],["r","memo",12],["w","acct/1",21,"150"]]}
"#;

fn read(text: &str) -> Result<krait_history::History, String> {
    read_jsonl(text.as_bytes(), Path::new("h.jsonl"))
        .map(|l| l.history)
        .map_err(|e| e.to_string())
}

#[test]
fn each_op_keeps_its_application_value_where_the_log_has_one() {
    let h = read(LOG).unwrap();
    let shown: Vec<Option<&str>> = (0..h.num_ops() as u32).map(|o| h.app_value(o)).collect();
    assert_eq!(
        shown,
        [
            Some("100"),
            Some("line1\nline2 \"quoted\""),
            Some("100"),
            None,
            Some("150")
        ]
    );
    // Reports quote it and escape control characters; without one, the number.
    assert_eq!(h.value_text(0), "\"100\"");
    assert_eq!(h.value_text(1), r#""line1\nline2 \"quoted\"""#);
    assert_eq!(h.value_text(3), "12");
    // The ids still decide which write each read saw.
    assert_eq!(h.op_value[2], 11);
}

#[test]
fn long_values_are_cut_in_reports_with_the_rest_counted() {
    let long = "x".repeat(100);
    let h = read(&format!(
        r#"{{"session":"a","txn":1,"ops":[["w","k",1,"{long}"]]}}"#
    ))
    .unwrap();
    assert_eq!(h.app_value(0), Some(long.as_str()));
    assert_eq!(
        h.value_text(0),
        format!("\"{}\"…(+60 chars)", "x".repeat(40))
    );
}

#[test]
fn convert_writes_them_back() {
    let h = read(LOG).unwrap();
    let mut out = Vec::new();
    write_jsonl(&h, &mut out).unwrap();
    let again = read(std::str::from_utf8(&out).unwrap()).unwrap();
    assert_eq!(again.app_values, h.app_values);
    assert_eq!(again.app_text, h.app_text);
}

#[test]
fn a_malformed_op_is_an_error_naming_its_line() {
    let e = read(r#"{"session":"a","txn":1,"ops":[["w","k",1,"v","extra"]]}"#).unwrap_err();
    assert!(e.contains("line 1") && e.contains("invalid length"), "{e}");
    let e = read(r#"{"session":"a","txn":1,"ops":[["w","k",1,7]]}"#).unwrap_err();
    assert!(
        e.contains("line 1") && e.contains("expected a string"),
        "{e}"
    );
    let e = read(r#"{"session":"a","txn":1,"ops":[["w","k"]]}"#).unwrap_err();
    assert!(
        e.contains("line 1") && e.contains("invalid length 2"),
        "{e}"
    );
}

#[test]
fn a_cut_last_line_keeps_the_values_of_its_complete_ops() {
    // The client died while logging the third op: the transaction never asked to commit.
    let cut = r#"{"session":"a","txn":1,"ops":[["w","k",1,"one ] [ two"],["w","j",2,"x"],["w","#;
    let l = read_jsonl(cut.as_bytes(), Path::new("h.jsonl")).unwrap();
    assert_eq!(l.warnings.len(), 1);
    let h = l.history;
    assert_eq!(h.num_ops(), 2);
    assert_eq!(h.app_value(0), Some("one ] [ two"));
    assert_eq!(h.app_value(1), Some("x"));
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("krait-app-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[derive(Default)]
struct Names(Vec<String>);

impl Keys for Names {
    fn key(&mut self, name: &str) -> KeyId {
        match self.0.iter().position(|n| n == name) {
            Some(k) => k as KeyId,
            None => {
                self.0.push(name.to_string());
                self.0.len() as KeyId - 1
            }
        }
    }
    fn fence_key(&mut self, _: KeyId) {}
}

#[test]
fn the_follower_keeps_them_too() {
    let d = tmpdir("follow");
    std::fs::write(d.join("c1.jsonl"), LOG).unwrap();
    let mut f = Follower::new(&d, None).unwrap();
    let p = f.poll(&mut Names::default()).unwrap();
    assert_eq!(p.txns.len(), 2);
    assert_eq!(
        p.txns[0].app,
        [
            (0, "100".to_string()),
            (1, "line1\nline2 \"quoted\"".to_string())
        ]
    );
    assert_eq!(
        p.txns[1].app,
        [(0, "100".to_string()), (2, "150".to_string())]
    );
    let _ = std::fs::remove_dir_all(&d);
}
