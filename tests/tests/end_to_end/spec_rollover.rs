//! SPEC §5, §6.2–§6.5 and §8.1 conformance: placement, rollover reasons, schema changes, size
//! estimate and the min-count rule, batch sorting and execution counters. One measurement per
//! `insert_many` call unless a test says otherwise.

use std::str::FromStr;

use bson::{Bson, DateTime, Decimal128, Document, doc, oid::ObjectId};
use tscoll_engine::{
    CatalogOptions, Collection, CollectionStats, Database, FindOptions, Granularity,
    TimeseriesOptions,
};
use tscoll_tests::spec::{T0, at, insert_all, insert_each, temp_collection};

const HOUR: i64 = 3_600_000;

fn setup_with(
    catalog: CatalogOptions,
    opts: &TimeseriesOptions,
) -> (tempfile::TempDir, Database, Collection) {
    temp_collection(catalog, opts)
}

fn setup() -> (tempfile::TempDir, Database, Collection) {
    setup_with(
        CatalogOptions::default(),
        &TimeseriesOptions::new("t").meta_field("m"),
    )
}

fn setup_no_meta(catalog: CatalogOptions) -> (tempfile::TempDir, Database, Collection) {
    setup_with(catalog, &TimeseriesOptions::new("t"))
}

fn stats(coll: &Collection) -> CollectionStats {
    coll.stats().expect("stats")
}

fn control(b: &Document) -> &Document {
    b.get_document("control").expect("control")
}

fn count_of(b: &Document) -> i64 {
    control(b).get_i64("count").expect("control.count")
}

fn min_time(b: &Document) -> i64 {
    control(b)
        .get_document("min")
        .expect("min")
        .get_datetime("t")
        .expect("min.t")
        .timestamp_millis()
}

/// Buckets sorted by control.min.t, then count descending.
fn buckets(coll: &Collection) -> Vec<Document> {
    let mut v = coll.buckets().expect("buckets");
    v.sort_by_key(|b| (min_time(b), -count_of(b)));
    v
}

fn counts(coll: &Collection) -> Vec<i64> {
    buckets(coll).iter().map(count_of).collect()
}

/// The values of a data column of a bucket, in stored row order.
fn column(b: &Document, field: &str) -> Vec<Bson> {
    b.get_document("data")
        .expect("data")
        .get_document(field)
        .expect(field)
        .values()
        .cloned()
        .collect()
}

// ---- time boundaries --------------------------------------------------------------

#[test]
fn r_6_3_1_measurement_span_minus_1ms_after_min_fits() {
    let (_d, _db, coll) = setup();
    insert_each(
        &coll,
        &[
            doc! { "t": at(10_000), "m": 1 },
            doc! { "t": at(HOUR - 1), "m": 1 },
        ],
    );
    let s = stats(&coll);
    assert_eq!(s.bucket_count, 1);
    assert_eq!(s.execution.num_buckets_closed_due_to_time_forward, 0);
    assert_eq!(counts(&coll), [2]);
}

#[test]
fn r_6_3_1_measurement_exactly_span_after_min_starts_new_bucket() {
    let (_d, _db, coll) = setup();
    // The span counts from the rounded min (T0), not from the first measurement (T0 + 10 s).
    insert_each(
        &coll,
        &[
            doc! { "t": at(10_000), "m": 1 },
            doc! { "t": at(HOUR), "m": 1 },
        ],
    );
    let s = stats(&coll);
    assert_eq!(s.bucket_count, 2);
    assert_eq!(s.execution.num_buckets_closed_due_to_time_forward, 1);
    assert_eq!(s.execution.num_buckets_archived_due_to_time_backward, 0);
    // A rollover is not a new series (R-6.2 step 6).
    assert_eq!(s.execution.num_buckets_opened_due_to_metadata, 1);
    let b = buckets(&coll);
    assert_eq!(b.iter().map(min_time).collect::<Vec<_>>(), [T0, T0 + HOUR]);
    assert_eq!(b.iter().map(count_of).collect::<Vec<_>>(), [1, 1]);
}

#[test]
fn r_6_3_1_custom_bucketing_boundaries() {
    let (_d, _db, coll) = setup_with(
        CatalogOptions::default(),
        &TimeseriesOptions::new("t")
            .meta_field("m")
            .bucket_seconds(60, 60),
    );
    insert_each(
        &coll,
        &[
            doc! { "t": at(0), "m": 1 },
            doc! { "t": at(59_999), "m": 1 },
        ],
    );
    assert_eq!(stats(&coll).bucket_count, 1);
    insert_each(&coll, &[doc! { "t": at(60_000), "m": 1 }]);
    let s = stats(&coll);
    assert_eq!(s.bucket_count, 2);
    assert_eq!(s.execution.num_buckets_closed_due_to_time_forward, 1);
}

#[test]
fn r_6_3_1_minutes_granularity_rounds_to_the_hour() {
    let (_d, _db, coll) = setup_with(
        CatalogOptions::default(),
        &TimeseriesOptions::new("t")
            .meta_field("m")
            .granularity(Granularity::Minutes),
    );
    // The bucket's min is T0 rounded down to the hour; the span is one day from there.
    let hour_start = T0.div_euclid(HOUR) * HOUR;
    insert_each(&coll, &[doc! { "t": at(0), "m": 1 }]);
    assert_eq!(min_time(&buckets(&coll)[0]), hour_start);
    insert_each(
        &coll,
        &[doc! { "t": DateTime::from_millis(hour_start - 1 + 24 * HOUR), "m": 1 }],
    );
    assert_eq!(stats(&coll).bucket_count, 1);
    insert_each(
        &coll,
        &[doc! { "t": DateTime::from_millis(hour_start + 24 * HOUR), "m": 1 }],
    );
    assert_eq!(stats(&coll).bucket_count, 2);
    assert_eq!(
        stats(&coll)
            .execution
            .num_buckets_closed_due_to_time_forward,
        1
    );
}

#[test]
fn r_6_3_1_earlier_than_first_but_not_below_rounded_min_fits() {
    let (_d, _db, coll) = setup();
    insert_each(
        &coll,
        &[
            doc! { "t": at(30_000), "m": 1 },
            doc! { "t": at(10_000), "m": 1 },
            doc! { "t": at(0), "m": 1 },
        ],
    );
    let s = stats(&coll);
    assert_eq!(s.bucket_count, 1);
    assert_eq!(s.execution.num_buckets_archived_due_to_time_backward, 0);
    assert_eq!(counts(&coll), [3]);
}

#[test]
fn r_6_3_time_backward_below_rounded_min_starts_new_bucket_and_archives() {
    let (_d, _db, coll) = setup();
    insert_each(
        &coll,
        &[
            doc! { "t": at(30_000), "m": 1 },
            doc! { "t": at(-1), "m": 1 },
        ],
    );
    let s = stats(&coll);
    assert_eq!(s.bucket_count, 2);
    assert_eq!(s.execution.num_buckets_archived_due_to_time_backward, 1);
    assert_eq!(s.execution.num_buckets_closed_due_to_time_forward, 0);
    assert_eq!(s.execution.num_buckets_opened_due_to_metadata, 1);
    let b = buckets(&coll);
    assert_eq!(
        b.iter().map(min_time).collect::<Vec<_>>(),
        [T0 - 60_000, T0]
    );
}

#[test]
fn r_6_8_1_archived_bucket_is_reopened_by_archive() {
    let (_d, _db, coll) = setup();
    // A (min T0) is archived by a measurement two hours earlier (B, min T0 − 2 h); a measurement
    // back in A's range is too far forward for B (soft close) and reopens A from the archive.
    insert_each(
        &coll,
        &[
            doc! { "t": at(30_000), "m": 1 },
            doc! { "t": at(-2 * HOUR), "m": 1 },
            doc! { "t": at(35_000), "m": 1 },
        ],
    );
    let s = stats(&coll);
    assert_eq!(s.bucket_count, 2);
    assert_eq!(s.execution.num_buckets_archived_due_to_time_backward, 1);
    assert_eq!(s.execution.num_buckets_closed_due_to_time_forward, 1);
    assert_eq!(s.execution.num_buckets_fetched, 1);
    assert_eq!(s.execution.num_buckets_reopened, 1);
    let b = buckets(&coll);
    assert_eq!(
        b.iter()
            .map(|b| (min_time(b), count_of(b)))
            .collect::<Vec<_>>(),
        [(T0 - 2 * HOUR, 1), (T0, 2)]
    );
}

// ---- count (R-6.3 #3) ---------------------------------------------------------------------

#[test]
fn r_6_3_count_1001_measurements_make_2_buckets() {
    let (_d, _db, coll) = setup();
    let docs: Vec<Document> = (0..1001)
        .map(|i| doc! { "t": at(i), "m": 1, "x": i })
        .collect();
    insert_each(&coll, &docs);
    let s = stats(&coll);
    assert_eq!(s.bucket_count, 2);
    assert_eq!(s.measurement_count, 1001);
    assert_eq!(s.execution.num_buckets_closed_due_to_count, 1);
    assert_eq!(s.execution.num_buckets_opened_due_to_metadata, 1);
    assert_eq!(s.execution.num_commits, 1001);
    assert_eq!(s.execution.num_bucket_inserts, 2);
    assert_eq!(s.execution.num_bucket_updates, 999);
    let mut c = counts(&coll);
    c.sort_unstable();
    assert_eq!(c, [1, 1000]);
}

#[test]
fn r_6_3_count_small_max_count() {
    let (_d, _db, coll) = setup_with(
        CatalogOptions {
            bucket_max_count: 3,
            ..CatalogOptions::default()
        },
        &TimeseriesOptions::new("t").meta_field("m"),
    );
    let docs: Vec<Document> = (0..7)
        .map(|i| doc! { "t": at(i * 1_000), "m": 1 })
        .collect();
    insert_each(&coll, &docs);
    let s = stats(&coll);
    assert_eq!(s.bucket_count, 3);
    assert_eq!(s.execution.num_buckets_closed_due_to_count, 2);
    assert_eq!(counts(&coll), [3, 3, 1]);
}

#[test]
fn r_6_3_count_in_one_insert_all() {
    let (_d, _db, coll) = setup_with(
        CatalogOptions {
            bucket_max_count: 3,
            ..CatalogOptions::default()
        },
        &TimeseriesOptions::new("t").meta_field("m"),
    );
    let docs: Vec<Document> = (0..7)
        .map(|i| doc! { "t": at(i * 1_000), "m": 1 })
        .collect();
    insert_all(&coll, &docs);
    let s = stats(&coll);
    assert_eq!(s.bucket_count, 3);
    assert_eq!(s.execution.num_buckets_closed_due_to_count, 2);
    assert_eq!(counts(&coll), [3, 3, 1]);
}

// ---- §5 schema changes --------------------------------------------------------------------

#[test]
fn r_5_3_sub_object_field_order_is_not_a_schema_change_collstats_scenario() {
    let (_d, _db, coll) = setup();
    let docs: Vec<Document> = (0..1001)
        .map(|i| {
            let x = if i % 2 == 0 {
                doc! { "a": 1, "b": 1 }
            } else {
                doc! { "b": 1, "a": 1 }
            };
            doc! { "t": at(i), "m": { "k": 1 }, "x": x }
        })
        .collect();
    insert_each(&coll, &docs);
    let s = stats(&coll);
    assert_eq!(s.bucket_count, 2);
    assert_eq!(s.execution.num_buckets_closed_due_to_schema_change, 0);
    assert_eq!(s.execution.num_buckets_closed_due_to_count, 1);
    let mut c = counts(&coll);
    c.sort_unstable();
    assert_eq!(c, [1, 1000]);
}

#[test]
fn r_5_4_type_sequence_gives_7_schema_closures_and_8_buckets() {
    let (_d, _db, coll) = setup();
    let values = [
        Bson::ObjectId(ObjectId::new()),
        Bson::Array(vec![Bson::Int32(1)]),
        Bson::DateTime(at(0)),
        Bson::Undefined,
        Bson::String("s".into()),
        Bson::Decimal128(Decimal128::from_str("1.5").expect("decimal")),
        Bson::Document(doc! { "a": 1 }),
        Bson::Int32(1),
    ];
    let docs: Vec<Document> = values
        .iter()
        .enumerate()
        .map(|(i, v)| doc! { "t": at(i as i64 * 1_000), "m": 1, "x": v.clone() })
        .collect();
    insert_each(&coll, &docs);
    let s = stats(&coll);
    assert_eq!(s.execution.num_buckets_closed_due_to_schema_change, 7);
    assert_eq!(s.bucket_count, 8);
    assert_eq!(counts(&coll), [1; 8]);
}

#[test]
fn r_5_3_compatible_changes_keep_one_bucket() {
    let (_d, _db, coll) = setup();
    insert_each(
        &coll,
        &[
            doc! { "t": at(0), "m": 1, "n": 1_i32, "s": "a", "arr": [1, 2], "o": { "p": 1 } },
            // New field, missing fields.
            doc! { "t": at(1_000), "m": 1, "new": true },
            // Other numeric types share rank 10.
            doc! { "t": at(2_000), "m": 1, "n": 2_i64 },
            doc! { "t": at(3_000), "m": 1, "n": 2.5 },
            doc! { "t": at(4_000), "m": 1, "n": Decimal128::from_str("7").expect("decimal") },
            // String vs symbol.
            doc! { "t": at(5_000), "m": 1, "s": Bson::Symbol("sym".into()) },
            // Longer and shorter arrays.
            doc! { "t": at(6_000), "m": 1, "arr": [3, 4, 5] },
            doc! { "t": at(7_000), "m": 1, "arr": [] },
            // New sub-field.
            doc! { "t": at(8_000), "m": 1, "o": { "q": "x" } },
        ],
    );
    let s = stats(&coll);
    assert_eq!(s.bucket_count, 1);
    assert_eq!(s.execution.num_buckets_closed_due_to_schema_change, 0);
}

#[test]
fn r_5_2_nested_type_changes_are_schema_changes() {
    let (_d, _db, coll) = setup();
    insert_each(
        &coll,
        &[
            doc! { "t": at(0), "m": 1, "o": { "a": 1 } },
            doc! { "t": at(1_000), "m": 1, "o": { "a": "s" } },
            doc! { "t": at(2_000), "m": 1, "o": { "a": "s" }, "arr": [1] },
            doc! { "t": at(3_000), "m": 1, "arr": [Bson::Null] },
            doc! { "t": at(4_000), "m": 1, "x": Bson::Null },
            doc! { "t": at(5_000), "m": 1, "x": 1 },
        ],
    );
    let s = stats(&coll);
    // Buckets: {1}, {2, 3}, {4, 5} (x is new there), {6}.
    assert_eq!(s.execution.num_buckets_closed_due_to_schema_change, 3);
    assert_eq!(s.bucket_count, 4);
    let mut c = counts(&coll);
    c.sort_unstable();
    assert_eq!(c, [1, 1, 2, 2]);
}

#[test]
fn r_2_3_id_type_change_is_a_schema_change() {
    let (_d, _db, coll) = setup();
    insert_each(
        &coll,
        &[
            doc! { "_id": 1, "t": at(0), "m": 1 },
            doc! { "_id": ObjectId::new(), "t": at(1_000), "m": 1 },
        ],
    );
    let s = stats(&coll);
    assert_eq!(s.execution.num_buckets_closed_due_to_schema_change, 1);
    assert_eq!(s.bucket_count, 2);
}

// ---- §6.4 / §6.5 size and the min-count rule ----------------------------------------------

#[test]
fn r_6_5_three_31kb_measurements_fit_in_one_bucket() {
    let (_d, _db, coll) = setup_no_meta(CatalogOptions::default());
    let docs: Vec<Document> = (0..3)
        .map(|i| doc! { "t": at(i * 1_000), "x": "a".repeat(31_000) })
        .collect();
    insert_each(&coll, &docs);
    let s = stats(&coll);
    assert_eq!(s.bucket_count, 1);
    assert_eq!(s.execution.num_buckets_closed_due_to_size, 0);
    assert_eq!(
        s.execution.num_buckets_kept_open_due_to_large_measurements,
        1
    );
}

#[test]
fn r_6_5_min_count_1_third_31kb_measurement_goes_to_new_bucket() {
    let (_d, _db, coll) = setup_no_meta(CatalogOptions {
        bucket_min_count: 1,
        ..CatalogOptions::default()
    });
    let docs: Vec<Document> = (0..3)
        .map(|i| doc! { "t": at(i * 1_000), "x": "a".repeat(31_000) })
        .collect();
    insert_each(&coll, &docs);
    let s = stats(&coll);
    assert_eq!(s.bucket_count, 2);
    assert_eq!(s.execution.num_buckets_closed_due_to_size, 1);
    assert_eq!(
        s.execution.num_buckets_kept_open_due_to_large_measurements,
        0
    );
    assert_eq!(counts(&coll), [2, 1]);
}

#[test]
fn r_6_5_10240_byte_strings_make_buckets_of_exactly_10() {
    let (_d, _db, coll) = setup_no_meta(CatalogOptions::default());
    let docs: Vec<Document> = (0..30)
        .map(|i| doc! { "t": at(i * 100), "x": "b".repeat(10_240) })
        .collect();
    insert_each(&coll, &docs);
    let s = stats(&coll);
    assert_eq!(s.bucket_count, 3);
    assert_eq!(s.execution.num_buckets_closed_due_to_size, 2);
    assert_eq!(s.execution.num_buckets_closed_due_to_count, 0);
    assert_eq!(counts(&coll), [10, 10, 10]);
}

#[test]
fn r_6_5_large_second_measurement_keeps_bucket_open_until_min_count() {
    let (_d, _db, coll) = setup_no_meta(CatalogOptions::default());
    let mut docs = vec![
        doc! { "t": at(0), "x": 1 },
        doc! { "t": at(1_000), "big": "c".repeat(128_000) },
    ];
    docs.extend((2..11).map(|i| doc! { "t": at(i * 1_000), "x": i }));
    insert_each(&coll, &docs);
    let s = stats(&coll);
    assert_eq!(s.bucket_count, 2);
    assert_eq!(
        s.execution.num_buckets_kept_open_due_to_large_measurements,
        1
    );
    assert_eq!(s.execution.num_buckets_closed_due_to_size, 1);
    let b = buckets(&coll);
    assert_eq!(b.iter().map(count_of).collect::<Vec<_>>(), [10, 1]);
    assert_eq!(column(&b[1], "x"), [Bson::Int64(10)]);
}

#[test]
fn r_6_5_min_count_rule_counts_once_per_bucket() {
    let (_d, _db, coll) = setup_no_meta(CatalogOptions::default());
    let docs: Vec<Document> = (0..6)
        .map(|i| doc! { "t": at(i * 1_000), "x": "d".repeat(60_000) })
        .collect();
    insert_each(&coll, &docs);
    let s = stats(&coll);
    assert_eq!(s.bucket_count, 1);
    assert_eq!(
        s.execution.num_buckets_kept_open_due_to_large_measurements,
        1
    );
}

#[test]
fn r_6_5_ceiling_closes_even_below_min_count() {
    // 3.5 MB strings: 3 copies (data, min, max) of the first are ~10.5 MB; the second would take
    // the estimate over the 12 582 912-byte ceiling although the bucket holds 1 < 10 measurements.
    let (_d, _db, coll) = setup_no_meta(CatalogOptions::default());
    let docs: Vec<Document> = (0..2)
        .map(|i| doc! { "t": at(i * 1_000), "x": "e".repeat(3_500_000) })
        .collect();
    insert_each(&coll, &docs);
    let s = stats(&coll);
    assert_eq!(s.bucket_count, 2);
    assert_eq!(s.execution.num_buckets_closed_due_to_size, 1);
}

// ---- sorting ------------------------------------------------------------

#[test]
fn r_6_2_2_one_call_out_of_order_is_sorted_version_2() {
    let (_d, _db, coll) = setup();
    insert_all(
        &coll,
        &[
            doc! { "t": at(3_000), "m": 1, "x": 3 },
            doc! { "t": at(1_000), "m": 1, "x": 1 },
            doc! { "t": at(2_000), "m": 1, "x": 2 },
        ],
    );
    let b = buckets(&coll);
    assert_eq!(b.len(), 1);
    assert_eq!(control(&b[0]).get_i32("version").ok(), Some(2));
    assert_eq!(
        column(&b[0], "t"),
        [
            Bson::DateTime(at(1_000)),
            Bson::DateTime(at(2_000)),
            Bson::DateTime(at(3_000))
        ]
    );
    assert_eq!(
        column(&b[0], "x"),
        [Bson::Int32(1), Bson::Int32(2), Bson::Int32(3)]
    );
    let s = stats(&coll);
    assert_eq!(s.execution.num_compressed_buckets_converted_to_unsorted, 0);
    assert_eq!(s.execution.num_commits, 1);
    // Unsorted find returns stored order.
    let xs: Vec<i32> = coll
        .find(&doc! {}, &FindOptions::default())
        .expect("find")
        .iter()
        .map(|d| d.get_i32("x").expect("x"))
        .collect();
    assert_eq!(xs, [1, 2, 3]);
}

#[test]
fn r_6_2_2_sort_is_stable_for_equal_times() {
    let (_d, _db, coll) = setup();
    insert_all(
        &coll,
        &[
            doc! { "t": at(2_000), "m": 1, "x": 0 },
            doc! { "t": at(1_000), "m": 1, "x": 1 },
            doc! { "t": at(1_000), "m": 1, "x": 2 },
            doc! { "t": at(1_000), "m": 1, "x": 3 },
        ],
    );
    let b = buckets(&coll);
    assert_eq!(
        column(&b[0], "x"),
        [
            Bson::Int32(1),
            Bson::Int32(2),
            Bson::Int32(3),
            Bson::Int32(0)
        ]
    );
    assert_eq!(control(&b[0]).get_i32("version").ok(), Some(2));
}

#[test]
fn r_6_2_2_sorting_is_per_series() {
    let (_d, _db, coll) = setup();
    insert_all(
        &coll,
        &[
            doc! { "t": at(3_000), "m": "a", "x": 3 },
            doc! { "t": at(2_000), "m": "b", "x": 20 },
            doc! { "t": at(1_000), "m": "a", "x": 1 },
            doc! { "t": at(1_000), "m": "b", "x": 10 },
        ],
    );
    let b = buckets(&coll);
    assert_eq!(b.len(), 2);
    for bucket in &b {
        assert_eq!(control(bucket).get_i32("version").ok(), Some(2), "{bucket}");
        let xs = column(bucket, "x");
        let mut sorted = xs.clone();
        sorted.sort_by_key(|v| v.as_i32());
        assert_eq!(xs, sorted);
    }
    let s = stats(&coll);
    assert_eq!(s.execution.num_commits, 2);
    assert_eq!(s.execution.num_buckets_opened_due_to_metadata, 2);
}

#[test]
fn r_4_2_2_separate_calls_out_of_order_give_version_3() {
    let (_d, _db, coll) = setup();
    insert_each(
        &coll,
        &[
            doc! { "t": at(3_000), "m": 1, "x": 3 },
            doc! { "t": at(1_000), "m": 1, "x": 1 },
        ],
    );
    let b = buckets(&coll);
    assert_eq!(b.len(), 1);
    assert_eq!(control(&b[0]).get_i32("version").ok(), Some(3));
    assert_eq!(
        column(&b[0], "x"),
        [Bson::Int32(3), Bson::Int32(1)],
        "insertion order is kept"
    );
    assert_eq!(
        stats(&coll)
            .execution
            .num_compressed_buckets_converted_to_unsorted,
        1
    );
    // Stays v3, counted once.
    insert_each(
        &coll,
        &[
            doc! { "t": at(5_000), "m": 1, "x": 5 },
            doc! { "t": at(2_000), "m": 1, "x": 2 },
        ],
    );
    let b = buckets(&coll);
    assert_eq!(control(&b[0]).get_i32("version").ok(), Some(3));
    assert_eq!(
        stats(&coll)
            .execution
            .num_compressed_buckets_converted_to_unsorted,
        1
    );
    let xs: Vec<i32> = coll
        .find(&doc! {}, &FindOptions::default())
        .expect("find")
        .iter()
        .map(|d| d.get_i32("x").expect("x"))
        .collect();
    assert_eq!(xs, [3, 1, 5, 2]);
}

#[test]
fn r_4_2_2_equal_times_do_not_promote() {
    let (_d, _db, coll) = setup();
    insert_each(
        &coll,
        &[
            doc! { "t": at(1_000), "m": 1, "x": 1 },
            doc! { "t": at(1_000), "m": 1, "x": 2 },
        ],
    );
    let b = buckets(&coll);
    assert_eq!(control(&b[0]).get_i32("version").ok(), Some(2));
    assert_eq!(
        stats(&coll)
            .execution
            .num_compressed_buckets_converted_to_unsorted,
        0
    );
}

// ---- counters ---------------------------------------------------------------------

#[test]
fn r_8_1_2_one_call_into_one_bucket_is_one_commit() {
    let (_d, _db, coll) = setup();
    let docs: Vec<Document> = (0..5)
        .map(|i| doc! { "t": at(i * 1_000), "m": "a" })
        .collect();
    insert_all(&coll, &docs);
    let e = stats(&coll).execution;
    assert_eq!(e.num_commits, 1);
    assert_eq!(e.num_bucket_inserts, 1);
    assert_eq!(e.num_bucket_updates, 0);
    assert_eq!(e.num_measurements_committed, 5);
    assert_eq!(e.num_buckets_opened_due_to_metadata, 1);

    let docs: Vec<Document> = (5..8)
        .map(|i| doc! { "t": at(i * 1_000), "m": "a" })
        .collect();
    insert_all(&coll, &docs);
    let e = stats(&coll).execution;
    assert_eq!(e.num_commits, 2);
    assert_eq!(e.num_bucket_inserts, 1);
    assert_eq!(e.num_bucket_updates, 1);
    assert_eq!(e.num_measurements_committed, 8);
    assert_eq!(e.num_buckets_opened_due_to_metadata, 1);
    assert_eq!(stats(&coll).bucket_count, 1);
}

#[test]
fn r_8_1_2_opened_due_to_metadata_once_per_new_series() {
    let (_d, _db, coll) = setup();
    insert_each(
        &coll,
        &[
            doc! { "t": at(0), "m": "a" },
            doc! { "t": at(1_000), "m": "b" },
            doc! { "t": at(2_000), "m": "a" },
            doc! { "t": at(3_000), "m": "b" },
            doc! { "t": at(4_000), "m": "c" },
        ],
    );
    let e = stats(&coll).execution;
    assert_eq!(e.num_buckets_opened_due_to_metadata, 3);
    assert_eq!(e.num_bucket_inserts, 3);
    assert_eq!(e.num_bucket_updates, 2);
    assert_eq!(e.num_commits, 5);
    assert_eq!(e.num_measurements_committed, 5);
    // One call touching two existing series and one new one: one commit per bucket.
    insert_all(
        &coll,
        &[
            doc! { "t": at(5_000), "m": "a" },
            doc! { "t": at(6_000), "m": "d" },
            doc! { "t": at(7_000), "m": "a" },
            doc! { "t": at(8_000), "m": "b" },
        ],
    );
    let e = stats(&coll).execution;
    assert_eq!(e.num_commits, 8);
    assert_eq!(e.num_bucket_inserts, 4);
    assert_eq!(e.num_bucket_updates, 4);
    assert_eq!(e.num_measurements_committed, 9);
    assert_eq!(e.num_buckets_opened_due_to_metadata, 4);
}

#[test]
fn r_8_1_rollover_is_not_opened_due_to_metadata() {
    let (_d, _db, coll) = setup_with(
        CatalogOptions {
            bucket_max_count: 2,
            ..CatalogOptions::default()
        },
        &TimeseriesOptions::new("t").meta_field("m"),
    );
    insert_each(
        &coll,
        &[
            doc! { "t": at(0), "m": 1, "x": 1 },
            doc! { "t": at(1_000), "m": 1, "x": 2 },
            doc! { "t": at(2_000), "m": 1, "x": 3 }, // count
            doc! { "t": at(3_000), "m": 1, "x": "s" }, // schema
            doc! { "t": at(2 * HOUR), "m": 1, "x": "s" }, // time forward
        ],
    );
    let e = stats(&coll).execution;
    assert_eq!(e.num_buckets_closed_due_to_count, 1);
    assert_eq!(e.num_buckets_closed_due_to_schema_change, 1);
    assert_eq!(e.num_buckets_closed_due_to_time_forward, 1);
    assert_eq!(e.num_bucket_inserts, 4);
    assert_eq!(e.num_buckets_opened_due_to_metadata, 1);
    assert_eq!(stats(&coll).bucket_count, 4);
}

#[test]
fn r_6_3_rollover_reason_order_time_forward_before_count() {
    // A full bucket receiving a measurement a span later is closed for time, not count.
    let (_d, _db, coll) = setup_with(
        CatalogOptions {
            bucket_max_count: 2,
            ..CatalogOptions::default()
        },
        &TimeseriesOptions::new("t").meta_field("m"),
    );
    insert_each(
        &coll,
        &[
            doc! { "t": at(0), "m": 1 },
            doc! { "t": at(1_000), "m": 1 },
            doc! { "t": at(HOUR), "m": 1 },
        ],
    );
    let e = stats(&coll).execution;
    assert_eq!(e.num_buckets_closed_due_to_time_forward, 1);
    assert_eq!(e.num_buckets_closed_due_to_count, 0);
    assert_eq!(e.num_buckets_closed_due_to_schema_change, 0);
}

#[test]
fn r_6_3_rollover_reason_order_count_before_schema() {
    let (_d, _db, coll) = setup_with(
        CatalogOptions {
            bucket_max_count: 2,
            ..CatalogOptions::default()
        },
        &TimeseriesOptions::new("t").meta_field("m"),
    );
    insert_each(
        &coll,
        &[
            doc! { "t": at(0), "m": 1, "x": 1 },
            doc! { "t": at(1_000), "m": 1, "x": 2 },
            doc! { "t": at(2_000), "m": 1, "x": "s" },
        ],
    );
    let e = stats(&coll).execution;
    assert_eq!(e.num_buckets_closed_due_to_count, 1);
    assert_eq!(e.num_buckets_closed_due_to_schema_change, 0);
}

// ---- R-6.3.2 [master] full buckets are closed instead of archived ------------------------

#[test]
fn r_6_3_2_time_backward_on_full_bucket_closes_for_count_instead_of_archiving() {
    let (_d, _db, coll) = setup_with(
        CatalogOptions {
            bucket_max_count: 2,
            ..CatalogOptions::default()
        },
        &TimeseriesOptions::new("t").meta_field("m"),
    );
    insert_each(
        &coll,
        &[
            doc! { "t": at(30_000), "m": 1 },
            doc! { "t": at(31_000), "m": 1 },
            doc! { "t": at(-1), "m": 1 },
        ],
    );
    let s = stats(&coll);
    assert_eq!(s.bucket_count, 2);
    assert_eq!(s.execution.num_buckets_archived_due_to_time_backward, 0);
    assert_eq!(s.execution.num_buckets_closed_due_to_count, 1);
    assert_eq!(s.num_archived_buckets, 0);
}

// ---- §6.4 [master] the meta value is counted once ------------------------------------------

#[test]
fn r_6_4_meta_is_counted_once_in_the_size_estimate() {
    // Data alone (10 240-byte strings) would fill a bucket to ~123 KB with 10 measurements, never
    // needing the min-count rule; a 60 000-byte meta value takes the estimate over 128 000 at
    // the 5th measurement, so the bucket is kept open for large measurements until it holds 10.
    let (_d, _db, coll) = setup();
    let meta = "m".repeat(60_000);
    let docs: Vec<Document> = (0..11)
        .map(|i| doc! { "t": at(i * 100), "m": meta.clone(), "x": "b".repeat(10_240) })
        .collect();
    insert_each(&coll, &docs);
    let s = stats(&coll);
    assert_eq!(s.bucket_count, 2);
    assert_eq!(
        s.execution.num_buckets_kept_open_due_to_large_measurements,
        1
    );
    assert_eq!(s.execution.num_buckets_closed_due_to_size, 1);
    assert_eq!(counts(&coll), [10, 1]);
}

#[test]
fn r_6_4_meta_counted_once_not_per_measurement() {
    // A 20 000-byte meta with small measurements: counted per measurement it would overflow
    // 128 000 at the 7th measurement and then close at the 10th; counted once, the bucket
    // stays open by size until the count limit.
    let (_d, _db, coll) = setup_with(
        CatalogOptions {
            bucket_max_count: 20,
            ..CatalogOptions::default()
        },
        &TimeseriesOptions::new("t").meta_field("m"),
    );
    let meta = "m".repeat(20_000);
    let docs: Vec<Document> = (0..21)
        .map(|i| doc! { "t": at(i * 100), "m": meta.clone(), "x": i })
        .collect();
    insert_each(&coll, &docs);
    let s = stats(&coll);
    assert_eq!(s.execution.num_buckets_closed_due_to_size, 0);
    assert_eq!(
        s.execution.num_buckets_kept_open_due_to_large_measurements,
        0
    );
    assert_eq!(s.execution.num_buckets_closed_due_to_count, 1);
    assert_eq!(counts(&coll), [20, 1]);
}

// ---- §6.6 cache pressure -------------------------------------------------------------------

#[test]
fn r_6_6_cache_derived_size_limit_closes_for_cache_pressure() {
    // cacheBytes 400 000 and 4 active buckets: derived = 50 000 < 128 000. Measurements of a
    // 1 000-byte string: the estimate after k ≥ 10 of them is 12 460 + 1 037·(k − 10) (+ meta),
    // so the 47th does not fit: 46 per bucket, closed for cache pressure (not size).
    let (_d, _db, coll) = setup_with(
        CatalogOptions {
            cache_size_bytes: 400_000,
            ..CatalogOptions::default()
        },
        &TimeseriesOptions::new("t").meta_field("m"),
    );
    for m in ["b", "c", "d"] {
        insert_each(&coll, &[doc! { "t": at(0), "m": m }]);
    }
    let docs: Vec<Document> = (0..47)
        .map(|i| doc! { "t": at(i * 100), "m": "a", "x": "z".repeat(1_000) })
        .collect();
    insert_each(&coll, &docs);
    let s = stats(&coll);
    assert_eq!(s.execution.num_buckets_closed_due_to_cache_pressure, 1);
    assert_eq!(s.execution.num_buckets_closed_due_to_size, 0);
    assert_eq!(s.bucket_count, 5);
    assert_eq!(counts(&coll), [46, 1, 1, 1, 1]);
}

// ---- steps 3–4 / R-6.8.2 query-based reopening within a process -----------------------

#[test]
fn r_6_8_2_new_series_counts_one_failed_query() {
    let (_d, _db, coll) = setup();
    insert_each(
        &coll,
        &[
            doc! { "t": at(0), "m": "a" },
            doc! { "t": at(1_000), "m": "a" },
            doc! { "t": at(2_000), "m": "b" },
        ],
    );
    let e = stats(&coll).execution;
    assert_eq!(e.num_bucket_queries_failed, 2);
    assert_eq!(e.num_buckets_queried, 0);
}

#[test]
fn r_6_2_time_forward_disables_query_reopening() {
    let (_d, _db, coll) = setup();
    insert_each(
        &coll,
        &[
            doc! { "t": at(0), "m": "a" },
            doc! { "t": at(HOUR), "m": "a" },
        ],
    );
    let e = stats(&coll).execution;
    assert_eq!(e.num_buckets_closed_due_to_time_forward, 1);
    assert_eq!(
        e.num_bucket_queries_failed, 1,
        "only the first insert of the series queried"
    );
    assert_eq!(e.num_buckets_queried, 0);
}

#[test]
fn r_6_8_2_soft_closed_bucket_is_reopened_by_query_after_time_backward() {
    let (_d, _db, coll) = setup();
    // A (min T0) is soft-closed by B (min T0 + 1 h); a measurement at T0 + 30 min is time-backward
    // for B (archive) and is placed in A, found by the query.
    insert_each(
        &coll,
        &[
            doc! { "t": at(0), "m": "a" },
            doc! { "t": at(HOUR), "m": "a" },
            doc! { "t": at(HOUR / 2), "m": "a" },
        ],
    );
    let s = stats(&coll);
    assert_eq!(s.bucket_count, 2);
    assert_eq!(s.execution.num_buckets_closed_due_to_time_forward, 1);
    assert_eq!(s.execution.num_buckets_archived_due_to_time_backward, 1);
    assert_eq!(s.execution.num_buckets_queried, 1);
    assert_eq!(s.execution.num_buckets_reopened, 1);
    let b = buckets(&coll);
    assert_eq!(
        b.iter()
            .map(|b| (min_time(b), count_of(b)))
            .collect::<Vec<_>>(),
        [(T0, 2), (T0 + HOUR, 1)]
    );
}
