//! `list`, `drop`, `compact` and `stats` of every collection, end to end.

use crate::common::{self, Scratch, good_ndjson};

fn two_collections() -> Scratch {
    let s = Scratch::new();
    s.create("m");
    s.run(
        "create",
        &["n", "--time-field", "ts", "--granularity", "hours"],
    )
    .ok();
    let file = s.file("good.ndjson", good_ndjson().as_bytes());
    s.run("ingest", &["m", &file]).ok();
    s
}

#[test]
fn list_shows_every_collection_with_its_options_and_sizes() {
    let s = two_collections();
    let lines = s.run("list", &[]).ok().stdout();
    let lines: Vec<&str> = lines.lines().collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].starts_with("m: timeField ts, metaField meta"),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains("10 measurements"), "{}", lines[0]);
    assert!(
        lines[1].starts_with("n: timeField ts, metaField (none), granularity hours"),
        "{}",
        lines[1]
    );
    assert!(
        lines[1].contains("0 measurements in 0 buckets"),
        "{}",
        lines[1]
    );
    let json = s.run("list", &["--json"]).ok().json_lines();
    assert_eq!(json.len(), 2);
    assert_eq!(json[0]["name"], "m");
    assert_eq!(json[0]["options"]["timeseries"]["metaField"], "meta");
    assert_eq!(json[0]["measurements"].as_i64(), Some(10));
    assert!(json[0]["buckets"].as_i64().unwrap_or(0) >= 2);
    assert_eq!(json[1]["options"]["timeseries"]["granularity"], "hours");
}

#[test]
fn stats_without_a_collection_covers_every_one() {
    let s = two_collections();
    let json = s.run("stats", &["--json"]).ok().json_lines();
    let names: Vec<&str> = json
        .iter()
        .map(|d| d["collection"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(names, ["m", "n"]);
    let table = s.run("stats", &[]).ok().stdout();
    let tables: Vec<Vec<&str>> = table
        .lines()
        .filter(|l| l.starts_with("collection "))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        tables,
        [["collection", "m"], ["collection", "n"]],
        "{table}"
    );
}

#[test]
fn drop_removes_a_collection_and_refuses_an_unknown_one() {
    let s = two_collections();
    let out = s.run("drop", &["m"]).ok().stdout();
    assert!(out.contains("dropped collection 'm'"), "{out}");
    let json = s.run("list", &["--json"]).ok().json_lines();
    assert_eq!(json.len(), 1);
    assert_eq!(json[0]["name"], "n");
    let err = s.run("drop", &["m"]).failed().stderr();
    assert!(err.contains("no collection named 'm'"), "{err}");
    let err = s.run("find", &["m"]).failed().stderr();
    assert!(err.contains("'m'"), "{err}");
}

#[test]
fn compact_keeps_every_measurement() {
    let s = two_collections();
    let out = s.run("compact", &[]).ok().stdout();
    assert!(
        out.contains("on disk before") && out.contains("after"),
        "{out}"
    );
    let out = s.run("compact", &["m"]).ok().stdout();
    assert!(out.contains("collection 'm'"), "{out}");
    assert_eq!(s.values("m"), (1..=10).collect::<Vec<i64>>());
    let err = s.run("compact", &["zz"]).failed().stderr();
    assert!(err.contains("'zz'"), "{err}");
}

#[test]
fn index_drop_says_what_it_dropped() {
    let s = two_collections();
    let db = s.db();
    let run = |args: &[&str]| common::tscoll(args, None);
    run(&["index", "create", "--db", &db, "m", r#"{"v": 1}"#]).ok();
    run(&[
        "index",
        "create",
        "--db",
        &db,
        "m",
        r#"{"v": -1}"#,
        "--name",
        "down",
    ])
    .ok();
    let out = run(&["index", "drop", "--db", &db, "m", "down"])
        .ok()
        .stdout();
    assert!(out.contains("dropped index 'down' of 'm'"), "{out}");
    let out = run(&["index", "drop", "--db", &db, "m", "--key", r#"{"v": 1}"#])
        .ok()
        .stdout();
    assert!(out.contains("dropped the index with key"), "{out}");
    let listed = run(&["index", "list", "--db", &db, "m"]).ok().json_lines();
    assert!(
        listed
            .iter()
            .all(|i| i["name"] != "down" && i["name"] != "v_1"),
        "{listed:?}"
    );
}

#[test]
fn stats_shows_the_process_counters_only_when_asked() {
    let s = two_collections();
    let table = s.run("stats", &["m"]).ok().stdout();
    assert!(table.contains("measurements per bucket"), "{table}");
    assert!(!table.contains("numBucketInserts"), "{table}");
    let verbose = s.run("stats", &["m", "--verbose"]).ok().stdout();
    assert!(verbose.contains("numBucketInserts"), "{verbose}");
    let json = s.run("stats", &["m", "--json"]).ok().json_lines();
    assert!(json[0].get("numBucketInserts").is_some(), "{json:?}");
}

#[test]
fn typed_csv_on_stdin() {
    let s = Scratch::new();
    s.create("m");
    let csv = "ts,series,ok,v\n2016-01-01T00:00:00Z,a,True,1\n2016-01-01T00:01:00Z,a,false,2\n";
    // A --csv-* option makes stdin CSV.
    s.run_with_stdin(
        "ingest",
        &[
            "m",
            "--csv-meta-columns",
            "series",
            "--csv-types",
            "ok=boolean",
        ],
        Some(csv.as_bytes()),
    )
    .ok();
    let docs = s.find_all("m");
    let oks: Vec<bool> = docs
        .iter()
        .map(|d| d["ok"].as_bool().expect("a boolean"))
        .collect();
    assert_eq!(oks, [true, false]);
    assert_eq!(docs[0]["meta"]["series"], "a");
    let err = s
        .run_with_stdin(
            "ingest",
            &["m", "--csv-types", "nope=money"],
            Some(csv.as_bytes()),
        )
        .failed()
        .stderr();
    assert!(err.contains("money"), "{err}");
}
