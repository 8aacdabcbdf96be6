//! CSV ingestion with a column mapping: time column and format, meta columns, selected and
//! renamed columns, typed cells, empty cells omitted.

use crate::common::Scratch;

const WEATHER: &str = "date,location,temp_max,wind,weather\n\
2012-01-01,Seattle,12.8,4.7,drizzle\n\
2012-01-02,Seattle,10.6,,rain\n\
2012-01-01,New York,7,3.1,sun\n";

#[test]
fn maps_columns_to_time_meta_and_fields() {
    let s = Scratch::new();
    s.create("w");
    let file = s.file("weather.csv", WEATHER.as_bytes());
    s.run(
        "ingest",
        &[
            "w",
            &file,
            "--csv-time-column",
            "date",
            "--csv-meta-columns",
            "location",
            "--csv-columns",
            "temp_max=tmax,wind",
        ],
    )
    .ok();
    let docs = s
        .run(
            "find",
            &[
                "w",
                "--filter",
                r#"{"meta.location":"Seattle"}"#,
                "--sort",
                "ts:1",
            ],
        )
        .ok()
        .json_lines();
    assert_eq!(docs.len(), 2);
    assert_eq!(docs[0]["ts"]["$date"], "2012-01-01T00:00:00.000Z");
    assert_eq!(docs[0]["meta"]["location"], "Seattle");
    assert_eq!(docs[0]["tmax"], 12.8);
    assert_eq!(docs[0]["wind"], 4.7);
    assert!(
        docs[0].get("weather").is_none(),
        "not selected: {}",
        docs[0]
    );
    assert!(
        docs[1].get("wind").is_none(),
        "empty cell must be omitted: {}",
        docs[1]
    );
    let ny = s
        .run(
            "find",
            &["w", "--filter", r#"{"meta.location":"New York"}"#],
        )
        .ok()
        .json_lines();
    assert_eq!(ny.len(), 1);
    assert!(ny[0]["tmax"].is_i64(), "7 is an integer: {}", ny[0]);
}

#[test]
fn epoch_times_and_bad_rows() {
    let s = Scratch::new();
    s.create("e");
    let text = "ts,sensor,v\n1451606400000,a,1\nsoon,a,2\n1451606460000,a,3\n";
    let file = s.file("epoch.csv.gz", &{
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(text.as_bytes()).expect("gzip");
        e.finish().expect("gzip")
    });
    let run = s
        .run(
            "ingest",
            &[
                "e",
                &file,
                "--csv-time-format",
                "epoch-ms",
                "--csv-meta-columns",
                "sensor",
                "--unordered",
            ],
        )
        .failed();
    assert!(
        run.stderr()
            .contains(&format!("{file}:3: cannot parse time 'soon'")),
        "{}",
        run.stderr()
    );
    assert_eq!(s.values("e"), [1, 3]);
}

#[test]
fn unknown_column_is_an_error() {
    let s = Scratch::new();
    s.create("w");
    let file = s.file("weather.csv", WEATHER.as_bytes());
    let run = s
        .run("ingest", &["w", &file, "--csv-time-column", "when"])
        .failed();
    assert!(
        run.stderr().contains("no column 'when'"),
        "{}",
        run.stderr()
    );
}
