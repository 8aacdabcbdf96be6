//! `tscoll ingest`: loads NDJSON (MongoDB Extended JSON) or CSV files into a collection.
//!
//! Lines are read into batches of `--batch-size` measurements. A batch of NDJSON lines or
//! CSV records is parsed straight into Arrow columns and goes to `insert_record_batch` when
//! the columns say exactly what documents would ([`crate::input::columns`]); any other batch
//! is parsed line by line into documents for `insert_many`. A bad line (malformed JSON, a CSV row that does not map) never reaches the
//! engine; a measurement the engine rejects is mapped back from its index in the batch to its
//! line. Both are reported as `FILE:LINE: reason` on stderr. With `--ordered` (the default)
//! ingestion stops at the first bad line, keeping everything before it; with `--unordered`
//! every good line is stored. Either way the exit code is non-zero when a line was bad.
//! An input that cannot be read to its end (a truncated `.gz`, an I/O error) keeps every
//! complete line before the failure, stops the run there and fails it with
//! `FILE:LINE: reason`, after the usual summary.
//! With `--report-acks`, every acknowledged batch is announced on stdout as
//! `ack FIRST LAST INSERTED` (`docs/durability.md`).
//!
//! **Targets.** The batches go to a [`Target`]: the collection of the database, or, with the
//! feature `cluster` and `--workers`/`--cluster`, a cluster's collection whose shards each
//! store their part (`cmd/cluster_ingest.rs`); a shard whose part fails as a whole is
//! reported with the batch's lines, the other shards' parts stored.
//!
//! **Two threads.** Reading, decompressing and parsing run on a thread of their own
//! ([`crate::input::batches`]), one batch ahead of the calling thread, which inserts (the
//! engine's background work aside). For a file, the progress bar shows the share of its bytes
//! read (as stored, before decompression), with an ETA.
//!
//! **Figures.** After the last file the database is closed and one line gives its disk space
//! and the measurements it holds (every collection's, earlier ingests' too), and the bytes
//! per stored measurement. With `--verbose` (or `--json`), the figures of
//! `tscoll bench ingest` are printed instead ([`crate::cmd::report`]): measurements/s and field
//! values/s over the wall time of reading, parsing and inserting (the time spent inside
//! `insert_many` is shown apart), bytes per measurement on disk (the whole database
//! directory after `close`, per measurement it holds), write amplification and peak RSS; on stderr as a table, or with
//! `--json` as one JSON object on stdout.

use std::fmt::Write as _;
use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use ::parquet::arrow::arrow_reader::ParquetRecordBatchReader;
use arrow_array::{RecordBatch, RecordBatchReader};
use bson::Document;
use indicatif::{ProgressBar, ProgressState, ProgressStyle};
use tscoll_engine::arrow::RecordBatchOptions;
use tscoll_engine::{
    Collection, CollectionSpec, Database, Durability, Error, InsertOptions, InsertResult,
    position_ranges,
};

use super::report::{Ingest, Meter};
use super::{
    CmdError, CmdResult, DbArgs, extjson_value, human_seconds, open_collection, to_extjson,
};
use crate::input::batches::{self, Batch, Fields, ParquetMapping, Source};
use crate::input::csv::{CsvMapping, CsvReader, parse_column_list, parse_type_list};
use crate::input::ndjson::NdjsonLines;
use crate::input::open::{ReadProgress, open_input, strip_compression_suffix};
use crate::input::times::TimeFormat;
use crate::input::{Position, Record, describe_read_error};

/// Arguments of `tscoll ingest`.
#[derive(Debug, clap::Args)]
#[cfg_attr(
    feature = "cluster",
    command(mut_arg("db", super::cluster::db_unless_cluster))
)]
pub(crate) struct Args {
    #[command(flatten)]
    pub(crate) db: DbArgs,
    /// The cluster to ingest into, each measurement sent to its shard (feature `cluster`).
    #[cfg(feature = "cluster")]
    #[command(flatten)]
    pub(crate) cluster: super::cluster::ClusterArgs,
    /// Collection name (create it first with `tscoll create`).
    pub(crate) coll: String,
    /// Input files: NDJSON or a JSON array of documents (`.ndjson`/`.json`, detected by
    /// the first byte), or `.csv` (plain or `.gz`/`.zst`/`.xz`), or `.parquet`; `-` or
    /// none = stdin.
    #[arg(value_name = "FILE")]
    pub(crate) files: Vec<String>,
    /// Accepted for `mongoimport` users: a JSON array is read whether or not it is given.
    #[arg(long = "json-array", alias = "jsonArray")]
    pub(crate) json_array: bool,
    /// Input format; `auto` = Parquet for `*.parquet` or input starting with Parquet's
    /// magic bytes, CSV for `*.csv[.gz|.zst|.xz]`, NDJSON otherwise.
    #[arg(long, value_enum, default_value_t = Format::Auto)]
    pub(crate) format: Format,
    #[command(flatten)]
    pub(crate) settings: IngestArgs,
    #[command(flatten)]
    pub(crate) csv: CsvArgs,
    /// After the ingest, print the bucket catalog statistics of this run (MongoDB's
    /// `serverStatus.bucketCatalog`, SPEC §8.2) as one JSON line on stdout:
    /// `{"bucketCatalog": {"numBuckets": …, "memoryUsage": …, "numCommits": …, …}}`.
    #[arg(long)]
    pub(crate) stats: bool,
    /// Print the figures of the ingest as one JSON object on stdout (instead of the table
    /// on stderr): the keys of `bench ingest --json`, plus `insert_many_seconds`,
    /// `close_seconds`, `rejected` and `bucket_catalog`.
    #[arg(long, conflicts_with = "report_acks")]
    pub(crate) json: bool,
    /// Print the table of the ingest's figures on stderr (throughput, disk bytes, write
    /// amplification, peak RSS, ...); by default one line per input and one for the disk.
    #[arg(long, conflicts_with = "json")]
    pub(crate) verbose: bool,
    /// After `close`, compact the database (`Database::compact`: memtables flushed to tables,
    /// superseded control records and merged-away segments dropped), so that the disk bytes
    /// reported are those of the data as it stays; counted in the close time.
    #[arg(long)]
    pub(crate) compact: bool,
}

/// Input formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// By file name.
    Auto,
    /// Newline-delimited MongoDB Extended JSON.
    Ndjson,
    /// CSV with a header line.
    Csv,
    /// Apache Parquet (a file, or stdin copied to a temporary file).
    Parquet,
}

/// How measurements are inserted.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct IngestArgs {
    /// Stop at the first bad line, keeping everything before it (default).
    #[arg(long, overrides_with = "unordered")]
    pub(crate) ordered: bool,
    /// Store every good line and report every bad one.
    #[arg(long, overrides_with = "ordered")]
    pub(crate) unordered: bool,
    /// When an insert is acknowledged: buffered (in the process's journal buffer; survives a
    /// clean exit), flush (written to the OS; survives a crash) or sync (fsync'd; survives
    /// power loss). See docs/durability.md.
    #[arg(long, value_enum, default_value_t = DurabilityArg::Buffered)]
    pub(crate) durability: DurabilityArg,
    /// Measurements per `insert_many` call.
    #[arg(long, value_name = "N", default_value_t = 5000,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) batch_size: u32,
    /// Print `ack FIRST LAST INSERTED` on stdout, flushed at once, after each `insert_many`
    /// call returns: the batch of lines FIRST..=LAST of the current input (line numbers of
    /// that file) is acknowledged with INSERTED measurements stored, as durable as
    /// `--durability` says (`docs/durability.md`).
    #[arg(long)]
    pub(crate) report_acks: bool,
}

impl Default for IngestArgs {
    fn default() -> Self {
        IngestArgs {
            ordered: true,
            unordered: false,
            durability: DurabilityArg::Buffered,
            batch_size: 5000,
            report_acks: false,
        }
    }
}

impl IngestArgs {
    /// The engine's insert options.
    fn insert_options(&self) -> InsertOptions {
        InsertOptions {
            ordered: !self.unordered,
            durability: self.durability.into(),
        }
    }
}

/// `--durability` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum DurabilityArg {
    /// In the process's journal buffer: survives a clean exit, not a crash.
    Buffered,
    /// Written to the OS before acknowledging: survives a process crash.
    Flush,
    /// fsync'd before acknowledging: survives a crash and power loss (SPEC ).
    Sync,
}

impl From<DurabilityArg> for Durability {
    fn from(d: DurabilityArg) -> Durability {
        match d {
            DurabilityArg::Buffered => Durability::Buffered,
            DurabilityArg::Flush => Durability::Flush,
            DurabilityArg::Sync => Durability::Sync,
        }
    }
}

/// The CSV column mapping options.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct CsvArgs {
    /// CSV column holding the time. Default = the collection's time field name.
    #[arg(long, value_name = "COLUMN")]
    pub(crate) csv_time_column: Option<String>,
    /// How the time column is written: rfc3339 (also `2016-05-02 10:00:00` and bare dates,
    /// UTC), epoch-s, epoch-ms, epoch-us, epoch-ns or a strftime format (as --time-format).
    #[arg(long, value_name = "FMT", default_value = "rfc3339")]
    pub(crate) csv_time_format: String,
    /// How times are written in a text input (NDJSON, CSV): rfc3339 (also
    /// `2016-05-02 10:00:00` and bare dates, UTC), epoch-s, epoch-ms, epoch-us, epoch-ns, or a
    /// strftime format such as '%d/%m/%Y %H:%M:%S' (UTC unless it has %z). NDJSON: a time
    /// field that is a string, or a number for the epoch formats, is read so (a date stays a
    /// date). CSV: the same as --csv-time-format.
    #[arg(long, value_name = "FMT", conflicts_with = "csv_time_format")]
    pub(crate) time_format: Option<String>,
    /// Comma-separated columns that form the meta object (stored under the meta field; a
    /// column `<metaField>.key`, as `find --format csv` writes, is stored as `key`). Their
    /// cells are strings unless --csv-types types them.
    #[arg(long, value_name = "A,B", value_delimiter = ',')]
    pub(crate) csv_meta_columns: Vec<String>,
    /// Comma-separated measurement columns to keep, each `COLUMN` or `COLUMN=FIELD` to rename.
    /// Default = every column but the time and meta columns.
    #[arg(long, value_name = "A,B=X")]
    pub(crate) csv_columns: Option<String>,
    /// CSV field delimiter (one ASCII character).
    #[arg(long, value_name = "CHAR", default_value_t = ',')]
    pub(crate) csv_delimiter: char,
    /// Types of CSV columns, `COLUMN=TYPE,...` with TYPE one of auto, string, int32, int64,
    /// double, boolean, date, date_ms (default auto: numbers by their text, else strings;
    /// string for meta columns).
    #[arg(long, value_name = "A=TYPE,...")]
    pub(crate) csv_types: Option<String>,
    /// CSV headers are `name.type()` (mongoimport's `--columnsHaveTypes`), e.g.
    /// `temp.double(),ok.boolean(),day.date(2006-01-02)`.
    #[arg(long, alias = "columnsHaveTypes")]
    pub(crate) csv_columns_have_types: bool,
}

/// The options as clap leaves them when none is given (the demo's): clap's own defaults,
/// so that no option counts as given.
impl Default for CsvArgs {
    fn default() -> Self {
        #[derive(clap::Parser)]
        struct NoneGiven {
            #[command(flatten)]
            csv: CsvArgs,
        }
        <NoneGiven as clap::Parser>::try_parse_from(["tscoll"])
            .map(|n| n.csv)
            .expect("every CSV option has a default")
    }
}

impl CsvArgs {
    /// Whether any CSV option was given (then an input without a known extension, such as
    /// stdin, is read as CSV).
    fn any(&self) -> bool {
        self.given().iter().any(|(_, given)| *given)
    }

    /// Each CSV option (its long name) and whether it was given.
    fn given(&self) -> [(&'static str, bool); 7] {
        [
            ("--csv-time-column", self.csv_time_column.is_some()),
            ("--csv-time-format", self.csv_time_format != "rfc3339"),
            ("--csv-meta-columns", !self.csv_meta_columns.is_empty()),
            ("--csv-columns", self.csv_columns.is_some()),
            ("--csv-delimiter", self.csv_delimiter != ','),
            ("--csv-types", self.csv_types.is_some()),
            ("--csv-columns-have-types", self.csv_columns_have_types),
        ]
    }
}

/// What one ingestion did.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(crate) struct Summary {
    /// Measurements stored.
    pub(crate) inserted: u64,
    /// Bad lines reported (malformed or rejected by the engine).
    pub(crate) rejected: u64,
    /// Whether `--ordered` stopped ingestion at a bad line.
    pub(crate) stopped: bool,
    /// Wall-clock seconds.
    pub(crate) seconds: f64,
    /// Seconds spent inside `insert_many` (the rest of `seconds` is reading and parsing).
    pub(crate) insert_seconds: f64,
    /// Field values stored: the fields of the stored measurements but the time and meta
    /// fields.
    pub(crate) field_values: u64,
}

impl Summary {
    /// Adds the figures of one input to these totals (`stopped` aside).
    pub(crate) fn add(&mut self, one: &Summary) {
        self.inserted += one.inserted;
        self.rejected += one.rejected;
        self.seconds += one.seconds;
        self.insert_seconds += one.insert_seconds;
        self.field_values += one.field_values;
    }

    /// Measurements stored per second.
    pub(crate) fn rate(&self) -> f64 {
        let inserted = self.inserted as f64;
        inserted / self.seconds.max(1e-9)
    }

    /// The summary line: inserted, rejected, seconds, measurements/s.
    pub(crate) fn line(&self, label: &str) -> String {
        format!(
            "{label}: {} measurements inserted, {} rejected, {:.2} s, {:.0} measurements/s{}",
            self.inserted,
            self.rejected,
            self.seconds,
            self.rate(),
            if self.stopped {
                " (stopped at the first bad line: --ordered)"
            } else {
                ""
            }
        )
    }
}

/// Runs `tscoll ingest`.
///
/// # Errors
/// The database or collection cannot be opened, an input cannot be opened or read to its
/// end (reported after the summary, with what was read before stored), the CSV mapping
/// does not fit the header, or the engine fails as a whole (not per measurement).
pub(crate) fn run(args: &Args) -> CmdResult<ExitCode> {
    #[cfg(feature = "cluster")]
    if let Some(c) = args.cluster.connect(&args.db)? {
        return super::cluster_ingest::run(&c, args);
    }
    let (db, coll) = open_collection(&args.db.db, &args.coll)?;
    let meter = Meter::start();
    let (total, failure) = ingest_inputs(&coll, args, !args.json)?;
    let catalog = catalog_stats_document(&db);
    let closing = Instant::now();
    if let Err(e) = db.close() {
        if let Some(failure) = failure {
            errln!("tscoll: error: {failure}");
        }
        return Err(format!("closing {}: {e}", args.db.db.display()).into());
    }
    if args.compact {
        db.compact()
            .map_err(|e| format!("compacting {}: {e}", args.db.db.display()))?;
    }
    let close_seconds = closing.elapsed().as_secs_f64();
    // Counted once every row is stored: a count while buckets are open copies their rows
    // (a query's snapshot of memory), which would add a copy of the catalog to the peak RSS.
    let stored = stored_measurements(&db)?;
    // Disk bytes of the database as a closed one holds them (fjall removes the files a
    // compaction replaced once no version of the tree refers to them).
    drop(coll);
    drop(db);
    let report = meter.finish(
        &args.db.db,
        Ingest {
            measurements: total.inserted,
            stored,
            field_values: total.field_values,
            seconds: total.seconds,
            durability: args.settings.durability,
            threads: 2,
            cpu_excluded_seconds: 0.0,
        },
    )?;
    if args.json {
        let mut map = report.json();
        map.insert(
            "insert_many_seconds".to_owned(),
            total.insert_seconds.into(),
        );
        map.insert("close_seconds".to_owned(), close_seconds.into());
        map.insert("rejected".to_owned(), total.rejected.into());
        let catalog = match catalog.get_document("bucketCatalog") {
            Ok(d) => extjson_value(&bson::Bson::Document(d.clone())),
            Err(_) => serde_json::Value::Null,
        };
        map.insert("bucket_catalog".to_owned(), catalog);
        outln!("{}", serde_json::Value::Object(map));
    } else if !args.verbose {
        if total.inserted > 0 {
            errln!(
                "{}: {} on disk for the {stored} measurements it holds, {:.2} bytes per stored \
                 measurement (--verbose for every figure)",
                args.db.db.display(),
                super::human_bytes(report.disk_bytes),
                report.bytes_per_measurement()
            );
        }
        if args.stats {
            outln!("{}", to_extjson(catalog));
        }
    } else {
        let mut table = report.table();
        table.note(
            "seconds",
            format!(
                "reading, parsing and inserting, one after the other: {:.3} s in \
                 insert_many, {:.3} s outside it (reading and parsing lines, building and \
                 freeing documents)",
                total.insert_seconds,
                (total.seconds - total.insert_seconds).max(0.0)
            ),
        );
        table.insert_after(
            "field values/s",
            "close",
            format!(
                "{} (merging open buckets, fsync{}; not in seconds)",
                human_seconds(close_seconds),
                if args.compact { ", compaction" } else { "" }
            ),
        );
        table.note(
            "disk bytes",
            format!("the whole database directory {}", args.db.db.display()),
        );
        table.note(
            "threads",
            "reading and parsing on one thread, inserting on another".to_owned(),
        );
        errprint!("{table}");
        if args.stats {
            outln!("{}", to_extjson(catalog));
        }
    }
    if let Some(failure) = failure {
        return Err(failure);
    }
    Ok(if total.rejected > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Where an ingest stores what it reads: a collection of the database, or a cluster's
/// collection (`cmd::cluster_ingest`, feature `cluster`), whose shards may each fail apart.
pub(crate) trait Target {
    /// The collection's options (its time and meta fields map the input).
    fn spec(&self) -> CollectionSpec;

    /// Inserts `docs` (as `Collection::insert_many`); positions in the outcome index `docs`.
    ///
    /// # Errors
    /// The insert failed as a whole.
    fn insert_documents(&self, docs: &[Document], options: &InsertOptions)
    -> Result<Stored, Error>;

    /// Inserts the rows of `batch` (as `Collection::insert_record_batch`); positions in the
    /// outcome index its rows.
    ///
    /// # Errors
    /// The insert failed as a whole.
    fn insert_batch(&self, batch: &RecordBatch, options: &InsertOptions) -> Result<Stored, Error>;
}

/// What an insert into a [`Target`] stored.
#[derive(Debug, Default)]
pub(crate) struct Stored {
    /// Measurements stored.
    pub(crate) inserted: usize,
    /// Measurements rejected: position and reason (with MongoDB's category), in input order.
    pub(crate) rejected: Vec<(usize, String)>,
    /// Parts that failed as a whole (a cluster's shard whose worker is down): what failed
    /// (naming the worker), the measurements sent to it, and how many of them were stored.
    pub(crate) failed: Vec<FailedPart>,
}

/// A part of an insert that failed as a whole.
#[derive(Debug)]
pub(crate) struct FailedPart {
    /// Why, naming the part (`shard 1 (HOST:PORT): worker ...: ...`).
    pub(crate) reason: String,
    /// Measurements of the part.
    pub(crate) sent: usize,
    /// Of those, stored before the failure.
    pub(crate) inserted: usize,
}

impl From<InsertResult> for Stored {
    fn from(result: InsertResult) -> Stored {
        Stored {
            inserted: result.inserted,
            rejected: result
                .errors
                .into_iter()
                .map(|e| (e.index, format!("{} ({})", e.message, e.code.name())))
                .collect(),
            failed: Vec::new(),
        }
    }
}

impl Target for Collection {
    fn spec(&self) -> CollectionSpec {
        Collection::spec(self)
    }

    fn insert_documents(
        &self,
        docs: &[Document],
        options: &InsertOptions,
    ) -> Result<Stored, Error> {
        self.insert_many(docs, options)
            .or_else(Error::into_insert_result)
            .map(Stored::from)
    }

    fn insert_batch(&self, batch: &RecordBatch, options: &InsertOptions) -> Result<Stored, Error> {
        self.insert_record_batch(batch, options)
            .or_else(Error::into_insert_result)
            .map(Stored::from)
    }
}

/// Ingests every input of `args` into `target`, one after another, printing each input's
/// summary line (and the total's, for several) when `print` is set; stops after an input
/// that failed or stopped (ordered, at a rejected measurement). The total, and the error
/// that ended an input early (reported by the caller after the summary).
///
/// # Errors
/// As [`ingest_input`].
pub(crate) fn ingest_inputs(
    target: &dyn Target,
    args: &Args,
    print: bool,
) -> CmdResult<(Summary, Option<CmdError>)> {
    let mut total = Summary::default();
    let mut failure = None;
    let files = input_files(args);
    for file in files {
        let (summary, error) = ingest_input(target, file, args.format, &args.settings, &args.csv)?;
        if print {
            errln!("{}", summary.line(input_label(file)));
        }
        total.add(&summary);
        if error.is_some() {
            failure = error;
            break;
        }
        if summary.stopped {
            total.stopped = true;
            break;
        }
    }
    if files.len() > 1 && print {
        errln!("{}", total.line("total"));
    }
    Ok((total, failure))
}

/// The inputs of `args`: its files, or stdin (`-`, announced when it is a terminal).
pub(crate) fn input_files(args: &Args) -> &[String] {
    if args.files.is_empty() {
        if io::stdin().is_terminal() {
            errln!(
                "tscoll: reading measurements from stdin (end with Ctrl-D; give files to read them)"
            );
        }
        std::slice::from_ref(&*DASH)
    } else {
        &args.files
    }
}

/// The input `-`: stdin.
static DASH: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| "-".to_owned());

/// How input `file` is named in messages (`<stdin>` for `-`).
pub(crate) fn input_label(file: &str) -> &str {
    if file == "-" { "<stdin>" } else { file }
}

/// The measurements `db` holds, in every collection (counted from the buckets' control
/// records).
///
/// # Errors
/// Storage errors.
pub(crate) fn stored_measurements(db: &Database) -> CmdResult<u64> {
    let mut n = 0;
    for (name, _) in db.list_collections()? {
        n += db.collection(&name)?.count(&Document::new())?;
    }
    Ok(n)
}

/// `{"bucketCatalog": {...}}` with the engine-level catalog statistics (SPEC §8.2), or `{}`
/// while no collection has any (MongoDB omits the section then).
pub(crate) fn catalog_stats_document(db: &Database) -> Document {
    let mut d = Document::new();
    if let Some(s) = db.catalog_stats() {
        d.insert("bucketCatalog", s.to_document());
    }
    d
}

/// Ingests one input (path or `-`) into `coll`, with a progress bar when stderr is a
/// terminal; bad lines are reported on stderr as `FILE:LINE: reason`.
///
/// # Errors
/// The input cannot be opened or read (after every complete line before the failure was
/// stored), the CSV mapping does not fit, or `insert_many` fails as a whole.
pub(crate) fn ingest_file(
    coll: &Collection,
    file: &str,
    format: Format,
    settings: &IngestArgs,
    csv_args: &CsvArgs,
) -> CmdResult<Summary> {
    match ingest_input(coll, file, format, settings, csv_args)? {
        (summary, None) => Ok(summary),
        (_, Some(error)) => Err(error),
    }
}

/// Ingests one input like [`ingest_file`], returning what was stored together with the
/// error that ended the input early, if any: a read error (`FILE:LINE: reason`; every
/// complete line before it was stored) or `insert_many` failing as a whole.
///
/// # Errors
/// Nothing was read: the input cannot be opened, or the CSV header does not fit the
/// mapping.
pub(crate) fn ingest_input(
    coll: &dyn Target,
    file: &str,
    format: Format,
    settings: &IngestArgs,
    csv_args: &CsvArgs,
) -> CmdResult<(Summary, Option<CmdError>)> {
    let lower = file.to_ascii_lowercase();
    let is_parquet = format == Format::Parquet
        || (format == Format::Auto && (lower.ends_with(".parquet") || lower.ends_with(".pq")));
    if is_parquet {
        let reader = crate::input::parquet::open(file, settings.batch_size as usize)?;
        let name = if file == "-" { "<stdin>" } else { file };
        let source: Source<&[u8], &[u8]> = parquet_source(coll, name, reader, csv_args)?;
        return Ok(load(coll, name, source, None, settings, None));
    }
    let mut input = open_input(file)?;
    // Parquet by its first bytes (stdin, a file named otherwise, compressed).
    if format == Format::Auto
        && input
            .reader
            .fill_buf()
            .is_ok_and(|b| b.starts_with(crate::input::parquet::MAGIC))
    {
        let batch_size = settings.batch_size as usize;
        let reader =
            crate::input::parquet::open_stream(&input.name, &mut input.reader, batch_size)?;
        let source: Source<&[u8], &[u8]> = parquet_source(coll, &input.name, reader, csv_args)?;
        return Ok(load(coll, &input.name, source, None, settings, None));
    }
    let is_csv = match format {
        Format::Csv => true,
        Format::Ndjson | Format::Parquet => false,
        Format::Auto => {
            let name = strip_compression_suffix(&input.name).to_ascii_lowercase();
            let json = [".ndjson", ".json", ".jsonl"]
                .iter()
                .any(|e| name.ends_with(e));
            name.ends_with(".csv") || (!json && csv_args.any())
        }
    };
    let name = input.name.clone();
    let read_progress = input.progress.clone();
    if is_csv {
        let reader = CsvReader::new(input.reader, csv_mapping(coll, csv_args)?)
            .map_err(|e| describe_read_error(&name, &e))?;
        let source: Source<&[u8], _> = Source::Csv(Box::new(reader));
        return Ok(load(coll, &name, source, read_progress, settings, None));
    }
    refuse_csv_options(&name, csv_args, "NDJSON", &[])?;
    let time_format = csv_args
        .time_format
        .as_deref()
        .map(TimeFormat::parse)
        .transpose()?;
    let source: Source<_, &[u8]> = Source::Ndjson(NdjsonLines::new(input.reader));
    Ok(load(
        coll,
        &name,
        source,
        read_progress,
        settings,
        time_format,
    ))
}

/// Fails when an option of `csv_args` other than those `kept` (long names) is given for
/// input `name` of format `what`, which has no use for it.
///
/// # Errors
/// The first such option, named.
fn refuse_csv_options(name: &str, csv_args: &CsvArgs, what: &str, kept: &[&str]) -> CmdResult<()> {
    match csv_args
        .given()
        .iter()
        .find(|(option, given)| *given && !kept.contains(option))
    {
        Some((option, _)) => {
            // The one CSV option with a counterpart for every text input.
            let hint = if *option == "--csv-time-format" && what == "NDJSON" {
                " (--time-format reads the time field of NDJSON)"
            } else {
                ""
            };
            Err(format!("{name}: {option} does not apply to {what} input{hint}").into())
        }
        None => Ok(()),
    }
}

/// The source of Parquet input `name`, its columns mapped by `--csv-time-column` and
/// `--csv-meta-columns` (the CSV options that have a meaning for Parquet).
///
/// # Errors
/// Another CSV option is given, or the mapping does not fit the input's columns.
fn parquet_source<R, C>(
    coll: &dyn Target,
    name: &str,
    reader: ParquetRecordBatchReader,
    csv_args: &CsvArgs,
) -> CmdResult<Source<R, C>> {
    refuse_csv_options(
        name,
        csv_args,
        "Parquet",
        &["--csv-time-column", "--csv-meta-columns"],
    )?;
    if csv_args.time_format.is_some() {
        return Err(format!(
            "{name}: --time-format does not apply to Parquet input (its times are typed)"
        )
        .into());
    }
    let options = RecordBatchOptions {
        time_column: csv_args.csv_time_column.clone(),
        meta_columns: csv_args
            .csv_meta_columns
            .iter()
            .filter(|c| !c.is_empty())
            .cloned()
            .collect(),
    };
    let mapping = ParquetMapping {
        options,
        spec: coll.spec(),
    };
    // The columns named are checked against the schema before anything is read.
    let empty = arrow_array::RecordBatch::new_empty(reader.schema());
    mapping
        .options
        .apply(&empty, &mapping.spec)
        .map_err(|e| format!("{name}: {e} (--csv-time-column, --csv-meta-columns)"))?;
    Ok(Source::Parquet(Box::new(reader), Box::new(mapping)))
}

/// Inserts what `source` reads (input `name`) into `coll`; returns what was stored and the
/// error that ended the input early, if any.
fn load<R, C>(
    coll: &dyn Target,
    name: &str,
    source: Source<R, C>,
    read_progress: Option<ReadProgress>,
    settings: &IngestArgs,
    time_format: Option<TimeFormat>,
) -> (Summary, Option<CmdError>)
where
    R: std::io::BufRead + Send,
    C: std::io::Read + Send,
{
    let progress = match &read_progress {
        Some(p) => file_progress_bar(name, p.size),
        None => progress_bar(name),
    };
    let spec = coll.spec();
    let mut loader = Loader {
        coll,
        name,
        time_field: &spec.time_field,
        meta_field: spec.meta_field.as_deref(),
        options: settings.insert_options(),
        batch_size: settings.batch_size as usize,
        report_acks: settings.report_acks,
        progress: &progress,
        read_progress: read_progress.as_ref(),
        docs: Vec::new(),
        lines: Vec::new(),
        fields: Vec::new(),
        summary: Summary::default(),
    };
    let start = Instant::now();
    let fields = Fields {
        time: &spec.time_field,
        meta: spec.meta_field.as_deref(),
        time_format,
    };
    let result = std::thread::scope(|scope| {
        loader.run(batches::spawn(
            scope,
            source,
            fields,
            settings.batch_size as usize,
        ))
    });
    progress.finish_and_clear();
    let mut summary = loader.summary;
    summary.seconds = start.elapsed().as_secs_f64();
    (summary, result.err())
}

/// The CSV mapping from the options and the collection's fields.
fn csv_mapping(coll: &dyn Target, args: &CsvArgs) -> CmdResult<CsvMapping> {
    let spec = coll.spec();
    let delimiter = u8::try_from(args.csv_delimiter)
        .ok()
        .filter(u8::is_ascii)
        .ok_or("--csv-delimiter must be one ASCII character")?;
    Ok(CsvMapping {
        time_column: args
            .csv_time_column
            .clone()
            .unwrap_or_else(|| spec.time_field.clone()),
        time_format: TimeFormat::parse(
            args.time_format.as_deref().unwrap_or(&args.csv_time_format),
        )?,
        meta_columns: args
            .csv_meta_columns
            .iter()
            .filter(|c| !c.is_empty())
            .cloned()
            .collect(),
        columns: args
            .csv_columns
            .as_deref()
            .map(parse_column_list)
            .transpose()?,
        time_field: spec.time_field.clone(),
        meta_field: spec.meta_field.clone(),
        delimiter,
        types: args
            .csv_types
            .as_deref()
            .map(parse_type_list)
            .transpose()?
            .unwrap_or_default(),
        columns_have_types: args.csv_columns_have_types,
    })
}

/// A spinner with the measurement count and rate, on stderr when it is a terminal; hidden
/// otherwise.
pub(crate) fn progress_bar(label: &str) -> ProgressBar {
    if !io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    let style = ProgressStyle::with_template(
        "{spinner} {prefix}: {human_pos} measurements, {rate} measurements/s, {elapsed}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_spinner())
    .with_key(
        "rate",
        |state: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = write!(w, "{:.0}", state.per_sec());
        },
    );
    bar.set_style(style);
    bar.set_prefix(label.to_owned());
    bar.enable_steady_tick(Duration::from_millis(150));
    bar
}

/// A progress bar of an input file: the share of its bytes read (percent and ETA), the
/// measurements stored and their rate, on stderr when it is a terminal; hidden otherwise.
fn file_progress_bar(label: &str, size: u64) -> ProgressBar {
    if !io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(size);
    let style = ProgressStyle::with_template(
        "{spinner} {prefix}: {percent:>3}% of {total_bytes}, {msg}, {elapsed} (ETA {eta})",
    )
    .unwrap_or_else(|_| ProgressStyle::default_spinner());
    bar.set_style(style);
    bar.set_prefix(label.to_owned());
    bar.set_message("0 measurements");
    bar.enable_steady_tick(Duration::from_millis(150));
    bar
}

/// Batches records and inserts them.
struct Loader<'a> {
    coll: &'a dyn Target,
    name: &'a str,
    time_field: &'a str,
    meta_field: Option<&'a str>,
    options: InsertOptions,
    batch_size: usize,
    report_acks: bool,
    progress: &'a ProgressBar,
    /// How far reading the input file has come (the bar's position), for a file.
    read_progress: Option<&'a ReadProgress>,
    docs: Vec<Document>,
    lines: Vec<Position>,
    /// The field values of each pending document (counted while it is fresh in the cache).
    fields: Vec<u64>,
    summary: Summary,
}

impl Loader<'_> {
    /// Inserts every batch the parsing thread sends, in input order; errors are complete
    /// messages naming the input. Returning (or failing) drops `batches`, which ends the
    /// parsing thread.
    fn run(&mut self, batches: Receiver<Batch>) -> CmdResult<()> {
        for batch in batches {
            match batch {
                Batch::Columns {
                    batch,
                    lines,
                    fields,
                } => {
                    // The parsing thread makes columns only when no document is pending.
                    if !self.flush()? {
                        return Ok(());
                    }
                    self.lines = lines;
                    self.fields = fields;
                    let start = Instant::now();
                    let result = self
                        .coll
                        .insert_batch(&batch, &self.options)
                        .map_err(|e| self.insert_failed(&e))?;
                    if !self.inserted(start, &result)? {
                        return Ok(());
                    }
                }
                Batch::Records(records) => {
                    for record in records {
                        if !self.take(record)? {
                            return Ok(());
                        }
                    }
                }
                Batch::ReadError(e) => {
                    // Store every complete line read before the failure, then report it.
                    self.flush()?;
                    return Err(describe_read_error(self.name, &e).into());
                }
            }
        }
        self.flush()?;
        Ok(())
    }

    /// Adds a record to the pending batch (inserting the batch when it is full) or reports
    /// it; returns whether ingestion goes on (with `--ordered`, a bad line stops it after
    /// every good line before it is stored).
    fn take(&mut self, record: Record) -> CmdResult<bool> {
        match record.doc {
            Ok(doc) => {
                self.fields
                    .push(field_values(&doc, self.time_field, self.meta_field));
                self.docs.push(doc);
                self.lines.push(record.line);
                if self.docs.len() >= self.batch_size {
                    return self.flush();
                }
                Ok(true)
            }
            Err(reason) => {
                self.report(record.line, &reason);
                if self.options.ordered {
                    // Keep every good line before the bad one, then stop.
                    self.flush()?;
                    self.summary.stopped = true;
                    return Ok(false);
                }
                Ok(true)
            }
        }
    }

    /// Inserts the pending batch; returns whether ingestion goes on.
    fn flush(&mut self) -> CmdResult<bool> {
        if self.docs.is_empty() {
            return Ok(true);
        }
        let start = Instant::now();
        let result = self
            .coll
            .insert_documents(&self.docs, &self.options)
            .map_err(|e| self.insert_failed(&e))?;
        self.inserted(start, &result)
    }

    /// The input lines of the first and the last measurement of the pending batch (0 for
    /// none).
    fn line_span(&self) -> (u64, u64) {
        let line = |p: Option<&Position>| p.map_or(0, |p| p.line);
        (line(self.lines.first()), line(self.lines.last()))
    }

    /// The message of a failed insert of the pending batch ([`describe_failed_insert`]).
    fn insert_failed(&self, e: &Error) -> String {
        let lines: Vec<u64> = self.lines.iter().map(|p| p.line).collect();
        describe_failed_insert(self.name, &lines, e)
    }

    /// Counts and reports what the insert of the pending batch, started at `start`, did;
    /// returns whether ingestion goes on.
    fn inserted(&mut self, start: Instant, result: &Stored) -> CmdResult<bool> {
        self.summary.insert_seconds += start.elapsed().as_secs_f64();
        if self.report_acks {
            self.ack(result.inserted)?;
        }
        self.summary.inserted += result.inserted as u64;
        self.summary.field_values += self.stored_field_values(&result.rejected, result.inserted);
        match self.read_progress {
            Some(p) => {
                let stored = self.summary.inserted;
                self.progress.set_position(p.read.load(Ordering::Relaxed));
                let secs = self.progress.elapsed().as_secs_f64().max(1e-3);
                #[expect(clippy::cast_precision_loss, reason = "a rate for display")]
                let rate = stored as f64 / secs;
                self.progress
                    .set_message(format!("{stored} measurements, {rate:.0} measurements/s"));
            }
            None => self.progress.inc(result.inserted as u64),
        }
        for (index, reason) in &result.rejected {
            let line = self.lines.get(*index).copied().unwrap_or_default();
            let hint = self
                .docs
                .get(*index)
                .and_then(|d| time_hint(d.get(self.time_field)?))
                .unwrap_or_default();
            self.report(line, &format!("{reason}{hint}"));
        }
        for part in &result.failed {
            // Counted with the rejected: not stored, and the exit code says so.
            self.summary.rejected += (part.sent - part.inserted) as u64;
            let (first, last) = self.line_span();
            let stored = if part.inserted > 0 {
                format!(" ({} stored before the failure)", part.inserted)
            } else {
                String::new()
            };
            self.progress.suspend(|| {
                errln!(
                    "{}: lines {first}-{last}: {} measurements not stored{stored}: {}",
                    self.name,
                    part.sent - part.inserted,
                    part.reason
                );
            });
        }
        self.docs.clear();
        self.lines.clear();
        self.fields.clear();
        if self.options.ordered && !(result.rejected.is_empty() && result.failed.is_empty()) {
            self.summary.stopped = true;
            return Ok(false);
        }
        Ok(true)
    }

    /// The field values of the `inserted` measurements of the pending batch that were
    /// stored: the first `inserted` documents not rejected (with `--ordered`, those before
    /// the first rejected one), each counting its fields but the time and meta fields.
    fn stored_field_values(&self, errors: &[(usize, String)], inserted: usize) -> u64 {
        if errors.is_empty() {
            return self.fields.iter().take(inserted).sum();
        }
        let rejected: std::collections::HashSet<usize> = errors.iter().map(|e| e.0).collect();
        self.fields
            .iter()
            .enumerate()
            .filter(|(i, _)| !rejected.contains(i))
            .take(inserted)
            .map(|(_, n)| n)
            .sum()
    }

    /// Prints `ack FIRST LAST INSERTED` for the batch `insert_many` just acknowledged and
    /// flushes stdout, so a reader learns of the acknowledgement even if this process dies
    /// right after (the crash test `cli/tests/cli/crash_kill.rs` relies on it, SPEC ).
    fn ack(&self, inserted: usize) -> CmdResult<()> {
        let (first, last) = self.line_span();
        let mut out = io::stdout().lock();
        writeln!(out, "ack {first} {last} {inserted}")
            .and_then(|()| out.flush())
            .map_err(|e| format!("{}: writing an acknowledgement to stdout: {e}", self.name).into())
    }

    fn report(&mut self, line: Position, reason: &str) {
        self.summary.rejected += 1;
        self.progress
            .suspend(|| errln!("{}:{line}: {reason}", self.name));
    }
}

/// The message of a failed insert of a batch of `input` whose measurements came from the
/// input lines `lines` (in batch order): which lines were stored before the failure or may
/// have been (`Error::InsertIncomplete`, whose positions index `lines`); none for any other
/// error.
fn describe_failed_insert(input: &str, lines: &[u64], e: &Error) -> String {
    let ranges = |positions: &[usize]| {
        position_ranges(positions.iter().filter_map(|&p| lines.get(p).copied()))
    };
    let batch = format!(
        "lines {}-{}",
        lines.first().copied().unwrap_or(0),
        lines.last().copied().unwrap_or(0)
    );
    let Error::InsertIncomplete {
        committed,
        buffered,
        uncertain,
        source,
    } = e
    else {
        return format!("{input}: insert failed: {e}; nothing of {batch} was stored");
    };
    let mut out = format!("{input}: insert of {batch} failed: {source}");
    if !committed.is_empty() {
        let _ = write!(
            out,
            "; lines {} were committed before the failure",
            ranges(committed)
        );
        out.push_str(if *buffered {
            " to the log's buffer (--durability buffered): they may have been stored"
        } else {
            ": they are stored"
        });
    }
    if !uncertain.is_empty() {
        let _ = write!(out, "; lines {} may have been stored", ranges(uncertain));
    }
    out.push_str("; the other lines of the batch were not stored");
    out
}

/// What to add to the rejection of a measurement whose time field is `time`: how to have a
/// string or a number read as a time, when it is one.
fn time_hint(time: &bson::Bson) -> Option<&'static str> {
    match time {
        bson::Bson::String(_) => Some(
            "; the time is a string: give --time-format rfc3339 (ISO 8601) or a strftime \
             format such as '%d/%m/%Y %H:%M:%S' to read it",
        ),
        bson::Bson::Int32(_) | bson::Bson::Int64(_) | bson::Bson::Double(_) => Some(
            "; the time is a number: give --time-format epoch-s, epoch-ms, epoch-us or \
             epoch-ns to read it",
        ),
        _ => None,
    }
}

/// The field values of a measurement: its fields but the time and meta fields.
fn field_values(doc: &Document, time_field: &str, meta_field: Option<&str>) -> u64 {
    let special = usize::from(doc.contains_key(time_field))
        + meta_field.map_or(0, |m| usize::from(doc.contains_key(m)));
    doc.len().saturating_sub(special) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_csv_options_are_those_of_no_option_given() {
        #[derive(clap::Parser)]
        struct Wrap {
            #[command(flatten)]
            csv: CsvArgs,
        }
        let parsed = <Wrap as clap::Parser>::try_parse_from(["tscoll"]).expect("parse");
        assert_eq!(
            format!("{:?}", parsed.csv),
            format!("{:?}", CsvArgs::default())
        );
        assert!(!CsvArgs::default().any());
    }

    #[test]
    fn field_values_leave_out_time_and_meta() {
        let doc = bson::doc! { "ts": 1, "meta": {"a": 1, "b": 2}, "x": 1, "y": 2 };
        assert_eq!(field_values(&doc, "ts", Some("meta")), 2);
        assert_eq!(field_values(&doc, "ts", None), 3);
        assert_eq!(field_values(&doc, "time", Some("tags")), 4);
    }

    #[test]
    fn summary_line() {
        let s = Summary {
            inserted: 1000,
            rejected: 2,
            stopped: true,
            seconds: 0.5,
            ..Summary::default()
        };
        let line = s.line("a.ndjson");
        assert!(line.starts_with("a.ndjson: 1000 measurements inserted, 2 rejected, 0.50 s"));
        assert!(line.contains("2000 measurements/s"), "{line}");
        assert!(line.ends_with("(stopped at the first bad line: --ordered)"));
    }

    /// A full disk, as the engine reports it.
    fn disk_full() -> Box<Error> {
        Box::new(Error::Io(io::Error::from_raw_os_error(28)))
    }

    #[test]
    fn a_failed_insert_names_the_lines_stored_and_those_that_may_be() {
        // Lines 11-16 and 20-23 of the input (a bad line 17-19 left out), positions 0-9.
        let lines: Vec<u64> = (11..=16).chain(20..=23).collect();
        let committed = Error::InsertIncomplete {
            committed: vec![0, 1, 2, 3, 4, 5, 6],
            buffered: false,
            uncertain: vec![],
            source: disk_full(),
        };
        assert_eq!(
            describe_failed_insert("in.ndjson", &lines, &committed),
            "in.ndjson: insert of lines 11-23 failed: the disk is full: free space and retry; \
             lines 11-16, 20 were committed before the failure: they are stored; the other \
             lines of the batch were not stored"
        );
        let buffered = Error::InsertIncomplete {
            committed: vec![0, 1],
            buffered: true,
            uncertain: vec![],
            source: disk_full(),
        };
        let text = describe_failed_insert("in.ndjson", &lines, &buffered);
        assert!(
            text.contains(
                "lines 11-12 were committed before the failure to the log's buffer \
                 (--durability buffered): they may have been stored;"
            ) && !text.contains("they are stored"),
            "{text}"
        );
        let uncertain = Error::InsertIncomplete {
            committed: vec![0],
            buffered: false,
            uncertain: vec![1, 2, 7, 8, 9],
            source: disk_full(),
        };
        assert_eq!(
            describe_failed_insert("-", &lines, &uncertain),
            "-: insert of lines 11-23 failed: the disk is full: free space and retry; lines 11 \
             were committed before the failure: they are stored; lines 12-13, 21-23 may have \
             been stored; the other lines of the batch were not stored"
        );
        // Any other error: nothing of the batch was stored.
        assert_eq!(
            describe_failed_insert("in.ndjson", &lines, &disk_full()),
            "in.ndjson: insert failed: the disk is full: free space and retry; nothing of \
             lines 11-23 was stored"
        );
    }

    #[test]
    fn ordered_is_the_default() {
        assert!(IngestArgs::default().insert_options().ordered);
        let unordered = IngestArgs {
            unordered: true,
            ..IngestArgs::default()
        };
        assert!(!unordered.insert_options().ordered);
    }
}
