//! `tscoll`: the command-line tool of tscoll, MongoDB-style time-series collections on the
//! fjall LSM.
//!
//! Commands: `create`, `ingest` (NDJSON Extended JSON, JSON arrays, CSV, Parquet), `find`
//! (NDJSON, CSV, Parquet), `aggregate`, `update`, `delete`, `stats`, `list`, `drop`,
//! `compact`, `buckets`, `expire`, `collmod`, `index`, `verify`, `salvage`, `bench` and
//! `demo` (ingests and queries the bundled real data sets); `sql` with the feature `sql`,
//! `worker` and the cluster arguments of the collection commands with the feature `cluster`. Each command lives in its own
//! module under `cmd/`; the input readers are in `input/`, the output writers in `output/`.
#![forbid(unsafe_code)]

mod cmd;
mod input;
mod output;

use std::process::ExitCode;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{Parser, Subcommand};

/// tscoll: MongoDB-style time-series collections as an embeddable storage engine.
#[derive(Debug, Parser)]
#[command(name = "tscoll", version, about, long_about = None)]
struct Cli {
    /// Print the process's peak resident set on stderr as it ends (`tscoll bench memory`).
    #[arg(long, global = true, hide = true)]
    report_peak_rss: bool,
    /// The command to run.
    #[command(subcommand)]
    command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
enum Command {
    /// Create a time-series collection.
    Create(cmd::create::Args),
    /// Ingest NDJSON (MongoDB Extended JSON), JSON array, CSV or Parquet files into a
    /// collection.
    Ingest(cmd::ingest::Args),
    /// Query a collection; prints one relaxed Extended JSON document per line, or CSV or
    /// Parquet (`--format`).
    Find(cmd::find::Args),
    /// Run an aggregation pipeline (`--pipeline`), or group measurements by time window (and
    /// series): count, min, max, sum, avg, first, last.
    Aggregate(cmd::aggregate::Args),
    /// Run SQL (Apache DataFusion) over the collections of a database, each a table; prints
    /// a table, NDJSON or CSV (`--format`). Built with the feature `sql`.
    #[cfg(feature = "sql")]
    Sql(cmd::sql::Args),
    /// Show a collection's statistics, compression ratio and bucketing advice (every
    /// collection's when none is named).
    Stats(cmd::stats::Args),
    /// List the collections with their options, measurements, buckets and bytes.
    List(cmd::list::Args),
    /// Drop a collection with its measurements and indexes.
    Drop(cmd::drop::Args),
    /// Store the write-ahead logs, merge bucket segments and compact the storage's tables.
    Compact(cmd::compact::Args),
    /// Print a collection's buckets in MongoDB's bucket shape.
    Buckets(cmd::buckets::Args),
    /// Run one TTL pass: delete whole buckets past `expireAfterSeconds` (SPEC §10).
    Expire(cmd::expire::Args),
    /// Delete measurements matching a filter (SPEC §11.1).
    Delete(cmd::delete::Args),
    /// Update measurements matching a filter: operators, a replacement (`--one`), upsert
    /// (SPEC §11.2).
    Update(cmd::update::Args),
    /// Change a collection's options: granularity, bucket seconds, expireAfterSeconds (SPEC §12).
    Collmod(cmd::collmod::Args),
    /// Create, drop or list a collection's indexes (`index create|drop|list`).
    Index(cmd::index::Args),
    /// Check every bucket of every collection: segment checksums and decoding, control
    /// records against the data, index entries against buckets. Exit status 2 on damage.
    Verify(cmd::verify::Args),
    /// Copy every readable measurement into a new database (`--to NEWDIR`), with the same
    /// collections and indexes, and list what was lost. Exit status 2 when something was lost.
    Salvage(cmd::salvage::Args),
    /// Serve the database over MongoDB's wire protocol, for mongosh and MongoDB's drivers
    /// (docs/server.md); stops on SIGINT or SIGTERM.
    Serve(cmd::serve::Args),
    /// Serve the database as one shard of a cluster, for the cluster commands
    /// (`--workers`, `--cluster`; docs/scale-out.md); stops on SIGINT or SIGTERM. Built with
    /// the feature `cluster`.
    #[cfg(feature = "cluster")]
    Worker(cmd::worker::Args),
    /// Add, remove or list the users `tscoll serve` authenticates (SCRAM-SHA-256), kept in
    /// the database directory's `tscoll-users.json` (`user add|remove|list`).
    User(cmd::user::Args),
    /// Ingest, inspect and query the bundled real data sets in a temporary database.
    Demo(cmd::demo::Args),
    /// Measure tscoll: `bench codec` compares the codec with pcodec and zstd, `bench ingest`
    /// inserts a TSBS-like workload from N threads, `bench gen` writes that workload as NDJSON or CSV,
    /// `bench query` times queries on it.
    Bench(cmd::bench::Args),
}

impl Command {
    /// The database options of a command that opens a database.
    fn db_args(&self) -> Option<&cmd::DbArgs> {
        Some(match self {
            Command::Create(a) => &a.db,
            Command::Ingest(a) => &a.db,
            Command::Find(a) => &a.db,
            Command::Aggregate(a) => &a.db,
            #[cfg(feature = "sql")]
            Command::Sql(a) => &a.db,
            Command::Stats(a) => &a.db,
            Command::List(a) => &a.db,
            Command::Drop(a) => &a.db,
            Command::Compact(a) => &a.db,
            Command::Buckets(a) => &a.db,
            Command::Expire(a) => &a.db,
            Command::Delete(a) => &a.db,
            Command::Update(a) => &a.db,
            Command::Collmod(a) => &a.db,
            Command::Index(a) => a.db(),
            Command::Verify(a) => &a.db,
            Command::Salvage(a) => &a.db,
            Command::Serve(a) => &a.db,
            #[cfg(feature = "cluster")]
            Command::Worker(a) => &a.db,
            Command::Demo(_) | Command::Bench(_) | Command::User(_) => return None,
        })
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(db) = cli.command.db_args() {
        db.apply();
    }
    let result = match cli.command {
        Command::Create(args) => cmd::create::run(&args),
        Command::Ingest(args) => cmd::ingest::run(&args),
        Command::Find(args) => cmd::find::run(&args),
        Command::Aggregate(args) => cmd::aggregate::run(&args),
        #[cfg(feature = "sql")]
        Command::Sql(args) => cmd::sql::run(&args),
        Command::Stats(args) => cmd::stats::run(&args),
        Command::List(args) => cmd::list::run(&args),
        Command::Drop(args) => cmd::drop::run(&args),
        Command::Compact(args) => cmd::compact::run(&args),
        Command::Buckets(args) => cmd::buckets::run(&args),
        Command::Expire(args) => cmd::expire::run(&args),
        Command::Delete(args) => cmd::delete::run(&args),
        Command::Update(args) => cmd::update::run(&args),
        Command::Collmod(args) => cmd::collmod::run(&args),
        Command::Index(args) => cmd::index::run(&args),
        Command::Verify(args) => cmd::verify::run(&args),
        Command::Salvage(args) => cmd::salvage::run(&args),
        Command::Serve(args) => cmd::serve::run(&args),
        #[cfg(feature = "cluster")]
        Command::Worker(args) => cmd::worker::run(&args),
        Command::User(args) => cmd::user::run(&args),
        Command::Demo(args) => cmd::demo::run(&args),
        Command::Bench(args) => cmd::bench::run(&args),
    };
    let code = match result {
        Ok(code) => code,
        Err(e) => {
            cmd::write_stderr(format_args!("tscoll: error: {e}"), true);
            ExitCode::FAILURE
        }
    };
    if cli.report_peak_rss {
        let peak = cmd::report::proc_kb_line("/proc/self/status", "VmHWM").unwrap_or(0);
        cmd::write_stderr(
            format_args!("{}{peak}", cmd::bench::memory::PEAK_RSS_LINE),
            true,
        );
    }
    code
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
