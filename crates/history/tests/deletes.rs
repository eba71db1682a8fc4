//! Deletes in native JSON Lines: a write of `null`; a history with deletes starts every key
//! absent.

use krait_history::{read_jsonl, OpKind};
use std::path::Path;

/// A write of `null` deletes: the history then starts every key absent, reads of no row read
/// that value (from the initial state or any delete), and converting writes `null` back.
#[test]
fn a_null_write_is_a_delete_and_reads_of_no_row_may_read_it() {
    let text = concat!(
        r#"{"session":"a","txn":1,"ops":[["w","x",1],["r","y",null]]}"#,
        "\n",
        r#"{"session":"a","txn":2,"ops":[["w","x",null,"(deleted)"]]}"#,
        "\n",
        r#"{"session":"b","txn":3,"ops":[["r","x",null]]}"#,
        "\n",
    );
    let h = read_jsonl(text.as_bytes(), Path::new("h.jsonl"))
        .unwrap()
        .history;
    assert_eq!(h.init_value, Some(krait_history::ABSENT_VALUE));
    let kinds: Vec<_> = (0..h.num_ops())
        .map(|o| (h.op_kind[o], h.op_value[o]))
        .collect();
    let a = krait_history::ABSENT_VALUE;
    assert_eq!(
        kinds,
        [
            (OpKind::Write, 1),
            (OpKind::Read, a),
            (OpKind::Write, a),
            (OpKind::Read, a)
        ]
    );
    let mut out = Vec::new();
    krait_history::write_jsonl(&h, &mut out).unwrap();
    let out = String::from_utf8(out).unwrap();
    assert!(
        out.contains(r#"["r","y",null]"#) && out.contains(r#"["w","x",null,"(deleted)"]"#),
        "{out}"
    );
    let again = read_jsonl(out.as_bytes(), Path::new("h.jsonl"))
        .unwrap()
        .history;
    assert_eq!(again.op_value, h.op_value);
    // Without deletes nothing changes: reads of null are reads of the initial state.
    let plain = read_jsonl(
        r#"{"session":"a","txn":1,"ops":[["r","y",null]]}"#.as_bytes(),
        Path::new("h.jsonl"),
    )
    .unwrap()
    .history;
    assert_eq!(
        (plain.init_value, plain.op_kind[0]),
        (None, OpKind::ReadInit)
    );
}
