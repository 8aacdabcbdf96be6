//! Pipelines whose sorts pass their memory budget (`DatabaseOptions::sort_memory_bytes`):
//! `$sort` and `$setWindowFields` spill sorted runs to temporary files and give the same
//! results as in memory; bounded windows are computed a chunk of a partition at a time and
//! agree with sums computed by hand; `aggregate_cursor` yields the results as it reads them.

use bson::{Bson, DateTime, Document, doc};
use tscoll_engine::{Collection, Database, DatabaseOptions, InsertOptions, TimeseriesOptions};

/// 12 000 measurements, one a second, of three series (`i % 3`), `v` a scrambled value.
const N: i64 = 12_000;

fn value(i: i64) -> i64 {
    (i * 7_919) % 1_009
}

/// A database with the measurements, whose sorts hold at most `budget` bytes.
fn database(budget: u64) -> (tempfile::TempDir, Database, Collection) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Database::open(
        dir.path(),
        DatabaseOptions {
            sort_memory_bytes: budget,
            ..DatabaseOptions::default()
        },
    )
    .expect("open");
    let coll = db
        .create_collection("c", &TimeseriesOptions::new("t").meta_field("m"))
        .expect("create");
    let docs: Vec<Document> = (0..N)
        .map(|i| doc! { "t": DateTime::from_millis(i * 1000), "m": i % 3, "i": i, "v": value(i) })
        .collect();
    let r = coll
        .insert_many(&docs, &InsertOptions::default())
        .expect("insert");
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    (dir, db, coll)
}

fn int(d: &Document, k: &str) -> i64 {
    match d.get(k) {
        Some(Bson::Int32(n)) => i64::from(*n),
        Some(Bson::Int64(n)) => *n,
        other => panic!("{k}: {other:?} in {d}"),
    }
}

#[test]
fn sorts_past_the_budget_spill_and_give_the_order_memory_gives() {
    let (_d1, _db1, small) = database(16 << 10);
    let (_d2, _db2, large) = database(tscoll_engine::SORT_MEMORY_LIMIT);
    let pipelines = [
        vec![doc! { "$sort": { "v": -1, "i": 1 } }],
        vec![
            doc! { "$sort": { "v": 1 } },
            doc! { "$skip": 10 },
            doc! { "$limit": 3_000 },
        ],
        vec![
            doc! { "$match": { "v": { "$lt": 500 } } },
            doc! { "$sort": { "m": 1, "v": 1 } },
            doc! { "$project": { "_id": 0, "i": 1 } },
        ],
    ];
    for p in &pipelines {
        // The two databases gave their measurements different generated `_id`s.
        let run = |c: &Collection| {
            let mut p = p.clone();
            p.push(doc! { "$unset": "_id" });
            c.aggregate(&p).expect("aggregate")
        };
        let spilled = run(&small);
        assert!(spilled.len() >= 3_000, "{p:?}");
        assert_eq!(spilled, run(&large), "{p:?}");
    }
    // Ties keep their input order (a stable sort), spilled or not: `m` then time order.
    let by_m = small
        .aggregate(&[doc! { "$sort": { "m": 1 } }])
        .expect("aggregate");
    assert_eq!(by_m.len(), N as usize);
    let keys: Vec<(i64, i64)> = by_m.iter().map(|d| (int(d, "m"), int(d, "i"))).collect();
    assert!(
        keys.windows(2).all(|w| w[0] < w[1]),
        "not sorted by m, then i"
    );
    // A sorted find spills the same way.
    let found = small
        .find(
            &doc! {},
            &tscoll_engine::FindOptions {
                sort_by: Some(doc! { "v": 1, "i": -1 }),
                ..Default::default()
            },
        )
        .expect("find");
    let mut want: Vec<(i64, i64)> = (0..N).map(|i| (value(i), -i)).collect();
    want.sort_unstable();
    let got: Vec<(i64, i64)> = found.iter().map(|d| (int(d, "v"), -int(d, "i"))).collect();
    assert_eq!(got, want);
}

#[test]
fn bounded_windows_are_computed_in_chunks_and_match_sums_by_hand() {
    let (_dir, _db, coll) = database(16 << 10);
    let window = |partition: Option<&str>| {
        let mut spec = doc! {
            "sortBy": { "t": 1 },
            "output": {
                "around": { "$sum": "$v", "window": { "documents": [-3, 2] } },
                "before": { "$push": "$i", "window": { "documents": [-2, -1] } },
                "n": { "$count": {}, "window": { "documents": ["current", 5] } },
            },
        };
        if let Some(p) = partition {
            spec.insert("partitionBy", p);
        }
        doc! { "$setWindowFields": spec }
    };
    for partition in [None, Some("$m")] {
        let out: Vec<Document> = coll
            .aggregate_cursor(&[window(partition)])
            .expect("aggregate")
            .collect::<Result<_, _>>()
            .expect("read");
        assert_eq!(out.len(), N as usize);
        // The partitions in order (by `m`, or the whole), each in time order.
        let parts: Vec<Vec<i64>> = match partition {
            None => vec![(0..N).collect()],
            Some(_) => (0..3).map(|m| (m..N).step_by(3).collect()).collect(),
        };
        let mut at = 0;
        for part in &parts {
            for (k, &i) in part.iter().enumerate() {
                let d = &out[at];
                at += 1;
                assert_eq!(int(d, "i"), i, "{partition:?}");
                let range = |lo: i64, hi: i64| {
                    let lo = (k as i64 + lo).max(0) as usize;
                    let hi = (k as i64 + hi).min(part.len() as i64 - 1);
                    if hi < lo as i64 {
                        &part[0..0]
                    } else {
                        &part[lo..=hi as usize]
                    }
                };
                let sum: i64 = range(-3, 2).iter().map(|&j| value(j)).sum();
                assert_eq!(int(d, "around"), sum, "{partition:?} {d}");
                let before: Vec<Bson> = range(-2, -1).iter().map(|&j| Bson::Int64(j)).collect();
                assert_eq!(d.get_array("before").expect("before"), &before, "{d}");
                assert_eq!(int(d, "n"), range(0, 5).len() as i64, "{d}");
            }
        }
    }
    // A window over the whole partition holds it, and agrees.
    let totals = coll
        .aggregate(&[
            doc! { "$setWindowFields": {
                "partitionBy": "$m",
                "output": { "total": { "$sum": "$v" } },
            } },
            doc! { "$group": { "_id": "$m", "total": { "$first": "$total" } } },
        ])
        .expect("aggregate");
    for d in totals {
        let m = int(&d, "_id");
        let want: i64 = (m..N).step_by(3).map(value).sum();
        assert_eq!(int(&d, "total"), want, "{d}");
    }
}
