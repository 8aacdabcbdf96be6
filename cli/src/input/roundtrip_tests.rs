//! Round trip of measurements through the NDJSON the CLI writes and reads: documents written
//! by `cmd::write_extjson_line` (relaxed Extended JSON, what `find` and `buckets` print) and
//! read by `input::ndjson::NdjsonReader` (what `ingest` reads) come back equal — same fields
//! in the same order at every depth, same types, same values — for documents of every BSON
//! type, dates of the whole 64-bit millisecond range and doubles of every class. Doubles are
//! equal by their bits (so `-0.0` is not `0.0`), except that any NaN equals any NaN: Extended
//! JSON writes every NaN as `NaN`, without its payload.
//!
//! Two kinds of documents are not generated:
//! * those with a NUL in a field name: BSON cannot hold them (field names are C strings) and
//!   the engine refuses them, so they never reach the writer;
//! * those with a field named like an Extended JSON keyword ([`KEYWORDS`]: `$date`, `$oid`,
//!   ...): an object with such a field reads back as that type's wrapper, or fails to read, a
//!   limitation of the format itself.

use bson::oid::ObjectId;
use bson::raw::CString;
use bson::spec::BinarySubtype;
use bson::{
    Binary, Bson, DateTime, Decimal128, Document, JavaScriptCodeWithScope, Regex, Timestamp,
};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;

use crate::cmd::write_extjson_line;
use crate::input::ndjson::NdjsonReader;

/// Field names tried often: empty, dotted, `$`-prefixed, non-ASCII, control characters,
/// JSON's own escapes.
const NAMES: [&str; 16] = [
    "",
    ".",
    "$",
    "$x",
    "a.b",
    "_id",
    "t",
    "m",
    "é",
    "日本",
    "\u{1}",
    " ",
    "\"",
    "\\",
    "\n",
    "\u{10ffff}",
];

/// The keys the Extended JSON reader takes as type wrappers (see the module documentation).
const KEYWORDS: [&str; 19] = [
    "$binary",
    "$code",
    "$date",
    "$dbPointer",
    "$id",
    "$maxKey",
    "$minKey",
    "$numberDecimal",
    "$numberDouble",
    "$numberInt",
    "$numberLong",
    "$oid",
    "$ref",
    "$regularExpression",
    "$scope",
    "$symbol",
    "$timestamp",
    "$undefined",
    "$uuid",
];

/// Dates tried often: both ends of the 64-bit range, years 0, 1, 9999 and 10000, the epoch.
const DATES: [i64; 14] = [
    i64::MIN,
    i64::MIN + 1,
    -62_167_219_200_001,
    -62_167_219_200_000,
    -62_135_596_800_000,
    -1,
    0,
    1,
    1_700_000_000_123,
    253_402_300_799_999,
    253_402_300_800_000,
    8_640_000_000_000_001,
    i64::MAX - 1,
    i64::MAX,
];

/// Doubles tried often: zeros of both signs, NaNs (quiet, signalling, negative, with a
/// payload), infinities, extremes, subnormals, whole numbers (written without a fraction by
/// some writers), integers beyond 2^53.
const DOUBLES: [f64; 16] = [
    0.0,
    -0.0,
    1.5,
    2.0,
    -3.0,
    0.1,
    1e300,
    f64::NAN,
    -f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::MAX,
    f64::MIN_POSITIVE,
    5e-324,
    9_007_199_254_740_993.0,
    1e21,
];

fn date() -> impl Strategy<Value = i64> {
    prop_oneof![1 => prop::sample::select(DATES.to_vec()), 1 => any::<i64>()]
}

fn double() -> impl Strategy<Value = f64> {
    prop_oneof![
        1 => prop::sample::select(DOUBLES.to_vec()),
        1 => any::<u64>().prop_map(f64::from_bits),
    ]
}

/// Any text (NUL included), up to 8 characters.
fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(any::<char>(), 0..=8).prop_map(|c| c.into_iter().collect())
}

/// A field name without NUL, not an Extended JSON keyword.
fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        1 => prop::sample::select(NAMES.to_vec()).prop_map(str::to_owned),
        2 => text().prop_map(|s| s.replace('\0', "")),
    ]
    .prop_filter("an Extended JSON keyword", |n| {
        !KEYWORDS.contains(&n.as_str())
    })
}

/// Regular expression options as BSON stores them: a subset of `ilmsux`, in order.
fn regex_options() -> impl Strategy<Value = String> {
    any::<u8>().prop_map(|b| {
        "ilmsux"
            .chars()
            .enumerate()
            .filter(|(i, _)| b >> i & 1 == 1)
            .map(|(_, c)| c)
            .collect()
    })
}

/// A DBPointer: the bson crate builds one only by reading BSON.
fn db_pointer(namespace: &str, id: [u8; 12]) -> Bson {
    let mut body = vec![0x0c, b'p', 0];
    body.extend(
        i32::try_from(namespace.len() + 1)
            .unwrap_or(0)
            .to_le_bytes(),
    );
    body.extend(namespace.as_bytes());
    body.push(0);
    body.extend(id);
    let mut bytes = i32::try_from(body.len() + 5)
        .unwrap_or(0)
        .to_le_bytes()
        .to_vec();
    bytes.extend(body);
    bytes.push(0);
    Document::from_reader(&mut bytes.as_slice())
        .ok()
        .and_then(|mut d| d.remove("p"))
        .expect("a DBPointer document")
}

/// A value of every scalar type.
fn scalar() -> BoxedStrategy<Bson> {
    prop_oneof![
        3 => double().prop_map(Bson::Double),
        2 => text().prop_map(Bson::String),
        1 => (any::<u8>(), prop::collection::vec(any::<u8>(), 0..=20)).prop_map(|(s, bytes)| {
            Bson::Binary(Binary { subtype: BinarySubtype::from(s), bytes })
        }),
        1 => Just(Bson::Undefined),
        1 => any::<[u8; 12]>().prop_map(|b| Bson::ObjectId(ObjectId::from_bytes(b))),
        1 => any::<bool>().prop_map(Bson::Boolean),
        3 => date().prop_map(|t| Bson::DateTime(DateTime::from_millis(t))),
        1 => Just(Bson::Null),
        1 => (text(), regex_options()).prop_map(|(p, options)| {
            let pattern = CString::try_from(p.replace('\0', "")).expect("no NUL");
            let options = CString::try_from(options).expect("no NUL");
            Bson::RegularExpression(Regex { pattern, options })
        }),
        1 => (text(), any::<[u8; 12]>()).prop_map(|(ns, id)| db_pointer(&ns, id)),
        1 => text().prop_map(Bson::JavaScriptCode),
        1 => text().prop_map(Bson::Symbol),
        2 => any::<i32>().prop_map(Bson::Int32),
        1 => any::<(u32, u32)>().prop_map(|(time, increment)| {
            Bson::Timestamp(Timestamp { time, increment })
        }),
        2 => prop_oneof![
            Just(0_i64), Just(-1), Just(i64::MIN), Just(i64::MAX), any::<i64>()
        ].prop_map(Bson::Int64),
        1 => any::<[u8; 16]>().prop_map(|b| Bson::Decimal128(Decimal128::from_bytes(b))),
        1 => Just(Bson::MinKey),
        1 => Just(Bson::MaxKey),
    ]
    .boxed()
}

/// Up to 4 fields, names unique (a document cannot hold two of one name).
fn fields(value: BoxedStrategy<Bson>) -> impl Strategy<Value = Document> {
    prop::collection::vec((name(), value), 0..=4).prop_map(|fields| {
        let mut d = Document::new();
        for (k, v) in fields {
            if !d.contains_key(&k) {
                d.insert(k, v);
            }
        }
        d
    })
}

/// A value of any type; documents, arrays and code with scope nest up to `depth` levels.
fn value(depth: u32) -> BoxedStrategy<Bson> {
    if depth == 0 {
        return scalar();
    }
    let inner = value(depth - 1);
    prop_oneof![
        5 => scalar(),
        2 => fields(inner.clone()).prop_map(Bson::Document),
        1 => prop::collection::vec(inner.clone(), 0..=4).prop_map(Bson::Array),
        1 => (text(), fields(inner)).prop_map(|(code, scope)| {
            Bson::JavaScriptCodeWithScope(JavaScriptCodeWithScope {
                code,
                scope,
            })
        }),
    ]
    .boxed()
}

/// The last millisecond of year 9999.
const LAST_MS_OF_9999: i64 = 253_402_300_799_999;

/// A measurement: a time of the whole range first, then up to 4 fields of any type.
fn measurement() -> impl Strategy<Value = Document> {
    (date(), fields(value(2))).prop_map(|(t, rest)| {
        let mut d = Document::new();
        d.insert("t", DateTime::from_millis(t));
        for (k, v) in rest {
            if !d.contains_key(&k) {
                d.insert(k, v);
            }
        }
        d
    })
}

/// Equal as the module documentation says: by type and value, fields in order, doubles by
/// their bits or both NaN.
fn same(a: &Bson, b: &Bson) -> bool {
    match (a, b) {
        (Bson::Double(x), Bson::Double(y)) => {
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
        }
        (Bson::Document(x), Bson::Document(y)) => same_document(x, y),
        (Bson::Array(x), Bson::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Bson::JavaScriptCodeWithScope(x), Bson::JavaScriptCodeWithScope(y)) => {
            x.code == y.code && same_document(&x.scope, &y.scope)
        }
        // Extended JSON writes a Decimal128 as its text: it reads back as that text parses
        // (the same bytes for a canonical encoding; a non-canonical one, which IEEE 754 reads
        // as zero, and a NaN payload come back in canonical form).
        (Bson::Decimal128(x), Bson::Decimal128(y)) => x
            .to_string()
            .parse::<Decimal128>()
            .is_ok_and(|p| p.bytes() == y.bytes()),
        _ => a == b,
    }
}

fn same_document(x: &Document, y: &Document) -> bool {
    x.len() == y.len()
        && x.iter()
            .zip(y)
            .all(|((kx, vx), (ky, vy))| kx == ky && same(vx, vy))
}

/// Writes `docs` as the CLI writes NDJSON and reads them back as `ingest` reads it.
fn write_and_read(docs: &[Document]) -> Result<Vec<Document>, String> {
    let mut out = Vec::new();
    for d in docs {
        write_extjson_line(&mut out, d.clone()).map_err(|e| format!("write {d}: {e}"))?;
    }
    let text = String::from_utf8(out.clone()).map_err(|e| format!("not UTF-8: {e}"))?;
    let mut back = Vec::new();
    for record in NdjsonReader::new(out.as_slice()) {
        let record = record.map_err(|e| format!("read: {e}"))?;
        back.push(
            record
                .doc
                .map_err(|e| format!("line {}: {e}\n{text}", record.line))?,
        );
    }
    Ok(back)
}

fn check(docs: &[Document]) -> Result<(), TestCaseError> {
    let back = write_and_read(docs).map_err(TestCaseError::fail)?;
    prop_assert_eq!(back.len(), docs.len(), "lines read back");
    for (d, b) in docs.iter().zip(&back) {
        let mut line = Vec::new();
        write_extjson_line(&mut line, d.clone()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(
            same_document(d, b),
            "written {:?}\nas {}\nread back {:?}",
            d,
            String::from_utf8_lossy(&line).trim_end(),
            b
        );
    }
    Ok(())
}

/// Batches of measurements of every type round-trip. `TSCOLL_NDJSON_CASES` runs more.
#[test]
fn ndjson_lines_read_back_what_was_written() {
    let cases = std::env::var("TSCOLL_NDJSON_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let mut runner = TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let batches = prop::collection::vec(measurement(), 1..=4);
    if let Err(e) = runner.run(&batches, |docs| check(&docs)) {
        panic!("{e}");
    }
}

/// Every date of [`DATES`] (years before 0 and after 9999, both ends of the range), every
/// double of [`DOUBLES`] and the integer extremes, one field each.
#[test]
fn edge_values_read_back_what_was_written() {
    let mut d = Document::new();
    for (i, t) in DATES.iter().enumerate() {
        d.insert(format!("d{i}"), DateTime::from_millis(*t));
    }
    for (i, x) in DOUBLES.iter().enumerate() {
        d.insert(format!("f{i}"), *x);
    }
    for (i, x) in [i64::MIN, -1, 0, 1, i64::MAX].iter().enumerate() {
        d.insert(format!("l{i}"), *x);
    }
    for (i, x) in [i32::MIN, 0, i32::MAX].iter().enumerate() {
        d.insert(format!("i{i}"), *x);
    }
    if let Err(e) = check(&[d]) {
        panic!("{e}");
    }
}

/// A date after year 9999 inside the scope of code with scope reads back as the same date
/// (the scope is written by the same rules as the document, not by the bson crate, which
/// prints such a date as `9999-12-31T23:59:59.999999999Z`).
#[test]
fn dates_beyond_9999_in_a_code_scope_read_back() {
    let mut scope = Document::new();
    scope.insert("d", DateTime::from_millis(LAST_MS_OF_9999 + 1));
    let mut d = Document::new();
    d.insert(
        "c",
        JavaScriptCodeWithScope {
            code: "f()".to_owned(),
            scope,
        },
    );
    if let Err(e) = check(&[d]) {
        panic!("{e}");
    }
}
