//! The Elle EDN reader on hand-made inputs: every construct with the exact history it yields,
//! every malformed case with its exact error and line.

use crate::common;

use common::{at, both, p, render};
use krait_history::{read_edn, InputError, Location, Warning};

fn edn_ok(text: &str) -> (String, Vec<Warning>) {
    let l = both(text.as_bytes(), |r| read_edn(r, &p("h.edn"))).unwrap_or_else(|e| panic!("{e}"));
    (render(&l.history), l.warnings)
}

fn edn_err(text: &str) -> InputError {
    match both(text.as_bytes(), |r| read_edn(r, &p("h.edn"))) {
        Ok(l) => panic!("expected an error, got\n{}", render(&l.history)),
        Err(e) => e,
    }
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
    let l = both(text.as_bytes(), |r| read_edn(r, &p("h.edn"))).unwrap();
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

/// Each input fails on the line and with the message given.
fn edn_errors_are(cases: Vec<(String, u64, &str)>) {
    for (text, line, msg) in cases {
        let e = edn_err(&text);
        assert_eq!(at(&e), (Location::Line(line), msg), "input: {text:.80}");
    }
}

/// EDN syntax: unbalanced forms, strings, characters, tags, discards, depth.
#[test]
fn edn_malformed_syntax_names_line_and_problem() {
    let inv = "{:type :invoke, :process 0, :value [[:w 1 1]]}\n";
    edn_errors_are(vec![
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
        (format!("{inv}]"), 2, "unbalanced ']': nothing is open here"),
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
            "{:type :invoke :process}".into(),
            1,
            "the map opened on this line holds 3 forms; a map needs key-value pairs",
        ),
        (
            "[{:type :invoke, :process 0, :value []}]\n{:type :ok}".into(),
            2,
            "more text after the vector of operations that closed on line 1",
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
        ("{: 1}".into(), 1, "\":\" is not a keyword: it has no name"),
        ("[".repeat(100_000), 1, "forms nested more than 200 deep"),
    ]);
}

/// Elle's meaning: operation maps, completions, micro-operations and their values.
#[test]
fn edn_malformed_operations_name_line_and_problem() {
    let inv = "{:type :invoke, :process 0, :value [[:w 1 1]]}\n";
    edn_errors_are(vec![
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
            "42".into(),
            1,
            "expected an operation map {:type ..., :process ..., :value ...}, found 42",
        ),
        (
            "[:w 1 2]".into(),
            1,
            "expected an operation map {:type ..., :process ..., :value ...}, found :w",
        ),
    ]);
}

#[test]
fn edn_duplicate_writes_load_and_duplicate_ids_are_input_errors() {
    // A value written twice is no error (a read of it may have read either).
    let (text, _) = edn_ok(
        "\
{:type :invoke, :process 0, :value [[:w 1 5]]}
{:type :ok, :process 0, :value [[:w 1 5]]}
{:type :invoke, :process 0, :value [[:w 1 5]]}
{:type :ok, :process 0, :value [[:w 1 5]]}
",
    );
    assert_eq!(text.matches("w 1=5").count(), 2, "{text}");
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
