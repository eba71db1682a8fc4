//! `krait-bench scale`: generated BlindW histories of growing size, checked one-shot, to show
//! how checking time grows with the history (the files are kept for the next run).

use crate::check::CheckArgs;
use crate::common::generate_once;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

// The arguments of `krait-bench scale`.
#[derive(Args)]
pub struct ScaleArgs {
    #[arg(long, default_value = "target/bench-histories")]
    dir: PathBuf,
    /// Sizes in transactions.
    #[arg(long, value_delimiter = ',', default_value = "10000,100000,1000000")]
    sizes: Vec<usize>,
    #[arg(long, default_value = "blindw-rm")]
    workload: String,
}

/// Generates what is missing in `dir`, then prints `krait-bench check`'s table over them.
pub fn run(a: ScaleArgs) -> anyhow::Result<ExitCode> {
    std::fs::create_dir_all(&a.dir)?;
    let mut paths = Vec::new();
    for n in a.sizes {
        let p = a.dir.join(format!("{}-{n}.jsonl", a.workload));
        generate_once(
            &p,
            &[
                "--workload".into(),
                a.workload.clone(),
                "--txns".into(),
                n.to_string(),
            ],
        )?;
        paths.push(p);
    }
    crate::check::run(CheckArgs {
        paths,
        data: None,
        ablation: false,
        timeout: 600.0,
        extra: vec![],
        csv: None,
        read_heavy: false,
        dir: a.dir,
        pause: 0.0,
    })
}
