//! `tscoll bench query`: query latency on TSBS's "cpu-only" workload (the data of
//! `bench ingest`: hosts with 10 string tags as the meta field `tags`, one measurement per host
//! every 10 s from 2016-01-01T00:00:00Z, 10 integer fields `usage_user` … `usage_guest_nice`),
//! for four queries:
//!
//! * **q1** — all 10 fields of `host_42` (the host whose `tags.hostname` is `"host_42"`; the
//!   last host when there are fewer) from 12:00 to 18:00 of the first day, sorted on time
//!   (2 160 measurements): `Collection::find_arrow` with the filter
//!   `{"tags.hostname": "host_42", time: {$gte: 12:00, $lt: 18:00}}`, the projection
//!   `{_id: 0, time: 1, usage_user: 1, …}` and an ascending sort;
//! * **q2** — `max(usage_user)` per host per hour over all the data
//!   (`Collection::aggregate_columns`: hourly windows, by series);
//! * **q3** — the average of each of the 10 fields per host per hour over all the data
//!   (`aggregate_columns` with 10 `Avg` outputs);
//! * **scan** — every measurement's time and 10 fields as Arrow batches
//!   (`Collection::find_arrow`, no filter, no sort), reported also as values per second.
//!
//! **Set-up.** `--db DIR` holding the `cpu` collection of `bench ingest` is reused; otherwise
//! (a fresh temporary directory by default) the workload is generated and inserted first
//! (`--threads` writers, batches of 5000, unordered, buffered) and the database closed. Then,
//! unless `--no-compact`, the database is compacted (`Database::compact`: every bucket in one
//! blob with its latest control record, the journal's writes in tables) and closed. The
//! queries run on the database opened again, so they start from storage, not from the
//! ingest's memory. With `--open`, the queries run on the database still open after the
//! ingest instead: every series' newest bucket is in memory, its rows read beside the store
//! by every query. Ingest and compaction are not timed.
//!
//! **What is timed.** Each query runs once untimed (warm-up), then `--reps` times (default 5);
//! each run is timed alone (wall clock around the engine call, results kept in memory, not
//! printed). The median and the 90th percentile (nearest rank) are reported in milliseconds,
//! with the query's work counters (`QueryStats`) and its result count. `--json` prints one
//! object: the workload, `measurements`, `buckets`, `ingest_seconds`, `compact_seconds`, `open`, `reps`,
//! and per query `q1_ms` (the median), `q1_p90_ms`, `q1_results` and `q1_stats` (the counters).
//!
//! **Checks.** The expected results are computed from the generated data (one pass of the
//! workload's generator on two threads, untimed): q1's rows (time and the 10 values of each),
//! and per host and hour the count, the maximum of `usage_user` and the exact sum of every
//! field. The result of the last timed run of each query is compared with them: q1 row by row
//! and field by field, q2 and q3 group by group (every host and hour exactly once; each maximum
//! equal; each average equal, bit for bit, to the exact sum divided by the count), scan by
//! its row count and the sum of every field. Any
//! difference fails the command with a message naming the query, the group and both values.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, TimestampMillisecondType};
use arrow_array::{Array, ArrayRef, RecordBatch};
use bson::{Bson, DateTime, doc};
use serde_json::{Value, json};
use tscoll_benches::tsbs::{self, Workload};
use tscoll_engine::{
    Accumulator, AggregateBatch, AggregateSpec, ArrowOptions, Collection, Database,
    DatabaseOptions, FindOptions, InsertOptions, QueryStats, SortOrder, TimeseriesOptions,
};

use super::ingest::{COLLECTION, WorkloadArgs};
use crate::cmd::CmdResult;

const HOUR_MS: i64 = 3_600_000;

/// The host of q1 (`host_42`, or the last host when there are fewer).
const Q1_HOST: usize = 42;

/// q1's time range within the first day: 12:00 to 18:00.
const Q1_FROM_MS: i64 = tsbs::START_MS + 12 * HOUR_MS;
const Q1_TO_MS: i64 = tsbs::START_MS + 18 * HOUR_MS;

/// Arguments of `tscoll bench query`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The database, and the workload ingested into it when it lacks it (with an existing
    /// one, the workload must describe that data: the results are checked against it).
    #[command(flatten)]
    pub(crate) data: BenchDb,
    /// Timed runs of each query (after one warm-up run).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub(crate) reps: u32,
    /// Query the database as it is, without compacting it first (by default it is compacted
    /// before the queries, untimed: `Database::compact`, so that every bucket is one blob
    /// with its latest control record and the journal's writes are in tables).
    #[arg(long)]
    pub(crate) no_compact: bool,
    /// Query the database still open after ingesting the workload: no close, no compaction,
    /// so every series' newest bucket is still in memory and each query reads its rows
    /// beside the store (ignored when the database holds the workload already).
    #[arg(long)]
    pub(crate) open: bool,
    /// The queries to run, comma-separated (default: all four).
    #[arg(long, value_delimiter = ',', value_parser = ["q1", "q2", "q3", "scan"],
          default_value = "q1,q2,q3,scan")]
    pub(crate) queries: Vec<String>,
    /// Print one JSON object on stdout instead of the table.
    #[arg(long)]
    pub(crate) json: bool,
    /// Keep rollups at these resolutions (`tscoll create --rollup`), e.g. `1h`: q2 and q3
    /// are then answered from the hourly rollup.
    #[arg(long = "rollup", value_name = "LIST", value_delimiter = ',',
          value_parser = crate::cmd::create::parse_resolution)]
    pub(crate) rollups: Vec<i64>,
}

/// The database a read benchmark (`bench query`, `bench memory`) runs on, and the TSBS
/// workload ingested into it when it has no `cpu` collection.
#[derive(Debug, clap::Args)]
pub(crate) struct BenchDb {
    /// The workload.
    #[command(flatten)]
    pub(crate) workload: WorkloadArgs,
    /// Database directory: reused when it holds the `cpu` collection of `bench ingest`,
    /// otherwise the workload is ingested into it. Default: a fresh temporary directory,
    /// removed at the end.
    #[arg(long, value_name = "DIR")]
    pub(crate) db: Option<PathBuf>,
    /// Threads inserting the workload when it is ingested.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub(crate) threads: u32,
}

/// One query's figures.
struct Timing {
    name: &'static str,
    /// Values returned per row (the scan's rate counts them).
    values_per_row: usize,
    what: String,
    results: usize,
    median_ms: f64,
    p90_ms: f64,
    stats: QueryStats,
}

/// Runs `tscoll bench query`.
///
/// # Errors
/// The database cannot be opened, the ingest fails, a query fails or returns a result that
/// differs from the one computed from the generated data.
pub(crate) fn run(args: &Args) -> CmdResult<ExitCode> {
    let workload = args.data.workload.workload();
    let (_temp, dir) = super::bench_dir(args.data.db.as_deref(), "tscoll-bench-query-")?;
    let mut ingest_seconds = None;
    // The catalog threshold every other command opens with (`--catalog-memory`'s default, 5 %
    // of the machine's memory): the library's 64 MiB archives some of 1000 hosts' full buckets.
    let options = || DatabaseOptions {
        catalog: crate::cmd::catalog_options(None),
        ..DatabaseOptions::default()
    };
    let mut db = Database::open(&dir, options())
        .map_err(|e| format!("cannot open database {}: {e}", dir.display()))?;
    if db.collection(COLLECTION).is_err() {
        let options = TimeseriesOptions::new(tsbs::TIME_FIELD)
            .meta_field(tsbs::META_FIELD)
            .rollups(&args.rollups);
        let coll = db.create_collection(COLLECTION, &options)?;
        let start = Instant::now();
        ingest(&coll, &workload, args.data.threads as usize)?;
        if !args.open {
            db.close()?;
        }
        ingest_seconds = Some(start.elapsed().as_secs_f64());
    }
    let open = args.open && ingest_seconds.is_some();
    let mut compact_seconds = None;
    if !open {
        if !args.no_compact {
            let start = Instant::now();
            db.compact()?;
            db.close()?;
            compact_seconds = Some(start.elapsed().as_secs_f64());
        }
        drop(db);
        db = Database::open(&dir, options())
            .map_err(|e| format!("cannot open database {}: {e}", dir.display()))?;
    }
    let coll = db.collection(COLLECTION)?;
    // `stats` stores the rows open buckets hold: with the database still open, only after
    // the queries.
    let stats_before = if open { None } else { Some(coll.stats()?) };
    let expected = Expected::compute(&workload);
    let reps = args.reps as usize;
    let mut timings = Vec::new();
    for q in &args.queries {
        timings.push(match q.as_str() {
            "q1" => q1(&coll, &expected, reps)?,
            "q2" => q2(&coll, &expected, reps)?,
            "q3" => q3(&coll, &expected, reps)?,
            _ => scan(&coll, &expected, reps)?,
        });
    }
    let stats = match stats_before {
        Some(s) => s,
        None => coll.stats()?,
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        let mut line = json!({
            "hosts": args.data.workload.hosts,
            "days": args.data.workload.days,
            "seed": args.data.workload.seed,
            "measurements": stats.measurement_count,
            "buckets": stats.bucket_count,
            "ingest_seconds": ingest_seconds,
            "compact_seconds": compact_seconds,
            "open": open,
            "reps": reps,
        });
        if let Value::Object(map) = &mut line {
            for t in &timings {
                let stats = Bson::Document(t.stats.to_document()).into_relaxed_extjson();
                map.insert(format!("{}_ms", t.name), json!(t.median_ms));
                map.insert(format!("{}_p90_ms", t.name), json!(t.p90_ms));
                map.insert(format!("{}_results", t.name), json!(t.results));
                map.insert(format!("{}_stats", t.name), stats);
                if t.name == "scan" {
                    map.insert("scan_values_per_s".to_owned(), json!(t.values_per_s()));
                }
            }
        }
        writeln!(out, "{line}")?;
    } else {
        writeln!(
            out,
            "TSBS cpu-only: {} hosts x {} days = {} measurements in {} buckets (seed {}){}",
            args.data.workload.hosts,
            args.data.workload.days,
            stats.measurement_count,
            stats.bucket_count,
            args.data.workload.seed,
            ingest_seconds.map_or(String::new(), |s| format!(", ingested in {s:.1} s"))
                + &compact_seconds.map_or(String::new(), |s| format!(", compacted in {s:.1} s"))
        )?;
        writeln!(
            out,
            "{reps} timed runs per query after one warm-up; times in ms; every result checked \
             against the generated data"
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
pub(crate) fn ingest(coll: &Collection, workload: &Workload, threads: usize) -> CmdResult<()> {
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

/// Per host and hour: what q2 and q3 must return.
#[derive(Clone, Copy, Default)]
struct HourAgg {
    count: u64,
    max_user: i32,
    sums: [i64; 10],
}

/// A q1 row: time and the 10 values.
type Row = (i64, [i32; 10]);

/// What one generator thread computes: its hosts, their `HourAgg`s (`hours` per host, in
/// host order) and the q1 rows among them.
struct ExpectedPart {
    hosts: Vec<usize>,
    aggs: Vec<HourAgg>,
    rows: Vec<Row>,
}

/// The results the queries must return, computed from the generated data.
struct Expected {
    workload: Workload,
    /// q1's host.
    q1_host: usize,
    /// q1's rows: (time, the 10 values), ascending in time.
    q1_rows: Vec<Row>,
    /// Hours covered by the data (windows per host).
    hours: usize,
    /// `aggs[host * hours + hour]`.
    aggs: Vec<HourAgg>,
}

impl Expected {
    /// One pass of the generator (two threads, each over half of the hosts).
    fn compute(workload: &Workload) -> Expected {
        let steps = workload.steps();
        let hours = if steps == 0 {
            0
        } else {
            let last = Workload::time_ms(steps - 1);
            usize::try_from(last.div_euclid(HOUR_MS) - tsbs::START_MS.div_euclid(HOUR_MS) + 1)
                .unwrap_or(0)
        };
        let q1_host = Q1_HOST.min(workload.hosts.saturating_sub(1));
        let parts = 2;
        let results: Vec<ExpectedPart> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..parts)
                .map(|p| {
                    s.spawn(move || {
                        let mut generator = workload.part(p, parts);
                        let hosts = generator.hosts();
                        let mut slot = vec![usize::MAX; workload.hosts];
                        for (i, &h) in hosts.iter().enumerate() {
                            slot[h] = i;
                        }
                        let mut aggs = vec![HourAgg::default(); hosts.len() * hours];
                        let mut rows = Vec::new();
                        while let Some(row) = generator.next_row() {
                            let t = row.time_ms();
                            let hour = usize::try_from(
                                t.div_euclid(HOUR_MS) - tsbs::START_MS.div_euclid(HOUR_MS),
                            )
                            .unwrap_or(0);
                            let a = &mut aggs[slot[row.host] * hours + hour];
                            if a.count == 0 || row.values[0] > a.max_user {
                                a.max_user = row.values[0];
                            }
                            a.count += 1;
                            for (s, v) in a.sums.iter_mut().zip(row.values) {
                                *s += i64::from(v);
                            }
                            if row.host == q1_host && (Q1_FROM_MS..Q1_TO_MS).contains(&t) {
                                rows.push((t, row.values));
                            }
                        }
                        ExpectedPart { hosts, aggs, rows }
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("generator thread"))
                .collect()
        });
        let mut aggs = vec![HourAgg::default(); workload.hosts * hours];
        let mut q1_rows = Vec::new();
        for ExpectedPart {
            hosts,
            aggs: part,
            rows,
        } in results
        {
            for (i, h) in hosts.into_iter().enumerate() {
                aggs[h * hours..(h + 1) * hours].copy_from_slice(&part[i * hours..(i + 1) * hours]);
            }
            q1_rows.extend(rows);
        }
        Expected {
            workload: *workload,
            q1_host,
            q1_rows,
            hours,
            aggs,
        }
    }

    /// The groups q2 and q3 must return: every (host, hour) with at least one measurement.
    fn groups(&self) -> usize {
        self.aggs.iter().filter(|a| a.count > 0).count()
    }
}

/// Runs `query` once untimed and `reps` times timed: (last result, last stats, median ms,
/// p90 ms).
fn time_query<T>(
    reps: usize,
    mut query: impl FnMut() -> CmdResult<(T, QueryStats)>,
) -> CmdResult<(T, QueryStats, f64, f64)> {
    query()?;
    let mut times = Vec::with_capacity(reps);
    let mut last = None;
    for _ in 0..reps {
        let start = Instant::now();
        let r = query()?;
        times.push(start.elapsed().as_secs_f64() * 1000.0);
        last = Some(r);
    }
    let (result, stats) = last.ok_or("no timed run")?;
    times.sort_by(f64::total_cmp);
    let median = crate::cmd::median(&times);
    let p90 = times[(reps * 9).div_ceil(10).max(1) - 1];
    Ok((result, stats, median, p90))
}

/// A value of the data: an int32 (as generated), or an int64 of the same value.
fn int_of(v: Option<&Bson>) -> Option<i64> {
    match v {
        Some(Bson::Int32(i)) => Some(i64::from(*i)),
        Some(Bson::Int64(i)) => Some(*i),
        _ => None,
    }
}

/// q1: all 10 fields of one host from 12:00 to 18:00 of the first day, sorted on time.
fn q1(coll: &Collection, expected: &Expected, reps: usize) -> CmdResult<Timing> {
    let host = expected.q1_host;
    let filter = doc! {
        format!("{}.hostname", tsbs::META_FIELD): format!("host_{host}"),
        tsbs::TIME_FIELD: {
            "$gte": DateTime::from_millis(Q1_FROM_MS),
            "$lt": DateTime::from_millis(Q1_TO_MS),
        },
    };
    let mut projection = doc! { "_id": 0, tsbs::TIME_FIELD: 1 };
    for f in tsbs::FIELDS {
        projection.insert(f, 1);
    }
    let options = FindOptions {
        projection: Some(projection),
        sort: Some(SortOrder::Ascending),
        ..FindOptions::default()
    };
    let (batches, stats, median_ms, p90_ms) = time_query(reps, || {
        let mut cursor = coll.find_arrow(&filter, &options, &ArrowOptions::default())?;
        let batches = cursor.by_ref().collect::<Result<Vec<_>, _>>()?;
        Ok((batches, cursor.stats()))
    })?;
    check_q1(&batches, expected)?;
    Ok(Timing {
        values_per_row: 1,
        name: "q1",
        what: format!("10 fields of host_{host}, 12:00 to 18:00 of day 1, sorted on time"),
        results: batches.iter().map(RecordBatch::num_rows).sum(),
        median_ms,
        p90_ms,
        stats,
    })
}

fn check_q1(batches: &[RecordBatch], expected: &Expected) -> CmdResult<()> {
    let fail = |m: String| Err(format!("q1: {m}").into());
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    if rows != expected.q1_rows.len() {
        return fail(format!(
            "{rows} rows, {} expected (does --hosts/--days/--seed describe the data in the database?)",
            expected.q1_rows.len()
        ));
    }
    let mut want = expected.q1_rows.iter().enumerate();
    for batch in batches {
        // The time, then the 10 fields.
        let names: Vec<&str> = batch
            .schema_ref()
            .fields()
            .iter()
            .skip(1)
            .map(|f| f.name().as_str())
            .collect();
        if names != tsbs::FIELDS {
            return fail(format!("fields {names:?}, the 10 of the workload expected"));
        }
        let times = batch
            .column(0)
            .as_primitive_opt::<TimestampMillisecondType>()
            .ok_or("q1: the time column is not a timestamp")?;
        for row in 0..batch.num_rows() {
            let Some((i, (t, values))) = want.next() else {
                return fail("more rows than expected".to_owned());
            };
            if times.value(row) != *t {
                return fail(format!("row {i}: time {}, {t} expected", times.value(row)));
            }
            for ((f, column), v) in tsbs::FIELDS
                .iter()
                .zip(batch.columns().iter().skip(1))
                .zip(values)
            {
                let got = arrow_int(column, row);
                if got != Some(i64::from(*v)) {
                    return fail(format!("row {i} ({t}): {f} = {got:?}, {v} expected"));
                }
            }
        }
    }
    Ok(())
}

/// Row `row` of an integer column, `None` when null or not an integer column.
fn arrow_int(column: &ArrayRef, row: usize) -> Option<i64> {
    if column.is_null(row) {
        return None;
    }
    if let Some(a) = column.as_primitive_opt::<Int32Type>() {
        return Some(i64::from(a.value(row)));
    }
    column.as_primitive_opt::<Int64Type>().map(|a| a.value(row))
}

/// The hourly, per-host aggregate of `outputs`.
fn hourly(outputs: Vec<(String, Accumulator)>) -> AggregateSpec {
    AggregateSpec {
        window_ms: HOUR_MS,
        by_series: true,
        outputs,
    }
}

/// q2: max(usage_user) per host per hour over all the data.
fn q2(coll: &Collection, expected: &Expected, reps: usize) -> CmdResult<Timing> {
    let spec = hourly(vec![(
        "max_usage_user".to_owned(),
        Accumulator::Max("usage_user".to_owned()),
    )]);
    let (batch, stats, median_ms, p90_ms) = time_query(reps, || {
        Ok(coll.aggregate_columns_with_stats(&doc! {}, &spec)?)
    })?;
    check_groups("q2", &batch, expected, |a, values| {
        let got = int_of(values[0]);
        (got == Some(i64::from(a.max_user)))
            .then_some(())
            .ok_or_else(|| format!("max {got:?}, {} expected", a.max_user))
    })?;
    Ok(Timing {
        values_per_row: 1,
        name: "q2",
        what: "max(usage_user) per host per hour, all data".to_owned(),
        results: batch.len(),
        median_ms,
        p90_ms,
        stats,
    })
}

/// q3: the average of every field per host per hour over all the data.
fn q3(coll: &Collection, expected: &Expected, reps: usize) -> CmdResult<Timing> {
    let spec = hourly(
        tsbs::FIELDS
            .iter()
            .map(|f| (format!("avg_{f}"), Accumulator::Avg((*f).to_owned())))
            .collect(),
    );
    let (batch, stats, median_ms, p90_ms) = time_query(reps, || {
        Ok(coll.aggregate_columns_with_stats(&doc! {}, &spec)?)
    })?;
    check_groups("q3", &batch, expected, |a, values| {
        for (k, v) in values.iter().enumerate() {
            #[expect(clippy::cast_precision_loss, reason = "exact below 2^53")]
            let want = a.sums[k] as f64 / a.count as f64;
            match v {
                Some(Bson::Double(x)) if x.to_bits() == want.to_bits() => {}
                _ => {
                    return Err(format!(
                        "avg {} = {v:?}, {want} expected (sum {}, count {})",
                        tsbs::FIELDS[k],
                        a.sums[k],
                        a.count
                    ));
                }
            }
        }
        Ok(())
    })?;
    Ok(Timing {
        values_per_row: 1,
        name: "q3",
        what: "avg of the 10 fields per host per hour, all data".to_owned(),
        results: batch.len(),
        median_ms,
        p90_ms,
        stats,
    })
}

/// scan: every measurement's time and 10 fields as Arrow batches (`find_arrow`, no filter,
/// no sort), checked by count and by the sum of every field.
fn scan(coll: &Collection, expected: &Expected, reps: usize) -> CmdResult<Timing> {
    let mut projection = doc! { "_id": 0, tsbs::TIME_FIELD: 1 };
    for f in tsbs::FIELDS {
        projection.insert(f, 1);
    }
    let options = FindOptions {
        projection: Some(projection),
        ..FindOptions::default()
    };
    let (batches, stats, median_ms, p90_ms) = time_query(reps, || {
        let mut cursor = coll.find_arrow(&doc! {}, &options, &ArrowOptions::default())?;
        let batches = cursor.by_ref().collect::<Result<Vec<_>, _>>()?;
        Ok((batches, cursor.stats()))
    })?;
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    let want_rows: u64 = expected.aggs.iter().map(|a| a.count).sum();
    if rows as u64 != want_rows {
        return Err(format!("scan: {rows} rows, {want_rows} expected").into());
    }
    for (k, f) in tsbs::FIELDS.iter().enumerate() {
        let want: i64 = expected.aggs.iter().map(|a| a.sums[k]).sum();
        let mut got = 0i64;
        for b in &batches {
            let column = b
                .column_by_name(f)
                .ok_or_else(|| format!("scan: no field {f}"))?;
            for row in 0..b.num_rows() {
                got += arrow_int(column, row).ok_or_else(|| format!("scan: {f} not an integer"))?;
            }
        }
        if got != want {
            return Err(format!("scan: sum of {f} = {got}, {want} expected").into());
        }
    }
    Ok(Timing {
        name: "scan",
        values_per_row: 1 + tsbs::FIELDS.len(),
        what: "every measurement's time and 10 fields as Arrow batches".to_owned(),
        results: rows,
        median_ms,
        p90_ms,
        stats,
    })
}

impl Timing {
    /// Values returned per second at the median time.
    fn values_per_s(&self) -> f64 {
        #[expect(clippy::cast_precision_loss, reason = "a rate")]
        let values = (self.results * self.values_per_row) as f64;
        values / (self.median_ms / 1000.0)
    }
}

/// Checks every group of a per-host, hourly aggregate: each (host, hour) of the data once,
/// and `check(expected, outputs of the group)`.
fn check_groups(
    name: &str,
    batch: &AggregateBatch,
    expected: &Expected,
    check: impl Fn(&HourAgg, &[Option<&Bson>]) -> Result<(), String>,
) -> CmdResult<()> {
    let fail = |m: String| Err(format!("{name}: {m}").into());
    let want = expected.groups();
    if batch.len() != want {
        return fail(format!(
            "{} groups, {want} expected (does --hosts/--days/--seed describe the data in the database?)",
            batch.len()
        ));
    }
    // The host of each series of the result.
    let mut hosts = Vec::with_capacity(batch.metas.len());
    for m in &batch.metas {
        let name = match m {
            Some(Bson::Document(tags)) => tags.get_str("hostname").ok(),
            _ => None,
        };
        let host = name
            .and_then(|n| n.strip_prefix("host_"))
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|&h| h < expected.workload.hosts);
        match host {
            Some(h) => hosts.push(h),
            None => return fail(format!("a group of an unknown series: {m:?}")),
        }
    }
    let mut seen = vec![false; expected.aggs.len()];
    let mut values = Vec::with_capacity(batch.outputs.len());
    for i in 0..batch.len() {
        let host = hosts[batch.series[i] as usize];
        let window = batch.windows[i];
        let hour = (window - tsbs::START_MS.div_euclid(HOUR_MS) * HOUR_MS).div_euclid(HOUR_MS);
        let at = || {
            DateTime::from_millis(window)
                .try_to_rfc3339_string()
                .unwrap_or_default()
        };
        let Some(hour) = usize::try_from(hour).ok().filter(|&h| h < expected.hours) else {
            return fail(format!("host_{host}: a group outside the data at {}", at()));
        };
        if window.rem_euclid(HOUR_MS) != 0 {
            return fail(format!("host_{host}: window {} not on the hour", at()));
        }
        let slot = host * expected.hours + hour;
        if std::mem::replace(&mut seen[slot], true) {
            return fail(format!("host_{host}, hour {}: two groups", at()));
        }
        let agg = &expected.aggs[slot];
        if agg.count == 0 {
            return fail(format!("host_{host}, hour {}: a group without data", at()));
        }
        values.clear();
        values.extend(batch.outputs.iter().map(|(_, v)| v.get(i)));
        let values: Vec<Option<&Bson>> = values.iter().map(Option::as_ref).collect();
        if let Err(m) = check(agg, &values) {
            return fail(format!("host_{host}, hour {}: {m}", at()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::TimestampMillisecondArray;

    use super::*;

    #[test]
    fn q1_over_data_that_ends_before_its_window_is_empty_and_right() {
        // 0.01 day: 87 rows per host, all before 12:00, q1's window.
        let expected = Expected::compute(&Workload::new(3, 0.01, 1));
        assert!(expected.q1_rows.is_empty());
        assert!(check_q1(&[], &expected).is_ok());
        // Rows where none are expected are still an error.
        let one = RecordBatch::try_from_iter([(
            "time",
            Arc::new(TimestampMillisecondArray::from(vec![0])) as ArrayRef,
        )])
        .expect("batch");
        assert!(check_q1(&[one], &expected).is_err());
    }
}
