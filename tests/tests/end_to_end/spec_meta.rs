//! SPEC §3 conformance: meta normalization, series equality, stored form
//! queries on meta and collections without a metaField.

use bson::{Bson, Decimal128, Document, doc};
use tscoll_engine::{CatalogOptions, Collection, Database};
use tscoll_tests::spec::{at, find_sorted as find, insert_each, options, temp_collection};

fn setup(meta: bool) -> (tempfile::TempDir, Database, Collection) {
    temp_collection(CatalogOptions::default(), &options(meta))
}

fn bucket_count(coll: &Collection) -> u64 {
    coll.stats().expect("stats").bucket_count
}

/// Field names of a document, in order, at every depth (objects only), as `a`, `a.b`, ...
fn key_paths(d: &Document, prefix: &str, out: &mut Vec<String>) {
    for (k, v) in d {
        let p = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        out.push(p.clone());
        if let Bson::Document(sub) = v {
            key_paths(sub, &p, out);
        }
    }
}

fn paths(v: &Bson) -> Vec<String> {
    let mut out = Vec::new();
    if let Bson::Document(d) = v {
        key_paths(d, "", &mut out);
    }
    out
}

// ---- R-3.1 / R-3.2 -----------------------------------------------------------------------

#[test]
fn r_3_2_field_order_of_meta_objects_does_not_split_series() {
    let (_d, _db, coll) = setup(true);
    insert_each(
        &coll,
        &[
            doc! { "t": at(0), "m": { "a": 1, "b": 1 } },
            doc! { "t": at(1_000), "m": { "b": 1, "a": 1 } },
        ],
    );
    assert_eq!(bucket_count(&coll), 1);
    let s = coll.stats().expect("stats");
    assert_eq!(s.execution.num_buckets_opened_due_to_metadata, 1);
    assert_eq!(s.measurement_count, 2);
}

#[test]
fn r_3_1_nested_objects_are_normalized_at_every_depth() {
    let (_d, _db, coll) = setup(true);
    insert_each(
        &coll,
        &[
            doc! { "t": at(0), "m": { "c": 1, "b": { "f": true, "d": 0 } } },
            doc! { "t": at(1_000), "m": { "b": { "d": 0, "f": true }, "c": 1 } },
            doc! { "t": at(2_000), "m": { "b": { "f": true, "d": 0 }, "c": 1 } },
            // Objects inside arrays are normalized too.
            doc! { "t": at(3_000), "m": { "l": [{ "y": 1, "x": 2 }] } },
            doc! { "t": at(4_000), "m": { "l": [{ "x": 2, "y": 1 }] } },
        ],
    );
    assert_eq!(bucket_count(&coll), 2);
}

#[test]
fn r_3_2_array_order_splits_series() {
    let (_d, _db, coll) = setup(true);
    insert_each(
        &coll,
        &[
            doc! { "t": at(0), "m": { "a": [1, 2, 3] } },
            doc! { "t": at(1_000), "m": { "a": [2, 1, 3] } },
        ],
    );
    assert_eq!(bucket_count(&coll), 2);
}

#[test]
fn r_3_2_null_missing_zero_double_int_long_are_distinct_series() {
    let (_d, _db, coll) = setup(true);
    insert_each(
        &coll,
        &[
            doc! { "t": at(0), "m": Bson::Null },
            doc! { "t": at(1_000) },
            doc! { "t": at(2_000), "m": 0_i32 },
            doc! { "t": at(3_000), "m": 1.0_f64 },
            doc! { "t": at(4_000), "m": 1_i32 },
            doc! { "t": at(5_000), "m": 1_i64 },
        ],
    );
    assert_eq!(bucket_count(&coll), 6);
    let s = coll.stats().expect("stats");
    assert_eq!(s.execution.num_buckets_opened_due_to_metadata, 6);
    // And again: every value finds its own series.
    insert_each(
        &coll,
        &[
            doc! { "t": at(10_000), "m": Bson::Null },
            doc! { "t": at(11_000) },
            doc! { "t": at(12_000), "m": 0_i32 },
            doc! { "t": at(13_000), "m": 1.0_f64 },
            doc! { "t": at(14_000), "m": 1_i32 },
            doc! { "t": at(15_000), "m": 1_i64 },
        ],
    );
    assert_eq!(bucket_count(&coll), 6);
    for b in coll.buckets().expect("buckets") {
        assert_eq!(
            b.get_document("control")
                .expect("control")
                .get_i64("count")
                .ok(),
            Some(2),
            "{b}"
        );
    }
}

#[test]
fn r_3_2_zero_and_negative_zero_are_distinct_series() {
    let (_d, _db, coll) = setup(true);
    insert_each(
        &coll,
        &[
            doc! { "t": at(0), "m": 0.0_f64 },
            doc! { "t": at(1_000), "m": -0.0_f64 },
        ],
    );
    assert_eq!(bucket_count(&coll), 2);
}

#[test]
fn r_3_2_numbers_inside_objects_are_compared_by_type() {
    let (_d, _db, coll) = setup(true);
    insert_each(
        &coll,
        &[
            doc! { "t": at(0), "m": { "a": 1_i32 } },
            doc! { "t": at(1_000), "m": { "a": 1.0_f64 } },
            doc! { "t": at(2_000), "m": { "a": Decimal128::from_bytes([0; 16]) } },
        ],
    );
    assert_eq!(bucket_count(&coll), 3);
}

#[test]
fn r_3_2_strings_compare_by_bytes() {
    let (_d, _db, coll) = setup(true);
    insert_each(
        &coll,
        &[
            doc! { "t": at(0), "m": "a" },
            doc! { "t": at(1_000), "m": "A" },
            doc! { "t": at(2_000), "m": "a" },
        ],
    );
    assert_eq!(bucket_count(&coll), 2);
}

// ---- R-3.3 -------------------------------------------------------------------------------

#[test]
fn r_3_3_stored_and_returned_meta_is_normalized() {
    let (_d, _db, coll) = setup(true);
    insert_each(
        &coll,
        &[
            doc! { "t": at(0), "m": { "c": 1, "b": { "f": true, "d": 0 }, "a": [{ "z": 1, "y": 2 }] } },
        ],
    );
    let expected = ["a", "b", "b.d", "b.f", "c"];
    let buckets = coll.buckets().expect("buckets");
    assert_eq!(buckets.len(), 1);
    let meta = buckets[0].get("meta").expect("bucket meta");
    assert_eq!(paths(meta), expected, "{meta}");
    let arr = meta
        .as_document()
        .and_then(|d| d.get_array("a").ok())
        .expect("array");
    assert_eq!(
        paths(&arr[0]),
        ["y", "z"],
        "objects in arrays are normalized"
    );
    let found = find(&coll, doc! {});
    assert_eq!(found.len(), 1);
    let m = found[0].get("m").expect("meta in result");
    assert_eq!(paths(m), expected, "{m}");
    assert_eq!(m, meta);
}

#[test]
fn r_3_3_scalars_are_not_converted() {
    let (_d, _db, coll) = setup(true);
    insert_each(
        &coll,
        &[doc! { "t": at(0), "m": { "i": 1_i32, "l": 2_i64, "d": 3.0 } }],
    );
    let found = find(&coll, doc! {});
    let m = found[0].get_document("m").expect("m");
    assert_eq!(m.get("i"), Some(&Bson::Int32(1)));
    assert_eq!(m.get("l"), Some(&Bson::Int64(2)));
    assert_eq!(m.get("d"), Some(&Bson::Double(3.0)));
}

#[test]
fn r_4_7_no_meta_series_bucket_has_no_meta_field_but_null_has() {
    let (_d, _db, coll) = setup(true);
    insert_each(
        &coll,
        &[
            doc! { "t": at(0), "x": 1 },
            doc! { "t": at(1_000), "m": Bson::Null, "x": 2 },
        ],
    );
    let buckets = coll.buckets().expect("buckets");
    assert_eq!(buckets.len(), 2);
    let with_meta: Vec<Option<&Bson>> = buckets.iter().map(|b| b.get("meta")).collect();
    assert_eq!(
        with_meta.iter().filter(|m| m.is_none()).count(),
        1,
        "{buckets:?}"
    );
    assert_eq!(
        with_meta
            .iter()
            .filter(|m| **m == Some(&Bson::Null))
            .count(),
        1,
        "{buckets:?}"
    );
    // results carry the meta field whenever the bucket has one, null included.
    let found = find(&coll, doc! {});
    assert!(!found[0].contains_key("m"), "{}", found[0]);
    assert_eq!(found[1].get("m"), Some(&Bson::Null), "{}", found[1]);
}

// ---- R-3.4 -------------------------------------------------------------------------------

#[test]
fn r_3_4_whole_meta_equality_is_field_order_sensitive() {
    let (_d, _db, coll) = setup(true);
    insert_each(
        &coll,
        &[
            doc! { "t": at(0), "m": { "b": 1, "a": 1 }, "x": 1 },
            doc! { "t": at(1_000), "m": { "a": 1, "b": 1 }, "x": 2 },
        ],
    );
    // Stored normalized as {a:1, b:1}: only that order matches.
    assert_eq!(find(&coll, doc! { "m": { "a": 1, "b": 1 } }).len(), 2);
    assert_eq!(find(&coll, doc! { "m": { "b": 1, "a": 1 } }).len(), 0);
}

#[test]
fn r_3_4_sub_field_filters_work() {
    let (_d, _db, coll) = setup(true);
    insert_each(
        &coll,
        &[
            doc! { "t": at(0), "m": { "b": 1, "a": 1 }, "x": 1 },
            doc! { "t": at(1_000), "m": { "a": 2, "b": 1 }, "x": 2 },
            doc! { "t": at(2_000), "m": { "a": 1, "b": 3 }, "x": 3 },
        ],
    );
    let xs = |f: Document| {
        find(&coll, f)
            .iter()
            .map(|d| d.get_i32("x").expect("x"))
            .collect::<Vec<_>>()
    };
    assert_eq!(xs(doc! { "m.a": 1 }), [1, 3]);
    assert_eq!(xs(doc! { "m.b": 1 }), [1, 2]);
    assert_eq!(xs(doc! { "m.a": 1, "m.b": 3 }), [3]);
    assert_eq!(xs(doc! { "m.a": 5 }), Vec::<i32>::new());
}

#[test]
fn r_3_4_scalar_meta_equality() {
    let (_d, _db, coll) = setup(true);
    insert_each(
        &coll,
        &[
            doc! { "t": at(0), "m": "s1", "x": 1 },
            doc! { "t": at(1_000), "m": "s2", "x": 2 },
            doc! { "t": at(2_000), "m": "s1", "x": 3 },
        ],
    );
    let xs: Vec<i32> = find(&coll, doc! { "m": "s1" })
        .iter()
        .map(|d| d.get_i32("x").expect("x"))
        .collect();
    assert_eq!(xs, [1, 3]);
}

// ---- R-3.5 -------------------------------------------------------------------------------

#[test]
fn r_3_5_without_meta_field_a_field_named_like_meta_is_data() {
    let (_d, _db, coll) = setup(false);
    insert_each(
        &coll,
        &[
            doc! { "t": at(0), "m": "a", "meta": 1 },
            doc! { "t": at(1_000), "m": "b", "meta": 2 },
            doc! { "t": at(2_000), "m": "c", "meta": 3, "o": { "y": 1, "x": 2 } },
        ],
    );
    assert_eq!(bucket_count(&coll), 1, "one series without a metaField");
    let buckets = coll.buckets().expect("buckets");
    let b = &buckets[0];
    assert!(!b.contains_key("meta"), "{b}");
    let data = b.get_document("data").expect("data");
    assert!(
        data.contains_key("m") && data.contains_key("meta"),
        "{data}"
    );
    let min = b
        .get_document("control")
        .and_then(|c| c.get_document("min"))
        .expect("control.min");
    assert!(min.contains_key("m"), "{min}");
    let found = find(&coll, doc! {});
    assert_eq!(found.len(), 3);
    // A data field keeps its field order (not normalized).
    assert_eq!(paths(found[2].get("o").expect("o")), ["y", "x"]);
    let ms: Vec<&str> = found.iter().map(|d| d.get_str("m").expect("m")).collect();
    assert_eq!(ms, ["a", "b", "c"]);
}

#[test]
fn r_4_3_8_meta_never_in_control_or_data() {
    let (_d, _db, coll) = setup(true);
    insert_each(&coll, &[doc! { "t": at(0), "m": { "k": 1 }, "x": 1 }]);
    let b = &coll.buckets().expect("buckets")[0];
    let control = b.get_document("control").expect("control");
    for part in ["min", "max"] {
        assert!(
            !control.get_document(part).expect(part).contains_key("m"),
            "{b}"
        );
    }
    assert!(
        !b.get_document("data").expect("data").contains_key("m"),
        "{b}"
    );
}
