//! Every command through MongoDB's official Rust driver, against a server started in
//! process: the replies' shapes, cursors across `getMore`, and errors with their codes.

mod common;

use std::time::Duration;

use bson::{Bson, DateTime, Document, doc};
use common::{Fixture, code};
use mongodb::options::{TimeseriesGranularity, TimeseriesOptions};
use tscoll_server::ServerOptions;

fn weather(f: &Fixture, n: i64) -> mongodb::sync::Collection<Document> {
    let db = f.client.database("test");
    db.create_collection("weather")
        .timeseries(
            TimeseriesOptions::builder()
                .time_field("t".to_string())
                .meta_field(Some("sensor".to_string()))
                .granularity(Some(TimeseriesGranularity::Hours))
                .build(),
        )
        .run()
        .unwrap();
    let coll = db.collection::<Document>("weather");
    if n > 0 {
        let docs: Vec<Document> = (0..n)
            .map(|i| {
                doc! {
                    "t": DateTime::from_millis(1_700_000_000_000 + i * 60_000),
                    "sensor": { "id": i % 4, "kind": "temp" },
                    "v": i as f64 / 2.0,
                    "tags": [i % 2, 7],
                }
            })
            .collect();
        let r = coll.insert_many(docs).run().unwrap();
        assert_eq!(r.inserted_ids.len(), n as usize);
    }
    coll
}

#[test]
fn handshake_commands() {
    let f = Fixture::new();
    let admin = f.client.database("admin");
    let hello = admin.run_command(doc! { "hello": 1 }).run().unwrap();
    assert!(hello.get_bool("isWritablePrimary").unwrap());
    assert_eq!(hello.get_i32("maxWireVersion").unwrap(), 25);
    assert_eq!(
        hello.get_i32("maxBsonObjectSize").unwrap(),
        16 * 1024 * 1024
    );
    assert_eq!(hello.get_i32("maxMessageSizeBytes").unwrap(), 48_000_000);
    assert_eq!(hello.get_i32("maxWriteBatchSize").unwrap(), 100_000);
    let is_master = admin.run_command(doc! { "isMaster": 1 }).run().unwrap();
    assert!(is_master.get_bool("ismaster").unwrap());
    let build = admin.run_command(doc! { "buildInfo": 1 }).run().unwrap();
    assert_eq!(build.get_str("version").unwrap(), "8.0.0");
    admin.run_command(doc! { "ping": 1 }).run().unwrap();
    let fcv = admin
        .run_command(doc! { "getParameter": 1, "featureCompatibilityVersion": 1 })
        .run()
        .unwrap();
    assert_eq!(
        fcv.get_document("featureCompatibilityVersion")
            .unwrap()
            .get_str("version")
            .unwrap(),
        "8.0"
    );
    let e = admin
        .run_command(doc! { "getParameter": 1, "noSuchParameter": 1 })
        .run()
        .unwrap_err();
    assert_eq!(code(&e), 72);
    let host = admin.run_command(doc! { "hostInfo": 1 }).run().unwrap();
    assert!(
        host.get_document("system")
            .unwrap()
            .get_i32("numCores")
            .unwrap()
            >= 1
    );
    let status = admin
        .run_command(doc! { "connectionStatus": 1 })
        .run()
        .unwrap();
    assert!(
        status
            .get_document("authInfo")
            .unwrap()
            .get_array("authenticatedUsers")
            .unwrap()
            .is_empty()
    );
    let me = admin.run_command(doc! { "whatsmyuri": 1 }).run().unwrap();
    assert!(me.get_str("you").unwrap().starts_with("127.0.0.1:"));
    let e = admin
        .run_command(doc! { "atlasVersion": 1 })
        .run()
        .unwrap_err();
    assert_eq!(code(&e), 59);
    // The connection survives the unknown command.
    admin.run_command(doc! { "ping": 1 }).run().unwrap();
}

#[test]
fn create_list_drop() {
    let f = Fixture::new();
    weather(&f, 0);
    let db = f.client.database("test");
    // The same options again: no error (MongoDB's rule); other options: NamespaceExists.
    db.run_command(doc! { "create": "weather", "timeseries": { "timeField": "t", "metaField": "sensor", "granularity": "hours" } })
        .run()
        .unwrap();
    let e = db
        .run_command(doc! { "create": "weather", "timeseries": { "timeField": "x" } })
        .run()
        .unwrap_err();
    assert_eq!(code(&e), 48);
    // Not a time-series collection: refused, with a code.
    let e = db.create_collection("plain").run().unwrap_err();
    assert_eq!(code(&e), 115);
    db.run_command(
        doc! { "create": "cold", "timeseries": { "timeField": "t" }, "expireAfterSeconds": 3600 },
    )
    .run()
    .unwrap();
    let names = db.list_collection_names().run().unwrap();
    assert_eq!(names, ["cold", "weather"]);
    let specs: Vec<Document> = db
        .run_command(doc! { "listCollections": 1, "filter": { "name": "cold" } })
        .run()
        .unwrap()
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap()
        .iter()
        .map(|b| b.as_document().unwrap().clone())
        .collect();
    assert_eq!(specs.len(), 1);
    assert_eq!(specs[0].get_str("type").unwrap(), "timeseries");
    let options = specs[0].get_document("options").unwrap();
    assert_eq!(options.get_i64("expireAfterSeconds").unwrap(), 3600);
    assert_eq!(
        options
            .get_document("timeseries")
            .unwrap()
            .get_str("timeField")
            .unwrap(),
        "t"
    );
    // Another database.
    f.client
        .database("other")
        .run_command(doc! { "create": "m", "timeseries": { "timeField": "t" } })
        .run()
        .unwrap();
    let dbs = f.client.list_database_names().run().unwrap();
    assert_eq!(dbs, ["other", "test"]);
    let listed = f
        .client
        .database("admin")
        .run_command(doc! { "listDatabases": 1, "filter": { "name": "other" } })
        .run()
        .unwrap();
    assert_eq!(listed.get_array("databases").unwrap().len(), 1);
    // collMod.
    db.run_command(doc! { "collMod": "cold", "expireAfterSeconds": 60 })
        .run()
        .unwrap();
    let e = db
        .run_command(doc! { "collMod": "nope", "expireAfterSeconds": 60 })
        .run()
        .unwrap_err();
    assert_eq!(code(&e), 26);
    // drop and dropDatabase.
    db.collection::<Document>("cold").drop().run().unwrap();
    db.collection::<Document>("never-made")
        .drop()
        .run()
        .unwrap();
    assert_eq!(db.list_collection_names().run().unwrap(), ["weather"]);
    f.client.database("other").drop().run().unwrap();
    assert_eq!(f.client.list_database_names().run().unwrap(), ["test"]);
}

#[test]
fn insert_find_and_cursors() {
    let f = Fixture::new();
    let coll = weather(&f, 1000);
    // A small batch size: the driver reads through getMore.
    let docs: Vec<Document> = coll
        .find(doc! { "sensor.id": 1 })
        .sort(doc! { "t": -1 })
        .batch_size(7)
        .run()
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(docs.len(), 250);
    assert!(
        docs.windows(2)
            .all(|w| w[0].get_datetime("t").unwrap() > w[1].get_datetime("t").unwrap())
    );
    assert_eq!(docs[0].get_f64("v").unwrap(), 997.0 / 2.0);
    // skip, limit, projection.
    let page: Vec<Document> = coll
        .find(doc! {})
        .sort(doc! { "t": 1 })
        .skip(10)
        .limit(5)
        .projection(doc! { "v": 1, "_id": 0 })
        .run()
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        page,
        (10..15)
            .map(|i| doc! { "v": i as f64 / 2.0 })
            .collect::<Vec<_>>()
    );
    // A sort on a measurement field, across batches.
    let by_v: Vec<f64> = coll
        .find(doc! { "v": { "$lt": 10.0 } })
        .sort(doc! { "v": -1 })
        .batch_size(3)
        .run()
        .unwrap()
        .map(|d| d.unwrap().get_f64("v").unwrap())
        .collect();
    assert_eq!(
        by_v,
        (0..20).rev().map(|i| i as f64 / 2.0).collect::<Vec<_>>()
    );
    // Counting.
    assert_eq!(
        coll.count_documents(doc! { "sensor.id": { "$in": [0, 1] } })
            .run()
            .unwrap(),
        500
    );
    assert_eq!(coll.estimated_document_count().run().unwrap(), 1000);
    let mut ids: Vec<i64> = coll
        .distinct("sensor.id", doc! {})
        .run()
        .unwrap()
        .into_iter()
        .map(|b| match b {
            Bson::Int32(n) => i64::from(n),
            Bson::Int64(n) => n,
            other => panic!("{other:?}"),
        })
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, [0, 1, 2, 3]);
    // distinct takes an array's elements one by one.
    let mut tags: Vec<i64> = coll
        .distinct("tags", doc! {})
        .run()
        .unwrap()
        .into_iter()
        .map(|b| b.as_i64().or(b.as_i32().map(i64::from)).unwrap())
        .collect();
    tags.sort_unstable();
    assert_eq!(tags, [0, 1, 7]);
    // A collection that does not exist reads as empty.
    let none = f.client.database("test").collection::<Document>("nothing");
    assert_eq!(none.find(doc! {}).run().unwrap().count(), 0);
    assert_eq!(none.count_documents(doc! {}).run().unwrap(), 0);
}

#[test]
fn get_more_and_kill_cursors() {
    let f = Fixture::new();
    weather(&f, 300);
    let db = f.client.database("test");
    let first = db
        .run_command(doc! { "find": "weather", "batchSize": 100 })
        .run()
        .unwrap();
    let cursor = first.get_document("cursor").unwrap();
    assert_eq!(cursor.get_array("firstBatch").unwrap().len(), 100);
    assert_eq!(cursor.get_str("ns").unwrap(), "test.weather");
    let id = cursor.get_i64("id").unwrap();
    assert_ne!(id, 0);
    let more = db
        .run_command(doc! { "getMore": id, "collection": "weather", "batchSize": 150 })
        .run()
        .unwrap();
    let next = more.get_document("cursor").unwrap();
    assert_eq!(next.get_array("nextBatch").unwrap().len(), 150);
    assert_eq!(next.get_i64("id").unwrap(), id);
    // getMore on another namespace is refused.
    let e = db
        .run_command(doc! { "getMore": id, "collection": "other" })
        .run()
        .unwrap_err();
    assert_eq!(code(&e), 13);
    let killed = db
        .run_command(doc! { "killCursors": "weather", "cursors": [id, 12345_i64] })
        .run()
        .unwrap();
    assert_eq!(
        killed.get_array("cursorsKilled").unwrap(),
        &vec![Bson::Int64(id)]
    );
    assert_eq!(
        killed.get_array("cursorsNotFound").unwrap(),
        &vec![Bson::Int64(12345)]
    );
    let e = db
        .run_command(doc! { "getMore": id, "collection": "weather" })
        .run()
        .unwrap_err();
    assert_eq!(code(&e), 43);
    // The rest in one getMore: the cursor ends (id 0).
    let first = db
        .run_command(doc! { "find": "weather", "batchSize": 1 })
        .run()
        .unwrap();
    let id = first.get_document("cursor").unwrap().get_i64("id").unwrap();
    let rest = db
        .run_command(doc! { "getMore": id, "collection": "weather" })
        .run()
        .unwrap();
    let c = rest.get_document("cursor").unwrap();
    assert_eq!(c.get_array("nextBatch").unwrap().len(), 299);
    assert_eq!(c.get_i64("id").unwrap(), 0);
    // singleBatch and a limit within the batch close the cursor at once.
    let one = db
        .run_command(doc! { "find": "weather", "limit": 5, "batchSize": 10 })
        .run()
        .unwrap();
    assert_eq!(
        one.get_document("cursor").unwrap().get_i64("id").unwrap(),
        0
    );
}

#[test]
fn idle_cursors_time_out() {
    let f = Fixture::with_options(ServerOptions {
        cursor_timeout: Duration::from_millis(200),
        ..ServerOptions::default()
    });
    weather(&f, 50);
    let db = f.client.database("test");
    let first = db
        .run_command(doc! { "find": "weather", "batchSize": 1 })
        .run()
        .unwrap();
    let id = first.get_document("cursor").unwrap().get_i64("id").unwrap();
    std::thread::sleep(Duration::from_millis(800));
    let e = db
        .run_command(doc! { "getMore": id, "collection": "weather" })
        .run()
        .unwrap_err();
    assert_eq!(code(&e), 43);
}

#[test]
fn insert_errors_keep_the_good_measurements() {
    let f = Fixture::new();
    let coll = weather(&f, 0);
    let t = |i: i64| DateTime::from_millis(1_700_000_000_000 + i * 1000);
    let docs = vec![
        doc! { "t": t(0), "sensor": 1, "v": 0 },
        doc! { "t": t(1), "sensor": 1, "v": 1 },
        doc! { "t": "not a date", "sensor": 1, "v": 2 },
        doc! { "t": t(3), "sensor": 1, "v": 3 },
    ];
    // Ordered: stops at the bad one, keeps the two before it.
    let e = coll.insert_many(docs.clone()).run().unwrap_err();
    let mongodb::error::ErrorKind::InsertMany(m) = e.kind.as_ref() else {
        panic!("{e:?}");
    };
    let w = m.write_errors.as_ref().unwrap();
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].index, 2);
    assert_eq!(w[0].code, 2);
    assert_eq!(coll.count_documents(doc! {}).run().unwrap(), 2);
    // Unordered: every good one is kept.
    let e = coll.insert_many(docs).ordered(false).run().unwrap_err();
    let mongodb::error::ErrorKind::InsertMany(m) = e.kind.as_ref() else {
        panic!("{e:?}");
    };
    assert_eq!(m.write_errors.as_ref().unwrap()[0].index, 2);
    assert_eq!(coll.count_documents(doc! {}).run().unwrap(), 5);
    // A collection that does not exist is not made implicitly.
    let e = f
        .client
        .database("test")
        .collection::<Document>("missing")
        .insert_one(doc! { "t": t(0) })
        .run()
        .unwrap_err();
    assert_eq!(code(&e), 26);
    // j: true is accepted (fsync'ed acknowledgement).
    coll.insert_one(doc! { "t": t(9), "sensor": 2 })
        .write_concern(
            mongodb::options::WriteConcern::builder()
                .journal(true)
                .build(),
        )
        .run()
        .unwrap();
    assert_eq!(coll.count_documents(doc! { "sensor": 2 }).run().unwrap(), 1);
}

#[test]
fn updates_deletes_find_and_modify() {
    let f = Fixture::new();
    let coll = weather(&f, 100);
    let r = coll
        .update_many(
            doc! { "sensor.id": 2 },
            doc! { "$set": { "checked": true } },
        )
        .run()
        .unwrap();
    assert_eq!((r.matched_count, r.modified_count), (25, 25));
    assert_eq!(
        coll.count_documents(doc! { "checked": true })
            .run()
            .unwrap(),
        25
    );
    // A pipeline update.
    let r = coll
        .update_many(
            doc! { "sensor.id": 3 },
            vec![doc! { "$set": { "w": { "$multiply": ["$v", 2] } } }],
        )
        .run()
        .unwrap();
    assert_eq!(r.modified_count, 25);
    let one = coll
        .find_one(doc! { "sensor.id": 3, "v": 1.5 })
        .run()
        .unwrap()
        .unwrap();
    assert_eq!(one.get_f64("w").unwrap(), 3.0);
    // update_one changes one.
    let r = coll
        .update_one(doc! { "sensor.id": 0 }, doc! { "$inc": { "v": 1000.0 } })
        .run()
        .unwrap();
    assert_eq!(r.modified_count, 1);
    // An upsert.
    let r = coll
        .update_one(
            doc! { "sensor": { "id": 9, "kind": "temp" }, "t": DateTime::from_millis(0) },
            doc! { "$set": { "v": -1.0 } },
        )
        .upsert(true)
        .run()
        .unwrap();
    assert!(r.upserted_id.is_some());
    // A bad update is a write error with its code; nothing changes.
    let e = coll
        .update_many(doc! {}, doc! { "$set": { "_id": 1 } })
        .run()
        .unwrap_err();
    assert_eq!(code(&e), 66);
    // findAndModify.
    let before = coll
        .find_one_and_update(doc! { "sensor.id": 1 }, doc! { "$set": { "v": 4242.0 } })
        .sort(doc! { "t": 1 })
        .run()
        .unwrap()
        .unwrap();
    assert_eq!(before.get_f64("v").unwrap(), 0.5);
    let after = coll
        .find_one_and_update(
            doc! { "sensor.id": 1, "v": 4242.0 },
            doc! { "$inc": { "v": 1.0 } },
        )
        .return_document(mongodb::options::ReturnDocument::After)
        .projection(doc! { "v": 1, "_id": 0 })
        .run()
        .unwrap()
        .unwrap();
    assert_eq!(after, doc! { "v": 4243.0 });
    let removed = coll
        .find_one_and_delete(doc! { "v": 4243.0 })
        .run()
        .unwrap()
        .unwrap();
    assert_eq!(removed.get_f64("v").unwrap(), 4243.0);
    assert_eq!(coll.count_documents(doc! { "v": 4243.0 }).run().unwrap(), 0);
    assert!(
        coll.find_one_and_delete(doc! { "v": 4243.0 })
            .run()
            .unwrap()
            .is_none()
    );
    // Deletes.
    let r = coll.delete_one(doc! { "sensor.id": 2 }).run().unwrap();
    assert_eq!(r.deleted_count, 1);
    let r = coll.delete_many(doc! { "sensor.id": 2 }).run().unwrap();
    assert_eq!(r.deleted_count, 24);
    assert_eq!(
        coll.count_documents(doc! {}).run().unwrap(),
        100 + 1 - 1 - 25
    );
}

#[test]
fn aggregate_indexes_stats_explain() {
    let f = Fixture::new();
    let coll = weather(&f, 24 * 60);
    let days: Vec<Document> = coll
        .aggregate(vec![
            doc! { "$group": {
                "_id": { "$dateTrunc": { "date": "$t", "unit": "hour" } },
                "n": { "$sum": 1 },
            } },
            doc! { "$sort": { "_id": 1 } },
        ])
        .batch_size(5)
        .run()
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        days.iter()
            .map(|d| d.get_i32("n").unwrap() as i64)
            .sum::<i64>(),
        24 * 60
    );
    assert!(days.len() >= 24 && days.len() <= 25);
    // Indexes.
    let name = coll
        .create_index(
            mongodb::IndexModel::builder()
                .keys(doc! { "sensor.kind": 1 })
                .build(),
        )
        .run()
        .unwrap()
        .index_name;
    let names = coll.list_index_names().run().unwrap();
    assert!(names.contains(&name), "{names:?}");
    coll.drop_index(name.clone()).run().unwrap();
    assert!(!coll.list_index_names().run().unwrap().contains(&name));
    let e = coll.drop_index("nope").run().unwrap_err();
    assert_eq!(code(&e), 27);
    // Stats.
    let db = f.client.database("test");
    let stats = db
        .run_command(doc! { "collStats": "weather" })
        .run()
        .unwrap();
    assert_eq!(stats.get_i64("count").unwrap(), 24 * 60);
    assert!(
        stats
            .get_document("timeseries")
            .unwrap()
            .get_i64("bucketCount")
            .unwrap()
            > 0
    );
    let agg: Vec<Document> = coll
        .aggregate(vec![
            doc! { "$collStats": { "storageStats": {}, "count": {} } },
        ])
        .run()
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(agg[0].get_document("count").is_err());
    assert_eq!(agg[0].get_i64("count").unwrap(), 24 * 60);
    assert_eq!(
        agg[0]
            .get_document("storageStats")
            .unwrap()
            .get_i64("count")
            .unwrap(),
        24 * 60
    );
    let db_stats = db.run_command(doc! { "dbStats": 1 }).run().unwrap();
    assert_eq!(db_stats.get_i64("collections").unwrap(), 1);
    assert_eq!(db_stats.get_i64("objects").unwrap(), 24 * 60);
    let server = f
        .client
        .database("admin")
        .run_command(doc! { "serverStatus": 1 })
        .run()
        .unwrap();
    assert!(
        server
            .get_document("bucketCatalog")
            .unwrap()
            .contains_key("numBuckets")
    );
    assert!(
        server
            .get_document("opcounters")
            .unwrap()
            .get_i64("insert")
            .unwrap()
            >= 24 * 60
    );
    // explain.
    let plan = db
        .run_command(doc! {
            "explain": { "find": "weather", "filter": { "sensor.id": 1 } },
            "verbosity": "queryPlanner",
        })
        .run()
        .unwrap();
    assert!(plan.contains_key("queryPlanner"), "{plan}");
}

#[test]
fn concurrent_connections_share_one_database() {
    let f = Fixture::new();
    weather(&f, 0);
    let uri = f.uri("");
    let threads: Vec<_> = (0..8)
        .map(|w| {
            let uri = uri.clone();
            std::thread::spawn(move || {
                let client = mongodb::sync::Client::with_uri_str(uri).unwrap();
                let coll = client.database("test").collection::<Document>("weather");
                for batch in 0..20_i64 {
                    let docs: Vec<Document> = (0..50_i64)
                        .map(|i| doc! {
                            "t": DateTime::from_millis(1_700_000_000_000 + (batch * 50 + i) * 1000),
                            "sensor": { "id": w },
                            "v": i,
                        })
                        .collect();
                    coll.insert_many(docs).run().unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let coll = f.client.database("test").collection::<Document>("weather");
    assert_eq!(coll.count_documents(doc! {}).run().unwrap(), 8 * 20 * 50);
    for w in 0..8 {
        assert_eq!(
            coll.count_documents(doc! { "sensor.id": w }).run().unwrap(),
            1000
        );
    }
}

#[test]
fn a_stopped_server_leaves_the_database_closed_and_whole() {
    let mut f = Fixture::new();
    weather(&f, 500);
    f.stop();
    let db = tscoll_engine::Database::open(f.dir.path(), tscoll_engine::DatabaseOptions::default())
        .unwrap();
    let coll = db.collection("test.weather").unwrap();
    assert_eq!(coll.count(&doc! {}).unwrap(), 500);
}

#[test]
fn index_stats_sessions_and_aggregate_explain() {
    let f = Fixture::new();
    let coll = weather(&f, 100);
    let stats: Vec<Document> = coll
        .aggregate(vec![
            doc! { "$indexStats": {} },
            doc! { "$project": { "name": 1, "ops": "$accesses.ops" } },
        ])
        .run()
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(!stats.is_empty());
    assert!(
        stats.iter().all(|d| d.get_i64("ops").ok() == Some(0)),
        "{stats:?}"
    );
    let names: Vec<&str> = stats.iter().map(|d| d.get_str("name").unwrap()).collect();
    let listed = coll.list_index_names().run().unwrap();
    assert_eq!(names.len(), listed.len());
    // $collStats on a collection that does not exist: NamespaceNotFound.
    let e = f
        .client
        .database("test")
        .collection::<Document>("none")
        .aggregate(vec![doc! { "$collStats": { "count": {} } }])
        .run()
        .unwrap_err();
    assert_eq!(code(&e), 26);
    let db = f.client.database("test");
    // endSessions is accepted.
    let session = f.client.start_session().run().unwrap();
    let id = session.id().clone();
    drop(session);
    db.run_command(doc! { "endSessions": [id] }).run().unwrap();
    // explain of an aggregate, both ways.
    let plan = db
        .run_command(doc! {
            "explain": { "aggregate": "weather", "pipeline": [{ "$match": { "sensor.id": 2 } }], "cursor": {} },
            "verbosity": "executionStats",
        })
        .run()
        .unwrap();
    assert_eq!(plan.get_f64("ok").unwrap(), 1.0, "{plan}");
    let plan = db
        .run_command(doc! { "aggregate": "weather", "pipeline": [{ "$match": { "sensor.id": 2 } }], "explain": true })
        .run()
        .unwrap();
    assert_eq!(plan.get_f64("ok").unwrap(), 1.0, "{plan}");
    // aggregate without `cursor` (and not explain) is FailedToParse.
    let e = db
        .run_command(doc! { "aggregate": "weather", "pipeline": [] })
        .run()
        .unwrap_err();
    assert_eq!(code(&e), 9);
}

#[test]
fn an_idle_client_does_not_poll_in_a_loop() {
    // The driver's monitor polls `hello` every heartbeatFrequencyMS (10 s): with no
    // `topologyVersion` in the reply it does not stream (which would need the server to hold
    // each `hello`, else the monitor asks again at once).
    let f = Fixture::new();
    let admin = f.client.database("admin");
    let requests = |d: &Document| {
        d.get_document("network")
            .unwrap()
            .get_i64("numRequests")
            .unwrap()
    };
    let before = requests(&admin.run_command(doc! { "serverStatus": 1 }).run().unwrap());
    std::thread::sleep(Duration::from_secs(2));
    let after = requests(&admin.run_command(doc! { "serverStatus": 1 }).run().unwrap());
    assert!(after - before < 10, "{} requests in 2 s", after - before);
}

#[test]
fn what_the_shells_ask_beyond_the_data() {
    let f = Fixture::new();
    weather(&f, 50);
    let admin = f.client.database("admin");
    let db = f.client.database("test");
    let log = admin
        .run_command(doc! { "getLog": "startupWarnings" })
        .run()
        .unwrap();
    assert!(log.get_array("log").unwrap().is_empty());
    let names = admin.run_command(doc! { "getLog": "*" }).run().unwrap();
    assert_eq!(names.get_array("names").unwrap().len(), 2);
    let users = admin.run_command(doc! { "usersInfo": 1 }).run().unwrap();
    assert!(users.get_array("users").unwrap().is_empty());
    let profile = db.run_command(doc! { "profile": -1 }).run().unwrap();
    assert_eq!(profile.get_i32("was").unwrap(), 0);
    assert_eq!(
        code(&db.run_command(doc! { "profile": 2 }).run().unwrap_err()),
        115
    );
    let valid = db
        .run_command(doc! { "validate": "weather" })
        .run()
        .unwrap();
    assert!(valid.get_bool("valid").unwrap());
    assert_eq!(valid.get_i64("nrecords").unwrap(), 50);
    let ops = admin
        .run_command(doc! { "aggregate": 1, "pipeline": [{ "$currentOp": {} }], "cursor": {} })
        .run()
        .unwrap();
    assert!(
        ops.get_document("cursor")
            .unwrap()
            .get_array("firstBatch")
            .unwrap()
            .is_empty()
    );
    let e = admin
        .run_command(doc! { "renameCollection": "test.weather", "to": "test.w2" })
        .run()
        .unwrap_err();
    assert_eq!(code(&e), 20);
    // Counts are int32, as MongoDB sends them (shells show an int64 as a Long).
    let r = db
        .run_command(doc! { "update": "weather", "updates": [{ "q": {}, "u": { "$set": { "x": 1 } }, "multi": true }] })
        .run()
        .unwrap();
    assert_eq!(r.get_i32("n").unwrap(), 50);
    assert_eq!(r.get_i32("nModified").unwrap(), 50);
    let c = db.run_command(doc! { "count": "weather" }).run().unwrap();
    assert_eq!(c.get_i32("n").unwrap(), 50);
    let d = db
        .run_command(doc! { "delete": "weather", "deletes": [{ "q": {}, "limit": 0 }] })
        .run()
        .unwrap();
    assert_eq!(d.get_i32("n").unwrap(), 50);
}

#[test]
fn batches_stay_under_16_mib_and_write_batches_under_100_000() {
    let f = Fixture::new();
    let coll = weather(&f, 0);
    // 40 measurements of 1 MiB each: a first batch of 100 asked holds at most 16 MiB.
    let big = "x".repeat(1 << 20);
    for chunk in 0..4_i64 {
        let docs: Vec<Document> = (0..10_i64)
            .map(|i| {
                doc! {
                    "t": DateTime::from_millis((chunk * 10 + i) * 1000),
                    "sensor": { "id": 1 },
                    "blob": big.as_str(),
                }
            })
            .collect();
        coll.insert_many(docs).run().unwrap();
    }
    let db = f.client.database("test");
    let first = db
        .run_command(doc! { "find": "weather", "batchSize": 100 })
        .run()
        .unwrap();
    let cursor = first.get_document("cursor").unwrap();
    let batch = cursor.get_array("firstBatch").unwrap();
    let bytes: usize = batch
        .iter()
        .map(|d| d.as_document().unwrap().to_vec().unwrap().len())
        .sum();
    assert!(
        !batch.is_empty() && batch.len() < 40,
        "{} documents",
        batch.len()
    );
    assert!(bytes <= 16 * 1024 * 1024, "{bytes} bytes");
    assert_ne!(cursor.get_i64("id").unwrap(), 0);
    // The driver reads the rest over getMore batches, each under 16 MiB too.
    assert_eq!(coll.find(doc! {}).run().unwrap().count(), 40);
    // A write batch over maxWriteBatchSize is refused whole (the drivers split theirs).
    let many: Vec<Document> = (0..100_001).map(|_| doc! {}).collect();
    let e = db
        .run_command(doc! { "insert": "weather", "documents": many })
        .run()
        .unwrap_err();
    assert_eq!(code(&e), 16);
}
