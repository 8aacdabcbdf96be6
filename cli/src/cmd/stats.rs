//! `tscoll stats`: a collection's statistics (MongoDB's `collStats` time-series counters),
//! its compression ratio and bucketing advice in the spirit of MongoDB's schema analysis.
//!
//! The advice: when a bucket holds fewer than [`MIN_MEASUREMENTS_PER_BUCKET`] measurements on
//! average, buckets cost more than they save. The usual cause is a granularity finer than the
//! spacing of measurements in a series (each bucket spans too little time to collect many),
//! or a meta field so fine that most series have few measurements. The spacing is observed
//! from the buckets' control min/max times and counts.

use std::collections::HashMap;
use std::process::ExitCode;

use bson::{Bson, Document};
use tscoll_engine::{Collection, CollectionSpec, CollectionStats, Database, Granularity};

use super::{CmdResult, DbArgs, human_bytes, human_seconds, open_collection, to_extjson};

/// Below this average, buckets are too small (MongoDB's schema advice uses the same idea).
pub(crate) const MIN_MEASUREMENTS_PER_BUCKET: f64 = 10.0;

/// Arguments of `tscoll stats`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    pub(crate) db: DbArgs,
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
    let (db, names) = match &args.coll {
        Some(name) => {
            let (db, _) = open_collection(&args.db.db, name)?;
            (db, vec![name.clone()])
        }
        None => {
            let db = super::open_existing_db(&args.db.db)?;
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
    if stats.bucket_count == 0 || small || derived.per_bucket >= MIN_MEASUREMENTS_PER_BUCKET {
        return Ok(Vec::new());
    }
    let spec = coll.spec();
    let series = observe_series(&coll.buckets()?, &spec.time_field);
    Ok(advise(&spec, derived.per_bucket, &series))
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
}

impl SeriesSpan {
    /// Average spacing between consecutive measurements (s); `None` below 2 measurements.
    pub(crate) fn spacing_seconds(&self) -> Option<f64> {
        (self.count >= 2)
            .then(|| (self.max_ms - self.min_ms) as f64 / 1000.0 / (self.count - 1) as f64)
    }
}

/// Groups buckets by meta and sums their spans and counts.
pub(crate) fn observe_series(buckets: &[Document], time_field: &str) -> Vec<SeriesSpan> {
    let mut by_meta: HashMap<String, SeriesSpan> = HashMap::new();
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
        by_meta
            .entry(key)
            .and_modify(|s| {
                s.min_ms = s.min_ms.min(min_ms);
                s.max_ms = s.max_ms.max(max_ms);
                s.count += count;
            })
            .or_insert(SeriesSpan {
                min_ms,
                max_ms,
                count,
            });
    }
    by_meta.into_values().collect()
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

/// The granularity MongoDB recommends for a spacing: the one closest to the time between
/// measurements of a series.
pub(crate) fn granularity_for(spacing_seconds: f64) -> Granularity {
    if spacing_seconds < 60.0 {
        Granularity::Seconds
    } else if spacing_seconds < 3_600.0 {
        Granularity::Minutes
    } else {
        Granularity::Hours
    }
}

/// The advice for a collection whose buckets hold `per_bucket` measurements on average.
pub(crate) fn advise(spec: &CollectionSpec, per_bucket: f64, series: &[SeriesSpan]) -> Vec<String> {
    let mut out = vec![format!(
        "buckets hold {per_bucket:.1} measurements on average (fewer than \
         {MIN_MEASUREMENTS_PER_BUCKET}): each bucket costs a key, a control record and \
         per-column headers, so compression and scans suffer"
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
        .collect();
    spacings.sort_by(f64::total_cmp);
    if series.len() >= 10 && per_series < MIN_MEASUREMENTS_PER_BUCKET {
        out.push(format!(
            "{} series hold only {per_series:.1} measurements each: the meta field may be too \
             fine-grained; keep in it only what names a data source",
            series.len()
        ));
    }
    let Some(&spacing) = spacings.get(spacings.len() / 2) else {
        return out;
    };
    if spacing <= 0.0 {
        return out;
    }
    let span = spec.bucket_max_span_seconds as f64;
    let expected = span / spacing;
    let suggested = granularity_for(spacing);
    let suggested_fill = suggested.bucket_max_span_seconds() as f64 / spacing;
    let mut line = format!(
        "measurements of a series are {} apart (median over {} series), but a bucket spans \
         at most {} ({expected:.1} measurements)",
        human_seconds(spacing),
        spacings.len(),
        human_seconds(span),
    );
    let coarser = suggested.bucket_max_span_seconds() > spec.bucket_max_span_seconds;
    if expected >= MIN_MEASUREMENTS_PER_BUCKET {
        line.push_str(
            "; the span fits the spacing, so buckets are closed early: look for \
             out-of-order measurements, time gaps, or series with few measurements",
        );
    } else if coarser && suggested_fill >= MIN_MEASUREMENTS_PER_BUCKET {
        line.push_str(&format!(
            "; use a coarser granularity: --granularity {} (buckets span {}, about {:.0} \
             measurements each)",
            suggested.as_str(),
            human_seconds(suggested.bucket_max_span_seconds() as f64),
            suggested_fill.min(1000.0)
        ));
    } else {
        // Custom bucketing: a span holding ~100 measurements, in whole days, at most a year.
        let seconds = (spacing * 100.0).clamp(86_400.0, 31_536_000.0);
        let days = (seconds / 86_400.0).ceil();
        let custom = days * 86_400.0;
        line.push_str(&format!(
            "; the coarsest granularity is too fine: use custom bucketing, e.g. \
             --bucket-max-span-seconds {custom:.0} --bucket-rounding-seconds {custom:.0} \
             ({days:.0} d, about {:.0} measurements each)",
            (custom / spacing).min(1000.0)
        ));
    }
    out.push(line);
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
                count: 5
            }
        );
        assert_eq!(series[1].spacing_seconds(), Some(86_400.0));
        assert_eq!(series[0].spacing_seconds(), None);
    }

    #[test]
    fn daily_data_with_granularity_seconds_gets_hours() {
        let series = [SeriesSpan {
            min_ms: 0,
            max_ms: 99 * 86_400_000,
            count: 100,
        }];
        let advice = advise(&spec(Granularity::Seconds), 1.0, &series);
        assert_eq!(advice.len(), 2, "{advice:?}");
        assert!(advice[1].contains("--granularity hours"), "{}", advice[1]);
        assert!(advice[1].contains("1.0 d apart"), "{}", advice[1]);
    }

    #[test]
    fn weekly_data_gets_custom_bucketing() {
        let week = 7 * 86_400_000;
        let series = [SeriesSpan {
            min_ms: 0,
            max_ms: 99 * week,
            count: 100,
        }];
        let advice = advise(&spec(Granularity::Hours), 4.0, &series);
        assert!(
            advice[1].contains("--bucket-max-span-seconds"),
            "{}",
            advice[1]
        );
    }

    #[test]
    fn sparse_series_point_at_the_meta_field() {
        let series: Vec<SeriesSpan> = (0..50)
            .map(|i| SeriesSpan {
                min_ms: i,
                max_ms: i + 1000,
                count: 2,
            })
            .collect();
        let advice = advise(&spec(Granularity::Seconds), 2.0, &series);
        assert!(
            advice.iter().any(|a| a.contains("too fine-grained")),
            "{advice:?}"
        );
    }

    #[test]
    fn recommended_granularity() {
        assert_eq!(granularity_for(1.0), Granularity::Seconds);
        assert_eq!(granularity_for(300.0), Granularity::Minutes);
        assert_eq!(granularity_for(86_400.0), Granularity::Hours);
    }
}
