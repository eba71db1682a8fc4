//! The dbcop readers (JSON and bincode) on hand-made inputs: every construct with the exact
//! history it yields, every malformed case with its exact error and place.

use crate::common;

use common::{at, both, p, render, Bincode, Ev, DATA, DBCOP_JSON};
use krait_history::{read_dbcop_bincode, read_dbcop_json, InputError, Location, Warning};

// ---------------------------------------------------------------------------------------------
// dbcop JSON and bincode

fn json_ok(text: &str) -> String {
    let l = both(text.as_bytes(), |r| read_dbcop_json(r, &p("h.json")))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(l.warnings.is_empty());
    render(&l.history)
}

fn json_err(text: &str) -> InputError {
    match both(text.as_bytes(), |r| read_dbcop_json(r, &p("h.json"))) {
        Ok(l) => panic!("expected an error, got\n{}", render(&l.history)),
        Err(e) => e,
    }
}

#[test]
fn dbcop_json_maps_sessions_transactions_and_initial_reads() {
    // Sessions are numbered from 1 as dbcop does (the empty second one is left out);
    // transactions from 1 in file order. A read of version 0 reads the initial state unless
    // some write of the variable wrote 0 (dbcop's rule), as does a read of null.
    assert_eq!(
        json_ok(DBCOP_JSON),
        "\
1:
  T1 committed: w 0=1 r 1=init
  T2 aborted: r 1=init w 1=2
3:
  T3 committed: r 0=1 w 2=0 r 2=0 r 0=init r name=init
"
    );
    // The bare array of sessions, and OOPSLA'19-style events (a failed event is dropped).
    assert_eq!(
        json_ok(
            r#"[[{"events": [{"write": true, "variable": 3, "value": 4, "success": true},
                             {"write": false, "variable": 3, "value": 0, "success": false}],
                  "success": true}]]"#
        ),
        "1:\n  T1 committed: w 3=4\n"
    );
    assert_eq!(json_ok("[]"), "");
}

/// Each input fails on the line and with the message given.
fn json_errors_are(cases: Vec<(String, u64, &str)>) {
    for (text, line, msg) in cases {
        let e = json_err(&text);
        assert_eq!(at(&e), (Location::Line(line), msg), "input: {text:.80}");
    }
}

/// JSON syntax and the shape of the history around the transactions.
#[test]
fn dbcop_json_malformed_structure_names_line_and_problem() {
    json_errors_are(vec![
        (
            "[[{\"events\": [], \"committed\": true}]".into(),
            1,
            "expected ',' or ']', found the end of the input",
        ),
        ("[] x".into(), 1, "more text after the history"),
        (
            "{\"info\": \"x\",\n \"params\": {}}".into(),
            1,
            "the history object has no \"data\" field",
        ),
        ("[[],]".into(), 1, "a trailing ',' before ']'"),
        (
            "{\"data\": [], \"data\": []}".into(),
            1,
            "a second \"data\" field",
        ),
        (
            "\"sessions\"".into(),
            1,
            "expected a dbcop history (an array of sessions, or an object with \"data\"), found '\"'",
        ),
        (
            "[{}]".into(),
            1,
            "expected '[' to open a session (an array of transactions), found '{'",
        ),
        (
            "[[{\"events\": [], \"committed\": tru}]]".into(),
            1,
            "expected a JSON value, found 't'",
        ),
        (
            "{\"params\": \"abc\n\"}".into(),
            1,
            "a string opened on this line is never closed",
        ),
        (
            format!("{{\"params\": {}}}", "[".repeat(10_000)),
            1,
            "values nested more than 200 deep",
        ),
    ]);
}

/// Transactions and their events.
#[test]
fn dbcop_json_malformed_events_name_line_and_problem() {
    json_errors_are(vec![
        (
            "[[{\"events\": [[\"x\", 1, 2]], \"committed\": true}]]".into(),
            1,
            "unknown event kind \"x\"; expected \"r\" or \"w\"",
        ),
        (
            "[[{\"events\": [\n[\"w\", 1, \"a\"]], \"committed\": true}]]".into(),
            2,
            "a written version must be an integer from 0 to 18446744073709551615, not the string \"a\"",
        ),
        (
            "[[{\"events\": [[\"r\", 1, -1]], \"committed\": true}]]".into(),
            1,
            "a read version must be an integer from 0 to 18446744073709551615 (or null for the initial state), not -1",
        ),
        (
            "[[{\"events\": [{\"Write\": {\"variable\": 1, \"version\": 1.5}}], \"committed\": true}]]".into(),
            1,
            "a written version must be an integer from 0 to 18446744073709551615, not 1.5",
        ),
        (
            "[[{\"events\": [{\"Write\": {\"variable\": 1, \"version\": null}}], \"committed\": true}]]".into(),
            1,
            "a written version must be an integer from 0 to 18446744073709551615, not null",
        ),
        (
            "[[{\"events\": [[\"w\", true, 1]], \"committed\": true}]]".into(),
            1,
            "a variable must be a non-negative integer or a string, not true",
        ),
        (
            "[[{\"events\": [[\"w\", 1]], \"committed\": true}]]".into(),
            1,
            "an event is {\"Read\": {...}}, {\"Write\": {...}} or [\"r\" or \"w\", variable, version]; this one has 2 elements",
        ),
        (
            "[[{\"events\": [{\"Delete\": {}}], \"committed\": true}]]".into(),
            1,
            "unknown event \"Delete\"; an event is {\"Read\": {...}}, {\"Write\": {...}} or [\"r\" or \"w\", variable, version]",
        ),
        (
            "[[{\"events\": [{\"Read\": {\"variable\": 1}}], \"committed\": true}]]".into(),
            1,
            "a Read event needs \"variable\" and \"version\"",
        ),
        (
            "[\n  [\n    {\"events\": []}\n  ]\n]".into(),
            3,
            "a transaction without \"committed\": true or false",
        ),
        (
            "[[{\"committed\": true}]]".into(),
            1,
            "a transaction without \"events\"",
        ),
        (
            "[[{\"events\": [], \"committed\": 1}]]".into(),
            1,
            "\"committed\" must be true or false, not 1",
        ),
    ]);
    // A value written twice is no error: the read of it may have read either write. A write of
    // 0 makes the key's reads of 0 read it, not the initial state (dbcop's meaning).
    let text = "[[{\"events\": [[\"w\", 1, 1], [\"w\", 2, 0]], \"committed\": true}],\n [{\"events\": [[\"w\", 1, 1], [\"r\", 1, 1], [\"r\", 2, 0]], \"committed\": true}]]";
    let l = both(text.as_bytes(), |r| read_dbcop_json(r, &p("h.json"))).unwrap();
    assert!(l.history.has_duplicates());
    assert_eq!(krait_history::summarize(&l.history).repeated_writes, 1);
    assert_eq!(l.history.init_value, None);
    let r = krait_history::resolve(&l.history);
    assert_eq!(r.read_from[4], 1, "the read of 2 = 0 reads T1's write of 0");
    assert_eq!(
        render(&l.history),
        "1:\n  T1 committed: w 1=1 w 2=0\n2:\n  T2 committed: w 1=1 r 1=1 r 2=0\n"
    );
}

fn bincode_err(bytes: &[u8]) -> InputError {
    match both(bytes, |r| read_dbcop_bincode(r, &p("history.bincode"))) {
        Ok(l) => panic!("expected an error, got\n{}", render(&l.history)),
        Err(e) => e,
    }
}

#[test]
fn dbcop_bincode_maps_successful_events_and_transactions() {
    let b = Bincode::history(&[
        vec![
            (vec![(true, 1, 5, true), (false, 2, 0, true)], true),
            (vec![(true, 2, 7, true), (false, 1, 5, false)], false),
        ],
        vec![(
            vec![
                (false, 1, 5, true),
                (false, 2, 7, true),
                (true, 1, 0, false),
            ],
            true,
        )],
    ]);
    let l = both(&b.0, |r| read_dbcop_bincode(r, &p("history.bincode"))).unwrap();
    assert!(l.warnings.is_empty());
    assert_eq!(
        render(&l.history),
        "\
1:
  T1 committed: w 1=5 r 2=init
  T2 aborted: w 2=7
2:
  T3 committed: r 1=5 r 2=7
"
    );
    // Trailing bytes: bincode ignores them; so do we, saying so.
    let mut t = Bincode(b.0.clone());
    t.u64(0);
    let l = both(&t.0, |r| read_dbcop_bincode(r, &p("history.bincode"))).unwrap();
    assert_eq!(
        l.warnings,
        vec![Warning {
            path: p("history.bincode"),
            location: Location::Offset(b.0.len() as u64),
            message: "8 bytes after the history are ignored".into(),
        }]
    );
}

#[test]
fn dbcop_bincode_malformed_inputs_name_offset_and_problem() {
    let one = |events: Vec<Ev>| Bincode::history(&[vec![(events, true)]]).0;
    let good = one(vec![(true, 1, 5, true), (false, 1, 5, true)]);
    // First event at DATA + 8 (transaction count) + 8 (event count).
    let ev = DATA + 16;

    // A cut inside an event: the event count no longer fits in what is left.
    let cut = &good[..ev + 1 + 8 + 5];
    assert_eq!(
        at(&bincode_err(cut)),
        (
            Location::Offset((ev - 8) as u64),
            "the number of events of a transaction is 2, more than the 14 bytes left can hold (not a dbcop history.bincode?)"
        )
    );
    let mut bad = good.clone();
    bad[ev] = 7;
    assert_eq!(
        at(&bincode_err(&bad)),
        (
            Location::Offset(ev as u64),
            "an event's write flag must be a bool byte 0 or 1, not 7"
        )
    );
    let mut huge = good.clone();
    huge[DATA - 8..DATA].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let left = good.len() - DATA;
    assert_eq!(
        at(&bincode_err(&huge)),
        (
            Location::Offset((DATA - 8) as u64),
            format!("the number of sessions is 1099511627776, more than the {left} bytes left can hold (not a dbcop history.bincode?)").as_str()
        )
    );
    // A value written twice is no error (see the JSON reader's test).
    let dup = one(vec![(true, 1, 5, true), (true, 1, 5, true)]);
    let h = read_dbcop_bincode(&dup[..], &p("h.bincode"))
        .unwrap()
        .history;
    assert_eq!(h.writes_of(0, 5).count(), 2);
    let mut latin1 = good.clone();
    latin1[48] = 0xff;
    assert_eq!(
        at(&bincode_err(&latin1)),
        (
            Location::Offset(40),
            "the info text is not UTF-8 text (not a dbcop history.bincode?)"
        )
    );
    assert_eq!(
        at(&bincode_err(&good[..20])),
        (
            Location::Offset(16),
            "the file ends inside the header field n_variable (8 bytes needed, 4 left)"
        )
    );
    // A JSON history read as bincode fails on its made-up lengths, without allocating them.
    let e = bincode_err(DBCOP_JSON.as_bytes());
    assert_eq!(e.location, Location::Offset(40));
    assert!(
        e.message.starts_with("the length of the info text is "),
        "{}",
        e.message
    );
}
