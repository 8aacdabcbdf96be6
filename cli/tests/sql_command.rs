//! `tscoll sql` (feature `sql`): SQL over the collections of a database, printed as a table,
//! NDJSON or CSV; a statement DataFusion refuses is an error with its message.
#![cfg(feature = "sql")]

mod common;

use common::{Scratch, good_ndjson};

#[test]
fn sql_groups_filters_and_prints_in_every_format() {
    let s = Scratch::new();
    s.create("w");
    let input = s.file("in.ndjson", good_ndjson().as_bytes());
    s.run("ingest", &["w", &input]).ok();
    // Series a holds v = 2, 4, 6, 8, 10; series b 1, 3, 5, 7, 9.
    let q = "SELECT meta.series AS s, count(*) AS n, sum(v) AS total FROM w \
             WHERE v > 2 GROUP BY meta.series ORDER BY s";
    let rows = s.run("sql", &["--format", "ndjson", q]).ok().json_lines();
    assert_eq!(
        rows,
        [
            serde_json::json!({ "s": "a", "n": 4, "total": 28 }),
            serde_json::json!({ "s": "b", "n": 4, "total": 24 }),
        ]
    );
    let csv = s.run("sql", &["--format", "csv", q]).ok().stdout();
    assert_eq!(csv, "s,n,total\na,4,28\nb,4,24\n");
    // Answered by the collection from its windowed partial aggregates, timed over 3 runs.
    let hourly = "SELECT meta.series AS s, date_bin(INTERVAL '1 hour', ts) AS h, count(*) AS n, \
                  sum(v) AS total FROM w GROUP BY 1, 2 ORDER BY 1, 2";
    let out = s
        .run("sql", &["--format", "csv", "--repeat", "3", hourly])
        .ok();
    assert_eq!(out.stdout().lines().count(), 1 + 2, "{}", out.stdout());
    assert!(out.stdout().contains(",5,30\n"), "{}", out.stdout());
    assert!(out.stderr().contains("3 runs: median "), "{}", out.stderr());
    let table = s.run("sql", &[q]).ok().stdout();
    assert!(table.contains("| a | 4 | 28    |"), "{table}");
    let err = s.run("sql", &["SELECT nope FROM w"]).failed().stderr();
    assert!(err.contains("nope"), "{err}");
}
