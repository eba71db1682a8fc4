//! A small bank recorded with the recorder API (docs/recording.md): tellers move money between
//! two accounts — read both balances, write both — and every transaction is recorded with
//! tagged values. Run it on SQLite (serializable: the history is accepted) or on PostgreSQL at
//! READ COMMITTED, where the service's own check (no balance below zero) passes on every
//! transfer while krait finds the updates it lost:
//!
//! ```sh
//! cargo run -p krait-collector --example bank -- sqlite /tmp/bank
//! cargo run -p krait-collector --example bank -- postgres://postgres@127.0.0.1:5432/postgres /tmp/bank-pg
//! krait check /tmp/bank-pg --level all
//! ```

use krait_collector::{RecSession, Recorder};
use std::path::PathBuf;

const TELLERS: usize = 6;
const TRANSFERS: usize = 30;

/// The two databases the example speaks to, behind the three calls a transfer needs.
enum Db {
    Sqlite(rusqlite::Connection),
    Pg(postgres::Client),
}

impl Db {
    fn open(target: &str, file: &std::path::Path) -> Db {
        if target.starts_with("postgres://") {
            let mut c = postgres::Client::connect(target, postgres::NoTls).expect("connect");
            c.batch_execute(
                "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED",
            )
            .unwrap();
            Db::Pg(c)
        } else {
            let c = rusqlite::Connection::open(file).expect("open");
            c.busy_timeout(std::time::Duration::from_secs(10)).unwrap();
            Db::Sqlite(c)
        }
    }
    fn exec(&mut self, sql: &str, args: &[&str]) -> Result<(), String> {
        match self {
            Db::Sqlite(c) => c
                .execute(sql, rusqlite::params_from_iter(args))
                .map(|_| ())
                .map_err(|e| e.to_string()),
            Db::Pg(c) => {
                let sql = sql.replace("?1", "$1").replace("?2", "$2");
                let a: Vec<&(dyn postgres::types::ToSql + Sync)> = args
                    .iter()
                    .map(|s| s as &(dyn postgres::types::ToSql + Sync))
                    .collect();
                c.execute(sql.as_str(), &a)
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }
        }
    }
    fn get(&mut self, k: &str) -> String {
        match self {
            Db::Sqlite(c) => c
                .query_row("SELECT v FROM krait_bank_accounts WHERE k = ?1", [k], |r| {
                    r.get(0)
                })
                .unwrap(),
            Db::Pg(c) => c
                .query_one("SELECT v FROM krait_bank_accounts WHERE k = $1", &[&k])
                .unwrap()
                .get(0),
        }
    }
    fn begin(&mut self) {
        let sql = match self {
            Db::Sqlite(_) => "BEGIN IMMEDIATE",
            Db::Pg(_) => "BEGIN",
        };
        self.batch(sql).unwrap();
    }
    fn batch(&mut self, sql: &str) -> Result<(), String> {
        match self {
            Db::Sqlite(c) => c.execute_batch(sql).map_err(|e| e.to_string()),
            Db::Pg(c) => c.batch_execute(sql).map_err(|e| e.to_string()),
        }
    }
}

/// One transfer of 5 from `from` to `to`, recorded.
fn transfer(db: &mut Db, s: &mut RecSession, from: &str, to: &str) -> std::io::Result<()> {
    let mut t = s.begin()?;
    db.begin();
    // Inside BEGIN … COMMIT a crash undoes the writes, so they can wait for committing().
    t.defer_writes();
    let stored = db.get(from);
    let a: i64 = t
        .read_tagged(from, Some(&stored))?
        .unwrap()
        .parse()
        .unwrap();
    let stored = db.get(to);
    let b: i64 = t.read_tagged(to, Some(&stored))?.unwrap().parse().unwrap();
    // The service's own check: never move money an account does not have.
    if a < 5 {
        let _ = db.batch("ROLLBACK");
        return t.aborted();
    }
    std::thread::sleep(std::time::Duration::from_millis(2));
    // Rows in key order (no deadlock between opposite transfers); a failed statement rolls
    // the transaction back.
    let mut updates = [(from, a - 5), (to, b + 5)];
    updates.sort();
    for (k, v) in updates {
        let stored = t.tag(k, &v.to_string())?;
        let sql = "UPDATE krait_bank_accounts SET v = ?1 WHERE k = ?2";
        if db.exec(sql, &[&stored, k]).is_err() {
            let _ = db.batch("ROLLBACK");
            return t.aborted();
        }
    }
    t.committing()?;
    match db.batch("COMMIT") {
        Ok(()) => t.committed(),
        Err(_) => {
            let _ = db.batch("ROLLBACK");
            t.aborted()
        }
    }
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (target, out) = match args.as_slice() {
        [_, t, o] => (t.clone(), PathBuf::from(o)),
        _ => {
            eprintln!("usage: bank sqlite|postgres://URL OUT_DIR");
            std::process::exit(2);
        }
    };
    let file = out.with_extension("db");
    let _ = std::fs::remove_file(&file);
    let rec = Recorder::create(&out)?;
    let mut db = Db::open(&target, &file);
    let _ = db.batch("DROP TABLE IF EXISTS krait_bank_accounts");
    db.batch("CREATE TABLE krait_bank_accounts (k TEXT PRIMARY KEY, v TEXT)")
        .unwrap();
    let mut setup = rec.session("setup")?;
    let mut t = setup.begin()?;
    for k in ["a", "b"] {
        let v = t.tag(k, "1000")?;
        db.exec("INSERT INTO krait_bank_accounts VALUES (?1, ?2)", &[k, &v])
            .expect("loading the accounts");
    }
    t.committed()?;
    std::thread::scope(|sc| {
        for i in 0..TELLERS {
            let (rec, target, file) = (&rec, &target, &file);
            sc.spawn(move || {
                let mut db = Db::open(target, file);
                let mut s = rec.session(&format!("teller-{i}")).unwrap();
                for n in 0..TRANSFERS {
                    let (from, to) = if (i + n) % 2 == 0 {
                        ("a", "b")
                    } else {
                        ("b", "a")
                    };
                    transfer(&mut db, &mut s, from, to).unwrap();
                }
            });
        }
    });
    let total: i64 = ["a", "b"]
        .iter()
        .map(|k| {
            db.get(k)
                .rsplit('|')
                .next()
                .unwrap()
                .parse::<i64>()
                .unwrap()
        })
        .sum();
    println!(
        "{TELLERS} tellers × {TRANSFERS} transfers recorded in {}; money in the bank: {total} (started with 2000)",
        out.display()
    );
    println!("check it: krait check {} --level all", out.display());
    // The table was the example's own; the history stays.
    let _ = db.batch("DROP TABLE krait_bank_accounts");
    Ok(())
}
