//! SPEC §4 conformance: control.min / control.max, control.count (§4.5),
//! rounding and the bucket `_id` timestamp, read through `coll.buckets()`.

use std::str::FromStr;

use bson::{Bson, DateTime, Decimal128, Document, doc, oid::ObjectId};
use tscoll_engine::{
    CatalogOptions, Collection, Database, Granularity, InsertOptions, TimeseriesOptions,
};
use tscoll_tests::spec::{T0, at, insert_each, temp_collection};

const DAY: i64 = 86_400_000;

fn setup_with(opts: &TimeseriesOptions) -> (tempfile::TempDir, Database, Collection) {
    temp_collection(CatalogOptions::default(), opts)
}

fn setup() -> (tempfile::TempDir, Database, Collection) {
    setup_with(&TimeseriesOptions::new("t").meta_field("m"))
}

fn only_bucket(coll: &Collection) -> Document {
    let mut b = coll.buckets().expect("buckets");
    assert_eq!(b.len(), 1, "{b:?}");
    b.remove(0)
}

fn control_part<'a>(b: &'a Document, part: &str) -> &'a Document {
    b.get_document("control")
        .and_then(|c| c.get_document(part))
        .unwrap_or_else(|_| panic!("control.{part}: {b}"))
}

/// `(control.min.<f>, control.max.<f>)` of the only bucket.
fn min_max(coll: &Collection, f: &str) -> (Bson, Bson) {
    let b = only_bucket(coll);
    let min = control_part(&b, "min")
        .get(f)
        .cloned()
        .unwrap_or_else(|| panic!("control.min.{f}: {b}"));
    let max = control_part(&b, "max")
        .get(f)
        .cloned()
        .unwrap_or_else(|| panic!("control.max.{f}: {b}"));
    (min, max)
}

/// Value equality that also requires the same BSON types at every depth (Bson's `==` already
/// distinguishes types; documents compare by field set and order).
fn assert_same(actual: &Bson, expected: &Bson) {
    assert_eq!(
        actual, expected,
        "\n actual:   {actual}\n expected: {expected}"
    );
}

// ---- R-4.3.1 ------------------------------------------------------------------------------

#[test]
fn r_4_3_1_min_time_is_rounded_and_max_time_is_exact_latest() {
    let (_d, _db, coll) = setup();
    insert_each(
        &coll,
        &[
            doc! { "t": at(25_500), "m": 1 },
            doc! { "t": at(40_123), "m": 1 },
            // Earlier than the first: max stays, min stays the rounded time.
            doc! { "t": at(5_000), "m": 1 },
        ],
    );
    let (min, max) = min_max(&coll, "t");
    assert_same(&min, &Bson::DateTime(DateTime::from_millis(T0)));
    assert_same(&max, &Bson::DateTime(at(40_123)));
}

#[test]
fn r_4_3_1_min_time_with_hours_granularity_is_the_day() {
    let (_d, _db, coll) = setup_with(
        &TimeseriesOptions::new("t")
            .meta_field("m")
            .granularity(Granularity::Hours),
    );
    insert_each(&coll, &[doc! { "t": at(0), "m": 1 }]);
    let (min, max) = min_max(&coll, "t");
    assert_same(
        &min,
        &Bson::DateTime(DateTime::from_millis(T0.div_euclid(DAY) * DAY)),
    );
    assert_same(&max, &Bson::DateTime(at(0)));
}

#[test]
fn r_4_3_1_min_time_with_custom_rounding() {
    let (_d, _db, coll) = setup_with(&TimeseriesOptions::new("t").bucket_seconds(7_200, 7_200));
    insert_each(&coll, &[doc! { "t": at(0) }]);
    let (min, _) = min_max(&coll, "t");
    assert_same(
        &min,
        &Bson::DateTime(DateTime::from_millis(T0.div_euclid(7_200_000) * 7_200_000)),
    );
}

#[test]
fn r_1_3_1_rounding_before_1970_is_toward_negative_infinity() {
    let (_d, _db, coll) = setup();
    insert_each(
        &coll,
        &[doc! { "t": DateTime::from_millis(-1_500), "m": 1 }],
    );
    let (min, max) = min_max(&coll, "t");
    assert_same(&min, &Bson::DateTime(DateTime::from_millis(-60_000)));
    assert_same(&max, &Bson::DateTime(DateTime::from_millis(-1_500)));
}

// ---- R-4.3.2 ------------------------------------------------------------------------------

#[test]
fn r_4_3_2_sparse_fields_only_count_where_present() {
    let (_d, _db, coll) = setup();
    insert_each(
        &coll,
        &[
            doc! { "t": at(0), "m": 1, "x": 5 },
            doc! { "t": at(1_000), "m": 1, "y": 1 },
            doc! { "t": at(2_000), "m": 1, "x": 3, "y": 7 },
            doc! { "t": at(3_000), "m": 1 },
        ],
    );
    assert_eq!(min_max(&coll, "x"), (Bson::Int32(3), Bson::Int32(5)));
    assert_eq!(min_max(&coll, "y"), (Bson::Int32(1), Bson::Int32(7)));
}

#[test]
fn r_4_3_2_id_takes_part_in_min_max() {
    let (_d, _db, coll) = setup();
    let a = ObjectId::from_bytes([1; 12]);
    let b = ObjectId::from_bytes([2; 12]);
    insert_each(
        &coll,
        &[
            doc! { "_id": b, "t": at(0), "m": 1 },
            doc! { "_id": a, "t": at(1_000), "m": 1 },
        ],
    );
    assert_eq!(
        min_max(&coll, "_id"),
        (Bson::ObjectId(a), Bson::ObjectId(b))
    );
}

#[test]
fn r_4_3_2_generated_id_is_in_control() {
    let (_d, _db, coll) = setup();
    insert_each(&coll, &[doc! { "t": at(0), "m": 1 }]);
    let (min, max) = min_max(&coll, "_id");
    assert!(matches!(min, Bson::ObjectId(_)), "{min}");
    assert_eq!(min, max);
}

#[test]
fn r_4_3_2_strings_compare_binary() {
    let (_d, _db, coll) = setup();
    insert_each(
        &coll,
        &[
            doc! { "t": at(0), "m": 1, "s": "b" },
            doc! { "t": at(1_000), "m": 1, "s": "B" },
            doc! { "t": at(2_000), "m": 1, "s": "ab" },
        ],
    );
    assert_eq!(
        min_max(&coll, "s"),
        (Bson::String("B".into()), Bson::String("b".into()))
    );
}

// ---- R-4.3.3 ------------------------------------------------------------------------------

#[test]
fn r_4_3_3_objects_and_arrays_are_summarized_element_wise() {
    let (_d, _db, coll) = setup();
    insert_each(
        &coll,
        &[
            doc! { "t": at(0), "m": 1, "a": { "x": 1, "y": 2 }, "b": [1, 2] },
            doc! { "t": at(1_000), "m": 1, "a": { "x": 2, "y": 1 }, "b": [2, 1] },
        ],
    );
    let (amin, amax) = min_max(&coll, "a");
    assert_same(&amin, &Bson::Document(doc! { "x": 1, "y": 1 }));
    assert_same(&amax, &Bson::Document(doc! { "x": 2, "y": 2 }));
    let (bmin, bmax) = min_max(&coll, "b");
    assert_same(&bmin, &Bson::Array(vec![Bson::Int32(1), Bson::Int32(1)]));
    assert_same(&bmax, &Bson::Array(vec![Bson::Int32(2), Bson::Int32(2)]));
}

#[test]
fn r_4_3_3_longer_array_adds_positions() {
    let (_d, _db, coll) = setup();
    insert_each(
        &coll,
        &[
            doc! { "t": at(0), "m": 1, "b": [{ "x": 3, "y": 4 }] },
            doc! { "t": at(1_000), "m": 1, "b": [{ "x": 4, "y": 3 }, 3, 1] },
        ],
    );
    let (bmin, bmax) = min_max(&coll, "b");
    assert_same(
        &bmin,
        &Bson::Array(vec![
            Bson::Document(doc! { "x": 3, "y": 3 }),
            Bson::Int32(3),
            Bson::Int32(1),
        ]),
    );
    assert_same(
        &bmax,
        &Bson::Array(vec![
            Bson::Document(doc! { "x": 4, "y": 4 }),
            Bson::Int32(3),
            Bson::Int32(1),
        ]),
    );
}

#[test]
fn r_4_3_3_empty_containers_count_and_fill_in() {
    let (_d, _db, coll) = setup();
    insert_each(&coll, &[doc! { "t": at(0), "m": 1, "a": {}, "l": [] }]);
    let (amin, amax) = min_max(&coll, "a");
    assert_same(&amin, &Bson::Document(doc! {}));
    assert_same(&amax, &Bson::Document(doc! {}));
    let (lmin, lmax) = min_max(&coll, "l");
    assert_same(&lmin, &Bson::Array(vec![]));
    assert_same(&lmax, &Bson::Array(vec![]));
    insert_each(
        &coll,
        &[doc! { "t": at(1_000), "m": 1, "a": { "x": { "y": 1 } }, "l": [5] }],
    );
    let (amin, amax) = min_max(&coll, "a");
    assert_same(&amin, &Bson::Document(doc! { "x": { "y": 1 } }));
    assert_same(&amax, &Bson::Document(doc! { "x": { "y": 1 } }));
    let (lmin, lmax) = min_max(&coll, "l");
    assert_same(&lmin, &Bson::Array(vec![Bson::Int32(5)]));
    assert_same(&lmax, &Bson::Array(vec![Bson::Int32(5)]));
}

#[test]
fn r_4_3_3_sub_object_field_order_does_not_matter() {
    let (_d, _db, coll) = setup();
    insert_each(
        &coll,
        &[
            doc! { "t": at(0), "m": 1, "a": { "x": 1, "y": 5 } },
            doc! { "t": at(1_000), "m": 1, "a": { "y": 2, "x": 9 } },
        ],
    );
    let (amin, amax) = min_max(&coll, "a");
    let amin = amin.as_document().expect("object").clone();
    let amax = amax.as_document().expect("object").clone();
    assert_eq!(
        (amin.get("x"), amin.get("y")),
        (Some(&Bson::Int32(1)), Some(&Bson::Int32(2)))
    );
    assert_eq!(
        (amax.get("x"), amax.get("y")),
        (Some(&Bson::Int32(9)), Some(&Bson::Int32(5)))
    );
}

// ---- R-4.3.4 ------------------------------------------------------------------------------

#[test]
fn r_4_3_4_numbers_compare_across_types_first_writer_wins_ties() {
    let (_d, _db, coll) = setup();
    let dec = |s: &str| Bson::Decimal128(Decimal128::from_str(s).expect("decimal"));
    let steps = [
        (Bson::Double(1.5), Bson::Double(1.5), Bson::Double(1.5)),
        (Bson::Int64(2), Bson::Double(1.5), Bson::Int64(2)),
        (Bson::Int32(1), Bson::Int32(1), Bson::Int64(2)),
        (dec("2.5"), Bson::Int32(1), dec("2.5")),
        (Bson::Double(0.5), Bson::Double(0.5), dec("2.5")),
        // Ties keep the existing value.
        (Bson::Double(0.5), Bson::Double(0.5), dec("2.5")),
        (dec("0.50"), Bson::Double(0.5), dec("2.5")),
        (Bson::Double(2.5), Bson::Double(0.5), dec("2.5")),
    ];
    for (i, (v, emin, emax)) in steps.into_iter().enumerate() {
        insert_each(
            &coll,
            &[doc! { "t": at(i as i64 * 1_000), "m": 1, "n": v.clone() }],
        );
        let (min, max) = min_max(&coll, "n");
        assert_same(&min, &emin);
        assert_same(&max, &emax);
    }
}

// ---- §4.5, R-4.9.1 ------------------------------------------------------------------------

#[test]
fn r_4_5_control_count_is_the_number_of_measurements() {
    let (_d, _db, coll) = setup();
    let docs: Vec<Document> = (0..17)
        .map(|i| doc! { "t": at(i * 1_000), "m": 1 })
        .collect();
    let r = coll
        .insert_many(&docs, &InsertOptions::default())
        .expect("insert");
    assert_eq!(r.inserted, 17);
    insert_each(&coll, &[doc! { "t": at(20_000), "m": 1 }]);
    let b = only_bucket(&coll);
    assert_eq!(
        b.get_document("control")
            .and_then(|c| c.get_i64("count"))
            .ok(),
        Some(18)
    );
    // Every row has a time (§4.8).
    assert_eq!(
        b.get_document("data")
            .and_then(|d| d.get_document("t"))
            .map(Document::len)
            .ok(),
        Some(18)
    );
}

#[test]
fn r_4_9_1_bucket_id_timestamp_is_min_time_in_seconds() {
    for opts in [
        TimeseriesOptions::new("t").meta_field("m"),
        TimeseriesOptions::new("t")
            .meta_field("m")
            .granularity(Granularity::Minutes),
        TimeseriesOptions::new("t")
            .meta_field("m")
            .granularity(Granularity::Hours),
        TimeseriesOptions::new("t")
            .meta_field("m")
            .bucket_seconds(7, 7),
    ] {
        let (_d, _db, coll) = setup_with(&opts);
        insert_each(
            &coll,
            &[
                doc! { "t": at(12_345), "m": 1 },
                doc! { "t": at(3 * DAY + 77_777), "m": 1 },
                doc! { "t": at(40 * DAY + 1), "m": 2 },
                doc! { "t": at(100 * DAY + 999), "m": 2 },
            ],
        );
        let buckets = coll.buckets().expect("buckets");
        assert!(buckets.len() >= 2, "{opts:?}");
        for b in &buckets {
            let Some(Bson::ObjectId(id)) = b.get("_id") else {
                panic!("bucket _id is not an ObjectId: {b}")
            };
            let min = control_part(b, "min")
                .get_datetime("t")
                .expect("min.t")
                .timestamp_millis();
            let id_seconds = i64::from(u32::from_be_bytes(
                id.bytes()[..4].try_into().expect("4 bytes"),
            ));
            assert_eq!(id_seconds * 1_000, min, "{opts:?}: {b}");
            assert_eq!(id.timestamp().timestamp_millis(), min);
        }
        // Distinct buckets in the same rounded second get distinct ids.
        let mut ids: Vec<_> = buckets
            .iter()
            .map(|b| b.get_object_id("_id").expect("_id"))
            .collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), buckets.len());
    }
}

#[test]
fn r_4_9_2_same_second_buckets_have_distinct_ids() {
    let (_d, _db, coll) = setup();
    let docs: Vec<Document> = (0..50).map(|i| doc! { "t": at(0), "m": i }).collect();
    coll.insert_many(&docs, &InsertOptions::default())
        .expect("insert");
    let buckets = coll.buckets().expect("buckets");
    assert_eq!(buckets.len(), 50);
    let mut ids: Vec<_> = buckets
        .iter()
        .map(|b| b.get_object_id("_id").expect("_id"))
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 50);
    for id in ids {
        assert_eq!(id.timestamp().timestamp_millis(), T0);
    }
}

#[test]
fn r_4_1_bucket_document_shape() {
    let (_d, _db, coll) = setup();
    insert_each(&coll, &[doc! { "t": at(0), "m": "s", "x": 1 }]);
    let b = only_bucket(&coll);
    let keys: Vec<&str> = b.keys().map(String::as_str).collect();
    assert_eq!(keys, ["_id", "control", "meta", "data"]);
    let control = b.get_document("control").expect("control");
    assert!(
        !control.contains_key("closed"),
        "R-4.6: tscoll never sets closed: {control}"
    );
    assert_eq!(control.get_i32("version").ok(), Some(2));
    assert_eq!(b.get("meta"), Some(&Bson::String("s".into())));
}

// ---- extended range ----------------------------------------------------------------

fn find_times(coll: &Collection, filter: Document) -> Vec<i64> {
    let opts = tscoll_engine::FindOptions {
        sort: Some(tscoll_engine::SortOrder::Ascending),
        ..Default::default()
    };
    coll.find(&filter, &opts)
        .expect("find")
        .iter()
        .map(|d| d.get_datetime("t").expect("t").timestamp_millis())
        .collect()
}

#[test]
fn r_4_9_4_dates_outside_the_32_bit_timestamp_are_accepted_and_found() {
    let (_d, _db, coll) = setup();
    let y1900 = -2_208_988_800_000_i64;
    let y2500 = 16_725_225_600_000_i64;
    let times = [y1900, -1, 0, T0, 2_147_483_648_000, y2500];
    for t in times {
        insert_each(&coll, &[doc! { "t": DateTime::from_millis(t), "m": 1 }]);
    }
    assert_eq!(find_times(&coll, doc! {}), times);
    assert_eq!(
        find_times(&coll, doc! { "t": { "$lt": DateTime::from_millis(0) } }),
        [y1900, -1]
    );
    assert_eq!(
        find_times(
            &coll,
            doc! { "t": { "$gte": DateTime::from_millis(2_147_483_648_000) } }
        ),
        [2_147_483_648_000, y2500]
    );
    assert_eq!(
        find_times(&coll, doc! { "t": DateTime::from_millis(y2500) }),
        [y2500]
    );
    assert_eq!(
        find_times(
            &coll,
            doc! { "t": { "$lte": DateTime::from_millis(y1900) } }
        ),
        [y1900]
    );
    // control.min.t is still the rounded time.
    let mins: Vec<i64> = coll
        .buckets()
        .expect("buckets")
        .iter()
        .map(|b| {
            control_part(b, "min")
                .get_datetime("t")
                .expect("min.t")
                .timestamp_millis()
        })
        .collect();
    assert!(
        mins.contains(&y1900) && mins.contains(&-60_000) && mins.contains(&y2500),
        "{mins:?}"
    );
}

fn insert_extreme(coll: &Collection, t: DateTime) {
    let r = coll
        .insert_many(&[doc! { "t": t, "m": 1 }], &InsertOptions::default())
        .expect("insert");
    assert_eq!(
        (r.inserted, r.errors.len()),
        (1, 0),
        "{t:?}: {:?}",
        r.errors
    );
}

#[test]
fn r_4_9_4_minimum_date_is_accepted_and_found() {
    let (_d, _db, coll) = setup();
    insert_extreme(&coll, DateTime::MIN);
    insert_extreme(&coll, DateTime::from_millis(0));
    assert_eq!(find_times(&coll, doc! {}), [i64::MIN, 0]);
    assert_eq!(
        find_times(&coll, doc! { "t": { "$lt": DateTime::from_millis(0) } }),
        [i64::MIN]
    );
    assert_eq!(find_times(&coll, doc! { "t": DateTime::MIN }), [i64::MIN]);
}

#[test]
fn r_4_9_4_maximum_date_is_accepted_and_found() {
    let (_d, _db, coll) = setup();
    insert_extreme(&coll, DateTime::from_millis(0));
    insert_extreme(&coll, DateTime::MAX);
    assert_eq!(find_times(&coll, doc! {}), [0, i64::MAX]);
    assert_eq!(
        find_times(&coll, doc! { "t": { "$gte": DateTime::from_millis(1) } }),
        [i64::MAX]
    );
    assert_eq!(
        find_times(
            &coll,
            doc! { "t": { "$gt": DateTime::from_millis(i64::MAX - 1) } }
        ),
        [i64::MAX]
    );
    assert_eq!(find_times(&coll, doc! { "t": DateTime::MAX }), [i64::MAX]);
    assert_eq!(
        find_times(&coll, doc! { "t": { "$lte": DateTime::MAX } }),
        [0, i64::MAX]
    );
    assert_eq!(
        find_times(&coll, doc! { "t": { "$lt": DateTime::from_millis(1) } }),
        [0]
    );
}
