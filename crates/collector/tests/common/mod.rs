//! Shared by the database tests: a database of its own per test, and the check that batch and
//! follow read the same history from every cut of the logs a test wrote ([`cuts`], comparing
//! [`readings`]).
#![allow(dead_code)]

pub mod cuts;
pub mod proxy;
pub mod readings;
pub use cuts::batch_matches_follow;

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
pub fn skip_notice(msg: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{msg}");
}

/// The database's rows: key → the write id its value carries (`k<id>|…`), for tagged rows.
pub fn rows(db: &TempDb) -> Vec<(String, u64)> {
    let pairs: Vec<(String, String)> = if db.mysql {
        use mysql::prelude::Queryable;
        let mut c = mysql::Conn::new(mysql::Opts::from_url(&db.url).unwrap()).unwrap();
        c.query("SELECT k, v FROM krait_kv").unwrap()
    } else {
        let mut c = postgres::Client::connect(&db.url, postgres::NoTls).unwrap();
        c.query("SELECT k, v FROM krait_kv", &[])
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect()
    };
    pairs
        .into_iter()
        .filter_map(|(k, v)| {
            let id = v.strip_prefix('k')?.split('|').next()?.parse().ok()?;
            Some((k, id))
        })
        .collect()
}

/// Every row the database holds was written by a transaction the history has as committed or
/// unknown (never aborted, never missing): no committed transaction is missing from the
/// history. Returns how many rows were compared.
pub fn rows_accounted_for(db: &TempDb, h: &krait_history::History, tag: &str) -> usize {
    let op_txn = krait_history::op_txns(h);
    let mut checked = 0;
    for (k, id) in rows(db) {
        let key = h.keys.iter().position(|x| *x == k);
        let op = key.and_then(|key| h.first_write(key as u32, id));
        let Some(op) = op else {
            panic!("{tag}: the database holds {k} = write {id}, which the history lacks");
        };
        let t = op_txn[op as usize];
        assert_ne!(
            h.txn_status[t as usize],
            krait_history::TxnStatus::Aborted,
            "{tag}: {k} holds a write the history says aborted"
        );
        checked += 1;
    }
    assert!(checked > 10, "{tag}: {checked} rows compared");
    checked
}

/// The fault tests' workload: BlindW-RW over `keys` keys (half the transactions read-only),
/// 4 clients recording into `out` with a fence every 20 transactions.
pub fn blindw_run(
    out: &std::path::Path,
    txns: usize,
    keys: u64,
    seed: u64,
) -> (krait_collector::RunConfig, krait_workloads::BlindWKv) {
    let cfg = krait_collector::RunConfig {
        clients: 4,
        txns,
        fence_every: Some(20),
        out: Some(out.to_path_buf()),
        fsync: false,
        seed,
        replace: false,
        first_client: 0,
        setup: true,
        publish: None,
    };
    let w = krait_workloads::BlindWKv {
        keys,
        ops: 4,
        read_only: 0.5,
    };
    (cfg, w)
}

/// What a run against a correct database must give however it was disturbed: the logs read
/// the same loaded or followed, the history verifies ACCEPT one-shot and online (rounds of
/// `round` transactions), and every row the database holds is accounted for (`what` says how
/// the run was disturbed). Returns the number of rows compared.
pub fn verifies_and_accounts_for_rows(
    out: &std::path::Path,
    db: &TempDb,
    round: usize,
    tag: &str,
    what: &str,
) -> usize {
    let l = krait_history::load(out, None).unwrap();
    batch_matches_follow(out, tag);
    let h = &l.history;
    let v = krait_checker::check(h, &krait_checker::Options::default())
        .unwrap()
        .verdict;
    assert!(v.is_accept(), "{tag}: a correct database {what}: {v:?}");
    let on = krait_checker::online::replay(h, Default::default(), round, |_, _| {}).unwrap();
    assert!(on.verdict().is_none(), "{tag}: online: {:?}", on.verdict());
    rows_accounted_for(db, h, tag)
}

/// The verdict at `level`, with krait-verify confirming it where it can: a verdict it refutes
/// fails the test.
pub fn verified_verdict(
    h: &krait_history::History,
    level: krait_checker::Level,
) -> krait_checker::Verdict {
    let opts = krait_checker::Options {
        level,
        want_order: true,
        ..krait_checker::Options::default()
    };
    let rep = krait_checker::check(h, &opts).unwrap();
    let v = serde_json::to_value(&rep).unwrap();
    if let Err(p) = krait_verify::verify(h, &v) {
        assert!(
            matches!(p, krait_verify::Problem::Unsupported(_)),
            "krait-verify refutes {v}: {p}"
        );
    }
    rep.verdict
}
