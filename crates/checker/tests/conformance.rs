//! Foreign formats mean what their home tool means: each tool's own published histories
//! (`tests/conformance/`, sources and licences in its README) checked at every level the tool
//! gives a verdict for, as loaded and again after conversion to JSON Lines (and to Cobra's logs
//! where they can carry the history), with every certificate re-checked by krait-verify.

use krait_checker::{check, Anomaly, Level, Options, Verdict};
use krait_history::{load, read_jsonl, write_cobra_dir, write_jsonl, History};
use std::path::{Path, PathBuf};

/// Where krait knowingly differs from the home tool, and why.
const DIVERGES: &[(&str, &str)] = &[(
    "elle/rw-register.edn",
    "Elle's rw-register skips a read of a value no write produced (\"probably an initial state\", rw_register.clj:849); here x = 3 is read after the same process wrote 2 and before it reads 2 back, a value nobody wrote: krait rejects it (read-of-unwritten)",
)];

/// One row of `expected.tsv`.
struct Expected {
    file: String,
    level: Level,
    accept: bool,
    source: String,
}

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance")
}

fn level(name: &str) -> Level {
    match name {
        "rc" => Level::ReadCommitted,
        "ra" => Level::ReadAtomic,
        "cc" => Level::Causal,
        "si" => Level::SnapshotIsolation,
        "ser" => Level::Serializable,
        other => panic!("expected.tsv: unknown level {other:?}"),
    }
}

fn expected() -> Vec<Expected> {
    let text = std::fs::read_to_string(dir().join("expected.tsv")).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 4, "expected.tsv: {l:?}");
            Expected {
                file: f[0].to_string(),
                level: level(f[1]),
                accept: match f[2] {
                    "ACCEPT" => true,
                    "REJECT" => false,
                    v => panic!("expected.tsv: verdict {v:?}"),
                },
                source: f[3].to_string(),
            }
        })
        .collect()
}

/// What krait-verify said of the certificates, over the whole table.
#[derive(Debug, Default)]
struct Verified {
    confirmed: usize,
    cannot_check: Vec<String>,
}

/// The verdict at `level` (true: ACCEPT), its certificate re-checked by krait-verify.
fn verdict(h: &History, level: Level, what: &str, verified: &mut Verified) -> bool {
    let opts = Options {
        level,
        ..Options::default()
    };
    let report = check(h, &opts).unwrap();
    assert!(
        !matches!(report.verdict, Verdict::Unknown { .. }),
        "{what}: {:?}",
        report.verdict
    );
    let accept = report.verdict.is_accept();
    let json = serde_json::to_value(&report).unwrap();
    match krait_verify::verify(h, &json) {
        Ok(_) => verified.confirmed += 1,
        Err(krait_verify::Problem::Unsupported(why)) => {
            verified.cannot_check.push(format!("{what}: {why}"))
        }
        Err(p) => panic!("{what}: krait-verify refutes the certificate: {p}\n{json}"),
    }
    accept
}

/// The history written as JSON Lines and read back.
fn via_jsonl(h: &History) -> History {
    let mut bytes = Vec::new();
    write_jsonl(h, &mut bytes).unwrap();
    read_jsonl(&bytes[..], Path::new("converted.jsonl"))
        .unwrap()
        .history
}

/// The history written as Cobra's logs and read back, where they can carry it (and it has a
/// transaction: an empty directory is no history).
fn via_cobra(h: &History, name: &str) -> Option<History> {
    if h.num_txns() == 0 {
        return None;
    }
    let tmp = std::env::temp_dir().join(format!(
        "krait-conformance-{}-{}",
        std::process::id(),
        name.replace('/', "_")
    ));
    let back = write_cobra_dir(h, &tmp, false)
        .ok()
        .map(|_| load(&tmp, None).unwrap().history);
    let _ = std::fs::remove_dir_all(&tmp);
    back
}

#[test]
fn home_tools_published_histories_get_their_verdicts() {
    let rows = expected();
    assert!(rows.len() > 200, "{} rows", rows.len());
    let mut verified = Verified::default();
    let (mut agree, mut converted, mut cobra) = (0, 0, 0);
    for e in &rows {
        let loaded =
            load(&dir().join(&e.file), None).unwrap_or_else(|err| panic!("{}: {err}", e.file));
        let h = &loaded.history;
        let what = format!("{} at {}", e.file, e.level.name(false));
        let got = verdict(h, e.level, &what, &mut verified);
        match DIVERGES.iter().find(|d| d.0 == e.file) {
            Some((_, why)) => assert_eq!(got, !e.accept, "{what}: no longer diverges ({why})"),
            None => {
                assert_eq!(
                    got, e.accept,
                    "{what}: the home tool says otherwise ({})",
                    e.source
                );
                agree += 1;
            }
        }
        let jsonl = via_jsonl(h);
        let again = verdict(
            &jsonl,
            e.level,
            &format!("{what}, as JSON Lines"),
            &mut verified,
        );
        assert_eq!(
            again, got,
            "{what}: another verdict after conversion to JSON Lines"
        );
        converted += 1;
        if let Some(c) = via_cobra(h, &e.file) {
            let again = verdict(
                &c,
                e.level,
                &format!("{what}, as Cobra logs"),
                &mut verified,
            );
            assert_eq!(
                again, got,
                "{what}: another verdict after conversion to Cobra logs"
            );
            cobra += 1;
        }
    }
    eprintln!(
        "{} rows: {agree} agree with the home tool, {} diverge as documented; {converted} converted to JSON Lines, {cobra} to Cobra logs; krait-verify: {} confirmed, {} cannot be checked",
        rows.len(),
        rows.len() - agree,
        verified.confirmed,
        verified.cannot_check.len()
    );
    for c in &verified.cannot_check {
        eprintln!("  cannot check: {c}");
    }
    assert!(cobra > 20, "only {cobra} histories converted to Cobra logs");
}

/// The six lines of IsoVista's text (its transaction 0 writes every key's initial 0 itself)
/// where a false ACCEPT once came from taking the initial state as one more writer of 0: the
/// explicit transaction then floated between the two others and reset the keys.
#[test]
fn an_explicit_initial_transaction_is_the_writer_of_the_initial_value() {
    let text = "w(2,0,0,0)\nw(10,0,0,0)\nw(2,1,1,1)\nr(10,0,1,1)\nw(10,3,2,2)\nr(2,0,2,2)\n";
    let h = krait_history::read_polysi(text.as_bytes(), Path::new("six.txt"))
        .unwrap()
        .history;
    let mut verified = Verified::default();
    for (h, what) in [(h.clone(), "PolySI text"), (via_jsonl(&h), "as JSON Lines")] {
        let report = check(&h, &Options::default()).unwrap();
        match &report.verdict {
            Verdict::Reject(c) => assert_eq!(c.anomaly, Anomaly::G2Item, "{what}"),
            v => panic!("{what}: {v:?}"),
        }
        assert!(!verdict(&h, Level::Serializable, what, &mut verified));
        assert!(
            verdict(&h, Level::SnapshotIsolation, what, &mut verified),
            "{what}: write skew is SI"
        );
    }
    assert!(
        verified.cannot_check.is_empty(),
        "{:?}",
        verified.cannot_check
    );
    // dbcop's JSON with the explicit initial write: the same.
    let json = r#"[[{"events":[["w",2,0],["w",10,0]],"committed":true}],
        [{"events":[["w",2,1],["r",10,0]],"committed":true}],
        [{"events":[["w",10,3],["r",2,0]],"committed":true}]]"#;
    let h = krait_history::read_dbcop_json(json.as_bytes(), Path::new("h.json"))
        .unwrap()
        .history;
    assert!(!verdict(
        &h,
        Level::Serializable,
        "dbcop JSON",
        &mut verified
    ));
}
