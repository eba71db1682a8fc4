//! Every field krait's JSON can carry is documented: `check --json` on every JSON Lines history
//! of the corpus (with `--order`, and in rounds), `watch --json` on a generated history, and the
//! error object of bad input. Each field's path (`cycle[].from`) must appear in docs/json.md in
//! backticks; a field added without its documentation fails here.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn krait() -> Command {
    Command::new(env!("CARGO_BIN_EXE_krait"))
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every field path in `v` ("a.b", "a[].b"), added to `out` under `prefix`.
fn paths(v: &serde_json::Value, prefix: &str, out: &mut BTreeSet<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                out.insert(p.clone());
                paths(x, &p, out);
            }
        }
        serde_json::Value::Array(a) => {
            for x in a {
                paths(x, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}

/// The JSON values a command printed (one document, or one per line).
fn outputs(c: &mut Command) -> Vec<serde_json::Value> {
    let out = c.output().expect("krait runs");
    let text = String::from_utf8_lossy(&out.stdout);
    match serde_json::from_str(&text) {
        Ok(v) => vec![v],
        Err(_) => text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect(),
    }
}

#[test]
fn every_json_field_is_documented() {
    let doc = std::fs::read_to_string(root().join("docs/json.md")).expect("docs/json.md");
    let mut seen = BTreeSet::new();
    let corpus = root().join("crates/cli/tests/histories");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&corpus)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    for f in &files {
        for extra in [&["--order", "--rss"][..], &["--round-size", "2"][..]] {
            let mut c = krait();
            c.arg("check").arg(f).arg("--json").args(extra);
            if f.to_string_lossy().contains("realtime") {
                c.arg("--strict");
            }
            for v in outputs(&mut c) {
                paths(&v, "", &mut seen);
            }
        }
    }
    // watch: JSON Lines, a line per round, then the verdict with lags.
    let dir = std::env::temp_dir().join(format!("krait-json-doc-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let st = krait()
        .args(["generate", "--txns", "300", "--fence-every", "10"])
        .arg(dir.join("h.jsonl"))
        .output()
        .unwrap();
    assert!(st.status.success());
    for v in outputs(
        krait()
            .arg("watch")
            .arg(&dir)
            .args(["--idle-exit", "1s", "--json"]),
    ) {
        paths(&v, "", &mut seen);
    }
    // Bad input: the error object.
    let bad = dir.join("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"session\":\"a\",\"txn\":1,\"ops\":[[\"q\",\"x\",1]]}\n",
    )
    .unwrap();
    for v in outputs(krait().arg("check").arg(&bad).arg("--json")) {
        paths(&v, "", &mut seen);
    }
    let _ = std::fs::remove_dir_all(&dir);
    let missing: Vec<&String> = seen
        .iter()
        .filter(|p| !doc.contains(&format!("`{p}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "fields missing from docs/json.md: {missing:#?}"
    );
    // The sample is meant to reach the interesting fields.
    for p in [
        "matched[].writer",
        "cases[].cycle[].assumed",
        "rounds[].epoch_agree",
        "error.line",
    ] {
        assert!(seen.contains(p), "the sample never produced {p}");
    }
}
