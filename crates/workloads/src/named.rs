//! Workloads by name, as `krait run --workload NAME` and the benchmarks choose them: one table,
//! so the command line, the benchmarks and the docs agree on names and sizes.

use crate::{BlindWKv, LostUpdate, Rubis, Tpcc, Twitter, Workload, WriteSkew};

/// Every name [`by_name`] knows, in the order the help text lists them.
pub const NAMES: [&str; 8] = [
    "blindw-rm",
    "blindw-rw",
    "blindw-wm",
    "twitter",
    "rubis",
    "tpcc",
    "write-skew",
    "lost-update",
];

/// A name [`by_name`] does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown workload {0:?}: blindw-rm, blindw-rw, blindw-wm, twitter, rubis, tpcc, write-skew, lost-update")]
pub struct UnknownWorkload(pub String);

/// The workload called `name`, at the size `krait run` uses; `clients` sizes the workloads that
/// pair clients up (write-skew).
pub fn by_name(name: &str, clients: usize) -> Result<Box<dyn Workload>, UnknownWorkload> {
    Ok(match name {
        "blindw-rm" => Box::new(BlindWKv {
            keys: 10_000,
            ops: 8,
            read_only: 0.9,
        }),
        "blindw-rw" => Box::new(BlindWKv {
            keys: 10_000,
            ops: 8,
            read_only: 0.5,
        }),
        "blindw-wm" => Box::new(BlindWKv {
            keys: 10_000,
            ops: 8,
            read_only: 0.1,
        }),
        "twitter" => Box::new(Twitter::new(1000)),
        "rubis" => Box::new(Rubis::new(2000, 20_000)),
        "tpcc" => Box::new(Tpcc::new(3000, 1000)),
        "write-skew" => Box::new(WriteSkew::new(clients)),
        "lost-update" => Box::new(LostUpdate { counters: 4 }),
        w => return Err(UnknownWorkload(w.to_string())),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_name_is_known() {
        for n in super::NAMES {
            assert_eq!(super::by_name(n, 2).unwrap().name(), n);
        }
        assert!(super::by_name("nope", 2).is_err());
    }
}
