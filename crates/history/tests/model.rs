//! The model at scale: the builder's arrays stay compact.

use krait_history::{OpKind, TxnStatus};

#[test]
fn million_transactions_fit_in_memory() {
    // 1M transactions of 8 operations (half reads, half writes), built through the same builder
    // the readers use: the model, its indexes included, stays far below 2 GB.
    let mut b = krait_history::HistoryBuilder::new();
    let keys: Vec<u32> = (0..10_000).map(|i| b.key(&format!("k{i}"))).collect();
    let mut v = 1u64;
    for s in 0..24u64 {
        b.begin_session(format!("s{s}"));
        for t in 0..1_000_000 / 24 + 1 {
            for i in 0..8u64 {
                let k = keys[((v * 7919 + i) % 10_000) as usize];
                if t % 2 == 0 {
                    assert!(b.op(OpKind::Write, k, v).is_none());
                } else {
                    b.op(OpKind::Read, k, v - 8);
                }
                v += 1;
            }
            b.finish_txn(
                s << 32 | t as u64,
                TxnStatus::Committed,
                krait_history::NO_TIME,
                krait_history::NO_TIME,
            )
            .unwrap();
        }
    }
    let h = b.finish();
    assert!(h.num_txns() >= 1_000_000);
    let bytes = h.heap_bytes();
    assert!(bytes < 400 << 20, "{} MB", bytes >> 20);
}
