//! Readers of other checkers' formats (Elle EDN, PolySI text, dbcop JSON and bincode) on
//! hand-made inputs: every construct with the exact history it yields, every malformed case with
//! its exact error and place, and no panic on mangled input.

use krait_history::{
    dbcop, edn, polysi, Format, History, InputError, Location, OpKind, Warning, NO_TIME,
};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The history as text: sessions, transactions (id, status, times, ops), then list reads.
fn render(h: &History) -> String {
    let mut out = String::new();
    for s in 0..h.num_sessions() {
        let _ = writeln!(out, "{}:", h.session_names[s]);
        for t in h.session_range(s) {
            let ti = t as usize;
            let _ = write!(out, "  T{} {}", h.txn_ext[ti], h.txn_status[ti].as_str());
            if h.txn_start[ti] != NO_TIME || h.txn_commit[ti] != NO_TIME {
                let show = |x: u64| {
                    if x == NO_TIME {
                        "?".to_string()
                    } else {
                        x.to_string()
                    }
                };
                let _ = write!(
                    out,
                    " @{}-{}",
                    show(h.txn_start[ti]),
                    show(h.txn_commit[ti])
                );
            }
            let _ = write!(out, ":");
            for o in h.ops(t) {
                let k = &h.keys[h.op_key[o] as usize];
                let _ = match h.op_kind[o] {
                    OpKind::Write => write!(out, " w {k}={}", h.op_value[o]),
                    OpKind::Read => write!(out, " r {k}={}", h.op_value[o]),
                    OpKind::ReadInit => write!(out, " r {k}=init"),
                };
            }
            out.push('\n');
        }
    }
    for &(op, _, _) in &h.list_reads {
        let _ = writeln!(out, "list op{op}: {:?}", h.list_of(op).unwrap());
    }
    out
}

fn p(name: &str) -> PathBuf {
    PathBuf::from(name)
}

fn edn_ok(text: &str) -> (String, Vec<Warning>) {
    let l = edn::read(text.as_bytes(), &p("h.edn")).unwrap_or_else(|e| panic!("{e}"));
    (render(&l.history), l.warnings)
}

fn edn_err(text: &str) -> InputError {
    match edn::read(text.as_bytes(), &p("h.edn")) {
        Ok(l) => panic!("expected an error, got\n{}", render(&l.history)),
        Err(e) => e,
    }
}

fn at(e: &InputError) -> (Location, &str) {
    (e.location, e.message.as_str())
}

// ---------------------------------------------------------------------------------------------
// Elle EDN

#[test]
fn edn_rw_register_pairs_invocations_with_completions() {
    let text = "\
{:type :invoke, :f :txn, :value [[:r 1 nil] [:w 2 3]], :process 0, :time 100, :index 0}
{:type :invoke, :f :txn, :value [[:w 1 7] [:r 2 nil]], :process 1, :time 110, :index 1}
{:type :ok, :f :txn, :value [[:r 1 nil] [:w 2 3]], :process 0, :time 150, :index 2}
{:type :info, :f :start-partition, :value nil, :process :nemesis, :time 160, :index 3}
{:type :fail, :f :txn, :value [[:w 1 7] [:r 2 nil]], :process 1, :time 170, :index 4, :error [:abort \"conflict\"]}
{:type :invoke, :f :txn, :value [[:r 2 nil] [:w 1 8]], :process 0, :time 200, :index 5}
{:type :invoke, :f :txn, :value [[:w :x 9] [:r :x nil]], :process 1, :time 210, :index 6}
{:type :ok, :f :txn, :value [[:r 2 3] [:w 1 8]], :process 0, :time 250, :index 7}
{:type :info, :f :txn, :value [[:w :x 9] [:r :x nil]], :process 1, :time 260, :index 8, :error :timeout}
{:type :invoke, :f :read, :value nil, :process 2, :time 270, :index 9}
{:type :ok, :f :read, :value 5, :process 2, :time 280, :index 10}
{:type :invoke, :f :txn, :value [[:r 1 nil] [:w 3 1]], :process 3, :time 300, :index 11}
";
    let (h, w) = edn_ok(text);
    assert_eq!(
        h,
        "\
0:
  T0 committed @100-150: r 1=init w 2=3
  T5 committed @200-250: r 2=3 w 1=8
1:
  T1 aborted @110-170: w 1=7
  T6 unknown @210-?: w x=9
3:
  T11 unknown @300-?: w 3=1
"
    );
    assert_eq!(
        w,
        vec![
            Warning {
                path: p("h.edn"),
                location: Location::Line(12),
                message: "the invocation of process 3 never completed: read as a transaction with outcome unknown".into(),
            },
            Warning {
                path: p("h.edn"),
                location: Location::Nowhere,
                message: "skipped 2 client operations whose :f is not :txn".into(),
            },
        ]
    );
}

#[test]
fn edn_list_append_reads_give_the_last_element_and_the_list() {
    // One vector of ops, no :process (one nameless process), a tagged record, a discarded
    // form, comments, sets, strings with escapes, symbols, floats and characters in fields the
    // reader ignores, lists as transactions.
    let text = r#"; an Elle list-append history, as one vector
[{:index 0 :type :invoke :value [[:append :x 1] [:append "y" 2]]}
 {:index 1 :type :ok :value [[:append :x 1] [:append "y" 2]]}
 #_{:index 99 :type :invoke}
 #jepsen.history.Op{:index 2, :type :invoke, :value [[:r :x nil] [:append :x 3] [:r "y" nil]],
                    :note #{1 2}, :msg "a \"quoted\"\n text \u00e9"}
 {:index 3 :type :ok :value [[:r :x [1]] [:append :x 3] [:r "y" [2]]]} ; trailing comment
 {:index 4, :type :invoke, :value [[:r :x nil] [:r :z nil]]}
 {:index 5, :type :ok, :value [[:r :x [1 3]] [:r :z []]],
  :error {:via [{:type java.io.IOException}] :at 1.5 :ch \a :big 12N :nl \newline}}
 {:index 6 :type :invoke :value ([:append 10 4] [:r 10 nil])}
 {:index 7 :type :ok :value ([:append 10 4] [:r 10 (4)])}]
"#;
    let (h, w) = edn_ok(text);
    assert_eq!(
        h,
        "\
nil:
  T0 committed: w x=1 w y=2
  T2 committed: r x=1 w x=3 r y=2
  T4 committed: r x=3 r z=init
  T6 committed: w 10=4 r 10=4
list op2: [1]
list op4: [2]
list op5: [1, 3]
list op6: []
list op8: [4]
"
    );
    assert!(w.is_empty(), "{w:?}");
}

#[test]
fn edn_long_list_reads_keep_the_whole_list() {
    let text = "\
{:type :invoke, :process 0, :value [[:append 5 1] [:append 5 2] [:append 5 3]]}
{:type :ok, :process 0, :value [[:append 5 1] [:append 5 2] [:append 5 3]]}
{:type :invoke, :process 0, :value [[:r 5 nil]]}
{:type :ok, :process 0, :value [[:r 5 [1 2 3]]]}
";
    let l = edn::read(text.as_bytes(), &p("h.edn")).unwrap();
    assert_eq!(l.history.list_reads, vec![(3, 0, 3)]);
    assert_eq!(l.history.list_of(3), Some(&[1, 2, 3][..]));
    assert_eq!(
        render(&l.history),
        "\
0:
  T0 committed: w 5=1 w 5=2 w 5=3
  T2 committed: r 5=3
list op3: [1, 2, 3]
"
    );
}

#[test]
fn edn_without_index_numbers_transactions_by_position() {
    // Sessions appear in the order their first transaction completes.
    let text = "\
{:type :invoke, :process 0, :value [[:w 1 1]]}
{:type :invoke, :process 1, :value [[:r 1 nil]]}
{:type :ok, :process 1, :value [[:r 1 1]]}
{:type :ok, :process 0, :value [[:w 1 1]]}
";
    let (h, _) = edn_ok(text);
    assert_eq!(
        h,
        "\
1:
  T1 committed: r 1=1
0:
  T0 committed: w 1=1
"
    );
    assert_eq!(edn_ok("").0, "");
    assert_eq!(edn_ok("  ; nothing\n[]\n").0, "");
}

#[test]
fn edn_malformed_inputs_name_line_and_problem() {
    let inv = "{:type :invoke, :process 0, :value [[:w 1 1]]}\n";
    let cases: Vec<(String, u64, &str)> = vec![
        (
            "{:type :invoke, :process 0, :value [[:w 1 1]]".into(),
            1,
            "unbalanced: the map opened on this line is never closed (the input ends first)",
        ),
        (
            "\n{:type :ok, :value [[:w 1 1]}".into(),
            2,
            "unbalanced: '}' where the vector opened on line 2 needs ']'",
        ),
        (
            format!("{inv}]"),
            2,
            "unbalanced ']': nothing is open here",
        ),
        (
            "[{:type :invoke :process 0 :value []}\n".into(),
            1,
            "unbalanced: the vector opened on this line is never closed (the input ends first)",
        ),
        (
            "[{:type :invoke :process 0 :value []})".into(),
            1,
            "unbalanced: ')' where the vector opened on line 1 needs ']'",
        ),
        (
            "{:type \"abc}\n".into(),
            1,
            "unbalanced: the string opened on this line is never closed (the input ends first)",
        ),
        (
            "{:type :invoke, :process 0, :value [[:x 1 1]]}\n{:type :ok, :process 0, :value [[:x 1 1]]}".into(),
            2,
            "unknown micro-operation :x; expected :r, :w or :append",
        ),
        (
            "{:type :ok, :process 4, :value []}".into(),
            1,
            "a :ok completion of process 4 that has no invocation before it",
        ),
        (
            format!("{inv}{inv}"),
            2,
            "process 0 invokes again before its invocation on line 1 completed",
        ),
        (
            format!("{inv}{{:type :ok, :process 0, :value [[:w 1 \"a\"]]}}"),
            2,
            "a written value must be an integer from 0 to 18446744073709551615, not the string \"a\"",
        ),
        (
            format!("{inv}{{:type :ok, :process 0, :value [[:append 1 -2]]}}"),
            2,
            "a written value must be an integer from 0 to 18446744073709551615, not -2",
        ),
        (
            format!("{inv}{{:type :ok, :process 0, :value [[:r 1 1.5]]}}"),
            2,
            "a read value must be an integer from 0 to 18446744073709551615, not the number 1.5",
        ),
        (
            format!("{inv}{{:type :ok, :process 0, :value [[:r 1 18446744073709551616]]}}"),
            2,
            "a read value must be an integer from 0 to 18446744073709551615, not 18446744073709551616",
        ),
        (
            format!("{inv}{{:type :ok, :process 0, :value [[:r :x [1 :a]]]}}"),
            2,
            "an element of a read list must be an integer from 0 to 18446744073709551615, not :a",
        ),
        (
            format!("{inv}{{:type :ok, :process 0, :value [[:r 1 {{:a 1}}]]}}"),
            2,
            "a read's value must be nil, an integer or a list of integers, not a map",
        ),
        (
            format!("{inv}{{:type :ok, :process 0, :value [[:r [1] 2]]}}"),
            2,
            "a key must be an integer, keyword or string, not a vector",
        ),
        (
            format!("{inv}{{:type :ok, :process 0, :value [[:r 1]]}}"),
            2,
            "a micro-operation is [f key value]; this one has 2 elements",
        ),
        (
            format!("{inv}{{:type :ok, :process 0, :value [:r 1 2]}}"),
            2,
            "a micro-operation must be a vector [f key value], not :r",
        ),
        (
            format!("{inv}{{:type :ok, :process 0, :value [[\"r\" 1 2]]}}"),
            2,
            "a micro-operation's f must be :r, :w or :append, not the string \"r\"",
        ),
        (
            format!("{inv}{{:type :ok, :process 0, :value 5}}"),
            2,
            ":value must be a vector of micro-operations, not 5",
        ),
        (
            format!("{inv}{{:type :ok, :process 0}}"),
            2,
            "a :ok completion without a :value",
        ),
        (
            "{:type :done, :process 0}".into(),
            1,
            "unknown :type :done; expected :invoke, :ok, :fail or :info",
        ),
        (
            "{:process 0, :value []}".into(),
            1,
            "an operation without :type",
        ),
        (
            "{:type \"ok\", :process 0, :value []}".into(),
            1,
            ":type must be :invoke, :ok, :fail or :info, not the string \"ok\"",
        ),
        (
            "{:type :invoke :process}".into(),
            1,
            "the map opened on this line holds 3 forms; a map needs key-value pairs",
        ),
        (
            "{:type :invoke, :process 0, :time -5, :value []}".into(),
            1,
            ":time must be an integer from 0 to 18446744073709551614, not -5",
        ),
        (
            "{:type :invoke, :process 0, :index :a, :value []}".into(),
            1,
            ":index must be an integer from 0 to 18446744073709551615, not :a",
        ),
        (
            "{:type :invoke, :process 0, :time 10, :value []}\n{:type :ok, :process 0, :time 5, :value []}".into(),
            2,
            "the completion's :time 5 is before its invocation's :time 10 (line 1)",
        ),
        (
            "[{:type :invoke, :process 0, :value []}]\n{:type :ok}".into(),
            2,
            "more text after the vector of operations that closed on line 1",
        ),
        (
            "42".into(),
            1,
            "expected an operation map {:type ..., :process ..., :value ...}, found 42",
        ),
        (
            "[:w 1 2]".into(),
            1,
            "expected an operation map {:type ..., :process ..., :value ...}, found :w",
        ),
        (
            "{:type :invoke #_}".into(),
            1,
            "#_ is not followed by a form to discard",
        ),
        (
            "{:type :invoke :x #foo}".into(),
            1,
            "the tag #foo has no form after it",
        ),
        (
            "{:type :invoke :x #=}".into(),
            1,
            "'#' must start a set #{...}, a tag #name or a discard #_",
        ),
        (
            "{:type :invoke :x \"\\q\"}".into(),
            1,
            "unknown escape \\q in a string",
        ),
        (
            "{:type :invoke :x \\bogus}".into(),
            1,
            "unknown character \\bogus",
        ),
        (
            "{: 1}".into(),
            1,
            "\":\" is not a keyword: it has no name",
        ),
        (
            "[".repeat(100_000),
            1,
            "forms nested more than 200 deep",
        ),
    ];
    for (text, line, msg) in cases {
        let e = edn_err(&text);
        assert_eq!(at(&e), (Location::Line(line), msg), "input: {text:.80}");
    }
}

#[test]
fn edn_duplicate_writes_and_ids_are_input_errors() {
    let e = edn_err(
        "\
{:type :invoke, :process 0, :value [[:w 1 5]]}
{:type :ok, :process 0, :value [[:w 1 5]]}
{:type :invoke, :process 0, :value [[:w 1 5]]}
{:type :ok, :process 0, :value [[:w 1 5]]}
",
    );
    assert_eq!(
        at(&e),
        (
            Location::Line(4),
            "key \"1\" is written with value 5 more than once (written values must be unique per key; the other write is at line 2)"
        )
    );
    assert_eq!(
        e.to_string(),
        "h.edn: line 4: key \"1\" is written with value 5 more than once (written values must be unique per key; the other write is at line 2)"
    );
    let e = edn_err(
        "\
{:type :invoke, :process 0, :index 3, :value [[:w 1 5]]}
{:type :ok, :process 0, :value [[:w 1 5]]}
{:type :invoke, :process 0, :index 3, :value [[:w 1 6]]}
{:type :ok, :process 0, :value [[:w 1 6]]}
",
    );
    assert_eq!(
        at(&e),
        (
            Location::Line(3),
            "transaction id 3 is used twice (first at line 1)"
        )
    );
}

// ---------------------------------------------------------------------------------------------
// PolySI / IsoVista text

fn polysi_ok(text: &str) -> String {
    let l = polysi::read(text.as_bytes(), &p("h.txt")).unwrap_or_else(|e| panic!("{e}"));
    assert!(l.warnings.is_empty());
    render(&l.history)
}

fn polysi_err(text: &str) -> InputError {
    match polysi::read(text.as_bytes(), &p("h.txt")) {
        Ok(l) => panic!("expected an error, got\n{}", render(&l.history)),
        Err(e) => e,
    }
}

#[test]
fn polysi_groups_operations_by_transaction_and_session() {
    let text = "\
w(1,0,0,0)
w(2,0,0,0)
r(1,0,1,1)
w(1,5,1,1)
r(2,0,2,2)
r(3,0,2,2)
w(2,6,2,2)

r(1,5,1,3)\r
w(1,7,2,-1)
r(1,9,2,-1)
w(2,8,1,3)
";
    // Value 0 is the initial value: a read of 0 reads the explicit init write where the file
    // has one (keys 1, 2), the initial state otherwise (key 3). IsoVista's -1 lines are writes
    // of aborted transactions (each its own, after the session's others); their reads are
    // dropped.
    assert_eq!(
        polysi_ok(text),
        "\
0:
  T0 committed: w 1=0 w 2=0
1:
  T1 committed: r 1=0 w 1=5
  T3 committed: r 1=5 w 2=8
2:
  T2 committed: r 2=0 r 3=init w 2=6
  T4 aborted: w 1=7
"
    );
    assert_eq!(polysi_ok(""), "");
    assert_eq!(polysi_ok("r(7,0,3,9)"), "3:\n  T9 committed: r 7=init\n");
}

#[test]
fn polysi_malformed_lines_name_line_and_problem() {
    let shape = |s: &str| {
        format!("not an operation: expected r(key,value,session,txn) or w(key,value,session,txn), found {s:?}")
    };
    let cases: Vec<(&str, u64, String)> = vec![
        ("w(1,1,0,0)\nr(1, 2,3,4)", 2, shape("r(1, 2,3,4)")),
        ("x(1,2,3,4)", 1, shape("x(1,2,3,4)")),
        ("r(1,2,3)", 1, shape("r(1,2,3)")),
        ("r(1,2,3,4", 1, shape("r(1,2,3,4")),
        ("r(1,a,3,4)", 1, shape("r(1,a,3,4)")),
        ("w(-1,2,0,0)", 1, shape("w(-1,2,0,0)")),
        ("r(1,2,3,4) # note", 1, shape("r(1,2,3,4) # note")),
        (
            "w(1,99999999999999999999,0,0)",
            1,
            "the value 99999999999999999999 does not fit in 64 bits".into(),
        ),
        (
            "w(1,2,0,-2)",
            1,
            "transaction id -2: the only negative id is -1 (a write of an aborted transaction)"
                .into(),
        ),
        (
            "w(1,1,0,5)\nw(1,2,1,5)",
            2,
            "transaction 5 is in session 0, which it began in on line 1, not in session 1".into(),
        ),
        (
            "w(1,1,0,5)\nw(1,2,0,6)\nw(1,3,0,5)",
            3,
            "transaction 5 (begun on line 1) continues after transaction 6 of session 0 began on line 2; a session runs one transaction at a time".into(),
        ),
        (
            "w(1,1,0,5)\nw(1,1,1,6)",
            2,
            "key \"1\" is written with value 1 more than once (written values must be unique per key; the other write is at line 1)".into(),
        ),
    ];
    for (text, line, msg) in cases {
        let e = polysi_err(text);
        assert_eq!(
            at(&e),
            (Location::Line(line), msg.as_str()),
            "input: {text}"
        );
    }
    let long = format!("w({},1,0,0) x", "1".repeat(100));
    assert_eq!(
        polysi_err(&long).message,
        shape(&format!("w({}...", "1".repeat(58)))
    );
}

// ---------------------------------------------------------------------------------------------
// dbcop JSON and bincode

fn json_ok(text: &str) -> String {
    let l = dbcop::read_json(text.as_bytes(), &p("h.json")).unwrap_or_else(|e| panic!("{e}"));
    assert!(l.warnings.is_empty());
    render(&l.history)
}

fn json_err(text: &str) -> InputError {
    match dbcop::read_json(text.as_bytes(), &p("h.json")) {
        Ok(l) => panic!("expected an error, got\n{}", render(&l.history)),
        Err(e) => e,
    }
}

const DBCOP_JSON: &str = r#"{
  "params": {"id": 0, "n_node": 3, "n_variable": 2, "n_transaction": 2, "n_event": 2},
  "info": "generated",
  "start": "2025-01-01T00:00:00.000000000+00:00",
  "end": "2025-01-01T00:00:00.001000000+00:00",
  "data": [
    [
      {"events": [{"Write": {"variable": 0, "version": 1}}, {"Read": {"variable": 1, "version": null}}], "committed": true},
      {"events": [{"Read": {"variable": 1, "version": 0}}, {"Write": {"variable": 1, "version": 2}}], "committed": false}
    ],
    [],
    [
      {"committed": true, "events": [["r", 0, 1], ["w", 2, 0], ["r", 2, 0], ["r", 0, 0], ["r", "name", null]]}
    ]
  ]
}
"#;

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

#[test]
fn dbcop_json_malformed_inputs_name_line_and_problem() {
    let cases: Vec<(String, u64, &str)> = vec![
        (
            "[[{\"events\": [], \"committed\": true}]".into(),
            1,
            "expected ',' or ']', found the end of the input",
        ),
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
        (
            "[[{\"events\": [[\"w\", 1, 1]], \"committed\": true}],\n [{\"events\": [[\"w\", 1, 1]], \"committed\": true}]]".into(),
            2,
            "key \"1\" is written with value 1 more than once (written values must be unique per key; the other write is at line 1)",
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
    ];
    for (text, line, msg) in cases {
        let e = json_err(&text);
        assert_eq!(at(&e), (Location::Line(line), msg), "input: {text:.80}");
    }
}

/// bincode 1 (little-endian, u64 lengths) of dbcop's OOPSLA'19 History, built by hand.
#[derive(Default)]
struct Bincode(Vec<u8>);

type Ev = (bool, u64, u64, bool);

impl Bincode {
    fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn flag(&mut self, v: bool) -> &mut Self {
        self.0.push(v as u8);
        self
    }
    fn str(&mut self, s: &str) -> &mut Self {
        self.u64(s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
        self
    }
    fn history(sessions: &[Vec<(Vec<Ev>, bool)>]) -> Bincode {
        let mut b = Bincode::default();
        for v in [7, sessions.len() as u64, 3, 2, 2] {
            b.u64(v);
        }
        b.str("generated")
            .str("2019-06-01T10:00:00.123456789+02:00")
            .str("2019-06-01T10:00:01.5+02:00");
        b.u64(sessions.len() as u64);
        for s in sessions {
            b.u64(s.len() as u64);
            for (events, ok) in s {
                b.u64(events.len() as u64);
                for &(write, var, val, success) in events {
                    b.flag(write).u64(var).u64(val).flag(success);
                }
                b.flag(*ok);
            }
        }
        b
    }
}

/// Where the data of [`Bincode::history`] starts: header, three strings, the session count.
const DATA: usize = 40 + (8 + 9) + (8 + 35) + (8 + 27) + 8;

fn bincode_err(bytes: &[u8]) -> InputError {
    match dbcop::read_bincode(bytes, &p("history.bincode")) {
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
    let l = dbcop::read_bincode(&b.0[..], &p("history.bincode")).unwrap();
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
    let l = dbcop::read_bincode(&t.0[..], &p("history.bincode")).unwrap();
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
    let dup = one(vec![(true, 1, 5, true), (true, 1, 5, true)]);
    assert_eq!(
        at(&bincode_err(&dup)),
        (
            Location::Offset((ev + 18) as u64),
            format!("key \"1\" is written with value 5 more than once (written values must be unique per key; the other write is at byte offset {ev})").as_str()
        )
    );
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

// ---------------------------------------------------------------------------------------------
// Detection, loading and robustness

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("krait-formats-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn detect_and_load_pick_the_reader() {
    let d = tmpdir("detect");
    let files: &[(&str, &[u8], Format)] = &[
        (
            "history.edn",
            b"{:type :invoke, :process 0, :value [[:w 1 1]]}\n{:type :ok, :process 0, :value [[:w 1 1]]}\n",
            Format::Edn,
        ),
        ("h.txt", b"w(1,1,0,0)\n", Format::Polysi),
        ("h.json", b"[[{\"events\": [[\"w\", 1, 1]], \"committed\": true}]]", Format::Dbcop),
        (
            "wrapped.json",
            b"\n {\"params\": {}, \"data\": [[{\"events\": [[\"w\", 1, 1]], \"committed\": true}]]}",
            Format::Dbcop,
        ),
        (
            "native.json",
            b"{\"session\":\"a\",\"txn\":1,\"ops\":[[\"w\",\"1\",1]]}\n",
            Format::Jsonl,
        ),
        (
            "h.jsonl",
            b"{\"session\":\"a\",\"txn\":1,\"ops\":[[\"w\",\"1\",1]]}\n",
            Format::Jsonl,
        ),
    ];
    for (name, bytes, format) in files {
        let f = d.join(name);
        std::fs::write(&f, bytes).unwrap();
        assert_eq!(krait_history::detect(&f).unwrap(), *format, "{name}");
        let l = krait_history::load(&f, None).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(l.format, *format);
        assert_eq!(l.history.num_txns(), 1, "{name}");
        assert_eq!(l.history.op_kind, vec![OpKind::Write], "{name}");
    }
    let bin = Bincode::history(&[vec![(vec![(true, 1, 1, true)], true)]]).0;
    let hd = d.join("hist-00000");
    std::fs::create_dir_all(&hd).unwrap();
    std::fs::write(hd.join("history.bincode"), &bin).unwrap();
    std::fs::write(d.join("hist-00001.bincode"), &bin).unwrap();
    // No extension: told apart from JSON by the first byte.
    std::fs::write(d.join("hist"), &bin).unwrap();
    for path in [hd.clone(), d.join("hist-00001.bincode")] {
        assert_eq!(krait_history::detect(&path).unwrap(), Format::Dbcop);
        let l = krait_history::load(&path, None).unwrap();
        assert_eq!(render(&l.history), "1:\n  T1 committed: w 1=1\n");
    }
    let l = krait_history::load(&d.join("hist"), Some(Format::Dbcop)).unwrap();
    assert_eq!(render(&l.history), "1:\n  T1 committed: w 1=1\n");
    // Forced formats, whatever the extension.
    std::fs::write(d.join("polysi.log"), b"w(1,1,0,0)\n").unwrap();
    let l = krait_history::load(&d.join("polysi.log"), Some(Format::Polysi)).unwrap();
    assert_eq!(render(&l.history), "0:\n  T0 committed: w 1=1\n");
    let e = krait_history::load(&d.join("h.txt"), Some(Format::Edn))
        .err()
        .unwrap();
    assert_eq!(
        e.to_string(),
        format!(
            "{}: line 1: expected an operation map {{:type ..., :process ..., :value ...}}, found the symbol w",
            d.join("h.txt").display()
        )
    );
    for (name, f) in [
        ("edn", Format::Edn),
        ("polysi", Format::Polysi),
        ("dbcop", Format::Dbcop),
        ("cobra", Format::Cobra),
        ("jsonl", Format::Jsonl),
    ] {
        assert_eq!(name.parse::<Format>().unwrap(), f);
    }
    assert_eq!(
        "elle".parse::<Format>().unwrap_err(),
        "unknown format \"elle\"; expected cobra, jsonl, edn, polysi or dbcop"
    );
}

/// A small deterministic generator, so that a failure reproduces.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Every prefix and many byte mutations of a valid input: a reader returns, never panics.
fn never_panics(valid: &[u8], read: impl Fn(&[u8])) {
    for n in 0..=valid.len() {
        read(&valid[..n]);
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let alphabet = b"[](){}#_:;,\"\\ \n0123456789-rw.nil";
    for _ in 0..3000 {
        let mut v = valid.to_vec();
        for _ in 0..1 + rng.next() % 4 {
            let i = (rng.next() % v.len() as u64) as usize;
            match rng.next() % 3 {
                0 => v[i] = alphabet[(rng.next() % alphabet.len() as u64) as usize],
                1 => {
                    v.remove(i);
                }
                _ => v[i] = rng.next() as u8,
            }
            if v.is_empty() {
                break;
            }
        }
        read(&v);
    }
}

#[test]
fn mangled_inputs_never_panic() {
    let edn = "\
{:type :invoke, :f :txn, :value [[:r 1 nil] [:append :x 3]], :process 0, :time 100, :index 0}
{:type :ok, :f :txn, :value [[:r 1 [1 2]] [:append :x 3]], :process 0, :time 150, :index 1}
{:type :invoke, :f :txn, :value [[:w 2 3]], :process 1, :time 160, :index 2}
{:type :info, :f :txn, :value [[:w 2 3]], :process 1, :time 170, :index 3, :error #{\"x\" \\a}}
";
    never_panics(edn.as_bytes(), |b| {
        let _ = edn::read(b, Path::new("h.edn"));
    });
    never_panics(b"w(1,0,0,0)\nr(1,0,1,1)\nw(1,5,1,1)\nw(2,3,2,-1)\n", |b| {
        let _ = polysi::read(b, Path::new("h.txt"));
    });
    never_panics(DBCOP_JSON.as_bytes(), |b| {
        let _ = dbcop::read_json(b, Path::new("h.json"));
    });
    let bin = Bincode::history(&[
        vec![(vec![(true, 1, 5, true), (false, 2, 0, true)], true)],
        vec![(vec![(false, 1, 5, true)], false)],
    ]);
    never_panics(&bin.0, |b| {
        let _ = dbcop::read_bincode(b, Path::new("history.bincode"));
    });
}
