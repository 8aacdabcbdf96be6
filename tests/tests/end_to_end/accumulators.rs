//! The accumulators of `$group` that keep several values (`$topN`, `$firstN`, `$minN`,
//! `$median`, `$percentile`, `$mergeObjects` ...) and the window functions of
//! `$setWindowFields` that fill and shift a series (`$shift`, `$linearFill`, `$locf`, the
//! ranks, `$expMovingAvg`, `$covariancePop`), over two series with gaps; MongoDB's error codes
//! for their malformed forms.

use bson::{Bson, DateTime, Document, bson, doc};
use tscoll_engine::{Collection, Database, ErrorCode, TimeseriesOptions};
use tscoll_tests::spec::{insert_all, temp_collection};

const MINUTE: i64 = 60_000;

/// Series `a`: 10, -, -, 40, 25, - ; series `b`: 5, 7, null, 6 (one reading a minute, `-` a
/// reading without `v`).
fn series() -> (tempfile::TempDir, Database, Collection) {
    let (dir, db, coll) = temp_collection(
        tscoll_engine::CatalogOptions::default(),
        &TimeseriesOptions::new("ts").meta_field("meta"),
    );
    let at = |m: i64| DateTime::from_millis(1_700_000_000_000 + m * MINUTE);
    insert_all(
        &coll,
        &[
            doc! { "ts": at(0), "meta": "a", "v": 10, "extra": { "x": 1 } },
            doc! { "ts": at(1), "meta": "a" },
            doc! { "ts": at(2), "meta": "a" },
            doc! { "ts": at(3), "meta": "a", "v": 40, "extra": { "y": 2 } },
            doc! { "ts": at(4), "meta": "a", "v": 25 },
            doc! { "ts": at(5), "meta": "a" },
            doc! { "ts": at(0), "meta": "b", "v": 5 },
            doc! { "ts": at(1), "meta": "b", "v": 7 },
            doc! { "ts": at(2), "meta": "b", "v": null },
            doc! { "ts": at(3), "meta": "b", "v": 6 },
        ],
    );
    (dir, db, coll)
}

fn column(docs: &[Document], k: &str) -> Vec<Bson> {
    docs.iter()
        .map(|d| d.get(k).cloned().unwrap_or(Bson::Null))
        .collect()
}

#[test]
fn group_keeps_the_top_values_per_series() {
    let (_dir, _db, coll) = series();
    let out = coll
        .aggregate(&[
            doc! { "$sort": { "ts": 1 } },
            doc! { "$group": {
                "_id": "$meta",
                "top": { "$topN": { "n": 2, "output": "$v", "sortBy": { "v": -1 } } },
                "highest_at": { "$bottom": { "output": "$ts", "sortBy": { "v": 1 } } },
                "max3": { "$maxN": { "n": 3, "input": "$v" } },
                "min2": { "$minN": { "n": 2, "input": "$v" } },
                "first2": { "$firstN": { "n": 2, "input": "$v" } },
                "last2": { "$lastN": { "n": 2, "input": "$v" } },
                "median": { "$median": { "input": "$v", "method": "approximate" } },
                "range": { "$percentile": { "input": "$v", "p": [0, 1], "method": "approximate" } },
                "extra": { "$mergeObjects": "$extra" },
                "all": { "$push": "$v" },
                "set": { "$addToSet": "$meta" },
            } },
        ])
        .expect("aggregate");
    let at = |m: i64| Bson::DateTime(DateTime::from_millis(1_700_000_000_000 + m * MINUTE));
    assert_eq!(out.len(), 2);
    let a = &out[0];
    assert_eq!(a.get("_id"), Some(&bson!("a")));
    assert_eq!(a.get("top"), Some(&bson!([40, 25])));
    assert_eq!(a.get("highest_at"), Some(&at(3)));
    assert_eq!(a.get("max3"), Some(&bson!([40, 25, 10])));
    assert_eq!(a.get("min2"), Some(&bson!([10, 25])));
    // $firstN and $lastN keep missing values as null; $minN and $maxN skip them.
    assert_eq!(a.get("first2"), Some(&bson!([10, null])));
    assert_eq!(a.get("last2"), Some(&bson!([25, null])));
    assert_eq!(a.get("median"), Some(&bson!(25.0)));
    assert_eq!(a.get("range"), Some(&bson!([10.0, 40.0])));
    assert_eq!(a.get("extra"), Some(&bson!({ "x": 1, "y": 2 })));
    assert_eq!(a.get("all"), Some(&bson!([10, 40, 25])));
    assert_eq!(a.get("set"), Some(&bson!(["a"])));
    let b = &out[1];
    assert_eq!(b.get("top"), Some(&bson!([7, 6])));
    assert_eq!(b.get("highest_at"), Some(&at(1)));
    assert_eq!(b.get("max3"), Some(&bson!([7, 6, 5])));
    assert_eq!(b.get("min2"), Some(&bson!([5, 6])));
    assert_eq!(b.get("first2"), Some(&bson!([5, 7])));
    assert_eq!(b.get("last2"), Some(&bson!([null, 6])));
    assert_eq!(b.get("median"), Some(&bson!(6.0)));
    assert_eq!(b.get("range"), Some(&bson!([5.0, 7.0])));
    assert_eq!(b.get("extra"), Some(&bson!({})));
}

#[test]
fn set_window_fields_shifts_and_fills_series_with_gaps() {
    let (_dir, _db, coll) = series();
    let out = coll
        .aggregate(&[doc! { "$setWindowFields": {
            "partitionBy": "$meta",
            "sortBy": { "ts": 1 },
            "output": {
                "prev": { "$shift": { "output": "$v", "by": -1, "default": "none" } },
                "next": { "$shift": { "output": "$v", "by": 1 } },
                "filled": { "$linearFill": "$v" },
                "carried": { "$locf": "$v" },
                "top2": {
                    "$topN": { "n": 2, "output": "$v", "sortBy": { "v": -1 } },
                    "window": { "documents": ["unbounded", "current"] },
                },
                "n": { "$documentNumber": {} },
                "ema": { "$expMovingAvg": { "input": "$v", "alpha": 0.5 } },
                "recent_max": {
                    "$maxN": { "n": 1, "input": "$v" },
                    "window": { "range": [-2, 0], "unit": "minute" },
                },
            },
        } }])
        .expect("aggregate");
    let (a, b): (Vec<Document>, Vec<Document>) = out
        .into_iter()
        .partition(|d| d.get_str("meta").is_ok_and(|m| m == "a"));
    assert_eq!(
        column(&a, "prev"),
        [
            bson!("none"),
            bson!(10),
            bson!("none"),
            bson!("none"),
            bson!(40),
            bson!(25)
        ]
    );
    assert_eq!(
        column(&a, "next"),
        [
            Bson::Null,
            Bson::Null,
            bson!(40),
            bson!(25),
            Bson::Null,
            Bson::Null
        ]
    );
    // Between 10 at minute 0 and 40 at minute 3; nothing after the last 25.
    assert_eq!(
        column(&a, "filled"),
        [
            bson!(10),
            bson!(20.0),
            bson!(30.0),
            bson!(40),
            bson!(25),
            Bson::Null
        ]
    );
    assert_eq!(
        column(&a, "carried"),
        [
            bson!(10),
            bson!(10),
            bson!(10),
            bson!(40),
            bson!(25),
            bson!(25)
        ]
    );
    assert_eq!(
        column(&a, "top2"),
        [
            bson!([10]),
            bson!([10, null]),
            bson!([10, null]),
            bson!([40, 10]),
            bson!([40, 25]),
            bson!([40, 25]),
        ]
    );
    assert_eq!(
        column(&a, "n"),
        [bson!(1), bson!(2), bson!(3), bson!(4), bson!(5), bson!(6)]
    );
    assert_eq!(
        column(&a, "ema"),
        [
            bson!(10.0),
            bson!(10.0),
            bson!(10.0),
            bson!(25.0),
            bson!(25.0),
            bson!(25.0)
        ]
    );
    assert_eq!(
        column(&a, "recent_max"),
        [
            bson!([10]),
            bson!([10]),
            bson!([10]),
            bson!([40]),
            bson!([40]),
            bson!([40])
        ]
    );
    // A null is a value and shifts as one; a missing value takes the default.
    assert_eq!(
        column(&b, "prev"),
        [bson!("none"), bson!(5), bson!(7), Bson::Null]
    );
    assert_eq!(
        column(&b, "filled"),
        [bson!(5), bson!(7), bson!(6.5), bson!(6)]
    );
    assert_eq!(
        column(&b, "carried"),
        [bson!(5), bson!(7), bson!(7), bson!(6)]
    );
    assert_eq!(
        column(&b, "top2"),
        [bson!([5]), bson!([7, 5]), bson!([7, 5]), bson!([7, 6])]
    );
}

#[test]
fn ranks_and_covariance_over_a_window() {
    let (_dir, _db, coll) = series();
    let out = coll
        .aggregate(&[
            doc! { "$match": { "meta": "b" } },
            doc! { "$set": { "m": { "$toLong": "$ts" } } },
            doc! { "$setWindowFields": {
                "sortBy": { "v": -1 },
                "output": {
                    "rank": { "$rank": {} },
                    "dense": { "$denseRank": {} },
                },
            } },
            doc! { "$setWindowFields": {
                "sortBy": { "ts": 1 },
                "output": {
                    "cov": { "$covariancePop": ["$m", "$v"], "window": { "documents": [-1, 0] } },
                    "covs": { "$covarianceSamp": ["$m", "$v"] },
                },
            } },
        ])
        .expect("aggregate");
    // v: 5, 7, null, 6 by time; descending: 7, 6, 5, null.
    assert_eq!(
        column(&out, "rank"),
        [bson!(3), bson!(1), bson!(4), bson!(2)]
    );
    assert_eq!(
        column(&out, "dense"),
        [bson!(3), bson!(1), bson!(4), bson!(2)]
    );
    // Over (0 min, 5) and (1 min, 7): a population covariance of (60000 * 2) / 4.
    let cov = column(&out, "cov");
    assert_eq!(cov[0], bson!(0.0));
    assert_eq!(cov[1], bson!(30_000.0));
    // The null is skipped: the window of minute 2 holds one pair.
    assert_eq!(cov[2], bson!(0.0));
    // (0, 5), (1, 7), (3, 6) in minutes: sum of products of deviations / 2.
    let (mx, my) = (4.0 / 3.0, 6.0);
    let s = (0.0 - mx) * (5.0 - my) + (1.0 - mx) * (7.0 - my) + (3.0 - mx) * (6.0 - my);
    let Some(Bson::Double(covs)) = out[0].get("covs") else {
        panic!("{}", out[0]);
    };
    let want = s * 60_000.0 / 2.0;
    assert!(
        (covs - want).abs() < 1e-6 * want.abs().max(1.0),
        "{covs} {want}"
    );
}

#[test]
fn malformed_accumulators_and_windows_fail_with_mongodbs_codes() {
    let (_dir, _db, coll) = series();
    let window = |output: Document, sort: Document| {
        doc! { "$setWindowFields": { "partitionBy": "$meta", "sortBy": sort, "output": output } }
    };
    for (stage, code) in [
        (
            doc! { "$group": { "_id": null, "x": { "$topN": { "n": 0, "output": "$v", "sortBy": { "v": 1 } } } } },
            ErrorCode::Location(5_787_908),
        ),
        (
            doc! { "$group": { "_id": null, "x": { "$firstN": { "n": "2", "input": "$v" } } } },
            ErrorCode::Location(5_787_902),
        ),
        (
            doc! { "$group": { "_id": null, "x": { "$minN": { "n": 2 } } } },
            ErrorCode::Location(5_787_907),
        ),
        (
            doc! { "$group": { "_id": null, "x": { "$top": { "output": "$v" } } } },
            ErrorCode::Location(5_788_005),
        ),
        (
            doc! { "$group": { "_id": null, "x": { "$percentile": { "input": "$v", "p": [2], "method": "approximate" } } } },
            ErrorCode::Location(7_750_303),
        ),
        (
            doc! { "$group": { "_id": null, "x": { "$median": { "input": "$v", "method": "exact" } } } },
            ErrorCode::BadValue,
        ),
        (
            doc! { "$group": { "_id": null, "x": { "$covariancePop": ["$v", "$v"] } } },
            ErrorCode::Location(15952),
        ),
        (
            doc! { "$group": { "_id": null, "x": { "$mergeObjects": "$v" } } },
            ErrorCode::Location(40400),
        ),
        (
            window(doc! { "r": { "$rank": {} } }, doc! { "ts": 1, "v": 1 }),
            ErrorCode::Location(5_371_602),
        ),
        (
            window(
                doc! { "f": { "$linearFill": "$v" } },
                doc! { "ts": 1, "v": 1 },
            ),
            ErrorCode::Location(605_001),
        ),
        (
            window(
                doc! { "s": { "$shift": { "output": "$v", "by": 1 }, "window": { "documents": [0, 1] } } },
                doc! { "ts": 1 },
            ),
            ErrorCode::FailedToParse,
        ),
        (
            window(
                doc! { "s": { "$sum": "$v", "window": { "range": [-1, 0], "unit": "minute" } } },
                doc! { "v": 1 },
            ),
            ErrorCode::Location(5_429_513),
        ),
        (
            window(
                doc! { "s": { "$sum": "$v", "window": { "range": [-1, 0] } } },
                doc! { "ts": 1 },
            ),
            ErrorCode::Location(5_429_413),
        ),
        (
            window(
                doc! { "d": { "$derivative": { "input": "$v", "unit": "month" }, "window": { "documents": [-1, 0] } } },
                doc! { "ts": 1 },
            ),
            ErrorCode::Location(5_490_710),
        ),
        (
            window(
                doc! { "d": { "$derivative": { "input": "$v" }, "window": { "documents": [-1, 0] } } },
                doc! { "ts": 1 },
            ),
            ErrorCode::Location(5_624_901),
        ),
        (
            window(doc! { "f": { "$linearFill": "$meta" } }, doc! { "ts": 1 }),
            ErrorCode::TypeMismatch,
        ),
        (
            window(doc! { "f": { "$nosuch": "$v" } }, doc! { "ts": 1 }),
            ErrorCode::FailedToParse,
        ),
        (
            window(
                doc! { "d": { "$derivative": { "input": "$v" } } },
                doc! { "ts": 1 },
            ),
            ErrorCode::FailedToParse,
        ),
        (
            doc! { "$setWindowFields": { "output": { "i": { "$integral": { "input": "$v" } } } } },
            ErrorCode::FailedToParse,
        ),
        (
            window(
                doc! { "s": { "$sum": "$v", "window": { "documents": [1, -1] } } },
                doc! { "ts": 1 },
            ),
            ErrorCode::Location(5_339_900),
        ),
        (
            doc! { "$setWindowFields": { "output": { "s": {
                "$sum": "$v", "window": { "documents": [-1, 0] },
            } } } },
            ErrorCode::Location(5_339_901),
        ),
        (
            window(
                doc! { "s": { "$sum": "$v", "window": { "range": [-1, 0] } } },
                doc! { "ts": 1, "v": 1 },
            ),
            ErrorCode::Location(5_339_902),
        ),
        (
            window(
                doc! { "s": { "$sum": "$v", "window": { "range": [-1, 0] } } },
                doc! { "v": -1 },
            ),
            ErrorCode::Location(8_947_401),
        ),
        (
            window(
                doc! { "s": { "$sum": "$v", "window": { "range": [-1.5, 0], "unit": "hour" } } },
                doc! { "ts": 1 },
            ),
            ErrorCode::FailedToParse,
        ),
        (
            window(
                doc! { "s": { "$sum": "$v", "window": { "documents": [-1.5, 0] } } },
                doc! { "ts": 1 },
            ),
            ErrorCode::FailedToParse,
        ),
    ] {
        let e = coll.aggregate(std::slice::from_ref(&stage)).unwrap_err();
        assert_eq!(e.code(), code, "{stage}: {e}");
    }
}

#[test]
fn shifts_across_the_chunks_of_a_long_partition_read_the_right_neighbours() {
    let (_dir, _db, coll) = temp_collection(
        tscoll_engine::CatalogOptions::default(),
        &TimeseriesOptions::new("ts").meta_field("meta"),
    );
    // Longer than the chunk a bounded window is computed in (4096 documents).
    let n = 10_000_i64;
    let docs: Vec<Document> = (0..n)
        .map(|i| doc! { "ts": DateTime::from_millis(i * 1000), "meta": "s", "i": i })
        .collect();
    insert_all(&coll, &docs);
    let out = coll
        .aggregate(&[doc! { "$setWindowFields": {
            "partitionBy": "$meta",
            "sortBy": { "ts": 1 },
            "output": {
                "back": { "$shift": { "output": "$i", "by": -3, "default": -1 } },
                "ahead": { "$shift": { "output": "$i", "by": 2, "default": -1 } },
                "pair": { "$sum": "$i", "window": { "documents": [0, 1] } },
            },
        } }])
        .expect("aggregate");
    assert_eq!(out.len(), docs.len());
    for (k, d) in out.iter().enumerate() {
        let i = i64::try_from(k).expect("index");
        assert_eq!(d.get_i64("i").ok(), Some(i), "{d}");
        let back = if i >= 3 { i - 3 } else { -1 };
        let ahead = if i + 2 < n { i + 2 } else { -1 };
        let num = |v: &Bson| match v {
            Bson::Int32(x) => i64::from(*x),
            Bson::Int64(x) => *x,
            other => panic!("{other}"),
        };
        assert_eq!(d.get("back").map(num), Some(back), "{d}");
        assert_eq!(d.get("ahead").map(num), Some(ahead), "{d}");
        let pair = if i + 1 < n { 2 * i + 1 } else { i };
        assert_eq!(d.get("pair").map(num), Some(pair), "{d}");
    }
}

#[test]
fn range_windows_in_months_follow_the_calendar() {
    let (_dir, _db, coll) = temp_collection(
        tscoll_engine::CatalogOptions::default(),
        &TimeseriesOptions::new("ts").meta_field("meta"),
    );
    let day = |m: u8, d: u8| {
        DateTime::builder()
            .year(2023)
            .month(m)
            .day(d)
            .build()
            .expect("date")
    };
    insert_all(
        &coll,
        &[
            doc! { "ts": day(1, 31), "meta": "s", "v": 1 },
            doc! { "ts": day(2, 28), "meta": "s", "v": 2 },
            doc! { "ts": day(3, 31), "meta": "s", "v": 4 },
            doc! { "ts": day(4, 30), "meta": "s", "v": 8 },
        ],
    );
    let out = coll
        .aggregate(&[doc! { "$setWindowFields": {
            "sortBy": { "ts": 1 },
            "output": {
                "month": { "$sum": "$v", "window": { "range": [-1, 0], "unit": "month" } },
                "quarter": { "$sum": "$v", "window": { "range": [0, 1], "unit": "quarter" } },
            },
        } }])
        .expect("aggregate");
    // A month before March 31 is February 28 (the day clamped to the month's end): February
    // 28 is in March 31's window; a month before February 28 is January 28, before January 31.
    assert_eq!(
        column(&out, "month"),
        [bson!(1), bson!(3), bson!(6), bson!(12)]
    );
    // A quarter after January 31 is April 30.
    assert_eq!(
        column(&out, "quarter"),
        [bson!(15), bson!(14), bson!(12), bson!(8)]
    );
    let e = coll
        .aggregate(&[doc! { "$setWindowFields": {
            "sortBy": { "ts": 1 },
            "output": { "m": { "$sum": "$v", "window": { "range": [-0.5, 0], "unit": "month" } } },
        } }])
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::FailedToParse, "{e}");
}

#[test]
fn linear_fill_of_the_manuals_hourly_stock_prices() {
    let (_dir, _db, coll) = temp_collection(
        tscoll_engine::CatalogOptions::default(),
        &TimeseriesOptions::new("time"),
    );
    let hour = |h: u8| {
        DateTime::builder()
            .year(2021)
            .month(3)
            .day(8)
            .hour(h)
            .build()
            .expect("date")
    };
    insert_all(
        &coll,
        &[
            doc! { "time": hour(9), "price": 500 },
            doc! { "time": hour(10) },
            doc! { "time": hour(11), "price": 515 },
            doc! { "time": hour(12) },
            doc! { "time": hour(13) },
            doc! { "time": hour(14), "price": 485 },
        ],
    );
    let out = coll
        .aggregate(&[doc! { "$setWindowFields": {
            "sortBy": { "time": 1 },
            "output": { "price": { "$linearFill": "$price" } },
        } }])
        .expect("aggregate");
    assert_eq!(
        column(&out, "price"),
        [
            bson!(500),
            bson!(507.5),
            bson!(515),
            bson!(505.0),
            bson!(495.0),
            bson!(485)
        ]
    );
}
