//! The figures `tscoll ingest` prints after an ingest (`--json` and the table), on a file of
//! `tscoll bench gen`, and that file's CSV form.

use crate::common::{Scratch, tscoll};

/// Generates the TSBS workload of 4 hosts x 0.01 days (87 rows each) into `name` in
/// `scratch`, as `format`; returns the path.
fn generate(scratch: &Scratch, name: &str, format: &str) -> String {
    let path = scratch.path().join(name);
    let path = path.to_str().expect("utf-8").to_owned();
    tscoll(
        &[
            "bench", "gen", "--hosts", "4", "--days", "0.01", "--format", format, "--out", &path,
        ],
        None,
    )
    .ok();
    path
}

/// The `cpu` collection of `bench ingest`.
fn create_cpu(scratch: &Scratch) {
    scratch
        .run(
            "create",
            &[
                "cpu",
                "--time-field",
                "time",
                "--meta-field",
                "tags",
                "--granularity",
                "seconds",
            ],
        )
        .ok();
}

#[test]
fn json_has_the_figures_of_bench_ingest_and_the_row_count() {
    let scratch = Scratch::new();
    let file = generate(&scratch, "cpu.ndjson", "ndjson");
    let rows = std::fs::read_to_string(&file)
        .expect("read")
        .lines()
        .count() as u64;
    assert_eq!(rows, 4 * 87);
    create_cpu(&scratch);
    let run = scratch
        .run("ingest", &["cpu", &file, "--json", "--durability", "flush"])
        .ok();
    let lines = run.json_lines();
    assert_eq!(lines.len(), 1, "{}", run.stdout());
    let j = &lines[0];
    for key in [
        "measurements",
        "seconds",
        "measurements_per_s",
        "field_values_per_s",
        "disk_bytes",
        "bytes_per_measurement",
        "write_amplification",
        "peak_rss_bytes",
        "durability",
        "threads",
        "insert_many_seconds",
        "close_seconds",
        "rejected",
        "bucket_catalog",
    ] {
        assert!(j.get(key).is_some(), "{key} in {j}");
    }
    assert_eq!(j["measurements"].as_u64(), Some(rows), "{j}");
    assert_eq!(j["threads"], 2);
    assert_eq!(j["durability"], "flush");
    assert_eq!(j["rejected"], 0);
    let rate = j["measurements_per_s"].as_f64().expect("rate");
    let field_rate = j["field_values_per_s"].as_f64().expect("field rate");
    assert!(rate > 0.0, "{j}");
    // Every line has 10 fields besides the time and the tags.
    assert!((field_rate / rate - 10.0).abs() < 1e-6, "{j}");
    let seconds = j["seconds"].as_f64().expect("seconds");
    let inserting = j["insert_many_seconds"].as_f64().expect("insert seconds");
    assert!(inserting > 0.0 && inserting <= seconds, "{j}");
    let disk = j["disk_bytes"].as_u64().expect("disk bytes");
    assert!(disk > 0, "{j}");
    let per = j["bytes_per_measurement"]
        .as_f64()
        .expect("bytes/measurement");
    assert!((per * rows as f64 - disk as f64).abs() < 1.0, "{j}");
    assert!(
        j["write_amplification"].is_null()
            || j["write_amplification"].as_f64().is_some_and(|w| w > 0.0),
        "{j}"
    );
    if cfg!(target_os = "linux") {
        assert!(j["peak_rss_bytes"].as_u64().is_some_and(|b| b > 0), "{j}");
    }
    assert_eq!(j["bucket_catalog"]["numMeasurementsCommitted"], rows, "{j}");
    // --json prints the JSON object alone: no summary line either.
    assert!(run.stderr().is_empty(), "{}", run.stderr());
    assert_eq!(scratch.find_all("cpu").len() as u64, rows);
}

#[test]
fn the_table_goes_to_stderr_and_stdout_keeps_stats_and_acks() {
    let scratch = Scratch::new();
    let file = generate(&scratch, "cpu.ndjson", "ndjson");
    create_cpu(&scratch);
    let run = scratch
        .run("ingest", &["cpu", &file, "--stats", "--verbose"])
        .ok();
    let err = run.stderr();
    for label in [
        "348 measurements inserted, 0 rejected",
        "measurements         348",
        "in insert_many",
        "measurements/s",
        "field values/s",
        "bytes/measurement",
        "write amplification",
        "peak RSS",
        "durability           buffered",
        "threads              2",
    ] {
        assert!(err.contains(label), "{label:?} in\n{err}");
    }
    let lines = run.json_lines();
    assert_eq!(lines.len(), 1, "{}", run.stdout());
    assert!(lines[0]["bucketCatalog"].is_object(), "{}", run.stdout());

    let both = scratch
        .run("ingest", &["cpu", &file, "--json", "--report-acks"])
        .failed();
    assert!(
        both.stderr().contains("cannot be used with"),
        "{}",
        both.stderr()
    );
}

#[test]
fn gen_csv_holds_the_rows_of_the_ndjson_file() {
    let scratch = Scratch::new();
    let ndjson = generate(&scratch, "cpu.ndjson", "ndjson");
    let csv = generate(&scratch, "cpu.csv", "csv");
    let csv = std::fs::read_to_string(csv).expect("read csv");
    let ndjson = std::fs::read_to_string(ndjson).expect("read ndjson");
    let mut rows = csv.lines();
    let header: Vec<&str> = rows.next().expect("header").split(',').collect();
    assert_eq!(header.len(), 21);
    assert_eq!(header[..3], ["time", "hostname", "region"]);
    assert_eq!(header[11], "usage_user");
    assert_eq!(header[20], "usage_guest_nice");
    let rows: Vec<&str> = rows.collect();
    assert_eq!(rows.len(), ndjson.lines().count());
    for (row, line) in rows.iter().zip(ndjson.lines()) {
        let cells: Vec<&str> = row.split(',').collect();
        let json: serde_json::Value = serde_json::from_str(line).expect("JSON line");
        assert_eq!(json["time"]["$date"].as_str(), Some(cells[0]));
        assert_eq!(json["tags"]["hostname"].as_str(), Some(cells[1]));
        assert_eq!(json["usage_user"].as_i64(), cells[11].parse().ok());
    }
}

#[test]
fn by_default_one_line_per_input_and_one_for_the_disk() {
    let scratch = Scratch::new();
    let file = generate(&scratch, "cpu.ndjson", "ndjson");
    create_cpu(&scratch);
    let err = scratch.run("ingest", &["cpu", &file]).ok().stderr();
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].contains("348 measurements inserted, 0 rejected"),
        "{err}"
    );
    assert!(lines[1].contains("bytes per stored measurement"), "{err}");
    assert!(!err.contains("peak RSS"), "{err}");
    // Nothing stored: no figures per measurement.
    let empty = scratch.file("empty.ndjson", b"");
    let err = scratch.run("ingest", &["cpu", &empty]).ok().stderr();
    assert!(!err.contains("per stored measurement"), "{err}");
}

#[test]
fn bytes_per_measurement_divide_by_what_the_database_holds() {
    // A second ingest into a database that already holds a first one: the disk bytes are the
    // whole database's, so they are divided by its measurements, not by this run's.
    let scratch = Scratch::new();
    let file = generate(&scratch, "cpu.ndjson", "ndjson");
    create_cpu(&scratch);
    scratch.create("other");
    let other = scratch.file("other.ndjson", crate::common::good_ndjson().as_bytes());
    scratch.run("ingest", &["other", &other]).ok();
    scratch.run("ingest", &["cpu", &file]).ok();
    let run = scratch.run("ingest", &["cpu", &file, "--json"]).ok();
    let j = &run.json_lines()[0];
    let held = 2 * 4 * 87 + 10;
    assert_eq!(j["measurements"], 4 * 87, "{j}");
    assert_eq!(j["stored_measurements"], held, "{j}");
    let disk = j["disk_bytes"].as_f64().expect("disk bytes");
    let per = j["bytes_per_measurement"]
        .as_f64()
        .expect("per measurement");
    assert!((per * f64::from(held) - disk).abs() < 1.0, "{j}");
    // The summary line says what it divides.
    let err = scratch.run("ingest", &["cpu", &file]).ok().stderr();
    let last = err.lines().last().expect("summary");
    assert!(
        last.contains(&format!("{} measurements", held + 4 * 87)),
        "{err}"
    );
    assert!(last.contains("bytes per stored measurement"), "{err}");
}
