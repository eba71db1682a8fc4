//! Each crate's integration tests are one binary (`tests/suite.rs`, with `autotests = false`):
//! a test file that suite.rs does not name would never run, silently. This fails instead.

use std::path::Path;

#[test]
fn every_integration_test_file_is_named_in_its_crates_suite() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut checked = 0;
    for c in std::fs::read_dir(&crates).unwrap() {
        let tests = c.unwrap().path().join("tests");
        let Ok(files) = std::fs::read_dir(&tests) else {
            continue;
        };
        let suite = std::fs::read_to_string(tests.join("suite.rs")).unwrap_or_default();
        let manifest = std::fs::read_to_string(tests.join("../Cargo.toml")).unwrap_or_default();
        for f in files {
            let p = f.unwrap().path();
            let name = p.file_stem().unwrap().to_string_lossy().to_string();
            if p.extension().is_none_or(|e| e != "rs") || name == "suite" {
                continue;
            }
            // A crate that keeps cargo's one binary per file needs no suite.
            if !manifest.contains("autotests = false") {
                continue;
            }
            assert!(
                suite.lines().any(|l| l.trim() == format!("mod {name};")),
                "{} is not named in {}: its tests would never run",
                p.display(),
                tests.join("suite.rs").display()
            );
            checked += 1;
        }
    }
    assert!(checked > 40, "only {checked} test files found");
}
