//! A small, fast, non-cryptographic hasher for integer keys (the rustc "Fx" hash). History ids
//! are not attacker-controlled in a way that matters here, and SipHash dominated load time.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

#[derive(Default, Clone, Copy)]
pub struct FxHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        // Whole words straight from the bytes; only the tail is copied (a copy of variable
        // length is a call to memmove, and key names hashed word by word that way were a
        // fifth of loading a proxy's millions of them). The same values as before.
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            self.add(u64::from_le_bytes(w.try_into().unwrap_or([0; 8])));
        }
        let tail = words.remainder();
        if !tail.is_empty() {
            let mut buf = [0u8; 8];
            buf[..tail.len()].copy_from_slice(tail);
            self.add(u64::from_le_bytes(buf));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_u128(&mut self, i: u128) {
        self.add(i as u64);
        self.add((i >> 64) as u64);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        // Fold high bits down: hashbrown takes its bucket index from the low bits.
        self.hash ^ (self.hash >> 29)
    }
}

pub type FxBuildHasher = BuildHasherDefault<FxHasher>;
/// A `HashMap` with rustc's Fx hash: fast, not cryptographic, for integer keys.
pub type FxHashMap<K, V> = HashMap<K, V, FxBuildHasher>;
/// A `HashSet` with rustc's Fx hash.
pub type FxHashSet<K> = HashSet<K, FxBuildHasher>;

#[cfg(test)]
mod tests {
    use super::*;

    /// Word by word as the hasher first did it, every word copied.
    fn copied(bytes: &[u8]) -> u64 {
        let mut h = FxHasher::default();
        for chunk in bytes.chunks(8) {
            let mut buf = [0u8; 8];
            buf[..chunk.len()].copy_from_slice(chunk);
            h.add(u64::from_le_bytes(buf));
        }
        h.finish()
    }

    #[test]
    fn names_hash_as_they_did_when_every_word_was_copied() {
        let name = b"pgbench_accounts/123456/abalance and a longer tail";
        for n in 0..name.len() {
            let mut h = FxHasher::default();
            h.write(&name[..n]);
            assert_eq!(h.finish(), copied(&name[..n]), "{n} bytes");
        }
    }
}
