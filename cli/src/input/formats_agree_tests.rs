//! The same data from any input format is the same series and the same stored measurements:
//! measurements generated once are written as NDJSON (Extended JSON), as CSV (tags as meta
//! columns) and as Parquet (tags as a struct column), each file is ingested the way
//! `tscoll ingest` does it, and the same rows go in as an Arrow batch through
//! `insert_record_batch`. Every collection then holds the same measurements (time, meta, fields,
//! their types and order) in buckets of the same series with the same counts.
//!
//! Tags are strings that often look like other things (`65`, `007`, `1e3`, `-1`, `true`): a
//! CSV meta column is a string unless typed otherwise, as NDJSON and Parquet give it.

use std::sync::Arc;

use arrow_array::{
    ArrayRef, Float64Array, Int32Array, RecordBatch, StringArray, StructArray,
    TimestampMillisecondArray,
};
use arrow_schema::{DataType, Field, Fields, Schema, TimeUnit};
use bson::{Bson, DateTime, Document};
use parquet::arrow::ArrowWriter;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use tscoll_engine::{
    Collection, Database, DatabaseOptions, FindOptions, InsertOptions, TimeseriesOptions,
};

use crate::cmd::ingest::{CsvArgs, Format, IngestArgs, ingest_file};

/// 2016-01-01T00:00:00Z (ms).
const T0: i64 = 1_451_606_400_000;
/// Tag values that read as numbers, booleans or dates when typed by their text.
const RACKS: [&str; 7] = ["65", "007", "1e3", "-1", "true", "2016-01-01", "r 7"];

/// One generated measurement.
#[derive(Clone, Debug)]
struct Row {
    /// ms after [`T0`].
    offset: i64,
    host: u8,
    rack: usize,
    u: i32,
    /// `k + 0.5` (never integral, so CSV text reads it back as a double), or missing.
    v: Option<i32>,
    s: String,
}

fn row() -> impl Strategy<Value = Row> {
    (
        0i64..3 * 86_400_000,
        0u8..4,
        0..RACKS.len(),
        any::<i32>(),
        proptest::option::of(-100_000i32..100_000),
        "[a-z][a-z0-9 ]{0,6}",
    )
        .prop_map(|(offset, host, rack, u, v, s)| Row {
            offset,
            host,
            rack,
            u,
            v,
            s,
        })
}

impl Row {
    fn time(&self) -> String {
        DateTime::from_millis(T0 + self.offset)
            .try_to_rfc3339_string()
            .expect("a date of years 2016")
    }

    fn host(&self) -> String {
        format!("host_{}", self.host)
    }

    fn v(&self) -> Option<f64> {
        self.v.map(|k| f64::from(k) + 0.5)
    }
}

/// The rows as NDJSON lines and as CSV records (after a header).
fn ndjson_and_csv(rows: &[Row]) -> (String, String) {
    let mut ndjson = String::new();
    let mut csv = String::from("t,hostname,rack,u,v,s\n");
    for r in rows {
        let (t, host, rack) = (r.time(), r.host(), RACKS[r.rack]);
        let v = r.v().map(|v| v.to_string());
        let json_v = v
            .as_ref()
            .map(|v| format!(",\"v\":{v}"))
            .unwrap_or_default();
        ndjson.push_str(&format!(
            "{{\"t\":{{\"$date\":\"{t}\"}},\"tags\":{{\"hostname\":\"{host}\",\"rack\":\"{rack}\"}},\"u\":{}{json_v},\"s\":\"{}\"}}\n",
            r.u, r.s
        ));
        let v = v.unwrap_or_default();
        csv.push_str(&format!("{t},{host},{rack},{},{v},{}\n", r.u, r.s));
    }
    (ndjson, csv)
}

fn record_batch(rows: &[Row]) -> RecordBatch {
    let tag_fields = Fields::from(vec![
        Field::new("hostname", DataType::Utf8, false),
        Field::new("rack", DataType::Utf8, false),
    ]);
    let tags = StructArray::new(
        tag_fields.clone(),
        vec![
            Arc::new(StringArray::from_iter_values(rows.iter().map(Row::host))) as ArrayRef,
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| RACKS[r.rack]),
            )),
        ],
        None,
    );
    let schema = Schema::new(vec![
        Field::new("t", DataType::Timestamp(TimeUnit::Millisecond, None), false),
        Field::new("tags", DataType::Struct(tag_fields), false),
        Field::new("u", DataType::Int32, false),
        Field::new("v", DataType::Float64, true),
        Field::new("s", DataType::Utf8, false),
    ]);
    RecordBatch::try_new(
        Arc::new(schema),
        vec![
            Arc::new(TimestampMillisecondArray::from_iter_values(
                rows.iter().map(|r| T0 + r.offset),
            )),
            Arc::new(tags),
            Arc::new(Int32Array::from_iter_values(rows.iter().map(|r| r.u))),
            Arc::new(Float64Array::from_iter(rows.iter().map(Row::v))),
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| r.s.as_str()),
            )),
        ],
    )
    .expect("batch")
}

fn parquet(batch: &RecordBatch) -> Vec<u8> {
    let mut out = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut out, batch.schema(), None).expect("writer");
    writer.write(batch).expect("write");
    writer.close().expect("close");
    out
}

/// What a collection holds: its measurements without `_id`, each as its relaxed Extended
/// JSON (types and field order included), sorted; and its buckets' `(meta, count)`, sorted.
fn contents(coll: &Collection) -> (Vec<String>, Vec<(String, i64)>) {
    let mut measurements: Vec<String> = coll
        .find(&Document::new(), &FindOptions::default())
        .expect("find")
        .into_iter()
        .map(|mut d| {
            d.remove("_id");
            format!("{:?}", Bson::Document(d).into_canonical_extjson())
        })
        .collect();
    measurements.sort();
    let mut buckets: Vec<(String, i64)> = coll
        .buckets()
        .expect("buckets")
        .into_iter()
        .map(|b| {
            let meta = b.get("meta").cloned().unwrap_or(Bson::Null);
            let count = b
                .get_document("control")
                .and_then(|c| c.get_i64("count"))
                .expect("control.count");
            (format!("{:?}", meta.into_canonical_extjson()), count)
        })
        .collect();
    buckets.sort();
    (measurements, buckets)
}

fn check(rows: &[Row]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Database::open(dir.path().join("db"), DatabaseOptions::default()).expect("open");
    let options = TimeseriesOptions::new("t").meta_field("tags");
    let batch = record_batch(rows);
    let (ndjson, csv) = ndjson_and_csv(rows);
    let files = [
        (
            "from_ndjson",
            "in.ndjson",
            ndjson.into_bytes(),
            Format::Ndjson,
        ),
        ("from_csv", "in.csv", csv.into_bytes(), Format::Csv),
        (
            "from_parquet",
            "in.parquet",
            parquet(&batch),
            Format::Parquet,
        ),
    ];
    let csv_args = CsvArgs {
        csv_meta_columns: vec!["hostname".to_owned(), "rack".to_owned()],
        ..CsvArgs::default()
    };
    let mut held = Vec::new();
    for (name, file, bytes, format) in files {
        let path = dir.path().join(file);
        std::fs::write(&path, bytes).expect("write input");
        let coll = db.create_collection(name, &options).expect("create");
        let args = if format == Format::Csv {
            csv_args.clone()
        } else {
            CsvArgs::default()
        };
        let summary = ingest_file(
            &coll,
            path.to_str().expect("utf-8 path"),
            format,
            &IngestArgs::default(),
            &args,
        )
        .expect("ingest");
        prop_assert_eq!(summary.inserted, rows.len() as u64, "{} inserted", name);
        held.push((name, contents(&coll)));
    }
    let coll = db
        .create_collection("from_arrow", &options)
        .expect("create");
    let r = coll
        .insert_record_batch(&batch, &InsertOptions::default())
        .expect("insert_record_batch");
    prop_assert!(r.errors.is_empty(), "{:?}", r.errors);
    held.push(("from_arrow", contents(&coll)));
    let (first, expected) = &held[0];
    prop_assert_eq!(expected.0.len(), rows.len());
    for (name, got) in &held[1..] {
        prop_assert_eq!(
            &got.0,
            &expected.0,
            "measurements from {} and {}",
            name,
            first
        );
        prop_assert_eq!(&got.1, &expected.1, "series from {} and {}", name, first);
    }
    Ok(())
}

#[test]
fn the_same_data_from_ndjson_csv_parquet_and_arrow_is_the_same_series_and_measurements() {
    let mut runner = TestRunner::new(Config {
        cases: 24,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&proptest::collection::vec(row(), 1..60), |rows| {
            check(&rows)
        })
        .expect("every format stores the same");
}

/// A numeric-looking tag from CSV is the string NDJSON gives (`rack=65` is `"65"`, not the
/// int32 65), and a type given to the meta column still applies.
#[test]
fn csv_tags_are_strings_unless_typed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Database::open(dir.path().join("db"), DatabaseOptions::default()).expect("open");
    let options = TimeseriesOptions::new("t").meta_field("tags");
    let path = dir.path().join("in.csv");
    std::fs::write(&path, "t,rack,u\n2016-01-01T00:00:00Z,65,1\n").expect("write");
    let meta_of = |name: &str, types: Option<&str>| {
        let coll = db.create_collection(name, &options).expect("create");
        let args = CsvArgs {
            csv_meta_columns: vec!["rack".to_owned()],
            csv_types: types.map(str::to_owned),
            ..CsvArgs::default()
        };
        ingest_file(
            &coll,
            path.to_str().expect("utf-8"),
            Format::Csv,
            &IngestArgs::default(),
            &args,
        )
        .expect("ingest");
        let found = coll
            .find(&Document::new(), &FindOptions::default())
            .expect("find");
        (
            found[0].get_document("tags").expect("tags").clone(),
            found[0].get("u").cloned(),
        )
    };
    let (tags, u) = meta_of("untyped", None);
    assert_eq!(tags, bson::doc! { "rack": "65" });
    assert_eq!(
        u,
        Some(Bson::Int32(1)),
        "fields are still typed by their text"
    );
    let (tags, _) = meta_of("typed", Some("rack=int32"));
    assert_eq!(tags, bson::doc! { "rack": 65 });
    let (tags, _) = meta_of("auto", Some("rack=auto"));
    assert_eq!(
        tags,
        bson::doc! { "rack": 65 },
        "auto asks for typing by text"
    );
}
