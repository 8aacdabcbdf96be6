//! SPEC: a writer that waits on a batch it set aside, before the committer is done,
//! counts one `numWaits`; waiting on a finished batch counts nothing.

use std::sync::Arc;

use bson::{Bson, DateTime, doc};
use tscoll_catalog::{
    BucketCatalog, BucketKey, BucketingSpec, CatalogOptions, Measurement, NoStorage, WriterId,
};

const HOUR: i64 = 3_600_000;

fn num_waits(catalog: &BucketCatalog) -> u64 {
    catalog
        .stats()
        .named()
        .into_iter()
        .find(|(name, _)| *name == "numWaits")
        .map(|(_, v)| v)
        .expect("numWaits")
}

#[test]
fn waiting_on_an_unfinished_batch_counts_num_waits() {
    let catalog = Arc::new(BucketCatalog::new(
        BucketingSpec {
            time_field: "t".to_owned(),
            meta_field: Some("m".to_owned()),
            max_span_ms: HOUR,
            rounding_ms: HOUR,
        },
        CatalogOptions::default(),
    ));
    let key = BucketKey::from_meta(Some(&Bson::String("s".to_owned())));
    let d = doc! { "t": DateTime::from_millis(1000 * HOUR), "m": "s", "v": 1 };
    let m = [Measurement {
        index: 0,
        time: 1000 * HOUR,
        doc: &d,
        generated_id: None,
    }];
    let batch = catalog
        .stage(WriterId(1), &key, &m, &NoStorage)
        .batches
        .remove(0);
    // Two writers share the batch: this one commits, the other set it aside.
    let rights = catalog.claim(&batch).expect("the first claim wins");
    assert!(catalog.claim(&batch).is_none(), "the second is set aside");
    let waiter = {
        let (catalog, batch) = (Arc::clone(&catalog), Arc::clone(&batch));
        std::thread::spawn(move || catalog.wait(&batch))
    };
    // The waiter counts its wait before blocking; commit only once it has.
    while num_waits(&catalog) == 0 {
        std::thread::yield_now();
    }
    rights.prepare().expect("prepare").finish();
    assert_eq!(waiter.join().expect("waiter"), Ok(()));
    assert_eq!(num_waits(&catalog), 1);
    // The batch is done: another wait returns at once and counts nothing.
    assert_eq!(catalog.wait(&batch), Ok(()));
    assert_eq!(num_waits(&catalog), 1);
}
