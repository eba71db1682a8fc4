//! Tests every application workload (Twitter, RUBiS, TPC-C) must pass alike: thread safety,
//! initial sizes without duplicate keys, and errors reaching the caller.

use crate::testkit::FailTx;
use crate::{Rng, Rubis, Tpcc, Twitter, Workload};

#[test]
fn workloads_are_send_and_sync() {
    fn check<T: Workload + Send + Sync>() {}
    check::<Twitter>();
    check::<Rubis>();
    check::<Tpcc>();
}

#[test]
fn initial_sizes() {
    assert_eq!(Twitter::new(50).initial().len(), 150);
    assert_eq!(Twitter::default().initial().len(), 3000);
    assert_eq!(Rubis::new(20, 200).initial().len(), 420);
    assert_eq!(Rubis::default().initial().len(), 42_000);
    assert_eq!(Tpcc::new(30, 50).initial().len(), 31);
    assert_eq!(Tpcc::default().initial().len(), 31);
    for w in [
        &Twitter::default() as &dyn Workload,
        &Rubis::default(),
        &Tpcc::default(),
    ] {
        let init = w.initial();
        let keys: std::collections::HashSet<&String> = init.iter().map(|(k, _)| k).collect();
        assert_eq!(
            keys.len(),
            init.len(),
            "{}: duplicate initial keys",
            w.name()
        );
    }
}

#[test]
fn errors_propagate() {
    let ws: [&dyn Workload; 3] = [&Twitter::new(20), &Rubis::new(20, 50), &Tpcc::new(10, 50)];
    for w in ws {
        let mut rng = Rng::new(4);
        for t in 0..500 {
            let mut tx = FailTx {
                ops: 0,
                fail_at: 1 + t % 12,
            };
            let res = w.run_txn(0, &mut rng, &mut tx);
            assert_eq!(res.is_err(), tx.ops == tx.fail_at, "{}", w.name());
        }
    }
}
