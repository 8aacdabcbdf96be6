//! `tscoll demo`: the tour on the bundled real data sets (`data/`, see `data/README.md`).
//!
//! In a temporary database (or `--keep DIR`) it creates one collection per data set, ingests
//! it, prints each collection's statistics (buckets, measurements per bucket, compression
//! ratio, bytes per measurement), runs a time-range query of one series and a last-point
//! query, and verifies the round trip: every measurement comes back, with the same content.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use bson::{Bson, DateTime, Document, doc};
use tscoll_engine::{Collection, Database, FindOptions, Granularity, SortOrder, TimeseriesOptions};

use super::ingest::{CsvArgs, Format, IngestArgs, ingest_file};
use super::stats::{Derived, advice, display_value};
use super::{CmdResult, human_bytes, open_db, to_extjson};
use crate::input::ndjson::NdjsonReader;
use crate::input::open::open_input;

/// Arguments of `tscoll demo`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Keep the database in DIR (must be empty or absent) instead of a temporary directory.
    #[arg(long, value_name = "DIR")]
    pub(crate) keep: Option<PathBuf>,
    /// Directory of the bundled data sets. Default = the repository's `data/` (found at build
    /// time), else `./data`.
    #[arg(long, value_name = "DIR")]
    pub(crate) data: Option<PathBuf>,
}

/// One bundled data set and how the demo stores it.
#[derive(Debug)]
pub(crate) struct DataSet {
    /// Collection name.
    pub(crate) coll: &'static str,
    /// File in the data directory.
    pub(crate) file: &'static str,
    /// Granularity closest to the spacing of its series.
    pub(crate) granularity: Granularity,
    /// One line about it.
    pub(crate) what: &'static str,
}

/// The bundled data sets; every one has `ts` as time field and `meta` as meta field.
pub(crate) const DATA_SETS: [DataSet; 5] = [
    DataSet {
        coll: "noaa_weather",
        file: "noaa_weather_daily.ndjson.xz",
        granularity: Granularity::Hours,
        what: "daily weather, Seattle and New York, 2012-2015 (NOAA GHCN, public domain)",
    },
    DataSet {
        coll: "usgs_earthquakes",
        file: "usgs_earthquakes_week.ndjson.xz",
        granularity: Granularity::Hours,
        what: "one week of earthquakes by seismic network, newest first (USGS, public domain)",
    },
    DataSet {
        coll: "nab",
        file: "nab_shared.ndjson.xz",
        granularity: Granularity::Minutes,
        what: "Numenta Anomaly Benchmark, 35 series at ~5 min (MIT)",
    },
    DataSet {
        coll: "beijing_air",
        file: "beijing_air_3stations.ndjson.xz",
        granularity: Granularity::Hours,
        what: "hourly air quality of 3 Beijing stations, 2013-2017 (UCI, CC BY 4.0)",
    },
    DataSet {
        coll: "stocks",
        file: "stocks_us_2016_may_dec_100k.ndjson.xz",
        granularity: Granularity::Hours,
        what: "daily prices of ~6400 US stocks, May 2016, time-interleaved (Kaggle, CC0)",
    },
];

/// The data directory found at build time.
const BUILT_IN_DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../data");

/// Finds the data directory: `--data`, else the repository's `data/`, else `./data`.
///
/// # Errors
/// None of them holds the bundled files.
pub(crate) fn data_dir(arg: Option<&Path>) -> CmdResult<PathBuf> {
    let marker = DATA_SETS[0].file;
    if let Some(dir) = arg {
        return if dir.join(marker).is_file() {
            Ok(dir.to_path_buf())
        } else {
            Err(format!(
                "{} does not hold the bundled data ({marker} missing)",
                dir.display()
            )
            .into())
        };
    }
    [Path::new(BUILT_IN_DATA), Path::new("data")]
        .into_iter()
        .find(|dir| dir.join(marker).is_file())
        .map(|dir| dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf()))
        .ok_or_else(|| {
            format!(
                "bundled data not found in {BUILT_IN_DATA} nor ./data; run from the repository \
                 root or pass --data DIR"
            )
            .into()
        })
}

/// Runs `tscoll demo`.
///
/// # Errors
/// Data not found, storage errors, or a failed check (query or round trip).
pub(crate) fn run(args: &Args) -> CmdResult<ExitCode> {
    let data = data_dir(args.data.as_deref())?;
    let temp;
    let db_dir = match &args.keep {
        Some(dir) => {
            if dir.exists() && std::fs::read_dir(dir)?.next().is_some() {
                return Err(format!("--keep {}: directory is not empty", dir.display()).into());
            }
            dir.clone()
        }
        None => {
            temp = tempfile::Builder::new().prefix("tscoll-demo-").tempdir()?;
            temp.path().to_path_buf()
        }
    };
    outln!(
        "tscoll demo: data from {}, database in {}",
        data.display(),
        db_dir.display()
    );
    let db = open_db(&db_dir)?;

    outln!("\n== ingest (ordered, batches of 5000, durability buffered)");
    let mut loaded = Vec::new();
    for set in &DATA_SETS {
        outln!("{:<17} {}", set.coll, set.what);
        let options = TimeseriesOptions::new("ts")
            .meta_field("meta")
            .granularity(set.granularity);
        let coll = db.create_collection(set.coll, &options)?;
        let path = data.join(set.file);
        let path = path.to_str().ok_or("data path is not UTF-8")?;
        let summary = ingest_file(
            &coll,
            path,
            Format::Ndjson,
            &IngestArgs::default(),
            &CsvArgs::default(),
        )?;
        outln!("{}", summary.line(&format!("  {}", set.file)));
        if summary.rejected > 0 {
            return Err(format!("{}: {} measurements rejected", set.file, summary.rejected).into());
        }
        loaded.push((set, coll, summary.inserted));
    }

    outln!("\n== stats");
    print_stats(&loaded)?;

    outln!("\n== queries");
    query_beijing_day(&db)?;
    query_last_point(&db)?;

    outln!("\n== round trip (find everything back; content compared without _id)");
    let mut ok = true;
    for (set, coll, inserted) in &loaded {
        ok &= round_trip(&data.join(set.file), set.coll, coll, *inserted)?;
    }
    if let Some(dir) = &args.keep {
        outln!(
            "\ndatabase kept in {} (try: tscoll stats --db {} beijing_air)",
            dir.display(),
            dir.display()
        );
    }
    if ok {
        outln!("\ndemo ok");
        Ok(ExitCode::SUCCESS)
    } else {
        errln!("demo: round trip FAILED");
        Ok(ExitCode::FAILURE)
    }
}

/// The stats table of all collections, then any bucketing advice.
fn print_stats(loaded: &[(&DataSet, Collection, u64)]) -> CmdResult<()> {
    outln!(
        "{:<17} {:>12} {:>8} {:>10} {:>13} {:>10} {:>9} {:>11}",
        "collection",
        "measurements",
        "buckets",
        "per bucket",
        "avgBucketSize",
        "stored",
        "B/meas.",
        "compression"
    );
    let mut advices = Vec::new();
    for (set, coll, _) in loaded {
        let stats = coll.stats()?;
        let derived = Derived::of(&stats);
        let avg = stats
            .to_document()
            .get("avgBucketSize")
            .map_or("-".into(), display_value);
        outln!(
            "{:<17} {:>12} {:>8} {:>10.1} {:>13} {:>10} {:>9.2} {:>10.1}x",
            set.coll,
            stats.measurement_count,
            stats.bucket_count,
            derived.per_bucket,
            avg,
            human_bytes(stats.stored_bytes),
            derived.bytes_per_measurement,
            derived.compression_ratio,
        );
        for line in advice(coll, &stats)? {
            advices.push(format!("{}: {line}", set.coll));
        }
    }
    outln!("(compression = uncompressed BSON bytes / stored bytes)");
    for line in advices {
        outln!("advice: {line}");
    }
    Ok(())
}

/// One Beijing station for one day, sorted by time: prints the first rows and the count and
/// checks them (24 hourly measurements, ascending, all inside the day).
fn query_beijing_day(db: &Database) -> CmdResult<()> {
    let coll = db.collection("beijing_air")?;
    let start = DateTime::parse_rfc3339_str("2016-01-01T00:00:00Z")?;
    let end = DateTime::from_millis(start.timestamp_millis() + 86_400_000);
    let filter = doc! {
        "meta.series": "Aotizhongxin",
        "ts": { "$gte": start, "$lt": end },
    };
    let options = FindOptions {
        sort: Some(SortOrder::Ascending),
        ..FindOptions::default()
    };
    outln!(
        "beijing_air.find({}) sorted by ts:",
        to_extjson(filter.clone())
    );
    let rows = coll.find(&filter, &options)?;
    for row in rows.iter().take(5) {
        outln!("  {}", to_extjson(row.clone()));
    }
    outln!("  ... {} measurements", rows.len());
    let times: Vec<i64> = rows
        .iter()
        .filter_map(|r| r.get_datetime("ts").ok().map(|t| t.timestamp_millis()))
        .collect();
    let in_range = times
        .iter()
        .all(|t| (start.timestamp_millis()..end.timestamp_millis()).contains(t));
    let sorted = times.windows(2).all(|w| w[0] <= w[1]);
    if rows.len() != 24 || times.len() != 24 || !in_range || !sorted {
        return Err(format!(
            "time-range query: expected 24 hourly measurements in order, got {} (in range: \
             {in_range}, sorted: {sorted})",
            rows.len()
        )
        .into());
    }
    Ok(())
}

/// The last point of one stock: a descending sort with limit 1.
fn query_last_point(db: &Database) -> CmdResult<()> {
    let coll = db.collection("stocks")?;
    let filter = doc! { "meta.series": "aapl" };
    let options = FindOptions {
        sort: Some(SortOrder::Descending),
        limit: Some(1),
        ..FindOptions::default()
    };
    outln!(
        "stocks.find({}) sorted by ts:-1, limit 1:",
        to_extjson(filter.clone())
    );
    let rows = coll.find(&filter, &options)?;
    for row in &rows {
        outln!("  {}", to_extjson(row.clone()));
    }
    let last = rows
        .first()
        .and_then(|r| r.get_datetime("ts").ok())
        .map(|t| t.timestamp_millis());
    let expected = DateTime::parse_rfc3339_str("2016-05-25T00:00:00Z")?.timestamp_millis();
    if rows.len() != 1 || last != Some(expected) {
        return Err(format!("last-point query: expected aapl at 2016-05-25, got {rows:?}").into());
    }
    Ok(())
}

/// Finds every measurement back and compares count and content with the file.
fn round_trip(file: &Path, name: &str, coll: &Collection, inserted: u64) -> CmdResult<bool> {
    let found = coll.find(&Document::new(), &FindOptions::default())?;
    let mut got: Vec<u64> = found.iter().map(content_hash).collect();
    drop(found);
    let input = open_input(file.to_str().ok_or("data path is not UTF-8")?)?;
    let mut want = Vec::new();
    for record in NdjsonReader::new(input.reader) {
        let doc = record?.doc?;
        want.push(content_hash(&doc));
    }
    got.sort_unstable();
    want.sort_unstable();
    let count_ok = got.len() as u64 == inserted && want.len() as u64 == inserted;
    let missing = want
        .iter()
        .filter(|h| got.binary_search(h).is_err())
        .count();
    let ok = count_ok && got == want;
    outln!(
        "{name:<17} {} of {inserted} measurements found, {}",
        got.len(),
        if ok {
            "content identical".to_owned()
        } else {
            format!("MISMATCH: {missing} of the file's measurements not found unchanged")
        }
    );
    Ok(ok)
}

/// A hash of a measurement's content: field order ignored (sub-documents too), types and
/// exact values kept, top-level `_id` left out (the engine may add one).
fn content_hash(doc: &Document) -> u64 {
    let mut hasher = DefaultHasher::new();
    hash_document(doc, true, &mut hasher);
    hasher.finish()
}

fn hash_document(doc: &Document, top_level: bool, h: &mut DefaultHasher) {
    let mut fields: Vec<(&String, &Bson)> = doc
        .iter()
        .filter(|(k, _)| !(top_level && k.as_str() == "_id"))
        .collect();
    fields.sort_by(|a, b| a.0.cmp(b.0));
    fields.len().hash(h);
    for (key, value) in fields {
        key.hash(h);
        hash_bson(value, h);
    }
}

fn hash_bson(value: &Bson, h: &mut DefaultHasher) {
    std::mem::discriminant(value).hash(h);
    match value {
        Bson::Double(d) => d.to_bits().hash(h),
        Bson::Int32(i) => i.hash(h),
        Bson::Int64(i) => i.hash(h),
        Bson::String(s) => s.hash(h),
        Bson::Boolean(b) => b.hash(h),
        Bson::Null => {}
        Bson::DateTime(t) => t.timestamp_millis().hash(h),
        Bson::Document(d) => hash_document(d, false, h),
        Bson::Array(a) => {
            a.len().hash(h);
            for v in a {
                hash_bson(v, h);
            }
        }
        other => other.clone().into_canonical_extjson().to_string().hash(h),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_hash_ignores_order_and_id_but_not_types() {
        let a = doc! { "ts": DateTime::from_millis(5), "meta": { "a": 1, "b": "x" }, "v": 1.5 };
        let b = doc! { "_id": 9, "v": 1.5, "meta": { "b": "x", "a": 1 }, "ts": DateTime::from_millis(5) };
        assert_eq!(content_hash(&a), content_hash(&b));
        let c = doc! { "ts": DateTime::from_millis(5), "meta": { "a": 1_i64, "b": "x" }, "v": 1.5 };
        assert_ne!(content_hash(&a), content_hash(&c));
        let d = doc! { "ts": DateTime::from_millis(5), "meta": { "a": 1, "b": "x" }, "v": [1.5] };
        assert_ne!(content_hash(&a), content_hash(&d));
    }

    #[test]
    fn finds_the_bundled_data() {
        let dir = data_dir(None).expect("bundled data");
        for set in &DATA_SETS {
            assert!(dir.join(set.file).is_file(), "{} missing", set.file);
        }
        assert!(data_dir(Some(Path::new("/nonexistent"))).is_err());
    }
}
