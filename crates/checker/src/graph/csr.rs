//! Adjacency in compressed rows, built from an edge list. A large list is counted and placed on
//! every core: pruning builds the rows of the whole known graph (six million edges at 80k
//! read-heavy transactions) before anything else of its pass can start.

use super::Node;
use rayon::prelude::*;

/// Adjacency in compressed rows: `targets[start[u]..start[u+1]]` are u's successors, each a
/// [`Target`].
pub struct Rows<T> {
    pub start: Vec<u32>,
    pub targets: Vec<T>,
}

/// Rows with each edge's index into the edge list alongside its target.
pub type Csr = Rows<(Node, u32)>;
/// Rows of targets alone.
pub type NodeRows = Rows<Node>;

/// What a row holds per successor. Pruning asks only where edges go: rows of nodes alone are
/// half the memory of the whole known graph's rows (at 80k read-heavy transactions, 45 MB
/// less of fresh memory, and half the bytes read by every walk of them).
pub trait Target: Copy + Send + Sync {
    /// The successor.
    fn node(self) -> Node;
    /// The successor `node` reached by edge number `edge`.
    fn of(node: Node, edge: u32) -> Self;
}

impl Target for (Node, u32) {
    #[inline]
    fn node(self) -> Node {
        self.0
    }
    #[inline]
    fn of(node: Node, edge: u32) -> Self {
        (node, edge)
    }
}

impl Target for Node {
    #[inline]
    fn node(self) -> Node {
        self
    }
    #[inline]
    fn of(node: Node, _: u32) -> Self {
        node
    }
}

/// From this many edges on, [`Rows::build`] works in parallel. Each thread reads every edge,
/// so the build costs more in all: worth it only where it takes long enough to matter (at 6
/// million edges, 43–49 ms instead of 77–144 on two cores).
const PAR_FROM: usize = 1 << 20;

/// From this many edges on, [`Rows::build`] works in parallel where a node has [`DENSE`] edges
/// or more on average: a read-heavy graph (readheavy-8000, 700 thousand edges on 43 thousand
/// nodes) spends long enough scattering them for the second core to pay; Cobra's sparser
/// histories of as many edges (3 to 6 a node) do not.
const PAR_DENSE_FROM: usize = 1 << 18;

/// Edges a node from which a graph counts as dense for [`PAR_DENSE_FROM`].
const DENSE: usize = 8;

impl<T: Target> Rows<T> {
    /// The rows of `edges` over nodes `0..n` (each edge reversed where `reverse`); within a
    /// row, targets in the order of their edges.
    pub fn build(n: usize, edges: &[(Node, Node)], reverse: bool) -> Rows<T> {
        let dir = move |&(u, v): &(Node, Node)| if reverse { (v, u) } else { (u, v) };
        // A count of sources per part and node: no more of them than the edges' own size.
        let parts = rayon::current_num_threads()
            .min(8)
            .min(2 * edges.len() / n.max(1));
        let dense = edges.len() >= PAR_DENSE_FROM && edges.len() >= DENSE * n;
        if parts < 2 || (edges.len() < PAR_FROM && !dense) || n < parts {
            return Rows::build_from(n, || edges.iter().map(dir));
        }
        Rows::build_par(n, edges, dir, parts)
    }

    /// [`Rows::build`] on `parts` threads: each counts the sources of its share of the edges;
    /// then each places the edges out of one range of nodes, ranges of about equal edges, so
    /// that every thread writes only its own slice of the rows. Each thread reads every edge
    /// to find its own, a sequential read that costs little next to the scattered writes.
    fn build_par(
        n: usize,
        edges: &[(Node, Node)],
        dir: impl Fn(&(Node, Node)) -> (Node, Node) + Sync,
        parts: usize,
    ) -> Rows<T> {
        let counts: Vec<Vec<u32>> = edges
            .par_chunks(edges.len().div_ceil(parts).max(1))
            .map(|chunk| {
                let mut c = vec![0u32; n];
                for e in chunk {
                    c[dir(e).0 as usize] += 1;
                }
                c
            })
            .collect();
        let mut start = vec![0u32; n + 1];
        for c in &counts {
            for (s, &k) in start[1..].iter_mut().zip(c) {
                *s += k;
            }
        }
        drop(counts);
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let m = edges.len();
        // Node ranges holding about m / parts edges each.
        let mut bounds = vec![0usize];
        for p in 1..parts {
            let want = (m * p / parts) as u32;
            let at = start.partition_point(|&s| s < want).min(n);
            bounds.push(at.max(*bounds.last().unwrap_or(&0)));
        }
        bounds.push(n);
        let mut targets = vec![T::of(0, 0); m];
        let mut slices = Vec::with_capacity(parts);
        let mut rest = &mut targets[..];
        for w in bounds.windows(2) {
            let len = (start[w[1]] - start[w[0]]) as usize;
            let (mine, others) = rest.split_at_mut(len);
            slices.push((w[0], w[1], mine));
            rest = others;
        }
        slices.into_par_iter().for_each(|(lo, hi, out)| {
            let base = start[lo];
            let mut fill: Vec<u32> = start[lo..hi].iter().map(|&s| s - base).collect();
            for (i, e) in edges.iter().enumerate() {
                let (s, t) = dir(e);
                let s = s as usize;
                if (lo..hi).contains(&s) {
                    let f = &mut fill[s - lo];
                    out[*f as usize] = T::of(t, i as u32);
                    *f += 1;
                }
            }
        });
        Rows { start, targets }
    }

    /// [`Rows::build`] from edges made twice on demand (once to count, once to place), so a
    /// graph spread over several lists needs no copy of them all in one: on a million
    /// transactions that copy, with its labels, was most of a weak level's peak memory.
    /// Each target carries its edge's index in the order `edges` gives them.
    pub fn build_from<I: Iterator<Item = (Node, Node)>>(
        n: usize,
        edges: impl Fn() -> I,
    ) -> Rows<T> {
        let mut start = vec![0u32; n + 1];
        let mut m = 0usize;
        for (s, _) in edges() {
            start[s as usize + 1] += 1;
            m += 1;
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut targets = vec![T::of(0, 0); m];
        for (i, (s, t)) in edges().enumerate() {
            targets[fill[s as usize] as usize] = T::of(t, i as u32);
            fill[s as usize] += 1;
        }
        Rows { start, targets }
    }

    #[inline]
    pub fn succ(&self, u: Node) -> &[T] {
        &self.targets[self.start[u as usize] as usize..self.start[u as usize + 1] as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On random graphs with skewed sources (many edges out of a few nodes, as out of a
    /// read-heavy history's writers), the parallel build gives the rows, and the order within
    /// each row, of the plain one, forwards and reversed, for any number of parts.
    #[test]
    fn parallel_rows_are_the_plain_ones() {
        let mut rng = super::super::test_rng::Rng(0x9e37_79b9_7f4a_7c15u64);
        let mut next = move |n: u64| rng.below(n);
        // The last two are a dense graph (parallel from PAR_DENSE_FROM edges) and a sparse one
        // of as many edges, which `build` makes on one thread.
        let dense = (PAR_DENSE_FROM / DENSE, PAR_DENSE_FROM);
        let sparse = (PAR_DENSE_FROM, PAR_DENSE_FROM);
        for (n, m) in [
            (1usize, 50usize),
            (7, 1000),
            (300, 20_000),
            (5000, 60_000),
            dense,
            sparse,
        ] {
            let edges: Vec<(Node, Node)> = (0..m)
                .map(|_| {
                    let u = if next(3) == 0 {
                        next(4) % n as u64
                    } else {
                        next(n as u64)
                    };
                    (u as Node, next(n as u64) as Node)
                })
                .collect();
            for reverse in [false, true] {
                let dir = |&(u, v): &(Node, Node)| if reverse { (v, u) } else { (u, v) };
                let plain = Csr::build_from(n, || edges.iter().map(dir));
                for parts in [2, 3, 8] {
                    let par = Csr::build_par(n, &edges, dir, parts);
                    assert_eq!(par.start, plain.start, "n {n} m {m} parts {parts}");
                    assert_eq!(par.targets, plain.targets, "n {n} m {m} parts {parts}");
                }
                let chosen = Csr::build(n, &edges, reverse);
                assert_eq!(chosen.start, plain.start, "n {n} m {m}");
                assert_eq!(chosen.targets, plain.targets, "n {n} m {m}");
            }
        }
    }
}
