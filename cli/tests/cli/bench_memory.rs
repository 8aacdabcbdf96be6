//! `tscoll bench memory`: reads whose results are many times larger than memory may be,
//! each run as a child process and its peak resident set checked against a bound.

use serde_json::Value;

use crate::common::tscoll;

/// 20 hosts x 1 day: 172 800 measurements, about 5.6 KB each as a `bson::Document`, so
/// holding any of these results would take some 900 MiB; the sorts spill past 1 MiB.
#[test]
fn pipelines_and_sorts_stream_their_results_under_a_bound() {
    let bound_mib = 128;
    let run = tscoll(
        &[
            "bench",
            "memory",
            "--sort-memory-bytes",
            "1048576",
            "--hosts",
            "20",
            "--days",
            "1",
            "--reads",
            "find-sort,match,sort,window-all",
            "--max-rss-mib",
            &bound_mib.to_string(),
            "--json",
        ],
        None,
    );
    let lines = run.json_lines();
    assert_eq!(lines.len(), 1, "{}\n{}", run.stdout(), run.stderr());
    let j = &lines[0];
    assert_eq!(j["measurements"], 172_800, "{j}");
    let reads = j["reads"].as_array().expect("reads");
    let names: Vec<&str> = reads.iter().filter_map(|r| r["read"].as_str()).collect();
    assert_eq!(names, ["find-sort", "match", "sort", "window-all"], "{j}");
    for r in reads {
        assert_eq!(r["failure"], Value::Null, "{r}");
        assert_eq!(r["lines"], 172_800, "{r}");
        let peak = r["peak_rss_bytes"].as_u64().expect("peak");
        assert!(peak > 0 && peak <= bound_mib << 20, "{r}");
    }
    assert!(run.success(), "{}", run.stderr());
}
