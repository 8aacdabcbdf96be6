//! Date expressions in time zones through pipelines: `$group` by local days across
//! daylight-saving changes, the windowed `$group` engine against the general one for zones and
//! offsets, and `$dateToString` / `$dateFromString` / `$dateToParts` in `$project`.

use bson::{Bson, DateTime, Document, doc};
use tscoll_engine::{CatalogOptions, Collection, Database, ErrorCode, TimeseriesOptions};
use tscoll_tests::spec::{insert_all, temp_collection};

const HOUR: i64 = 3_600_000;

fn date(s: &str) -> DateTime {
    DateTime::parse_rfc3339_str(s).expect("date")
}

/// One measurement an hour (on the hour, UTC) from `from` for `hours` hours, two hosts.
fn hourly(from: &str, hours: i64) -> (tempfile::TempDir, Database, Collection) {
    let (dir, db, coll) = temp_collection(
        CatalogOptions::default(),
        &TimeseriesOptions::new("t").meta_field("host"),
    );
    let start = date(from).timestamp_millis();
    let docs: Vec<Document> = (0..hours)
        .flat_map(|i| {
            ["a", "b"].into_iter().map(move |h| {
                doc! {
                    "t": DateTime::from_millis(start + i * HOUR),
                    "host": h,
                    "v": i as f64,
                }
            })
        })
        .collect();
    insert_all(&coll, &docs);
    (dir, db, coll)
}

fn counts(out: &[Document]) -> Vec<(DateTime, i64)> {
    out.iter()
        .map(|d| {
            let n = match d.get("n") {
                Some(Bson::Int32(n)) => i64::from(*n),
                Some(Bson::Int64(n)) => *n,
                other => panic!("count {other:?}"),
            };
            (*d.get_datetime("_id").expect("_id"), n)
        })
        .collect()
}

#[test]
fn local_days_across_daylight_saving_changes() {
    // 2024-03-09T05:00Z is midnight EST in New York; three local days follow, the middle one
    // (2024-03-10, when clocks spring forward) 23 hours long.
    let (_dir, _db, coll) = hourly("2024-03-09T05:00:00Z", 24 + 23 + 24);
    let out = coll
        .aggregate(&[
            doc! { "$group": {
                "_id": { "$dateTrunc": { "date": "$t", "unit": "day", "timezone": "America/New_York" } },
                "n": { "$count": {} },
            } },
            doc! { "$sort": { "_id": 1 } },
        ])
        .expect("aggregate");
    assert_eq!(
        counts(&out),
        [
            (date("2024-03-09T05:00:00Z"), 48),
            (date("2024-03-10T05:00:00Z"), 46),
            (date("2024-03-11T04:00:00Z"), 48),
        ]
    );
    // 2024-11-03, when they fall back, is 25 hours long.
    let (_dir, _db, coll) = hourly("2024-11-03T04:00:00Z", 25);
    let out = coll
        .aggregate(&[
            doc! { "$group": {
                "_id": { "$dateTrunc": { "date": "$t", "unit": "day", "timezone": "America/New_York" } },
                "n": { "$count": {} },
            } },
        ])
        .expect("aggregate");
    assert_eq!(counts(&out), [(date("2024-11-03T04:00:00Z"), 50)]);
}

#[test]
fn the_window_engine_and_the_general_group_agree_in_zones() {
    let (_dir, _db, coll) = hourly("2024-03-30T00:00:00Z", 72);
    let group = |unit: &str, tz: &str, general: bool| {
        let mut g = doc! {
            "_id": { "h": "$host", "w": { "$dateTrunc": { "date": "$t", "unit": unit, "binSize": 2, "timezone": tz } } },
            "n": { "$count": {} },
            "lo": { "$min": "$v" },
            "hi": { "$max": "$v" },
        };
        // A $first makes it the general $group.
        if general {
            g.insert("f", doc! { "$first": "$v" });
        }
        let mut out = coll
            .aggregate(&[doc! { "$group": g }, doc! { "$sort": { "_id": 1 } }])
            .expect("aggregate");
        for d in &mut out {
            d.remove("f");
        }
        out
    };
    // An offset of whole hours keeps 2-hour bins on the epoch's: the windowed engine answers.
    assert_eq!(
        group("hour", "+02:00", false),
        group("hour", "+02:00", true)
    );
    assert_eq!(group("hour", "+02:00", false), group("hour", "UTC", false));
    // A zone (Paris changes offset on 2024-03-31) goes to the general $group: bins of two
    // hours from 2000-01-01T00:00 Paris time (23:00Z), so on odd UTC hours.
    let paris = group("hour", "Europe/Paris", false);
    assert_eq!(paris, group("hour", "Europe/Paris", true));
    assert_eq!(paris, group("hour", "+01:00", false));
    let first = paris[0].get_document("_id").expect("_id");
    assert_eq!(
        first.get("w"),
        Some(&Bson::DateTime(date("2024-03-29T23:00:00Z")))
    );
    // +05:45: bins start at a quarter past.
    let kathmandu = group("hour", "Asia/Kathmandu", false);
    let w = |d: &Document| d.get_document("_id").expect("_id").get("w").cloned();
    assert_eq!(
        w(&kathmandu[0]),
        Some(Bson::DateTime(date("2024-03-29T22:15:00Z")))
    );
    let n: i64 = kathmandu
        .iter()
        .map(|d| i64::from(d.get_i32("n").expect("n")))
        .sum();
    assert_eq!(n, 144);
}

#[test]
fn strings_and_parts_in_a_zone() {
    let (_dir, _db, coll) = hourly("2024-07-01T12:00:00Z", 1);
    let out = coll
        .aggregate(&[
            doc! { "$match": { "host": "a" } },
            doc! { "$project": {
                "_id": 0,
                "paris": { "$dateToString": { "date": "$t", "format": "%Y-%m-%d %H:%M %z", "timezone": "Europe/Paris" } },
                "kathmandu": { "$dateToString": { "date": "$t", "timezone": "Asia/Kathmandu" } },
                "back": { "$dateFromString": { "dateString": "2024-07-01 14:00", "timezone": "Europe/Paris" } },
                "hour": { "$hour": { "date": "$t", "timezone": "America/New_York" } },
                "parts": { "$dateToParts": { "date": "$t", "timezone": "-08:00", "iso8601": true } },
                "none": { "$dateToString": { "date": "$t", "timezone": "$nowhere" } },
            } },
        ])
        .expect("aggregate");
    assert_eq!(
        out,
        [doc! {
            "paris": "2024-07-01 14:00 +0200",
            "kathmandu": "2024-07-01T17:45:00.000",
            "back": date("2024-07-01T12:00:00Z"),
            "hour": 8,
            "parts": {
                "isoWeekYear": 2024, "isoWeek": 27, "isoDayOfWeek": 1, "hour": 4, "minute": 0,
                "second": 0, "millisecond": 0,
            },
            "none": Bson::Null,
        }]
    );
    let err = coll
        .aggregate(&[doc! { "$project": {
            "x": { "$dateTrunc": { "date": "$t", "unit": "day", "timezone": "Europe/Atlantis" } },
        } }])
        .expect_err("unknown zone");
    assert_eq!(err.code(), ErrorCode::Location(40485));
}
