//! `tscoll sql`: SQL over the collections of a database. Every collection is a table of the
//! same name (`tscoll_datafusion::register_database`): the time field a
//! `Timestamp(Millisecond, UTC)` column, the meta field a struct (`tags.hostname`), the
//! measurement fields typed as docs/arrow.md maps them. Apache DataFusion plans and runs
//! the query; the collections choose, prune and decode buckets for its filters and columns.
//!
//! The result is printed batch by batch as DataFusion yields them, so memory stays bounded
//! whatever the size of the result: DataFusion's operators hold at most `--memory-limit`
//! (sorts and aggregates spill to temporary files beyond it), fjall's block cache is
//! [`SQL_CACHE_BYTES`], and the table format prints pages of [`TABLE_PAGE_ROWS`] rows.

use std::fmt;
use std::io::{self, Write};
use std::process::ExitCode;

use datafusion::arrow::array::{Array, AsArray, OffsetSizeTrait, RecordBatch};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::prelude::SessionContext;
use futures::StreamExt;

use super::{CmdResult, DbArgs, db_options, open_readable_db_with, stdout_result};

/// Rows of each table `--format table` prints: a table needs its column widths before its
/// first row, so a long result is printed as tables of this many rows, each with its header.
pub(crate) const TABLE_PAGE_ROWS: usize = 1000;

/// fjall's block cache for `tscoll sql` (bytes): a scan reads each block once, so a small
/// cache keeps a scan of a large collection from filling the default 256 MiB.
pub(crate) const SQL_CACHE_BYTES: u64 = 32 << 20;

/// How `tscoll sql` prints its result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum SqlFormat {
    /// Tables with a header, for people (one per 1000 rows).
    Table,
    /// One JSON object per row.
    Ndjson,
    /// CSV with a header row; struct columns flattened to dotted names (`tags.hostname`).
    Csv,
}

/// Arguments of `tscoll sql`.
#[derive(Debug, clap::Args)]
#[cfg_attr(
    feature = "cluster",
    command(mut_arg("db", super::cluster::db_unless_cluster))
)]
pub(crate) struct Args {
    #[command(flatten)]
    pub(crate) db: DbArgs,
    /// The cluster to query instead of --db (feature `cluster`).
    #[cfg(feature = "cluster")]
    #[command(flatten)]
    pub(crate) cluster: super::cluster::ClusterArgs,
    /// The SQL statement (DataFusion's dialect), e.g. `SELECT tags.hostname,
    /// date_bin(INTERVAL '1 hour', time) AS hour, avg(usage_user) FROM cpu GROUP BY 1, 2`.
    pub(crate) query: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = SqlFormat::Table)]
    pub(crate) format: SqlFormat,
    /// Run the statement this many times (planning and execution, the database opened and
    /// its tables registered once, the batches dropped as they come) and print the median
    /// and fastest time to stderr; then run it once more to print the result.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) repeat: u32,
    /// The memory (MiB) DataFusion's sorts, aggregates and joins may hold together; sorts
    /// and aggregates spill to temporary files beyond it, other operators fail.
    #[arg(long, value_name = "MIB", default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) memory_limit: u32,
}

/// Runs `tscoll sql`.
///
/// # Errors
/// No database, a statement DataFusion refuses (its message), an execution that fails (a
/// scan, a cast, memory beyond `--memory-limit` in an operator that cannot spill), or a
/// value that cannot be printed (a date beyond the years chrono represents: its row and
/// column). The rows before the error are printed already.
pub(crate) fn run(args: &Args) -> CmdResult<ExitCode> {
    let memory = usize::try_from(args.memory_limit)?.saturating_mul(1 << 20);
    #[cfg(feature = "cluster")]
    if let Some(c) = args.cluster.connect(&args.db)? {
        // The shards' collections as tables of a distributed session whose operators here
        // hold at most `--memory-limit` (each worker bounds its own: `worker --memory-limit`).
        let cluster_ctx = c.block_on(c.cluster.bounded_session(memory))?;
        return answer(&cluster_ctx, &c.runtime, args);
    }
    let ctx = tscoll_datafusion::bounded_context(memory)?;
    let mut options = db_options();
    options.catalog.cache_size_bytes = SQL_CACHE_BYTES;
    let db = open_readable_db_with(&args.db.db, options)?;
    tscoll_datafusion::register_database(&ctx, &db)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().build()?;
    answer(&ctx, &runtime, args)
}

/// Runs the statement of `args` on `ctx` (`--repeat` times, timed, then once printed), the
/// local database's tables or a cluster's.
///
/// # Errors
/// As [`run`]; a worker that fails (named) for a cluster.
fn answer(
    ctx: &SessionContext,
    runtime: &tokio::runtime::Runtime,
    args: &Args,
) -> CmdResult<ExitCode> {
    if args.repeat > 1 {
        let mut times = Vec::with_capacity(args.repeat as usize);
        for _ in 0..args.repeat {
            let start = std::time::Instant::now();
            runtime.block_on(drain(ctx, &args.query))?;
            times.push(start.elapsed().as_secs_f64() * 1000.0);
        }
        times.sort_by(f64::total_cmp);
        errln!(
            "{} runs: median {:.2} ms, fastest {:.2} ms",
            times.len(),
            crate::cmd::median(&times),
            times[0]
        );
    }
    let mut out = io::BufWriter::new(io::stdout().lock());
    runtime.block_on(print(ctx, &args.query, args.format, &mut out))?;
    stdout_result(out.flush())?;
    Ok(ExitCode::SUCCESS)
}

/// Runs `query`, dropping its batches as they come.
async fn drain(ctx: &SessionContext, query: &str) -> CmdResult<()> {
    let mut stream = ctx.sql(query).await?.execute_stream().await?;
    while let Some(batch) = stream.next().await {
        batch?;
    }
    Ok(())
}

/// Runs `query` and writes its batches to `out` in `format` as they come; stops quietly
/// when `out` is closed (`| head`).
async fn print(
    ctx: &SessionContext,
    query: &str,
    format: SqlFormat,
    out: &mut impl Write,
) -> CmdResult<()> {
    let mut stream = ctx.sql(query).await?.execute_stream().await?;
    let mut printer = Printer {
        format,
        rows: 0,
        header_written: false,
        page: Vec::new(),
        page_rows: 0,
        text: Vec::new(),
    };
    while let Some(batch) = stream.next().await {
        printer.push(&batch?)?;
        if !emit(out, &mut printer.text)? {
            return Ok(());
        }
    }
    printer.finish(&stream.schema())?;
    emit(out, &mut printer.text)?;
    Ok(())
}

/// Writes and clears `text`; `false` when `out` is closed (`| head`: the command ends
/// quietly).
fn emit(out: &mut impl Write, text: &mut Vec<u8>) -> CmdResult<bool> {
    let written = out.write_all(text);
    text.clear();
    match written {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(false),
        other => stdout_result(other).map(|()| true),
    }
}

/// The text of a result, batch by batch.
struct Printer {
    format: SqlFormat,
    /// Rows pushed so far.
    rows: usize,
    /// The CSV header is written (or, for tables, a page).
    header_written: bool,
    /// The rows of the table page not printed yet.
    page: Vec<RecordBatch>,
    page_rows: usize,
    /// The text to write next.
    text: Vec<u8>,
}

impl Printer {
    /// Adds the text of `batch` to `self.text` (for a table, once a page is full).
    fn push(&mut self, batch: &RecordBatch) -> CmdResult<()> {
        check_printable(batch, self.rows)?;
        self.rows += batch.num_rows();
        match self.format {
            SqlFormat::Ndjson => {
                let mut w = datafusion::arrow::json::LineDelimitedWriter::new(&mut self.text);
                w.write(batch)?;
                w.finish()?;
            }
            SqlFormat::Csv => self.csv(batch)?,
            SqlFormat::Table => {
                let mut rest = batch.clone();
                while rest.num_rows() > 0 {
                    let take = rest.num_rows().min(TABLE_PAGE_ROWS - self.page_rows);
                    self.page.push(rest.slice(0, take));
                    self.page_rows += take;
                    rest = rest.slice(take, rest.num_rows() - take);
                    if self.page_rows == TABLE_PAGE_ROWS {
                        self.table(&batch.schema())?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Adds what is left after the last batch: the last table page (or the header of an
    /// empty table), the CSV header of an empty result.
    fn finish(&mut self, schema: &SchemaRef) -> CmdResult<()> {
        match self.format {
            SqlFormat::Ndjson => {}
            SqlFormat::Csv if !self.header_written => {
                self.csv(&RecordBatch::new_empty(SchemaRef::clone(schema)))?;
            }
            SqlFormat::Csv => {}
            SqlFormat::Table if self.page_rows > 0 || !self.header_written => self.table(schema)?,
            SqlFormat::Table => {}
        }
        Ok(())
    }

    /// Adds `batch` as CSV rows, its struct columns flattened to dotted names (as `find
    /// --format csv` writes embedded documents), the header before the first.
    fn csv(&mut self, batch: &RecordBatch) -> CmdResult<()> {
        let flat = batch.normalize(".", None)?;
        let mut w = datafusion::arrow::csv::WriterBuilder::new()
            .with_header(!self.header_written)
            .build(&mut self.text);
        w.write(&flat)?;
        self.header_written = true;
        Ok(())
    }

    /// Adds the page as a table and empties it.
    fn table(&mut self, schema: &SchemaRef) -> CmdResult<()> {
        let table = datafusion::arrow::util::pretty::pretty_format_batches_with_schema(
            SchemaRef::clone(schema),
            &self.page,
        )?;
        writeln!(self.text, "{table}")?;
        self.page.clear();
        self.page_rows = 0;
        self.header_written = true;
        Ok(())
    }
}

/// Fails on the first value of `batch` that cannot be written as text — a date or time
/// outside the years chrono represents (about ±262 000), which Arrow's writers would print
/// as an `ERROR: …` string — naming its row in the result (from 1: `before` rows came
/// first) and its column.
fn check_printable(batch: &RecordBatch, before: usize) -> CmdResult<()> {
    for (column, field) in batch.columns().iter().zip(batch.schema().fields()) {
        if let Some((row, e)) = unprintable(column.as_ref()) {
            return Err(format!(
                "row {} of the result, column '{}': a value that cannot be printed: {e}",
                before + row + 1,
                field.name()
            )
            .into());
        }
    }
    Ok(())
}

/// The index and error of the first value of `array` (looking into structs and lists) that
/// Arrow cannot format: only dates and times can fail.
fn unprintable(array: &dyn Array) -> Option<(usize, ArrowError)> {
    match array.data_type() {
        DataType::Struct(_) => {
            // Flattened: a child's values under a null struct are null.
            let (_, children) = array.as_struct().flatten();
            children
                .iter()
                .filter_map(|c| unprintable(c.as_ref()))
                .min_by_key(|(row, _)| *row)
        }
        DataType::List(_) => unprintable_in_list(array.as_list::<i32>()),
        DataType::LargeList(_) => unprintable_in_list(array.as_list::<i64>()),
        t if t.is_temporal() => {
            let options = FormatOptions::new().with_display_error(false);
            let formatter = match ArrayFormatter::try_new(array, &options) {
                Ok(f) => f,
                Err(e) => return Some((0, e)),
            };
            (0..array.len())
                .filter(|&i| array.is_valid(i))
                .find_map(|i| formatter.value(i).write(&mut Discard).err().map(|e| (i, e)))
        }
        _ => None,
    }
}

/// [`unprintable`] of a list: the row of the list that holds the value.
fn unprintable_in_list<O: OffsetSizeTrait>(
    list: &datafusion::arrow::array::GenericListArray<O>,
) -> Option<(usize, ArrowError)> {
    // The values of the rows of `list` (a slice of a list reads part of its values).
    let offsets = list.value_offsets();
    let first = offsets.first().map_or(0, |o| o.as_usize());
    let end = offsets.last().map_or(0, |o| o.as_usize());
    let values = list.values().slice(first, end - first);
    let (value, e) = unprintable(values.as_ref())?;
    let row = offsets
        .partition_point(|o| o.as_usize() <= first + value)
        .saturating_sub(1);
    Some((row, e))
}

/// A `fmt::Write` that keeps nothing: formatting a value only to see whether it fails.
struct Discard;

impl fmt::Write for Discard {
    fn write_str(&mut self, _: &str) -> fmt::Result {
        Ok(())
    }
}
