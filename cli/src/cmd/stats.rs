//! `tscoll stats`: a collection's statistics (MongoDB's `collStats` time-series counters),
//! its compression ratio and bucketing advice in the spirit of MongoDB's schema analysis.
//!
//! The advice: when buckets hold fewer than 10 × [`MIN_MEASUREMENTS_PER_BUCKET`] measurements
//! on average, their keys, control records and column headers cost more than compression
//! saves. It names the cause and the fix: series too short to fill a bucket (a meta field
//! naming more than a data source), a granularity too fine for the spacing of a series'
//! measurements (`collmod` to a coarser one, or custom bucketing, with the measurements per
//! bucket that gives), or buckets closed early although their span fits (out of time order
//! when buckets of a series overlap in time). Spacings, series lengths and overlaps are
//! observed from the stored buckets' control min/max times and counts: the counters of
//! closes by reason count the inserts of the process that made them, none in `tscoll stats`.

use std::collections::HashMap;
use std::process::ExitCode;

use bson::{Bson, Document};
use tscoll_engine::{Collection, CollectionSpec, CollectionStats, Database, Granularity};

use super::{CmdResult, DbArgs, human_bytes, human_seconds, open_readable_collection, to_extjson};

/// Below this average, buckets are too small (MongoDB's schema advice uses the same idea).
pub(crate) const MIN_MEASUREMENTS_PER_BUCKET: f64 = 10.0;

/// Arguments of `tscoll stats`.
#[derive(Debug, clap::Args)]
#[cfg_attr(
    feature = "cluster",
    command(mut_arg("db", super::cluster::db_unless_cluster))
)]
pub(crate) struct Args {
    #[command(flatten)]
    pub(crate) db: DbArgs,
    /// The cluster whose shards' statistics to show, each shard apart (feature `cluster`).
    #[cfg(feature = "cluster")]
    #[command(flatten)]
    pub(crate) cluster: super::cluster::ClusterArgs,
    /// Collection name (default: every collection of the database).
    pub(crate) coll: Option<String>,
    /// Print one JSON object: the MongoDB camelCase counters plus `measurementsPerBucket`,
    /// `compressionRatio`, `bytesPerMeasurement` and `advice`, and `bucketCatalog` (SPEC §8.2)
    /// when this process's catalog holds anything. Counters and gauges live in the process
    /// that inserts: a fresh `tscoll stats` process reports them as zero; `tscoll ingest
    /// --stats` prints those of an ingest.
    #[arg(long)]
    pub(crate) json: bool,
    /// In the table, also every counter of MongoDB's `collStats` time-series section (they
    /// count this process's inserts: zero in a fresh `tscoll stats` process).
    #[arg(long)]
    pub(crate) verbose: bool,
}

/// Ratios derived from the counters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Derived {
    /// Measurements per bucket (0 when empty).
    pub(crate) per_bucket: f64,
    /// Uncompressed bytes / stored bytes (0 when nothing is stored).
    pub(crate) compression_ratio: f64,
    /// Stored bytes per measurement (0 when empty).
    pub(crate) bytes_per_measurement: f64,
}

impl Derived {
    /// Computes the ratios of `stats`.
    pub(crate) fn of(stats: &CollectionStats) -> Derived {
        let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        Derived {
            per_bucket: ratio(stats.measurement_count, stats.bucket_count),
            compression_ratio: ratio(stats.uncompressed_bytes, stats.stored_bytes),
            bytes_per_measurement: ratio(stats.stored_bytes, stats.measurement_count),
        }
    }
}

/// Runs `tscoll stats`.
///
/// # Errors
/// No such collection, or storage errors.
pub(crate) fn run(args: &Args) -> CmdResult<ExitCode> {
    #[cfg(feature = "cluster")]
    if let Some(c) = args.cluster.connect(&args.db)? {
        return cluster_stats(&c, args);
    }
    let (db, names) = match &args.coll {
        Some(name) => {
            let (db, _) = open_readable_collection(&args.db.db, name)?;
            (db, vec![name.clone()])
        }
        None => {
            let db = super::open_readable_db(&args.db.db)?;
            let names = db.list_collections()?.into_iter().map(|(n, _)| n).collect();
            (db, names)
        }
    };
    for (i, name) in names.iter().enumerate() {
        if i > 0 && !args.json {
            outln!("");
        }
        print_stats(&db, name, args.json, args.verbose)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `tscoll stats` on a cluster: each shard's `collStats` of the collection (of every
/// collection of the cluster when none is named), one line per shard: measurements,
/// buckets, bytes, or (`--json`) the whole statistics with the collection's name.
///
/// # Errors
/// No collection named and the cluster's collections cannot be listed (a worker down).
#[cfg(feature = "cluster")]
fn cluster_stats(c: &super::cluster::Connected, args: &Args) -> CmdResult<ExitCode> {
    let names = match &args.coll {
        Some(name) => vec![name.clone()],
        None => c
            .block_on(c.cluster.collections())?
            .into_iter()
            .map(|coll| coll.name)
            .collect(),
    };
    let mut code = ExitCode::SUCCESS;
    for name in &names {
        let command = bson::doc! { "collStats": name };
        let shard_code = c.broadcast(&command, None, |reply| {
            let stats = reply.get_document("stats").map_err(|e| e.to_string())?;
            let n = |key: &str| match stats.get(key) {
                Some(Bson::Int64(v)) => u64::try_from(*v).unwrap_or(0),
                Some(Bson::Int32(v)) => u64::try_from(*v).unwrap_or(0),
                _ => 0,
            };
            Ok(vec![if args.json {
                let mut doc = Document::new();
                doc.insert("collection", name);
                doc.extend(stats.clone());
                to_extjson(doc)
            } else {
                format!(
                    "{name}: {} measurements in {} buckets, {} stored ({} uncompressed)",
                    n("measurementCount"),
                    n("bucketCount"),
                    human_bytes(n("storedBytes")),
                    human_bytes(n("uncompressedBytes"))
                )
            }])
        })?;
        if shard_code != ExitCode::SUCCESS {
            code = shard_code;
        }
    }
    Ok(code)
}

/// Prints the statistics of collection `name` (a table, or one JSON line).
fn print_stats(db: &Database, name: &str, json: bool, verbose: bool) -> CmdResult<()> {
    let coll = db.collection(name)?;
    let stats = coll.stats()?;
    let derived = Derived::of(&stats);
    let advice = advice(&coll, &stats)?;
    if json {
        let mut doc = Document::new();
        doc.insert("collection", name);
        doc.extend(stats.to_document());
        doc.insert("measurementsPerBucket", derived.per_bucket);
        doc.insert("compressionRatio", derived.compression_ratio);
        doc.insert("bytesPerMeasurement", derived.bytes_per_measurement);
        doc.insert(
            "advice",
            advice
                .iter()
                .map(|a| Bson::String(a.clone()))
                .collect::<Vec<_>>(),
        );
        // Engine-level catalog statistics (SPEC §8.2) of this process, when there are any.
        doc.extend(super::ingest::catalog_stats_document(db));
        outln!("{}", to_extjson(doc));
    } else {
        outprint!("{}", table(name, &coll.spec(), &stats, &derived, verbose));
        for line in &advice {
            outln!("advice: {line}");
        }
    }
    Ok(())
}

/// The human-readable table: the stored figures, then (`verbose`) every counter of
/// `CollectionStats::to_document`.
pub(crate) fn table(
    name: &str,
    spec: &CollectionSpec,
    stats: &CollectionStats,
    derived: &Derived,
    verbose: bool,
) -> String {
    let mut rows: Vec<(String, String)> = vec![
        ("collection".into(), name.into()),
        ("timeField".into(), spec.time_field.clone()),
        (
            "metaField".into(),
            spec.meta_field.clone().unwrap_or_else(|| "(none)".into()),
        ),
        ("bucketing".into(), bucketing(spec)),
        ("measurements".into(), stats.measurement_count.to_string()),
        ("buckets".into(), stats.bucket_count.to_string()),
        (
            "measurements per bucket".into(),
            format!("{:.1}", derived.per_bucket),
        ),
        (
            "stored bytes".into(),
            format!(
                "{} ({:.2} bytes/measurement)",
                human_bytes(stats.stored_bytes),
                derived.bytes_per_measurement
            ),
        ),
        (
            "uncompressed bytes".into(),
            human_bytes(stats.uncompressed_bytes),
        ),
        (
            "compression ratio".into(),
            format!("{:.1}x", derived.compression_ratio),
        ),
    ];
    if verbose {
        for (key, value) in stats.to_document() {
            rows.push((key, display_value(&value)));
        }
    }
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    rows.iter()
        .map(|(k, v)| format!("{k:<width$}  {v}\n"))
        .collect()
}

/// `granularity minutes (span 86400 s, rounding 3600 s)` or `custom (...)`.
/// The bucketing options of a collection in words.
pub(crate) fn bucketing(spec: &CollectionSpec) -> String {
    let kind = spec.granularity.map_or("custom".to_owned(), |g| {
        format!("granularity {}", g.as_str())
    });
    format!(
        "{kind} (bucketMaxSpanSeconds {}, bucketRoundingSeconds {})",
        spec.bucket_max_span_seconds, spec.bucket_rounding_seconds
    )
}

/// A counter's value as text (numbers plain, anything else as Extended JSON).
pub(crate) fn display_value(value: &Bson) -> String {
    match value {
        Bson::Int32(i) => i.to_string(),
        Bson::Int64(i) => i.to_string(),
        Bson::Double(d) => format!("{d:.2}"),
        Bson::String(s) => s.clone(),
        other => super::extjson_text(other),
    }
}

/// Bucketing advice for `coll` (empty when buckets are well filled).
///
/// # Errors
/// Reading the buckets fails.
pub(crate) fn advice(coll: &Collection, stats: &CollectionStats) -> CmdResult<Vec<String>> {
    let derived = Derived::of(stats);
    // Too few measurements to tell anything about the bucketing.
    let small = (stats.measurement_count as f64) < MIN_MEASUREMENTS_PER_BUCKET * 10.0;
    if stats.bucket_count == 0 || small || derived.per_bucket >= MIN_MEASUREMENTS_PER_BUCKET * 10.0
    {
        return Ok(Vec::new());
    }
    let spec = coll.spec();
    let series = observe_series(&coll.buckets()?, &spec.time_field);
    Ok(advise(coll.name(), &spec, derived.per_bucket, &series))
}

/// One series as seen from its buckets' control fields.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SeriesSpan {
    /// Earliest time (ms).
    pub(crate) min_ms: i64,
    /// Latest time (ms).
    pub(crate) max_ms: i64,
    /// Measurements.
    pub(crate) count: u64,
    /// Buckets.
    pub(crate) buckets: u64,
    /// Buckets that start before an earlier-starting bucket of the series ends: opened for
    /// measurements that came out of time order.
    pub(crate) overlapping: u64,
}

impl SeriesSpan {
    /// Average spacing between consecutive measurements (s); `None` below 2 measurements.
    pub(crate) fn spacing_seconds(&self) -> Option<f64> {
        (self.count >= 2)
            .then(|| (self.max_ms - self.min_ms) as f64 / 1000.0 / (self.count - 1) as f64)
    }
}

/// Groups buckets by meta and sums their spans and counts, and counts the buckets that
/// overlap an earlier one in time.
pub(crate) fn observe_series(buckets: &[Document], time_field: &str) -> Vec<SeriesSpan> {
    // The (min, max) times of each series' buckets.
    let mut by_meta: HashMap<String, (SeriesSpan, Vec<(i64, i64)>)> = HashMap::new();
    for bucket in buckets {
        let control = bucket.get_document("control").ok();
        let time = |part: &str| {
            control
                .and_then(|c| c.get_document(part).ok())
                .and_then(|d| d.get_datetime(time_field).ok())
                .map(|t| t.timestamp_millis())
        };
        let (Some(min_ms), Some(max_ms)) = (time("min"), time("max")) else {
            continue;
        };
        let count = control
            .and_then(|c| c.get("count"))
            .and_then(bson_u64)
            .or_else(|| data_len(bucket, time_field))
            .unwrap_or(0);
        let key = bucket
            .get("meta")
            .map_or_else(String::new, |m| m.to_string());
        let (s, spans) = by_meta.entry(key).or_insert((
            SeriesSpan {
                min_ms,
                max_ms,
                count: 0,
                buckets: 0,
                overlapping: 0,
            },
            Vec::new(),
        ));
        s.min_ms = s.min_ms.min(min_ms);
        s.max_ms = s.max_ms.max(max_ms);
        s.count += count;
        s.buckets += 1;
        spans.push((min_ms, max_ms));
    }
    by_meta
        .into_values()
        .map(|(mut s, mut spans)| {
            spans.sort_unstable();
            let mut end = i64::MIN;
            for (min, max) in spans {
                s.overlapping += u64::from(min < end);
                end = end.max(max);
            }
            s
        })
        .collect()
}

fn bson_u64(value: &Bson) -> Option<u64> {
    match value {
        Bson::Int32(i) => u64::try_from(*i).ok(),
        Bson::Int64(i) => u64::try_from(*i).ok(),
        _ => None,
    }
}

/// Number of values of the time column in a bucket's `data`.
fn data_len(bucket: &Document, time_field: &str) -> Option<u64> {
    match bucket.get_document("data").ok()?.get(time_field)? {
        Bson::Array(a) => Some(a.len() as u64),
        Bson::Document(d) => Some(d.len() as u64),
        _ => None,
    }
}

/// The most measurements a bucket holds (the catalog's default `bucket_max_count`).
const MAX_PER_BUCKET: f64 = 1_000.0;

/// The change of bucketing that lets a bucket hold about [`MIN_MEASUREMENTS_PER_BUCKET`] ×
/// 10 measurements of series `spacing` seconds apart: the first coarser granularity that
/// does (collMod only allows coarser ones, SPEC R-12.1), else a custom span in whole days.
/// `(collMod timeseries document, new span in s)`; `None` when the span already fits.
fn coarser_bucketing(spec: &CollectionSpec, spacing: f64) -> Option<(String, f64)> {
    let want = MIN_MEASUREMENTS_PER_BUCKET * 10.0;
    let current = spec.bucket_max_span_seconds as f64;
    if current / spacing >= want {
        return None;
    }
    let presets = [Granularity::Minutes, Granularity::Hours];
    let allowed = |g: Granularity| {
        spec.granularity
            .is_some_and(|cur| g.bucket_max_span_seconds() > cur.bucket_max_span_seconds())
    };
    for g in presets {
        let span = g.bucket_max_span_seconds() as f64;
        if allowed(g) && span / spacing >= want {
            return Some((format!(r#"{{"granularity": "{}"}}"#, g.as_str()), span));
        }
    }
    // A span holding about `want` measurements, in whole days, at most a year, and never
    // less than the current span (SPEC R-12.2).
    let seconds = (spacing * want).clamp(86_400.0, 31_536_000.0);
    let span = ((seconds / 86_400.0).ceil() * 86_400.0).max(current);
    if span <= current {
        return None;
    }
    Some((
        format!(r#"{{"bucketMaxSpanSeconds": {span:.0}, "bucketRoundingSeconds": {span:.0}}}"#),
        span,
    ))
}

/// The advice for collection `name` whose buckets hold `per_bucket` measurements on average:
/// what limits the buckets — series too short to fill one, a span too short for the spacing
/// of their measurements, or neither (buckets closed early) — and the fix.
pub(crate) fn advise(
    name: &str,
    spec: &CollectionSpec,
    per_bucket: f64,
    series: &[SeriesSpan],
) -> Vec<String> {
    let mut out = vec![format!(
        "buckets hold {per_bucket:.1} measurements on average (up to {MAX_PER_BUCKET:.0} \
         fit): below {:.0}, each bucket's key, control record and column headers cost more \
         than compression saves",
        MIN_MEASUREMENTS_PER_BUCKET * 10.0
    )];
    let total: u64 = series.iter().map(|s| s.count).sum();
    let per_series = if series.is_empty() {
        0.0
    } else {
        total as f64 / series.len() as f64
    };
    let mut spacings: Vec<f64> = series
        .iter()
        .filter_map(SeriesSpan::spacing_seconds)
        .filter(|s| *s > 0.0)
        .collect();
    spacings.sort_by(f64::total_cmp);
    let spacing = spacings.get(spacings.len() / 2).copied();
    let span = spec.bucket_max_span_seconds as f64;
    // How many measurements of a series one bucket's span can take.
    let fit = spacing.map_or(MAX_PER_BUCKET, |s| (span / s).min(MAX_PER_BUCKET));
    if per_series < 2.0 * per_bucket.max(1.0) && per_series < fit {
        out.push(format!(
            "cause: the series are short: {} series hold {per_series:.1} measurements each on \
             average, and a bucket holds the measurements of one series, so no bucketing \
             fills them; fix: fewer, longer series (keep in the meta field only what names a \
             data source)",
            series.len()
        ));
        return out;
    }
    let Some(spacing) = spacing else {
        return out;
    };
    let apart = format!(
        "measurements of a series are {} apart (median over {} series)",
        human_seconds(spacing),
        spacings.len()
    );
    match coarser_bucketing(spec, spacing) {
        Some((change, new_span)) => {
            let fill = (new_span / spacing).min(MAX_PER_BUCKET).min(per_series);
            out.push(format!(
                "cause: the granularity is too fine for the spacing: {apart}, and a bucket \
                 spans at most {} (about {fit:.1} measurements); fix: tscoll collmod --db <DIR> \
                 {name} '{{\"timeseries\": {change}}}' (new buckets then span {}: about \
                 {fill:.0} measurements each)",
                human_seconds(span),
                human_seconds(new_span)
            ));
        }
        None => {
            let buckets: u64 = series.iter().map(|s| s.buckets).sum();
            let overlapping: u64 = series.iter().map(|s| s.overlapping).sum();
            let seen = if overlapping > 0 {
                format!(
                    "{overlapping} of the {buckets} stored buckets overlap in time an \
                     earlier bucket of their series: measurements came out of time order \
                     (insert each series in time order)"
                )
            } else {
                format!(
                    "none of the {buckets} stored buckets overlaps another of its series in \
                     time, so gaps in the series or changes of a field's type closed them"
                )
            };
            out.push(format!(
                "cause: buckets close before they fill although their span fits ({apart}, a \
                 bucket spans {}): {seen}",
                human_seconds(span)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use bson::{DateTime, doc};
    use tscoll_engine::TimeseriesOptions;

    use super::*;

    fn spec(g: Granularity) -> CollectionSpec {
        TimeseriesOptions::new("ts")
            .meta_field("m")
            .granularity(g)
            .validate()
            .expect("valid")
    }

    fn bucket(meta: &str, min_ms: i64, max_ms: i64, count: i32) -> Document {
        doc! {
            "_id": 1,
            "control": {
                "version": 1,
                "min": { "ts": DateTime::from_millis(min_ms) },
                "max": { "ts": DateTime::from_millis(max_ms) },
                "count": count,
            },
            "meta": meta,
            "data": {},
        }
    }

    #[test]
    fn observes_spacing_per_series() {
        let day = 86_400_000;
        let buckets = [
            bucket("a", 0, 2 * day, 3),
            bucket("a", 3 * day, 4 * day, 2),
            bucket("b", 0, 0, 1),
        ];
        let mut series = observe_series(&buckets, "ts");
        series.sort_by_key(|s| s.count);
        assert_eq!(series.len(), 2);
        assert_eq!(
            series[1],
            SeriesSpan {
                min_ms: 0,
                max_ms: 4 * day,
                count: 5,
                buckets: 2,
                overlapping: 0,
            }
        );
        assert_eq!(series[1].spacing_seconds(), Some(86_400.0));
        assert_eq!(series[0].spacing_seconds(), None);
    }

    fn spread(n: u64, count: u64, spacing_ms: i64) -> Vec<SeriesSpan> {
        (0..n)
            .map(|i| SeriesSpan {
                min_ms: i64::try_from(i).expect("i"),
                max_ms: i64::try_from(i).expect("i")
                    + spacing_ms * (i64::try_from(count).expect("n") - 1),
                count,
                buckets: count / 5,
                overlapping: 0,
            })
            .collect()
    }

    #[test]
    fn counts_buckets_that_overlap_an_earlier_one_of_their_series() {
        let buckets = [
            bucket("a", 0, 100, 10),
            bucket("a", 200, 300, 10),
            // Starts inside the first: opened for late measurements.
            bucket("a", 50, 60, 2),
            bucket("a", 250, 260, 1),
            // Starts where the one before ends (equal times): not out of order.
            bucket("a", 300, 400, 10),
            bucket("b", 0, 100, 10),
            bucket("b", 101, 200, 10),
        ];
        let mut series = observe_series(&buckets, "ts");
        series.sort_by_key(|s| s.buckets);
        assert_eq!(
            series
                .iter()
                .map(|s| (s.buckets, s.overlapping))
                .collect::<Vec<_>>(),
            [(2, 0), (5, 2)]
        );
    }

    #[test]
    fn daily_data_with_a_fine_granularity_gets_collmod_to_hours_or_custom() {
        // 4 series of 1461 days: granularity seconds spans an hour (1 per bucket).
        let series = spread(4, 1461, 86_400_000);
        let advice = advise("weather", &spec(Granularity::Seconds), 1.0, &series);
        assert_eq!(advice.len(), 2, "{advice:?}");
        assert!(
            advice[1].contains("granularity is too fine"),
            "{}",
            advice[1]
        );
        assert!(advice[1].contains("1.0 d apart"), "{}", advice[1]);
        // Hours (30 days) would hold 30: not enough, so custom bucketing of 100 days.
        assert!(
            advice[1].contains(r#"tscoll collmod --db <DIR> weather '{"timeseries": {"bucketMaxSpanSeconds": 8640000"#),
            "{}",
            advice[1]
        );
        assert!(
            advice[1].contains("about 100 measurements each"),
            "{}",
            advice[1]
        );
        // ~20 per bucket with granularity hours (daily data): still advice, custom span.
        let advice = advise("weather", &spec(Granularity::Hours), 20.0, &series);
        assert!(advice[1].contains("bucketMaxSpanSeconds"), "{advice:?}");
    }

    #[test]
    fn minute_data_gets_a_coarser_granularity() {
        // One point a minute: granularity seconds (1 h) holds 60; minutes (1 d) 1000 (full).
        let series = spread(10, 5000, 60_000);
        let advice = advise("cpu", &spec(Granularity::Seconds), 55.0, &series);
        assert!(
            advice[1].contains(r#"{"granularity": "minutes"}"#),
            "{advice:?}"
        );
        assert!(
            advice[1].contains("about 1000 measurements each"),
            "{advice:?}"
        );
    }

    #[test]
    fn short_series_blame_the_meta_field_not_the_ordering() {
        // Many series of 3 points 10 s apart: no bucketing fills a bucket.
        let series = spread(1000, 3, 10_000);
        let advice = advise("cpu", &spec(Granularity::Seconds), 3.0, &series);
        assert_eq!(advice.len(), 2, "{advice:?}");
        assert!(advice[1].contains("the series are short"), "{}", advice[1]);
        assert!(
            !advice.iter().any(|a| a.contains("out of time order")),
            "{advice:?}"
        );
    }

    #[test]
    fn buckets_closed_early_point_at_ordering_and_gaps() {
        // One point every 10 s: the hour span fits 360, series are long, yet 5 per bucket.
        let mut series = spread(4, 10_000, 10_000);
        let advice = advise("cpu", &spec(Granularity::Seconds), 5.0, &series);
        assert!(advice[1].contains("close before they fill"), "{advice:?}");
        assert!(
            advice[1].contains("none of the 8000 stored buckets overlaps"),
            "{advice:?}"
        );
        series[1].overlapping = 30;
        let advice = advise("cpu", &spec(Granularity::Seconds), 5.0, &series);
        assert!(
            advice[1].contains("30 of the 8000 stored buckets overlap"),
            "{advice:?}"
        );
        assert!(advice[1].contains("out of time order"), "{advice:?}");
        // The closes by reason are counted in the process that inserts: `tscoll stats`
        // (a fresh process) always shows them as zero, so the advice does not point there.
        assert!(!advice[1].contains("numBucketsClosed"), "{advice:?}");
        assert!(!advice[1].contains("--verbose"), "{advice:?}");
    }
}
