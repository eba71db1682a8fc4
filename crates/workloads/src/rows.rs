//! What the application workloads share: a Zipf sampler for skewed choices, and rows stored as
//! integers or comma-separated integer lists (the key-value store holds strings only). Rows the
//! workloads create lazily are read as `None` and stand for their initial value, so
//! [`Workload::initial`](crate::Workload::initial) stays small enough to load row by row.

use crate::Rng;

/// Samples `[0, n)` with probability proportional to `1 / (i + 1)^exponent`.
#[derive(Clone, Debug)]
pub struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    /// A sampler over `[0, n)`; `exponent` 1.0 is the classic Zipf law. Panics when `n` is 0.
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

    /// One id in `[0, n)`.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        self.cdf
            .partition_point(|&c| c <= u)
            .min(self.cdf.len() - 1) as u64
    }
}

/// An integer row; a missing or foreign value counts as `default`.
pub(crate) fn int(v: Option<String>, default: i64) -> i64 {
    v.and_then(|s| s.parse().ok()).unwrap_or(default)
}

/// A row of comma-separated integers (lists, orders, order lines).
pub(crate) fn ints(v: Option<String>) -> Vec<i64> {
    v.map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_default()
}

/// A row of integers, comma-separated.
pub(crate) fn join(v: &[i64]) -> String {
    v.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// `n` different values drawn by `pick` (fewer when `range` holds fewer than `n`).
pub(crate) fn distinct(
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
