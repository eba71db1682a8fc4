//! Shared by the database tests: a database of its own per test.
#![allow(dead_code)]

/// A database of its own for one test, dropped at the end.
pub struct TempDb {
    pub admin: String,
    pub name: String,
    pub url: String,
    pub mysql: bool,
}

impl TempDb {
    pub fn new(var: &str, tag: &str) -> Option<TempDb> {
        let Ok(admin) = std::env::var(var) else {
            skip_notice(&format!("skipped: {var} is not set"));
            return None;
        };
        let name = format!("krait_{tag}_{}", std::process::id());
        let mysql = admin.starts_with("mysql://") || admin.starts_with("mariadb://");
        let base = admin
            .rsplit_once('/')
            .map(|(b, _)| b.to_string())
            .unwrap_or(admin.clone());
        let url = format!("{base}/{name}");
        let db = TempDb {
            admin,
            name,
            url,
            mysql,
        };
        db.exec(&format!("DROP DATABASE IF EXISTS {}", db.name));
        db.exec(&format!("CREATE DATABASE {}", db.name));
        Some(db)
    }
    pub fn exec(&self, sql: &str) {
        if self.mysql {
            use mysql::prelude::Queryable;
            let mut c = mysql::Conn::new(
                mysql::Opts::from_url(&self.admin.replacen("mariadb://", "mysql://", 1)).unwrap(),
            )
            .unwrap();
            c.query_drop(sql).unwrap();
        } else {
            let mut c = postgres::Client::connect(&self.admin, postgres::NoTls).unwrap();
            c.batch_execute(sql).unwrap();
        }
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        self.exec(&format!("DROP DATABASE IF EXISTS {}", self.name));
    }
}

/// A skip notice the test harness does not capture: written to stderr directly (the print
/// macros are captured), so `cargo test` shows it without `--nocapture`.
fn skip_notice(msg: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{msg}");
}
