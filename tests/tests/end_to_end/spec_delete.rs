//! SPEC §11.1 conformance: deletes with 7.0+ semantics. Meta-only filters remove whole
//! buckets; other filters rewrite a bucket under the same `_id` keeping its `control.min`
//! time; empty buckets are removed; the result counts measurements; affected buckets are
//! cleared from the catalog.

use bson::{Bson, DateTime, Document, doc, oid::ObjectId};
use tscoll_engine::{CatalogOptions, Collection};
use tscoll_tests::spec::{
    T0, at, bucket_counts, find_sorted, insert_all, options, temp_collection,
};

const MINUTE: i64 = 60_000;
const HOUR: i64 = 60 * MINUTE;

fn m(meta: &str, t: DateTime, v: i32) -> Document {
    doc! { "t": t, "m": meta, "v": v }
}

fn values(coll: &Collection, filter: Document) -> Vec<i32> {
    find_sorted(coll, filter)
        .iter()
        .map(|d| d.get_i32("v").expect("v"))
        .collect()
}

/// `(_id, control)` of every stored bucket.
fn buckets(coll: &Collection) -> Vec<(ObjectId, Document)> {
    coll.buckets()
        .expect("buckets")
        .into_iter()
        .map(|b| {
            (
                b.get_object_id("_id").expect("_id"),
                b.get_document("control").expect("control").clone(),
            )
        })
        .collect()
}

/// Series `a` in two buckets (3 + 2 measurements), series `b` in one (2).
fn two_series(coll: &Collection) {
    insert_all(
        coll,
        &[
            m("a", at(0), 1),
            m("a", at(MINUTE), 2),
            m("a", at(2 * MINUTE), 3),
            m("a", at(2 * HOUR), 4),
            m("a", at(2 * HOUR + MINUTE), 5),
            m("b", at(0), 6),
            m("b", at(MINUTE), 7),
        ],
    );
}

#[test]
fn r_11_1_meta_only_filter_deletes_whole_buckets() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    two_series(&coll);
    let r = coll.delete_many(&doc! { "m": "a" }).expect("delete");
    assert_eq!(
        (r.deleted, r.buckets_removed, r.buckets_rewritten),
        (5, 2, 0)
    );
    assert_eq!(values(&coll, doc! {}), [6, 7]);
    assert_eq!(bucket_counts(&coll), [2]);
}

#[test]
fn r_11_1_meta_in_and_sub_field_filters_delete_whole_buckets() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    let docs: Vec<Document> = ["x", "y", "z"]
        .iter()
        .enumerate()
        .map(|(i, s)| {
            doc! { "t": at(0), "m": { "site": *s, "rack": 1 }, "v": i32::try_from(i).expect("small") }
        })
        .collect();
    insert_all(&coll, &docs);
    let r = coll
        .delete_many(&doc! { "m.site": { "$in": ["x", "z"] } })
        .expect("delete");
    assert_eq!((r.deleted, r.buckets_removed), (2, 2));
    assert_eq!(values(&coll, doc! {}), [1]);
}

#[test]
fn r_11_1_other_filters_rewrite_the_bucket_under_the_same_id() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    // Ten measurements in one bucket; the first at T0 + 5 s, so control.min.t is T0 (rounded).
    let docs: Vec<Document> = (0..10)
        .map(|i| m("a", at(5_000 + i64::from(i) * MINUTE), i))
        .collect();
    insert_all(&coll, &docs);
    let before = buckets(&coll);
    assert_eq!(before.len(), 1);
    let r = coll
        .delete_many(&doc! { "v": { "$lt": 3 } })
        .expect("delete");
    assert_eq!(
        (r.deleted, r.buckets_removed, r.buckets_rewritten),
        (3, 0, 1)
    );
    let after = buckets(&coll);
    assert_eq!(after.len(), 1);
    let (id, control) = &after[0];
    assert_eq!(*id, before[0].0, "same bucket _id");
    let min = control.get_document("min").expect("min");
    let max = control.get_document("max").expect("max");
    // The min time is kept (SPEC §11.1 [master]), not recomputed from the remaining rows.
    assert_eq!(
        min.get_datetime("t").expect("t"),
        &DateTime::from_millis(T0)
    );
    assert_eq!(
        min.get("t"),
        before[0].1.get_document("min").expect("min").get("t")
    );
    // Other entries are recomputed from the remaining measurements.
    assert_eq!(min.get_i32("v").expect("v"), 3);
    assert_eq!(max.get_i32("v").expect("v"), 9);
    assert_eq!(
        max.get_datetime("t").expect("t"),
        &DateTime::from_millis(T0 + 5_000 + 9 * MINUTE)
    );
    assert_eq!(control.get_i64("count").expect("count"), 7);
    assert_eq!(values(&coll, doc! {}), (3..10).collect::<Vec<_>>());
}

#[test]
fn r_11_1_a_bucket_left_empty_is_removed_and_n_counts_measurements() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    two_series(&coll);
    // Matches all of series a's first bucket, one of b's, none of a's second.
    let r = coll
        .delete_many(&doc! { "t": { "$lt": at(MINUTE) } })
        .expect("delete");
    assert_eq!(r.deleted, 2);
    let r = coll
        .delete_many(&doc! { "v": { "$lte": 3 } })
        .expect("delete");
    assert_eq!(
        (r.deleted, r.buckets_removed, r.buckets_rewritten),
        (2, 1, 0)
    );
    assert_eq!(values(&coll, doc! {}), [7, 4, 5]);
    assert_eq!(bucket_counts(&coll), [1, 2]);
}

#[test]
fn r_11_1_fields_no_longer_present_leave_control() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    insert_all(
        &coll,
        &[
            doc! { "t": at(0), "m": "a", "v": 1, "extra": "x" },
            doc! { "t": at(MINUTE), "m": "a", "v": 2 },
        ],
    );
    coll.delete_many(&doc! { "v": 1 }).expect("delete");
    let (_, control) = &buckets(&coll)[0];
    assert!(
        !control
            .get_document("min")
            .expect("min")
            .contains_key("extra")
    );
    let left = find_sorted(&coll, doc! {});
    assert_eq!(left.len(), 1);
    assert!(!left[0].contains_key("extra"));
}

#[test]
fn r_11_1_delete_one_removes_a_single_measurement() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    two_series(&coll);
    let r = coll
        .delete_one(&doc! { "v": { "$gte": 2 } })
        .expect("delete");
    assert_eq!(r.deleted, 1);
    let left = values(&coll, doc! {});
    assert_eq!(left.len(), 6);
    let b_before = values(&coll, doc! { "m": "b" }).len();
    let r = coll.delete_one(&doc! { "m": "b" }).expect("delete");
    assert_eq!(r.deleted, 1);
    assert_eq!(values(&coll, doc! { "m": "b" }).len(), b_before - 1);
    assert_eq!(values(&coll, doc! {}).len(), 5);
    let r = coll.delete_one(&doc! { "v": 100 }).expect("delete");
    assert_eq!(r.deleted, 0);
}

#[test]
fn r_11_1_deleted_rows_keep_the_others_intact() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    let docs: Vec<Document> = (0..200)
        .map(|i| {
            let mut d = m(
                if i % 3 == 0 { "a" } else { "b" },
                at(i64::from(i) * 30_000),
                i,
            );
            d.insert("_id", i);
            if i % 4 == 0 {
                d.insert("f", f64::from(i) / 2.0);
            }
            d
        })
        .collect();
    insert_all(&coll, &docs);
    let before = find_sorted(&coll, doc! {});
    coll.delete_many(&doc! { "v": { "$gte": 50, "$lt": 120 } })
        .expect("delete");
    let expected: Vec<&Document> = before
        .iter()
        .filter(|d| !(50..120).contains(&d.get_i32("v").expect("v")))
        .collect();
    let after = find_sorted(&coll, doc! {});
    assert_eq!(after.len(), expected.len());
    for (a, e) in after.iter().zip(expected) {
        assert_eq!(a, e);
    }
    // Every bucket's control.count matches its rows and min/max bound them.
    for b in coll.buckets().expect("buckets") {
        let control = b.get_document("control").expect("control");
        let rows = b
            .get_document("data")
            .expect("data")
            .get_document("v")
            .expect("v");
        assert_eq!(control.get_i64("count").expect("count"), rows.len() as i64);
        let vs: Vec<i32> = rows.values().map(|v| v.as_i32().expect("i32")).collect();
        let min = control.get_document("min").expect("min");
        let max = control.get_document("max").expect("max");
        assert_eq!(
            min.get("v"),
            vs.iter().min().map(|v| Bson::Int32(*v)).as_ref()
        );
        assert_eq!(
            max.get("v"),
            vs.iter().max().map(|v| Bson::Int32(*v)).as_ref()
        );
    }
}

#[test]
fn r_7_4_1_inserts_after_a_delete_of_an_open_bucket_lose_nothing() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    insert_all(
        &coll,
        &[
            m("a", at(0), 1),
            m("a", at(MINUTE), 2),
            m("a", at(2 * MINUTE), 3),
        ],
    );
    // The bucket is open; a rewrite clears it from the catalog first.
    coll.delete_many(&doc! { "v": 2 }).expect("delete");
    insert_all(&coll, &[m("a", at(3 * MINUTE), 4)]);
    assert_eq!(values(&coll, doc! {}), [1, 3, 4]);
    let counts = bucket_counts(&coll);
    assert_eq!(counts.iter().sum::<i64>(), 3);
    // Whole-bucket delete of the open bucket, then more inserts.
    coll.delete_many(&doc! { "m": "a" }).expect("delete");
    insert_all(&coll, &[m("a", at(4 * MINUTE), 5)]);
    assert_eq!(values(&coll, doc! {}), [5]);
    assert_eq!(bucket_counts(&coll), [1]);
}
