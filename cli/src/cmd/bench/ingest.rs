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
//! **What is timed** (`seconds`): wall-clock time from the moment every thread is ready (a
//! barrier) until the last thread's last `insert_many` returns (the earliest start to the
//! latest end). With `--generate ahead` each thread builds all its batches *before* the
//! barrier, so `seconds` is inserts only (the documents are dropped after the clock stops).
//! A `bson::Document` of this workload takes about [`DOC_BYTES`] of memory, so that only
//! suits small scales: `--generate auto` (the default) generates ahead when the workload has
//! at most [`PREGENERATE_MAX`] measurements *and* its documents take at most half of the
//! available memory. Otherwise (`--generate inline`) each thread builds each batch just
//! before inserting it, `seconds` **includes** generation, and the thread time spent
//! generating is reported next to it. `Database::close` (merging the segments of open
//! buckets, fsync) comes after and is timed separately, not in `seconds`.
//!
//! **Afterwards.** The collection must hold exactly the workload's measurement count
//! (`measurementCount` of its stats), otherwise the command fails. Disk bytes are the bytes
//! the database directory occupies on disk after `close` (allocated blocks, as `du` counts):
//! `Database::disk_space` counts the *length* of fjall's journal, which fjall preallocates to
//! 64 MiB (a sparse file), so it reads at least 64 MiB however little is stored; it is shown
//! next to it in the table. Write amplification is the process's `write_bytes`
//! (`/proc/self/io`: bytes sent to the block layer, fjall's background flushes and compactions
//! included) during ingest and close, divided by the disk bytes; unknown (`null`) where
//! `/proc/self/io` is missing or counts nothing (e.g. on tmpfs). Peak RSS is `VmHWM`
//! (`/proc/self/status`): with documents generated ahead it includes them (the table shows
//! the RSS at the start of the ingest, documents built, to subtract).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use bson::{Bson, Document};
use indicatif::ProgressBar;
use serde_json::json;
use tscoll_benches::tsbs::{self, FIELDS, Generator, Workload};
use tscoll_engine::{Collection, Database, DatabaseOptions, InsertOptions, TimeseriesOptions};

use crate::cmd::CmdResult;
use crate::cmd::ingest::{DurabilityArg, progress_bar};
use crate::cmd::{human_bytes, human_seconds};

/// The collection the workload goes to.
pub(crate) const COLLECTION: &str = "cpu";

/// Largest workload (measurements) `--generate auto` builds before the clock starts.
pub(crate) const PREGENERATE_MAX: u64 = 2_000_000;

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
    /// When documents are built: ahead (before the clock starts; about 5.6 KB of memory per
    /// measurement), inline (batch by batch, timed with the inserts), or auto (ahead when at
    /// most 2 million measurements fit in half the available memory).
    #[arg(long, value_enum, default_value_t = Generate::Auto)]
    pub(crate) generate: Generate,
    /// Database directory (must not hold a `cpu` collection); default: a fresh temporary
    /// directory, removed at the end.
    #[arg(long, value_name = "DIR")]
    pub(crate) db: Option<PathBuf>,
    /// Print one JSON object on stdout instead of the table.
    #[arg(long)]
    pub(crate) json: bool,
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
    /// Ahead when the workload is small enough, else inline.
    Auto,
    /// Every document before the clock starts.
    Ahead,
    /// Batch by batch, inside the timed loop.
    Inline,
}

impl Generate {
    /// Whether `workload` is generated ahead.
    fn ahead(self, workload: &Workload) -> bool {
        match self {
            Generate::Ahead => true,
            Generate::Inline => false,
            Generate::Auto => {
                let n = workload.measurements();
                let fits = proc_kb_line("/proc/meminfo", "MemAvailable")
                    .is_none_or(|avail| n.saturating_mul(DOC_BYTES) <= avail / 2);
                n <= PREGENERATE_MAX && fits
            }
        }
    }
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
    /// When it started inserting (after the barrier).
    start: Instant,
    /// When its last insert returned.
    end: Instant,
    /// Thread time spent generating documents inside the timed loop.
    generating: Duration,
    /// Measurements it inserted.
    inserted: u64,
    /// Pre-generated batches, returned so they are dropped after the clock stops.
    #[expect(dead_code, reason = "held only to be dropped after the clock stops")]
    batches: Vec<Vec<Document>>,
}

/// The figures of one run.
struct Figures {
    measurements: u64,
    seconds: f64,
    close_seconds: f64,
    generated_ahead: bool,
    generating_seconds: f64,
    /// Allocated bytes of the database directory.
    disk_bytes: u64,
    /// `Database::disk_space`.
    fjall_disk_space: u64,
    /// Bytes of the buckets (segments, control records, index entries): the collection's
    /// `storedBytes`.
    stored_bytes: u64,
    write_bytes: Option<u64>,
    peak_rss_bytes: Option<u64>,
    rss_at_start_bytes: Option<u64>,
    bucket_catalog: Option<Document>,
}

impl Figures {
    fn per_second(&self, n: u64) -> f64 {
        n as f64 / self.seconds.max(1e-9)
    }

    fn bytes_per_measurement(&self) -> f64 {
        self.disk_bytes as f64 / self.measurements.max(1) as f64
    }

    /// Bytes written during the run ÷ final disk bytes; `None` when not measurable (no
    /// `/proc/self/io`, or nothing counted although the database is not empty).
    fn write_amplification(&self) -> Option<f64> {
        match self.write_bytes {
            Some(w) if w > 0 && self.disk_bytes > 0 => Some(w as f64 / self.disk_bytes as f64),
            _ => None,
        }
    }
}

/// Runs `tscoll bench ingest`.
///
/// # Errors
/// The database cannot be created or already holds a `cpu` collection, an insert fails or
/// rejects a measurement, or the collection does not hold the expected count afterwards.
pub(crate) fn run(args: &Args) -> CmdResult<ExitCode> {
    let workload = args.workload.workload();
    let (_temp, dir) = super::bench_dir(args.db.as_deref(), "tscoll-bench-ingest-")?;
    let db = Database::open(&dir, DatabaseOptions::default())
        .map_err(|e| format!("cannot open database {}: {e}", dir.display()))?;
    if db.collection(COLLECTION).is_ok() {
        return Err(format!(
            "{} already holds a '{COLLECTION}' collection; use a fresh directory",
            dir.display()
        )
        .into());
    }
    let options = TimeseriesOptions::new(tsbs::TIME_FIELD).meta_field(tsbs::META_FIELD);
    let coll = db.create_collection(COLLECTION, &options)?;
    let mut figures = measure(args, &workload, &db, &coll)?;
    figures.disk_bytes = allocated_bytes(&dir)?;
    let stats = coll.stats()?;
    figures.stored_bytes = stats.stored_bytes;
    if stats.measurement_count != workload.measurements()
        || figures.measurements != workload.measurements()
    {
        return Err(format!(
            "the collection holds {} measurements; {} were inserted, {} expected",
            stats.measurement_count,
            figures.measurements,
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

/// Inserts the workload, closes the database and gathers the figures (all but the
/// directory's size and the collection's stats).
fn measure(
    args: &Args,
    workload: &Workload,
    db: &Database,
    coll: &Collection,
) -> CmdResult<Figures> {
    let ahead = args.generate.ahead(workload);
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
    // Every thread and this one: `ready` once the documents are built, `go` once the
    // starting figures are read.
    let (ready, go) = (Barrier::new(threads + 1), Barrier::new(threads + 1));
    let mut rss_at_start_bytes = None;
    let mut written_before = None;
    let runs: Vec<CmdResult<ThreadRun>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (ready, go, progress) = (&ready, &go, &progress);
                let mut part = workload.part(t, threads);
                s.spawn(move || {
                    let batches = if ahead {
                        batches_of(&mut part, batch)
                    } else {
                        Vec::new()
                    };
                    ready.wait();
                    go.wait();
                    insert_part(coll, &options, part, batches, batch, progress)
                })
            })
            .collect();
        ready.wait();
        rss_at_start_bytes = proc_kb_line("/proc/self/status", "VmRSS");
        written_before = proc_write_bytes();
        go.wait();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a thread panicked".into())))
            .collect()
    });
    progress.finish_and_clear();
    let runs = runs.into_iter().collect::<CmdResult<Vec<ThreadRun>>>()?;
    let start = runs.iter().map(|r| r.start).min();
    let end = runs.iter().map(|r| r.end).max();
    let seconds = match (start, end) {
        (Some(s), Some(e)) => e.duration_since(s).as_secs_f64(),
        _ => 0.0,
    };
    let inserted: u64 = runs.iter().map(|r| r.inserted).sum();
    let generating_seconds = runs.iter().map(|r| r.generating.as_secs_f64()).sum();
    drop(runs);
    // Before `close`: the catalog as the ingest left it (open buckets, memory).
    let bucket_catalog = db.catalog_stats().map(|c| c.to_document());
    let closing = Instant::now();
    db.close()?;
    let close_seconds = closing.elapsed().as_secs_f64();
    let write_bytes = written_before
        .zip(proc_write_bytes())
        .map(|(before, after)| after.saturating_sub(before));
    Ok(Figures {
        measurements: inserted,
        seconds,
        close_seconds,
        generated_ahead: ahead,
        generating_seconds,
        disk_bytes: 0,
        fjall_disk_space: db.disk_space()?,
        stored_bytes: 0,
        write_bytes,
        peak_rss_bytes: proc_kb_line("/proc/self/status", "VmHWM"),
        rss_at_start_bytes,
        bucket_catalog,
    })
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

/// One thread's inserts: the pre-generated `batches`, or else batches generated from `part`
/// one by one.
fn insert_part(
    coll: &Collection,
    options: &InsertOptions,
    mut part: Generator,
    batches: Vec<Vec<Document>>,
    size: usize,
    progress: &ProgressBar,
) -> CmdResult<ThreadRun> {
    let mut inserted = 0u64;
    let mut generating = Duration::ZERO;
    let mut insert = |docs: &[Document]| -> CmdResult<()> {
        let n = checked_insert(coll, docs, options)?;
        inserted += n;
        progress.inc(n);
        Ok(())
    };
    let start = Instant::now();
    if batches.is_empty() {
        let mut batch = Vec::with_capacity(size);
        loop {
            let t = Instant::now();
            batch.clear();
            let n = part.fill_batch(&mut batch, size);
            generating += t.elapsed();
            if n == 0 {
                break;
            }
            insert(&batch)?;
        }
    } else {
        for batch in &batches {
            insert(batch)?;
        }
    }
    let end = Instant::now();
    Ok(ThreadRun {
        start,
        end,
        generating,
        inserted,
        batches,
    })
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

/// The `--json` object.
fn json_line(args: &Args, f: &Figures) -> serde_json::Value {
    let field_values = f.measurements * FIELDS.len() as u64;
    json!({
        "measurements": f.measurements,
        "seconds": f.seconds,
        "measurements_per_s": f.per_second(f.measurements),
        "field_values_per_s": f.per_second(field_values),
        "disk_bytes": f.disk_bytes,
        "bytes_per_measurement": f.bytes_per_measurement(),
        "write_amplification": f.write_amplification(),
        "peak_rss_bytes": f.peak_rss_bytes,
        "durability": durability_name(args.durability),
        "threads": args.threads,
        "hosts": args.workload.hosts,
        "days": args.workload.days,
        "batch_size": args.batch_size,
        "bucket_catalog": f
            .bucket_catalog
            .clone()
            .map(|d| Bson::Document(d).into_relaxed_extjson()),
    })
}

/// The human-readable report.
fn table(args: &Args, workload: &Workload, f: &Figures) -> String {
    let field_values = f.measurements * FIELDS.len() as u64;
    let timed = if f.generated_ahead {
        "insert_many wall time; documents generated beforehand".to_owned()
    } else {
        format!(
            "insert_many wall time INCLUDING document generation, {:.2} s of thread time",
            f.generating_seconds
        )
    };
    let write_amplification = f.write_amplification().map_or("n/a".to_owned(), |w| {
        format!(
            "{w:.2} ({} written during ingest and close)",
            human_bytes(f.write_bytes.unwrap_or_default())
        )
    });
    let peak_rss = match (f.peak_rss_bytes, f.rss_at_start_bytes) {
        (None, _) => "n/a".to_owned(),
        (Some(peak), Some(start)) if f.generated_ahead => format!(
            "{peak} ({}; RSS at the start of the ingest, documents built: {})",
            human_bytes(peak),
            human_bytes(start)
        ),
        (Some(peak), _) => format!("{peak} ({})", human_bytes(peak)),
    };
    let mut rows: Vec<(&str, String)> = vec![
        ("measurements", f.measurements.to_string()),
        ("seconds", format!("{:.3} ({timed})", f.seconds)),
        (
            "measurements/s",
            format!("{:.0}", f.per_second(f.measurements)),
        ),
        (
            "field values/s",
            format!("{:.0}", f.per_second(field_values)),
        ),
        (
            "close",
            format!(
                "{} (merging open buckets, fsync; not in seconds)",
                human_seconds(f.close_seconds)
            ),
        ),
        (
            "disk bytes",
            format!(
                "{} ({} allocated; fjall's disk_space: {}; buckets' storedBytes: {})",
                f.disk_bytes,
                human_bytes(f.disk_bytes),
                human_bytes(f.fjall_disk_space),
                human_bytes(f.stored_bytes)
            ),
        ),
        (
            "bytes/measurement",
            format!(
                "{:.2} ({:.2} in the buckets)",
                f.bytes_per_measurement(),
                f.stored_bytes as f64 / f.measurements.max(1) as f64
            ),
        ),
        ("write amplification", write_amplification),
        ("peak RSS", peak_rss),
        ("durability", durability_name(args.durability)),
        ("threads", args.threads.to_string()),
    ];
    if let Some(c) = &f.bucket_catalog {
        let get = |k: &str| c.get_i64(k).map_or("-".to_owned(), |v| v.to_string());
        rows.push((
            "bucket catalog",
            format!(
                "{} buckets ({} open), {} commits, {} measurements per commit, {} B of memory",
                get("numBuckets"),
                get("numOpenBuckets"),
                get("numCommits"),
                get("avgNumMeasurementsPerCommit"),
                get("memoryUsage"),
            ),
        ));
    }
    let mut out = format!(
        "TSBS cpu-only: {} hosts x {} days = {} measurements of {} fields (seed {}), \
         batches of {}\n",
        args.workload.hosts,
        args.workload.days,
        workload.measurements(),
        FIELDS.len(),
        args.workload.seed,
        args.batch_size
    );
    for (label, value) in rows {
        out.push_str(&format!("{label:<20} {value}\n"));
    }
    out
}

/// The `--durability` value as written on the command line.
fn durability_name(d: DurabilityArg) -> String {
    clap::ValueEnum::to_possible_value(&d).map_or_else(
        || format!("{d:?}").to_lowercase(),
        |v| v.get_name().to_owned(),
    )
}

/// The bytes the files under `dir` occupy on disk: allocated blocks (what `du` counts), so
/// a sparse, preallocated journal counts only what was written into it. Not on Unix: the
/// files' lengths.
///
/// # Errors
/// A directory or file cannot be read.
fn allocated_bytes(dir: &Path) -> CmdResult<u64> {
    let mut total = 0;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d)? {
            let entry = entry?;
            let meta = entry.metadata()?;
            if meta.is_dir() {
                pending.push(entry.path());
            } else {
                #[cfg(unix)]
                {
                    total += std::os::unix::fs::MetadataExt::blocks(&meta) * 512;
                }
                #[cfg(not(unix))]
                {
                    total += meta.len();
                }
            }
        }
    }
    Ok(total)
}

/// The `write_bytes` line of `/proc/self/io`: bytes this process caused to be sent to the
/// block layer. `None` where the file does not exist (not Linux, no task I/O accounting).
fn proc_write_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/io").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("write_bytes:"))
        .and_then(|v| v.trim().parse().ok())
}

/// A `KEY: N kB` line of a `/proc` file (`VmHWM` and `VmRSS` of `/proc/self/status`,
/// `MemAvailable` of `/proc/meminfo`), in bytes.
fn proc_kb_line(file: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(file).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
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
    fn proc_files_are_read_on_linux() {
        if cfg!(target_os = "linux") {
            for (file, key) in [
                ("/proc/self/status", "VmHWM"),
                ("/proc/self/status", "VmRSS"),
                ("/proc/meminfo", "MemAvailable"),
            ] {
                assert!(proc_kb_line(file, key).is_some_and(|b| b > 0), "{key}");
            }
        }
        assert_eq!(proc_kb_line("/proc/self/status", "NoSuchKey"), None);
    }

    #[test]
    fn generation_mode() {
        let small = Workload::new(10, 0.1, 1);
        let large = Workload::new(1000, 1.0, 1);
        assert!(Generate::Ahead.ahead(&large));
        assert!(!Generate::Inline.ahead(&small));
        assert!(!Generate::Auto.ahead(&large));
        assert!(Generate::Auto.ahead(&small));
    }

    #[test]
    fn allocated_bytes_counts_written_blocks_not_lengths() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
        std::fs::write(dir.path().join("sub/a"), vec![1u8; 10_000]).expect("write");
        let sparse = std::fs::File::create(dir.path().join("sparse")).expect("create");
        sparse.set_len(64 << 20).expect("set_len");
        let bytes = allocated_bytes(dir.path()).expect("size");
        assert!(bytes >= 10_000, "{bytes}");
        if cfg!(unix) {
            assert!(bytes < 1 << 20, "{bytes}");
        }
    }
}
