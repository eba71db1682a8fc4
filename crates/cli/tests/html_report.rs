//! `krait check --out DIR`: the files it writes, and the page in a real browser — Debian's
//! `chromium`, headless, driven over the DevTools protocol — loaded from disk with no network,
//! a transaction of the cycle clicked, and its operations, session neighbours and timestamps
//! read back from the details pane. Without chromium (`.ci/run` installs it) the browser test
//! says it skipped.

use headless_chrome::{Browser, LaunchOptions};
use std::path::{Path, PathBuf};
use std::process::Command;

fn krait() -> Command {
    Command::new(env!("CARGO_BIN_EXE_krait"))
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("krait-html-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Read skew with session neighbours and timestamps: T2 read T1's x but the y T1 overwrote.
/// Session a runs T1 then T3; session b runs T4 then T2. Times in ns from 0.5 ms.
const READ_SKEW: &str = r#"{"session":"a","txn":1,"start":1000000,"commit":2000000,"ops":[["w","x",1],["w","y",1]]}
{"session":"a","txn":3,"start":3000000,"commit":4000000,"ops":[["w","z",7]]}
{"session":"b","txn":4,"start":500000,"commit":900000,"ops":[["r","z",null]]}
{"session":"b","txn":2,"start":2500000,"commit":3500000,"ops":[["r","x",1],["r","y",null]]}
"#;

/// Writes the history and its report; returns the report directory.
fn report(name: &str, extra: &[&str]) -> PathBuf {
    report_of(name, READ_SKEW, extra)
}

fn report_of(name: &str, history: &str, extra: &[&str]) -> PathBuf {
    let dir = tmp(name);
    std::fs::create_dir_all(&dir).unwrap();
    let h = dir.join("h.jsonl");
    std::fs::write(&h, history).unwrap();
    let out = dir.join("report");
    let st = krait()
        .arg("check")
        .arg(&h)
        .arg("--out")
        .arg(&out)
        .args(extra)
        .output()
        .unwrap();
    assert_eq!(st.status.code(), Some(1), "{st:?}");
    out
}

/// The files of a report's `anomalies/`, by name.
fn anomaly_files(out: &Path) -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(out.join("anomalies"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    files
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn the_report_directory_holds_the_page_the_verdict_and_each_anomaly() {
    let out = report("files", &[]);
    let html = read(&out.join("report.html"));
    // Self-contained: nothing fetched from anywhere.
    for outside in ["<link", "src=", "@import", "url(http", "href=\"http"] {
        assert!(
            !html.contains(outside),
            "the page refers outside: {outside}"
        );
    }
    assert!(html.contains("REJECT: the history is not serializable"));
    let v: serde_json::Value = serde_json::from_str(&read(&out.join("verdict.json"))).unwrap();
    assert_eq!(v["verdict"], "REJECT");
    assert_eq!(v["anomaly"], "G-single");
    let txt = read(&out.join("anomalies/1-G-single.txt"));
    assert!(
        txt.starts_with("breaks: serializable\nanomaly: G-single"),
        "{txt}"
    );
    assert!(txt.contains("T2 (session b, committed): r(x) = 1 from T1, r(y) = initial"));
    let svg = read(&out.join("anomalies/1-G-single.svg"));
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    // Both transactions of the cycle drawn, and both edges with their keys.
    for t in ["data-txn=\"T1\"", "data-txn=\"T2\"", ">wr x<", ">rw y<"] {
        assert!(svg.contains(t), "{t} missing from the drawing");
    }
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
}

#[test]
fn the_ladder_report_has_a_row_per_level_and_the_anomaly_once() {
    // T2 reads y before x: its reads never go back (read committed holds), but it saw part of
    // T1's writes (a fractured read breaks read atomic, and so every level above).
    let skew = READ_SKEW.replace(
        r#"[["r","x",1],["r","y",null]]"#,
        r#"[["r","y",null],["r","x",1]]"#,
    );
    let out = report_of("ladder", &skew, &["--level", "all"]);
    let html = read(&out.join("report.html"));
    for l in [
        "read-committed",
        "read-atomic",
        "causal",
        "snapshot-isolation",
        "serializable",
        "strict-snapshot-isolation",
        "strict-serializable",
    ] {
        assert!(html.contains(&format!("<td>{l}</td>")), "{l} missing");
    }
    assert!(html.contains("strongest level that holds: read-committed"));
    // One certificate: the rungs above read atomic are implied and add none.
    let files = anomaly_files(&out);
    assert_eq!(files, ["1-fractured-read.svg", "1-fractured-read.txt"]);
    assert!(html.contains("implied: not read-atomic"));
    let v: serde_json::Value = serde_json::from_str(&read(&out.join("verdict.json"))).unwrap();
    assert_eq!(v["holds"], "read-committed");
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
}

#[test]
fn a_directory_with_other_files_is_refused_and_an_old_report_replaced() {
    let dir = tmp("refuse");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), "mine").unwrap();
    let h = dir.join("h.jsonl");
    std::fs::write(&h, READ_SKEW).unwrap();
    let st = krait()
        .args(["check", "--report"])
        .arg(&dir)
        .arg(&h)
        .output()
        .unwrap();
    assert_eq!(st.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&st.stderr).contains("holds other files"));
    assert_eq!(read(&dir.join("notes.txt")), "mine");
    // An earlier report is replaced, its anomaly files with it.
    let out = report("again", &["--level", "all"]);
    let h2 = out.parent().unwrap().join("h.jsonl");
    let st = krait()
        .arg("check")
        .arg(&h2)
        .arg("--out")
        .arg(&out)
        .output();
    assert_eq!(st.unwrap().status.code(), Some(1));
    let files = anomaly_files(&out);
    // The ladder's non-monotonic read gave way to serializability's G-single.
    assert_eq!(files, ["1-G-single.svg", "1-G-single.txt"]);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
}

fn chromium() -> Option<PathBuf> {
    let named = std::env::var_os("KRAIT_CHROMIUM").map(PathBuf::from);
    let found = named.into_iter().chain(
        ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
            .iter()
            .map(PathBuf::from),
    );
    for p in found {
        if p.is_file() {
            return Some(p);
        }
    }
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "skipped: no chromium (apt-get install chromium, or set KRAIT_CHROMIUM)"
    );
    None
}

#[test]
fn clicking_a_transaction_shows_its_operations_neighbours_and_times() {
    let Some(chrome) = chromium() else { return };
    let out = report("browser", &[]);
    let page = format!("file://{}", out.join("report.html").display());
    let browser = Browser::new(
        LaunchOptions::default_builder()
            .path(Some(chrome))
            .sandbox(false)
            .headless(true)
            .window_size(Some((1300, 1000)))
            .build()
            .unwrap(),
    )
    .unwrap();
    let tab = browser.new_tab().unwrap();
    tab.navigate_to(&page)
        .unwrap()
        .wait_until_navigated()
        .unwrap();
    let verdict = tab
        .find_element("#verdict")
        .unwrap()
        .get_inner_text()
        .unwrap();
    assert_eq!(verdict, "REJECT: the history is not serializable");
    let pane = || {
        tab.find_element("#details")
            .unwrap()
            .get_inner_text()
            .unwrap()
    };
    assert!(pane().contains("No transaction selected"));

    // A click on T2's box in the drawing.
    tab.find_element("svg.certificate g.txn[data-txn=\"T2\"]")
        .unwrap()
        .click()
        .unwrap();
    tab.wait_for_element("#details h3").unwrap();
    let text = pane();
    for want in [
        "T2",
        "b",
        "2 of 2",
        "committed",
        "2.000 ms",
        "3.000 ms",
        "r(x) = 1 from T1",
        "r(y) = initial",
        "T4",
        "none (last of its session)",
    ] {
        assert!(
            text.contains(want),
            "{want:?} not in the details pane:\n{text}"
        );
    }
    let selected = tab
        .evaluate(
            "[...document.querySelectorAll('.selected')].map(e => e.getAttribute('data-txn')).join(',')",
            false,
        )
        .unwrap()
        .value
        .unwrap();
    assert!(
        selected.as_str().unwrap().split(',').all(|t| t == "T2"),
        "{selected}"
    );

    // Its session neighbour, from the pane itself: T4, whose own operations the page carries.
    tab.find_element("#details button.ref[data-txn=\"T4\"]")
        .unwrap()
        .click()
        .unwrap();
    let text = pane();
    assert!(
        text.contains("T4") && text.contains("r(z) = initial"),
        "{text}"
    );
    assert!(text.contains("none (first of its session)"), "{text}");

    // The timeline's mark for T1 opens T1.
    tab.find_element("svg.timeline g.txn[data-txn=\"T1\"]")
        .unwrap()
        .click()
        .unwrap();
    let text = pane();
    assert!(
        text.contains("w(x) = 1") && text.contains("w(y) = 1"),
        "{text}"
    );
    assert!(text.contains("T3"), "T1's next transaction missing: {text}");
    drop(tab);
    drop(browser);
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
}
