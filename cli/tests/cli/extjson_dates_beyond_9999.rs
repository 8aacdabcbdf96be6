//! Dates outside the years 1970-9999 printed by `find` read back as the same instants:
//! relaxed Extended JSON writes them as `{"$date":{"$numberLong":"..."}}`, and dates inside
//! those years with exactly three millisecond digits.

use crate::common::Scratch;

/// The instants of the test (milliseconds since the Unix epoch), with `v` = their index.
const DATES: [i64; 10] = [
    i64::MIN,
    -62_135_596_800_000, // 0001-01-01
    -1,
    0,
    20,
    1_709_210_096_789,   // 2024-02-29T12:34:56.789Z
    253_402_300_799_999, // 9999-12-31T23:59:59.999Z
    253_402_300_800_000, // 10000-01-01
    32_503_680_000_000_000,
    i64::MAX,
];

fn ndjson(dates: &[i64]) -> String {
    dates
        .iter()
        .enumerate()
        .map(|(i, ms)| {
            format!(
                "{{\"ts\":{{\"$date\":{{\"$numberLong\":\"{ms}\"}}}},\"meta\":{{\"series\":\"a\"}},\"v\":{i}}}\n"
            )
        })
        .collect()
}

/// `find`'s documents of `coll` without `_id`, sorted by `v`.
fn found(s: &Scratch, coll: &str) -> Vec<serde_json::Value> {
    let mut docs = s.find_all(coll);
    for d in &mut docs {
        d.as_object_mut().expect("object").remove("_id");
    }
    docs.sort_by_key(|d| d["v"].as_i64().expect("v"));
    docs
}

#[test]
fn dates_beyond_year_9999_survive_find_and_reingest() {
    let s = Scratch::new();
    s.create("first");
    let file = s.file("dates.ndjson", ndjson(&DATES).as_bytes());
    s.run("ingest", &["first", &file, "--unordered"]);
    let first = found(&s, "first");
    // The engine may refuse the very extremes of the range; every date it stores must
    // survive the round trip, and the years 10000+ and before 1970 must be among them.
    let stored: Vec<i64> = first
        .iter()
        .map(|d| DATES[usize::try_from(d["v"].as_i64().expect("v")).expect("index")])
        .collect();
    for ms in [-1, 0, 20, 253_402_300_799_999, 253_402_300_800_000] {
        assert!(stored.contains(&ms), "{ms} not stored: {first:?}");
    }

    let text = |ms: i64| {
        let i = DATES.iter().position(|&d| d == ms).expect("date");
        first
            .iter()
            .find(|d| d["v"] == i)
            .map(|d| d["ts"].to_string())
            .expect("stored")
    };
    assert_eq!(text(20), r#"{"$date":"1970-01-01T00:00:00.020Z"}"#);
    assert_eq!(text(0), r#"{"$date":"1970-01-01T00:00:00.000Z"}"#);
    assert_eq!(text(-1), r#"{"$date":{"$numberLong":"-1"}}"#);
    assert_eq!(
        text(253_402_300_799_999),
        r#"{"$date":"9999-12-31T23:59:59.999Z"}"#
    );
    assert_eq!(
        text(253_402_300_800_000),
        r#"{"$date":{"$numberLong":"253402300800000"}}"#
    );

    // What `find` printed, ingested again, is the same data.
    let printed: String = first.iter().map(|d| format!("{d}\n")).collect();
    let again = s.file("again.ndjson", printed.as_bytes());
    s.create("second");
    s.run("ingest", &["second", &again]).ok();
    assert_eq!(found(&s, "second"), first);
    // And the instants are the ones of the input.
    let filter = r#"{"ts":{"$gte":{"$date":{"$numberLong":"253402300800000"}}}}"#;
    let beyond = s
        .run("find", &["second", "--filter", filter])
        .ok()
        .json_lines();
    let want = stored
        .iter()
        .filter(|&&ms| ms >= 253_402_300_800_000)
        .count();
    assert_eq!(beyond.len(), want, "{beyond:?}");
}
