//! `Collection::find_cursor` streams: it reads a bucket only when the rows before it have been
//! taken, so `find` of a large collection no longer holds the whole result in memory. Its
//! results equal a plain model's for every sort and limit, with the rows of many series merged
//! by time.

use bson::{Document, doc};
use tscoll_engine::{
    CatalogOptions, Collection, Database, FindOptions, Granularity, InsertOptions, SortOrder,
    TimeseriesOptions,
};
use tscoll_tests::spec::{T0, at, temp_collection};

const SERIES: i64 = 7;
const HOURS: i64 = 5;

/// Seven series, a measurement every 5 minutes for five hours (a bucket per series and hour
/// at least), inserted series by series so buckets overlap in time across series; a few out of
/// order.
fn setup() -> (tempfile::TempDir, Database, Collection, Vec<Document>) {
    let opts = TimeseriesOptions::new("t")
        .meta_field("m")
        .granularity(Granularity::Seconds);
    let (dir, db, coll) = temp_collection(CatalogOptions::default(), &opts);
    let mut docs = Vec::new();
    for s in 0..SERIES {
        for i in 0..HOURS * 12 {
            // Every series' times are offset by s seconds, so times differ across series.
            let t = i * 300_000 + s * 1000;
            let t = if i % 17 == 5 { t + 600_000 } else { t };
            docs.push(doc! { "_id": s * 1000 + i, "t": at(t), "m": { "s": s }, "v": i });
        }
    }
    coll.insert_many(&docs, &InsertOptions::default())
        .expect("insert");
    (dir, db, coll, docs)
}

fn time(d: &Document) -> i64 {
    d.get_datetime("t").expect("t").timestamp_millis()
}

fn id(d: &Document) -> i64 {
    d.get_i64("_id").expect("_id")
}

fn collect(coll: &Collection, filter: Document, options: &FindOptions) -> Vec<Document> {
    coll.find_cursor(&filter, options)
        .expect("cursor")
        .collect::<Result<Vec<_>, _>>()
        .expect("rows")
}

#[test]
fn an_unsorted_cursor_reads_one_bucket_at_a_time() {
    let (_d, _db, coll, docs) = setup();
    let buckets = coll.stats().expect("stats").bucket_count;
    assert!(buckets >= (SERIES * HOURS) as u64, "{buckets} buckets");
    let mut cursor = coll
        .find_cursor(&doc! {}, &FindOptions::default())
        .expect("cursor");
    let first = cursor.next().expect("a row").expect("ok");
    assert!(docs.contains(&first));
    assert_eq!(cursor.stats().buckets_unpacked, 1, "{:?}", cursor.stats());
    // Taking the rest reads every bucket once.
    let rest = cursor.by_ref().count();
    assert_eq!(rest + 1, docs.len());
    assert_eq!(cursor.stats().buckets_unpacked, buckets);
    assert_eq!(cursor.stats().rows_returned, docs.len() as u64);
}

#[test]
fn a_sorted_cursor_merges_series_by_time_and_reads_only_what_overlaps() {
    let (_d, _db, coll, docs) = setup();
    for order in [SortOrder::Ascending, SortOrder::Descending] {
        let options = FindOptions {
            sort: Some(order),
            ..FindOptions::default()
        };
        let mut cursor = coll.find_cursor(&doc! {}, &options).expect("cursor");
        let first = cursor.next().expect("a row").expect("ok");
        let unpacked = cursor.stats().buckets_unpacked;
        // The first row needs the buckets of every series that may hold an earlier one (the
        // first hour of each series), not the whole collection.
        assert!(
            unpacked <= 2 * SERIES as u64,
            "{order:?}: {unpacked} buckets read"
        );
        let mut got = vec![first];
        got.extend(cursor.map(|d| d.expect("row")));
        let mut want = docs.clone();
        match order {
            SortOrder::Ascending => want.sort_by_key(|d| (time(d), id(d))),
            SortOrder::Descending => want.sort_by_key(|d| std::cmp::Reverse((time(d), id(d)))),
        }
        let times: Vec<i64> = got.iter().map(time).collect();
        let want_times: Vec<i64> = want.iter().map(time).collect();
        assert_eq!(times, want_times, "{order:?}");
        let mut got_ids: Vec<i64> = got.iter().map(id).collect();
        got_ids.sort_unstable();
        let mut want_ids: Vec<i64> = docs.iter().map(id).collect();
        want_ids.sort_unstable();
        assert_eq!(got_ids, want_ids, "{order:?}: every row once");
    }
}

#[test]
fn cursor_results_equal_the_model_for_every_sort_limit_and_filter() {
    let (_d, _db, coll, docs) = setup();
    let lo = T0 + 3_600_000;
    let hi = T0 + 3 * 3_600_000;
    let filters = [
        doc! {},
        doc! { "m.s": 3 },
        doc! { "t": { "$gte": at(3_600_000), "$lt": at(3 * 3_600_000) } },
        doc! { "v": { "$gt": 30 }, "m.s": { "$in": [1, 5] } },
    ];
    let model_matches = |f: usize, d: &Document| -> bool {
        let s = d.get_document("m").and_then(|m| m.get_i64("s")).expect("s");
        let v = d.get_i64("v").expect("v");
        match f {
            0 => true,
            1 => s == 3,
            2 => (lo..hi).contains(&time(d)),
            _ => v > 30 && (s == 1 || s == 5),
        }
    };
    for (f, filter) in filters.iter().enumerate() {
        let matching: Vec<&Document> = docs.iter().filter(|d| model_matches(f, d)).collect();
        for sort in [
            None,
            Some(SortOrder::Ascending),
            Some(SortOrder::Descending),
        ] {
            for limit in [None, Some(1), Some(10), Some(1000)] {
                let options = FindOptions {
                    sort,
                    limit,
                    ..FindOptions::default()
                };
                let got = collect(&coll, filter.clone(), &options);
                let ctx = format!("filter {filter}, sort {sort:?}, limit {limit:?}");
                let n = limit.unwrap_or(usize::MAX).min(matching.len());
                assert_eq!(got.len(), n, "{ctx}");
                for d in &got {
                    assert!(matching.contains(&d), "{ctx}: {d} should not match");
                }
                let times: Vec<i64> = got.iter().map(time).collect();
                let mut want: Vec<i64> = matching.iter().map(|d| time(d)).collect();
                match sort {
                    Some(SortOrder::Ascending) => want.sort_unstable(),
                    Some(SortOrder::Descending) => want.sort_unstable_by(|a, b| b.cmp(a)),
                    None => continue,
                }
                assert_eq!(times, want[..n], "{ctx}");
                // find is the cursor collected.
                assert_eq!(coll.find(filter, &options).expect("find"), got, "{ctx}");
            }
        }
    }
}

#[test]
fn a_cursor_skips_buckets_deleted_after_it_was_made() {
    let (_d, _db, coll, docs) = setup();
    let mut cursor = coll
        .find_cursor(&doc! {}, &FindOptions::default())
        .expect("cursor");
    let first = cursor.next().expect("a row").expect("ok");
    let series = first.get_document("m").expect("m").clone();
    let other = doc! { "s": (series.get_i64("s").expect("s") + 1) % SERIES };
    let deleted = coll
        .delete_many(&doc! { "m": other.clone() })
        .expect("delete")
        .deleted;
    assert!(deleted > 0);
    let rest: Vec<Document> = cursor.map(|d| d.expect("row")).collect();
    assert!(
        rest.iter()
            .all(|d| d.get_document("m").expect("m") != &other)
    );
    assert_eq!(rest.len() + 1, docs.len() - deleted as usize);
}
