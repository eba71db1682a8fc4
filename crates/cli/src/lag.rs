//! Lag from a transaction's logged commit to its verification, summarised in fixed memory: a
//! watch may run for days, so per-transaction lags are not kept, only a log-scale histogram
//! whose quantiles are within 1% of the exact ones (the maximum is exact).

/// Smallest and largest lag told apart, in ms: below and above are counted at the ends.
const MIN_MS: f64 = 0.01;
const MAX_MS: f64 = 1e8;
/// Each bucket is 1% wider than the one before.
const GROWTH: f64 = 1.01;

/// Lags in ms, as a histogram with buckets 1% apart.
pub(crate) struct LagHistogram {
    counts: Vec<u64>,
    total: u64,
    max: f64,
}

impl LagHistogram {
    pub(crate) fn new() -> LagHistogram {
        let n = ((MAX_MS / MIN_MS).ln() / GROWTH.ln()).ceil() as usize + 1;
        LagHistogram {
            counts: vec![0; n],
            total: 0,
            max: 0.0,
        }
    }

    fn bucket(&self, ms: f64) -> usize {
        let x = ms.clamp(MIN_MS, MAX_MS);
        (((x / MIN_MS).ln() / GROWTH.ln()) as usize).min(self.counts.len() - 1)
    }

    /// Counts one lag.
    pub(crate) fn add(&mut self, ms: f64) {
        let b = self.bucket(ms);
        self.counts[b] += 1;
        self.total += 1;
        self.max = self.max.max(ms);
    }

    /// The `p` quantile (0..=1): the upper end of its bucket, never above the maximum.
    pub(crate) fn quantile(&self, p: f64) -> Option<f64> {
        if self.total == 0 {
            return None;
        }
        // The same rank an exact sorted list would use.
        let rank = ((self.total - 1) as f64 * p).round() as u64;
        let mut seen = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen > rank {
                return Some((MIN_MS * GROWTH.powi(b as i32 + 1)).min(self.max));
            }
        }
        Some(self.max)
    }

    /// p50, p99 and max, in ms.
    pub(crate) fn summary(&self) -> Option<(f64, f64, f64)> {
        Some((self.quantile(0.5)?, self.quantile(0.99)?, self.max))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_within_one_percent_of_exact() {
        let mut h = LagHistogram::new();
        let mut exact = Vec::new();
        let mut x = 7u64;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let ms = (x % 1_000_000) as f64 / 100.0 + 0.5;
            h.add(ms);
            exact.push(ms);
        }
        exact.sort_by(f64::total_cmp);
        for p in [0.0, 0.5, 0.9, 0.99, 1.0] {
            let want = exact[((exact.len() - 1) as f64 * p).round() as usize];
            let got = h.quantile(p).unwrap();
            assert!(got >= want && got <= want * 1.0101, "p{p}: {got} vs {want}");
        }
        assert_eq!(h.summary().unwrap().2, *exact.last().unwrap());
        assert!(LagHistogram::new().summary().is_none());
        // Memory is fixed: about 2,300 buckets whatever the number of lags.
        assert!(h.counts.len() < 2_500);
    }
}
