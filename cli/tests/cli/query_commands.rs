//! `create`, `find` (filter, projection, sort, limit), `stats` and `buckets` end to end.

use crate::common::{self, Scratch, good_ndjson};

fn loaded() -> Scratch {
    let s = Scratch::new();
    s.create("m");
    let file = s.file("good.ndjson", good_ndjson().as_bytes());
    s.run("ingest", &["m", &file]).ok();
    s
}

#[test]
fn find_with_filter_sort_limit_and_projection() {
    let s = loaded();
    let docs = s
        .run(
            "find",
            &[
                "m",
                "--filter",
                r#"{"meta.series":"a","ts":{"$gte":{"$date":"2016-01-01T00:04:00Z"}}}"#,
                "--sort",
                "ts:-1",
                "--limit",
                "2",
            ],
        )
        .ok()
        .json_lines();
    let v: Vec<i64> = docs.iter().map(|d| d["v"].as_i64().expect("v")).collect();
    assert_eq!(v, [10, 8]);
    let projected = s
        .run("find", &["m", "--projection", r#"{"v":1}"#, "--limit", "1"])
        .ok()
        .json_lines();
    assert!(
        projected[0].get("v").is_some() && projected[0].get("meta").is_none(),
        "{}",
        projected[0]
    );
}

#[test]
fn find_takes_a_sort_document_skip_and_limit_0_as_mongodb() {
    let s = loaded();
    let values = |args: &[&str]| -> Vec<i64> {
        let mut all = vec!["m", "--filter", r#"{"meta.series":"a"}"#];
        all.extend_from_slice(args);
        s.run("find", &all)
            .ok()
            .json_lines()
            .iter()
            .map(|d| d["v"].as_i64().expect("v"))
            .collect()
    };
    let newest_first = values(&["--sort", r#"{"ts": -1}"#]);
    assert!(newest_first.len() > 3, "{newest_first:?}");
    assert_eq!(values(&["--sort", "ts:-1"]), newest_first);
    // Skip, then limit; a limit of 0 is no limit.
    assert_eq!(
        values(&["--sort", r#"{"ts":-1}"#, "--skip", "1", "--limit", "2"]),
        newest_first[1..3]
    );
    assert_eq!(
        values(&["--sort", r#"{"ts":-1}"#, "--limit", "0"]),
        newest_first
    );
    assert_eq!(
        values(&["--sort", r#"{"ts":-1}"#, "--skip", "2"]),
        newest_first[2..]
    );
    assert!(values(&["--skip", "1000"]).is_empty());
    // Any field: the matches sorted by it, then by time.
    let by_v = values(&["--sort", r#"{"v": -1, "ts": 1}"#, "--limit", "3"]);
    let mut all = values(&[]);
    all.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(by_v, all[..3]);
    assert_eq!(values(&["--sort", "v:-1", "--limit", "3"]), all[..3]);
}

#[test]
fn find_takes_or_nor_and_negations() {
    let s = loaded();
    let count = |filter: &str| -> u64 {
        let out = s
            .run("find", &["m", "--filter", filter, "--count"])
            .ok()
            .stdout();
        out.trim().parse().expect("a count")
    };
    let all = count("{}");
    let a = count(r#"{"meta.series":"a"}"#);
    assert!(a > 0 && a < all, "{a} of {all}");
    assert_eq!(count(r#"{"$nor":[{"meta.series":"a"}]}"#), all - a);
    assert_eq!(count(r#"{"meta.series":{"$ne":"a"}}"#), all - a);
    assert_eq!(
        count(r#"{"$or":[{"meta.series":"a"},{"meta.series":{"$ne":"a"}}]}"#),
        all
    );
    let big = count(r#"{"v":{"$gt":5}}"#);
    assert_eq!(count(r#"{"v":{"$not":{"$gt":5}}}"#), all - big);
    assert_eq!(
        count(r#"{"v":{"$exists":true}}"#) + count(r#"{"v":{"$exists":false}}"#),
        all
    );
}

#[test]
fn find_rejects_bad_arguments() {
    let s = loaded();
    let run = s.run("find", &["m", "--filter", "{"]).failed();
    assert!(
        run.stderr().contains("--filter: malformed JSON"),
        "{}",
        run.stderr()
    );
    let run = s.run("find", &["m", "--sort", "v:2"]).failed();
    assert!(run.stderr().contains("1 or -1"), "{}", run.stderr());
}

#[test]
fn stats_json_and_table() {
    let s = loaded();
    let stats = s.run("stats", &["m", "--json"]).ok().json_lines();
    assert_eq!(stats.len(), 1);
    assert_eq!(stats[0]["measurementCount"], 10);
    assert!(stats[0].get("bucketCount").is_some(), "{}", stats[0]);
    assert!(stats[0].get("compressionRatio").is_some(), "{}", stats[0]);
    let table = s.run("stats", &["m"]).ok().stdout();
    assert!(table.contains("compression ratio"), "{table}");
    assert!(table.contains("measurements per bucket"), "{table}");
}

/// SPEC §8.2: `ingest --stats` prints the engine-level catalog statistics of the ingest; a
/// fresh `stats` process has no catalog state, so it has no `bucketCatalog` section.
#[test]
fn ingest_stats_prints_the_bucket_catalog_section() {
    let s = Scratch::new();
    s.create("m");
    let file = s.file("good.ndjson", good_ndjson().as_bytes());
    let out = s.run("ingest", &["m", &file, "--stats"]).ok().json_lines();
    assert_eq!(out.len(), 1);
    let cat = &out[0]["bucketCatalog"];
    assert_eq!(cat["numMeasurementsCommitted"], 10, "{cat}");
    let buckets = cat["numBuckets"].as_i64().expect("numBuckets");
    assert!(buckets >= 1, "{cat}");
    assert_eq!(
        cat["numArchivedBuckets"].as_i64().expect("archived"),
        buckets - cat["numOpenBuckets"].as_i64().expect("open"),
    );
    assert!(
        cat["memoryUsage"].as_i64().expect("memoryUsage") > 0,
        "{cat}"
    );
    let keys: Vec<&String> = cat.as_object().expect("object").keys().collect();
    assert_eq!(
        keys[..5],
        [
            "numBuckets",
            "numOpenBuckets",
            "numIdleBuckets",
            "numArchivedBuckets",
            "memoryUsage"
        ]
    );
    let stats = s.run("stats", &["m", "--json"]).ok().json_lines();
    assert!(stats[0].get("bucketCatalog").is_none(), "{}", stats[0]);
}

#[test]
fn buckets_in_mongodb_shape() {
    let s = loaded();
    let buckets = s.run("buckets", &["m", "--json"]).ok().json_lines();
    assert!(!buckets.is_empty());
    let mut count = 0;
    for b in &buckets {
        assert!(b.get("_id").is_some() && b.get("meta").is_some(), "{b}");
        assert!(b["control"]["min"].get("ts").is_some(), "{b}");
        assert!(b["data"].get("v").is_some(), "{b}");
        // MongoDB's shape is {"0": v0, "1": v1, ...}; arrays are accepted too.
        let ts = &b["data"]["ts"];
        count += ts
            .as_array()
            .map(Vec::len)
            .or_else(|| ts.as_object().map(|o| o.len()))
            .unwrap_or(0);
    }
    assert_eq!(count, 10);
    let text = s.run("buckets", &["m", "--limit", "1"]).ok().stdout();
    assert!(text.starts_with("bucket 0: _id "), "{text}");
}

#[test]
fn create_rejects_conflicting_options_and_reading_a_missing_db_fails() {
    let s = Scratch::new();
    let run = s
        .run(
            "create",
            &[
                "x",
                "--time-field",
                "t",
                "--granularity",
                "hours",
                "--bucket-max-span-seconds",
                "60",
                "--bucket-rounding-seconds",
                "60",
            ],
        )
        .failed();
    assert!(!run.stderr().is_empty());
    let run = s.run("find", &["x"]).failed();
    assert!(
        run.stderr()
            .contains("is not a tscoll database (the directory does not exist)"),
        "{}",
        run.stderr()
    );
    let out = s
        .run(
            "create",
            &[
                "x",
                "--time-field",
                "t",
                "--bucket-max-span-seconds",
                "600",
                "--bucket-rounding-seconds",
                "600",
            ],
        )
        .ok()
        .stdout();
    assert!(out.contains("bucketMaxSpanSeconds"), "{out}");
}

#[test]
fn update_takes_any_filter_one_and_upsert() {
    let s = loaded();
    let out = s
        .run(
            "update",
            &[
                "m",
                "--filter",
                r#"{"v":{"$gte":9}}"#,
                "--update",
                r#"{"$inc":{"v":100}}"#,
            ],
        )
        .ok()
        .stdout();
    assert!(out.contains("matched 2 measurements, modified 2"), "{out}");
    assert_eq!(s.values("m"), [1, 2, 3, 4, 5, 6, 7, 8, 109, 110]);
    // One measurement, by a replacement.
    s.run(
        "update",
        &[
            "m",
            "--filter",
            r#"{"v":1}"#,
            "--update",
            r#"{"ts":{"$date":"2016-01-01T00:01:00Z"},"meta":{"series":"b"},"v":-1}"#,
            "--one",
        ],
    )
    .ok();
    assert_eq!(s.values("m"), [-1, 2, 3, 4, 5, 6, 7, 8, 109, 110]);
    // Nothing matches: upsert from the filter's equalities.
    let out = s
        .run(
            "update",
            &[
                "m",
                "--filter",
                r#"{"meta.series":"c","v":0}"#,
                "--update",
                r#"{"$set":{"ts":{"$date":"2016-01-02T00:00:00Z"}}}"#,
                "--upsert",
            ],
        )
        .ok()
        .stdout();
    assert!(out.contains("upserted"), "{out}");
    assert_eq!(s.values("m").len(), 11);
    // A measurement left without its time field: refused with MongoDB's category.
    let err = s
        .run(
            "update",
            &["m", "--filter", "{}", "--update", r#"{"$unset":{"ts":""}}"#],
        )
        .failed()
        .stderr();
    assert!(err.contains("BadValue"), "{err}");
    assert_eq!(s.values("m").len(), 11);
}

#[test]
fn update_takes_a_pipeline_and_array_filters() {
    let s = loaded();
    let out = s
        .run(
            "update",
            &[
                "m",
                "--filter",
                r#"{"v":{"$gte":9}}"#,
                "--update",
                r#"[{"$set":{"v":{"$multiply":["$v",10]}}}]"#,
            ],
        )
        .ok()
        .stdout();
    assert!(out.contains("matched 2 measurements, modified 2"), "{out}");
    assert_eq!(s.values("m"), [1, 2, 3, 4, 5, 6, 7, 8, 90, 100]);
    // `$[<identifier>]` with its array filter.
    s.run(
        "update",
        &[
            "m",
            "--filter",
            r#"{"v":1}"#,
            "--update",
            r#"{"$set":{"l":[1,5,9]}}"#,
        ],
    )
    .ok();
    s.run(
        "update",
        &[
            "m",
            "--filter",
            r#"{"v":1}"#,
            "--update",
            r#"{"$inc":{"l.$[big]":100}}"#,
            "--array-filters",
            r#"[{"big":{"$gte":5}}]"#,
        ],
    )
    .ok();
    let out = s
        .run("find", &["m", "--filter", r#"{"v":1}"#])
        .ok()
        .stdout();
    assert!(out.contains("[1,105,109]"), "{out}");
    // `let` variables in the filter's `$expr` and in the pipeline.
    let out = s
        .run(
            "update",
            &[
                "m",
                "--filter",
                r#"{"$expr":{"$eq":["$v","$$which"]}}"#,
                "--update",
                r#"[{"$set":{"v":{"$add":["$v","$$plus"]}}}]"#,
                "--let",
                r#"{"which":2,"plus":1000}"#,
            ],
        )
        .ok()
        .stdout();
    assert!(out.contains("matched 1 measurements, modified 1"), "{out}");
    assert_eq!(s.values("m"), [1, 3, 4, 5, 6, 7, 8, 90, 100, 1002]);
    // A stage an update does not allow: MongoDB's InvalidOptions.
    let err = s
        .run(
            "update",
            &["m", "--filter", "{}", "--update", r#"[{"$match":{}}]"#],
        )
        .failed()
        .stderr();
    assert!(err.contains("InvalidOptions"), "{err}");
}

#[test]
fn aggregate_takes_calendar_windows() {
    let s = Scratch::new();
    s.create("m");
    // Three days of January and one of February 2016 (Friday 1 Jan to Sunday 3 Jan).
    let lines: String = [
        ("2016-01-01T10:00:00Z", "a", 1),
        ("2016-01-02T10:00:00Z", "a", 2),
        ("2016-01-03T10:00:00Z", "a", 3),
        ("2016-02-01T10:00:00Z", "b", 4),
    ]
    .iter()
    .map(|(t, series, v)| {
        format!("{{\"ts\":{{\"$date\":\"{t}\"}},\"meta\":{{\"series\":\"{series}\"}},\"v\":{v}}}\n")
    })
    .collect();
    let file = s.file("cal.ndjson", lines.as_bytes());
    s.run("ingest", &["m", &file]).ok();
    let months = s
        .run(
            "aggregate",
            &[
                "m",
                "--window",
                "1mo",
                "--out",
                "n=count",
                "--out",
                "top=max:v",
                "--out",
                "first=first:v",
            ],
        )
        .ok()
        .json_lines();
    assert_eq!(months.len(), 2, "{months:?}");
    assert_eq!(months[0]["_id"]["ts"]["$date"], "2016-01-01T00:00:00.000Z");
    assert_eq!(
        (
            months[0]["n"].as_i64(),
            months[0]["top"].as_i64(),
            months[0]["first"].as_i64()
        ),
        (Some(3), Some(3), Some(1))
    );
    assert_eq!(months[1]["_id"]["ts"]["$date"], "2016-02-01T00:00:00.000Z");
    // Weeks start on Sunday: 1–2 January in one, Sunday 3 January in the next.
    let weeks = s
        .run("aggregate", &["m", "--window", "1w", "--by-series"])
        .ok()
        .json_lines();
    let got: Vec<(String, String, i64)> = weeks
        .iter()
        .map(|w| {
            (
                w["_id"]["meta"]["series"].as_str().unwrap_or("").to_owned(),
                w["_id"]["ts"]["$date"].as_str().unwrap_or("").to_owned(),
                w["count"].as_i64().unwrap_or(-1),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("a".to_owned(), "2015-12-27T00:00:00.000Z".to_owned(), 2),
            ("a".to_owned(), "2016-01-03T00:00:00.000Z".to_owned(), 1),
            ("b".to_owned(), "2016-01-31T00:00:00.000Z".to_owned(), 1),
        ]
    );
    let years = s
        .run("aggregate", &["m", "--window", "1y"])
        .ok()
        .json_lines();
    assert_eq!(years.len(), 1);
    assert_eq!(years[0]["count"].as_i64(), Some(4));
}

#[test]
fn aggregate_windows_in_a_time_zone() {
    let s = Scratch::new();
    s.create("m");
    // 2024-03-10 is 23 hours long in New York (clocks spring forward at 02:00).
    let lines: String = [
        "2024-03-10T04:30:00Z", // 23:30 EST on the 9th
        "2024-03-10T05:30:00Z", // 00:30 EST on the 10th
        "2024-03-11T03:30:00Z", // 23:30 EDT on the 10th
        "2024-03-11T04:30:00Z", // 00:30 EDT on the 11th
    ]
    .iter()
    .map(|t| format!("{{\"ts\":{{\"$date\":\"{t}\"}},\"meta\":{{\"series\":\"a\"}},\"v\":1}}\n"))
    .collect();
    let file = s.file("dst.ndjson", lines.as_bytes());
    s.run("ingest", &["m", &file]).ok();
    let days = |args: &[&str]| -> Vec<(String, i64)> {
        s.run("aggregate", args)
            .ok()
            .json_lines()
            .iter()
            .map(|d| {
                (
                    d["_id"]["ts"]["$date"].as_str().unwrap_or("").to_owned(),
                    d["count"].as_i64().unwrap_or(-1),
                )
            })
            .collect()
    };
    let local = [
        ("2024-03-09T05:00:00.000Z".to_owned(), 1),
        ("2024-03-10T05:00:00.000Z".to_owned(), 2),
        ("2024-03-11T04:00:00.000Z".to_owned(), 1),
    ];
    assert_eq!(
        days(&["m", "--window", "1d", "--timezone", "America/New_York"]),
        local
    );
    assert_eq!(
        days(&["m", "--window", "24h", "--timezone", "America/New_York"]),
        local
    );
    // In UTC the same measurements fall on the 10th and the 11th.
    let utc = days(&["m", "--window", "1d"]);
    assert_eq!(utc.len(), 2, "{utc:?}");
    let err = s
        .run(
            "aggregate",
            &["m", "--window", "1d", "--timezone", "Europe/Atlantis"],
        )
        .failed()
        .stderr();
    assert!(err.contains("unrecognized time zone"), "{err}");
}

#[test]
fn ingest_reads_json_arrays_and_stdin_without_a_file() {
    let s = Scratch::new();
    s.create("m");
    let array = format!(
        "[\n{}]\n",
        common::good_ndjson().trim_end().replace('\n', ",\n")
    );
    let file = s.file("array.json", array.as_bytes());
    let out = s.run("ingest", &["m", &file]).ok().stderr();
    assert!(
        out.contains("10 measurements inserted, 0 rejected"),
        "{out}"
    );
    assert_eq!(s.values("m"), (1..=10).collect::<Vec<i64>>());
    // mongoimport's flag is accepted; no file: stdin.
    let more = format!("[{}]", common::line("c", 90, 11).trim_end());
    let out = s
        .run_with_stdin("ingest", &["m", "--jsonArray"], Some(more.as_bytes()))
        .ok()
        .stderr();
    assert!(out.contains("1 measurements inserted"), "{out}");
    assert_eq!(s.values("m").len(), 11);
    // A bad element is reported with the line it starts on; the others are kept.
    let bad = s.file(
        "bad.json",
        b"[\n{\"x\": 1},\n{\"ts\": {\"$date\": \"2016-01-01T05:00:00Z\"}, \"v\": 12}\n]",
    );
    let err = s
        .run("ingest", &["m", &bad, "--unordered"])
        .failed()
        .stderr();
    assert!(err.contains("bad.json:2:"), "{err}");
    assert_eq!(s.values("m").len(), 12);
}

#[test]
fn find_and_aggregate_explain_the_plan_and_its_counters() {
    let s = loaded();
    let plan = s
        .run(
            "find",
            &["m", "--filter", r#"{"meta.series":"a"}"#, "--explain"],
        )
        .ok()
        .json_lines();
    assert_eq!(plan.len(), 1, "one document");
    let buckets = &plan[0]["queryPlanner"]["winningPlan"]["buckets"];
    assert_eq!(buckets["index"], "meta+time", "{}", plan[0]);
    assert!(plan[0].get("executionStats").is_none(), "{}", plan[0]);
    let found = s
        .run("find", &["m", "--filter", r#"{"meta.series":"a"}"#])
        .ok()
        .json_lines();
    let run = s
        .run(
            "find",
            &[
                "m",
                "--filter",
                r#"{"meta.series":"a"}"#,
                "--explain",
                "executionStats",
            ],
        )
        .ok()
        .json_lines();
    assert_eq!(
        int(&run[0]["executionStats"]["nReturned"]),
        Some(i64::try_from(found.len()).expect("len")),
        "{}",
        run[0]
    );
    let agg = s
        .run(
            "aggregate",
            &[
                "m",
                "--pipeline",
                r#"[{"$match":{"meta.series":"a"}},{"$sort":{"v":-1}},{"$limit":2}]"#,
                "--explain",
                "executionStats",
            ],
        )
        .ok()
        .json_lines();
    let stages = agg[0]["queryPlanner"]["stages"].as_array().expect("stages");
    assert_eq!(stages[0]["answeredBy"], "read filter", "{}", agg[0]);
    assert_eq!(stages[1]["answeredBy"], "stream", "{}", agg[0]);
    assert_eq!(int(&agg[0]["executionStats"]["nReturned"]), Some(2));
    // --explain of aggregate needs a pipeline.
    s.run("aggregate", &["m", "--window", "1h", "--explain"])
        .failed();
}

/// An integer of Extended JSON: a number, or `{"$numberLong": "..."}`.
fn int(v: &serde_json::Value) -> Option<i64> {
    v.as_i64()
        .or_else(|| v["$numberLong"].as_str().and_then(|s| s.parse().ok()))
}
