//! Shared by the CLI's tests: a PostgreSQL database of the test's own, a small disk to fill, NATS streams, reading
//! numbers out of the printed lines.
#![allow(dead_code)]

pub mod nats;

/// The number written just before the first `word` in `text` ("1200 reads" → 1200).
pub fn number_before(text: &str, word: &str) -> u64 {
    let at = text
        .find(word)
        .unwrap_or_else(|| panic!("no {word:?} in {text}"));
    let before = text[..at].trim_end();
    let digits: String = before
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.chars().rev().collect::<String>().parse().unwrap()
}

/// A database of its own on the server KRAIT_PG_URL names, dropped at the end.
pub struct TempPg {
    admin: String,
    name: String,
    pub url: String,
}

impl TempPg {
    pub fn new(tag: &str) -> Option<TempPg> {
        let Ok(admin) = std::env::var("KRAIT_PG_URL") else {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "skipped: KRAIT_PG_URL is not set");
            return None;
        };
        let name = format!("krait_cli_{tag}_{}", std::process::id());
        let base = admin
            .rsplit_once('/')
            .map_or(admin.clone(), |(b, _)| b.into());
        let db = TempPg {
            url: format!("{base}/{name}"),
            admin,
            name,
        };
        db.exec(&format!("DROP DATABASE IF EXISTS {}", db.name));
        db.exec(&format!("CREATE DATABASE {}", db.name));
        Some(db)
    }
    fn exec(&self, sql: &str) {
        let mut c = postgres::Client::connect(&self.admin, postgres::NoTls).unwrap();
        c.batch_execute(sql).unwrap();
    }
}

impl Drop for TempPg {
    fn drop(&mut self) {
        self.exec(&format!("DROP DATABASE IF EXISTS {}", self.name));
    }
}

/// A small tmpfs at `dir` for a test that fills a disk (mounting needs root), unmounted and
/// removed when dropped; None where it cannot be mounted, said as skipped.
pub struct SmallDisk(pub std::path::PathBuf);

impl SmallDisk {
    pub fn mount(dir: std::path::PathBuf, size: &str) -> Option<SmallDisk> {
        std::fs::create_dir_all(&dir).unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&dir)
            .output()
            .is_ok_and(|o| o.status.success());
        if mounted {
            return Some(SmallDisk(dir));
        }
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "skipped: cannot mount a small tmpfs here"
        );
        let _ = std::fs::remove_dir_all(&dir);
        None
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
