//! C-Twitter, the Cobra paper's social-network workload: many small read-modify-writes on a
//! few popular users' counters and lists, the contention a serializability checker must untangle.

use crate::rows::{int, ints, join, Zipf};
use crate::{Rng, Tx, TxError, Workload};

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
    /// The longest a following or followers list grows (oldest entries drop off).
    pub const LIST_CAP: usize = 50;
    /// How many followed users a timeline shows.
    pub const TIMELINE: usize = 5;

    /// `users` users (at least 2), picked Zipfian.
    pub fn new(users: u64) -> Twitter {
        assert!(users >= 2, "following needs two users");
        Twitter {
            users,
            zipf: Zipf::new(users, 1.0),
        }
    }

    /// How many users there are.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rows::{int, ints};
    use crate::testkit::{check_mix, count_prefix, run, TXNS};

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
}
