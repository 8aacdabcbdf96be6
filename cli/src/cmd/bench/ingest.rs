//! `tscoll bench ingest`: TSBS's "cpu-only" workload inserted into one collection by T
//! threads at once, with its speed, size on disk, write amplification and memory.
//!
//! **Set-up.** A fresh database (a temporary directory, or `--db DIR` if it has no `cpu`
//! collection) with the collection `cpu`: time field `time`, meta field `tags` (the host's
//! 10 tags, so one host = one series), granularity `seconds`. A host reports every 10 s and
//! `seconds` is the granularity closest to that (MongoDB's rule): a bucket spans at most one
//! hour, so each holds the 360 measurements of one host-hour, under the 1000-measurement cap;
//! `minutes` would fill buckets to the cap (2.8 h) and keep fewer, longer-lived buckets open.
//!
//! **Threads.** Thread `t` of `T` owns the hosts `h % T == t` ([`Workload::part`]) and inserts
//! their measurements, time-major, in `insert_many` calls of `--batch-size` measurements
//! (unordered, with the chosen durability), all into the same collection at the same time.
//!
//! **What is timed** (`seconds`) depends on `--generate`:
//!
//! * `paused` (the default): the threads go in rounds. In each round every thread builds its
//!   next batch while the clock is stopped, then all of them start inserting at once (a
//!   barrier) and the round's time runs from the earliest start to the latest end of those
//!   `insert_many` calls; `seconds` is the sum over the rounds. Only inserts are timed, and
//!   memory holds one batch per thread, so the peak RSS is the engine's. (The engine's
//!   background threads, fjall's flushes and compactions, keep running while the clock is
//!   stopped.)
//! * `ahead`: each thread builds all its batches before a barrier; `seconds` runs from the
//!   barrier to the last thread's last `insert_many` (the documents are dropped after the
//!   clock stops). A `bson::Document` of this workload takes about [`DOC_BYTES`] of memory,
//!   so the peak RSS includes them (the table shows the RSS at the start, documents built).
//! * `inline`: each thread builds each batch just before inserting it, and `seconds`, from a
//!   barrier to the last `insert_many`, **includes** generation; the thread time spent
//!   generating is reported next to it.
//!
//! `Database::close` (merging the segments of open buckets, fsync) comes after and is timed
//! separately, not in `seconds`.
//!
//! **Afterwards.** The collection must hold exactly the workload's measurement count
//! (`measurementCount` of its stats), otherwise the command fails. Disk bytes, write
//! amplification and peak RSS are measured as for `tscoll ingest` ([`crate::cmd::report`]).
//! `Database::disk_space` counts the *length* of fjall's journal, which fjall preallocates to
//! 64 MiB (a sparse file), so it reads at least 64 MiB however little is stored; it is shown
//! next to the disk bytes in the table.

use arrow_array::RecordBatch;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Barrier;
use std::time::Instant;

use bson::{Bson, Document};
use indicatif::ProgressBar;
use serde_json::Value;
use tscoll_benches::tsbs::{self, FIELDS, Generator, Workload};
use tscoll_engine::{Collection, Database, DatabaseOptions, InsertOptions, TimeseriesOptions};

use crate::cmd::CmdResult;
use crate::cmd::ingest::{DurabilityArg, progress_bar};
use crate::cmd::report::{Ingest, IngestReport, Meter, proc_kb_line, thread_cpu_seconds};
use crate::cmd::{human_bytes, human_seconds};

/// The collection the workload goes to.
pub(crate) const COLLECTION: &str = "cpu";

/// Memory one generated measurement takes as a `bson::Document` (time, a 10-tag
/// sub-document, 10 int32 fields), allocator overhead included, in bytes: measured as
/// 4.5 GiB of RSS for 864 000 documents.
pub(crate) const DOC_BYTES: u64 = 5_600;

/// Arguments of `tscoll bench ingest`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The generated data.
    #[command(flatten)]
    pub(crate) workload: WorkloadArgs,
    /// Threads inserting at once into the collection; thread t owns hosts h with h % T == t.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub(crate) threads: u32,
    /// Measurements per `insert_many` call.
    #[arg(long, value_name = "N", default_value_t = 5000,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) batch_size: u32,
    /// When an insert is acknowledged: buffered, flush (written to the OS) or sync (fsync'd).
    #[arg(long, value_enum, default_value_t = DurabilityArg::Buffered)]
    pub(crate) durability: DurabilityArg,
    /// When documents are built: paused (batch by batch while the clock is stopped, so only
    /// insert_many calls are timed and memory holds one batch per thread), ahead (all before
    /// the clock starts; about 5.6 KB of memory per measurement) or inline (batch by batch,
    /// timed with the inserts).
    #[arg(long, value_enum, default_value_t = Generate::Paused)]
    pub(crate) generate: Generate,
    /// Insert Arrow record batches (`Collection::insert_record_batch`, the columnar insert)
    /// built before the clock starts, instead of the documents (`insert_many`); memory holds
    /// the record batches, each batch of documents dropped once converted. Needs
    /// `--generate ahead`.
    #[arg(long)]
    pub(crate) columnar: bool,
    /// Database directory (must not hold a `cpu` collection); default: a fresh temporary
    /// directory, removed at the end.
    #[arg(long, value_name = "DIR")]
    pub(crate) db: Option<PathBuf>,
    /// Print one JSON object on stdout instead of the table.
    #[arg(long)]
    pub(crate) json: bool,
    /// Keep rollups at these resolutions (`tscoll create --rollup`), e.g. `1h`.
    #[arg(long = "rollup", value_name = "LIST", value_delimiter = ',',
          value_parser = crate::cmd::create::parse_resolution)]
    pub(crate) rollups: Vec<i64>,
    /// Bytes the bucket catalog may hold before idle buckets are archived or closed
    /// (`--catalog-memory` of the other commands; default 5 % of this process's memory).
    #[arg(long, value_name = "BYTES")]
    pub(crate) catalog_memory: Option<u64>,
}

/// The TSBS-like workload's size and seed, shared by `bench ingest` and `bench gen`.
#[derive(Debug, clap::Args)]
pub(crate) struct WorkloadArgs {
    /// Hosts (series); each reports every 10 s.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) hosts: u32,
    /// Days of data per host (8640 measurements a day); may be fractional (0.01 = 87 rows).
    #[arg(long, default_value_t = 1.0, value_parser = parse_days)]
    pub(crate) days: f64,
    /// Seed of the generated data (the same seed gives the same data in both commands).
    #[arg(long, default_value_t = tsbs::DEFAULT_SEED)]
    pub(crate) seed: u64,
}

impl WorkloadArgs {
    /// The workload these arguments describe.
    pub(crate) fn workload(&self) -> Workload {
        Workload::new(self.hosts as usize, self.days, self.seed)
    }
}

/// `--generate` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Generate {
    /// Batch by batch, in rounds: every thread builds its next batch with the clock stopped,
    /// then all insert theirs, timed.
    Paused,
    /// Every document before the clock starts.
    Ahead,
    /// Batch by batch, inside the timed loop.
    Inline,
}

/// Parses `--days`: a positive finite number.
///
/// # Errors
/// Not a number, or not positive and finite.
pub(crate) fn parse_days(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(d) if d.is_finite() && d > 0.0 => Ok(d),
        Ok(_) => Err("must be a positive number of days".to_owned()),
        Err(e) => Err(e.to_string()),
    }
}

/// What one thread did.
struct ThreadRun {
    /// The timed spans, one per round (`paused`: `None` for a round without a batch) or a
    /// single one from the barrier to the last insert (`ahead`, `inline`).
    spans: Vec<Option<(Instant, Instant)>>,
    /// Thread time spent generating documents after the first barrier.
    generating: ThreadTime,
    /// Measurements it inserted.
    inserted: u64,
    /// Pre-generated batches, returned so they are dropped after the clock stops.
    #[expect(dead_code, reason = "held only to be dropped after the clock stops")]
    batches: Vec<Vec<Document>>,
}

/// The figures of one run.
struct Figures {
    report: IngestReport,
    close_seconds: f64,
    generating_seconds: f64,
    /// `Database::disk_space`.
    fjall_disk_space: u64,
    /// Bytes of the buckets (segments, control records, index entries): the collection's
    /// `storedBytes`.
    stored_bytes: u64,
    /// Bytes of the rollup rows: the collection's `rollupBytes`.
    rollup_bytes: u64,
    rss_at_start_bytes: Option<u64>,
    bucket_catalog: Option<Document>,
}

/// Runs `tscoll bench ingest`.
///
/// # Errors
/// The database cannot be created or already holds a `cpu` collection, `--generate ahead`
/// would not fit in memory, an insert fails or rejects a measurement, or the collection does
/// not hold the expected count afterwards.
pub(crate) fn run(args: &Args) -> CmdResult<ExitCode> {
    if args.columnar && args.generate != Generate::Ahead {
        return Err("--columnar needs --generate ahead".into());
    }
    let workload = args.workload.workload();
    if args.generate == Generate::Ahead && !args.columnar {
        let need = workload.measurements().saturating_mul(DOC_BYTES);
        if let Some(available) = proc_kb_line("/proc/meminfo", "MemAvailable")
            && need > available
        {
            return Err(format!(
                "--generate ahead needs about {} for the documents, more than the {} \
                 available; use --generate paused",
                human_bytes(need),
                human_bytes(available)
            )
            .into());
        }
    }
    let (_temp, dir) = super::bench_dir(args.db.as_deref(), "tscoll-bench-ingest-")?;
    let options = DatabaseOptions {
        catalog: crate::cmd::catalog_options(args.catalog_memory),
        ..DatabaseOptions::default()
    };
    let db = Database::open(&dir, options)
        .map_err(|e| format!("cannot open database {}: {e}", dir.display()))?;
    if db.collection(COLLECTION).is_ok() {
        return Err(format!(
            "{} already holds a '{COLLECTION}' collection; use a fresh directory",
            dir.display()
        )
        .into());
    }
    let options = TimeseriesOptions::new(tsbs::TIME_FIELD)
        .meta_field(tsbs::META_FIELD)
        .rollups(&args.rollups);
    let coll = db.create_collection(COLLECTION, &options)?;
    let (figures, measurement_count) = measure(args, &workload, db, coll, &dir)?;
    let inserted = figures.report.ingest.measurements;
    if measurement_count != workload.measurements() || inserted != workload.measurements() {
        return Err(format!(
            "the collection holds {measurement_count} measurements; {inserted} were inserted, \
             {} expected",
            workload.measurements()
        )
        .into());
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", json_line(args, &figures))?;
    } else {
        write!(out, "{}", table(args, &workload, &figures))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Inserts the workload, closes the database, gathers the figures and the collection's
/// measurement count, and drops the database (so that the disk bytes are those a closed
/// database holds: fjall removes the files a compaction replaced once no version of the tree
/// refers to them).
fn measure(
    args: &Args,
    workload: &Workload,
    db: Database,
    coll: Collection,
    dir: &std::path::Path,
) -> CmdResult<(Figures, u64)> {
    let threads = args.threads as usize;
    let batch = args.batch_size as usize;
    let options = InsertOptions {
        ordered: false,
        durability: args.durability.into(),
    };
    let progress = if args.json {
        ProgressBar::hidden()
    } else {
        progress_bar("bench ingest")
    };
    let parts: Vec<Generator> = (0..threads).map(|t| workload.part(t, threads)).collect();
    // Rounds of `paused`: as many as the largest part has batches.
    let rounds = parts
        .iter()
        .map(|p| p.remaining().div_ceil(batch as u64))
        .max()
        .unwrap_or(0);
    // Every thread and this one: `ready` once the documents are built, `go` once the
    // starting figures are read. `round`: the inserting threads, at each round's start.
    let (ready, go) = (Barrier::new(threads + 1), Barrier::new(threads + 1));
    let round = Barrier::new(threads);
    let mut rss_at_start_bytes = None;
    let mut meter = Meter::start();
    let runs: Vec<CmdResult<ThreadRun>> = std::thread::scope(|s| {
        let handles: Vec<_> = parts
            .into_iter()
            .map(|mut part| {
                let (ready, go, round, progress, coll) = (&ready, &go, &round, &progress, &coll);
                let options = &options;
                let generate = args.generate;
                let columnar = args.columnar;
                s.spawn(move || {
                    let batches = if generate == Generate::Ahead && !columnar {
                        batches_of(&mut part, batch)
                    } else {
                        Vec::new()
                    };
                    // Each batch of documents becomes a record batch before the next is
                    // built: memory holds the record batches only.
                    let record_batches = if columnar {
                        record_batches_of(&mut part, batch)
                    } else {
                        Ok(Vec::new())
                    };
                    ready.wait();
                    go.wait();
                    let thread = Inserter {
                        coll,
                        options,
                        progress,
                    };
                    match generate {
                        Generate::Paused => thread.paused(part, batch, rounds, round),
                        Generate::Ahead if columnar => thread.ahead_columnar(record_batches?),
                        Generate::Ahead => thread.ahead(batches),
                        Generate::Inline => thread.inline(part, batch),
                    }
                })
            })
            .collect();
        ready.wait();
        rss_at_start_bytes = proc_kb_line("/proc/self/status", "VmRSS");
        meter = Meter::start();
        go.wait();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a thread panicked".into())))
            .collect()
    });
    progress.finish_and_clear();
    let runs = runs.into_iter().collect::<CmdResult<Vec<ThreadRun>>>()?;
    let seconds = timed_seconds(&runs);
    let inserted: u64 = runs.iter().map(|r| r.inserted).sum();
    let generating_seconds = runs.iter().map(|r| r.generating.0).sum();
    drop(runs);
    // Before `close`: the catalog as the ingest left it (open buckets, memory).
    let bucket_catalog = db.catalog_stats().map(|c| c.to_document());
    let closing = Instant::now();
    db.close()?;
    // Disk bytes are measured after flush and compaction: the data as it stays.
    db.compact()?;
    let close_seconds = closing.elapsed().as_secs_f64();
    // Counted once every row is stored: a count while buckets are open copies their rows
    // (a query's snapshot of memory), which would add a copy of the catalog to the peak RSS.
    let stored = crate::cmd::ingest::stored_measurements(&db)?;
    let stats = coll.stats()?;
    let fjall_disk_space = db.disk_space()?;
    drop(coll);
    drop(db);
    let report = meter.finish(
        dir,
        Ingest {
            measurements: inserted,
            stored,
            field_values: inserted * FIELDS.len() as u64,
            seconds,
            durability: args.durability,
            threads: args.threads,
            cpu_excluded_seconds: generating_seconds,
        },
    )?;
    let figures = Figures {
        report,
        close_seconds,
        generating_seconds,
        fjall_disk_space,
        stored_bytes: stats.stored_bytes,
        rollup_bytes: stats.rollup_bytes,
        rss_at_start_bytes,
        bucket_catalog,
    };
    Ok((figures, stats.measurement_count))
}

/// The timed seconds: for each span index (round), the time from the earliest start to the
/// latest end among the threads, summed over the rounds.
fn timed_seconds(runs: &[ThreadRun]) -> f64 {
    let rounds = runs.iter().map(|r| r.spans.len()).max().unwrap_or(0);
    (0..rounds)
        .filter_map(|i| {
            let spans = runs
                .iter()
                .filter_map(|r| r.spans.get(i).copied().flatten());
            let start = spans.clone().map(|(s, _)| s).min()?;
            let end = spans.map(|(_, e)| e).max()?;
            Some(end.duration_since(start).as_secs_f64())
        })
        .sum()
}

/// Every remaining document of `part`, in batches of `size`.
fn batches_of(part: &mut Generator, size: usize) -> Vec<Vec<Document>> {
    let mut batches = Vec::new();
    loop {
        let mut batch = Vec::new();
        if part.fill_batch(&mut batch, size) == 0 {
            return batches;
        }
        batches.push(batch);
    }
}

/// The rest of `part` as Arrow record batches of `size` rows, a batch of documents built
/// and dropped at a time.
fn record_batches_of(part: &mut Generator, size: usize) -> Result<Vec<RecordBatch>, String> {
    let mut out = Vec::new();
    let mut batch = Vec::new();
    loop {
        batch.clear();
        if part.fill_batch(&mut batch, size) == 0 {
            return Ok(out);
        }
        out.push(super::record_batch::record_batch(&batch)?);
    }
}

/// The thread time spent on some work: CPU time of the thread where Linux tells it
/// (`/proc/thread-self/schedstat`), else wall time.
#[derive(Clone, Copy, Debug, Default)]
struct ThreadTime(f64);

impl ThreadTime {
    /// Runs `work`, adding its thread time.
    fn add<T>(&mut self, work: impl FnOnce() -> T) -> T {
        let (cpu, wall) = (thread_cpu_seconds(), Instant::now());
        let out = work();
        self.0 += match (cpu, thread_cpu_seconds()) {
            (Some(a), Some(b)) => b - a,
            _ => wall.elapsed().as_secs_f64(),
        };
        out
    }
}

/// One thread's inserts.
struct Inserter<'a> {
    coll: &'a Collection,
    options: &'a InsertOptions,
    progress: &'a ProgressBar,
}

impl Inserter<'_> {
    /// `insert_many` of one batch, counted on the progress bar.
    // Not inlined: `valgrind --toggle-collect` counts the instructions under it
    // (docs/BENCHMARKS.md).
    #[inline(never)]
    fn insert(&self, docs: &[Document]) -> CmdResult<u64> {
        let n = checked_insert(self.coll, docs, self.options)?;
        self.progress.inc(n);
        Ok(n)
    }

    /// `--generate paused`: `rounds` rounds; in each, the next batch of `part` is built, then
    /// (after every thread has built its own) inserted, timed.
    fn paused(
        &self,
        mut part: Generator,
        size: usize,
        rounds: u64,
        round: &Barrier,
    ) -> CmdResult<ThreadRun> {
        let mut run = ThreadRun {
            spans: Vec::with_capacity(usize::try_from(rounds).unwrap_or(0)),
            generating: ThreadTime::default(),
            inserted: 0,
            batches: Vec::new(),
        };
        let mut batch = Vec::with_capacity(size);
        let mut failed = None;
        for _ in 0..rounds {
            batch.clear();
            run.generating.add(|| part.fill_batch(&mut batch, size));
            // Every thread takes part in every round, even after an error, so that none
            // waits for it forever.
            round.wait();
            if batch.is_empty() || failed.is_some() {
                run.spans.push(None);
                continue;
            }
            let start = Instant::now();
            match self.insert(&batch) {
                Ok(n) => run.inserted += n,
                Err(e) => failed = Some(e),
            }
            run.spans.push(Some((start, Instant::now())));
        }
        failed.map_or(Ok(run), Err)
    }

    /// `--generate ahead`: the pre-built `batches`, one after the other.
    fn ahead(&self, batches: Vec<Vec<Document>>) -> CmdResult<ThreadRun> {
        let start = Instant::now();
        let mut inserted = 0;
        for batch in &batches {
            inserted += self.insert(batch)?;
        }
        Ok(ThreadRun {
            spans: vec![Some((start, Instant::now()))],
            generating: ThreadTime::default(),
            inserted,
            batches,
        })
    }

    /// `--generate ahead --columnar`: the pre-built record batches, one after the other.
    // Not inlined: `valgrind --toggle-collect` counts the instructions under it
    // (docs/BENCHMARKS.md).
    #[inline(never)]
    fn ahead_columnar(&self, batches: Vec<RecordBatch>) -> CmdResult<ThreadRun> {
        let start = Instant::now();
        let mut inserted = 0;
        for batch in &batches {
            let result = self
                .coll
                .insert_record_batch(batch, self.options)
                .map_err(|e| format!("insert_record_batch: {e}"))?;
            if let Some(e) = result.errors.first() {
                return Err(format!(
                    "insert_record_batch rejected {} of {} rows; first: #{} {:?}: {}",
                    result.errors.len(),
                    batch.num_rows(),
                    e.index,
                    e.code,
                    e.message
                )
                .into());
            }
            let n = result.inserted as u64;
            self.progress.inc(n);
            inserted += n;
        }
        drop(batches);
        Ok(ThreadRun {
            spans: vec![Some((start, Instant::now()))],
            generating: ThreadTime::default(),
            inserted,
            batches: Vec::new(),
        })
    }

    /// `--generate inline`: batches of `part` built and inserted one by one, all timed.
    fn inline(&self, mut part: Generator, size: usize) -> CmdResult<ThreadRun> {
        let start = Instant::now();
        let (mut inserted, mut generating) = (0, ThreadTime::default());
        let mut batch = Vec::with_capacity(size);
        loop {
            batch.clear();
            let n = generating.add(|| part.fill_batch(&mut batch, size));
            if n == 0 {
                break;
            }
            inserted += self.insert(&batch)?;
        }
        Ok(ThreadRun {
            spans: vec![Some((start, Instant::now()))],
            generating,
            inserted,
            batches: Vec::new(),
        })
    }
}

/// `insert_many` of one batch; a rejected measurement is an error (the workload has none).
fn checked_insert(coll: &Collection, docs: &[Document], options: &InsertOptions) -> CmdResult<u64> {
    let result = coll
        .insert_many(docs, options)
        .map_err(|e| format!("insert_many: {e}"))?;
    if let Some(e) = result.errors.first() {
        return Err(format!(
            "insert_many rejected {} of {} measurements; first: #{} {:?}: {}",
            result.errors.len(),
            docs.len(),
            e.index,
            e.code,
            e.message
        )
        .into());
    }
    Ok(result.inserted as u64)
}

/// The `--json` object: the keys of [`IngestReport::json`], then `hosts`, `days`,
/// `batch_size`, `catalog_memory_bytes` (the threshold used), `stored_bytes`, `rollup_bytes` and
/// `bucket_catalog`.
fn json_line(args: &Args, f: &Figures) -> Value {
    let mut map = f.report.json();
    map.insert("hosts".to_owned(), args.workload.hosts.into());
    map.insert("days".to_owned(), args.workload.days.into());
    map.insert("batch_size".to_owned(), args.batch_size.into());
    map.insert(
        "catalog_memory_bytes".to_owned(),
        crate::cmd::catalog_options(args.catalog_memory)
            .idle_bucket_expiry_memory_usage_threshold_bytes
            .into(),
    );
    map.insert("stored_bytes".to_owned(), f.stored_bytes.into());
    map.insert("rollup_bytes".to_owned(), f.rollup_bytes.into());
    map.insert(
        "bucket_catalog".to_owned(),
        f.bucket_catalog
            .clone()
            .map_or(Value::Null, |d| Bson::Document(d).into_relaxed_extjson()),
    );
    Value::Object(map)
}

/// The human-readable report.
fn table(args: &Args, workload: &Workload, f: &Figures) -> String {
    let mut t = f.report.table();
    let timed = match args.generate {
        Generate::Paused => format!(
            "insert_many wall time; documents built batch by batch with the clock stopped, \
             {:.2} s of thread time",
            f.generating_seconds
        ),
        Generate::Ahead if args.columnar => {
            "insert_record_batch wall time; record batches built beforehand".to_owned()
        }
        Generate::Ahead => "insert_many wall time; documents generated beforehand".to_owned(),
        Generate::Inline => format!(
            "insert_many wall time INCLUDING document generation, {:.2} s of thread time",
            f.generating_seconds
        ),
    };
    t.note("seconds", timed);
    t.insert_after(
        "field values/s",
        "close",
        format!(
            "{} (merging open buckets, fsync, compaction; not in seconds)",
            human_seconds(f.close_seconds)
        ),
    );
    t.note(
        "disk bytes",
        format!("fjall's disk_space: {}", human_bytes(f.fjall_disk_space)),
    );
    t.note(
        "disk bytes",
        format!("buckets' storedBytes: {}", human_bytes(f.stored_bytes)),
    );
    if f.rollup_bytes > 0 {
        t.note(
            "disk bytes",
            format!(
                "rollups' rollupBytes: {} ({:.1} % of the buckets')",
                human_bytes(f.rollup_bytes),
                100.0 * f.rollup_bytes as f64 / f.stored_bytes.max(1) as f64
            ),
        );
    }
    t.note(
        "bytes/measurement",
        format!(
            "{:.2} in the buckets",
            f.stored_bytes as f64 / f.report.ingest.measurements.max(1) as f64
        ),
    );
    if let (Generate::Ahead, Some(start)) = (args.generate, f.rss_at_start_bytes) {
        t.note(
            "peak RSS",
            format!(
                "RSS at the start of the ingest, documents built: {}",
                human_bytes(start)
            ),
        );
    }
    if let Some(c) = &f.bucket_catalog {
        let get = |k: &str| c.get_i64(k).map_or("-".to_owned(), |v| v.to_string());
        t.push(
            "bucket catalog",
            format!(
                "{} buckets ({} open), {} commits, {} measurements per commit, {} B of memory",
                get("numBuckets"),
                get("numOpenBuckets"),
                get("numCommits"),
                get("avgNumMeasurementsPerCommit"),
                get("memoryUsage"),
            ),
        );
    }
    format!(
        "TSBS cpu-only: {} hosts x {} days = {} measurements of {} fields (seed {}), \
         batches of {}\n{t}",
        args.workload.hosts,
        args.workload.days,
        workload.measurements(),
        FIELDS.len(),
        args.workload.seed,
        args.batch_size
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_must_be_positive() {
        assert_eq!(parse_days("0.5"), Ok(0.5));
        assert!(parse_days("0").is_err());
        assert!(parse_days("-1").is_err());
        assert!(parse_days("inf").is_err());
        assert!(parse_days("x").is_err());
    }

    #[test]
    fn timed_seconds_sum_the_rounds_from_earliest_start_to_latest_end() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + std::time::Duration::from_millis(ms);
        let run = |spans: Vec<Option<(Instant, Instant)>>| ThreadRun {
            spans,
            generating: ThreadTime::default(),
            inserted: 0,
            batches: Vec::new(),
        };
        // Round 0: 0..30 ms; round 1: 100..150 ms (one thread idle); round 2: nobody.
        let runs = [
            run(vec![Some((at(0), at(20))), Some((at(100), at(150))), None]),
            run(vec![Some((at(5), at(30))), None, None]),
        ];
        let seconds = timed_seconds(&runs);
        assert!((seconds - 0.080).abs() < 1e-9, "{seconds}");
        assert_eq!(timed_seconds(&[]), 0.0);
    }
}
