//! Inputs as users bring them: legacy Extended JSON of old `mongoexport`, a JSON array on one
//! line with its errors at their element, ISO-8601 string or epoch times (`--time-format`),
//! nesting past the parser's limit, mongoimport's typed CSV headers with their date layouts,
//! Parquet columns mapped by the CSV options (or the option refused), and batches of lines
//! with fields of their own.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::{ArrayRef, Float64Array, RecordBatch, StringArray, TimestampMillisecondArray};

use crate::common::Scratch;
use crate::formats_parquet_csv::parquet_bytes;

/// Runs `tscoll ingest ARGS`, which must fail with `says` in its errors.
fn ingest_fails_saying(s: &Scratch, args: &[&str], says: &str) {
    let run = s.run("ingest", args).failed();
    assert!(run.stderr().contains(says), "{}", run.stderr());
}

#[test]
fn legacy_extended_json_of_mongoexport_before_4_2_is_read() {
    let s = Scratch::new();
    s.create("c");
    let text = concat!(
        r#"{"ts":{"$date":"2016-01-01T00:00:00.000+0000"},"meta":"a","b":{"$binary":"AQID","$type":"00"}}"#,
        "\n",
        r#"{"ts":{"$date":"2016-01-01T01:00:00.000+0100"},"meta":"a","r":{"$regex":"^x","$options":"i"}}"#,
        "\n",
    );
    let file = s.file("old.json", text.as_bytes());
    s.run("ingest", &["c", &file]).ok();
    let docs = s.find_all("c");
    assert_eq!(docs.len(), 2, "{docs:?}");
    for d in &docs {
        assert_eq!(d["ts"]["$date"], "2016-01-01T00:00:00.000Z", "{d}");
    }
    let b = docs.iter().find(|d| d.get("b").is_some()).expect("binary");
    assert_eq!(b["b"]["$binary"]["base64"], "AQID");
    assert_eq!(b["b"]["$binary"]["subType"], "00");
    let r = docs.iter().find(|d| d.get("r").is_some()).expect("regex");
    assert_eq!(r["r"]["$regularExpression"]["pattern"], "^x");
}

#[test]
fn errors_in_a_json_array_on_one_line_name_the_element() {
    let s = Scratch::new();
    s.create("c");
    let text = r#"[{"ts":{"$date":"2016-01-01T00:00:00Z"},"v":1},{"v":2},{"ts":{"$date":"2016-01-01T00:00:02Z"},"v":3},{"ts":}]"#;
    let file = s.file("a.json", text.as_bytes());
    let run = s.run("ingest", &["c", &file, "--unordered"]).failed();
    let err = run.stderr();
    assert!(
        err.contains("a.json:1: element [1]: 'ts' must be present"),
        "{err}"
    );
    assert!(
        err.contains("a.json:1: element [3]: malformed JSON"),
        "{err}"
    );
    assert_eq!(s.values("c"), [1, 3]);
}

#[test]
fn string_and_epoch_times_are_read_with_time_format() {
    let s = Scratch::new();
    s.create("c");
    // What pandas' `to_json(orient="records", date_format="iso")` writes.
    let iso = concat!(
        r#"[{"ts":"2016-01-01T00:00:00.000Z","meta":"a","v":1},"#,
        r#"{"ts":"2016-01-01 00:00:01","meta":"a","v":2}]"#
    );
    let file = s.file("pandas.json", iso.as_bytes());
    // Without the option: rejected, with a hint naming it.
    ingest_fails_saying(
        &s,
        &["c", &file],
        "the time is a string: give --time-format",
    );
    assert!(s.find_all("c").is_empty());
    s.run("ingest", &["c", &file, "--time-format", "rfc3339"])
        .ok();
    // Epoch seconds, and a strftime layout.
    let epoch = s.file(
        "epoch.ndjson",
        b"{\"ts\":1451606402,\"meta\":\"a\",\"v\":3}\n",
    );
    s.run("ingest", &["c", &epoch, "--time-format", "epoch-s"])
        .ok();
    let layout = s.file(
        "layout.ndjson",
        b"{\"ts\":\"01/01/2016 00:00:03\",\"meta\":\"a\",\"v\":4}\n{\"ts\":\"soon\",\"v\":5}\n",
    );
    ingest_fails_saying(
        &s,
        &["c", &layout, "--time-format", "%d/%m/%Y %H:%M:%S"],
        "layout.ndjson:2: 'ts': cannot parse time 'soon' as '%d/%m/%Y %H:%M:%S'",
    );
    let docs = s.run("find", &["c", "--sort", "ts:1"]).ok().json_lines();
    let times: Vec<&str> = docs
        .iter()
        .map(|d| d["ts"]["$date"].as_str().expect("date"))
        .collect();
    assert_eq!(
        times,
        [
            "2016-01-01T00:00:00.000Z",
            "2016-01-01T00:00:01.000Z",
            "2016-01-01T00:00:02.000Z",
            "2016-01-01T00:00:03.000Z"
        ]
    );
    // A CSV option means nothing for NDJSON: refused, naming it.
    ingest_fails_saying(
        &s,
        &["c", &epoch, "--csv-meta-columns", "x"],
        "--csv-meta-columns does not apply to NDJSON input",
    );
    // ... and the CSV time format points to the option NDJSON reads.
    ingest_fails_saying(
        &s,
        &["c", &epoch, "--csv-time-format", "epoch-ms"],
        "--csv-time-format does not apply to NDJSON input (--time-format reads the time field \
         of NDJSON)",
    );
}

#[test]
fn nesting_past_the_limit_names_the_limit_and_the_line() {
    let s = Scratch::new();
    s.create("c");
    let deep = format!(
        "{}\n{{\"ts\":{{\"$date\":\"2016-01-01T00:00:00Z\"}},\"a\":{}1{}}}\n",
        r#"{"ts":{"$date":"2016-01-01T00:00:00Z"},"v":1}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    let file = s.file("deep.ndjson", deep.as_bytes());
    ingest_fails_saying(
        &s,
        &["c", &file],
        "deep.ndjson:2: malformed JSON: objects and arrays nest more than 127 levels deep, the limit",
    );
    assert_eq!(s.values("c"), [1]);
}

#[test]
fn typed_csv_headers_read_dates_in_their_layout() {
    let s = Scratch::new();
    s.create("c");
    let text = "ts.date(2006/01/02 15:04),meta.string(),when.date_oracle(DD-MON-YYYY),v.int32()\n\
                2016/01/02 03:04,a,05-JAN-2016,1\n";
    let file = s.file("typed.csv", text.as_bytes());
    s.run("ingest", &["c", &file, "--columnsHaveTypes"]).ok();
    let docs = s.find_all("c");
    assert_eq!(docs.len(), 1);
    assert_eq!(docs[0]["ts"]["$date"], "2016-01-02T03:04:00.000Z");
    assert_eq!(docs[0]["when"]["$date"], "2016-01-05T00:00:00.000Z");
    assert_eq!(docs[0]["v"], 1);
}

/// A Parquet file of columns `time` (ms), `host`, `rack` and `v`, three rows.
fn flat_parquet() -> Vec<u8> {
    let batch = RecordBatch::try_from_iter([
        (
            "time",
            Arc::new(TimestampMillisecondArray::from(vec![
                1_451_606_400_000,
                1_451_606_401_000,
                1_451_606_402_000,
            ])) as ArrayRef,
        ),
        ("host", Arc::new(StringArray::from(vec!["a", "b", "a"]))),
        (
            "rack",
            Arc::new(StringArray::from(vec![Some("1"), None, Some("1")])),
        ),
        ("v", Arc::new(Float64Array::from(vec![1.0, 2.0, 3.0]))),
    ])
    .expect("batch");
    parquet_bytes(&batch)
}

#[test]
fn parquet_columns_are_mapped_by_the_csv_options_or_the_option_refused() {
    let s = Scratch::new();
    s.create("c");
    let file = s.file("flat.parquet", &flat_parquet());
    ingest_fails_saying(
        &s,
        &["c", &file, "--csv-columns", "v"],
        "--csv-columns does not apply to Parquet input",
    );
    ingest_fails_saying(
        &s,
        &[
            "c",
            &file,
            "--csv-time-column",
            "time",
            "--csv-meta-columns",
            "nope",
        ],
        "no column 'nope'",
    );
    assert!(s.find_all("c").is_empty());
    s.run(
        "ingest",
        &[
            "c",
            &file,
            "--csv-time-column",
            "time",
            "--csv-meta-columns",
            "host,rack",
        ],
    )
    .ok();
    let docs = s.run("find", &["c", "--sort", "ts:1"]).ok().json_lines();
    assert_eq!(docs.len(), 3);
    assert_eq!(docs[0]["ts"]["$date"], "2016-01-01T00:00:00.000Z");
    assert_eq!(
        docs[0]["meta"],
        serde_json::json!({"host": "a", "rack": "1"})
    );
    assert_eq!(docs[1]["meta"], serde_json::json!({"host": "b"}));
    assert_eq!(docs[2]["v"], 3.0);
    assert!(docs[0].get("host").is_none() && docs[0].get("time").is_none());
}

#[test]
fn a_batch_of_lines_with_fields_of_their_own_is_stored() {
    let s = Scratch::new();
    s.create("c");
    let text: String = (0..3000)
        .map(|i| {
            format!(
                "{{\"ts\":{{\"$date\":{{\"$numberLong\":\"{}\"}}}},\"meta\":\"a\",\"f{i}\":{i}}}\n",
                1_451_606_400_000_i64 + i
            )
        })
        .collect();
    let file = s.file("sparse.ndjson", text.as_bytes());
    s.run("ingest", &["c", &file]).ok();
    let run = s.run("find", &["c", "--sort", "ts:1"]).ok();
    let docs = run.json_lines();
    assert_eq!(docs.len(), 3000);
    assert_eq!(docs[2999]["f2999"], 2999);
}

/// Ingests one measurement of `fields` fields (`f0`, `f1`, ...) from one line and reads it
/// back; returns the time both commands took.
fn ingest_wide(fields: usize) -> Duration {
    let s = Scratch::new();
    s.create("c");
    let mut line = String::from(r#"{"ts":{"$date":"2016-01-01T00:00:00Z"},"meta":"a""#);
    for i in 0..fields {
        write!(line, ",\"f{i}\":{i}").expect("write");
    }
    line.push_str("}\n");
    let file = s.file("wide.ndjson", line.as_bytes());
    let start = Instant::now();
    s.run("ingest", &["c", &file]).ok();
    let docs = s.find_all("c");
    let took = start.elapsed();
    assert_eq!(docs.len(), 1);
    let last = format!("f{}", fields - 1);
    assert_eq!(docs[0][last.as_str()], fields - 1);
    took
}

#[test]
fn a_measurement_of_100000_fields_is_ingested_and_read_in_linear_time() {
    // Four times the fields take about four times as long, less for the commands' fixed
    // costs (the best of two runs of the smaller, as the machine may be busy). Scanning the
    // fields met so far for each field (the Arrow columns of a batch, the columns of a
    // bucket read back) made it sixteen times, minutes for 100 000 fields.
    let small = ingest_wide(25_000).min(ingest_wide(25_000));
    let large = ingest_wide(100_000);
    let ratio = large.as_secs_f64() / small.as_secs_f64();
    assert!(
        ratio < 9.0,
        "100 000 fields took {large:?}, {ratio:.1} times 25 000 fields ({small:?})"
    );
}
