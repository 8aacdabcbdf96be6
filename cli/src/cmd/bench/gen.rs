//! `tscoll bench gen`: writes the TSBS "cpu-only" workload of `tscoll bench ingest` as NDJSON
//! (MongoDB relaxed Extended JSON, one measurement per line, time-major), for loading with
//! `tscoll ingest` or `mongoimport`, or with `--format csv` as CSV with a header line (time,
//! the 10 tags, the 10 fields), for tools that read CSV such as DuckDB.

use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use tscoll_benches::tsbs::{Workload, write_csv, write_ndjson};

use crate::cmd::bench::ingest::WorkloadArgs;
use crate::cmd::{CmdResult, stdout_result};

/// Arguments of `tscoll bench gen`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The generated data.
    #[command(flatten)]
    pub(crate) workload: WorkloadArgs,
    /// Output format: ndjson (relaxed Extended JSON, one document per line) or csv (a header
    /// line, then `time` as RFC 3339, the 10 tags, the 10 fields).
    #[arg(long, value_enum, default_value_t = GenFormat::Ndjson)]
    pub(crate) format: GenFormat,
    /// Output file (plain, not compressed); default: stdout.
    #[arg(long, value_name = "FILE")]
    pub(crate) out: Option<PathBuf>,
}

/// `--format` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum GenFormat {
    /// Newline-delimited relaxed Extended JSON.
    Ndjson,
    /// CSV with a header line.
    Csv,
}

impl GenFormat {
    /// Writes `workload` to `out` in this format.
    fn write(self, workload: &Workload, out: impl Write) -> io::Result<()> {
        match self {
            GenFormat::Ndjson => write_ndjson(workload, out),
            GenFormat::Csv => write_csv(workload, out),
        }
    }
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
        args.format
            .write(&workload, file)
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
        errln!(
            "{}: {} measurements ({} hosts x {} rows)",
            path.display(),
            workload.measurements(),
            workload.hosts,
            workload.steps()
        );
    } else {
        stdout_result(args.format.write(&workload, std::io::stdout().lock()))?;
    }
    Ok(ExitCode::SUCCESS)
}
