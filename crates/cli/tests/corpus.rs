//! A corpus of small histories (`tests/histories/*.edn` in Elle/Jepsen's format, `*.jsonl` in
//! krait's own), one anomaly class or reject reason per file, named by it, each checked end to
//! end through the `krait` binary.
//!
//! Every file starts with comment lines (`; ` in EDN, `# ` in JSON Lines) saying what it shows,
//! one of which states the expected verdict: `expect: ACCEPT` or `expect: REJECT <anomaly>` (the
//! `anomaly` field of `krait check --json`, e.g. `G1a`, `G-single`, `incompatible-order`); an
//! `args:` line adds arguments to `krait check` (e.g. `--strict`); an `also:` line lists the
//! further anomaly classes the REJECT carries (`also[].anomaly`, in order; none without it). For each file the test
//! runs `krait check FILE --json` and checks the exit code (0 ACCEPT, 1 REJECT), the verdict and,
//! for a REJECT, the anomaly; then it has `krait verify-certificate` confirm the verdict
//! independently (an ACCEPT's serial order from `check --json --order`, a REJECT's certificate),
//! expecting exit 0 (or, with `verify: declines`, exit 3: a certificate it cannot check yet,
//! such as a REJECT of a history with repeated values).
//!
//! A file may also carry `; known-disagreement: ...`: its expectation is what Elle's semantics
//! say, and krait is known to name the anomaly differently. For such a file a different anomaly
//! is reported (on stderr) but does not fail the test, while everything else (exit code, verdict,
//! certificate) is still checked; once krait gives the expected anomaly, the test fails to ask
//! for the mark to be removed.
//!
//! All failures are collected and reported together, by file name.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// What a history's `; expect:` line asks for.
#[derive(Debug, PartialEq)]
enum Expect {
    Accept,
    Reject(String),
}

/// The expectation, extra `krait check` arguments and the known-disagreement mark of one
/// history file.
struct Case {
    expect: Expect,
    args: Vec<String>,
    known_disagreement: bool,
    /// `also: CLASS…`: the further anomaly classes (`also[].anomaly`) a REJECT carries, in
    /// order; without the line, none.
    also: Vec<String>,
    /// `verify: declines`: krait-verify does not check this certificate yet (a REJECT of a
    /// history with repeated values) and must say so (exit 3), not refute it.
    verify_declines: bool,
}

fn krait() -> Command {
    Command::new(env!("CARGO_BIN_EXE_krait"))
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("histories")
}

/// Reads the leading comment lines of a history (`;` in EDN, `#` in JSON Lines) for its
/// expectation.
fn parse_case(text: &str) -> Result<Case, String> {
    let mut expect = None;
    let mut args = Vec::new();
    let mut known_disagreement = false;
    let mut verify_declines = false;
    let mut also = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let Some(comment) = line.strip_prefix(';').or_else(|| line.strip_prefix('#')) else {
            break;
        };
        let comment = comment.trim();
        if let Some(rest) = comment.strip_prefix("expect:") {
            if expect.is_some() {
                return Err("more than one `; expect:` line".to_string());
            }
            let words: Vec<&str> = rest.split_whitespace().collect();
            expect = Some(match words.as_slice() {
                ["ACCEPT"] => Expect::Accept,
                ["REJECT", anomaly] => Expect::Reject(anomaly.to_string()),
                _ => {
                    return Err(format!(
                        "bad `; expect:` line {line:?}: want `ACCEPT` or `REJECT <anomaly>`"
                    ))
                }
            });
        } else if let Some(rest) = comment.strip_prefix("args:") {
            args.extend(rest.split_whitespace().map(str::to_string));
        } else if let Some(rest) = comment.strip_prefix("also:") {
            also.extend(rest.split_whitespace().map(str::to_string));
        } else if comment.starts_with("known-disagreement:") {
            known_disagreement = true;
        } else if comment.starts_with("verify: declines") {
            verify_declines = true;
        }
    }
    match expect {
        Some(expect) => Ok(Case {
            expect,
            args,
            known_disagreement,
            also,
            verify_declines,
        }),
        None => Err("no `; expect:` line in the leading comments".to_string()),
    }
}

fn run(cmd: &mut Command) -> Result<Output, String> {
    cmd.output().map_err(|e| format!("cannot run {cmd:?}: {e}"))
}

fn describe(out: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Has `krait verify-certificate` confirm the JSON verdict `json` about `history`.
fn verify(
    history: &Path,
    name: &str,
    what: &str,
    json: &[u8],
    declines: bool,
) -> Result<(), String> {
    let cert = std::env::temp_dir().join(format!(
        "krait-corpus-{}-{name}-{what}.json",
        std::process::id()
    ));
    std::fs::write(&cert, json).map_err(|e| format!("cannot write {}: {e}", cert.display()))?;
    let out = run(krait().arg("verify-certificate").arg(history).arg(&cert));
    let _ = std::fs::remove_file(&cert);
    let out = out?;
    if declines {
        return match out.status.code() {
            Some(3) => Ok(()),
            _ => Err(format!(
                "verify-certificate of the {what} was to decline it (want exit 3): {}",
                describe(&out)
            )),
        };
    }
    if out.status.code() != Some(0) {
        return Err(format!(
            "verify-certificate of the {what} did not confirm it (want exit 0): {}",
            describe(&out)
        ));
    }
    Ok(())
}

/// Checks one history. `Ok(Some(note))` is a known disagreement that still holds.
fn check_one(path: &Path, name: &str) -> Result<Option<String>, Vec<String>> {
    let text = std::fs::read_to_string(path).map_err(|e| vec![format!("cannot read: {e}")])?;
    let case = parse_case(&text).map_err(|e| vec![e])?;
    let check = || {
        let mut c = krait();
        c.arg("check").arg(path).args(&case.args).arg("--json");
        c
    };
    let out = run(&mut check()).map_err(|e| vec![e])?;
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| {
        vec![format!(
            "`check --json` did not print JSON ({e}): {}",
            describe(&out)
        )]
    })?;
    let verdict = json["verdict"].as_str().unwrap_or("<none>").to_string();
    let anomaly = json["anomaly"].as_str().unwrap_or("<none>").to_string();
    let summary = json["summary"].as_str().unwrap_or("").to_string();
    let mut failures = Vec::new();
    let mut note = None;
    match &case.expect {
        Expect::Accept => {
            if out.status.code() != Some(0) {
                failures.push(format!("want exit 0 (ACCEPT), got {:?}", out.status.code()));
            }
            if verdict != "ACCEPT" {
                failures.push(format!("want ACCEPT, got {verdict} {anomaly}: {summary}"));
            }
            match run(check().arg("--order")) {
                Err(e) => failures.push(e),
                Ok(ordered) if ordered.status.code() != Some(0) => failures.push(format!(
                    "`check --json --order`: want exit 0, got {}",
                    describe(&ordered)
                )),
                Ok(ordered) => {
                    if let Err(e) =
                        verify(path, name, "ACCEPT with --order", &ordered.stdout, false)
                    {
                        failures.push(e);
                    }
                }
            }
        }
        Expect::Reject(want) => {
            if out.status.code() != Some(1) {
                failures.push(format!("want exit 1 (REJECT), got {:?}", out.status.code()));
            }
            if verdict != "REJECT" {
                failures.push(format!("want REJECT {want}, got {verdict}"));
            } else if anomaly != *want {
                if case.known_disagreement {
                    note = Some(format!(
                        "known disagreement: want {want}, krait says {anomaly}: {summary}"
                    ));
                } else {
                    failures.push(format!(
                        "want REJECT {want}, got REJECT {anomaly}: {summary}"
                    ));
                }
            } else if case.known_disagreement {
                failures.push(format!(
                    "krait now reports the expected {want}: remove the \
                     `; known-disagreement:` mark (and update its comment)"
                ));
            }
            let also: Vec<&str> = json["also"].as_array().map_or(Vec::new(), |a| {
                a.iter().filter_map(|c| c["anomaly"].as_str()).collect()
            });
            if also != case.also {
                failures.push(format!(
                    "want further anomalies {:?} (an `also:` line), got {also:?}",
                    case.also
                ));
            }
            if verdict == "REJECT" {
                if let Err(e) = verify(
                    path,
                    name,
                    "REJECT certificate",
                    &out.stdout,
                    case.verify_declines,
                ) {
                    failures.push(e);
                }
            }
        }
    }
    if failures.is_empty() {
        Ok(note)
    } else {
        Err(failures)
    }
}

/// Every history file of the corpus, in name order.
fn corpus_files() -> Vec<PathBuf> {
    let dir = corpus_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "edn" || x == "jsonl"))
        .collect();
    files.sort();
    files
}

/// The same history gives byte-identical answers every time and on any number of threads:
/// the text report, and the JSON report without its timings, over 10 runs each with 1, 2 and
/// the default number of worker threads.
#[test]
fn answers_are_byte_identical_across_runs_and_thread_counts() {
    for path in corpus_files() {
        let case = parse_case(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let answer = |threads: Option<&str>, json: bool| -> String {
            let mut c = krait();
            c.arg("check").arg(&path).args(&case.args);
            if json {
                c.arg("--json");
            }
            if let Some(n) = threads {
                c.env("RAYON_NUM_THREADS", n);
            }
            let out = c.output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            if !json {
                return text;
            }
            let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
            let obj = v.as_object_mut().unwrap();
            obj.retain(|k, _| k != "timings" && !k.ends_with("_ms"));
            v.to_string()
        };
        for json in [false, true] {
            let first = answer(None, json);
            for (i, threads) in [None, Some("1"), Some("2")]
                .into_iter()
                .cycle()
                .take(10)
                .enumerate()
            {
                assert_eq!(
                    answer(threads, json),
                    first,
                    "{}: run {i} ({threads:?} threads, json {json}) differs",
                    path.display()
                );
            }
        }
    }
}

#[test]
fn every_history_in_the_corpus_gets_its_expected_verdict() {
    let dir = corpus_dir();
    let files = corpus_files();
    assert!(
        files.len() >= 16,
        "the corpus in {} has only {} histories",
        dir.display(),
        files.len()
    );
    let mut failures = Vec::new();
    let mut notes = Vec::new();
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        match check_one(path, &name) {
            Ok(None) => {}
            Ok(Some(note)) => notes.push(format!("{name}: {note}")),
            Err(errs) => {
                for e in errs {
                    failures.push(format!("{name}: {e}"));
                }
            }
        }
    }
    for note in &notes {
        eprintln!("{note}");
    }
    assert!(
        failures.is_empty(),
        "{} of {} histories failed:\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}
