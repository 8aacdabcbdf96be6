//! `tscoll bench ingest` (the TSBS cpu-only ingest) and `tscoll bench gen` (the same
//! workload as NDJSON), at a tiny scale.

use serde_json::Value;

use crate::common::{Scratch, tscoll};

/// Rows per host of `--days 0.01`: the 10 s instants of 14.4 minutes, 0 s to 860 s.
const ROWS_PER_HOST_0_01_DAYS: u64 = 87;

#[test]
fn json_has_every_figure_and_the_exact_count() {
    let run = tscoll(
        &[
            "bench",
            "ingest",
            "--hosts",
            "5",
            "--days",
            "0.01",
            "--threads",
            "2",
            "--json",
        ],
        None,
    )
    .ok();
    let lines = run.json_lines();
    assert_eq!(lines.len(), 1, "{}", run.stdout());
    let j = &lines[0];
    let mut keys: Vec<&str> = j
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    let mut expected = vec![
        "measurements",
        "measurements_per_s",
        "field_values_per_s",
        "disk_bytes",
        "bytes_per_measurement",
        "table_bytes",
        "table_bytes_per_measurement",
        "write_amplification",
        "peak_rss_bytes",
        "durability",
        "threads",
        "cpu_seconds",
        "measurements_per_cpu_s",
        "seconds",
        "hosts",
        "days",
        "batch_size",
        "catalog_memory_bytes",
        "stored_bytes",
        "stored_measurements",
        "rollup_bytes",
        "bucket_catalog",
    ];
    expected.sort_unstable();
    assert_eq!(keys, expected);

    let measurements = j["measurements"].as_u64().expect("measurements");
    assert_eq!(measurements, 5 * ROWS_PER_HOST_0_01_DAYS);
    assert_eq!(j["threads"], 2);
    assert_eq!(j["hosts"], 5);
    assert_eq!(j["days"], 0.01);
    assert_eq!(j["batch_size"], 5000);
    assert_eq!(j["durability"], "buffered");
    assert!(j["stored_bytes"].as_u64().is_some_and(|b| b > 0), "{j}");
    assert_eq!(j["rollup_bytes"], 0, "no rollups declared");
    assert!(j["disk_bytes"].as_u64().is_some_and(|b| b > 0), "{j}");
    assert!(j["seconds"].as_f64().is_some_and(|s| s > 0.0), "{j}");
    let rate = j["measurements_per_s"].as_f64().expect("rate");
    let field_rate = j["field_values_per_s"].as_f64().expect("field rate");
    assert!(rate > 0.0);
    assert!(
        (field_rate / rate - 10.0).abs() < 1e-6,
        "{field_rate} {rate}"
    );
    let per = j["bytes_per_measurement"]
        .as_f64()
        .expect("bytes/measurement");
    let disk = j["disk_bytes"].as_u64().expect("disk") as f64;
    assert!((per * measurements as f64 - disk).abs() < 1.0, "{per}");
    assert!(
        j["write_amplification"].is_null()
            || j["write_amplification"].as_f64().is_some_and(|w| w > 0.0),
        "{j}"
    );
    if cfg!(target_os = "linux") {
        assert!(j["peak_rss_bytes"].as_u64().is_some_and(|b| b > 0), "{j}");
    }
    let catalog = &j["bucket_catalog"];
    assert_eq!(catalog["numBuckets"], 5, "{catalog}");
    assert_eq!(
        catalog["numMeasurementsCommitted"], measurements,
        "{catalog}"
    );
    // --json prints only the JSON line.
    assert!(run.stderr().is_empty(), "{}", run.stderr());
}

#[test]
fn table_with_inline_generation_sync_and_an_existing_database() {
    let scratch = Scratch::new();
    let db = scratch.db();
    let args = [
        "bench",
        "ingest",
        "--hosts",
        "3",
        "--days",
        "0.01",
        "--threads",
        "4",
        "--batch-size",
        "50",
        "--durability",
        "sync",
        "--generate",
        "inline",
        "--db",
        db.as_str(),
    ];
    let run = tscoll(&args, None).ok();
    let out = run.stdout();
    for label in [
        "measurements         261",
        "measurements/s",
        "field values/s",
        "INCLUDING document generation",
        "disk bytes",
        "bytes/measurement",
        "write amplification",
        "peak RSS",
        "durability           sync",
        "threads              4",
    ] {
        assert!(out.contains(label), "{label:?} in\n{out}");
    }
    // The database holds the collection: `find` reads it back.
    let docs = tscoll(&["find", "--db", db.as_str(), "cpu"], None)
        .ok()
        .json_lines();
    assert_eq!(docs.len(), 3 * 87);
    // A second run into the same database is refused rather than counted wrong.
    let again = tscoll(&args, None).failed();
    assert!(
        again.stderr().contains("already holds"),
        "{}",
        again.stderr()
    );
}

#[test]
fn gen_writes_the_workload_as_extended_json_lines() {
    let run = tscoll(
        &[
            "bench", "gen", "--hosts", "3", "--days", "0.001", "--seed", "7",
        ],
        None,
    )
    .ok();
    let lines = run.json_lines();
    // 86.4 s: the instants 0, 10, ..., 80 s, for 3 hosts.
    assert_eq!(lines.len(), 3 * 9);
    let first = &lines[0];
    let object = first.as_object().expect("object");
    let keys: Vec<&str> = object.keys().map(String::as_str).collect();
    assert_eq!(keys.len(), 12, "{keys:?}");
    assert!(keys.contains(&"time") && keys.contains(&"tags"), "{keys:?}");
    assert_eq!(first["time"]["$date"], "2016-01-01T00:00:00Z");
    assert_eq!(first["tags"]["hostname"], "host_0");
    assert_eq!(first["tags"].as_object().expect("tags").len(), 10);
    for field in tscoll_benches::tsbs::FIELDS {
        assert!(
            first[field]
                .as_i64()
                .is_some_and(|v| (0..=100).contains(&v)),
            "{field} in {first}"
        );
    }
    // Time-major: every host at 00:00:00, then every host at 00:00:10.
    let hosts: Vec<&str> = lines
        .iter()
        .map(|l| l["tags"]["hostname"].as_str().expect("hostname"))
        .collect();
    assert_eq!(hosts[..4], ["host_0", "host_1", "host_2", "host_0"]);
    assert_eq!(lines[3]["time"]["$date"], "2016-01-01T00:00:10Z");

    // The same seed gives the same file; `--out` writes it; `tscoll ingest` loads it.
    let scratch = Scratch::new();
    let path = scratch.path().join("cpu.ndjson");
    let path = path.to_str().expect("utf-8");
    tscoll(
        &[
            "bench", "gen", "--hosts", "3", "--days", "0.001", "--seed", "7", "--out", path,
        ],
        None,
    )
    .ok();
    assert_eq!(std::fs::read_to_string(path).expect("read"), run.stdout());
    scratch
        .run(
            "create",
            &["cpu", "--time-field", "time", "--meta-field", "tags"],
        )
        .ok();
    scratch.run("ingest", &["cpu", path]).ok();
    let stored = scratch.find_all("cpu");
    assert_eq!(stored.len(), lines.len());
    let host_0: Vec<&Value> = stored
        .iter()
        .filter(|d| d["tags"]["hostname"] == "host_0")
        .collect();
    assert_eq!(host_0.len(), 9);
}

#[test]
fn catalog_memory_bounds_the_open_buckets() {
    // 100 hosts keep 100 buckets open, each some kilobytes of rows and min/max. A bucket is
    // opened (and idle ones expired first, SPEC §6.9) when a host's hour rolls over: under
    // 100 000 bytes of catalog memory idle ones are archived or closed, under the default (5 %
    // of the machine's memory) none.
    let ingest = |extra: &[&str]| {
        let mut args = vec![
            "bench", "ingest", "--hosts", "100", "--days", "0.1", "--json",
        ];
        args.extend_from_slice(extra);
        let run = tscoll(&args, None).ok();
        run.json_lines().remove(0)
    };
    let under_pressure = |j: &serde_json::Value| {
        let c = &j["bucket_catalog"];
        c["numBucketsArchivedDueToMemoryThreshold"]
            .as_u64()
            .expect("archived")
            + c["numBucketsClosedDueToMemoryThreshold"]
                .as_u64()
                .expect("closed")
    };
    let default = ingest(&[]);
    let small = ingest(&["--catalog-memory", "100000"]);
    assert_eq!(under_pressure(&default), 0, "{default}");
    assert!(under_pressure(&small) > 0, "{small}");
    assert_eq!(small["catalog_memory_bytes"], 100_000, "{small}");
    // The default is 5 % of the memory this process may use (SPEC, as MongoDB's).
    let meminfo = std::fs::read_to_string("/proc/meminfo").expect("meminfo");
    let total_kb: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("MemTotal");
    let threshold = default["catalog_memory_bytes"].as_u64().expect("threshold");
    assert!(
        threshold >= 1 << 20 && threshold <= total_kb * 1024 / 20,
        "{threshold} of {total_kb} kB"
    );
    for j in [&default, &small] {
        assert_eq!(j["stored_measurements"], j["measurements"], "{j}");
    }
}
