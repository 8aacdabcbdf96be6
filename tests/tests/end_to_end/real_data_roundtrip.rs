//! Every bundled real data set, and every set of the codec's wider corpus (`benches/corpus/`),
//! goes in and comes back out identical (values, BSON types, the field order of SPEC §14.1),
//! none lost and none extra; also after closing and reopening.

use std::collections::HashMap;

use bson::{Bson, Document};
use tscoll_engine::{
    Database, DatabaseOptions, FindOptions, Granularity, InsertOptions, TimeseriesOptions,
};
use tscoll_tests::{data_dir, identical, load_ndjson};

/// Normalized meta bytes of a value, to group measurements by series (SPEC ).
fn series_key(meta: Option<&Bson>) -> Vec<u8> {
    let mut out = Vec::new();
    if let Some(m) = meta {
        tscoll_catalog_free_normalize(m, &mut out);
    }
    out
}

/// Normalization without the catalog crate: sort object fields recursively (SPEC ).
fn tscoll_catalog_free_normalize(v: &Bson, out: &mut Vec<u8>) {
    fn norm(v: &Bson) -> Bson {
        match v {
            Bson::Document(d) => {
                let mut keys: Vec<&String> = d.keys().collect();
                keys.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
                let mut n = Document::new();
                for k in keys {
                    n.insert(k.clone(), norm(&d[k]));
                }
                Bson::Document(n)
            }
            Bson::Array(a) => Bson::Array(a.iter().map(norm).collect()),
            other => other.clone(),
        }
    }
    let mut d = Document::new();
    d.insert("m", norm(v));
    out.extend_from_slice(&d.to_vec().expect("serializable"));
}

fn check_roundtrip(file: &str, granularity: Granularity) {
    check_roundtrip_of(&data_dir().join(file), granularity);
}

/// The same for a file of the codec's wider corpus (`benches/corpus/`).
fn check_corpus_roundtrip(file: &str, granularity: Granularity) {
    let path = data_dir()
        .parent()
        .expect("the data folder is in the workspace")
        .join("benches/corpus")
        .join(file);
    check_roundtrip_of(&path, granularity);
}

fn check_roundtrip_of(path: &std::path::Path, granularity: Granularity) {
    let file = path.display().to_string();
    let file = file.as_str();
    let input = load_ndjson(path);
    assert!(!input.is_empty(), "{file} is empty");
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = TimeseriesOptions::new("ts")
        .meta_field("meta")
        .granularity(granularity);
    {
        let db = Database::open(dir.path(), DatabaseOptions::default()).expect("open");
        let coll = db.create_collection("c", &opts).expect("create");
        let half = input.len() / 2;
        for chunk in input[..half].chunks(5000) {
            let r = coll
                .insert_many(chunk, &InsertOptions::default())
                .expect("insert");
            assert_eq!(r.errors, vec![], "{file}");
            assert_eq!(r.inserted, chunk.len());
        }
        db.close().expect("close");
    }
    // Reopen and insert the rest: new measurements join reopened buckets (SPEC §6.8).
    let db = Database::open(dir.path(), DatabaseOptions::default()).expect("reopen");
    let coll = db.collection("c").expect("collection");
    for chunk in input[input.len() / 2..].chunks(5000) {
        let r = coll
            .insert_many(chunk, &InsertOptions::default())
            .expect("insert");
        assert_eq!(r.errors, vec![], "{file}");
    }
    let output = coll
        .find(&Document::new(), &FindOptions::default())
        .expect("find");
    assert_eq!(output.len(), input.len(), "{file}: measurement count");
    let stats = coll.stats().expect("stats");
    assert_eq!(stats.measurement_count, input.len() as u64);

    // Index the input by (series, time); each output must consume one identical input.
    let mut by_key: HashMap<(Vec<u8>, i64), Vec<&Document>> = HashMap::new();
    for d in &input {
        let t = d.get_datetime("ts").expect("ts").timestamp_millis();
        by_key
            .entry((series_key(d.get("meta")), t))
            .or_default()
            .push(d);
    }
    for out in &output {
        let keys: Vec<&str> = out.keys().map(String::as_str).collect();
        assert_eq!(keys[0], "ts", "{file}: time first (SPEC R-14.1.2)");
        assert_eq!(keys[1], "meta", "{file}: meta second (SPEC R-14.1.2)");
        assert!(
            matches!(out.get("_id"), Some(Bson::ObjectId(_))),
            "{file}: generated _id (R-2.3)"
        );
        let t = out.get_datetime("ts").expect("ts").timestamp_millis();
        let key = (series_key(out.get("meta")), t);
        let candidates = by_key
            .get_mut(&key)
            .unwrap_or_else(|| panic!("{file}: extra measurement {out}"));
        let pos = candidates
            .iter()
            .position(|inp| {
                inp.len() + 1 == out.len()
                    && inp.iter().all(|(k, v)| {
                        if k == "meta" {
                            series_key(Some(v)) == series_key(out.get("meta"))
                        } else {
                            out.get(k).is_some_and(|o| identical(o, v))
                        }
                    })
            })
            .unwrap_or_else(|| panic!("{file}: no identical input for {out}"));
        candidates.swap_remove(pos);
    }
    assert!(
        by_key.values().all(Vec::is_empty),
        "{file}: measurements lost"
    );
}

/// Per-measurement buckets (hourly data at the default seconds granularity: every
/// measurement starts a bucket) stress placement, reopening queries and the index.
#[test]
fn usgs_earthquakes_at_seconds_granularity_round_trips() {
    check_roundtrip("usgs_earthquakes_week.ndjson.xz", Granularity::Seconds);
}

#[test]
fn noaa_weather_daily_round_trips() {
    check_roundtrip("noaa_weather_daily.ndjson.xz", Granularity::Hours);
}

#[test]
fn usgs_earthquakes_week_round_trips() {
    check_roundtrip("usgs_earthquakes_week.ndjson.xz", Granularity::Minutes);
}

#[test]
fn nab_shared_round_trips() {
    check_roundtrip("nab_shared.ndjson.xz", Granularity::Minutes);
}

#[test]
fn beijing_air_round_trips() {
    check_roundtrip("beijing_air_3stations.ndjson.xz", Granularity::Hours);
}

#[test]
fn stocks_round_trips() {
    check_roundtrip("stocks_us_2016_may_dec_100k.ndjson.xz", Granularity::Hours);
}

#[test]
fn corpus_commits_round_trip() {
    check_corpus_roundtrip("bokeh_commits.ndjson.xz", Granularity::Hours);
}

#[test]
fn corpus_glucose_round_trips() {
    check_corpus_roundtrip("bokeh_glucose_cgm.ndjson.xz", Granularity::Minutes);
}

#[test]
fn corpus_stocks_round_trip() {
    check_corpus_roundtrip("bokeh_stocks.ndjson.xz", Granularity::Hours);
}

#[test]
fn corpus_sea_surface_temperature_round_trips() {
    check_corpus_roundtrip(
        "bokeh_sea_surface_temperature.ndjson.xz",
        Granularity::Minutes,
    );
}

#[test]
fn corpus_co2_before_1970_round_trips() {
    check_corpus_roundtrip("statsmodels_co2.ndjson.xz", Granularity::Hours);
}
