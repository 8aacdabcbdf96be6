//! SPEC, single-writer determinism: with one writer and one measurement per insert
//! call, the bucket assignment is the one the §6.2 algorithm gives. Checked two ways on random
//! sequences: against a small reference model of §6.2/§6.3 for sequences whose rollovers are
//! time-forward, count and schema changes only; and, for any sequence (time-backward
//! archives and reopening included), by inserting the same sequence into two databases and
//! getting the same buckets and counters.

use std::collections::BTreeSet;

use bson::{Bson, Document, doc};
use proptest::prelude::*;
use tscoll_engine::{CatalogOptions, Collection, StatsSnapshot};
use tscoll_tests::spec::{at, insert_each, options, temp_collection};

const MINUTE: i64 = 60_000;
const SPAN_MS: i64 = 3_600_000;
const MAX_COUNT: u32 = 4;

/// One measurement: series, time (ms after `T0`), and whether `v` is a string (a schema
/// change when it differs from the bucket's).
#[derive(Clone, Debug)]
struct Op {
    series: u8,
    time: i64,
    text: bool,
}

fn document(i: usize, op: &Op) -> Document {
    let v = if op.text {
        Bson::String(format!("v{i}"))
    } else {
        Bson::Int64(i as i64)
    };
    doc! { "_id": i as i64, "t": at(op.time), "m": i64::from(op.series), "v": v }
}

fn catalog() -> CatalogOptions {
    CatalogOptions {
        bucket_max_count: MAX_COUNT,
        ..CatalogOptions::default()
    }
}

/// Inserts the sequence one measurement per call; returns the buckets (sets of `_id`s) and
/// the counters.
fn run(ops: &[Op]) -> (BTreeSet<Vec<i64>>, StatsSnapshot) {
    let (_dir, _db, coll) = temp_collection(catalog(), &options(true));
    let docs: Vec<Document> = ops
        .iter()
        .enumerate()
        .map(|(i, o)| document(i, o))
        .collect();
    insert_each(&coll, &docs);
    (partition(&coll), coll.stats().expect("stats").execution)
}

fn partition(coll: &Collection) -> BTreeSet<Vec<i64>> {
    coll.buckets()
        .expect("buckets")
        .iter()
        .map(|b| {
            let ids = b
                .get_document("data")
                .and_then(|d| d.get_document("_id"))
                .expect("data._id");
            let mut v: Vec<i64> = ids.values().map(|x| x.as_i64().expect("id")).collect();
            v.sort_unstable();
            v
        })
        .collect()
}

/// The §6.2 algorithm for sequences where each series' times never go back below its open
/// bucket's min time: per series one open bucket (rounded min time, count, type of `v`);
/// a measurement rolls it over for time forward, count, then schema change (§6.3 order), and
/// a new bucket is never reopened (every rollover reason here disables query-based
/// reopening, and nothing is archived).
fn reference(ops: &[Op]) -> BTreeSet<Vec<i64>> {
    struct Open {
        min: i64,
        text: bool,
        ids: Vec<i64>,
    }
    let mut open: Vec<Option<Open>> = (0..4).map(|_| None).collect();
    let mut done = BTreeSet::new();
    for (i, op) in ops.iter().enumerate() {
        let slot = &mut open[usize::from(op.series)];
        let t = absolute_time(op.time);
        let fits = slot.as_ref().is_some_and(|b| {
            t - b.min < SPAN_MS && b.ids.len() < MAX_COUNT as usize && b.text == op.text
        });
        if !fits {
            if let Some(b) = slot.take() {
                done.insert(b.ids);
            }
            *slot = Some(Open {
                min: t.div_euclid(MINUTE) * MINUTE,
                text: op.text,
                ids: Vec::new(),
            });
        }
        if let Some(b) = slot.as_mut() {
            b.ids.push(i as i64);
        }
    }
    done.extend(open.into_iter().flatten().map(|b| b.ids));
    done
}

/// Absolute time (ms) of an offset from `T0`.
fn absolute_time(offset: i64) -> i64 {
    at(offset).timestamp_millis()
}

/// Sequences whose times per series never decrease (steps of 0 to 40 minutes).
fn forward_ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        (0u8..4, 0i64..=40 * MINUTE, prop::bool::weighted(0.15)),
        1..40,
    )
    .prop_map(|steps| {
        let mut clock = [0i64; 4];
        steps
            .into_iter()
            .map(|(series, step, text)| {
                let c = &mut clock[usize::from(series)];
                *c += step;
                Op {
                    series,
                    time: *c,
                    text,
                }
            })
            .collect()
    })
}

/// Any sequence: times anywhere in a 3-hour window, so measurements go back in time, buckets
/// are archived and reopened.
fn any_ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        (0u8..3, 0i64..180 * MINUTE, prop::bool::weighted(0.1))
            .prop_map(|(series, time, text)| Op { series, time, text }),
        1..40,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn r_6_2_1_assignment_is_the_algorithms(ops in forward_ops()) {
        let (buckets, _) = run(&ops);
        prop_assert_eq!(buckets, reference(&ops));
    }

    #[test]
    fn r_6_2_1_same_sequence_same_buckets_and_counters(ops in any_ops()) {
        let (a, sa) = run(&ops);
        let (b, sb) = run(&ops);
        prop_assert_eq!(&a, &b);
        prop_assert_eq!(sa, sb);
        let stored: usize = a.iter().map(Vec::len).sum();
        prop_assert_eq!(stored, ops.len());
    }
}
