//! SPEC §14 conformance: queries. Bucket-level pushdown with control min/max (§14.4), the
//! whole-bucket form (R-14.4.4), the span after collMod (R-14.4.5), fixed bucketing
//! (R-14.4.6), counts from `control.count` (R-14.1.4), last point per series, sort with a
//! limit that stops early, windowed aggregates and the columnar result (R-14.4.7).
//!
//! Every test checks the engine's answer against a straightforward computation over the
//! inserted measurements, and the [`QueryStats`] counters show how the answer was reached.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};

use bson::{Bson, DateTime, Document, doc};
use proptest::prelude::*;
use tscoll_engine::{
    Accumulator, AggregateSpec, CatalogOptions, Collection, Database, FindOptions, IndexOptions,
    OutputValues, QueryStats, SortOrder, TimeseriesOptions,
};
use tscoll_tests::arrow::{documents, find_arrow, times as arrow_times};
use tscoll_tests::spec::{insert_all, temp_collection};

/// An hour-aligned base time (ms).
const H0: i64 = 1_699_999_200_000;
const MIN: i64 = 60_000;
const HOUR: i64 = 3_600_000;

fn at(ms: i64) -> DateTime {
    DateTime::from_millis(H0 + ms)
}

fn setup(opts: &TimeseriesOptions) -> (tempfile::TempDir, Database, Collection) {
    temp_collection(CatalogOptions::default(), opts)
}

fn meta_opts() -> TimeseriesOptions {
    TimeseriesOptions::new("t").meta_field("m")
}

// ---- a reference evaluator of filters over the inserted measurements -----------------------

fn rank(v: &Bson) -> i32 {
    match v {
        Bson::Null => 5,
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) => 10,
        Bson::String(_) => 15,
        Bson::Document(_) => 20,
        Bson::Array(_) => 25,
        Bson::Boolean(_) => 40,
        Bson::DateTime(_) => 45,
        other => panic!("no reference order for {other}"),
    }
}

#[expect(clippy::cast_precision_loss, reason = "small test values")]
fn num(v: &Bson) -> f64 {
    match v {
        Bson::Int32(i) => f64::from(*i),
        Bson::Int64(i) => *i as f64,
        Bson::Double(d) => *d,
        _ => f64::NAN,
    }
}

/// BSON order for the value types these tests use (NaN below every other number).
fn order(a: &Bson, b: &Bson) -> Ordering {
    rank(a).cmp(&rank(b)).then_with(|| match (a, b) {
        (Bson::String(x), Bson::String(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Bson::DateTime(x), Bson::DateTime(y)) => x.cmp(y),
        (Bson::Boolean(x), Bson::Boolean(y)) => x.cmp(y),
        (Bson::Document(x), Bson::Document(y)) => {
            let xs: Vec<_> = x.iter().collect();
            let ys: Vec<_> = y.iter().collect();
            for ((ka, va), (kb, vb)) in xs.iter().zip(&ys) {
                let o = ka.cmp(kb).then_with(|| order(va, vb));
                if o != Ordering::Equal {
                    return o;
                }
            }
            xs.len().cmp(&ys.len())
        }
        (Bson::Array(x), Bson::Array(y)) => x
            .iter()
            .zip(y)
            .map(|(p, q)| order(p, q))
            .find(|o| *o != Ordering::Equal)
            .unwrap_or_else(|| x.len().cmp(&y.len())),
        (Bson::Null, Bson::Null) => Ordering::Equal,
        _ if rank(a) == 10 => {
            let (x, y) = (num(a), num(b));
            (!x.is_nan(), x)
                .partial_cmp(&(!y.is_nan(), y))
                .unwrap_or(Ordering::Equal)
        }
        _ => Ordering::Equal,
    })
}

fn holds(o: Ordering, op: &str) -> bool {
    match op {
        "$eq" => o == Ordering::Equal,
        "$gt" => o == Ordering::Greater,
        "$gte" => o != Ordering::Less,
        "$lt" => o == Ordering::Less,
        "$lte" => o != Ordering::Greater,
        other => panic!("operator {other}"),
    }
}

/// MongoDB's comparison of one value a path reached: a missing value matches only `null`
/// (`$eq`, `$gte`, `$lte`); other types never match; NaN only matches NaN, and only with
/// `$eq`, `$gte`, `$lte`; arrays are compared whole.
fn value_matches(v: Option<&Bson>, op: &str, operand: &Bson) -> bool {
    let nan = |x: &Bson| matches!(x, Bson::Double(d) if d.is_nan());
    match v {
        None => matches!(operand, Bson::Null) && matches!(op, "$eq" | "$gte" | "$lte"),
        Some(x) if rank(x) != rank(operand) => false,
        Some(x) if nan(x) || nan(operand) => {
            nan(x) && nan(operand) && matches!(op, "$eq" | "$gte" | "$lte")
        }
        Some(x) => holds(order(x, operand), op),
    }
}

/// The values a query looks at for dotted `path` in `doc` (`None`: missing). Through a
/// document the path goes on in its field (a missing field, or a scalar with path left, is
/// one missing value); through an array, in each of its documents, and a numeric part also
/// picks the element at that position; other elements (nested arrays too) give nothing. An
/// array at the end of the path gives its elements, then itself when `leaf` (only itself
/// otherwise: `$size`).
fn query_values(doc: &Document, path: &str, leaf: bool) -> Vec<Option<Bson>> {
    fn below(v: Option<&Bson>, parts: &[&str], leaf: bool, out: &mut Vec<Option<Bson>>) {
        let Some((p, rest)) = parts.split_first() else {
            if let (Some(Bson::Array(items)), true) = (v, leaf) {
                out.extend(items.iter().cloned().map(Some));
            }
            out.push(v.cloned());
            return;
        };
        match v {
            Some(Bson::Document(d)) => below(d.get(*p), rest, leaf, out),
            Some(Bson::Array(items)) => {
                for (i, e) in items.iter().enumerate() {
                    if let Bson::Document(d) = e {
                        below(d.get(*p), rest, leaf, out);
                    }
                    if *p == i.to_string() {
                        if rest.is_empty() {
                            out.push(Some(e.clone()));
                        } else if matches!(e, Bson::Document(_) | Bson::Array(_)) {
                            below(Some(e), rest, leaf, out);
                        }
                    }
                }
            }
            _ => out.push(None),
        }
    }
    let parts: Vec<&str> = path.split('.').collect();
    let mut out = Vec::new();
    below(doc.get(parts[0]), &parts[1..], leaf, &mut out);
    out
}

fn get_path<'a>(doc: &'a Document, path: &str) -> Option<&'a Bson> {
    let mut parts = path.split('.');
    let mut cur = doc.get(parts.next()?)?;
    for p in parts {
        cur = match cur {
            Bson::Document(d) => d.get(p)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// Whether `doc` passes one operator of the condition on `path`: a positive operator when one
/// of the values the query looks at passes it; `$ne`, `$nin` and `$not` when none passes
/// what they negate; `$all` when each operand is matched.
fn op_matches(doc: &Document, path: &str, op: &str, operand: &Bson) -> bool {
    let any = |f: &dyn Fn(Option<&Bson>) -> bool| {
        query_values(doc, path, true).iter().any(|v| f(v.as_ref()))
    };
    let list = || operand.as_array().expect("array operand");
    let in_list = || any(&|v| list().iter().any(|x| value_matches(v, "$eq", x)));
    match op {
        "$in" => in_list(),
        "$nin" => !in_list(),
        // MongoDB: `$ne` is the negation of `$eq`, so a missing field is "not equal".
        "$ne" => !any(&|v| value_matches(v, "$eq", operand)),
        "$all" => {
            !list().is_empty()
                && list()
                    .iter()
                    .all(|x| any(&|v| value_matches(v, "$eq", x)))
        }
        "$size" => query_values(doc, path, false).iter().any(|v| {
            matches!(v, Some(Bson::Array(items)) if Bson::Int32(items.len() as i32) == *operand)
        }),
        "$exists" => any(&|v| v.is_some()) == operand.as_bool().expect("$exists bool"),
        "$not" => !operand
            .as_document()
            .expect("$not document")
            .iter()
            .all(|(op, x)| op_matches(doc, path, op, x)),
        // The kinds these tests generate: names for the numeric kinds, strings, null, arrays.
        "$type" => any(&|v| {
            let name = match v {
                Some(Bson::Int32(_)) => "int",
                Some(Bson::Int64(_)) => "long",
                Some(Bson::Double(_)) => "double",
                Some(Bson::String(_)) => "string",
                Some(Bson::Null) => "null",
                Some(Bson::Array(_)) => "array",
                _ => "other",
            };
            let want = operand.as_str().expect("$type alias");
            name == want || (want == "number" && matches!(name, "int" | "long" | "double"))
        }),
        "$mod" => {
            let [d, r] = &operand.as_array().expect("$mod array")[..] else {
                panic!("$mod [d, r]")
            };
            let (d, r) = (d.as_i32().expect("d"), r.as_i32().expect("r"));
            any(&|v| match v {
                Some(Bson::Int32(n)) => n % d == r,
                Some(Bson::Int64(n)) => n % i64::from(d) == i64::from(r),
                #[allow(clippy::cast_possible_truncation)]
                Some(Bson::Double(x)) if x.is_finite() => {
                    (x.trunc() as i64) % i64::from(d) == i64::from(r)
                }
                _ => false,
            })
        }
        _ => any(&|v| value_matches(v, op, operand)),
    }
}

/// Whether an inserted measurement matches a filter document (conjunction of field
/// conditions, `$and`, `$or`, `$nor`).
fn reference_match(doc: &Document, filter: &Document) -> bool {
    filter.iter().all(|(k, cond)| {
        let branches = || {
            cond.as_array()
                .expect("array of filters")
                .iter()
                .map(|i| reference_match(doc, i.as_document().expect("doc")))
                .collect::<Vec<bool>>()
        };
        match k.as_str() {
            "$and" => return branches().into_iter().all(|b| b),
            "$or" => return branches().into_iter().any(|b| b),
            "$nor" => return !branches().into_iter().any(|b| b),
            _ => {}
        }
        match cond {
            Bson::Document(ops) if ops.keys().next().is_some_and(|o| o.starts_with('$')) => ops
                .iter()
                .all(|(op, operand)| op_matches(doc, k, op, operand)),
            operand => op_matches(doc, k, "$eq", operand),
        }
    })
}

fn time_of(d: &Document) -> i64 {
    d.get_datetime("t").expect("t").timestamp_millis()
}

/// The measurements matching `filter`, in time order (times are distinct in these tests).
fn reference_find<'a>(docs: &'a [Document], filter: &Document) -> Vec<&'a Document> {
    let mut v: Vec<&Document> = docs.iter().filter(|d| reference_match(d, filter)).collect();
    v.sort_by_key(|d| time_of(d));
    v
}

/// Whether a found measurement is the inserted one: the same fields and values (the engine
/// may add `_id` and order fields as SPEC R-14.1.2 says).
fn same_measurement(found: &Document, inserted: &Document) -> bool {
    let extra = found
        .keys()
        .filter(|k| *k != "_id" && !inserted.contains_key(*k))
        .count();
    extra == 0
        && inserted.iter().all(|(k, v)| {
            found
                .get(k)
                .is_some_and(|f| order(f, v) == Ordering::Equal && rank(f) == rank(v))
        })
}

/// The found measurements are the expected ones, in the same order except among equal times
/// (compared ordered by time, then series).
fn assert_same_rows(found: &[Document], expected: &[&Document], ctx: &str) {
    assert_eq!(
        found.len(),
        expected.len(),
        "{ctx}: {} found, {} expected",
        found.len(),
        expected.len()
    );
    let key = |d: &Document| (time_of(d), d.get_str("m").unwrap_or_default().to_owned());
    let mut found: Vec<&Document> = found.iter().collect();
    let mut expected = expected.to_vec();
    found.sort_by_key(|d| key(d));
    expected.sort_by_key(|d| key(d));
    for (f, e) in found.iter().zip(&expected) {
        assert!(
            same_measurement(f, e),
            "{ctx}:\n found    {f}\n expected {e}"
        );
    }
}

fn sorted_find(coll: &Collection, filter: Document) -> (Vec<Document>, QueryStats) {
    coll.find_with_stats(
        &filter,
        &FindOptions {
            sort: Some(SortOrder::Ascending),
            ..FindOptions::default()
        },
    )
    .map(|(docs, stats)| {
        assert!(
            docs.windows(2).all(|w| time_of(&w[0]) <= time_of(&w[1])),
            "not in time order"
        );
        (docs, stats)
    })
    .expect("find")
}

/// `per_hour` measurements per hour for `hours` hours for each series name: `{t, m, v}` with
/// `v` = minutes since H0 (int64), times `H0 + h·HOUR + i·(60 / per_hour) min`.
fn hourly(series: &[&str], hours: i64, per_hour: i64) -> Vec<Document> {
    let step = 60 / per_hour;
    let mut docs = Vec::new();
    for h in 0..hours {
        for s in series {
            for i in 0..per_hour {
                let ms = h * HOUR + i * step * MIN;
                docs.push(doc! { "t": at(ms), "m": *s, "v": ms / MIN });
            }
        }
    }
    docs
}

// ---- R-14.4.1 for $or: a bucket is pruned when control rules out every branch --------------------

#[test]
fn r_14_4_1_an_or_prunes_the_buckets_every_branch_rules_out() {
    let (_d, _db, coll) = setup(&meta_opts());
    // Six hours of two series, one bucket per series and hour; v is the minute of the day.
    let docs = hourly(&["a", "b"], 6, 6);
    insert_all(&coll, &docs);
    coll.flush().expect("flush");
    // The first and the last hour only: v < 60 or v >= 300.
    let filter = doc! { "$or": [{ "v": { "$lt": 60 } }, { "v": { "$gte": 300 } }] };
    let (found, stats) = sorted_find(&coll, filter.clone());
    assert_same_rows(&found, &reference_find(&docs, &filter), "$or");
    assert_eq!(stats.buckets_pruned, 8, "{stats:?}");
    assert_eq!(stats.buckets_unpacked, 4, "{stats:?}");
    assert_eq!(coll.count(&filter).expect("count"), found.len() as u64);
    // A branch control cannot judge ($ne) keeps every bucket.
    let filter = doc! { "$or": [{ "v": { "$lt": 60 } }, { "v": { "$ne": 100 } }] };
    let (found, stats) = sorted_find(&coll, filter.clone());
    assert_same_rows(&found, &reference_find(&docs, &filter), "$or with $ne");
    assert_eq!(stats.buckets_pruned, 0, "{stats:?}");
}

// ---- §14.3: projections at any depth ------------------------------------------------------------

#[test]
fn r_14_3_dotted_projections_cut_meta_and_measurement_values() {
    let (_d, _db, coll) = setup(&meta_opts());
    let docs = vec![
        doc! { "t": at(0), "m": { "series": "s1", "site": "x" }, "loc": { "type": "Point", "c": [1, 2] }, "v": 1 },
        doc! { "t": at(MIN), "m": { "series": "s1", "site": "x" }, "loc": 5, "v": 2 },
    ];
    insert_all(&coll, &docs);
    let opts = |p: Document| FindOptions {
        projection: Some(p),
        sort: Some(SortOrder::Ascending),
        ..FindOptions::default()
    };
    let found = coll
        .find(
            &doc! {},
            &opts(doc! { "m.series": 1, "loc.c": 1, "_id": 0 }),
        )
        .expect("find");
    assert_eq!(
        found,
        [
            doc! { "m": { "series": "s1" }, "loc": { "c": [1, 2] } },
            doc! { "m": { "series": "s1" } },
        ]
    );
    let found = coll
        .find(
            &doc! {},
            &opts(doc! { "m.site": 0, "loc.type": 0, "_id": 0 }),
        )
        .expect("find");
    assert_eq!(
        found,
        [
            doc! { "t": at(0), "m": { "series": "s1" }, "loc": { "c": [1, 2] }, "v": 1 },
            doc! { "t": at(MIN), "m": { "series": "s1" }, "loc": 5, "v": 2 },
        ]
    );
    // The Arrow result holds the same values.
    let (batches, _) = find_arrow(&coll, &doc! {}, &opts(doc! { "m.series": 1, "loc.c": 1 }));
    let rows = documents(&batches);
    let metas: Vec<&Bson> = rows.iter().map(|d| d.get("m").expect("m")).collect();
    assert_eq!(metas, [&Bson::Document(doc! { "series": "s1" }); 2]);
    let loc: Vec<Option<&Bson>> = rows.iter().map(|d| d.get("loc")).collect();
    assert_eq!(loc, [Some(&Bson::Document(doc! { "c": [1, 2] })), None]);
    let err = coll
        .find(&doc! {}, &opts(doc! { "v": { "$slice": 1 } }))
        .expect_err("$slice");
    assert_eq!(err.code(), tscoll_engine::ErrorCode::BadValue, "{err}");
}

// ---- $expr: comparisons of two fields and arithmetic, per measurement ----------------------------

#[test]
fn expr_compares_two_fields_of_each_measurement() {
    let (_d, _db, coll) = setup(&meta_opts());
    let docs: Vec<Document> = (0..200_i32)
        .map(|i| {
            let series = if i % 2 == 0 { "a" } else { "b" };
            let mut d = doc! { "t": at(i64::from(i) * MIN), "m": series, "v": (i * 7) % 13 };
            if i % 5 != 0 {
                d.insert("w", (i * 3) % 11);
            }
            d
        })
        .collect();
    insert_all(&coll, &docs);
    let filter = doc! { "$expr": { "$gt": [{ "$add": ["$v", 1] }, "$w"] }, "m": "a" };
    let found = coll.find(&filter, &FindOptions::default()).expect("find");
    // A missing w sorts below every number: v + 1 > missing holds.
    let expected: Vec<i64> = docs
        .iter()
        .filter(|d| d.get_str("m").ok() == Some("a"))
        .filter(|d| {
            let v = d.get_i32("v").expect("v");
            d.get_i32("w").map_or(true, |w| v + 1 > w)
        })
        .map(time_of)
        .collect();
    let mut got: Vec<i64> = found.iter().map(time_of).collect();
    got.sort_unstable();
    assert_eq!(got, expected);
    assert_eq!(coll.count(&filter).expect("count"), expected.len() as u64);
}

// ---- R-14.1.2 ---------------------------------------------------------------------------------

#[test]
fn r_14_1_2_shape_time_meta_then_columns() {
    let (_d, _db, coll) = setup(&meta_opts());
    insert_all(
        &coll,
        &[doc! { "_id": 1, "x": "a", "t": at(0), "m": { "b": 1, "a": 2 }, "y": 2.5 }],
    );
    let found = coll.find(&doc! {}, &FindOptions::default()).expect("find");
    let keys: Vec<&str> = found[0].keys().map(String::as_str).collect();
    assert_eq!(keys, ["t", "m", "_id", "x", "y"]);
    assert_eq!(
        found[0].get_document("m").expect("m"),
        &doc! { "a": 2, "b": 1 }
    );
    let (batches, _) = find_arrow(&coll, &doc! {}, &FindOptions::default());
    assert_eq!(documents(&batches)[0], found[0]);
}

// ---- R-14.4.1 / R-14.4.2 --------------------------------------------------------------------

#[test]
fn r_14_4_1_measurement_predicates_prune_with_control_min_max() {
    let (_d, _db, coll) = setup(&meta_opts());
    let docs = hourly(&["a"], 24, 6);
    insert_all(&coll, &docs);
    for (filter, unpacked) in [
        // v = minutes since H0: hour h holds v in [60h, 60h + 50].
        (doc! { "v": { "$gt": 1000 } }, 8), // hours 16..23
        (doc! { "v": { "$gte": 600, "$lt": 660 } }, 1),
        (doc! { "v": 125 }, 0), // inside hour 2's range: unpacked, no match
        (doc! { "v": { "$in": [5, 1390] } }, 2),
        (doc! { "v": { "$lt": 0 } }, 0),
    ] {
        let (found, stats) = sorted_find(&coll, filter.clone());
        assert_same_rows(&found, &reference_find(&docs, &filter), &filter.to_string());
        let expected_unpacked = if filter == doc! { "v": 125 } {
            1
        } else {
            unpacked
        };
        assert_eq!(stats.buckets_read, 24, "{filter}: {stats:?}");
        assert_eq!(
            stats.buckets_unpacked, expected_unpacked,
            "{filter}: {stats:?}"
        );
        assert_eq!(
            stats.buckets_pruned,
            24 - expected_unpacked,
            "{filter}: {stats:?}"
        );
    }
}

#[test]
fn nan_and_arrays_match_as_mongodb_and_prune_only_buckets_without_a_match() {
    let (_d, _db, coll) = setup(&meta_opts());
    // Four hours, a bucket each; v = minutes since H0, a NaN at minute 0.
    let mut docs = hourly(&["a"], 4, 2);
    docs[0].insert("v", f64::NAN);
    docs[1].insert("a", bson::bson!([[1, 2], [3]]));
    docs[2].insert("a", bson::bson!([1, 2]));
    docs[3].insert("a", bson::bson!([[1]]));
    docs[4].insert("n", bson::bson!([{ "s": [] }]));
    docs[5].insert("n", doc! { "s": 1 });
    insert_all(&coll, &docs);
    // Five buckets: `[[1]]` after `[1, 2]` changes the schema (R-5.2), hour 1 has two.
    let nan = f64::NAN;
    for (filter, rows, unpacked) in [
        // NaN matches NaN only, never a range.
        (doc! { "v": { "$gte": nan } }, 1, 1),
        (doc! { "v": nan }, 1, 1),
        (doc! { "v": { "$gt": nan } }, 0, 0),
        (doc! { "v": { "$lt": 31 } }, 1, 1),
        // An array operand matches the field or an element; never inside a nested array.
        (doc! { "a": [1, 2] }, 2, 5),
        (doc! { "a": 1 }, 1, 3),
        (doc! { "a": { "$in": [[3], 7] } }, 1, 5),
        (doc! { "a": { "$nin": [[1, 2]] } }, 6, 5),
        (doc! { "a": { "$all": [[1, 2], [3]] } }, 1, 5),
        (doc! { "n.s": [] }, 1, 5),
    ] {
        let (found, stats) = sorted_find(&coll, filter.clone());
        assert_eq!(found.len(), rows, "{filter}: {found:?}");
        assert_same_rows(&found, &reference_find(&docs, &filter), &filter.to_string());
        assert_eq!(stats.buckets_unpacked, unpacked, "{filter}: {stats:?}");
        assert_eq!(coll.count(&filter).expect("count"), rows as u64, "{filter}");
    }
}

#[test]
fn r_14_4_1_comparisons_are_type_bracketed() {
    let (_d, _db, coll) = setup(&meta_opts());
    // A string after numbers is a schema change (R-5.2): numbers and strings in separate
    // buckets, whose control min/max then each hold one type.
    let mut docs = Vec::new();
    for i in 0..10 {
        docs.push(doc! { "t": at(i * MIN), "m": "a", "v": i });
    }
    for i in 10..20 {
        docs.push(doc! { "t": at(i * MIN), "m": "a", "v": format!("s{i}") });
    }
    insert_all(&coll, &docs);
    assert_eq!(coll.buckets().expect("buckets").len(), 2);
    for filter in [
        doc! { "v": { "$gte": 0 } },
        doc! { "v": { "$gte": "" } },
        doc! { "v": { "$lt": "s15" } },
        doc! { "v": { "$in": [3, "s12"] } },
    ] {
        let (found, stats) = sorted_find(&coll, filter.clone());
        let expected = reference_find(&docs, &filter);
        assert_same_rows(&found, &expected, &filter.to_string());
        let types_hit = usize::from(expected.iter().any(|d| rank(d.get("v").expect("v")) == 10))
            + usize::from(expected.iter().any(|d| rank(d.get("v").expect("v")) == 15));
        assert_eq!(
            stats.buckets_unpacked as usize, types_hit,
            "{filter}: {stats:?}"
        );
    }
}

#[test]
fn r_14_4_2_null_objects_and_arrays_are_not_pushed_down() {
    let (_d, _db, coll) = setup(&meta_opts());
    let docs = vec![
        doc! { "t": at(0), "m": "a", "v": 1, "o": { "x": 1 }, "arr": [1, 2] },
        doc! { "t": at(MIN), "m": "a", "v": 2, "o": { "x": 2 }, "arr": [3, 4] },
        // Another series: no `v`, `o` or `arr` at all.
        doc! { "t": at(0), "m": "b", "w": 1 },
    ];
    insert_all(&coll, &docs);
    for filter in [
        doc! { "v": Bson::Null },
        doc! { "v": { "$gte": Bson::Null } },
        doc! { "v": { "$lte": Bson::Null } },
        doc! { "v": { "$in": [Bson::Null, 2] } },
        doc! { "o": { "x": 2 } },
        doc! { "o.x": { "$gt": 1 } },
        doc! { "arr": 4 },
        doc! { "arr": [1, 2] },
    ] {
        let (found, stats) = sorted_find(&coll, filter.clone());
        let mut expected = reference_find(&docs, &filter);
        if filter == doc! { "arr": [1, 2] } {
            // Whole-array equality: the reference evaluator only descends into arrays.
            expected = vec![&docs[0]];
        }
        assert_same_rows(&found, &expected, &filter.to_string());
        if matches!(filter.get("v"), Some(Bson::Null)) {
            assert_eq!(
                stats.buckets_pruned, 0,
                "null is not pushed down: {stats:?}"
            );
        }
    }
}

// ---- §14.2 ---------------------------------------------------------------------------------------

#[test]
fn r_14_2_meta_null_matches_the_series_without_a_meta_value() {
    let (_d, _db, coll) = setup(&meta_opts());
    let docs = vec![
        doc! { "t": at(0), "m": "a", "v": 1 },
        doc! { "t": at(MIN), "v": 2 },
        doc! { "t": at(2 * MIN), "m": Bson::Null, "v": 3 },
        doc! { "t": at(3 * MIN), "m": { "x": 1 }, "v": 4 },
    ];
    insert_all(&coll, &docs);
    for filter in [
        doc! { "m": Bson::Null },
        doc! { "m": { "$in": [Bson::Null, "a"] } },
        doc! { "m.x": Bson::Null },
        doc! { "m.x": 1 },
        doc! { "m": { "x": 1 } },
        doc! { "m": { "$gte": "a" } },
    ] {
        let (found, _) = sorted_find(&coll, filter.clone());
        let expected = reference_find(&docs, &filter);
        assert_same_rows(&found, &expected, &filter.to_string());
        assert_eq!(
            coll.count(&filter).expect("count"),
            expected.len() as u64,
            "{filter}"
        );
        let last = coll.last_points(&filter).expect("last points");
        assert_eq!(
            last.len(),
            expected.len(),
            "{filter}: one measurement per series here"
        );
    }
}

// ---- R-14.4.3 -----------------------------------------------------------------------------------

#[test]
fn r_14_4_3_time_bounds_with_the_span_bound_the_index_scan() {
    let (_d, _db, coll) = setup(&meta_opts()); // granularity seconds: span 1 h
    let docs = hourly(&["a"], 24, 6);
    insert_all(&coll, &docs);
    // $gte 10:30: min time ≥ 10:30 − 1 h + 1 ms, i.e. buckets 10..23 (14 entries). Without a
    // meta equality the scan seeks to those bounds in each series (one entry read before).
    let filter = doc! { "t": { "$gte": at(10 * HOUR + 30 * MIN) } };
    let (found, stats) = sorted_find(&coll, filter.clone());
    assert_same_rows(&found, &reference_find(&docs, &filter), "gte");
    assert!(
        (14..=15).contains(&stats.index_entries_scanned),
        "{stats:?}"
    );
    assert_eq!(
        (stats.buckets_read, stats.buckets_whole),
        (14, 13),
        "{stats:?}"
    );
    // $lt 5:30: min time < 5:30: buckets 0..5.
    let filter = doc! { "m": "a", "t": { "$lt": at(5 * HOUR + 30 * MIN) } };
    let (found, stats) = sorted_find(&coll, filter.clone());
    assert_same_rows(&found, &reference_find(&docs, &filter), "lt");
    assert_eq!(stats.index_entries_scanned, 6, "{stats:?}");
    assert_eq!(stats.buckets_whole, 5, "{stats:?}");
    // $eq: the one bucket with min time in (v − span, v] is read (the scan also reads one
    // entry before and one after it).
    let filter = doc! { "t": at(7 * HOUR + 20 * MIN) };
    let (found, stats) = sorted_find(&coll, filter.clone());
    assert_same_rows(&found, &reference_find(&docs, &filter), "eq");
    assert_eq!(found.len(), 1);
    assert_eq!(stats.buckets_read, 1, "{stats:?}");
    assert!(stats.index_entries_scanned <= 3, "{stats:?}");
    let (_, stats) = sorted_find(&coll, doc! { "m": "a", "t": at(7 * HOUR + 20 * MIN) });
    assert_eq!(
        stats.index_entries_scanned, 1,
        "a meta equality scans the exact range: {stats:?}"
    );
    // $gt / $lte on bucket edges.
    for filter in [
        doc! { "t": { "$gt": at(3 * HOUR + 50 * MIN), "$lte": at(6 * HOUR) } },
        doc! { "t": { "$gt": at(23 * HOUR) } },
        doc! { "t": { "$lte": at(0) } },
    ] {
        let (found, _) = sorted_find(&coll, filter.clone());
        assert_same_rows(&found, &reference_find(&docs, &filter), &filter.to_string());
    }
}

#[test]
fn r_14_4_3_a_non_date_operand_on_the_time_field_matches_nothing() {
    let (_d, _db, coll) = setup(&meta_opts());
    insert_all(&coll, &hourly(&["a"], 3, 2));
    for filter in [
        doc! { "t": { "$gte": 5 } },
        doc! { "t": "2023-11-14" },
        doc! { "t": { "$lt": Bson::Null } },
        doc! { "m": "a", "t": { "$gt": at(0), "$lt": 1 } },
    ] {
        let (found, stats) = sorted_find(&coll, filter.clone());
        assert!(found.is_empty(), "{filter}: {found:?}");
        assert_eq!(stats.index_entries_scanned, 0, "{filter}: {stats:?}");
        assert_eq!(coll.count(&filter).expect("count"), 0);
    }
}

// ---- R-14.4.4 -----------------------------------------------------------------------------------

#[test]
fn r_14_4_4_whole_buckets_are_returned_without_filtering_rows() {
    let (_d, _db, coll) = setup(&meta_opts());
    let docs = hourly(&["a", "b"], 10, 6);
    insert_all(&coll, &docs);
    // Hours 2..6 of series a, whole: from 2:00 to before 7:00.
    let filter = doc! { "m": "a", "t": { "$gte": at(2 * HOUR), "$lt": at(7 * HOUR) } };
    let (found, stats) = sorted_find(&coll, filter.clone());
    assert_same_rows(&found, &reference_find(&docs, &filter), "whole");
    assert_eq!(stats.buckets_whole, 5, "{stats:?}");
    assert_eq!(stats.rows_filtered, 0, "{stats:?}");
    assert_eq!(stats.rows_returned, 30);
    // Bounds inside buckets: only the two edge buckets are filtered row by row.
    let filter =
        doc! { "m": "a", "t": { "$gt": at(2 * HOUR + 10 * MIN), "$lte": at(6 * HOUR + 20 * MIN) } };
    let (found, stats) = sorted_find(&coll, filter.clone());
    assert_same_rows(&found, &reference_find(&docs, &filter), "edges");
    assert_eq!(stats.buckets_whole, 3, "{stats:?}");
    assert_eq!(stats.rows_filtered, 12, "{stats:?}");
    // A meta sub-field predicate alone keeps buckets whole.
    let (_, stats) = sorted_find(&coll, doc! { "m": { "$in": ["b"] } });
    assert_eq!(
        (stats.buckets_whole, stats.rows_filtered),
        (10, 0),
        "{stats:?}"
    );
}

// ---- R-14.4.5 -----------------------------------------------------------------------------------

#[test]
fn r_14_4_5_the_span_after_coll_mod_bounds_queries() {
    let (_d, _db, coll) = setup(&meta_opts()); // seconds: span 1 h
    let mut docs = vec![doc! { "t": at(0), "m": "a", "v": 0 }];
    insert_all(&coll, &docs);
    coll.coll_mod(&doc! { "timeseries": { "granularity": "minutes" } })
        .expect("collMod");
    assert_eq!(coll.spec().bucket_max_span_seconds, 86_400);
    // The open bucket (min 0:00) now takes a measurement 23 h later (R-12.5).
    let late = doc! { "t": at(23 * HOUR), "m": "a", "v": 1 };
    insert_all(&coll, std::slice::from_ref(&late));
    docs.push(late);
    assert_eq!(coll.buckets().expect("buckets").len(), 1);
    // With the old span the bucket (min 0:00) would be outside the scan of `$gte 22:00`.
    let filter = doc! { "t": { "$gte": at(22 * HOUR) } };
    let (found, stats) = sorted_find(&coll, filter.clone());
    assert_same_rows(&found, &reference_find(&docs, &filter), "after collMod");
    assert_eq!(stats.index_entries_scanned, 1, "{stats:?}");
    assert_eq!(coll.count(&filter).expect("count"), 1);
    assert_eq!(
        coll.last_points(&doc! {}).expect("last")[0]
            .get_i32("v")
            .ok(),
        Some(1)
    );
}

// ---- R-14.4.6 -----------------------------------------------------------------------------------

#[test]
fn r_14_4_6_fixed_bucketing_needs_no_row_filter_on_span_multiples() {
    let fixed = meta_opts().bucket_seconds(3600, 3600);
    let (_d, _db, coll) = setup(&fixed);
    assert!(coll.spec().fixed_bucketing);
    // Measurements every 10 min from 0:30: fixed buckets start on whole hours.
    let docs: Vec<Document> = (0..60)
        .map(|i| doc! { "t": at(30 * MIN + i * 10 * MIN), "m": "a", "v": i })
        .collect();
    insert_all(&coll, &docs);
    let filter = doc! { "m": "a", "t": { "$gte": at(3 * HOUR), "$lt": at(7 * HOUR) } };
    let (found, stats) = sorted_find(&coll, filter.clone());
    assert_same_rows(&found, &reference_find(&docs, &filter), "fixed");
    assert_eq!(stats.index_entries_scanned, 4, "{stats:?}");
    assert_eq!(
        (stats.buckets_read, stats.buckets_whole),
        (4, 4),
        "{stats:?}"
    );
    assert_eq!(stats.rows_filtered, 0, "{stats:?}");
    assert_eq!(
        coll.count_with_stats(&filter)
            .expect("count")
            .1
            .buckets_unpacked,
        0
    );
    // The same data with granularity seconds (rounding 1 min): buckets start at 0:30, 1:30,
    // ... and the two at the bounds are filtered row by row.
    let (_d2, _db2, coll2) = setup(&meta_opts());
    assert!(!coll2.spec().fixed_bucketing);
    insert_all(&coll2, &docs);
    let (found, stats) = sorted_find(&coll2, filter.clone());
    assert_same_rows(&found, &reference_find(&docs, &filter), "seconds");
    assert!(stats.rows_filtered > 0, "{stats:?}");
    // After collMod the collection is no longer fixed bucketing (R-12.6).
    coll.coll_mod(
        &doc! { "timeseries": { "bucketMaxSpanSeconds": 7200, "bucketRoundingSeconds": 7200 } },
    )
    .expect("collMod");
    assert!(!coll.spec().fixed_bucketing);
    let (found, stats) = sorted_find(&coll, filter.clone());
    assert_same_rows(&found, &reference_find(&docs, &filter), "after collMod");
    assert_eq!(
        stats.index_entries_scanned, 5,
        "span 2 h: one more bucket: {stats:?}"
    );
}

// ---- R-14.1.4 -----------------------------------------------------------------------------------

#[test]
fn r_14_1_4_count_from_control() {
    let (_d, _db, coll) = setup(&meta_opts());
    let docs = hourly(&["a", "b", "c"], 12, 6);
    insert_all(&coll, &docs);
    let count = |f: &Document| docs.iter().filter(|d| reference_match(d, f)).count() as u64;
    // Meta and whole-bucket time predicates: every bucket from control.
    for filter in [
        doc! {},
        doc! { "m": "b" },
        doc! { "m": { "$in": ["a", "c"] }, "t": { "$gte": at(HOUR), "$lt": at(5 * HOUR) } },
    ] {
        let (n, stats) = coll.count_with_stats(&filter).expect("count");
        assert_eq!(n, count(&filter), "{filter}");
        assert_eq!(stats.buckets_unpacked, 0, "{filter}: {stats:?}");
        assert_eq!(
            stats.buckets_from_control, stats.buckets_read,
            "{filter}: {stats:?}"
        );
    }
    // Bounds inside buckets: those buckets are unpacked (time column only).
    let filter = doc! { "t": { "$gt": at(HOUR + 5 * MIN), "$lt": at(4 * HOUR + 25 * MIN) } };
    let (n, stats) = coll.count_with_stats(&filter).expect("count");
    assert_eq!(n, count(&filter));
    assert_eq!(
        (stats.buckets_unpacked, stats.buckets_from_control),
        (6, 6),
        "{stats:?}"
    );
    // A measurement predicate: unpacked, rows counted.
    // v = minutes since H0: hours 1, 2 and 3 hold values in [100, 200).
    let filter = doc! { "m": "a", "v": { "$gte": 100, "$lt": 200 } };
    let (n, stats) = coll.count_with_stats(&filter).expect("count");
    assert_eq!(n, count(&filter));
    assert_eq!(
        (stats.buckets_unpacked, stats.buckets_pruned),
        (3, 9),
        "{stats:?}"
    );
}

// ---- last point per series ----------------------------------------------------------------------

/// The latest inserted measurement per series (`m`), by series name.
fn reference_last(docs: &[Document], filter: &Document) -> BTreeMap<String, Document> {
    let mut best: BTreeMap<String, Document> = BTreeMap::new();
    for d in docs.iter().filter(|d| reference_match(d, filter)) {
        let m = d.get_str("m").expect("m").to_owned();
        if best.get(&m).is_none_or(|b| time_of(b) < time_of(d)) {
            best.insert(m, d.clone());
        }
    }
    best
}

fn assert_last_points(found: &[Document], expected: &BTreeMap<String, Document>) {
    assert_eq!(found.len(), expected.len());
    for (f, (m, e)) in found.iter().zip(expected) {
        assert_eq!(f.get_str("m").ok(), Some(m.as_str()));
        assert!(same_measurement(f, e), "\n found    {f}\n expected {e}");
    }
}

#[test]
fn last_point_reads_one_bucket_per_series() {
    let (_d, _db, coll) = setup(&meta_opts());
    let names: Vec<String> = (0..1000).map(|i| format!("host_{i:04}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut docs = hourly(&refs, 12, 2);
    insert_all(&coll, &docs);
    // Every tenth series gets a measurement before its open bucket's start (time-backward,
    // another bucket), then its latest one.
    let mut extra = Vec::new();
    for (i, s) in refs.iter().enumerate().filter(|(i, _)| i % 10 == 0) {
        extra.push(doc! { "t": at(11 * HOUR - 5 * MIN), "m": *s, "v": -1 });
        extra.push(
            doc! { "t": at(11 * HOUR + 45 * MIN + i64::try_from(i).expect("i")), "m": *s, "v": -2 },
        );
    }
    for d in &extra {
        insert_all(&coll, std::slice::from_ref(d));
    }
    docs.extend(extra);
    coll.checkpoint().expect("checkpoint");
    let buckets = coll.stats().expect("stats").bucket_count;
    assert!(buckets >= 12_000, "{buckets} buckets");
    let (found, stats) = coll.last_points_with_stats(&doc! {}).expect("last points");
    assert_last_points(&found, &reference_last(&docs, &doc! {}));
    assert_eq!(stats.buckets_unpacked, 1000, "{stats:?}");
    assert!(stats.buckets_read <= 2000, "{stats:?}");
    assert!(stats.index_entries_scanned <= 3000, "{stats:?}");
    // With a time upper bound inside buckets: one straddling bucket per series at most.
    let filter = doc! { "t": { "$lt": at(6 * HOUR + 10 * MIN) } };
    let (found, stats) = coll.last_points_with_stats(&filter).expect("last points");
    assert_last_points(&found, &reference_last(&docs, &filter));
    assert!(stats.buckets_unpacked <= 1000, "{stats:?}");
    assert!(stats.buckets_read <= 2000, "{stats:?}");
    // Meta equality and $in: only those series.
    for filter in [
        doc! { "m": "host_0010" },
        doc! { "m": { "$in": ["host_0001", "host_0500", "nope"] }, "t": { "$lte": at(3 * HOUR) } },
    ] {
        let (found, stats) = coll.last_points_with_stats(&filter).expect("last points");
        let expected = reference_last(&docs, &filter);
        assert_last_points(&found, &expected);
        assert_eq!(stats.buckets_unpacked as usize, expected.len(), "{stats:?}");
        assert!(
            stats.index_entries_scanned <= 3 * expected.len() as u64,
            "{stats:?}"
        );
    }
}

#[test]
fn last_point_with_measurement_filters_and_no_meta_series() {
    let (_d, _db, coll) = setup(&meta_opts());
    let mut docs = hourly(&["a", "b"], 6, 6);
    docs.push(doc! { "t": at(2 * HOUR), "v": 7 }); // the no-meta series
    insert_all(&coll, &docs);
    let filter = doc! { "v": { "$lt": 200 } };
    let (found, stats) = coll.last_points_with_stats(&filter).expect("last points");
    assert_eq!(found.len(), 3);
    assert!(
        !found[0].contains_key("m"),
        "the no-meta series first: {found:?}"
    );
    assert_eq!(found[0].get_i32("v").ok(), Some(7));
    let expected = reference_last(&docs[..docs.len() - 1], &filter);
    assert_last_points(&found[1..], &expected);
    assert!(stats.buckets_pruned > 0, "{stats:?}");
    // Overlapping buckets of one series (a time-backward measurement opens another bucket):
    // the newest bucket's latest match is not the series' latest match.
    let (_d2, _db2, coll) = setup(&meta_opts());
    let docs = vec![
        doc! { "t": at(10 * HOUR), "m": "a", "v": 1 },
        doc! { "t": at(10 * HOUR + 45 * MIN), "m": "a", "v": 1 },
        doc! { "t": at(9 * HOUR + 50 * MIN), "m": "a", "v": 1 },
        doc! { "t": at(10 * HOUR + 49 * MIN), "m": "a", "v": -1 },
    ];
    tscoll_tests::spec::insert_each(&coll, &docs);
    assert!(coll.buckets().expect("buckets").len() >= 2);
    for filter in [
        doc! {},
        doc! { "v": { "$gte": 0 } },
        doc! { "t": { "$lt": at(10 * HOUR + 46 * MIN) } },
    ] {
        let found = coll.last_points(&filter).expect("last points");
        assert_last_points(&found, &reference_last(&docs, &filter));
    }
}

// ---- sort on time with a limit --------------------------------------------------------------------

#[test]
fn sort_with_limit_stops_early() {
    let (_d, _db, coll) = setup(&meta_opts());
    let names: Vec<String> = (0..20).map(|i| format!("s{i:02}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let docs = hourly(&refs, 48, 3);
    insert_all(&coll, &docs);
    let all = reference_find(&docs, &doc! {});
    // Every series has rows at the same times: the newest (oldest) bucket of every series
    // may be needed, older (newer) ones never.
    for (order, limit, max_unpacked) in [
        (SortOrder::Descending, 1, 1),
        (SortOrder::Ascending, 1, 1),
        (SortOrder::Descending, 25, 20),
        (SortOrder::Ascending, 70, 40),
    ] {
        let opts = FindOptions {
            sort: Some(order),
            limit: Some(limit),
            ..FindOptions::default()
        };
        let (found, stats) = coll.find_with_stats(&doc! {}, &opts).expect("find");
        let mut times: Vec<i64> = all.iter().map(|d| time_of(d)).collect();
        if order == SortOrder::Descending {
            times.reverse();
        }
        times.truncate(limit);
        assert_eq!(
            found.iter().map(time_of).collect::<Vec<_>>(),
            times,
            "{order:?} {limit}"
        );
        assert!(
            stats.buckets_unpacked <= max_unpacked,
            "{order:?} {limit}: {stats:?} of {} buckets",
            20 * 48
        );
        assert!(stats.buckets_read <= 40, "{stats:?}");
        let (batches, arrow_stats) = find_arrow(&coll, &doc! {}, &opts);
        assert_eq!(arrow_times(&batches), times);
        assert_eq!(arrow_stats.buckets_unpacked, stats.buckets_unpacked);
    }
}

// ---- aggregates -------------------------------------------------------------------------------------

type Key = (Option<String>, i64);

/// Reference aggregate over `docs`: groups by (series?, window) with the outputs of `spec`.
fn reference_aggregate(
    docs: &[Document],
    filter: &Document,
    spec: &AggregateSpec,
) -> Vec<Document> {
    let mut groups: BTreeMap<Key, Vec<&Document>> = BTreeMap::new();
    for d in docs.iter().filter(|d| reference_match(d, filter)) {
        let series = spec
            .by_series
            .then(|| d.get_str("m").ok().map(str::to_owned))
            .flatten();
        let w = time_of(d).div_euclid(spec.window_ms) * spec.window_ms;
        groups.entry((series, w)).or_default().push(d);
    }
    groups
        .into_iter()
        .map(|((series, w), mut rows)| {
            rows.sort_by_key(|d| time_of(d));
            let mut id = Document::new();
            if let Some(s) = series {
                id.insert("m", s);
            }
            id.insert("t", DateTime::from_millis(w));
            let mut out = doc! { "_id": id };
            for (name, acc) in &spec.outputs {
                let values = |f: &str| -> Vec<Bson> {
                    rows.iter()
                        .filter_map(|d| get_path(d, f).cloned())
                        .collect()
                };
                let present = |f: &str| -> Vec<Bson> {
                    values(f)
                        .into_iter()
                        .filter(|v| !matches!(v, Bson::Null))
                        .collect()
                };
                let numbers = |f: &str| -> Vec<f64> {
                    values(f)
                        .iter()
                        .filter(|v| rank(v) == 10)
                        .map(num)
                        .collect()
                };
                let v = match acc {
                    Accumulator::Count => Bson::Int64(rows.len() as i64),
                    Accumulator::CountNumbers(f) => Bson::Int64(numbers(f).len() as i64),
                    Accumulator::Min(f) => {
                        present(f).into_iter().min_by(order).unwrap_or(Bson::Null)
                    }
                    Accumulator::Max(f) => {
                        present(f).into_iter().max_by(order).unwrap_or(Bson::Null)
                    }
                    Accumulator::Sum(f) => Bson::Double(numbers(f).iter().sum()),
                    Accumulator::SumTyped(f) => {
                        let vals = values(f);
                        let ints: Option<i64> =
                            vals.iter()
                                .filter(|v| rank(v) == 10)
                                .try_fold(0i64, |a, v| match v {
                                    Bson::Int32(i) => a.checked_add(i64::from(*i)),
                                    Bson::Int64(i) => a.checked_add(*i),
                                    _ => None,
                                });
                        let longs = vals.iter().any(|v| matches!(v, Bson::Int64(_)));
                        match ints {
                            Some(n) if !longs => {
                                i32::try_from(n).map_or(Bson::Int64(n), Bson::Int32)
                            }
                            Some(n) => Bson::Int64(n),
                            None => Bson::Double(numbers(f).iter().sum()),
                        }
                    }
                    Accumulator::Avg(f) => {
                        let n = numbers(f);
                        if n.is_empty() {
                            Bson::Null
                        } else {
                            Bson::Double(n.iter().sum::<f64>() / n.len() as f64)
                        }
                    }
                    Accumulator::First(f) => rows
                        .first()
                        .and_then(|d| get_path(d, f).cloned())
                        .unwrap_or(Bson::Null),
                    Accumulator::Last(f) => rows
                        .last()
                        .and_then(|d| get_path(d, f).cloned())
                        .unwrap_or(Bson::Null),
                    Accumulator::StdDevPop(f) | Accumulator::StdDevSamp(f) => {
                        // Two passes: the mean, then the squared deviations from it.
                        let n = numbers(f);
                        let sample = matches!(acc, Accumulator::StdDevSamp(_));
                        let d = if sample {
                            n.len().saturating_sub(1)
                        } else {
                            n.len()
                        };
                        if d == 0 {
                            Bson::Null
                        } else {
                            let mean = n.iter().sum::<f64>() / n.len() as f64;
                            let m2: f64 = n.iter().map(|x| (x - mean) * (x - mean)).sum();
                            Bson::Double((m2 / d as f64).sqrt())
                        }
                    }
                };
                out.insert(name.clone(), v);
            }
            out
        })
        .collect()
}

/// Aggregate results equal: same groups in the same order, numbers compared by value
/// (sums and means within 1e-9).
fn assert_same_groups(found: &[Document], expected: &[Document], ctx: &str) {
    assert_eq!(
        found.len(),
        expected.len(),
        "{ctx}:\n found {found:?}\n expected {expected:?}"
    );
    for (f, e) in found.iter().zip(expected) {
        assert_eq!(f.get("_id"), e.get("_id"), "{ctx}");
        for (k, ev) in e.iter().skip(1) {
            let fv = f.get(k).unwrap_or_else(|| panic!("{ctx}: no {k} in {f}"));
            let same = match (fv, ev) {
                (Bson::Double(a), Bson::Double(b)) => (a - b).abs() <= 1e-9 * b.abs().max(1.0),
                _ => rank(fv) == rank(ev) && order(fv, ev) == Ordering::Equal,
            };
            assert!(
                same,
                "{ctx}: {k}: found {fv}, expected {ev}\n found {f}\n expected {e}"
            );
        }
    }
}

#[test]
fn aggregate_whole_buckets_in_one_window_come_from_control() {
    let (_d, _db, coll) = setup(&meta_opts());
    let docs = hourly(&["a", "b", "c"], 24, 6);
    insert_all(&coll, &docs);
    let spec = AggregateSpec {
        window_ms: HOUR,
        by_series: true,
        outputs: vec![
            ("n".into(), Accumulator::Count),
            ("lo".into(), Accumulator::Min("v".into())),
            ("hi".into(), Accumulator::Max("v".into())),
            ("last".into(), Accumulator::Max("t".into())),
        ],
    };
    let (found, stats) = coll
        .aggregate_windows_with_stats(&doc! {}, &spec)
        .expect("aggregate");
    assert_same_groups(
        &found,
        &reference_aggregate(&docs, &doc! {}, &spec),
        "hourly",
    );
    assert_eq!(found.len(), 72);
    assert_eq!(
        (stats.buckets_from_control, stats.buckets_unpacked),
        (72, 0),
        "{stats:?}"
    );
    // Daily windows over all series: still one window per bucket.
    let daily = AggregateSpec {
        window_ms: 24 * HOUR,
        by_series: false,
        ..spec.clone()
    };
    let filter = doc! { "m": { "$in": ["a", "b"] }, "t": { "$gte": at(2 * HOUR) } };
    let (found, stats) = coll
        .aggregate_windows_with_stats(&filter, &daily)
        .expect("aggregate");
    assert_same_groups(
        &found,
        &reference_aggregate(&docs, &filter, &daily),
        "daily",
    );
    assert_eq!(stats.buckets_unpacked, 0, "{stats:?}");
    // Half-hour windows cut every bucket: unpacked.
    let half = AggregateSpec {
        window_ms: 30 * MIN,
        ..spec.clone()
    };
    let (found, stats) = coll
        .aggregate_windows_with_stats(&doc! { "m": "c" }, &half)
        .expect("aggregate");
    assert_same_groups(
        &found,
        &reference_aggregate(&docs, &doc! { "m": "c" }, &half),
        "half",
    );
    assert_eq!(
        (stats.buckets_from_control, stats.buckets_unpacked),
        (0, 24),
        "{stats:?}"
    );
    // Sums, means, first and last need the rows; a time bound inside buckets too.
    let rows = AggregateSpec {
        window_ms: 6 * HOUR,
        by_series: true,
        outputs: vec![
            ("sum".into(), Accumulator::Sum("v".into())),
            ("avg".into(), Accumulator::Avg("v".into())),
            ("first".into(), Accumulator::First("v".into())),
            ("last".into(), Accumulator::Last("v".into())),
            ("none".into(), Accumulator::Avg("nope".into())),
        ],
    };
    let filter = doc! { "t": { "$lt": at(20 * HOUR + 25 * MIN) } };
    let (found, stats) = coll
        .aggregate_windows_with_stats(&filter, &rows)
        .expect("aggregate");
    assert_same_groups(&found, &reference_aggregate(&docs, &filter, &rows), "rows");
    assert_eq!(stats.buckets_unpacked, 63, "{stats:?}");
}

#[test]
fn aggregate_rejects_bad_specs() {
    let (_d, _db, coll) = setup(&meta_opts());
    let bad = [
        AggregateSpec {
            window_ms: 0,
            by_series: false,
            outputs: vec![],
        },
        AggregateSpec {
            window_ms: 1,
            by_series: false,
            outputs: vec![("_id".into(), Accumulator::Count)],
        },
        AggregateSpec {
            window_ms: 1,
            by_series: false,
            outputs: vec![
                ("a".into(), Accumulator::Count),
                ("a".into(), Accumulator::Count),
            ],
        },
        AggregateSpec {
            window_ms: 1,
            by_series: false,
            outputs: vec![("a".into(), Accumulator::Min("x.".into()))],
        },
    ];
    for spec in bad {
        let err = coll
            .aggregate_windows(&doc! {}, &spec)
            .expect_err("rejected");
        assert_eq!(err.code(), tscoll_engine::ErrorCode::BadValue, "{spec:?}");
    }
}

#[test]
fn aggregate_columns_hold_the_same_groups() {
    let (_d, _db, coll) = setup(&meta_opts());
    let mut docs = hourly(&["b", "a"], 5, 4);
    docs.push(doc! { "t": at(90 * MIN), "v": 3 }); // no meta
    insert_all(&coll, &docs);
    let spec = AggregateSpec {
        window_ms: 2 * HOUR,
        by_series: true,
        outputs: vec![
            ("n".into(), Accumulator::Count),
            ("first".into(), Accumulator::First("v".into())),
        ],
    };
    let docs_form = coll.aggregate_windows(&doc! {}, &spec).expect("aggregate");
    let batch = coll.aggregate_columns(&doc! {}, &spec).expect("columns");
    assert_eq!(batch.len(), docs_form.len());
    assert_eq!(
        batch.metas,
        [None, Some(Bson::from("a")), Some(Bson::from("b"))]
    );
    for (i, d) in docs_form.iter().enumerate() {
        assert_eq!(&batch.document(i, "t", Some("m")), d);
    }
    assert_eq!(batch.output("n").map(OutputValues::len), Some(batch.len()));
    assert_same_groups(
        &docs_form,
        &reference_aggregate(&docs, &doc! {}, &spec),
        "columns",
    );
}

/// Many buckets (70 series × 120 hours, two measurements an hour at :10 and :40): enough
/// candidates for an aggregate to be read in parts (on several threads where the machine has
/// them), also when it reads control records, and an index large enough for the scan of
/// every series to be cut into pieces.
/// `v` is an int32, an int64 or a double, `w` an int32 or missing.
fn many_buckets() -> Vec<Document> {
    let mut docs = Vec::new();
    for h in 0..120i64 {
        for s in 0..70i64 {
            for (i, minute) in [10i64, 40].into_iter().enumerate() {
                let k = (h * 70 + s) * 2 + i as i64;
                let mut d = doc! { "t": at(h * HOUR + minute * MIN), "m": format!("s{s:02}") };
                match k % 7 {
                    0 => d.insert("v", Bson::Double(k as f64 / 4.0)),
                    1 => d.insert("v", Bson::Int64(k % 1000 - 500)),
                    _ => d.insert("v", Bson::Int32((k % 997) as i32 - 400)),
                };
                if k % 5 != 0 {
                    d.insert("w", Bson::Int32((k % 89) as i32));
                }
                docs.push(d);
            }
        }
    }
    docs
}

#[test]
fn aggregates_read_in_parts_equal_naive_computations() {
    let (_d, _db, coll) = setup(&meta_opts());
    let docs = many_buckets();
    insert_all(&coll, &docs);
    let all = vec![
        ("n".into(), Accumulator::Count),
        ("lo".into(), Accumulator::Min("v".into())),
        ("hi".into(), Accumulator::Max("v".into())),
        ("whi".into(), Accumulator::Max("w".into())),
        ("sum".into(), Accumulator::Sum("v".into())),
        ("avg".into(), Accumulator::Avg("w".into())),
        ("first".into(), Accumulator::First("w".into())),
        ("last".into(), Accumulator::Last("v".into())),
        ("tmax".into(), Accumulator::Max("t".into())),
        ("sd".into(), Accumulator::StdDevPop("v".into())),
        ("sds".into(), Accumulator::StdDevSamp("w".into())),
        ("total".into(), Accumulator::SumTyped("v".into())),
        ("nv".into(), Accumulator::CountNumbers("v".into())),
        ("nw".into(), Accumulator::CountNumbers("w".into())),
    ];
    // Hourly minima and maxima: every bucket lies in one hour and comes from control.
    let hourly = AggregateSpec {
        window_ms: HOUR,
        by_series: true,
        outputs: vec![
            ("n".into(), Accumulator::Count),
            ("lo".into(), Accumulator::Min("w".into())),
            ("hi".into(), Accumulator::Max("w".into())),
            ("tmax".into(), Accumulator::Max("t".into())),
        ],
    };
    let (found, stats) = coll
        .aggregate_windows_with_stats(&doc! {}, &hourly)
        .expect("aggregate");
    assert_same_groups(
        &found,
        &reference_aggregate(&docs, &doc! {}, &hourly),
        "hourly",
    );
    assert_eq!(found.len(), 70 * 120);
    assert_eq!(
        (stats.buckets_from_control, stats.buckets_unpacked),
        (70 * 120, 0),
        "{stats:?}"
    );
    // Sums, means and deviations of whole buckets come from their sums in control.
    let means = AggregateSpec {
        window_ms: HOUR,
        by_series: true,
        outputs: vec![
            ("avg".into(), Accumulator::Avg("v".into())),
            ("sum".into(), Accumulator::Sum("w".into())),
            ("sd".into(), Accumulator::StdDevPop("v".into())),
            ("sds".into(), Accumulator::StdDevSamp("w".into())),
            ("total".into(), Accumulator::SumTyped("w".into())),
            ("vtotal".into(), Accumulator::SumTyped("v".into())),
            ("nw".into(), Accumulator::CountNumbers("w".into())),
        ],
    };
    let (found, stats) = coll
        .aggregate_windows_with_stats(&doc! {}, &means)
        .expect("aggregate");
    assert_same_groups(
        &found,
        &reference_aggregate(&docs, &doc! {}, &means),
        "means",
    );
    assert_eq!(
        (
            stats.buckets_from_control,
            stats.buckets_unpacked,
            stats.rows_examined
        ),
        (70 * 120, 0, 0),
        "{stats:?}"
    );
    // `$sum` types: int32 sums of int32s, int64 or double where the values have them.
    let want = reference_aggregate(&docs, &doc! {}, &means);
    assert_eq!(found.len(), want.len());
    for (g, e) in found.iter().zip(&want) {
        assert!(matches!(g.get("total"), Some(Bson::Int32(_))), "{g}");
        assert_eq!(g.get("_id"), e.get("_id"));
        assert_eq!(
            g.get("vtotal").map(Bson::element_type),
            e.get("vtotal").map(Bson::element_type),
            "{g} vs {e}"
        );
    }
    // Windows that cut buckets, all accumulators, with and without series, whole and
    // partial buckets.
    for (window_ms, by_series) in [(40 * MIN, true), (40 * MIN, false), (5 * HOUR, false)] {
        let spec = AggregateSpec {
            window_ms,
            by_series,
            outputs: all.clone(),
        };
        for filter in [
            doc! {},
            doc! { "t": { "$gte": at(3 * HOUR + 20 * MIN), "$lt": at(100 * HOUR) } },
            doc! { "v": { "$gt": 100 }, "m": { "$in": ["s03", "s40", "s69"] } },
            doc! { "w": { "$lte": 40 } },
        ] {
            let ctx = format!("{filter} {window_ms} {by_series}");
            let found = coll.aggregate_windows(&filter, &spec).expect("aggregate");
            assert_same_groups(&found, &reference_aggregate(&docs, &filter, &spec), &ctx);
            // The parts are merged in id order: the same answer, bit for bit, every time.
            assert_eq!(
                coll.aggregate_windows(&filter, &spec).expect("again"),
                found,
                "{ctx}"
            );
        }
    }
}

#[test]
fn meta_sub_field_filters_give_the_same_answers_on_many_series() {
    let (_d, _db, coll) = setup(&meta_opts());
    // 70 series, one measurement an hour for 60 hours: 4 200 buckets. Most meta values are
    // documents of strings; a few have a number, an array, or are not documents at all
    // (fields in name order, as stored, R-3.1).
    let mut docs = Vec::new();
    for h in 0..60i64 {
        for s in 0..70i64 {
            let m = match s {
                0 => Bson::String("h1".into()),
                1 => Bson::Document(doc! { "host": "h1", "tags": ["x", "y"] }),
                2 => Bson::Document(doc! { "dc": "d0", "host": ["h2", "h9"] }),
                3 => Bson::Document(doc! { "dc": "d1" }),
                _ => Bson::Document(doc! {
                    "dc": format!("d{}", s % 3),
                    "host": format!("h{s}"),
                    "n": s % 4,
                }),
            };
            docs.push(doc! { "t": at(h * HOUR + s * MIN / 2), "m": m, "v": h * 100 + s });
        }
    }
    insert_all(&coll, &docs);
    for filter in [
        doc! { "m.host": "h1" },
        doc! { "m.host": "h9" },
        doc! { "m.host": "h42", "t": { "$gte": at(12 * HOUR), "$lt": at(18 * HOUR) } },
        doc! { "m.host": { "$in": ["h5", "h64", "h2"] } },
        doc! { "m.host": { "$gt": "h60" } },
        doc! { "m.dc": "d1", "m.host": { "$lte": "h20" } },
        doc! { "m.n": 3 },
        doc! { "m.tags": "y" },
        doc! { "m.host": Bson::Null },
        doc! { "m.missing": "x" },
    ] {
        let (found, stats) = sorted_find(&coll, filter.clone());
        let expected = reference_find(&docs, &filter);
        assert_same_rows(&found, &expected, &filter.to_string());
        assert_eq!(
            coll.count(&filter).expect("count"),
            expected.len() as u64,
            "{filter}"
        );
        // Each series is looked at once or twice in the index (its first entry, then the
        // time range), whatever the number of its buckets.
        assert!(
            stats.index_entries_scanned <= 3 * 70 + expected.len() as u64,
            "{filter} {stats:?}"
        );
    }
}

// ---- indexes (SPEC §13) ------------------------------------------------------------------------------

#[test]
fn r_13_2_without_the_default_index_queries_read_the_whole_bucket_directory() {
    let (_d, _db, coll) = setup(&meta_opts());
    let names: Vec<String> = (0..10).map(|i| format!("s{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let docs = hourly(&refs, 6, 3);
    insert_all(&coll, &docs);
    let filter = doc! { "m": "s3", "t": { "$gte": at(2 * HOUR), "$lt": at(4 * HOUR) } };
    let (_, with_index) = sorted_find(&coll, filter.clone());
    assert_eq!(with_index.index_entries_scanned, 2, "{with_index:?}");
    coll.drop_index("m_1_t_1").expect("drop the default index");
    let (found, stats) = sorted_find(&coll, filter.clone());
    assert_same_rows(&found, &reference_find(&docs, &filter), "dropped");
    // Every stored bucket: the 10 series' newest buckets are open, in memory only.
    assert_eq!(stats.index_entries_scanned, 50, "every bucket: {stats:?}");
    assert_eq!(stats.buckets_read, 2, "{stats:?}");
    assert_eq!(coll.count(&filter).expect("count"), 6);
    let (last, stats) = coll
        .last_points_with_stats(&doc! { "m": { "$in": ["s1", "s2"] } })
        .expect("last");
    assert_last_points(
        &last,
        &reference_last(&docs, &doc! { "m": { "$in": ["s1", "s2"] } }),
    );
    assert_eq!(stats.index_entries_scanned, 50, "{stats:?}");
    let spec = AggregateSpec {
        window_ms: HOUR,
        by_series: true,
        outputs: vec![("n".into(), Accumulator::Count)],
    };
    let groups = coll.aggregate_windows(&filter, &spec).expect("aggregate");
    assert_same_groups(
        &groups,
        &reference_aggregate(&docs, &filter, &spec),
        "aggregate",
    );
}

#[test]
fn secondary_index_candidates_give_the_same_answers() {
    let (_d, _db, coll) = setup(&meta_opts());
    let names: Vec<String> = (0..5).map(|i| format!("s{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let docs = hourly(&refs, 8, 3);
    insert_all(&coll, &docs);
    coll.create_index(&doc! { "v": 1 }, &IndexOptions::default())
        .expect("create index");
    for filter in [
        doc! { "v": { "$gte": 200, "$lt": 260 } },
        doc! { "v": { "$gt": 400 }, "m": { "$in": ["s1", "s4"] } },
    ] {
        let (found, _) = sorted_find(&coll, filter.clone());
        assert_same_rows(&found, &reference_find(&docs, &filter), &filter.to_string());
        let n = docs.iter().filter(|d| reference_match(d, &filter)).count() as u64;
        assert_eq!(coll.count(&filter).expect("count"), n);
        let last = coll.last_points(&filter).expect("last");
        assert_last_points(&last, &reference_last(&docs, &filter));
    }
}

// ---- columnar ------------------------------------------------------------------------------------------

#[test]
fn columnar_result_equals_find() {
    let (_d, _db, coll) = setup(&meta_opts());
    let mut docs = hourly(&["a", "b"], 4, 3);
    docs.push(doc! { "t": at(7 * MIN), "m": "a", "extra": "x", "v": 1.5 });
    insert_all(&coll, &docs);
    for (filter, projection) in [
        (doc! {}, None),
        (
            doc! { "m": "a", "v": { "$gte": 1 } },
            Some(doc! { "extra": 1 }),
        ),
        (
            doc! { "t": { "$gte": at(HOUR + 10 * MIN) } },
            Some(doc! { "v": 0 }),
        ),
    ] {
        let opts = FindOptions {
            projection,
            sort: Some(SortOrder::Ascending),
            limit: None,
            skip: 0,
            sort_by: None,
        };
        let rows = coll.find(&filter, &opts).expect("find");
        let (batches, stats) = find_arrow(&coll, &filter, &opts);
        let arrow_rows = documents(&batches);
        assert_eq!(arrow_rows.len(), rows.len());
        assert_eq!(stats.rows_returned as usize, rows.len());
        for (row, col_doc) in rows.iter().zip(arrow_rows) {
            let mut col_doc = tscoll_tests::arrow::normal_document(&col_doc);
            for k in ["t", "m"] {
                if !row.contains_key(k) {
                    col_doc.remove(k);
                }
            }
            let row = tscoll_tests::arrow::normal_document(row);
            let mut a: Vec<_> = row.iter().collect();
            let mut b: Vec<_> = col_doc.iter().collect();
            a.sort_by(|x, y| x.0.cmp(y.0));
            b.sort_by(|x, y| x.0.cmp(y.0));
            assert_eq!(a, b, "{filter}");
        }
    }
}

// ---- property: find, count, aggregate and columns against naive computations --------------------------

fn value_strategy() -> BoxedStrategy<Option<Bson>> {
    prop_oneof![
        3 => (-20i32..20).prop_map(|i| Some(Bson::Int32(i))),
        2 => (-20i64..20).prop_map(|i| Some(Bson::Int64(i))),
        2 => (-40i32..40).prop_map(|i| Some(Bson::Double(f64::from(i) / 2.0))),
        1 => "[a-d]{0,2}".prop_map(|s| Some(Bson::String(s))),
        1 => Just(Some(Bson::Null)),
        2 => Just(None),
    ]
    .boxed()
}

/// Small values nested in arrays and documents `{s: ...}`, NaN among the numbers.
fn nested_strategy() -> BoxedStrategy<Bson> {
    let scalar = prop_oneof![
        4 => (-2i32..3).prop_map(Bson::Int32),
        1 => Just(Bson::Double(f64::NAN)),
        1 => Just(Bson::Double(0.5)),
        1 => Just(Bson::String("x".into())),
        1 => Just(Bson::Null),
    ];
    scalar
        .prop_recursive(3, 12, 3, |inner| {
            prop_oneof![
                2 => proptest::collection::vec(inner.clone(), 0..3).prop_map(Bson::Array),
                1 => inner.prop_map(|v| Bson::Document(doc! { "s": v })),
            ]
        })
        .boxed()
}

/// Measurements with distinct times (minute `k` of the first two days), three series and a
/// no-meta series, fields `v` (mixed types, sometimes missing), `w` (int, sometimes missing),
/// `r` (an array of documents) and `a` (values nested in arrays and documents).
fn docs_strategy() -> impl Strategy<Value = Vec<Document>> {
    proptest::collection::btree_map(
        0i64..2880,
        (
            0usize..4,
            value_strategy(),
            proptest::option::of(0i32..100),
            proptest::option::weighted(0.3, proptest::collection::vec(value_strategy(), 0..3)),
            proptest::option::weighted(0.6, nested_strategy()),
        ),
        1..160,
    )
    .prop_map(|m| {
        m.into_iter()
            .map(|(k, (s, v, w, r, a))| {
                let mut d = doc! { "t": at(k * MIN) };
                if s < 3 {
                    d.insert("m", ["a", "b", "c"][s]);
                }
                if let Some(v) = v {
                    d.insert("v", v);
                }
                if let Some(w) = w {
                    d.insert("w", w);
                }
                // `r`: an array of documents whose `x` is sometimes missing.
                if let Some(r) = r {
                    let items: Vec<Bson> = r
                        .into_iter()
                        .map(|x| Bson::Document(x.map(|x| doc! { "x": x }).unwrap_or_default()))
                        .collect();
                    d.insert("r", items);
                }
                if let Some(a) = a {
                    d.insert("a", a);
                }
                d
            })
            .collect()
    })
    .prop_shuffle()
}

fn pred_strategy() -> impl Strategy<Value = (String, Bson)> {
    let op = prop_oneof![
        Just("$eq"),
        Just("$gt"),
        Just("$gte"),
        Just("$lt"),
        Just("$lte")
    ];
    let operand = value_strategy().prop_map(|v| v.unwrap_or(Bson::Int32(0)));
    prop_oneof![
        2 => (0usize..3).prop_map(|s| ("m".to_owned(), Bson::String(["a", "b", "c"][s].into()))),
        1 => Just(("m".to_owned(), Bson::Null)),
        1 => proptest::collection::vec(0usize..5, 1..3).prop_map(|v| {
            let values: Vec<Bson> = v
                .into_iter()
                .map(|s| if s == 4 { Bson::Null } else { Bson::String(["a", "b", "c", "z"][s].into()) })
                .collect();
            ("m".to_owned(), Bson::Document(doc! { "$in": values }))
        }),
        3 => (op.clone(), 0i64..2880).prop_map(|(op, k)| ("t".to_owned(), Bson::Document(doc! { op: at(k * MIN) }))),
        3 => (op.clone(), operand.clone()).prop_map(|(op, x)| ("v".to_owned(), Bson::Document(doc! { op: x }))),
        1 => proptest::collection::vec(operand.clone(), 1..3).prop_map(|v| ("v".to_owned(), Bson::Document(doc! { "$in": v }))),
        1 => (op.clone(), 0i32..100).prop_map(|(op, x)| ("w".to_owned(), Bson::Document(doc! { op: x }))),
        2 => (op.clone(), operand.clone()).prop_map(|(op, x)| ("r.x".to_owned(), Bson::Document(doc! { op: x }))),
        // Negations and existence, on every kind of field.
        2 => (field_strategy(), prop_oneof![Just("$ne"), Just("$nin")], value_strategy())
            .prop_map(|(f, op, x)| {
                let x = x.unwrap_or(Bson::Null);
                let operand = if op == "$nin" { Bson::Array(vec![x, Bson::String("b".into())]) } else { x };
                (f, Bson::Document(doc! { op: operand }))
            }),
        1 => (field_strategy(), any::<bool>())
            .prop_map(|(f, e)| (f, Bson::Document(doc! { "$exists": e }))),
        1 => (field_strategy(), op, 0i32..100)
            .prop_map(|(f, op, x)| (f, Bson::Document(doc! { "$not": { op: x } }))),
        1 => (0i64..2880).prop_map(|k| ("t".to_owned(), Bson::Document(doc! { "$ne": at(k * MIN) }))),
        // Values nested in arrays and documents, NaN, array and document operands.
        4 => (nested_field_strategy(), prop_oneof![Just("$eq"), Just("$gt"), Just("$gte"), Just("$lt"), Just("$lte"), Just("$ne")], nested_strategy())
            .prop_map(|(f, op, x)| (f, Bson::Document(doc! { op: x }))),
        1 => (nested_field_strategy(), nested_strategy()).prop_map(|(f, x)| (f, x)),
        2 => (nested_field_strategy(), prop_oneof![Just("$in"), Just("$nin"), Just("$all")], proptest::collection::vec(nested_strategy(), 0..3))
            .prop_map(|(f, op, xs)| (f, Bson::Document(doc! { op: xs }))),
        1 => (nested_field_strategy(), 0i32..3).prop_map(|(f, n)| (f, Bson::Document(doc! { "$size": n }))),
        1 => (field_strategy(), prop::sample::select(vec!["int", "long", "double", "number", "string", "null", "array"]))
            .prop_map(|(f, t)| (f, Bson::Document(doc! { "$type": t }))),
        1 => (field_strategy(), 2i32..5, 0i32..3)
            .prop_map(|(f, d, r)| (f, Bson::Document(doc! { "$mod": [d, r - 1] }))),
    ]
}

fn field_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("m".to_owned()),
        Just("v".to_owned()),
        Just("w".to_owned()),
        Just("r.x".to_owned()),
        Just("a".to_owned()),
        Just("a.s".to_owned()),
    ]
}

/// Paths into the nested values of `a`: through documents, arrays, positions.
fn nested_field_strategy() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["a", "a.s", "a.s.s", "a.0", "a.1.s", "a.s.0"]).prop_map(str::to_owned)
}

/// A filter document: a conjunction of conditions, some of them grouped in `$or`, `$nor` or
/// `$and`, nested one level.
fn node_strategy() -> impl Strategy<Value = Document> {
    let leaf = pred_strategy().prop_map(|(k, v)| doc! { k: v });
    leaf.prop_recursive(2, 12, 3, |inner| {
        (
            prop_oneof![Just("$or"), Just("$nor"), Just("$and")],
            proptest::collection::vec(inner, 1..4),
        )
            .prop_map(|(op, items)| {
                let items: Vec<Bson> = items.into_iter().map(Bson::Document).collect();
                doc! { op: items }
            })
    })
}

fn filter_strategy() -> impl Strategy<Value = Document> {
    proptest::collection::vec(node_strategy(), 0..4).prop_map(|preds| {
        let items: Vec<Bson> = preds.into_iter().map(Bson::Document).collect();
        if items.is_empty() {
            doc! {}
        } else {
            doc! { "$and": items }
        }
    })
}

fn spec_strategy() -> impl Strategy<Value = AggregateSpec> {
    (
        prop_oneof![Just(7 * MIN), Just(HOUR), Just(5 * HOUR), Just(48 * HOUR)],
        any::<bool>(),
    )
        .prop_map(|(window_ms, by_series)| AggregateSpec {
            window_ms,
            by_series,
            outputs: vec![
                ("n".into(), Accumulator::Count),
                ("lo".into(), Accumulator::Min("v".into())),
                ("hi".into(), Accumulator::Max("v".into())),
                ("whi".into(), Accumulator::Max("w".into())),
                ("sum".into(), Accumulator::Sum("v".into())),
                ("avg".into(), Accumulator::Avg("w".into())),
                ("first".into(), Accumulator::First("w".into())),
                ("last".into(), Accumulator::Last("v".into())),
                ("tmax".into(), Accumulator::Max("t".into())),
            ],
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn queries_equal_naive_computations(
        docs in docs_strategy(),
        chunks in 1usize..4,
        filter in filter_strategy(),
        sort in proptest::option::of(prop_oneof![Just(SortOrder::Ascending), Just(SortOrder::Descending)]),
        limit in proptest::option::of(0usize..30),
        skip in prop_oneof![3 => Just(0usize), 1 => 0usize..12],
        spec in spec_strategy(),
    ) {
        let (_d, _db, coll) = setup(&meta_opts());
        let size = docs.len().div_ceil(chunks);
        for chunk in docs.chunks(size) {
            insert_all(&coll, chunk);
        }
        let expected = reference_find(&docs, &filter);
        let opts = FindOptions { projection: None, sort, sort_by: None, limit, skip };
        let (found, stats) = coll.find_with_stats(&filter, &opts).expect("find");
        let by_time: HashMap<i64, &Document> = expected.iter().map(|d| (time_of(d), *d)).collect();
        for f in &found {
            let e = by_time.get(&time_of(f));
            prop_assert!(e.is_some_and(|e| same_measurement(f, e)), "{} not expected for {}", f, filter);
        }
        // MongoDB: skip first, then the limit; a limit of 0 is no limit.
        let after_skip = expected.len().saturating_sub(skip);
        let n = limit.filter(|&l| l > 0).map_or(after_skip, |l| l.min(after_skip));
        prop_assert_eq!(found.len(), n, "{} {:?}", filter, stats);
        let mut times: Vec<i64> = expected.iter().map(|d| time_of(d)).collect();
        if sort == Some(SortOrder::Descending) {
            times.reverse();
        }
        let found_times: Vec<i64> = found.iter().map(time_of).collect();
        if sort.is_some() {
            let from = skip.min(times.len());
            prop_assert_eq!(&found_times, &times[from..from + n]);
        }
        let (batches, _) = find_arrow(&coll, &filter, &opts);
        prop_assert_eq!(&arrow_times(&batches), &found_times);
        prop_assert_eq!(coll.count(&filter).expect("count"), expected.len() as u64);
        let groups = coll.aggregate_windows(&filter, &spec).expect("aggregate");
        let expected_groups = reference_aggregate(&docs, &filter, &spec);
        assert_same_groups(&groups, &expected_groups, &format!("{filter} {spec:?}"));
        let last = coll.last_points(&filter).expect("last points");
        let mut expected_last: BTreeMap<Option<String>, i64> = BTreeMap::new();
        for d in &expected {
            let m = d.get_str("m").ok().map(str::to_owned);
            let t = time_of(d);
            expected_last.entry(m).and_modify(|b| *b = (*b).max(t)).or_insert(t);
        }
        let found_last: Vec<(Option<String>, i64)> = last
            .iter()
            .map(|d| (d.get_str("m").ok().map(str::to_owned), time_of(d)))
            .collect();
        prop_assert_eq!(found_last, expected_last.into_iter().collect::<Vec<_>>());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// `sort_by` on measurement fields (a missing field sorting as null), then the time field
    /// to make the order total, equals a sort of the naive matches, with skip and limit.
    #[test]
    fn sorts_on_fields_equal_a_naive_sort(
        docs in docs_strategy(),
        filter in filter_strategy(),
        first in prop_oneof![Just("v"), Just("w"), Just("m")],
        first_desc in any::<bool>(),
        time_desc in any::<bool>(),
        skip in 0usize..8,
        limit in proptest::option::of(1usize..20),
    ) {
        let (_d, _db, coll) = setup(&meta_opts());
        insert_all(&coll, &docs);
        let dir = |desc: bool| if desc { -1 } else { 1 };
        let opts = FindOptions {
            sort_by: Some(doc! { first: dir(first_desc), "t": dir(time_desc) }),
            skip,
            limit,
            projection: Some(doc! { "w": 0 }),
            ..FindOptions::default()
        };
        let found = coll.find(&filter, &opts).expect("find");
        let mut expected = reference_find(&docs, &filter);
        let key = |d: &Document| d.get(first).cloned().unwrap_or(Bson::Null);
        expected.sort_by(|a, b| {
            let o = order(&key(a), &key(b));
            let o = if first_desc { o.reverse() } else { o };
            let t = time_of(a).cmp(&time_of(b));
            o.then(if time_desc { t.reverse() } else { t })
        });
        let want: Vec<i64> = expected
            .iter()
            .skip(skip)
            .take(limit.unwrap_or(usize::MAX))
            .map(|d| time_of(d))
            .collect();
        let got: Vec<i64> = found.iter().map(time_of).collect();
        prop_assert_eq!(got, want, "{} {:?}", filter, opts);
        // The projection applies after the sort: `w` was a sort key, and is gone.
        prop_assert!(found.iter().all(|d| !d.contains_key("w")));
    }
}

/// SPEC §14.2 with an `$or`: an `$or` of whole-meta equalities scans the index entries of
/// those series only, like `$in`; the answer is the same as a scan of every series.
#[test]
fn r_14_2_an_or_of_meta_equalities_scans_those_series_only() {
    let (_dir, _db, coll) = temp_collection(
        CatalogOptions::default(),
        &tscoll_tests::spec::options(true),
    );
    let docs: Vec<Document> = (0..40)
        .map(|i| doc! { "t": at(i64::from(i) * 1000), "m": format!("s{}", i % 10), "v": i })
        .collect();
    insert_all(&coll, &docs);
    coll.flush().expect("flush");
    let or = doc! { "$or": [{ "m": "s1" }, { "m": { "$eq": "s2" } }, { "m": { "$in": ["s3"] } }] };
    let (n_or, s_or) = coll.count_with_stats(&or).expect("count");
    let (n_in, s_in) = coll
        .count_with_stats(&doc! { "m": { "$in": ["s1", "s2", "s3"] } })
        .expect("count");
    let (n_all, s_all) = coll
        .count_with_stats(
            &doc! { "$or": [{ "m": "s1" }, { "m": "s2" }, { "m": "s3" }, { "v": -1 }] },
        )
        .expect("count");
    assert_eq!((n_or, n_in, n_all), (12, 12, 12));
    assert_eq!(s_or.index_entries_scanned, s_in.index_entries_scanned);
    assert!(
        s_or.index_entries_scanned < s_all.index_entries_scanned,
        "{s_or:?} vs {s_all:?}"
    );
}
