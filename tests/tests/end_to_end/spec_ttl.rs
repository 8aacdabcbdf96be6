//! SPEC §10 conformance: TTL expiry of whole buckets, `expire(now)` and the background task.

use std::time::{Duration, Instant};

use bson::{DateTime, Document, doc};
use tscoll_engine::{CatalogOptions, Collection, MAX_EXPIRE_AFTER_SECONDS, TimeseriesOptions};
use tscoll_tests::spec::{T0, at, bucket_counts, find_sorted, insert_all, temp_collection};

const SECOND: i64 = 1_000;
const MINUTE: i64 = 60 * SECOND;
const HOUR: i64 = 60 * MINUTE;

fn ttl(seconds: i64) -> TimeseriesOptions {
    TimeseriesOptions::new("t")
        .meta_field("m")
        .expire_after_seconds(seconds)
}

fn m(t: DateTime, v: i32) -> Document {
    doc! { "t": t, "m": "s", "v": v }
}

fn values(coll: &Collection) -> Vec<i32> {
    find_sorted(coll, doc! {})
        .iter()
        .map(|d| d.get_i32("v").expect("v"))
        .collect()
}

#[test]
fn r_10_1_whole_buckets_older_than_expiry_plus_span_go() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &ttl(60));
    // Two buckets (span 3600 s): rounded min times T0 and T0 + 2 h.
    insert_all(&coll, &[m(at(0), 1), m(at(30 * MINUTE), 2)]);
    insert_all(
        &coll,
        &[m(at(2 * HOUR), 3), m(at(2 * HOUR + 59 * MINUTE), 4)],
    );
    assert_eq!(bucket_counts(&coll), [2, 2]);
    // Cutoff = now − 60 s − 3600 s. At T0 + 3660 s exactly the first bucket is not before it.
    let r = coll.expire(T0 + 3_660 * SECOND).expect("expire");
    assert_eq!((r.buckets, r.measurements), (0, 0));
    // One second later it is: the whole bucket goes, its 30-minute-old measurement included.
    let r = coll.expire(T0 + 3_661 * SECOND).expect("expire");
    assert_eq!((r.buckets, r.measurements), (1, 2));
    assert_eq!(values(&coll), [3, 4]);
    // The second bucket follows once its own min time is past the cutoff.
    let r = coll.expire(T0 + 2 * HOUR + 3_661 * SECOND).expect("expire");
    assert_eq!((r.buckets, r.measurements), (1, 2));
    assert!(values(&coll).is_empty());
    assert!(bucket_counts(&coll).is_empty());
}

#[test]
fn r_10_2_measurements_of_a_bucket_expire_together() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &ttl(5));
    let t = T0 + 10 * SECOND;
    insert_all(
        &coll,
        &[
            m(DateTime::from_millis(t), 1),
            m(DateTime::from_millis(t + 5 * MINUTE), 2),
        ],
    );
    // The later one is 5 s old: both survive, though the earlier one is over 5 minutes old.
    let r = coll.expire(t + 5 * MINUTE + 5 * SECOND).expect("expire");
    assert_eq!(r.measurements, 0);
    assert_eq!(values(&coll), [1, 2]);
    // The later one is 3600 s old: both go at the next pass.
    let r = coll
        .expire(t + 5 * MINUTE + 3_600 * SECOND)
        .expect("expire");
    assert_eq!(r.measurements, 2);
    assert!(values(&coll).is_empty());
}

#[test]
fn r_10_3_ttl_enabled_later_by_coll_mod_and_turned_off() {
    let (_dir, _db, coll) = temp_collection(
        CatalogOptions::default(),
        &TimeseriesOptions::new("t").meta_field("m"),
    );
    insert_all(&coll, &[m(at(0), 1)]);
    let far = T0 + 1_000 * HOUR;
    assert_eq!(coll.expire(far).expect("expire").measurements, 0);
    coll.coll_mod(&doc! { "expireAfterSeconds": 0 })
        .expect("collMod");
    assert_eq!(coll.expire(far).expect("expire").measurements, 1);
    insert_all(&coll, &[m(at(HOUR), 2)]);
    coll.coll_mod(&doc! { "expireAfterSeconds": "off" })
        .expect("collMod off");
    assert_eq!(coll.spec().expire_after_seconds, None);
    assert_eq!(coll.expire(far).expect("expire").measurements, 0);
    assert_eq!(values(&coll), [2]);
}

#[test]
fn r_10_4_extended_range_times_compare_on_64_bits() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &ttl(3_600));
    let before_1970 = -SECOND; // 1969-12-31T23:59:59Z
    let y2038 = 2_147_483_700_000; // 2038-01-19T03:15:00Z
    let y2106 = 4_294_967_340_000; // 2106-02-07T06:29:00Z
    let far_past = -8_000_000_000_000_000; // year −251 000 or so
    for (i, t) in [before_1970, y2038, y2106, far_past]
        .into_iter()
        .enumerate()
    {
        insert_all(
            &coll,
            &[m(
                DateTime::from_millis(t),
                i32::try_from(i).expect("small"),
            )],
        );
    }
    let now = 1_795_000_000_000; // 2026-11-18
    let r = coll.expire(now).expect("expire");
    // The pre-1970 and the far-past buckets are eligible; the future ones are not.
    assert_eq!((r.buckets, r.measurements), (2, 2));
    assert_eq!(values(&coll), [1, 2]);
}

#[test]
fn r_10_4_the_largest_expiry_never_wraps_around() {
    let (_dir, _db, coll) =
        temp_collection(CatalogOptions::default(), &ttl(MAX_EXPIRE_AFTER_SECONDS));
    insert_all(
        &coll,
        &[m(DateTime::from_millis(i64::MIN / 2), 1), m(at(0), 2)],
    );
    // now − (2^62 − 1) s does not fit in 64 bits of ms: nothing can be that old, nothing goes.
    let r = coll.expire(i64::MAX).expect("expire");
    assert_eq!(r.measurements, 0);
    assert_eq!(values(&coll).len(), 2);
}

#[test]
fn r_10_6_background_task_expires_on_the_system_clock() {
    let (_dir, db, coll) = temp_collection(CatalogOptions::default(), &ttl(0));
    // A 2023 bucket is long expired by the system clock; one a century ahead is not.
    let future = T0 + 100 * 365 * 24 * HOUR;
    insert_all(&coll, &[m(at(0), 1), m(DateTime::from_millis(future), 2)]);
    let monitor = db.start_ttl_monitor(Duration::from_millis(20));
    let deadline = Instant::now() + Duration::from_secs(30);
    while values(&coll) != [2] {
        assert!(Instant::now() < deadline, "the TTL task never ran");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(monitor.passes() >= 1);
    assert_eq!(monitor.last_error(), None);
    monitor.stop();
    assert_eq!(values(&coll), [2]);
}

#[test]
fn r_7_4_1_expired_open_bucket_is_cleared_from_the_catalog() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &ttl(0));
    insert_all(&coll, &[m(at(0), 1)]);
    // The bucket is open in the catalog; expiry removes it there too.
    assert_eq!(coll.expire(T0 + 2 * HOUR).expect("expire").measurements, 1);
    // A measurement of the same series and span lands in a new bucket, not the removed one.
    insert_all(&coll, &[m(at(MINUTE), 2)]);
    assert_eq!(values(&coll), [2]);
    assert_eq!(bucket_counts(&coll), [1]);
    let s = coll.stats().expect("stats");
    assert_eq!(s.bucket_count, 1);
    assert_eq!(s.measurement_count, 1);
}

#[test]
fn database_expire_visits_every_collection() {
    let (_dir, db, a) = temp_collection(CatalogOptions::default(), &ttl(0));
    let b = db.create_collection("b", &ttl(0)).expect("create");
    let c = db
        .create_collection("no_ttl", &TimeseriesOptions::new("t").meta_field("m"))
        .expect("create");
    for coll in [&a, &b, &c] {
        insert_all(coll, &[m(at(0), 1)]);
    }
    let r = db.expire(T0 + 2 * HOUR).expect("expire");
    assert_eq!((r.buckets, r.measurements), (2, 2));
    assert!(values(&a).is_empty() && values(&b).is_empty());
    assert_eq!(values(&c), [1]);
}
