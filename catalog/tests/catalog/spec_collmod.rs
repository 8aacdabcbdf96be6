//! SPEC at the catalog level: a collMod that changes the bucketing leaves open buckets
//! open, checks later measurements against the new span, and gives new buckets the new
//! rounding (jstest bucket_granularity.js `testIncreasingSecondsToMinutes`).

use std::sync::Arc;

use bson::{Bson, DateTime, Document, doc};
use tscoll_catalog::{
    BucketCatalog, BucketId, BucketKey, BucketingSpec, CatalogOptions, Measurement, NoStorage,
    WriterId,
};

const MINUTE: i64 = 60_000;
const HOUR: i64 = 3_600_000;
/// A whole hour plus 30 minutes and 5 seconds: rounding to minutes and to hours differ.
const T: i64 = 472_222 * HOUR + 30 * MINUTE + 5_000;

fn spec(span_ms: i64, rounding_ms: i64) -> BucketingSpec {
    BucketingSpec {
        time_field: "t".to_owned(),
        meta_field: Some("m".to_owned()),
        max_span_ms: span_ms,
        rounding_ms,
    }
}

fn doc_at(t: i64) -> Document {
    doc! { "t": DateTime::from_millis(t), "m": "s", "v": 1 }
}

/// Stages and commits one measurement; returns its bucket and the bucket's min time.
fn insert(catalog: &Arc<BucketCatalog>, t: i64) -> (BucketId, i64) {
    let d = doc_at(t);
    let key = BucketKey::from_meta(Some(&Bson::String("s".to_owned())));
    let m = [Measurement {
        index: 0,
        time: t,
        doc: &d,
        generated_id: None,
    }];
    let batch = catalog
        .stage(WriterId(1), &key, &m, &NoStorage)
        .batches
        .remove(0);
    let p = catalog
        .claim(&batch)
        .expect("rights")
        .prepare()
        .expect("prepare");
    let placed = (p.bucket_id, p.min_time);
    p.finish();
    placed
}

#[test]
fn r_12_5_open_bucket_takes_measurements_up_to_the_new_span() {
    // granularity seconds: span 1 h, rounding 1 min.
    let catalog = Arc::new(BucketCatalog::new(
        spec(HOUR, MINUTE),
        CatalogOptions::default(),
    ));
    let (open, min) = insert(&catalog, T);
    assert_eq!(min, T - 5_000, "rounded to the minute");
    // seconds → minutes: span 24 h, rounding 1 h. The open bucket stays open...
    catalog.set_spec(spec(24 * HOUR, HOUR));
    assert_eq!(catalog.gauges().open_buckets, 1);
    // ...and takes a measurement 23 h after its (minute-rounded) min time.
    let (same, _) = insert(&catalog, min + 23 * HOUR);
    assert_eq!(same, open, "joins the open bucket under the new span");
    // One at the new span after its min starts a new bucket, rounded to the hour.
    let (next, next_min) = insert(&catalog, min + 24 * HOUR);
    assert_ne!(next, open);
    assert_eq!(next_min, (min + 24 * HOUR).div_euclid(HOUR) * HOUR);
    let s = catalog.stats();
    assert_eq!(s.num_buckets_closed_due_to_time_forward, 1);
    assert_eq!(s.num_bucket_inserts, 2);
    assert_eq!(s.num_bucket_updates, 1);
}

#[test]
fn r_12_5_without_the_change_the_same_measurement_starts_a_new_bucket() {
    let catalog = Arc::new(BucketCatalog::new(
        spec(HOUR, MINUTE),
        CatalogOptions::default(),
    ));
    let (open, min) = insert(&catalog, T);
    let (other, _) = insert(&catalog, min + 23 * HOUR);
    assert_ne!(
        other, open,
        "23 h is beyond the 1 h span of granularity seconds"
    );
    assert_eq!(catalog.stats().num_buckets_closed_due_to_time_forward, 1);
}
