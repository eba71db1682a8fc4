//! Statements whose writes were logged but did not happen — an UPDATE or DELETE by key that
//! matched no row (its reply arriving before or after what the client pipelined behind it),
//! statements rolled back to a savepoint: messages fed to `Conn` by hand, the log read back.

use super::Conn;
use crate::proxy::sql::TableSpec;
use crate::proxy::wire::Msg;
use std::sync::Arc;

fn msg(tag: u8, text: &str) -> Msg {
    let mut body = text.as_bytes().to_vec();
    body.push(0);
    Msg { tag, body }
}

fn ready(status: u8) -> Msg {
    Msg {
        tag: b'Z',
        body: vec![status],
    }
}

/// Feeds `events` in order: `>SQL` a client's simple query, `<TAG` the server's
/// CommandComplete, `Z` + status its ReadyForQuery, `!` an ErrorResponse; returns the log's
/// records and the notes.
fn run(events: &[&str]) -> (Vec<serde_json::Value>, String) {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("krait-no-row-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let rec = crate::Recorder::create(&dir).unwrap();
    let tables = Arc::new(vec![TableSpec {
        name: "kv".into(),
        pk: "k".into(),
        cols: vec!["k".into(), "v".into()],
    }]);
    let notes = Arc::new(super::super::notes::Notes::create(&dir).unwrap());
    let mut c = Conn::new(rec.session("c").unwrap(), tables, notes);
    for e in events {
        if let Some(sql) = e.strip_prefix('>') {
            c.on_client(&mut msg(b'Q', sql)).unwrap();
        } else if let Some(tag) = e.strip_prefix('<') {
            c.on_server(&mut msg(b'C', tag)).unwrap();
        } else if *e == "!" {
            let body = b"SERROR\0C23505\0Mduplicate key value\0\0".to_vec();
            c.on_server(&mut Msg { tag: b'E', body }).unwrap();
        } else {
            c.on_server(&mut ready(e.as_bytes()[1])).unwrap();
        }
    }
    drop(c);
    drop(rec);
    let mut lines = Vec::new();
    let mut notes = String::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
        if p.file_name().unwrap() == krait_history::UNRECORDED_FILE {
            notes = text;
        } else {
            lines.extend(text.lines().map(|l| serde_json::from_str(l).unwrap()));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    (lines, notes)
}

fn keys_written(t: &serde_json::Value) -> Vec<String> {
    t["ops"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o[0] == "w")
        .map(|o| o[1].as_str().unwrap().to_string())
        .collect()
}

const BEGIN: [&str; 3] = [">BEGIN", "<BEGIN", "ZT"];

#[test]
fn a_no_row_update_is_cut_out_of_the_record_even_with_writes_pipelined_after_it() {
    let (lines, notes) = run(&[
        &BEGIN[..],
        &[
            ">UPDATE kv SET v = 'x' WHERE k = 9",
            ">UPDATE kv SET v = 'y' WHERE k = 1",
        ],
        &[
            "<UPDATE 0",
            "ZT",
            "<UPDATE 1",
            "ZT",
            ">COMMIT",
            "<COMMIT",
            "ZI",
        ],
    ]
    .concat());
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["status"], "committed");
    assert_eq!(keys_written(&lines[0]), ["kv/1/v"]);
    assert!(notes.is_empty(), "{notes}");
}

#[test]
fn a_no_row_update_whose_commit_went_out_before_its_reply_is_kept_and_named() {
    let (lines, notes) = run(&[
        &BEGIN[..],
        &[
            ">UPDATE kv SET v = 'x' WHERE k = 9",
            ">UPDATE kv SET v = 'y' WHERE k = 1",
            ">COMMIT",
        ],
        &["<UPDATE 0", "ZT", "<UPDATE 1", "ZT", "<COMMIT", "ZI"],
    ]
    .concat());
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["status"], "committed");
    assert_eq!(keys_written(&lines[0]), ["kv/9/v", "kv/1/v"]);
    assert!(
        notes.contains("did not happen") && notes.contains("\"may_write\":true"),
        "{notes}"
    );
}

#[test]
fn a_transaction_whose_only_writes_matched_no_row_is_recorded_as_doing_nothing() {
    let (lines, notes) = run(&[
        &BEGIN[..],
        &[
            ">UPDATE kv SET v = 'x' WHERE k = 9",
            ">COMMIT",
            "<UPDATE 0",
            "ZT",
            "<COMMIT",
            "ZI",
        ],
    ]
    .concat());
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["status"], "aborted");
    assert!(notes.is_empty(), "{notes}");
    // Autocommit: the writes reach the log before the statement goes out.
    let (lines, notes) = run(&[">DELETE FROM kv WHERE k = 9", "<DELETE 0", "ZI"]);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["status"], "aborted");
    assert!(notes.is_empty(), "{notes}");
    // One that matched commits as logged.
    let (lines, _) = run(&[">DELETE FROM kv WHERE k = 1", "<DELETE 1", "ZI"]);
    assert_eq!(lines[0]["status"], "committed");
    assert_eq!(keys_written(&lines[0]), ["kv/1/v"]);
}

#[test]
fn what_a_transaction_did_after_a_savepoint_it_rolled_back_to_is_taken_back() {
    let (lines, notes) = run(&[
        &BEGIN[..],
        &[">UPDATE kv SET v = 'a' WHERE k = 1", "<UPDATE 1", "ZT"],
        &[">SAVEPOINT s", "<SAVEPOINT", "ZT"],
        &[">UPDATE kv SET v = 'b' WHERE k = 2", "<UPDATE 1", "ZT"],
        &[">SAVEPOINT t", "<SAVEPOINT", "ZT"],
        &[">UPDATE kv SET v = 'c' WHERE k = 3", "<UPDATE 1", "ZT"],
        &[">RELEASE SAVEPOINT t", "<RELEASE", "ZT"],
        &[">ROLLBACK TO SAVEPOINT s", "<ROLLBACK", "ZT"],
        &[">UPDATE kv SET v = 'd' WHERE k = 4", "<UPDATE 1", "ZT"],
        &[">COMMIT", "<COMMIT", "ZI"],
    ]
    .concat());
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["status"], "committed");
    assert_eq!(keys_written(&lines[0]), ["kv/1/v", "kv/4/v"]);
    assert!(notes.is_empty(), "{notes}");
}

/// The get-or-create pattern (an INSERT in a savepoint, its error rolled back to it, then
/// on): the transaction commits, and is recorded so, without the INSERT.
#[test]
fn an_error_rolled_back_to_a_savepoint_does_not_abort_the_transaction() {
    let (lines, notes) = run(&[
        &BEGIN[..],
        &[">SAVEPOINT s", "<SAVEPOINT", "ZT"],
        &[">INSERT INTO kv (k, v) VALUES (1, 'dup')", "!", "ZE"],
        &[">ROLLBACK TO SAVEPOINT s", "<ROLLBACK", "ZT"],
        &[">UPDATE kv SET v = 'e' WHERE k = 1", "<UPDATE 1", "ZT"],
        &[">COMMIT", "<COMMIT", "ZI"],
    ]
    .concat());
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["status"], "committed");
    assert_eq!(keys_written(&lines[0]), ["kv/1/v"]);
    assert_eq!(lines[0]["ops"][0][0], "w", "{lines:?}");
    assert!(notes.is_empty(), "{notes}");
    // Without the rollback to the savepoint, COMMIT of a failed transaction rolls back.
    let (lines, _) = run(&[
        &BEGIN[..],
        &[">INSERT INTO kv (k, v) VALUES (1, 'dup')", "!", "ZE"],
        &[">COMMIT", "<ROLLBACK", "ZI"],
    ]
    .concat());
    assert_eq!(lines[0]["status"], "aborted");
}

/// A declared key that is not unique: an UPDATE by it that matched several rows is named.
#[test]
fn an_update_by_a_declared_key_that_matched_several_rows_is_named() {
    let (lines, notes) = run(&[">UPDATE kv SET v = 'x' WHERE k = 1", "<UPDATE 3", "ZI"]);
    assert_eq!(lines[0]["status"], "committed");
    assert!(notes.contains("matched 3 rows"), "{notes}");
}
