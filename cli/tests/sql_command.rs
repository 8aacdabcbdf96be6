//! `tscoll sql` (feature `sql`): SQL over the collections of a database, printed as a table,
//! NDJSON or CSV; `INSERT INTO` a collection; a statement DataFusion refuses is an error with
//! its message.
#![cfg(feature = "sql")]

mod common;

use common::{Scratch, good_ndjson};

/// A database whose collection `w` holds `good_ndjson()`.
fn good_db() -> Scratch {
    let s = Scratch::new();
    s.create("w");
    let input = s.file("in.ndjson", good_ndjson().as_bytes());
    s.run("ingest", &["w", &input]).ok();
    s
}

#[test]
fn sql_groups_filters_and_prints_in_every_format() {
    let s = good_db();
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

/// Runs `tscoll sql --db DB args...` with its stdout counted, not kept: (lines, bytes) of
/// stdout and the child's peak RSS in bytes (`--report-peak-rss`: its `VmHWM`).
fn sql_peak_rss(s: &Scratch, args: &[&str]) -> (usize, u64, u64) {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let db = s.db();
    let mut child = Command::new(env!("CARGO_BIN_EXE_tscoll"))
        .arg("--report-peak-rss")
        .args(["sql", "--db", &db])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tscoll");
    let mut stdout = child.stdout.take().expect("stdout");
    let counter = std::thread::spawn(move || {
        let (mut lines, mut bytes) = (0, 0u64);
        let mut buf = vec![0; 1 << 16];
        loop {
            let n = stdout.read(&mut buf).expect("read stdout");
            if n == 0 {
                return (lines, bytes);
            }
            lines += buf[..n].iter().filter(|&&b| b == b'\n').count();
            bytes += n as u64;
        }
    });
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("read stderr");
    let status = child.wait().expect("wait");
    assert!(status.success(), "tscoll sql {args:?} failed: {stderr}");
    let (lines, bytes) = counter.join().expect("stdout reader");
    let peak: u64 = stderr
        .lines()
        .find_map(|l| l.strip_prefix("peak RSS bytes: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak RSS line in: {stderr}"));
    (lines, bytes, peak)
}

/// Ingests `n` generated measurements into `w`: measurement `i` at 2016-01-01 plus `i` ×
/// `step_ms`, in series `h{i % 10}`, with the fields `fields(i)` (`"name":value`, …).
fn ingest_generated(s: &Scratch, n: usize, step_ms: u64, fields: impl Fn(usize) -> String) {
    let input: String = (0..n)
        .map(|i| {
            format!(
                "{{\"ts\":{{\"$date\":{{\"$numberLong\":\"{}\"}}}},\"meta\":{{\"h\":\"h{}\"}},{}}}\n",
                1_451_606_400_000_u64 + i as u64 * step_ms,
                i % 10,
                fields(i)
            )
        })
        .collect();
    let input = s.file("in.ndjson", input.as_bytes());
    s.run("ingest", &["w", &input, "--batch-size", "1000"]).ok();
}

#[test]
fn sql_streams_a_large_result_in_bounded_memory() {
    const ROWS: usize = 100_000;
    const PAD: usize = 2000;
    // The goal for `tscoll sql` over a collection of any size.
    const BOUND: u64 = 256 << 20;
    let s = Scratch::new();
    s.create("w");
    ingest_generated(&s, ROWS, 1000, |i| format!("\"v\":{i}"));
    // About 2 KB a row, 200 MB in all: collected before printing, the result took more
    // than twice that.
    let q = format!("SELECT ts, v, repeat('x', {PAD}) AS pad FROM w");
    let (lines, bytes, peak) = sql_peak_rss(&s, &["--format", "ndjson", &q]);
    assert_eq!(lines, ROWS);
    assert!(bytes > (ROWS * PAD) as u64, "{bytes} bytes");
    assert!(peak < BOUND, "peak RSS {} MiB", peak >> 20);
}

#[test]
fn sql_counts_a_collection_of_many_fields_in_bounded_memory() {
    const FIELDS: usize = 10_000;
    let s = Scratch::new();
    s.create("w");
    // One field of its own a measurement, each measurement in a bucket of its own.
    ingest_generated(&s, FIELDS, 400_000, |i| format!("\"f{i}\":{i}"));
    // Each batch reserved room for 9216 values of every field: 500 MiB.
    let (lines, _, peak) = sql_peak_rss(&s, &["--format", "csv", "SELECT count(*) AS n FROM w"]);
    assert_eq!(lines, 2);
    assert!(peak < 160 << 20, "peak RSS {} MiB", peak >> 20);
}

/// The `spill_count` figures `EXPLAIN ANALYZE` prints for the operators named `operator`.
fn spill_counts(plan: &str, operator: &str) -> Vec<u64> {
    plan.lines()
        .filter(|l| l.trim_start().starts_with(operator))
        .filter_map(|l| l.split("spill_count=").nth(1))
        .map(|n| {
            n.split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|n| n.parse().ok())
                .expect("a spill count")
        })
        .collect()
}

#[test]
fn sql_sorts_and_groups_more_than_its_memory_limit_by_spilling() {
    const ROWS: usize = 100_000;
    const PAD: usize = 400;
    const LIMIT: &str = "32";
    let s = Scratch::new();
    s.create("w");
    // v: a permutation of 0..ROWS (7919 is prime to ROWS).
    ingest_generated(&s, ROWS, 1000, |i| format!("\"v\":{}", i * 7919 % ROWS));
    // A sort of 100 000 rows of some 400 bytes (40 MB) with 24 MiB of memory.
    let sort = format!("SELECT v, repeat('x', {PAD}) AS pad FROM w ORDER BY v DESC");
    let out = s
        .run("sql", &["--memory-limit", LIMIT, "--format", "csv", &sort])
        .ok()
        .stdout();
    let mut rows = out.lines();
    assert_eq!(rows.next(), Some("v,pad"));
    let values: Vec<usize> = rows
        .map(|r| {
            let (v, pad) = r.split_once(',').expect("two columns");
            assert_eq!(pad.len(), PAD, "{r}");
            v.parse().expect("v")
        })
        .collect();
    assert_eq!(values, (0..ROWS).rev().collect::<Vec<_>>());
    // A grouping by 50 000 keys of some 400 bytes (20 MB): two rows a group.
    let group = format!(
        "SELECT count(*) AS groups, min(n) AS least, max(n) AS most FROM \
         (SELECT concat(repeat('k', {PAD}), CAST(v % 50000 AS VARCHAR)) AS k, count(*) AS n \
         FROM w GROUP BY 1)"
    );
    let rows = s
        .run(
            "sql",
            &["--memory-limit", LIMIT, "--format", "ndjson", &group],
        )
        .ok()
        .json_lines();
    assert_eq!(
        rows,
        [serde_json::json!({ "groups": 50_000, "least": 2, "most": 2 })]
    );
    // Both spilled: the sorts' and the final aggregates' spill counts are not all 0.
    for (query, operator) in [(&sort, "SortExec"), (&group, "AggregateExec: mode=Final")] {
        let plan = s
            .run(
                "sql",
                &[
                    "--memory-limit",
                    LIMIT,
                    "--format",
                    "csv",
                    &format!("EXPLAIN ANALYZE {query}"),
                ],
            )
            .ok()
            .stdout();
        let counts = spill_counts(&plan, operator);
        assert!(
            !counts.is_empty() && counts.iter().any(|&n| n > 0),
            "{operator}: spill counts {counts:?} in {plan}"
        );
    }
}

#[test]
fn sql_prints_a_long_table_in_pages_and_an_empty_one_with_its_header() {
    let s = Scratch::new();
    s.create("w");
    let out = s
        .run("sql", &["SELECT value FROM generate_series(1, 2500)"])
        .ok()
        .stdout();
    // Pages of 1000 rows, each a table with its header.
    assert_eq!(out.matches("| value |").count(), 3, "{out}");
    let values: Vec<u32> = out
        .lines()
        .filter_map(|l| l.trim_matches(|c| c == '|' || c == ' ').parse().ok())
        .collect();
    assert_eq!(values, (1..=2500).collect::<Vec<_>>());
    let empty = s
        .run(
            "sql",
            &["SELECT value FROM generate_series(1, 3) WHERE value > 5"],
        )
        .ok()
        .stdout();
    assert!(empty.contains("| value |"), "{empty}");
    let csv = s
        .run(
            "sql",
            &[
                "--format",
                "csv",
                "SELECT value AS n FROM generate_series(1, 3) WHERE value > 5",
            ],
        )
        .ok()
        .stdout();
    assert_eq!(csv, "n\n");
}

#[test]
fn sql_csv_flattens_struct_columns_to_dotted_names() {
    let s = good_db();
    let csv = s
        .run(
            "sql",
            &[
                "--format",
                "csv",
                "SELECT ts, meta, v FROM w ORDER BY v LIMIT 2",
            ],
        )
        .ok()
        .stdout();
    assert_eq!(
        csv,
        "ts,meta.series,v\n\
         2016-01-01T00:01:00Z,b,1\n\
         2016-01-01T00:02:00Z,a,2\n"
    );
}

#[test]
fn sql_reads_a_struct_field_by_name_and_by_subscript() {
    let s = good_db();
    for field in ["meta.series", "meta['series']", "get_field(meta, 'series')"] {
        let q =
            format!("SELECT {field} AS s, sum(v) AS total FROM w WHERE {field} = 'a' GROUP BY 1");
        let rows = s.run("sql", &["--format", "ndjson", &q]).ok().json_lines();
        assert_eq!(rows, [serde_json::json!({ "s": "a", "total": 30 })], "{q}");
    }
}

#[test]
fn sql_fails_on_a_value_it_cannot_print() {
    let s = Scratch::new();
    s.create("w");
    let far = "{\"ts\":{\"$date\":\"2016-01-01T00:02:00Z\"},\"meta\":{\"series\":\"a\"},\
               \"d\":{\"$date\":{\"$numberLong\":\"9000000000000000000\"}}}\n";
    let near = "{\"ts\":{\"$date\":\"2016-01-01T00:01:00Z\"},\"meta\":{\"series\":\"a\"},\
                \"d\":{\"$date\":\"2020-01-01T00:00:00Z\"}}\n";
    let input = s.file("in.ndjson", format!("{near}{far}").as_bytes());
    s.run("ingest", &["w", &input]).ok();
    for format in ["ndjson", "csv", "table"] {
        let run = s
            .run("sql", &["--format", format, "SELECT d FROM w ORDER BY ts"])
            .failed();
        assert!(
            !run.stdout().contains("ERROR"),
            "{format}: {}",
            run.stdout()
        );
        let err = run.stderr();
        assert!(
            err.contains("row 2") && err.contains("'d'"),
            "{format}: {err}"
        );
    }
    // An execution error is an error too.
    let err = s
        .run(
            "sql",
            &[
                "--format",
                "ndjson",
                "SELECT CAST(meta.series AS INT) FROM w",
            ],
        )
        .failed()
        .stderr();
    assert!(err.contains("Cast"), "{err}");
}

#[test]
fn sql_has_the_string_math_and_regular_expression_functions() {
    let s = good_db();
    let q = "SELECT round(avg(v) / 4, 1) AS r, abs(min(v) - 3) AS a, lower('AbC') AS l, \
             median(v) AS m, regexp_like(max(meta.series), '^b$') AS re, \
             substr('hostname', 1, 4) AS sub, sqrt(16) AS q FROM w";
    let rows = s.run("sql", &["--format", "ndjson", q]).ok().json_lines();
    assert_eq!(
        rows,
        [
            serde_json::json!({ "r": 1.4, "a": 2, "l": "abc", "m": 5.5, "re": true,
                             "sub": "host", "q": 4.0 })
        ]
    );
    // The cryptographic functions are not compiled in.
    let err = s.run("sql", &["SELECT md5('a')"]).failed().stderr();
    assert!(err.contains("md5"), "{err}");
}

#[test]
fn sql_inserts_rows_and_prints_their_count() {
    let s = good_db();
    let insert = "INSERT INTO w (ts, meta, v) VALUES \
                  ('2016-01-02T00:00:00Z', named_struct('series', 'c'), 11), \
                  ('2016-01-02T00:01:00Z', named_struct('series', 'c'), 12)";
    let rows = s
        .run("sql", &["--format", "ndjson", insert])
        .ok()
        .json_lines();
    assert_eq!(rows, [serde_json::json!({ "count": 2 })]);
    let q = "SELECT meta.series AS s, sum(v) AS total FROM w WHERE meta.series = 'c' GROUP BY 1";
    let rows = s.run("sql", &["--format", "ndjson", q]).ok().json_lines();
    assert_eq!(rows, [serde_json::json!({ "s": "c", "total": 23 })]);
    let err = s
        .run("sql", &["INSERT OVERWRITE w SELECT * FROM w"])
        .failed()
        .stderr();
    assert!(err.contains("only appended"), "{err}");
}
