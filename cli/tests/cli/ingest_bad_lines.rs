//! Ingesting NDJSON with a malformed JSON line, a line without the time field and a line with
//! a string time: every bad line is reported as `FILE:LINE: reason`; `--unordered` stores
//! every good line, `--ordered` (the default) stops at the first bad one.

use crate::common::{self, Scratch, line};

/// Lines 1..=9, `v` = the line number; lines 3, 5 and 7 are bad.
fn mixed_input() -> String {
    let mut text = String::new();
    text += &line("a", 1, 1);
    text += &line("b", 2, 2);
    text += "{\"ts\":{\"$date\":\"2016-01-01T00:03:00Z\"},\"meta\":{\"series\":\"a\"},\"v\":\n";
    text += &line("a", 4, 4);
    text += "{\"meta\":{\"series\":\"a\"},\"v\":5}\n";
    text += &line("b", 6, 6);
    text += "{\"ts\":\"2016-01-01T00:07:00Z\",\"meta\":{\"series\":\"b\"},\"v\":7}\n";
    text += &line("a", 8, 8);
    text += &line("b", 9, 9);
    text
}

#[test]
fn unordered_stores_every_good_line_and_reports_every_bad_one() {
    let s = Scratch::new();
    s.create("m");
    let file = s.file("mixed.ndjson", mixed_input().as_bytes());
    let run = s
        .run("ingest", &["m", &file, "--unordered", "--batch-size", "2"])
        .failed();
    let err = run.stderr();
    assert!(err.contains(&format!("{file}:3: malformed JSON")), "{err}");
    assert!(err.contains(&format!("{file}:5: ")), "{err}");
    assert!(err.contains(&format!("{file}:7: ")), "{err}");
    for good in [1, 2, 4, 6, 8, 9] {
        assert!(
            !err.contains(&format!("{file}:{good}:")),
            "line {good} reported: {err}"
        );
    }
    assert!(err.contains("6 measurements inserted, 3 rejected"), "{err}");
    assert_eq!(s.values("m"), [1, 2, 4, 6, 8, 9]);
}

/// Lines are parsed on one thread and inserted on another; what each reports still comes in
/// input order: bad lines the parser rejects (3) and those the engine rejects (5, 7).
#[test]
fn reports_come_in_input_order_across_batches() {
    let s = Scratch::new();
    s.create("m");
    let file = s.file("mixed.ndjson", mixed_input().as_bytes());
    for batch in ["1", "2", "3", "1000"] {
        let run = s
            .run(
                "ingest",
                &["m", &file, "--unordered", "--batch-size", batch],
            )
            .failed();
        let err = run.stderr();
        let at = |n: u32| {
            err.find(&format!("{file}:{n}: "))
                .unwrap_or_else(|| panic!("line {n} not reported: {err}"))
        };
        assert!(at(3) < at(5) && at(5) < at(7), "batch {batch}: {err}");
    }
}

#[test]
fn ordered_stops_at_a_malformed_line_keeping_the_lines_before() {
    let s = Scratch::new();
    s.create("m");
    let file = s.file("mixed.ndjson", mixed_input().as_bytes());
    let run = s
        .run("ingest", &["m", &file, "--batch-size", "1000"])
        .failed();
    let err = run.stderr();
    assert!(err.contains(&format!("{file}:3: malformed JSON")), "{err}");
    assert!(!err.contains(&format!("{file}:5:")), "{err}");
    assert!(err.contains("2 measurements inserted, 1 rejected"), "{err}");
    assert_eq!(s.values("m"), [1, 2]);
}

#[test]
fn ordered_stops_at_a_measurement_the_engine_rejects() {
    let s = Scratch::new();
    s.create("m");
    // Drop the malformed line: the first bad line is now line 4 (no time field).
    let text: String = mixed_input()
        .lines()
        .enumerate()
        .filter(|(i, _)| *i != 2)
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    let file = s.file("no_time.ndjson", text.as_bytes());
    let run = s
        .run("ingest", &["m", &file, "--ordered", "--batch-size", "3"])
        .failed();
    let err = run.stderr();
    assert!(err.contains(&format!("{file}:4: ")), "{err}");
    assert!(!err.contains(&format!("{file}:6:")), "{err}");
    assert_eq!(s.values("m"), [1, 2, 4]);
}

#[test]
fn a_string_time_is_rejected_with_its_line() {
    let s = Scratch::new();
    s.create("m");
    let text = format!(
        "{}{}",
        line("a", 1, 1),
        "{\"ts\":\"2016-01-01\",\"meta\":{\"series\":\"a\"},\"v\":2}\n"
    );
    let file = s.file("string_time.ndjson", text.as_bytes());
    let run = s.run("ingest", &["m", &file, "--unordered"]).failed();
    let err = run.stderr();
    let prefix = format!("{file}:");
    let reported: Vec<&str> = err
        .lines()
        .filter(|l| {
            l.strip_prefix(&prefix)
                .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
        })
        .collect();
    assert_eq!(reported.len(), 1, "{err}");
    assert!(reported[0].starts_with(&format!("{file}:2: ")), "{err}");
    assert_eq!(s.values("m"), [1]);
}

#[test]
fn clean_input_succeeds_with_a_summary() {
    let s = Scratch::new();
    s.create("m");
    let file = s.file("good.ndjson", common::good_ndjson().as_bytes());
    let run = s.run("ingest", &["m", &file, "--durability", "sync"]).ok();
    assert!(
        run.stderr()
            .contains("10 measurements inserted, 0 rejected"),
        "{}",
        run.stderr()
    );
    assert!(run.stderr().contains("measurements/s"), "{}", run.stderr());
    assert_eq!(s.values("m"), (1..=10).collect::<Vec<_>>());
}

#[test]
fn ingest_into_a_missing_collection_fails_clearly() {
    let s = Scratch::new();
    s.create("m");
    let file = s.file("good.ndjson", common::good_ndjson().as_bytes());
    let run = s.run("ingest", &["nope", &file]).failed();
    assert!(run.stderr().contains("nope"), "{}", run.stderr());
}
