//! SQL over a collection gives the answers of the engine's own queries: the three TSBS
//! queries (one host's fields over a time range, the maximum and the averages per host and
//! hour), `GROUP BY` a meta field, a window function, `count(*)`, and every bundled real
//! data set read back whole; `INSERT INTO` a table with `VALUES` and `SELECT`.

use std::collections::BTreeMap;

use bson::{Bson, Document, doc};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::prelude::SessionContext;
use tscoll_benches::tsbs::{self, Workload};
use tscoll_engine::{
    Collection, Database, DatabaseOptions, FindOptions, InsertOptions, SortOrder, TimeseriesOptions,
};
use tscoll_tests::arrow::{documents, normal_document};
use tscoll_tests::{data_dir, load_ndjson};

const HOSTS: usize = 6;

fn sql(db: &Database, query: &str) -> Vec<Document> {
    let ctx = SessionContext::new();
    tscoll_datafusion::register_database(&ctx, db).expect("register");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let batches: Vec<RecordBatch> = rt
        .block_on(async { ctx.sql(query).await?.collect().await })
        .unwrap_or_else(|e| panic!("{query}: {e}"));
    documents(&batches)
}

/// A database with the TSBS cpu-only workload of `HOSTS` hosts over half a day, the first
/// part stored, the rest in memory.
fn tsbs_db() -> (tempfile::TempDir, Database, Collection) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Database::open(dir.path(), DatabaseOptions::default()).expect("open");
    let coll = db
        .create_collection(
            "cpu",
            &TimeseriesOptions::new(tsbs::TIME_FIELD).meta_field(tsbs::META_FIELD),
        )
        .expect("create");
    let w = Workload::new(HOSTS, 0.5, 1);
    let steps = w.steps();
    for host in 0..HOSTS {
        let rows = w.host_rows(host, 0..steps * 2 / 3);
        coll.insert_many(&rows, &InsertOptions::default())
            .expect("insert");
    }
    coll.flush().expect("flush");
    for host in 0..HOSTS {
        let rows = w.host_rows(host, steps * 2 / 3..steps);
        coll.insert_many(&rows, &InsertOptions::default())
            .expect("insert");
    }
    (dir, db, coll)
}

fn number(v: Option<&Bson>) -> f64 {
    #[expect(clippy::cast_precision_loss, reason = "small test values")]
    match v {
        Some(Bson::Int32(i)) => f64::from(*i),
        Some(Bson::Int64(i)) => *i as f64,
        Some(Bson::Double(d)) => *d,
        other => panic!("not a number: {other:?}"),
    }
}

fn ms(v: Option<&Bson>) -> i64 {
    match v {
        Some(Bson::DateTime(d)) => d.timestamp_millis(),
        other => panic!("not a date: {other:?}"),
    }
}

/// `(host, hour)` → the outputs, of a pipeline grouping by host and hour.
fn by_host_hour(rows: &[Document], outputs: &[&str]) -> BTreeMap<(String, i64), Vec<f64>> {
    rows.iter()
        .map(|r| {
            let (host, hour) = match r.get_document("_id") {
                Ok(id) => (
                    id.get_str("host").expect("host").to_owned(),
                    ms(id.get("hour")),
                ),
                Err(_) => (
                    r.get_str("host").expect("host").to_owned(),
                    ms(r.get("hour")),
                ),
            };
            let values = outputs.iter().map(|o| number(r.get(o))).collect();
            ((host, hour), values)
        })
        .collect()
}

#[test]
fn q1_one_hosts_fields_over_six_hours() {
    let (_dir, db, coll) = tsbs_db();
    let fields = tsbs::FIELDS.join(", ");
    let got = sql(
        &db,
        &format!(
            "SELECT time, {fields} FROM cpu WHERE tags.hostname = 'host_3' \
             AND time >= '2016-01-01T04:00:00Z' AND time < '2016-01-01T10:00:00Z' ORDER BY time"
        ),
    );
    let filter = doc! {
        "tags.hostname": "host_3",
        "time": { "$gte": bson::DateTime::from_millis(tsbs::START_MS + 4 * 3_600_000),
                  "$lt": bson::DateTime::from_millis(tsbs::START_MS + 10 * 3_600_000) },
    };
    let opts = FindOptions {
        sort: Some(SortOrder::Ascending),
        ..FindOptions::default()
    };
    let want = coll.find(&filter, &opts).expect("find");
    assert_eq!(got.len(), 6 * 360);
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(ms(g.get("time")), ms(w.get("time")));
        for f in tsbs::FIELDS {
            assert_eq!(number(g.get(f)), number(w.get(f)), "{f}");
        }
    }
}

#[test]
fn filters_reach_the_collection_and_count_comes_from_control() {
    let (_dir, db, _coll) = tsbs_db();
    let ctx = SessionContext::new();
    tscoll_datafusion::register_database(&ctx, &db).expect("register");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let plan = |q: &str| -> String {
        let batches = rt
            .block_on(async { ctx.sql(&format!("EXPLAIN {q}")).await?.collect().await })
            .expect("explain");
        datafusion::arrow::util::pretty::pretty_format_batches(&batches)
            .expect("format")
            .to_string()
    };
    let p = plan(
        "SELECT usage_user FROM cpu WHERE tags.hostname = 'host_3' \
         AND time >= '2016-01-01T04:00:00Z' AND usage_idle > 50",
    );
    assert!(p.contains("CollectionScan"), "{p}");
    for part in ["tags.hostname", "$gte", "usage_idle"] {
        assert!(p.contains(part), "{part} not pushed down:\n{p}");
    }
    // Exact filters (strings, integers, times) leave no filter to DataFusion, so a limit
    // reaches the collection; a filter on doubles is applied again.
    let p = plan(
        "SELECT usage_user FROM cpu WHERE tags.hostname = 'host_3' AND usage_idle > 5 LIMIT 5",
    );
    let physical = p.split("physical_plan").nth(1).unwrap_or_default();
    assert!(!physical.contains("FilterExec"), "{p}");
    assert!(physical.contains("limit=Some(5)"), "{p}");
    let rows = sql(
        &db,
        "SELECT tags.hostname AS h, usage_idle FROM cpu WHERE tags.hostname = 'host_3' \
         AND usage_idle > 5 LIMIT 5",
    );
    assert_eq!(rows.len(), 5);
    assert!(
        rows.iter()
            .all(|r| r.get_str("h").ok() == Some("host_3") && number(r.get("usage_idle")) > 5.0),
        "{rows:?}"
    );
    // Not pushed down: an OR, which DataFusion filters.
    let p = plan("SELECT usage_user FROM cpu WHERE usage_idle > 50 OR usage_user < 3");
    assert!(p.contains("CollectionScan: filter={}"), "{p}");
    // count(*) is answered from the statistics: no scan in the physical plan.
    let p = plan("SELECT count(*) FROM cpu");
    let physical = p.split("physical_plan").nth(1).unwrap_or_default();
    assert!(!physical.contains("CollectionScan"), "{p}");
}

#[test]
fn q2_q3_per_host_and_hour_equal_the_pipeline() {
    let (_dir, db, coll) = tsbs_db();
    let group_id = doc! { "host": "$tags.hostname", "hour": { "$dateTrunc": { "date": "$time", "unit": "hour" } } };
    // q2: the maximum of one field.
    let got = sql(
        &db,
        "SELECT tags.hostname AS host, date_bin(INTERVAL '1 hour', time) AS hour, \
         max(usage_user) AS m FROM cpu GROUP BY 1, 2",
    );
    let want = coll
        .aggregate(&[
            doc! { "$group": { "_id": group_id.clone(), "m": { "$max": "$usage_user" } } },
        ])
        .expect("pipeline");
    assert_eq!(by_host_hour(&got, &["m"]), by_host_hour(&want, &["m"]));
    assert_eq!(got.len(), HOSTS * 12);
    // q3: the averages of the 10 fields.
    let avgs: Vec<String> = tsbs::FIELDS
        .iter()
        .map(|f| format!("avg({f}) AS {f}"))
        .collect();
    let got = sql(
        &db,
        &format!(
            "SELECT tags.hostname AS host, date_bin(INTERVAL '1 hour', time) AS hour, {} \
             FROM cpu GROUP BY 1, 2",
            avgs.join(", ")
        ),
    );
    let mut group = doc! { "_id": group_id };
    for f in tsbs::FIELDS {
        group.insert(f, doc! { "$avg": format!("${f}") });
    }
    let want = coll
        .aggregate(&[doc! { "$group": group }])
        .expect("pipeline");
    let (got, want) = (
        by_host_hour(&got, &tsbs::FIELDS),
        by_host_hour(&want, &tsbs::FIELDS),
    );
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    for (k, g) in &got {
        for (a, b) in g.iter().zip(&want[k]) {
            assert!(
                (a - b).abs() <= 1e-9 * b.abs().max(1.0),
                "{k:?}: {a} vs {b}"
            );
        }
    }
}

#[test]
fn group_by_a_meta_field_a_window_function_and_count() {
    let (_dir, db, coll) = tsbs_db();
    let got = sql(
        &db,
        "SELECT tags.region AS region, count(*) AS n, sum(usage_system) AS s \
         FROM cpu GROUP BY tags.region",
    );
    let want = coll
        .aggregate(&[doc! { "$group": {
            "_id": "$tags.region",
            "n": { "$sum": 1 },
            "s": { "$sum": "$usage_system" },
        } }])
        .expect("pipeline");
    let key = |rows: &[Document], id: &str| -> BTreeMap<String, (f64, f64)> {
        rows.iter()
            .map(|r| {
                (
                    r.get_str(id).expect("region").to_owned(),
                    (number(r.get("n")), number(r.get("s"))),
                )
            })
            .collect()
    };
    assert_eq!(key(&got, "region"), key(&want, "_id"));

    // The change of usage_user from each host's previous measurement.
    let got = sql(
        &db,
        "SELECT tags.hostname AS host, time, \
         usage_user - lag(usage_user) OVER (PARTITION BY tags.hostname ORDER BY time) AS d \
         FROM cpu",
    );
    let all = coll
        .find(
            &doc! {},
            &FindOptions {
                sort: Some(SortOrder::Ascending),
                ..FindOptions::default()
            },
        )
        .expect("find");
    let mut last: BTreeMap<String, f64> = BTreeMap::new();
    let mut want: BTreeMap<(String, i64), Option<f64>> = BTreeMap::new();
    for d in &all {
        let host = d
            .get_document("tags")
            .expect("tags")
            .get_str("hostname")
            .expect("host")
            .to_owned();
        let v = number(d.get("usage_user"));
        let prev = last.insert(host.clone(), v);
        want.insert((host, ms(d.get("time"))), prev.map(|p| v - p));
    }
    let got: BTreeMap<(String, i64), Option<f64>> = got
        .iter()
        .map(|r| {
            (
                (
                    r.get_str("host").expect("host").to_owned(),
                    ms(r.get("time")),
                ),
                r.get("d").map(|v| number(Some(v))),
            )
        })
        .collect();
    assert_eq!(got, want);

    let n = sql(&db, "SELECT count(*) AS n FROM cpu");
    assert_eq!(
        number(n[0].get("n")),
        number(Some(&Bson::Int64(i64::try_from(all.len()).unwrap_or(0))))
    );
}

#[test]
fn every_bundled_data_set_reads_back_whole_through_sql() {
    const SAMPLE: usize = 20_000;
    for file in [
        "beijing_air_3stations.ndjson.xz",
        "nab_shared.ndjson.xz",
        "noaa_weather_daily.ndjson.xz",
        "stocks_us_2016_may_dec_100k.ndjson.xz",
        "usgs_earthquakes_week.ndjson.xz",
    ] {
        // Every k-th measurement, at most SAMPLE of each file: every data set's fields and
        // types, from the whole span of the file, in a test time DataFusion's unoptimized
        // test build allows.
        let all = load_ndjson(&data_dir().join(file));
        let input: Vec<Document> = all
            .iter()
            .step_by(all.len().div_ceil(SAMPLE).max(1))
            .cloned()
            .collect();
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Database::open(dir.path(), DatabaseOptions::default()).expect("open");
        let coll = db
            .create_collection("c", &TimeseriesOptions::new("ts").meta_field("meta"))
            .expect("create");
        for chunk in input.chunks(5000) {
            coll.insert_many(chunk, &InsertOptions::default())
                .expect("insert");
        }
        let key = |d: &Document| format!("{:?}", d.get("_id"));
        let mut want: Vec<Document> = coll
            .find(&doc! {}, &FindOptions::default())
            .expect("find")
            .iter()
            .map(normal_document)
            .collect();
        want.sort_by_key(key);
        let mut got: Vec<Document> = sql(&db, "SELECT * FROM c")
            .iter()
            .map(normal_document)
            .collect();
        got.sort_by_key(key);
        assert_eq!(got.len(), input.len(), "{file}");
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g, w, "{file}");
        }
        let n = sql(&db, "SELECT count(*) AS n FROM c");
        assert_eq!(
            n[0].get("n"),
            Some(&Bson::Int64(i64::try_from(input.len()).unwrap_or(0))),
            "{file}"
        );
    }
}

/// The shard of a meta value: FNV-1a of its hostname, modulo the shards.
fn shard_of(row: &Document, shards: usize) -> usize {
    let host = row
        .get_document(tsbs::META_FIELD)
        .and_then(|t| t.get_str("hostname"))
        .expect("hostname");
    let h = host.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    usize::try_from(h % shards as u64).expect("small")
}

/// Rows equal column by column, doubles to a relative 1e-9 (the partitions of a sharded
/// scan, or the collection's partial sums, add in another order), NaN equal to NaN.
fn assert_rows_close(got: &[Document], want: &[Document], query: &str) {
    assert_eq!(got.len(), want.len(), "{query}");
    for (g, w) in got.iter().zip(want) {
        assert_eq!(
            g.keys().collect::<Vec<_>>(),
            w.keys().collect::<Vec<_>>(),
            "{query}"
        );
        for (k, wv) in w {
            match (g.get(k), wv) {
                (Some(Bson::Double(a)), Bson::Double(b)) => {
                    let close = (a - b).abs() <= 1e-9 * b.abs().max(1.0);
                    assert!(
                        close || (a.is_nan() && b.is_nan()),
                        "{query}: {k} {a} vs {b}"
                    );
                }
                (gv, wv) => assert_eq!(gv, Some(wv), "{query}: {k}"),
            }
        }
    }
}

#[test]
fn one_query_over_two_shards_equals_the_single_database() {
    let whole_dir = tempfile::tempdir().expect("tempdir");
    let whole = Database::open(whole_dir.path(), DatabaseOptions::default()).expect("open");
    let shard_dirs = [
        tempfile::tempdir().expect("tempdir"),
        tempfile::tempdir().expect("tempdir"),
    ];
    let shards: Vec<Database> = shard_dirs
        .iter()
        .map(|d| Database::open(d.path(), DatabaseOptions::default()).expect("open"))
        .collect();
    let options = TimeseriesOptions::new(tsbs::TIME_FIELD).meta_field(tsbs::META_FIELD);
    let colls: Vec<Collection> = std::iter::once(&whole)
        .chain(&shards)
        .map(|db| db.create_collection("cpu", &options).expect("create"))
        .collect();
    let w = Workload::new(HOSTS, 0.5, 1);
    let mut per_shard = [0usize; 2];
    for host in 0..HOSTS {
        let rows = w.host_rows(host, 0..w.steps());
        let s = shard_of(&rows[0], 2);
        per_shard[s] += 1;
        colls[0]
            .insert_many(&rows, &InsertOptions::default())
            .expect("insert");
        colls[1 + s]
            .insert_many(&rows, &InsertOptions::default())
            .expect("insert");
    }
    assert!(per_shard.iter().all(|&n| n > 0), "{per_shard:?}");
    // A field that is int32 in one shard and double in the other: the table's column is
    // Float64 in both cases, and a field only one shard has is null in the other's rows.
    for (s, extra) in [(0usize, Bson::Int32(7)), (1, Bson::Double(2.5))] {
        let host = (0..)
            .map(|i| format!("extra_{i}"))
            .find(|h| shard_of(&doc! { tsbs::META_FIELD: { "hostname": h.as_str() } }, 2) == s);
        let host = host.expect("a hostname of that shard");
        let rows: Vec<Document> = (0..5_i64)
            .map(|i| {
                doc! {
                    tsbs::TIME_FIELD: bson::DateTime::from_millis(tsbs::START_MS + i * 60_000),
                    tsbs::META_FIELD: { "hostname": host.as_str() },
                    "extra": extra.clone(),
                    format!("only_{s}"): i,
                }
            })
            .collect();
        for c in [&colls[0], &colls[1 + s]] {
            c.insert_many(&rows, &InsertOptions::default())
                .expect("insert");
        }
    }
    colls[1].flush().expect("flush");

    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let run = |ctx: &SessionContext, q: &str| -> Vec<Document> {
        let batches: Vec<RecordBatch> = rt
            .block_on(async { ctx.sql(q).await?.collect().await })
            .unwrap_or_else(|e| panic!("{q}: {e}"));
        documents(&batches)
    };
    let single = SessionContext::new();
    tscoll_datafusion::register_database(&single, &whole).expect("register");
    let sharded = SessionContext::new();
    tscoll_datafusion::add_rules(&sharded);
    let table = tscoll_datafusion::CollectionTable::sharded(
        shards
            .iter()
            .map(|db| db.collection("cpu").expect("cpu"))
            .collect(),
    )
    .expect("sharded table");
    sharded
        .register_table("cpu", std::sync::Arc::new(table))
        .expect("register");
    let queries = [
        "SELECT count(*) AS n, sum(extra) AS e, sum(only_0) AS o0, sum(only_1) AS o1 FROM cpu",
        "SELECT tags.hostname AS host, date_bin(INTERVAL '1 hour', time) AS hour, \
         avg(usage_user) AS a, max(usage_system) AS m, count(*) AS n \
         FROM cpu GROUP BY 1, 2 ORDER BY 1, 2",
        "SELECT time, usage_idle FROM cpu WHERE tags.hostname = 'host_3' \
         AND time >= '2016-01-01T04:00:00Z' ORDER BY time LIMIT 50",
        "SELECT tags.hostname AS host, time, extra, only_0, only_1 FROM cpu \
         WHERE extra IS NOT NULL ORDER BY 1, 2",
        "SELECT time, tags.hostname AS host, usage_user FROM cpu ORDER BY usage_user DESC, \
         time, host LIMIT 7",
    ];
    for q in queries {
        let want = run(&single, q);
        assert!(!want.is_empty(), "{q}");
        assert_rows_close(&run(&sharded, q), &want, q);
    }
    // The joined schema: `extra` holds int32 and double, so it is Float64.
    let schema = rt
        .block_on(sharded.table_provider("cpu"))
        .expect("table")
        .schema();
    assert_eq!(
        schema.field_with_name("extra").expect("extra").data_type(),
        &datafusion::arrow::datatypes::DataType::Float64
    );
}

/// Measurements of three series over two days at irregular steps: an int32 field missing
/// from some, an int64, a double with a NaN and a -0.0, a field holding int32s and doubles;
/// the first half stored, the rest in memory.
fn mixed_db() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Database::open(dir.path(), DatabaseOptions::default()).expect("open");
    let coll = db
        .create_collection("m", &TimeseriesOptions::new("t").meta_field("tags"))
        .expect("create");
    let mut rows = Vec::new();
    for s in 0..3_i64 {
        let mut t = tsbs::START_MS + s * 1_111;
        for i in 0..2_000_i64 {
            t += 37_000 + (i * 7_919 + s * 13) % 50_000;
            let mut d = doc! {
                "t": bson::DateTime::from_millis(t),
                "tags": { "host": format!("h{s}"), "dc": if s == 2 { "b" } else { "a" } },
                "l": (i * 1_000_003) % 77_777 - 30_000,
                "d": (i as f64) * 0.37 - 200.0,
                "x": if i % 3 == 0 { Bson::Double(i as f64 / 4.0) } else { Bson::Int32(i as i32) },
            };
            if i % 5 != 0 {
                d.insert("i", (i % 101) as i32 - 50);
            }
            if s == 1 && i == 700 {
                d.insert("d", f64::NAN);
            }
            if s == 0 && i == 10 {
                d.insert("d", -0.0_f64);
            }
            rows.push(d);
        }
    }
    let half = rows.len() / 2;
    coll.insert_many(&rows[..half], &InsertOptions::default())
        .expect("insert");
    coll.flush().expect("flush");
    coll.insert_many(&rows[half..], &InsertOptions::default())
        .expect("insert");
    (dir, db)
}

#[test]
fn aggregates_answered_by_the_collection_equal_datafusions_own() {
    let (_dir, db) = mixed_db();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let ctx = SessionContext::new();
    tscoll_datafusion::register_database(&ctx, &db).expect("register");
    let run = |ctx: &SessionContext, q: &str| -> (Vec<Document>, String) {
        rt.block_on(async {
            let df = ctx.sql(q).await?;
            let plan = df.clone().create_physical_plan().await?;
            let text = datafusion::physical_plan::displayable(plan.as_ref())
                .indent(false)
                .to_string();
            Ok::<_, datafusion::error::DataFusionError>((documents(&df.collect().await?), text))
        })
        .unwrap_or_else(|e| panic!("{q}: {e}"))
    };
    // Answered by the collection (a `WindowAggregateExec` in the plan).
    let answered = [
        "SELECT tags.host AS h, date_bin(INTERVAL '1 hour', t) AS w, count(*) AS n, \
         sum(i) AS si, avg(i) AS ai, min(i) AS lo, max(l) AS hi, sum(l) AS sl, avg(d) AS ad, \
         sum(d) AS sd, count(i) AS ci, avg(x) AS ax, sum(x) AS sx FROM m GROUP BY 1, 2 ORDER BY 1, 2",
        "SELECT tags.dc AS dc, date_bin(INTERVAL '7 minutes', t) AS w, avg(l) AS a, count(*) AS n \
         FROM m GROUP BY 1, 2 ORDER BY 1, 2",
        "SELECT date_trunc('day', t) AS day, sum(i) AS s, min(t) AS first, max(t) AS last \
         FROM m GROUP BY 1 ORDER BY 1",
        "SELECT tags, date_bin(INTERVAL '90 minutes', t, TIMESTAMP '1970-01-01T00:00:00Z') AS w, \
         max(i) AS m FROM m GROUP BY 1, 2 ORDER BY 2, tags.host",
        "SELECT count(*) AS n, sum(l) AS s, avg(x) AS a FROM m WHERE t >= '2016-01-01T10:00:00Z' \
         AND t < '2016-01-01T20:00:00Z'",
        "SELECT count(*) AS n, sum(l) AS s, avg(i) AS a, min(i) AS lo FROM m WHERE t > '2030-01-01T00:00:00Z'",
        "SELECT tags.host AS h, sum(i) AS s FROM m WHERE tags.dc = 'a' AND tags.host <> 'h0' \
         GROUP BY 1 ORDER BY 1",
        "SELECT tags.host AS h, date_trunc('minute', t) AS w, sum(i) AS s FROM m \
         WHERE tags.host IN ('h1', 'h2') AND t BETWEEN '2016-01-01T05:00:00Z' AND '2016-01-01T06:00:00Z' \
         GROUP BY 1, 2 ORDER BY 1, 2",
        // Hours from an origin at an offset of whole hours are the epoch's hours.
        "SELECT date_bin(INTERVAL '1 hour', t, '2000-01-01T00:00:00+01:00') AS w, count(*) AS n \
         FROM m GROUP BY 1 ORDER BY 1",
    ];
    // Left to DataFusion: a filter on a measurement field, min of doubles, a month-long
    // interval, an aggregate DataFusion alone has.
    let declined = [
        "SELECT tags.host AS h, count(*) AS n FROM m WHERE l > 0 GROUP BY 1 ORDER BY 1",
        "SELECT tags.host AS h, min(d) AS lo FROM m GROUP BY 1 ORDER BY 1",
        "SELECT date_bin(INTERVAL '1 month', t) AS w, count(*) AS n FROM m GROUP BY 1 ORDER BY 1",
        "SELECT tags.host AS h, stddev(l) AS sd FROM m GROUP BY 1 ORDER BY 1",
        // Time zones: local days, days from a local midnight at +05:30, a zoned timestamp.
        "SELECT date_trunc('day', t AT TIME ZONE 'America/New_York') AS day, count(*) AS n \
         FROM m GROUP BY 1 ORDER BY 1",
        "SELECT date_bin(INTERVAL '1 day', t, '2000-01-01T00:00:00+05:30') AS w, count(*) AS n \
         FROM m GROUP BY 1 ORDER BY 1",
        "SELECT date_bin(INTERVAL '1 hour', t AT TIME ZONE 'Asia/Kathmandu') AS w, count(*) AS n \
         FROM m GROUP BY 1 ORDER BY 1",
    ];
    // A lower bound on doubles keeps the NaN (above every number in SQL): 1189 rows per
    // series have d > 100, and series h1 has a NaN.
    let (n, _) = run(&ctx, "SELECT count(*) AS n FROM m WHERE d > 100");
    assert_eq!(n[0].get_i64("n").ok(), Some(3 * 1189 + 1));
    // DataFusion's local days in New York (January: EST) start at 05:00 UTC.
    let (days, _) = run(
        &ctx,
        "SELECT date_trunc('day', t AT TIME ZONE 'America/New_York') AS day, count(*) AS n \
         FROM m GROUP BY 1 ORDER BY 1",
    );
    assert!(days.len() > 1);
    for d in &days {
        assert_eq!(
            ms(d.get("day")).rem_euclid(86_400_000),
            5 * 3_600_000,
            "{d}"
        );
    }
    let plain = SessionContext::new();
    plain
        .register_table(
            "m",
            std::sync::Arc::new(
                tscoll_datafusion::CollectionTable::new(db.collection("m").expect("m"))
                    .expect("table"),
            ),
        )
        .expect("register");
    for (queries, rewritten) in [(&answered[..], true), (&declined[..], false)] {
        for q in queries {
            let (got, plan) = run(&ctx, q);
            assert_eq!(
                plan.contains("WindowAggregateExec"),
                rewritten,
                "{q}\n{plan}"
            );
            let (want, plan) = run(&plain, q);
            assert!(!plan.contains("WindowAggregateExec"), "{q}\n{plan}");
            assert!(!want.is_empty(), "{q}");
            assert_rows_close(&got, &want, q);
        }
    }
}

/// Runs `query` (a statement) in a context of `db`'s tables; its batches, or DataFusion's
/// error.
fn run(db: &Database, query: &str) -> datafusion::error::Result<Vec<RecordBatch>> {
    let ctx = SessionContext::new();
    tscoll_datafusion::register_database(&ctx, db)?;
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async { ctx.sql(query).await?.collect().await })
}

/// The count an `INSERT` returns.
fn inserted(batches: &[RecordBatch]) -> u64 {
    use datafusion::arrow::array::AsArray;
    use datafusion::arrow::datatypes::UInt64Type;
    batches[0].column(0).as_primitive::<UInt64Type>().value(0)
}

/// A database with collection `weather` (time `time`, meta `station`) of two measurements,
/// so that its table has the columns the inserts name.
fn weather_db(names: &[&str]) -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Database::open(dir.path(), DatabaseOptions::default()).expect("open");
    for name in names {
        let coll = db
            .create_collection(name, &TimeseriesOptions::new("time").meta_field("station"))
            .expect("create");
        let docs: Vec<Document> = (0..2_i64)
            .map(|i| {
                doc! {
                    "time": bson::DateTime::from_millis(1_700_000_000_000 + i * 60_000),
                    "station": format!("{name}-{i}"),
                    "temp": 10.5 + i as f64,
                    "rh": 40_i64 + i,
                    "note": "seen",
                }
            })
            .collect();
        coll.insert_many(&docs, &InsertOptions::default())
            .expect("insert");
    }
    (dir, db)
}

#[test]
fn insert_into_values_stores_the_rows_as_measurements() {
    let (_dir, db) = weather_db(&["weather"]);
    let batches = run(
        &db,
        "INSERT INTO weather (time, station, temp, rh, note) VALUES \
         ('2024-01-01T00:00:00Z', 'oslo', 1.5, 70, 'cold'), \
         ('2024-01-01T00:01:00Z', 'oslo', -2.25, 71, NULL)",
    )
    .expect("insert");
    assert_eq!(inserted(&batches), 2);
    let coll = db.collection("weather").expect("collection");
    let found = coll
        .find(&doc! { "station": "oslo" }, &FindOptions::default())
        .expect("find");
    assert_eq!(found.len(), 2);
    let t0 = bson::DateTime::parse_rfc3339_str("2024-01-01T00:00:00Z").expect("date");
    assert_eq!(found[0].get_datetime("time").expect("time"), &t0);
    assert_eq!(found[0].get("temp"), Some(&Bson::Double(1.5)));
    assert_eq!(found[0].get("rh"), Some(&Bson::Int64(70)));
    assert_eq!(found[0].get("note"), Some(&Bson::String("cold".into())));
    assert!(found[1].get("note").is_none(), "a NULL is a missing field");
    assert!(
        found[0].get_object_id("_id").is_ok(),
        "a generated ObjectId"
    );
    // Read back through SQL too.
    let rows = sql(
        &db,
        "SELECT temp, note FROM weather WHERE station = 'oslo' ORDER BY time",
    );
    assert_eq!(rows[1].get("temp"), Some(&Bson::Double(-2.25)));
    assert_eq!(
        sql(&db, "SELECT count(*) AS n FROM weather")[0].get("n"),
        Some(&Bson::Int64(4))
    );
}

#[test]
fn insert_into_select_copies_a_table_and_overwrite_is_refused() {
    let (_dir, db) = weather_db(&["a", "b"]);
    let batches = run(&db, "INSERT INTO a SELECT * FROM b").expect("insert");
    assert_eq!(inserted(&batches), 2);
    let a = db.collection("a").expect("a");
    let b = db.collection("b").expect("b");
    let copied = a
        .find(
            &doc! { "station": { "$in": ["b-0", "b-1"] } },
            &FindOptions::default(),
        )
        .expect("find");
    let original = b.find(&doc! {}, &FindOptions::default()).expect("find");
    assert_eq!(
        copied, original,
        "every value and the _id come over as they were"
    );
    let e = run(&db, "INSERT OVERWRITE a SELECT * FROM b").expect_err("overwrite");
    assert!(e.to_string().contains("only appended"), "{e}");
    assert_eq!(a.count(&doc! {}).expect("count"), 4);
}

#[test]
fn a_rejected_row_fails_the_insert_naming_its_position() {
    let (_dir, db) = weather_db(&["weather"]);
    // A note of 3 MiB six times over: a measurement past 16 MiB, which no bucket takes.
    let coll = db.collection("weather").expect("collection");
    let big = "x".repeat(3 << 20);
    let stored = coll
        .insert_many(
            &[doc! {
                "time": bson::DateTime::from_millis(1_800_000_000_000),
                "station": "big", "temp": 1.0, "rh": 1_i64, "note": big,
            }],
            &InsertOptions::default(),
        )
        .expect("insert");
    assert_eq!(stored.inserted, 1, "{:?}", stored.errors);
    let e = run(
        &db,
        "INSERT INTO weather (time, station, note) \
         SELECT time + INTERVAL '1' DAY, station, CASE WHEN station = 'big' THEN concat(note, note, note, note, note, note) ELSE note END \
         FROM weather ORDER BY time",
    )
    .expect_err("a row too large");
    let message = e.to_string();
    assert!(message.contains("row 2 (from 0) was rejected"), "{message}");
    assert!(
        message.contains("the 2 row(s) before it were inserted"),
        "{message}"
    );
    assert_eq!(
        coll.count(&doc! {}).expect("count"),
        5,
        "the rows before it are kept"
    );
}
