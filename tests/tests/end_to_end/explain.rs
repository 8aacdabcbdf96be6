//! `explain`: the plan a find or a pipeline reports says how buckets are chosen and which
//! stages the read answers, and its execution counters are those of the query itself.

use bson::{Bson, DateTime, Document, doc};
use tscoll_engine::{
    CatalogOptions, Collection, Database, ExplainVerbosity, FindOptions, IndexOptions,
    TimeseriesOptions,
};
use tscoll_tests::spec::{insert_all, temp_collection};

const HOUR: i64 = 3_600_000;

/// Three hosts, a measurement every 10 minutes for two days; buckets of an hour.
fn hosts() -> (tempfile::TempDir, Database, Collection) {
    let (dir, db, coll) = temp_collection(
        CatalogOptions::default(),
        &TimeseriesOptions::new("t").meta_field("host"),
    );
    let mut docs = Vec::new();
    for h in ["a", "b", "c"] {
        for i in 0..288_i64 {
            docs.push(doc! { "t": DateTime::from_millis(i * 600_000), "host": h, "v": i % 7 });
        }
    }
    insert_all(&coll, &docs);
    (dir, db, coll)
}

fn planner(plan: &Document) -> &Document {
    plan.get_document("queryPlanner").expect("queryPlanner")
}

fn buckets(plan: &Document) -> &Document {
    planner(plan)
        .get_document("winningPlan")
        .and_then(|w| w.get_document("buckets"))
        .expect("buckets")
}

#[test]
fn a_find_plan_names_the_index_the_series_and_the_time_bounds() {
    let (_dir, _db, coll) = hosts();
    let opts = FindOptions::default();
    let q = ExplainVerbosity::QueryPlanner;
    let one = coll
        .explain_find(&doc! { "host": "a" }, &opts, q)
        .expect("explain");
    assert_eq!(buckets(&one).get_str("index").expect("index"), "meta+time");
    assert_eq!(buckets(&one).get_i64("series").expect("series"), 1);
    assert!(!one.contains_key("executionStats"), "{one}");
    let two = coll
        .explain_find(&doc! { "host": { "$in": ["a", "b"] } }, &opts, q)
        .expect("explain");
    assert_eq!(buckets(&two).get_i64("series").expect("series"), 2);
    let all = coll
        .explain_find(&doc! { "v": { "$gt": 3 } }, &opts, q)
        .expect("explain");
    assert_eq!(buckets(&all).get_str("series").expect("series"), "all");
    assert_eq!(
        buckets(&all).get_bool("perMeasurementFilter").ok(),
        Some(true)
    );
    assert_eq!(
        buckets(&one).get_bool("perMeasurementFilter").ok(),
        Some(false),
        "a meta-only filter takes whole buckets"
    );
    // Time predicates bound the min time: a bucket opened up to the span before the lower
    // bound may still hold a match (SPEC ).
    let from = DateTime::from_millis(10 * HOUR);
    let ranged = coll
        .explain_find(&doc! { "t": { "$gte": from } }, &opts, q)
        .expect("explain");
    let min = buckets(&ranged).get_document("minTime").expect("minTime");
    let lo = min.get_datetime("$gte").expect("$gte").timestamp_millis();
    assert!(lo <= 10 * HOUR && lo > 10 * HOUR - 2 * 86_400_000, "{min}");
    assert_eq!(min.get("$lte"), Some(&Bson::Null), "no upper bound");
    // A number against the time field matches nothing: no bucket is read.
    let none = coll
        .explain_find(&doc! { "t": { "$gt": 5 } }, &opts, q)
        .expect("explain");
    assert_eq!(
        buckets(&none).get_str("index").expect("index"),
        "no bucket can match"
    );
    // A secondary index that serves the filter is named.
    let name = coll
        .create_index(&doc! { "v": 1 }, &IndexOptions::default())
        .expect("index");
    let by_v = coll
        .explain_find(&doc! { "v": 6 }, &opts, q)
        .expect("explain");
    assert_eq!(buckets(&by_v).get_str("index").expect("index"), name);
    // Sort, limit and projection are reported; a bad filter fails as find does.
    let sorted = coll
        .explain_find(
            &Document::new(),
            &FindOptions {
                sort_by: Some(doc! { "v": -1 }),
                limit: Some(3),
                ..FindOptions::default()
            },
            q,
        )
        .expect("explain");
    let w = planner(&sorted).get_document("winningPlan").expect("plan");
    assert_eq!(w.get_i64("limit").ok(), Some(3));
    assert_eq!(
        w.get_document("sort")
            .and_then(|s| s.get_bool("streams"))
            .ok(),
        Some(false)
    );
    assert!(
        coll.explain_find(&doc! { "v": { "$bogus": 1 } }, &opts, q)
            .is_err()
    );
}

#[test]
fn execution_stats_are_the_counters_of_the_query_itself() {
    let (_dir, _db, coll) = hosts();
    let opts = FindOptions::default();
    for filter in [
        doc! { "host": "b" },
        doc! { "host": "b", "t": { "$lt": DateTime::from_millis(5 * HOUR) } },
        doc! { "v": { "$gte": 5 } },
        Document::new(),
    ] {
        let (found, stats) = coll.find_with_stats(&filter, &opts).expect("find");
        let plan = coll
            .explain_find(&filter, &opts, ExplainVerbosity::ExecutionStats)
            .expect("explain");
        let exec = plan.get_document("executionStats").expect("executionStats");
        assert_eq!(
            exec.get_i64("nReturned").expect("nReturned"),
            i64::try_from(found.len()).expect("len"),
            "{filter}"
        );
        for (k, v) in stats.to_document() {
            assert_eq!(exec.get(&k), Some(&v), "{filter}: {k}");
        }
    }
}

#[test]
fn a_pipeline_plan_says_which_stages_the_read_answers() {
    let (_dir, _db, coll) = hosts();
    let hourly = [
        doc! { "$match": { "host": "a" } },
        doc! { "$group": {
            "_id": { "$dateTrunc": { "date": "$t", "unit": "hour" } },
            "n": { "$count": {} },
            "max": { "$max": "$v" },
        } },
        doc! { "$sort": { "_id": 1 } },
        doc! { "$limit": 5 },
    ];
    let plan = coll
        .explain_aggregate(&hourly, ExplainVerbosity::ExecutionStats)
        .expect("explain");
    let stages = planner(&plan).get_array("stages").expect("stages");
    let by: Vec<&str> = stages
        .iter()
        .map(|s| match s {
            Bson::Document(d) => d.get_str("answeredBy").expect("answeredBy"),
            _ => panic!("{s}"),
        })
        .collect();
    assert_eq!(by, ["read filter", "bucket sums", "stream", "stream"]);
    let read = planner(&plan).get_document("read").expect("read");
    assert_eq!(read.get_i64("series").ok(), Some(1));
    assert_eq!(
        read.get_document("filter").ok(),
        Some(&doc! { "host": "a" })
    );
    let exec = plan.get_document("executionStats").expect("executionStats");
    let result = coll.aggregate(&hourly).expect("aggregate");
    assert_eq!(exec.get_i64("nReturned").ok(), Some(5));
    assert_eq!(result.len(), 5);
    // Whole hour buckets are answered without decoding their columns.
    assert_eq!(exec.get_i64("bucketsUnpacked").ok(), Some(0), "{exec}");
    assert!(exec.get_i64("bucketsFromControl").expect("n") > 0, "{exec}");

    // A group the windowed engine does not answer runs over the stream of measurements,
    // whose read is counted.
    let general = [
        doc! { "$match": { "v": { "$gte": 3 } } },
        doc! { "$group": { "_id": "$v", "n": { "$sum": 1 } } },
    ];
    let plan = coll
        .explain_aggregate(&general, ExplainVerbosity::ExecutionStats)
        .expect("explain");
    let stages = planner(&plan).get_array("stages").expect("stages");
    let second = match &stages[1] {
        Bson::Document(d) => d,
        other => panic!("{other}"),
    };
    assert_eq!(second.get_str("answeredBy").ok(), Some("stream"));
    assert_eq!(second.get_str("holds").ok(), Some("its groups"));
    let exec = plan.get_document("executionStats").expect("executionStats");
    assert_eq!(exec.get_i64("nReturned").ok(), Some(4), "v in 3..=6");
    assert_eq!(exec.get_i64("rowsExamined").ok(), Some(3 * 288), "{exec}");
    // Without execution, nothing is run.
    let plan = coll
        .explain_aggregate(&general, ExplainVerbosity::QueryPlanner)
        .expect("explain");
    assert!(!plan.contains_key("executionStats"));
    assert!(
        coll.explain_aggregate(&[doc! { "$nope": {} }], ExplainVerbosity::QueryPlanner)
            .is_err()
    );
}

#[test]
fn a_sort_on_time_streams_from_the_buckets_and_stops_at_its_limit() {
    let (_dir, _db, coll) = hosts();
    for (sort, limit) in [(-1, Some(7)), (1, Some(3)), (-1, None), (1, None)] {
        let mut pipeline = vec![
            doc! { "$match": { "host": { "$in": ["a", "c"] } } },
            doc! { "$sort": { "t": sort } },
        ];
        if let Some(n) = limit {
            pipeline.push(doc! { "$limit": n });
        }
        // The same pipeline with a stage before the sort: the sort runs over the stream.
        let mut general = pipeline.clone();
        general.insert(1, doc! { "$addFields": { "x": 1 } });
        general.push(doc! { "$unset": "x" });
        let pushed = coll.aggregate(&pipeline).expect("aggregate");
        let streamed = coll.aggregate(&general).expect("aggregate");
        let times = |docs: &[Document]| -> Vec<i64> {
            docs.iter()
                .map(|d| d.get_datetime("t").expect("t").timestamp_millis())
                .collect()
        };
        assert_eq!(times(&pushed), times(&streamed), "{sort} {limit:?}");
        assert_eq!(pushed.len(), limit.map_or(2 * 288, |n| n as usize));
        let plan = coll
            .explain_aggregate(&pipeline, ExplainVerbosity::ExecutionStats)
            .expect("explain");
        let stages = planner(&plan).get_array("stages").expect("stages");
        for s in &stages[1..] {
            let Bson::Document(s) = s else { panic!("{s}") };
            assert_eq!(
                s.get_str("answeredBy").ok(),
                Some("read in time order"),
                "{s}"
            );
        }
        let exec = plan.get_document("executionStats").expect("executionStats");
        if limit.is_some() {
            // Only the buckets that can hold the first measurements are decoded.
            let unpacked = exec.get_i64("bucketsUnpacked").expect("unpacked");
            assert!(unpacked <= 4, "{exec}");
        }
    }
}
