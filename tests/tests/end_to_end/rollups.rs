//! Rollups are exact: random inserts, deletes, updates, TTL passes and restarts run against
//! two collections with the same options but for rollups (minutes and hours), and every
//! aggregate — answered from rollup rows by one, by decoding or control records by the
//! other — must give the same groups.

use bson::{Bson, DateTime, Document, doc};
use proptest::prelude::*;
use tscoll_engine::{
    Accumulator, AggregateSpec, Collection, Database, DatabaseOptions, FindOptions, InsertOptions,
    TimeseriesOptions,
};

const MINUTE: i64 = 60_000;
const HOUR: i64 = 3_600_000;

#[derive(Clone, Debug)]
enum V {
    Int(i32),
    Long(i64),
    Double(f64),
    Text,
    Missing,
}

#[derive(Clone, Debug)]
enum Op {
    /// `(series, minute, v, w)` per measurement.
    Insert(Vec<(u8, u16, V, Option<i32>)>),
    DeleteBelow(i32),
    DeleteSeries(u8),
    UpdateSeries(u8, i32),
    Expire(u16),
    Restart,
}

fn value() -> impl Strategy<Value = V> {
    prop_oneof![
        6 => (-50..50i32).prop_map(V::Int),
        2 => (-1_000_000_000_000i64..1_000_000_000_000).prop_map(V::Long),
        2 => (-200..200i32).prop_map(|x| V::Double(f64::from(x) + 0.25)),
        1 => Just(V::Text),
        1 => Just(V::Missing),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => prop::collection::vec((0..3u8, 0..900u16, value(), prop::option::of(-9..9i32)), 1..80)
            .prop_map(Op::Insert),
        1 => (-50..50i32).prop_map(Op::DeleteBelow),
        1 => (0..3u8).prop_map(Op::DeleteSeries),
        1 => (0..3u8, -9..9i32).prop_map(|(s, w)| Op::UpdateSeries(s, w)),
        1 => (0..1000u16).prop_map(Op::Expire),
        2 => Just(Op::Restart),
    ]
}

fn options(rollups: bool) -> TimeseriesOptions {
    let o = TimeseriesOptions::new("t")
        .meta_field("m")
        .expire_after_seconds(7200);
    if rollups {
        o.rollups(&[MINUTE, HOUR])
    } else {
        o
    }
}

fn open(dir: &std::path::Path) -> (Database, Collection, Collection) {
    let db = Database::open(dir, DatabaseOptions::default()).expect("open");
    let a = db
        .create_collection("rolled", &options(true))
        .expect("create");
    let b = db
        .create_collection("plain", &options(false))
        .expect("create");
    (db, a, b)
}

fn specs() -> Vec<AggregateSpec> {
    let outputs = |f: &str| {
        vec![
            ("n".to_owned(), Accumulator::Count),
            ("nums".to_owned(), Accumulator::CountNumbers(f.to_owned())),
            ("sum".to_owned(), Accumulator::Sum(f.to_owned())),
            ("typed".to_owned(), Accumulator::SumTyped(f.to_owned())),
            ("avg".to_owned(), Accumulator::Avg(f.to_owned())),
            ("lo".to_owned(), Accumulator::Min(f.to_owned())),
            ("hi".to_owned(), Accumulator::Max(f.to_owned())),
            ("first".to_owned(), Accumulator::First(f.to_owned())),
            ("last".to_owned(), Accumulator::Last(f.to_owned())),
            ("t0".to_owned(), Accumulator::Min("t".to_owned())),
            ("t1".to_owned(), Accumulator::Max("t".to_owned())),
            ("tf".to_owned(), Accumulator::First("t".to_owned())),
        ]
    };
    let mut out = Vec::new();
    for window_ms in [MINUTE, 30 * MINUTE, HOUR, 3 * HOUR, 86_400_000, 90_000] {
        for by_series in [true, false] {
            for f in ["v", "w"] {
                out.push(AggregateSpec {
                    window_ms,
                    by_series,
                    outputs: outputs(f),
                });
            }
        }
    }
    out
}

fn filters() -> Vec<Document> {
    vec![
        doc! {},
        doc! { "m": "s1" },
        doc! { "t": { "$gte": DateTime::from_millis(2 * HOUR), "$lt": DateTime::from_millis(5 * HOUR) } },
        doc! { "t": { "$gt": DateTime::from_millis(HOUR + 90_000) }, "m": { "$in": ["s0", "s2"] } },
    ]
}

/// Equal groups, double values within a relative 1e-9 (sums added in another order).
fn same(a: &Bson, b: &Bson) -> bool {
    match (a, b) {
        (Bson::Double(x), Bson::Double(y)) => {
            x == y || (x - y).abs() <= 1e-9 * x.abs().max(y.abs()) || (x.is_nan() && y.is_nan())
        }
        (Bson::Document(x), Bson::Document(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((ka, va), (kb, vb))| ka == kb && same(va, vb))
        }
        _ => a == b,
    }
}

/// Runs every aggregate on both collections; returns the buckets answered from rollups.
fn check(a: &Collection, b: &Collection) -> Result<u64, TestCaseError> {
    let mut rolled = 0;
    for filter in filters() {
        for spec in specs() {
            let (got, stats) = a
                .aggregate_windows_with_stats(&filter, &spec)
                .expect("aggregate");
            let want = b.aggregate_windows(&filter, &spec).expect("aggregate");
            rolled += stats.buckets_from_rollup;
            prop_assert_eq!(got.len(), want.len(), "{:?} {:?}", filter, spec.window_ms);
            for (g, w) in got.iter().zip(&want) {
                prop_assert!(
                    same(&Bson::Document(g.clone()), &Bson::Document(w.clone())),
                    "filter {:?} window {} by series {}:\nrollups {:?}\nplain   {:?}",
                    filter,
                    spec.window_ms,
                    spec.by_series,
                    g,
                    w
                );
            }
        }
    }
    Ok(rolled)
}

fn run(ops: &[Op]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut db, mut a, mut b) = open(dir.path());
    // Every measurement has a time of its own: first and last are never a tie.
    let mut counter = 0i64;
    for op in ops {
        match op {
            Op::Insert(rows) => {
                let docs: Vec<Document> = rows
                    .iter()
                    .map(|(s, minute, v, w)| {
                        counter += 1;
                        let mut d = doc! {
                            "t": DateTime::from_millis(i64::from(*minute) * MINUTE + counter),
                            "m": format!("s{s}"),
                        };
                        match v {
                            V::Int(i) => d.insert("v", *i),
                            V::Long(i) => d.insert("v", *i),
                            V::Double(x) => d.insert("v", *x),
                            V::Text => d.insert("v", "text"),
                            V::Missing => None,
                        };
                        if let Some(w) = w {
                            d.insert("w", *w);
                        }
                        d
                    })
                    .collect();
                let opts = InsertOptions::default();
                a.insert_many(&docs, &opts).expect("insert");
                b.insert_many(&docs, &opts).expect("insert");
            }
            Op::DeleteBelow(x) => {
                let f = doc! { "v": { "$lt": *x } };
                prop_assert_eq!(
                    a.delete_many(&f).expect("delete").deleted,
                    b.delete_many(&f).expect("delete").deleted
                );
            }
            Op::DeleteSeries(s) => {
                let f = doc! { "m": format!("s{s}") };
                prop_assert_eq!(
                    a.delete_many(&f).expect("delete").deleted,
                    b.delete_many(&f).expect("delete").deleted
                );
            }
            Op::UpdateSeries(s, w) => {
                let f = doc! { "m": format!("s{s}") };
                let u = doc! { "$set": { "w": *w } };
                prop_assert_eq!(
                    a.update_many(&f, &u).expect("update").modified,
                    b.update_many(&f, &u).expect("update").modified
                );
            }
            Op::Expire(minute) => {
                let now = i64::from(*minute) * MINUTE + 7_200_000;
                prop_assert_eq!(
                    a.expire(now).expect("expire").measurements,
                    b.expire(now).expect("expire").measurements
                );
            }
            Op::Restart => {
                drop((a, b));
                db.close().expect("close");
                drop(db);
                (db, a, b) = open(dir.path());
            }
        }
    }
    check(&a, &b)?;
    // Once stored, buckets are answered from their rollups.
    drop((a, b));
    db.close().expect("close");
    drop(db);
    let (_db, a, b) = open(dir.path());
    let rolled = check(&a, &b)?;
    let stored = a
        .aggregate_windows(&doc! {}, &specs()[0])
        .expect("aggregate")
        .len();
    prop_assert!(stored == 0 || rolled > 0, "no bucket answered from rollups");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn aggregates_from_rollups_equal_aggregates_from_buckets(ops in prop::collection::vec(op(), 1..12)) {
        run(&ops)?;
    }
}

#[test]
fn stored_buckets_are_answered_from_rollups_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, a, _) = open(dir.path());
    let docs: Vec<Document> = (0..600)
        .map(
            |i| doc! { "t": DateTime::from_millis(i * 20_000), "m": format!("s{}", i % 3), "v": i },
        )
        .collect();
    a.insert_many(&docs, &InsertOptions::default())
        .expect("insert");
    drop(a);
    db.close().expect("close");
    drop(db);
    let (_db, a, _) = open(dir.path());
    let spec = AggregateSpec {
        window_ms: HOUR,
        by_series: true,
        outputs: vec![
            ("n".to_owned(), Accumulator::Count),
            ("avg".to_owned(), Accumulator::Avg("v".to_owned())),
            ("last".to_owned(), Accumulator::Last("v".to_owned())),
        ],
    };
    let (groups, stats) = a
        .aggregate_windows_with_stats(&doc! {}, &spec)
        .expect("aggregate");
    // 600 measurements every 20 s: 200 minutes, 4 hours, 3 series.
    assert_eq!(groups.len(), 12);
    assert_eq!(
        groups[0],
        doc! { "_id": { "m": "s0", "t": DateTime::from_millis(0) }, "n": 60_i64, "avg": 88.5, "last": 177_i64 }
    );
    assert!(stats.buckets_from_rollup > 0);
    assert_eq!(stats.buckets_unpacked, 0);
    assert_eq!(stats.buckets_read, 0);
    assert!(a.stats().expect("stats").rollup_bytes > 0);
}

#[test]
fn a_date_near_the_smallest_is_stored_without_a_rollup() {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = TimeseriesOptions::new("t").meta_field("m").rollups(&[HOUR]);
    let docs = vec![
        doc! { "t": DateTime::from_millis(i64::MIN), "m": "old", "v": 1 },
        doc! { "t": DateTime::from_millis(i64::MIN + 5), "m": "old", "v": 2 },
        doc! { "t": DateTime::from_millis(HOUR), "m": "new", "v": 3 },
    ];
    {
        let db = Database::open(dir.path(), DatabaseOptions::default()).expect("open");
        let a = db.create_collection("c", &options).expect("create");
        a.insert_many(&docs, &InsertOptions::default())
            .expect("insert");
        drop(a);
        // Storing the buckets computes their rollups.
        db.close().expect("close");
    }
    let db = Database::open(dir.path(), DatabaseOptions::default()).expect("open");
    let a = db.collection("c").expect("collection");
    let found = a.find(&doc! {}, &FindOptions::default()).expect("find");
    assert_eq!(found.len(), 3);
    let spec = AggregateSpec {
        window_ms: HOUR,
        by_series: false,
        outputs: vec![("n".to_owned(), Accumulator::Count)],
    };
    // The new bucket from its rollup; the old one (no rollup) read as usual.
    let filter = doc! { "t": { "$gte": DateTime::from_millis(0) } };
    let (groups, stats) = a
        .aggregate_windows_with_stats(&filter, &spec)
        .expect("aggregate");
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0].get_i64("n").ok(), Some(1));
    assert_eq!(stats.buckets_from_rollup, 1);
}
