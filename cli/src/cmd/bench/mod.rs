//! `tscoll bench`: measurements of tscoll's speed and size, each a subcommand: `codec`
//! (the codec against pcodec and zstd), `ingest` (the TSBS cpu-only ingest), `gen` (that
//! workload as NDJSON or CSV), `query` (query latency on that workload) and `memory` (the
//! peak memory of reads of that workload, against a bound).

pub(crate) mod codec;
pub(crate) mod r#gen;
pub(crate) mod ingest;
pub(crate) mod memory;
pub(crate) mod query;
pub(crate) mod record_batch;

use std::process::ExitCode;

use super::CmdResult;

/// Arguments of `tscoll bench`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// What to measure.
    #[command(subcommand)]
    pub(crate) what: What,
}

/// The benchmarks.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum What {
    /// The codec on real columns cut into 1000-value buckets, side by side with pcodec and
    /// zstd: bits per value and encode/decode MB/s by column kind.
    Codec(codec::Args),
    /// TSBS's "cpu-only" workload (hosts with 10 tags, 10 CPU fields every 10 s) inserted
    /// into one collection by T threads: measurements/s, disk bytes, write amplification,
    /// peak RSS.
    Ingest(ingest::Args),
    /// Write the TSBS "cpu-only" workload of `bench ingest` as NDJSON (relaxed Extended JSON)
    /// or CSV.
    Gen(r#gen::Args),
    /// Query latency on the TSBS "cpu-only" workload: q1 (the 10 fields of host_42 from 12:00
    /// to 18:00), q2 (max(usage_user) per host per hour), q3 (the average of the 10 fields per
    /// host per hour), each checked against the generated data (median and p90 of N runs).
    Query(query::Args),
    /// Peak memory of reads whose results outgrow memory (find, find sorted on a field,
    /// pipelines with $match, $sort, $group, $setWindowFields, and SQL when built with it),
    /// each run as a child process over the TSBS "cpu-only" workload and checked against a
    /// bound (exit status 1 past it).
    Memory(memory::Args),
}

/// Runs `tscoll bench`.
///
/// # Errors
/// As the chosen benchmark.
pub(crate) fn run(args: &Args) -> CmdResult<ExitCode> {
    match &args.what {
        What::Codec(a) => codec::run(a),
        What::Ingest(a) => ingest::run(a),
        What::Gen(a) => r#gen::run(a),
        What::Query(a) => query::run(a),
        What::Memory(a) => memory::run(a),
    }
}

/// The database directory of a benchmark: `--db DIR` when given, else a new temporary
/// directory named after `prefix` (returned too, so that it lives as long as the run).
///
/// # Errors
/// The temporary directory cannot be created.
pub(crate) fn bench_dir(
    db: Option<&std::path::Path>,
    prefix: &str,
) -> CmdResult<(Option<tempfile::TempDir>, std::path::PathBuf)> {
    if let Some(dir) = db {
        return Ok((None, dir.to_path_buf()));
    }
    let temp = tempfile::Builder::new().prefix(prefix).tempdir()?;
    let dir = temp.path().to_path_buf();
    Ok((Some(temp), dir))
}
