//! The PolySI reader on hand-made inputs (every construct with the exact history it yields,
//! every malformed case with its exact error and line), detection and loading of every format,
//! and no panic on mangled input of any of them. Elle and dbcop: `elle.rs`, `dbcop.rs`.

use crate::common;

use common::{at, both, p, render, Bincode, DATA, DBCOP_JSON};
use krait_history::{
    read_dbcop_bincode, read_dbcop_json, read_edn, read_polysi, Format, InputError, Location,
    OpKind,
};
use std::path::{Path, PathBuf};

// ---------------------------------------------------------------------------------------------
// PolySI / IsoVista text

fn polysi_ok(text: &str) -> String {
    let l =
        both(text.as_bytes(), |r| read_polysi(r, &p("h.txt"))).unwrap_or_else(|e| panic!("{e}"));
    assert!(l.warnings.is_empty());
    render(&l.history)
}

fn polysi_err(text: &str) -> InputError {
    match both(text.as_bytes(), |r| read_polysi(r, &p("h.txt"))) {
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
    ];
    // A value written twice is no error.
    assert_eq!(
        polysi_ok("w(1,1,0,5)\nw(1,1,1,6)"),
        "0:\n  T5 committed: w 1=1\n1:\n  T6 committed: w 1=1\n"
    );
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
        "elle".parse::<Format>().unwrap_err().to_string(),
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

/// Hands out a few bytes per call, then fails: a disk error in the middle of a file.
struct Failing<'a>(&'a [u8]);

impl std::io::Read for Failing<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.0.is_empty() {
            return Err(std::io::Error::other("the disk is on fire"));
        }
        let n = out.len().min(self.0.len()).min(5);
        out[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

#[test]
fn a_read_error_midway_is_reported_as_itself() {
    let edn = b"{:type :invoke, :f :txn, :value [[:w 1 1]], :process 0}\n{:type :ok, :f :t";
    let bin = Bincode::history(&[vec![(vec![(true, 1, 5, true)], true)]]);
    let results = [
        read_edn(std::io::BufReader::new(Failing(edn)), Path::new("h")),
        read_dbcop_json(Failing(&DBCOP_JSON.as_bytes()[..150]), Path::new("h")),
        read_dbcop_bincode(Failing(&bin.0[..DATA + 12]), Path::new("h")),
        read_dbcop_bincode(Failing(&bin.0), Path::new("h")),
    ];
    for r in results {
        let Err(e) = r else {
            panic!("a failed read gave a history")
        };
        assert_eq!(e.to_string(), "h: cannot read: the disk is on fire");
    }
}

/// Mangled inputs: each reader returns, never panics, and gives the same outcome whether its
/// input comes at once or a few bytes per read.
#[test]
fn mangled_inputs_never_panic() {
    let edn = "\
{:type :invoke, :f :txn, :value [[:r 1 nil] [:append :x 3]], :process 0, :time 100, :index 0}
{:type :ok, :f :txn, :value [[:r 1 [1 2]] [:append :x 3]], :process 0, :time 150, :index 1}
{:type :invoke, :f :txn, :value [[:w 2 3]], :process 1, :time 160, :index 2}
{:type :info, :f :txn, :value [[:w 2 3]], :process 1, :time 170, :index 3, :error #{\"x\" \\a}}
";
    never_panics(edn.as_bytes(), |b| {
        let _ = both(b, |r| read_edn(r, Path::new("h.edn")));
    });
    never_panics(b"w(1,0,0,0)\nr(1,0,1,1)\nw(1,5,1,1)\nw(2,3,2,-1)\n", |b| {
        let _ = both(b, |r| read_polysi(r, Path::new("h.txt")));
    });
    never_panics(DBCOP_JSON.as_bytes(), |b| {
        let _ = both(b, |r| read_dbcop_json(r, Path::new("h.json")));
    });
    let bin = Bincode::history(&[
        vec![(vec![(true, 1, 5, true), (false, 2, 0, true)], true)],
        vec![(vec![(false, 1, 5, true)], false)],
    ]);
    never_panics(&bin.0, |b| {
        let _ = both(b, |r| read_dbcop_bincode(r, Path::new("history.bincode")));
    });
}

/// The proxy's initial state (`initial.jsonl`) cut short — a disk that filled while the
/// proxy wrote the tables' rows — is an error naming it, not a client that stopped: its
/// rows would otherwise be read as an aborted transaction and every read of them as a read of
/// nobody, or an empty history be ACCEPTed. The same cut in a client's log is repaired.
#[test]
fn a_cut_initial_state_is_an_error_naming_it() {
    let dir = tmpdir("cut-initial");
    let whole = "{\"session\":\"initial\",\"txn\":1,\"ops\":[[\"w\",\"t/1/v\",5],[\"w\",\"t/2/v\",6]],\"status\":\"committed\"}";
    let cut = &whole[..whole.find("[\"w\",\"t/2").unwrap() + 4];
    std::fs::write(dir.join("initial.jsonl"), cut).unwrap();
    std::fs::write(
        dir.join("conn-1.jsonl"),
        "{\"session\":\"conn-1\",\"txn\":2,\"ops\":[[\"r\",\"t/1/v\",5]]}\n",
    )
    .unwrap();
    let Err(e) = krait_history::load(&dir, None) else {
        panic!("a cut initial state loaded");
    };
    assert!(e.path.ends_with("initial.jsonl"), "{e}");
    assert_eq!(e.location, Location::Line(1), "{e}");
    assert!(e.message.contains("the initial state"), "{e}");
    assert!(e.message.contains("cut short"), "{e}");
    // Whole, it loads; the same cut in a client's own log is repaired with a warning.
    std::fs::write(dir.join("initial.jsonl"), format!("{whole}\n")).unwrap();
    assert!(krait_history::load(&dir, None).is_ok());
    std::fs::write(
        dir.join("conn-2.jsonl"),
        cut.replace("initial", "conn-2")
            .replace("\"txn\":1", "\"txn\":3"),
    )
    .unwrap();
    let l = krait_history::load(&dir, None).unwrap();
    assert!(
        l.warnings.iter().any(|w| w.message.contains("cut short")),
        "{:?}",
        l.warnings
    );
    let _ = std::fs::remove_dir_all(&dir);
}
