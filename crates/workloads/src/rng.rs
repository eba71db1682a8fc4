//! The one random-number generator of the workloads, the simulated store and the collector:
//! seeded, so a run or a generated history is reproduced exactly from its seed. Its sequence is
//! part of that promise: changing it changes every generated history.

/// xorshift64*: small, fast, deterministic.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`; every seed (0 included) gives a usable sequence.
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// A number in `[0, n)` (by multiply-shift, not modulo: no division on the hot path).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() >> 32) * n) >> 32
    }
    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
}
