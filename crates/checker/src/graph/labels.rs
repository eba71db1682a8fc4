//! The known graph's edge labels, held as runs: each run one label and the edges it labels, a
//! block of consecutive edges. Chaining adds a version's readers' anti-dependencies together,
//! all with one label (`rw` on the key), and the session order's edges share theirs: on a
//! read-heavy history there are a tenth as many runs as edges. Twelve bytes a label, held per
//! edge, were 67 MB of fresh memory at 80k read-heavy transactions, written on the one thread
//! that chains (each page first touched costs more than filling it), for labels that only a
//! certificate or the online checker ever reads.

use super::Label;

/// Labels of edges `0..len()`, as runs (see the module's header).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Labels {
    /// The first edge of each run, ascending; a run ends where the next begins (the last at
    /// `len`).
    starts: Vec<u32>,
    /// Each run's label; two runs side by side never share one.
    runs: Vec<Label>,
    len: usize,
}

impl Labels {
    /// How many edges are labelled.
    pub fn len(&self) -> usize {
        self.len
    }

    /// How many runs hold the labels.
    #[cfg(test)]
    fn num_runs(&self) -> usize {
        self.runs.len()
    }

    /// Labels the next edge.
    #[inline]
    pub fn push(&mut self, l: Label) {
        self.push_n(l, 1);
    }

    /// Labels the next `n` edges alike.
    #[inline]
    pub fn push_n(&mut self, l: Label, n: usize) {
        if n == 0 {
            return;
        }
        if self.runs.last() != Some(&l) {
            self.starts
                .push(u32::try_from(self.len).expect("edge ids are 32-bit: fewer than 2^32 edges"));
            self.runs.push(l);
        }
        self.len += n;
    }

    /// Labels the next edges with `other`'s labels, in order.
    pub fn append(&mut self, other: &Labels) {
        for (i, &l) in other.runs.iter().enumerate() {
            self.push_n(l, other.run_len(i));
        }
    }

    fn run_len(&self, i: usize) -> usize {
        let end = self.starts.get(i + 1).map_or(self.len, |&s| s as usize);
        end - self.starts[i] as usize
    }

    /// The run holding edge `e`'s label.
    #[inline]
    fn run_of(&self, e: usize) -> usize {
        assert!(e < self.len, "edge {e} of {} labelled", self.len);
        self.starts.partition_point(|&s| s as usize <= e) - 1
    }

    /// Every edge's label, in edge order.
    pub fn iter(&self) -> impl Iterator<Item = Label> + '_ {
        (0..self.runs.len()).flat_map(|i| std::iter::repeat_n(self.runs[i], self.run_len(i)))
    }

    #[cfg(test)]
    fn to_vec(&self) -> Vec<Label> {
        self.iter().collect()
    }
}

impl std::ops::Index<usize> for Labels {
    type Output = Label;
    #[inline]
    fn index(&self, e: usize) -> &Label {
        &self.runs[self.run_of(e)]
    }
}

impl Extend<Label> for Labels {
    fn extend<I: IntoIterator<Item = Label>>(&mut self, it: I) {
        for l in it {
            self.push(l);
        }
    }
}

impl<'a> Extend<&'a Label> for Labels {
    fn extend<I: IntoIterator<Item = &'a Label>>(&mut self, it: I) {
        for &l in it {
            self.push(l);
        }
    }
}

impl FromIterator<Label> for Labels {
    fn from_iter<I: IntoIterator<Item = Label>>(it: I) -> Labels {
        let mut l = Labels::default();
        l.extend(it);
        l
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{EdgeKind, NO_CONSTRAINT};

    fn l(kind: EdgeKind, key: u32) -> Label {
        Label {
            kind,
            key,
            constraint: NO_CONSTRAINT,
        }
    }

    #[test]
    fn runs_give_back_each_edges_label() {
        let (a, b, c) = (l(EdgeKind::Rw, 3), l(EdgeKind::Wr, 3), l(EdgeKind::Rw, 4));
        let want = [a, a, b, a, a, a, c, c, b];
        let mut ls = Labels::default();
        ls.push_n(a, 2);
        ls.push(b);
        ls.push_n(c, 0);
        ls.push_n(a, 1);
        ls.push_n(a, 2);
        ls.extend([c, c]);
        let mut more = Labels::default();
        more.push(b);
        ls.append(&more);
        assert_eq!(ls.len(), want.len());
        assert_eq!(ls.num_runs(), 5);
        assert_eq!(ls.to_vec(), want);
        for (e, w) in want.iter().enumerate() {
            assert_eq!(ls[e], *w, "edge {e}");
        }
        assert_eq!(want.iter().copied().collect::<Labels>().to_vec(), want);
    }
}
