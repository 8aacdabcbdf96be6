//! SPEC §11.2 conformance: meta-only multi updates, translated to the buckets' meta and
//! renormalized; buckets cleared from the catalog. Updates of any field are
//! in `spec_update_measurements.rs`.

use bson::{Document, doc};
use tscoll_engine::{CatalogOptions, Collection, ErrorCode};
use tscoll_tests::spec::{
    assert_every_bucket_meta, at, bucket_counts, find_sorted, insert_all, options, temp_collection,
};

const MINUTE: i64 = 60_000;
const HOUR: i64 = 60 * MINUTE;

fn values(coll: &Collection, filter: Document) -> Vec<i32> {
    find_sorted(coll, filter)
        .iter()
        .map(|d| d.get_i32("v").expect("v"))
        .collect()
}

fn hosts(coll: &Collection) {
    insert_all(
        coll,
        &[
            doc! { "t": at(0), "m": { "host": "a", "dc": "x" }, "v": 1 },
            doc! { "t": at(MINUTE), "m": { "host": "a", "dc": "x" }, "v": 2 },
            doc! { "t": at(2 * HOUR), "m": { "host": "a", "dc": "x" }, "v": 3 },
            doc! { "t": at(0), "m": { "host": "b", "dc": "x" }, "v": 4 },
            doc! { "t": at(0), "m": { "host": "c", "dc": "y" }, "v": 5 },
        ],
    );
}

#[test]
fn r_11_2_meta_only_multi_update_moves_matching_buckets() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    hosts(&coll);
    let r = coll
        .update_many(&doc! { "m.dc": "x" }, &doc! { "$set": { "m.dc": "z" } })
        .expect("update");
    assert_eq!((r.matched, r.modified, r.buckets_modified), (4, 4, 3));
    assert!(values(&coll, doc! { "m.dc": "x" }).is_empty());
    assert_eq!(values(&coll, doc! { "m.dc": "z" }), [1, 4, 2, 3]);
    assert_eq!(values(&coll, doc! { "m.dc": "y" }), [5]);
    // Each measurement comes back with its bucket's new meta (SPEC ).
    let found = find_sorted(&coll, doc! { "m.host": "a" });
    assert!(
        found
            .iter()
            .all(|d| d.get_document("m").expect("m") == &doc! { "host": "a", "dc": "z" })
    );
    // Stored buckets are untouched but for their meta.
    assert_eq!(bucket_counts(&coll), [1, 1, 1, 2]);
}

#[test]
fn r_11_2_unchanged_meta_counts_as_matched_not_modified() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    hosts(&coll);
    let r = coll
        .update_many(&doc! { "m.host": "c" }, &doc! { "$set": { "m.dc": "y" } })
        .expect("update");
    assert_eq!((r.matched, r.modified), (1, 0));
}

#[test]
fn r_11_2_new_meta_is_renormalized_like_an_inserted_one() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    insert_all(&coll, &[doc! { "t": at(0), "m": { "host": "a" }, "v": 1 }]);
    // $set writes fields out of order; sorts object fields, so the bucket's series is
    // the same as an insert of {dc: "x", host: "a"} or {host: "a", dc: "x"}.
    coll.update_many(
        &doc! { "m.host": "a" },
        &doc! { "$set": { "m": { "host": "a", "dc": "x" } } },
    )
    .expect("update");
    insert_all(
        &coll,
        &[doc! { "t": at(MINUTE), "m": { "dc": "x", "host": "a" }, "v": 2 }],
    );
    // A whole-meta equality matches the stored normalized bytes: the sorted form.
    assert_eq!(
        values(&coll, doc! { "m": { "dc": "x", "host": "a" } }),
        [1, 2]
    );
    assert_every_bucket_meta(&coll, &doc! { "dc": "x", "host": "a" });
}

#[test]
fn r_11_2_operators_rename_unset_inc() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    insert_all(
        &coll,
        &[doc! { "t": at(0), "m": { "host": "a", "n": 1, "old": "o" }, "v": 1 }],
    );
    coll.update_many(
        &doc! { "m.host": "a" },
        &doc! { "$inc": { "m.n": 4 }, "$rename": { "m.old": "m.new" }, "$unset": { "m.host": "" } },
    )
    .expect("update");
    let d = &find_sorted(&coll, doc! {})[0];
    assert_eq!(
        d.get_document("m").expect("m"),
        &doc! { "n": 5, "new": "o" }
    );
}

#[test]
fn r_11_2_updates_beyond_the_meta_field_take_the_measurement_path() {
    // What the legacy translation refused with InvalidOptions, MongoDB 8.0 updates.
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    hosts(&coll);
    let cases = [
        (doc! { "v": 1 }, doc! { "$set": { "m.dc": "z" } }, 1),
        (
            doc! { "m.host": "a", "t": at(MINUTE) },
            doc! { "$set": { "m.dc": "z" } },
            1,
        ),
        (doc! { "m.host": "b" }, doc! { "$set": { "v": 40 } }, 1),
        (
            doc! { "m.host": "c" },
            doc! { "$rename": { "m.host": "host" } },
            1,
        ),
    ];
    for (filter, update, n) in cases {
        let r = coll.update_many(&filter, &update).expect("update");
        assert_eq!((r.matched, r.modified), (n, n), "{filter} {update}");
    }
    assert_eq!(values(&coll, doc! { "m.dc": "z" }), [1, 2]);
    assert_eq!(values(&coll, doc! { "m.host": "b" }), [40]);
    assert_eq!(values(&coll, doc! { "host": "c" }), [5]);
    // A replacement cannot update many measurements.
    let e = coll
        .update_many(&doc! { "m.host": "a" }, &doc! { "m": { "host": "q" } })
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::FailedToParse, "{e}");
    // Without a meta field, `m` is a field like any other.
    let (_dir2, _db2, plain) = temp_collection(CatalogOptions::default(), &options(false));
    insert_all(&plain, &[doc! { "t": at(0), "v": 1 }]);
    let r = plain
        .update_many(&doc! {}, &doc! { "$set": { "m": 1 } })
        .expect("update");
    assert_eq!((r.matched, r.modified), (1, 1));
    assert_eq!(plain.count(&doc! { "m": 1 }).expect("count"), 1);
}

#[test]
fn r_7_4_1_updated_open_bucket_is_cleared_from_the_catalog() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    insert_all(&coll, &[doc! { "t": at(0), "m": { "host": "a" }, "v": 1 }]);
    coll.update_many(&doc! { "m.host": "a" }, &doc! { "$set": { "m.host": "b" } })
        .expect("update");
    // The open bucket of series a is gone from the catalog: a new measurement of series a
    // opens a new bucket and does not land in the moved one.
    insert_all(
        &coll,
        &[doc! { "t": at(MINUTE), "m": { "host": "a" }, "v": 2 }],
    );
    assert_eq!(values(&coll, doc! { "m.host": "a" }), [2]);
    assert_eq!(values(&coll, doc! { "m.host": "b" }), [1]);
    // A measurement of series b may join the moved bucket (it is b's now).
    insert_all(
        &coll,
        &[doc! { "t": at(2 * MINUTE), "m": { "host": "b" }, "v": 3 }],
    );
    assert_eq!(values(&coll, doc! { "m.host": "b" }), [1, 3]);
    assert_eq!(bucket_counts(&coll).iter().sum::<i64>(), 3);
}
