//! Certificates in the application's terms: where the log keeps the application's own values,
//! every way krait reports a violation (text, JSON, the `--out` directory, online rounds) shows
//! them instead of the ids and hashes the checker works with.

use std::path::{Path, PathBuf};
use std::process::Command;

fn krait() -> Command {
    Command::new(env!("CARGO_BIN_EXE_krait"))
}

fn history() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/histories/lost-update-application-values.jsonl")
}

const TXNS: &str = r#"transactions:
  teller-1:1 (session teller-1, committed): r(acct/1/balance) = "100" from setup:1, w(acct/1/balance) = "150"
  teller-2:1 (session teller-2, committed): r(acct/1/balance) = "100" from setup:1, w(acct/1/balance) = "80"
  setup:1 (session setup, committed): w(acct/1/balance) = "100"
"#;

#[test]
fn the_text_certificate_shows_the_application_values() {
    let out = krait().arg("check").arg(history()).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(TXNS), "{text}");
    assert!(!text.contains("1099511627777"), "{text}");
}

#[test]
fn online_rounds_and_the_report_directory_show_them_too() {
    let out = krait()
        .arg("check")
        .arg(history())
        .args(["--round-size", "1", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(r#"r(acct/1/balance) = \"100\" from setup:1"#),
        "{text}"
    );

    let dir = std::env::temp_dir().join(format!("krait-app-values-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = krait()
        .arg("check")
        .arg(history())
        .arg("--out")
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let verdict = std::fs::read_to_string(dir.join("verdict.json")).unwrap();
    assert!(
        verdict.contains(r#"w(acct/1/balance) = \"150\""#),
        "{verdict}"
    );
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        html.contains("w(acct/1/balance) = &quot;80&quot;"),
        "no value in the page"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
