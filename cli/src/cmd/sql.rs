//! `tscoll sql`: SQL over the collections of a database. Every collection is a table of the
//! same name (`tscoll_datafusion::register_database`): the time field a
//! `Timestamp(Millisecond, UTC)` column, the meta field a struct (`tags.hostname`), the
//! measurement fields typed as docs/arrow.md maps them. Apache DataFusion plans and runs
//! the query; the collections choose, prune and decode buckets for its filters and columns.

use std::process::ExitCode;

use datafusion::prelude::SessionContext;

use super::{CmdResult, DbArgs, open_readable_db};

/// How `tscoll sql` prints its result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum SqlFormat {
    /// A table with a header, for people.
    Table,
    /// One JSON object per row.
    Ndjson,
    /// CSV with a header row.
    Csv,
}

/// Arguments of `tscoll sql`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    pub(crate) db: DbArgs,
    /// The SQL statement (DataFusion's dialect), e.g. `SELECT tags.hostname,
    /// date_bin(INTERVAL '1 hour', time) AS hour, avg(usage_user) FROM cpu GROUP BY 1, 2`.
    pub(crate) query: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = SqlFormat::Table)]
    pub(crate) format: SqlFormat,
    /// Run the statement this many times (planning and execution, the database opened and
    /// its tables registered once) and print the median and fastest time to stderr; the
    /// result is printed once.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) repeat: u32,
}

/// Runs `tscoll sql`.
///
/// # Errors
/// No database, a statement DataFusion refuses (its message), or a scan that fails.
pub(crate) fn run(args: &Args) -> CmdResult<ExitCode> {
    let db = open_readable_db(&args.db.db)?;
    let ctx = SessionContext::new();
    tscoll_datafusion::register_database(&ctx, &db)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().build()?;
    let mut times = Vec::with_capacity(args.repeat as usize);
    let mut batches = Vec::new();
    for _ in 0..args.repeat {
        let start = std::time::Instant::now();
        batches = runtime.block_on(async { ctx.sql(&args.query).await?.collect().await })?;
        times.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    if args.repeat > 1 {
        times.sort_by(f64::total_cmp);
        errln!(
            "{} runs: median {:.2} ms, fastest {:.2} ms",
            times.len(),
            crate::cmd::median(&times),
            times[0]
        );
    }
    let mut out = Vec::new();
    match args.format {
        SqlFormat::Table => {
            let table = datafusion::arrow::util::pretty::pretty_format_batches(&batches)?;
            out.extend_from_slice(format!("{table}\n").as_bytes());
        }
        SqlFormat::Ndjson => {
            let mut w = datafusion::arrow::json::LineDelimitedWriter::new(&mut out);
            w.write_batches(&batches.iter().collect::<Vec<_>>())?;
            w.finish()?;
        }
        SqlFormat::Csv => {
            let mut w = datafusion::arrow::csv::WriterBuilder::new()
                .with_header(true)
                .build(&mut out);
            for b in &batches {
                w.write(b)?;
            }
        }
    }
    outprint!("{}", String::from_utf8_lossy(&out));
    Ok(ExitCode::SUCCESS)
}
