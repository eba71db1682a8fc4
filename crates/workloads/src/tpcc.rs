//! TPC-C as key-value rows: the classic OLTP mix, whose new-order and payment transactions
//! read-modify-write district and warehouse rows (and so conflict often).

use crate::rows::{distinct, int, ints};
use crate::{Rng, Tx, TxError, Workload};

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
    /// Districts of the one warehouse.
    pub const DISTRICTS: u64 = 10;
    /// The stock quantity of an item never ordered.
    pub const INITIAL_STOCK: i64 = 100;
    /// How many recent orders stock-level looks at, and its cap on reads.
    pub const STOCK_LEVEL_ORDERS: i64 = 20;
    /// The most rows a stock-level transaction reads.
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
    use crate::rows::int;
    use crate::testkit::{check_mix, count_prefix, run, TXNS};

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
}
