//! Shared by the CLI's tests: a PostgreSQL database of the test's own, NATS streams, reading
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
