//! SPEC §12 conformance: collMod of a time-series collection through the engine
//! (`Collection::coll_mod`): transitions, seconds parameters, combinations, effect on open
//! buckets and on queries, persistence.

use bson::{Bson, Document, doc};
use tscoll_engine::{
    CatalogOptions, Collection, Database, DatabaseOptions, ErrorCode, Granularity,
    TimeseriesOptions,
};
use tscoll_tests::spec::{T0, at, bucket_counts, find_sorted, insert_all, temp_collection};

const MINUTE: i64 = 60_000;
const HOUR: i64 = 60 * MINUTE;

fn with_granularity(g: &str) -> TimeseriesOptions {
    TimeseriesOptions::new("t")
        .meta_field("m")
        .granularity(Granularity::parse(g).expect("granularity"))
}

fn fixed(seconds: i64) -> TimeseriesOptions {
    TimeseriesOptions::new("t")
        .meta_field("m")
        .bucket_seconds(seconds, seconds)
}

fn coll_with(opts: &TimeseriesOptions) -> (tempfile::TempDir, Database, Collection) {
    temp_collection(CatalogOptions::default(), opts)
}

fn code(coll: &Collection, cmd: Document) -> ErrorCode {
    coll.coll_mod(&cmd)
        .map(|s| panic!("{cmd} was accepted: {s:?}"))
        .unwrap_err()
        .code()
}

#[test]
fn r_12_1_granularity_only_gets_coarser() {
    for (from, to) in [
        ("seconds", "minutes"),
        ("seconds", "hours"),
        ("minutes", "hours"),
    ] {
        let (_d, _db, coll) = coll_with(&with_granularity(from));
        let spec = coll
            .coll_mod(&doc! { "timeseries": { "granularity": to } })
            .expect(to);
        let g = Granularity::parse(to).expect("g");
        assert_eq!(spec.granularity, Some(g));
        assert_eq!(spec.bucket_max_span_seconds, g.bucket_max_span_seconds());
        assert_eq!(spec.bucket_rounding_seconds, g.bucket_rounding_seconds());
        assert_eq!(coll.spec(), spec);
    }
    for (from, to) in [
        ("minutes", "seconds"),
        ("hours", "minutes"),
        ("hours", "seconds"),
    ] {
        let (_d, _db, coll) = coll_with(&with_granularity(from));
        let e = coll
            .coll_mod(&doc! { "timeseries": { "granularity": to } })
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidOptions);
        assert!(
            e.to_string().contains(
                "Invalid transition for timeseries.granularity. Can only transition from 'seconds' to 'minutes' or 'minutes' to 'hours'."
            ),
            "{e}"
        );
        assert_eq!(coll.spec().granularity.map(Granularity::as_str), Some(from));
    }
    let (_d, _db, coll) = coll_with(&with_granularity("minutes"));
    let before = coll.spec();
    let after = coll
        .coll_mod(&doc! { "timeseries": { "granularity": "minutes" } })
        .expect("same granularity");
    assert_eq!(before, after, "same granularity is a no-op");
}

#[test]
fn r_12_2_seconds_parameters_rules() {
    let (_d, _db, coll) = coll_with(&fixed(100));
    // Together and equal.
    assert_eq!(
        code(
            &coll,
            doc! { "timeseries": { "bucketMaxSpanSeconds": 200 } }
        ),
        ErrorCode::InvalidOptions
    );
    assert_eq!(
        code(
            &coll,
            doc! { "timeseries": { "bucketRoundingSeconds": 200 } }
        ),
        ErrorCode::InvalidOptions
    );
    assert_eq!(
        code(
            &coll,
            doc! { "timeseries": { "bucketMaxSpanSeconds": 200, "bucketRoundingSeconds": 300 } }
        ),
        ErrorCode::InvalidOptions
    );
    // Never smaller than now.
    let e = coll
        .coll_mod(
            &doc! { "timeseries": { "bucketMaxSpanSeconds": 50, "bucketRoundingSeconds": 50 } },
        )
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidOptions);
    assert!(
        e.to_string()
            .contains("needs to be equal or greater to transition"),
        "{e}"
    );
    // Out of range.
    assert_eq!(
        code(
            &coll,
            doc! { "timeseries": { "bucketMaxSpanSeconds": 31_536_001, "bucketRoundingSeconds": 31_536_001 } }
        ),
        ErrorCode::BadValue
    );
    // Equal to the current values: no-op, still fixed bucketing.
    let same = coll
        .coll_mod(
            &doc! { "timeseries": { "bucketMaxSpanSeconds": 100, "bucketRoundingSeconds": 100 } },
        )
        .expect("no-op");
    assert!(same.fixed_bucketing);
    // Larger: accepted, still no granularity, no longer fixed bucketing.
    let bigger = coll
        .coll_mod(
            &doc! { "timeseries": { "bucketMaxSpanSeconds": 400, "bucketRoundingSeconds": 400 } },
        )
        .expect("larger");
    assert_eq!(
        (
            bigger.granularity,
            bigger.bucket_max_span_seconds,
            bigger.bucket_rounding_seconds,
            bigger.fixed_bucketing
        ),
        (None, 400, 400, false)
    );
    // From fixed bucketing to a granularity whose presets are both ≥ the current values.
    let g = coll
        .coll_mod(&doc! { "timeseries": { "granularity": "minutes" } })
        .expect("to minutes");
    assert_eq!(g.granularity, Some(Granularity::Minutes));
    let (_d2, _db2, wide) = coll_with(&fixed(7_200));
    assert_eq!(
        code(&wide, doc! { "timeseries": { "granularity": "seconds" } }),
        ErrorCode::InvalidOptions
    );
}

#[test]
fn r_12_2_granularity_with_seconds_parameters() {
    let (_d, _db, coll) = coll_with(&with_granularity("seconds"));
    // A span equal to the new preset is accepted alongside the granularity.
    let s = coll
        .coll_mod(
            &doc! { "timeseries": { "granularity": "minutes", "bucketMaxSpanSeconds": 86_400 } },
        )
        .expect("preset span");
    assert_eq!(s.granularity, Some(Granularity::Minutes));
    // Any other span, or any rounding, is rejected.
    assert_eq!(
        code(
            &coll,
            doc! { "timeseries": { "granularity": "hours", "bucketMaxSpanSeconds": 1_000 } }
        ),
        ErrorCode::InvalidOptions
    );
    assert_eq!(
        code(
            &coll,
            doc! { "timeseries": { "granularity": "hours", "bucketRoundingSeconds": 86_400 } }
        ),
        ErrorCode::InvalidOptions
    );
    // Seconds parameters remove the granularity.
    let s = coll
        .coll_mod(&doc! { "timeseries": { "bucketMaxSpanSeconds": 90_000, "bucketRoundingSeconds": 90_000 } })
        .expect("seconds");
    assert_eq!(s.granularity, None);
    assert_eq!(
        coll.spec()
            .to_document()
            .get_document("timeseries")
            .expect("ts")
            .get("granularity"),
        None
    );
}

#[test]
fn r_12_3_empty_timeseries_is_a_no_op() {
    let (_d, _db, coll) = coll_with(&with_granularity("seconds"));
    let before = coll.spec();
    assert_eq!(
        coll.coll_mod(&doc! { "timeseries": {} }).expect("no-op"),
        before
    );
    assert_eq!(
        coll.coll_mod(&doc! { "collMod": "c", "timeseries": {} })
            .expect("named"),
        before
    );
}

#[test]
fn r_12_4_timeseries_is_not_combined_and_some_options_are_forbidden() {
    let (_d, _db, coll) = coll_with(&with_granularity("seconds"));
    assert_eq!(
        code(
            &coll,
            doc! { "timeseries": { "granularity": "minutes" }, "expireAfterSeconds": 10 }
        ),
        ErrorCode::InvalidOptions
    );
    for forbidden in [
        doc! { "validator": {} },
        doc! { "validationLevel": "off" },
        doc! { "validationAction": "warn" },
        doc! { "viewOn": "x" },
        doc! { "pipeline": [] },
        doc! { "prepareUnique": true },
    ] {
        assert_eq!(code(&coll, forbidden), ErrorCode::InvalidOptions);
    }
    assert_eq!(coll.spec().granularity, Some(Granularity::Seconds));
    // expireAfterSeconds alone is allowed; "off" removes it.
    assert_eq!(
        coll.coll_mod(&doc! { "expireAfterSeconds": 3600 })
            .expect("ttl")
            .expire_after_seconds,
        Some(3600)
    );
    assert_eq!(
        coll.coll_mod(&doc! { "expireAfterSeconds": "off" })
            .expect("off")
            .expire_after_seconds,
        None
    );
    // SPEC §1.5: another string, a negative number, an object.
    assert_eq!(
        code(&coll, doc! { "expireAfterSeconds": "on" }),
        ErrorCode::InvalidOptions
    );
    assert_eq!(
        code(&coll, doc! { "expireAfterSeconds": -1 }),
        ErrorCode::InvalidOptions
    );
    // SPEC §1.4: 2^62 itself is rejected, as at create; 2^62 − 1 is taken.
    assert_eq!(
        code(&coll, doc! { "expireAfterSeconds": 1_i64 << 62 }),
        ErrorCode::InvalidOptions
    );
    assert_eq!(
        coll.coll_mod(&doc! { "expireAfterSeconds": (1_i64 << 62) - 1 })
            .expect("collMod")
            .expire_after_seconds,
        Some((1 << 62) - 1)
    );
    assert_eq!(
        code(&coll, doc! { "expireAfterSeconds": { "a": 1 } }),
        ErrorCode::TypeMismatch
    );
    assert_eq!(
        code(&coll, doc! { "noSuchOption": 1 }),
        ErrorCode::IdlUnknownField
    );
}

#[test]
fn r_12_5_open_buckets_take_the_new_span() {
    let (_d, _db, coll) = coll_with(&with_granularity("seconds"));
    insert_all(&coll, &[doc! { "t": at(0), "m": "s", "v": 1 }]);
    let before = coll.buckets().expect("buckets")[0]
        .get_document("control")
        .expect("control")
        .get_document("min")
        .expect("min")
        .clone();
    coll.coll_mod(&doc! { "timeseries": { "granularity": "minutes" } })
        .expect("collMod");
    // 23 h after the open bucket's (seconds-rounded) min: joins it under the new 24 h span.
    insert_all(&coll, &[doc! { "t": at(23 * HOUR), "m": "s", "v": 2 }]);
    assert_eq!(bucket_counts(&coll), [2]);
    let b = &coll.buckets().expect("buckets")[0];
    let control = b.get_document("control").expect("control");
    // The stored bucket keeps its old rounding (min time rounded to the minute).
    assert_eq!(
        control.get_document("min").expect("min").get("t"),
        before.get("t")
    );
    assert_eq!(
        control.get_document("min").expect("min").get("t"),
        Some(&Bson::DateTime(at(0)))
    );
    // queries use the new span, so the late measurement is found by time.
    let found = find_sorted(&coll, doc! { "t": { "$gte": at(23 * HOUR) } });
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].get_i32("v").expect("v"), 2);
    let found = find_sorted(&coll, doc! { "m": "s", "t": { "$eq": at(23 * HOUR) } });
    assert_eq!(found.len(), 1);
    // A new bucket uses the new rounding (hours).
    insert_all(
        &coll,
        &[doc! { "t": at(30 * HOUR + 17 * MINUTE), "m": "s", "v": 3 }],
    );
    let newest = coll
        .buckets()
        .expect("buckets")
        .into_iter()
        .map(|b| {
            b.get_document("control")
                .expect("control")
                .get_document("min")
                .expect("min")
                .get_datetime("t")
                .expect("t")
                .timestamp_millis()
        })
        .max()
        .expect("a bucket");
    assert_eq!(newest % HOUR, 0);
    assert!(newest > T0 + 29 * HOUR);
}

#[test]
fn r_12_6_changed_bucketing_is_no_longer_fixed_and_survives_reopening() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let db = Database::open(dir.path(), DatabaseOptions::default()).expect("open");
        let coll = db.create_collection("c", &fixed(600)).expect("create");
        assert!(coll.spec().fixed_bucketing);
        coll.coll_mod(
            &doc! { "timeseries": { "bucketMaxSpanSeconds": 1200, "bucketRoundingSeconds": 1200 } },
        )
        .expect("collMod");
        coll.coll_mod(&doc! { "expireAfterSeconds": 99 })
            .expect("ttl");
        db.close().expect("close");
    }
    let db = Database::open(dir.path(), DatabaseOptions::default()).expect("reopen");
    let spec = db.collection("c").expect("c").spec();
    assert_eq!(
        (
            spec.bucket_max_span_seconds,
            spec.bucket_rounding_seconds,
            spec.fixed_bucketing,
            spec.expire_after_seconds
        ),
        (1200, 1200, false, Some(99))
    );
}

#[test]
fn r_12_4_index_hiding_is_allowed_alone() {
    let (_d, _db, coll) = coll_with(&with_granularity("seconds"));
    let name = coll
        .create_index(&doc! { "v": 1 }, &tscoll_engine::IndexOptions::default())
        .expect("index");
    coll.coll_mod(&doc! { "index": { "name": &name, "hidden": true } })
        .expect("hide");
    let listed = coll.list_indexes().expect("list");
    let ix = listed
        .iter()
        .find(|d| d.get_str("name").ok() == Some(name.as_str()))
        .expect("listed");
    assert_eq!(ix.get_bool("hidden").ok(), Some(true));
    coll.coll_mod(&doc! { "index": { "name": &name, "hidden": false } })
        .expect("unhide");
    assert_eq!(
        code(&coll, doc! { "index": { "name": "_id_", "hidden": true } }),
        ErrorCode::IndexNotFound
    );
    assert_eq!(
        code(
            &coll,
            doc! { "timeseries": {}, "index": { "name": &name, "hidden": true } }
        ),
        ErrorCode::InvalidOptions
    );
}

/// Whether index `name` is listed as hidden.
fn listed_hidden(coll: &Collection, name: &str) -> bool {
    coll.list_indexes()
        .expect("list")
        .iter()
        .find(|d| d.get_str("name").ok() == Some(name))
        .expect("listed")
        .get_bool("hidden")
        .unwrap_or(false)
}

#[test]
fn r_12_4_an_index_is_hidden_by_its_key_pattern_too() {
    let (_d, _db, coll) = coll_with(&with_granularity("seconds"));
    let name = coll
        .create_index(&doc! { "v": -1 }, &tscoll_engine::IndexOptions::default())
        .expect("index");
    coll.coll_mod(&doc! { "index": { "keyPattern": { "v": -1 }, "hidden": true } })
        .expect("hide by key");
    assert!(listed_hidden(&coll, &name));
    coll.coll_mod(&doc! { "index": { "keyPattern": { "v": -1 }, "hidden": false } })
        .expect("unhide by key");
    assert!(!listed_hidden(&coll, &name));
    // The default index, by its user-form key (SPEC ).
    coll.coll_mod(&doc! { "index": { "keyPattern": { "m": 1, "t": 1 }, "hidden": true } })
        .expect("hide the default index");
    assert!(listed_hidden(&coll, "m_1_t_1"));
    // No such key, a key of the other direction, `_id`, both a name and a key, a key that is
    // not an object.
    for (ix, want) in [
        (
            doc! { "keyPattern": { "w": 1 }, "hidden": true },
            ErrorCode::IndexNotFound,
        ),
        (
            doc! { "keyPattern": { "v": 1 }, "hidden": true },
            ErrorCode::IndexNotFound,
        ),
        (
            doc! { "keyPattern": { "_id": 1 }, "hidden": true },
            ErrorCode::IndexNotFound,
        ),
        (
            doc! { "name": &name, "keyPattern": { "v": -1 }, "hidden": true },
            ErrorCode::InvalidOptions,
        ),
        (
            doc! { "keyPattern": "v_-1", "hidden": true },
            ErrorCode::InvalidOptions,
        ),
        (doc! { "hidden": true }, ErrorCode::InvalidOptions),
    ] {
        assert_eq!(code(&coll, doc! { "index": ix.clone() }), want, "{ix}");
    }
    assert!(!listed_hidden(&coll, &name));
}
