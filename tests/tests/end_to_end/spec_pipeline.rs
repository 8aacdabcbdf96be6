//! Aggregation pipelines on the bundled NOAA daily weather (two series, Seattle and New York,
//! 2012–2015): results against figures computed by hand from the data file (independently of
//! the engine) and against plain computations over the loaded documents.

use bson::{Bson, DateTime, Document, doc};
use tscoll_engine::{
    CatalogOptions, Collection, Database, ErrorCode, Granularity, TimeseriesOptions,
};
use tscoll_tests::spec::{insert_all, temp_collection};

const DAY: i64 = 86_400_000;

fn weather() -> (tempfile::TempDir, Database, Collection, Vec<Document>) {
    let docs =
        tscoll_tests::load_ndjson(&tscoll_tests::data_dir().join("noaa_weather_daily.ndjson.xz"));
    let (dir, db, coll) = temp_collection(
        CatalogOptions::default(),
        &TimeseriesOptions::new("ts")
            .meta_field("meta")
            .granularity(Granularity::Hours),
    );
    insert_all(&coll, &docs);
    (dir, db, coll, docs)
}

/// An empty collection with time field `ts` and meta field `meta`.
fn empty() -> (tempfile::TempDir, Database, Collection) {
    temp_collection(
        CatalogOptions::default(),
        &TimeseriesOptions::new("ts").meta_field("meta"),
    )
}

fn series(d: &Document) -> &str {
    d.get_document("meta")
        .and_then(|m| m.get_str("series"))
        .expect("series")
}

fn ms(d: &Document) -> i64 {
    d.get_datetime("ts").expect("ts").timestamp_millis()
}

fn f(d: &Document, k: &str) -> f64 {
    d.get_f64(k).expect(k)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn group_by_series_and_year_counts_days() {
    let (_dir, _db, coll, _) = weather();
    let out = coll
        .aggregate(&[
            doc! { "$group": {
                "_id": { "s": "$meta.series", "y": { "$year": "$ts" } },
                "days": { "$sum": 1 },
            } },
            doc! { "$match": { "_id.s": "Seattle" } },
        ])
        .expect("aggregate");
    // Counted from the data file: 2012 is a leap year.
    let got: Vec<(i32, i32)> = out
        .iter()
        .map(|d| {
            let id = d.get_document("_id").expect("_id");
            (
                id.get_i32("y").expect("y"),
                d.get_i32("days").expect("days"),
            )
        })
        .collect();
    assert_eq!(got, [(2012, 366), (2013, 365), (2014, 365), (2015, 365)]);
}

#[test]
fn monthly_statistics_of_one_series() {
    let (_dir, _db, coll, _) = weather();
    let out = coll
        .aggregate(&[
            doc! { "$match": { "meta.series": "Seattle", "ts": { "$lt": DateTime::parse_rfc3339_str("2012-02-01T00:00:00Z").expect("date") } } },
            doc! { "$group": {
                "_id": { "$dateTrunc": { "date": "$ts", "unit": "month" } },
                "avg": { "$avg": "$temp_max" },
                "windiest": { "$max": "$wind" },
                "sd": { "$stdDevPop": "$temp_max" },
                "n": { "$count": {} },
                "first": { "$first": "$weather" },
                "kinds": { "$addToSet": "$weather" },
            } },
        ])
        .expect("aggregate");
    assert_eq!(out.len(), 1);
    let g = &out[0];
    assert_eq!(
        g.get_datetime("_id").expect("_id"),
        &DateTime::parse_rfc3339_str("2012-01-01T00:00:00Z").expect("date")
    );
    // Computed by hand from the file: 31 days, mean 7.054838709677…, max wind 8.2,
    // population standard deviation 3.39979493780826…
    assert_eq!(g.get_i32("n").expect("n"), 31);
    assert!(close(f(g, "avg"), 7.054_838_709_677_42), "{g}");
    assert!(close(f(g, "windiest"), 8.2), "{g}");
    assert!((f(g, "sd") - 3.399_794_937_808_267_5).abs() < 1e-9, "{g}");
    assert_eq!(g.get_str("first").expect("first"), "drizzle");
    assert!(!g.get_array("kinds").expect("kinds").is_empty());
}

#[test]
fn the_window_engine_and_the_general_group_agree() {
    let (_dir, _db, coll, docs) = weather();
    let group = |extra: Option<(&str, Bson)>| {
        let mut g = doc! {
            "_id": { "s": "$meta", "w": { "$dateTrunc": { "date": "$ts", "unit": "day", "binSize": 10 } } },
            "n": { "$count": {} },
            "lo": { "$min": "$temp_min" },
            "hi": { "$max": "$temp_max" },
        };
        if let Some((k, v)) = extra {
            g.insert(k, v);
        }
        coll.aggregate(&[doc! { "$group": g }]).expect("aggregate")
    };
    // Count, min and max only: the windowed aggregate engine answers it.
    let fast = group(None);
    // A $first makes it the general $group.
    let general: Vec<Document> = group(Some(("f", Bson::Document(doc! { "$first": "$wind" }))))
        .into_iter()
        .map(|mut d| {
            d.remove("f");
            d
        })
        .collect();
    assert_eq!(fast, general);
    // Sums, means and deviations: from the bucket sums of control records in the windowed
    // engine, value by value in the general $group; equal to rounding.
    let stats = |first: bool| {
        let mut g = doc! {
            "_id": { "s": "$meta", "w": { "$dateTrunc": { "date": "$ts", "unit": "day", "binSize": 10 } } },
            "sum": { "$sum": "$precipitation" },
            "avg": { "$avg": "$wind" },
            "sd": { "$stdDevPop": "$temp_max" },
            "sds": { "$stdDevSamp": "$temp_min" },
        };
        if first {
            g.insert("f", doc! { "$first": "$wind" });
        }
        coll.aggregate(&[doc! { "$group": g }]).expect("aggregate")
    };
    let (windowed, general) = (stats(false), stats(true));
    assert_eq!(windowed.len(), general.len());
    for (a, b) in windowed.iter().zip(&general) {
        assert_eq!(a.get("_id"), b.get("_id"));
        for k in ["sum", "avg", "sd", "sds"] {
            assert!(close(f(a, k), f(b, k)), "{k}: {a} vs {b}");
        }
    }
    // And both match a plain count per series and 10-day bin since 2000-01-01.
    let n: i64 = fast
        .iter()
        .map(|d| i64::from(d.get_i32("n").expect("n")))
        .sum();
    assert_eq!(n, docs.len() as i64);
    let reference = 946_684_800_000_i64;
    let bins: std::collections::BTreeSet<(String, i64)> = docs
        .iter()
        .map(|d| {
            (
                series(d).to_owned(),
                (ms(d) - reference).div_euclid(10 * DAY),
            )
        })
        .collect();
    assert_eq!(fast.len(), bins.len());
}

#[test]
fn moving_average_derivative_and_integral_per_series() {
    let (_dir, _db, coll, docs) = weather();
    let out = coll
        .aggregate(&[
            doc! { "$match": { "meta.series": "New York" } },
            doc! { "$setWindowFields": {
                "partitionBy": "$meta.series",
                "sortBy": { "ts": 1 },
                "output": {
                    "ma3": { "$avg": "$temp_max", "window": { "documents": [-2, 0] } },
                    "sum7d": { "$sum": "$precipitation", "window": { "range": [-6, 0], "unit": "day" } },
                    "slope": { "$derivative": { "input": "$temp_max", "unit": "day" }, "window": { "documents": [-1, 0] } },
                    "area": { "$integral": { "input": "$temp_max", "unit": "day" }, "window": { "range": [-2, 0], "unit": "day" } },
                    "running": { "$count": {}, "window": { "documents": ["unbounded", "current"] } },
                },
            } },
        ])
        .expect("aggregate");
    let mut ny: Vec<&Document> = docs.iter().filter(|d| series(d) == "New York").collect();
    ny.sort_by_key(|d| ms(d));
    assert_eq!(out.len(), ny.len());
    for (i, d) in out.iter().enumerate() {
        assert_eq!(ms(d), ms(ny[i]));
        let t = |j: usize| f(ny[j], "temp_max");
        let lo = i.saturating_sub(2);
        let ma = (lo..=i).map(t).sum::<f64>() / (i - lo + 1) as f64;
        assert!(close(f(d, "ma3"), ma), "row {i}: {d}");
        // Daily data without gaps: 7 days back is 7 rows.
        let lo7 = i.saturating_sub(6);
        let p: f64 = (lo7..=i).map(|j| f(ny[j], "precipitation")).sum();
        assert!(close(f(d, "sum7d"), p), "row {i}: {d}");
        if i == 0 {
            assert_eq!(d.get("slope"), Some(&Bson::Null));
        } else {
            assert!(close(f(d, "slope"), t(i) - t(i - 1)), "row {i}: {d}");
        }
        let area: f64 = (lo..i).map(|k| (t(k) + t(k + 1)) / 2.0).sum();
        assert!(close(f(d, "area"), area), "row {i}: {d}");
        assert_eq!(d.get_i32("running").expect("running"), i as i32 + 1);
    }
}

#[test]
fn project_add_fields_sort_skip_limit_count() {
    let (_dir, _db, coll, _) = weather();
    let out = coll
        .aggregate(&[
            doc! { "$match": { "weather": "snow" } },
            doc! { "$addFields": { "range": { "$subtract": ["$temp_max", "$temp_min"] } } },
            doc! { "$project": { "_id": 0, "city": "$meta.series", "range": 1, "day": { "$dateTrunc": { "date": "$ts", "unit": "day" } } } },
            doc! { "$sort": { "range": -1, "day": 1 } },
            doc! { "$skip": 1 },
            doc! { "$limit": 3 },
            doc! { "$unset": "day" },
        ])
        .expect("aggregate");
    assert_eq!(out.len(), 3);
    for d in &out {
        assert_eq!(d.keys().collect::<Vec<_>>(), ["range", "city"], "{d}");
    }
    let ranges: Vec<f64> = out.iter().map(|d| f(d, "range")).collect();
    assert!(ranges.windows(2).all(|w| w[0] >= w[1]), "{ranges:?}");
    let count = coll
        .aggregate(&[
            doc! { "$match": { "weather": "snow" } },
            doc! { "$count": "snowy" },
        ])
        .expect("aggregate");
    // Counted from the file.
    assert_eq!(count, [doc! { "snowy": 119 }]);
    let none = coll
        .aggregate(&[
            doc! { "$match": { "weather": "hail" } },
            doc! { "$count": "n" },
        ])
        .expect("aggregate");
    assert!(none.is_empty());
}

#[test]
fn stages_not_built_are_refused_by_name() {
    let (_dir, _db, coll) = empty();
    for (stage, needle, code) in [
        (
            doc! { "$group": { "x": { "$sum": 1 } } },
            "_id",
            ErrorCode::Location(15955),
        ),
        (doc! { "$limit": 0 }, "$limit", ErrorCode::Location(15958)),
        (
            doc! { "$limit": -1 },
            "$limit",
            ErrorCode::Location(5_107_201),
        ),
        (
            doc! { "$limit": 1.5 },
            "$limit",
            ErrorCode::Location(5_107_201),
        ),
        (
            doc! { "$limit": "1" },
            "$limit",
            ErrorCode::Location(5_107_201),
        ),
        (
            doc! { "$skip": -1 },
            "$skip",
            ErrorCode::Location(5_107_200),
        ),
        (
            doc! { "$skip": 0.5 },
            "$skip",
            ErrorCode::Location(5_107_200),
        ),
        (
            doc! { "$skip": "1" },
            "$skip",
            ErrorCode::Location(5_107_200),
        ),
        (
            doc! { "$project": { "a": 1, "b": 0 } },
            "mix",
            ErrorCode::BadValue,
        ),
    ] {
        let e = coll.aggregate(std::slice::from_ref(&stage)).unwrap_err();
        assert_eq!(e.code(), code, "{stage}: {e}");
        assert!(e.to_string().contains(needle), "{stage}: {e}");
    }
    // A whole number of any numeric type is a count.
    coll.aggregate(&[doc! { "$skip": 1.0 }, doc! { "$limit": 2_i64 }])
        .expect("whole-number counts");
}

#[test]
fn failing_expressions_fail_the_pipeline_and_the_query_with_mongodbs_codes() {
    let (_dir, _db, coll) = empty();
    insert_all(
        &coll,
        &[
            doc! { "ts": DateTime::from_millis(0), "a": 1, "b": 0, "s": "x" },
            doc! { "ts": DateTime::from_millis(1), "a": 4, "b": 2, "s": "y" },
        ],
    );
    for (expr, needle, code, name) in [
        (
            doc! { "$divide": ["$a", "$b"] },
            "by zero",
            16608,
            "Location16608",
        ),
        (
            doc! { "$mod": ["$a", 0] },
            "by zero",
            16610,
            "Location16610",
        ),
        (
            doc! { "$add": ["$a", "$s"] },
            "$add",
            16554,
            "Location16554",
        ),
        (
            doc! { "$subtract": ["$a", "$s"] },
            "$subtract",
            16556,
            "Location16556",
        ),
        (
            doc! { "$multiply": ["$a", "$s"] },
            "$multiply",
            16555,
            "Location16555",
        ),
        (
            doc! { "$divide": ["$s", "$a"] },
            "$divide",
            16609,
            "Location16609",
        ),
        (doc! { "$mod": ["$s", 2] }, "$mod", 16611, "Location16611"),
        (doc! { "$abs": "$s" }, "$abs", 28765, "Location28765"),
        (
            doc! { "$add": ["$ts", "$ts"] },
            "one date",
            16612,
            "Location16612",
        ),
        (doc! { "$hour": "$s" }, "date", 16006, "Location16006"),
        (
            doc! { "$toLong": "$s" },
            "$toLong",
            241,
            "ConversionFailure",
        ),
    ] {
        let e = coll
            .aggregate(&[doc! { "$addFields": { "r": expr.clone() } }])
            .unwrap_err();
        assert_eq!(e.code().code(), code, "{expr}: {e}");
        assert_eq!(e.code().name(), name, "{expr}: {e}");
        assert!(
            e.to_string().contains("$addFields") && e.to_string().contains(needle),
            "{e}"
        );
    }
    // In a filter, as in MongoDB, a measurement whose evaluation fails fails the query, by
    // find, count, delete and update alike; a `$match` after a stage too.
    let by_zero = doc! { "$expr": { "$eq": [{ "$divide": ["$a", "$b"] }, 2] } };
    let e = coll
        .find(&by_zero, &tscoll_engine::FindOptions::default())
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::Location(16608), "{e}");
    let e = coll
        .aggregate(&[
            doc! { "$addFields": { "c": 1 } },
            doc! { "$match": by_zero.clone() },
        ])
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::Location(16608), "{e}");
    assert_eq!(
        coll.delete_many(&by_zero).unwrap_err().code(),
        ErrorCode::Location(16608)
    );
    assert_eq!(
        coll.update_many(&by_zero, &doc! { "$set": { "z": 1 } })
            .unwrap_err()
            .code(),
        ErrorCode::Location(16608)
    );
    assert_eq!(
        coll.count(&Document::new()).expect("count"),
        2,
        "nothing deleted"
    );
    // Where no measurement makes it fail, the filter selects as before.
    let found = coll
        .find(
            &doc! { "$expr": { "$eq": [{ "$divide": ["$b", "$a"] }, 0.5] } },
            &tscoll_engine::FindOptions::default(),
        )
        .expect("find");
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].get_i32("a").expect("a"), 4);
}

#[test]
fn a_sort_before_a_limit_keeps_the_same_first_documents() {
    let (_dir, _db, coll, _) = weather();
    for (keys, n) in [
        (doc! { "temp_max": -1 }, 7),
        (doc! { "weather": 1, "wind": -1 }, 25),
        (doc! { "precipitation": 1 }, 1),
    ] {
        let limited = coll
            .aggregate(&[doc! { "$sort": keys.clone() }, doc! { "$limit": n }])
            .expect("aggregate");
        let mut all = coll
            .aggregate(&[doc! { "$sort": keys.clone() }])
            .expect("aggregate");
        all.truncate(usize::try_from(n).expect("n"));
        assert_eq!(limited, all, "{keys}");
    }
}

#[test]
fn derivative_and_integral_subtract_dates_in_milliseconds() {
    let (_dir, _db, coll) = empty();
    // 9999-12-31T23:58:00Z and one minute later: far from 1970, where a date divided by an
    // hour's length is not exact.
    let t0 = 253_402_300_680_000;
    insert_all(
        &coll,
        &[
            doc! { "ts": DateTime::from_millis(t0), "v": 0 },
            doc! { "ts": DateTime::from_millis(t0 + 60_000), "v": -1000 },
        ],
    );
    let out = coll
        .aggregate(&[doc! { "$setWindowFields": {
            "sortBy": { "ts": 1 },
            "output": {
                "slope": { "$derivative": { "input": "$v", "unit": "hour" }, "window": { "documents": [-1, 0] } },
                "area": { "$integral": { "input": "$v", "unit": "hour" }, "window": { "documents": [-1, 0] } },
                "n": { "$count": {}, "window": { "range": [-1, 0], "unit": "minute" } },
            },
        } }])
        .expect("aggregate");
    assert_eq!(out.len(), 2);
    // -1000 in one minute: -60000 an hour; the area is a sixtieth of an hour times -500.
    assert_eq!(out[1].get_f64("slope").expect("slope"), -60_000.0);
    assert_eq!(
        out[1].get_f64("area").expect("area"),
        60_000.0 / 3_600_000.0 * -500.0
    );
    assert_eq!(out[1].get_i32("n").expect("n"), 2);
    assert_eq!(out[0].get_i32("n").expect("n"), 1);
}

#[test]
fn expression_paths_through_arrays_of_documents_give_arrays() {
    let (_dir, _db, coll) = empty();
    insert_all(
        &coll,
        &[
            doc! { "ts": DateTime::from_millis(0), "o": [{ "b": 1 }, { "c": 5 }, { "b": 99 }] },
            doc! { "ts": DateTime::from_millis(1), "o": { "b": 2 } },
        ],
    );
    let arr = Bson::Array(vec![Bson::Int32(1), Bson::Int32(99)]);
    let out = coll
        .aggregate(&[
            doc! { "$sort": { "ts": 1 } },
            doc! { "$project": { "_id": 0, "v": "$o.b" } },
        ])
        .expect("aggregate");
    assert_eq!(out, [doc! { "v": arr.clone() }, doc! { "v": 2 }]);
    let out = coll
        .aggregate(&[
            doc! { "$sort": { "ts": 1 } },
            doc! { "$group": {
                "_id": null,
                "first": { "$first": "$o.b" },
                "last": { "$last": "$o.b" },
                "all": { "$push": "$o.b" },
            } },
        ])
        .expect("aggregate");
    assert_eq!(
        out,
        [doc! { "_id": null, "first": arr.clone(), "last": 2, "all": [arr.clone(), 2] }]
    );
    // In a filter, on the stored columns and on a pipeline's documents.
    let filter = doc! { "$expr": { "$eq": ["$o.b", arr] } };
    let found = coll
        .find(&filter, &tscoll_engine::FindOptions::default())
        .expect("find");
    assert_eq!(found.len(), 1);
    assert_eq!(ms(&found[0]), 0);
    let matched = coll
        .aggregate(&[
            doc! { "$addFields": { "x": 1 } },
            doc! { "$match": filter },
            doc! { "$count": "n" },
        ])
        .expect("aggregate");
    assert_eq!(matched, [doc! { "n": 1 }]);
}

#[test]
fn let_binds_variables_evaluated_outside_each_other_and_shadows_outer_ones() {
    let (_dir, _db, coll) = empty();
    insert_all(
        &coll,
        &[doc! { "ts": DateTime::from_millis(0), "price": 10, "qty": 3, "doc": { "x": 7 } }],
    );
    let out = coll
        .aggregate(&[doc! { "$project": {
            "_id": 0,
            "total": { "$let": {
                "vars": { "p": "$price", "q": "$qty" },
                "in": { "$multiply": ["$$p", "$$q"] },
            } },
            "inner": { "$let": {
                "vars": { "p": 1 },
                "in": { "$let": { "vars": { "p": 2, "d": "$doc" }, "in": { "$add": ["$$p", "$$d.x"] } } },
            } },
        } }])
        .expect("aggregate");
    assert_eq!(out, vec![doc! { "total": 30, "inner": 9 }]);
    for (bad, code) in [
        (doc! { "$let": { "vars": { "Upper": 1 }, "in": 1 } }, 16867),
        (doc! { "$add": ["$$nope", 1] }, 17276),
    ] {
        let e = coll
            .aggregate(&[doc! { "$project": { "v": bad.clone() } }])
            .unwrap_err();
        assert_eq!(e.code().code(), code, "{bad}: {e}");
    }
}

#[test]
fn an_expression_failing_on_a_meta_value_fails_the_query() {
    let (_dir, _db, coll) = empty();
    insert_all(
        &coll,
        &[
            doc! { "ts": DateTime::from_millis(0), "meta": { "x": 2 }, "v": 1 },
            doc! { "ts": DateTime::from_millis(1), "meta": { "x": 0 }, "v": 2 },
        ],
    );
    // The clause reads the meta field only: it is judged once per series, and a series whose
    // meta value makes it fail fails the query, as a measurement does.
    let by_zero = doc! { "$expr": { "$gt": [{ "$divide": [1, "$meta.x"] }, 0] } };
    let code = |e: tscoll_engine::Error| e.code();
    let opts = tscoll_engine::FindOptions::default();
    assert_eq!(
        code(coll.find(&by_zero, &opts).unwrap_err()),
        ErrorCode::Location(16608)
    );
    assert_eq!(
        code(coll.count(&by_zero).unwrap_err()),
        ErrorCode::Location(16608)
    );
    assert_eq!(
        code(coll.last_points(&by_zero).unwrap_err()),
        ErrorCode::Location(16608)
    );
    assert_eq!(
        code(
            coll.aggregate(&[doc! { "$match": by_zero.clone() }])
                .unwrap_err()
        ),
        ErrorCode::Location(16608)
    );
    assert_eq!(
        code(coll.delete_many(&by_zero).unwrap_err()),
        ErrorCode::Location(16608)
    );
    assert_eq!(
        coll.count(&Document::new()).expect("count"),
        2,
        "nothing deleted"
    );
    // Where no series makes it fail, it selects as before.
    let fine = doc! { "$expr": { "$gt": [{ "$divide": ["$meta.x", 2] }, 0.5] } };
    let found = coll.find(&fine, &opts).expect("find");
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].get_i32("v").expect("v"), 1);
}
