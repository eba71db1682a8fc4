//! What Cobra's logs say beyond our model: each operation's value hash and, for a read, the
//! writer transaction it names. Kept so that a read whose claims do not match the write it
//! names can be rejected, and so that a history converts back to the same logs.
//!
//! Loaded, they are two words an operation. A very large history has them compacted once its
//! write index is built ([`CobraClaims::compact`], from [`COMPACT_FROM`] operations on): the value hash of each write, and the
//! claims of only those reads that say something their key and value do not — a read whose
//! writer and hash are those of the first write of its key and value is left out, since the
//! history gives them back. On a million transactions of twenty operations that is 320 MB
//! less; what is read back is the same, and so is every verdict.

use super::{History, OpId, OpKind};
use crate::fxhash::FxHashMap;
use rayon::prelude::*;

/// From this many operations on (about three million transactions of twenty operations),
/// loaded claims are compacted. The pass looks up every read's write, about one and a half
/// times what resolving reads costs (1.2 s on a million transactions of twenty operations,
/// on two cores), so it is made only where memory, not time, is what runs out first.
pub const COMPACT_FROM: usize = 1 << 26;

/// Cobra's claims, per operation: `(value hash, writer named)`, the writer 0 for a write.
#[derive(Clone, Debug, Default)]
pub struct CobraClaims {
    /// Per operation, while not compacted.
    value_hash: Vec<u64>,
    read_writer: Vec<u64>,
    compact: Option<Compact>,
}

#[derive(Clone, Debug, Default)]
struct Compact {
    /// Each write's value hash, in op order.
    write_hash: Vec<u64>,
    /// Per 64 operations: the writes before them, and which of them are writes.
    base: Vec<u32>,
    bits: Vec<u64>,
    /// Reads whose claims are not those of the first write of their key and value.
    reads: FxHashMap<OpId, (u64, u64)>,
}

impl Compact {
    #[inline]
    fn write_hash(&self, o: usize) -> u64 {
        let (b, i) = (o / 64, o % 64);
        let rank = self.base[b] as usize + (self.bits[b] & ((1u64 << i) - 1)).count_ones() as usize;
        self.write_hash[rank]
    }
}

impl CobraClaims {
    pub(crate) fn reserve(&mut self, n: usize) {
        self.value_hash.reserve(n);
        self.read_writer.reserve(n);
    }
    pub(crate) fn push(&mut self, value_hash: u64, read_writer: u64) {
        debug_assert!(self.compact.is_none());
        self.value_hash.push(value_hash);
        self.read_writer.push(read_writer);
    }
    /// Every operation's claims at once (none held before).
    pub(crate) fn set(&mut self, value_hash: Vec<u64>, read_writer: Vec<u64>) {
        debug_assert!(self.value_hash.is_empty() && self.compact.is_none());
        self.value_hash = value_hash;
        self.read_writer = read_writer;
    }
    pub(crate) fn truncate(&mut self, n: usize) {
        debug_assert!(self.compact.is_none());
        self.value_hash.truncate(n);
        self.read_writer.truncate(n);
    }

    /// The claims of operation `o` of `h` (whose claims these are).
    #[inline]
    pub fn get(&self, h: &History, o: usize) -> (u64, u64) {
        // Inlined where graph building checks each read against its writer; the compacted
        // claims' lookups stay out of line.
        match &self.compact {
            None => (self.value_hash[o], self.read_writer[o]),
            Some(c) => Self::get_compact(c, h, o),
        }
    }

    #[inline(never)]
    fn get_compact(c: &Compact, h: &History, o: usize) -> (u64, u64) {
        if h.op_kind[o] == OpKind::Write {
            return (c.write_hash(o), 0);
        }
        if let Some(&claims) = c.reads.get(&(o as OpId)) {
            return claims;
        }
        // Left out: those of the first write of its key and value.
        let w = h
            .first_write(h.op_key[o], h.op_value[o])
            .expect("a read left out of compacted claims has a writer") as usize;
        let t = h.txn_ops.partition_point(|&s| s as usize <= w) - 1;
        (c.write_hash(w), h.txn_ext[t])
    }

    /// Brings write `o`'s value hash toward the cache ahead of [`Self::get`].
    #[inline]
    pub fn prefetch(&self, o: usize) {
        if let Some(x) = self.value_hash.get(o) {
            crate::prefetch(x);
        }
    }

    /// The claims of read `o` where they may differ from those of the first write of its key
    /// and value; `None` where they are those (compacted claims leave such reads out).
    #[inline]
    pub fn read_claims_kept(&self, o: usize) -> Option<(u64, u64)> {
        match &self.compact {
            None => Some((self.value_hash[o], self.read_writer[o])),
            Some(c) => c.reads.get(&(o as OpId)).copied(),
        }
    }

    /// Bytes held, for memory reports.
    pub fn heap_bytes(&self) -> usize {
        let raw = (self.value_hash.capacity() + self.read_writer.capacity()) * 8;
        raw + self.compact.as_ref().map_or(0, |c| {
            c.write_hash.capacity() * 8
                + c.base.capacity() * 4
                + c.bits.capacity() * 8
                + c.reads.capacity() * (4 + 16 + 1)
        })
    }

    /// Compacts the claims of `h` (loaded, its write index built): see the module's header.
    pub(crate) fn compact(h: &mut History) {
        let Some(claims) = h.cobra.take() else {
            return;
        };
        if claims.compact.is_some() {
            h.cobra = Some(claims);
            return;
        }
        let n = h.num_ops();
        let (mut base, mut bits) = (Vec::with_capacity(n / 64 + 1), vec![0u64; n / 64 + 1]);
        let mut write_hash = Vec::new();
        for b in 0..n.div_ceil(64) {
            base.push(write_hash.len() as u32);
            for o in b * 64..((b + 1) * 64).min(n) {
                if h.op_kind[o] == OpKind::Write {
                    bits[b] |= 1 << (o % 64);
                    write_hash.push(claims.value_hash[o]);
                }
            }
        }
        base.push(write_hash.len() as u32);
        // A read is left out when its writer and hash are those the first write of its key and
        // value gives back (`get`); every other read keeps its claims.
        let hv = &*h;
        let kept: Vec<(OpId, (u64, u64))> = (0..n)
            .into_par_iter()
            .with_min_len(1 << 14)
            .filter_map(|o| {
                if hv.op_kind[o] == OpKind::Write {
                    return None;
                }
                let mine = (claims.value_hash[o], claims.read_writer[o]);
                let (k, v) = (hv.op_key[o], hv.op_value[o]);
                let derivable = hv.op_kind[o] == OpKind::Read
                    && !hv.dup_writes.contains_key(&(k, v))
                    && hv.first_write(k, v).is_some_and(|w| {
                        let w = w as usize;
                        claims.value_hash[w] == mine.0
                            && hv.txn_index.get(&mine.1).is_some_and(|&t| {
                                let t = t as usize;
                                hv.txn_ops[t] as usize <= w && w < hv.txn_ops[t + 1] as usize
                            })
                    });
                (!derivable).then_some((o as OpId, mine))
            })
            .collect();
        drop(claims);
        h.cobra = Some(CobraClaims {
            value_hash: Vec::new(),
            read_writer: Vec::new(),
            compact: Some(Compact {
                write_hash,
                base,
                bits,
                reads: kept.into_iter().collect(),
            }),
        });
    }
}
