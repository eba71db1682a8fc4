//! The Cobra paper's application workloads (C-Twitter, C-RUBiS, TPC-C) as key-value transaction
//! logic. Rows the workloads create lazily are read as `None` and stand for their initial value,
//! so [`Workload::initial`] stays small enough to load row by row.

use crate::kv::{Tx, TxError, Workload};
use crate::Rng;

/// Samples `[0, n)` with probability proportional to `1 / (i + 1)^exponent`.
#[derive(Clone, Debug)]
pub struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    pub fn new(n: u64, exponent: f64) -> Zipf {
        assert!(n > 0, "Zipf over an empty range");
        let mut cdf: Vec<f64> = Vec::with_capacity(n as usize);
        let mut sum = 0.0;
        for i in 0..n {
            sum += 1.0 / ((i + 1) as f64).powf(exponent);
            cdf.push(sum);
        }
        for c in &mut cdf {
            *c /= sum;
        }
        // Rounding must not leave a sliver above the last bucket.
        *cdf.last_mut().unwrap() = 1.0;
        Zipf { cdf }
    }

    pub fn sample(&self, rng: &mut Rng) -> u64 {
        let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        self.cdf
            .partition_point(|&c| c <= u)
            .min(self.cdf.len() - 1) as u64
    }
}

/// An integer row; a missing or foreign value counts as `default`.
fn int(v: Option<String>, default: i64) -> i64 {
    v.and_then(|s| s.parse().ok()).unwrap_or(default)
}

/// A row of comma-separated integers (lists, orders, order lines).
fn ints(v: Option<String>) -> Vec<i64> {
    v.map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_default()
}

fn join(v: &[i64]) -> String {
    v.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

fn distinct(
    rng: &mut Rng,
    n: usize,
    range: u64,
    mut pick: impl FnMut(&mut Rng) -> u64,
) -> Vec<u64> {
    let n = n.min(range as usize);
    let mut v: Vec<u64> = Vec::with_capacity(n);
    while v.len() < n {
        let x = pick(rng);
        if !v.contains(&x) {
            v.push(x);
        }
    }
    v
}

/// C-Twitter: users tweet, follow, unfollow and read timelines; users are picked Zipfian, so a
/// few popular users' counters and lists are contended.
///
/// Keys: `tw:cnt:{u}` (tweets so far), `tw:{u}:{n}` (tweet n), `follows:{u}:{v}` ("1"/"0"),
/// `following:{u}` and `followers:{v}` (comma-separated user ids, newest last, capped at
/// [`Twitter::LIST_CAP`]). Mix: tweet 15%, follow 5%, unfollow 5%, timeline 75%.
pub struct Twitter {
    users: u64,
    zipf: Zipf,
}

impl Twitter {
    pub const LIST_CAP: usize = 50;
    /// How many followed users a timeline shows.
    pub const TIMELINE: usize = 5;

    pub fn new(users: u64) -> Twitter {
        assert!(users >= 2, "following needs two users");
        Twitter {
            users,
            zipf: Zipf::new(users, 1.0),
        }
    }

    pub fn users(&self) -> u64 {
        self.users
    }

    fn other_user(&self, rng: &mut Rng, u: u64) -> u64 {
        let v = self.zipf.sample(rng);
        if v == u {
            (v + 1) % self.users
        } else {
            v
        }
    }

    fn tweet(&self, rng: &mut Rng, tx: &mut dyn Tx, u: u64) -> Result<(), TxError> {
        let cnt = format!("tw:cnt:{u}");
        let n = int(tx.read(&cnt)?, 0);
        tx.write(
            &format!("tw:{u}:{n}"),
            &format!("tweet {}", rng.next_u64() % 1_000_000),
        )?;
        tx.write(&cnt, &(n + 1).to_string())
    }

    fn follow(&self, rng: &mut Rng, tx: &mut dyn Tx, u: u64) -> Result<(), TxError> {
        let v = self.other_user(rng, u);
        tx.write(&format!("follows:{u}:{v}"), "1")?;
        // Both directions are kept: timelines read `following`, and `followers` is the hot row.
        for (list, member) in [(format!("following:{u}"), v), (format!("followers:{v}"), u)] {
            let mut ids = ints(tx.read(&list)?);
            if !ids.contains(&(member as i64)) {
                ids.push(member as i64);
                if ids.len() > Self::LIST_CAP {
                    ids.remove(0);
                }
            }
            tx.write(&list, &join(&ids))?;
        }
        Ok(())
    }

    fn unfollow(&self, rng: &mut Rng, tx: &mut dyn Tx, u: u64) -> Result<(), TxError> {
        let following = format!("following:{u}");
        let mut ids = ints(tx.read(&following)?);
        let v = if ids.is_empty() {
            self.other_user(rng, u)
        } else {
            ids[rng.below(ids.len() as u64) as usize] as u64
        };
        tx.write(&format!("follows:{u}:{v}"), "0")?;
        ids.retain(|&x| x != v as i64);
        tx.write(&following, &join(&ids))?;
        let followers = format!("followers:{v}");
        let mut ids = ints(tx.read(&followers)?);
        ids.retain(|&x| x != u as i64);
        tx.write(&followers, &join(&ids))
    }

    fn timeline(&self, tx: &mut dyn Tx, u: u64) -> Result<(), TxError> {
        let ids = ints(tx.read(&format!("following:{u}"))?);
        for &v in ids.iter().rev().take(Self::TIMELINE) {
            let n = int(tx.read(&format!("tw:cnt:{v}"))?, 0);
            if n > 0 {
                tx.read(&format!("tw:{v}:{}", n - 1))?;
            }
        }
        Ok(())
    }
}

impl Default for Twitter {
    fn default() -> Self {
        Twitter::new(1000)
    }
}

impl Workload for Twitter {
    fn name(&self) -> String {
        "twitter".into()
    }
    /// Three rows per user: tweet counter "0", empty following and follower lists.
    fn initial(&self) -> Vec<(String, String)> {
        (0..self.users)
            .flat_map(|u| {
                [
                    (format!("tw:cnt:{u}"), "0".to_string()),
                    (format!("following:{u}"), String::new()),
                    (format!("followers:{u}"), String::new()),
                ]
            })
            .collect()
    }
    fn run_txn(&self, _client: usize, rng: &mut Rng, tx: &mut dyn Tx) -> Result<(), TxError> {
        let u = self.zipf.sample(rng);
        match rng.below(100) {
            0..=14 => self.tweet(rng, tx, u),
            15..=19 => self.follow(rng, tx, u),
            20..=24 => self.unfollow(rng, tx, u),
            _ => self.timeline(tx, u),
        }
    }
}

/// C-RUBiS, an eBay-like auction site: users bid on items, comment on (rate) each other, and
/// view items and users.
///
/// Keys: `item:{i}:maxbid`, `item:{i}:nbids`, `bid:{i}:{n}` ("user,amount"),
/// `user:{u}:rating`, `comment:{u}:{random}` ("from,delta"). Mix: store bid 20%, store comment
/// 5%, view item 35%, view user 15%, browse 25% (the maxbid of [`Rubis::BROWSE`] items).
pub struct Rubis {
    users: u64,
    items: u64,
}

impl Rubis {
    pub const BROWSE: usize = 5;

    pub fn new(users: u64, items: u64) -> Rubis {
        assert!(users > 0 && items > 0, "RUBiS needs users and items");
        Rubis { users, items }
    }

    fn bid(&self, rng: &mut Rng, tx: &mut dyn Tx) -> Result<(), TxError> {
        let (u, i) = (rng.below(self.users), rng.below(self.items));
        let (max_key, n_key) = (format!("item:{i}:maxbid"), format!("item:{i}:nbids"));
        let max = int(tx.read(&max_key)?, 0);
        let n = int(tx.read(&n_key)?, 0);
        // Some bids lose to the current maximum, as on a real auction site.
        let amount = (max + rng.below(10) as i64 - 2).max(1);
        tx.write(&format!("bid:{i}:{n}"), &format!("{u},{amount}"))?;
        tx.write(&n_key, &(n + 1).to_string())?;
        tx.write(&max_key, &max.max(amount).to_string())
    }

    fn comment(&self, rng: &mut Rng, tx: &mut dyn Tx) -> Result<(), TxError> {
        let (from, to) = (rng.below(self.users), rng.below(self.users));
        let delta = rng.below(3) as i64 - 1;
        let key = format!("user:{to}:rating");
        let rating = int(tx.read(&key)?, 0);
        tx.write(&key, &(rating + delta).to_string())?;
        tx.write(
            &format!("comment:{to}:{}", rng.next_u64()),
            &format!("{from},{delta}"),
        )
    }

    fn view_item(&self, rng: &mut Rng, tx: &mut dyn Tx) -> Result<(), TxError> {
        let i = rng.below(self.items);
        tx.read(&format!("item:{i}:maxbid"))?;
        let n = int(tx.read(&format!("item:{i}:nbids"))?, 0);
        if n > 0 {
            tx.read(&format!("bid:{i}:{}", n - 1))?;
        }
        Ok(())
    }

    fn browse(&self, rng: &mut Rng, tx: &mut dyn Tx) -> Result<(), TxError> {
        for i in distinct(rng, Self::BROWSE, self.items, |r| r.below(self.items)) {
            tx.read(&format!("item:{i}:maxbid"))?;
        }
        Ok(())
    }
}

impl Default for Rubis {
    fn default() -> Self {
        Rubis::new(2000, 20_000)
    }
}

impl Workload for Rubis {
    fn name(&self) -> String {
        "rubis".into()
    }
    /// Two rows per item (maxbid and nbids "0") and one per user (rating "0").
    fn initial(&self) -> Vec<(String, String)> {
        let items = (0..self.items).flat_map(|i| {
            [
                (format!("item:{i}:maxbid"), "0".to_string()),
                (format!("item:{i}:nbids"), "0".to_string()),
            ]
        });
        let users = (0..self.users).map(|u| (format!("user:{u}:rating"), "0".to_string()));
        items.chain(users).collect()
    }
    fn run_txn(&self, _client: usize, rng: &mut Rng, tx: &mut dyn Tx) -> Result<(), TxError> {
        match rng.below(100) {
            0..=19 => self.bid(rng, tx),
            20..=24 => self.comment(rng, tx),
            25..=59 => self.view_item(rng, tx),
            60..=74 => {
                tx.read(&format!("user:{}:rating", rng.below(self.users)))?;
                Ok(())
            }
            _ => self.browse(rng, tx),
        }
    }
}

/// TPC-C on one warehouse of [`Tpcc::DISTRICTS`] districts, as key-value rows. Customer and
/// stock rows are never loaded: a missing balance is 0, a missing stock quantity is
/// [`Tpcc::INITIAL_STOCK`], which keeps the initial state to a few dozen rows.
///
/// Keys: `w:ytd`, `d:{d}:ytd`, `d:{d}:next_o_id`, `d:{d}:next_deliv` (oldest undelivered
/// order), `c:{d}:{c}:balance`, `c:{d}:{c}:last_o`, `s:{i}:qty`, `o:{d}:{o}`
/// ("customer,ol_cnt,total"), `ol:{d}:{o}:{n}` ("item,qty,amount"), `no:{d}:{o}` ("1" pending,
/// "0" delivered). Mix: new-order 45%, payment 43%, order-status 4%, delivery 4%, stock-level 4%.
pub struct Tpcc {
    customers: u64,
    items: u64,
}

impl Tpcc {
    pub const DISTRICTS: u64 = 10;
    pub const INITIAL_STOCK: i64 = 100;
    /// How many recent orders stock-level looks at, and its cap on reads.
    pub const STOCK_LEVEL_ORDERS: i64 = 20;
    pub const STOCK_LEVEL_READS: usize = 50;
    /// TPC-C's run-time constant C of NURand (any value in range will do).
    const NURAND_C: u64 = 42;

    /// `customers` per district (TPC-C: 3000), `items` in the catalogue (TPC-C: 100,000).
    pub fn new(customers: u64, items: u64) -> Tpcc {
        assert!(
            customers > 0 && items > 0,
            "TPC-C needs customers and items"
        );
        Tpcc { customers, items }
    }

    /// TPC-C's non-uniform random choice: some customers and items are much hotter.
    fn nurand(rng: &mut Rng, a: u64, n: u64) -> u64 {
        ((rng.below(a + 1) | rng.below(n)) + Self::NURAND_C) % n
    }

    fn customer(&self, rng: &mut Rng) -> u64 {
        Self::nurand(rng, 1023, self.customers)
    }

    fn price(item: u64) -> i64 {
        (item % 100) as i64 + 1
    }

    fn new_order(&self, rng: &mut Rng, tx: &mut dyn Tx) -> Result<(), TxError> {
        let (d, c) = (rng.below(Self::DISTRICTS), self.customer(rng));
        let next = format!("d:{d}:next_o_id");
        let o = int(tx.read(&next)?, 1);
        tx.write(&next, &(o + 1).to_string())?;
        let ol_cnt = 5 + rng.below(11) as usize;
        let items = distinct(rng, ol_cnt, self.items, |r| {
            Self::nurand(r, 8191, self.items)
        });
        let mut total = 0;
        for (n, &i) in items.iter().enumerate() {
            let qty = 1 + rng.below(10) as i64;
            let stock_key = format!("s:{i}:qty");
            let stock = int(tx.read(&stock_key)?, Self::INITIAL_STOCK);
            // TPC-C restocks instead of letting the quantity fall below 10.
            let stock = if stock >= qty + 10 {
                stock - qty
            } else {
                stock - qty + 91
            };
            tx.write(&stock_key, &stock.to_string())?;
            let amount = qty * Self::price(i);
            total += amount;
            tx.write(&format!("ol:{d}:{o}:{n}"), &format!("{i},{qty},{amount}"))?;
        }
        tx.write(
            &format!("o:{d}:{o}"),
            &format!("{c},{},{total}", items.len()),
        )?;
        tx.write(&format!("no:{d}:{o}"), "1")?;
        tx.write(&format!("c:{d}:{c}:last_o"), &o.to_string())
    }

    fn payment(&self, rng: &mut Rng, tx: &mut dyn Tx) -> Result<(), TxError> {
        let (d, c) = (rng.below(Self::DISTRICTS), self.customer(rng));
        let amount = 1 + rng.below(5000) as i64;
        for (key, delta) in [
            ("w:ytd".to_string(), amount),
            (format!("d:{d}:ytd"), amount),
            (format!("c:{d}:{c}:balance"), -amount),
        ] {
            let v = int(tx.read(&key)?, 0);
            tx.write(&key, &(v + delta).to_string())?;
        }
        Ok(())
    }

    fn order_status(&self, rng: &mut Rng, tx: &mut dyn Tx) -> Result<(), TxError> {
        let (d, c) = (rng.below(Self::DISTRICTS), self.customer(rng));
        tx.read(&format!("c:{d}:{c}:balance"))?;
        // Order ids start at 1, so 0 means the customer has not ordered yet.
        let o = int(tx.read(&format!("c:{d}:{c}:last_o"))?, 0);
        if o == 0 {
            return Ok(());
        }
        let order = ints(tx.read(&format!("o:{d}:{o}"))?);
        for n in 0..order.get(1).copied().unwrap_or(0) {
            tx.read(&format!("ol:{d}:{o}:{n}"))?;
        }
        Ok(())
    }

    /// Delivers the oldest pending order of every district that has one.
    fn delivery(&self, tx: &mut dyn Tx) -> Result<(), TxError> {
        for d in 0..Self::DISTRICTS {
            let ptr = format!("d:{d}:next_deliv");
            let o = int(tx.read(&ptr)?, 1);
            let marker = format!("no:{d}:{o}");
            if tx.read(&marker)?.as_deref() != Some("1") {
                continue;
            }
            let order = ints(tx.read(&format!("o:{d}:{o}"))?);
            let (c, total) = (
                order.first().copied().unwrap_or(0),
                order.get(2).copied().unwrap_or(0),
            );
            tx.write(&marker, "0")?;
            tx.write(&ptr, &(o + 1).to_string())?;
            let balance = format!("c:{d}:{c}:balance");
            let v = int(tx.read(&balance)?, 0);
            tx.write(&balance, &(v + total).to_string())?;
        }
        Ok(())
    }

    /// Reads the stock of items in the district's recent orders, newest first, until the read
    /// budget runs out (TPC-C's 20 orders would be a few hundred reads).
    fn stock_level(&self, rng: &mut Rng, tx: &mut dyn Tx) -> Result<(), TxError> {
        let d = rng.below(Self::DISTRICTS);
        let mut left = Self::STOCK_LEVEL_READS;
        let mut read = |key: &str| -> Result<Option<Option<String>>, TxError> {
            if left == 0 {
                return Ok(None);
            }
            left -= 1;
            tx.read(key).map(Some)
        };
        let Some(next) = read(&format!("d:{d}:next_o_id"))? else {
            return Ok(());
        };
        let next = int(next, 1);
        let mut seen: Vec<i64> = Vec::new();
        for o in ((next - Self::STOCK_LEVEL_ORDERS).max(1)..next).rev() {
            let Some(order) = read(&format!("o:{d}:{o}"))? else {
                return Ok(());
            };
            for n in 0..ints(order).get(1).copied().unwrap_or(0) {
                let Some(line) = read(&format!("ol:{d}:{o}:{n}"))? else {
                    return Ok(());
                };
                let Some(&i) = ints(line).first() else {
                    continue;
                };
                if !seen.contains(&i) {
                    seen.push(i);
                    if read(&format!("s:{i}:qty"))?.is_none() {
                        return Ok(());
                    }
                }
            }
        }
        Ok(())
    }
}

impl Default for Tpcc {
    fn default() -> Self {
        Tpcc::new(3000, 1000)
    }
}

impl Workload for Tpcc {
    fn name(&self) -> String {
        "tpcc".into()
    }
    /// `w:ytd` "0", and per district `d:{d}:ytd` "0", `d:{d}:next_o_id` "1" and
    /// `d:{d}:next_deliv` "1": 31 rows.
    fn initial(&self) -> Vec<(String, String)> {
        let districts = (0..Self::DISTRICTS).flat_map(|d| {
            [
                (format!("d:{d}:ytd"), "0".to_string()),
                (format!("d:{d}:next_o_id"), "1".to_string()),
                (format!("d:{d}:next_deliv"), "1".to_string()),
            ]
        });
        std::iter::once(("w:ytd".to_string(), "0".to_string()))
            .chain(districts)
            .collect()
    }
    fn run_txn(&self, _client: usize, rng: &mut Rng, tx: &mut dyn Tx) -> Result<(), TxError> {
        match rng.below(100) {
            0..=44 => self.new_order(rng, tx),
            45..=87 => self.payment(rng, tx),
            88..=91 => self.order_status(rng, tx),
            92..=95 => self.delivery(tx),
            _ => self.stock_level(rng, tx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// What one transaction did, in order.
    #[derive(Default)]
    struct Trace {
        reads: Vec<String>,
        writes: Vec<(String, String)>,
    }

    impl Trace {
        fn wrote(&self, prefix: &str) -> bool {
            self.writes.iter().any(|(k, _)| k.starts_with(prefix))
        }
        fn read(&self, prefix: &str) -> bool {
            self.reads.iter().any(|k| k.starts_with(prefix))
        }
    }

    /// A serial store: transactions apply in turn, so invariants of the application must hold.
    struct MemTx<'a> {
        db: &'a mut HashMap<String, String>,
        trace: Trace,
    }

    impl Tx for MemTx<'_> {
        fn read(&mut self, key: &str) -> Result<Option<String>, TxError> {
            self.trace.reads.push(key.to_string());
            Ok(self.db.get(key).cloned())
        }
        fn write(&mut self, key: &str, value: &str) -> Result<(), TxError> {
            assert!(
                !self.trace.writes.iter().any(|(k, _)| k == key),
                "{key} written twice in one transaction"
            );
            self.trace.writes.push((key.to_string(), value.to_string()));
            self.db.insert(key.to_string(), value.to_string());
            Ok(())
        }
    }

    const TXNS: usize = 2000;

    fn run(w: &dyn Workload, txns: usize, seed: u64) -> (HashMap<String, String>, Vec<Trace>) {
        let mut db: HashMap<String, String> = w.initial().into_iter().collect();
        let mut rng = Rng::new(seed);
        let mut traces = Vec::with_capacity(txns);
        for t in 0..txns {
            let mut tx = MemTx {
                db: &mut db,
                trace: Trace::default(),
            };
            w.run_txn(t % 8, &mut rng, &mut tx).unwrap();
            traces.push(tx.trace);
        }
        (db, traces)
    }

    /// Each class's share of `traces` is within 3.5 percentage points of its expected percent.
    fn check_mix(
        traces: &[Trace],
        classes: &[(&str, f64)],
        classify: impl Fn(&Trace) -> &'static str,
    ) {
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for t in traces {
            *counts.entry(classify(t)).or_default() += 1;
        }
        assert_eq!(counts.values().sum::<usize>(), traces.len());
        for &(name, pct) in classes {
            let got = 100.0 * counts.get(name).copied().unwrap_or(0) as f64 / traces.len() as f64;
            assert!(
                (got - pct).abs() < 3.5,
                "{name}: {got:.1}% of transactions, expected {pct}% ({counts:?})"
            );
        }
        assert_eq!(
            counts.len(),
            classes.len(),
            "unexpected classes: {counts:?}"
        );
    }

    fn count_prefix(db: &HashMap<String, String>, prefix: &str) -> usize {
        db.keys().filter(|k| k.starts_with(prefix)).count()
    }

    #[test]
    fn workloads_are_send_and_sync() {
        fn check<T: Workload + Send + Sync>() {}
        check::<Twitter>();
        check::<Rubis>();
        check::<Tpcc>();
    }

    #[test]
    fn zipf_skews_towards_small_ids() {
        let z = Zipf::new(1000, 1.0);
        let mut rng = Rng::new(7);
        let mut counts = vec![0usize; 1000];
        for _ in 0..100_000 {
            counts[z.sample(&mut rng) as usize] += 1;
        }
        // Expected: about 13,400 for id 0 and 27 for id 500.
        assert!(counts[0] > 10_000, "{}", counts[0]);
        assert!(
            counts[0] > 50 * counts[500].max(1),
            "{} vs {}",
            counts[0],
            counts[500]
        );
        assert!(counts[..10].iter().sum::<usize>() > counts[500..].iter().sum::<usize>());
        assert_eq!(Zipf::new(1, 1.0).sample(&mut rng), 0);
    }

    #[test]
    fn initial_sizes() {
        assert_eq!(Twitter::new(50).initial().len(), 150);
        assert_eq!(Twitter::default().initial().len(), 3000);
        assert_eq!(Rubis::new(20, 200).initial().len(), 420);
        assert_eq!(Rubis::default().initial().len(), 42_000);
        assert_eq!(Tpcc::new(30, 50).initial().len(), 31);
        assert_eq!(Tpcc::default().initial().len(), 31);
        for w in [
            &Twitter::default() as &dyn Workload,
            &Rubis::default(),
            &Tpcc::default(),
        ] {
            let init = w.initial();
            let keys: std::collections::HashSet<&String> = init.iter().map(|(k, _)| k).collect();
            assert_eq!(
                keys.len(),
                init.len(),
                "{}: duplicate initial keys",
                w.name()
            );
        }
    }

    #[test]
    fn twitter_mix_and_state() {
        let w = Twitter::new(1000);
        let (db, traces) = run(&w, TXNS, 1);
        check_mix(
            &traces,
            &[
                ("tweet", 15.0),
                ("follow", 5.0),
                ("unfollow", 5.0),
                ("timeline", 75.0),
            ],
            |t| {
                if t.wrote("tw:cnt:") {
                    "tweet"
                } else if t
                    .writes
                    .iter()
                    .any(|(k, v)| k.starts_with("follows:") && v == "1")
                {
                    "follow"
                } else if t.wrote("follows:") {
                    "unfollow"
                } else {
                    assert!(t.writes.is_empty() && t.reads[0].starts_with("following:"));
                    assert!(t.reads.len() <= 1 + 2 * Twitter::TIMELINE);
                    "timeline"
                }
            },
        );
        for u in 0..w.users() {
            let n = int(db.get(&format!("tw:cnt:{u}")).cloned(), -1);
            assert_eq!(
                n as usize,
                count_prefix(&db, &format!("tw:{u}:")),
                "user {u}"
            );
        }
        let tweets = |u: u64| int(db.get(&format!("tw:cnt:{u}")).cloned(), 0);
        assert!(
            tweets(0) > 5 * tweets(500).max(1),
            "{} vs {}",
            tweets(0),
            tweets(500)
        );
        // Timelines found tweets of followed users.
        let is_tweet = |k: &String| k.starts_with("tw:") && !k.starts_with("tw:cnt:");
        assert!(traces
            .iter()
            .any(|t| t.writes.is_empty() && t.reads.iter().any(is_tweet)));
        for (k, v) in &db {
            if k.starts_with("following:") || k.starts_with("followers:") {
                assert!(ints(Some(v.clone())).len() <= Twitter::LIST_CAP, "{k}");
            }
        }
    }

    #[test]
    fn rubis_mix_and_state() {
        let w = Rubis::new(200, 2000);
        let (db, traces) = run(&w, TXNS, 2);
        check_mix(
            &traces,
            &[
                ("bid", 20.0),
                ("comment", 5.0),
                ("view item", 35.0),
                ("view user", 15.0),
                ("browse", 25.0),
            ],
            |t| {
                if t.wrote("bid:") {
                    "bid"
                } else if t.wrote("comment:") {
                    "comment"
                } else if t.read("user:") {
                    "view user"
                } else if t.read("item:") && t.reads.iter().any(|k| k.ends_with(":nbids")) {
                    "view item"
                } else {
                    assert_eq!(t.reads.len(), Rubis::BROWSE);
                    "browse"
                }
            },
        );
        for i in 0..2000 {
            let n = int(db.get(&format!("item:{i}:nbids")).cloned(), -1);
            assert_eq!(
                n as usize,
                count_prefix(&db, &format!("bid:{i}:")),
                "item {i}"
            );
        }
    }

    #[test]
    fn tpcc_mix_and_consistency() {
        let w = Tpcc::new(30, 100);
        let (db, traces) = run(&w, TXNS, 3);
        check_mix(
            &traces,
            &[
                ("new-order", 45.0),
                ("payment", 43.0),
                ("order-status", 4.0),
                ("delivery", 4.0),
                ("stock-level", 4.0),
            ],
            |t| {
                if t.wrote("d:") && t.reads.iter().any(|k| k.ends_with(":next_o_id")) {
                    "new-order"
                } else if t.wrote("w:ytd") {
                    "payment"
                } else if t.read("c:") && !t.read("d:") {
                    assert!(t.writes.is_empty());
                    "order-status"
                } else if t.reads.iter().any(|k| k.ends_with(":next_deliv")) {
                    "delivery"
                } else {
                    assert!(t.writes.is_empty() && t.reads.len() <= Tpcc::STOCK_LEVEL_READS);
                    "stock-level"
                }
            },
        );
        let get = |k: String| int(db.get(&k).cloned(), 0);
        // TPC-C consistency conditions 1 and 2 (the latter via the order rows).
        let district_ytd: i64 = (0..Tpcc::DISTRICTS)
            .map(|d| get(format!("d:{d}:ytd")))
            .sum();
        assert_eq!(get("w:ytd".into()), district_ytd);
        let mut delivered = 0;
        for d in 0..Tpcc::DISTRICTS {
            let next = get(format!("d:{d}:next_o_id"));
            assert_eq!((next - 1) as usize, count_prefix(&db, &format!("o:{d}:")));
            let deliv = get(format!("d:{d}:next_deliv"));
            for o in 1..next {
                let want = if o < deliv { "0" } else { "1" };
                assert_eq!(
                    db.get(&format!("no:{d}:{o}")).map(String::as_str),
                    Some(want),
                    "order {d}/{o}"
                );
            }
            delivered += deliv - 1;
        }
        assert!(delivered > 0);
        for (k, v) in &db {
            if k.starts_with("s:") {
                let q: i64 = v.parse().unwrap();
                assert!((10..=Tpcc::INITIAL_STOCK).contains(&q), "{k} = {q}");
            }
        }
        // Order-status and stock-level found existing orders.
        assert!(traces.iter().any(|t| t.writes.is_empty() && t.read("ol:")));
        assert!(traces.iter().any(|t| t.writes.is_empty() && t.read("s:")));
    }

    /// Fails the `fail_at`-th operation and panics on any operation after that, so a workload
    /// that swallows an error and carries on is caught.
    struct FailTx {
        ops: usize,
        fail_at: usize,
    }

    impl FailTx {
        fn op(&mut self) -> Result<(), TxError> {
            self.ops += 1;
            assert!(self.ops <= self.fail_at, "operation after a failed one");
            if self.ops == self.fail_at {
                return Err(TxError("injected".into()));
            }
            Ok(())
        }
    }

    impl Tx for FailTx {
        fn read(&mut self, _key: &str) -> Result<Option<String>, TxError> {
            self.op().map(|_| None)
        }
        fn write(&mut self, _key: &str, _value: &str) -> Result<(), TxError> {
            self.op()
        }
    }

    #[test]
    fn errors_propagate() {
        let ws: [&dyn Workload; 3] = [&Twitter::new(20), &Rubis::new(20, 50), &Tpcc::new(10, 50)];
        for w in ws {
            let mut rng = Rng::new(4);
            for t in 0..500 {
                let mut tx = FailTx {
                    ops: 0,
                    fail_at: 1 + t % 12,
                };
                let res = w.run_txn(0, &mut rng, &mut tx);
                assert_eq!(res.is_err(), tx.ops == tx.fail_at, "{}", w.name());
            }
        }
    }
}
