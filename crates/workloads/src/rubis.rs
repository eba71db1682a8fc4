//! C-RUBiS, the Cobra paper's auction workload: bids append to per-item rows and counters, so
//! concurrent bidders on one item conflict.

use crate::rows::{distinct, int};
use crate::{Rng, Tx, TxError, Workload};

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
    /// How many items a browse transaction looks at.
    pub const BROWSE: usize = 5;

    /// `users` bidders and `items` for sale; both at least 1.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rows::int;
    use crate::testkit::{check_mix, count_prefix, run, TXNS};

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
}
