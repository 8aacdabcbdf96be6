//! `tscoll bench gen`: writes the TSBS "cpu-only" workload of `tscoll bench ingest` as NDJSON
//! (MongoDB relaxed Extended JSON, one measurement per line, time-major), for loading with
//! `tscoll ingest` or `mongoimport`.

use std::fs::File;
use std::path::PathBuf;
use std::process::ExitCode;

use tscoll_benches::tsbs::write_ndjson;

use crate::cmd::bench::ingest::WorkloadArgs;
use crate::cmd::{CmdResult, stdout_result};

/// Arguments of `tscoll bench gen`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The generated data.
    #[command(flatten)]
    pub(crate) workload: WorkloadArgs,
    /// Output file (plain NDJSON); default: stdout.
    #[arg(long, value_name = "FILE")]
    pub(crate) out: Option<PathBuf>,
}

/// Runs `tscoll bench gen`.
///
/// # Errors
/// The output file cannot be created or written, or stdout fails (a closed pipe ends the
/// command quietly).
pub(crate) fn run(args: &Args) -> CmdResult<ExitCode> {
    let workload = args.workload.workload();
    if let Some(path) = &args.out {
        let file =
            File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        write_ndjson(&workload, file).map_err(|e| format!("writing {}: {e}", path.display()))?;
        eprintln!(
            "{}: {} measurements ({} hosts x {} rows)",
            path.display(),
            workload.measurements(),
            workload.hosts,
            workload.steps()
        );
    } else {
        stdout_result(write_ndjson(&workload, std::io::stdout().lock()))?;
    }
    Ok(ExitCode::SUCCESS)
}
