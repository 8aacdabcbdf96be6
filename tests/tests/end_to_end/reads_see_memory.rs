//! Every query kind sees every acknowledged measurement, whether its bucket is stored, open
//! in memory, stored in parts with more rows in memory, or stored while a cursor is open:
//! a differential test against a plain list of the measurements inserted, with inserts in
//! and out of time order, rollovers, flushes, checkpoints and deletes in between.

use std::collections::{BTreeMap, BTreeSet};

use bson::{Bson, Document, doc};
use tscoll_engine::{
    Accumulator, AggregateSpec, CatalogOptions, Collection, FindOptions, SortOrder,
    TimeseriesOptions,
};
use tscoll_tests::Rng;
use tscoll_tests::arrow::{documents, find_arrow};
use tscoll_tests::spec::{T0, at, insert_all, temp_collection};

const MIN: i64 = 60_000;
const HOUR: i64 = 3_600_000;
const SERIES: i64 = 5;

/// `(_id, time, series, v)` of a measurement.
type Row = (i64, i64, String, i64);

fn row(d: &Document) -> Row {
    (
        d.get_i64("_id").expect("_id"),
        d.get_datetime("t").expect("t").timestamp_millis() - T0,
        d.get_str("m").expect("m").to_owned(),
        d.get_i64("v").expect("v"),
    )
}

fn matches(r: &Row, series: Option<&str>, from: i64, to: i64) -> bool {
    series.is_none_or(|s| r.2 == s) && r.1 >= from && r.1 < to
}

fn filter(series: Option<&str>, from: i64, to: i64) -> Document {
    let mut f = doc! { "t": { "$gte": at(from), "$lt": at(to) } };
    if let Some(s) = series {
        f.insert("m", s);
    }
    f
}

/// Runs every query kind on `coll` and compares it with `model`.
fn check(coll: &Collection, model: &BTreeMap<i64, Row>, rng: &mut Rng, ctx: &str) {
    let all: BTreeSet<Row> = model.values().cloned().collect();
    let found: BTreeSet<Row> = coll
        .find(&doc! {}, &FindOptions::default())
        .expect("find")
        .iter()
        .map(row)
        .collect();
    assert_eq!(found, all, "{ctx}: find");
    assert_eq!(
        coll.count(&doc! {}).expect("count"),
        model.len() as u64,
        "{ctx}"
    );

    let max_t = model.values().map(|r| r.1).max().unwrap_or(0);
    let from = i64::try_from(rng.below(u64::try_from(max_t).unwrap_or(0) + 1)).expect("t");
    let to = from + i64::try_from(rng.below(6 * HOUR as u64)).expect("t") + 1;
    let series = (rng.below(3) > 0).then(|| format!("s{}", rng.below(SERIES as u64)));
    let f = filter(series.as_deref(), from, to);
    let want: BTreeSet<Row> = all
        .iter()
        .filter(|r| matches(r, series.as_deref(), from, to))
        .cloned()
        .collect();
    let ctx = format!("{ctx}, filter {f}");
    let found: BTreeSet<Row> = coll
        .find(&f, &FindOptions::default())
        .expect("find")
        .iter()
        .map(row)
        .collect();
    assert_eq!(found, want, "{ctx}: find");
    assert_eq!(
        coll.count(&f).expect("count"),
        want.len() as u64,
        "{ctx}: count"
    );
    let (batches, _) = find_arrow(coll, &f, &FindOptions::default());
    let arrow_rows: BTreeSet<(i64, String, i64)> = documents(&batches)
        .iter()
        .map(|d| {
            (
                d.get_datetime("t").expect("t").timestamp_millis() - T0,
                d.get_str("m").expect("m").to_owned(),
                d.get_i64("v").expect("v"),
            )
        })
        .collect();
    let want_rows: BTreeSet<(i64, String, i64)> =
        want.iter().map(|r| (r.1, r.2.clone(), r.3)).collect();
    assert_eq!(arrow_rows, want_rows, "{ctx}: find_arrow");

    // Sorted with a limit, and the streaming cursor sorted without one.
    let top: Vec<i64> = coll
        .find(
            &f,
            &FindOptions {
                sort: Some(SortOrder::Descending),
                limit: Some(3),
                ..FindOptions::default()
            },
        )
        .expect("top")
        .iter()
        .map(|d| row(d).1)
        .collect();
    let mut times: Vec<i64> = want.iter().map(|r| r.1).collect();
    times.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(top, times[..times.len().min(3)], "{ctx}: top 3");
    let ascending: Vec<i64> = coll
        .find_cursor(
            &f,
            &FindOptions {
                sort: Some(SortOrder::Ascending),
                ..FindOptions::default()
            },
        )
        .expect("cursor")
        .map(|d| row(&d.expect("row")).1)
        .collect();
    times.reverse();
    assert_eq!(ascending, times, "{ctx}: cursor");

    // Last point per series (times are distinct within a series).
    let mut last: BTreeMap<String, Row> = BTreeMap::new();
    for r in &want {
        if last.get(&r.2).is_none_or(|l| r.1 > l.1) {
            last.insert(r.2.clone(), r.clone());
        }
    }
    let found: Vec<Row> = coll
        .last_points(&f)
        .expect("last")
        .iter()
        .map(row)
        .collect();
    assert_eq!(
        found,
        last.into_values().collect::<Vec<_>>(),
        "{ctx}: last points"
    );

    // Count and sum per series and hour.
    let spec = AggregateSpec {
        window_ms: HOUR,
        by_series: true,
        outputs: vec![
            ("n".into(), Accumulator::Count),
            ("sum".into(), Accumulator::Sum("v".into())),
        ],
    };
    let mut groups: BTreeMap<(String, i64), (i64, i64)> = BTreeMap::new();
    for r in &want {
        let g = groups
            .entry((r.2.clone(), (T0 + r.1).div_euclid(HOUR)))
            .or_default();
        g.0 += 1;
        g.1 += r.3;
    }
    let found: BTreeMap<(String, i64), (i64, i64)> = coll
        .aggregate_windows(&f, &spec)
        .expect("aggregate")
        .iter()
        .map(|g| {
            let id = g.get_document("_id").expect("_id");
            let key = (
                id.get_str("m").expect("m").to_owned(),
                id.get_datetime("t")
                    .expect("t")
                    .timestamp_millis()
                    .div_euclid(HOUR),
            );
            let sum = match g.get("sum") {
                Some(Bson::Int64(n)) => *n,
                Some(Bson::Int32(n)) => i64::from(*n),
                #[expect(clippy::cast_possible_truncation, reason = "sums of small integers")]
                Some(Bson::Double(x)) if x.fract() == 0.0 => *x as i64,
                other => panic!("{ctx}: sum {other:?}"),
            };
            (key, (g.get_i64("n").expect("n"), sum))
        })
        .collect();
    assert_eq!(found, groups, "{ctx}: aggregate");
}

#[test]
fn every_query_kind_sees_rows_in_memory_and_stored_alike() {
    for seed in 1..=4_u64 {
        let (_d, _db, coll) = temp_collection(
            CatalogOptions::default(),
            &TimeseriesOptions::new("t").meta_field("m"),
        );
        let mut rng = Rng(seed);
        let mut model: BTreeMap<i64, Row> = BTreeMap::new();
        let mut next_time = [0_i64; SERIES as usize];
        let mut next_id = 0_i64;
        for step in 0..40 {
            let ctx = format!("seed {seed}, step {step}");
            match rng.below(10) {
                0 => coll.flush().expect("flush"),
                1 => coll.checkpoint().expect("checkpoint"),
                2 if step % 3 == 0 => {
                    let s = format!("s{}", rng.below(SERIES as u64));
                    let deleted = coll.delete_many(&doc! { "m": &s }).expect("delete").deleted;
                    let before = model.len();
                    model.retain(|_, r| r.2 != s);
                    assert_eq!(deleted as usize, before - model.len(), "{ctx}: delete");
                }
                _ => {
                    let mut docs = Vec::new();
                    for _ in 0..=rng.below(60) {
                        let s = rng.below(SERIES as u64) as usize;
                        // Mostly forward in time, now and then before the series' latest
                        // (into a bucket stored or open), times distinct per series.
                        let t = if rng.below(8) == 0 && next_time[s] > HOUR {
                            next_time[s] - HOUR - (next_id % 997) * 7 - 3
                        } else {
                            next_time[s] +=
                                i64::try_from(rng.below(5 * MIN as u64)).expect("t") * 7 + 7;
                            next_time[s]
                        };
                        let d = doc! { "_id": next_id, "t": at(t), "m": format!("s{s}"), "v": next_id % 100 };
                        model.insert(next_id, row(&d));
                        docs.push(d);
                        next_id += 1;
                    }
                    // An older time may repeat one of the series: keep times distinct.
                    docs.retain(|d| {
                        let r = row(d);
                        let dup = model
                            .values()
                            .any(|m| m.2 == r.2 && m.1 == r.1 && m.0 != r.0);
                        if dup {
                            model.remove(&r.0);
                        }
                        !dup
                    });
                    insert_all(&coll, &docs);
                }
            }
            check(&coll, &model, &mut rng, &ctx);
        }
    }
}

#[test]
fn a_cursor_reads_each_row_once_when_its_bucket_is_stored_meanwhile() {
    let (_d, _db, coll) = temp_collection(
        CatalogOptions::default(),
        &TimeseriesOptions::new("t").meta_field("m"),
    );
    let docs: Vec<Document> = (0..20_i64)
        .map(|i| doc! { "_id": i, "t": at(i * MIN), "m": format!("s{}", i % 2), "v": i })
        .collect();
    insert_all(&coll, &docs);
    let cursor = coll
        .find_cursor(&doc! {}, &FindOptions::default())
        .expect("cursor");
    // Both open buckets leave memory (rollover, a new hour) and are stored whole, then get
    // a part of new rows stored by a flush, before the cursor reads them.
    let later: Vec<Document> = (20..24_i64)
        .map(|i| doc! { "_id": i, "t": at(2 * HOUR + i * MIN), "m": format!("s{}", i % 2), "v": i })
        .collect();
    insert_all(&coll, &later);
    coll.flush().expect("flush");
    let seen: Vec<i64> = cursor.map(|d| row(&d.expect("row")).0).collect();
    let unique: BTreeSet<i64> = seen.iter().copied().collect();
    assert_eq!(unique.len(), seen.len(), "a row twice: {seen:?}");
    assert!((0..20).all(|i| unique.contains(&i)), "{seen:?}");
}

#[test]
fn reads_beside_a_writer_see_every_acknowledged_measurement_once() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let (_d, _db, coll) = temp_collection(
        CatalogOptions::default(),
        &TimeseriesOptions::new("t").meta_field("m"),
    );
    // Acknowledged (insert returned) and attempted (insert called) measurements.
    let acked = AtomicU64::new(0);
    let attempted = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            // 50 series, one point per series every 10 minutes: every sixth batch rolls
            // every bucket over, so buckets leave memory and are stored all the time.
            for step in 0..300_i64 {
                let docs: Vec<Document> = (0..50_i64)
                    .map(|k| doc! { "t": at(step * 10 * MIN + k), "m": format!("s{k}"), "v": step })
                    .collect();
                attempted.fetch_add(50, Ordering::SeqCst);
                insert_all(&coll, &docs);
                acked.fetch_add(50, Ordering::SeqCst);
            }
            done.store(true, Ordering::SeqCst);
        });
        let mut reads = 0;
        while !done.load(Ordering::SeqCst) || reads == 0 {
            let low = acked.load(Ordering::SeqCst);
            let n = coll.count(&doc! {}).expect("count");
            let found = coll
                .find(&doc! { "m": "s7" }, &FindOptions::default())
                .expect("find")
                .len() as u64;
            let high = attempted.load(Ordering::SeqCst);
            assert!(n >= low && n <= high, "count {n} outside [{low}, {high}]");
            assert!(
                found * 50 >= low && found * 50 <= high,
                "series s7: {found} rows, [{low}, {high}]"
            );
            reads += 1;
        }
        assert!(reads > 1);
    });
    assert_eq!(coll.count(&doc! {}).expect("count"), 300 * 50);
}
