//! Each transaction's facts — its reads checked against its own writes and its writers, the
//! write→read edges, the (key, writer, reader) reads, writes and read-modify-write steps chains
//! are made of — stated for ranges of transactions in parallel and joined in node order, so the
//! result (and the first finding) is the one a single pass would give. Where resolving left
//! Cobra's claims unchecked, this pass checks them, at each read's writer, which it looks up
//! anyway; where resolving was deferred ([`krait_history::resolve_deferred`]), it looks each
//! read's writer up itself, in the table of writes the resolution holds.

use super::thin::{EdgeSink, WrThinner};
use super::{Built, Choice, EdgeKind, Facts, Label, Layout, Node, Overwritten, ReadOut, INIT};
use crate::findings::{Finding, NoWriter};
use krait_history::{
    claim_problem, claim_problems, CobraClaims, History, OpId, OpKind, ReadProblem, Resolution,
    TxnId, Writers, FROM_AMBIGUOUS, FROM_INIT, FROM_NOBODY,
};
use rayon::prelude::*;

/// The facts of every included transaction (`inc`), with their write→read edges added to `b`
/// (thinned when `thin`), or the finding of the first transaction, in node order, that has one.
pub(super) fn all_facts(
    h: &History,
    r: &Resolution,
    inc: &[bool],
    b: &mut Built,
    thin: bool,
) -> Result<Facts, Finding> {
    let overwritten = Overwritten::of(h);
    // Eight ranges a thread: with two, ranges of equal ops but unequal work left one core idle
    // through the last tenth of the pass (readheavy-8000); thinning, which does not cross
    // ranges, keeps 0.06 % more edges for it.
    let ranges = node_ranges(h, b, rayon::current_num_threads() * 8);
    let mut layout = Layout::of(h, &b.node_txn, &ranges, b.num_nodes);
    let outs = match layout.as_mut() {
        Some(l) => l.split(),
        None => ranges.iter().map(|_| ReadOut::List(Vec::new())).collect(),
    };
    let bref: &Built = b;
    let claims = h.cobra.as_ref().filter(|_| !r.claims_checked);
    let parts = match &r.writers {
        Some(w) => ranges_facts(h, r, w, inc, bref, thin, &overwritten, ranges, outs, claims),
        None => {
            let src = &Resolved(r);
            ranges_facts(
                h,
                r,
                src,
                inc,
                bref,
                thin,
                &overwritten,
                ranges,
                outs,
                claims,
            )
        }
    };
    if claims.is_some() {
        // A claim problem comes before any finding of this pass, as it would had resolving
        // checked the claims. A range that stopped at a finding left the rest of its reads'
        // claims unchecked: then they are all checked, in a pass of their own.
        let first = if parts.iter().any(|p| p.is_err()) {
            let mut full = None;
            let r = if r.is_deferred() {
                full.insert(krait_history::resolve_unchecked(h))
            } else {
                r
            };
            claim_problems(h, &r.op_txn, &r.read_from)
                .into_iter()
                .find(|&(op, _)| inc[r.op_txn[op as usize] as usize])
        } else {
            parts
                .iter()
                .flatten()
                .flat_map(|p| p.2.first())
                .next()
                .cloned()
        };
        if let Some((op, problem)) = first {
            return Err(Finding::ReadProblem { op, problem });
        }
    }
    let mut all = Facts::default();
    // The first finding in node order is the one to report.
    let parts = parts.into_iter().collect::<Result<Vec<_>, _>>()?;
    all.read_blocks = layout;
    // Joined into arrays sized once: grown by doubling, each would be copied again and again.
    let total = |f: fn(&(Facts, EdgeSink, Problems)) -> usize| parts.iter().map(f).sum::<usize>();
    b.edges.reserve(total(|p| p.1.edges.len()));
    b.spare.reserve(total(|p| p.1.spare.edges.len()));
    for (f, sink, _) in parts {
        all.read_parts.push(f.reads);
        all.writes.extend(f.writes);
        all.rmws.extend(f.rmws);
        all.amb.extend(f.amb);
        all.resolved.extend(f.resolved);
        sink.drain_into(b);
    }
    Ok(all)
}

/// What each range of nodes states, in parallel, each read's writer found through `src`.
#[allow(clippy::too_many_arguments)]
fn ranges_facts<'a, S: Source>(
    h: &History,
    r: &Resolution,
    src: &S,
    inc: &[bool],
    bref: &Built,
    thin: bool,
    overwritten: &Overwritten,
    ranges: Vec<(Node, Node)>,
    outs: Vec<ReadOut<'a>>,
    claims: Option<&'a CobraClaims>,
) -> Vec<Result<(Facts, EdgeSink, Problems), Finding>> {
    ranges
        .into_par_iter()
        .zip(outs)
        .map(|((lo, hi), mut out)| {
            let mut f = Facts::default();
            let ops: usize = (lo..hi)
                .map(|n| h.ops(bref.node_txn[n as usize - 1]).len())
                .sum();
            // At most one fact per op: sized once, not grown through copies.
            if let ReadOut::List(v) = &mut out {
                v.reserve(ops);
            }
            let mut ks = KeySlots::new(h, overwritten, out, claims);
            let mut sink = EdgeSink::new(&bref.spare);
            // Left-out write→read edges: at most one a read too.
            sink.spare.reserve(ops);
            let mut thinner = WrThinner::new(thin, bref.num_chains, bref.num_nodes);
            for node in lo..hi {
                txn_facts(h, r, src, inc, bref, node, &mut f, &mut ks, &mut sink)?;
                thinner.add(&bref.chain_of, &mut sink, &ks.wr_buf);
            }
            f.reads = ks.reads.finish();
            Ok((f, sink, ks.problems))
        })
        .collect()
}

/// Node ranges [lo, hi) of about equal op counts, `parts` of them at most. A writer's first
/// reader in a session may fall in another range than its later ones; thinning then keeps an
/// edge more, never one less.
fn node_ranges(h: &History, b: &Built, parts: usize) -> Vec<(Node, Node)> {
    let n = b.node_txn.len() as Node;
    let total: usize = b.node_txn.iter().map(|&t| h.ops(t).len()).sum();
    if total < 1 << 16 || parts <= 1 {
        return vec![(1, n + 1)];
    }
    let per = total.div_ceil(parts);
    let mut out = Vec::with_capacity(parts);
    let (mut lo, mut acc) = (1, 0);
    for node in 1..=n {
        acc += h.ops(b.node_txn[node as usize - 1]).len();
        if acc >= per {
            out.push((lo, node + 1));
            (lo, acc) = (node + 1, 0);
        }
    }
    if lo <= n {
        out.push((lo, n + 1));
    }
    out
}

/// What the per-transaction pass reuses: which writes their own transaction overwrites (found
/// once, so no read scans its writer's ops again), a slot per key stamped with the transaction
/// using it (so a transaction of many ops finds its key's slot at once), and where read facts
/// go.
struct KeySlots<'a> {
    overwritten: &'a Overwritten,
    stamp: Vec<u32>,
    slot: Vec<u32>,
    /// (key, last own write op, external source, first external read op, the source's node):
    /// the node found once per key, where the source's transaction is at hand, not again from
    /// the source op (a scattered read per fact).
    scratch: Vec<(u32, u32, u32, u32, Node)>,
    /// Per writer node, the last reader given a write→read edge from it.
    wr_stamp: Vec<u32>,
    /// The current reader's write→read edges (placed, one per writer), for [`WrThinner`].
    wr_buf: Vec<(Node, Node, Label)>,
    /// Where the range's read facts go.
    reads: ReadOut<'a>,
    /// Cobra's claims, where this pass checks them, and the problems found, in op order.
    claims: Option<&'a CobraClaims>,
    problems: Problems,
}

/// Reads whose claims the history contradicts, in op order.
type Problems = Vec<(OpId, ReadProblem)>;

/// Where the pass finds what each read observed.
trait Source: Sync {
    /// How many ops ahead [`Source::ahead`] is asked.
    const AHEAD: usize = AHEAD;
    /// Asks for what the read `a` (an op of the history or past its end) will need: a hint.
    fn ahead(&self, h: &History, a: usize);
    /// What read `o` observed, as `Resolution::read_from` has it, and where that is a write,
    /// the write's transaction and (where known at once) its value hash.
    fn seen(&self, h: &History, o: usize) -> Seen;
}

#[derive(Clone, Copy)]
struct Seen {
    src: OpId,
    txn: TxnId,
    hash: Option<u64>,
}

/// The resolution made before the pass.
struct Resolved<'a>(&'a Resolution);

impl Source for Resolved<'_> {
    #[inline]
    fn ahead(&self, h: &History, a: usize) {
        // The writer's transaction (and its claims), a scattered read per read, asked for a
        // few reads ahead so that their misses overlap.
        if let Some(&w) = self.0.read_from.get(a) {
            if w < FROM_AMBIGUOUS {
                krait_history::prefetch(&self.0.op_txn[w as usize]);
                if let Some(c) = &h.cobra {
                    c.prefetch(w as usize);
                }
            }
        }
    }
    #[inline]
    fn seen(&self, _: &History, o: usize) -> Seen {
        let src = self.0.read_from[o];
        let txn = match src {
            s if s < FROM_AMBIGUOUS => self.0.op_txn[s as usize],
            _ => TxnId::MAX,
        };
        Seen {
            src,
            txn,
            hash: None,
        }
    }
}

/// The deferred resolution's table of writes: each read looked up here, once, its slot asked
/// for a few reads ahead.
impl Source for Writers {
    const AHEAD: usize = 48;
    #[inline]
    fn ahead(&self, h: &History, a: usize) {
        if h.op_kind.get(a) == Some(&OpKind::Read) {
            self.prefetch(h.op_key[a], h.op_value[a]);
        }
    }
    #[inline]
    fn seen(&self, h: &History, o: usize) -> Seen {
        // As `resolve` has it where every read has one write or none to have observed.
        match h.op_kind[o] {
            OpKind::Read => match self.get(h.op_key[o], h.op_value[o]) {
                Some(w) => Seen {
                    src: w.op,
                    txn: w.txn,
                    hash: Some(w.hash),
                },
                None => Seen {
                    src: FROM_NOBODY,
                    txn: TxnId::MAX,
                    hash: None,
                },
            },
            OpKind::ReadInit => Seen {
                src: FROM_INIT,
                txn: TxnId::MAX,
                hash: None,
            },
            OpKind::Write => Seen {
                src: o as OpId,
                txn: TxnId::MAX,
                hash: None,
            },
        }
    }
}

impl<'a> KeySlots<'a> {
    fn new(
        h: &History,
        overwritten: &'a Overwritten,
        reads: ReadOut<'a>,
        claims: Option<&'a CobraClaims>,
    ) -> KeySlots<'a> {
        KeySlots {
            reads,
            claims,
            problems: Vec::new(),
            overwritten,
            slot: vec![0; h.num_keys()],
            stamp: vec![u32::MAX; h.num_keys()],
            scratch: Vec::new(),
            wr_stamp: vec![u32::MAX; h.num_txns() + 1],
            wr_buf: Vec::new(),
        }
    }
}

/// How many ops ahead the per-transaction pass asks for its writers' data: at 80k read-heavy
/// transactions the pass took 197 ms (median of 8) instead of 213 without; 8, 32 and 64 ahead
/// did as well as 16.
const AHEAD: usize = 16;

/// One transaction's reads and writes, key by key: its own reads must see its own latest write,
/// an external read must name a committed writer's final version and be the same every time;
/// write→read edges go into the known graph. A read whose value several writes wrote keeps the
/// candidates that could be its writer; with one left it is an ordinary read.
#[allow(clippy::too_many_arguments)]
fn txn_facts<S: Source>(
    h: &History,
    r: &Resolution,
    source: &S,
    inc: &[bool],
    b: &Built,
    node: Node,
    f: &mut Facts,
    ks: &mut KeySlots,
    sink: &mut EdgeSink,
) -> Result<(), Finding> {
    const NONE: u32 = u32::MAX;
    // No external read yet (FROM_NOBODY reads are rejected before they are recorded).
    const NO_SRC: u32 = FROM_NOBODY;
    let t = b.node_txn[node as usize - 1];
    // Reused across transactions; a finding ends the build, so one lost on `?` costs nothing.
    let mut scratch = std::mem::take(&mut ks.scratch);
    scratch.clear();
    ks.wr_buf.clear();
    let ops = h.ops(t);
    let ahead = ops.start + S::AHEAD..ops.end + S::AHEAD;
    for (o, a) in ops.zip(ahead) {
        source.ahead(h, a);
        let k = h.op_key[o];
        let slot = if ks.stamp[k as usize] == node {
            ks.slot[k as usize] as usize
        } else {
            ks.stamp[k as usize] = node;
            ks.slot[k as usize] = scratch.len() as u32;
            scratch.push((k, NONE, NO_SRC, NONE, INIT));
            scratch.len() - 1
        };
        if h.op_kind[o] == OpKind::Write {
            scratch[slot].1 = o as u32;
            continue;
        }
        let op = o as u32;
        let seen = source.seen(h, o);
        let mut src = seen.src;
        if let Some(c) = ks.claims {
            let write_of = || {
                (
                    seen.txn,
                    seen.hash.unwrap_or_else(|| c.get(h, src as usize).0),
                )
            };
            if let Some(p) = claim_problem(h, c, o, src, write_of) {
                ks.problems.push((op, p));
            }
        }
        let mut src_node = INIT;
        let own = scratch[slot].1;
        if own != NONE {
            // By value: another write of the same value is the same version to this reader.
            let seen = src == own
                || (h.op_kind[o] == OpKind::Read && h.op_value[o] == h.op_value[own as usize]);
            if !seen {
                return Err(Finding::OwnWriteNotSeen { txn: t, op, own });
            }
            continue;
        }
        if src == FROM_NOBODY {
            return Err(Finding::ReadOfNobody { op });
        }
        if src == FROM_AMBIGUOUS {
            let (prev, first) = (scratch[slot].2, scratch[slot].3);
            if prev != NO_SRC
                && h.op_kind[first as usize] == OpKind::Read
                && h.op_value[first as usize] == h.op_value[o]
            {
                // The same value again: the same version, whichever write that is.
                match prev {
                    FROM_AMBIGUOUS => open_choice(f, k).ops.push(op),
                    _ => f.resolved.push((op, prev)),
                }
                continue;
            }
            src = viable_writer(h, r, inc, t, op, f, ks)?;
            if src != FROM_AMBIGUOUS && src != FROM_INIT {
                src_node = b.txn_node[r.op_txn[src as usize] as usize];
            }
        } else if src != FROM_INIT {
            let w = seen.txn;
            src_node = b.txn_node[w as usize];
            if w == t {
                return Err(Finding::FutureRead { txn: t, op });
            }
            if !inc[w as usize] {
                return Err(Finding::AbortedRead { op });
            }
            if ks.overwritten.contains(src) {
                return Err(Finding::IntermediateRead { op });
            }
        }
        let (prev, first) = (scratch[slot].2, scratch[slot].3);
        // An ambiguous read of another value than the first read's is another version.
        if prev != NO_SRC && (src != prev || src == FROM_AMBIGUOUS) {
            return Err(Finding::NonRepeatable {
                txn: t,
                key: k,
                first,
                second: op,
            });
        }
        scratch[slot].2 = src;
        scratch[slot].3 = op;
        scratch[slot].4 = src_node;
    }
    for &(k, own, src, _, node_of_src) in &scratch {
        let src_node = match src {
            NO_SRC | FROM_AMBIGUOUS => None,
            _ => Some(node_of_src),
        };
        if src == FROM_AMBIGUOUS {
            let c = open_choice(f, k);
            c.reader = node;
            c.cands = c
                .cand_ops
                .iter()
                .map(|&w| match w {
                    FROM_INIT => INIT,
                    w => b.txn_node[r.op_txn[w as usize] as usize],
                })
                .collect();
        }
        if let Some(w) = src_node {
            ks.reads.push((k, w, node));
            // One write→read edge per (writer, reader) pair is enough for the graph; the fence
            // key's are kept apart, as they may be left out (see `forget_key`).
            let fence = h.fence_key == Some(k);
            if w != INIT && fence {
                let (u, v) = b.ends(w, node, EdgeKind::Wr);
                sink.push(u, v, Label::fact(EdgeKind::Wr, k));
            } else if w != INIT && ks.wr_stamp[w as usize] != node {
                ks.wr_stamp[w as usize] = node;
                let (u, v) = b.ends(w, node, EdgeKind::Wr);
                ks.wr_buf.push((u, v, Label::fact(EdgeKind::Wr, k)));
            }
        }
        if own != NONE {
            f.writes.push((k, node));
            if let Some(w) = src_node {
                f.rmws.push((k, w, node));
            }
        }
    }
    ks.scratch = scratch;
    Ok(())
}

/// The choice this transaction opened for key `k` (its reader is set once the transaction's
/// reads are all seen; until then it is 0, which no reader is).
fn open_choice(f: &mut Facts, k: u32) -> &mut Choice {
    f.amb
        .iter_mut()
        .rev()
        .find(|c| c.key == k && c.reader == 0)
        .expect("opened by the transaction's first read of the key")
}

/// The candidates of ambiguous read `op` of transaction `t` that could be its writer: the
/// initial state, or a final write of a transaction that takes part and is not `t`. With one
/// left, that is the read's source (recorded in `f.resolved`); with more, a [`Choice`] is
/// opened (`FROM_AMBIGUOUS` returned); with none, every candidate's reason is the finding.
fn viable_writer(
    h: &History,
    r: &Resolution,
    inc: &[bool],
    t: TxnId,
    op: u32,
    f: &mut Facts,
    ks: &KeySlots,
) -> Result<u32, Finding> {
    let cands = r.candidates(op);
    let mut ok: Vec<u32> = Vec::with_capacity(cands.len());
    let mut why = Vec::new();
    for &c in cands {
        if c == FROM_INIT {
            ok.push(c);
            continue;
        }
        let w = r.op_txn[c as usize];
        let reason = if w == t {
            NoWriter::Own
        } else if !inc[w as usize] {
            NoWriter::NotCommitted
        } else if ks.overwritten.contains(c) {
            NoWriter::Overwritten
        } else {
            ok.push(c);
            continue;
        };
        why.push((c, reason));
    }
    match ok.len() {
        0 => Err(Finding::NoWriter { op, why }),
        1 => {
            f.resolved.push((op, ok[0]));
            Ok(ok[0])
        }
        n => {
            f.amb.push(Choice {
                key: h.op_key[op as usize],
                reader: 0,
                ops: vec![op],
                cands: Vec::new(),
                cand_ops: ok,
                alive: vec![true; n],
                why: vec![None; n],
                guess: u32::MAX,
            });
            Ok(FROM_AMBIGUOUS)
        }
    }
}
