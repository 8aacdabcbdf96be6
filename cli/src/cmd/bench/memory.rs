//! `tscoll bench memory`: the peak memory of reads whose results are larger than memory
//! should be, each checked against a bound.
//!
//! **Set-up.** `--db DIR` holding the `cpu` collection of `bench ingest` is reused; otherwise
//! (a fresh temporary directory by default) the TSBS "cpu-only" workload is generated and
//! inserted first (`--threads` writers, batches of 5000, unordered, buffered) and the
//! database closed.
//!
//! **What is measured.** Each read runs as a child process of this binary
//! (`std::env::current_exe()`), given `--sort-memory-bytes` and the hidden
//! `--report-peak-rss`, its whole result written to a pipe that this process reads and
//! counts the lines of: the child reports its peak resident set (`VmHWM` of
//! `/proc/self/status`) on stderr as it ends. The reads:
//!
//! * `find` — every measurement, unsorted (streamed bucket by bucket);
//! * `find-sort` — every measurement sorted on `usage_user` (the external sort);
//! * `match` — a pipeline: a `$match` on a field, then `$addFields` (streamed);
//! * `sort` — a pipeline `$sort` on `usage_user` (the external sort);
//! * `group` — a pipeline `$group` by host (the groups held);
//! * `window` — `$setWindowFields` by host, sorted on time, a moving average over 10
//!   documents;
//! * `window-all` — `$setWindowFields` over the whole collection as one partition (sorted
//!   on time, a moving sum over 10 documents: computed a chunk at a time);
//! * `sql` (built with the feature `sql`) — `SELECT * FROM cpu`.
//!
//! A read fails the command (exit status 1) when its peak passes `--max-rss-mib`, when it
//! fails, or when it returns fewer lines than it must (every measurement, or one per host
//! for `group`).

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use serde_json::{Value, json};
use tscoll_benches::tsbs;
use tscoll_engine::{Database, DatabaseOptions, TimeseriesOptions};

use super::ingest::COLLECTION;
use super::query::BenchDb;
use crate::cmd::{CmdResult, human_bytes};

/// The prefix of the stderr line a child started with `--report-peak-rss` ends with.
pub(crate) const PEAK_RSS_LINE: &str = "peak RSS bytes: ";

/// Arguments of `tscoll bench memory`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The database, and the workload ingested into it when it lacks it.
    #[command(flatten)]
    pub(crate) data: BenchDb,
    /// The bound on each read's peak resident set, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 256)]
    pub(crate) max_rss_mib: u64,
    /// The reads to run, comma-separated (default: all; `sql` is skipped in a build without
    /// the feature `sql`).
    #[arg(long, value_delimiter = ',', value_parser = READS)]
    pub(crate) reads: Vec<String>,
    /// Bytes of rows each read's sorts hold in memory before they spill sorted runs to
    /// temporary files (the reads' `--sort-memory-bytes`).
    #[arg(long, value_name = "BYTES", default_value_t = tscoll_engine::SORT_MEMORY_LIMIT)]
    pub(crate) sort_memory_bytes: u64,
    /// Print one JSON object on stdout instead of the table.
    #[arg(long)]
    pub(crate) json: bool,
}

/// The reads, by name.
const READS: [&str; 8] = [
    "find",
    "find-sort",
    "match",
    "sort",
    "group",
    "window",
    "window-all",
    "sql",
];

/// One read: its command line after `--db DIR`, and whether it returns one line per host
/// rather than one per measurement.
fn read_args(name: &str, db: &Path) -> Option<(Vec<String>, bool)> {
    let db = db.display().to_string();
    let pipeline = |p: Value| -> Vec<String> {
        [
            "aggregate",
            "--db",
            &db,
            COLLECTION,
            "--pipeline",
            &p.to_string(),
        ]
        .map(str::to_owned)
        .to_vec()
    };
    let find = |extra: &[&str]| -> Vec<String> {
        ["find", "--db", &db, COLLECTION]
            .iter()
            .chain(extra)
            .map(|s| (*s).to_owned())
            .collect()
    };
    let window = |partition: Option<&str>, output: Value| {
        let mut spec = json!({ "sortBy": { tsbs::TIME_FIELD: 1 }, "output": output });
        if let (Some(p), Value::Object(m)) = (partition, &mut spec) {
            m.insert("partitionBy".to_owned(), json!(p));
        }
        pipeline(json!([{ "$setWindowFields": spec }]))
    };
    Some(match name {
        "find" => (find(&[]), false),
        "find-sort" => (find(&["--sort", "usage_user:1"]), false),
        "match" => (
            pipeline(json!([
                { "$match": { "usage_user": { "$gte": 0 } } },
                { "$addFields": { "busy": { "$add": ["$usage_user", "$usage_system"] } } },
            ])),
            false,
        ),
        "sort" => (pipeline(json!([{ "$sort": { "usage_user": 1 } }])), false),
        "group" => (
            pipeline(json!([{ "$group": {
                "_id": "$tags.hostname",
                "n": { "$sum": 1 },
                "avg": { "$avg": "$usage_user" },
            } }])),
            true,
        ),
        "window" => (
            window(
                Some("$tags.hostname"),
                json!({ "avg": { "$avg": "$usage_user", "window": { "documents": [-9, 0] } } }),
            ),
            false,
        ),
        "window-all" => (
            window(
                None,
                json!({ "sum": { "$sum": "$usage_user", "window": { "documents": [-9, 0] } } }),
            ),
            false,
        ),
        "sql" if cfg!(feature = "sql") => (
            [
                "sql",
                "--db",
                &db,
                "--format",
                "ndjson",
                &format!("SELECT * FROM {COLLECTION}"),
            ]
            .map(str::to_owned)
            .to_vec(),
            false,
        ),
        _ => return None,
    })
}

/// What one read did.
struct Measured {
    name: String,
    peak_rss_bytes: u64,
    lines: u64,
    seconds: f64,
    /// Why it failed, if it did.
    failure: Option<String>,
}

/// Runs `tscoll bench memory`.
///
/// # Errors
/// The database cannot be opened or the ingest fails, or a child cannot be started.
pub(crate) fn run(args: &Args) -> CmdResult<ExitCode> {
    let workload = args.data.workload.workload();
    let (_temp, dir) = super::bench_dir(args.data.db.as_deref(), "tscoll-bench-memory-")?;
    {
        let db = Database::open(&dir, DatabaseOptions::default())
            .map_err(|e| format!("cannot open database {}: {e}", dir.display()))?;
        if db.collection(COLLECTION).is_err() {
            let options = TimeseriesOptions::new(tsbs::TIME_FIELD).meta_field(tsbs::META_FIELD);
            let coll = db.create_collection(COLLECTION, &options)?;
            super::query::ingest(&coll, &workload, args.data.threads as usize)?;
        }
        db.close()?;
    }
    let measurements = workload.measurements();
    let hosts = u64::from(args.data.workload.hosts);
    let names: Vec<&str> = if args.reads.is_empty() {
        READS.to_vec()
    } else {
        args.reads.iter().map(String::as_str).collect()
    };
    let bound = args.max_rss_mib << 20;
    let mut results = Vec::new();
    for name in names {
        let Some((command, per_host)) = read_args(name, &dir) else {
            continue;
        };
        let expected_lines = if per_host { hosts } else { measurements };
        results.push(measure(
            name,
            &command,
            expected_lines,
            bound,
            args.sort_memory_bytes,
        )?);
    }
    let failed = results.iter().any(|m| m.failure.is_some());
    let mut out = std::io::stdout().lock();
    if args.json {
        let reads: Vec<Value> = results
            .iter()
            .map(|m| {
                json!({
                    "read": m.name,
                    "peak_rss_bytes": m.peak_rss_bytes,
                    "lines": m.lines,
                    "seconds": m.seconds,
                    "failure": m.failure,
                })
            })
            .collect();
        let line = json!({
            "hosts": args.data.workload.hosts,
            "days": args.data.workload.days,
            "seed": args.data.workload.seed,
            "measurements": measurements,
            "max_rss_bytes": bound,
            "sort_memory_bytes": args.sort_memory_bytes,
            "reads": reads,
        });
        writeln!(out, "{line}")?;
    } else {
        writeln!(
            out,
            "TSBS cpu-only: {} hosts x {} days = {measurements} measurements (seed {}); \
             bound {} per read, sorts spill past {}",
            args.data.workload.hosts,
            args.data.workload.days,
            args.data.workload.seed,
            human_bytes(bound),
            human_bytes(args.sort_memory_bytes),
        )?;
        writeln!(
            out,
            "{:<11} {:>12} {:>10} {:>9}  result",
            "read", "peak RSS", "lines", "seconds"
        )?;
        for m in &results {
            writeln!(
                out,
                "{:<11} {:>12} {:>10} {:>9.1}  {}",
                m.name,
                human_bytes(m.peak_rss_bytes),
                m.lines,
                m.seconds,
                m.failure.as_deref().unwrap_or("ok")
            )?;
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Runs one read as a child process and checks it.
///
/// # Errors
/// The child cannot be started or its output read.
fn measure(
    name: &str,
    command: &[String],
    expected_lines: u64,
    bound: u64,
    sort_memory_bytes: u64,
) -> CmdResult<Measured> {
    let start = Instant::now();
    let mut child = Command::new(std::env::current_exe()?)
        .arg("--report-peak-rss")
        .args(command)
        .arg("--sort-memory-bytes")
        .arg(sort_memory_bytes.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut stderr = child.stderr.take().ok_or("no stderr")?;
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        stderr.read_to_string(&mut text).map(|_| text)
    });
    let mut lines = 0u64;
    let mut stdout = BufReader::with_capacity(1 << 16, child.stdout.take().ok_or("no stdout")?);
    loop {
        let buf = stdout.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        lines += buf.iter().filter(|&&b| b == b'\n').count() as u64;
        let n = buf.len();
        stdout.consume(n);
    }
    let status = child.wait()?;
    let seconds = start.elapsed().as_secs_f64();
    let stderr = errors.join().map_err(|_| "reading stderr panicked")??;
    let peak = stderr
        .lines()
        .find_map(|l| l.strip_prefix(PEAK_RSS_LINE))
        .and_then(|v| v.trim().parse::<u64>().ok());
    let failure = if !status.success() {
        Some(format!("failed ({status}): {}", stderr.trim()))
    } else if let Some(p) = peak.filter(|&p| p > bound) {
        Some(format!("peak RSS {} over the bound", human_bytes(p)))
    } else if peak.is_none() {
        Some("no peak RSS reported".to_owned())
    } else if lines != expected_lines {
        Some(format!("{lines} lines, expected {expected_lines}"))
    } else {
        None
    };
    Ok(Measured {
        name: name.to_owned(),
        peak_rss_bytes: peak.unwrap_or(0),
        lines,
        seconds,
        failure,
    })
}
