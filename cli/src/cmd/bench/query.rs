//! `tscoll bench query`: query latency on TSBS's "cpu-only" workload (the data of
//! `bench ingest`), for three queries:
//!
//! * **q1** — one host, one hour: `{tags: <the host's tags>, time: {$gte: h, $lt: h + 1 h}}`,
//!   sorted on time (360 measurements, a whole-meta equality: one hash prefix of the index);
//! * **q2** — the last point of every host (`Collection::last_points`, `{}`);
//! * **q3** — `max(usage_user)` per host per hour over all the data
//!   (`Collection::aggregate_columns`: hourly windows, by series, groups as columns);
//! * **q3d** — q3 with one document per group (`Collection::aggregate`), which copies the
//!   host's tags into every group's `_id`.
//!
//! **Set-up.** `--db DIR` holding the `cpu` collection of `bench ingest` is reused as it is;
//! otherwise (a fresh temporary directory by default) the workload is generated and inserted
//! first (`--threads` writers, batches of 5000, unordered, buffered), then the database is
//! closed and opened again so that every bucket is merged into one segment and the queries
//! start from storage, not from the ingest's memory.
//!
//! **What is timed.** Each query runs once untimed (warm-up), then `--reps` times; each run is
//! timed alone (wall clock around the engine call, results kept in memory, not printed). The
//! median and the 90th percentile (nearest rank) are reported in milliseconds, with the
//! query's work counters (`QueryStats`) and its result count, which is checked against the
//! workload (q1: the host's rows in that hour; q2: one row per host; q3: one group per host
//! and hour).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use bson::{Bson, DateTime, Document, doc};
use serde_json::json;
use tscoll_benches::tsbs::{self, Workload};
use tscoll_engine::{
    Accumulator, AggregateSpec, Collection, Database, DatabaseOptions, FindOptions, InsertOptions,
    QueryStats, SortOrder, TimeseriesOptions,
};

use super::ingest::{COLLECTION, WorkloadArgs};
use crate::cmd::CmdResult;

const HOUR_MS: i64 = 3_600_000;

/// Arguments of `tscoll bench query`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The workload (ingested when the database has no `cpu` collection; with an existing
    /// one, it must describe that data: it picks the queried host and hour and the expected
    /// result counts).
    #[command(flatten)]
    pub(crate) workload: WorkloadArgs,
    /// Database directory: reused when it holds the `cpu` collection of `bench ingest`,
    /// otherwise the workload is ingested into it. Default: a fresh temporary directory,
    /// removed at the end.
    #[arg(long, value_name = "DIR")]
    pub(crate) db: Option<PathBuf>,
    /// Timed runs of each query (after one warm-up run).
    #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub(crate) reps: u32,
    /// Threads inserting the workload when it is ingested.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub(crate) threads: u32,
    /// The queries to run, comma-separated (default: all).
    #[arg(long, value_delimiter = ',', value_parser = ["q1", "q2", "q3", "q3d"],
          default_value = "q1,q2,q3,q3d")]
    pub(crate) queries: Vec<String>,
    /// Print one JSON object on stdout instead of the table.
    #[arg(long)]
    pub(crate) json: bool,
}

/// One query's figures.
struct Timing {
    name: &'static str,
    what: String,
    results: usize,
    expected: usize,
    median_ms: f64,
    p90_ms: f64,
    stats: QueryStats,
}

/// Runs `tscoll bench query`.
///
/// # Errors
/// The database cannot be opened, the ingest fails, a query fails or returns an unexpected
/// number of results.
pub(crate) fn run(args: &Args) -> CmdResult<ExitCode> {
    let workload = args.workload.workload();
    let (_temp, dir) = super::bench_dir(args.db.as_deref(), "tscoll-bench-query-")?;
    let mut ingest_seconds = None;
    let db = Database::open(&dir, DatabaseOptions::default())
        .map_err(|e| format!("cannot open database {}: {e}", dir.display()))?;
    if db.collection(COLLECTION).is_err() {
        let options = TimeseriesOptions::new(tsbs::TIME_FIELD).meta_field(tsbs::META_FIELD);
        let coll = db.create_collection(COLLECTION, &options)?;
        let start = Instant::now();
        ingest(&coll, &workload, args.threads as usize)?;
        db.close()?;
        ingest_seconds = Some(start.elapsed().as_secs_f64());
    }
    drop(db);
    let db = Database::open(&dir, DatabaseOptions::default())
        .map_err(|e| format!("cannot open database {}: {e}", dir.display()))?;
    let coll = db.collection(COLLECTION)?;
    let stats = coll.stats()?;
    let reps = args.reps as usize;
    let mut timings = Vec::new();
    for q in &args.queries {
        timings.push(match q.as_str() {
            "q1" => q1(&coll, &workload, reps)?,
            "q2" => q2(&coll, &workload, reps)?,
            "q3" => q3(&coll, &workload, reps, false)?,
            _ => q3(&coll, &workload, reps, true)?,
        });
    }
    for t in &timings {
        if t.results != t.expected {
            return Err(format!(
                "{}: {} results, {} expected (does --hosts/--days/--seed describe the data in the database?)",
                t.name, t.results, t.expected
            )
            .into());
        }
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        let queries: Vec<_> = timings
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "query": t.what,
                    "median_ms": t.median_ms,
                    "p90_ms": t.p90_ms,
                    "results": t.results,
                    "stats": Bson::Document(t.stats.to_document()).into_relaxed_extjson(),
                })
            })
            .collect();
        let line = json!({
            "hosts": args.workload.hosts,
            "days": args.workload.days,
            "seed": args.workload.seed,
            "measurements": stats.measurement_count,
            "buckets": stats.bucket_count,
            "ingest_seconds": ingest_seconds,
            "reps": reps,
            "queries": queries,
        });
        writeln!(out, "{line}")?;
    } else {
        writeln!(
            out,
            "TSBS cpu-only: {} hosts x {} days = {} measurements in {} buckets (seed {}){}",
            args.workload.hosts,
            args.workload.days,
            stats.measurement_count,
            stats.bucket_count,
            args.workload.seed,
            ingest_seconds.map_or(String::new(), |s| format!(", ingested in {s:.1} s"))
        )?;
        writeln!(
            out,
            "{reps} timed runs per query after one warm-up; times in ms"
        )?;
        writeln!(
            out,
            "{:<4} {:>9} {:>9} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9}  query",
            "", "median", "p90", "results", "idx read", "buckets", "unpacked", "control", "rows"
        )?;
        for t in &timings {
            writeln!(
                out,
                "{:<4} {:>9.3} {:>9.3} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9}  {}",
                t.name,
                t.median_ms,
                t.p90_ms,
                t.results,
                t.stats.index_entries_scanned,
                t.stats.buckets_read,
                t.stats.buckets_unpacked,
                t.stats.buckets_from_control,
                t.stats.rows_examined,
                t.what
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Inserts the workload from `threads` threads (hosts split as in `bench ingest`).
fn ingest(coll: &Collection, workload: &Workload, threads: usize) -> CmdResult<()> {
    let options = InsertOptions {
        ordered: false,
        ..InsertOptions::default()
    };
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let mut part = workload.part(t, threads);
                s.spawn(move || -> CmdResult<()> {
                    let mut batch = Vec::with_capacity(5000);
                    loop {
                        batch.clear();
                        if part.fill_batch(&mut batch, 5000) == 0 {
                            return Ok(());
                        }
                        let r = coll.insert_many(&batch, &options)?;
                        if let Some(e) = r.errors.first() {
                            return Err(format!(
                                "insert_many rejected #{}: {}",
                                e.index, e.message
                            )
                            .into());
                        }
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .try_for_each(|h| h.join().unwrap_or_else(|_| Err("a thread panicked".into())))
    })
}

/// Runs `query` once untimed and `reps` times timed: (last result count, last stats, median
/// ms, p90 ms).
fn time_query(
    reps: usize,
    mut query: impl FnMut() -> CmdResult<(usize, QueryStats)>,
) -> CmdResult<(usize, QueryStats, f64, f64)> {
    query()?;
    let mut times = Vec::with_capacity(reps);
    let mut last = (0, QueryStats::default());
    for _ in 0..reps {
        let start = Instant::now();
        last = query()?;
        times.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    let median = if reps % 2 == 1 {
        times[reps / 2]
    } else {
        f64::midpoint(times[reps / 2 - 1], times[reps / 2])
    };
    let p90 = times[(reps * 9).div_ceil(10).max(1) - 1];
    Ok((last.0, last.1, median, p90))
}

/// The host's tags as stored: the meta value normalized (fields sorted, SPEC ), which a
/// whole-meta equality must match byte for byte.
fn normalized_tags(workload: &Workload, host: usize) -> Document {
    let tags = workload.host_tags(host);
    let mut fields: Vec<(String, Bson)> = tags.into_iter().collect();
    fields.sort_by(|a, b| a.0.cmp(&b.0));
    fields.into_iter().collect()
}

/// q1: one host, one hour (the hour in the middle of the data, or its first hour).
fn q1(coll: &Collection, workload: &Workload, reps: usize) -> CmdResult<Timing> {
    let host = workload.hosts / 2;
    let steps = workload.steps();
    let mid = Workload::time_ms(steps / 2);
    let from = (mid.div_euclid(HOUR_MS) * HOUR_MS).max(tsbs::START_MS);
    let to = from + HOUR_MS;
    let filter = doc! {
        tsbs::META_FIELD: normalized_tags(workload, host),
        tsbs::TIME_FIELD: { "$gte": DateTime::from_millis(from), "$lt": DateTime::from_millis(to) },
    };
    let options = FindOptions {
        sort: Some(SortOrder::Ascending),
        ..FindOptions::default()
    };
    let expected = (0..steps)
        .filter(|&s| (from..to).contains(&Workload::time_ms(s)))
        .count();
    let (results, stats, median_ms, p90_ms) = time_query(reps, || {
        let (docs, stats) = coll.find_with_stats(&filter, &options)?;
        Ok((docs.len(), stats))
    })?;
    Ok(Timing {
        name: "q1",
        what: format!(
            "host_{host}, 1 h from {}, sorted on time",
            DateTime::from_millis(from)
                .try_to_rfc3339_string()
                .unwrap_or_default()
        ),
        results,
        expected,
        median_ms,
        p90_ms,
        stats,
    })
}

/// q2: the last point of every host.
fn q2(coll: &Collection, workload: &Workload, reps: usize) -> CmdResult<Timing> {
    let (results, stats, median_ms, p90_ms) = time_query(reps, || {
        let (docs, stats) = coll.last_points_with_stats(&doc! {})?;
        Ok((docs.len(), stats))
    })?;
    Ok(Timing {
        name: "q2",
        what: "last point of every host".to_owned(),
        results,
        expected: if workload.steps() == 0 {
            0
        } else {
            workload.hosts
        },
        median_ms,
        p90_ms,
        stats,
    })
}

/// q3: max(usage_user) per host per hour over all the data, as columns or (`documents`) one
/// document per group.
fn q3(coll: &Collection, workload: &Workload, reps: usize, documents: bool) -> CmdResult<Timing> {
    let spec = AggregateSpec {
        window_ms: HOUR_MS,
        by_series: true,
        outputs: vec![(
            "max_usage_user".to_owned(),
            Accumulator::Max("usage_user".to_owned()),
        )],
    };
    let steps = workload.steps();
    let hours = if steps == 0 {
        0
    } else {
        let last = Workload::time_ms(steps - 1);
        usize::try_from((last.div_euclid(HOUR_MS) - tsbs::START_MS.div_euclid(HOUR_MS)) + 1)
            .unwrap_or(0)
    };
    let (results, stats, median_ms, p90_ms) = time_query(reps, || {
        if documents {
            let (groups, stats) = coll.aggregate_with_stats(&doc! {}, &spec)?;
            Ok((groups.len(), stats))
        } else {
            let (groups, stats) = coll.aggregate_columns_with_stats(&doc! {}, &spec)?;
            Ok((groups.len(), stats))
        }
    })?;
    Ok(Timing {
        name: if documents { "q3d" } else { "q3" },
        what: if documents {
            "q3 as one document per group".to_owned()
        } else {
            "max(usage_user) per host per hour, all data".to_owned()
        },
        results,
        expected: workload.hosts * hours,
        median_ms,
        p90_ms,
        stats,
    })
}
