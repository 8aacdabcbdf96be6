//! `find --format parquet|csv` and `ingest FILE.parquet`: exact round trips for every BSON
//! type Parquet carries (JSON text for those it has no type for), Parquet files
//! written by other tools, and CSV back through `ingest`.

use std::sync::Arc;

use arrow_array::types::Int32Type;
use arrow_array::{
    ArrayRef, Date32Array, Decimal128Array, DictionaryArray, Float32Array, Int8Array,
    LargeStringArray, ListArray, RecordBatch, TimestampNanosecondArray, UInt64Array,
};
use parquet::arrow::ArrowWriter;

use crate::common::Scratch;

/// Measurements of every type Parquet carries: two series; `some` missing in one document,
/// `nul` null in every one.
const EVERY_TYPE: &str = r#"{"ts":{"$date":"2016-01-01T00:00:00Z"},"meta":{"series":"a","rack":{"$numberInt":"1"}},"_id":{"$oid":"65a1b2c3d4e5f60718293a01"},"d":{"$numberDouble":"1.5"},"nan":{"$numberDouble":"NaN"},"neg0":{"$numberDouble":"-0.0"},"i":{"$numberInt":"7"},"l":{"$numberLong":"7"},"big":{"$numberLong":"9007199254740993"},"b":true,"s":"héllo, \"world\"","dt":{"$date":{"$numberLong":"-5"}},"far":{"$date":{"$numberLong":"253402300800000"}},"oid":{"$oid":"0123456789abcdef01234567"},"bin":{"$binary":{"base64":"AAEC","subType":"00"}},"uuid":{"$binary":{"base64":"ASNFZ4mrze8BI0VniavN7w==","subType":"04"}},"dec":{"$numberDecimal":"1.10"},"tsp":{"$timestamp":{"t":5,"i":6}},"doc":{"x":{"$numberInt":"1"},"y":{"z":"q"}},"arr":[{"$numberInt":"1"},{"$numberInt":"2"}],"arrdocs":[{"k":"a"},{"k":"b"}],"arrnull":[{"$numberDouble":"1.0"},null],"nul":null,"some":{"$numberInt":"1"}}
{"ts":{"$date":"2016-01-01T00:00:01.250Z"},"meta":{"series":"b","rack":{"$numberInt":"2"}},"_id":{"$oid":"65a1b2c3d4e5f60718293a02"},"d":{"$numberDouble":"-Infinity"},"nan":{"$numberDouble":"2.0"},"neg0":{"$numberDouble":"0.0"},"i":{"$numberInt":"-2147483648"},"l":{"$numberLong":"-9223372036854775808"},"big":{"$numberLong":"1"},"b":false,"s":"","dt":{"$date":"2016-02-29T12:00:00Z"},"far":{"$date":{"$numberLong":"-62167219200001"}},"oid":{"$oid":"ffffffffffffffffffffffff"},"bin":{"$binary":{"base64":"","subType":"00"}},"uuid":{"$binary":{"base64":"AAAAAAAAAAAAAAAAAAAAAA==","subType":"04"}},"dec":{"$numberDecimal":"-1E+6144"},"tsp":{"$timestamp":{"t":4294967295,"i":0}},"doc":{"x":{"$numberInt":"2"},"y":{"z":"r"}},"arr":[],"arrdocs":[],"arrnull":[null],"nul":null}
"#;

/// Every measurement of `coll`, one relaxed Extended JSON line each, sorted.
fn lines(s: &Scratch, coll: &str) -> Vec<String> {
    let mut lines: Vec<String> = s
        .run("find", &[coll])
        .ok()
        .stdout()
        .lines()
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

#[test]
fn parquet_round_trip_is_exact_for_every_type_parquet_carries() {
    let s = Scratch::new();
    s.create("a");
    s.create("b");
    let input = s.file("every.ndjson", EVERY_TYPE.as_bytes());
    s.run("ingest", &["a", &input]).ok();
    let out = s.path().join("a.parquet");
    let out = out.to_str().expect("utf-8");
    let export = s
        .run("find", &["a", "--format", "parquet", "--out", out])
        .ok();
    assert!(
        !export.stderr().contains("note:"),
        "nothing is widened: {}",
        export.stderr()
    );
    s.run("ingest", &["b", out]).ok();
    let (a, b) = (lines(&s, "a"), lines(&s, "b"));
    assert_eq!(a.len(), 2);
    assert_eq!(a, b, "the Parquet round trip changes nothing");
    // The null of `nul` comes back as null, the missing `some` as missing.
    assert!(b.iter().all(|l| l.contains(r#""nul":null"#)));
    assert_eq!(b.iter().filter(|l| l.contains(r#""some""#)).count(), 1);
}

#[test]
fn parquet_export_writes_values_without_an_arrow_type_as_json_text() {
    for (doc, note, column, text) in [
        (
            r#"{"ts":{"$date":"2016-01-01T00:00:00Z"},"meta":"a","re":{"$regularExpression":{"pattern":"x","options":""}}}"#,
            "field 're': regex as JSON text",
            "re",
            r#"{"$regularExpression":{"options":"","pattern":"x"}}"#,
        ),
        (
            r#"{"ts":{"$date":"2016-01-01T00:00:00Z"},"meta":"a","deep":{"k":[{"m":{"$minKey":1}}]}}"#,
            "field 'deep.k[].m': minKey as JSON text",
            "deep",
            "",
        ),
        (
            "{\"ts\":{\"$date\":\"2016-01-01T00:00:00Z\"},\"meta\":\"a\",\"v\":\"x\"}\n\
             {\"ts\":{\"$date\":\"2016-01-01T00:00:01Z\"},\"meta\":\"a\",\"v\":1}",
            "field 'v': string and int as JSON text",
            "v",
            r#""x""#,
        ),
        (
            r#"{"ts":{"$date":"2016-01-01T00:00:00Z"},"meta":"a","e":{}}"#,
            "field 'e': empty documents as JSON text",
            "e",
            "{}",
        ),
    ] {
        let s = Scratch::new();
        s.create("a");
        let input = s.file("in.ndjson", doc.as_bytes());
        s.run("ingest", &["a", &input]).ok();
        let out = s.path().join("a.parquet");
        let run = s
            .run(
                "find",
                &[
                    "a",
                    "--format",
                    "parquet",
                    "--out",
                    out.to_str().expect("utf-8"),
                ],
            )
            .ok();
        assert!(run.stderr().contains(note), "{note}: {}", run.stderr());
        let file = std::fs::File::open(&out).expect("written");
        let batch = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
            .and_then(|b| b.build())
            .expect("readable")
            .next()
            .expect("a batch")
            .expect("a batch");
        // `ingest` reads the JSON text back as the values exported.
        s.create("b");
        s.run("ingest", &["b", out.to_str().expect("utf-8")]).ok();
        assert_eq!(lines(&s, "a"), lines(&s, "b"), "{column}");
        let schema = batch.schema();
        let field = schema.field_with_name(column).expect("column");
        if text.is_empty() {
            continue;
        }
        assert_eq!(
            field.metadata().get("tscoll.encoding").map(String::as_str),
            Some("json"),
            "{column}"
        );
        let values = batch
            .column(schema.index_of(column).expect("column"))
            .as_any()
            .downcast_ref::<arrow_array::StringArray>()
            .expect("Utf8");
        let json = |t: &str| serde_json::from_str::<serde_json::Value>(t).expect("JSON");
        assert_eq!(json(values.value(0)), json(text), "{column}");
    }
}

#[test]
fn mixed_numbers_are_widened_with_a_note() {
    let s = Scratch::new();
    s.create("a");
    s.create("b");
    // `v` and eight more fields hold ints and doubles.
    let (ints, doubles): (String, String) = (1..=8)
        .map(|i| (format!(",\"w{i}\":{i}"), format!(",\"w{i}\":{i}.5")))
        .unzip();
    let input = s.file(
        "in.ndjson",
        format!(
            "{{\"ts\":{{\"$date\":\"2016-01-01T00:00:00Z\"}},\"meta\":\"a\",\"v\":1,\"n\":1,\"x\":null{ints}}}\n\
             {{\"ts\":{{\"$date\":\"2016-01-01T00:00:01Z\"}},\"meta\":\"a\",\"v\":2.5,\"n\":{{\"$numberLong\":\"3\"}}{doubles}}}\n"
        )
        .as_bytes(),
    );
    s.run("ingest", &["a", &input]).ok();
    let out = s.path().join("a.parquet");
    let out = out.to_str().expect("utf-8");
    let run = s
        .run("find", &["a", "--format", "parquet", "--out", out])
        .ok();
    let err = run.stderr();
    // One line for the whole export, a note for every field.
    let notes: Vec<&str> = err.lines().filter(|l| l.starts_with("note:")).collect();
    assert_eq!(notes.len(), 1, "{err}");
    for field in ["v", "w1", "w8"] {
        assert!(
            notes[0].contains(&format!("field '{field}': int widened to double")),
            "{err}"
        );
    }
    assert!(notes[0].contains("field 'n': int widened to long"), "{err}");
    assert!(
        notes[0].contains(
            "field 'x': nulls written as missing values (the field is missing elsewhere)"
        ),
        "{err}"
    );
    s.run("ingest", &["b", out]).ok();
    let docs = s.find_all("b");
    assert_eq!(docs.len(), 2);
    assert_eq!(docs[0]["v"], serde_json::json!(1.0));
    assert_eq!(docs[0]["n"], serde_json::json!({"$numberLong": "1"}));
    assert_eq!(docs[1]["v"], serde_json::json!(2.5));
    assert!(
        docs.iter().all(|d| d.get("x").is_none()),
        "nulls read as missing"
    );
}

/// `batch` written as a Parquet file.
pub(crate) fn parquet_bytes(batch: &RecordBatch) -> Vec<u8> {
    let mut out = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut out, batch.schema(), None).expect("writer");
    writer.write(batch).expect("write");
    writer.close().expect("close");
    out
}

/// A Parquet file as other tools write it: nanosecond timestamps without a time zone, a
/// dictionary-encoded meta, small and unsigned integers, dates, decimals, large strings,
/// lists.
fn foreign_parquet() -> Vec<u8> {
    let ts = TimestampNanosecondArray::from(vec![
        1_451_606_400_000_000_000,
        1_451_606_401_999_999_999,
        1_451_606_402_000_000_000,
    ]);
    let meta: DictionaryArray<Int32Type> = vec!["x", "y", "x"].into_iter().collect();
    let small = Int8Array::from(vec![Some(-3), None, Some(4)]);
    let unsigned = UInt64Array::from(vec![1, u64::MAX, 2]);
    let day = Date32Array::from(vec![0, 1, -1]);
    let price = Decimal128Array::from(vec![12_345, -5, 0])
        .with_precision_and_scale(10, 2)
        .expect("decimal");
    let name = LargeStringArray::from(vec!["p", "q", "r"]);
    let ratio = Float32Array::from(vec![0.5, 1.5, -2.0]);
    let list = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
        Some(vec![Some(1), None]),
        None,
        Some(vec![]),
    ]);
    let batch = RecordBatch::try_from_iter([
        ("ts", Arc::new(ts) as ArrayRef),
        ("meta", Arc::new(meta)),
        ("small", Arc::new(small)),
        ("unsigned", Arc::new(unsigned)),
        ("day", Arc::new(day)),
        ("price", Arc::new(price)),
        ("name", Arc::new(name)),
        ("ratio", Arc::new(ratio)),
        ("list", Arc::new(list)),
    ])
    .expect("batch");
    parquet_bytes(&batch)
}

#[test]
fn parquet_from_other_tools_maps_each_type_and_rejects_a_bad_row_with_its_position() {
    let s = Scratch::new();
    s.create("m");
    let file = s.file("foreign.parquet", &foreign_parquet());
    // A rejected row makes the exit status non-zero; the others are kept.
    let run = s.run("ingest", &["m", &file, "--unordered"]).failed();
    assert!(
        run.stderr().contains(":2:") && run.stderr().contains("'unsigned'"),
        "row 2 (a UInt64 past the long range) is rejected: {}",
        run.stderr()
    );
    let docs = s.find_all("m");
    assert_eq!(docs.len(), 2, "rows 1 and 3 are kept");
    let d = docs
        .iter()
        .find(|d| d["name"] == "p")
        .expect("row 1")
        .clone();
    assert_eq!(
        d["ts"],
        serde_json::json!({"$date": "2016-01-01T00:00:00.000Z"})
    );
    assert_eq!(d["meta"], "x");
    assert_eq!(d["small"], -3);
    assert_eq!(d["unsigned"], serde_json::json!({"$numberLong": "1"}));
    assert_eq!(
        d["day"],
        serde_json::json!({"$date": "1970-01-01T00:00:00.000Z"})
    );
    assert_eq!(d["price"], serde_json::json!({"$numberDecimal": "123.45"}));
    assert_eq!(d["ratio"], 0.5);
    assert_eq!(d["list"], serde_json::json!([1, null]));
    let r = docs.iter().find(|d| d["name"] == "r").expect("row 3");
    assert_eq!(
        r["day"],
        serde_json::json!({"$date": {"$numberLong": "-86400000"}})
    );
    assert_eq!(r["list"], serde_json::json!([]));
}

#[test]
fn a_parquet_column_of_a_type_bson_lacks_is_refused_before_anything_is_stored() {
    let s = Scratch::new();
    s.create("m");
    let mut tags = arrow_array::builder::MapBuilder::new(
        None,
        arrow_array::builder::StringBuilder::new(),
        arrow_array::builder::Int32Builder::new(),
    );
    tags.keys().append_value("k");
    tags.values().append_value(1);
    tags.append(true).expect("map");
    let map = Arc::new(tags.finish()) as ArrayRef;
    let batch = RecordBatch::try_from_iter([
        (
            "ts",
            Arc::new(TimestampNanosecondArray::from(vec![0])) as ArrayRef,
        ),
        ("tags", map),
    ])
    .expect("batch");
    let file = s.file("bad.parquet", &parquet_bytes(&batch));
    let run = s.run("ingest", &["m", &file]).failed();
    assert!(run.stderr().contains("field 'tags'"), "{}", run.stderr());
    assert!(s.find_all("m").is_empty());
    let junk = s.file("junk.parquet", b"not parquet at all");
    let run = s.run("ingest", &["m", &junk]).failed();
    assert!(
        run.stderr().contains("not a readable Parquet file"),
        "{}",
        run.stderr()
    );
}

/// `find COLL --format csv` without `_id`.
fn export_csv(s: &Scratch, coll: &str) -> String {
    s.run(
        "find",
        &[coll, "--format", "csv", "--projection", r#"{"_id":0}"#],
    )
    .ok()
    .stdout()
}

/// Ingests `csv` into `coll`, `meta.series` its meta column, `types` its `--csv-types`.
fn ingest_csv(s: &Scratch, coll: &str, csv: &str, types: &str) {
    let file = s.file(&format!("{coll}.csv"), csv.as_bytes());
    s.run(
        "ingest",
        &[
            coll,
            &file,
            "--csv-meta-columns",
            "meta.series",
            "--csv-types",
            types,
        ],
    )
    .ok();
}

#[test]
fn csv_export_reads_back_through_ingest() {
    let s = Scratch::new();
    s.create("a");
    s.create("b");
    let input = s.file(
        "in.ndjson",
        "{\"ts\":{\"$date\":\"2016-01-01T00:00:00Z\"},\"meta\":{\"series\":\"a\"},\"v\":1,\"x\":0.1,\"s\":\"p, q\",\"ok\":true,\"when\":{\"$date\":\"2016-01-02T03:04:05.678Z\"}}\n\
         {\"ts\":{\"$date\":\"2016-01-01T00:00:01.5Z\"},\"meta\":{\"series\":\"b\"},\"v\":-7,\"x\":1e300,\"s\":\"\\\"\",\"ok\":false,\"when\":{\"$date\":\"1969-12-31T23:59:59Z\"}}\n"
            .as_bytes(),
    );
    s.run("ingest", &["a", &input]).ok();
    let csv = export_csv(&s, "a");
    assert!(csv.starts_with("ts,meta.series,v,x,s,ok,when\n"), "{csv}");
    ingest_csv(&s, "b", &csv, "ok=boolean,when=date");
    let strip = |docs: Vec<serde_json::Value>| -> Vec<serde_json::Value> {
        docs.into_iter()
            .map(|mut d| {
                d.as_object_mut().expect("object").remove("_id");
                d
            })
            .collect()
    };
    assert_eq!(strip(s.find_all("a")), strip(s.find_all("b")));
}

#[test]
fn csv_export_of_dates_outside_years_0_to_9999_reads_back_through_ingest() {
    // Times (and `when`, a date field) before year 0, before 1970, past 9999 and at the ends
    // of the range: CSV writes them with an expanded year, and ingest reads that back.
    let dates = [
        (-62_167_219_200_001_i64, i64::MIN),
        (-2_208_988_800_000, -62_167_219_200_000),
        (-1, 0),
        (253_402_300_800_000, 253_402_300_799_999),
        (32_503_680_000_000_000, i64::MAX),
    ];
    let input: String = dates
        .iter()
        .enumerate()
        .map(|(i, (ts, when))| {
            format!(
                "{{\"ts\":{{\"$date\":{{\"$numberLong\":\"{ts}\"}}}},\"meta\":{{\"series\":\"a\"}},\"v\":{i},\"when\":{{\"$date\":{{\"$numberLong\":\"{when}\"}}}}}}\n"
            )
        })
        .collect();
    let s = Scratch::new();
    s.create("a");
    s.create("b");
    let file = s.file("in.ndjson", input.as_bytes());
    s.run("ingest", &["a", &file]).ok();
    let csv = export_csv(&s, "a");
    for text in [
        "-000001-12-31T23:59:59.999Z",
        "+010000-01-01T00:00:00.000Z",
        "+292278994-08-17T07:12:55.807Z",
        "-292275055-05-16T16:47:04.192Z",
        "1969-12-31T23:59:59.999Z",
    ] {
        assert!(csv.contains(text), "{text} in {csv}");
    }
    assert!(!csv.contains("$date"), "{csv}");
    ingest_csv(&s, "b", &csv, "when=date");
    let strip = |coll: &str| -> Vec<serde_json::Value> {
        let mut docs = s.find_all(coll);
        for d in &mut docs {
            d.as_object_mut().expect("object").remove("_id");
        }
        docs.sort_by_key(|d| d["v"].as_i64().expect("v"));
        docs
    };
    let a = strip("a");
    assert_eq!(a.len(), dates.len());
    assert_eq!(a, strip("b"));
}

#[test]
fn a_plain_parquet_file_round_trips_through_the_columnar_insert() {
    // Without `_id` (an ObjectId column), every column is one the engine's
    // `insert_record_batch` takes as it is.
    let s = Scratch::new();
    s.create("a");
    s.create("b");
    let lines: String = (0..3000)
        .map(|i| {
            format!(
                "{{\"ts\":{{\"$date\":{{\"$numberLong\":\"{}\"}}}},\"meta\":{{\"host\":\"h{}\"}},\"v\":{}.5,\"n\":{i},\"s\":\"x{}\"}}\n",
                1_451_606_400_000_i64 + i64::from(i) * 1000,
                i % 7,
                i,
                i % 3
            )
        })
        .collect();
    let input = s.file("in.ndjson", lines.as_bytes());
    s.run("ingest", &["a", &input, "--batch-size", "500"]).ok();
    let out = s.path().join("a.parquet");
    let out = out.to_str().expect("utf-8");
    s.run(
        "find",
        &[
            "a",
            "--format",
            "parquet",
            "--out",
            out,
            "--projection",
            r#"{"_id":0}"#,
        ],
    )
    .ok();
    s.run("ingest", &["b", out, "--batch-size", "500"]).ok();
    let strip = |coll: &str| -> Vec<String> {
        let mut docs: Vec<String> = s
            .find_all(coll)
            .into_iter()
            .map(|mut d| {
                d.as_object_mut().expect("object").remove("_id");
                d.to_string()
            })
            .collect();
        docs.sort();
        docs
    };
    let a = strip("a");
    assert_eq!(a.len(), 3000);
    assert_eq!(a, strip("b"));
}

#[test]
fn an_export_of_no_measurement_reads_back_as_nothing() {
    let s = Scratch::new();
    s.create("a");
    let input = s.file("in.ndjson", EVERY_TYPE.as_bytes());
    s.run("ingest", &["a", &input]).ok();
    let none = r#"{"i":{"$gt":1000}}"#;
    let csv = s
        .run("find", &["a", "--filter", none, "--format", "csv"])
        .ok()
        .stdout();
    assert_eq!(csv, "", "no header without a column");
    let out = s.path().join("none.parquet");
    let out = out.to_str().expect("utf-8");
    s.run(
        "find",
        &["a", "--filter", none, "--format", "parquet", "--out", out],
    )
    .ok();
    s.create("b");
    let run = s.run("ingest", &["b", out]).ok();
    assert!(
        run.stderr().contains("0 measurements inserted"),
        "{}",
        run.stderr()
    );
    assert!(s.find_all("b").is_empty());
}

#[test]
fn parquet_is_known_by_its_magic_bytes_on_stdin_and_compressed() {
    let s = Scratch::new();
    s.create("a");
    let input = s.file("in.ndjson", EVERY_TYPE.as_bytes());
    s.run("ingest", &["a", &input]).ok();
    let out = s.path().join("a.parquet");
    let out = out.to_str().expect("utf-8");
    s.run("find", &["a", "--format", "parquet", "--out", out])
        .ok();
    let bytes = std::fs::read(out).expect("read");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &bytes).expect("gzip");
    let gz = s.file("a.parquet.gz", &gz.finish().expect("gzip"));
    let plain = s.file("exported", &bytes);
    for (coll, args, stdin) in [
        ("b", vec!["b"], Some(&bytes[..])),
        ("c", vec!["c", gz.as_str()], None),
        ("d", vec!["d", plain.as_str()], None),
    ] {
        s.create(coll);
        s.run_with_stdin("ingest", &args, stdin).ok();
        assert_eq!(lines(&s, coll), lines(&s, "a"), "{coll}");
    }
}
