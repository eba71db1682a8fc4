//! Chaining read facts block by block, each block as soon as it is sorted, against sorting them
//! all first and chaining them in one pass: the same edges with the same labels, gates, chains,
//! constraints and left-out edges, on histories of several key blocks (one with fractured
//! reads).

use crate::graph::{self, Built, Spare};
use crate::Options;
use krait_workloads::{blindw, BlindW};

/// What chaining left in the graph, written out to compare.
fn shown(b: &Built) -> String {
    format!(
        "{:?}\n{:?}\n{} {:?}\n{:?}\n{:?}\n{:?}\n{}",
        b.edges,
        b.labels,
        b.num_nodes,
        b.gate_of,
        b.chain_recs,
        b.chain_keys,
        b.constraints,
        b.spare.left_out
    )
}

#[test]
fn chaining_block_by_block_is_chaining_all_at_once() {
    for (keys, fractured, seed) in [(1000, 0.0, 1), (700, 0.03, 2), (300, 0.0, 3)] {
        let h = blindw(&BlindW {
            sessions: 8,
            keys,
            ops_per_txn: 20,
            read_only: 0.8,
            fractured_reads: fractured,
            seed,
            ..BlindW::wm(4000)
        });
        let r = krait_history::resolve(&h);
        let opts = Options::default();
        let chained = |all_first: bool| {
            let (mut b, mut f) = graph::build(&h, &r, &opts, &[], Spare::new(false))
                .unwrap_or_else(|_| panic!("seed {seed}: no finding before chaining"));
            assert!(
                f.read_blocks.is_some(),
                "seed {seed}: facts laid out by block"
            );
            if all_first {
                f.sort_reads();
            }
            super::add_chains(&mut b, f, &opts);
            shown(&b)
        };
        let by_block = chained(false);
        // Several blocks' worth of edges, gates and chains were compared.
        assert!(by_block.lines().count() == 7 && by_block.len() > 1_000_000);
        assert_eq!(by_block, chained(true), "seed {seed}");
    }
}
