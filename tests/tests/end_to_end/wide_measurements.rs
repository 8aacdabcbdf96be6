//! Batches whose measurements each have fields of their own are stored whole. Before, a batch
//! of 5000 measurements with a field each was refused as a whole ("5000 rows × 5002 columns
//! exceed the limit of 16777216 cells"): the rows of its five buckets went to the write-ahead
//! log as one table.

use bson::{Bson, Document, doc};
use tscoll_engine::{CatalogOptions, InsertOptions};
use tscoll_tests::spec::{at, find_sorted, options, temp_collection};

#[test]
fn a_batch_of_measurements_with_fields_of_their_own_is_stored_whole() {
    for meta in [false, true] {
        let (_d, db, coll) = temp_collection(CatalogOptions::default(), &options(meta));
        let docs: Vec<Document> = (0..5000)
            .map(|i| {
                let mut d = doc! { "t": at(i) };
                d.insert(format!("f{i}"), i);
                if meta {
                    d.insert("m", "s");
                }
                d
            })
            .collect();
        let r = coll
            .insert_many(&docs, &InsertOptions::default())
            .expect("insert_many");
        assert_eq!(
            (r.inserted, r.errors.len()),
            (5000, 0),
            "{:?}",
            r.errors.first()
        );
        let check = |coll: &tscoll_engine::Collection| {
            let stored = find_sorted(coll, Document::new());
            assert_eq!(stored.len(), 5000);
            for (i, d) in stored.iter().enumerate() {
                let i = i64::try_from(i).expect("small");
                assert_eq!(d.get(format!("f{i}")), Some(&Bson::Int64(i)), "{d}");
            }
        };
        check(&coll);
        // And they read back the same from disk.
        let dir = _d.path().to_owned();
        drop(coll);
        db.close().expect("close");
        drop(db);
        let db = tscoll_engine::Database::open(&dir, tscoll_engine::DatabaseOptions::default())
            .expect("reopen");
        check(&db.collection("c").expect("collection"));
    }
}
